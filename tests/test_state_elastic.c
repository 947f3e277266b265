/*
 * test_state_elastic: elastic jobs (replicas: {min, max}) in the state -
 * the spec's range and checkpoint, growth and shrinking through the
 * cycle, and a random walk checked against a naive reference: every
 * replica one whole GPU and CPU to spare, so a gang of k replicas fits
 * exactly when k GPUs are free. The reference counts GPUs from the
 * allocations alone and asserts, after every settled cycle:
 *   - a running elastic job's size lies in min..max;
 *   - no node holds more replicas than it has GPUs, no GPU twice;
 *   - no pending job could start by shrinking elastic jobs to their min
 *     (growth never holds a pending job back);
 * and at each preemption that shrinking every elastic job to its min
 * would not have made room for the preemptor. The journal replayed (from
 * the start, and from a snapshot) gives the live state byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/state/state.h"
#include "edge/edge.h"
#include "lib/rng.h"
#include "lib/xalloc.h"
#include "testutil.h"
#include "world.h"

#define GPU1 "{cpu: 100m, memory: 1Gi, devices: {count: 1}}"

struct ref {
	uint64_t preempts, shrinks, grows;
	uint64_t by; /* the preemptor of the last record, 0: not a preemption */
};

static struct ref g_ref;

/* a job's GPUs: one per replica of its current size */
static uint32_t need(const struct xp_job *j)
{
	return j->spec.replicas;
}

/* free GPUs over the ready nodes, from the allocations alone */
static long free_gpus(const struct xp_state *st)
{
	long total = 0;
	for (size_t n = 0; n < st->nodes.n; n++)
		if (!st->nodes.v[n].removed && st->nodes.v[n].state == XP_NODE_READY)
			total += st->c->nodes[n].ndevs;
	for (size_t i = 0; i < st->jobs.n; i++)
		if (st->jobs.v[i]->state == XP_JOB_RUNNING)
			total -= need(st->jobs.v[i]);
	return total;
}

/* replicas running elastic jobs could give back (above their min) */
static long spare(const struct xp_state *st)
{
	long s = 0;
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->state == XP_JOB_RUNNING && xp_job_elastic(j))
			s += j->spec.replicas - j->spec.rmin;
	}
	return s;
}

static void on_emit(struct world *w, const char *type, const char *body)
{
	unsigned long long by = 0;
	const char *p;
	if (!strcmp(type, "job.resize"))
		(*(strstr(body, "\"reason\":\"shrink") ? &g_ref.shrinks : &g_ref.grows))++;
	if (strcmp(type, "job.preempt") || !(p = strstr(body, "preempted by job ")) ||
	    sscanf(p, "preempted by job %llu", &by) != 1) {
		g_ref.by = 0;
		return;
	}
	g_ref.preempts++;
	if (by == g_ref.by)
		return; /* its second victim: the state before the first is what counts */
	g_ref.by = by;
	const struct xp_job *j = xp_state_job(w->st, by);
	assert_non_null(j);
	/* shrinking would have been enough: then no one is preempted */
	if (free_gpus(w->st) + spare(w->st) >= (long)need(j)) {
		fail_msg("job %llu preempts though shrinking frees %ld + %ld >= %u GPUs", by,
			 free_gpus(w->st), spare(w->st), need(j));
	}
}

/* the reference's view of a settled state */
static void check_reference(const struct world *w)
{
	const struct xp_state *st = w->st;
	uint8_t *used = xcalloc(st->nodes.n * 64 + 1, 1);
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->state != XP_JOB_RUNNING)
			continue;
		if (xp_job_elastic(j))
			assert_true(j->spec.replicas >= j->spec.rmin &&
				    j->spec.replicas <= j->spec.rmax);
		for (uint32_t r = 0; r < j->spec.replicas; r++) {
			const struct xp_alloc *a = &j->allocs[r];
			assert_int_equal(a->ndev, 1);
			assert_true(a->devs[0] < st->c->nodes[a->node].ndevs);
			assert_int_equal(used[a->node * 64 + a->devs[0]]++, 0); /* no GPU twice */
		}
	}
	free(used);
	long room = free_gpus(st) + spare(st);
	assert_true(free_gpus(st) >= 0);
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->state == XP_JOB_PENDING && !j->held && !j->unmet && (long)need(j) <= room)
			fail_msg("job %llu (%u GPUs) waits though %ld are free or spare",
				 (unsigned long long)j->id, need(j), room);
	}
}

static void start(struct world *w)
{
	world_init(w);
	memset(&g_ref, 0, sizeof(g_ref));
	w->on_emit = on_emit;
	assert_int_equal(world_apply(w, "tenant.create", xp_rec_tenant_create("t")), 0);
	/* jobs of higher priority preempt in it: a shrink must come first */
	const char *doc = "{name: default, preempt: priority}";
	struct xp_queuespec q;
	struct xp_err err = { 0 };
	assert_int_equal(xp_queuespec_parse_text("q", doc, strlen(doc), 0, 1, &q, NULL, &err), 0);
	assert_int_equal(world_apply(w, "queue.create", xp_rec_queue_define(&q)), 0);
}

