/*
 * vgpu_app: a CUDA application for the vGPU tests (tests/test_vgpu.c) and
 * bench/vgpu.sh. It reaches the driver the way the CUDA runtime does:
 * dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), then every entry
 * point by plain name and CUDA version (VGPU_APP_RESOLVE=dlsym: each by
 * its driver name through dlsym instead; VGPU_APP_PTSZ=1: the
 * per-thread-default-stream variants). Built twice: xp-vgpu-app-direct is
 * linked against libcuda.so.1 and calls every entry point by its symbol,
 * as a program built with -lcuda does. Run against tests/fakelibs/
 * fake_cuda.c, with or without libxpool-vgpu.so preloaded.
 *
 *   vgpu_app alloc CHUNK_MIB   after a line on stdin, allocate until refused,
 *                              every allocation call in turn; print "got BYTES",
 *                              hold until stdin closes
 *   vgpu_app info [MIB]        retain the primary context, allocate MIB, print
 *                              what the driver reports
 *   vgpu_app run S GRID US MODE  launch until the simulated clock passes S s;
 *                              kernels of GRID and 2*GRID blocks of US us;
 *                              MODE eager|graph|ex|coop, or idle (sleep until
 *                              then, launching nothing); print busy and now
 *   vgpu_app hold MIB          allocate MIB, print "held", wait to be killed
 *   vgpu_app reclaim MIB       after a line on stdin, allocate MIB, retrying
 *                              every 10 ms simulated; print how long it took
 *   vgpu_app bench N           N tiny launches: CPU ns per launch
 *   vgpu_app fork MIB          allocate MIB, fork a child that exits, print free
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../src/hal/nvml_abi.h"
#include "../../src/vgpu/cuda_abi.h"

typedef CUresult (*stream_fn)(CUstream *, unsigned);
typedef CUresult (*inst_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*mod_fn)(CUmodule *, const void *);
typedef CUresult (*func_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*sync_fn)(void);

static struct {
	cuInit_fn init;
	cuMemAlloc_v2_fn alloc;
	cuMemAllocManaged_fn managed;
	cuMemAllocAsync_fn async;
	cuMemAllocFromPoolAsync_fn pool;
	cuMemAllocPitch_v2_fn pitch;
	cuMemCreate_fn create;
	cuMemFree_v2_fn free;
	cuMemGetInfo_v2_fn info;
	cuDevicePrimaryCtxRetain_fn retain;
	cuDeviceTotalMem_v2_fn total;
	cuLaunchKernel_fn launch;
	cuLaunchKernelEx_fn launch_ex;
	cuLaunchCooperativeKernel_fn coop;
	cuGraphLaunch_fn graph;
	cuStreamBeginCapture_v2_fn begin;
	cuStreamEndCapture_fn end;
	stream_fn stream;
	inst_fn inst;
	mod_fn mod;
	func_fn func;
	sync_fn sync;
	int64_t (*clock)(void);
	void (*sleep)(int64_t);
	void (*stats)(int64_t *, int64_t *, uint64_t *);
} cu;

static void *h;

#ifdef VGPU_DIRECT
/* Built as xp-vgpu-app-direct, linked against libcuda.so.1 (-lcuda): every
 * entry point is its symbol, as a program linked with -lcuda calls it. */
#define X(ret, name, args) ret name args;
XP_CUDA_FUNCS(X)
#undef X
CUresult cuStreamCreate(CUstream *s, unsigned flags);
CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long fl);
CUresult cuModuleLoadData(CUmodule *m, const void *image);
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name);
CUresult cuCtxSynchronize(void);
#define D(fn) { #fn, (void *)fn }
static const struct {
	const char *name;
	void *fn;
} linked[] = {
	D(cuInit), D(cuMemAlloc_v2), D(cuMemAllocManaged), D(cuMemAllocAsync),
	D(cuMemAllocFromPoolAsync), D(cuMemAllocPitch_v2), D(cuMemCreate), D(cuMemFree_v2),
	D(cuMemGetInfo_v2), D(cuDeviceTotalMem_v2), D(cuDevicePrimaryCtxRetain), D(cuLaunchKernel), D(cuLaunchKernelEx),
	D(cuLaunchCooperativeKernel), D(cuGraphLaunch), D(cuStreamBeginCapture_v2),
	D(cuStreamEndCapture), D(cuStreamCreate), D(cuGraphInstantiateWithFlags),
	D(cuModuleLoadData), D(cuModuleGetFunction), D(cuCtxSynchronize),
};
#endif

