/*
 * table: aligned tables and human units (see table.h).
 *
 * Rows are kept until rendering, since a column is as wide as its widest
 * cell. Widths count UTF-8 characters, not bytes, so a model name with a
 * non-ASCII letter does not push its row out of line.
 */
#include "table.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xalloc.h"

struct xp_table {
	size_t ncols;
	char **cells; /* headers first, then row after row */
	size_t ncells;
};

static char *clean(const char *s)
{
	char *c;
	if (!s || !*s)
		return xstrdup("-");
	c = xstrdup(s);
	for (unsigned char *p = (unsigned char *)c; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
	return c;
}

struct xp_table *xp_table_create(const char *const *headers)
{
	struct xp_table *t = XNEW(struct xp_table);
	while (headers[t->ncols])
		t->ncols++;
	for (size_t i = 0; i < t->ncols; i++)
		xp_table_add(t, headers[i]);
	return t;
}

void xp_table_destroy(struct xp_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

void xp_table_add(struct xp_table *t, const char *cell)
{
	t->cells = xreallocarray(t->cells, t->ncells + 1, sizeof(*t->cells));
	t->cells[t->ncells++] = clean(cell);
}

void xp_table_addf(struct xp_table *t, const char *fmt, ...)
{
	struct xp_sb b = { 0 };
	va_list ap;
	va_start(ap, fmt);
	xp_sb_vprintf(&b, fmt, ap);
	va_end(ap);
	xp_table_add(t, b.s);
	xp_sb_free(&b);
}

size_t xp_table_rows(const struct xp_table *t)
{
	return t->ncols ? t->ncells / t->ncols - 1 : 0;
}

static size_t width(const char *s)
{
	size_t w = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if ((*p & 0xc0) != 0x80)
			w++;
	return w;
}

void xp_table_render(const struct xp_table *t, struct xp_sb *out)
{
	size_t *w = XNEWV(size_t, t->ncols ? t->ncols : 1);

	for (size_t i = 0; i < t->ncells; i++) {
		size_t cw = width(t->cells[i]);
		if (cw > w[i % t->ncols])
			w[i % t->ncols] = cw;
	}
	for (size_t i = 0; i < t->ncells; i++) {
		size_t col = i % t->ncols;
		xp_sb_puts(out, t->cells[i]);
		if (col + 1 == t->ncols || i + 1 == t->ncells) {
			xp_sb_putc(out, '\n');
			continue;
		}
		for (size_t pad = width(t->cells[i]); pad < w[col] + 3; pad++)
			xp_sb_putc(out, ' ');
	}
	free(w);
}

void xp_table_print(const struct xp_table *t, FILE *f)
{
	struct xp_sb b = { 0 };
	xp_table_render(t, &b);
	if (b.s)
		fputs(b.s, f);
	xp_sb_free(&b);
}

void xp_fmt_cpu(int64_t milli, char *out)
{
	if (milli != 0 && milli % 1000 == 0)
		snprintf(out, XP_UNIT_LEN, "%lldc", (long long)(milli / 1000));
	else if (milli == 0)
		snprintf(out, XP_UNIT_LEN, "0");
	else
		snprintf(out, XP_UNIT_LEN, "%lldm", (long long)milli);
}

void xp_fmt_mib(int64_t mib, char *out)
{
	const int64_t gi = 1024, ti = 1024 * 1024;
	if (mib != 0 && mib % ti == 0)
		snprintf(out, XP_UNIT_LEN, "%lldTi", (long long)(mib / ti));
	else if (mib != 0 && mib % gi == 0)
		snprintf(out, XP_UNIT_LEN, "%lldGi", (long long)(mib / gi));
	else if (mib >= gi || mib <= -gi)
		snprintf(out, XP_UNIT_LEN, "%.1fGi", (double)mib / (double)gi);
	else
		snprintf(out, XP_UNIT_LEN, "%lldMi", (long long)mib);
}

void xp_fmt_age(int64_t ms, char *out)
{
	int64_t s = ms < 0 ? 0 : ms / 1000;
	if (s < 120)
		snprintf(out, XP_UNIT_LEN, "%llds", (long long)s);
	else if (s < 120 * 60)
		snprintf(out, XP_UNIT_LEN, "%lldm", (long long)(s / 60));
	else if (s < 48 * 3600)
		snprintf(out, XP_UNIT_LEN, "%lldh", (long long)(s / 3600));
	else
		snprintf(out, XP_UNIT_LEN, "%lldd", (long long)(s / 86400));
}
