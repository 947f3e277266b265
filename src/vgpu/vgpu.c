/*
 * vgpu: the constructor of libxpool-vgpu.so. It reads the limits the agent
 * put in the environment, opens the job's account and registers this
 * process in it, binds the real driver, and picks the clock the bucket runs
 * on. After that nothing here reads the environment again.
 *
 * Environment (set by the agent, docs/design/vgpu.md):
 *   XPOOL_VGPU_MEMORY_MIB=8192[,8192...]   cap per visible device (one value: all)
 *   XPOOL_VGPU_COMPUTE_MILLI=300[,...]     compute share per device, 1..1000
 *   XPOOL_VGPU_ACCOUNT=PATH                the job's account file (else private)
 *   XPOOL_VGPU_CONTEXT_MIB=n               charged against the cap for each process's
 *                                          context on a device (default 0)
 *   XPOOL_VGPU_BOARD=PATH                  the GPU's board, shared by its jobs (board.c)
 *   XPOOL_VGPU_PRIORITY=n                  the job's priority there (default 0)
 * Neither limit set: the library answers every lookup with the real
 * function, so it costs nothing.
 *
 * The clock: CLOCK_MONOTONIC, unless the driver exports xpoolSimClockNs
 * and xpoolSimSleepUntilNs (only tests/fakelibs/fake_cuda.c does): then the
 * simulated device's clock, so tests check shares in device time whatever
 * the load on the machine.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vgpu_int.h"

struct xv xv = { .slot = -1 };

void xv_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n = snprintf(line, sizeof(line), "xpool-vgpu: pid=%d ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	size_t l = strlen(line);
	line[l] = '\n';
	if (write(2, line, l + 1) < 0) {
		/* nowhere else to say it */
	}
}

static int64_t wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void wall_sleep_until(int64_t t)
{
	struct timespec ts = { .tv_sec = t / 1000000000LL, .tv_nsec = t % 1000000000LL };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
	}
}

/* /proc/PID/stat: the start time (field 22), and the state (field 3). */
uint64_t xv_proc_start(pid_t pid, char *state)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* the command may hold spaces and parentheses */
	if (!p || p[1] != ' ')
		return 0;
	if (state)
		*state = p[2];
	p += 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p ? strtoull(p, NULL, 10) : 0;
}

static void *real_dlsym_of(void *h, const char *name)
{
	xv_bind_dlsym();
	return xv.real.dlsym ? xv.real.dlsym(h, name) : NULL;
}

int xv_bind_driver(void)
{
	if (xv.libcuda)
		return 0;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h)
		return -1;
#define X(ret, name, args) xv.real.name = (name##_fn)real_dlsym_of(h, #name);
	XP_CUDA_FUNCS(X)
#undef X
#define X(name) xv.real.name##_ptsz = (name##_fn)real_dlsym_of(h, #name "_ptsz");
	XP_CUDA_PTSZ(X)
#undef X
	int64_t (*sim_now)(void) = (int64_t(*)(void))real_dlsym_of(h, "xpoolSimClockNs");
	void (*sim_sleep)(int64_t) = (void (*)(int64_t))real_dlsym_of(h, "xpoolSimSleepUntilNs");
	if (sim_now && sim_sleep) {
		xv.now = sim_now;
		xv.sleep_until = sim_sleep;
	}
	xv.libcuda = h;
	return 0;
}

/* "8192" or "8192,4096": one value per device, the last repeated */
static int parse_list(const char *s, unsigned long long lo, unsigned long long hi,
		      unsigned long long out[XV_MAXDEV], unsigned *n)
{
	*n = 0;
	while (*s) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (end == s || errno || v < lo || v > hi || *s == '-' || *n == XV_MAXDEV)
			return -1;
		out[(*n)++] = v;
		if (*end == '\0')
			break;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
	return *n ? 0 : -1;
}

/* The limits in the environment; 1 when there are any. A malformed value
 * is logged and taken as the tightest limit, never as no limit. */
