/*
 * gavel_packed: Gavel's heterogeneity-aware LAS with space sharing
 * (`max_min_fairness_packed`, "Gavel LAS w/ SS"), the allocation and the
 * parts of the round mechanism that pairs of jobs add (upstream
 * `MaxMinFairnessPolicyWithPacking.get_allocation`, `PolicyWithPacking`,
 * `Scheduler._populate_job_combination_metadata` and
 * `_schedule_jobs_on_workers_helper`).
 *
 * Combinations. When a job arrives it forms a pair with every active job
 * of its scale factor, whether or not the two can share (a pair whose
 * co-located throughput is 0 on a type is never run there). A job's pairs
 * go when it ends. Pairs are kept in Gavel's dict order: a job, then its
 * pairs with the earlier jobs in id order, so the vector is sorted by
 * (b, a) and a pair is found by bisection.
 *
 * Accounting. A pair has its own time received, deficit, priority and X per
 * type, as a job has, with two upstream quirks kept: a new pair's time
 * starts at 0 where a job's starts at half a round (so its first reset
 * credits it half a round of deficit), and every pair adds half a round to
 * the type's total at a reset, as a job does. A pair that ran is credited
 * the longer of its two jobs' times, the pair alone, and both its jobs end
 * their lease then (gavel_sim.c).
 *
 * The LP: maximise t with, for every job j,
 *   sum over j's combinations c and types k of T_j(c, k) sf X[c][k] / P_j >= t,
 *   sum over j's combinations and types of X[c][k] <= 1,
 * and per type sum_c sf_c X[c][k] <= n_k (a pair counted once), P_j as for
 * `_perf`. As in gavel_alloc.c it is solved over classes of interchangeable
 * jobs (template, scale factor): a column per class and type for the jobs
 * alone, and one per pair of classes of one scale factor (a class with
 * itself when it has two jobs) and type; the total is split evenly over the
 * class's jobs, or over the n_c n_d (or n_c (n_c - 1) / 2) job pairs. The
 * co-location table is symmetric (T_a(a, b) = T_a(b, a) by position), so a
 * job's throughput in a pair does not depend on which of the two has the
 * lower id.
 *
 * Which optimum. Below saturation the optimum is far from unique: every job
 * but the bottleneck ones has slack, and with packing the slack can go to
 * pairs, which then outrank the jobs alone and slow both down. A simplex
 * vertex puts it on a few columns, and gave 19 % more JCT than published
 * at 2 jobs/h (11 % at 0.4, within 2 % from 4.8 up); ECOS, an interior-point
 * solver, ends near the analytic centre of the optimal face, every column
 * positive. So the LP is solved here by a small barrier method that follows
 * the same central path (lib/lpcentral.h) to ECOS's default gap; the
 * symmetric split keeps it exact, the job LP's barrier being the class
 * LP's weighted by how many job-level terms each class-level one stands for.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/lp.h"
#include "../lib/lpcentral.h"
#include "../lib/xalloc.h"
#include "gavel_sim_int.h"

static const float *colo_tput(const struct gsim *s, int k, int a, int b)
{
	const struct gjob *x = &s->jobs.v[a], *y = &s->jobs.v[b];
	return s->cfg->colo->tput[k][x->sfi][x->tmpl][y->tmpl];
}

/* ---- combinations ---- */

void xp_gavel_ss_add(struct gsim *s)
{
	int id = s->act.v[s->act.n - 1];
	const struct gjob *j = &s->jobs.v[id];
	for (size_t i = 0; i + 1 < s->act.n; i++) {
		int o = s->act.v[i];
		if (s->jobs.v[o].sf != j->sf)
			continue;
		struct gpair p = { 0 };
		p.a = o;
		p.b = id;
		xp_vec_push(&s->pairs, p);
	}
}

void xp_gavel_ss_drop(struct gsim *s)
{
	size_t w = 0;
	for (size_t i = 0; i < s->pairs.n; i++) {
		const struct gpair *p = &s->pairs.v[i];
		if (s->jobs.v[p->a].active && s->jobs.v[p->b].active)
			s->pairs.v[w++] = *p;
	}
	s->pairs.n = w;
}

struct gpair *xp_gavel_ss_find(struct gsim *s, int a, int b)
{
	if (a > b) {
		int t = a;
		a = b;
		b = t;
	}
	size_t lo = 0, hi = s->pairs.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct gpair *p = &s->pairs.v[mid];
		if (p->b < b || (p->b == b && p->a < a))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->pairs.n && s->pairs.v[lo].a == a && s->pairs.v[lo].b == b ? &s->pairs.v[lo]
										 : NULL;
}

/* a pair is in Gavel's allocation when both its jobs were at the last
 * computation: both were active then, and the pair existed */
static int pair_has_x(const struct gsim *s, const struct gpair *p)
{
	return s->jobs.v[p->a].has_x && s->jobs.v[p->b].has_x;
}

