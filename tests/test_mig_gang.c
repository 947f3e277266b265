/*
 * test_mig_gang: gangs of MIG slices placed whole (issue 21) and MIG mode
 * changes planned in the state (migmode.c), against naive references.
 *
 *  - random gangs: 3 nodes x 2 GPUs (A100-80GB, H100-80GB), 500 random
 *    submits (1-4 replicas of a random profile or of mig: any, colocate
 *    none or node) and finishes. After every cycle a reference lattice per
 *    GPU is rebuilt from the running allocations alone: every replica of
 *    a running job holds a valid, non-overlapping slice (of its profile;
 *    on one node under colocate node). Every pending job must not fit:
 *    the reference's room - the most disjoint free placements of the
 *    profile per GPU, by exhaustive search - summed over all GPUs (or over
 *    the GPUs of each node under colocate node) is short of its replicas.
 *    Replay equals the live snapshot.
 *  - a gang of slices on one node skips a node whose GPUs take only one.
 *  - the mode-change planner, driven by records: a denied node, an allowed
 *    one (reservation, the GPU takes nothing meanwhile, explain), a
 *    refusal (kept, not asked again), a change (the job placed), a gang
 *    that needs two GPUs switched, and replay; a gang on one node gets
 *    two GPUs of one node switched, one after the other.
 *  - MIG off, driven by records: a whole-GPU job waits beside GPUs in MIG
 *    mode: denied, an administrator's instances block it, reserved "off",
 *    an answer of the other direction refused, refused by NVML, switched
 *    and the job placed, replay and snapshot (the hold kept); the GPU is
 *    not switched on again within XP_MIGMODE_HOLD_MS; no GPU is switched
 *    off while a MIG job waits that it could serve.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/mig.h"
#include "core/sched/sched.h"
#include "core/state/migmode.h"
#include "core/state/state.h"
#include "edge/edge.h"
#include "lib/strbuf.h"
#include "lib/xalloc.h"
#include "testutil.h"
#include "world.h"

#define NNODE 3
#define NGPU  (NNODE * 2)

static const char *const node_model[NNODE] = { "A100-SXM4-80GB", "H100-SXM5-80GB",
					       "A100-SXM4-80GB" };

static void add_node(struct world *w, const char *name, const char *model, const char *mode,
		     const char *parts)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "{\"version\":1,\"nodes\":[{\"name\":\"%s\",\"cpu\":64,\"memory\":262144,"
		 "\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"%s\","
		 "\"memory\":81920,\"count\":2,\"mode\":\"%s\"%s}]}]}",
		 name, model, mode, parts ? parts : "");
	assert_int_equal(world_apply(w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, buf)), 0);
}

static void setup(struct world *w)
{
	world_init(w);
	assert_int_equal(world_apply(w, "tenant.create", xp_rec_tenant_create("default")), 0);
	assert_int_equal(world_apply(w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
}

/* ---- random gangs against the reference ---- */

static const char *const profiles[] = { "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb",
					"4g.40gb", "7g.80gb", "any" };
#define NPROF (sizeof(profiles) / sizeof(profiles[0]))

/* The kind job j's replica takes on reference GPU g: its profile's, or
 * for mig: any the smallest that covers its size */
static int ref_kind(const struct xp_mig_gpu *g, const struct xp_job *j)
{
	if (!j->req.mig_any)
		return xp_mig_profile_find(g->t, j->spec.mig_profile, NULL);
	return xp_mig_smallest(g->t, j->req.dev_milli, j->req.dev_mem_mib);
}

/* The most instances of kind k that fit g together: exhaustive search
 * over subsets of its placements (at most 8) */
static unsigned ref_room(const struct xp_mig_gpu *g, int k, unsigned from, uint8_t mem,
			 unsigned have)
{
	const struct xp_mig_profile *p = &g->t->prof[k];
	unsigned best = 0;
	if (have >= p->max_count)
		return 0;
	for (unsigned i = from; i < p->nplace; i++) {
		uint8_t span = (uint8_t)(((1u << p->place[i].size) - 1) << p->place[i].start);
		if (mem & span)
			continue;
		unsigned r = 1 + ref_room(g, k, i + 1, (uint8_t)(mem | span), have + 1);
		if (r > best)
			best = r;
	}
	return best;
}

