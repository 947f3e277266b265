/*
 * test_store_recover: the store's checksums, seal, recovery, migration and
 * fail-stop on a full or failing disk (store.h, docs/design/store.md).
 *
 *  - a record changed in place (its checksum not) is refused, naming the
 *    file, the seq and what recover would drop, and the files keep their
 *    bytes; recover drops it and every later record, says so, and the
 *    store goes on from the last good seq;
 *  - a damaged newest snapshot: refused; recover falls back to the older
 *    one and loses no record;
 *  - a damaged record below the newest snapshot: refused; recover drops
 *    that history only (the state is whole, event readers start again);
 *  - a journal that ends below the seal (what a damaged or cut WAL does):
 *    refused with the missing range; recover accepts the loss and reseals;
 *  - the seal missing, or both its slots damaged: refused; one slot
 *    damaged: opens (the other slot holds); recover writes a new seal;
 *  - the seal follows each commit, alternating slots; a seal that cannot
 *    be written fails the store (its batch committed, not acknowledged);
 *  - recover on a whole store drops nothing; with nothing to start from it
 *    refuses as before;
 *  - a format 1 store (no checksums, no seal) is migrated in place: every
 *    record and snapshot is still there, byte for byte, now checksummed and
 *    sealed; a damaged format 1 store is refused untouched;
 *  - disk full and failing fsync, through a fault-injecting VFS: the commit
 *    fails, its waiters and every later call get the failure, and after a
 *    reopen every acknowledged record is there and nothing else.
 */
#define _GNU_SOURCE /* nftw */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "faultvfs.h"
#include "lib/err.h"
#include "lib/fileio.h"
#include "store/store.h"
#include "store/store_int.h" /* test_seal_write_fails swaps the seal's descriptor */

/* ---- helpers ---- */

struct tdir {
	char root[64], data[96], db[128], seal[128];
};

static void tdir_make(struct tdir *t)
{
	strcpy(t->root, "/tmp/xprecoverXXXXXX");
	assert_non_null(mkdtemp(t->root));
	snprintf(t->data, sizeof(t->data), "%s/data", t->root);
	snprintf(t->db, sizeof(t->db), "%s/" XP_STORE_FILE, t->data);
	snprintf(t->seal, sizeof(t->seal), "%s/" XP_STORE_SEAL, t->data);
}

static void tdir_free(struct tdir *t)
{
	xp_test_rmdir(t->root);
}

static const struct xp_store_opts nosync = { .sync = 0 };
static const struct xp_store_opts recover = { .sync = 0, .recover = 1 };

static struct xp_store *open_ok(const struct tdir *t, const struct xp_store_opts *o)
{
	struct xp_err err = { 0 };
	struct xp_store *s = NULL;
	if (xp_store_open(t->data, o, &s, &err) != 0)
		fail_msg("open %s: %s", t->data, err.text);
	return s;
}

static void body_of(uint64_t seq, char *b, size_t n)
{
	snprintf(b, n, "{\"n\":%llu,\"tenant\":\"acme\",\"cpu\":\"2000m\"}",
		 (unsigned long long)seq);
}

static void append_to(struct xp_store *s, uint64_t last)
{
	while (xp_store_last_seq(s) < last) {
		char b[128];
		uint64_t want = xp_store_last_seq(s) + 1;
		body_of(want, b, sizeof(b));
		assert_int_equal(xp_store_append(s, "t", b, strlen(b), (int64_t)want), want);
	}
}

static void snap(struct xp_store *s, uint64_t seq)
{
	char b[32];
	snprintf(b, sizeof(b), "S%llu", (unsigned long long)seq);
	xp_store_snapshot(s, seq, b, strlen(b));
}

/* What a load delivers: the snapshot's seq, and records that must follow it contiguously
 * with the bodies body_of gives. */
struct seen {
	uint64_t snap, first, last, n;
	int bad;
};

