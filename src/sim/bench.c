/* bench: placement throughput on synthetic OpenB-like clusters (see bench.h). */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/clock.h"
#include "../lib/rng.h"
#include "../lib/xalloc.h"

struct xp_cluster *xp_bench_cluster(const struct xp_cluster *openb, size_t n, uint64_t seed)
{
	struct xp_cluster *c = xp_cluster_create();
	uint32_t *perm = XNEWV(uint32_t, openb->nnodes);
	struct xp_rng rng;

	/* same symbol ids as the source, so requests built against it still match */
	for (size_t id = 1; id <= xp_strtab_count(openb->syms); id++)
		xp_strtab_intern(c->syms, xp_strtab_str(openb->syms, (xp_sym)id));
	xp_rng_seed(&rng, seed);
	xp_rng_perm(&rng, perm, openb->nnodes);
	for (size_t i = 0; i < n; i++) {
		const struct xp_node *src = &openb->nodes[perm[i % openb->nnodes]];
		char name[32];
		snprintf(name, sizeof(name), "node-%07zu", i);
		struct xp_node *dst = xp_cluster_add_node(c, name);
		dst->cpu_milli = src->cpu_milli;
		dst->mem_mib = src->mem_mib;
		for (uint16_t d = 0; d < src->ndevs; d++) {
			struct xp_device *dv = xp_node_add_device(dst);
			dv->cls = src->devs[d].cls;
			dv->model = xp_strtab_intern(
				c->syms, xp_strtab_str(openb->syms, src->devs[d].model));
		}
	}
	free(perm);
	return c;
}

/* The pods seq[0..n) planned window by window, each plan committed. */
static int run_windows(struct xp_sched *s, const struct xp_openb_trace *t, const uint32_t *seq,
		       size_t n, const struct xp_bench_opts *o, struct xp_rng *rng,
		       struct xp_bench_result *res, struct xp_err *err)
{
	struct xp_request *req = XNEWV(struct xp_request, o->window);
	struct xp_alloc *out = XNEWV(struct xp_alloc, o->window);
	uint8_t *placed = XNEWV(uint8_t, o->window);
	struct xp_batch_opts bo = { .budget = o->budget };
	int rc = 0;

	for (size_t i0 = 0; i0 < n; i0 += o->window) {
		size_t m = n - i0 < o->window ? n - i0 : o->window;
		for (size_t j = 0; j < m; j++)
			req[j] = t->pods[seq[i0 + j]].req;
		if ((rc = xp_sched_plan_batch(s, req, m, &bo, rng, out, placed)) < 0) {
			xp_errf(err, rc, "window at pod %zu: %s", i0, xp_strerror(rc));
			break;
		}
		for (size_t j = 0; j < m; j++)
			if (placed[j]) {
				xp_sched_commit(s, &out[j]);
				res->placed++;
			}
		res->decisions += m;
	}
	free(req);
	free(out);
	free(placed);
	return rc < 0 ? rc : 0;
}

int xp_bench_run(const struct xp_cluster *c, const struct xp_openb_trace *t,
		 const struct xp_wshape *m, size_t nm, const struct xp_bench_opts *o,
		 struct xp_bench_result *res, struct xp_err *err)
{
	struct xp_sched_opts so = { .policy = o->policy, .no_index = o->no_index };
	struct xp_rng rng;
	struct xp_sched *s;
	uint64_t t0 = xp_mono_ns(), target;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	s = xp_sched_create(c, &so, err);
	if (!s)
		return err ? err->code : XP_EINVAL;
	if ((rc = xp_sched_set_workload(s, m, nm, err)) < 0)
		goto out;
	target = (uint64_t)((double)xp_sched_total_milli(s) * o->fill / 100.0);
	xp_rng_seed(&rng, o->seed);
	/* pre-draw the pod sequence so the timed loop only decides */
	size_t cap = o->max_decisions ? o->max_decisions : 1024, n = 0;
	uint32_t *seq = XNEWV(uint32_t, cap);
	for (uint64_t a = 0; a < target && (!o->max_decisions || n < o->max_decisions);) {
		uint32_t idx = (uint32_t)xp_rng_below(&rng, t->n);
		if (n == cap) {
			cap *= 2;
			seq = xreallocarray(seq, cap, sizeof(*seq));
		}
		seq[n++] = idx;
		a += (uint64_t)t->pods[idx].num_gpu * t->pods[idx].gpu_milli;
	}
	res->setup_secs = (double)(xp_mono_ns() - t0) / 1e9;
	t0 = xp_mono_ns();
	if (o->window > 1) {
		rc = run_windows(s, t, seq, n, o, &rng, res, err);
		n = 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct xp_openb_pod *p = &t->pods[seq[i]];
		struct xp_alloc a;
		rc = xp_sched_place(s, &p->req, &rng, &a);
		if (rc == 0)
			res->placed++;
		else if (rc != XP_ENOSPC) {
			xp_errf(err, rc, "pod %s: %s", p->name, xp_strerror(rc));
			break;
		}
		rc = 0;
	}
	res->secs = (double)(xp_mono_ns() - t0) / 1e9;
	res->decisions = o->window > 1 ? res->decisions : n;
	res->unalloc_pct =
		100.0 - 100.0 * (double)xp_sched_used_milli(s) /
				(double)(xp_sched_total_milli(s) ? xp_sched_total_milli(s) : 1);
	free(seq);
out:
	xp_sched_destroy(s);
	return rc;
}
