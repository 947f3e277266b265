/*
 * test_alert: the alert engine (src/server/alert.c).
 *
 * - a fault storm: a zone of 64 nodes lost with their 512 devices, the
 *   feed repeating them every 5 s, 10 flapping devices elsewhere, and three
 *   unrelated real faults: a handful of notifications, every fault in one
 *   of them, the reduction ratio printed;
 * - random signal sequences against the engine's promises: a notification
 *   lists as firing only subjects that fire at that moment, every subject
 *   that started firing appears in a notification of its group within
 *   group_wait + group_interval (or is flapping), no two notifications of a
 *   group come closer than group_interval unless the first was resolved;
 * - grouping, cooldown and recovery in a small exact scenario.
 */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/rng.h"
#include "lib/vec.h"
#include "lib/xalloc.h"
#include "server/alert.h"

struct sink {
	XP_VEC(json_t *) got;
	int64_t now;
};

static void collect(void *ctx, json_t *n)
{
	struct sink *k = ctx;
	json_object_set_new(n, "t", json_integer(k->now));
	xp_vec_push(&k->got, n);
}

static void sink_free(struct sink *k)
{
	for (size_t i = 0; i < k->got.n; i++)
		json_decref(k->got.v[i]);
	xp_vec_free(&k->got);
}

/* does any notification list subject (in any list)? */
static int mentioned(const struct sink *k, const char *subject)
{
	static const char *const lists[] = { "firing", "flapping", "transient", NULL };
	for (size_t i = 0; i < k->got.n; i++)
		for (const char *const *l = lists; *l; l++) {
			size_t j;
			json_t *e;
			json_array_foreach(json_object_get(k->got.v[i], *l), j, e) if (
				!strcmp(json_string_value(json_object_get(e, "subject")), subject)) return 1;
		}
	return 0;
}

static void tick(struct xp_alerts *a, struct sink *k, int64_t now)
{
	k->now = now;
	xp_alerts_tick(a, now, collect, k);
}

static void test_storm(void **state)
{
	(void)state;
	struct xp_alerts *a = xp_alerts_new(NULL);
	struct sink k = { 0 };
	struct xp_rng g;
	char name[64];
	xp_rng_seed(&g, 3);
	const int64_t S = 1000;
	for (int64_t t = 0; t <= 2 * 3600 * S; t += S) {
		/* zone z1: 64 nodes lost within 20 s of t = 60 s, back at 30 min; the feed
		 * repeats their state every 5 s */
		if (t >= 60 * S && t % (5 * S) == 0)
			for (int n = 0; n < 64; n++) {
				int lost = t >= 60 * S + (n % 20) * S && t < 1800 * S;
				snprintf(name, sizeof(name), "z1-n%02d", n);
				xp_alerts_signal(a, t, XP_AL_NODE_LOST, name, "z1", lost, "missed heartbeats");
				for (int d = 0; d < 8; d++) {
					snprintf(name, sizeof(name), "z1-n%02d/gpu%d", n, d);
					xp_alerts_signal(a, t, XP_AL_DEVICE_UNHEALTHY, name, "z1", lost,
							 "unreachable");
				}
			}
		/* zone z2: 10 devices flapping every 20 s for the first 40 minutes */
		if (t < 2400 * S && t % (20 * S) == 0)
			for (int d = 0; d < 10; d++) {
				snprintf(name, sizeof(name), "z2-n%d/gpu0", d);
				xp_alerts_signal(a, t, XP_AL_DEVICE_UNHEALTHY, name, "z2",
						 (int)((t / (20 * S) + d) % 2), "XID 79");
			}
		/* three unrelated real faults */
		if (t == 600 * S)
			xp_alerts_signal(a, t, XP_AL_NODE_LOST, "z3-n5", "z3", 1, "missed heartbeats");
		if (t == 900 * S)
			xp_alerts_signal(a, t, XP_AL_QUEUE_STARVED, "batch", "queues", 1,
					 "12 pending, none running for 10m");
		if (t == 1200 * S)
			xp_alerts_signal(a, t, XP_AL_JOB_FAILING, "job 4711", "team-a", 1,
					 "failed 3 times");
		tick(a, &k, t);
	}
	struct xp_alert_stats st;
	xp_alerts_get_stats(a, &st);
	/* every real fault is in a notification */
	for (int n = 0; n < 64; n++) {
		snprintf(name, sizeof(name), "z1-n%02d", n);
		assert_true(mentioned(&k, name));
		snprintf(name, sizeof(name), "z1-n%02d/gpu7", n);
		assert_true(mentioned(&k, name));
	}
	for (int d = 0; d < 10; d++) {
		snprintf(name, sizeof(name), "z2-n%d/gpu0", d);
		assert_true(mentioned(&k, name));
	}
	assert_true(mentioned(&k, "z3-n5") && mentioned(&k, "batch") && mentioned(&k, "job 4711"));
	uint64_t changes = st.signals - st.duplicates;
	print_message("storm: %llu signals (%llu repeats of a known state), %llu state changes "
		      "(%llu inside flaps), %llu faults -> %zu notifications: %.0fx fewer than "
		      "signals, %.0fx fewer than state changes\n",
		      (unsigned long long)st.signals, (unsigned long long)st.duplicates,
		      (unsigned long long)changes, (unsigned long long)st.flap_absorbed,
		      (unsigned long long)st.faults, k.got.n, (double)st.signals / (double)k.got.n,
		      (double)changes / (double)k.got.n);
	for (size_t i = 0; i < k.got.n; i++) {
		json_t *n = k.got.v[i];
		print_message("  t=%4llds %-8s %-16s %-6s firing %zu flapping %zu resolved %zu "
			      "transient %zu\n",
			      (long long)json_integer_value(json_object_get(n, "t")) / 1000,
			      json_string_value(json_object_get(n, "status")),
			      json_string_value(json_object_get(n, "rule")),
			      json_string_value(json_object_get(n, "group")),
			      json_array_size(json_object_get(n, "firing")),
			      json_array_size(json_object_get(n, "flapping")),
			      json_array_size(json_object_get(n, "resolved")),
			      json_array_size(json_object_get(n, "transient")));
	}
	assert_true(k.got.n <= 16);
	assert_true(changes / k.got.n >= 100);
	/* the zone came back: its groups ended resolved; active are the three
	 * faults that never cleared and the z2 devices whose flapping settled on
	 * unhealthy (the last toggle leaves the even-numbered ones unhealthy) */
	json_t *act = xp_alerts_active(a);
	assert_int_equal(json_array_size(act), 4);
	json_decref(act);
	sink_free(&k);
	xp_alerts_free(a);
}

