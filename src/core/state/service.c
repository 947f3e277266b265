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
 *   service.update {spec, canary, weight}       a new definition; one whose
 *                                               replicas differ is the next
 *                                               version, the old one kept
 *   service.promote {name}                      a canary goes on to all
 *   service.rollback {name}                     back to the version before
 *   service.rolled {name}                       the owner saw the rollout
 *                                               finish: old replicas ended,
 *                                               the new ones all ready
 * A replica's job.submit names its service (spec.service); it is refused
 * unless the service exists. Its list of live replica jobs is derived:
 * rebuilt from the jobs on a snapshot load.
 */
#include "state_int.h"

#include <stdio.h>
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






static void prev_free(struct xp_service *s)
{
	if (s->prev)
		xp_servicespec_free(s->prev);
	free(s->prev);
	s->prev = NULL;
}

void xp_service_free(struct xp_service *s)
{
	xp_servicespec_free(&s->spec);
	prev_free(s);
	xp_vec_free(&s->jobs);
}

void xp_services_free(struct xp_state *st)
{
	for (size_t i = 0; i < st->services.n; i++)
		xp_service_free(&st->services.v[i]);
	xp_vec_free(&st->services);
}


/* s checked against the state; on success it is the state's */
int xp_service_add(struct xp_state *st, struct xp_service *s, struct xp_err *err)
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
		xp_service_free(s);
		return rc;
	}
	s->tenant = (uint32_t)t;
	xp_vec_push(&st->services, *s);
	return 0;
}

/* the definition a create or an update record carries, taken */
static struct xp_servicespec take_spec(const struct xp_rec *r)
{
	struct xp_servicespec n = *r->u.service.spec;
	memset(r->u.service.spec, 0, sizeof(n));
	return n;
}

static int service_create(struct xp_state *st, const struct xp_rec *r, int64_t at,
			  struct xp_event_info *ev, struct xp_err *err)
{
	struct xp_service s;
	int rc;
	memset(&s, 0, sizeof(s));
	s.spec = take_spec(r);
	s.version = 1;
	s.next_version = 2;
	s.desired = s.spec.replicas;
	s.first_job = st->next_job_id;
	s.created_at = at;
	if ((rc = xp_service_add(st, &s, err)) < 0)
		return rc;
	ev->type = "service.created";
	ev->tenant = st->services.v[st->services.n - 1].tenant;
	return 0;
}

static int service_named(const struct xp_state *st, const char *name, struct xp_err *err)
{
	long i = xp_state_service(st, name);
	if (i < 0)
		return xp_errf(err, XP_ENOENT, "no service %s", name);
	return (int)i;
}

/* the new definition; a new version when its replicas differ */
static int service_update(struct xp_state *st, struct xp_service *s, const struct xp_rec *r,
			  struct xp_err *err)
{
	struct xp_servicespec n = take_spec(r);
	long q = xp_state_queue(st, n.queue[0] ? n.queue : "default");
	if (strcmp(n.name, s->spec.name) || strcmp(n.tenant, s->spec.tenant) || q < 0 ||
	    !xp_queue_is_leaf(st, (uint32_t)q)) {
		xp_servicespec_free(&n);
		return xp_errf(err, XP_EINVAL,
			       "service %s: an update keeps the name and tenant, in a queue that "
			       "exists",
			       s->spec.name);
	}
	int fresh = st->docs->service_new_version(&s->spec, &n);
	if (fresh && s->canary) {
		xp_servicespec_free(&n);
		return xp_errf(err, XP_ESTATE,
			       "service %s holds a canary of version %u: promote it or roll back "
			       "before another version",
			       s->spec.name, s->version);
	}
	if (fresh) {
		prev_free(s);
		s->prev = xmalloc(sizeof(*s->prev));
		*s->prev = s->spec;
		s->prev_version = s->version;
		s->version = s->next_version++;
		s->canary = r->u.service.canary;
		s->canary_weight = r->u.service.weight;
		s->rolling = 1;
	} else {
		xp_servicespec_free(&s->spec);
	}
	s->spec = n;
	s->desired = s->desired < n.min ? n.min : s->desired > n.max ? n.max : s->desired;
	return 0;
}

/* back to the version before: its definition and number (its replicas,
 * if some still run, are current again) */
static int service_rollback(struct xp_service *s, struct xp_err *err)
{
	if (!s->prev)
		return xp_errf(err, XP_ESTATE, "service %s has no earlier version",
			       s->spec.name);
	struct xp_servicespec cur = s->spec;
	uint32_t v = s->version;
	s->spec = *s->prev;
	*s->prev = cur;
	s->version = s->prev_version;
	s->prev_version = v;
	s->canary = 0;
	s->rolling = 1;
	s->desired = s->desired < s->spec.min ? s->spec.min
		     : s->desired > s->spec.max ? s->spec.max
						  : s->desired;
	return 0;
}

int xp_service_apply(struct xp_state *st, const struct xp_rec *r, int64_t at,
		     struct xp_event_info *ev, struct xp_err *err)
{
	if (r->type == XP_REC_SERVICE_CREATE)
		return service_create(st, r, at, ev, err);
	int i = service_named(st, r->u.service.name, err); /* an update: by its spec's */
	if (i < 0)
		return i;
	struct xp_service *s = &st->services.v[i];
	ev->tenant = s->tenant;
	if (r->type == XP_REC_SERVICE_UPDATE) {
		ev->type = "service.updated";
		return service_update(st, s, r, err);
	}
	if (r->type == XP_REC_SERVICE_SCALE) {
		int64_t n = r->u.service.replicas;
		if (n < s->spec.min || n > s->spec.max)
			return xp_errf(err, XP_EINVAL, "replicas: expected %u..%u", s->spec.min,
				       s->spec.max);
		const char *why = r->u.service.reason;
		struct xp_scale_ev *e = &s->scales[s->nscales++ % XP_SERVICE_SCALES];
		e->at = at;
		e->from = s->desired;
		e->to = (uint32_t)n;
		snprintf(e->reason, sizeof(e->reason), "%s", why ? why : "");
		s->desired = e->to;
		ev->type = "service.scaled";
		return 0;
	}
	if (r->type == XP_REC_SERVICE_PROMOTE) {
		if (!s->canary)
			return xp_errf(err, XP_ESTATE, "service %s has no canary", s->spec.name);
		s->canary = 0;
		ev->type = "service.promoted";
		return 0;
	}
	if (r->type == XP_REC_SERVICE_ROLLED) {
		if (!s->rolling || s->canary)
			return xp_errf(err, XP_ESTATE, "service %s has no rollout to end",
				       s->spec.name);
		s->rolling = 0;
		ev->type = "service.rolled";
		return 0;
	}
	if (r->type == XP_REC_SERVICE_ROLLBACK) {
		ev->type = "service.rolledback";
		return service_rollback(s, err);
	}
	/* XP_REC_SERVICE_DELETE */
	xp_service_free(s);
	memmove(s, s + 1, (st->services.n - (size_t)i - 1) * sizeof(*s));
	st->services.n--;
	ev->type = "service.deleted";
	return 0;
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
	if (j->spec.svc.version >= st->services.v[i].next_version)
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


