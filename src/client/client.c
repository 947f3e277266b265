/*
 * client: requests to the controller (see client.h).
 *
 * One transport: http1.c, our own HTTP/1.1 client on a kept-alive TCP
 * connection, with TLS (tls.c, GnuTLS opened on first use) for https://.
 * A CLI verb is one short process; linking libcurl cost each of them its
 * 33-library dependency tree, most of a CLI call's time (http1.c says
 * more).
 *
 * Notes on the non-obvious:
 * - https:// verifies the controller's certificate against the CA file of
 *   xp_client_set_ca(), else the system's CAs. The CAs are loaded at the
 *   first request, so a client that never sends one costs nothing.
 * - A POST without a body (cancel) is sent with Content-Length: 0 and no
 *   Content-Type.
 * - Replies are bounded (XP_CLIENT_MAX_REPLY): the size comes from the
 *   network, so it is checked before memory grows.
 * - Event streams: the first bytes decide, from the status and the
 *   Content-Type, whether the body is events, an API error to decode, or a
 *   200 from a controller that does not stream (XP_EUNSUPP).
 */
#include "client.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../lib/xalloc.h"
#include "http1.h"
#include "tls.h"

struct xp_client {
	struct xp_http1 *h1; /* NULL until the first request of an https:// client */
	char *prefix;	     /* path prefix of the base address ("" mostly) */
	int https;
	char *ca_file;		    /* https://: xp_client_set_ca()'s; NULL: the system's CAs */
	struct xp_tls_trust *trust; /* https://: loaded with h1 */
	char *base;		    /* "http://host:port[/prefix]", no trailing '/' */
	char *auth;		    /* "Authorization: Bearer ..." or NULL */
	long timeout_ms;
	const atomic_int *abort; /* see xp_client_set_abort() */
	int repeat_safe;	 /* see xp_client_set_repeat_safe() */
	/* Several controllers ("A,B,C": HA, docs/design/ha.md): this client only routes, to
	 * peer[cur], moving on to the next when one cannot be connected to, or answers 307 with
	 * no body (a follower: the leader is another). Either way the request was not done
	 * there, so sending it elsewhere is safe. */
	struct xp_client **peer;
	size_t npeer, cur;
	/* HA: the highest leader epoch (X-Xpool-Epoch) seen; a reply from a lower one comes from
	 * a leader that has been replaced (paused, cut off) and is not used */
	long long max_epoch;
	int stale; /* the last reply was such a one */
	/* HA: a client of one address that a follower answered with a bodyless 307 sends the
	 * request on to the leader it names (X-Xpool-Leader), with this client of that address
	 * (same token, CA, timeout), made on first use and again when the leader changes */
	struct xp_client *leader;
	int via_leader; /* the last request was answered there */
	int no_follow;	/* this is such a client: a 307 it gets stands (no chains) */
};

/* ---- addresses ---- */

static int bad_addr(struct xp_err *err, const char *addr, const char *why)
{
	return xp_errf(err, XP_EINVAL, "bad controller address '%s': %s (expected HOST:PORT or %s)",
		       addr, why, "http://HOST:PORT");
}

/* Check that the authority (host[:port]) of an address is sane and say
 * whether it names a port. */
static int check_authority(const char *addr, const char *a, size_t n, int *has_port,
			   struct xp_err *err)
{
	const char *host_end = a + n, *port = NULL;

	if (n == 0)
		return bad_addr(err, addr, "no host");
	if (a[0] == '[') {
		const char *rb = memchr(a, ']', n);
		if (!rb || rb == a + 1)
			return bad_addr(err, addr, "unterminated IPv6 address");
		if (rb + 1 < a + n) {
			if (rb[1] != ':')
				return bad_addr(err, addr, "junk after the IPv6 address");
			port = rb + 2;
		}
		host_end = rb + 1;
	} else {
		const char *colon = memchr(a, ':', n);
		if (colon) {
			port = colon + 1;
			host_end = colon;
		}
		if (host_end == a)
			return bad_addr(err, addr, "no host");
	}
	*has_port = port != NULL;
	if (port) {
		size_t pl = (size_t)(a + n - port);
		long v = 0;
		if (pl == 0 || pl > 5)
			return bad_addr(err, addr, "bad port");
		for (size_t i = 0; i < pl; i++) {
			if (!isdigit((unsigned char)port[i]))
				return bad_addr(err, addr, "bad port");
			v = v * 10 + (port[i] - '0');
		}
		if (v < 1 || v > 65535)
			return bad_addr(err, addr, "port out of range 1..65535");
	}
	return 0;
}

