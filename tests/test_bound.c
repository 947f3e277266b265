/*
 * test_bound: the LP bound of src/sim/bound.c (docs/design/bound.md).
 *
 * - On random worlds of the core harness (mixed and OpenB-like clusters,
 *   random requests, 60 cases), the bound is never below the device milli
 *   that greedy fgd, xpool, bestfit, packing and mcts (budget 8, window 16)
 *   actually place: a lower bound on unallocated is never above what a
 *   policy achieves.
 * - On tiny instances (1-3 nodes of 1-3 GPUs, up to 6 OpenB-shaped
 *   requests), against a brute force over every subset and placement: the
 *   bound is never below the optimum, and equals it where the relaxation
 *   is exact by construction (one node type, CPU and memory not binding,
 *   every request one device of more than half a GPU or a whole one).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_harness.h"
#include "sim/bound.h"

/* ---- random worlds: the bound against what policies achieve ---- */

static double placed_by(const struct harness *h, const char *policy, const struct xp_request *r,
			size_t n, struct xp_rng *g)
{
	struct xp_err err;
	struct xp_sched *s = mk_core(h->w.c, policy, XP_TIE_RANK, 0, 0);
	assert_int_equal(xp_sched_set_workload(s, h->m, h->nm, &err), 0);
	if (strcmp(policy, "mcts") == 0) {
		struct xp_alloc out[16];
		uint8_t placed[16];
		struct xp_batch_opts o = { .budget = 8 };
		for (size_t i = 0; i < n; i += 16) {
			size_t m = n - i < 16 ? n - i : 16;
			assert_true(xp_sched_plan_batch(s, r + i, m, &o, g, out, placed) >= 0);
			for (size_t j = 0; j < m; j++)
				if (placed[j])
					xp_sched_commit(s, &out[j]);
		}
	} else {
		for (size_t i = 0; i < n; i++) {
			struct xp_alloc a;
			int rc = xp_sched_place(s, &r[i], g, &a);
			assert_true(rc == 0 || rc == XP_ENOSPC);
		}
	}
	double used = (double)xp_sched_used_milli(s);
	xp_sched_destroy(s);
	return used;
}

static void test_bound_above_policies(void **st)
{
	(void)st;
	static const char *const pols[] = { "fgd", "xpool", "bestfit", "packing", "mcts" };
	size_t tight = 0, cases = 0;
	for (uint64_t seed = 1; seed <= 60; seed++) {
		struct harness h;
		struct xp_request r[200];
		struct xp_err err = { 0 };
		double ub;
		h_init(&h, "xpool", XP_TIE_RANK, 0, 1, seed % 3 ? "random" : "openb",
		       2 + (size_t)(seed % 9), seed);
		size_t n = 5 + below(&h.g, 190);
		for (size_t i = 0; i < n; i++) {
			gen_request(&h.w, &h.g, &r[i]);
			r[i].by_mem = 0; /* not modelled by the bound: a plain fraction */
		}
		if (xp_bound_milli(h.w.c, r, n, &ub, NULL, &err) != 0)
			fail_msg("seed %llu: %s", (unsigned long long)seed, err.text);
		double best = 0;
		for (size_t p = 0; p < NELEM(pols); p++) {
			struct xp_rng g;
			xp_rng_seed(&g, seed);
			double got = placed_by(&h, pols[p], r, n, &g);
			if (got > ub + 1e-6)
				fail_msg("seed %llu: %s placed %.0f milli, bound %.3f",
					 (unsigned long long)seed, pols[p], got, ub);
			if (got > best)
				best = got;
		}
		cases++;
		tight += best >= ub - 0.5;
		h_free(&h);
	}
	fprintf(stderr, "bound: %zu random cases, %zu where a policy reaches it\n", cases, tight);
}

/* ---- tiny instances: brute force ---- */

struct tiny {
	struct xp_cluster *c;
	struct xp_request r[6];
	size_t n;
	int64_t cpu[3], mem[3];
	int16_t freem[3][3]; /* free milli per device */
};

