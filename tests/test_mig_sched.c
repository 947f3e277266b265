/*
 * test_mig_sched: MIG slices as job requests (issue 21): devices.mig in a
 * spec (parse, the refusals naming the field, the journal's canonical
 * JSON), and the controller's refusals of a profile no registered node
 * offers or of MIG asked of devices without partitions; mig: any (the
 * smallest profile that fits a size, chosen where placed) and quotas
 * counting slices as compute slices / 7 of a GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/mig.h"
#include "core/sched/sched.h"
#include "core/state/queuespec.h"
#include "core/state/spec.h"
#include "core/state/state.h"
#include "edge/edge.h"
#include "lib/strbuf.h"
#include "lib/xalloc.h"
#include "testutil.h"
#include "world.h"

static int parse(const char *yaml, struct xp_jobspec *s, char field[320], struct xp_err *err)
{
	return xp_jobspec_parse_text("t", yaml, strlen(yaml), 0, s, field, err);
}

static void test_spec_round_trip(void **state)
{
	(void)state;
	struct xp_jobspec s, s2;
	struct xp_err err = { 0 };
	char field[320];
	assert_int_equal(
		parse("command: [true]\nresources:\n  devices: {mig: {profile: 3G.40GB}}\n", &s,
		      field, &err),
		0);
	assert_string_equal(s.mig_profile, "3g.40gb");
	assert_int_equal(s.dev_count, 1);
	assert_int_equal(s.dev_milli, 3 * 1000 / 7); /* quotas: 3 slices of 7 */
	assert_int_equal(s.dev_mem_mib, 40192);	     /* the first table's 3g.40gb */
	assert_int_equal(xp_jobspec_check_submit(&s, "t", field, &err), 0);
	char *j = xp_jobspec_to_json(&s);
	assert_non_null(strstr(j, "\"mig\":{\"profile\":\"3g.40gb\"}"));
	assert_null(strstr(j, "compute_milli"));
	assert_int_equal(xp_jobspec_parse_text("t", j, strlen(j), 1, &s2, field, &err), 0);
	char *j2 = xp_jobspec_to_json(&s2);
	assert_string_equal(j, j2);
	struct xp_strtab *syms = xp_strtab_create();
	struct xp_request r1, r2;
	xp_jobspec_request(&s, syms, &r1);
	xp_jobspec_request(&s2, syms, &r2);
	assert_memory_equal(&r1, &r2, sizeof(r1));
	assert_string_equal(xp_strtab_str(syms, r1.mig), "3g.40gb");
	xp_strtab_destroy(syms);
	free(j);
	free(j2);
	xp_jobspec_free(&s);
	xp_jobspec_free(&s2);
}

static void expect_refused(const char *yaml, const char *field_want, const char *text)
{
	struct xp_jobspec s;
	struct xp_err err = { 0 };
	char field[320] = "";
	int rc = parse(yaml, &s, field, &err);
	if (rc == 0) {
		rc = xp_jobspec_check_submit(&s, "t", field, &err);
		xp_jobspec_free(&s);
	}
	assert_true(rc < 0);
	if (!strstr(field, field_want) || !strstr(err.text, text))
		fail_msg("field '%s', error '%s'; wanted '%s' and '%s'", field, err.text,
			 field_want, text);
}

static void test_spec_refusals(void **state)
{
	(void)state;
	expect_refused("resources: {devices: {fraction: 0.5, mig: {profile: 3g.40gb}}}\n",
		       "resources.devices.mig", "compute_milli and fraction");
	expect_refused("resources: {devices: {compute_milli: 500, mig: {profile: 3g.40gb}}}\n",
		       "resources.devices.mig", "compute_milli and fraction");
	expect_refused("resources: {devices: {count: 2, mig: {profile: 3g.40gb}}}\n",
		       "resources.devices", "count");
	expect_refused("resources: {devices: {memory: 10Gi, mig: {profile: 3g.40gb}}}\n",
		       "resources.devices.mig", "memory");
	expect_refused("resources: {devices: {mig: {}}}\n", "resources.devices.mig",
		       "profile is required");
	expect_refused("resources: {devices: {mig: {profile: '3g 40gb'}}}\n",
		       "resources.devices.mig", "expected a MIG profile name");
	expect_refused("resources: {devices: {mig: {size: 3}}}\n", "resources.devices.mig", "size");
}

