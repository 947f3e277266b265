/*
 * apply: journal records into the state (see state.h). Each handler first
 * checks everything - the objects the record names, that the transition
 * is legal, that allocations fit - and only then changes anything, so a
 * rejected record leaves the state as it was. The live path and replay
 * both come through here with typed records (rec.h) decoded by the codec
 * at the store boundary, whose field checks (form, ranges, names) come
 * first.
 */
#include "state_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/signame.h"
#include "../../lib/xalloc.h"

static const char *const rec_names[XP_REC_N] = {
	[XP_REC_TENANT_CREATE] = "tenant.create", [XP_REC_TOKEN_CREATE] = "token.create",
	[XP_REC_TOKEN_REVOKE] = "token.revoke",	  [XP_REC_QUEUE_DELETE] = "queue.delete",
	[XP_REC_NODE_STATE] = "node.state",	  [XP_REC_NODE_REMOVE] = "node.remove",
	[XP_REC_NODE_HEALTH] = "node.health",	  [XP_REC_JOB_FINISH] = "job.finish",
	[XP_REC_JOB_CANCEL] = "job.cancel",	  [XP_REC_JOB_TASK] = "job.task",
	[XP_REC_JOB_REQUEUE] = "job.requeue",	  [XP_REC_JOB_PREEMPT] = "job.preempt",
	[XP_REC_JOB_HOLD] = "job.hold",		  [XP_REC_JOB_UPDATE] = "job.update",
	[XP_REC_JOB_FORGET] = "job.forget",	  [XP_REC_JOB_COUNTER] = "job.counter",
	[XP_REC_JOB_ENERGY] = "job.energy",	  [XP_REC_PRICES_SET] = "prices.set",
	[XP_REC_QUEUE_CREATE] = "queue.create",	  [XP_REC_QUEUE_UPDATE] = "queue.update",
	[XP_REC_NODE_ADD] = "node.add",		  [XP_REC_JOB_SUBMIT] = "job.submit",
	[XP_REC_SERVICE_CREATE] = "service.create",
	[XP_REC_SERVICE_UPDATE] = "service.update",
	[XP_REC_SERVICE_SCALE] = "service.scale",
	[XP_REC_SERVICE_DELETE] = "service.delete",
	[XP_REC_SERVICE_PROMOTE] = "service.promote",
	[XP_REC_SERVICE_ROLLBACK] = "service.rollback",
	[XP_REC_SERVICE_ROLLED] = "service.rolled",
	[XP_REC_JOB_START] = "job.start",
	[XP_REC_JOB_RESIZE] = "job.resize",
	[XP_REC_NODE_MIG_LEAVE] = "node.mig_mode_change",
	[XP_REC_NODE_MIG_MODE] = "node.mig_mode",
	[XP_REC_NODE_MIG_DONE] = "node.mig_mode_done",
};

const char *xp_rec_type_name(int type)
{
	return type >= 0 && type < XP_REC_N ? rec_names[type] : NULL;
}

int xp_rec_type_parse(const char *name)
{
	for (int t = 0; t < XP_REC_N; t++)
		if (!strcmp(rec_names[t], name))
			return t;
	return -1;
}

/* refusals of a well-formed record: the state does not allow it */
static int refuse_v(struct xp_err *err, int code, const char *fmt, va_list ap)
{
	char msg[400];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	return xp_errf(err, code, "%s", msg);
}
static int refusef(struct xp_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int refusef(struct xp_err *err, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = refuse_v(err, code, fmt, ap);
	va_end(ap);
	return rc;
}

const struct xp_mig_profile *xp_state_mig_profile(struct xp_state *st, const struct xp_alloc *a)
{
	if (!a->mig || xp_state_sched(st, NULL) < 0)
		return NULL;
	return xp_sched_mig_prof(st->sched, a);
}

int xp_state_sched(struct xp_state *st, struct xp_err *err)
{
	if (!st->sched_stale)
		return 0;
	struct xp_sched *s = xp_sched_create(st->c, &st->sopts, err);
	if (!s)
		return err ? err->code : XP_EINTERNAL;
	for (size_t n = 0; n < st->nodes.n; n++) {
		if (st->nodes.v[n].removed || st->nodes.v[n].state != XP_NODE_READY)
			xp_sched_set_node_up(s, (uint32_t)n, 0);
		xp_sched_set_node_failures(s, (uint32_t)n, st->nodes.v[n].failures);
	}
	xp_migmode_sched(st, s); /* GPUs reserved for a MIG mode change take nothing */
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->state == XP_JOB_RUNNING)
			for (uint32_t k = 0; k < j->spec.replicas; k++)
				xp_sched_commit(s, &j->allocs[k]);
	}
	if (st->workload.n && xp_sched_set_workload(s, st->workload.v, st->workload.n, err) < 0) {
		xp_sched_destroy(s);
		return err ? err->code : XP_EINTERNAL;
	}
	xp_sched_destroy(st->sched);
	st->sched = s;
	st->sched_stale = 0;
	st->cap_grew = 1;
	return 0;
}

