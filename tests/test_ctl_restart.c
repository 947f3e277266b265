/*
 * test_ctl_restart: the controller's start-up against its own store.
 *  - jobs, nodes and tokens survive a stop and start, through snapshots
 *    (taken every few records here) and the journal after them: the job
 *    list is byte-identical;
 *  - a store whose journal holds a record that does not decode, or that
 *    does not apply (an illegal transition), makes the start fail with the
 *    record's sequence number and leaves the database file untouched (the
 *    bad record is appended after the newest snapshot, with the checksum
 *    the store would have given it: one changed in place may lie under a
 *    snapshot, and replay would rightly never read it);
 *  - a record changed in place without its checksum (the CPU of a job) is
 *    refused the same way, as failing its checksum; --recover then starts,
 *    saying what it dropped;
 *  - a store written by a newer format is refused the same way;
 *  - a finished job and a service's replica (its readiness and load
 *    checks, held apart from the job: spec.h, struct xp_svccheck) answer
 *    GET /v1/jobs/ID byte for byte the same before and after a restart.
 */
#include "testutil.h"

#include <curl/curl.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "lib/strbuf.h"
#include "lib/timefmt.h"
#include "lib/xalloc.h"
#include "server/ctl.h"

static char *http(struct xp_ctl *ctl, const char *method, const char *path, const char *body,
		  long *status)
{
	return xp_test_http(ctl->addr, ctl->admin_token, method, path, body, status);
}

static uint64_t g_max_finished; /* 0: the default */
static int g_recover;		/* start with --recover */

static struct xp_ctl *start(const char *dir, struct xp_err *err)
{
	static char cluster[4096];
	struct xp_ctl_opts o = { 0 };
	o.max_finished = g_max_finished;
	o.recover = g_recover;
	struct xp_ctl *ctl = NULL;
	snprintf(cluster, sizeof(cluster), "%s/examples/clusters/small.yaml", XP_SOURCE_DIR);
	o.data = dir;
	o.listen = "127.0.0.1:0";
	o.cluster = cluster;
	o.sync = 1;
	o.snapshot_every = 7;
	if (xp_ctl_start(&o, &ctl, err) < 0)
		return NULL;
	return ctl;
}

/* xp_rec_crc(seq, at, type, body): the checksum the store keeps with a record */
static void sql_rec_crc(sqlite3_context *cx, int argc, sqlite3_value **v)
{
	(void)argc;
	const char *type = (const char *)sqlite3_value_text(v[2]);
	const char *body = (const char *)sqlite3_value_text(v[3]);
	size_t len = (size_t)sqlite3_value_bytes(v[3]);
	sqlite3_result_int64(cx, xp_store_rec_crc((uint64_t)sqlite3_value_int64(v[0]),
						  sqlite3_value_int64(v[1]), type, body, len));
}

