/*
 * elastic: jobs whose size moves between a minimum and a maximum
 * (replicas: {min, max}; docs/design/controller.md, "Elastic jobs").
 *
 * spec.replicas is the job's size now: min while pending (the gang that
 * must fit together), then whatever job.resize records made it; the range
 * itself (rmin, rmax) never changes, and the canonical spec writes the
 * range, so a spec read back is the spec submitted. Snapshots keep the
 * size, the epoch and the resize history beside the spec.
 *
 * job.resize {id, epoch, size, keep, add, reason}: the replicas at ranks
 * keep[] stay (renumbered 0.. in that order), the allocations add[] join
 * after them. Every replica restarts at the new epoch (the agent stops the
 * old ones: a checkpoint signal, SIGTERM after the grace), so the replicas
 * of an epoch are all new processes with XPOOL_WORLD_SIZE = size. The
 * record is checked whole before anything changes, as every record is.
 */
#include "state_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/signame.h"
#include "../../lib/xalloc.h"

int xp_job_elastic(const struct xp_job *j)
{
	return j->spec.rmax > 0;
}

int xp_ckpt_signal(const struct xp_jobspec *s)
{
	return s->ckpt_signal ? s->ckpt_signal : XP_CKPT_SIGNAL_DEFAULT;
}

int64_t xp_ckpt_grace_ms(const struct xp_jobspec *s)
{
	return s->ckpt_grace_ms >= 0 ? s->ckpt_grace_ms : XP_CKPT_GRACE_DEFAULT;
}

/* ---- job.resize ---- */


/* keep[] of a resize record: ascending ranks below size; n of them */
static int check_keep(const struct xp_rec *r, uint32_t size, uint32_t *keep, uint32_t *n,
		      struct xp_err *err)
{
	int64_t got = r->u.resize.nkeep;
	if (got < 0 || got > (int64_t)size)
		return xp_errf(err, XP_ECORRUPT, "keep: expected at most %u ranks", size);
	for (int64_t i = 0; i < got; i++) {
		int64_t v = r->u.resize.keep[i]; /* INT64_MIN: not an integer */
		if (v < 0 || v >= (int64_t)size || (i && v <= (int64_t)keep[i - 1]))
			return xp_errf(err, XP_ECORRUPT,
				       "keep[%lld]: expected ascending ranks below %u", (long long)i,
				       size);
		keep[i] = (uint32_t)v;
	}
	*n = (uint32_t)got;
	return 0;
}

/* the added allocations fit the request, their nodes are ready, and they
 * fit beside what runs (committed on success; nothing on failure) */
static int commit_added(struct xp_state *st, const struct xp_job *j, struct xp_alloc *a, uint32_t n,
			struct xp_err *err)
{
	uint32_t done = 0;
	int rc = 0;
	for (; rc == 0 && done < n; done++) {
		const struct xp_alloc *x = &a[done];
		if (st->nodes.v[x->node].state != XP_NODE_READY)
			rc = xp_errf(err, XP_ESTATE, "node %s is %s", st->c->nodes[x->node].name,
				     xp_node_state_name(st->nodes.v[x->node].state));
		else if (!xp_alloc_matches(st, j, x))
			rc = xp_errf(err, XP_EINVAL, "add[%u] does not match the request", done);
		else if ((rc = xp_sched_alloc_fits(st->sched, x, err)) == 0)
			xp_sched_commit(st->sched, x);
		if (rc < 0)
			break;
	}
	if (rc < 0)
		while (done-- > 0)
			xp_sched_release(st->sched, &a[done]);
	return rc;
}

struct resize {
	struct xp_job *j;
	uint32_t epoch, size, nkeep, nadd;
	uint32_t *keep;
	struct xp_alloc *add;
	const char *why;
};

static int resize_check(struct xp_state *st, const struct xp_rec *r, struct resize *z,
			struct xp_err *err)
{
	long long id = (long long)r->u.resize.id, epoch = r->u.resize.epoch;
	z->j = xp_state_job(st, r->u.resize.id);
	z->why = r->u.resize.reason;
	if (!z->j)
		return xp_errf(err, XP_ENOENT, "no job %lld", (long long)id);
	struct xp_job *j = z->j;
	if (j->state != XP_JOB_RUNNING || !xp_job_elastic(j))
		return xp_errf(err, XP_ESTATE, "job %lld is not a running elastic job",
			       (long long)id);
	if ((uint64_t)epoch != (uint64_t)j->epoch + 1)
		return xp_errf(err, XP_ESTATE, "job %lld is at epoch %u, not %lld", (long long)id,
			       j->epoch, (long long)epoch - 1);
	z->epoch = r->u.resize.epoch;
	z->size = r->u.resize.size;
	z->keep = XNEWV(uint32_t, j->spec.replicas + 1);
	int rc = check_keep(r, j->spec.replicas, z->keep, &z->nkeep, err);
	z->nadd = r->u.resize.nadd;
	if (rc == 0 && (z->nkeep + z->nadd != z->size || z->size < j->spec.rmin ||
			z->size > j->spec.rmax || z->size == j->spec.replicas))
		rc = xp_errf(err, XP_EINVAL,
			     "job %lld: size %u (%u kept, %u added) is not a new size in %u..%u",
			     (long long)id, z->size, z->nkeep, z->nadd, j->spec.rmin, j->spec.rmax);
	z->add = XNEWV(struct xp_alloc, z->nadd + 1);
	if (rc == 0)
		rc = xp_allocs_resolve(st, r->u.resize.add, z->nadd, z->add, err);
	return rc;
}

