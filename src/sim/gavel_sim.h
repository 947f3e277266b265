/*
 * gavel_sim: Gavel's round-based simulator (traces/gavel/PROTOCOL.md §2.2)
 * on Gavel's synthetic workload (gavel.h), with Gavel's baseline policies
 * and xpool's own heterogeneity-aware policy.
 *
 * The mechanism is Gavel's as its simulator runs it, quirks included, so the
 * published seed-0 tables can be checked: 360 s rounds that end when the
 * last job of the round ends; arrivals, completions and decisions only at
 * round boundaries; the allocation X recomputed only when a job arrived or
 * left and 1920 s have passed since the last computation (the computations
 * while the last one was at t = 0 are exempt); per-type priorities
 * X / (time received / type time) with 180 s reset credits; the greedy pass
 * over the types in [v100, p100, k80] order (shuffled every round for the
 * heterogeneity-agnostic policies) that also places jobs whose X is 0, and
 * reserves GPUs for jobs that have no X yet without running them.
 *
 * Gavel's LAS with space sharing (XP_GP_LAS_SS, gavel_packed.c) keeps the
 * same accounting for pairs of jobs too and needs the co-location table.
 *
 * xpool's policy (XP_GP_XPOOL, gavel_xpool.c) shares the rounds, the
 * workload and the accounting, and decides every round by itself: see there.
 * XP_GP_MCTS (gavel_mcts.c) is that policy with a search over the order in
 * which its round plan takes the jobs; budget 0 is XP_GP_XPOOL exactly.
 */
#ifndef XP_SIM_GAVEL_SIM_H
#define XP_SIM_GAVEL_SIM_H

#include <stddef.h>

#include "gavel.h"

enum xp_gavel_policy {
	XP_GP_FIFO,	 /* Gavel's `fifo` (agnostic), its placement quirk included */
	XP_GP_FIFO_PERF, /* `fifo_perf` */
	XP_GP_LAS,	 /* `max_min_fairness` (agnostic): X = ECOS's symmetric point */
	XP_GP_LAS_PERF,	 /* `max_min_fairness_perf`: the LP, solved by simplex */
	XP_GP_XPOOL,	 /* xpool's policy */
	XP_GP_LAS_SS,	 /* `max_min_fairness_packed`: LAS with space sharing (needs colo) */
	XP_GP_MCTS,	 /* xpool's policy plus a search over its order (gavel_mcts.c) */
	XP_GP_COUNT
};

const char *xp_gavel_policy_name(enum xp_gavel_policy p);
/* by name (fifo, gavel-fifo, las, gavel-las, xpool, gavel-las-ss, mcts); -1 if unknown */
int xp_gavel_policy_parse(const char *name);

/* Co-located throughputs (gavel_colocated_throughputs.csv): what job a and
 * job b each do per second when they share sf GPUs of one type; 0 = the
 * pair cannot share. */
struct xp_gavel_colo {
	float tput[XP_GAVEL_TYPES][4][XP_GAVEL_TEMPLATES][XP_GAVEL_TEMPLATES][2];
};
int xp_gavel_colo_load(const char *csv, struct xp_gavel_colo *c, struct xp_err *err);
/* The same from a buffer (copied; name labels errors). */
int xp_gavel_colo_parse(const char *name, const char *buf, size_t len, struct xp_gavel_colo *c,
			struct xp_err *err);

/* Energy model per GPU type: idle watts, and watts while running a job
 * (TDP x active fraction); docs/design/energy.md. */
struct xp_gavel_power {
	double idle_w[XP_GAVEL_TYPES], busy_w[XP_GAVEL_TYPES];
};
/* the model used unless told otherwise: V100 250 W, P100 250 W, K80 150 W
 * per GPU (TDP), idle 35/30/25 W, jobs drawing 80 % of TDP */
void xp_gavel_power_default(struct xp_gavel_power *p);

struct xp_gavel_cfg {
	int gpus[XP_GAVEL_TYPES]; /* v100, p100, k80: 36:36:36 */
	double rate;		  /* arrivals per hour */
	int multi_gpu;
	unsigned seed;
	enum xp_gavel_policy policy;
	size_t win_lo, win_hi; /* measured jobs [lo, hi): 4000-5000 */
	size_t max_active;     /* more active jobs than this = saturated */
	double round_s;	       /* 360 */
	double reset_s;	       /* 1920 */
	struct xp_gavel_power power;
	const struct xp_gavel_colo *colo; /* space sharing (xpool, gavel-las-ss); NULL = none */
	double energy_weight;		  /* xpool's energy factor, 0 = JCT only */
	int check; /* verify every round's plan (tests): an error if it breaks one */
	unsigned budget; /* mcts: rollouts per round after xpool's own plan (0 = xpool) */
	double *finish;	 /* when set, each window job's finish (s, -1 none): hi - lo of them */
};
void xp_gavel_cfg_default(struct xp_gavel_cfg *c);
/* The GPU counts and power of c from a cluster descriptor (docs/descriptor.md):
 * devices whose model names V100, P100 or K80 (case-blind substring), their
 * `tdp` x active (the share of TDP a running job draws) and `idle_power`;
 * every model's devices must agree on power. 0, or < 0 with err. */
struct xp_cluster;
int xp_gavel_cfg_cluster(struct xp_gavel_cfg *c, const struct xp_cluster *cl, double active,
			 struct xp_err *err);

struct xp_gavel_result {
	int saturated;
	size_t jobs; /* completed in the window */
	double avg_jct_h, p50_jct_h, p99_jct_h;
	double avg_queue_h; /* arrival to the first round the job runs in */
	double ftf_mean, ftf_max; /* JCT / JCT alone on the best type */
	double excess_max_s;	  /* the most any job took beyond that */
	double end_h;		  /* when the last window job finished */
	double util[XP_GAVEL_TYPES];
	double job_kwh;		   /* mean energy of a window job */
	double busy_kwh, idle_kwh; /* whole cluster from the first window arrival to the end */
	double decision_ms;	   /* median time of one round's decision */
	size_t rounds;
};

int xp_gavel_simulate(const struct xp_gavel_matrix *m, const struct xp_gavel_cfg *cfg,
		      struct xp_gavel_result *res, struct xp_err *err);

#endif
