/*
 * store_etcd: the store's journal and snapshots in etcd, for controllers
 * that share one state and take over from each other (docs/design/ha.md).
 *
 * Keys, under the prefix P of the address (default /xpool/):
 *   P leader            the leader key: this controller's address, bound to
 *                       its lease; its create revision is the epoch
 *   P j/<seq, 20 digits> a journal record: "<at> <crc> <type>\n<body>"
 *   P snap               the snapshot's manifest: "xpool-snap 1 seq=.. at=..
 *                       len=.. chunks=.. crc=.."
 *   P s/<seq>/<n, 8 digits> its chunks, in order
 *
 * Leadership: open grants a lease (the TTL of the options), keeps it alive
 * from a thread of its own, and campaigns: a txn that creates P leader under
 * the lease if it does not exist. Until it wins it polls the key every
 * 100 ms (a linearizable read: nothing is written), calling the standby
 * callback, which may give up. Every write after that is a txn guarded by
 * CREATE(P leader) == epoch, so a controller that lost its key (paused,
 * cut off, its lease expired) cannot write again: its txn fails, and the
 * store fails with XP_ESTATE - the controller steps down.
 *
 * Group commit as in SQLite: the store thread writes each batch as txns of
 * at most 127 puts (etcd's --max-txn-ops is 128, the guard counts) and
 * XP_ETCD_MAX_BYTES, in seq order; a batch is durable when its last txn is.
 * A txn that gets no answer (etcd down, no quorum) is sent again, every
 * 50..500 ms, for as long as the lease may still be ours; writes wait
 * meanwhile. The keepalive thread declares the lease lost when its last
 * successful keepalive is older than TTL - TTL/4, or etcd says it is gone:
 * the store then fails (XP_EUNAVAIL), with every waiter.
 *
 * A snapshot is written as chunks (each a guarded txn), then one txn puts
 * the manifest and deletes the previous snapshot's chunks and the journal
 * up to the snapshot's seq; then etcd's history is compacted to that
 * revision. etcd keeps one snapshot (keep_snapshots does not apply).
 */
#define _GNU_SOURCE /* memrchr */
#include "store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd.h"
#include "lib/base64.h"
#include "lib/clock.h"
#include "lib/crc32c.h"
#include "lib/xalloc.h"

#define CHUNK (512 * 1024)
#define PAGE 1000

struct xp_store_etcd {
	struct xp_etcd *w;  /* the store thread's connection */
	struct xp_etcd *r;  /* readers' (under rmu) */
	struct xp_etcd *ka; /* the keepalive thread's */
	struct xp_etcd *fr; /* a follower's polls: serializable (under rmu) */
	int64_t lease;
	_Atomic int64_t epoch; /* the leader key's create revision once this store leads */
	_Atomic uint64_t linear_ok; /* monotonic ns: etcd last answered a quorum read */
	long ttl_ms;
	char *pre; /* the prefix */
	char *leader_key;
	_Atomic uint64_t snap_seq; /* the snapshot etcd holds (0: none); readers look too */
	pthread_t ka_thread;
	int ka_started;
	pthread_mutex_t ka_mu;
	pthread_cond_t ka_cv;
	int ka_stop;
	_Atomic int lost;	   /* the lease is no longer ours */
	_Atomic uint64_t last_ok; /* monotonic ns of the last good keepalive */
	_Atomic int64_t lease_id; /* the lease being renewed (a follower may take a new one) */
	_Atomic int leading;	  /* this store holds the leader key: a lost lease fails it */
	char seen[256];		  /* the leader key's value as last read (under ka_mu) */
	int seen_known;		  /* 1: seen is current; 0: etcd did not answer */
	/* follow mode: the campaign runs on a thread of its own */
	pthread_t camp_thread;
	int camp_started;
	void (*on_lead)(void *arg);
	void *lead_arg;
	char *advertise;
	char stall[XP_ERR_TEXT_MAX]; /* why writes wait ("" when they do not; under ka_mu) */
};

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static size_t jkey(const struct xp_store_etcd *x, uint64_t seq, char *buf, size_t n)
{
	return (size_t)snprintf(buf, n, "%sj/%020" PRIu64, x->pre, seq);
}

/* Under nothing: fail the store (once) with code and text, dropping the queue, and wake the
 * store thread so that it hands the failure to every waiter. */
static void fail_store(struct xp_store *s, int code, const char *text)
{
	pthread_mutex_lock(&s->mu);
	if (!s->failed) {
		s->failed = code;
		snprintf(s->fail_text, sizeof(s->fail_text), "%s", text);
		xp_store_free_items(s->qhead);
		s->qhead = s->qtail = NULL;
		s->qlen = 0;
	}
	pthread_cond_broadcast(&s->work_cv);
	pthread_cond_broadcast(&s->durable_cv);
	pthread_mutex_unlock(&s->mu);
}

/* The keepalive thread: renew every third of the TTL; lost when the last renewal is older than
 * TTL - TTL/4 or etcd says the lease is gone. */
