/*
 * openb_run: one run of the FGD experiment protocol (PROTOCOL.md 3.1, 6).
 *
 * The PRNG stream is one per run, used in the reference's order: pod
 * shuffle, inflation draws (or random removals), node permutation, then the
 * policy's own draws. The reference uses Go's math/rand; ours is xoshiro256**,
 * so runs match the published ones in distribution, not draw for draw.
 *
 * Bucketing follows experiments/analysis/merge_*_discrete.py: arrive% =
 * round-half-even(arrived milli / (GPUs * 10)); alloc% per event rounded to
 * 2 decimals; the frag ratio per event rounded to 2 decimals as the
 * reference logs it; a bucket with no event takes the events of x-1..x+1.
 */
#define _GNU_SOURCE
#include "openb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/sched/policy.h"
#include "bound.h"
#include "../lib/clock.h"
#include "../lib/rng.h"
#include "../lib/xalloc.h"

struct bucket {
	double alloc, frag, ratio;
	size_t n;
};

static double round2(double x)
{
	return nearbyint(x * 100.0) / 100.0;
}

static int cmp_node_name(const void *a, const void *b, void *ctx)
{
	const struct xp_cluster *c = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return strcmp(c->nodes[x].name, c->nodes[y].name);
}

double xp_openb_empty_frag_ratio(const struct xp_cluster *c, const struct xp_wshape *m, size_t nm)
{
	struct xp_sched_opts o = { .policy = "bestfit", .no_index = 1 };
	struct xp_sched *s = xp_sched_create(c, &o, NULL);
	double r = 0;
	if (!s)
		return -1;
	if (xp_sched_set_workload(s, m, nm, NULL) == 0) {
		uint64_t idle = xp_sched_total_milli(s) - xp_sched_used_milli(s);
		r = idle ? 100.0 * xp_sched_frag(s) / (double)idle : 0;
	}
	xp_sched_destroy(s);
	return r;
}

/* After pod p's decision: the event of PROTOCOL.md's log, into its bucket. */
static void record(struct xp_sched *s, uint64_t arrived, double per_pct, struct bucket *b)
{
	double x = nearbyint((double)arrived / per_pct);
	if (x < 0 || x >= XP_OPENB_BUCKETS)
		return;
	uint64_t used = xp_sched_used_milli(s);
	uint64_t idle = xp_sched_total_milli(s) - used;
	double frag = xp_sched_frag(s);
	struct bucket *bk = &b[(int)x];
	bk->alloc += round2((double)used / per_pct);
	bk->frag += round2(frag);
	bk->ratio += idle ? round2(100.0 * frag / (double)idle) : 0;
	bk->n++;
}

/* Pods order[0..n) in windows: each window planned together (greedy for
 * a policy without an optimiser or with budget 0), then committed and
 * logged pod by pod in arrival order, so the buckets mean what they mean
 * without a window. */
static int replay(struct xp_sched *s, const struct xp_openb_trace *t, const uint32_t *order,
		  size_t n, const struct xp_openb_run_opts *o, struct xp_rng *rng, struct bucket *b,
		  struct xp_openb_result *res, struct xp_err *err)
{
	size_t w = o->window > 1 ? o->window : 1;
	int batched = o->batch.budget && xp_sched_policy(s)->optimise;
	double per_pct = (double)xp_sched_total_milli(s) / 100.0;
	uint64_t arrived = 0;
	struct xp_request *req = XNEWV(struct xp_request, w);
	struct xp_alloc *out = XNEWV(struct xp_alloc, w);
	uint8_t *placed = XNEWV(uint8_t, w);
	struct xp_batch_opts bo = o->batch;
	int rc = 0;

