/*
 * test_sched_random: the decisions the specification leaves to the rng.
 *
 * The random policy and XP_TIE_RANDOM draw from the rng in ways
 * docs/design/scheduler.md leaves open, so their decisions cannot be
 * compared with the reference's one for one. Instead: on random operation
 * streams (the harness of sched_harness.c, index and scan) every decision
 * is checked for feasibility, maximality of the node's score and the
 * policy's device choice; and on small hand-made clusters the draws are
 * checked for uniformity with a chi-square bound (nodes, a fraction's
 * device, the tied best nodes only, memory pruning included).
 *
 * Everything is seeded, the chi-square bounds sit far in the tail: no
 * flakes.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sched_harness.h"

/* ------------------------------------------------------------------------ */
/* chi-square */

static double chi2(const unsigned *obs, size_t k, double expect)
{
	double x = 0;
	for (size_t i = 0; i < k; i++)
		x += ((double)obs[i] - expect) * ((double)obs[i] - expect) / expect;
	return x;
}

/* Chi-square bound for k categories (k-1 degrees of freedom: mean df, sd
 * sqrt(2 df)), far in the tail; the seeds are fixed, so no flakes. */
static double chi2_bound(size_t k)
{
	double df = (double)k - 1;
	return df + 6.0 * sqrt(2.0 * df) + 10.0;
}

/* ------------------------------------------------------------------------ */
/* random streams: every decision valid */

static void test_valid_random_policy(void **st)
{
	(void)st;
	run_policy_cases("random", XP_TIE_RANK, 0, 6, 201);
	run_policy_cases("random", XP_TIE_RANDOM, 0, 3, 202);
}

static void test_valid_tie_random(void **st)
{
	(void)st;
	for (size_t i = 0; i < NELEM(det_policies); i++)
		run_policy_cases(det_policies[i], XP_TIE_RANDOM, 0, 3, 300 + i);
}
/* ------------------------------------------------------------------------ */
/* statistics: uniform draws */

/* random policy: nodes uniform among the feasible ones (8 nodes: 1 down,
 * 1 without CPU room, 1 without the device model -> 5 feasible). */
static void test_chi_random_node(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	for (int i = 0; i < 8; i++)
		add_node(c, i == 5 ? 1000 : 32000, 65536, 2, 16384);
	c->nodes[7].devs[0].cls = XP_CLASS_NPU;
	c->nodes[7].devs[1].cls = XP_CLASS_NPU;
	for (int no_index = 0; no_index <= 1; no_index++) {
		for (int tb = XP_TIE_RANK; tb <= XP_TIE_RANDOM; tb++) {
			struct xp_sched *s = mk_core(c, "random", tb, no_index, 0);
			xp_sched_set_node_up(s, 2, 0);
			struct xp_request q;
			frac_req(&q, 4000, 500, 0);
			q.sel.cls = XP_CLASS_GPU;
			struct xp_rng g;
			xp_rng_seed(&g, 77 + (uint64_t)no_index);
			unsigned cnt[8] = { 0 };
			const int draws = 10000;
			for (int i = 0; i < draws; i++) {
				struct xp_alloc a;
				assert_int_equal(xp_sched_pick(s, &q, &g, &a), 0);
				assert_true(a.node < 8);
				cnt[a.node]++;
			}
			assert_int_equal(cnt[2] + cnt[5] + cnt[7], 0);
			unsigned f[5] = { cnt[0], cnt[1], cnt[3], cnt[4], cnt[6] };
			double x = chi2(f, 5, draws / 5.0);
			if (x > chi2_bound(5))
				fprintf(stderr, "random node: chi2 %.1f (%u %u %u %u %u)\n", x,
					f[0], f[1], f[2], f[3], f[4]);
			assert_true(x <= chi2_bound(5));
			xp_sched_destroy(s);
		}
	}
	xp_cluster_destroy(c);
}

