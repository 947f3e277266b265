/*
 * test_pending: why a pending job waits (pending.c, squeue's REASON), the
 * records that change a pending job (jobedit.c: job.hold, job.update),
 * explain's split of nodes that take no new work by their state, and the
 * preemption line only where preemption was considered.
 *
 * Scenarios with exact expected codes, and a random workload in which
 * every pending job's code is checked against a naive reference model
 * recomputed from first principles (the queue usage from the running
 * jobs' allocations, each node as if it were empty).
 */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/state.h"
#include "edge/edge.h"
#include "lib/rng.h"
#include "lib/xalloc.h"
#include "world.h"

static void init(struct world *w)
{
	world_init(w);
	assert_int_equal(world_apply(w, "tenant.create", xp_rec_tenant_create("t1")), 0);
	assert_int_equal(world_apply(w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
}

static void node(struct world *w, const char *name, int gpus, const char *model, int cpu)
{
	char *d = world_node_doc(name, gpus, model, cpu);
	assert_int_equal(world_apply(w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, d)), 0);
	free(d);
}

static int queue(struct world *w, const char *doc)
{
	struct xp_queuespec q;
	struct xp_err err = { 0 };
	if (xp_queuespec_parse_text("q", doc, strlen(doc), 0, 1, &q, NULL, &err) < 0)
		return err.code;
	return world_apply(w, "queue.create", xp_rec_queue_define(&q));
}

static uint64_t job(struct world *w, const char *yaml)
{
	uint64_t id = world_submit(w, "t1", yaml, NULL);
	assert_true(id != 0);
	return id;
}

static int code(struct world *w, uint64_t id)
{
	struct xp_pending p;
	xp_state_pending(w->st, xp_state_job(w->st, id), &p);
	return p.code;
}

static void expect_code(struct world *w, uint64_t id, int want, const char *detail)
{
	struct xp_pending p;
	xp_state_pending(w->st, xp_state_job(w->st, id), &p);
	if (p.code != want)
		fail_msg("job %llu: %s (%s), want %s", (unsigned long long)id, xp_pend_name(p.code),
			 p.detail, xp_pend_name(want));
	if (detail && !strstr(p.detail, detail))
		fail_msg("job %llu: detail '%s' lacks '%s'", (unsigned long long)id, p.detail,
			 detail);
}

static int patch(struct world *w, uint64_t id, const char *doc)
{
	struct xp_jobpatch p;
	struct xp_err err = { 0 };
	char f[320];
	assert_int_equal(xp_jobpatch_parse_text("p", doc, strlen(doc), 0, &p, f, &err), 0);
	return world_apply(w, "job.update", xp_rec_job_update(id, &p));
}

#define GPU8 "resources: {cpu: 1, memory: 1Gi, devices: {count: 8, class: gpu}}\n"
#define GPU4 "resources: {cpu: 1, memory: 1Gi, devices: {count: 4, class: gpu}}\n"

/* every code, each where it holds */
static void test_codes(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 8, "A100", 64);
	node(&w, "n1", 8, "H100", 64);
	node(&w, "n2", 4, "A100", 64);
	assert_int_equal(queue(&w, "{name: capped, quota: {gpu: {max: 4}}}"), 0);
	uint64_t a = job(&w, GPU8 "duration: 1h\n");
	uint64_t b = job(&w, GPU8 "duration: 1h\n");
	world_cycle(&w);
	uint64_t c = job(&w, GPU8); /* both nodes of 8 busy */
	uint64_t d = job(&w, "depends_on: [{job: 1}]\nresources: {cpu: 1}\n");
	uint64_t e = job(&w, "queue: capped\n" GPU4);
	uint64_t f = job(&w, "queue: capped\n" GPU4);
	uint64_t g = job(&w, "hold_for_nodes: true\nresources: {cpu: 1, devices: {count: 1, "
			     "models: [V100]}}\n");
	uint64_t h = job(&w, "resources: {cpu: 1}\n");
	expect_code(&w, h, XP_PEND_NONE, "not tried");
	assert_int_equal(world_apply(&w, "job.hold", xp_rec_job_hold(h, XP_HOLD_USER)), 0);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, a)->state, XP_JOB_RUNNING);
	assert_int_equal(xp_state_job(w.st, b)->state, XP_JOB_RUNNING);
	expect_code(&w, c, XP_PEND_RESOURCES, "busy");
	expect_code(&w, d, XP_PEND_DEPENDENCY, "waiting for job 1");
	assert_int_equal(xp_state_job(w.st, e)->state, XP_JOB_RUNNING);
	expect_code(&w, f, XP_PEND_QUOTA_MAX, "queue capped: gpu 4/4");
	expect_code(&w, g, XP_PEND_NO_DEVICE, "held for nodes");
	expect_code(&w, h, XP_PEND_HELD, "its tenant");
	/* the nodes that could run c take no new work: Draining, then NodeDown */
	assert_int_equal(world_apply(&w, "node.state", xp_rec_node_state("n0", XP_NODE_DRAINING)),
			 0);
	expect_code(&w, c, XP_PEND_RESOURCES, NULL); /* n1 is still ready */
	assert_int_equal(world_apply(&w, "node.state", xp_rec_node_state("n1", XP_NODE_CORDONED)),
			 0);
	expect_code(&w, c, XP_PEND_DRAINING, NULL);
	assert_int_equal(world_apply(&w, "node.state", xp_rec_node_state("n1", XP_NODE_DOWN)), 0);
	expect_code(&w, c, XP_PEND_DRAINING, NULL); /* draining n0 beats down n1 */
	assert_int_equal(world_apply(&w, "node.state", xp_rec_node_state("n0", XP_NODE_DOWN)), 0);
	expect_code(&w, c, XP_PEND_NODE_DOWN, NULL);
	world_free(&w);
}

