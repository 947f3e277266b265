/*
 * serving_queue: the latency model of `xpool sim serving` (serving.h):
 * M/M/c, c replicas each serving at rate mu, Poisson arrivals at lambda,
 * first come first served.
 *
 *   a = lambda / mu, rho = a / c (stable when rho < 1)
 *   Erlang B by the stable recursion B(0) = 1, B(k) = a B / (k + a B);
 *   Erlang C = B / (1 - rho (1 - B)), the probability that a request waits
 *   the wait W, given that it waits, is exponential with theta = c mu - lambda
 *   the response T = W + S, S exponential with mu, independent of W:
 *   P(T > x) = (1 - C) e^{-mu x} + C P(E_theta + E_mu > x), where
 *   P(E_theta + E_mu > x) = (mu e^{-theta x} - theta e^{-mu x}) / (mu - theta)
 *                           (theta != mu), (1 + mu x) e^{-mu x} (theta = mu).
 * Exponential service is the conservative end of the M/G/c family: its
 * tail is longer than that of the near-constant time of a diffusion model.
 */
#include <math.h>

#include "serving.h"

double xp_mmc_wait_prob(uint32_t c, double lambda, double mu)
{
	if (!(lambda > 0))
		return 0;
	if (c == 0 || !(mu > 0) || lambda >= (double)c * mu)
		return 1;
	double a = lambda / mu, b = 1, rho = a / c;
	for (uint32_t k = 1; k <= c; k++)
		b = a * b / ((double)k + a * b);
	return b / (1 - rho * (1 - b));
}

/* P(T > x) given Erlang C pc */
static double late_with(double pc, uint32_t c, double lambda, double mu, double x)
{
	double theta = (double)c * mu - lambda, both;
	if (fabs(theta - mu) < 1e-9 * mu)
		both = (1 + mu * x) * exp(-mu * x);
	else
		both = (mu * exp(-theta * x) - theta * exp(-mu * x)) / (mu - theta);
	return (1 - pc) * exp(-mu * x) + pc * both;
}

double xp_mmc_late(uint32_t c, double lambda, double mu, double x)
{
	if (!(lambda > 0))
		return x < 0 ? 1 : exp(-mu * x); /* a lone request is served at once */
	if (c == 0 || lambda >= (double)c * mu)
		return 1;
	if (x <= 0)
		return 1;
	return late_with(xp_mmc_wait_prob(c, lambda, mu), c, lambda, mu, x);
}

uint32_t xp_mmc_servers(double lambda, double mu, double x, double p, uint32_t cmax)
{
	if (!(lambda > 0))
		return 0;
	double a = lambda / mu, b = 1;
	for (uint32_t c = 1; c <= cmax; c++) {
		b = a * b / ((double)c + a * b); /* Erlang B, one server more */
		if ((double)c <= a)
			continue;
		double pc = b / (1 - a / c * (1 - b));
		if (late_with(pc, c, lambda, mu, x) <= p)
			return c;
	}
	return cmax;
}

double xp_mmc_quantile(uint32_t c, double lambda, double mu, double q)
{
	if (c == 0 || lambda >= (double)c * mu)
		return INFINITY;
	double lo = 0, hi = 1 / mu;
	while (xp_mmc_late(c, lambda, mu, hi) > 1 - q)
		hi *= 2;
	for (int i = 0; i < 100; i++) {
		double mid = (lo + hi) / 2;
		if (xp_mmc_late(c, lambda, mu, mid) > 1 - q)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}
