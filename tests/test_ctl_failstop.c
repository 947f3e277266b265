/*
 * test_ctl_failstop: the controller when its journal fails (fail-stop,
 * docs/design/controller.md), through a fault-injecting SQLite VFS
 * (faultvfs.h) - no tmpfs, no root:
 *
 *  - disk full: the submit whose commit fails is answered 500; the
 *    controller calls on_fatal, /readyz says 503 from then on and so does
 *    every read; after a restart every acknowledged job is there with the
 *    id it was given, the failed one is not, and the next job gets an id no
 *    reply ever showed for another job;
 *  - a read while a commit is in flight (its fsync held) waits for that
 *    commit and, when the commit fails, is refused: no reply ever shows the
 *    job whose commit failed;
 *  - a real `xpool server` whose commit fails (a trigger refuses the
 *    record, the same path as a full disk) exits with status 1 promptly,
 *    saying why.
 */
#include "testutil.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "faultvfs.h"
#include "lib/clock.h"
#include "lib/fileio.h"
#include "server/ctl.h"
#include "store/store_int.h"

/* ---- the in-process controller ---- */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_fatal;

static void on_fatal(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&g_mu);
	g_fatal++;
	pthread_cond_broadcast(&g_cv);
	pthread_mutex_unlock(&g_mu);
}

static void wait_fatal(void)
{
	pthread_mutex_lock(&g_mu);
	while (!g_fatal)
		pthread_cond_wait(&g_cv, &g_mu);
	pthread_mutex_unlock(&g_mu);
}