/* backfill keeps the room for a reserved job: a job that fits now but
 * would delay it waits with Priority; a short one backfills */
static void test_priority(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 8, "A100", 64);
	job(&w, GPU4 "time_limit: 1h\nduration: 1h\n");
	world_cycle(&w);
	uint64_t big = job(&w, GPU8);
	uint64_t late = job(&w, GPU4 "time_limit: 2h\n");
	uint64_t soon = job(&w, GPU4 "time_limit: 30m\nduration: 30m\n");
	world_cycle(&w);
	expect_code(&w, big, XP_PEND_RESOURCES, NULL);
	expect_code(&w, late, XP_PEND_PRIORITY, "backfill");
	assert_int_equal(xp_state_job(w.st, soon)->state, XP_JOB_RUNNING);
	world_free(&w);
}

/* a hold keeps a job out of the cycle until released; an update changes
 * the order and the queue; snapshot and replay keep both */
static void test_hold_update(void **state)
{
	(void)state;
	struct world w;
	struct xp_err err = { 0 };
	init(&w);
	node(&w, "n0", 8, "A100", 64);
	assert_int_equal(queue(&w, "{name: other}"), 0);
	uint64_t x = job(&w, GPU8);
	assert_int_equal(world_apply(&w, "job.hold", xp_rec_job_hold(x, XP_HOLD_ADMIN)), 0);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, x)->state, XP_JOB_PENDING);
	assert_int_equal(xp_state_job(w.st, x)->held, XP_HOLD_ADMIN);
	/* two more of the same size: the later one raised above the first */
	uint64_t y = job(&w, GPU8);
	assert_int_equal(world_apply(&w, "job.hold", xp_rec_job_hold(y, XP_HOLD_USER)), 0);
	uint64_t z = job(&w, GPU8);
	assert_int_equal(world_apply(&w, "job.hold", xp_rec_job_hold(z, XP_HOLD_USER)), 0);
	assert_int_equal(patch(&w, z, "{priority: 9, name: zz, time_limit: \"1:00:00\"}"), 0);
	const struct xp_job *jz = xp_state_job(w.st, z);
	assert_string_equal(jz->spec.name, "zz");
	assert_int_equal(jz->spec.priority, 9);
	assert_int_equal(jz->spec.time_limit_ms, 3600000);
	/* x moves to another queue: the queues' counts follow (world_apply
	 * checks them against the jobs after every record) */
	assert_int_equal(patch(&w, x, "{queue: other}"), 0);
	assert_int_equal(xp_state_job(w.st, x)->queue, (uint32_t)xp_state_queue(w.st, "other"));
	assert_int_equal(w.st->queues.v[xp_state_queue(w.st, "other")].pending, 1);
	/* the snapshot and the journal agree on holds and changes */
	char *s = xp_state_snapshot(w.st);
	char *r = world_replay(&w, w.log.n, NULL, 0);
	assert_string_equal(s, r);
	struct xp_state *st2 = xp_state_create(&world_opts, &err);
	assert_int_equal(xp_state_load_snapshot(st2, s, strlen(s), &err), 0);
	assert_int_equal(xp_state_job(st2, x)->held, XP_HOLD_ADMIN);
	assert_int_equal(xp_state_job(st2, z)->spec.priority, 9);
	xp_state_destroy(st2);
	free(s);
	free(r);
	/* released together: the higher priority goes first */
	assert_int_equal(world_apply(&w, "job.hold", xp_rec_job_hold(y, XP_HOLD_NONE)), 0);
	assert_int_equal(world_apply(&w, "job.hold", xp_rec_job_hold(z, XP_HOLD_NONE)), 0);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, z)->state, XP_JOB_RUNNING);
	assert_int_equal(xp_state_job(w.st, y)->state, XP_JOB_PENDING);
	expect_code(&w, y, XP_PEND_RESOURCES, NULL);
	/* a running job is not held, changed or released */
	struct xp_err e2 = { 0 };
	char *b = xp_rec_job_hold(z, XP_HOLD_USER);
	assert_int_equal(xp_rec_apply(w.st, 0, w.now, "job.hold", b, strlen(b), NULL, &e2),
			 XP_ESTATE);
	free(b);
	assert_int_equal(patch(&w, z, "{priority: 1}"), XP_ESTATE);
	/* a change to a missing queue is refused whole */
	assert_int_equal(patch(&w, y, "{priority: 3, queue: nope}"), XP_ENOENT);
	assert_int_equal(xp_state_job(w.st, y)->spec.priority, 0);
	world_free(&w);
}

