/*
 * test_hpa: the HPA rule (src/core/state/hpa.c) against a naive reference
 * written here from the Kubernetes documentation - an unbounded list of
 * every raw recommendation, scanned whole at each step - on random
 * options and inputs (thousands of steps per seed), and the hand cases of
 * the k8s HPA page (doubling, halving, the 0.1 tolerance, the 300 s
 * scale-down window, the default scale-up policy, min/max) and of the
 * forecast term.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/hpa.h"
#include "lib/rng.h"

/* ---- the reference: no ring, no shortcuts ---- */

struct ref {
	struct xp_hpa_opts o;
	int64_t *t;
	uint32_t *raw;
	size_t n, cap;
};

static uint32_t ref_rule(const struct xp_hpa_opts *o, uint32_t current, double metric)
{
	double c = current ? current : 1;
	if (metric < 0 || metric != metric)
		metric = 0;
	double r = metric / o->target;
	if (r - 1 <= o->tolerance && 1 - r <= o->tolerance)
		return (uint32_t)c;
	double w = ceil(c * r);
	return w > XP_HPA_MAX_REPLICAS ? XP_HPA_MAX_REPLICAS : (uint32_t)w;
}

static uint32_t ref_step(struct ref *f, int64_t now, uint32_t current, double metric,
			 double predicted)
{
	uint32_t raw = ref_rule(&f->o, current, metric);
	if (predicted >= 0 && ref_rule(&f->o, current, predicted) > raw)
		raw = ref_rule(&f->o, current, predicted);
	if (f->n == f->cap) {
		f->cap = f->cap ? 2 * f->cap : 64;
		f->t = realloc(f->t, f->cap * sizeof(*f->t));
		f->raw = realloc(f->raw, f->cap * sizeof(*f->raw));
	}
	f->t[f->n] = now;
	f->raw[f->n++] = raw;
	/* the samples remembered: the last `history` ones */
	size_t first = f->n > f->o.history ? f->n - f->o.history : 0;
	uint32_t lo = raw, hi = raw;
	for (size_t i = first; i < f->n; i++) {
		if (now - f->t[i] < f->o.up_window_s && f->raw[i] < lo)
			lo = f->raw[i];
		if (now - f->t[i] < f->o.down_window_s && f->raw[i] > hi)
			hi = f->raw[i];
	}
	long long want = current;
	if (want < lo)
		want = lo;
	if (want > hi)
		want = hi;
	if (want > current && (f->o.up_pods || f->o.up_percent)) {
		long long a = (long long)current + f->o.up_pods;
		long long b = (long long)ceil(current * (1 + f->o.up_percent / 100.0) - 1e-9);
		if (want > (a > b ? a : b))
			want = a > b ? a : b;
	}
	if (want < current && f->o.down_percent > 0 && f->o.down_percent < 100) {
		long long lowest = (long long)(current * (100 - f->o.down_percent) / 100);
		if (want < lowest)
			want = lowest;
	}
	if (want < f->o.min)
		want = f->o.min;
	if (want > f->o.max)
		want = f->o.max;
	return (uint32_t)want;
}

static double metric_draw(struct xp_rng *g, double target)
{
	switch (xp_rng_below(g, 6)) {
	case 0:
		return 0;
	case 1: /* on the tolerance's edge */
		return target * (xp_rng_below(g, 2) ? 1.1 : 0.9);
	case 2: /* exact multiples */
		return target * (double)xp_rng_below(g, 5);
	case 3:
		return target * 20 * xp_rng_double(g);
	default:
		return target * (0.5 + xp_rng_double(g));
	}
}

static void random_opts(struct xp_rng *g, struct xp_hpa_opts *o)
{
	xp_hpa_defaults(o);
	o->min = 1 + (uint32_t)xp_rng_below(g, 4);
	o->max = o->min + (uint32_t)xp_rng_below(g, 60);
	o->target = 0.5 + 100 * xp_rng_double(g);
	o->tolerance = xp_rng_below(g, 3) ? 0.1 : 0.3 * xp_rng_double(g);
	o->up_window_s = xp_rng_below(g, 2) ? 0 : (int64_t)xp_rng_below(g, 200);
	o->down_window_s = (int64_t)xp_rng_below(g, 600);
	o->up_pods = (uint32_t)xp_rng_below(g, 6);
	o->up_percent = xp_rng_below(g, 2) ? 100 : (uint32_t)xp_rng_below(g, 300);
	o->down_percent = (uint32_t)xp_rng_below(g, 120);
	/* mostly large enough for the windows; sometimes too small */
	o->history = xp_rng_below(g, 4) ? 1024 : 1 + xp_rng_below(g, 12);
}

