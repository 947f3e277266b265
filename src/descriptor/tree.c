/*
 * tree: the generic document tree (see tree.h).
 *
 * Maps are arrays searched linearly: the schema's maps are small and
 * XP_TREE_MAX_KEYS bounds hostile ones. Each key's hash is kept next to it,
 * so the duplicate check on insert compares integers, not strings, and a
 * document full of 256-key maps still loads in well under a second.
 *
 * The walk helpers keep the current field's path in a fixed buffer inside
 * struct xp_walk (pushed and popped around each field), so every error can
 * say where it happened without allocating.
 */
#include "tree.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../lib/fileio.h"
#include "../lib/hash.h"
#include "../lib/parse.h"
#include "../lib/strbuf.h"
#include "../lib/xalloc.h"

static uint32_t key_hash(const char *s, size_t len)
{
	uint64_t h = xp_hash_bytes(s, len);
	return (uint32_t)(h ^ (h >> 32));
}

struct xp_tree *xp_tree_new(enum xp_tree_kind kind, uint32_t line)
{
	struct xp_tree *t = XNEW(struct xp_tree);
	t->kind = (uint8_t)kind;
	t->line = line;
	return t;
}

struct xp_tree *xp_tree_new_scalar(const char *text, size_t len, int quoted, uint32_t line)
{
	struct xp_tree *t = xp_tree_new(XP_TREE_SCALAR, line);
	t->text = xstrndup(text ? text : "", text ? len : 0);
	t->len = strlen(t->text);
	t->quoted = quoted != 0;
	return t;
}

void xp_tree_destroy(struct xp_tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		xp_tree_destroy(t->kids[i]);
		if (t->keys)
			free(t->keys[i]);
	}
	free(t->kids);
	free(t->keys);
	free(t->key_lines);
	free(t->key_hash);
	free(t->text);
	free(t);
}

static void grow(struct xp_tree *t)
{
	if (t->n < t->cap)
		return;
	t->cap = t->cap ? t->cap * 2 : 4;
	t->kids = xreallocarray(t->kids, t->cap, sizeof(*t->kids));
	if (t->kind == XP_TREE_MAP) {
		t->keys = xreallocarray(t->keys, t->cap, sizeof(*t->keys));
		t->key_lines = xreallocarray(t->key_lines, t->cap, sizeof(*t->key_lines));
		t->key_hash = xreallocarray(t->key_hash, t->cap, sizeof(*t->key_hash));
	}
}

int xp_tree_map_add(struct xp_tree *map, const char *key, size_t keylen, uint32_t key_line,
		    struct xp_tree *val)
{
	uint32_t h = key_hash(key, keylen);

	for (size_t i = 0; i < map->n; i++)
		if (map->key_hash[i] == h && strncmp(map->keys[i], key, keylen) == 0 &&
		    map->keys[i][keylen] == '\0') {
			xp_tree_destroy(val);
			return XP_EEXIST;
		}
	if (map->n >= XP_TREE_MAX_KEYS) {
		xp_tree_destroy(val);
		return XP_ETOOBIG;
	}
	grow(map);
	map->keys[map->n] = xstrndup(key, keylen);
	map->key_lines[map->n] = key_line;
	map->key_hash[map->n] = h;
	map->kids[map->n++] = val;
	return 0;
}

void xp_tree_seq_add(struct xp_tree *seq, struct xp_tree *val)
{
	grow(seq);
	seq->kids[seq->n++] = val;
}

const struct xp_tree *xp_tree_get(const struct xp_tree *map, const char *key)
{
	if (!map || map->kind != XP_TREE_MAP)
		return NULL;
	for (size_t i = 0; i < map->n; i++)
		if (strcmp(map->keys[i], key) == 0)
			return map->kids[i];
	return NULL;
}

