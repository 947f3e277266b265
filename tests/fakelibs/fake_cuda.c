/*
 * fake_cuda: a stand-in for libcuda.so.1, so the vGPU interposer
 * (src/vgpu) is tested through the real LD_PRELOAD, dlopen, dlsym and
 * cuGetProcAddress path with no GPU.
 *
 * One simulated GPU, shared by every process that sets the same
 * FAKE_CUDA_STATE file: device memory, and a device that runs kernels one
 * after another in submission order (the FIFO of a time-sliced GPU with no
 * MPS). A kernel's parameter 0 points to its per-block time in ns (default
 * 100 us); it runs ceil(blocks / SMs) waves. Captured streams build graphs;
 * cuGraphLaunch runs their kernels back to back.
 *
 * The clock is simulated device time, never wall time: it moves only when
 * every process on the GPU (a "party": each process after cuInit) is
 * waiting - for its launch queue (FAKE_CUDA_QUEUE kernels in flight per
 * process), a synchronize, an event, or a sleep through the exported
 * xpoolSimSleepUntilNs - and then jumps to the earliest wake-up. So
 * results do not depend on how fast or loaded the machine is, sanitizers
 * included. A party that dies is dropped (and its memory freed, as the
 * driver does) when the others notice, within 20 ms of wall time.
 *
 * Knobs (environment, read at cuInit):
 *   FAKE_CUDA_STATE=PATH     the shared GPU (absent: private to the process)
 *   FAKE_CUDA_MEM_MIB=n      device memory (default 16384)
 *   FAKE_CUDA_SMS=n          SMs (default 132)
 *   FAKE_CUDA_PARTIES=n      the clock starts when n processes have joined
 *   FAKE_CUDA_QUEUE=n        kernels in flight per process (default 64)
 *   FAKE_CUDA_HORIZON_MS=n   busy time counts only before this (default: all)
 *   FAKE_CUDA_JITTER=p       each kernel runs p % shorter or longer than asked,
 *                            uniformly at random (one seeded generator: the
 *                            same runs give the same times)
 * Exported for tests: xpoolSimClockNs, xpoolSimSleepUntilNs and
 * fakeCudaStats (simulated now, this process's busy ns, device used bytes).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuda_abi.h"
#include "fake_common.h"

#define MAXP  32
#define QMAX  256
#define MAXN  64 /* kernels per graph */
#define MAGIC 0x46414b45u

struct party {
	int32_t pid;
	int waiting;
	int64_t wake, busy, mem, last_end;
	int64_t ends[QMAX];
	unsigned qhead, qn;
};

struct gpu {
	uint32_t magic;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int64_t now, free_at, horizon;
	int expected, joined, started, sms, queue, jitter;
	uint64_t rng;
	uint64_t total, used, next_addr;
	struct party p[MAXP];
};

struct CUstream_st {
	int capturing;
	struct CUgraph_st *g;
};
struct CUgraph_st {
	unsigned n;
	uint64_t blocks[MAXN];
	int64_t block_ns[MAXN];
};
struct CUgraphExec_st {
	struct CUgraph_st g;
};
struct CUevent_st {
	int64_t t;
	int recorded;
};

static struct gpu *G;
static int me = -1;
static struct {
	uint64_t addr, bytes;
} allocs[4096];

static void lock(void)
{
	if (pthread_mutex_lock(&G->mu) == EOWNERDEAD)
		pthread_mutex_consistent(&G->mu);
}

static void unlock(void)
{
	pthread_mutex_unlock(&G->mu);
}

static void init_gpu(struct gpu *g)
{
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	memset(g, 0, sizeof(*g));
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&g->mu, &ma);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g->cv, &ca);
	g->total = (uint64_t)fk_int("FAKE_CUDA_MEM_MIB", 16384) << 20;
	g->sms = (int)fk_int("FAKE_CUDA_SMS", 132);
	g->expected = (int)fk_int("FAKE_CUDA_PARTIES", 1);
	g->queue = (int)fk_int("FAKE_CUDA_QUEUE", 64);
	if (g->queue < 1 || g->queue > QMAX)
		g->queue = 64;
	g->horizon = fk_int("FAKE_CUDA_HORIZON_MS", 0) * 1000000LL;
	g->jitter = (int)fk_int("FAKE_CUDA_JITTER", 0);
	g->rng = 0x9e3779b97f4a7c15ULL;
	g->next_addr = 1ULL << 32;
	__atomic_store_n(&g->magic, MAGIC, __ATOMIC_RELEASE);
}

