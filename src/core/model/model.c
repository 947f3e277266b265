/*
 * model: construction and queries of the static resource model
 * (see model.h). No I/O: descriptors are parsed elsewhere (src/descriptor)
 * and trace readers live in src/sim.
 */
#include "model.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../lib/xalloc.h"

static const char *const class_names[XP_CLASS_N] = { "cpu",  "gpu", "npu", "fpga",
						     "asic", "dpu", "cim" };
static const char *const health_names[] = { "ok", "degraded", "unhealthy", "unknown" };
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
