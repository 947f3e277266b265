/*
 * test_agents: a real controller (in this process) and real `xpool agent`
 * processes on loopback, each with its own fake device file.
 *  - a 2-GPU job's command prints what it sees: the vendor variable and the
 *    XPOOL_* ones match the allocation; a fraction sees its limits;
 *  - an agent killed with SIGKILL: its node is lost, the job is requeued
 *    once and completes on the other agent; the agent, restarted, does not
 *    take the job back;
 *  - an agent restarted while its task runs adopts it: the task runs once;
 *  - malformed or inconsistent reports are refused and change nothing
 *    (an unknown exit reason, a signal out of range: 400 naming the
 *    field); an unhealthy device leaves scheduling and comes back; an exit
 *    with reason oom and its signal end the job with that reason;
 *  - an agent whose limits cannot be set does not run the task: the job
 *    fails with reason limits and says why; one with --no-limits runs it
 *    and the job says limits were off there;
 *  - a time limit on an agent's node: the job fails at once with reason
 *    time_limit, then takes the exit code and signal the agent saw
 *    (SIGTERM, 143).
 *  - a GPU share on NVIDIA devices runs with libxpool-vgpu.so preloaded and
 *    its memory cap and compute share set; `vgpu: off` runs it without; a
 *    replica that never loads the library (here: the agent's
 *    XPOOL_VGPU_LIB is another library) is ended with reason limits.
 * Agents run with --no-limits unless a test gives a cgroup root.
 */
#include "testutil.h"

#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hal/hal.h"
#include "lib/strbuf.h"
#include "lib/xalloc.h"
#include "server/ctl.h"

struct env {
	char dir[64];
	struct xp_ctl *ctl;
	pid_t agents[4];
	char names[4][32];
	const char *cgroot[4]; /* --cgroup-root (limits required), NULL: --no-limits */
	int n;
	int passed; /* set at the end of a test; otherwise teardown shows the logs */
};

/* one environment at a time; cmocka's teardown cleans it up even when an
 * assertion fails half-way, so no agent outlives the test */
static struct env E;

/* a string member, "(absent)" when it is not one: a failed check says so */
static const char *str(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v ? v : "(absent)";
}

static json_t *api(struct env *e, const char *method, const char *path, const char *body,
		   long *status)
{
	return xp_test_api(e->ctl->addr, e->ctl->admin_token, method, path, body, status);
}

static void write_devices(const char *path, const char *name, const char *vendor, int count)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "nodes:\n  - name: %s\n    cpu: 4\n    memory: 8Gi\n    devices:\n", name);
	for (int i = 0; i < count; i++)
		fprintf(f,
			"      - {type: gpu, vendor: %s, model: Fake-%s, memory: 16Gi, uuid: GPU-%s-%d}\n",
			vendor, vendor, name, i);
	fclose(f);
}

static pid_t start_agent(struct env *e, int i)
{
	char devs[128], work[128];
	snprintf(devs, sizeof(devs), "%s/%s.yaml", e->dir, e->names[i]);
	snprintf(work, sizeof(work), "%s/work-%s", e->dir, e->names[i]);
	pid_t p = fork();
	if (p == 0) {
		char log[160];
		snprintf(log, sizeof(log), "%s/%s.log", e->dir, e->names[i]);
		freopen(log, "a", stderr);
		execl(XP_BINARY, XP_BINARY, "agent", "--server", e->ctl->addr, "--token",
		      e->ctl->admin_token, "--node-name", e->names[i], "--devices", devs, "--work",
		      work, "--heartbeat", "200ms", "--grace", "1s", "--cgroup-root",
		      e->cgroot[i] ? e->cgroot[i] : "/nonexistent",
		      e->cgroot[i] ? "--limits=required" : "--no-limits", (char *)NULL);
		_exit(127);
	}
	e->agents[i] = p;
	return p;
}

static void stop_agent(struct env *e, int i, int sig)
{
	if (e->agents[i] > 0) {
		kill(e->agents[i], sig);
		waitpid(e->agents[i], NULL, 0);
		e->agents[i] = 0;
	}
}

static void wait_nodes_ready(struct env *e, int n)
{
	for (int t = 0; t < 200; t++) {
		json_t *o = api(e, "GET", "/v1/nodes", NULL, NULL), *nd;
		size_t i;
		int ready = 0;
		json_array_foreach(json_object_get(o, "nodes"), i, nd) ready +=
			!strcmp(json_string_value(json_object_get(nd, "state")), "ready");
		json_decref(o);
		if (ready >= n)
			return;
		usleep(50000);
	}
	fail_msg("agents did not register");
}

