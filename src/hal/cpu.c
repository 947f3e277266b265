/*
 * cpu: the host itself, through hwloc (linked, not dlopened: every
 * supported distribution ships it).
 *
 * Probe loads the hwloc topology with PCI devices kept (the "important"
 * I/O filter), so that enumerate can place devices on NUMA domains.
 *
 * Enumerate fills node figures rather than adding devices: cpu_milli =
 * 1000 per processing unit hwloc lists (hardware threads the process may
 * use: a cpuset-restricted agent reports its share), mem_mib = the
 * memory the node really has: MemTotal or the cgroup's limit, whichever is
 * lower (hwloc's total only when neither reads: on some VMs it counts one
 * NUMA node, 5.2 of 23.5 GiB), with label memory.source saying which, arch = the machine architecture ("x86_64",
 * "aarch64"), numa_domains = NUMA nodes (at least 1). Sockets, cores,
 * threads and the CPU model go into node labels cpu.sockets, cpu.cores,
 * cpu.threads, cpu.model, cpu.vendor.
 *
 * PCI locality: a device already on the node with numa -1 and a PCI bus id
 * gets the NUMA node (OS index, as numactl numbers them) of the closest
 * non-I/O ancestor of its PCI object, when that ancestor lies in exactly
 * one NUMA node. This is why the router runs this family last.
 *
 * The family owns no devices: stats answers XP_ENOENT and env writes
 * nothing (CPU placement is the agent's cpuset, not an environment
 * variable).
 */
#include <hwloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "../lib/xalloc.h"
#include "hal_int.h"

struct xp_hal_family {
	hwloc_topology_t topo;
};

static void cpu_close(struct xp_hal_family *f)
{
	if (!f)
		return;
	if (f->topo)
		hwloc_topology_destroy(f->topo);
	free(f);
}

static int cpu_probe(const struct xp_hal_opts *o, struct xp_hal_family **out, struct xp_err *err)
{
	struct xp_hal_family *f = XNEW(struct xp_hal_family);
	*out = NULL;
	if (hwloc_topology_init(&f->topo) < 0) {
		f->topo = NULL;
		cpu_close(f);
		return xp_errf(err, XP_EIO, "hwloc_topology_init failed");
	}
	hwloc_topology_set_io_types_filter(f->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (hwloc_topology_load(f->topo) < 0) {
		cpu_close(f);
		return xp_errf(err, XP_EIO, "hwloc_topology_load failed");
	}
	*out = f;
	return 0;
}

static void label(struct xp_node *n, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void label(struct xp_node *n, const char *key, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	xp_attrs_set(&n->labels, &n->nlabels, key, buf);
}

/* NUMA node (OS index) of the PCI device at bus id s, or -1. */
static int pci_numa(hwloc_topology_t t, const char *s)
{
	unsigned dom, bus, dev, fn;
	if (xp_hal_pci_parse(s, &dom, &bus, &dev, &fn) < 0)
		return -1;
	hwloc_obj_t o = hwloc_get_pcidev_by_busid(t, dom, bus, dev, fn);
	if (!o && fn)
		o = hwloc_get_pcidev_by_busid(t, dom, bus, dev, 0);
	if (!o)
		return -1;
	hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(t, o);
	if (!a || !a->nodeset || hwloc_bitmap_weight(a->nodeset) != 1)
		return -1;
	return hwloc_bitmap_first(a->nodeset);
}

/* the first number on the line of f that starts with key, 0 when none */
static uint64_t read_number(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char line[256];
	uint64_t v = 0;
	if (!f)
		return 0;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl)) {
			v = strtoull(line + kl, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

uint64_t xp_hal_host_memory(const char *root, uint64_t hwloc_bytes, const char **source)
{
	char p[4096];
	const char *src = "hwloc";
	uint64_t mem = 0;
	snprintf(p, sizeof(p), "%s/proc/meminfo", root);
	uint64_t kib = read_number(p, "MemTotal:");
	if (kib) {
		mem = kib * 1024;
		src = "meminfo";
	}
	static const char *const limits[] = { "/sys/fs/cgroup/memory.max",
					      "/sys/fs/cgroup/memory/memory.limit_in_bytes" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s%s", root, limits[i]);
		uint64_t lim = read_number(p, ""); /* "max" reads as 0: no limit */
		if (lim && (!mem || lim < mem)) {
			mem = lim;
			src = "cgroup";
		}
	}
	if (!mem)
		mem = hwloc_bytes;
	if (source)
		*source = src;
	return mem;
}

static int cpu_enumerate(struct xp_hal_family *f, struct xp_cluster *c, struct xp_node *n,
			 struct xp_err *err)
{
	hwloc_topology_t t = f->topo;
	hwloc_obj_t root = hwloc_get_root_obj(t);
	int pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
	int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
	int pkgs = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
	int numa = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);

	if (pus <= 0) {
		long np = sysconf(_SC_NPROCESSORS_ONLN);
		pus = np > 0 ? (int)np : 1;
	}
	n->cpu_milli = (uint64_t)pus * 1000;

	const char *msrc;
	uint64_t mem = xp_hal_host_memory("", root ? root->total_memory : 0, &msrc);
	if (!mem) {
		long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
		if (pages > 0 && psz > 0)
			mem = (uint64_t)pages * (uint64_t)psz;
	}
	if (!mem)
		return xp_errf(err, XP_EIO, "cannot tell the machine's memory");
	n->mem_mib = mem >> 20;
	n->numa_domains = (uint16_t)(numa > 0 ? numa : 1);

	const char *arch = root ? hwloc_obj_get_info_by_name(root, "Architecture") : NULL;
	struct utsname u;
	if (!arch && uname(&u) == 0)
		arch = u.machine;
	if (arch && *arch)
		n->arch = xp_strtab_intern(c->syms, arch);

	label(n, "memory.source", "%s", msrc);
	label(n, "cpu.sockets", "%d", pkgs > 0 ? pkgs : 1);
	label(n, "cpu.cores", "%d", cores > 0 ? cores : pus);
	label(n, "cpu.threads", "%d", pus);
	hwloc_obj_t pkg = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
	const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
	const char *vendor = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUVendor") : NULL;
	if (model && *model)
		label(n, "cpu.model", "%s", model);
	if (vendor && *vendor)
		label(n, "cpu.vendor", "%s", vendor);

	for (uint16_t i = 0; i < n->ndevs; i++) {
		struct xp_device *d = &n->devs[i];
		if (d->numa >= 0 || !d->pci_bus_id)
			continue;
		int nn = pci_numa(t, d->pci_bus_id);
		if (nn >= 0 && nn < 32768)
			d->numa = (int16_t)nn;
	}
	return 0;
}

static int cpu_stats(struct xp_hal_family *f, unsigned idx, struct xp_hal_stats *s,
		     struct xp_err *err)
{
	xp_hal_stats_init(s);
	return xp_errf(err, XP_ENOENT, "the cpu family owns no devices");
}

static int cpu_env(struct xp_hal_family *f, const unsigned *idx, unsigned n, struct xp_sb *out)
{
	return n ? XP_ENOENT : 0;
}

const struct xp_device_ops xp_hal_cpu_ops = {
	.abi = XP_HAL_ABI,
	.name = "cpu",
	.probe = cpu_probe,
	.enumerate = cpu_enumerate,
	.stats = cpu_stats,
	.env = cpu_env,
	.close = cpu_close,
};
