/*
 * launch: the compute share, held on every launch path (cuLaunchKernel,
 * cuLaunchKernelEx, cuLaunchCooperativeKernel, cuGraphLaunch, and their
 * per-thread-stream twins).
 *
 * The controller is a bucket of device time per job and device, shared by
 * the job's processes (struct xv_dev.budget_ns). It fills at share x
 * elapsed time up to share x XV_WINDOW. A launch takes its estimated
 * device time from the bucket with one atomic subtraction: while the
 * bucket stays positive that is the whole cost (no lock, no syscall, no
 * getenv). When it goes negative the launching thread refills it under the
 * account's mutex and sleeps until the debt is repaid.
 *
 * Estimates come from kernel completion events: a launch is bracketed by
 * an event pair (a probe) when its kernel shape (function, grid size,
 * block size; or the graph) has fewer than 8 measurements, and every 16th
 * launch of the shape otherwise, with at most 8 probes in flight. A shape's estimate is
 * the mean of its last 8 measurements, less those above 1.5 x their median
 * (a kernel that waited behind another context's work between its events).
 * When a probe completes, the bucket is charged the difference between
 * what it measured (cut the same way) and what the launch was charged. A shape not
 * measured yet is charged the process's running mean; the process's first
 * launch waits for its probe, once, so that the mean exists. The error and
 * reaction time are in docs/design/vgpu.md.
 *
 * Under contention a job's bucket fills at its effective share, which a
 * job of higher priority on the same GPU may lower (board.c): the launch
 * path only tells the board, on every 16th launch of a shape and when
 * throttled, that the job still launches.
 *
 * Launches into a stream being captured are not charged: they run later,
 * as a graph, and are charged then. The share applies to the process's
 * device 0 (a fraction of a GPU is one device).
 */
#define _GNU_SOURCE
#include <string.h>

#include "vgpu_int.h"

#define NEST   1024
#define NPROBE 8
#define NCAP   16

#define NSAMPLE 8
struct est {
	_Atomic uint64_t key;
	_Atomic int64_t ns; /* the estimate (learn()) */
	_Atomic uint32_t n;
	_Atomic uint32_t seen; /* launches of the shape: every 16th is probed */
	int64_t sample[NSAMPLE]; /* pmu */
};

struct probe {
	CUevent a, b;
	struct est *e;
	int64_t charged;
};

static struct est est[NEST];
static _Atomic int64_t mean_ns;
static _Atomic uint32_t mean_n;
static _Atomic uint64_t nlaunch;

static pthread_mutex_t pmu = PTHREAD_MUTEX_INITIALIZER; /* probes; only ever tried */
static struct probe probes[NPROBE];
static unsigned phead, pn;
static int pready; /* 1: events made, -1: probing off */

static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER; /* captured streams */
static CUstream captured[NCAP];

void xv_launch_forget(void)
{
	pthread_mutex_init(&pmu, NULL);
	pthread_mutex_init(&cmu, NULL);
	pready = 0; /* the parent's events are not this process's */
	phead = pn = 0;
	atomic_store(&xv.capturing, 0);
	memset(captured, 0, sizeof(captured));
}

static uint64_t shape(const void *f, uint64_t grid, uint64_t block)
{
	uint64_t k = (uint64_t)(uintptr_t)f * 0x9e3779b97f4a7c15ULL;
	k ^= grid * 0xc2b2ae3d27d4eb4fULL + block;
	k ^= k >> 29;
	return k > 1 ? k : 2;
}

static struct est *est_find(uint64_t key)
{
	size_t i = (size_t)(key >> 7) & (NEST - 1);
	for (int k = 0; k < 16; k++, i = (i + 1) & (NEST - 1)) {
		uint64_t have = atomic_load_explicit(&est[i].key, memory_order_acquire);
		if (have == key)
			return &est[i];
		if (have == 0) {
			uint64_t zero = 0;
			if (atomic_compare_exchange_strong(&est[i].key, &zero, key) || zero == key)
				return &est[i];
		}
	}
	return NULL;
}