/* "host:port" -> "http://host:port"; "host" -> "http://host:7700";
 * "http(s)://..." kept; a trailing '/' dropped. */
static int normalise_one(const char *addr, char **out, struct xp_err *err)
{
	struct xp_sb b = { 0 };
	const char *rest = addr, *sep;
	size_t alen;
	int has_port, rc;

	if (!addr || !*addr)
		return xp_errf(err, XP_EINVAL, "empty controller address");
	for (const char *p = addr; *p; p++)
		if (!isgraph((unsigned char)*p) || *p == '?' || *p == '#')
			return bad_addr(err, addr, "unexpected character");
	sep = strstr(addr, "://");
	if (sep) {
		size_t sl = (size_t)(sep - addr);
		if (!((sl == 4 && strncasecmp(addr, "http", 4) == 0) ||
		      (sl == 5 && strncasecmp(addr, "https", 5) == 0)))
			return bad_addr(err, addr, "only http:// and https:// are spoken");
		rest = sep + 3;
	}
	alen = strcspn(rest, "/");
	if ((rc = check_authority(addr, rest, alen, &has_port, err)) < 0)
		return rc;
	if (sep) {
		xp_sb_puts(&b, addr);
	} else {
		xp_sb_puts(&b, "http://");
		xp_sb_putn(&b, rest, alen);
		if (!has_port)
			xp_sb_puts(&b, ":" XP_CLIENT_DEFAULT_PORT);
		xp_sb_puts(&b, rest + alen);
	}
	while (b.len > 0 && b.s[b.len - 1] == '/')
		b.s[--b.len] = '\0';
	*out = xp_sb_steal(&b);
	return 0;
}

/* ---- the client ---- */

/* "http(s)://host:port/prefix" -> an http1 transport and the prefix */
static void open_h1(struct xp_client *c)
{
	const char *a = c->base + (c->https ? 8 : 7), *end = a + strcspn(a, "/"), *port = NULL,
		   *hs = a, *he;
	if (*a == '[') {
		hs = a + 1;
		he = memchr(a, ']', (size_t)(end - a));
		port = he && he + 1 < end && he[1] == ':' ? he + 2 : NULL;
	} else {
		he = memchr(a, ':', (size_t)(end - a));
		port = he ? he + 1 : NULL;
		if (!he)
			he = end;
	}
	char *host = xstrndup(hs, (size_t)(he - hs));
	char *pstr = port ? xstrndup(port, (size_t)(end - port)) : xstrdup(c->https ? "443" : "80");
	c->h1 = xp_http1_create(host, pstr);
	if (c->trust)
		xp_http1_set_tls(c->h1, c->trust);
	free(c->prefix);
	c->prefix = xstrdup(end);
	free(host);
	free(pstr);
}

int xp_client_normalise_addr(const char *addr, char **out, struct xp_err *err)
{
	if (!addr || !strchr(addr, ','))
		return normalise_one(addr, out, err);
	struct xp_sb b = { 0 };
	for (const char *p = addr;;) { /* several controllers: each normalised */
		size_t n = strcspn(p, ",");
		char *one = xstrndup(p, n), *norm = NULL;
		int rc = normalise_one(one, &norm, err);
		free(one);
		if (rc < 0) {
			xp_sb_free(&b);
			return rc;
		}
		xp_sb_printf(&b, "%s%s", b.len ? "," : "", norm);
		free(norm);
		if (!p[n])
			break;
		p += n + 1;
	}
	*out = xp_sb_steal(&b);
	return 0;
}

