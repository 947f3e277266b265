/*
 * parse: strict conversions of text to numbers and quantities.
 *
 * Every function accepts the whole string or nothing: "12x", "", " 12" and
 * out-of-range values are rejected with XP_EINVAL or XP_ERANGE and *out is
 * left untouched. Callers add the file, line and field to the error.
 */
#ifndef XP_PARSE_H
#define XP_PARSE_H

#include <stdint.h>

int xp_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
int xp_parse_double(const char *s, double *out);

/* Unit families for xp_parse_qty; each names the unit of the result. */
enum xp_qty {
	XP_QTY_MEM_MIB,	   /* "80Gi", "80GiB", "40GB", "512Mi", plain number = MiB */
	XP_QTY_CPU_MILLI,  /* "4", "2.5", "500m" -> milli-cores */
	XP_QTY_BYTES_RATE, /* "600GB/s", "2TB/s", "900 GB/s" -> MB/s */
	XP_QTY_BITS_RATE,  /* "200Gbps", "100Gb/s", "400G" -> Mbit/s */
	XP_QTY_POWER_W,	   /* "400W", "0.7kW", plain number = W */
	XP_QTY_FLOPS,	   /* "312TFLOPS", "19.5T", "624TOPS" -> GFLOPS (or GOPS) */
};

/* Parse a number with an optional unit of the family; the result is in the
 * family's base unit. Negative values and non-finite numbers are rejected. */
int xp_parse_qty(const char *s, enum xp_qty kind, double *out);
/* A short description of the family's accepted forms, for error text. */
const char *xp_qty_hint(enum xp_qty kind);

/* Enum names in a table of n: the name of i ("?" out of range), and the
 * index of s (-1 if absent). */
const char *xp_enum_name(const char *const *names, int n, int i);
int xp_enum_parse(const char *const *names, int n, const char *s);

#endif
