/*
 * test_gavel_sim: Gavel's round-based simulator (src/sim/gavel_sim.c).
 *
 * - Reproduction: at seed 0, jobs 4000-4999, the mechanism gives the
 *   verified re-implementation's figures for FIFO, Gavel FIFO and agnostic
 *   LAS (PROTOCOL.md §5, "Verified") to the hundredth of an hour, and lies
 *   within 5 % of the published notebook tables (§2.4), Gavel's LP-based
 *   LAS included. Multi-GPU: the mean of seeds 0-2 lies within 3 % of
 *   the paper's figure (the notebook's own three-seed means) at the
 *   unsaturated rates.
 * - Gavel's LAS with space sharing: the invariants on small pools, single-
 *   and multi-GPU, and a seed-0 cell within 10 % of the published column.
 * - Invariants on random small clusters, every policy, with and without
 *   space sharing and an energy weight: every round's plan places active
 *   jobs at most once, on types where they run, pairs of equal size, never
 *   more GPUs than a type has; no job finishes faster than alone on its
 *   best type; every window job finishes.
 * - Behaviour: xpool's policy runs lone jobs on their best type (FTF 1 when
 *   nothing overlaps); at 4 jobs/h it beats Gavel's LAS on a hold-out seed;
 *   past capacity its starvation guard bounds every job's slowdown;
 *   an energy weight lowers the energy a job uses. One round's plan on a
 *   one-GPU pool, built by hand: a waiting job never takes the place of a
 *   job the LP paired, and when crowded the class with the backlog gets
 *   the GPU (MaxWeight) where the best throughput alone would not.
 * - The greedy pass's heap pops a random queue in qsort's order.
 * - Parsers: the co-location table and the cluster descriptor reject bad
 *   input with the field and the reason.
 * Skips without ../shared.
 */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/model/model.h"
#include "descriptor/descriptor.h"
#include "sim/gavel_sim.h"
#include "sim/gavel_sim_int.h"

#include "gavel_fixture.h"

static double jct_run(enum xp_gavel_policy p, int multi, double rate, unsigned seed, size_t lo,
		      size_t hi)
{
	struct xp_gavel_cfg c;
	struct xp_gavel_result r;
	struct xp_err err = { 0 };
	xp_gavel_cfg_default(&c);
	c.policy = p;
	c.multi_gpu = multi;
	c.rate = rate;
	c.seed = seed;
	c.win_lo = lo;
	c.win_hi = hi;
	c.colo = C;
	c.check = 1;
	if (xp_gavel_simulate(&M, &c, &r, &err) < 0)
		fail_msg("%s", err.text);
	assert_false(r.saturated);
	assert_int_equal(r.jobs, hi - lo);
	return r.avg_jct_h;
}

static double jct(enum xp_gavel_policy p, double rate, unsigned seed, size_t lo, size_t hi)
{
	return jct_run(p, 0, rate, seed, lo, hi);
}

/* a reproduction row: the mean JCT over seeds [0, seeds) against the
 * published figure within tol, and the verified one to the hundredth where
 * there is one (verified > 0) */
struct repro {
	enum xp_gavel_policy p;
	double rate, verified, published;
};

static void check_repro(const struct repro *rows, size_t n, int multi, unsigned seeds, double tol)
{
	for (size_t i = 0; i < n; i++) {
		double h = 0;
		for (unsigned seed = 0; seed < seeds; seed++)
			h += jct_run(rows[i].p, multi, rows[i].rate, seed, 4000, 5000) / seeds;
		print_message("%-10s %s %.1f jobs/h, seeds 0-%u: %.2f h (verified %.2f, published "
			      "%.2f)\n",
			      xp_gavel_policy_name(rows[i].p), multi ? "multi" : "single", rows[i].rate,
			      seeds - 1, h, rows[i].verified, rows[i].published);
		if (rows[i].verified > 0)
			assert_true(fabs(h - rows[i].verified) < 0.006);
		assert_true(fabs(h / rows[i].published - 1) < tol);
	}
}

