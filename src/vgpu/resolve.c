/*
 * resolve: how the application reaches the driver, and where the hooks
 * are put in its way.
 *
 * The CUDA runtime (and PyTorch through it) dlopens libcuda.so.1, takes
 * cuGetProcAddress (or, before CUDA 11.3, every entry point) with dlsym,
 * and asks cuGetProcAddress for the rest by plain name, the CUDA version it
 * was built for and a stream flag. So the library defines dlsym, and
 * answers a hooked name with its hook; cuGetProcAddress(_v2) is hooked too
 * and maps (name, version, flags) to the driver's real name the way the
 * driver does (cuMemAlloc at 3020+ is cuMemAlloc_v2; with the per-thread
 * default stream, cuLaunchKernel is cuLaunchKernel_ptsz) before looking
 * the hook up. Without limits, every answer is the real function.
 *
 * dlsym(RTLD_NEXT, name) from another object must search the objects after
 * *that* object, not after this library: it is answered by walking the
 * link map from the caller's object.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "vgpu_int.h"

/* The names whose driver entry point changed; cuda.h's version map. */
static const struct {
	const char *name;
	int since;
	const char *as;
} vmap[] = {
	{ "cuMemAlloc", 3020, "cuMemAlloc_v2" },
	{ "cuMemAllocPitch", 3020, "cuMemAllocPitch_v2" },
	{ "cuMemFree", 3020, "cuMemFree_v2" },
	{ "cuMemGetInfo", 3020, "cuMemGetInfo_v2" },
	{ "cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2" },
	{ "cuCtxCreate", 3020, "cuCtxCreate_v2" },
	{ "cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2" },
	{ "cuGetProcAddress", 12000, "cuGetProcAddress_v2" },
};

static const char *const ptsz[] = {
#define X(name) #name,
	XP_CUDA_PTSZ(X)
#undef X
};

/* the driver's name for (symbol, version, flags) into out */
static void real_name(const char *sym, int version, cuuint64_t flags, char *out, size_t n)
{
	snprintf(out, n, "%s", sym);
	for (size_t i = 0; i < sizeof(vmap) / sizeof(vmap[0]); i++)
		if (!strcmp(sym, vmap[i].name) && version >= vmap[i].since)
			snprintf(out, n, "%s", vmap[i].as);
	if (!(flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
		return;
	for (size_t i = 0; i < sizeof(ptsz) / sizeof(ptsz[0]); i++)
		if (!strcmp(out, ptsz[i])) {
			size_t l = strlen(out);
			snprintf(out + l, n - l, "_ptsz");
			return;
		}
}

/* what the driver resolved for sym, replaced by our hook when we have one */
static CUresult swap_hook(CUresult rc, const char *sym, void **pfn, int version, cuuint64_t flags)
{
	char name[96];
	if (rc != CUDA_SUCCESS || !pfn || !*pfn)
		return rc;
	real_name(sym, version, flags, name, sizeof(name));
	void *h = xv_hook_for(name);
	if (h)
		*pfn = h;
	return rc;
}

static CUresult hook_cuGetProcAddress(const char *sym, void **pfn, int version, cuuint64_t flags)
{
	return swap_hook(xv.real.cuGetProcAddress(sym, pfn, version, flags), sym, pfn, version,
			 flags);
}

static CUresult hook_cuGetProcAddress_v2(const char *sym, void **pfn, int version, cuuint64_t flags,
					 CUdriverProcAddressQueryResult *status)
{
	return swap_hook(xv.real.cuGetProcAddress_v2(sym, pfn, version, flags, status), sym, pfn,
			 version, flags);
}

static CUresult hook_cuInit(unsigned int flags)
{
	CUresult rc = xv.real.cuInit(flags);
	if (rc != CUDA_SUCCESS)
		xv_log("cuInit: error %d (limits stay in force)", rc);
	return rc;
}

void *xv_hook_for(const char *name)
{
	if (!xv.acct || strncmp(name, "cu", 2) != 0)
		return NULL;
	if (!strcmp(name, "cuGetProcAddress"))
		return xv.real.cuGetProcAddress ? (void *)hook_cuGetProcAddress : NULL;
	if (!strcmp(name, "cuGetProcAddress_v2"))
		return xv.real.cuGetProcAddress_v2 ? (void *)hook_cuGetProcAddress_v2 : NULL;
	if (!strcmp(name, "cuInit"))
		return xv.real.cuInit ? (void *)hook_cuInit : NULL;
	void *h = xv.mem_limited ? xv_mem_hook(name) : NULL;
	if (!h && xv.compute_limited)
		h = xv_launch_hook(name);
	return h;
}

/* dlsym(RTLD_NEXT) on behalf of the object that holds caller */
static void *next_after(const void *caller, const char *name)
{
	Dl_info di;
	struct link_map *lm = NULL;
	if (!dladdr(caller, &di))
		return NULL;
	void *self = dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!self)
		self = dlopen(NULL, RTLD_LAZY); /* the main program */
	if (!self || dlinfo(self, RTLD_DI_LINKMAP, &lm) != 0 || !lm) {
		if (self)
			dlclose(self);
		return NULL;
	}
	void *sym = NULL;
	for (lm = lm->l_next; lm && !sym; lm = lm->l_next) {
		void *h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		sym = xv.real.dlsym(h, name);
		dlclose(h);
	}
	dlclose(self);
	return sym;
}

/* Not instrumented: a sanitizer's runtime calls dlsym while it starts,
 * before its shadow memory exists (see dlsym below). */
#define XV_EARLY __attribute__((no_sanitize("address", "undefined")))

XV_EARLY void xv_bind_dlsym(void)
{
	static const char *const vers[] = { "GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0",
					    NULL };
	for (const char *const *v = vers; *v && !xv.real.dlsym; v++)
		xv.real.dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", *v);
}

/* after the constructor: hooks, and RTLD_NEXT for the caller's object */
static void *late_dlsym(void *handle, const char *name, const void *caller)
{
	if (xv.acct && name[0] == 'c' && name[1] == 'u') {
		void *h = xv_hook_for(name);
		if (h)
			return h;
	}
	if (xv.acct && xv.driver && xv.mem_limited && !strcmp(name, "nvmlDeviceGetMemoryInfo")) {
		void *real = xv.real.dlsym(handle, name);
		if (!real)
			return NULL;
		xv.real.nvmlDeviceGetMemoryInfo = real;
		return xv_mem_hook(name);
	}
	if (handle == RTLD_NEXT) {
		Dl_info me, them;
		if (dladdr((void *)dlsym, &me) && dladdr(caller, &them) &&
		    me.dli_fbase != them.dli_fbase)
			return next_after(caller, name);
	}
	return xv.real.dlsym(handle, name);
}

/* Before the constructor has run (the caller is a preloaded sanitizer
 * runtime starting up, or another constructor) nothing is hooked: the real
 * dlsym answers, and from this library RTLD_NEXT finds what it would have
 * for the caller, as only this library sits between them. */
XV_EXPORT XV_EARLY void *dlsym(void *handle, const char *name)
{
	if (!xv.real.dlsym)
		xv_bind_dlsym();
	if (!xv.real.dlsym)
		return NULL;
	if (!__atomic_load_n(&xv.ready, __ATOMIC_ACQUIRE))
		return xv.real.dlsym(handle, name);
	return late_dlsym(handle, name, __builtin_return_address(0));
}
