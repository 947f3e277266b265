/*
 * state: creation, lookups, names and transitions, record builders and the
 * invariant check of the controller's state (see state.h). Applying records
 * is in apply.c, the scheduling cycle in cycle.c, snapshots in snapshot.c.
 */
#include "state_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/hash.h"
#include "../../lib/parse.h"
#include "../../lib/strbuf.h"
#include "../../lib/xalloc.h"
#include "../model/mig.h"

static const char *const job_states[XP_JOB_STATE_N] = { "pending", "running", "succeeded", "failed",
							"cancelled" };
static const char *const node_states[XP_NODE_STATE_N] = { "ready", "cordoned", "draining",
							  "drained", "down" };
static const char *const sources[XP_SRC_N] = { "emulated", "agent" };
static const char *const ends[XP_END_N] = { "", "oom", "limits", "time_limit", "start" };

const char *xp_end_name(int e)
{
	return e > 0 && e < XP_END_N ? ends[e] : "";
}

int xp_end_parse(const char *s)
{
	int e = s && *s ? xp_enum_parse(ends, XP_END_N, s) : -1;
	return e > 0 ? e : -1;
}

const char *xp_job_state_name(int s)
{
	return s >= 0 && s < XP_JOB_STATE_N ? job_states[s] : "?";
}
int xp_job_state_parse(const char *s)
{
	return xp_enum_parse(job_states, XP_JOB_STATE_N, s);
}
const char *xp_node_state_name(int s)
{
	return s >= 0 && s < XP_NODE_STATE_N ? node_states[s] : "?";
}
int xp_node_state_parse(const char *s)
{
	return xp_enum_parse(node_states, XP_NODE_STATE_N, s);
}
const char *xp_node_source_name(int s)
{
	return s >= 0 && s < XP_SRC_N ? sources[s] : "?";
}
int xp_node_source_parse(const char *s)
{
	return xp_enum_parse(sources, XP_SRC_N, s);
}

int xp_job_terminal(int s)
{
	return s == XP_JOB_SUCCEEDED || s == XP_JOB_FAILED || s == XP_JOB_CANCELLED;
}

int xp_job_transition_ok(int from, int to)
{
	switch (from) {
	case XP_JOB_PENDING: /* failed: not placed within its gang timeout */
		return to == XP_JOB_RUNNING || to == XP_JOB_CANCELLED || to == XP_JOB_FAILED;
	case XP_JOB_RUNNING: /* pending again: requeued after its node was lost */
		return to == XP_JOB_SUCCEEDED || to == XP_JOB_FAILED || to == XP_JOB_CANCELLED ||
		       to == XP_JOB_PENDING;
	default:
		return 0;
	}
}

int xp_node_transition_ok(int from, int to)
{
	if (from == to)
		return 0;
	switch (to) {
	case XP_NODE_READY:
		return 1; /* uncordon, undrain, a node that returns */
	case XP_NODE_CORDONED:
		return from == XP_NODE_READY;
	case XP_NODE_DRAINING:
		return from == XP_NODE_READY || from == XP_NODE_CORDONED;
	case XP_NODE_DRAINED:
		return from == XP_NODE_DRAINING;
	case XP_NODE_DOWN:
		return 1;
	}
	return 0;
}

/* ---- the state machines, checked at each transition ---- */

/* What holds in job j's state (controller.md, "Job states"): 0 or why not. */
static const char *job_state_wrong(const struct xp_state *st, const struct xp_job *j)
{
	switch (j->state) {
	case XP_JOB_PENDING:
		if (j->allocs || j->exited)
			return "pending with allocations held";
		if (j->finished_at)
			return "pending with finished_at set";
		return NULL;
	case XP_JOB_RUNNING:
		if (!j->allocs || !j->exited)
			return "running without its allocations";
		if (!j->attempts)
			return "running without an attempt counted";
		if (j->finished_at)
			return "running with finished_at set";
		if (j->spec.rmax && (j->spec.replicas < j->spec.rmin ||
				     j->spec.replicas > j->spec.rmax))
			return "elastic with a size outside min..max";
		for (uint32_t r = 0; r < j->spec.replicas; r++)
			if (j->allocs[r].node >= st->nodes.n ||
			    st->nodes.v[j->allocs[r].node].removed)
				return "running on a node that is not there";
		return NULL;
	default: /* terminal */
		if (!xp_job_terminal(j->state))
			return "in no known state";
		if (!j->finished_at)
			return "terminal without finished_at";
		if (j->exited)
			return "terminal with replicas still tracked";
		return NULL;
	}
}