void xp_state_add_job(struct xp_state *st, struct xp_job *j)
{
	xp_vec_push(&st->jobs, j);
	xp_intmap_put(&st->job_by_id, j->id, j);
	st->count[j->state]++;
	if (j->id >= st->next_job_id)
		st->next_job_id = j->id + 1;
	st->tenants.v[j->tenant].live += !xp_job_terminal(j->state);
	if (j->state == XP_JOB_PENDING) {
		st->queues.v[j->queue].pending++;
		xp_vec_push(&st->pending, j);
		xp_vec_push(&st->fresh, j);
	} else if (j->state == XP_JOB_RUNNING) {
		st->queues.v[j->queue].running++;
		for (uint32_t r = 0; r < j->spec.replicas; r++)
			xp_node_run_add(st, j->allocs[r].node, j, r);
		xp_usage_charge(st, j, 1);
	}
	xp_deps_add(st, j);
	xp_service_job_added(st, j);
	st->elastic_live += xp_job_elastic(j) && !xp_job_terminal(j->state);
	if (j->key) {
		char buf[512];
		xp_state_key(st, j->tenant, j->key, buf, sizeof(buf));
		xp_sym s = xp_strtab_intern(st->keys, buf);
		while (st->key_job.n <= s)
			xp_vec_push(&st->key_job, 0);
		st->key_job.v[s] = j->id;
	}
}


long xp_state_add_node_one(struct xp_state *st, const struct xp_cluster *one, int source,
			   int state, struct xp_err *err)
{
	long idx;
	if (one->nnodes != 1)
		return xp_errf(err, XP_EINVAL, "a node descriptor must describe one node, not %zu",
			       one->nnodes);
	if (xp_state_node(st, one->nodes[0].name) >= 0)
		return xp_errf(err, XP_EEXIST, "node %s is already registered", one->nodes[0].name);
	xp_cluster_copy_node(st->c, one, &one->nodes[0], NULL);
	idx = (long)st->c->nnodes - 1;
	struct xp_nodeinfo ni = { .state = (uint8_t)state, .source = (uint8_t)source };
	xp_vec_push(&st->nodes, ni);
	xp_sym s = xp_strtab_intern(st->node_names, one->nodes[0].name);
	while (st->node_of_sym.n <= s)
		xp_vec_push(&st->node_of_sym, UINT32_MAX);
	st->node_of_sym.v[s] = (uint32_t)idx;
	st->sched_stale = 1;
	st->nodes_gen++;
	xp_capacity_node(st, (uint32_t)idx, 1);
	return idx;
}

/* ---- handlers ---- */

static int tenant_create(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
			 struct xp_err *err)
{
	const char *name = r->u.tenant.name;
	if (!xp_name_ok(name))
		return refusef(err, XP_EINVAL, "tenant name '%s' is not a valid name", name);
	if (xp_state_tenant(st, name) >= 0)
		return refusef(err, XP_EEXIST, "tenant %s already exists", name);
	struct xp_tenant t = { .name = xstrdup(name) };
	xp_vec_push(&st->tenants, t);
	ev->type = "tenant.created";
	ev->tenant = -2;
	return 0;
}


static int token_create(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
			struct xp_err *err)
{
	const char *tenant = r->u.token.tenant, *name = r->u.token.name, *sha = r->u.token.sha256,
		   *node = r->u.token.node;
	uint64_t id = r->u.token.id;
	int scope = r->u.token.scope;
	long t = xp_state_tenant(st, tenant);
	if (t < 0)
		return refusef(err, XP_ENOENT, "no tenant %s", tenant);
	if (!xp_name_ok(name))
		return refusef(err, XP_EINVAL, "token name '%s' is not a valid name", name);
	for (size_t i = 0; i < st->tokens.n; i++)
		if (st->tokens.v[i].id == id || !strcmp(st->tokens.v[i].sha256, sha))
			return refusef(err, XP_EEXIST, "token %lld already exists", (long long)id);
	struct xp_token k = { .id = id,
			      .tenant = (uint32_t)t,
			      .admin = scope == XP_SCOPE_ADMIN,
			      .scope = (uint8_t)scope,
			      .name = xstrdup(name),
			      .node = node ? xstrdup(node) : NULL };
	memcpy(k.sha256, sha, 65);
	xp_vec_push(&st->tokens, k);
	if ((uint64_t)id >= st->next_token_id)
		st->next_token_id = (uint64_t)id + 1;
	ev->type = "token.created";
	ev->tenant = -2;
	return 0;
}

