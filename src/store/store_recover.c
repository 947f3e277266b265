/*
 * store_recover: the row checksums, the migration of a format 1 store, and
 * what recover drops from a damaged one (see docs/design/store.md).
 *
 * Checksums. A record's CRC-32C covers seq and at (8 bytes each,
 * little-endian), the type's length (4 bytes, little-endian), the type and
 * the body; a snapshot's covers seq, at and the body. The length keeps
 * "ab"+"c" and "a"+"bc" apart; seq and at bind the bytes to their row, so a
 * record copied onto another seq fails. The same functions serve the store
 * thread (writing), the check and load (reading) and SQL (migration,
 * recovery), registered as xp_rec_crc() and xp_snap_crc().
 *
 * Migration (format 1 -> 2). The seal is written first, at the store's last
 * seq: it holds of the old file as much as of the new one, so a crash
 * before the migration commits leaves a format 1 store that opens (and
 * migrates) again, and one after it a format 2 store that is sealed. Then,
 * in one transaction: journal and snapshot are copied into new tables with
 * a crc column computed from their rows, the old tables dropped, the new
 * ones renamed, meta's format set to 2. The checksums vouch for the rows as
 * they were when migrated: the file first passed every format 1 check.
 *
 * Recovery. The check (store_check.c) collects, for every point replay
 * could start from - a snapshot that passes its checksum, or the empty
 * state when the journal reaches back to seq 1 - where its run of good
 * records ends (the first damaged or missing seq after it) and the last
 * damage at or below it. The plan picks the point whose run reaches
 * furthest (the newer one on a tie) and keeps that run: it drops every
 * later record, every snapshot that fails its checksum or lies beyond the
 * run, and, if a record at or below the point is damaged, the journal up to
 * that record (history replay does not need, kept only for event-stream
 * resume). What the journal lost before this start (the seal ahead of it)
 * is reported with the dropped range. One transaction, then a new seal.
 */
#include "store_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/crc32c.h"
#include "lib/strbuf.h"

static void put_le(unsigned char *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		b[i] = (unsigned char)(v >> (8 * i));
}

uint32_t xp_store_rec_crc_n(uint64_t seq, int64_t at, const char *type, size_t tl, const void *body,
			    size_t len)
{
	unsigned char h[20];
	put_le(h, seq, 8);
	put_le(h + 8, (uint64_t)at, 8);
	put_le(h + 16, (uint64_t)tl, 4);
	uint32_t c = xp_crc32c(0, h, sizeof(h));
	c = xp_crc32c(c, type, tl);
	return xp_crc32c(c, body, len);
}

uint32_t xp_store_rec_crc(uint64_t seq, int64_t at, const char *type, const void *body, size_t len)
{
	return xp_store_rec_crc_n(seq, at, type, strlen(type), body, len);
}

uint32_t xp_store_snap_crc(uint64_t seq, int64_t at, const void *body, size_t len)
{
	unsigned char h[16];
	put_le(h, seq, 8);
	put_le(h + 8, (uint64_t)at, 8);
	return xp_crc32c(xp_crc32c(0, h, sizeof(h)), body, len);
}

static void sql_rec_crc(sqlite3_context *cx, int argc, sqlite3_value **v)
{
	(void)argc;
	const char *type = (const char *)sqlite3_value_text(v[2]);
	size_t tl = (size_t)sqlite3_value_bytes(v[2]);
	const char *body = (const char *)sqlite3_value_text(v[3]);
	size_t bl = (size_t)sqlite3_value_bytes(v[3]);
	sqlite3_result_int64(cx,
			     xp_store_rec_crc_n((uint64_t)sqlite3_value_int64(v[0]),
						sqlite3_value_int64(v[1]), type ? type : "",
						type ? tl : 0, body ? body : "", body ? bl : 0));
}

static void sql_snap_crc(sqlite3_context *cx, int argc, sqlite3_value **v)
{
	(void)argc;
	const void *body = sqlite3_value_blob(v[2]);
	size_t bl = (size_t)sqlite3_value_bytes(v[2]);
	sqlite3_result_int64(cx, xp_store_snap_crc((uint64_t)sqlite3_value_int64(v[0]),
						   sqlite3_value_int64(v[1]), body ? body : "",
						   body ? bl : 0));
}