int xp_tree_is_null(const struct xp_tree *t)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL" };

	if (!t || t->kind != XP_TREE_SCALAR || t->quoted)
		return 0;
	for (size_t i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
		if (strcmp(t->text, nulls[i]) == 0)
			return 1;
	return 0;
}

const char *xp_tree_kind_name(const struct xp_tree *t)
{
	if (!t)
		return "nothing";
	switch (t->kind) {
	case XP_TREE_MAP:
		return "a map";
	case XP_TREE_SEQ:
		return "a list";
	}
	return t->quoted ? "a string" : "a number or word";
}

/* ---- reading ---- */

int xp_tree_parse(const char *name, const char *buf, size_t len, int json, struct xp_tree **out,
		  struct xp_err *err)
{
	return xp_tree_parse_field(name, buf, len, json, out, NULL, err);
}

int xp_tree_parse_field(const char *name, const char *buf, size_t len, int json,
			struct xp_tree **out, char field[320], struct xp_err *err)
{
	if (field)
		field[0] = '\0';
	if (len > XP_TREE_MAX_BYTES)
		return xp_errf(err, XP_ETOOBIG,
			       "%s: %zu bytes is more than the %zu a document may have", name, len,
			       XP_TREE_MAX_BYTES);
	if (json < 0) {
		const char *dot = strrchr(name, '.');
		if (dot && strcasecmp(dot, ".json") == 0)
			json = 1;
		else if (dot && (strcasecmp(dot, ".yaml") == 0 || strcasecmp(dot, ".yml") == 0))
			json = 0;
		else {
			size_t i = 0;
			while (i < len && strchr(" \t\r\n", buf[i]) && buf[i])
				i++;
			json = i < len && (buf[i] == '{' || buf[i] == '[');
		}
	}
	return json ? xp_tree_from_json(name, buf, len, out, field, err)
		    : xp_tree_from_yaml(name, buf, len, out, field, err);
}

int xp_tree_read_file(const char *path, char **buf, size_t *len, struct xp_err *err)
{
	return xp_read_file(path, XP_TREE_MAX_BYTES, buf, len, err);
}

/* ---- walking ---- */

struct xp_shown xp_show(const char *s)
{
	struct xp_shown o;
	size_t i = 0;

	for (; s[i] && i < 64; i++)
		o.s[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (s[i])
		memcpy(o.s + i, "...", 4);
	else
		o.s[i] = '\0';
	return o;
}

int xp_walk_fail(struct xp_walk *w, uint32_t line, int code, const char *fmt, ...)
{
	char msg[XP_ERR_TEXT_MAX], at[16] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line)
		snprintf(at, sizeof(at), ":%u", line);
	memcpy(w->field, w->path, sizeof(w->field));
	return xp_errf(w->err, code, "%s%s: %s%s%s", w->name, at, w->path, w->plen ? ": " : "",
		       msg);
}

static size_t push_n(struct xp_walk *w, int n)
{
	size_t old = w->plen, room = sizeof(w->path) - old;
	if (n > 0)
		w->plen = (size_t)n < room ? old + (size_t)n : sizeof(w->path) - 1;
	return old;
}

size_t xp_walk_push_key(struct xp_walk *w, const char *key)
{
	return push_n(w, snprintf(w->path + w->plen, sizeof(w->path) - w->plen, "%s%s",
				  w->plen ? "." : "", XP_SHOW(key)));
}

size_t xp_walk_push_idx(struct xp_walk *w, size_t i)
{
	return push_n(w, snprintf(w->path + w->plen, sizeof(w->path) - w->plen, "[%zu]", i));
}

void xp_walk_pop(struct xp_walk *w, size_t mark)
{
	w->plen = mark;
	w->path[mark] = '\0';
}

const struct xp_tree *xp_tree_field(const struct xp_tree *map, const char *key)
{
	const struct xp_tree *v = xp_tree_get(map, key);
	return v && !xp_tree_is_null(v) ? v : NULL;
}

