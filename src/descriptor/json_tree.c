/*
 * json_tree: jansson -> struct xp_tree (see tree.h).
 *
 * jansson parses the whole text (rejecting duplicate keys and NUL escapes)
 * and reports syntax errors with line and column; values carry no source
 * position, so their tree nodes have line 0. Strings become quoted
 * scalars; numbers, true, false and null become plain scalars spelled as
 * in JSON, reals in the shortest form that reads back to the same double
 * (8.6 stays "8.6", not "8.5999999999999996").
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
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "descriptor.h"
#include "tree.h"

struct jstate {
	struct xp_walk w; /* name, error, path of the value being converted */
	size_t nnodes;
};

static void real_text(double v, char *buf, size_t size)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

static int conv(struct jstate *s, json_t *j, int depth, struct xp_tree **out)
{
	char num[64];

	if (++s->nnodes > XP_TREE_MAX_NODES)
		return xp_walk_fail(&s->w, 0, XP_ETOOBIG, "more than %u values in one document",
				    XP_TREE_MAX_NODES);
	switch (json_typeof(j)) {
	case JSON_OBJECT:
	case JSON_ARRAY: {
		if (depth >= XP_TREE_MAX_DEPTH)
			return xp_walk_fail(&s->w, 0, XP_ETOOBIG, "nested deeper than %d levels",
					    XP_TREE_MAX_DEPTH);
		int is_map = json_is_object(j);
		struct xp_tree *t = xp_tree_new(is_map ? XP_TREE_MAP : XP_TREE_SEQ, 0);
		size_t n = is_map ? json_object_size(j) : json_array_size(j);
		void *iter = is_map ? json_object_iter(j) : NULL;
		for (size_t i = 0; i < n; i++) {
			const char *key = is_map ? json_object_iter_key(iter) : NULL;
			json_t *v = is_map ? json_object_iter_value(iter) : json_array_get(j, i);
			size_t m =
				is_map ? xp_walk_push_key(&s->w, key) : xp_walk_push_idx(&s->w, i);
			struct xp_tree *kid;
			int rc = conv(s, v, depth + 1, &kid);
			if (rc == 0 && is_map &&
			    (rc = xp_tree_map_add(t, key, strlen(key), 0, kid)) < 0)
				rc = xp_walk_fail(&s->w, 0, rc, "%s",
						  rc == XP_EEXIST
							  ? "duplicate key"
							  : "more than 256 keys in one object");
			else if (rc == 0 && !is_map)
				xp_tree_seq_add(t, kid);
			xp_walk_pop(&s->w, m);
			if (rc < 0) {
				xp_tree_destroy(t);
				return rc;
			}
			iter = is_map ? json_object_iter_next(j, iter) : NULL;
		}
		*out = t;
		return 0;
	}
	case JSON_STRING: {
		const char *v = json_string_value(j);
		size_t len = json_string_length(j);
		if (memchr(v, '\0', len))
			return xp_walk_fail(&s->w, 0, XP_EINVAL, "NUL character in a string");
		*out = xp_tree_new_scalar(v, len, 1, 0);
		return 0;
	}
	case JSON_INTEGER:
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		break;
	case JSON_REAL:
		real_text(json_real_value(j), num, sizeof(num));
		break;
	case JSON_TRUE:
		strcpy(num, "true");
		break;
	case JSON_FALSE:
		strcpy(num, "false");
		break;
	default:
		strcpy(num, "null");
		break;
	}
	*out = xp_tree_new_scalar(num, strlen(num), 0, 0);
	return 0;
}

int xp_tree_from_json(const char *name, const char *buf, size_t len, struct xp_tree **out,
		      char field[320], struct xp_err *err)
{
	struct jstate s = { .w = { .name = name, .err = err } };
	json_error_t je;
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);

	if (!j) {
		if (je.line > 0)
			return xp_errf(err, XP_EINVAL, "%s:%d:%d: JSON syntax error: %s", name,
				       je.line, je.column, je.text);
		return xp_errf(err, XP_EINVAL, "%s: JSON syntax error: %s", name, je.text);
	}
	struct xp_tree *t = NULL;
	int rc = conv(&s, j, 0, &t);
	json_decref(j);
	if (rc == 0)
		*out = t;
	else if (field)
		memcpy(field, s.w.field, sizeof(s.w.field));
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
	    a->mem_overcommit != b->mem_overcommit || a->vendor != b->vendor ||
	    a->model != b->model || a->arch != b->arch || a->cc != b->cc ||
	    a->mem_mib != b->mem_mib || a->mem_bw_mb_s != b->mem_bw_mb_s ||
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
