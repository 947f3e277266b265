/*
 * nvidia_mig: MIG on NVIDIA GPUs through NVML - what discovery reads of a
 * MIG-capable GPU, and the instance API (hal.h's mig_* ops).
 *
 * Discovery, for a GPU whose nvmlDeviceGetMigMode answers (MIG on or off):
 * every GPU instance profile, by *index* 0..NVML_GPU_INSTANCE_PROFILE_COUNT_MAX-1
 * (nvmlDeviceGetGpuInstanceProfileInfoV, else the v1 call; an index the GPU
 * lacks answers NOT_SUPPORTED and is skipped), gives its profile *id*, slice
 * count, memory, SMs and count; nvmlDeviceGetGpuInstancePossiblePlacements_v2
 * gives its placements. Each profile becomes a partition (name, compute milli
 * = slices x 1000 / the GPU's slices, rounded down so that
 * xp_mig_slices_for() maps it back to the same slices, memory, max count),
 * and two attributes carry what a partition has no field for:
 *   mig_profiles   = "1g.10gb:19:14,...,3g.40gb:9:42"  (name:profile id:SMs)
 *   mig_placements = "1g.10gb:0+1,1+1,...;3g.40gb:0+4,4+4"  (start+size)
 * The profile name is NVML's ("MIG 3g.40gb" from the V call, "MIG " cut),
 * else built as "<slices>g.<ceil(GiB)>gb" ("+me" for the media-engine
 * profile) - right for A100 and H100, not for H200's 1g.18gb. A GPU in MIG
 * mode also gets "mig_instances" (its MIG device UUIDs, which the task
 * environment names) and "mig_layout" (name:start+size:UUID per GPU
 * instance). A driver without the profile calls gets the old partitions:
 * the existing instances grouped by the name of their MIG devices.
 *
 * Instances: list reads every GPU instance of every profile with its
 * compute instances, and matches MIG devices to them by GPU/compute
 * instance id. Create makes a GPU instance at an exact placement, then one
 * compute instance over all of it (the compute profile with the GPU
 * instance's slice count); if the compute instance fails the GPU instance
 * is destroyed again. Destroy removes the compute instances, then the GPU
 * instance; IN_USE (processes) stops it and is reported. Every NVML failure
 * names the call, its arguments and NVML's reason. Creating on a GPU not
 * in MIG mode is refused before NVML is asked. The MIG mode is changed
 * only by mig_set_mode (nvmlDeviceSetMigMode), which the agent calls only
 * when the controller orders it - for a node whose admin allowed MIG mode
 * changes, on a GPU with nothing of xpool's on it - and the agent itself
 * was started with --mig-mode-change (docs/design/mig.md); NVML refuses
 * while processes run (IN_USE), and a change left pending until a GPU
 * reset is reported as a failure.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xalloc.h"
#include "nvidia_int.h"

#define MAX_PLACE 16
#define MAX_GI	  16

struct nv_prof {
	unsigned idx, id, slices, count, sms;
	unsigned long long mib;
	char name[64];
	unsigned nplace;
	nvmlGpuInstancePlacement_t place[MAX_PLACE];
};

/* An NVML failure as an error: "what: NVML's reason (NVML error N)". */
static int nv_fail(const struct xp_hal_family *f, struct xp_err *err, nvmlReturn_t r,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int nv_fail(const struct xp_hal_family *f, struct xp_err *err, nvmlReturn_t r,
		   const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	int code = r == NVML_ERROR_INSUFFICIENT_RESOURCES ? XP_ENOSPC
		   : r == NVML_ERROR_IN_USE		  ? XP_ESTATE
		   : r == NVML_ERROR_NOT_FOUND		  ? XP_ENOENT
		   : r == NVML_ERROR_INVALID_ARGUMENT	  ? XP_EINVAL
		   : r == NVML_ERROR_NOT_SUPPORTED	  ? XP_EUNSUPP
		   : r == NVML_ERROR_NO_PERMISSION	  ? XP_EPERM
							  : XP_EIO;
	return xp_errf(err, code, "%s: %s (NVML error %d)", what, xp_nv_estr(f, r), r);
}

/* Profile index idx of GPU h into p (placements too when with_place); -1 when the GPU has
 * no such profile. */
static int read_profile(struct xp_hal_family *f, nvmlDevice_t h, unsigned idx, int with_place,
			struct nv_prof *p)
{
	nvmlGpuInstanceProfileInfo_v2_t v2;
	nvmlGpuInstanceProfileInfo_t v1;
	memset(p, 0, sizeof(*p));
	memset(&v2, 0, sizeof(v2));
	v2.version = nvmlGpuInstanceProfileInfo_v2;
	p->idx = idx;
	if (f->fn.nvmlDeviceGetGpuInstanceProfileInfoV &&
	    f->fn.nvmlDeviceGetGpuInstanceProfileInfoV(h, idx, &v2) == NVML_SUCCESS) {
		p->id = v2.id;
		p->slices = v2.sliceCount;
		p->count = v2.instanceCount;
		p->sms = v2.multiprocessorCount;
		p->mib = v2.memorySizeMB;
		v2.name[sizeof(v2.name) - 1] = '\0';
		const char *n = strncmp(v2.name, "MIG ", 4) ? v2.name : v2.name + 4;
		snprintf(p->name, sizeof(p->name), "%.63s", n);
	} else if (f->fn.nvmlDeviceGetGpuInstanceProfileInfo &&
		   f->fn.nvmlDeviceGetGpuInstanceProfileInfo(h, idx, &v1) == NVML_SUCCESS) {
		p->id = v1.id;
		p->slices = v1.sliceCount;
		p->count = v1.instanceCount;
		p->sms = v1.multiprocessorCount;
		p->mib = v1.memorySizeMB;
	} else {
		return -1;
	}
	if (!p->name[0] || strchr(p->name, ',') || strchr(p->name, ';') || strchr(p->name, ':'))
		snprintf(p->name, sizeof(p->name), "%ug.%llugb%s", p->slices,
			 (p->mib + 1023) / 1024,
			 idx == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 ? "+me" : "");
	unsigned n = 0;
	if (with_place && f->fn.nvmlDeviceGetGpuInstancePossiblePlacements_v2 &&
	    f->fn.nvmlDeviceGetGpuInstancePossiblePlacements_v2(h, p->id, NULL, &n) ==
		    NVML_SUCCESS &&
	    n <= MAX_PLACE &&
	    f->fn.nvmlDeviceGetGpuInstancePossiblePlacements_v2(h, p->id, p->place, &n) ==
		    NVML_SUCCESS)
		p->nplace = n;
	return 0;
}

/* Every profile of GPU h, once per id, into p (room for the count max); their number. */
static unsigned read_profiles(struct xp_hal_family *f, nvmlDevice_t h, int with_place,
			      struct nv_prof *p)
{
	unsigned np = 0;
	for (unsigned idx = 0; idx < NVML_GPU_INSTANCE_PROFILE_COUNT_MAX; idx++) {
		if (read_profile(f, h, idx, with_place, &p[np]) < 0)
			continue;
		unsigned k = 0;
		while (k < np && p[k].id != p[np].id)
			k++;
		np += k == np;
	}
	return np;
}

static const struct nv_prof *prof_by_id(const struct nv_prof *p, unsigned np, unsigned id)
{
	for (unsigned k = 0; k < np; k++)
		if (p[k].id == id)
			return &p[k];
	return NULL;
}

/* The profiles as partitions and attributes of d. */
static void put_profiles(const struct nv_prof *p, unsigned np, struct xp_device *d)
{
	unsigned total = 0;
	for (unsigned k = 0; k < np; k++)
		total = p[k].slices > total ? p[k].slices : total;
	struct xp_sb prof, place;
	xp_sb_init(&prof);
	xp_sb_init(&place);
	d->parts = xreallocarray(d->parts, d->nparts + (size_t)np, sizeof(*d->parts));
	for (unsigned k = 0; k < np; k++) {
		struct xp_partition *pt = &d->parts[d->nparts++];
		unsigned milli = total ? p[k].slices * XP_MILLI / total : XP_MILLI;
		memset(pt, 0, sizeof(*pt));
		pt->name = xstrdup(p[k].name);
		pt->compute_milli = (uint16_t)(milli < 1 ? 1 : milli > XP_MILLI ? XP_MILLI : milli);
		pt->mem_mib = p[k].mib;
		pt->max_count = (uint16_t)(p[k].count > UINT16_MAX ? UINT16_MAX : p[k].count);
		xp_sb_printf(&prof, "%s%s:%u:%u", k ? "," : "", p[k].name, p[k].id, p[k].sms);
		xp_sb_printf(&place, "%s%s:", k ? ";" : "", p[k].name);
		for (unsigned i = 0; i < p[k].nplace; i++)
			xp_sb_printf(&place, "%s%u+%u", i ? "," : "", p[k].place[i].start,
				     p[k].place[i].size);
	}
	xp_hal_attr(d, "mig_profiles", prof.s);
	xp_hal_attr(d, "mig_placements", place.s);
	xp_sb_free(&prof);
	xp_sb_free(&place);
}

/* Compute share of a MIG device named "... MIG 3g.40gb": slices of 7 (4 on an A30). */
static uint16_t mig_milli(const char *profile, const char *gpu_name)
{
	int slices = atoi(profile), of = strstr(gpu_name, "A30") ? 4 : 7;
	if (slices <= 0)
		return XP_MILLI;
	int m = slices * XP_MILLI / of;
	return (uint16_t)(m < 1 ? 1 : m > XP_MILLI ? XP_MILLI : m);
}

/* Without the profile calls: a partition per profile of the existing MIG devices. */
static void group_device(struct nv_gpu *g, struct xp_device *d, const char *name,
			 unsigned long long mib)
{
	const char *p = strstr(name, "MIG ");
	char prof[65];
	snprintf(prof, sizeof(prof), "%.64s", p ? p + 4 : name[0] ? name : "mig");
	uint16_t pi = 0;
	while (pi < d->nparts && strcmp(d->parts[pi].name, prof) != 0)
		pi++;
	if (pi == d->nparts) {
		d->parts = xreallocarray(d->parts, d->nparts + 1u, sizeof(*d->parts));
		memset(&d->parts[pi], 0, sizeof(d->parts[pi]));
		d->parts[pi].name = xstrdup(prof);
		d->parts[pi].compute_milli = mig_milli(prof, g->name);
		d->parts[pi].mem_mib = mib >> 20;
		d->nparts++;
	}
	d->parts[pi].max_count++;
}

/* g's MIG devices: UUIDs into g and attribute mig_instances; grouped into partitions when
 * group is set. */
static void read_devices(struct xp_hal_family *f, struct nv_gpu *g, struct xp_device *d, int group)
{
	unsigned max = 0;
	if (!f->fn.nvmlDeviceGetMaxMigDeviceCount || !f->fn.nvmlDeviceGetMigDeviceHandleByIndex ||
	    f->fn.nvmlDeviceGetMaxMigDeviceCount(g->h, &max) != NVML_SUCCESS)
		return;
	if (max > 64)
		max = 64;
	struct xp_sb list;
	xp_sb_init(&list);
	for (unsigned k = 0; k < max; k++) {
		nvmlDevice_t m;
		char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
		nvmlMemory_t mem;
		if (f->fn.nvmlDeviceGetMigDeviceHandleByIndex(g->h, k, &m) != NVML_SUCCESS)
			continue; /* NOT_FOUND: an empty slot */
		if (f->fn.nvmlDeviceGetUUID(m, uuid, sizeof(uuid)) != NVML_SUCCESS)
			continue;
		uuid[sizeof(uuid) - 1] = '\0';
		g->mig_uuids = xreallocarray(g->mig_uuids, g->nmig + 1, sizeof(char *));
		g->mig_uuids[g->nmig++] = xstrdup(uuid);
		xp_sb_printf(&list, "%s%s", list.len ? "," : "", uuid);
		if (!group)
			continue;
		if (f->fn.nvmlDeviceGetName(m, name, sizeof(name)) != NVML_SUCCESS)
			name[0] = '\0';
		name[sizeof(name) - 1] = '\0';
		memset(&mem, 0, sizeof(mem));
		f->fn.nvmlDeviceGetMemoryInfo(m, &mem);
		group_device(g, d, name, mem.total);
	}
	if (list.len)
		xp_hal_attr(d, "mig_instances", list.s);
	xp_sb_free(&list);
}

void xp_nv_read_mig(struct xp_hal_family *f, struct nv_gpu *g, struct xp_device *d)
{
	unsigned cur = 0, pend = 0;
	struct nv_prof p[NVML_GPU_INSTANCE_PROFILE_COUNT_MAX];

	xp_nv_free_mig(g);
	if (!f->fn.nvmlDeviceGetMigMode ||
	    f->fn.nvmlDeviceGetMigMode(g->h, &cur, &pend) != NVML_SUCCESS)
		return; /* no MIG on this GPU or driver */
	xp_hal_attr(d, "mig_mode", cur == NVML_DEVICE_MIG_ENABLE ? "enabled" : "disabled");
	if (pend != cur)
		xp_hal_attr(d, "mig_mode_pending",
			    pend == NVML_DEVICE_MIG_ENABLE ? "enabled" : "disabled");
	unsigned np = read_profiles(f, g->h, 1, p);
	if (np)
		put_profiles(p, np, d);
	if (cur != NVML_DEVICE_MIG_ENABLE)
		return;
	g->mig = 1;
	d->mode = XP_MODE_MIG; /* CUDA runs on its instances, not on it whole */
	read_devices(f, g, d, np == 0);

	struct xp_hal_mig mig;
	unsigned idx = (unsigned)(g - f->g);
	if (!np || xp_nv_mig_list(f, idx, &mig, NULL) < 0 || !mig.n)
		return;
	struct xp_sb lay;
	xp_sb_init(&lay);
	for (unsigned i = 0; i < mig.n; i++) {
		const struct nv_prof *pr = prof_by_id(p, np, mig.inst[i].profile_id);
		xp_sb_printf(&lay, "%s%s:%u+%u:%s", i ? "," : "", pr ? pr->name : "?",
			     mig.inst[i].start, mig.inst[i].size, mig.inst[i].uuid);
	}
	xp_hal_attr(d, "mig_layout", lay.s);
	xp_sb_free(&lay);
}

/* GPU idx of f, with a handle and the MIG calls the instance API needs. */
static struct nv_gpu *mig_gpu(struct xp_hal_family *f, unsigned idx, struct xp_err *err)
{
	static const char *const need[] = {
		"nvmlDeviceGetMigMode",
		"nvmlDeviceGetGpuInstances",
		"nvmlGpuInstanceGetInfo",
		"nvmlDeviceCreateGpuInstanceWithPlacement",
		"nvmlGpuInstanceCreateComputeInstance",
		"nvmlGpuInstanceGetComputeInstances",
		"nvmlComputeInstanceGetInfo_v2",
		"nvmlComputeInstanceDestroy",
		"nvmlGpuInstanceDestroy",
		"nvmlDeviceGetGpuInstanceById",
		"nvmlGpuInstanceGetComputeInstanceProfileInfo",
	};
	const void *have[] = {
		f->fn.nvmlDeviceGetMigMode,
		f->fn.nvmlDeviceGetGpuInstances,
		f->fn.nvmlGpuInstanceGetInfo,
		f->fn.nvmlDeviceCreateGpuInstanceWithPlacement,
		f->fn.nvmlGpuInstanceCreateComputeInstance,
		f->fn.nvmlGpuInstanceGetComputeInstances,
		f->fn.nvmlComputeInstanceGetInfo_v2,
		f->fn.nvmlComputeInstanceDestroy,
		f->fn.nvmlGpuInstanceDestroy,
		f->fn.nvmlDeviceGetGpuInstanceById,
		f->fn.nvmlGpuInstanceGetComputeInstanceProfileInfo,
	};
	if (idx >= f->n) {
		xp_errf(err, XP_ENOENT, "no GPU %u (%u present)", idx, f->n);
		return NULL;
	}
	if (f->g[idx].hret != NVML_SUCCESS) {
		nv_fail(f, err, f->g[idx].hret, "nvmlDeviceGetHandleByIndex_v2(%u)", idx);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!have[i]) {
			xp_errf(err, XP_EUNSUPP,
				"%s (NVML %s) has no %s: the driver is too old for MIG", f->lib,
				f->version, need[i]);
			return NULL;
		}
	return &f->g[idx];
}

/* The compute instances of gi, of every compute profile, into out (room cap). */
static int gi_cis(struct xp_hal_family *f, nvmlGpuInstance_t gi, unsigned gi_id,
		  nvmlComputeInstance_t *out, unsigned cap, unsigned *n, struct xp_err *err)
{
	*n = 0;
	for (unsigned idx = 0; idx < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; idx++) {
		nvmlComputeInstanceProfileInfo_t ci;
		nvmlComputeInstance_t list[XP_HAL_MIG_MAX];
		unsigned k = 0;
		if (f->fn.nvmlGpuInstanceGetComputeInstanceProfileInfo(
			    gi, idx, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci) !=
		    NVML_SUCCESS)
			continue; /* not a profile of this GPU instance */
		nvmlReturn_t r = f->fn.nvmlGpuInstanceGetComputeInstances(gi, ci.id, list, &k);
		if (r != NVML_SUCCESS)
			return nv_fail(f, err, r,
				       "nvmlGpuInstanceGetComputeInstances(GI %u, profile %u)",
				       gi_id, ci.id);
		for (unsigned j = 0; j < k && *n < cap && j < XP_HAL_MIG_MAX; j++)
			out[(*n)++] = list[j];
	}
	return 0;
}

/* One GPU instance and its compute instances into out. */
static int read_gi(struct xp_hal_family *f, nvmlGpuInstance_t gi, struct xp_hal_mig_inst *out,
		   struct xp_err *err)
{
	nvmlGpuInstanceInfo_t info;
	nvmlComputeInstance_t cis[XP_HAL_MIG_MAX];
	unsigned n = 0;
	memset(out, 0, sizeof(*out));
	nvmlReturn_t r = f->fn.nvmlGpuInstanceGetInfo(gi, &info);
	if (r != NVML_SUCCESS)
		return nv_fail(f, err, r, "nvmlGpuInstanceGetInfo");
	out->gi_id = info.id;
	out->profile_id = info.profileId;
	out->start = (uint8_t)info.placement.start;
	out->size = (uint8_t)info.placement.size;
	int rc = gi_cis(f, gi, info.id, cis, XP_HAL_MIG_MAX, &n, err);
	for (unsigned j = 0; rc == 0 && j < n; j++) {
		nvmlComputeInstanceInfo_t ci;
		if ((r = f->fn.nvmlComputeInstanceGetInfo_v2(cis[j], &ci)) != NVML_SUCCESS)
			return nv_fail(f, err, r, "nvmlComputeInstanceGetInfo_v2(GI %u)", info.id);
		out->ci_ids[out->nci++] = ci.id;
	}
	return rc;
}

/* MIG UUIDs onto the instances: the MIG device of each GPU instance's lowest compute id. */
static void match_uuids(struct xp_hal_family *f, struct nv_gpu *g, struct xp_hal_mig *m)
{
	unsigned max = 0, best[XP_HAL_MIG_MAX];
	if (!f->fn.nvmlDeviceGetMaxMigDeviceCount || !f->fn.nvmlDeviceGetMigDeviceHandleByIndex ||
	    !f->fn.nvmlDeviceGetGpuInstanceId || !f->fn.nvmlDeviceGetComputeInstanceId ||
	    f->fn.nvmlDeviceGetMaxMigDeviceCount(g->h, &max) != NVML_SUCCESS)
		return;
	for (unsigned i = 0; i < XP_HAL_MIG_MAX; i++)
		best[i] = ~0u;
	for (unsigned k = 0; k < max && k < 64; k++) {
		nvmlDevice_t md;
		unsigned gid, cid;
		char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
		if (f->fn.nvmlDeviceGetMigDeviceHandleByIndex(g->h, k, &md) != NVML_SUCCESS ||
		    f->fn.nvmlDeviceGetGpuInstanceId(md, &gid) != NVML_SUCCESS ||
		    f->fn.nvmlDeviceGetComputeInstanceId(md, &cid) != NVML_SUCCESS ||
		    f->fn.nvmlDeviceGetUUID(md, uuid, sizeof(uuid)) != NVML_SUCCESS)
			continue;
		uuid[sizeof(uuid) - 1] = '\0';
		for (unsigned i = 0; i < m->n; i++)
			if (m->inst[i].gi_id == gid && cid < best[i]) {
				best[i] = cid;
				snprintf(m->inst[i].uuid, sizeof(m->inst[i].uuid), "%s", uuid);
			}
	}
}

static int by_gi_id(const void *a, const void *b)
{
	const struct xp_hal_mig_inst *x = a, *y = b;
	return x->gi_id < y->gi_id ? -1 : x->gi_id > y->gi_id;
}

int xp_nv_mig_list(struct xp_hal_family *f, unsigned idx, struct xp_hal_mig *out,
		   struct xp_err *err)
{
	struct nv_prof p[NVML_GPU_INSTANCE_PROFILE_COUNT_MAX];
	unsigned cur = 0, pend = 0;
	memset(out, 0, sizeof(*out));
	struct nv_gpu *g = mig_gpu(f, idx, err);
	if (!g)
		return err ? err->code : XP_EUNSUPP;
	nvmlReturn_t r = f->fn.nvmlDeviceGetMigMode(g->h, &cur, &pend);
	if (r != NVML_SUCCESS)
		return nv_fail(f, err, r, "nvmlDeviceGetMigMode(GPU %u)", idx);
	out->enabled = cur == NVML_DEVICE_MIG_ENABLE;
	out->pending = pend == NVML_DEVICE_MIG_ENABLE;
	if (!out->enabled)
		return 0;
	unsigned np = read_profiles(f, g->h, 0, p);
	for (unsigned k = 0; k < np; k++) {
		nvmlGpuInstance_t gis[MAX_GI];
		unsigned n = 0;
		if ((r = f->fn.nvmlDeviceGetGpuInstances(g->h, p[k].id, gis, &n)) != NVML_SUCCESS)
			return nv_fail(f, err, r, "nvmlDeviceGetGpuInstances(GPU %u, %s id %u)",
				       idx, p[k].name, p[k].id);
		for (unsigned i = 0; i < n && i < MAX_GI; i++) {
			if (out->n == XP_HAL_MIG_MAX)
				return xp_errf(err, XP_ERANGE,
					       "GPU %u holds more than %d GPU instances", idx,
					       XP_HAL_MIG_MAX);
			int rc = read_gi(f, gis[i], &out->inst[out->n], err);
			if (rc < 0)
				return rc;
			out->n++;
		}
	}
	qsort(out->inst, out->n, sizeof(out->inst[0]), by_gi_id);
	match_uuids(f, g, out);
	return 0;
}

/* Refuse a GPU not in MIG mode, naming what to do. */
static int need_mig_mode(struct xp_hal_family *f, struct nv_gpu *g, unsigned idx,
			 struct xp_err *err)
{
	unsigned cur = 0, pend = 0;
	nvmlReturn_t r = f->fn.nvmlDeviceGetMigMode(g->h, &cur, &pend);
	if (r != NVML_SUCCESS)
		return nv_fail(f, err, r, "nvmlDeviceGetMigMode(GPU %u)", idx);
	if (cur != NVML_DEVICE_MIG_ENABLE)
		return xp_errf(err, XP_ESTATE,
			       "GPU %u (%s) is not in MIG mode%s: an administrator enables it "
			       "(nvidia-smi -i %u -mig 1); xpool changes MIG modes only on nodes "
			       "an admin allowed",
			       idx, g->uuid,
			       pend == NVML_DEVICE_MIG_ENABLE ? " (enabled at the next reset)" : "",
			       idx);
	return 0;
}

/* The compute profile id that spans all slices of gi; -1 when none does. */
static int full_ci_profile(struct xp_hal_family *f, nvmlGpuInstance_t gi, unsigned slices)
{
	for (unsigned idx = 0; idx < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; idx++) {
		nvmlComputeInstanceProfileInfo_t ci;
		if (f->fn.nvmlGpuInstanceGetComputeInstanceProfileInfo(
			    gi, idx, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci) ==
			    NVML_SUCCESS &&
		    ci.sliceCount == slices)
			return (int)ci.id;
	}
	return -1;
}

int xp_nv_mig_create(struct xp_hal_family *f, unsigned idx, unsigned profile_id, unsigned start,
		     struct xp_hal_mig_inst *out, struct xp_err *err)
{
	struct nv_prof p[NVML_GPU_INSTANCE_PROFILE_COUNT_MAX];
	memset(out, 0, sizeof(*out));
	struct nv_gpu *g = mig_gpu(f, idx, err);
	int rc = g ? need_mig_mode(f, g, idx, err) : err ? err->code : XP_EUNSUPP;
	if (rc < 0)
		return rc;
	unsigned np = read_profiles(f, g->h, 1, p);
	const struct nv_prof *pr = prof_by_id(p, np, profile_id);
	if (!pr) {
		struct xp_sb ids;
		xp_sb_init(&ids);
		for (unsigned k = 0; k < np; k++)
			xp_sb_printf(&ids, "%s%u (%s)", k ? ", " : "", p[k].id, p[k].name);
		rc = xp_errf(err, XP_EINVAL, "GPU %u has no GPU instance profile id %u (valid: %s)",
			     idx, profile_id, ids.len ? ids.s : "none");
		xp_sb_free(&ids);
		return rc;
	}
	/* every placement of a profile has one size; NVML judges the start */
	nvmlGpuInstancePlacement_t where = { start, pr->nplace ? pr->place[0].size : 0 };
	nvmlGpuInstance_t gi;
	nvmlReturn_t r =
		f->fn.nvmlDeviceCreateGpuInstanceWithPlacement(g->h, profile_id, &where, &gi);
	if (r != NVML_SUCCESS)
		return nv_fail(
			f, err, r,
			"nvmlDeviceCreateGpuInstanceWithPlacement(GPU %u, %s id %u, {%u,%u})", idx,
			pr->name, profile_id, where.start, where.size);
	nvmlComputeInstance_t ci;
	int cid = full_ci_profile(f, gi, pr->slices);
	r = cid < 0 ? NVML_ERROR_NOT_SUPPORTED
		    : f->fn.nvmlGpuInstanceCreateComputeInstance(gi, (unsigned)cid, &ci);
	if (r != NVML_SUCCESS) {
		rc = nv_fail(f, err, r,
			     "nvmlGpuInstanceCreateComputeInstance(GPU %u, %s, %u slices)", idx,
			     pr->name, pr->slices);
		f->fn.nvmlGpuInstanceDestroy(gi); /* no half-made instance left behind */
		return rc;
	}
	if ((rc = read_gi(f, gi, out, err)) < 0)
		return rc;
	struct xp_hal_mig m = { .n = 1 };
	m.inst[0] = *out;
	match_uuids(f, g, &m);
	*out = m.inst[0];
	return 0;
}

int xp_nv_mig_destroy(struct xp_hal_family *f, unsigned idx, unsigned gi_id, struct xp_err *err)
{
	struct nv_gpu *g = mig_gpu(f, idx, err);
	int rc = g ? need_mig_mode(f, g, idx, err) : err ? err->code : XP_EUNSUPP;
	if (rc < 0)
		return rc;
	nvmlGpuInstance_t gi;
	nvmlReturn_t r = f->fn.nvmlDeviceGetGpuInstanceById(g->h, gi_id, &gi);
	if (r != NVML_SUCCESS)
		return nv_fail(f, err, r, "nvmlDeviceGetGpuInstanceById(GPU %u, GI %u)", idx,
			       gi_id);
	nvmlComputeInstance_t cis[XP_HAL_MIG_MAX];
	unsigned n = 0;
	if ((rc = gi_cis(f, gi, gi_id, cis, XP_HAL_MIG_MAX, &n, err)) < 0)
		return rc;
	for (unsigned j = 0; j < n; j++)
		if ((r = f->fn.nvmlComputeInstanceDestroy(cis[j])) != NVML_SUCCESS)
			return nv_fail(f, err, r, "nvmlComputeInstanceDestroy(GPU %u, GI %u)", idx,
				       gi_id);
	if ((r = f->fn.nvmlGpuInstanceDestroy(gi)) != NVML_SUCCESS)
		return nv_fail(f, err, r, "nvmlGpuInstanceDestroy(GPU %u, GI %u)", idx, gi_id);
	return 0;
}

int xp_nv_mig_set_mode(struct xp_hal_family *f, unsigned idx, int on, struct xp_err *err)
{
	unsigned cur = 0, pend = 0, want = on ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
	const char *what = on ? "enable" : "disable";
	struct nv_gpu *g = mig_gpu(f, idx, err);
	if (!g)
		return err ? err->code : XP_EUNSUPP;
	if (!f->fn.nvmlDeviceSetMigMode)
		return xp_errf(err, XP_EUNSUPP, "GPU %u: this NVML has no nvmlDeviceSetMigMode",
			       idx);
	nvmlReturn_t r = f->fn.nvmlDeviceGetMigMode(g->h, &cur, &pend);
	if (r != NVML_SUCCESS)
		return nv_fail(f, err, r, "nvmlDeviceGetMigMode(GPU %u)", idx);
	if (cur == want && pend == want)
		return 0; /* already so */
	nvmlReturn_t act = NVML_SUCCESS;
	r = f->fn.nvmlDeviceSetMigMode(g->h, want, &act);
	if (r != NVML_SUCCESS)
		return nv_fail(f, err, r, "nvmlDeviceSetMigMode(GPU %u, %s)", idx, what);
	if (act != NVML_SUCCESS)
		return xp_errf(err, XP_ESTATE,
			       "nvmlDeviceSetMigMode(GPU %u, %s): pending until the GPU is reset "
			       "(%s); xpool does not reset GPUs",
			       idx, what, xp_nv_estr(f, act));
	return 0;
}
