/*
 * amd: AMD GPUs through ROCm SMI (librocm_smi64.so), opened at run time.
 *
 * Probe loads the library (sonames .7 .6 .5 .1 and unversioned, then the
 * /opt/rocm path), binds it (rsmi_abi.h; init, shutdown, the device count,
 * name and VRAM total are required), calls rsmi_init(0) and checks the
 * library version (rsmi_version_get, major >= 1) when the library offers it.
 *
 * Enumerate: model from the marketing name ("AMD Instinct MI250X" ->
 * "Instinct-MI250X"), VRAM, the unique id as UUID ("GPU-<16 hex>", the form
 * ROCr accepts), PCI bus id from the BDF id, NUMA node, render node. GPUs
 * with the same non-zero xGMI hive id form one island, every pair linked
 * by xGMI.
 *
 * Health: uncorrectable ECC errors in the UMC (memory) block make a GPU
 * unhealthy. Utilisation is rsmi_dev_busy_percent_get, power the average
 * socket power, temperature the junction sensor (edge when absent).
 *
 * Environment: ROCR_VISIBLE_DEVICES lists the ROCm SMI indices (what Slurm
 * sets); HIP_VISIBLE_DEVICES then numbers the survivors 0..n-1, so a HIP
 * program sees exactly those GPUs whichever variable it honours. -1 hides
 * all.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xalloc.h"
#include "hal_int.h"
#include "rsmi_abi.h"

struct rsmi_fns {
#define X(ret, name, args) ret(*name) args;
	XP_RSMI_FUNCS(X)
#undef X
};

#define REQ(fn) XP_HAL_SYM(struct rsmi_fns, fn, 1)
#define OPT(fn) XP_HAL_SYM(struct rsmi_fns, fn, 0)
static const struct xp_hal_sym rsmi_syms[] = {
	REQ(rsmi_init),
	REQ(rsmi_shut_down),
	REQ(rsmi_num_monitor_devices),
	REQ(rsmi_dev_name_get),
	REQ(rsmi_dev_memory_total_get),
	OPT(rsmi_status_string),
	OPT(rsmi_version_get),
	OPT(rsmi_dev_unique_id_get),
	OPT(rsmi_dev_pci_id_get),
	OPT(rsmi_topo_get_numa_node_number),
	OPT(rsmi_dev_xgmi_hive_id_get),
	OPT(rsmi_dev_drm_render_minor_get),
	OPT(rsmi_dev_memory_usage_get),
	OPT(rsmi_dev_busy_percent_get),
	OPT(rsmi_dev_power_ave_get),
	OPT(rsmi_dev_temp_metric_get),
	OPT(rsmi_dev_ecc_count_get),
	{ NULL, 0, 0 },
};

struct xp_hal_family {
	void *dl;
	char lib[256];
	struct rsmi_fns fn;
	int inited;
	char version[64];
	unsigned n;
};

static const char *estr(const struct xp_hal_family *f, rsmi_status_t r)
{
	const char *s = NULL;
	if (f->fn.rsmi_status_string && f->fn.rsmi_status_string(r, &s) == RSMI_STATUS_SUCCESS && s)
		return s;
	return "ROCm SMI error";
}

static void amd_close(struct xp_hal_family *f)
{
	if (!f)
		return;
	if (f->inited)
		f->fn.rsmi_shut_down();
	if (f->dl)
		dlclose(f->dl);
	free(f);
}

static int amd_probe(const struct xp_hal_opts *o, struct xp_hal_family **out, struct xp_err *err)
{
	static const char *const names[] = {
		"librocm_smi64.so.7",
		"librocm_smi64.so.6",
		"librocm_smi64.so.5",
		"librocm_smi64.so.1",
		"librocm_smi64.so",
		"/opt/rocm/lib/librocm_smi64.so",
		NULL,
	};
	struct xp_hal_family *f = XNEW(struct xp_hal_family);
	rsmi_status_t r;
	int rc;

	*out = NULL;
	if ((rc = xp_hal_dl_open("amd", o, names, &f->dl, f->lib, sizeof(f->lib), err)) < 0 ||
	    (rc = xp_hal_dl_bind(f->dl, f->lib, rsmi_syms, &f->fn, err)) < 0) {
		amd_close(f);
		return rc;
	}
	if ((r = f->fn.rsmi_init(0)) != RSMI_STATUS_SUCCESS) {
		rc = xp_errf(err, XP_EIO, "%s: rsmi_init: %s (status %d)", f->lib, estr(f, r), r);
		amd_close(f);
		return rc;
	}
	f->inited = 1;
	rsmi_version_t v;
	memset(&v, 0, sizeof(v));
	if (f->fn.rsmi_version_get && f->fn.rsmi_version_get(&v) == RSMI_STATUS_SUCCESS) {
		snprintf(f->version, sizeof(f->version), "%u.%u.%u", v.major, v.minor, v.patch);
		if (v.major < 1) {
			rc = xp_errf(err, XP_EVERSION,
				     "%s: ROCm SMI %s is older than 1.0: refusing it", f->lib,
				     f->version);
			amd_close(f);
			return rc;
		}
	}
	uint32_t count = 0;
	if ((r = f->fn.rsmi_num_monitor_devices(&count)) != RSMI_STATUS_SUCCESS) {
		rc = xp_errf(err, XP_EIO, "%s: rsmi_num_monitor_devices: %s", f->lib, estr(f, r));
		amd_close(f);
		return rc;
	}
	if (count == 0) {
		rc = xp_errf(err, XP_ENOENT, "no AMD GPUs (ROCm SMI %s)",
			     f->version[0] ? f->version : "unknown version");
		amd_close(f);
		return rc;
	}
	f->n = count > XP_MAX_NODE_DEVS ? XP_MAX_NODE_DEVS : count;
	*out = f;
	return 0;
}

static int amd_stats(struct xp_hal_family *f, unsigned idx, struct xp_hal_stats *s,
		     struct xp_err *err)
{
	xp_hal_stats_init(s);
	if (idx >= f->n)
		return xp_errf(err, XP_ENOENT, "no GPU %u (%u present)", idx, f->n);
	s->health = XP_HEALTH_OK;
	uint32_t pct;
	if (f->fn.rsmi_dev_busy_percent_get &&
	    f->fn.rsmi_dev_busy_percent_get(idx, &pct) == RSMI_STATUS_SUCCESS && pct <= 100)
		s->util_pct = (int32_t)pct;
	uint64_t u64;
	if (f->fn.rsmi_dev_memory_usage_get &&
	    f->fn.rsmi_dev_memory_usage_get(idx, RSMI_MEM_TYPE_VRAM, &u64) == RSMI_STATUS_SUCCESS)
		s->mem_used_mib = (int64_t)(u64 >> 20);
	if (f->fn.rsmi_dev_power_ave_get &&
	    f->fn.rsmi_dev_power_ave_get(idx, 0, &u64) == RSMI_STATUS_SUCCESS)
		s->power_w = (int32_t)(u64 / 1000000);
	int64_t mc;
	if (f->fn.rsmi_dev_temp_metric_get &&
	    (f->fn.rsmi_dev_temp_metric_get(idx, RSMI_TEMP_TYPE_JUNCTION, RSMI_TEMP_CURRENT, &mc) ==
		     RSMI_STATUS_SUCCESS ||
	     f->fn.rsmi_dev_temp_metric_get(idx, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &mc) ==
		     RSMI_STATUS_SUCCESS))
		s->temp_c = (int32_t)(mc / 1000);
	if (f->fn.rsmi_dev_ecc_count_get) {
		struct {
			rsmi_error_count_t ec;
			uint64_t pad[8]; /* newer releases add counters */
		} e;
		memset(&e, 0, sizeof(e));
		if (f->fn.rsmi_dev_ecc_count_get(idx, RSMI_GPU_BLOCK_UMC, &e.ec) ==
			    RSMI_STATUS_SUCCESS &&
		    e.ec.uncorrectable_err > 0)
			xp_hal_worse(s, XP_HEALTH_UNHEALTHY,
				     "%" PRIu64 " uncorrectable ECC error%s in memory",
				     e.ec.uncorrectable_err,
				     e.ec.uncorrectable_err == 1 ? "" : "s");
	}
	return 0;
}