static int seen_snap(void *ctx, uint64_t seq, const char *body, size_t len)
{
	struct seen *v = ctx;
	char want[32];
	snprintf(want, sizeof(want), "S%llu", (unsigned long long)seq);
	v->snap = seq;
	v->last = seq;
	v->bad |= len != strlen(want) || memcmp(body, want, len) != 0;
	return 0;
}

static int seen_rec(void *ctx, const struct xp_store_rec *r)
{
	struct seen *v = ctx;
	char want[128];
	body_of(r->seq, want, sizeof(want));
	if (!v->n++)
		v->first = r->seq;
	v->bad |= r->seq != v->last + 1 || r->len != strlen(want) || memcmp(r->body, want, r->len);
	v->last = r->seq;
	return 0;
}

static struct seen load_ok(struct xp_store *s)
{
	struct seen v = { 0 };
	struct xp_err err = { 0 };
	if (xp_store_load(s, seen_snap, seen_rec, &v, &err) != 0)
		fail_msg("load: %s", err.text);
	assert_false(v.bad);
	return v;
}

static char *bytes(const char *path, size_t *n)
{
	char *b;
	struct xp_err err;
	if (xp_read_file(path, 1 << 26, &b, n, &err) != 0)
		return NULL;
	return b;
}

/* Open must refuse with XP_ECORRUPT and a message holding each of the strings, leaving the
 * database and the seal as they were. */
static void refused(const struct tdir *t, const char *const *want)
{
	struct xp_err err = { 0 };
	struct xp_store *s = NULL;
	size_t n1, n2, m1 = 0, m2 = 0;
	char *db1 = bytes(t->db, &n1), *seal1 = bytes(t->seal, &m1);
	int rc = xp_store_open(t->data, &nosync, &s, &err);
	if (rc != XP_ECORRUPT)
		fail_msg("open returned %d (%s), expected a refusal", rc, err.text);
	assert_null(s);
	for (; *want; want++)
		if (!strstr(err.text, *want))
			fail_msg("'%s' should say '%s'", err.text, *want);
	print_message("refused: %s\n", err.text);
	char *db2 = bytes(t->db, &n2), *seal2 = bytes(t->seal, &m2);
	assert_true(n1 == n2 && !memcmp(db1, db2, n1));
	assert_true(!seal1 == !seal2 && m1 == m2 && (!seal1 || !memcmp(seal1, seal2, m1)));
	free(db1), free(db2), free(seal1), free(seal2);
}

/* Open with recover; its report must hold each of the strings. */
static struct xp_store *recovered(const struct tdir *t, const char *const *want)
{
	struct xp_store *s = open_ok(t, &recover);
	const char *r = xp_store_recovered(s);
	assert_non_null(r);
	for (; *want; want++)
		if (!strstr(r, *want))
			fail_msg("recover said '%s', not '%s'", r, *want);
	print_message("recovered: %s\n", r);
	return s;
}

/* A store: records 1..last, a snapshot at each of snaps[] (0-terminated) when reached. */
static void make(struct tdir *t, uint64_t last, const uint64_t *snaps)
{
	tdir_make(t);
	struct xp_store *s = open_ok(t, &nosync);
	for (; snaps && *snaps; snaps++) {
		append_to(s, *snaps);
		snap(s, *snaps);
	}
	append_to(s, last);
	assert_int_equal(xp_store_sync(s), 0);
	xp_store_close(s);
}

/* ---- checksums ---- */