static int read_limits(struct xv_limits *lim)
{
	const char *mem = getenv("XPOOL_VGPU_MEMORY_MIB");
	const char *cmp = getenv("XPOOL_VGPU_COMPUTE_MILLI");
	unsigned long long v[XV_MAXDEV];
	unsigned n;
	memset(lim, 0, sizeof(*lim));
	lim->ndev = XV_MAXDEV;
	for (unsigned i = 0; i < XV_MAXDEV; i++)
		lim->milli[i] = 1000;
	if ((!mem || !*mem) && (!cmp || !*cmp))
		return 0;
	if (mem && *mem) {
		if (parse_list(mem, 1, 1ULL << 30, v, &n) < 0) {
			xv_log("XPOOL_VGPU_MEMORY_MIB='%s' is malformed: every allocation fails", mem);
			n = 1, v[0] = 0;
		}
		for (unsigned i = 0; i < XV_MAXDEV; i++)
			lim->mem_bytes[i] = v[i < n ? i : n - 1] * XV_MIB;
		if (!lim->mem_bytes[0])
			for (unsigned i = 0; i < XV_MAXDEV; i++)
				lim->mem_bytes[i] = 1; /* not 0: 0 means unlimited */
	}
	if (cmp && *cmp) {
		if (parse_list(cmp, 1, 1000, v, &n) < 0) {
			xv_log("XPOOL_VGPU_COMPUTE_MILLI='%s' is malformed: compute share 1", cmp);
			n = 1, v[0] = 1;
		}
		for (unsigned i = 0; i < XV_MAXDEV; i++)
			lim->milli[i] = (uint32_t)v[i < n ? i : n - 1];
	}
	return 1;
}

static void after_fork_child(void)
{
	xv.pid = getpid();
	xv.slot = -1;
	memset(xv.ctx_charged, 0, sizeof(xv.ctx_charged)); /* the parent's, not ours */
	xv_mem_forget();
	xv_launch_forget();
	if (xv.acct && xv_register() < 0)
		xv_log("no free slot in the job's account: this process's allocations fail");
}

static void init_limits(void)
{
	struct xv_limits lim;
	if (!read_limits(&lim))
		return; /* nothing to enforce: every lookup gets the real function */
	/* the driver first: its clock may be the simulated one */
	xv.driver = xv_bind_driver() == 0;
	if (!xv.driver)
		xv_log("no CUDA driver (libcuda.so.1: %s): nothing to limit", dlerror());
	struct xv_account *a = xv_account_open(getenv("XPOOL_VGPU_ACCOUNT"), &lim);
	if (!a) {
		/* no account, no sharing of the cap: a private one, never unbounded */
		a = xv_account_open(NULL, &lim);
		if (!a)
			abort();
	}
	xv.acct = a;
	const char *ctx = getenv("XPOOL_VGPU_CONTEXT_MIB");
	if (ctx && *ctx)
		xv.ctx_bytes = strtoull(ctx, NULL, 10) * XV_MIB;
	for (unsigned i = 0; i < a->ndev; i++) {
		if (a->dev[i].limit_bytes)
			xv.mem_limited = 1;
		if (a->dev[i].milli < 1000)
			xv.compute_limited = 1;
	}
	if (xv.driver && xv.compute_limited &&
	    !(xv.real.cuEventCreate && xv.real.cuEventRecord && xv.real.cuEventQuery &&
	      xv.real.cuEventElapsedTime))
		xv_log("the driver has no events to measure kernels with: compute share not held");
	/* registered even without a driver: the agent checks that it was loaded */
	if (xv_register() < 0)
		xv_log("no free slot in the job's account: this process's allocations fail");
	if (xv.compute_limited)
		xv_board_open(getenv("XPOOL_VGPU_BOARD"), getenv("XPOOL_VGPU_ACCOUNT"),
			      getenv("XPOOL_VGPU_PRIORITY"), a->dev[0].milli);
	pthread_atfork(NULL, NULL, after_fork_child);
}

__attribute__((constructor)) static void xv_init(void)
{
	xv.now = wall_now;
	xv.sleep_until = wall_sleep_until;
	xv.pid = getpid();
	init_limits();
	__atomic_store_n(&xv.ready, 1, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void xv_fini(void)
{
	if (!xv.acct)
		return;
	xv_unregister();
}
