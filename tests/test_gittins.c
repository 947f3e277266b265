/*
 * test_gittins: the learned Gittins index (src/lib/gittins.c).
 *
 *  - a naive reference on random inputs: Kaplan-Meier by the textbook
 *    product over the distinct observed times (events before censorings at
 *    a tie), each atom's mass spread evenly over its bin as the module
 *    models it, then the index by trying stopping points on a fine grid
 *    (every bin cut in 100) and integrating the survival between them.
 *    Observations take one value per bin, so the module's binned estimate
 *    is the textbook one; the index must match the sampled maximum to the
 *    sampling's resolution, and never fall below it;
 *  - behaviour: a falling-hazard distribution gives least attained service
 *    (the index falls with service); a cluster of sizes makes a job just
 *    below the cluster outrank a new one, which LAS would not; running jobs
 *    bigger than every finished one leave a tail; nothing above the
 *    attained service gives 0.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/gittins.h"
#include "lib/rng.h"
#include "lib/xalloc.h"

#define LO 1.0
#define HI 1e6
#define PER 10

struct obs {
	double t;
	int event;
};

static int obs_cmp(const void *pa, const void *pb)
{
	const struct obs *a = pa, *b = pb;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return b->event - a->event; /* events first */
}

/* textbook Kaplan-Meier: atoms (value, mass), and the tail left over */
static size_t naive_km(struct obs *o, size_t n, double *val, double *mass, double *tail)
{
	qsort(o, n, sizeof(*o), obs_cmp);
	double s = 1;
	size_t na = 0;
	for (size_t i = 0; i < n;) {
		size_t risk = n - i, d = 0, j = i;
		while (j < n && o[j].t == o[i].t) {
			d += (size_t)o[j].event;
			j++;
		}
		if (d) {
			double ns = s * (1 - (double)d / (double)risk);
			val[na] = o[i].t;
			mass[na++] = s - ns;
			s = ns;
		}
		i = j;
	}
	*tail = s > 1e-12 ? s : 0;
	return na;
}

static double edge_of(int i)
{
	return i ? LO * pow(10, (double)i / PER) : 0;
}

/* bin of x, as the module bins */
static int bin_at(double x)
{
	return x > LO ? (int)floor(log10(x / LO) * PER) : 0;
}

/* survival at x: the atoms' mass spread over their bins */
static double surv_at(const double *val, const double *mass, size_t na, double x)
{
	double s = 1;
	for (size_t i = 0; i < na; i++) {
		int b = bin_at(val[i]);
		double lo = edge_of(b), hi = edge_of(b + 1);
		if (x >= hi)
			s -= mass[i];
		else if (x > lo)
			s -= mass[i] * (x - lo) / (hi - lo);
	}
	return s;
}

static double naive_index(const double *val, const double *mass, size_t na, double tail,
			  double tail_v, double a)
{
	if (a >= tail_v)
		return 0;
	double sa = surv_at(val, mass, na, a);
	if (sa <= 0)
		return 0;
	double best = 0, d = 0, x = a, sx = sa;
	/* stopping points: a fine grid up to tail_v */
	for (int b = bin_at(a); edge_of(b) < tail_v * (1 - 1e-12); b++) {
		double lo = edge_of(b), hi = edge_of(b + 1);
		for (int k = 0; k <= 100; k++) { /* the lower edge too: S bends there */
			double y = lo + (hi - lo) * k / 100;
			if (y <= x)
				continue;
			double sy = surv_at(val, mass, na, y);
			d += (y - x) * (sx + sy) / 2;
			x = y;
			sx = sy;
			double r = (sa - sy) / d;
			if (y >= tail_v * (1 - 1e-12))
				r = (sa - sy + tail) / d;
			if (r > best)
				best = r;
		}
	}
	return best;
}

/* the middle of bin i of the grid the module uses */
static double bin_mid(int i)
{
	return LO * pow(10, (i + 0.5) / PER);
}

static double top_edge(double x)
{
	return LO * pow(10, (floor(log10(x / LO) * PER) + 1) / PER);
}

static void test_against_naive(void **state)
{
	(void)state;
	struct xp_rng g;
	xp_rng_seed(&g, 20261129);
	for (int it = 0; it < 200; it++) {
		struct xp_gittins gi;
		xp_gittins_init(&gi, LO, HI, PER);
		int nb = 1 + (int)xp_rng_below(&g, 12);
		int bins[12];
		for (int k = 0; k < nb; k++)
			bins[k] = (int)xp_rng_below(&g, 55);
		size_t n = 1 + xp_rng_below(&g, 60);
		struct obs *o = xcalloc(n, sizeof(*o));
		double mx = 0;
		for (size_t i = 0; i < n; i++) {
			o[i].t = bin_mid(bins[xp_rng_below(&g, (uint64_t)nb)]);
			o[i].event = xp_rng_below(&g, 3) != 0;
			if (o[i].event)
				xp_gittins_finished(&gi, o[i].t);
			if (o[i].t > mx)
				mx = o[i].t;
		}
		/* running jobs come after the finished ones */
		xp_gittins_censor_clear(&gi);
		for (size_t i = 0; i < n; i++)
			if (!o[i].event)
				xp_gittins_censored(&gi, o[i].t);
		xp_gittins_build(&gi);
		double *val = xcalloc(n, sizeof(double)), *mass = xcalloc(n, sizeof(double)), tail;
		size_t na = naive_km(o, n, val, mass, &tail);
		assert_true(fabs(gi.tail - tail) < 1e-9);
		for (int q = 0; q < 30; q++) {
			double a;
			switch (xp_rng_below(&g, 3)) {
			case 0: /* on an observed value */
				a = o[xp_rng_below(&g, n)].t;
				break;
			case 1: /* anywhere */
				a = pow(10, xp_rng_double(&g) * 6.2) - 1;
				break;
			default: /* just below an observed value */
				a = o[xp_rng_below(&g, n)].t * (1 - 1e-3);
			}
			double want = naive_index(val, mass, na, tail, top_edge(mx), a);
			double got = xp_gittins_index(&gi, a);
			assert_true(got >= want * (1 - 1e-9));
			assert_true(got <= want * (1 + 1e-3));
		}
		free(val);
		free(mass);
		free(o);
		xp_gittins_free(&gi);
	}
}

