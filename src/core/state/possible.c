/*
 * possible: could a request ever run on the registered nodes? Slurm's
 * "Requested node configuration is not available": a job that no node
 * could take even when empty is refused at submit instead of waiting
 * forever, with the field at fault and the nearest valid values.
 *
 * Model and vendor names match case-insensitively: a name that differs
 * only in case is rewritten to the registered spelling before the spec is
 * journaled (the core compares interned symbols). An unknown name is
 * refused with the closest registered one (the longest shared start, then
 * the edit distance, ignoring case) and never interned.
 *
 * A controller with no node registered yet accepts everything: there is
 * nothing to judge by, and agents join after the controller starts.
 *
 * Cost: a full check is one pass over the nodes and their devices. Its
 * verdict is kept in a small cache keyed by the request's bytes and the
 * nodes' generation (st->nodes_gen, bumped whenever a node is added,
 * removed or loaded), so a stream of submits of a few shapes costs one
 * hash probe each; the cache is dropped with the state.
 */
#include "state_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../lib/hash.h"
#include "../../lib/strbuf.h"
#include "../../lib/xalloc.h"
#include "../model/mig.h"

#define POSSIBLE_CACHE 256

struct possible_entry {
	uint64_t gen;
	struct xp_request r;
	uint8_t used, ok;
};

/* xp_state_nodes_for's verdicts: also keyed by the nodes' states */
struct nodes_entry {
	uint64_t gen, state_gen;
	struct xp_request r;
	uint8_t used, code;
};

struct xp_possible_cache {
	struct possible_entry e[POSSIBLE_CACHE];
	struct nodes_entry n[POSSIBLE_CACHE];
};

void xp_possible_cache_free(struct xp_possible_cache *c)
{
	free(c);
}

/* Levenshtein distance ignoring case, capped at 64 characters each */
static size_t distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b), row[65];
	if (n > 64)
		n = 64;
	if (m > 64)
		m = 64;
	for (size_t j = 0; j <= m; j++)
		row[j] = j;
	for (size_t i = 1; i <= n; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= m; j++) {
			size_t up = row[j];
			size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			size_t best = diag + cost;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[m];
}

/* characters a and b share at their start, ignoring case */
static size_t common_prefix(const char *a, const char *b)
{
	size_t n = 0;
	while (a[n] && b[n] && tolower((unsigned char)a[n]) == tolower((unsigned char)b[n]))
		n++;
	return n;
}

static int node_live(const struct xp_state *st, size_t n)
{
	return !st->nodes.v[n].removed;
}

/* may node n take r at all: live, and named when r names one or n is
 * dedicated */
static int node_takes(const struct xp_state *st, size_t n, const struct xp_request *r)
{
	int named = r->node >= 0 && (size_t)r->node == n;
	return node_live(st, n) && (r->node < 0 || named) && (!st->c->nodes[n].dedicated || named);
}

/* The registered spelling of a model (vendor: want_vendor) named s in any
 * case, 0 when none; else *near gets the closest name and *list (may be
 * NULL) every distinct one */
static xp_sym registered(const struct xp_state *st, const char *s, int want_vendor, int cls,
			 const char **near, struct xp_sb *list)
{
	size_t best = (size_t)-1, best_pre = 0, nseen = 0;
	xp_sym found = 0, seen[64];
	*near = NULL;
	for (size_t n = 0; n < st->c->nnodes; n++) {
		if (!node_live(st, n))
			continue;
		const struct xp_node *nd = &st->c->nodes[n];
		for (uint16_t d = 0; d < nd->ndevs; d++) {
			if (cls >= 0 ? nd->devs[d].cls != cls : nd->devs[d].cls == XP_CLASS_CPU)
				continue; /* the class asked for (-1: any accelerator) */
			xp_sym y = want_vendor ? nd->devs[d].vendor : nd->devs[d].model;
			const char *name = y ? xp_strtab_str(st->c->syms, y) : NULL;
			if (!name)
				continue;
			if (!strcasecmp(name, s))
				found = y;
			size_t dist = distance(s, name), pre = common_prefix(s, name);
			size_t k = 0;
			while (k < nseen && seen[k] != y)
				k++;
			if (list && k == nseen && nseen < 64) { /* each once, 64 at most */
				seen[nseen++] = y;
				xp_sb_printf(list, "%s%s", list->len ? ", " : "", name);
			}
			/* the nearest: the longest shared start ("H100-PCIE" is
			 * nearer H100-SXM5-80GB than L40S), then the fewest edits */
			if (pre > best_pre || (pre == best_pre && dist < best)) {
				best = dist;
				best_pre = pre;
				*near = name;
			}
		}
	}
	return found;
}