/* a small exact scenario: grouping, interval, cooldown, resolution */
static void test_grouping(void **state)
{
	(void)state;
	struct xp_alert_opts o = { .group_wait_ms = 30000,
				   .group_interval_ms = 300000,
				   .repeat_ms = 3600000,
				   .flap_window_ms = 600000,
				   .flap_changes = 4 };
	struct xp_alerts *a = xp_alerts_new(&o);
	struct sink k = { 0 };
	xp_alerts_signal(a, 0, XP_AL_NODE_LOST, "n1", "z", 1, NULL);
	tick(a, &k, 10000);
	xp_alerts_signal(a, 20000, XP_AL_NODE_LOST, "n2", "z", 1, NULL);
	tick(a, &k, 29999);
	assert_int_equal(k.got.n, 0); /* waits group_wait for company */
	tick(a, &k, 30000);
	assert_int_equal(k.got.n, 1);
	assert_int_equal(json_array_size(json_object_get(k.got.v[0], "firing")), 2);
	/* a third node joins: sent at last + group_interval, not before */
	xp_alerts_signal(a, 60000, XP_AL_NODE_LOST, "n3", "z", 1, NULL);
	tick(a, &k, 329999);
	assert_int_equal(k.got.n, 1);
	tick(a, &k, 330000);
	assert_int_equal(k.got.n, 2);
	assert_int_equal(json_array_size(json_object_get(k.got.v[1], "firing")), 3);
	/* unchanged: repeated after the cooldown only */
	tick(a, &k, 330000 + 3599999);
	assert_int_equal(k.got.n, 2);
	tick(a, &k, 330000 + 3600000);
	assert_int_equal(k.got.n, 3);
	assert_true(json_is_true(json_object_get(k.got.v[2], "repeat")));
	/* all back: one resolved notification listing the three */
	int64_t t = 330000 + 3600000 + 1000;
	for (int i = 1; i <= 3; i++) {
		char n[8];
		snprintf(n, sizeof(n), "n%d", i);
		xp_alerts_signal(a, t, XP_AL_NODE_LOST, n, "z", 0, NULL);
	}
	tick(a, &k, t + 300000);
	assert_int_equal(k.got.n, 4);
	assert_string_equal(json_string_value(json_object_get(k.got.v[3], "status")), "resolved");
	assert_int_equal(json_array_size(json_object_get(k.got.v[3], "resolved")), 3);
	/* a blip shorter than group_wait is still reported, as transient */
	xp_alerts_signal(a, t + 400000, XP_AL_NODE_LOST, "n9", "y", 1, NULL);
	xp_alerts_signal(a, t + 405000, XP_AL_NODE_LOST, "n9", "y", 0, NULL);
	tick(a, &k, t + 440000);
	assert_int_equal(k.got.n, 5);
	assert_int_equal(json_array_size(json_object_get(k.got.v[4], "transient")), 1);
	sink_free(&k);
	xp_alerts_free(a);
}

