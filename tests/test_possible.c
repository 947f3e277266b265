/*
 * test_possible: a request no registered node could run, even empty, is
 * refused at submit (Slurm's "Requested node configuration is not
 * available"), against a real controller on loopback with the small
 * cluster (examples/clusters/small.yaml):
 *  - a table of request -> status, field and a phrase of the message (the
 *    nearest valid value: "did you mean", the largest node);
 *  - model and class names match in any case, and the journaled spec holds
 *    the registered spelling;
 *  - hold_for_nodes keeps an impossible job pending; a node that joins
 *    later makes the same request possible (the verdict cache follows the
 *    nodes);
 *  - cpu 0 and memory 0 are refused at the edge;
 *  - nothing refused changes the state: the job count and the next id stay;
 *  - a dedicated node (xpool dev's real host) takes only jobs that name it:
 *    others go elsewhere, and one only it could run is refused unless it
 *    names it.
 */
#include "testutil.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/ctl.h"

static json_t *call(struct xp_ctl *ctl, const char *method, const char *path, const char *body,
		    long *status)
{
	return xp_test_json(ctl->addr, ctl->admin_token, method, path, body, status);
}

static size_t njobs(struct xp_ctl *ctl)
{
	long st;
	json_t *r = call(ctl, "GET", "/v1/jobs?limit=1000", NULL, &st);
	assert_int_equal(st, 200);
	size_t n = json_array_size(json_object_get(r, "jobs"));
	json_decref(r);
	return n;
}

static const struct refusal {
	const char *body;
	long status;
	const char *field, *phrase;
} refusals[] = {
	{ "{\"resources\":{\"devices\":{\"count\":16,\"class\":\"gpu\"}}}", 422,
	  "resources.devices.count", "the most on one node is 8" },
	{ "{\"resources\":{\"devices\":{\"count\":1,\"models\":[\"A100-80GB\"]}}}", 422,
	  "resources.devices.models[0]", "did you mean A100-SXM4-80GB" },
	{ "{\"resources\":{\"devices\":{\"count\":1,\"class\":\"gpu\",\"model\":\"H100-PCIE\"}}}",
	  422, "resources.devices.models[0]", "did you mean H100-SXM5-80GB" },
	{ "{\"resources\":{\"devices\":{\"count\":1,\"vendor\":\"Intel\"}}}", 422,
	  "resources.devices.vendor", "no registered node has vendor 'Intel'" },
	{ "{\"resources\":{\"devices\":{\"count\":1,\"class\":\"asic\"}}}", 422,
	  "resources.devices.class", "classes offered: gpu, npu, fpga, dpu" },
	{ "{\"resources\":{\"devices\":{\"count\":1,\"class\":\"gpu\",\"memory\":\"100Gi\"}}}", 422,
	  "resources.devices.memory", "the largest matching device has 80.0 GiB" },
	{ "{\"resources\":{\"devices\":{\"count\":6,\"class\":\"gpu\",\"model\":\"H100-SXM5-80GB\","
	  "\"topology\":\"same_island\"}}}",
	  422, "resources.devices.topology", "the most in one is 4" },
	{ "{\"resources\":{\"cpu\":1000}}", 422, "resources.cpu",
	  "the largest node has 256 (gpu-a100-0)" },
	{ "{\"resources\":{\"memory\":\"64Ti\"}}", 422, "resources.memory", "the largest node has" },
	{ "{\"resources\":{\"cpu\":200,\"devices\":{\"count\":1,\"class\":\"fpga\"}}}", 422,
	  "resources", "no registered node has all of it at once" },
	{ "{\"node\":\"cpu-x86-0\",\"resources\":{\"devices\":{\"count\":1,\"class\":\"gpu\"}}}",
	  422, "resources.devices.class", "no registered node has a matching gpu device" },
	{ "{\"resources\":{\"cpu\":0}}", 400, "resources.cpu", "must be at least 1m" },
	{ "{\"resources\":{\"cpu\":\"1e-9\"}}", 400, "resources.cpu", "must be at least 1m" },
	{ "{\"resources\":{\"cpu\":1,\"memory\":0}}", 400, "resources.memory",
	  "must be at least 1Mi" },
};

