/*
 * test_lib: unit tests of the util layer (src/lib) against its headers.
 *
 *  - rng: determinism per seed, xp_rng_below uniform (chi-square bounds far
 *    in the tail, fixed seeds) and in range for awkward n, doubles in [0,1),
 *    perm a permutation with uniform positions, shuffle of wide elements;
 *  - parse: accept/reject tables for xp_parse_i64, xp_parse_double and
 *    xp_parse_qty, and *out untouched on failure;
 *  - csv: quoting, blank lines, CRLF, field-count errors naming the line,
 *    missing and duplicate columns, NUL bytes, the field limit, files;
 *  - strtab: interning, lookup, dense ids, growth past 10k strings;
 *  - crc32c: the check value and RFC 3720's vectors, pieces chained, and
 *    the table against a bit-by-bit reference on random buffers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "lib/crc32c.h"
#include "lib/csv.h"
#include "lib/dueheap.h"
#include "lib/fileio.h"
#include "lib/err.h"
#include "lib/parse.h"
#include "lib/rng.h"
#include "lib/strtab.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------------ */
/* rng */

/* A bound on chi-square with df degrees of freedom that a correct generator
 * exceeds with negligible probability (mean df, sd sqrt(2 df)). */
static double chi2_bound(double df)
{
	return df + 7.0 * sqrt(2.0 * df) + 10.0;
}

static void test_rng_determinism(void **st)
{
	(void)st;
	struct xp_rng a, b, c;
	xp_rng_seed(&a, 42);
	xp_rng_seed(&b, 42);
	xp_rng_seed(&c, 43);
	int differ = 0;
	for (int i = 0; i < 1000; i++) {
		uint64_t x = xp_rng_next(&a), y = xp_rng_next(&b), z = xp_rng_next(&c);
		assert_true(x == y);
		differ += x != z;
	}
	assert_true(differ > 990);
	/* below, double and perm replay too */
	xp_rng_seed(&a, 7);
	xp_rng_seed(&b, 7);
	for (int i = 0; i < 100; i++) {
		assert_true(xp_rng_below(&a, 1000 + (uint64_t)i) ==
			    xp_rng_below(&b, 1000 + (uint64_t)i));
		assert_true(xp_rng_double(&a) == xp_rng_double(&b));
	}
	uint32_t p[50], q[50];
	xp_rng_perm(&a, p, 50);
	xp_rng_perm(&b, q, 50);
	assert_memory_equal(p, q, sizeof(p));
	/* seed 0 is a valid seed, not an all-zero (stuck) state */
	xp_rng_seed(&a, 0);
	uint64_t or = 0;
	for (int i = 0; i < 4; i++)
		or |= xp_rng_next(&a);
	assert_true(or != 0);
}

static void test_rng_below_uniform(void **st)
{
	(void)st;
	static const uint64_t ns[] = { 2, 3, 5, 7, 10, 16, 100, 1000 };
	struct xp_rng g;
	xp_rng_seed(&g, 2024);
	for (size_t t = 0; t < NELEM(ns); t++) {
		uint64_t n = ns[t];
		size_t draws = (size_t)n * 400;
		unsigned *cnt = calloc(n, sizeof(*cnt));
		for (size_t i = 0; i < draws; i++) {
			uint64_t x = xp_rng_below(&g, n);
			assert_true(x < n);
			cnt[x]++;
		}
		double e = (double)draws / (double)n, x2 = 0;
		for (uint64_t i = 0; i < n; i++)
			x2 += ((double)cnt[i] - e) * ((double)cnt[i] - e) / e;
		if (x2 > chi2_bound((double)n - 1))
			fprintf(stderr, "xp_rng_below(%llu): chi2 %.1f\n", (unsigned long long)n,
				x2);
		assert_true(x2 <= chi2_bound((double)n - 1));
		free(cnt);
	}
	/* n = 1 is always 0 */
	for (int i = 0; i < 100; i++)
		assert_true(xp_rng_below(&g, 1) == 0);
}

/* For n = 3 * 2^62 a modulo reduction of 64 random bits would put the
 * lowest third at probability 1/2; an unbiased draw puts it at 1/3. */
static void test_rng_below_large_n(void **st)
{
	(void)st;
	struct xp_rng g;
	xp_rng_seed(&g, 99);
	const uint64_t n = 3ULL << 62, third = 1ULL << 62;
	const int draws = 60000;
	int low = 0;
	for (int i = 0; i < draws; i++) {
		uint64_t x = xp_rng_below(&g, n);
		assert_true(x < n);
		low += x < third;
	}
	double sd = sqrt(draws * (1.0 / 3) * (2.0 / 3));
	assert_true(fabs(low - draws / 3.0) < 6 * sd);
	/* the extremes stay in range */
	for (int i = 0; i < 1000; i++) {
		assert_true(xp_rng_below(&g, UINT64_MAX) < UINT64_MAX);
		assert_true(xp_rng_below(&g, (1ULL << 63) + 1) < (1ULL << 63) + 1);
	}
}

