/*
 * test_serving_sim: `xpool sim serving`'s parts (src/sim/load.c,
 * serving*.c). The loader against the GenAI README's facts (hourly sums of
 * the Generative Requests rows about 297 at peak and 0.1 at the quietest
 * hour; with the gateway's API Requests rows about 444 and 0.4 - the
 * issue's 444 / 0.4 are the two series together) and on a small time,qps
 * CSV; the M/M/c model against textbook values, the direct Erlang C
 * formula and a naive discrete-event simulation; and the policies'
 * invariants on synthetic days and on the genai2026 day: static never
 * scales, the pool is never over-allocated, a running job stays within
 * [min, max], xpool is ahead of reactive on a ramp, and a seed reproduces
 * a run exactly.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/rng.h"
#include "core/state/hpa.h"
#include "sim/load.h"
#include "sim/serving.h"

/* ---- the loader ---- */

static void hourly(const char *path, int series, double *peak, double *low, size_t *rows)
{
	struct xp_load l;
	struct xp_err err = { 0 };
	if (xp_load_read(path, 3600, series, &l, &err) < 0)
		fail_msg("%s", err.text);
	assert_true(l.genai);
	assert_true(fabs(l.sample_s - 57) < 1e-9);
	*peak = 0;
	*low = INFINITY;
	for (size_t k = 0; k + 1 < l.n; k++) { /* full hours: the last is partial */
		double sum = l.qps[k] * 3600 / l.sample_s;
		*peak = sum > *peak ? sum : *peak;
		*low = sum < *low ? sum : *low;
	}
	*rows = l.rows;
	print_message("%s series %d: %zu rows, %zu hours, hourly sum %.2f .. %.2f\n", path, series,
		      l.rows, l.n, *low, *peak);
	xp_load_free(&l);
}

static void test_genai_facts(void **state)
{
	(void)state;
	const char *p = xp_test_shared("traces/genai2026/qps.csv");
	double peak, low;
	size_t rows;
	if (!p)
		xp_skip();
	hourly(p, XP_LOAD_GENERATIVE, &peak, &low, &rows);
	assert_int_equal(rows, 23513);
	assert_true(peak > 290 && peak < 305);
	assert_true(low >= 0.05 && low < 0.15);
	hourly(p, XP_LOAD_BOTH, &peak, &low, &rows);
	assert_int_equal(rows, 23513 + 1114);
	assert_true(peak > 435 && peak < 452);
	assert_true(low > 0.3 && low < 0.5);
	hourly(p, XP_LOAD_API, &peak, &low, &rows);
	assert_int_equal(rows, 1114);
	/* the default window is the sample: one instant a window */
	struct xp_load l;
	assert_int_equal(xp_load_read(p, 0, XP_LOAD_GENERATIVE, &l, NULL), 0);
	assert_true(fabs(l.step_s - 57) < 1e-9);
	assert_true(xp_load_duration(&l) > 22 * 3600 && xp_load_duration(&l) < 22.5 * 3600);
	xp_load_free(&l);
}

static void test_csv_series(void **state)
{
	(void)state;
	/* out of order, a gap (held), two rows in one window (mean) */
	char *p = xp_test_tmpfile(".csv", "time,qps\n120,3\n0,1\n30,2\n240,8\n");
	struct xp_load l;
	struct xp_err err = { 0 };
	assert_int_equal(xp_load_read(p, 60, 0, &l, &err), 0);
	assert_false(l.genai);
	assert_int_equal(l.n, 5);
	double want[] = { 1.5, 1.5, 3, 3, 8 };
	for (size_t k = 0; k < 5; k++)
		assert_true(fabs(l.qps[k] - want[k]) < 1e-12);
	xp_load_scale(&l, 2, 10);
	assert_true(fabs(xp_load_at(&l, 119) - 15) < 1e-12);
	assert_true(fabs(xp_load_at(&l, 120) - 15) < 1e-12);
	assert_true(fabs(xp_load_at(&l, 599) - 80) < 1e-12);
	assert_true(xp_load_at(&l, 600) == 0);
	assert_true(fabs(xp_load_duration(&l) - 600) < 1e-9);
	xp_load_free(&l);
	unlink(p);
	free(p);
	/* bad input names the file, line and field */
	p = xp_test_tmpfile(".csv", "t,rate\n0,1\n60,x\n");
	assert_int_equal(xp_load_read(p, 60, 0, &l, &err), XP_EINVAL);
	assert_non_null(strstr(err.text, ":3: field rate: expected a number, got 'x'"));
	unlink(p);
	free(p);
	p = xp_test_tmpfile(".csv", "time,qps\n0,-1\n");
	assert_int_equal(xp_load_read(p, 60, 0, &l, &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "expected a rate >= 0"));
	unlink(p);
	free(p);
	assert_int_equal(xp_load_read("/nonexistent/q.csv", 60, 0, &l, &err), XP_ENOENT);
	assert_non_null(strstr(err.text, "/nonexistent/q.csv: load series not found"));
}

