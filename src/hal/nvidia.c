/*
 * nvidia: NVIDIA GPUs through NVML (libnvidia-ml.so.1), opened at run time.
 *
 * Probe loads NVML, binds its functions (nvml_abi.h; the ten that every
 * R410+ driver exports are required, the rest - NVLink, MIG, NUMA, events,
 * row remapping - are used when present), calls nvmlInit_v2, checks the
 * NVML version (major >= 10, i.e. driver R410 or newer) and takes a handle
 * per GPU. A GPU whose handle cannot be taken is still reported, unhealthy,
 * with NVML's reason: the scheduler should see a broken GPU, not no GPU.
 *
 * Enumerate reads each GPU (name, UUID, memory, compute capability, PCI bus
 * id, NUMA node, default power limit, MIG mode and instances) and derives
 * NVLink islands: a GPU's active links lead either straight to another GPU
 * (a direct link) or to a device that is not a GPU here (an NVSwitch); GPUs
 * joined through either form one island, and every pair in an island that
 * is directly linked or shares the switch fabric gets an NVLink link.
 *
 * MIG (nvidia_mig.c): a MIG-capable GPU, in MIG mode or not, gets its
 * GPU instance profiles as partitions and their placements as attributes;
 * a GPU in MIG mode keeps its place as one device (mode mig), attribute
 * "mig_instances" lists the UUIDs of its MIG devices and its environment
 * names them, since CUDA does not run on a MIG-mode GPU by its GPU UUID.
 * The mig_* ops list, create and destroy GPU instances; nothing here
 * changes a GPU's MIG mode.
 *
 * Health (stats): uncorrectable volatile ECC errors, row-remapping failure
 * (unhealthy) or pending (degraded), "GPU is lost" from any query, and
 * critical XID events. XIDs arrive on an NVML event set registered at probe
 * and drained without waiting on every stats call; an XID is sticky until
 * the family is reopened (the GPU needs a reset), except the XIDs that
 * application faults cause (13, 31, 43, 45, 68, 109), which are ignored as
 * the Kubernetes device plugin does.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xalloc.h"
#include "nvidia_int.h"

#define NVML_MIN_MAJOR 10

#define REQ(fn) XP_HAL_SYM(struct nvml_fns, fn, 1)
#define OPT(fn) XP_HAL_SYM(struct nvml_fns, fn, 0)
static const struct xp_hal_sym nvml_syms[] = {
	REQ(nvmlInit_v2),
	REQ(nvmlShutdown),
	REQ(nvmlErrorString),
	REQ(nvmlSystemGetNVMLVersion),
	REQ(nvmlDeviceGetCount_v2),
	REQ(nvmlDeviceGetHandleByIndex_v2),
	REQ(nvmlDeviceGetName),
	REQ(nvmlDeviceGetUUID),
	REQ(nvmlDeviceGetMemoryInfo),
	REQ(nvmlDeviceGetPciInfo_v3),
	OPT(nvmlSystemGetDriverVersion),
	OPT(nvmlDeviceGetCudaComputeCapability),
	OPT(nvmlDeviceGetNumaNodeId),
	OPT(nvmlDeviceGetMinorNumber),
	OPT(nvmlDeviceGetPowerManagementDefaultLimit),
	OPT(nvmlDeviceGetNvLinkState),
	OPT(nvmlDeviceGetNvLinkRemotePciInfo_v2),
	OPT(nvmlDeviceGetMigMode),
	OPT(nvmlDeviceGetMaxMigDeviceCount),
	OPT(nvmlDeviceGetMigDeviceHandleByIndex),
	OPT(nvmlDeviceGetUtilizationRates),
	OPT(nvmlDeviceGetPowerUsage),
	OPT(nvmlDeviceGetTemperature),
	OPT(nvmlDeviceGetTotalEccErrors),
	OPT(nvmlDeviceGetRemappedRows),
	OPT(nvmlEventSetCreate),
	OPT(nvmlDeviceRegisterEvents),
	OPT(nvmlEventSetWait_v2),
	OPT(nvmlEventSetFree),
#define MIGSYM(ret, name, args) OPT(name),
	XP_NVML_MIG_FUNCS(MIGSYM)
#undef MIGSYM
		{ NULL, 0, 0 },
};

const char *xp_nv_estr(const struct xp_hal_family *f, nvmlReturn_t r)
{
	const char *s = f->fn.nvmlErrorString ? f->fn.nvmlErrorString(r) : NULL;
	return s ? s : "unknown NVML error";
}

void xp_nv_free_mig(struct nv_gpu *g)
{
	for (unsigned i = 0; i < g->nmig; i++)
		free(g->mig_uuids[i]);
	free(g->mig_uuids);
	g->mig_uuids = NULL;
	g->nmig = 0;
	g->mig = 0;
}

static void nv_close(struct xp_hal_family *f)
{
	if (!f)
		return;
	if (f->events && f->fn.nvmlEventSetFree)
		f->fn.nvmlEventSetFree(f->events);
	if (f->fn.nvmlShutdown)
		f->fn.nvmlShutdown();
	for (unsigned i = 0; i < f->n; i++)
		xp_nv_free_mig(&f->g[i]);
	free(f->g);
	if (f->dl)
		dlclose(f->dl);
	free(f);
}

static void watch_xids(struct xp_hal_family *f)
{
	if (!f->fn.nvmlEventSetCreate || !f->fn.nvmlDeviceRegisterEvents ||
	    !f->fn.nvmlEventSetWait_v2 || !f->fn.nvmlEventSetFree)
		return;
	if (f->fn.nvmlEventSetCreate(&f->events) != NVML_SUCCESS) {
		f->events = NULL;
		return;
	}
	for (unsigned i = 0; i < f->n; i++)
		if (f->g[i].hret == NVML_SUCCESS) /* NOT_SUPPORTED on some boards: no XIDs */
			f->fn.nvmlDeviceRegisterEvents(f->g[i].h, nvmlEventTypeXidCriticalError,
						       f->events);
}

