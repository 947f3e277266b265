/*
 * test_advise: GET /v1/advice and /v1/forecast against a real controller
 * on loopback. An agent's node with two GPUs reports them barely busy; a
 * whole-GPU job and a half-GPU job run there; a queue is guaranteed GPUs it
 * never uses; the price table has one cheap hour, twelve hours away from
 * the test's own (so no hour of the day changes what it checks). The
 * advice must name the oversized job and the share that could be smaller,
 * each with a saving; a tenant may not ask. The controller is seconds old,
 * so what needs history says so instead of guessing: the idle guarantee is
 * not judged (a note names the 24 h it needs) and the forecast has no model
 * (it names the 72 h it needs) - a new controller used to print an
 * all-zero model and 11,680 EUR/month saved on a guarantee "used 0.0 on
 * average over 7 days".
 */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "edge/edge.h"
#include "server/ctl.h"
#include "world.h"

static json_t *call(struct xp_ctl *ctl, const char *method, const char *path, const char *body,
		    long *status)
{
	return xp_test_json(ctl->addr, ctl->admin_token, method, path, body, status);
}

static json_t *find(json_t *advice, const char *kind)
{
	size_t i;
	json_t *a;
	json_array_foreach(advice, i, a) if (!strcmp(json_string_value(json_object_get(a, "kind")),
						     kind)) return a;
	return NULL;
}