static void test_rng_double(void **st)
{
	(void)st;
	struct xp_rng g;
	xp_rng_seed(&g, 5);
	double sum = 0;
	unsigned bins[10] = { 0 };
	const int draws = 100000;
	for (int i = 0; i < draws; i++) {
		double x = xp_rng_double(&g);
		assert_true(x >= 0.0 && x < 1.0);
		sum += x;
		bins[(int)(x * 10)]++;
	}
	assert_true(fabs(sum / draws - 0.5) < 0.01);
	double x2 = 0, e = draws / 10.0;
	for (int i = 0; i < 10; i++)
		x2 += (bins[i] - e) * (bins[i] - e) / e;
	assert_true(x2 <= chi2_bound(9));
}

static void test_rng_perm(void **st)
{
	(void)st;
	static const size_t ns[] = { 0, 1, 2, 3, 10, 1000, 4099 };
	struct xp_rng g;
	xp_rng_seed(&g, 11);
	for (size_t t = 0; t < NELEM(ns); t++) {
		size_t n = ns[t];
		uint32_t *p = malloc((n + 1) * sizeof(*p));
		unsigned char *seen = calloc(n + 1, 1);
		xp_rng_perm(&g, p, n);
		for (size_t i = 0; i < n; i++) {
			assert_true(p[i] < n);
			assert_false(seen[p[i]]);
			seen[p[i]] = 1;
		}
		free(seen);
		free(p);
	}
	/* all 24 orders of 4 elements about equally often */
	unsigned cnt[4 * 4 * 4 * 4] = { 0 };
	const int draws = 24000;
	for (int i = 0; i < draws; i++) {
		uint32_t p[4];
		xp_rng_perm(&g, p, 4);
		cnt[((p[0] * 4 + p[1]) * 4 + p[2]) * 4 + p[3]]++;
	}
	double x2 = 0, e = draws / 24.0;
	int orders = 0;
	for (size_t i = 0; i < NELEM(cnt); i++)
		if (cnt[i]) {
			orders++;
			x2 += (cnt[i] - e) * (cnt[i] - e) / e;
		}
	assert_int_equal(orders, 24);
	assert_true(x2 <= chi2_bound(23));
}

/* Elements wider than the shuffle's 256-byte bounce buffer keep their bytes. */
static void test_rng_shuffle_wide(void **st)
{
	(void)st;
	struct wide {
		uint32_t id;
		unsigned char pad[600];
	};
	enum { N = 37 };
	struct wide *w = calloc(N, sizeof(*w));
	for (uint32_t i = 0; i < N; i++) {
		w[i].id = i;
		memset(w[i].pad, (int)(i * 7 + 1), sizeof(w[i].pad));
	}
	struct xp_rng g;
	xp_rng_seed(&g, 3);
	xp_rng_shuffle(&g, w, N, sizeof(*w));
	unsigned seen[N] = { 0 };
	int moved = 0;
	for (uint32_t i = 0; i < N; i++) {
		uint32_t id = w[i].id;
		assert_true(id < N);
		seen[id]++;
		moved += id != i;
		for (size_t k = 0; k < sizeof(w[i].pad); k++)
			assert_int_equal(w[i].pad[k], (unsigned char)(id * 7 + 1));
	}
	for (int i = 0; i < N; i++)
		assert_int_equal(seen[i], 1);
	assert_true(moved > 0);
	xp_rng_shuffle(&g, w, 1, sizeof(*w)); /* n < 2: nothing to do */
	xp_rng_shuffle(&g, w, 0, sizeof(*w));
	free(w);
}

/* ------------------------------------------------------------------------ */
/* parse */

static void test_parse_i64(void **st)
{
	(void)st;
	static const struct {
		const char *s;
		int64_t min, max;
		int rc;
		int64_t v;
	} t[] = {
		{ "0", 0, 10, 0, 0 },
		{ "10", 0, 10, 0, 10 },
		{ "11", 0, 10, XP_ERANGE, 0 },
		{ "-5", 0, 10, XP_ERANGE, 0 },
		{ "-5", -10, 10, 0, -5 },
		{ "007", 0, 100, 0, 7 },
		{ "9223372036854775807", INT64_MIN, INT64_MAX, 0, INT64_MAX },
		{ "-9223372036854775808", INT64_MIN, INT64_MAX, 0, INT64_MIN },
		{ "9223372036854775808", INT64_MIN, INT64_MAX, XP_ERANGE, 0 },
		{ "99999999999999999999999", INT64_MIN, INT64_MAX, XP_ERANGE, 0 },
		{ "", 0, 10, XP_EINVAL, 0 },
		{ " 1", 0, 10, XP_EINVAL, 0 },
		{ "1 ", 0, 10, XP_EINVAL, 0 },
		{ "12x", 0, 100, XP_EINVAL, 0 },
		{ "0x10", 0, 100, XP_EINVAL, 0 },
		{ "2.5", 0, 10, XP_EINVAL, 0 },
		{ "1e3", 0, 10000, XP_EINVAL, 0 },
		{ "-", -10, 10, XP_EINVAL, 0 },
		{ "\t3", 0, 10, XP_EINVAL, 0 },
		{ "80Gi", 0, 1000, XP_EINVAL, 0 },
	};
	for (size_t i = 0; i < NELEM(t); i++) {
		int64_t v = 12345;
		int rc = xp_parse_i64(t[i].s, t[i].min, t[i].max, &v);
		if (rc != t[i].rc)
			fprintf(stderr, "xp_parse_i64(\"%s\") = %d, expected %d\n", t[i].s, rc,
				t[i].rc);
		assert_int_equal(rc, t[i].rc);
		assert_true(v == (rc == 0 ? t[i].v : 12345));
	}
	int64_t v = 1;
	assert_int_equal(xp_parse_i64(NULL, 0, 10, &v), XP_EINVAL);
	assert_true(v == 1);
}