static int nv_probe(const struct xp_hal_opts *o, struct xp_hal_family **out, struct xp_err *err)
{
	static const char *const names[] = { "libnvidia-ml.so.1", NULL };
	struct xp_hal_family *f = XNEW(struct xp_hal_family);
	nvmlReturn_t r;
	int rc;

	*out = NULL;
	if ((rc = xp_hal_dl_open("nvidia", o, names, &f->dl, f->lib, sizeof(f->lib), err)) < 0 ||
	    (rc = xp_hal_dl_bind(f->dl, f->lib, nvml_syms, &f->fn, err)) < 0) {
		f->fn.nvmlShutdown = NULL; /* not initialised: do not shut down */
		nv_close(f);
		return rc;
	}
	if ((r = f->fn.nvmlInit_v2()) != NVML_SUCCESS) {
		rc = xp_errf(err, XP_EIO, "%s: nvmlInit_v2: %s (NVML error %d)", f->lib,
			     xp_nv_estr(f, r), r);
		f->fn.nvmlShutdown = NULL;
		nv_close(f);
		return rc;
	}
	if ((r = f->fn.nvmlSystemGetNVMLVersion(f->version, sizeof(f->version))) != NVML_SUCCESS ||
	    atoi(f->version) < NVML_MIN_MAJOR) {
		rc = r != NVML_SUCCESS
			     ? xp_errf(err, XP_EVERSION, "%s: nvmlSystemGetNVMLVersion: %s", f->lib,
				       xp_nv_estr(f, r))
			     : xp_errf(err, XP_EVERSION,
				       "%s: NVML %s is older than %d (driver R410): refusing it",
				       f->lib, f->version, NVML_MIN_MAJOR);
		nv_close(f);
		return rc;
	}
	f->version[sizeof(f->version) - 1] = '\0';
	if (f->fn.nvmlSystemGetDriverVersion &&
	    f->fn.nvmlSystemGetDriverVersion(f->driver, sizeof(f->driver)) != NVML_SUCCESS)
		f->driver[0] = '\0';
	f->driver[sizeof(f->driver) - 1] = '\0';

	unsigned count = 0;
	if ((r = f->fn.nvmlDeviceGetCount_v2(&count)) != NVML_SUCCESS) {
		rc = xp_errf(err, XP_EIO, "%s: nvmlDeviceGetCount_v2: %s", f->lib,
			     xp_nv_estr(f, r));
		nv_close(f);
		return rc;
	}
	if (count == 0) {
		rc = xp_errf(err, XP_ENOENT, "no NVIDIA GPUs (NVML %s)", f->version);
		nv_close(f);
		return rc;
	}
	if (count > XP_MAX_NODE_DEVS)
		count = XP_MAX_NODE_DEVS; /* a node holds no more */
	f->g = XNEWV(struct nv_gpu, count);
	f->n = count;
	for (unsigned i = 0; i < count; i++) {
		struct nv_gpu *g = &f->g[i];
		g->hret = f->fn.nvmlDeviceGetHandleByIndex_v2(i, &g->h);
		if (g->hret != NVML_SUCCESS)
			continue;
		if (f->fn.nvmlDeviceGetUUID(g->h, g->uuid, sizeof(g->uuid)) != NVML_SUCCESS)
			g->uuid[0] = '\0';
		if (f->fn.nvmlDeviceGetName(g->h, g->name, sizeof(g->name)) != NVML_SUCCESS)
			g->name[0] = '\0';
		g->uuid[sizeof(g->uuid) - 1] = g->name[sizeof(g->name) - 1] = '\0';
		nvmlPciInfo_t pci;
		memset(&pci, 0, sizeof(pci));
		if (f->fn.nvmlDeviceGetPciInfo_v3(g->h, &pci) == NVML_SUCCESS) {
			pci.busId[sizeof(pci.busId) - 1] = '\0';
			xp_hal_pci_norm(pci.busId, g->bus, sizeof(g->bus));
		}
	}
	watch_xids(f);
	*out = f;
	return 0;
}