static struct xp_client *create_one(const char *addr, const char *token, struct xp_err *err);

/* "A,B,...": a router over one client per address. */
static struct xp_client *create_peers(const char *addr, const char *token, struct xp_err *err)
{
	struct xp_client *c = XNEW(struct xp_client);
	c->base = xstrdup(addr);
	c->timeout_ms = XP_CLIENT_DEFAULT_TIMEOUT_MS;
	for (const char *p = addr; *p;) {
		size_t n = strcspn(p, ",");
		char *one = xstrndup(p, n);
		struct xp_client *pc = n ? create_one(one, token, err) : NULL;
		if (!n)
			xp_errf(err, XP_EINVAL, "bad controller address '%s': an empty item", addr);
		free(one);
		if (!pc) {
			xp_client_destroy(c);
			return NULL;
		}
		c->peer = xreallocarray(c->peer, c->npeer + 1, sizeof(*c->peer));
		c->peer[c->npeer++] = pc;
		p += n + (p[n] == ',');
	}
	return c;
}

struct xp_client *xp_client_create(const char *addr, const char *token, struct xp_err *err)
{
	if (addr && strchr(addr, ','))
		return create_peers(addr, token, err);
	return create_one(addr, token, err);
}

static struct xp_client *create_one(const char *addr, const char *token, struct xp_err *err)
{
	struct xp_client *c;
	char *base = NULL;

	if (xp_client_normalise_addr(addr, &base, err) < 0)
		return NULL;
	if (token) {
		if (!*token) {
			free(base);
			xp_errf(err, XP_EINVAL, "empty API token");
			return NULL;
		}
		for (const char *p = token; *p; p++)
			if (!isgraph((unsigned char)*p)) {
				free(base);
				xp_errf(err, XP_EINVAL,
					"the API token has a space or control character");
				return NULL;
			}
	}
	c = XNEW(struct xp_client);
	c->base = base;
	c->timeout_ms = XP_CLIENT_DEFAULT_TIMEOUT_MS;
	c->https = strncasecmp(base, "https://", 8) == 0;
	if (!c->https)
		open_h1(c);
	if (token) {
		struct xp_sb a = { 0 };
		xp_sb_printf(&a, "Authorization: Bearer %s", token);
		c->auth = xp_sb_steal(&a);
	}
	return c;
}

struct xp_client *xp_client_create_cfg(const struct xp_client_config *cfg, struct xp_err *err)
{
	struct xp_client *c = xp_client_create(cfg->addr, cfg->token, err);
	if (c && xp_client_set_ca(c, cfg->ca, err) < 0) {
		xp_client_destroy(c);
		return NULL;
	}
	return c;
}

void xp_client_destroy(struct xp_client *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->npeer; i++)
		xp_client_destroy(c->peer[i]);
	free(c->peer);
	xp_client_destroy(c->leader);
	xp_http1_destroy(c->h1);
	xp_tls_trust_free(c->trust);
	free(c->ca_file);
	free(c->prefix);
	free(c->base);
	free(c->auth);
	free(c);
}

void xp_client_set_timeout(struct xp_client *c, long ms)
{
	c->timeout_ms = ms < 0 ? 0 : ms;
	for (size_t i = 0; i < c->npeer; i++)
		xp_client_set_timeout(c->peer[i], ms);
}

int xp_client_set_repeat_safe(struct xp_client *c, int on)
{
	int was = c->repeat_safe;
	c->repeat_safe = on;
	for (size_t i = 0; i < c->npeer; i++)
		xp_client_set_repeat_safe(c->peer[i], on);
	return was;
}

void xp_client_set_abort(struct xp_client *c, const atomic_int *flag)
{
	c->abort = flag;
	for (size_t i = 0; i < c->npeer; i++)
		xp_client_set_abort(c->peer[i], flag);
}

const char *xp_client_base(const struct xp_client *c)
{
	if (c->npeer)
		return xp_client_base(c->peer[c->cur]);
	return c->base;
}