int xp_job_check(const struct xp_state *st, const struct xp_job *j, int from, struct xp_err *err)
{
	const char *why = job_state_wrong(st, j);
	int to = j->state;
	if (why)
		return xp_errf(err, XP_EINTERNAL, "job %llu: %s", (unsigned long long)j->id, why);
	/* within a state: a pending job held or changed, a running one's
	 * replica exited, a failed one given its exit code after its time limit */
	if (from == to)
		return to == XP_JOB_PENDING || to == XP_JOB_RUNNING || to == XP_JOB_FAILED
			       ? 0
			       : xp_errf(err, XP_EINTERNAL, "job %llu: changed while %s",
					 (unsigned long long)j->id, xp_job_state_name(to));
	if (from < 0 ? to == XP_JOB_PENDING : xp_job_transition_ok(from, to))
		return 0;
	return xp_errf(err, XP_EINTERNAL, "job %llu: %s -> %s is not a transition of the diagram",
		       (unsigned long long)j->id, from < 0 ? "(none)" : xp_job_state_name(from),
		       xp_job_state_name(to));
}

int xp_node_check(const struct xp_state *st, uint32_t n, int from, struct xp_err *err)
{
	const struct xp_nodeinfo *ni = &st->nodes.v[n];
	const char *name = st->c->nodes[n].name;
	int to = ni->state;
	if (to >= XP_NODE_STATE_N)
		return xp_errf(err, XP_EINTERNAL, "node %s: in no known state", name);
	if (ni->jobs != ni->run.n)
		return xp_errf(err, XP_EINTERNAL, "node %s: %u jobs counted, %zu listed", name,
			       ni->jobs, ni->run.n);
	if ((to == XP_NODE_DRAINED || ni->removed) && ni->jobs)
		return xp_errf(err, XP_EINTERNAL, "node %s: %s with %u running replicas", name,
			       ni->removed ? "removed" : "drained", ni->jobs);
	/* as xp_node_transition_ok, and a drain with nothing to wait for,
	 * which is drained at once; from == to: removed, or its health changed */
	int drained_at_once =
		to == XP_NODE_DRAINED && (from == XP_NODE_READY || from == XP_NODE_CORDONED);
	if (from < 0 ? to == XP_NODE_READY
		     : from == to || drained_at_once || xp_node_transition_ok(from, to))
		return 0;
	return xp_errf(err, XP_EINTERNAL, "node %s: %s -> %s is not a transition of the table",
		       name, from < 0 ? "(none)" : xp_node_state_name(from),
		       xp_node_state_name(to));
}

/* assert()'s own failure path, the reason as its text: the core prints
 * nothing itself (cli_core_pure) */
void xp_state_assert_fail(const char *file, int line, const struct xp_err *err)
{
#ifdef NDEBUG /* no checks call it then, and <assert.h> declares no __assert_fail */
	(void)file;
	(void)line;
	(void)err;
	__builtin_trap();
#else
	__assert_fail(err->text, file, (unsigned)line, "a state machine check");
#endif
}

struct xp_state *xp_state_create(const struct xp_state_opts *o, struct xp_err *err)
{
	if (!o || !o->docs) {
		xp_errf(err, XP_EINVAL, "state: no document readers (xp_state_opts.docs)");
		return NULL;
	}
	struct xp_state *st = XNEW(struct xp_state);
	st->docs = o->docs;
	st->sopts.policy = o && o->policy ? o->policy : "bestfit";
	st->sopts.tiebreak = o ? o->tiebreak : XP_TIE_RANK;
	if (o)
		memcpy(st->sopts.weights, o->weights, sizeof(st->sopts.weights));
	st->fifo = o && o->fifo;
	if (o)
		st->batch = o->batch;
	st->c = xp_cluster_create();
	st->sched = xp_sched_create(st->c, &st->sopts, err);
	if (!st->sched) {
		xp_cluster_destroy(st->c);
		free(st);
		return NULL;
	}
	st->node_names = xp_strtab_create();
	st->keys = xp_strtab_create();
	xp_intmap_init(&st->job_by_id);
	st->next_job_id = 1;
	st->next_token_id = 1;
	return st;
}

