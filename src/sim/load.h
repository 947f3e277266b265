/*
 * load: an inference service's load series for `xpool sim serving`
 * (serving.h, docs/design/serving.md), and the forecast xpool's policy
 * makes of it.
 *
 * Two shapes of CSV are read:
 *   the GenAI trace's qps.csv (header timestamp_anon,value,container_ip,
 *     request_type): one row per container and sample (every 57 s), its
 *     value that container's request rate. The service's load is the rows
 *     of one request type summed over the containers per time window
 *     (XP_LOAD_GENERATIVE by default; the gateway's `API Requests` rows,
 *     which have no container, are a separate series). A window of W s
 *     holds W / sample_s sample instants, so its rate is
 *     sum x sample_s / W; the default window is the sample period itself,
 *     one instant a window. sample_s is the most common gap between
 *     consecutive distinct timestamps.
 *   any other CSV of time,qps: the columns named `time` and `qps`, else
 *     the first two; time in seconds, any origin, rows in any order. A
 *     window's rate is the mean of its rows; a window without rows keeps
 *     the one before (a rate holds until it is measured again).
 * Windows start at the first row's time (for the GenAI file, its first row
 * of any type, so the series share one time axis). Errors name the file
 * and line.
 *
 * Ownership: a struct xp_load owns its series (xp_load_free, NULL-safe).
 */
#ifndef XP_SIM_LOAD_H
#define XP_SIM_LOAD_H

#include <stddef.h>

#include "../lib/err.h"

enum { XP_LOAD_GENERATIVE, XP_LOAD_API, XP_LOAD_BOTH };

#define XP_LOAD_MAX_WINDOWS (1u << 22) /* about 48 days at 1 s */

struct xp_load {
	char name[64];
	double *qps;	 /* per window, requests/s */
	size_t n;	 /* windows */
	double step_s;	 /* window length, s (after time scaling) */
	double sample_s; /* GenAI: the trace's sample period (57 s); else 0 */
	size_t rows;	 /* rows used */
	int genai;	 /* read as the GenAI trace */
};

/* Read path; window_s 0: the default (the sample period, or 60 s).
 * series: which GenAI request type (ignored for other files). */
int xp_load_read(const char *path, double window_s, int series, struct xp_load *l,
		 struct xp_err *err);
void xp_load_free(struct xp_load *l);
/* Stretch time by time_scale (> 1 slower, < 1 faster) and multiply the
 * rate by qps_scale. */
void xp_load_scale(struct xp_load *l, double time_scale, double qps_scale);
/* The rate at t seconds from the start (0 beyond the end). */
double xp_load_at(const struct xp_load *l, double t);
double xp_load_peak(const struct xp_load *l);
double xp_load_mean(const struct xp_load *l);
double xp_load_duration(const struct xp_load *l);

/* The forecast of a load series and its noise: xp_hpa_predict() and
 * xp_hpa_noise() in core/state/hpa.h, shared with the live autoscaler. */

#endif
