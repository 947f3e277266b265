/*
 * test_store_crash: durable before acknowledged, under SIGKILL.
 *
 * A forked child opens a store (sync=1) and appends records as fast as its
 * commits allow, a snapshot every 700 records, and writes a record's seq to
 * a pipe only from that record's when_durable callback — that is the
 * acknowledgement a client would get. The parent kills the child with
 * SIGKILL at a random moment (seeded: XP_TEST_SEED overrides), anywhere from
 * the store's creation to the middle of a commit, then reopens the store
 * and loads it: every acknowledged seq must be there (in the journal with
 * its exact body, or covered by the snapshot), seqs contiguous from the
 * snapshot (or 1), nothing twice, nothing from an earlier round lost, and a
 * new append continues from the last seq. Five rounds on the same store.
 *
 * SIGKILL loses the process, not the page cache: this proves the ordering
 * of acknowledgements and commits and SQLite's recovery of a WAL cut off
 * mid-transaction, not the fsync itself (that is synchronous=FULL's job).
 */
#define _GNU_SOURCE /* nftw */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/rng.h"
#include "store/store.h"

#define ROUNDS 5

/* The body of record seq: variable length, a function of seq alone. */
static size_t body_of(uint64_t seq, char *buf, size_t cap)
{
	int pad = (int)(seq * 7919 % 300);
	int n = snprintf(buf, cap, "{\"seq\":%llu,\"pad\":\"%0*d\"}", (unsigned long long)seq, pad,
			 0);
	return (size_t)n;
}

static size_t snap_of(uint64_t seq, char *buf, size_t cap)
{
	return (size_t)snprintf(buf, cap, "snapshot as of %llu", (unsigned long long)seq);
}

static int ack_fd;

static void ack(void *arg, int rc)
{
	uint64_t seq = (uint64_t)(uintptr_t)arg;
	if (rc != 0)
		_exit(5);
	if (write(ack_fd, &seq, sizeof(seq)) != (ssize_t)sizeof(seq))
		_exit(6);
}

static void child(const char *dir, uint64_t seed)
{
	struct xp_err err = { 0 };
	struct xp_store *s;
	struct xp_rng rng;
	char buf[512];

	xp_rng_seed(&rng, seed);
	if (xp_store_open(dir, NULL, &s, &err) != 0) {
		fprintf(stderr, "child: %s\n", err.text);
		_exit(2);
	}
	for (;;) {
		uint64_t next = xp_store_last_seq(s) + 1;
		size_t len = body_of(next, buf, sizeof(buf));
		if (xp_store_append(s, "rec", buf, len, (int64_t)next) != next)
			_exit(3);
		xp_store_when_durable(s, ack, (void *)(uintptr_t)next);
		if (next % 700 == 0) {
			len = snap_of(next, buf, sizeof(buf));
			xp_store_snapshot(s, next, buf, len);
		}
		while (xp_store_last_seq(s) - xp_store_durable_seq(s) > 256)
			usleep(100);
		if (xp_rng_below(&rng, 64) == 0)
			usleep((useconds_t)xp_rng_below(&rng, 2000));
	}
}

struct acks {
	uint64_t *v;
	size_t n, cap;
	unsigned char part[8];
	size_t npart;
};

static void take(struct acks *a, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		a->part[a->npart++] = b[i];
		if (a->npart == 8) {
			uint64_t seq;
			memcpy(&seq, a->part, 8);
			a->npart = 0;
			if (a->n == a->cap) {
				a->cap = a->cap ? a->cap * 2 : 1024;
				a->v = realloc(a->v, a->cap * sizeof(*a->v));
			}
			a->v[a->n++] = seq;
		}
	}
}

