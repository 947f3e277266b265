/*
 * test_mig_mode: MIG mode changes with the admin's leave (issue 21,
 * docs/design/mig.md "MIG mode changes"), end to end: a real controller in
 * this process and a real `xpool agent --mig-mode-change` discovering two
 * A100-80GB with MIG mode off through the fake NVML's real dlopen path,
 * the fake's state in a file the test reads through the HAL
 * (FAKE_NVML_STATE). GPU 0 runs a process (FAKE_NVML_BUSY=0): NVML's
 * nvmlDeviceSetMigMode refuses it with IN_USE.
 *  - denied (the default): a 3g.40gb waits, explain says the node does not
 *    allow MIG mode changes, and no mode changes;
 *  - allowed: GPU 0 is reserved, the agent's change is refused (busy), the
 *    refusal is journaled and shown on the node, GPU 0 stays off; GPU 1 is
 *    reserved, turned on, the job - a gang of two 3g slices - gets both of
 *    its placements, both instances are created, it runs and ends, both
 *    are destroyed; the controller restarted from its journal has GPU 1 in
 *    mode mig and the node's leave;
 *  - busy everywhere (both GPUs run processes): both changes are refused,
 *    the job waits, explain names the refusal, no mode changes;
 *  - an agent without --mig-mode-change refuses the orders on an allowed
 *    node: no mode changes;
 *  - MIG off: both GPUs in MIG mode, GPU 0 with an administrator's
 *    instance; a whole-GPU job waits (denied, explained), then with the
 *    leave GPU 1 is switched off and the job runs on it; GPU 0 and its
 *    instance stay.
 * Every wait is on a condition with a wall-clock deadline.
 */
#include "testutil.h"

#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hal/hal.h"
#include "lib/xalloc.h"
#include "server/ctl.h"
#include "edge/edge.h"

struct env {
	char dir[64];
	struct xp_ctl *ctl;
	pid_t agent;
	int passed;
};

static struct env E;

static json_t *api(struct env *e, const char *method, const char *path, const char *body,
		   long *status)
{
	return xp_test_api(e->ctl->addr, e->ctl->admin_token, method, path, body, status);
}

static const char *const nvml_env[][2] = {
	{ "FAKE_NVML_COUNT", "2" },
	{ "FAKE_NVML_NAME", "NVIDIA A100-SXM4-80GB" },
	{ "FAKE_NVML_MEM_MIB", "81920" },
	{ "XP_HAL_NVIDIA_LIB", XP_FAKE_NVML },
	{ "XP_HAL_AMD_LIB", "/nonexistent/x.so" },
	{ "XP_HAL_ASCEND_LIB", "/nonexistent/x.so" },
	{ "XP_HAL_CAMBRICON_LIB", "/nonexistent/x.so" },
};

static void start_agent(struct env *e, int opt_in)
{
	char work[128];
	snprintf(work, sizeof(work), "%s/work", e->dir);
	pid_t p = fork();
	if (p == 0) {
		char log[160];
		snprintf(log, sizeof(log), "%s/agent.log", e->dir);
		freopen(log, "a", stderr);
		execl(XP_BINARY, XP_BINARY, "agent", "--server", e->ctl->addr, "--token",
		      e->ctl->admin_token, "--node-name", "m-0", "--work", work, "--heartbeat",
		      "200ms", "--grace", "1s", "--cgroup-root", "/nonexistent", "--no-limits",
		      opt_in ? "--mig-mode-change" : "--mig-keep-warm", opt_in ? NULL : "0s",
		      (char *)NULL);
		_exit(127);
	}
	e->agent = p;
}

static void start_ctl(struct env *e)
{
	struct xp_ctl_opts o = { 0 };
	struct xp_err err = { 0 };
	char data[128];
	snprintf(data, sizeof(data), "%s/ctl", e->dir);
	o.data = data;
	o.listen = "127.0.0.1:0";
	o.sync = 1;
	o.heartbeat_ms = 200;
	o.lost_ms = 1500;
	if (xp_ctl_start(&o, &e->ctl, &err) < 0)
		fail_msg("start: %s", err.text);
}

