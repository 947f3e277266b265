/*
 * owner: the one thread that owns the controller's state (ARCHITECTURE.md
 * contract 2). It takes the commands HTTP workers queue, runs them, journals
 * what they change, runs the scheduling cycle, finishes emulated tasks and
 * writes snapshots.
 *
 * Journaling (xp_ctl_journal): apply the record first - that is the check;
 * a refused record changes nothing and is never written - then append it to
 * the store and publish its event. Memory is thus ahead of the disk by the
 * records in flight, so no reply may leave before they are durable: a
 * command that journaled, and any other command (a read) run while records
 * are in flight, is answered from the store thread once everything
 * appended before it is durable; only a command run with nothing in flight
 * is answered at once. A reply never shows a record that did not commit.
 *
 * Fail-stop: once the store fails (a commit or its seal failed: disk full,
 * I/O error), memory holds records the disk does not. The store thread's
 * callback drops ready at once (HTTP then answers 503 to everything) and
 * wakes the owner, which refuses every command still queued, reads
 * included, stops the cycle and snapshots, and calls o.on_fatal (`xpool
 * server` exits 1). The commands whose records were lost get 500 from their
 * waiters. After a restart the state, job ids included, is what was durable.
 *
 * The loop: take all queued commands, run them, then once more what queued
 * meanwhile (heartbeats count before liveness is judged); finish due
 * emulated tasks; judge the agents' liveness;
 * run the cycle (bounded per call, repeated while it has work, but a queued
 * command is served between two calls); write a snapshot when due; then
 * sleep until a command arrives or the next tick.
 */
#include "ctl.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../edge/edge.h"
#include "../lib/clock.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"

/* back-pressure: mutations wait (503) while this many records are in flight */
#define XP_MAX_INFLIGHT 200000

int64_t xp_ctl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- command completion ---- */

static void cmd_done(struct xp_cmd *cmd)
{
	if (cmd->on_done) { /* http.c: resume the connection; cmd is its now */
		cmd->on_done(cmd);
		return;
	}
	pthread_mutex_lock(&cmd->mu);
	cmd->done = 1;
	pthread_cond_signal(&cmd->cv);
	pthread_mutex_unlock(&cmd->mu);
}

/* store thread: what the command's reply shows is durable (or the store failed, and the reply
 * is replaced: it may show records that are lost) */
static void cmd_durable(void *arg, int rc)
{
	struct xp_cmd *cmd = arg;
	if (rc < 0)
		xp_reply_error(cmd, XP_EIO, NULL,
			       "the journal could not be written (%s); the controller is stopping",
			       xp_strerror(rc));
	cmd_done(cmd);
}

/* store thread: publish the events now durable; on a failure, stop being ready this moment
 * and wake the owner to stop the rest */
static void events_durable(void *arg, int rc)
{
	struct xp_ctl *ctl = arg;
	if (rc == 0) {
		xp_events_durable(ctl->ev, xp_store_durable_seq(ctl->store));
		xp_park_wake(ctl, XP_PARK_EVENTS);
		return;
	}
	ctl->ready = 0;
	pthread_mutex_lock(&ctl->qmu);
	pthread_cond_signal(&ctl->qcv);
	pthread_mutex_unlock(&ctl->qmu);
}

/* Owner: the store failed. Refuse everything from now on and tell whoever runs us. */
static void fail_stop(struct xp_ctl *ctl)
{
	struct xp_err err = { 0 };
	if (ctl->fatal)
		return;
	ctl->fatal = 1;
	ctl->ready = 0;
	xp_store_failure(ctl->store, &err);
	fprintf(stderr, "xpool server: the journal failed, stopping: %s\n",
		err.text[0] ? err.text : "the store refused a record");
	if (ctl->o.on_fatal)
		ctl->o.on_fatal(ctl->o.fatal_arg);
}

