/*
 * fake_nvml_mig: the MIG half of the fake NVML (fake_nvml.c has the knobs
 * and the rules in its header comment).
 *
 * The state of every GPU (mode, GPU instances, their compute
 * instances) is one plain struct: in this process's memory, or, with
 * FAKE_NVML_STATE, in a file read and written whole under flock on every
 * call that touches it, so several processes (an agent and its restart, a
 * test and a CLI) see one GPU. GPU and compute instance handles point into
 * static arrays indexed by slot; a handle whose slot is empty (destroyed,
 * maybe by another process) is INVALID_ARGUMENT.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "fake_nvml_int.h"
#include "mig.h"
#define MAXGI	 8
#define MAXCI	 8
#define ST_MAGIC 0x4e4d4947u /* "GIMN", version 1 */
#define NCIPROF	 5	     /* compute instance profiles 0..4: 1, 2, 3, 4, 7 slices */

struct fci {
	uint32_t id, serial; /* id within its GPU instance; serial makes the UUID */
	uint8_t used, prof, start, slices, slot; /* slot: its MIG device index */
};

struct fgi {
	uint32_t id;
	uint8_t used, kind, start, size;
	struct fci ci[MAXCI];
};

struct fgpu {
	uint8_t cur, pend;
	struct fgi gi[MAXGI];
};

struct fstate {
	uint32_t magic, serial;
	struct fgpu g[MAXG];
};

struct nvmlGpuInstance_st {
	unsigned gpu, slot;
};
struct nvmlComputeInstance_st {
	unsigned gpu, gi, slot;
};

static struct fstate mem_state, file_state;
static int state_fd = -1;
static struct nvmlGpuInstance_st gih[MAXG][MAXGI];
static struct nvmlComputeInstance_st cih[MAXG][MAXGI][MAXCI];

/* is handle h inside the static table t of size bytes? */
static int in_table(const void *h, const void *t, size_t size)
{
	uintptr_t p = (uintptr_t)h, b = (uintptr_t)t;
	return h && p >= b && p < b + size;
}

static const unsigned ci_slices[NCIPROF] = { 1, 2, 3, 4, 7 };

static const struct xp_mig_table *table(void)
{
	return xp_mig_table_find(fk_str("FAKE_NVML_NAME", "NVIDIA A100-SXM4-80GB"));
}

/* kind of NVML profile index idx (nvml.h's NVML_GPU_INSTANCE_PROFILE_*), -1 none */
static int kind_of_index(unsigned idx)
{
	static const int map[] = { XP_MIG_1G, XP_MIG_2G, XP_MIG_3G,    XP_MIG_4G, XP_MIG_7G,
				   -1,	      -1,	 XP_MIG_1G_ME, -1,	  XP_MIG_1G_2X };
	return idx < sizeof(map) / sizeof(map[0]) ? map[idx] : -1;
}

static int kind_of_id(const struct xp_mig_table *t, unsigned id)
{
	for (int k = 0; t && k < XP_MIG_NKINDS; k++)
		if (t->prof[k].id == id)
			return k;
	return -1;
}

static void put_ci(struct fci *c, uint32_t id, uint32_t serial, unsigned prof, unsigned start,
		   unsigned slot)
{
	c->used = 1;
	c->id = id;
	c->serial = serial;
	c->prof = (uint8_t)prof;
	c->start = (uint8_t)start;
	c->slices = (uint8_t)ci_slices[prof];
	c->slot = (uint8_t)slot;
}

/* A fresh state from the environment; presets: two 3g instances per MIG GPU. */
static void st_init(struct fstate *s, int presets)
{
	memset(s, 0, sizeof(*s));
	s->magic = ST_MAGIC;
	for (unsigned i = 0; i < MAXG; i++) {
		struct fgpu *g = &s->g[i];
		g->cur = g->pend = fk_lists("FAKE_NVML_MIG", i) ? NVML_DEVICE_MIG_ENABLE : 0;
		if (!presets || !g->cur)
			continue;
		for (unsigned k = 0; k < 2; k++) {
			struct fgi *x = &g->gi[k];
			x->used = 1;
			x->id = k + 1;
			x->kind = XP_MIG_3G;
			x->start = (uint8_t)(4 * k);
			x->size = 4;
			put_ci(&x->ci[0], 0, 0, 2, 0, 2 * k);
		}
	}
}

