/*
 * serving: one run of `xpool sim serving` (serving.h): the step loop, the
 * service's replicas under each policy, and the accounting. The training
 * backlog is serving_train.c's, the queue model serving_queue.c's.
 *
 * A step at t: GPUs whose grace ended return to free and replicas whose
 * startup ended become ready; jobs that arrived join the queue; the
 * service decides its replicas (HPA on the last complete window of the
 * series, the metric a real scrape would have); wanted replicas take free
 * GPUs, then, if still short, reclaim them from training (draining for
 * grace_s); training takes what is left; then [t, t + step) is accounted
 * (held GPUs, the SLO at the true rate, work done).
 */
#include "serving.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/state/hpa.h"
#include "../lib/xalloc.h"
#include "serving_int.h"

static const char *const names[XP_SERVE_NPOLICIES] = { "static", "reactive", "xpool" };

const char *xp_serve_policy_name(int policy)
{
	return policy >= 0 && policy < XP_SERVE_NPOLICIES ? names[policy] : "?";
}

int xp_serve_policy_parse(const char *s)
{
	for (int k = 0; k < XP_SERVE_NPOLICIES; k++)
		if (!strcmp(s, names[k]))
			return k;
	return -1;
}

void xp_serve_defaults(struct xp_serve_opts *o)
{
	*o = (struct xp_serve_opts){
		.gpus = 64,
		.min_replicas = 2,
		.capacity = 0.29,
		.target = 0.7,
		.tolerance = XP_HPA_TOLERANCE,
		.down_window_s = XP_HPA_DOWN_WINDOW_S,
		.up_window_s = XP_HPA_UP_WINDOW_S,
		.slo_s = 30,
		.headroom = 0.4,
		.step_s = XP_HPA_SYNC_S,
		.startup_s = 60,
		.grace_s = 30,
		.restart_s = 60,
		.ckpt_s = 1800,
		.lead_s = 300,
		.noise_z = 2, /* forecast + 2 sigma: about its 97.7th percentile */
		.regrow_s = 300,
		.train_load = 1.0,
		.job_hours = 2.0,
		.seed = 1,
	};
}

static int check(const struct xp_serve_opts *o, struct xp_err *err)
{
	if (o->gpus < 1 || o->gpus > 100000)
		return xp_errf(err, XP_EINVAL, "gpus: expected 1..100000, got %u", o->gpus);
	if (o->min_replicas < 1 || o->min_replicas > o->gpus)
		return xp_errf(err, XP_EINVAL, "min-replicas: expected 1..%u (the pool), got %u",
			       o->gpus, o->min_replicas);
	if (!(o->capacity > 0) || !(o->target > 0 && o->target <= 1) || !(o->slo_s > 0))
		return xp_errf(err, XP_EINVAL, "capacity and slo must be > 0, target in (0, 1]");
	if (o->step_s < 1 || o->startup_s < 0 || o->grace_s < 0 || o->restart_s < 0 ||
	    o->ckpt_s < 1 || o->lead_s < 0 || o->regrow_s < 0)
		return xp_errf(err, XP_EINVAL, "times: step and checkpoint >= 1 s, others >= 0");
	if (!(o->noise_z >= 0))
		return xp_errf(err, XP_EINVAL, "noise-z: expected a number >= 0");
	if (!(o->train_load >= 0) || !(o->job_hours > 0) || !(o->headroom >= 0))
		return xp_errf(err, XP_EINVAL, "train-load and headroom >= 0, job-hours > 0");
	return 0;
}

/* replicas held by the service: ready, starting, and wanted without a GPU */
static uint32_t current(const struct sv *s)
{
	return s->ready + (uint32_t)s->starting.n + s->waiting;
}

static void release(struct sv *s)
{
	size_t k = 0;
	while (k < s->drain.n && s->drain.v[k].at <= s->t) {
		s->free += s->drain.v[k].n;
		s->draining -= s->drain.v[k].n;
		k++;
	}
	if (k) /* (an empty list has no storage: memmove of NULL is undefined) */
		memmove(s->drain.v, s->drain.v + k, (s->drain.n - k) * sizeof(*s->drain.v));
	s->drain.n -= k;
	size_t keep = 0;
	for (size_t i = 0; i < s->starting.n; i++)
		if (s->starting.v[i] <= s->t)
			s->ready++;
		else
			s->starting.v[keep++] = s->starting.v[i];
	s->starting.n = keep;
}