static void test_record_checksum(void **state)
{
	(void)state;
	struct tdir t;
	make(&t, 20, (const uint64_t[]){ 10, 0 });
	xp_test_sql(t.db, "UPDATE journal SET body = replace(body, 'acme', 'acmf') WHERE seq = 15");
	char db[160];
	snprintf(db, sizeof(db), "%s:", t.db);
	refused(&t, (const char *[]){ db, "record 15 (t) fails its checksum",
				      "--recover starts without seq 15..20", NULL });
	struct xp_store *s = recovered(
		&t,
		(const char *[]){ "dropping seq 15..20: record 15 (t) fails its checksum", NULL });
	assert_int_equal(xp_store_last_seq(s), 14);
	struct seen v = load_ok(s);
	assert_int_equal(v.snap, 10);
	assert_int_equal(v.first, 11);
	assert_int_equal(v.last, 14);
	append_to(s, 16); /* seqs go on from the last good one */
	assert_int_equal(xp_store_sync(s), 0);
	xp_store_close(s);
	s = open_ok(&t, &nosync);
	assert_int_equal(load_ok(s).last, 16);
	xp_store_close(s);
	tdir_free(&t);

	/* The crc column itself, and a record moved to another seq with its checksum. */
	make(&t, 12, NULL);
	xp_test_sql(t.db, "UPDATE journal SET crc = crc + 1 WHERE seq = 12");
	refused(&t, (const char *[]){ "record 12 (t) fails its checksum", NULL });
	tdir_free(&t);
	make(&t, 12, NULL);
	xp_test_sql(t.db,
		    "UPDATE journal SET body = (SELECT body FROM journal WHERE seq = 3), crc = "
		    "(SELECT crc FROM journal WHERE seq = 3) WHERE seq = 7");
	refused(&t, (const char *[]){ "record 7 (t) fails its checksum", NULL });
	tdir_free(&t);
}

static void test_snapshot_checksum(void **state)
{
	(void)state;
	struct tdir t;
	make(&t, 25, (const uint64_t[]){ 10, 20, 0 });
	xp_test_sql(t.db, "UPDATE snapshot SET body = CAST('S21' AS BLOB) WHERE seq = 20");
	refused(&t, (const char *[]){ "the snapshot at seq 20 fails its checksum",
				      "--recover starts without 1 damaged snapshot", NULL });
	struct xp_store *s = recovered(
		&t,
		(const char *[]){ "dropping the snapshot at seq 20: it fails its checksum", NULL });
	struct seen v = load_ok(s); /* the older snapshot and every record after it */
	assert_int_equal(v.snap, 10);
	assert_int_equal(v.first, 11);
	assert_int_equal(v.last, 25);
	xp_store_close(s);
	tdir_free(&t);

	/* The only snapshot, the journal before it pruned: nothing to start from. */
	make(&t, 12, (const uint64_t[]){ 10, 0 });
	xp_test_sql(t.db, "UPDATE snapshot SET crc = crc + 1");
	refused(&t, (const char *[]){ "--recover cannot help", NULL });
	struct xp_err err = { 0 };
	struct xp_store *none = NULL;
	assert_int_equal(xp_store_open(t.data, &recover, &none, &err), XP_ECORRUPT);
	assert_non_null(strstr(err.text, "cannot help"));
	tdir_free(&t);
}

static int count_rec(void *ctx, const struct xp_store_rec *r)
{
	(void)r;
	(*(long *)ctx)++;
	return 0;
}

static void test_history_checksum(void **state)
{
	(void)state;
	struct tdir t;
	struct xp_err err = { 0 };
	long n = 0;
	make(&t, 30, (const uint64_t[]){ 10, 20, 0 });
	/* the journal holds 11..30 (pruned at the older snapshot); 14 lies below the newest */
	xp_test_sql(t.db, "UPDATE journal SET at = at + 1 WHERE seq = 14");
	refused(&t, (const char *[]){ "record 14 (t) fails its checksum",
				      "--recover starts without the history up to seq 14", NULL });
	struct xp_store *s = recovered(&t, (const char *[]){ "dropping seq 11..14", NULL });
	struct seen v = load_ok(s);
	assert_int_equal(v.snap, 20);
	assert_int_equal(v.last, 30);
	assert_int_equal(xp_store_read(s, 10, 100, count_rec, &n, &err), XP_ENOENT);
	xp_store_close(s);
	tdir_free(&t);
}

/* ---- the seal ---- */

/* The seq in slot i of the seal file b. */
static uint64_t slot_seq(const char *b, int i)
{
	return strtoull(b + i * 64 + 17, NULL, 10);
}

