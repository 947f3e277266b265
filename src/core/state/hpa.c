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
