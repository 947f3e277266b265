/*
 * gavel_alloc: Gavel's allocation policies, the X each active job gets on
 * each GPU type (PROTOCOL.md §2.1).
 *
 * - `fifo` keeps each job's type between computations and hands a finished
 *   job's slot to the head of the queue. Its placement has a quirk the
 *   published FIFO column depends on: the type it gives a queued job is the
 *   alphabetically last type with any free GPU (v100 first), not the random
 *   one it draws; the draw only picks which type leaves the candidate list
 *   when the given type fills up, so later jobs can be given a full v100.
 * - `fifo_perf` rebuilds the placement every time, each job on its fastest
 *   type among those with room.
 * - `max_min_fairness` (agnostic) takes every throughput as 1; ECOS lands on
 *   the symmetric point X = min(1, N/m)/3 per type, used here directly.
 * - `max_min_fairness_perf` solves the LP: maximise t with
 *   sum_k T[j][k] sf_j X[j][k] / P_j >= t, sum_j sf_j X[j][k] <= n_k,
 *   sum_k X[j][k] <= 1, where P_j = sum_k T[j][k] n_k / N - over classes of
 *   interchangeable jobs (below). A simplex lands on a vertex of the class
 *   LP's optimal face where ECOS lands inside it, so the X of classes with
 *   slack can differ (the round mechanism then orders jobs by it).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/lp.h"
#include "../lib/xalloc.h"
#include "gavel_sim_int.h"

/* Gavel's dict of types is iterated alphabetically: k80, p100, v100 */
static const int alpha[GT] = { 2, 1, 0 };

static int id_cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static void fifo(struct gsim *s, int perf)
{
	int avail[GT];
	for (int k = 0; k < GT; k++)
		avail[k] = s->cfg->gpus[k];
	if (perf) {
		for (size_t i = 0; i < s->fifo_alloc.n; i++)
			s->jobs.v[s->fifo_alloc.v[i]].fifo_k = -1;
		s->fifo_alloc.n = 0;
	}
	/* the queue: active jobs without a type, by id */
	XP_VEC(int) q = { 0 };
	size_t qh = 0;
	for (size_t i = 0; i < s->act.n; i++)
		if (s->jobs.v[s->act.v[i]].fifo_k < 0)
			xp_vec_push(&q, s->act.v[i]);
	/* finished jobs hand their slot to the queue's head */
	if (s->fifo_alloc.n)
		qsort(s->fifo_alloc.v, s->fifo_alloc.n, sizeof(int), id_cmp);
	size_t held = s->fifo_alloc.n, w = 0;
	for (size_t i = 0; i < held; i++) {
		struct gjob *j = &s->jobs.v[s->fifo_alloc.v[i]];
		int k = j->fifo_k;
		if (j->active) {
			avail[k] -= j->sf;
			s->fifo_alloc.v[w++] = s->fifo_alloc.v[i];
			continue;
		}
		j->fifo_k = -1;
		if (qh < q.n) {
			struct gjob *h = &s->jobs.v[q.v[qh]];
			if (h->sf <= avail[k] && h->t[k] > 0) {
				h->fifo_k = k;
				avail[k] -= h->sf;
				xp_vec_push(&s->fifo_alloc, q.v[qh]);
				qh++;
			}
		}
	}
	/* drop the finished ones, keep the ones just given a slot */
	if (s->fifo_alloc.n > held)
		memmove(s->fifo_alloc.v + w, s->fifo_alloc.v + held,
			(s->fifo_alloc.n - held) * sizeof(int));
	s->fifo_alloc.n = w + (s->fifo_alloc.n - held);
	int types[GT], nt = 0;
	for (int a = 0; a < GT; a++)
		if (avail[alpha[a]] > 0)
			types[nt++] = alpha[a];
	while (qh < q.n && nt > 0) {
		struct gjob *j = &s->jobs.v[q.v[qh]];
		int jid = q.v[qh++];
		int cand[GT], map[GT], nc = 0;
		for (int i = 0; i < nt; i++)
			if (avail[types[i]] >= j->sf) {
				cand[nc] = types[i];
				map[nc++] = i;
			}
		if (!nc)
			break;
		int k, idx;
		if (!perf) {
			idx = (int)xp_pyrand_below(&s->fifo_rng, (uint32_t)nc);
			k = types[nt - 1]; /* the leaked loop variable */
		} else {
			double best = -1;
			k = idx = -1;
			for (int i = 0; i < nc; i++)
				if (j->t[cand[i]] > best) {
					best = j->t[cand[i]];
					k = cand[i];
					idx = i;
				}
		}
		if (j->t[k] > 0) {
			j->fifo_k = k;
			avail[k] -= j->sf;
			xp_vec_push(&s->fifo_alloc, jid);
			if (avail[k] == 0) {
				int at = map[idx];
				memmove(types + at, types + at + 1,
					(size_t)(nt - at - 1) * sizeof(int));
				nt--;
			}
		}
	}
	xp_vec_free(&q);
	for (size_t i = 0; i < s->act.n; i++) {
		struct gjob *j = &s->jobs.v[s->act.v[i]];
		for (int k = 0; k < GT; k++)
			j->x[k] = j->fifo_k == k ? 1.0 : 0.0;
	}
}