static void test_parse_double(void **st)
{
	(void)st;
	static const struct {
		const char *s;
		int rc;
		double v;
	} t[] = {
		{ "2.5", 0, 2.5 },
		{ "0", 0, 0 },
		{ "-5", 0, -5 },
		{ ".5", 0, 0.5 },
		{ "-.5", 0, -0.5 },
		{ "1e3", 0, 1000 },
		{ "1.5E-3", 0, 0.0015 },
		{ "1e999", XP_ERANGE, 0 },
		{ "-1e999", XP_ERANGE, 0 },
		{ "", XP_EINVAL, 0 },
		{ " 1", XP_EINVAL, 0 },
		{ "1 ", XP_EINVAL, 0 },
		{ "+1", XP_EINVAL, 0 },
		{ "-", XP_EINVAL, 0 },
		{ ".", XP_EINVAL, 0 },
		{ "inf", XP_EINVAL, 0 },
		{ "nan", XP_EINVAL, 0 },
		{ "-inf", XP_EINVAL, 0 },
		{ "1.2.3", XP_EINVAL, 0 },
		{ "2.5x", XP_EINVAL, 0 },
		{ "80Gi", XP_EINVAL, 0 },
	};
	for (size_t i = 0; i < NELEM(t); i++) {
		double v = 777;
		int rc = xp_parse_double(t[i].s, &v);
		if (rc != t[i].rc)
			fprintf(stderr, "xp_parse_double(\"%s\") = %d, expected %d\n", t[i].s, rc,
				t[i].rc);
		assert_int_equal(rc, t[i].rc);
		assert_true(v == (rc == 0 ? t[i].v : 777));
	}
	double v = 1;
	assert_int_equal(xp_parse_double(NULL, &v), XP_EINVAL);
}

