/*
 * test_simtenants: the multi-tenant simulator (src/sim/tenants.c) on a
 * small cluster - every invariant of the controller's state holds after
 * every step in all three set-ups, every job runs, a seed gives the same
 * figures twice, and the set-ups differ as they must: only xpool preempts,
 * and without borrowing a tenant never holds more than its share.
 */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim/tenants.h"

static void run(int mode, double load, struct xp_tsim_result *r)
{
	struct xp_tsim_opts o;
	struct xp_err err = { 0 };
	xp_tsim_defaults(&o);
	o.nodes = 40;
	o.jobs = 600;
	o.seed = 7;
	o.load = load;
	o.mode = mode;
	o.check = 1;
	if (xp_tsim_run(&o, r, &err) < 0)
		fail_msg("%s: %s", xp_tsim_mode_name(mode), err.text);
}

static void test_modes(void **state)
{
	(void)state;
	struct xp_tsim_result r[XP_TSIM_NMODES], again;
	for (int m = 0; m < XP_TSIM_NMODES; m++) {
		run(m, 1.2, &r[m]);
		assert_int_equal(r[m].unstarted, 0);
		uint64_t jobs = 0;
		for (uint32_t i = 0; i < r[m].tenants; i++)
			jobs += r[m].t[i].jobs;
		assert_int_equal(jobs, 600);
		assert_true(r[m].util > 0.3 && r[m].util <= 1.0);
		assert_true(r[m].jain > 0 && r[m].jain <= 1.0 + 1e-9);
		print_message("%-8s util %.3f waiting %.3f jain %.3f preemptions %llu\n",
			      xp_tsim_mode_name(m), r[m].util, r[m].util_waiting, r[m].jain,
			      (unsigned long long)r[m].preemptions);
	}
	assert_true(r[XP_TSIM_XPOOL].preemptions > 0); /* borrowed GPUs were taken back */
	assert_int_equal(r[XP_TSIM_NOBORROW].preemptions, 0);
	assert_int_equal(r[XP_TSIM_FIFO].preemptions, 0);
	/* idle guarantees cannot be lent: less of the cluster is used while jobs wait */
	assert_true(r[XP_TSIM_NOBORROW].util_waiting < r[XP_TSIM_XPOOL].util_waiting);
	/* the same seed, the same run */
	run(XP_TSIM_XPOOL, 1.2, &again);
	again.wall_s = r[XP_TSIM_XPOOL].wall_s;
	assert_memory_equal(&again, &r[XP_TSIM_XPOOL], sizeof(again));
}

/* the simulator meters its runs with the controller's ledger: without
 * preemption every job runs once, so the ledger's device-hours per tenant
 * are the trace's GPU-hours, and the cost is priced as the controller would */
static void test_metered(void **state)
{
	(void)state;
	struct xp_tsim_opts o;
	struct xp_tsim_result r;
	struct xp_err err = { 0 };
	xp_tsim_defaults(&o);
	o.nodes = 40;
	o.jobs = 600;
	o.seed = 7;
	o.load = 1.2;
	o.mode = XP_TSIM_FIFO;
	o.prices = "currency: USD\ncpu: 0\nmemory: 0\nenergy: 0.5\ndevices: {A100: 2}\n";
	if (xp_tsim_run(&o, &r, &err) < 0)
		fail_msg("%s", err.text);
	assert_non_null(r.cost);
	json_error_t je;
	json_t *c = json_loads(r.cost, 0, &je), *row;
	size_t i;
	double kwh = 0, gpuh = 0;
	json_array_foreach(json_object_get(c, "rows"), i, row)
	{
		uint32_t t = (uint32_t)atoi(json_string_value(json_object_get(row, "tenant")) + 1);
		double h = json_real_value(json_object_get(json_object_get(row, "device_hours"),
							   "A100"));
		if (fabs(h - r.t[t].gpu_hours) > 1e-6 * r.t[t].gpu_hours)
			fail_msg("t%u: metered %.6f GPU-h, simulator %.6f", t, h, r.t[t].gpu_hours);
		gpuh += h;
		kwh += json_real_value(json_object_get(row, "energy_kwh"));
	}
	/* 400 W a GPU; the cost: 2 a GPU-hour and 0.5 a kWh */
	assert_true(fabs(kwh - 0.4 * gpuh) < 1e-6 * kwh);
	double cost = json_real_value(json_object_get(json_object_get(c, "total"), "cost"));
	assert_true(fabs(cost - (2 * gpuh + 0.5 * kwh)) < 1e-6 * cost + 1e-3 * 600);
	json_decref(c);
	free(r.cost);
	/* a bad table is refused with its field */
	o.prices = "devices: {A100: -1}\n";
	assert_true(xp_tsim_run(&o, &r, &err) < 0);
	if (!strstr(err.text, "devices.A100"))
		fail_msg("bad prices: %s", err.text);
}

static void test_bad_options(void **state)
{
	(void)state;
	struct xp_tsim_opts o;
	struct xp_tsim_result r;
	struct xp_err err = { 0 };
	xp_tsim_defaults(&o);
	o.tenants = 1;
	assert_int_equal(xp_tsim_run(&o, &r, &err), XP_EINVAL);
	xp_tsim_defaults(&o);
	o.load = 0;
	assert_int_equal(xp_tsim_run(&o, &r, &err), XP_EINVAL);
	assert_int_equal(xp_tsim_mode_parse("lottery"), -1);
	assert_int_equal(xp_tsim_mode_parse("noborrow"), XP_TSIM_NOBORROW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_metered),
		cmocka_unit_test(test_bad_options),
	};
	return xp_run_tests(tests, NULL, NULL);
}
