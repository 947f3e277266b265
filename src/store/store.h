/*
 * store: the controller's durable journal and snapshots, in one SQLite file
 * (DIR/xpool.db, WAL mode), written by one store thread with group commit.
 * It knows nothing of what a record means: a record is (seq, at, type,
 * body) with body an opaque text (JSON by convention). Every record and
 * snapshot is kept with a CRC-32C of its bytes, and the last committed seq
 * is sealed in DIR/xpool.seal, outside SQLite; open refuses a store that
 * fails either check (or, asked to recover, drops what fails and says so).
 *
 * Ownership: every function borrows its arguments; append and snapshot copy
 * what they are given, and the pointers a callback receives are valid only
 * during that call.
 *
 * Threads: one owner thread appends and registers waiters (append is also
 * safe from other threads). The store thread does every write, the seal's
 * included, and calls the done callbacks. xp_store_read, xp_store_last_seq, xp_store_durable_seq,
 * xp_store_stats and xp_store_failure may run on any thread. Nothing may run
 * concurrently with xp_store_close, and a done callback must not call
 * xp_store_sync or xp_store_close (it runs on the thread they wait for).
 *
 * Design, schema, checksums, the seal, recovery, guarantees and failure
 * behaviour: docs/design/store.md.
 */
#ifndef XP_STORE_H
#define XP_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

/* The on-disk format this build writes and the newest it reads. Format 1 (no checksums, no
 * seal) is migrated to 2 in place, in one transaction, when it is opened. */
#define XP_STORE_FORMAT 2
/* The database file and the seal (the last committed seq) inside the data directory. */
#define XP_STORE_FILE "xpool.db"
#define XP_STORE_SEAL "xpool.seal"

struct xp_store;
struct xp_store_opts {
	int sync; /* 1 (default when opts NULL): durable commits (WAL + synchronous=FULL); 0: no
		     fsync, for tests/benchmarks only */
	size_t max_batch;      /* records per transaction, 0 = 4096 */
	size_t keep_snapshots; /* newest snapshots kept, 0 = 2 */
	int recover;	       /* 1: open a damaged store anyway (see xp_store_open) */
	const char *vfs;       /* SQLite VFS of every connection; NULL: the default (tests inject
				  faults through one) */
	/* The HA store: "etcd://HOST:PORT[,...][/PREFIX]" keeps the journal in etcd instead of
	 * DIR (xp_store_open's dir is then unused; see store_etcd.c and docs/design/ha.md). Open
	 * then campaigns for leadership and returns once this process leads; every write is
	 * fenced by the epoch, and losing the lease fails the store (the controller steps down). */
	const char *etcd;
	const char *etcd_ca;   /* etcds://: the CA file the members are verified against */
	const char *etcd_cert, *etcd_key; /* etcds://: the client certificate, or NULL */
	long lease_ms;	       /* etcd: the leader's lease TTL in ms, at least 2000 (default 5000) */
	const char *advertise; /* etcd: the leader key's value: this controller's address */
	/* etcd: called about every 100 ms while open waits - for etcd (leader NULL, why: what
	 * failed) or, without follow, for another controller to stop leading (leader: its
	 * address); nonzero gives up (open fails with XP_EUNAVAIL) */
	int (*standby)(void *arg, const char *leader, const char *why);
	void *standby_arg;
	/* etcd, follow mode: open returns at once without leading (load, then read what the
	 * leader appends with xp_store_read); the campaign runs on a thread of its own and calls
	 * on_lead (on that thread) once this store holds the leader key: catch up, then
	 * xp_store_promote, then append. */
	int follow;
	void (*on_lead)(void *arg);
	void *lead_arg;
};
struct xp_store_rec {
	uint64_t seq;
	int64_t at_ms;
	const char *type;
	const char *body;
	size_t len;
};
typedef int (*xp_store_snap_fn)(void *ctx, uint64_t seq, const char *body, size_t len);
typedef int (*xp_store_rec_fn)(void *ctx, const struct xp_store_rec *r);
typedef void (*xp_store_done_fn)(void *arg, int rc); /* called on the store thread */

