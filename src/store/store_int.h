/*
 * store_int: what the store's files share (see store.h for the API and
 * docs/design/store.md for the design).
 *
 *   store.c          open (create, check, lock), close, failure, paths
 *   store_check.c    the read-only checks a file passes before it is opened,
 *                    checksums and the seal included
 *   store_seal.c     DIR/xpool.seal: the last committed seq, outside SQLite
 *   store_recover.c  row checksums; format 1 -> 2 migration; what recover
 *                    would drop (the plan) and dropping it
 *   store_queue.c    append, snapshot, waiters, sync, stats: the producer side
 *   store_thread.c   the store thread: batches, transactions, the seal,
 *                    callbacks
 *   store_read.c     load (replay) and read (event-stream resume)
 *   store_etcd.c     the HA backend: the journal in etcd, leadership, fencing
 *   etcd.c           the etcd v3 JSON gateway calls it makes
 *
 * Locking: mu guards the queue, the waiters, failed/fail_text, stop, idle
 * and the stats; last_seq and durable_seq are also atomics so that readers
 * need no lock. The write connection db, its statements and the seal
 * (seal_fd, seal_slot) belong to the store thread once it runs. rmu guards the read connection rdb
 * and its statements. Order: never hold mu while taking rmu or calling SQLite.
 */
#ifndef XP_STORE_INT_H
#define XP_STORE_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>

#include "store.h"

enum xp_store_kind { XP_STORE_REC, XP_STORE_SNAP };

/* One queued write: a record or a snapshot, with its text copied behind it. */
struct xp_store_item {
	struct xp_store_item *next;
	int kind;
	uint64_t seq;
	int64_t at;
	const char *type; /* points into data (records) */
	const char *body; /* points into data */
	size_t len;
	char data[];
};

struct xp_store_waiter {
	uint64_t target; /* done once written >= target */
	xp_store_done_fn done;
	void *arg;
};

/* store_seal.c: what DIR/xpool.seal says (found = 0: missing or damaged). */
struct xp_seal {
	uint64_t seq; /* the last committed seq */
	uint32_t rec; /* the checksum of record seq */
	int slot;     /* the slot (0, 1) that holds it */
	int found;
};

/* A point replay could start from: a snapshot that passes its checksum, or the empty state
 * (seq 0); what damage lies after it and at or below it. */
struct xp_store_base {
	uint64_t seq;
	uint64_t brk_after; /* the first damaged or missing seq after it; 0: none */
	uint64_t brk_below; /* the highest damaged or missing seq at or below it; 0: none */
	char why_after[200], why_below[200];
};
#define XP_STORE_BASES 8 /* the newest 7 good snapshots and the empty state */

/* What the read-only check of an existing file found. */
struct xp_store_info {
	uint64_t journal_min, journal_max, journal_count;
	uint64_t snap_min, snap_max, snap_count;
	long long format;
	/* format 2: checksums and the seal */
	struct xp_seal seal;
	char seal_why[200];   /* set: the seal is missing, damaged or ahead of the journal */
	uint64_t bad_snaps;   /* snapshots that fail their checksum */
	uint64_t bad_snap[4]; /* the first few of their seqs */
	struct xp_store_base base[XP_STORE_BASES];
	size_t nbase;
	int damaged;		     /* problems recover can mend were found */
	char first[XP_ERR_TEXT_MAX]; /* the first of them, for the refusal */
};

/* What recover does about info's problems (store_recover.c). */
struct xp_store_plan {
	int ok;		     /* 0: nothing to start from (why says so) */
	uint64_t base;	     /* the snapshot replay starts from (0: none) */
	uint64_t keep_to;    /* the last record kept; later ones are dropped */
	uint64_t lost_to;    /* seq keep_to+1..lost_to are gone (dropped or already lost) */
	uint64_t below;	     /* records at or below this are dropped (0: none) */
	char why[200];	     /* why the first seq after keep_to goes */
	char why_below[200]; /* why the history up to below goes */
};

struct xp_store_etcd;

struct xp_store {
	struct xp_store_etcd *etcd; /* the etcd backend (store_etcd.c); NULL: SQLite */
	char *dir, *path, *lock_path, *seal_path, *vfs;
	int lock_fd;
	int sync, recover;
	size_t max_batch, keep_snapshots;
	char *recovered; /* recover's report, NULL without recover */

	/* the seal: the store thread's once it runs */
	int seal_fd;
	int seal_slot; /* the slot holding the newest mark; updates write the other */

	/* write side: the store thread's once it runs */
	sqlite3 *db;
	sqlite3_stmt *st_begin, *st_commit, *st_rollback;
	sqlite3_stmt *st_ins_rec, *st_ins_snap, *st_prune_snap, *st_prune_journal;
	pthread_t thread;
	int thread_started;

