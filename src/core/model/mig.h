/*
 * mig: NVIDIA MIG geometry - the profile tables of the MIG-capable GPUs the
 * simulator and emulated nodes know, and a GPU's slice lattice with the
 * operations placement needs (issue 21, docs/design/mig.md).
 *
 * An A100, H100 or H200 has 7 compute slices and 8 memory slices. A GPU
 * instance of a profile takes a placement {start, size} in memory-slice
 * units, [start, start + size) of the 8, and the compute slices
 * [start, start + compute) of the 7 (NVML does not say which compute slices
 * an instance holds; on these GPUs the compute range lies inside the memory
 * range, so the memory mask decides and the compute mask is kept as a
 * check). Two instances never share a memory slice; a profile also has a
 * maximum count (1g+me: one per GPU).
 *
 * The built-in tables (A100-40GB, A100-80GB, H100-80GB, H200-141GB) are the
 * simulator's default and what an emulated node offers. Every table lists
 * its profiles in the same order of kinds (enum xp_mig_kind), so index k is
 * "the 3g profile" on every model. Hopper placements disagree between
 * public sources: the tables use the A100 pattern for every model, and a
 * real node reads its placements from NVML at run time
 * (nvmlDeviceGetGpuInstancePossiblePlacements_v2).
 *
 * Pure: no allocation, no I/O. Tables are static and read-only; a struct
 * xp_mig_gpu is plain data the caller owns and may copy.
 */
#ifndef XP_MIG_H
#define XP_MIG_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/err.h"

#define XP_MIG_MEM_SLICES     8
#define XP_MIG_COMPUTE_SLICES 7
#define XP_MIG_ANY	      "any" /* devices.mig: any - the smallest profile that fits */
#define XP_MIG_MAX_PLACEMENTS 8

/* Profile kinds, in table order; the NVML profile id of each is the same
 * on every model of the tables. */
enum xp_mig_kind {
	XP_MIG_1G,    /* id 19: 1 compute, 1 memory slice */
	XP_MIG_1G_ME, /* id 20: the same with the media engines, one per GPU */
	XP_MIG_1G_2X, /* id 15: 1 compute, 2 memory slices */
	XP_MIG_2G,    /* id 14 */
	XP_MIG_3G,    /* id 9 */
	XP_MIG_4G,    /* id 5 */
	XP_MIG_7G,    /* id 0: the whole GPU */
	XP_MIG_NKINDS
};

struct xp_mig_placement {
	uint8_t start, size; /* memory slices [start, start + size) */
};

struct xp_mig_profile {
	uint16_t id;	   /* NVML GPU instance profile id */
	const char *name;  /* "3g.40gb" */
	uint8_t compute;   /* compute slices */
	uint32_t mem_mib;  /* as NVML reports it (nvidia-smi's GiB x 1024) */
	uint16_t sms;	   /* streaming multiprocessors */
	uint8_t max_count; /* instances per GPU */
	uint8_t nplace;
	struct xp_mig_placement place[XP_MIG_MAX_PLACEMENTS]; /* by start */
};

struct xp_mig_table {
	const char *model; /* "A100-80GB" */
	uint32_t mem_mib;  /* the whole GPU's memory */
	struct xp_mig_profile prof[XP_MIG_NKINDS];
};

/* One GPU instance on a GPU. Instances on one GPU have distinct starts. */
struct xp_mig_inst {
	uint8_t kind, start;
};

/* A GPU in MIG mode: its table and the instances it holds. */
struct xp_mig_gpu {
	const struct xp_mig_table *t;
	uint8_t mem;	 /* bit i: memory slice i taken */
	uint8_t compute; /* bit i: compute slice i taken */
	uint8_t n;	 /* instances */
	struct xp_mig_inst inst[XP_MIG_MEM_SLICES];
};

/* The built-in tables: count, i-th, and by GPU model name, leniently: any
 * case, "NVIDIA A100-SXM4-80GB", "A100 80GB PCIe", "H100 80GB HBM3",
 * "H200", "h200-141gb" (family A100/H100/H200 plus a memory size in GB; no
 * size means 40 GB for an A100, 80 for an H100, 141 for an H200). NULL when
 * none matches (an H100 NVL 94GB has a table of its own in NVML, not here). */