static void test_reproduces(void **state)
{
	(void)state;
	if (!C)
		xp_skip();
	static const struct repro rows[] = {
		{ XP_GP_FIFO, 0.4, 17.58, 17.58 },	{ XP_GP_FIFO, 2.0, 18.42, 18.32 },
		{ XP_GP_FIFO_PERF, 0.4, 15.51, 15.31 }, { XP_GP_FIFO_PERF, 2.0, 15.66, 15.45 },
		{ XP_GP_LAS, 0.4, 23.47, 23.26 },	{ XP_GP_LAS, 2.0, 23.68, 23.47 },
		{ XP_GP_LAS_PERF, 2.0, -1, 16.95 },
	};
	check_repro(rows, sizeof(rows) / sizeof(rows[0]), 0, 1, 0.05);
}

/* Multi-GPU jobs against the paper's figure: the mean over seeds 0-2 that
 * cell 16 of continuous_jobs_multigpu.ipynb prints at the OSDI commit
 * (1f6f02e). The seed-0 table in PROTOCOL.md §2.4 (cells 17-18, not re-run
 * in that commit) is 4-5 % above our seed 0 at low load for every policy,
 * while the seeds 1-2 mean the two imply agrees with ours within 1 %: that
 * one published run differs (docs/results/policy.md §2.1), so the means
 * are the figure to reproduce. */
static void test_reproduces_multi(void **state)
{
	(void)state;
	if (!C)
		xp_skip();
	static const struct repro rows[] = {
		{ XP_GP_FIFO, 0.2, -1, 17.29 },	     { XP_GP_FIFO, 1.0, -1, 18.36 },
		{ XP_GP_FIFO_PERF, 0.2, -1, 15.56 }, { XP_GP_FIFO_PERF, 1.0, -1, 15.83 },
		{ XP_GP_LAS, 0.2, -1, 23.91 },	     { XP_GP_LAS, 1.0, -1, 24.14 },
		{ XP_GP_LAS_PERF, 0.2, -1, 17.29 },  { XP_GP_LAS_PERF, 1.0, -1, 17.22 },
	};
	check_repro(rows, sizeof(rows) / sizeof(rows[0]), 1, 3, 0.03);
}

/* the greedy pass's heap pops entries in qsort's order: random queues with
 * many ties in (priority, deficit, X), position breaking them */
static void test_entry_heap(void **state)
{
	(void)state;
	srand(5);
	for (int it = 0; it < 200; it++) {
		size_t n = (size_t)(rand() % 300);
		struct gentry *e = calloc(n + 1, sizeof(*e)), *ref = calloc(n + 1, sizeof(*e));
		for (size_t i = 0; i < n; i++) {
			e[i] = (struct gentry){ rand() % 4 * 0.5, rand() % 3 - 1.0, rand() % 2, (int)i,
						rand() % 2, (int)i };
			ref[i] = e[i];
		}
		qsort(ref, n, sizeof(*ref), xp_gavel_entry_cmp);
		xp_gavel_entry_heapify(e, n);
		size_t left = n;
		for (size_t i = 0; i < n; i++) {
			struct gentry t = xp_gavel_entry_pop(e, &left);
			assert_int_equal(t.pos, ref[i].pos);
		}
		assert_int_equal(left, 0);
		free(e);
		free(ref);
	}
}