static struct gpu *open_gpu(void)
{
	const char *path = fk_str("FAKE_CUDA_STATE", NULL);
	struct gpu *g;
	if (!path) {
		g = mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (g != MAP_FAILED)
			init_gpu(g);
		return g == MAP_FAILED ? NULL : g;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	flock(fd, LOCK_EX);
	struct stat st;
	if (fstat(fd, &st) != 0 || (st.st_size == 0 && ftruncate(fd, sizeof(*g)) != 0)) {
		close(fd);
		return NULL;
	}
	g = mmap(NULL, sizeof(*g), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (g != MAP_FAILED && __atomic_load_n(&g->magic, __ATOMIC_ACQUIRE) != MAGIC)
		init_gpu(g);
	flock(fd, LOCK_UN);
	close(fd);
	return g == MAP_FAILED ? NULL : g;
}

static int alive(pid_t pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static void drop(int i)
{
	G->used -= (uint64_t)G->p[i].mem;
	memset(&G->p[i], 0, sizeof(G->p[i]));
}

/* When every live party waits for a time still ahead, the earliest of
 * those times; else -1 (someone can run: the clock stays). mu held. */
static int64_t next_wake(int reap)
{
	int64_t next = INT64_MAX;
	if (!G->started)
		return -1;
	for (int i = 0; i < MAXP; i++) {
		struct party *q = &G->p[i];
		if (!q->pid)
			continue;
		if (q->waiting && q->wake > G->now) {
			if (q->wake < next)
				next = q->wake;
			continue;
		}
		if (reap && !q->waiting && !alive(q->pid)) {
			drop(i);
			continue;
		}
		return -1;
	}
	return next == INT64_MAX ? -1 : next;
}

/* wait until the clock reaches t (mu held) */
static void wait_until(int64_t t)
{
	struct party *p = &G->p[me];
	p->waiting = 1;
	p->wake = t;
	int reap = 0;
	while (G->now < t) {
		int64_t next = next_wake(reap);
		if (next > 0) {
			G->now = next;
			pthread_cond_broadcast(&G->cv);
			continue;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 20000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		int rc = pthread_cond_timedwait(&G->cv, &G->mu, &ts);
		if (rc == EOWNERDEAD)
			pthread_mutex_consistent(&G->mu);
		reap = rc == ETIMEDOUT;
	}
	p->waiting = 0;
}

static void join(void)
{
	if (me >= 0)
		return;
	lock();
	for (int i = 0; i < MAXP && me < 0; i++)
		if (!G->p[i].pid || !alive(G->p[i].pid)) {
			if (G->p[i].pid)
				drop(i);
			G->p[i].pid = getpid();
			me = i;
		}
	if (me >= 0 && ++G->joined >= G->expected && !G->started) {
		G->started = 1;
		pthread_cond_broadcast(&G->cv);
	}
	unlock();
}

__attribute__((destructor)) static void leave(void)
{
	if (!G || me < 0)
		return;
	lock();
	if (G->p[me].pid == getpid())
		drop(me);
	pthread_cond_broadcast(&G->cv);
	unlock();
}

FAKE_EXPORT int64_t xpoolSimClockNs(void)
{
	if (!G)
		return 0;
	lock();
	int64_t t = G->now;
	unlock();
	return t;
}

FAKE_EXPORT void xpoolSimSleepUntilNs(int64_t t)
{
	if (!G || me < 0)
		return;
	lock();
	wait_until(t);
	unlock();
}

FAKE_EXPORT void fakeCudaStats(int64_t *now, int64_t *busy, uint64_t *used)
{
	lock();
	*now = G->now;
	*busy = me >= 0 ? G->p[me].busy : 0;
	*used = G->used;
	unlock();
}


/* ---- the driver API ---- */

#define READY()                                                                                    \
	do {                                                                                       \
		if (!G || me < 0)                                                                  \
			return CUDA_ERROR_NOT_INITIALIZED;                                         \
	} while (0)

FAKE_EXPORT CUresult cuInit(unsigned int flags)
{
	if (!G)
		G = open_gpu();
	if (!G)
		return CUDA_ERROR_NO_DEVICE;
	join();
	return me >= 0 ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int *v)
{
	*v = 12040;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
	READY();
	if (ordinal != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	*d = 0;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int *n)
{
	READY();
	*n = 1;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	READY();
	*v = attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? G->sms : 0;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d)
{
	READY();
	*bytes = (size_t)G->total;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
	READY();
	*d = 0;
	return CUDA_SUCCESS;
}

static int context;
FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
	READY();
	*c = (CUcontext)&context;
	return d == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

FAKE_EXPORT CUresult cuCtxCreate_v2(CUcontext *c, unsigned int flags, CUdevice d)
{
	return cuDevicePrimaryCtxRetain(c, d);
}

FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
	READY();
	lock();
	*free_b = (size_t)(G->total - G->used);
	*total = (size_t)G->total;
	unlock();
	return CUDA_SUCCESS;
}

static CUresult mem_alloc(uint64_t bytes, unsigned long long *addr)
{
	READY();
	unsigned slot = 0;
	while (slot < sizeof(allocs) / sizeof(allocs[0]) && allocs[slot].addr)
		slot++;
	if (!bytes || slot == sizeof(allocs) / sizeof(allocs[0]))
		return !bytes ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_OUT_OF_MEMORY;
	lock();
	if (G->used + bytes > G->total) {
		unlock();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	G->used += bytes;
	G->p[me].mem += (int64_t)bytes;
	*addr = G->next_addr;
	G->next_addr += (bytes + 4095) & ~4095ULL;
	unlock();
	allocs[slot].addr = *addr;
	allocs[slot].bytes = bytes;
	return CUDA_SUCCESS;
}

static CUresult mem_free(uint64_t addr)
{
	READY();
	for (unsigned i = 0; i < sizeof(allocs) / sizeof(allocs[0]); i++)
		if (allocs[i].addr == addr && addr) {
			lock();
			G->used -= allocs[i].bytes;
			G->p[me].mem -= (int64_t)allocs[i].bytes;
			unlock();
			allocs[i].addr = 0;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	return mem_alloc(n, p);
}
FAKE_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned int fl)
{
	return mem_alloc(n, p);
}
FAKE_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
	return mem_alloc(n, p);
}
FAKE_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s)
{
	return mem_alloc(n, p);
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool m, CUstream s)
{
	return mem_alloc(n, p);
}
FAKE_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool m,
						  CUstream s)
{
	return mem_alloc(n, p);
}
FAKE_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h,
					unsigned int elem)
{
	*pitch = (w + 511) & ~(size_t)511;
	return mem_alloc((uint64_t)*pitch * h, p);
}
FAKE_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n,
				 const CUmemAllocationProp *prop, unsigned long long fl)
{
	return mem_alloc(n, h);
}
FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	return mem_free(p);
}
FAKE_EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
	return mem_free(p);
}
FAKE_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
	return mem_free(p);
}
FAKE_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
	return mem_free(h);
}

