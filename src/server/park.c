/*
 * park: requests that wait - an agent's long poll on its assignments, a
 * long poll or stream of events - held as suspended connections, not as
 * threads (libmicrohttpd's suspend/resume; http.c). A parked request is
 * resumed exactly once: when what it waits for changes (xp_park_wake on
 * its key), when its deadline passes (the timer thread), or when the
 * controller stops; libmicrohttpd then calls the handler again, which
 * looks at the state afresh and answers or parks again.
 *
 * A wake between a waiter's look at the state and its parking must not be
 * lost: every key's bucket counts its wakes (gen), the waiter reads the
 * count before it looks (xp_park_gen) and parks only if it has not moved
 * (xp_park_if); else it looks again. Waking bumps the count under the same
 * lock. A wake of another key in the bucket only costs a second look.
 *
 * Deadlines: an indexed min-heap; one timer thread sleeps until the first.
 */
#include "ctl.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/xalloc.h"

#define BUCKETS 4096

struct xp_parking {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* the timer: a new first deadline, or stop */
	struct xp_park *bucket[BUCKETS];
	uint64_t gen[BUCKETS];
	struct xp_park **heap; /* by deadline */
	size_t nheap, cap;
	size_t parked;
	int stop;
	pthread_t timer;
	int timer_started;
};

static size_t bucket_of(uint32_t key)
{
	return (key * 2654435761u) % BUCKETS;
}

/* ---- the deadline heap ---- */

static void heap_set(struct xp_parking *k, size_t i, struct xp_park *p)
{
	k->heap[i] = p;
	p->heap_i = i;
}