static void test_invariants(void **state)
{
	(void)state;
	if (!C)
		xp_skip();
	srand(7);
	for (int it = 0; it < 40; it++) {
		struct xp_gavel_cfg c;
		struct xp_gavel_result r;
		struct xp_err err = { 0 };
		xp_gavel_cfg_default(&c);
		for (int k = 0; k < XP_GAVEL_TYPES; k++)
			c.gpus[k] = rand() % 7;
		if (c.gpus[0] < 1)
			c.gpus[0] = 8; /* every job runs on a V100 */
		/* the policies before gavel-las-ss (test_las_ss has its own): the
		 * draws below are tied to this cycle */
		c.policy = (enum xp_gavel_policy)(it % XP_GP_LAS_SS);
		c.multi_gpu = it % 3 == 0;
		if (c.multi_gpu)
			c.gpus[0] = 8 + rand() % 9;
		/* under the pool's capacity: a job needs about 17 V100-hours */
		int n = c.gpus[0] + c.gpus[1] + c.gpus[2];
		c.rate = (0.1 + (rand() % 50) / 100.0) * n / 17.0 / (c.multi_gpu ? 2 : 1);
		c.seed = (unsigned)(rand() % 1000);
		c.win_lo = (size_t)(rand() % 40);
		c.win_hi = c.win_lo + 20 + (size_t)(rand() % 40);
		c.colo = it % 2 ? C : NULL;
		c.energy_weight = it % 4 == 1 ? 0.5 : 0;
		c.max_active = 300;
		c.check = 1;
		if (xp_gavel_simulate(&M, &c, &r, &err) < 0)
			fail_msg("run %d (%s): %s", it, xp_gavel_policy_name(c.policy), err.text);
		if (r.saturated) /* FIFO's quirk can starve a small pool */
			continue;
		assert_int_equal(r.jobs, c.win_hi - c.win_lo);
		/* nobody beats running alone on its best type */
		assert_true(r.ftf_mean >= 1 - 1e-9);
		assert_true(r.avg_jct_h > 0 && r.p99_jct_h >= r.p50_jct_h);
		for (int k = 0; k < XP_GAVEL_TYPES; k++)
			assert_true(r.util[k] >= 0 && r.util[k] <= 1 + 1e-9);
	}
}

static void test_las_ss(void **state)
{
	(void)state;
	if (!C)
		xp_skip();
	struct xp_gavel_cfg c;
	struct xp_gavel_result r;
	struct xp_err err = { 0 };
	/* it shares GPUs: no co-location table, no run */
	xp_gavel_cfg_default(&c);
	c.policy = XP_GP_LAS_SS;
	assert_true(xp_gavel_simulate(&M, &c, &r, &err) < 0);
	assert_non_null(strstr(err.text, "co-location"));
	/* the plan invariants on random small pools, pairs and multi-GPU jobs */
	srand(11);
	for (int it = 0; it < 12; it++) {
		xp_gavel_cfg_default(&c);
		c.policy = XP_GP_LAS_SS;
		c.multi_gpu = it % 2;
		c.gpus[0] = (c.multi_gpu ? 8 : 1) + rand() % 9;
		c.gpus[1] = rand() % 7;
		c.gpus[2] = rand() % 7;
		int n = c.gpus[0] + c.gpus[1] + c.gpus[2];
		c.rate = (0.2 + (rand() % 60) / 100.0) * n / 17.0 / (c.multi_gpu ? 2 : 1);
		c.seed = (unsigned)(rand() % 1000);
		c.win_lo = (size_t)(rand() % 40);
		c.win_hi = c.win_lo + 20 + (size_t)(rand() % 40);
		c.colo = C;
		c.max_active = 300;
		c.check = 1;
		if (xp_gavel_simulate(&M, &c, &r, &err) < 0)
			fail_msg("run %d: %s", it, err.text);
		if (r.saturated)
			continue;
		assert_int_equal(r.jobs, c.win_hi - c.win_lo);
		assert_true(r.ftf_mean >= 1 - 1e-9);
	}
	/* seed 0 against the published column (PROTOCOL.md §2.4, 18.26 h); at
	 * this load the LP's slack decides, and a simplex vertex instead of
	 * ECOS's interior point gives 21.8 h */
	double h = jct(XP_GP_LAS_SS, 2.0, 0, 4000, 5000);
	print_message("gavel-las-ss 2.0 jobs/h: %.2f h (published 18.26)\n", h);
	assert_true(fabs(h / 18.26 - 1) < 0.10);
}

