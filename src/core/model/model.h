/*
 * model: the unified resource model shared by every layer.
 *
 * A cluster holds nodes; a node holds CPU (milli-cores), memory (MiB),
 * labels and devices of any class. Every device counts its capacity in
 * compute milli-units (XP_MILLI = the whole device) and memory MiB, so a
 * fraction of a GPU, a whole NPU and eight GPUs use one arithmetic.
 * A request asks, per task replica, for CPU, memory and a number of device
 * slots (compute milli and memory per slot, a selector over device
 * attributes, a topology constraint). An allocation binds a request to one
 * node and to specific devices on it.
 *
 * This file is static description only; free capacity lives in the
 * scheduling core (src/core/sched). Strings that repeat across devices
 * (vendor, model, architecture, zone) are interned in the cluster's string
 * table and stored as xp_sym ids, so comparing them is comparing integers.
 *
 * A request is one replica's resource ask and nothing more: who asks
 * (tenant, queue, priority, QoS), how many replicas must start together
 * (gangs) and after what (DAG edges) belong to the job that carries the
 * requests; gangs are placed replica by replica with xp_sched_commit() and
 * rolled back with xp_sched_release().
 *
 * Ownership: the cluster owns its nodes, a node its devices, labels and
 * strings; xp_cluster_destroy() frees everything.
 */
#ifndef XP_MODEL_H
#define XP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/err.h"
#include "../../lib/strtab.h"

#define XP_MILLI	  1000 /* compute milli-units of one whole device */
#define XP_MAX_NODE_DEVS  64   /* devices on one node */
#define XP_MAX_SEL_MODELS 16   /* models one selector may list */
#define XP_MAX_CPU_MILLI  (1ULL << 40)
#define XP_MAX_MEM_MIB	  (1ULL << 40)

enum xp_dev_class {
	XP_CLASS_CPU,
	XP_CLASS_GPU,
	XP_CLASS_NPU,
	XP_CLASS_FPGA,
	XP_CLASS_ASIC,
	XP_CLASS_DPU,
	XP_CLASS_CIM,
	XP_CLASS_N
};

enum xp_health { XP_HEALTH_OK, XP_HEALTH_DEGRADED, XP_HEALTH_UNHEALTHY, XP_HEALTH_UNKNOWN };

/*
 * How a device is shared (docs/descriptor.md, docs/design/vgpu.md):
 *   shared     fractions, each held to its memory and compute share by the
 *              vGPU interposer (the default)
 *   whole      one job at a time, the whole device
 *   timeslice  fractions, time-sliced by the driver with nothing isolated:
 *              no memory cap and no compute share is enforced (NVIDIA's
 *              time-slicing); for devices the interposer cannot serve.
 *              With replicas N (xp_device.replicas, 2..XP_TIMESLICE_MAX)
 *              a request for one whole device takes one replica,
 *              XP_MILLI / N of it, so N such jobs share it at once
 *   mig        partitioned (MIG); takes partition requests only
 */
enum xp_dev_mode { XP_MODE_SHARED, XP_MODE_WHOLE, XP_MODE_TIMESLICE, XP_MODE_MIG, XP_MODE_N };

/* The compute milli scorers and quota pre-checks assume for a share sized
 * by memory before it lands (its real milli is known per device). */
#define XP_SHARE_BY_MEM_ESTIMATE 100
/* Memory overcommit: admitted device memory is factor x physical, the
 * factor in hundredths (100 = none, the most XP_OVERCOMMIT_MAX). */
#define XP_OVERCOMMIT_NONE 100
#define XP_OVERCOMMIT_MAX  1000
/* Time-slicing replicas of one device: the most. With floor(XP_MILLI / N)
 * milli a replica, N fit and N + 1 do not for every N up to 31 (and 32). */
#define XP_TIMESLICE_MAX 32

/* Precisions for peak throughput figures. */
enum xp_prec {
	XP_PREC_FP64,
	XP_PREC_FP32,
	XP_PREC_TF32,
	XP_PREC_FP16,
	XP_PREC_BF16,
	XP_PREC_FP8,
	XP_PREC_INT8,
	XP_PREC_N
};

enum xp_link_kind {
	XP_LINK_NVLINK,
	XP_LINK_HCCS,
	XP_LINK_XGMI,
	XP_LINK_PCIE,
	XP_LINK_RDMA,
	XP_LINK_ETH,
	XP_LINK_CXL,
	XP_LINK_OTHER,
	XP_LINK_N
};

struct xp_link {
	uint8_t kind;  /* enum xp_link_kind */
	int16_t peer;  /* device index on the same node, -1: off-node (NIC, fabric) */
	uint32_t gbps; /* bandwidth, Gbit/s; 0 = unknown */
};