/* a node with n GPUs of model in mode (NULL: the default), or with the
 * partitions of a discovered GPU (parts: a JSON list) */
static void add_node(struct world *w, const char *name, const char *model, const char *mode,
		     const char *parts)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "{\"version\":1,\"nodes\":[{\"name\":\"%s\",\"cpu\":32,\"memory\":262144,"
		 "\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"%s\","
		 "\"memory\":81920,\"count\":2%s%s%s%s}]}]}",
		 name, model, mode ? ",\"mode\":\"" : "", mode ? mode : "", mode ? "\"" : "",
		 parts ? parts : "");
	assert_int_equal(world_apply(w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, buf)), 0);
}

static int possible(struct world *w, const char *yaml, char field[320], struct xp_err *err)
{
	struct xp_jobspec s;
	assert_int_equal(parse(yaml, &s, field, err), 0);
	int rc = xp_state_possible(w->st, &s, field, err);
	xp_jobspec_free(&s);
	return rc;
}

static void test_possible(void **state)
{
	(void)state;
	struct world w;
	struct xp_err err = { 0 };
	char field[320] = "";
	const char *mig3 = "resources: {devices: {mig: {profile: 3g.40gb}}}\n";
	world_init(&w);
	/* an unknown name, before any node and after */
	const char *bad = "resources: {devices: {mig: {profile: 3g.99gb}}}\n";
	assert_int_equal(possible(&w, bad, field, &err), XP_EINVAL);
	assert_string_equal(field, "resources.devices.mig.profile");
	assert_non_null(strstr(err.text, "unknown MIG profile '3g.99gb' (valid: 1g.5gb, "));
	assert_non_null(strstr(err.text, "3g.40gb"));
	add_node(&w, "plain", "A100-SXM4-80GB", NULL, NULL);
	assert_int_equal(possible(&w, bad, field, &err), XP_EINVAL);
	assert_int_equal(possible(&w, mig3, field, &err), XP_ENOCONFIG);
	assert_string_equal(field, "resources.devices.mig");
	assert_non_null(strstr(err.text, "MIG partitions"));
	/* an emulated A100-80GB in mode mig offers its built-in table */
	add_node(&w, "mig", "A100-SXM4-80GB", "mig", NULL);
	assert_int_equal(possible(&w, mig3, field, &err), 0);
	assert_int_equal(
		possible(&w, "resources: {devices: {mig: {profile: 3g.20gb}}}\n", field, &err),
		XP_ENOCONFIG);
	assert_string_equal(field, "resources.devices.mig.profile");
	assert_non_null(strstr(err.text, "offered: 1g.10gb, 1g.10gb+me"));
	/* partitions reported by a node win over the table */
	add_node(&w, "parts", "H100", "mig",
		 ",\"partitions\":[{\"name\":\"1g.12gb\",\"compute_milli\":142,"
		 "\"memory\":12288,\"max\":7}]");
	assert_int_equal(
		possible(&w, "resources: {devices: {mig: {profile: 1g.12gb}}}\n", field, &err),
		0); /* no table has 1g.12gb, but a node offers it */
	world_free(&w);
}

/* ---- scheduling: random submits and finishes against the lattice ---- */

static const char *const profiles[] = { "1g.10gb", "1g.20gb", "2g.20gb",
					"3g.40gb", "4g.40gb", "7g.80gb" };
#define NPROF (sizeof(profiles) / sizeof(profiles[0]))
#define NGPU  4 /* 2 nodes x 2 GPUs */

/* The reference: a lattice per GPU from the running jobs' allocations
 * alone; every slice must place (no overlap, a valid placement) */
