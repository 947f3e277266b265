/*
 * cycle: the scheduling cycle (docs/design/tenancy.md, "Order").
 *
 * A pass walks pending jobs grouped by (leaf queue, tenant). Each pick
 * descends the queue tree from the root: among the children with jobs
 * left, the highest queue priority, then the lowest dominant share (usage
 * over the cluster's capacity, largest over the resources, divided by the
 * weight), then the fewest picks so far in this pass (round-robin), then
 * the oldest queue. At the leaf, the group whose next job has the highest
 * priority, then the earliest deadline (EDF; a job with one before a job
 * without), then the tenant with the lowest dominant share, then the
 * oldest job. Within a group the same order, less the tenant. Shares are read live, so a start in
 * one queue makes the next pick favour the others.
 *
 * A job is admitted when its queue and every ancestor stay within their
 * max, and placed with the core replica by replica, committed tentatively;
 * a gang that does not fit whole releases what it took. A job that does
 * not fit may preempt (preempt.c). Decisions leave the cycle as records
 * (job.preempt, job.start) that emit() applies.
 *
 * With a policy that has a batch optimiser and st->batch.budget > 0, the
 * jobs the order yields are planned K at a time instead (the batch step,
 * below xp_state_cycle's helpers; docs/design/batch-cycle.md).
 *
 * Work is bounded and not repeated without cause:
 *  - a full pass walks every pending job, resumable across calls (budget
 *    jobs per call), and starts only when capacity was freed or quotas
 *    changed since the last one;
 *  - otherwise a pass walks only the jobs submitted since: capacity only
 *    shrank, so a job that did not fit still does not;
 *  - within a pass, a request shape that did not fit is not tried again
 *    (the pass only takes capacity away), nor is a preemption that failed
 *    for the same shape, queue and priority.
 */
#define _GNU_SOURCE /* qsort_r: the order needs a context, without a global */
#include "state_int.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"
#include "../sched/policy.h"

enum { PREEMPT_TRIES = 16 }; /* preemption plans per cycle call */

struct grp {
	uint32_t queue, tenant;
	size_t at, end; /* entries left: v[at..end) */
};

struct shape {
	struct xp_request req;
	uint32_t replicas;
	uint8_t colocate; /* a gang on one node fails where the same spread out fits */
	uint32_t queue;	  /* preemption failures only */
	int32_t priority;
};

struct xp_pass {
	int full; /* over st->pending; else over own (a copy of fresh) */
	XP_VEC(struct xp_job *) own;
	struct grp *g;
	size_t ng;
	size_t nq;
	uint32_t *left;	  /* per queue: entries left in its subtree */
	uint64_t *served; /* per queue: picks in this pass */
	uint32_t *kid_at, *kids;
	size_t *g_at; /* groups of queue q: g[g_at[q] .. g_at[q + 1]) */
	XP_VEC(struct shape) failed, pfailed, sfailed; /* sfailed: no shrink made room */
	struct xp_backfill *bf; /* its reservations */
	unsigned resv_tries;	/* blocked jobs that asked for a reservation */
	int64_t now;
};

static struct xp_job **entries(const struct xp_state *st, struct xp_pass *p)
{
	return p->full ? st->pending.v : p->own.v;
}

/* earliest deadline first; a job with one before a job without */
static int edf(const struct xp_job *x, const struct xp_job *y)
{
	int64_t dx = xp_job_deadline(x), dy = xp_job_deadline(y);
	if (dx == dy)
		return 0;
	if (!dx || !dy)
		return dx ? -1 : 1;
	return dx < dy ? -1 : 1;
}

/* a job's priority for the order: its own, plus 1 per `aging` of its
 * queue it has waited, at most XP_AGE_MAX (preemption reads the job's own) */
static int32_t eff_priority(const struct xp_state *st, const struct xp_job *j, int64_t now)
{
	int64_t aging = st->queues.v[j->queue].aging_ms;
	if (!aging || now <= j->submitted_at)
		return j->spec.priority;
	int64_t bonus = (now - j->submitted_at) / aging;
	return j->spec.priority + (int32_t)(bonus < XP_AGE_MAX ? bonus : XP_AGE_MAX);
}