/* queue cmd for the owner; 0, or -1 when it stops (cmd answered 503) */
static int enqueue(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	cmd->next = NULL;
	pthread_mutex_lock(&ctl->qmu);
	if (ctl->stopping) {
		pthread_mutex_unlock(&ctl->qmu);
		xp_reply_error(cmd, XP_EUNAVAIL, NULL, "the controller is stopping");
		return -1;
	}
	if (ctl->qtail)
		ctl->qtail->next = cmd;
	else
		ctl->qhead = cmd;
	ctl->qtail = cmd;
	pthread_cond_signal(&ctl->qcv);
	pthread_mutex_unlock(&ctl->qmu);
	return 0;
}

void xp_owner_submit(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	if (enqueue(ctl, cmd) < 0)
		cmd->on_done(cmd);
}

void xp_owner_call(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	pthread_mutex_init(&cmd->mu, NULL);
	pthread_cond_init(&cmd->cv, NULL);
	cmd->done = 0;
	cmd->on_done = NULL;
	if (enqueue(ctl, cmd) < 0) {
		pthread_mutex_destroy(&cmd->mu);
		pthread_cond_destroy(&cmd->cv);
		return;
	}
	pthread_mutex_lock(&cmd->mu);
	while (!cmd->done)
		pthread_cond_wait(&cmd->cv, &cmd->mu);
	pthread_mutex_unlock(&cmd->mu);
	pthread_mutex_destroy(&cmd->mu);
	pthread_cond_destroy(&cmd->cv);
}

/* ---- journaling ---- */

char *xp_event_json(struct xp_ctl *ctl, uint64_t seq, int64_t at, const struct xp_event_info *ev)
{
	struct xp_state *st = ctl->st;
	char ts[XP_TIME_LEN];
	json_t *o;

	xp_time_format(at, ts);
	o = json_pack("{s:I,s:s,s:s}", "seq", (json_int_t)seq, "at", ts, "type", ev->type);
	if (ev->job) {
		const struct xp_job *j = xp_state_job(st, ev->job);
		json_object_set_new(o, "job", json_integer((json_int_t)ev->job));
		if (j) {
			json_object_set_new(o, "tenant",
					    json_string(st->tenants.v[j->tenant].name));
			if (j->spec.name)
				json_object_set_new(o, "name", json_string(j->spec.name));
		}
	}
	if (ev->state >= 0)
		json_object_set_new(o, "state",
				    json_string(ev->job ? xp_job_state_name(ev->state)
							: xp_node_state_name(ev->state)));
	if (ev->node >= 0)
		json_object_set_new(o, "node", json_string(st->c->nodes[ev->node].name));
	return xp_json_take(o);
}

void xp_emu_schedule(struct xp_ctl *ctl, const struct xp_job *j)
{
	if (j->state != XP_JOB_RUNNING || j->spec.duration_ms < 0)
		return;
	for (uint32_t r = 0; r < j->spec.replicas; r++)
		if (ctl->st->nodes.v[j->allocs[r].node].source != XP_SRC_EMULATED)
			return;
	struct xp_due e = { .due = j->started_at + j->spec.duration_ms,
			    .job = j->id,
			    .attempt = j->attempts };
	xp_due_push(&ctl->emu, e);
}

void xp_auth_refresh(struct xp_ctl *ctl)
{
	struct xp_state *st = ctl->st;
	struct xp_auth_ent *a = XNEWV(struct xp_auth_ent, st->tokens.n ? st->tokens.n : 1), *old;
	size_t n = 0;
	for (size_t i = 0; i < st->tokens.n; i++) {
		const struct xp_token *t = &st->tokens.v[i];
		if (t->revoked)
			continue;
		memcpy(a[n].sha256, t->sha256, 65);
		a[n].tenant = t->tenant;
		a[n].scope = t->scope;
		snprintf(a[n++].node, sizeof(a->node), "%s", t->node ? t->node : "");
	}
	pthread_rwlock_wrlock(&ctl->auth_lock);
	old = ctl->auth;
	ctl->auth = a;
	ctl->nauth = n;
	pthread_rwlock_unlock(&ctl->auth_lock);
	free(old);
}

/* May a token of scope `who` (node: its node) call a route for `need` on
 * path node `name` ("" none)? 0 or XP_EPERM with the reason. */