/* The state, locked when it is a file; NULL when the file cannot be used. */
static struct fstate *st_get(void)
{
	const char *path = fk_str("FAKE_NVML_STATE", NULL);
	if (!path)
		return &mem_state;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	flock(fd, LOCK_EX);
	if (pread(fd, &file_state, sizeof(file_state), 0) != (ssize_t)sizeof(file_state) ||
	    file_state.magic != ST_MAGIC) {
		st_init(&file_state, 0);
		if (pwrite(fd, &file_state, sizeof(file_state), 0) != (ssize_t)sizeof(file_state)) {
			close(fd);
			return NULL;
		}
	}
	state_fd = fd;
	return &file_state;
}

static void st_put(struct fstate *s, int dirty)
{
	if (s != &file_state || state_fd < 0)
		return;
	if (dirty && pwrite(state_fd, s, sizeof(*s), 0) != (ssize_t)sizeof(*s))
		fprintf(stderr, "fake_nvml: cannot write %s\n", fk_str("FAKE_NVML_STATE", ""));
	close(state_fd); /* drops the lock */
	state_fd = -1;
}

void fk_mig_init(void)
{
	st_init(&mem_state, 1);
	st_put(st_get(), 0); /* creates the file on first use */
}

int fk_mig_mode(unsigned gpu, unsigned *cur, unsigned *pend)
{
	struct fstate *s = st_get();
	if (!s || gpu >= MAXG)
		return -1;
	*cur = s->g[gpu].cur;
	*pend = s->g[gpu].pend;
	st_put(s, 0);
	return 0;
}

static void uuid_of(unsigned gpu, const struct fci *c, char *out, size_t len)
{
	snprintf(out, len, "MIG-%08x-fake-4000-9000-%06u%06u", c->serial, gpu, c->slot);
}

/* the compute instance behind MIG device slot of gpu, with its GPU instance */
static struct fci *ci_at_slot(struct fstate *s, unsigned gpu, unsigned slot, struct fgi **gi)
{
	for (unsigned i = 0; i < MAXGI; i++)
		for (unsigned j = 0; s->g[gpu].gi[i].used && j < MAXCI; j++)
			if (s->g[gpu].gi[i].ci[j].used && s->g[gpu].gi[i].ci[j].slot == slot) {
				*gi = &s->g[gpu].gi[i];
				return &s->g[gpu].gi[i].ci[j];
			}
	return NULL;
}

