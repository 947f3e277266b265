/*
 * hpa: the Horizontal Pod Autoscaler's rule (hpa.h). The stabilisation
 * follows Kubernetes' stabilizeRecommendationWithBehaviors
 * (pkg/controller/podautoscaler/horizontal.go): raw recommendations are
 * remembered unclamped, the window bounds are taken over them, and the
 * current replica count is moved only as far as the bounds force it. The
 * ring forgets samples older than both windows (k8s reuses such a slot);
 * when it is full the oldest sample is overwritten, so a ring smaller than
 * the windows' steps shortens the windows - xp_hpa_init refuses nothing
 * for that, the caller sizes it (XP_HPA_HISTORY covers 300 s at 15 s).
 */
#include "hpa.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

void xp_hpa_defaults(struct xp_hpa_opts *o)
{
	*o = (struct xp_hpa_opts){
		.min = 1,
		.max = 10,
		.target = 1,
		.tolerance = XP_HPA_TOLERANCE,
		.up_window_s = XP_HPA_UP_WINDOW_S,
		.down_window_s = XP_HPA_DOWN_WINDOW_S,
		.up_pods = XP_HPA_UP_PODS,
		.up_percent = XP_HPA_UP_PERCENT,
		.down_percent = XP_HPA_DOWN_PERCENT,
		.history = XP_HPA_HISTORY,
	};
}

int xp_hpa_init(struct xp_hpa *h, const struct xp_hpa_opts *o, struct xp_err *err)
{
	memset(h, 0, sizeof(*h));
	if (o->min < 1 || o->min > o->max || o->max > XP_HPA_MAX_REPLICAS)
		return xp_errf(err, XP_EINVAL,
			       "hpa: min_replicas %u, max_replicas %u: need 1 <= min "
			       "<= max <= %u",
			       o->min, o->max, XP_HPA_MAX_REPLICAS);
	if (!(o->target > 0) || !isfinite(o->target))
		return xp_errf(err, XP_EINVAL, "hpa: target: expected a number > 0, got %g",
			       o->target);
	if (!(o->tolerance >= 0) || !isfinite(o->tolerance))
		return xp_errf(err, XP_EINVAL, "hpa: tolerance: expected a number >= 0, got %g",
			       o->tolerance);
	if (o->up_window_s < 0 || o->down_window_s < 0)
		return xp_errf(err, XP_EINVAL, "hpa: stabilisation windows must be >= 0 s");
	if (o->history < 1 || o->history > XP_HPA_MAX_HISTORY)
		return xp_errf(err, XP_EINVAL, "hpa: history: expected 1..%d samples, got %zu",
			       XP_HPA_MAX_HISTORY, o->history);
	h->o = *o;
	h->ring = XNEWV(struct xp_hpa_rec, o->history);
	return 0;
}

void xp_hpa_free(struct xp_hpa *h)
{
	if (!h)
		return;
	free(h->ring);
	h->ring = NULL;
	h->head = h->len = 0;
}

uint32_t xp_hpa_raw(const struct xp_hpa_opts *o, uint32_t current, double metric)
{
	if (current < 1)
		current = 1;
	if (!(metric >= 0)) /* NaN or negative: no load */
		metric = 0;
	double ratio = metric / o->target;
	if (fabs(ratio - 1) <= o->tolerance)
		return current;
	double want = ceil((double)current * ratio);
	return want >= XP_HPA_MAX_REPLICAS ? XP_HPA_MAX_REPLICAS : (uint32_t)want;
}

/* Forget what is older than both windows, then remember (now, raw). */
static void remember(struct xp_hpa *h, int64_t now, uint32_t raw)
{
	int64_t keep =
		h->o.up_window_s > h->o.down_window_s ? h->o.up_window_s : h->o.down_window_s;
	while (h->len && h->ring[h->head].t <= now - keep) {
		h->head = (h->head + 1) % h->o.history;
		h->len--;
	}
	if (h->len == h->o.history) { /* full: overwrite the oldest */
		h->head = (h->head + 1) % h->o.history;
		h->len--;
	}
	h->ring[(h->head + h->len) % h->o.history] = (struct xp_hpa_rec){ now, raw };
	h->len++;
}

