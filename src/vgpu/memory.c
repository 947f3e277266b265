/*
 * memory: the allocation hooks and the ones that report memory.
 *
 * Every allocation reserves its size in the account before the driver is
 * asked (account.c: under the job's mutex, against the cap) and gives it
 * back if the driver fails, so the job is refused with
 * CUDA_ERROR_OUT_OF_MEMORY at the cap and never holds more, whatever its
 * processes do at once. Frees give back what the allocation took; a table
 * of this process's live allocations (address or cuMemCreate handle ->
 * size, device) knows how much. cuMemAllocPitch reserves width rounded up
 * to 512 bytes per row (the largest pitch alignment the driver uses), then
 * settles on the pitch it chose. cuMemFreeAsync gives the bytes back when
 * it is called, not when the stream reaches it: for a moment the job may
 * hold one freed block more than the account says (docs/design/vgpu.md).
 *
 * A context is charged XPOOL_VGPU_CONTEXT_MIB once per process and device
 * (cuDevicePrimaryCtxRetain, cuCtxCreate_v2), until the process ends.
 *
 * Reporting: cuMemGetInfo_v2 answers total = the cap, free = the cap less
 * what the job holds (never more than the device has free);
 * cuDeviceTotalMem_v2 the cap; nvmlDeviceGetMemoryInfo the same, when the
 * process sees one limited device (NVML numbers devices its own way).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "../hal/nvml_abi.h"
#include "vgpu_int.h"

struct alloc {
	uint64_t key; /* address or handle; 0 free, 1 tombstone */
	uint64_t bytes;
	int dev;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct alloc *tab;
static size_t cap, used; /* slots, slots not free */

static size_t slot_of(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

static void put(uint64_t key, uint64_t bytes, int dev);

static void grow(void)
{
	struct alloc *old = tab;
	size_t n = cap;
	cap = cap ? cap * 2 : 1024;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		abort();
	used = 0;
	for (size_t i = 0; i < n; i++)
		if (old[i].key > 1)
			put(old[i].key, old[i].bytes, old[i].dev);
	free(old);
}

static void put(uint64_t key, uint64_t bytes, int dev)
{
	if ((used + 1) * 4 >= cap * 3)
		grow();
	size_t i = slot_of(key);
	while (tab[i].key > 1)
		i = (i + 1) & (cap - 1);
	if (tab[i].key == 0)
		used++;
	tab[i] = (struct alloc){ key, bytes, dev };
}

static void track(uint64_t key, uint64_t bytes, int dev)
{
	pthread_mutex_lock(&mu);
	put(key, bytes, dev);
	pthread_mutex_unlock(&mu);
}

/* take key out of the table: 1 and its size, or 0 when it is not ours */
static int untrack(uint64_t key, struct alloc *out)
{
	int found = 0;
	pthread_mutex_lock(&mu);
	for (size_t i = cap ? slot_of(key) : 0, k = 0; cap && k < cap && tab[i].key; k++) {
		if (tab[i].key == key) {
			*out = tab[i];
			tab[i].key = 1;
			found = 1;
			break;
		}
		i = (i + 1) & (cap - 1);
	}
	pthread_mutex_unlock(&mu);
	return found;
}

void xv_mem_forget(void)
{
	pthread_mutex_init(&mu, NULL);
	free(tab);
	tab = NULL;
	cap = used = 0;
}

int xv_cur_dev(void)
{
	CUdevice d = 0;
	if (xv.real.cuCtxGetDevice && xv.real.cuCtxGetDevice(&d) != CUDA_SUCCESS)
		d = 0;
	return d >= 0 && (unsigned)d < xv.acct->ndev ? d : 0;
}

static int limited(int dev)
{
	return xv.acct->dev[dev].limit_bytes != 0;
}

/* reserve, allocate, track: the shape of every allocation hook */
#define ALLOC(bytes, call, k_)                                                                    \
	do {                                                                                       \
		int dev_ = xv_cur_dev();                                                           \
		if (!limited(dev_))                                                                \
			return call;                                                               \
		if (xv_reserve(dev_, (bytes)) < 0)                                                 \
			return CUDA_ERROR_OUT_OF_MEMORY;                                           \
		CUresult rc_ = call;                                                               \
		if (rc_ != CUDA_SUCCESS)                                                           \
			xv_alloc_failed(dev_, (bytes), rc_);                                       \
		else                                                                               \
			track((k_), (bytes), dev_);                                               \
		return rc_;                                                                        \
	} while (0)

static CUresult h_cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	ALLOC(n, xv.real.cuMemAlloc_v2(p, n), *p);
}

static CUresult h_cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int fl)
{
	ALLOC(n, xv.real.cuMemAllocManaged(p, n, fl), *p);
}

static CUresult h_cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
	ALLOC(n, xv.real.cuMemAllocAsync(p, n, s), *p);
}

static CUresult h_cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s)
{
	ALLOC(n, xv.real.cuMemAllocAsync_ptsz(p, n, s), *p);
}

static CUresult h_cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s)
{
	ALLOC(n, xv.real.cuMemAllocFromPoolAsync(p, n, pool, s), *p);
}

static CUresult h_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool,
					       CUstream s)
{
	ALLOC(n, xv.real.cuMemAllocFromPoolAsync_ptsz(p, n, pool, s), *p);
}

static CUresult h_cuMemCreate(CUmemGenericAllocationHandle *h, size_t n,
			      const CUmemAllocationProp *prop, unsigned long long fl)
{
	ALLOC(n, xv.real.cuMemCreate(h, n, prop, fl), *h);
}

