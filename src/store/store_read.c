/*
 * store_read: replay at start (xp_store_load) and reading the committed
 * journal for clients resuming an event stream (xp_store_read).
 *
 * Both run on the read connection, one caller at a time (rmu), each inside
 * one read transaction, so what they see is one committed state of the file:
 * in WAL mode a reader never sees part of a transaction and never blocks the
 * store thread's writer. A reader may see a commit a moment before
 * xp_store_durable_seq() says so (the thread publishes after COMMIT returns);
 * what it sees is committed all the same.
 *
 * Load checks again, as it goes, that the records after the snapshot are
 * contiguous, so a replay can never silently skip a record, and both check
 * every row against its checksum before handing it on: open checked them
 * too, but a row read here is the row used.
 */
#include "store_int.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int xp_store_read_prepare(struct xp_store *s, struct xp_err *err)
{
	static const struct {
		size_t off;
		const char *sql;
	} stmts[] = {
		{ offsetof(struct xp_store, rt_begin), "BEGIN" },
		{ offsetof(struct xp_store, rt_end), "COMMIT" },
		{ offsetof(struct xp_store, rt_floor),
		  "SELECT (SELECT min(seq) FROM journal), (SELECT max(seq) FROM snapshot)" },
		{ offsetof(struct xp_store, rt_read),
		  "SELECT seq, at, type, body, crc FROM journal WHERE seq > ?1 ORDER BY seq LIMIT "
		  "?2" },
		{ offsetof(struct xp_store, rt_snap),
		  "SELECT seq, body, at, crc FROM snapshot ORDER BY seq DESC LIMIT 1" },
	};
	for (size_t i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		sqlite3_stmt **st = (sqlite3_stmt **)((char *)s + stmts[i].off);
		int rc = sqlite3_prepare_v3(s->rdb, stmts[i].sql, -1, SQLITE_PREPARE_PERSISTENT, st,
					    NULL);
		if (rc != SQLITE_OK)
			return xp_errf(err, xp_store_code(rc), "%s: %s: %s", s->path, stmts[i].sql,
				       sqlite3_errmsg(s->rdb));
	}
	return 0;
}

static int sql_fail(struct xp_store *s, int rc, const char *what, struct xp_err *err)
{
	int code = xp_store_code(rc);
	return xp_errf(err, code < 0 ? code : XP_EIO, "%s: %s: %s", s->path, what,
		       sqlite3_errmsg(s->rdb));
}

/* A callback said rc < 0: keep the text it left in err, if any, behind our context. */
static int cb_fail(struct xp_store *s, int rc, uint64_t seq, const char *type, struct xp_err *err)
{
	if (err && err->text[0]) {
		err->code = rc;
		xp_err_prefix(err, "%s: seq %" PRIu64 " (%s): ", s->path, seq, type);
		return rc;
	}
	return xp_errf(err, rc, "%s: seq %" PRIu64 " (%s): %s", s->path, seq, type,
		       xp_strerror(rc));
}

static void err_clear(struct xp_err *err)
{
	if (err) {
		err->code = 0;
		err->text[0] = '\0';
	}
}

/* The row as a record, checked against its checksum (XP_ECORRUPT naming the seq if not). */
static int row_rec(struct xp_store *s, sqlite3_stmt *st, struct xp_store_rec *r, struct xp_err *err)
{
	r->seq = (uint64_t)sqlite3_column_int64(st, 0);
	r->at_ms = sqlite3_column_int64(st, 1);
	r->type = (const char *)sqlite3_column_text(st, 2);
	size_t tl = (size_t)sqlite3_column_bytes(st, 2);
	r->body = (const char *)sqlite3_column_text(st, 3);
	r->len = (size_t)sqlite3_column_bytes(st, 3);
	if (!r->type) {
		r->type = "";
		tl = 0;
	}
	if (!r->body) {
		r->body = "";
		r->len = 0;
	}
	uint32_t want = xp_store_rec_crc_n(r->seq, r->at_ms, r->type, tl, r->body, r->len);
	if (sqlite3_column_type(st, 4) == SQLITE_INTEGER &&
	    sqlite3_column_int64(st, 4) == (sqlite3_int64)want)
		return 0;
	return xp_errf(err, XP_ECORRUPT,
		       "%s: record %" PRIu64 " (%.40s) fails its checksum (stored %08llx, computed "
		       "%08" PRIx32 ")",
		       s->path, r->seq, r->type,
		       (unsigned long long)sqlite3_column_int64(st, 4) & 0xffffffffULL, want);
}

/* Under rmu: end the read transaction (it is read-only, so this cannot lose anything). */
static void end_read(struct xp_store *s)
{
	sqlite3_reset(s->rt_snap);
	sqlite3_reset(s->rt_read);
	sqlite3_reset(s->rt_floor);
	if (!sqlite3_get_autocommit(s->rdb)) {
		sqlite3_step(s->rt_end);
		sqlite3_reset(s->rt_end);
	}
}

static int begin_read(struct xp_store *s, struct xp_err *err)
{
	int rc = sqlite3_step(s->rt_begin);
	sqlite3_reset(s->rt_begin);
	return rc == SQLITE_DONE ? 0 : sql_fail(s, rc, "begin read", err);
}

static int load_locked(struct xp_store *s, xp_store_snap_fn snap, xp_store_rec_fn rec, void *ctx,
		       struct xp_err *err)
{
	uint64_t after = 0;
	int rc = begin_read(s, err);
	if (rc < 0)
		return rc;