static void test_xpool(void **state)
{
	(void)state;
	if (!C)
		xp_skip();
	/* nothing overlaps enough to contend: each job alone on its best type */
	struct xp_gavel_cfg c;
	struct xp_gavel_result r, e;
	struct xp_err err = { 0 };
	xp_gavel_cfg_default(&c);
	c.rate = 0.05;
	c.win_lo = 0;
	c.win_hi = 200;
	c.colo = C;
	c.check = 1;
	assert_int_equal(xp_gavel_simulate(&M, &c, &r, &err), 0);
	/* a job that arrives while another runs waits for the round to end,
	 * then runs at its best speed; a round lasts as long as its longest
	 * job, so a job whose whole steps take less loses the difference */
	print_message("0.05 jobs/h: FTF %.4f, the most beyond alone %.0f s\n", r.ftf_mean,
		      r.excess_max_s);
	assert_true(r.ftf_mean < 1.05 && r.excess_max_s < 3600);
	/* a hold-out seed under load: better than Gavel's LAS */
	double x = jct(XP_GP_XPOOL, 4.0, 11, 1500, 2000);
	double g = jct(XP_GP_LAS_PERF, 4.0, 11, 1500, 2000);
	print_message("4 jobs/h, seed 11: xpool %.2f h, Gavel LAS %.2f h\n", x, g);
	assert_true(x < g);
	/* past the pool's capacity the starvation guard bounds how long a
	 * job waits against its service: no finished window job ends more
	 * than twice the guard's 8x slower than alone (8.05x; 28.4x with the
	 * guard switched off) */
	size_t max_active = c.max_active;
	c.rate = 14.0;
	c.win_lo = 800;
	c.win_hi = 900;
	c.max_active = 1500;
	assert_int_equal(xp_gavel_simulate(&M, &c, &r, &err), 0);
	print_message("14 jobs/h: %zu window jobs finished, FTF max %.2f\n", r.jobs, r.ftf_max);
	assert_true(r.jobs > 50 && r.ftf_max < 16);
	c.max_active = max_active;
	/* the energy weight trades JCT for energy */
	c.rate = 3.0;
	c.win_lo = 1000;
	c.win_hi = 1500;
	assert_int_equal(xp_gavel_simulate(&M, &c, &r, &err), 0);
	c.energy_weight = 0.5;
	assert_int_equal(xp_gavel_simulate(&M, &c, &e, &err), 0);
	print_message("energy weight 0.5: %.2f -> %.2f kWh/job, JCT %.2f -> %.2f h\n", r.job_kwh,
		      e.job_kwh, r.avg_jct_h, e.avg_jct_h);
	assert_true(e.job_kwh < r.job_kwh);
}

/* ---- one round of xpool's plan on a pool of one V100, by hand ---- */

/* a single-GPU template's throughput on its fastest type, and on a V100
 * as a share of that */
static double best_of(int t)
{
	double best = 0;
	for (int k = 0; k < GT; k++)
		if (M.tput[t][0][k] > best)
			best = M.tput[t][0][k];
	return best;
}

static double v100_share(int t)
{
	return M.tput[t][0][0] / best_of(t);
}

static const float *colo_v100(int a, int b)
{
	return C->tput[0][0][a][b];
}

/* active jobs of the given templates (single-GPU, far from done), in this
 * order of attained service; the plan for the round at t = 0 */
static void plan_one_v100(struct gsim *s, struct xp_gavel_cfg *cfg, const int *tmpl, int n)
{
	xp_gavel_cfg_default(cfg);
	cfg->gpus[0] = 1;
	cfg->gpus[1] = cfg->gpus[2] = 0;
	cfg->colo = C;
	memset(s, 0, sizeof(*s));
	s->m = &M;
	s->cfg = cfg;
	for (int i = 0; i < n; i++) {
		struct gjob j = { .tmpl = tmpl[i], .sf = 1, .total = 1e12, .served = i,
				  .best = best_of(tmpl[i]), .last_k = -1, .fifo_k = -1, .active = 1 };
		for (int k = 0; k < GT; k++)
			j.t[k] = M.tput[tmpl[i]][0][k];
		xp_vec_push(&s->jobs, j);
		xp_vec_push(&s->act, i);
	}
	xp_gavel_xpool_plan(s);
}