/* Name, UUID and memory of MIG device d (any may be NULL). */
nvmlReturn_t fk_mig_dev(const struct nvmlDevice_st *d, char *name, size_t nlen, char *uuid,
			size_t ulen, unsigned long long *mib)
{
	const struct xp_mig_table *t = table();
	struct fstate *s = st_get();
	struct fgi *gi = NULL;
	struct fci *c = s && t ? ci_at_slot(s, d->parent, (unsigned)d->mig, &gi) : NULL;
	if (c) {
		const struct xp_mig_profile *p = &t->prof[gi->kind];
		if (name && c->slices == p->compute)
			snprintf(name, nlen, "%s MIG %s",
				 fk_str("FAKE_NVML_NAME", "NVIDIA A100-SXM4-80GB"), p->name);
		else if (name)
			snprintf(name, nlen, "%s MIG %uc.%s",
				 fk_str("FAKE_NVML_NAME", "NVIDIA A100-SXM4-80GB"), c->slices,
				 p->name);
		if (uuid)
			uuid_of(d->parent, c, uuid, ulen);
		if (mib)
			*mib = p->mem_mib;
	}
	st_put(s, 0);
	return c ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

static int ci_busy(unsigned gpu, const struct fci *c)
{
	char u[96];
	uuid_of(gpu, c, u, sizeof(u));
	return fk_has("FAKE_NVML_MIG_BUSY", u);
}

static int gpu_busy(const struct fstate *s, unsigned gpu)
{
	if (fk_lists("FAKE_NVML_BUSY", gpu))
		return 1;
	for (unsigned i = 0; i < MAXGI; i++)
		for (unsigned j = 0; s->g[gpu].gi[i].used && j < MAXCI; j++)
			if (s->g[gpu].gi[i].ci[j].used && ci_busy(gpu, &s->g[gpu].gi[i].ci[j]))
				return 1;
	return 0;
}

/* a GPU (not a MIG device) handle, checked like CHECK does */
#define CHECK_GPU(d, fn)                                                                           \
	do {                                                                                       \
		CHECK(d, fn);                                                                      \
		if (d->mig >= 0)                                                                   \
			return NVML_ERROR_INVALID_ARGUMENT;                                        \
	} while (0)

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned *cur, unsigned *pend)
{
	CHECK(d, "nvmlDeviceGetMigMode");
	if (d->mig >= 0 || !table())
		return NVML_ERROR_NOT_SUPPORTED;
	if (!cur || !pend)
		return NVML_ERROR_INVALID_ARGUMENT;
	return fk_mig_mode(d->idx, cur, pend) == 0 ? NVML_SUCCESS : NVML_ERROR_UNKNOWN;
}

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t d, unsigned mode, nvmlReturn_t *activation)
{
	CHECK_GPU(d, "nvmlDeviceSetMigMode");
	if (!table())
		return NVML_ERROR_NOT_SUPPORTED;
	if (mode > NVML_DEVICE_MIG_ENABLE || !activation)
		return NVML_ERROR_INVALID_ARGUMENT;
	struct fstate *s = st_get();
	if (!s)
		return NVML_ERROR_UNKNOWN;
	struct fgpu *g = &s->g[d->idx];
	nvmlReturn_t r = NVML_SUCCESS;
	for (unsigned i = 0; i < MAXGI; i++)
		if (g->gi[i].used)
			r = NVML_ERROR_IN_USE; /* instances left: destroy them first */
	if (gpu_busy(s, d->idx))
		r = NVML_ERROR_IN_USE;
	if (r == NVML_SUCCESS) {
		g->pend = (uint8_t)mode;
		if (!fk_lists("FAKE_NVML_MIG_DEFER", d->idx))
			g->cur = (uint8_t)mode;
		*activation = g->cur == mode ? NVML_SUCCESS : NVML_ERROR_RESET_REQUIRED;
	}
	st_put(s, r == NVML_SUCCESS);
	return r;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned *n)
{
	CHECK_GPU(d, "nvmlDeviceGetMaxMigDeviceCount");
	*n = MIGSLOTS;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned k, nvmlDevice_t *m)
{
	unsigned cur = 0, pend = 0;
	CHECK_GPU(d, "nvmlDeviceGetMigDeviceHandleByIndex");
	if (k >= MIGSLOTS || !m)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (fk_mig_mode(d->idx, &cur, &pend) < 0 || cur != NVML_DEVICE_MIG_ENABLE)
		return NVML_ERROR_NOT_SUPPORTED;
	struct fstate *s = st_get();
	struct fgi *gi;
	int found = s && ci_at_slot(s, d->idx, k, &gi);
	st_put(s, 0);
	if (!found)
		return NVML_ERROR_NOT_FOUND;
	*m = &fk_migs[d->idx][k];
	return NVML_SUCCESS;
}

/* GPU instance id (which = 0) or compute instance id (1) of MIG device d */
static nvmlReturn_t mig_ids(nvmlDevice_t d, unsigned which, unsigned *id)
{
	if (d->mig < 0 || !id)
		return NVML_ERROR_INVALID_ARGUMENT;
	struct fstate *s = st_get();
	struct fgi *gi = NULL;
	struct fci *c = s ? ci_at_slot(s, d->parent, (unsigned)d->mig, &gi) : NULL;
	if (c)
		*id = which ? c->id : gi->id;
	st_put(s, 0);
	return c ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned *id)
{
	CHECK(d, "nvmlDeviceGetGpuInstanceId");
	return mig_ids(d, 0, id);
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned *id)
{
	CHECK(d, "nvmlDeviceGetComputeInstanceId");
	return mig_ids(d, 1, id);
}