static void test_predict(void **state)
{
	(void)state;
	double ramp[30], flat[30];
	for (int i = 0; i < 30; i++) {
		ramp[i] = 1 + 0.1 * i;
		flat[i] = 5;
	}
	/* a line is continued: 10 steps ahead of 3.9 is 4.9 */
	assert_true(fabs(xp_hpa_predict(ramp, 30, 60, 600) - 4.9) < 1e-9);
	assert_true(fabs(xp_hpa_predict(flat, 30, 60, 600) - 5) < 1e-12);
	assert_true(xp_hpa_noise(flat, 30) == 0);
	/* a fall is not extrapolated below the last values */
	double fall[10] = { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 };
	assert_true(fabs(xp_hpa_predict(fall, 10, 60, 600) - 2) < 1e-12);
	assert_true(xp_hpa_predict(fall, 0, 60, 600) == 0);
}

/* ---- the queue model ---- */

/* Erlang C by its closed form, summing a^k / k! directly */
static double erlang_c_direct(unsigned c, double a)
{
	double term = 1, sum = 0;
	for (unsigned k = 0; k < c; k++) {
		sum += term;
		term *= a / (k + 1);
	}
	double top = term * c / (c - a); /* term = a^c / c! */
	return top / (sum + top);
}

static void test_erlang_textbook(void **state)
{
	(void)state;
	/* M/M/2, a = 1: C = 1/3 */
	assert_true(fabs(xp_mmc_wait_prob(2, 1, 1) - 1.0 / 3) < 1e-12);
	/* M/M/1: C = rho, and the response time is exponential with mu - lambda */
	assert_true(fabs(xp_mmc_wait_prob(1, 0.6, 1) - 0.6) < 1e-12);
	assert_true(fabs(xp_mmc_late(1, 0.6, 1, 5) - exp(-0.4 * 5)) < 1e-9);
	assert_true(fabs(xp_mmc_quantile(1, 0.6, 1, 0.99) - log(100) / 0.4) < 1e-6);
	/* M/M/5, a = 4: 0.5541 (tables) */
	assert_true(fabs(xp_mmc_wait_prob(5, 4, 1) - 0.5541) < 1e-4);
	for (unsigned c = 1; c <= 60; c++)
		for (double rho = 0.05; rho < 1; rho += 0.1)
			assert_true(fabs(xp_mmc_wait_prob(c, rho * c * 0.3, 0.3) -
					 erlang_c_direct(c, rho * c)) < 1e-9);
	/* unstable and empty */
	assert_true(xp_mmc_wait_prob(3, 3, 1) == 1);
	assert_true(xp_mmc_late(3, 3.5, 1, 100) == 1);
	assert_true(isinf(xp_mmc_quantile(0, 1, 1, 0.99)));
	assert_true(xp_mmc_wait_prob(3, 0, 1) == 0);
	/* the fewest servers for a p99 bound: quantile above with one fewer */
	uint32_t c = xp_mmc_servers(5, 0.29, 30, 0.01, 1000);
	assert_true(xp_mmc_quantile(c, 5, 0.29, 0.99) <= 30 + 1e-6);
	assert_true(xp_mmc_quantile(c - 1, 5, 0.29, 0.99) > 30);
	assert_int_equal(xp_mmc_servers(0, 0.29, 30, 0.01, 10), 0);
	assert_int_equal(xp_mmc_servers(100, 0.29, 30, 0.01, 10), 10);
}

static double expo(struct xp_rng *g, double rate)
{
	return -log(1 - xp_rng_double(g)) / rate;
}

/* FCFS with c servers: each arrival takes the server that frees first */
static void des(unsigned c, double lambda, double mu, size_t n, const double *xs, size_t nx,
		double *waited, double *late)
{
	struct xp_rng g;
	double *free_at = calloc(c, sizeof(double)), t = 0;
	size_t w = 0, *over = calloc(nx, sizeof(size_t));
	xp_rng_seed(&g, 7);
	for (size_t i = 0; i < n; i++) {
		t += expo(&g, lambda);
		unsigned best = 0;
		for (unsigned k = 1; k < c; k++)
			if (free_at[k] < free_at[best])
				best = k;
		double start = free_at[best] > t ? free_at[best] : t;
		w += start > t;
		free_at[best] = start + expo(&g, mu);
		for (size_t j = 0; j < nx; j++)
			over[j] += free_at[best] - t > xs[j];
	}
	*waited = (double)w / (double)n;
	for (size_t j = 0; j < nx; j++)
		late[j] = (double)over[j] / (double)n;
	free(free_at);
	free(over);
}

