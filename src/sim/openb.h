/*
 * openb: the Alibaba OpenB GPU trace and the FGD paper's experiment
 * protocol (../shared/traces/openb/PROTOCOL.md), driven through the real
 * scheduling core.
 *
 * One run = (pod list, policy, tune ratio, seed): shuffle the pods, inflate
 * them to tune x the cluster's GPU capacity, permute node ranks, replay
 * arrivals only (no departures, failures dropped), and after every pod
 * record arrived / allocated GPU milli and the fragmentation F(M); then
 * bucket the series by integer "arrived %" 0..130 exactly as the published
 * merge scripts do.
 */
#ifndef XP_OPENB_H
#define XP_OPENB_H

#include <stddef.h>
#include <stdint.h>

#include "../core/model/model.h"
#include "../core/sched/sched.h"
#include "../lib/err.h"

#define XP_OPENB_BUCKETS 131

struct xp_openb_pod {
	char *name;
	uint64_t cpu_milli, mem_mib;
	uint16_t num_gpu, gpu_milli; /* gpu_milli 0 when num_gpu is 0 */
	char *spec;		     /* allowed models as written ("" = any) */
	struct xp_request req;
};

struct xp_openb_trace {
	char *workload;		   /* pod file name without openb_pod_list_ and .csv */
	struct xp_openb_pod *pods; /* sorted by name */
	size_t n;
};

/* Nodes CSV (sn,cpu_milli,memory_mib,gpu,model) -> a new cluster; nodes keep
 * the file's order. */
struct xp_cluster *xp_openb_load_nodes(const char *path, struct xp_err *err);
/* Pods CSV -> a trace whose requests use c's model names. */
struct xp_openb_trace *xp_openb_load_pods(const char *path, struct xp_cluster *c,
					  struct xp_err *err);
/* The same from a buffer (copied; name stands for the path in error text
 * and the workload's name): one reader serves both. */
struct xp_cluster *xp_openb_parse_nodes(const char *name, const char *buf, size_t len,
					struct xp_err *err);
struct xp_openb_trace *xp_openb_parse_pods(const char *name, const char *buf, size_t len,
					   struct xp_cluster *c, struct xp_err *err);
void xp_openb_trace_free(struct xp_openb_trace *t);

/* The target workload M of PROTOCOL.md 2.1 (95% popularity cut, CPU-only
 * shapes included, renormalised). *m is malloc'd. */
int xp_openb_workload(const struct xp_openb_trace *t, struct xp_wshape **m, size_t *n,
		      struct xp_err *err);

struct xp_openb_run_opts {
	const char *policy;
	uint64_t seed;
	double tune;  /* 1.3 in the paper; <= 0: no inflation */
	int tiebreak; /* enum xp_tiebreak */
	int no_index;
	/* batching (issue 24): pods arrive in windows of `window` (<= 1: one
	 * at a time) and each window is planned with xp_sched_plan_batch();
	 * a policy without an optimiser places a window's pods in arrival
	 * order, which is what it does without a window */
	size_t window;
	struct xp_batch_opts batch; /* budget, k, cands */
	int bound;		    /* 1: also compute the lower bound (bound.h) */
};

struct xp_openb_result {
	double alloc[XP_OPENB_BUCKETS];	     /* GPU allocation %, bucket mean */
	double frag_amt[XP_OPENB_BUCKETS];   /* F(M) as % of total GPU capacity */
	double frag_ratio[XP_OPENB_BUCKETS]; /* F(M) / idle GPU, % */
	uint8_t have[XP_OPENB_BUCKETS];
	size_t pods, failed;
	uint64_t total_gpus;
	uint64_t cpu_ns;   /* thread CPU time of the replay (not of the bound) */
	uint64_t rollouts; /* of the batch optimiser */
	/* lower bound on unallocated GPU % at 100 % arrived (bound.h); < 0
	 * when not computed */
	double bound_100;
};

int xp_openb_run(const struct xp_cluster *c, const struct xp_openb_trace *t,
		 const struct xp_wshape *m, size_t nm, const struct xp_openb_run_opts *o,
		 struct xp_openb_result *res, struct xp_err *err);

/* The empty cluster's fragmentation ratio F(M) / idle, in %. */
double xp_openb_empty_frag_ratio(const struct xp_cluster *c, const struct xp_wshape *m, size_t nm);

#endif
