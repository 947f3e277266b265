/*
 * store: open and close the durable journal (see store.h; the design is in
 * docs/design/store.md).
 *
 * Opening, in order:
 *   1. create DIR (and missing parents) with mode 0700;
 *   2. take an exclusive, non-blocking flock on DIR/xpool.lock and hold it
 *      until close: two controllers appending to one journal would hand out
 *      the same seqs, so the second is refused;
 *   3. a new store is built as DIR/xpool.db.new (schema, meta, WAL mode),
 *      fsynced; the seal (DIR/xpool.seal, seq 0) is written; the file is
 *      renamed into place and the directory fsynced: a crash during
 *      creation leaves no half-made xpool.db to refuse later, nor one
 *      without its seal. Not next to an orphaned, non-empty xpool.db-wal,
 *      though: SQLite would replay it into the new file;
 *   4. an existing file passes the read-only checks of store_check.c first,
 *      so a refused file is never written to; a format 1 file is then
 *      migrated (store_recover.c) and checked again; with recover, what
 *      the checks collected is dropped (store_recover.c) and the file
 *      checked once more, strictly;
 *   5. the seal is opened for the store thread, the write connection
 *      (journal_mode=WAL, synchronous=FULL or OFF) and the read connection
 *      are opened, the statements prepared and the store thread started.
 *
 * Schema (format 2; format 1 had no crc columns and a nullable snapshot.at):
 *   meta(key TEXT PRIMARY KEY, value TEXT)   format = 2, created_by[, migrated]
 *   journal(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL,
 *           crc INTEGER NOT NULL)
 *   snapshot(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, body BLOB NOT NULL,
 *            crc INTEGER NOT NULL)
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/xalloc.h"

static const char schema_sql[] =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);\n"
	"CREATE TABLE journal(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, type TEXT NOT NULL, "
	"body TEXT NOT NULL, crc INTEGER NOT NULL);\n"
	"CREATE TABLE snapshot(seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, body BLOB NOT NULL, "
	"crc INTEGER NOT NULL);\n";

int64_t xp_store_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = xmalloc(a + b + 2);
	memcpy(p, dir, a);
	p[a] = '/';
	memcpy(p + a + 1, name, b + 1);
	return p;
}

/* mkdir -p with mode 0700 for what it creates. */
static int make_dirs(const char *dir, struct xp_err *err)
{
	char *p = xstrdup(dir);
	struct stat st;
	int rc = 0;

	for (char *q = p + 1;; q++) {
		if (*q != '/' && *q != '\0')
			continue;
		char c = *q;
		*q = '\0';
		if (mkdir(p, 0700) != 0 && errno != EEXIST) {
			rc = xp_errf(err, -errno, "%s: cannot create directory: %s", p,
				     strerror(errno));
			break;
		}
		*q = c;
		if (c == '\0')
			break;
	}
	if (rc == 0 && stat(dir, &st) != 0)
		rc = xp_errf(err, -errno, "%s: %s", dir, strerror(errno));
	else if (rc == 0 && !S_ISDIR(st.st_mode))
		rc = xp_errf(err, -ENOTDIR, "%s: not a directory", dir);
	free(p);
	return rc;
}

static int take_lock(struct xp_store *s, struct xp_err *err)
{
	s->lock_fd = open(s->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (s->lock_fd < 0)
		return xp_errf(err, -errno, "%s: %s", s->lock_path, strerror(errno));
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno == EWOULDBLOCK)
			return xp_errf(err, XP_EUNAVAIL,
				       "%s: in use by another xpool (%s is locked)", s->path,
				       s->lock_path);
		return xp_errf(err, -errno, "%s: %s", s->lock_path, strerror(errno));
	}
	return 0;
}

int xp_store_exec(sqlite3 *db, const char *path, const char *sql, struct xp_err *err)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		rc = xp_errf(err, xp_store_code(rc), "%s: %s", path,
			     msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return rc;
	}
	return 0;
}