/* random policy: a fraction's device uniform among the fitting ones. */
static void test_chi_random_device(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	add_node(c, 64000, 65536, 6, 16384);
	for (int no_index = 0; no_index <= 1; no_index++) {
		struct xp_sched *s = mk_core(c, "random", XP_TIE_RANK, no_index, 0);
		/* devices: 0 free, 1 has 700 used (300 free), 2 has 200 used,
		 * 3 whole-used, 4 free, 5 unhealthy -> fitting for 300: 0, 1, 2, 4 */
		struct xp_request q;
		struct xp_alloc a;
		memset(&a, 0, sizeof(a));
		a.node = 0;
		a.ndev = 1;
		a.dev_milli = 700;
		a.devs[0] = 1;
		xp_sched_commit(s, &a);
		a.dev_milli = 200;
		a.devs[0] = 2;
		xp_sched_commit(s, &a);
		a.dev_milli = XP_MILLI;
		a.dev_mem_mib = 16384;
		a.devs[0] = 3;
		xp_sched_commit(s, &a);
		xp_sched_set_device_ok(s, 0, 5, 0);
		frac_req(&q, 1000, 300, 0);
		struct xp_rng g;
		xp_rng_seed(&g, 99 + (uint64_t)no_index);
		unsigned cnt[6] = { 0 };
		const int draws = 8000;
		for (int i = 0; i < draws; i++) {
			assert_int_equal(xp_sched_pick(s, &q, &g, &a), 0);
			assert_int_equal(a.ndev, 1);
			cnt[a.devs[0]]++;
		}
		assert_int_equal(cnt[3] + cnt[5], 0);
		unsigned f[4] = { cnt[0], cnt[1], cnt[2], cnt[4] };
		double x = chi2(f, 4, draws / 4.0);
		if (x > chi2_bound(4))
			fprintf(stderr, "random device: chi2 %.1f (%u %u %u %u)\n", x, f[0], f[1],
				f[2], f[3]);
		assert_true(x <= chi2_bound(4));
		xp_sched_destroy(s);
	}
	xp_cluster_destroy(c);
}

/* XP_TIE_RANDOM: uniform among the tied best nodes only. 9 identical nodes;
 * a whole GPU runs on nodes 1, 4 and 7, so binpack prefers exactly those
 * three, dotprod prefers them too (less free milli), and with no node
 * preferred (cpu-only under clustering: 0 everywhere) all 9 tie. */
static void test_chi_tie_random(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	for (int i = 0; i < 9; i++)
		add_node(c, 32000, 65536, 4, 16384);
	const char *const pols[] = { "binpack", "dotprod", "packing", "clustering" };
	for (size_t p = 0; p < NELEM(pols); p++) {
		for (int no_index = 0; no_index <= 1; no_index++) {
			struct xp_sched *s = mk_core(c, pols[p], XP_TIE_RANDOM, no_index, 0);
			struct ref_sched *r = ref_create(c, pols[p]);
			struct xp_request q;
			whole_req(&q, 1000, 1);
			for (uint32_t n = 1; n < 9; n += 3) {
				struct xp_alloc a;
				ref_pick_on(r, n, &q, NULL, &a);
				xp_sched_commit(s, &a);
				ref_commit(r, &a);
			}
			int cpu_only = strcmp(pols[p], "clustering") == 0;
			if (cpu_only)
				xp_request_init(&q), q.cpu_milli = 1000;
			else
				whole_req(&q, 1000, 1);
			int32_t best = ref_max_score(r, &q);
			unsigned tied[9], nt = 0;
			for (uint32_t n = 0; n < 9; n++)
				if (ref_score(r, n, &q) == best)
					tied[nt++] = n;
			assert_true(nt == (cpu_only ? 9u : 3u));
			struct xp_rng g;
			xp_rng_seed(&g, 1234 + p * 2 + (uint64_t)no_index);
			unsigned cnt[9] = { 0 };
			const int draws = 9000;
			for (int i = 0; i < draws; i++) {
				struct xp_alloc a;
				assert_int_equal(xp_sched_pick(s, &q, &g, &a), 0);
				cnt[a.node]++;
			}
			unsigned f[9];
			unsigned in = 0;
			for (unsigned i = 0; i < nt; i++) {
				f[i] = cnt[tied[i]];
				in += f[i];
			}
			if (in != (unsigned)draws)
				fprintf(stderr,
					"tie random %s: %u of %d picks outside the tied set\n",
					pols[p], draws - in, draws);
			assert_int_equal(in, draws);
			double x = chi2(f, nt, (double)draws / nt);
			if (x > chi2_bound(nt))
				fprintf(stderr, "tie random %s (%s): chi2 %.1f\n", pols[p],
					no_index ? "scan" : "index", x);
			assert_true(x <= chi2_bound(nt));
			ref_destroy(r);
			xp_sched_destroy(s);
		}
	}
	xp_cluster_destroy(c);
}

