/* intmap: uint64 -> pointer hash map with linear probing (see intmap.h). */
#include "intmap.h"

#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

static size_t slot_of(uint64_t k, size_t mask)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (size_t)k & mask;
}

void xp_intmap_init(struct xp_intmap *m)
{
	memset(m, 0, sizeof(*m));
}

void xp_intmap_free(struct xp_intmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

void *xp_intmap_get(const struct xp_intmap *m, uint64_t key)
{
	if (!m->cap || !key)
		return NULL;
	size_t mask = m->cap - 1, i = slot_of(key, mask);
	while (m->keys[i]) {
		if (m->keys[i] == key)
			return m->vals[i];
		i = (i + 1) & mask;
	}
	return NULL;
}

static void grow(struct xp_intmap *m)
{
	size_t oc = m->cap, nc = oc ? oc * 2 : 64;
	uint64_t *ok = m->keys;
	void **ov = m->vals;
	m->keys = XNEWV(uint64_t, nc);
	m->vals = XNEWV(void *, nc);
	m->cap = nc;
	m->n = 0;
	for (size_t i = 0; i < oc; i++)
		if (ok[i])
			xp_intmap_put(m, ok[i], ov[i]);
	free(ok);
	free(ov);
}

void xp_intmap_put(struct xp_intmap *m, uint64_t key, void *val)
{
	if ((m->n + 1) * 4 > m->cap * 3)
		grow(m);
	size_t mask = m->cap - 1, i = slot_of(key, mask);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & mask;
	if (!m->keys[i]) {
		m->keys[i] = key;
		m->n++;
	}
	m->vals[i] = val;
}

void *xp_intmap_del(struct xp_intmap *m, uint64_t key)
{
	if (!m->cap || !key)
		return NULL;
	size_t mask = m->cap - 1, i = slot_of(key, mask);
	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & mask;
	if (!m->keys[i])
		return NULL;
	void *old = m->vals[i];
	m->keys[i] = 0;
	m->n--;
	/* backward shift: move later entries of the cluster into the hole */
	size_t j = i;
	for (;;) {
		j = (j + 1) & mask;
		if (!m->keys[j])
			break;
		size_t home = slot_of(m->keys[j], mask);
		/* can the entry at j move to i? yes unless home lies in (i, j] */
		int between = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (between)
			continue;
		m->keys[i] = m->keys[j];
		m->vals[i] = m->vals[j];
		m->keys[j] = 0;
		i = j;
	}
	return old;
}
