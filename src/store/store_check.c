/*
 * store_check: decide whether an existing DIR/xpool.db may be opened.
 *
 * The checks run on a read-only connection that never checkpoints on close,
 * so a file that is refused is left byte for byte as it was (SQLite may
 * create the -wal and -shm side files next to it, never the file itself).
 * In order, each failing with a message naming the file:
 *
 *   1. the first 16 bytes are SQLite's magic (an empty or foreign file is
 *      "not an xpool store");
 *   2. a meta table with an integer format in 1..XP_STORE_FORMAT (a newer
 *      one is "written by a newer xpool: format N, this build reads up to
 *      M"; no meta table is "not an xpool store"). This comes before the
 *      integrity check so that a newer store is named as such even if it
 *      uses something this build's SQLite cannot check;
 *   3. PRAGMA quick_check says "ok" (a truncated or damaged file fails);
 *   4. the tables journal and snapshot with their columns (crc from
 *      format 2 on);
 *   5. every snapshot's checksum (format 2);
 *   6. the journal, in storage order, is seq 1, 2, 3, ... with no gap and
 *      nothing out of order, starting at 1 unless a snapshot covers what
 *      came before, and resuming no later than just after the newest
 *      snapshot; every record passes its checksum, and the record the seal
 *      names is the one it sealed (format 2). seq is the rowid, so storage
 *      order is seq order in a file this code wrote; the scan still checks
 *      it rather than assume it;
 *   7. DIR/xpool.seal is there, has a valid slot, and its seq is not beyond
 *      the journal's (and the snapshots') last (format 2).
 *
 * Nothing is repaired here. A checksum that fails, a gap in the middle of
 * the journal and a seal problem are damage recover can mend: they are
 * collected (the first one's text, and for every possible starting point -
 * a good snapshot or the empty state - where its run of good records ends
 * and the last damage below it), so that a refusal can end with what
 * recover would drop, and recover (store_recover.c) can plan from them.
 * Every other problem is refused at once, with or without recover.
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int xp_store_code(int sqlite_rc)
{
	switch (sqlite_rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return XP_ECORRUPT;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return XP_EUNAVAIL;
	case SQLITE_TOOBIG:
		return XP_ETOOBIG;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return XP_EPERM;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISUSE:
	case SQLITE_ERROR:
		return XP_EINTERNAL;
	default:
		return XP_EIO;
	}
}

/* Step 1: read the header ourselves, so a foreign file gets a plain answer. */
static int check_magic(const char *path, struct xp_err *err)
{
	static const char magic[16] = "SQLite format 3";
	char buf[16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return xp_errf(err, -errno, "%s: %s", path, strerror(errno));
	ssize_t n = read(fd, buf, sizeof(buf));
	int e = errno;
	close(fd);
	if (n < 0)
		return xp_errf(err, -e, "%s: %s", path, strerror(e));
	if (n == 0)
		return xp_errf(err, XP_ECORRUPT, "%s: not an xpool store (empty file)", path);
	if (n < (ssize_t)sizeof(buf) || memcmp(buf, magic, sizeof(buf)) != 0)
		return xp_errf(err, XP_ECORRUPT, "%s: not an xpool store (not an SQLite database)",
			       path);
	return 0;
}

/* Prepare sql on db, or fill err with "path: what: SQLite's message". */
static int prep(sqlite3 *db, const char *path, const char *what, const char *sql, sqlite3_stmt **st,
		struct xp_err *err)
{
	int rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);
	if (rc != SQLITE_OK) {
		int code = xp_store_code(rc);
		return xp_errf(err, code == XP_EINTERNAL ? XP_ECORRUPT : code, "%s: %s: %s", path,
			       what, sqlite3_errmsg(db));
	}
	return 0;
}

static int table_exists(sqlite3 *db, const char *path, const char *name, int *yes,
			struct xp_err *err)
{
	sqlite3_stmt *st;
	int rc = prep(db, path, "damaged",
		      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", &st,
		      err);
	if (rc < 0)
		return rc;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*yes = sqlite3_column_int(st, 0) > 0;
	else
		rc = xp_errf(err, xp_store_code(rc), "%s: damaged: %s", path, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc < 0 ? rc : 0;
}

/* quick_check answers "ok" or rows of problems, the first a "*** in database main ***"
 * header; the message keeps the first two problems. */
static int check_quick(sqlite3 *db, const char *path, struct xp_err *err)
{
	sqlite3_stmt *st;
	char what[256] = "";
	size_t used = 0;
	int rows = 0, problems = 0;
	int rc = prep(db, path, "damaged (quick_check)", "PRAGMA quick_check(8)", &st, err);
	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		rows++;
		if (!v || (rows == 1 && strcmp(v, "ok") == 0))
			continue;
		if (strncmp(v, "***", 3) == 0 || problems++ >= 2)
			continue;
		int n = snprintf(what + used, sizeof(what) - used, "%s%s", used ? "; " : "", v);
		if (n > 0)
			used = used + (size_t)n < sizeof(what) ? used + (size_t)n
							       : sizeof(what) - 1;
	}
	if (rc != SQLITE_DONE)
		rc = xp_errf(err, XP_ECORRUPT, "%s: damaged (quick_check): %s%s%s", path, what,
			     used ? "; " : "", sqlite3_errmsg(db));
	else if (problems || rows != 1)
		rc = xp_errf(err, XP_ECORRUPT, "%s: damaged (quick_check): %s", path,
			     used ? what : "no answer");
	else
		rc = 0;
	sqlite3_finalize(st);
	return rc;
}

