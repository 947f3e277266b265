/*
 * nvidia_int: what nvidia.c (NVML loading, discovery, health, environment)
 * and nvidia_mig.c (MIG profiles, placements and instances) share. Private
 * to the nvidia family.
 */
#ifndef XP_NVIDIA_INT_H
#define XP_NVIDIA_INT_H

#include "hal_int.h"
#include "nvml_abi.h"

struct nvml_fns {
#define X(ret, name, args) ret(*name) args;
	XP_NVML_FUNCS(X)
#undef X
};

struct nv_gpu {
	nvmlDevice_t h;
	nvmlReturn_t hret; /* of nvmlDeviceGetHandleByIndex_v2 */
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	char bus[32]; /* canonical "0000:3b:00.0", "" unknown */
	int mig;      /* MIG mode on at the last enumerate */
	char **mig_uuids;
	unsigned nmig;
	unsigned long long xid; /* last critical XID seen, 0 none */
};

struct xp_hal_family {
	void *dl;
	char lib[256];
	struct nvml_fns fn;
	char version[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE];
	char driver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	unsigned n;
	struct nv_gpu *g;
	nvmlEventSet_t events; /* NULL: no XID watch */
};

/* nvidia.c */
/* NVML's text for r (never NULL). */
const char *xp_nv_estr(const struct xp_hal_family *f, nvmlReturn_t r);
/* Forget g's MIG devices (enumerate reads them again). */
void xp_nv_free_mig(struct nv_gpu *g);

/* nvidia_mig.c */
/* MIG mode, profiles, placements and instances of g into d (attributes,
 * partitions, mode); g's MIG UUIDs for the environment. */
void xp_nv_read_mig(struct xp_hal_family *f, struct nv_gpu *g, struct xp_device *d);
int xp_nv_mig_list(struct xp_hal_family *f, unsigned idx, struct xp_hal_mig *out,
		   struct xp_err *err);
int xp_nv_mig_create(struct xp_hal_family *f, unsigned idx, unsigned profile_id, unsigned start,
		     struct xp_hal_mig_inst *out, struct xp_err *err);
int xp_nv_mig_destroy(struct xp_hal_family *f, unsigned idx, unsigned gi_id, struct xp_err *err);
int xp_nv_mig_set_mode(struct xp_hal_family *f, unsigned idx, int on, struct xp_err *err);

#endif
