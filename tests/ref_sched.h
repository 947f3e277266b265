/*
 * ref_sched: a naive reference of the scheduling core's semantics, written
 * from docs/design/scheduler.md alone (not from the core sources), for
 * tests that compare the core against it on random inputs.
 *
 * Everything is recomputed from plain arrays on every call: no index, no
 * cache, no incremental totals. Feasibility, device fit, device choice, the
 * policy scores and the fragmentation measure F_n(M) each follow the text of
 * the specification, one rule per line where possible. Slow on purpose.
 *
 * The cluster is borrowed and must outlive the reference.
 */
#ifndef XP_REF_SCHED_H
#define XP_REF_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "core/model/model.h"
#include "core/sched/sched.h"
#include "lib/rng.h"

enum ref_policy {
	REF_RANDOM,
	REF_DOTPROD,
	REF_CLUSTERING,
	REF_PACKING,
	REF_BESTFIT,
	REF_FGD,
	REF_BINPACK,
	REF_SPREAD,
	REF_WEIGHTED,
	REF_XPOOL,
	REF_NPOLICIES
};

/* Affinity tags: slot 0 = share, slot k = k whole devices (k >= 16 -> 16). */
#define REF_NTAGS 17

struct ref_sched {
	const struct xp_cluster *c;
	int policy;   /* enum ref_policy */
	int tiebreak; /* enum xp_tiebreak */
	size_t nnodes;
	int64_t *cpu_free;
	int64_t *mem_free;
	uint8_t *up;
	uint32_t *rank;
	uint32_t (*tags)[REF_NTAGS];
	size_t *dev0; /* first slot of node n's devices in the arrays below */
	int32_t *dev_milli;
	int64_t *dev_mem;
	uint8_t *dev_ok;
	uint64_t maxcpu, maxmilli; /* the normalisers MAXCPU and MAXMILLI */
	struct xp_wshape *m;
	size_t nm;
	/* xpool's summaries of M, set with it: rho and pi_n per node */
	double rho;
	double *pressure;
};

/* NULL if the policy name is unknown. Ranks default to the node index,
 * ties to XP_TIE_RANK; every node up; devices healthy unless the cluster
 * marks them XP_HEALTH_UNHEALTHY. */
struct ref_sched *ref_create(const struct xp_cluster *c, const char *policy);
void ref_destroy(struct ref_sched *r);
const char *ref_policy_name(int policy);
int32_t ref_score_max(int policy);

void ref_set_tiebreak(struct ref_sched *r, int tiebreak);
void ref_set_ranks(struct ref_sched *r, const uint32_t *rank);
void ref_set_workload(struct ref_sched *r, const struct xp_wshape *m, size_t n);

/* Reason node cannot take q (XP_WHY_FITS when it can). */
int ref_why(const struct ref_sched *r, uint32_t node, const struct xp_request *q);
/* Policy score of a feasible node (for "random": 0). */
int32_t ref_score(const struct ref_sched *r, uint32_t node, const struct xp_request *q);
/* Highest score over feasible nodes, -1 when none is feasible. */
int32_t ref_max_score(const struct ref_sched *r, const struct xp_request *q);
/* Number of feasible nodes. */
size_t ref_nfeasible(const struct ref_sched *r, const struct xp_request *q);

/* The policy's device choice on a feasible node; fills a fully. rng is
 * drawn only by "random" for a fraction. */
void ref_pick_on(const struct ref_sched *r, uint32_t node, const struct xp_request *q,
		 struct xp_rng *rng, struct xp_alloc *a);
/* Does a (node, devices) satisfy q on the current state? 1 = yes. */
int ref_alloc_fits(const struct ref_sched *r, const struct xp_request *q, const struct xp_alloc *a);

/* filter -> score -> max (ties by rank, or drawn) -> devices. 0 or -1. */
int ref_pick(const struct ref_sched *r, const struct xp_request *q, struct xp_rng *rng,
	     struct xp_alloc *a);
void ref_commit(struct ref_sched *r, const struct xp_alloc *a);
void ref_release(struct ref_sched *r, const struct xp_alloc *a);

void ref_set_node_up(struct ref_sched *r, uint32_t node, int up);
void ref_set_device_ok(struct ref_sched *r, uint32_t node, uint16_t dev, int ok);

/* F_n(M) and sum over nodes, straight from the definition; 0 without M. */
double ref_frag_node(const struct ref_sched *r, uint32_t node);
double ref_frag_total(const struct ref_sched *r);

/* Reason counts; the shortfall minima are 0 when no node has that reason. */
void ref_explain(const struct ref_sched *r, const struct xp_request *q, struct xp_explain *out);

uint64_t ref_total_milli(const struct ref_sched *r);
uint64_t ref_used_milli(const struct ref_sched *r);

/* Accessors for state comparisons. */
int64_t ref_cpu_free(const struct ref_sched *r, uint32_t node);
int64_t ref_mem_free(const struct ref_sched *r, uint32_t node);
int32_t ref_dev_free_milli(const struct ref_sched *r, uint32_t node, uint16_t dev);
int64_t ref_dev_free_mem(const struct ref_sched *r, uint32_t node, uint16_t dev);

#endif
