/*
 * hal: device plugins. One ops table (struct xp_device_ops) per device
 * family - cpu, nvidia, amd, ascend, cambricon, fpga, fake - and a thin
 * router (xp_hal_*) that probes every family, builds the machine's node in
 * the resource model, and routes per-device questions (stats, task
 * environment) back to the family that owns the device.
 *
 * Vendor libraries (NVML, ROCm SMI, DCMI, CNDev) are opened with dlopen at
 * run time, never linked: one build runs everywhere, and a library that is
 * absent, too old or lacks a function means "no such devices here"
 * (XP_ENOENT with the reason in err), not a failure. The cpu family uses
 * hwloc (linked); the fpga family reads sysfs; the fake family reads a
 * descriptor file (tests, emulation).
 *
 * Ownership: xp_hal_open() returns a handle the caller frees with
 * xp_hal_close(); xp_hal_discover() returns a NEW cluster the caller frees
 * with xp_cluster_destroy(); every other argument is borrowed.
 *
 * Threads: xp_hal_stats() and xp_hal_env() may be called from several
 * threads at once (the router serialises them); xp_hal_discover() may run
 * concurrently with them too. xp_hal_close() must not.
 *
 * docs/design/hal.md has each family's source of truth, its attributes and
 * its environment variables.
 */
#ifndef XP_HAL_H
#define XP_HAL_H

#include <stdint.h>

#include "../core/model/model.h"
#include "../lib/err.h"
#include "../lib/strbuf.h"

#define XP_HAL_ABI 1

struct xp_hal_stats {	      /* one device, now */
	uint8_t health;	      /* enum xp_health */
	char why[128];	      /* why not ok ("3 uncorrectable ECC errors", "XID 79"), "" when ok */
	int32_t util_pct;     /* -1 unknown */
	int64_t mem_used_mib; /* -1 unknown */
	int32_t power_w;      /* -1 unknown */
	int32_t temp_c;	      /* -1 unknown */
};

/* MIG: one GPU instance of a GPU and its compute instances. Ids and
 * placements are NVML's: profile_id as nvmlDeviceGetGpuInstanceProfileInfo
 * reports it (3g = 9 on A100/H100/H200), {start, size} in memory slices. */
#define XP_HAL_MIG_MAX 8
struct xp_hal_mig_inst {
	uint32_t gi_id;
	uint32_t profile_id;
	uint8_t start, size;
	uint8_t nci;
	uint32_t ci_ids[XP_HAL_MIG_MAX];
	char uuid[96]; /* "MIG-..." of its first compute instance; "" when it has none */
};

struct xp_hal_mig {
	uint8_t enabled; /* MIG mode now */
	uint8_t pending; /* after the next GPU reset */
	unsigned n;
	struct xp_hal_mig_inst inst[XP_HAL_MIG_MAX]; /* by GPU instance id */
};

struct xp_hal_family; /* opaque per-family state */
struct xp_hal_opts;

struct xp_device_ops {
	uint32_t abi;	  /* XP_HAL_ABI */
	const char *name; /* "cpu", "nvidia", "amd", "ascend", "cambricon", "fpga", "fake" */
	/* Load the vendor library / read the source; XP_ENOENT = no such devices here (not an
	 * error). */
	int (*probe)(const struct xp_hal_opts *o, struct xp_hal_family **out, struct xp_err *err);
	/* Fill node n (in cluster c: intern strings in c->syms) with this family's devices; the cpu
	 * family fills the node's cpu_milli, mem_mib, arch and numa_domains instead, and may set
	 * numa of devices already present by PCI bus id. Each device gets attribute "hal" = family
	 * name and "hal_index" = the family-local index. */
	int (*enumerate)(struct xp_hal_family *f, struct xp_cluster *c, struct xp_node *n,
			 struct xp_err *err);
	int (*stats)(struct xp_hal_family *f, unsigned idx, struct xp_hal_stats *out,
		     struct xp_err *err);
	/* Append "NAME=VALUE\n" lines a task needs to see exactly these devices (family-local
	 * indices), e.g. CUDA_VISIBLE_DEVICES=GPU-uuid,..., HIP_VISIBLE_DEVICES and
	 * ROCR_VISIBLE_DEVICES, ASCEND_RT_VISIBLE_DEVICES, MLU_VISIBLE_DEVICES. n = 0 asks for
	 * the lines that hide every device of the family. */
	int (*env)(struct xp_hal_family *f, const unsigned *idx, unsigned n, struct xp_sb *out);
	void (*close)(struct xp_hal_family *f); /* NULL-safe */
	/* MIG (NULL in families without it; idx family-local). Only mig_set_mode changes the
	 * MIG mode (on: enable); it is XP_ESTATE when NVML refuses (IN_USE: processes run) or
	 * leaves the change pending a GPU reset; 0 when the mode already is so.
	 * mig_list: the mode and every GPU instance. mig_create: a GPU instance of profile_id
	 * at start plus one compute instance over all of it; out gets it with its MIG UUID.
	 * mig_destroy: its compute instances, then the GPU instance. Each NVML failure is an
	 * error naming the call and NVML's reason: XP_ENOSPC (no room there), XP_ESTATE (in use,
	 * or MIG mode off), XP_ENOENT (no such instance), XP_EUNSUPP, else XP_EIO. */
	int (*mig_list)(struct xp_hal_family *f, unsigned idx, struct xp_hal_mig *out,
			struct xp_err *err);
	int (*mig_create)(struct xp_hal_family *f, unsigned idx, unsigned profile_id,
			  unsigned start, struct xp_hal_mig_inst *out, struct xp_err *err);
	int (*mig_destroy)(struct xp_hal_family *f, unsigned idx, unsigned gi_id,
			   struct xp_err *err);
	int (*mig_set_mode)(struct xp_hal_family *f, unsigned idx, int on, struct xp_err *err);
};