static void reference(struct world *w, struct xp_mig_gpu *g)
{
	const struct xp_mig_table *t = xp_mig_table_find("A100-80GB");
	for (int i = 0; i < NGPU; i++)
		xp_mig_gpu_init(&g[i], i < 2 ? t : xp_mig_table_find("H100-80GB"));
	for (size_t i = 0; i < w->st->jobs.n; i++) {
		const struct xp_job *j = w->st->jobs.v[i];
		if (j->state != XP_JOB_RUNNING)
			continue;
		const struct xp_alloc *a = &j->allocs[0];
		assert_int_equal(a->ndev, 1);
		assert_true(a->mig >= 1);
		struct xp_mig_gpu *gg = &g[a->node * 2 + a->devs[0]];
		/* a name is not one kind everywhere: 1g.10gb is A100-40GB's 1g x2 */
		int kind = xp_mig_profile_find(gg->t, j->spec.mig_profile, NULL);
		assert_int_equal(a->mig - 1, kind);
		struct xp_err err = { 0 };
		if (xp_mig_place(gg, kind, a->mig_start, &err) < 0)
			fail_msg("job %llu: %s", (unsigned long long)j->id, err.text);
	}
}

/* No pending job could take a placement the reference has free */
static void none_placeable_left(struct world *w, const struct xp_mig_gpu *g)
{
	for (size_t i = 0; i < w->st->jobs.n; i++) {
		const struct xp_job *j = w->st->jobs.v[i];
		if (j->state != XP_JOB_PENDING)
			continue;
		for (int d = 0; d < NGPU; d++)
			if (xp_mig_free_placements(
				    &g[d], xp_mig_profile_find(g[d].t, j->spec.mig_profile, NULL),
				    NULL))
				fail_msg("job %llu (%s) pending, GPU %d has room",
					 (unsigned long long)j->id, j->spec.mig_profile, d);
	}
}

static void test_random(void **state)
{
	(void)state;
	struct world w;
	struct xp_mig_gpu g[NGPU];
	uint64_t seed = 12345;
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("default")), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	add_node(&w, "a", "A100-SXM4-80GB", "mig", NULL);
	add_node(&w, "h", "H100-SXM5-80GB", "mig", NULL);
	for (int step = 0; step < 400; step++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		unsigned r = (unsigned)(seed >> 33);
		if (r % 3) {
			char yaml[160];
			snprintf(yaml, sizeof(yaml),
				 "command: [true]\nresources: {devices: {mig: {profile: %s}}}\n",
				 profiles[(r / 3) % NPROF]);
			assert_true(world_submit(&w, "default", yaml, NULL) > 0);
		} else {
			size_t run = 0, pick;
			for (size_t i = 0; i < w.st->jobs.n; i++)
				run += w.st->jobs.v[i]->state == XP_JOB_RUNNING;
			pick = run ? (r / 3) % run : 0;
			for (size_t i = 0; run && i < w.st->jobs.n; i++)
				if (w.st->jobs.v[i]->state == XP_JOB_RUNNING && pick-- == 0) {
					assert_int_equal(
						world_apply(&w, "job.finish",
							    xp_rec_job_finish(w.st->jobs.v[i]->id,
									      XP_JOB_SUCCEEDED, 0,
									      NULL)),
						0);
					break;
				}
		}
		w.now += 1000;
		world_cycle(&w);
		reference(&w, g);
		none_placeable_left(&w, g);
	}
	char *live = xp_state_snapshot(w.st);
	char *full = world_replay(&w, w.log.n, NULL, 0);
	assert_string_equal(live, full);
	assert_non_null(strstr(live, "\"mig\""));
	free(live);
	free(full);
	world_free(&w);
}