void xp_gavel_ss_reset(struct gsim *s, double elapsed)
{
	double half = s->cfg->round_s / 2;
	for (size_t i = 0; i < s->pairs.n; i++) {
		struct gpair *p = &s->pairs.v[i];
		int hx = pair_has_x(s, p);
		for (int k = 0; k < GT; k++) {
			double should = hx ? p->x[k] * elapsed : 0;
			p->def[k] += should - (p->jt[k] - half);
			p->jt[k] = half;
			s->wt[k] += half;
		}
	}
}

void xp_gavel_ss_priorities(struct gsim *s)
{
	for (size_t i = 0; i < s->pairs.n; i++) {
		struct gpair *p = &s->pairs.v[i];
		int hx = pair_has_x(s, p);
		for (int k = 0; k < GT; k++) {
			const float *tp = colo_tput(s, k, p->a, p->b);
			double frac = s->wt[k] == 0 ? 0 : p->jt[k] / s->wt[k];
			if (!hx || p->x[k] == 0 || tp[0] == 0 || tp[1] == 0)
				p->pri[k] = 0;
			else
				p->pri[k] = frac > 0 ? p->x[k] / frac : p->x[k] * 1e9;
		}
	}
}

/* ---- the greedy pass ---- */

/* `_schedule_jobs_on_workers_helper` over jobs and pairs, types in
 * [v100, p100, k80] order (never shuffled for a packing policy) */
void xp_gavel_ss_plan(struct gsim *s)
{
	size_t n = s->act.n + s->pairs.n;
	struct gentry *e = xcalloc(n + 1, sizeof(*e));
	unsigned char *placed = xcalloc(s->jobs.n + 1, 1); /* by job id */
	int left[GT];
	for (int k = 0; k < GT; k++)
		left[k] = s->cfg->gpus[k];
	for (int k = 0; k < GT; k++) {
		/* dict order: each job, then its pairs with earlier jobs */
		size_t q = 0, pi = 0;
		for (size_t i = 0; i < s->act.n; i++) {
			const struct gjob *j = &s->jobs.v[s->act.v[i]];
			e[q] = (struct gentry){ j->pri[k],   j->def[k], j->has_x ? j->x[k] : 0,
						s->act.v[i], 0,		(int)q };
			q++;
			for (; pi < s->pairs.n && s->pairs.v[pi].b == s->act.v[i]; pi++, q++) {
				const struct gpair *p = &s->pairs.v[pi];
				e[q] = (struct gentry){
					p->pri[k], p->def[k], pair_has_x(s, p) ? p->x[k] : 0,
					(int)pi,   1,	      (int)q
				};
			}
		}
		/* the queue holds a pair per two active jobs of one size: past
		 * capacity over 100,000 entries, of which about a thousand are
		 * looked at before the type is full (7.6 jobs/h, seed 3); so
		 * take them off a heap in sorted order instead of sorting all */
		xp_gavel_entry_heapify(e, q);
		while (q && left[k]) {
			struct gentry en = xp_gavel_entry_pop(e, &q);
			if (!en.pair) {
				const struct gjob *j = &s->jobs.v[en.id];
				if (placed[en.id] || j->t[k] <= 0 || j->sf > left[k])
					continue;
				left[k] -= j->sf;
				placed[en.id] = 1;
				/* a job without an X yet holds its GPUs idle this round */
				if (j->has_x)
					xp_vec_push(&s->plan, ((struct gplace){ en.id, -1, k }));
				continue;
			}
			const struct gpair *p = &s->pairs.v[en.id];
			const float *tp = colo_tput(s, k, p->a, p->b);
			int sf = s->jobs.v[p->a].sf;
			if (placed[p->a] || placed[p->b] || tp[0] <= 0 || tp[1] <= 0 ||
			    sf > left[k])
				continue;
			left[k] -= sf;
			placed[p->a] = placed[p->b] = 1;
			if (pair_has_x(s, p))
				xp_vec_push(&s->plan, ((struct gplace){ p->a, p->b, k }));
		}
	}
	free(placed);
	free(e);
}

/* ---- the allocation ---- */