static void test_parse_qty(void **st)
{
	(void)st;
	static const struct {
		const char *s;
		enum xp_qty kind;
		int ok;
		double v;
	} t[] = {
		/* memory -> MiB */
		{ "81920", XP_QTY_MEM_MIB, 1, 81920 },
		{ "80Gi", XP_QTY_MEM_MIB, 1, 81920 },
		{ "80GiB", XP_QTY_MEM_MIB, 1, 81920 },
		{ "512Mi", XP_QTY_MEM_MIB, 1, 512 },
		{ "1Ti", XP_QTY_MEM_MIB, 1, 1048576 },
		{ "2048Ki", XP_QTY_MEM_MIB, 1, 2 },
		{ "40GB", XP_QTY_MEM_MIB, 1, 40e9 / 1048576 },
		{ "40G", XP_QTY_MEM_MIB, 1, 40e9 / 1048576 },
		{ "1.5Gi", XP_QTY_MEM_MIB, 1, 1536 },
		{ "80 Gi", XP_QTY_MEM_MIB, 1, 81920 },
		{ "80gi", XP_QTY_MEM_MIB, 0, 0 },
		{ "80Gi ", XP_QTY_MEM_MIB, 0, 0 },
		{ "80  Gi", XP_QTY_MEM_MIB, 0, 0 },
		{ "Gi", XP_QTY_MEM_MIB, 0, 0 },
		{ "-5", XP_QTY_MEM_MIB, 0, 0 },
		{ "-5Gi", XP_QTY_MEM_MIB, 0, 0 },
		{ "", XP_QTY_MEM_MIB, 0, 0 },
		{ " 1", XP_QTY_MEM_MIB, 0, 0 },
		{ "1e999", XP_QTY_MEM_MIB, 0, 0 },
		{ "80Xi", XP_QTY_MEM_MIB, 0, 0 },
		{ "500m", XP_QTY_MEM_MIB, 0, 0 },
		/* CPU -> milli-cores */
		{ "4", XP_QTY_CPU_MILLI, 1, 4000 },
		{ "2.5", XP_QTY_CPU_MILLI, 1, 2500 },
		{ "500m", XP_QTY_CPU_MILLI, 1, 500 },
		{ "0.5m", XP_QTY_CPU_MILLI, 1, 0.5 },
		{ "500M", XP_QTY_CPU_MILLI, 0, 0 },
		{ "4 cores", XP_QTY_CPU_MILLI, 0, 0 },
		{ "-1", XP_QTY_CPU_MILLI, 0, 0 },
		/* byte rates -> MB/s */
		{ "600GB/s", XP_QTY_BYTES_RATE, 1, 600000 },
		{ "900 GB/s", XP_QTY_BYTES_RATE, 1, 900000 },
		{ "2TB/s", XP_QTY_BYTES_RATE, 1, 2e6 },
		{ "100MB/s", XP_QTY_BYTES_RATE, 1, 100 },
		{ "600", XP_QTY_BYTES_RATE, 0, 0 },
		{ "600GB", XP_QTY_BYTES_RATE, 0, 0 },
		{ "200Gbps", XP_QTY_BYTES_RATE, 0, 0 },
		/* bit rates -> Mbit/s */
		{ "200Gbps", XP_QTY_BITS_RATE, 1, 200000 },
		{ "100Gb/s", XP_QTY_BITS_RATE, 1, 100000 },
		{ "400G", XP_QTY_BITS_RATE, 1, 400000 },
		{ "1.6Tbps", XP_QTY_BITS_RATE, 1, 1.6e6 },
		{ "600GB/s", XP_QTY_BITS_RATE, 0, 0 },
		{ "200", XP_QTY_BITS_RATE, 0, 0 },
		/* power -> W */
		{ "400W", XP_QTY_POWER_W, 1, 400 },
		{ "0.7kW", XP_QTY_POWER_W, 1, 700 },
		{ "350", XP_QTY_POWER_W, 1, 350 },
		{ "400w", XP_QTY_POWER_W, 0, 0 },
		/* throughput -> GFLOPS */
		{ "312TFLOPS", XP_QTY_FLOPS, 1, 312000 },
		{ "19.5T", XP_QTY_FLOPS, 1, 19500 },
		{ "624TOPS", XP_QTY_FLOPS, 1, 624000 },
		{ "1PFLOPS", XP_QTY_FLOPS, 1, 1e6 },
		{ "312", XP_QTY_FLOPS, 0, 0 },
	};
	for (size_t i = 0; i < NELEM(t); i++) {
		double v = -1;
		int rc = xp_parse_qty(t[i].s, t[i].kind, &v);
		if ((rc == 0) != t[i].ok)
			fprintf(stderr, "xp_parse_qty(\"%s\", %d) = %d, expected %s\n", t[i].s,
				t[i].kind, rc, t[i].ok ? "success" : "an error");
		assert_int_equal(rc == 0, t[i].ok);
		if (t[i].ok)
			assert_true(fabs(v - t[i].v) <= 1e-9 * fabs(t[i].v));
		else {
			assert_true(rc < 0);
			assert_true(v == -1);
		}
	}
	for (int k = XP_QTY_MEM_MIB; k <= XP_QTY_FLOPS; k++) {
		const char *h = xp_qty_hint((enum xp_qty)k);
		assert_non_null(h);
		assert_true(strlen(h) > 0);
	}
}

/* Strictness: every parser takes decimal text only. strtoll(..., 10) makes
 * xp_parse_i64 reject "0x10"; the double and quantity parsers must agree
 * (a memory of "0x10" or "0x1p4Gi" is a typo, not 16 MiB). */
static void test_parse_rejects_hex(void **st)
{
	(void)st;
	static const char *const bad[] = { "0x10", "0X1A", "0x1p4" };
	for (size_t i = 0; i < NELEM(bad); i++) {
		int64_t iv = 1;
		double dv = -1, qv = -1;
		int ri = xp_parse_i64(bad[i], 0, 1000, &iv);
		int rd = xp_parse_double(bad[i], &dv);
		int rq = xp_parse_qty(bad[i], XP_QTY_MEM_MIB, &qv);
		if (ri == 0 || rd == 0 || rq == 0)
			fprintf(stderr,
				"\"%s\": i64 rc %d (%lld), double rc %d (%g), qty rc %d (%g)\n",
				bad[i], ri, (long long)iv, rd, dv, rq, qv);
		assert_true(ri < 0);
		assert_true(rd < 0);
		assert_true(rq < 0);
	}
	double qv = -1;
	assert_true(xp_parse_qty("0x1p4Gi", XP_QTY_MEM_MIB, &qv) < 0);
}

/* ------------------------------------------------------------------------ */
/* csv */

static struct xp_csv *csv_ok(const char *text)
{
	struct xp_csv *c = NULL;
	struct xp_err err;
	memset(&err, 0, sizeof(err));
	int rc = xp_csv_open_mem("t.csv", text, strlen(text), &c, &err);
	if (rc != 0)
		fprintf(stderr, "csv open: %s\n", err.text);
	assert_int_equal(rc, 0);
	assert_non_null(c);
	return c;
}