/* A shape's estimate from its last NSAMPLE measurements (pmu held): the
 * mean of those at most 1.5 x their median. Between its events a kernel
 * may also wait for another context's work, which makes it measure long,
 * never short; the cut drops such samples, the mean keeps the estimate
 * unbiased when the kernel's own time varies. Returns the measurement,
 * cut the same way: what the launch is finally charged. */
static int64_t learn(struct est *e, int64_t m)
{
	uint32_t n = atomic_load_explicit(&e->n, memory_order_relaxed);
	int64_t v[NSAMPLE] = { 0 }, sum = 0; /* = {0}: gcc 12 -O2 sees v[k / 2] unset */
	uint32_t k = n + 1 < NSAMPLE ? n + 1 : NSAMPLE, kept = 0;
	e->sample[n % NSAMPLE] = m;
	for (uint32_t i = 0; i < k; i++) { /* insertion sort: k <= 8 */
		uint32_t j = i;
		for (; j > 0 && v[j - 1] > e->sample[i]; j--)
			v[j] = v[j - 1];
		v[j] = e->sample[i];
	}
	int64_t cut = 2 * v[k / 2];
	for (uint32_t i = 0; i < k; i++)
		if (v[i] <= cut) {
			sum += v[i];
			kept++;
		}
	atomic_store_explicit(&e->ns, sum / (kept ? kept : 1), memory_order_relaxed);
	atomic_store_explicit(&e->n, n + 1, memory_order_relaxed);
	return m < cut ? m : cut;
}

/* settle completed probes, oldest first (pmu held) */
static void poll(void)
{
	struct xv_dev *d = &xv.acct->dev[0];
	while (pn) {
		struct probe *p = &probes[phead];
		float ms = 0;
		CUresult r = xv.real.cuEventQuery(p->b);
		if (r == CUDA_ERROR_NOT_READY)
			return;
		int64_t m = p->charged;
		if (r == CUDA_SUCCESS && xv.real.cuEventElapsedTime(&ms, p->a, p->b) == CUDA_SUCCESS)
			m = (int64_t)((double)ms * 1e6);
		if (p->e)
			m = learn(p->e, m);
		atomic_fetch_sub(&d->budget_ns, m - p->charged);
		int64_t mean = atomic_load_explicit(&mean_ns, memory_order_relaxed);
		atomic_store_explicit(&mean_ns, atomic_load(&mean_n) ? mean + (m - mean) / 8 : m,
				      memory_order_relaxed);
		atomic_fetch_add_explicit(&mean_n, 1, memory_order_relaxed);
		phead = (phead + 1) % NPROBE;
		pn--;
	}
}

