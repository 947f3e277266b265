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
 *   4. the tables journal and snapshot with their columns;
 *   5. the journal, in storage order, is seq 1, 2, 3, ... with no gap and
 *      nothing out of order, starting at 1 unless a snapshot covers what
 *      came before, and resuming no later than just after the newest
 *      snapshot. seq is the rowid, so storage order is seq order in a file
 *      this code wrote; the scan still checks it rather than assume it.
 *
 * Nothing is repaired: a refused store is for a person to look at.
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

static int check_tables(sqlite3 *db, const char *path, struct xp_err *err)
{
	static const char *const probes[][2] = {
		{ "journal", "SELECT seq, at, type, body FROM journal LIMIT 0" },
		{ "snapshot", "SELECT seq, at, body FROM snapshot LIMIT 0" },
	};
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
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

static int check_snapshots(sqlite3 *db, const char *path, struct xp_store_info *info,
			   struct xp_err *err)
{
	sqlite3_stmt *st;
	int rc = prep(db, path, "damaged", "SELECT min(seq), max(seq), count(*) FROM snapshot", &st,
		      err);
	if (rc < 0)
		return rc;
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		rc = xp_errf(err, xp_store_code(rc), "%s: damaged: %s", path, sqlite3_errmsg(db));
	} else {
		info->snap_count = (uint64_t)sqlite3_column_int64(st, 2);
		info->snap_min = (uint64_t)sqlite3_column_int64(st, 0);
		info->snap_max = (uint64_t)sqlite3_column_int64(st, 1);
		if (info->snap_count && sqlite3_column_int64(st, 0) < 0)
			rc = xp_errf(err, XP_ECORRUPT, "%s: damaged: snapshot with seq %lld", path,
				     (long long)sqlite3_column_int64(st, 0));
		else
			rc = 0;
	}
	sqlite3_finalize(st);
	return rc;
}

static int check_journal(sqlite3 *db, const char *path, struct xp_store_info *info,
			 struct xp_err *err)
{
	sqlite3_stmt *st;
	long long prev = 0, first = 0;
	uint64_t n = 0;
	int rc = prep(db, path, "damaged", "SELECT seq FROM journal", &st, err);
	if (rc < 0)
		return rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		long long seq = sqlite3_column_int64(st, 0);
		if (n == 0) {
			first = seq;
			if (seq < 1) {
				rc = xp_errf(err, XP_ECORRUPT, "%s: damaged: journal has seq %lld",
					     path, seq);
				break;
			}
		} else if (seq <= prev) {
			rc = xp_errf(err, XP_ECORRUPT,
				     "%s: damaged: journal seq %lld follows %lld (not increasing)",
				     path, seq, prev);
			break;
		} else if (seq != prev + 1) {
			rc = xp_errf(err, XP_ECORRUPT,
				     "%s: damaged: journal has a gap: seq %lld follows %lld", path,
				     seq, prev);
			break;
		}
		prev = seq;
		n++;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW && rc >= 0)
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

int xp_store_check(const char *path, struct xp_store_info *info, struct xp_err *err)
{
	sqlite3 *db = NULL;
	int rc;

	memset(info, 0, sizeof(*info));
	rc = check_magic(path, err);
	if (rc < 0)
		return rc;
	rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		rc = xp_errf(err, xp_store_code(rc), "%s: cannot open: %s", path,
			     db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		sqlite3_close(db);
		return rc;
	}
	sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)NULL);
	sqlite3_busy_timeout(db, 10000);
	rc = check_meta(db, path, info, err);
	if (rc == 0)
		rc = check_quick(db, path, err);
	if (rc == 0)
		rc = check_tables(db, path, err);
	if (rc == 0)
		rc = check_snapshots(db, path, info, err);
	if (rc == 0)
		rc = check_journal(db, path, info, err);
	sqlite3_close(db);
	return rc;
}
