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

int xp_state_estimate_workload(struct xp_state *st, int64_t since, struct xp_err *err)
{
	XP_VEC(struct cnt) c = { 0 };
	uint64_t total = 0;
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->submitted_at < since)
			continue;
		struct xp_request r = j->req;
		r.mem_mib = 0;
		r.node = -1;
		size_t k = 0;
		while (k < c.n && !xp_request_same_shape(&c.v[k].req, &r))
			k++;
		if (k == c.n) {
			if (c.n == 4 * MAX_SHAPES) /* a long tail: counted as uncovered */
				continue;
			struct cnt x = { r, 0 };
			xp_vec_push(&c, x);
		}
		c.v[k].n += j->spec.replicas;
		total += j->spec.replicas;
	}
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
