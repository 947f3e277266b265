/*
 * model: construction and queries of the static resource model
 * (see model.h). No I/O: descriptors are parsed elsewhere (src/descriptor)
 * and trace readers live in src/sim.
 */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../lib/xalloc.h"
#include "mig.h"

static const char *const class_names[XP_CLASS_N] = { "cpu",  "gpu", "npu", "fpga",
						     "asic", "dpu", "cim" };
static const char *const health_names[] = { "ok", "degraded", "unhealthy", "unknown" };
static const char *const mode_names[XP_MODE_N] = { "shared", "whole", "timeslice", "mig" };
static const char *const link_names[XP_LINK_N] = { "nvlink", "hccs",	 "xgmi", "pcie",
						   "rdma",   "ethernet", "cxl",	 "other" };
static const char *const prec_names[XP_PREC_N] = { "fp64", "fp32", "tf32", "fp16",
						   "bf16", "fp8",  "int8" };

static int lookup(const char *const *names, int n, const char *s)
{
	for (int i = 0; i < n; i++)
		if (strcasecmp(names[i], s) == 0)
			return i;
	return -1;
}

const char *xp_class_name(int cls)
{
	return cls >= 0 && cls < XP_CLASS_N ? class_names[cls] : "any";
}

int xp_class_parse(const char *s)
{
	return lookup(class_names, XP_CLASS_N, s);
}

const char *xp_health_name(int h)
{
	return h >= 0 && h <= XP_HEALTH_UNKNOWN ? health_names[h] : "unknown";
}

int xp_health_parse(const char *s)
{
	return lookup(health_names, XP_HEALTH_UNKNOWN + 1, s);
}

const char *xp_mode_name(int mode)
{
	return mode >= 0 && mode < XP_MODE_N ? mode_names[mode] : "shared";
}

int xp_mode_parse(const char *s)
{
	return lookup(mode_names, XP_MODE_N, s);
}

uint16_t xp_share_by_mem(uint64_t dev_mem_mib, uint64_t mem_mib)
{
	if (!mem_mib || dev_mem_mib >= mem_mib)
		return XP_MILLI;
	uint64_t m = (dev_mem_mib * XP_MILLI + mem_mib - 1) / mem_mib;
	return (uint16_t)(m ? m : 1);
}

uint16_t xp_slot_milli(const struct xp_device *d, uint16_t dev_count, uint16_t dev_milli,
		       int by_mem, uint64_t dev_mem_mib)
{
	if (by_mem)
		return xp_share_by_mem(dev_mem_mib, d->mem_mib);
	if (dev_count == 1 && dev_milli >= XP_MILLI && d->mode == XP_MODE_TIMESLICE)
		return xp_replica_milli(d->replicas);
	return dev_milli;
}

uint64_t xp_dev_admit_mib(const struct xp_device *d)
{
	unsigned f = d->mem_overcommit ? d->mem_overcommit : XP_OVERCOMMIT_NONE;
	return d->mem_mib * f / XP_OVERCOMMIT_NONE;
}

/* one item: F, CLASS=F or MODEL=F */
static int oc_item(const char *item, size_t len, struct xp_oc_rule *r, struct xp_err *err)
{
	char buf[96], *eq, *end;
	if (len == 0 || len >= sizeof(buf))
		return xp_errf(err, XP_EINVAL, "expected F, CLASS=F or MODEL=F, got '%.*s'",
			       (int)(len < 60 ? len : 60), item);
	memcpy(buf, item, len);
	buf[len] = '\0';
	eq = strchr(buf, '=');
	const char *num = eq ? eq + 1 : buf;
	double f = strtod(num, &end);
	if (!*num || *end || !(f >= 1) || f > XP_OVERCOMMIT_MAX / 100.0)
		return xp_errf(err, XP_ERANGE, "'%s': expected a factor from 1 to %d", buf,
			       XP_OVERCOMMIT_MAX / 100);
	r->pct = (uint16_t)(f * 100 + 0.5);
	r->cls = -2;
	r->model[0] = '\0';
	if (!eq)
		return 0;
	*eq = '\0';
	if (!buf[0] || strlen(buf) >= sizeof(r->model))
		return xp_errf(err, XP_EINVAL, "'%.60s': expected a class or model before '='",
			       item);
	r->cls = (int8_t)xp_class_parse(buf);
	if (r->cls == XP_CLASS_CPU)
		return xp_errf(err, XP_EINVAL, "'%s': CPUs have no device memory to overcommit",
			       buf);
	snprintf(r->model, sizeof(r->model), "%s", buf);
	return 0;
}