static unsigned room_of(const struct xp_mig_gpu *g, const struct xp_job *j)
{
	int k = ref_kind(g, j);
	unsigned have = 0;
	if (k < 0)
		return 0;
	for (unsigned i = 0; i < g->n; i++)
		have += g->inst[i].kind == k;
	if (j->req.mig_any) { /* any profile that covers it, the one with the most room */
		unsigned best = 0;
		for (int kk = 0; kk < XP_MIG_NKINDS; kk++) {
			const struct xp_mig_profile *p = &g->t->prof[kk];
			if (kk == XP_MIG_1G_ME || !p->nplace ||
			    p->compute < xp_mig_slices_for(j->req.dev_milli) ||
			    p->mem_mib < j->req.dev_mem_mib)
				continue;
			unsigned h = 0, r;
			for (unsigned i = 0; i < g->n; i++)
				h += g->inst[i].kind == kk;
			r = ref_room(g, kk, 0, g->mem, h);
			best = r > best ? r : best;
		}
		return best;
	}
	return ref_room(g, k, 0, g->mem, have);
}

static void reference(struct world *w, struct xp_mig_gpu *g)
{
	for (int i = 0; i < NGPU; i++)
		xp_mig_gpu_init(&g[i], xp_mig_table_find(node_model[i / 2]));
	for (size_t i = 0; i < w->st->jobs.n; i++) {
		const struct xp_job *j = w->st->jobs.v[i];
		if (j->state != XP_JOB_RUNNING)
			continue;
		for (uint32_t r = 0; r < j->spec.replicas; r++) {
			const struct xp_alloc *a = &j->allocs[r];
			assert_int_equal(a->ndev, 1);
			assert_true(a->mig >= 1);
			if (j->spec.colocate == XP_COLOC_NODE)
				assert_int_equal(a->node, j->allocs[0].node);
			struct xp_mig_gpu *gg = &g[a->node * 2 + a->devs[0]];
			if (!j->req.mig_any)
				assert_int_equal(
					a->mig - 1,
					xp_mig_profile_find(gg->t, j->spec.mig_profile, NULL));
			struct xp_err err = { 0 };
			if (xp_mig_place(gg, a->mig - 1, a->mig_start, &err) < 0)
				fail_msg("job %llu replica %u: %s", (unsigned long long)j->id, r,
					 err.text);
		}
	}
	for (int i = 0; i < NGPU; i++) { /* the scheduler's lattice holds what runs, no more */
		const struct xp_mig_gpu *s =
			xp_sched_mig_gpu(w->st->sched, (uint32_t)(i / 2), (uint16_t)(i % 2));
		assert_non_null(s);
		if (s->mem != g[i].mem)
			fail_msg("GPU %d: the scheduler holds slices %02x, the running jobs %02x",
				 i, s->mem, g[i].mem);
	}
}

static unsigned held_back; /* pending jobs that fit, held back by a backfill reservation */

static void none_fits(struct world *w, const struct xp_mig_gpu *g)
{
	for (size_t i = 0; i < w->st->jobs.n; i++) {
		const struct xp_job *j = w->st->jobs.v[i];
		if (j->state != XP_JOB_PENDING)
			continue;
		if (j->verdict == XP_PEND_PRIORITY) { /* it would delay a reserved job */
			held_back++;
			continue;
		}
		unsigned total = 0;
		for (int n = 0; n < NNODE; n++) {
			unsigned on = room_of(&g[n * 2], j) + room_of(&g[n * 2 + 1], j);
			if (j->spec.colocate == XP_COLOC_NODE && on >= j->spec.replicas)
				fail_msg("job %llu (%u x %s, colocate node) pending, node %d has "
					 "room for %u",
					 (unsigned long long)j->id, j->spec.replicas,
					 j->spec.mig_profile, n, on);
			total += on;
		}
		if (j->spec.colocate != XP_COLOC_NODE && total >= j->spec.replicas)
			fail_msg("job %llu (%u x %s) pending, room for %u",
				 (unsigned long long)j->id, j->spec.replicas, j->spec.mig_profile,
				 total);
	}
}

