/*
 * xp_bench_failover: clients that keep submitting through controller
 * failovers, and the check that nothing they were told was lost or doubled
 * (bench/ha.sh, make bench).
 *
 *   xp_bench_failover --addr A,B --token-file F --clients N --stop-file S --out LOG
 *                     [--pace-ms P]
 *   xp_bench_failover --addr A,B --token-file F --verify LOG
 *
 * Submit: N threads, each with its own client over every address (the
 * client's router moves on from a controller that does not listen or
 * answers 307), submit jobs named "ha" with Idempotency-Key "k<thread>-<j>";
 * a submit that fails is sent again with the same key (every 20 ms) until
 * it is acknowledged (201, or 200: the key's job already exists). A thread
 * stops before its next key once the file S exists; with --pace-ms it waits P ms
 * after each acknowledgement (so that the state, which a restarted follower
 * replays, grows at a steady rate rather than as fast as the leader takes). Each acknowledgement is
 * one LOG line: "KEY ID SENT_MS WALL_MS", epoch milliseconds of the request
 * that was acknowledged and of its reply (a request sent after a leader was
 * killed can only be acknowledged by the next one: bench/ha.sh measures the
 * takeover with it).
 *
 * Verify: every LOG key is submitted again with the same body: it must be
 * answered 200 with the same job id (the job is there, under the key it
 * was acknowledged with); then the jobs named "ha" are counted (GET
 * /v1/jobs?name=ha, pages of 1000): there must be exactly as many as keys
 * (none doubled by a retry that landed twice, none lost). Prints
 * "verify keys=K lost_or_changed=L jobs=J" and exits 1 unless L = 0 and
 * J = K.
 */
#define _GNU_SOURCE
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "lib/clock.h"
#include "lib/fileio.h"
#include "lib/xalloc.h"

static const char BODY[] = "{\"name\":\"ha\",\"command\":[\"sleep\",\"0\"],"
			   "\"resources\":{\"cpu\":1,\"memory\":\"1Gi\"}}";

struct opts {
	const char *addr, *token, *stop, *out, *verify;
	int clients, pace_ms;
};