static void test_seal_follows_commits(void **state)
{
	(void)state;
	struct tdir t;
	char *b;
	size_t n;
	tdir_make(&t);
	struct xp_store *s = open_ok(&t, NULL);
	b = bytes(t.seal, &n);
	assert_int_equal(n, 128);
	assert_memory_equal(b, "xpool-seal 1 seq=00000000000000000000 rec=00000000 sum=", 55);
	free(b);
	for (uint64_t i = 1; i <= 4; i++) {
		/* three records: one commit or more; after the sync the newest slot holds the last
		 * seq and the other an earlier commit's (a torn write would leave that one) */
		append_to(s, i * 3);
		assert_int_equal(xp_store_sync(s), 0);
		b = bytes(t.seal, &n);
		uint64_t a = slot_seq(b, 0), c = slot_seq(b, 1);
		uint64_t hi = a > c ? a : c, lo = a > c ? c : a;
		assert_int_equal(hi, i * 3);
		assert_true(lo < hi && lo >= (i - 1) * 3);
		free(b);
	}
	xp_store_close(s);
	tdir_free(&t);
}

/* The seal cannot be written (its descriptor swapped for a read-only one): the store fails
 * like a failed commit; the batch is in the journal all the same, and the store opens. */
static void test_seal_write_fails(void **state)
{
	(void)state;
	struct tdir t;
	struct xp_err err = { 0 };
	tdir_make(&t);
	struct xp_store *s = open_ok(&t, &nosync);
	append_to(s, 3);
	assert_int_equal(xp_store_sync(s), 0);
	int ro = open(t.seal, O_RDONLY);
	assert_true(ro >= 0);
	close(s->seal_fd); /* the store thread is idle: its next batch reads the new one */
	s->seal_fd = ro;
	/* seq 4 may fail its seal before seq 5 is handed over: then the
	 * store has stopped and refuses 5 */
	for (uint64_t seq = 4; seq <= 5; seq++) {
		char b[128];
		body_of(seq, b, sizeof(b));
		uint64_t got = xp_store_append(s, "t", b, strlen(b), (int64_t)seq);
		assert_true(got == seq || (seq == 5 && got == 0));
	}
	assert_true(xp_store_sync(s) < 0);
	assert_true(xp_store_failure(s, &err) < 0);
	print_message("failed: %s\n", err.text);
	assert_non_null(strstr(err.text, t.seal));
	assert_non_null(strstr(err.text, "cannot seal seq 4")); /* 4..5, or 4 alone */
	assert_non_null(strstr(err.text, "not acknowledged"));
	assert_int_equal(xp_store_durable_seq(s), 3);
	xp_store_close(s);
	s = open_ok(&t, &nosync);
	uint64_t last = load_ok(s).last; /* the batch that failed its seal is there */
	assert_true(last == 4 || last == 5);
	xp_store_close(s);
	tdir_free(&t);
}

static void test_seal_ahead(void **state)
{
	(void)state;
	struct tdir t;
	make(&t, 30, (const uint64_t[]){ 10, 0 });
	/* what a WAL that lost its last frames leaves: the journal ends early */
	xp_test_sql(t.db, "DELETE FROM journal WHERE seq > 25");
	refused(&t, (const char *[]){ "seq 26..30 are missing", "the journal ends at seq 25",
				      "xpool.seal says seq 30 was committed",
				      "--recover starts without seq 26..30", NULL });
	struct xp_store *s = recovered(&t, (const char *[]){ "dropping seq 26..30: the journal "
							     "ends at seq 25",
							     NULL });
	assert_int_equal(load_ok(s).last, 25);
	xp_store_close(s);
	s = open_ok(&t, &nosync); /* resealed: strict opens again */
	xp_store_close(s);
	tdir_free(&t);

	/* The sealed record replaced by another with a valid checksum of its own. */
	char q[256];
	make(&t, 8, NULL);
	snprintf(q, sizeof(q), "UPDATE journal SET body = '{}', crc = %u WHERE seq = 8",
		 (unsigned)xp_store_rec_crc(8, 8, "t", "{}", 2));
	xp_test_sql(t.db, q);
	refused(&t, (const char *[]){ "record 8 (t) is not the one committed", NULL });
	tdir_free(&t);
}