static void *keepalive_main(void *arg)
{
	struct xp_store *s = arg;
	struct xp_store_etcd *x = s->etcd;
	long period = x->ttl_ms / 3;
	pthread_mutex_lock(&x->ka_mu);
	while (!x->ka_stop) {
		pthread_mutex_unlock(&x->ka_mu);
		struct xp_err err = { 0 };
		int64_t ttl = 0;
		int64_t lease = atomic_load(&x->lease_id);
		int rc = lease ? xp_etcd_keepalive(x->ka, lease, period, &ttl, &err) : -1;
		uint64_t now = xp_mono_ns();
		char why[XP_ERR_TEXT_MAX + 128] = "";
		if (lease != atomic_load(&x->lease_id)) /* regranted meanwhile: about an old one */
			rc = -1, ttl = 1, atomic_store(&x->last_ok, now);
		if (rc == 0 && ttl > 0)
			atomic_store(&x->last_ok, now);
		else if (rc == 0)
			snprintf(why, sizeof(why), "%s: the leader's lease %" PRId64 " expired",
				 xp_etcd_url(x->ka), lease);
		if (!why[0] && now - atomic_load(&x->last_ok) >
				       (uint64_t)(x->ttl_ms - x->ttl_ms / 4) * 1000000) {
			snprintf(why, sizeof(why),
				 "%s: no keepalive of the leader's lease for %" PRIu64 " ms (%s)",
				 xp_etcd_url(x->ka), (now - atomic_load(&x->last_ok)) / 1000000,
				 err.text[0] ? err.text : "no answer");
		}
		/* a follower's lost lease costs nothing: its campaign takes a new one */
		int failed = 0;
		if (why[0] && !atomic_exchange(&x->lost, 1) && atomic_load(&x->leading)) {
			fail_store(s, XP_EUNAVAIL, why);
			failed = 1;
		}
		pthread_mutex_lock(&x->ka_mu);
		if (x->ka_stop || failed)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (period % 1000) * 1000000L;
		ts.tv_sec += period / 1000 + ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&x->ka_cv, &x->ka_mu, &ts);
	}
	pthread_mutex_unlock(&x->ka_mu);
	return NULL;
}

struct leader_ctx {
	char who[256];
	int found;
	int64_t lease, create_rev;
};

static int on_leader(void *ctx, const struct xp_etcd_kv *kv)
{
	struct leader_ctx *lc = ctx;
	lc->found = 1;
	lc->lease = kv->lease;
	lc->create_rev = kv->create_rev;
	snprintf(lc->who, sizeof(lc->who), "%.*s", (int)kv->vlen, kv->value);
	return 0;
}

static int stopping(struct xp_store_etcd *x)
{
	pthread_mutex_lock(&x->ka_mu);
	int stop = x->ka_stop;
	pthread_mutex_unlock(&x->ka_mu);
	return stop;
}

/* A follower whose lease expired (etcd was away) takes a new one. */
static int regrant(struct xp_store_etcd *x, struct xp_etcd *c, struct xp_err *err)
{
	int64_t id = 0;
	int rc = xp_etcd_grant(c, (x->ttl_ms + 999) / 1000, &id, err);
	if (rc == 0) {
		atomic_store(&x->last_ok, xp_mono_ns());
		atomic_store(&x->lease_id, id);
		x->lease = id;
		atomic_store(&x->lost, 0);
	}
	return rc;
}

/* This store holds the leader key, created at revision rev: it leads. */
static int lead(struct xp_store_etcd *x, int64_t rev, const char *me)
{
	atomic_store(&x->epoch, rev);
	atomic_store(&x->leading, 1);
	pthread_mutex_lock(&x->ka_mu);
	snprintf(x->seen, sizeof(x->seen), "%s", me);
	x->seen_known = 1;
	pthread_mutex_unlock(&x->ka_mu);
	return 0;
}

/* Campaign until this controller holds the leader key (c: the calling thread's connection).
 * Gives up when standby says so or the store closes. */
