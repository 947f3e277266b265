/*
 * test_tenancy: queues, quotas, fair share and preemption in the state
 * layer (docs/design/tenancy.md).
 *
 * Scenarios with exact expected outcomes, and a random workload checked
 * against a naive reference model of quota accounting: after every record,
 * each queue's and tenant's usage equals the demand of the running jobs
 * recomputed from their allocations; no start takes a queue past its max;
 * no job is preempted by one of lower priority; every gang runs whole.
 */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/state.h"
#include "edge/edge.h"
#include "lib/rng.h"
#include "lib/strbuf.h"
#include "lib/xalloc.h"
#include "world.h"

/* ---- harness ---- */

/* what the cycle emitted: preemptions since the last start are checked
 * against that start's job */
struct watch {
	XP_VEC(uint64_t) victims;
	uint64_t preempted, started;
};

static uint64_t rec_id(const char *body)
{
	json_error_t e;
	json_t *o = json_loads(body, 0, &e);
	uint64_t id = (uint64_t)json_integer_value(json_object_get(o, "id"));
	json_decref(o);
	return id;
}

/* the naive model: usage from the running jobs' allocations, summed up
 * the tree; compared with the state's */
static void check_usage(const struct xp_state *st)
{
	size_t nq = st->queues.n, nt = st->tenants.n;
	uint64_t *qu = xcalloc(nq * XP_RES_N + 1, sizeof(uint64_t));
	uint64_t *tu = xcalloc(nt * XP_RES_N + 1, sizeof(uint64_t));
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->state != XP_JOB_RUNNING)
			continue;
		for (uint32_t r = 0; r < j->spec.replicas; r++) {
			const struct xp_alloc *a = &j->allocs[r];
			uint64_t d[XP_RES_N] = { 0 };
			d[XP_RES_CPU] = a->cpu_milli;
			d[XP_RES_MEM] = a->mem_mib;
			for (uint16_t k = 0; k < a->ndev; k++)
				d[XP_RES_DEV + st->c->nodes[a->node].devs[a->devs[k]].cls] +=
					a->dev_milli;
			for (int x = 0; x < XP_RES_N; x++) {
				for (long q = j->queue; q >= 0; q = st->queues.v[q].parent)
					qu[q * XP_RES_N + x] += d[x];
				tu[j->tenant * XP_RES_N + x] += d[x];
			}
		}
	}
	for (size_t q = 0; q < nq; q++)
		for (int x = 0; x < XP_RES_N; x++)
			if (qu[q * XP_RES_N + x] != st->queues.v[q].usage[x])
				fail_msg("queue %s %s: state %llu, model %llu",
					 st->queues.v[q].name, xp_res_name(x),
					 (unsigned long long)st->queues.v[q].usage[x],
					 (unsigned long long)qu[q * XP_RES_N + x]);
	for (size_t t = 0; t < nt; t++)
		for (int x = 0; x < XP_RES_N; x++)
			assert_int_equal(tu[t * XP_RES_N + x], st->tenants.v[t].usage[x]);
	free(qu);
	free(tu);
}

static void on_emit(struct world *w, const char *type, const char *body)
{
	struct watch *wt = w->user;
	uint64_t id = rec_id(body);
	const struct xp_job *j = xp_state_job(w->st, id);
	assert_non_null(j);
	if (!strcmp(type, "job.preempt")) {
		assert_int_equal(j->state, XP_JOB_RUNNING);
		xp_vec_push(&wt->victims, id);
		wt->preempted++;
		return;
	}
	if (strcmp(type, "job.start"))
		return;
	/* no job is preempted by a lower-priority one */
	for (size_t i = 0; i < wt->victims.n; i++) {
		const struct xp_job *v = xp_state_job(w->st, wt->victims.v[i]);
		if (v->spec.priority > j->spec.priority)
			fail_msg("job %llu (priority %d) preempted by job %llu (priority %d)",
				 (unsigned long long)v->id, v->spec.priority,
				 (unsigned long long)j->id, j->spec.priority);
	}
	wt->victims.n = 0;
	wt->started++;
}

/* after a start: the job's queue and ancestors within their max; whole gang */
static void check_started(const struct xp_state *st, uint64_t id)
{
	const struct xp_job *j = xp_state_job(st, id);
	if (!j || j->state != XP_JOB_RUNNING)
		return;
	assert_non_null(j->allocs);
	uint64_t d[XP_RES_N];
	xp_demand_of(st, j->allocs, j->spec.replicas, d);
	/* a max lowered below the usage is kept; a start never adds past it */
	for (long q = j->queue; q >= 0; q = st->queues.v[q].parent)
		for (int x = 0; x < XP_RES_N; x++)
			if (d[x] && st->queues.v[q].max[x] != XP_QUOTA_NONE)
				assert_true(st->queues.v[q].usage[x] <= st->queues.v[q].max[x]);
}

static struct watch g_watch;

static void init(struct world *w)
{
	world_init(w);
	memset(&g_watch, 0, sizeof(g_watch));
	w->on_emit = on_emit;
	w->user = &g_watch;
	assert_int_equal(world_apply(w, "tenant.create", xp_rec_tenant_create("t1")), 0);
	assert_int_equal(world_apply(w, "tenant.create", xp_rec_tenant_create("t2")), 0);
}

static void done(struct world *w)
{
	check_usage(w->st);
	xp_vec_free(&g_watch.victims);
	world_free(w);
}

static int queue(struct world *w, const char *doc)
{
	struct xp_queuespec q;
	struct xp_err err = { 0 };
	if (xp_queuespec_parse_text("q", doc, strlen(doc), 0, 1, &q, NULL, &err) < 0)
		return err.code;
	return world_apply(w, "queue.create", xp_rec_queue_define(&q));
}

static int queue_update(struct world *w, const char *doc)
{
	struct xp_queuespec q;
	struct xp_err err = { 0 };
	if (xp_queuespec_parse_text("q", doc, strlen(doc), 0, 1, &q, NULL, &err) < 0)
		return err.code;
	return world_apply(w, "queue.update", xp_rec_queue_define(&q));
}

static void node(struct world *w, const char *name, int gpus, int cpu)
{
	char *d = world_node_doc(name, gpus, "A100", cpu);
	assert_int_equal(world_apply(w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, d)), 0);
	free(d);
}

/* n jobs of spec in queue q as tenant t; ids in out (may be NULL) */
static void jobs(struct world *w, const char *t, const char *q, int prio, const char *res, int n,
		 uint64_t *out)
{
	char y[512];
	snprintf(y, sizeof(y), "queue: %s\npriority: %d\nresources: %s\n", q, prio, res);
	for (int i = 0; i < n; i++) {
		uint64_t id = world_submit(w, t, y, NULL);
		assert_true(id != 0);
		if (out)
			out[i] = id;
	}
}

static int count(const struct world *w, const char *q, int state)
{
	long qi = xp_state_queue(w->st, q);
	int n = 0;
	for (size_t i = 0; i < w->st->jobs.n; i++)
		n += w->st->jobs.v[i]->queue == (uint32_t)qi && w->st->jobs.v[i]->state == state;
	return n;
}

/* one call of the cycle, as one tick of the controller */
static void one_cycle(struct world *w)
{
	struct xp_rng rng;
	xp_rng_seed(&rng, 7);
	assert_true(xp_state_cycle(w->st, w->now, 100000, &rng, world_emit, w) >= 0);
}

static void cancel(struct world *w, uint64_t id)
{
	assert_int_equal(world_apply(w, "job.cancel", xp_rec_job_cancel(id, NULL)), 0);
}