static int refuse_name(const struct xp_state *st, const char *s, int vendor, int cls,
		       const char *field, char out_field[320], struct xp_err *err)
{
	struct xp_sb list = { 0 };
	const char *near;
	registered(st, s, vendor, cls, &near, &list);
	snprintf(out_field, 320, "%s", field);
	int rc;
	if (near)
		rc = xp_errf(err, XP_ENOCONFIG,
			     "%s: no registered node has %s '%s'; did you mean %s? (registered: "
			     "%.300s)",
			     field, vendor ? "vendor" : "model", s, near, list.s);
	else
		rc = xp_errf(err, XP_ENOCONFIG,
			     "%s: no registered node has %s '%s' (no node has a %s device)", field,
			     vendor ? "vendor" : "model", s, cls >= 0 ? xp_class_name(cls) : "accelerator");
	xp_sb_free(&list);
	return rc;
}

/* Rewrite model and vendor names to their registered spelling. */
static int canonical_names(const struct xp_state *st, struct xp_jobspec *s, char field[320],
			   struct xp_err *err)
{
	const char *near;
	if (s->vendor && !xp_strtab_find(st->c->syms, s->vendor)) {
		xp_sym y = registered(st, s->vendor, 1, s->dev_class, &near, NULL);
		if (!y)
			return refuse_name(st, s->vendor, 1, s->dev_class, "resources.devices.vendor",
					   field, err);
		free(s->vendor);
		s->vendor = xstrdup(xp_strtab_str(st->c->syms, y));
	}
	for (uint8_t i = 0; i < s->nmodels; i++) {
		if (xp_strtab_find(st->c->syms, s->models[i]))
			continue;
		xp_sym y = registered(st, s->models[i], 0, s->dev_class, &near, NULL);
		if (!y) {
			char f[64];
			snprintf(f, sizeof(f), "resources.devices.models[%u]", i);
			return refuse_name(st, s->models[i], 0, s->dev_class, f, field, err);
		}
		free(s->models[i]);
		s->models[i] = xstrdup(xp_strtab_str(st->c->syms, y));
	}
	return 0;
}

/* The most devices of one island (topo: same_island) or NUMA domain
 * (same_numa) among those marked in ok[], or all of them (any) */
static uint16_t group_max(const struct xp_node *nd, const uint8_t *ok, uint8_t topo)
{
	uint16_t total = 0, best = 0;
	for (uint16_t d = 0; d < nd->ndevs; d++)
		total = (uint16_t)(total + ok[d]);
	if (topo == XP_TOPO_ANY)
		return total;
	for (uint16_t d = 0; d < nd->ndevs; d++) {
		if (!ok[d])
			continue;
		int g = topo == XP_TOPO_SAME_ISLAND ? nd->devs[d].island : nd->devs[d].numa;
		uint16_t k = 0;
		for (uint16_t e = 0; e < nd->ndevs; e++) {
			int h = topo == XP_TOPO_SAME_ISLAND ? nd->devs[e].island : nd->devs[e].numa;
			k = (uint16_t)(k + (ok[e] && (e == d || (g >= 0 && h == g))));
		}
		if (k > best)
			best = k;
	}
	return best;
}

/* What the best nodes offer, for the refusal */
struct offer {
	uint64_t cpu, mem, dev_mem; /* the most of each on one node / device */
	uint16_t sel_count;	    /* the most selector-matching devices on one node */
	uint16_t mem_count;	    /* of those, with the memory per device asked */
	uint16_t topo_count;	    /* of those, in one island / NUMA domain */
	const char *cpu_at, *mem_at, *count_at, *dev_mem_model;
	uint16_t mig_parts; /* MIG: selector-matching devices with partitions at all */
};

/* May device dv take r's devices? Its selector; for a MIG slice, also the
 * profile (counting in o the devices that are partitioned at all) */
