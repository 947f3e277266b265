/*
 * workload: the target workload M of the live controller, estimated from
 * what was submitted (the FGD measure and policy need one; the simulator
 * takes it from its trace). Each replica of each job submitted in the
 * window counts once toward its shape (the request but for host memory
 * and node pinning); the most frequent shapes covering 95 % of the
 * replicas (at most 256) become M, renormalised - the rule PROTOCOL.md
 * gives for OpenB's M. Kept in the state so a rebuilt scheduler gets it
 * back; not journaled (it steers scoring and the fragmentation metric,
 * and the placements it leads to are journaled themselves).
 */
#include "state_int.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/intmap.h"
#include "../../lib/xalloc.h"

#define MAX_SHAPES 256
#define COVER	   0.95

struct cnt {
	struct xp_request req;
	uint64_t n;
};

static int by_count(const void *a, const void *b)
{
	const struct cnt *x = a, *y = b;
	return x->n > y->n ? -1 : x->n < y->n;
}

static uint64_t mix(uint64_t x) /* splitmix64's finaliser */
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* a hash of what makes a shape (as xp_request_same_shape compares) */
static uint64_t shape_hash(const struct xp_request *r)
{
	uint64_t h = mix(r->cpu_milli) ^ mix(r->dev_mem_mib * 31 + r->dev_count);
	h ^= mix(((uint64_t)r->dev_milli << 8) | r->topo);
	if (r->dev_count) {
		h ^= mix(((uint64_t)r->sel.cls << 32) ^ r->sel.vendor ^
				 ((uint64_t)r->sel.nmodels << 48));
		for (uint8_t m = 0; m < r->sel.nmodels; m++)
			h = mix(h ^ r->sel.models[m]);
	}
	return h | 1; /* intmap keys are not 0 */
}

int xp_state_estimate_workload(struct xp_state *st, int64_t since, struct xp_err *err)
{
	XP_VEC(struct cnt) c = { 0 };
	struct xp_intmap at; /* shape hash -> index + 1 of its first entry */
	uint64_t total = 0;
	xp_intmap_init(&at);
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->submitted_at < since)
			continue;
		struct xp_request r = j->req;
		r.mem_mib = 0;
		r.node = -1;
		uint64_t h = shape_hash(&r);
		size_t k = (size_t)(uintptr_t)xp_intmap_get(&at, h);
		k = k ? k - 1 : c.n;
		while (k < c.n && !xp_request_same_shape(&c.v[k].req, &r))
			k++; /* a collision: look on (rare) */
		if (k == c.n) {
			if (c.n == 4 * MAX_SHAPES) /* a long tail: counted as uncovered */
				continue;
			struct cnt x = { r, 0 };
			xp_vec_push(&c, x);
			if (!xp_intmap_get(&at, h))
				xp_intmap_put(&at, h, (void *)(uintptr_t)c.n);
		}
		c.v[k].n += j->spec.replicas;
		total += j->spec.replicas;
	}
	xp_intmap_free(&at);
	if (c.n) /* qsort(NULL, 0) is undefined */
		qsort(c.v, c.n, sizeof(struct cnt), by_count);
	size_t take = 0;
	uint64_t covered = 0;
	while (take < c.n && take < MAX_SHAPES && (double)covered < COVER * (double)total)
		covered += c.v[take++].n;
	xp_vec_free(&st->workload);
	for (size_t k = 0; k < take; k++) {
		struct xp_wshape w = { c.v[k].req, (double)c.v[k].n / (double)covered };
		xp_vec_push(&st->workload, w);
	}
	xp_vec_free(&c);
	int rc = xp_state_sched(st, err);
	if (rc == 0)
		rc = xp_sched_set_workload(st->sched, st->workload.v, st->workload.n, err);
	return rc < 0 ? rc : (int)take;
}