/* random sequences: the promises hold */
static void test_random(void **state)
{
	(void)state;
	struct xp_alert_opts o = { .group_wait_ms = 5000,
				   .group_interval_ms = 20000,
				   .repeat_ms = 100000,
				   .flap_window_ms = 30000,
				   .flap_changes = 4 };
	for (uint64_t seed = 1; seed <= 20; seed++) {
		struct xp_alerts *a = xp_alerts_new(&o);
		struct sink k = { 0 };
		struct xp_rng g;
		int firing[40] = { 0 }, flapping[40] = { 0 }; /* flapping: reported so, not yet
							       * reported otherwise */
		int64_t started[40], last_sent[24];
		int last_firing[24] = { 0 };
		size_t seen = 0;
		for (int i = 0; i < 40; i++)
			started[i] = -1;
		for (int i = 0; i < 24; i++)
			last_sent[i] = -1;
		xp_rng_seed(&g, seed);
		for (int64_t t = 0; t < 600000; t += 1000) {
			for (int c = 0; c < 3; c++) {
				int s = (int)xp_rng_below(&g, 40);
				int f = (int)xp_rng_below(&g, 2);
				char name[16], grp[8];
				snprintf(name, sizeof(name), "s%d", s);
				snprintf(grp, sizeof(grp), "g%d", s % 8);
				xp_alerts_signal(a, t, s % 3, name, grp, f, NULL);
				if (f && !firing[s] && started[s] < 0 && !flapping[s])
					started[s] = t;
				firing[s] = f;
			}
			tick(a, &k, t);
			for (; seen < k.got.n; seen++) {
				json_t *n = k.got.v[seen], *e;
				size_t i;
				/* listed as firing only when firing now */
				json_array_foreach(json_object_get(n, "firing"), i, e)
				{
					int s = atoi(json_string_value(json_object_get(e, "subject")) + 1);
					assert_true(firing[s]);
					started[s] = -1;
					flapping[s] = 0;
				}
				json_array_foreach(json_object_get(n, "flapping"), i, e)
				{
					int s = atoi(json_string_value(json_object_get(e, "subject")) + 1);
					started[s] = -1;
					flapping[s] = 1;
				}
				static const char *const ended[] = { "transient", "resolved", NULL };
				for (const char *const *l = ended; *l; l++)
					json_array_foreach(json_object_get(n, *l), i, e)
					{
						int s = atoi(
							json_string_value(json_object_get(e, "subject")) +
							1);
						started[s] = -1;
						flapping[s] = 0;
					}
				/* after a firing notification, the group's next one waits
				 * group_interval */
				const char *gn = json_string_value(json_object_get(n, "group"));
				int rule = xp_alert_rule_parse(
					json_string_value(json_object_get(n, "rule")));
				int gi = rule * 8 + atoi(gn + 1);
				if (last_sent[gi] >= 0 && last_firing[gi])
					assert_true(t - last_sent[gi] >= o.group_interval_ms);
				last_sent[gi] = t;
				last_firing[gi] = !strcmp(
					json_string_value(json_object_get(n, "status")), "firing");
			}
			/* nothing that started firing waits longer than wait + interval */
			for (int s = 0; s < 40; s++)
				if (started[s] >= 0 && firing[s] &&
				    t - started[s] > o.group_wait_ms + o.group_interval_ms + 1000)
					fail_msg("seed %llu: s%d fires since %lld, not notified at %lld",
						 (unsigned long long)seed, s, (long long)started[s],
						 (long long)t);
		}
		sink_free(&k);
		xp_alerts_free(a);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_storm),
		cmocka_unit_test(test_grouping),
		cmocka_unit_test(test_random),
	};
	return xp_run_tests(tests, NULL, NULL);
}
