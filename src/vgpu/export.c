/*
 * export: the hooked entry points under their driver names, for programs
 * linked against libcuda.so.1 (-lcuda) rather than reaching it through
 * dlsym or cuGetProcAddress: Triton's kernel launcher, TensorRT, plain C
 * programs. A preloaded library's definitions come first in symbol lookup,
 * so their calls arrive here.
 *
 * Each export resolves once (after the constructor) to the hook when the
 * replica's limits apply to it, else to the driver's own function, and
 * then costs one indirect call. Before the constructor has run (another
 * library's constructor calling the driver) it answers with the driver's
 * function and does not remember it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include "../hal/nvml_abi.h"
#include "vgpu_int.h"

/* the hook, else the driver's own definition (the next one after ours) */
static void *route(const char *name, int *final)
{
	void *h = NULL;
	*final = __atomic_load_n(&xv.ready, __ATOMIC_ACQUIRE);
	xv_bind_dlsym();
	if (!xv.real.dlsym)
		return NULL;
	if (*final && !strcmp(name, "nvmlDeviceGetMemoryInfo")) {
		if (xv.acct && xv.driver && xv.mem_limited) {
			xv.real.nvmlDeviceGetMemoryInfo = xv.real.dlsym(RTLD_NEXT, name);
			if (xv.real.nvmlDeviceGetMemoryInfo)
				h = xv_mem_hook(name);
		}
	} else if (*final) {
		h = xv_hook_for(name);
	}
	if (h)
		return h;
	if (xv.libcuda && strncmp(name, "cu", 2) == 0)
		return xv.real.dlsym(xv.libcuda, name);
	return xv.real.dlsym(RTLD_NEXT, name);
}

#define EXPORT(ret, name, params, args, fail)                                                      \
	XV_EXPORT ret name params                                                                  \
	{                                                                                          \
		typedef ret(*fn_t_) params;                                                        \
		static fn_t_ cached_;                                                              \
		fn_t_ to_ = __atomic_load_n(&cached_, __ATOMIC_ACQUIRE);                           \
		if (!to_) {                                                                        \
			int final_;                                                                \
			to_ = (fn_t_)route(#name, &final_);                                        \
			if (!to_)                                                                  \
				return fail;                                                       \
			if (final_)                                                                \
				__atomic_store_n(&cached_, to_, __ATOMIC_RELEASE);                 \
		}                                                                                  \
		return to_ args;                                                                   \
	}

#define LAUNCH_PARAMS                                                                              \
	(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,            \
	 unsigned bz, unsigned shm, CUstream s, void **pa, void **ex)
#define LAUNCH_ARGS (f, gx, gy, gz, bx, by, bz, shm, s, pa, ex)
#define COOP_PARAMS                                                                                \
	(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,            \
	 unsigned bz, unsigned shm, CUstream s, void **pa)
#define COOP_ARGS (f, gx, gy, gz, bx, by, bz, shm, s, pa)
#define E CUDA_ERROR_NOT_INITIALIZED

EXPORT(CUresult, cuInit, (unsigned int fl), (fl), E)
EXPORT(CUresult, cuGetProcAddress, (const char *sym, void **p, int v, cuuint64_t fl),
       (sym, p, v, fl), E)
EXPORT(CUresult, cuGetProcAddress_v2,
       (const char *sym, void **p, int v, cuuint64_t fl, CUdriverProcAddressQueryResult *st),
       (sym, p, v, fl, st), E)
EXPORT(CUresult, cuMemAlloc_v2, (CUdeviceptr * p, size_t n), (p, n), E)
EXPORT(CUresult, cuMemAllocPitch_v2,
       (CUdeviceptr * p, size_t *pitch, size_t w, size_t h, unsigned int el), (p, pitch, w, h, el),
       E)
EXPORT(CUresult, cuMemAllocManaged, (CUdeviceptr * p, size_t n, unsigned int fl), (p, n, fl), E)
EXPORT(CUresult, cuMemAllocAsync, (CUdeviceptr * p, size_t n, CUstream s), (p, n, s), E)
EXPORT(CUresult, cuMemAllocAsync_ptsz, (CUdeviceptr * p, size_t n, CUstream s), (p, n, s), E)
EXPORT(CUresult, cuMemAllocFromPoolAsync, (CUdeviceptr * p, size_t n, CUmemoryPool m, CUstream s),
       (p, n, m, s), E)
EXPORT(CUresult, cuMemAllocFromPoolAsync_ptsz,
       (CUdeviceptr * p, size_t n, CUmemoryPool m, CUstream s), (p, n, m, s), E)
EXPORT(CUresult, cuMemFree_v2, (CUdeviceptr p), (p), E)
EXPORT(CUresult, cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s), E)
EXPORT(CUresult, cuMemFreeAsync_ptsz, (CUdeviceptr p, CUstream s), (p, s), E)
EXPORT(CUresult, cuMemCreate,
       (CUmemGenericAllocationHandle * h, size_t n, const CUmemAllocationProp *pr,
	unsigned long long fl),
       (h, n, pr, fl), E)
EXPORT(CUresult, cuMemRelease, (CUmemGenericAllocationHandle h), (h), E)
EXPORT(CUresult, cuMemGetInfo_v2, (size_t * fr, size_t *tot), (fr, tot), E)
EXPORT(CUresult, cuDeviceTotalMem_v2, (size_t * n, CUdevice d), (n, d), E)
EXPORT(CUresult, cuDevicePrimaryCtxRetain, (CUcontext * c, CUdevice d), (c, d), E)
EXPORT(CUresult, cuCtxCreate_v2, (CUcontext * c, unsigned int fl, CUdevice d), (c, fl, d), E)
EXPORT(CUresult, cuLaunchKernel, LAUNCH_PARAMS, LAUNCH_ARGS, E)
EXPORT(CUresult, cuLaunchKernel_ptsz, LAUNCH_PARAMS, LAUNCH_ARGS, E)
EXPORT(CUresult, cuLaunchCooperativeKernel, COOP_PARAMS, COOP_ARGS, E)
EXPORT(CUresult, cuLaunchCooperativeKernel_ptsz, COOP_PARAMS, COOP_ARGS, E)
EXPORT(CUresult, cuLaunchKernelEx, (const CUlaunchConfig *c, CUfunction f, void **pa, void **ex),
       (c, f, pa, ex), E)
EXPORT(CUresult, cuLaunchKernelEx_ptsz,
       (const CUlaunchConfig *c, CUfunction f, void **pa, void **ex), (c, f, pa, ex), E)
EXPORT(CUresult, cuGraphLaunch, (CUgraphExec g, CUstream s), (g, s), E)
EXPORT(CUresult, cuGraphLaunch_ptsz, (CUgraphExec g, CUstream s), (g, s), E)
EXPORT(CUresult, cuStreamBeginCapture_v2, (CUstream s, int mode), (s, mode), E)
EXPORT(CUresult, cuStreamBeginCapture_v2_ptsz, (CUstream s, int mode), (s, mode), E)
EXPORT(CUresult, cuStreamEndCapture, (CUstream s, CUgraph * g), (s, g), E)
EXPORT(CUresult, cuStreamEndCapture_ptsz, (CUstream s, CUgraph * g), (s, g), E)
EXPORT(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t d, nvmlMemory_t * m), (d, m),
       NVML_ERROR_UNINITIALIZED)
