/*
 * test_store_damage: the corruption sweep (docs/results/reliability.md).
 *
 * A small store written by the real controller - two tenants with a token
 * each, jobs of both with their CPU and memory, a cancel, a revoked token,
 * snapshots every 15 records - whose last records a SIGKILL leaves in the
 * write-ahead log, is damaged one way at a time, on a copy, then opened and
 * replayed into a fresh state:
 *
 *   db     a one-bit flip at every 97th byte of xpool.db (checkpointed: no WAL)
 *   wal    a one-bit flip at every 97th byte of xpool.db-wal
 *   trunc  the WAL cut at every frame boundary and in the middle of every frame
 *   snap   a one-bit flip at every 97th byte of the newest snapshot's body,
 *          written through SQLite (the file stays a valid database)
 *   edit   a one-byte edit inside records' bodies (a digit or a letter
 *          changed), written through SQLite, in every record
 *   seal   a one-bit flip in every byte of xpool.seal
 *
 * (the bit flipped at offset o is bit (o / 97) % 8.) Each case must be
 * refused, at open or at load, with a message naming the file - and the
 * seq, when a record or a snapshot is to blame - or be harmless: the same
 * last seq and the same state (the text of xp_state_snapshot()) as the
 * undamaged store. A case that opens with another state, or with fewer
 * records, is silent damage, and the test fails. The counts are printed.
 */
#define _GNU_SOURCE /* nftw */
#include "testutil.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/state/state.h"
#include "edge/edge.h"
#include "lib/clock.h"
#include "lib/fileio.h"
#include "server/ctl.h"
#include "store/store.h"

#define STRIDE 97

static const char *const files[] = { "xpool.db", "xpool.db-wal", "xpool.seal" };
enum { F_DB, F_WAL, F_SEAL, F_N };

struct blob {
	char *b;
	size_t n; /* 0 and b NULL: absent */
};

/* A store as files in memory: written out afresh for every case. */
struct image {
	struct blob f[F_N];
};

static char g_root[64], g_work[96];
static struct image g_golden; /* db + WAL + seal: the writer was killed */
static struct image g_clean;  /* the same store checkpointed: db + seal */
static char *g_state;	      /* the state's snapshot text, undamaged */
static uint64_t g_last;
/* What a damaged store may lose without anyone having been told otherwise: records after the
 * sealed seq were never acknowledged (the kill came between their commit and their seal), and a
 * WAL cut there is as if the kill had come before. g_prefix[i]: the state after seq
 * g_sealed + i (NULL when a snapshot lies beyond it). */
static uint64_t g_sealed;
static char *g_prefix[64];

/* ---- files ---- */

static void write_all(const char *path, const void *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	close(fd);
}

static void image_read(const char *dir, struct image *im)
{
	for (int i = 0; i < F_N; i++) {
		char p[256];
		struct xp_err err;
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		im->f[i].b = NULL;
		im->f[i].n = 0;
		if (access(p, F_OK) == 0)
			assert_int_equal(xp_read_file(p, 1 << 24, &im->f[i].b, &im->f[i].n, &err),
					 0);
	}
}

/* The seq the seal file b says was committed: its valid slot with the higher seq (the golden
 * store's seal is whole). */
static uint64_t sealed_seq(const struct blob *b)
{
	uint64_t a = b->n >= 64 ? strtoull(b->b + 17, NULL, 10) : 0;
	uint64_t c = b->n >= 128 ? strtoull(b->b + 64 + 17, NULL, 10) : 0;
	return a > c ? a : c;
}

static void image_free(struct image *im)
{
	for (int i = 0; i < F_N; i++)
		free(im->f[i].b);
}

/* Empty the work directory and write im into it. */
static void image_put(const struct image *im)
{
	static const char *const extra[] = { "xpool.db-shm", "xpool.lock" };
	char p[256];
	for (int i = 0; i < F_N; i++) {
		snprintf(p, sizeof(p), "%s/%s", g_work, files[i]);
		unlink(p);
		if (im->f[i].b)
			write_all(p, im->f[i].b, im->f[i].n);
	}
	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", g_work, extra[i]);
		unlink(p);
	}
}