static int campaign(struct xp_store *s, struct xp_etcd *c,
		    int (*standby)(void *, const char *, const char *),
		    void *arg, struct xp_err *err)
{
	struct xp_store_etcd *x = s->etcd;
	const char *me = x->advertise ? x->advertise : "";
	size_t kl = strlen(x->leader_key);
	for (;;) {
		struct leader_ctx lc = { "", 0, 0, 0 };
		int rc = atomic_load(&x->lost) ? regrant(x, c, err) : 0;
		if (rc == 0)
			rc = xp_etcd_range(c, x->leader_key, kl, NULL, 0, 0, 2000, on_leader, &lc,
					   NULL, NULL, err);
		if (rc == 0)
			atomic_store(&x->linear_ok, xp_mono_ns());
		/* our own key under our lease: a campaign txn whose reply was lost landed */
		if (rc == 0 && lc.found && lc.lease == x->lease && !atomic_load(&x->lost))
			return lead(x, lc.create_rev, me);
		pthread_mutex_lock(&x->ka_mu);
		snprintf(x->seen, sizeof(x->seen), "%s", lc.who);
		x->seen_known = rc == 0 && lc.found;
		pthread_mutex_unlock(&x->ka_mu);
		if (rc == 0 && !lc.found) {
			struct xp_etcd_txn t;
			int ok = 0;
			int64_t rev = 0;
			xp_etcd_txn_start(&t);
			xp_etcd_txn_created(&t, x->leader_key, kl, 0);
			xp_etcd_txn_put(&t, x->leader_key, kl, me, strlen(me), x->lease);
			rc = xp_etcd_txn_run(c, &t, 2000, &ok, &rev, err);
			xp_etcd_txn_free(&t);
			if (rc == 0 && ok)
				return lead(x, rev, me);
		}
		if ((standby && standby(arg, rc < 0 ? NULL : lc.who, rc < 0 ? err->text : NULL)) ||
		    stopping(x))
			return xp_errf(err, XP_EUNAVAIL, "%s: stopped while waiting to lead", s->path);
		sleep_ms(100);
	}
}

static int find_last(struct xp_store *s, struct xp_etcd *c, uint64_t *last, struct xp_err *err);

/* follow mode: campaign in the background; on_lead once this store leads */
static void *campaign_main(void *arg)
{
	struct xp_store *s = arg;
	struct xp_store_etcd *x = s->etcd;
	struct xp_etcd *c = xp_etcd_dup(x->w);
	struct xp_err err = { 0 };
	if (campaign(s, c, NULL, NULL, &err) == 0 && x->on_lead)
		x->on_lead(x->lead_arg);
	xp_etcd_destroy(c);
	return NULL;
}

int xp_store_leader(struct xp_store *s, char *buf, size_t n)
{
	struct xp_store_etcd *x = s->etcd;
	if (!x) {
		snprintf(buf, n, "%s", "");
		return 1;
	}
	pthread_mutex_lock(&x->ka_mu);
	snprintf(buf, n, "%s", x->seen_known ? x->seen : "");
	pthread_mutex_unlock(&x->ka_mu);
	return atomic_load(&x->leading);
}

long long xp_store_quorum_age_ms(const struct xp_store *s)
{
	if (!s->etcd)
		return 0;
	return (long long)((xp_mono_ns() - atomic_load(&s->etcd->linear_ok)) / 1000000);
}

int xp_store_stalled(struct xp_store *s, struct xp_err *err)
{
	struct xp_store_etcd *x = s->etcd;
	int rc = 0;
	if (!x)
		return 0;
	pthread_mutex_lock(&x->ka_mu);
	if (x->stall[0])
		rc = xp_errf(err, XP_EUNAVAIL, "%s: writes wait for etcd: %s", s->path, x->stall);
	pthread_mutex_unlock(&x->ka_mu);
	/* a leader that has not renewed its lease for 3/4 of it may have been replaced
	 * already (paused, cut off): it answers nothing, reads included, until it knows */
	uint64_t quiet = xp_mono_ns() - atomic_load(&x->last_ok);
	if (rc == 0 && atomic_load(&x->leading) && quiet > (uint64_t)x->ttl_ms * 750000)
		rc = xp_errf(err, XP_EUNAVAIL,
			     "%s: the leader's lease was last renewed %llu ms ago; it may lead no "
			     "more",
			     s->path, (unsigned long long)(quiet / 1000000));
	return rc;
}

int xp_store_promote(struct xp_store *s, uint64_t seq, struct xp_err *err)
{
	struct xp_store_etcd *x = s->etcd;
	uint64_t last = 0;
	if (!x || !atomic_load(&x->leading))
		return xp_errf(err, XP_ESTATE, "%s: not the leader", s->path);
	pthread_mutex_lock(&s->rmu);
	int rc = find_last(s, x->r, &last, err);
	pthread_mutex_unlock(&s->rmu);
	if (rc == 0 && last != seq)
		rc = xp_errf(err, XP_ESTATE,
			     "%s: the journal ends at seq %" PRIu64 ", this controller has %" PRIu64,
			     s->path, last, seq);
	if (rc < 0)
		return rc;
	atomic_store(&s->last_seq, seq);
	atomic_store(&s->durable_seq, seq);
	return 0;
}

/* ---- the manifest ------------------------------------------------------------------------- */

struct manifest {
	uint64_t seq, len;
	int64_t at;
	unsigned chunks;
	uint32_t crc;
	int found, bad;
};

static int on_manifest(void *ctx, const struct xp_etcd_kv *kv)
{
	struct manifest *m = ctx;
	unsigned long long seq, len;
	long long at;
	unsigned chunks, crc;
	m->found = 1;
	if (sscanf(kv->value, "xpool-snap 1 seq=%llu at=%lld len=%llu chunks=%u crc=%x", &seq, &at,
		   &len, &chunks, &crc) != 5) {
		m->bad = 1;
		return 0;
	}
	m->seq = seq;
	m->at = at;
	m->len = len;
	m->chunks = chunks;
	m->crc = crc;
	return 0;
}