int xp_oc_rules_parse(const char *s, struct xp_oc_rules *out, struct xp_err *err)
{
	memset(out, 0, sizeof(*out));
	while (s && *s) {
		size_t len = strcspn(s, ",");
		if (out->n == XP_OC_RULES)
			return xp_errf(err, XP_ERANGE, "more than %d rules", XP_OC_RULES);
		int rc = oc_item(s, len, &out->r[out->n], err);
		if (rc < 0)
			return rc;
		out->n++;
		s += len + (s[len] == ',');
	}
	return 0;
}

void xp_oc_rules_apply(const struct xp_oc_rules *r, const struct xp_cluster *c, struct xp_node *n)
{
	for (uint16_t d = 0; d < n->ndevs; d++) {
		struct xp_device *dv = &n->devs[d];
		const char *model = dv->model ? xp_strtab_str(c->syms, dv->model) : "";
		int best = 0; /* 3 model, 2 class, 1 any */
		if (dv->cls == XP_CLASS_CPU || dv->mem_overcommit)
			continue;
		for (uint8_t i = 0; i < r->n; i++) {
			const struct xp_oc_rule *x = &r->r[i];
			int rank = x->cls == -2		     ? 1
				   : x->cls == (int8_t)dv->cls ? 2
				   : x->cls == -1 && !strcasecmp(x->model, model) ? 3
										  : 0;
			if (rank > best) {
				best = rank;
				dv->mem_overcommit = x->pct;
			}
		}
	}
}

const char *xp_link_name(int kind)
{
	return kind >= 0 && kind < XP_LINK_N ? link_names[kind] : "other";
}

int xp_link_parse(const char *s)
{
	int k = lookup(link_names, XP_LINK_N, s);
	if (k < 0 && (strcasecmp(s, "eth") == 0 || strcasecmp(s, "roce") == 0))
		k = strcasecmp(s, "roce") == 0 ? XP_LINK_RDMA : XP_LINK_ETH;
	if (k < 0 && (strcasecmp(s, "infiniband") == 0 || strcasecmp(s, "ib") == 0))
		k = XP_LINK_RDMA;
	if (k < 0 && strcasecmp(s, "infinityfabric") == 0)
		k = XP_LINK_XGMI;
	return k;
}

const char *xp_prec_name(int p)
{
	return p >= 0 && p < XP_PREC_N ? prec_names[p] : "?";
}

int xp_prec_parse(const char *s)
{
	return lookup(prec_names, XP_PREC_N, s);
}

struct xp_cluster *xp_cluster_create(void)
{
	struct xp_cluster *c = XNEW(struct xp_cluster);
	c->syms = xp_strtab_create();
	return c;
}

void xp_attrs_free(struct xp_attr *a, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++) {
		free(a[i].key);
		free(a[i].value);
	}
	free(a);
}

static void free_device(struct xp_device *d)
{
	free(d->uuid);
	free(d->pci_bus_id);
	free(d->links);
	for (uint16_t i = 0; i < d->nparts; i++)
		free(d->parts[i].name);
	free(d->parts);
	xp_attrs_free(d->attrs, d->nattrs);
}

