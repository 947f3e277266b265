/*
 * descriptor: the schema walker (tree -> struct xp_cluster) and the load
 * entry points; see descriptor.h and docs/descriptor.md for the schema.
 * The JSON writer is in json_tree.c, next to the only other jansson code.
 *
 * The walker (helpers in tree.c) carries the path of the field it is in
 * ("nodes[2].devices[0].memory"), so every error can name where it
 * happened. Each map's keys are checked against the list its entity
 * allows before any value is read: an unknown key is an error (with a
 * "did you mean" hint), never ignored.
 *
 * Replication (`count` on a node or a device) re-walks the same entry for
 * each copy instead of deep-copying a model struct: the walk is cheap, the
 * first copy reports any error, and there is no copy code to keep in step
 * with model.h. The total node count is summed before anything is built,
 * so an absurd count fails at once instead of after a million nodes.
 */
#include "descriptor.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/parse.h"
#include "../lib/strbuf.h"
#include "../lib/xalloc.h"
#include "tree.h"

#define MAX_NAME  253	 /* node names, as DNS names */
#define MAX_TEXT  4096	 /* any other string value */
#define MAX_ITEMS 64	 /* entries of partitions and links */
#define MAX_COUNT 100000 /* copies one node entry may ask for */

#define CLASSES "gpu, npu, fpga, asic, dpu, cim or cpu"
#define HEALTHS "ok, degraded, unhealthy or unknown"
#define MODES	"shared, whole, timeslice or mig"
#define LINKS	"NVLink, HCCS, xGMI, PCIe, RDMA, InfiniBand, Ethernet, CXL or other"

#define TRY(e)                                                                                     \
	do {                                                                                       \
		int rc_ = (e);                                                                     \
		if (rc_ < 0)                                                                       \
			return rc_;                                                                \
	} while (0)

struct ctx {
	struct xp_walk w; /* file name, error, path */
	struct xp_cluster *c;
	struct xp_strtab *names; /* node names seen, to refuse duplicates */
	xp_sym zone, region;	 /* top-level defaults for every node */
	struct xp_attr *labels;
	uint16_t nlabels;
};

/* Where a device came from, for errors found once its node is complete. */
struct devref {
	const struct xp_tree *e;
	size_t idx;
};

/* clang-format off */
static const char *const top_keys[] = {
	"version", "nodes", "resources", "name", "cpu", "memory", "arch", "zone", "region",
	"labels", NULL};
static const char *const node_keys[] = {
	"name", "count", "cpu", "memory", "arch", "zone", "region", "numa_domains", "labels",
	"devices", "resources", "dedicated", "overcommit", NULL};
static const char *const dev_keys[] = {
	"type", "class", "vendor", "model", "count", "memory", "compute_capability",
	"memory_bandwidth", "interconnect", "island", "numa", "tdp", "idle_power", "peak",
	"partitions", "health", "uuid", "pci_bus_id", "arch", "offload_engines",
	"rdma_capability", "attributes", "links", "mode", "overcommit", "timeslice", NULL};
/* clang-format on */
static const char *const part_keys[] = { "name", "compute_milli", "memory", "max", NULL };
static const char *const link_keys[] = { "kind", "peer", "bandwidth", NULL };