static int scope_allows(int who, const char *node, int need, const char *name, struct xp_err *err)
{
	static const char boot[] = "a bootstrap token only joins an agent (POST /v1/agents/join)";
	if (who == XP_SCOPE_ADMIN)
		return 0;
	if (who == XP_SCOPE_BOOTSTRAP)
		return need == XP_ROUTE_JOIN ? 0 : xp_errf(err, XP_EPERM, "%s", boot);
	switch (need) {
	case XP_ROUTE_TENANT:
		return who == XP_SCOPE_TENANT
			       ? 0
			       : xp_errf(err, XP_EPERM,
					 "a node credential is for its agent's endpoints only");
	case XP_ROUTE_ADMIN:
		return xp_errf(err, XP_EPERM, "this needs an admin token");
	case XP_ROUTE_NODE:
		if (who != XP_SCOPE_NODE)
			return xp_errf(err, XP_EPERM,
				       "this is an agent's: it needs the node's credential (or an "
				       "admin token)");
		if (name[0] && strcmp(name, node))
			return xp_errf(err, XP_EPERM, "this credential is node %s's, not %s's",
				       node, name);
		return 0;
	default: /* XP_ROUTE_JOIN */
		return xp_errf(err, XP_EPERM, "this needs a bootstrap token (or an admin token)");
	}
}

int xp_auth_admit(struct xp_ctl *ctl, struct xp_cmd *cmd, struct xp_err *err)
{
	int found = 0;
	if (!cmd->has_token)
		return xp_errf(err, XP_EAUTH, "missing 'Authorization: Bearer <token>'");
	pthread_rwlock_rdlock(&ctl->auth_lock);
	for (size_t i = 0; i < ctl->nauth && !found; i++)
		if (!strcmp(ctl->auth[i].sha256, cmd->token_sha)) {
			cmd->tenant = ctl->auth[i].tenant;
			cmd->scope = ctl->auth[i].scope;
			cmd->admin = cmd->scope == XP_SCOPE_ADMIN;
			memcpy(cmd->cred_node, ctl->auth[i].node, sizeof(cmd->cred_node));
			found = 1;
		}
	pthread_rwlock_unlock(&ctl->auth_lock);
	if (!found)
		return xp_errf(err, XP_EAUTH, "unknown or revoked token");
	return scope_allows(cmd->scope, cmd->cred_node, cmd->need, cmd->name, err);
}

/* The run of job that just ended: what the agents measured goes into its
 * usage record, their mean power stretched over the whole run when the
 * reports covered only part of it (a restart, a late first beat). */
static void energy_on_end(struct xp_ctl *ctl, const struct xp_job *job)
{
	struct xp_energy *e = xp_intmap_del(&ctl->energy, job->id);
	const struct xp_meter_run *last =
		ctl->st->meter.runs.n ? &ctl->st->meter.runs.v[ctl->st->meter.runs.n - 1] : NULL;
	if (e && e->attempt == job->attempts && e->joules >= 1 && e->ms > 0 && last &&
	    last->job == job->id) {
		double run_ms = (double)(last->end - last->start), j = e->joules;
		if (run_ms > (double)e->ms)
			j *= run_ms / (double)e->ms;
		struct xp_err e2 = { 0 };
		if (xp_ctl_journal(ctl, "job.energy",
				   xp_rec_job_energy(job->id, e->attempt, (uint64_t)j), &e2) < 0)
			fprintf(stderr, "xpool server: job %llu energy: %s\n",
				(unsigned long long)job->id, e2.text);
	}
	free(e);
}

/* the job a job.* record other than job.submit names, NULL none */
static const struct xp_job *record_job(struct xp_ctl *ctl, const char *type, const char *body)
{
	if (strncmp(type, "job.", 4) || !strcmp(type, "job.submit"))
		return NULL;
	json_error_t je;
	json_t *o = json_loads(body, 0, &je);
	const struct xp_job *job =
		xp_state_job(ctl->st, (uint64_t)json_integer_value(json_object_get(o, "id")));
	json_decref(o);
	return job;
}

/* a job.submit's decoded form: applied as it is, not parsed from the body */
struct typed_submit {
	uint64_t id;
	const char *tenant, *key;
	struct xp_jobspec *spec; /* taken */
};