/* at a leaf: the group whose next job a goes before b's: priority (aged),
 * then the earliest deadline, then the tenant with the lower share (ta,
 * tb), then the older job */
static int better_head(const struct xp_state *st, int64_t now, const struct xp_job *a,
		       const struct xp_job *b, double ta, double tb)
{
	int32_t pa = eff_priority(st, a, now), pb = eff_priority(st, b, now);
	if (pa != pb)
		return pa > pb;
	int e = edf(a, b);
	if (e)
		return e < 0;
	if (ta != tb)
		return ta < tb;
	return a->id < b->id;
}

struct order_ctx {
	const struct xp_state *st;
	int64_t now;
};

static int cmp_group(const void *a, const void *b, void *ctx)
{
	const struct order_ctx *c = ctx;
	int sort_fifo = c->st->fifo;
	const struct xp_job *x = *(const struct xp_job *const *)a;
	const struct xp_job *y = *(const struct xp_job *const *)b;
	if (x->queue != y->queue)
		return x->queue < y->queue ? -1 : 1;
	if (x->tenant != y->tenant)
		return x->tenant < y->tenant ? -1 : 1;
	int32_t px = eff_priority(c->st, x, c->now), py = eff_priority(c->st, y, c->now);
	if (px != py && !sort_fifo)
		return px > py ? -1 : 1;
	int e = sort_fifo ? 0 : edf(x, y);
	if (e)
		return e;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* keep the pending jobs of v[0..*n), once each, grouped and in order
 * (fifo: by id within a group) */
static void order(const struct xp_state *st, int64_t now, struct xp_job **v, size_t *n)
{
	struct order_ctx ctx = { st, now };
	size_t k = 0;
	for (size_t i = 0; i < *n; i++) /* held ones come back when they may run */
		if (v[i]->state == XP_JOB_PENDING && !v[i]->unmet && !v[i]->doomed && !v[i]->held)
			v[k++] = v[i];
	if (k > 1)
		qsort_r(v, k, sizeof(*v), cmp_group, &ctx);
	size_t u = 0; /* a job requeued twice may stand twice */
	for (size_t i = 0; i < k; i++)
		if (!u || v[u - 1] != v[i])
			v[u++] = v[i];
	*n = u;
}

void xp_cycle_abort(struct xp_state *st)
{
	struct xp_pass *p = st->pass;
	if (!p)
		return;
	xp_vec_free(&p->own);
	xp_vec_free(&p->failed);
	xp_vec_free(&p->pfailed);
	xp_vec_free(&p->sfailed);
	free(p->g);
	free(p->left);
	free(p->served);
	free(p->kid_at);
	free(p->kids);
	free(p->g_at);
	xp_backfill_free(st->resv); /* the finished pass's reservations stay to explain */
	st->resv = p->bf;
	free(p);
	st->pass = NULL;
	st->cap_grew = 1; /* what it did not reach gets a new pass */
}

static struct xp_pass *pass_begin(struct xp_state *st, int full, int64_t now)
{
	struct xp_pass *p = XNEW(struct xp_pass);
	struct xp_job **v;
	size_t n, nq = st->queues.n;

	p->full = full;
	if (full) {
		order(st, now, st->pending.v, &st->pending.n);
		v = st->pending.v;
		n = st->pending.n;
	} else {
		for (size_t i = 0; i < st->fresh.n; i++)
			xp_vec_push(&p->own, st->fresh.v[i]);
		order(st, now, p->own.v, &p->own.n);
		v = p->own.v;
		n = p->own.n;
	}
	st->fresh.n = 0;
	p->nq = nq;
	/* a full pass makes its reservations afresh; a pass over new jobs
	 * honours the last ones (a new job must not take reserved room) */
	p->bf = full || !st->resv ? xp_backfill_new(st) : xp_backfill_clone(st->resv, st);
	p->left = xcalloc(nq + 1, sizeof(*p->left));
	p->served = xcalloc(nq + 1, sizeof(*p->served));
	p->g_at = xcalloc(nq + 2, sizeof(*p->g_at));
	p->g = XNEWV(struct grp, n ? n : 1);
	for (size_t i = 0; i < n; i++) {
		const struct xp_job *j = v[i];
		if (!p->ng || p->g[p->ng - 1].queue != j->queue ||
		    p->g[p->ng - 1].tenant != j->tenant)
			p->g[p->ng++] = (struct grp){ j->queue, j->tenant, i, i };
		p->g[p->ng - 1].end = i + 1;
		for (int32_t a = (int32_t)j->queue; a >= 0; a = st->queues.v[a].parent)
			p->left[a]++;
	}
	for (size_t k = 0; k < p->ng; k++) /* count, then prefix sums */
		p->g_at[p->g[k].queue + 2]++;
	for (size_t q = 1; q < nq + 2; q++)
		p->g_at[q] += p->g_at[q - 1];
	memmove(p->g_at, p->g_at + 1, (nq + 1) * sizeof(*p->g_at));
	/* children lists: slot 0 the root's, slot q + 1 queue q's */
	p->kid_at = xcalloc(nq + 2, sizeof(*p->kid_at));
	p->kids = XNEWV(uint32_t, nq ? nq : 1);
	for (size_t q = 0; q < nq; q++)
		if (!st->queues.v[q].deleted)
			p->kid_at[st->queues.v[q].parent + 2]++;
	for (size_t q = 1; q < nq + 2; q++)
		p->kid_at[q] += p->kid_at[q - 1];
	uint32_t *fill = xcalloc(nq + 1, sizeof(*fill));
	for (size_t q = 0; q < nq; q++)
		if (!st->queues.v[q].deleted) {
			size_t slot = (size_t)(st->queues.v[q].parent + 1);
			p->kids[p->kid_at[slot] + fill[slot]++] = (uint32_t)q;
		}
	free(fill);
	st->pass = p;
	return p;
}

static void consume(const struct xp_state *st, struct xp_pass *p, size_t g)
{
	p->g[g].at++;
	for (int32_t a = (int32_t)p->g[g].queue; a >= 0; a = st->queues.v[a].parent)
		p->left[a]--;
}

static int queue_before(const struct xp_state *st, const struct xp_pass *p, uint32_t a, uint32_t b)
{
	const struct xp_queue *x = &st->queues.v[a], *y = &st->queues.v[b];
	if (x->priority != y->priority)
		return x->priority > y->priority;
	double sx = xp_queue_share(st, a), sy = xp_queue_share(st, b);
	if (sx != sy)
		return sx < sy;
	if (p->served[a] != p->served[b])
		return p->served[a] < p->served[b];
	return a < b;
}

/* FIFO: the group whose next job is the oldest, wherever it is */
static long pick_fifo(const struct xp_state *st, struct xp_pass *p)
{
	struct xp_job **v = entries(st, p);
	long best = -1;
	for (size_t g = 0; g < p->ng; g++) {
		struct grp *x = &p->g[g];
		while (x->at < x->end && v[x->at]->state != XP_JOB_PENDING)
			consume(st, p, g);
		if (x->at < x->end && (best < 0 || v[x->at]->id < v[p->g[best].at]->id))
			best = (long)g;
	}
	return best;
}

/* the group to try next, or -1 when the pass is over */
static long pick(const struct xp_state *st, struct xp_pass *p)
{
	struct xp_job **v = entries(st, p);
	int32_t cur = -1;
	if (st->fifo)
		return pick_fifo(st, p);
	for (;;) {
		size_t slot = (size_t)(cur + 1);
		long best = -1;
		for (uint32_t k = p->kid_at[slot]; k < p->kid_at[slot + 1]; k++) {
			uint32_t q = p->kids[k];
			if (p->left[q] && (best < 0 || queue_before(st, p, q, (uint32_t)best)))
				best = q;
		}
		if (best < 0) {
			if (cur < 0)
				return -1;
			cur = -1; /* cannot happen with left[] exact; start over */
			continue;
		}
		if (!st->queues.v[best].children || p->g_at[best] < p->g_at[best + 1]) {
			long bg = -1;
			for (size_t g = p->g_at[best]; g < p->g_at[best + 1]; g++) {
				struct grp *x = &p->g[g];
				while (x->at < x->end && v[x->at]->state != XP_JOB_PENDING)
					consume(st, p, g);
				if (x->at == x->end)
					continue;
				if (bg < 0) {
					bg = (long)g;
					continue;
				}
				const struct xp_job *a = v[x->at], *b = v[p->g[bg].at];
				double ta = xp_tenant_share(st, x->tenant),
				       tb = xp_tenant_share(st, p->g[bg].tenant);
				if (better_head(st, p->now, a, b, ta, tb))
					bg = (long)g;
			}
			if (bg >= 0) {
				for (int32_t a = (int32_t)best; a >= 0; a = st->queues.v[a].parent)
					p->served[a]++;
				return bg;
			}
			cur = -1; /* its entries were stale; descend again */
			continue;
		}
		cur = (int32_t)best;
	}
}

static int shape_in(const struct shape *f, size_t n, const struct xp_job *j, int with_queue)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].replicas == j->spec.replicas && f[i].colocate == j->spec.colocate &&
		    !memcmp(&f[i].req, &j->req, sizeof(j->req)) &&
		    (!with_queue || (f[i].queue == j->queue && f[i].priority == j->spec.priority)))
			return 1;
	return 0;
}

