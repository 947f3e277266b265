/*
 * csv: a strict reader for comma-separated files with a header row.
 *
 * The whole file is read into memory (bounded by XP_CSV_MAX_BYTES); rows
 * are split in place. Quoted fields ("a,b" and "" escapes) are accepted.
 * Blank lines are skipped. A row whose field count differs from the header
 * is an error naming the file and line. Field pointers stay valid until the
 * next call to xp_csv_next().
 */
#ifndef XP_CSV_H
#define XP_CSV_H

#include <stddef.h>

#include "err.h"

#define XP_CSV_MAX_BYTES  ((size_t)1 << 30)
#define XP_CSV_MAX_FIELDS 4096

struct xp_csv;

/* Read path and its header row. */
int xp_csv_open(const char *path, struct xp_csv **out, struct xp_err *err);
/* Same over a caller's buffer (copied); name is used in error text. */
int xp_csv_open_mem(const char *name, const char *buf, size_t len, struct xp_csv **out,
		    struct xp_err *err);
void xp_csv_close(struct xp_csv *c);

/* Index of a header column, or -1. */
int xp_csv_col(const struct xp_csv *c, const char *name);
/* Require columns; the error names the first missing one. */
int xp_csv_require(const struct xp_csv *c, const char *const *names, size_t n, struct xp_err *err);
size_t xp_csv_ncols(const struct xp_csv *c);
const char *xp_csv_colname(const struct xp_csv *c, size_t i);

/* Advance to the next row: 1 = a row, 0 = end of file, < 0 = error. */
int xp_csv_next(struct xp_csv *c, struct xp_err *err);
const char *xp_csv_field(const struct xp_csv *c, size_t i);
/* 1-based line number of the current row, and the file's name. */
size_t xp_csv_line(const struct xp_csv *c);
const char *xp_csv_name(const struct xp_csv *c);

#endif
