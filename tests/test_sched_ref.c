/*
 * test_sched_ref: the scheduling core against the naive reference of
 * tests/ref_sched.c (written from docs/design/scheduler.md alone), in
 * lock-step on random operation streams.
 *
 * Random clusters (mixed classes, vendors, models, islands, NUMA ids,
 * unhealthy devices) and OpenB-like ones are driven by random operation
 * streams (place, release, node down/up, device health, ranks, workload M).
 * For each deterministic policy with XP_TIE_RANK the core is run with the
 * score index, without it (plain scan) and with a tiny index budget
 * (eviction), and after every operation all of them and the reference must
 * give the same decision; observers (F(M), F_n(M), used/total milli, free
 * capacity, explain, invariants) are compared periodically. Further:
 * OpenB's size (1213 nodes), and shapes asked again after growing amounts
 * of state churn (the index's lazy catch-up and rebuild). This is where
 * the index is stressed against the specification.
 *
 * The generators and the harness live in sched_harness.c. Everything is
 * seeded; a failure prints the seed, the case and the operation, so it can
 * be replayed.
 */
#include "sched_harness.h"

#define EQUIV_CASES 40

static void test_equiv_weighted(void **st)
{
	(void)st;
	run_policy_cases("weighted", XP_TIE_RANK, 1, EQUIV_CASES, 108);
}

static void test_equiv_dotprod(void **st)
{
	(void)st;
	run_policy_cases("dotprod", XP_TIE_RANK, 1, EQUIV_CASES, 101);
}

static void test_equiv_clustering(void **st)
{
	(void)st;
	run_policy_cases("clustering", XP_TIE_RANK, 1, EQUIV_CASES, 102);
}

static void test_equiv_packing(void **st)
{
	(void)st;
	run_policy_cases("packing", XP_TIE_RANK, 1, EQUIV_CASES, 103);
}

static void test_equiv_bestfit(void **st)
{
	(void)st;
	run_policy_cases("bestfit", XP_TIE_RANK, 1, EQUIV_CASES, 104);
}

static void test_equiv_fgd(void **st)
{
	(void)st;
	run_policy_cases("fgd", XP_TIE_RANK, 1, EQUIV_CASES, 105);
}

static void test_equiv_binpack(void **st)
{
	(void)st;
	run_policy_cases("binpack", XP_TIE_RANK, 1, EQUIV_CASES, 106);
}

static void test_equiv_spread(void **st)
{
	(void)st;
	run_policy_cases("spread", XP_TIE_RANK, 1, EQUIV_CASES, 107);
}

static void test_equiv_xpool(void **st)
{
	(void)st;
	run_policy_cases("xpool", XP_TIE_RANK, 1, EQUIV_CASES, 109);
}

/* OpenB's size: 1213 nodes, a short stream per policy. */
static void test_equiv_openb_large(void **st)
{
	(void)st;
	for (size_t i = 0; i < NELEM(det_policies); i++) {
		struct harness h;
		h_init(&h, det_policies[i], XP_TIE_RANK, 1, 0, "openb", 1213, 500 + i);
		h_run(&h, 600);
		total_ops += 600;
		h_free(&h);
	}
}

/* The index's per-shape trees lag behind the state and catch up lazily; a
 * tree more than one ring of changes behind is rebuilt. Ask a few shapes,
 * then churn the state by growing amounts (direct commits, releases, node
 * and device toggles) without asking them, and ask again. */
static void run_stale(const char *policy, uint64_t seed)
{
	static const size_t churn[] = { 0, 1, 7, 60, 500, 3000, 12000, 40000 };
	struct harness h;
	h_init(&h, policy, XP_TIE_RANK, 1, 0, seed & 1 ? "openb" : "random", 120, seed);
	struct xp_request rare[4];
	for (int i = 0; i < 4; i++)
		gen_request(&h.w, &h.g, &rare[i]);
	for (size_t c = 0; c < NELEM(churn); c++) {
		for (int i = 0; i < 4; i++)
			h_place(&h, &rare[i]);
		for (size_t k = 0; k < churn[c]; k++) {
			unsigned u = (unsigned)below(&h.g, 100);
			if (u < 45)
				h_direct(&h);
			else if (u < 90)
				h_release(&h);
			else if (u < 95)
				h_toggle_node(&h);
			else
				h_toggle_dev(&h);
		}
		total_ops += churn[c];
		h.op = c;
		h_check_state(&h);
	}
	h_free(&h);
}

static void test_equiv_stale_index(void **st)
{
	(void)st;
	for (size_t i = 0; i < NELEM(det_policies); i++)
		run_stale(det_policies[i], 400 + i);
}

static int report_ops(void **st)
{
	(void)st;
	sched_print_ops("test_sched_ref");
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equiv_dotprod),	  cmocka_unit_test(test_equiv_clustering),
		cmocka_unit_test(test_equiv_packing),	  cmocka_unit_test(test_equiv_bestfit),
		cmocka_unit_test(test_equiv_fgd),	  cmocka_unit_test(test_equiv_binpack),
		cmocka_unit_test(test_equiv_spread),	  cmocka_unit_test(test_equiv_weighted),
		cmocka_unit_test(test_equiv_xpool),
		cmocka_unit_test(test_equiv_stale_index), cmocka_unit_test(test_equiv_openb_large),
	};
	return xp_run_tests(tests, NULL, report_ops);
}