static void finish_one(struct world *w, unsigned r)
{
	size_t run = 0, pick;
	for (size_t i = 0; i < w->st->jobs.n; i++)
		run += w->st->jobs.v[i]->state == XP_JOB_RUNNING;
	pick = run ? r % run : 0;
	for (size_t i = 0; run && i < w->st->jobs.n; i++)
		if (w->st->jobs.v[i]->state == XP_JOB_RUNNING && pick-- == 0) {
			assert_int_equal(world_apply(w, "job.finish",
						     xp_rec_job_finish(w->st->jobs.v[i]->id,
								       XP_JOB_SUCCEEDED, 0, NULL)),
					 0);
			return;
		}
}

static void test_random_gangs(void **state)
{
	(void)state;
	struct world w;
	struct xp_mig_gpu g[NGPU];
	uint64_t seed = 424242;
	unsigned placed_gangs = 0, together = 0;
	setup(&w);
	for (int n = 0; n < NNODE; n++) {
		char name[8];
		snprintf(name, sizeof(name), "n%d", n);
		add_node(&w, name, node_model[n], "mig", NULL);
	}
	for (int step = 0; step < 500; step++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		unsigned r = (unsigned)(seed >> 33);
		if (r % 5 < 3) {
			char yaml[320];
			const char *p = profiles[(r / 5) % NPROF];
			unsigned reps = 1 + (r / 40) % 4, node = (r / 200) % 2;
			if (!strcmp(p, "any"))
				snprintf(yaml, sizeof(yaml),
					 "command: [true]\nreplicas: %u\n%sresources: {devices: "
					 "{mig: any, memory: %uGi}}\n",
					 reps, node ? "gang: {colocate: node}\n" : "",
					 5 + (r / 400) % 60);
			else
				snprintf(yaml, sizeof(yaml),
					 "command: [true]\nreplicas: %u\n%sresources: {devices: "
					 "{mig: {profile: %s}}}\n",
					 reps, node ? "gang: {colocate: node}\n" : "", p);
			assert_true(world_submit(&w, "default", yaml, NULL) > 0);
		} else {
			finish_one(&w, r / 5);
		}
		w.now += 1000;
		world_cycle(&w);
		reference(&w, g);
		none_fits(&w, g);
	}
	for (size_t i = 0; i < w.st->jobs.n; i++) {
		const struct xp_job *j = w.st->jobs.v[i];
		if (j->state == XP_JOB_PENDING || j->spec.replicas < 2)
			continue;
		placed_gangs++;
		together += j->spec.colocate == XP_COLOC_NODE;
	}
	print_message("gangs of slices placed: %u (%u colocated on a node); pending checks "
		      "skipped as held back by a reservation: %u\n",
		      placed_gangs, together, held_back);
	assert_true(placed_gangs > 20);
	assert_true(together > 5);
	char *live = xp_state_snapshot(w.st);
	char *full = world_replay(&w, w.log.n, NULL, 0);
	assert_string_equal(live, full);
	free(live);
	free(full);
	world_free(&w);
}

/* colocate node: node a's GPUs have room for one 3g (a 7g on GPU 0, a 1g
 * at GPU 1's start 6), node b's for four; a gang of three takes b, whatever
 * the policy picks first; a second gang of three fits no node: none placed */
