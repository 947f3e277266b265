/*
 * test_codec: the record codec at the store boundary (src/edge/codec.c)
 * reads the journals the code before it wrote, to the same state, with the
 * same refusals.
 *
 * The journals in tests/codec were written by the code before the codec (the state
 * decoding records' JSON itself, commit 312cf5d): journals of the
 * world-driven tests (every record type the tests make) and crafted.json,
 * a journal of every record type with malformed fields, wrong types,
 * absent objects and illegal transitions among legal records. Each
 * record's code ("rc") and refusal text ("err") and the final snapshot's
 * text are what that code gave. Here each journal is replayed into a fresh
 * state through xp_rec_apply; every code, every text and the snapshot must
 * be the same, byte for byte.
 *
 * mig-mode.json holds the MIG mode records (node.mig_mode_change,
 * node.mig_mode, node.mig_mode_done), which came after 312cf5d: written the
 * same way by the code that read them as JSON (the mig branch at 8a3c9a7,
 * test_mig_gang's planner test with malformed records after it).
 *
 * The writers (xp_rec_*) are checked against the bytes they wrote before,
 * and the records the cycle emits typed (job.start, job.resize,
 * job.cancel, job.preempt; and job.requeue) decode and encode again
 * (xp_rec_encode) to the bytes the old writers gave them in the journals.
 */
#include "testutil.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/state.h"
#include "edge/edge.h"
#include "world.h"

#define CODEC_DIR XP_SOURCE_DIR "/tests/codec"

/* A record the old writers wrote, of a type the cycle emits typed: decoded
 * and encoded again, the same bytes. */
static void reencode(const char *path, size_t i, const char *type, const char *body)
{
	struct xp_rec r;
	struct xp_err err = { 0 };
	void *hold;
	assert_int_equal(xp_rec_decode(type, body, strlen(body), &r, &hold, &err), 1);
	char *again = xp_rec_encode(&r);
	if (again && strcmp(again, body))
		fail_msg("%s record %zu: %s encodes as\n%s\nbefore\n%s", path, i, type, again, body);
	assert_true(again || (r.type != XP_REC_JOB_START && r.type != XP_REC_JOB_RESIZE &&
			      r.type != XP_REC_JOB_CANCEL && r.type != XP_REC_JOB_PREEMPT &&
			      r.type != XP_REC_JOB_REQUEUE));
	free(again);
	xp_rec_release(hold);
}

static size_t replay_file(const char *path, int *types_seen)
{
	json_error_t je;
	json_t *o = json_load_file(path, 0, &je), *recs, *r;
	if (!o)
		fail_msg("%s: %s", path, je.text);
	recs = json_object_get(o, "records");
	assert_true(json_is_array(recs));
	struct xp_err err = { 0 };
	struct xp_state *st = xp_state_create(&world_opts, &err);
	assert_non_null(st);
	size_t i;
	json_array_foreach(recs, i, r)
	{
		const char *type = json_string_value(json_object_get(r, "type"));
		const char *body = json_string_value(json_object_get(r, "body"));
		int64_t at = json_integer_value(json_object_get(r, "at"));
		int want = (int)json_integer_value(json_object_get(r, "rc"));
		const char *want_err = json_string_value(json_object_get(r, "err"));
		memset(&err, 0, sizeof(err));
		int rc = xp_rec_apply(st, i + 1, at, type, body, strlen(body), NULL, &err);
		if (rc != want || (want < 0 && strcmp(err.text, want_err)))
			fail_msg("%s record %zu (%s %s): %d '%s', before %d '%s'", path, i, type, body,
				 rc, rc < 0 ? err.text : "", want, want_err ? want_err : "");
		int t = xp_rec_type_parse(type);
		if (t >= 0 && rc == 0)
			types_seen[t]++;
		if (rc == 0 && !strstr(path, "crafted"))
			reencode(path, i, type, body);
		if (xp_state_check(st, &err) < 0)
			fail_msg("%s record %zu: invariant: %s", path, i, err.text);
	}
	char *snap = xp_state_snapshot(st);
	const char *want = json_string_value(json_object_get(o, "snapshot"));
	if (strcmp(snap, want))
		fail_msg("%s: the snapshot differs:\n%s\nbefore:\n%s", path, snap, want);
	free(snap);
	xp_state_destroy(st);
	json_decref(o);
	return i;
}

