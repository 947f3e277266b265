/*
 * test_agents_elastic: an elastic job (replicas: {min: 2, max: 4}) with a
 * real controller (in this process) and two real `xpool agent` processes
 * on loopback, 2 fake NVIDIA GPUs each (test_agents.c's set-up, trimmed).
 *  - a fixed 2-GPU job holds half the pool: the elastic job starts at its
 *    min, 2 replicas, epoch 0;
 *  - that job is cancelled: the elastic job grows to 4 (epoch 1), every
 *    replica restarted with the new world size;
 *  - a 2-GPU job of higher priority arrives: the elastic job shrinks to 2
 *    (epoch 2) instead of being preempted, and the new job runs;
 *  - an agent killed: its node is lost and the job keeps its replicas on
 *    the other node (a shrink, not a requeue); the agent back, it grows.
 * Every replica writes what it saw (XPOOL_WORLD_SIZE, XPOOL_RANK,
 * XPOOL_RESTART_EPOCH and torchrun's WORLD_SIZE, RANK,
 * TORCHELASTIC_RESTART_COUNT) to a file named by its epoch and rank, and
 * marks the checkpoint signal (SIGUSR1) when it gets it, then exits. Each
 * wait is for a condition, with a wall-clock deadline. The agents run with
 * --stop-tasks, so stopping them at the end stops every task.
 */
#include "testutil.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/xalloc.h"
#include "server/ctl.h"

struct env {
	char dir[64];
	struct xp_ctl *ctl;
	pid_t agents[2];
	char names[2][32];
	int passed;
};

static struct env E;


static json_t *api(struct env *e, const char *method, const char *path, const char *body,
		   long *status)
{
	return xp_test_api(e->ctl->addr, e->ctl->admin_token, method, path, body, status);
}

static void start_agent(struct env *e, int i)
{
	char devs[128], work[128];
	snprintf(devs, sizeof(devs), "%s/%s.yaml", e->dir, e->names[i]);
	snprintf(work, sizeof(work), "%s/work-%s", e->dir, e->names[i]);
	FILE *f = fopen(devs, "w");
	assert_non_null(f);
	fprintf(f, "nodes:\n  - name: %s\n    cpu: 4\n    memory: 8Gi\n    devices:\n",
		e->names[i]);
	for (int d = 0; d < 2; d++)
		fprintf(f,
			"      - {type: gpu, vendor: NVIDIA, model: Fake, memory: 16Gi, uuid: "
			"GPU-%s-%d}\n",
			e->names[i], d);
	fclose(f);
	pid_t p = fork();
	if (p == 0) {
		char log[160];
		snprintf(log, sizeof(log), "%s/%s.log", e->dir, e->names[i]);
		/* nothing of ctest's: its output pipe must not outlive the test */
		if (!freopen(log, "a", stderr) || !freopen("/dev/null", "w", stdout) ||
		    !freopen("/dev/null", "r", stdin))
			_exit(127);
		execl(XP_BINARY, XP_BINARY, "agent", "--server", e->ctl->addr, "--token",
		      e->ctl->admin_token, "--node-name", e->names[i], "--devices", devs, "--work",
		      work, "--heartbeat", "200ms", "--grace", "1s", "--no-limits", "--stop-tasks",
		      (char *)NULL);
		_exit(127);
	}
	e->agents[i] = p;
}

/* poll cond(e, arg) until it holds or ms pass; 1 when it held */
static int wait_until(struct env *e, int (*cond)(struct env *, const void *), const void *arg,
		      int ms)
{
	int64_t end = xp_test_now_ms() + ms;
	for (;;) {
		if (cond(e, arg))
			return 1;
		if (xp_test_now_ms() > end)
			return 0;
		usleep(50000);
	}
}

static int nodes_ready(struct env *e, const void *arg)
{
	json_t *o = api(e, "GET", "/v1/nodes", NULL, NULL), *nd;
	size_t i;
	int ready = 0;
	(void)arg;
	json_array_foreach(json_object_get(o, "nodes"), i, nd) ready +=
		!strcmp(json_string_value(json_object_get(nd, "state")), "ready");
	json_decref(o);
	return ready == 2;
}