/* xpool's placement on an empty A100: a 3g at start 4 keeps the 4g */
static void test_placement(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("default")), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	add_node(&w, "a", "A100-SXM4-80GB", "mig", NULL);
	uint64_t id = world_submit(
		&w, "default", "command: [true]\nresources: {devices: {mig: {profile: 3g.40gb}}}\n",
		NULL);
	assert_true(id > 0);
	struct xp_explain ex;
	int fits;
	xp_state_explain(w.st, xp_state_job(w.st, id), &ex, &fits);
	assert_true(fits);
	assert_string_equal(ex.mig, "MIG 3g.40gb: node a GPU 0, placement {4,4}");
	world_cycle(&w);
	const struct xp_job *j = xp_state_job(w.st, id);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_int_equal(j->allocs[0].mig, XP_MIG_3G + 1);
	assert_int_equal(j->allocs[0].mig_start, 4);
	/* fill both GPUs: a 7g on GPU 1, then a 3g at 0 beside the first */
	const char *y3 = "command: [true]\nresources: {devices: {mig: {profile: 3g.40gb}}}\n";
	const char *y7 = "command: [true]\nresources: {devices: {mig: {profile: 7g.80gb}}}\n";
	assert_true(world_submit(&w, "default", y7, NULL) > 0);
	world_cycle(&w);
	assert_true(world_submit(&w, "default", y3, NULL) > 0);
	world_cycle(&w);
	uint64_t last = world_submit(&w, "default", y3, NULL);
	world_cycle(&w);
	xp_state_explain(w.st, xp_state_job(w.st, last), &ex, &fits);
	assert_false(fits);
	assert_string_equal(ex.mig,
			    "MIG 3g.40gb: none of the 2 GPUs offering it has a free placement");
	struct xp_sb sb = { 0 };
	xp_explain_summary(&ex, fits, 1, &sb);
	assert_non_null(strstr(sb.s, "none of the 2 GPUs"));
	xp_sb_free(&sb);
	world_free(&w);
}

/* A real node's GPUs: profiles and placements from discovery's attributes
 * (a model without a built-in table) */
static void test_discovered(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("default")), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	add_node(&w, "r", "NVIDIA X200", "mig",
		 ",\"partitions\":[{\"name\":\"2g.24gb\",\"compute_milli\":285,"
		 "\"memory\":24576,\"max\":3}],\"attributes\":{\"mig_profiles\":"
		 "\"2g.24gb:14:32\",\"mig_placements\":\"2g.24gb:0+2,2+2,4+2\"}");
	uint64_t ids[7];
	for (int i = 0; i < 7; i++)
		ids[i] = world_submit(
			&w, "default",
			"command: [true]\nresources: {devices: {mig: {profile: 2g.24gb}}}\n", NULL);
	world_cycle(&w);
	unsigned seen[2] = { 0 };
	for (int i = 0; i < 6; i++) {
		const struct xp_job *j = xp_state_job(w.st, ids[i]);
		assert_int_equal(j->state, XP_JOB_RUNNING);
		assert_int_equal(j->allocs[0].mig, XP_MIG_2G + 1);
		assert_int_equal(j->allocs[0].mig_start % 2, 0);
		assert_true(j->allocs[0].mig_start <= 4);
		assert_int_equal(j->allocs[0].dev_mem_mib, 24576);
		seen[j->allocs[0].devs[0]] |= 1u << j->allocs[0].mig_start;
	}
	assert_int_equal(seen[0], 0x15);
	assert_int_equal(seen[1], 0x15);
	assert_int_equal(xp_state_job(w.st, ids[6])->state, XP_JOB_PENDING);
	world_free(&w);
}

/* A gang of slices on one node: placed replica by replica, each its own */
static void test_gang(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("default")), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	add_node(&w, "a", "A100-SXM4-80GB", "mig", NULL);
	uint64_t id = world_submit(&w, "default",
				   "command: [true]\nreplicas: 2\ngang: {colocate: node}\n"
				   "resources: {devices: {mig: {profile: 7g.80gb}}}\n",
				   NULL);
	assert_true(id > 0);
	world_cycle(&w);
	const struct xp_job *j = xp_state_job(w.st, id);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_int_equal(j->allocs[0].mig, XP_MIG_7G + 1);
	assert_int_equal(j->allocs[1].mig, XP_MIG_7G + 1);
	assert_int_not_equal(j->allocs[0].devs[0], j->allocs[1].devs[0]);
	world_free(&w);
}

/* ---- mig: any ---- */

