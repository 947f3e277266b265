/*
 * elastic_cycle: elastic jobs in the scheduling cycle (docs/design/
 * tenancy.md, "Elastic jobs").
 *
 * Shrink before preemption. A pending job that does not fit may take the
 * replicas elastic jobs run above their min, whatever its priority or
 * queue: those replicas were grown on capacity no pending job could use,
 * so growing never holds a pending job back. Elastic jobs are taken
 * lowest priority first, then the youngest; within a job the highest
 * ranks first; taken one by one until the job fits, then each is given
 * back, newest choice first, if the job still fits without it. A shrink
 * never goes below min; when shrinking every elastic job to its min is
 * not enough, preemption decides as before (preempt.c), and an elastic job
 * preempted whole restarts later at min.
 *
 * Growth after the pending jobs. Once a full pass has tried every pending
 * job, the capacity left goes to running elastic jobs below their max: by
 * queue priority, then job priority, then the oldest id, each taking
 * replicas one by one while they fit and its queues' max allows, never on
 * a node backfill reserves for a blocked job. A job shrunk since the last
 * growth is passed over once, so a shrink and a grow do not undo each
 * other in one cycle. Replicas of a gang colocated on a node grow on
 * replica 0's node. Both leave the cycle as job.resize records.
 */
#define _GNU_SOURCE /* qsort_r */
#include "state_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

enum { GROW_JOBS = 64 }; /* elastic jobs grown per pass at most */

struct taken {
	struct xp_job *job;
	uint32_t r;
	uint8_t spared;
};

/* the running elastic jobs (each once, by its replica 0) passing keep() */
static void running_elastic(const struct xp_state *st, int (*keep)(const struct xp_job *),
			    void *vec_v)
{
	XP_VEC(struct xp_job *) *vec = vec_v;
	if (!st->elastic_live) /* none: no walk of every node (each pass, each unfit job) */
		return;
	for (size_t ni = 0; ni < st->nodes.n; ni++)
		for (size_t ri = 0; ri < st->nodes.v[ni].run.n; ri++) {
			struct xp_job *e = st->nodes.v[ni].run.v[ri].job;
			if (st->nodes.v[ni].run.v[ri].replica == 0 && e->state == XP_JOB_RUNNING &&
			    xp_job_elastic(e) && keep(e))
				xp_vec_push(vec, e);
		}
}

static int above_min(const struct xp_job *e)
{
	return e->spec.replicas > e->spec.rmin;
}

static int below_max(const struct xp_job *e)
{
	return e->spec.replicas < e->spec.rmax;
}

/* lowest priority first, then the youngest */
static int cmp_victim(const void *a, const void *b)
{
	const struct xp_job *x = *(struct xp_job *const *)a, *y = *(struct xp_job *const *)b;
	if (x->spec.priority != y->spec.priority)
		return x->spec.priority < y->spec.priority ? -1 : 1;
	if (x->started_at != y->started_at)
		return x->started_at > y->started_at ? -1 : 1;
	return x->id > y->id ? -1 : x->id < y->id;
}

static int fits(struct xp_state *st, const struct xp_job *j, const struct xp_rng *rng)
{
	struct xp_rng r2 = *rng;
	struct xp_alloc *a = XNEWV(struct xp_alloc, j->spec.replicas);
	uint32_t got = 0;
	int ok = xp_place_gang(st, j, &r2, a, &got) == 0;
	xp_unplace(st, a, got);
	free(a);
	return ok;
}

/* the replicas of victims to take for j (on success, t->spared marks
 * those given back); the scheduler is left as it was */