static void shape_add(void *vec_v, const struct xp_job *j)
{
	XP_VEC(struct shape) *vec = vec_v;
	struct shape s;
	memset(&s, 0, sizeof(s));
	s.req = j->req;
	s.replicas = j->spec.replicas;
	s.colocate = (uint8_t)j->spec.colocate;
	s.queue = j->queue;
	s.priority = j->spec.priority;
	xp_vec_push(vec, s);
}

void xp_unplace(struct xp_state *st, struct xp_alloc *a, uint32_t n)
{
	while (n-- > 0)
		xp_sched_release(st->sched, &a[n]);
}

/* j does not fit: elastic jobs shrink for it (elastic_cycle.c), else
 * victims are preempted. 1: room made (the records emitted), 0: none, < 0
 * emit()'s error. Each failure is remembered for the shape; shrink plans
 * (where elastic jobs have spare replicas) and preemption plans share the
 * budget of PREEMPT_TRIES per call. */
static int make_room(struct xp_state *st, struct xp_pass *p, struct xp_job *j,
		     struct xp_rng *rng, int *preempt_tries, xp_emit_fn emit, void *ctx)
{
	struct xp_plan plan;
	int rc, tried = 0;
	if (*preempt_tries > 0 && !shape_in(p->sfailed.v, p->sfailed.n, j, 0)) {
		rc = xp_elastic_shrink_for(st, j, rng, emit, ctx, &tried);
		*preempt_tries -= tried; /* a shrink plan costs as a preemption plan */
		if (rc != 0)
			return rc;
		shape_add(&p->sfailed, j);
	}
	if (*preempt_tries <= 0 || shape_in(p->pfailed.v, p->pfailed.n, j, 1) ||
	    st->queues.v[j->queue].preempt == XP_PREEMPT_NEVER)
		return 0;
	--*preempt_tries;
	if (xp_preempt_plan(st, j, rng, &plan) < 0) {
		shape_add(&p->pfailed, j);
		xp_plan_free(&plan);
		return 0;
	}
	for (size_t k = 0; k < plan.n; k++) {
		char why[300];
		xp_plan_reason(st, j, &plan, k, why, sizeof(why));
		struct xp_rec rec = { .type = XP_REC_JOB_PREEMPT,
				      .u.requeue = { .id = plan.victims[k], .reason = why } };
		rc = emit(ctx, &rec);
		if (rc < 0) {
			xp_plan_free(&plan);
			return rc;
		}
	}
	xp_plan_free(&plan);
	p->sfailed.n = 0; /* the victims may free more than j takes: shrinks may do again */
	return 1;
}