/* Open (or read until) an error; returns its text. */
static const char *csv_err(const char *text, size_t len, int *code)
{
	static struct xp_err err;
	memset(&err, 0, sizeof(err));
	struct xp_csv *c = NULL;
	int rc = xp_csv_open_mem("t.csv", text, len, &c, &err);
	if (rc == 0) {
		while ((rc = xp_csv_next(c, &err)) > 0)
			;
		xp_csv_close(c);
	}
	assert_true(rc < 0);
	if (code)
		*code = rc;
	return err.text;
}

static void expect_row(struct xp_csv *c, size_t line, const char *const *f, size_t n)
{
	struct xp_err err;
	int rc = xp_csv_next(c, &err);
	if (rc != 1)
		fprintf(stderr, "csv row at line %zu: rc %d %s\n", line, rc,
			rc < 0 ? err.text : "");
	assert_int_equal(rc, 1);
	assert_int_equal(xp_csv_line(c), line);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(xp_csv_field(c, i), f[i]);
	assert_string_equal(xp_csv_field(c, n), ""); /* past the end */
}

static void expect_end(struct xp_csv *c)
{
	struct xp_err err;
	assert_int_equal(xp_csv_next(c, &err), 0);
	assert_int_equal(xp_csv_next(c, &err), 0);
}

static void test_csv_basic(void **st)
{
	(void)st;
	struct xp_csv *c = csv_ok("sn,cpu_milli,model\nn1,64000,V100M16\nn2,32000,\n,,T4");
	assert_int_equal(xp_csv_ncols(c), 3);
	assert_string_equal(xp_csv_colname(c, 1), "cpu_milli");
	assert_string_equal(xp_csv_colname(c, 3), "");
	assert_int_equal(xp_csv_col(c, "model"), 2);
	assert_int_equal(xp_csv_col(c, "gpu"), -1);
	assert_int_equal(xp_csv_col(c, "Model"), -1);
	assert_string_equal(xp_csv_name(c), "t.csv");
	expect_row(c, 2, (const char *const[]){ "n1", "64000", "V100M16" }, 3);
	expect_row(c, 3, (const char *const[]){ "n2", "32000", "" }, 3);
	expect_row(c, 4, (const char *const[]){ "", "", "T4" }, 3); /* no final newline */
	expect_end(c);
	xp_csv_close(c);
	xp_csv_close(NULL);
}

static void test_csv_quoted(void **st)
{
	(void)st;
	struct xp_csv *c = csv_ok("a,b\n"
				  "\"x,y\",\"he said \"\"hi\"\"\"\n"
				  "\"multi\nline\",\"\"\n"
				  "plain,\"q\"\n");
	expect_row(c, 2, (const char *const[]){ "x,y", "he said \"hi\"" }, 2);
	expect_row(c, 3, (const char *const[]){ "multi\nline", "" }, 2);
	expect_row(c, 5, (const char *const[]){ "plain", "q" },
		   2); /* line counts the embedded newline */
	expect_end(c);
	xp_csv_close(c);
	c = csv_ok("\"col,1\",\"col\"\"2\"\n1,2\n");
	assert_int_equal(xp_csv_col(c, "col,1"), 0);
	assert_int_equal(xp_csv_col(c, "col\"2"), 1);
	xp_csv_close(c);
	int code;
	const char *e = csv_err("a,b\n1,\"open\n", strlen("a,b\n1,\"open\n"), &code);
	assert_non_null(strstr(e, "t.csv:2"));
	assert_non_null(strstr(e, "unterminated"));
	e = csv_err("a,b\n1,\"x\"y\n", strlen("a,b\n1,\"x\"y\n"), &code);
	assert_non_null(strstr(e, "t.csv:2"));
	e = csv_err("a,b\n1,x\"y\n", strlen("a,b\n1,x\"y\n"), &code);
	assert_non_null(strstr(e, "t.csv:2"));
	assert_int_equal(code, XP_EINVAL);
}

static void test_csv_blank_lines_crlf(void **st)
{
	(void)st;
	struct xp_csv *c = csv_ok("\n\na,b\n\n1,2\n\r\n\n3,4\n\n");
	expect_row(c, 5, (const char *const[]){ "1", "2" }, 2);
	expect_row(c, 8, (const char *const[]){ "3", "4" }, 2);
	expect_end(c);
	xp_csv_close(c);
	c = csv_ok("a,b\r\n1,2\r\n\"x\r\ny\",z\r\n");
	assert_string_equal(xp_csv_colname(c, 1), "b");
	expect_row(c, 2, (const char *const[]){ "1", "2" }, 2);
	expect_row(c, 3, (const char *const[]){ "x\r\ny", "z" }, 2);
	expect_end(c);
	xp_csv_close(c);
	int code;
	const char *e = csv_err("a,b\r1,2\n", strlen("a,b\r1,2\n"), &code);
	assert_non_null(strstr(e, "carriage return"));
	/* a line of spaces is not blank: one field, so a field-count error */
	e = csv_err("a,b\n \n", strlen("a,b\n \n"), &code);
	assert_non_null(strstr(e, "t.csv:2"));
}

