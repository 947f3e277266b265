/*
 * serving: one pool of GPUs shared by an inference service, whose load
 * comes from a series (load.h), and an elastic, preemptible training
 * backlog (issue 22 part 4, `xpool sim serving`, docs/design/serving.md,
 * docs/results/serving.md).
 *
 * The service: each replica holds one GPU and serves requests at rate mu
 * (capacity, requests/s when always busy; exponential service times). The
 * ready replicas form an M/M/c queue at the current rate lambda; a step
 * violates the latency SLO when the p99 response time (queueing + service,
 * exact for M/M/c) exceeds slo_s, or the queue is unstable (lambda >= c mu,
 * or no replica). A minute violates when any of its steps does. A new
 * replica holds its GPU from the step it is placed and serves startup_s
 * later.
 *
 * The training backlog (seeded): jobs of nominal size n in {1,2,4,8}
 * GPUs (30/20/25/25 %), min = max(1, n/4), max = n, running n x D
 * GPU-seconds of work with D exponential (mean job_hours, 0.25..12 h);
 * one pool-hour of jobs queued at the start, then Poisson arrivals
 * offering train_load x the pool's GPU-time over the day. Work advances at
 * one GPU-second per GPU-second held (linear scaling), except while a job
 * restarts. Every job checkpoints every ckpt_s of running.
 *
 * Policies (a step every step_s, 15 s as the HPA's sync):
 *   static    the service holds ceil(peak / mu x (1 + headroom)) replicas
 *             all day (peak: the series' highest window); training jobs
 *             run rigid at n on the rest, first-fit from the queue.
 *   reactive  the HPA (core/state/hpa.h) on the last observed window's
 *             rate per replica, target = target x mu; rigid training as
 *             static; a replica that finds no free GPU preempts training
 *             jobs (the youngest first): SIGTERM, grace_s, work since the
 *             job's last checkpoint lost, back to the queue's head.
 *   xpool     the HPA plus its forecast term: the larger of the load
 *             lead_s ahead (load.h's predictor) and the load at target of
 *             the replicas the queue model needs for the SLO at that
 *             forecast + noise_z sigma of the last windows; training
 *             elastic: jobs start at up to max on what is free (at least
 *             min), grow into free GPUs (at most once per regrow_s), and
 *             when the service needs GPUs shrink towards min (checkpoint
 *             signal, grace_s, then a restart of restart_s at the new
 *             size, no work lost), the job with the most GPUs above its
 *             min first; only when every job is at min are whole jobs
 *             preempted, also after a checkpoint.
 * GPUs leaving training are held grace_s before a replica can take them.
 *
 * Ownership: a result owns its series (xp_serve_result_free, NULL-safe).
 */
#ifndef XP_SIM_SERVING_H
#define XP_SIM_SERVING_H

#include <stddef.h>
#include <stdint.h>

#include "../lib/err.h"
#include "load.h"

enum { XP_SERVE_STATIC, XP_SERVE_REACTIVE, XP_SERVE_XPOOL, XP_SERVE_NPOLICIES };

struct xp_serve_opts {
	uint32_t gpus;
	uint32_t min_replicas;
	double capacity;  /* mu, requests/s per replica */
	double target;	  /* HPA target per replica, a fraction of mu */
	double tolerance; /* HPA tolerance */
	int64_t down_window_s, up_window_s;
	double slo_s;	   /* p99 response time bound */
	double headroom;   /* static: over the peak */
	int64_t step_s;	   /* one decision */
	int64_t startup_s; /* a replica's start to ready */
	int64_t grace_s;   /* a training replica's exit after its signal */
	int64_t restart_s; /* an elastic job's restart at a new size */
	int64_t ckpt_s;	   /* periodic checkpoint */
	int64_t lead_s;	   /* xpool's forecast horizon */
	double noise_z;	   /* xpool: SLO-sized at forecast + noise_z x the recent noise */
	int64_t regrow_s;  /* a job grows at most once per this */
	double train_load; /* training offered over the day / the pool's GPU-time */
	double job_hours;  /* mean duration of a job at its nominal size */
	uint64_t seed;
};

struct xp_serve_result {
	int policy;
	double hours, pool_gpu_h;
	double serve_gpu_h;	  /* replicas held (starting + ready) */
	double train_alloc_gpu_h; /* GPUs held by training (running + draining) */
	double alloc_gpu_h;	  /* the two */
	double busy_gpu_h;	  /* served work (lambda / mu) + training work done */
	double train_gpu_h;	  /* training work delivered (kept) */
	double lost_gpu_h;	  /* training work lost to preemption */
	uint32_t minutes, slo_minutes, load_minutes; /* load_minutes: with requests */
	uint32_t shrinks, grows, preemptions, scale_ups, scale_downs;
	uint32_t jobs, jobs_done;
	uint32_t static_replicas, replicas_max, alloc_max;
	uint32_t bad_sizes; /* steps with a running job outside [min, max] (must be 0) */
	double replicas_mean;
	/* per minute: time (h), load (qps), replicas (held), ready, training
	 * GPUs, allocated share of the pool */
	double *t_h, *load, *replicas, *ready, *train, *util;
	size_t ns;
	double cpu_s; /* set by the caller */
};

void xp_serve_defaults(struct xp_serve_opts *o);
const char *xp_serve_policy_name(int policy);
int xp_serve_policy_parse(const char *s);

/* One run of a policy over a load series (as scaled); fills *r. 0, or
 * XP_EINVAL naming a bad option, or XP_EINTERNAL if an invariant broke. */
int xp_serve_run(const struct xp_load *l, const struct xp_serve_opts *o, int policy,
		 struct xp_serve_result *r, struct xp_err *err);
void xp_serve_result_free(struct xp_serve_result *r);

/* The queue model (serving_queue.c). Erlang C: the probability that a
 * request waits, M/M/c with c replicas; 1 when unstable. */
double xp_mmc_wait_prob(uint32_t c, double lambda, double mu);
/* P(response time > x) in M/M/c FCFS; 1 when unstable or c is 0 with load. */
double xp_mmc_late(uint32_t c, double lambda, double mu, double x);
/* The fewest replicas (up to cmax) with P(response > x) <= p; cmax when
 * none does; 0 without load. */
uint32_t xp_mmc_servers(double lambda, double mu, double x, double p, uint32_t cmax);
/* The q-quantile of the response time (bisection); INFINITY when unstable. */
double xp_mmc_quantile(uint32_t c, double lambda, double mu, double q);

#endif
