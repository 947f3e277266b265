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
 * replicas of the current attempt that are ready and not draining. After
 * the controller starts, no replica is taken away for two heartbeat
 * periods: until the agents speak, every replica looks unready.
 *
 * A new version is rolled out (roll()) within max_surge and
 * max_unavailable, or held at a canary's count beside the old ones, whose
 * endpoints then carry weights that give it its share of the traffic.
 */
#include "ctl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/state/hpa.h"
#include "../edge/edge.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"

#define SUBMIT_PER_TICK 16 /* replicas a service gets per tick at most */
#define SVC_REPORTS_MAX 4096

struct xp_svc_report {
	json_int_t job, replica, attempt, port;
	int ready;
	double load; /* < 0: none */
};

/* A service's autoscaler: the HPA rule's windows, and its last word. Not
 * journaled (what it decides is: service.scale with the reason); after a
 * restart its windows start empty, as Kubernetes' do. */
struct xp_scaler {
	char name[XP_NAME_MAX + 1];
	uint64_t first_job; /* the service it belongs to (a new one of the name is another) */
	struct xp_hpa h;
	int64_t next_at; /* ms */
	double metric;	 /* the last per-replica value the rule saw, < 0: none yet */
	uint32_t measured;
	double *hist;	 /* the load seen each period, oldest first (autoscale.predict) */
	size_t nhist, caphist;
	double predicted; /* the forecast per replica the last period, < 0: none */
	int64_t period_ms, predict_ms; /* as the definition said when it was made */
	char why[256];
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
		json_t *load = NULL;
		if (json_unpack_ex(e, &je, JSON_STRICT, "{s:I,s:I,s:I,s:I,s:b,s?o}", "job",
				   &r[i].job, "replica", &r[i].replica, "attempt", &r[i].attempt,
				   "port", &r[i].port, "ready", &r[i].ready, "load", &load) < 0 ||
		    r[i].job <= 0 || r[i].replica < 0 || r[i].attempt < 1 || r[i].port < 0 ||
		    r[i].port > 65535 || (load && !json_is_number(load)) ||
		    (load && !(json_number_value(load) >= 0 && json_number_value(load) < 1e15))) {
			free(r);
			return -1;
		}
		r[i].load = load ? json_number_value(load) : -1;
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
			xp_ep_bump(ctl);
		p->port = (uint16_t)r[i].port;
		p->ready = (uint8_t)!!r[i].ready;
		p->seen = now;
		if (r[i].load >= 0) {
			p->load = r[i].load;
			p->load_at = now;
		}
	}
}

void xp_ep_bump(struct xp_ctl *ctl)
{
	__atomic_add_fetch(&ctl->ep_version, 1, __ATOMIC_RELEASE);
	xp_park_wake(ctl, XP_PARK_SERVICES);
}

uint64_t xp_ep_version(struct xp_ctl *ctl)
{
	return __atomic_load_n(&ctl->ep_version, __ATOMIC_ACQUIRE);
}

char *xp_ep_published(struct xp_ctl *ctl, const char *name, uint64_t *version)
{
	char *out = NULL;
	pthread_mutex_lock(&ctl->ep_mu);
	for (size_t i = 0; i < ctl->nep_pub && !out; i++)
		if (!strcmp(ctl->ep_pub[i].name, name)) {
			out = xstrdup(ctl->ep_pub[i].json);
			*version = ctl->ep_pub[i].version;
		}
	pthread_mutex_unlock(&ctl->ep_mu);
	return out;
}

static void ep_pub_clear(struct xp_ctl *ctl)
{
	for (size_t i = 0; i < ctl->nep_pub; i++)
		free(ctl->ep_pub[i].json);
	free(ctl->ep_pub);
	ctl->ep_pub = NULL;
	ctl->nep_pub = 0;
}