void xp_state_job_free(struct xp_job *j)
{
	if (!j)
		return;
	free(j->key);
	free(j->reason);
	free(j->allocs);
	free(j->exited);
	free(j->resize_why);
	xp_jobspec_free(&j->spec);
	free(j);
}

void xp_state_destroy(struct xp_state *st)
{
	if (!st)
		return;
	xp_cycle_abort(st);
	xp_backfill_free(st->resv);
	xp_deps_free(st);
	xp_meter_free(&st->meter);
	xp_possible_cache_free(st->possible);
	xp_vec_free(&st->workload);
	xp_services_free(st);
	for (size_t i = 0; i < st->jobs.n; i++)
		xp_state_job_free(st->jobs.v[i]);
	xp_vec_free(&st->jobs);
	xp_vec_free(&st->pending);
	xp_vec_free(&st->fresh);
	xp_intmap_free(&st->job_by_id);
	for (size_t i = 0; i < st->tenants.n; i++)
		free(st->tenants.v[i].name);
	xp_vec_free(&st->tenants);
	for (size_t i = 0; i < st->tokens.n; i++) {
		free(st->tokens.v[i].name);
		free(st->tokens.v[i].node);
	}
	xp_vec_free(&st->tokens);
	for (size_t i = 0; i < st->queues.n; i++) {
		free(st->queues.v[i].name);
		free(st->queues.v[i].allow);
	}
	xp_vec_free(&st->queues);
	for (size_t n = 0; n < st->nodes.n; n++) {
		for (uint16_t d = 0; st->nodes.v[n].dev_why && d < st->c->nodes[n].ndevs; d++)
			free(st->nodes.v[n].dev_why[d]);
		free(st->nodes.v[n].dev_why);
		free(st->nodes.v[n].mm);
		xp_vec_free(&st->nodes.v[n].run);
	}
	xp_vec_free(&st->nodes);
	xp_vec_free(&st->node_of_sym);
	xp_vec_free(&st->key_job);
	xp_vec_free(&st->done);
	xp_strtab_destroy(st->node_names);
	xp_strtab_destroy(st->keys);
	xp_sched_destroy(st->sched);
	xp_cluster_destroy(st->c);
	free(st);
}

struct xp_job *xp_state_job(const struct xp_state *st, uint64_t id)
{
	return xp_intmap_get(&st->job_by_id, id);
}

long xp_state_tenant(const struct xp_state *st, const char *name)
{
	for (size_t i = 0; i < st->tenants.n; i++)
		if (!strcmp(st->tenants.v[i].name, name))
			return (long)i;
	return -1;
}

long xp_state_queue(const struct xp_state *st, const char *name)
{
	for (size_t i = 0; i < st->queues.n; i++)
		if (!st->queues.v[i].deleted && !strcmp(st->queues.v[i].name, name))
			return (long)i;
	return -1;
}

long xp_state_node(const struct xp_state *st, const char *name)
{
	xp_sym s = xp_strtab_find(st->node_names, name);
	if (!s || s >= st->node_of_sym.n || st->node_of_sym.v[s] == UINT32_MAX)
		return -1;
	return st->node_of_sym.v[s];
}

void xp_state_key(const struct xp_state *st, uint32_t tenant, const char *key, char *buf,
		  size_t len)
{
	snprintf(buf, len, "%s\x01%s", st->tenants.v[tenant].name, key);
}

uint64_t xp_state_job_by_key(const struct xp_state *st, uint32_t tenant, const char *key)
{
	char buf[512];
	xp_state_key(st, tenant, key, buf, sizeof(buf));
	xp_sym s = xp_strtab_find(st->keys, buf);
	return s && s < st->key_job.n ? st->key_job.v[s] : 0;
}

/* ---- allocations as records carry them (decoded by the codec) ---- */

int xp_allocs_resolve(const struct xp_state *st, const struct xp_rec_alloc *in, uint32_t n,
		      struct xp_alloc *a, struct xp_err *err)
{
	for (uint32_t r = 0; r < n; r++) {
		const struct xp_rec_alloc *x = &in[r];
		/* by index when given (snapshots keep removed nodes), else by name */
		long idx = -1;
		if (x->has_index) {
			int64_t v = x->node_index;
			if (v >= 0 && (uint64_t)v < st->c->nnodes &&
			    !strcmp(st->c->nodes[v].name, x->node))
				idx = (long)v;
		} else {
			idx = xp_state_node(st, x->node);
		}
		if (idx < 0)
			return xp_errf(err, XP_ENOENT, "allocation %u: no node %s", r, x->node);
		memset(&a[r], 0, sizeof(a[r]));
		a[r].node = (uint32_t)idx;
		a[r].cpu_milli = x->cpu_milli;
		a[r].mem_mib = x->mem_mib;
		a[r].dev_milli = x->dev_milli;
		a[r].dev_mem_mib = x->dev_mem_mib;
		a[r].ndev = x->ndev;
		memcpy(a[r].devs, x->devs, x->ndev);
		a[r].mig = x->mig;
		a[r].mig_start = x->mig_start;
	}
	return 0;
}