FAKE_EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
	static int module;
	*m = (CUmodule)&module;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	static char names[16][64];
	for (int i = 0; i < 16; i++)
		if (!names[i][0] || !strcmp(names[i], name)) {
			snprintf(names[i], sizeof(names[i]), "%s", name);
			*f = (CUfunction)names[i];
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_NOT_FOUND;
}

FAKE_EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags)
{
	*s = calloc(1, sizeof(**s));
	return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
	if (s)
		free(s->g);
	free(s);
	return CUDA_SUCCESS;
}

/* a kernel's time with the jitter applied (mu held) */
static int64_t jittered(int64_t ns)
{
	if (!G->jitter)
		return ns;
	G->rng ^= G->rng << 13;
	G->rng ^= G->rng >> 7;
	G->rng ^= G->rng << 17;
	double u = (double)(G->rng >> 11) / (double)(1ULL << 53) * 2 - 1; /* [-1, 1) */
	return (int64_t)((double)ns * (1 + u * G->jitter / 100.0));
}

/* run n kernels back to back as one entry of this process's queue */
static void run(const uint64_t *blocks, const int64_t *block_ns, unsigned n)
{
	struct party *p;
	lock();
	p = &G->p[me];
	for (;;) {
		while (p->qn && p->ends[p->qhead] <= G->now) {
			p->qhead = (p->qhead + 1) % QMAX;
			p->qn--;
		}
		if ((int)p->qn < G->queue)
			break;
		wait_until(p->ends[p->qhead]);
	}
	int64_t end = 0;
	for (unsigned k = 0; k < n; k++) {
		uint64_t waves = (blocks[k] + (uint64_t)G->sms - 1) / (uint64_t)G->sms;
		int64_t start = G->free_at > G->now ? G->free_at : G->now;
		end = start + jittered((int64_t)waves * block_ns[k]);
		int64_t b = start, e = end;
		if (G->horizon && e > G->horizon)
			e = G->horizon;
		if (e > b)
			p->busy += e - b;
		G->free_at = end;
	}
	p->ends[(p->qhead + p->qn++) % QMAX] = end;
	p->last_end = end;
	unlock();
}

