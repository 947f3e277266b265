/*
 * board: priority between the jobs that share one GPU.
 *
 * Each job's compute share is a ceiling held by its own account's bucket
 * (launch.c). When the jobs on a GPU want more than the GPU has (their
 * shares sum above 1000, or a time-sliced GPU's kernels queue behind each
 * other), a higher-priority job's share is served first: a job's bucket
 * then fills at its *effective* share,
 *
 *     min(share, 1000 - the shares of the contending jobs of higher priority)
 *
 * floored at 0, so a lower-priority job yields what the higher ones are
 * entitled to and takes the rest, and jobs of equal priority keep their
 * own shares. A job contends while it launches: a job of higher priority
 * that has launched nothing for XV_BOARD_IDLE_NS holds nothing back.
 *
 * The board is one file per GPU (XPOOL_VGPU_BOARD, set by the agent to a
 * path per device under its work folder), mapped by every limited process
 * on that GPU. It holds 64 slots, one per job (replica), found by the job
 * account's identity (the file's device and inode), so all of a job's
 * processes share one. No lock: slots are claimed with a compare-and-swap
 * of the owner, and every field is one aligned atomic word. A slot whose
 * job has launched nothing for XV_BOARD_STALE_NS may be claimed by another.
 *
 * Costs: the launch hot path stores the clock into the slot on every 16th
 * launch of a shape (one atomic store, with the probe that launch already
 * makes); the refill, on the slow path, reads the 64 slots.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/mman.h>
#include <sys/stat.h>

#include "vgpu_int.h"

#define XV_BOARD_MAGIC	  0x58504244u /* "XPBD" */
#define XV_BOARD_SLOTS	  64
#define XV_BOARD_IDLE_NS  (4 * XV_WINDOW) /* 200 ms without a launch: not contending */
#define XV_BOARD_STALE_NS (20 * XV_REAP_NS)

struct xv_board_slot {
	_Atomic uint64_t owner; /* the job's account identity; 0: free */
	_Atomic int64_t prio;
	_Atomic uint32_t milli;
	_Atomic int64_t active_ns; /* the device clock at its last sampled launch */
};

struct xv_board {
	_Atomic uint32_t magic;
	uint32_t version;
	struct xv_board_slot slot[XV_BOARD_SLOTS];
};

static struct xv_board *board;
static struct xv_board_slot *mine;
static int64_t my_prio;

/* Two processes of one job that start at once (a launcher's workers) may
 * each claim a free slot: both settle on the lowest slot with the job's
 * identity and free the other, so the job is counted once. */
static struct xv_board_slot *dedupe(struct xv_board_slot *s, uint64_t id)
{
	for (struct xv_board_slot *t = board->slot; t < s; t++)
		if (atomic_load(&t->owner) == id) {
			uint64_t have = id;
			atomic_compare_exchange_strong(&s->owner, &have, 0);
			return t;
		}
	return s;
}

static int claim(uint64_t id, uint32_t milli)
{
	int64_t now = xv.now();
	for (int pass = 0; pass < 3; pass++)
		for (int i = 0; i < XV_BOARD_SLOTS; i++) {
			struct xv_board_slot *s = &board->slot[i];
			uint64_t have = atomic_load(&s->owner);
			int ok = have == id;
			/* pass 1: a free slot; pass 2: one left by a job long idle */
			if (!ok && pass == 1 && have == 0)
				ok = atomic_compare_exchange_strong(&s->owner, &have, id);
			if (!ok && pass == 2 && have != 0 &&
			    now - atomic_load(&s->active_ns) > XV_BOARD_STALE_NS)
				ok = atomic_compare_exchange_strong(&s->owner, &have, id);
			if (!ok)
				continue;
			atomic_store(&s->prio, my_prio);
			atomic_store(&s->milli, milli);
			atomic_store(&s->active_ns, now);
			mine = dedupe(s, id);
			return 0;
		}
	return -1;
}

void xv_board_open(const char *path, const char *acct, const char *prio, uint32_t milli)
{
	struct stat st;
	char *end = NULL;
	if (!path || !*path || milli >= 1000)
		return;
	if (prio && *prio) {
		my_prio = strtoll(prio, &end, 10);
		if (!end || *end)
			xv_log("XPOOL_VGPU_PRIORITY='%s' is malformed: priority 0", prio),
				my_prio = 0;
	}
	/* the job's identity: its account file (all of its processes share it) */
	if (!acct || stat(acct, &st) < 0) {
		xv_log("no account file to name this job on the GPU's board: no priority");
		return;
	}
	uint64_t id = ((uint64_t)st.st_dev << 40) ^ (uint64_t)st.st_ino;
	id = id ? id : 1;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || (fstat(fd, &st) == 0 && st.st_size < (off_t)sizeof(*board) &&
		       ftruncate(fd, sizeof(*board)) < 0)) {
		xv_log("board %s: cannot open: no priority between the GPU's jobs", path);
		if (fd >= 0)
			close(fd);
		return;
	}
	void *m = mmap(NULL, sizeof(*board), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return;
	board = m;
	uint32_t zero = 0; /* a new file is an empty board: the first to map it marks it */
	atomic_compare_exchange_strong(&board->magic, &zero, XV_BOARD_MAGIC);
	if (atomic_load(&board->magic) != XV_BOARD_MAGIC || claim(id, milli) < 0) {
		xv_log("board %s: %s: no priority between the GPU's jobs", path,
		       atomic_load(&board->magic) != XV_BOARD_MAGIC ? "not a board" : "full");
		munmap(m, sizeof(*board));
		board = NULL;
		mine = NULL;
	}
}

void xv_board_active(void)
{
	if (mine)
		atomic_store_explicit(&mine->active_ns, xv.now(), memory_order_relaxed);
}

uint32_t xv_board_share(uint32_t milli, int64_t now)
{
	if (!mine)
		return milli;
	uint64_t higher = 0;
	for (int i = 0; i < XV_BOARD_SLOTS; i++) {
		struct xv_board_slot *s = &board->slot[i];
		if (s == mine || !atomic_load_explicit(&s->owner, memory_order_relaxed) ||
		    atomic_load_explicit(&s->prio, memory_order_relaxed) <= my_prio ||
		    now - atomic_load_explicit(&s->active_ns, memory_order_relaxed) >
			    XV_BOARD_IDLE_NS)
			continue;
		higher += atomic_load_explicit(&s->milli, memory_order_relaxed);
	}
	if (higher >= 1000)
		return 0;
	return milli < 1000 - higher ? milli : (uint32_t)(1000 - higher);
}
