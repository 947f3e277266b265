/*
 * explain: why a pending job waits - per filter with node counts (the
 * core's explanation), its queue's quota, and whom it would preempt or why
 * it cannot. Read-only: the scheduler is left as it was.
 */
#include "state_int.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/strbuf.h"
#include "../../lib/xalloc.h"

/* The core counts every node that takes no new work as down (and removed
 * ones too): say which are draining or cordoned, and drop the removed */
static void split_down(const struct xp_state *st, const struct xp_job *j, struct xp_explain *out)
{
	uint32_t n_state[XP_NODE_STATE_N] = { 0 };
	if (!out->nodes[XP_WHY_DOWN])
		return;
	for (size_t n = 0; n < st->nodes.n; n++) {
		const struct xp_nodeinfo *ni = &st->nodes.v[n];
		int named = j->req.node >= 0 && (size_t)j->req.node == n;
		if (ni->removed || ((j->req.node >= 0 || st->c->nodes[n].dedicated) && !named))
			continue; /* not counted, or counted as "not the requested node" */
		n_state[ni->state]++;
	}
	out->nodes[XP_WHY_DRAINING] = n_state[XP_NODE_DRAINING] + n_state[XP_NODE_DRAINED];
	out->nodes[XP_WHY_CORDONED] = n_state[XP_NODE_CORDONED];
	out->nodes[XP_WHY_DOWN] = n_state[XP_NODE_DOWN];
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
		*fits_now = xp_place_gang(st, j, &rng, a, &got) == 0;
		if (!*fits_now) /* the first replica that does not fit, after the others */
			xp_sched_explain(st->sched, &j->req, out);
		xp_unplace(st, a, got);
		if (*fits_now) {
			xp_sched_explain(st->sched, &j->req, out);
			xp_mig_explain(st->sched, &j->req, &a[0], out); /* where it goes */
		}
		split_down(st, j, out);
	}
	free(a);
}

/* the queue and resource whose max refuses demand d, into out */
static int quota_refuses(const struct xp_state *st, const struct xp_job *j, const uint64_t *d,
			 struct xp_admission *out)
{
	uint32_t where;
	int res;
	if (xp_queue_admits(st, j->queue, d, &where, &res) == 0)
		return 0;
	const struct xp_queue *q = &st->queues.v[where];
	out->quota_blocked = 1;
	out->where = where;
	out->res = res;
	out->used = q->usage[res];
	out->max = q->max[res];
	out->need = d[res];
	return 1;
}

void xp_state_admission(struct xp_state *st, const struct xp_job *j, struct xp_admission *out)
{
	struct xp_err err;
	uint64_t d[XP_RES_N];
	struct xp_rng rng;
	uint32_t got = 0;

	memset(out, 0, sizeof(*out));
	xp_request_demand(st, j, d);
	if (quota_refuses(st, j, d, out) || xp_state_sched(st, &err) < 0)
		return;
	/* where it would go now: the devices' class counts too */
	struct xp_alloc *a = XNEWV(struct xp_alloc, j->spec.replicas);
	xp_rng_seed(&rng, j->id);
	int fits = xp_place_gang(st, j, &rng, a, &got) == 0;
	xp_unplace(st, a, got);
	if (fits)
		xp_demand_of(st, a, j->spec.replicas, d);
	free(a);
	if (fits) {
		quota_refuses(st, j, d, out);
		return;
	}
	out->reserved = xp_backfill_holds(st->resv, j->id, &out->resv_at);
	xp_rng_seed(&rng, j->id);
	if ((out->nshrinks = xp_elastic_would_shrink(st, j, &rng, &out->shrinks)) > 0)
		return; /* the cycle shrinks before it preempts */
	free(out->shrinks);
	out->shrinks = NULL;
	struct xp_plan plan;
	xp_rng_seed(&rng, j->id);
	if (xp_preempt_plan(st, j, &rng, &plan) == 0) {
		out->victims = plan.victims;
		out->nvictims = plan.n;
		plan.victims = NULL;
	} else {
		memcpy(out->why_not, plan.why, sizeof(out->why_not));
		out->preempt_considered = plan.considered;
	}
	xp_plan_free(&plan);
}

void xp_admission_free(struct xp_admission *a)
{
	free(a->victims);
	a->victims = NULL;
	a->nvictims = 0;
	free(a->shrinks);
	a->shrinks = NULL;
	a->nshrinks = 0;
}

void xp_explain_summary(const struct xp_explain *ex, int fits, uint32_t replicas, struct xp_sb *sb)
{
	uint32_t total = 0;
	for (int w = 0; w < XP_WHY_N; w++)
		total += ex->nodes[w];
	for (int w = XP_WHY_DOWN; w < XP_WHY_N; w++) {
		if (!ex->nodes[w])
			continue;
		if (sb->len)
			xp_sb_puts(sb, "; ");
		xp_sb_printf(sb, "%u nodes: %s", ex->nodes[w], xp_why_name(w));
		if (w == XP_WHY_CPU)
			xp_sb_printf(sb, " by %llum", (unsigned long long)ex->cpu_short_min);
		if (w == XP_WHY_MEM)
			xp_sb_printf(sb, " by %lluMi", (unsigned long long)ex->mem_short_min);
	}
	if (ex->mig[0])
		xp_sb_printf(sb, "%s%s", sb->len ? "; " : "", ex->mig);
	if (fits)
		xp_sb_printf(sb, "%sfits now: %u nodes can take it; it starts at the next cycle",
			     sb->len ? "; " : "", ex->nodes[XP_WHY_FITS]);
	else if (!total)
		xp_sb_puts(sb, "no nodes are registered");
	else if (ex->nodes[XP_WHY_FITS] && replicas > 1)
		xp_sb_printf(sb, "%s%u nodes fit one replica but not all %u", sb->len ? "; " : "",
			     ex->nodes[XP_WHY_FITS], replicas);
}
