/*
 * test_gavel_mcts: `--policy mcts` on Gavel's workload (src/sim/gavel_mcts.c).
 *
 * - Budget 0 is xpool: the same run, same seed, gives every window job the
 *   same finish time as `xpool`, single-GPU past the knee (where xpool's
 *   plan leaves jobs out) and multi-GPU (gangs of 1-8 GPUs).
 * - A budget above 0 is deterministic for a seed: two runs, the same
 *   finish times; and every plan it makes is valid (cfg.check).
 * - One round on random pools and queues, by hand: the search's plan is
 *   never worse than xpool's by the round objective
 *   (xp_gavel_xpool_score), places each job at most once and no type over
 *   its GPUs, is the same plan when run again, and beats xpool's plan on
 *   some of the rounds (the search does something).
 * Skips without ../shared.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/rng.h"
#include "sim/gavel_sim.h"
#include "sim/gavel_sim_int.h"

#include "gavel_fixture.h"

#define LO 300
#define HI 600

/* one run's window finish times into fin[HI - LO]; its average JCT */
static double run(enum xp_gavel_policy p, unsigned budget, int multi, double rate, unsigned seed,
		  double *fin)
{
	struct xp_gavel_cfg c;
	struct xp_gavel_result r;
	struct xp_err err = { 0 };
	xp_gavel_cfg_default(&c);
	c.policy = p;
	c.budget = budget;
	c.multi_gpu = multi;
	c.rate = rate;
	c.seed = seed;
	c.win_lo = LO;
	c.win_hi = HI;
	c.colo = C;
	c.check = 1;
	c.finish = fin;
	if (xp_gavel_simulate(&M, &c, &r, &err) < 0)
		fail_msg("%s", err.text);
	assert_false(r.saturated);
	assert_int_equal(r.jobs, HI - LO);
	assert_true(r.avg_queue_h >= 0 && r.avg_queue_h <= r.avg_jct_h);
	return r.avg_jct_h;
}

static void test_mcts_budget0_is_xpool(void **state)
{
	(void)state;
	if (!C)
		xp_skip();
	static const struct {
		int multi;
		double rate;
		unsigned seed;
	} cases[] = { { 0, 6.0, 1 }, { 1, 2.8, 2 } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double a[HI - LO], b[HI - LO], c[HI - LO], d[HI - LO];
		double ja = run(XP_GP_XPOOL, 16, cases[i].multi, cases[i].rate, cases[i].seed, a);
		double jb = run(XP_GP_MCTS, 0, cases[i].multi, cases[i].rate, cases[i].seed, b);
		double jc = run(XP_GP_MCTS, 8, cases[i].multi, cases[i].rate, cases[i].seed, c);
		run(XP_GP_MCTS, 8, cases[i].multi, cases[i].rate, cases[i].seed, d);
		print_message("%s %.1f jobs/h seed %u: xpool %.3f h, mcts budget 0 %.3f h, "
			      "budget 8 %.3f h\n",
			      cases[i].multi ? "multi" : "single", cases[i].rate, cases[i].seed, ja,
			      jb, jc);
		assert_memory_equal(a, b, sizeof(a));
		assert_memory_equal(c, d, sizeof(c));
		for (size_t j = 0; j < HI - LO; j++)
			assert_true(a[j] > 0 && c[j] > 0);
	}
}

/* a random round: n active jobs (sizes 1-8 when multi), attained service
 * spread over a few rounds, on a pool of g GPUs per type */
