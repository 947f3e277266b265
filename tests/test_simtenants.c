/*
 * test_simtenants: the multi-tenant simulator (src/sim/tenants.c) on a
 * small cluster - every invariant of the controller's state holds after
 * every step in all three set-ups, every job runs, a seed gives the same
 * figures twice, and the set-ups differ as they must: only xpool preempts,
 * and without borrowing a tenant never holds more than its share.
 */
#include "testutil.h"

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
		cmocka_unit_test(test_bad_options),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
