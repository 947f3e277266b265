/* timefmt: RFC 3339 times and durations (see timefmt.h). */
#define _GNU_SOURCE
#include "timefmt.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "err.h"

void xp_time_format(int64_t ms, char out[XP_TIME_LEN])
{
	time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
	int frac = (int)(ms - (int64_t)secs * 1000);
	struct tm tm;
	gmtime_r(&secs, &tm);
	snprintf(out, XP_TIME_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
}

int xp_time_parse(const char *s, int64_t *ms)
{
	struct tm tm;
	int frac = 0, digits = 0;
	const char *p;

	if (!s) /* an absent field, as json_string_value() gives it */
		return XP_EINVAL;
	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return XP_EINVAL;
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			if (digits < 3)
				frac = frac * 10 + (*p - '0');
			digits++;
			p++;
		}
		if (!digits)
			return XP_EINVAL;
		for (; digits < 3; digits++)
			frac *= 10;
	}
	if (strcmp(p, "Z") != 0)
		return XP_EINVAL;
	/* strptime takes 2026-02-30 and timegm makes it March 2nd: the date
	 * must come back as written */
	struct tm back = tm;
	time_t t = timegm(&back);
	if (back.tm_mday != tm.tm_mday || back.tm_mon != tm.tm_mon || back.tm_year != tm.tm_year ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 59)
		return XP_EINVAL;
	*ms = (int64_t)t * 1000 + frac;
	return 0;
}

/* digits into *v (at most 9 of them); the text after them */
static const char *digits(const char *p, int64_t *v)
{
	int n = 0;
	*v = 0;
	while (isdigit((unsigned char)*p) && n < 9) {
		*v = *v * 10 + (*p++ - '0');
		n++;
	}
	return n && !isdigit((unsigned char)*p) ? p : NULL;
}

int xp_slurm_time_parse(const char *s, int64_t max_ms, int64_t *ms)
{
	int64_t part[3], days = 0;
	int n = 0;
	const char *p = s;
	if (!s || !*s)
		return XP_EINVAL;
	const char *dash = strchr(s, '-');
	if (dash) {
		if (!(p = digits(s, &days)) || p != dash)
			return XP_EINVAL;
		p = dash + 1;
	}
	for (;;) {
		if (n == 3 || !(p = digits(p, &part[n])))
			return XP_EINVAL;
		n++;
		if (*p == '\0')
			break;
		if (*p++ != ':')
			return XP_EINVAL;
	}
	int64_t sec;
	if (dash) /* D-HH, D-HH:MM, D-HH:MM:SS */
		sec = days * 86400 + part[0] * 3600 + (n > 1 ? part[1] * 60 : 0) +
		      (n > 2 ? part[2] : 0);
	else if (n == 1) /* MM */
		sec = part[0] * 60;
	else if (n == 2) /* MM:SS */
		sec = part[0] * 60 + part[1];
	else /* HH:MM:SS */
		sec = part[0] * 3600 + part[1] * 60 + part[2];
	for (int i = 1; i < n; i++) /* what follows a ':' is under 60 */
		if (part[i] > 59)
			return XP_EINVAL;
	if (dash && part[0] > 23) /* D-HH */
		return XP_EINVAL;
	if ((double)sec * 1000 > (double)max_ms)
		return XP_ERANGE;
	*ms = sec * 1000;
	return 0;
}

int xp_duration_parse(const char *s, int64_t max_ms, int64_t *ms)
{
	static const struct {
		const char *unit;
		int64_t mult;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 }, { "d", 86400000 }
	};
	double total = 0;
	const char *p = s;

	if (!s || !*s)
		return XP_EINVAL;
	if (strchr(s, ':') || strchr(s, '-')) /* Slurm's clock forms */
		return xp_slurm_time_parse(s, max_ms, ms);
	/* a plain number: seconds */
	{
		char *end;
		double v = strtod(s, &end);
		if (end != s && *end == '\0' && isdigit((unsigned char)s[0])) {
			if (v * 1000 > (double)max_ms)
				return XP_ERANGE;
			*ms = (int64_t)(v * 1000 + 0.5);
			return 0;
		}
	}
	while (*p) {
		char *end;
		if (!isdigit((unsigned char)*p))
			return XP_EINVAL;
		double v = strtod(p, &end);
		if (end == p)
			return XP_EINVAL;
		p = end;
		size_t best = 0;
		int64_t mult = 0;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t l = strlen(units[i].unit);
			if (strncmp(p, units[i].unit, l) == 0 && l > best &&
			    !(l == 1 && units[i].unit[0] == 'm' && p[1] == 's')) {
				best = l;
				mult = units[i].mult;
			}
		}
		if (!best)
			return XP_EINVAL;
		p += best;
		total += v * (double)mult;
		if (total > (double)max_ms)
			return XP_ERANGE;
	}
	*ms = (int64_t)(total + 0.5);
	return 0;
}

void xp_duration_short(int64_t ms, char *out, size_t len)
{
	if (ms < 0)
		ms = 0;
	if (ms < 1000)
		snprintf(out, len, "%lldms", (long long)ms);
	else if (ms < 120000)
		snprintf(out, len, "%llds", (long long)(ms / 1000));
	else if (ms < 2 * 3600000LL)
		snprintf(out, len, "%lldm", (long long)(ms / 60000));
	else if (ms < 2 * 86400000LL)
		snprintf(out, len, "%lldh", (long long)(ms / 3600000));
	else
		snprintf(out, len, "%lldd", (long long)(ms / 86400000));
}
