/*
 * fake_nvml_int: what the two halves of the fake NVML share - the GPU half
 * (fake_nvml.c: devices, health, NVLink, events) and the MIG half
 * (fake_nvml_mig.c: modes, GPU and compute instances, their state file).
 * Both are one library; nothing here is exported from it.
 */
#ifndef XP_FAKE_NVML_INT_H
#define XP_FAKE_NVML_INT_H

#include <stddef.h>

#include "fake_common.h"
#include "nvml_abi.h"

#define X(ret, name, args) FAKE_EXPORT ret name args;
XP_NVML_FUNCS(X)
#undef X

#define MAXG	 64
#define MIGSLOTS 7 /* MIG devices per GPU */

struct nvmlDevice_st {
	unsigned idx;
	int mig; /* -1: a GPU; else its MIG device slot */
	unsigned parent;
};

extern struct nvmlDevice_st fk_gpus[MAXG], fk_migs[MAXG][MIGSLOTS];
extern unsigned fk_count;
extern int fk_inited;

static inline int failing(const char *fn)
{
	return fk_has("FAKE_NVML_FAIL", fn);
}

static inline int valid(nvmlDevice_t d)
{
	return fk_inited && d &&
	       ((d >= &fk_gpus[0] && d < &fk_gpus[fk_count]) ||
		(d >= &fk_migs[0][0] && d < &fk_migs[fk_count][0]));
}

static inline int lost(nvmlDevice_t d)
{
	return fk_lists("FAKE_NVML_LOST", d->mig < 0 ? d->idx : d->parent);
}

#define CHECK(d, fn)                                                                               \
	do {                                                                                       \
		if (!valid(d))                                                                     \
			return fk_inited ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_UNINITIALIZED; \
		if (lost(d))                                                                       \
			return NVML_ERROR_GPU_IS_LOST;                                             \
		if (failing(fn))                                                                   \
			return NVML_ERROR_UNKNOWN;                                                 \
	} while (0)

/* The MIG half, for the GPU half: set the state up at nvmlInit_v2; a GPU's
 * mode (-1: the state cannot be read); a MIG device's name, UUID and memory
 * (any output may be NULL; INVALID_ARGUMENT when its instance is gone). */
void fk_mig_init(void);
int fk_mig_mode(unsigned gpu, unsigned *cur, unsigned *pend);
nvmlReturn_t fk_mig_dev(const struct nvmlDevice_st *d, char *name, size_t nlen, char *uuid,
			size_t ulen, unsigned long long *mib);

#endif