static int nv_stats(struct xp_hal_family *f, unsigned idx, struct xp_hal_stats *s,
		    struct xp_err *err);

/* Union-find over GPU indices. */
static unsigned uf_find(unsigned *p, unsigned i)
{
	while (p[i] != i)
		i = p[i] = p[p[i]];
	return i;
}

static void uf_join(unsigned *p, unsigned a, unsigned b)
{
	a = uf_find(p, a);
	b = uf_find(p, b);
	if (a != b)
		p[a > b ? a : b] = a < b ? a : b;
}

/* NVLink topology of the family's GPUs, into devices base.. of n. */
static void nvlinks(struct xp_hal_family *f, struct xp_node *n, uint16_t base)
{
	unsigned cnt = f->n, parent[XP_MAX_NODE_DEVS];
	uint8_t direct[XP_MAX_NODE_DEVS][XP_MAX_NODE_DEVS], sw[XP_MAX_NODE_DEVS];
	struct {
		char bus[32];
		unsigned rep;
	} switches[32];
	unsigned nsw = 0;

	if (!f->fn.nvmlDeviceGetNvLinkState || !f->fn.nvmlDeviceGetNvLinkRemotePciInfo_v2)
		return;
	memset(direct, 0, sizeof(direct));
	memset(sw, 0, sizeof(sw));
	for (unsigned i = 0; i < cnt; i++)
		parent[i] = i;
	for (unsigned i = 0; i < cnt; i++) {
		if (f->g[i].hret != NVML_SUCCESS)
			continue;
		for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
			unsigned active = 0;
			nvmlPciInfo_t pci;
			char rb[32];
			nvmlReturn_t r = f->fn.nvmlDeviceGetNvLinkState(f->g[i].h, l, &active);
			if (r == NVML_ERROR_NOT_SUPPORTED && l == 0)
				break; /* no NVLink on this GPU */
			if (r != NVML_SUCCESS || active != NVML_FEATURE_ENABLED)
				continue;
			memset(&pci, 0, sizeof(pci));
			if (f->fn.nvmlDeviceGetNvLinkRemotePciInfo_v2(f->g[i].h, l, &pci) !=
			    NVML_SUCCESS)
				continue;
			pci.busId[sizeof(pci.busId) - 1] = '\0';
			if (xp_hal_pci_norm(pci.busId, rb, sizeof(rb)) < 0)
				continue;
			unsigned j = 0;
			while (j < cnt && strcmp(f->g[j].bus, rb) != 0)
				j++;
			if (j < cnt) {
				if (j != i) {
					direct[i][j] = 1;
					direct[j][i] = 1;
					uf_join(parent, i, j);
				}
				continue;
			}
			unsigned s = 0; /* not a GPU here: an NVSwitch */
			while (s < nsw && strcmp(switches[s].bus, rb) != 0)
				s++;
			if (s == nsw) {
				if (nsw == sizeof(switches) / sizeof(switches[0]))
					continue;
				snprintf(switches[nsw].bus, sizeof(switches[nsw].bus), "%s", rb);
				switches[nsw++].rep = i;
			}
			uf_join(parent, i, switches[s].rep);
			sw[i] = 1;
		}
	}

	int16_t island = xp_hal_next_island(n);
	for (unsigned i = 0; i < cnt; i++) {
		unsigned root = uf_find(parent, i), members = 0;
		for (unsigned j = 0; j < cnt; j++)
			members += uf_find(parent, j) == root;
		if (members < 2)
			continue;
		if (root == i) { /* the component's first GPU names the island */
			for (unsigned j = 0; j < cnt; j++)
				if (uf_find(parent, j) == root)
					n->devs[base + j].island = island;
			island++;
		}
		struct xp_device *d = &n->devs[base + i];
		xp_hal_attr(d, "interconnect", "NVLink");
		for (unsigned j = 0; j < cnt; j++)
			if (j != i && uf_find(parent, j) == root &&
			    (direct[i][j] || (sw[i] && sw[j])))
				xp_link_add(d, XP_LINK_NVLINK, base + j, 0);
	}
}

