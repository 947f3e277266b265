/*
 * preempt: whom a pending job may preempt, and the fewest it needs
 * (docs/design/tenancy.md, "Preemption").
 *
 * can-preempt: by the policy of the job's queue -
 *   never    : no one;
 *   reclaim  : running jobs of other queues whose branch (the queues from
 *              theirs up to, not including, the common ancestor) uses more
 *              than its guarantee of a resource the job needs, while the
 *              job's own queue and ancestors stay within their guarantees
 *              with it;
 *   priority : reclaim, and jobs of its own queue of lower priority.
 * Never a job of higher priority than the preemptor.
 * preempt: candidates by priority (lowest first), then the youngest; taken
 *   one by one (a whole job, every replica of a gang) until the job fits,
 *   then each is given back, newest choice first, if the job still fits
 *   without it. Reclaim stops taking from a branch once it is back within
 *   its guarantee.
 * post-preempt: the cycle journals job.preempt per victim (requeued with
 *   its reason; the agent stops its tasks with SIGTERM and a grace period).
 *
 * The plan leaves the scheduler as it found it.
 */
#include "state_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

/* Reclaim counts the resources j needs that its queue guarantees (devices
 * of any class: every class it guarantees); the others are shared
 * without guarantees and give no claim. */
static int relevant(const struct xp_queue *leaf, const struct xp_job *j, const uint64_t *d, int r)
{
	if (!leaf->guarantee[r])
		return 0;
	if (d[r])
		return 1;
	return j->req.dev_count && j->req.sel.cls < 0 && r > XP_RES_DEV + XP_CLASS_CPU;
}

/* j's queue and its ancestors within their guarantees, with j's demand,
 * in every resource that counts; else 0 with the queue and resource */
static int within_guarantee(const struct xp_state *st, const struct xp_job *j, const uint64_t *d,
			    uint32_t *where, int *res)
{
	const struct xp_queue *leaf = &st->queues.v[j->queue];
	uint64_t any = (uint64_t)j->req.dev_count * j->req.dev_milli * j->spec.replicas;
	int some = 0;
	for (int r = 0; r < XP_RES_N; r++)
		some |= relevant(leaf, j, d, r);
	if (!some) {
		*where = j->queue;
		*res = -1;
		return 0;
	}
	for (int32_t a = (int32_t)j->queue; a >= 0; a = st->queues.v[a].parent) {
		const struct xp_queue *q = &st->queues.v[a];
		for (int r = 0; r < XP_RES_N; r++)
			if (d[r] && leaf->guarantee[r] && q->usage[r] + d[r] > q->guarantee[r]) {
				*where = (uint32_t)a;
				*res = r;
				return 0;
			}
	}
	if (j->req.dev_count && j->req.sel.cls < 0) { /* some guaranteed accelerator class */
		int ok = 0;
		for (int r = XP_RES_DEV + XP_CLASS_GPU; r < XP_RES_N; r++)
			ok |= leaf->guarantee[r] && leaf->usage[r] + any <= leaf->guarantee[r];
		if (!ok) {
			*where = j->queue;
			*res = XP_RES_DEV + XP_CLASS_GPU;
			return 0;
		}
	}
	return 1;
}

struct cand {
	struct xp_job *job;
	uint8_t kind; /* XP_PREEMPT_RECLAIM or XP_PREEMPT_PRIORITY */
	uint8_t taken, spared;
	uint64_t d[XP_RES_N];
};

static int cmp_cand(const void *a, const void *b)
{
	const struct xp_job *x = ((const struct cand *)a)->job, *y = ((const struct cand *)b)->job;
	if (x->spec.priority != y->spec.priority)
		return x->spec.priority < y->spec.priority ? -1 : 1;
	if (x->started_at != y->started_at)
		return x->started_at > y->started_at ? -1 : 1;
	return x->id > y->id ? -1 : x->id < y->id;
}

/* the branch of queue vq below j's ancestors (mark) over its guarantee
 * (in use) in a resource j needs */
static int borrowing(const struct xp_state *st, const uint64_t *use, const uint8_t *mark,
		     uint32_t vq, const struct xp_job *j, const uint64_t *d)
{
	const struct xp_queue *leaf = &st->queues.v[j->queue];
	for (int32_t a = (int32_t)vq; a >= 0 && !mark[a]; a = st->queues.v[a].parent)
		for (int r = 0; r < XP_RES_N; r++)
			if (relevant(leaf, j, d, r) &&
			    use[(size_t)a * XP_RES_N + r] > st->queues.v[a].guarantee[r])
				return 1;
	return 0;
}

static void release(struct xp_state *st, const struct xp_job *v)
{
	xp_unplace(st, v->allocs, v->spec.replicas);
}

static void recommit(struct xp_state *st, const struct xp_job *v)
{
	for (uint32_t r = 0; r < v->spec.replicas; r++)
		xp_sched_commit(st->sched, &v->allocs[r]);
}