static void work_path(const char *name, char *p, size_t n)
{
	snprintf(p, n, "%s/%s", g_work, name);
}

/* ---- replay into a fresh state ---- */

struct replay {
	struct xp_state *st;
	struct xp_err *err;
	uint64_t limit; /* records after it are not applied; 0: none */
};

static int on_snap(void *ctx, uint64_t seq, const char *body, size_t len)
{
	struct replay *r = ctx;
	if (r->limit && seq > r->limit)
		return XP_ERANGE; /* the state at limit is not to be had from here */
	return xp_state_load_snapshot(r->st, body, len, r->err);
}

static int on_rec(void *ctx, const struct xp_store_rec *rec)
{
	struct replay *r = ctx;
	struct xp_event_info ev;
	if (r->limit && rec->seq > r->limit)
		return 0;
	return xp_rec_apply(r->st, rec->seq, rec->at_ms, rec->type, rec->body, rec->len, &ev,
			      r->err);
}

enum outcome { REFUSED_OPEN, REFUSED_LOAD, HARMLESS, UNACKED, SILENT, N_OUTCOMES };
static const char *const outcome_name[] = { "refused at open", "refused at load", "harmless",
					    "lost only unacknowledged records", "SILENT" };

/* Open and replay the store in dir, up to seq limit (0: all); *text gets the state (malloc'd)
 * when it loads. */
static enum outcome replay_upto(const char *dir, uint64_t limit, char **text, uint64_t *last,
				struct xp_err *err)
{
	/* no fsync: the cases are thrown away (sync=0 changes no check) */
	static const struct xp_store_opts nosync = { .sync = 0 };
	struct xp_state_opts so = { .docs = &xp_edge_docs };
	struct xp_store *s = NULL;
	*text = NULL;
	memset(err, 0, sizeof(*err));
	if (xp_store_open(dir, &nosync, &s, err) < 0)
		return REFUSED_OPEN;
	struct replay r = { .st = xp_state_create(&so, err), .err = err, .limit = limit };
	assert_non_null(r.st);
	enum outcome o = REFUSED_LOAD;
	if (xp_store_load(s, on_snap, on_rec, &r, err) == 0) {
		*text = xp_state_snapshot(r.st);
		*last = xp_store_last_seq(s);
		o = HARMLESS;
	}
	xp_state_destroy(r.st);
	xp_store_close(s);
	return o;
}

static enum outcome replay(const char *dir, char **text, uint64_t *last, struct xp_err *err)
{
	return replay_upto(dir, 0, text, last, err);
}

/* ---- the golden store, written by the controller ---- */

static const char cluster_yaml[] =
	"version: 1\nnodes:\n"
	"  - {name: gpu, count: 2, cpu: 64, memory: 256Gi, devices: [{type: gpu, vendor: "
	"NVIDIA, model: A100-SXM4-80GB, count: 4, memory: 80Gi}]}\n";

static struct xp_ctl *ctl_start(const char *dir, const char *cluster)
{
	struct xp_ctl_opts o = { 0 };
	struct xp_ctl *ctl = NULL;
	struct xp_err err = { 0 };
	o.data = dir;
	o.listen = "127.0.0.1:0";
	o.cluster = cluster;
	o.sync = 1;
	o.snapshot_every = 15;
	o.snapshot_inline = 1;
	if (xp_ctl_start(&o, &ctl, &err) < 0) {
		fprintf(stderr, "start: %s\n", err.text);
		_exit(3);
	}
	return ctl;
}

static json_t *call(struct xp_ctl *ctl, const char *token, const char *method, const char *path,
		    const char *body, long want)
{
	long st;
	json_t *o = xp_test_json(ctl->addr, token, method, path, body, &st);
	if (st != want) {
		fprintf(stderr, "%s %s: %ld, expected %ld\n", method, path, st, want);
		_exit(4);
	}
	return o;
}