static CUresult h_cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h,
				     unsigned int elem)
{
	int dev = xv_cur_dev();
	if (!limited(dev))
		return xv.real.cuMemAllocPitch_v2(p, pitch, w, h, elem);
	uint64_t want = ((w + 511) & ~(uint64_t)511) * h;
	if (h && want / h < w)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (xv_reserve(dev, want) < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	CUresult rc = xv.real.cuMemAllocPitch_v2(p, pitch, w, h, elem);
	if (rc != CUDA_SUCCESS) {
		xv_alloc_failed(dev, want, rc);
		return rc;
	}
	uint64_t got = (uint64_t)*pitch * h;
	if (got < want)
		xv_unreserve(dev, want - got);
	else if (got > want && xv_reserve(dev, got - want) < 0) {
		xv.real.cuMemFree_v2(*p);
		xv_unreserve(dev, want);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	track(*p, got, dev);
	return rc;
}

/* free, then give back: the shape of every free hook */
#define FREE(k_, call)                                                                            \
	do {                                                                                       \
		struct alloc a_;                                                                   \
		int mine_ = untrack((k_), &a_);                                                   \
		CUresult rc_ = call;                                                               \
		if (mine_ && rc_ == CUDA_SUCCESS)                                                  \
			xv_unreserve(a_.dev, a_.bytes);                                            \
		else if (mine_)                                                                    \
			track(a_.key, a_.bytes, a_.dev);                                           \
		return rc_;                                                                        \
	} while (0)

static CUresult h_cuMemFree_v2(CUdeviceptr p)
{
	FREE(p, xv.real.cuMemFree_v2(p));
}

static CUresult h_cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	FREE(p, xv.real.cuMemFreeAsync(p, s));
}

static CUresult h_cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
	FREE(p, xv.real.cuMemFreeAsync_ptsz(p, s));
}

static CUresult h_cuMemRelease(CUmemGenericAllocationHandle h)
{
	FREE(h, xv.real.cuMemRelease(h));
}

static CUresult h_cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
	CUresult rc = xv.real.cuMemGetInfo_v2(free_b, total);
	int dev = xv_cur_dev();
	if (rc != CUDA_SUCCESS || !limited(dev))
		return rc;
	uint64_t lim = xv.acct->dev[dev].limit_bytes, u = xv_used(dev);
	uint64_t left = u < lim ? lim - u : 0;
	if (total && *total > lim)
		*total = (size_t)lim;
	if (free_b && *free_b > left)
		*free_b = (size_t)left;
	return rc;
}

static CUresult h_cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult rc = xv.real.cuDeviceTotalMem_v2(bytes, dev);
	if (rc == CUDA_SUCCESS && bytes && dev >= 0 && (unsigned)dev < xv.acct->ndev &&
	    limited(dev) && *bytes > xv.acct->dev[dev].limit_bytes)
		*bytes = (size_t)xv.acct->dev[dev].limit_bytes;
	return rc;
}

/* A context holds device memory no allocation call shows: a constant per
 * process and device, charged at its first context there and held until
 * the process ends (its slot goes). 1 when charged now. */
static int charge_context(CUdevice dev, CUresult *rc)
{
	*rc = CUDA_SUCCESS;
	if (!xv.ctx_bytes || dev < 0 || (unsigned)dev >= xv.acct->ndev || !limited(dev) ||
	    __atomic_exchange_n(&xv.ctx_charged[dev], 1, __ATOMIC_ACQ_REL))
		return 0;
	if (xv_reserve(dev, xv.ctx_bytes) == 0)
		return 1;
	__atomic_store_n(&xv.ctx_charged[dev], 0, __ATOMIC_RELEASE);
	*rc = CUDA_ERROR_OUT_OF_MEMORY;
	return 0;
}

static void uncharge_context(CUdevice dev)
{
	xv_unreserve(dev, xv.ctx_bytes);
	__atomic_store_n(&xv.ctx_charged[dev], 0, __ATOMIC_RELEASE);
}

static CUresult h_cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	CUresult rc;
	int now = charge_context(dev, &rc);
	if (rc != CUDA_SUCCESS)
		return rc;
	rc = xv.real.cuDevicePrimaryCtxRetain(ctx, dev);
	if (rc != CUDA_SUCCESS && now)
		uncharge_context(dev);
	return rc;
}

static CUresult h_cuCtxCreate_v2(CUcontext *ctx, unsigned int flags, CUdevice dev)
{
	CUresult rc;
	int now = charge_context(dev, &rc);
	if (rc != CUDA_SUCCESS)
		return rc;
	rc = xv.real.cuCtxCreate_v2(ctx, flags, dev);
	if (rc != CUDA_SUCCESS && now)
		uncharge_context(dev);
	return rc;
}

static nvmlReturn_t h_nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m)
{
	nvmlReturn_t (*real)(nvmlDevice_t, nvmlMemory_t *) =
		(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))xv.real.nvmlDeviceGetMemoryInfo;
	nvmlReturn_t rc = real(dev, m);
	int count = 1;
	if (xv.real.cuDeviceGetCount && xv.real.cuDeviceGetCount(&count) != CUDA_SUCCESS)
		count = 1;
	if (rc != NVML_SUCCESS || !m || count != 1 || !limited(0))
		return rc;
	uint64_t lim = xv.acct->dev[0].limit_bytes, u = xv_used(0);
	if (m->total > lim) {
		m->total = lim;
		m->used = u;
		m->free = u < lim ? lim - u : 0;
	}
	return rc;
}

void *xv_mem_hook(const char *name)
{
#define X(fn)                                                                                      \
	if (!strcmp(name, #fn))                                                                    \
		return xv.real.fn ? (void *)h_##fn : NULL;
	XV_MEM_HOOKS(X)
#undef X
	return NULL;
}
