/*
 * fake: devices from a descriptor file (docs/descriptor.md) - for tests and
 * for emulating a machine that is not there (`xpool agent` with a devices
 * file, `xpool dev`).
 *
 * The file must describe exactly one node. Its devices are copied onto the
 * discovered node as they are (class, vendor, model, memory, links,
 * islands, partitions, attributes, health, UUIDs, PCI bus ids), with link
 * peers and islands shifted past whatever the node already holds. The
 * node's own figures (cpu, memory, arch, NUMA domains, zone, region,
 * labels) are copied where the file sets them, so in emulation - where this
 * family runs after cpu - the file wins over the real host.
 *
 * Stats report the health written in the file (unknown figures are -1).
 * The environment names the family indices in XP_FAKE_VISIBLE_DEVICES, and
 * sets the variable the device's vendor runtime reads (CUDA_VISIBLE_DEVICES
 * for NVIDIA, ROCR_/HIP_VISIBLE_DEVICES for AMD, ASCEND_RT_VISIBLE_DEVICES,
 * MLU_VISIBLE_DEVICES) as a real node of that vendor would, so an emulated
 * task sees which devices it was given the way a real one does - and a
 * task given none of a vendor's devices sees that variable hide them all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../descriptor/descriptor.h"
#include "../lib/xalloc.h"
#include "hal_int.h"

struct xp_hal_family {
	char *path;
	struct xp_cluster *desc; /* one node */
};

static void fake_close(struct xp_hal_family *f)
{
	if (!f)
		return;
	xp_cluster_destroy(f->desc);
	free(f->path);
	free(f);
}

static int fake_probe(const struct xp_hal_opts *o, struct xp_hal_family **out, struct xp_err *err)
{
	*out = NULL;
	if (!o || !o->devices_file)
		return xp_errf(err, XP_ENOENT, "no devices file given");
	struct xp_cluster *c = xp_descriptor_load_file(o->devices_file, err);
	if (!c)
		return err && err->code ? err->code : XP_EINVAL;
	if (c->nnodes != 1) {
		size_t nn = c->nnodes;
		xp_cluster_destroy(c);
		return xp_errf(err, XP_EINVAL, "%s: describes %zu nodes; a devices file has one",
			       o->devices_file, nn);
	}
	struct xp_hal_family *f = XNEW(struct xp_hal_family);
	f->path = xstrdup(o->devices_file);
	f->desc = c;
	*out = f;
	return 0;
}

static xp_sym resym(struct xp_cluster *dst, const struct xp_cluster *src, xp_sym s)
{
	return s ? xp_strtab_intern(dst->syms, xp_strtab_str(src->syms, s)) : 0;
}

static int fake_enumerate(struct xp_hal_family *f, struct xp_cluster *c, struct xp_node *n,
			  struct xp_err *err)
{
	const struct xp_node *s = &f->desc->nodes[0];
	uint16_t base = n->ndevs;
	int16_t island = xp_hal_next_island(n);

	if (s->cpu_milli)
		n->cpu_milli = s->cpu_milli;
	if (s->mem_mib)
		n->mem_mib = s->mem_mib;
	if (s->arch)
		n->arch = resym(c, f->desc, s->arch);
	if (s->numa_domains)
		n->numa_domains = s->numa_domains;
	if (s->zone)
		n->zone = resym(c, f->desc, s->zone);
	if (s->region)
		n->region = resym(c, f->desc, s->region);
	for (uint16_t i = 0; i < s->nlabels; i++)
		xp_attrs_set(&n->labels, &n->nlabels, s->labels[i].key, s->labels[i].value);

	for (uint16_t i = 0; i < s->ndevs; i++) {
		const struct xp_device *sd = &s->devs[i];
		struct xp_device *d = xp_hal_add_device(n, "fake", i, err);
		if (!d)
			return XP_ENOSPC;
		d->cls = sd->cls;
		d->health = sd->health;
		d->mode = sd->mode;
		d->replicas = sd->replicas;
		d->mem_overcommit = sd->mem_overcommit;
		d->vendor = resym(c, f->desc, sd->vendor);
		d->model = resym(c, f->desc, sd->model);
		d->arch = resym(c, f->desc, sd->arch);
		d->cc = sd->cc;
		d->mem_mib = sd->mem_mib;
		d->mem_bw_mb_s = sd->mem_bw_mb_s;
		memcpy(d->peak_gflops, sd->peak_gflops, sizeof(d->peak_gflops));
		d->tdp_w = sd->tdp_w;
		d->idle_w = sd->idle_w;
		d->numa = sd->numa;
		d->island = sd->island >= 0 ? (int16_t)(sd->island + island) : -1;
		d->uuid = sd->uuid ? xstrdup(sd->uuid) : NULL;
		d->pci_bus_id = sd->pci_bus_id ? xstrdup(sd->pci_bus_id) : NULL;
		for (uint16_t l = 0; l < sd->nlinks; l++)
			xp_link_add(d, sd->links[l].kind,
				    sd->links[l].peer >= 0 ? sd->links[l].peer + base : -1,
				    sd->links[l].gbps);
		if (sd->nparts) {
			d->parts = XNEWV(struct xp_partition, sd->nparts);
			for (uint16_t p = 0; p < sd->nparts; p++) {
				d->parts[p] = sd->parts[p];
				d->parts[p].name = xstrdup(sd->parts[p].name);
			}
			d->nparts = sd->nparts;
		}
		for (uint16_t a = 0; a < sd->nattrs; a++)
			if (strcmp(sd->attrs[a].key, "hal") != 0 &&
			    strcmp(sd->attrs[a].key, "hal_index") != 0)
				xp_hal_attr(d, sd->attrs[a].key, sd->attrs[a].value);
	}
	return 0;
}

