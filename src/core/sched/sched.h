/*
 * sched: the scheduling core. Pure: no I/O, no clock, no threads; every
 * random choice draws from the struct xp_rng the caller passes in. The
 * simulator and the controller drive the same code.
 *
 * A struct xp_sched holds the free capacity of one cluster (borrowed: the
 * cluster must outlive it and keep its nodes fixed) and answers "where does
 * this request go?" through a placement policy:
 *
 *   filter  - nodes that are up and have the CPU, memory and enough devices
 *             matching the request's selector;
 *   score   - the policy scores each feasible node;
 *   pick    - the best score wins; ties go to the node of lowest rank
 *             (XP_TIE_RANK, the rule of the FGD reference simulator) or to
 *             a uniformly random one (XP_TIE_RANDOM);
 *   devices - the policy chooses the devices on the winning node.
 *
 * xp_sched_pick() decides without changing state; xp_sched_commit() applies
 * a decision and xp_sched_release() undoes it, so a gang can be placed
 * replica by replica and rolled back.
 *
 * Speed: every feasible node is considered, but not rescanned. Scores of a
 * node depend only on its own state and the request's shape (everything but
 * host memory), so the core keeps, per recent shape, a max-tree of node
 * scores ordered by rank and refreshes only the nodes changed since that
 * shape was last asked (docs/design/scheduler.md). opts.no_index = 1 turns
 * this off and scans every node, which tests compare against.
 */
#ifndef XP_SCHED_H
#define XP_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/err.h"
#include "../../lib/rng.h"
#include "../model/model.h"

enum xp_tiebreak { XP_TIE_RANK, XP_TIE_RANDOM };

/* The factors of the weighted policy (policy_weighted.c). */
enum { XP_W_PRIORITY, XP_W_AFFINITY, XP_W_ENERGY, XP_W_NETWORK, XP_W_HEALTH, XP_W_N };
/* "affinity=0.25,energy=0.2,...": the factors named, in thousandths into
 * w[] (others 0); 0, or XP_EINVAL naming the bad part. */
int xp_weights_parse(const char *s, uint32_t w[XP_W_N], struct xp_err *err);

struct xp_sched_opts {
	const char *policy;	  /* policy name, see xp_policy_find(); NULL = "fgd" */
	uint32_t weights[XP_W_N]; /* weighted policy, thousandths; all 0: the brief's
				   * 300/250/200/150/100 */
	int tiebreak;		  /* enum xp_tiebreak */
	int no_index;		  /* 1: plain scan of every node for every decision */
	size_t index_bytes;	  /* memory budget of the score index; 0 = 256 MiB */
};

/* Why a node cannot take a request (first failing filter, in this order). */
enum xp_why {
	XP_WHY_FITS,	  /* feasible */
	XP_WHY_DOWN,	  /* node down, cordoned or removed */
	XP_WHY_NO_DEVICE, /* too few devices match the selector at all */
	XP_WHY_CPU,	  /* CPU short */
	XP_WHY_MEM,	  /* memory short */
	XP_WHY_DEV_BUSY,  /* matching devices exist but too few have room */
	XP_WHY_TOPOLOGY,  /* enough room, but not inside one island / NUMA domain */
	XP_WHY_NODE,	  /* the request names another node (checked first) */
	/* the state layer's split of XP_WHY_DOWN by the node's state (the
	 * core knows only "takes no new work"): never set by the core */
	XP_WHY_DRAINING, /* draining or drained */
	XP_WHY_CORDONED,
	XP_WHY_N
};

struct xp_explain {
	uint32_t nodes[XP_WHY_N]; /* node count per reason */
	uint64_t cpu_short_min;	  /* smallest CPU shortfall among XP_WHY_CPU nodes */
	uint64_t mem_short_min;	  /* smallest memory shortfall among XP_WHY_MEM nodes */
	char mig[160];		  /* a MIG slice: the profile and where it goes, or why
				   * no GPU takes it ("" for other requests) */
};

