/*
 * store_thread: the one thread that writes the store.
 *
 * Loop: wait on work_cv until something is queued, a waiter is ready, or
 * close asked to stop; take up to max_batch items off the queue (records
 * and snapshots, in the order they were queued); write them in one
 * transaction (BEGIN IMMEDIATE, prepared INSERTs with each row's CRC-32C,
 * COMMIT — one fsync of the WAL under synchronous=FULL); if the batch held
 * records, seal its last seq (DIR/xpool.seal, store_seal.c: one pwrite and
 * one fdatasync); then, under mu, publish durable_seq and the statistics,
 * and hand the ready prefix of the waiters to their done callbacks, called
 * with mu released, in registration order. The commit latency measured
 * includes the seal.
 *
 * A snapshot is an item in the same stream: its INSERT and the pruning it
 * allows (snapshots beyond keep_snapshots, journal records at or below the
 * oldest kept snapshot) are in the transaction of the records around it, so
 * no reader ever sees a pruned journal without the snapshot that covers it.
 *
 * Fail-stop: if a transaction fails it is rolled back, failed is set (the
 * code and a text naming the file, the seqs lost and SQLite's reason), the
 * rest of the queue is dropped unwritten, and every waiter — pending or
 * later — gets the failure. Appends then return 0. Nothing acknowledged is
 * lost: a record is acknowledged only through a waiter that got 0. A seal
 * that cannot be written fails the store the same way, although its batch
 * did commit: its waiters get the failure (their records may be there
 * after a restart - an outcome a client that saw an error must allow for
 * anyway, as with any commit whose reply was lost).
 *
 * On stop the loop drains the queue first, so close flushes.
 */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/xalloc.h"

/* Under mu: is the oldest pending waiter ready to be called? */
static int waiter_ready(const struct xp_store *s)
{
	return s->whead < s->wlen && (s->failed || s->w[s->whead].target <= s->written);
}

static void observe(uint64_t *hist, const double *bounds, double v)
{
	for (int i = 0; i < 12; i++) {
		if (v <= bounds[i]) {
			hist[i]++;
			return;
		}
	}
}

static int step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

/* Write the items of one batch in one transaction. On failure returns the SQLite code and
 * leaves SQLite's message in msg. *last_crc: the checksum of the batch's last record. */
static int write_batch(struct xp_store *s, struct xp_store_item *items, uint32_t *last_crc,
		       char *msg, size_t msgsz)
{
	int rc = step_done(s->st_begin);

	for (struct xp_store_item *it = items; rc == SQLITE_OK && it; it = it->next) {
		if (it->kind == XP_STORE_REC) {
			sqlite3_stmt *st = s->st_ins_rec;
			*last_crc = xp_store_rec_crc(it->seq, it->at, it->type, it->body, it->len);
			sqlite3_bind_int64(st, 1, (sqlite3_int64)it->seq);
			sqlite3_bind_int64(st, 2, it->at);
			sqlite3_bind_text(st, 3, it->type, -1, SQLITE_STATIC);
			rc = sqlite3_bind_text64(st, 4, it->body, it->len, SQLITE_STATIC,
						 SQLITE_UTF8);
			sqlite3_bind_int64(st, 5, (sqlite3_int64)*last_crc);
			if (rc == SQLITE_OK)
				rc = step_done(st);
		} else {
			sqlite3_stmt *st = s->st_ins_snap;
			sqlite3_bind_int64(st, 1, (sqlite3_int64)it->seq);
			sqlite3_bind_int64(st, 2, it->at);
			rc = sqlite3_bind_blob64(st, 3, it->body, it->len, SQLITE_STATIC);
			sqlite3_bind_int64(st, 4,
					   (sqlite3_int64)xp_store_snap_crc(it->seq, it->at,
									    it->body, it->len));
			if (rc == SQLITE_OK)
				rc = step_done(st);
			if (rc == SQLITE_OK) {
				sqlite3_bind_int64(s->st_prune_snap, 1,
						   (sqlite3_int64)s->keep_snapshots - 1);
				rc = step_done(s->st_prune_snap);
			}
			if (rc == SQLITE_OK)
				rc = step_done(s->st_prune_journal);
		}
	}
	if (rc == SQLITE_OK)
		rc = step_done(s->st_commit);
	if (rc != SQLITE_OK) {
		snprintf(msg, msgsz, "%s", sqlite3_errmsg(s->db));
		if (!sqlite3_get_autocommit(s->db))
			step_done(s->st_rollback);
	}
	return rc;
}

/* The batch ending at record seq (checksum crc) is committed: seal it, in the slot not holding
 * the newest mark, so a torn write leaves that one. 0 or -errno. */
static int seal_batch(struct xp_store *s, uint64_t seq, uint32_t crc)
{
	int rc = xp_seal_put(s->seal_fd, s->seal_slot ^ 1, seq, crc, s->sync);
	if (rc == 0)
		s->seal_slot ^= 1;
	return rc;
}

void xp_store_free_items(struct xp_store_item *it)
{
	while (it) {
		struct xp_store_item *next = it->next;
		free(it);
		it = next;
	}
}