static int token_revoke(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
			struct xp_err *err)
{
	uint64_t id = r->u.revoke.id;
	for (size_t i = 0; i < st->tokens.n; i++)
		if (st->tokens.v[i].id == id) {
			if (st->tokens.v[i].revoked)
				return refusef(err, XP_ESTATE, "token %lld is already revoked",
					       (long long)id);
			st->tokens.v[i].revoked = 1;
			ev->type = "token.revoked";
			ev->tenant = -2;
			return 0;
		}
	return refusef(err, XP_ENOENT, "no token %lld", (long long)id);
}

static int node_add(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
		    struct xp_err *err)
{
	long idx = xp_state_add_node_one(st, r->u.node_add.desc, r->u.node_add.source,
					 XP_NODE_READY, err);
	if (idx < 0)
		return (int)idx;
	XP_NODE_CHECK(st, idx, -1);
	ev->type = "node.added";
	ev->tenant = -1;
	ev->node = (int32_t)idx;
	ev->state = XP_NODE_READY;
	return 0;
}

/* one more failure on node n: the weighted policy's health factor */
static void note_failure(struct xp_state *st, long n)
{
	st->nodes.v[n].failures++;
	if (!st->sched_stale)
		xp_sched_set_node_failures(st->sched, (uint32_t)n, st->nodes.v[n].failures);
}

void xp_state_node_set(struct xp_state *st, long n, int state)
{
	int from = st->nodes.v[n].state, was_ready = from == XP_NODE_READY;
	if (state == XP_NODE_DOWN && st->nodes.v[n].state != XP_NODE_DOWN)
		note_failure(st, n); /* lost */
	st->nodes.v[n].state = (uint8_t)state;
	st->nodes_state_gen++;
	if (!st->sched_stale)
		xp_sched_set_node_up(st->sched, (uint32_t)n, state == XP_NODE_READY);
	if (!was_ready && state == XP_NODE_READY)
		st->cap_grew = 1;
	XP_NODE_CHECK(st, n, from);
}

static int node_state(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
		      struct xp_err *err)
{
	const char *name = r->u.node.name;
	int to = r->u.node.state;
	long n = xp_state_node(st, name);
	if (n < 0)
		return refusef(err, XP_ENOENT, "no node %s", name);
	int from = st->nodes.v[n].state;
	if (!xp_node_transition_ok(from, to))
		return refusef(err, XP_ESTATE, "node %s cannot go from %s to %s", name,
			       xp_node_state_name(from), xp_node_state_name(to));
	if (to == XP_NODE_DRAINED && st->nodes.v[n].jobs) /* drained: its last job ended */
		return refusef(err, XP_ESTATE, "node %s still runs %u jobs: it is not drained",
			       name, st->nodes.v[n].jobs);
	if (to == XP_NODE_DRAINING && st->nodes.v[n].jobs == 0)
		to = XP_NODE_DRAINED; /* nothing to wait for */
	xp_state_node_set(st, n, to);
	ev->type = "node.state";
	ev->tenant = -1;
	ev->node = (int32_t)n;
	ev->state = to;
	return 0;
}

static int node_remove(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
		       struct xp_err *err)
{
	const char *name = r->u.node.name;
	long n = xp_state_node(st, name);
	if (n < 0)
		return refusef(err, XP_ENOENT, "no node %s", name);
	if (st->nodes.v[n].jobs)
		return refusef(err, XP_ESTATE, "node %s still runs %u jobs", name,
			       st->nodes.v[n].jobs);
	st->nodes.v[n].removed = 1;
	xp_migmode_node_gone(st, (size_t)n); /* its reservation and leave go with it */
	st->nodes_gen++;
	xp_capacity_node(st, (uint32_t)n, -1);
	if (!st->sched_stale)
		xp_sched_set_node_up(st->sched, (uint32_t)n, 0);
	st->node_of_sym.v[xp_strtab_find(st->node_names, name)] = UINT32_MAX;
	XP_NODE_CHECK(st, n, st->nodes.v[n].state);
	ev->type = "node.removed";
	ev->tenant = -1;
	ev->node = (int32_t)n;
	return 0;
}

/* What a job.submit must meet before its spec is looked at: *t its tenant */
static int submit_admits(struct xp_state *st, struct xp_err *err, int64_t id, const char *tenant,
			 const char *key, long *t)
{
	*t = xp_state_tenant(st, tenant);
	if (*t < 0)
		return refusef(err, XP_ENOENT, "no tenant %s", tenant);
	if (xp_state_job(st, (uint64_t)id))
		return refusef(err, XP_EEXIST, "job %lld already exists", (long long)id);
	if ((uint64_t)id < st->next_job_id)
		return refusef(err, XP_EINVAL, "job id %lld is below the next id %llu", (long long)id,
			      (unsigned long long)st->next_job_id);
	if (key && xp_state_job_by_key(st, (uint32_t)*t, key))
		return refusef(err, XP_EEXIST, "idempotency key already used");
	return 0;
}

