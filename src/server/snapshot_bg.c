/*
 * snapshot_bg: snapshots off the owner thread.
 *
 * Serialising the whole state takes ~20 us per job (docs/results/
 * controller.md, problem 1), and on the owner thread that stalls every
 * command and the cycle for as long - seconds on a long-lived server. So
 * the owner fork()s instead: the child gets a copy-on-write image of the
 * state exactly as of st->seq, serialises it into DATA/snapshot.tmp and
 * _exit()s; the owner goes on serving at once. On a later tick, once the
 * child has exited 0, the owner reads the file and queues it to the store
 * (xp_store_snapshot, written in order with the journal), then removes it.
 * One child at a time; a failed child is logged and the next snapshot is
 * tried after another snapshot_every records.
 *
 * The child runs only the pure serialiser (malloc, jansson) and write(2):
 * it touches no lock another thread may hold except malloc's, which glibc
 * resets across fork. Sanitizer builds serialise in-line instead, since
 * their allocators are not fork-safe in a threaded process; fork failure
 * falls back to in-line too.
 */
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../lib/clock.h"
#include "../lib/fileio.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define XP_SNAP_FORK 0
#else
#define XP_SNAP_FORK 1
#endif

static void snap_path(const struct xp_ctl *ctl, char *buf, size_t len)
{
	snprintf(buf, len, "%s/snapshot.tmp", ctl->o.data);
}

static void snap_inline(struct xp_ctl *ctl)
{
	uint64_t t0 = xp_mono_ns();
	char *s = xp_state_snapshot(ctl->st);
	xp_store_snapshot(ctl->store, ctl->st->seq, s, strlen(s));
	free(s);
	ctl->snap.done++;
	ctl->snap.last_ns = xp_mono_ns() - t0;
}

/* the child: serialise, write, leave without running any exit handler */
static void snap_child(struct xp_ctl *ctl, const char *path)
{
	char *s = xp_state_snapshot(ctl->st);
	size_t len = strlen(s), off = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		_exit(2);
	while (off < len) {
		ssize_t n = write(fd, s + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(3);
		off += (size_t)n;
	}
	_exit(close(fd) == 0 ? 0 : 4);
}

void xp_snap_start(struct xp_ctl *ctl)
{
	char path[4200];
	if (ctl->snap.pid > 0)
		return; /* one at a time: the next is due when this one lands */
	ctl->since_snapshot = 0;
	if (!XP_SNAP_FORK || ctl->o.snapshot_inline) {
		snap_inline(ctl);
		return;
	}
	snap_path(ctl, path, sizeof(path));
	uint64_t t0 = xp_mono_ns();
	pid_t pid = fork();
	if (pid == 0)
		snap_child(ctl, path);
	if (pid < 0) {
		fprintf(stderr, "xpool server: snapshot: fork: %s; writing it in-line\n",
			strerror(errno));
		snap_inline(ctl);
		return;
	}
	ctl->snap.pid = pid;
	ctl->snap.seq = ctl->st->seq;
	ctl->snap.started_ns = t0;
	ctl->snap.fork_ns = xp_mono_ns() - t0;
}

/* the owner's tick (block: wait for the child, at shutdown) */
void xp_snap_poll(struct xp_ctl *ctl, int block)
{
	char path[4200];
	int status;
	if (ctl->snap.pid <= 0)
		return;
	pid_t r = waitpid(ctl->snap.pid, &status, block ? 0 : WNOHANG);
	if (r == 0 || (r < 0 && errno == EINTR))
		return;
	ctl->snap.pid = 0;
	snap_path(ctl, path, sizeof(path));
	if (r < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "xpool server: snapshot at seq %llu failed (child status %d)\n",
			(unsigned long long)ctl->snap.seq, r < 0 ? -1 : status);
		unlink(path);
		return;
	}
	char *buf = NULL;
	size_t len = 0;
	struct xp_err err = { 0 };
	if (xp_read_file(path, (size_t)16 << 30, &buf, &len, &err) < 0) {
		fprintf(stderr, "xpool server: snapshot at seq %llu: %s\n",
			(unsigned long long)ctl->snap.seq, err.text);
	} else {
		xp_store_snapshot(ctl->store, ctl->snap.seq, buf, len);
		ctl->snap.done++;
		ctl->snap.last_ns = xp_mono_ns() - ctl->snap.started_ns;
	}
	free(buf);
	unlink(path);
}