static void test_any_spec(void **state)
{
	(void)state;
	struct xp_jobspec s, s2;
	struct xp_err err = { 0 };
	char field[320];
	assert_int_equal(parse("command: [true]\nresources:\n  devices: {mig: any, memory: 15Gi}\n",
			       &s, field, &err),
			 0);
	assert_true(xp_jobspec_mig_any(&s));
	assert_int_equal(s.dev_milli, 1); /* sized by memory alone: any compute */
	assert_int_equal(s.dev_mem_mib, 15360);
	assert_int_equal(s.dev_by_mem, 0);
	char *j = xp_jobspec_to_json(&s);
	assert_non_null(strstr(j, "\"mig\":\"any\""));
	assert_non_null(strstr(j, "\"memory\":15360"));
	assert_int_equal(xp_jobspec_parse_text("t", j, strlen(j), 1, &s2, field, &err), 0);
	char *j2 = xp_jobspec_to_json(&s2);
	assert_string_equal(j, j2);
	struct xp_strtab *syms = xp_strtab_create();
	struct xp_request r;
	xp_jobspec_request(&s2, syms, &r);
	assert_true(r.mig_any);
	xp_strtab_destroy(syms);
	free(j);
	free(j2);
	xp_jobspec_free(&s);
	xp_jobspec_free(&s2);
	/* the map form and a compute size */
	assert_int_equal(parse("resources: {devices: {mig: {profile: ANY}, compute_milli: 300}}\n",
			       &s, field, &err),
			 0);
	assert_true(xp_jobspec_mig_any(&s));
	assert_int_equal(s.dev_milli, 300);
	xp_jobspec_free(&s);
	expect_refused("resources: {devices: {mig: any}}\n", "resources.devices.mig",
		       "any needs a size");
	expect_refused("resources: {devices: {mig: any, count: 2, memory: 5Gi}}\n",
		       "resources.devices", "count");
	expect_refused("resources: {devices: {mig: some}}\n", "resources.devices.mig",
		       "any or a map");
}

static void test_any_possible(void **state)
{
	(void)state;
	struct world w;
	struct xp_err err = { 0 };
	char field[320] = "";
	const char *small = "resources: {devices: {mig: any, memory: 15Gi}}\n";
	world_init(&w);
	add_node(&w, "plain", "A100-SXM4-80GB", NULL, NULL);
	assert_int_equal(possible(&w, small, field, &err), XP_ENOCONFIG);
	assert_string_equal(field, "resources.devices.mig");
	assert_non_null(strstr(err.text, "MIG partitions"));
	add_node(&w, "mig", "A100-SXM4-80GB", "mig", NULL);
	assert_int_equal(possible(&w, small, field, &err), 0);
	/* more memory than any profile of a registered node has */
	assert_int_equal(
		possible(&w, "resources: {devices: {mig: any, memory: 90Gi}}\n", field, &err),
		XP_ENOCONFIG);
	assert_string_equal(field, "resources.devices.mig");
	assert_non_null(strstr(err.text, "no MIG profile of a registered node has 1 compute "
					 "slices and 90.0 GiB (offered: 1g.10gb, "));
	world_free(&w);
}

/* sized by memory: 15 GiB is 1g.20gb on an A100-80GB (1g.10gb is too
 * small); by compute: 300 milli is 3 slices, a 3g.40gb; journaled and
 * explained with the profile it took, counted as its profile's milli */
static void test_any_place(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("default")), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	add_node(&w, "a", "A100-SXM4-80GB", "mig", NULL);
	uint64_t mem = world_submit(
		&w, "default", "command: [true]\nresources: {devices: {mig: any, memory: 15Gi}}\n",
		NULL);
	uint64_t cmp = world_submit(
		&w, "default",
		"command: [true]\nresources: {devices: {mig: any, compute_milli: 300}}\n", NULL);
	assert_true(mem > 0 && cmp > 0);
	struct xp_explain ex;
	int fits;
	xp_state_explain(w.st, xp_state_job(w.st, cmp), &ex, &fits);
	assert_true(fits);
	assert_string_equal(ex.mig, "MIG any (300 milli, 0 MiB) takes 3g.40gb: node a GPU 0, "
				    "placement {4,4}");
	world_cycle(&w);
	const struct xp_job *j = xp_state_job(w.st, mem);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_int_equal(j->allocs[0].mig, XP_MIG_1G_2X + 1);
	assert_int_equal(j->allocs[0].dev_mem_mib, 19968);
	assert_int_equal(j->allocs[0].dev_milli, 1000 / 7);
	assert_string_equal(xp_state_mig_profile(w.st, &j->allocs[0])->name, "1g.20gb");
	j = xp_state_job(w.st, cmp);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_int_equal(j->allocs[0].mig, XP_MIG_3G + 1);
	assert_int_equal(j->allocs[0].dev_milli, 3 * 1000 / 7);
	assert_string_equal(xp_state_mig_profile(w.st, &j->allocs[0])->name, "3g.40gb");
	/* the choice is in the journal: replay gives the same state */
	char *live = xp_state_snapshot(w.st);
	char *full = world_replay(&w, w.log.n, NULL, 0);
	assert_string_equal(live, full);
	free(live);
	free(full);
	world_free(&w);
}