	/* read side */
	pthread_mutex_t rmu;
	sqlite3 *rdb;
	sqlite3_stmt *rt_begin, *rt_end, *rt_floor, *rt_read, *rt_snap;

	/* shared, under mu */
	pthread_mutex_t mu;
	pthread_cond_t work_cv;	   /* the store thread waits here */
	pthread_cond_t durable_cv; /* xp_store_sync waits here */
	struct xp_store_item *qhead, *qtail;
	size_t qlen;		  /* items in the queue */
	uint64_t queued, written; /* items (records and snapshots) ever queued / committed */
	struct xp_store_waiter *w;
	size_t whead, wlen, wcap; /* pending waiters: w[whead .. wlen) */
	int idle;		  /* the store thread is waiting on work_cv */
	int stop;
	int appended; /* an append or snapshot has been queued */
	int failed;   /* 0, or the code of the failed commit */
	char fail_text[XP_ERR_TEXT_MAX];
	struct xp_store_stats stats;
	_Atomic uint64_t last_seq, durable_seq;
};

/* store_check.c: open path read-only (never modifying it), run every check and fill info. With
 * collect, problems recover can mend (checksums, gaps, the seal) are left in info (damaged,
 * first, base[], seal_why) instead of refused; without it the first of them is refused, its
 * message ending with what recover would do. seal_path NULL: format 1 checks only. */
int xp_store_check(const char *path, const char *seal_path, const char *vfs, int collect,
		   struct xp_store_info *info, struct xp_err *err);
/* store_check.c: map an SQLite result code to an xpool code. */
int xp_store_code(int sqlite_rc);

/* store.c: run sql on db ("path: SQLite's message" on failure); fsync path (a directory when
 * dir). */
int xp_store_exec(sqlite3 *db, const char *path, const char *sql, struct xp_err *err);
int xp_store_fsync(const char *path, int dir, struct xp_err *err);

/* store_seal.c: read the seal (XP_ENOENT: missing, XP_ECORRUPT: no valid slot); write one slot
 * (fdatasync'd when sync; 0 or -errno); create a file with both slots as PATH.new, renamed into
 * place (the caller fsyncs the directory). */
int xp_seal_read(const char *path, struct xp_seal *out, struct xp_err *err);
int xp_seal_put(int fd, int slot, uint64_t seq, uint32_t rec, int sync);
int xp_seal_create(const char *path, uint64_t seq, uint32_t rec, int sync, struct xp_err *err);

/* store_recover.c */
/* "seq A..B", or "seq A" when B == A, into buf. */
const char *xp_store_range(char buf[48], uint64_t a, uint64_t b);
/* xp_store_rec_crc with the type's length given (a damaged type may hold a NUL). */
uint32_t xp_store_rec_crc_n(uint64_t seq, int64_t at, const char *type, size_t tl, const void *body,
			    size_t len);
/* Register xp_rec_crc(seq, at, type, body) and xp_snap_crc(seq, at, body) on db. */
int xp_store_sql_crc(sqlite3 *db);
/* What recover would do about info's problems; a one-line summary for a refusal into sum. */
void xp_store_plan(const struct xp_store_info *info, struct xp_store_plan *p, char *sum,
		   size_t sumsz);
/* Migrate a format 1 store to format 2 in one transaction, sealing its last seq first. */
int xp_store_migrate(struct xp_store *s, const struct xp_store_info *info, struct xp_err *err);
/* Carry out the plan for info's problems in one transaction, write a new seal, and fill
 * s->recovered. */
int xp_store_repair(struct xp_store *s, const struct xp_store_info *info, struct xp_err *err);

/* store_thread.c */
void *xp_store_thread_main(void *arg);
/* store_thread.c: free a list of queued items. */
void xp_store_free_items(struct xp_store_item *it);

/* store_read.c: prepare the read connection's statements. */
int xp_store_read_prepare(struct xp_store *s, struct xp_err *err);

/* Wall-clock milliseconds since the epoch. */
int64_t xp_store_now_ms(void);

/* store_etcd.c: the etcd backend behind the same API. write: one batch, 0 or an XP_* code
 * with msg; close: after the store thread stopped. */
int xp_store_etcd_open(const struct xp_store_opts *o, struct xp_store **out, struct xp_err *err);
void xp_store_etcd_close(struct xp_store *s);
int xp_store_etcd_write(struct xp_store *s, struct xp_store_item *batch, char *msg, size_t msgsz);
int xp_store_etcd_load(struct xp_store *s, xp_store_snap_fn snap, xp_store_rec_fn rec, void *ctx,
		       struct xp_err *err);
long xp_store_etcd_read(struct xp_store *s, uint64_t since, size_t limit, xp_store_rec_fn rec,
			void *ctx, struct xp_err *err);

#endif
