/*
 * test_store: the durable journal (src/store) against store.h.
 *
 *  - round trip: records of every shape (empty, quoted, 100 KB) come back
 *    byte for byte with their seq, time and type; seqs continue on reopen;
 *    the directory is created with mode 0700;
 *  - snapshots: load gives the newest snapshot and only the tail after it;
 *    pruning keeps keep_snapshots snapshots and the journal after the oldest;
 *    read() behind the pruned point says ENOENT;
 *  - read() from another thread while appending: only committed records,
 *    in order, contiguous, each soon durable; close flushes the queue;
 *  - waiters: called once each, in registration order, on the store thread,
 *    after their records are durable; sync covers snapshots too;
 *  - fail-stop: a commit made to fail (a trigger) fails its waiters, sync,
 *    every later call, and loses only unacknowledged records;
 *  - load rules (before the first append; callback errors keep their text);
 *  - the directory lock refuses a second opener;
 *  - refusals: newer format, garbage, empty, foreign SQLite, truncated, a
 *    journal gap, a missing start, a non-increasing seq — each names the
 *    file and the problem and leaves the file's bytes as they were;
 *  - stats add up; sync=0 works;
 *  - group commit: 1, 8 and 64 producers each waiting for their own record
 *    (printed: records per commit and records/s; only commits < records is
 *    asserted, never a time).
 */
#define _GNU_SOURCE /* nftw */
#include "testutil.h"

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/err.h"
#include "store/store.h"

/* ---- helpers ---------------------------------------------------------------------------- */

/* A fresh temporary directory; the store goes in its "data" subfolder (created by open). */
struct tdir {
	char root[64];
	char data[96];
	char db[128];
};

static void tdir_make(struct tdir *t)
{
	strcpy(t->root, "/tmp/xpstoreXXXXXX");
	assert_non_null(mkdtemp(t->root));
	snprintf(t->data, sizeof(t->data), "%s/data", t->root);
	snprintf(t->db, sizeof(t->db), "%s/xpool.db", t->data);
}

static void tdir_free(struct tdir *t)
{
	xp_test_rmdir(t->root);
}

static struct xp_store *open_ok(const char *dir, const struct xp_store_opts *o)
{
	struct xp_err err = { 0 };
	struct xp_store *s = NULL;
	int rc = xp_store_open(dir, o, &s, &err);
	if (rc != 0)
		fail_msg("open %s: %d %s", dir, rc, err.text);
	assert_non_null(s);
	return s;
}

/* A copy of everything a load or read delivered. */
struct got {
	uint64_t snap_seq;
	char *snap;
	size_t snap_len;
	int nsnap;
	size_t n, cap;
	struct xp_store_rec *r; /* type and body copied */
	uint64_t fail_at;	/* a rec callback fails at this seq (0: never) */
	struct xp_err *err;	/* where that failure writes its text, or NULL */
};

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->n; i++) {
		free((char *)g->r[i].type);
		free((char *)g->r[i].body);
	}
	free(g->r);
	free(g->snap);
	memset(g, 0, sizeof(*g));
}

static int got_snap(void *ctx, uint64_t seq, const char *body, size_t len)
{
	struct got *g = ctx;
	g->snap_seq = seq;
	free(g->snap);
	g->snap = malloc(len + 1);
	memcpy(g->snap, body, len);
	g->snap[len] = '\0';
	g->snap_len = len;
	g->nsnap++;
	return 0;
}

static int got_rec(void *ctx, const struct xp_store_rec *r)
{
	struct got *g = ctx;
	if (g->fail_at && r->seq == g->fail_at) {
		if (g->err)
			return xp_errf(g->err, XP_EINVAL, "bad thing in %s", r->type);
		return XP_EINVAL;
	}
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 256;
		g->r = realloc(g->r, g->cap * sizeof(*g->r));
	}
	struct xp_store_rec *c = &g->r[g->n++];
	*c = *r;
	c->type = strdup(r->type);
	char *b = malloc(r->len + 1);
	memcpy(b, r->body, r->len);
	b[r->len] = '\0';
	c->body = b;
	return 0;
}

static void load_ok(struct xp_store *s, struct got *g)
{
	struct xp_err err = { 0 };
	int rc = xp_store_load(s, got_snap, got_rec, g, &err);
	if (rc != 0)
		fail_msg("load: %d %s", rc, err.text);
}

