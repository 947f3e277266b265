/*
 * cycle: the scheduling cycle and the explanation of pending jobs.
 *
 * Order: queue priority (high first), job priority (high first), then id
 * (first come, first served). Each job's replicas are placed one by one
 * with the core and committed tentatively; if one does not fit, the ones
 * placed are released and the job waits (a gang runs whole or not at all).
 * A placement leaves the cycle as a job.start record; emit() applies it.
 *
 * Work is bounded and not repeated without cause:
 *  - a full pass walks every pending job, resumable across calls (budget
 *    jobs per call), and starts only when capacity was freed since the last
 *    one (a release, a node coming back or being added);
 *  - otherwise only jobs submitted since are tried: capacity only shrank,
 *    so a job that did not fit still does not;
 *  - within a pass, a request shape that failed is not tried again: the
 *    pass only takes capacity away.
 */
#include "state_int.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

static const struct xp_state *sort_st;

static int cmp_pending(const void *a, const void *b)
{
	const struct xp_job *x = *(const struct xp_job *const *)a;
	const struct xp_job *y = *(const struct xp_job *const *)b;
	int32_t qx = sort_st->queues.v[x->queue].priority,
		qy = sort_st->queues.v[y->queue].priority;
	if (qx != qy)
		return qx > qy ? -1 : 1;
	if (x->spec.priority != y->spec.priority)
		return x->spec.priority > y->spec.priority ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* keep only pending jobs, in order; qsort is not reentrant-safe with a
 * global, but the state has one owner thread */
static void order(struct xp_state *st, void *vec_v, size_t *n)
{
	struct xp_job **v = vec_v;
	size_t k = 0;
	for (size_t i = 0; i < *n; i++)
		if (v[i]->state == XP_JOB_PENDING)
			v[k++] = v[i];
	*n = k;
	if (k < 2)
		return;
	sort_st = st;
	qsort(v, k, sizeof(*v), cmp_pending);
	sort_st = NULL;
}

/* Tentatively place all replicas of j; on success a[] holds them committed. */
static int place_gang(struct xp_state *st, const struct xp_job *j, struct xp_rng *rng,
		      struct xp_alloc *a, uint32_t *placed)
{
	uint32_t r;
	for (r = 0; r < j->spec.replicas; r++) {
		if (xp_sched_pick(st->sched, &j->req, rng, &a[r]) < 0)
			break;
		xp_sched_commit(st->sched, &a[r]);
	}
	*placed = r;
	return r == j->spec.replicas ? 0 : XP_ENOSPC;
}

static void unplace(struct xp_state *st, struct xp_alloc *a, uint32_t n)
{
	while (n-- > 0)
		xp_sched_release(st->sched, &a[n]);
}

struct failed {
	struct xp_request req;
	uint32_t replicas;
};

static int failed_before(const struct failed *f, size_t n, const struct xp_job *j)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].replicas == j->spec.replicas &&
		    !memcmp(&f[i].req, &j->req, sizeof(j->req)))
			return 1;
	return 0;
}

/* Try the jobs v[from..n) until budget is spent; returns placed or < 0. */
static long try_jobs(struct xp_state *st, struct xp_job **v, size_t n, size_t *pos, size_t budget,
		     struct xp_rng *rng, xp_emit_fn emit, void *ctx)
{
	struct failed *f = NULL;
	size_t nf = 0, capf = 0, tried = 0;
	long placed = 0;

	while (*pos < n && tried < budget) {
		struct xp_job *j = v[(*pos)++];
		if (j->state != XP_JOB_PENDING)
			continue;
		tried++;
		if (failed_before(f, nf, j)) {
			st->unplaced++;
			continue;
		}
		struct xp_alloc *a = XNEWV(struct xp_alloc, j->spec.replicas);
		uint32_t got;
		if (place_gang(st, j, rng, a, &got) < 0) {
			unplace(st, a, got);
			free(a);
			st->unplaced++;
			if (nf == capf) {
				capf = capf ? 2 * capf : 16;
				f = xreallocarray(f, capf, sizeof(*f));
			}
			f[nf].req = j->req;
			f[nf++].replicas = j->spec.replicas;
			continue;
		}
		unplace(st, a, got); /* apply() commits them for real */
		char *body = xp_rec_job_start(st, j->id, a, j->spec.replicas);
		free(a);
		int rc = emit(ctx, "job.start", body);
		if (rc < 0) {
			free(f);
			return rc;
		}
		st->placed++;
		placed++;
	}
	free(f);
	return placed;
}

long xp_state_cycle(struct xp_state *st, size_t budget, struct xp_rng *rng, xp_emit_fn emit,
		    void *ctx)
{
	struct xp_err err;
	long placed = 0;

	if (xp_state_sched(st, &err) < 0)
		return err.code;
	if (st->cap_grew && st->pass_pos == 0) { /* start a full pass */
		st->cap_grew = 0;
		st->fresh.n = 0;
		order(st, st->pending.v, &st->pending.n);
		st->pending_sorted = 1;
		st->pass_pos = 0;
		size_t pos = 0;
		placed = try_jobs(st, st->pending.v, st->pending.n, &pos, budget, rng, emit, ctx);
		st->pass_pos = pos < st->pending.n ? pos : 0;
		return placed;
	}
	if (st->pass_pos) { /* continue the full pass */
		size_t pos = st->pass_pos;
		placed = try_jobs(st, st->pending.v, st->pending.n, &pos, budget, rng, emit, ctx);
		st->pass_pos = pos < st->pending.n ? pos : 0;
		return placed;
	}
	if (st->fresh.n) { /* only what arrived since */
		size_t pos = 0, n;
		order(st, st->fresh.v, &st->fresh.n);
		n = st->fresh.n;
		placed = try_jobs(st, st->fresh.v, n, &pos, budget, rng, emit, ctx);
		/* keep the untried ones for the next call */
		memmove(st->fresh.v, st->fresh.v + pos, (n - pos) * sizeof(*st->fresh.v));
		st->fresh.n = n - pos;
	}
	return placed;
}

void xp_state_explain(struct xp_state *st, const struct xp_job *j, struct xp_explain *out,
		      int *fits_now)
{
	struct xp_err err;
	struct xp_alloc *a = XNEWV(struct xp_alloc, j->spec.replicas);
	struct xp_rng rng;
	uint32_t got = 0;

	memset(out, 0, sizeof(*out));
	*fits_now = 0;
	xp_rng_seed(&rng, j->id);
	if (xp_state_sched(st, &err) == 0) {
		*fits_now = place_gang(st, j, &rng, a, &got) == 0;
		if (!*fits_now) /* the first replica that does not fit, after the others */
			xp_sched_explain(st->sched, &j->req, out);
		unplace(st, a, got);
		if (*fits_now)
			xp_sched_explain(st->sched, &j->req, out);
	}
	free(a);
}