static int journal(struct xp_ctl *ctl, const char *type, char *body, struct typed_submit *ts,
		   struct xp_err *err)
{
	struct xp_event_info ev;
	int64_t now = xp_ctl_now();
	int rc = 0;

	if (!body)
		rc = xp_errf(err, XP_EINTERNAL, "%s: could not encode the record", type);
	else if (ctl->fatal)
		rc = xp_errf(err, XP_EIO, "the journal failed; the controller is stopping");
	if (rc < 0) {
		if (ts)
			xp_jobspec_free(ts->spec);
		free(body);
		return rc;
	}
	/* the nodes whose assignments this may change: those of the job's
	 * running attempt before and after (a watcher asks the owner, which is
	 * busy here, so bumping before the change is safe) */
	const struct xp_job *job = record_job(ctl, type, body);
	for (uint32_t r = 0; job && job->state == XP_JOB_RUNNING && r < job->spec.replicas; r++)
		xp_watch_bump(ctl, job->allocs[r].node);
	if (!strncmp(type, "node.", 5)) /* a node added, changed or removed */
		atomic_fetch_add(&ctl->node_epoch, 1);
	/* a resize moves a running job's replicas: its new nodes hear of it too */
	int was_running = job && job->state == XP_JOB_RUNNING && strcmp(type, "job.resize");
	rc = ts ? xp_state_submit(ctl->st, now, ts->id, ts->tenant, ts->key, ts->spec, &ev, err)
		: xp_rec_apply(ctl->st, 0, now, type, body, strlen(body), &ev, err);
	if (rc < 0) {
		free(body);
		return rc;
	}
	for (uint32_t r = 0;
	     job && !was_running && job->state == XP_JOB_RUNNING && r < job->spec.replicas; r++)
		xp_watch_bump(ctl, job->allocs[r].node);
	if (!strncmp(type, "node.mig_mode", 13) && ev.node >= 0) /* its agent's orders changed */
		xp_watch_bump(ctl, (uint32_t)ev.node);
	uint64_t seq = xp_store_append(ctl->store, type, body, strlen(body), now);
	free(body);
	if (seq == 0) { /* the store has failed: memory is now ahead of the disk */
		fail_stop(ctl);
		return xp_errf(err, XP_EIO, "the journal failed; the controller is stopping");
	}
	ctl->st->seq = seq;
	ctl->since_snapshot++;
	xp_events_add(ctl->ev, seq, ev.tenant, ev.type, xp_event_json(ctl, seq, now, &ev));
	xp_alert_feed_record(ctl, type, &ev, now);
	if (!strncmp(type, "token.", 6))
		xp_auth_refresh(ctl);
	if (!strcmp(type, "job.preempt"))
		ctl->m.preemptions++;
	if (job && was_running && (job->state != XP_JOB_RUNNING || !job->allocs)) {
		energy_on_end(ctl, job);
		free(xp_intmap_del(&ctl->gpu_use, job->id)); /* the run ended */
		if (xp_intmap_get(&ctl->svc_live, job->id)) { /* out of its service's endpoints */
			free(xp_intmap_del(&ctl->svc_live, job->id));
			xp_ep_bump(ctl);
		}
	}
	if (ev.job && !strcmp(type, "job.start")) {
		ctl->m.starts++;
		const struct xp_job *j = xp_state_job(ctl->st, ev.job);
		xp_hist_add(&ctl->m.sched_latency, (double)(j->started_at - j->submitted_at) / 1e3);
		xp_emu_schedule(ctl, j);
	}
	return 0;
}

int xp_ctl_journal(struct xp_ctl *ctl, const char *type, char *body, struct xp_err *err)
{
	return journal(ctl, type, body, NULL, err);
}

int xp_ctl_journal_submit(struct xp_ctl *ctl, uint64_t id, const char *tenant, const char *key,
			  struct xp_jobspec *spec, struct xp_err *err)
{
	struct typed_submit ts = { id, tenant, key, spec };
	return journal(ctl, "job.submit", xp_rec_job_submit(id, tenant, key, spec), &ts, err);
}