static void submit(struct xp_ctl *ctl, const char *token, const char *name, int cpu, int mem_gi,
		   int gpus)
{
	char body[256];
	snprintf(body, sizeof(body),
		 "{\"name\":\"%s\",\"resources\":{\"cpu\":%d,\"memory\":\"%dGi\",\"devices\":{"
		 "\"count\":%d}},\"duration\":\"1h\"}",
		 name, cpu, mem_gi, gpus);
	json_decref(call(ctl, token, "POST", "/v1/jobs", body, 201));
}

static char *new_token(struct xp_ctl *ctl, const char *admin, const char *tenant)
{
	char body[128];
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", tenant);
	json_decref(call(ctl, admin, "POST", "/v1/tenants", body, 201));
	snprintf(body, sizeof(body), "{\"tenant\":\"%s\",\"name\":\"ci\",\"admin\":false}", tenant);
	json_t *o = call(ctl, admin, "POST", "/v1/tokens", body, 201);
	char *t = strdup(json_string_value(json_object_get(o, "token")));
	json_decref(o);
	return t;
}

/* Child 1: tenants, tokens, jobs; a clean stop. Child 2: more jobs and a revoked token,
 * then SIGKILL, so that its records stay in the write-ahead log. */
static void golden_child(const char *dir, const char *cluster, int second)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	struct xp_ctl *ctl = ctl_start(dir, cluster);
	char admin[128];
	char *t;
	size_t n;
	struct xp_err err;
	snprintf(admin, sizeof(admin), "%s/admin.token", dir);
	assert_int_equal(xp_read_file(admin, 4096, &t, &n, &err), 0);
	t[strcspn(t, "\n")] = '\0';
	snprintf(admin, sizeof(admin), "%s", t);
	free(t);
	if (!second) {
		char *acme = new_token(ctl, admin, "acme");
		char *globex = new_token(ctl, admin, "globex");
		for (int i = 0; i < 6; i++) {
			char name[32];
			snprintf(name, sizeof(name), "acme-%d", i);
			submit(ctl, acme, name, 2 + i, 8 * (i + 1), i % 3);
			snprintf(name, sizeof(name), "globex-%d", i);
			submit(ctl, globex, name, 12 - i, 100 + i, i % 2);
		}
		json_decref(call(ctl, admin, "POST", "/v1/jobs/3/cancel", NULL, 200));
		free(acme);
		free(globex);
		xp_ctl_stop(ctl);
		_exit(0);
	}
	for (int i = 0; i < 4; i++) {
		char name[32];
		snprintf(name, sizeof(name), "late-%d", i);
		submit(ctl, admin, name, 1 + i, 4 + i, i % 2);
	}
	json_decref(call(ctl, admin, "DELETE", "/v1/tokens/3", NULL, 200));
	submit(ctl, admin, "last", 3, 3, 0);
	raise(SIGKILL); /* every reply came after its commit: all of it is durable */
	_exit(5);
}