static int check_meta(sqlite3 *db, const char *path, struct xp_store_info *info, struct xp_err *err)
{
	sqlite3_stmt *st;
	int yes = 0, rc = table_exists(db, path, "meta", &yes, err);
	if (rc < 0)
		return rc;
	if (!yes)
		return xp_errf(err, XP_ECORRUPT, "%s: not an xpool store (no meta table)", path);
	rc = prep(db, path, "not an xpool store (meta)",
		  "SELECT value FROM meta WHERE key = 'format'", &st, err);
	if (rc < 0)
		return rc;
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		rc = xp_errf(err, XP_ECORRUPT, "%s: not an xpool store (meta has no format)", path);
	} else if (rc != SQLITE_ROW) {
		rc = xp_errf(err, XP_ECORRUPT, "%s: damaged: %s", path, sqlite3_errmsg(db));
	} else {
		const char *v = (const char *)sqlite3_column_text(st, 0);
		char *end = NULL;
		long long f;
		errno = 0;
		f = v ? strtoll(v, &end, 10) : 0;
		if (!v || !*v || *end || errno || f < 1)
			rc = xp_errf(err, XP_ECORRUPT, "%s: damaged: meta format is '%s'", path,
				     v ? v : "NULL");
		else if (f > XP_STORE_FORMAT)
			rc = xp_errf(err, XP_EVERSION,
				     "%s: written by a newer xpool: format %lld, this build reads "
				     "up to %d",
				     path, f, XP_STORE_FORMAT);
		else
			rc = 0;
		info->format = f;
	}
	sqlite3_finalize(st);
	return rc;
}

static int check_tables(sqlite3 *db, const char *path, long long format, struct xp_err *err)
{
	static const char *const probes[][2] = {
		{ "journal", "SELECT seq, at, type, body FROM journal LIMIT 0" },
		{ "snapshot", "SELECT seq, at, body FROM snapshot LIMIT 0" },
		{ "journal", "SELECT crc FROM journal LIMIT 0" },
		{ "snapshot", "SELECT crc FROM snapshot LIMIT 0" },
	};
	for (size_t i = 0; i < (format >= 2 ? 4 : 2); i++) {
		sqlite3_stmt *st;
		int yes = 0, rc = table_exists(db, path, probes[i][0], &yes, err);
		if (rc < 0)
			return rc;
		if (!yes)
			return xp_errf(err, XP_ECORRUPT, "%s: damaged: table %s is missing", path,
				       probes[i][0]);
		rc = prep(db, path, "damaged", probes[i][1], &st, err);
		if (rc < 0)
			return rc;
		sqlite3_finalize(st);
	}
	return 0;
}

/* A problem recover can mend: the first one's text is kept for the refusal. */
static void problem(struct xp_store_info *info, const char *path, const char *why)
{
	if (!info->damaged++ && snprintf(info->first, sizeof(info->first), "%s: %s", path, why) < 0)
		info->first[0] = '\0';
}

/* Record seq is damaged or missing: every base learns where its run of good records ends. */
static void record_break(struct xp_store_info *info, const char *path, uint64_t seq,
			 const char *why)
{
	for (size_t i = 0; i < info->nbase; i++) {
		struct xp_store_base *b = &info->base[i];
		if (seq > b->seq && !b->brk_after) {
			b->brk_after = seq;
			snprintf(b->why_after, sizeof(b->why_after), "%s", why);
		} else if (seq <= b->seq) {
			b->brk_below = seq;
			snprintf(b->why_below, sizeof(b->why_below), "%s", why);
		}
	}
	problem(info, path, why);
}