/* the endpoints of every service, for the streams (after each change) */
static void publish(struct xp_ctl *ctl)
{
	uint64_t v = xp_ep_version(ctl);
	if (v == ctl->ep_published && ctl->nep_pub == ctl->st->services.n)
		return;
	size_t n = ctl->st->services.n;
	struct xp_ep_pub *p = xcalloc(n ? n : 1, sizeof(*p));
	for (size_t i = 0; i < n; i++) {
		const struct xp_service *s = &ctl->st->services.v[i];
		snprintf(p[i].name, sizeof(p[i].name), "%s", s->spec.name);
		p[i].version = v;
		p[i].json = xp_json_take(json_pack("{s:s,s:i,s:I,s:o}", "service", s->spec.name,
						   "port", (int)s->spec.port, "version",
						   (json_int_t)v, "endpoints",
						   xp_service_endpoints(ctl, s)));
	}
	pthread_mutex_lock(&ctl->ep_mu);
	ep_pub_clear(ctl);
	ctl->ep_pub = p;
	ctl->nep_pub = n;
	pthread_mutex_unlock(&ctl->ep_mu);
	ctl->ep_published = v;
	xp_park_wake(ctl, XP_PARK_SERVICES);
}

void xp_svc_live_free(struct xp_ctl *ctl)
{
	ep_pub_clear(ctl);
	for (size_t i = 0; i < ctl->svc_live.cap; i++)
		if (ctl->svc_live.keys && ctl->svc_live.keys[i])
			free(ctl->svc_live.vals[i]);
	xp_intmap_free(&ctl->svc_live);
}

/* ---- the replicas kept ---- */

/* ready by its agent's last word, and that word is recent: a replica its
 * agent stopped reporting (an exit not yet reported, a hung agent) leaves
 * the endpoints after three heartbeat periods */
static int serving(struct xp_ctl *ctl, const struct xp_job *j)
{
	struct xp_svc_rep *p = j->state == XP_JOB_RUNNING ? rep_of(ctl, j, 0) : NULL;
	int64_t stale = 3 * (int64_t)ctl->o.heartbeat_ms + 2000;
	return p && p->ready && p->port && !p->drain_at && xp_ctl_now() - p->seen <= stale;
}

static int draining(struct xp_ctl *ctl, const struct xp_job *j)
{
	struct xp_svc_rep *p = j->state == XP_JOB_RUNNING ? rep_of(ctl, j, 0) : NULL;
	return p && p->drain_at;
}

/* the service's live replicas that no reclaim or preemption may take */
static uint32_t protected_replicas(struct xp_ctl *ctl, const struct xp_service *s, uint32_t ver)
{
	uint32_t n = 0;
	for (size_t k = 0; k < s->jobs.n; k++) {
		const struct xp_job *j = xp_state_job(ctl->st, s->jobs.v[k]);
		n += j && j->spec.qos == XP_QOS_PROTECTED && j->spec.svc.version == ver;
	}
	return n;
}

/* n replicas of the current version (prev: of the version before, which
 * a rollout in progress keeps at its count when one of them ends). The
 * first min of them are protected (qos): a queue's guarantee covers the
 * minimum, the replicas above it borrow and may be reclaimed.
 * (prev: of the version before, which a rollout in progress keeps at its
 * count when one of them ends) */
