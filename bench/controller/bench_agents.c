/*
 * xp_bench_agents: heartbeat handling at scale (issue 4). One process
 * emulates N node agents through the controller's real HTTP API.
 *
 *   xp_bench_agents --addr ADDR (--token T | --token-file F) [--agents N]
 *                   [--devices D] [--period S[,S...]] [--seconds S[,S...]] [--warmup S]
 *                   [--threads T] [--watchers W] [--watch-wait S]
 *                   [--server-pid PID] [--stop-p99-ms MS] [--sources K]
 *
 * Phase 1, registration: T threads POST one one-node descriptor each to
 * /v1/agents, nodes agent-00000 .. agent-(N-1), each with D fake A100s.
 * The descriptor is what `xpool agent` sends (src/agent/agent.c
 * do_register): a node read by the descriptor module and written back by
 * xp_descriptor_to_json, the devices carrying the fake HAL's attributes.
 * A registration is journaled (node.add, fsynced) before its 201.
 *
 * Phase 2, heartbeats, once per period in --period (a list is a ramp, each
 * step on the same server, one after the other): every node beats once per
 * period, spread evenly - beat s (s = 0, 1, 2, ...) of the step is node
 * s mod N, due at t0 + s * period / N. Beat s goes out on connection
 * s mod T (T threads, one kept-alive libcurl connection each), which sends
 * its beats in order, each at its due time or at once when it is behind.
 * This is an open loop: a slow controller does not slow the schedule, so
 * the latency "from schedule" (due time to reply) includes the queueing a
 * late connection builds up; "from send" is the request alone. Note that N
 * agents share T connections here, where real agents hold one each.
 *
 * The window: the first --warmup seconds (default one period, at least 1 s:
 * every node has beaten once, connections are open) are not measured; then
 * --seconds are (a list gives each step its own; the last value repeats).
 * Latency counts the beats due in the window; the rate and the
 * controller's CPU per heartbeat count the 200 replies received in it.
 * Beats due in the window but still unsent 5 s after its end are "missed".
 * The controller's CPU is utime + stime of --server-pid (/proc/PID/stat,
 * clock ticks) at the window's start and end; its RSS, threads and open
 * descriptors (/proc/PID/status, /proc/PID/fd) are read at the end.
 *
 * Watchers (--watchers W): W long polls GET
 * /v1/nodes/{name}/assignments?since=V&wait=S on nodes 0..W-1 (mod N), as
 * agents hold them, all from one thread (libcurl multi, one connection
 * each), first issued with since=0 spread over the first step's warm-up,
 * then re-issued with the version of each reply. They stay open across the
 * steps; a refused or broken one is counted and retried after 1 s.
 *
 * After the last step, GET /v1/nodes: every agent node must be ready and
 * not suspect. With --stop-p99-ms, a ramp ends after the first step whose
 * p99 from schedule exceeds it, or that had errors or missed beats.
 *
 * Output: "key=value" lines (register, heartbeat per step, nodes) and a
 * human line after each, e.g.
 *   heartbeat agents=10000 period_s=5 offered_per_s=2000.0 per_s=1999.9 errors=0
 *     sched_p99_ms=3.1 ... server_cpu_us_per_hb=41.2 server_rss_mib=80.1 ...
 * Exit status 1 if a request failed (a watcher's too), a beat was missed or
 * a node is not ready and live at the end; 2 for bad arguments.
 */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "descriptor/descriptor.h"
#include "lib/clock.h"
#include "lib/fileio.h"
#include "lib/strbuf.h"
#include "lib/xalloc.h"
#include "mix.h"

#define MAX_STEPS 16
#define DRAIN_NS  (5ull * 1000000000ull) /* after the window: then unsent beats are missed */

struct opts {
	const char *addr, *token;
	size_t agents, devices, threads, watchers;
	double periods[MAX_STEPS], seconds[MAX_STEPS]; /* a missing seconds repeats the last */
	size_t nperiods, nseconds;
	double warmup; /* < 0: one period, at least 1 s */
	int watch_wait;
	size_t sources; /* watchers bind to 127.0.0.1 .. 127.0.0.SOURCES, round robin */
	long server_pid;
	double stop_p99_ms;
};

/* ---- the controller's process ---- */

struct proc {
	int ok;
	double cpu_s;
	double rss_mib;
	long threads, fds;
};

static void proc_read(long pid, struct proc *p)
{
	char path[64], buf[4096];
	memset(p, 0, sizeof(*p));
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')'); /* the command name may hold spaces */
	unsigned long ut = 0, st = 0;
	if (!rp ||
	    sscanf(rp + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return;
	p->cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	p->ok = 1;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if ((f = fopen(path, "r"))) {
		char line[256];
		long kib;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
				p->rss_mib = (double)kib / 1024;
			else
				sscanf(line, "Threads: %ld", &p->threads);
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	DIR *d = opendir(path);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d)))
			p->fds += e->d_name[0] != '.';
		closedir(d);
	}
}