void xp_client_local_ip(const struct xp_client *c, char *buf, size_t len)
{
	buf[0] = '\0';
	if (c->npeer)
		xp_client_local_ip(c->peer[c->cur], buf, len);
	else if (c->h1)
		xp_http1_local_ip(c->h1, buf, len);
}

int xp_client_set_ca(struct xp_client *c, const char *ca_file, struct xp_err *err)
{
	struct xp_tls_trust *t = NULL;
	for (size_t i = 0; i < c->npeer; i++)
		if (xp_client_set_ca(c->peer[i], ca_file, err) < 0)
			return err->code;
	if (!c->https || !ca_file)
		return 0;
	int rc = xp_tls_trust_load(ca_file, &t, err);
	if (rc < 0)
		return rc;
	xp_http1_destroy(c->h1); /* a connection verified against other CAs */
	c->h1 = NULL;
	xp_tls_trust_free(c->trust);
	c->trust = t;
	free(c->ca_file);
	c->ca_file = xstrdup(ca_file);
	open_h1(c);
	return 0;
}

/* ---- one transfer ---- */

struct sink {
	struct xp_sb body;
	int too_big;
};

static size_t sink_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct sink *s = ud;
	size_t n = size * nmemb;
	if (s->body.len + n > XP_CLIENT_MAX_REPLY) {
		s->too_big = 1;
		return 0;
	}
	xp_sb_putn(&s->body, ptr, n);
	return n;
}

struct transfer {
	const char *method, *path;
	const char *const *headers; /* extra, NULL-ended, may be NULL */
	const char *content_type;
	const char *body;
	size_t len;
	long timeout_ms;
	size_t (*write)(char *, size_t, size_t, void *);
	void *ud;
};

/* The request's headers: auth, the caller's, the
 * body's type ("Name:" alone: leave it out) */
static struct xp_sb headers_of(const struct xp_client *c, const struct transfer *t,
			       const char ***out)
{
	struct xp_sb ct = { 0 };
	size_t n = 0;
	for (const char *const *x = t->headers; x && *x; x++)
		n++;
	const char **v = XNEWV(const char *, n + 4);
	n = 0;
	v[n++] = "Expect:";
	if (c->auth)
		v[n++] = c->auth;
	for (const char *const *x = t->headers; x && *x; x++)
		v[n++] = *x;
	if (t->body)
		xp_sb_printf(&ct, "Content-Type: %s",
			     t->content_type ? t->content_type : "application/json");
	else
		xp_sb_puts(&ct, "Content-Type:");
	v[n++] = ct.s;
	v[n] = NULL;
	*out = v;
	return ct;
}

static int perform_h1(struct xp_client *c, const struct transfer *t, long *status, int *aborted,
		      struct xp_err *err)
{
	const char **hdrs;
	struct xp_sb path = { 0 }, ct = headers_of(c, t, &hdrs);
	xp_sb_puts(&path, c->prefix);
	xp_sb_puts(&path, t->path);
	struct xp_http1_req rq = { t->method,
				   path.s,
				   hdrs,
				   t->body,
				   t->len,
				   t->timeout_ms,
				   XP_CLIENT_CONNECT_TIMEOUT_MS,
				   t->write,
				   t->ud,
				   c->abort,
				   c->repeat_safe };
	int rc = xp_http1_perform(c->h1, &rq, status, aborted, err);
	free(hdrs);
	xp_sb_free(&ct);
	xp_sb_free(&path);
	return rc;
}

static int perform(struct xp_client *c, const struct transfer *t, long *status, int *aborted,
		   struct xp_err *err);

/* A follower's bodyless 307 (nothing was done there): the request goes to the leader it
 * names, once - over the same scheme only (no https:// answered on to http://), and not
 * when the leader is this address (a controller taking the lead: the 307 stands). */
