/*
 * xp_bench_submit: job submission over the controller's HTTP API, and the
 * submit-to-start latency read back from the job objects.
 *
 *   xp_bench_submit --addr ADDR (--token T | --token-file F) --clients N --jobs M
 *                   [--first I] [--duration D] [--collect] [--dump FILE] [--ca FILE]
 *   xp_bench_submit --addr ADDR (--token T | --token-file F) --collect-ids LO-HI
 *                   [--t0-ms MS] [--dump FILE]
 *
 * Submit: N threads, each with its own client (src/client: its own
 * HTTP/1.1 transport, one kept-alive connection per thread; for https://
 * verified against --ca FILE, docs/design/tls.md),
 * take job indexes I..I+M-1 from a shared counter and POST one job each
 * to /v1/jobs. Job i is row i mod 8 of the job mix (mix.h). An
 * acknowledgement counts only as a 201: the controller answers once the
 * submit is in its fsynced journal.
 * The clock runs from the first request (all threads released together,
 * connections not yet open) to the last reply.
 *
 * Collect (--collect after a submit, or --collect-ids alone): wait until
 * no job of the id range is pending or running, then read every job object
 * of the range (GET /v1/jobs, pages of 1000) and report submit-to-start
 * percentiles from their submitted_at / started_at (milliseconds, the
 * controller's own clock), and when the last job started and finished,
 * relative to T0 (--t0-ms, or the first request of the submit).
 * --dump FILE also writes one line per job of the range: "id submitted_ms
 * started_ms finished_ms state" (epoch milliseconds, 0 when unset), for
 * joining with what the agents recorded (bench/controller_real.sh).
 * --duration "" sends no duration: on agent nodes a job then runs its
 * command (sleep 0) as a real process.
 *
 * Output: one line per part, "key=value" words, e.g.
 *   submit clients=64 jobs=10000 errors=0 wall_s=2.812 jobs_per_s=3556.2 ...
 *   latency jobs=10000 p50_ms=1 p90_ms=3 p99_ms=9 max_ms=31 all_started_s=2.9 ...
 * Exit status 1 if any request failed or a job did not start.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "lib/clock.h"
#include "lib/fileio.h"
#include "lib/timefmt.h"
#include "lib/xalloc.h"
#include "mix.h"

struct run {
	const char *addr, *token, *duration;
	size_t first, jobs;
	atomic_size_t next;
	uint64_t t0_ns; /* the first request */
	double slow_ms; /* > 0: print each request slower than this to stderr */
	pthread_barrier_t go;
	uint32_t *ack_us; /* per job: request to reply, microseconds */
};

static const char *g_ca; /* --ca: https:// verified against this CA file */

/* A client of the run's controller (with --ca's CAs); NULL: err says why */
static struct xp_client *bench_client(const char *addr, const char *token, struct xp_err *err)
{
	struct xp_client *c = xp_client_create(addr, token, err);
	if (c && xp_client_set_ca(c, g_ca, err) < 0) {
		xp_client_destroy(c);
		c = NULL;
	}
	return c;
}