static void *get(const char *plain, const char *real)
{
	void *p = NULL;
#ifdef VGPU_DIRECT
	for (size_t i = 0; i < sizeof(linked) / sizeof(linked[0]); i++)
		if (!strcmp(linked[i].name, real))
			return linked[i].fn;
#endif
	const char *how = getenv("VGPU_APP_RESOLVE");
	unsigned long long fl = getenv("VGPU_APP_PTSZ") ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
							: 0;
	if (how && !strcmp(how, "dlsym")) {
		p = dlsym(h, real);
	} else {
		cuGetProcAddress_v2_fn gpa = (cuGetProcAddress_v2_fn)dlsym(h, "cuGetProcAddress_v2");
		CUdriverProcAddressQueryResult st;
		if (!gpa || gpa(plain, &p, 12040, fl, &st) != CUDA_SUCCESS)
			p = NULL;
	}
	if (!p) {
		fprintf(stderr, "vgpu_app: %s not found\n", plain);
		exit(2);
	}
	return p;
}

static void bind(void)
{
	h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) {
		fprintf(stderr, "vgpu_app: %s\n", dlerror());
		exit(2);
	}
	cu.init = get("cuInit", "cuInit");
	cu.alloc = get("cuMemAlloc", "cuMemAlloc_v2");
	cu.managed = get("cuMemAllocManaged", "cuMemAllocManaged");
	cu.async = get("cuMemAllocAsync", "cuMemAllocAsync");
	cu.pool = get("cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync");
	cu.pitch = get("cuMemAllocPitch", "cuMemAllocPitch_v2");
	cu.create = get("cuMemCreate", "cuMemCreate");
	cu.free = get("cuMemFree", "cuMemFree_v2");
	cu.info = get("cuMemGetInfo", "cuMemGetInfo_v2");
	cu.retain = get("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain");
	cu.total = get("cuDeviceTotalMem", "cuDeviceTotalMem_v2");
	cu.launch = get("cuLaunchKernel", "cuLaunchKernel");
	cu.launch_ex = get("cuLaunchKernelEx", "cuLaunchKernelEx");
	cu.coop = get("cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel");
	cu.graph = get("cuGraphLaunch", "cuGraphLaunch");
	cu.begin = get("cuStreamBeginCapture", "cuStreamBeginCapture_v2");
	cu.end = get("cuStreamEndCapture", "cuStreamEndCapture");
	cu.stream = get("cuStreamCreate", "cuStreamCreate");
	cu.inst = get("cuGraphInstantiateWithFlags", "cuGraphInstantiateWithFlags");
	cu.mod = get("cuModuleLoadData", "cuModuleLoadData");
	cu.func = get("cuModuleGetFunction", "cuModuleGetFunction");
	cu.sync = get("cuCtxSynchronize", "cuCtxSynchronize");
	cu.clock = (int64_t(*)(void))dlsym(h, "xpoolSimClockNs");
	cu.sleep = (void (*)(int64_t))dlsym(h, "xpoolSimSleepUntilNs");
	cu.stats = (void (*)(int64_t *, int64_t *, uint64_t *))dlsym(h, "fakeCudaStats");
	if (cu.init(0) != CUDA_SUCCESS) {
		fprintf(stderr, "vgpu_app: cuInit failed\n");
		exit(2);
	}
}

static void wait_line(void)
{
	char line[64];
	if (!fgets(line, sizeof(line), stdin))
		exit(3);
}

/* one allocation of n bytes, by the i-th allocation call */
static CUresult alloc_by(int i, uint64_t n, CUdeviceptr *p)
{
	size_t pitch;
	switch (i % 6) {
	case 0: return cu.alloc(p, n);
	case 1: return cu.managed(p, n, 1);
	case 2: return cu.async(p, n, NULL);
	case 3: return cu.pool(p, n, NULL, NULL);
	case 4: return cu.pitch(p, &pitch, 1 << 20, n >> 20, 4);
	default: return cu.create((CUmemGenericAllocationHandle *)p, n, NULL, 0);
	}
}

static int cmd_alloc(uint64_t chunk)
{
	uint64_t got = 0;
	CUdeviceptr p;
	wait_line();
	for (int i = 0; alloc_by(i, chunk, &p) == CUDA_SUCCESS; i++)
		got += chunk;
	printf("got %llu\n", (unsigned long long)got);
	fflush(stdout);
	while (getchar() != EOF) {
	}
	return 0;
}

static int cmd_info(uint64_t mib)
{
	CUdeviceptr p;
	size_t fr = 0, tot = 0, dt = 0;
	CUcontext ctx;
	if (cu.retain(&ctx, 0) != CUDA_SUCCESS)
		printf("context refused\n");
	if (mib && cu.alloc(&p, mib << 20) != CUDA_SUCCESS)
		printf("alloc refused\n");
	cu.info(&fr, &tot);
	cu.total(&dt, 0);
	printf("free %zu total %zu devtotal %zu", fr, tot, dt);
	const char *nv = getenv("VGPU_APP_NVML");
	void *hn = nv ? dlopen(nv, RTLD_NOW) : NULL;
	if (hn) {
		nvmlReturn_t (*ini)(void) = (nvmlReturn_t(*)(void))dlsym(hn, "nvmlInit_v2");
		nvmlReturn_t (*get_h)(unsigned, nvmlDevice_t *) =
			(nvmlReturn_t(*)(unsigned, nvmlDevice_t *))dlsym(hn, "nvmlDeviceGetHandleByIndex_v2");
		nvmlReturn_t (*mi)(nvmlDevice_t, nvmlMemory_t *) =
			(nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))dlsym(hn, "nvmlDeviceGetMemoryInfo");
		nvmlDevice_t d;
		nvmlMemory_t m;
		if (ini && get_h && mi && ini() == 0 && get_h(0, &d) == 0 && mi(d, &m) == 0)
			printf(" nvml_total %llu nvml_used %llu", m.total, m.used);
	}
	printf("\n");
	return 0;
}

