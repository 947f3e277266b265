/*
 * gavel_xpool: xpool's heterogeneity-aware policy for Gavel's workload.
 *
 * Every round (no 1920 s wait), three steps:
 *  1. Order: by Gittins index, highest first (Tiresias' 2D-Gittins;
 *     lib/gittins.h). Service is GPUs x seconds of progress, measured on the
 *     job's fastest type, so a job is not penalised for having run on a
 *     slow one. No job's duration is read: the size distribution is learned
 *     from the jobs seen so far (Kaplan-Meier over the finished and the
 *     running ones). Until XPOOL_LEARN jobs have finished, least attained
 *     service first. A starving job - in the pool more than XPOOL_STARVE
 *     times its attained service plus a round - goes before all, oldest
 *     first (Tiresias' starvation guard): past the pool's capacity the
 *     order would otherwise hold the longest jobs back for ever
 *     (single-GPU, seeds 0-2: 7.5 jobs/h 34.21 -> 29.51 h, 7.6 jobs/h
 *     saturated -> 31.21 h; its cost, multi-GPU 2.8 jobs/h seeds 3-9,
 *     23.19 -> 24.34 h).
 *  2. Select and place: take jobs in that order while the pool could hold
 *     them (two to a GPU with sharing, since a pair shares one), then
 *     assign them by an LP over classes of interchangeable jobs whose
 *     columns are a job alone on a type or a pair sharing a type's GPUs
 *     (with the co-location table): every selected job placed where the
 *     pool allows (until the pool is crowded, XPOOL_CROWDED), then the
 *     most normalised throughput (throughput / the job's best) - the
 *     comparative advantage Gavel's LP captures, with space sharing
 *     decided in the same programme. When crowded, each class's throughput
 *     is weighted by its backlog, MaxWeight's rule (XPOOL_MAXWEIGHT).
 *     Rounded, largest jobs first; GPUs left over go to the next jobs in
 *     order; lone jobs of equal size then swap types while that gains.
 *  3. Share: a job still without a GPU joins one of the last-placed
 *     lone placements when the pair's normalised throughputs sum to more
 *     than XPOOL_PACK.
 * An energy weight, when set, charges each placement its power above idle
 * as a share of the hungriest type's: a trade of JCT for joules
 * (docs/design/energy.md).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/lp.h"
#include "../lib/xalloc.h"
#include "gavel_sim_int.h"

/* a waiting job joins a placement when the pair's normalised throughputs
 * sum to more than this */
#define XPOOL_PACK 1.25
/* jobs finished before the size distribution is trusted (LAS until then) */
#define XPOOL_LEARN 30
/* the pool is crowded when the active jobs ask for more than this many
 * times its GPUs: a pair is then worth only its throughput */
#define XPOOL_CROWDED 1.5
/* a job whose time in the pool passes this many times its attained service
 * (plus a round) is starving: it goes first, oldest first */
#define XPOOL_STARVE 8
/* when crowded, a class's normalised throughput counts (its active jobs /
 * the mean over the classes present)^XPOOL_MAXWEIGHT: MaxWeight scheduling
 * (Tassiulas and Ephremides) applied to the selected jobs: maximising
 * this round's throughput alone lets the classes that pair badly pile up
 * (single-GPU 7.6 jobs/h, seeds 0-5: exponent 0 34.35 h, 0.25 31.00, 0.5
 * 30.58, 1 32.21, 2 36.96; docs/design/policy-notes.md) */
#define XPOOL_MAXWEIGHT 0.5

struct cand {
	double key;
	int job;
};

static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return (a->job > b->job) - (a->job < b->job);
}

/* a type's power while running above idle, as a share of the largest:
 * what running one more job there costs in energy */
static double power_share(const struct gsim *s, int k)
{
	double mx = 0;
	for (int q = 0; q < GT; q++) {
		double d = s->cfg->power.busy_w[q] - s->cfg->power.idle_w[q];
		if (d > mx)
			mx = d;
	}
	return mx > 0 ? (s->cfg->power.busy_w[k] - s->cfg->power.idle_w[k]) / mx : 0;
}