static int read_manifest(struct xp_store *s, struct xp_etcd *c, struct manifest *m,
			 struct xp_err *err)
{
	char k[512];
	size_t kl = (size_t)snprintf(k, sizeof(k), "%ssnap", s->etcd->pre);
	memset(m, 0, sizeof(*m));
	int rc = xp_etcd_range(c, k, kl, NULL, 0, 0, 5000, on_manifest, m, NULL, NULL, err);
	if (rc == 0 && m->bad)
		rc = xp_errf(err, XP_ECORRUPT, "%s: %s is not a snapshot manifest", s->path, k);
	return rc;
}

static int on_last(void *ctx, const struct xp_etcd_kv *kv)
{
	uint64_t *seq = ctx;
	const char *p = memrchr(kv->key, '/', kv->klen);
	*seq = p ? strtoull(p + 1, NULL, 10) : 0;
	return 0;
}

/* The highest journal seq in etcd (0: none), and the snapshot's. */
static int find_last(struct xp_store *s, struct xp_etcd *c, uint64_t *last, struct xp_err *err)
{
	struct xp_store_etcd *x = s->etcd;
	char k[512], e[512];
	json_t *o = NULL;
	uint64_t js = 0;
	size_t kl = (size_t)snprintf(k, sizeof(k), "%sj/", x->pre);
	xp_etcd_prefix_end(k, kl, e);
	struct xp_sb b = { 0 };
	/* a range sorted backwards: built here, the one caller that needs it */
	xp_sb_puts(&b, "{\"key\":\"");
	xp_b64_put(&b, k, kl);
	xp_sb_puts(&b, "\",\"range_end\":\"");
	xp_b64_put(&b, e, kl);
	xp_sb_puts(&b, "\",\"limit\":\"1\",\"sort_order\":\"DESCEND\",\"sort_target\":\"KEY\","
		       "\"keys_only\":true}");
	int rc = xp_etcd_post(c, "/v3/kv/range", b.s, b.len, 5000, (void **)&o, err);
	xp_sb_free(&b);
	struct manifest m;
	if (rc == 0 && (rc = read_manifest(s, c, &m, err)) < 0)
		json_decref(o);
	if (rc < 0)
		return rc;
	atomic_store(&x->snap_seq, m.found ? m.seq : 0);
	json_t *kv = json_array_get(json_object_get(o, "kvs"), 0);
	if (kv) {
		char key[600];
		const char *s64 = json_string_value(json_object_get(kv, "key"));
		long n = s64 && strlen(s64) < 780 ? xp_b64_decode(s64, strlen(s64), key) : -1;
		struct xp_etcd_kv one = { .key = key, .klen = n > 0 ? (size_t)n : 0 };
		if (n > 0)
			on_last(&js, &one);
	}
	json_decref(o);
	*last = js > m.seq ? js : m.seq;
	return 0;
}

/* ---- open and close ----------------------------------------------------------------------- */

