/*
 * strtab: string interning. Each distinct string gets a small id (1, 2, ...);
 * id 0 means "no string". Ids are dense, so callers can index arrays or
 * bitmasks by them. The table owns its copies of the strings.
 */
#ifndef XP_STRTAB_H
#define XP_STRTAB_H

#include <stddef.h>
#include <stdint.h>

typedef uint32_t xp_sym;

struct xp_strtab;

struct xp_strtab *xp_strtab_create(void);
void xp_strtab_destroy(struct xp_strtab *t);
/* Id of s, adding it when absent. */
xp_sym xp_strtab_intern(struct xp_strtab *t, const char *s);
xp_sym xp_strtab_intern_n(struct xp_strtab *t, const char *s, size_t len);
/* Id of s, or 0 when absent. */
xp_sym xp_strtab_find(const struct xp_strtab *t, const char *s);
/* String of an id; "" for 0 or an unknown id. */
const char *xp_strtab_str(const struct xp_strtab *t, xp_sym id);
/* Number of ids handed out; valid ids are 1..count. */
size_t xp_strtab_count(const struct xp_strtab *t);

#endif