static int cycle_emit(void *ctx, const struct xp_rec *r)
{
	struct xp_err err = { 0 };
	const char *type = xp_rec_type_name(r->type);
	int rc = xp_ctl_journal(ctx, type, xp_rec_encode(r), &err);
	if (rc < 0)
		fprintf(stderr, "xpool server: the cycle's %s was refused: %s\n", type, err.text);
	return rc;
}

/* ---- the loop ---- */

/* cmd to the end of the queue for its next turn: 0, or -1 when stopping */
static int requeue(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	int rc = -1;
	pthread_mutex_lock(&ctl->qmu);
	if (!ctl->stopping) {
		cmd->next = NULL;
		if (ctl->qtail)
			ctl->qtail->next = cmd;
		else
			ctl->qhead = cmd;
		ctl->qtail = cmd;
		rc = 0;
	}
	pthread_mutex_unlock(&ctl->qmu);
	return rc;
}

static void run(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	int write = strcmp(cmd->method, "GET") != 0;
	struct xp_err aerr = { 0 };
	if (atomic_load(&ctl->follower) && (write || cmd->need == XP_ROUTE_NODE)) {
		/* the edge sends these to the leader; one admitted as the lead changed */
		xp_reply_error(cmd, XP_EUNAVAIL, NULL,
			       "this controller follows: the leader takes writes; retry");
		cmd_done(cmd);
		return;
	}
	if (ctl->fatal) { /* reads too: memory holds records that did not commit */
		xp_reply_error(cmd, XP_EUNAVAIL, NULL,
			       "the journal failed; the controller is stopping");
		cmd_done(cmd);
		return;
	} else if (!cmd->turns && write &&
		   xp_store_last_seq(ctl->store) - xp_store_durable_seq(ctl->store) >
			   XP_MAX_INFLIGHT) {
		xp_reply_error(cmd, XP_EUNAVAIL, NULL, "the journal is %d records behind; retry",
			       XP_MAX_INFLIGHT);
	} else if (!cmd->turns && xp_store_stalled(ctl->store, &aerr) < 0) {
		/* etcd refuses or does not answer the commit being retried (NOSPACE, no quorum):
		 * say so now, reads too - they would wait for it, being durable before shown */
		xp_reply_error(cmd, XP_EUNAVAIL, NULL, "%s", aerr.text);
		cmd_done(cmd);
		return;
	} else if (!cmd->turns && xp_auth_admit(ctl, cmd, &aerr) < 0) {
		/* checked at the edge too; this catches a token revoked meanwhile */
		xp_reply_error(cmd, aerr.code, NULL, "%s", aerr.text);
	} else {
		cmd->fn(ctl, cmd);
	}
	if (cmd->again) {
		cmd->again = 0;
		cmd->turns++;
		if (requeue(ctl, cmd) == 0)
			return;
		xp_reply_error(cmd, XP_EUNAVAIL, NULL,
			       "the controller is stopping; part of the request was done (see the "
			       "events)");
	}
	/* durable before shown: the reply waits for every record appended so far */
	if (cmd->journaled || xp_store_last_seq(ctl->store) != xp_store_durable_seq(ctl->store))
		xp_store_when_durable(ctl->store, cmd_durable, cmd);
	else
		cmd_done(cmd);
}

static void finish_due(struct xp_ctl *ctl, int64_t now)
{
	while (xp_due_ready(&ctl->emu, now)) {
		struct xp_due e = xp_due_pop(&ctl->emu);
		struct xp_job *j = xp_state_job(ctl->st, e.job);
		if (!j || j->state != XP_JOB_RUNNING || j->attempts != e.attempt)
			continue; /* cancelled, preempted or requeued meanwhile */
		struct xp_err err = { 0 };
		int code = j->spec.exit_code;
		char *body = xp_rec_job_finish(j->id, code ? XP_JOB_FAILED : XP_JOB_SUCCEEDED, code,
					       code ? "exited with a non-zero code" : NULL);
		if (xp_ctl_journal(ctl, "job.finish", body, &err) < 0)
			fprintf(stderr, "xpool server: job %llu: %s\n", (unsigned long long)j->id,
				err.text);
	}
}

