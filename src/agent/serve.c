/*
 * serve: a service's replica on this node (docs/design/serving.md).
 *
 * Its port: the agent picks one free on the host in --ports (default
 * 30000-32767), held by no other task, turning through the range (from a
 * point set by its pid, so agents sharing a host start apart) so a port
 * just given up is not handed out again at once; the replica gets it as
 * XPOOL_PORT (and PORT). It is kept in the task folder ("service": PORT,
 * the check) so an agent that restarts and adopts the task reports the
 * same one.
 *
 * Its load (a service that autoscales): with each check that passes, the
 * prober reads the replica's Prometheus text at the path the service names
 * and sums the series' samples - a gauge as it is, a counter as its rate
 * since the last reading - and the heartbeat reports it.
 *
 * Its readiness: the prober thread runs each replica's check every period
 * - a TCP connect to 127.0.0.1:PORT, an HTTP GET of the path that must
 * answer 2xx or 3xx, or a shell command that must exit 0 - within its
 * timeout. A change of verdict makes the
 * heartbeat go at once rather than at its next period, so the controller
 * adds or drops the endpoint within one check and one request.
 */
#define _GNU_SOURCE /* pipe2 */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define PORT_MIN_DEFAULT 30000
#define PORT_MAX_DEFAULT 32767
#define PROBE_TICK_MS	 50
#define PROBES_MAX	 256 /* checks run per tick at most */
/* as the assignment names them (XP_SCRAPE_* of core/state/spec.h) */
#define XP_LOAD_RATE  1
#define XP_LOAD_GAUGE 2

static int port_free(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	int ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

static int port_taken(const struct xp_agent *a, uint16_t port)
{
	for (size_t i = 0; i < a->tasks.n; i++)
		if (a->tasks.v[i].port == port && a->tasks.v[i].state != XP_TASK_DONE)
			return 1;
	return 0;
}

static uint16_t pick_port(const struct xp_agent *a)
{
	static unsigned cursor, seeded; /* a->mu held */
	unsigned lo = a->o.port_min ? a->o.port_min : PORT_MIN_DEFAULT;
	unsigned hi = a->o.port_max ? a->o.port_max : PORT_MAX_DEFAULT;
	unsigned span = hi - lo + 1;
	if (!seeded++) /* agents sharing a host start apart in the range */
		cursor = ((unsigned)getpid() * 2654435761u) % span;
	for (unsigned i = 0; i < span; i++) {
		uint16_t p = (uint16_t)(lo + (cursor + i) % span);
		if (!port_taken(a, p) && port_free(p)) {
			cursor = (cursor + i + 1) % span;
			return p;
		}
	}
	return 0;
}

static void save(const struct xp_task *t)
{
	char path[600], tmp[620];
	snprintf(path, sizeof(path), "%s/service", t->dir);
	snprintf(tmp, sizeof(tmp), "%s/service.tmp", t->dir);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	/* numbers, then the check's path or command on a line of its own */
	fprintf(f, "%u %d %d %d %d %s %s\n%s\n", t->port, t->probe_kind, t->probe_period_ms,
		t->probe_timeout_ms, t->load_kind, t->load_kind ? t->load_path : "-",
		t->load_kind ? t->load_series : "-", t->probe_path);
	if (fclose(f) == 0)
		rename(tmp, path);
}

int xp_serve_setup(struct xp_agent *a, const void *assignment, struct xp_task *t,
		   struct xp_err *err)
{
	json_t *svc = json_object_get((json_t *)assignment, "service");
	if (!json_is_object(svc))
		return 0;
	const char *probe = json_string_value(json_object_get(svc, "probe"));
	const char *path = json_string_value(json_object_get(svc, "path"));
	t->probe_kind = !probe || !path || strchr(path, '\n') ? XP_SERVE_TCP
			: !strcmp(probe, "http")		 ? XP_SERVE_HTTP
			: !strcmp(probe, "command")		 ? XP_SERVE_CMD
								 : XP_SERVE_TCP;
	snprintf(t->probe_path, sizeof(t->probe_path), "%s", t->probe_kind ? path : "");
	t->probe_period_ms = (int32_t)json_integer_value(json_object_get(svc, "period_ms"));
	t->probe_timeout_ms = (int32_t)json_integer_value(json_object_get(svc, "timeout_ms"));
	if (t->probe_period_ms < 100)
		t->probe_period_ms = 1000;
	if (t->probe_timeout_ms < 10)
		t->probe_timeout_ms = 1000;
	json_t *ld = json_object_get(svc, "load");
	const char *lk = json_string_value(json_object_get(ld, "kind"));
	const char *lp = json_string_value(json_object_get(ld, "path"));
	const char *ls = json_string_value(json_object_get(ld, "series"));
	if (lk && lp && ls && lp[0] == '/' && !strpbrk(lp, " \n") && !strpbrk(ls, " \n")) {
		t->load_kind = !strcmp(lk, "rate") ? XP_LOAD_RATE : XP_LOAD_GAUGE;
		snprintf(t->load_path, sizeof(t->load_path), "%s", lp);
		snprintf(t->load_series, sizeof(t->load_series), "%s", ls);
	}
	t->port = pick_port(a);
	if (!t->port)
		return xp_errf(err, XP_ENOSPC, "no free port for a service replica in %u-%u",
			       a->o.port_min ? a->o.port_min : PORT_MIN_DEFAULT,
			       a->o.port_max ? a->o.port_max : PORT_MAX_DEFAULT);
	t->probe_at = 0;
	save(t);
	return 1;
}

void xp_serve_adopt(struct xp_task *t)
{
	char path[600];
	unsigned port;
	int http, per, to;
	snprintf(path, sizeof(path), "%s/service", t->dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	int lk = 0;
	char line[300];
	if (fscanf(f, "%u %d %d %d %d %255s %95s", &port, &http, &per, &to, &lk, t->load_path,
		   t->load_series) == 7 &&
	    port > 0 && port < 65536 && fgets(line, sizeof(line), f) && /* the rest of line 1 */
	    fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		t->port = (uint16_t)port;
		t->probe_kind = (uint8_t)(http >= XP_SERVE_TCP && http <= XP_SERVE_CMD ? http : 0);
		snprintf(t->probe_path, sizeof(t->probe_path), "%.255s", line);
		t->probe_period_ms = per >= 100 ? per : 1000;
		t->probe_timeout_ms = to >= 10 ? to : 1000;
		t->load_kind = (uint8_t)(lk == XP_LOAD_RATE || lk == XP_LOAD_GAUGE ? lk : 0);
	}
	fclose(f);
}

/* fd connected to 127.0.0.1:port within ms; -1 when not */
static int dial(uint16_t port, int ms)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	if (poll(&p, 1, ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 ||
	    soerr) {
		close(fd);
		return -1;
	}
	return fd;
}

/* GET path on fd: the status line's code, or -1; with buf, the whole
 * answer (at most len - 1 bytes, NUL-ended) read until the server closes */
static int http_get(int fd, const char *path, int ms, char *buf, size_t len)
{
	char req[400], small[64];
	int n = snprintf(req, sizeof(req),
			 "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: xpool-agent\r\n"
			 "Connection: close\r\n\r\n",
			 path);
	if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n)
		return -1;
	if (!buf) {
		buf = small;
		len = sizeof(small);
	}
	size_t got = 0, want = buf == small ? 12 : len - 1;
	while (got < want) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, ms) != 1)
			break;
		ssize_t r = recv(fd, buf + got, len - 1 - got, 0);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	int code;
	if (got < 12 || strncmp(buf, "HTTP/1.", 7) || sscanf(buf + 9, "%3d", &code) != 1)
		return -1;
	return code;
}

