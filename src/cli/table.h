/*
 * table: aligned text tables for the client verbs, in the kubectl style
 * (upper-case headers, columns left-aligned and three spaces apart, no
 * trailing blanks), and the human units their cells use.
 *
 * A table owns copies of its cells. Control characters in a cell (the
 * controller's text is not trusted to be tidy) print as '?', so a reply
 * cannot move the cursor or break a row in two.
 */
#ifndef XP_TABLE_H
#define XP_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../lib/strbuf.h"

struct xp_table;

/* A table with the given headers (NULL-ended). */
struct xp_table *xp_table_create(const char *const *headers);
/* NULL-safe. */
void xp_table_destroy(struct xp_table *t);
/* Append the next cell, left to right; after the last column the next cell
 * starts a new row. NULL or "" prints as "-". */
void xp_table_add(struct xp_table *t, const char *cell);
void xp_table_addf(struct xp_table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t xp_table_rows(const struct xp_table *t);
/* Render the header and every row, each line ending in '\n'. */
void xp_table_render(const struct xp_table *t, struct xp_sb *out);
void xp_table_print(const struct xp_table *t, FILE *f);

/* Units. out holds at least XP_UNIT_LEN bytes. */
#define XP_UNIT_LEN 32
/* CPU milli-cores: 8000 -> "8c", 500 -> "500m", 2500 -> "2500m", 0 -> "0". */
void xp_fmt_cpu(int64_t milli, char *out);
/* MiB: 2097152 -> "2Ti", 32768 -> "32Gi", 1536 -> "1.5Gi", 512 -> "512Mi". */
void xp_fmt_mib(int64_t mib, char *out);
/* An age or a duration in ms: "0s".."119s", "2m".."119m", "2h".."47h",
 * then days ("3d"); negative (clock skew) is "0s". */
void xp_fmt_age(int64_t ms, char *out);

#endif
