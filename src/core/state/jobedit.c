/*
 * jobedit: the records that change a pending job in place - job.hold
 * (held by its tenant or an admin, or released) and job.update (name,
 * priority, queue, time limit; the change is read by the spec's own
 * parser, so replay accepts exactly what the API did).
 *
 * A held job stays pending and out of the cycle (cycle.c skips it) until
 * it is released; then it is fresh again, like a new submission. A change
 * to the queue or the priority changes the order, so the pass in progress
 * is given up and the next cycle begins a full one.
 */
#include "state_int.h"

#include <stdlib.h>
#include <string.h>

static struct xp_job *pending_job(struct xp_state *st, uint64_t id, struct xp_err *err)
{
	struct xp_job *j = xp_state_job(st, id);
	if (!j)
		xp_errf(err, XP_ENOENT, "no job %lld", (long long)id);
	else if (j->state != XP_JOB_PENDING)
		xp_errf(err, XP_ESTATE, "job %llu is %s: only a pending job changes",
			(unsigned long long)j->id, xp_job_state_name(j->state));
	return j && j->state == XP_JOB_PENDING ? j : NULL;
}

/* it may be tried again: into the pending list and the fresh ones */
static void rejoin(struct xp_state *st, struct xp_job *j)
{
	j->verdict = XP_PEND_NONE;
	if (j->unmet || j->doomed || j->held)
		return;
	xp_vec_push(&st->pending, j);
	xp_vec_push(&st->fresh, j);
}

int xp_job_hold_apply(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
		      struct xp_err *err)
{
	struct xp_job *j = pending_job(st, r->u.hold.id, err);
	int held = r->u.hold.held;
	if (!j)
		return err->code;
	int was = j->held;
	j->held = (uint8_t)held;
	if (was && !held)
		rejoin(st, j);
	XP_JOB_CHECK(st, j, XP_JOB_PENDING);
	ev->type = held ? "job.held" : "job.released";
	ev->job = j->id;
	ev->tenant = j->tenant;
	ev->state = j->state;
	return 0;
}

int xp_job_update_apply(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
			struct xp_err *err)
{
	struct xp_job *j = pending_job(st, r->u.update.id, err);
	const struct xp_jobpatch p = *r->u.update.change;
	if (!j)
		return err->code;
	long q = j->queue;
	if (p.set & XP_JP_QUEUE) {
		q = xp_state_queue(st, p.queue);
		if (q < 0)
			return xp_errf(err, XP_ENOENT, "no queue %s", p.queue);
		if (!xp_queue_is_leaf(st, (uint32_t)q))
			return xp_errf(err, XP_EINVAL,
				       "queue %s has child queues; jobs go to a queue without "
				       "children",
				       p.queue);
	}
	xp_jobpatch_apply(&p, &j->spec);
	if ((uint32_t)q != j->queue) {
		st->queues.v[j->queue].pending--;
		st->queues.v[q].pending++;
		j->queue = (uint32_t)q;
	}
	if (p.set & (XP_JP_QUEUE | XP_JP_PRIORITY))
		xp_cycle_abort(st); /* its groups and order no longer hold */
	rejoin(st, j);
	XP_JOB_CHECK(st, j, XP_JOB_PENDING);
	ev->type = "job.updated";
	ev->job = j->id;
	ev->tenant = j->tenant;
	ev->state = j->state;
	return 0;
}
