/*
 * store_queue: the producer side of the store — append, snapshot, waiters,
 * sync and statistics (see store.h).
 *
 * An append copies its record into one allocation (outside the lock), then
 * under mu takes the next seq and links the item at the tail of the queue
 * the store thread drains. It never waits for I/O: the store thread holds
 * mu only to take a batch and to publish its result, never across SQLite.
 * The store thread is signalled only when it is idle (waiting for work), so
 * a burst of appends during a commit costs no wake-ups; the batch taken after
 * that commit carries them all — this is the group commit.
 *
 * Items (records and snapshots) are counted as they are queued (queued) and
 * as they are committed (written). A waiter or a sync takes the count
 * queued so far as its target and is done once written reaches it, so it
 * covers the snapshots queued before it as well as the records. Targets
 * never decrease in registration order, so the pending waiters are a FIFO
 * and the ready ones are always a prefix of it.
 */
#include "store_int.h"

#include <stdlib.h>
#include <string.h>

#include "lib/xalloc.h"

const double xp_store_commit_buckets[12] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
					     0.05,   0.1,   0.25,   0.5,   1,	 5 };
const double xp_store_batch_buckets[12] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096 };

static struct xp_store_item *item_new(int kind, const char *type, const char *body, size_t len)
{
	size_t tl = type ? strlen(type) : 0;
	struct xp_store_item *it = xmalloc(sizeof(*it) + tl + 1 + len + 1);
	char *t = it->data, *b = it->data + tl + 1;

	it->next = NULL;
	it->kind = kind;
	if (tl)
		memcpy(t, type, tl);
	t[tl] = '\0';
	if (len)
		memcpy(b, body, len);
	b[len] = '\0';
	it->type = t;
	it->body = b;
	it->len = len;
	return it;
}

/* Under mu: link it at the tail and wake the store thread if it sleeps. */
static void enqueue(struct xp_store *s, struct xp_store_item *it)
{
	if (s->qtail)
		s->qtail->next = it;
	else
		s->qhead = it;
	s->qtail = it;
	s->qlen++;
	s->queued++;
	s->appended = 1;
	if (s->idle)
		pthread_cond_signal(&s->work_cv);
}

uint64_t xp_store_append(struct xp_store *s, const char *type, const char *body, size_t len,
			 int64_t at_ms)
{
	struct xp_store_item *it = item_new(XP_STORE_REC, type, body, len);
	uint64_t seq;

	it->at = at_ms;
	pthread_mutex_lock(&s->mu);
	if (s->failed || s->stop) {
		pthread_mutex_unlock(&s->mu);
		free(it);
		return 0;
	}
	seq = atomic_load(&s->last_seq) + 1;
	it->seq = seq;
	atomic_store(&s->last_seq, seq);
	enqueue(s, it);
	pthread_mutex_unlock(&s->mu);
	return seq;
}

void xp_store_snapshot(struct xp_store *s, uint64_t seq, const char *body, size_t len)
{
	struct xp_store_item *it = item_new(XP_STORE_SNAP, NULL, body, len);

	it->seq = seq;
	it->at = xp_store_now_ms();
	pthread_mutex_lock(&s->mu);
	if (s->failed || s->stop) {
		pthread_mutex_unlock(&s->mu);
		free(it);
		return;
	}
	enqueue(s, it);
	pthread_mutex_unlock(&s->mu);
}

void xp_store_when_durable(struct xp_store *s, xp_store_done_fn done, void *arg)
{
	pthread_mutex_lock(&s->mu);
	uint64_t target = s->queued;
	if (s->wlen == s->wcap) {
		if (s->whead > 0) {
			memmove(s->w, s->w + s->whead, (s->wlen - s->whead) * sizeof(*s->w));
			s->wlen -= s->whead;
			s->whead = 0;
		}
		if (s->wlen == s->wcap) {
			s->wcap = s->wcap ? s->wcap * 2 : 64;
			s->w = xreallocarray(s->w, s->wcap, sizeof(*s->w));
		}
	}
	s->w[s->wlen++] = (struct xp_store_waiter){ target, done, arg };
	/* Not yet durable: the commit that makes it so will find it. Already durable (or
	 * failed): only an idle store thread needs waking to deliver it. */
	if (s->idle && (s->failed || target <= s->written))
		pthread_cond_signal(&s->work_cv);
	pthread_mutex_unlock(&s->mu);
}

int xp_store_sync(struct xp_store *s)
{
	pthread_mutex_lock(&s->mu);
	uint64_t target = s->queued;
	while (!s->failed && s->written < target)
		pthread_cond_wait(&s->durable_cv, &s->mu);
	int rc = s->failed;
	pthread_mutex_unlock(&s->mu);
	return rc;
}

uint64_t xp_store_last_seq(const struct xp_store *s)
{
	return atomic_load(&s->last_seq);
}

uint64_t xp_store_durable_seq(const struct xp_store *s)
{
	return atomic_load(&s->durable_seq);
}

void xp_store_stats(const struct xp_store *s, struct xp_store_stats *out)
{
	struct xp_store *m = (struct xp_store *)s; /* the mutex only */
	pthread_mutex_lock(&m->mu);
	*out = s->stats;
	pthread_mutex_unlock(&m->mu);
}