void xp_cluster_destroy(struct xp_cluster *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nnodes; i++) {
		struct xp_node *n = &c->nodes[i];
		free(n->name);
		xp_attrs_free(n->labels, n->nlabels);
		for (uint16_t d = 0; d < n->ndevs; d++)
			free_device(&n->devs[d]);
		free(n->devs);
	}
	free(c->nodes);
	xp_strtab_destroy(c->syms);
	free(c);
}

struct xp_node *xp_cluster_add_node(struct xp_cluster *c, const char *name)
{
	if (c->nnodes == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->nodes = xreallocarray(c->nodes, c->cap, sizeof(*c->nodes));
	}
	struct xp_node *n = &c->nodes[c->nnodes++];
	memset(n, 0, sizeof(*n));
	n->name = xstrdup(name);
	n->numa_domains = 1;
	return n;
}

long xp_cluster_find_node(const struct xp_cluster *c, const char *name)
{
	for (size_t i = 0; i < c->nnodes; i++)
		if (strcmp(c->nodes[i].name, name) == 0)
			return (long)i;
	return -1;
}

struct xp_device *xp_node_add_device(struct xp_node *n)
{
	n->devs = xreallocarray(n->devs, (size_t)n->ndevs + 1, sizeof(*n->devs));
	struct xp_device *d = &n->devs[n->ndevs++];
	memset(d, 0, sizeof(*d));
	d->cls = XP_CLASS_GPU;
	d->health = XP_HEALTH_OK;
	d->numa = -1;
	d->island = -1;
	return d;
}

void xp_attrs_set(struct xp_attr **attrs, uint16_t *n, const char *key, const char *value)
{
	for (uint16_t i = 0; i < *n; i++)
		if (strcmp((*attrs)[i].key, key) == 0) {
			free((*attrs)[i].value);
			(*attrs)[i].value = xstrdup(value);
			return;
		}
	*attrs = xreallocarray(*attrs, (size_t)*n + 1, sizeof(**attrs));
	(*attrs)[*n].key = xstrdup(key);
	(*attrs)[*n].value = xstrdup(value);
	(*n)++;
}

const char *xp_attrs_get(const struct xp_attr *attrs, uint16_t n, const char *key)
{
	for (uint16_t i = 0; i < n; i++)
		if (strcmp(attrs[i].key, key) == 0)
			return attrs[i].value;
	return NULL;
}

void xp_link_add(struct xp_device *d, int kind, int peer, uint32_t gbps)
{
	d->links = xreallocarray(d->links, (size_t)d->nlinks + 1, sizeof(*d->links));
	memset(&d->links[d->nlinks], 0,
	       sizeof(d->links[0])); /* padding too: links compare bytewise */
	d->links[d->nlinks].kind = (uint8_t)kind;
	d->links[d->nlinks].peer = (int16_t)peer;
	d->links[d->nlinks].gbps = gbps;
	d->nlinks++;
}

uint64_t xp_cluster_total_devices(const struct xp_cluster *c, int cls)
{
	uint64_t t = 0;
	for (size_t i = 0; i < c->nnodes; i++)
		for (uint16_t d = 0; d < c->nodes[i].ndevs; d++)
			if (cls < 0 || c->nodes[i].devs[d].cls == cls)
				t++;
	return t;
}

void xp_request_init(struct xp_request *r)
{
	memset(r, 0, sizeof(*r));
	r->sel.cls = -1;
	r->node = -1;
}