static int amd_enumerate(struct xp_hal_family *f, struct xp_cluster *c, struct xp_node *n,
			 struct xp_err *err)
{
	uint16_t base = n->ndevs;
	uint64_t hive[XP_MAX_NODE_DEVS];
	xp_sym vendor = xp_strtab_intern(c->syms, "AMD");

	for (unsigned i = 0; i < f->n; i++) {
		struct xp_device *d = xp_hal_add_device(n, "amd", i, err);
		char name[256], buf[256];
		uint64_t u64;
		uint32_t u32;
		struct xp_hal_stats st;

		if (!d)
			return XP_ENOSPC;
		d->cls = XP_CLASS_GPU;
		d->vendor = vendor;
		if (f->fn.rsmi_dev_name_get(i, name, sizeof(name)) == RSMI_STATUS_SUCCESS) {
			name[sizeof(name) - 1] = '\0';
			xp_hal_model_name(name, "AMD ", buf, sizeof(buf));
			if (buf[0])
				d->model = xp_strtab_intern(c->syms, buf);
			xp_hal_attr(d, "product_name", name);
		}
		if (f->fn.rsmi_dev_memory_total_get(i, RSMI_MEM_TYPE_VRAM, &u64) ==
		    RSMI_STATUS_SUCCESS)
			d->mem_mib = u64 >> 20;
		if (f->fn.rsmi_dev_unique_id_get &&
		    f->fn.rsmi_dev_unique_id_get(i, &u64) == RSMI_STATUS_SUCCESS && u64) {
			snprintf(buf, sizeof(buf), "GPU-%016" PRIx64, u64);
			d->uuid = xstrdup(buf);
		}
		if (f->fn.rsmi_dev_pci_id_get &&
		    f->fn.rsmi_dev_pci_id_get(i, &u64) == RSMI_STATUS_SUCCESS) {
			/* BDFID = domain << 32 | bus << 8 | device << 3 | function */
			xp_hal_pci_format((unsigned)(u64 >> 32), (unsigned)(u64 >> 8) & 0xff,
					  (unsigned)(u64 >> 3) & 0x1f, (unsigned)u64 & 7, buf,
					  sizeof(buf));
			d->pci_bus_id = xstrdup(buf);
		}
		if (f->fn.rsmi_topo_get_numa_node_number &&
		    f->fn.rsmi_topo_get_numa_node_number(i, &u32) == RSMI_STATUS_SUCCESS &&
		    u32 < 32768)
			d->numa = (int16_t)u32;
		if (f->fn.rsmi_dev_drm_render_minor_get &&
		    f->fn.rsmi_dev_drm_render_minor_get(i, &u32) == RSMI_STATUS_SUCCESS)
			xp_hal_attrf(d, "dev_nodes", "/dev/dri/renderD%u,/dev/kfd", u32);
		if (f->version[0])
			xp_hal_attr(d, "rocm_smi_version", f->version);
		hive[i] = 0;
		if (f->fn.rsmi_dev_xgmi_hive_id_get &&
		    f->fn.rsmi_dev_xgmi_hive_id_get(i, &u64) == RSMI_STATUS_SUCCESS)
			hive[i] = u64;
		amd_stats(f, i, &st, NULL);
		xp_hal_apply_health(d, &st);
	}