static int dev_matches(const struct xp_state *st, const struct xp_device *dv,
		       const struct xp_request *r, struct offer *o)
{
	if (!r->dev_count || !xp_selector_match(&r->sel, dv))
		return 0;
	if (!r->mig)
		return 1;
	int parted = dv->nparts || (dv->mode == XP_MODE_MIG && dv->model &&
				    xp_mig_table_find(xp_strtab_str(st->c->syms, dv->model)));
	o->mig_parts = (uint16_t)(o->mig_parts + (parted != 0));
	if (r->mig_any)
		return xp_dev_mig_covers(st->c, dv, r->dev_milli, r->dev_mem_mib);
	return xp_dev_mig_offers(st->c, dv, xp_strtab_str(st->c->syms, r->mig));
}

/* Could replica request r run on node n if it were empty? */
static int node_could(const struct xp_state *st, size_t n, const struct xp_request *r,
		      struct offer *o)
{
	const struct xp_node *nd = &st->c->nodes[n];
	uint8_t sel[XP_MAX_NODE_DEVS], mem[XP_MAX_NODE_DEVS];
	uint16_t nsel = 0, nmem = 0;
	for (uint16_t d = 0; d < nd->ndevs && d < XP_MAX_NODE_DEVS; d++) {
		const struct xp_device *dv = &nd->devs[d];
		sel[d] = (uint8_t)dev_matches(st, dv, r, o);
		mem[d] = sel[d] && (r->mig || dv->mem_mib >= r->dev_mem_mib);
		nsel = (uint16_t)(nsel + sel[d]);
		nmem = (uint16_t)(nmem + mem[d]);
		if (sel[d] && dv->mem_mib > o->dev_mem) {
			o->dev_mem = dv->mem_mib;
			o->dev_mem_model = xp_strtab_str(st->c->syms, dv->model);
		}
	}
	uint16_t ntopo = r->dev_count ? group_max(nd, mem, r->topo) : 0;
	if (nsel > o->sel_count) {
		o->sel_count = nsel;
		o->count_at = nd->name;
	}
	if (nmem > o->mem_count)
		o->mem_count = nmem;
	if (ntopo > o->topo_count)
		o->topo_count = ntopo;
	if (nd->cpu_milli > o->cpu) {
		o->cpu = nd->cpu_milli;
		o->cpu_at = nd->name;
	}
	if (nd->mem_mib > o->mem) {
		o->mem = nd->mem_mib;
		o->mem_at = nd->name;
	}
	return nd->cpu_milli >= r->cpu_milli && nd->mem_mib >= r->mem_mib &&
	       ntopo >= r->dev_count;
}

static void class_list(const struct xp_state *st, struct xp_sb *sb)
{
	int seen[XP_CLASS_N] = { 0 };
	for (size_t n = 0; n < st->c->nnodes; n++)
		for (uint16_t d = 0; node_live(st, n) && d < st->c->nodes[n].ndevs; d++)
			seen[st->c->nodes[n].devs[d].cls] = 1;
	for (int k = 0; k < XP_CLASS_N; k++)
		if (seen[k])
			xp_sb_printf(sb, "%s%s", sb->len ? ", " : "", xp_class_name(k));
	if (!sb->len)
		xp_sb_puts(sb, "none");
}

/* Is nm an item of the ", "-separated list? */
static int in_list(const char *list, const char *nm)
{
	size_t n = strlen(nm);
	for (const char *p = list; p && *p;) {
		const char *e = strstr(p, ", ");
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == n && !strncasecmp(p, nm, n))
			return 1;
		p = e ? e + 2 : NULL;
	}
	return 0;
}