/* The readiness command: run by /bin/sh with XPOOL_PORT and PORT set,
 * ready when it exits 0 within ms. An intermediate child (its own process
 * group, killed whole at the timeout) waits for it and writes the verdict
 * into a pipe: the monitor thread reaps any child of the agent, so the
 * verdict cannot come from waitpid here. Only async-signal-safe calls
 * after fork. */
static int check_cmd(const char *cmd, uint16_t port, int ms)
{
	char pv[32], pp[32], path[1024];
	snprintf(pv, sizeof(pv), "XPOOL_PORT=%u", port);
	snprintf(pp, sizeof(pp), "PORT=%u", port);
	snprintf(path, sizeof(path), "PATH=%s",
		 getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin");
	char *const envp[] = { pv, pp, path, NULL };
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return 0;
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpgid(0, 0);
		pid_t c = fork();
		if (c == 0) {
			execle("/bin/sh", "sh", "-c", cmd, (char *)NULL, envp);
			_exit(127);
		}
		int st = 1;
		while (c > 0 && waitpid(c, &st, 0) < 0 && errno == EINTR)
			;
		char v = c > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
		if (write(fds[1], &v, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	char v = 0;
	struct pollfd p = { .fd = fds[0], .events = POLLIN };
	int got = pid > 0 && poll(&p, 1, ms) == 1 && read(fds[0], &v, 1) == 1;
	if (pid > 0 && !got)
		kill(-pid, SIGKILL); /* past its timeout: the command and its waiter */
	close(fds[0]);
	return got && v;
}

static int check(uint16_t port, int kind, const char *path, int ms)
{
	if (kind == XP_SERVE_CMD)
		return check_cmd(path, port, ms);
	int fd = dial(port, ms);
	if (fd < 0)
		return 0;
	int ok = 1;
	if (kind == XP_SERVE_HTTP) {
		int code = http_get(fd, path, ms, NULL, 0);
		ok = code >= 200 && code < 400;
	}
	close(fd);
	return ok;
}

/* The sum of series' samples (every label set) in Prometheus text; 0 when
 * there is none. */
static int series_sum(const char *text, const char *series, double *out)
{
	size_t sl = strlen(series);
	int found = 0;
	*out = 0;
	for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (strncmp(l, series, sl) || (l[sl] != ' ' && l[sl] != '{'))
			continue;
		const char *v = l + sl;
		if (*v == '{')
			v = strchr(v, '}');
		char *end;
		double x = v ? strtod(v + 1, &end) : 0;
		if (v && end != v + 1) {
			*out += x;
			found = 1;
		}
	}
	return found;
}

/* the replica's load now: a gauge's value, a counter's rate since the last
 * reading (none on the first, or after a reset) */
static int read_load(uint16_t port, const char *path, const char *series, int kind, int ms,
		     double *last, int64_t *last_ms, double *load)
{
	static __thread char buf[65536];
	int fd = dial(port, ms);
	if (fd < 0)
		return 0;
	int code = http_get(fd, path, ms, buf, sizeof(buf));
	close(fd);
	const char *body = code == 200 ? strstr(buf, "\r\n\r\n") : NULL;
	double v;
	if (!body || !series_sum(body + 4, series, &v))
		return 0;
	int64_t now = xp_agent_now();
	if (kind == XP_LOAD_GAUGE) {
		*load = v;
		return 1;
	}
	int ok = *last_ms && now > *last_ms && v >= *last;
	if (ok)
		*load = (v - *last) * 1000.0 / (double)(now - *last_ms);
	*last = v;
	*last_ms = now;
	return ok;
}

struct due {
	uint64_t job;
	uint32_t replica, attempt;
	uint16_t port;
	uint8_t http, load_kind;
	int timeout;
	char path[256], load_path[256], load_series[96];
	double last, load;
	int64_t last_ms;
	int load_ok;
};

/* what is due now, copied out under the lock */
static size_t due_now(struct xp_agent *a, struct due *d, int64_t now)
{
	size_t n = 0;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->tasks.n && n < PROBES_MAX; i++) {
		const struct xp_task *t = &a->tasks.v[i];
		if (!t->port || t->state != XP_TASK_RUNNING || now < t->probe_at)
			continue;
		struct due *e = &d[n++];
		memset(e, 0, sizeof(*e));
		e->job = t->job;
		e->replica = t->replica;
		e->attempt = t->attempt;
		e->port = t->port;
		e->http = t->probe_kind;
		e->timeout = t->probe_timeout_ms;
		snprintf(e->path, sizeof(e->path), "%s", t->probe_path);
		e->load_kind = t->load_kind;
		snprintf(e->load_path, sizeof(e->load_path), "%s", t->load_path);
		snprintf(e->load_series, sizeof(e->load_series), "%s", t->load_series);
		e->last = t->load_last;
		e->last_ms = t->load_last_ms;
	}
	pthread_mutex_unlock(&a->mu);
	return n;
}

void *xp_serve_prober(void *arg)
{
	struct xp_agent *a = arg;
	struct due *d = calloc(PROBES_MAX, sizeof(*d));
	while (d && !atomic_load(&a->stop)) {
		size_t n = due_now(a, d, xp_agent_now());
		for (size_t i = 0; i < n; i++) {
			int ok = check(d[i].port, d[i].http, d[i].path, d[i].timeout);
			if (ok && d[i].load_kind)
				d[i].load_ok = read_load(d[i].port, d[i].load_path, d[i].load_series,
							 d[i].load_kind, d[i].timeout, &d[i].last,
							 &d[i].last_ms, &d[i].load);
			pthread_mutex_lock(&a->mu);
			struct xp_task *t = xp_task_find(a, d[i].job, d[i].replica, d[i].attempt);
			if (t && t->state == XP_TASK_RUNNING) {
				t->probe_at = xp_agent_now() + t->probe_period_ms;
				t->load_last = d[i].last;
				t->load_last_ms = d[i].last_ms;
				t->load_ok = (uint8_t)d[i].load_ok;
				if (d[i].load_ok)
					t->load = d[i].load;
				if (t->ready != ok) {
					t->ready = (uint8_t)ok;
					atomic_store(&a->beat_soon, 1);
					fprintf(stderr,
						"xpool agent: node=%s job=%llu: port %u %s\n",
						a->node, (unsigned long long)t->job, t->port,
						ok ? "ready" : "not ready");
				}
			}
			pthread_mutex_unlock(&a->mu);
		}
		usleep(PROBE_TICK_MS * 1000);
	}
	free(d);
	return NULL;
}

json_t *xp_serve_report(const struct xp_task *t, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		if (!t[i].port || t[i].state != XP_TASK_RUNNING)
			continue;
		json_t *o = json_pack("{s:I,s:i,s:i,s:i,s:b}", "job", (json_int_t)t[i].job,
				      "replica", (int)t[i].replica, "attempt", (int)t[i].attempt,
				      "port", (int)t[i].port, "ready", (int)t[i].ready);
		if (t[i].load_ok)
			json_object_set_new(o, "load", json_real(t[i].load));
		json_array_append_new(arr, o);
	}
	return arr;
}