int xp_store_sql_crc(sqlite3 *db)
{
	int f = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
	int rc = sqlite3_create_function(db, "xp_rec_crc", 4, f, NULL, sql_rec_crc, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_create_function(db, "xp_snap_crc", 3, f, NULL, sql_snap_crc, NULL,
					     NULL);
	return rc;
}

/* ---- the plan ---- */

const char *xp_store_range(char buf[48], uint64_t a, uint64_t b)
{
	if (a == b)
		snprintf(buf, 48, "seq %" PRIu64, a);
	else
		snprintf(buf, 48, "seq %" PRIu64 "..%" PRIu64, a, b);
	return buf;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Can replay start from b: the journal resumes right after it (or is empty and b is a
 * snapshot)? */
static int base_usable(const struct xp_store_info *info, const struct xp_store_base *b)
{
	if (info->journal_count)
		return info->journal_min <= b->seq + 1;
	return b->seq > 0 || !info->snap_count;
}

static void summarise(const struct xp_store_info *info, const struct xp_store_plan *p, char *sum,
		      size_t sumsz)
{
	struct xp_sb sb;
	const char *sep = "";
	char r[48];
	xp_sb_init(&sb);
	if (p->lost_to > p->keep_to) {
		xp_sb_puts(&sb, xp_store_range(r, p->keep_to + 1, p->lost_to));
		sep = ", ";
	}
	if (p->below) {
		xp_sb_printf(&sb, "%sthe history up to seq %" PRIu64, sep, p->below);
		sep = ", ";
	}
	if (info->bad_snaps) {
		xp_sb_printf(&sb, "%s%" PRIu64 " damaged snapshot%s", sep, info->bad_snaps,
			     info->bad_snaps > 1 ? "s" : "");
		sep = ", ";
	}
	if (*sep)
		snprintf(sum, sumsz, "--recover starts without %s", sb.s);
	else
		snprintf(sum, sumsz, "--recover writes a new seal at seq %" PRIu64, p->keep_to);
	xp_sb_free(&sb);
}

void xp_store_plan(const struct xp_store_info *info, struct xp_store_plan *p, char *sum,
		   size_t sumsz)
{
	const struct xp_store_base *best = NULL;
	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < info->nbase; i++) {
		const struct xp_store_base *b = &info->base[i];
		if (!base_usable(info, b))
			continue;
		uint64_t end = b->brk_after ? b->brk_after - 1 : max64(info->journal_max, b->seq);
		end = max64(end, b->seq);
		if (!best || end > p->keep_to || (end == p->keep_to && b->seq > best->seq)) {
			best = b;
			p->keep_to = end;
		}
	}
	if (!best) {
		snprintf(sum, sumsz,
			 "--recover cannot help: no snapshot passes its checksum and the journal "
			 "does not reach back to seq 1 (restore a backup)");
		snprintf(p->why, sizeof(p->why), "nothing to start from");
		return;
	}
	p->ok = 1;
	p->base = best->seq;
	p->below = best->brk_below;
	snprintf(p->why_below, sizeof(p->why_below), "%s", best->why_below);
	p->lost_to = max64(max64(info->journal_max, info->snap_max),
			   info->seal.found ? info->seal.seq : 0);
	if (best->brk_after && best->brk_after == p->keep_to + 1)
		snprintf(p->why, sizeof(p->why), "%s", best->why_after);
	else if (info->seal.found && info->seal.seq > p->keep_to)
		snprintf(p->why, sizeof(p->why), "%s", info->seal_why);
	else
		snprintf(p->why, sizeof(p->why), "a damaged snapshot beyond the journal");
	summarise(info, p, sum, sumsz);
}

/* ---- carrying it out ---- */

static int open_rw(struct xp_store *s, sqlite3 **db, struct xp_err *err)
{
	int rc = sqlite3_open_v2(s->path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, s->vfs);
	if (rc == SQLITE_OK)
		rc = xp_store_sql_crc(*db);
	if (rc != SQLITE_OK) {
		rc = xp_errf(err, xp_store_code(rc), "%s: cannot open: %s", s->path,
			     *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	sqlite3_busy_timeout(*db, 10000);
	return xp_store_exec(*db, s->path,
			     s->sync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF", err);
}

/* The checksum of record seq as stored (0 when it is not in the journal). */
static uint32_t stored_crc(sqlite3 *db, uint64_t seq)
{
	sqlite3_stmt *st;
	uint32_t crc = 0;
	if (sqlite3_prepare_v2(db, "SELECT crc FROM journal WHERE seq = ?1", -1, &st, NULL) !=
	    SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)seq);
	if (sqlite3_step(st) == SQLITE_ROW)
		crc = (uint32_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return crc;
}

/* Seal seq (its record's checksum read from db, or computed for format 1) and fsync DIR. */
static int seal_at(struct xp_store *s, sqlite3 *db, uint64_t seq, int format1, struct xp_err *err)
{
	uint32_t rec = 0;
	if (format1) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(db,
				       "SELECT xp_rec_crc(seq, at, type, body) FROM journal WHERE "
				       "seq = ?1",
				       -1, &st, NULL) == SQLITE_OK) {
			sqlite3_bind_int64(st, 1, (sqlite3_int64)seq);
			if (sqlite3_step(st) == SQLITE_ROW)
				rec = (uint32_t)sqlite3_column_int64(st, 0);
			sqlite3_finalize(st);
		}
	} else {
		rec = stored_crc(db, seq);
	}
	int rc = xp_seal_create(s->seal_path, seq, rec, s->sync, err);
	if (rc == 0 && s->sync)
		rc = xp_store_fsync(s->dir, 1, err);
	return rc;
}

static const char migrate_sql[] =
	"BEGIN IMMEDIATE;\n"
	"CREATE TABLE journal_v2(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, type TEXT NOT NULL, "
	"body TEXT NOT NULL, crc INTEGER NOT NULL);\n"
	"INSERT INTO journal_v2 SELECT seq, at, type, body, xp_rec_crc(seq, at, type, body) "
	"FROM journal ORDER BY seq;\n"
	"DROP TABLE journal;\n"
	"ALTER TABLE journal_v2 RENAME TO journal;\n"
	"CREATE TABLE snapshot_v2(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, body BLOB NOT "
	"NULL, "
	"crc INTEGER NOT NULL);\n"
	"INSERT INTO snapshot_v2 SELECT seq, coalesce(at, 0), body, "
	"xp_snap_crc(seq, coalesce(at, 0), body) FROM snapshot ORDER BY seq;\n"
	"DROP TABLE snapshot;\n"
	"ALTER TABLE snapshot_v2 RENAME TO snapshot;\n"
	"UPDATE meta SET value = '2' WHERE key = 'format';\n"
	"INSERT OR REPLACE INTO meta(key, value) VALUES ('migrated', 'from format 1');\n"
	"COMMIT;\n";

int xp_store_migrate(struct xp_store *s, const struct xp_store_info *info, struct xp_err *err)
{
	sqlite3 *db = NULL;
	int rc = open_rw(s, &db, err);
	if (rc == 0)
		rc = seal_at(s, db, max64(info->journal_max, info->snap_max), 1, err);
	if (rc == 0 && (rc = xp_store_exec(db, s->path, migrate_sql, err)) < 0) {
		if (!sqlite3_get_autocommit(db))
			sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
		xp_err_prefix(err, "migrating format 1 to 2: ");
	}
	sqlite3_close(db);
	return rc;
}

/* Run sql with ?1 = v; the rows it changed, or < 0. */
static long run1(sqlite3 *db, const char *path, const char *sql, uint64_t v, struct xp_err *err)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)v);
		rc = sqlite3_step(st);
		sqlite3_finalize(st);
	}
	if (rc != SQLITE_DONE && rc != SQLITE_OK)
		return xp_errf(err, xp_store_code(rc) < 0 ? xp_store_code(rc) : XP_EIO,
			       "%s: %s: %s", path, sql, sqlite3_errmsg(db));
	return sqlite3_changes(db);
}