/* The smallest profile over all GPUs wins, by compute then memory: 4 GiB
 * is A100-40GB's 1g.5gb, though an A100-80GB node comes first; 6 GiB is
 * A100-80GB's 1g.10gb (9728 MiB), smaller than A100-40GB's (9984) */
static void test_any_smallest(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("default")), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	add_node(&w, "a80", "A100-SXM4-80GB", "mig", NULL);
	add_node(&w, "a40", "A100-SXM4-40GB", "mig", NULL);
	uint64_t a = world_submit(
		&w, "default", "command: [true]\nresources: {devices: {mig: any, memory: 4Gi}}\n",
		NULL);
	uint64_t b = world_submit(
		&w, "default", "command: [true]\nresources: {devices: {mig: any, memory: 6Gi}}\n",
		NULL);
	world_cycle(&w);
	const struct xp_job *j = xp_state_job(w.st, a);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_string_equal(w.st->c->nodes[j->allocs[0].node].name, "a40");
	assert_string_equal(xp_state_mig_profile(w.st, &j->allocs[0])->name, "1g.5gb");
	j = xp_state_job(w.st, b);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_string_equal(w.st->c->nodes[j->allocs[0].node].name, "a80");
	assert_string_equal(xp_state_mig_profile(w.st, &j->allocs[0])->name, "1g.10gb");
	world_free(&w);
}

/* Quotas count a slice as its compute slices / 7 of a GPU: a queue with
 * gpu max 1 runs two 3g (2 x 428 milli), not a third; mig: any counts the
 * profile it took (1 slice: 142) */
static void test_quota(void **state)
{
	(void)state;
	struct world w;
	struct xp_queuespec q;
	struct xp_err err = { 0 };
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("default")), 0);
	const char *qd = "{name: default, quota: {gpu: {max: 1}}}";
	assert_int_equal(xp_queuespec_parse_text("q", qd, strlen(qd), 0, 1, &q, NULL, &err), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_define(&q)), 0);
	add_node(&w, "a", "A100-SXM4-80GB", "mig", NULL);
	const char *y3 = "command: [true]\nresources: {devices: {mig: {profile: 3g.40gb}}}\n";
	uint64_t id[3];
	for (int i = 0; i < 3; i++)
		id[i] = world_submit(&w, "default", y3, NULL);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, id[1])->state, XP_JOB_RUNNING);
	assert_int_equal(xp_state_job(w.st, id[2])->state, XP_JOB_PENDING);
	struct xp_admission ad;
	xp_state_admission(w.st, xp_state_job(w.st, id[2]), &ad);
	assert_true(ad.quota_blocked);
	assert_int_equal(ad.res, XP_RES_DEV + XP_CLASS_GPU);
	assert_int_equal(ad.used, 2 * 428);
	xp_admission_free(&ad);
	/* 1 slice of any size still fits under the max: 856 + 142 <= 1000 */
	uint64_t any = world_submit(
		&w, "default", "command: [true]\nresources: {devices: {mig: any, memory: 5Gi}}\n",
		NULL);
	world_cycle(&w);
	assert_int_equal(xp_state_job(w.st, any)->state, XP_JOB_RUNNING);
	assert_int_equal(xp_state_job(w.st, any)->allocs[0].dev_milli, 142);
	assert_int_equal(w.st->queues.v[0].usage[XP_RES_DEV + XP_CLASS_GPU], 2 * 428 + 142);
	world_free(&w);
}

/* Warm instances steer placement: a 3g takes the warm 3g's start (0, not
 * 4 as on an empty GPU); a 1g goes where it displaces no warm instance:
 * beside GPU 1's warm 3g at 4 (not at 6, its pick on an empty GPU), not
 * on GPU 0 under a warm 7g */
