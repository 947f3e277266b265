/*
 * gavel_xpool: xpool's heterogeneity-aware policy for Gavel's workload.
 *
 * Every round (no 1920 s wait), three steps:
 *  1. Order: least attained service first (Tiresias' 2D-LAS: GPUs x seconds
 *     of progress, measured on the job's fastest type, so a job is not
 *     penalised for having run on a slow one). No job's duration is read;
 *     with Philly's heavy-tailed durations a job that has run long is
 *     likely to run longer, so young jobs go first.
 *  2. Select and place: take jobs in that order while the pool's GPUs last,
 *     then assign them to types by an LP maximising the sum of
 *     sf x (1 + throughput / the job's best): every selected job placed
 *     where the pool allows, then the most normalised throughput - the
 *     comparative advantage Gavel's LP captures. Its few fractional jobs
 *     are rounded largest first; GPUs left over go to the next jobs in
 *     order; jobs of equal size then swap types while that gains.
 *  3. Share (with the co-location table): a lone job moves into another
 *     placement of its size when the pair's normalised throughputs beat the
 *     two apart by XPOOL_GAIN, best gains first, and its GPUs go to the next
 *     jobs in order; a job still without a GPU joins one of the last-placed
 *     placements when the pair sums to more than XPOOL_PACK.
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
/* a running job moves into a pair when that gains this much normalised
 * throughput */
#define XPOOL_GAIN 0.05

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
 * share of its best, less the energy weight times the power it adds */
static double value(const struct gsim *s, const struct gjob *j, int k)
{
	double v = j->best > 0 ? j->t[k] / j->best : 0;
	return s->cfg->energy_weight > 0 ? v - s->cfg->energy_weight * power_share(s, k) : v;
}

/* placing is worth it while 1 + value > 0 (always without an energy weight) */
static int worth(const struct gsim *s, const struct gjob *j, int k)
{
	return j->t[k] > 0 && 1 + value(s, j, k) > 1e-9;
}

/* after the LP and the greedy fill: move jobs to types with room, and swap
 * jobs of equal size between types, while the sum of values grows (the
 * fill's jobs are placed greedily; multi-GPU 2.4 jobs/h loses 4 % without) */