static void add_replicas(struct xp_ctl *ctl, struct xp_service *s, uint32_t n, int prev,
			 int64_t now)
{
	if (s->fail_streak && now < s->last_end_at + xp_service_backoff_ms(s))
		return; /* the back-off: explained by GET /v1/services/NAME */
	if (prev && !s->prev)
		return;
	const char *tenant = ctl->st->tenants.v[s->tenant].name;
	char name[XP_NAME_MAX + 1];
	snprintf(name, sizeof(name), "%s", s->spec.name); /* s moves if services grow */
	for (uint32_t i = 0; i < n && i < SUBMIT_PER_TICK; i++) {
		struct xp_jobspec spec;
		struct xp_err err = { 0 };
		long k = xp_state_service(ctl->st, name);
		const struct xp_service *sv = k < 0 ? NULL : &ctl->st->services.v[k];
		memset(&spec, 0, sizeof(spec));
		if (sv && xp_servicespec_replica(prev ? sv->prev : &sv->spec,
						 prev ? sv->prev_version : sv->version, &spec,
						 &err) == 0 &&
		    protected_replicas(ctl, sv, prev ? sv->prev_version : sv->version) <
			    sv->spec.min)
			spec.qos = XP_QOS_PROTECTED; /* the minimum is never reclaimed */
		if (!sv || !spec.svc.name ||
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
	int r = j->state == XP_JOB_PENDING ? 0 : serving(ctl, j) ? 2 : 1;
	return r + (j->spec.qos == XP_QOS_PROTECTED ? 3 : 0); /* the minimum goes last */
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

enum { ANY, CURRENT, OLD }; /* which replicas: by their version against the service's */

static int of_kind(const struct xp_service *s, const struct xp_job *j, int which)
{
	return which == ANY || (which == CURRENT) == (j->spec.svc.version == s->version);
}

/* n replicas of the kind leave, while at least floor ready replicas of
 * any version stay (floor 0: no bound); the number that left */
static uint32_t remove_replicas(struct xp_ctl *ctl, struct xp_service *s, uint32_t n, int which,
				uint32_t ready, uint32_t floor, int64_t now)
{
	uint32_t gone = 0;
	for (; n > 0; n--) {
		const struct xp_job *pick = NULL;
		for (size_t k = 0; k < s->jobs.n; k++) {
			const struct xp_job *j = xp_state_job(ctl->st, s->jobs.v[k]);
			if (!j || draining(ctl, j) || !of_kind(s, j, which))
				continue;
			if (!pick || leave_rank(ctl, j) < leave_rank(ctl, pick) ||
			    (leave_rank(ctl, j) == leave_rank(ctl, pick) && j->id > pick->id))
				pick = j;
		}
		if (!pick)
			break;
		if (!serving(ctl, pick)) { /* no traffic to let go of */
			cancel_replica(ctl, pick->id, s->spec.name,
				       which == OLD ? "replaced by a new version" : "scaled down");
			gone++;
			continue;
		}
		if (ready <= floor)
			break; /* the rest keep the service available */
		struct xp_svc_rep *p = rep_of(ctl, pick, 0);
		p->drain_at = now;
		p->stop_at = now + s->spec.drain_ms;
		xp_ep_bump(ctl);
		ready--;
		gone++;
	}
	return gone;
}

struct census {
	uint32_t cur, cur_ready, old, old_ready; /* replicas not draining, by version */
};

static void count(struct xp_ctl *ctl, const struct xp_service *s, struct census *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t k = 0; k < s->jobs.n; k++) {
		const struct xp_job *j = xp_state_job(ctl->st, s->jobs.v[k]);
		if (!j || draining(ctl, j))
			continue;
		int cur = j->spec.svc.version == s->version;
		*(cur ? &c->cur : &c->old) += 1;
		*(cur ? &c->cur_ready : &c->old_ready) += serving(ctl, j);
	}
}

/* A rolling update: replicas of the current version added while the
 * service has at most desired + max_surge, old ones taken away while at
 * least desired - max_unavailable stay ready. With a canary the current
 * version is held at that many beside all the old ones. */
static void roll(struct xp_ctl *ctl, struct xp_service *s, const struct census *c, int64_t now)
{
	uint32_t d = s->desired, want_cur = s->canary ? (s->canary < d ? s->canary : d) : d;
	uint32_t want_old = s->canary ? d : 0, total = c->cur + c->old;
	uint32_t cap = s->canary ? d + want_cur : d + s->spec.max_surge;
	/* the old version covers what the new does not serve yet: one of its
	 * replicas that ended is replaced first (Kubernetes' old ReplicaSet
	 * keeps its count the same way) */
	uint32_t cover = want_old ? want_old : d > c->cur_ready ? d - c->cur_ready : 0;
	if (!want_old) /* what max_unavailable lets go uncovered */
		cover = cover > s->spec.max_unavailable ? cover - s->spec.max_unavailable : 0;
	if (c->old < cover && s->prev) {
		add_replicas(ctl, s, cover - c->old, 1, now);
		return;
	}
	if (c->cur < want_cur && total < cap) {
		uint32_t n = want_cur - c->cur;
		add_replicas(ctl, s, n < cap - total ? n : cap - total, 0, now);
		return; /* the old ones go once the census sees these */
	}
	uint32_t floor = d > s->spec.max_unavailable ? d - s->spec.max_unavailable : 0;
	uint32_t keep_old = want_old > cover ? want_old : cover;
	if (c->old > keep_old)
		remove_replicas(ctl, s, c->old - keep_old, OLD, c->cur_ready + c->old_ready, floor,
				now);
	if (c->cur > want_cur)
		remove_replicas(ctl, s, c->cur - want_cur, CURRENT, UINT32_MAX, 0, now);
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

/* the rollout is over: journaled, so a restart does not take it up again */
static void rolled(struct xp_ctl *ctl, struct xp_service *s)
{
	struct xp_err err = { 0 };
	if (xp_ctl_journal(ctl, "service.rolled", xp_rec_service_named(s->spec.name), &err) < 0)
		fprintf(stderr, "xpool server: service %s: %s\n", s->spec.name, err.text);
}

/* ---- the autoscaler ---- */

static void scaler_free(struct xp_scaler *a)
{
	xp_hpa_free(&a->h);
	free(a->hist);
}

/* the rule's settings from the service's definition */
static void scaler_opts(const struct xp_service *s, struct xp_hpa_opts *o)
{
	const struct xp_autoscale *as = &s->spec.scale;
	int64_t win = as->up_window_ms > as->down_window_ms ? as->up_window_ms : as->down_window_ms;
	size_t ring = (size_t)(win / as->period_ms) + 2; /* a window's decisions */
	xp_hpa_defaults(o);
	o->min = s->spec.min ? s->spec.min : 1;
	o->max = s->spec.max;
	o->target = as->target;
	o->tolerance = as->tolerance;
	o->up_window_s = as->up_window_ms / 1000;
	o->down_window_s = as->down_window_ms / 1000;
	o->history = ring > XP_HPA_MAX_HISTORY ? XP_HPA_MAX_HISTORY : ring;
}

static struct xp_scaler *scaler_of(struct xp_ctl *ctl, const struct xp_service *s)
{
	struct xp_hpa_opts o;
	scaler_opts(s, &o);
	for (size_t i = 0; i < ctl->nscalers; i++) {
		struct xp_scaler *a = &ctl->scalers[i];
		if (strcmp(a->name, s->spec.name) || a->first_job != s->first_job)
			continue;
		const struct xp_hpa_opts *h = &a->h.o;
		if (h->min == o.min && h->max == o.max && h->target == o.target &&
		    h->tolerance == o.tolerance && h->up_window_s == o.up_window_s &&
		    h->down_window_s == o.down_window_s && h->history == o.history &&
		    a->period_ms == s->spec.scale.period_ms &&
		    a->predict_ms == s->spec.scale.predict_ms)
			return a;
		scaler_free(a); /* an update changed the rule: it starts again */
		ctl->scalers[i] = ctl->scalers[--ctl->nscalers];
		break;
	}
	struct xp_err err = { 0 };
	struct xp_scaler sc = { .first_job = s->first_job, .metric = -1, .predicted = -1,
				.period_ms = s->spec.scale.period_ms,
				.predict_ms = s->spec.scale.predict_ms };
	snprintf(sc.name, sizeof(sc.name), "%s", s->spec.name);
	if (xp_hpa_init(&sc.h, &o, &err) < 0) {
		fprintf(stderr, "xpool server: service %s: autoscaler: %s\n", s->spec.name,
			err.text);
		return NULL;
	}
	ctl->scalers = xrealloc(ctl->scalers, (ctl->nscalers + 1) * sizeof(*ctl->scalers));
	ctl->scalers[ctl->nscalers] = sc;
	return &ctl->scalers[ctl->nscalers++];
}

void xp_scalers_free(struct xp_ctl *ctl)
{
	for (size_t i = 0; i < ctl->nscalers; i++)
		scaler_free(&ctl->scalers[i]);
	free(ctl->scalers);
	ctl->scalers = NULL;
	ctl->nscalers = 0;
}

/* The per-replica metric as Kubernetes' HPA takes it: the mean over the
 * replicas that report; the others count as 0 when that mean says scale up,
 * as on target when it says scale down (so a replica still starting never
 * makes the service shrink). -1 when none reports. */
/* The forecast term (autoscale.predict): the load series of the service,
 * one value a period, forecast predict_ms ahead by the rule the simulator
 * uses (xp_hpa_predict: trend, recent mean, same time yesterday), as a
 * per-replica value over the current count; -1 when off. A rate or a
 * count in flight is kept as the service's total; a latency as it is. */
static double forecast(struct xp_scaler *a, const struct xp_service *s, double total,
		       double per_replica)
{
	const struct xp_autoscale *as = &s->spec.scale;
	if (!as->predict_ms)
		return -1;
	size_t most = (size_t)(86400000 / as->period_ms) + 2 * XP_HPA_PRED_TREND + 16;
	most = most > 200000 ? 200000 : most;
	if (a->nhist >= most) { /* the oldest half goes */
		memmove(a->hist, a->hist + most / 2, (most - most / 2) * sizeof(*a->hist));
		a->nhist -= most / 2;
	}
	if (a->nhist == a->caphist) {
		a->caphist = a->caphist ? 2 * a->caphist : 64;
		a->caphist = a->caphist > most ? most : a->caphist;
		a->hist = xrealloc(a->hist, a->caphist * sizeof(*a->hist));
	}
	int latency = as->metric == XP_METRIC_LATENCY;
	a->hist[a->nhist++] = latency ? per_replica : total;
	double ahead = xp_hpa_predict(a->hist, a->nhist, (double)as->period_ms / 1000,
				      (double)as->predict_ms / 1000);
	return latency ? ahead : ahead / (s->desired ? s->desired : 1);
}

static double metric_now(struct xp_ctl *ctl, const struct xp_service *s, int64_t now,
			 uint32_t *measured, double *total)
{
	const struct xp_autoscale *as = &s->spec.scale;
	int64_t fresh = 3 * as->period_ms > 10000 ? 3 * as->period_ms : 10000;
	double sum = 0;
	uint32_t n = 0;
	for (size_t k = 0; k < s->jobs.n; k++) {
		const struct xp_job *j = xp_state_job(ctl->st, s->jobs.v[k]);
		const struct xp_svc_rep *p = j && serving(ctl, j) ? rep_of(ctl, j, 0) : NULL;
		if (p && p->load_at && now - p->load_at <= fresh) {
			sum += p->load;
			n++;
		}
	}
	*measured = n;
	*total = sum;
	if (!n)
		return -1;
	uint32_t all = s->desired > n ? s->desired : n;
	double mean = sum / n;
	return mean > as->target ? sum / all : (sum + (all - n) * as->target) / all;
}

static void autoscale(struct xp_ctl *ctl, struct xp_service *s, int64_t now)
{
	struct xp_scaler *a = s->spec.scale.on ? scaler_of(ctl, s) : NULL;
	if (!a || now < a->next_at)
		return;
	a->next_at = now + s->spec.scale.period_ms;
	uint32_t n;
	double total = 0;
	double m = metric_now(ctl, s, now, &n, &total);
	a->metric = m;
	a->measured = n;
	if (m < 0) {
		snprintf(a->why, sizeof(a->why), "no ready replica reports its %s yet",
			 xp_metric_name(s->spec.scale.metric));
		return;
	}
	double p = forecast(a, s, total, m);
	a->predicted = p;
	uint32_t want = xp_hpa_step(&a->h, now / 1000, s->desired, m, p);
	char reason[256], ahead[80] = "";
	if (p >= 0)
		snprintf(ahead, sizeof(ahead), ", %.3g forecast %llds ahead", p,
			 (long long)(s->spec.scale.predict_ms / 1000));
	snprintf(reason, sizeof(reason),
		 "autoscaler: %s %.3g per replica (%u of %u measured%s) against a target of %g: "
		 "%u -> %u replicas",
		 xp_metric_name(s->spec.scale.metric), m, n, s->desired, ahead,
		 s->spec.scale.target, s->desired, want);
	snprintf(a->why, sizeof(a->why), "%s", reason + 12);
	if (want == s->desired)
		return;
	struct xp_err err = { 0 };
	if (xp_ctl_journal(ctl, "service.scale", xp_rec_service_scale(s->spec.name, want, reason),
			   &err) < 0)
		fprintf(stderr, "xpool server: service %s: %s\n", s->spec.name, err.text);
}

static json_t *autoscale_json(struct xp_ctl *ctl, const struct xp_service *s)
{
	struct xp_scaler *a = NULL;
	for (size_t i = 0; i < ctl->nscalers && !a; i++)
		if (!strcmp(ctl->scalers[i].name, s->spec.name) &&
		    ctl->scalers[i].first_job == s->first_job)
			a = &ctl->scalers[i];
	json_t *o = json_pack("{s:s,s:f}", "metric", xp_metric_name(s->spec.scale.metric),
			      "target", s->spec.scale.target);
	if (a && a->metric >= 0)
		json_object_set_new(o, "current", json_real(a->metric));
	if (a && a->predicted >= 0)
		json_object_set_new(o, "forecast", json_real(a->predicted));
	if (a)
		json_object_set_new(o, "measured", json_integer(a->measured));
	if (a && a->why[0])
		json_object_set_new(o, "last", json_string(a->why));
	return o;
}

/* Every 10 s: replicas whose service is gone (a crash between
 * service.delete and its cancels, a cancel refused) are cancelled, and
 * the autoscalers of services gone are freed. */
static void sweep(struct xp_ctl *ctl, int64_t now)
{
	if (now < ctl->svc_sweep_at)
		return;
	ctl->svc_sweep_at = now + 10000;
	for (size_t i = 0; i < ctl->st->jobs.n; i++) {
		const struct xp_job *j = ctl->st->jobs.v[i];
		if (!j->spec.svc.name || xp_job_terminal(j->state))
			continue;
		long k = xp_state_service(ctl->st, j->spec.svc.name);
		if (k < 0 || j->id < ctl->st->services.v[k].first_job)
			cancel_replica(ctl, j->id, j->spec.svc.name, "its service is gone");
	}
	for (size_t i = 0; i < ctl->nscalers;) {
		long k = xp_state_service(ctl->st, ctl->scalers[i].name);
		if (k >= 0 && ctl->st->services.v[k].first_job == ctl->scalers[i].first_job) {
			i++;
			continue;
		}
		scaler_free(&ctl->scalers[i]);
		ctl->scalers[i] = ctl->scalers[--ctl->nscalers];
	}
}

void xp_services_tick(struct xp_ctl *ctl, int64_t now)
{
	int64_t span = 2 * (int64_t)ctl->o.heartbeat_ms + 1000;
	if (!ctl->svc_settle_until) /* the first tick: two heartbeats and a second */
		ctl->svc_settle_until = now + span;
	int settling = now < ctl->svc_settle_until;
	if (!settling)
		sweep(ctl, now);
	for (size_t n = 0; settling && n < ctl->st->nodes.n && n < ctl->live.n; n++) {
		const struct xp_nodeinfo *ni = &ctl->st->nodes.v[n];
		if (ni->source == XP_SRC_AGENT && !ni->removed && ni->state != XP_NODE_DOWN &&
		    ni->jobs && ctl->live.v[n].last_seen < ctl->svc_settle_until - span)
			break; /* a node with replicas has not spoken since the start */
		if (n + 1 == ctl->st->nodes.n || n + 1 == ctl->live.n)
			settling = 0; /* every one has: nothing is unknown */
	}
	for (size_t i = 0; i < ctl->st->services.n; i++) {
		struct xp_service *s = &ctl->st->services.v[i];
		stop_drained(ctl, s, now);
		autoscale(ctl, &ctl->st->services.v[i], now);
		s = &ctl->st->services.v[i];
		struct census c;
		count(ctl, s, &c);
		if (settling) { /* what runs is kept; only what is missing is added */
			if (!s->rolling && c.cur + c.old < s->desired)
				add_replicas(ctl, s, s->desired - c.cur - c.old, 0, now);
		} else if (s->rolling && !s->canary && !c.old && c.cur_ready >= s->desired) {
			rolled(ctl, s);
		} else if (c.old || s->canary || s->rolling) {
			roll(ctl, s, &c, now);
		} else if (c.cur < s->desired) {
			add_replicas(ctl, s, s->desired - c.cur, 0, now);
		} else if (c.cur > s->desired) {
			remove_replicas(ctl, s, c.cur - s->desired, CURRENT, UINT32_MAX, 0, now);
		}
	}
	publish(ctl);
}

/* ---- what the API shows ---- */

/* Per-endpoint weights that give a canary its share: each current one
 * W x old, each old one (100 - W) x current, scaled into HAProxy's 1..256;
 * 100 for all without a canary. */
static void weights(const struct xp_service *s, const struct census *c, int *wcur, int *wold)
{
	*wcur = *wold = 100;
	if (!s->canary || !c->cur_ready || !c->old_ready)
		return;
	double wc = (double)s->canary_weight * c->old_ready;
	double wo = (double)(100 - s->canary_weight) * c->cur_ready;
	double top = wc > wo ? wc : wo;
	*wcur = top > 0 ? (int)(wc * 256 / top + 0.5) : 0;
	*wold = top > 0 ? (int)(wo * 256 / top + 0.5) : 0;
	*wcur = !*wcur && s->canary_weight ? 1 : *wcur;
	*wold = !*wold && s->canary_weight < 100 ? 1 : *wold;
}

json_t *xp_service_endpoints(struct xp_ctl *ctl, const struct xp_service *s)
{
	json_t *a = json_array();
	struct census c;
	int wcur, wold;
	count(ctl, s, &c);
	weights(s, &c, &wcur, &wold);
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
						   (int)j->spec.svc.version, "weight",
						   j->spec.svc.version == s->version ? wcur : wold));
	}
	return a;
}