/* a job spec the parser refuses, naming field */
static void bad_spec(const char *yaml, const char *field)
{
	struct xp_jobspec sp;
	struct xp_err err = { 0 };
	char f[320];
	assert_true(xp_jobspec_parse_text("t", yaml, strlen(yaml), 0, &sp, f, &err) < 0);
	assert_string_equal(f, field);
}

#define GPU1 "{cpu: 1, memory: 1Gi, devices: {count: 1}}"

/* ---- scenarios ---- */

/* b borrows all 8 GPUs; a, within its guarantee, takes one back in one
 * cycle; once a is at its guarantee it waits and preempts no one */
static void test_reclaim(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 8, 64);
	assert_int_equal(queue(&w, "{name: a, quota: {gpu: {guarantee: 4}}}"), 0);
	assert_int_equal(queue(&w, "{name: b, quota: {gpu: {guarantee: 4}}}"), 0);
	uint64_t b[8], a[5];
	jobs(&w, "t1", "b", 0, GPU1, 8, b);
	world_cycle(&w);
	assert_int_equal(count(&w, "b", XP_JOB_RUNNING), 8);
	jobs(&w, "t2", "a", 0, GPU1, 1, a);
	one_cycle(&w);
	assert_int_equal(xp_state_job(w.st, a[0])->state, XP_JOB_RUNNING);
	assert_int_equal(count(&w, "b", XP_JOB_RUNNING), 7);
	/* the youngest of b's equal jobs: the highest id */
	const struct xp_job *v = xp_state_job(w.st, b[7]);
	assert_int_equal(v->state, XP_JOB_PENDING);
	assert_int_equal(v->preemptions, 1);
	assert_non_null(strstr(v->reason, "preempted by job"));
	assert_int_equal(g_watch.preempted, 1);
	/* b's victim cannot take it back: b is over its guarantee */
	world_cycle(&w);
	assert_int_equal(g_watch.preempted, 1);
	assert_int_equal(v->state, XP_JOB_PENDING);
	jobs(&w, "t2", "a", 0, GPU1, 4, a + 1);
	world_cycle(&w);
	assert_int_equal(count(&w, "a", XP_JOB_RUNNING), 4);
	assert_int_equal(count(&w, "b", XP_JOB_RUNNING), 4);
	assert_int_equal(g_watch.preempted, 4);
	/* a's fifth is beyond its guarantee: it waits, and says why */
	assert_int_equal(xp_state_job(w.st, a[4])->state, XP_JOB_PENDING);
	struct xp_admission ad;
	xp_state_admission(w.st, xp_state_job(w.st, a[4]), &ad);
	assert_false(ad.quota_blocked);
	assert_int_equal(ad.nvictims, 0);
	assert_non_null(strstr(ad.why_not, "guarantee of gpu"));
	xp_admission_free(&ad);
	/* when b's jobs end, DRF serves b first (share 0 < a's 0.5): b's four
	 * preempted jobs start again; once b is gone, a's fifth borrows */
	for (int i = 0; i < 8; i++)
		if (xp_state_job(w.st, b[i])->state == XP_JOB_RUNNING)
			assert_int_equal(
				world_apply(&w, "job.finish",
					    xp_rec_job_finish(b[i], XP_JOB_SUCCEEDED, 0, NULL)),
				0);
	world_cycle(&w);
	assert_int_equal(count(&w, "b", XP_JOB_RUNNING), 4);
	assert_int_equal(xp_state_job(w.st, a[4])->state, XP_JOB_PENDING);
	for (int i = 0; i < 8; i++)
		if (xp_state_job(w.st, b[i])->state == XP_JOB_RUNNING)
			assert_int_equal(
				world_apply(&w, "job.cancel", xp_rec_job_cancel(b[i], NULL)), 0);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, a[4])->state, XP_JOB_RUNNING);
	done(&w);
}

/* explain names the victims a pending job would take */
static void test_explain_victims(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 4, 64);
	assert_int_equal(queue(&w, "{name: a, quota: {gpu: {guarantee: 4}}}"), 0);
	assert_int_equal(queue(&w, "{name: b}"), 0);
	uint64_t b[4];
	jobs(&w, "t1", "b", 0, GPU1, 4, b);
	world_cycle(&w);
	/* the job is submitted but the cycle has not run: explain looks ahead */
	uint64_t a;
	jobs(&w, "t2", "a", 0, "{cpu: 1, memory: 1Gi, devices: {count: 2}}", 1, &a);
	struct xp_admission ad;
	xp_state_admission(w.st, xp_state_job(w.st, a), &ad);
	assert_int_equal(ad.nvictims, 2);
	/* the youngest, and no more than needed */
	assert_true((ad.victims[0] == b[3] && ad.victims[1] == b[2]) ||
		    (ad.victims[0] == b[2] && ad.victims[1] == b[3]));
	xp_admission_free(&ad);
	check_usage(w.st); /* explain left the scheduler as it was */
	char *s1 = xp_state_snapshot(w.st);
	one_cycle(&w);
	assert_int_equal(xp_state_job(w.st, a)->state, XP_JOB_RUNNING);
	assert_int_equal(xp_state_job(w.st, b[2])->state, XP_JOB_PENDING);
	assert_int_equal(xp_state_job(w.st, b[3])->state, XP_JOB_PENDING);
	assert_int_equal(g_watch.preempted, 2);
	free(s1);
	done(&w);
}

/* priority policy: lower-priority jobs of the same queue, the fewest;
 * never one of equal or higher priority */
static void test_priority_preemption(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 4, 64);
	assert_int_equal(queue(&w, "{name: p, preempt: priority}"), 0);
	uint64_t low[4], high, mid, eq;
	jobs(&w, "t1", "p", 1, GPU1, 4, low);
	world_cycle(&w);
	jobs(&w, "t1", "p", 5, "{cpu: 1, memory: 1Gi, devices: {count: 2}}", 1, &high);
	one_cycle(&w);
	assert_int_equal(xp_state_job(w.st, high)->state, XP_JOB_RUNNING);
	assert_int_equal(g_watch.preempted, 2);
	/* a job of priority 0 preempts no one of priority 1 */
	jobs(&w, "t1", "p", 0, GPU1, 1, &mid);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, mid)->state, XP_JOB_PENDING);
	assert_int_equal(g_watch.preempted, 2);
	/* nor does priority 5 preempt priority 5 */
	jobs(&w, "t1", "p", 5, "{cpu: 1, memory: 1Gi, devices: {count: 4}}", 1, &eq);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, eq)->state, XP_JOB_PENDING);
	/* the two low ones running were taken; the high one kept its GPUs */
	assert_int_equal(xp_state_job(w.st, high)->state, XP_JOB_RUNNING);
	done(&w);
}

/* never: a queue within its guarantee still waits */
static void test_never(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 4, 64);
	assert_int_equal(queue(&w, "{name: n, preempt: never, quota: {gpu: {guarantee: 4}}}"), 0);
	assert_int_equal(queue(&w, "{name: b}"), 0);
	jobs(&w, "t1", "b", 0, GPU1, 4, NULL);
	world_cycle(&w);
	uint64_t j;
	jobs(&w, "t2", "n", 0, GPU1, 1, &j);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, j)->state, XP_JOB_PENDING);
	assert_int_equal(g_watch.preempted, 0);
	struct xp_admission ad;
	xp_state_admission(w.st, xp_state_job(w.st, j), &ad);
	assert_non_null(strstr(ad.why_not, "policy never"));
	xp_admission_free(&ad);
	done(&w);
}