static int cmd_run(double secs, unsigned grid, unsigned us, const char *mode)
{
	CUmodule m;
	CUfunction f;
	CUstream s = NULL;
	CUgraphExec ge = NULL;
	uint64_t ns = (uint64_t)us * 1000;
	void *params[] = { &ns };
	int64_t horizon = (int64_t)(secs * 1e9), now = 0, busy = 0;
	uint64_t used;
	cu.mod(&m, "fake");
	cu.func(&f, m, "spin");
	cu.stream(&s, 0);
	if (!strcmp(mode, "graph")) {
		CUgraph g;
		cu.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
		for (int k = 0; k < 8; k++)
			cu.launch(f, grid * (1 + k % 2), 1, 1, 128, 1, 1, 0, s, params, NULL);
		cu.end(s, &g);
		cu.inst(&ge, g, 0);
	}
	if (!strcmp(mode, "idle"))
		cu.sleep(horizon);
	for (unsigned long i = 0; cu.clock() < horizon; i++) {
		unsigned gx = grid * (unsigned)(1 + i % 2);
		CUlaunchConfig c = { gx, 1, 1, 128, 1, 1, 0, s, NULL, 0 };
		if (ge)
			cu.graph(ge, s);
		else if (!strcmp(mode, "ex"))
			cu.launch_ex(&c, f, params, NULL);
		else if (!strcmp(mode, "coop"))
			cu.coop(f, gx, 1, 1, 128, 1, 1, 0, s, params);
		else
			cu.launch(f, gx, 1, 1, 128, 1, 1, 0, s, params, NULL);
	}
	cu.sync();
	cu.stats(&now, &busy, &used);
	printf("busy_ns %lld now_ns %lld\n", (long long)busy, (long long)now);
	return 0;
}

static int cmd_hold(uint64_t mib)
{
	CUdeviceptr p;
	if (cu.alloc(&p, mib << 20) != CUDA_SUCCESS)
		return 1;
	printf("held\n");
	fflush(stdout);
	for (;;)
		pause();
}

static int cmd_reclaim(uint64_t mib)
{
	CUdeviceptr p;
	wait_line();
	int64_t t0 = cu.clock();
	while (cu.alloc(&p, mib << 20) != CUDA_SUCCESS) {
		if (cu.clock() - t0 > 5000000000LL) {
			printf("reclaim_ns never\n");
			return 1;
		}
		cu.sleep(cu.clock() + 10000000);
	}
	printf("reclaim_ns %lld\n", (long long)(cu.clock() - t0));
	return 0;
}

static int cmd_bench(long n)
{
	CUmodule m;
	CUfunction f;
	uint64_t ns = 1;
	void *params[] = { &ns };
	struct timespec a, b;
	cu.mod(&m, "fake");
	cu.func(&f, m, "tiny");
	for (long i = 0; i < 1000; i++) /* warm: estimates, events */
		cu.launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
	/* CPU time, not wall time: on a shared machine, preemption is noise */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++)
		cu.launch(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	double t = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	printf("ns_per_launch %.1f\n", t / (double)n);
	return 0;
}

static int cmd_fork(uint64_t mib)
{
	CUdeviceptr p;
	size_t fr = 0, tot = 0;
	if (cu.alloc(&p, mib << 20) != CUDA_SUCCESS)
		return 1;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		exit(0); /* a DataLoader-like worker: its exit must not give back our memory */
	int st;
	waitpid(pid, &st, 0);
	cu.info(&fr, &tot);
	printf("free %zu total %zu\n", fr, tot);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	bind();
	const char *c = argv[1];
	uint64_t a = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
	if (!strcmp(c, "alloc"))
		return cmd_alloc(a << 20);
	if (!strcmp(c, "info"))
		return cmd_info(a);
	if (!strcmp(c, "run") && argc == 6)
		return cmd_run(atof(argv[2]), (unsigned)atoi(argv[3]), (unsigned)atoi(argv[4]),
			       argv[5]);
	if (!strcmp(c, "hold"))
		return cmd_hold(a);
	if (!strcmp(c, "reclaim"))
		return cmd_reclaim(a);
	if (!strcmp(c, "bench"))
		return cmd_bench((long)a);
	if (!strcmp(c, "fork"))
		return cmd_fork(a);
	return 2;
}