static int nv_enumerate(struct xp_hal_family *f, struct xp_cluster *c, struct xp_node *n,
			struct xp_err *err)
{
	uint16_t base = n->ndevs;
	xp_sym vendor = xp_strtab_intern(c->syms, "NVIDIA");

	for (unsigned i = 0; i < f->n; i++) {
		struct nv_gpu *g = &f->g[i];
		struct xp_device *d = xp_hal_add_device(n, "nvidia", i, err);
		struct xp_hal_stats st;
		char buf[128];

		if (!d)
			return XP_ENOSPC;
		d->cls = XP_CLASS_GPU;
		d->vendor = vendor;
		if (f->driver[0])
			xp_hal_attr(d, "driver", f->driver);
		if (g->hret != NVML_SUCCESS) {
			d->health = XP_HEALTH_UNHEALTHY;
			xp_hal_attrf(d, "health_reason", "nvmlDeviceGetHandleByIndex_v2(%u): %s", i,
				     xp_nv_estr(f, g->hret));
			continue;
		}
		xp_hal_model_name(g->name, "NVIDIA ", buf, sizeof(buf));
		if (buf[0])
			d->model = xp_strtab_intern(c->syms, buf);
		if (g->name[0])
			xp_hal_attr(d, "product_name", g->name);
		if (g->uuid[0])
			d->uuid = xstrdup(g->uuid);
		if (g->bus[0])
			d->pci_bus_id = xstrdup(g->bus);

		nvmlMemory_t mem;
		memset(&mem, 0, sizeof(mem));
		if (f->fn.nvmlDeviceGetMemoryInfo(g->h, &mem) == NVML_SUCCESS)
			d->mem_mib = mem.total >> 20;
		int major = 0, minor = 0;
		if (f->fn.nvmlDeviceGetCudaComputeCapability &&
		    f->fn.nvmlDeviceGetCudaComputeCapability(g->h, &major, &minor) ==
			    NVML_SUCCESS &&
		    major > 0 && major < 100 && minor >= 0 && minor < 100) {
			d->cc = (uint32_t)(major * 100 + (minor < 10 ? minor * 10 : minor));
			snprintf(buf, sizeof(buf), "sm_%d%d", major, minor);
			d->arch = xp_strtab_intern(c->syms, buf);
		}
		unsigned v;
		if (f->fn.nvmlDeviceGetNumaNodeId &&
		    f->fn.nvmlDeviceGetNumaNodeId(g->h, &v) == NVML_SUCCESS && v < 32768)
			d->numa = (int16_t)v;
		if (f->fn.nvmlDeviceGetPowerManagementDefaultLimit &&
		    f->fn.nvmlDeviceGetPowerManagementDefaultLimit(g->h, &v) == NVML_SUCCESS)
			d->tdp_w = v / 1000;
		if (f->fn.nvmlDeviceGetMinorNumber &&
		    f->fn.nvmlDeviceGetMinorNumber(g->h, &v) == NVML_SUCCESS)
			xp_hal_attrf(d, "dev_nodes", "/dev/nvidia%u", v);
		xp_nv_read_mig(f, g, d);
		nv_stats(f, i, &st, NULL);
		xp_hal_apply_health(d, &st);
	}
	nvlinks(f, n, base);
	return 0;
}