/* the replicas that leave go back to the scheduler (back: recommitted) */
static void leavers(struct xp_state *st, const struct resize *z, int back)
{
	const struct xp_job *j = z->j;
	for (uint32_t r = 0, k = 0; r < j->spec.replicas; r++) {
		if (k < z->nkeep && z->keep[k] == r) {
			k++;
			continue;
		}
		if (back)
			xp_sched_commit(st->sched, &j->allocs[r]);
		else
			xp_sched_release(st->sched, &j->allocs[r]);
	}
}

/* everything checked: the job takes its new size */
static void resize_commit(struct xp_state *st, struct resize *z, int64_t at)
{
	struct xp_job *j = z->j;
	struct xp_alloc *a = XNEWV(struct xp_alloc, z->size);
	for (uint32_t k = 0; k < z->nkeep; k++)
		a[k] = j->allocs[z->keep[k]];
	if (z->nadd) /* none added: z->add may be NULL */
		memcpy(a + z->nkeep, z->add, sizeof(*a) * z->nadd);
	for (uint32_t r = 0; r < j->spec.replicas; r++) {
		uint32_t n = j->allocs[r].node;
		xp_node_run_del(st, n, j, r);
		if (st->nodes.v[n].jobs == 0 && st->nodes.v[n].state == XP_NODE_DRAINING)
			xp_state_node_set(st, n, XP_NODE_DRAINED);
	}
	if (z->size < j->spec.replicas) {
		st->cap_grew = 1;
		j->shrunk = 1;
	}
	free(j->allocs);
	j->allocs = a;
	j->spec.replicas = z->size;
	free(j->exited);
	j->exited = XNEWV(uint8_t, z->size); /* every replica starts anew */
	for (uint32_t r = 0; r < z->size; r++)
		xp_node_run_add(st, a[r].node, j, r);
	j->epoch = z->epoch;
	j->resizes++;
	j->resized_at = at;
	free(j->resize_why);
	j->resize_why = *z->why ? xstrdup(z->why) : NULL;
}

int xp_elastic_resize_apply(struct xp_state *st, const struct xp_rec *r, int64_t at,
			    struct xp_event_info *ev, struct xp_err *err)
{
	struct resize z = { 0 };
	int rc = resize_check(st, r, &z, err);
	if (rc == 0)
		rc = xp_state_sched(st, err);
	struct xp_job *j = z.j;
	if (rc == 0) {
		leavers(st, &z, 0);
		if ((rc = commit_added(st, j, z.add, z.nadd, err)) < 0)
			leavers(st, &z, 1);
	}
	if (rc == 0) { /* quotas count the size: never over a max */
		uint64_t d[XP_RES_N], da[XP_RES_N];
		uint32_t where;
		int res;
		xp_usage_charge(st, j, -1);
		struct xp_alloc *kept = XNEWV(struct xp_alloc, z.nkeep + 1);
		for (uint32_t k = 0; k < z.nkeep; k++)
			kept[k] = j->allocs[z.keep[k]];
		xp_demand_of(st, kept, z.nkeep, d);
		xp_demand_of(st, z.add, z.nadd, da);
		free(kept);
		for (int k = 0; k < XP_RES_N; k++)
			d[k] += da[k];
		if (xp_queue_admits(st, j->queue, d, &where, &res) < 0) {
			xp_usage_charge(st, j, 1);
			xp_unplace(st, z.add, z.nadd);
			leavers(st, &z, 1);
			rc = xp_errf(err, XP_ENOSPC, "queue %s would exceed its max of %s",
				     st->queues.v[where].name, xp_res_name(res));
		}
	}
	if (rc == 0) {
		xp_meter_close_run(st, j, at); /* the size so far, as one run */
		resize_commit(st, &z, at);
		xp_usage_charge(st, j, 1);
		XP_JOB_CHECK(st, j, XP_JOB_RUNNING);
		ev->type = "job.resized";
		ev->job = j->id;
		ev->tenant = j->tenant;
		ev->node = (int32_t)j->allocs[0].node;
		ev->state = XP_JOB_RUNNING;
	}
	free(z.keep);
	free(z.add);
	return rc;
}

/* ---- the job's life around it ---- */

void xp_elastic_started(struct xp_state *st, struct xp_job *j)
{
	j->epoch = 0;
	j->resized_at = 0;
	j->shrunk = 0;
	if (j->spec.rmax > j->spec.replicas)
		st->cap_grew = 1; /* a full pass next: it grows into what is left */
}

void xp_elastic_requeued(struct xp_job *j)
{
	if (xp_job_elastic(j))
		j->spec.replicas = j->spec.rmin; /* the gang again */
	j->epoch = 0;
	j->resized_at = 0;
}