static double self_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static void sleep_until(uint64_t mono_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(mono_ns / 1000000000ull),
			       .tv_nsec = (long)(mono_ns % 1000000000ull) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

/* xp_mono_ns() is CLOCK_MONOTONIC: the same clock sleep_until() waits on */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* the percentile rule of bench_submit.c: v[min(n-1, p*n)] */
static double pct_ms(const uint32_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t i = (size_t)(p * (double)n);
	return v[i < n ? i : n - 1] / 1e3;
}

static void node_name(char *buf, size_t len, size_t i)
{
	snprintf(buf, len, "agent-%05zu", i);
}

/* ---- workers: one client (one kept-alive connection) each ---- */

struct worker {
	size_t idx;
	struct xp_client *c;
	pthread_t tid;
	/* per phase */
	size_t errors, missed, done_in_window, sent;
	char first_error[512];
	uint32_t *sched_us, *send_us; /* beats due in the window */
	size_t n, cap;
};

static void note_error(struct worker *w, const char *what, long status)
{
	if (!w->errors++)
		snprintf(w->first_error, sizeof(w->first_error), "HTTP %ld: %.480s", status, what);
}

static void record(struct worker *w, uint64_t sched_ns, uint64_t send_ns)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 4096;
		w->sched_us = xreallocarray(w->sched_us, w->cap, sizeof(uint32_t));
		w->send_us = xreallocarray(w->send_us, w->cap, sizeof(uint32_t));
	}
	w->sched_us[w->n] = sched_ns / 1000 > UINT32_MAX ? UINT32_MAX : (uint32_t)(sched_ns / 1000);
	w->send_us[w->n++] = send_ns / 1000 > UINT32_MAX ? UINT32_MAX : (uint32_t)(send_ns / 1000);
}

static void reset(struct worker *w)
{
	w->errors = w->missed = w->done_in_window = w->sent = w->n = 0;
	w->first_error[0] = '\0';
}

/* ---- phase 1: registration ---- */

struct reg {
	const struct opts *o;
	char **bodies;
	atomic_size_t next;
	pthread_barrier_t go;
};

struct reg_arg {
	struct reg *r;
	struct worker *w;
};

static void *reg_main(void *arg)
{
	struct reg_arg *a = arg;
	struct reg *r = a->r;
	struct worker *w = a->w;
	struct xp_err err = { 0 };
	pthread_barrier_wait(&r->go);
	for (;;) {
		size_t k = atomic_fetch_add(&r->next, 1);
		if (k >= r->o->agents)
			break;
		long status = 0;
		char *resp = NULL;
		size_t rl = 0;
		uint64_t t0 = xp_mono_ns();
		int rc = xp_client_request(w->c, "POST", "/v1/agents", "application/json",
					   r->bodies[k], strlen(r->bodies[k]), &status, &resp, &rl,
					   &err);
		uint64_t dt = xp_mono_ns() - t0;
		if (rc < 0)
			note_error(w, err.text, 0);
		else if (status != 201 && status != 200)
			note_error(w, resp ? resp : "", status);
		else
			record(w, dt, dt);
		free(resp);
	}
	return NULL;
}

/* The one-node descriptor of agent i, as JSON text: written by the
 * descriptor module from a node it has read, like the agent's. */
static char **make_bodies(const struct opts *o)
{
	struct xp_sb sb;
	struct xp_err err = { 0 };
	xp_sb_init(&sb);
	xp_sb_printf(&sb, "{\"version\":1,\"nodes\":[{\"name\":\"agent-00000\",\"cpu\":64,"
			  "\"memory\":524288,\"arch\":\"x86_64\",\"numa_domains\":2,"
			  "\"labels\":{\"cpu.model\":\"bench\"},\"devices\":[");
	for (size_t d = 0; d < o->devices; d++)
		xp_sb_printf(
			&sb,
			"%s{\"type\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"A100-SXM4-80GB\","
			"\"memory\":81920,\"attributes\":{\"hal\":\"fake\",\"hal_index\":"
			"\"%zu\"}}",
			d ? "," : "", d);
	xp_sb_puts(&sb, "]}]}");
	struct xp_cluster *c =
		xp_descriptor_load_buf("bench node", sb.s, sb.len, XP_DESC_JSON, &err);
	xp_sb_free(&sb);
	if (!c) {
		fprintf(stderr, "xp_bench_agents: the node template: %s\n", err.text);
		exit(1);
	}
	char *canon = xp_descriptor_to_json(c);
	xp_cluster_destroy(c);
	json_error_t je;
	json_t *t = json_loads(canon, 0, &je);
	free(canon);
	json_t *node = json_array_get(json_object_get(t, "nodes"), 0);
	if (!node) {
		fprintf(stderr, "xp_bench_agents: the descriptor module wrote no node\n");
		exit(1);
	}
	char **bodies = XNEWV(char *, o->agents);
	for (size_t i = 0; i < o->agents; i++) {
		char name[32];
		node_name(name, sizeof(name), i);
		json_object_set_new(node, "name", json_string(name));
		bodies[i] = json_dumps(t, JSON_COMPACT | JSON_PRESERVE_ORDER);
	}
	json_decref(t);
	return bodies;
}

