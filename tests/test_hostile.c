/*
 * test_hostile: the controller's HTTP front against requests that try to
 * stall or fool it, on a real server on loopback (issue 19 parts 3 and 4).
 *
 *   - a body is never read before its request is admitted: no token, a
 *     wrong token, a tenant on an admin route and a body over the limit are
 *     answered from the headers alone, while the client still holds the
 *     body back;
 *   - ambiguous framing (two Content-Length values, Content-Length with
 *     chunked) is refused and the connection closed, so a request hidden
 *     in the body never runs;
 *   - one address holding connections open before admission cannot take
 *     more than XP_UNAUTH_PER_IP slots: an agent's request still goes
 *     through, and the slots come back when the holder lets go;
 *   - hundreds of connections holding half-sent large bodies do not grow
 *     the server's memory by the bodies' size;
 *   - long polls wait as parked connections, not threads: the process's
 *     thread count does not grow with them, and an event wakes them all.
 *
 * Every wait is on a condition (a reply, a close, a count) with a generous
 * deadline, never a sleep.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "../src/server/ctl.h"

#define UNAUTH_PER_IP 64    /* XP_UNAUTH_PER_IP in http.c */
#define WAIT_MS	      60000 /* a deadline for conditions, not a pace */

static struct xp_ctl *ctl;
static char dir[] = "/tmp/xphostileXXXXXX";
static int port;
static char tenant_token[128];

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A connection to the server from source address src (any 127/8). */
static int dial(const char *src)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, src, &a.sin_addr);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	a.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	return fd;
}

static void say(int fd, const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(buf));
	assert_int_equal(send(fd, buf, (size_t)n, MSG_NOSIGNAL), n);
}

/* Read until the server closes or deadline: bytes read into buf (NUL
 * ended); *closed set when it closed (EOF or reset). Stops early once buf
 * holds a whole reply head and stop_at_head is set. */
static size_t hear(int fd, char *buf, size_t cap, int stop_at_head, int *closed)
{
	size_t n = 0;
	int64_t end = now_ms() + WAIT_MS;
	*closed = 0;
	buf[0] = 0;
	while (n + 1 < cap && now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 1000) <= 0)
			continue;
		ssize_t r = recv(fd, buf + n, cap - 1 - n, 0);
		if (r <= 0) {
			*closed = 1;
			break;
		}
		n += (size_t)r;
		buf[n] = 0;
		if (stop_at_head && strstr(buf, "\r\n\r\n"))
			break;
	}
	return n;
}

static int status_of(const char *reply)
{
	int s = 0;
	return sscanf(reply, "HTTP/1.1 %d", &s) == 1 ? s : 0;
}