static void setup(struct env *e)
{
	struct xp_ctl_opts o = { 0 };
	struct xp_err err = { 0 };
	char data[128], out[128];
	memset(e, 0, sizeof(*e));
	snprintf(e->dir, sizeof(e->dir), "/tmp/xpelasticXXXXXX");
	assert_non_null(mkdtemp(e->dir));
	snprintf(data, sizeof(data), "%s/ctl", e->dir);
	snprintf(out, sizeof(out), "%s/out", e->dir);
	assert_int_equal(mkdir(out, 0755), 0);
	o.data = data;
	o.listen = "127.0.0.1:0";
	o.sync = 1;
	o.heartbeat_ms = 200;
	o.lost_ms = 1500;
	if (xp_ctl_start(&o, &e->ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	for (int i = 0; i < 2; i++) {
		snprintf(e->names[i], sizeof(e->names[i]), "el-%d", i);
		start_agent(e, i);
	}
	if (!wait_until(e, nodes_ready, NULL, 20000))
		fail_msg("agents did not register");
}

static int teardown(void **state)
{
	struct env *e = &E;
	(void)state;
	if (!e->ctl)
		return 0;
	for (int i = 0; i < 2; i++)
		if (e->agents[i] > 0) {
			kill(e->agents[i], SIGTERM);
			waitpid(e->agents[i], NULL, 0);
		}
	xp_ctl_stop(e->ctl);
	e->ctl = NULL;
	for (int i = 0; !e->passed && i < 2; i++) {
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "echo '--- agent %s:'; cat %s/%s.log; ls %s/out",
			 e->names[i], e->dir, e->names[i], e->dir);
		if (system(cmd)) {
		}
	}
	/* the agents ran with --stop-tasks: their tasks ended before they did */
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s %s", getenv("XP_TEST_KEEP") ? "echo kept" : "rm -rf",
		 e->dir);
	if (system(cmd)) {
	}
	return 0;
}

static long long submit(struct env *e, const char *body)
{
	long st;
	json_t *r = api(e, "POST", "/v1/jobs", body, &st);
	if (st != 201) {
		char *s = json_dumps(r, 0);
		fail_msg("submit %ld: %s", st, s);
	}
	long long id = json_integer_value(json_object_get(r, "id"));
	json_decref(r);
	return id;
}

static json_t *job(struct env *e, long long id)
{
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld", id);
	return api(e, "GET", path, NULL, NULL);
}

struct want {
	long long id;
	const char *state;
	int size; /* elastic size, 0: any */
};

static int job_is(struct env *e, const void *arg)
{
	const struct want *w = arg;
	json_t *j = job(e, w->id);
	int ok = !strcmp(json_string_value(json_object_get(j, "state")), w->state) &&
		 (!w->size || json_integer_value(json_object_get(json_object_get(j, "elastic"),
								 "size")) == w->size);
	json_decref(j);
	return ok;
}

static void wait_job(struct env *e, long long id, const char *state, int size)
{
	struct want w = { id, state, size };
	if (!wait_until(e, job_is, &w, 30000)) {
		json_t *j = job(e, id);
		char *s = json_dumps(j, 0);
		fail_msg("job %lld is not %s at size %d: %s", id, state, size, s);
	}
}

/* what replica `rank` of epoch `epoch` wrote, or NULL */
static char *seen(struct env *e, const char *what, int epoch, int rank)
{
	char path[160];
	snprintf(path, sizeof(path), "%s/out/%s%d-r%d", e->dir, what, epoch, rank);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char buf[512] = "";
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return xstrdup(buf);
}

struct epoch_want {
	const char *what;
	int epoch, n;
};

static int all_written(struct env *e, const void *arg)
{
	const struct epoch_want *w = arg;
	for (int r = 0; r < w->n; r++) {
		char *s = seen(e, w->what, w->epoch, r);
		if (!s)
			return 0;
		free(s);
	}
	return 1;
}

/* every replica of epoch saw world size n, its rank and the epoch */
static void check_epoch(struct env *e, int epoch, int n)
{
	struct epoch_want w = { "e", epoch, n };
	if (!wait_until(e, all_written, &w, 30000))
		fail_msg("epoch %d: not every one of %d replicas started", epoch, n);
	for (int r = 0; r < n; r++) {
		char want[160], *s = seen(e, "e", epoch, r);
		snprintf(want, sizeof(want), "W=%d R=%d E=%d WS=%d RK=%d TC=%d", n, r, epoch, n, r,
			 epoch);
		if (strncmp(s, want, strlen(want)))
			fail_msg("epoch %d replica %d saw '%s', wanted '%s'", epoch, r, s, want);
		assert_non_null(strstr(s, " M=")); /* rank 0's address, the job's port */
		assert_non_null(strstr(s, ":2000"));
		free(s);
	}
	char *extra = seen(e, "e", epoch, n); /* no more replicas than the size */
	assert_null(extra);
}

#define ELASTIC_CMD                                                                                \
	"D=%s/out; F=$D/e$XPOOL_RESTART_EPOCH-r$XPOOL_RANK; "                                      \
	"echo \\\"W=$XPOOL_WORLD_SIZE R=$XPOOL_RANK E=$XPOOL_RESTART_EPOCH WS=$WORLD_SIZE "        \
	"RK=$RANK TC=$TORCHELASTIC_RESTART_COUNT M=$MASTER_ADDR:$MASTER_PORT\\\" > $F.tmp; "       \
	"mv $F.tmp $F; trap 'touch $D/c$XPOOL_RESTART_EPOCH-r$XPOOL_RANK; exit 0' USR1; "          \
	"while :; do sleep 0.05; done"

static int count_events(struct env *e, const char *type, long long id)
{
	json_t *o = api(e, "GET", "/v1/events?since=0&limit=10000", NULL, NULL), *ev;
	size_t i;
	int n = 0;
	json_array_foreach(json_object_get(o, "events"), i, ev) n +=
		!strcmp(json_string_value(json_object_get(ev, "type")), type) &&
		json_integer_value(json_object_get(ev, "job")) == id;
	json_decref(o);
	return n;
}

