/*
 * test_mcts_cycle: the batch step of the state layer's scheduling cycle
 * (src/core/state/cycle.c, docs/design/batch-cycle.md; issue 24).
 *
 * - Random worlds (mixed GPU nodes, a queue tree with guarantees, maxes and
 *   preemption, single jobs, fractions, gangs on one node and spread, jobs
 *   finishing, cancelled and requeued, M estimated as the controller does)
 *   are run with greedy xpool and with mcts at budget 0: every record the
 *   cycle emits (job.start with its allocations, job.preempt) must be the
 *   same, in the same order.
 * - The same worlds with the batch step on (budget 16): every record
 *   applies and every invariant of the state holds after each (world.c),
 *   the journal replays to the same state, the same seed gives the same
 *   records, and batches were actually searched.
 * - A scenario where the search places a job that greedy leaves waiting,
 *   and the job it passes over says so (pending reason Search, naming the
 *   other); a gang on one node is one batch item, started whole.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/state.h"
#include "edge/edge.h"
#include "lib/rng.h"
#include "lib/vec.h"
#include "lib/xalloc.h"
#include "world.h"

struct recs {
	XP_VEC(char *) v; /* "type body" */
};

static void keep_emit(struct world *w, const char *type, const char *body)
{
	struct recs *r = w->user;
	size_t n = strlen(type) + strlen(body) + 2;
	char *s = xmalloc(n);
	snprintf(s, n, "%s %s", type, body);
	xp_vec_push(&r->v, s);
}

static void recs_free(struct recs *r)
{
	for (size_t i = 0; i < r->v.n; i++)
		free(r->v.v[i]);
	xp_vec_free(&r->v);
}

static void queue(struct world *w, const char *doc)
{
	struct xp_queuespec q;
	struct xp_err err = { 0 };
	if (xp_queuespec_parse_text("q", doc, strlen(doc), 0, 1, &q, NULL, &err) < 0)
		fail_msg("queue: %s", err.text);
	assert_int_equal(world_apply(w, "queue.create", xp_rec_queue_define(&q)), 0);
}

static void node(struct world *w, const char *name, int gpus, const char *model, int cpu)
{
	char *doc = world_node_doc(name, gpus, model, cpu);
	assert_int_equal(world_apply(w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, doc)), 0);
	free(doc);
}

static void setup(struct world *w, struct xp_rng *rng)
{
	assert_int_equal(world_apply(w, "tenant.create", xp_rec_tenant_create("t1")), 0);
	assert_int_equal(world_apply(w, "tenant.create", xp_rec_tenant_create("t2")), 0);
	for (int i = 0; i < 8; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%d", i);
		node(w, name, (int)(2 + 2 * xp_rng_below(rng, 4)), i % 3 ? "A100" : "H100",
		     32 + 32 * (i % 2));
	}
	queue(w, "{name: a, preempt: reclaim, quota: {gpu: {guarantee: 12}}}");
	queue(w, "{name: b, preempt: priority, quota: {gpu: {guarantee: 8, max: 20}}}");
	queue(w, "{name: c, preempt: never}");
}

static void submit_random(struct world *w, struct xp_rng *rng)
{
	static const char *const devs[] = { "",
					    ", devices: {count: 1}",
					    ", devices: {count: 2}",
					    ", devices: {count: 4}",
					    ", devices: {count: 1, model: H100}",
					    ", devices: {fraction: 0.5}",
					    ", devices: {fraction: 0.25}",
					    ", devices: {count: 8}" };
	static const char *const qs[] = { "a", "b", "c" };
	static const char *const coloc[] = { "", "gang: {colocate: node}\n" };
	char y[512];
	int reps = xp_rng_below(rng, 4) == 0 ? 2 + (int)xp_rng_below(rng, 2) : 1;
	snprintf(y, sizeof(y),
		 "queue: %s\npriority: %d\nreplicas: %d\n%sresources: {cpu: %d, memory: "
		 "%dGi%s}\n%s",
		 qs[xp_rng_below(rng, 3)], (int)xp_rng_below(rng, 3), reps,
		 reps > 1 ? coloc[xp_rng_below(rng, 2)] : "", 1 + (int)xp_rng_below(rng, 8),
		 1 + (int)xp_rng_below(rng, 16), devs[xp_rng_below(rng, 8)],
		 xp_rng_below(rng, 2) ? "time_limit: 300s\n" : "");
	assert_true(world_submit(w, xp_rng_below(rng, 2) ? "t1" : "t2", y, NULL) != 0);
}

