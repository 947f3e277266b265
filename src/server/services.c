/*
 * services: the owner's side of services (docs/design/serving.md).
 *
 * Every tick the owner compares each service's replica jobs with the count
 * it wants, and journals what closes the gap: job.submit of a replica made
 * from the template (after the restart back-off, when replicas have been
 * ending on their own), or a scale-down in two steps - the replica leaves
 * the endpoints first (drain), and is cancelled once the service's drain
 * time has passed, so a proxy stops sending it requests before it stops.
 * Pending replicas go first, then those not ready, then the newest.
 *
 * Agents say in each heartbeat which port each replica got and whether its
 * readiness check passes; the endpoints of a service are its running
 * replicas of the current attempt that are ready and not draining.
 */
#include "ctl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/timefmt.h"
#include "../lib/xalloc.h"

#define SUBMIT_PER_TICK 16 /* replicas a service gets per tick at most */
#define SVC_REPORTS_MAX 4096

struct xp_svc_report {
	json_int_t job, replica, attempt, port;
	int ready;
};

/* ---- what agents say ---- */

int xp_svc_reports_check(json_t *arr, struct xp_svc_report **out, char *field, size_t fn)
{
	size_t i;
	json_t *e;
	*out = NULL;
	if (!arr)
		return 0;
	if (!json_is_array(arr) || json_array_size(arr) > SVC_REPORTS_MAX) {
		snprintf(field, fn, "services");
		return -1;
	}
	struct xp_svc_report *r = XNEWV(struct xp_svc_report, json_array_size(arr) + 1);
	json_array_foreach(arr, i, e)
	{
		json_error_t je;
		snprintf(field, fn, "services[%zu]", i);
		if (json_unpack_ex(e, &je, JSON_STRICT, "{s:I,s:I,s:I,s:I,s:b}", "job", &r[i].job,
				   "replica", &r[i].replica, "attempt", &r[i].attempt, "port",
				   &r[i].port, "ready", &r[i].ready) < 0 ||
		    r[i].job <= 0 || r[i].replica < 0 || r[i].attempt < 1 || r[i].port < 0 ||
		    r[i].port > 65535) {
			free(r);
			return -1;
		}
	}
	*out = r;
	return (int)i;
}

static struct xp_svc_rep *rep_of(struct xp_ctl *ctl, const struct xp_job *j, int make)
{
	struct xp_svc_rep *p = xp_intmap_get(&ctl->svc_live, j->id);
	if (p && p->attempt != j->attempts) { /* an earlier run's */
		free(xp_intmap_del(&ctl->svc_live, j->id));
		p = NULL;
	}
	if (!p && make) {
		p = xcalloc(1, sizeof(*p));
		p->attempt = j->attempts;
		xp_intmap_put(&ctl->svc_live, j->id, p);
	}
	return p;
}

void xp_svc_reports_apply(struct xp_ctl *ctl, long node, struct xp_svc_report *r, int n,
			  int64_t now)
{
	for (int i = 0; i < n; i++) {
		struct xp_job *j = xp_state_job(ctl->st, (uint64_t)r[i].job);
		if (!j || !j->spec.svc.name || j->state != XP_JOB_RUNNING || !j->allocs ||
		    r[i].attempt != (json_int_t)j->attempts || r[i].replica != 0 ||
		    j->allocs[0].node != (uint32_t)node)
			continue; /* stale, or not this node's to report */
		struct xp_svc_rep *p = rep_of(ctl, j, 1);
		if (p->port != (uint16_t)r[i].port || p->ready != (uint8_t)!!r[i].ready)
			ctl->ep_version++;
		p->port = (uint16_t)r[i].port;
		p->ready = (uint8_t)!!r[i].ready;
		p->seen = now;
	}
}

void xp_svc_live_free(struct xp_ctl *ctl)
{
	for (size_t i = 0; i < ctl->svc_live.cap; i++)
		if (ctl->svc_live.keys && ctl->svc_live.keys[i])
			free(ctl->svc_live.vals[i]);
	xp_intmap_free(&ctl->svc_live);
}

/* ---- the replicas kept ---- */