static void run_child(const char *dir, const char *cluster, int second)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		golden_child(dir, cluster, second);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (second)
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	else
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static int setup(void **state)
{
	(void)state;
	char golden[96];
	struct xp_err err;
	strcpy(g_root, "/tmp/xpdamageXXXXXX");
	assert_non_null(mkdtemp(g_root));
	snprintf(golden, sizeof(golden), "%s/golden", g_root);
	snprintf(g_work, sizeof(g_work), "%s/work", g_root);
	assert_int_equal(mkdir(g_work, 0700), 0);
	char *cluster = xp_test_tmpfile(".yaml", cluster_yaml);
	run_child(golden, cluster, 0);
	run_child(golden, cluster, 1);
	unlink(cluster);
	free(cluster);
	image_read(golden, &g_golden);
	assert_non_null(g_golden.f[F_WAL].b); /* the kill left a write-ahead log */
	/* The same store, checkpointed: opened and closed once. */
	g_sealed = g_golden.f[F_SEAL].b ? sealed_seq(&g_golden.f[F_SEAL]) : 0;
	for (uint64_t q = g_sealed; g_sealed && q < g_sealed + 64; q++) {
		uint64_t last;
		image_put(&g_golden);
		if (replay_upto(g_work, q, &g_prefix[q - g_sealed], &last, &err) == HARMLESS &&
		    q >= last) {
			free(g_prefix[q - g_sealed]);
			g_prefix[q - g_sealed] = NULL;
			break;
		}
	}
	image_put(&g_golden);
	assert_int_equal(replay(g_work, &g_state, &g_last, &err), HARMLESS);
	if (!g_sealed)
		g_sealed = g_last;
	image_read(g_work, &g_clean);
	assert_null(g_clean.f[F_WAL].b);
	assert_true(g_clean.f[F_DB].n <= 256 * 1024);
	print_message("golden store: %zu-byte database, %zu-byte write-ahead log, %s seal; last "
		      "seq %llu, sealed %llu; state %zu bytes\n",
		      g_golden.f[F_DB].n, g_golden.f[F_WAL].n, g_golden.f[F_SEAL].b ? "a" : "no",
		      (unsigned long long)g_last, (unsigned long long)g_sealed, strlen(g_state));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	image_free(&g_golden);
	image_free(&g_clean);
	free(g_state);
	for (int i = 0; i < 64; i++)
		free(g_prefix[i]);
	xp_test_rmdir(g_root);
	return 0;
}

/* ---- the sweep ---- */

/* Why a refusal refused: a row's checksum, the seal, SQLite's structure, anything else. */
enum why { W_CHECKSUM, W_SEAL, W_STRUCTURE, W_OTHER, N_WHYS };
static const char *const why_name[] = { "checksum", "seal", "structure", "other" };

static enum why why_of(const char *text)
{
	if (strstr(text, "fails its checksum") || strstr(text, "is not the one committed"))
		return W_CHECKSUM;
	if (strstr(text, "missing:") || strstr(text, XP_STORE_SEAL))
		return W_SEAL;
	if (strstr(text, "damaged") || strstr(text, "malformed") || strstr(text, "not an xpool"))
		return W_STRUCTURE;
	return W_OTHER;
}

struct tally {
	const char *what;
	long n[N_OUTCOMES];
	long with_seq; /* refusals that name a seq */
	long unnamed;  /* refusals that do not name the file */
	long why[N_WHYS];
	int shown[N_OUTCOMES];
};

/* Classify the store now in the work directory. */
static void judge(struct tally *t, const char *label)
{
	struct xp_err err;
	char *text;
	uint64_t last = 0;
	enum outcome o = replay(g_work, &text, &last, &err);
	if (o == HARMLESS && (last != g_last || strcmp(text, g_state) != 0)) {
		/* fewer records: fine only if all the sealed ones are there, as they were */
		const char *want = last >= g_sealed && last < g_last && last - g_sealed < 64
					   ? g_prefix[last - g_sealed]
					   : NULL;
		o = want && !strcmp(text, want) ? UNACKED : SILENT;
	}
	t->n[o]++;
	if (o == REFUSED_OPEN || o == REFUSED_LOAD) {
		if (!strstr(err.text, g_work))
			t->unnamed++;
		if (strstr(err.text, "seq "))
			t->with_seq++;
		t->why[why_of(err.text)]++;
	}
	if (t->shown[o]++ < (o == SILENT ? 5 : 2))
		print_message("  %s %s: %s%s%s\n", t->what, label, outcome_name[o],
			      o == SILENT || o == HARMLESS || o == UNACKED ? "" : ": ",
			      o == SILENT
				      ? (last != g_last ? " (records lost)" : " (state differs)")
			      : o == HARMLESS || o == UNACKED ? ""
							      : err.text);
	free(text);
}

