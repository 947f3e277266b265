/* flags: command-line flag parsing (see flags.h). */
#include "flags.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../lib/xalloc.h"

struct xp_flag *xp_flag_get(struct xp_flag *flags, const char *name)
{
	for (struct xp_flag *f = flags; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

int xp_flag_choice(struct xp_flag *flags, const char *name, const char *const *names, int *out,
		   struct xp_err *err)
{
	const char *v = xp_flag_get(flags, name)->sval;
	char list[256] = "";
	size_t off = 0;
	int n = 0;

	for (; names[n]; n++)
		if (strcasecmp(names[n], v) == 0) { /* "GPU" as in a spec file */
			*out = n;
			return 0;
		}
	for (int i = 0; i < n && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
					i == 0	     ? ""
					: i == n - 1 ? " or "
						     : ", ",
					names[i]);
	return xp_errf(err, XP_EINVAL, "--%s: expected %s, got '%s'", name, list, v);
}

/* Slurm's and Kubernetes' spellings, and what xpool calls them */
static const struct {
	const char *theirs, *ours, *note;
} habits[] = {
	{ "gpu", "gpus", "" },
	{ "gres", "gpus", " (Slurm's --gres gpu:N is --gpus N)" },
	{ "gpus-per-task", "gpus", "" },
	{ "mem", "memory", "" },
	{ "mem-per-cpu", "memory", " (per replica, not per CPU)" },
	{ "cpus-per-task", "cpu", "" },
	{ "cpus", "cpu", "" },
	{ "partition", "queue", "" },
	{ "job-name", "name", "" },
	{ "J", "name", "" },
	{ "account", "tenant", "" },
	{ "nodelist", "node", "" },
	{ "w", "node", "" },
	{ "dependency", "after", "" },
	{ "d", "after", "" },
	{ "ntasks", "replicas", "" },
	{ "n", "replicas", "" },
	{ "nodes", "replicas", " (one replica a node or less)" },
	{ "p", "queue", "" },
	{ "timelimit", "time-limit", "" },
};

static size_t edits(const char *a, size_t n, const char *b)
{
	size_t m = strlen(b), row[64];
	if (n > 62 || m > 62)
		return 99;
	for (size_t j = 0; j <= m; j++)
		row[j] = j;
	for (size_t i = 1; i <= n; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= m; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[m];
}

/* "unknown flag --NAME", with the flag meant: a habit from Slurm, or one of
 * flags within two edits (or that NAME starts) */
static int unknown_flag(const struct xp_flag *flags, const char *dashes, const char *name,
			size_t len, struct xp_err *err)
{
	const char *best = NULL, *note = "";
	size_t bd = 3;
	for (size_t i = 0; i < sizeof(habits) / sizeof(habits[0]); i++)
		if (strlen(habits[i].theirs) == len && !strncmp(habits[i].theirs, name, len))
			for (const struct xp_flag *g = flags; g->name; g++)
				if (!strcmp(g->name, habits[i].ours)) {
					best = g->name;
					note = habits[i].note;
					bd = 0;
				}
	for (const struct xp_flag *g = flags; !best && g->name; g++) {
		size_t d = len >= 3 && !strncmp(g->name, name, len) ? 1 : edits(name, len, g->name);
		if (d < bd) {
			bd = d;
			best = g->name;
		}
	}
	if (best)
		return xp_errf(err, XP_EINVAL, "unknown flag %s%.*s: did you mean --%s?%s", dashes,
			       (int)len, name, best, note);
	return xp_errf(err, XP_EINVAL, "unknown flag %s%.*s (see --help)", dashes, (int)len, name);
}

int xp_flags_parse(struct xp_flag *flags, int argc, char **argv, int *help, struct xp_err *err)
{
	*help = 0;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			*help = 1;
			continue;
		}
		struct xp_flag *f = NULL;
		const char *name, *eq = NULL;
		size_t len;
		if (a[0] == '-' && a[1] != '-' && a[1] != '\0' && a[2] == '\0') {
			for (struct xp_flag *g = flags; g->name; g++)
				if (g->short_name == a[1])
					f = g;
			if (!f)
				return unknown_flag(flags, "-", a + 1, 1, err);
			name = f->name;
			len = strlen(name);
		} else {
			if (strncmp(a, "--", 2) != 0 || a[2] == '\0')
				return xp_errf(err, XP_EINVAL,
					       "unexpected argument '%s' (flags start with --)", a);
			name = a + 2;
			eq = strchr(name, '=');
			len = eq ? (size_t)(eq - name) : strlen(name);
			for (struct xp_flag *g = flags; g->name; g++)
				if (strlen(g->name) == len && strncmp(g->name, name, len) == 0)
					f = g;
		}
		if (!f)
			return unknown_flag(flags, "--", name, len, err);
		if (f->kind == XP_FLAG_BOOL) {
			if (eq)
				return xp_errf(err, XP_EINVAL, "flag --%s takes no value", f->name);
			f->bval = 1;
			f->given = 1;
			continue;
		}
		const char *val;
		if (eq) {
			val = eq + 1;
		} else {
			if (i + 1 >= argc)
				return xp_errf(err, XP_EINVAL, "flag --%s needs a value (%s)",
					       f->name, f->metavar ? f->metavar : "VALUE");
			val = argv[++i];
		}
		if (!*val)
			return xp_errf(err, XP_EINVAL, "flag --%s: empty value", f->name);
		if (f->given) {
			size_t l1 = strlen(f->sval), l2 = strlen(val);
			char *s = xmalloc(l1 + l2 + 2);
			memcpy(s, f->sval, l1);
			s[l1] = ',';
			memcpy(s + l1 + 1, val, l2 + 1);
			free(f->sval);
			f->sval = s;
		} else {
			f->sval = xstrdup(val);
		}
		f->given = 1;
	}
	return 0;
}

void xp_flags_free(struct xp_flag *flags)
{
	for (struct xp_flag *f = flags; f->name; f++)
		if (f->given && f->kind == XP_FLAG_STR) {
			free(f->sval);
			f->sval = NULL;
		}
}

void xp_flags_usage(FILE *out, const char *synopsis, const char *about, const struct xp_flag *flags)
{
	fprintf(out, "usage: %s\n\n%s\n", synopsis, about);
	if (flags->name)
		fputs("\nflags:\n", out);
	for (const struct xp_flag *f = flags; f->name; f++) {
		char left[64], sn[8] = "";
		if (f->short_name)
			snprintf(sn, sizeof(sn), "-%c, ", f->short_name);
		if (f->kind == XP_FLAG_BOOL)
			snprintf(left, sizeof(left), "%s--%s", sn, f->name);
		else
			snprintf(left, sizeof(left), "%s--%s %s", sn, f->name,
				 f->metavar ? f->metavar : "VALUE");
		fprintf(out, "  %-24s %s", left, f->help);
		if (f->kind == XP_FLAG_STR && f->sval && !f->given)
			fprintf(out, " (default: %s)", f->sval);
		fputc('\n', out);
	}
}
