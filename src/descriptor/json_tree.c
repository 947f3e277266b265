/*
 * json_tree: JSON text -> struct xp_tree (see tree.h), in one pass.
 *
 * The reader takes RFC 8259 JSON as jansson did for it before (a 10,000-
 * job workflow spent a third of its time in jansson's parse and the copy
 * of its objects into a tree): valid UTF-8 only, no NUL (raw or \u0000),
 * no duplicate keys, integers within 64 bits; a syntax error names the
 * line and column. Values carry no source position, so tree nodes have
 * line 0. Strings become quoted scalars; numbers, true, false and null
 * become plain scalars spelled as jansson spelled them: integers in
 * decimal, reals in the shortest form that reads back to the same double
 * (8.6 stays "8.6", not "8.5999999999999996"; 1.50 is "1.5").
 *
 * The writer half of the descriptor (xp_descriptor_to_json, declared in
 * descriptor.h) lives here too, so jansson is used in this file only. It
 * writes what the convenience forms produced (islands, explicit links,
 * attributes) and folds runs of equal devices or nodes back into `count`
 * (and a device mesh back into `interconnect`) only where loading the
 * folded entry rebuilds exactly the same structs, so loading its output
 * gives back an equal cluster, and a 100k-node cluster stays small enough
 * to load again. Quantities carry explicit units ("600000MB/s", "312000G")
 * so no unit default is assumed on the way back.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/strbuf.h"
#include "../lib/xalloc.h"
#include "descriptor.h"
#include "tree.h"

static void real_text(double v, char *buf, size_t size)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* The reader: one pass from text to tree. The path of the value being
 * read is kept as frames (a key or an index each) and spelled out only
 * for an error. */
struct jp {
	const char *start, *p, *end;
	const char *name;
	struct xp_err *err;
	char *field; /* the failing value's path, when the caller wants it */
	size_t nnodes;
	int depth;
	struct {
		const char *key; /* NULL: an index */
		size_t idx;
	} path[XP_TREE_MAX_DEPTH + 1];
	struct xp_sb str; /* the string being decoded */
};