/* The deletions of plan p in one transaction; the rows dropped into n[3]: snapshots,
 * records after keep_to, records at or below below. */
static int drop_rows(struct xp_store *s, sqlite3 *db, const struct xp_store_plan *p, long n[3],
		     struct xp_err *err)
{
	int rc = xp_store_exec(db, s->path, "BEGIN IMMEDIATE", err);
	if (rc == 0)
		n[0] = run1(db, s->path,
			    "DELETE FROM snapshot WHERE crc IS NOT xp_snap_crc(seq, at, body) OR "
			    "seq > ?1",
			    p->keep_to, err);
	if (rc == 0 && n[0] >= 0)
		n[1] = run1(db, s->path, "DELETE FROM journal WHERE seq > ?1", p->keep_to, err);
	if (rc == 0 && n[0] >= 0 && n[1] >= 0 && p->below)
		n[2] = run1(db, s->path, "DELETE FROM journal WHERE seq <= ?1", p->below, err);
	if (rc == 0 && (n[0] < 0 || n[1] < 0 || n[2] < 0))
		rc = err ? err->code : XP_EIO;
	if (rc == 0)
		rc = xp_store_exec(db, s->path, "COMMIT", err);
	if (rc < 0 && !sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

static char *report(const struct xp_store *s, const struct xp_store_info *info,
		    const struct xp_store_plan *p, const long n[3])
{
	struct xp_sb sb;
	char r[48];
	xp_sb_init(&sb);
	if (p->lost_to > p->keep_to)
		xp_sb_printf(&sb, "dropping %s: %s\n",
			     xp_store_range(r, p->keep_to + 1, p->lost_to), p->why);
	if (p->below)
		xp_sb_printf(&sb,
			     "dropping %s (%ld records of history at or below the snapshot at seq "
			     "%" PRIu64 ", not needed to replay): %s\n",
			     xp_store_range(r, info->journal_min, p->below), n[2], p->base,
			     p->why_below);
	for (uint64_t i = 0; i < info->bad_snaps && i < 4; i++)
		xp_sb_printf(&sb,
			     "dropping the snapshot at seq %" PRIu64 ": it fails its checksum\n",
			     info->bad_snap[i]);
	if (info->bad_snaps > 4 || n[0] > (long)info->bad_snaps)
		xp_sb_printf(&sb, "dropping %ld snapshots in all\n", n[0]);
	if (!info->seal.found)
		xp_sb_printf(&sb, "%s was %s: writing a new one at seq %" PRIu64 "\n", s->seal_path,
			     info->seal_why, p->keep_to);
	if (!sb.len)
		xp_sb_printf(&sb, "nothing to drop: %s passes every check\n", s->path);
	sb.s[sb.len - 1] = '\0'; /* no newline after the last line */
	return xp_sb_steal(&sb);
}

int xp_store_repair(struct xp_store *s, const struct xp_store_info *info, struct xp_err *err)
{
	struct xp_store_plan p;
	char sum[300];
	long n[3] = { 0, 0, 0 };
	sqlite3 *db = NULL;
	int rc;

	if (!info->damaged) {
		p = (struct xp_store_plan){ .ok = 1 };
		free(s->recovered);
		s->recovered = report(s, info, &p, n);
		return 0;
	}
	xp_store_plan(info, &p, sum, sizeof(sum));
	if (!p.ok)
		return xp_errf(err, XP_ECORRUPT, "%s; %s", info->first, sum);
	rc = open_rw(s, &db, err);
	if (rc == 0)
		rc = drop_rows(s, db, &p, n, err);
	if (rc == 0)
		rc = seal_at(s, db, p.keep_to, 0, err);
	sqlite3_close(db);
	if (rc == 0) {
		free(s->recovered);
		s->recovered = report(s, info, &p, n);
	}
	return rc;
}