static void report(const struct tally *t, int *silent)
{
	long total = 0;
	for (int i = 0; i < N_OUTCOMES; i++)
		total += t->n[i];
	print_message("%-6s %5ld cases: %5ld refused at open, %4ld refused at load (%ld naming a "
		      "seq, %ld not naming the file), %5ld harmless (%ld of them losing only "
		      "unacknowledged records), %ld SILENT\n",
		      t->what, total, t->n[REFUSED_OPEN], t->n[REFUSED_LOAD], t->with_seq,
		      t->unnamed, t->n[HARMLESS] + t->n[UNACKED], t->n[UNACKED], t->n[SILENT]);
	if (t->n[REFUSED_OPEN] + t->n[REFUSED_LOAD])
		print_message("       refused for: %ld %s, %ld %s, %ld %s, %ld %s\n", t->why[0],
			      why_name[0], t->why[1], why_name[1], t->why[2], why_name[2],
			      t->why[3], why_name[3]);
	*silent += (int)t->n[SILENT] + (int)t->unnamed;
}

static void flip_sweep(struct tally *t, const struct image *src, int file)
{
	struct image im = *src;
	const struct blob *b = &src->f[file];
	char *copy = malloc(b->n);
	im.f[file].b = copy;
	for (size_t off = 0; off < b->n; off += STRIDE) {
		char label[64];
		memcpy(copy, b->b, b->n);
		copy[off] ^= (char)(1 << (off / STRIDE % 8));
		image_put(&im);
		snprintf(label, sizeof(label), "byte %zu", off);
		judge(t, label);
	}
	free(copy);
}

static void test_flip_db(void **state)
{
	(void)state;
	struct tally t = { .what = "db" };
	int silent = 0;
	flip_sweep(&t, &g_clean, F_DB);
	report(&t, &silent);
	assert_int_equal(silent, 0);
}

static void test_flip_wal(void **state)
{
	(void)state;
	struct tally t = { .what = "wal" };
	int silent = 0;
	flip_sweep(&t, &g_golden, F_WAL);
	report(&t, &silent);
	assert_int_equal(silent, 0);
}

static void test_flip_seal(void **state)
{
	(void)state;
	struct tally t = { .what = "seal" };
	int silent = 0;
	if (!g_golden.f[F_SEAL].b) {
		print_message("no seal file: nothing to flip\n");
		return;
	}
	struct image im = g_golden;
	const struct blob *b = &g_golden.f[F_SEAL];
	char *copy = malloc(b->n);
	im.f[F_SEAL].b = copy;
	for (size_t off = 0; off < b->n; off++) {
		char label[64];
		memcpy(copy, b->b, b->n);
		copy[off] ^= (char)(1 << (off % 8));
		image_put(&im);
		snprintf(label, sizeof(label), "byte %zu", off);
		judge(&t, label);
	}
	free(copy);
	report(&t, &silent);
	assert_int_equal(silent, 0);
}

static void test_truncate_wal(void **state)
{
	(void)state;
	struct tally t = { .what = "trunc" };
	int silent = 0;
	struct image im = g_golden;
	const struct blob *w = &g_golden.f[F_WAL];
	const unsigned char *h = (const unsigned char *)w->b;
	size_t page = (size_t)h[8] << 24 | (size_t)h[9] << 16 | (size_t)h[10] << 8 | h[11];
	size_t frame = 24 + page;
	assert_true(page >= 512 && w->n > 32);
	for (size_t k = 0; 32 + k * frame <= w->n; k++) {
		for (int half = 0; half < 2; half++) {
			size_t len = k == 0 && half ? 16 : 32 + k * frame + (half ? frame / 2 : 0);
			if (len >= w->n)
				continue;
			char label[64];
			im.f[F_WAL].n = len;
			image_put(&im);
			snprintf(label, sizeof(label), "to %zu bytes", len);
			judge(&t, label);
		}
	}
	report(&t, &silent);
	assert_int_equal(silent, 0);
}

/* Put the clean store in the work directory and run one UPDATE on it through SQLite. */
static void sql_edit(const char *sqltext, uint64_t seq, const void *b, size_t n, int blob)
{
	char db[256];
	sqlite3 *h;
	sqlite3_stmt *st;
	image_put(&g_clean);
	work_path("xpool.db", db, sizeof(db));
	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, "PRAGMA synchronous=OFF", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, sqltext, -1, &st, NULL), SQLITE_OK);
	if (blob)
		sqlite3_bind_blob(st, 1, b, (int)n, SQLITE_TRANSIENT);
	else
		sqlite3_bind_text(st, 1, b, (int)n, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)seq);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	assert_int_equal(sqlite3_close(h), SQLITE_OK);
}

