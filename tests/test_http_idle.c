/*
 * test_http_idle: how long the controller keeps a connection, on a real
 * server on loopback (http_acct.c). Strangers - connections that have not
 * passed admission - are closed the header timeout (1 s here, 30 s by
 * default) after their accept; a connection that passed
 * admission keeps the 120 s idle timeout. The strangers' timeout is kept
 * by a reaper thread, not by libmicrohttpd's per-connection timeout (which
 * it walks in full every loop round), so these check the reaper:
 *
 *   - a half-sent head, and a connection that sends nothing, are closed
 *     after the timeout, not before;
 *   - an admitted connection stays open for three timeouts and then still
 *     answers;
 *   - a stranger trickling its head a byte at a time is closed at the
 *     timeout all the same (the time counts from the accept);
 *   - 1,000 strangers from 1,000 addresses are all closed while 200
 *     admitted connections stay, and the per-address table empties.
 *
 * Every wait is on a condition (a reply, a close, a count) with a deadline;
 * "stays open" is a wait for a close that must not come.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testutil.h"
#include "../src/server/ctl.h"

#define TIMEOUT_MS 1000	 /* the header timeout the server gets here */
#define WAIT_MS	   60000 /* a deadline for conditions, not a pace */

static struct xp_ctl *ctl;
static char dir[] = "/tmp/xpidleXXXXXX";
static int port;


/* Wait up to ms for the server to close fd: 1 closed (EOF or reset), 0 not.
 * Bytes that come meanwhile are read and dropped. */
static int closed_within(int fd, long long ms)
{
	long long end = xp_test_now_ms() + ms;
	char buf[4096];
	for (long long now; (now = xp_test_now_ms()) < end;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, (int)(end - now)) <= 0)
			continue;
		ssize_t r = recv(fd, buf, sizeof(buf), 0);
		if (r <= 0 && !(r < 0 && errno == EINTR))
			return 1;
	}
	return 0;
}

/* One whole request and its reply on fd (kept alive): the status, 0 if the
 * server closed first. */
static int request(int fd, const char *path, const char *token)
{
	char buf[65536];
	size_t n = 0;
	xp_test_say(fd, "GET %s HTTP/1.1\r\nHost: x\r\n%s%s%s\r\n", path, token ? "Authorization: Bearer " : "",
	    token ? token : "", token ? "\r\n" : "");
	long long end = xp_test_now_ms() + WAIT_MS;
	while (n + 1 < sizeof(buf) && xp_test_now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 1000) <= 0)
			continue;
		ssize_t r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
		if (r <= 0)
			return 0;
		n += (size_t)r;
		buf[n] = 0;
		char *head_end = strstr(buf, "\r\n\r\n");
		const char *cl = strstr(buf, "Content-Length:");
		if (head_end && cl && cl < head_end &&
		    n >= (size_t)(head_end + 4 - buf) + strtoul(cl + 15, NULL, 10))
			break;
	}
	int st = 0;
	return sscanf(buf, "HTTP/1.1 %d", &st) == 1 ? st : 0;
}

static void read_acct(size_t *unauth, size_t *nips, uint64_t *reaped)
{
	pthread_mutex_lock(&ctl->acct.mu);
	*unauth = ctl->acct.unauth;
	*nips = ctl->acct.nips;
	*reaped = ctl->acct.reaped;
	pthread_mutex_unlock(&ctl->acct.mu);
}