/* the patch parser: the fields of a spec, checked as a spec's, nothing else */
static void test_patch_parse(void **state)
{
	(void)state;
	static const struct {
		const char *doc, *field;
	} bad[] = {
		{ "{}", "" },
		{ "{resources: {cpu: 2}}", "resources" },
		{ "{priority: 5000}", "priority" },
		{ "{name: 'a b'}", "name" },
		{ "{time_limit: 0s}", "time_limit" },
		{ "{queue: [x]}", "queue" },
		{ "[1]", "" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xp_jobpatch p;
		struct xp_err err = { 0 };
		char f[320];
		if (xp_jobpatch_parse_text("p", bad[i].doc, strlen(bad[i].doc), 0, &p, f, &err) >= 0)
			fail_msg("'%s' accepted", bad[i].doc);
		if (strcmp(f, bad[i].field))
			fail_msg("'%s': field '%s', want '%s' (%s)", bad[i].doc, f, bad[i].field,
				 err.text);
	}
	struct xp_jobpatch p;
	struct xp_err err = { 0 };
	assert_int_equal(xp_jobpatch_parse_text("p", "{priority: -3}", 14, 0, &p, NULL, &err), 0);
	assert_int_equal(p.set, XP_JP_PRIORITY);
	assert_int_equal(p.priority, -3);
}

/* explain counts nodes that take no new work by their state, and drops
 * removed ones; preemption is mentioned only where it was considered */
static void test_explain(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 8, "A100", 64);
	node(&w, "n1", 8, "A100", 64);
	node(&w, "n2", 8, "A100", 64);
	node(&w, "n3", 0, "", 64);
	job(&w, GPU8 "duration: 1h\n");
	world_cycle(&w);
	uint64_t p = job(&w, GPU8);
	assert_int_equal(world_apply(&w, "node.state", xp_rec_node_state("n1", XP_NODE_DRAINING)),
			 0);
	assert_int_equal(world_apply(&w, "node.state", xp_rec_node_state("n2", XP_NODE_CORDONED)),
			 0);
	assert_int_equal(world_apply(&w, "node.state", xp_rec_node_state("n3", XP_NODE_DOWN)), 0);
	struct xp_explain ex;
	int fits;
	xp_state_explain(w.st, xp_state_job(w.st, p), &ex, &fits);
	assert_false(fits);
	assert_int_equal(ex.nodes[XP_WHY_DRAINING], 1);
	assert_int_equal(ex.nodes[XP_WHY_CORDONED], 1);
	assert_int_equal(ex.nodes[XP_WHY_DOWN], 1);
	assert_int_equal(ex.nodes[XP_WHY_DEV_BUSY], 1);
	assert_int_equal(world_apply(&w, "node.remove", xp_rec_node_remove("n3")), 0);
	xp_state_explain(w.st, xp_state_job(w.st, p), &ex, &fits);
	assert_int_equal(ex.nodes[XP_WHY_DOWN], 0);
	uint32_t total = 0;
	for (int k = 0; k < XP_WHY_N; k++)
		total += ex.nodes[k];
	assert_int_equal(total, 3);
	/* the default queue guarantees nothing: preemption was not considered */
	struct xp_admission ad;
	xp_state_admission(w.st, xp_state_job(w.st, p), &ad);
	assert_false(ad.preempt_considered);
	xp_admission_free(&ad);
	/* a queue over its guarantee was: it says why it cannot */
	assert_int_equal(queue(&w, "{name: g, quota: {gpu: {guarantee: 4}}}"), 0);
	uint64_t q = job(&w, "queue: g\n" GPU8);
	xp_state_admission(w.st, xp_state_job(w.st, q), &ad);
	assert_true(ad.preempt_considered);
	assert_non_null(strstr(ad.why_not, "guarantee"));
	xp_admission_free(&ad);
	assert_int_equal(queue(&w, "{name: nv, preempt: never, quota: {gpu: {guarantee: 8}}}"), 0);
	uint64_t r = job(&w, "queue: nv\n" GPU8);
	xp_state_admission(w.st, xp_state_job(w.st, r), &ad);
	assert_false(ad.preempt_considered);
	xp_admission_free(&ad);
	world_free(&w);
}

