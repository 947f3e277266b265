/*
 * svc_http: the test service the serving tests run as a service's replica
 * (issue 22 part 5). It listens on $XPOOL_PORT (all addresses) and answers
 *
 *   GET /healthz  200 "ok", or 503 while the file $SVC_UNREADY exists
 *   GET /metrics  Prometheus text: requests_total (a counter of the
 *                 requests below) and inflight_requests (those being served)
 *   GET /...      200 "job=<XPOOL_JOB_ID> version=<SVC_VERSION>\n" after
 *                 a fixed service time of $SVC_MS milliseconds (default 0)
 *
 * one thread per connection, one request per connection (Connection:
 * close). SIGTERM stops it accepting; the requests in flight are answered
 * before it exits 0, as a replica that is drained and stopped should.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static atomic_int stopping, in_flight, serving_now;
static atomic_long served;
static int service_ms;
static const char *unready;
static char body[160];

static void on_term(int sig)
{
	(void)sig;
	atomic_store(&stopping, 1);
}

static void reply(int fd, int code, const char *text)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n%s",
			 code, code == 200 ? "OK" : "Service Unavailable", strlen(text), text);
	for (int off = 0; off < n;) {
		ssize_t w = send(fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
		if (w <= 0)
			break;
		off += (int)w;
	}
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char req[2048];
	size_t got = 0;
	while (got < sizeof(req) - 1) { /* the request head */
		ssize_t r = recv(fd, req + got, sizeof(req) - 1 - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
		req[got] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	req[got] = '\0';
	if (!strncmp(req, "GET /healthz", 12)) {
		int down = unready && access(unready, F_OK) == 0;
		reply(fd, down ? 503 : 200, down ? "not ready\n" : "ok\n");
	} else if (!strncmp(req, "GET /metrics", 12)) {
		char m[256];
		snprintf(m, sizeof(m),
			 "# TYPE requests_total counter\nrequests_total %ld\n"
			 "# TYPE inflight_requests gauge\ninflight_requests %d\n",
			 atomic_load(&served), atomic_load(&serving_now));
		reply(fd, 200, m);
	} else if (got) {
		atomic_fetch_add(&serving_now, 1);
		if (service_ms > 0) {
			struct timespec ts = { service_ms / 1000, (service_ms % 1000) * 1000000L };
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
		reply(fd, 200, body);
		atomic_fetch_sub(&serving_now, 1);
		atomic_fetch_add(&served, 1);
	}
	close(fd);
	atomic_fetch_sub(&in_flight, 1);
	return NULL;
}

int main(void)
{
	const char *port = getenv("XPOOL_PORT");
	if (!port) {
		fprintf(stderr, "svc_http: XPOOL_PORT is not set\n");
		return 2;
	}
	service_ms = getenv("SVC_MS") ? atoi(getenv("SVC_MS")) : 0;
	unready = getenv("SVC_UNREADY");
	snprintf(body, sizeof(body), "job=%s version=%s\n",
		 getenv("XPOOL_JOB_ID") ? getenv("XPOOL_JOB_ID") : "?",
		 getenv("SVC_VERSION") ? getenv("SVC_VERSION") : "1");
	struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL); /* no SA_RESTART: accept() returns EINTR */
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)) };
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(ls, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(ls, 512) < 0) {
		perror("svc_http: bind");
		return 1;
	}
	fprintf(stderr, "svc_http: serving on %s\n", port);
	while (!atomic_load(&stopping)) {
		int fd = accept(ls, NULL, NULL);
		if (fd < 0)
			continue;
		pthread_t t;
		atomic_fetch_add(&in_flight, 1);
		if (pthread_create(&t, NULL, serve, (void *)(intptr_t)fd) != 0) {
			close(fd);
			atomic_fetch_sub(&in_flight, 1);
			continue;
		}
		pthread_detach(t);
	}
	close(ls);
	while (atomic_load(&in_flight) > 0) /* answer what came in */
		usleep(10000);
	fprintf(stderr, "svc_http: stopped\n");
	return 0;
}