static void test_advice(void **state)
{
	(void)state;
	char dir[] = "/tmp/xpadviseXXXXXX";
	assert_non_null(mkdtemp(dir));
	char cluster[4096];
	snprintf(cluster, sizeof(cluster), "%s/examples/clusters/small.yaml", XP_SOURCE_DIR);
	struct xp_ctl_opts o = { .data = dir, .listen = "127.0.0.1:0", .sync = 0, .cluster = cluster };
	struct xp_ctl *ctl = NULL;
	struct xp_err err = { 0 };
	long st;
	if (xp_ctl_start(&o, &ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	int cheap = (tm.tm_hour + 12) % 24; /* the run takes seconds: never in it */
	char prices[256];
	snprintf(prices, sizeof(prices),
		 "{\"currency\":\"EUR\",\"cpu\":0.04,\"devices\":{\"default\":2},"
		 "\"time_of_day\":[{\"from\":%d,\"to\":%d,\"factor\":0.5}]}",
		 cheap, cheap + 1);
	json_decref(call(ctl, "PUT", "/v1/prices", prices, &st));
	assert_int_equal(st, 200);
	json_decref(call(ctl, "POST", "/v1/agents",
			 "{\"version\":1,\"nodes\":[{\"name\":\"edge-1\",\"cpu\":16,\"memory\":65536,"
			 "\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"L4\","
			 "\"memory\":24576,\"count\":2}]}]}",
			 &st));
	assert_int_equal(st, 201);
	json_decref(call(ctl, "POST", "/v1/queues",
			 "{\"name\":\"reserved\",\"quota\":{\"gpu\":{\"guarantee\":\"8\"}}}", &st));
	assert_int_equal(st, 201);
	json_decref(call(ctl, "POST", "/v1/jobs",
			 "{\"node\":\"edge-1\",\"resources\":{\"cpu\":2,\"devices\":{\"count\":1}}}",
			 &st));
	assert_int_equal(st, 201);
	json_decref(call(ctl, "POST", "/v1/jobs",
			 "{\"node\":\"edge-1\",\"resources\":{\"cpu\":1,\"devices\":"
			 "{\"fraction\":0.5}}}",
			 &st));
	assert_int_equal(st, 201);
	/* one GPU of an 8-GPU node: the rest of the pool has room for it */
	json_decref(call(ctl, "POST", "/v1/jobs",
			 "{\"node\":\"gpu-a100-0\",\"resources\":{\"cpu\":1,\"devices\":"
			 "{\"count\":1}}}",
			 &st));
	assert_int_equal(st, 201);
	usleep(200000); /* all three start */
	/* GPU 0 (the whole job, lowest index) 5 % busy; GPU 1 (the share) using 2 GiB */
	json_decref(call(ctl, "POST", "/v1/nodes/edge-1/heartbeat",
			 "{\"devices\":[{\"health\":\"ok\",\"util_pct\":5,\"mem_used_mib\":1024},"
			 "{\"health\":\"ok\",\"util_pct\":40,\"mem_used_mib\":2048}]}",
			 &st));
	assert_int_equal(st, 200);
	json_t *r = call(ctl, "GET", "/v1/advice", NULL, &st);
	assert_int_equal(st, 200);
	json_t *adv = json_object_get(r, "advice");
	char *text = json_dumps(r, JSON_INDENT(1));
	print_message("%s\n", text);
	free(text);
	assert_null(find(adv, "idle_quota")); /* seconds of history: not judged */
	const char *note = json_string_value(json_array_get(json_object_get(r, "notes"), 0));
	assert_non_null(note);
	assert_non_null(strstr(note, "idle_quota"));
	assert_non_null(strstr(note, "24 h"));
	json_t *a = find(adv, "oversized_job");
	assert_non_null(a);
	assert_string_equal(json_string_value(json_object_get(a, "subject")), "job 1");
	a = find(adv, "smaller_share");
	assert_non_null(a);
	assert_string_equal(json_string_value(json_object_get(a, "subject")), "job 2");
	assert_non_null(strstr(json_string_value(json_object_get(a, "detail")), "of 12288 MiB"));
	assert_string_equal(json_string_value(json_object_get(r, "currency")), "EUR");
	json_decref(r);
	/* measured energy: two more beats at 300 W, then the job ends; its usage
	 * record takes the agents' figure (the L4 has no power model: 0 W) */
	usleep(300000);
	json_decref(call(ctl, "POST", "/v1/nodes/edge-1/heartbeat",
			 "{\"devices\":[{\"health\":\"ok\",\"power_w\":300},"
			 "{\"health\":\"ok\",\"power_w\":300}]}",
			 &st));
	usleep(300000);
	json_decref(call(ctl, "POST", "/v1/nodes/edge-1/heartbeat",
			 "{\"devices\":[{\"health\":\"ok\",\"power_w\":300},"
			 "{\"health\":\"ok\",\"power_w\":300}]}",
			 &st));
	json_decref(call(ctl, "POST", "/v1/jobs/1/cancel", NULL, &st));
	assert_int_equal(st, 200);
	r = call(ctl, "GET", "/v1/usage?by=job", NULL, &st);
	assert_int_equal(st, 200);
	double kwh1 = json_real_value(json_object_get(json_array_get(json_object_get(r, "rows"), 0),
						      "energy_kwh"));
	print_message("job 1 measured: %.9f kWh\n", kwh1);
	/* about 300 W for 0.6 s (the first beat had no power) */
	assert_true(kwh1 > 300 * 0.4 / 3.6e6 && kwh1 < 300 * 3.0 / 3.6e6);
	json_decref(r);
	/* job 1 (priority 0) ran outside the cheap hour; a node holding 1 of 8
	 * GPUs could be emptied */
	r = call(ctl, "GET", "/v1/advice", NULL, &st);
	adv = json_object_get(r, "advice");
	a = find(adv, "consolidate");
	assert_non_null(a);
	assert_string_equal(json_string_value(json_object_get(a, "subject")), "gpu-a100-0");
	assert_non_null(find(adv, "cheaper_hours"));
	json_decref(r);
	/* the forecast: too little history for a model, and it says so */
	r = call(ctl, "GET", "/v1/forecast?days=30&hours=12", NULL, &st);
	assert_int_equal(st, 200);
	assert_true(json_real_value(json_object_get(r, "history_hours")) < 1);
	assert_int_equal(json_integer_value(json_object_get(r, "history_needed_hours")), 72);
	assert_true(json_is_null(json_object_get(r, "model")));
	assert_int_equal(json_array_size(json_object_get(r, "forecast")), 0);
	assert_non_null(strstr(json_string_value(json_object_get(r, "why")), "needs 72 h"));
	assert_string_equal(json_string_value(json_object_get(r, "of")), "cost");
	json_decref(r);
	r = call(ctl, "GET", "/v1/forecast?days=1", NULL, &st);
	assert_int_equal(st, 400);
	json_decref(r);
	xp_ctl_stop(ctl);
	xp_test_rmdir(dir);
}

/* The idle-guarantee advice over two days of a state built from records
 * (no controller, so time is ours): queue a is guaranteed 4 of the pool's
 * 8 GPUs and never uses them while queue b borrows `borrowed`. What a
 * lowered guarantee saves is what the pool too left idle: nothing when b
 * borrowed all 8, 2 GPUs when b used 6, all 4 when b used 4 (fails when
 * the lent-out GPUs are counted as idle) */
static double idle_saving(int borrowed, char *detail, size_t len)
{
	struct world w;
	world_init(&w);
	w.now = 1000;
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("t")), 0);
	char *d = world_node_doc("n0", 8, "A100", 64);
	assert_int_equal(world_apply(&w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, d)), 0);
	free(d);
	const char *qs[] = { "{name: a, quota: {gpu: {guarantee: 4}}}", "{name: b}" };
	for (int i = 0; i < 2; i++) {
		struct xp_queuespec q;
		struct xp_err err = { 0 };
		assert_int_equal(xp_queuespec_parse_text("q", qs[i], strlen(qs[i]), 0, 1, &q, NULL,
							 &err),
				 0);
		assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_define(&q)), 0);
	}
	for (int i = 0; i < borrowed; i++)
		assert_true(world_submit(&w, "t",
					 "queue: b\nresources: {cpu: 1, memory: 1Gi, devices: "
					 "{count: 1, class: gpu}}\n",
					 NULL) != 0);
	world_cycle(&w);
	w.now += 48 * 3600 * 1000LL; /* two days on */
	json_t *items = json_array(), *notes = json_array();
	xp_advice_idle_quota(w.st, w.now, items, notes);
	double saving = 0;
	detail[0] = '\0';
	if (json_array_size(items)) {
		json_t *a = json_array_get(items, 0);
		saving = json_real_value(json_object_get(a, "saving_per_month"));
		snprintf(detail, len, "%s", json_string_value(json_object_get(a, "detail")));
	}
	json_decref(items);
	json_decref(notes);
	world_free(&w);
	return saving;
}

static void test_idle_quota_lent_out(void **state)
{
	(void)state;
	char d[400];
	assert_true(idle_saving(8, d, sizeof(d)) == 0); /* all of it lent out */
	double s6 = idle_saving(6, d, sizeof(d));
	assert_non_null(strstr(d, "2.0 of them idle in the pool too"));
	double s4 = idle_saving(4, d, sizeof(d));
	assert_non_null(strstr(d, "4.0 of them idle in the pool too"));
	assert_true(s6 > 0 && fabs(s4 - 2 * s6) < 1e-6 * s4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_advice),
		cmocka_unit_test(test_idle_quota_lent_out),
	};
	return xp_run_tests(tests, NULL, NULL);
}
