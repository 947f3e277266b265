/*
 * test_mig_agent: the agent's MIG instances past one replica (issue 21),
 * a real controller in this process and a real `xpool agent` discovering
 * an A100-80GB in MIG mode through the fake NVML's real dlopen path, its
 * state in a file the test shares (FAKE_NVML_STATE).
 *  - the reconciler: an agent killed mid-job, the job cancelled and its
 *    task gone meanwhile; the restarted agent destroys the instance it had
 *    created (WORK/mig-owned) and no task holds, and leaves an instance an
 *    administrator made (here: the test, through the HAL) alone;
 *  - warm instances: with --mig-keep-warm an ended replica's instance
 *    stays, the controller sees it warm (/v1/devices), the next 3g slice
 *    adopts the same GPU instance (same GI and MIG UUID: no create); a 7g,
 *    which needs its slices, has it destroyed first; an instance is
 *    destroyed once the keep time has passed; a heartbeat's malformed
 *    instance list is refused naming the entry.
 * Every wait is on a condition with a wall-clock deadline.
 */
#include "testutil.h"

#include <curl/curl.h>
#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hal/hal.h"
#include "lib/xalloc.h"
#include "server/ctl.h"

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
	{ "FAKE_NVML_COUNT", "1" },
	{ "FAKE_NVML_NAME", "NVIDIA A100-SXM4-80GB" },
	{ "FAKE_NVML_MEM_MIB", "81920" },
	{ "FAKE_NVML_MIG", "0" },
	{ "XP_HAL_NVIDIA_LIB", XP_FAKE_NVML },
	{ "XP_HAL_AMD_LIB", "/nonexistent/x.so" },
	{ "XP_HAL_ASCEND_LIB", "/nonexistent/x.so" },
	{ "XP_HAL_CAMBRICON_LIB", "/nonexistent/x.so" },
};

static void start_agent(struct env *e, const char *keep_warm)
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
		      "--mig-keep-warm", keep_warm, (char *)NULL);
		_exit(127);
	}
	e->agent = p;
}

static void stop_agent(struct env *e, int sig)
{
	if (e->agent > 0) {
		kill(e->agent, sig);
		waitpid(e->agent, NULL, 0);
		e->agent = 0;
	}
}

