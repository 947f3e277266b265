/*
 * hpa: Kubernetes' Horizontal Pod Autoscaler rule as a pure function of
 * its inputs, shared by the serving simulator (src/sim/serving.c) and, later,
 * the controller's service autoscaler. Every constant and its Kubernetes
 * source: docs/design/serving.md.
 *
 * One step (k8s: one sync of the HPA controller, every 15 s by default):
 *
 *   raw      = current                       when |metric/target - 1| <= tolerance
 *            = ceil(current * metric / target) otherwise
 *   (with a forecast, raw = max(raw, the same rule on the predicted metric))
 *   the raw value is remembered as (now, raw) in a bounded ring;
 *   up       = min of the raw values of the last up_window_s (this one included)
 *   down     = max of the raw values of the last down_window_s (this one included)
 *   stable   = current, raised to up when below it, lowered to down when above it
 *   rated    = stable within the per-step rate limits (k8s' default policies:
 *              up by at most max(up_pods, current * up_percent / 100),
 *              down by at most current * down_percent / 100)
 *   desired  = rated clamped to [min, max]
 *
 * "metric" is the per-replica average of the load signal over the current
 * replicas, as the HPA computes it (unready replicas count as zero load
 * when scaling up). A sample is in a window when its time is strictly
 * after now - window (k8s: timestamp.After(cutoff)), so a window of 0
 * holds the current step alone.
 *
 * Pure: no clock (now is an argument), no I/O; the ring is allocated
 * through src/lib/xalloc at init. Ownership: an xp_hpa owns its ring
 * (xp_hpa_free, NULL-safe).
 */
#ifndef XP_HPA_H
#define XP_HPA_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/err.h"

#define XP_HPA_TOLERANCE     0.1 /* --horizontal-pod-autoscaler-tolerance */
#define XP_HPA_SYNC_S	     15	 /* --horizontal-pod-autoscaler-sync-period */
#define XP_HPA_UP_WINDOW_S   0	 /* behavior.scaleUp.stabilizationWindowSeconds */
#define XP_HPA_DOWN_WINDOW_S 300 /* behavior.scaleDown.stabilizationWindowSeconds */
#define XP_HPA_UP_PODS	     4	 /* default scaleUp policy: 4 pods per 15 s ... */
#define XP_HPA_UP_PERCENT    100 /* ... or 100 % per 15 s, whichever is more */
#define XP_HPA_DOWN_PERCENT  100 /* default scaleDown policy: 100 % per 15 s */
#define XP_HPA_HISTORY	     64	 /* ring of (time, raw recommendation) */
#define XP_HPA_MAX_REPLICAS  100000
#define XP_HPA_MAX_HISTORY   65536

struct xp_hpa_opts {
	uint32_t min, max;     /* replicas, 1 <= min <= max */
	double target;	       /* per-replica target of the metric, > 0 */
	double tolerance;      /* >= 0 */
	int64_t up_window_s;   /* >= 0 */
	int64_t down_window_s; /* >= 0 */
	uint32_t up_pods;      /* 0 with up_percent 0: no limit on scaling up */
	uint32_t up_percent;   /* 0 with up_pods 0: no limit */
	uint32_t down_percent; /* 0 or >= 100: no limit on scaling down */
	size_t history;	       /* ring size, >= 1 */
};

struct xp_hpa_rec {
	int64_t t;
	uint32_t raw;
};

struct xp_hpa {
	struct xp_hpa_opts o;
	struct xp_hpa_rec *ring;
	size_t head, len; /* oldest at ring[head] */
};

/* The Kubernetes defaults above; min 1, max 10, target 1. */
void xp_hpa_defaults(struct xp_hpa_opts *o);
/* Check o and set up h; 0, or XP_EINVAL naming the bad field. */
int xp_hpa_init(struct xp_hpa *h, const struct xp_hpa_opts *o, struct xp_err *err);
void xp_hpa_free(struct xp_hpa *h);

/* The raw rule alone (tolerance and ceil, no window, no clamp); current 0
 * counts as 1 (a per-replica average needs a replica). */
uint32_t xp_hpa_raw(const struct xp_hpa_opts *o, uint32_t current, double metric);

/* One step at now (non-decreasing across calls): the desired replicas.
 * predicted < 0: no forecast; else the forecast per-replica metric over
 * the current replicas a lead time ahead. */
uint32_t xp_hpa_step(struct xp_hpa *h, int64_t now, uint32_t current, double metric,
		     double predicted);

/* xpool's forecast of the rate lead_s ahead from what was observed so far
 * (obs[0..n), one value per step_s): the largest of the last value, the
 * mean of the last three, and a least-squares line over the last
 * XP_HPA_PRED_TREND steps extrapolated lead_s ahead; with more than a day of
 * history, also the value a day before the target time scaled by today's
 * recent level over yesterday's. 0 when n is 0. */
#define XP_HPA_PRED_TREND 10
double xp_hpa_predict(const double *obs, size_t n, double step_s, double lead_s);
/* The load's short-term noise: the standard deviation of the last
 * XP_HPA_PRED_TREND values (0 under two). */
double xp_hpa_noise(const double *obs, size_t n);

#endif