/* ---- phase 2: heartbeats ---- */

struct step {
	const struct opts *o;
	double period;
	uint64_t t0, ws, we, give_up; /* monotonic ns */
	double gap_ns;		      /* between two beats: period / N */
};

struct hb_arg {
	struct step *s;
	struct worker *w;
};

static size_t hb_body(char *buf, size_t len, size_t devices, uint64_t *rng)
{
	size_t off = (size_t)snprintf(buf, len, "{\"devices\":[");
	for (size_t d = 0; d < devices && off < len; d++) {
		*rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
		unsigned r = (unsigned)(*rng >> 33);
		off += (size_t)snprintf(buf + off, len - off,
					"%s{\"health\":\"ok\",\"why\":\"\",\"util_pct\":%u,"
					"\"power_w\":%u,\"temp_c\":%u,\"mem_used_mib\":%u}",
					d ? "," : "", r % 101, 60 + r % 340, 30 + r % 50,
					(r >> 8) % 81920);
	}
	if (off < len)
		off += (size_t)snprintf(buf + off, len - off, "]}");
	return off < len ? off : 0;
}

static void *hb_main(void *arg)
{
	struct hb_arg *a = arg;
	struct step *s = a->s;
	struct worker *w = a->w;
	const struct opts *o = s->o;
	struct xp_err err = { 0 };
	uint64_t rng = 0x9e3779b97f4a7c15ull * (w->idx + 1);
	char body[160 * 64 + 32], path[128], name[32];

	for (uint64_t k = w->idx;; k += o->threads) {
		uint64_t due = s->t0 + (uint64_t)((double)k * s->gap_ns);
		if (due >= s->we)
			break;
		uint64_t now = xp_mono_ns();
		if (now >= s->give_up) { /* hopelessly behind: the rest is missed */
			w->missed += due >= s->ws;
			continue;
		}
		if (now < due)
			sleep_until(due);
		node_name(name, sizeof(name), (size_t)(k % o->agents));
		snprintf(path, sizeof(path), "/v1/nodes/%s/heartbeat", name);
		size_t len = hb_body(body, sizeof(body), o->devices, &rng);
		long status = 0;
		char *resp = NULL;
		size_t rl = 0;
		uint64_t sent = xp_mono_ns();
		int rc = xp_client_request(w->c, "POST", path, "application/json", body, len,
					   &status, &resp, &rl, &err);
		uint64_t done = xp_mono_ns();
		w->sent++;
		if (rc < 0) {
			note_error(w, err.text, 0);
		} else if (status != 200) {
			note_error(w, resp ? resp : "", status);
		} else {
			if (due >= s->ws)
				record(w, done - due, done - sent);
			w->done_in_window += done >= s->ws && done < s->we;
		}
		free(resp);
	}
	return NULL;
}

/* ---- watchers: long polls on the nodes' assignments ---- */

struct watcher {
	CURL *h;
	size_t node;
	uint64_t since, issued, next_at;
	int active;
	struct xp_sb buf;
	char url[256];
};

struct watchers {
	const struct opts *o;
	char *base;
	struct curl_slist *hdrs;
	struct watcher *w;
	uint64_t t0, spread_ns;
	atomic_int stop;
	atomic_size_t replies, errors, early, in_flight, max_in_flight;
	pthread_mutex_t mu;
	char first_error[512];
	pthread_t tid;
	int leak; /* the handles are left to the process's exit (watch_main) */
};

static size_t watch_write(char *p, size_t sz, size_t n, void *ud)
{
	xp_sb_putn(ud, p, sz * n);
	return sz * n;
}

static void watch_issue(struct watchers *ws, struct watcher *w, CURLM *m)
{
	char name[32];
	node_name(name, sizeof(name), w->node);
	snprintf(w->url, sizeof(w->url), "%s/v1/nodes/%s/assignments?since=%llu&wait=%d", ws->base,
		 name, (unsigned long long)w->since, ws->o->watch_wait);
	xp_sb_reset(&w->buf);
	curl_easy_setopt(w->h, CURLOPT_URL, w->url);
	w->issued = xp_mono_ns();
	w->active = 1;
	curl_multi_add_handle(m, w->h);
	size_t f = atomic_fetch_add(&ws->in_flight, 1) + 1;
	if (f > atomic_load(&ws->max_in_flight))
		atomic_store(&ws->max_in_flight, f);
}

static void watch_fail(struct watchers *ws, const char *what)
{
	if (atomic_fetch_add(&ws->errors, 1) == 0) {
		pthread_mutex_lock(&ws->mu);
		snprintf(ws->first_error, sizeof(ws->first_error), "%.500s", what);
		pthread_mutex_unlock(&ws->mu);
	}
}