static int to_leader(struct xp_client *c, const struct transfer *t, long *status, int *aborted,
		     struct xp_err *err)
{
	const char *url = xp_http1_leader(c->h1);
	size_t sl = c->https ? 8 : 7;
	if (c->no_follow || strncasecmp(url, c->https ? "https://" : "http://", sl) != 0 ||
	    !strcmp(url, c->base))
		return 0;
	if (c->leader && strcmp(c->leader->base, url) != 0) {
		xp_client_destroy(c->leader);
		c->leader = NULL;
	}
	if (!c->leader) {
		struct xp_err e2 = { 0 };
		struct xp_client *l = create_one(url, NULL, &e2);
		if (!l || (c->ca_file && xp_client_set_ca(l, c->ca_file, &e2) < 0)) {
			xp_client_destroy(l);
			return 0; /* the 307 stands */
		}
		l->auth = c->auth ? xstrdup(c->auth) : NULL;
		l->timeout_ms = c->timeout_ms;
		l->abort = c->abort;
		l->repeat_safe = c->repeat_safe;
		l->no_follow = 1;
		c->leader = l;
	}
	struct xp_client *l = c->leader;
	if (l->max_epoch < c->max_epoch)
		l->max_epoch = c->max_epoch;
	int rc = perform(l, t, status, aborted, err);
	c->via_leader = 1;
	if (l->max_epoch > c->max_epoch)
		c->max_epoch = l->max_epoch;
	c->stale = l->stale;
	return rc;
}

/* Run one transfer; the status goes to *status. Transport failures become
 * XP_EUNAVAIL "cannot reach ..." unless the write callback stopped it
 * (*aborted: then the caller knows why and returns its own code). */
static int perform(struct xp_client *c, const struct transfer *t, long *status, int *aborted,
		   struct xp_err *err)
{
	*aborted = 0;
	*status = 0;
	if (!t->path || t->path[0] != '/')
		return xp_errf(err, XP_EINVAL, "request path must start with '/'");
	if (c->npeer) {
		int rc = 0;
		size_t first = c->cur; /* c->cur moves as the loop goes */
		for (size_t k = 0; k < c->npeer; k++) {
			size_t i = (first + k) % c->npeer;
			struct xp_client *p = c->peer[i];
			if (p->max_epoch < c->max_epoch)
				p->max_epoch = c->max_epoch;
			rc = perform(p, t, status, aborted, err);
			if (p->max_epoch > c->max_epoch)
				c->max_epoch = p->max_epoch;
			c->cur = i;
			if ((rc == 0 && *status == 307) || p->stale) /* another leads */
				continue;
			if (rc != XP_EUNAVAIL || *aborted || !err || !strstr(err->text, ": connect: "))
				break;
		}
		return rc;
	}
	if (!c->h1) { /* https://, first request: the system's CAs */
		int rc = xp_tls_trust_load(NULL, &c->trust, err);
		if (rc < 0)
			return rc;
		open_h1(c);
	}
	c->via_leader = 0;
	int rc = perform_h1(c, t, status, aborted, err);
	if (rc == 0 && *status == 307 && xp_http1_leader(c->h1)[0])
		return to_leader(c, t, status, aborted, err);
	long long epoch = xp_http1_epoch(c->h1);
	c->stale = rc == 0 && epoch > 0 && epoch < c->max_epoch;
	if (c->stale)
		return xp_errf(err, XP_EUNAVAIL,
			       "%s answered as the leader of epoch %lld, but epoch %lld leads now: "
			       "a replaced leader's answer is not used",
			       c->base, epoch, c->max_epoch);
	if (rc == 0 && epoch > c->max_epoch)
		c->max_epoch = epoch;
	return rc;
}

long long xp_client_epoch(const struct xp_client *c)
{
	return c->max_epoch;
}

/* The status and Content-Type of the reply being received */
static void reply_head(struct xp_client *c, long *status, const char **ctype)
{
	*status = 0;
	*ctype = NULL;
	if (c->npeer)
		reply_head(c->peer[c->cur], status, ctype);
	else if (c->via_leader)
		reply_head(c->leader, status, ctype);
	else if (c->h1)
		xp_http1_reply(c->h1, status, ctype);
}