static void test_gang_next_node(void **state)
{
	(void)state;
	struct world w;
	setup(&w);
	add_node(&w, "a", "A100-SXM4-80GB", "mig", NULL);
	add_node(&w, "b", "A100-SXM4-80GB", "mig", NULL);
	const char *y7 = "command: [true]\nnode: a\nresources: {devices: {mig: {profile: "
			 "7g.80gb}}}\n";
	const char *y1 = "command: [true]\nnode: a\nresources: {devices: {mig: {profile: "
			 "1g.10gb}}}\n";
	uint64_t big = world_submit(&w, "default", y7, NULL);
	world_cycle(&w);
	uint64_t small = world_submit(&w, "default", y1, NULL);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, big)->state, XP_JOB_RUNNING);
	assert_int_equal(xp_state_job(w.st, small)->state, XP_JOB_RUNNING);
	assert_int_equal(xp_mig_room_on(w.st->sched, 0, &xp_state_job(w.st, big)->req), 0);
	const char *gy = "command: [true]\nreplicas: 3\ngang: {colocate: node}\n"
			 "resources: {devices: {mig: {profile: 3g.40gb}}}\n";
	uint64_t gang = world_submit(&w, "default", gy, NULL);
	world_cycle(&w);
	const struct xp_job *j = xp_state_job(w.st, gang);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	for (uint32_t r = 0; r < 3; r++)
		assert_string_equal(w.st->c->nodes[j->allocs[r].node].name, "b");
	uint64_t g2 = world_submit(&w, "default", gy, NULL);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, g2)->state, XP_JOB_PENDING);
	assert_int_equal(xp_mig_room_on(w.st->sched, 0, &xp_state_job(w.st, g2)->req), 1);
	assert_int_equal(xp_mig_room_on(w.st->sched, 1, &xp_state_job(w.st, g2)->req), 1);
	struct xp_explain ex;
	int fits;
	xp_state_explain(w.st, xp_state_job(w.st, g2), &ex, &fits);
	assert_false(fits);
	/* the gang's end frees all three slices at once */
	assert_int_equal(
		world_apply(&w, "job.finish", xp_rec_job_finish(gang, XP_JOB_SUCCEEDED, 0, NULL)),
		0);
	world_cycle(&w);
	j = xp_state_job(w.st, g2);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	for (uint32_t r = 0; r < 3; r++)
		assert_string_equal(w.st->c->nodes[j->allocs[r].node].name, "b");
	world_free(&w);
}

/* ---- the mode-change planner ---- */

/* A node with two A100-80GB in mode shared, MIG off, whose partitions are
 * what NVML discovery reads (the profiles, in any mode), from an agent */
static void add_agent_node_in(struct world *w, const char *name, const char *mode)
{
	char buf[2048];
	snprintf(buf, sizeof(buf),
		 "{\"version\":1,\"nodes\":[{\"name\":\"%s\",\"cpu\":64,\"memory\":262144,"
		 "\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":"
		 "\"A100-SXM4-80GB\",\"memory\":81920,\"count\":2,\"mode\":\"%s\","
		 "\"partitions\":[{\"name\":\"1g.10gb\",\"compute_milli\":142,\"memory\":9728,"
		 "\"max\":7},{\"name\":\"3g.40gb\",\"compute_milli\":428,\"memory\":40192,"
		 "\"max\":2},{\"name\":\"7g.80gb\",\"compute_milli\":1000,\"memory\":81152,"
		 "\"max\":1}]}]}]}",
		 name, mode);
	assert_int_equal(world_apply(w, "node.add", xp_rec_node_add(XP_SRC_AGENT, buf)), 0);
}

static void add_agent_node(struct world *w, const char *name)
{
	add_agent_node_in(w, name, "shared");
}

struct planned {
	char type[64];
	char body[512];
};

static struct planned last;
static int nplanned;

static int plan_emit(void *ctx, const struct xp_rec *r)
{
	struct world *w = ctx;
	const char *type = xp_rec_type_name(r->type);
	char *body = xp_rec_encode(r);
	snprintf(last.type, sizeof(last.type), "%s", type);
	snprintf(last.body, sizeof(last.body), "%s", body);
	nplanned++;
	return world_apply(w, type, body);
}