static int capturing(CUstream s)
{
	int yes = 0;
	if (!atomic_load_explicit(&xv.capturing, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&cmu);
	for (int i = 0; i < NCAP; i++)
		yes |= captured[i] == s && s;
	pthread_mutex_unlock(&cmu);
	return yes;
}

/* the bucket is empty: refill, and sleep until the debt is repaid; while
 * jobs of higher priority hold part of the share back (board.c), look
 * again every XV_WINDOW / 10 rather than sleep for the whole debt at a
 * share that may come back any moment */
static void throttle(struct xv_dev *d)
{
	xv_board_active();
	for (;;) {
		uint32_t eff;
		int64_t left = xv_refill(0, &eff);
		if (left >= 0)
			return;
		if (pthread_mutex_trylock(&pmu) == 0) {
			poll();
			pthread_mutex_unlock(&pmu);
		}
		int64_t wait = eff ? (-left) * 1000 / eff + 1 : XV_WINDOW / 10;
		if (eff < d->milli && wait > XV_WINDOW / 10)
			wait = XV_WINDOW / 10;
		xv.sleep_until(xv.now() + wait);
	}
}

struct gate {
	struct probe *p; /* non-NULL: pmu held, a recorded */
	int64_t charged;
};

static CUresult record(CUevent e, CUstream s, int ptsz)
{
	return ptsz && xv.real.cuEventRecord_ptsz ? xv.real.cuEventRecord_ptsz(e, s)
						   : xv.real.cuEventRecord(e, s);
}

static int make_events(void)
{
	for (int i = 0; i < NPROBE; i++)
		if (xv.real.cuEventCreate(&probes[i].a, CU_EVENT_DEFAULT) != CUDA_SUCCESS ||
		    xv.real.cuEventCreate(&probes[i].b, CU_EVENT_DEFAULT) != CUDA_SUCCESS)
			return -1;
	return 1;
}

static void gate_enter(struct gate *g, uint64_t key, CUstream s, int ptsz)
{
	struct xv_dev *d = &xv.acct->dev[0];
	g->p = NULL;
	g->charged = 0;
	if (d->milli >= 1000 || capturing(s))
		return;
	struct est *e = est_find(key);
	uint32_t known = e ? atomic_load_explicit(&e->n, memory_order_relaxed) : 0;
	int64_t c = known ? atomic_load_explicit(&e->ns, memory_order_relaxed)
			  : atomic_load_explicit(&mean_ns, memory_order_relaxed);
	/* per shape, so that shapes launched in a fixed order are all sampled */
	uint64_t n = e ? atomic_fetch_add_explicit(&e->seen, 1, memory_order_relaxed)
		       : atomic_fetch_add_explicit(&nlaunch, 1, memory_order_relaxed);
	int64_t before = atomic_fetch_sub_explicit(&d->budget_ns, c, memory_order_relaxed);
	g->charged = c;
	if (before - c < 0)
		throttle(d);
	else if (!(n & 15)) /* every 16th launch of a shape: it still contends */
		xv_board_active();
	if ((known >= NSAMPLE && (n & 15)) || pthread_mutex_trylock(&pmu) != 0)
		return;
	if (!pready)
		pready = make_events();
	if (pready > 0 && pn)
		poll();
	if (pready < 0 || pn == NPROBE) {
		pthread_mutex_unlock(&pmu);
		return;
	}
	struct probe *p = &probes[(phead + pn) % NPROBE];
	if (record(p->a, s, ptsz) != CUDA_SUCCESS) {
		pthread_mutex_unlock(&pmu);
		return;
	}
	p->e = e;
	p->charged = c;
	g->p = p;
}

static void gate_leave(struct gate *g, CUstream s, int ptsz, CUresult rc)
{
	struct xv_dev *d = &xv.acct->dev[0];
	if (rc != CUDA_SUCCESS && g->charged) { /* it did not run */
		atomic_fetch_add(&d->budget_ns, g->charged);
	}
	if (!g->p)
		return;
	if (rc == CUDA_SUCCESS && record(g->p->b, s, ptsz) == CUDA_SUCCESS) {
		pn++;
		/* the very first launch: nothing to charge the next ones with yet;
		 * wait for it once rather than let a queue of launches go free */
		if (!atomic_load_explicit(&mean_n, memory_order_relaxed) &&
		    xv.real.cuEventSynchronize && xv.real.cuEventSynchronize(g->p->b) == CUDA_SUCCESS)
			poll();
	}
	pthread_mutex_unlock(&pmu);
}

#define GATED(key, s, ptsz, call)                                                                  \
	do {                                                                                       \
		struct gate g_;                                                                    \
		gate_enter(&g_, (key), (s), (ptsz));                                               \
		CUresult rc_ = call;                                                               \
		gate_leave(&g_, (s), (ptsz), rc_);                                                 \
		return rc_;                                                                        \
	} while (0)

#define KERNEL_HOOKS(SFX, PTSZ)                                                                    \
	static CUresult h_cuLaunchKernel##SFX(CUfunction f, unsigned gx, unsigned gy, unsigned gz, \
					      unsigned bx, unsigned by, unsigned bz,             \
					      unsigned shm, CUstream s, void **pa, void **ex)    \
	{                                                                                          \
		GATED(shape(f, (uint64_t)gx * gy * gz, (uint64_t)bx * by * bz), s, PTSZ,           \
		      xv.real.cuLaunchKernel##SFX(f, gx, gy, gz, bx, by, bz, shm, s, pa, ex));    \
	}                                                                                          \
	static CUresult h_cuLaunchCooperativeKernel##SFX(                                          \
		CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,     \
		unsigned bz, unsigned shm, CUstream s, void **pa)                                  \
	{                                                                                          \
		GATED(shape(f, (uint64_t)gx * gy * gz, (uint64_t)bx * by * bz), s, PTSZ,           \
		      xv.real.cuLaunchCooperativeKernel##SFX(f, gx, gy, gz, bx, by, bz, shm, s,   \
							      pa));                                \
	}                                                                                          \
	static CUresult h_cuLaunchKernelEx##SFX(const CUlaunchConfig *c, CUfunction f, void **pa,  \
						void **ex)                                         \
	{                                                                                          \
		if (!c)                                                                            \
			return xv.real.cuLaunchKernelEx##SFX(c, f, pa, ex);                        \
		GATED(shape(f, (uint64_t)c->gridDimX * c->gridDimY * c->gridDimZ,                  \
			    (uint64_t)c->blockDimX * c->blockDimY * c->blockDimZ),                 \
		      c->hStream, PTSZ, xv.real.cuLaunchKernelEx##SFX(c, f, pa, ex));             \
	}                                                                                          \
	static CUresult h_cuGraphLaunch##SFX(CUgraphExec g, CUstream s)                            \
	{                                                                                          \
		GATED(shape(g, 0, 0), s, PTSZ, xv.real.cuGraphLaunch##SFX(g, s));                  \
	}

KERNEL_HOOKS(, 0)
KERNEL_HOOKS(_ptsz, 1)

static void capture_mark(CUstream s, int on)
{
	pthread_mutex_lock(&cmu);
	for (int i = 0; i < NCAP; i++)
		if (on ? !captured[i] : captured[i] == s) {
			captured[i] = on ? s : NULL;
			atomic_fetch_add(&xv.capturing, on ? 1 : -1);
			break;
		}
	pthread_mutex_unlock(&cmu);
}

static CUresult h_cuStreamBeginCapture_v2(CUstream s, int mode)
{
	CUresult rc = xv.real.cuStreamBeginCapture_v2(s, mode);
	if (rc == CUDA_SUCCESS)
		capture_mark(s, 1);
	return rc;
}

static CUresult h_cuStreamBeginCapture_v2_ptsz(CUstream s, int mode)
{
	CUresult rc = xv.real.cuStreamBeginCapture_v2_ptsz(s, mode);
	if (rc == CUDA_SUCCESS)
		capture_mark(s, 1);
	return rc;
}

static CUresult h_cuStreamEndCapture(CUstream s, CUgraph *g)
{
	capture_mark(s, 0);
	return xv.real.cuStreamEndCapture(s, g);
}

static CUresult h_cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
	capture_mark(s, 0);
	return xv.real.cuStreamEndCapture_ptsz(s, g);
}

#define XV_LAUNCH_HOOKS(X)                                                                         \
	X(cuLaunchKernel)                                                                          \
	X(cuLaunchKernel_ptsz)                                                                     \
	X(cuLaunchKernelEx)                                                                        \
	X(cuLaunchKernelEx_ptsz)                                                                   \
	X(cuLaunchCooperativeKernel)                                                               \
	X(cuLaunchCooperativeKernel_ptsz)                                                          \
	X(cuGraphLaunch)                                                                           \
	X(cuGraphLaunch_ptsz)                                                                      \
	X(cuStreamBeginCapture_v2)                                                                 \
	X(cuStreamBeginCapture_v2_ptsz)                                                            \
	X(cuStreamEndCapture)                                                                      \
	X(cuStreamEndCapture_ptsz)

void *xv_launch_hook(const char *name)
{
	if (!xv.real.cuEventCreate || !xv.real.cuEventRecord || !xv.real.cuEventQuery ||
	    !xv.real.cuEventElapsedTime)
		return NULL; /* cannot measure: said at start (vgpu.c) */
#define X(fn)                                                                                      \
	if (!strcmp(name, #fn))                                                                    \
		return xv.real.fn ? (void *)h_##fn : NULL;
	XV_LAUNCH_HOOKS(X)
#undef X
	return NULL;
}
