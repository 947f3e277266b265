/*
 * account: the job's shared account, one file per task folder
 * (XPOOL_VGPU_ACCOUNT), mapped by each of the job's processes.
 *
 * The first process creates it: it takes flock() on the file, sizes and
 * fills it, and sets the magic last; flock is released if it dies, so a
 * half-made file is remade by the next process. The mutex is
 * process-shared and robust: a process killed while holding it leaves it
 * EOWNERDEAD, and the next owner rebuilds the sums from the slots (the
 * slots are written before the sums, so they are the truth).
 *
 * Memory: a reservation happens under the mutex before the driver is
 * asked, so concurrent processes can never pass the cap together. A slot
 * remembers what its process holds; a process that is gone (no /proc
 * entry, a zombie, or another start time: pid reuse) gives it back at the
 * next liveness scan. A scan runs when the last is XV_REAP_NS old, and
 * always before an allocation is refused, so a dead process's memory is
 * back at once for whoever needs it and never stale more than a second
 * in what is reported.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vgpu_int.h"

static void fill(struct xv_account *a, const struct xv_limits *lim)
{
	pthread_mutexattr_t ma;
	memset(a, 0, sizeof(*a));
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&a->mu, &ma);
	pthread_mutexattr_destroy(&ma);
	a->version = XV_VERSION;
	a->size = sizeof(*a);
	a->ndev = lim->ndev;
	int64_t now = xv.now();
	for (unsigned i = 0; i < lim->ndev; i++) {
		a->dev[i].limit_bytes = lim->mem_bytes[i];
		a->dev[i].milli = lim->milli[i];
		a->dev[i].refill_ns = a->dev[i].clock_ns = now;
		a->dev[i].filled_ns = XV_WINDOW * lim->milli[i] / 1000;
		atomic_store(&a->dev[i].budget_ns, a->dev[i].filled_ns);
	}
	a->scan_ns = now;
	__atomic_store_n(&a->magic, XV_MAGIC, __ATOMIC_RELEASE);
}

struct xv_account *xv_account_open(const char *path, const struct xv_limits *lim)
{
	struct xv_account *a;
	if (!path || !*path) {
		a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (a == MAP_FAILED)
			return NULL;
		fill(a, lim);
		return a;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		xv_log("account %s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
	}
	if (fstat(fd, &st) != 0 || (st.st_size != 0 && st.st_size != (off_t)sizeof(*a)) ||
	    (st.st_size == 0 && ftruncate(fd, sizeof(*a)) != 0)) {
		xv_log("account %s: not an account of this version", path);
		close(fd);
		return NULL;
	}
	a = mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (a != MAP_FAILED && __atomic_load_n(&a->magic, __ATOMIC_ACQUIRE) != XV_MAGIC)
		fill(a, lim); /* new, or its maker died before the magic */
	flock(fd, LOCK_UN);
	close(fd);
	if (a == MAP_FAILED)
		return NULL;
	if (a->version != XV_VERSION || a->size != sizeof(*a)) {
		munmap(a, sizeof(*a));
		xv_log("account %s: version %u, not %u", path, a->version, XV_VERSION);
		return NULL;
	}
	return a;
}

/* the sums, rebuilt from the slots */
static void rebuild(struct xv_account *a)
{
	a->live = 0;
	for (unsigned d = 0; d < a->ndev; d++)
		a->dev[d].used_bytes = 0;
	for (unsigned s = 0; s < XV_SLOTS; s++) {
		if (!a->slot[s].pid)
			continue;
		a->live++;
		for (unsigned d = 0; d < a->ndev; d++)
			a->dev[d].used_bytes += a->slot[s].used[d];
	}
}

static void lock(struct xv_account *a)
{
	int rc = pthread_mutex_lock(&a->mu);
	if (rc == EOWNERDEAD) {
		rebuild(a);
		pthread_mutex_consistent(&a->mu);
	}
}

static void unlock(struct xv_account *a)
{
	pthread_mutex_unlock(&a->mu);
}

static void free_slot(struct xv_account *a, unsigned s)
{
	for (unsigned d = 0; d < a->ndev; d++) {
		a->dev[d].used_bytes -= a->slot[s].used[d];
		a->slot[s].used[d] = 0;
	}
	a->slot[s].pid = 0;
	a->live--;
}