static void setup(struct env *e, const char *keep_warm)
{
	struct xp_ctl_opts o = { 0 };
	struct xp_err err = { 0 };
	char data[128], path[128];
	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "/tmp/xpmigXXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(path, sizeof(path), "%s/nvml.state", e->dir);
	setenv("FAKE_NVML_STATE", path, 1);
	for (size_t i = 0; i < sizeof(nvml_env) / sizeof(nvml_env[0]); i++)
		setenv(nvml_env[i][0], nvml_env[i][1], 1);
	snprintf(data, sizeof(data), "%s/ctl", e->dir);
	o.data = data;
	o.listen = "127.0.0.1:0";
	o.sync = 1;
	o.heartbeat_ms = 200;
	o.lost_ms = 1500;
	if (xp_ctl_start(&o, &e->ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	start_agent(e, keep_warm);
}

static int teardown(void **state)
{
	struct env *e = &E;
	(void)state;
	if (!e->ctl)
		return 0;
	stop_agent(e, SIGTERM);
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
	for (size_t i = 0; i < sizeof(nvml_env) / sizeof(nvml_env[0]); i++)
		unsetenv(nvml_env[i][0]);
	return 0;
}

/* the node's one device as /v1/devices shows it */
static json_t *device(struct env *e)
{
	json_t *o = api(e, "GET", "/v1/devices?node=m-0", NULL, NULL);
	json_t *d = json_incref(json_array_get(json_object_get(o, "devices"), 0));
	json_decref(o);
	return d;
}

static int node_ready(struct env *e)
{
	json_t *d = device(e);
	int ok = d != NULL;
	json_decref(d);
	return ok;
}

static const char *job_state(struct env *e, long long id, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
	json_t *j = api(e, "GET", path, NULL, NULL);
	snprintf(buf, len, "%s", json_string_value(json_object_get(j, "state")) ?: "?");
	json_decref(j);
	return buf;
}

#define WAIT_FOR(cond, secs, ...)                                                                  \
	do {                                                                                       \
		int64_t end_ = xp_test_now_ms() + (secs)*1000;                                            \
		while (!(cond)) {                                                                  \
			if (xp_test_now_ms() > end_)                                                      \
				fail_msg(__VA_ARGS__);                                             \
			usleep(20000);                                                             \
		}                                                                                  \
	} while (0)

static long long submit_profile(struct env *e, const char *profile, const char *go)
{
	char body[512];
	long st;
	snprintf(body, sizeof(body),
		 "{\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"mig\":{"
		 "\"profile\":\"%s\"}}},\"command\":\"echo CUDA=$CUDA_VISIBLE_DEVICES.; "
		 "until [ -e %s/%s ]; do sleep 0.05; done\"}",
		 profile, e->dir, go);
	json_t *r = api(e, "POST", "/v1/jobs", body, &st);
	assert_int_equal(st, 201);
	long long id = json_integer_value(json_object_get(r, "id"));
	json_decref(r);
	return id;
}

static long long submit(struct env *e, const char *go)
{
	return submit_profile(e, "3g.40gb", go);
}

/* the GPU instances of GPU 0, read through the HAL as another process
 * would (the fake's state file) */
static struct xp_hal *hal_open(void)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia=" XP_FAKE_NVML;
	o.lib_override[1] = "amd=/nonexistent/x.so";
	o.lib_override[2] = "ascend=/nonexistent/x.so";
	o.lib_override[3] = "cambricon=/nonexistent/x.so";
	o.sysfs_root = "/nonexistent/xpool-test/sysfs";
	struct xp_hal *h = xp_hal_open(&o, &err);
	assert_non_null(h);
	struct xp_cluster *c = xp_hal_discover(h, "x", NULL, &err);
	assert_non_null(c);
	xp_cluster_destroy(c);
	return h;
}

/* The instances on GPU 0. The agent makes an instance in two NVML calls
 * (the GPU instance, then its compute instance): a list between them sees
 * a GPU instance without one and fails, so it is tried again, for 60 s of
 * wall time at most. */
static unsigned instances(struct xp_hal_mig *m)
{
	struct xp_err err = { 0 };
	int64_t end = xp_test_now_ms() + 60000;
	for (;;) {
		struct xp_hal *h = hal_open();
		int rc = xp_hal_mig_list(h, 0, m, &err);
		xp_hal_close(h);
		if (rc == 0)
			return m->n;
		if (xp_test_now_ms() > end)
			fail_msg("mig_list: %s", err.text);
		usleep(10000);
	}
}

static void touch(struct env *e, const char *name)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/%s", e->dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
}