struct xp_hal_opts {
	const char *devices_file;    /* fake: a descriptor file (docs/descriptor.md) whose single
					node's devices are reported */
	const char *sysfs_root;	     /* fpga: default "/" (tests point it at a fake tree) */
	const char *lib_override[8]; /* "nvidia=/path/libfake_nvml.so" style overrides; else env
					XP_HAL_<FAMILY>_LIB; else the vendor's soname
					(libnvidia-ml.so.1, librocm_smi64.so.*, libdcmi.so,
					libcndev.so) */
};

extern const struct xp_device_ops *const xp_hal_families[]; /* NULL-terminated, cpu first */

/* The family ops of that name, or NULL. */
const struct xp_device_ops *xp_hal_family_ops(const char *name);

/* Probe the families. With devices_file set, the fake family replaces the vendor families
 * (emulation) and failing to read the file fails the open; otherwise open fails only on bad
 * options. Families that probe XP_ENOENT are skipped (their reasons: xp_hal_notes()); real
 * probe errors are kept and reported by xp_hal_discover(). */
struct xp_hal *xp_hal_open(const struct xp_hal_opts *o, struct xp_err *err);
/* All families on this machine into a new one-node cluster named node_name (the host name
 * when NULL). With devices_file set, the fake family replaces the vendor families
 * (emulation). Families that probe XP_ENOENT are skipped; real errors are reported in err but
 * do not stop the others (collect them in *warnings as "family: message" lines if warnings !=
 * NULL). err->code is 0 when no family failed. Returns NULL only when no node could be built.
 * Each call re-enumerates; the device indices of the newest call are the ones xp_hal_stats()
 * and xp_hal_env() take. */
struct xp_cluster *xp_hal_discover(struct xp_hal *h, const char *node_name, struct xp_sb *warnings,
				   struct xp_err *err);
/* Stats / env of node device d (the index in the discovered node), routed to its family.
 * env writes, for every family with devices on the node, the lines that show exactly the
 * given devices of that family (and hide all of a family none of whose devices is given). */
int xp_hal_stats(struct xp_hal *h, unsigned dev, struct xp_hal_stats *out, struct xp_err *err);
int xp_hal_env(struct xp_hal *h, const unsigned *devs, unsigned n, struct xp_sb *out,
	       struct xp_err *err);
/* MIG instances of node device dev (the family's mig_* ops, above), routed like stats;
 * XP_EUNSUPP for a device whose family has no MIG. */
int xp_hal_mig_list(struct xp_hal *h, unsigned dev, struct xp_hal_mig *out, struct xp_err *err);
int xp_hal_mig_create(struct xp_hal *h, unsigned dev, unsigned profile_id, unsigned start,
		      struct xp_hal_mig_inst *out, struct xp_err *err);
int xp_hal_mig_destroy(struct xp_hal *h, unsigned dev, unsigned gi_id, struct xp_err *err);
/* Change the MIG mode of node device dev (the agent, on the controller's order only). */
int xp_hal_mig_set_mode(struct xp_hal *h, unsigned dev, int on, struct xp_err *err);
/* "family: reason\n" for every family skipped at open (library absent, no devices, ...); ""
 * when none. Borrowed, valid until xp_hal_close(). */
const char *xp_hal_notes(const struct xp_hal *h);
/* Names of the families in use, comma-separated ("cpu,nvidia"). Borrowed. */
const char *xp_hal_active(const struct xp_hal *h);
void xp_hal_close(struct xp_hal *h); /* NULL-safe */
/* The memory this host really offers, in bytes: the lowest of MemTotal
 * (ROOT/proc/meminfo), the cgroup's limit (v2 ROOT/sys/fs/cgroup/memory.max,
 * v1 ROOT/sys/fs/cgroup/memory/memory.limit_in_bytes) and, when neither
 * file reads, hwloc's total (hwloc_bytes; on some VMs only a NUMA node's
 * share). *source (may be NULL) names the figure taken: "meminfo",
 * "cgroup" or "hwloc". root "" is the real machine. */
uint64_t xp_hal_host_memory(const char *root, uint64_t hwloc_bytes, const char **source);

/* Initialise stats to "unknown": health UNKNOWN, every number -1, why "". */
void xp_hal_stats_init(struct xp_hal_stats *s);

#endif