static void test_old_journals(void **unused)
{
	(void)unused;
	int seen[XP_REC_N] = { 0 };
	size_t files = 0, records = 0;
	DIR *d = opendir(CODEC_DIR);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n < 6 || strcmp(e->d_name + n - 5, ".json"))
			continue;
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", CODEC_DIR, e->d_name);
		records += replay_file(path, seen);
		files++;
	}
	closedir(d);
	assert_true(files >= 2);
	for (int t = 0; t < XP_REC_N; t++)
		if (!seen[t])
			fail_msg("no %s record applied in %s", xp_rec_type_name(t), CODEC_DIR);
	printf("codec: %zu journals, %zu records replayed as before\n", files, records);
}

/* The writers' bytes, as the code before the codec wrote them. */
static void test_writers(void **unused)
{
	(void)unused;
	json_t *cs = json_pack("{s:i}", "a_b", 4);
	char *counter = xp_rec_job_counter(2, cs);
	json_decref(cs);
	struct {
		char *got;
		const char *want;
	} c[] = {
		{ xp_rec_tenant_create("t1"), "{\"name\":\"t1\"}" },
		{ xp_rec_token_create(7, "t1", "ci", XP_SCOPE_TENANT, NULL, "ab"),
		  "{\"id\":7,\"tenant\":\"t1\",\"name\":\"ci\",\"admin\":false,\"sha256\":\"ab\"}" },
		{ xp_rec_token_create(8, "admin", "root", XP_SCOPE_ADMIN, NULL, "cd"),
		  "{\"id\":8,\"tenant\":\"admin\",\"name\":\"root\",\"admin\":true,\"sha256\":\"cd\"}" },
		{ xp_rec_token_create(9, "t1", "n", XP_SCOPE_NODE, "n0", "ef"),
		  "{\"id\":9,\"tenant\":\"t1\",\"name\":\"n\",\"admin\":false,\"sha256\":\"ef\","
		  "\"node\":\"n0\"}" },
		{ xp_rec_token_create(10, "t1", "b", XP_SCOPE_BOOTSTRAP, NULL, "01"),
		  "{\"id\":10,\"tenant\":\"t1\",\"name\":\"b\",\"admin\":false,\"sha256\":\"01\","
		  "\"bootstrap\":true}" },
		{ xp_rec_token_revoke(7), "{\"id\":7}" },
		{ xp_rec_queue_delete("q"), "{\"name\":\"q\"}" },
		{ xp_rec_node_state("n0", XP_NODE_DRAINING), "{\"name\":\"n0\",\"state\":\"draining\"}" },
		{ xp_rec_node_remove("n0"), "{\"name\":\"n0\"}" },
		{ xp_rec_node_health("n0", (const uint8_t[]){ 1, 0 }, (char *const[]){ NULL, "xid" }, 2),
		  "{\"name\":\"n0\",\"devices\":[{\"ok\":true,\"why\":\"\"},{\"ok\":false,\"why\":"
		  "\"xid\"}]}" },
		{ xp_rec_job_finish(3, XP_JOB_FAILED, 2, NULL),
		  "{\"id\":3,\"state\":\"failed\",\"exit_code\":2,\"reason\":\"\"}" },
		{ xp_rec_job_finish_x(3, XP_JOB_FAILED,
				      &(struct xp_exit){ .has_code = 0, .end = XP_END_TIME_LIMIT },
				      "over"),
		  "{\"id\":3,\"state\":\"failed\",\"reason\":\"over\",\"end\":\"time_limit\"}" },
		{ xp_rec_job_finish_x(3, XP_JOB_SUCCEEDED, &(struct xp_exit){ .has_code = 1 }, ""),
		  "{\"id\":3,\"state\":\"succeeded\",\"reason\":\"\",\"exit_code\":0}" },
		{ xp_rec_job_cancel(4, "by user"), "{\"id\":4,\"reason\":\"by user\"}" },
		{ xp_rec_job_task(5, 1, 0, 0),
		  "{\"id\":5,\"attempt\":1,\"replica\":0,\"exit_code\":0}" },
		{ xp_rec_job_task_x(5, 2, 1,
				    &(struct xp_exit){ .code = 137,
						       .signal = 9,
						       .end = XP_END_OOM,
						       .detail = "d" }),
		  "{\"id\":5,\"attempt\":2,\"replica\":1,\"exit_code\":137,\"signal\":9,\"end\":"
		  "\"oom\",\"detail\":\"d\"}" },
		{ xp_rec_job_requeue(6, "node lost"), "{\"id\":6,\"reason\":\"node lost\"}" },
		{ xp_rec_job_preempt(6, NULL), "{\"id\":6,\"reason\":\"\"}" },
		{ xp_rec_job_hold(5, XP_HOLD_USER), "{\"id\":5,\"held\":\"user\"}" },
		{ xp_rec_job_forget((const uint64_t[]){ 1, 2 }, 2), "{\"ids\":[1,2]}" },
		{ xp_rec_job_energy(2, 1, 3), "{\"attempt\":1,\"id\":2,\"joules\":3}" },
		{ counter, "{\"counters\":{\"a_b\":4},\"id\":2}" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (!c[i].got || strcmp(c[i].got, c[i].want))
			fail_msg("writer %zu: %s, before %s", i, c[i].got ? c[i].got : "(null)",
				 c[i].want);
		free(c[i].got);
	}
}

/* Decoding alone: typed types decode (strings borrowed from the hold),
 * others are left to the JSON path, malformed fields are named. */
static void test_decode(void **unused)
{
	(void)unused;
	struct xp_rec r;
	struct xp_err err = { 0 };
	void *hold;
	const char *b = "{\"id\":5,\"attempt\":2,\"replica\":1,\"exit_code\":-9,\"end\":\"oom\"}";
	assert_int_equal(xp_rec_decode("job.task", b, strlen(b), &r, &hold, &err), 1);
	assert_int_equal(r.type, XP_REC_JOB_TASK);
	assert_int_equal(r.u.task.id, 5);
	assert_int_equal(r.u.task.attempt, 2);
	assert_int_equal(r.u.task.replica, 1);
	assert_int_equal(r.u.task.x.code, -9);
	assert_int_equal(r.u.task.x.end, XP_END_OOM);
	xp_rec_release(hold);
	b = "{\"id\":5,\"attempt\":0,\"replica\":1,\"exit_code\":0}";
	assert_int_equal(xp_rec_decode("job.task", b, strlen(b), &r, &hold, &err), XP_ECORRUPT);
	assert_string_equal(err.text, "attempt: missing or out of range");
	assert_null(hold);
	b = "{\"name\":\"x\"}";
	assert_int_equal(xp_rec_decode("no.such", b, strlen(b), &r, &hold, &err), XP_ECORRUPT);
	assert_string_equal(err.text, "unknown record type 'no.such'");
	assert_null(hold);
	for (int t = 0; t < XP_REC_N; t++)
		assert_int_equal(xp_rec_type_parse(xp_rec_type_name(t)), t);
	assert_null(xp_rec_type_name(XP_REC_N));
}

/* A state needs the edge's readers for the documents inside snapshots. */
static void test_state_needs_docs(void **unused)
{
	(void)unused;
	struct xp_err err = { 0 };
	struct xp_state_opts none = { 0 };
	assert_null(xp_state_create(NULL, &err));
	assert_int_equal(err.code, XP_EINVAL);
	assert_null(xp_state_create(&none, &err));
	assert_non_null(strstr(err.text, "xp_state_opts.docs"));
	struct xp_state *st = xp_state_create(&world_opts, &err);
	assert_non_null(st);
	xp_state_destroy(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_old_journals),
		cmocka_unit_test(test_writers),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_state_needs_docs),
	};
	return xp_run_tests(tests, NULL, NULL);
}
