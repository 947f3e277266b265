/*
 * test_services: services in the state layer (issue 22), driven by random
 * records as the owner would send them - create, scale, update (a new
 * version or not, a canary or not - another version while a canary is held
 * is refused), promote, rollback, rolled, delete, and
 * the replica jobs' submits, starts and ends - and checked after every
 * step against a naive model written apart from service.c: the count
 * wanted, the version and the one before, the next version's number, the
 * canary, the rollout flag, the restart streak and count, and which
 * records are refused. At the end, replaying the journal from the start
 * and from a snapshot taken midway gives a byte-identical snapshot.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/state.h"
#include "edge/edge.h"
#include "lib/rng.h"
#include "world.h"

#define NSVC 3

struct model { /* one service as the naive model sees it */
	int exists, min, max, desired, version, prev_version, has_prev, next_version;
	int canary, rolling, streak, env, prev_env; /* env: its template's V */
	long restarts;
	uint64_t first_job;
};

static void parse(struct xp_servicespec *sp, int k, int env, int drain)
{
	char doc[400];
	struct xp_err err = { 0 };
	snprintf(doc, sizeof(doc),
		 "name: s%d\ntenant: team-a\nreplicas: {min: 1, max: 4}\ndrain: %ds\n"
		 "template: {command: [serve], resources: {cpu: 1, memory: 1Gi}, env: {V: '%d'}}\n",
		 k, drain, env);
	if (xp_servicespec_parse_text("t", doc, strlen(doc), 0, sp, NULL, &err) < 0)
		fail_msg("spec: %s", err.text);
}

static void check(struct world *w, const struct model *m)
{
	for (int k = 0; k < NSVC; k++) {
		char name[8];
		snprintf(name, sizeof(name), "s%d", k);
		long i = xp_state_service(w->st, name);
		assert_int_equal(i >= 0, m[k].exists);
		if (i < 0)
			continue;
		const struct xp_service *s = &w->st->services.v[i];
		assert_int_equal(s->desired, m[k].desired);
		assert_int_equal(s->version, m[k].version);
		assert_int_equal(s->next_version, m[k].next_version);
		assert_int_equal(s->prev != NULL, m[k].has_prev);
		if (m[k].has_prev)
			assert_int_equal(s->prev_version, m[k].prev_version);
		assert_int_equal(s->canary, m[k].canary);
		assert_int_equal(s->rolling, m[k].rolling);
		assert_int_equal(s->fail_streak, m[k].streak);
		assert_int_equal((long)s->restarts, m[k].restarts);
		for (size_t j = 0; j < s->jobs.n; j++) /* its list: its live replicas */
			assert_false(xp_job_terminal(xp_state_job(w->st, s->jobs.v[j])->state));
	}
}

/* a replica of s k's current version; its id, or 0 when refused */
static uint64_t replica(struct world *w, int k)
{
	char name[8];
	snprintf(name, sizeof(name), "s%d", k);
	long i = xp_state_service(w->st, name);
	if (i < 0)
		return 0;
	struct xp_jobspec spec;
	struct xp_err err = { 0 };
	const struct xp_service *s = &w->st->services.v[i];
	if (xp_servicespec_replica(&s->spec, s->version, &spec, &err) < 0)
		fail_msg("replica: %s", err.text);
	uint64_t id = w->st->next_job_id;
	int rc = world_apply(w, "job.submit", xp_rec_job_submit(id, "team-a", NULL, &spec));
	xp_jobspec_free(&spec);
	return rc == 0 ? id : 0;
}

/* a live replica of s k ends: cancelled (not a failure) or failed */
static void end_one(struct world *w, struct model *m, int k, struct xp_rng *rng)
{
	char name[8];
	snprintf(name, sizeof(name), "s%d", k);
	long i = xp_state_service(w->st, name);
	if (i < 0 || !w->st->services.v[i].jobs.n)
		return;
	const struct xp_service *s = &w->st->services.v[i];
	struct xp_job *j = xp_state_job(w->st, s->jobs.v[xp_rng_below(rng, s->jobs.n)]);
	if (j->state == XP_JOB_RUNNING && xp_rng_below(rng, 2)) {
		int ran_long = w->now - j->started_at >= 10 * 60 * 1000;
		assert_int_equal(world_apply(w, "job.finish",
					     xp_rec_job_finish(j->id, XP_JOB_FAILED, 1, "x")),
				 0);
		m[k].streak = ran_long ? 1 : m[k].streak + 1;
		m[k].restarts++;
	} else {
		assert_int_equal(world_apply(w, "job.cancel", xp_rec_job_cancel(j->id, "x")), 0);
	}
}

