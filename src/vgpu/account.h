/*
 * account: the layout of a job's vGPU account file (docs/design/vgpu.md),
 * shared by libxpool-vgpu.so, whose processes write it, and the agent,
 * which reads a replica's usage from it for its heartbeats (read only,
 * without the lock: every field it reads is one aligned word).
 */
#ifndef XP_VGPU_ACCOUNT_H
#define XP_VGPU_ACCOUNT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#define XV_MAXDEV   16
#define XV_SLOTS    256
#define XV_MAGIC    0x58505647u /* "XPVG" */
#define XV_VERSION  2
#define XV_WINDOW   50000000LL	 /* ns: the bucket's depth at a share of 1000 */
#define XV_REAP_NS  1000000000LL /* a dead process's share is back within this */
#define XV_MIB	    (1024ULL * 1024ULL)

/* One device of the account. */
struct xv_dev {
	_Atomic int64_t budget_ns; /* compute tokens; the hot path takes from it */
	int64_t refill_ns;	   /* clock of the last refill (mu) */
	uint64_t limit_bytes;	   /* 0: memory not limited */
	uint64_t used_bytes;	   /* sum of the slots' used (mu) */
	uint64_t peak_bytes;	   /* (mu) */
	uint32_t milli;		   /* compute share; 1000: not limited */
	uint32_t ooms;		   /* allocations refused at the cap (mu) */
	uint32_t dev_ooms;	   /* allocations within the cap the driver refused:
				    * the device itself full (overcommit) (mu) */
	int64_t filled_ns;	   /* every token ever put in the bucket (mu): what
				    * the job spent is filled_ns - budget_ns */
	int64_t clock_ns;	   /* the device clock at the last refill (mu) */
};

/* One process of the job. */
struct xv_slot {
	int32_t pid; /* 0: free */
	uint64_t start;
	uint64_t used[XV_MAXDEV];
};

/* The shared account file (mmap'd by every process of the job). */
struct xv_account {
	uint32_t magic, version, size, ndev;
	pthread_mutex_t mu; /* process-shared, robust */
	_Atomic uint32_t registered; /* processes that ever registered */
	uint32_t live;		     /* slots in use (mu) */
	int64_t scan_ns;	     /* last liveness scan (mu) */
	struct xv_dev dev[XV_MAXDEV];
	struct xv_slot slot[XV_SLOTS];
};

#endif
