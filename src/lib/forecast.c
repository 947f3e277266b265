/*
 * forecast: least squares for the brief's cost model (see forecast.h).
 */
#include "forecast.h"

#include <math.h>
#include <string.h>

#define NCOEF (XP_FC_FACTORS + 2)

static int slot(const struct xp_forecast *f, int hour0, size_t t)
{
	return (int)(((size_t)hour0 + t) % (size_t)f->period);
}

/* the features predicting c[t+1] from what is known at t */
static void features(const struct xp_forecast *f, double ct, const double *u, size_t t, int hour0,
		     double x[NCOEF])
{
	x[0] = ct;
	x[1] = f->season[slot(f, hour0, t + 1)];
	x[2] = f->g0 + f->g1 * (double)(t + 1);
	x[3] = u ? u[t] : 0;
	x[4] = 1;
}

/* solve A x = y (n x n, in place) by Gaussian elimination with pivoting;
 * a tiny ridge keeps constant features (no utilisation) solvable */
static void solve(double a[NCOEF][NCOEF], double y[NCOEF], double x[NCOEF])
{
	int n = NCOEF;
	for (int i = 0; i < n; i++)
		a[i][i] += 1e-9 * (1 + fabs(a[i][i]));
	for (int c = 0; c < n; c++) {
		int p = c;
		for (int r = c + 1; r < n; r++)
			if (fabs(a[r][c]) > fabs(a[p][c]))
				p = r;
		if (p != c) {
			for (int k = 0; k < n; k++) {
				double tmp = a[c][k];
				a[c][k] = a[p][k];
				a[p][k] = tmp;
			}
			double tmp = y[c];
			y[c] = y[p];
			y[p] = tmp;
		}
		if (fabs(a[c][c]) < 1e-300)
			continue;
		for (int r = c + 1; r < n; r++) {
			double m = a[r][c] / a[c][c];
			for (int k = c; k < n; k++)
				a[r][k] -= m * a[c][k];
			y[r] -= m * y[c];
		}
	}
	for (int r = n - 1; r >= 0; r--) {
		double s = y[r];
		for (int k = r + 1; k < n; k++)
			s -= a[r][k] * x[k];
		x[r] = fabs(a[r][r]) < 1e-300 ? 0 : s / a[r][r];
	}
}

static double predict(const struct xp_forecast *f, const double x[NCOEF])
{
	double p = 0;
	for (int k = 0; k < NCOEF; k++)
		p += f->coef[k] * x[k];
	return p < 0 ? 0 : p;
}

int xp_forecast_fit(const double *c, const double *u, size_t n, int hour0, double holdout,
		    struct xp_forecast *f)
{
	memset(f, 0, sizeof(*f));
	if (n < 48)
		return -1;
	if (holdout < 0)
		holdout = 0;
	if (holdout > 0.5)
		holdout = 0.5;
	size_t train = n - (size_t)((double)n * holdout);
	f->train = train;
	f->test = n - train;
	f->period = train >= 2 * 168 ? 168 : 24;
	/* seasonal profile and linear trend, from the training part alone */
	double sum[168] = { 0 }, cnt[168] = { 0 }, st = 0, sc = 0, stt = 0, stc = 0;
	for (size_t t = 0; t < train; t++) {
		int s = slot(f, hour0, t);
		sum[s] += c[t];
		cnt[s]++;
		st += (double)t;
		sc += c[t];
		stt += (double)t * (double)t;
		stc += (double)t * c[t];
	}
	for (int s = 0; s < f->period; s++)
		f->season[s] = cnt[s] ? sum[s] / cnt[s] : sc / (double)train;
	double den = (double)train * stt - st * st;
	f->g1 = den != 0 ? ((double)train * stc - st * sc) / den : 0;
	f->g0 = (sc - f->g1 * st) / (double)train;
	/* least squares for the coefficients */
	double a[NCOEF][NCOEF] = { { 0 } }, y[NCOEF] = { 0 }, x[NCOEF];
	for (size_t t = 0; t + 1 < train; t++) {
		features(f, c[t], u, t, hour0, x);
		for (int i = 0; i < NCOEF; i++) {
			y[i] += x[i] * c[t + 1];
			for (int k = 0; k < NCOEF; k++)
				a[i][k] += x[i] * x[k];
		}
	}
	solve(a, y, f->coef);
	f->a = f->coef[0];
	f->intercept = f->coef[4];
	for (int i = 0; i < XP_FC_FACTORS; i++)
		f->b += fabs(f->coef[1 + i]);
	for (int i = 0; i < XP_FC_FACTORS; i++)
		f->w[i] = f->b > 0 ? f->coef[1 + i] / f->b : 0;
	/* one step ahead on the held-out hours */
	double err = 0, errn = 0;
	size_t m = 0;
	for (size_t t = train - 1; t + 1 < n; t++) {
		if (c[t + 1] <= 0)
			continue;
		features(f, c[t], u, t, hour0, x);
		err += fabs(predict(f, x) - c[t + 1]) / c[t + 1];
		errn += fabs(c[t] - c[t + 1]) / c[t + 1];
		m++;
	}
	f->mape = m ? 100 * err / (double)m : 0;
	f->mape_naive = m ? 100 * errn / (double)m : 0;
	return 0;
}

void xp_forecast_ahead(const struct xp_forecast *f, const double *c, const double *u, size_t n,
		       int hour0, size_t h, double *out)
{
	double x[NCOEF], ct = n ? c[n - 1] : 0, ut = u && n ? u[n - 1] : 0;
	for (size_t k = 0; k < h; k++) {
		features(f, ct, NULL, n - 1 + k, hour0, x);
		x[3] = ut;
		ct = predict(f, x);
		out[k] = ct;
	}
}