size_t xp_mig_ntables(void);
const struct xp_mig_table *xp_mig_table_at(size_t i);
const struct xp_mig_table *xp_mig_table_find(const char *model);
/* Index of t among the built-in tables (0..xp_mig_ntables()-1). */
size_t xp_mig_table_index(const struct xp_mig_table *t);

/* Kind of the profile named name on t (any case: "3G.40GB"), or XP_ENOENT
 * with an error that lists t's valid names. */
int xp_mig_profile_find(const struct xp_mig_table *t, const char *name, struct xp_err *err);
/* The NVML GPU instance profile id of a kind (the same on every table),
 * and the kind of an id (-1 when none). */
unsigned xp_mig_kind_id(int kind);
int xp_mig_kind_of_id(unsigned id);
/* The compute slices of a kind (the same on every table); 0 when none. */
unsigned xp_mig_kind_compute(int kind);
/* The profile named name (any case) in the first built-in table that has
 * it, its kind in *kind (may be NULL); NULL when no table has it. Profiles
 * of one name have the same compute slices on every table. */
const struct xp_mig_profile *xp_mig_profile_any(const char *name, int *kind);
/* The distinct profile names of every built-in table, ", "-separated, into
 * buf (truncated to len); the length written. */
size_t xp_mig_all_names(char *buf, size_t len);
/* The smallest profile of t (fewest compute slices, then least memory, then
 * fewest memory slices; 1g+me is never chosen) whose compute slices cover
 * compute_milli of the GPU (XP_MILLI = all 7) and whose memory covers
 * mem_mib; -1 when none does. */
int xp_mig_smallest(const struct xp_mig_table *t, uint32_t compute_milli, uint64_t mem_mib);
/* Compute slices that cover compute_milli: ceil(milli x 7 / 1000), >= 1. */
unsigned xp_mig_slices_for(uint32_t compute_milli);

/* An empty GPU of table t. */
void xp_mig_gpu_init(struct xp_mig_gpu *g, const struct xp_mig_table *t);
/* Can an instance of kind take {start, its size} now? (a valid placement of
 * the profile, free slices, under the profile's maximum count) */
int xp_mig_can_place(const struct xp_mig_gpu *g, int kind, unsigned start);
/* The placements kind could take now, by start, into out (may be NULL,
 * room for XP_MIG_MAX_PLACEMENTS); their number. */
size_t xp_mig_free_placements(const struct xp_mig_gpu *g, int kind, struct xp_mig_placement *out);
/* Create an instance of kind at start; XP_ENOSPC (with the reason) when it
 * cannot take that placement now. */
int xp_mig_place(struct xp_mig_gpu *g, int kind, unsigned start, struct xp_err *err);
/* Destroy the instance at start; XP_ENOENT when there is none. */
int xp_mig_remove(struct xp_mig_gpu *g, unsigned start, struct xp_err *err);
/* Index in g->inst of the instance at start, or -1. */
int xp_mig_find_inst(const struct xp_mig_gpu *g, unsigned start);
/* The largest kind (most compute slices, then memory) that could be placed
 * now, or -1 when none could. */
int xp_mig_largest(const struct xp_mig_gpu *g);
/* How many more instances of kind could be placed together now (the most
 * disjoint free placements, within the maximum count). */
unsigned xp_mig_room(const struct xp_mig_gpu *g, int kind);
/* Free compute slices (7 - taken). */
unsigned xp_mig_free_compute(const struct xp_mig_gpu *g);

/* Static layouts, as mig-parted's configs name them: "all-1g" (7 x 1g),
 * "all-7g" (1 x 7g), "all-balanced" (2 x 1g, 1 x 2g, 1 x 3g: mig-parted's
 * all-balanced for these models). Replaces g's instances; XP_EINVAL naming
 * the valid layouts when the name is unknown. */
int xp_mig_layout(struct xp_mig_gpu *g, const char *layout, struct xp_err *err);

#endif