static void hal_foreign(unsigned gpu);

/* mig: the GPUs in MIG mode at the start ("": none); foreign: create an
 * administrator's 3g at start 0 on GPU 0 before the agent starts */
static void setup_in(struct env *e, const char *busy, int opt_in, const char *mig, int foreign)
{
	char path[128];
	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "/tmp/xpmigmXXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(path, sizeof(path), "%s/nvml.state", e->dir);
	setenv("FAKE_NVML_STATE", path, 1);
	setenv("FAKE_NVML_BUSY", busy, 1);
	setenv("FAKE_NVML_MIG", mig, 1); /* "": every GPU starts with MIG mode off */
	for (size_t i = 0; i < sizeof(nvml_env) / sizeof(nvml_env[0]); i++)
		setenv(nvml_env[i][0], nvml_env[i][1], 1);
	if (foreign)
		hal_foreign(0);
	start_ctl(e);
	start_agent(e, opt_in);
}

static void setup(struct env *e, const char *busy, int opt_in)
{
	setup_in(e, busy, opt_in, "", 0);
}

static void stop_agent(struct env *e)
{
	if (e->agent > 0) {
		kill(e->agent, SIGTERM);
		waitpid(e->agent, NULL, 0);
		e->agent = 0;
	}
}

static int teardown(void **state)
{
	struct env *e = &E;
	(void)state;
	if (!e->ctl)
		return 0;
	stop_agent(e);
	xp_ctl_stop(e->ctl);
	e->ctl = NULL;
	char cmd[512];
	if (!e->passed) {
		snprintf(cmd, sizeof(cmd), "echo '--- agent:'; cat %s/agent.log", e->dir);
		if (system(cmd)) {
		}
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", e->dir);
	if (system(cmd)) {
	}
	unsetenv("FAKE_NVML_STATE");
	unsetenv("FAKE_NVML_BUSY");
	unsetenv("FAKE_NVML_MIG");
	for (size_t i = 0; i < sizeof(nvml_env) / sizeof(nvml_env[0]); i++)
		unsetenv(nvml_env[i][0]);
	return 0;
}

#define WAIT_FOR(cond, secs, ...)                                                                  \
	do {                                                                                       \
		int64_t end_ = xp_test_now_ms() + (secs)*1000;                                     \
		while (!(cond)) {                                                                  \
			if (xp_test_now_ms() > end_)                                               \
				fail_msg(__VA_ARGS__);                                             \
			usleep(20000);                                                             \
		}                                                                                  \
	} while (0)

static int node_ready(struct env *e)
{
	json_t *o = api(e, "GET", "/v1/devices?node=m-0", NULL, NULL);
	int ok = json_array_size(json_object_get(o, "devices")) == 2;
	json_decref(o);
	return ok;
}

static json_t *job(struct env *e, long long id)
{
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
	return api(e, "GET", path, NULL, NULL);
}

static int job_is(struct env *e, long long id, const char *state)
{
	json_t *j = job(e, id);
	int is = !strcmp(json_string_value(json_object_get(j, "state")) ?: "", state);
	json_decref(j);
	return is;
}

/* does job id's explain summary hold text? */
static int explain_has(struct env *e, long long id, const char *text, char *out, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld/explain", id);
	json_t *x = api(e, "GET", path, NULL, NULL);
	const char *s = json_string_value(json_object_get(x, "summary"));
	snprintf(out, len, "%s", s ? s : "");
	json_decref(x);
	return strstr(out, text) != NULL;
}

/* replicas x 3g.40gb, a gang when more than one */
static long long submit_3g(struct env *e, const char *go, int replicas)
{
	char body[512];
	long st;
	snprintf(body, sizeof(body),
		 "{\"replicas\":%d,\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":"
		 "{\"mig\":{\"profile\":\"3g.40gb\"}}},\"command\":\"echo "
		 "CUDA=$CUDA_VISIBLE_DEVICES.; until [ -e %s/%s ]; do sleep 0.05; done\"}",
		 replicas, e->dir, go);
	json_t *r = api(e, "POST", "/v1/jobs", body, &st);
	assert_int_equal(st, 201);
	long long id = json_integer_value(json_object_get(r, "id"));
	json_decref(r);
	return id;
}

static void hal_opts(struct xp_hal_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->lib_override[0] = "nvidia=" XP_FAKE_NVML;
	o->lib_override[1] = "amd=/nonexistent/x.so";
	o->lib_override[2] = "ascend=/nonexistent/x.so";
	o->lib_override[3] = "cambricon=/nonexistent/x.so";
	o->sysfs_root = "/nonexistent/xpool-test/sysfs";
}

/* an instance made outside xpool, as an administrator would: a 3g.40gb
 * (profile id 9) at start 0 on GPU gpu, through the HAL */
static void hal_foreign(unsigned gpu)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_hal_mig_inst in;
	hal_opts(&o);
	struct xp_hal *h = xp_hal_open(&o, &err);
	assert_non_null(h);
	struct xp_cluster *c = xp_hal_discover(h, "x", NULL, &err);
	assert_non_null(c);
	xp_cluster_destroy(c);
	if (xp_hal_mig_create(h, gpu, 9, 0, &in, &err) < 0)
		fail_msg("create: %s", err.text);
	xp_hal_close(h);
}