static void setup_limits(struct env *e, int n, const char *const *names, const char *const *vendors,
			 const int *counts, const char *const *cgroots)
{
	struct xp_ctl_opts o = { 0 };
	struct xp_err err = { 0 };
	memset(e, 0, sizeof(*e));
	for (int i = 0; cgroots && i < n; i++)
		e->cgroot[i] = cgroots[i];
	snprintf(e->dir, sizeof(e->dir), "/tmp/xpagentsXXXXXX");
	assert_non_null(mkdtemp(e->dir));
	char data[128];
	snprintf(data, sizeof(data), "%s/ctl", e->dir);
	o.data = data;
	o.listen = "127.0.0.1:0";
	o.sync = 1;
	o.heartbeat_ms = 200;
	o.lost_ms = 1500;
	if (xp_ctl_start(&o, &e->ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	e->n = n;
	for (int i = 0; i < n; i++) {
		char path[128];
		snprintf(e->names[i], sizeof(e->names[i]), "%s", names[i]);
		snprintf(path, sizeof(path), "%s/%s.yaml", e->dir, names[i]);
		write_devices(path, names[i], vendors[i], counts[i]);
		start_agent(e, i);
	}
	wait_nodes_ready(e, n);
}

static void setup(struct env *e, int n, const char *const *names, const char *const *vendors,
		  const int *counts)
{
	setup_limits(e, n, names, vendors, counts, NULL);
}

static int teardown(void **state)
{
	struct env *e = &E;
	(void)state;
	if (!e->ctl)
		return 0;
	for (int i = 0; i < e->n; i++)
		stop_agent(e, i, SIGTERM);
	xp_ctl_stop(e->ctl);
	e->ctl = NULL;
	for (int i = 0; !e->passed && i < e->n; i++) { /* what the agents said */
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "echo '--- agent %s:'; cat %s/%s.log", e->names[i], e->dir,
			 e->names[i]);
		if (system(cmd)) {
		}
	}
	/* tasks of killed agents may still run: they die with their group */
	char cmd[1024];
	/* "[/]tmp/...": the pattern must not match this very shell's command
	 * line, or pkill ends it before rm runs */
	snprintf(cmd, sizeof(cmd), "pkill -f '[%c]%s/work-' >/dev/null 2>&1; %s %s", e->dir[0],
		 e->dir + 1, getenv("XP_TEST_KEEP") ? "echo kept" : "rm -rf", e->dir);
	if (system(cmd)) {
	}
	return 0;
}

static json_t *wait_state(struct env *e, long long id, const char *state, int secs)
{
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
	for (int t = 0; t < secs * 20; t++) {
		json_t *j = api(e, "GET", path, NULL, NULL);
		if (!strcmp(json_string_value(json_object_get(j, "state")), state))
			return j;
		json_decref(j);
		usleep(50000);
	}
	json_t *j = api(e, "GET", path, NULL, NULL);
	char *s = json_dumps(j, 0);
	fail_msg("job %lld did not become %s: %s", id, state, s);
	return NULL;
}

static long long submit(struct env *e, const char *body)
{
	long st;
	json_t *r = api(e, "POST", "/v1/jobs", body, &st);
	assert_int_equal(st, 201);
	long long id = json_integer_value(json_object_get(r, "id"));
	json_decref(r);
	return id;
}

static char *logs(struct env *e, long long id)
{
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld/logs", id);
	json_t *r = api(e, "GET", path, NULL, NULL);
	char *s = xstrdup(json_is_string(r) ? json_string_value(r) : "");
	json_decref(r);
	return s;
}

static void test_visible_devices(void **state)
{
	static const char *const names[] = { "nv-0", "amd-0" }, *const vendors[] = { "NVIDIA", "AMD" };
	static const int counts[] = { 4, 2 };
	struct env *e = &E;
	setup(e, 2, names, vendors, counts);

	long long id = submit(e, "{\"name\":\"see\",\"resources\":{\"cpu\":\"100m\",\"memory\":64,"
				  "\"devices\":{\"count\":2,\"vendor\":\"NVIDIA\"}},"
				  "\"command\":\"echo CUDA=$CUDA_VISIBLE_DEVICES; echo "
				  "XPOOL=$XPOOL_DEVICES\"}");
	json_t *j = wait_state(e, id, "succeeded", 20);
	json_t *devs = json_object_get(json_array_get(json_object_get(j, "allocations"), 0), "devices");
	char want_cuda[128] = "CUDA=", want_x[64] = "XPOOL=";
	for (size_t i = 0; i < json_array_size(devs); i++) {
		long long ix = json_integer_value(json_object_get(json_array_get(devs, i), "index"));
		char part[32];
		snprintf(part, sizeof(part), "%sGPU-nv-0-%lld", i ? "," : "", ix);
		strcat(want_cuda, part);
		snprintf(part, sizeof(part), "%s%lld", i ? "," : "", ix);
		strcat(want_x, part);
	}
	json_decref(j);
	char *out = logs(e, id);
	if (!strstr(out, want_cuda) || !strstr(out, want_x))
		fail_msg("output '%s' lacks '%s' or '%s'", out, want_cuda, want_x);
	free(out);

	id = submit(e, "{\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"fraction\":0.25,"
			"\"memory\":\"4Gi\",\"vendor\":\"AMD\"}},\"command\":\"echo "
			"F=$XPOOL_DEVICE_FRACTION M=$XPOOL_DEVICE_MEMORY_MIB R=$ROCR_VISIBLE_DEVICES\"}");
	json_decref(wait_state(e, id, "succeeded", 20));
	out = logs(e, id);
	if (!strstr(out, "F=0.250 M=4096 R="))
		fail_msg("fraction output: '%s'", out);
	free(out);

	/* a replica without devices on a GPU node sees none of them */
	id = submit(e, "{\"node\":\"nv-0\",\"resources\":{\"cpu\":\"100m\",\"memory\":64},"
		       "\"command\":\"echo CUDA=[${CUDA_VISIBLE_DEVICES-unset}]\"}");
	json_decref(wait_state(e, id, "succeeded", 20));
	out = logs(e, id);
	if (!strstr(out, "CUDA=[]"))
		fail_msg("a CPU-only task's CUDA_VISIBLE_DEVICES: '%s'", out);
	if (strstr(strstr(out, "CUDA=[]") + 1, "CUDA=")) /* output shipped once */
		fail_msg("output twice: '%s'", out);
	free(out);
	e->passed = 1;
}

static int count_events(struct env *e, const char *type, long long job)
{
	json_t *o = api(e, "GET", "/v1/events?since=0&limit=10000", NULL, NULL), *ev;
	size_t i;
	int n = 0;
	json_array_foreach(json_object_get(o, "events"), i, ev) n +=
		!strcmp(json_string_value(json_object_get(ev, "type")), type) &&
		json_integer_value(json_object_get(ev, "job")) == job;
	json_decref(o);
	return n;
}

static void test_lost_agent_requeue(void **state)
{
	static const char *const names[] = { "b-0", "b-1" }, *const vendors[] = { "NVIDIA", "NVIDIA" };
	static const int counts[] = { 1, 1 };
	struct env *e = &E;
	setup(e, 2, names, vendors, counts);

	long long id = submit(e, "{\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"count\":1}},"
				  "\"command\":\"sleep 2; echo done on $XPOOL_NODE\"}");
	json_t *j = wait_state(e, id, "running", 20);
	const char *first = json_string_value(
		json_object_get(json_array_get(json_object_get(j, "allocations"), 0), "node"));
	int victim = !strcmp(first, "b-0") ? 0 : 1;
	json_decref(j);
	stop_agent(e, victim, SIGKILL);
	j = wait_state(e, id, "succeeded", 30);
	const char *second = json_string_value(
		json_object_get(json_array_get(json_object_get(j, "allocations"), 0), "node"));
	assert_string_equal(second, e->names[1 - victim]);
	json_decref(j);
	assert_int_equal(count_events(e, "job.requeued", id), 1);
	/* the lost node's agent comes back: it must not take the job again */
	start_agent(e, victim);
	wait_nodes_ready(e, 2);
	sleep(3);
	j = wait_state(e, id, "succeeded", 1);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(j, "allocations"), 0), "node")),
			    e->names[1 - victim]);
	json_decref(j);
	assert_int_equal(count_events(e, "job.requeued", id), 1);
	e->passed = 1;
}