static int setup(void **state)
{
	(void)state;
	char cluster[4096];
	struct xp_ctl_opts o = { 0 };
	struct xp_err err = { 0 };
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max; /* the clients' ends of the sockets */
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	assert_non_null(mkdtemp(dir));
	snprintf(cluster, sizeof(cluster), "%s/examples/clusters/small.yaml", XP_SOURCE_DIR);
	o.data = dir;
	o.listen = "127.0.0.1:0";
	o.cluster = cluster;
	o.max_connections = 4096;
	o.header_timeout_ms = TIMEOUT_MS;
	if (xp_ctl_start(&o, &ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	port = atoi(strrchr(ctl->addr, ':') + 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	xp_ctl_stop(ctl);
	xp_test_rmdir(dir);
	return 0;
}

static void test_strangers_closed(void **state)
{
	(void)state;
	size_t unauth, nips;
	uint64_t reaped0, reaped;
	read_acct(&unauth, &nips, &reaped0);
	long long t0 = xp_test_now_ms();
	int half = xp_test_dial("127.0.0.5", port), mute = xp_test_dial("127.0.0.5", port);
	xp_test_say(half, "GET /v1/nodes HTTP/1.1\r\nHost: x\r\n");
	assert_true(closed_within(half, WAIT_MS));
	assert_true(closed_within(mute, WAIT_MS));
	long long took = xp_test_now_ms() - t0;
	if (took < TIMEOUT_MS - 50) /* the clock is in ms on both sides */
		fail_msg("strangers closed after %lld ms, before the %d ms timeout", took,
			 TIMEOUT_MS);
	read_acct(&unauth, &nips, &reaped);
	assert_true(reaped >= reaped0 + 2);
	close(half);
	close(mute);
}

static void test_admitted_kept(void **state)
{
	(void)state;
	int fd = xp_test_dial("127.0.0.6", port);
	assert_int_equal(request(fd, "/v1/nodes", ctl->admin_token), 200);
	if (closed_within(fd, 3 * TIMEOUT_MS))
		fail_msg("an admitted connection was closed within 3 header timeouts");
	assert_int_equal(request(fd, "/v1/nodes", ctl->admin_token), 200);
	close(fd);
}

static void test_slowloris(void **state)
{
	(void)state;
	int fd = xp_test_dial("127.0.0.7", port);
	long long t0 = xp_test_now_ms();
	const char *head = "GET /v1/nodes HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaa";
	int closed = 0;
	for (size_t i = 0; !closed && xp_test_now_ms() - t0 < WAIT_MS; i++) {
		if (send(fd, head + i % strlen(head), 1, MSG_NOSIGNAL) != 1)
			break; /* closed under us */
		closed = closed_within(fd, TIMEOUT_MS / 10); /* the pace of a byte */
	}
	long long took = xp_test_now_ms() - t0;
	if (took < TIMEOUT_MS - 50 || took > WAIT_MS)
		fail_msg("a head trickled a byte per %d ms: closed after %lld ms, want the %d ms "
			 "timeout", TIMEOUT_MS / 10, took, TIMEOUT_MS);
	close(fd);
}

static void test_many_addresses(void **state)
{
	(void)state;
	enum { STRANGERS = 1000, KEPT = 200 };
	static int s[STRANGERS], k[KEPT];
	char src[32];
	for (int i = 0; i < KEPT; i++) {
		k[i] = xp_test_dial("127.0.0.8", port);
		assert_int_equal(request(k[i], "/v1/nodes", ctl->admin_token), 200);
	}
	for (int i = 0; i < STRANGERS; i++) {
		snprintf(src, sizeof(src), "127.1.%d.%d", i / 250, 1 + i % 250);
		s[i] = xp_test_dial(src, port);
		xp_test_say(s[i], "GET /v1/jobs HTTP/1.1\r\n");
	}
	for (int i = 0; i < STRANGERS; i++)
		if (!closed_within(s[i], WAIT_MS))
			fail_msg("stranger %d was not closed", i);
	size_t unauth = 1, nips = 1;
	uint64_t reaped;
	long long end = xp_test_now_ms() + WAIT_MS;
	while ((unauth || nips) && xp_test_now_ms() < end)
		read_acct(&unauth, &nips, &reaped);
	if (unauth || nips)
		fail_msg("after the strangers closed: %zu still counted, %zu addresses in the table",
			 unauth, nips);
	for (int i = 0; i < KEPT; i++)
		if (request(k[i], "/v1/nodes", ctl->admin_token) != 200)
			fail_msg("admitted connection %d did not answer after the strangers went", i);
	for (int i = 0; i < STRANGERS; i++)
		close(s[i]);
	for (int i = 0; i < KEPT; i++)
		close(k[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strangers_closed),
		cmocka_unit_test(test_admitted_kept),
		cmocka_unit_test(test_slowloris),
		cmocka_unit_test(test_many_addresses),
	};
	return xp_run_tests(tests, setup, teardown);
}