/* journal j's start with the allocations a (j's replicas; freed here): 1,
 * or emit()'s error */
static int emit_start(struct xp_state *st, const struct xp_job *j, struct xp_alloc *a,
		      xp_emit_fn emit, void *ctx)
{
	struct xp_rec_alloc *ra = xp_allocs_rec(st, a, j->spec.replicas);
	struct xp_rec rec = { .type = XP_REC_JOB_START,
			      .u.start = { .id = j->id, .n = j->spec.replicas, .a = ra } };
	int rc = emit(ctx, &rec);
	free(ra);
	free(a);
	if (rc < 0)
		return rc;
	st->placed++;
	return 1;
}

/* Try j: 1 started, 0 not, < 0 emit()'s error. */
static int try_job(struct xp_state *st, struct xp_pass *p, struct xp_job *j, struct xp_rng *rng,
		   int *preempt_tries, xp_emit_fn emit, void *ctx)
{
	uint64_t d[XP_RES_N];
	uint32_t got = 0;
	int rc;

	xp_request_demand(st, j, d);
	if (xp_queue_admits(st, j->queue, d, NULL, NULL) < 0)
		goto unplaced;
	int failed = shape_in(p->failed.v, p->failed.n, j, 0);
	if (failed && shape_in(p->sfailed.v, p->sfailed.n, j, 0) &&
	    (*preempt_tries <= 0 || st->queues.v[j->queue].preempt == XP_PREEMPT_NEVER ||
	     shape_in(p->pfailed.v, p->pfailed.n, j, 1)))
		goto blocked; /* the common case of a long queue: nothing to try */
	struct xp_alloc *a = XNEWV(struct xp_alloc, j->spec.replicas);
	int fits = !failed && xp_place_gang(st, j, rng, a, &got) == 0;
	xp_unplace(st, a, got); /* apply() commits them for real */
	if (fits) {
		uint64_t blocks;
		xp_demand_of(st, a, j->spec.replicas, d);
		if (xp_queue_admits(st, j->queue, d, NULL, NULL) < 0) {
			free(a);
			goto unplaced;
		}
		if (!xp_backfill_allows(st, p->bf, j, a, p->now, &blocks)) {
			/* it would delay a reserved job there: elsewhere? */
			xp_backfill_exclude(st, p->bf, 1);
			fits = xp_place_gang(st, j, rng, a, &got) == 0;
			xp_unplace(st, a, got);
			xp_backfill_exclude(st, p->bf, 0);
			if (fits) { /* another node, maybe another device class */
				xp_demand_of(st, a, j->spec.replicas, d);
				fits = xp_queue_admits(st, j->queue, d, NULL, NULL) == 0;
			}
			if (!fits) {
				st->held_back++;
				j->verdict = XP_PEND_PRIORITY;
				free(a);
				goto unplaced;
			}
			st->backfilled++;
		} else if (p->bf && xp_backfill_active(p->bf)) {
			st->backfilled++;
		}
	} else {
		if (!shape_in(p->failed.v, p->failed.n, j, 0))
			shape_add(&p->failed, j);
		rc = make_room(st, p, j, rng, preempt_tries, emit, ctx);
		if (rc <= 0) {
			free(a);
			if (rc < 0)
				return rc;
			goto blocked;
		}
		/* the same placement the plan found: same state, same draws */
		struct xp_rng r2 = *rng;
		if (xp_place_gang(st, j, &r2, a, &got) < 0) {
			xp_unplace(st, a, got);
			free(a);
			goto unplaced;
		}
		xp_unplace(st, a, got);
		*rng = r2;
		xp_demand_of(st, a, j->spec.replicas, d);
		if (xp_queue_admits(st, j->queue, d, NULL, NULL) < 0) { /* the plan checked */
			free(a);
			goto unplaced;
		}
	}
	return emit_start(st, j, a, emit, ctx);
blocked: /* the first blocked jobs of the pass hold reservations */
	j->verdict = XP_PEND_RESOURCES;
	if (p->resv_tries < 2 * XP_RESV_MAX) {
		p->resv_tries++;
		xp_backfill_reserve(st, p->bf, j, rng);
	}
unplaced:
	st->unplaced++;
	return 0;
}