static void test_csv_field_counts(void **st)
{
	(void)st;
	int code;
	const char *e = csv_err("a,b,c\n1,2,3\n\n4,5\n", strlen("a,b,c\n1,2,3\n\n4,5\n"), &code);
	assert_int_equal(code, XP_EINVAL);
	assert_non_null(strstr(e, "t.csv:4"));
	assert_non_null(strstr(e, "expected 3 fields"));
	assert_non_null(strstr(e, "got 2"));
	e = csv_err("a,b\n1,2\n3,4,5\n", strlen("a,b\n1,2\n3,4,5\n"), &code);
	assert_non_null(strstr(e, "t.csv:3"));
	assert_non_null(strstr(e, "got 3"));
	/* a trailing comma is one more (empty) field */
	e = csv_err("a,b\n1,2,\n", strlen("a,b\n1,2,\n"), &code);
	assert_non_null(strstr(e, "t.csv:2"));
	/* the error is sticky only for that row: the reader can be closed */
	struct xp_csv *c = csv_ok("a\n1\n2,3\n4\n");
	struct xp_err err;
	assert_int_equal(xp_csv_next(c, &err), 1);
	assert_true(xp_csv_next(c, &err) < 0);
	xp_csv_close(c);
}

static void test_csv_columns(void **st)
{
	(void)st;
	struct xp_csv *c = csv_ok("sn,cpu_milli,memory_mib\n");
	struct xp_err err;
	static const char *const have[] = { "sn", "memory_mib" };
	static const char *const miss[] = { "sn", "gpu", "model" };
	assert_int_equal(xp_csv_require(c, have, 2, &err), 0);
	assert_int_equal(xp_csv_require(c, miss, 3, &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "'gpu'"));
	assert_null(strstr(err.text, "'model'"));
	expect_end(c); /* a header alone is a file without rows */
	xp_csv_close(c);
	int code;
	const char *e = csv_err("a,b,a\n1,2,3\n", strlen("a,b,a\n1,2,3\n"), &code);
	assert_int_equal(code, XP_EINVAL);
	assert_non_null(strstr(e, "duplicate"));
	assert_non_null(strstr(e, "'a'"));
	e = csv_err("\n\nx,y,y\n", strlen("\n\nx,y,y\n"), &code);
	assert_non_null(strstr(e, "t.csv:3"));
	e = csv_err("", strlen(""), &code);
	assert_non_null(strstr(e, "empty"));
	e = csv_err("\n\r\n\n", strlen("\n\r\n\n"), &code);
	assert_non_null(strstr(e, "empty"));
}

static void test_csv_nul_and_limits(void **st)
{
	(void)st;
	static const char nul[] = "a,b\n1,\0002\n";
	int code;
	const char *e = csv_err(nul, sizeof(nul) - 1, &code);
	assert_int_equal(code, XP_EINVAL);
	assert_non_null(strstr(e, "NUL"));
	/* XP_CSV_MAX_FIELDS fields are fine, one more is too many */
	size_t n = XP_CSV_MAX_FIELDS;
	char *hdr = malloc(8 * (n + 2) + 16);
	char *p = hdr;
	for (size_t i = 0; i < n; i++)
		p += sprintf(p, "%sc%zu", i ? "," : "", i);
	strcpy(p, "\n");
	struct xp_csv *c = csv_ok(hdr);
	assert_int_equal(xp_csv_ncols(c), n);
	xp_csv_close(c);
	sprintf(p, ",c%zu\n", n);
	e = csv_err(hdr, strlen(hdr), &code);
	assert_int_equal(code, XP_ETOOBIG);
	/* and in a row */
	char *body = malloc(2 * (n + 2) + 16);
	char *q = body;
	q += sprintf(q, "a\n");
	for (size_t i = 0; i <= n; i++)
		q += sprintf(q, "%s", i ? ",x" : "x");
	strcpy(q, "\n");
	e = csv_err(body, strlen(body), &code);
	assert_int_equal(code, XP_ETOOBIG);
	assert_non_null(strstr(e, "t.csv:2"));
	free(body);
	free(hdr);
}

static void test_csv_file(void **st)
{
	(void)st;
	char *path = xp_test_tmpfile(".csv", "sn,gpu\nn1,8\nn2,x\n");
	assert_non_null(path);
	struct xp_csv *c = NULL;
	struct xp_err err;
	assert_int_equal(xp_csv_open(path, &c, &err), 0);
	assert_string_equal(xp_csv_name(c), path);
	assert_int_equal(xp_csv_next(c, &err), 1);
	assert_string_equal(xp_csv_field(c, 1), "8");
	assert_int_equal(xp_csv_next(c, &err), 1);
	int64_t v;
	assert_int_equal(xp_parse_i64(xp_csv_field(c, 1), 0, 64, &v), XP_EINVAL);
	assert_int_equal(xp_csv_next(c, &err), 0);
	xp_csv_close(c);
	remove(path);
	free(path);
	/* a missing file: -errno, the path in the text */
	c = NULL;
	int rc = xp_csv_open("/nonexistent/xp/none.csv", &c, &err);
	assert_true(rc < 0 && rc > -1000);
	assert_null(c);
	assert_non_null(strstr(err.text, "/nonexistent/xp/none.csv"));
}