/* The rest of job.submit, j's spec decoded: its queue, request, dependencies
 * and node checked, then j is a pending job of the state (or freed). */
static int submit_job(struct xp_state *st, struct xp_err *err, int64_t at, int64_t id, long t,
		      const char *key, struct xp_job *j, struct xp_event_info *ev)
{
	const char *qname = j->spec.queue ? j->spec.queue : "default";
	long q = xp_state_queue(st, qname);
	int rc = 0;
	if (q < 0)
		rc = refusef(err, XP_ENOENT, "no queue %s", qname);
	if (rc == 0 && !xp_queue_is_leaf(st, (uint32_t)q))
		rc = refusef(err, XP_EINVAL,
			    "queue %s has child queues; jobs go to a queue without children",
			    qname);
	if (rc == 0) {
		xp_jobspec_request(&j->spec, st->c->syms, &j->req);
		rc = xp_request_check(&j->req, err);
	}
	if (rc == 0)
		rc = xp_deps_check(st, &j->spec, (uint32_t)t, err);
	if (rc == 0)
		rc = xp_service_admits(st, j, err);
	if (rc == 0 && j->spec.node) {
		long n = xp_state_node(st, j->spec.node);
		if (n < 0)
			rc = refusef(err, XP_ENOENT, "no node %s", j->spec.node);
		j->req.node = (int32_t)n;
	}
	if (rc < 0) {
		xp_state_job_free(j);
		return rc;
	}
	j->id = (uint64_t)id;
	j->tenant = (uint32_t)t;
	j->queue = (uint32_t)q;
	j->state = XP_JOB_PENDING;
	j->key = key ? xstrdup(key) : NULL;
	j->key_hash = key ? st->docs->jobspec_hash(&j->spec) : 0;
	j->submitted_at = at;
	xp_state_add_job(st, j);
	XP_JOB_CHECK(st, j, -1);
	ev->type = "job.submitted";
	ev->job = j->id;
	ev->tenant = t;
	ev->state = XP_JOB_PENDING;
	return 0;
}

static int job_submit(struct xp_state *st, const struct xp_rec *r, int64_t at,
		      struct xp_event_info *ev, struct xp_err *err)
{
	return xp_state_submit(st, at, r->u.submit.id, r->u.submit.tenant, r->u.submit.key,
			       r->u.submit.spec, ev, err);
}

int xp_state_submit(struct xp_state *st, int64_t at, uint64_t id, const char *tenant,
		    const char *key, struct xp_jobspec *spec, struct xp_event_info *ev,
		    struct xp_err *err)
{
	long t = -1;
	memset(ev, 0, sizeof(*ev));
	ev->node = -1;
	ev->state = -1;
	int rc = id > INT64_MAX ? xp_errf(err, XP_ECORRUPT, "id: missing or out of range")
				: submit_admits(st, err, (int64_t)id, tenant, key, &t);
	if (rc < 0) {
		xp_jobspec_free(spec);
		return rc;
	}
	struct xp_job *j = XNEW(struct xp_job);
	j->spec = *spec; /* taken */
	memset(spec, 0, sizeof(*spec));
	return submit_job(st, err, at, (int64_t)id, t, key, j, ev);
}