static int fake_stats(struct xp_hal_family *f, unsigned idx, struct xp_hal_stats *s,
		      struct xp_err *err)
{
	const struct xp_node *n = &f->desc->nodes[0];
	xp_hal_stats_init(s);
	if (idx >= n->ndevs)
		return xp_errf(err, XP_ENOENT, "no fake device %u (%u in %s)", idx,
			       (unsigned)n->ndevs, f->path);
	s->health = n->devs[idx].health;
	if (s->health != XP_HEALTH_OK)
		snprintf(s->why, sizeof(s->why), "%s in %s", xp_health_name(s->health), f->path);
	return 0;
}

/* The vendor variable a real device of this kind would need, or NULL. */
static const char *vendor_var(const struct xp_cluster *c, const struct xp_device *d, int second)
{
	const char *v = xp_strtab_str(c->syms, d->vendor);
	if (!strcasecmp(v, "NVIDIA"))
		return second ? NULL : "CUDA_VISIBLE_DEVICES";
	if (!strcasecmp(v, "AMD"))
		return second ? "HIP_VISIBLE_DEVICES" : "ROCR_VISIBLE_DEVICES";
	if (!strcasecmp(v, "Huawei") || !strcasecmp(v, "Ascend"))
		return second ? NULL : "ASCEND_RT_VISIBLE_DEVICES";
	if (!strcasecmp(v, "Cambricon"))
		return second ? NULL : "MLU_VISIBLE_DEVICES";
	return NULL;
}

/* What a vendor variable says when none of its devices are given: an
 * empty list hides all for most runtimes; ROCm reads -1. */
static const char *hide_all(const char *var)
{
	return !strncmp(var, "ROCR_", 5) || !strncmp(var, "HIP_", 4) ? "-1" : "";
}

static int fake_env(struct xp_hal_family *f, const unsigned *idx, unsigned n, struct xp_sb *out)
{
	const struct xp_node *node = &f->desc->nodes[0];
	xp_sb_puts(out, "XP_FAKE_VISIBLE_DEVICES=");
	for (unsigned i = 0; i < n; i++) {
		if (idx[i] >= node->ndevs)
			return XP_ENOENT;
		xp_sb_printf(out, "%s%u", i ? "," : "", idx[i]);
	}
	xp_sb_putc(out, '\n');
	/* and what each vendor's runtime reads, as a real node would set it,
	 * for every vendor variable this node has - given devices or none: the
	 * device's UUID, else its index among the node's devices of that
	 * vendor; the second variable (HIP) numbers the given ones 0..k-1 */
	for (int second = 0; second < 2; second++)
		for (unsigned d = 0; d < node->ndevs; d++) {
			const char *var = vendor_var(f->desc, &node->devs[d], second);
			unsigned e, k = 0;
			if (!var)
				continue;
			for (e = 0; e < d; e++) /* written already, for an earlier device */
				if (vendor_var(f->desc, &node->devs[e], second) == var)
					break;
			if (e < d)
				continue;
			xp_sb_printf(out, "%s=", var);
			for (unsigned i = 0; i < n; i++) {
				const struct xp_device *g = &node->devs[idx[i]];
				if (vendor_var(f->desc, g, second) != var)
					continue;
				unsigned local = 0;
				for (e = 0; e < idx[i]; e++)
					local += node->devs[e].vendor == g->vendor;
				if (g->uuid && !second)
					xp_sb_printf(out, "%s%s", k ? "," : "", g->uuid);
				else
					xp_sb_printf(out, "%s%u", k ? "," : "", second ? k : local);
				k++;
			}
			if (!k)
				xp_sb_puts(out, hide_all(var));
			xp_sb_putc(out, '\n');
		}
	return 0;
}

const struct xp_device_ops xp_hal_fake_ops = {
	.abi = XP_HAL_ABI,
	.name = "fake",
	.probe = fake_probe,
	.enumerate = fake_enumerate,
	.stats = fake_stats,
	.env = fake_env,
	.close = fake_close,
};