/* one random world under policy at budget; the cycle's records into out */
static void run_world(uint64_t seed, const char *policy, uint32_t budget, int ops,
		      struct recs *out, uint64_t *batches)
{
	struct world w;
	struct xp_rng rng;
	struct xp_state_opts so = { .policy = policy, .batch = { .budget = budget } };
	world_init_opts(&w, &so);
	w.user = out;
	w.on_emit = keep_emit;
	xp_rng_seed(&rng, seed);
	setup(&w, &rng);
	for (int op = 0; op < ops; op++) {
		uint64_t k = xp_rng_below(&rng, 100);
		w.now += 1000;
		if (k < 45) {
			submit_random(&w, &rng);
		} else if (k < 50) { /* M from what was submitted, as the controller */
			struct xp_err err = { 0 };
			assert_true(xp_state_estimate_workload(w.st, 0, &err) >= 0);
		} else if (k < 72) {
			struct xp_rng r2;
			xp_rng_seed(&r2, xp_rng_next(&rng));
			assert_true(xp_state_cycle(w.st, w.now, 1 + xp_rng_below(&rng, 80), &r2,
						   world_emit, &w) >= 0);
		} else if (k < 95 && w.st->count[XP_JOB_RUNNING]) {
			struct xp_job *j = w.st->jobs.v[xp_rng_below(&rng, w.st->jobs.n)];
			if (j->state != XP_JOB_RUNNING)
				continue;
			assert_int_equal(world_apply(&w, k < 92 ? "job.finish" : "job.requeue",
						     k < 92 ? xp_rec_job_finish(j->id,
										XP_JOB_SUCCEEDED,
										0, NULL)
							    : xp_rec_job_requeue(j->id, "lost")),
					 0);
		} else if (w.st->jobs.n) {
			struct xp_job *j = w.st->jobs.v[xp_rng_below(&rng, w.st->jobs.n)];
			if (!xp_job_terminal(j->state))
				assert_int_equal(world_apply(&w, "job.cancel",
							     xp_rec_job_cancel(j->id, NULL)),
						 0);
		}
	}
	world_cycle(&w);
	char *s = xp_state_snapshot(w.st), *r = world_replay(&w, w.log.n, NULL, 0);
	assert_string_equal(s, r);
	free(s);
	free(r);
	if (batches)
		*batches = w.st->batch.batches;
	world_free(&w);
}

static void assert_same(const struct recs *a, const struct recs *b, uint64_t seed)
{
	size_t n = a->v.n < b->v.n ? a->v.n : b->v.n;
	for (size_t i = 0; i < n; i++)
		if (strcmp(a->v.v[i], b->v.v[i]))
			fail_msg("seed %llu, decision %zu:\n  %s\n  %s", (unsigned long long)seed, i,
				 a->v.v[i], b->v.v[i]);
	assert_int_equal(a->v.n, b->v.n);
}

static int same(const struct recs *a, const struct recs *b)
{
	if (a->v.n != b->v.n)
		return 0;
	for (size_t i = 0; i < a->v.n; i++)
		if (strcmp(a->v.v[i], b->v.v[i]))
			return 0;
	return 1;
}

/* budget 0: mcts decides exactly as greedy xpool, decision for decision */
static void test_mcts_budget0_is_greedy(void **state)
{
	(void)state;
	size_t total = 0;
	for (uint64_t seed = 1; seed <= 30; seed++) {
		struct recs g = { 0 }, m = { 0 };
		run_world(seed, "xpool", 0, 600, &g, NULL);
		run_world(seed, "mcts", 0, 600, &m, NULL);
		assert_same(&g, &m, seed);
		total += g.v.n;
		recs_free(&g);
		recs_free(&m);
	}
	print_message("budget 0: %zu decisions equal to greedy xpool's on 30 worlds\n", total);
	assert_true(total > 1000);
}

/* budget 16: legal, replayable, deterministic, and searched */
static void test_mcts_batch_worlds(void **state)
{
	(void)state;
	uint64_t all = 0;
	size_t differ = 0;
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct recs a = { 0 }, b = { 0 }, g = { 0 };
		uint64_t batches = 0;
		run_world(seed, "mcts", 16, 600, &a, &batches);
		run_world(seed, "mcts", 16, 600, &b, NULL);
		run_world(seed, "xpool", 0, 600, &g, NULL);
		assert_same(&a, &b, seed);
		differ += !same(&a, &g);
		all += batches;
		recs_free(&a);
		recs_free(&b);
		recs_free(&g);
	}
	print_message("budget 16: %llu batches searched on 20 worlds, %zu worlds decided "
		      "otherwise than greedy\n",
		      (unsigned long long)all, differ);
	assert_true(all > 100);
	assert_true(differ > 0); /* the search is not idle */
}