/*
 * The batch step (docs/design/batch-cycle.md). With a policy that has a
 * batch optimiser and st->batch.budget > 0, the jobs the order yields are
 * gathered, up to K, instead of tried one by one: those that are one
 * request (a single replica, or a gang placed on one node, island or NUMA
 * domain, summed as gang.c does) and that their queue admits on their own.
 * Any other job (a spread or zone gang, MIG, elastic, a shape that already
 * failed in this pass) first ends the batch, then is tried as before, so
 * it is decided after the jobs ahead of it. The plan (xp_sched_plan_batch)
 * is committed in the order's order through the same job.start records;
 * a planned job its queue or a reservation refuses now, and every job the
 * plan left out, is then tried as before (try_job: placement, backfill,
 * preemption). One that fitted before the batch, did not fit after it and
 * lost its place to others of the batch gets the verdict Search.
 */
struct bitem {
	struct xp_job *j;
	struct xp_request r; /* searched: j->req, or a gang's sum */
};

struct bqueue {
	size_t n, k;
	struct bitem v[XP_BATCH_MAX];
};

static int batch_on(const struct xp_state *st)
{
	return st->batch.budget && xp_sched_policy(st->sched)->optimise;
}

static int batchable(const struct xp_state *st, const struct xp_pass *p, const struct xp_job *j)
{
	uint64_t d[XP_RES_N];
	if (j->req.mig || j->req.mig_any || j->spec.rmax)
		return 0;
	if (j->spec.replicas != 1 && !xp_gang_summable(j))
		return 0;
	if (shape_in(p->failed.v, p->failed.n, j, 0))
		return 0; /* try_job's short way: nothing to search */
	xp_request_demand(st, j, d);
	return xp_queue_admits(st, j->queue, d, NULL, NULL) == 0;
}