static void test_random_against_reference(void **state)
{
	(void)state;
	size_t steps = 0;
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct xp_rng g;
		struct xp_hpa h;
		struct ref f = { 0 };
		xp_rng_seed(&g, seed);
		random_opts(&g, &f.o);
		assert_int_equal(xp_hpa_init(&h, &f.o, NULL), 0);
		int64_t now = (int64_t)xp_rng_below(&g, 1000);
		uint32_t current = f.o.min;
		for (int i = 0; i < 2500; i++, steps++) {
			now += 1 + (int64_t)xp_rng_below(&g, 30);
			double m = metric_draw(&g, f.o.target);
			double p = xp_rng_below(&g, 3) ? -1 : metric_draw(&g, f.o.target);
			uint32_t got = xp_hpa_step(&h, now, current, m, p);
			uint32_t want = ref_step(&f, now, current, m, p);
			if (got != want)
				fail_msg(
					"seed %llu step %d: current %u metric %g predicted %g: hpa "
					"%u, reference %u",
					(unsigned long long)seed, i, current, m, p, got, want);
			assert_true(got >= f.o.min && got <= f.o.max);
			assert_true(h.len <= f.o.history);
			/* the replicas follow, or lag (pods not created yet) */
			current =
				xp_rng_below(&g, 5) ? got : 1 + (uint32_t)xp_rng_below(&g, f.o.max);
		}
		xp_hpa_free(&h);
		free(f.t);
		free(f.raw);
	}
	print_message("%zu random steps agree with the reference\n", steps);
}

static struct xp_hpa mk(uint32_t min, uint32_t max, double target)
{
	struct xp_hpa_opts o;
	struct xp_hpa h;
	xp_hpa_defaults(&o);
	o.min = min;
	o.max = max;
	o.target = target;
	assert_int_equal(xp_hpa_init(&h, &o, NULL), 0);
	return h;
}

/* kubernetes.io, "Horizontal Pod Autoscaling", algorithm details */
static void test_k8s_doc_cases(void **state)
{
	(void)state;
	struct xp_hpa h = mk(1, 100, 100); /* target 100m */
	/* 200m against 100m: doubled */
	assert_int_equal(xp_hpa_step(&h, 0, 3, 200, -1), 6);
	xp_hpa_free(&h);
	/* 50m: halved, once the 300 s down window has no higher recommendation */
	h = mk(1, 100, 100);
	assert_int_equal(xp_hpa_step(&h, 0, 4, 50, -1), 2);
	xp_hpa_free(&h);
	h = mk(1, 100, 100);
	assert_int_equal(xp_hpa_step(&h, 0, 4, 100, -1), 4);
	assert_int_equal(xp_hpa_step(&h, 15, 4, 50, -1), 4);
	assert_int_equal(xp_hpa_step(&h, 299, 4, 50, -1), 4);
	assert_int_equal(xp_hpa_step(&h, 300, 4, 50, -1), 2); /* t=0 is out: not after cutoff */
	xp_hpa_free(&h);
	/* the tolerance: within 10 % nothing changes */
	h = mk(1, 100, 100);
	assert_int_equal(xp_hpa_step(&h, 0, 3, 105, -1), 3);
	assert_int_equal(xp_hpa_step(&h, 15, 3, 109, -1), 3);
	assert_int_equal(xp_hpa_step(&h, 30, 3, 111, -1), 4); /* ceil(3 x 1.11) */
	/* exactly 10 % over scales, in float64 as in k8s' Go code:
	 * |1.0 - 110/100| = 0.10000000000000009 > 0.1 */
	assert_int_equal(xp_hpa_step(&h, 45, 3, 110, -1), 4);
	xp_hpa_free(&h);
	/* the default scale-up policy: 4 pods or 100 % per period, the more */
	h = mk(1, 1000, 1);
	assert_int_equal(xp_hpa_step(&h, 0, 1, 100, -1), 5);
	assert_int_equal(xp_hpa_step(&h, 15, 5, 20, -1), 10);
	assert_int_equal(xp_hpa_step(&h, 30, 10, 10, -1), 20);
	xp_hpa_free(&h);
	/* min and max bound the result */
	h = mk(2, 8, 1);
	assert_int_equal(xp_hpa_step(&h, 0, 2, 0, -1), 2);
	assert_int_equal(xp_hpa_step(&h, 15, 8, 10, -1), 8);
	xp_hpa_free(&h);
}

static void test_forecast_term(void **state)
{
	(void)state;
	struct xp_hpa h = mk(1, 100, 100);
	/* at target now, three times the load expected ahead: scale up now */
	assert_int_equal(xp_hpa_step(&h, 0, 2, 100, 300), 6);
	/* a forecast below the reactive rule changes nothing */
	assert_int_equal(xp_hpa_step(&h, 15, 6, 200, 10), 12);
	xp_hpa_free(&h);
	/* a falling forecast does not scale down ahead of the load */
	h = mk(1, 100, 100);
	assert_int_equal(xp_hpa_step(&h, 0, 4, 100, 0), 4);
	xp_hpa_free(&h);
}

static void test_bad_options(void **state)
{
	(void)state;
	struct xp_hpa_opts o;
	struct xp_hpa h;
	struct xp_err err = { 0 };
	xp_hpa_defaults(&o);
	o.min = 5;
	o.max = 4;
	assert_int_equal(xp_hpa_init(&h, &o, &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "min_replicas"));
	xp_hpa_defaults(&o);
	o.target = 0;
	assert_int_equal(xp_hpa_init(&h, &o, &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "target"));
	xp_hpa_defaults(&o);
	o.history = 0;
	assert_int_equal(xp_hpa_init(&h, &o, &err), XP_EINVAL);
	xp_hpa_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_against_reference),
		cmocka_unit_test(test_k8s_doc_cases),
		cmocka_unit_test(test_forecast_term),
		cmocka_unit_test(test_bad_options),
	};
	return xp_run_tests(tests, NULL, NULL);
}