/* The compute milli j's allocation x must take per device: a share sized
 * by memory takes its part of the device it landed on, one whole device of
 * a time-sliced device with replicas one replica, a MIG slice its
 * profile's (mig: any chooses the profile where it is placed). */
static uint16_t alloc_milli(const struct xp_state *st, const struct xp_job *j,
			    const struct xp_alloc *x)
{
	if (x->mig) /* a MIG slice counts its profile's compute slices / 7 */
		return xp_mig_kind_milli(x->mig - 1);
	if (x->ndev != 1 || x->devs[0] >= st->c->nodes[x->node].ndevs)
		return j->req.dev_milli;
	return xp_slot_milli(&st->c->nodes[x->node].devs[x->devs[0]], j->req.dev_count,
			     j->req.dev_milli, j->req.by_mem, j->req.dev_mem_mib);
}

int xp_alloc_matches(const struct xp_state *st, const struct xp_job *j, const struct xp_alloc *x)
{
	return x->cpu_milli == j->req.cpu_milli && x->mem_mib == j->req.mem_mib &&
	       x->ndev == j->req.dev_count && !x->mig == !j->req.mig &&
	       (!x->ndev || x->dev_milli == alloc_milli(st, j, x) ||
		/* whole devices of a colocated gang, replicas or not */
		(x->dev_milli == XP_MILLI && j->req.dev_milli >= XP_MILLI && !j->req.by_mem) ||
		/* journals before mig: any held the request's milli */
		(x->mig && !j->req.mig_any && x->dev_milli == j->req.dev_milli));
}

struct xp_rec_alloc *xp_allocs_rec(const struct xp_state *st, const struct xp_alloc *a, uint32_t n)
{
	struct xp_rec_alloc *r = XNEWV(struct xp_rec_alloc, n + 1);
	for (uint32_t i = 0; i < n; i++) {
		r[i].node = st->c->nodes[a[i].node].name;
		r[i].has_index = 1;
		r[i].node_index = a[i].node;
		r[i].cpu_milli = a[i].cpu_milli;
		r[i].mem_mib = a[i].mem_mib;
		r[i].dev_milli = a[i].dev_milli;
		r[i].dev_mem_mib = a[i].dev_mem_mib;
		r[i].ndev = a[i].ndev;
		memcpy(r[i].devs, a[i].devs, a[i].ndev);
		r[i].mig = a[i].mig;
		r[i].mig_start = a[i].mig_start;
	}
	return r;
}











/* ---- invariants ---- */

