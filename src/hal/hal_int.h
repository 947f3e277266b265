/*
 * hal_int: what the device families share and the router does not export.
 *
 * Loading a vendor library is two steps, as in Slurm's plugin loader: find
 * and dlopen the library (an override, XP_HAL_<FAMILY>_LIB, else the
 * vendor's sonames in order), then fill a table of function pointers from a
 * symbol table. A table's field is named exactly like the vendor's symbol,
 * so XP_HAL_SYM(struct nvml_fns, nvmlInit_v2, 1) is the whole binding; a
 * missing required symbol refuses the library (XP_ENOENT naming the
 * symbol), a missing optional one leaves the pointer NULL and the feature
 * off.
 *
 * PCI bus ids in the model are written the way Linux sysfs names devices,
 * "0000:3b:00.0" (4-digit domain, lower case), whatever the vendor prints
 * ("00000000:3B:00.0" from NVML), so families can be matched to each other
 * and to hwloc by string.
 */
#ifndef XP_HAL_INT_H
#define XP_HAL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "hal.h"

extern const struct xp_device_ops xp_hal_cpu_ops;
extern const struct xp_device_ops xp_hal_nvidia_ops;
extern const struct xp_device_ops xp_hal_amd_ops;
extern const struct xp_device_ops xp_hal_ascend_ops;
extern const struct xp_device_ops xp_hal_cambricon_ops;
extern const struct xp_device_ops xp_hal_fpga_ops;
extern const struct xp_device_ops xp_hal_fake_ops;

/* Vendor libraries */

struct xp_hal_sym {
	const char *name;
	size_t off;   /* of the function pointer in the table */
	int required; /* 1: refuse the library without it */
};
#define XP_HAL_SYM(T, fn, req)                                                                     \
	{                                                                                          \
#fn, offsetof(T, fn), (req)                                                        \
	}

/* dlopen (RTLD_NOW | RTLD_LOCAL) the family's library: o->lib_override "family=PATH", else
 * env XP_HAL_<FAMILY>_LIB, else each of the NULL-terminated candidates in turn. XP_ENOENT
 * with every dlerror() text when none loads. The path that loaded goes to path (len bytes). */
int xp_hal_dl_open(const char *family, const struct xp_hal_opts *o, const char *const *candidates,
		   void **handle, char *path, size_t len, struct xp_err *err);
/* Fill table from syms (terminated by a NULL name). XP_ENOENT naming the first missing
 * required symbol. */
int xp_hal_dl_bind(void *handle, const char *lib, const struct xp_hal_sym *syms, void *table,
		   struct xp_err *err);

/* Model helpers */

/* Append a device to n for family fam with family-local index idx ("hal", "hal_index"
 * attributes set); NULL with XP_ENOSPC when n already holds XP_MAX_NODE_DEVS devices. The
 * pointer is valid until the next device is added. */
struct xp_device *xp_hal_add_device(struct xp_node *n, const char *fam, unsigned idx,
				    struct xp_err *err);
void xp_hal_attr(struct xp_device *d, const char *key, const char *value);
void xp_hal_attrf(struct xp_device *d, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Free devices keep.. of n (roll back a family that failed half way). */
void xp_hal_trim_devices(struct xp_node *n, uint16_t keep);
/* The first island id not used on n (0 when none is). */
int16_t xp_hal_next_island(const struct xp_node *n);
/* in with prefix (e.g. "NVIDIA ") removed and runs of blanks made one '-':
 * "NVIDIA H100 80GB HBM3" -> "H100-80GB-HBM3". */
void xp_hal_model_name(const char *in, const char *prefix, char *out, size_t len);

/* PCI bus ids: "[dddd[dddd]:]bb:dd.f" in any case. */
int xp_hal_pci_parse(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn);
/* Canonical "0000:3b:00.0"; XP_EINVAL when s does not parse (out = ""). */
int xp_hal_pci_norm(const char *s, char *out, size_t len);
void xp_hal_pci_format(unsigned dom, unsigned bus, unsigned dev, unsigned fn, char *out,
		       size_t len);

/* Stats helpers */

/* Make s at least as bad as health and add the reason to s->why ("; " between reasons). */
void xp_hal_worse(struct xp_hal_stats *s, int health, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Set d's health from s (and attribute "health_reason" when not ok). */
void xp_hal_apply_health(struct xp_device *d, const struct xp_hal_stats *s);

/* Env helper: "NAME=v1,v2\n" from n strings. */
void xp_hal_env_line(struct xp_sb *out, const char *name, const char *const *vals, unsigned n);

#endif