static void add_node(struct world *w, const char *name, int gpus)
{
	char *d = world_node_doc(name, gpus, "A100", 64);
	assert_int_equal(world_apply(w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, d)), 0);
	free(d);
}

static uint64_t submit(struct world *w, int prio, const char *replicas)
{
	char y[512];
	snprintf(y, sizeof(y), "priority: %d\nreplicas: %s\nresources: %s\n", prio, replicas, GPU1);
	uint64_t id = world_submit(w, "t", y, NULL);
	assert_true(id != 0);
	return id;
}

static const struct xp_job *job(const struct world *w, uint64_t id)
{
	return xp_state_job(w->st, id);
}

static void same_on_replay(struct world *w, const char *snap, uint64_t snap_seq)
{
	char *live = xp_state_snapshot(w->st);
	char *full = world_replay(w, w->log.n, NULL, 0);
	assert_string_equal(live, full);
	if (snap) {
		char *tail = world_replay(w, w->log.n, snap, snap_seq);
		assert_string_equal(live, tail);
		free(tail);
	}
	free(full);
	free(live);
}

/* a spec refused, naming field */
static void bad(const char *yaml, const char *field)
{
	struct xp_jobspec s;
	struct xp_err err = { 0 };
	char f[320] = "";
	assert_true(xp_jobspec_parse_text("t", yaml, strlen(yaml), 0, &s, f, &err) < 0);
	if (strcmp(f, field))
		fail_msg("%s: field '%s', wanted '%s' (%s)", yaml, f, field, err.text);
}

static void test_spec(void **state)
{
	(void)state;
	struct xp_jobspec s, t;
	struct xp_err err = { 0 };
	const char *y = "replicas: {min: 2, max: 6}\ncheckpoint: {signal: USR2, grace: 5s}\n";
	assert_int_equal(xp_jobspec_parse_text("t", y, strlen(y), 0, &s, NULL, &err), 0);
	assert_int_equal(s.rmin, 2);
	assert_int_equal(s.rmax, 6);
	assert_int_equal(s.replicas, 2);
	assert_int_equal(xp_ckpt_signal(&s), 12);
	assert_int_equal(xp_ckpt_grace_ms(&s), 5000);
	char *json = xp_jobspec_to_json(&s);
	assert_non_null(strstr(json, "\"replicas\":{\"min\":2,\"max\":6}"));
	assert_non_null(
		strstr(json, "\"checkpoint\":{\"signal\":\"SIGUSR2\",\"grace\":\"5000ms\"}"));
	assert_int_equal(xp_jobspec_parse_text("t", json, strlen(json), 1, &t, NULL, &err), 0);
	char *again = xp_jobspec_to_json(&t);
	assert_string_equal(json, again); /* written back the same way */
	free(again);
	free(json);
	xp_jobspec_free(&t);
	xp_jobspec_free(&s);
	y = "replicas: 3\n"; /* a number: a fixed gang, as before */
	assert_int_equal(xp_jobspec_parse_text("t", y, strlen(y), 0, &s, NULL, &err), 0);
	assert_int_equal(s.rmax, 0);
	assert_int_equal(xp_ckpt_signal(&s), 10);
	assert_int_equal(xp_ckpt_grace_ms(&s), 30000);
	json = xp_jobspec_to_json(&s);
	assert_non_null(strstr(json, "\"replicas\":3"));
	free(json);
	xp_jobspec_free(&s);
	bad("replicas: {min: 4, max: 2}\n", "replicas.min");
	bad("replicas: {min: 0, max: 2}\n", "replicas.min");
	bad("replicas: {min: 1, max: 5000}\n", "replicas.max");
	bad("replicas: {min: 1}\n", "replicas");
	bad("replicas: {min: 1, max: 2, most: 3}\n", "replicas.most");
	bad("replicas: 0\n", "replicas");
	bad("checkpoint: {signal: SIGKILL}\n", "checkpoint.signal");
	bad("checkpoint: {signal: NOPE}\n", "checkpoint.signal");
	bad("checkpoint: {grace: 2h}\n", "checkpoint.grace");
}

/* 4 GPUs: the elastic job starts at its min beside a fixed job, grows
 * when that one ends, shrinks for a job of higher priority and for one of
 * lower priority alike (no preemption), and never below its min */