/* Time limits and gang timeouts, looked for once a second: the jobs the
 * clock stops fail with the reason. A time limit is end reason
 * time_limit, like Slurm's TIMEOUT: on emulated nodes the job ends as a
 * task stopped by SIGTERM would (143); on an agent's node the job ends now
 * without an exit code, its agent, seeing the replica leave its
 * assignments, sends SIGTERM (SIGKILL after its grace), and its report
 * then gives the job the real exit code and signal (api_agents.c). */
static char *overdue_record(struct xp_ctl *ctl, const struct xp_overdue *d)
{
	char why[480];
	struct xp_exit x = { 0 };
	if (!d->time_limit)
		return xp_rec_job_finish(d->id, XP_JOB_FAILED, 0, d->why);
	const struct xp_job *j = xp_state_job(ctl->st, d->id);
	int emulated = 1;
	for (uint32_t r = 0; j && j->allocs && r < j->spec.replicas; r++)
		emulated &= ctl->st->nodes.v[j->allocs[r].node].source == XP_SRC_EMULATED;
	x.end = XP_END_TIME_LIMIT;
	if (emulated) {
		x.has_code = 1;
		x.code = 128 + SIGTERM;
		x.signal = SIGTERM;
	}
	snprintf(why, sizeof(why), "time_limit: %s", d->why);
	return xp_rec_job_finish_x(d->id, XP_JOB_FAILED, &x, why);
}

static void overdue(struct xp_ctl *ctl, int64_t now)
{
	enum { BATCH = 256 };
	static struct xp_overdue due[BATCH];
	if (now < ctl->overdue_next)
		return;
	ctl->overdue_next = now + 1000;
	size_t n = xp_state_overdue(ctl->st, now, due, BATCH);
	for (size_t i = 0; i < n; i++) {
		struct xp_err err = { 0 };
		if (xp_ctl_journal(ctl, "job.finish", overdue_record(ctl, &due[i]), &err) < 0)
			fprintf(stderr, "xpool server: job %llu: %s\n",
				(unsigned long long)due[i].id, err.text);
	}
	if (n == BATCH)
		ctl->overdue_next = now; /* more next time round */
}

/* Retention: journal job.forget for finished jobs past --keep-finished or
 * beyond --max-finished (a few thousand per tick at most), and drop their
 * logs. */
static void forget_due(struct xp_ctl *ctl, int64_t now)
{
	enum { BATCH = 1000 };
	uint64_t ids[BATCH];
	uint32_t reps[BATCH];
	for (int round = 0; round < 4; round++) {
		struct xp_err err = { 0 };
		size_t n = xp_state_forget_due(ctl->st, now, ctl->o.keep_finished_ms,
					       ctl->o.max_finished, ids, BATCH);
		if (!n)
			return;
		for (size_t i = 0; i < n; i++)
		{
			const struct xp_job *j = xp_state_job(ctl->st, ids[i]);
			reps[i] = j->spec.rmax ? j->spec.rmax : j->spec.replicas; /* every rank's logs */
		}
		if (xp_ctl_journal(ctl, "job.forget", xp_rec_job_forget(ids, n), &err) < 0) {
			fprintf(stderr, "xpool server: forgetting finished jobs: %s\n", err.text);
			return;
		}
		for (size_t i = 0; i < n; i++)
			for (uint32_t r = 0; r < reps[i]; r++)
				xp_log_unlink(ctl, ids[i], r);
	}
}

static void snapshot_if_due(struct xp_ctl *ctl)
{
	xp_snap_poll(ctl, 0); /* a finished child's snapshot goes to the store */
	if (ctl->since_snapshot < ctl->o.snapshot_every || ctl->fatal)
		return;
	xp_snap_start(ctl);
}

/* Periodic work that walks every node or every service runs when it is
 * due, not after every batch of commands: at 2,000 heartbeats/s the owner
 * wakes for small batches hundreds of times a second, and the liveness
 * walk of 10,000 nodes was 39 % of its CPU (perf, bench/agents.sh). 1 when
 * now has reached *next, which moves every ms on. */
static int due(int64_t *next, int64_t now, int64_t every)
{
	if (now < *next)
		return 0;
	*next = now + (every > 0 ? every : 1);
	return 1;
}