static void batch_add(struct bqueue *B, struct xp_job *j)
{
	struct bitem *it = &B->v[B->n++];
	it->j = j;
	if (j->spec.replicas > 1)
		xp_gang_sum(j, &it->r);
	else
		it->r = j->req;
}

/* start j where the plan put it (m: its request's allocation): 1 started,
 * 0 its queue or a reservation refuses it now, < 0 emit()'s error */
static int batch_start(struct xp_state *st, struct xp_pass *p, struct xp_job *j,
		       const struct xp_alloc *m, xp_emit_fn emit, void *ctx)
{
	uint32_t n = j->spec.replicas;
	uint64_t d[XP_RES_N], blocks;
	struct xp_alloc *a = XNEWV(struct xp_alloc, n);
	if (n > 1)
		xp_gang_split(j, m, a);
	else
		a[0] = *m;
	xp_demand_of(st, a, n, d);
	if (xp_queue_admits(st, j->queue, d, NULL, NULL) < 0 ||
	    !xp_backfill_allows(st, p->bf, j, a, p->now, &blocks)) {
		free(a);
		return 0;
	}
	if (p->bf && xp_backfill_active(p->bf))
		st->backfilled++;
	return emit_start(st, j, a, emit, ctx);
}

/* plan the batch, start the plan, try what it left out; the number
 * started or emit()'s error */
static long batch_flush(struct xp_state *st, struct xp_pass *p, struct bqueue *B,
			struct xp_rng *rng, int *preempt_tries, xp_emit_fn emit, void *ctx)
{
	struct xp_request r[XP_BATCH_MAX];
	struct xp_alloc out[XP_BATCH_MAX], a;
	uint8_t in[XP_BATCH_MAX], fit[XP_BATCH_MAX];
	size_t n = B->n;
	long placed = 0;
	uint32_t started = 0;
	uint64_t first = 0;