/* PRAGMA journal_mode=WAL answers with the mode now in force. */
static int set_wal(sqlite3 *db, const char *path, struct xp_err *err)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		rc = xp_errf(err, xp_store_code(rc), "%s: cannot enter WAL mode: %s", path,
			     sqlite3_errmsg(db));
	} else {
		const char *m = (const char *)sqlite3_column_text(st, 0);
		rc = m && strcmp(m, "wal") == 0
			     ? 0
			     : xp_errf(err, XP_EIO, "%s: cannot enter WAL mode (journal mode %s)",
				       path, m ? m : "unknown");
	}
	sqlite3_finalize(st);
	return rc;
}

int xp_store_fsync(const char *path, int dir, struct xp_err *err)
{
	int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return xp_errf(err, -errno, "%s: %s", path, strerror(errno));
	if (fsync(fd) != 0) {
		int e = errno;
		close(fd);
		return xp_errf(err, -e, "%s: fsync: %s", path, strerror(e));
	}
	close(fd);
	return 0;
}

static void unlink_db(const char *path)
{
	static const char *const sfx[] = { "", "-wal", "-shm", "-journal" };
	size_t n = strlen(path);
	char *p = xmalloc(n + 16);
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		memcpy(p, path, n);
		strcpy(p + n, sfx[i]);
		unlink(p);
	}
	free(p);
}

/* xpool.db is absent. A non-empty xpool.db-wal without it holds transactions of a store that
 * was moved or deleted; a new xpool.db would have them replayed into it (the WAL is not tied to
 * its file), so refuse rather than build over it. */
static int check_orphan_wal(struct xp_store *s, struct xp_err *err)
{
	struct stat st;
	char *wal = join(s->dir, XP_STORE_FILE "-wal");
	int rc = 0;
	if (stat(wal, &st) == 0 && st.st_size > 0)
		rc = xp_errf(err, XP_ECORRUPT,
			     "%s: missing, but %s is there (%lld bytes of its write-ahead log): "
			     "put the file back, or move the log away to start a new store",
			     s->path, wal, (long long)st.st_size);
	free(wal);
	return rc;
}

/* Build a new store as PATH.new, then rename it into place. */
static int create_store(struct xp_store *s, struct xp_err *err)
{
	char *tmp = join(s->dir, XP_STORE_FILE ".new");
	sqlite3 *db = NULL;
	char meta[256];
	int rc;

	unlink_db(tmp);
	rc = sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, s->vfs);
	if (rc != SQLITE_OK) {
		rc = xp_errf(err, xp_store_code(rc), "%s: cannot create: %s", tmp,
			     db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
		goto out;
	}
	snprintf(meta, sizeof(meta),
		 "INSERT INTO meta(key, value) VALUES ('format', '%d'), "
		 "('created_by', 'xpool store format %d, SQLite %s');",
		 XP_STORE_FORMAT, XP_STORE_FORMAT, sqlite3_libversion());
	rc = set_wal(db, tmp, err);
	if (rc == 0)
		rc = xp_store_exec(db, tmp, "PRAGMA synchronous=FULL", err);
	if (rc == 0)
		rc = xp_store_exec(db, tmp, "BEGIN", err);
	if (rc == 0)
		rc = xp_store_exec(db, tmp, schema_sql, err);
	if (rc == 0)
		rc = xp_store_exec(db, tmp, meta, err);
	if (rc == 0)
		rc = xp_store_exec(db, tmp, "COMMIT", err);
	/* The last close checkpoints the WAL into the file and removes it. */
	if (sqlite3_close(db) != SQLITE_OK && rc == 0)
		rc = xp_errf(err, XP_EIO, "%s: close failed", tmp);
	db = NULL;
	if (rc == 0)
		rc = xp_store_fsync(tmp, 0, err);
	if (rc == 0)
		rc = xp_seal_create(s->seal_path, 0, 0, 1, err);
	if (rc == 0 && rename(tmp, s->path) != 0)
		rc = xp_errf(err, -errno, "%s: rename to %s: %s", tmp, s->path, strerror(errno));
	if (rc == 0)
		rc = xp_store_fsync(s->dir, 1, err);
out:
	sqlite3_close(db);
	if (rc < 0)
		unlink_db(tmp);
	free(tmp);
	return rc;
}