static void test_erlang_des(void **state)
{
	(void)state;
	static const struct {
		unsigned c;
		double lambda, mu;
	} cases[] = { { 1, 0.2, 0.29 }, { 3, 0.7, 0.29 }, { 10, 2.6, 0.29 }, { 30, 7.8, 0.29 } };
	double xs[] = { 5, 15, 30, 60 }, late[4], waited;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		des(cases[i].c, cases[i].lambda, cases[i].mu, 400000, xs, 4, &waited, late);
		double pc = xp_mmc_wait_prob(cases[i].c, cases[i].lambda, cases[i].mu);
		print_message("M/M/%u rho %.2f: P(wait) %.4f (DES %.4f)\n", cases[i].c,
			      cases[i].lambda / cases[i].mu / cases[i].c, pc, waited);
		assert_true(fabs(pc - waited) < 0.01);
		for (size_t j = 0; j < 4; j++) {
			double want = xp_mmc_late(cases[i].c, cases[i].lambda, cases[i].mu, xs[j]);
			if (fabs(want - late[j]) > 0.01)
				fail_msg("M/M/%u: P(T > %g) %.4f, DES %.4f", cases[i].c, xs[j],
					 want, late[j]);
		}
	}
}

/* ---- the policies ---- */

/* a synthetic day: night, a ramp, a plateau with noise, a fall */
static char *synthetic_day(int ramp_only)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap);
	struct xp_rng g;
	xp_rng_seed(&g, 3);
	len += (size_t)snprintf(buf + len, cap - len, "time,qps\n");
	for (int m = 0; m < 24 * 60; m++) {
		double h = m / 60.0, q;
		if (ramp_only)
			q = h < 2 ? 0.5 : h < 4 ? 0.5 + 4.75 * (h - 2) : 10;
		else
			q = 0.3 +
			    6 * exp(-(h - 14) * (h - 14) / 8) * (0.8 + 0.4 * xp_rng_double(&g));
		len += (size_t)snprintf(buf + len, cap - len, "%d,%.4f\n", m * 60, q);
	}
	char *p = xp_test_tmpfile(".csv", buf);
	free(buf);
	return p;
}

static void run3(const struct xp_load *l, const struct xp_serve_opts *o, struct xp_serve_result *r)
{
	struct xp_err err = { 0 };
	for (int k = 0; k < XP_SERVE_NPOLICIES; k++)
		if (xp_serve_run(l, o, k, &r[k], &err) < 0)
			fail_msg("%s: %s", xp_serve_policy_name(k), err.text);
}

static void check_invariants(const struct xp_serve_opts *o, const struct xp_serve_result *r)
{
	const struct xp_serve_result *st = &r[XP_SERVE_STATIC];
	assert_int_equal(st->scale_ups + st->scale_downs + st->shrinks + st->preemptions, 0);
	for (size_t m = 0; m < st->ns; m++)
		assert_true(fabs(st->replicas[m] - st->static_replicas) < 1e-9);
	for (int k = 0; k < XP_SERVE_NPOLICIES; k++) {
		assert_true(r[k].alloc_max <= o->gpus);
		assert_int_equal(r[k].bad_sizes, 0);
		assert_true(r[k].alloc_gpu_h <= r[k].pool_gpu_h + 1e-6);
		assert_true(r[k].busy_gpu_h <= r[k].alloc_gpu_h + 1e-6);
		assert_true(r[k].train_gpu_h <= r[k].train_alloc_gpu_h + 1e-6);
		assert_true(r[k].slo_minutes <= r[k].minutes);
		for (size_t m = 0; m < r[k].ns; m++)
			assert_true(r[k].util[m] <= 1 + 1e-9);
	}
	/* rigid training is never shrunk; only xpool grows */
	assert_int_equal(r[XP_SERVE_REACTIVE].shrinks + r[XP_SERVE_REACTIVE].grows, 0);
}

