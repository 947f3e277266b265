/*
 * store_int: what the store's files share (see store.h for the API and
 * docs/design/store.md for the design).
 *
 *   store.c        open (create, check, lock), close, failure, paths
 *   store_check.c  the read-only checks a file passes before it is opened
 *   store_queue.c  append, snapshot, waiters, sync, stats: the producer side
 *   store_thread.c the store thread: batches, transactions, callbacks
 *   store_read.c   load (replay) and read (event-stream resume)
 *
 * Locking: mu guards the queue, the waiters, failed/fail_text, stop, idle
 * and the stats; last_seq and durable_seq are also atomics so that readers
 * need no lock. The write connection db and its statements belong to the
 * store thread once it runs. rmu guards the read connection rdb and its
 * statements. Order: never hold mu while taking rmu or calling SQLite.
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

/* What the read-only check of an existing file found. */
struct xp_store_info {
	uint64_t journal_min, journal_max, journal_count;
	uint64_t snap_min, snap_max, snap_count;
	long long format;
};

struct xp_store {
	char *dir, *path, *lock_path;
	int lock_fd;
	int sync;
	size_t max_batch, keep_snapshots;

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

/* store_check.c: open path read-only (never modifying it), run every check and fill info. */
int xp_store_check(const char *path, struct xp_store_info *info, struct xp_err *err);
/* store_check.c: map an SQLite result code to an xpool code. */
int xp_store_code(int sqlite_rc);

/* store_thread.c */
void *xp_store_thread_main(void *arg);

/* store_read.c: prepare the read connection's statements. */
int xp_store_read_prepare(struct xp_store *s, struct xp_err *err);

/* Wall-clock milliseconds since the epoch. */
int64_t xp_store_now_ms(void);

#endif