static int job_start(struct xp_state *st, const struct xp_rec *rec, int64_t at,
		     struct xp_event_info *ev, struct xp_err *err)
{
	long long id = (long long)rec->u.start.id;
	int rc;
	struct xp_job *j = xp_state_job(st, rec->u.start.id);
	if (!j)
		return refusef(err, XP_ENOENT, "no job %lld", id);
	if (!xp_job_transition_ok(j->state, XP_JOB_RUNNING))
		return refusef(err, XP_ESTATE, "job %lld is %s, it cannot start", id,
			       xp_job_state_name(j->state));
	if ((rc = xp_state_sched(st, err)) < 0)
		return rc;
	uint32_t n = j->spec.replicas;
	struct xp_alloc *a = XNEWV(struct xp_alloc, n);
	rc = rec->u.start.n != (int64_t)n
		     ? xp_errf(err, XP_ECORRUPT, "allocations: expected %u", n)
		     : xp_allocs_resolve(st, rec->u.start.a, n, a, err);
	uint32_t done = 0;
	for (; rc == 0 && done < n; done++) {
		const struct xp_alloc *x = &a[done];
		if (st->nodes.v[x->node].state != XP_NODE_READY)
			rc = refusef(err, XP_ESTATE, "node %s is %s", st->c->nodes[x->node].name,
				    xp_node_state_name(st->nodes.v[x->node].state));
		else if (!xp_alloc_matches(st, j, x))
			rc = refusef(err, XP_EINVAL, "allocation %u does not match the request", done);
		else if ((rc = xp_sched_alloc_fits(st->sched, x, err)) == 0)
			xp_sched_commit(st->sched, x);
		if (rc < 0)
			break;
	}
	if (rc == 0) { /* quotas are never exceeded */
		uint64_t d[XP_RES_N];
		uint32_t where;
		int res;
		xp_demand_of(st, a, n, d);
		if (xp_queue_admits(st, j->queue, d, &where, &res) < 0)
			rc = refusef(err, XP_ENOSPC, "queue %s would exceed its max of %s",
				    st->queues.v[where].name, xp_res_name(res));
	}
	if (rc < 0) {
		while (done-- > 0)
			xp_sched_release(st->sched, &a[done]);
		free(a);
		return rc;
	}
	st->count[j->state]--;
	j->state = XP_JOB_RUNNING;
	st->count[j->state]++;
	free(j->allocs); /* where an earlier attempt ran */
	j->allocs = a;
	j->attempts++;
	free(j->exited);
	j->exited = XNEWV(uint8_t, n);
	j->started_at = at;
	xp_elastic_started(st, j);
	free(j->reason);
	j->reason = NULL;
	st->queues.v[j->queue].pending--;
	st->queues.v[j->queue].running++;
	for (uint32_t k = 0; k < n; k++)
		xp_node_run_add(st, a[k].node, j, k);
	xp_usage_charge(st, j, 1);
	XP_JOB_CHECK(st, j, XP_JOB_PENDING);
	ev->type = "job.started";
	ev->job = j->id;
	ev->tenant = j->tenant;
	ev->node = (int32_t)a[0].node;
	ev->state = XP_JOB_RUNNING;
	return 0;
}

/* running or pending -> terminal; releases what the job holds */
void xp_state_finish(struct xp_state *st, struct xp_job *j, int to, int64_t at)
{
	int from = j->state;
	(void)from; /* read by XP_JOB_CHECK in checked builds only */
	if (j->state == XP_JOB_RUNNING) {
		xp_meter_close_run(st, j, at);
		xp_usage_charge(st, j, -1);
		for (uint32_t k = 0; k < j->spec.replicas; k++) {
			uint32_t n = j->allocs[k].node;
			if (!st->sched_stale)
				xp_sched_release(st->sched, &j->allocs[k]);
			xp_node_run_del(st, n, j, k);
			if (st->nodes.v[n].jobs == 0 && st->nodes.v[n].state == XP_NODE_DRAINING)
				xp_state_node_set(st, n, XP_NODE_DRAINED);
		}
		/* j->allocs stays: where the job ran (it holds nothing now) */
		st->queues.v[j->queue].running--;
		free(j->exited);
		j->exited = NULL;
		st->cap_grew = 1;
	} else {
		st->queues.v[j->queue].pending--;
	}
	st->tenants.v[j->tenant].live--;
	st->count[j->state]--;
	j->state = (uint8_t)to;
	st->count[j->state]++;
	j->finished_at = at;
	xp_state_note_done(st, j);
	xp_deps_ended(st, j);
	xp_service_job_ended(st, j, to, at);
	st->elastic_live -= xp_job_elastic(j) && st->elastic_live;
	XP_JOB_CHECK(st, j, from);
}


static int job_end(struct xp_state *st, const struct xp_rec *r, int64_t at,
		   struct xp_event_info *ev, struct xp_err *err)
{
	int cancel = r->type == XP_REC_JOB_CANCEL, rc;
	uint64_t id = r->u.end.id;
	const struct xp_exit x = r->u.end.x; /* none for a cancel */
	const char *reason = r->u.end.reason ? r->u.end.reason : "";
	int to = cancel ? XP_JOB_CANCELLED : r->u.end.state;
	struct xp_job *j = xp_state_job(st, id);
	if (!j)
		return refusef(err, XP_ENOENT, "no job %lld", (long long)id);
	if (!xp_job_transition_ok(j->state, to))
		return refusef(err, XP_ESTATE, "job %lld is %s, it cannot become %s", (long long)id,
			       xp_job_state_name(j->state), xp_job_state_name(to));
	int ran = j->state == XP_JOB_RUNNING;
	if (ran && (rc = xp_state_sched(st, err)) < 0)
		return rc;
	xp_state_finish(st, j, to, at);
	/* a pending job fails without an exit code (gang timeout); so does a
	 * running one past its time limit until its agent says how it ended */
	if (!cancel && ran && x.has_code) {
		j->has_exit = 1;
		j->exit_code = (int32_t)x.code;
		j->exit_signal = (uint8_t)x.signal;
	}
	j->end = (uint8_t)x.end;
	free(j->reason);
	j->reason = *reason ? xstrdup(reason) : NULL;
	ev->type = cancel ? "job.cancelled" : "job.finished";
	ev->job = j->id;
	ev->tenant = j->tenant;
	ev->state = to;
	return 0;
}