static const struct xp_job *job(struct world *w, uint64_t id)
{
	const struct xp_job *j = xp_state_job(w->st, id);
	assert_non_null(j);
	return j;
}

/* One node of 8 GPUs; 4 GPUs asked first, then 8. Greedy starts the
 * first and the second waits; the search starts the 8 (more placed) and
 * the first says the search placed the other. */
static void two_jobs(uint32_t budget, uint64_t *a, uint64_t *b, struct world *w)
{
	struct xp_state_opts so = { .policy = "mcts", .batch = { .budget = budget } };
	world_init_opts(w, &so);
	assert_int_equal(world_apply(w, "tenant.create", xp_rec_tenant_create("t1")), 0);
	queue(w, "{name: default}");
	node(w, "n0", 8, "A100", 64);
	*a = world_submit(w, "t1", "resources: {cpu: 1, memory: 1Gi, devices: {count: 4}}", NULL);
	*b = world_submit(w, "t1", "resources: {cpu: 1, memory: 1Gi, devices: {count: 8}}", NULL);
	world_cycle(w);
}

static void test_mcts_search_verdict(void **state)
{
	(void)state;
	struct world w;
	struct xp_pending pd;
	uint64_t a, b;

	two_jobs(0, &a, &b, &w);
	assert_int_equal(job(&w, a)->state, XP_JOB_RUNNING);
	assert_int_equal(job(&w, b)->state, XP_JOB_PENDING);
	xp_state_pending(w.st, job(&w, b), &pd);
	assert_string_equal(xp_pend_name(pd.code), "Resources");
	world_free(&w);

	two_jobs(16, &a, &b, &w);
	assert_int_equal(job(&w, a)->state, XP_JOB_PENDING);
	assert_int_equal(job(&w, b)->state, XP_JOB_RUNNING);
	assert_true(w.st->batch.batches >= 1);
	xp_state_pending(w.st, job(&w, a), &pd);
	assert_string_equal(xp_pend_name(pd.code), "Search");
	char want[64];
	snprintf(want, sizeof(want), "job %llu first", (unsigned long long)b);
	assert_non_null(strstr(pd.detail, want));
	assert_non_null(strstr(pd.detail, "1 other job "));
	/* b ends: a starts, and the verdict is gone with the wait */
	assert_int_equal(world_apply(&w, "job.finish", xp_rec_job_finish(b, XP_JOB_SUCCEEDED, 0,
									  NULL)),
			 0);
	world_cycle(&w);
	assert_int_equal(job(&w, a)->state, XP_JOB_RUNNING);
	world_free(&w);
}

/* a gang on one node is one item of the batch: whole, on one node */
static void test_mcts_gang_item(void **state)
{
	(void)state;
	struct world w;
	struct xp_state_opts so = { .policy = "mcts", .batch = { .budget = 16 } };
	world_init_opts(&w, &so);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("t1")), 0);
	queue(&w, "{name: default}");
	node(&w, "n0", 4, "A100", 64);
	node(&w, "n1", 8, "A100", 64);
	uint64_t s = world_submit(&w, "t1", "resources: {cpu: 1, memory: 1Gi, devices: {count: 4}}",
				  NULL);
	uint64_t g = world_submit(&w, "t1",
				  "replicas: 2\ngang: {colocate: node}\nresources: {cpu: 1, memory: "
				  "1Gi, devices: {count: 4}}",
				  NULL);
	world_cycle(&w);
	const struct xp_job *js = job(&w, s), *jg = job(&w, g);
	assert_int_equal(js->state, XP_JOB_RUNNING);
	assert_int_equal(jg->state, XP_JOB_RUNNING);
	assert_int_equal(jg->allocs[0].node, jg->allocs[1].node);
	assert_int_equal(jg->allocs[0].node, xp_state_node(w.st, "n1"));
	assert_int_equal(js->allocs[0].node, xp_state_node(w.st, "n0"));
	assert_int_equal(w.st->batch.searched, 2);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcts_budget0_is_greedy),
		cmocka_unit_test(test_mcts_batch_worlds),
		cmocka_unit_test(test_mcts_search_verdict),
		cmocka_unit_test(test_mcts_gang_item),
	};
	return xp_run_tests(tests, NULL, NULL);
}