/* give back what dead processes held (mu held) */
static void reap(struct xv_account *a, int64_t now)
{
	a->scan_ns = now;
	for (unsigned s = 0; s < XV_SLOTS; s++) {
		struct xv_slot *sl = &a->slot[s];
		char state = 0;
		if (!sl->pid || sl->pid == xv.pid)
			continue;
		uint64_t start = xv_proc_start(sl->pid, &state);
		if (!start || start != sl->start || state == 'Z' || state == 'X')
			free_slot(a, s);
	}
}

static void reap_if_due(struct xv_account *a)
{
	int64_t now = xv.now();
	if (now - a->scan_ns >= XV_REAP_NS || now < a->scan_ns)
		reap(a, now);
}

int xv_register(void)
{
	struct xv_account *a = xv.acct;
	uint64_t start = xv_proc_start(xv.pid, NULL);
	lock(a);
	int s = -1;
	for (int pass = 0; pass < 2 && s < 0; pass++) {
		if (pass)
			reap(a, xv.now());
		for (unsigned i = 0; i < XV_SLOTS && s < 0; i++)
			if (!a->slot[i].pid)
				s = (int)i;
	}
	if (s >= 0) {
		memset(&a->slot[s], 0, sizeof(a->slot[s]));
		a->slot[s].start = start;
		a->slot[s].pid = xv.pid;
		a->live++;
		atomic_fetch_add(&a->registered, 1);
	}
	unlock(a);
	xv.slot = s;
	return s;
}

void xv_unregister(void)
{
	struct xv_account *a = xv.acct;
	if (!a || xv.slot < 0)
		return;
	lock(a);
	if (a->slot[xv.slot].pid == xv.pid)
		free_slot(a, (unsigned)xv.slot);
	unlock(a);
	xv.slot = -1;
}

int xv_reserve(int dev, uint64_t bytes)
{
	struct xv_account *a = xv.acct;
	struct xv_dev *d = &a->dev[dev];
	int ok = 0;
	if (xv.slot < 0)
		return -1;
	lock(a);
	reap_if_due(a);
	if (d->used_bytes + bytes > d->limit_bytes || d->used_bytes + bytes < bytes)
		reap(a, xv.now()); /* before refusing, take back what the dead held */
	if (d->used_bytes + bytes <= d->limit_bytes && d->used_bytes + bytes >= bytes) {
		a->slot[xv.slot].used[dev] += bytes; /* slot first: rebuild() trusts it */
		d->used_bytes += bytes;
		if (d->used_bytes > d->peak_bytes)
			d->peak_bytes = d->used_bytes;
		ok = 1;
	} else {
		d->ooms++;
	}
	unlock(a);
	return ok ? 0 : -1;
}

void xv_alloc_failed(int dev, uint64_t bytes, int rc)
{
	xv_unreserve(dev, bytes);
	if (rc == CUDA_ERROR_OUT_OF_MEMORY && xv.slot >= 0) {
		lock(xv.acct);
		xv.acct->dev[dev].dev_ooms++;
		unlock(xv.acct);
	}
}

void xv_unreserve(int dev, uint64_t bytes)
{
	struct xv_account *a = xv.acct;
	if (xv.slot < 0)
		return;
	lock(a);
	uint64_t *mine = &a->slot[xv.slot].used[dev];
	if (bytes > *mine)
		bytes = *mine;
	*mine -= bytes;
	a->dev[dev].used_bytes -= bytes;
	unlock(a);
}

uint64_t xv_used(int dev)
{
	struct xv_account *a = xv.acct;
	lock(a);
	reap_if_due(a);
	uint64_t u = a->dev[dev].used_bytes;
	unlock(a);
	return u;
}

int64_t xv_refill(int dev, uint32_t *eff)
{
	struct xv_account *a = xv.acct;
	struct xv_dev *d = &a->dev[dev];
	int64_t now = xv.now();
	uint32_t milli = dev == 0 ? xv_board_share(d->milli, now) : d->milli;
	*eff = milli;
	lock(a);
	reap_if_due(a);
	int64_t dt = now - d->refill_ns;
	if (dt > 0) {
		int64_t add = dt * milli / 1000, depth = XV_WINDOW * milli / 1000;
		int64_t b = atomic_load(&d->budget_ns), nb;
		do {
			nb = b + add > depth ? (b > depth ? b : depth) : b + add;
		} while (!atomic_compare_exchange_weak(&d->budget_ns, &b, nb));
		d->filled_ns += nb - b;
		d->refill_ns = d->clock_ns = now;
	}
	int64_t left = atomic_load(&d->budget_ns);
	unlock(a);
	return left;
}