static void test_restart_no_duplicate(void **state)
{
	static const char *const names[] = { "c-0" }, *const vendors[] = { "NVIDIA" };
	static const int counts[] = { 1 };
	struct env *e = &E;
	char marker[320], body[768];
	setup(e, 1, names, vendors, counts);
	snprintf(marker, sizeof(marker), "%s/marker", e->dir);
	snprintf(body, sizeof(body),
		 "{\"resources\":{\"cpu\":\"100m\",\"memory\":64},\"command\":\"echo run >> %s; "
		 "sleep 2\"}",
		 marker);
	long long id = submit(e, body);
	json_decref(wait_state(e, id, "running", 20));
	for (int t = 0; t < 100 && access(marker, F_OK) != 0; t++)
		usleep(50000);
	stop_agent(e, 0, SIGKILL);
	usleep(300000);
	start_agent(e, 0); /* back well before the node would be lost */
	json_decref(wait_state(e, id, "succeeded", 20));
	FILE *f = fopen(marker, "r");
	assert_non_null(f);
	int lines = 0;
	char buf[64];
	while (fgets(buf, sizeof(buf), f))
		lines++;
	fclose(f);
	assert_int_equal(lines, 1);
	assert_int_equal(count_events(e, "job.requeued", id), 0);
	e->passed = 1;
}

/* Output uploads of job id's attempt 1 as an agent that restarts, repeats
 * and runs ahead would send them: random ranges of one text, each starting
 * at or past what the reference says the controller holds. The log must be
 * the text's prefix the reference holds, each byte once. */
static void upload_replays(struct env *e, long long id)
{
	enum { LEN = 3000 };
	static char text[LEN + 1];
	char path[160], *piece = malloc(LEN + 1);
	long st;
	size_t have = 0; /* the reference: a prefix, grown by ranges that touch it */
	unsigned seed = 7;
	for (int i = 0; i < LEN; i++)
		text[i] = (char)('a' + (i * 7 + i / 26) % 26);
	for (int round = 0; round < 300; round++) {
		size_t off = (size_t)rand_r(&seed) % (have + 40 < LEN ? have + 40 : LEN);
		size_t len = 1 + (size_t)rand_r(&seed) % 60;
		len = off + len > LEN ? LEN - off : len;
		memcpy(piece, text + off, len);
		piece[len] = '\0';
		snprintf(path, sizeof(path),
			 "/v1/nodes/d-0/logs?job=%lld&replica=0&stream=stdout&attempt=1&offset=%zu",
			 id, off);
		json_t *r = api(e, "POST", path, piece, &st);
		assert_int_equal(st, 200);
		if (off <= have && off + len > have)
			have = off + len;
		assert_int_equal(json_integer_value(json_object_get(r, "have")), (long long)have);
		json_decref(r);
	}
	free(piece);
	/* an attempt the job has not reached, and a bad offset: refused */
	snprintf(path, sizeof(path),
		 "/v1/nodes/d-0/logs?job=%lld&replica=0&stream=stdout&attempt=2&offset=0", id);
	json_decref(api(e, "POST", path, "x", &st));
	assert_int_equal(st, 409);
	snprintf(path, sizeof(path),
		 "/v1/nodes/d-0/logs?job=%lld&replica=0&stream=stdout&attempt=1&offset=-1", id);
	json_decref(api(e, "POST", path, "x", &st));
	assert_int_equal(st, 400);
	char *out = logs(e, id);
	assert_int_equal(strlen(out), have);
	assert_memory_equal(out, text, have);
	free(out);
}