/* does j fit now (tentatively; nothing stays committed) */
static int fits(struct xp_state *st, const struct xp_job *j, const struct xp_rng *rng,
		struct xp_alloc *a)
{
	struct xp_rng r2 = *rng;
	uint32_t got;
	int ok = xp_place_gang(st, j, &r2, a, &got) == 0;
	xp_unplace(st, a, got);
	return ok;
}

static int no_reclaim(const struct xp_state *st, uint32_t where, int res, char *buf, size_t len)
{
	if (res < 0)
		return snprintf(buf, len,
				"it cannot reclaim: queue %s guarantees none of what it needs",
				st->queues.v[where].name);
	return snprintf(buf, len, "it cannot reclaim: queue %s would be over its guarantee of %s",
			st->queues.v[where].name, xp_res_name(res));
}

int xp_preempt_plan(struct xp_state *st, const struct xp_job *j, const struct xp_rng *rng,
		    struct xp_plan *out)
{
	const struct xp_queue *jq = &st->queues.v[j->queue];
	uint64_t d[XP_RES_N];
	uint32_t where = j->queue;
	int res = 0, rc = XP_ENOSPC;

	memset(out, 0, sizeof(*out));
	out->considered = 1;
	if (!xp_queue_allows(st, j->queue, st->tenants.v[j->tenant].name)) {
		/* submitted before the queue's allow list left its tenant out */
		snprintf(out->why, sizeof(out->why),
			 "tenant %s may no longer use queue %s: it preempts nothing there",
			 st->tenants.v[j->tenant].name, jq->name);
		return XP_ENOSPC;
	}
	if (jq->preempt == XP_PREEMPT_NEVER) {
		snprintf(out->why, sizeof(out->why), "queue %s does not preempt (policy never)",
			 jq->name);
		out->considered = 0;
		return XP_ENOSPC;
	}
	xp_request_demand(st, j, d);
	int reclaim = within_guarantee(st, j, d, &where, &res);
	/* a best-effort job anyone may take */
	int any_be = st->be_running && j->spec.qos != XP_QOS_BEST_EFFORT;
	if (!reclaim && jq->preempt != XP_PREEMPT_PRIORITY && !any_be) { /* no one to look at */
		no_reclaim(st, where, res, out->why, sizeof(out->why));
		out->considered = res >= 0; /* over a guarantee it has: worth saying */
		return XP_ENOSPC;
	}
	uint8_t *mark = xcalloc(st->queues.n + 1, 1);
	uint64_t *use = XNEWV(uint64_t, (st->queues.n + 1) * XP_RES_N);
	for (int32_t a = (int32_t)j->queue; a >= 0; a = st->queues.v[a].parent)
		mark[a] = 1;
	for (size_t q = 0; q < st->queues.n; q++)
		memcpy(use + q * XP_RES_N, st->queues.v[q].usage, sizeof(uint64_t) * XP_RES_N);

	XP_VEC(struct cand) c = { 0 };
	/* the running jobs, each once (by its replica 0), from the nodes' lists:
	 * not every job ever kept */
	for (size_t ni = 0; ni < st->nodes.n; ni++)
		for (size_t ri = 0; ri < st->nodes.v[ni].run.n; ri++) {
			struct xp_job *v = st->nodes.v[ni].run.v[ri].job;
			if (st->nodes.v[ni].run.v[ri].replica != 0 || v->state != XP_JOB_RUNNING ||
			    v->spec.priority > j->spec.priority)
				continue;
			struct cand x = { .job = v };
			xp_demand_of(st, v->allocs, v->spec.replicas, x.d);
			/* it holds something j needs (for reclaim: something j's queue
			 * guarantees) */
			int holds = 0, holds_rel = 0;
			for (int r = 0; r < XP_RES_N; r++) {
				int need = d[r] || (r > XP_RES_DEV + XP_CLASS_CPU &&
						    j->req.dev_count && j->req.sel.cls < 0);
				holds |= need && x.d[r];
				holds_rel |= need && x.d[r] && relevant(jq, j, d, r);
			}
			if (!holds)
				continue;
			if (v->spec.qos == XP_QOS_PROTECTED)
				continue;
			if (jq->preempt == XP_PREEMPT_PRIORITY && v->queue == j->queue &&
			    v->spec.priority < j->spec.priority)
				x.kind = XP_PREEMPT_PRIORITY;
			else if (v->spec.qos == XP_QOS_BEST_EFFORT &&
				 j->spec.qos != XP_QOS_BEST_EFFORT)
				x.kind = XP_PREEMPT_BEST_EFFORT;
			else if (reclaim && holds_rel && !mark[v->queue] &&
				 borrowing(st, use, mark, v->queue, j, d))
				x.kind = XP_PREEMPT_RECLAIM;
			else
				continue;
			xp_vec_push(&c, x);
		}
	if (c.n > 1)
		qsort(c.v, c.n, sizeof(*c.v), cmp_cand);