static int count_of(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static long threads_now(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %ld", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
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
	o.body_limit = 1 << 20;
	o.max_connections = 4096;
	if (xp_ctl_start(&o, &ctl, &err) < 0)
		fail_msg("start: %s", err.text);
	port = atoi(strrchr(ctl->addr, ':') + 1);
	long st;
	json_t *t = xp_test_json(ctl->addr, ctl->admin_token, "POST", "/v1/tenants",
				 "{\"name\":\"team-b\"}", &st);
	assert_int_equal(st, 201);
	json_decref(t);
	t = xp_test_json(ctl->addr, ctl->admin_token, "POST", "/v1/tokens",
			 "{\"tenant\":\"team-b\",\"name\":\"ci\"}", &st);
	assert_int_equal(st, 201);
	snprintf(tenant_token, sizeof(tenant_token), "%s",
		 json_string_value(json_object_get(t, "token")));
	json_decref(t);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	xp_ctl_stop(ctl);
	xp_test_rmdir(dir);
	return 0;
}

/* A request whose body is announced and held back gets its refusal from
 * the headers alone. */
static void refused_before_body(const char *auth, const char *method, const char *path,
				const char *length, int want)
{
	char buf[8192];
	int closed;
	int fd = dial("127.0.0.1");
	say(fd,
	    "%s %s HTTP/1.1\r\nHost: x\r\n%s%s%sContent-Type: application/json\r\n"
	    "Content-Length: %s\r\n\r\n{\"na",
	    method, path, auth ? "Authorization: Bearer " : "", auth ? auth : "",
	    auth ? "\r\n" : "", length);
	hear(fd, buf, sizeof(buf), 1, &closed);
	if (status_of(buf) != want)
		fail_msg("%s %s (token %s, Content-Length %s): expected %d before the body, got "
			 "'%.200s'",
			 method, path, auth ? "given" : "none", length, want, buf);
	close(fd);
}

static void test_auth_before_body(void **state)
{
	(void)state;
	refused_before_body(NULL, "POST", "/v1/jobs", "1000000", 401);
	refused_before_body("xpt_wrong", "POST", "/v1/jobs", "1000000", 401);
	refused_before_body(tenant_token, "POST", "/v1/tenants", "1000", 403);
	refused_before_body(ctl->admin_token, "POST", "/v1/jobs", "100000000", 413);
	refused_before_body(ctl->admin_token, "POST", "/v1/nowhere", "1000", 404);
	refused_before_body(ctl->admin_token, "PUT", "/v1/jobs", "1000", 405);
}

/* Two framings: refused, the connection closed, the hidden request never
 * answered (one reply only) and never run (no tenant "smuggled"). */
static void smuggle(const char *framing)
{
	char buf[16384], hidden[512];
	int closed;
	snprintf(hidden, sizeof(hidden),
		 "POST /v1/tenants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
		 "Content-Type: application/json\r\nContent-Length: "
		 "20\r\n\r\n{\"name\":\"smuggled\"}\n",
		 ctl->admin_token);
	int fd = dial("127.0.0.1");
	say(fd,
	    "POST /v1/tenants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
	    "Content-Type: application/json\r\n%s\r\n\r\n{\"name\":\"front\"}%s",
	    ctl->admin_token, framing, hidden);
	hear(fd, buf, sizeof(buf), 0, &closed);
	close(fd);
	if (status_of(buf) != 400 || !closed || count_of(buf, "HTTP/1.1 ") != 1)
		fail_msg("framing '%s': expected one 400 and a closed connection, got%s '%.300s'",
			 framing, closed ? "" : " (still open)", buf);
	long st;
	char *r = xp_test_http(ctl->addr, ctl->admin_token, "GET", "/v1/tenants", NULL, &st);
	assert_int_equal(st, 200);
	if (strstr(r, "smuggled") || strstr(r, "\"front\""))
		fail_msg("framing '%s': a request in an ambiguous body ran: %s", framing, r);
	free(r);
}

static void test_smuggling(void **state)
{
	(void)state;
	smuggle("Content-Length: 16\r\nContent-Length: 200");
	smuggle("Content-Length: 200\r\nContent-Length: 16");
	smuggle("Content-Length: 16\r\nTransfer-Encoding: chunked");
	smuggle("Transfer-Encoding: chunked\r\nContent-Length: 16");
}

/* n connections from src, each a request line and no end to its headers */
static void hold(int *fds, int n, const char *src)
{
	for (int i = 0; i < n; i++) {
		fds[i] = dial(src);
		say(fds[i], "GET /v1/nodes HTTP/1.1\r\nHost: x\r\n");
	}
}

/* Is a new connection from src served (1) or closed at accept (0)? */
static int served_from(const char *src)
{
	char buf[4096];
	int closed;
	int fd = dial(src);
	say(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
	hear(fd, buf, sizeof(buf), 1, &closed);
	close(fd);
	return status_of(buf) == 200;
}

static void test_slots_per_address(void **state)
{
	(void)state;
	int fds[UNAUTH_PER_IP];
	hold(fds, UNAUTH_PER_IP, "127.0.0.2");
	/* the accept that would pass the limit is closed; others go through */
	int64_t end = now_ms() + WAIT_MS;
	while (served_from("127.0.0.2") && now_ms() < end)
		; /* until the server has counted all of the held ones */
	assert_false(served_from("127.0.0.2"));
	long st;
	char *r = xp_test_http(ctl->addr, ctl->admin_token, "GET", "/v1/nodes", NULL, &st);
	assert_int_equal(st, 200);
	free(r);
	assert_true(served_from("127.0.0.3"));
	for (int i = 0; i < UNAUTH_PER_IP; i++)
		close(fds[i]);
	end = now_ms() + WAIT_MS;
	int back = 0;
	while (!(back = served_from("127.0.0.2")) && now_ms() < end)
		;
	if (!back)
		fail_msg("127.0.0.2's slots did not come back after it closed its connections");
}

/* 512 connections from 16 addresses announce 1 MB bodies with no token and
 * send 64 KiB of each: all refused from their headers, and the server's
 * memory (this process's) does not grow by the bodies' 512 MB. */
static void test_half_sent_bodies(void **state)
{
	(void)state;
	enum { N = 512, CHUNK = 64 << 10 };
	static int fds[N];
	static char chunk[CHUNK];
	memset(chunk, 'x', sizeof(chunk));
	long before = rss_kib();
	int refused = 0;
	for (int i = 0; i < N; i++) {
		char src[32];
		snprintf(src, sizeof(src), "127.0.1.%d", 1 + i % 16);
		fds[i] = dial(src);
		say(fds[i],
		    "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
		    "Content-Length: 1000000\r\n\r\n");
		/* the server may close before all of it is sent: that is the point */
		(void)send(fds[i], chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	for (int i = 0; i < N; i++) {
		char buf[4096];
		int closed;
		hear(fds[i], buf, sizeof(buf), 1, &closed);
		refused += status_of(buf) == 401;
		close(fds[i]);
	}
	long after = rss_kib();
	printf("half-sent bodies: %d of %d refused with 401; RSS %ld -> %ld KiB (+%ld)\n", refused,
	       N, before, after, after - before);
	assert_int_equal(refused, N);
	assert_true(after - before < 64 * 1024); /* the bodies would be 512 MiB */
}

/* 1,000 long polls on the event log: no thread each, and one event wakes
 * every one of them. */
static void test_long_polls_park(void **state)
{
	(void)state;
	enum { N = 1000 };
	static int fds[N];
	long st;
	json_t *ev = xp_test_json(ctl->addr, ctl->admin_token, "GET",
				  "/v1/events?since=0&limit=10000", NULL, &st);
	assert_int_equal(st, 200);
	json_int_t next = json_integer_value(json_object_get(ev, "next"));
	json_decref(ev);
	long t0 = threads_now();
	for (int i = 0; i < N; i++) {
		char src[32];
		snprintf(src, sizeof(src), "127.0.2.%d", 1 + i % 32);
		fds[i] = dial(src);
		say(fds[i],
		    "GET /v1/events?since=%lld&wait=60 HTTP/1.1\r\nHost: x\r\n"
		    "Authorization: Bearer %s\r\n\r\n",
		    (long long)next, ctl->admin_token);
	}
	int64_t end = now_ms() + WAIT_MS;
	while (xp_park_count(ctl) < N && now_ms() < end)
		poll(NULL, 0, 5); /* a look every 5 ms at a condition */
	size_t parked = xp_park_count(ctl);
	long t1 = threads_now();
	printf("long polls: %zu of %d parked; threads %ld -> %ld\n", parked, N, t0, t1);
	assert_int_equal(parked, N);
	assert_true(t1 - t0 <= 2);
	/* an event (a tenant made) answers every one */
	char *r = xp_test_http(ctl->addr, ctl->admin_token, "POST", "/v1/tenants",
			       "{\"name\":\"wake-up\"}", &st);
	assert_int_equal(st, 201);
	free(r);
	int woke = 0;
	for (int i = 0; i < N; i++) {
		char buf[65536];
		int closed;
		hear(fds[i], buf, sizeof(buf), 1, &closed);
		woke += status_of(buf) == 200;
		close(fds[i]);
	}
	assert_int_equal(woke, N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auth_before_body),  cmocka_unit_test(test_smuggling),
		cmocka_unit_test(test_slots_per_address), cmocka_unit_test(test_half_sent_bodies),
		cmocka_unit_test(test_long_polls_park),
	};
	return xp_run_tests(tests, setup, teardown);
}