int xp_client_request(struct xp_client *c, const char *method, const char *path,
		      const char *content_type, const char *body, size_t len, long *status,
		      char **resp, size_t *resp_len, struct xp_err *err)
{
	struct sink s = { { 0 }, 0 };
	struct transfer t = { method,	     path,	 NULL, content_type, body, len,
			      c->timeout_ms, sink_write, &s };
	int aborted, rc;

	rc = perform(c, &t, status, &aborted, err);
	if (rc == 0 && aborted)
		rc = xp_errf(err, XP_ETOOBIG, "the controller's reply is larger than %u MiB",
			     XP_CLIENT_MAX_REPLY >> 20);
	if (rc < 0) {
		xp_sb_free(&s.body);
		return rc;
	}
	*resp_len = s.body.len;
	*resp = xp_sb_steal(&s.body);
	return 0;
}

int xp_client_call(struct xp_client *c, const char *method, const char *path,
		   const char *const *headers, const char *content_type, const char *body,
		   size_t len, char **resp, size_t *resp_len, struct xp_err *err)
{
	struct sink s = { { 0 }, 0 };
	struct transfer t = { method,	     path,	 headers, content_type, body, len,
			      c->timeout_ms, sink_write, &s };
	long status;
	int aborted, rc;

	rc = perform(c, &t, &status, &aborted, err);
	if (rc == 0 && aborted)
		rc = xp_errf(err, XP_ETOOBIG, "the controller's reply is larger than %u MiB",
			     XP_CLIENT_MAX_REPLY >> 20);
	if (rc == 0 && (status < 200 || status > 299))
		rc = xp_client_decode_error(status, s.body.s ? s.body.s : "", s.body.len, NULL,
					    err);
	if (rc < 0) {
		xp_sb_free(&s.body);
		return rc;
	}
	*resp_len = s.body.len;
	*resp = xp_sb_steal(&s.body);
	return (int)status;
}

int xp_client_json(struct xp_client *c, const char *method, const char *path, json_t *body,
		   json_t **reply, struct xp_err *err)
{
	char *text = NULL, *resp;
	size_t len = 0, rlen;
	json_error_t je;
	int rc;

	*reply = NULL;
	if (body) {
		text = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
		if (!text)
			return xp_errf(err, XP_EINTERNAL, "cannot encode the request as JSON");
		len = strlen(text);
	}
	static const char *const accept[] = { "Accept: application/json", NULL };
	rc = xp_client_call(c, method, path, accept, NULL, text, len, &resp, &rlen, err);
	free(text);
	if (rc < 0)
		return rc;
	if (rlen == 0) {
		*reply = json_null();
	} else {
		*reply = json_loadb(resp, rlen, JSON_DECODE_ANY, &je);
		if (!*reply)
			rc = xp_errf(err, XP_EIO,
				     "the controller's reply to %s %s is not JSON: %s (line %d)",
				     method, path, je.text, je.line);
	}
	free(resp);
	return rc;
}

/* ---- API errors ---- */

int xp_client_status_code(long status)
{
	switch (status) {
	case 400:
		return XP_EINVAL;
	case 401:
		return XP_EAUTH;
	case 403:
		return XP_EPERM;
	case 404:
		return XP_ENOENT;
	case 409:
		return XP_ESTATE;
	case 413:
		return XP_ETOOBIG;
	case 501:
		return XP_EUNSUPP;
	case 502:
	case 503:
	case 504:
		return XP_EUNAVAIL;
	}
	if (status >= 400 && status < 500)
		return XP_EINVAL;
	if (status >= 500 && status < 600)
		return XP_EINTERNAL;
	return XP_EIO;
}

