/*
 * test_etcd_store: the store API on a real etcd (Debian's etcd 3.4, started
 * here on free loopback ports and stopped by its pid; skipped when etcd is
 * not installed):
 *  - fencing: a store whose leader key was taken from it (deleted, and
 *    another store elected) cannot land a record: its sync fails with
 *    "fenced", and the new leader's load shows nothing of it;
 *  - group commit: 1,000 records in one batch (more than one txn of 127)
 *    load back in order, each body intact; a body over the txn limit is
 *    refused with the seq and the size;
 *  - snapshots: a 1.5 MiB snapshot (several chunks over several txns) loads
 *    back byte for byte with the journal after it; a read from before it
 *    answers XP_ENOENT (pruned); a later snapshot deletes the older chunks;
 *  - a second store on the same prefix in follow mode becomes leader when
 *    the first closes (gives its lease back), and continues the seqs;
 *  - one deadline per call, shared among the endpoints: hung members before
 *    the live one do not take the call's whole time each.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/etcd.h"
#include "store/store.h"
#include "testutil.h"

static pid_t etcd_pid = -1;
static char dir[] = "/tmp/xp-etcd-store-XXXXXX";
static char url[128];
static int prefixes;

static int free_port(void)
{
	struct sockaddr_in a = { 0 };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &al);
	close(fd);
	return ntohs(a.sin_port);
}

static int etcd_up(void)
{
	struct xp_err err = { 0 };
	struct xp_etcd *e = NULL;
	int64_t rev = 0;
	if (xp_etcd_create(url, NULL, &e, &err) < 0)
		return 0;
	int ok = xp_etcd_range(e, "x", 1, NULL, 0, 0, 1000, NULL, NULL, NULL, &rev, &err) == 0;
	xp_etcd_destroy(e);
	return ok;
}

static int setup(void **state)
{
	(void)state;
	const char *bin = access("/usr/bin/etcd", X_OK) == 0 ? "/usr/bin/etcd" : NULL;
	if (!bin) {
		printf("SKIP: etcd is not installed (scripts/deps.sh installs etcd-server)\n");
		return 0;
	}
	if (!mkdtemp(dir))
		return -1;
	int cp = free_port(), pp = free_port();
	char curl[64], purl[64], cluster[96], data[160];
	snprintf(curl, sizeof(curl), "http://127.0.0.1:%d", cp);
	snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", pp);
	snprintf(cluster, sizeof(cluster), "m=%s", purl);
	snprintf(data, sizeof(data), "%s/etcd", dir);
	snprintf(url, sizeof(url), "etcd://127.0.0.1:%d", cp);
	etcd_pid = fork();
	if (etcd_pid == 0) {
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		execl(bin, "etcd", "--logger", "zap", "--log-level", "error", "--name", "m",
		      "--data-dir", data, "--listen-client-urls", curl, "--advertise-client-urls",
		      curl, "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
		      "--initial-cluster", cluster, "--experimental-enable-lease-checkpoint",
		      (char *)NULL);
		_exit(127);
	}
	long long end = xp_test_now_ms() + 60000;
	while (!etcd_up()) {
		if (xp_test_now_ms() > end)
			return -1;
		usleep(50000);
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (etcd_pid > 0) {
		kill(etcd_pid, SIGTERM);
		waitpid(etcd_pid, NULL, 0);
		xp_test_rmdir(dir);
	}
	return 0;
}

/* a fresh prefix per test: the tests share one etcd */
static const char *store_url(char *buf, size_t n)
{
	snprintf(buf, n, "%s/t%d/", url, ++prefixes);
	return buf;
}

static struct xp_store *open_store(const char *u, int follow, struct xp_err *err)
{
	struct xp_store_opts o = { .etcd = u, .lease_ms = 2000, .advertise = "me",
				   .follow = follow };
	struct xp_store *s = NULL;
	return xp_store_open(NULL, &o, &s, err) == 0 ? s : NULL;
}

struct collected {
	uint64_t first, last, n;
	size_t bytes;
	int order_ok;
	char *snap;
	size_t snap_len;
};

static int on_snap(void *ctx, uint64_t seq, const char *body, size_t len)
{
	struct collected *c = ctx;
	(void)seq;
	c->snap = malloc(len + 1);
	memcpy(c->snap, body, len);
	c->snap_len = len;
	return 0;
}

static int on_rec(void *ctx, const struct xp_store_rec *r)
{
	struct collected *c = ctx;
	char want[64];
	snprintf(want, sizeof(want), "{\"n\":%llu}", (unsigned long long)r->seq);
	if (!c->n)
		c->first = r->seq;
	else if (r->seq != c->last + 1)
		c->order_ok = 0;
	if (r->len < 20000 && (r->len != strlen(want) || memcmp(r->body, want, r->len)))
		c->order_ok = 0;
	c->last = r->seq;
	c->n++;
	c->bytes += r->len;
	return 0;
}