/* sizes from two exponentials (means 10 s and 1000 s, 70/30), a falling
 * hazard: the index falls with attained service, as LAS orders. Checked a
 * decade apart: inside a bin the even spread makes the hazard rise a
 * little, so the learned index is least-attained-service only at the
 * bins' scale. */
static void test_falling_hazard_is_las(void **state)
{
	(void)state;
	struct xp_gittins gi;
	xp_gittins_init(&gi, LO, HI, PER);
	for (int i = 0; i < 7000; i++)
		xp_gittins_finished(&gi, -10 * log(1 - (i + 0.5) / 7000));
	for (int i = 0; i < 3000; i++)
		xp_gittins_finished(&gi, -1000 * log(1 - (i + 0.5) / 3000));
	xp_gittins_build(&gi);
	assert_true(gi.tail == 0);
	double prev = xp_gittins_index(&gi, 0);
	for (double a = 10; a <= 100; a *= 10) {
		double x = xp_gittins_index(&gi, a);
		assert_true(x > 0 && x < prev);
		prev = x;
	}
	/* past 200 s nearly every job left is from the memoryless 1000 s
	 * exponential: the index is its hazard, 1/1000 (until the largest
	 * sizes seen, where the learned distribution ends) */
	for (double a = 200; a <= 800; a *= 1.3)
		assert_true(fabs(xp_gittins_index(&gi, a) * 1000 - 1) < 0.1);
	xp_gittins_free(&gi);
}

/* 80 % of jobs need about 110 s (their bin is [100, 126)), 20 % about
 * 10^4 s: a job at 110 s is likely to finish within seconds and outranks a
 * new one; at 200 s it is surely a long one and ranks below a new one */
static void test_cluster_beats_las(void **state)
{
	(void)state;
	struct xp_gittins gi;
	xp_gittins_init(&gi, LO, HI, PER);
	for (int i = 0; i < 80; i++)
		xp_gittins_finished(&gi, 110);
	for (int i = 0; i < 20; i++)
		xp_gittins_finished(&gi, 1.1e4);
	xp_gittins_build(&gi);
	double g0 = xp_gittins_index(&gi, 0), g110 = xp_gittins_index(&gi, 110);
	double g200 = xp_gittins_index(&gi, 200);
	assert_true(g110 > g0);
	assert_true(g200 < g0);
	/* from 0, stopping at the short bin's top: 0.8 of the jobs done for
	 * 100 s at survival 1 plus the bin's trapezoid */
	double w = 100 * (pow(10, 0.1) - 1);
	assert_true(fabs(g0 - 0.8 / (100 + w * (1 + 0.2) / 2)) < 1e-12);
	/* nothing above the largest size's bin: 0 */
	assert_true(xp_gittins_index(&gi, 2e4) == 0);
	xp_gittins_free(&gi);
}

/* running jobs larger than every finished one: the estimate keeps their
 * mass as a tail above them, so they still have an index */
static void test_censored_tail(void **state)
{
	(void)state;
	struct xp_gittins gi;
	xp_gittins_init(&gi, LO, HI, PER);
	for (int i = 0; i < 10; i++)
		xp_gittins_finished(&gi, 50);
	xp_gittins_censor_clear(&gi);
	for (int i = 0; i < 10; i++)
		xp_gittins_censored(&gi, 5000);
	xp_gittins_build(&gi);
	assert_true(fabs(gi.tail - 0.5) < 1e-12);
	assert_true(gi.tail_v > 5000);
	assert_true(xp_gittins_index(&gi, 5000) > 0);
	/* clearing the running jobs forgets them */
	xp_gittins_censor_clear(&gi);
	xp_gittins_build(&gi);
	assert_true(gi.tail == 0);
	assert_true(xp_gittins_index(&gi, 5000) == 0);
	xp_gittins_free(&gi);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_naive),
		cmocka_unit_test(test_falling_hazard_is_las),
		cmocka_unit_test(test_cluster_beats_las),
		cmocka_unit_test(test_censored_tail),
	};
	return xp_run_tests(tests, NULL, NULL);
}
