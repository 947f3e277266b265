/*
 * bench_commit: the store's durable commit throughput.
 *
 *   xp_bench_commit [-p PRODUCERS] [-n PER_PRODUCER] [-d DIR]
 *
 * Opens a fresh store in DIR (default: a new /tmp/xpbenchXXXXXX, removed
 * afterwards) with sync=1; each producer thread appends a 200-byte record,
 * registers a waiter and waits for it, n times (what a client submitting
 * jobs one after another does). Prints one line: producers, records,
 * commits, records per commit, seconds, records/s, mean commit ms.
 * Only the public API (store.h), so one source measures any version.
 */
#define _GNU_SOURCE /* nftw */
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/clock.h"
#include "store/store.h"

struct prod {
	struct xp_store *s;
	int n, done, rc, bad;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static void on_durable(void *arg, int rc)
{
	struct prod *p = arg;
	pthread_mutex_lock(&p->mu);
	p->done = 1;
	p->rc = rc;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static void *run(void *arg)
{
	struct prod *p = arg;
	char body[201];
	memset(body, 'x', 200);
	body[200] = '\0';
	for (int i = 0; i < p->n; i++) {
		if (xp_store_append(p->s, "job.submit", body, 200, 0) == 0)
			p->bad++;
		p->done = 0;
		xp_store_when_durable(p->s, on_durable, p);
		pthread_mutex_lock(&p->mu);
		while (!p->done)
			pthread_cond_wait(&p->cv, &p->mu);
		p->bad += p->rc != 0;
		pthread_mutex_unlock(&p->mu);
	}
	return NULL;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

int main(int argc, char **argv)
{
	int np = 1, per = 500, c;
	char tmp[] = "/tmp/xpbenchXXXXXX", dir[256];
	const char *root = NULL;
	while ((c = getopt(argc, argv, "p:n:d:")) != -1) {
		if (c == 'p')
			np = atoi(optarg);
		else if (c == 'n')
			per = atoi(optarg);
		else if (c == 'd')
			root = optarg;
		else
			return 2;
	}
	if (np < 1 || per < 1)
		return 2;
	if (!root && !(root = mkdtemp(tmp)))
		return 1;
	snprintf(dir, sizeof(dir), "%s/data", root);
	struct xp_err err = { 0 };
	struct xp_store *s;
	if (xp_store_open(dir, NULL, &s, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		return 1;
	}
	struct prod *p = calloc((size_t)np, sizeof(*p));
	pthread_t *th = calloc((size_t)np, sizeof(*th));
	uint64_t t0 = xp_mono_ns();
	for (int i = 0; i < np; i++) {
		p[i] = (struct prod){ .s = s, .n = per };
		pthread_mutex_init(&p[i].mu, NULL);
		pthread_cond_init(&p[i].cv, NULL);
		pthread_create(&th[i], NULL, run, &p[i]);
	}
	int bad = 0;
	for (int i = 0; i < np; i++) {
		pthread_join(th[i], NULL);
		bad += p[i].bad;
	}
	double secs = (double)(xp_mono_ns() - t0) / 1e9;
	struct xp_store_stats st;
	xp_store_stats(s, &st);
	printf("producers %d records %llu commits %llu per_commit %.1f seconds %.3f "
	       "records_per_s %.0f mean_commit_ms %.3f%s\n",
	       np, (unsigned long long)st.records, (unsigned long long)st.commits,
	       (double)st.records / (double)st.commits, secs, (double)st.records / secs,
	       st.commit_seconds_sum * 1e3 / (double)st.commits, bad ? " FAILED" : "");
	xp_store_close(s);
	if (root == tmp)
		nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(p);
	free(th);
	return bad ? 1 : 0;
}