static void random_round(struct gsim *s, struct xp_gavel_cfg *cfg, struct xp_rng *r, int multi)
{
	static const int sfs[4] = { 1, 2, 4, 8 };
	xp_gavel_cfg_default(cfg);
	for (int k = 0; k < GT; k++)
		cfg->gpus[k] = 1 + (int)xp_rng_below(r, 12);
	cfg->colo = xp_rng_below(r, 4) ? C : NULL;
	memset(s, 0, sizeof(*s));
	s->m = &M;
	s->cfg = cfg;
	s->now = 3600;
	int n = 4 + (int)xp_rng_below(r, 60);
	while ((int)s->jobs.n < n) {
		int sfi = multi ? (int)xp_rng_below(r, 4) : 0;
		struct gjob j = { .tmpl = (int)xp_rng_below(r, XP_GAVEL_TEMPLATES),
				  .sfi = sfi,
				  .sf = sfs[sfi],
				  .total = 1e12,
				  .arrival = 3600 - xp_rng_double(r) * 3000,
				  .served = xp_rng_double(r) * 1000,
				  .last_k = -1,
				  .fifo_k = -1,
				  .active = 1 };
		for (int k = 0; k < GT; k++) {
			j.t[k] = M.tput[j.tmpl][sfi][k];
			if (j.t[k] > j.best)
				j.best = j.t[k];
		}
		if (j.best <= 0)
			continue;
		xp_vec_push(&s->jobs, j);
		xp_vec_push(&s->act, (int)s->jobs.n - 1);
	}
}

/* each job at most once, no type over its GPUs */
static void assert_valid(const struct gsim *s)
{
	int used[GT] = { 0 };
	unsigned char *seen = calloc(s->jobs.n, 1);
	for (size_t i = 0; i < s->plan.n; i++) {
		const struct gplace *p = &s->plan.v[i];
		assert_false(seen[p->a]);
		seen[p->a] = 1;
		if (p->b >= 0) {
			assert_false(seen[p->b]);
			seen[p->b] = 1;
		}
		used[p->k] += s->jobs.v[p->a].sf;
	}
	for (int k = 0; k < GT; k++)
		assert_true(used[k] <= s->cfg->gpus[k]);
	free(seen);
}

static void test_mcts_round_never_worse(void **state)
{
	(void)state;
	if (!C)
		xp_skip();
	struct xp_rng r;
	xp_rng_seed(&r, 24);
	int better = 0, rounds = 0;
	for (int it = 0; it < 200; it++) {
		struct gsim s;
		struct xp_gavel_cfg cfg;
		random_round(&s, &cfg, &r, it % 2);
		int crowded;
		free(xp_gavel_xpool_order(&s, &crowded));
		cfg.budget = 0;
		xp_gavel_mcts_plan(&s);
		double s0 = xp_gavel_xpool_score(&s, crowded);
		size_t n0 = s.plan.n;
		struct gplace *p0 = malloc((n0 + 1) * sizeof(*p0));
		memcpy(p0, s.plan.v, n0 * sizeof(*p0));
		s.plan.n = 0;
		xp_gavel_xpool_plan(&s); /* budget 0 is xpool's plan */
		assert_int_equal(s.plan.n, n0);
		assert_memory_equal(s.plan.v, p0, n0 * sizeof(*p0));
		cfg.budget = 32;
		s.plan.n = 0;
		xp_gavel_mcts_plan(&s);
		double s1 = xp_gavel_xpool_score(&s, crowded);
		assert_valid(&s);
		assert_true(s1 >= s0 - 1e-9 * fabs(s0));
		size_t n1 = s.plan.n;
		struct gplace *p1 = malloc((n1 + 1) * sizeof(*p1));
		memcpy(p1, s.plan.v, n1 * sizeof(*p1));
		s.plan.n = 0;
		xp_gavel_mcts_plan(&s);
		assert_int_equal(s.plan.n, n1);
		assert_memory_equal(s.plan.v, p1, n1 * sizeof(*p1));
		rounds++;
		better += s1 > s0 + 1e-9 * fabs(s0);
		free(p0);
		free(p1);
		xp_vec_free(&s.jobs);
		xp_vec_free(&s.act);
		xp_vec_free(&s.plan);
	}
	print_message("search beat xpool's plan by the round objective in %d of %d rounds\n",
		      better, rounds);
	assert_true(better > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcts_budget0_is_xpool),
		cmocka_unit_test(test_mcts_round_never_worse),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
