/*
 * svc_load: a closed-loop load generator for the serving tests: C threads
 * each send GET / to HOST:PORT, one request per connection, one after the
 * other, until the file STOPFILE exists (or SECONDS pass), then it prints
 *
 *   requests N ok M failed F
 *
 * and exits 0 (1 when any failed). A request fails when it cannot connect,
 * or its answer is not a 200 within 10 s. The first failures are printed
 * on stderr with their reason.
 *
 * usage: xp-svc-load HOST PORT THREADS SECONDS STOPFILE
 *
 * Or open-loop, replaying the arrivals of a trace (a CSV whose first
 * column is a "YYYY-MM-DD HH:MM:SS.frac" time, the Azure LLM trace's
 * shape): each request is sent at its time from the first row, divided by
 * SPEED, for the first SECONDS of wall time; a pool of 128 threads sends
 * them. It also prints the arrivals per wall second ("rate T N" lines).
 *
 * usage: xp-svc-load --replay FILE SPEED SECONDS HOST PORT
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in to;
static const char *stopfile;
static double until;
static atomic_long sent, ok, failed;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const char *one(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return "socket";
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0) {
		close(fd);
		return "connect";
	}
	static const char req[] = "GET / HTTP/1.1\r\nHost: svc\r\nConnection: close\r\n\r\n";
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1) {
		close(fd);
		return "send";
	}
	static __thread char buf[512]; /* the reason of a failure is its answer */
	size_t got = 0;
	while (got < sizeof(buf) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 10000) != 1)
			break;
		ssize_t r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	if (strncmp(buf, "HTTP/1.", 7) || strncmp(buf + 9, "200", 3))
		return got ? buf : "no answer";
	return NULL;
}

static void *worker(void *arg)
{
	(void)arg;
	while (now() < until && access(stopfile, F_OK) != 0) {
		const char *why = one();
		atomic_fetch_add(&sent, 1);
		if (!why) {
			atomic_fetch_add(&ok, 1);
			continue;
		}
		if (atomic_fetch_add(&failed, 1) < 5)
			fprintf(stderr, "svc_load: failed: %.80s\n", why);
	}
	return NULL;
}

/* ---- replay ---- */

static double *at; /* send times, wall seconds from the start */
static size_t nat;
static atomic_size_t next;
static double t0;

static void *replayer(void *arg)
{
	(void)arg;
	for (;;) {
		size_t i = atomic_fetch_add(&next, 1);
		if (i >= nat)
			return NULL;
		double wait = t0 + at[i] - now();
		if (wait > 0) {
			struct timespec ts = { (time_t)wait, (long)((wait - (time_t)wait) * 1e9) };
			nanosleep(&ts, NULL);
		}
		const char *why = one();
		atomic_fetch_add(&sent, 1);
		if (!why)
			atomic_fetch_add(&ok, 1);
		else if (atomic_fetch_add(&failed, 1) < 5)
			fprintf(stderr, "svc_load: failed at %.1f s: %.80s\n", now() - t0, why);
	}
}

static double stamp(const char *line)
{
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	double frac = 0;
	const char *p = strptime(line, "%Y-%m-%d %H:%M:%S", &tm);
	if (!p)
		return -1;
	if (*p == '.')
		frac = strtod(p, NULL);
	return (double)timegm(&tm) + frac;
}

static int replay(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: xp-svc-load --replay FILE SPEED SECONDS HOST PORT\n");
		return 2;
	}
	FILE *f = fopen(argv[2], "r");
	double speed = atof(argv[3]), secs = atof(argv[4]), first = -1;
	to.sin_family = AF_INET;
	to.sin_port = htons((uint16_t)atoi(argv[6]));
	if (!f || speed <= 0 || inet_pton(AF_INET, argv[5], &to.sin_addr) != 1) {
		fprintf(stderr, "svc_load: bad arguments (or %s unreadable)\n", argv[2]);
		return 2;
	}
	char line[256];
	size_t cap = 0;
	while (fgets(line, sizeof(line), f)) {
		double t = stamp(line);
		if (t < 0)
			continue; /* the header */
		first = first < 0 ? t : first;
		double w = (t - first) / speed;
		if (w > secs)
			break;
		if (nat == cap)
			at = realloc(at, (cap = cap ? 2 * cap : 4096) * sizeof(*at));
		at[nat++] = w;
	}
	fclose(f);
	for (size_t i = 0, k = 0; i < (size_t)secs + 1; i++) { /* the arrivals per second */
		size_t n = 0;
		for (; k < nat && at[k] < (double)i + 1; k++)
			n++;
		printf("rate %zu %zu\n", i, n);
	}
	enum { POOL = 128 };
	pthread_t t[POOL];
	t0 = now();
	for (int i = 0; i < POOL; i++)
		pthread_create(&t[i], NULL, replayer, NULL);
	for (int i = 0; i < POOL; i++)
		pthread_join(t[i], NULL);
	printf("requests %ld ok %ld failed %ld\n", atomic_load(&sent), atomic_load(&ok),
	       atomic_load(&failed));
	free(at);
	return atomic_load(&failed) ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--replay"))
		return replay(argc, argv);
	if (argc != 6) {
		fprintf(stderr, "usage: xp-svc-load HOST PORT THREADS SECONDS STOPFILE\n");
		return 2;
	}
	to.sin_family = AF_INET;
	to.sin_port = htons((uint16_t)atoi(argv[2]));
	if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) {
		fprintf(stderr, "svc_load: %s: not an IPv4 address\n", argv[1]);
		return 2;
	}
	int n = atoi(argv[3]);
	until = now() + atof(argv[4]);
	stopfile = argv[5];
	pthread_t t[256];
	n = n < 1 ? 1 : n > 256 ? 256 : n;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("requests %ld ok %ld failed %ld\n", atomic_load(&sent), atomic_load(&ok),
	       atomic_load(&failed));
	return atomic_load(&failed) ? 1 : 0;
}