static void test_seal_missing_or_damaged(void **state)
{
	(void)state;
	struct tdir t;
	make(&t, 5, NULL);
	char *b;
	size_t n;
	b = bytes(t.seal, &n);
	unlink(t.seal);
	refused(&t, (const char *[]){ t.seal, "missing", NULL });
	struct xp_store *s = recovered(&t, (const char *[]){ "writing a new one at seq 5", NULL });
	assert_int_equal(load_ok(s).last, 5);
	xp_store_close(s);
	s = open_ok(&t, &nosync);
	xp_store_close(s);

	/* one slot damaged: the other holds; both: refused */
	char *c = bytes(t.seal, &n);
	int fd = open(t.seal, O_WRONLY);
	assert_int_equal(pwrite(fd, "X", 1, 20), 1);
	s = open_ok(&t, &nosync);
	xp_store_close(s);
	assert_int_equal(pwrite(fd, "X", 1, 64 + 20), 1);
	close(fd);
	refused(&t, (const char *[]){ t.seal, "damaged", NULL });
	fd = open(t.seal, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, c, n), (ssize_t)n);
	close(fd);
	s = open_ok(&t, &nosync);
	xp_store_close(s);
	free(b);
	free(c);
	tdir_free(&t);
}

static void test_recover_whole(void **state)
{
	(void)state;
	struct tdir t;
	make(&t, 9, (const uint64_t[]){ 4, 0 });
	size_t n1, n2;
	char *b1 = bytes(t.db, &n1);
	struct xp_store *s = recovered(&t, (const char *[]){ "nothing to drop", NULL });
	assert_int_equal(load_ok(s).last, 9);
	xp_store_close(s);
	char *b2 = bytes(t.db, &n2);
	assert_true(n1 == n2 && !memcmp(b1, b2, n1));
	free(b1), free(b2);
	s = open_ok(&t, &nosync);
	assert_null(xp_store_recovered(s));
	xp_store_close(s);
	tdir_free(&t);
}

/* ---- migration ---- */

static void test_migrate_format1(void **state)
{
	(void)state;
	struct tdir t;
	struct xp_err err = { 0 };
	tdir_make(&t);
	assert_int_equal(mkdir(t.data, 0700), 0);
	/* format 1 as the previous build wrote it */
	xp_test_sql(
		t.db,
		"PRAGMA journal_mode=WAL;"
		"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
		"CREATE TABLE journal(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, type TEXT NOT "
		"NULL, body TEXT NOT NULL);"
		"CREATE TABLE snapshot(seq INTEGER PRIMARY KEY, at INTEGER, body BLOB NOT NULL);"
		"INSERT INTO meta VALUES ('format', '1'), ('created_by', 'xpool store format 1');"
		"INSERT INTO snapshot VALUES (5, NULL, CAST('S5' AS BLOB));");
	for (int i = 6; i <= 12; i++) {
		char b[128], q[256];
		body_of((uint64_t)i, b, sizeof(b));
		snprintf(q, sizeof(q), "INSERT INTO journal VALUES (%d, %d, 't', '%s')", i, i, b);
		xp_test_sql(t.db, q);
	}
	assert_int_equal(access(t.seal, F_OK), -1);
	struct xp_store *s = open_ok(&t, &nosync);
	struct seen v = load_ok(s);
	assert_int_equal(v.snap, 5);
	assert_int_equal(v.first, 6);
	assert_int_equal(v.last, 12);
	append_to(s, 13);
	assert_int_equal(xp_store_sync(s), 0);
	xp_store_close(s);
	sqlite3 *db;
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_open(t.db, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT (SELECT value FROM meta WHERE key = 'format'), "
					    "(SELECT count(*) FROM journal WHERE crc IS NOT NULL), "
					    "(SELECT crc FROM snapshot WHERE seq = 5)",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "2");
	assert_int_equal(sqlite3_column_int(st, 1), 8);
	assert_int_equal(sqlite3_column_int64(st, 2), xp_store_snap_crc(5, 0, "S5", 2));
	sqlite3_finalize(st);
	sqlite3_close(db);
	s = open_ok(&t, &nosync); /* format 2 now, sealed: a plain open */
	assert_int_equal(load_ok(s).last, 13);
	xp_store_close(s);
	tdir_free(&t);

	/* a damaged format 1 store is refused, not migrated */
	tdir_make(&t);
	assert_int_equal(mkdir(t.data, 0700), 0);
	xp_test_sql(
		t.db,
		"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
		"CREATE TABLE journal(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, type TEXT NOT "
		"NULL, body TEXT NOT NULL);"
		"CREATE TABLE snapshot(seq INTEGER PRIMARY KEY, at INTEGER, body BLOB NOT NULL);"
		"INSERT INTO meta VALUES ('format', '1');"
		"INSERT INTO journal VALUES (1, 0, 't', '{}'), (3, 0, 't', '{}');");
	s = NULL;
	assert_int_equal(xp_store_open(t.data, &nosync, &s, &err), XP_ECORRUPT);
	assert_non_null(strstr(err.text, "seq 3 follows 1"));
	assert_int_equal(access(t.seal, F_OK), -1);
	tdir_free(&t);
}