/* GPU gpu as another process reads it through the HAL (the fake's state
 * file): its MIG mode and instances. A list between the agent's two NVML
 * calls of a create fails; it is tried again for 60 s of wall time. */
static void gpu_read(unsigned gpu, struct xp_hal_mig *m)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	int64_t end = xp_test_now_ms() + 60000;
	hal_opts(&o);
	for (;;) {
		struct xp_hal *h = xp_hal_open(&o, &err);
		assert_non_null(h);
		struct xp_cluster *c = xp_hal_discover(h, "x", NULL, &err);
		assert_non_null(c);
		xp_cluster_destroy(c);
		int rc = xp_hal_mig_list(h, gpu, m, &err);
		xp_hal_close(h);
		if (rc == 0)
			return;
		if (xp_test_now_ms() > end)
			fail_msg("mig_list: %s", err.text);
		usleep(10000);
	}
}

static int gpu_on(unsigned gpu)
{
	struct xp_hal_mig m;
	gpu_read(gpu, &m);
	return m.enabled;
}

static unsigned gpu_instances(unsigned gpu)
{
	struct xp_hal_mig m;
	gpu_read(gpu, &m);
	return m.n;
}

static void touch(struct env *e, const char *name)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/%s", e->dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
}

static void allow(struct env *e, const char *how)
{
	char body[64];
	long st;
	snprintf(body, sizeof(body), "{\"mig_mode_change\":\"%s\"}", how);
	json_t *r = api(e, "PATCH", "/v1/nodes/m-0", body, &st);
	assert_int_equal(st, 200);
	assert_string_equal(json_string_value(json_object_get(r, "mig_mode_change")), how);
	json_decref(r);
}

/* node m-0's last refused MIG mode change: its device, or -1 */
static int refused_dev(struct env *e, char *why, size_t len)
{
	json_t *n = api(e, "GET", "/v1/nodes/m-0", NULL, NULL);
	json_t *r = json_object_get(n, "mig_mode_refused");
	int d = r ? (int)json_integer_value(json_object_get(r, "device")) : -1;
	snprintf(why, len, "%s", r ? json_string_value(json_object_get(r, "why")) : "");
	json_decref(n);
	return d;
}