/* Open or create DIR/xpool.db (DIR is created if absent, mode 0700) and DIR/xpool.seal. Refuses,
 * with a clear message naming the file and leaving the files unmodified: a store whose format
 * version is newer than this build's ("written by a newer xpool: format 3, this build reads up to
 * 2"), a file that is not an xpool store or fails SQLite's quick_check, a journal whose seqs are
 * not increasing or that does not start at 1 or right after a snapshot - and, recoverable
 * (XP_ECORRUPT, the message naming the seq where there is one, then what recover would do:
 * "; --recover starts without seq 181..343"): a record or snapshot that fails its checksum, a gap
 * in the journal, a journal that ends below the sealed seq or whose sealed record is another, a
 * seal that is missing or has no valid slot. A format 1 store that passes its checks is migrated
 * to format 2 first, in one transaction (sealed before it). Also refuses (XP_EUNAVAIL) a
 * directory whose store another process or handle has open: the store holds an exclusive flock
 * on DIR/xpool.lock while open. Open writes nothing to a store it neither creates, migrates nor
 * mends.
 *
 * With o->recover, the recoverable refusals become repairs: the store keeps the newest snapshot
 * that passes its checksum (or the empty state, if the journal reaches back to seq 1) and the
 * unbroken run of good records after it, deletes every later record, every damaged snapshot and
 * the history up to any damaged record below that snapshot, in one transaction, writes a new
 * seal and checks the file again; xp_store_recovered() says what went. Damage recover cannot mend
 * (quick_check, a foreign or newer file, nothing to start from) is refused as without it. */
int xp_store_open(const char *dir, const struct xp_store_opts *o, struct xp_store **out,
		  struct xp_err *err);
/* After an open with recover: one line per thing dropped ("dropping seq 181..343: record 181
 * (job.submit) fails its checksum (...)"), '\n'-separated, or "nothing to drop: DIR/xpool.db
 * passes every check". NULL when opened without recover. Valid until close. */
const char *xp_store_recovered(const struct xp_store *s);
void xp_store_close(struct xp_store *s); /* flushes what is queued, stops the thread; NULL-safe */
/* Replay: the newest snapshot (if any) to snap(), then every journal record after it, in seq
 * order, to rec(), each checked against its checksum first (a mismatch stops the load with
 * XP_ECORRUPT naming the seq). A callback returning < 0 stops the load with that code. Call before
 * the first append or snapshot (XP_ESTATE otherwise). snap may be NULL when no snapshot is expected
 * (a snapshot then fails the load with XP_EUNSUPP). On a callback failure err reads "DIR/xpool.db:
 * seq N (TYPE): " followed by the text the callback left in err (when ctx lets it fill the same
 * struct xp_err) or by the code's message. */
int xp_store_load(struct xp_store *s, xp_store_snap_fn snap, xp_store_rec_fn rec, void *ctx,
		  struct xp_err *err);
/* Queue a record (copied): returns its seq (> every seq before, contiguous). Never blocks on I/O.
 * Returns 0, queuing nothing, once the store has failed. */
uint64_t xp_store_append(struct xp_store *s, const char *type, const char *body, size_t len,
			 int64_t at_ms);
/* done(arg, 0) is called once every record appended before this call is durable - committed and
 * sealed - (or done(arg, <0) if the commit or the seal failed; after a failure every later call
 * fails too — the server stops). Cheap; many may be outstanding. Always called on the store
 * thread, never from inside this call, in registration order; snapshots queued before the call
 * are covered too. */
void xp_store_when_durable(struct xp_store *s, xp_store_done_fn done, void *arg);
/* Block until everything appended (and every snapshot queued) so far is durable; returns 0 or the
 * failure. */
int xp_store_sync(struct xp_store *s);
/* Queue a snapshot of the state as of seq (copied), written by the store thread in order with the
 * journal; older snapshots beyond keep_snapshots and journal records at or below the oldest kept
 * snapshot's seq are pruned. seq must not exceed xp_store_last_seq(); a snapshot with the seq of
 * an existing one replaces it. */