static void improve(struct gsim *s, int *left)
{
	size_t n = s->plan.n;
	for (int pass = 0; pass < 4; pass++) {
		int changed = 0;
		for (size_t i = 0; i < n; i++) {
			struct gplace *p = &s->plan.v[i];
			const struct gjob *a = &s->jobs.v[p->a];
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
				if (o->k == p->k || b->sf != a->sf || !worth(s, a, o->k) ||
				    !worth(s, b, p->k))
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
	size_t nalone = s->plan.n;
	unsigned char *paired = xcalloc(nalone + 1, 1);
	for (size_t i = 0; i < nc; i++) {
		if (placed[i])
			continue;
		const struct gjob *u = &s->jobs.v[c[i].job];
		double best = XPOOL_PACK;
		size_t at = nalone;
		/* the second half of the placements in plan order - the last
		 * placed: smaller sizes, later in the order. Not the oldest jobs:
		 * the plan is in size order; pairing with any placement measured
		 * the same (under 0.02 % at 5.6 jobs/h, seeds 0-2) */
		for (size_t q = nalone / 2; q < nalone; q++) {
			const struct gplace *p = &s->plan.v[q];
			const struct gjob *a = &s->jobs.v[p->a];
			if (paired[q] || a->sf != u->sf)
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
		if (at < nalone) {
			s->plan.v[at].b = c[i].job;
			paired[at] = 1;
		}
	}
	free(paired);
}

/* a job alone on a slow type may do better sharing a fast one: pair it
 * into another placement when the pair's normalised throughputs beat the
 * two apart by more than XPOOL_GAIN; the best gains first; its own GPUs
 * go free */
struct move {
	double gain;
	int u, a;
};

static int move_cmp(const void *pa, const void *pb)
{
	const struct move *x = pa, *y = pb;
	if (x->gain != y->gain)
		return x->gain < y->gain ? 1 : -1;
	return x->u != y->u ? x->u - y->u : x->a - y->a;
}

static void consolidate(struct gsim *s, int *left, int *total)
{
	const struct xp_gavel_colo *colo = s->cfg->colo;
	double gain = XPOOL_GAIN;
	size_t n = s->plan.n;
	XP_VEC(struct move) mv = { 0 };
	for (size_t i = 0; i < n; i++) {
		const struct gplace *pu = &s->plan.v[i];
		const struct gjob *u = &s->jobs.v[pu->a];
		double ru = value(s, u, pu->k);
		for (size_t q = 0; q < n; q++) {
			const struct gplace *p = &s->plan.v[q];
			const struct gjob *a = &s->jobs.v[p->a];
			if (q == i || a->sf != u->sf)
				continue;
			const float *tp = colo->tput[p->k][a->sfi][a->tmpl][u->tmpl];
			if (tp[0] <= 0 || tp[1] <= 0)
				continue;
			/* a placement's power counts once for the pair */
			double d = tp[0] / a->best + tp[1] / u->best - value(s, a, p->k) - ru;
			if (s->cfg->energy_weight > 0)
				d -= s->cfg->energy_weight * power_share(s, p->k);
			if (d > gain)
				xp_vec_push(&mv, ((struct move){ d, (int)i, (int)q }));
		}
	}
	if (mv.n)
		qsort(mv.v, mv.n, sizeof(*mv.v), move_cmp);
	unsigned char *used = xcalloc(n + 1, 1);
	for (size_t m = 0; m < mv.n; m++) {
		int i = mv.v[m].u, q = mv.v[m].a;
		if (used[i] || used[q])
			continue;
		used[i] = used[q] = 1;
		struct gplace *pu = &s->plan.v[i];
		s->plan.v[q].b = pu->a;
		left[pu->k] += s->jobs.v[pu->a].sf;
		*total += s->jobs.v[pu->a].sf;
		pu->a = -1; /* dropped below */
	}
	free(used);
	xp_vec_free(&mv);
	size_t w = 0;
	for (size_t i = 0; i < n; i++)
		if (s->plan.v[i].a >= 0)
			s->plan.v[w++] = s->plan.v[i];
	s->plan.n = w;
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

static void place(struct gsim *s, const struct cand *c, size_t i, int *left, int *total,
		  unsigned char *placed);

/* the selected jobs onto types: the LP maximising the sum over jobs of
 * sf x (1 + value) - every selected job placed where the pool allows, then
 * the most total normalised throughput - and its few fractional jobs
 * rounded, largest first */
static void assign(struct gsim *s, const struct cand *c, const size_t *sel, size_t ns, int *left,
		   int *total, unsigned char *placed)
{
	size_t cols = ns * GT, rows = ns + GT;
	double *A = xcalloc(rows * cols, sizeof(double)), *b = xcalloc(rows, sizeof(double));
	double *o = xcalloc(cols, sizeof(double)), *y = xcalloc(cols, sizeof(double)), obj;
	for (size_t q = 0; q < ns; q++) {
		const struct gjob *j = &s->jobs.v[c[sel[q]].job];
		for (int k = 0; k < GT; k++) {
			size_t col = q * GT + (size_t)k;
			if (!worth(s, j, k))
				continue;
			o[col] = j->sf * (1 + value(s, j, k));
			A[q * cols + col] = 1;
			A[(ns + (size_t)k) * cols + col] = j->sf;
		}
		b[q] = 1;
	}
	for (int k = 0; k < GT; k++)
		b[ns + (size_t)k] = left[k];
	if (ns && xp_lp_max(rows, cols, A, b, o, y, &obj) != 0)
		memset(y, 0, cols * sizeof(double));
	/* whole ones first, then the fractional ones largest first */
	for (int pass = 0; pass < 2; pass++)
		for (int sf = 8; sf >= 1; sf /= 2)
			for (size_t q = 0; q < ns; q++) {
				const struct gjob *j = &s->jobs.v[c[sel[q]].job];
				if (j->sf != sf || placed[sel[q]])
					continue;
				int bk = -1;
				double bv = pass ? 1e-9 : 1 - 1e-6;
				for (int k = 0; k < GT; k++)
					if (y[q * GT + (size_t)k] >= bv && left[k] >= j->sf) {
						bv = y[q * GT + (size_t)k];
						bk = k;
					}
				if (bk < 0 && pass)
					place(s, c, sel[q], left, total, placed);
				else if (bk >= 0)
					put(s, c, sel[q], bk, left, total, placed);
			}
	free(A);
	free(b);
	free(o);
	free(y);
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

void xp_gavel_xpool_plan(struct gsim *s)
{
	size_t n = s->act.n;
	if (!n)
		return;
	struct cand *c = xcalloc(n, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		const struct gjob *j = &s->jobs.v[s->act.v[i]];
		c[i] = (struct cand){ j->served * j->sf, s->act.v[i] };
	}
	qsort(c, n, sizeof(*c), cand_cmp);
	int left[GT], total = 0;
	for (int k = 0; k < GT; k++)
		total += left[k] = s->cfg->gpus[k];
	unsigned char *placed = xcalloc(n, 1);
	/* select by the order while the pool's GPUs last, then place the
	 * selected largest first so small jobs do not strand a big one */
	size_t *sel = xcalloc(n, sizeof(*sel)), ns = 0;
	int want = total;
	for (size_t i = 0; i < n && want > 0; i++) {
		const struct gjob *j = &s->jobs.v[c[i].job];
		if (j->sf <= want) {
			sel[ns++] = i;
			want -= j->sf;
		}
	}
	assign(s, c, sel, ns, left, &total, placed);
	free(sel);
	fill(s, c, n, left, &total, placed); /* what the selected left free */
	improve(s, left);
	if (s->cfg->colo) {
		consolidate(s, left, &total);
		fill(s, c, n, left, &total, placed); /* what the pairs freed */
		share(s, c, n, placed);
	}
	free(placed);
	free(c);
}