/* One shape of a target workload M with its probability. */
struct xp_wshape {
	struct xp_request req;
	double p;
};

struct xp_sched;
struct xp_policy_ops;

struct xp_sched *xp_sched_create(const struct xp_cluster *c, const struct xp_sched_opts *o,
				 struct xp_err *err);
void xp_sched_destroy(struct xp_sched *s);
const struct xp_policy_ops *xp_sched_policy(const struct xp_sched *s);

/* Tie-break order: rank[i] for node i; lower wins. Ranks must be distinct.
 * Default: the node index. */
int xp_sched_set_ranks(struct xp_sched *s, const uint32_t *rank, struct xp_err *err);

/* The target workload M used by fragmentation-aware policies and by
 * xp_sched_frag(). Copied. Probabilities must be >= 0 and sum to ~1. */
/* Do a and b ask for the same shape (all but host memory)? */
int xp_request_same_shape(const struct xp_request *a, const struct xp_request *b);
int xp_sched_set_workload(struct xp_sched *s, const struct xp_wshape *m, size_t n,
			  struct xp_err *err);

/* Decide where r goes. 0: *out filled. XP_ENOSPC: no node fits. */
int xp_sched_pick(struct xp_sched *s, const struct xp_request *r, struct xp_rng *rng,
		  struct xp_alloc *out);
/*
 * Batches (ARCHITECTURE.md: the optional batch-optimise hook). Plan where
 * r[0..n) go, together, without changing state: placed[i] = 1 and out[i]
 * set for each request the plan places (a plan's allocations fit together,
 * so they may be committed in any order). Requests are planned in chunks
 * of o->k; each chunk sees the ones before it placed. With budget 0, or a
 * policy without an optimiser, the plan is the greedy one: xp_sched_pick()
 * and commit, request by request in order, exactly as unbatched. Returns
 * the number placed, or a negative error (the state is restored either
 * way). The budget counts rollouts, never time, so a plan depends only on
 * the state, the requests, the options and rng.
 */
#define XP_BATCH_MAX	       64 /* requests one search covers */
#define XP_BATCH_K_DEFAULT     64
#define XP_BATCH_CANDS_DEFAULT 2
/* the default budget of the CLI and the simulator (docs/results/mcts.md) */
#define XP_BATCH_BUDGET_DEFAULT	    16
#define XP_BATCH_BUDGET_DEFAULT_STR "16"
struct xp_batch_opts {
	uint32_t budget; /* rollouts per search; 0 = greedy */
	uint32_t k;	 /* requests searched together, 1..XP_BATCH_MAX; 0 = default */
	uint32_t cands;	 /* candidate nodes per request from the index, 1..8; 0 = default */
	double explore;	 /* UCT exploration constant; 0 = 0.5 */
	double weight;	 /* of the measure's growth in the reward; 0 = 1, < 0 = none */
	/* out: work done, for decisions/s figures */
	uint64_t rollouts, placements;
};
int xp_sched_plan_batch(struct xp_sched *s, const struct xp_request *r, size_t n,
			struct xp_batch_opts *o, struct xp_rng *rng, struct xp_alloc *out,
			uint8_t *placed);

/* Does a (e.g. read back from a journal) still fit the free capacity?
 * 0 or XP_ENOSPC / XP_EINVAL with the reason in err. */
int xp_sched_alloc_fits(const struct xp_sched *s, const struct xp_alloc *a, struct xp_err *err);
/* MIG slices (mig_sched.c): the profile name of a's slice on its device
 * (NULL: a holds none) */
const char *xp_sched_mig_profile(const struct xp_sched *s, const struct xp_alloc *a);
/* The same slice's profile (name, id, placements), or NULL */
const struct xp_mig_profile *xp_sched_mig_prof(const struct xp_sched *s, const struct xp_alloc *a);
/* The compute milli a MIG slice of kind counts for (quotas, usage): its
 * compute slices x XP_MILLI / 7, rounded down (3g = 428). */