static long plan(struct world *w)
{
	nplanned = 0;
	return xp_migmode_plan(w->st, w->now, plan_emit, w);
}

static void explain(struct world *w, uint64_t id, char *out, size_t len)
{
	struct xp_sb sb = { 0 };
	xp_migmode_explain(w->st, xp_state_job(w->st, id), w->now, &sb);
	snprintf(out, len, "%s", sb.s ? sb.s : "");
	xp_sb_free(&sb);
}

/* test_plan, continued: a gang of 3 x 3g; GPU 0 (in mode mig) has room
 * for one, GPU 1 runs the whole-GPU job: nothing until it ends, then GPU 1
 * is reserved; replay; the reservation times out */
static void plan_gang_then_replay(struct world *wp, uint64_t whole)
{
	char buf[1024];
	/* a gang of 3 x 3g: GPU 0 has room for one; GPU 1 frees and is switched */
	uint64_t gang = world_submit(wp, "default",
				     "command: [true]\nreplicas: 3\n"
				     "resources: {devices: {mig: {profile: 3g.40gb}}}\n",
				     NULL);
	world_cycle(wp);
	assert_int_equal(xp_state_job(wp->st, gang)->state, XP_JOB_PENDING);
	assert_int_equal(plan(wp), 0); /* GPU 1 is busy */
	explain(wp, gang, buf, sizeof(buf));
	assert_non_null(strstr(buf, "are in use"));
	assert_int_equal(
		world_apply(wp, "job.finish", xp_rec_job_finish(whole, XP_JOB_SUCCEEDED, 0, NULL)),
		0);
	world_cycle(wp);
	assert_int_equal(plan(wp), 1);
	assert_non_null(strstr(last.body, "\"device\":1"));
	/* replay (and a snapshot taken while it is reserved) rebuild the same */
	char *live = xp_state_snapshot(wp->st);
	assert_non_null(strstr(live, "\"mig_mode\""));
	char *full = world_replay(wp, wp->log.n, NULL, 0);
	assert_string_equal(live, full);
	char *from_snap = world_replay(wp, wp->log.n, live, wp->st->seq);
	assert_string_equal(live, from_snap);
	free(from_snap);
	free(full);
	free(live);
	/* no answer in time: released */
	wp->now += XP_MIGMODE_TIMEOUT_MS + 1000;
	assert_int_equal(plan(wp), 1);
	assert_string_equal(last.type, "node.mig_mode_done");
	assert_non_null(strstr(last.body, "no answer"));
	assert_int_equal(wp->st->mm_held, 0);
}

