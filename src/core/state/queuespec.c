/*
 * queuespec: queue definitions in and out (see queuespec.h).
 */
#include "queuespec.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../../lib/parse.h"
#include "../../lib/timefmt.h"

static const char *const res_names[XP_RES_N] = { "cpu",	 "memory", "cpu-device", "gpu", "npu",
						 "fpga", "asic",   "dpu",	 "cim" };
static const char *const preempt_names[XP_PREEMPT_N] = { "never", "reclaim", "priority" };

const char *xp_res_name(int r)
{
	return xp_enum_name(res_names, XP_RES_N, r);
}

int xp_res_parse(const char *s)
{
	return xp_enum_parse(res_names, XP_RES_N, s);
}

const char *xp_preempt_name(int p)
{
	return xp_enum_name(preempt_names, XP_PREEMPT_N, p);
}

int xp_preempt_parse(const char *s)
{
	return xp_enum_parse(preempt_names, XP_PREEMPT_N, s);
}

void xp_res_format(int r, uint64_t v, char *buf, size_t len)
{
	if (v == 0) {
		snprintf(buf, len, "0");
	} else if (r == XP_RES_MEM) {
		if (v % (1024 * 1024) == 0)
			snprintf(buf, len, "%" PRIu64 "Ti", v / (1024 * 1024));
		else if (v % 1024 == 0)
			snprintf(buf, len, "%" PRIu64 "Gi", v / 1024);
		else
			snprintf(buf, len, "%" PRIu64 "Mi", v);
	} else if (v % 1000 == 0) {
		snprintf(buf, len, "%" PRIu64, v / 1000);
	} else {
		snprintf(buf, len, "%" PRIu64 "m", v);
	}
}

void xp_queuespec_init(struct xp_queuespec *q)
{
	memset(q, 0, sizeof(*q));
	q->weight = 1;
	q->preempt = XP_PREEMPT_RECLAIM;
	for (int r = 0; r < XP_RES_N; r++)
		q->max[r] = XP_QUOTA_NONE;
}

void xp_queuespec_merge(struct xp_queuespec *q, const struct xp_queuespec *u)
{
	if (u->set & XP_QS_PARENT)
		memcpy(q->parent, u->parent, sizeof(q->parent));
	if (u->set & XP_QS_PRIORITY)
		q->priority = u->priority;
	if (u->set & XP_QS_WEIGHT)
		q->weight = u->weight;
	if (u->set & XP_QS_PREEMPT)
		q->preempt = u->preempt;
	if (u->set & XP_QS_AGING)
		q->aging_ms = u->aging_ms;
	if (u->set & XP_QS_QUOTA) {
		memcpy(q->guarantee, u->guarantee, sizeof(q->guarantee));
		memcpy(q->max, u->max, sizeof(q->max));
	}
	if (u->set & XP_QS_ALLOW) {
		memcpy(q->allow, u->allow, sizeof(q->allow));
		q->nallow = u->nallow;
	}
	q->set |= u->set;
}