/* A partition a device can be split into (e.g. an NVIDIA MIG profile). */
struct xp_partition {
	char *name;
	uint16_t compute_milli;
	uint64_t mem_mib;
	uint16_t max_count;
};

/* A free-form key/value; list values are joined with ','. */
struct xp_attr {
	char *key;
	char *value;
};

struct xp_device {
	uint8_t cls;		 /* enum xp_dev_class */
	uint8_t health;		 /* enum xp_health */
	uint8_t mode;		 /* enum xp_dev_mode */
	uint8_t replicas;	 /* mode timeslice: one-device whole slots at once;
				  * 0 or 1 = a whole slot takes the device */
	uint16_t mem_overcommit; /* hundredths; 0 = not set here (100 = none) */
	xp_sym vendor, model, arch;
	uint32_t cc;	      /* compute capability x100 ("8.0" -> 800); 0 = unset */
	uint64_t mem_mib;     /* device memory */
	uint64_t mem_bw_mb_s; /* memory bandwidth, MB/s */
	uint32_t peak_gflops[XP_PREC_N];
	uint32_t tdp_w, idle_w; /* power model */
	int16_t numa;		/* NUMA domain on the node, -1 unknown */
	int16_t island;		/* devices sharing a fast fabric share an id (per node); -1 none */
	char *uuid, *pci_bus_id;
	struct xp_link *links;
	uint16_t nlinks;
	struct xp_partition *parts;
	uint16_t nparts;
	struct xp_attr *attrs;
	uint16_t nattrs;
};

struct xp_node {
	char *name;
	uint64_t cpu_milli; /* allocatable CPU */
	uint64_t mem_mib;   /* allocatable memory */
	xp_sym arch, zone, region;
	uint16_t numa_domains; /* 0 = unknown */
	uint8_t dedicated;     /* takes only jobs that name it (node: NAME), as a
				* Kubernetes taint only a toleration passes */
	struct xp_attr *labels;
	uint16_t nlabels;
	struct xp_device *devs;
	uint16_t ndevs;
};

struct xp_cluster {
	struct xp_strtab *syms;
	struct xp_node *nodes;
	size_t nnodes, cap;
};

/* Device selector: every set field must match. cls -1 matches any
 * accelerator class (every class but cpu). */
struct xp_selector {
	int8_t cls;	 /* enum xp_dev_class, -1 = any */
	uint8_t nmodels; /* 0 = any model */
	xp_sym vendor;	 /* 0 = any */
	xp_sym models[XP_MAX_SEL_MODELS];
	uint64_t min_mem_mib;
	uint32_t min_cc;
};

enum xp_topo { XP_TOPO_ANY, XP_TOPO_SAME_ISLAND, XP_TOPO_SAME_NUMA };

/*
 * One replica's request. Plain data (no pointers), so requests can be
 * compared and hashed byte-wise once cleared with xp_request_init().
 */
struct xp_request {
	uint64_t cpu_milli;
	uint64_t mem_mib;
	uint64_t dev_mem_mib; /* per device; 0 = not constrained */
	uint16_t dev_count;   /* 0 = no devices */
	uint16_t dev_milli;   /* per device, 1..XP_MILLI; XP_MILLI = the whole device */
	uint8_t topo;	      /* enum xp_topo, for dev_count > 1 */
	uint8_t by_mem;	      /* a share sized by memory: dev_mem_mib / the device's
			       * memory x XP_MILLI on the device it lands on
			       * (dev_milli is then only the scorers' estimate) */
	uint8_t mig_any;      /* mig is "any": the smallest profile that fits
			       * dev_milli and dev_mem_mib, chosen per GPU */
	uint8_t pad_;
	int32_t node; /* only this node (cluster index); -1 = any */
	xp_sym mig;   /* a MIG slice of this profile name (dev_count 1); 0 = none */
	struct xp_selector sel;
};

/* Where a request landed. */
struct xp_alloc {
	uint32_t node;
	uint16_t ndev;
	uint16_t dev_milli;
	uint64_t dev_mem_mib; /* per device taken */
	uint64_t cpu_milli, mem_mib;
	uint8_t devs[XP_MAX_NODE_DEVS]; /* device indices on the node */
	uint8_t mig;			/* a MIG slice on devs[0]: 1 + enum xp_mig_kind; 0 none */
	uint8_t mig_start;		/* its placement's first memory slice */
};

/* enum names: "gpu", "npu", ...; parse is case-insensitive, -1 if unknown */
const char *xp_class_name(int cls);
int xp_class_parse(const char *s);
const char *xp_health_name(int h);
int xp_health_parse(const char *s);
const char *xp_mode_name(int mode);
int xp_mode_parse(const char *s);
/* Compute milli of a share sized by memory on a device with mem_mib:
 * dev_mem / mem_mib x XP_MILLI, rounded up, in 1..XP_MILLI. */