static int xid_ignored(unsigned long long xid)
{
	static const unsigned long long app[] = { 13, 31, 43, 45, 68, 109 };
	for (size_t i = 0; i < sizeof(app) / sizeof(app[0]); i++)
		if (xid == app[i])
			return 1;
	return 0;
}

static void drain_xids(struct xp_hal_family *f)
{
	nvmlEventData_t ev;
	if (!f->events)
		return;
	for (int k = 0; k < 256; k++) {
		memset(&ev, 0, sizeof(ev));
		if (f->fn.nvmlEventSetWait_v2(f->events, &ev, 0) != NVML_SUCCESS)
			return; /* NVML_ERROR_TIMEOUT: nothing pending */
		if (!(ev.eventType & nvmlEventTypeXidCriticalError) || xid_ignored(ev.eventData))
			continue;
		for (unsigned i = 0; i < f->n; i++)
			if (f->g[i].hret == NVML_SUCCESS && f->g[i].h == ev.device)
				f->g[i].xid = ev.eventData ? ev.eventData : 999;
	}
}

/* A query's failure that says the GPU is gone. */
static void check_lost(struct xp_hal_stats *s, nvmlReturn_t r)
{
	if (r == NVML_ERROR_GPU_IS_LOST && !strstr(s->why, "GPU is lost"))
		xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "GPU is lost");
	else if (r == NVML_ERROR_RESET_REQUIRED && !strstr(s->why, "reset required"))
		xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "GPU reset required");
}