/* ---- the reference model ---- */

/* could node n, empty, take j's replica (the naive check) */
static int naive_could(const struct xp_state *st, size_t n, const struct xp_job *j)
{
	const struct xp_node *nd = &st->c->nodes[n];
	if (st->nodes.v[n].removed || nd->cpu_milli < j->req.cpu_milli || nd->mem_mib < j->req.mem_mib)
		return 0;
	int ok = 0;
	for (uint16_t d = 0; d < nd->ndevs; d++)
		ok += j->req.dev_count && xp_selector_match(&j->req.sel, &nd->devs[d]) &&
		      nd->devs[d].mem_mib >= j->req.dev_mem_mib;
	return ok >= j->req.dev_count;
}

static int naive_code(const struct xp_state *st, const struct xp_job *j)
{
	if (j->held)
		return XP_PEND_HELD;
	if (j->doomed)
		return XP_PEND_DEP_NEVER;
	if (j->unmet)
		return XP_PEND_DEPENDENCY;
	/* usage of j's queue from the running jobs, GPUs and CPU only */
	uint64_t gpu = 0, cpu = 0;
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *r = st->jobs.v[i];
		if (r->state == XP_JOB_RUNNING && r->queue == j->queue)
			for (uint32_t k = 0; k < r->spec.replicas; k++) {
				gpu += (uint64_t)r->allocs[k].ndev * r->allocs[k].dev_milli;
				cpu += r->allocs[k].cpu_milli;
			}
	}
	const struct xp_queue *q = &st->queues.v[j->queue];
	uint64_t need_gpu = (uint64_t)j->req.dev_count * j->req.dev_milli * j->spec.replicas;
	if (gpu + need_gpu > q->max[XP_RES_DEV + XP_CLASS_GPU] ||
	    cpu + j->req.cpu_milli * j->spec.replicas > q->max[XP_RES_CPU])
		return XP_PEND_QUOTA_MAX;
	int ready = 0, drain = 0, down = 0;
	for (size_t n = 0; n < st->nodes.n; n++) {
		if (!naive_could(st, n, j))
			continue;
		int s = st->nodes.v[n].state;
		ready |= s == XP_NODE_READY;
		down |= s == XP_NODE_DOWN;
		drain |= s != XP_NODE_READY && s != XP_NODE_DOWN;
	}
	if (!ready)
		return drain ? XP_PEND_DRAINING : down ? XP_PEND_NODE_DOWN : XP_PEND_NO_DEVICE;
	return -1; /* the cycle's verdict: checked apart */
}

static unsigned below(struct xp_rng *r, unsigned n)
{
	return (unsigned)xp_rng_below(r, n);
}

