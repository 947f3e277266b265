/*
 * test_forecast: the cost forecast (src/lib/forecast.c) on a month of
 * simulated hourly usage with known seasonality - a daily cycle, quieter
 * weekends, 1 % growth a day, a utilisation series measured beside it,
 * and 3 % noise. Fitted on the first 23 days, scored on the last 7: the
 * one-step MAPE must be close to the noise and beat persistence (C(t+1) =
 * C(t)); the 24 hours ahead track the known shape; the fitted weights
 * give the seasonal factor its due. Too short a series is refused.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/forecast.h"
#include "lib/rng.h"

#define DAYS 30
#define N    (DAYS * 24)

static double truth(size_t t)
{
	int h = (int)(t % 24), dow = (int)((t / 24) % 7); /* t = 0: Monday 00:00 */
	double daily = 1 + 0.35 * sin(2 * M_PI * (h - 8) / 24.0);
	double week = dow >= 5 ? 0.6 : 1.0;
	return 100.0 * daily * week * (1 + 0.01 * (double)t / 24.0);
}

static double gauss(struct xp_rng *g)
{
	double u1 = xp_rng_double(g), u2 = xp_rng_double(g);
	if (u1 < 1e-12)
		u1 = 1e-12;
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

static void test_month(void **state)
{
	(void)state;
	double c[N], u[N], ahead[24];
	struct xp_forecast f;
	for (uint64_t seed = 1; seed <= 5; seed++) {
		struct xp_rng g;
		xp_rng_seed(&g, seed);
		for (size_t t = 0; t < N; t++) {
			c[t] = truth(t) * (1 + 0.03 * gauss(&g));
			/* the pool's utilisation in the same hour, measured apart */
			u[t] = c[t] / 200.0 * (1 + 0.05 * gauss(&g));
		}
		assert_int_equal(xp_forecast_fit(c, u, N, 0, 7.0 / DAYS, &f), 0);
		print_message("seed %llu: a %.3f b %.3f w (seasonal %.2f, growth %.2f, util %.2f) "
			      "MAPE %.2f %% (persistence %.2f %%) on %zu held-out hours\n",
			      (unsigned long long)seed, f.a, f.b, f.w[0], f.w[1], f.w[2], f.mape,
			      f.mape_naive, f.test);
		assert_int_equal(f.period, 168);
		assert_true(f.mape < 6.0);
		assert_true(f.mape < 0.75 * f.mape_naive);
		/* 24 hours beyond the month: within 15 % of the known curve */
		xp_forecast_ahead(&f, c, u, N, 0, 24, ahead);
		for (int k = 0; k < 24; k++)
			if (fabs(ahead[k] - truth(N + (size_t)k)) > 0.15 * truth(N + (size_t)k))
				fail_msg("seed %llu: hour +%d: %.1f, truth %.1f",
					 (unsigned long long)seed, k + 1, ahead[k],
					 truth(N + (size_t)k));
	}
	/* a series without utilisation still fits */
	assert_int_equal(xp_forecast_fit(c, NULL, N, 0, 0.25, &f), 0);
	assert_true(f.mape < 8.0);
	/* two weeks or less: a daily profile; under two days: refused */
	assert_int_equal(xp_forecast_fit(c, u, 10 * 24, 0, 0.2, &f), 0);
	assert_int_equal(f.period, 24);
	assert_int_equal(xp_forecast_fit(c, u, 47, 0, 0.2, &f), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_month),
	};
	return xp_run_tests(tests, NULL, NULL);
}