static int shrink_plan(struct xp_state *st, const struct xp_job *j, const struct xp_rng *rng,
		       struct xp_job **v, size_t nv, void *taken_v)
{
	XP_VEC(struct taken) *t = taken_v;
	int ok = 0;
	for (size_t k = 0; k < nv && !ok; k++) {
		struct xp_job *e = v[k];
		uint32_t spare = e->spec.replicas - e->spec.rmin;
		for (uint32_t r = e->spec.replicas; r-- > 0 && spare && !ok; spare--) {
			struct taken x = { e, r, 0 };
			xp_sched_release(st->sched, &e->allocs[r]);
			xp_vec_push(t, x);
			ok = fits(st, j, rng);
		}
	}
	for (size_t i = t->n; ok && i-- > 0;) { /* give back, newest choice first */
		struct taken *x = &t->v[i];
		xp_sched_commit(st->sched, &x->job->allocs[x->r]);
		if (fits(st, j, rng))
			x->spared = 1;
		else
			xp_sched_release(st->sched, &x->job->allocs[x->r]);
	}
	for (size_t i = 0; i < t->n; i++) /* as it was */
		if (!t->v[i].spared)
			xp_sched_commit(st->sched, &t->v[i].job->allocs[t->v[i].r]);
	return ok;
}

/* job.resize of e to epoch + 1: the replicas keep[] stay, add[] join */
static int emit_resize(const struct xp_state *st, const struct xp_job *e, const uint32_t *keep,
		       uint32_t nkeep, const struct xp_alloc *add, uint32_t nadd, const char *why,
		       xp_emit_fn emit, void *ctx)
{
	int64_t *k = XNEWV(int64_t, nkeep + 1);
	for (uint32_t i = 0; i < nkeep; i++)
		k[i] = keep[i];
	struct xp_rec_alloc *ra = xp_allocs_rec(st, add, nadd);
	struct xp_rec rec = { .type = XP_REC_JOB_RESIZE,
			      .u.resize = { .id = e->id,
					    .epoch = e->epoch + 1,
					    .size = nkeep + nadd,
					    .nkeep = nkeep,
					    .keep = k,
					    .nadd = nadd,
					    .add = ra,
					    .reason = why } };
	int rc = emit(ctx, &rec);
	free(ra);
	free(k);
	return rc;
}

/* job.resize of e without its taken replicas */
static int emit_shrink(struct xp_state *st, const struct xp_job *j, struct xp_job *e,
		       const struct taken *t, size_t nt, xp_emit_fn emit, void *ctx)
{
	uint32_t *keep = XNEWV(uint32_t, e->spec.replicas), nkeep = 0;
	for (uint32_t r = 0; r < e->spec.replicas; r++) {
		int gone = 0;
		for (size_t i = 0; i < nt && !gone; i++)
			gone = t[i].job == e && t[i].r == r && !t[i].spared;
		if (!gone)
			keep[nkeep++] = r;
	}
	char why[300];
	snprintf(why, sizeof(why),
		 "shrink: job %llu (priority %d, queue %s) needs the capacity; %u -> %u replicas",
		 (unsigned long long)j->id, j->spec.priority, st->queues.v[j->queue].name,
		 e->spec.replicas, nkeep);
	int rc = emit_resize(st, e, keep, nkeep, NULL, 0, why, emit, ctx);
	free(keep);
	return rc;
}

size_t xp_elastic_would_shrink(struct xp_state *st, const struct xp_job *j,
			       const struct xp_rng *rng, uint64_t **ids)
{
	XP_VEC(struct xp_job *) v = { 0 };
	XP_VEC(struct taken) t = { 0 };
	size_t n = 0;
	*ids = NULL;
	running_elastic(st, above_min, &v);
	if (v.n > 1)
		qsort(v.v, v.n, sizeof(*v.v), cmp_victim);
	if (v.n && shrink_plan(st, j, rng, v.v, v.n, &t) > 0) {
		*ids = XNEWV(uint64_t, v.n);
		for (size_t k = 0; k < v.n; k++) {
			int hit = 0;
			for (size_t i = 0; i < t.n && !hit; i++)
				hit = t.v[i].job == v.v[k] && !t.v[i].spared;
			if (hit)
				(*ids)[n++] = v.v[k]->id;
		}
	}
	xp_vec_free(&v);
	xp_vec_free(&t);
	return n;
}