static void test_reports_checked(void **state)
{
	static const char *const names[] = { "d-0" }, *const vendors[] = { "NVIDIA" };
	static const int counts[] = { 2 };
	struct env *e = &E;
	long st;
	setup(e, 1, names, vendors, counts);
	/* wrong device count, an unknown field, a job not running here */
	json_decref(api(e, "POST", "/v1/nodes/d-0/heartbeat", "{\"devices\":[{\"health\":\"ok\"}]}", &st));
	assert_int_equal(st, 400);
	json_decref(api(e, "POST", "/v1/nodes/d-0/heartbeat",
			"{\"devices\":[{\"health\":\"ok\",\"color\":1},{\"health\":\"ok\"}]}", &st));
	assert_int_equal(st, 400);
	json_decref(api(e, "POST", "/v1/nodes/d-0/tasks",
			"{\"tasks\":[{\"job\":99,\"attempt\":1,\"replica\":0,\"exit_code\":0}]}", &st));
	assert_int_equal(st, 409);
	json_decref(api(e, "POST", "/v1/nodes/d-0/tasks", "{\"tasks\":\"all done\"}", &st));
	assert_int_equal(st, 400);
	/* an unhealthy device (as an agent would report it) leaves scheduling;
	 * the real agent heartbeats every 200 ms and may say "ok" between our
	 * report and the read (seen under the sanitizers), so try a few times */
	json_t *d = NULL, *d0 = NULL;
	for (int try = 0; try < 5; try++) {
		json_decref(d);
		json_decref(api(e, "POST", "/v1/nodes/d-0/heartbeat",
				"{\"devices\":[{\"health\":\"unhealthy\",\"why\":\"ECC\"},"
				"{\"health\":\"ok\"}]}",
				&st));
		assert_int_equal(st, 200);
		d = api(e, "GET", "/v1/devices?node=d-0", NULL, NULL);
		d0 = json_array_get(json_object_get(d, "devices"), 0);
		const char *h = json_string_value(json_object_get(d0, "health"));
		if (h && !strcmp(h, "unhealthy"))
			break;
	}
	assert_string_equal(json_string_value(json_object_get(d0, "health")), "unhealthy");
	assert_string_equal(json_string_value(json_object_get(d0, "why")), "ECC");
	json_decref(d);
	/* the agent's own next heartbeat says healthy again (its fake file does) */
	long long id = submit(e, "{\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"count\":2}},"
				  "\"command\":\"true\"}");
	json_decref(wait_state(e, id, "succeeded", 20));

	/* exit reasons and signals: a bad one is refused naming the field,
	 * and changes nothing */
	id = submit(e, "{\"resources\":{\"cpu\":\"100m\",\"memory\":64},\"command\":\"sleep 30\"}");
	json_decref(wait_state(e, id, "running", 20));
	static const char *const bad[][2] = {
		{ "\"reason\":\"cosmic-ray\"", "tasks[0].reason" },
		{ "\"reason\":7", "tasks[0].reason" },
		{ "\"reason\":\"\"", "tasks[0].reason" },
		{ "\"signal\":0", "tasks[0].signal" },
		{ "\"signal\":65", "tasks[0].signal" },
		{ "\"signal\":\"KILL\"", "tasks[0].signal" },
		{ "\"detail\":false", "tasks[0].detail" },
		{ "\"color\":\"red\"", "tasks[0].color" },
	};
	char body[512], path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body),
			 "{\"tasks\":[{\"job\":%lld,\"attempt\":1,\"replica\":0,\"exit_code\":137,%"
			 "s}]}",
			 id, bad[i][0]);
		json_t *r = api(e, "POST", "/v1/nodes/d-0/tasks", body, &st);
		assert_int_equal(st, 400);
		const char *f =
			json_string_value(json_object_get(json_object_get(r, "error"), "field"));
		if (!f || strcmp(f, bad[i][1]))
			fail_msg("%s: field %s, want %s", bad[i][0], f ? f : "(none)", bad[i][1]);
		json_decref(r);
	}
	char big[400];
	memset(big, 'x', 300);
	big[300] = '\0';
	snprintf(body, sizeof(body),
		 "{\"tasks\":[{\"job\":%lld,\"attempt\":1,\"replica\":0,\"exit_code\":1,"
		 "\"reason\":\"limits\",\"detail\":\"%s\"}]}",
		 id, big);
	json_decref(api(e, "POST", "/v1/nodes/d-0/tasks", body, &st));
	assert_int_equal(st, 400);
	json_t *j = api(e, "GET", path, NULL, NULL);
	assert_string_equal(str(j, "state"), "running");
	json_decref(j);
	assert_int_equal(count_events(e, "job.task", id) + count_events(e, "job.finished", id), 0);
	upload_replays(e, id);
	/* a good one: the kernel's OOM killer ended it */
	snprintf(body, sizeof(body),
		 "{\"tasks\":[{\"job\":%lld,\"attempt\":1,\"replica\":0,\"exit_code\":137,"
		 "\"signal\":9,\"reason\":\"oom\"}]}",
		 id);
	json_decref(api(e, "POST", "/v1/nodes/d-0/tasks", body, &st));
	assert_int_equal(st, 200);
	j = wait_state(e, id, "failed", 5);
	assert_string_equal(str(j, "end_reason"), "oom");
	assert_string_equal(str(j, "reason"),
			    "oom: replica 0 went over its memory limit of 64 MiB");
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 137);
	assert_int_equal(json_integer_value(json_object_get(j, "signal")), 9);
	json_decref(j);
	/* twice: stale */
	json_decref(api(e, "POST", "/v1/nodes/d-0/tasks", body, &st));
	assert_int_equal(st, 409);
	e->passed = 1;
}

/* A fake v1 cgroup root where no task cgroup can be made: memory/xpool is
 * a file (the agent starts: mkdir says EEXIST; each task: ENOTDIR). */
static void broken_v1(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/memory %s/cpu && echo max > %s/memory/memory.limit_in_bytes && "
		 "echo -1 > %s/cpu/cpu.cfs_quota_us && echo file > %s/memory/xpool",
		 dir, dir, dir, dir, dir);
	assert_int_equal(system(cmd), 0);
}