/* Rows (seq, body) of a query on the clean store, copied. */
struct rows {
	size_t n;
	uint64_t seq[512];
	struct blob body[512];
};

static void rows_read(const char *query, struct rows *r)
{
	char db[256];
	sqlite3 *h;
	sqlite3_stmt *st;
	image_put(&g_clean);
	work_path("xpool.db", db, sizeof(db));
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, query, -1, &st, NULL), SQLITE_OK);
	r->n = 0;
	while (sqlite3_step(st) == SQLITE_ROW && r->n < 512) {
		size_t n = (size_t)sqlite3_column_bytes(st, 1);
		r->seq[r->n] = (uint64_t)sqlite3_column_int64(st, 0);
		r->body[r->n].b = malloc(n + 1);
		memcpy(r->body[r->n].b, sqlite3_column_blob(st, 1), n);
		r->body[r->n++].n = n;
	}
	sqlite3_finalize(st);
	sqlite3_close(h);
}

static void rows_free(struct rows *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->body[i].b);
}

static void test_flip_snapshot(void **state)
{
	(void)state;
	struct tally t = { .what = "snap" };
	int silent = 0;
	static struct rows r;
	rows_read("SELECT seq, body FROM snapshot ORDER BY seq DESC LIMIT 1", &r);
	assert_int_equal(r.n, 1);
	const struct blob *b = &r.body[0];
	char *copy = malloc(b->n);
	for (size_t off = 0; off < b->n; off += STRIDE) {
		char label[64];
		memcpy(copy, b->b, b->n);
		copy[off] ^= (char)(1 << (off / STRIDE % 8));
		sql_edit("UPDATE snapshot SET body = ?1 WHERE seq = ?2", r.seq[0], copy, b->n, 1);
		snprintf(label, sizeof(label), "seq %llu byte %zu", (unsigned long long)r.seq[0],
			 off);
		judge(&t, label);
	}
	free(copy);
	rows_free(&r);
	report(&t, &silent);
	assert_int_equal(silent, 0);
}

/* One byte of a record's body changed the way a hostile edit would: a digit to the next
 * digit, a letter to the next letter (the JSON stays JSON). Every 5th such byte of every
 * record. */
static void test_edit_records(void **state)
{
	(void)state;
	struct tally t = { .what = "edit" };
	int silent = 0;
	static struct rows r;
	rows_read("SELECT seq, body FROM journal ORDER BY seq", &r);
	assert_true(r.n > 10);
	for (size_t i = 0; i < r.n; i++) {
		const struct blob *b = &r.body[i];
		char *copy = malloc(b->n + 1);
		int k = 0;
		for (size_t off = 0; off < b->n; off++) {
			char c = b->b[off], d;
			if (c >= '0' && c <= '9')
				d = c == '9' ? '0' : c + 1;
			else if ((c >= 'a' && c < 'z') || (c >= 'A' && c < 'Z'))
				d = c + 1;
			else
				continue;
			if (k++ % 5)
				continue;
			char label[64];
			memcpy(copy, b->b, b->n);
			copy[off] = d;
			sql_edit("UPDATE journal SET body = ?1 WHERE seq = ?2", r.seq[i], copy,
				 b->n, 0);
			snprintf(label, sizeof(label), "seq %llu byte %zu '%c'->'%c'",
				 (unsigned long long)r.seq[i], off, c, d);
			judge(&t, label);
		}
		free(copy);
	}
	rows_free(&r);
	report(&t, &silent);
	assert_int_equal(silent, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flip_db),	     cmocka_unit_test(test_flip_wal),
		cmocka_unit_test(test_truncate_wal), cmocka_unit_test(test_flip_snapshot),
		cmocka_unit_test(test_edit_records), cmocka_unit_test(test_flip_seal),
	};
	return xp_run_tests(tests, setup, teardown);
}