static void sql(const char *db, const char *stmt)
{
	sqlite3 *h;
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	sqlite3_create_function(h, "xp_rec_crc", 4, SQLITE_UTF8, NULL, sql_rec_crc, NULL, NULL);
	char *msg = NULL;
	if (sqlite3_exec(h, stmt, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("%s: %s", stmt, msg);
	sqlite3_close(h);
}

static char *slurp(const char *path, size_t *len)
{
	char *buf;
	struct xp_err err;
	assert_int_equal(xp_read_file(path, (size_t)1 << 30, &buf, len, &err), 0);
	return buf;
}

static void test_restart_and_refusals(void **state)
{
	char dir[] = "/tmp/xprestartXXXXXX", db[256], token[80];
	struct xp_err err = { 0 };
	long st;

	assert_non_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/xpool.db", dir);
	struct xp_ctl *ctl = start(dir, &err);
	if (!ctl)
		fail_msg("start: %s", err.text);
	snprintf(token, sizeof(token), "%s", ctl->admin_token);
	for (int i = 0; i < 30; i++) {
		char body[128];
		snprintf(body, sizeof(body),
			 "{\"name\":\"j%d\",\"resources\":{\"cpu\":2,\"devices\":{\"count\":%d}},"
			 "\"duration\":\"%dms\"}",
			 i, i % 3, i % 2 ? 0 : 3600000);
		free(http(ctl, "POST", "/v1/jobs", body, &st));
		assert_int_equal(st, 201);
	}
	free(http(ctl, "POST", "/v1/jobs/5/cancel", NULL, &st));
	free(http(ctl, "PATCH", "/v1/nodes/gpu-h100-0", "{\"state\":\"cordoned\"}", &st));
	assert_int_equal(st, 200);
	usleep(300000); /* the cycle places, emulated zero-length jobs finish */
	assert_true(ctl->snap.done >= 1); /* snapshots were written (by a child) */
	char *before = http(ctl, "GET", "/v1/jobs?limit=1000", NULL, &st);
	char *nodes_before = http(ctl, "GET", "/v1/nodes", NULL, &st);
	/* metering: a price table, counters, and the usage up to a fixed time */
	free(http(ctl, "PUT", "/v1/prices", "{\"cpu\":0.04,\"devices\":{\"default\":2}}", &st));
	assert_int_equal(st, 200);
	free(http(ctl, "POST", "/v1/jobs/2/counters", "{\"training_runs\":3}", &st));
	assert_int_equal(st, 200);
	char upath[160], ts[XP_TIME_LEN];
	usleep(2000); /* the window ends after the counters' record */
	xp_time_format(xp_ctl_now(), ts);
	snprintf(upath, sizeof(upath), "/v1/usage?by=job&since=2020-01-01T00:00:00Z&until=%s", ts);
	char *usage_before = http(ctl, "GET", upath, NULL, &st);
	assert_int_equal(st, 200);
	assert_non_null(strstr(usage_before, "\"training_runs\":3"));
	assert_non_null(strstr(usage_before, "\"cost_micros\""));
	xp_ctl_stop(ctl);

	/* restart: same jobs, same nodes (the running hour-long ones still run) */
	ctl = start(dir, &err);
	if (!ctl)
		fail_msg("restart: %s", err.text);
	assert_string_equal(ctl->admin_token, ""); /* not created twice */
	snprintf(ctl->admin_token, sizeof(ctl->admin_token), "%s", token);
	char *after = http(ctl, "GET", "/v1/jobs?limit=1000", NULL, &st);
	char *nodes_after = http(ctl, "GET", "/v1/nodes", NULL, &st);
	assert_string_equal(before, after);
	assert_string_equal(nodes_before, nodes_after);
	char *usage_after = http(ctl, "GET", upath, NULL, &st);
	assert_string_equal(usage_before, usage_after); /* the ledger survived */
	free(usage_before);
	free(usage_after);
	xp_ctl_stop(ctl);
	free(before);
	free(after);
	free(nodes_before);
	free(nodes_after);

	/* a record that is not JSON: refused, the file untouched. It is a new
	 * last record, after every snapshot: the newest snapshot (written by a
	 * child as the records come) may cover the journal's last record, and
	 * replay then never reads a record changed in place */
	sql(db, "INSERT INTO journal(seq, at, type, body, crc) SELECT seq + 1, at, type, "
		"'{not json', xp_rec_crc(seq + 1, at, type, '{not json') "
		"FROM journal ORDER BY seq DESC LIMIT 1");
	size_t l1, l2;
	char *b1 = slurp(db, &l1);
	ctl = start(dir, &err);
	assert_null(ctl);
	if (!strstr(err.text, "seq ") || !strstr(err.text, "not a JSON object"))
		fail_msg("unexpected refusal: %s", err.text);
	char *b2 = slurp(db, &l2);
	assert_true(l1 == l2 && !memcmp(b1, b2, l1));
	free(b1);
	free(b2);
	print_message("  refused: %s\n", err.text);

	/* a record that decodes but is illegal: finishing a job that never ran */
	sql(db, "UPDATE journal SET type = 'job.finish', body = "
		"'{\"id\":999999,\"state\":\"succeeded\",\"exit_code\":0,\"reason\":\"\"}' "
		"WHERE seq = (SELECT MAX(seq) FROM journal)");
	sql(db, "UPDATE journal SET crc = xp_rec_crc(seq, at, type, body) "
		"WHERE seq = (SELECT MAX(seq) FROM journal)");
	ctl = start(dir, &err);
	assert_null(ctl);
	if (!strstr(err.text, "does not apply") || !strstr(err.text, "no job 999999"))
		fail_msg("unexpected refusal: %s", err.text);
	print_message("  refused: %s\n", err.text);

	/* the appended record gone again, a job's CPU changed in place, its checksum not: the
	 * probe that once moved jobs between tenants unseen */
	sql(db, "DELETE FROM journal WHERE seq = (SELECT MAX(seq) FROM journal)");
	sql(db, "UPDATE journal SET body = replace(body, '\"cpu\":\"2000m\"', '\"cpu\":\"9000m\"') "
		"WHERE seq = (SELECT MAX(seq) FROM journal WHERE type = 'job.submit' AND "
		"body LIKE '%\"cpu\":\"2000m\"%')");
	b1 = slurp(db, &l1);
	ctl = start(dir, &err);
	assert_null(ctl);
	if (!strstr(err.text, "fails its checksum") || !strstr(err.text, "record ") ||
	    !strstr(err.text, db))
		fail_msg("unexpected refusal: %s", err.text);
	b2 = slurp(db, &l2);
	assert_true(l1 == l2 && !memcmp(b1, b2, l1));
	free(b1);
	free(b2);
	print_message("  refused: %s\n", err.text);
	/* --recover starts: the record lies under the newest snapshot, so only history goes */
	g_recover = 1;
	ctl = start(dir, &err);
	g_recover = 0;
	if (!ctl)
		fail_msg("--recover: %s", err.text);
	const char *rep = xp_store_recovered(ctl->store);
	assert_non_null(strstr(rep, "dropping seq "));
	assert_non_null(strstr(rep, "fails its checksum"));
	print_message("  --recover: %s\n", rep);
	snprintf(ctl->admin_token, sizeof(ctl->admin_token), "%s", token);
	char *recovered = http(ctl, "GET", "/v1/nodes", NULL, &st);
	assert_int_equal(st, 200);
	free(recovered);
	xp_ctl_stop(ctl);

	/* a newer store format */
	sql(db, "UPDATE meta SET value = '99' WHERE key = 'format'");
	ctl = start(dir, &err);
	assert_null(ctl);
	if (!strstr(err.text, "newer"))
		fail_msg("unexpected refusal: %s", err.text);
	print_message("  refused: %s\n", err.text);

	xp_test_rmdir(dir);
}

/* retention: beyond --max-finished the oldest finished jobs are forgotten,
 * through the journal, so a restart forgets exactly the same ones */
static void test_retention(void **state)
{
	char dir[] = "/tmp/xpretainXXXXXX";
	struct xp_err err = { 0 };
	long st;
	(void)state;
	assert_non_null(mkdtemp(dir));
	g_max_finished = 3;
	struct xp_ctl *ctl = start(dir, &err);
	if (!ctl)
		fail_msg("start: %s", err.text);
	char token[80];
	snprintf(token, sizeof(token), "%s", ctl->admin_token);
	for (int i = 0; i < 10; i++) {
		free(http(ctl, "POST", "/v1/jobs", "{\"resources\":{\"cpu\":1},\"duration\":\"1ms\"}",
			  &st));
		assert_int_equal(st, 201);
	}
	free(http(ctl, "POST", "/v1/jobs", "{\"resources\":{\"cpu\":1},\"duration\":\"1h\"}", &st));
	char *list = NULL;
	for (int t = 0; t < 100; t++) { /* the ten finish; seven are forgotten */
		free(list);
		list = http(ctl, "GET", "/v1/jobs?limit=1000", NULL, &st);
		json_t *o = json_loads(list, 0, NULL);
		size_t n = json_array_size(json_object_get(o, "jobs"));
		json_decref(o);
		if (n == 4)
			break;
		usleep(50000);
	}
	json_t *o = json_loads(list, 0, NULL), *ids = json_array();
	size_t i;
	json_t *j;
	json_array_foreach(json_object_get(o, "jobs"), i, j)
		json_array_append(ids, json_object_get(j, "id"));
	char *got = json_dumps(ids, JSON_COMPACT);
	assert_string_equal(got, "[8,9,10,11]"); /* the newest three finished, and the runner */
	free(got);
	json_decref(ids);
	json_decref(o);
	char *r = http(ctl, "GET", "/v1/jobs/2", NULL, &st);
	assert_int_equal(st, 404);
	assert_non_null(strstr(r, "finished jobs are kept"));
	free(r);
	xp_ctl_stop(ctl);
	ctl = start(dir, &err);
	if (!ctl)
		fail_msg("restart: %s", err.text);
	snprintf(ctl->admin_token, sizeof(ctl->admin_token), "%s", token);
	char *again = http(ctl, "GET", "/v1/jobs?limit=1000", NULL, &st);
	assert_string_equal(list, again);
	free(list);
	free(again);
	xp_ctl_stop(ctl);
	g_max_finished = 0;
	xp_test_rmdir(dir);
}

/* GET path until its "state" is want (a deadline, not a pace): the reply */
static char *await_state(struct xp_ctl *ctl, const char *path, const char *want)
{
	long st;
	long long end = xp_test_now_ms() + 60000;
	for (;;) {
		char *r = http(ctl, "GET", path, NULL, &st);
		json_t *o = json_loads(r, 0, NULL);
		const char *s = json_string_value(json_object_get(o, "state"));
		int done = st == 200 && s && !strcmp(s, want);
		json_decref(o);
		if (done)
			return r;
		free(r);
		if (xp_test_now_ms() > end)
			fail_msg("%s did not reach %s", path, want);
		usleep(20000);
	}
}

static void test_job_json_restart(void **state)
{
	char dir[] = "/tmp/xpjobjsonXXXXXX", path[64], token[80];
	struct xp_err err = { 0 };
	long st;
	(void)state;
	assert_non_null(mkdtemp(dir));
	struct xp_ctl *ctl = start(dir, &err);
	if (!ctl)
		fail_msg("start: %s", err.text);
	snprintf(token, sizeof(token), "%s", ctl->admin_token);
	json_t *j = xp_test_json(ctl->addr, token, "POST", "/v1/jobs",
				 "{\"name\":\"full\",\"command\":[\"sh\",\"-c\",\"exit 3\"],"
				 "\"env\":{\"A\":\"1\",\"B\":\"two\"},\"labels\":{\"team\":\"x\"},"
				 "\"resources\":{\"cpu\":1,\"memory\":\"1Gi\"},\"priority\":7,"
				 "\"duration\":\"1ms\",\"exit_code\":3,\"time_limit\":\"1h\"}",
				 &st);
	assert_int_equal(st, 201);
	snprintf(path, sizeof(path), "/v1/jobs/%lld",
		 (long long)json_integer_value(json_object_get(j, "id")));
	json_decref(j);
	j = xp_test_json(ctl->addr, token, "POST", "/v1/services",
			 "{\"name\":\"web\",\"replicas\":{\"min\":1,\"max\":2},"
			 "\"readiness\":{\"http\":\"/ready\",\"period\":\"2s\",\"timeout\":\"1s\"},"
			 "\"autoscale\":{\"metric\":\"rps\",\"target\":20,\"series\":\"hits_total\"},"
			 "\"template\":{\"resources\":{\"cpu\":1},\"duration\":\"1h\"}}",
			 &st);
	if (st != 201)
		fail_msg("POST /v1/services: %ld %s", st, json_dumps(j, 0));
	json_decref(j);
	char *done = await_state(ctl, path, "failed");
	/* the replica: the job the controller makes for the service */
	char rpath[64] = "";
	for (long long end = xp_test_now_ms() + 60000; !rpath[0]; usleep(20000)) {
		char *list = http(ctl, "GET", "/v1/jobs?limit=100", NULL, &st);
		json_t *o = json_loads(list, 0, NULL), *e;
		size_t i;
		json_array_foreach(json_object_get(o, "jobs"), i, e)
			if (!strcmp(json_string_value(json_object_get(e, "name")), "web-v1"))
				snprintf(rpath, sizeof(rpath), "/v1/jobs/%lld",
					 (long long)json_integer_value(json_object_get(e, "id")));
		json_decref(o);
		free(list);
		if (!rpath[0] && xp_test_now_ms() > end)
			fail_msg("no replica of service web in the job list");
	}
	char *rep = http(ctl, "GET", rpath, NULL, &st);
	assert_int_equal(st, 200);
	if (!strstr(rep, "\"/ready\"") || !strstr(rep, "\"hits_total\""))
		fail_msg("the replica's spec lacks its checks: %s", rep);
	xp_ctl_stop(ctl);
	ctl = start(dir, &err);
	if (!ctl)
		fail_msg("restart: %s", err.text);
	snprintf(ctl->admin_token, sizeof(ctl->admin_token), "%s", token);
	char *again = http(ctl, "GET", path, NULL, &st);
	assert_int_equal(st, 200);
	assert_string_equal(done, again);
	free(again);
	again = http(ctl, "GET", rpath, NULL, &st);
	assert_int_equal(st, 200);
	assert_string_equal(rep, again);
	free(again);
	free(rep);
	free(done);
	xp_ctl_stop(ctl);
	xp_test_rmdir(dir);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restart_and_refusals),
		cmocka_unit_test(test_retention),
		cmocka_unit_test(test_job_json_restart),
	};
	int rc = xp_run_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