static void fill_info(const struct xp_mig_profile *p, nvmlGpuInstanceProfileInfo_t *o)
{
	memset(o, 0, sizeof(*o));
	o->id = p->id;
	o->sliceCount = p->compute;
	o->instanceCount = p->max_count;
	o->multiprocessorCount = p->sms;
	o->copyEngineCount = p->compute;
	o->memorySizeMB = p->mem_mib;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t d, unsigned idx,
						 nvmlGpuInstanceProfileInfo_t *info)
{
	CHECK_GPU(d, "nvmlDeviceGetGpuInstanceProfileInfo");
	const struct xp_mig_table *t = table();
	int k = kind_of_index(idx);
	if (!info || idx >= NVML_GPU_INSTANCE_PROFILE_COUNT_MAX)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!t || k < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	fill_info(&t->prof[k], info);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t d, unsigned idx,
						  nvmlGpuInstanceProfileInfo_v2_t *info)
{
	nvmlGpuInstanceProfileInfo_t v1;
	CHECK_GPU(d, "nvmlDeviceGetGpuInstanceProfileInfoV");
	if (!info)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (info->version != nvmlGpuInstanceProfileInfo_v2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	nvmlReturn_t r = nvmlDeviceGetGpuInstanceProfileInfo(d, idx, &v1);
	if (r != NVML_SUCCESS)
		return r;
	info->id = v1.id;
	info->isP2pSupported = v1.isP2pSupported;
	info->sliceCount = v1.sliceCount;
	info->instanceCount = v1.instanceCount;
	info->multiprocessorCount = v1.multiprocessorCount;
	info->copyEngineCount = v1.copyEngineCount;
	info->decoderCount = info->encoderCount = info->jpegCount = info->ofaCount = 0;
	info->memorySizeMB = v1.memorySizeMB;
	snprintf(info->name, sizeof(info->name), "MIG %s", table()->prof[kind_of_index(idx)].name);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t d, unsigned id,
							   nvmlGpuInstancePlacement_t *out,
							   unsigned *n)
{
	CHECK_GPU(d, "nvmlDeviceGetGpuInstancePossiblePlacements_v2");
	const struct xp_mig_table *t = table();
	int k = kind_of_id(t, id);
	if (!t)
		return NVML_ERROR_NOT_SUPPORTED;
	if (k < 0 || !n)
		return NVML_ERROR_INVALID_ARGUMENT;
	const struct xp_mig_profile *p = &t->prof[k];
	for (unsigned i = 0; out && i < p->nplace; i++) {
		out[i].start = p->place[i].start;
		out[i].size = p->place[i].size;
	}
	*n = p->nplace;
	return NVML_SUCCESS;
}

/* Can g take kind k at {start, size}? */
static nvmlReturn_t fits(const struct fgpu *g, const struct xp_mig_profile *p, int k,
			 unsigned start, unsigned size)
{
	unsigned allowed = 0, have = 0;
	for (unsigned i = 0; i < p->nplace; i++)
		allowed |= p->place[i].start == start && p->place[i].size == size;
	if (!allowed)
		return NVML_ERROR_INSUFFICIENT_RESOURCES;
	for (unsigned i = 0; i < MAXGI; i++) {
		const struct fgi *x = &g->gi[i];
		if (!x->used)
			continue;
		have += x->kind == k;
		if (x->start < start + size && start < (unsigned)x->start + x->size)
			return NVML_ERROR_INSUFFICIENT_RESOURCES; /* a memory slice is taken */
	}
	return have < p->max_count ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_RESOURCES;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t d, unsigned id, unsigned *n)
{
	CHECK_GPU(d, "nvmlDeviceGetGpuInstanceRemainingCapacity");
	const struct xp_mig_table *t = table();
	int k = kind_of_id(t, id);
	if (k < 0 || !n)
		return t ? NVML_ERROR_INVALID_ARGUMENT : NVML_ERROR_NOT_SUPPORTED;
	struct fstate *s = st_get();
	if (!s)
		return NVML_ERROR_UNKNOWN;
	struct fgpu g = s->g[d->idx]; /* a copy, filled greedily by start */
	st_put(s, 0);
	if (g.cur != NVML_DEVICE_MIG_ENABLE)
		return NVML_ERROR_NOT_SUPPORTED;
	const struct xp_mig_profile *p = &t->prof[k];
	*n = 0;
	for (unsigned i = 0; i < p->nplace; i++) {
		unsigned slot = 0;
		while (slot < MAXGI && g.gi[slot].used)
			slot++;
		if (slot == MAXGI || fits(&g, p, k, p->place[i].start, p->place[i].size))
			continue;
		g.gi[slot].used = 1;
		g.gi[slot].kind = (uint8_t)k;
		g.gi[slot].start = p->place[i].start;
		g.gi[slot].size = p->place[i].size;
		(*n)++;
	}
	return NVML_SUCCESS;
}

/* Create a GPU instance of profile id on gpu at where (NULL: the first start that fits). */
static nvmlReturn_t gi_create(unsigned gpu, unsigned id, const nvmlGpuInstancePlacement_t *where,
			      nvmlGpuInstance_t *out)
{
	const struct xp_mig_table *t = table();
	int k = kind_of_id(t, id);
	if (!t)
		return NVML_ERROR_NOT_SUPPORTED;
	if (k < 0 || !out)
		return NVML_ERROR_INVALID_ARGUMENT;
	const struct xp_mig_profile *p = &t->prof[k];
	struct fstate *s = st_get();
	if (!s)
		return NVML_ERROR_UNKNOWN;
	struct fgpu *g = &s->g[gpu];
	nvmlReturn_t r = NVML_ERROR_INSUFFICIENT_RESOURCES;
	unsigned start = 0, size = 0, slot = 0, gid = 1;
	for (unsigned i = 0; i < p->nplace && r != NVML_SUCCESS; i++) {
		start = where ? where->start : p->place[i].start;
		size = where ? where->size : p->place[i].size;
		r = fits(g, p, k, start, size);
	}
	while (slot < MAXGI && g->gi[slot].used)
		slot++;
	for (unsigned i = 0; i < MAXGI; i++) /* the lowest id not in use */
		for (unsigned j = 0; j < MAXGI; j++)
			gid += g->gi[j].used && g->gi[j].id == gid;
	if (g->cur != NVML_DEVICE_MIG_ENABLE)
		r = NVML_ERROR_NOT_SUPPORTED;
	else if (slot == MAXGI)
		r = NVML_ERROR_INSUFFICIENT_RESOURCES;
	if (r == NVML_SUCCESS) {
		struct fgi *x = &g->gi[slot];
		memset(x, 0, sizeof(*x));
		x->used = 1;
		x->id = gid;
		x->kind = (uint8_t)k;
		x->start = (uint8_t)start;
		x->size = (uint8_t)size;
		gih[gpu][slot].gpu = gpu;
		gih[gpu][slot].slot = slot;
		*out = &gih[gpu][slot];
	}
	st_put(s, r == NVML_SUCCESS);
	return r;
}

nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t d, unsigned id, nvmlGpuInstance_t *gi)
{
	CHECK_GPU(d, "nvmlDeviceCreateGpuInstance");
	return gi_create(d->idx, id, NULL, gi);
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t d, unsigned id,
						      const nvmlGpuInstancePlacement_t *where,
						      nvmlGpuInstance_t *gi)
{
	CHECK_GPU(d, "nvmlDeviceCreateGpuInstanceWithPlacement");
	if (!where)
		return NVML_ERROR_INVALID_ARGUMENT;
	return gi_create(d->idx, id, where, gi);
}