/* Does the snapshot row (seq, at, body, crc) pass its checksum? If not, why says so. */
static int snap_crc_ok(sqlite3_stmt *st, long long seq, char why[200])
{
	const void *b = sqlite3_column_blob(st, 2);
	size_t n = (size_t)sqlite3_column_bytes(st, 2);
	uint32_t want = xp_store_snap_crc((uint64_t)seq, sqlite3_column_int64(st, 1), b ? b : "",
					  b ? n : 0);
	long long have = sqlite3_column_int64(st, 3);
	if (sqlite3_column_type(st, 3) == SQLITE_INTEGER && have == (long long)want)
		return 1;
	snprintf(why, 200,
		 "the snapshot at seq %lld fails its checksum (stored %08llx, computed %08" PRIx32
		 ")",
		 seq, (unsigned long long)have & 0xffffffffULL, want);
	return 0;
}

/* Snapshots, newest first: counts, range, checksums; the good ones become bases. */
static int check_snapshots(sqlite3 *db, const char *path, struct xp_store_info *info,
			   struct xp_err *err)
{
	sqlite3_stmt *st;
	int rc = prep(db, path, "damaged",
		      info->format >= 2
			      ? "SELECT seq, at, body, crc FROM snapshot ORDER BY seq DESC"
			      : "SELECT seq, at, body, NULL FROM snapshot ORDER BY seq DESC",
		      &st, err);
	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		long long seq = sqlite3_column_int64(st, 0);
		if (seq < 0) {
			rc = xp_errf(err, XP_ECORRUPT, "%s: damaged: snapshot with seq %lld", path,
				     seq);
			break;
		}
		if (!info->snap_count++)
			info->snap_max = (uint64_t)seq;
		info->snap_min = (uint64_t)seq;
		char why[200];
		if (info->format >= 2 && !snap_crc_ok(st, seq, why)) {
			if (info->bad_snaps < 4)
				info->bad_snap[info->bad_snaps] = (uint64_t)seq;
			info->bad_snaps++;
			problem(info, path, why);
			continue;
		}
		if (info->nbase < XP_STORE_BASES - 1)
			info->base[info->nbase++].seq = (uint64_t)seq;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW && rc >= 0)
		rc = xp_errf(err, XP_ECORRUPT, "%s: damaged: %s", path, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	info->base[info->nbase++].seq = 0; /* the empty state */
	return rc < 0 ? rc : 0;
}

/* One journal row in storage order after prev (0: the first): order, gaps, checksum, seal. */
static int check_row(sqlite3_stmt *st, const char *path, struct xp_store_info *info, long long prev,
		     struct xp_err *err)
{
	char why[200];
	long long seq = sqlite3_column_int64(st, 0);
	if (prev == 0 && seq < 1)
		return xp_errf(err, XP_ECORRUPT, "%s: damaged: journal has seq %lld", path, seq);
	if (prev && seq <= prev)
		return xp_errf(err, XP_ECORRUPT,
			       "%s: damaged: journal seq %lld follows %lld (not increasing)", path,
			       seq, prev);
	if (prev && seq != prev + 1) {
		snprintf(why, sizeof(why), "damaged: journal has a gap: seq %lld follows %lld", seq,
			 prev);
		record_break(info, path, (uint64_t)prev + 1, why);
	}
	if (info->format < 2)
		return 0;
	const char *type = (const char *)sqlite3_column_text(st, 2);
	size_t tl = (size_t)sqlite3_column_bytes(st, 2);
	const char *body = (const char *)sqlite3_column_text(st, 3);
	size_t bl = (size_t)sqlite3_column_bytes(st, 3);
	uint32_t want =
		xp_store_rec_crc_n((uint64_t)seq, sqlite3_column_int64(st, 1), type ? type : "",
				   type ? tl : 0, body ? body : "", body ? bl : 0);
	long long have = sqlite3_column_int64(st, 4);
	if (sqlite3_column_type(st, 4) != SQLITE_INTEGER || have != (long long)want) {
		snprintf(
			why, sizeof(why),
			"record %lld (%.40s) fails its checksum (stored %08llx, computed %08" PRIx32
			")",
			seq, type ? type : "", (unsigned long long)have & 0xffffffffULL, want);
		record_break(info, path, (uint64_t)seq, why);
	} else if (info->seal.found && (uint64_t)seq == info->seal.seq &&
		   (uint32_t)have != info->seal.rec) {
		snprintf(why, sizeof(why),
			 "record %lld (%.40s) is not the one committed: its checksum is %08llx, "
			 "%s says %08" PRIx32,
			 seq, type ? type : "", (unsigned long long)have, XP_STORE_SEAL,
			 info->seal.rec);
		record_break(info, path, (uint64_t)seq, why);
	}
	return 0;
}