/* max: a hard cap, even on an idle cluster; raised, the job starts */
static void test_max(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 8, 64);
	assert_int_equal(queue(&w, "{name: m, quota: {gpu: {max: 2}, cpu: {max: 40}}}"), 0);
	uint64_t id[3];
	jobs(&w, "t1", "m", 0, GPU1, 3, id);
	world_cycle(&w);
	assert_int_equal(count(&w, "m", XP_JOB_RUNNING), 2);
	struct xp_admission ad;
	xp_state_admission(w.st, xp_state_job(w.st, id[2]), &ad);
	assert_true(ad.quota_blocked);
	assert_int_equal(ad.res, XP_RES_DEV + XP_CLASS_GPU);
	assert_int_equal(ad.used, 2000);
	assert_int_equal(ad.max, 2000);
	xp_admission_free(&ad);
	/* a start past the max is refused even as a record */
	struct xp_job *p = xp_state_job(w.st, id[2]);
	struct xp_alloc a = { 0 };
	a.node = 0;
	a.ndev = 1;
	a.dev_milli = 1000;
	a.cpu_milli = p->req.cpu_milli;
	a.mem_mib = p->req.mem_mib;
	a.dev_mem_mib = p->req.dev_mem_mib;
	a.devs[0] = 7;
	int rc = world_apply(&w, "job.start", xp_rec_job_start(w.st, id[2], &a, 1));
	assert_int_equal(rc, XP_ENOSPC);
	assert_int_equal(queue_update(&w, "{name: m, quota: {gpu: {max: 3}}}"), 0);
	world_cycle(&w);
	assert_int_equal(count(&w, "m", XP_JOB_RUNNING), 3);
	done(&w);
}

/* one fair-share case on an 8-GPU node: queues x and y (docs), n[0] jobs of
 * one GPU submitted first as tenant t[0] to queue q[0], then n[1] as t[1]
 * to q[1]; the running counts per queue x, y must be want[] */
static void share_case(const char *xdoc, const char *ydoc, const char *const t[2],
		       const char *const q[2], const int n[2], const int want[2])
{
	struct world w;
	init(&w);
	node(&w, "n0", 8, 64);
	assert_int_equal(queue(&w, xdoc), 0);
	assert_int_equal(queue(&w, ydoc), 0);
	for (int i = 0; i < 2; i++)
		jobs(&w, t[i], q[i], 0, GPU1, n[i], NULL);
	world_cycle(&w);
	assert_int_equal(count(&w, "x", XP_JOB_RUNNING), want[0]);
	assert_int_equal(count(&w, "y", XP_JOB_RUNNING), want[1]);
	/* by tenant: the running GPUs of t1 and t2 */
	int per[2] = { 0, 0 };
	for (size_t i = 0; i < w.st->jobs.n; i++)
		if (w.st->jobs.v[i]->state == XP_JOB_RUNNING)
			per[w.st->jobs.v[i]->tenant]++;
	if (!strcmp(t[0], "t1") && !strcmp(t[1], "t2")) /* two tenants in one queue */
		assert_int_equal(per[0], per[1]);
	done(&w);
}

/* dominant-resource fair share between queues (by weight) and tenants */
static void test_fair_share(void **state)
{
	(void)state;
	static const char *const one[2] = { "t1", "t1" }, *const two[2] = { "t1", "t2" };
	static const char *const xy[2] = { "x", "y" }, *const yx[2] = { "y", "x" },
				 *const xx[2] = { "x", "x" };
	/* equal weights: half each, though x's jobs are all older */
	share_case("{name: x}", "{name: y}", one, xy, (int[]){ 8, 8 }, (int[]){ 4, 4 });
	/* weights 3:1 */
	share_case("{name: x, weight: 3}", "{name: y, weight: 1}", one, yx, (int[]){ 8, 8 },
		   (int[]){ 6, 2 });
	/* two tenants in one queue: half each */
	share_case("{name: x}", "{name: y}", two, xx, (int[]){ 8, 8 }, (int[]){ 8, 0 });
	/* queue priority comes before share */
	share_case("{name: x}", "{name: y, priority: 1}", one, xy, (int[]){ 8, 6 },
		   (int[]){ 2, 6 });
}

/* the tree: guarantees add up, jobs go to leaves, no moves */
static void test_tree_rules(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 8, 64);
	assert_int_equal(queue(&w, "{name: org, quota: {gpu: {guarantee: 6}}}"), 0);
	assert_int_equal(queue(&w, "{name: t1q, parent: org, quota: {gpu: {guarantee: 4}}}"), 0);
	char *before = xp_state_snapshot(w.st);
	assert_int_equal(queue(&w, "{name: t2q, parent: org, quota: {gpu: {guarantee: 3}}}"),
			 XP_EINVAL);
	assert_int_equal(queue(&w, "{name: t3q, parent: nope}"), XP_ENOENT);
	assert_int_equal(queue(&w, "{name: org}"), XP_EEXIST);
	assert_int_equal(queue_update(&w, "{name: t1q, quota: {gpu: {guarantee: 4}}}"),
			 XP_EINVAL); /* moved to the top */
	assert_int_equal(queue_update(&w, "{name: org, quota: {gpu: {guarantee: 3}}}"),
			 XP_EINVAL); /* below its children's */
	assert_int_equal(world_submit(&w, "t1", "queue: org\n", NULL), 0);
	assert_int_equal(world_apply(&w, "queue.delete", xp_rec_queue_delete("org")), XP_ESTATE);
	char *after = xp_state_snapshot(w.st);
	assert_string_equal(before, after); /* refusals changed nothing */
	free(before);
	free(after);
	/* a queue with jobs takes no children */
	assert_true(world_submit(&w, "t1", "queue: t1q\n", NULL) != 0);
	assert_int_equal(queue(&w, "{name: sub, parent: t1q}"), XP_ESTATE);
	/* usage rolls up */
	world_cycle(&w);
	long org = xp_state_queue(w.st, "org");
	assert_int_equal(w.st->queues.v[org].usage[XP_RES_CPU], 1000);
	done(&w);
}

/* gangs: reclaim frees devices across nodes for a whole gang; a gang that
 * would not fit even then preempts no one */
static void test_gang_reclaim(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 4, 64);
	node(&w, "n1", 4, 64);
	assert_int_equal(queue(&w, "{name: a, quota: {gpu: {guarantee: 8}}}"), 0);
	assert_int_equal(queue(&w, "{name: b}"), 0);
	jobs(&w, "t1", "b", 0, GPU1, 8, NULL);
	world_cycle(&w);
	uint64_t big, gang;
	jobs(&w, "t2", "a", 0, "{cpu: 1, memory: 1Gi, devices: {count: 5}}", 1, &big);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, big)->state, XP_JOB_PENDING);
	assert_int_equal(g_watch.preempted, 0);
	cancel(&w, big);
	char y[] = "queue: a\nreplicas: 2\nresources: {cpu: 1, memory: 1Gi, devices: {count: 4}}\n";
	gang = world_submit(&w, "t2", y, NULL);
	one_cycle(&w);
	const struct xp_job *g = xp_state_job(w.st, gang);
	assert_int_equal(g->state, XP_JOB_RUNNING);
	assert_int_not_equal(g->allocs[0].node, g->allocs[1].node);
	assert_int_equal(g_watch.preempted, 8);
	done(&w);
}