/* Under mu: take up to max_batch items off the queue. */
static struct xp_store_item *take_batch(struct xp_store *s)
{
	struct xp_store_item *head = s->qhead, *last = head;
	size_t n = 1;

	while (last->next && n < s->max_batch) {
		last = last->next;
		n++;
	}
	s->qhead = last->next;
	if (!s->qhead)
		s->qtail = NULL;
	s->qlen -= n;
	last->next = NULL;
	return head;
}

/* Under mu, with the queue taken: write the batch (mu released meanwhile), publish. */
static void commit_batch(struct xp_store *s, struct xp_store_item *batch)
{
	char msg[256] = "";
	uint64_t first = 0, last = 0, nrec = 0, nitems = 0;
	int failed = s->failed;

	for (struct xp_store_item *it = batch; it; it = it->next) {
		nitems++;
		if (it->kind != XP_STORE_REC)
			continue;
		if (!nrec)
			first = it->seq;
		last = it->seq;
		nrec++;
	}
	if (failed) { /* a batch that was queued before the failure was seen */
		xp_store_free_items(batch);
		return;
	}
	pthread_mutex_unlock(&s->mu);
	uint64_t t0 = xp_mono_ns();
	uint32_t crc = 0;
	int rc, seal = 0, code = 0;
	if (s->etcd) { /* fenced txns; no seal: etcd's own log is the witness */
		code = xp_store_etcd_write(s, batch, msg, sizeof(msg));
		rc = code < 0 ? SQLITE_ERROR : SQLITE_OK;
	} else {
		rc = write_batch(s, batch, &crc, msg, sizeof(msg));
		if (rc == SQLITE_OK && nrec)
			seal = seal_batch(s, last, crc);
	}
	double secs = (double)(xp_mono_ns() - t0) / 1e9;
	xp_store_free_items(batch);
	pthread_mutex_lock(&s->mu);

	if (rc == SQLITE_OK && seal == 0) {
		if (nrec)
			atomic_store(&s->durable_seq, last);
		s->written += nitems;
		s->stats.commits++;
		s->stats.records += nrec;
		s->stats.commit_seconds_sum += secs;
		observe(s->stats.commit_hist, xp_store_commit_buckets, secs);
		observe(s->stats.batch_hist, xp_store_batch_buckets, (double)nrec);
	} else if (!s->failed) { /* (etcd: the keepalive thread may have said why first) */
		s->failed = seal < 0 ? seal : code < 0 ? code : xp_store_code(rc);
		if (s->failed >= 0)
			s->failed = XP_EIO;
		char r[48];
		if (seal < 0)
			snprintf(s->fail_text, sizeof(s->fail_text),
				 "%s: cannot seal %s: %s (committed in %s, but not acknowledged)",
				 s->seal_path, xp_store_range(r, first, last), strerror(-seal),
				 s->path);
		else if (nrec)
			snprintf(s->fail_text, sizeof(s->fail_text), "%s: commit of %s failed: %s",
				 s->path, xp_store_range(r, first, last), msg);
		else
			snprintf(s->fail_text, sizeof(s->fail_text),
				 "%s: commit of a snapshot failed: %s", s->path, msg);
	}
	if (s->failed) {
		xp_store_free_items(s->qhead);
		s->qhead = s->qtail = NULL;
		s->qlen = 0;
	}
	pthread_cond_broadcast(&s->durable_cv);
}

/* Under mu: call the ready prefix of the waiters, with mu released. ready/cap: the thread's
 * scratch array. */
static void deliver(struct xp_store *s, struct xp_store_waiter **ready, size_t *cap)
{
	while (waiter_ready(s)) {
		size_t n = 0;
		int rc = s->failed;
		while (waiter_ready(s)) {
			if (n == *cap) {
				*cap = *cap ? *cap * 2 : 64;
				*ready = xreallocarray(*ready, *cap, sizeof(**ready));
			}
			(*ready)[n++] = s->w[s->whead++];
		}
		if (s->whead == s->wlen)
			s->whead = s->wlen = 0;
		pthread_mutex_unlock(&s->mu);
		for (size_t i = 0; i < n; i++)
			(*ready)[i].done((*ready)[i].arg, rc);
		pthread_mutex_lock(&s->mu);
	}
}

void *xp_store_thread_main(void *arg)
{
	struct xp_store *s = arg;
	struct xp_store_waiter *ready = NULL;
	size_t cap = 0;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->qhead && !s->stop && !waiter_ready(s)) {
			s->idle = 1;
			pthread_cond_wait(&s->work_cv, &s->mu);
			s->idle = 0;
		}
		if (s->qhead)
			commit_batch(s, take_batch(s));
		deliver(s, &ready, &cap);
		if (s->stop && !s->qhead)
			break;
	}
	/* Left only if close raced a when_durable call, which store.h forbids. */
	while (s->whead < s->wlen) {
		struct xp_store_waiter w = s->w[s->whead++];
		pthread_mutex_unlock(&s->mu);
		w.done(w.arg, XP_EUNAVAIL);
		pthread_mutex_lock(&s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	free(ready);
	return NULL;
}
