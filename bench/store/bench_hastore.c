/*
 * bench_hastore: the two state designs of issue 23 on one real etcd, with
 * the same job traffic, so they can be compared in one run
 * (docs/results/ha.md, "Design (a) against design (b)").
 *
 *   xp_bench_hastore -e etcd://HOST:PORT -m a|b [-n JOBS] [-l LIVE] [-p PRODUCERS]
 *                    [-s SNAP_EVERY] [-d DIR]
 *
 * Each of P producer threads runs jobs one after another: submit (600
 * bytes), start (250) and, except for the last LIVE jobs in all, end (150),
 * waiting after each event until it is durable, as an HTTP client waits for
 * its acknowledgement. Then the state is loaded again from scratch, as a
 * controller that takes over does.
 *
 * (a) the journal in etcd, as built (src/store/store_etcd.c, driven through
 *     store.h only): every event a record, group commit in fenced txns; a
 *     snapshot of the whole state (live jobs 850 bytes, finished 1,000) every
 *     SNAP_EVERY records (the server's default 20,000), then the journal it
 *     covers deleted and etcd compacted. Load: the snapshot and the journal
 *     after it.
 * (b) the hybrid, modelled here: a job's live record is one key in etcd
 *     (put at submit, replaced at start: 600, then 850 bytes), deleted at the
 *     end in the same fenced txn batch as the others, and then archived (1,000
 *     bytes) to a local SQLite file (WAL, synchronous FULL) in one transaction
 *     per batch; etcd compacted every SNAP_EVERY events. Load: a range over
 *     the live keys, and opening the archive (its row count).
 * Both commit what is queued as one batch, in txns of at most 127 puts and
 * 1 MiB behind the leader key's guard, like the store.
 *
 * With -f FINISHED, the state starts with that many finished jobs kept (the
 * server's --max-finished history, 100,000 by default): in (a) a snapshot
 * holding them, written before the clock starts, and in every later one; in
 * (b) rows of the archive.
 *
 * Prints one line: design, jobs, events, seconds, events/s, jobs/s, etcd
 * commits (batches), bytes put (keys and values), etcd's database size at the end
 * (maintenance/status dbSize), load seconds and what it read.
 */
#define _GNU_SOURCE /* nftw */
#include <ftw.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/clock.h"
#include "store/etcd.h"
#include "store/store.h"

#define SUBMIT_B 600
#define START_B	 250
#define END_B	 150
#define LIVE_B	 (SUBMIT_B + START_B)
#define DONE_B	 (LIVE_B + END_B)

struct cfg {
	const char *url, *dir;
	char prefix_url[512];
	int design, producers, jobs, live, snap_every;
	long finished; /* kept from before the run (--max-finished history) */
};

/* ---- the shared accounting -------------------------------------------------------------- */

struct counts {
	pthread_mutex_t mu;
	long live, done, events;
	uint64_t commits, bytes; /* commits: batches, each one or more txns */
};

/* ---- design (b): the committer ---------------------------------------------------------- */

struct op {
	struct op *next;
	int kind; /* 0 put live, 1 end (delete + archive) */
	long job;
	size_t len;
	int *flag; /* set to 1 (0 ok) or -1 when durable */
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
};

struct hybrid {
	struct xp_etcd *e;
	sqlite3 *db;
	sqlite3_stmt *ins;
	char leader[256];
	int64_t epoch, lease;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct op *head, **tail;
	int stop, failed;
	long since_compact;
	struct counts *c;
	int snap_every;
	pthread_t th;
};

static void done_ops(struct op *o, int rc)
{
	while (o) {
		struct op *n = o->next;
		pthread_mutex_lock(o->mu);
		*o->flag = rc < 0 ? -1 : 1;
		pthread_cond_signal(o->cv);
		pthread_mutex_unlock(o->mu);
		free(o);
		o = n;
	}
}

static int run_txn(struct hybrid *h, struct xp_etcd_txn *t)
{
	struct xp_err err = { 0 };
	int ok = 0;
	int64_t rev = 0;
	int rc = xp_etcd_txn_run(h->e, t, 10000, &ok, &rev, &err);
	xp_etcd_txn_free(t);
	if (rc < 0 || !ok) {
		fprintf(stderr, "xp_bench_hastore: txn: %s\n", rc < 0 ? err.text : "fenced");
		return -1;
	}
	if (h->since_compact >= h->snap_every) {
		xp_etcd_compact(h->e, rev, &err);
		h->since_compact = 0;
	}
	return 0;
}