/* No partitioned device offers r's profile: list the profiles they offer */
static int refuse_mig_profile(const struct xp_state *st, const struct xp_jobspec *s,
			      const struct xp_request *r, struct xp_err *err)
{
	struct xp_sb sb = { 0 };
	for (size_t n = 0; n < st->c->nnodes; n++) {
		const struct xp_node *nd = &st->c->nodes[n];
		for (uint16_t d = 0; node_takes(st, n, r) && d < nd->ndevs; d++) {
			const struct xp_device *dv = &nd->devs[d];
			const struct xp_mig_table *t = NULL;
			if (!xp_selector_match(&r->sel, dv))
				continue;
			if (!dv->nparts && dv->mode == XP_MODE_MIG && dv->model)
				t = xp_mig_table_find(xp_strtab_str(st->c->syms, dv->model));
			for (int k = 0; k < (dv->nparts ? dv->nparts : t ? XP_MIG_NKINDS : 0); k++) {
				const char *nm = dv->nparts ? dv->parts[k].name : t->prof[k].name;
				if (nm && !in_list(sb.s, nm))
					xp_sb_printf(&sb, "%s%s", sb.len ? ", " : "", nm);
			}
		}
	}
	int rc = r->mig_any
			 ? xp_errf(err, XP_ENOCONFIG,
				   "resources.devices.mig: no MIG profile of a registered node has "
				   "%u compute slices and %.1f GiB (offered: %s)",
				   xp_mig_slices_for(r->dev_milli), (double)r->dev_mem_mib / 1024,
				   sb.len ? sb.s : "none")
			 : xp_errf(err, XP_ENOCONFIG,
				   "resources.devices.mig.profile: no registered node offers MIG "
				   "profile '%s' (offered: %s)",
				   s->mig_profile, sb.len ? sb.s : "none");
	xp_sb_free(&sb);
	return rc;
}

static int refuse(const struct xp_state *st, const struct xp_jobspec *s,
		  const struct xp_request *r, const struct offer *o, char field[320],
		  struct xp_err *err)
{
	const char *f;
	int rc;
	if (r->mig && o->sel_count == 0) {
		f = o->mig_parts && !r->mig_any ? "resources.devices.mig.profile"
						: "resources.devices.mig";
		rc = o->mig_parts ? refuse_mig_profile(st, s, r, err)
				  : xp_errf(err, XP_ENOCONFIG,
					    "%s: no registered matching %s device has MIG partitions "
					    "(MIG mode with partitions reported, or a model with a "
					    "built-in MIG table)",
					    f, s->dev_class >= 0 ? xp_class_name(s->dev_class)
								 : "accelerator");
	} else if (r->dev_count && o->sel_count == 0) {
		struct xp_sb cl = { 0 };
		class_list(st, &cl);
		f = s->nmodels			    ? "resources.devices.models"
		    : s->vendor			    ? "resources.devices.vendor"
		    : s->min_mem_mib		    ? "resources.devices.min_memory"
		    : s->min_cc			    ? "resources.devices.min_compute_capability"
						    : "resources.devices.class";
		rc = xp_errf(err, XP_ENOCONFIG,
			     "%s: no registered node has a matching %s device (classes offered: %s)",
			     f, s->dev_class >= 0 ? xp_class_name(s->dev_class) : "accelerator",
			     cl.s);
		xp_sb_free(&cl);
	} else if (r->dev_count > o->sel_count) {
		f = "resources.devices.count";
		rc = xp_errf(err, XP_ENOCONFIG,
			     "%s: %u matching devices per replica, but the most on one node is %u "
			     "(%s)",
			     f, r->dev_count, o->sel_count, o->count_at);
	} else if (r->dev_count > o->mem_count) {
		f = "resources.devices.memory";
		rc = xp_errf(err, XP_ENOCONFIG,
			     "%s: %.1f GiB per device, but the largest matching device has %.1f GiB "
			     "(%s)",
			     f, (double)r->dev_mem_mib / 1024, (double)o->dev_mem / 1024,
			     o->dev_mem_model ? o->dev_mem_model : "-");
	} else if (r->dev_count > o->topo_count) {
		f = "resources.devices.topology";
		rc = xp_errf(err, XP_ENOCONFIG,
			     "%s: %u devices in one %s, but the most in one is %u", f, r->dev_count,
			     r->topo == XP_TOPO_SAME_ISLAND ? "island" : "NUMA domain",
			     o->topo_count);
	} else if (r->cpu_milli > o->cpu) {
		f = "resources.cpu";
		rc = xp_errf(err, XP_ENOCONFIG,
			     "%s: %.6g cores per replica, but the largest node has %.6g (%s)", f,
			     (double)r->cpu_milli / 1000, (double)o->cpu / 1000,
			     o->cpu_at ? o->cpu_at : "no node");
	} else if (r->mem_mib > o->mem) {
		f = "resources.memory";
		rc = xp_errf(err, XP_ENOCONFIG,
			     "%s: %.1f GiB per replica, but the largest node has %.1f GiB (%s)", f,
			     (double)r->mem_mib / 1024, (double)o->mem / 1024,
			     o->mem_at ? o->mem_at : "no node");
	} else {
		f = "resources";
		rc = xp_errf(err, XP_ENOCONFIG,
			     "%s: no registered node has all of it at once (each part alone fits "
			     "some node)",
			     f);
	}
	snprintf(field, 320, "%s", f);
	return rc;
}