static void mib_text(uint64_t mib, char out[32])
{
	if (mib && mib % 1024 == 0)
		snprintf(out, 32, "%llu GiB", (unsigned long long)(mib / 1024));
	else
		snprintf(out, 32, "%llu MiB", (unsigned long long)mib);
}

/* The reason text of a failing replica: the end reason's name first. */
static void exit_why(const struct xp_job *j, uint32_t replica, int64_t code,
		     const struct xp_exit *x, char *why, size_t len)
{
	char mem[32];
	const char *sig = xp_signal_name(x->signal);
	const char *detail = x->detail && *x->detail ? x->detail : "its limits could not be set";
	switch (x->end) {
	case XP_END_OOM:
		mib_text(j->allocs[replica].mem_mib, mem);
		snprintf(why, len, "oom: replica %u went over its memory limit of %s", replica,
			 mem);
		break;
	case XP_END_LIMITS:
		snprintf(why, len, "limits: replica %u was not started: %s", replica, detail);
		break;
	case XP_END_START:
		snprintf(why, len, "start: replica %u could not be started: %s", replica,
			 x->detail && *x->detail ? x->detail : "exit code 127");
		break;
	case XP_END_TIME_LIMIT:
		snprintf(why, len, "time_limit: replica %u ran past its time limit", replica);
		break;
	default:
		snprintf(why, len, "replica %u exited with code %lld%s%s%s", replica,
			 (long long)code, sig ? " (" : "", sig ? sig : "", sig ? ")" : "");
	}
}

/* The agent's report of a replica its time limit ended (job.finish failed,
 * end time_limit, no exit code yet): the job takes its exit code and
 * signal, once. */
static int time_limit_exit(const struct xp_state *st, struct xp_job *j, int64_t code,
			   const struct xp_exit *x, uint32_t replica, struct xp_event_info *ev)
{
	j->has_exit = 1;
	j->exit_code = (int32_t)code;
	j->exit_signal = (uint8_t)x->signal;
	XP_JOB_CHECK(st, j, XP_JOB_FAILED);
	ev->type = "job.task";
	ev->job = j->id;
	ev->tenant = j->tenant;
	ev->node = (int32_t)j->allocs[replica].node;
	return 0;
}

/* a replica of the running attempt exited: the job ends when one fails or all are done */
static int job_task(struct xp_state *st, const struct xp_rec *r, int64_t at,
		    struct xp_event_info *ev, struct xp_err *err)
{
	int64_t id = (int64_t)r->u.task.id, attempt = r->u.task.attempt,
		replica = r->u.task.replica, code = r->u.task.x.code;
	const struct xp_exit x = r->u.task.x;
	int rc;
	struct xp_job *j = xp_state_job(st, (uint64_t)id);
	if (!j)
		return refusef(err, XP_ENOENT, "no job %lld", (long long)id);
	if (j->state == XP_JOB_FAILED && j->end == XP_END_TIME_LIMIT && !j->has_exit &&
	    (uint32_t)attempt == j->attempts && j->allocs && (uint32_t)replica < j->spec.replicas)
		return time_limit_exit(st, j, code, &x, (uint32_t)replica, ev);
	if (j->state != XP_JOB_RUNNING || (uint32_t)attempt != j->attempts)
		return refusef(err, XP_ESTATE, "job %lld attempt %lld is not running", (long long)id,
			       (long long)attempt);
	if ((uint32_t)replica >= j->spec.replicas)
		return refusef(err, XP_EINVAL, "job %lld has no replica %lld", (long long)id,
			       (long long)replica);
	if (j->exited[replica])
		return refusef(err, XP_ESTATE, "job %lld replica %lld already exited",
			       (long long)id, (long long)replica);
	if ((rc = xp_state_sched(st, err)) < 0)
		return rc;
	j->exited[replica] = 1;
	ev->type = "job.task";
	ev->job = j->id;
	ev->tenant = j->tenant;
	ev->node = (int32_t)j->allocs[replica].node;
	uint32_t done = 0;
	for (uint32_t k = 0; k < j->spec.replicas; k++)
		done += j->exited[k];
	int failed = code != 0 || x.end != XP_END_NONE;
	if (failed || done == j->spec.replicas) {
		char why[512] = "";
		if (failed)
			exit_why(j, (uint32_t)replica, code, &x, why, sizeof(why));
		xp_state_finish(st, j, failed ? XP_JOB_FAILED : XP_JOB_SUCCEEDED, at);
		j->has_exit = x.end != XP_END_LIMITS; /* limits: it never started */
		j->exit_code = (int32_t)code;
		j->exit_signal = (uint8_t)x.signal;
		j->end = (uint8_t)x.end;
		free(j->reason);
		j->reason = *why ? xstrdup(why) : NULL;
		ev->type = "job.finished";
		ev->state = j->state;
	}
	XP_JOB_CHECK(st, j, XP_JOB_RUNNING);
	return 0;
}