uint16_t xp_mig_kind_milli(int kind);
/* MIG instances the node's agent reports on device dev: warm[kind] has
 * bit s for one kept warm at start s (XP_MIG_NKINDS entries), foreign the
 * memory slices of instances xpool did not create. A hint for placement,
 * not state: it prefers reusing a warm one, then displacing the fewest,
 * and never places on foreign slices. */
void xp_sched_set_mig_warm(struct xp_sched *s, uint32_t node, uint16_t dev, const uint8_t *warm,
			   uint8_t foreign);
/* Does the agent's hint say device dev holds instances that are not to be
 * destroyed: 2 one xpool did not create, 1 a warm one, 0 neither. */
int xp_sched_mig_kept(const struct xp_sched *s, uint32_t node, uint16_t dev);
/* The slice lattice of a device in mode mig (its table, and the slices of
 * running allocations), NULL when it has none. */
const struct xp_mig_table *xp_sched_mig_table(const struct xp_sched *s, uint32_t node,
					      uint16_t dev);
const struct xp_mig_gpu *xp_sched_mig_gpu(const struct xp_sched *s, uint32_t node, uint16_t dev);
/* How many slices of r's profile (mig: any, its smallest that fits) the
 * healthy GPUs in MIG mode could take now, each at a free placement. */
uint32_t xp_mig_room_now(const struct xp_sched *s, const struct xp_request *r);
/* The same on node's GPUs alone (a gang of slices on one node). */
uint32_t xp_mig_room_on(const struct xp_sched *s, uint32_t node, const struct xp_request *r);
/* Apply a decision (it must still fit). */
void xp_sched_commit(struct xp_sched *s, const struct xp_alloc *a);
/* Return the resources of a committed allocation. */
void xp_sched_release(struct xp_sched *s, const struct xp_alloc *a);
/* pick + commit. */
int xp_sched_place(struct xp_sched *s, const struct xp_request *r, struct xp_rng *rng,
		   struct xp_alloc *out);

/* Node up/down (a down node takes nothing; what it holds stays accounted). */
void xp_sched_set_node_up(struct xp_sched *s, uint32_t node, int up);
/* Device health: an unhealthy device takes nothing and counts as no capacity. */
void xp_sched_set_device_ok(struct xp_sched *s, uint32_t node, uint16_t dev, int ok);
/* Failures recorded on a node (device faults, losses): the weighted
 * policy's health factor. */
void xp_sched_set_node_failures(struct xp_sched *s, uint32_t node, uint32_t failures);

/* Per-node reasons for r not fitting; totals in *out. */
void xp_sched_explain(const struct xp_sched *s, const struct xp_request *r, struct xp_explain *out);
/* The MIG part of an explanation of r into out->mig; a (may be NULL):
 * where it would go. */
void xp_mig_explain(const struct xp_sched *s, const struct xp_request *r, const struct xp_alloc *a,
		    struct xp_explain *out);
const char *xp_why_name(int why);

/* Observers. "Accelerator" = a device whose class is not cpu. */
uint64_t xp_sched_total_milli(const struct xp_sched *s); /* all healthy accelerators */
uint64_t xp_sched_used_milli(const struct xp_sched *s);	 /* allocated */
double xp_sched_frag(const struct xp_sched *s);		 /* F(M), milli; 0 without M */
double xp_sched_node_frag(const struct xp_sched *s, uint32_t node);
/* The policy's measure of the node (policy.h measure(); 0 without one). */
double xp_sched_measure(const struct xp_sched *s, uint32_t node);
int64_t xp_sched_node_cpu_left(const struct xp_sched *s, uint32_t node);
int64_t xp_sched_node_mem_free(const struct xp_sched *s, uint32_t node);
uint16_t xp_sched_dev_free_milli(const struct xp_sched *s, uint32_t node, uint16_t dev);
uint64_t xp_sched_dev_free_mem(const struct xp_sched *s, uint32_t node, uint16_t dev);
/* Recompute cached totals from scratch and compare (debug / tests); 0 = consistent. */
int xp_sched_check_invariants(const struct xp_sched *s, struct xp_err *err);

#endif