static void test_denied_then_allowed(void **state)
{
	struct env *e = &E;
	char buf[1024];
	(void)state;
	setup(e, "0", 1);
	WAIT_FOR(node_ready(e), 60, "the agent never registered");
	long long id = submit_3g(e, "go1", 2); /* a gang of two slices */
	/* denied by default: it waits, and explain says why */
	WAIT_FOR(explain_has(e, id, "node m-0 does not allow MIG mode changes", buf, sizeof(buf)),
		 30, "explain: %s", buf);
	assert_non_null(strstr(buf, "xpool nodes set m-0 --mig-mode-change allow"));
	assert_true(job_is(e, id, "pending"));
	assert_false(gpu_on(0));
	assert_false(gpu_on(1));
	/* a bad leave is refused naming the field */
	long st;
	json_t *r = api(e, "PATCH", "/v1/nodes/m-0", "{\"mig_mode_change\":\"maybe\"}", &st);
	assert_int_equal(st, 400);
	char *text = json_dumps(r, 0);
	assert_non_null(strstr(text, "mig_mode_change"));
	free(text);
	json_decref(r);

	allow(e, "allow");
	/* GPU 0 runs a process: refused, not changed; GPU 1 is turned on, and its two 3g
	 * placements take the gang, both replicas in one decision */
	WAIT_FOR(job_is(e, id, "running"), 60, "the job never ran");
	assert_int_equal(refused_dev(e, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "nvmlDeviceSetMigMode(GPU 0, enable)"));
	assert_non_null(strstr(buf, "In use"));
	assert_false(gpu_on(0));
	assert_true(gpu_on(1));
	json_t *j = job(e, id);
	for (size_t k = 0; k < 2; k++) {
		json_t *a = json_array_get(json_object_get(j, "allocations"), k);
		json_t *d0 = json_array_get(json_object_get(a, "devices"), 0);
		assert_int_equal(json_integer_value(json_object_get(d0, "index")), 1);
		assert_string_equal(
			json_string_value(json_object_get(json_object_get(a, "mig"), "profile")),
			"3g.40gb");
	}
	json_decref(j);
	WAIT_FOR(gpu_instances(1) == 2, 30, "not two instances on GPU 1");
	assert_int_equal(gpu_instances(0), 0);
	touch(e, "go1");
	WAIT_FOR(job_is(e, id, "succeeded"), 60, "the job never ended");
	WAIT_FOR(gpu_instances(1) == 0, 30, "the instance was not destroyed");
	assert_true(gpu_on(1)); /* the mode stays: the next slice needs no change */

	/* replay: GPU 1 is in mode mig and the node keeps its leave */
	char token[80];
	snprintf(token, sizeof(token), "%s", e->ctl->admin_token);
	stop_agent(e);
	xp_ctl_stop(e->ctl);
	start_ctl(e);
	snprintf(e->ctl->admin_token, sizeof(e->ctl->admin_token), "%s", token); /* created once */
	json_t *n = api(e, "GET", "/v1/nodes/m-0", NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(n, "mig_mode_change")), "allow");
	json_decref(n);
	json_t *dv = api(e, "GET", "/v1/devices?node=m-0", NULL, NULL);
	json_t *d1 = json_array_get(json_object_get(dv, "devices"), 1);
	assert_string_equal(json_string_value(json_object_get(d1, "mode")), "mig");
	json_decref(dv);
	e->passed = 1;
}

static void test_busy_refused(void **state)
{
	struct env *e = &E;
	char buf[1024];
	(void)state;
	setup(e, "0,1", 1);
	WAIT_FOR(node_ready(e), 60, "the agent never registered");
	allow(e, "allow");
	long long id = submit_3g(e, "go1", 1);
	/* both refused (the second after the first): the job waits */
	WAIT_FOR(refused_dev(e, buf, sizeof(buf)) == 1, 60, "GPU 1 was never refused");
	WAIT_FOR(explain_has(e, id, "refused a MIG mode change", buf, sizeof(buf)), 30,
		 "explain: %s", buf);
	assert_non_null(strstr(buf, "In use"));
	assert_true(job_is(e, id, "pending"));
	assert_false(gpu_on(0));
	assert_false(gpu_on(1));
	/* nothing is held: no reservation left on the node */
	json_t *n = api(e, "GET", "/v1/nodes/m-0", NULL, NULL);
	assert_null(json_object_get(n, "mig_mode_reserved"));
	json_decref(n);
	e->passed = 1;
}