/* GPU instances of gpu matching (profile id, or GI id), in slot order, into out (room: cap). */
static nvmlReturn_t gi_list(unsigned gpu, int by_id, unsigned key, nvmlGpuInstance_t *out,
			    unsigned cap, unsigned *n)
{
	const struct xp_mig_table *t = table();
	struct fstate *s = st_get();
	if (!t || !s) {
		st_put(s, 0);
		return t ? NVML_ERROR_UNKNOWN : NVML_ERROR_NOT_SUPPORTED;
	}
	nvmlReturn_t r =
		s->g[gpu].cur == NVML_DEVICE_MIG_ENABLE ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
	*n = 0;
	for (unsigned i = 0; r == NVML_SUCCESS && i < MAXGI; i++) {
		const struct fgi *x = &s->g[gpu].gi[i];
		if (!x->used || (by_id ? x->id : t->prof[x->kind].id) != key)
			continue;
		if (*n >= cap) {
			r = NVML_ERROR_INSUFFICIENT_SIZE;
			break;
		}
		gih[gpu][i].gpu = gpu;
		gih[gpu][i].slot = i;
		out[(*n)++] = &gih[gpu][i];
	}
	st_put(s, 0);
	return r;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t d, unsigned id, nvmlGpuInstance_t *gis,
				       unsigned *n)
{
	CHECK_GPU(d, "nvmlDeviceGetGpuInstances");
	const struct xp_mig_table *t = table();
	int k = kind_of_id(t, id);
	if (!gis || !n || (t && k < 0))
		return NVML_ERROR_INVALID_ARGUMENT;
	return gi_list(d->idx, 0, id, gis, t ? t->prof[k].max_count : 0, n);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t d, unsigned id, nvmlGpuInstance_t *gi)
{
	unsigned n = 0;
	CHECK_GPU(d, "nvmlDeviceGetGpuInstanceById");
	if (!gi)
		return NVML_ERROR_INVALID_ARGUMENT;
	nvmlReturn_t r = gi_list(d->idx, 1, id, gi, 1, &n);
	return r != NVML_SUCCESS ? r : n ? NVML_SUCCESS : NVML_ERROR_NOT_FOUND;
}