static CUresult launch(CUstream s, uint64_t blocks, void **params)
{
	READY();
	int64_t ns = params && params[0] ? (int64_t) * (uint64_t *)params[0] : 100000;
	if (s && s->capturing) {
		if (s->g->n == MAXN)
			return CUDA_ERROR_OUT_OF_MEMORY;
		s->g->blocks[s->g->n] = blocks;
		s->g->block_ns[s->g->n++] = ns;
		return CUDA_SUCCESS;
	}
	run(&blocks, &ns, 1);
	return CUDA_SUCCESS;
}

#define GRID(x, y, z) ((uint64_t)(x) * (y) * (z))
FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
				    unsigned bx, unsigned by, unsigned bz, unsigned shm,
				    CUstream s, void **pa, void **ex)
{
	return launch(s, GRID(gx, gy, gz), pa);
}
FAKE_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
					 unsigned bx, unsigned by, unsigned bz, unsigned shm,
					 CUstream s, void **pa, void **ex)
{
	return launch(s, GRID(gx, gy, gz), pa);
}
FAKE_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
					       unsigned bx, unsigned by, unsigned bz, unsigned shm,
					       CUstream s, void **pa)
{
	return launch(s, GRID(gx, gy, gz), pa);
}
FAKE_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
						    unsigned gz, unsigned bx, unsigned by,
						    unsigned bz, unsigned shm, CUstream s,
						    void **pa)
{
	return launch(s, GRID(gx, gy, gz), pa);
}
FAKE_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **pa, void **ex)
{
	return launch(c->hStream, GRID(c->gridDimX, c->gridDimY, c->gridDimZ), pa);
}
FAKE_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **pa,
					   void **ex)
{
	return launch(c->hStream, GRID(c->gridDimX, c->gridDimY, c->gridDimZ), pa);
}