/* value of running job j alone on one GPU of type k: its throughput as a
 * share of its best, times a weight w, less the energy weight times the
 * power it adds */
static double wvalue(const struct gsim *s, const struct gjob *j, int k, double w)
{
	double v = j->best > 0 ? w * j->t[k] / j->best : 0;
	return s->cfg->energy_weight > 0 ? v - s->cfg->energy_weight * power_share(s, k) : v;
}

static double value(const struct gsim *s, const struct gjob *j, int k)
{
	return wvalue(s, j, k, 1);
}

/* placing is worth it while 1 + value > 0 (always without an energy weight) */
static int worth(const struct gsim *s, const struct gjob *j, int k)
{
	return j->t[k] > 0 && 1 + value(s, j, k) > 1e-9;
}

/* after the LP and the greedy fill: move lone jobs to types with room, and
 * swap lone jobs of equal size between types, while the sum of values grows
 * (the fill's jobs are placed greedily; without this, multi-GPU at seeds
 * 0-2 is 2.4 % slower at 2.4 jobs/h and 2.6 % at 2.8) */
static void improve(struct gsim *s, int *left)
{
	size_t n = s->plan.n;
	for (int pass = 0; pass < 4; pass++) {
		int changed = 0;
		for (size_t i = 0; i < n; i++) {
			struct gplace *p = &s->plan.v[i];
			const struct gjob *a = &s->jobs.v[p->a];
			if (p->b >= 0)
				continue; /* pairs stay where they were put */
			/* move to a type with room */
			for (int k = 0; k < GT; k++)
				if (k != p->k && left[k] >= a->sf && worth(s, a, k) &&
				    value(s, a, k) > value(s, a, p->k) + 1e-12) {
					left[p->k] += a->sf;
					left[k] -= a->sf;
					p->k = k;
					changed = 1;
				}
			/* swap with a job of the same size on another type */
			for (size_t q = i + 1; q < n; q++) {
				struct gplace *o = &s->plan.v[q];
				const struct gjob *b = &s->jobs.v[o->a];
				if (o->b >= 0 || o->k == p->k || b->sf != a->sf ||
				    !worth(s, a, o->k) || !worth(s, b, p->k))
					continue;
				double now = value(s, a, p->k) + value(s, b, o->k);
				double sw = value(s, a, o->k) + value(s, b, p->k);
				if (sw > now + 1e-12) {
					int t = p->k;
					p->k = o->k;
					o->k = t;
					changed = 1;
				}
			}
		}
		if (!changed)
			break;
	}
}

static void share(struct gsim *s, const struct cand *c, size_t nc, const unsigned char *placed)
{
	const struct xp_gavel_colo *colo = s->cfg->colo;
	size_t nplaced = s->plan.n;
	unsigned char *paired = xcalloc(nplaced + 1, 1);
	for (size_t i = 0; i < nc; i++) {
		if (placed[i])
			continue;
		const struct gjob *u = &s->jobs.v[c[i].job];
		double best = XPOOL_PACK;
		size_t at = nplaced;
		/* the second half of the placements in plan order - the last
		 * placed: smaller sizes, later in the order. Not the oldest jobs:
		 * the plan is in size order; pairing with any placement measured
		 * the same (under 0.02 % at 5.6 jobs/h, seeds 0-2). Only lone
		 * ones: a pair the LP made keeps its jobs */
		for (size_t q = nplaced / 2; q < nplaced; q++) {
			const struct gplace *p = &s->plan.v[q];
			const struct gjob *a = &s->jobs.v[p->a];
			if (paired[q] || p->b >= 0 || a->sf != u->sf)
				continue;
			const float *tp = colo->tput[p->k][a->sfi][a->tmpl][u->tmpl];
			if (tp[0] <= 0 || tp[1] <= 0)
				continue;
			double g = tp[0] / a->t[p->k] + tp[1] / u->t[p->k];
			if (g > best) {
				best = g;
				at = q;
			}
		}
		if (at < nplaced) {
			s->plan.v[at].b = c[i].job;
			paired[at] = 1;
		}
	}
	free(paired);
}