static int log_has(struct env *e, const char *text)
{
	char path[160], buf[65536];
	snprintf(path, sizeof(path), "%s/agent.log", e->dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return strstr(buf, text) != NULL;
}

/* kill every task's process group and remove the task folders: the tasks
 * are lost with the agent (a crash that took its work state) */
static void lose_tasks(struct env *e)
{
	char path[200], pf[500];
	snprintf(path, sizeof(path), "%s/work/tasks", e->dir);
	DIR *d = opendir(path);
	struct dirent *de;
	assert_non_null(d);
	while ((de = readdir(d))) {
		int pid = 0;
		snprintf(pf, sizeof(pf), "%s/%s/shim.pid", path, de->d_name);
		FILE *f = fopen(pf, "r");
		if (f && fscanf(f, "%d", &pid) == 1 && pid > 1)
			kill(-pid, SIGKILL);
		if (f)
			fclose(f);
	}
	closedir(d);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", path);
	assert_int_equal(system(cmd), 0);
}

static void test_reconcile(void **state)
{
	(void)state;
	struct env *e = &E;
	struct xp_hal_mig m;
	struct xp_hal_mig_inst foreign;
	struct xp_err err = { 0 };
	char st[32];
	setup(e, "0");
	WAIT_FOR(node_ready(e), 30, "the agent did not register");
	/* an administrator's 1g at start 0, made outside xpool */
	struct xp_hal *h = hal_open();
	if (xp_hal_mig_create(h, 0, 19, 0, &foreign, &err) < 0)
		fail_msg("create: %s", err.text);
	xp_hal_close(h);
	long long id = submit(e, "go1");
	WAIT_FOR(!strcmp(job_state(e, id, st, sizeof(st)), "running"), 30, "job: %s", st);
	WAIT_FOR(instances(&m) == 2, 30, "instances: %u, not 2", m.n);
	stop_agent(e, SIGKILL);
	lose_tasks(e);
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld/cancel", id);
	json_decref(api(e, "POST", path, NULL, NULL));
	WAIT_FOR(!strcmp(job_state(e, id, st, sizeof(st)), "cancelled"), 30, "job: %s", st);
	assert_int_equal(instances(&m), 2); /* nobody destroyed it meanwhile */
	start_agent(e, "0");
	WAIT_FOR(instances(&m) == 1, 30, "instances: %u, not 1", m.n);
	assert_int_equal(m.inst[0].gi_id, foreign.gi_id); /* the administrator's stays */
	assert_int_equal(m.inst[0].profile_id, 19);
	assert_true(log_has(e, "destroyed: created by xpool, held by no task"));
	/* and the controller sees it as foreign */
	json_t *d = NULL;
	WAIT_FOR((json_decref(d), d = device(e),
		  json_array_size(json_object_get(json_object_get(d, "mig"), "instances")) == 1),
		 30, "the foreign instance never reported");
	json_t *in = json_array_get(json_object_get(json_object_get(d, "mig"), "instances"), 0);
	assert_string_equal(json_string_value(json_object_get(in, "state")), "foreign");
	assert_string_equal(json_string_value(json_object_get(in, "profile")), "1g.10gb");
	json_decref(d);
	/* its slice is not placed on: a 7g waits, a 3g runs beside it */
	long long big = submit_profile(e, "7g.80gb", "go7");
	long long mid = submit(e, "go3");
	WAIT_FOR(!strcmp(job_state(e, mid, st, sizeof(st)), "running"), 30, "3g: %s", st);
	assert_string_equal(job_state(e, big, st, sizeof(st)), "pending");
	snprintf(path, sizeof(path), "/v1/jobs/%lld/explain", big);
	json_t *x = api(e, "GET", path, NULL, NULL);
	const char *sum = json_string_value(json_object_get(x, "summary"));
	if (!sum ||
	    !strstr(sum, "MIG 7g.80gb: none of the 1 GPUs offering it has a free placement"))
		fail_msg("explain: %s", sum ? sum : "(none)");
	json_decref(x);
	snprintf(path, sizeof(path), "/v1/jobs/%lld/cancel", big);
	json_decref(api(e, "POST", path, NULL, NULL));
	touch(e, "go3");
	WAIT_FOR(!strcmp(job_state(e, mid, st, sizeof(st)), "succeeded"), 30, "3g: %s", st);
	WAIT_FOR(instances(&m) == 1, 30, "instances: %u, not 1", m.n);
	e->passed = 1;
}

/* the instance at start 4 as /v1/devices shows it: its state, or "" */
static const char *dev_inst_state(struct env *e, char *buf, size_t len, json_t **jobs)
{
	json_t *d = device(e), *in;
	size_t i;
	buf[0] = 0;
	json_array_foreach(json_object_get(json_object_get(d, "mig"), "instances"), i, in)
	{
		if (json_integer_value(json_object_get(in, "start")) != 4)
			continue;
		snprintf(buf, len, "%s", json_string_value(json_object_get(in, "state")));
		if (jobs)
			*jobs = json_incref(json_object_get(in, "jobs"));
	}
	json_decref(d);
	return buf;
}

static void test_keep_warm(void **state)
{
	(void)state;
	struct env *e = &E;
	struct xp_hal_mig m;
	char st[32];
	setup(e, "4s");
	WAIT_FOR(node_ready(e), 30, "the agent did not register");
	long long a = submit(e, "go1");
	WAIT_FOR(!strcmp(job_state(e, a, st, sizeof(st)), "running"), 30, "job: %s", st);
	WAIT_FOR(instances(&m) == 1, 30, "instances: %u, not 1", m.n);
	struct xp_hal_mig_inst first = m.inst[0];
	assert_int_equal(first.start, 4);
	json_t *jobs = NULL;
	WAIT_FOR(!strcmp(dev_inst_state(e, st, sizeof(st), NULL), "in use"), 30, "state %s", st);
	touch(e, "go1");
	WAIT_FOR(!strcmp(job_state(e, a, st, sizeof(st)), "succeeded"), 30, "job: %s", st);
	/* kept: the controller hears it is warm */
	WAIT_FOR(!strcmp(dev_inst_state(e, st, sizeof(st), NULL), "warm"), 30, "state '%s'", st);
	assert_int_equal(instances(&m), 1);
	long long b = submit(e, "go2");
	WAIT_FOR(!strcmp(job_state(e, b, st, sizeof(st)), "running"), 30, "job: %s", st);
	WAIT_FOR(!strcmp(dev_inst_state(e, st, sizeof(st), &jobs), "in use"), 30, "state %s", st);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(jobs, 0), "job")), b);
	json_decref(jobs);
	assert_int_equal(instances(&m), 1);
	assert_int_equal(m.inst[0].gi_id, first.gi_id); /* reused: no create */
	assert_string_equal(m.inst[0].uuid, first.uuid);
	assert_true(log_has(e, "adopted at {4,4}"));
	touch(e, "go2");
	WAIT_FOR(!strcmp(job_state(e, b, st, sizeof(st)), "succeeded"), 30, "job: %s", st);
	/* a 7g needs the warm 3g's slices: the agent destroys it, then creates */
	WAIT_FOR(!strcmp(dev_inst_state(e, st, sizeof(st), NULL), "warm"), 30, "state '%s'", st);
	long long c = submit_profile(e, "7g.80gb", "go3");
	WAIT_FOR(!strcmp(job_state(e, c, st, sizeof(st)), "running"), 30, "job: %s", st);
	WAIT_FOR(instances(&m) == 1 && m.inst[0].profile_id == 0, 30, "no 7g instance alone");
	assert_true(log_has(e, "destroyed: created by xpool, held by no task"));
	touch(e, "go3");
	WAIT_FOR(!strcmp(job_state(e, c, st, sizeof(st)), "succeeded"), 30, "job: %s", st);
	/* warm for 4 s, then destroyed */
	int64_t ended = xp_test_now_ms();
	WAIT_FOR(instances(&m) == 0, 30, "instances: %u, not 0", m.n);
	assert_true(xp_test_now_ms() - ended >= 2000); /* not at once */
	WAIT_FOR(dev_inst_state(e, st, sizeof(st), NULL)[0] == 0, 30, "state %s", st);
	/* a malformed instance list is refused, naming the entry */
	long code;
	json_t *r = api(e, "POST", "/v1/nodes/m-0/heartbeat",
			"{\"devices\":[{\"health\":\"ok\"}],\"mig\":[{\"device\":3,\"gi\":1,"
			"\"id\":9,\"start\":4,\"size\":4,\"uuid\":\"MIG-x\",\"owned\":true,"
			"\"warm\":false}]}",
			&code);
	char *txt = json_dumps(r, 0);
	if (code != 400 || !strstr(txt, "mig[0]"))
		fail_msg("heartbeat with a bad mig entry: %ld %s", code, txt);
	free(txt);
	json_decref(r);
	e->passed = 1;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_reconcile, teardown),
		cmocka_unit_test_teardown(test_keep_warm, teardown),
	};
	int rc = xp_run_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