static void step(struct world *w, struct model *m, struct xp_rng *rng)
{
	int k = (int)xp_rng_below(rng, NSVC), rc;
	char name[8];
	struct xp_servicespec sp;
	struct model *x = &m[k];
	snprintf(name, sizeof(name), "s%d", k);
	switch (xp_rng_below(rng, 12)) {
	case 0: /* create: refused when it exists */
		parse(&sp, k, 0, 2);
		rc = world_apply(w, "service.create", xp_rec_service_create(&sp));
		assert_int_equal(rc == 0, !x->exists);
		if (!x->exists)
			*x = (struct model){ .exists = 1, .min = 1, .max = 4, .desired = 1,
					     .version = 1, .next_version = 2,
					     .first_job = w->st->next_job_id };
		xp_servicespec_free(&sp);
		break;
	case 1: { /* scale: within min..max only */
		int n = (int)xp_rng_below(rng, 6);
		rc = world_apply(w, "service.scale", xp_rec_service_scale(name, (uint32_t)n, "t"));
		int ok = x->exists && n >= x->min && n <= x->max;
		assert_int_equal(rc == 0, ok);
		if (ok)
			x->desired = n;
		break;
	}
	case 2:
	case 3: { /* update: a new template is a new version; the drain alone is not */
		static int envs;
		int fresh = xp_rng_below(rng, 3) != 0, canary = (int)xp_rng_below(rng, 3);
		int env = fresh ? ++envs : x->env;
		parse(&sp, k, env, fresh ? 2 : 3 + (int)xp_rng_below(rng, 5));
		rc = world_apply(w, "service.update",
				 xp_rec_service_update(&sp, (uint32_t)canary, 25));
		xp_servicespec_free(&sp);
		/* refused: no service; or another version while a canary is held */
		assert_int_equal(rc == 0, x->exists && !(fresh && x->canary));
		if (rc == 0 && fresh) {
			x->prev_env = x->env;
			x->prev_version = x->version;
			x->has_prev = 1;
			x->version = x->next_version++;
			x->canary = canary;
			x->rolling = 1;
		}
		if (rc == 0)
			x->env = env;
		break;
	}
	case 4: /* promote: only a canary */
		rc = world_apply(w, "service.promote", xp_rec_service_named(name));
		assert_int_equal(rc == 0, x->exists && x->canary > 0);
		if (rc == 0)
			x->canary = 0;
		break;
	case 5: /* rollback: only with a version before */
		rc = world_apply(w, "service.rollback", xp_rec_service_named(name));
		assert_int_equal(rc == 0, x->exists && x->has_prev);
		if (rc == 0) {
			int v = x->version;
			x->version = x->prev_version;
			x->prev_version = v;
			x->canary = 0;
			x->rolling = 1;
			int e = x->env;
			x->env = x->prev_env;
			x->prev_env = e;
		}
		break;
	case 6: /* rolled: only a rollout without a canary */
		rc = world_apply(w, "service.rolled", xp_rec_service_named(name));
		assert_int_equal(rc == 0, x->exists && x->rolling && !x->canary);
		if (rc == 0)
			x->rolling = 0;
		break;
	case 7:
	case 8: /* a replica: accepted only while the service exists */
		assert_int_equal(replica(w, k) != 0, x->exists);
		break;
	case 9:
		end_one(w, m, k, rng);
		break;
	case 10: /* delete */
		rc = world_apply(w, "service.delete", xp_rec_service_delete(name));
		assert_int_equal(rc == 0, x->exists);
		if (rc == 0)
			memset(x, 0, sizeof(*x));
		break;
	default:
		world_cycle(w);
		w->now += (int64_t)xp_rng_below(rng, 120000);
	}
}

static void test_random_services(void **state)
{
	(void)state;
	struct world w;
	struct model m[NSVC];
	struct xp_rng rng;
	char *snap = NULL;
	size_t snap_seq = 0;
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("team-a")), 0);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	for (int n = 0; n < 3; n++) {
		char name[16];
		snprintf(name, sizeof(name), "cpu-%d", n);
		char *d = world_node_doc(name, 0, NULL, 8);
		assert_int_equal(world_apply(&w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, d)),
				 0);
		free(d);
	}
	memset(m, 0, sizeof(m));
	xp_rng_seed(&rng, 22);
	for (int i = 0; i < 3000; i++) {
		step(&w, m, &rng);
		check(&w, m);
		if (i == 1500) {
			snap = xp_state_snapshot(w.st);
			snap_seq = w.log.n;
		}
	}
	char *live = xp_state_snapshot(w.st);
	char *full = world_replay(&w, w.log.n, NULL, 0);
	char *tail = world_replay(&w, w.log.n, snap, snap_seq);
	assert_string_equal(live, full);
	assert_string_equal(live, tail);
	print_message("  %zu records, %zu services left, %llu jobs\n", w.log.n, w.st->services.n,
		      (unsigned long long)w.st->next_job_id - 1);
	free(live);
	free(full);
	free(tail);
	free(snap);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_services),
	};
	return xp_run_tests(tests, NULL, NULL);
}