int xp_store_etcd_open(const struct xp_store_opts *o, struct xp_store **out, struct xp_err *err)
{
	struct xp_store *s = XNEW(struct xp_store);
	struct xp_store_etcd *x = XNEW(struct xp_store_etcd);
	struct xp_etcd *e = NULL;
	struct manifest m;
	uint64_t last = 0;
	int rc;

	*out = NULL;
	s->lock_fd = s->seal_fd = -1;
	s->etcd = x;
	s->path = xstrdup(o->etcd);
	s->max_batch = o->max_batch ? o->max_batch : 4096;
	s->keep_snapshots = 1;
	s->sync = 1;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->rmu, NULL);
	pthread_cond_init(&s->work_cv, NULL);
	pthread_cond_init(&s->durable_cv, NULL);
	pthread_mutex_init(&x->ka_mu, NULL);
	pthread_cond_init(&x->ka_cv, NULL);
	atomic_store(&x->linear_ok, xp_mono_ns());
	x->ttl_ms = o->lease_ms >= 2000 ? o->lease_ms : o->lease_ms ? 2000 : 5000;
	struct xp_etcd_tls t = { o->etcd_ca, o->etcd_cert, o->etcd_key };
	if ((rc = xp_etcd_create(o->etcd, &t, &e, err)) < 0)
		goto fail;
	x->w = e;
	x->r = xp_etcd_dup(e);
	x->ka = xp_etcd_dup(e);
	x->fr = xp_etcd_dup(e);
	xp_etcd_set_serializable(x->fr, 1);
	x->pre = xstrdup(xp_etcd_prefix(e));
	x->leader_key = xmalloc(strlen(x->pre) + 8);
	sprintf(x->leader_key, "%sleader", x->pre);
	x->advertise = o->advertise ? xstrdup(o->advertise) : NULL;
	x->on_lead = o->on_lead;
	x->lead_arg = o->lead_arg;
	/* etcd may be away (no quorum): wait for it as long as standby lets us */
	while ((rc = regrant(x, x->w, err)) == XP_EUNAVAIL && o->standby &&
	       !o->standby(o->standby_arg, NULL, err->text))
		sleep_ms(500);
	if (rc < 0)
		goto fail;
	if ((rc = pthread_create(&x->ka_thread, NULL, keepalive_main, s)) != 0) {
		rc = xp_errf(err, -rc, "%s: cannot start the keepalive thread: %s", s->path,
			     strerror(rc));
		goto fail;
	}
	x->ka_started = 1;
	if (!o->follow && (rc = campaign(s, x->w, o->standby, o->standby_arg, err)) < 0)
		goto fail;
	if ((rc = read_manifest(s, x->w, &m, err)) < 0)
		goto fail;
	atomic_store(&x->snap_seq, m.found ? m.seq : 0);
	if (!o->follow && (rc = find_last(s, x->w, &last, err)) < 0)
		goto fail;
	atomic_store(&s->last_seq, last);
	atomic_store(&s->durable_seq, last);
	if ((rc = pthread_create(&s->thread, NULL, xp_store_thread_main, s)) != 0) {
		rc = xp_errf(err, -rc, "%s: cannot start the store thread: %s", s->path,
			     strerror(rc));
		goto fail;
	}
	s->thread_started = 1;
	if (o->follow) {
		if ((rc = pthread_create(&x->camp_thread, NULL, campaign_main, s)) != 0) {
			rc = xp_errf(err, -rc, "%s: cannot start the campaign: %s", s->path,
				     strerror(rc));
			goto fail;
		}
		x->camp_started = 1;
	}
	*out = s;
	return 0;
fail:
	xp_store_close(s);
	return rc;
}

int64_t xp_store_epoch(const struct xp_store *s)
{
	return s->etcd ? atomic_load(&s->etcd->epoch) : 0;
}

/* After the store thread has stopped: stop renewing, give the lease back (the leader key goes
 * with it, so a standby takes over at once), free. */
void xp_store_etcd_close(struct xp_store *s)
{
	struct xp_store_etcd *x = s->etcd;
	if (x->ka_started) {
		pthread_mutex_lock(&x->ka_mu);
		x->ka_stop = 1;
		pthread_cond_signal(&x->ka_cv);
		pthread_mutex_unlock(&x->ka_mu);
		pthread_join(x->ka_thread, NULL);
	}
	if (x->camp_started) /* sees ka_stop within 100 ms (or a request's timeout) */
		pthread_join(x->camp_thread, NULL);
	if (x->lease && x->w) {
		struct xp_err err = { 0 };
		xp_etcd_revoke(x->w, x->lease, &err);
	}
	xp_etcd_destroy(x->w);
	xp_etcd_destroy(x->r);
	xp_etcd_destroy(x->ka);
	xp_etcd_destroy(x->fr);
	pthread_mutex_destroy(&x->ka_mu);
	pthread_cond_destroy(&x->ka_cv);
	free(x->pre);
	free(x->leader_key);
	free(x->advertise);
	free(x);
	s->etcd = NULL;
}

/* ---- writing (the store thread) ----------------------------------------------------------- */

/* Run a guarded txn until etcd answers it: again and again while etcd cannot be reached and the
 * lease may still be ours. 0; XP_ESTATE when the guard failed (another controller leads);
 * XP_EUNAVAIL when the lease was lost meanwhile; XP_EIO for etcd's refusal (msg says it). */
static int run_guarded(struct xp_store *s, struct xp_etcd_txn *t, int64_t *rev, char *msg,
		       size_t msgsz)
{
	struct xp_store_etcd *x = s->etcd;
	long backoff = 50;
	for (int tries = 0;; tries++) {
		struct xp_err err = { 0 };
		int ok = 0;
		int rc = xp_etcd_txn_run(x->w, t, 5000, &ok, rev, &err);
		if (tries) { /* say why writes wait, or that they no longer do */
			pthread_mutex_lock(&x->ka_mu);
			snprintf(x->stall, sizeof(x->stall), "%s",
				 rc == XP_EUNAVAIL ? err.text : "");
			pthread_mutex_unlock(&x->ka_mu);
		}
		if (rc == 0 && ok)
			return 0;
		if (rc == 0) {
			atomic_store(&x->lost, 1);
			snprintf(msg, msgsz,
				 "fenced: %s is no longer this controller's (epoch %" PRId64
				 "): another controller leads",
				 x->leader_key, atomic_load(&x->epoch));
			return XP_ESTATE;
		}
		if (rc != XP_EUNAVAIL) {
			snprintf(msg, msgsz, "%s", err.text);
			return rc;
		}
		if (atomic_load(&x->lost)) {
			snprintf(msg, msgsz, "the leader's lease was lost while etcd did not answer: %s",
				 err.text);
			return XP_EUNAVAIL;
		}
		pthread_mutex_lock(&s->mu);
		int closing = s->stop;
		pthread_mutex_unlock(&s->mu);
		if (closing) {
			snprintf(msg, msgsz, "stopped while etcd did not take the commit: %s", err.text);
			return XP_EUNAVAIL;
		}
		sleep_ms(backoff);
		backoff = backoff < 500 ? backoff * 2 : 500;
	}
}

