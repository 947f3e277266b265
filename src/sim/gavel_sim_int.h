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
	double first_run; /* start of the first round it ran in, -1 */
	double served; /* attained service, seconds on the job's best type */
	int last_k;    /* type of its previous round, -1 */
	double energy_j;
	int active;
};

/* one placement of a round: job a (and b when sharing) on sf GPUs of type k */
struct gplace {
	int a, b, k;
};

/* gavel-las-ss: a pair of active jobs of one size that may share GPUs, with
 * Gavel's accounting for the combination (time received, deficit, priority
 * and X per type), kept apart from each job's own */
struct gpair {
	int a, b; /* job ids, a < b */
	double jt[GT], def[GT], pri[GT], x[GT];
};

struct gsim {
	const struct xp_gavel_matrix *m;
	const struct xp_gavel_cfg *cfg;
	struct xp_gavel_job *trace;
	size_t ntrace, next; /* generated jobs, next to arrive */
	XP_VEC(struct gjob) jobs;
	XP_VEC(int) act;	    /* active jobs in id order */
	XP_VEC(struct gplace) plan; /* this round */
	XP_VEC(struct gpair) pairs; /* gavel-las-ss: by (b, a), Gavel's dict order */
	double now, last_reset;
	int need_update;
	double wt[GT]; /* Gavel's per-type time */
	struct xp_pyrand shuffler, fifo_rng;
	XP_VEC(int) fifo_alloc; /* jobs `fifo` holds a type for */
	struct xp_gittins git;	/* xpool: sizes seen, GPUs x seconds on the best type */
};

/* an entry of Gavel's per-type queue: a job (pair = 0, id its id) or a pair
 * of jobs (pair = 1, id its index in gsim.pairs) at position pos of the
 * queue's dict order; sorted by xp_gavel_entry_cmp, highest (priority,
 * deficit, X) first, ties in dict order */
struct gentry {
	double pri, def, x;
	int id, pair, pos;
};
int xp_gavel_entry_cmp(const void *a, const void *b);
/* the same order, lazily: a heap over e[0..n) and its first entry taken
 * off (n > 0); popping k entries costs O(n + k log n) where sorting all
 * costs O(n log n), and the greedy pass stops once a type is full. The
 * order is total (pos breaks ties), so the pops come in qsort's order. */
void xp_gavel_entry_heapify(struct gentry *e, size_t n);
struct gentry xp_gavel_entry_pop(struct gentry *e, size_t *n);

/* the classes of interchangeable jobs (template and scale factor) among
 * ids[0..n), numbered in order of first appearance: cls_of[xp_gavel_key(j)]
 * (-1: none), cnt and rep (a job id) per class; the number of classes */
#define XP_GAVEL_CLASSES (XP_GAVEL_TEMPLATES * 4)
/* a job's class key, below XP_GAVEL_CLASSES: its template and size */
static inline int xp_gavel_key(const struct gjob *j)
{
	return j->tmpl * 4 + j->sfi;
}
int xp_gavel_classes(const struct gsim *s, const int *ids, size_t n, int *cls_of, int *cnt,
		     int *rep);

/* Gavel's allocation X for the active jobs (gavel_alloc.c) */
void xp_gavel_alloc(struct gsim *s);
/* the round's plan by xpool's policy (gavel_xpool.c) */
void xp_gavel_xpool_plan(struct gsim *s);
/* its parts, which the search (gavel_mcts.c) reuses: the active jobs in
 * xpool's order, best first (an array of s->act.n ids, the caller frees
 * it) and whether the pool is crowded (it builds the Gittins table); the
 * plan (select, LP, fill, improve, share) over the jobs in the order
 * ids[0..n) appended to s->plan; and the round objective of s->plan -
 * the LP's column values summed over every placement the plan made */
int *xp_gavel_xpool_order(struct gsim *s, int *crowded);
void xp_gavel_xpool_place(struct gsim *s, const int *ids, size_t n, int crowded);
double xp_gavel_xpool_score(const struct gsim *s, int crowded);
/* the round's plan by the search (gavel_mcts.c): xpool's plan when
 * cfg->budget is 0; else the best by xp_gavel_xpool_score of xpool's plan
 * and cfg->budget rollouts */
void xp_gavel_mcts_plan(struct gsim *s);
/* xpool's policy or the search over it */
static inline int xp_gavel_is_xpool(enum xp_gavel_policy p)
{
	return p == XP_GP_XPOOL || p == XP_GP_MCTS;
}

/* gavel-las-ss (gavel_packed.c): the packed LP's X for jobs and pairs; the
 * pairs of a job just added (the last of act) and the dropping of pairs
 * whose job finished; the combinations' share of a reset and of the
 * priorities; the greedy pass over jobs and pairs; a pair by its jobs */
void xp_gavel_packed_alloc(struct gsim *s);
void xp_gavel_ss_add(struct gsim *s);
void xp_gavel_ss_drop(struct gsim *s);
void xp_gavel_ss_reset(struct gsim *s, double elapsed);
void xp_gavel_ss_priorities(struct gsim *s);
void xp_gavel_ss_plan(struct gsim *s);
struct gpair *xp_gavel_ss_find(struct gsim *s, int a, int b);

#endif