/* libcurl's socket interface on an epoll set: each round costs what became
 * ready, not every open poll (curl_multi_perform/_poll walk them all, so
 * 30,000 polls were the most one thread opened in 45 s on 2 cores). */
struct wloop {
	int ep;
	uint64_t deadline; /* libcurl's timer (mono ns), UINT64_MAX: none */
};

static int watch_sock(CURL *e, curl_socket_t fd, int what, void *up, void *sp)
{
	struct wloop *l = up;
	struct epoll_event ev = { 0 };
	(void)e;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(l->ep, EPOLL_CTL_DEL, fd, NULL);
		return 0;
	}
	ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
	ev.data.fd = fd;
	if (epoll_ctl(l->ep, sp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &ev) < 0 && errno == EEXIST)
		epoll_ctl(l->ep, EPOLL_CTL_MOD, fd, &ev);
	return 0;
}

static int watch_timer(CURLM *m, long ms, void *up)
{
	struct wloop *l = up;
	(void)m;
	l->deadline = ms < 0 ? UINT64_MAX : xp_mono_ns() + (uint64_t)ms * 1000000ull;
	return 0;
}

static void *watch_main(void *arg)
{
	struct watchers *ws = arg;
	size_t nw = ws->o->watchers, started = 0;
	struct wloop l = { .ep = epoll_create1(0), .deadline = UINT64_MAX };
	struct epoll_event evs[1024];
	uint64_t retry_at = 0;
	int running = 0;
	CURLM *m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)nw + 16);
	curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, watch_sock);
	curl_multi_setopt(m, CURLMOPT_SOCKETDATA, &l);
	curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, watch_timer);
	curl_multi_setopt(m, CURLMOPT_TIMERDATA, &l);
	while (!atomic_load(&ws->stop)) {
		uint64_t now = xp_mono_ns();
		/* first issues, spread over the warm-up */
		while (started < nw &&
		       ws->t0 + (uint64_t)((double)started * (double)ws->spread_ns / (double)nw) <=
			       now)
			watch_issue(ws, &ws->w[started++], m);
		/* retries after a failure, looked for every 100 ms */
		if (now >= retry_at) {
			for (size_t i = 0; i < started; i++)
				if (!ws->w[i].active && ws->w[i].next_at <= now)
					watch_issue(ws, &ws->w[i], m);
			retry_at = now + 100000000ull;
		}
		now = xp_mono_ns();
		int wait_ms = 20;
		if (l.deadline <= now)
			wait_ms = 0;
		else if (l.deadline - now < 20000000ull)
			wait_ms = (int)((l.deadline - now) / 1000000ull);
		int n = epoll_wait(l.ep, evs, 1024, wait_ms);
		for (int i = 0; i < n; i++) {
			int fl = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
				 (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
				 (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
			curl_multi_socket_action(m, evs[i].data.fd, fl, &running);
		}
		if (l.deadline <= xp_mono_ns()) {
			l.deadline = UINT64_MAX;
			curl_multi_socket_action(m, CURL_SOCKET_TIMEOUT, 0, &running);
		}
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(m, &left))) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct watcher *w = NULL;
			long status = 0;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&w);
			curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &status);
			CURLcode res = msg->data.result;
			curl_multi_remove_handle(m, w->h);
			atomic_fetch_sub(&ws->in_flight, 1);
			w->active = 0;
			now = xp_mono_ns();
			json_error_t je;
			json_t *r =
				res == CURLE_OK && status == 200
					? json_loadb(w->buf.s ? w->buf.s : "", w->buf.len, 0, &je)
					: NULL;
			json_t *v = json_object_get(r, "version");
			if (json_is_integer(v)) {
				uint64_t nv = (uint64_t)json_integer_value(v);
				atomic_fetch_add(&ws->replies, 1);
				/* a held poll that came back long before its wait without news */
				if (w->since && nv <= w->since &&
				    now - w->issued <
					    (uint64_t)(ws->o->watch_wait - 2) * 1000000000ull)
					atomic_fetch_add(&ws->early, 1);
				w->since = nv;
				/* re-issued at once, not at the next retry scan */
				watch_issue(ws, w, m);
			} else {
				char what[512];
				snprintf(what, sizeof(what), "%s (HTTP %ld) %.300s",
					 res == CURLE_OK ? "bad reply" : curl_easy_strerror(res),
					 status, w->buf.s ? w->buf.s : "");
				watch_fail(ws, what);
				w->next_at = now + 1000000000ull;
			}
			json_decref(r);
		}
	}
	/* removing a handle costs libcurl O(handles): 100,000 open polls took
	 * minutes to take down one by one, so past 10,000 they are left to the
	 * process's exit, which follows */
	if (nw > 10000) {
		ws->leak = 1;
		return NULL;
	}
	for (size_t i = 0; i < nw; i++)
		if (ws->w[i].active)
			curl_multi_remove_handle(m, ws->w[i].h);
	curl_multi_cleanup(m);
	close(l.ep);
	return NULL;
}