int xp_state_check(const struct xp_state *st, struct xp_err *err)
{
	uint64_t count[XP_JOB_STATE_N] = { 0 };
	uint32_t *node_jobs = XNEWV(uint32_t, st->nodes.n ? st->nodes.n : 1);
	uint32_t *qp = XNEWV(uint32_t, st->queues.n ? st->queues.n : 1);
	uint32_t *qr = XNEWV(uint32_t, st->queues.n ? st->queues.n : 1);
	int rc = 0;

	for (size_t i = 0; i < st->jobs.n && rc == 0; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (i && st->jobs.v[i - 1]->id >= j->id)
			rc = xp_errf(err, XP_EINTERNAL, "job ids out of order at %llu",
				     (unsigned long long)j->id);
		else if (xp_state_job(st, j->id) != j)
			rc = xp_errf(err, XP_EINTERNAL, "job %llu missing from the id map",
				     (unsigned long long)j->id);
		else if ((j->state == XP_JOB_RUNNING && !j->allocs) ||
			 (j->state == XP_JOB_PENDING && j->allocs))
			rc = xp_errf(err, XP_EINTERNAL, "job %llu: %s with%s allocations",
				     (unsigned long long)j->id, xp_job_state_name(j->state),
				     j->allocs ? "" : "out");
		else if (xp_job_terminal(j->state) && !j->finished_at)
			rc = xp_errf(err, XP_EINTERNAL, "job %llu: %s without finished_at",
				     (unsigned long long)j->id, xp_job_state_name(j->state));
		if (rc)
			break;
		count[j->state]++;
		if (j->state == XP_JOB_PENDING)
			qp[j->queue]++;
		if (j->state == XP_JOB_RUNNING) {
			qr[j->queue]++;
			for (uint32_t r = 0; r < j->spec.replicas; r++)
				node_jobs[j->allocs[r].node]++;
		}
	}
	for (int s = 0; rc == 0 && s < XP_JOB_STATE_N; s++)
		if (count[s] != st->count[s])
			rc = xp_errf(err, XP_EINTERNAL, "%llu %s jobs counted, %llu present",
				     (unsigned long long)st->count[s], xp_job_state_name(s),
				     (unsigned long long)count[s]);
	for (size_t n = 0; rc == 0 && n < st->nodes.n; n++) {
		const struct xp_nodeinfo *ni = &st->nodes.v[n];
		for (size_t k = 0; rc == 0 && k < ni->run.n; k++) {
			const struct xp_replica_ref *x = &ni->run.v[k];
			if (x->job->state != XP_JOB_RUNNING ||
			    x->replica >= x->job->spec.replicas ||
			    x->job->allocs[x->replica].node != n)
				rc = xp_errf(err, XP_EINTERNAL,
					     "node %s lists job %llu replica %u, not running there",
					     st->c->nodes[n].name, (unsigned long long)x->job->id,
					     x->replica);
		}
		if (rc == 0 && ni->run.n != ni->jobs)
			rc = xp_errf(err, XP_EINTERNAL, "node %s: %zu replicas listed, %u counted",
				     st->c->nodes[n].name, ni->run.n, ni->jobs);
	}
	for (size_t n = 0; rc == 0 && n < st->nodes.n; n++)
		if (node_jobs[n] != st->nodes.v[n].jobs)
			rc = xp_errf(err, XP_EINTERNAL, "node %s: %u jobs counted, %u running",
				     st->c->nodes[n].name, st->nodes.v[n].jobs, node_jobs[n]);
	for (size_t q = 0; rc == 0 && q < st->queues.n; q++)
		if (qp[q] != st->queues.v[q].pending || qr[q] != st->queues.v[q].running)
			rc = xp_errf(err, XP_EINTERNAL, "queue %s: counts %u/%u, present %u/%u",
				     st->queues.v[q].name, st->queues.v[q].pending,
				     st->queues.v[q].running, qp[q], qr[q]);
	if (rc == 0)
		rc = xp_usage_check(st, err);
	if (rc == 0)
		rc = xp_deps_check_state(st, err);
	if (rc == 0 && !st->sched_stale)
		rc = xp_sched_check_invariants(st->sched, err);
	free(node_jobs);
	free(qp);
	free(qr);
	return rc;
}

void xp_node_run_add(struct xp_state *st, uint32_t n, struct xp_job *j, uint32_t r)
{
	struct xp_replica_ref x = { j, r };
	xp_vec_push(&st->nodes.v[n].run, x);
	st->nodes.v[n].jobs++;
}

void xp_node_run_del(struct xp_state *st, uint32_t n, const struct xp_job *j, uint32_t r)
{
	struct xp_nodeinfo *ni = &st->nodes.v[n];
	for (size_t k = 0; k < ni->run.n; k++) {
		if (ni->run.v[k].job == j && ni->run.v[k].replica == r) {
			ni->run.v[k] = ni->run.v[--ni->run.n];
			ni->jobs--;
			return;
		}
	}
}

int64_t xp_job_deadline(const struct xp_job *j)
{
	if (j->spec.deadline_ms)
		return j->spec.deadline_ms;
	return j->spec.deadline_in_ms ? j->submitted_at + j->spec.deadline_in_ms : 0;
}

const char *xp_job_deadline_status(const struct xp_job *j, int64_t now)
{
	int64_t d = xp_job_deadline(j);
	if (!d)
		return NULL;
	if (xp_job_terminal(j->state))
		return j->state == XP_JOB_SUCCEEDED && j->finished_at <= d ? "met" : "missed";
	if (now > d)
		return "missed";
	int64_t end = j->state == XP_JOB_RUNNING ? j->started_at : now;
	if (j->spec.time_limit_ms && end + j->spec.time_limit_ms > d)
		return "at_risk";
	return "ok";
}