/* job c[i] alone on sf GPUs of type k */
static void put(struct gsim *s, const struct cand *c, size_t i, int k, int *left, int *total,
		unsigned char *placed)
{
	int sf = s->jobs.v[c[i].job].sf;
	left[k] -= sf;
	*total -= sf;
	placed[i] = 1;
	xp_vec_push(&s->plan, ((struct gplace){ c[i].job, -1, k }));
}

/* The LP of assign(): rows are the classes of interchangeable jobs among
 * the selected (same template and size) and the types; each column puts one
 * unit - a job of class ca alone (cb < 0), or a pair of jobs of classes ca
 * and cb sharing - on sf GPUs of type k. */
struct pcol {
	int ca, cb, k;
};
struct pcol_vec {
	struct pcol *v;
	size_t n, cap;
};
struct dbl_vec {
	double *v;
	size_t n, cap;
};

struct classes {
	int n;
	int *of; /* class of the q-th selected job */
	int cls_of[XP_GAVEL_CLASSES], cnt[XP_GAVEL_CLASSES];
	int rep[XP_GAVEL_CLASSES]; /* a job of each class (id) */
	double w[XP_GAVEL_CLASSES]; /* its throughput's weight (MaxWeight) */
};

static void classes_of(const struct gsim *s, const struct cand *c, const size_t *sel, size_t ns,
		       struct classes *cl)
{
	int *ids = xcalloc(ns + 1, sizeof(int));
	for (size_t q = 0; q < ns; q++)
		ids[q] = c[sel[q]].job;
	cl->n = xp_gavel_classes(s, ids, ns, cl->cls_of, cl->cnt, cl->rep);
	cl->of = ids; /* reused: each job's class in place of its id */
	for (size_t q = 0; q < ns; q++) {
		const struct gjob *j = &s->jobs.v[ids[q]];
		ids[q] = cl->cls_of[xp_gavel_key(j)];
	}
}

/* when crowded, each class's weight from its backlog: its active jobs,
 * selected or not, against the mean over the classes with any */
static void backlog_weights(const struct gsim *s, struct classes *cl, int crowded)
{
	if (!crowded) {
		for (int a = 0; a < cl->n; a++)
			cl->w[a] = 1;
		return;
	}
	int q[XP_GAVEL_CLASSES] = { 0 }, present = 0;
	for (size_t i = 0; i < s->act.n; i++) {
		const struct gjob *j = &s->jobs.v[s->act.v[i]];
		if (!q[xp_gavel_key(j)]++)
			present++;
	}
	double mean = present ? (double)s->act.n / present : 1;
	for (int a = 0; a < cl->n; a++) {
		const struct gjob *j = &s->jobs.v[cl->rep[a]];
		cl->w[a] = pow(q[xp_gavel_key(j)] / mean, XPOOL_MAXWEIGHT);
	}
}

/* the columns and their values: a job alone, sf x (1 + value); a pair,
 * sf x (2 + both normalised co-located throughputs - the power term once),
 * each job placed counting 1 - or, when the pool is crowded, sf x (1 +
 * both), the placement counting 1 like a lone job's: a pair then wins only
 * where it beats the throughput of one of its jobs alone. Counting every
 * job placed keeps all the selected running, which is what mean JCT wants
 * while they fit two to a GPU; past that the pool is near its capacity and
 * pairs that lose throughput lose it for everyone (single-GPU, seeds 0-2:
 * 28.02 -> 25.00 h at 7.2 jobs/h; at 5.6 jobs/h counting placements only
 * would cost 16.62 -> 17.91 h). The throughputs carry the classes'
 * weights (backlog_weights) */