static void test_grow_shrink(void **state)
{
	(void)state;
	struct world w;
	start(&w);
	add_node(&w, "g0", 2);
	add_node(&w, "g1", 2);
	uint64_t a = submit(&w, 0, "2");
	uint64_t e = submit(&w, 0, "{min: 2, max: 4}");
	world_cycle(&w);
	assert_int_equal(job(&w, a)->state, XP_JOB_RUNNING);
	assert_int_equal(job(&w, e)->state, XP_JOB_RUNNING);
	assert_int_equal(job(&w, e)->spec.replicas, 2);
	assert_int_equal(job(&w, e)->epoch, 0);
	char *snap = xp_state_snapshot(w.st);
	uint64_t snap_seq = w.log.n;
	assert_int_equal(
		world_apply(&w, "job.finish", xp_rec_job_finish(a, XP_JOB_SUCCEEDED, 0, NULL)), 0);
	world_cycle(&w);
	assert_int_equal(job(&w, e)->spec.replicas, 4); /* grew into what a left */
	assert_int_equal(job(&w, e)->epoch, 1);
	assert_non_null(strstr(job(&w, e)->resize_why, "grow"));
	uint64_t h = submit(&w, 10, "1");
	struct xp_admission ad; /* explain says what the cycle will do */
	xp_state_admission(w.st, job(&w, h), &ad);
	assert_int_equal(ad.nshrinks, 1);
	assert_int_equal(ad.shrinks[0], e);
	assert_int_equal(ad.nvictims, 0);
	xp_admission_free(&ad);
	world_cycle(&w);
	assert_int_equal(job(&w, h)->state, XP_JOB_RUNNING);
	assert_int_equal(job(&w, e)->spec.replicas, 3);
	assert_int_equal(job(&w, e)->preemptions, 0);
	assert_non_null(strstr(job(&w, e)->resize_why, "shrink: job"));
	uint64_t l = submit(&w, -5, "1"); /* lower priority: the spare replica still goes */
	world_cycle(&w);
	assert_int_equal(job(&w, l)->state, XP_JOB_RUNNING);
	assert_int_equal(job(&w, e)->spec.replicas, 2);
	uint64_t x = submit(&w, -10, "1"); /* e at its min, nothing to preempt: it waits */
	world_cycle(&w);
	assert_int_equal(job(&w, x)->state, XP_JOB_PENDING);
	assert_int_equal(job(&w, e)->spec.replicas, 2);
	assert_int_equal(job(&w, e)->resizes, 3);
	assert_int_equal(g_ref.preempts, 0);
	check_reference(&w);
	/* metering counts each size for its time: runs of 2, then 4, then 3 */
	uint64_t want[3] = { 200, 400, 300 }, k = 0; /* 100m a replica */
	for (size_t i = 0; i < w.st->meter.runs.n; i++)
		if (w.st->meter.runs.v[i].job == e) {
			assert_true(k < 3);
			assert_int_equal(w.st->meter.runs.v[i].cpu_milli, want[k]);
			k++;
		}
	assert_int_equal(k, 3);
	same_on_replay(&w, snap, snap_seq);
	/* an elastic job preempted whole comes back at its min */
	assert_int_equal(world_apply(&w, "job.preempt", xp_rec_job_preempt(e, "test")), 0);
	assert_int_equal(job(&w, e)->spec.replicas, 2);
	assert_int_equal(job(&w, e)->epoch, 0);
	same_on_replay(&w, NULL, 0);
	free(snap);
	world_free(&w);
}

/* on an empty pool it starts at what fits (min, then grown at once); its
 * queue's max cuts the growth, and usage counts the size */
static void test_fit_and_quota(void **state)
{
	(void)state;
	struct world w;
	start(&w);
	add_node(&w, "g0", 8);
	uint64_t e = submit(&w, 0, "{min: 2, max: 6}");
	world_cycle(&w);
	assert_int_equal(job(&w, e)->spec.replicas, 6);
	long q = xp_state_queue(w.st, "default");
	assert_int_equal(w.st->queues.v[q].usage[XP_RES_DEV + XP_CLASS_GPU], 6 * 1000);
	const char *doc = "{name: capped, quota: {gpu: {max: 3}}}";
	struct xp_queuespec qs;
	struct xp_err err = { 0 };
	assert_int_equal(xp_queuespec_parse_text("q", doc, strlen(doc), 0, 1, &qs, NULL, &err), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_define(&qs)), 0);
	const char *y = "queue: capped\nreplicas: {min: 1, max: 8}\nresources: " GPU1 "\n";
	uint64_t c = world_submit(&w, "t", y, NULL);
	world_cycle(&w);
	assert_int_equal(job(&w, c)->spec.replicas, 2); /* 8 GPUs, 6 taken */
	assert_int_equal(world_apply(&w, "job.cancel", xp_rec_job_cancel(e, NULL)), 0);
	world_cycle(&w);
	assert_int_equal(job(&w, c)->spec.replicas, 3); /* its queue's max */
	long cq = xp_state_queue(w.st, "capped");
	assert_int_equal(w.st->queues.v[cq].usage[XP_RES_DEV + XP_CLASS_GPU], 3 * 1000);
	check_reference(&w);
	same_on_replay(&w, NULL, 0);
	world_free(&w);
}