struct worker {
	struct run *r;
	pthread_t tid;
	size_t errors;
	uint64_t lo, hi; /* job ids acknowledged */
	char first_error[1024];
};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void note_error(struct worker *w, const char *prefix, const char *what)
{
	if (!w->errors++)
		snprintf(w->first_error, sizeof(w->first_error), "%s%.600s", prefix, what);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct run *r = w->r;
	struct xp_err err = { 0 };
	struct xp_client *c = bench_client(r->addr, r->token, &err);
	char body[512];

	w->lo = UINT64_MAX;
	pthread_barrier_wait(&r->go);
	for (size_t nth = 0;; nth++) {
		size_t k = atomic_fetch_add(&r->next, 1);
		if (k >= r->jobs)
			break;
		if (!c) {
			note_error(w, "client: ", err.text);
			continue;
		}
		size_t len = xp_mix_spec(r->first + k, r->duration, body, sizeof(body));
		long status = 0;
		char *resp = NULL;
		size_t rlen = 0;
		uint64_t t0 = xp_mono_ns();
		int rc = xp_client_request(c, "POST", "/v1/jobs", "application/json", body, len,
					   &status, &resp, &rlen, &err);
		uint64_t dt = (xp_mono_ns() - t0) / 1000;
		r->ack_us[k] = dt > UINT32_MAX ? UINT32_MAX : (uint32_t)dt;
		if (r->slow_ms > 0 && (double)dt / 1e3 > r->slow_ms)
			fprintf(stderr,
				"slow request: job %zu took %.1f ms, sent %.3f s after the first; "
				"request %zu of its client\n",
				r->first + k, (double)dt / 1e3, (double)(t0 - r->t0_ns) / 1e9,
				nth + 1);
		unsigned long long id = 0;
		if (rc < 0)
			note_error(w, "", err.text);
		else if (status != 201)
			note_error(w, "HTTP reply: ", resp ? resp : "");
		else if (sscanf(resp, "{\"id\":%llu", &id) != 1)
			note_error(w, "a 201 without an id: ", resp);
		if (id) {
			w->lo = id < w->lo ? id : w->lo;
			w->hi = id > w->hi ? id : w->hi;
		}
		free(resp);
	}
	xp_client_destroy(c);
	return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* the percentile of ../shared/bench/slurm/jobcomp_stats.py: v[min(n-1, p*n)] */
static size_t rank(double p, size_t n)
{
	size_t i = (size_t)(p * (double)n);
	return i < n ? i : n - 1;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int submit(struct run *r, size_t clients, uint64_t *lo, uint64_t *hi, int64_t *t0_ms)
{
	struct worker *w = XNEWV(struct worker, clients);
	size_t errors = 0;
	double cpu0 = cpu_s();

	r->ack_us = XNEWV(uint32_t, r->jobs ? r->jobs : 1);
	pthread_barrier_init(&r->go, NULL, (unsigned)clients + 1);
	for (size_t i = 0; i < clients; i++) {
		w[i].r = r;
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) {
			fprintf(stderr, "xp_bench_submit: cannot start thread %zu\n", i);
			exit(1);
		}
	}
	*t0_ms = wall_ms();
	uint64_t t0 = r->t0_ns = xp_mono_ns();
	pthread_barrier_wait(&r->go);
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < clients; i++) {
		pthread_join(w[i].tid, NULL);
		if (w[i].errors && !errors)
			fprintf(stderr, "xp_bench_submit: %s\n", w[i].first_error);
		errors += w[i].errors;
		*lo = w[i].lo < *lo ? w[i].lo : *lo;
		*hi = w[i].hi > *hi ? w[i].hi : *hi;
	}
	double wall = (double)(xp_mono_ns() - t0) / 1e9;
	pthread_barrier_destroy(&r->go);
	qsort(r->ack_us, r->jobs, sizeof(*r->ack_us), cmp_u32);
	size_t n = r->jobs;
	printf("submit clients=%zu jobs=%zu errors=%zu wall_s=%.3f jobs_per_s=%.1f "
	       "ack_p50_ms=%.2f ack_p99_ms=%.2f ack_max_ms=%.2f client_cpu_s=%.2f ids=%llu-%llu\n",
	       clients, n, errors, wall, (double)n / wall, r->ack_us[rank(0.5, n)] / 1e3,
	       r->ack_us[rank(0.99, n)] / 1e3, r->ack_us[n - 1] / 1e3, cpu_s() - cpu0,
	       (unsigned long long)(*lo == UINT64_MAX ? 0 : *lo), (unsigned long long)*hi);
	fflush(stdout);
	free(r->ack_us);
	free(w);
	return errors ? -1 : 0;
}

static int get_json(struct xp_client *c, const char *path, json_t **reply)
{
	struct xp_err err = { 0 };
	int rc = xp_client_json(c, "GET", path, NULL, reply, &err);
	if (rc < 0)
		fprintf(stderr, "xp_bench_submit: GET %s: %s\n", path, err.text);
	return rc;
}