static const char *label(struct env *e, const char *node, const char *key)
{
	static char buf[64];
	char path[96];
	snprintf(path, sizeof(path), "/v1/nodes/%s", node);
	json_t *n = api(e, "GET", path, NULL, NULL);
	const char *v = json_string_value(
		json_object_get(json_object_get(json_object_get(n, "node"), "labels"), key));
	if (!v) /* the node object itself, or its descriptor */
		v = json_string_value(json_object_get(json_object_get(n, "labels"), key));
	snprintf(buf, sizeof(buf), "%s", v ? v : "");
	json_decref(n);
	return buf;
}

/* limits that cannot be set: not run, reported with the reason; the
 * --no-limits agent runs it and the job says limits were off there */
static void test_limits_refused(void **state)
{
	static const char *const names[] = { "e-0", "e-1", "e-2" }, *const vendors[] = { "NVIDIA",
											 "NVIDIA",
											 "NVIDIA" };
	static const int counts[] = { 0, 0, 0 };
	char fake[64], marker[320], body[768];
	struct env *e = &E;
	snprintf(fake, sizeof(fake), "/tmp/xpfakecgXXXXXX");
	assert_non_null(mkdtemp(fake));
	broken_v1(fake);
	const char *const roots[] = { fake, "/nonexistent", NULL };
	setup_limits(e, 3, names, vendors, counts, roots);
	assert_string_equal(label(e, "e-0", "limits"), "cgroup-v1");
	assert_string_equal(label(e, "e-1", "limits"), "unavailable");
	assert_string_equal(label(e, "e-2", "limits"), "off");
	static const char *const want[] = {
		"limits: replica 0 was not started: cgroup could not be made: ENOTDIR at ",
		"limits: replica 0 was not started: no cgroup at /nonexistent",
	};
	for (int i = 0; i < 3; i++) {
		snprintf(marker, sizeof(marker), "%s/ran-%d", e->dir, i);
		snprintf(body, sizeof(body),
			 "{\"node\":\"%s\",\"resources\":{\"cpu\":\"100m\",\"memory\":64},"
			 "\"command\":\"touch %s\"}",
			 names[i], marker);
		long long id = submit(e, body);
		json_t *j = wait_state(e, id, i < 2 ? "failed" : "succeeded", 20);
		json_t *a = json_array_get(json_object_get(j, "allocations"), 0);
		if (i == 2) {
			assert_string_equal(str(a, "limits"), "off");
			assert_int_equal(access(marker, F_OK), 0);
			json_decref(j);
			continue;
		}
		const char *why = str(j, "reason");
		if (strncmp(why, want[i], strlen(want[i])))
			fail_msg("reason '%s', want '%s...'", why, want[i]);
		assert_string_equal(str(j, "end_reason"), "limits");
		assert_true(json_is_null(json_object_get(j, "exit_code"))); /* it never ran */
		assert_int_equal(access(marker, F_OK), -1);
		json_decref(j);
	}
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", fake);
	assert_int_equal(system(cmd), 0);
	e->passed = 1;
}

/* a time limit on an agent's node: failed at once, reason time_limit; the
 * agent's SIGTERM report then gives the job its exit code and signal */
static void test_time_limit(void **state)
{
	static const char *const names[] = { "f-0" }, *const vendors[] = { "NVIDIA" };
	static const int counts[] = { 0 };
	struct env *e = &E;
	setup(e, 1, names, vendors, counts);
	long long id = submit(e, "{\"time_limit\":\"1s\",\"resources\":{\"cpu\":\"100m\","
				 "\"memory\":64},\"command\":[\"sleep\",\"60\"]}");
	json_t *j = wait_state(e, id, "failed", 20);
	assert_string_equal(str(j, "end_reason"), "time_limit");
	assert_string_equal(str(j, "reason"), "time_limit: time limit 1s exceeded");
	json_decref(j);
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
	for (int t = 0; t < 200; t++) {
		j = api(e, "GET", path, NULL, NULL);
		if (!json_is_null(json_object_get(j, "exit_code")))
			break;
		json_decref(j);
		j = NULL;
		usleep(50000);
	}
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 143);
	assert_int_equal(json_integer_value(json_object_get(j, "signal")), 15);
	assert_string_equal(str(j, "state"), "failed");
	assert_string_equal(str(j, "end_reason"), "time_limit");
	json_decref(j);
	/* once: the same report again is stale */
	long st;
	char body[256];
	snprintf(body, sizeof(body),
		 "{\"tasks\":[{\"job\":%lld,\"attempt\":1,\"replica\":0,\"exit_code\":0}]}", id);
	json_decref(api(e, "POST", "/v1/nodes/f-0/tasks", body, &st));
	assert_int_equal(st, 409);
	e->passed = 1;
}

/* the interposer's variables, as a replica sees them */
#define VGPU_JOB(extra, cmd)                                                                       \
	"{\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"fraction\":0.3,"      \
	"\"memory\":\"4Gi\",\"vendor\":\"NVIDIA\"}}," extra                                      \
	"\"env\":{\"ASAN_OPTIONS\":\"verify_asan_link_order=0:detect_leaks=0\"},"                 \
	"\"command\":\"" cmd "\"}"
#define VGPU_ECHO "echo P=${LD_PRELOAD##*/} M=$XPOOL_VGPU_MEMORY_MIB C=$XPOOL_VGPU_COMPUTE_MILLI"