	struct xp_alloc *a = XNEWV(struct xp_alloc, j->spec.replicas);
	size_t taken = 0, k;
	int ok = 0;
	for (k = 0; k < c.n && !ok; k++) {
		struct cand *x = &c.v[k];
		if (x->kind == XP_PREEMPT_RECLAIM && !borrowing(st, use, mark, x->job->queue, j, d))
			continue; /* that branch is back within its guarantee */
		release(st, x->job);
		x->taken = 1;
		taken++;
		if (x->kind == XP_PREEMPT_RECLAIM)
			for (int32_t q = (int32_t)x->job->queue; q >= 0; q = st->queues.v[q].parent)
				for (int r = 0; r < XP_RES_N; r++)
					use[(size_t)q * XP_RES_N + r] -= x->d[r];
		ok = fits(st, j, rng, a);
	}
	if (ok) { /* give back what is not needed, newest choice first */
		for (size_t i = k; i-- > 0;) {
			struct cand *x = &c.v[i];
			if (!x->taken)
				continue;
			recommit(st, x->job);
			if (fits(st, j, rng, a)) {
				x->spared = 1;
				taken--;
			} else {
				release(st, x->job);
			}
		}
		/* the max still holds with the victims gone and j where it would go */
		uint64_t da[XP_RES_N];
		fits(st, j, rng, a);
		xp_demand_of(st, a, j->spec.replicas, da);
		for (int32_t q = (int32_t)j->queue; q >= 0 && ok; q = st->queues.v[q].parent)
			for (int r = 0; r < XP_RES_N && ok; r++) {
				if (!da[r] || st->queues.v[q].max[r] == XP_QUOTA_NONE)
					continue;
				uint64_t u = st->queues.v[q].usage[r];
				for (size_t i = 0; i < k; i++) {
					const struct cand *x = &c.v[i];
					int under = 0;
					for (int32_t p = (int32_t)x->job->queue; p >= 0 && !under;
					     p = st->queues.v[p].parent)
						under = p == q;
					if (x->taken && !x->spared && under)
						u -= x->d[r];
				}
				if (u + da[r] > st->queues.v[q].max[r]) {
					ok = 0;
					snprintf(out->why, sizeof(out->why),
						 "queue %s would exceed its max of %s",
						 st->queues.v[q].name, xp_res_name(r));
				}
			}
	}
	if (ok) {
		out->victims = XNEWV(uint64_t, taken);
		out->kinds = XNEWV(uint8_t, taken);
		for (size_t i = 0; i < k; i++)
			if (c.v[i].taken && !c.v[i].spared) {
				out->kinds[out->n] = c.v[i].kind;
				out->victims[out->n++] = c.v[i].job->id;
			}
		rc = 0;
	} else if (out->why[0]) {
		/* said above */
	} else if (!c.n) {
		int n = 0;
		if (!reclaim)
			n = no_reclaim(st, where, res, out->why, sizeof(out->why));
		else
			n = snprintf(
				out->why, sizeof(out->why),
				"no other queue borrows what it needs, at its priority or lower");
		if (jq->preempt == XP_PREEMPT_PRIORITY && n > 0 && (size_t)n < sizeof(out->why))
			snprintf(out->why + n, sizeof(out->why) - (size_t)n,
				 "; no job of lower priority runs in queue %s", jq->name);
	} else {
		snprintf(out->why, sizeof(out->why),
			 "preempting all %zu jobs it may preempt would still not make room", c.n);
	}
	for (size_t i = 0; i < k; i++) /* leave the scheduler as it was */
		if (c.v[i].taken && !c.v[i].spared)
			recommit(st, c.v[i].job);
	free(a);
	free(mark);
	free(use);
	xp_vec_free(&c);
	return rc;
}

void xp_plan_free(struct xp_plan *p)
{
	free(p->victims);
	free(p->kinds);
	memset(p, 0, sizeof(*p));
}

void xp_plan_reason(const struct xp_state *st, const struct xp_job *j, const struct xp_plan *p,
		    size_t k, char *buf, size_t len)
{
	if (p->kinds[k] == XP_PREEMPT_BEST_EFFORT)
		snprintf(buf, len, "preempted by job %llu: best-effort jobs run on spare capacity",
			 (unsigned long long)j->id);
	else if (p->kinds[k] == XP_PREEMPT_PRIORITY)
		snprintf(buf, len, "preempted by job %llu of priority %d in queue %s",
			 (unsigned long long)j->id, j->spec.priority, st->queues.v[j->queue].name);
	else
		snprintf(buf, len,
			 "preempted by job %llu: queue %s takes back capacity lent within its "
			 "guarantee",
			 (unsigned long long)j->id, st->queues.v[j->queue].name);
}