/* snapshots keep the tree, the quotas and the usage */
static void test_snapshot(void **state)
{
	(void)state;
	struct world w;
	struct xp_err err = { 0 };
	init(&w);
	node(&w, "n0", 8, 64);
	assert_int_equal(queue(&w, "{name: org, priority: 3, weight: 2, quota: {gpu: {guarantee: "
				   "6, max: 7}, memory: {max: 100Gi}, cpu: {guarantee: 500m}}}"),
			 0);
	assert_int_equal(queue(&w, "{name: leaf, parent: org, preempt: priority, quota: {gpu: "
				   "{guarantee: 2}}}"),
			 0);
	jobs(&w, "t1", "leaf", 0, GPU1, 3, NULL);
	world_cycle(&w);
	/* a device fault and a lost node are the failure history */
	uint8_t ok[8] = { 1, 1, 1, 1, 1, 1, 1, 0 };
	assert_int_equal(world_apply(&w, "node.health", xp_rec_node_health("n0", ok, NULL, 8)), 0);
	assert_int_equal(world_apply(&w, "node.health", xp_rec_node_health("n0", ok, NULL, 8)), 0);
	assert_int_equal(w.st->nodes.v[0].failures, 1); /* a transition, not a state */
	char *s = xp_state_snapshot(w.st);
	struct xp_state *st2 = xp_state_create(&world_opts, &err);
	assert_int_equal(xp_state_load_snapshot(st2, s, strlen(s), &err), 0);
	assert_int_equal(xp_state_check(st2, &err), 0);
	char *s2 = xp_state_snapshot(st2);
	assert_string_equal(s, s2);
	long q = xp_state_queue(st2, "leaf");
	assert_int_equal(st2->queues.v[q].usage[XP_RES_DEV + XP_CLASS_GPU], 3000);
	assert_int_equal(st2->queues.v[q].preempt, XP_PREEMPT_PRIORITY);
	assert_int_equal(st2->queues.v[xp_state_queue(st2, "org")].max[XP_RES_MEM], 102400);
	/* and replay from the journal gives the same */
	char *r = world_replay(&w, w.log.n, NULL, 0);
	assert_string_equal(s, r);
	free(r);
	free(s);
	free(s2);
	xp_state_destroy(st2);
	done(&w);
}

/* a queue's allow list (Slurm's AllowAccounts): a job of a tenant the list
 * left out after it was submitted preempts nothing there, while an allowed
 * tenant's job reclaims as before; the list survives snapshot and replay */
static void test_allow_list(void **state)
{
	(void)state;
	struct world w;
	struct xp_err err = { 0 };
	init(&w);
	node(&w, "n0", 8, 64);
	assert_int_equal(queue(&w, "{name: a, allow: [t1, t2], quota: {gpu: {guarantee: 4}}}"), 0);
	assert_int_equal(queue(&w, "{name: b, quota: {gpu: {guarantee: 4}}}"), 0);
	long qa = xp_state_queue(w.st, "a");
	assert_true(xp_queue_allows(w.st, (uint32_t)qa, "t2"));
	assert_false(xp_queue_allows(w.st, (uint32_t)qa, "t3"));
	assert_true(xp_queue_allows(w.st, (uint32_t)qa, "admin"));
	uint64_t b[8], a1, a2;
	jobs(&w, "t1", "b", 0, GPU1, 8, b);
	world_cycle(&w);
	assert_int_equal(count(&w, "b", XP_JOB_RUNNING), 8);
	jobs(&w, "t2", "a", 0, GPU1, 1, &a2);
	/* the admin leaves t2 out before the cycle: t2's job stays, but takes
	 * nothing back from b */
	assert_int_equal(queue_update(&w, "{name: a, allow: [t1], quota: {gpu: {guarantee: 4}}}"), 0);
	assert_false(xp_queue_allows(w.st, (uint32_t)qa, "t2"));
	world_cycle(&w);
	assert_int_equal(g_watch.preempted, 0);
	assert_int_equal(xp_state_job(w.st, a2)->state, XP_JOB_PENDING);
	struct xp_admission ad;
	xp_state_admission(w.st, xp_state_job(w.st, a2), &ad);
	assert_int_equal(ad.nvictims, 0);
	xp_admission_free(&ad);
	/* t1, still listed, reclaims one of b's GPUs */
	jobs(&w, "t1", "a", 0, GPU1, 1, &a1);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, a1)->state, XP_JOB_RUNNING);
	assert_int_equal(g_watch.preempted, 1);
	/* a child queue inherits its parent's list */
	assert_int_equal(queue(&w, "{name: org, allow: [t2]}"), 0);
	assert_int_equal(queue(&w, "{name: leaf, parent: org, allow: [t1, t2]}"), 0);
	long ql = xp_state_queue(w.st, "leaf");
	assert_true(xp_queue_allows(w.st, (uint32_t)ql, "t2"));
	assert_false(xp_queue_allows(w.st, (uint32_t)ql, "t1"));
	/* snapshot and replay keep the lists */
	char *s = xp_state_snapshot(w.st);
	assert_non_null(strstr(s, "\"allow\""));
	struct xp_state *st2 = xp_state_create(&world_opts, &err);
	assert_int_equal(xp_state_load_snapshot(st2, s, strlen(s), &err), 0);
	assert_false(xp_queue_allows(st2, (uint32_t)qa, "t2"));
	assert_true(xp_queue_allows(st2, (uint32_t)qa, "t1"));
	char *s2 = xp_state_snapshot(st2);
	assert_string_equal(s, s2);
	char *r = world_replay(&w, w.log.n, NULL, 0);
	assert_string_equal(s, r);
	free(r);
	free(s);
	free(s2);
	xp_state_destroy(st2);
	done(&w);
}

