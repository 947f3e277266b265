/*
 * etcd: calls of etcd's v3 JSON gateway over the client's HTTP/1.1
 * transport (see etcd.h for what it relies on).
 */
#include "etcd.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/http1.h"
#include "client/tls.h"
#include "lib/base64.h"
#include "lib/clock.h"
#include "lib/xalloc.h"

#define MAX_ENDPOINTS 16

struct xp_etcd {
	char *url, *prefix;
	char *ca;			/* etcds://: the CA file (NULL: the system's CAs) */
	char *cert, *key;		/* etcds://: the client certificate and key, or NULL */
	struct xp_tls_trust *trust; /* etcds://: what the members are verified against */
	int serializable;	    /* ranges answered by the member alone (xp_etcd_set_serializable) */
	char *host[MAX_ENDPOINTS], *port[MAX_ENDPOINTS];
	struct xp_http1 *h[MAX_ENDPOINTS];
	int n, cur;
};

static int add_endpoint(struct xp_etcd *e, const char *s, size_t len, struct xp_err *err)
{
	char hp[256];
	if (len == 0 || len >= sizeof(hp))
		return xp_errf(err, XP_EINVAL, "etcd address '%s': an empty or too long endpoint",
			       e->url);
	memcpy(hp, s, len);
	hp[len] = '\0';
	char *colon = strrchr(hp, ':');
	if (!colon || colon == hp || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return xp_errf(err, XP_EINVAL, "etcd address '%s': endpoint '%s' is not HOST:PORT",
			       e->url, hp);
	if (e->n == MAX_ENDPOINTS)
		return xp_errf(err, XP_EINVAL, "etcd address '%s': more than %d endpoints", e->url,
			       MAX_ENDPOINTS);
	*colon = '\0';
	e->host[e->n] = xstrdup(hp);
	e->port[e->n] = xstrdup(colon + 1);
	e->n++;
	return 0;
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* etcds://: every connection verified against the CA file (NULL: the system's), presenting
 * the client certificate when one is given */
static int use_tls(struct xp_etcd *e, const struct xp_etcd_tls *t, struct xp_err *err)
{
	int rc = xp_tls_trust_load(t->ca, &e->trust, err);
	if (rc == 0)
		xp_tls_trust_where(e->trust, "--etcd-ca or 'etcd-ca:' in the server's config file");
	if (rc == 0 && t->cert)
		rc = xp_tls_trust_identity(e->trust, t->cert, t->key, err);
	if (rc < 0)
		return rc;
	e->ca = dup_or_null(t->ca);
	e->cert = dup_or_null(t->cert);
	e->key = dup_or_null(t->key);
	for (int i = 0; i < e->n; i++)
		xp_http1_set_tls(e->h[i], e->trust);
	return 0;
}

int xp_etcd_create(const char *url, const struct xp_etcd_tls *t, struct xp_etcd **out,
		   struct xp_err *err)
{
	static const struct xp_etcd_tls none;
	struct xp_etcd *e = XNEW(struct xp_etcd);
	const char *p = url;
	int rc = 0, tls = !strncmp(p, "etcds://", 8);
	e->url = xstrdup(url);
	if (strncmp(p, "etcd://", 7) != 0 && !tls) {
		rc = xp_errf(err, XP_EINVAL,
			     "store '%s': expected etcd://HOST:PORT[,...][/PREFIX] (etcds:// for TLS)",
			     url);
		goto fail;
	}
	p += tls ? 8 : 7;
	size_t hosts = strcspn(p, "/");
	for (const char *q = p; rc == 0 && q < p + hosts;) {
		size_t n = strcspn(q, ",/");
		rc = add_endpoint(e, q, n, err);
		q += n + (q[n] == ',');
	}
	if (rc == 0 && e->n == 0)
		rc = xp_errf(err, XP_EINVAL, "etcd address '%s': no endpoint", url);
	if (rc < 0)
		goto fail;
	const char *pre = p[hosts] ? p + hosts : "/xpool/";
	size_t pl = strlen(pre);
	e->prefix = xmalloc(pl + 2);
	memcpy(e->prefix, pre, pl + 1);
	if (pre[pl - 1] != '/')
		strcat(e->prefix, "/");
	for (int i = 0; i < e->n; i++) {
		e->h[i] = xp_http1_create(e->host[i], e->port[i]);
		xp_http1_set_peer(e->h[i], "the etcd member");
	}
	if (!tls && t && (t->ca || t->cert)) {
		rc = xp_errf(err, XP_EINVAL, "etcd address '%s': a CA or client certificate goes "
					     "with etcds://", url);
		goto fail;
	}
	if (t && !t->cert != !t->key) {
		rc = xp_errf(err, XP_EINVAL, "etcd: a client certificate needs its key, and a key "
					     "its certificate");
		goto fail;
	}
	if (tls && (rc = use_tls(e, t ? t : &none, err)) < 0)
		goto fail;
	*out = e;
	return 0;
fail:
	xp_etcd_destroy(e);
	*out = NULL;
	return rc;
}

struct xp_etcd *xp_etcd_dup(const struct xp_etcd *o)
{
	struct xp_etcd *e = XNEW(struct xp_etcd);
	e->url = xstrdup(o->url);
	e->prefix = xstrdup(o->prefix);
	e->n = o->n;
	e->cur = o->cur;
	for (int i = 0; i < e->n; i++) {
		e->host[i] = xstrdup(o->host[i]);
		e->port[i] = xstrdup(o->port[i]);
		e->h[i] = xp_http1_create(e->host[i], e->port[i]);
		xp_http1_set_peer(e->h[i], "the etcd member");
	}
	if (o->trust) { /* loaded once already: it loads again */
		struct xp_err err = { 0 };
		struct xp_etcd_tls t = { o->ca, o->cert, o->key };
		if (use_tls(e, &t, &err) < 0)
			fprintf(stderr, "xpool: etcd %s: %s\n", e->url, err.text);
	}
	return e;
}

void xp_etcd_destroy(struct xp_etcd *e)
{
	if (!e)
		return;
	for (int i = 0; i < e->n; i++) {
		xp_http1_destroy(e->h[i]);
		free(e->host[i]);
		free(e->port[i]);
	}
	xp_tls_trust_free(e->trust);
	free(e->ca);
	free(e->cert);
	free(e->key);
	free(e->url);
	free(e->prefix);
	free(e);
}

void xp_etcd_set_serializable(struct xp_etcd *e, int on)
{
	e->serializable = on;
}

const char *xp_etcd_prefix(const struct xp_etcd *e)
{
	return e->prefix;
}

const char *xp_etcd_url(const struct xp_etcd *e)
{
	return e->url;
}

static size_t collect(char *p, size_t size, size_t n, void *ud)
{
	xp_sb_putn(ud, p, size * n);
	return size * n;
}

/* One endpoint: 0 with the reply in *out, XP_EUNAVAIL (try the next), or XP_EIO. */
static int post_one(struct xp_etcd *e, int i, const char *path, const char *body, size_t len,
		    long timeout_ms, json_t **out, struct xp_err *err)
{
	static const char *const hdr[] = { "Content-Type: application/json", NULL };
	struct xp_sb rep = { 0 };
	struct xp_http1_req rq = { .method = "POST", .path = path, .headers = hdr, .body = body,
				   .len = len, .timeout_ms = timeout_ms,
				   .connect_ms = timeout_ms < 1000 ? timeout_ms : 1000,
				   .write = collect, .ud = &rep, .repeat_safe = 1 };
	long status = 0;
	int aborted = 0;
	int rc = xp_http1_perform(e->h[i], &rq, &status, &aborted, err);
	if (rc < 0) {
		xp_sb_free(&rep);
		xp_err_prefix(err, "etcd %s:%s: ", e->host[i], e->port[i]);
		return XP_EUNAVAIL;
	}
	json_error_t je;
	json_t *o = json_loadb(rep.s ? rep.s : "", rep.len, 0, &je);
	if (status == 200 && json_is_object(o)) {
		xp_sb_free(&rep);
		*out = o;
		return 0;
	}
	const char *msg = json_string_value(json_object_get(o, "error"));
	if (!msg)
		msg = json_string_value(json_object_get(o, "message"));
	rc = xp_errf(err, XP_EIO, "etcd %s:%s %s: HTTP %ld: %.200s", e->host[i], e->port[i], path,
		     status, msg ? msg : rep.s ? rep.s : "");
	/* a member cut off from its quorum: another may have one; etcd out of space (the NOSPACE
	 * alarm, 429): writes wait until an operator makes room */
	if (status == 429 ||
	    (msg && (strstr(msg, "no leader") || strstr(msg, "timed out") ||
		     strstr(msg, "unavailable") || strstr(msg, "leader changed") ||
		     strstr(msg, "space exceeded"))))
		rc = XP_EUNAVAIL;
	json_decref(o);
	xp_sb_free(&rep);
	return rc;
}

int xp_etcd_post(struct xp_etcd *e, const char *path, const char *body, size_t len,
		 long timeout_ms, void **out, struct xp_err *err)
{
	/* timeout_ms bounds the whole call: each endpoint gets an equal share of what is left
	 * (at least 100 ms), so a member that hangs does not take the others' time, and one
	 * that refuses at once leaves its share to the next */
	int rc = XP_EUNAVAIL;
	uint64_t end = xp_mono_ns() + (uint64_t)timeout_ms * 1000000u;
	for (int k = 0; k < e->n; k++) {
		int i = (e->cur + k) % e->n;
		uint64_t now = xp_mono_ns();
		long left = now < end ? (long)((end - now) / 1000000u) : 0;
		long each = left / (e->n - k);
		rc = post_one(e, i, path, body, len, each < 100 ? 100 : each, (json_t **)out, err);
		if (rc != XP_EUNAVAIL) {
			e->cur = i;
			return rc;
		}
	}
	e->cur = (e->cur + 1) % e->n;
	return rc;
}

static int64_t int_field(json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

/* A bytes field decoded into buf (grown as needed); -1 when it is not base64. */
static long bytes_field(json_t *o, const char *name, char **buf, size_t *cap)
{
	json_t *v = json_object_get(o, name);
	const char *s = json_is_string(v) ? json_string_value(v) : "";
	size_t n = strlen(s);
	if (n / 4 * 3 + 1 > *cap) {
		*cap = n / 4 * 3 + 1;
		*buf = xrealloc(*buf, *cap);
	}
	return xp_b64_decode(s, n, *buf);
}

static void put_bytes(struct xp_sb *b, const char *name, const void *p, size_t n)
{
	xp_sb_printf(b, "\"%s\":\"", name);
	xp_b64_put(b, p, n);
	xp_sb_putc(b, '"');
}

int xp_etcd_range(struct xp_etcd *e, const char *key, size_t klen, const char *end, size_t elen,
		  long limit, long timeout_ms, xp_etcd_kv_fn fn, void *ctx, int *more,
		  int64_t *rev, struct xp_err *err)
{
	struct xp_sb b = { 0 };
	json_t *o = NULL;
	xp_sb_putc(&b, '{');
	put_bytes(&b, "key", key, klen);
	if (end) {
		xp_sb_putc(&b, ',');
		put_bytes(&b, "range_end", end, elen);
	}
	if (limit > 0)
		xp_sb_printf(&b, ",\"limit\":\"%ld\"", limit);
	if (e->serializable)
		xp_sb_puts(&b, ",\"serializable\":true");
	xp_sb_putc(&b, '}');
	int rc = xp_etcd_post(e, "/v3/kv/range", b.s, b.len, timeout_ms, (void **)&o, err);
	xp_sb_free(&b);
	if (rc < 0)
		return rc;
	if (rev)
		*rev = int_field(json_object_get(o, "header"), "revision");
	if (more)
		*more = json_is_true(json_object_get(o, "more"));
	json_t *kvs = json_object_get(o, "kvs");
	char *kb = NULL, *vb = NULL;
	size_t kcap = 0, vcap = 0;
	for (size_t i = 0; rc == 0 && i < json_array_size(kvs); i++) {
		json_t *kv = json_array_get(kvs, i);
		struct xp_etcd_kv x = { 0 };
		long kl = bytes_field(kv, "key", &kb, &kcap), vl = bytes_field(kv, "value", &vb, &vcap);
		if (kl < 0 || vl < 0) {
			rc = xp_errf(err, XP_EIO, "etcd %s: a range reply that is not base64", e->url);
			break;
		}
		x.key = kb;
		x.klen = (size_t)kl;
		x.value = vb;
		x.vlen = (size_t)vl;
		x.create_rev = int_field(kv, "create_revision");
		x.mod_rev = int_field(kv, "mod_revision");
		x.lease = int_field(kv, "lease");
		rc = fn ? fn(ctx, &x) : 0;
	}
	free(kb);
	free(vb);
	json_decref(o);
	return rc;
}

void xp_etcd_txn_start(struct xp_etcd_txn *t)
{
	memset(t, 0, sizeof(*t));
	xp_sb_puts(&t->b, "{\"compare\":[");
}

void xp_etcd_txn_created(struct xp_etcd_txn *t, const char *key, size_t klen, int64_t rev)
{
	xp_sb_puts(&t->b, t->ncmp++ ? ",{" : "{");
	put_bytes(&t->b, "key", key, klen);
	xp_sb_printf(&t->b, ",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"%" PRId64 "\"}",
		     rev);
}

static void op_start(struct xp_etcd_txn *t)
{
	if (!t->in_ops) {
		xp_sb_puts(&t->b, "],\"success\":[");
		t->in_ops = 1;
	}
	xp_sb_puts(&t->b, t->nops++ ? "," : "");
}

void xp_etcd_txn_put(struct xp_etcd_txn *t, const char *key, size_t klen, const void *val,
		     size_t vlen, int64_t lease)
{
	op_start(t);
	xp_sb_puts(&t->b, "{\"requestPut\":{");
	put_bytes(&t->b, "key", key, klen);
	xp_sb_putc(&t->b, ',');
	put_bytes(&t->b, "value", val, vlen);
	if (lease)
		xp_sb_printf(&t->b, ",\"lease\":\"%" PRId64 "\"", lease);
	xp_sb_puts(&t->b, "}}");
	t->bytes += klen + vlen;
}

void xp_etcd_txn_delete(struct xp_etcd_txn *t, const char *key, size_t klen, const char *end,
			size_t elen)
{
	op_start(t);
	xp_sb_puts(&t->b, "{\"requestDeleteRange\":{");
	put_bytes(&t->b, "key", key, klen);
	if (end) {
		xp_sb_putc(&t->b, ',');
		put_bytes(&t->b, "range_end", end, elen);
	}
	xp_sb_puts(&t->b, "}}");
	t->bytes += klen + elen;
}

void xp_etcd_txn_free(struct xp_etcd_txn *t)
{
	xp_sb_free(&t->b);
	memset(t, 0, sizeof(*t));
}

int xp_etcd_txn_run(struct xp_etcd *e, struct xp_etcd_txn *t, long timeout_ms, int *ok,
		    int64_t *rev, struct xp_err *err)
{
	json_t *o = NULL;
	if (!t->closed) {
		if (!t->in_ops)
			xp_sb_puts(&t->b, "],\"success\":[");
		xp_sb_puts(&t->b, "]}");
		t->closed = 1;
	}
	int rc = xp_etcd_post(e, "/v3/kv/txn", t->b.s, t->b.len, timeout_ms, (void **)&o, err);
	if (rc < 0)
		return rc;
	*ok = json_is_true(json_object_get(o, "succeeded"));
	if (rev)
		*rev = int_field(json_object_get(o, "header"), "revision");
	json_decref(o);
	return 0;
}

int xp_etcd_grant(struct xp_etcd *e, long ttl_s, int64_t *id, struct xp_err *err)
{
	char body[64];
	json_t *o = NULL;
	int n = snprintf(body, sizeof(body), "{\"TTL\":\"%ld\"}", ttl_s);
	int rc = xp_etcd_post(e, "/v3/lease/grant", body, (size_t)n, 5000, (void **)&o, err);
	if (rc < 0)
		return rc;
	*id = int_field(o, "ID");
	const char *msg = json_string_value(json_object_get(o, "error"));
	json_decref(o);
	if (!*id)
		return xp_errf(err, XP_EIO, "etcd %s: no lease granted: %s", e->url,
			       msg ? msg : "no ID in the reply");
	return 0;
}

int xp_etcd_keepalive(struct xp_etcd *e, int64_t id, long timeout_ms, int64_t *ttl,
		      struct xp_err *err)
{
	char body[64];
	json_t *o = NULL;
	int n = snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", id);
	/* timeout_ms bounds the whole renewal, every endpoint tried included (xp_etcd_post): the
	 * leader judges its lease by when the last one answered */
	int rc = xp_etcd_post(e, "/v3/lease/keepalive", body, (size_t)n, timeout_ms, (void **)&o,
			      err);
	if (rc < 0)
		return rc;
	/* a stream of {"result": ...}; one request, one result - or {"error": ...} */
	json_t *res = json_object_get(o, "result");
	if (!json_is_object(res)) {
		json_t *e_ = json_object_get(o, "error");
		const char *m = json_string_value(json_object_get(e_, "message"));
		if (!m)
			m = json_string_value(e_);
		rc = xp_errf(err, XP_EUNAVAIL, "etcd %s: keepalive: %s", e->url,
			     m ? m : "no result in the reply");
		json_decref(o);
		return rc;
	}
	*ttl = int_field(res, "TTL");
	json_decref(o);
	return 0;
}

int xp_etcd_revoke(struct xp_etcd *e, int64_t id, struct xp_err *err)
{
	char body[64];
	json_t *o = NULL;
	int n = snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", id);
	int rc = xp_etcd_post(e, "/v3/lease/revoke", body, (size_t)n, 2000, (void **)&o, err);
	json_decref(o);
	return rc;
}

int xp_etcd_compact(struct xp_etcd *e, int64_t rev, struct xp_err *err)
{
	char body[64];
	json_t *o = NULL;
	int n = snprintf(body, sizeof(body), "{\"revision\":\"%" PRId64 "\"}", rev);
	int rc = xp_etcd_post(e, "/v3/kv/compaction", body, (size_t)n, 10000, (void **)&o, err);
	json_decref(o);
	return rc;
}

size_t xp_etcd_prefix_end(const char *p, size_t n, char *out)
{
	memmove(out, p, n); /* out may be p */
	out[n - 1] = (char)(out[n - 1] + 1);
	out[n] = '\0';
	return n;
}