static void columns(const struct gsim *s, const struct classes *cl, int crowded,
		    struct pcol_vec *col, struct dbl_vec *obj)
{
	double each = crowded ? 0.5 : 1; /* what each job of a pair counts */
	const struct xp_gavel_colo *colo = s->cfg->colo;
	for (int a = 0; a < cl->n; a++) {
		const struct gjob *ja = &s->jobs.v[cl->rep[a]];
		for (int k = 0; k < GT; k++)
			if (worth(s, ja, k)) {
				xp_vec_push(col, ((struct pcol){ a, -1, k }));
				xp_vec_push(obj, ja->sf * (1 + wvalue(s, ja, k, cl->w[a])));
			}
		for (int b = a; colo && b < cl->n; b++) {
			const struct gjob *jb = &s->jobs.v[cl->rep[b]];
			if (jb->sf != ja->sf || (a == b && cl->cnt[a] < 2))
				continue;
			for (int k = 0; k < GT; k++) {
				const float *tp = colo->tput[k][ja->sfi][ja->tmpl][jb->tmpl];
				if (tp[0] <= 0 || tp[1] <= 0 || !ja->t[k] || !jb->t[k])
					continue;
				double v = cl->w[a] * tp[0] / ja->best + cl->w[b] * tp[1] / jb->best;
				if (s->cfg->energy_weight > 0)
					v -= s->cfg->energy_weight * power_share(s, k);
				if (2 * each + v > 1e-9) {
					xp_vec_push(col, ((struct pcol){ a, b, k }));
					xp_vec_push(obj, ja->sf * (2 * each + v));
				}
			}
		}
	}
}

/* whole units of the LP's solution y, then its fractions - the largest
 * jobs first, then the largest part - while class counts and GPUs allow */
static void round_units(const struct gsim *s, const struct classes *cl, const struct pcol *col,
			size_t cols, double *y, int *units, int *left, int *total)
{
	int *room = xcalloc((size_t)cl->n + 1, sizeof(int));
	memcpy(room, cl->cnt, (size_t)cl->n * sizeof(int));
	for (int pass = 0; pass < 2; pass++)
		for (;;) {
			size_t bi = cols;
			int bsf = 0;
			double bf = pass ? 1e-6 : 1 - 1e-6;
			for (size_t i = 0; i < cols; i++) {
				const struct pcol *p = &col[i];
				double f = y[i] - units[i];
				int sf = s->jobs.v[cl->rep[p->ca]].sf;
				int need = p->cb == p->ca ? 2 : 1;
				if (f < bf || left[p->k] < sf || room[p->ca] < need ||
				    (p->cb >= 0 && p->cb != p->ca && room[p->cb] < 1) ||
				    (bi < cols && (sf < bsf || (sf == bsf && f <= bf))))
					continue;
				bf = f;
				bi = i;
				bsf = sf;
				if (!pass)
					break; /* any whole unit will do */
			}
			if (bi == cols)
				break;
			const struct pcol *p = &col[bi];
			units[bi]++;
			if (pass)
				y[bi] = units[bi]; /* a fraction rounds up once */
			left[p->k] -= bsf;
			*total -= bsf;
			room[p->ca]--;
			if (p->cb >= 0)
				room[p->cb]--;
		}
	free(room);
}

/* The selected jobs onto types, sharing included: the LP over classes of
 * interchangeable jobs maximising the sum of the columns' values - every
 * selected job placed where the pool allows, then the most normalised
 * throughput, pairs where sharing a GPU beats the jobs' places apart -
 * rounded (round_units); each class's units go to its jobs in order. */