/* A MIG profile name no built-in table has and no live node offers */
static int mig_unknown(const struct xp_state *st, const struct xp_jobspec *s, char field[320],
		       struct xp_err *err)
{
	char names[512];
	if (!s->mig_profile || xp_jobspec_mig_any(s) || xp_mig_profile_any(s->mig_profile, NULL))
		return 0;
	for (size_t n = 0; n < st->c->nnodes; n++)
		for (uint16_t d = 0; node_live(st, n) && d < st->c->nodes[n].ndevs; d++)
			if (xp_dev_mig_offers(st->c, &st->c->nodes[n].devs[d], s->mig_profile))
				return 0;
	xp_mig_all_names(names, sizeof(names));
	snprintf(field, 320, "resources.devices.mig.profile");
	return xp_errf(err, XP_EINVAL, "%s: unknown MIG profile '%s' (valid: %s)", field,
		       s->mig_profile, names);
}

int xp_state_possible(struct xp_state *st, struct xp_jobspec *s, char field[320],
		      struct xp_err *err)
{
	size_t live = 0;
	if (mig_unknown(st, s, field, err) < 0)
		return XP_EINVAL;
	for (size_t n = 0; n < st->c->nnodes && !live; n++)
		live += (size_t)node_live(st, n);
	if (!live) /* a controller before its first agent: nothing to judge by */
		return 0;
	int rc = canonical_names(st, s, field, err);
	if (rc < 0)
		return rc;
	struct xp_request r;
	xp_jobspec_request(s, st->c->syms, &r);
	if (s->node)
		r.node = (int32_t)xp_state_node(st, s->node);
	if (!st->possible)
		st->possible = XNEW(struct xp_possible_cache);
	struct possible_entry *e =
		&st->possible->e[xp_hash_bytes(&r, sizeof(r)) % POSSIBLE_CACHE];
	if (e->used && e->gen == st->nodes_gen && !memcmp(&e->r, &r, sizeof(r)) && e->ok)
		return 0;
	struct offer o = { 0 };
	int ok = 0;
	for (size_t n = 0; n < st->c->nnodes && !ok; n++)
		if (node_takes(st, n, &r))
			ok = node_could(st, n, &r, &o);
	e->used = 1;
	e->gen = st->nodes_gen;
	e->r = r;
	e->ok = (uint8_t)ok;
	if (ok)
		return 0;
	/* the offer over every node, for a message that names the best */
	memset(&o, 0, sizeof(o));
	for (size_t n = 0; n < st->c->nnodes; n++)
		if (node_takes(st, n, &r))
			node_could(st, n, &r, &o);
	return refuse(st, s, &r, &o, field, err);
}

int xp_state_nodes_for(struct xp_state *st, const struct xp_request *r)
{
	if (!st->possible)
		st->possible = XNEW(struct xp_possible_cache);
	struct nodes_entry *e = &st->possible->n[xp_hash_bytes(r, sizeof(*r)) % POSSIBLE_CACHE];
	if (e->used && e->gen == st->nodes_gen && e->state_gen == st->nodes_state_gen &&
	    !memcmp(&e->r, r, sizeof(*r)))
		return e->code;
	/* the best state among the nodes that could take it: ready, then
	 * draining or cordoned, then down */
	int best = XP_PEND_NO_DEVICE;
	for (size_t n = 0; n < st->c->nnodes && best != XP_PEND_RESOURCES; n++) {
		struct offer o = { 0 };
		if (!node_takes(st, n, r) || !node_could(st, n, r, &o))
			continue;
		int s = st->nodes.v[n].state;
		int code = s == XP_NODE_READY ? XP_PEND_RESOURCES
			   : s == XP_NODE_DOWN ? XP_PEND_NODE_DOWN
					       : XP_PEND_DRAINING;
		if (code == XP_PEND_RESOURCES || best == XP_PEND_NO_DEVICE ||
		    (code == XP_PEND_DRAINING && best == XP_PEND_NODE_DOWN))
			best = code;
	}
	e->used = 1;
	e->gen = st->nodes_gen;
	e->state_gen = st->nodes_state_gen;
	e->r = *r;
	e->code = (uint8_t)best;
	return best;
}