static void txn_guarded(struct xp_store_etcd *x, struct xp_etcd_txn *t)
{
	xp_etcd_txn_start(t);
	xp_etcd_txn_created(t, x->leader_key, strlen(x->leader_key), atomic_load(&x->epoch));
}

static int write_records(struct xp_store *s, struct xp_store_item **itp, char *msg, size_t msgsz)
{
	struct xp_store_etcd *x = s->etcd;
	struct xp_etcd_txn t;
	struct xp_sb v = { 0 };
	struct xp_store_item *it = *itp;
	char k[512];
	int rc = 0;
	txn_guarded(x, &t);
	for (; it && it->kind == XP_STORE_REC; it = it->next) {
		size_t kl = jkey(x, it->seq, k, sizeof(k));
		xp_sb_reset(&v);
		xp_sb_printf(&v, "%" PRId64 " %08x %s\n", it->at,
			     xp_store_rec_crc(it->seq, it->at, it->type, it->body, it->len), it->type);
		xp_sb_putn(&v, it->body, it->len);
		if (v.len + kl > XP_ETCD_MAX_BYTES) {
			snprintf(msg, msgsz, "record %" PRIu64 " (%s) is %zu bytes: etcd takes %d",
				 it->seq, it->type, v.len, XP_ETCD_MAX_BYTES);
			rc = XP_ETOOBIG;
			break;
		}
		if (t.nops == XP_ETCD_MAX_OPS - 1 || t.bytes + v.len + kl > XP_ETCD_MAX_BYTES) {
			if ((rc = run_guarded(s, &t, NULL, msg, msgsz)) < 0)
				break;
			xp_etcd_txn_free(&t);
			txn_guarded(x, &t);
		}
		xp_etcd_txn_put(&t, k, kl, v.s, v.len, 0);
	}
	if (rc == 0 && t.nops)
		rc = run_guarded(s, &t, NULL, msg, msgsz);
	xp_etcd_txn_free(&t);
	xp_sb_free(&v);
	*itp = it;
	return rc;
}

static int write_snapshot(struct xp_store *s, const struct xp_store_item *it, char *msg,
			  size_t msgsz)
{
	struct xp_store_etcd *x = s->etcd;
	struct xp_etcd_txn t;
	char k[512], e[512], man[256];
	unsigned n = (unsigned)((it->len + CHUNK - 1) / CHUNK);
	int64_t rev = 0;
	int rc = 0;
	txn_guarded(x, &t);
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		size_t off = (size_t)i * CHUNK, len = it->len - off < CHUNK ? it->len - off : CHUNK;
		size_t kl = (size_t)snprintf(k, sizeof(k), "%ss/%020" PRIu64 "/%08u", x->pre,
					     it->seq, i);
		if (t.nops && t.bytes + len + kl > XP_ETCD_MAX_BYTES) {
			rc = run_guarded(s, &t, NULL, msg, msgsz);
			xp_etcd_txn_free(&t);
			txn_guarded(x, &t);
		}
		xp_etcd_txn_put(&t, k, kl, it->body + off, len, 0);
	}
	if (rc == 0 && t.nops)
		rc = run_guarded(s, &t, NULL, msg, msgsz);
	xp_etcd_txn_free(&t);
	if (rc < 0)
		return rc;
	/* the manifest, the old chunks and the journal it covers, in one step */
	txn_guarded(x, &t);
	int ml = snprintf(man, sizeof(man), "xpool-snap 1 seq=%" PRIu64 " at=%" PRId64
			  " len=%zu chunks=%u crc=%08x", it->seq, it->at, it->len, n,
			  xp_store_snap_crc(it->seq, it->at, it->body, it->len));
	size_t kl = (size_t)snprintf(k, sizeof(k), "%ssnap", x->pre);
	xp_etcd_txn_put(&t, k, kl, man, (size_t)ml, 0);
	{ /* every other snapshot's chunks: [s/, s/<seq>/) and [after s/<seq>/, after s/) */
		char mine[512], after[512], top[512];
		size_t ml2 = (size_t)snprintf(mine, sizeof(mine), "%ss/%020" PRIu64 "/", x->pre,
					      it->seq);
		kl = (size_t)snprintf(k, sizeof(k), "%ss/", x->pre);
		xp_etcd_prefix_end(mine, ml2, after);
		xp_etcd_prefix_end(k, kl, top);
		xp_etcd_txn_delete(&t, k, kl, mine, ml2);
		xp_etcd_txn_delete(&t, after, ml2, top, kl);
	}
	kl = (size_t)snprintf(k, sizeof(k), "%sj/", x->pre);
	size_t el = jkey(x, it->seq + 1, e, sizeof(e));
	xp_etcd_txn_delete(&t, k, kl, e, el);
	rc = run_guarded(s, &t, &rev, msg, msgsz);
	xp_etcd_txn_free(&t);
	if (rc == 0) {
		struct xp_err err = { 0 };
		atomic_store(&x->snap_seq, it->seq);
		xp_etcd_compact(x->w, rev, &err); /* history only; a failure costs space */
	}
	return rc;
}