static int check_journal(sqlite3 *db, const char *path, struct xp_store_info *info,
			 struct xp_err *err)
{
	sqlite3_stmt *st;
	long long prev = 0, first = 0;
	uint64_t n = 0;
	int rc = prep(db, path, "damaged",
		      info->format >= 2 ? "SELECT seq, at, type, body, crc FROM journal"
					: "SELECT seq, at, type, body, NULL FROM journal",
		      &st, err);
	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if ((rc = check_row(st, path, info, prev, err)) < 0)
			break;
		prev = sqlite3_column_int64(st, 0);
		if (!n++)
			first = prev;
	}
	if (rc != SQLITE_DONE && rc >= 0)
		rc = xp_errf(err, XP_ECORRUPT, "%s: damaged: %s", path, sqlite3_errmsg(db));
	sqlite3_finalize(st);
	if (rc < 0)
		return rc;
	info->journal_count = n;
	info->journal_min = (uint64_t)first;
	info->journal_max = (uint64_t)prev;
	if (!n)
		return 0;
	if (!info->snap_count && first != 1)
		return xp_errf(err, XP_ECORRUPT,
			       "%s: damaged: journal has a gap: it starts at seq %lld and no "
			       "snapshot covers what came before",
			       path, first);
	if (info->snap_count && info->journal_max > info->snap_max &&
	    info->journal_min > info->snap_max + 1)
		return xp_errf(
			err, XP_ECORRUPT,
			"%s: damaged: journal has a gap: the newest snapshot is at seq %" PRIu64
			" but the journal resumes at seq %lld",
			path, info->snap_max, first);
	return 0;
}

/* Read the seal before the journal scan (which compares the sealed record). */
static int read_seal(const char *seal_path, struct xp_store_info *info, struct xp_err *err)
{
	struct xp_err e = { 0 };
	int rc = xp_seal_read(seal_path, &info->seal, &e);
	if (rc == XP_ENOENT)
		snprintf(info->seal_why, sizeof(info->seal_why),
			 "missing, so the last committed seq cannot be checked (a store copied "
			 "without it?)");
	else if (rc == XP_ECORRUPT)
		snprintf(info->seal_why, sizeof(info->seal_why), "%s",
			 e.text + strlen(seal_path) + 2);
	else if (rc < 0)
		return xp_errf(err, rc, "%s", e.text);
	return 0;
}

/* After the scans: the seal must be there and not beyond what the store holds. */
static void check_seal(const char *path, const char *seal_path, struct xp_store_info *info)
{
	uint64_t last = info->journal_max > info->snap_max ? info->journal_max : info->snap_max;
	if (!info->seal.found) {
		problem(info, seal_path, info->seal_why);
		return;
	}
	if (info->seal.seq <= last)
		return;
	snprintf(info->seal_why, sizeof(info->seal_why),
		 "the journal ends at seq %" PRIu64 " but %s says seq %" PRIu64
		 " was committed (a damaged or truncated write-ahead log?)",
		 last, XP_STORE_SEAL, info->seal.seq);
	char why[XP_ERR_TEXT_MAX], r[48];
	snprintf(why, sizeof(why), "%s %s missing: %s", xp_store_range(r, last + 1, info->seal.seq),
		 last + 1 == info->seal.seq ? "is" : "are", info->seal_why);
	problem(info, path, why);
}

static int open_ro(const char *path, const char *vfs, sqlite3 **db, struct xp_err *err)
{
	int rc = sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, vfs);
	if (rc != SQLITE_OK) {
		rc = xp_errf(err, xp_store_code(rc), "%s: cannot open: %s", path,
			     *db ? sqlite3_errmsg(*db) : sqlite3_errstr(rc));
		sqlite3_close(*db);
		*db = NULL;
		return rc;
	}
	sqlite3_db_config(*db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	sqlite3_busy_timeout(*db, 10000);
	return 0;
}

int xp_store_check(const char *path, const char *seal_path, const char *vfs, int collect,
		   struct xp_store_info *info, struct xp_err *err)
{
	sqlite3 *db = NULL;
	int rc;

	memset(info, 0, sizeof(*info));
	if ((rc = check_magic(path, err)) < 0 || (rc = open_ro(path, vfs, &db, err)) < 0)
		return rc;
	rc = check_meta(db, path, info, err);
	if (rc == 0)
		rc = check_quick(db, path, err);
	if (rc == 0)
		rc = check_tables(db, path, info->format, err);
	if (rc == 0 && info->format >= 2 && seal_path)
		rc = read_seal(seal_path, info, err);
	if (rc == 0)
		rc = check_snapshots(db, path, info, err);
	if (rc == 0)
		rc = check_journal(db, path, info, err);
	sqlite3_close(db);
	if (rc == 0 && info->format >= 2 && seal_path)
		check_seal(path, seal_path, info);
	if (rc < 0 || !info->damaged || collect)
		return rc;
	struct xp_store_plan plan;
	char sum[300];
	xp_store_plan(info, &plan, sum, sizeof(sum));
	return xp_errf(err, XP_ECORRUPT, "%s; %s", info->first, sum);
}