/* running -> pending: its node was lost, or it was preempted; a new
 * attempt starts later */
static int job_requeue(struct xp_state *st, const struct xp_rec *r, int64_t at,
		       struct xp_event_info *ev, struct xp_err *err)
{
	int preempted = r->type == XP_REC_JOB_PREEMPT, rc;
	uint64_t id = r->u.requeue.id;
	const char *rs = r->u.requeue.reason;
	struct xp_job *j = xp_state_job(st, id);
	if (!j)
		return refusef(err, XP_ENOENT, "no job %lld", (long long)id);
	if (j->state != XP_JOB_RUNNING)
		return refusef(err, XP_ESTATE, "job %lld is %s, it cannot be requeued",
			       (long long)id, xp_job_state_name(j->state));
	if ((rc = xp_state_sched(st, err)) < 0)
		return rc;
	xp_meter_close_run(st, j, at);
	xp_usage_charge(st, j, -1);
	for (uint32_t k = 0; k < j->spec.replicas; k++) {
		uint32_t n = j->allocs[k].node;
		xp_sched_release(st->sched, &j->allocs[k]);
		xp_node_run_del(st, n, j, k);
	}
	free(j->exited);
	j->exited = NULL;
	free(j->allocs);
	j->allocs = NULL;
	xp_elastic_requeued(j);
	st->count[j->state]--;
	j->state = XP_JOB_PENDING;
	st->count[j->state]++;
	st->queues.v[j->queue].running--;
	st->queues.v[j->queue].pending++;
	if (preempted)
		j->preemptions++;
	else
		j->requeues++;
	j->started_at = 0;
	j->verdict = XP_PEND_NONE;
	free(j->reason);
	j->reason = rs && *rs ? xstrdup(rs) : NULL;
	xp_vec_push(&st->pending, j);
	xp_vec_push(&st->fresh, j);
	st->cap_grew = 1;
	XP_JOB_CHECK(st, j, XP_JOB_RUNNING);
	ev->type = preempted ? "job.preempted" : "job.requeued";
	ev->job = j->id;
	ev->tenant = j->tenant;
	ev->state = XP_JOB_PENDING;
	return 0;
}

/* business counters a job reports (meter.c) */
static int job_counter(struct xp_state *st, const struct xp_rec *r, int64_t at,
		       struct xp_event_info *ev, struct xp_err *err)
{
	int rc = xp_meter_counter(st, r, at, err);
	if (rc < 0)
		return rc;
	const struct xp_job *j = xp_state_job(st, r->u.counter.id);
	ev->type = "job.counter";
	ev->job = j->id;
	ev->tenant = j->tenant;
	return 0;
}

/* the energy the agents measured for an ended run (meter.c) */
static int job_energy(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
		      struct xp_err *err)
{
	int rc = xp_meter_energy(st, r, err);
	const struct xp_job *j = rc ? NULL : xp_state_job(st, r->u.energy.id);
	ev->type = "job.energy";
	ev->job = j ? j->id : 0;
	ev->tenant = j ? (int64_t)j->tenant : -2;
	return rc;
}

void xp_state_set_health(struct xp_state *st, long n, const uint8_t *ok, char *const *why,
			 int count_faults)
{
	struct xp_node *node = &st->c->nodes[n];
	struct xp_nodeinfo *ni = &st->nodes.v[n];
	if (!ni->dev_why && node->ndevs)
		ni->dev_why = XNEWV(char *, node->ndevs);
	for (uint16_t d = 0; d < node->ndevs; d++) {
		int was = node->devs[d].health != XP_HEALTH_UNHEALTHY;
		if (was && !ok[d] && count_faults)
			note_failure(st, n);
		node->devs[d].health = ok[d] ? XP_HEALTH_OK : XP_HEALTH_UNHEALTHY;
		free(ni->dev_why[d]);
		ni->dev_why[d] = !ok[d] && why && why[d] && *why[d] ? xstrdup(why[d]) : NULL;
		if (!st->sched_stale)
			xp_sched_set_device_ok(st->sched, (uint32_t)n, d, ok[d]);
		if (!was && ok[d])
			st->cap_grew = 1;
	}
}