/* the second key: an agent started without --mig-mode-change refuses the
 * controller's order even on a node the admin allowed */
static void test_agent_opt_in(void **state)
{
	struct env *e = &E;
	char buf[1024];
	(void)state;
	setup(e, "", 0);
	WAIT_FOR(node_ready(e), 60, "the agent never registered");
	allow(e, "allow");
	long long id = submit_3g(e, "go1", 1);
	WAIT_FOR(refused_dev(e, buf, sizeof(buf)) == 1, 60, "GPU 1 was never refused");
	assert_non_null(strstr(buf, "was not started with --mig-mode-change"));
	assert_true(job_is(e, id, "pending"));
	assert_false(gpu_on(0));
	assert_false(gpu_on(1));
	e->passed = 1;
}

/* MIG off: both GPUs start in MIG mode, GPU 0 holds an administrator's
 * 3g; a whole-GPU job waits. Denied: it waits and explain says why.
 * Allowed: GPU 1 (idle, nothing on it) is switched off, the job runs on it
 * and ends; GPU 0 and its instance are left alone. */
static void test_mig_off(void **state)
{
	struct env *e = &E;
	char buf[1024], body[512];
	long st;
	(void)state;
	setup_in(e, "", 1, "0,1", 1);
	WAIT_FOR(node_ready(e), 60, "the agent never registered");
	snprintf(body, sizeof(body),
		 "{\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"count\":1}},"
		 "\"command\":\"echo CUDA=$CUDA_VISIBLE_DEVICES.; until [ -e %s/go1 ]; do sleep "
		 "0.05; done\"}",
		 e->dir);
	json_t *r = api(e, "POST", "/v1/jobs", body, &st);
	assert_int_equal(st, 201);
	long long id = json_integer_value(json_object_get(r, "id"));
	json_decref(r);
	/* denied by default: it waits, and explain says why */
	WAIT_FOR(explain_has(e, id, "node m-0 does not allow MIG mode changes", buf, sizeof(buf)),
		 30, "explain: %s", buf);
	assert_non_null(strstr(buf, "idle in MIG mode, would take this job with MIG off"));
	assert_true(job_is(e, id, "pending"));
	assert_true(gpu_on(0));
	assert_true(gpu_on(1));
	/* allowed: GPU 1 is switched off and the job runs on it */
	allow(e, "allow");
	WAIT_FOR(job_is(e, id, "running"), 60, "the job never ran");
	assert_false(gpu_on(1));
	assert_true(gpu_on(0)); /* the administrator's instance is never destroyed */
	assert_int_equal(gpu_instances(0), 1);
	json_t *j = job(e, id);
	json_t *a = json_array_get(json_object_get(j, "allocations"), 0);
	json_t *d0 = json_array_get(json_object_get(a, "devices"), 0);
	assert_int_equal(json_integer_value(json_object_get(d0, "index")), 1);
	assert_null(json_object_get(a, "mig"));
	json_decref(j);
	json_t *dv = api(e, "GET", "/v1/devices?node=m-0", NULL, NULL);
	json_t *d1 = json_array_get(json_object_get(dv, "devices"), 1);
	assert_string_equal(json_string_value(json_object_get(d1, "mode")), "shared");
	json_decref(dv);
	touch(e, "go1");
	WAIT_FOR(job_is(e, id, "succeeded"), 60, "the job never ended");
	e->passed = 1;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_denied_then_allowed, teardown),
		cmocka_unit_test_teardown(test_busy_refused, teardown),
		cmocka_unit_test_teardown(test_agent_opt_in, teardown),
		cmocka_unit_test_teardown(test_mig_off, teardown),
	};
	int rc = xp_run_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