static void assign(struct gsim *s, const struct cand *c, const size_t *sel, size_t ns, int crowded,
		   int *left, int *total, unsigned char *placed)
{
	struct classes cl;
	classes_of(s, c, sel, ns, &cl);
	backlog_weights(s, &cl, crowded);
	struct pcol_vec col = { 0 };
	struct dbl_vec obj = { 0 };
	columns(s, &cl, crowded, &col, &obj);
	size_t cols = col.n, rows = (size_t)cl.n + GT;
	double *A = xcalloc(rows * cols + 1, sizeof(double)), *b = xcalloc(rows, sizeof(double));
	double *y = xcalloc(cols + 1, sizeof(double)), val;
	for (size_t i = 0; i < cols; i++) {
		const struct pcol *p = &col.v[i];
		A[(size_t)p->ca * cols + i] += 1;
		if (p->cb >= 0)
			A[(size_t)p->cb * cols + i] += 1;
		A[((size_t)cl.n + (size_t)p->k) * cols + i] = s->jobs.v[cl.rep[p->ca]].sf;
	}
	for (int a = 0; a < cl.n; a++)
		b[a] = cl.cnt[a];
	for (int k = 0; k < GT; k++)
		b[cl.n + k] = left[k];
	if (!cols || xp_lp_max(rows, cols, A, b, obj.v, y, &val) != 0)
		memset(y, 0, (cols + 1) * sizeof(double));
	int *units = xcalloc(cols + 1, sizeof(int));
	round_units(s, &cl, col.v, cols, y, units, left, total);
	size_t *next = xcalloc((size_t)cl.n + 1, sizeof(size_t));
	for (size_t i = 0; i < cols; i++)
		for (int u = 0; u < units[i]; u++) {
			const struct pcol *p = &col.v[i];
			int job[2] = { -1, -1 };
			for (int w = 0; w < (p->cb >= 0 ? 2 : 1); w++) {
				int want = w ? p->cb : p->ca;
				while (cl.of[next[want]] != want)
					next[want]++;
				job[w] = c[sel[next[want]]].job;
				placed[sel[next[want]]] = 1;
				next[want]++;
			}
			xp_vec_push(&s->plan, ((struct gplace){ job[0], job[1], p->k }));
		}
	free(next);
	free(units);
	free(A);
	free(b);
	free(y);
	xp_vec_free(&col);
	xp_vec_free(&obj);
	free(cl.of);
}

static void place(struct gsim *s, const struct cand *c, size_t i, int *left, int *total,
		  unsigned char *placed)
{
	const struct gjob *j = &s->jobs.v[c[i].job];
	int bk = -1;
	double bv = -1e300;
	for (int k = 0; k < GT; k++) {
		if (left[k] < j->sf || !worth(s, j, k))
			continue;
		double v = value(s, j, k) + (k == j->last_k ? 1e-9 : 0);
		if (v > bv) {
			bv = v;
			bk = k;
		}
	}
	if (bk >= 0)
		put(s, c, i, bk, left, total, placed);
}

/* free GPUs to the next jobs in order that fit */
static void fill(struct gsim *s, const struct cand *c, size_t n, int *left, int *total,
		 unsigned char *placed)
{
	for (size_t i = 0; i<n && * total> 0; i++)
		if (!placed[i])
			place(s, c, i, left, total, placed);
}

int *xp_gavel_xpool_order(struct gsim *s, int *crowded)
{
	size_t n = s->act.n;
	struct cand *c = xcalloc(n + 1, sizeof(*c));
	struct xp_gittins *g = &s->git;
	int git = g->nfin >= XPOOL_LEARN;
	if (git) {
		xp_gittins_censor_clear(g);
		for (size_t i = 0; i < n; i++) {
			const struct gjob *j = &s->jobs.v[s->act.v[i]];
			xp_gittins_censored(g, j->served * j->sf);
		}
		xp_gittins_build(g);
	}
	int demand = 0, total = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gjob *j = &s->jobs.v[s->act.v[i]];
		double a = j->served * j->sf;
		demand += j->sf;
		/* starving: before every other key, oldest first */
		if (s->now - j->arrival > XPOOL_STARVE * (j->served + s->cfg->round_s))
			c[i] = (struct cand){ -1e30 + j->arrival, s->act.v[i] };
		else
			c[i] = (struct cand){ git ? -xp_gittins_index(g, a) : a, s->act.v[i] };
	}
	qsort(c, n, sizeof(*c), cand_cmp);
	for (int k = 0; k < GT; k++)
		total += s->cfg->gpus[k];
	*crowded = demand > XPOOL_CROWDED * total;
	int *ids = xcalloc(n + 1, sizeof(int));
	for (size_t i = 0; i < n; i++)
		ids[i] = c[i].job;
	free(c);
	return ids;
}