static char *file_bytes(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc((size_t)n + 1);
	assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static long long sql_int(const char *path, const char *query)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	long long v = -1;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, query, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_type(st, 0) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static const struct xp_store_opts nosync = { .sync = 0 };

/* Body of record i in the round trip. */
static char *rt_body(int i, size_t *len)
{
	char *b;
	if (i == 0) {
		*len = 0;
		return NULL;
	}
	if (i == 1) {
		b = strdup("{\"s\": \"h\xc3\xa9llo \\\"x\\\" \\u0000 'q'\"}");
	} else if (i == 2) {
		*len = 100000;
		b = malloc(*len + 1);
		for (size_t k = 0; k < *len; k++)
			b[k] = (char)('a' + k % 26);
		b[*len] = '\0';
		return b;
	} else {
		b = malloc(32);
		snprintf(b, 32, "{\"i\":%d}", i);
	}
	*len = strlen(b);
	return b;
}

/* ---- round trip ------------------------------------------------------------------------- */

static void test_roundtrip(void **state)
{
	(void)state;
	struct tdir t;
	struct got g = { 0 };
	struct stat st;
	tdir_make(&t);

	struct xp_store *s = open_ok(t.data, NULL);
	assert_int_equal(stat(t.data, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	assert_int_equal(xp_store_last_seq(s), 0);
	assert_int_equal(xp_store_durable_seq(s), 0);
	assert_string_equal(xp_store_path(s), t.db);
	load_ok(s, &g);
	assert_int_equal(g.n, 0);
	assert_int_equal(g.nsnap, 0);
	for (int i = 0; i < 200; i++) {
		size_t len;
		char type[16];
		char *b = rt_body(i, &len);
		snprintf(type, sizeof(type), "t.%d", i % 5);
		assert_int_equal(xp_store_append(s, type, b, len, 1700000000000LL + i),
				 (uint64_t)i + 1);
		free(b);
	}
	assert_int_equal(xp_store_last_seq(s), 200);
	assert_int_equal(xp_store_sync(s), 0);
	assert_int_equal(xp_store_durable_seq(s), 200);
	assert_int_equal(xp_store_failure(s, NULL), 0);
	xp_store_close(s);

	s = open_ok(t.data, NULL);
	assert_int_equal(xp_store_last_seq(s), 200);
	assert_int_equal(xp_store_durable_seq(s), 200);
	load_ok(s, &g);
	assert_int_equal(g.nsnap, 0);
	assert_int_equal(g.n, 200);
	for (int i = 0; i < 200; i++) {
		size_t len;
		char type[16];
		char *b = rt_body(i, &len);
		snprintf(type, sizeof(type), "t.%d", i % 5);
		assert_int_equal(g.r[i].seq, (uint64_t)i + 1);
		assert_int_equal(g.r[i].at_ms, 1700000000000LL + i);
		assert_string_equal(g.r[i].type, type);
		assert_int_equal(g.r[i].len, len);
		assert_memory_equal(g.r[i].body, b ? b : "", len);
		free(b);
	}
	assert_int_equal(xp_store_append(s, "t.x", "{}", 2, 1), 201);
	xp_store_close(s);
	xp_store_close(NULL);
	got_free(&g);
	tdir_free(&t);
}

/* ---- snapshots -------------------------------------------------------------------------- */

static void append_n(struct xp_store *s, int n)
{
	for (int i = 0; i < n; i++) {
		char b[32];
		uint64_t want = xp_store_last_seq(s) + 1;
		snprintf(b, sizeof(b), "{\"n\":%llu}", (unsigned long long)want);
		assert_int_equal(xp_store_append(s, "t", b, strlen(b), 5), want);
	}
}

static void test_snapshot_tail(void **state)
{
	(void)state;
	struct tdir t;
	struct got g = { 0 };
	struct xp_err err = { 0 };
	tdir_make(&t);

	struct xp_store *s = open_ok(t.data, &nosync);
	append_n(s, 50);
	xp_store_snapshot(s, 50, "S50", 3);
	append_n(s, 20);
	xp_store_close(s);

	s = open_ok(t.data, &nosync);
	assert_int_equal(xp_store_last_seq(s), 70);
	load_ok(s, &g);
	assert_int_equal(g.nsnap, 1);
	assert_int_equal(g.snap_seq, 50);
	assert_string_equal(g.snap, "S50");
	assert_int_equal(g.n, 20);
	for (size_t i = 0; i < g.n; i++)
		assert_int_equal(g.r[i].seq, 51 + i);
	/* A loader that takes no snapshot is told so. */
	assert_int_equal(xp_store_load(s, NULL, got_rec, &g, &err), XP_EUNSUPP);
	assert_non_null(strstr(err.text, t.db));
	/* An empty snapshot body is a snapshot all the same. */
	xp_store_snapshot(s, 70, NULL, 0);
	assert_int_equal(xp_store_sync(s), 0);
	xp_store_close(s);
	got_free(&g);

	s = open_ok(t.data, &nosync);
	load_ok(s, &g);
	assert_int_equal(g.snap_seq, 70);
	assert_int_equal(g.snap_len, 0);
	assert_int_equal(g.n, 0);
	xp_store_close(s);
	got_free(&g);
	tdir_free(&t);
}

static int count_rec(void *ctx, const struct xp_store_rec *r)
{
	(void)r;
	(*(long *)ctx)++;
	return 0;
}

static void test_prune(void **state)
{
	(void)state;
	struct tdir t;
	struct got g = { 0 };
	struct xp_err err = { 0 };
	struct xp_store_opts o = { .sync = 0, .keep_snapshots = 2 };
	long cnt = 0;
	tdir_make(&t);

	struct xp_store *s = open_ok(t.data, &o);
	for (int k = 1; k <= 4; k++) {
		char b[16];
		append_n(s, 10);
		snprintf(b, sizeof(b), "S%d", k * 10);
		xp_store_snapshot(s, (uint64_t)k * 10, b, strlen(b));
	}
	append_n(s, 5);
	assert_int_equal(xp_store_sync(s), 0);
	assert_int_equal(sql_int(t.db, "SELECT count(*) FROM snapshot"), 2);
	assert_int_equal(sql_int(t.db, "SELECT min(seq) FROM snapshot"), 30);
	assert_int_equal(sql_int(t.db, "SELECT max(seq) FROM snapshot"), 40);
	assert_int_equal(sql_int(t.db, "SELECT min(seq) FROM journal"), 31);
	assert_int_equal(sql_int(t.db, "SELECT max(seq) FROM journal"), 45);
	/* read() behind the pruned point cannot resume; from the floor on it can. */
	assert_int_equal(xp_store_read(s, 5, 100, count_rec, &cnt, &err), XP_ENOENT);
	assert_non_null(strstr(err.text, "pruned"));
	assert_non_null(strstr(err.text, t.db));
	assert_int_equal(xp_store_read(s, 30, 100, count_rec, &cnt, &err), 15);
	assert_int_equal(xp_store_read(s, 40, 3, count_rec, &cnt, &err), 3);
	assert_int_equal(xp_store_read(s, 45, 100, count_rec, &cnt, &err), 0);
	assert_int_equal(xp_store_read(s, 30, 0, count_rec, &cnt, &err), 0);
	xp_store_close(s);

	o.keep_snapshots = 3;
	s = open_ok(t.data, &o);
	xp_store_snapshot(s, 45, "S45", 3);
	assert_int_equal(xp_store_sync(s), 0);
	assert_int_equal(sql_int(t.db, "SELECT count(*) FROM snapshot"), 3);
	assert_int_equal(sql_int(t.db, "SELECT min(seq) FROM journal"), 31);
	/* Load belongs before the first append or snapshot. */
	assert_int_equal(xp_store_load(s, got_snap, got_rec, &g, &err), XP_ESTATE);
	xp_store_close(s);
	s = open_ok(t.data, &o);
	load_ok(s, &g);
	assert_int_equal(g.snap_seq, 45);
	assert_int_equal(g.n, 0);
	xp_store_close(s);
	got_free(&g);

	/* Everything pruned: the journal is empty, the newest snapshot carries the state. */
	o.keep_snapshots = 1;
	s = open_ok(t.data, &o);
	xp_store_snapshot(s, 45, "S45b", 4);
	assert_int_equal(xp_store_sync(s), 0);
	assert_int_equal(sql_int(t.db, "SELECT count(*) FROM journal"), 0);
	assert_int_equal(xp_store_read(s, 44, 100, count_rec, &cnt, &err), XP_ENOENT);
	assert_int_equal(xp_store_read(s, 45, 100, count_rec, &cnt, &err), 0);
	xp_store_close(s);
	s = open_ok(t.data, &o);
	assert_int_equal(xp_store_last_seq(s), 45);
	load_ok(s, &g);
	assert_string_equal(g.snap, "S45b");
	assert_int_equal(xp_store_append(s, "t", "{}", 2, 0), 46);
	xp_store_close(s);
	got_free(&g);
	tdir_free(&t);
}

/* ---- concurrent read -------------------------------------------------------------------- */

#define READ_N 4000

struct reader {
	struct xp_store *s;
	uint64_t next; /* the seq expected next */
	int bad;
	char why[1024];
	long calls;
};

static int reader_rec(void *ctx, const struct xp_store_rec *r)
{
	struct reader *rd = ctx;
	char b[32];
	snprintf(b, sizeof(b), "{\"n\":%llu}", (unsigned long long)r->seq);
	if (r->seq != rd->next || r->len != strlen(b) || memcmp(r->body, b, r->len) != 0 ||
	    r->seq > xp_store_last_seq(rd->s)) {
		snprintf(rd->why, sizeof(rd->why), "got seq %llu body %.*s, expected seq %llu",
			 (unsigned long long)r->seq, (int)r->len, r->body,
			 (unsigned long long)rd->next);
		rd->bad = 1;
		return XP_EINVAL;
	}
	/* Committed, so durable: the thread publishes it at most a moment later. */
	uint64_t t0 = xp_mono_ns();
	while (xp_store_durable_seq(rd->s) < r->seq && xp_mono_ns() - t0 < 5000000000ULL)
		sched_yield();
	if (xp_store_durable_seq(rd->s) < r->seq) {
		snprintf(rd->why, sizeof(rd->why), "seq %llu read but never durable",
			 (unsigned long long)r->seq);
		rd->bad = 1;
		return XP_EINVAL;
	}
	rd->next++;
	return 0;
}

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct xp_err err = { 0 };
	uint64_t t0 = xp_mono_ns();
	while (rd->next <= READ_N && !rd->bad && xp_mono_ns() - t0 < 60000000000ULL) {
		long n = xp_store_read(rd->s, rd->next - 1, 97, reader_rec, rd, &err);
		rd->calls++;
		if (n < 0 && !rd->bad) {
			snprintf(rd->why, sizeof(rd->why), "read: %ld %s", n, err.text);
			rd->bad = 1;
		}
	}
	return NULL;
}

static void test_read_concurrent(void **state)
{
	(void)state;
	struct tdir t;
	struct reader rd = { 0 };
	pthread_t th;
	tdir_make(&t);

	struct xp_store *s = open_ok(t.data, NULL);
	rd.s = s;
	rd.next = 1;
	assert_int_equal(pthread_create(&th, NULL, reader_main, &rd), 0);
	for (int i = 0; i < READ_N; i++) {
		append_n(s, 1);
		if (i % 37 == 0)
			usleep(100);
	}
	assert_int_equal(xp_store_sync(s), 0);
	pthread_join(th, NULL);
	if (rd.bad)
		fail_msg("%s", rd.why);
	assert_int_equal(rd.next, READ_N + 1);
	print_message("read: %d records appended while read in %ld calls\n", READ_N, rd.calls);
	xp_store_close(s);
	tdir_free(&t);
}

static void test_close_flushes(void **state)
{
	(void)state;
	struct tdir t;
	struct got g = { 0 };
	tdir_make(&t);

	struct xp_store *s = open_ok(t.data, NULL);
	append_n(s, 3000);
	xp_store_snapshot(s, 1500, "S", 1);
	xp_store_close(s); /* no sync: close must write what is queued */

	s = open_ok(t.data, NULL);
	assert_int_equal(xp_store_last_seq(s), 3000);
	load_ok(s, &g);
	assert_int_equal(g.snap_seq, 1500);
	assert_int_equal(g.n, 1500);
	assert_int_equal(g.r[0].seq, 1501);
	xp_store_close(s);
	/* the journal at or below the only snapshot is pruned */
	assert_int_equal(sql_int(t.db, "SELECT count(*) FROM journal"), 1500);
	got_free(&g);
	tdir_free(&t);
}

/* ---- waiters ---------------------------------------------------------------------------- */

struct wlog {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct xp_store *s;
	pthread_t main;
	int n;
	int order[600];
	int rcs[600];
	int wrong; /* called on the caller's thread or before its records were durable */
};

struct wslot {
	struct wlog *log;
	int idx;
	uint64_t target;
};

static void wdone(void *arg, int rc)
{
	struct wslot *w = arg;
	struct wlog *l = w->log;
	pthread_mutex_lock(&l->mu);
	if (pthread_equal(pthread_self(), l->main) ||
	    (rc == 0 && xp_store_durable_seq(l->s) < w->target))
		l->wrong++;
	l->rcs[l->n] = rc;
	l->order[l->n++] = w->idx;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

static void wlog_wait(struct wlog *l, int n)
{
	pthread_mutex_lock(&l->mu);
	while (l->n < n)
		pthread_cond_wait(&l->cv, &l->mu);
	pthread_mutex_unlock(&l->mu);
}

static void test_waiters(void **state)
{
	(void)state;
	struct tdir t;
	static struct wslot slots[600];
	struct wlog l = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	tdir_make(&t);

	struct xp_store *s = open_ok(t.data, NULL);
	l.s = s;
	l.main = pthread_self();
	/* Nothing appended: ready at once, but still called on the store thread. */
	slots[0] = (struct wslot){ &l, 0, 0 };
	xp_store_when_durable(s, wdone, &slots[0]);
	wlog_wait(&l, 1);
	for (int i = 1; i < 600; i++) {
		if (i % 3)
			append_n(s, i % 7);
		if (i % 50 == 0)
			xp_store_snapshot(s, xp_store_last_seq(s), "S", 1);
		slots[i] = (struct wslot){ &l, i, xp_store_last_seq(s) };
		xp_store_when_durable(s, wdone, &slots[i]);
	}
	wlog_wait(&l, 600);
	assert_int_equal(l.wrong, 0);
	for (int i = 0; i < 600; i++) {
		assert_int_equal(l.order[i], i);
		assert_int_equal(l.rcs[i], 0);
	}
	/* sync covers a snapshot queued after the last record. */
	xp_store_snapshot(s, xp_store_last_seq(s), "last", 4);
	assert_int_equal(xp_store_sync(s), 0);
	assert_int_equal(
		sql_int(t.db, "SELECT count(*) FROM snapshot WHERE body = CAST('last' AS BLOB)"),
		1);
	xp_store_close(s);
	assert_int_equal(l.n, 600); /* each once */
	tdir_free(&t);
}

/* ---- fail-stop -------------------------------------------------------------------------- */

static void test_failure(void **state)
{
	(void)state;
	struct tdir t;
	struct xp_err err = { 0 };
	struct got g = { 0 };
	static struct wslot slots[3];
	struct wlog l = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	tdir_make(&t);

	struct xp_store *s = open_ok(t.data, NULL);
	xp_store_close(s);
	xp_test_sql(t.db, "CREATE TRIGGER boom BEFORE INSERT ON journal WHEN NEW.body = 'boom' "
			  "BEGIN SELECT RAISE(ABORT, 'boom trigger'); END;");
	s = open_ok(t.data, NULL);
	l.s = s;
	l.main = pthread_self();
	for (int i = 0; i < 5; i++)
		assert_int_equal(xp_store_append(s, "ok", "fine", 4, 0), (uint64_t)i + 1);
	assert_int_equal(xp_store_sync(s), 0);
	assert_int_equal(xp_store_append(s, "ok", "fine", 4, 0), 6);
	assert_int_equal(xp_store_append(s, "bad", "boom", 4, 0), 7);
	assert_int_equal(xp_store_append(s, "ok", "fine", 4, 0), 8);
	slots[0] = (struct wslot){ &l, 0, 8 };
	xp_store_when_durable(s, wdone, &slots[0]);
	int rc = xp_store_sync(s);
	assert_true(rc < 0);
	wlog_wait(&l, 1);
	assert_int_equal(l.rcs[0], rc);
	uint64_t durable = xp_store_durable_seq(s);
	assert_true(durable == 5 || durable == 6);

	assert_int_equal(xp_store_failure(s, &err), rc);
	assert_non_null(strstr(err.text, t.db));
	assert_non_null(strstr(err.text, "boom trigger"));
	assert_non_null(strstr(err.text, "seq"));
	/* Every later call fails. */
	assert_int_equal(xp_store_append(s, "ok", "fine", 4, 0), 0);
	xp_store_snapshot(s, 5, "S", 1);
	slots[1] = (struct wslot){ &l, 1, 0 };
	xp_store_when_durable(s, wdone, &slots[1]);
	wlog_wait(&l, 2);
	assert_int_equal(l.rcs[1], rc);
	assert_int_equal(xp_store_sync(s), rc);
	/* Nothing of the failed transaction is visible. */
	long cnt = 0;
	assert_int_equal(xp_store_read(s, 0, 100, count_rec, &cnt, &err), (long)durable);
	xp_store_close(s);

	xp_test_sql(t.db, "DROP TRIGGER boom");
	s = open_ok(t.data, NULL);
	assert_int_equal(xp_store_last_seq(s), durable);
	load_ok(s, &g);
	assert_int_equal(g.n, durable);
	assert_int_equal(g.nsnap, 0);
	assert_int_equal(xp_store_append(s, "ok", "again", 5, 0), durable + 1);
	assert_int_equal(xp_store_sync(s), 0);
	xp_store_close(s);
	got_free(&g);
	tdir_free(&t);
}

/* ---- load rules ------------------------------------------------------------------------- */

static void test_load_rules(void **state)
{
	(void)state;
	struct tdir t;
	struct xp_err err = { 0 };
	struct got g = { 0 };
	tdir_make(&t);

	struct xp_store *s = open_ok(t.data, &nosync);
	append_n(s, 10);
	assert_int_equal(xp_store_load(s, got_snap, got_rec, &g, &err), XP_ESTATE);
	assert_non_null(strstr(err.text, t.db));
	xp_store_close(s);

	s = open_ok(t.data, &nosync);
	/* The callback writes its own reason into err: it is kept, behind file and seq. */
	g.fail_at = 4;
	g.err = &err;
	assert_int_equal(xp_store_load(s, got_snap, got_rec, &g, &err), XP_EINVAL);
	assert_int_equal(err.code, XP_EINVAL);
	char want[256];
	snprintf(want, sizeof(want), "%s: seq 4 (t): bad thing in t", t.db);
	assert_string_equal(err.text, want);
	assert_int_equal(g.n, 3);
	got_free(&g);
	/* Without text of its own, the code's message. */
	g.fail_at = 2;
	assert_int_equal(xp_store_load(s, got_snap, got_rec, &g, &err), XP_EINVAL);
	snprintf(want, sizeof(want), "%s: seq 2 (t): invalid input", t.db);
	assert_string_equal(err.text, want);
	got_free(&g);
	/* read() passes a callback's code through too. */
	g.fail_at = 7;
	assert_int_equal(xp_store_read(s, 5, 10, got_rec, &g, &err), XP_EINVAL);
	assert_int_equal(g.n, 1);
	got_free(&g);
	load_ok(s, &g);
	assert_int_equal(g.n, 10);
	xp_store_close(s);
	got_free(&g);
	tdir_free(&t);
}

static void test_lock(void **state)
{
	(void)state;
	struct tdir t;
	struct xp_err err = { 0 };
	struct xp_store *b = NULL;
	tdir_make(&t);

	struct xp_store *a = open_ok(t.data, &nosync);
	assert_int_equal(xp_store_open(t.data, &nosync, &b, &err), XP_EUNAVAIL);
	assert_null(b);
	assert_non_null(strstr(err.text, t.db));
	assert_non_null(strstr(err.text, "in use"));
	xp_store_close(a);
	b = open_ok(t.data, &nosync);
	xp_store_close(b);

	/* A path through a regular file is no directory. */
	char f[160];
	snprintf(f, sizeof(f), "%s/file", t.root);
	close(open(f, O_CREAT | O_WRONLY, 0600));
	strcat(f, "/data");
	assert_true(xp_store_open(f, NULL, &b, &err) < 0);
	assert_null(b);
	tdir_free(&t);
}

/* ---- refusals --------------------------------------------------------------------------- */

/* Open must fail with code, a message naming the file and containing what, and the file's
 * bytes untouched. */
static void refuse(const struct tdir *t, int code, const char *what)
{
	struct xp_err err = { 0 };
	struct xp_store *s = NULL;
	size_t n1, n2;
	char *before = file_bytes(t->db, &n1);
	int rc = xp_store_open(t->data, NULL, &s, &err);
	if (rc != code)
		fail_msg("open returned %d (%s), expected %d", rc, err.text, code);
	assert_null(s);
	if (!strstr(err.text, t->db) || !strstr(err.text, what))
		fail_msg("message '%s' should name %s and say '%s'", err.text, t->db, what);
	print_message("refused: %s\n", err.text);
	char *after = file_bytes(t->db, &n2);
	assert_int_equal(n1, n2);
	assert_memory_equal(before, after, n1);
	free(before);
	free(after);
}

static void make_store(struct tdir *t, int n)
{
	tdir_make(t);
	struct xp_store *s = open_ok(t->data, &nosync);
	for (int i = 0; i < n; i++) {
		char b[256];
		snprintf(b, sizeof(b), "{\"n\":%d,\"pad\":\"%0200d\"}", i, i);
		xp_store_append(s, "t", b, strlen(b), i);
	}
	xp_store_close(s);
}

static void write_file(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, n, f), n);
	fclose(f);
}

static void test_refuse_newer_format(void **state)
{
	(void)state;
	struct tdir t;
	make_store(&t, 3);
	xp_test_sql(t.db, "UPDATE meta SET value = '3' WHERE key = 'format'");
	refuse(&t, XP_EVERSION, "written by a newer xpool: format 3, this build reads up to 2");
	tdir_free(&t);
}

static void test_refuse_garbage(void **state)
{
	(void)state;
	struct tdir t;
	char junk[8192];
	uint64_t x = 88172645463325252ULL;
	tdir_make(&t);
	assert_int_equal(mkdir(t.data, 0700), 0);
	for (size_t i = 0; i < sizeof(junk); i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		junk[i] = (char)x;
	}
	write_file(t.db, junk, sizeof(junk));
	refuse(&t, XP_ECORRUPT, "not an xpool store");
	write_file(t.db, "", 0);
	refuse(&t, XP_ECORRUPT, "not an xpool store (empty file)");
	tdir_free(&t);
}

static void test_refuse_foreign_sqlite(void **state)
{
	(void)state;
	struct tdir t;
	tdir_make(&t);
	assert_int_equal(mkdir(t.data, 0700), 0);
	xp_test_sql(t.db, "CREATE TABLE foo(x); INSERT INTO foo VALUES (1);");
	refuse(&t, XP_ECORRUPT, "not an xpool store (no meta table)");
	tdir_free(&t);
}

static void test_refuse_truncated(void **state)
{
	(void)state;
	struct tdir t;
	size_t n;
	make_store(&t, 2000);
	char *b = file_bytes(t.db, &n);
	assert_true(n > 64 * 1024);
	/* At a page boundary, then in the middle of a page. */
	write_file(t.db, b, n / 2 / 4096 * 4096);
	refuse(&t, XP_ECORRUPT, "damaged");
	write_file(t.db, b, n / 3 + 100);
	refuse(&t, XP_ECORRUPT, "damaged");
	/* Whole again, but one journal page in the middle zeroed: only the integrity check can
	 * tell (the schema and meta pages are intact). */
	size_t page = n / 4096 * 6 / 10 * 4096;
	memset(b + page, 0, 4096);
	write_file(t.db, b, n);
	refuse(&t, XP_ECORRUPT, "damaged (quick_check)");
	free(b);
	tdir_free(&t);
}

static void test_refuse_gap(void **state)
{
	(void)state;
	struct tdir t;
	make_store(&t, 10);
	xp_test_sql(t.db, "DELETE FROM journal WHERE seq = 5");
	refuse(&t, XP_ECORRUPT, "journal has a gap: seq 6 follows 4");
	tdir_free(&t);

	make_store(&t, 10);
	xp_test_sql(t.db, "DELETE FROM journal WHERE seq = 1");
	refuse(&t, XP_ECORRUPT, "journal has a gap: it starts at seq 2");
	tdir_free(&t);

	/* A snapshot at 4 (with its right checksum) but the journal resumes at 7. */
	char q[160];
	snprintf(
		q, sizeof(q),
		"INSERT INTO snapshot VALUES (4, 0, x'00', %u); DELETE FROM journal WHERE seq <= 6",
		(unsigned)xp_store_snap_crc(4, 0, "", 1));
	make_store(&t, 10);
	xp_test_sql(t.db, q);
	refuse(&t, XP_ECORRUPT, "the newest snapshot is at seq 4 but the journal resumes at seq 7");
	tdir_free(&t);
}

static void test_refuse_orphan_wal(void **state)
{
	(void)state;
	struct tdir t;
	struct xp_err err = { 0 };
	struct xp_store *s = NULL;
	char wal[160];
	tdir_make(&t);
	assert_int_equal(mkdir(t.data, 0700), 0);
	snprintf(wal, sizeof(wal), "%s-wal", t.db);
	write_file(wal, "not empty", 9);
	assert_int_equal(xp_store_open(t.data, NULL, &s, &err), XP_ECORRUPT);
	assert_null(s);
	assert_non_null(strstr(err.text, t.db));
	assert_non_null(strstr(err.text, "write-ahead log"));
	assert_int_equal(access(t.db, F_OK), -1); /* nothing built over it */
	print_message("refused: %s\n", err.text);
	/* An empty one is harmless. */
	write_file(wal, "", 0);
	s = open_ok(t.data, NULL);
	xp_store_close(s);
	tdir_free(&t);
}

static void test_refuse_not_increasing(void **state)
{
	(void)state;
	struct tdir t;
	make_store(&t, 3);
	/* seq is the rowid in a store this code writes; rebuild journal without that to store
	 * seqs out of order (the stray row with its right checksum). */
	char q[512];
	snprintf(q, sizeof(q),
		 "ALTER TABLE journal RENAME TO j0;"
		 "CREATE TABLE journal(seq INTEGER, at INTEGER NOT NULL, type TEXT NOT NULL, "
		 "body TEXT NOT NULL, crc INTEGER NOT NULL);"
		 "INSERT INTO journal SELECT * FROM j0 ORDER BY seq;"
		 "INSERT INTO journal VALUES (2, 0, 't', '{}', %u);"
		 "DROP TABLE j0;",
		 (unsigned)xp_store_rec_crc(2, 0, "t", "{}", 2));
	xp_test_sql(t.db, q);
	refuse(&t, XP_ECORRUPT, "journal seq 2 follows 3 (not increasing)");
	tdir_free(&t);

	make_store(&t, 3);
	xp_test_sql(t.db, "DROP TABLE snapshot");
	refuse(&t, XP_ECORRUPT, "table snapshot is missing");
	tdir_free(&t);
}

/* ---- stats, sync=0 ---------------------------------------------------------------------- */

static uint64_t sum12(const uint64_t *h)
{
	uint64_t n = 0;
	for (int i = 0; i < 12; i++)
		n += h[i];
	return n;
}

static void test_stats(void **state)
{
	(void)state;
	struct tdir t;
	struct xp_store_stats st;
	struct xp_store_opts o = { .sync = 0, .max_batch = 7 };
	tdir_make(&t);

	for (int i = 1; i < 12; i++) {
		assert_true(xp_store_commit_buckets[i] > xp_store_commit_buckets[i - 1]);
		assert_true(xp_store_batch_buckets[i] > xp_store_batch_buckets[i - 1]);
	}
	assert_true(xp_store_commit_buckets[0] == 0.0005 && xp_store_commit_buckets[11] == 5);
	assert_true(xp_store_batch_buckets[0] == 1 && xp_store_batch_buckets[11] == 4096);

	struct xp_store *s = open_ok(t.data, &o);
	xp_store_stats(s, &st);
	assert_int_equal(st.commits, 0);
	assert_int_equal(st.records, 0);
	append_n(s, 1000);
	assert_int_equal(xp_store_sync(s), 0);
	xp_store_snapshot(s, 1000, "S", 1);
	assert_int_equal(xp_store_sync(s), 0);
	xp_store_stats(s, &st);
	assert_int_equal(st.records, 1000);
	assert_true(st.commits >= 1000 / 7 + 1);
	assert_true(st.commits <= 1001);
	assert_int_equal(sum12(st.batch_hist), st.commits);
	for (int i = 4; i < 12; i++) /* at most 7 records per commit: buckets 1, 2, 4, 8 */
		assert_int_equal(st.batch_hist[i], 0);
	assert_true(st.batch_hist[0] >= 1); /* the snapshot-only commit */
	assert_true(sum12(st.commit_hist) <= st.commits);
	assert_true(st.commit_seconds_sum > 0);
	print_message("stats: %llu records in %llu commits, %.6f s committing\n",
		      (unsigned long long)st.records, (unsigned long long)st.commits,
		      st.commit_seconds_sum);
	xp_store_close(s);
	tdir_free(&t);
}

static void test_sync0(void **state)
{
	(void)state;
	struct tdir t;
	struct got g = { 0 };
	tdir_make(&t);

	struct xp_store *s = open_ok(t.data, &nosync);
	uint64_t t0 = xp_mono_ns();
	append_n(s, 20000);
	assert_int_equal(xp_store_sync(s), 0);
	double secs = (double)(xp_mono_ns() - t0) / 1e9;
	print_message("sync=0: 20000 records in %.3f s (%.0f records/s)\n", secs, 20000 / secs);
	xp_store_close(s);
	s = open_ok(t.data, &nosync);
	load_ok(s, &g);
	assert_int_equal(g.n, 20000);
	assert_int_equal(g.r[19999].seq, 20000);
	xp_store_close(s);
	got_free(&g);
	tdir_free(&t);
}

/* ---- group commit ----------------------------------------------------------------------- */

struct producer {
	struct xp_store *s;
	int n;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done, rc, bad;
};

static void prod_done(void *arg, int rc)
{
	struct producer *p = arg;
	pthread_mutex_lock(&p->mu);
	p->done = 1;
	p->rc = rc;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static void *prod_main(void *arg)
{
	struct producer *p = arg;
	for (int i = 0; i < p->n; i++) {
		uint64_t seq = xp_store_append(p->s, "job.submit", "{\"id\":\"x\"}", 10, 0);
		if (seq == 0)
			p->bad++;
		p->done = 0;
		xp_store_when_durable(p->s, prod_done, p);
		pthread_mutex_lock(&p->mu);
		while (!p->done)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->rc != 0 || xp_store_durable_seq(p->s) < seq)
			p->bad++;
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

static void group_commit(int nprod, int per)
{
	struct tdir t;
	struct xp_store_stats st;
	struct producer *p = calloc((size_t)nprod, sizeof(*p));
	pthread_t *th = calloc((size_t)nprod, sizeof(*th));
	tdir_make(&t);

	struct xp_store *s = open_ok(t.data, NULL);
	uint64_t t0 = xp_mono_ns();
	for (int i = 0; i < nprod; i++) {
		p[i].s = s;
		p[i].n = per;
		pthread_mutex_init(&p[i].mu, NULL);
		pthread_cond_init(&p[i].cv, NULL);
		assert_int_equal(pthread_create(&th[i], NULL, prod_main, &p[i]), 0);
	}
	for (int i = 0; i < nprod; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(p[i].bad, 0);
		pthread_mutex_destroy(&p[i].mu);
		pthread_cond_destroy(&p[i].cv);
	}
	double secs = (double)(xp_mono_ns() - t0) / 1e9;
	xp_store_stats(s, &st);
	assert_int_equal(st.records, (uint64_t)nprod * per);
	assert_true(st.commits <= st.records);
	if (nprod >= 8)
		assert_true(st.commits < st.records);
	print_message("group commit (sync=1): %2d producers x %d: %llu records in %llu commits "
		      "(%.1f per commit), %.3f s, %.0f records/s, mean commit %.2f ms\n",
		      nprod, per, (unsigned long long)st.records, (unsigned long long)st.commits,
		      (double)st.records / (double)st.commits, secs, (double)st.records / secs,
		      st.commit_seconds_sum * 1e3 / (double)st.commits);
	xp_store_close(s);
	free(p);
	free(th);
	tdir_free(&t);
}

static void test_group_commit(void **state)
{
	(void)state;
	group_commit(1, 200);
	group_commit(8, 200);
	group_commit(64, 200);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_snapshot_tail),
		cmocka_unit_test(test_prune),
		cmocka_unit_test(test_read_concurrent),
		cmocka_unit_test(test_close_flushes),
		cmocka_unit_test(test_waiters),
		cmocka_unit_test(test_failure),
		cmocka_unit_test(test_load_rules),
		cmocka_unit_test(test_lock),
		cmocka_unit_test(test_refuse_newer_format),
		cmocka_unit_test(test_refuse_garbage),
		cmocka_unit_test(test_refuse_foreign_sqlite),
		cmocka_unit_test(test_refuse_truncated),
		cmocka_unit_test(test_refuse_gap),
		cmocka_unit_test(test_refuse_orphan_wal),
		cmocka_unit_test(test_refuse_not_increasing),
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_sync0),
		cmocka_unit_test(test_group_commit),
	};
	return xp_run_tests(tests, NULL, NULL);
}
