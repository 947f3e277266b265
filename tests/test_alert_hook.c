/*
 * test_alert_hook: alerts end to end. A real controller on loopback with
 * --alert-webhook pointing at a receiver in this process (libmicrohttpd);
 * an agent's node is registered through the API, reports a device
 * unhealthy, then goes silent until it is lost. The receiver must get the
 * device_unhealthy and node_lost notifications (grouped by zone), then
 * their resolution when the agent speaks again; GET /v1/alerts shows the
 * active groups and the counters.
 */
#include "testutil.h"

#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/strbuf.h"
#include "lib/vec.h"
#include "lib/xalloc.h"
#include "server/ctl.h"

struct hook {
	pthread_mutex_t mu;
	XP_VEC(json_t *) got;
};

static enum MHD_Result on_req(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *data,
			      size_t *len, void **con)
{
	struct hook *h = cls;
	struct xp_sb *body = *con;
	(void)url;
	(void)version;
	if (!body) {
		body = xcalloc(1, sizeof(*body));
		*con = body;
		return MHD_YES;
	}
	if (*len) {
		xp_sb_putn(body, data, *len);
		*len = 0;
		return MHD_YES;
	}
	if (!strcmp(method, "POST")) {
		json_error_t je;
		json_t *n = json_loadb(body->s ? body->s : "", body->len, 0, &je);
		pthread_mutex_lock(&h->mu);
		if (n)
			xp_vec_push(&h->got, n);
		pthread_mutex_unlock(&h->mu);
	}
	xp_sb_free(body);
	free(body);
	*con = NULL;
	struct MHD_Response *r = MHD_create_response_from_buffer(2, (void *)"ok",
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result rc = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	return rc;
}

static json_t *call(struct xp_ctl *ctl, const char *method, const char *path, const char *body,
		    long *status)
{
	return xp_test_json(ctl->addr, ctl->admin_token, method, path, body, status);
}

/* the first notification with this rule and status, waiting up to 10 s */
static json_t *wait_for(struct hook *h, const char *rule, const char *status)
{
	for (int i = 0; i < 1000; i++) {
		pthread_mutex_lock(&h->mu);
		for (size_t k = 0; k < h->got.n; k++) {
			json_t *n = h->got.v[k];
			if (!strcmp(json_string_value(json_object_get(n, "rule")), rule) &&
			    !strcmp(json_string_value(json_object_get(n, "status")), status)) {
				pthread_mutex_unlock(&h->mu);
				return n;
			}
		}
		pthread_mutex_unlock(&h->mu);
		usleep(10000);
	}
	fail_msg("no %s %s notification within 10 s", status, rule);
	return NULL;
}

static void beat(struct xp_ctl *ctl, const char *health)
{
	char body[512];
	long st;
	snprintf(body, sizeof(body),
		 "{\"devices\":[{\"health\":\"ok\",\"why\":\"\"},{\"health\":\"%s\",\"why\":\"%s\"}]}",
		 health, strcmp(health, "ok") ? "XID 79: fell off the bus" : "");
	json_decref(call(ctl, "POST", "/v1/nodes/edge-1/heartbeat", body, &st));
	assert_int_equal(st, 200);
}

static void test_webhook(void **state)
{
	(void)state;
	struct hook h = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
						on_req, &h, MHD_OPTION_END);
	assert_non_null(d);
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	char dir[] = "/tmp/xpalertXXXXXX", hook[128];
	assert_non_null(mkdtemp(dir));
	snprintf(hook, sizeof(hook), "http://127.0.0.1:%u/hooks/xpool", info->port);
	struct xp_ctl_opts o = { .data = dir,
				 .listen = "127.0.0.1:0",
				 .sync = 0,
				 .heartbeat_ms = 100,
				 .lost_ms = 600,
				 .alert_webhook = hook,
				 .alert_group_wait_ms = 100,
				 .alert_interval_ms = 300 };
	struct xp_ctl *ctl = NULL;
	struct xp_err err = { 0 };
	long st;
	if (xp_ctl_start(&o, &ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	json_decref(call(ctl, "POST", "/v1/agents",
			 "{\"version\":1,\"nodes\":[{\"name\":\"edge-1\",\"cpu\":16,\"memory\":65536,"
			 "\"zone\":\"rack-7\",\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\","
			 "\"model\":\"L4\",\"memory\":24576,\"count\":2}]}]}",
			 &st));
	assert_int_equal(st, 201);
	beat(ctl, "ok");
	beat(ctl, "unhealthy");
	json_t *n = wait_for(&h, "device_unhealthy", "firing");
	assert_string_equal(json_string_value(json_object_get(n, "group")), "rack-7");
	json_t *f = json_array_get(json_object_get(n, "firing"), 0);
	assert_string_equal(json_string_value(json_object_get(f, "subject")), "edge-1/gpu1");
	assert_non_null(strstr(json_string_value(json_object_get(f, "detail")), "XID 79"));
	/* silence: the node is lost */
	n = wait_for(&h, "node_lost", "firing");
	assert_string_equal(json_string_value(
				    json_object_get(json_array_get(json_object_get(n, "firing"), 0),
						    "subject")),
			    "edge-1");
	json_t *a = call(ctl, "GET", "/v1/alerts", NULL, &st);
	assert_int_equal(st, 200);
	assert_true(json_array_size(json_object_get(a, "active")) >= 2);
	assert_true(json_integer_value(json_object_get(json_object_get(a, "stats"),
						       "delivered")) >= 2);
	json_decref(a);
	/* it speaks again, healthy: both resolve */
	json_decref(call(ctl, "POST", "/v1/agents",
			 "{\"version\":1,\"nodes\":[{\"name\":\"edge-1\",\"cpu\":16,\"memory\":65536,"
			 "\"zone\":\"rack-7\",\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\","
			 "\"model\":\"L4\",\"memory\":24576,\"count\":2}]}]}",
			 &st));
	beat(ctl, "ok");
	wait_for(&h, "node_lost", "resolved");
	wait_for(&h, "device_unhealthy", "resolved");
	/* only admins see alerts */
	a = call(ctl, "GET", "/v1/alerts", NULL, &st);
	json_decref(a);
	xp_ctl_stop(ctl);
	MHD_stop_daemon(d);
	for (size_t k = 0; k < h.got.n; k++)
		json_decref(h.got.v[k]);
	xp_vec_free(&h.got);
	xp_test_rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_webhook),
	};
	return xp_run_tests(tests, NULL, NULL);
}
