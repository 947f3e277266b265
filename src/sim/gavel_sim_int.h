/*
 * gavel_sim_int: what the round mechanism (gavel_sim.c), Gavel's policies
 * (gavel_alloc.c) and xpool's policy (gavel_xpool.c) share.
 */
#ifndef XP_SIM_GAVEL_SIM_INT_H
#define XP_SIM_GAVEL_SIM_INT_H

#include "../lib/gittins.h"
#include "../lib/pyrand.h"
#include "../lib/vec.h"
#include "gavel_sim.h"

#define GT XP_GAVEL_TYPES

struct gjob {
	int tmpl, sfi, sf;
	double total, done; /* steps */
	double arrival, finish;
	double t[GT]; /* isolated throughput per type */
	double best;  /* max_k t[k] */
	/* Gavel's round accounting */
	double jt[GT], def[GT], pri[GT], x[GT];
	int has_x;
	int fifo_k; /* `fifo`'s kept type, -1 none */
	/* xpool */
	double served; /* attained service, seconds on the job's best type */
	int last_k;    /* type of its previous round, -1 */
	double energy_j;
	int active;
};

/* one placement of a round: job a (and b when sharing) on sf GPUs of type k */
struct gplace {
	int a, b, k;
};

struct gsim {
	const struct xp_gavel_matrix *m;
	const struct xp_gavel_cfg *cfg;
	struct xp_gavel_job *trace;
	size_t ntrace, next; /* generated jobs, next to arrive */
	XP_VEC(struct gjob) jobs;
	XP_VEC(int) act;	    /* active jobs in id order */
	XP_VEC(struct gplace) plan; /* this round */
	double now, last_reset;
	int need_update;
	double wt[GT]; /* Gavel's per-type time */
	struct xp_pyrand shuffler, fifo_rng;
	XP_VEC(int) fifo_alloc; /* jobs `fifo` holds a type for */
	struct xp_gittins git;	/* xpool: sizes seen, GPUs x seconds on the best type */
};

/* Gavel's allocation X for the active jobs (gavel_alloc.c) */
void xp_gavel_alloc(struct gsim *s);
/* the round's plan by xpool's policy (gavel_xpool.c) */
void xp_gavel_xpool_plan(struct gsim *s);

#endif