static int64_t time_field(json_t *job, const char *key)
{
	int64_t ms = 0;
	const char *s = json_string_value(json_object_get(job, key));
	if (!s || xp_time_parse(s, &ms) < 0)
		return 0;
	return ms;
}

/* wait until no job of lo..hi is pending or running, then report */
static int collect(const char *addr, const char *token, uint64_t lo, uint64_t hi, int64_t t0_ms,
		   const char *dump_path)
{
	struct xp_err err = { 0 };
	struct xp_client *c = bench_client(addr, token, &err);
	char path[160];
	int64_t *lat = XNEWV(int64_t, hi - lo + 1);
	int64_t first_sub = INT64_MAX, last_start = 0, last_end = 0;
	size_t n = 0, seen = 0, not_started = 0;
	uint64_t waited = xp_mono_ns();
	int rc = 0;
	FILE *dump = NULL;

	if (!c) {
		fprintf(stderr, "xp_bench_submit: %s\n", err.text);
		free(lat);
		return -1;
	}
	if (dump_path && !(dump = fopen(dump_path, "w"))) {
		fprintf(stderr, "xp_bench_submit: %s: cannot write\n", dump_path);
		rc = -1;
		goto out;
	}
	for (;;) { /* the oldest live job of the range, if any */
		json_t *o = NULL;
		snprintf(path, sizeof(path), "/v1/jobs?state=pending,running&limit=1&after=%llu",
			 (unsigned long long)lo - 1);
		if (get_json(c, path, &o) < 0) {
			rc = -1;
			goto out;
		}
		json_t *j = json_array_get(json_object_get(o, "jobs"), 0);
		int live = j && (uint64_t)json_integer_value(json_object_get(j, "id")) <= hi;
		json_decref(o);
		if (!live)
			break;
		if (xp_mono_ns() - waited > 600ull * 1000000000ull) {
			fprintf(stderr, "xp_bench_submit: jobs still live after 600 s\n");
			rc = -1;
			goto out;
		}
		usleep(20000);
	}
	uint64_t after = lo - 1;
	while (after < hi) {
		json_t *o = NULL, *j;
		size_t i;
		snprintf(path, sizeof(path), "/v1/jobs?limit=1000&after=%llu",
			 (unsigned long long)after);
		if (get_json(c, path, &o) < 0) {
			rc = -1;
			goto out;
		}
		json_t *jobs = json_object_get(o, "jobs");
		json_array_foreach(jobs, i, j)
		{
			uint64_t id = (uint64_t)json_integer_value(json_object_get(j, "id"));
			if (id > hi)
				break;
			seen++;
			int64_t sub = time_field(j, "submitted_at"),
				start = time_field(j, "started_at"),
				end = time_field(j, "finished_at");
			if (dump) {
				const char *st = json_string_value(json_object_get(j, "state"));
				fprintf(dump, "%llu %lld %lld %lld %s\n", (unsigned long long)id,
					(long long)sub, (long long)start, (long long)end,
					st ? st : "-");
			}
			if (!start) {
				not_started++;
				continue;
			}
			lat[n++] = start - sub;
			first_sub = sub < first_sub ? sub : first_sub;
			last_start = start > last_start ? start : last_start;
			last_end = end > last_end ? end : last_end;
		}
		json_t *next = json_object_get(o, "next");
		after = json_is_integer(next) ? (uint64_t)json_integer_value(next) : hi;
		json_decref(o);
	}
	if (!n) {
		fprintf(stderr, "xp_bench_submit: no started job in %llu-%llu\n",
			(unsigned long long)lo, (unsigned long long)hi);
		rc = -1;
		goto out;
	}
	if (!t0_ms)
		t0_ms = first_sub;
	qsort(lat, n, sizeof(*lat), cmp_i64);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)lat[i];
	printf("latency jobs=%zu not_started=%zu p50_ms=%lld p90_ms=%lld p99_ms=%lld max_ms=%lld "
	       "mean_ms=%.2f all_started_s=%.3f all_done_s=%.3f\n",
	       seen, not_started, (long long)lat[rank(0.5, n)], (long long)lat[rank(0.9, n)],
	       (long long)lat[rank(0.99, n)], (long long)lat[n - 1], sum / (double)n,
	       (double)(last_start - t0_ms) / 1e3, (double)(last_end - t0_ms) / 1e3);
	if (not_started)
		rc = -1;