static void las(struct gsim *s)
{
	double n = s->cfg->gpus[0] + s->cfg->gpus[1] + s->cfg->gpus[2];
	double m = 0;
	for (size_t i = 0; i < s->act.n; i++)
		m += 1;
	double t = m > 0 && n / m < 1 ? n / m : 1;
	for (size_t i = 0; i < s->act.n; i++) {
		struct gjob *j = &s->jobs.v[s->act.v[i]];
		for (int k = 0; k < GT; k++)
			j->x[k] = s->cfg->gpus[k] ? t / j->sf / GT : 0;
	}
}

/* Jobs of one class (template and scale factor; every priority weight is
 * 1 here) are interchangeable in the LP, so it is solved over classes:
 * X[c][k] is the class's total, each job of it gets X[c][k] / count[c].
 * An optimum of the class LP split evenly is an optimum of the job LP (and
 * the split ECOS's interior point takes too, by symmetry); the LP has at
 * most 26 x 4 rows instead of one per job, so hundreds of active jobs cost
 * no more than a handful. */
int xp_gavel_classes(const struct gsim *s, const int *ids, size_t n, int *cls_of, int *cnt,
		     int *rep)
{
	int ncls = 0;
	for (int i = 0; i < XP_GAVEL_CLASSES; i++) {
		cls_of[i] = -1;
		cnt[i] = 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct gjob *j = &s->jobs.v[ids[i]];
		int key = xp_gavel_key(j);
		if (cls_of[key] < 0) {
			cls_of[key] = ncls;
			rep[ncls++] = ids[i];
		}
		cnt[cls_of[key]]++;
	}
	return ncls;
}

static void las_perf(struct gsim *s)
{
	int cls_of[XP_GAVEL_CLASSES], cnt[XP_GAVEL_CLASSES], rep[XP_GAVEL_CLASSES];
	int ncls = xp_gavel_classes(s, s->act.v, s->act.n, cls_of, cnt, rep);
	if (!ncls)
		return;
	size_t m = (size_t)ncls, cols = m * GT + 1, rows = 2 * m + GT;
	double *A = xcalloc(rows * cols, sizeof(double)), *b = xcalloc(rows, sizeof(double));
	double *c = xcalloc(cols, sizeof(double)), *x = xcalloc(cols, sizeof(double)), obj;
	double ntot = s->cfg->gpus[0] + s->cfg->gpus[1] + s->cfg->gpus[2];
	size_t tcol = cols - 1;
	c[tcol] = 1;
	for (size_t i = 0; i < m; i++) {
		const struct gjob *j = &s->jobs.v[rep[i]];
		double p = 0, n = cnt[i];
		for (int k = 0; k < GT; k++)
			p += j->t[k] * s->cfg->gpus[k] / ntot;
		double *fair = A + i * cols, *one = A + (m + i) * cols;
		fair[tcol] = 1; /* t - sum_k a_ck X_ck / n_c <= 0 */
		for (int k = 0; k < GT; k++) {
			fair[i * GT + (size_t)k] = p > 0 ? -j->t[k] * j->sf / p / n : 0;
			one[i * GT + (size_t)k] = 1;
			A[(2 * m + (size_t)k) * cols + i * GT + (size_t)k] = j->sf;
		}
		b[m + i] = n; /* sum_k X_ck <= n_c */
	}
	for (int k = 0; k < GT; k++)
		b[2 * m + (size_t)k] = s->cfg->gpus[k];
	if (xp_lp_max(rows, cols, A, b, c, x, &obj) != 0)
		memset(x, 0, cols * sizeof(double));
	for (size_t i = 0; i < s->act.n; i++) {
		struct gjob *j = &s->jobs.v[s->act.v[i]];
		int ci = cls_of[xp_gavel_key(j)];
		for (int k = 0; k < GT; k++) {
			double v = x[(size_t)ci * GT + (size_t)k] / cnt[ci];
			j->x[k] = v < 1e-9 ? 0 : v > 1 ? 1 : v;
		}
	}
	free(A);
	free(b);
	free(c);
	free(x);
}

void xp_gavel_alloc(struct gsim *s)
{
	switch (s->cfg->policy) {
	case XP_GP_FIFO:
		fifo(s, 0);
		break;
	case XP_GP_FIFO_PERF:
		fifo(s, 1);
		break;
	case XP_GP_LAS:
		las(s);
		break;
	case XP_GP_LAS_PERF:
		las_perf(s);
		break;
	case XP_GP_LAS_SS:
		xp_gavel_packed_alloc(s);
		break;
	default:
		break;
	}
}