/* The per-step rate limits of k8s' default scaling policies. */
static uint32_t rate_limit(const struct xp_hpa_opts *o, uint32_t current, uint32_t want)
{
	if (want > current && (o->up_pods || o->up_percent)) {
		uint64_t by_pct = ((uint64_t)current * o->up_percent + 99) / 100;
		uint64_t step = o->up_pods > by_pct ? o->up_pods : by_pct;
		if ((uint64_t)want > current + step)
			want = (uint32_t)(current + step);
	}
	if (want < current && o->down_percent && o->down_percent < 100) {
		/* k8s: int32(current * (1 - percent/100)), truncated */
		uint32_t lowest = (uint32_t)((uint64_t)current * (100 - o->down_percent) / 100);
		if (want < lowest)
			want = lowest;
	}
	return want;
}

uint32_t xp_hpa_step(struct xp_hpa *h, int64_t now, uint32_t current, double metric,
		     double predicted)
{
	uint32_t raw = xp_hpa_raw(&h->o, current, metric);
	if (predicted >= 0) {
		uint32_t ahead = xp_hpa_raw(&h->o, current, predicted);
		if (ahead > raw)
			raw = ahead;
	}
	remember(h, now, raw);
	uint32_t up = raw, down = raw;
	for (size_t i = 0; i < h->len; i++) {
		const struct xp_hpa_rec *r = &h->ring[(h->head + i) % h->o.history];
		if (r->t > now - h->o.up_window_s && r->raw < up)
			up = r->raw;
		if (r->t > now - h->o.down_window_s && r->raw > down)
			down = r->raw;
	}
	uint32_t want = current;
	if (want < up)
		want = up;
	if (want > down)
		want = down;
	want = rate_limit(&h->o, current, want);
	if (want < h->o.min)
		want = h->o.min;
	if (want > h->o.max)
		want = h->o.max;
	return want;
}

/* least squares over obs[n-k..n), evaluated `ahead` steps after the last */
static double trend(const double *obs, size_t n, size_t k, double ahead)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0;
	for (size_t i = 0; i < k; i++) {
		double x = (double)i, y = obs[n - k + i];
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
	}
	double d = (double)k * sxx - sx * sx;
	double b = d > 0 ? ((double)k * sxy - sx * sy) / d : 0;
	double a = (sy - b * sx) / (double)k;
	return a + b * ((double)(k - 1) + ahead);
}

static double mean_of(const double *v, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	return n ? s / (double)n : 0;
}

double xp_hpa_predict(const double *obs, size_t n, double step_s, double lead_s)
{
	if (!n)
		return 0;
	double ahead = lead_s / step_s, best = obs[n - 1];
	size_t k3 = n < 3 ? n : 3, kt = n < XP_HPA_PRED_TREND ? n : XP_HPA_PRED_TREND;
	double m3 = mean_of(obs + n - k3, k3);
	if (m3 > best)
		best = m3;
	if (kt >= 3) {
		double tr = trend(obs, n, kt, ahead);
		if (tr > best)
			best = tr;
	}
	size_t day = (size_t)llround(86400 / step_s), lead = (size_t)llround(ahead);
	if (n > day + kt && lead < day) { /* same time yesterday, scaled to today's level */
		size_t at = n - 1 - day + lead;
		double then = mean_of(obs + n - day - kt, kt), now = mean_of(obs + n - kt, kt);
		double ratio = then > 0 ? now / then : 1;
		double y = obs[at] * (ratio < 4 ? ratio : 4);
		if (y > best)
			best = y;
	}
	return best;
}

double xp_hpa_noise(const double *obs, size_t n)
{
	size_t k = n < XP_HPA_PRED_TREND ? n : XP_HPA_PRED_TREND;
	if (k < 2)
		return 0;
	double m = mean_of(obs + n - k, k), ss = 0;
	for (size_t i = n - k; i < n; i++)
		ss += (obs[i] - m) * (obs[i] - m);
	return sqrt(ss / (double)(k - 1));
}
