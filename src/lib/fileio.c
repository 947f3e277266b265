/* fileio: bounded whole-file reads and atomic file replacement (see fileio.h). */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xalloc.h"

int xp_read_file(const char *path, size_t max, char **buf, size_t *len, struct xp_err *err)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0, cap = 1 << 16;
	char *b;

	if (!f)
		return xp_errf(err, -errno, "%s: %s", path, strerror(errno));
	b = xmalloc(cap + 1);
	for (;;) {
		n += fread(b + n, 1, cap - n, f);
		if (n < cap)
			break;
		if (cap > max) {
			fclose(f);
			free(b);
			return xp_errf(err, XP_ETOOBIG, "%s: larger than %zu bytes", path, max);
		}
		cap *= 2;
		b = xrealloc(b, cap + 1);
	}
	int bad = ferror(f);
	fclose(f);
	if (bad || n > max) {
		free(b);
		return bad ? xp_errf(err, XP_EIO, "%s: read error", path)
			   : xp_errf(err, XP_ETOOBIG, "%s: larger than %zu bytes", path, max);
	}
	b[n] = '\0';
	*buf = b;
	*len = n;
	return 0;
}

int xp_afile_open(struct xp_afile *a, const char *path, struct xp_err *err)
{
	return xp_afile_open_mode(a, path, 0666, err);
}

int xp_afile_open_mode(struct xp_afile *a, const char *path, unsigned mode, struct xp_err *err)
{
	size_t len = strlen(path);
	memset(a, 0, sizeof(*a));
	a->path = xstrdup(path);
	a->tmp = xmalloc(len + 5);
	memcpy(a->tmp, path, len);
	memcpy(a->tmp + len, ".tmp", 5);
	int fd = open(a->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, (mode_t)mode);
	a->f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!a->f && fd >= 0)
		close(fd);
	if (!a->f) {
		int rc = xp_errf(err, -errno, "%s: %s", a->tmp, strerror(errno));
		free(a->path);
		free(a->tmp);
		memset(a, 0, sizeof(*a));
		return rc;
	}
	return 0;
}

void xp_afile_abort(struct xp_afile *a)
{
	if (a->f) {
		fclose(a->f);
		unlink(a->tmp);
	}
	free(a->path);
	free(a->tmp);
	memset(a, 0, sizeof(*a));
}

int xp_afile_commit(struct xp_afile *a, struct xp_err *err)
{
	int rc = 0;
	if (fflush(a->f) != 0 || ferror(a->f) || fsync(fileno(a->f)) != 0)
		rc = xp_errf(err, errno ? -errno : XP_EIO, "%s: write failed: %s", a->tmp,
			     strerror(errno));
	if (fclose(a->f) != 0 && rc == 0)
		rc = xp_errf(err, -errno, "%s: close failed: %s", a->tmp, strerror(errno));
	a->f = NULL;
	if (rc == 0 && rename(a->tmp, a->path) != 0)
		rc = xp_errf(err, -errno, "%s: %s", a->path, strerror(errno));
	if (rc < 0)
		unlink(a->tmp);
	free(a->path);
	free(a->tmp);
	memset(a, 0, sizeof(*a));
	return rc;
}