	/* xGMI hives: an island each, every pair linked. */
	int16_t island = xp_hal_next_island(n);
	for (unsigned i = 0; i < f->n; i++) {
		unsigned first = i, members = 0;
		if (!hive[i])
			continue;
		for (unsigned j = 0; j < f->n; j++)
			if (hive[j] == hive[i]) {
				members++;
				if (j < first)
					first = j;
			}
		if (members < 2)
			continue;
		if (first == i) {
			for (unsigned j = 0; j < f->n; j++)
				if (hive[j] == hive[i])
					n->devs[base + j].island = island;
			island++;
		}
		struct xp_device *d = &n->devs[base + i];
		xp_hal_attr(d, "interconnect", "xGMI");
		for (unsigned j = 0; j < f->n; j++)
			if (j != i && hive[j] == hive[i])
				xp_link_add(d, XP_LINK_XGMI, base + j, 0);
	}
	return 0;
}

static int amd_env(struct xp_hal_family *f, const unsigned *idx, unsigned n, struct xp_sb *out)
{
	char num[XP_MAX_NODE_DEVS][12], rel[XP_MAX_NODE_DEVS][12];
	const char *a[XP_MAX_NODE_DEVS], *b[XP_MAX_NODE_DEVS];

	if (n == 0) {
		xp_sb_puts(out, "ROCR_VISIBLE_DEVICES=-1\nHIP_VISIBLE_DEVICES=-1\n");
		return 0;
	}
	if (n > XP_MAX_NODE_DEVS)
		return XP_EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (idx[i] >= f->n)
			return XP_ENOENT;
		snprintf(num[i], sizeof(num[i]), "%u", idx[i]);
		snprintf(rel[i], sizeof(rel[i]), "%u", i);
		a[i] = num[i];
		b[i] = rel[i];
	}
	xp_hal_env_line(out, "ROCR_VISIBLE_DEVICES", a, n);
	xp_hal_env_line(out, "HIP_VISIBLE_DEVICES", b, n);
	return 0;
}

const struct xp_device_ops xp_hal_amd_ops = {
	.abi = XP_HAL_ABI,
	.name = "amd",
	.probe = amd_probe,
	.enumerate = amd_enumerate,
	.stats = amd_stats,
	.env = amd_env,
	.close = amd_close,
};