static void append_n(struct xp_store *s, int n)
{
	for (int i = 0; i < n; i++) {
		char b[64];
		int len = snprintf(b, sizeof(b), "{\"n\":%llu}",
				   (unsigned long long)xp_store_last_seq(s) + 1);
		assert_true(xp_store_append(s, "t.rec", b, (size_t)len, 1) > 0);
	}
}

static void test_fencing(void **state)
{
	(void)state;
	if (etcd_pid < 0)
		xp_skip();
	char u[160], key[256];
	struct xp_err err = { 0 };
	struct xp_store *a = open_store(store_url(u, sizeof(u)), 0, &err);
	assert_non_null(a);
	append_n(a, 3);
	assert_int_equal(xp_store_sync(a), 0);
	/* take the leader key away from a (as its lease's expiry would) and elect b */
	struct xp_etcd *e = NULL;
	assert_int_equal(xp_etcd_create(u, NULL, &e, &err), 0);
	size_t kl = (size_t)snprintf(key, sizeof(key), "%sleader", xp_etcd_prefix(e));
	struct xp_etcd_txn t;
	int ok = 0;
	xp_etcd_txn_start(&t);
	xp_etcd_txn_delete(&t, key, kl, NULL, 0);
	assert_int_equal(xp_etcd_txn_run(e, &t, 2000, &ok, NULL, &err), 0);
	xp_etcd_txn_free(&t);
	xp_etcd_destroy(e);
	struct xp_store *b = open_store(u, 0, &err);
	assert_non_null(b);
	assert_true(xp_store_epoch(b) > xp_store_epoch(a));
	/* a still believes it leads: its next record must not land */
	append_n(a, 1);
	assert_int_equal(xp_store_sync(a), XP_ESTATE);
	assert_int_equal(xp_store_failure(a, &err), XP_ESTATE);
	assert_non_null(strstr(err.text, "fenced"));
	struct collected c = { .order_ok = 1 };
	assert_int_equal(xp_store_load(b, on_snap, on_rec, &c, &err), 0);
	assert_int_equal(c.n, 3); /* 1..3, and not a's seq 4 */
	assert_int_equal(xp_store_last_seq(b), 3);
	xp_store_close(a);
	xp_store_close(b);
}

static void test_batches_and_snapshots(void **state)
{
	(void)state;
	if (etcd_pid < 0)
		xp_skip();
	char u[160];
	struct xp_err err = { 0 };
	struct xp_store *s = open_store(store_url(u, sizeof(u)), 0, &err);
	assert_non_null(s);
	append_n(s, 1000); /* one batch: 8 txns of <= 127 puts */
	assert_int_equal(xp_store_sync(s), 0);
	/* a 1.5 MiB snapshot at seq 1000: 3 chunks */
	size_t big = 1536 * 1024;
	char *snap = malloc(big);
	for (size_t i = 0; i < big; i++)
		snap[i] = (char)('a' + (i * 7919) % 26);
	xp_store_snapshot(s, 1000, snap, big);
	append_n(s, 10);
	assert_int_equal(xp_store_sync(s), 0);
	/* a body etcd cannot take fails the store, naming the seq */
	char *huge = malloc(1200 * 1024);
	memset(huge, 'x', 1200 * 1024);
	assert_true(xp_store_append(s, "t.huge", huge, 1200 * 1024, 1) == 1011);
	assert_int_equal(xp_store_sync(s), XP_ETOOBIG);
	xp_store_failure(s, &err);
	assert_non_null(strstr(err.text, "record 1011"));
	free(huge);
	xp_store_close(s);

	/* a follower on the prefix: loads the snapshot and 1001..1010 */
	s = open_store(u, 1, &err);
	assert_non_null(s);
	struct collected c = { .order_ok = 1 };
	assert_int_equal(xp_store_load(s, on_snap, on_rec, &c, &err), 0);
	assert_int_equal(c.snap_len, big);
	assert_memory_equal(c.snap, snap, big);
	assert_int_equal(c.first, 1001);
	assert_int_equal(c.last, 1010);
	assert_true(c.order_ok);
	/* reading from before the snapshot: pruned */
	struct collected r = { .order_ok = 1 };
	assert_int_equal(xp_store_read(s, 10, 100, on_rec, &r, &err), XP_ENOENT);
	assert_int_equal(xp_store_read(s, 1005, 100, on_rec, &r, &err), 5);
	free(c.snap);
	free(snap);
	xp_store_close(s);
}