FAKE_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, int mode)
{
	if (!s || s->capturing)
		return CUDA_ERROR_INVALID_VALUE;
	s->g = calloc(1, sizeof(*s->g));
	s->capturing = s->g != NULL;
	return s->g ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
FAKE_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, int mode)
{
	return cuStreamBeginCapture_v2(s, mode);
}
FAKE_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
	if (!s || !s->capturing)
		return CUDA_ERROR_INVALID_VALUE;
	*g = s->g;
	s->g = NULL;
	s->capturing = 0;
	return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
	return cuStreamEndCapture(s, g);
}
FAKE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long fl)
{
	*e = malloc(sizeof(**e));
	if (!*e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	(*e)->g = *g;
	return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGraphDestroy(CUgraph g)
{
	free(g);
	return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec e)
{
	free(e);
	return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s)
{
	READY();
	run(e->g.blocks, e->g.block_ns, e->g.n);
	return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s)
{
	return cuGraphLaunch(e, s);
}

/* wait until this process's work is done */
static CUresult sync_all(void)
{
	READY();
	lock();
	wait_until(G->p[me].last_end);
	unlock();
	return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	return sync_all();
}
FAKE_EXPORT CUresult cuCtxSynchronize(void)
{
	return sync_all();
}

FAKE_EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags)
{
	*e = calloc(1, sizeof(**e));
	return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
	free(e);
	return CUDA_SUCCESS;
}
/* the time the device reaches it: after everything submitted before */
FAKE_EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
	READY();
	if (s && s->capturing)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	lock();
	e->t = G->free_at > G->now ? G->free_at : G->now;
	e->recorded = 1;
	unlock();
	return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream s)
{
	return cuEventRecord(e, s);
}
FAKE_EXPORT CUresult cuEventQuery(CUevent e)
{
	READY();
	lock();
	int done = e->recorded && e->t <= G->now;
	unlock();
	return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
FAKE_EXPORT CUresult cuEventSynchronize(CUevent e)
{
	READY();
	lock();
	wait_until(e->t);
	unlock();
	return CUDA_SUCCESS;
}
FAKE_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	if (cuEventQuery(a) != CUDA_SUCCESS || cuEventQuery(b) != CUDA_SUCCESS)
		return CUDA_ERROR_NOT_READY;
	*ms = (float)((double)(b->t - a->t) / 1e6);
	return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress: from a table, never through dlsym (an interposer's) ---- */

#define ENTRY(fn) { #fn, (void *)fn }
static const struct {
	const char *name;
	void *fn;
} table[] = {
	ENTRY(cuInit), ENTRY(cuDriverGetVersion), ENTRY(cuDeviceGet), ENTRY(cuDeviceGetCount),
	ENTRY(cuDeviceGetAttribute), ENTRY(cuDeviceTotalMem_v2), ENTRY(cuCtxGetDevice),
	ENTRY(cuDevicePrimaryCtxRetain), ENTRY(cuCtxCreate_v2),
	ENTRY(cuMemGetInfo_v2), ENTRY(cuMemAlloc_v2), ENTRY(cuMemAllocManaged),
	ENTRY(cuMemAllocAsync), ENTRY(cuMemAllocAsync_ptsz), ENTRY(cuMemAllocFromPoolAsync),
	ENTRY(cuMemAllocFromPoolAsync_ptsz), ENTRY(cuMemAllocPitch_v2), ENTRY(cuMemCreate),
	ENTRY(cuMemFree_v2), ENTRY(cuMemFreeAsync), ENTRY(cuMemFreeAsync_ptsz), ENTRY(cuMemRelease),
	ENTRY(cuModuleLoadData), ENTRY(cuModuleGetFunction), ENTRY(cuStreamCreate),
	ENTRY(cuStreamDestroy_v2), ENTRY(cuLaunchKernel), ENTRY(cuLaunchKernel_ptsz),
	ENTRY(cuLaunchCooperativeKernel), ENTRY(cuLaunchCooperativeKernel_ptsz),
	ENTRY(cuLaunchKernelEx), ENTRY(cuLaunchKernelEx_ptsz), ENTRY(cuStreamBeginCapture_v2),
	ENTRY(cuStreamBeginCapture_v2_ptsz), ENTRY(cuStreamEndCapture),
	ENTRY(cuStreamEndCapture_ptsz), ENTRY(cuGraphInstantiateWithFlags), ENTRY(cuGraphDestroy),
	ENTRY(cuGraphExecDestroy), ENTRY(cuGraphLaunch), ENTRY(cuGraphLaunch_ptsz),
	ENTRY(cuStreamSynchronize), ENTRY(cuCtxSynchronize), ENTRY(cuEventCreate),
	ENTRY(cuEventDestroy_v2), ENTRY(cuEventRecord), ENTRY(cuEventRecord_ptsz),
	ENTRY(cuEventQuery), ENTRY(cuEventSynchronize), ENTRY(cuEventElapsedTime),
};

static void *find(const char *name)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i].name, name))
			return table[i].fn;
	return NULL;
}

FAKE_EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int version, cuuint64_t flags);
FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version,
					 cuuint64_t flags, CUdriverProcAddressQueryResult *st);

static void *lookup(const char *sym, int version, cuuint64_t flags)
{
	static const char *const v2[] = { "cuMemAlloc",	  "cuMemAllocPitch",	  "cuMemFree", "cuCtxCreate",
					  "cuMemGetInfo", "cuDeviceTotalMem",	  "cuStreamDestroy",
					  "cuEventDestroy", "cuStreamBeginCapture", NULL };
	char name[96];
	snprintf(name, sizeof(name), "%s", sym);
	for (const char *const *v = v2; *v; v++)
		if (!strcmp(sym, *v) && version >= 3020)
			snprintf(name, sizeof(name), "%s_v2", sym);
	if (!strcmp(sym, "cuGetProcAddress"))
		return version >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
	if (!strcmp(sym, "cuGetProcAddress_v2"))
		return (void *)cuGetProcAddress_v2;
	if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
		char pt[128];
		snprintf(pt, sizeof(pt), "%s_ptsz", name);
		if (find(pt))
			return find(pt);
	}
	return find(name);
}

FAKE_EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int version, cuuint64_t flags)
{
	*pfn = lookup(sym, version, flags);
	return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

FAKE_EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int version,
					 cuuint64_t flags, CUdriverProcAddressQueryResult *st)
{
	*pfn = lookup(sym, version, flags);
	if (st)
		*st = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
