/*
 * fake_common: environment-variable knobs shared by the fake vendor
 * libraries (fake_nvml.c, fake_rocm_smi.c, fake_dcmi.c, fake_cndev.c).
 *
 * Every fake is driven by environment variables that the test sets before
 * it probes, and that most functions re-read on every call, so a test can
 * change a device's health between two stats calls:
 *
 *   PREFIX_COUNT=4              number of devices
 *   PREFIX_LIST=0,0,1,1         a value per device (index i -> i-th item)
 *   PREFIX_MAP=1:3,2:79         "device:value" pairs, others get a default
 *   PREFIX_FAIL=fn1,fn2         functions that return the vendor's error
 *
 * Header-only (static functions) so each fake stays one file.
 */
#ifndef XP_FAKE_COMMON_H
#define XP_FAKE_COMMON_H

#include <stdlib.h>
#include <string.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

static inline const char *fk_str(const char *var, const char *def)
{
	const char *s = getenv(var);
	return s && *s ? s : def;
}

static inline long fk_int(const char *var, long def)
{
	const char *s = getenv(var);
	return s && *s ? strtol(s, NULL, 0) : def;
}

/* The i-th comma-separated integer of var, or def. */
static inline long fk_item(const char *var, unsigned i, long def)
{
	const char *s = getenv(var);
	if (!s || !*s)
		return def;
	for (unsigned k = 0; k < i; k++) {
		s = strchr(s, ',');
		if (!s)
			return def;
		s++;
	}
	return *s && *s != ',' ? strtol(s, NULL, 0) : def;
}

/* The value paired with device i in "i:v,j:w", or def. */
static inline long fk_map(const char *var, unsigned i, long def)
{
	const char *s = getenv(var);
	while (s && *s) {
		char *end;
		long k = strtol(s, &end, 0);
		if (*end == ':' && k == (long)i)
			return strtol(end + 1, NULL, 0);
		s = strchr(s, ',');
		if (s)
			s++;
	}
	return def;
}

/* Is name one of the comma-separated words of var? */
static inline int fk_has(const char *var, const char *name)
{
	const char *s = getenv(var);
	size_t l = strlen(name);
	while (s && *s) {
		if (strncmp(s, name, l) == 0 && (s[l] == ',' || s[l] == '\0'))
			return 1;
		s = strchr(s, ',');
		if (s)
			s++;
	}
	return 0;
}

/* Does var list device i ("1,3")? */
static inline int fk_lists(const char *var, unsigned i)
{
	const char *s = getenv(var);
	while (s && *s) {
		char *end;
		long k = strtol(s, &end, 0);
		if (end != s && k == (long)i)
			return 1;
		s = strchr(s, ',');
		if (s)
			s++;
	}
	return 0;
}

#endif