out:
	if (dump && fclose(dump) != 0)
		rc = -1;
	free(lat);
	xp_client_destroy(c);
	return rc;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: xp_bench_submit --addr ADDR (--token T | --token-file F) --clients N "
		   "--jobs M\n"
		   "                       [--first I] [--duration D] [--collect] [--slow-ms MS]\n"
		   "                       [--dump FILE] [--ca FILE]\n"
		   "       xp_bench_submit --addr ADDR (--token T | --token-file F) --collect-ids "
		   "LO-HI [--t0-ms MS] [--dump FILE]\n"
		   "N concurrent clients POST M jobs of the Slurm peer's job mix (job i = row i "
		   "mod 8)\n"
		   "to /v1/jobs and count 201 replies; --collect then waits until they have all\n"
		   "finished and prints submit-to-start percentiles from the job objects.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "token", required_argument, NULL, 't' },
		{ "token-file", required_argument, NULL, 'T' },
		{ "clients", required_argument, NULL, 'c' },
		{ "jobs", required_argument, NULL, 'n' },
		{ "first", required_argument, NULL, 'f' },
		{ "duration", required_argument, NULL, 'd' },
		{ "collect", no_argument, NULL, 'C' },
		{ "collect-ids", required_argument, NULL, 'I' },
		{ "t0-ms", required_argument, NULL, '0' },
		{ "slow-ms", required_argument, NULL, 's' },
		{ "dump", required_argument, NULL, 'D' },
		{ "ca", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct run r = { .addr = "127.0.0.1:7700", .duration = "0s" };
	size_t clients = 1;
	int do_collect = 0, opt;
	unsigned long long lo = 0, hi = 0;
	long long t0_ms = 0;
	char *tokbuf = NULL;
	const char *dump = NULL;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'a':
			r.addr = optarg;
			break;
		case 'A':
			g_ca = optarg;
			break;
		case 't':
			r.token = optarg;
			break;
		case 'T':
			free(tokbuf);
			if (!(tokbuf = xp_bench_token_file("xp_bench_submit", optarg)))
				return 2;
			r.token = tokbuf;
			break;
		case 'c':
			clients = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			r.jobs = strtoul(optarg, NULL, 10);
			break;
		case 'f':
			r.first = strtoul(optarg, NULL, 10);
			break;
		case 'd':
			r.duration = *optarg ? optarg : NULL;
			break;
		case 'C':
			do_collect = 1;
			break;
		case 'I':
			if (sscanf(optarg, "%llu-%llu", &lo, &hi) != 2 || !lo || hi < lo) {
				fprintf(stderr, "xp_bench_submit: --collect-ids: expected LO-HI\n");
				return 2;
			}
			break;
		case '0':
			t0_ms = strtoll(optarg, NULL, 10);
			break;
		case 's':
			r.slow_ms = strtod(optarg, NULL);
			break;
		case 'D':
			dump = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!r.token || clients < 1 || clients > 4096 || (!lo && r.jobs < 1)) {
		usage(stderr);
		return 2;
	}
	int rc = 0;
	if (lo) {
		rc = collect(r.addr, r.token, lo, hi, t0_ms, dump);
	} else {
		uint64_t ilo, ihi;
		int64_t start_ms;
		rc = submit(&r, clients, &ilo, &ihi, &start_ms);
		if (rc == 0 && do_collect)
			rc = collect(r.addr, r.token, ilo, ihi, start_ms, dump);
	}
	free(tokbuf);
	return rc < 0 ? 1 : 0;
}