static struct xp_ctl *start(const char *dir, const char *vfs)
{
	static char cluster[4096];
	struct xp_ctl_opts o = { 0 };
	struct xp_ctl *ctl = NULL;
	struct xp_err err = { 0 };
	snprintf(cluster, sizeof(cluster), "%s/examples/clusters/small.yaml", XP_SOURCE_DIR);
	o.data = dir;
	o.listen = "127.0.0.1:0";
	o.cluster = cluster;
	o.sync = 1;
	o.store_vfs = vfs;
	o.on_fatal = on_fatal;
	if (xp_ctl_start(&o, &ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	pthread_mutex_lock(&g_mu);
	g_fatal = 0;
	pthread_mutex_unlock(&g_mu);
	return ctl;
}

static char g_token[128];

static void read_token(const char *dir)
{
	char p[256], *t;
	size_t n;
	struct xp_err err;
	snprintf(p, sizeof(p), "%s/admin.token", dir);
	assert_int_equal(xp_read_file(p, 4096, &t, &n, &err), 0);
	t[strcspn(t, "\n")] = '\0';
	snprintf(g_token, sizeof(g_token), "%s", t);
	free(t);
}

static char *req(const char *addr, const char *method, const char *path, const char *body, long *st)
{
	return xp_test_http(addr, g_token, method, path, body, st);
}

/* Submit a job named name; its id, or 0 with *st the status when refused. */
static uint64_t submit(struct xp_ctl *ctl, const char *name, long *st)
{
	char body[256];
	snprintf(body, sizeof(body),
		 "{\"name\":\"%s\",\"resources\":{\"cpu\":1},\"duration\":\"1h\"}", name);
	char *r = req(ctl->addr, "POST", "/v1/jobs", body, st);
	uint64_t id = 0;
	if (*st == 201) {
		json_t *o = json_loads(r, 0, NULL);
		id = (uint64_t)json_integer_value(json_object_get(o, "id"));
		json_decref(o);
	}
	free(r);
	return id;
}

/* The name of job id in a job list, or NULL. */
static const char *name_in(json_t *list, uint64_t id)
{
	size_t i;
	json_t *j;
	json_array_foreach(
		json_object_get(list, "jobs"), i,
		j) if ((uint64_t)json_integer_value(json_object_get(j, "id")) ==
		       id) return json_string_value(json_object_get(json_object_get(j, "spec"),
								    "name"))
		?: json_string_value(json_object_get(j, "name"));
	return NULL;
}

static json_t *jobs(struct xp_ctl *ctl)
{
	long st;
	json_t *o = xp_test_json(ctl->addr, g_token, "GET", "/v1/jobs?limit=1000", NULL, &st);
	assert_int_equal(st, 200);
	return o;
}

static void expect_unavailable(struct xp_ctl *ctl, const char *path)
{
	long st;
	char *r = req(ctl->addr, "GET", path, NULL, &st);
	if (st != 503 || !strstr(r, "journal"))
		fail_msg("GET %s after the failure: %ld %s", path, st, r);
	print_message("  GET %s: %ld %s\n", path, st, r);
	free(r);
}

/* After a restart on the default VFS: the acknowledged jobs with their ids, not the lost
 * one, and a new id that no reply showed before. */
static void check_restart(const char *dir, const uint64_t *ids, char names[][16], int n,
			  const char *lost)
{
	struct xp_ctl *ctl = start(dir, NULL);
	json_t *l = jobs(ctl);
	for (int i = 0; i < n; i++) {
		const char *got = name_in(l, ids[i]);
		if (!got || strcmp(got, names[i]))
			fail_msg("job %llu was %s, is %s after the restart",
				 (unsigned long long)ids[i], names[i], got ? got : "gone");
	}
	char *text = json_dumps(l, JSON_COMPACT);
	assert_null(strstr(text, lost));
	free(text);
	json_decref(l);
	long st;
	uint64_t next = submit(ctl, "after", &st);
	assert_int_equal(st, 201);
	for (int i = 0; i < n; i++)
		assert_true(next > ids[i]);
	print_message("  restart: %d acknowledged jobs there, '%s' not, the next id %llu\n", n,
		      lost, (unsigned long long)next);
	xp_ctl_stop(ctl);
}

static void test_disk_full(void **state)
{
	(void)state;
	char dir[] = "/tmp/xpfailstopXXXXXX";
	uint64_t ids[4];
	char names[4][16];
	long st;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(xp_faultvfs_register(), SQLITE_OK);
	struct xp_ctl *ctl = start(dir, XP_FAULTVFS);
	read_token(dir);
	for (int i = 0; i < 4; i++) {
		snprintf(names[i], sizeof(names[i]), "ok-%d", i);
		ids[i] = submit(ctl, names[i], &st);
		assert_int_equal(st, 201);
	}
	char *r = req(ctl->addr, "GET", "/readyz", NULL, &st);
	assert_int_equal(st, 200);
	free(r);

	xp_faultvfs_full_after(0); /* the disk is full */
	uint64_t lost = submit(ctl, "lost", &st);
	assert_int_equal(lost, 0);
	assert_true(st == 500 || st == 503);
	wait_fatal();
	expect_unavailable(ctl, "/readyz");
	expect_unavailable(ctl, "/v1/jobs");
	expect_unavailable(ctl, "/v1/jobs/5");
	assert_int_equal(submit(ctl, "later", &st), 0);
	assert_int_equal(st, 503);
	xp_ctl_stop(ctl);
	xp_faultvfs_full_after(-1);
	assert_int_equal(g_fatal, 1);

	check_restart(dir, ids, names, 4, "lost");
	xp_test_rmdir(dir);
}

/* ---- a read during a commit that then fails ---- */

struct call {
	struct xp_ctl *ctl;
	const char *method, *path, *body;
	long st;
	char *reply;
	atomic_int done;
};

static void *call_main(void *arg)
{
	struct call *c = arg;
	c->reply = req(c->ctl->addr, c->method, c->path, c->body, &c->st);
	atomic_store(&c->done, 1);
	return NULL;
}

static size_t waiters(struct xp_store *s)
{
	pthread_mutex_lock(&s->mu);
	size_t n = s->wlen - s->whead;
	pthread_mutex_unlock(&s->mu);
	return n;
}

/* Nothing in flight, and job id running (the cycle is done with it). */
static void wait_quiet(struct xp_ctl *ctl, uint64_t id)
{
	char path[64];
	snprintf(path, sizeof(path), "/v1/jobs/%llu", (unsigned long long)id);
	for (;;) {
		long st;
		json_t *o = xp_test_json(ctl->addr, g_token, "GET", path, NULL, &st);
		int running =
			!strcmp(json_string_value(json_object_get(o, "state")) ?: "", "running");
		json_decref(o);
		if (running && xp_store_last_seq(ctl->store) == xp_store_durable_seq(ctl->store))
			return;
		sched_yield();
	}
}

static void test_read_during_failed_commit(void **state)
{
	(void)state;
	char dir[] = "/tmp/xpfailstopXXXXXX";
	uint64_t ids[1];
	char names[1][16] = { "ok" };
	long st;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(xp_faultvfs_register(), SQLITE_OK);
	struct xp_ctl *ctl = start(dir, XP_FAULTVFS);
	read_token(dir);
	ids[0] = submit(ctl, "ok", &st);
	assert_int_equal(st, 201);
	wait_quiet(ctl, ids[0]);

	xp_faultvfs_hold_sync(1);
	struct call post = {
		ctl, "POST", "/v1/jobs",
		"{\"name\":\"inflight\",\"resources\":{\"cpu\":1},\"duration\":\"1h\"}"
	};
	struct call get = { ctl, "GET", "/v1/jobs?limit=1000", NULL };
	pthread_t tp, tg;
	assert_int_equal(pthread_create(&tp, NULL, call_main, &post), 0);
	xp_faultvfs_wait_held(1); /* its commit is in fsync: the job is in memory only */
	size_t before = waiters(ctl->store);
	assert_int_equal(pthread_create(&tg, NULL, call_main, &get), 0);
	/* the read is run, and waits for the commit (it would have answered at once before) */
	while (!atomic_load(&get.done) && waiters(ctl->store) <= before)
		sched_yield();
	if (atomic_load(&get.done) && strstr(get.reply, "inflight"))
		fail_msg("a read showed a job whose commit is in flight: %s", get.reply);
	xp_faultvfs_fail_sync(1); /* the fsync fails: the commit with it */
	xp_faultvfs_hold_sync(0);
	pthread_join(tp, NULL);
	pthread_join(tg, NULL);
	xp_faultvfs_fail_sync(0);
	print_message("  POST during the commit: %ld; GET during the commit: %ld %s\n", post.st,
		      get.st, get.reply);
	assert_int_equal(post.st, 500);
	assert_true(get.st == 500 || get.st == 503);
	assert_null(strstr(get.reply, "inflight"));
	free(post.reply);
	free(get.reply);
	wait_fatal();
	expect_unavailable(ctl, "/readyz");
	xp_ctl_stop(ctl);

	check_restart(dir, ids, names, 1, "inflight");
	xp_test_rmdir(dir);
}

/* ---- a real server ---- */

static void test_process_exits(void **state)
{
	(void)state;
	char dir[] = "/tmp/xpfailstopXXXXXX", db[256], errlog[256], line[512], addr[128] = "";
	struct xp_err err = { 0 };
	struct xp_store *s;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(xp_store_open(dir, NULL, &s, &err), 0);
	xp_store_close(s);
	snprintf(db, sizeof(db), "%s/xpool.db", dir);
	sqlite3 *h;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	assert_int_equal(
		sqlite3_exec(h,
			     "CREATE TRIGGER boom BEFORE INSERT ON journal WHEN NEW.body "
			     "LIKE '%\"name\":\"boom\"%' BEGIN SELECT RAISE(ABORT, 'no room "
			     "for this record'); END;",
			     NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(h);

	int fds[2];
	snprintf(errlog, sizeof(errlog), "%s/stderr", dir);
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		freopen(errlog, "w", stderr);
		execl(XP_BINARY, XP_BINARY, "server", "--data", dir, "--listen", "127.0.0.1:0",
		      (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	FILE *f = fdopen(fds[0], "r");
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "address: ", 9)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(addr, sizeof(addr), "%.100s", line + 9 + 7); /* past http:// */
			break;
		}
	fclose(f);
	assert_true(addr[0]);
	read_token(dir);
	long st;
	char *r =
		req(addr, "POST", "/v1/jobs", "{\"name\":\"fine\",\"resources\":{\"cpu\":1}}", &st);
	assert_int_equal(st, 201);
	free(r);
	r = req(addr, "POST", "/v1/jobs", "{\"name\":\"boom\",\"resources\":{\"cpu\":1}}", &st);
	assert_int_equal(st, 500);
	free(r);
	uint64_t t0 = xp_mono_ns();
	int status = 0;
	pid_t w;
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && xp_mono_ns() - t0 < 60000000000ULL)
		sched_yield();
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("the server did not exit after its journal failed");
	}
	double secs = (double)(xp_mono_ns() - t0) / 1e9;
	char *log;
	size_t n;
	assert_int_equal(xp_read_file(errlog, 1 << 20, &log, &n, &err), 0);
	print_message("  exited with status %d after %.3f s; stderr:\n%s", WEXITSTATUS(status),
		      secs, log);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
	assert_non_null(strstr(log, "the journal failed"));
	assert_non_null(strstr(log, "no room for this record"));
	free(log);
	xp_test_rmdir(dir);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_disk_full),
		cmocka_unit_test(test_read_during_failed_commit),
		cmocka_unit_test(test_process_exits),
	};
	int rc = xp_run_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
