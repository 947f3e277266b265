/*
 * events: the last N events in memory, for long polls and server-sent
 * events. The owner adds an event when it journals a record (seq = the
 * record's); readers see only events up to the durable seq, so a client
 * never sees an event that a crash would take back. The ring is refilled
 * on start-up from replay, so sequence numbers resume across restarts;
 * an id older than the ring answers "gone" (the client lists and resumes).
 */
#include "ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../lib/strbuf.h"
#include "../lib/xalloc.h"

struct xp_events {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct xp_event *ring;
	size_t cap, n, head; /* head: index of the oldest */
	uint64_t durable;
	int stopped;
};

struct xp_events *xp_events_create(size_t cap)
{
	struct xp_events *e = XNEW(struct xp_events);
	e->cap = cap ? cap : 100000;
	e->ring = XNEWV(struct xp_event, e->cap);
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	return e;
}

void xp_events_destroy(struct xp_events *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->ring[(e->head + i) % e->cap].json);
	free(e->ring);
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	free(e);
}

void xp_events_add(struct xp_events *e, uint64_t seq, int64_t tenant, const char *type, char *json)
{
	pthread_mutex_lock(&e->mu);
	struct xp_event *slot;
	if (e->n == e->cap) {
		slot = &e->ring[e->head];
		free(slot->json);
		e->head = (e->head + 1) % e->cap;
		e->n--;
	}
	slot = &e->ring[(e->head + e->n) % e->cap];
	slot->seq = seq;
	slot->tenant = tenant;
	slot->json = json;
	snprintf(slot->type, sizeof(slot->type), "%s", type ? type : "");
	e->n++;
	pthread_mutex_unlock(&e->mu);
}

void xp_events_durable(struct xp_events *e, uint64_t seq)
{
	pthread_mutex_lock(&e->mu);
	if (seq > e->durable) {
		e->durable = seq;
		pthread_cond_broadcast(&e->cv);
	}
	pthread_mutex_unlock(&e->mu);
}

void xp_events_stop(struct xp_events *e)
{
	pthread_mutex_lock(&e->mu);
	e->stopped = 1;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

static int visible(const struct xp_event *ev, long tenant, int admin)
{
	return admin || ev->tenant == -1 || ev->tenant == tenant;
}

/* index (0..n) of the first event with seq > since; caller holds mu */
static size_t first_after(const struct xp_events *e, uint64_t since)
{
	size_t lo = 0, hi = e->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (e->ring[(e->head + mid) % e->cap].seq <= since)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int too_old(const struct xp_events *e, uint64_t since, uint64_t *oldest)
{
	/* events were dropped from the ring after since */
	if (e->n && e->ring[e->head].seq > since + 1 && e->ring[e->head].seq > 1 &&
	    e->n == e->cap) {
		*oldest = e->ring[e->head].seq;
		return 1;
	}
	return 0;
}

static void deadline(struct timespec *ts, int wait_ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += wait_ms / 1000;
	ts->tv_nsec += (long)(wait_ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

char *xp_events_read(struct xp_events *e, uint64_t since, size_t limit, int wait_ms, long tenant,
		     int admin, uint64_t *next, uint64_t *oldest)
{
	struct timespec ts;
	struct xp_sb sb;
	size_t found = 0;

	deadline(&ts, wait_ms);
	xp_sb_init(&sb);
	xp_sb_putc(&sb, '[');
	pthread_mutex_lock(&e->mu);
	if (too_old(e, since, oldest)) {
		pthread_mutex_unlock(&e->mu);
		xp_sb_free(&sb);
		return NULL;
	}
	*next = since;
	for (;;) {
		for (size_t i = first_after(e, since); i < e->n && found < limit; i++) {
			const struct xp_event *ev = &e->ring[(e->head + i) % e->cap];
			if (ev->seq > e->durable)
				break;
			*next = ev->seq;
			if (!visible(ev, tenant, admin))
				continue;
			if (found++)
				xp_sb_putc(&sb, ',');
			xp_sb_puts(&sb, ev->json);
		}
		/* skip over invisible events too, so the cursor advances */
		if (found || wait_ms <= 0 || e->stopped)
			break;
		since = *next;
		if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) != 0)
			break;
	}
	pthread_mutex_unlock(&e->mu);
	xp_sb_putc(&sb, ']');
	return xp_sb_steal(&sb);
}

char *xp_events_next_sse(struct xp_events *e, uint64_t *since, int wait_ms, long tenant, int admin,
			 int *stopped, int *gone)
{
	struct timespec ts;
	char *frame = NULL;
	uint64_t oldest;

	deadline(&ts, wait_ms);
	*stopped = *gone = 0;
	pthread_mutex_lock(&e->mu);
	if (too_old(e, *since, &oldest)) {
		*gone = 1;
		pthread_mutex_unlock(&e->mu);
		return NULL;
	}
	for (;;) {
		for (size_t i = first_after(e, *since); i < e->n; i++) {
			const struct xp_event *ev = &e->ring[(e->head + i) % e->cap];
			if (ev->seq > e->durable)
				break;
			*since = ev->seq;
			if (!visible(ev, tenant, admin))
				continue;
			struct xp_sb sb;
			xp_sb_init(&sb);
			xp_sb_printf(&sb, "id: %llu\nevent: %s\ndata: %s\n\n",
				     (unsigned long long)ev->seq, ev->type, ev->json);
			frame = xp_sb_steal(&sb);
			break;
		}
		if (frame || e->stopped)
			break;
		if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) != 0)
			break;
	}
	*stopped = e->stopped;
	pthread_mutex_unlock(&e->mu);
	return frame;
}