/* Owner, HA follower: poll the leader's journal every 100 ms; once the campaign won, catch up
 * and lead. A follower that fell behind a snapshot, or that cannot take the lead, starts
 * again from the store (the process's loop, cmd_server.c). */
static void follow(struct xp_ctl *ctl)
{
	struct xp_err err = { 0 };
	int64_t now = xp_ctl_now();
	int rc = 0;
	if (!atomic_load(&ctl->ready)) /* start has not finished (the HTTP front, its parking) */
		return;
	if (atomic_load(&ctl->lead_won)) {
		if ((rc = xp_ctl_promote(ctl, &err)) < 0)
			fprintf(stderr, "xpool server: cannot take the lead: %s\n", err.text);
	} else if (due(&ctl->follow_next, now, 100)) {
		long n = xp_ctl_follow(ctl, &err);
		if (n == XP_ENOENT || n == XP_ECORRUPT || n == XP_EINVAL) {
			rc = (int)n;
			fprintf(stderr, "xpool server: following: %s; starting again\n", err.text);
		}
	}
	if (rc < 0 && !atomic_exchange(&ctl->restart, 1)) {
		ctl->fatal = 1;
		ctl->ready = 0;
		if (ctl->o.on_fatal)
			ctl->o.on_fatal(ctl->o.fatal_arg);
	}
}

/* The scheduler is rebuilt over every node when nodes change (apply.c,
 * xp_state_sched): O(nodes), about 0.1 s at 100,000 nodes. While agents
 * register, every owner batch changed the nodes and the next cycle rebuilt,
 * so registering N agents cost O(N^2) (docs/results/scale.md). A cycle
 * rebuilds at most once per 5x the last rebuild's time, so rebuilds take at
 * most a fifth of the owner; meanwhile the cycle waits (the owner ticks every
 * --tick). Records that need the scheduler (job.start) still rebuild at once.
 * Small clusters rebuild in microseconds: no visible delay. */
static int sched_paced(struct xp_ctl *ctl)
{
	if (!ctl->st->sched_stale)
		return 1;
	uint64_t t0 = xp_mono_ns();
	if (t0 < ctl->sched_next)
		return 0;
	struct xp_err err = { 0 };
	if (xp_state_sched(ctl->st, &err) < 0)
		return 1; /* the cycle meets the error again and reports it */
	ctl->sched_next = t0 + 5 * (xp_mono_ns() - t0);
	return 1;
}

static int cycle(struct xp_ctl *ctl)
{
	if (!sched_paced(ctl))
		return 0;
	size_t tries = xp_opt_before(ctl); /* the batch search's budget (optimise.c) */
	uint64_t t0 = xp_mono_ns();
	long placed = xp_state_cycle(ctl->st, xp_ctl_now(), tries, &ctl->rng, cycle_emit, ctl);
	uint64_t ns = xp_mono_ns() - t0;
	xp_hist_add(&ctl->m.cycle, (double)ns / 1e9);
	xp_opt_after(ctl, ns);
	(void)placed;
	if (due(&ctl->mig_plan_next, xp_ctl_now(), ctl->o.tick_ms)) /* O(pending): once a tick */
		xp_mig_mode_plan(ctl); /* MIG mode changes for what no MIG GPU takes (migmode.h) */
	return xp_state_cycle_more(ctl->st);
}

/* every minute, M from the last day's submissions (workload.c): the
 * fragmentation metric and the fgd policy read it */
static void estimate_workload(struct xp_ctl *ctl, int64_t now)
{
	struct xp_err err = { 0 };
	if (now < ctl->workload_next)
		return;
	/* until there is an M, look again soon */
	ctl->workload_next = now + (ctl->st->workload.n ? 60000 : 5000);
	if (xp_state_estimate_workload(ctl->st, now - 86400000LL, &err) < 0)
		fprintf(stderr, "xpool server: estimating the workload: %s\n", err.text);
}

/* Run what queued while the owner was busy, once: a heartbeat that waited
 * behind a long command counts before liveness is judged, or the node
 * would be declared lost for the owner's own delay. */