/* Read acks until the deadline (or EOF when deadline is 0). */
static void drain(int fd, struct acks *a, uint64_t deadline)
{
	unsigned char b[4096];
	for (;;) {
		int wait_ms = -1;
		if (deadline) {
			uint64_t now = xp_mono_ns();
			if (now >= deadline)
				return;
			wait_ms = (int)((deadline - now) / 1000000) + 1;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, wait_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		ssize_t n = read(fd, b, sizeof(b));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			return;
		take(a, b, (size_t)n);
	}
}

struct loaded {
	uint64_t snap_seq, next, last;
	int bad;
	char why[256];
};

static int on_snap(void *ctx, uint64_t seq, const char *body, size_t len)
{
	struct loaded *l = ctx;
	char want[128];
	size_t n = snap_of(seq, want, sizeof(want));
	if (len != n || memcmp(body, want, n) != 0) {
		snprintf(l->why, sizeof(l->why), "snapshot %llu has body %.*s",
			 (unsigned long long)seq, (int)len, body);
		l->bad = 1;
		return -1;
	}
	l->snap_seq = seq;
	l->next = seq + 1;
	l->last = seq;
	return 0;
}

static int on_rec(void *ctx, const struct xp_store_rec *r)
{
	struct loaded *l = ctx;
	char want[512];
	size_t n = body_of(r->seq, want, sizeof(want));
	if (r->seq != l->next || r->len != n || memcmp(r->body, want, n) != 0 ||
	    strcmp(r->type, "rec") != 0 || r->at_ms != (int64_t)r->seq) {
		snprintf(l->why, sizeof(l->why), "record %llu (expected %llu): %.*s",
			 (unsigned long long)r->seq, (unsigned long long)l->next, (int)r->len,
			 r->body);
		l->bad = 1;
		return -1;
	}
	l->next++;
	l->last = r->seq;
	return 0;
}

static void test_crash(void **state)
{
	(void)state;
	char root[] = "/tmp/xpcrashXXXXXX";
	char dir[64];
	struct xp_rng rng;
	uint64_t seed = 20240611, prev_last = 0, total_acked = 0;
	const char *env = getenv("XP_TEST_SEED");

	if (env)
		seed = strtoull(env, NULL, 10);
	xp_rng_seed(&rng, seed);
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/data", root);

	for (int round = 0; round < ROUNDS; round++) {
		int fds[2];
		struct acks a = { 0 };
		/* Round 0 dies young, likely while the store is being created. */
		uint64_t delay_ms = round ? 20 + xp_rng_below(&rng, 400) : xp_rng_below(&rng, 4);
		assert_int_equal(pipe(fds), 0);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			ack_fd = fds[1];
			child(dir, seed + (uint64_t)round);
			_exit(1);
		}
		close(fds[1]);
		drain(fds[0], &a, xp_mono_ns() + delay_ms * 1000000);
		kill(pid, SIGKILL);
		int status = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		drain(fds[0], &a, 0);
		close(fds[0]);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			fail_msg("round %d: the child ended by itself (status %d)", round, status);

		/* Acknowledgements come in seq order, each once. */
		for (size_t i = 1; i < a.n; i++)
			if (a.v[i] <= a.v[i - 1])
				fail_msg("round %d: ack %llu after %llu", round,
					 (unsigned long long)a.v[i],
					 (unsigned long long)a.v[i - 1]);
		uint64_t max_ack = a.n ? a.v[a.n - 1] : 0;

		struct xp_err err = { 0 };
		struct xp_store *s = NULL;
		struct loaded l = { .next = 1 };
		if (xp_store_open(dir, NULL, &s, &err) != 0)
			fail_msg("round %d: reopen: %s", round, err.text);
		int rc = xp_store_load(s, on_snap, on_rec, &l, &err);
		if (rc != 0 || l.bad)
			fail_msg("round %d: load %d: %s %s", round, rc, err.text, l.why);
		assert_int_equal(l.last, xp_store_last_seq(s));
		if (max_ack > l.last)
			fail_msg("round %d: seq %llu was acknowledged but the store ends at %llu",
				 round, (unsigned long long)max_ack, (unsigned long long)l.last);
		if (l.last < prev_last)
			fail_msg("round %d: the store went back from %llu to %llu", round,
				 (unsigned long long)prev_last, (unsigned long long)l.last);
		print_message(
			"round %d: killed after %llu ms: %zu acknowledged (last %llu), store "
			"ends at %llu (%llu unacknowledged survived), snapshot %llu\n",
			round, (unsigned long long)delay_ms, a.n, (unsigned long long)max_ack,
			(unsigned long long)l.last,
			(unsigned long long)(l.last - (max_ack > prev_last ? max_ack : prev_last)),
			(unsigned long long)l.snap_seq);
		char buf[512];
		size_t len = body_of(l.last + 1, buf, sizeof(buf));
		assert_int_equal(xp_store_append(s, "rec", buf, len, (int64_t)(l.last + 1)),
				 l.last + 1);
		assert_int_equal(xp_store_sync(s), 0);
		xp_store_close(s);
		prev_last = l.last + 1;
		total_acked += a.n;
		free(a.v);
	}
	assert_true(total_acked > 0);
	xp_test_rmdir(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crash),
	};
	return xp_run_tests(tests, NULL, NULL);
}
