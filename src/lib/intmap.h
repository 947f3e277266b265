/*
 * intmap: an open-addressing hash map from uint64 keys to pointers.
 * Key 0 is reserved (means empty). Deletion uses backward-shift, so there
 * are no tombstones. The map owns nothing but its table.
 */
#ifndef XP_INTMAP_H
#define XP_INTMAP_H

#include <stddef.h>
#include <stdint.h>

struct xp_intmap {
	uint64_t *keys;
	void **vals;
	size_t n, cap; /* cap a power of two, or 0 */
};

void xp_intmap_init(struct xp_intmap *m);
void xp_intmap_free(struct xp_intmap *m);
void *xp_intmap_get(const struct xp_intmap *m, uint64_t key);
/* Insert or replace; key must not be 0. */
void xp_intmap_put(struct xp_intmap *m, uint64_t key, void *val);
/* Remove; returns the old value or NULL. */
void *xp_intmap_del(struct xp_intmap *m, uint64_t key);

#endif
