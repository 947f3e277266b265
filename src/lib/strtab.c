/* strtab: string interning with an open-addressing hash (see strtab.h). */
#include "strtab.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "xalloc.h"

struct xp_strtab {
	char **strs; /* strs[id], strs[0] unused */
	size_t n, cap;
	xp_sym *slots; /* hash slots holding ids, 0 = empty */
	size_t nslots;
};

static uint64_t hash(const char *s, size_t len)
{
	return xp_hash_bytes(s, len);
}

struct xp_strtab *xp_strtab_create(void)
{
	struct xp_strtab *t = XNEW(struct xp_strtab);
	t->cap = 16;
	t->strs = XNEWV(char *, t->cap);
	t->n = 1;
	t->nslots = 32;
	t->slots = XNEWV(xp_sym, t->nslots);
	return t;
}

void xp_strtab_destroy(struct xp_strtab *t)
{
	if (!t)
		return;
	for (size_t i = 1; i < t->n; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->slots);
	free(t);
}

static size_t lookup(const struct xp_strtab *t, const char *s, size_t len)
{
	size_t mask = t->nslots - 1;
	size_t i = hash(s, len) & mask;
	for (;;) {
		xp_sym id = t->slots[i];
		if (!id)
			return i;
		const char *c = t->strs[id];
		if (strncmp(c, s, len) == 0 && c[len] == '\0')
			return i;
		i = (i + 1) & mask;
	}
}

static void grow(struct xp_strtab *t)
{
	size_t ns = t->nslots * 2;
	xp_sym *slots = XNEWV(xp_sym, ns);
	for (size_t id = 1; id < t->n; id++) {
		size_t i = hash(t->strs[id], strlen(t->strs[id])) & (ns - 1);
		while (slots[i])
			i = (i + 1) & (ns - 1);
		slots[i] = (xp_sym)id;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = ns;
}

xp_sym xp_strtab_intern_n(struct xp_strtab *t, const char *s, size_t len)
{
	size_t i = lookup(t, s, len);
	if (t->slots[i])
		return t->slots[i];
	if (t->n == t->cap) {
		t->cap *= 2;
		t->strs = xreallocarray(t->strs, t->cap, sizeof(char *));
	}
	xp_sym id = (xp_sym)t->n++;
	t->strs[id] = xstrndup(s, len);
	t->slots[i] = id;
	if (t->n * 2 > t->nslots)
		grow(t);
	return id;
}

xp_sym xp_strtab_intern(struct xp_strtab *t, const char *s)
{
	return xp_strtab_intern_n(t, s, strlen(s));
}

xp_sym xp_strtab_find(const struct xp_strtab *t, const char *s)
{
	return t->slots[lookup(t, s, strlen(s))];
}

const char *xp_strtab_str(const struct xp_strtab *t, xp_sym id)
{
	if (id == 0 || id >= t->n)
		return "";
	return t->strs[id];
}

size_t xp_strtab_count(const struct xp_strtab *t)
{
	return t->n - 1;
}