/* The GPU instance behind handle h in s, or NULL (stale, foreign). */
static struct fgi *gi_of(struct fstate *s, nvmlGpuInstance_t h)
{
	if (!fk_inited || !s || !in_table(h, gih, sizeof(gih)) || h->gpu >= fk_count)
		return NULL;
	struct fgi *x = &s->g[h->gpu].gi[h->slot];
	return x->used ? x : NULL;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t h, nvmlGpuInstanceInfo_t *info)
{
	if (failing("nvmlGpuInstanceGetInfo"))
		return NVML_ERROR_UNKNOWN;
	struct fstate *s = st_get();
	struct fgi *x = gi_of(s, h);
	if (x && info) {
		info->device = &fk_gpus[h->gpu];
		info->id = x->id;
		info->profileId = table()->prof[x->kind].id;
		info->placement.start = x->start;
		info->placement.size = x->size;
	}
	st_put(s, 0);
	return x && info ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t h)
{
	if (failing("nvmlGpuInstanceDestroy"))
		return NVML_ERROR_UNKNOWN;
	struct fstate *s = st_get();
	struct fgi *x = gi_of(s, h);
	nvmlReturn_t r = x ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned j = 0; x && j < MAXCI; j++)
		if (x->ci[j].used)
			r = NVML_ERROR_IN_USE; /* compute instances (and their processes) left */
	if (r == NVML_SUCCESS)
		memset(x, 0, sizeof(*x));
	st_put(s, r == NVML_SUCCESS);
	return r;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t h, unsigned idx,
							  unsigned eng,
							  nvmlComputeInstanceProfileInfo_t *info)
{
	if (failing("nvmlGpuInstanceGetComputeInstanceProfileInfo"))
		return NVML_ERROR_UNKNOWN;
	struct fstate *s = st_get();
	struct fgi *x = gi_of(s, h);
	nvmlReturn_t r = !x || !info || idx >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
					 eng != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
				 ? NVML_ERROR_INVALID_ARGUMENT
				 : NVML_SUCCESS;
	const struct xp_mig_profile *p = x ? &table()->prof[x->kind] : NULL;
	if (r == NVML_SUCCESS && (idx >= NCIPROF || ci_slices[idx] > p->compute))
		r = NVML_ERROR_NOT_SUPPORTED;
	if (r == NVML_SUCCESS) {
		memset(info, 0, sizeof(*info));
		info->id = idx;
		info->sliceCount = ci_slices[idx];
		info->instanceCount = p->compute / ci_slices[idx];
		info->multiprocessorCount = p->sms * ci_slices[idx] / p->compute;
	}
	st_put(s, 0);
	return r;
}

/* a free run of slices compute slices in x (of compute), or -1 */
static int ci_start(const struct fgi *x, unsigned compute, unsigned slices)
{
	for (unsigned st = 0; st + slices <= compute; st++) {
		int ok = 1;
		for (unsigned j = 0; j < MAXCI; j++)
			if (x->ci[j].used && x->ci[j].start < st + slices &&
			    st < (unsigned)x->ci[j].start + x->ci[j].slices)
				ok = 0;
		if (ok)
			return (int)st;
	}
	return -1;
}