static void test_vgpu_limits(void **state)
{
	static const char *const names[] = { "g-0", "g-1" }, *const vendors[] = { "NVIDIA",
										 "NVIDIA" };
	static const int counts[] = { 1, 1 };
	struct env *e = &E;
	setup(e, 1, names, vendors, counts);
	long long id = submit(e, VGPU_JOB("", VGPU_ECHO));
	json_decref(wait_state(e, id, "succeeded", 20));
	char *out = logs(e, id);
	if (!strstr(out, "P=libxpool-vgpu.so M=4096 C=300"))
		fail_msg("a 0.3 share with 4 GiB: '%s'", out);
	free(out);
	char acct[512]; /* it registered (no CUDA driver here: it limits nothing) */
	snprintf(acct, sizeof(acct), "%s/work-g-0/tasks/%lld-0-1/vgpu.acct", e->dir, id);
	assert_int_equal(access(acct, F_OK), 0);
	/* device memory alone: a share sized by memory, 4 of 16 GiB, and both
	 * limits set for the interposer */
	id = submit(e, "{\"priority\":7,\"resources\":{\"cpu\":\"100m\",\"memory\":64,"
		       "\"devices\":{\"memory\":\"4Gi\",\"vendor\":\"NVIDIA\"}},\"env\":{"
		       "\"ASAN_OPTIONS\":\"verify_asan_link_order=0:detect_leaks=0\"},\"command\":"
		       "\"" VGPU_ECHO " F=$XPOOL_DEVICE_FRACTION B=$XPOOL_VGPU_BOARD "
		       "R=$XPOOL_VGPU_PRIORITY\"}");
	json_decref(wait_state(e, id, "succeeded", 20));
	out = logs(e, id);
	if (!strstr(out, "P=libxpool-vgpu.so M=4096 C=250 F=0.250 B="))
		fail_msg("4 GiB alone on a 16 GiB GPU: '%s'", out);
	/* the GPU's board for priority between its jobs, with the job's priority */
	if (!strstr(out, "/work-g-0/vgpu/gpu0.board R=7"))
		fail_msg("board and priority: '%s'", out);
	free(out);
	id = submit(e, VGPU_JOB("\"vgpu\":\"off\",", VGPU_ECHO));
	json_decref(wait_state(e, id, "succeeded", 20));
	out = logs(e, id);
	if (!strstr(out, "P= M= C="))
		fail_msg("vgpu: off: '%s'", out);
	free(out);
	/* an agent whose replicas load a library that never registers */
	snprintf(e->names[1], sizeof(e->names[1]), "%s", names[1]);
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.yaml", e->dir, names[1]);
	write_devices(path, names[1], vendors[1], counts[1]);
	setenv("XPOOL_VGPU_LIB", XP_FAKE_NVML, 1);
	start_agent(e, 1);
	unsetenv("XPOOL_VGPU_LIB");
	e->n = 2;
	wait_nodes_ready(e, 2);
	stop_agent(e, 0, SIGTERM); /* only g-1 can take it */
	id = submit(e, VGPU_JOB("", "sleep 60"));
	json_t *j = wait_state(e, id, "failed", 30);
	assert_string_equal(str(j, "end_reason"), "limits");
	if (!strstr(str(j, "reason"), "vgpu: no process of the replica loaded libxpool-vgpu.so"))
		fail_msg("reason: '%s'", str(j, "reason"));
	json_decref(j);
	/* a GPU the admin time-slices: the share is announced, nothing preloaded */
	snprintf(e->names[2], sizeof(e->names[2]), "g-2");
	snprintf(path, sizeof(path), "%s/g-2.yaml", e->dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "nodes:\n  - {name: g-2, cpu: 4, memory: 8Gi, devices: [{type: gpu, vendor: "
		   "NVIDIA, model: Fake-NVIDIA, memory: 16Gi, uuid: GPU-g-2-0, mode: timeslice, "
		   "timeslice: {replicas: 4}}]}\n");
	fclose(f);
	start_agent(e, 2);
	e->n = 3;
	wait_nodes_ready(e, 2);
	stop_agent(e, 1, SIGTERM);
	id = submit(e, VGPU_JOB("", VGPU_ECHO " D=$XPOOL_DEVICE_MODE F=$XPOOL_DEVICE_FRACTION"));
	json_decref(wait_state(e, id, "succeeded", 20));
	out = logs(e, id);
	if (!strstr(out, "P= M= C= D=timeslice F=0.300"))
		fail_msg("timeslice: '%s'", out);
	free(out);
	/* one whole GPU there is one of its 4 replicas: a quarter, nothing preloaded */
	id = submit(e, "{\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"count\":1,"
		       "\"vendor\":\"NVIDIA\"}},\"command\":\"" VGPU_ECHO
		       " D=$XPOOL_DEVICE_MODE F=$XPOOL_DEVICE_FRACTION\"}");
	json_decref(wait_state(e, id, "succeeded", 20));
	out = logs(e, id);
	if (!strstr(out, "P= M= C= D=timeslice F=0.250"))
		fail_msg("timeslice replica: '%s'", out);
	free(out);
	j = api(e, "GET", "/v1/devices?node=g-2", NULL, NULL);
	json_t *dv = json_array_get(json_object_get(j, "devices"), 0);
	assert_string_equal(str(dv, "mode"), "timeslice");
	assert_true(json_is_false(json_object_get(dv, "isolated")));
	assert_string_equal(str(dv, "not_isolated"), "memory, compute");
	assert_int_equal(json_integer_value(json_object_get(dv, "replicas")), 4);
	json_decref(j);
	e->passed = 1;
}


/* the GPU job's usage from its vGPU account, in the job's allocation */
static long long gpu_use(struct env *e, long long id, const char *key)
{
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
	json_t *j = api(e, "GET", path, NULL, NULL);
	json_t *g = json_object_get(json_array_get(json_object_get(j, "allocations"), 0),
				    "gpu_usage");
	long long v = g ? json_integer_value(json_object_get(g, key)) : -1;
	json_decref(j);
	return v;
}

/* until the job's gpu_usage has key = want, 30 s of wall clock at most */
static int wait_gpu_use(struct env *e, long long id, const char *key, long long want)
{
	for (int64_t end = xp_test_now_ms() + 30000; gpu_use(e, id, key) != want;) {
		if (xp_test_now_ms() > end)
			return 0;
		usleep(50000);
	}
	return 1;
}