static int serving(struct xp_ctl *ctl, const struct xp_job *j)
{
	struct xp_svc_rep *p = j->state == XP_JOB_RUNNING ? rep_of(ctl, j, 0) : NULL;
	return p && p->ready && p->port && !p->drain_at;
}

static int draining(struct xp_ctl *ctl, const struct xp_job *j)
{
	struct xp_svc_rep *p = j->state == XP_JOB_RUNNING ? rep_of(ctl, j, 0) : NULL;
	return p && p->drain_at;
}

static void add_replicas(struct xp_ctl *ctl, struct xp_service *s, uint32_t n, int64_t now)
{
	if (s->fail_streak && now < s->last_end_at + xp_service_backoff_ms(s))
		return; /* the back-off: explained by GET /v1/services/NAME */
	const char *tenant = ctl->st->tenants.v[s->tenant].name;
	char name[XP_NAME_MAX + 1];
	snprintf(name, sizeof(name), "%s", s->spec.name); /* s moves if services grow */
	for (uint32_t i = 0; i < n && i < SUBMIT_PER_TICK; i++) {
		struct xp_jobspec spec;
		struct xp_err err = { 0 };
		long k = xp_state_service(ctl->st, name);
		if (k < 0 ||
		    xp_servicespec_replica(&ctl->st->services.v[k].spec,
					   ctl->st->services.v[k].version, &spec, &err) < 0 ||
		    xp_ctl_journal_submit(ctl, ctl->st->next_job_id, tenant, NULL, &spec, &err) <
			    0) {
			fprintf(stderr, "xpool server: service %s: a replica was not added: %s\n",
				name, err.text);
			return;
		}
	}
}

/* the order replicas leave in: pending, not ready, then the newest */
static int leave_rank(struct xp_ctl *ctl, const struct xp_job *j)
{
	return j->state == XP_JOB_PENDING ? 0 : serving(ctl, j) ? 2 : 1;
}

static void cancel_replica(struct xp_ctl *ctl, uint64_t id, const char *svc, const char *why)
{
	struct xp_err err = { 0 };
	char reason[200];
	snprintf(reason, sizeof(reason), "service %s: %s", svc, why);
	if (xp_ctl_journal(ctl, "job.cancel", xp_rec_job_cancel(id, reason), &err) < 0)
		fprintf(stderr, "xpool server: service %s: job %llu: %s\n", svc,
			(unsigned long long)id, err.text);
}

static void remove_replicas(struct xp_ctl *ctl, struct xp_service *s, uint32_t n, int64_t now)
{
	for (; n > 0; n--) {
		const struct xp_job *pick = NULL;
		for (size_t k = 0; k < s->jobs.n; k++) {
			const struct xp_job *j = xp_state_job(ctl->st, s->jobs.v[k]);
			if (!j || draining(ctl, j))
				continue;
			if (!pick || leave_rank(ctl, j) < leave_rank(ctl, pick) ||
			    (leave_rank(ctl, j) == leave_rank(ctl, pick) && j->id > pick->id))
				pick = j;
		}
		if (!pick)
			return;
		if (!serving(ctl, pick)) { /* no traffic to let go of */
			cancel_replica(ctl, pick->id, s->spec.name, "scaled down");
			continue;
		}
		struct xp_svc_rep *p = rep_of(ctl, pick, 0);
		p->drain_at = now;
		p->stop_at = now + s->spec.drain_ms;
		ctl->ep_version++;
	}
}

/* drained replicas whose time has come are stopped */
static void stop_drained(struct xp_ctl *ctl, struct xp_service *s, int64_t now)
{
	for (size_t k = 0; k < s->jobs.n; k++) {
		const struct xp_job *j = xp_state_job(ctl->st, s->jobs.v[k]);
		struct xp_svc_rep *p = j && j->state == XP_JOB_RUNNING ? rep_of(ctl, j, 0) : NULL;
		if (p && p->stop_at && now >= p->stop_at) {
			p->stop_at = 0; /* once */
			cancel_replica(ctl, j->id, s->spec.name, "scaled down (drained)");
			k = (size_t)-1; /* the list changed: again from its start */
		}
	}
}