int xp_request_check(const struct xp_request *r, struct xp_err *err)
{
	if (r->cpu_milli > XP_MAX_CPU_MILLI)
		return xp_errf(err, XP_ERANGE, "cpu: %llu milli-cores is more than any node has",
			       (unsigned long long)r->cpu_milli);
	if (r->mem_mib > XP_MAX_MEM_MIB)
		return xp_errf(err, XP_ERANGE, "memory: %llu MiB is more than any node has",
			       (unsigned long long)r->mem_mib);
	if (r->dev_count > XP_MAX_NODE_DEVS)
		return xp_errf(err, XP_ERANGE,
			       "devices.count: %u is more than the %d a node may hold",
			       r->dev_count, XP_MAX_NODE_DEVS);
	if (r->dev_count == 0) {
		if (r->dev_milli || r->dev_mem_mib)
			return xp_errf(err, XP_EINVAL,
				       "devices: compute or memory per device given with count 0");
		return 0;
	}
	if (r->dev_milli == 0 || r->dev_milli > XP_MILLI)
		return xp_errf(err, XP_ERANGE, "devices.compute_milli: %u, expected 1..%d",
			       r->dev_milli, XP_MILLI);
	if (r->dev_milli < XP_MILLI && r->dev_count > 1)
		return xp_errf(err, XP_EINVAL,
			       "devices: a fraction (%u milli) is allowed for one device only, "
			       "not %u",
			       r->dev_milli, r->dev_count);
	if (r->dev_mem_mib > XP_MAX_MEM_MIB)
		return xp_errf(err, XP_ERANGE, "devices.memory: %llu MiB is out of range",
			       (unsigned long long)r->dev_mem_mib);
	if (r->sel.cls >= XP_CLASS_N || r->sel.cls < -1)
		return xp_errf(err, XP_EINVAL, "devices.class: unknown class %d", r->sel.cls);
	if (r->sel.nmodels > XP_MAX_SEL_MODELS)
		return xp_errf(err, XP_ERANGE, "devices.models: more than %d models",
			       XP_MAX_SEL_MODELS);
	if (r->topo > XP_TOPO_SAME_NUMA)
		return xp_errf(err, XP_EINVAL, "devices.topology: unknown constraint %u", r->topo);
	return 0;
}

int xp_selector_match(const struct xp_selector *s, const struct xp_device *d)
{
	if (s->cls >= 0 ? d->cls != (uint8_t)s->cls : d->cls == XP_CLASS_CPU)
		return 0;
	if (s->vendor && d->vendor != s->vendor)
		return 0;
	if (s->nmodels) {
		int hit = 0;
		for (uint8_t i = 0; i < s->nmodels; i++)
			if (s->models[i] == d->model) {
				hit = 1;
				break;
			}
		if (!hit)
			return 0;
	}
	if (d->mem_mib < s->min_mem_mib)
		return 0;
	if (d->cc < s->min_cc)
		return 0;
	return 1;
}

int xp_selector_add_model(struct xp_selector *s, xp_sym model)
{
	for (uint8_t i = 0; i < s->nmodels; i++)
		if (s->models[i] == model)
			return 0;
	if (s->nmodels >= XP_MAX_SEL_MODELS)
		return XP_ERANGE;
	/* kept sorted, so equal selectors are equal byte for byte */
	uint8_t i = s->nmodels;
	while (i > 0 && s->models[i - 1] > model) {
		s->models[i] = s->models[i - 1];
		i--;
	}
	s->models[i] = model;
	s->nmodels++;
	return 0;
}

int xp_cc_parse(const char *s, uint32_t *out)
{
	uint32_t maj = 0, min = 0;
	int nd = 0, nf = 0;

	for (; *s >= '0' && *s <= '9' && nd < 3; s++, nd++)
		maj = maj * 10 + (uint32_t)(*s - '0');
	if (nd == 0 || nd > 2)
		return XP_EINVAL;
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9' && nf < 3; s++, nf++)
			min = min * 10 + (uint32_t)(*s - '0');
		if (nf == 0 || nf > 2)
			return XP_EINVAL;
		if (nf == 1)
			min *= 10;
	}
	if (*s)
		return XP_EINVAL;
	*out = maj * 100 + min;
	return 0;
}

void xp_cc_format(uint32_t cc, char *out, size_t len)
{
	if (cc % 10)
		snprintf(out, len, "%u.%02u", cc / 100, cc % 100);
	else
		snprintf(out, len, "%u.%u", cc / 100, cc % 100 / 10);
}