/* The xpool code named name ("ENOENT"), or 0. */
static int code_by_name(const char *name)
{
#define XP_ERR_BYNAME(n, c, msg, http)                                                             \
	if (strcmp(name, #n) == 0)                                                                 \
		return c;
	XP_ERR_MAP(XP_ERR_BYNAME)
#undef XP_ERR_BYNAME
	return 0;
}

int xp_client_decode_error(long status, const char *body, size_t len, char **field,
			   struct xp_err *err)
{
	int code = xp_client_status_code(status);
	json_t *root = len ? json_loadb(body, len, 0, NULL) : NULL;
	json_t *e = json_object_get(root, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));
	const char *name = json_string_value(json_object_get(e, "code"));
	const char *f = json_string_value(json_object_get(e, "field"));

	if (field)
		*field = f ? xstrdup(f) : NULL;
	if (name && code_by_name(name))
		code = code_by_name(name);
	if (msg && *msg) {
		xp_errf(err, code, "%s", msg);
	} else if (json_is_object(e)) {
		xp_errf(err, code, "%s (HTTP %ld)", xp_strerror(code), status);
	} else {
		/* not our error body (a proxy's page, a plain-text reply) */
		size_t n = 0;
		while (n < len && n < 200 && body[n] != '\n' && body[n] != '\r')
			n++;
		while (n > 0 && isspace((unsigned char)body[n - 1]))
			n--;
		if (n)
			xp_errf(err, code, "HTTP %ld: %.*s", status, (int)n, body);
		else
			xp_errf(err, code, "HTTP %ld: %s", status, xp_strerror(code));
	}
	json_decref(root);
	return code;
}

/* ---- paths ---- */

void xp_client_escape(struct xp_sb *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			xp_sb_putc(b, (char)*p);
		} else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
			xp_sb_putn(b, e, 3);
		}
	}
}

void xp_client_query(struct xp_sb *b, const char *key, const char *value)
{
	xp_sb_putc(b, b->s && strchr(b->s, '?') ? '&' : '?');
	xp_client_escape(b, key);
	xp_sb_putc(b, '=');
	xp_client_escape(b, value);
}

/* ---- server-sent events ---- */

#define SSE_MAX_LINE XP_CLIENT_MAX_REPLY

void xp_sse_init(struct xp_sse_parser *p, xp_sse_fn fn, void *ud)
{
	memset(p, 0, sizeof(*p));
	p->fn = fn;
	p->ud = ud;
}

void xp_sse_free(struct xp_sse_parser *p)
{
	xp_sb_free(&p->line);
	xp_sb_free(&p->data);
	xp_sb_free(&p->type);
	xp_sb_free(&p->id);
}

/* One complete line (without its end). Field rules from the HTML living
 * standard: ":" starts a comment, "name: value" drops one space, a blank
 * line dispatches the event; "id" persists across events. */
static int sse_line(struct xp_sse_parser *p)
{
	const char *l = p->line.s ? p->line.s : "";
	size_t n = p->line.len;
	int rc = 0;

	if (n == 0) {
		if (p->has_data) {
			struct xp_sse_event ev = {
				p->id.s ? p->id.s : "",
				p->type.len ? p->type.s : "message",
				p->data.s,
				p->data.len,
			};
			rc = p->fn(p->ud, &ev);
		}
		xp_sb_reset(&p->data);
		xp_sb_reset(&p->type);
		p->has_data = 0;
		return rc;
	}
	if (l[0] == ':')
		goto done;
	const char *colon = memchr(l, ':', n);
	size_t fl = colon ? (size_t)(colon - l) : n;
	const char *v = colon ? colon + 1 : l + n;
	if (colon && *v == ' ')
		v++;
	size_t vl = (size_t)(l + n - v);
	if (fl == 4 && memcmp(l, "data", 4) == 0) {
		if (p->has_data)
			xp_sb_putc(&p->data, '\n');
		xp_sb_putn(&p->data, v, vl);
		p->has_data = 1;
	} else if (fl == 5 && memcmp(l, "event", 5) == 0) {
		xp_sb_reset(&p->type);
		xp_sb_putn(&p->type, v, vl);
	} else if (fl == 2 && memcmp(l, "id", 2) == 0 && !memchr(v, '\0', vl) &&
		   vl < XP_SSE_ID_MAX) {
		xp_sb_reset(&p->id);
		xp_sb_putn(&p->id, v, vl);
	}
done:
	xp_sb_reset(&p->line);
	return rc;
}

