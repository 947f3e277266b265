/*
 * faultvfs: see faultvfs.h. The VFS is a copy of the default one with its
 * name, file size and xOpen replaced; a file is the wrapper followed by the
 * default VFS's own file, and its methods forward to that file's, but
 * xWrite and xSync, which consult the switches first.
 */
#include "faultvfs.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <string.h>

struct ffile {
	sqlite3_file base;
	sqlite3_file *real; /* right behind this struct */
};

static sqlite3_vfs *g_real, g_vfs;
static sqlite3_io_methods g_io;
static _Atomic long long g_budget = -1, g_refused;
static atomic_int g_fail_sync;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static int g_hold, g_held; /* under g_mu */

#define REAL(f) (((struct ffile *)(f))->real)

static int f_close(sqlite3_file *f)
{
	int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
	return rc;
}
static int f_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
	return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int f_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
	long long left = atomic_load(&g_budget);
	while (left >= 0) {
		if (left < n) {
			atomic_store(&g_budget, 0);
			atomic_fetch_add(&g_refused, 1);
			return SQLITE_FULL;
		}
		if (atomic_compare_exchange_weak(&g_budget, &left, left - n))
			break;
	}
	return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), size);
}
static int f_sync(sqlite3_file *f, int flags)
{
	pthread_mutex_lock(&g_mu);
	if (g_hold) {
		g_held++;
		pthread_cond_broadcast(&g_cv);
		while (g_hold)
			pthread_cond_wait(&g_cv, &g_mu);
		g_held--;
	}
	pthread_mutex_unlock(&g_mu);
	if (atomic_load(&g_fail_sync)) {
		atomic_fetch_add(&g_refused, 1);
		return SQLITE_IOERR_FSYNC;
	}
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int f_size(sqlite3_file *f, sqlite3_int64 *out)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), out);
}
static int f_lock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int f_unlock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int f_reserved(sqlite3_file *f, int *out)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int f_control(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int f_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int f_chars(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int f_shm_map(sqlite3_file *f, int pg, int sz, int ext, void volatile **pp)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, ext, pp);
}
static int f_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void f_shm_barrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int f_shm_unmap(sqlite3_file *f, int del)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int f_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **pp)
{
	return REAL(f)->pMethods->xFetch(REAL(f), o, n, pp);
}
static int f_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p)
{
	return REAL(f)->pMethods->xUnfetch(REAL(f), o, p);
}

static int f_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *out)
{
	struct ffile *f = (struct ffile *)file;
	(void)vfs;
	f->real = (sqlite3_file *)(f + 1);
	memset(f->real, 0, (size_t)g_real->szOsFile);
	int rc = g_real->xOpen(g_real, name, f->real, flags, out);
	/* SQLite calls xClose after a failed open only when pMethods is set */
	f->base.pMethods = f->real->pMethods ? &g_io : NULL;
	return rc;
}

int xp_faultvfs_register(void)
{
	if (g_real)
		return SQLITE_OK;
	sqlite3_initialize();
	sqlite3_vfs *real = sqlite3_vfs_find(NULL);
	if (!real)
		return SQLITE_ERROR;
	g_io = (sqlite3_io_methods){ 3,		  f_close,    f_read,	  f_write,
				     f_truncate,  f_sync,     f_size,	  f_lock,
				     f_unlock,	  f_reserved, f_control,  f_sector,
				     f_chars,	  f_shm_map,  f_shm_lock, f_shm_barrier,
				     f_shm_unmap, f_fetch,    f_unfetch };
	g_vfs = *real;
	g_vfs.zName = XP_FAULTVFS;
	g_vfs.szOsFile = (int)sizeof(struct ffile) + real->szOsFile;
	g_vfs.xOpen = f_open;
	g_vfs.pNext = NULL;
	g_real = real;
	return sqlite3_vfs_register(&g_vfs, 0);
}

void xp_faultvfs_full_after(long long bytes)
{
	atomic_store(&g_budget, bytes < 0 ? -1 : bytes);
}

void xp_faultvfs_fail_sync(int on)
{
	atomic_store(&g_fail_sync, on);
}

void xp_faultvfs_hold_sync(int on)
{
	pthread_mutex_lock(&g_mu);
	g_hold = on;
	pthread_cond_broadcast(&g_cv);
	pthread_mutex_unlock(&g_mu);
}

void xp_faultvfs_wait_held(int n)
{
	pthread_mutex_lock(&g_mu);
	while (g_held < n)
		pthread_cond_wait(&g_cv, &g_mu);
	pthread_mutex_unlock(&g_mu);
}

long long xp_faultvfs_refused(void)
{
	return atomic_load(&g_refused);
}