/* XP_TIE_RANDOM when memory prunes: 100 identical nodes in a random rank
 * order; 12 random ones run a whole GPU (binpack prefers them), and 4 of
 * those 12 have too little memory left. Picks must be uniform over the
 * other 8; with every node tied (cpu-only), uniform over the 100 minus the
 * memory-starved ones. */
static void test_chi_tie_random_memory(void **st)
{
	(void)st;
	enum { N = 100 };
	struct xp_cluster *c = xp_cluster_create();
	for (int i = 0; i < N; i++)
		add_node(c, 64000, 65536, 4, 16384);
	struct xp_rng g;
	xp_rng_seed(&g, 4242);
	uint32_t rank[N], pick[N];
	xp_rng_perm(&g, rank, N);
	xp_rng_perm(&g, pick, N);
	for (int no_index = 0; no_index <= 1; no_index++) {
		struct xp_sched *s = mk_core(c, "binpack", XP_TIE_RANDOM, no_index, 0);
		assert_int_equal(xp_sched_set_ranks(s, rank, NULL), 0);
		unsigned role[N] = { 0 }; /* 1: runs a GPU, 2: also starved of memory */
		for (int i = 0; i < 12; i++) {
			struct xp_alloc a;
			memset(&a, 0, sizeof(a));
			a.node = pick[i];
			a.ndev = 1;
			a.dev_milli = XP_MILLI;
			a.dev_mem_mib = 16384;
			a.mem_mib = i < 4 ? 60000 : 1000;
			xp_sched_commit(s, &a);
			role[pick[i]] = i < 4 ? 2 : 1;
		}
		for (int cpu_only = 0; cpu_only <= 1; cpu_only++) {
			struct xp_request q;
			whole_req(&q, 1000, 1);
			if (cpu_only) {
				xp_request_init(&q);
				q.cpu_milli = 1000;
			}
			q.mem_mib = 8192;
			unsigned cnt[N] = { 0 };
			unsigned nwin = 0;
			for (int i = 0; i < N; i++)
				nwin += cpu_only ? role[i] != 2 : role[i] == 1;
			const int draws = 200 * (int)nwin;
			for (int i = 0; i < draws; i++) {
				struct xp_alloc a;
				assert_int_equal(xp_sched_pick(s, &q, &g, &a), 0);
				cnt[a.node]++;
			}
			unsigned f[N], k = 0, out = 0;
			for (int i = 0; i < N; i++) {
				int win = cpu_only ? role[i] != 2 : role[i] == 1;
				if (win)
					f[k++] = cnt[i];
				else
					out += cnt[i];
			}
			/* cpu-only binpack is over CPU: the GPU nodes used 0 CPU
			 * here, so every node with memory ties */
			assert_int_equal(out, 0);
			double x = chi2(f, k, (double)draws / k);
			if (x > chi2_bound(k))
				fprintf(stderr,
					"tie random with memory (%s, %s): chi2 %.1f over %u\n",
					no_index ? "scan" : "index", cpu_only ? "cpu-only" : "gpu",
					x, k);
			assert_true(x <= chi2_bound(k));
		}
		xp_sched_destroy(s);
	}
	xp_cluster_destroy(c);
}

static int report_ops(void **st)
{
	(void)st;
	sched_print_ops("test_sched_random");
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chi_random_node),
		cmocka_unit_test(test_chi_random_device),
		cmocka_unit_test(test_chi_tie_random),
		cmocka_unit_test(test_chi_tie_random_memory),
		cmocka_unit_test(test_valid_random_policy),
		cmocka_unit_test(test_valid_tie_random),
	};
	return xp_run_tests(tests, NULL, report_ops);
}