uint16_t xp_share_by_mem(uint64_t dev_mem_mib, uint64_t mem_mib);
/* Compute milli of one time-slicing replica of a device with `replicas`
 * (XP_MILLI when it has none). */
static inline uint16_t xp_replica_milli(unsigned replicas)
{
	return replicas > 1 ? (uint16_t)(XP_MILLI / replicas) : XP_MILLI;
}
/* Compute milli one slot of a request takes on device d: a share sized by
 * memory its part of d's memory; one whole device, a replica of a
 * time-sliced d; else the request's milli. */
uint16_t xp_slot_milli(const struct xp_device *d, uint16_t dev_count, uint16_t dev_milli,
		       int by_mem, uint64_t dev_mem_mib);
/* Device memory the scheduler admits on d: physical x its overcommit. */
uint64_t xp_dev_admit_mib(const struct xp_device *d);

/* Memory overcommit by class or model, as a server sets it
 * (`--overcommit-memory 1.5` for every accelerator, or
 * `gpu=1.5,A100-SXM4-80GB=1.2`): a model's rule wins over a class's, a
 * class's over the bare factor. */
#define XP_OC_RULES 16
struct xp_oc_rules {
	uint8_t n;
	struct xp_oc_rule {
		int8_t cls;	/* enum xp_dev_class; -1 = by model; -2 = every accelerator */
		char model[64]; /* compared in any case */
		uint16_t pct;
	} r[XP_OC_RULES];
};
/* Parse rules; the error names the item and the reason. */
int xp_oc_rules_parse(const char *s, struct xp_oc_rules *out, struct xp_err *err);
/* Set the overcommit of node n's accelerators that have none of their own. */
void xp_oc_rules_apply(const struct xp_oc_rules *r, const struct xp_cluster *c, struct xp_node *n);
const char *xp_link_name(int kind);
int xp_link_parse(const char *s);
const char *xp_prec_name(int p);
int xp_prec_parse(const char *s);

struct xp_cluster *xp_cluster_create(void);
void xp_cluster_destroy(struct xp_cluster *c);
/* Append a node; name is copied. Returns the new node (zeroed but for the name);
 * the pointer is valid until the next add. */
struct xp_node *xp_cluster_add_node(struct xp_cluster *c, const char *name);
/* Index of the node named name, or -1. Linear; for tools and tests. */
long xp_cluster_find_node(const struct xp_cluster *c, const char *name);
/* Append a device with defaults (GPU class, healthy, numa/island -1). */
struct xp_device *xp_node_add_device(struct xp_node *n);
/* Set (replace) an attribute in an attribute array. */
void xp_attrs_set(struct xp_attr **attrs, uint16_t *n, const char *key, const char *value);
const char *xp_attrs_get(const struct xp_attr *attrs, uint16_t n, const char *key);
/* Free an attribute array and its strings. */
void xp_attrs_free(struct xp_attr *attrs, uint16_t n);
void xp_link_add(struct xp_device *d, int kind, int peer, uint32_t gbps);

/* Deep copy of node n of cluster src into dst (strings re-interned in
 * dst); name overrides the node's name when not NULL. */
struct xp_node *xp_cluster_copy_node(struct xp_cluster *dst, const struct xp_cluster *src,
				     const struct xp_node *n, const char *name);
/* Compute capability text ("8.0", "9", "8.65") <-> x100; XP_EINVAL if malformed. */
int xp_cc_parse(const char *s, uint32_t *out);
void xp_cc_format(uint32_t cc, char *out, size_t len);

/* Totals over the cluster. */
uint64_t xp_cluster_total_devices(const struct xp_cluster *c, int cls);

/* Does device d offer the MIG profile name (any case)? Its partitions
 * when it has any (what NVML discovery or the descriptor gave, in any
 * mode: an administrator may enable MIG later); else, in mode mig, the
 * built-in table of its model (core/model/mig.h), as emulated nodes have. */
int xp_dev_mig_offers(const struct xp_cluster *c, const struct xp_device *d, const char *name);
/* Does device d offer a MIG profile (as xp_dev_mig_offers finds them, 1g+me
 * aside) whose compute slices cover compute_milli and whose memory covers
 * mem_mib (devices.mig: any)? */
int xp_dev_mig_covers(const struct xp_cluster *c, const struct xp_device *d, uint32_t compute_milli,
		      uint64_t mem_mib);

/* Requests */
void xp_request_init(struct xp_request *r);
/* Check a request against the model's limits; the error names the field. */
int xp_request_check(const struct xp_request *r, struct xp_err *err);
/* Does device d satisfy selector s (static attributes only, not health)? */
int xp_selector_match(const struct xp_selector *s, const struct xp_device *d);
/* Add a model to a selector; fails when full. Duplicates are ignored. */
int xp_selector_add_model(struct xp_selector *s, xp_sym model);

#endif
