/*
 * test_gavel: Gavel's workload (src/sim/gavel.c). The matrix loads; the
 * trace generator draws as CPython does (the first jobs of seed 0 at 2
 * jobs/h equal what the same procedure gives in CPython); over many jobs the
 * trace has the published shape (PROTOCOL.md §2.3): V100 durations averaging
 * about 16.8 h, scale factors 70/10/15/5 % in multi-GPU traces, multi-GPU
 * jobs only of distributed templates, arrivals at the asked rate. Skips
 * without ../shared.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim/gavel.h"

static void test_trace(void **state)
{
	(void)state;
	const char *csv = xp_test_shared("traces/gavel/gavel_isolated_throughputs.csv");
	if (!csv)
		xp_skip();
	static struct xp_gavel_matrix m;
	struct xp_err err = { 0 };
	if (xp_gavel_load(csv, &m, &err) < 0)
		fail_msg("%s", err.text);
	/* a few known entries of the matrix */
	assert_true(fabs(m.tput[24][0][0] - 7.175767179667988) < 1e-12); /* A3C on V100 */
	assert_true(m.tput[8][1][2] == 0);				 /* ResNet-50 bs128 x2, K80: OOM */

	/* CPython's draws: the same procedure in CPython 3.11 gives these */
	struct xp_gavel_job j[4];
	xp_gavel_trace(&m, 4, 2.0, 0, 0, j);
	static const struct {
		int template;
		double duration, arrival;
	} want[4] = { { 2, 68344.350106, 0 },
		      { 9, 31016.609146, 489.172146 },
		      { 21, 2146.608837, 1903.549655 },
		      { 23, 7386.67482, 2735.085391 } };
	for (int i = 0; i < 4; i++) {
		assert_int_equal(j[i].template, want[i].template);
		assert_int_equal(j[i].sf, 1);
		assert_true(fabs(j[i].duration_s - want[i].duration) < 1e-5);
		assert_true(fabs(j[i].arrival_s - want[i].arrival) < 1e-5);
		assert_true(fabs(j[i].total_steps - j[i].duration_s * m.tput[j[i].template][0][0]) <
			    1e-6);
	}

	/* the shape of a long multi-GPU trace */
	size_t n = 200000, sf[9] = { 0 };
	struct xp_gavel_job *t = malloc(n * sizeof(*t));
	assert_non_null(t);
	xp_gavel_trace(&m, n, 3.0, 1, 1, t);
	double dur = 0;
	for (size_t i = 0; i < n; i++) {
		dur += t[i].duration_s;
		sf[t[i].sf]++;
		if (t[i].sf > 1)
			assert_true(xp_gavel_distributed(t[i].template));
		assert_true(t[i].total_steps > 0);
	}
	double mean_h = dur / (double)n / 3600, rate = (double)(n - 1) / (t[n - 1].arrival_s / 3600);
	print_message("mean V100 duration %.2f h, sf 1/2/4/8: %.3f %.3f %.3f %.3f, rate %.3f/h\n",
		      mean_h, sf[1] / (double)n, sf[2] / (double)n, sf[4] / (double)n,
		      sf[8] / (double)n, rate);
	assert_true(fabs(mean_h - 16.8) < 0.05 * 16.8);
	assert_true(fabs(sf[1] / (double)n - 0.70) < 0.01 && fabs(sf[2] / (double)n - 0.10) < 0.01);
	assert_true(fabs(sf[4] / (double)n - 0.15) < 0.01 && fabs(sf[8] / (double)n - 0.05) < 0.01);
	assert_true(fabs(rate - 3.0) < 0.03);
	/* the TSV: 10 fields a line */
	FILE *f = tmpfile();
	xp_gavel_write_tsv(f, t, 3);
	rewind(f);
	char line[512];
	assert_non_null(fgets(line, sizeof(line), f));
	int tabs = 0;
	for (char *p = line; *p; p++)
		tabs += *p == '\t';
	assert_int_equal(tabs, 9);
	fclose(f);
	free(t);

	/* a bad matrix is refused with its line */
	char *bad = xp_test_tmpfile(".csv", "job_type,scale_factor,v100,p100,k80\n"
					  "A3C,3,1,1,1\n");
	assert_true(xp_gavel_load(bad, &m, &err) < 0);
	assert_non_null(strstr(err.text, ":2: scale_factor: expected 1, 2, 4 or 8"));
	unlink(bad);
	free(bad);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace),
	};
	return xp_run_tests(tests, NULL, NULL);
}