/* the lowest MIG device slot of gpu that no compute instance holds, or -1 */
static int free_slot(struct fstate *s, unsigned gpu)
{
	struct fgi *gi;
	for (unsigned k = 0; k < MIGSLOTS; k++)
		if (!ci_at_slot(s, gpu, k, &gi))
			return (int)k;
	return -1;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t h, unsigned id,
						  nvmlComputeInstance_t *out)
{
	if (failing("nvmlGpuInstanceCreateComputeInstance"))
		return NVML_ERROR_UNKNOWN;
	struct fstate *s = st_get();
	struct fgi *x = gi_of(s, h);
	if (!x || !out || id >= NCIPROF) {
		st_put(s, 0);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	const struct xp_mig_profile *p = &table()->prof[x->kind];
	int start = ci_start(x, p->compute, ci_slices[id]), slot = free_slot(s, h->gpu);
	unsigned j = 0, cid = 0;
	while (j < MAXCI && x->ci[j].used)
		j++;
	for (unsigned a = 0; a < MAXCI; a++) /* the lowest id not in use */
		for (unsigned b = 0; b < MAXCI; b++)
			cid += x->ci[b].used && x->ci[b].id == cid;
	nvmlReturn_t r = ci_slices[id] > p->compute	       ? NVML_ERROR_NOT_SUPPORTED
			 : start < 0 || slot < 0 || j == MAXCI ? NVML_ERROR_INSUFFICIENT_RESOURCES
							       : NVML_SUCCESS;
	if (r == NVML_SUCCESS) {
		put_ci(&x->ci[j], cid, ++s->serial, id, (unsigned)start, (unsigned)slot);
		cih[h->gpu][h->slot][j] = (struct nvmlComputeInstance_st){ h->gpu, h->slot, j };
		*out = &cih[h->gpu][h->slot][j];
	}
	st_put(s, r == NVML_SUCCESS);
	return r;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t h, unsigned id,
						nvmlComputeInstance_t *out, unsigned *n)
{
	if (failing("nvmlGpuInstanceGetComputeInstances"))
		return NVML_ERROR_UNKNOWN;
	struct fstate *s = st_get();
	struct fgi *x = gi_of(s, h);
	nvmlReturn_t r = x && out && n ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
	if (r == NVML_SUCCESS)
		*n = 0;
	for (unsigned j = 0; r == NVML_SUCCESS && j < MAXCI; j++)
		if (x->ci[j].used && x->ci[j].prof == id) {
			cih[h->gpu][h->slot][j] =
				(struct nvmlComputeInstance_st){ h->gpu, h->slot, j };
			out[(*n)++] = &cih[h->gpu][h->slot][j];
		}
	st_put(s, 0);
	return r;
}

static struct fci *ci_of(struct fstate *s, nvmlComputeInstance_t h, struct fgi **gi)
{
	if (!fk_inited || !s || !in_table(h, cih, sizeof(cih)) || h->gpu >= fk_count)
		return NULL;
	*gi = &s->g[h->gpu].gi[h->gi];
	struct fci *c = &(*gi)->ci[h->slot];
	return (*gi)->used && c->used ? c : NULL;
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t h, nvmlComputeInstanceInfo_t *info)
{
	if (failing("nvmlComputeInstanceGetInfo_v2"))
		return NVML_ERROR_UNKNOWN;
	struct fstate *s = st_get();
	struct fgi *gi = NULL;
	struct fci *c = ci_of(s, h, &gi);
	if (c && info) {
		info->device = &fk_gpus[h->gpu];
		info->gpuInstance = &gih[h->gpu][h->gi];
		info->id = c->id;
		info->profileId = c->prof;
		info->placement.start = c->start;
		info->placement.size = c->slices;
	}
	st_put(s, 0);
	return c && info ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t h)
{
	if (failing("nvmlComputeInstanceDestroy"))
		return NVML_ERROR_UNKNOWN;
	struct fstate *s = st_get();
	struct fgi *gi = NULL;
	struct fci *c = ci_of(s, h, &gi);
	nvmlReturn_t r = !c		      ? NVML_ERROR_INVALID_ARGUMENT
			 : ci_busy(h->gpu, c) ? NVML_ERROR_IN_USE
					      : NVML_SUCCESS;
	if (r == NVML_SUCCESS)
		memset(c, 0, sizeof(*c));
	st_put(s, r == NVML_SUCCESS);
	return r;
}