/* ---- disk full, failing fsync ---- */

static void fault_round(int sync_fault)
{
	struct tdir t;
	struct xp_err err = { 0 };
	struct xp_store_opts o = { .sync = 1, .vfs = XP_FAULTVFS };
	tdir_make(&t);
	assert_int_equal(xp_faultvfs_register(), SQLITE_OK);
	struct xp_store *s = open_ok(&t, &o);
	append_to(s, 10);
	assert_int_equal(xp_store_sync(s), 0); /* acknowledged: 1..10 */
	long long before = xp_faultvfs_refused();
	if (sync_fault)
		xp_faultvfs_fail_sync(1);
	else
		xp_faultvfs_full_after(0);
	for (uint64_t seq = 11; seq <= 15; seq++) /* 0 once the store has failed */
		if (xp_store_append(s, "t", "{}", 2, 0) != seq)
			break;
	int rc = xp_store_sync(s);
	xp_faultvfs_full_after(-1);
	xp_faultvfs_fail_sync(0);
	assert_true(xp_faultvfs_refused() > before);
	assert_int_equal(rc, sync_fault ? XP_EIO : -ENOSPC);
	assert_int_equal(xp_store_failure(s, &err), rc);
	assert_non_null(strstr(err.text, t.db));
	assert_non_null(strstr(err.text, "commit of seq 11"));
	print_message("failed: %s\n", err.text);
	assert_int_equal(xp_store_durable_seq(s), 10);
	assert_int_equal(xp_store_append(s, "t", "{}", 2, 0), 0); /* fail-stop */
	assert_int_equal(xp_store_sync(s), rc);
	xp_store_close(s);

	s = open_ok(&t, &nosync); /* the disk has room again */
	struct seen v = load_ok(s);
	assert_int_equal(v.last, 10); /* every acknowledged record, nothing else */
	append_to(s, 11);
	assert_int_equal(xp_store_sync(s), 0);
	xp_store_close(s);
	tdir_free(&t);
}

static void test_disk_full(void **state)
{
	(void)state;
	fault_round(0);
	fault_round(1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_record_checksum),
		cmocka_unit_test(test_snapshot_checksum),
		cmocka_unit_test(test_history_checksum),
		cmocka_unit_test(test_seal_follows_commits),
		cmocka_unit_test(test_seal_write_fails),
		cmocka_unit_test(test_seal_ahead),
		cmocka_unit_test(test_seal_missing_or_damaged),
		cmocka_unit_test(test_recover_whole),
		cmocka_unit_test(test_migrate_format1),
		cmocka_unit_test(test_disk_full),
	};
	return xp_run_tests(tests, NULL, NULL);
}