	if (!n)
		return 0;
	B->n = 0;
	for (size_t i = 0; i < n; i++)
		r[i] = B->v[i].r;
	struct xp_batch_opts o = { .budget = st->batch.budget, .k = (uint32_t)n };
	int rc = xp_sched_plan_batch(st->sched, r, n, &o, rng, out, in);
	if (rc < 0)
		return rc;
	st->batch.batches++;
	st->batch.rollouts += o.rollouts;
	st->batch.searched += n;
	st->batch.placements += o.placements;
	for (size_t i = 0; i < n; i++) { /* left out: did it fit on its own? */
		struct xp_rng r2 = *rng;
		fit[i] = !in[i] && xp_sched_pick(st->sched, &r[i], &r2, &a) == 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (!in[i])
			continue;
		rc = batch_start(st, p, B->v[i].j, &out[i], emit, ctx);
		if (rc < 0)
			return rc;
		in[i] = (uint8_t)rc;
		if (rc && !started++)
			first = B->v[i].j->id;
	}
	placed = started;
	for (size_t i = 0; i < n; i++) {
		struct xp_job *j = B->v[i].j;
		if (in[i])
			continue;
		rc = try_job(st, p, j, rng, preempt_tries, emit, ctx);
		if (rc < 0)
			return rc;
		placed += rc;
		if (!rc && fit[i] && started && j->verdict == XP_PEND_RESOURCES) {
			j->verdict = XP_PEND_SEARCH;
			j->search_ahead = started;
			j->search_first = first;
		}
	}
	return placed;
}

long xp_state_cycle(struct xp_state *st, int64_t now, size_t budget, struct xp_rng *rng,
		    xp_emit_fn emit, void *ctx)
{
	struct xp_err err;
	long placed = 0, rc;
	size_t tried = 0;
	int preempt_tries = PREEMPT_TRIES;
	struct bqueue B;

	if (xp_state_sched(st, &err) < 0)
		return err.code;
	B.n = 0;
	B.k = batch_on(st) ? st->batch.k && st->batch.k < XP_BATCH_MAX ? st->batch.k
								     : XP_BATCH_K_DEFAULT
			   : 0;
	if (st->doomed.n && (placed = xp_deps_cancel_doomed(st, emit, ctx)) < 0)
		return placed;
	placed = 0;
	while (tried < budget) {
		struct xp_pass *p = st->pass;
		if (!p) {
			if (st->cap_grew) {
				st->cap_grew = 0;
				p = pass_begin(st, 1, now);
			} else if (st->fresh.n) {
				p = pass_begin(st, 0, now);
			} else {
				break;
			}
		}
		p->now = now; /* aging and backfill read it */
		long g = pick(st, p);
		if (g < 0) {
			if ((rc = batch_flush(st, p, &B, rng, &preempt_tries, emit, ctx)) < 0)
				return rc;
			placed += rc;
			int grew = st->cap_grew, full = p->full;
			xp_cycle_abort(st); /* the pass is over */
			st->cap_grew = grew;
			if (full) { /* every pending job tried: elastic jobs grow */
				long gr = xp_elastic_grow(st, st->resv, rng, emit, ctx);
				if (gr < 0)
					return gr;
			}
			if (full || !st->cap_grew)
				break; /* one pass per call at most begins after a full one */
			continue;
		}
		struct xp_job *j = entries(st, p)[p->g[g].at];
		consume(st, p, (size_t)g);
		if (j->held)
			continue; /* held since the pass began: released, it is fresh again */
		p->now = now;
		tried++;
		if (B.k && batchable(st, p, j)) {
			batch_add(&B, j);
			rc = B.n < B.k ? 0 : batch_flush(st, p, &B, rng, &preempt_tries, emit, ctx);
		} else {
			rc = batch_flush(st, p, &B, rng, &preempt_tries, emit, ctx);
			if (rc >= 0) {
				long r1 = try_job(st, p, j, rng, &preempt_tries, emit, ctx);
				rc = r1 < 0 ? r1 : rc + r1;
			}
		}
		if (rc < 0)
			return rc;
		placed += rc;
	}
	if (B.n) { /* the budget ran out within a pass: the pass goes on next call */
		if ((rc = batch_flush(st, st->pass, &B, rng, &preempt_tries, emit, ctx)) < 0)
			return rc;
		placed += rc;
	}
	return placed;
}

int xp_state_cycle_more(const struct xp_state *st)
{
	return st->pass != NULL || st->fresh.n != 0 || st->cap_grew || st->doomed.n;
}