/* ------------------------------------------------------------------------ */
/* strtab */

static void test_strtab_basic(void **st)
{
	(void)st;
	struct xp_strtab *t = xp_strtab_create();
	assert_int_equal(xp_strtab_count(t), 0);
	assert_int_equal(xp_strtab_find(t, "a100"), 0);
	xp_sym a = xp_strtab_intern(t, "a100");
	xp_sym b = xp_strtab_intern(t, "h100");
	assert_int_equal(a, 1);
	assert_int_equal(b, 2);
	assert_int_equal(xp_strtab_intern(t, "a100"), a);
	assert_int_equal(xp_strtab_find(t, "h100"), b);
	assert_int_equal(xp_strtab_find(t, "A100"), 0);
	assert_int_equal(xp_strtab_find(t, "a10"), 0);
	assert_int_equal(xp_strtab_find(t, "a1000"), 0);
	assert_string_equal(xp_strtab_str(t, a), "a100");
	assert_string_equal(xp_strtab_str(t, 0), "");
	assert_string_equal(xp_strtab_str(t, 3), "");
	assert_string_equal(xp_strtab_str(t, 0xffffffffu), "");
	/* intern_n takes a prefix, equal to the whole-string id */
	assert_int_equal(xp_strtab_intern_n(t, "h100-sxm", 4), b);
	xp_sym c = xp_strtab_intern_n(t, "a100x", 5);
	assert_int_equal(c, 3);
	assert_string_equal(xp_strtab_str(t, c), "a100x");
	/* the empty string is a string, not "no string" */
	xp_sym e = xp_strtab_intern(t, "");
	assert_true(e != 0);
	assert_int_equal(xp_strtab_find(t, ""), e);
	assert_int_equal(xp_strtab_intern_n(t, "xyz", 0), e);
	assert_int_equal(xp_strtab_count(t), 4);
	/* the table owns its copies */
	char buf[16];
	strcpy(buf, "mutable");
	xp_sym m = xp_strtab_intern(t, buf);
	strcpy(buf, "changed");
	assert_string_equal(xp_strtab_str(t, m), "mutable");
	assert_int_equal(xp_strtab_find(t, "mutable"), m);
	xp_strtab_destroy(t);
	xp_strtab_destroy(NULL);
}

static void test_strtab_growth(void **st)
{
	(void)st;
	enum { N = 25000 };
	struct xp_strtab *t = xp_strtab_create();
	char s[32];
	for (unsigned i = 0; i < N; i++) {
		snprintf(s, sizeof(s), "s%u", i);
		assert_int_equal(xp_strtab_intern(t, s), i + 1); /* dense, in order */
		if (i % 1000 == 0) /* earlier ids survive the rehashes */
			for (unsigned j = 0; j <= i; j += 97) {
				snprintf(s, sizeof(s), "s%u", j);
				assert_int_equal(xp_strtab_find(t, s), j + 1);
			}
	}
	assert_int_equal(xp_strtab_count(t), N);
	for (unsigned i = 0; i < N; i++) {
		snprintf(s, sizeof(s), "s%u", i);
		assert_int_equal(xp_strtab_find(t, s), i + 1);
		assert_int_equal(xp_strtab_intern(t, s), i + 1);
		assert_string_equal(xp_strtab_str(t, i + 1), s);
	}
	snprintf(s, sizeof(s), "s%u", N);
	assert_int_equal(xp_strtab_find(t, s), 0);
	assert_int_equal(xp_strtab_count(t), N);
	xp_strtab_destroy(t);
}

/* ------------------------------------------------------------------------ */
/* fileio */