/* Push key, fail with a message, pop: for errors about a field as a whole. */
static int fail_at(struct ctx *x, const struct xp_tree *map, const char *key, int code,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int fail_at(struct ctx *x, const struct xp_tree *map, const char *key, int code,
		   const char *fmt, ...)
{
	const struct xp_tree *v = key ? xp_tree_get(map, key) : NULL;
	char msg[XP_ERR_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	size_t m = v ? xp_walk_push_key(&x->w, key) : x->w.plen;
	int rc = xp_walk_fail(&x->w, v ? v->line : map->line, code, "%s", msg);
	xp_walk_pop(&x->w, m);
	return rc;
}

/* An interned string; "" leaves the symbol unset. */
static int get_sym(struct ctx *x, const struct xp_tree *map, const char *key, xp_sym *out)
{
	const char *s;
	int rc = xp_walk_get_str(&x->w, map, key, 256, &s);
	if (rc > 0)
		*out = *s ? xp_strtab_intern(x->c->syms, s) : 0;
	return rc;
}

/* A copied string; "" leaves it NULL. */
static int get_dup(struct ctx *x, const struct xp_tree *map, const char *key, char **out)
{
	const char *s;
	int rc = xp_walk_get_str(&x->w, map, key, 256, &s);
	if (rc > 0 && *s)
		*out = xstrdup(s);
	return rc;
}

/* A quantity into a 32-bit field. */
static int get_u32(struct ctx *x, const struct xp_tree *map, const char *key, int q, uint32_t *out)
{
	uint64_t v = *out;
	int rc = xp_walk_get_qty(&x->w, map, key, q, UINT32_MAX, &v);
	*out = (uint32_t)v;
	return rc;
}

/* labels / attributes: a map of key -> value, added to an attribute array. */
static int get_attrs(struct ctx *x, const struct xp_tree *map, const char *key, int lists,
		     struct xp_attr **attrs, uint16_t *n)
{
	const struct xp_tree *v = xp_tree_field(map, key);
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(&x->w, key);
	int rc = xp_walk_want(&x->w, v, XP_TREE_MAP, "a map");
	for (size_t i = 0; rc == 0 && i < v->n; i++) {
		size_t m2 = xp_walk_push_key(&x->w, v->keys[i]);
		struct xp_sb sb;
		xp_sb_init(&sb);
		if (!v->keys[i][0] || strlen(v->keys[i]) > 256)
			rc = xp_walk_fail(&x->w, v->key_lines[i], XP_EINVAL,
					  "keys must have 1..256 characters");
		else if ((rc = xp_walk_text(&x->w, v->kids[i], lists, &sb)) == 0)
			xp_attrs_set(attrs, n, v->keys[i], sb.s);
		xp_sb_free(&sb);
		xp_walk_pop(&x->w, m2);
	}
	xp_walk_pop(&x->w, m);
	return rc;
}

static int get_cc(struct ctx *x, const struct xp_tree *e, uint32_t *out)
{
	const struct xp_tree *v = xp_tree_field(e, "compute_capability");
	if (!v)
		return 0;
	if (v->kind != XP_TREE_SCALAR || xp_cc_parse(v->text, out) < 0)
		return fail_at(x, e, "compute_capability", XP_EINVAL,
			       "expected a compute capability such as \"8.0\", \"9.0\" or \"7.5\", "
			       "got %s%s%s",
			       v->kind == XP_TREE_SCALAR ? "'" : "",
			       v->kind == XP_TREE_SCALAR ? XP_SHOW(v->text) : xp_tree_kind_name(v),
			       v->kind == XP_TREE_SCALAR ? "'" : "");
	return 1;
}

/* peak: precision -> throughput. */
static int get_peak(struct ctx *x, const struct xp_tree *e, struct xp_device *d)
{
	const struct xp_tree *v = xp_tree_field(e, "peak");
	unsigned seen = 0;
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(&x->w, "peak");
	int rc = xp_walk_want(&x->w, v, XP_TREE_MAP, "a map of precision to throughput");
	for (size_t i = 0; rc == 0 && i < v->n; i++) {
		int p = xp_prec_parse(v->keys[i]);
		uint64_t g = 0;
		size_t m2 = xp_walk_push_key(&x->w, v->keys[i]);
		if (p < 0 || (seen & (1u << p)))
			rc = xp_walk_fail(&x->w, v->key_lines[i], XP_EINVAL,
					  p < 0 ? "unknown precision (expected fp64, fp32, tf32, "
						  "fp16, bf16, fp8 or int8)"
						: "precision given twice");
		else if ((rc = xp_walk_qty(&x->w, v->kids[i], XP_QTY_FLOPS, UINT32_MAX, &g)) == 0)
			d->peak_gflops[p] = (uint32_t)g;
		seen |= p >= 0 ? 1u << p : 0;
		xp_walk_pop(&x->w, m2);
	}
	xp_walk_pop(&x->w, m);
	return rc;
}

static int one_partition(struct ctx *x, const struct xp_tree *p, struct xp_partition *out)
{
	const char *name = "";
	int64_t milli = 0, max = 1;
	uint64_t mem = 0;
	int rc;

	TRY(xp_walk_want(&x->w, p, XP_TREE_MAP, "a map with name, compute_milli, memory, max"));
	TRY(xp_walk_keys(&x->w, p, part_keys));
	TRY(xp_walk_get_str(&x->w, p, "name", 64, &name));
	if (!*name)
		return fail_at(x, p, "name", XP_EINVAL, "a partition needs a name");
	TRY(rc = xp_walk_get_int(&x->w, p, "compute_milli", 1, XP_MILLI, &milli));
	if (rc == 0)
		return fail_at(x, p, NULL, XP_EINVAL, "missing 'compute_milli' (1..%d)", XP_MILLI);
	TRY(xp_walk_get_qty(&x->w, p, "memory", XP_QTY_MEM_MIB, XP_MAX_MEM_MIB, &mem));
	TRY(xp_walk_get_int(&x->w, p, "max", 1, UINT16_MAX, &max));
	out->name = xstrdup(name);
	out->compute_milli = (uint16_t)milli;
	out->mem_mib = mem;
	out->max_count = (uint16_t)max;
	return 0;
}

static int get_partitions(struct ctx *x, const struct xp_tree *e, struct xp_device *d)
{
	const struct xp_tree *v = xp_tree_field(e, "partitions");
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(&x->w, "partitions");
	int rc = xp_walk_list(&x->w, v, MAX_ITEMS);
	if (rc == 0)
		d->parts = XNEWV(struct xp_partition, v->n ? v->n : 1);
	for (size_t i = 0; rc == 0 && i < v->n; i++) {
		size_t m2 = xp_walk_push_idx(&x->w, i);
		if ((rc = one_partition(x, v->kids[i], &d->parts[i])) == 0)
			d->nparts++;
		xp_walk_pop(&x->w, m2);
	}
	xp_walk_pop(&x->w, m);
	return rc;
}

/* links: explicit links (what the writer emits); peers are checked against
 * the node's device count in check_peers(). */
static int one_link(struct ctx *x, const struct xp_tree *l, struct xp_device *d, int self)
{
	int kind = -1;
	int64_t peer = -1;
	uint64_t mbps = 0;

	TRY(xp_walk_want(&x->w, l, XP_TREE_MAP, "a map with kind, peer, bandwidth"));
	TRY(xp_walk_keys(&x->w, l, link_keys));
	TRY(xp_walk_get_enum(&x->w, l, "kind", xp_link_parse, LINKS, &kind));
	if (kind < 0)
		return fail_at(x, l, NULL, XP_EINVAL, "missing 'kind' (%s)", LINKS);
	TRY(xp_walk_get_int(&x->w, l, "peer", -1, XP_MAX_NODE_DEVS - 1, &peer));
	if (peer == self)
		return fail_at(x, l, "peer", XP_EINVAL, "a device cannot link to itself");
	TRY(xp_walk_get_qty(&x->w, l, "bandwidth", XP_QTY_BITS_RATE, 1e3 * UINT32_MAX, &mbps));
	xp_link_add(d, kind, (int)peer, (uint32_t)((mbps + 500) / 1000));
	return 0;
}

static int get_links(struct ctx *x, const struct xp_tree *e, struct xp_device *d, int self)
{
	const struct xp_tree *v = xp_tree_field(e, "links");
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(&x->w, "links");
	int rc = xp_walk_list(&x->w, v, MAX_ITEMS);
	for (size_t i = 0; rc == 0 && i < v->n; i++) {
		size_t m2 = xp_walk_push_idx(&x->w, i);
		rc = one_link(x, v->kids[i], d, self);
		xp_walk_pop(&x->w, m2);
	}
	xp_walk_pop(&x->w, m);
	return rc;
}

/* interconnect: a link kind or a list of them -> bitmask and joined text. */
static int get_interconnect(struct ctx *x, const struct xp_tree *e, struct xp_sb *text,
			    unsigned *kinds)
{
	const struct xp_tree *v = xp_tree_field(e, "interconnect");
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(&x->w, "interconnect");
	int rc = xp_walk_text(&x->w, v, 1, text);
	size_t n = v->kind == XP_TREE_SEQ ? v->n : 1;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		const struct xp_tree *it = v->kind == XP_TREE_SEQ ? v->kids[i] : v;
		int k = xp_link_parse(it->text);
		if (k >= 0) {
			*kinds |= 1u << k;
			continue;
		}
		size_t m2 = v->kind == XP_TREE_SEQ ? xp_walk_push_idx(&x->w, i) : x->w.plen;
		rc = xp_walk_fail(&x->w, it->line, XP_EINVAL,
				  "unknown link kind '%s' (expected %s)", XP_SHOW(it->text), LINKS);
		xp_walk_pop(&x->w, m2);
	}
	xp_walk_pop(&x->w, m);
	return rc;
}

/* overcommit: {memory: F}, F in [1, 10]: device memory admitted as F x
 * physical, kept in hundredths; absent leaves *pct as it is. */
static int get_overcommit(struct ctx *x, const struct xp_tree *map, uint16_t *pct)
{
	static const char *const keys[] = { "memory", NULL };
	const struct xp_tree *v = xp_tree_field(map, "overcommit");
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(&x->w, "overcommit");
	int rc = xp_walk_want(&x->w, v, XP_TREE_MAP, "a map such as {memory: 1.5}");
	if (rc == 0)
		rc = xp_walk_keys(&x->w, v, keys);
	const struct xp_tree *f = rc == 0 ? xp_tree_field(v, "memory") : NULL;
	if (f) {
		double d = 0;
		xp_walk_push_key(&x->w, "memory");
		rc = xp_walk_want(&x->w, f, XP_TREE_SCALAR, "a number");
		if (rc == 0 && (xp_parse_double(f->text, &d) < 0 || !(d >= 1) ||
				d > XP_OVERCOMMIT_MAX / 100.0))
			rc = xp_walk_fail(&x->w, f->line, XP_ERANGE,
					  "expected a factor from 1 to %d, got '%s'",
					  XP_OVERCOMMIT_MAX / 100, XP_SHOW(f->text));
		else if (rc == 0)
			*pct = (uint16_t)(d * 100 + 0.5);
	}
	xp_walk_pop(&x->w, m);
	return rc;
}

/* timeslice: {replicas: N}, N in [1, XP_TIMESLICE_MAX]: one whole device
 * shared by N jobs at once (NVIDIA's time-slicing replicas). It implies
 * mode timeslice, and another mode with it is refused. */
static int get_timeslice(struct ctx *x, const struct xp_tree *e, struct xp_device *d)
{
	static const char *const keys[] = { "replicas", NULL };
	const struct xp_tree *v = xp_tree_field(e, "timeslice");
	int64_t n = 0;
	if (!v)
		return 0;
	if (xp_tree_field(e, "mode") && d->mode != XP_MODE_TIMESLICE)
		return fail_at(x, e, "timeslice", XP_EINVAL,
			       "replicas are for mode timeslice, not %s", xp_mode_name(d->mode));
	size_t m = xp_walk_push_key(&x->w, "timeslice");
	int rc = xp_walk_want(&x->w, v, XP_TREE_MAP, "a map such as {replicas: 4}");
	if (rc == 0)
		rc = xp_walk_keys(&x->w, v, keys);
	if (rc == 0 && !xp_tree_field(v, "replicas"))
		rc = xp_walk_fail(&x->w, v->line, XP_EINVAL, "missing 'replicas' (1 to %d)",
				  XP_TIMESLICE_MAX);
	if (rc == 0 && (rc = xp_walk_get_int(&x->w, v, "replicas", 1, XP_TIMESLICE_MAX, &n)) > 0)
		rc = 0;
	xp_walk_pop(&x->w, m);
	if (rc == 0) {
		d->mode = XP_MODE_TIMESLICE;
		d->replicas = (uint8_t)n;
	}
	return rc;
}

/* Every field of one device entry but count and interconnect. */
static int device_fields(struct ctx *x, const struct xp_tree *e, struct xp_device *d, int self)
{
	const char *tkey;
	int cls = -1, health = d->health, mode = d->mode;
	int64_t numa = d->numa, island = d->island;
	uint64_t mbps = 0;
	struct xp_sb sb;

	TRY(xp_walk_alias(&x->w, e, "type", "class", &tkey));
	if (!tkey || !xp_tree_field(e, tkey))
		return fail_at(x, e, NULL, XP_EINVAL, "missing 'type' (%s)", CLASSES);
	TRY(xp_walk_get_enum(&x->w, e, tkey, xp_class_parse, CLASSES, &cls));
	d->cls = (uint8_t)cls;
	TRY(get_sym(x, e, "vendor", &d->vendor));
	TRY(get_sym(x, e, "model", &d->model));
	TRY(get_sym(x, e, "arch", &d->arch));
	TRY(get_cc(x, e, &d->cc));
	TRY(xp_walk_get_qty(&x->w, e, "memory", XP_QTY_MEM_MIB, XP_MAX_MEM_MIB, &d->mem_mib));
	TRY(xp_walk_get_qty(&x->w, e, "memory_bandwidth", XP_QTY_BYTES_RATE, 1e12,
			    &d->mem_bw_mb_s));
	TRY(get_peak(x, e, d));
	TRY(get_u32(x, e, "tdp", XP_QTY_POWER_W, &d->tdp_w));
	TRY(get_u32(x, e, "idle_power", XP_QTY_POWER_W, &d->idle_w));
	TRY(xp_walk_get_int(&x->w, e, "numa", -1, INT16_MAX, &numa));
	TRY(xp_walk_get_int(&x->w, e, "island", -1, INT16_MAX, &island));
	d->numa = (int16_t)numa;
	d->island = (int16_t)island;
	TRY(xp_walk_get_enum(&x->w, e, "health", xp_health_parse, HEALTHS, &health));
	d->health = (uint8_t)health;
	TRY(xp_walk_get_enum(&x->w, e, "mode", xp_mode_parse, MODES, &mode));
	d->mode = (uint8_t)mode;
	TRY(get_timeslice(x, e, d));
	TRY(get_overcommit(x, e, &d->mem_overcommit));
	TRY(get_dup(x, e, "uuid", &d->uuid));
	TRY(get_dup(x, e, "pci_bus_id", &d->pci_bus_id));
	TRY(get_partitions(x, e, d));
	TRY(get_attrs(x, e, "attributes", 1, &d->attrs, &d->nattrs));
	TRY(get_links(x, e, d, self));

	const struct xp_tree *v = xp_tree_field(e, "offload_engines");
	if (v) {
		size_t m = xp_walk_push_key(&x->w, "offload_engines");
		xp_sb_init(&sb);
		int rc = xp_walk_text(&x->w, v, 1, &sb);
		if (rc == 0)
			xp_attrs_set(&d->attrs, &d->nattrs, "offload_engines", sb.s);
		xp_sb_free(&sb);
		xp_walk_pop(&x->w, m);
		TRY(rc);
	}
	int rc = xp_walk_get_qty(&x->w, e, "rdma_capability", XP_QTY_BITS_RATE, 1e3 * UINT32_MAX,
				 &mbps);
	TRY(rc);
	if (rc > 0) {
		uint32_t gbps = (uint32_t)((mbps + 500) / 1000);
		xp_link_add(d, XP_LINK_RDMA, -1, gbps ? gbps : mbps > 0);
		xp_attrs_set(&d->attrs, &d->nattrs, "rdma_capability",
			     xp_tree_field(e, "rdma_capability")->text);
	}
	return 0;
}

/* The devices of one entry share a fast fabric: one island, links to all peers. */
static void make_island(struct xp_node *n, int first, int count, unsigned kinds)
{
	int island = n->devs[first].island;

	if (island < 0) {
		island = 0;
		for (int i = 0; i < first; i++)
			if (n->devs[i].island >= island)
				island = n->devs[i].island < INT16_MAX ? n->devs[i].island + 1
								       : INT16_MAX;
	}
	for (int i = first; i < first + count; i++) {
		n->devs[i].island = (int16_t)island;
		for (int k = 0; k < XP_LINK_N; k++)
			for (int j = first;
			     (kinds & XP_DESC_FABRIC & (1u << k)) && j < first + count; j++)
				if (j != i)
					xp_link_add(&n->devs[i], k, j, 0);
	}
}

static int device_entry(struct ctx *x, const struct xp_tree *e, size_t idx, struct xp_node *n,
			struct devref *refs)
{
	static const char *const single[] = { "uuid", "pci_bus_id", "links", NULL };
	int64_t count = 1;
	unsigned kinds = 0;
	struct xp_sb ic;

	TRY(xp_walk_want(&x->w, e, XP_TREE_MAP, "a map describing a device"));
	TRY(xp_walk_keys(&x->w, e, dev_keys));
	TRY(xp_walk_get_int(&x->w, e, "count", 1, XP_MAX_NODE_DEVS, &count));
	if (n->ndevs + count > XP_MAX_NODE_DEVS)
		return fail_at(x, e, "count", XP_ERANGE,
			       "the node would have %lld devices, more than the %d allowed",
			       (long long)(n->ndevs + count), XP_MAX_NODE_DEVS);
	for (int i = 0; count > 1 && single[i]; i++)
		if (xp_tree_get(e, single[i]))
			return fail_at(x, e, single[i], XP_EINVAL,
				       "not allowed with count > 1 (it differs per device)");
	xp_sb_init(&ic);
	int rc = get_interconnect(x, e, &ic, &kinds), first = n->ndevs;
	for (int k = 0; rc == 0 && k < count; k++) {
		struct xp_device *d = xp_node_add_device(n);
		refs[n->ndevs - 1] = (struct devref){ e, idx };
		rc = device_fields(x, e, d, n->ndevs - 1);
		if (rc == 0 && ic.len)
			xp_attrs_set(&d->attrs, &d->nattrs, "interconnect", ic.s);
	}
	if (rc == 0 && count > 1 && (kinds & XP_DESC_FABRIC))
		make_island(n, first, (int)count, kinds);
	xp_sb_free(&ic);
	return rc;
}

/* Explicit link peers must exist; they come first in a device's links. */
static int check_peers(struct ctx *x, const struct xp_node *n, const struct devref *refs)
{
	for (int i = 0; i < n->ndevs; i++)
		for (int j = 0; j < n->devs[i].nlinks; j++) {
			int peer = n->devs[i].links[j].peer;
			if (peer < n->ndevs)
				continue;
			const struct xp_tree *l = xp_tree_get(refs[i].e, "links")->kids[j];
			size_t m = xp_walk_push_idx(&x->w, refs[i].idx);
			xp_walk_push_key(&x->w, "links");
			xp_walk_push_idx(&x->w, (size_t)j);
			int rc = fail_at(x, l, "peer", XP_EINVAL,
					 "device %d does not exist (the node has %u)", peer,
					 n->ndevs);
			xp_walk_pop(&x->w, m);
			return rc;
		}
	return 0;
}

static int node_fields(struct ctx *x, const struct xp_tree *map, struct xp_node *n)
{
	const char *dkey;
	int64_t numa = n->numa_domains;
	uint16_t oc = 0;
	struct devref refs[XP_MAX_NODE_DEVS];

	n->zone = x->zone;
	n->region = x->region;
	for (uint16_t i = 0; i < x->nlabels; i++)
		xp_attrs_set(&n->labels, &n->nlabels, x->labels[i].key, x->labels[i].value);
	TRY(xp_walk_get_qty(&x->w, map, "cpu", XP_QTY_CPU_MILLI, XP_MAX_CPU_MILLI, &n->cpu_milli));
	TRY(xp_walk_get_qty(&x->w, map, "memory", XP_QTY_MEM_MIB, XP_MAX_MEM_MIB, &n->mem_mib));
	TRY(get_sym(x, map, "arch", &n->arch));
	TRY(get_sym(x, map, "zone", &n->zone));
	TRY(get_sym(x, map, "region", &n->region));
	TRY(xp_walk_get_int(&x->w, map, "numa_domains", 0, 4096, &numa));
	n->numa_domains = (uint16_t)numa;
	const struct xp_tree *ded = xp_tree_field(map, "dedicated");
	if (ded) {
		size_t m0 = xp_walk_push_key(&x->w, "dedicated");
		int r0 = xp_walk_want(&x->w, ded, XP_TREE_SCALAR, "true or false");
		if (r0 == 0 && strcmp(ded->text, "true") && strcmp(ded->text, "false"))
			r0 = xp_walk_fail(&x->w, ded->line, XP_EINVAL,
					  "expected true or false, got '%.60s'", ded->text);
		xp_walk_pop(&x->w, m0);
		if (r0 < 0)
			return r0;
		n->dedicated = !strcmp(ded->text, "true");
	}
	TRY(get_attrs(x, map, "labels", 0, &n->labels, &n->nlabels));
	TRY(get_overcommit(x, map, &oc));
	TRY(xp_walk_alias(&x->w, map, "devices", "resources", &dkey));
	const struct xp_tree *v = dkey ? xp_tree_field(map, dkey) : NULL;
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(&x->w, dkey);
	int rc = xp_walk_want(&x->w, v, XP_TREE_SEQ, "a list of devices");
	for (size_t i = 0; rc == 0 && i < v->n; i++) {
		size_t m2 = xp_walk_push_idx(&x->w, i);
		rc = device_entry(x, v->kids[i], i, n, refs);
		xp_walk_pop(&x->w, m2);
	}
	if (rc == 0)
		rc = check_peers(x, n, refs);
	for (uint16_t d = 0; rc == 0 && d < n->ndevs; d++)
		if (!n->devs[d].mem_overcommit) /* the node's factor, unless the device has one */
			n->devs[d].mem_overcommit = oc;
	xp_walk_pop(&x->w, m);
	return rc;
}

static int name_ok(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return 0;
	return i > 0 && i <= MAX_NAME;
}

/* A new node named nm (unique), for the entry map (its name under key). */
static int add_node(struct ctx *x, const struct xp_tree *map, const char *nm, struct xp_node **out)
{
	size_t before = xp_strtab_count(x->names);

	if (!name_ok(nm))
		return fail_at(x, map, "name", XP_EINVAL,
			       "invalid node name '%s' (1..%d of A-Z a-z 0-9 . _ -)", XP_SHOW(nm),
			       MAX_NAME);
	xp_strtab_intern(x->names, nm);
	if (xp_strtab_count(x->names) == before)
		return fail_at(x, map, "name", XP_EEXIST, "node name '%s' is used more than once",
			       XP_SHOW(nm));
	*out = xp_cluster_add_node(x->c, nm);
	return 0;
}

static int node_entry(struct ctx *x, const struct xp_tree *e)
{
	const char *name = NULL;
	int64_t count = 1;
	int rc;

	TRY(xp_walk_want(&x->w, e, XP_TREE_MAP, "a map describing a node"));
	TRY(xp_walk_keys(&x->w, e, node_keys));
	TRY(rc = xp_walk_get_str(&x->w, e, "name", MAX_TEXT, &name));
	if (rc == 0)
		return fail_at(x, e, NULL, XP_EINVAL, "missing 'name'");
	if (!name_ok(name))
		return add_node(x, e, name, NULL); /* reports the bad name */
	TRY(rc = xp_walk_get_int(&x->w, e, "count", 1, MAX_COUNT, &count));
	int replicate = rc > 0;
	for (int64_t k = 0; k < count; k++) {
		char nm[MAX_NAME + 32];
		struct xp_node *n;
		snprintf(nm, sizeof(nm), replicate ? "%s-%lld" : "%s", name, (long long)k);
		TRY(add_node(x, e, nm, &n));
		TRY(node_fields(x, e, n));
	}
	return 0;
}

/* Refuse clusters past XP_DESC_MAX_NODES before building any node. */
static int count_nodes(struct ctx *x, const struct xp_tree *nodes, size_t total)
{
	for (size_t i = 0; nodes && nodes->kind == XP_TREE_SEQ && i < nodes->n; i++) {
		const struct xp_tree *v = xp_tree_field(nodes->kids[i], "count");
		int64_t k = 1;
		if (v && v->kind == XP_TREE_SCALAR && xp_parse_i64(v->text, 1, MAX_COUNT, &k) < 0)
			k = 1;
		if ((total += (size_t)k) <= XP_DESC_MAX_NODES)
			continue;
		size_t m = xp_walk_push_key(&x->w, "nodes");
		xp_walk_push_idx(&x->w, i);
		int rc = fail_at(x, nodes->kids[i], v ? "count" : NULL, XP_ETOOBIG,
				 "the cluster would have more than %d nodes", XP_DESC_MAX_NODES);
		xp_walk_pop(&x->w, m);
		return rc;
	}
	return 0;
}

static int walk_top(struct ctx *x, const struct xp_tree *t)
{
	static const char *const only_res[] = { "name", "cpu", "memory", "arch", NULL };
	int64_t version = 1;

	if (!t)
		return xp_walk_fail(
			&x->w, 0, XP_EINVAL,
			"empty descriptor (expected a map with 'nodes' or 'resources')");
	if (t->kind != XP_TREE_MAP)
		return xp_walk_fail(&x->w, t->line, XP_EINVAL,
				    "expected a map with 'nodes' or 'resources', got %s",
				    xp_tree_kind_name(t));
	TRY(xp_walk_keys(&x->w, t, top_keys));
	TRY(xp_walk_get_int(&x->w, t, "version", 0, INT32_MAX, &version));
	if (version != 1)
		return fail_at(x, t, "version", XP_EVERSION,
			       "version %lld is not supported (this xpool reads version 1)",
			       (long long)version);
	const struct xp_tree *nodes = xp_tree_field(t, "nodes");
	int res = xp_tree_get(t, "resources") != NULL;
	if (!nodes && !res)
		return xp_walk_fail(&x->w, t->line, XP_EINVAL,
				    "expected 'nodes' (a list of nodes) or 'resources' (the "
				    "devices of one node)");
	for (int i = 0; !res && only_res[i]; i++)
		if (xp_tree_get(t, only_res[i]))
			return fail_at(x, t, only_res[i], XP_EINVAL,
				       "only allowed with 'resources' (it describes that node)");
	TRY(get_sym(x, t, "zone", &x->zone));
	TRY(get_sym(x, t, "region", &x->region));
	TRY(get_attrs(x, t, "labels", 0, &x->labels, &x->nlabels));
	TRY(count_nodes(x, nodes, (size_t)res));

	/* in document order: nodes first or the resources node first */
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->keys[i], "resources") == 0) {
			const char *name = "node-0";
			struct xp_node *n;
			TRY(xp_walk_get_str(&x->w, t, "name", MAX_TEXT, &name));
			TRY(add_node(x, t, name, &n));
			TRY(node_fields(x, t, n));
		} else if (strcmp(t->keys[i], "nodes") == 0 && nodes) {
			size_t m = xp_walk_push_key(&x->w, "nodes");
			int rc = xp_walk_want(&x->w, nodes, XP_TREE_SEQ, "a list of nodes");
			for (size_t j = 0; rc == 0 && j < nodes->n; j++) {
				size_t m2 = xp_walk_push_idx(&x->w, j);
				rc = node_entry(x, nodes->kids[j]);
				xp_walk_pop(&x->w, m2);
			}
			xp_walk_pop(&x->w, m);
			TRY(rc);
		}
	}
	return 0;
}

