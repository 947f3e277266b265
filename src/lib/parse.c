/* parse: strict number and quantity parsing (see parse.h). */
#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"

int xp_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	char *end;
	long long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return XP_EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0')
		return XP_EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return XP_ERANGE;
	*out = v;
	return 0;
}

/* Length of a decimal number at s: [-]digits[.digits][e[+-]digits], or
 * [-].digits...; 0 when there is none. Hex, "inf" and "nan" are not numbers
 * here, whatever strtod() would make of them. */
static size_t decimal_len(const char *s, int allow_sign)
{
	size_t i = 0, digits = 0;
	if (allow_sign && s[i] == '-')
		i++;
	while (isdigit((unsigned char)s[i]))
		i++, digits++;
	if (s[i] == '.') {
		i++;
		while (isdigit((unsigned char)s[i]))
			i++, digits++;
	}
	if (!digits)
		return 0;
	if (s[i] == 'e' || s[i] == 'E') {
		size_t j = i + 1;
		if (s[j] == '+' || s[j] == '-')
			j++;
		if (isdigit((unsigned char)s[j])) {
			while (isdigit((unsigned char)s[j]))
				j++;
			i = j;
		}
	}
	return i;
}

/* strtod over exactly the first len bytes of s */
static int to_double(const char *s, size_t len, double *out)
{
	char buf[64];
	double v;
	if (len == 0 || len >= sizeof(buf))
		return XP_EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtod(buf, NULL);
	if (!isfinite(v) || errno == ERANGE)
		return XP_ERANGE;
	*out = v;
	return 0;
}

int xp_parse_double(const char *s, double *out)
{
	size_t len;
	if (!s)
		return XP_EINVAL;
	len = decimal_len(s, 1);
	if (len == 0 || s[len] != '\0')
		return XP_EINVAL;
	return to_double(s, len, out);
}

struct unit {
	const char *suffix; /* compared case-sensitively, "" = no unit */
	double mult;	    /* to the family's base unit */
};

static const struct unit mem_units[] = {
	{ "", 1 },
	{ "Ki", 1.0 / 1024 },
	{ "KiB", 1.0 / 1024 },
	{ "Mi", 1 },
	{ "MiB", 1 },
	{ "Gi", 1024 },
	{ "GiB", 1024 },
	{ "Ti", 1048576 },
	{ "TiB", 1048576 },
	{ "K", 1e3 / 1048576 },
	{ "KB", 1e3 / 1048576 },
	{ "M", 1e6 / 1048576 },
	{ "MB", 1e6 / 1048576 },
	{ "G", 1e9 / 1048576 },
	{ "GB", 1e9 / 1048576 },
	{ "T", 1e12 / 1048576 },
	{ "TB", 1e12 / 1048576 },
	{ NULL, 0 },
};
static const struct unit cpu_units[] = { { "", 1000 }, { "m", 1 }, { NULL, 0 } };
static const struct unit byte_rate_units[] = {
	{ "MB/s", 1 },	       { "GB/s", 1e3 },		 { "TB/s", 1e6 },
	{ "MiB/s", 1.048576 }, { "GiB/s", 1073.741824 }, { "MBps", 1 },
	{ "GBps", 1e3 },       { "TBps", 1e6 },		 { NULL, 0 },
};
static const struct unit bit_rate_units[] = {
	{ "Mbps", 1 },	 { "Gbps", 1e3 }, { "Tbps", 1e6 }, { "Mb/s", 1 }, { "Gb/s", 1e3 },
	{ "Tb/s", 1e6 }, { "M", 1 },	  { "G", 1e3 },	   { "T", 1e6 },  { NULL, 0 },
};
static const struct unit power_units[] = {
	{ "", 1 }, { "W", 1 }, { "kW", 1e3 }, { "mW", 1e-3 }, { NULL, 0 }
};
static const struct unit flops_units[] = {
	{ "G", 1 },	 { "GFLOPS", 1 }, { "GOPS", 1 },     { "T", 1e3 },    { "TFLOPS", 1e3 },
	{ "TOPS", 1e3 }, { "P", 1e6 },	  { "PFLOPS", 1e6 }, { "POPS", 1e6 }, { NULL, 0 },
};

static const struct unit *units_of(enum xp_qty kind)
{
	switch (kind) {
	case XP_QTY_MEM_MIB:
		return mem_units;
	case XP_QTY_CPU_MILLI:
		return cpu_units;
	case XP_QTY_BYTES_RATE:
		return byte_rate_units;
	case XP_QTY_BITS_RATE:
		return bit_rate_units;
	case XP_QTY_POWER_W:
		return power_units;
	case XP_QTY_FLOPS:
		return flops_units;
	}
	return NULL;
}

const char *xp_qty_hint(enum xp_qty kind)
{
	switch (kind) {
	case XP_QTY_MEM_MIB:
		return "a size such as 81920, 80Gi or 40GB (plain numbers are MiB)";
	case XP_QTY_CPU_MILLI:
		return "cores such as 4, 2.5 or 500m";
	case XP_QTY_BYTES_RATE:
		return "a byte rate such as 600GB/s or 2TB/s";
	case XP_QTY_BITS_RATE:
		return "a bit rate such as 200Gbps or 100Gb/s";
	case XP_QTY_POWER_W:
		return "a power such as 400W or 0.7kW";
	case XP_QTY_FLOPS:
		return "a throughput such as 312TFLOPS or 624TOPS";
	}
	return "a quantity";
}

int xp_parse_qty(const char *s, enum xp_qty kind, double *out)
{
	const struct unit *u = units_of(kind);
	const char *end;
	double v;
	size_t len;

	if (!s || !u)
		return XP_EINVAL;
	len = decimal_len(s, 0);
	if (len == 0 || to_double(s, len, &v) < 0)
		return XP_EINVAL;
	end = s + len;
	/* the unit may follow one space: "600 GB/s" */
	if (*end == ' ' && end[1] != '\0')
		end++;
	for (; u->suffix; u++) {
		if (strcmp(end, u->suffix) == 0) {
			v *= u->mult;
			if (!isfinite(v) || v < 0)
				return XP_ERANGE;
			*out = v;
			return 0;
		}
	}
	return XP_EINVAL;
}

const char *xp_enum_name(const char *const *names, int n, int i)
{
	return i >= 0 && i < n ? names[i] : "?";
}

int xp_enum_parse(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return i;
	return -1;
}
