/*
 * queuespec: a queue's definition (docs/api.md "Queues") as plain C, read
 * by the edge (src/edge/queuespec.c: API input or a journal record alike)
 * with every field checked, and written back as canonical JSON that parses
 * to the same definition (src/edge/canon.c). The state checks it against the tree (queue.c).
 *
 *   {name, parent, priority, weight, preempt: never|reclaim|priority, aging,
 *    quota: {RES: {guarantee: Q, max: Q}}, allow: [TENANT, ...]}
 *
 * allow lists the tenants that may submit into the queue (Slurm's
 * AllowAccounts); absent or [] lets every tenant in.
 *
 * RES is cpu (cores: "8", "500m"), memory ("64Gi") or a device class (gpu,
 * npu, fpga, asic, dpu, cim: devices, "2" or "500m" of one). A missing
 * guarantee is 0, a missing max is unlimited.
 */
#ifndef XP_QUEUESPEC_H
#define XP_QUEUESPEC_H

#include <stdint.h>


#include "../../lib/err.h"
#include "../model/model.h"
#include "spec.h"

/* What quotas and fair share count: CPU milli-cores, memory MiB, and
 * milli-devices per device class (index XP_RES_DEV + class). */
enum { XP_RES_CPU, XP_RES_MEM, XP_RES_DEV, XP_RES_N = XP_RES_DEV + XP_CLASS_N };
#define XP_QUOTA_NONE	   UINT64_MAX /* a max that does not limit */
#define XP_QUOTA_MAX_VALUE (1ULL << 50)

/* A queue's preemption policy (docs/design/tenancy.md) */
enum xp_preempt { XP_PREEMPT_NEVER, XP_PREEMPT_RECLAIM, XP_PREEMPT_PRIORITY, XP_PREEMPT_N };
/* why a victim was taken, beyond the policies: it was best-effort */
#define XP_PREEMPT_BEST_EFFORT XP_PREEMPT_N

#define XP_AGE_MAX 10 /* the most priority waiting adds */

/* Which fields a document set (an update changes only those). */
enum {
	XP_QS_PARENT = 1 << 0,
	XP_QS_PRIORITY = 1 << 1,
	XP_QS_WEIGHT = 1 << 2,
	XP_QS_PREEMPT = 1 << 3,
	XP_QS_AGING = 1 << 5,
	XP_QS_QUOTA = 1 << 4,
	XP_QS_ALLOW = 1 << 6,
};
#define XP_QUEUE_MAX_ALLOW 32

struct xp_queuespec {
	char name[XP_NAME_MAX + 1];
	char parent[XP_NAME_MAX + 1]; /* "": a top-level queue */
	int32_t priority;
	uint32_t weight;
	uint8_t preempt;
	int64_t aging_ms; /* a pending job gains 1 priority per aging_ms waited, up to
			   * XP_AGE_MAX (ordering only); 0: off */
	uint32_t set;	  /* XP_QS_* */
	uint64_t guarantee[XP_RES_N];
	uint64_t max[XP_RES_N];
	char allow[XP_QUEUE_MAX_ALLOW][XP_NAME_MAX + 1]; /* tenants; none: open */
	uint8_t nallow;
};

const char *xp_res_name(int r);
int xp_res_parse(const char *s); /* -1 if unknown */
const char *xp_preempt_name(int p);
int xp_preempt_parse(const char *s);
/* A quantity of resource r as text ("8", "1500m", "64Gi", "1.5"). */
void xp_res_format(int r, uint64_t v, char *buf, size_t len);

/* Defaults: no parent, priority 0, weight 1, preempt reclaim, no quota. */
void xp_queuespec_init(struct xp_queuespec *q);
/* Apply the fields upd set onto q. */
void xp_queuespec_merge(struct xp_queuespec *q, const struct xp_queuespec *upd);
/* Its canonical JSON: src/edge/canon.c (xp_queuespec_json). */

#endif