int xp_elastic_shrink_for(struct xp_state *st, const struct xp_job *j, const struct xp_rng *rng,
			  xp_emit_fn emit, void *ctx, int *tried)
{
	XP_VEC(struct xp_job *) v = { 0 };
	XP_VEC(struct taken) t = { 0 };
	running_elastic(st, above_min, &v);
	*tried = v.n > 0;
	if (!v.n)
		return 0;
	if (v.n > 1)
		qsort(v.v, v.n, sizeof(*v.v), cmp_victim);
	int rc = shrink_plan(st, j, rng, v.v, v.n, &t);
	for (size_t k = 0; rc > 0 && k < v.n; k++) {
		int hit = 0;
		for (size_t i = 0; i < t.n && !hit; i++)
			hit = t.v[i].job == v.v[k] && !t.v[i].spared;
		if (hit) {
			int e = emit_shrink(st, j, v.v[k], t.v, t.n, emit, ctx);
			rc = e < 0 ? e : rc;
		}
	}
	xp_vec_free(&v);
	xp_vec_free(&t);
	return rc;
}

/* queue priority, then job priority (highest first), then the oldest id */
static int cmp_grow(const void *a, const void *b, void *ctx)
{
	const struct xp_state *st = ctx;
	const struct xp_job *x = *(struct xp_job *const *)a, *y = *(struct xp_job *const *)b;
	int32_t qx = st->queues.v[x->queue].priority, qy = st->queues.v[y->queue].priority;
	if (qx != qy)
		return qx > qy ? -1 : 1;
	if (x->spec.priority != y->spec.priority)
		return x->spec.priority > y->spec.priority ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* replicas e could add now, at most its max and its queues' (a[] filled,
 * nothing left committed) */
static uint32_t grow_plan(struct xp_state *st, const struct xp_job *e, struct xp_rng *rng,
			  struct xp_alloc *a)
{
	struct xp_request r = e->req;
	uint32_t want = e->spec.rmax - e->spec.replicas, n = 0;
	if (e->spec.colocate != XP_COLOC_NONE)
		r.node = (int32_t)e->allocs[0].node;
	while (n < want && xp_sched_pick(st->sched, &r, rng, &a[n]) == 0)
		xp_sched_commit(st->sched, &a[n++]);
	xp_unplace(st, a, n);
	for (; n > 0; n--) { /* the queues' max counts the size */
		uint64_t d[XP_RES_N];
		xp_demand_of(st, a, n, d);
		if (xp_queue_admits(st, e->queue, d, NULL, NULL) == 0)
			break;
	}
	return n;
}

static int emit_grow(struct xp_state *st, struct xp_job *e, const struct xp_alloc *a, uint32_t n,
		     xp_emit_fn emit, void *ctx)
{
	uint32_t *keep = XNEWV(uint32_t, e->spec.replicas);
	for (uint32_t r = 0; r < e->spec.replicas; r++)
		keep[r] = r;
	char why[200];
	snprintf(why, sizeof(why),
		 "grow: capacity free once the pending jobs were tried; %u -> %u replicas",
		 e->spec.replicas, e->spec.replicas + n);
	int rc = emit_resize(st, e, keep, e->spec.replicas, a, n, why, emit, ctx);
	free(keep);
	return rc;
}

long xp_elastic_grow(struct xp_state *st, const struct xp_backfill *bf, struct xp_rng *rng,
		     xp_emit_fn emit, void *ctx)
{
	XP_VEC(struct xp_job *) v = { 0 };
	long grown = 0;
	running_elastic(st, below_max, &v);
	if (v.n > 1)
		qsort_r(v.v, v.n, sizeof(*v.v), cmp_grow, st);
	for (size_t k = 0; k < v.n && k < GROW_JOBS && grown >= 0; k++) {
		struct xp_job *e = v.v[k];
		if (e->shrunk) { /* once passed over */
			e->shrunk = 0;
			continue;
		}
		struct xp_alloc *a = XNEWV(struct xp_alloc, e->spec.rmax - e->spec.replicas);
		if (bf)
			xp_backfill_exclude(st, bf, 1);
		uint32_t n = grow_plan(st, e, rng, a);
		if (bf)
			xp_backfill_exclude(st, bf, 0);
		if (n) {
			int rc = emit_grow(st, e, a, n, emit, ctx);
			grown = rc < 0 ? rc : grown + 1;
		}
		free(a);
	}
	xp_vec_free(&v);
	return grown;
}