/* the fake CUDA driver on a 16 GiB GPU, for a job's environment */
#define FAKE_GPU_ENV(dir)                                                                          \
	"\"env\":{\"ASAN_OPTIONS\":\"verify_asan_link_order=0:detect_leaks=0\","           \
	"\"LD_LIBRARY_PATH\":\"" XP_FAKE_CUDA_DIR "\",\"FAKE_CUDA_MEM_MIB\":\"16384\","          \
	"\"FAKE_CUDA_STATE\":\"%s/cuda.state\"},"

/* what a replica's vGPU account says reaches the job (memory held), the
 * metrics and the alerts: two 9 GiB shares admitted on a 16 GiB GPU
 * overcommitted 1.5 x, the second allocation refused by the full device */
static void test_vgpu_usage(void **state)
{
	struct env *e = &E;
	char body[2048], path[320];
	(void)state;
	setup(e, 0, NULL, NULL, NULL);
	snprintf(e->names[0], sizeof(e->names[0]), "u-0");
	snprintf(path, sizeof(path), "%s/u-0.yaml", e->dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "nodes:\n  - {name: u-0, cpu: 4, memory: 8Gi, overcommit: {memory: 1.5},\n"
		   "     devices: [{type: gpu, vendor: NVIDIA, memory: 16Gi, uuid: GPU-u-0}]}\n");
	fclose(f);
	start_agent(e, 0);
	e->n = 1;
	wait_nodes_ready(e, 1);
	snprintf(body, sizeof(body),
		 "{\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"fraction\":"
		 "0.3,\"memory\":\"9Gi\"}}," FAKE_GPU_ENV("%s") "\"command\":\"%s hold 8500; "
		 "sleep 60\"}",
		 e->dir, XP_VGPU_APP);
	long long a = submit(e, body);
	json_decref(wait_state(e, a, "running", 20));
	if (!wait_gpu_use(e, a, "memory_mib", 8500))
		fail_msg("job %lld: memory held never reported (%lld)", a,
			 gpu_use(e, a, "memory_mib"));
	long long b = submit(e, body); /* admitted: 18 of 24 GiB; the GPU has 16 */
	json_decref(wait_state(e, b, "running", 20));
	if (!wait_gpu_use(e, b, "device_ooms", 1))
		fail_msg("job %lld: device OOM never reported (%lld)", b,
			 gpu_use(e, b, "device_ooms"));
	assert_int_equal(gpu_use(e, b, "memory_mib"), 0);
	assert_int_equal(gpu_use(e, b, "ooms_at_cap"), 0);
	char *m = xp_test_http(e->ctl->addr, e->ctl->admin_token, "GET", "/metrics", NULL, NULL);
	if (!strstr(m, "xpool_vgpu_ooms_total{kind=\"device\"} 1\n"))
		fail_msg("metrics: %.300s", strstr(m, "xpool_vgpu") ? strstr(m, "xpool_vgpu") : m);
	free(m);
	json_t *al = api(e, "GET", "/v1/alerts", NULL, NULL);
	char *txt = json_dumps(al, 0);
	if (!strstr(txt, "gpu_out_of_memory") || !strstr(txt, "u-0/gpu0"))
		fail_msg("alerts: %.400s", txt);
	free(txt);
	json_decref(al);
	/* their processes do not name the work folder teardown's pkill looks for */
	for (long long id = a; id <= b; id += b - a) {
		snprintf(path, sizeof(path), "/v1/jobs/%lld/cancel", id);
		json_decref(api(e, "POST", path, NULL, NULL));
		json_decref(wait_state(e, id, "cancelled", 20));
	}
	for (int64_t end = xp_test_now_ms() + 30000;
	     system("pgrep -f '[x]p-vgpu-app hold 8500' >/dev/null") == 0 && xp_test_now_ms() < end;)
		usleep(50000);
	e->passed = 1;
}

/* ---- MIG: the live path through the real dlopen of the fake NVML ---- */

/* an agent discovering its GPUs through the fake NVML (no --devices) */
static void start_nvml_agent(struct env *e, int i)
{
	char work[128];
	snprintf(work, sizeof(work), "%s/work-%s", e->dir, e->names[i]);
	pid_t p = fork();
	if (p == 0) {
		char log[160];
		snprintf(log, sizeof(log), "%s/%s.log", e->dir, e->names[i]);
		freopen(log, "a", stderr);
		execl(XP_BINARY, XP_BINARY, "agent", "--server", e->ctl->addr, "--token",
		      e->ctl->admin_token, "--node-name", e->names[i], "--work", work,
		      "--heartbeat", "200ms", "--grace", "1s", "--cgroup-root", "/nonexistent",
		      "--no-limits", (char *)NULL);
		_exit(127);
	}
	e->agents[i] = p;
}

static const char *const mig_env[] = { "FAKE_NVML_STATE", "FAKE_NVML_COUNT", "FAKE_NVML_NAME",
				       "FAKE_NVML_MEM_MIB", "FAKE_NVML_MIG", "XP_HAL_NVIDIA_LIB",
				       "XP_HAL_AMD_LIB", "XP_HAL_ASCEND_LIB", "XP_HAL_CAMBRICON_LIB",
				       NULL };

/* the GPU instances on GPU 0, as the fake's state file holds them */
static unsigned mig_instances(struct xp_hal_mig *m)
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
	/* the agent makes an instance in two NVML calls: a list between them
	 * fails, and is tried again (60 s of wall time at most) */
	int64_t end = xp_test_now_ms() + 60000;
	int rc;
	while ((rc = xp_hal_mig_list(h, 0, m, &err)) < 0 && xp_test_now_ms() < end)
		usleep(10000);
	if (rc < 0)
		fail_msg("mig_list: %s", err.text);
	xp_cluster_destroy(c);
	xp_hal_close(h);
	return m->n;
}