static double brute(struct tiny *t, size_t i)
{
	if (i == t->n)
		return 0;
	double best = brute(t, i + 1); /* request i not placed */
	const struct xp_request *q = &t->r[i];
	double milli = (double)q->dev_count * q->dev_milli;
	for (size_t n = 0; n < t->c->nnodes; n++) {
		const struct xp_node *nd = &t->c->nodes[n];
		if (t->cpu[n] < (int64_t)q->cpu_milli || t->mem[n] < (int64_t)q->mem_mib)
			continue;
		for (unsigned set = 1; set < 1u << nd->ndevs; set++) {
			if ((unsigned)__builtin_popcount(set) != q->dev_count)
				continue;
			int ok = 1;
			for (int d = 0; d < nd->ndevs; d++)
				if (set >> d & 1)
					ok &= q->dev_milli >= XP_MILLI
						      ? t->freem[n][d] == XP_MILLI
						      : t->freem[n][d] >= q->dev_milli;
			if (!ok)
				continue;
			t->cpu[n] -= q->cpu_milli;
			t->mem[n] -= q->mem_mib;
			for (int d = 0; d < nd->ndevs; d++)
				if (set >> d & 1)
					t->freem[n][d] -= q->dev_milli;
			double v = milli + brute(t, i + 1);
			for (int d = 0; d < nd->ndevs; d++)
				if (set >> d & 1)
					t->freem[n][d] += q->dev_milli;
			t->cpu[n] += q->cpu_milli;
			t->mem[n] += q->mem_mib;
			if (v > best)
				best = v;
		}
	}
	return best;
}

static const uint16_t sizes[] = { 160, 230, 320, 470, 500, 550, 650, 810, 1000 };

/* exact: one node type, CPU and memory ample, single devices > 500 milli */
static void tiny_case(struct xp_rng *g, int exact, size_t *equal)
{
	struct tiny t = { .c = xp_cluster_create() };
	struct xp_err err = { 0 };
	size_t nn = 1 + below(g, 3);
	int ngpu = 1 + (int)below(g, 3);
	for (size_t n = 0; n < nn; n++) {
		uint64_t cpu = exact ? 100000 : 4000 + 2000 * below(g, 4);
		add_node(t.c, cpu, 65536, exact ? ngpu : 1 + (int)below(g, 3), 16384);
		t.cpu[n] = (int64_t)cpu;
		t.mem[n] = 65536;
		for (int d = 0; d < 3; d++)
			t.freem[n][d] = XP_MILLI;
	}
	t.n = 1 + below(g, 6);
	for (size_t i = 0; i < t.n; i++) {
		uint16_t m = exact ? sizes[5 + below(g, 4)] : sizes[below(g, NELEM(sizes))];
		uint64_t cpu = exact ? 0 : 1000 * (1 + below(g, 4));
		if (m == XP_MILLI)
			whole_req(&t.r[i], cpu, (uint16_t)(exact ? 1 : 1 + below(g, 2)));
		else
			frac_req(&t.r[i], cpu, m, 0);
	}
	double ub, opt = brute(&t, 0);
	assert_int_equal(xp_bound_milli(t.c, t.r, t.n, &ub, NULL, &err), 0);
	if (ub < opt - 1e-6)
		fail_msg("bound %.3f below the optimum %.0f", ub, opt);
	if (exact && fabs(ub - opt) > 1e-3)
		fail_msg("exact class: bound %.3f, optimum %.0f", ub, opt);
	*equal += fabs(ub - opt) <= 1e-3;
	xp_cluster_destroy(t.c);
}

static void test_bound_brute_force(void **st)
{
	(void)st;
	struct xp_rng g;
	size_t equal = 0, exact_equal = 0;
	xp_rng_seed(&g, 24);
	for (int i = 0; i < 400; i++)
		tiny_case(&g, 0, &equal);
	for (int i = 0; i < 200; i++)
		tiny_case(&g, 1, &exact_equal);
	fprintf(stderr, "bound: equal to brute force on %zu of 400 general tiny cases\n", equal);
	assert_int_equal(exact_equal, 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound_above_policies),
		cmocka_unit_test(test_bound_brute_force),
	};
	return xp_run_tests(tests, NULL, NULL);
}
