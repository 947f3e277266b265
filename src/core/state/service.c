/*
 * service: services in the state (docs/design/serving.md). A service is a
 * definition (svcspec.h), the replica count wanted, and the replica jobs
 * that run it; the owner keeps the jobs matching the count (the server's
 * services.c) with ordinary job records, so scheduling, agents, logs,
 * quotas and metering treat a replica as the job it is.
 *
 * Records:
 *   service.create {spec}                       a service, version 1
 *   service.scale  {name, replicas, reason}     replicas wanted from now on
 *   service.delete {name}                       it leaves the state (the
 *                                               owner cancels its replicas)
 * A replica's job.submit names its service (spec.service); it is refused
 * unless the service exists. Its list of live replica jobs is derived:
 * rebuilt from the jobs on a snapshot load.
 */
#include "state_int.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS	 60000
#define STREAK_RESET_MS	 (10 * 60 * 1000) /* a replica that ran this long resets it */

long xp_state_service(const struct xp_state *st, const char *name)
{
	for (size_t i = 0; i < st->services.n; i++)
		if (!strcmp(st->services.v[i].spec.name, name))
			return (long)i;
	return -1;
}

int64_t xp_service_backoff_ms(const struct xp_service *s)
{
	if (!s->fail_streak)
		return 0;
	int64_t d = BACKOFF_FIRST_MS;
	for (uint32_t i = 1; i < s->fail_streak && d < BACKOFF_MAX_MS; i++)
		d *= 2;
	return d < BACKOFF_MAX_MS ? d : BACKOFF_MAX_MS;
}

char *xp_rec_service_create(const struct xp_servicespec *spec)
{
	json_t *o = json_pack("{s:o}", "spec", xp_servicespec_json(spec));
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}

char *xp_rec_service_scale(const char *name, uint32_t replicas, const char *reason)
{
	json_t *o = json_pack("{s:s,s:i,s:s}", "name", name, "replicas", (int)replicas, "reason",
			      reason ? reason : "");
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}