static void run_queued(struct xp_ctl *ctl)
{
	pthread_mutex_lock(&ctl->qmu);
	struct xp_cmd *batch = ctl->qhead;
	ctl->qhead = ctl->qtail = NULL;
	pthread_mutex_unlock(&ctl->qmu);
	while (batch) {
		struct xp_cmd *next = batch->next;
		run(ctl, batch);
		batch = next;
	}
}

static void *owner_main(void *arg)
{
	struct xp_ctl *ctl = arg;
	int more = 1;

	for (;;) {
		struct xp_cmd *batch;
		pthread_mutex_lock(&ctl->qmu);
		if (!ctl->qhead && !ctl->stopping && !more) {
			int64_t wait_ms = ctl->o.tick_ms;
			if (ctl->emu.h.n) {
				int64_t until = ctl->emu.h.v[0].due - xp_ctl_now();
				if (until < wait_ms)
					wait_ms = until < 1 ? 1 : until;
			}
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += wait_ms / 1000;
			ts.tv_nsec += (wait_ms % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&ctl->qcv, &ctl->qmu, &ts);
		}
		batch = ctl->qhead;
		ctl->qhead = ctl->qtail = NULL;
		int stopping = ctl->stopping;
		pthread_mutex_unlock(&ctl->qmu);
		if (!ctl->fatal && xp_store_failure(ctl->store, NULL) < 0)
			fail_stop(ctl); /* before the batch: none of it is served */

		uint64_t before = ctl->st->seq;
		while (batch) {
			struct xp_cmd *next = batch->next;
			run(ctl, batch);
			batch = next;
		}
		run_queued(ctl);
		if (!ctl->fatal && atomic_load(&ctl->follower)) {
			follow(ctl);
			more = 0;
			before = ctl->st->seq; /* applied, not appended: nothing to wait for */
		} else if (!ctl->fatal) {
			finish_due(ctl, xp_ctl_now());
			/* liveness is judged in beats and tens of seconds: every
			 * 100 ms (a quarter beat when shorter) changes nothing */
			int64_t hb4 = ctl->o.heartbeat_ms / 4;
			if (due(&ctl->live_next, xp_ctl_now(), hb4 < 100 ? hb4 : 100))
				xp_live_check(ctl, xp_ctl_now());
			forget_due(ctl, xp_ctl_now());
			overdue(ctl, xp_ctl_now());
			if (due(&ctl->svc_next, xp_ctl_now(), ctl->o.tick_ms))
				xp_services_tick(ctl, xp_ctl_now());
			more = cycle(ctl);
			xp_alert_feed_tick(ctl, xp_ctl_now());
			estimate_workload(ctl, xp_ctl_now());
			xp_history_sample(ctl, xp_ctl_now());
			xp_metrics_publish(ctl, xp_ctl_now());
			snapshot_if_due(ctl);
		} else {
			more = 0;
		}
		if (ctl->st->seq != before)
			xp_store_when_durable(ctl->store, events_durable, ctl);
		if (!ctl->fatal && xp_store_failure(ctl->store, NULL) < 0)
			fail_stop(ctl);
		if (stopping) {
			pthread_mutex_lock(&ctl->qmu);
			int empty = ctl->qhead == NULL;
			pthread_mutex_unlock(&ctl->qmu);
			if (empty)
				break;
		}
	}
	xp_snap_poll(ctl, 1); /* a snapshot in flight lands before the store closes */
	return NULL;
}

int xp_owner_start(struct xp_ctl *ctl, struct xp_err *err)
{
	int rc = pthread_create(&ctl->owner, NULL, owner_main, ctl);
	if (rc != 0)
		return xp_errf(err, -rc, "cannot start the owner thread: %s", strerror(rc));
	ctl->owner_started = 1;
	return 0;
}

void xp_owner_stop(struct xp_ctl *ctl)
{
	if (!ctl->owner_started)
		return;
	pthread_mutex_lock(&ctl->qmu);
	ctl->stopping = 1;
	pthread_cond_signal(&ctl->qcv);
	pthread_mutex_unlock(&ctl->qmu);
	pthread_join(ctl->owner, NULL);
	ctl->owner_started = 0;
}