/* fewer replicas: unplaced first, then the latest to start, then ready */
static void scale_down(struct sv *s, uint32_t by)
{
	uint32_t k = by < s->waiting ? by : s->waiting;
	s->waiting -= k;
	by -= k;
	while (by && s->starting.n) {
		s->starting.n--; /* appended in time order: the last starts last */
		s->free++;
		by--;
	}
	k = by < s->ready ? by : s->ready;
	s->ready -= k;
	s->free += k;
}

/* xpool's forecast term, as the load the HPA's rule turns into replicas:
 * the larger of the load forecast lead_s ahead and the load at the target
 * of the replicas the queue model needs for the SLO at that forecast plus
 * noise_z times the load's recent noise */
static double forecast(const struct sv *s, size_t nobs)
{
	const struct xp_serve_opts *o = s->o;
	const struct xp_load *l = s->l;
	double ahead = xp_hpa_predict(l->qps, nobs, l->step_s, (double)o->lead_s);
	double hi = ahead + o->noise_z * xp_hpa_noise(l->qps, nobs);
	uint32_t c = xp_mmc_servers(hi, o->capacity, o->slo_s, 0.01, o->gpus);
	double slo = (double)c * o->target * o->capacity;
	return ahead > slo ? ahead : slo;
}

/* the HPA's step on the last complete window (and, for xpool, a forecast) */
static void decide(struct sv *s, struct xp_hpa *h)
{
	const struct xp_load *l = s->l;
	long k = (long)floor(s->t / l->step_s) - 1;
	size_t nobs = k < 0 ? 1 : (size_t)k + 1;
	if (nobs > l->n)
		nobs = l->n;
	double seen = l->qps[nobs - 1], predicted = -1;
	uint32_t cur = current(s);
	if (s->policy == XP_SERVE_XPOOL)
		predicted = forecast(s, nobs) / cur;
	uint32_t want = xp_hpa_step(h, (int64_t)llround(s->t), cur, seen / cur, predicted);
	if (want > cur) {
		s->waiting += want - cur;
		s->r->scale_ups++;
	} else if (want < cur) {
		scale_down(s, cur - want);
		s->r->scale_downs++;
	}
}

static void place(struct sv *s)
{
	while (s->waiting && s->free) {
		xp_vec_push(&s->starting, s->t + (double)s->o->startup_s);
		s->waiting--;
		s->free--;
	}
	if (s->waiting > s->draining && s->policy != XP_SERVE_STATIC)
		sv_train_reclaim(s, s->waiting - s->draining);
}

/* [t, t + dt): held GPUs, the SLO, the served work, the minute's series */
static int account(struct sv *s, uint8_t *late)
{
	struct xp_serve_result *r = s->r;
	const struct xp_serve_opts *o = s->o;
	uint32_t held = s->ready + (uint32_t)s->starting.n, train = sv_train_held(s) + s->draining;
	if (held + train + s->free != o->gpus)
		return -1;
	double lambda = xp_load_at(s->l, s->t), dt = s->dt, h = dt / 3600;
	r->serve_gpu_h += held * h;
	r->train_alloc_gpu_h += train * h;
	double served = lambda < s->ready * o->capacity ? lambda : s->ready * o->capacity;
	r->busy_gpu_h += served / o->capacity * h;
	if (held > r->replicas_max)
		r->replicas_max = held;
	if (held + train > r->alloc_max)
		r->alloc_max = held + train;
	size_t m = (size_t)(s->t / 60);
	if (m < r->ns) {
		if (lambda > 0 && xp_mmc_late(s->ready, lambda, o->capacity, o->slo_s) > 0.01)
			late[m] |= 1;
		if (lambda > 0)
			late[m] |= 2;
		late[m] |= 4;
		r->load[m] += lambda * dt / 60;
		r->replicas[m] += held * dt / 60;
		r->ready[m] += s->ready * dt / 60;
		r->train[m] += train * dt / 60;
		r->util[m] += (double)(held + train) / o->gpus * dt / 60;
	}
	return 0;
}

static void alloc_series(struct xp_serve_result *r, double horizon)
{
	r->ns = (size_t)ceil(horizon / 60);
	r->t_h = XNEWV(double, r->ns + 1);
	r->load = XNEWV(double, r->ns + 1);
	r->replicas = XNEWV(double, r->ns + 1);
	r->ready = XNEWV(double, r->ns + 1);
	r->train = XNEWV(double, r->ns + 1);
	r->util = XNEWV(double, r->ns + 1);
	for (size_t m = 0; m < r->ns; m++)
		r->t_h[m] = (double)m / 60;
}

