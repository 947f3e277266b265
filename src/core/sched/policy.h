/*
 * policy: the placement-policy ABI. A policy is an ops table; the core
 * filters nodes, asks the policy to score each feasible one, keeps the best
 * (ties by rank or at random, see sched.h) and asks it to choose devices.
 *
 * Contract for score(): the node is feasible for the shape (up, CPU, enough
 * fitting devices; host memory is checked separately), and the result
 * depends only on the node's own state and the shape. The core caches
 * scores on that promise; a policy that cannot keep it sets
 * XP_POLICY_RANDOM_NODE and the core scans instead.
 *
 * Two optional hooks serve batches (xp_sched_plan_batch, sched.h):
 * measure() is the node's own cost as the policy sees it (lower is better;
 * FGD: F_n(M)), which a batch optimiser sums over the nodes a plan touches;
 * optimise() decides up to XP_BATCH_MAX pending requests together. A policy
 * without optimise() is planned greedily, one request at a time in the
 * given order, which is what it decides without a batch.
 */
#ifndef XP_POLICY_H
#define XP_POLICY_H

#include <stdint.h>

#include "../../lib/rng.h"
#include "../model/model.h"

struct xp_sched;
struct xp_shape;
struct xp_batch_opts;

enum {
	XP_POLICY_RANDOM_NODE = 1 << 0,	  /* node chosen uniformly among feasible ones */
	XP_POLICY_NEEDS_WORKLOAD = 1 << 1 /* scores read the target workload M */
};

struct xp_policy_ops {
	const char *name;  /* CLI name: "fgd" */
	const char *label; /* sc_policy in result CSVs: "06-FGD" */
	const char *about; /* one line for --help */
	unsigned flags;
	int32_t score_max; /* scores are 0..score_max (<= 30000) */
	int32_t (*score)(const struct xp_sched *s, uint32_t node, const struct xp_shape *m);
	/* Choose devices for a request on node (feasible). NULL = best fit. */
	void (*pick)(const struct xp_sched *s, uint32_t node, const struct xp_shape *m,
		     struct xp_rng *rng, struct xp_alloc *a);
	/* Node n's cost under the policy's measure (milli). NULL = none. */
	double (*measure)(const struct xp_sched *s, uint32_t n);
	/* Batch optimiser: plan r[0..n) (n <= XP_BATCH_MAX) together. On 0,
	 * placed[i] = 1 and out[i] set for each request the plan places; the
	 * state is as it was on entry whatever it returns. NULL = greedy. */
	int (*optimise)(struct xp_sched *s, const struct xp_request *r, size_t n,
			struct xp_batch_opts *o, struct xp_rng *rng, struct xp_alloc *out,
			uint8_t *placed);
};

/* The built-in policies, NULL-terminated. */
extern const struct xp_policy_ops *const xp_policies[];
const struct xp_policy_ops *xp_policy_find(const char *name);

#endif
