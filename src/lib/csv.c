/* csv: strict CSV reading with line numbers (see csv.h). */
#include "csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "xalloc.h"

struct xp_csv {
	char *name;
	char *buf; /* whole file, NUL-terminated, split in place */
	size_t len;
	size_t pos;   /* start of the next unread line */
	size_t line;  /* line number of the current row */
	size_t nline; /* line number of the next unread line */
	char **hdr;
	size_t nhdr;
	char **f; /* fields of the current row */
	size_t nf;
};

/* Split the line starting at c->pos into fields; returns field count or < 0. */
static int split(struct xp_csv *c, char ***fields, size_t *cap, struct xp_err *err)
{
	char *p = c->buf + c->pos, *w;
	size_t n = 0;
	size_t startline = c->nline;

	for (;;) {
		if (n == *cap) {
			*cap = *cap ? *cap * 2 : 16;
			*fields = xreallocarray(*fields, *cap, sizeof(char *));
		}
		if (n >= XP_CSV_MAX_FIELDS)
			return xp_errf(err, XP_ETOOBIG, "%s:%zu: more than %d fields", c->name,
				       startline, XP_CSV_MAX_FIELDS);
		w = p;
		(*fields)[n++] = w;
		if (*p == '"') {
			p++;
			for (;;) {
				if (*p == '\0')
					return xp_errf(err, XP_EINVAL,
						       "%s:%zu: unterminated quoted field", c->name,
						       startline);
				if (*p == '"' && p[1] == '"') {
					*w++ = '"';
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					if (*p == '\n')
						c->nline++;
					*w++ = *p++;
				}
			}
			if (*p != ',' && *p != '\n' && *p != '\r' && *p != '\0')
				return xp_errf(err, XP_EINVAL,
					       "%s:%zu: text after closing quote in field %zu",
					       c->name, startline, n);
		} else {
			while (*p != ',' && *p != '\n' && *p != '\r' && *p != '\0') {
				if (*p == '"')
					return xp_errf(err, XP_EINVAL,
						       "%s:%zu: quote inside unquoted field %zu",
						       c->name, startline, n);
				*w++ = *p++;
			}
		}
		char sep = *p;
		*w = '\0';
		if (sep == ',') {
			p++;
			continue;
		}
		if (sep == '\r') {
			if (p[1] != '\n')
				return xp_errf(err, XP_EINVAL, "%s:%zu: stray carriage return",
					       c->name, startline);
			p += 2;
		} else if (sep == '\n') {
			p++;
		}
		c->nline++;
		c->pos = (size_t)(p - c->buf);
		return (int)n;
	}
}

static int is_blank_line(const char *p)
{
	return *p == '\n' || (*p == '\r' && p[1] == '\n');
}

static int next_row(struct xp_csv *c, char ***fields, size_t *cap, size_t *nout, struct xp_err *err)
{
	while (c->pos < c->len && is_blank_line(c->buf + c->pos)) {
		c->pos += c->buf[c->pos] == '\r' ? 2 : 1;
		c->nline++;
	}
	if (c->pos >= c->len)
		return 0;
	c->line = c->nline;
	int n = split(c, fields, cap, err);
	if (n < 0)
		return n;
	*nout = (size_t)n;
	return 1;
}

int xp_csv_open_mem(const char *name, const char *buf, size_t len, struct xp_csv **out,
		    struct xp_err *err)
{
	struct xp_csv *c;
	size_t cap = 0;
	int rc;

	if (len > XP_CSV_MAX_BYTES)
		return xp_errf(err, XP_ETOOBIG, "%s: larger than %zu bytes", name,
			       XP_CSV_MAX_BYTES);
	if (memchr(buf, '\0', len))
		return xp_errf(err, XP_EINVAL, "%s: contains a NUL byte (not a text file)", name);
	c = XNEW(struct xp_csv);
	c->name = xstrdup(name);
	c->buf = xmalloc(len + 1);
	memcpy(c->buf, buf, len);
	c->buf[len] = '\0';
	c->len = len;
	c->nline = 1;
	rc = next_row(c, &c->hdr, &cap, &c->nhdr, err);
	if (rc == 0)
		rc = xp_errf(err, XP_EINVAL, "%s: empty file, expected a header row", name);
	if (rc < 0) {
		xp_csv_close(c);
		return rc;
	}
	for (size_t i = 0; i < c->nhdr; i++)
		for (size_t j = 0; j < i; j++)
			if (strcmp(c->hdr[i], c->hdr[j]) == 0) {
				rc = xp_errf(err, XP_EINVAL, "%s:%zu: duplicate column '%s'", name,
					     c->line, c->hdr[i]);
				xp_csv_close(c);
				return rc;
			}
	*out = c;
	return 0;
}

int xp_csv_open(const char *path, struct xp_csv **out, struct xp_err *err)
{
	char *buf;
	size_t len;
	int rc = xp_read_file(path, XP_CSV_MAX_BYTES, &buf, &len, err);
	if (rc < 0)
		return rc;
	rc = xp_csv_open_mem(path, buf, len, out, err);
	free(buf);
	return rc;
}

void xp_csv_close(struct xp_csv *c)
{
	if (!c)
		return;
	free(c->name);
	free(c->buf);
	free(c->hdr);
	free(c->f);
	free(c);
}

int xp_csv_col(const struct xp_csv *c, const char *name)
{
	for (size_t i = 0; i < c->nhdr; i++)
		if (strcmp(c->hdr[i], name) == 0)
			return (int)i;
	return -1;
}

int xp_csv_require(const struct xp_csv *c, const char *const *names, size_t n, struct xp_err *err)
{
	for (size_t i = 0; i < n; i++)
		if (xp_csv_col(c, names[i]) < 0)
			return xp_errf(err, XP_EINVAL, "%s:1: missing column '%s'", c->name,
				       names[i]);
	return 0;
}

size_t xp_csv_ncols(const struct xp_csv *c)
{
	return c->nhdr;
}

const char *xp_csv_colname(const struct xp_csv *c, size_t i)
{
	return i < c->nhdr ? c->hdr[i] : "";
}

int xp_csv_next(struct xp_csv *c, struct xp_err *err)
{
	size_t cap = XP_CSV_MAX_FIELDS + 1; /* fixed: split() never grows it */

	if (!c->f)
		c->f = XNEWV(char *, cap);
	int rc = next_row(c, &c->f, &cap, &c->nf, err);
	if (rc <= 0)
		return rc;
	if (c->nf != c->nhdr)
		return xp_errf(err, XP_EINVAL,
			       "%s:%zu: expected %zu fields as in the header, got %zu", c->name,
			       c->line, c->nhdr, c->nf);
	return 1;
}

const char *xp_csv_field(const struct xp_csv *c, size_t i)
{
	return i < c->nf ? c->f[i] : "";
}

size_t xp_csv_line(const struct xp_csv *c)
{
	return c->line;
}

const char *xp_csv_name(const struct xp_csv *c)
{
	return c->name;
}