static void test_random_reference(void **state)
{
	(void)state;
	static const char *const models[] = { "A100", "H100", "V100" };
	struct xp_rng rng;
	struct world w;
	xp_rng_seed(&rng, 20261202);
	init(&w);
	for (int n = 0; n < 6; n++) {
		char name[16];
		snprintf(name, sizeof(name), "n%d", n);
		node(&w, name, n == 5 ? 0 : 4 << (n % 2), models[n % 2], 16 + 16 * (n % 3));
	}
	assert_int_equal(queue(&w, "{name: q1, quota: {gpu: {max: 6}, cpu: {max: 20}}}"), 0);
	assert_int_equal(queue(&w, "{name: q2, quota: {gpu: {max: 12}}}"), 0);
	static const char *const queues[] = { "default", "q1", "q2" };
	size_t checked = 0, by_code[XP_PEND_N] = { 0 };
	for (int step = 0; step < 400; step++) {
		unsigned op = below(&rng, 10);
		if (op < 5) {
			char y[400], sel[64] = "";
			unsigned nd = below(&rng, 10);
			if (below(&rng, 4) == 0)
				snprintf(sel, sizeof(sel), ", models: [%s]", models[below(&rng, 3)]);
			snprintf(y, sizeof(y),
				 "queue: %s\nhold_for_nodes: true\nduration: %um\n%s"
				 "resources: {cpu: %u, devices: {count: %u, class: gpu%s}}\n",
				 queues[below(&rng, 3)], 1 + below(&rng, 30),
				 below(&rng, 8) == 0 && w.st->next_job_id > 1 ? "depends_on: [{job: 1}]\n"
									       : "",
				 1 + below(&rng, 24), nd > 8 ? 0 : nd, sel);
			job(&w, y);
		} else if (op == 5 && w.st->jobs.n) {
			struct xp_job *j = w.st->jobs.v[below(&rng, (unsigned)w.st->jobs.n)];
			if (j->state == XP_JOB_PENDING)
				world_apply(&w, "job.hold",
					    xp_rec_job_hold(j->id, j->held ? XP_HOLD_NONE
									   : XP_HOLD_USER));
		} else if (op == 6) {
			char name[16];
			snprintf(name, sizeof(name), "n%u", below(&rng, 6));
			world_apply(&w, "node.state",
				    xp_rec_node_state(name, (int)below(&rng, 5)));
		} else if (op == 7) { /* time passes: jobs end */
			w.now += 60000 * (int64_t)(1 + below(&rng, 10));
			for (size_t i = 0; i < w.st->jobs.n; i++) {
				struct xp_job *j = w.st->jobs.v[i];
				if (j->state == XP_JOB_RUNNING &&
				    j->started_at + j->spec.duration_ms <= w.now)
					world_apply(&w, "job.finish",
						    xp_rec_job_finish(j->id, XP_JOB_SUCCEEDED, 0,
								      NULL));
			}
		} else {
			world_cycle(&w);
		}
		for (size_t i = 0; i < w.st->jobs.n; i++) {
			const struct xp_job *j = w.st->jobs.v[i];
			if (j->state != XP_JOB_PENDING)
				continue;
			int want = naive_code(w.st, j), got = code(&w, j->id);
			if (want >= 0 && got != want)
				fail_msg("step %d job %llu: %s, the model says %s", step,
					 (unsigned long long)j->id, xp_pend_name(got),
					 xp_pend_name(want));
			if (want < 0 && got != XP_PEND_RESOURCES && got != XP_PEND_PRIORITY &&
			    got != XP_PEND_NONE)
				fail_msg("step %d job %llu: %s where a ready node could take it",
					 step, (unsigned long long)j->id, xp_pend_name(got));
			/* after a whole cycle every job that may run was tried, and one
			 * that did not fit still does not */
			if (op >= 8 && want < 0) {
				int fits;
				struct xp_explain ex;
				xp_state_explain(w.st, j, &ex, &fits);
				if (got == XP_PEND_NONE || (got == XP_PEND_RESOURCES && fits))
					fail_msg("step %d job %llu: %s after a cycle (fits now: %d)",
						 step, (unsigned long long)j->id,
						 xp_pend_name(got), fits);
			}
			checked++;
			by_code[got]++;
		}
	}
	print_message("random workload: %zu verdicts checked:", checked);
	for (int k = 0; k < XP_PEND_N; k++)
		print_message(" %s %zu", xp_pend_name(k), by_code[k]);
	print_message("\n");
	for (int k = XP_PEND_HELD; k <= XP_PEND_RESOURCES; k++)
		if (k != XP_PEND_DEP_NEVER && !by_code[k])
			fail_msg("the workload never reached %s", xp_pend_name(k));
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codes),	    cmocka_unit_test(test_priority),
		cmocka_unit_test(test_hold_update), cmocka_unit_test(test_patch_parse),
		cmocka_unit_test(test_explain),	    cmocka_unit_test(test_random_reference),
	};
	return xp_run_tests(tests, NULL, NULL);
}