static int prepare(struct xp_store *s, const char *sql, sqlite3_stmt **st, struct xp_err *err)
{
	int rc = sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
	if (rc != SQLITE_OK)
		return xp_errf(err, xp_store_code(rc), "%s: %s: %s", s->path, sql,
			       sqlite3_errmsg(s->db));
	return 0;
}

static int open_write(struct xp_store *s, struct xp_err *err)
{
	int rc = sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
				 s->vfs);
	if (rc != SQLITE_OK)
		return xp_errf(err, xp_store_code(rc), "%s: cannot open: %s", s->path,
			       s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
	sqlite3_busy_timeout(s->db, 10000);
	rc = set_wal(s->db, s->path, err);
	if (rc == 0)
		rc = xp_store_exec(s->db, s->path,
				   s->sync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=OFF",
				   err);
	if (rc == 0)
		rc = prepare(s, "BEGIN IMMEDIATE", &s->st_begin, err);
	if (rc == 0)
		rc = prepare(s, "COMMIT", &s->st_commit, err);
	if (rc == 0)
		rc = prepare(s, "ROLLBACK", &s->st_rollback, err);
	if (rc == 0)
		rc = prepare(
			s,
			"INSERT INTO journal(seq, at, type, body, crc) VALUES (?1, ?2, ?3, ?4, ?5)",
			&s->st_ins_rec, err);
	if (rc == 0)
		rc = prepare(
			s,
			"INSERT OR REPLACE INTO snapshot(seq, at, body, crc) VALUES (?1, ?2, ?3, "
			"?4)",
			&s->st_ins_snap, err);
	if (rc == 0)
		rc = prepare(s,
			     "DELETE FROM snapshot WHERE seq < (SELECT seq FROM snapshot ORDER BY "
			     "seq DESC LIMIT 1 OFFSET ?1)",
			     &s->st_prune_snap, err);
	if (rc == 0)
		rc = prepare(s, "DELETE FROM journal WHERE seq <= (SELECT min(seq) FROM snapshot)",
			     &s->st_prune_journal, err);
	return rc;
}

static int open_read(struct xp_store *s, struct xp_err *err)
{
	int rc = sqlite3_open_v2(s->path, &s->rdb, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
				 s->vfs);
	if (rc != SQLITE_OK)
		return xp_errf(err, xp_store_code(rc), "%s: cannot open for reading: %s", s->path,
			       s->rdb ? sqlite3_errmsg(s->rdb) : sqlite3_errstr(rc));
	sqlite3_busy_timeout(s->rdb, 10000);
	return xp_store_read_prepare(s, err);
}

/* Step 4: check the existing file; migrate a format 1 one; with recover, mend what the check
 * collected. info describes the file as it is afterwards. */
static int check_and_mend(struct xp_store *s, struct xp_store_info *info, struct xp_err *err)
{
	int rc = xp_store_check(s->path, s->seal_path, s->vfs, s->recover, info, err);
	if (rc == 0 && info->format < XP_STORE_FORMAT) {
		if ((rc = xp_store_migrate(s, info, err)) == 0)
			rc = xp_store_check(s->path, s->seal_path, s->vfs, s->recover, info, err);
	}
	if (rc == 0 && s->recover) {
		if ((rc = xp_store_repair(s, info, err)) == 0 && info->damaged)
			rc = xp_store_check(s->path, s->seal_path, s->vfs, 0, info, err);
	}
	return rc;
}

/* Step 5: the seal's file, for the store thread. A seal behind the journal (a crash came
 * between a commit and its seal) is left as it is: that batch was never acknowledged, and the
 * next commit moves the seal on; open writes nothing to a store it does not mend. */
static int open_seal(struct xp_store *s, const struct xp_store_info *info, struct xp_err *err)
{
	s->seal_fd = open(s->seal_path, O_RDWR | O_CLOEXEC);
	if (s->seal_fd < 0)
		return xp_errf(err, -errno, "%s: %s", s->seal_path, strerror(errno));
	s->seal_slot = info->seal.slot;
	return 0;
}

int xp_store_open(const char *dir, const struct xp_store_opts *o, struct xp_store **out,
		  struct xp_err *err)
{
	struct xp_store *s = XNEW(struct xp_store);
	struct xp_store_info info;
	struct stat st;
	uint64_t last = 0;
	int rc;