int xp_store_etcd_write(struct xp_store *s, struct xp_store_item *batch, char *msg, size_t msgsz)
{
	int rc = 0;
	for (struct xp_store_item *it = batch; rc == 0 && it;) {
		if (it->kind == XP_STORE_REC) {
			rc = write_records(s, &it, msg, msgsz);
		} else {
			rc = write_snapshot(s, it, msg, msgsz);
			it = it->next;
		}
	}
	return rc;
}

/* ---- reading ------------------------------------------------------------------------------ */

struct jread {
	struct xp_store *s;
	uint64_t next; /* the seq expected next; 0: any (the first of a read) */
	uint64_t last; /* the last handed on */
	size_t n, limit;
	xp_store_rec_fn rec;
	void *ctx;
	struct xp_err *err;
	int cb_rc;
};

static int on_journal(void *ctx, const struct xp_etcd_kv *kv)
{
	struct jread *j = ctx;
	struct xp_store_rec r = { 0 };
	const char *slash = memrchr(kv->key, '/', kv->klen);
	const char *nl = memchr(kv->value, '\n', kv->vlen);
	char type[128];
	long long at;
	unsigned crc;
	uint64_t seq = slash ? strtoull(slash + 1, NULL, 10) : 0;
	if (j->limit && j->n == j->limit)
		return 0;
	if (j->next && seq != j->next)
		return xp_errf(j->err, XP_ECORRUPT,
			       "%s: seq %" PRIu64 " is missing: the journal goes on at seq %" PRIu64,
			       j->s->path, j->next, seq);
	if (!nl || sscanf(kv->value, "%lld %x %127s", &at, &crc, type) != 3)
		return xp_errf(j->err, XP_ECORRUPT, "%s: seq %" PRIu64 ": not a journal record",
			       j->s->path, seq);
	r.seq = seq;
	r.at_ms = at;
	r.type = type;
	r.body = nl + 1;
	r.len = kv->vlen - (size_t)(nl + 1 - kv->value);
	if (xp_store_rec_crc(seq, at, type, r.body, r.len) != crc)
		return xp_errf(j->err, XP_ECORRUPT,
			       "%s: seq %" PRIu64 " (%s) fails its checksum", j->s->path, seq, type);
	int rc = j->rec(j->ctx, &r);
	if (rc < 0) {
		j->cb_rc = rc;
		return rc;
	}
	j->next = seq + 1;
	j->last = seq;
	j->n++;
	return 0;
}

/* Records from seq from on, pages of PAGE, until the end or j->limit; each page within
 * timeout_ms (a follower's poll must not hold its owner long when etcd is away). */
static int read_journal(struct xp_store *s, struct xp_etcd *c, uint64_t from, long timeout_ms,
			struct jread *j)
{
	struct xp_store_etcd *x = s->etcd;
	char k[512], e[512];
	size_t el = (size_t)snprintf(e, sizeof(e), "%sj/", x->pre);
	xp_etcd_prefix_end(e, el, e);
	for (int more = 1; more;) {
		size_t before = j->n;
		size_t kl = jkey(x, from, k, sizeof(k));
		long page = j->limit && j->limit - j->n < PAGE ? (long)(j->limit - j->n) : PAGE;
		int rc = xp_etcd_range(c, k, kl, e, el, page, timeout_ms, on_journal, j, &more,
				       NULL, j->err);
		if (rc < 0)
			return rc;
		if (j->n == before || (j->limit && j->n >= j->limit))
			break;
		from = j->last + 1;
	}
	return 0;
}

struct chunks {
	struct xp_sb body;
	unsigned n;
};

static int on_chunk(void *ctx, const struct xp_etcd_kv *kv)
{
	struct chunks *c = ctx;
	xp_sb_putn(&c->body, kv->value, kv->vlen);
	c->n++;
	return 0;
}