int xp_walk_want(struct xp_walk *w, const struct xp_tree *v, enum xp_tree_kind kind,
		 const char *what)
{
	if (v->kind == kind)
		return 0;
	return xp_walk_fail(w, v->line, XP_EINVAL, "expected %s, got %s", what,
			    xp_tree_kind_name(v));
}

int xp_walk_list(struct xp_walk *w, const struct xp_tree *v, size_t max)
{
	int rc = xp_walk_want(w, v, XP_TREE_SEQ, "a list");
	if (rc == 0 && v->n > max)
		rc = xp_walk_fail(w, v->line, XP_ERANGE, "more than %zu entries", max);
	return rc;
}

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[33];

	if (la > 32 || lb > 32)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (tolower((unsigned char)a[i - 1]) !=
					      tolower((unsigned char)b[j - 1]));
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

int xp_walk_keys(struct xp_walk *w, const struct xp_tree *map, const char *const *allowed)
{
	for (size_t i = 0; i < map->n; i++) {
		const char *k = map->keys[i], *near = NULL;
		size_t best = 3, j;
		for (j = 0; allowed[j] && strcmp(k, allowed[j]) != 0; j++)
			;
		if (allowed[j])
			continue;
		/* unknown: the hint costs an edit distance per allowed key */
		for (j = 0; allowed[j]; j++) {
			size_t d = edit_distance(k, allowed[j]);
			if (d < best) {
				best = d;
				near = allowed[j];
			}
		}
		struct xp_sb sb;
		xp_sb_init(&sb);
		for (j = 0; !near && allowed[j]; j++)
			xp_sb_printf(&sb, "%s%s", j ? ", " : "", allowed[j]);
		size_t m = xp_walk_push_key(w, k);
		int rc = near ? xp_walk_fail(w, map->key_lines[i], XP_EINVAL,
					     "unknown key (did you mean '%s'?)", near)
			      : xp_walk_fail(w, map->key_lines[i], XP_EINVAL,
					     "unknown key (expected one of: %s)", sb.s);
		xp_walk_pop(w, m);
		xp_sb_free(&sb);
		return rc;
	}
	return 0;
}

int xp_walk_alias(struct xp_walk *w, const struct xp_tree *map, const char *a, const char *b,
		  const char **key)
{
	const struct xp_tree *va = xp_tree_get(map, a), *vb = xp_tree_get(map, b);
	if (va && vb) {
		size_t m = xp_walk_push_key(w, b);
		int rc = xp_walk_fail(w, vb->line, XP_EINVAL,
				      "'%s' is another name for '%s'; give one of them", b, a);
		xp_walk_pop(w, m);
		return rc;
	}
	*key = va ? a : vb ? b : NULL;
	return 0;
}

int xp_walk_int(struct xp_walk *w, const struct xp_tree *v, int64_t min, int64_t max, int64_t *out)
{
	int rc = xp_walk_want(w, v, XP_TREE_SCALAR, "an integer");
	if (rc < 0)
		return rc;
	rc = xp_parse_i64(v->text, min, max, out);
	if (rc == XP_ERANGE)
		return xp_walk_fail(w, v->line, rc, "%s is out of range %lld..%lld",
				    XP_SHOW(v->text), (long long)min, (long long)max);
	if (rc < 0)
		return xp_walk_fail(w, v->line, XP_EINVAL,
				    "expected an integer %lld..%lld, got '%s'", (long long)min,
				    (long long)max, XP_SHOW(v->text));
	return 0;
}