static void heap_up(struct xp_parking *k, size_t i)
{
	struct xp_park *p = k->heap[i];
	while (i && k->heap[(i - 1) / 2]->deadline > p->deadline) {
		heap_set(k, i, k->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_set(k, i, p);
}

static void heap_down(struct xp_parking *k, size_t i)
{
	struct xp_park *p = k->heap[i];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		int64_t dm = p->deadline;
		if (l < k->nheap && k->heap[l]->deadline < dm)
			m = l, dm = k->heap[l]->deadline;
		if (r < k->nheap && k->heap[r]->deadline < dm)
			m = r;
		if (m == i)
			break;
		heap_set(k, i, k->heap[m]);
		i = m;
	}
	heap_set(k, i, p);
}

static void heap_push(struct xp_parking *k, struct xp_park *p)
{
	if (k->nheap == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 256;
		k->heap = xrealloc(k->heap, k->cap * sizeof(*k->heap));
	}
	heap_set(k, k->nheap++, p);
	heap_up(k, k->nheap - 1);
}

static void heap_del(struct xp_parking *k, struct xp_park *p)
{
	size_t i = p->heap_i;
	struct xp_park *last = k->heap[--k->nheap];
	if (i < k->nheap) {
		heap_set(k, i, last);
		heap_down(k, i);
		heap_up(k, last->heap_i);
	}
	p->heap_i = (size_t)-1;
}

/* ---- parking ---- */

/* out of its bucket and the heap, and resumed (under k->mu) */
static void unpark(struct xp_parking *k, struct xp_park *p, int why)
{
	size_t b = bucket_of(p->key);
	if (p->prev)
		p->prev->next = p->next;
	else
		k->bucket[b] = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->next = p->prev = NULL;
	if (p->heap_i != (size_t)-1)
		heap_del(k, p);
	p->woken = (uint8_t)why;
	p->parked = 0;
	k->parked--;
	MHD_resume_connection(p->c);
}

uint64_t xp_park_gen(struct xp_ctl *ctl, uint32_t key)
{
	struct xp_parking *k = ctl->parking;
	pthread_mutex_lock(&k->mu);
	uint64_t g = k->gen[bucket_of(key)];
	pthread_mutex_unlock(&k->mu);
	return g;
}

int xp_park_if(struct xp_ctl *ctl, struct xp_park *p, struct MHD_Connection *c, uint32_t key,
	       uint64_t gen, int64_t deadline)
{
	struct xp_parking *k = ctl->parking;
	size_t b = bucket_of(key);
	pthread_mutex_lock(&k->mu);
	if (k->stop || k->gen[b] != gen) { /* stopping, or woken since the look */
		pthread_mutex_unlock(&k->mu);
		return 0;
	}
	memset(p, 0, sizeof(*p));
	p->c = c;
	p->key = key;
	p->deadline = deadline;
	p->parked = 1;
	p->heap_i = (size_t)-1;
	p->next = k->bucket[b];
	if (p->next)
		p->next->prev = p;
	k->bucket[b] = p;
	k->parked++;
	MHD_suspend_connection(c); /* before anyone can resume it: we hold k->mu */
	if (deadline) {
		heap_push(k, p);
		if (p->heap_i == 0)
			pthread_cond_signal(&k->cv);
	}
	pthread_mutex_unlock(&k->mu);
	return 1;
}

void xp_park_wake(struct xp_ctl *ctl, uint32_t key)
{
	/* the owner starts before the HTTP front (and its parking): acquire what start
	 * published */
	struct xp_parking *k = __atomic_load_n(&ctl->parking, __ATOMIC_ACQUIRE);
	if (!k)
		return;
	size_t b = bucket_of(key);
	pthread_mutex_lock(&k->mu);
	k->gen[b]++;
	for (struct xp_park *p = k->bucket[b], *next; p; p = next) {
		next = p->next;
		if (p->key == key)
			unpark(k, p, XP_PARK_WOKEN);
	}
	pthread_mutex_unlock(&k->mu);
}

size_t xp_park_count(struct xp_ctl *ctl)
{
	struct xp_parking *k = ctl->parking;
	pthread_mutex_lock(&k->mu);
	size_t n = k->parked;
	pthread_mutex_unlock(&k->mu);
	return n;
}

static void *timer_main(void *arg)
{
	struct xp_parking *k = arg;
	pthread_mutex_lock(&k->mu);
	while (!k->stop) {
		int64_t now = xp_ctl_now();
		while (k->nheap && k->heap[0]->deadline <= now)
			unpark(k, k->heap[0], XP_PARK_EXPIRED);
		if (!k->nheap) {
			pthread_cond_wait(&k->cv, &k->mu);
			continue;
		}
		int64_t at = k->heap[0]->deadline;
		struct timespec ts = { (time_t)(at / 1000), (long)(at % 1000) * 1000000 };
		pthread_cond_timedwait(&k->cv, &k->mu, &ts);
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

int xp_park_start(struct xp_ctl *ctl, struct xp_err *err)
{
	struct xp_parking *k = XNEW(struct xp_parking);
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cv, NULL);
	int rc = pthread_create(&k->timer, NULL, timer_main, k);
	if (rc != 0) {
		pthread_mutex_destroy(&k->mu);
		pthread_cond_destroy(&k->cv);
		free(k);
		return xp_errf(err, -rc, "cannot start the long-poll timer: %s", strerror(rc));
	}
	k->timer_started = 1;
	__atomic_store_n(&ctl->parking, k, __ATOMIC_RELEASE); /* the owner may wake already */
	return 0;
}

void xp_park_stop(struct xp_ctl *ctl)
{
	struct xp_parking *k = ctl->parking;
	if (!k)
		return;
	pthread_mutex_lock(&k->mu);
	k->stop = 1;
	for (size_t b = 0; b < BUCKETS; b++)
		while (k->bucket[b])
			unpark(k, k->bucket[b], XP_PARK_STOPPED);
	pthread_cond_signal(&k->cv);
	pthread_mutex_unlock(&k->mu);
}

void xp_park_destroy(struct xp_ctl *ctl)
{
	struct xp_parking *k = ctl->parking;
	if (!k)
		return;
	xp_park_stop(ctl);
	if (k->timer_started)
		pthread_join(k->timer, NULL);
	pthread_mutex_destroy(&k->mu);
	pthread_cond_destroy(&k->cv);
	free(k->heap);
	free(k);
	ctl->parking = NULL;
}
