/*
 * fileio: whole-file reads with a size bound, and atomic replacement of a
 * file (write PATH.tmp, flush, fsync, rename), so a reader sees the old
 * file or the new one, never a partial result.
 */
#ifndef XP_FILEIO_H
#define XP_FILEIO_H

#include <stddef.h>
#include <stdio.h>

#include "err.h"

/* Read all of path (at most max bytes) into a new NUL-terminated buffer. */
int xp_read_file(const char *path, size_t max, char **buf, size_t *len, struct xp_err *err);

struct xp_afile {
	FILE *f; /* write here */
	char *path, *tmp;
};

/* Open path.tmp for writing (mode 0666 less the umask; _mode: this mode,
 * e.g. 0600 for a secret). */
int xp_afile_open(struct xp_afile *a, const char *path, struct xp_err *err);
int xp_afile_open_mode(struct xp_afile *a, const char *path, unsigned mode, struct xp_err *err);
/* Flush, fsync and rename over path; on any failure path.tmp is removed. */
int xp_afile_commit(struct xp_afile *a, struct xp_err *err);
/* Give up: close and remove path.tmp. NULL-safe for an unopened struct. */
void xp_afile_abort(struct xp_afile *a);

#endif