static void plan_free(struct gsim *s)
{
	xp_vec_free(&s->jobs);
	xp_vec_free(&s->act);
	xp_vec_free(&s->plan);
}

static void test_xpool_round(void **state)
{
	(void)state;
	if (!C)
		xp_skip();
	struct gsim s;
	struct xp_gavel_cfg cfg;
	/* three jobs, one GPU: the first two share it better than either runs
	 * alone, and the third would pair with either (Gavel's 1.25 rule).
	 * The LP pairs the first two; the third waits (it once replaced the
	 * LP's partner, which then did not run) */
	int found = 0;
	for (int x = 0; x < XP_GAVEL_TEMPLATES && !found; x++)
		for (int y = 0; y < XP_GAVEL_TEMPLATES && !found; y++) {
			const float *p = colo_v100(x, y);
			if (x == y || p[0] <= 0 || p[1] <= 0)
				continue;
			if (p[0] / best_of(x) + p[1] / best_of(y) <
			    0.1 + fmax(v100_share(x), v100_share(y)))
				continue;
			for (int z = 0; z < XP_GAVEL_TEMPLATES && !found; z++) {
				const float *zx = colo_v100(x, z), *zy = colo_v100(y, z);
				if (z == x || z == y || zx[0] <= 0 || zy[0] <= 0 ||
				    zx[0] / M.tput[x][0][0] + zx[1] / M.tput[z][0][0] < 1.4 ||
				    zy[0] / M.tput[y][0][0] + zy[1] / M.tput[z][0][0] < 1.4)
					continue;
				found = 1;
				plan_one_v100(&s, &cfg, (int[]){ x, y, z }, 3);
				assert_int_equal(s.plan.n, 1);
				const struct gplace *pl = &s.plan.v[0];
				print_message("pair %d+%d on one V100, %d waits: plan %d+%d\n", x, y, z,
					      pl->a, pl->b);
				assert_true((pl->a == 0 && pl->b == 1) || (pl->a == 1 && pl->b == 0));
				plan_free(&s);
			}
		}
	assert_true(found);
	/* two jobs that cannot share, the first a little faster for its best
	 * on a V100: alone the first runs; with four more of the second's
	 * class waiting, the second runs - its class's backlog weighs
	 * (5 / 3)^0.5 against (1 / 3)^0.5 */
	found = 0;
	for (int x = 0; x < XP_GAVEL_TEMPLATES && !found; x++)
		for (int y = 0; y < XP_GAVEL_TEMPLATES && !found; y++) {
			if (x == y || colo_v100(x, y)[0] > 0 || colo_v100(x, x)[0] > 0 ||
			    colo_v100(y, y)[0] > 0 || v100_share(y) >= v100_share(x) ||
			    v100_share(y) < 0.8)
				continue;
			found = 1;
			plan_one_v100(&s, &cfg, (int[]){ x, y }, 2);
			assert_int_equal(s.plan.n, 1);
			assert_int_equal(s.plan.v[0].a, 0);
			plan_free(&s);
			plan_one_v100(&s, &cfg, (int[]){ x, y, y, y, y, y }, 6);
			assert_int_equal(s.plan.n, 1);
			print_message("%d alone, %d with a backlog of 5: plan runs job %d\n", x, y,
				      s.plan.v[0].a);
			assert_true(s.plan.v[0].a >= 1 && s.plan.v[0].b < 0);
			plan_free(&s);
		}
	assert_true(found);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_parsers(void **state)
{
	(void)state;
	static struct xp_gavel_colo c;
	char path[] = "/tmp/xp_gavel_colo_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	static const struct {
		const char *csv, *want;
	} bad[] = {
		{ "worker_type,job_a,scale_factor_a,job_b\n", "scale_factor_b" },
		{ "worker_type,job_a,scale_factor_a,job_b,scale_factor_b,tput_a,tput_b\n"
		  "t4,A3C,1,A3C,1,1,1\n",
		  "worker_type" },
		{ "worker_type,job_a,scale_factor_a,job_b,scale_factor_b,tput_a,tput_b\n"
		  "v100,Nope,1,A3C,1,1,1\n",
		  "job_a" },
		{ "worker_type,job_a,scale_factor_a,job_b,scale_factor_b,tput_a,tput_b\n"
		  "v100,A3C,1,A3C,2,1,1\n",
		  "scale_factor" },
		{ "worker_type,job_a,scale_factor_a,job_b,scale_factor_b,tput_a,tput_b\n"
		  "v100,A3C,1,A3C,1,-1,1\n",
		  "tput_a" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xp_err err = { 0 };
		write_file(path, bad[i].csv);
		assert_true(xp_gavel_colo_load(path, &c, &err) < 0);
		if (!strstr(err.text, bad[i].want))
			fail_msg("'%s' lacks '%s'", err.text, bad[i].want);
	}
	struct xp_err err = { 0 };
	write_file(path, "worker_type,job_a,scale_factor_a,job_b,scale_factor_b,tput_a,tput_b\n"
			 "k80,A3C,1,CycleGAN,1,0.5,0.25\n");
	assert_int_equal(xp_gavel_colo_load(path, &c, &err), 0);
	assert_true(fabs(c.tput[2][0][24][25][1] - 0.25) < 1e-7);
	unlink(path);

	/* the cluster descriptor gives counts and power */
	static const char yaml[] =
		"version: 1\nnodes:\n"
		"  - {name: v, count: 2, cpu: 8, memory: 8Gi, devices: [{type: gpu, vendor: "
		"NVIDIA, model: Tesla-V100, count: 4, tdp: 250W, idle_power: 35W}]}\n"
		"  - {name: k, count: 1, cpu: 8, memory: 8Gi, devices: [{type: gpu, vendor: "
		"NVIDIA, model: K80, count: 2, tdp: 150W, idle_power: 25W}]}\n";
	struct xp_cluster *cl =
		xp_descriptor_load_buf("t.yaml", yaml, sizeof(yaml) - 1, XP_DESC_YAML, &err);
	if (!cl)
		fail_msg("%s", err.text);
	struct xp_gavel_cfg g;
	xp_gavel_cfg_default(&g);
	assert_int_equal(xp_gavel_cfg_cluster(&g, cl, 0.8, &err), 0);
	assert_int_equal(g.gpus[0], 8);
	assert_int_equal(g.gpus[1], 0);
	assert_int_equal(g.gpus[2], 2);
	assert_true(fabs(g.power.busy_w[0] - 200) < 1e-9 && fabs(g.power.idle_w[2] - 25) < 1e-9);
	xp_cluster_destroy(cl);
	static const char none[] = "version: 1\nnodes:\n"
				   "  - {name: a, cpu: 8, memory: 8Gi, devices: [{type: gpu, "
				   "vendor: NVIDIA, model: A100, count: 1, tdp: 400W}]}\n";
	cl = xp_descriptor_load_buf("n.yaml", none, sizeof(none) - 1, XP_DESC_YAML, &err);
	assert_non_null(cl);
	assert_true(xp_gavel_cfg_cluster(&g, cl, 0.8, &err) < 0);
	assert_non_null(strstr(err.text, "V100"));
	xp_cluster_destroy(cl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parsers),	   cmocka_unit_test(test_entry_heap),
		cmocka_unit_test(test_invariants),
		cmocka_unit_test(test_xpool),	   cmocka_unit_test(test_xpool_round),
		cmocka_unit_test(test_las_ss),
		cmocka_unit_test(test_reproduces),
		cmocka_unit_test(test_reproduces_multi),
	};
	return xp_run_tests(tests, setup, teardown);
}