void xp_gavel_xpool_place(struct gsim *s, const int *ids, size_t n, int crowded)
{
	struct cand *c = xcalloc(n + 1, sizeof(*c));
	for (size_t i = 0; i < n; i++)
		c[i] = (struct cand){ (double)i, ids[i] };
	int left[GT], total = 0;
	for (int k = 0; k < GT; k++)
		total += left[k] = s->cfg->gpus[k];
	unsigned char *placed = xcalloc(n + 1, 1);
	/* select by the order while the pool could hold them - two jobs to a
	 * GPU when they may share, since the LP can pair them - then let the
	 * LP place the selected */
	size_t *sel = xcalloc(n + 1, sizeof(*sel)), ns = 0;
	int want = s->cfg->colo ? 2 * total : total;
	for (size_t i = 0; i < n && want > 0; i++) {
		const struct gjob *j = &s->jobs.v[c[i].job];
		if (j->sf <= want) {
			sel[ns++] = i;
			want -= j->sf;
		}
	}
	assign(s, c, sel, ns, crowded, left, &total, placed);
	free(sel);
	fill(s, c, n, left, &total, placed); /* what the LP left free */
	improve(s, left);
	if (s->cfg->colo)
		share(s, c, n, placed);
	free(placed);
	free(c);
}

/* each job's weight in the objective: 1, or when crowded its class's
 * backlog weight (backlog_weights) */
static double job_weight(const struct gsim *s, const struct gjob *j, const int *q, double mean,
			 int crowded)
{
	return crowded ? pow(q[xp_gavel_key(j)] / mean, XPOOL_MAXWEIGHT) : 1;
}

double xp_gavel_xpool_score(const struct gsim *s, int crowded)
{
	int q[XP_GAVEL_CLASSES] = { 0 }, present = 0;
	for (size_t i = 0; i < s->act.n; i++)
		if (!q[xp_gavel_key(&s->jobs.v[s->act.v[i]])]++)
			present++;
	double mean = present ? (double)s->act.n / present : 1, each = crowded ? 0.5 : 1, v = 0;
	for (size_t i = 0; i < s->plan.n; i++) {
		const struct gplace *p = &s->plan.v[i];
		const struct gjob *a = &s->jobs.v[p->a];
		double wa = job_weight(s, a, q, mean, crowded);
		if (p->b < 0) {
			v += a->sf * (1 + wvalue(s, a, p->k, wa));
			continue;
		}
		const struct gjob *b = &s->jobs.v[p->b];
		const float *tp = s->cfg->colo->tput[p->k][a->sfi][a->tmpl][b->tmpl];
		double u = wa * tp[0] / a->best +
			   job_weight(s, b, q, mean, crowded) * tp[1] / b->best;
		if (s->cfg->energy_weight > 0)
			u -= s->cfg->energy_weight * power_share(s, p->k);
		v += a->sf * (2 * each + u);
	}
	return v;
}

void xp_gavel_xpool_plan(struct gsim *s)
{
	if (!s->act.n)
		return;
	int crowded;
	int *ids = xp_gavel_xpool_order(s, &crowded);
	xp_gavel_xpool_place(s, ids, s->act.n, crowded);
	free(ids);
}
