/*
 * dueheap: a min-heap of timed events - a job's attempt due at a time. The
 * controller's emulated nodes (when a task ends) and the tenancy simulator
 * (when a job completes) both keep one. The heap owns its array.
 */
#ifndef XP_DUEHEAP_H
#define XP_DUEHEAP_H

#include <stddef.h>
#include <stdint.h>

#include "vec.h"

struct xp_due {
	int64_t due;
	uint64_t job;
	uint32_t attempt; /* an event of an earlier attempt is stale */
};

struct xp_dueheap {
	XP_VEC(struct xp_due) h;
};

void xp_due_push(struct xp_dueheap *q, struct xp_due e);
/* The earliest event; the heap must not be empty. */
struct xp_due xp_due_pop(struct xp_dueheap *q);
/* Is there an event due at or before t? */
static inline int xp_due_ready(const struct xp_dueheap *q, int64_t t)
{
	return q->h.n && q->h.v[0].due <= t;
}
void xp_due_free(struct xp_dueheap *q);

#endif