/* bad queue documents: the field and the reason */
static void test_bad_queue_docs(void **state)
{
	(void)state;
	static const struct {
		const char *doc, *field, *text;
	} cases[] = {
		{ "{name: a, quota: {tpu: {max: 1}}}", "quota.tpu", "unknown resource" },
		{ "{name: a, quota: {gpu: {guarantee: 4, max: 2}}}", "quota.gpu", "above max" },
		{ "{name: a, quota: {gpu: {guarantee: -1}}}", "quota.gpu.guarantee", "" },
		{ "{name: a, quota: {gpu: {guarantee: lots}}}", "quota.gpu.guarantee", "" },
		{ "{name: a, quota: {gpu: {min: 1}}}", "quota.gpu.min", "" },
		{ "{name: a, quota: {gpu: 4}}", "quota.gpu", "guarantee" },
		{ "{name: a, preempt: sometimes}", "preempt", "never, reclaim or priority" },
		{ "{name: a, weight: 0}", "weight", "" },
		{ "{name: a, priority: 5000}", "priority", "" },
		{ "{name: 'bad name'}", "name", "" },
		{ "{name: a, parent: a}", "parent", "own parent" },
		{ "{priority: 1}", "name", "name: missing" },
		{ "{name: a, color: red}", "color", "" },
		{ "[1, 2]", "", "a map" },
		{ "{name: a, quota: {memory: {max: 1e400}}}", "quota.memory.max", "" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct xp_queuespec q;
		struct xp_err err = { 0 };
		char field[320];
		int rc = xp_queuespec_parse_text("q", cases[i].doc, strlen(cases[i].doc), 0, 1, &q,
						 field, &err);
		if (rc == 0)
			fail_msg("accepted: %s", cases[i].doc);
		if (strcmp(field, cases[i].field))
			fail_msg("%s: field '%s', expected '%s' (%s)", cases[i].doc, field,
				 cases[i].field, err.text);
		if (!strstr(err.text, cases[i].text))
			fail_msg("%s: '%s' lacks '%s'", cases[i].doc, err.text, cases[i].text);
	}
	/* the canonical form parses to the same definition */
	struct xp_queuespec q, q2;
	struct xp_err err = { 0 };
	const char *doc = "{name: a, parent: p, priority: -3, weight: 7, preempt: never, quota: "
			  "{cpu: {guarantee: 1500m, max: 4}, memory: {max: 1536Mi}, npu: "
			  "{guarantee: 250m}}}";
	assert_int_equal(xp_queuespec_parse_text("q", doc, strlen(doc), 0, 1, &q, NULL, &err), 0);
	json_t *jo = xp_queuespec_json(&q);
	char *j = json_dumps(jo, JSON_COMPACT);
	json_decref(jo);
	assert_int_equal(xp_queuespec_parse_text("q", j, strlen(j), 1, 1, &q2, NULL, &err), 0);
	q.set = q2.set = 0;
	assert_memory_equal(&q, &q2, sizeof(q));
	assert_int_equal(q.guarantee[XP_RES_CPU], 1500);
	assert_int_equal(q.max[XP_RES_MEM], 1536);
	assert_int_equal(q.guarantee[XP_RES_DEV + XP_CLASS_NPU], 250);
	free(j);
}

/* ---- dependencies, limits, colocation ---- */

static uint64_t job_after(struct world *w, const char *t, const char *res, const char *deps)
{
	char y[512];
	snprintf(y, sizeof(y), "resources: %s\nduration: 1h\n%s%s\n", res,
		 deps ? "depends_on: " : "", deps ? deps : "");
	return world_submit(w, t, y, NULL);
}

static int state_of(struct world *w, uint64_t id)
{
	return xp_state_job(w->st, id)->state;
}

static void finish(struct world *w, uint64_t id, int ok)
{
	assert_int_equal(world_apply(w, "job.finish",
				     xp_rec_job_finish(id, ok ? XP_JOB_SUCCEEDED : XP_JOB_FAILED,
						       ok ? 0 : 1, NULL)),
			 0);
}

static void test_dependencies(void **state)
{
	(void)state;
	for (int ok = 0; ok < 2; ok++) {
		struct world w;
		char d[128];
		init(&w);
		node(&w, "n0", 4, 64);
		assert_int_equal(queue(&w, "{name: default}"), 0);
		uint64_t a = job_after(&w, "t1", GPU1, NULL);
		snprintf(d, sizeof(d), "[{job: %llu}]", (unsigned long long)a);
		uint64_t b = job_after(&w, "t1", GPU1, d); /* after-ok is the default */
		snprintf(d, sizeof(d), "[{job: %llu, type: after-not-ok}]", (unsigned long long)a);
		uint64_t c = job_after(&w, "t1", GPU1, d);
		snprintf(d, sizeof(d), "[{job: %llu, type: after-any}]", (unsigned long long)a);
		uint64_t e = job_after(&w, "t1", GPU1, d);
		snprintf(d, sizeof(d), "[{job: %llu}, {job: %llu, type: after-any}]",
			 (unsigned long long)b, (unsigned long long)e);
		uint64_t f = job_after(&w, "t1", GPU1, d); /* b's dependent: follows b */
		assert_true(a && b && c && e && f);
		world_cycle(&w);
		/* only a runs; the others are held although GPUs are free */
		assert_int_equal(state_of(&w, a), XP_JOB_RUNNING);
		assert_int_equal(state_of(&w, b), XP_JOB_PENDING);
		assert_int_equal(xp_state_job(w.st, f)->unmet, 2);
		uint64_t ids[4];
		assert_int_equal(xp_deps_waiting(w.st, xp_state_job(w.st, b), ids, 4), 1);
		assert_int_equal(ids[0], a);
		/* the held jobs survive a snapshot as they are */
		char *s1 = xp_state_snapshot(w.st), *r1 = world_replay(&w, w.log.n, NULL, 0);
		assert_string_equal(s1, r1);
		free(s1);
		free(r1);
		finish(&w, a, ok);
		world_cycle(&w);
		assert_int_equal(state_of(&w, e), XP_JOB_RUNNING); /* after-any: either way */
		if (ok) {
			assert_int_equal(state_of(&w, b), XP_JOB_RUNNING);
			assert_int_equal(state_of(&w, c), XP_JOB_CANCELLED);
			assert_non_null(strstr(xp_state_job(w.st, c)->reason, "ended succeeded"));
			assert_int_equal(state_of(&w, f), XP_JOB_PENDING);
			finish(&w, b, 1);
			finish(&w, e, 0);
			world_cycle(&w);
			assert_int_equal(state_of(&w, f), XP_JOB_RUNNING);
		} else {
			assert_int_equal(state_of(&w, c), XP_JOB_RUNNING);
			/* b can never run: cancelled, and f after it, in the same tick */
			assert_int_equal(state_of(&w, b), XP_JOB_CANCELLED);
			assert_int_equal(state_of(&w, f), XP_JOB_CANCELLED);
			assert_non_null(strstr(xp_state_job(w.st, f)->reason, "after-ok"));
		}
		/* depending on what can never be met, or on nothing, is refused */
		snprintf(d, sizeof(d), "[{job: %llu, type: %s}]", (unsigned long long)a,
			 ok ? "after-not-ok" : "after-ok");
		assert_int_equal(job_after(&w, "t1", GPU1, d), 0);
		assert_int_equal(job_after(&w, "t1", GPU1, "[{job: 9999}]"), 0);
		/* another tenant's job is not there for t2 */
		snprintf(d, sizeof(d), "[{job: %llu, type: after-any}]", (unsigned long long)a);
		assert_int_equal(job_after(&w, "t2", GPU1, d), 0);
		done(&w);
	}
}

static void test_time_limit_and_gang_timeout(void **state)
{
	(void)state;
	struct world w;
	struct xp_overdue due[4];
	init(&w);
	node(&w, "n0", 8, 64);
	assert_int_equal(queue(&w, "{name: default}"), 0);
	uint64_t a = world_submit(&w, "t1", "time_limit: 10s\nresources: " GPU1 "\n", NULL);
	uint64_t g = world_submit(&w, "t1",
				  "replicas: 2\ngang: {timeout: 1m}\nresources: {devices: {count: "
				  "8}}\n",
				  NULL);
	world_cycle(&w);
	int64_t t0 = xp_state_job(w.st, a)->started_at;
	assert_int_equal(xp_state_overdue(w.st, t0 + 9999, due, 4), 0);
	assert_int_equal(xp_state_overdue(w.st, t0 + 10000, due, 4), 1);
	assert_int_equal(due[0].id, a);
	assert_string_equal(due[0].why, "time limit 10s exceeded");
	assert_int_equal(xp_state_overdue(w.st, w.now + 60000, due, 4), 2);
	assert_int_equal(due[1].id, g);
	assert_non_null(strstr(due[1].why, "not placed within 60s: "));
	assert_non_null(strstr(due[1].why, "1 nodes: matching devices busy"));
	/* the controller fails them with the reason; a pending job has no exit code */
	assert_int_equal(
		world_apply(&w, "job.finish", xp_rec_job_finish(g, XP_JOB_FAILED, 0, due[1].why)),
		0);
	assert_int_equal(state_of(&w, g), XP_JOB_FAILED);
	assert_false(xp_state_job(w.st, g)->has_exit);
	done(&w);
}

static void test_colocate(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 4, 64);
	node(&w, "n1", 4, 64);
	assert_int_equal(queue(&w, "{name: default}"), 0);
	uint64_t apart =
		world_submit(&w, "t1", "replicas: 2\nresources: {devices: {count: 4}}\n", NULL);
	uint64_t together = world_submit(
		&w, "t1", "replicas: 2\ngang: {colocate: node}\nresources: {devices: {count: 4}}\n",
		NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, apart), XP_JOB_RUNNING);
	assert_int_equal(state_of(&w, together), XP_JOB_PENDING); /* no node has 8 */
	cancel(&w, apart);
	cancel(&w, together);
	uint64_t pair = world_submit(
		&w, "t1", "replicas: 2\ngang: {colocate: node}\nresources: {devices: {count: 2}}\n",
		NULL);
	uint64_t frac = world_submit(
		&w, "t1",
		"replicas: 3\ngang: {colocate: node}\nresources: {devices: {fraction: 0.5}}\n",
		NULL);
	world_cycle(&w);
	const struct xp_job *p = xp_state_job(w.st, pair), *f = xp_state_job(w.st, frac);
	assert_int_equal(p->state, XP_JOB_RUNNING);
	assert_int_equal(p->allocs[0].node, p->allocs[1].node);
	assert_int_not_equal(p->allocs[0].devs[0], p->allocs[1].devs[0]);
	assert_int_equal(f->state, XP_JOB_RUNNING);
	assert_int_equal(f->allocs[0].node, f->allocs[2].node);
	done(&w);

	/* zones: a gang of 3 whole nodes' worth fits only in the zone with 3 nodes */
	init(&w);
	assert_int_equal(queue(&w, "{name: default}"), 0);
	for (int i = 0; i < 5; i++) {
		char doc[256];
		snprintf(doc, sizeof(doc),
			 "{\"version\":1,\"nodes\":[{\"name\":\"z%d\",\"cpu\":8,\"memory\":65536,"
			 "\"zone\":\"%s\"}]}",
			 i, i < 2 ? "east" : "west");
		assert_int_equal(world_apply(&w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, doc)),
				 0);
	}
	uint64_t z = world_submit(
		&w, "t1", "replicas: 3\ngang: {colocate: zone}\nresources: {cpu: 8, memory: 1Gi}\n",
		NULL);
	uint64_t z2 = world_submit(
		&w, "t1", "replicas: 3\ngang: {colocate: zone}\nresources: {cpu: 8, memory: 1Gi}\n",
		NULL);
	world_cycle(&w);
	const struct xp_job *zj = xp_state_job(w.st, z);
	assert_int_equal(zj->state, XP_JOB_RUNNING);
	for (int r = 0; r < 3; r++)
		assert_true(zj->allocs[r].node >= 2);
	assert_int_equal(state_of(&w, z2), XP_JOB_PENDING); /* east has 2 nodes only */
	done(&w);
}