static int load_snapshot(struct xp_store *s, const struct manifest *m, xp_store_snap_fn snap,
			 void *ctx, struct xp_err *err)
{
	struct xp_store_etcd *x = s->etcd;
	struct chunks c = { { 0 }, 0 };
	char k[512], e[512];
	size_t kl = (size_t)snprintf(k, sizeof(k), "%ss/%020" PRIu64 "/", x->pre, m->seq);
	xp_etcd_prefix_end(k, kl, e);
	int rc = 0;
	for (int more = 1; rc == 0 && more;) {
		char from[512];
		size_t fl = c.n ? (size_t)snprintf(from, sizeof(from), "%s%08u", k, c.n)
				: (size_t)snprintf(from, sizeof(from), "%s", k);
		unsigned before = c.n;
		rc = xp_etcd_range(x->r, from, fl, e, kl, 2, 10000, on_chunk, &c, &more, NULL, err);
		if (c.n == before)
			break;
	}
	if (rc == 0 && (c.n != m->chunks || c.body.len != m->len ||
			xp_store_snap_crc(m->seq, m->at, c.body.s ? c.body.s : "", c.body.len) !=
				m->crc))
		rc = xp_errf(err, XP_ECORRUPT,
			     "%s: the snapshot at seq %" PRIu64
			     " is damaged: %u of %u chunks, %zu of %" PRIu64 " bytes, or its checksum",
			     s->path, m->seq, c.n, m->chunks, c.body.len, m->len);
	if (rc == 0 && !snap)
		rc = xp_errf(err, XP_EUNSUPP, "%s: a snapshot where none was expected", s->path);
	if (rc == 0 && (rc = snap(ctx, m->seq, c.body.s ? c.body.s : "", c.body.len)) < 0 &&
	    !err->text[0])
		xp_errf(err, rc, "%s: snapshot at seq %" PRIu64 ": %s", s->path, m->seq,
			xp_strerror(rc));
	xp_sb_free(&c.body);
	return rc;
}

int xp_store_etcd_load(struct xp_store *s, xp_store_snap_fn snap, xp_store_rec_fn rec, void *ctx,
		       struct xp_err *err)
{
	struct manifest m;
	struct jread j = { .s = s, .rec = rec, .ctx = ctx, .err = err };
	pthread_mutex_lock(&s->rmu);
	int rc = read_manifest(s, s->etcd->r, &m, err);
	if (rc == 0 && m.found)
		rc = load_snapshot(s, &m, snap, ctx, err);
	j.next = m.found ? m.seq + 1 : 1;
	if (rc == 0)
		rc = read_journal(s, s->etcd->r, j.next, 10000, &j);
	pthread_mutex_unlock(&s->rmu);
	if (rc == 0 && j.next - 1 < atomic_load(&s->last_seq))
		rc = xp_errf(err, XP_ECORRUPT, "%s: the journal ends at seq %" PRIu64
			     " but seq %" PRIu64 " was found before", s->path, j.next - 1,
			     atomic_load(&s->last_seq));
	if (rc < 0 && j.cb_rc < 0 && err->text[0])
		xp_err_prefix(err, "%s: seq %" PRIu64 ": ", s->path, j.next);
	if (rc == XP_ECORRUPT && j.cb_rc == 0) { /* a snapshot taken meanwhile? start again */
		struct manifest now;
		struct xp_err e2 = { 0 };
		pthread_mutex_lock(&s->rmu);
		int r2 = read_manifest(s, s->etcd->r, &now, &e2);
		pthread_mutex_unlock(&s->rmu);
		if (r2 == 0 && now.found && (!m.found || now.seq != m.seq))
			rc = xp_errf(err, XP_EUNAVAIL,
				     "%s: the leader took a snapshot (seq %" PRIu64
				     ") during the load; starting again",
				     s->path, now.seq);
	}
	return rc;
}

long xp_store_etcd_read(struct xp_store *s, uint64_t since, size_t limit, xp_store_rec_fn rec,
			void *ctx, struct xp_err *err)
{
	struct jread j = { .s = s, .rec = rec, .ctx = ctx, .err = err, .limit = limit,
			   .next = since + 1 };
	if (limit == 0)
		return 0;
	struct xp_store_etcd *x = s->etcd;
	struct manifest m = { 0 };
	struct xp_err merr = { 0 };
	/* a follower polls the member it reaches, quorum or not (fast; X-Xpool-Stale says
	 * how current); the leader and a catching-up follower read through the quorum */
	int leading = atomic_load(&x->leading);
	pthread_mutex_lock(&s->rmu);
	int rc = read_journal(s, leading ? x->r : x->fr, since + 1, 1500, &j);
	/* nothing, or a gap, right after since: was it pruned behind a newer snapshot? */
	if ((rc == 0 && j.n == 0) || (rc == XP_ECORRUPT && j.n == 0))
		if (read_manifest(s, leading ? x->r : x->fr, &m, &merr) == 0 && m.found)
			atomic_store(&x->snap_seq, m.seq);
	pthread_mutex_unlock(&s->rmu);
	if (j.n == 0 && (rc == 0 || rc == XP_ECORRUPT) && m.found && since < m.seq)
		return xp_errf(err, XP_ENOENT,
			       "%s: records after seq %" PRIu64 " were pruned (snapshot at %" PRIu64
			       ")",
			       s->path, since, m.seq);
	return rc < 0 ? rc : (long)j.n;
}