static int commit_batch(struct hybrid *h, struct op *batch)
{
	static char val[DONE_B];
	struct xp_etcd_txn t;
	char k[300];
	int rc = 0, ends = 0;
	xp_etcd_txn_start(&t);
	xp_etcd_txn_created(&t, h->leader, strlen(h->leader), h->epoch);
	for (struct op *o = batch; o && rc == 0; o = o->next) {
		size_t kl = (size_t)snprintf(k, sizeof(k), "%sjob/%010ld", xp_etcd_prefix(h->e),
					     o->job);
		if (t.nops == XP_ETCD_MAX_OPS - 1 || t.bytes + o->len + kl > XP_ETCD_MAX_BYTES) {
			rc = run_txn(h, &t);
			xp_etcd_txn_start(&t);
			xp_etcd_txn_created(&t, h->leader, strlen(h->leader), h->epoch);
		}
		if (o->kind == 0)
			xp_etcd_txn_put(&t, k, kl, val, o->len, 0);
		else
			xp_etcd_txn_delete(&t, k, kl, NULL, 0);
		h->c->bytes += kl + (o->kind == 0 ? o->len : 0);
		h->since_compact++;
		ends += o->kind == 1;
	}
	if (rc == 0 && t.nops)
		rc = run_txn(h, &t);
	else
		xp_etcd_txn_free(&t);
	if (rc < 0 || !ends)
		return rc;
	/* the archive: after etcd took the batch (a local file cannot be fenced by etcd) */
	if (sqlite3_exec(h->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	for (struct op *o = batch; o; o = o->next) {
		if (o->kind != 1)
			continue;
		sqlite3_bind_int64(h->ins, 1, o->job);
		sqlite3_bind_blob(h->ins, 2, val, DONE_B, SQLITE_STATIC);
		if (sqlite3_step(h->ins) != SQLITE_DONE)
			rc = -1;
		sqlite3_reset(h->ins);
	}
	if (sqlite3_exec(h->db, rc == 0 ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
		rc = -1;
	return rc;
}

static void *committer(void *arg)
{
	struct hybrid *h = arg;
	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (!h->head && !h->stop)
			pthread_cond_wait(&h->cv, &h->mu);
		if (!h->head)
			break;
		struct op *batch = h->head;
		h->head = NULL;
		h->tail = &h->head;
		pthread_mutex_unlock(&h->mu);
		h->c->commits++;
		int rc = h->failed ? -1 : commit_batch(h, batch);
		if (rc < 0)
			h->failed = 1;
		done_ops(batch, rc);
		pthread_mutex_lock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

static int hybrid_open(struct hybrid *h, const struct cfg *g, struct counts *c)
{
	struct xp_err err = { 0 };
	char path[512];
	memset(h, 0, sizeof(*h));
	h->c = c;
	h->snap_every = g->snap_every;
	h->tail = &h->head;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (xp_etcd_create(g->prefix_url, NULL, &h->e, &err) < 0 ||
	    xp_etcd_grant(h->e, 600, &h->lease, &err) < 0) {
		fprintf(stderr, "xp_bench_hastore: %s\n", err.text);
		return -1;
	}
	/* the leader key: its create revision is the epoch every txn is guarded by */
	snprintf(h->leader, sizeof(h->leader), "%sleader", xp_etcd_prefix(h->e));
	struct xp_etcd_txn t;
	int ok = 0;
	xp_etcd_txn_start(&t);
	xp_etcd_txn_created(&t, h->leader, strlen(h->leader), 0);
	xp_etcd_txn_put(&t, h->leader, strlen(h->leader), "bench", 5, h->lease);
	int rc = xp_etcd_txn_run(h->e, &t, 10000, &ok, &h->epoch, &err);
	xp_etcd_txn_free(&t);
	if (rc < 0 || !ok) {
		fprintf(stderr, "xp_bench_hastore: campaign: %s\n", rc < 0 ? err.text : "lost");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/archive.db", g->dir);
	if (sqlite3_open(path, &h->db) != SQLITE_OK ||
	    sqlite3_exec(h->db,
			 "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
			 "CREATE TABLE IF NOT EXISTS finished(id INTEGER PRIMARY KEY, body BLOB)",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(h->db, "INSERT INTO finished VALUES (?, ?)", -1, &h->ins, NULL) !=
		    SQLITE_OK) {
		fprintf(stderr, "xp_bench_hastore: %s: %s\n", path, sqlite3_errmsg(h->db));
		return -1;
	}
	return pthread_create(&h->th, NULL, committer, h) ? -1 : 0;
}

static void hybrid_close(struct hybrid *h)
{
	struct xp_err err = { 0 };
	pthread_mutex_lock(&h->mu);
	h->stop = 1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->th, NULL);
	sqlite3_finalize(h->ins);
	sqlite3_close(h->db);
	xp_etcd_revoke(h->e, h->lease, &err);
	xp_etcd_destroy(h->e);
}

/* ---- producers ---------------------------------------------------------------------------- */

struct prod {
	const struct cfg *g;
	struct xp_store *s;  /* (a) */
	struct hybrid *h;    /* (b) */
	struct counts *c;
	long first, n, ends; /* jobs first..first+n, the first `ends` of them end */
	int flag, bad;
	pthread_mutex_t mu;
	pthread_cond_t cv;
};

static void on_durable(void *arg, int rc)
{
	struct prod *p = arg;
	pthread_mutex_lock(&p->mu);
	p->flag = rc < 0 ? -1 : 1;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

static void wait_flag(struct prod *p)
{
	pthread_mutex_lock(&p->mu);
	while (!p->flag)
		pthread_cond_wait(&p->cv, &p->mu);
	p->bad += p->flag < 0;
	p->flag = 0;
	pthread_mutex_unlock(&p->mu);
}

/* (a): the record, and a snapshot of the state's size every snap_every records */
static void event_a(struct prod *p, const char *type, size_t len, int dlive, int ddone)
{
	static char body[DONE_B];
	struct counts *c = p->c;
	pthread_mutex_lock(&c->mu);
	uint64_t seq = xp_store_append(p->s, type, body, len, 0);
	c->live += dlive;
	c->done += ddone;
	c->events++;
	c->bytes += len + 40;
	size_t snap = 0;
	if (seq && seq % (uint64_t)p->g->snap_every == 0)
		snap = (size_t)c->live * LIVE_B + (size_t)c->done * DONE_B;
	if (snap) { /* the server builds it in the background; its size is what counts here */
		char *b = calloc(1, snap);
		memset(b, 'x', snap);
		xp_store_snapshot(p->s, seq, b, snap);
		free(b);
		c->bytes += snap;
	}
	xp_store_when_durable(p->s, on_durable, p);
	pthread_mutex_unlock(&c->mu);
	wait_flag(p);
}

static void event_b(struct prod *p, int kind, long job, size_t len)
{
	struct op *o = calloc(1, sizeof(*o));
	*o = (struct op){ NULL, kind, job, len, &p->flag, &p->mu, &p->cv };
	pthread_mutex_lock(&p->h->mu);
	*p->h->tail = o;
	p->h->tail = &o->next;
	pthread_cond_signal(&p->h->cv);
	pthread_mutex_unlock(&p->h->mu);
	pthread_mutex_lock(&p->c->mu);
	p->c->events++;
	pthread_mutex_unlock(&p->c->mu);
	wait_flag(p);
}

static void *produce(void *arg)
{
	struct prod *p = arg;
	for (long j = p->first; j < p->first + p->n; j++) {
		int ends = j - p->first < p->ends;
		if (p->s) {
			event_a(p, "job.submit", SUBMIT_B, 1, 0);
			event_a(p, "job.start", START_B, 0, 0);
			if (ends)
				event_a(p, "job.end", END_B, -1, 1);
		} else {
			event_b(p, 0, j, SUBMIT_B);
			event_b(p, 0, j, LIVE_B);
			if (ends)
				event_b(p, 1, j, 0);
		}
	}
	return NULL;
}

/* ---- loading again ------------------------------------------------------------------------ */

struct loaded {
	uint64_t bytes, items;
	char last[300]; /* (b): the last key read, where the next page starts */
	size_t lastlen;
};

static int load_snap(void *ctx, uint64_t seq, const char *body, size_t len)
{
	struct loaded *l = ctx;
	(void)seq, (void)body;
	l->bytes += len;
	return 0;
}

static int load_rec(void *ctx, const struct xp_store_rec *r)
{
	struct loaded *l = ctx;
	(void)r;
	l->items++;
	return 0;
}

static int load_kv(void *ctx, const struct xp_etcd_kv *kv)
{
	struct loaded *l = ctx;
	l->items++;
	if (kv->klen < sizeof(l->last)) {
		memcpy(l->last, kv->key, kv->klen);
		l->lastlen = kv->klen;
	}
	return 0;
}

static int load_a(struct xp_store_opts *o, struct loaded *l, double *open_s)
{
	struct xp_err err = { 0 };
	struct xp_store *s;
	uint64_t t0 = xp_mono_ns();
	if (xp_store_open(NULL, o, &s, &err) < 0) {
		fprintf(stderr, "xp_bench_hastore: open: %s\n", err.text);
		return -1;
	}
	*open_s = (double)(xp_mono_ns() - t0) / 1e9; /* the campaign: not part of the load */
	int rc = xp_store_load(s, load_snap, load_rec, l, &err);
	if (rc < 0)
		fprintf(stderr, "xp_bench_hastore: load: %s\n", err.text);
	xp_store_close(s);
	return rc;
}

static int load_b(const struct cfg *g, struct loaded *l)
{
	struct xp_err err = { 0 };
	struct xp_etcd *e;
	char k[300], end[300], path[512];
	if (xp_etcd_create(g->prefix_url, NULL, &e, &err) < 0)
		return -1;
	size_t kl = (size_t)snprintf(k, sizeof(k), "%sjob/", xp_etcd_prefix(e));
	size_t el = xp_etcd_prefix_end(k, kl, end);
	int more = 1, rc = 0;
	int64_t rev;
	while (more && rc == 0) { /* pages of 1,000 live jobs */
		rc = xp_etcd_range(e, k, kl, end, el, 1000, 10000, load_kv, l, &more, &rev, &err);
		if (more && l->lastlen + 1 < sizeof(k)) { /* the next page: just after the last key */
			memcpy(k, l->last, l->lastlen);
			k[l->lastlen] = '\0';
			kl = l->lastlen + 1;
		}
	}
	xp_etcd_destroy(e);
	sqlite3 *db;
	sqlite3_stmt *st;
	snprintf(path, sizeof(path), "%s/archive.db", g->dir);
	if (rc < 0 || sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM finished", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		l->bytes = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return 0;
}

/* etcd's database size (maintenance/status dbSize) */
static long long db_size(const char *url)
{
	struct xp_err err = { 0 };
	struct xp_etcd *e;
	void *out = NULL;
	long long n = -1;
	if (xp_etcd_create(url, NULL, &e, &err) < 0)
		return -1;
	if (xp_etcd_post(e, "/v3/maintenance/status", "{}", 2, 5000, &out, &err) == 0) {
		const char *s = json_string_value(json_object_get(out, "dbSize"));
		n = s ? atoll(s) : -1;
		json_decref(out);
	}
	xp_etcd_destroy(e);
	return n;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	return remove(p);
}

static int parse(int argc, char **argv, struct cfg *g)
{
	int c;
	*g = (struct cfg){ NULL, NULL, "", 0, 64, 5000, 0, 20000, 0 };
	while ((c = getopt(argc, argv, "e:m:n:l:p:s:d:f:")) != -1) {
		if (c == 'e')
			g->url = optarg;
		else if (c == 'm')
			g->design = optarg[0];
		else if (c == 'n')
			g->jobs = atoi(optarg);
		else if (c == 'l')
			g->live = atoi(optarg);
		else if (c == 'p')
			g->producers = atoi(optarg);
		else if (c == 's')
			g->snap_every = atoi(optarg);
		else if (c == 'd')
			g->dir = optarg;
		else if (c == 'f')
			g->finished = atol(optarg);
		else
			return -1;
	}
	if (!g->url || (g->design != 'a' && g->design != 'b') || g->jobs < 1 || g->live < 0 ||
	    g->live > g->jobs || g->producers < 1 || g->snap_every < 100 || g->finished < 0) {
		fprintf(stderr, "usage: xp_bench_hastore -e etcd://HOST:PORT -m a|b [-n JOBS] "
				"[-l LIVE] [-p PRODUCERS] [-s SNAP_EVERY] [-f FINISHED] [-d DIR]\n");
		return -1;
	}
	snprintf(g->prefix_url, sizeof(g->prefix_url), "%s/hastore-%c-%d/", g->url, g->design,
		 (int)getpid());
	return 0;
}

/* The history kept from before (untimed): (a) a snapshot holding it, (b) archive rows */
static int preload(const struct cfg *g, struct xp_store *s, struct hybrid *h, struct counts *c)
{
	static char val[DONE_B];
	c->done = g->finished;
	if (s) {
		size_t n = (size_t)g->finished * DONE_B;
		char *b = malloc(n);
		memset(b, 'x', n);
		uint64_t seq = xp_store_append(s, "job.submit", val, SUBMIT_B, 0);
		xp_store_snapshot(s, seq, b, n);
		free(b);
		return xp_store_sync(s);
	}
	int rc = sqlite3_exec(h->db, "BEGIN", NULL, NULL, NULL);
	for (long j = 0; rc == SQLITE_OK && j < g->finished; j++) {
		sqlite3_bind_int64(h->ins, 1, -1 - j);
		sqlite3_bind_blob(h->ins, 2, val, DONE_B, SQLITE_STATIC);
		rc = sqlite3_step(h->ins) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
		sqlite3_reset(h->ins);
	}
	return rc == SQLITE_OK && sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0
												 : -1;
}

static int run(struct cfg *g, struct counts *c, struct xp_store_opts *o, double *secs)
{
	struct xp_err err = { 0 };
	struct xp_store *s = NULL;
	struct hybrid h;
	if (g->design == 'a' && xp_store_open(NULL, o, &s, &err) < 0) {
		fprintf(stderr, "xp_bench_hastore: %s\n", err.text);
		return -1;
	}
	if (s && xp_store_load(s, NULL, load_rec, &(struct loaded){ 0, 0 }, &err) < 0)
		return -1;
	if (g->design == 'b' && hybrid_open(&h, g, c) < 0)
		return -1;
	if (g->finished && preload(g, s, &h, c) < 0)
		return -1;
	struct prod *p = calloc((size_t)g->producers, sizeof(*p));
	pthread_t *th = calloc((size_t)g->producers, sizeof(*th));
	long per = g->jobs / g->producers, left = g->jobs % g->producers, first = 0;
	uint64_t t0 = xp_mono_ns();
	for (int i = 0; i < g->producers; i++) {
		long n = per + (i < left);
		long live = g->live / g->producers + (i < g->live % g->producers);
		long e = n > live ? n - live : 0;
		p[i] = (struct prod){ .g = g, .s = s, .h = s ? NULL : &h, .c = c, .first = first,
				      .n = n, .ends = e };
		first += n;
		pthread_mutex_init(&p[i].mu, NULL);
		pthread_cond_init(&p[i].cv, NULL);
		pthread_create(&th[i], NULL, produce, &p[i]);
	}
	int bad = 0;
	for (int i = 0; i < g->producers; i++) {
		pthread_join(th[i], NULL);
		bad += p[i].bad;
	}
	*secs = (double)(xp_mono_ns() - t0) / 1e9;
	if (s) {
		struct xp_store_stats st;
		xp_store_stats(s, &st);
		c->commits = st.commits;
		xp_store_close(s);
	}
	else
		hybrid_close(&h);
	free(p);
	free(th);
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct cfg g;
	char tmp[] = "/tmp/xphastoreXXXXXX";
	if (parse(argc, argv, &g) < 0)
		return 2;
	if (!g.dir && !(g.dir = mkdtemp(tmp)))
		return 1;
	struct counts c = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0 };
	struct xp_store_opts o = { .sync = 1, .etcd = g.prefix_url, .lease_ms = 5000 };
	double secs = 0, open_s = 0;
	int rc = run(&g, &c, &o, &secs);
	long long dbs = db_size(g.url);
	struct loaded l = { 0 };
	uint64_t t0 = xp_mono_ns();
	if (rc == 0)
		rc = g.design == 'a' ? load_a(&o, &l, &open_s) : load_b(&g, &l);
	double load = (double)(xp_mono_ns() - t0) / 1e9 - open_s;
	printf("design %c jobs %d live %d kept %ld producers %d events %ld seconds %.2f events_per_s %.0f "
	       "jobs_per_s %.0f commits %" PRIu64 " bytes_put %" PRIu64 " etcd_db_bytes %lld "
	       "load_seconds %.3f loaded %s %" PRIu64 " %s %" PRIu64 "%s\n",
	       g.design, g.jobs, g.live, g.finished, g.producers, c.events, secs, (double)c.events / secs,
	       (double)g.jobs / secs, c.commits, c.bytes, dbs, load,
	       g.design == 'a' ? "snapshot_bytes" : "live_keys",
	       g.design == 'a' ? l.bytes : l.items, g.design == 'a' ? "records" : "archived",
	       g.design == 'a' ? l.items : l.bytes, rc < 0 ? " FAILED" : "");
	if (g.dir == tmp)
		nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc < 0 ? 1 : 0;
}