void xp_services_tick(struct xp_ctl *ctl, int64_t now)
{
	for (size_t i = 0; i < ctl->st->services.n; i++) {
		struct xp_service *s = &ctl->st->services.v[i];
		stop_drained(ctl, s, now);
		s = &ctl->st->services.v[i];
		uint32_t active = 0;
		for (size_t k = 0; k < s->jobs.n; k++) {
			const struct xp_job *j = xp_state_job(ctl->st, s->jobs.v[k]);
			active += j && !draining(ctl, j);
		}
		if (active < s->desired)
			add_replicas(ctl, s, s->desired - active, now);
		else if (active > s->desired)
			remove_replicas(ctl, &ctl->st->services.v[i], active - s->desired, now);
	}
}

/* ---- what the API shows ---- */

json_t *xp_service_endpoints(struct xp_ctl *ctl, const struct xp_service *s)
{
	json_t *a = json_array();
	for (size_t k = 0; k < s->jobs.n; k++) {
		const struct xp_job *j = xp_state_job(ctl->st, s->jobs.v[k]);
		if (!j || !serving(ctl, j))
			continue;
		uint32_t n = j->allocs[0].node;
		const struct xp_svc_rep *p = rep_of(ctl, j, 0);
		const char *addr = n < ctl->live.n && ctl->live.v[n].addr[0] ? ctl->live.v[n].addr
									     : "127.0.0.1";
		json_array_append_new(a, json_pack("{s:I,s:s,s:s,s:i,s:i,s:i}", "job",
						   (json_int_t)j->id, "node",
						   ctl->st->c->nodes[n].name, "address", addr,
						   "port", (int)p->port, "version",
						   (int)j->spec.svc.version, "weight", 100));
	}
	return a;
}

static const char *status_of(struct xp_ctl *ctl, const struct xp_service *s, uint32_t ready,
			     int64_t now, char *msg, size_t len)
{
	msg[0] = '\0';
	if (s->fail_streak && ready < s->desired) {
		const struct xp_job *j = xp_state_job(ctl->st, s->last_end_job);
		int64_t next = s->last_end_at + xp_service_backoff_ms(s) - now;
		snprintf(msg, len, "replica job %llu ended: %s; %u in a row%s",
			 (unsigned long long)s->last_end_job,
			 j && j->reason ? j->reason
			 : j && j->has_exit ? "exited"
					    : "ended",
			 s->fail_streak, next > 0 ? "; the next starts after a back-off" : "");
		return s->fail_streak >= 3 ? "failing" : "progressing";
	}
	return ready >= s->desired ? "ready" : "progressing";
}

json_t *xp_service_json(struct xp_ctl *ctl, const struct xp_service *s, int64_t now)
{
	uint32_t pending = 0, running = 0, ready = 0;
	json_t *jobs = json_array();
	for (size_t k = 0; k < s->jobs.n; k++) {
		const struct xp_job *j = xp_state_job(ctl->st, s->jobs.v[k]);
		if (!j)
			continue;
		pending += j->state == XP_JOB_PENDING;
		running += j->state == XP_JOB_RUNNING;
		ready += serving(ctl, j);
		json_array_append_new(jobs, json_integer((json_int_t)j->id));
	}
	char msg[400], ts[XP_TIME_LEN];
	const char *status = status_of(ctl, s, ready, now, msg, sizeof(msg));
	xp_time_format(s->created_at, ts);
	json_t *o = json_pack(
		"{s:s,s:s,s:s,s:i,s:{s:i,s:i,s:i,s:i,s:i,s:i},s:I,s:o,s:o,s:s}", "name",
		s->spec.name, "tenant", ctl->st->tenants.v[s->tenant].name, "status", status,
		"version", (int)s->version, "replicas", "desired", (int)s->desired, "min",
		(int)s->spec.min, "max", (int)s->spec.max, "pending", (int)pending, "running",
		(int)running, "ready", (int)ready, "restarts", (json_int_t)s->restarts, "jobs", jobs,
		"spec", xp_servicespec_json(&s->spec), "created_at", ts);
	if (msg[0])
		json_object_set_new(o, "message", json_string(msg));
	return o;
}
