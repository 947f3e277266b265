/*
 * vgpu_int: the map of libxpool-vgpu.so, the CUDA interposer the agent
 * preloads into a replica whose GPU share is limited (docs/design/vgpu.md).
 *
 *   vgpu.c     the ELF constructor and destructor, limits from the
 *              environment, the driver binding, the clock, fork, the log
 *   account.c  the job's account: a shared file in the task's folder (one
 *              per job and replica, all of its processes), robust lock,
 *              process slots, liveness reclaim, memory reservations and the
 *              compute bucket's refill
 *   resolve.c  dlsym and cuGetProcAddress(_v2): which name answers with a
 *              hook, the version -> _vN map, RTLD_NEXT done right
 *   export.c   the same hooks exported under the driver's names, for
 *              programs linked against libcuda.so.1 (-lcuda)
 *   memory.c   the allocation hooks, cuMemGetInfo / cuDeviceTotalMem /
 *              nvmlDeviceGetMemoryInfo reporting the cap
 *   launch.c   the launch hooks, the device-time bucket, the probes
 *              (event pairs) that measure kernels, stream capture
 *   board.c    priority between the jobs on one GPU: a file per GPU where
 *              each job says its priority, share and when it last
 *              launched; a bucket fills at its effective share
 *
 * Threads: any application thread may enter any hook. The account is
 * shared with the job's other processes: its mutex (process-shared,
 * robust) guards memory and the bucket's refill; the bucket itself is an
 * atomic that the launch hot path decrements without the mutex. Process
 * state (struct xv) is written by the constructor and the fork handler,
 * then read without locks. libc only: no CUDA toolkit, no xpool library.
 */
#ifndef XP_VGPU_INT_H
#define XP_VGPU_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "account.h"
#include "cuda_abi.h"

#define XV_EXPORT   __attribute__((visibility("default")))

/* The real entry points, bound by name from libcuda.so.1. */
struct xv_real {
#define X(ret, name, args) name##_fn name;
	XP_CUDA_FUNCS(X)
#undef X
#define X(name) name##_fn name##_ptsz;
	XP_CUDA_PTSZ(X)
#undef X
	void *(*dlsym)(void *, const char *);
	void *nvmlDeviceGetMemoryInfo; /* as dlsym found it for the application */
};

/* The process (one, written at start and after fork). */
struct xv {
	int mem_limited, compute_limited; /* some device has such a limit */
	int driver;			  /* libcuda.so.1 found */
	struct xv_account *acct;	  /* NULL: no limits here */
	int slot;			  /* -1: not registered */
	pid_t pid;
	void *libcuda;
	struct xv_real real;
	int64_t (*now)(void);		/* ns, the device's clock */
	void (*sleep_until)(int64_t);	/* ns on that clock */
	_Atomic int capturing;		/* streams in capture (launch.c) */
	int ready;			/* the constructor has run (resolve.c's dlsym) */
	uint64_t ctx_bytes;		/* charged per context (XPOOL_VGPU_CONTEXT_MIB) */
	uint8_t ctx_charged[XV_MAXDEV]; /* this process's context charged on the device */
};

extern struct xv xv;

/* vgpu.c */
void xv_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int xv_bind_driver(void); /* idempotent; 0 when libcuda.so.1 is there */
uint64_t xv_proc_start(pid_t pid, char *state); /* 0: no such process */

/* account.c */
struct xv_limits {
	unsigned ndev;
	uint64_t mem_bytes[XV_MAXDEV]; /* 0: not limited */
	uint32_t milli[XV_MAXDEV];     /* 1000: not limited */
};
/* Open (creating and initialising under flock) the account at path, or a
 * private one when path is NULL; NULL on failure, logged. */
struct xv_account *xv_account_open(const char *path, const struct xv_limits *lim);
int xv_register(void);	 /* a slot for this process; -1: none free */
void xv_unregister(void); /* give back this process's memory and slot */
/* Reserve bytes on dev for this process: 0, or -1 when it would pass the
 * cap (the cap is checked after a forced liveness scan). */
int xv_reserve(int dev, uint64_t bytes);
void xv_unreserve(int dev, uint64_t bytes);
/* The driver refused an allocation reserved in the account: give it back,
 * and count an out-of-memory of the device itself (dev_ooms). */
void xv_alloc_failed(int dev, uint64_t bytes, int rc);
/* The job's used bytes on dev, reclaiming the dead first when due. */
uint64_t xv_used(int dev);
/* Refill dev's bucket to now at its effective share (board.c, device 0;
 * the share elsewhere), put in *eff; its balance after. */
int64_t xv_refill(int dev, uint32_t *eff);

/* board.c */
/* Take this job's slot on the GPU's board at path (NULL: no board, no
 * priority): its identity is the account file acct; prio the job's
 * priority (XPOOL_VGPU_PRIORITY), milli its share on the GPU. */
void xv_board_open(const char *path, const char *acct, const char *prio, uint32_t milli);
void xv_board_active(void); /* this job launched: it contends */
/* The share this job's bucket fills at now: milli less what contending
 * jobs of higher priority are entitled to; milli without a board. */
uint32_t xv_board_share(uint32_t milli, int64_t now);

/* resolve.c */
void xv_bind_dlsym(void); /* the real dlsym, by version (ours hides it) */
void *xv_hook_for(const char *name); /* NULL: not hooked (or no limit) */

/* memory.c */
void xv_mem_forget(void); /* after fork: the parent's allocations are not ours */
int xv_cur_dev(void);
#define XV_MEM_HOOKS(X)                                                                            \
	X(cuMemAlloc_v2)                                                                           \
	X(cuMemAllocPitch_v2)                                                                      \
	X(cuMemAllocManaged)                                                                       \
	X(cuMemAllocAsync)                                                                         \
	X(cuMemAllocAsync_ptsz)                                                                    \
	X(cuMemAllocFromPoolAsync)                                                                 \
	X(cuMemAllocFromPoolAsync_ptsz)                                                            \
	X(cuMemFree_v2)                                                                            \
	X(cuMemFreeAsync)                                                                          \
	X(cuMemFreeAsync_ptsz)                                                                     \
	X(cuMemCreate)                                                                             \
	X(cuMemRelease)                                                                            \
	X(cuMemGetInfo_v2)                                                                         \
	X(cuDeviceTotalMem_v2)                                                                     \
	X(cuDevicePrimaryCtxRetain)                                                                \
	X(cuCtxCreate_v2)                                                                          \
	X(nvmlDeviceGetMemoryInfo)
void *xv_mem_hook(const char *name);

/* launch.c */
void xv_launch_forget(void); /* after fork */
void *xv_launch_hook(const char *name);

#endif