static const char *status_of(struct xp_ctl *ctl, const struct xp_service *s, uint32_t ready,
			     int64_t now, char *msg, size_t len)
{
	struct census c;
	count(ctl, s, &c);
	msg[0] = '\0';
	if (s->canary) {
		snprintf(msg, len,
			 "canary: version %u on %u of %u replicas (%u ready) takes %u%% of the "
			 "traffic; promote or roll back",
			 s->version, c.cur, s->canary, c.cur_ready, s->canary_weight);
		return "canary";
	}
	if (c.old) {
		snprintf(msg, len, "rolling out version %u: %u of %u ready, %u of the old left",
			 s->version, c.cur_ready, s->desired, c.old);
		return "progressing";
	}
	if (s->fail_streak && ready < s->desired && now - s->last_end_at < 10 * 60 * 1000) {
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
	if (ready >= s->desired)
		return "ready";
	/* not enough ready: say what holds the others */
	uint32_t unready = 0, pending = 0;
	const struct xp_job *waiting = NULL;
	for (size_t k = 0; k < s->jobs.n; k++) {
		const struct xp_job *j = xp_state_job(ctl->st, s->jobs.v[k]);
		if (!j || draining(ctl, j))
			continue;
		unready += j->state == XP_JOB_RUNNING && !serving(ctl, j);
		pending += j->state == XP_JOB_PENDING;
		waiting = !waiting && j->state == XP_JOB_PENDING ? j : waiting;
	}
	if (unready)
		snprintf(msg, len,
			 "%u running replica(s) not ready: %s on their port does not pass yet", unready,
			 s->spec.ready.kind == XP_PROBE_HTTP  ? "the readiness check (HTTP GET)"
			 : s->spec.ready.kind == XP_PROBE_CMD ? "the readiness command"
							      : "a TCP connect");
	else if (waiting)
		snprintf(msg, len, "%u replica(s) pending (job %llu: %s; xpool explain %llu)", pending,
			 (unsigned long long)waiting->id, xp_pend_name(waiting->verdict),
			 (unsigned long long)waiting->id);
	return "progressing";
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
	if (s->spec.scale.on)
		json_object_set_new(o, "autoscale", autoscale_json(ctl, s));
	json_t *sc = json_array(); /* the last scalings, newest last */
	for (uint32_t k = s->nscales > XP_SERVICE_SCALES ? s->nscales - XP_SERVICE_SCALES : 0;
	     k < s->nscales; k++) {
		const struct xp_scale_ev *e = &s->scales[k % XP_SERVICE_SCALES];
		xp_time_format(e->at, ts);
		json_array_append_new(sc, json_pack("{s:s,s:i,s:i,s:s}", "at", ts, "from",
						    (int)e->from, "to", (int)e->to, "reason",
						    e->reason));
	}
	json_object_set_new(o, "scalings", sc);
	return o;
}