/* a syntax error at the reader's position: file:line:column */
static int syntax(struct jp *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int syntax(struct jp *j, const char *fmt, ...)
{
	char msg[200];
	int line = 1, col = 1;
	va_list ap;
	for (const char *q = j->start; q < j->p && q < j->end; q++, col++)
		if (*q == '\n') {
			line++;
			col = 0;
		}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return xp_errf(j->err, XP_EINVAL, "%s:%d:%d: JSON syntax error: %s", j->name, line, col,
		       msg);
}

/* a limit passed or a key repeated, named by the value's path */
static int structural(struct jp *j, int code, const char *what)
{
	struct xp_walk w = { .name = j->name, .err = j->err };
	for (int d = 0; d < j->depth; d++) {
		if (j->path[d].key)
			xp_walk_push_key(&w, j->path[d].key);
		else
			xp_walk_push_idx(&w, j->path[d].idx);
	}
	int rc = xp_walk_fail(&w, 0, code, "%s", what);
	if (j->field)
		memcpy(j->field, w.field, sizeof(w.field));
	return rc;
}

static void ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int hex4(const char *q, unsigned *out)
{
	*out = 0;
	for (int i = 0; i < 4; i++) {
		char c = q[i];
		int v = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;
		if (v < 0)
			return -1;
		*out = *out << 4 | (unsigned)v;
	}
	return 0;
}

static void put_utf8(struct xp_sb *b, unsigned c)
{
	char u[4];
	size_t n;
	if (c < 0x80) {
		u[0] = (char)c;
		n = 1;
	} else if (c < 0x800) {
		u[0] = (char)(0xC0 | c >> 6);
		u[1] = (char)(0x80 | (c & 0x3F));
		n = 2;
	} else if (c < 0x10000) {
		u[0] = (char)(0xE0 | c >> 12);
		u[1] = (char)(0x80 | (c >> 6 & 0x3F));
		u[2] = (char)(0x80 | (c & 0x3F));
		n = 3;
	} else {
		u[0] = (char)(0xF0 | c >> 18);
		u[1] = (char)(0x80 | (c >> 12 & 0x3F));
		u[2] = (char)(0x80 | (c >> 6 & 0x3F));
		u[3] = (char)(0x80 | (c & 0x3F));
		n = 4;
	}
	xp_sb_putn(b, u, n);
}

/* the length of the valid UTF-8 sequence at q (its lead byte >= 0x80), 0 if invalid */
static size_t utf8_len(const unsigned char *q, const unsigned char *end)
{
	unsigned char c = q[0];
	size_t n = c >= 0xC2 && c <= 0xDF   ? 2
		   : c >= 0xE0 && c <= 0xEF ? 3
		   : c >= 0xF0 && c <= 0xF4 ? 4
					    : 0;
	if (!n || (size_t)(end - q) < n)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((q[i] & 0xC0) != 0x80)
			return 0;
	if ((c == 0xE0 && q[1] < 0xA0) || (c == 0xED && q[1] > 0x9F) ||
	    (c == 0xF0 && q[1] < 0x90) || (c == 0xF4 && q[1] > 0x8F))
		return 0; /* overlong, a surrogate, past U+10FFFF */
	return n;
}

/* one \u escape at j->p (after the backslash and u) into j->str */
static int unicode_escape(struct jp *j)
{
	unsigned c, lo;
	if (j->end - j->p < 4 || hex4(j->p, &c) < 0)
		return syntax(j, "invalid \\u escape");
	j->p += 4;
	if (c >= 0xDC00 && c <= 0xDFFF)
		return syntax(j, "invalid Unicode '\\u%04X'", c);
	if (c >= 0xD800 && c <= 0xDBFF) { /* a pair */
		if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' ||
		    hex4(j->p + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
			return syntax(j, "invalid Unicode '\\u%04X'", c);
		j->p += 6;
		c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
	}
	if (c == 0)
		return syntax(j, "\\u0000 is not allowed");
	put_utf8(&j->str, c);
	return 0;
}

/* a string at j->p (its opening quote) decoded into j->str */
static int string(struct jp *j)
{
	static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";
	xp_sb_reset(&j->str);
	j->p++;
	for (;;) {
		const char *run = j->p;
		while (j->p < j->end && *j->p != '"' && *j->p != '\\' &&
		       (unsigned char)*j->p >= 0x20 && (unsigned char)*j->p < 0x80)
			j->p++;
		xp_sb_putn(&j->str, run, (size_t)(j->p - run));
		if (j->p >= j->end)
			return syntax(j, "premature end of input in a string");
		unsigned char c = (unsigned char)*j->p;
		if (c == '"') {
			j->p++;
			return 0;
		}
		if (c < 0x20)
			return syntax(j, "control character 0x%x in a string", c);
		if (c >= 0x80) {
			size_t n = utf8_len((const unsigned char *)j->p,
					    (const unsigned char *)j->end);
			if (!n)
				return syntax(j, "invalid UTF-8 in a string");
			xp_sb_putn(&j->str, j->p, n);
			j->p += n;
			continue;
		}
		const char *e = ++j->p < j->end && *j->p ? strchr(esc_in, *j->p) : NULL;
		if (j->p < j->end && *j->p == 'u') {
			j->p++;
			int rc = unicode_escape(j);
			if (rc < 0)
				return rc;
			continue;
		}
		if (!e)
			return syntax(j, "invalid escape");
		xp_sb_putc(&j->str, esc_out[e - esc_in]);
		j->p++;
	}
}

/* a number, true, false or null: a plain scalar spelled as jansson would */
static int word(struct jp *j, struct xp_tree **out)
{
	static const char *const lits[] = { "true", "false", "null" };
	char num[64], tok[64];
	for (int i = 0; i < 3; i++) {
		size_t n = strlen(lits[i]);
		if ((size_t)(j->end - j->p) >= n && !memcmp(j->p, lits[i], n)) {
			j->p += n;
			*out = xp_tree_new_scalar(lits[i], n, 0, 0);
			return 0;
		}
	}
	const char *q = j->p;
	int real = 0;
	if (q < j->end && *q == '-')
		q++;
	if (q >= j->end || *q < '0' || *q > '9')
		return syntax(j, "invalid token");
	if (*q == '0')
		q++;
	else
		while (q < j->end && *q >= '0' && *q <= '9')
			q++;
	if (q < j->end && *q == '.') {
		real = 1;
		if (++q >= j->end || *q < '0' || *q > '9')
			return syntax(j, "invalid number");
		while (q < j->end && *q >= '0' && *q <= '9')
			q++;
	}
	if (q < j->end && (*q == 'e' || *q == 'E')) {
		real = 1;
		if (++q < j->end && (*q == '+' || *q == '-'))
			q++;
		if (q >= j->end || *q < '0' || *q > '9')
			return syntax(j, "invalid number");
		while (q < j->end && *q >= '0' && *q <= '9')
			q++;
	}
	if ((size_t)(q - j->p) >= sizeof(tok))
		return syntax(j, "number too long");
	memcpy(tok, j->p, (size_t)(q - j->p));
	tok[q - j->p] = '\0';
	errno = 0;
	if (real) {
		double v = strtod(tok, NULL);
		if (errno == ERANGE && (v > 1 || v < -1))
			return syntax(j, "real number overflow");
		real_text(v, num, sizeof(num));
	} else {
		long long v = strtoll(tok, NULL, 10);
		if (errno == ERANGE)
			return syntax(j, "too big %sinteger", tok[0] == '-' ? "negative " : "");
		snprintf(num, sizeof(num), "%lld", v);
	}
	j->p = q;
	*out = xp_tree_new_scalar(num, strlen(num), 0, 0);
	return 0;
}

static int value(struct jp *j, struct xp_tree **out);

/* a map or a sequence at j->p (its opening bracket) */
static int container(struct jp *j, struct xp_tree **out)
{
	int is_map = *j->p == '{', rc = 0;
	char close = is_map ? '}' : ']';
	if (j->depth >= XP_TREE_MAX_DEPTH)
		return structural(j, XP_ETOOBIG, "nested deeper than 64 levels");
	struct xp_tree *t = xp_tree_new(is_map ? XP_TREE_MAP : XP_TREE_SEQ, 0);
	j->p++;
	ws(j);
	if (j->p < j->end && *j->p == close) {
		j->p++;
		*out = t;
		return 0;
	}
	for (size_t i = 0; rc == 0; i++) {
		char *key = NULL;
		size_t keylen = 0;
		ws(j);
		if (is_map) {
			if (j->p >= j->end || *j->p != '"')
				rc = syntax(j, "string or '}' expected");
			else if ((rc = string(j)) == 0) {
				keylen = j->str.len;
				key = xstrndup(j->str.s, keylen);
				ws(j);
				if (j->p >= j->end || *j->p != ':')
					rc = syntax(j, "':' expected");
				else
					j->p++;
			}
		}
		struct xp_tree *kid = NULL;
		if (rc == 0) {
			j->path[j->depth].key = key;
			j->path[j->depth].idx = i;
			j->depth++;
			rc = value(j, &kid);
			j->depth--;
		}
		if (rc == 0 && is_map && memchr(key, '\0', keylen))
			rc = structural(j, XP_EINVAL, "NUL character in a key");
		if (rc == 0 && is_map && (rc = xp_tree_map_add(t, key, keylen, 0, kid)) < 0) {
			j->path[j->depth].key = key;
			j->depth++;
			rc = rc == XP_EEXIST
				     ? syntax(j, "duplicate object key")
				     : structural(j, rc, "more than 256 keys in one object");
			j->depth--;
		} else if (rc == 0 && !is_map) {
			xp_tree_seq_add(t, kid);
		}
		free(key);
		if (rc < 0)
			break;
		ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == close) {
			j->p++;
			*out = t;
			return 0;
		}
		rc = syntax(j, "',' or '%c' expected", close);
	}
	xp_tree_destroy(t);
	return rc;
}

static int value(struct jp *j, struct xp_tree **out)
{
	if (++j->nnodes > XP_TREE_MAX_NODES)
		return structural(j, XP_ETOOBIG, "more than 4194304 values in one document");
	ws(j);
	if (j->p >= j->end)
		return syntax(j, "premature end of input");
	if (*j->p == '{' || *j->p == '[')
		return container(j, out);
	if (*j->p != '"')
		return word(j, out);
	int rc = string(j);
	if (rc == 0)
		*out = xp_tree_new_scalar(j->str.s, j->str.len, 1, 0);
	return rc;
}

int xp_tree_from_json(const char *name, const char *buf, size_t len, struct xp_tree **out,
		      char field[320], struct xp_err *err)
{
	struct jp j = {
		.start = buf, .p = buf, .end = buf + len, .name = name, .err = err, .field = field
	};
	struct xp_tree *t = NULL;
	xp_sb_init(&j.str);
	int rc = value(&j, &t);
	if (rc == 0) {
		ws(&j);
		if (j.p < j.end)
			rc = syntax(&j, "end of input expected");
	}
	xp_sb_free(&j.str);
	if (rc == 0)
		*out = t;
	else
		xp_tree_destroy(t);
	return rc;
}

/* ---- the writer: cluster -> JSON in the descriptor schema ---- */

static void put_str(json_t *o, const char *key, const char *s)
{
	if (s && *s)
		json_object_set_new(o, key, json_string(s));
}

static void put_fmt(json_t *o, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void put_fmt(json_t *o, const char *key, const char *fmt, ...)
{
	char buf[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_object_set_new(o, key, json_string(buf));
}

static void put_int(json_t *o, const char *key, long long v)
{
	json_object_set_new(o, key, json_integer(v));
}

static void put_sym(json_t *o, const struct xp_cluster *c, const char *key, xp_sym s)
{
	if (s)
		put_str(o, key, xp_strtab_str(c->syms, s));
}

static void put_attrs(json_t *o, const char *key, const struct xp_attr *a, uint16_t n)
{
	if (!n)
		return;
	json_t *m = json_object();
	for (uint16_t i = 0; i < n; i++)
		json_object_set_new(m, a[i].key, json_string(a[i].value));
	json_object_set_new(o, key, m);
}

/* ---- finding what `count` and `interconnect` would have produced ---- */

static int str_eq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

static int attrs_eq(const struct xp_attr *a, uint16_t na, const struct xp_attr *b, uint16_t nb)
{
	if (na != nb)
		return 0;
	for (uint16_t i = 0; i < na; i++)
		if (strcmp(a[i].key, b[i].key) != 0 || strcmp(a[i].value, b[i].value) != 0)
			return 0;
	return 1;
}

/* Equal in every field but links (which name device indices). */
static int dev_eq(const struct xp_device *a, const struct xp_device *b)
{
	if (a->cls != b->cls || a->health != b->health || a->mode != b->mode ||
	    a->replicas != b->replicas || a->mem_overcommit != b->mem_overcommit ||
	    a->vendor != b->vendor || a->model != b->model || a->arch != b->arch ||
	    a->cc != b->cc || a->mem_mib != b->mem_mib || a->mem_bw_mb_s != b->mem_bw_mb_s ||
	    memcmp(a->peak_gflops, b->peak_gflops, sizeof(a->peak_gflops)) != 0 ||
	    a->tdp_w != b->tdp_w || a->idle_w != b->idle_w || a->numa != b->numa ||
	    a->island != b->island || !str_eq(a->uuid, b->uuid) ||
	    !str_eq(a->pci_bus_id, b->pci_bus_id) || a->nparts != b->nparts ||
	    !attrs_eq(a->attrs, a->nattrs, b->attrs, b->nattrs))
		return 0;
	for (uint16_t i = 0; i < a->nparts; i++)
		if (!str_eq(a->parts[i].name, b->parts[i].name) ||
		    a->parts[i].compute_milli != b->parts[i].compute_milli ||
		    a->parts[i].mem_mib != b->parts[i].mem_mib ||
		    a->parts[i].max_count != b->parts[i].max_count)
			return 0;
	return 1;
}

static int node_eq(const struct xp_node *a, const struct xp_node *b)
{
	if (a->cpu_milli != b->cpu_milli || a->mem_mib != b->mem_mib || a->arch != b->arch ||
	    a->zone != b->zone || a->region != b->region || a->numa_domains != b->numa_domains ||
	    a->dedicated != b->dedicated || a->ndevs != b->ndevs ||
	    !attrs_eq(a->labels, a->nlabels, b->labels, b->nlabels))
		return 0;
	for (uint16_t i = 0; i < a->ndevs; i++) {
		const struct xp_device *x = &a->devs[i], *y = &b->devs[i];
		if (!dev_eq(x, y) || x->nlinks != y->nlinks)
			return 0;
		for (uint16_t l = 0; l < x->nlinks; l++) /* field-wise: structs have padding */
			if (x->links[l].kind != y->links[l].kind ||
			    x->links[l].peer != y->links[l].peer ||
			    x->links[l].gbps != y->links[l].gbps)
				return 0;
	}
	return 1;
}

/* Fabric kinds named by an "interconnect" attribute, or -1 if it would
 * not load back as an interconnect value. */
static int fabric_of(const char *text)
{
	char item[64];
	int kinds = 0;

	for (const char *p = text;; p++) {
		size_t n = strcspn(p, ",");
		if (n == 0 || n >= sizeof(item))
			return -1;
		memcpy(item, p, n);
		item[n] = '\0';
		int k = xp_link_parse(item);
		if (k < 0)
			return -1;
		kinds |= (1 << k) & XP_DESC_FABRIC;
		p += n;
		if (!*p)
			return kinds;
	}
}

/*
 * How many devices from first on one device entry can stand for: a run
 * of equal devices without uuid or bus id whose links are exactly the
 * mesh make_island() builds (or none). 1 when no group fits.
 */
static int dev_group(const struct xp_node *n, int first, int *kinds_out)
{
	const struct xp_device *d0 = &n->devs[first];
	int run = 1, kinds = 0, nk = 0, k;

	if (d0->uuid || d0->pci_bus_id)
		return 1;
	while (first + run < n->ndevs && dev_eq(d0, &n->devs[first + run]))
		run++;
	for (uint16_t i = 0; i < d0->nlinks; i++) {
		int bit = 1 << d0->links[i].kind;
		if (d0->links[i].gbps || !(bit & XP_DESC_FABRIC))
			return 1;
		nk += !(kinds & bit);
		kinds |= bit;
	}
	if (kinds) {
		const char *ic = d0->nattrs ? d0->attrs[d0->nattrs - 1].value : "";
		if (d0->island < 0 || d0->nlinks % nk || !d0->nattrs ||
		    strcmp(d0->attrs[d0->nattrs - 1].key, "interconnect") != 0 ||
		    fabric_of(ic) != kinds)
			return 1;
		k = d0->nlinks / nk + 1;
	} else {
		k = run;
	}
	if (k < 2 || k > run)
		return 1;
	for (int j = first; j < first + k; j++) {
		const struct xp_device *d = &n->devs[j];
		int at = 0;
		if (d->nlinks != d0->nlinks)
			return 1;
		for (int kind = 0; kind < XP_LINK_N; kind++)
			for (int p = first; (kinds & (1 << kind)) && p < first + k; p++) {
				if (p == j)
					continue;
				const struct xp_link *l = &d->links[at++];
				if (l->kind != kind || l->peer != p || l->gbps)
					return 1;
			}
	}
	*kinds_out = kinds;
	return k;
}

/* ---- the writer proper ---- */

static json_t *device_json(const struct xp_cluster *c, const struct xp_device *d, int count,
			   int kinds)
{
	json_t *o = json_object();
	uint16_t nattrs = d->nattrs;

	put_str(o, "type", xp_class_name(d->cls));
	if (count > 1)
		put_int(o, "count", count);
	put_sym(o, c, "vendor", d->vendor);
	put_sym(o, c, "model", d->model);
	put_sym(o, c, "arch", d->arch);
	if (d->cc) {
		char cc[16];
		xp_cc_format(d->cc, cc, sizeof(cc));
		put_fmt(o, "compute_capability", "%s", cc);
	}
	if (d->mem_mib)
		put_int(o, "memory", (long long)d->mem_mib);
	if (d->mem_bw_mb_s)
		put_fmt(o, "memory_bandwidth", "%lluMB/s", (unsigned long long)d->mem_bw_mb_s);
	json_t *peak = json_object();
	for (int p = 0; p < XP_PREC_N; p++)
		if (d->peak_gflops[p])
			put_fmt(peak, xp_prec_name(p), "%uG", d->peak_gflops[p]);
	if (json_object_size(peak))
		json_object_set_new(o, "peak", peak);
	else
		json_decref(peak);
	if (d->tdp_w)
		put_int(o, "tdp", d->tdp_w);
	if (d->idle_w)
		put_int(o, "idle_power", d->idle_w);
	if (d->numa != -1)
		put_int(o, "numa", d->numa);
	if (d->island != -1)
		put_int(o, "island", d->island);
	if (d->health != XP_HEALTH_OK)
		put_str(o, "health", xp_health_name(d->health));
	if (d->mode != XP_MODE_SHARED)
		put_str(o, "mode", xp_mode_name(d->mode));
	if (d->mode == XP_MODE_TIMESLICE && d->replicas) {
		json_t *ts = json_object();
		json_object_set_new(ts, "replicas", json_integer(d->replicas));
		json_object_set_new(o, "timeslice", ts);
	}
	if (d->mem_overcommit && d->mem_overcommit != XP_OVERCOMMIT_NONE) {
		json_t *oc = json_object();
		json_object_set_new(oc, "memory", json_real(d->mem_overcommit / 100.0));
		json_object_set_new(o, "overcommit", oc);
	}
	put_str(o, "uuid", d->uuid);
	put_str(o, "pci_bus_id", d->pci_bus_id);
	if (d->nparts) {
		json_t *a = json_array();
		for (uint16_t i = 0; i < d->nparts; i++) {
			json_t *p = json_object();
			put_str(p, "name", d->parts[i].name);
			put_int(p, "compute_milli", d->parts[i].compute_milli);
			put_int(p, "memory", (long long)d->parts[i].mem_mib);
			put_int(p, "max", d->parts[i].max_count);
			json_array_append_new(a, p);
		}
		json_object_set_new(o, "partitions", a);
	}
	if (kinds) { /* the last attribute, as the loader sets it */
		const char *ic = d->attrs[--nattrs].value;
		json_t *a = json_array();
		for (const char *p = ic; *p; p += *p == ',') {
			size_t n = strcspn(p, ",");
			json_array_append_new(a, json_stringn(p, n));
			p += n;
		}
		if (json_array_size(a) == 1)
			json_object_set(o, "interconnect", json_array_get(a, 0));
		else
			json_object_set(o, "interconnect", a);
		json_decref(a);
	} else if (d->nlinks && count == 1) {
		json_t *a = json_array();
		for (uint16_t i = 0; i < d->nlinks; i++) {
			json_t *l = json_object();
			put_str(l, "kind", xp_link_name(d->links[i].kind));
			if (d->links[i].peer != -1)
				put_int(l, "peer", d->links[i].peer);
			if (d->links[i].gbps)
				put_fmt(l, "bandwidth", "%uGbps", d->links[i].gbps);
			json_array_append_new(a, l);
		}
		json_object_set_new(o, "links", a);
	}
	put_attrs(o, "attributes", d->attrs, nattrs);
	return o;
}

static json_t *node_json(const struct xp_cluster *c, const struct xp_node *n, size_t count)
{
	json_t *o = json_object();

	if (count > 1)
		json_object_set_new(o, "name", json_stringn(n->name, strlen(n->name) - 2));
	else
		put_str(o, "name", n->name);
	if (count > 1)
		put_int(o, "count", (long long)count);
	if (n->cpu_milli % 1000 == 0)
		put_int(o, "cpu", (long long)(n->cpu_milli / 1000));
	else
		put_fmt(o, "cpu", "%llum", (unsigned long long)n->cpu_milli);
	put_int(o, "memory", (long long)n->mem_mib);
	put_sym(o, c, "arch", n->arch);
	put_sym(o, c, "zone", n->zone);
	put_sym(o, c, "region", n->region);
	if (n->numa_domains != 1)
		put_int(o, "numa_domains", n->numa_domains);
	put_attrs(o, "labels", n->labels, n->nlabels);
	if (n->dedicated)
		json_object_set_new(o, "dedicated", json_true());
	if (n->ndevs) {
		json_t *a = json_array();
		for (int i = 0, k, kinds = 0; i < n->ndevs; i += k, kinds = 0) {
			k = dev_group(n, i, &kinds);
			json_array_append_new(a, device_json(c, &n->devs[i], k, kinds));
		}
		json_object_set_new(o, "devices", a);
	}
	return o;
}

/* Nodes i.. named B-0, B-1, ... and otherwise equal: one entry with count. */
static size_t node_group(const struct xp_cluster *c, size_t i)
{
	const char *name = c->nodes[i].name;
	size_t len = strlen(name), k = 1;
	char want[300];

	if (len < 3 || len > 253 || strcmp(name + len - 2, "-0") != 0)
		return 1;
	while (i + k < c->nnodes && k < 100000) {
		snprintf(want, sizeof(want), "%.*s-%zu", (int)(len - 2), name, k);
		if (strcmp(c->nodes[i + k].name, want) != 0 ||
		    !node_eq(&c->nodes[i], &c->nodes[i + k]))
			break;
		k++;
	}
	return k;
}

char *xp_descriptor_to_json(const struct xp_cluster *c)
{
	json_t *root = json_object(), *nodes = json_array();

	put_int(root, "version", 1);
	for (size_t i = 0, k; c && i < c->nnodes; i += k) {
		k = node_group(c, i);
		json_array_append_new(nodes, node_json(c, &c->nodes[i], k));
	}
	json_object_set_new(root, "nodes", nodes);
	/* big clusters drop indentation: half the bytes, well inside XP_TREE_MAX_BYTES */
	size_t flags = json_array_size(nodes) > 1000 ? JSON_COMPACT : JSON_INDENT(2);
	char *s = json_dumps(root, flags);
	json_decref(root);
	return s;
}
