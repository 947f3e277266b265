/*
 * tenants: the multi-tenant simulator (issue 5 §8, docs/results/tenancy.md).
 *
 * A generated trace - tenants of unequal shares whose demand peaks at
 * different times, a mix of training gangs, inference and batch jobs with
 * priorities and time limits - is replayed through the controller's own
 * state layer (src/core/state: the same records, the same cycle, the same
 * queues, quotas, preemption and backfill), event by event on a simulated
 * clock. Three set-ups on the same trace:
 *
 *   xpool     a queue per tenant, guaranteed its share of the GPUs, no max
 *             (borrowing), reclaim preemption, fair share;
 *   noborrow  the same guarantees as hard maxima, no preemption;
 *   fifo      one queue, submission order, no fair share.
 *
 * Per tenant, per job kind and over all jobs: queueing time (first start -
 * submission) p50 / p95 / p99 / mean; overall: GPU utilisation,
 * utilisation while jobs wait, Jain's fairness index, preemptions and
 * fragmentation (xp_tsim_result). Any placement policy; with mcts the
 * cycle plans K pending jobs at a time (opts.budget).
 */
#ifndef XP_SIM_TENANTS_H
#define XP_SIM_TENANTS_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/err.h"

enum xp_tsim_mode { XP_TSIM_XPOOL, XP_TSIM_NOBORROW, XP_TSIM_FIFO, XP_TSIM_NMODES };

#define XP_TSIM_MAX_TENANTS 16

struct xp_tsim_opts {
	uint32_t nodes;	  /* of 8 GPUs, 64 cores, 512 GiB (default 10000) */
	uint32_t jobs;	  /* default 100000 */
	uint32_t tenants; /* 2..16, default 4: shares n, n-1, ..., 1 */
	uint64_t seed;
	int mode;	    /* enum xp_tsim_mode */
	double load;	    /* offered GPU-time / capacity over the arrival span (0.9) */
	int64_t tick_ms;    /* events within a tick are handled together (60000) */
	const char *policy; /* placement policy (bestfit) */
	uint32_t budget;    /* rollouts per search of a batch optimiser (mcts; the
			     * cycle's batch step, docs/design/batch-cycle.md);
			     * 0: the job-at-a-time cycle (default 16) */
	int64_t frag_ms;    /* fragmentation sampled at most this often (600000) */
	int64_t aging_ms;   /* xpool and noborrow: the queues' aging (0: off) */
	int check;	    /* check every invariant of the state after each step (tests) */
	const char *prices; /* a price table (YAML or JSON, prices.h): the run is metered and
			     * priced like the controller's (result.cost) */
	int report_cost;    /* result.cost even without prices (usage, no cost) */
	const char *plot_dir; /* SVG plots of utilisation, fragmentation and cost over time
			       * here: tenants-<mode>-usage.svg, tenants-<mode>-cost.svg */
};

struct xp_tsim_tenant {
	double share; /* of the GPUs (its guarantee) */
	uint64_t jobs, started;
	double wait_p50_s, wait_p95_s, wait_p99_s, wait_mean_s;
	double gpu_hours; /* received */
};

/* the job kinds of the trace, by priority */
enum { XP_TSIM_BATCH, XP_TSIM_TRAIN, XP_TSIM_INFER, XP_TSIM_NKINDS };

struct xp_tsim_result {
	uint32_t tenants;
	struct xp_tsim_tenant t[XP_TSIM_MAX_TENANTS];
	struct xp_tsim_tenant kind[XP_TSIM_NKINDS]; /* the same figures per job kind
						     * (share unused) */
	struct xp_tsim_tenant all;		    /* every job */
	/* Fragmentation, sampled at the first step at least frag_ms after the
	 * last sample at which jobs were pending; means over those samples:
	 *  stranded      free GPU milli on nodes that cannot host the smallest
	 *                pending replica (fewest GPU milli, then CPU; its CPU,
	 *                memory and devices), over all free GPU milli;
	 *  stranded_cap  the same milli over the cluster's GPU capacity;
	 *  fm            FGD's F(M) (the expected free GPU milli the target
	 *                workload M cannot use) over all free GPU milli, with
	 *                M estimated hourly from the last day's jobs. */
	double frag_stranded, frag_stranded_cap, frag_fm, free_share;
	uint64_t frag_samples;
	uint64_t batches, rollouts, searched; /* the batch step's work: searches, their
					       * rollouts, the jobs they planned */
	double util;	      /* GPU-time used / (GPUs x span) over the arrival span */
	double util_waiting;  /* the same, over the time jobs were waiting */
	double jain;	      /* over the time two or more tenants wait, the mean Jain's index of
			       * usage/share among the tenants that wait */
	uint64_t preemptions; /* job.preempt records */
	uint64_t unstarted;   /* jobs never started (should be 0) */
	double makespan_h;
	double span_h; /* arrivals spread over this */
	char *cost;    /* with opts.prices: the meter's report by tenant over the whole run
			* (JSON, as GET /v1/usage; malloc'd, the caller frees) */
	uint64_t cycles;
	double wall_s;
};

/* One job of the generated trace (times in ms from the start). */
struct xp_tsim_job {
	int64_t arrive, dur;
	uint32_t tenant, replicas;
	uint16_t gpus, milli; /* per replica; gpus 8: a whole 8-GPU node */
	uint32_t cpu, mem_gib;
	int32_t prio;	     /* 0 batch, 5 training, 10 inference */
	int64_t first_start; /* -1: not yet (the simulator's record) */
};

/* The kind of a generated job, by its priority (XP_TSIM_BATCH...). */
int xp_tsim_kind(const struct xp_tsim_job *x);

/* The trace of o (o->jobs jobs, o->tenants tenants, o->seed, o->load)
 * for a pool of gpus GPUs, arrivals spread so that the offered GPU-time is
 * o->load x gpus x the span (*span_h, hours). Not sorted by arrival. The
 * simulator and bench/tenancy_slurm.sh (the Slurm side by side) share it. */
void xp_tsim_gen(const struct xp_tsim_opts *o, double gpus, struct xp_tsim_job *j,
		 double *span_h);

const char *xp_tsim_mode_name(int m);
int xp_tsim_mode_parse(const char *s);
void xp_tsim_defaults(struct xp_tsim_opts *o);
int xp_tsim_run(const struct xp_tsim_opts *o, struct xp_tsim_result *r, struct xp_err *err);

#endif