void xp_gavel_packed_alloc(struct gsim *s)
{
	int cls_of[XP_GAVEL_CLASSES], cnt[XP_GAVEL_CLASSES], rep[XP_GAVEL_CLASSES];
	int ncls = xp_gavel_classes(s, s->act.v, s->act.n, cls_of, cnt, rep);
	if (!ncls)
		return;
	size_t m = (size_t)ncls;
	/* pair columns: classes c <= d of one scale factor, type k (those
	 * that cannot share too: ECOS gives them X > 0, which takes room) */
	int *pcol = xcalloc(m * m * GT, sizeof(int)); /* column of (c, d, k), 0 = none */
	XP_VEC(int) pc = { 0 };			      /* c, d, k of each pair column */
	size_t cols = m * GT;
	for (size_t c = 0; c < m; c++)
		for (size_t d = c; d < m; d++) {
			const struct gjob *x = &s->jobs.v[rep[c]], *y = &s->jobs.v[rep[d]];
			if (x->sf != y->sf || (c == d && cnt[c] < 2))
				continue;
			for (int k = 0; k < GT; k++) {
				if (!s->cfg->gpus[k])
					continue;
				pcol[(c * m + d) * GT + (size_t)k] = (int)cols++;
				xp_vec_push(&pc, (int)c);
				xp_vec_push(&pc, (int)d);
				xp_vec_push(&pc, k);
			}
		}
	size_t tcol = cols++, rows = 2 * m + GT;
	double *A = xcalloc(rows * cols, sizeof(double)), *b = xcalloc(rows, sizeof(double));
	double *c = xcalloc(cols, sizeof(double)), *x = xcalloc(cols, sizeof(double)), obj;
	double *w = xcalloc(m, sizeof(double)); /* sf / (P_c n_c) */
	double ntot = s->cfg->gpus[0] + s->cfg->gpus[1] + s->cfg->gpus[2];
	c[tcol] = 1;
	for (size_t i = 0; i < m; i++) {
		const struct gjob *j = &s->jobs.v[rep[i]];
		double p = 0;
		for (int k = 0; k < GT; k++)
			p += j->t[k] * s->cfg->gpus[k] / ntot;
		w[i] = p > 0 ? j->sf / p / cnt[i] : 0;
		double *fair = A + i * cols, *one = A + (m + i) * cols;
		fair[tcol] = 1; /* t - (what the class's jobs get) / n_c <= 0 */
		for (int k = 0; k < GT; k++) {
			fair[i * GT + (size_t)k] = -j->t[k] * w[i];
			one[i * GT + (size_t)k] = 1;
			A[(2 * m + (size_t)k) * cols + i * GT + (size_t)k] = j->sf;
		}
		b[m + i] = cnt[i]; /* sum of the class's shares <= n_c */
	}
	for (int k = 0; k < GT; k++)
		b[2 * m + (size_t)k] = s->cfg->gpus[k];
	for (size_t q = 0, col = m * GT; q < pc.n; q += 3, col++) {
		size_t ci = (size_t)pc.v[q], di = (size_t)pc.v[q + 1];
		int k = pc.v[q + 2];
		const float *tp = colo_tput(s, k, rep[ci], rep[di]);
		A[ci * cols + col] -= tp[0] * w[ci];
		A[di * cols + col] -= tp[1] * w[di]; /* c = d: each job is in 2 Y / n_c */
		A[(m + ci) * cols + col] += 1;
		A[(m + di) * cols + col] += 1;
		A[(2 * m + (size_t)k) * cols + col] = s->jobs.v[rep[ci]].sf;
	}
	/* the weights: how many job-level variables and constraints each
	 * class-level one stands for */
	double *wr = xcalloc(rows, sizeof(double)), *wc = xcalloc(cols, sizeof(double));
	for (size_t i = 0; i < m; i++) {
		wr[i] = wr[m + i] = cnt[i];
		for (int k = 0; k < GT; k++)
			wc[i * GT + (size_t)k] = cnt[i];
	}
	for (int k = 0; k < GT; k++)
		wr[2 * m + (size_t)k] = 1;
	for (size_t q = 0, col = m * GT; q < pc.n; q += 3, col++) {
		size_t ci = (size_t)pc.v[q], di = (size_t)pc.v[q + 1];
		wc[col] = ci == di ? cnt[ci] * (cnt[ci] - 1) / 2.0 : (double)cnt[ci] * cnt[di];
	}
	wc[tcol] = 1;
	/* ECOS's values are kept as they are, however small (a pair's X > 0
	 * gives it a priority > 0); the simplex's vertex is the fallback */
	double eps = 0;
	if (xp_lp_central(rows, cols, tcol, A, b, wr, wc, x) != 0) {
		eps = 1e-9;
		if (xp_lp_max(rows, cols, A, b, c, x, &obj) != 0)
			memset(x, 0, cols * sizeof(double));
	}
	free(wr);
	free(wc);
	for (size_t i = 0; i < s->act.n; i++) {
		struct gjob *j = &s->jobs.v[s->act.v[i]];
		int ci = cls_of[xp_gavel_key(j)];
		for (int k = 0; k < GT; k++) {
			double v = x[(size_t)ci * GT + (size_t)k] / cnt[ci];
			j->x[k] = v < eps ? 0 : v > 1 ? 1 : v;
		}
	}
	for (size_t i = 0; i < s->pairs.n; i++) {
		struct gpair *p = &s->pairs.v[i];
		const struct gjob *ja = &s->jobs.v[p->a], *jb = &s->jobs.v[p->b];
		size_t ca = (size_t)cls_of[xp_gavel_key(ja)];
		size_t cb = (size_t)cls_of[xp_gavel_key(jb)];
		if (ca > cb) {
			size_t t = ca;
			ca = cb;
			cb = t;
		}
		double np = ca == cb ? cnt[ca] * (cnt[ca] - 1) / 2.0 : (double)cnt[ca] * cnt[cb];
		for (int k = 0; k < GT; k++) {
			int col = pcol[(ca * m + cb) * GT + (size_t)k];
			double v = col ? x[col] / np : 0;
			p->x[k] = v < eps ? 0 : v > 1 ? 1 : v;
		}
	}
	xp_vec_free(&pc);
	free(pcol);
	free(A);
	free(b);
	free(c);
	free(x);
	free(w);
}
