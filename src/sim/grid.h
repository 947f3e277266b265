/*
 * grid: many OpenB runs (workloads x policies x seeds) on worker threads,
 * and their results written in the published CSV shapes.
 *
 * The cluster, traces and workloads are shared read-only; each run builds
 * its own scheduler, so runs are independent and the result of a cell does
 * not depend on the thread count.
 */
#ifndef XP_GRID_H
#define XP_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "openb.h"

struct xp_grid {
	const struct xp_cluster *c;
	struct xp_openb_trace **traces;
	size_t ntraces;
	struct xp_wshape **m; /* per trace */
	size_t *nm;
	const struct xp_policy_ops **policies;
	size_t npolicies;
	uint64_t *seeds;
	size_t nseeds;
	double tune;
	int tiebreak;
	int no_index;
	size_t window;		    /* pods per batch (xp_openb_run_opts) */
	struct xp_batch_opts batch; /* the optimiser's budget, k, cands */
	int bound;		    /* 1: compute the lower bound per run */
	int threads;
	/* called from worker threads, serialised by the grid */
	void (*progress)(void *ctx, size_t done, size_t total);
	void *ctx;
};

struct xp_grid_cell {
	size_t trace, policy, seed;
	int rc;
	char err[XP_ERR_TEXT_MAX];
	struct xp_openb_result res;
};

/* Run every cell; *cells has ntraces*npolicies*nseeds entries in
 * (trace, policy, seed) order. Returns 0 when every cell ran. */
int xp_grid_run(const struct xp_grid *g, struct xp_grid_cell **cells, struct xp_err *err);

/* Write analysis_allo_discrete.csv, analysis_frag_discrete.csv,
 * analysis_frag_ratio_discrete.csv and runs.csv into dir (created). Files are
 * written as .tmp and renamed, so a failed write leaves no partial result. */
int xp_grid_write(const char *dir, const struct xp_grid *g, const struct xp_grid_cell *cells,
		  struct xp_err *err);

#endif