/* job.resize is checked whole: a wrong epoch, a size outside min..max, a
 * rank twice, a GPU in use - refused, nothing changed */
static void test_resize_refused(void **state)
{
	(void)state;
	struct world w;
	start(&w);
	add_node(&w, "g0", 4);
	uint64_t e = submit(&w, 0, "{min: 2, max: 3}");
	world_cycle(&w);
	const struct xp_job *j = job(&w, e);
	assert_int_equal(j->spec.replicas, 3);
	uint32_t keep[3] = { 0, 1, 2 }, dup[2] = { 1, 1 };
	struct xp_alloc add = j->allocs[0]; /* a GPU in use */
	char *rec = xp_rec_job_resize(w.st, e, 5, keep, 2, NULL, 0, "x");
	assert_int_equal(world_apply(&w, "job.resize", rec), XP_ESTATE);
	assert_int_equal(
		world_apply(&w, "job.resize", xp_rec_job_resize(w.st, e, 2, keep, 1, NULL, 0, "x")),
		XP_EINVAL);
	assert_true(world_apply(&w, "job.resize",
				xp_rec_job_resize(w.st, e, 2, dup, 2, NULL, 0, "x")) < 0);
	assert_true(world_apply(&w, "job.resize",
				xp_rec_job_resize(w.st, e, 2, keep, 2, &add, 1, "x")) < 0);
	assert_int_equal(j->spec.replicas, 3);
	assert_int_equal(world_apply(&w, "job.resize",
				     xp_rec_job_resize(w.st, e, 2, keep + 1, 2, NULL, 0, "ok")),
			 0);
	assert_int_equal(j->spec.replicas, 2);
	same_on_replay(&w, NULL, 0);
	world_free(&w);
}

static void random_walk(uint64_t seed, int ops)
{
	struct world w;
	struct xp_rng rng;
	char *snap = NULL;
	uint64_t snap_seq = 0;
	start(&w);
	xp_rng_seed(&rng, seed);
	int nn = 2 + (int)xp_rng_below(&rng, 3);
	for (int i = 0; i < nn; i++) {
		char name[16];
		snprintf(name, sizeof(name), "g%d", i);
		add_node(&w, name, 1 + (int)xp_rng_below(&rng, 4));
	}
	for (int op = 0; op < ops; op++) {
		uint32_t r = (uint32_t)xp_rng_below(&rng, 10);
		w.now += 1000;
		if (r < 5) { /* a job: elastic or fixed, any priority */
			char rep[32];
			uint32_t lo = 1 + (uint32_t)xp_rng_below(&rng, 3);
			if (xp_rng_below(&rng, 2))
				snprintf(rep, sizeof(rep), "{min: %u, max: %u}", lo,
					 lo + (uint32_t)xp_rng_below(&rng, 5));
			else
				snprintf(rep, sizeof(rep), "%u", lo);
			submit(&w, (int)xp_rng_below(&rng, 5) * 5 - 10, rep);
		} else { /* one running job ends, or a pending one is cancelled */
			size_t n = w.st->jobs.n, k = n ? (size_t)xp_rng_below(&rng, n) : 0;
			for (size_t i = 0; i < n; i++) {
				const struct xp_job *j = w.st->jobs.v[(k + i) % n];
				if (j->state == XP_JOB_RUNNING) {
					world_apply(&w, "job.finish",
						    xp_rec_job_finish(j->id, XP_JOB_SUCCEEDED, 0,
								      NULL));
					break;
				}
				if (j->state == XP_JOB_PENDING && r == 9) {
					world_apply(&w, "job.cancel",
						    xp_rec_job_cancel(j->id, NULL));
					break;
				}
			}
		}
		world_cycle(&w);
		check_reference(&w);
		if (op == ops / 2) {
			snap = xp_state_snapshot(w.st);
			snap_seq = w.log.n;
		}
	}
	same_on_replay(&w, snap, snap_seq);
	print_message("  seed %llu: %zu records, %llu grows, %llu shrinks, %llu preemptions\n",
		      (unsigned long long)seed, w.log.n, (unsigned long long)g_ref.grows,
		      (unsigned long long)g_ref.shrinks, (unsigned long long)g_ref.preempts);
	free(snap);
	world_free(&w);
}

static void test_random_reference(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 40; seed++)
		random_walk(seed, 120);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_grow_shrink),
		cmocka_unit_test(test_fit_and_quota),
		cmocka_unit_test(test_resize_refused),
		cmocka_unit_test(test_random_reference),
	};
	return xp_run_tests(tests, NULL, NULL);
}
