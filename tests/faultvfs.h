/*
 * faultvfs: an SQLite VFS, "faulty", that wraps the default one and fails
 * on demand, for tests of what a full or failing disk does to the store
 * (no tmpfs mount, no root): once armed, writes fail with SQLITE_FULL when
 * a byte budget is spent, and syncs with SQLITE_IOERR_FSYNC. Open a store
 * with xp_store_opts.vfs = XP_FAULTVFS (or xp_ctl_opts.store_vfs). A sync
 * can also be held, to catch a commit in flight. The switches are
 * process-wide and safe from any thread.
 */
#ifndef XP_FAULTVFS_H
#define XP_FAULTVFS_H

#define XP_FAULTVFS "faulty"

/* Register the VFS (idempotent); 0 or an SQLite code. */
int xp_faultvfs_register(void);
/* Writes fail with SQLITE_FULL once this many more bytes are written; -1: never (the default). */
void xp_faultvfs_full_after(long long bytes);
/* 1: every xSync fails with SQLITE_IOERR_FSYNC; 0: none do (the default). */
void xp_faultvfs_fail_sync(int on);
/* 1: every xSync waits until this is set back to 0 (then fails or not, as fail_sync says). */
void xp_faultvfs_hold_sync(int on);
/* Block until at least n syncs are waiting in a hold. */
void xp_faultvfs_wait_held(int n);
/* Writes and syncs refused since registration. */
long long xp_faultvfs_refused(void);

#endif