static void test_refusals(void **state)
{
	(void)state;
	char dir[] = "/tmp/xppossibleXXXXXX";
	assert_non_null(mkdtemp(dir));
	char cluster[4096];
	snprintf(cluster, sizeof(cluster), "%s/examples/clusters/small.yaml", XP_SOURCE_DIR);
	struct xp_ctl_opts o = { .data = dir, .listen = "127.0.0.1:0", .sync = 0, .cluster = cluster };
	struct xp_ctl *ctl = NULL;
	struct xp_err err = { 0 };
	long st;
	if (xp_ctl_start(&o, &ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	size_t before = njobs(ctl);
	uint64_t next = ctl->st->next_job_id;
	for (size_t i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		const struct refusal *t = &refusals[i];
		for (int again = 0; again < 2; again++) { /* the second from the cache */
			json_t *r = call(ctl, "POST", "/v1/jobs", t->body, &st);
			json_t *e = json_object_get(r, "error");
			const char *field = json_string_value(json_object_get(e, "field"));
			const char *msg = json_string_value(json_object_get(e, "message"));
			print_message("%ld %s: %s\n", st, field ? field : "-", msg ? msg : "-");
			if (st != t->status || !field || strcmp(field, t->field) || !msg ||
			    !strstr(msg, t->phrase))
				fail_msg("%s: got %ld %s '%s', want %ld %s '%s'", t->body, st,
					 field ? field : "-", msg ? msg : "-", t->status, t->field,
					 t->phrase);
			json_decref(r);
		}
	}
	assert_int_equal(njobs(ctl), before); /* nothing refused was kept */
	assert_int_equal(ctl->st->next_job_id, next);

	/* any case: the registered spelling is what is journaled */
	json_t *r = call(ctl, "POST", "/v1/jobs",
			 "{\"resources\":{\"devices\":{\"count\":1,\"class\":\"GPU\","
			 "\"models\":[\"h100-sxm5-80gb\"]}},\"duration\":\"1h\"}",
			 &st);
	assert_int_equal(st, 201);
	json_t *models =
		json_object_get(json_object_get(json_object_get(json_object_get(r, "spec"),
								"resources"),
						"devices"),
				"models");
	if (!models) { /* the job's spec may sit at the top */
		models = json_object_get(json_object_get(json_object_get(r, "resources"), "devices"),
					 "models");
	}
	assert_non_null(models);
	assert_string_equal(json_string_value(json_array_get(models, 0)), "H100-SXM5-80GB");
	json_decref(r);

	/* held for nodes yet to join: pending; a node that joins makes it possible */
	static const char nine[] = "{\"resources\":{\"devices\":{\"count\":9,\"class\":\"gpu\"}},"
				   "\"duration\":\"1h\"%s}";
	char body[256];
	snprintf(body, sizeof(body), nine, ",\"hold_for_nodes\":true");
	r = call(ctl, "POST", "/v1/jobs", body, &st);
	assert_int_equal(st, 201);
	json_decref(r);
	snprintf(body, sizeof(body), nine, "");
	r = call(ctl, "POST", "/v1/jobs", body, &st);
	assert_int_equal(st, 422);
	json_decref(r);
	r = call(ctl, "POST", "/v1/agents",
		 "{\"version\":1,\"nodes\":[{\"name\":\"big-1\",\"cpu\":64,\"memory\":\"512Gi\","
		 "\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"L4\","
		 "\"memory\":\"24Gi\",\"count\":16}]}]}",
		 &st);
	assert_int_equal(st / 100, 2);
	json_decref(r);
	r = call(ctl, "POST", "/v1/jobs", body, &st);
	assert_int_equal(st, 201);
	json_decref(r);
	xp_ctl_stop(ctl);
	xp_test_rmdir(dir);
}

static const char *node_of(struct xp_ctl *ctl, json_t *job, char *buf, size_t len)
{
	long st;
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld",
		 (long long)json_integer_value(json_object_get(job, "id")));
	for (int i = 0; i < 400; i++) { /* placed within a few cycles */
		json_t *r = call(ctl, "GET", path, NULL, &st);
		const char *state = json_string_value(json_object_get(r, "state"));
		json_t *al = json_array_get(json_object_get(r, "allocations"), 0);
		if (state && strcmp(state, "pending")) {
			snprintf(buf, len, "%s", json_string_value(json_object_get(al, "node")));
			json_decref(r);
			return buf;
		}
		json_decref(r);
		usleep(10000);
	}
	return "still pending";
}

static void test_dedicated(void **state)
{
	(void)state;
	char dir[] = "/tmp/xpdedicatedXXXXXX";
	assert_non_null(mkdtemp(dir));
	struct xp_ctl_opts o = { .data = dir, .listen = "127.0.0.1:0", .sync = 0 };
	struct xp_ctl *ctl = NULL;
	struct xp_err err = { 0 };
	long st;
	char buf[64];
	if (xp_ctl_start(&o, &ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	json_t *r = call(ctl, "POST", "/v1/nodes",
			 "{\"version\":1,\"nodes\":[{\"name\":\"small\",\"cpu\":64,\"memory\":\"16Gi\"}]}",
			 &st);
	assert_int_equal(st / 100, 2);
	json_decref(r);
	r = call(ctl, "POST", "/v1/agents",
		 "{\"version\":1,\"nodes\":[{\"name\":\"host\",\"cpu\":8,\"memory\":\"256Gi\","
		 "\"dedicated\":true}]}",
		 &st);
	assert_int_equal(st / 100, 2);
	json_decref(r);
	for (int i = 0; i < 3; i++) { /* best fit would pick host: it is dedicated */
		r = call(ctl, "POST", "/v1/jobs", "{\"resources\":{\"cpu\":1},\"duration\":\"1h\"}",
			 &st);
		assert_int_equal(st, 201);
		assert_string_equal(node_of(ctl, r, buf, sizeof(buf)), "small");
		json_decref(r);
	}
	r = call(ctl, "POST", "/v1/jobs", "{\"resources\":{\"memory\":\"100Gi\"}}", &st);
	assert_int_equal(st, 422); /* only the dedicated node has 100 GiB */
	json_decref(r);
	r = call(ctl, "POST", "/v1/jobs",
		 "{\"node\":\"host\",\"resources\":{\"memory\":\"100Gi\"},\"duration\":\"1h\"}", &st);
	assert_int_equal(st, 201);
	assert_string_equal(node_of(ctl, r, buf, sizeof(buf)), "host");
	json_decref(r);
	xp_ctl_stop(ctl);
	xp_test_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_dedicated),
	};
	return xp_run_tests(tests, NULL, NULL);
}