static struct watchers *watchers_start(const struct opts *o, uint64_t t0, uint64_t spread_ns)
{
	struct watchers *ws = XNEW(struct watchers);
	struct xp_err err = { 0 };
	char hdr[512];
	ws->o = o;
	if (xp_client_normalise_addr(o->addr, &ws->base, &err) < 0) {
		fprintf(stderr, "xp_bench_agents: %s\n", err.text);
		exit(2);
	}
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", o->token);
	ws->hdrs = curl_slist_append(NULL, hdr);
	ws->hdrs = curl_slist_append(ws->hdrs, "Expect:");
	ws->w = XNEWV(struct watcher, o->watchers);
	for (size_t i = 0; i < o->watchers; i++) {
		struct watcher *w = &ws->w[i];
		w->node = i % o->agents;
		xp_sb_init(&w->buf);
		w->h = curl_easy_init();
		curl_easy_setopt(w->h, CURLOPT_HTTPHEADER, ws->hdrs);
		curl_easy_setopt(w->h, CURLOPT_WRITEFUNCTION, watch_write);
		curl_easy_setopt(w->h, CURLOPT_WRITEDATA, &w->buf);
		curl_easy_setopt(w->h, CURLOPT_PRIVATE, (char *)w);
		curl_easy_setopt(w->h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(w->h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
		curl_easy_setopt(w->h, CURLOPT_TIMEOUT_MS, (long)(o->watch_wait + 15) * 1000);
		curl_easy_setopt(w->h, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(w->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
		if (o->sources > 1) {
			/* one source address has ~28,000 ephemeral ports: spread the
			   polls over several loopback addresses ("host!" = no lookup) */
			char src[48];
			snprintf(src, sizeof(src), "host!127.0.0.%zu", 1 + i % o->sources);
			curl_easy_setopt(w->h, CURLOPT_INTERFACE, src);
		}
	}
	pthread_mutex_init(&ws->mu, NULL);
	ws->t0 = t0;
	ws->spread_ns = spread_ns;
	if (pthread_create(&ws->tid, NULL, watch_main, ws) != 0) {
		fprintf(stderr, "xp_bench_agents: cannot start the watcher thread\n");
		exit(1);
	}
	return ws;
}

static void watchers_stop(struct watchers *ws)
{
	if (!ws)
		return;
	atomic_store(&ws->stop, 1);
	pthread_join(ws->tid, NULL);
	if (ws->leak)
		return;
	for (size_t i = 0; i < ws->o->watchers; i++) {
		curl_easy_cleanup(ws->w[i].h);
		xp_sb_free(&ws->w[i].buf);
	}
	curl_slist_free_all(ws->hdrs);
	free(ws->w);
	free(ws->base);
	pthread_mutex_destroy(&ws->mu);
	free(ws);
}

/* ---- the run ---- */

/* Gather the workers' samples: sorted latencies from schedule and from send. */
static size_t gather(struct worker *w, size_t nw, uint32_t **sched, uint32_t **send)
{
	size_t n = 0, k = 0;
	for (size_t i = 0; i < nw; i++)
		n += w[i].n;
	*sched = XNEWV(uint32_t, n ? n : 1);
	*send = XNEWV(uint32_t, n ? n : 1);
	for (size_t i = 0; i < nw; i++) {
		memcpy(*sched + k, w[i].sched_us, w[i].n * sizeof(uint32_t));
		memcpy(*send + k, w[i].send_us, w[i].n * sizeof(uint32_t));
		k += w[i].n;
	}
	qsort(*sched, n, sizeof(uint32_t), cmp_u32);
	qsort(*send, n, sizeof(uint32_t), cmp_u32);
	return n;
}

static size_t errors_of(struct worker *w, size_t nw, const char *what)
{
	size_t e = 0;
	for (size_t i = 0; i < nw; i++) {
		if (w[i].errors && !e)
			fprintf(stderr, "xp_bench_agents: %s: first error: %s\n", what,
				w[i].first_error);
		e += w[i].errors;
	}
	return e;
}

static int do_register(const struct opts *o, struct worker *w)
{
	struct reg r = { .o = o };
	struct reg_arg *args = XNEWV(struct reg_arg, o->threads);
	struct proc p0, p1;
	r.bodies = make_bodies(o);
	pthread_barrier_init(&r.go, NULL, (unsigned)o->threads + 1);
	for (size_t i = 0; i < o->threads; i++) {
		reset(&w[i]);
		args[i] = (struct reg_arg){ &r, &w[i] };
		if (pthread_create(&w[i].tid, NULL, reg_main, &args[i]) != 0) {
			fprintf(stderr, "xp_bench_agents: cannot start thread %zu\n", i);
			exit(1);
		}
	}
	proc_read(o->server_pid, &p0);
	uint64_t t0 = xp_mono_ns();
	pthread_barrier_wait(&r.go);
	for (size_t i = 0; i < o->threads; i++)
		pthread_join(w[i].tid, NULL);
	double wall = (double)(xp_mono_ns() - t0) / 1e9;
	proc_read(o->server_pid, &p1);
	pthread_barrier_destroy(&r.go);
	size_t errors = errors_of(w, o->threads, "register");
	uint32_t *lat, *lat2;
	size_t n = gather(w, o->threads, &lat, &lat2);
	double cpu = p0.ok && p1.ok ? p1.cpu_s - p0.cpu_s : -1;
	printf("register agents=%zu devices=%zu threads=%zu errors=%zu wall_s=%.3f per_s=%.1f "
	       "p50_ms=%.2f p99_ms=%.2f max_ms=%.2f server_cpu_s=%.2f server_cpu_us_per_reg=%.1f "
	       "server_rss_mib=%.1f\n",
	       o->agents, o->devices, o->threads, errors, wall, (double)n / wall,
	       pct_ms(lat, n, 0.5), pct_ms(lat, n, 0.99), n ? lat[n - 1] / 1e3 : 0, cpu,
	       n && cpu >= 0 ? cpu * 1e6 / (double)n : -1, p1.rss_mib);
	printf("# registration: %zu agents (%zu devices each) in %.2f s, %.0f/s from %zu "
	       "connections; p99 %.1f ms; %zu errors\n",
	       n, o->devices, wall, (double)n / wall, o->threads, pct_ms(lat, n, 0.99), errors);
	fflush(stdout);
	free(lat);
	free(lat2);
	for (size_t i = 0; i < o->agents; i++)
		free(r.bodies[i]);
	free(r.bodies);
	free(args);
	return errors ? -1 : 0;
}

/* One heartbeat step. Returns 0, 1 when a ramp stops after it (p99 over
 * --stop-p99-ms, errors or missed beats), -1 on errors or missed beats.
 * The first step starts the watchers (*wsp). */
static int do_step(const struct opts *o, struct worker *w, double period, double seconds,
		   struct watchers **wsp)
{
	struct step s = { .o = o, .period = period };
	struct hb_arg *args = XNEWV(struct hb_arg, o->threads);
	struct proc p0, p1;
	double warm = o->warmup >= 0 ? o->warmup : (period > 1 ? period : 1);
	s.gap_ns = period * 1e9 / (double)o->agents;
	s.t0 = xp_mono_ns() + 50000000ull; /* the threads are started by then */
	s.ws = s.t0 + (uint64_t)(warm * 1e9);
	s.we = s.ws + (uint64_t)(seconds * 1e9);
	s.give_up = s.we + DRAIN_NS;
	if (!*wsp && o->watchers)
		*wsp = watchers_start(o, s.t0, (uint64_t)(warm * 1e9 * 0.8));
	struct watchers *ws = *wsp;
	for (size_t i = 0; i < o->threads; i++) {
		reset(&w[i]);
		args[i] = (struct hb_arg){ &s, &w[i] };
		if (pthread_create(&w[i].tid, NULL, hb_main, &args[i]) != 0) {
			fprintf(stderr, "xp_bench_agents: cannot start thread %zu\n", i);
			exit(1);
		}
	}
	size_t wr0 = 0, we0 = 0;
	sleep_until(s.ws);
	proc_read(o->server_pid, &p0);
	double c0 = self_cpu_s();
	if (ws)
		wr0 = atomic_load(&ws->replies), we0 = atomic_load(&ws->errors);
	sleep_until(s.we);
	proc_read(o->server_pid, &p1);
	double c1 = self_cpu_s();
	size_t w_inflight = ws ? atomic_load(&ws->in_flight) : 0;
	size_t w_replies = ws ? atomic_load(&ws->replies) - wr0 : 0;
	size_t w_errors = ws ? atomic_load(&ws->errors) - we0 : 0;
	for (size_t i = 0; i < o->threads; i++)
		pthread_join(w[i].tid, NULL);
	size_t errors = errors_of(w, o->threads, "heartbeat"), missed = 0, done = 0;
	for (size_t i = 0; i < o->threads; i++) {
		missed += w[i].missed;
		done += w[i].done_in_window;
	}
	uint32_t *sc, *se;
	size_t n = gather(w, o->threads, &sc, &se);
	double cpu = p0.ok && p1.ok ? p1.cpu_s - p0.cpu_s : -1;
	double offered = (double)o->agents / period, rate = (double)done / seconds;
	double us_per = done && cpu >= 0 ? cpu * 1e6 / (double)done : -1;
	double p99 = pct_ms(sc, n, 0.99);
	printf("heartbeat agents=%zu devices=%zu period_s=%g offered_per_s=%.1f threads=%zu "
	       "watchers=%zu window_s=%g beats=%zu per_s=%.1f errors=%zu missed=%zu "
	       "sched_p50_ms=%.2f sched_p90_ms=%.2f sched_p99_ms=%.2f sched_max_ms=%.2f "
	       "send_p50_ms=%.2f send_p90_ms=%.2f send_p99_ms=%.2f send_max_ms=%.2f "
	       "server_cpu_s=%.2f server_cpu_us_per_hb=%.1f server_cpu_pct=%.1f "
	       "server_rss_mib=%.1f server_threads=%ld server_fds=%ld client_cpu_pct=%.1f "
	       "watch_in_flight=%zu watch_replies=%zu watch_errors=%zu watch_early=%zu\n",
	       o->agents, o->devices, period, offered, o->threads, o->watchers, seconds, done, rate,
	       errors, missed, pct_ms(sc, n, 0.5), pct_ms(sc, n, 0.9), p99, n ? sc[n - 1] / 1e3 : 0,
	       pct_ms(se, n, 0.5), pct_ms(se, n, 0.9), pct_ms(se, n, 0.99), n ? se[n - 1] / 1e3 : 0,
	       cpu, us_per, cpu >= 0 ? 100 * cpu / seconds : -1, p1.rss_mib, p1.threads, p1.fds,
	       100 * (c1 - c0) / seconds, w_inflight, w_replies, w_errors,
	       ws ? atomic_load(&ws->early) : 0);
	printf("# heartbeats: %zu agents x %zu devices every %g s (%.0f/s offered): %.0f/s "
	       "answered, p50/p99/max %.1f/%.1f/%.1f ms from schedule (%.1f/%.1f ms from send), "
	       "%zu errors, %zu missed; controller %.1f us CPU per heartbeat (%.0f%% of a core), "
	       "RSS %.0f MiB, %ld threads\n",
	       o->agents, o->devices, period, offered, rate, pct_ms(sc, n, 0.5), p99,
	       n ? sc[n - 1] / 1e3 : 0, pct_ms(se, n, 0.5), pct_ms(se, n, 0.99), errors, missed,
	       us_per, cpu >= 0 ? 100 * cpu / seconds : -1, p1.rss_mib, p1.threads);
	if (ws) {
		pthread_mutex_lock(&ws->mu);
		printf("# watchers: %zu asked, %zu polls in flight at the window's end (most at "
		       "once: %zu), %zu replies and %zu failures in the window, %zu early "
		       "returns in all%s%s\n",
		       o->watchers, w_inflight, atomic_load(&ws->max_in_flight), w_replies,
		       w_errors, atomic_load(&ws->early),
		       ws->first_error[0] ? "; first failure: " : "", ws->first_error);
		pthread_mutex_unlock(&ws->mu);
	}
	fflush(stdout);
	free(sc);
	free(se);
	free(args);
	if (errors || missed || w_errors)
		return -1;
	return o->stop_p99_ms > 0 && p99 > o->stop_p99_ms;
}

/* GET /v1/nodes: every agent node ready and not suspect? */
static int check_nodes(const struct opts *o, struct xp_client *c)
{
	struct xp_err err = { 0 };
	json_t *r = NULL, *n;
	size_t i, agents = 0, ready = 0, suspect = 0, down = 0, other = 0;
	long long max_age = 0;
	if (xp_client_json(c, "GET", "/v1/nodes", NULL, &r, &err) < 0) {
		fprintf(stderr, "xp_bench_agents: GET /v1/nodes: %s\n", err.text);
		return -1;
	}
	json_array_foreach(json_object_get(r, "nodes"), i, n)
	{
		const char *name = json_string_value(json_object_get(n, "name"));
		const char *state = json_string_value(json_object_get(n, "state"));
		if (!name || strncmp(name, "agent-", 6))
			continue;
		agents++;
		if (json_is_true(json_object_get(n, "suspect")))
			suspect++;
		if (state && !strcmp(state, "ready"))
			ready++;
		else if (state && !strcmp(state, "down"))
			down++;
		else
			other++;
		long long age = json_integer_value(json_object_get(n, "heartbeat_age_ms"));
		max_age = age > max_age ? age : max_age;
	}
	json_decref(r);
	printf("nodes agents=%zu expected=%zu ready=%zu suspect=%zu down=%zu other=%zu "
	       "max_heartbeat_age_ms=%lld\n",
	       agents, o->agents, ready, suspect, down, other, max_age);
	printf("# nodes at the end: %zu of %zu agent nodes ready, %zu suspect, %zu down (lost), "
	       "oldest heartbeat %lld ms ago\n",
	       ready, o->agents, suspect, down, max_age);
	fflush(stdout);
	return agents == o->agents && ready == agents && !suspect ? 0 : -1;
}

/* "S[,S...]": positive seconds */
static int seconds_list(const char *arg, double *v, size_t *n)
{
	char *end;
	*n = 0;
	for (const char *p = arg; *p; p = end) {
		if (*n == MAX_STEPS) {
			fprintf(stderr, "xp_bench_agents: at most %d values in '%s'\n", MAX_STEPS,
				arg);
			return -1;
		}
		v[(*n)++] = strtod(p, &end);
		if (end == p || v[*n - 1] <= 0 || (*end && *end != ',')) {
			fprintf(stderr, "xp_bench_agents: expected seconds S[,S...], got '%s'\n",
				arg);
			return -1;
		}
		end += *end == ',';
	}
	return *n ? 0 : -1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: xp_bench_agents --addr ADDR (--token T | --token-file F) [--agents N]\n"
		"                       [--devices D] [--period S[,S...]] [--seconds S[,S...]]\n"
		"                       [--warmup S]\n"
		"                       [--threads T] [--watchers W] [--watch-wait S]\n"
		"                       [--server-pid PID] [--stop-p99-ms MS] [--sources K]\n"
		"Registers N agent nodes (POST /v1/agents), then each beats once per period\n"
		"(POST /v1/nodes/NAME/heartbeat) on an open-loop schedule over T kept-alive\n"
		"connections; W long polls watch assignments meanwhile. Defaults: 10000 agents,\n"
		"8 devices, period 5 s, 30 s measured after one period of warm-up, 32 threads,\n"
		"0 watchers (wait 30 s). A period list is a ramp on the same server. With\n"
		"--sources K the watchers bind to 127.0.0.1 .. 127.0.0.K in turn (one source\n"
		"address has ~28,000 ephemeral ports).\n");
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "token", required_argument, NULL, 't' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "agents", required_argument, NULL, 'n' },
		{ "devices", required_argument, NULL, 'd' },
		{ "period", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 's' },
		{ "warmup", required_argument, NULL, 'u' },
		{ "threads", required_argument, NULL, 'j' },
		{ "watchers", required_argument, NULL, 'w' },
		{ "watch-wait", required_argument, NULL, 'W' },
		{ "server-pid", required_argument, NULL, 'P' },
		{ "stop-p99-ms", required_argument, NULL, 'S' },
		{ "sources", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .addr = "127.0.0.1:7700",
			  .agents = 10000,
			  .devices = 8,
			  .threads = 32,
			  .warmup = -1,
			  .watch_wait = 30,
			  .periods = { 5 },
			  .nperiods = 1,
			  .seconds = { 30 },
			  .nseconds = 1 };
	char *tokbuf = NULL;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			o.addr = optarg;
			break;
		case 't':
			o.token = optarg;
			break;
		case 'T':
			free(tokbuf);
			if (!(tokbuf = xp_bench_token_file("xp_bench_agents", optarg)))
				return 2;
			o.token = tokbuf;
			break;
		case 'n':
			o.agents = strtoul(optarg, NULL, 10);
			break;
		case 'd':
			o.devices = strtoul(optarg, NULL, 10);
			break;
		case 'p':
			if (seconds_list(optarg, o.periods, &o.nperiods) < 0)
				return 2;
			break;
		case 's':
			if (seconds_list(optarg, o.seconds, &o.nseconds) < 0)
				return 2;
			break;
		case 'u':
			o.warmup = strtod(optarg, NULL);
			break;
		case 'j':
			o.threads = strtoul(optarg, NULL, 10);
			break;
		case 'w':
			o.watchers = strtoul(optarg, NULL, 10);
			break;
		case 'W':
			o.watch_wait = atoi(optarg);
			break;
		case 'P':
			o.server_pid = strtol(optarg, NULL, 10);
			break;
		case 'S':
			o.stop_p99_ms = strtod(optarg, NULL);
			break;
		case 'o':
			o.sources = strtoul(optarg, NULL, 10);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!o.token || o.agents < 1 || o.agents > 1000000 || o.sources > 254 || o.devices > 64 || o.threads < 1 ||
	    o.threads > 4096 || o.watch_wait < 3 || o.watch_wait > 120 || optind != argc) {
		usage(stderr);
		return 2;
	}
	/* one descriptor per connection: watchers need as many */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct worker *w = XNEWV(struct worker, o.threads);
	for (size_t i = 0; i < o.threads; i++) {
		struct xp_err err = { 0 };
		w[i].idx = i;
		if (!(w[i].c = xp_client_create(o.addr, o.token, &err))) {
			fprintf(stderr, "xp_bench_agents: %s\n", err.text);
			return 2;
		}
	}
	int rc = do_register(&o, w);
	struct watchers *ws = NULL;
	for (size_t k = 0; rc == 0 && k < o.nperiods; k++) {
		int r = do_step(&o, w, o.periods[k], o.seconds[k < o.nseconds ? k : o.nseconds - 1],
				&ws);
		if (r < 0)
			rc = -1;
		if (r != 0 && k + 1 < o.nperiods) {
			printf("# ramp stopped after the %g s period: %s\n", o.periods[k],
			       r < 0 ? "errors or missed beats" : "p99 over the limit");
			fflush(stdout);
			break;
		}
	}
	if (check_nodes(&o, w[0].c) < 0)
		rc = -1;
	watchers_stop(ws);
	for (size_t i = 0; i < o.threads; i++) {
		xp_client_destroy(w[i].c);
		free(w[i].sched_us);
		free(w[i].send_us);
	}
	free(w);
	free(tokbuf);
	curl_global_cleanup();
	return rc < 0 ? 1 : 0;
}