static void finish(struct sv *s, const uint8_t *late, double horizon)
{
	struct xp_serve_result *r = s->r;
	for (size_t m = 0; m < r->ns; m++) {
		r->minutes += (late[m] & 4) != 0;
		r->slo_minutes += (late[m] & 1) != 0;
		r->load_minutes += (late[m] & 2) != 0;
	}
	for (size_t i = 0; i < s->njobs; i++)
		r->train_gpu_h += s->jobs[i].done / 3600;
	r->busy_gpu_h += r->train_gpu_h + r->lost_gpu_h;
	r->hours = horizon / 3600;
	r->pool_gpu_h = r->hours * s->o->gpus;
	r->alloc_gpu_h = r->serve_gpu_h + r->train_alloc_gpu_h;
	r->replicas_mean = r->hours > 0 ? r->serve_gpu_h / r->hours : 0;
}

static uint32_t initial_replicas(const struct sv *s)
{
	const struct xp_serve_opts *o = s->o;
	double peak = xp_load_peak(s->l), per = o->target * o->capacity;
	double n = s->policy == XP_SERVE_STATIC ? ceil(peak / o->capacity * (1 + o->headroom))
						: ceil(s->l->qps[0] / per);
	if (n < o->min_replicas)
		n = o->min_replicas;
	return n > o->gpus ? o->gpus : (uint32_t)n;
}

static int loop(struct sv *s, struct xp_hpa *h, double horizon, struct xp_err *err)
{
	uint8_t *late = XNEWV(uint8_t, s->r->ns + 1);
	int rc = 0;
	for (int64_t i = 0; rc == 0 && (double)i * s->dt < horizon; i++) {
		s->t = (double)i * s->dt;
		release(s);
		sv_train_arrivals(s);
		if (s->policy != XP_SERVE_STATIC)
			decide(s, h);
		place(s);
		sv_train_place(s);
		if (account(s, late) < 0)
			rc = xp_errf(err, XP_EINTERNAL, "serving: GPUs lost at t=%.0f s", s->t);
		sv_train_progress(s);
	}
	if (rc == 0)
		finish(s, late, horizon);
	free(late);
	return rc;
}

int xp_serve_run(const struct xp_load *l, const struct xp_serve_opts *o, int policy,
		 struct xp_serve_result *r, struct xp_err *err)
{
	struct sv s = { .l = l, .o = o, .policy = policy, .r = r, .dt = (double)o->step_s };
	struct xp_hpa h;
	struct xp_hpa_opts ho;
	int rc;
	memset(r, 0, sizeof(*r));
	r->policy = policy;
	if ((rc = check(o, err)) < 0)
		return rc;
	if (!l->n)
		return xp_errf(err, XP_EINVAL, "serving: an empty load series");
	xp_hpa_defaults(&ho);
	ho.min = o->min_replicas;
	ho.max = o->gpus;
	ho.target = o->target * o->capacity;
	ho.tolerance = o->tolerance;
	ho.up_window_s = o->up_window_s;
	ho.down_window_s = o->down_window_s;
	if ((rc = xp_hpa_init(&h, &ho, err)) < 0)
		return rc;
	double horizon = xp_load_duration(l);
	s.elastic = policy == XP_SERVE_XPOOL;
	s.ready = initial_replicas(&s);
	s.free = o->gpus - s.ready;
	if (policy == XP_SERVE_STATIC)
		r->static_replicas = s.ready;
	alloc_series(r, horizon);
	sv_jobs_make(&s, horizon);
	rc = loop(&s, &h, horizon, err);
	xp_hpa_free(&h);
	free(s.jobs);
	xp_vec_free(&s.queue);
	xp_vec_free(&s.starting);
	xp_vec_free(&s.drain);
	if (rc < 0)
		xp_serve_result_free(r);
	return rc;
}

void xp_serve_result_free(struct xp_serve_result *r)
{
	if (!r)
		return;
	free(r->t_h);
	free(r->load);
	free(r->replicas);
	free(r->ready);
	free(r->train);
	free(r->util);
	r->t_h = r->load = r->replicas = r->ready = r->train = r->util = NULL;
	r->ns = 0;
}