/* MIG instances on the fake GPU until there are want, for secs at most */
static int wait_instances(struct xp_hal_mig *m, int want, int secs)
{
	int64_t end = xp_test_now_ms() + secs * 1000;
	while (mig_instances(m) != (unsigned)want && xp_test_now_ms() < end)
		usleep(20000);
	return (int)m->n;
}

static void touch(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
}

static void test_mig_live(void **state)
{
	(void)state;
	struct env *e = &E;
	struct xp_hal_mig m;
	char path[400];
	setup(e, 0, NULL, NULL, NULL);
	snprintf(path, sizeof(path), "%s/nvml.state", e->dir);
	setenv("FAKE_NVML_STATE", path, 1);
	setenv("FAKE_NVML_COUNT", "1", 1);
	setenv("FAKE_NVML_NAME", "NVIDIA A100-SXM4-80GB", 1);
	setenv("FAKE_NVML_MEM_MIB", "81920", 1);
	setenv("FAKE_NVML_MIG", "0", 1);
	setenv("XP_HAL_NVIDIA_LIB", XP_FAKE_NVML, 1);
	setenv("XP_HAL_AMD_LIB", "/nonexistent/x.so", 1);
	setenv("XP_HAL_ASCEND_LIB", "/nonexistent/x.so", 1);
	setenv("XP_HAL_CAMBRICON_LIB", "/nonexistent/x.so", 1);
	snprintf(e->names[0], sizeof(e->names[0]), "mig-0");
	start_nvml_agent(e, 0);
	e->n = 1;
	wait_nodes_ready(e, 1);
	/* each job runs until the test lets it end (go1, go2): no race with
	 * how fast a loaded machine starts it */
	char body[512], go[400];
	snprintf(body, sizeof(body),
		 "{\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"mig\":{"
		 "\"profile\":\"3g.40gb\"}}},\"command\":\"echo CUDA=$CUDA_VISIBLE_DEVICES.; "
		 "until [ -e %s/go1 ]; do sleep 0.05; done\"}",
		 e->dir);
	long long id = submit(e, body);
	json_t *j = wait_state(e, id, "running", 20);
	json_decref(j);
	assert_int_equal(wait_instances(&m, 1, 30), 1);
	assert_int_equal(m.inst[0].profile_id, 9);
	assert_int_equal(m.inst[0].start, 4); /* xpool's pick on an empty GPU */
	char want[128];
	snprintf(want, sizeof(want), "CUDA=%s.", m.inst[0].uuid);
	snprintf(go, sizeof(go), "%s/go1", e->dir);
	touch(go);
	json_decref(wait_state(e, id, "succeeded", 30));
	char *out = logs(e, id);
	if (!strstr(out, want))
		fail_msg("output '%s' lacks '%s'", out, want);
	free(out);
	assert_int_equal(wait_instances(&m, 0, 30), 0); /* destroyed when the replica ended */

	/* an agent restart mid-job: the new agent adopts the task and its
	 * instance, runs nothing twice and destroys it at the end */
	snprintf(body, sizeof(body),
		 "{\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"mig\":{"
		 "\"profile\":\"3g.40gb\"}}},\"command\":\"echo RUN=$CUDA_VISIBLE_DEVICES.; "
		 "until [ -e %s/go2 ]; do sleep 0.05; done\"}",
		 e->dir);
	id = submit(e, body);
	json_decref(wait_state(e, id, "running", 20));
	assert_int_equal(wait_instances(&m, 1, 30), 1);
	uint32_t gi = m.inst[0].gi_id;
	/* it started, and the agent uploaded its line: the new agent must not
	 * upload it again */
	for (int64_t end = xp_test_now_ms() + 30000; xp_test_now_ms() < end; usleep(20000)) {
		out = logs(e, id);
		int sent = strstr(out, "RUN=MIG-") != NULL;
		free(out);
		if (sent)
			break;
	}
	stop_agent(e, 0, SIGKILL);
	start_nvml_agent(e, 0);
	assert_int_equal(mig_instances(&m), 1);
	assert_int_equal(m.inst[0].gi_id, gi); /* the same instance, still there */
	snprintf(go, sizeof(go), "%s/go2", e->dir);
	touch(go);
	json_decref(wait_state(e, id, "succeeded", 30));
	assert_int_equal(wait_instances(&m, 0, 30), 0);
	out = logs(e, id);
	int twice = !strstr(out, "RUN=MIG-") || strstr(strstr(out, "RUN=MIG-") + 1, "RUN=");
	char shown[256];
	snprintf(shown, sizeof(shown), "%s", out);
	free(out);
	if (twice)
		fail_msg("ran or logged twice: '%s'", shown);
	assert_int_equal(count_events(e, "job.requeued", id), 0);
	for (int i = 0; mig_env[i]; i++)
		unsetenv(mig_env[i]);
	e->passed = 1;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_visible_devices, teardown),
		cmocka_unit_test_teardown(test_vgpu_usage, teardown),
		cmocka_unit_test_teardown(test_lost_agent_requeue, teardown),
		cmocka_unit_test_teardown(test_restart_no_duplicate, teardown),
		cmocka_unit_test_teardown(test_reports_checked, teardown),
		cmocka_unit_test_teardown(test_limits_refused, teardown),
		cmocka_unit_test_teardown(test_time_limit, teardown),
		cmocka_unit_test_teardown(test_vgpu_limits, teardown),
		cmocka_unit_test_teardown(test_mig_live, teardown),
	};
	int rc = xp_run_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