char *xp_rec_service_delete(const char *name)
{
	json_t *o = json_pack("{s:s}", "name", name);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

static void service_free(struct xp_service *s)
{
	xp_servicespec_free(&s->spec);
	xp_vec_free(&s->jobs);
}

void xp_services_free(struct xp_state *st)
{
	for (size_t i = 0; i < st->services.n; i++)
		service_free(&st->services.v[i]);
	xp_vec_free(&st->services);
}

/* A definition from its canonical JSON (a record's or a snapshot's). */
static int spec_from(json_t *def, struct xp_servicespec *out, struct xp_err *err)
{
	char *text = json_is_object(def) ? json_dumps(def, JSON_COMPACT) : NULL;
	if (!text)
		return xp_errf(err, XP_ECORRUPT, "spec: missing or not an object");
	int rc = xp_servicespec_parse_text("service", text, strlen(text), 1, out, NULL, err);
	free(text);
	return rc;
}

/* s checked against the state; on success it is the state's */
static int service_add(struct xp_state *st, struct xp_service *s, struct xp_err *err)
{
	long t = xp_state_tenant(st, s->spec.tenant);
	long q = xp_state_queue(st, s->spec.queue[0] ? s->spec.queue : "default");
	int rc = 0;
	if (t < 0)
		rc = xp_errf(err, XP_ENOENT, "service %s: no tenant %s", s->spec.name,
			     s->spec.tenant);
	else if (q < 0 || !xp_queue_is_leaf(st, (uint32_t)q))
		rc = xp_errf(err, XP_ENOENT, "service %s: no queue %s without children",
			     s->spec.name, s->spec.queue);
	else if (xp_state_service(st, s->spec.name) >= 0)
		rc = xp_errf(err, XP_EEXIST, "service %s already exists", s->spec.name);
	else if (s->desired < s->spec.min || s->desired > s->spec.max)
		rc = xp_errf(err, XP_ECORRUPT, "service %s: %u replicas, outside %u..%u",
			     s->spec.name, s->desired, s->spec.min, s->spec.max);
	if (rc < 0) {
		service_free(s);
		return rc;
	}
	s->tenant = (uint32_t)t;
	xp_vec_push(&st->services, *s);
	return 0;
}

static int service_create(struct xp_state *st, json_t *o, int64_t at, struct xp_event_info *ev,
			  struct xp_err *err)
{
	struct xp_service s;
	memset(&s, 0, sizeof(s));
	int rc = spec_from(json_object_get(o, "spec"), &s.spec, err);
	if (rc < 0)
		return rc;
	if (!s.spec.tenant[0]) {
		xp_servicespec_free(&s.spec);
		return xp_errf(err, XP_ECORRUPT, "spec.tenant: missing");
	}
	s.version = 1;
	s.desired = s.spec.replicas;
	s.first_job = st->next_job_id;
	s.created_at = at;
	if ((rc = service_add(st, &s, err)) < 0)
		return rc;
	ev->type = "service.created";
	ev->tenant = st->services.v[st->services.n - 1].tenant;
	return 0;
}

static int service_named(const struct xp_state *st, json_t *o, struct xp_err *err)
{
	const char *name = json_string_value(json_object_get(o, "name"));
	if (!name)
		return xp_errf(err, XP_ECORRUPT, "name: missing or not a string");
	long i = xp_state_service(st, name);
	if (i < 0)
		return xp_errf(err, XP_ENOENT, "no service %s", name);
	return (int)i;
}

int xp_service_apply(struct xp_state *st, const char *type, json_t *o, int64_t at,
		     struct xp_event_info *ev, struct xp_err *err)
{
	if (!strcmp(type, "service.create"))
		return service_create(st, o, at, ev, err);
	int i = service_named(st, o, err);
	if (i < 0)
		return i;
	struct xp_service *s = &st->services.v[i];
	ev->tenant = s->tenant;
	if (!strcmp(type, "service.scale")) {
		json_t *r = json_object_get(o, "replicas");
		if (!json_is_integer(r) || json_integer_value(r) < s->spec.min ||
		    json_integer_value(r) > s->spec.max)
			return xp_errf(err, XP_EINVAL, "replicas: expected %u..%u", s->spec.min,
				       s->spec.max);
		s->desired = (uint32_t)json_integer_value(r);
		ev->type = "service.scaled";
		return 0;
	}
	if (!strcmp(type, "service.delete")) {
		service_free(s);
		memmove(s, s + 1, (st->services.n - (size_t)i - 1) * sizeof(*s));
		st->services.n--;
		ev->type = "service.deleted";
		return 0;
	}
	return xp_errf(err, XP_ECORRUPT, "unknown record type '%s'", type);
}

/* the live service j is a replica of, or NULL */
static struct xp_service *service_of(const struct xp_state *st, const struct xp_job *j)
{
	long i = j->spec.svc.name ? xp_state_service(st, j->spec.svc.name) : -1;
	struct xp_service *s = i >= 0 ? &st->services.v[i] : NULL;
	return s && j->id >= s->first_job ? s : NULL;
}

int xp_service_admits(const struct xp_state *st, const struct xp_job *j, struct xp_err *err)
{
	if (!j->spec.svc.name)
		return 0;
	long i = xp_state_service(st, j->spec.svc.name);
	if (i < 0)
		return xp_errf(err, XP_ENOENT, "no service %s", j->spec.svc.name);
	if (j->spec.svc.version > st->services.v[i].version)
		return xp_errf(err, XP_EINVAL, "service %s has no version %u", j->spec.svc.name,
			       j->spec.svc.version);
	return 0;
}

void xp_service_job_added(struct xp_state *st, const struct xp_job *j)
{
	struct xp_service *s = service_of(st, j);
	if (s && !xp_job_terminal(j->state))
		xp_vec_push(&s->jobs, j->id);
}

void xp_service_job_ended(struct xp_state *st, const struct xp_job *j, int to, int64_t at)
{
	struct xp_service *s = service_of(st, j);
	if (!s)
		return;
	for (size_t k = 0; k < s->jobs.n; k++)
		if (s->jobs.v[k] == j->id) {
			memmove(s->jobs.v + k, s->jobs.v + k + 1,
				(s->jobs.n - k - 1) * sizeof(*s->jobs.v));
			s->jobs.n--;
			break;
		}
	if (to == XP_JOB_CANCELLED)
		return; /* taken away on purpose: not a failure */
	int ran_long = j->started_at && at - j->started_at >= STREAK_RESET_MS;
	s->fail_streak = ran_long ? 1 : s->fail_streak + 1;
	s->restarts++;
	s->last_end_job = j->id;
	s->last_end_at = at;
}

json_t *xp_services_snapshot(const struct xp_state *st)
{
	json_t *a = json_array();
	for (size_t i = 0; i < st->services.n; i++) {
		const struct xp_service *s = &st->services.v[i];
		json_array_append_new(
			a, json_pack("{s:o,s:i,s:i,s:I,s:I,s:i,s:I,s:I,s:I}", "spec",
				     xp_servicespec_json(&s->spec), "version", (int)s->version,
				     "desired", (int)s->desired, "first_job",
				     (json_int_t)s->first_job, "created_at",
				     (json_int_t)s->created_at, "fail_streak", (int)s->fail_streak,
				     "restarts", (json_int_t)s->restarts, "last_end_job",
				     (json_int_t)s->last_end_job, "last_end_at",
				     (json_int_t)s->last_end_at));
	}
	return a;
}

/* before the jobs: they join their services' lists as they load */
int xp_services_restore(struct xp_state *st, json_t *arr, struct xp_err *err)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
	{
		struct xp_service s;
		json_int_t first, created, restarts, last_job, last_at;
		int version, desired, streak;
		memset(&s, 0, sizeof(s));
		if (json_unpack(v, "{s:i,s:i,s:I,s:I,s:i,s:I,s:I,s:I}", "version", &version,
				"desired", &desired, "first_job", &first, "created_at", &created,
				"fail_streak", &streak, "restarts", &restarts, "last_end_job",
				&last_job, "last_end_at", &last_at) < 0 ||
		    version < 1 || desired < 0 || streak < 0)
			return xp_errf(err, XP_ECORRUPT, "snapshot: service %zu is malformed", i);
		int rc = spec_from(json_object_get(v, "spec"), &s.spec, err);
		if (rc < 0)
			return rc;
		s.version = (uint32_t)version;
		s.desired = (uint32_t)desired;
		s.first_job = (uint64_t)first;
		s.created_at = created;
		s.fail_streak = (uint32_t)streak;
		s.restarts = (uint64_t)restarts;
		s.last_end_job = (uint64_t)last_job;
		s.last_end_at = last_at;
		if ((rc = service_add(st, &s, err)) < 0)
			return rc;
	}
	return 0;
}
