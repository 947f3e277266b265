/*
 * bench: placement throughput of the core on synthetic clusters built from
 * the OpenB node mix, with OpenB-shaped pods (sampled from a pod list) and
 * that list's target workload M.
 *
 * A run starts from an empty cluster of n nodes (OpenB nodes replicated in
 * a seeded shuffled order) and places sampled pods, arrivals only, until
 * the arrived GPU request reaches fill% of the capacity or max_decisions
 * were made; every decision, placed or failed, counts. Single-threaded.
 * With a window, pods are planned window by window and the plan committed:
 * the search's time is amortised over the window's decisions.
 */
#ifndef XP_BENCH_H
#define XP_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "openb.h"

struct xp_bench_opts {
	const char *policy;
	size_t nodes;
	double fill;	      /* % of GPU capacity to arrive */
	size_t max_decisions; /* 0 = no cap */
	uint64_t seed;
	int no_index;
	size_t window;	 /* pods planned together (xp_sched_plan_batch); <= 1: one by one */
	uint32_t budget; /* the optimiser's rollouts per search */
};

struct xp_bench_result {
	size_t decisions, placed;
	double secs;	    /* wall time of the decisions only */
	double setup_secs;  /* cluster + scheduler construction */
	double unalloc_pct; /* unallocated GPU % at the end */
};

/* Synthetic cluster of n nodes from the OpenB node mix. */
struct xp_cluster *xp_bench_cluster(const struct xp_cluster *openb, size_t n, uint64_t seed);

int xp_bench_run(const struct xp_cluster *c, const struct xp_openb_trace *t,
		 const struct xp_wshape *m, size_t nm, const struct xp_bench_opts *o,
		 struct xp_bench_result *res, struct xp_err *err);

#endif