	for (size_t i0 = 0; i0 < n && rc >= 0; i0 += w) {
		size_t m = n - i0 < w ? n - i0 : w;
		for (size_t j = 0; j < m && batched; j++)
			req[j] = t->pods[order[i0 + j]].req;
		if (batched && (rc = xp_sched_plan_batch(s, req, m, &bo, rng, out, placed)) < 0) {
			xp_errf(err, rc, "window at pod %zu: the core failed: %s", i0,
				xp_strerror(rc));
			break;
		}
		for (size_t j = 0; j < m; j++) {
			const struct xp_openb_pod *p = &t->pods[order[i0 + j]];
			arrived += (uint64_t)p->num_gpu * p->gpu_milli;
			if (batched) {
				if (placed[j])
					xp_sched_commit(s, &out[j]);
				rc = placed[j] ? 0 : XP_ENOSPC;
			} else {
				rc = xp_sched_place(s, &p->req, rng, &out[j]);
			}
			if (rc == XP_ENOSPC)
				res->failed++;
			else if (rc < 0) {
				xp_errf(err, rc, "pod %s: the core failed: %s", p->name,
					xp_strerror(rc));
				break;
			}
			rc = 0;
			record(s, arrived, per_pct, b);
		}
	}
	res->pods = n;
	res->rollouts = bo.rollouts;
	free(req);
	free(out);
	free(placed);
	return rc < 0 ? rc : 0;
}

/* The bound at 100 % arrived: over the pods arrived by the last event of
 * bucket 100 (101 when 100 has none, as the bucket fallback reads it);
 * used milli is at most that at each of the bucket's events, so 100 minus
 * the bound's share, rounded as the buckets are, is at most unalloc_100. */
static int bound_100(const struct xp_cluster *c, const struct xp_openb_trace *t,
		     const uint32_t *order, size_t n, uint64_t total_milli, double *out,
		     struct xp_err *err)
{
	double per_pct = (double)total_milli / 100.0, milli;
	uint64_t arrived = 0;
	size_t last = 0, have100 = 0;
	struct xp_request *req = XNEWV(struct xp_request, n ? n : 1);
	int rc;

	for (size_t i = 0; i < n; i++) {
		const struct xp_openb_pod *p = &t->pods[order[i]];
		arrived += (uint64_t)p->num_gpu * p->gpu_milli;
		double x = nearbyint((double)arrived / per_pct);
		req[i] = p->req;
		if (x == 100)
			have100 = 1;
		if (x <= 100 || (!have100 && x <= 101))
			last = i + 1;
	}
	rc = xp_bound_milli(c, req, last, &milli, NULL, err);
	free(req);
	if (rc < 0)
		return rc;
	*out = 100 - round2(milli / per_pct);
	if (*out < 0)
		*out = 0;
	return 0;
}

/* 1. shuffle the name-sorted pods; 2. inflate (or deflate) to tune x
 * capacity, clones at the end. The order of pod indices; *np its length. */
static uint32_t *arrivals(const struct xp_openb_trace *t, double tune, uint64_t total_milli,
			  struct xp_rng *rng, size_t *np)
{
	size_t n = t->n, cap = t->n ? t->n : 1;
	uint32_t *order = XNEWV(uint32_t, cap);

	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	xp_rng_shuffle(rng, order, n, sizeof(*order));
	if (tune > 0) {
		double target = tune * (double)total_milli;
		uint64_t total = 0;
		for (size_t i = 0; i < n; i++)
			total += (uint64_t)t->pods[i].num_gpu * t->pods[i].gpu_milli;
		if ((double)total < target) {
			for (;;) {
				uint32_t idx = (uint32_t)xp_rng_below(rng, t->n);
				const struct xp_openb_pod *p = &t->pods[idx];
				/* the reference's stop rule compares the per-GPU milli */
				if ((double)(total + p->gpu_milli) > target)
					break;
				if (n == cap) {
					cap *= 2;
					order = xreallocarray(order, cap, sizeof(*order));
				}
				order[n++] = idx;
				total += (uint64_t)p->num_gpu * p->gpu_milli;
			}
		} else {
			while ((double)total > target && n > 0) {
				size_t j = (size_t)xp_rng_below(rng, n);
				const struct xp_openb_pod *p = &t->pods[order[j]];
				total -= (uint64_t)p->num_gpu * p->gpu_milli;
				memmove(order + j, order + j + 1, (n - j - 1) * sizeof(*order));
				n--;
			}
		}
	}
	*np = n;
	return order;
}