int xp_sse_feed(struct xp_sse_parser *p, const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char ch = buf[i];
		int rc;
		if (p->saw_cr) {
			p->saw_cr = 0;
			if (ch == '\n')
				continue;
		}
		if (ch == '\r' || ch == '\n') {
			p->saw_cr = ch == '\r';
			if ((rc = sse_line(p)) != 0)
				return rc;
			continue;
		}
		if (p->line.len + p->data.len >= SSE_MAX_LINE)
			return XP_ETOOBIG;
		xp_sb_putc(&p->line, ch);
	}
	return 0;
}

enum stream_mode { SM_UNKNOWN, SM_EVENTS, SM_ERROR, SM_NOT_STREAM };

struct stream {
	struct xp_client *c;
	enum stream_mode mode;
	struct xp_sse_parser parser;
	struct sink errbody;
	char *last_id;
	xp_sse_fn fn;
	void *ud;
	int stop; /* fn's non-zero return, or a parser error */
	long status;
};

static int stream_event(void *ud, const struct xp_sse_event *ev)
{
	struct stream *s = ud;
	if (ev->id[0])
		snprintf(s->last_id, XP_SSE_ID_MAX, "%s", ev->id);
	return s->fn(s->ud, ev);
}

static size_t stream_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct stream *s = ud;
	size_t n = size * nmemb;

	if (s->mode == SM_UNKNOWN) {
		const char *ct = NULL;
		reply_head(s->c, &s->status, &ct);
		if (s->status < 200 || s->status > 299)
			s->mode = SM_ERROR;
		else if (ct && strncasecmp(ct, "text/event-stream", 17) == 0)
			s->mode = SM_EVENTS;
		else
			s->mode = SM_NOT_STREAM;
	}
	switch (s->mode) {
	case SM_EVENTS:
		s->stop = xp_sse_feed(&s->parser, ptr, n);
		return s->stop ? 0 : n;
	case SM_ERROR:
		return sink_write(ptr, size, nmemb, &s->errbody);
	default:
		return 0;
	}
}

int xp_client_stream(struct xp_client *c, const char *path, char *last_id, xp_sse_fn fn, void *ud,
		     struct xp_err *err)
{
	struct stream s = { .c = c, .mode = SM_UNKNOWN, .last_id = last_id, .fn = fn, .ud = ud };
	struct xp_sb idh = { 0 };
	const char *headers[3] = { "Accept: text/event-stream", NULL, NULL };
	struct transfer t = { "GET", path, headers, NULL, NULL, 0, 0, stream_write, &s };
	long status;
	int aborted, rc;

	if (last_id[0]) {
		xp_sb_printf(&idh, "Last-Event-ID: %s", last_id);
		headers[1] = idh.s;
	}
	xp_sse_init(&s.parser, stream_event, &s);
	rc = perform(c, &t, &status, &aborted, err);
	if (rc < 0 && s.mode == SM_EVENTS) {
		char why[sizeof(err->text)];
		snprintf(why, sizeof(why), "%s", err->text);
		rc = xp_errf(err, XP_EIO, "the event stream from %s broke: %s", c->base, why);
	}
	if (rc == 0 && s.mode == SM_UNKNOWN && (status < 200 || status > 299))
		s.mode = SM_ERROR; /* an error reply with an empty body */
	if (rc == 0) {
		if (s.mode == SM_ERROR)
			rc = s.errbody.too_big
				     ? xp_errf(err, XP_ETOOBIG,
					       "the controller's error reply is "
					       "too large")
				     : xp_client_decode_error(
					       status, s.errbody.body.s ? s.errbody.body.s : "",
					       s.errbody.body.len, NULL, err);
		else if (s.mode == SM_NOT_STREAM || s.mode == SM_UNKNOWN)
			rc = xp_errf(err, XP_EUNSUPP,
				     "the controller at %s did not answer with an event stream",
				     c->base);
		else if (aborted && s.stop == XP_ETOOBIG)
			rc = xp_errf(err, XP_ETOOBIG, "an event is larger than %u MiB",
				     XP_CLIENT_MAX_REPLY >> 20);
		else if (aborted)
			rc = s.stop;
	}
	xp_sse_free(&s.parser);
	xp_sb_free(&s.errbody.body);
	xp_sb_free(&idh);
	return rc;
}
