/*
 * fuzz_units: the text-to-number parsers of src/lib that every document
 * reader leans on: durations (xp_duration_parse), Slurm's time forms
 * (xp_slurm_time_parse), RFC 3339 times (xp_time_parse), quantities of
 * each family (xp_parse_qty), integers and decimals (xp_parse_i64,
 * xp_parse_double). The first byte picks the parser, by letter in seed
 * files: d duration, s Slurm time, t time, m memory, c CPU, b byte rate,
 * n bit rate, p power, f FLOPS, i integer, r decimal (upper case: the
 * durations' bound is an hour, not 366 days), other bytes by value; the
 * rest is the text.
 *
 * Checks: a result within its documented range and *out untouched on a
 * refusal, with only the codes the header names; durations, times and
 * quantities written back in a canonical form (ms, RFC 3339 from
 * xp_time_format, the family's base unit, D-HH:MM:SS) parse to the same
 * value.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "lib/err.h"
#include "lib/parse.h"
#include "lib/timefmt.h"

#define SENTINEL  INT64_C(-777)
#define BIG_MS	  (366LL * 24 * 3600 * 1000)
#define SMALL_MS  3600000LL

static void refused(int rc, int64_t v)
{
	FZ_CHECK(rc == XP_EINVAL || rc == XP_ERANGE, "refused with %d", rc);
	FZ_CHECK(v == SENTINEL, "refused, yet *out changed to %" PRId64, v);
}

static void duration(const char *s, int64_t max)
{
	int64_t ms = SENTINEL, back = SENTINEL;
	char buf[64];
	int rc = xp_duration_parse(s, max, &ms);
	if (rc) {
		refused(rc, ms);
		return;
	}
	FZ_CHECK(ms >= 0 && ms <= max, "'%s' gave %" PRId64 " ms (max %" PRId64 ")", s, ms, max);
	snprintf(buf, sizeof(buf), "%" PRId64 "ms", ms);
	FZ_CHECK(xp_duration_parse(buf, max, &back) == 0 && back == ms, "'%s' -> %s -> %" PRId64, s,
		 buf, back);
	xp_duration_short(ms, buf, sizeof(buf));
}

static void slurm(const char *s, int64_t max)
{
	int64_t ms = SENTINEL, back = SENTINEL;
	char buf[64];
	int rc = xp_slurm_time_parse(s, max, &ms);
	if (rc) {
		refused(rc, ms);
		return;
	}
	FZ_CHECK(ms >= 0 && ms <= max && ms % 1000 == 0, "'%s' gave %" PRId64 " ms", s, ms);
	int64_t sec = ms / 1000;
	snprintf(buf, sizeof(buf), "%" PRId64 "-%02d:%02d:%02d", sec / 86400,
		 (int)(sec / 3600 % 24), (int)(sec / 60 % 60), (int)(sec % 60));
	FZ_CHECK(xp_slurm_time_parse(buf, max, &back) == 0 && back == ms,
		 "'%s' -> %s -> %" PRId64, s, buf, back);
}

static void rfc3339(const char *s)
{
	int64_t ms = SENTINEL, back = SENTINEL;
	char buf[XP_TIME_LEN];
	int rc = xp_time_parse(s, &ms);
	if (rc) {
		FZ_CHECK(rc == XP_EINVAL, "refused with %d", rc);
		FZ_CHECK(ms == SENTINEL, "refused, yet *out changed");
		return;
	}
	xp_time_format(ms, buf);
	FZ_CHECK(xp_time_parse(buf, &back) == 0 && back == ms, "'%s' -> %s -> %" PRId64, s, buf,
		 back);
}

static void quantity(const char *s, enum xp_qty kind)
{
	static const char *const base[] = { "", "m", "MB/s", "Mbps", "W", "G" };
	double v = -1, back = -1;
	char buf[96];
	int rc = xp_parse_qty(s, kind, &v);
	if (rc) {
		FZ_CHECK((rc == XP_EINVAL || rc == XP_ERANGE) && v == -1, "refused with %d", rc);
		return;
	}
	FZ_CHECK(isfinite(v) && v >= 0, "'%s' gave %g", s, v);
	snprintf(buf, sizeof(buf), "%.17g%s", v, base[kind]);
	FZ_CHECK(xp_parse_qty(buf, kind, &back) == 0 && back == v, "'%s' -> %s -> %.17g", s, buf,
		 back);
	FZ_CHECK(xp_qty_hint(kind)[0], "no hint");
}

static void numbers(const char *s, int dbl)
{
	int64_t i = SENTINEL;
	double d = -1;
	if (dbl) {
		int rc = xp_parse_double(s, &d);
		FZ_CHECK(rc ? d == -1 : isfinite(d), "'%s': rc %d, %g", s, rc, d);
		return;
	}
	int rc = xp_parse_i64(s, -1000000, 1000000, &i);
	if (rc)
		refused(rc, i);
	else
		FZ_CHECK(i >= -1000000 && i <= 1000000, "'%s' gave %" PRId64, s, i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	static const char letters[] = "dstmcbnpfir";
	const char *l = data[0] ? strchr(letters, data[0] | 0x20) : NULL;
	int which = l ? (int)(l - letters) : data[0] % 11;
	int small = l ? !(data[0] & 0x20) : data[0] / 11 % 2;
	char *s = fz_text(data + 1, size - 1);
	int64_t max = small ? SMALL_MS : BIG_MS;
	if (which == 0)
		duration(s, max);
	else if (which == 1)
		slurm(s, max);
	else if (which == 2)
		rfc3339(s);
	else if (which <= 8)
		quantity(s, (enum xp_qty)(which - 3));
	else
		numbers(s, which == 10);
	free(s);
	return 0;
}