int xp_openb_run(const struct xp_cluster *c, const struct xp_openb_trace *t,
		 const struct xp_wshape *m, size_t nm, const struct xp_openb_run_opts *o,
		 struct xp_openb_result *res, struct xp_err *err)
{
	struct xp_sched_opts so = { .policy = o->policy,
				    .tiebreak = o->tiebreak,
				    .no_index = o->no_index };
	struct bucket b[XP_OPENB_BUCKETS];
	struct xp_rng rng;
	struct xp_sched *s;
	uint32_t *order = NULL, *perm = NULL, *byname = NULL, *rank = NULL;
	size_t n = 0;
	uint64_t total_milli, cpu0 = xp_thread_cpu_ns();
	int rc = 0;

	memset(res, 0, sizeof(*res));
	res->bound_100 = -1;
	memset(b, 0, sizeof(b));
	s = xp_sched_create(c, &so, err);
	if (!s)
		return err ? err->code : XP_EINVAL;
	if ((rc = xp_sched_set_workload(s, m, nm, err)) < 0)
		goto out;
	total_milli = xp_sched_total_milli(s);
	res->total_gpus = total_milli / XP_MILLI;
	if (total_milli == 0) {
		rc = xp_errf(err, XP_EINVAL, "the cluster has no GPUs");
		goto out;
	}
	xp_rng_seed(&rng, o->seed);

	/* 1-2. shuffle, then inflate or deflate */
	order = arrivals(t, o->tune, total_milli, &rng, &n);

	/* 3. node ranks: the i-th node by name gets rank perm[i] */
	perm = XNEWV(uint32_t, c->nnodes);
	byname = XNEWV(uint32_t, c->nnodes);
	rank = XNEWV(uint32_t, c->nnodes);
	for (size_t i = 0; i < c->nnodes; i++)
		byname[i] = (uint32_t)i;
	qsort_r(byname, c->nnodes, sizeof(*byname), cmp_node_name, (void *)c);
	xp_rng_perm(&rng, perm, c->nnodes);
	for (size_t i = 0; i < c->nnodes; i++)
		rank[byname[i]] = perm[i];
	if ((rc = xp_sched_set_ranks(s, rank, err)) < 0)
		goto out;

	if (o->bound && (rc = bound_100(c, t, order, n, total_milli, &res->bound_100, err)) < 0)
		goto out;
	cpu0 = xp_thread_cpu_ns();

	/* 4. replay arrivals */
	if ((rc = replay(s, t, order, n, o, &rng, b, res, err)) < 0)
		goto out;

	/* 5. bucket means, with the x-1..x+1 fallback */
	for (int x = 0; x < XP_OPENB_BUCKETS; x++) {
		struct bucket sum = b[x];
		if (sum.n == 0) {
			for (int y = x - 1; y <= x + 1; y += 2)
				if (y >= 0 && y < XP_OPENB_BUCKETS) {
					sum.alloc += b[y].alloc;
					sum.frag += b[y].frag;
					sum.ratio += b[y].ratio;
					sum.n += b[y].n;
				}
		}
		if (sum.n == 0)
			continue;
		res->have[x] = 1;
		res->alloc[x] = round2(sum.alloc / (double)sum.n);
		res->frag_amt[x] = round2(100.0 * (sum.frag / (double)sum.n) / (double)total_milli);
		res->frag_ratio[x] = sum.ratio / (double)sum.n;
	}
out:
	res->cpu_ns = xp_thread_cpu_ns() - cpu0;
	free(order);
	free(perm);
	free(byname);
	free(rank);
	xp_sched_destroy(s);
	return rc;
}