static void test_policies(void **state)
{
	(void)state;
	char *p = synthetic_day(0);
	struct xp_load l;
	struct xp_serve_opts o;
	struct xp_serve_result a[XP_SERVE_NPOLICIES], b[XP_SERVE_NPOLICIES];
	assert_int_equal(xp_load_read(p, 60, 0, &l, NULL), 0);
	unlink(p);
	free(p);
	xp_serve_defaults(&o);
	for (uint32_t gpus = 24; gpus <= 96; gpus *= 2) {
		o.gpus = gpus;
		run3(&l, &o, a);
		check_invariants(&o, a);
		print_message("%u GPUs: training h static %.0f reactive %.0f xpool %.0f; SLO min "
			      "%u/%u/%u\n",
			      gpus, a[0].train_gpu_h, a[1].train_gpu_h, a[2].train_gpu_h,
			      a[0].slo_minutes, a[1].slo_minutes, a[2].slo_minutes);
		/* giving training the service's idle reservation pays */
		assert_true(a[XP_SERVE_XPOOL].train_gpu_h > a[XP_SERVE_STATIC].train_gpu_h);
		/* determinism: the same seed, the same run */
		run3(&l, &o, b);
		for (int k = 0; k < XP_SERVE_NPOLICIES; k++) {
			assert_memory_equal(a[k].replicas, b[k].replicas, a[k].ns * sizeof(double));
			assert_memory_equal(a[k].train, b[k].train, a[k].ns * sizeof(double));
			assert_true(a[k].train_gpu_h == b[k].train_gpu_h);
			assert_int_equal(a[k].slo_minutes, b[k].slo_minutes);
			assert_int_equal(a[k].preemptions, b[k].preemptions);
			xp_serve_result_free(&b[k]);
		}
		/* another seed, another backlog */
		o.seed = 2;
		assert_int_equal(xp_serve_run(&l, &o, XP_SERVE_XPOOL, &b[0], NULL), 0);
		assert_true(b[0].train_gpu_h != a[XP_SERVE_XPOOL].train_gpu_h);
		xp_serve_result_free(&b[0]);
		o.seed = 1;
		for (int k = 0; k < XP_SERVE_NPOLICIES; k++)
			xp_serve_result_free(&a[k]);
	}
	xp_load_free(&l);
}

static void test_ramp(void **state)
{
	(void)state;
	char *p = synthetic_day(1);
	struct xp_load l;
	struct xp_serve_opts o;
	struct xp_serve_result r[XP_SERVE_NPOLICIES];
	assert_int_equal(xp_load_read(p, 60, 0, &l, NULL), 0);
	unlink(p);
	free(p);
	xp_serve_defaults(&o);
	run3(&l, &o, r);
	check_invariants(&o, r);
	/* the forecast scales ahead of the ramp: xpool holds 10, 15, 20
	 * replicas no later than reactive, and has no more late minutes */
	for (double want = 10; want <= 20; want += 5) {
		size_t first[XP_SERVE_NPOLICIES] = { 0 };
		for (int k = 1; k < XP_SERVE_NPOLICIES; k++)
			while (first[k] < r[k].ns && r[k].replicas[first[k]] < want)
				first[k]++;
		print_message("ramp: %.0f replicas at minute %zu (reactive), %zu (xpool)\n", want,
			      first[XP_SERVE_REACTIVE], first[XP_SERVE_XPOOL]);
		assert_true(first[XP_SERVE_XPOOL] <= first[XP_SERVE_REACTIVE]);
	}
	print_message("ramp: SLO minutes reactive %u, xpool %u\n", r[1].slo_minutes,
		      r[2].slo_minutes);
	assert_true(r[XP_SERVE_XPOOL].slo_minutes <= r[XP_SERVE_REACTIVE].slo_minutes);
	for (int k = 0; k < XP_SERVE_NPOLICIES; k++)
		xp_serve_result_free(&r[k]);
	/* a bad option is refused, naming it */
	struct xp_err err = { 0 };
	o.min_replicas = 0;
	assert_int_equal(xp_serve_run(&l, &o, XP_SERVE_XPOOL, &r[0], &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "min-replicas"));
	xp_load_free(&l);
}

/* the genai2026 day itself: the invariants hold on the real series too */
static void test_genai_day(void **state)
{
	(void)state;
	const char *p = xp_test_shared("traces/genai2026/qps.csv");
	struct xp_load l;
	struct xp_serve_opts o;
	struct xp_serve_result r[XP_SERVE_NPOLICIES];
	if (!p)
		xp_skip();
	assert_int_equal(xp_load_read(p, 0, XP_LOAD_GENERATIVE, &l, NULL), 0);
	xp_serve_defaults(&o);
	run3(&l, &o, r);
	check_invariants(&o, r);
	/* static reserves the peak + 40 %: ceil(6.84 / 0.29 x 1.4) = 34 */
	assert_int_equal(r[XP_SERVE_STATIC].static_replicas, 34);
	assert_int_equal(r[XP_SERVE_STATIC].slo_minutes, 0);
	for (int k = 0; k < XP_SERVE_NPOLICIES; k++)
		xp_serve_result_free(&r[k]);
	xp_load_free(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_genai_facts), cmocka_unit_test(test_csv_series),
		cmocka_unit_test(test_predict),	    cmocka_unit_test(test_erlang_textbook),
		cmocka_unit_test(test_erlang_des),  cmocka_unit_test(test_policies),
		cmocka_unit_test(test_ramp),	    cmocka_unit_test(test_genai_day),
	};
	return xp_run_tests(tests, NULL, NULL);
}