void xp_store_snapshot(struct xp_store *s, uint64_t seq, const char *body, size_t len);
/* Read committed records with seq > since (at most limit) on a separate read connection, for
 * clients resuming an event stream. May run on any thread, concurrently with appends. Returns the
 * number read or < 0: XP_ENOENT when records right after since were pruned (the client must start
 * again from current state), XP_ECORRUPT for a record that fails its checksum, or a callback's
 * code. Readers take turns on one connection. */
long xp_store_read(struct xp_store *s, uint64_t since, size_t limit, xp_store_rec_fn rec, void *ctx,
		   struct xp_err *err);
uint64_t xp_store_last_seq(const struct xp_store *s);	 /* highest seq appended */
uint64_t xp_store_durable_seq(const struct xp_store *s); /* highest seq committed and sealed */
/* 0 while healthy; after a failed commit (or seal), its code, with err (may be NULL) naming the
 * file, the seqs lost and the reason ("DIR/xpool.db: commit of seq 11..15 failed: database or
 * disk is full"). Any thread. */
int xp_store_failure(const struct xp_store *s, struct xp_err *err);
/* The database file's path (DIR/xpool.db), or the etcd address, for messages. */
const char *xp_store_path(const struct xp_store *s);
/* etcd: this leader's epoch (its leader key's create revision); 0 for SQLite. */
int64_t xp_store_epoch(const struct xp_store *s);
/* 1 when this store leads (SQLite: always); buf gets the leader key's value as last read
 * ("" when unknown: etcd did not answer, or no one leads). Any thread. */
int xp_store_leader(struct xp_store *s, char *buf, size_t n);
/* etcd: 0, or XP_EUNAVAIL with why the last commit is still being retried (etcd unreachable,
 * no quorum, out of space: "... mvcc: database space exceeded"); new writes should be
 * refused with it rather than queued. Any thread. */
int xp_store_stalled(struct xp_store *s, struct xp_err *err);
/* etcd, follow mode: ms since etcd last answered a read through its quorum (the campaign's
 * look at the leader key, every 100 ms); 0 for SQLite. Any thread. */
long long xp_store_quorum_age_ms(const struct xp_store *s);
/* etcd, follow mode, after on_lead: this store has applied every record up to seq, which must
 * be the last in etcd (XP_ESTATE otherwise); appends go on from seq + 1. */
int xp_store_promote(struct xp_store *s, uint64_t seq, struct xp_err *err);

/* The checksums kept with each row, CRC-32C (lib/crc32c.h), for tools and tests. A record's
 * covers seq and at (8 bytes each, little-endian), the type's length in bytes (4, little-endian),
 * the type and the body; a snapshot's covers seq, at and the body. */
uint32_t xp_store_rec_crc(uint64_t seq, int64_t at, const char *type, const void *body, size_t len);
uint32_t xp_store_snap_crc(uint64_t seq, int64_t at, const void *body, size_t len);

/* Commit latency (BEGIN to COMMIT done and the batch sealed) and batch size statistics for
 * /metrics: fill counts per bucket (upper bounds given), sum and count. Bucket i counts
 * observations v with bounds[i-1] < v <= bounds[i] (not cumulative); observations above the last
 * bound are in the totals only, so the +Inf bucket is commits minus the sum of the buckets. A
 * commit that wrote only a snapshot has batch size 0. */
struct xp_store_stats {
	uint64_t commits, records;
	double commit_seconds_sum;
	uint64_t commit_hist[12];
	uint64_t batch_hist[12];
};
void xp_store_stats(const struct xp_store *s, struct xp_store_stats *out); /* thread-safe copy */
extern const double xp_store_commit_buckets[12]; /* seconds: 0.0005 .. 5 */
extern const double xp_store_batch_buckets[12];	 /* records: 1 .. 4096 */

#endif