static int nv_stats(struct xp_hal_family *f, unsigned idx, struct xp_hal_stats *s,
		    struct xp_err *err)
{
	xp_hal_stats_init(s);
	if (idx >= f->n)
		return xp_errf(err, XP_ENOENT, "no GPU %u (%u present)", idx, f->n);
	struct nv_gpu *g = &f->g[idx];
	nvmlReturn_t r;
	if (g->hret != NVML_SUCCESS) {
		xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "no NVML handle: %s", xp_nv_estr(f, g->hret));
		return 0;
	}
	s->health = XP_HEALTH_OK;
	drain_xids(f);

	if (f->fn.nvmlDeviceGetUtilizationRates) {
		nvmlUtilization_t u = { 0, 0 };
		if ((r = f->fn.nvmlDeviceGetUtilizationRates(g->h, &u)) == NVML_SUCCESS &&
		    u.gpu <= 100)
			s->util_pct = (int32_t)u.gpu;
		check_lost(s, r);
	}
	nvmlMemory_t mem;
	memset(&mem, 0, sizeof(mem));
	if ((r = f->fn.nvmlDeviceGetMemoryInfo(g->h, &mem)) == NVML_SUCCESS)
		s->mem_used_mib = (int64_t)(mem.used >> 20);
	check_lost(s, r);
	unsigned v;
	if (f->fn.nvmlDeviceGetPowerUsage) {
		if ((r = f->fn.nvmlDeviceGetPowerUsage(g->h, &v)) == NVML_SUCCESS)
			s->power_w = (int32_t)(v / 1000);
		check_lost(s, r);
	}
	if (f->fn.nvmlDeviceGetTemperature) {
		if ((r = f->fn.nvmlDeviceGetTemperature(g->h, NVML_TEMPERATURE_GPU, &v)) ==
		    NVML_SUCCESS)
			s->temp_c = (int32_t)v;
		check_lost(s, r);
	}
	if (f->fn.nvmlDeviceGetTotalEccErrors) {
		unsigned long long ecc = 0;
		if ((r = f->fn.nvmlDeviceGetTotalEccErrors(g->h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
							   NVML_VOLATILE_ECC, &ecc)) ==
			    NVML_SUCCESS &&
		    ecc > 0)
			xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "%llu uncorrectable ECC error%s", ecc,
				     ecc == 1 ? "" : "s");
		check_lost(s, r);
	}
	if (f->fn.nvmlDeviceGetRemappedRows) {
		unsigned corr = 0, unc = 0, pend = 0, failed = 0;
		if (f->fn.nvmlDeviceGetRemappedRows(g->h, &corr, &unc, &pend, &failed) ==
		    NVML_SUCCESS) {
			if (failed)
				xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "row remapping failed");
			else if (pend)
				xp_hal_worse(s, XP_HEALTH_DEGRADED,
					     "row remapping pending: reset the GPU");
		}
	}
	if (g->xid)
		xp_hal_worse(s, XP_HEALTH_UNHEALTHY, "XID %llu", g->xid);
	return 0;
}

static int nv_env(struct xp_hal_family *f, const unsigned *idx, unsigned n, struct xp_sb *out)
{
	const char *ids[XP_MAX_NODE_DEVS * 8] = { NULL };
	char num[XP_MAX_NODE_DEVS][12];
	unsigned k = 0;

	if (n > XP_MAX_NODE_DEVS)
		return XP_EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (idx[i] >= f->n)
			return XP_ENOENT;
		struct nv_gpu *g = &f->g[idx[i]];
		if (g->mig && g->nmig) {
			for (unsigned m = 0; m < g->nmig && k < sizeof(ids) / sizeof(ids[0]); m++)
				ids[k++] = g->mig_uuids[m];
		} else if (g->uuid[0]) {
			ids[k++] = g->uuid;
		} else { /* no UUID (no handle): the NVML index is the best left */
			snprintf(num[i], sizeof(num[i]), "%u", idx[i]);
			ids[k++] = num[i];
		}
	}
	xp_hal_env_line(out, "CUDA_VISIBLE_DEVICES", ids, k);
	if (k)
		xp_hal_env_line(out, "NVIDIA_VISIBLE_DEVICES", ids, k);
	else
		xp_sb_puts(out, "NVIDIA_VISIBLE_DEVICES=none\n");
	return 0;
}

const struct xp_device_ops xp_hal_nvidia_ops = {
	.abi = XP_HAL_ABI,
	.name = "nvidia",
	.probe = nv_probe,
	.enumerate = nv_enumerate,
	.stats = nv_stats,
	.env = nv_env,
	.close = nv_close,
	.mig_list = xp_nv_mig_list,
	.mig_create = xp_nv_mig_create,
	.mig_destroy = xp_nv_mig_destroy,
	.mig_set_mode = xp_nv_mig_set_mode,
};