static int node_health(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
		       struct xp_err *err)
{
	const char *name = r->u.health.name;
	long n = xp_state_node(st, name);
	if (n < 0)
		return refusef(err, XP_ENOENT, "no node %s", name);
	uint16_t nd = st->c->nodes[n].ndevs;
	if (r->u.health.ndevs != (int)nd)
		return refusef(err, XP_EINVAL, "node %s has %u devices, the report lists %d", name,
			       nd, r->u.health.ndevs < 0 ? 0 : r->u.health.ndevs);
	xp_state_set_health(st, n, r->u.health.ok, (char *const *)r->u.health.why, 1);
	ev->type = "node.health";
	ev->tenant = -1;
	ev->node = (int32_t)n;
	return 0;
}

static struct xp_event_info *ev_init(struct xp_event_info *ev, struct xp_event_info *dummy)
{
	if (!ev)
		ev = dummy;
	memset(ev, 0, sizeof(*ev));
	ev->node = -1;
	ev->state = -1;
	return ev;
}

int xp_state_apply_rec(struct xp_state *st, uint64_t seq, int64_t at, const struct xp_rec *r,
		       struct xp_event_info *ev, struct xp_err *err)
{
	struct xp_event_info dummy;
	int rc;
	ev = ev_init(ev, &dummy);
	switch (r->type) {
	case XP_REC_TENANT_CREATE:
		rc = tenant_create(st, r, ev, err);
		break;
	case XP_REC_TOKEN_CREATE:
		rc = token_create(st, r, ev, err);
		break;
	case XP_REC_TOKEN_REVOKE:
		rc = token_revoke(st, r, ev, err);
		break;
	case XP_REC_QUEUE_DELETE:
		rc = xp_queue_delete(st, r->u.node.name, ev, err);
		break;
	case XP_REC_NODE_STATE:
		rc = node_state(st, r, ev, err);
		break;
	case XP_REC_NODE_REMOVE:
		rc = node_remove(st, r, ev, err);
		break;
	case XP_REC_NODE_HEALTH:
		rc = node_health(st, r, ev, err);
		break;
	case XP_REC_JOB_FINISH:
	case XP_REC_JOB_CANCEL:
		rc = job_end(st, r, at, ev, err);
		break;
	case XP_REC_JOB_TASK:
		rc = job_task(st, r, at, ev, err);
		break;
	case XP_REC_JOB_REQUEUE:
	case XP_REC_JOB_PREEMPT:
		rc = job_requeue(st, r, at, ev, err);
		break;
	case XP_REC_JOB_HOLD:
		rc = xp_job_hold_apply(st, r, ev, err);
		break;
	case XP_REC_JOB_UPDATE:
		rc = xp_job_update_apply(st, r, ev, err);
		break;
	case XP_REC_JOB_FORGET:
		rc = xp_state_job_forget(st, r, ev, err);
		break;
	case XP_REC_JOB_COUNTER:
		rc = job_counter(st, r, at, ev, err);
		break;
	case XP_REC_JOB_ENERGY:
		rc = job_energy(st, r, ev, err);
		break;
	case XP_REC_PRICES_SET:
		xp_meter_prices(st, r->u.prices);
		ev->type = "prices.set";
		ev->tenant = -2;
		rc = 0;
		break;
	case XP_REC_NODE_ADD:
		rc = node_add(st, r, ev, err);
		break;
	case XP_REC_NODE_MIG_LEAVE: /* migmode.c */
	case XP_REC_NODE_MIG_MODE:
	case XP_REC_NODE_MIG_DONE:
		rc = xp_migmode_apply(st, r, at, ev, err);
		break;
	case XP_REC_JOB_START:
		rc = job_start(st, r, at, ev, err);
		break;
	case XP_REC_JOB_RESIZE:
		rc = xp_elastic_resize_apply(st, r, at, ev, err);
		break;
	case XP_REC_SERVICE_CREATE:
	case XP_REC_SERVICE_UPDATE:
	case XP_REC_SERVICE_SCALE:
	case XP_REC_SERVICE_DELETE:
	case XP_REC_SERVICE_PROMOTE:
	case XP_REC_SERVICE_ROLLBACK:
	case XP_REC_SERVICE_ROLLED:
		rc = xp_service_apply(st, r, at, ev, err);
		break;
	case XP_REC_JOB_SUBMIT:
		rc = job_submit(st, r, at, ev, err);
		break;
	case XP_REC_QUEUE_CREATE:
	case XP_REC_QUEUE_UPDATE:
		rc = xp_queue_define(st, r->u.queue, r->type == XP_REC_QUEUE_UPDATE, ev, err);
		break;
	default:
		rc = xp_errf(err, XP_EINTERNAL, "record type %d is not a typed record", r->type);
	}
	if (rc == 0 && seq)
		st->seq = seq;
	return rc;
}
