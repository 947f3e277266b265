/* util: small helpers shared by the CLI commands (see cli.h). */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/parse.h"
#include "../lib/xalloc.h"

#define MAX_SEEDS 100000

int xp_cli_fail(const char *verb, const struct xp_err *err, int status)
{
	fprintf(stderr, "xpool %s: %s\n", verb, err->text[0] ? err->text : xp_strerror(err->code));
	return status;
}

char **xp_split_list(const char *s, size_t *n)
{
	char **v = NULL;
	size_t cnt = 0;
	const char *p = s;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		v = xreallocarray(v, cnt + 1, sizeof(*v));
		v[cnt++] = xstrndup(p, len);
		if (!comma)
			break;
		p = comma + 1;
	}
	*n = cnt;
	return v;
}

void xp_free_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int xp_parse_seeds(const char *spec, uint64_t **out, size_t *n, struct xp_err *err)
{
	size_t np, cnt = 0;
	char **parts = xp_split_list(spec, &np);
	uint64_t *v = NULL;
	int rc = 0;

	for (size_t i = 0; i < np && rc == 0; i++) {
		char *dash = strchr(parts[i], '-');
		int64_t lo, hi;
		if (dash)
			*dash = '\0';
		if (xp_parse_i64(parts[i], 0, INT64_MAX, &lo) < 0 ||
		    (dash && xp_parse_i64(dash + 1, 0, INT64_MAX, &hi) < 0)) {
			rc = xp_errf(err, XP_EINVAL,
				     "--seeds: expected seeds like 42-51 or 1,2,5-9, got '%s'",
				     spec);
			break;
		}
		if (!dash)
			hi = lo;
		if (hi < lo || (uint64_t)(hi - lo) >= MAX_SEEDS ||
		    cnt + (size_t)(hi - lo) >= MAX_SEEDS) {
			rc = xp_errf(err, XP_ERANGE,
				     "--seeds: '%s' is empty or has more than %d seeds", spec,
				     MAX_SEEDS);
			break;
		}
		for (int64_t s = lo; s <= hi; s++) {
			v = xreallocarray(v, cnt + 1, sizeof(*v));
			v[cnt++] = (uint64_t)s;
		}
	}
	xp_free_list(parts, np);
	if (rc < 0) {
		free(v);
		return rc;
	}
	*out = v;
	*n = cnt;
	return 0;
}

int xp_parse_int_flag(const char *flag, const char *s, long min, long max, long *out,
		      struct xp_err *err)
{
	int64_t v;
	if (xp_parse_i64(s, min, max, &v) < 0)
		return xp_errf(err, XP_EINVAL, "--%s: expected an integer %ld..%ld, got '%s'", flag,
			       min, max, s);
	*out = (long)v;
	return 0;
}

int xp_parse_double_flag(const char *flag, const char *s, double min, double max, double *out,
			 struct xp_err *err)
{
	double v;
	if (xp_parse_double(s, &v) < 0 || v < min || v > max)
		return xp_errf(err, XP_EINVAL, "--%s: expected a number %g..%g, got '%s'", flag,
			       min, max, s);
	*out = v;
	return 0;
}

char *xp_cli_shared_path(const char *rel)
{
	const char *sh = getenv("XP_SHARED_DIR");
	size_t n = strlen(sh ? sh : "../shared") + strlen(rel) + 2;
	char *s = xmalloc(n);
	snprintf(s, n, "%s/%s", sh ? sh : "../shared", rel);
	return s;
}

int xp_parse_doubles_flag(const char *flag, const char *spec, double min, double max, double **out,
			  size_t *n, struct xp_err *err)
{
	char **v = xp_split_list(spec, n);
	double *d = xcalloc(*n + 1, sizeof(double));
	int rc = 0;
	for (size_t i = 0; i < *n && rc == 0; i++)
		rc = xp_parse_double_flag(flag, v[i], min, max, &d[i], err);
	xp_free_list(v, *n);
	if (rc < 0) {
		free(d);
		return rc;
	}
	*out = d;
	return 0;
}