static void test_warm(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("default")), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	add_node(&w, "a", "A100-SXM4-80GB", "mig", NULL);
	assert_int_equal(xp_state_sched(w.st, NULL), 0);
	uint8_t warm[XP_MIG_NKINDS] = { 0 };
	warm[XP_MIG_3G] = 1u << 0;
	xp_sched_set_mig_warm(w.st->sched, 0, 0, warm, 0);
	xp_sched_set_mig_warm(w.st->sched, 0, 1, warm, 0);
	uint64_t id = world_submit(
		&w, "default", "command: [true]\nresources: {devices: {mig: {profile: 3g.40gb}}}\n",
		NULL);
	struct xp_explain ex;
	int fits;
	xp_state_explain(w.st, xp_state_job(w.st, id), &ex, &fits);
	assert_string_equal(ex.mig, "MIG 3g.40gb: node a GPU 0, placement {0,4}, a warm instance");
	world_cycle(&w);
	const struct xp_job *j = xp_state_job(w.st, id);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_int_equal(j->allocs[0].mig_start, 0);
	/* GPU 1: a warm 3g at 4; a 1g goes beside it, not onto it */
	warm[XP_MIG_3G] = 1u << 4;
	xp_sched_set_mig_warm(w.st->sched, 0, 1, warm, 0);
	uint8_t warm7[XP_MIG_NKINDS] = { 0 }; /* GPU 0: a warm 7g over every slice */
	warm7[XP_MIG_7G] = 1;
	xp_sched_set_mig_warm(w.st->sched, 0, 0, warm7, 0);
	id = world_submit(&w, "default",
			  "command: [true]\nresources: {devices: {mig: {profile: 1g.10gb}}}\n",
			  NULL);
	world_cycle(&w);
	j = xp_state_job(w.st, id);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_int_equal(j->allocs[0].devs[0], 1);
	assert_true(j->allocs[0].mig_start < 4);
	world_free(&w);
}

/* Slices an instance xpool did not create holds are never placed on: a
 * 3g goes to GPU 0's free half, a 4g (start 0 only) waits */
static void test_foreign(void **state)
{
	(void)state;
	struct world w;
	uint8_t none[XP_MIG_NKINDS] = { 0 };
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("default")), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	add_node(&w, "a", "A100-SXM4-80GB", "mig", NULL);
	assert_int_equal(xp_state_sched(w.st, NULL), 0);
	xp_sched_set_mig_warm(w.st->sched, 0, 0, none, 0x0f);
	xp_sched_set_mig_warm(w.st->sched, 0, 1, none, 0xff);
	uint64_t a = world_submit(
		&w, "default", "command: [true]\nresources: {devices: {mig: {profile: 3g.40gb}}}\n",
		NULL);
	uint64_t b = world_submit(
		&w, "default", "command: [true]\nresources: {devices: {mig: {profile: 4g.40gb}}}\n",
		NULL);
	world_cycle(&w);
	const struct xp_job *j = xp_state_job(w.st, a);
	assert_int_equal(j->state, XP_JOB_RUNNING);
	assert_int_equal(j->allocs[0].devs[0], 0);
	assert_int_equal(j->allocs[0].mig_start, 4);
	assert_int_equal(xp_state_job(w.st, b)->state, XP_JOB_PENDING);
	struct xp_explain ex;
	int fits;
	xp_state_explain(w.st, xp_state_job(w.st, b), &ex, &fits);
	assert_false(fits);
	assert_string_equal(ex.mig,
			    "MIG 4g.40gb: none of the 2 GPUs offering it has a free placement");
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_round_trip),
		cmocka_unit_test(test_spec_refusals),
		cmocka_unit_test(test_possible),
		cmocka_unit_test(test_placement),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_discovered),
		cmocka_unit_test(test_gang),
		cmocka_unit_test(test_any_spec),
		cmocka_unit_test(test_any_possible),
		cmocka_unit_test(test_any_place),
		cmocka_unit_test(test_any_smallest),
		cmocka_unit_test(test_quota),
		cmocka_unit_test(test_warm),
		cmocka_unit_test(test_foreign),
	};
	return xp_run_tests(tests, NULL, NULL);
}