struct xp_cluster *xp_descriptor_load_buf(const char *name, const char *buf, size_t len,
					  enum xp_desc_format fmt, struct xp_err *err)
{
	struct xp_err scratch;
	struct xp_tree *t = NULL;
	struct ctx x;

	if (!err)
		err = &scratch;
	err->code = 0;
	err->text[0] = '\0';
	name = name ? name : "<descriptor>";
	if (!buf && len)
		return xp_errf(err, XP_EINVAL, "%s: no buffer", name), NULL;
	int json = fmt == XP_DESC_JSON ? 1 : fmt == XP_DESC_YAML ? 0 : -1;
	if (xp_tree_parse(name, buf ? buf : "", len, json, &t, err) < 0)
		return NULL;

	memset(&x, 0, sizeof(x));
	x.w.name = name;
	x.w.err = err;
	x.c = xp_cluster_create();
	x.names = xp_strtab_create();
	int rc = walk_top(&x, t);
	xp_tree_destroy(t);
	xp_strtab_destroy(x.names);
	xp_attrs_free(x.labels, x.nlabels);
	if (rc < 0) {
		xp_cluster_destroy(x.c);
		return NULL;
	}
	return x.c;
}

struct xp_cluster *xp_descriptor_load_file(const char *path, struct xp_err *err)
{
	char *buf = NULL;
	size_t len = 0;

	if (xp_tree_read_file(path, &buf, &len, err) < 0)
		return NULL;
	struct xp_cluster *c = xp_descriptor_load_buf(path, buf, len, XP_DESC_AUTO, err);
	free(buf);
	return c;
}