static void copy_attrs(struct xp_attr **dst, uint16_t *nd, const struct xp_attr *src, uint16_t n)
{
	for (uint16_t i = 0; i < n; i++)
		xp_attrs_set(dst, nd, src[i].key, src[i].value);
}

static xp_sym resym(struct xp_cluster *dst, const struct xp_cluster *src, xp_sym s)
{
	return s ? xp_strtab_intern(dst->syms, xp_strtab_str(src->syms, s)) : 0;
}

struct xp_node *xp_cluster_copy_node(struct xp_cluster *dst, const struct xp_cluster *src,
				     const struct xp_node *n, const char *name)
{
	struct xp_node *o = xp_cluster_add_node(dst, name ? name : n->name);
	o->cpu_milli = n->cpu_milli;
	o->mem_mib = n->mem_mib;
	o->arch = resym(dst, src, n->arch);
	o->zone = resym(dst, src, n->zone);
	o->region = resym(dst, src, n->region);
	o->numa_domains = n->numa_domains;
	o->dedicated = n->dedicated;
	copy_attrs(&o->labels, &o->nlabels, n->labels, n->nlabels);
	for (uint16_t i = 0; i < n->ndevs; i++) {
		const struct xp_device *d = &n->devs[i];
		struct xp_device *e = xp_node_add_device(o);
		struct xp_link *links = e->links;
		*e = *d;
		e->links = links;
		e->nlinks = 0;
		e->vendor = resym(dst, src, d->vendor);
		e->model = resym(dst, src, d->model);
		e->arch = resym(dst, src, d->arch);
		e->uuid = d->uuid ? xstrdup(d->uuid) : NULL;
		e->pci_bus_id = d->pci_bus_id ? xstrdup(d->pci_bus_id) : NULL;
		for (uint16_t l = 0; l < d->nlinks; l++)
			xp_link_add(e, d->links[l].kind, d->links[l].peer, d->links[l].gbps);
		e->parts = d->nparts ? XNEWV(struct xp_partition, d->nparts) : NULL;
		for (uint16_t p = 0; p < d->nparts; p++) {
			e->parts[p] = d->parts[p];
			e->parts[p].name = xstrdup(d->parts[p].name);
		}
		e->attrs = NULL;
		e->nattrs = 0;
		copy_attrs(&e->attrs, &e->nattrs, d->attrs, d->nattrs);
	}
	return o;
}

int xp_dev_mig_offers(const struct xp_cluster *c, const struct xp_device *d, const char *name)
{
	if (d->nparts) {
		for (uint16_t i = 0; i < d->nparts; i++)
			if (d->parts[i].name && !strcasecmp(d->parts[i].name, name))
				return 1;
		return 0;
	}
	if (d->mode != XP_MODE_MIG || !d->model)
		return 0;
	const struct xp_mig_table *t = xp_mig_table_find(xp_strtab_str(c->syms, d->model));
	return t && xp_mig_profile_find(t, name, NULL) >= 0;
}

int xp_dev_mig_covers(const struct xp_cluster *c, const struct xp_device *d, uint32_t compute_milli,
		      uint64_t mem_mib)
{
	unsigned need = xp_mig_slices_for(compute_milli);
	if (d->nparts) {
		for (uint16_t i = 0; i < d->nparts; i++) {
			const struct xp_partition *p = &d->parts[i];
			if (p->name && !strstr(p->name, "+me") && p->mem_mib >= mem_mib &&
			    xp_mig_slices_for(p->compute_milli) >= need)
				return 1;
		}
		return 0;
	}
	if (d->mode != XP_MODE_MIG || !d->model)
		return 0;
	const struct xp_mig_table *t = xp_mig_table_find(xp_strtab_str(c->syms, d->model));
	return t && xp_mig_smallest(t, compute_milli, mem_mib) >= 0;
}
