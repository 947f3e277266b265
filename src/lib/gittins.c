/*
 * gittins: Kaplan-Meier on a log grid with the mass spread evenly inside
 * each bin, then the Gittins index by one scan of the bins above the
 * attained service (gittins.h).
 *
 * Inside a bin of width w the density f is constant and the survival falls
 * linearly from S0, so from a point where N mass has been passed and D
 * service spent (both per unit of survival at a), stopping t further on
 * gives (N + f t) / (D + S0 t - f t^2 / 2). Its derivative vanishes where
 * f^2 t^2 / 2 + N f t + (f D - N S0) = 0: the best t in the bin is that
 * root when it lies inside, else an end.
 */
#include "gittins.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

void xp_gittins_init(struct xp_gittins *g, double lo, double hi, int per_decade)
{
	memset(g, 0, sizeof(*g));
	g->lo = lo;
	g->step = per_decade;
	g->nb = (int)ceil(log10(hi / lo) * per_decade) + 1;
	g->top = -1;
	g->fin_n = xcalloc((size_t)g->nb, sizeof(double));
	g->cen_n = xcalloc((size_t)g->nb, sizeof(double));
	g->p = xcalloc((size_t)g->nb, sizeof(double));
	g->s = xcalloc((size_t)g->nb + 1, sizeof(double));
}

void xp_gittins_free(struct xp_gittins *g)
{
	free(g->fin_n);
	free(g->cen_n);
	free(g->p);
	free(g->s);
	memset(g, 0, sizeof(*g));
}

static int bin_of(const struct xp_gittins *g, double x)
{
	if (!(x > g->lo))
		return 0;
	double b = floor(log10(x / g->lo) * g->step);
	return b >= g->nb - 1 ? g->nb - 1 : (int)b;
}

/* bin 0 reaches down to 0: it holds every size below lo too */
static double edge(const struct xp_gittins *g, int b)
{
	return b ? g->lo * pow(10, b / g->step) : 0;
}

void xp_gittins_finished(struct xp_gittins *g, double size)
{
	int b = bin_of(g, size);
	g->fin_n[b] += 1;
	g->nfin++;
}

void xp_gittins_censor_clear(struct xp_gittins *g)
{
	memset(g->cen_n, 0, (size_t)g->nb * sizeof(double));
	g->ncen = 0;
}

void xp_gittins_censored(struct xp_gittins *g, double attained)
{
	g->cen_n[bin_of(g, attained)] += 1;
	g->ncen++;
}

void xp_gittins_build(struct xp_gittins *g)
{
	double risk = (double)(g->nfin + g->ncen), surv = 1;
	g->top = -1;
	for (int b = 0; b < g->nb; b++) {
		double d = g->fin_n[b];
		g->s[b] = surv;
		g->p[b] = 0;
		if (d > 0 && risk > 0) {
			double s = surv * (1 - d / risk);
			g->p[b] = surv - s;
			surv = s;
		}
		if (d > 0 || g->cen_n[b] > 0)
			g->top = b;
		risk -= d + g->cen_n[b];
	}
	g->s[g->nb] = surv;
	g->tail = g->top >= 0 && surv > 1e-12 ? surv : 0;
	g->tail_v = g->top >= 0 ? edge(g, g->top + 1) : 0;
}

/* the best of (n + f t) / (d + s0 t - f t^2 / 2) for t in [0, w]; n, d
 * already include the segment before */
static double best_in_bin(double n, double d, double s0, double f, double w)
{
	double best = d > 0 ? n / d : 0, end = d + s0 * w - f * w * w / 2;
	if (end > 0 && (n + f * w) / end > best)
		best = (n + f * w) / end;
	if (f > 0) {
		double disc = n * n - 2 * (f * d - n * s0);
		if (disc >= 0) {
			double t = (-n + sqrt(disc)) / f;
			double dt = d + s0 * t - f * t * t / 2;
			if (t > 0 && t < w && dt > 0 && (n + f * t) / dt > best)
				best = (n + f * t) / dt;
		}
	}
	return best;
}

double xp_gittins_index(const struct xp_gittins *g, double a)
{
	if (g->top < 0 || !(a < g->tail_v))
		return 0;
	int b0 = bin_of(g, a);
	double x = a, w0 = edge(g, b0 + 1) - edge(g, b0);
	double s = g->s[b0] - g->p[b0] * (a - edge(g, b0)) / w0, n = 0, d = 0, best = 0;
	double sa = s;
	if (!(sa > 0))
		return 0;
	for (int b = b0; b <= g->top; b++) {
		double hi = edge(g, b + 1), w = hi - x;
		double f = g->p[b] / (hi - edge(g, b)); /* mass per unit of service */
		double r = best_in_bin(n / sa, d / sa, s / sa, f / sa, w);
		if (r > best)
			best = r;
		n += f * w;
		d += w * (s + s - f * w) / 2;
		s -= f * w;
		x = hi;
	}
	/* the tail, at the top of the highest bin reached */
	if (g->tail > 0 && d > 0 && (n + g->tail) / d > best)
		best = (n + g->tail) / d;
	return best;
}