static void test_plan(void **state)
{
	(void)state;
	struct world w;
	char buf[1024];
	setup(&w);
	add_agent_node(&w, "m");
	const char *y3 = "command: [true]\nresources: {devices: {mig: {profile: 3g.40gb}}}\n";
	uint64_t id = world_submit(&w, "default", y3, NULL);
	assert_true(id > 0);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, id)->state, XP_JOB_PENDING);
	/* denied: nothing planned, explain says why */
	assert_int_equal(plan(&w), 0);
	explain(&w, id, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node m does not allow MIG mode changes (its GPU 0"));
	/* allowed: GPU 0 reserved, nothing else placed on it meanwhile */
	assert_int_equal(world_apply(&w, "node.mig_mode_change", xp_rec_node_mig_leave("m", 1)), 0);
	explain(&w, id, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node m GPU 0, idle with MIG mode off, is switched"));
	assert_int_equal(plan(&w), 1);
	assert_string_equal(last.type, "node.mig_mode");
	assert_int_equal(plan(&w), 0); /* one reservation gives room enough */
	explain(&w, id, buf, sizeof(buf));
	assert_non_null(strstr(buf, "it waits for a MIG mode change: node m GPU 0"));
	uint64_t whole = world_submit(&w, "default",
				      "command: [true]\nresources: {devices: {count: 1}}\n", NULL);
	world_cycle(&w);
	const struct xp_job *wj = xp_state_job(w.st, whole);
	assert_int_equal(wj->state, XP_JOB_RUNNING);
	assert_int_equal(wj->allocs[0].devs[0], 1); /* not the reserved GPU */
	/* a reservation of a busy GPU is refused at apply */
	assert_int_equal(world_apply(&w, "node.mig_mode", xp_rec_node_mig_mode("m", 1, id)),
			 XP_ESTATE);
	/* refused by NVML: released, kept, not asked again at once */
	assert_int_equal(world_apply(&w, "node.mig_mode_done",
				     xp_rec_node_mig_done("m", 0, 0, "In use by another client")),
			 0);
	assert_int_equal(plan(&w), 0); /* GPU 1 runs a job, GPU 0 refused a moment ago */
	explain(&w, id, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node m GPU 0 refused a MIG mode change: In use"));
	/* after the retry time it is asked again; this time it changes */
	w.now += XP_MIGMODE_RETRY_MS + 1000;
	assert_int_equal(plan(&w), 1);
	assert_int_equal(world_apply(&w, "node.mig_mode_done", xp_rec_node_mig_done("m", 0, 1, "")),
			 0);
	assert_int_equal(w.st->c->nodes[0].devs[0].mode, XP_MODE_MIG);
	world_cycle(&w);
	const struct xp_job *j = xp_state_job(w.st, id);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_int_equal(j->allocs[0].devs[0], 0);
	assert_int_equal(j->allocs[0].mig, XP_MIG_3G + 1);
	plan_gang_then_replay(&w, whole);
	world_free(&w);
}

/* a gang of 3 x 3g on one node: two GPUs of one node are switched, one
 * after the other, none of the other node's */
static void test_plan_colocated(void **state)
{
	(void)state;
	struct world w;
	setup(&w);
	add_agent_node(&w, "m1");
	add_agent_node(&w, "m2");
	for (int i = 0; i < 2; i++)
		assert_int_equal(world_apply(&w, "node.mig_mode_change",
					     xp_rec_node_mig_leave(i ? "m2" : "m1", 1)),
				 0);
	uint64_t gang = world_submit(&w, "default",
				     "command: [true]\nreplicas: 3\ngang: {colocate: node}\n"
				     "resources: {devices: {mig: {profile: 3g.40gb}}}\n",
				     NULL);
	world_cycle(&w);
	assert_int_equal(plan(&w), 1);
	assert_non_null(strstr(last.body, "\"name\":\"m1\",\"device\":0"));
	assert_int_equal(plan(&w), 0); /* m1's change in flight: not m2's GPU meanwhile */
	assert_int_equal(
		world_apply(&w, "node.mig_mode_done", xp_rec_node_mig_done("m1", 0, 1, "")), 0);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, gang)->state, XP_JOB_PENDING);
	assert_int_equal(plan(&w), 1);
	assert_non_null(strstr(last.body, "\"name\":\"m1\",\"device\":1"));
	assert_int_equal(
		world_apply(&w, "node.mig_mode_done", xp_rec_node_mig_done("m1", 1, 1, "")), 0);
	world_cycle(&w);
	const struct xp_job *j = xp_state_job(w.st, gang);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	for (uint32_t r = 0; r < 3; r++)
		assert_int_equal(j->allocs[r].node, 0);
	assert_int_equal(w.st->c->nodes[1].devs[0].mode, XP_MODE_SHARED);
	assert_int_equal(plan(&w), 0);
	world_free(&w);
}

/* ---- MIG off ---- */

/* The agent's heartbeat hint: GPU dev of node 0 holds an instance xpool
 * did not create (an administrator's) when foreign */
static void hint(struct world *w, uint16_t dev, int foreign)
{
	uint8_t warm[XP_MIG_NKINDS] = { 0 };
	assert_int_equal(xp_state_sched(w->st, NULL), 0);
	xp_sched_set_mig_warm(w->st->sched, 0, dev, warm, foreign ? 0x0f : 0);
}

/* test_plan_off, continued: the switched-off GPU 1 runs the whole-GPU job;
 * a 3g waits; GPU 1 is not switched back on before the hold time */
static void plan_off_hold(struct world *w, uint64_t whole)
{
	char buf[1024];
	uint64_t mig = world_submit(
		w, "default", "command: [true]\nresources: {devices: {mig: {profile: 7g.80gb}}}\n",
		NULL);
	hint(w, 0, 1); /* GPU 0 holds an administrator's instance: no room for a 7g */
	world_cycle(w);
	assert_int_equal(xp_state_job(w->st, mig)->state, XP_JOB_PENDING);
	assert_int_equal(plan(w), 0); /* GPU 1 runs the whole-GPU job */
	assert_int_equal(
		world_apply(w, "job.finish", xp_rec_job_finish(whole, XP_JOB_SUCCEEDED, 0, NULL)),
		0);
	world_cycle(w);
	hint(w, 0, 1);
	assert_int_equal(plan(w), 0); /* idle, but switched a moment ago */
	explain(w, mig, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node m GPU 1, idle with MIG mode off, was switched less than "
				    "600 s ago"));
	/* a record that would flap is refused at apply as well */
	assert_int_equal(world_apply(w, "node.mig_mode", xp_rec_node_mig_mode("m", 1, mig)),
			 XP_ESTATE);
	w->now += XP_MIGMODE_HOLD_MS;
	hint(w, 0, 1);
	assert_int_equal(plan(w), 1);
	assert_non_null(strstr(last.body, "\"device\":1,\"mode\":\"mig\""));
}