struct worker {
	const struct opts *o;
	int idx;
	pthread_t tid;
	FILE *log;
	pthread_mutex_t *log_mu;
	uint64_t acked, retries;
};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* POST BODY with key; the job id on 201/200, 0 otherwise (*status the HTTP status). */
static unsigned long long post(struct xp_client *c, const char *key, long *status, int64_t *sent)
{
	char hdr[160];
	const char *hdrs[] = { hdr, NULL };
	char *resp = NULL;
	size_t rlen = 0;
	struct xp_err err = { 0 };
	unsigned long long id = 0;
	snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", key);
	if (sent)
		*sent = wall_ms();
	int rc = xp_client_call(c, "POST", "/v1/jobs", hdrs, "application/json", BODY,
				sizeof(BODY) - 1, &resp, &rlen, &err);
	*status = rc; /* 201 or 200, or the failure's (negative) code */
	if (rc == 201 || rc == 200) {
		json_t *o = json_loadb(resp, rlen, 0, NULL);
		id = (unsigned long long)json_integer_value(json_object_get(o, "id"));
		json_decref(o);
	}
	free(resp);
	return id;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct xp_err err = { 0 };
	struct xp_client *c = xp_client_create(w->o->addr, w->o->token, &err);
	if (!c) {
		fprintf(stderr, "xp_bench_failover: %s\n", err.text);
		return NULL;
	}
	xp_client_set_timeout(c, 10000);
	for (int j = 1; access(w->o->stop, F_OK) != 0; j++) {
		char key[64];
		long status;
		unsigned long long id;
		snprintf(key, sizeof(key), "k%d-%d", w->idx, j);
		int64_t sent;
		while (!(id = post(c, key, &status, &sent))) {
			w->retries++;
			struct timespec ts = { 0, 20 * 1000000L };
			nanosleep(&ts, NULL);
		}
		pthread_mutex_lock(w->log_mu);
		fprintf(w->log, "%s %llu %lld %lld\n", key, id, (long long)sent, (long long)wall_ms());
		fflush(w->log);
		pthread_mutex_unlock(w->log_mu);
		w->acked++;
		if (w->o->pace_ms > 0) {
			struct timespec ts = { w->o->pace_ms / 1000, (w->o->pace_ms % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	xp_client_destroy(c);
	return NULL;
}

static int run_submit(const struct opts *o)
{
	struct worker *w = XNEWV(struct worker, (size_t)o->clients);
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	FILE *log = fopen(o->out, "w");
	uint64_t acked = 0, retries = 0;
	if (!log) {
		perror(o->out);
		return 2;
	}
	for (int i = 0; i < o->clients; i++) {
		w[i] = (struct worker){ .o = o, .idx = i, .log = log, .log_mu = &mu };
		if (pthread_create(&w[i].tid, NULL, worker_main, &w[i]) != 0) {
			fprintf(stderr, "xp_bench_failover: cannot start thread %d\n", i);
			return 2;
		}
	}
	for (int i = 0; i < o->clients; i++) {
		pthread_join(w[i].tid, NULL);
		acked += w[i].acked;
		retries += w[i].retries;
	}
	fclose(log);
	printf("submit clients=%d acked=%llu retries=%llu\n", o->clients,
	       (unsigned long long)acked, (unsigned long long)retries);
	free(w);
	return 0;
}

static long count_jobs(struct xp_client *c)
{
	long n = 0;
	unsigned long long after = 0;
	for (;;) {
		char path[128];
		char *resp = NULL;
		size_t rlen = 0;
		long status = 0;
		struct xp_err err = { 0 };
		snprintf(path, sizeof(path), "/v1/jobs?name=ha&limit=1000%s%llu", after ? "&after=" : "",
			 after);
		if (!after)
			path[strlen(path) - 1] = '\0'; /* no "0" */
		if (xp_client_request(c, "GET", path, NULL, NULL, 0, &status, &resp, &rlen, &err) < 0 ||
		    status != 200) {
			fprintf(stderr, "xp_bench_failover: %s: %s\n", path, resp ? resp : err.text);
			free(resp);
			return -1;
		}
		json_t *o = json_loadb(resp, rlen, 0, NULL);
		free(resp);
		json_t *jobs = json_object_get(o, "jobs"), *next = json_object_get(o, "next");
		n += (long)json_array_size(jobs);
		after = json_is_integer(next) ? (unsigned long long)json_integer_value(next) : 0;
		json_decref(o);
		if (!after)
			return n;
	}
}

static int run_verify(const struct opts *o)
{
	struct xp_err err = { 0 };
	struct xp_client *c = xp_client_create(o->addr, o->token, &err);
	FILE *f = fopen(o->verify, "r");
	char key[64];
	unsigned long long id;
	long long ms;
	long keys = 0, bad = 0;
	if (!c || !f) {
		fprintf(stderr, "xp_bench_failover: %s\n", c ? o->verify : err.text);
		return 2;
	}
	while (fscanf(f, "%63s %llu %lld %lld", key, &id, &ms, &ms) == 4) {
		long status;
		unsigned long long now = post(c, key, &status, NULL);
		keys++;
		if (status != 200 || now != id) {
			if (bad++ < 5)
				fprintf(stderr, "key %s: acknowledged as job %llu, now HTTP %ld job %llu\n",
					key, id, status, now);
		}
	}
	fclose(f);
	long jobs = count_jobs(c);
	xp_client_destroy(c);
	printf("verify keys=%ld lost_or_changed=%ld jobs=%ld\n", keys, bad, jobs);
	return bad == 0 && jobs == keys ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct opts o = { .clients = 64 };
	const char *token_file = NULL;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--addr"))
			o.addr = argv[i + 1];
		else if (!strcmp(argv[i], "--token-file"))
			token_file = argv[i + 1];
		else if (!strcmp(argv[i], "--clients"))
			o.clients = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--stop-file"))
			o.stop = argv[i + 1];
		else if (!strcmp(argv[i], "--out"))
			o.out = argv[i + 1];
		else if (!strcmp(argv[i], "--pace-ms"))
			o.pace_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--verify"))
			o.verify = argv[i + 1];
	}
	static char tok[256];
	FILE *tf = token_file ? fopen(token_file, "r") : NULL;
	if (!o.addr || !tf || !fgets(tok, sizeof(tok), tf) || o.clients < 1 ||
	    (!o.verify && (!o.stop || !o.out))) {
		fprintf(stderr, "usage: xp_bench_failover --addr A,B --token-file F (--clients N "
				"--stop-file S --out LOG | --verify LOG)\n");
		return 2;
	}
	fclose(tf);
	tok[strcspn(tok, "\r\n")] = '\0';
	o.token = tok;
	return o.verify ? run_verify(&o) : run_submit(&o);
}