int xp_walk_qty(struct xp_walk *w, const struct xp_tree *v, int q, double max, uint64_t *out)
{
	static const char *const units[] = {
		"MiB", "milli-cores", "MB/s", "Mbit/s", "W", "GFLOPS"
	};
	double d;
	int rc = xp_walk_want(w, v, XP_TREE_SCALAR, xp_qty_hint((enum xp_qty)q));

	if (rc < 0)
		return rc;
	if (xp_parse_qty(v->text, (enum xp_qty)q, &d) < 0)
		return xp_walk_fail(w, v->line, XP_EINVAL, "expected %s, got '%s'",
				    xp_qty_hint((enum xp_qty)q), XP_SHOW(v->text));
	if (d > max)
		return xp_walk_fail(w, v->line, XP_ERANGE, "'%s' is out of range (at most %.0f %s)",
				    XP_SHOW(v->text), max, units[q]);
	*out = (uint64_t)llround(d);
	return 0;
}

int xp_walk_str(struct xp_walk *w, const struct xp_tree *v, size_t max, const char **out)
{
	int rc = xp_walk_want(w, v, XP_TREE_SCALAR, "a string");
	if (rc == 0 && v->len > max)
		rc = xp_walk_fail(w, v->line, XP_ERANGE, "longer than %zu characters", max);
	if (rc == 0)
		*out = v->text;
	return rc;
}

int xp_walk_text(struct xp_walk *w, const struct xp_tree *v, int lists, struct xp_sb *sb)
{
	int rc = 0;

	if (v->kind == XP_TREE_SEQ && lists) {
		rc = xp_walk_list(w, v, XP_TREE_MAX_KEYS);
		for (size_t i = 0; rc == 0 && i < v->n; i++) {
			size_t m = xp_walk_push_idx(w, i);
			rc = xp_walk_want(w, v->kids[i], XP_TREE_SCALAR, "a string");
			xp_walk_pop(w, m);
			if (rc == 0)
				xp_sb_printf(sb, "%s%s", i ? "," : "", v->kids[i]->text);
		}
	} else {
		rc = xp_walk_want(w, v, XP_TREE_SCALAR,
				  lists ? "a string or a list of strings" : "a string");
		if (rc == 0 && !xp_tree_is_null(v))
			xp_sb_puts(sb, v->text);
	}
	if (rc == 0 && sb->len > 4096)
		rc = xp_walk_fail(w, v->line, XP_ERANGE, "longer than 4096 characters");
	return rc;
}

/* The getters share one shape: find, push the key, convert, pop. */
#define GETTER(call)                                                                               \
	const struct xp_tree *v = xp_tree_field(map, key);                                         \
	if (!v)                                                                                    \
		return 0;                                                                          \
	size_t m = xp_walk_push_key(w, key);                                                       \
	int rc = (call);                                                                           \
	xp_walk_pop(w, m);                                                                         \
	return rc < 0 ? rc : 1

int xp_walk_get_int(struct xp_walk *w, const struct xp_tree *map, const char *key, int64_t min,
		    int64_t max, int64_t *out)
{
	GETTER(xp_walk_int(w, v, min, max, out));
}

int xp_walk_get_qty(struct xp_walk *w, const struct xp_tree *map, const char *key, int q,
		    double max, uint64_t *out)
{
	GETTER(xp_walk_qty(w, v, q, max, out));
}

int xp_walk_get_str(struct xp_walk *w, const struct xp_tree *map, const char *key, size_t max,
		    const char **out)
{
	GETTER(xp_walk_str(w, v, max, out));
}

static int to_enum(struct xp_walk *w, const struct xp_tree *v, int (*parse)(const char *),
		   const char *expect, int *out)
{
	int rc = xp_walk_want(w, v, XP_TREE_SCALAR, expect), k;
	if (rc < 0)
		return rc;
	if ((k = parse(v->text)) < 0)
		return xp_walk_fail(w, v->line, XP_EINVAL, "unknown value '%s' (expected %s)",
				    XP_SHOW(v->text), expect);
	*out = k;
	return 0;
}

int xp_walk_get_enum(struct xp_walk *w, const struct xp_tree *map, const char *key,
		     int (*parse)(const char *), const char *expect, int *out)
{
	GETTER(to_enum(w, v, parse, expect, out));
}