static int won;
static void on_lead(void *arg)
{
	(void)arg;
	__atomic_store_n(&won, 1, __ATOMIC_SEQ_CST);
}

static void test_follower_takes_over(void **state)
{
	(void)state;
	if (etcd_pid < 0)
		xp_skip();
	char u[160];
	struct xp_err err = { 0 };
	struct xp_store *a = open_store(store_url(u, sizeof(u)), 0, &err);
	assert_non_null(a);
	append_n(a, 5);
	assert_int_equal(xp_store_sync(a), 0);
	struct xp_store_opts o = { .etcd = u, .lease_ms = 2000, .advertise = "b", .follow = 1,
				   .on_lead = on_lead };
	struct xp_store *b = NULL;
	assert_int_equal(xp_store_open(NULL, &o, &b, &err), 0);
	struct collected c = { .order_ok = 1 };
	assert_int_equal(xp_store_load(b, on_snap, on_rec, &c, &err), 0);
	assert_int_equal(c.n, 5);
	char leader[64];
	assert_int_equal(xp_store_leader(b, leader, sizeof(leader)), 0);
	append_n(a, 2);
	assert_int_equal(xp_store_sync(a), 0);
	assert_int_equal(xp_store_read(b, 5, 100, on_rec, &c, &err), 2);
	xp_store_close(a); /* gives its lease back: b's campaign wins within ~100 ms */
	long long end = xp_test_now_ms() + 30000;
	while (!__atomic_load_n(&won, __ATOMIC_SEQ_CST) && xp_test_now_ms() < end)
		usleep(20000);
	assert_true(won);
	assert_int_equal(xp_store_promote(b, 6, &err), XP_ESTATE); /* behind: refused */
	assert_int_equal(xp_store_promote(b, 7, &err), 0);
	append_n(b, 1);
	assert_int_equal(xp_store_sync(b), 0);
	assert_int_equal(xp_store_last_seq(b), 8);
	xp_store_close(b);
}

/* A socket that takes connections (the kernel's backlog) and never answers: a hung member */
static int hung_port(int *fd)
{
	struct sockaddr_in a = { 0 };
	socklen_t al = sizeof(a);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(*fd, 16), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &al), 0);
	return ntohs(a.sin_port);
}

/* One deadline per call: with two hung members before the live one, a call given 3 s reaches
 * the live one and answers within them (each member gets a share of the time left; a call
 * that gave each member the whole 3 s took over 6 s), and with all three hung it fails within
 * them. The bound allows 1.5 s of slack for a loaded or sanitizer machine. */
static void test_one_deadline(void **state)
{
	(void)state;
	if (etcd_pid < 0)
		xp_skip();
	int h1, h2, h3;
	int p1 = hung_port(&h1), p2 = hung_port(&h2), p3 = hung_port(&h3);
	char u[256];
	const char *live = url + strlen("etcd://");
	snprintf(u, sizeof(u), "etcd://127.0.0.1:%d,127.0.0.1:%d,%s", p1, p2, live);
	struct xp_err err = { 0 };
	struct xp_etcd *e = NULL;
	int64_t rev = 0;
	assert_int_equal(xp_etcd_create(u, NULL, &e, &err), 0);
	long long t0 = xp_test_now_ms();
	int rc = xp_etcd_range(e, "x", 1, NULL, 0, 0, 3000, NULL, NULL, NULL, &rev, &err);
	long long took = xp_test_now_ms() - t0;
	if (rc != 0)
		fail_msg("two hung members, then the live one: %s", err.text);
	if (took > 4500)
		fail_msg("two hung members, then the live one: %lld ms for a 3,000 ms call", took);
	xp_etcd_destroy(e);
	snprintf(u, sizeof(u), "etcd://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", p1, p2, p3);
	assert_int_equal(xp_etcd_create(u, NULL, &e, &err), 0);
	t0 = xp_test_now_ms();
	assert_int_equal(xp_etcd_range(e, "x", 1, NULL, 0, 0, 3000, NULL, NULL, NULL, &rev, &err),
			 XP_EUNAVAIL);
	took = xp_test_now_ms() - t0;
	if (took > 4500)
		fail_msg("three hung members: %lld ms for a 3,000 ms call", took);
	xp_etcd_destroy(e);
	close(h1);
	close(h2);
	close(h3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fencing),
		cmocka_unit_test(test_batches_and_snapshots),
		cmocka_unit_test(test_follower_takes_over),
		cmocka_unit_test(test_one_deadline),
	};
	return xp_run_tests(tests, setup, teardown);
}