static void test_fileio(void **st)
{
	(void)st;
	char dir[] = "/tmp/xpfioXXXXXX", path[64], tmp[128];
	struct xp_afile af;
	struct xp_err err = { 0 };
	char *buf;
	size_t len;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f.csv", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* commit: the file appears whole, no .tmp is left */
	assert_int_equal(xp_afile_open(&af, path, &err), 0);
	fputs("a,b\n1,2\n", af.f);
	assert_true(access(path, F_OK) != 0);
	assert_int_equal(xp_afile_commit(&af, &err), 0);
	assert_true(access(tmp, F_OK) != 0);
	assert_int_equal(xp_read_file(path, 100, &buf, &len, &err), 0);
	assert_int_equal(len, 8);
	assert_string_equal(buf, "a,b\n1,2\n");
	free(buf);
	/* the size bound is enforced, and says so */
	assert_int_equal(xp_read_file(path, 7, &buf, &len, &err), XP_ETOOBIG);
	assert_non_null(strstr(err.text, "larger than 7 bytes"));
	/* abort: the old file stays as it was */
	assert_int_equal(xp_afile_open(&af, path, &err), 0);
	fputs("partial", af.f);
	xp_afile_abort(&af);
	assert_true(access(tmp, F_OK) != 0);
	assert_int_equal(xp_read_file(path, 100, &buf, &len, &err), 0);
	assert_string_equal(buf, "a,b\n1,2\n");
	free(buf);
	/* errors name the file */
	assert_true(xp_read_file("/nonexistent/x", 10, &buf, &len, &err) < 0);
	assert_non_null(strstr(err.text, "/nonexistent/x"));
	snprintf(tmp, sizeof(tmp), "%s/no/such/dir/f", dir);
	assert_true(xp_afile_open(&af, tmp, &err) < 0);
	assert_non_null(strstr(err.text, "no/such/dir"));
	unlink(path);
	rmdir(dir);
}

/* dueheap against a naive model: random pushes and pops, each pop the
 * earliest due of what is in (the model scans an array) */
static void test_dueheap(void **state)
{
	(void)state;
	struct xp_dueheap q = { 0 };
	struct xp_rng g;
	int64_t model[4096];
	size_t n = 0;
	xp_rng_seed(&g, 5);
	for (int op = 0; op < 20000; op++) {
		if (n < 4096 && (n == 0 || xp_rng_below(&g, 3))) {
			struct xp_due e = { (int64_t)xp_rng_below(&g, 1000), (uint64_t)op, 1 };
			xp_due_push(&q, e);
			model[n++] = e.due;
		} else {
			size_t m = 0;
			for (size_t i = 1; i < n; i++)
				if (model[i] < model[m])
					m = i;
			assert_true(xp_due_ready(&q, model[m]));
			assert_false(model[m] > 0 && xp_due_ready(&q, model[m] - 1));
			assert_int_equal(xp_due_pop(&q).due, model[m]);
			model[m] = model[--n];
		}
		assert_int_equal(q.h.n, n);
	}
	xp_due_free(&q);
}

/* ---- crc32c ---- */

static uint32_t crc32c_bitwise(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return ~c;
}

static void test_crc32c(void **st)
{
	(void)st;
	unsigned char b[32];
	assert_int_equal(xp_crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(xp_crc32c(0, "", 0), 0);
	/* RFC 3720 (iSCSI), appendix B.4 */
	memset(b, 0, sizeof(b));
	assert_int_equal(xp_crc32c(0, b, 32), 0x8a9136aau);
	memset(b, 0xff, sizeof(b));
	assert_int_equal(xp_crc32c(0, b, 32), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		b[i] = (unsigned char)i;
	assert_int_equal(xp_crc32c(0, b, 32), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		b[i] = (unsigned char)(31 - i);
	assert_int_equal(xp_crc32c(0, b, 32), 0x113fdb5cu);
	/* in pieces, and against the bit-by-bit definition */
	assert_int_equal(xp_crc32c(xp_crc32c(0, "1234", 4), "56789", 5), 0xe3069283u);
	struct xp_rng r;
	xp_rng_seed(&r, 7);
	for (int t = 0; t < 200; t++) {
		unsigned char buf[300];
		size_t n = xp_rng_below(&r, sizeof(buf) + 1), cut = xp_rng_below(&r, n + 1);
		for (size_t i = 0; i < n; i++)
			buf[i] = (unsigned char)xp_rng_below(&r, 256);
		uint32_t want = crc32c_bitwise(buf, n);
		assert_int_equal(xp_crc32c(0, buf, n), want);
		assert_int_equal(xp_crc32c(xp_crc32c(0, buf, cut), buf + cut, n - cut), want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rng_determinism),
		cmocka_unit_test(test_rng_below_uniform),
		cmocka_unit_test(test_rng_below_large_n),
		cmocka_unit_test(test_rng_double),
		cmocka_unit_test(test_rng_perm),
		cmocka_unit_test(test_rng_shuffle_wide),
		cmocka_unit_test(test_parse_i64),
		cmocka_unit_test(test_parse_double),
		cmocka_unit_test(test_parse_qty),
		cmocka_unit_test(test_parse_rejects_hex),
		cmocka_unit_test(test_csv_basic),
		cmocka_unit_test(test_csv_quoted),
		cmocka_unit_test(test_csv_blank_lines_crlf),
		cmocka_unit_test(test_csv_field_counts),
		cmocka_unit_test(test_csv_columns),
		cmocka_unit_test(test_csv_nul_and_limits),
		cmocka_unit_test(test_csv_file),
		cmocka_unit_test(test_strtab_basic),
		cmocka_unit_test(test_strtab_growth),
		cmocka_unit_test(test_fileio),
		cmocka_unit_test(test_dueheap),
		cmocka_unit_test(test_crc32c),
	};
	return xp_run_tests(tests, NULL, NULL);
}