static void test_grow_and_shrink(void **state)
{
	struct env *e = &E;
	char body[1024];
	(void)state;
	setup(e);
	long long a = submit(e, "{\"replicas\":2,\"resources\":{\"cpu\":\"100m\",\"memory\":64,"
				"\"devices\":{\"count\":1}},\"command\":\"sleep 300\"}");
	wait_job(e, a, "running", 0);
	snprintf(body, sizeof(body),
		 "{\"name\":\"train\",\"replicas\":{\"min\":2,\"max\":4},"
		 "\"checkpoint\":{\"signal\":\"SIGUSR1\",\"grace\":\"5s\"},"
		 "\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"count\":1}},"
		 "\"command\":\"" ELASTIC_CMD "\"}",
		 e->dir);
	long long el = submit(e, body);
	wait_job(e, el, "running", 2); /* at its min: what fits */
	check_epoch(e, 0, 2);

	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%lld", a);
	json_decref(api(e, "DELETE", path, NULL, NULL));
	wait_job(e, el, "running", 4); /* grew into what a left */
	check_epoch(e, 1, 4);
	struct epoch_want ck = { "c", 0, 2 }; /* epoch 0 was told to checkpoint */
	if (!wait_until(e, all_written, &ck, 60000))
		fail_msg("epoch 0's replicas got no checkpoint signal");

	long long h =
		submit(e, "{\"priority\":10,\"replicas\":2,\"resources\":{\"cpu\":\"100m\","
			  "\"memory\":64,\"devices\":{\"count\":1}},\"command\":\"sleep 300\"}");
	wait_job(e, h, "running", 0);
	wait_job(e, el, "running", 2); /* shrank, not preempted */
	check_epoch(e, 2, 2);
	ck.epoch = 1;
	ck.n = 4; /* the two that left and the two that stayed */
	if (!wait_until(e, all_written, &ck, 60000))
		fail_msg("epoch 1's replicas got no checkpoint signal");
	json_t *j = job(e, el);
	json_t *x = json_object_get(j, "elastic");
	assert_int_equal(json_integer_value(json_object_get(j, "preemptions")), 0);
	assert_int_equal(json_integer_value(json_object_get(x, "epoch")), 2);
	assert_int_equal(json_integer_value(json_object_get(x, "resizes")), 2);
	const char *why = json_string_value(json_object_get(x, "last_reason"));
	if (!why || strncmp(why, "shrink: job", 11))
		fail_msg("last reason: %s", why ? why : "(none)");
	json_decref(j);
	assert_int_equal(count_events(e, "job.resized", el), 2);
	snprintf(path, sizeof(path), "/v1/jobs/%lld/explain", el);
	j = api(e, "GET", path, NULL, NULL);
	const char *sum = json_string_value(json_object_get(j, "summary"));
	if (!sum || !strstr(sum, "2 of 2..4 replicas, epoch 2"))
		fail_msg("explain: %s", sum ? sum : "(none)");
	json_decref(j);
	e->passed = 1;
}

/* an agent killed: its node is lost, and the elastic job keeps the
 * replicas of the other node (shrinks, not requeued); the agent back, its
 * old tasks are stopped and the job grows again */
static void test_node_lost(void **state)
{
	struct env *e = &E;
	char body[1024];
	(void)state;
	setup(e);
	snprintf(body, sizeof(body),
		 "{\"replicas\":{\"min\":1,\"max\":4},\"checkpoint\":{\"grace\":\"2s\"},"
		 "\"resources\":{\"cpu\":\"100m\",\"memory\":64,\"devices\":{\"count\":1}},"
		 "\"command\":\"" ELASTIC_CMD "\"}",
		 e->dir);
	long long el = submit(e, body);
	wait_job(e, el, "running", 4); /* started at 1, grew into the rest at once */
	check_epoch(e, 1, 4);
	kill(e->agents[1], SIGKILL);
	waitpid(e->agents[1], NULL, 0);
	e->agents[1] = 0;
	wait_job(e, el, "running", 2);
	check_epoch(e, 2, 2);
	json_t *j = job(e, el);
	assert_int_equal(json_integer_value(json_object_get(j, "requeues")), 0);
	assert_int_equal(json_integer_value(json_object_get(j, "attempts")), 1);
	const char *why =
		json_string_value(json_object_get(json_object_get(j, "elastic"), "last_reason"));
	if (!why || !strstr(why, "node el-1 was lost"))
		fail_msg("last reason: %s", why ? why : "(none)");
	json_decref(j);
	start_agent(e, 1); /* it stops what it ran before; the job grows back */
	wait_job(e, el, "running", 4);
	check_epoch(e, 3, 4);
	e->passed = 1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_grow_and_shrink, teardown),
		cmocka_unit_test_teardown(test_node_lost, teardown),
	};
	return xp_run_tests(tests, NULL, NULL);
}
