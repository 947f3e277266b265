/* dueheap: see dueheap.h */
#include "dueheap.h"

#include <stdlib.h>

static void swap(struct xp_due *a, struct xp_due *b)
{
	struct xp_due t = *a;
	*a = *b;
	*b = t;
}

void xp_due_push(struct xp_dueheap *q, struct xp_due e)
{
	xp_vec_push(&q->h, e);
	size_t i = q->h.n - 1;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (q->h.v[p].due <= q->h.v[i].due)
			break;
		swap(&q->h.v[p], &q->h.v[i]);
		i = p;
	}
}

struct xp_due xp_due_pop(struct xp_dueheap *q)
{
	struct xp_due top = q->h.v[0];
	q->h.v[0] = q->h.v[--q->h.n];
	size_t i = 0, n = q->h.n;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && q->h.v[l].due < q->h.v[m].due)
			m = l;
		if (r < n && q->h.v[r].due < q->h.v[m].due)
			m = r;
		if (m == i)
			break;
		swap(&q->h.v[m], &q->h.v[i]);
		i = m;
	}
	return top;
}

void xp_due_free(struct xp_dueheap *q)
{
	xp_vec_free(&q->h);
}