	rc = sqlite3_step(s->rt_snap);
	if (rc == SQLITE_ROW) {
		after = (uint64_t)sqlite3_column_int64(s->rt_snap, 0);
		const char *body = sqlite3_column_blob(s->rt_snap, 1);
		size_t len = (size_t)sqlite3_column_bytes(s->rt_snap, 1);
		if (!snap)
			return xp_errf(err, XP_EUNSUPP,
				       "%s: has a snapshot at seq %" PRIu64
				       " but the loader takes none",
				       s->path, after);
		uint32_t want = xp_store_snap_crc(after, sqlite3_column_int64(s->rt_snap, 2),
						  body ? body : "", body ? len : 0);
		if (sqlite3_column_type(s->rt_snap, 3) != SQLITE_INTEGER ||
		    sqlite3_column_int64(s->rt_snap, 3) != (sqlite3_int64)want)
			return xp_errf(err, XP_ECORRUPT,
				       "%s: the snapshot at seq %" PRIu64 " fails its checksum",
				       s->path, after);
		err_clear(err);
		rc = snap(ctx, after, body ? body : "", body ? len : 0);
		if (rc < 0)
			return cb_fail(s, rc, after, "snapshot", err);
	} else if (rc != SQLITE_DONE) {
		return sql_fail(s, rc, "reading the snapshot", err);
	}

	uint64_t expect = after + 1;
	sqlite3_bind_int64(s->rt_read, 1, (sqlite3_int64)after);
	sqlite3_bind_int64(s->rt_read, 2, -1);
	while ((rc = sqlite3_step(s->rt_read)) == SQLITE_ROW) {
		struct xp_store_rec r;
		if ((rc = row_rec(s, s->rt_read, &r, err)) < 0)
			return rc;
		if (r.seq != expect)
			return xp_errf(err, XP_ECORRUPT,
				       "%s: damaged: journal has a gap: seq %" PRIu64
				       " where %" PRIu64 " was due",
				       s->path, r.seq, expect);
		err_clear(err);
		rc = rec(ctx, &r);
		if (rc < 0)
			return cb_fail(s, rc, r.seq, r.type, err);
		expect++;
	}
	if (rc != SQLITE_DONE)
		return sql_fail(s, rc, "reading the journal", err);
	return 0;
}

int xp_store_load(struct xp_store *s, xp_store_snap_fn snap, xp_store_rec_fn rec, void *ctx,
		  struct xp_err *err)
{
	pthread_mutex_lock(&s->mu);
	int appended = s->appended;
	pthread_mutex_unlock(&s->mu);
	if (appended)
		return xp_errf(err, XP_ESTATE, "%s: load must come before the first append",
			       s->path);
	if (s->etcd)
		return xp_store_etcd_load(s, snap, rec, ctx, err);

	pthread_mutex_lock(&s->rmu);
	int rc = load_locked(s, snap, rec, ctx, err);
	end_read(s);
	pthread_mutex_unlock(&s->rmu);
	return rc;
}

static long read_locked(struct xp_store *s, uint64_t since, size_t limit, xp_store_rec_fn rec,
			void *ctx, struct xp_err *err)
{
	long n = 0;
	int rc = begin_read(s, err);
	if (rc < 0)
		return rc;

	/* The first seq still in the journal: its oldest record, or (all pruned) the one after
	 * the newest snapshot. A reader behind it has missed records for good. */
	rc = sqlite3_step(s->rt_floor);
	if (rc != SQLITE_ROW)
		return sql_fail(s, rc, "reading the journal", err);
	uint64_t floor = 1;
	if (sqlite3_column_type(s->rt_floor, 0) != SQLITE_NULL)
		floor = (uint64_t)sqlite3_column_int64(s->rt_floor, 0);
	else if (sqlite3_column_type(s->rt_floor, 1) != SQLITE_NULL)
		floor = (uint64_t)sqlite3_column_int64(s->rt_floor, 1) + 1;
	sqlite3_reset(s->rt_floor);
	if (since < floor - 1)
		return xp_errf(err, XP_ENOENT,
			       "%s: records after seq %" PRIu64
			       " were pruned (the oldest kept is %" PRIu64 ")",
			       s->path, since, floor);

	if (limit > INT64_MAX)
		limit = INT64_MAX;
	sqlite3_bind_int64(s->rt_read, 1, (sqlite3_int64)since);
	sqlite3_bind_int64(s->rt_read, 2, (sqlite3_int64)limit);
	while ((rc = sqlite3_step(s->rt_read)) == SQLITE_ROW) {
		struct xp_store_rec r;
		if ((rc = row_rec(s, s->rt_read, &r, err)) < 0)
			return rc;
		err_clear(err);
		rc = rec(ctx, &r);
		if (rc < 0)
			return cb_fail(s, rc, r.seq, r.type, err);
		n++;
	}
	if (rc != SQLITE_DONE)
		return sql_fail(s, rc, "reading the journal", err);
	return n;
}

long xp_store_read(struct xp_store *s, uint64_t since, size_t limit, xp_store_rec_fn rec, void *ctx,
		   struct xp_err *err)
{
	if (limit == 0)
		return 0;
	if (s->etcd)
		return xp_store_etcd_read(s, since, limit, rec, ctx, err);
	pthread_mutex_lock(&s->rmu);
	long n = read_locked(s, since, limit, rec, ctx, err);
	end_read(s);
	pthread_mutex_unlock(&s->rmu);
	return n;
}
