/*
 * store_seal: DIR/xpool.seal, the last committed seq kept outside SQLite.
 *
 * SQLite's write-ahead log checks its frames with a running checksum, and a
 * frame that fails it ends the log: that frame and every later one are
 * dropped without a word when the log is next read. A bit flipped in the
 * log, or a log cut short, thus loses committed transactions silently. The
 * seal is the witness: after each commit that wrote records the store
 * thread writes the last seq of the batch and that record's checksum here
 * (and fsyncs it when sync=1) before any waiter of the batch is called. A
 * journal that ends below the sealed seq has lost acknowledged records, and
 * the check at open (store_check.c) says so.
 *
 * The seal only ever trails the database: it is written after the COMMIT
 * returned, so a crash between the two leaves a seal one batch behind,
 * which is harmless (the journal is ahead of it and the next commit moves
 * it on). It is never ahead of what SQLite made durable, so it cannot
 * refuse a store that is whole.
 *
 * Format: two slots of 64 bytes, each one line of text,
 *
 *   xpool-seal 1 seq=00000000000000000343 rec=1a2b3c4d sum=5e6f7a8b\n
 *
 * rec is the CRC-32C of record seq (store.h), sum the CRC-32C of the 50
 * bytes before " sum=". Updates alternate between the slots, so a write torn
 * by a power cut leaves the other slot, one batch older, intact; the valid
 * slot with the higher seq is the seal. A file with no valid slot is
 * damaged; its absence is reported as such (both are refusals at open).
 */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/crc32c.h"
#include "lib/xalloc.h"

#define SLOT   64
#define SUMMED 50 /* the bytes before " sum=" */

static void format_slot(char out[SLOT + 1], uint64_t seq, uint32_t rec)
{
	snprintf(out, SLOT + 1, "xpool-seal 1 seq=%020" PRIu64 " rec=%08" PRIx32, seq, rec);
	uint32_t sum = xp_crc32c(0, out, SUMMED);
	snprintf(out + SUMMED, SLOT + 1 - SUMMED, " sum=%08" PRIx32 "\n", sum);
}

/* 1 and *seq, *rec when b holds a valid slot. */
static int parse_slot(const char *b, uint64_t *seq, uint32_t *rec)
{
	char want[SLOT + 1];
	unsigned long long q;
	unsigned int r;
	if (memcmp(b, "xpool-seal 1 seq=", 17) != 0 ||
	    sscanf(b + 17, "%20llu rec=%8x", &q, &r) != 2)
		return 0;
	format_slot(want, (uint64_t)q, (uint32_t)r);
	if (memcmp(b, want, SLOT) != 0) /* the sum, and the exact spelling */
		return 0;
	*seq = (uint64_t)q;
	*rec = (uint32_t)r;
	return 1;
}

int xp_seal_read(const char *path, struct xp_seal *out, struct xp_err *err)
{
	char b[2 * SLOT];
	memset(out, 0, sizeof(*out));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return xp_errf(err, XP_ENOENT, "%s: missing", path);
		return xp_errf(err, -errno, "%s: %s", path, strerror(errno));
	}
	ssize_t n = pread(fd, b, sizeof(b), 0);
	int e = errno;
	close(fd);
	if (n < 0)
		return xp_errf(err, -e, "%s: %s", path, strerror(e));
	for (int i = 0; i < 2; i++) {
		uint64_t seq;
		uint32_t rec;
		if ((i + 1) * SLOT > n || !parse_slot(b + i * SLOT, &seq, &rec))
			continue;
		if (!out->found || seq > out->seq) {
			out->seq = seq;
			out->rec = rec;
			out->slot = i;
		}
		out->found = 1;
	}
	if (!out->found)
		return xp_errf(err, XP_ECORRUPT,
			       "%s: damaged (%zd bytes, no slot passes its checksum)", path, n);
	return 0;
}

int xp_seal_put(int fd, int slot, uint64_t seq, uint32_t rec, int sync)
{
	char b[SLOT + 1];
	format_slot(b, seq, rec);
	ssize_t n = pwrite(fd, b, SLOT, (off_t)slot * SLOT);
	if (n != SLOT)
		return n < 0 ? -errno : -EIO;
	if (sync && fdatasync(fd) != 0)
		return -errno;
	return 0;
}

int xp_seal_create(const char *path, uint64_t seq, uint32_t rec, int sync, struct xp_err *err)
{
	size_t n = strlen(path);
	char *tmp = xmalloc(n + 5);
	int rc = 0, fd;
	memcpy(tmp, path, n);
	memcpy(tmp + n, ".new", 5);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = xp_errf(err, -errno, "%s: %s", tmp, strerror(errno));
	} else {
		if ((rc = xp_seal_put(fd, 0, seq, rec, 0)) == 0)
			rc = xp_seal_put(fd, 1, seq, rec, sync);
		close(fd);
		if (rc < 0)
			xp_errf(err, rc, "%s: %s", tmp, strerror(-rc));
		else if (rename(tmp, path) != 0)
			rc = xp_errf(err, -errno, "%s: rename: %s", tmp, strerror(errno));
	}
	if (rc < 0)
		unlink(tmp);
	free(tmp);
	return rc;
}