/* backfill: the blocked head holds a reservation from the running jobs'
 * time limits; later jobs start only if they cannot delay it */
static void test_backfill(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 8, 64);
	node(&w, "n1", 4, 64);
	assert_int_equal(queue(&w, "{name: default}"), 0);
	uint64_t r1 = world_submit(
		&w, "t1", "node: n0\ntime_limit: 1h\nresources: {devices: {count: 6}}\n", NULL);
	uint64_t r3 = world_submit(&w, "t1", "node: n1\nresources: {devices: {count: 4}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, r1), XP_JOB_RUNNING);
	assert_int_equal(state_of(&w, r3), XP_JOB_RUNNING);
	w.now += 1000;
	uint64_t big = world_submit(&w, "t1", "resources: {devices: {count: 8}}\n", NULL);
	uint64_t slong =
		world_submit(&w, "t1", "time_limit: 3h\nresources: {devices: {count: 2}}\n", NULL);
	uint64_t nolim = world_submit(&w, "t1", "resources: {devices: {count: 1}}\n", NULL);
	uint64_t sshort =
		world_submit(&w, "t1", "time_limit: 30m\nresources: {devices: {count: 2}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, big), XP_JOB_PENDING);
	assert_int_equal(state_of(&w, slong), XP_JOB_PENDING);	/* it would end after 1h */
	assert_int_equal(state_of(&w, nolim), XP_JOB_PENDING);	/* it would never end */
	assert_int_equal(state_of(&w, sshort), XP_JOB_RUNNING); /* done before big's turn */
	assert_true(w.st->held_back >= 2);
	int64_t at;
	assert_true(xp_backfill_holds(w.st->resv, big, &at));
	assert_int_equal(at, xp_state_job(w.st, r1)->started_at + 3600000);
	struct xp_admission ad;
	xp_state_admission(w.st, xp_state_job(w.st, big), &ad);
	assert_true(ad.reserved);
	assert_int_equal(ad.resv_at, at);
	xp_admission_free(&ad);
	/* n1 frees: the long one may go there, away from the reservation */
	assert_int_equal(
		world_apply(&w, "job.finish", xp_rec_job_finish(r3, XP_JOB_SUCCEEDED, 0, NULL)), 0);
	world_cycle(&w);
	assert_int_equal(state_of(&w, slong), XP_JOB_RUNNING);
	assert_int_equal(xp_state_job(w.st, slong)->allocs[0].node, 1);
	/* the short one ends, then r1: big starts on time */
	w.now += 1800000;
	finish(&w, sshort, 1);
	finish(&w, r1, 1);
	world_cycle(&w);
	assert_int_equal(state_of(&w, big), XP_JOB_RUNNING);
	done(&w);

	/* where the policy's choice would delay the reservation, elsewhere */
	init(&w);
	node(&w, "n0", 8, 64);
	node(&w, "n1", 8, 64);
	assert_int_equal(queue(&w, "{name: default}"), 0);
	world_submit(&w, "t1", "node: n0\ntime_limit: 1h\nresources: {devices: {count: 4}}\n",
		     NULL);
	world_submit(&w, "t1", "node: n1\nresources: {devices: {count: 2}}\n", NULL);
	world_cycle(&w);
	big = world_submit(&w, "t1", "resources: {devices: {count: 8}}\n", NULL);
	slong = world_submit(&w, "t1", "time_limit: 3h\nresources: {devices: {count: 2}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, big), XP_JOB_PENDING);
	assert_int_equal(state_of(&w, slong), XP_JOB_RUNNING);
	assert_int_equal(xp_state_job(w.st, slong)->allocs[0].node, 1); /* bestfit said n0 */
	assert_int_equal(w.st->held_back, 0);
	/* a job submitted after the reservation was made - a pass over new jobs
	 * only - honours it too: not n0, where it would eat big's room */
	uint64_t later =
		world_submit(&w, "t1", "time_limit: 3h\nresources: {devices: {count: 2}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, later), XP_JOB_RUNNING);
	assert_int_equal(xp_state_job(w.st, later)->allocs[0].node, 1);
	done(&w);
}

/* deadlines: earliest first inside a queue, across tenants; status */
static void test_deadlines(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 1, 64);
	assert_int_equal(queue(&w, "{name: default}"), 0);
	uint64_t blk = world_submit(&w, "t1", "resources: " GPU1 "\n", NULL);
	world_cycle(&w);
	uint64_t none = world_submit(&w, "t1", "resources: " GPU1 "\n", NULL);
	uint64_t late = world_submit(&w, "t2", "deadline: 5h\nresources: " GPU1 "\n", NULL);
	uint64_t soon = world_submit(&w, "t1",
				     "deadline: 1h\ntime_limit: 30m\nresources: " GPU1 "\n", NULL);
	uint64_t abs = world_submit(
		&w, "t2", "deadline: 1970-01-01T00:00:00.001Z\nresources: " GPU1 "\n", NULL);
	assert_true(none && late && soon && abs);
	assert_int_equal(xp_job_deadline(xp_state_job(w.st, soon)), w.now + 3600000);
	assert_string_equal(xp_job_deadline_status(xp_state_job(w.st, soon), w.now), "ok");
	assert_string_equal(
		xp_job_deadline_status(xp_state_job(w.st, soon), w.now + 3600000 - 1800000 + 1),
		"at_risk");
	assert_string_equal(xp_job_deadline_status(xp_state_job(w.st, abs), w.now), "missed");
	assert_null(xp_job_deadline_status(xp_state_job(w.st, none), w.now));
	/* one GPU frees at a time: the earliest deadline goes first, whatever
	 * the tenant's share or the job's age */
	uint64_t order[4] = { abs, soon, late, none }, prev = blk;
	for (int i = 0; i < 4; i++) {
		finish(&w, prev, 1);
		world_cycle(&w);
		assert_int_equal(state_of(&w, order[i]), XP_JOB_RUNNING);
		prev = order[i];
	}
	/* a bad deadline names the field */
	bad_spec("deadline: soon\n", "deadline");
	done(&w);
}

/* QoS: best-effort runs on spare capacity - any job of its priority or
 * higher takes it back, from any queue; protected is never preempted */
static void test_qos(void **state)
{
	(void)state;
	struct world w;
	init(&w);
	node(&w, "n0", 4, 64);
	assert_int_equal(queue(&w, "{name: a, quota: {gpu: {guarantee: 4}}}"), 0);
	assert_int_equal(queue(&w, "{name: b}"), 0);
	assert_int_equal(queue(&w, "{name: c}"), 0);
	uint64_t be = world_submit(
		&w, "t1", "queue: b\nqos: best-effort\nresources: {devices: {count: 4}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, be), XP_JOB_RUNNING);
	/* another best-effort job does not take it */
	uint64_t be2 = world_submit(
		&w, "t2", "queue: c\nqos: best-effort\nresources: {devices: {count: 2}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, be2), XP_JOB_PENDING);
	assert_int_equal(g_watch.preempted, 0);
	/* a standard job of queue c - no guarantee, so no reclaim - does */
	uint64_t std = world_submit(&w, "t2", "queue: c\nresources: {devices: {count: 2}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, std), XP_JOB_RUNNING);
	assert_int_equal(state_of(&w, be), XP_JOB_PENDING);
	assert_non_null(strstr(xp_state_job(w.st, be)->reason, "best-effort"));
	cancel(&w, std);
	cancel(&w, be);
	cancel(&w, be2);
	/* protected: even reclaim leaves it */
	uint64_t pr = world_submit(
		&w, "t1", "queue: b\nqos: protected\nresources: {devices: {count: 4}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, pr), XP_JOB_RUNNING);
	uint64_t own = world_submit(&w, "t2", "queue: a\nresources: {devices: {count: 1}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, own), XP_JOB_PENDING);
	assert_int_equal(state_of(&w, pr), XP_JOB_RUNNING);
	/* a best-effort job of higher priority is not taken by a lower one */
	cancel(&w, pr);
	cancel(&w, own);
	uint64_t hi = world_submit(
		&w, "t1",
		"queue: b\npriority: 5\nqos: best-effort\nresources: {devices: {count: 4}}\n",
		NULL);
	world_cycle(&w);
	uint64_t lo = world_submit(&w, "t2", "queue: c\nresources: {devices: {count: 1}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(state_of(&w, hi), XP_JOB_RUNNING);
	assert_int_equal(state_of(&w, lo), XP_JOB_PENDING);
	/* a bad class names the field */
	bad_spec("qos: gold\n", "qos");
	done(&w);
}

/* aging: waiting raises a job's place in the order, not its priority for
 * preemption */
static void test_aging(void **state)
{
	(void)state;
	for (int aged = 0; aged < 2; aged++) {
		struct world w;
		init(&w);
		node(&w, "n0", 1, 64);
		assert_int_equal(queue(&w, aged ? "{name: q, aging: 10m}" : "{name: q}"), 0);
		uint64_t blk = world_submit(&w, "t1", "queue: q\nresources: " GPU1 "\n", NULL);
		world_cycle(&w);
		uint64_t low = world_submit(&w, "t1", "queue: q\nresources: " GPU1 "\n", NULL);
		w.now += 3600000; /* an hour later: low has waited 6 x 10m */
		uint64_t high = world_submit(&w, "t2",
					     "queue: q\npriority: 3\nresources: " GPU1 "\n", NULL);
		world_cycle(&w);
		finish(&w, blk, 1);
		world_cycle(&w);
		assert_int_equal(state_of(&w, aged ? low : high), XP_JOB_RUNNING);
		assert_int_equal(state_of(&w, aged ? high : low), XP_JOB_PENDING);
		assert_int_equal(g_watch.preempted, 0);
		done(&w);
	}
	struct xp_queuespec q;
	struct xp_err err = { 0 };
	char field[320];
	assert_true(xp_queuespec_parse_text("q", "{name: a, aging: 0s}", 20, 0, 1, &q, field,
					    &err) < 0);
	assert_string_equal(field, "aging");
}

/* ---- the random workload against the reference model ---- */

static void random_run(uint64_t seed, int ops)
{
	struct world w;
	struct xp_rng rng;
	char doc[512];
	init(&w);
	xp_rng_seed(&rng, seed);
	/* 6 nodes: GPUs, NPUs, CPU only */
	for (int i = 0; i < 6; i++) {
		char name[16];
		snprintf(name, sizeof(name), "n%d", i);
		if (i == 4) {
			const char *npu =
				"{\"version\":1,\"nodes\":[{\"name\":\"n4\",\"cpu\":64,"
				"\"memory\":262144,\"devices\":[{\"type\":\"npu\",\"vendor\":"
				"\"Huawei\",\"model\":\"910B\",\"memory\":65536,\"count\":8}]}]}";
			assert_int_equal(
				world_apply(&w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, npu)),
				0);
		} else {
			node(&w, name, i == 5 ? 0 : 4 + 4 * (i % 2), 32);
		}
	}
	/* a tree: two orgs with guarantees split between their leaves, and a
	 * top-level leaf; random policies and maxes */
	static const char *const pol[] = { "never", "reclaim", "priority" };
	const char *leaves[] = { "a1", "a2", "b1", "c" };
	int ga = (int)xp_rng_below(&rng, 9), gb = (int)xp_rng_below(&rng, 9);
	snprintf(doc, sizeof(doc), "{name: a, quota: {gpu: {guarantee: %d}, cpu: {guarantee: 64}}}",
		 ga);
	assert_int_equal(queue(&w, doc), 0);
	snprintf(doc, sizeof(doc),
		 "{name: b, weight: 2, quota: {gpu: {guarantee: %d}, npu: "
		 "{guarantee: 4, max: %d}}}",
		 gb, 4 + (int)xp_rng_below(&rng, 5));
	assert_int_equal(queue(&w, doc), 0);
	int g1 = ga ? (int)xp_rng_below(&rng, (uint64_t)ga + 1) : 0;
	snprintf(doc, sizeof(doc),
		 "{name: a1, parent: a, preempt: %s, quota: {gpu: {guarantee: %d}, cpu: "
		 "{guarantee: 32}}}",
		 pol[xp_rng_below(&rng, 3)], g1);
	assert_int_equal(queue(&w, doc), 0);
	snprintf(doc, sizeof(doc),
		 "{name: a2, parent: a, preempt: %s, quota: {gpu: {guarantee: %d, max: %d}}}",
		 pol[xp_rng_below(&rng, 3)], ga - g1, ga - g1 + (int)xp_rng_below(&rng, 6));
	assert_int_equal(queue(&w, doc), 0);
	snprintf(doc, sizeof(doc),
		 "{name: b1, parent: b, preempt: %s, quota: {gpu: {guarantee: %d}}}",
		 pol[xp_rng_below(&rng, 3)], gb);
	assert_int_equal(queue(&w, doc), 0);
	snprintf(doc, sizeof(doc), "{name: c, preempt: %s, quota: {cpu: {max: %d}}}",
		 pol[xp_rng_below(&rng, 3)], 16 + (int)xp_rng_below(&rng, 64));
	assert_int_equal(queue(&w, doc), 0);

	static const char *const devs[] = { "",
					    ", devices: {count: 1}",
					    ", devices: {count: 2, class: gpu}",
					    ", devices: {count: 4, class: gpu}",
					    ", devices: {count: 2, class: npu}",
					    ", devices: {fraction: 0.5}",
					    ", devices: {count: 8}" };
	for (int op = 0; op < ops; op++) {
		uint64_t k = xp_rng_below(&rng, 100);
		w.now += 1000;
		if (k < 40) { /* submit; one in five after an earlier job */
			char y[512], dep[200] = "";
			const char *t = xp_rng_below(&rng, 2) ? "t1" : "t2";
			static const char *const dt[] = { "after-ok", "after-any", "after-not-ok" };
			if (w.st->jobs.n && xp_rng_below(&rng, 5) == 0) {
				const struct xp_job *d =
					w.st->jobs.v[xp_rng_below(&rng, w.st->jobs.n)];
				snprintf(dep, sizeof(dep), "depends_on: [{job: %llu, type: %s}]\n",
					 (unsigned long long)d->id, dt[xp_rng_below(&rng, 3)]);
			}
			static const char *const qos[] = { "", "qos: best-effort\n",
							   "qos: protected\n" };
			snprintf(dep + strlen(dep), sizeof(dep) - strlen(dep), "%s",
				 qos[xp_rng_below(&rng, 6) % 3 * (xp_rng_below(&rng, 2))]);
			if (xp_rng_below(&rng, 2)) /* half with a time limit: backfill */
				snprintf(dep + strlen(dep), sizeof(dep) - strlen(dep),
					 "time_limit: %ds\n", 5 + (int)xp_rng_below(&rng, 300));
			snprintf(y, sizeof(y),
				 "queue: %s\npriority: %d\nreplicas: %d\nresources: {cpu: %d, "
				 "memory: %dGi%s}\n%s",
				 leaves[xp_rng_below(&rng, 4)], (int)xp_rng_below(&rng, 5) - 2,
				 1 + (int)(xp_rng_below(&rng, 4) == 0),
				 1 + (int)xp_rng_below(&rng, 8), 1 + (int)xp_rng_below(&rng, 16),
				 devs[xp_rng_below(&rng, 7)], dep);
			/* refused only for a dependency: another tenant's, or never met */
			if (!world_submit(&w, t, y, NULL))
				assert_non_null(strstr(dep, "depends_on"));
		} else if (k < 65) { /* a tick */
			xp_rng_seed(&rng, xp_rng_next(&rng));
			struct xp_rng r2 = rng;
			long n = xp_state_cycle(w.st, w.now, 1 + xp_rng_below(&rng, 50), &r2,
						world_emit, &w);
			assert_true(n >= 0);
		} else if (k < 90 && w.st->count[XP_JOB_RUNNING]) { /* finish, requeue */
			size_t i = xp_rng_below(&rng, w.st->jobs.n);
			struct xp_job *j = w.st->jobs.v[i];
			if (j->state != XP_JOB_RUNNING)
				continue;
			if (k < 85)
				assert_int_equal(
					world_apply(&w, "job.finish",
						    xp_rec_job_finish(j->id, XP_JOB_SUCCEEDED, 0,
								      NULL)),
					0);
			else
				assert_int_equal(world_apply(&w, "job.requeue",
							     xp_rec_job_requeue(j->id, "lost")),
						 0);
		} else if (k < 92) { /* the clock: time limits */
			struct xp_overdue due[8];
			size_t n = xp_state_overdue(w.st, w.now, due, 8);
			for (size_t i = 0; i < n; i++)
				assert_int_equal(
					world_apply(&w, "job.finish",
						    xp_rec_job_finish(due[i].id, XP_JOB_FAILED, 0,
								      due[i].why)),
					0);
		} else if (k < 95 && w.st->jobs.n) { /* cancel */
			struct xp_job *j = w.st->jobs.v[xp_rng_below(&rng, w.st->jobs.n)];
			if (!xp_job_terminal(j->state))
				assert_int_equal(world_apply(&w, "job.cancel",
							     xp_rec_job_cancel(j->id, NULL)),
						 0);
		} else { /* change a quota: refused or applied, never half */
			snprintf(doc, sizeof(doc),
				 "{name: %s, parent: %s, quota: {gpu: {guarantee: %d, max: %d}}}",
				 leaves[op % 3], op % 3 == 2 ? "b" : "a",
				 (int)xp_rng_below(&rng, 5), 4 + (int)xp_rng_below(&rng, 8));
			char *before = xp_state_snapshot(w.st);
			if (queue_update(&w, doc) < 0) {
				char *after = xp_state_snapshot(w.st);
				assert_string_equal(before, after);
				free(after);
			}
			free(before);
		}
		check_usage(w.st);
		for (size_t i = 0; i < w.st->jobs.n; i++)
			if (w.st->jobs.v[i]->state == XP_JOB_RUNNING &&
			    w.st->jobs.v[i]->started_at == w.now)
				check_started(w.st, w.st->jobs.v[i]->id);
	}
	world_cycle(&w);
	/* replay and snapshot agree, usage included */
	char *s = xp_state_snapshot(w.st), *r = world_replay(&w, w.log.n, NULL, 0);
	assert_string_equal(s, r);
	free(s);
	free(r);
	done(&w);
}

/* the explain summary: one reason per "; "-separated part, fits or not */
static void test_explain_summary(void **state)
{
	(void)state;
	struct xp_explain ex;
	struct xp_sb sb = { 0 };
	memset(&ex, 0, sizeof(ex));
	ex.nodes[XP_WHY_FITS] = 3;
	ex.nodes[XP_WHY_DEV_BUSY] = 253;
	ex.nodes[XP_WHY_NO_DEVICE] = 256;
	xp_explain_summary(&ex, 1, 2, &sb);
	assert_string_equal(sb.s, "256 nodes: no matching device; 253 nodes: matching devices busy; "
				  "fits now: 3 nodes can take it; it starts at the next cycle");
	xp_sb_free(&sb);
	xp_explain_summary(&ex, 0, 4, &sb);
	assert_string_equal(sb.s, "256 nodes: no matching device; 253 nodes: matching devices busy; "
				  "3 nodes fit one replica but not all 4");
	xp_sb_free(&sb);
}

static void test_random_reference(void **state)
{
	(void)state;
	uint64_t preempted = 0, started = 0;
	for (uint64_t seed = 1; seed <= 12; seed++) {
		random_run(seed, 1500);
		preempted += g_watch.preempted;
		started += g_watch.started;
	}
	/* the workload exercised what it checks */
	print_message("random workload: %llu starts, %llu preemptions\n",
		      (unsigned long long)started, (unsigned long long)preempted);
	assert_true(started > 1000);
	assert_true(preempted > 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reclaim),
		cmocka_unit_test(test_explain_victims),
		cmocka_unit_test(test_priority_preemption),
		cmocka_unit_test(test_never),
		cmocka_unit_test(test_max),
		cmocka_unit_test(test_fair_share),
		cmocka_unit_test(test_tree_rules),
		cmocka_unit_test(test_gang_reclaim),
		cmocka_unit_test(test_snapshot),
		cmocka_unit_test(test_allow_list),
		cmocka_unit_test(test_bad_queue_docs),
		cmocka_unit_test(test_dependencies),
		cmocka_unit_test(test_time_limit_and_gang_timeout),
		cmocka_unit_test(test_colocate),
		cmocka_unit_test(test_backfill),
		cmocka_unit_test(test_deadlines),
		cmocka_unit_test(test_qos),
		cmocka_unit_test(test_aging),
		cmocka_unit_test(test_explain_summary),
		cmocka_unit_test(test_random_reference),
	};
	return xp_run_tests(tests, NULL, NULL);
}