	if (o && o->etcd) { /* the data directory still holds the controller's own files */
		free(s);
		*out = NULL;
		rc = dir ? make_dirs(dir, err) : 0;
		return rc < 0 ? rc : xp_store_etcd_open(o, out, err);
	}
	*out = NULL;
	s->lock_fd = s->seal_fd = -1;
	s->dir = xstrdup(dir);
	s->path = join(dir, XP_STORE_FILE);
	s->lock_path = join(dir, "xpool.lock");
	s->seal_path = join(dir, XP_STORE_SEAL);
	s->vfs = o && o->vfs ? xstrdup(o->vfs) : NULL;
	s->sync = o ? o->sync != 0 : 1;
	s->recover = o && o->recover;
	s->max_batch = o && o->max_batch ? o->max_batch : 4096;
	s->keep_snapshots = o && o->keep_snapshots ? o->keep_snapshots : 2;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->rmu, NULL);
	pthread_cond_init(&s->work_cv, NULL);
	pthread_cond_init(&s->durable_cv, NULL);

	rc = make_dirs(dir, err);
	if (rc == 0)
		rc = take_lock(s, err);
	if (rc == 0 && stat(s->path, &st) != 0) {
		if (errno != ENOENT)
			rc = xp_errf(err, -errno, "%s: %s", s->path, strerror(errno));
		else if ((rc = check_orphan_wal(s, err)) == 0)
			rc = create_store(s, err);
	}
	if (rc == 0)
		rc = check_and_mend(s, &info, err);
	if (rc == 0)
		rc = open_seal(s, &info, err);
	last = info.journal_max > info.snap_max ? info.journal_max : info.snap_max;
	if (rc == 0)
		rc = open_write(s, err);
	if (rc == 0)
		rc = open_read(s, err);
	if (rc == 0) {
		atomic_store(&s->last_seq, last);
		atomic_store(&s->durable_seq, last);
		rc = pthread_create(&s->thread, NULL, xp_store_thread_main, s);
		if (rc != 0)
			rc = xp_errf(err, -rc, "%s: cannot start the store thread: %s", s->path,
				     strerror(rc));
		else
			s->thread_started = 1;
	}
	if (rc < 0) {
		xp_store_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

void xp_store_close(struct xp_store *s)
{
	if (!s)
		return;
	int e = errno;
	if (s->thread_started) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		pthread_cond_signal(&s->work_cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->thread, NULL);
	}
	if (s->etcd)
		xp_store_etcd_close(s);
	sqlite3_stmt *sts[] = { s->st_begin,	     s->st_commit,   s->st_rollback,
				s->st_ins_rec,	     s->st_ins_snap, s->st_prune_snap,
				s->st_prune_journal, s->rt_begin,    s->rt_end,
				s->rt_floor,	     s->rt_read,     s->rt_snap };
	for (size_t i = 0; i < sizeof(sts) / sizeof(sts[0]); i++)
		sqlite3_finalize(sts[i]);
	/* The read connection first: the write connection's close then checkpoints the WAL into
	 * the file and removes it. */
	sqlite3_close(s->rdb);
	sqlite3_close(s->db);
	xp_store_free_items(s->qhead);
	free(s->w);
	if (s->seal_fd >= 0)
		close(s->seal_fd);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	pthread_cond_destroy(&s->durable_cv);
	pthread_cond_destroy(&s->work_cv);
	pthread_mutex_destroy(&s->rmu);
	pthread_mutex_destroy(&s->mu);
	free(s->recovered);
	free(s->vfs);
	free(s->seal_path);
	free(s->lock_path);
	free(s->path);
	free(s->dir);
	free(s);
	errno = e;
}

int xp_store_failure(const struct xp_store *s, struct xp_err *err)
{
	struct xp_store *m = (struct xp_store *)s; /* the mutex only */
	pthread_mutex_lock(&m->mu);
	int rc = s->failed;
	if (rc < 0)
		xp_errf(err, rc, "%s", s->fail_text);
	pthread_mutex_unlock(&m->mu);
	return rc;
}

const char *xp_store_path(const struct xp_store *s)
{
	return s->path;
}

const char *xp_store_recovered(const struct xp_store *s)
{
	return s->recovered;
}
