/*
 * forecast: the brief's cost model for an hourly series,
 *
 *   C(t+1) = a * C(t) + b * sum_i w_i * F_i(t)
 *
 * with three factors: seasonal S (the series' mean at the same hour of the
 * week, or of the day with under two weeks of history), growth G (its
 * linear trend) and utilisation U (an outside series, e.g. the pool's GPU
 * utilisation; 0 when absent). a and the b*w_i are fitted by least squares
 * on a training prefix; the rest of the series is held out and predicted
 * one step ahead for the MAPE. Pure: numbers in, numbers out.
 */
#ifndef XP_FORECAST_H
#define XP_FORECAST_H

#include <stddef.h>

#define XP_FC_FACTORS 3 /* seasonal, growth, utilisation */

struct xp_forecast {
	double a;			   /* weight of C(t) */
	double b;			   /* sum of |b * w_i| */
	double w[XP_FC_FACTORS];	   /* w_i, summing to 1 in absolute value */
	double intercept;
	double mape;			   /* one step ahead on the held-out part, % */
	double mape_naive;		   /* of C(t+1) = C(t) on the same hours, % */
	size_t train, test;		   /* hours fitted, hours held out */
	/* internal: the fitted profile and trend, for predicting ahead */
	double season[168];
	int period; /* 168 or 24 */
	double g0, g1;
	double coef[XP_FC_FACTORS + 2]; /* C(t), S, G, U, 1 */
};

/* Fit on c[0 .. n*(1-holdout)) and score on the rest; u may be NULL.
 * hour0 is the hour of the week (0 = Monday 00:00 UTC) of c[0].
 * Returns 0, or -1 when the series is too short (under 48 hours). */
int xp_forecast_fit(const double *c, const double *u, size_t n, int hour0, double holdout,
		    struct xp_forecast *f);
/* Predict the h hours after c[n-1] (out[0..h)), feeding predictions back;
 * u of the future is taken as its last value. */
void xp_forecast_ahead(const struct xp_forecast *f, const double *c, const double *u, size_t n,
		       int hour0, size_t h, double *out);

#endif