/* MIG off, record by record: a node whose two A100-80GB are in MIG mode,
 * idle; a whole-GPU job waits. */
static void test_plan_off(void **state)
{
	(void)state;
	struct world w;
	char buf[1024];
	setup(&w);
	add_agent_node_in(&w, "m", "mig");
	uint64_t id = world_submit(&w, "default",
				   "command: [true]\nresources: {devices: {count: 1}}\n", NULL);
	assert_true(id > 0);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, id)->state, XP_JOB_PENDING);
	/* denied: nothing planned, explain says why */
	assert_int_equal(plan(&w), 0);
	explain(&w, id, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node m does not allow MIG mode changes (its GPU 0, idle in "
				    "MIG mode, would take this job with MIG off"));
	/* allowed, but both GPUs hold an administrator's instance: never */
	assert_int_equal(world_apply(&w, "node.mig_mode_change", xp_rec_node_mig_leave("m", 1)), 0);
	hint(&w, 0, 1);
	hint(&w, 1, 1);
	assert_int_equal(plan(&w), 0);
	explain(&w, id, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node m GPU 0 stays in MIG mode: it holds a warm instance or "
				    "one xpool did not create"));
	/* GPU 1's instance is gone: it is reserved, "mode": "off" */
	hint(&w, 1, 0);
	explain(&w, id, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node m GPU 1, idle in MIG mode, is switched out of MIG mode"));
	assert_int_equal(plan(&w), 1);
	assert_string_equal(last.type, "node.mig_mode");
	assert_non_null(strstr(last.body, "\"device\":1,\"mode\":\"off\""));
	assert_int_equal(plan(&w), 0); /* one change in flight for it */
	/* a snapshot taken while it is reserved keeps its direction */
	char *live = xp_state_snapshot(w.st);
	assert_non_null(strstr(live, "\"mode\":\"off\""));
	char *from_snap = world_replay(&w, w.log.n, live, w.st->seq);
	assert_string_equal(live, from_snap);
	free(from_snap);
	free(live);
	explain(&w, id, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node m GPU 1 is being switched out of MIG mode for it"));
	/* the answer must be for the direction reserved */
	assert_int_equal(world_apply(&w, "node.mig_mode_done", xp_rec_node_mig_done("m", 1, 1, "")),
			 XP_ESTATE);
	/* refused: released, kept, not asked again at once */
	assert_int_equal(
		world_apply(&w, "node.mig_mode_done",
			    xp_rec_node_mig_done_to("m", 1, 0, 0, "In use by another client")),
		0);
	assert_int_equal(w.st->c->nodes[0].devs[1].mode, XP_MODE_MIG);
	hint(&w, 0, 1);
	assert_int_equal(plan(&w), 0);
	explain(&w, id, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node m GPU 1 refused a MIG mode change: In use"));
	/* after the retry time it is asked again; this time it changes */
	w.now += XP_MIGMODE_RETRY_MS + 1000;
	hint(&w, 0, 1);
	assert_int_equal(plan(&w), 1);
	assert_non_null(strstr(last.body, "\"device\":1,\"mode\":\"off\""));
	assert_int_equal(
		world_apply(&w, "node.mig_mode_done", xp_rec_node_mig_done_to("m", 1, 0, 1, "")),
		0);
	assert_int_equal(w.st->c->nodes[0].devs[1].mode, XP_MODE_SHARED);
	assert_int_equal(w.st->c->nodes[0].devs[0].mode, XP_MODE_MIG);
	world_cycle(&w);
	const struct xp_job *j = xp_state_job(w.st, id);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_int_equal(j->allocs[0].devs[0], 1);
	assert_int_equal(j->allocs[0].mig, 0);
	/* replay and a snapshot rebuild the same, the hold included */
	live = xp_state_snapshot(w.st);
	assert_non_null(strstr(live, "\"mig_mode_switched\""));
	char *full = world_replay(&w, w.log.n, NULL, 0);
	assert_string_equal(live, full);
	from_snap = world_replay(&w, w.log.n, live, w.st->seq);
	assert_string_equal(live, from_snap);
	free(from_snap);
	free(full);
	free(live);
	plan_off_hold(&w, id);
	world_free(&w);
}

/* MIG off is never planned while a pending MIG job could use the GPU: a
 * gang of five 3g waits (the two GPUs in MIG mode give four), a whole-GPU
 * job waits too */
static void test_plan_off_mig_waits(void **state)
{
	(void)state;
	struct world w;
	char buf[1024];
	setup(&w);
	add_agent_node_in(&w, "m", "mig");
	assert_int_equal(world_apply(&w, "node.mig_mode_change", xp_rec_node_mig_leave("m", 1)), 0);
	uint64_t g = world_submit(&w, "default",
				  "command: [true]\nreplicas: 5\n"
				  "resources: {devices: {mig: {profile: 3g.40gb}}}\n",
				  NULL);
	uint64_t id = world_submit(&w, "default",
				   "command: [true]\nresources: {devices: {count: 1}}\n", NULL);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, g)->state, XP_JOB_PENDING);
	assert_int_equal(xp_state_job(w.st, id)->state, XP_JOB_PENDING);
	assert_int_equal(plan(&w), 0);
	explain(&w, id, buf, sizeof(buf));
	assert_non_null(strstr(buf, "node m GPU 0 stays in MIG mode: a pending MIG job could use"));
	/* a record that would take it from the MIG job is refused at apply */
	assert_int_equal(world_apply(&w, "node.mig_mode", xp_rec_node_mig_mode_to("m", 0, 0, id)),
			 XP_ESTATE);
	/* the gang is cancelled: GPU 0 is switched off for the whole-GPU job */
	assert_int_equal(world_apply(&w, "job.cancel", xp_rec_job_cancel(g, NULL)), 0);
	world_cycle(&w);
	assert_int_equal(plan(&w), 1);
	assert_non_null(strstr(last.body, "\"device\":0,\"mode\":\"off\""));
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_gangs), cmocka_unit_test(test_gang_next_node),
		cmocka_unit_test(test_plan),	     cmocka_unit_test(test_plan_colocated),
		cmocka_unit_test(test_plan_off),     cmocka_unit_test(test_plan_off_mig_waits),
	};
	return xp_run_tests(tests, NULL, NULL);
}
