/*
 * http1: the client's own HTTP/1.1 transport, for http:// and https://
 * controllers (TLS: tls.c, GnuTLS, on the same non-blocking socket).
 *
 * Why not libcurl: a CLI verb is one short process, and linking libcurl
 * costs every such process its whole dependency tree (33 shared libraries:
 * TLS, Kerberos, LDAP, SSH, IDN ...) - about 4 ms of a 5.6 ms `xpool
 * submit`, measured in docs/results/controller.md. What a client needs of
 * the controller's HTTP/1.1 is small; TLS is opened only for https://.
 *
 * What it does: one TCP connection, kept alive between requests of the same
 * client and re-opened when the server closed it meanwhile: a request that
 * could not be sent goes again (the server never had all of it), and one
 * whose reply never began (EOF or reset before its first byte: the server
 * may have closed the idle connection as the request crossed it) goes again
 * only when it may repeat (see http1.h); requests with Content-Length; replies with Content-Length,
 * chunked transfer encoding, or read to the close; the body handed to the
 * caller as it arrives (event streams). A deadline for the whole request,
 * a bound on connecting, and an abort flag checked at least once a second.
 * Header lines a caller gives as "Name:" with no value are left out (the
 * libcurl convention this module's callers already use).
 */
#include "http1.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../lib/clock.h"
#include "../lib/strbuf.h"
#include "../lib/xalloc.h"
#include "tls.h"

#define HEAD_MAX (64 * 1024) /* status line and headers of a reply */

struct xp_http1 {
	char *host, *port;	    /* host without brackets */
	char *hostport;		    /* for the Host header */
	char *url;		    /* "http(s)://host:port", for messages */
	const char *peer;	    /* what the server is, for messages: "the controller" */
	int fd;			    /* -1: not connected */
	struct xp_tls_trust *trust; /* https://: the CAs (borrowed); NULL: plain */
	struct xp_tls *tls;	    /* the TLS session on fd */
	long status;		    /* of the reply being read (or last read) */
	char ctype[128];	    /* its Content-Type, "" when absent */
	long long epoch;	    /* its X-Xpool-Epoch (HA: the leader's), 0 when absent */
	char leader[256];	    /* its X-Xpool-Leader (a follower's 307), "" when absent */
	char buf[16384];	    /* bytes read but not yet consumed */
	size_t have, off;
};

struct xp_http1 *xp_http1_create(const char *host, const char *port)
{
	struct xp_http1 *h = XNEW(struct xp_http1);
	struct xp_sb hp = { 0 };
	h->host = xstrdup(host);
	h->port = xstrdup(port);
	if (strchr(host, ':'))
		xp_sb_printf(&hp, "[%s]:%s", host, port);
	else
		xp_sb_printf(&hp, "%s:%s", host, port);
	h->hostport = xp_sb_steal(&hp);
	xp_sb_printf(&hp, "http://%s", h->hostport);
	h->url = xp_sb_steal(&hp);
	h->fd = -1;
	h->peer = "the controller";
	return h;
}

void xp_http1_set_peer(struct xp_http1 *h, const char *peer)
{
	h->peer = peer;
}

static void drop(struct xp_http1 *h)
{
	xp_tls_end(h->tls);
	h->tls = NULL;
	if (h->fd >= 0)
		close(h->fd);
	h->fd = -1;
	h->have = h->off = 0;
}

void xp_http1_destroy(struct xp_http1 *h)
{
	if (!h)
		return;
	drop(h);
	free(h->host);
	free(h->port);
	free(h->hostport);
	free(h->url);
	free(h);
}

void xp_http1_set_tls(struct xp_http1 *h, struct xp_tls_trust *trust)
{
	struct xp_sb u = { 0 };
	drop(h);
	h->trust = trust;
	xp_sb_printf(&u, "https://%s", h->hostport);
	free(h->url);
	h->url = xp_sb_steal(&u);
}

/* ---- waiting with a deadline and an abort flag ---- */

struct clockc {
	uint64_t deadline; /* mono ns, 0: none */
	const atomic_int *abort;
};

/* 1 ready, 0 aborted or past the deadline (errno ETIMEDOUT / ECANCELED), -1 error */
static int wait_fd(int fd, short ev, const struct clockc *cc)
{
	for (;;) {
		if (cc->abort && atomic_load(cc->abort)) {
			errno = ECANCELED;
			return 0;
		}
		int ms = 1000;
		if (cc->deadline) {
			uint64_t now = xp_mono_ns();
			if (now >= cc->deadline) {
				errno = ETIMEDOUT;
				return 0;
			}
			uint64_t left = (cc->deadline - now) / 1000000 + 1;
			if (left < (uint64_t)ms)
				ms = (int)left;
		}
		struct pollfd p = { fd, ev, 0 };
		int r = poll(&p, 1, ms);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

static int fail(struct xp_http1 *h, struct xp_err *err, const char *what, int e)
{
	char why[200];
	snprintf(why, sizeof(why), "%s", e == EPROTO && h->tls ? xp_tls_why(h->tls) : strerror(e));
	drop(h);
	if (e == ECANCELED)
		return xp_errf(err, XP_EUNAVAIL, "interrupted");
	if (e == ETIMEDOUT)
		return xp_errf(err, XP_EUNAVAIL, "%s at %s did not answer in time (%s)", h->peer,
			       h->url, what);
	return xp_errf(err, XP_EUNAVAIL, "cannot reach %s at %s: %s: %s", h->peer, h->url, what,
		       why);
}

/* The TLS handshake on the connected h->fd, within cc's deadline */
static int tls_open(struct xp_http1 *h, const struct clockc *cc, struct xp_err *err)
{
	int rc = xp_tls_start(h->trust, h->fd, h->host, &h->tls, err);
	while (rc == 0 && (rc = xp_tls_handshake(h->tls, h->url, err)) > 0) {
		int w = wait_fd(h->fd, rc == XP_TLS_WANT_WRITE ? POLLOUT : POLLIN, cc);
		if (w != 1)
			return fail(h, err, "the TLS handshake", errno);
		rc = 0;
	}
	if (rc < 0)
		drop(h);
	return rc;
}

static int open_conn(struct xp_http1 *h, long connect_ms, const struct clockc *cc,
		     struct xp_err *err)
{
	struct addrinfo hints, *res = NULL, *ai;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	int g = getaddrinfo(h->host, h->port, &hints, &res);
	if (g != 0)
		return xp_errf(err, XP_EUNAVAIL, "cannot reach %s at %s: %s", h->peer, h->url,
			       gai_strerror(g));
	int e = ECONNREFUSED;
	struct clockc cc2 = *cc;
	uint64_t by = xp_mono_ns() + (uint64_t)connect_ms * 1000000;
	if (!cc2.deadline || by < cc2.deadline)
		cc2.deadline = by;
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			e = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS) {
			int w = wait_fd(fd, POLLOUT, &cc2);
			socklen_t sl = sizeof(e);
			if (w == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &sl) == 0 &&
			    e == 0) {
				int one = 1;
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				h->fd = fd;
				h->have = h->off = 0;
				freeaddrinfo(res);
				return h->trust ? tls_open(h, &cc2, err) : 0;
			}
			if (w != 1)
				e = errno;
		} else {
			e = errno;
		}
		close(fd);
		if (e == ECANCELED)
			break;
	}
	freeaddrinfo(res);
	return fail(h, err, "connect", e);
}

/* ---- sending ---- */

static int send_all(struct xp_http1 *h, const char *p, size_t n, const struct clockc *cc)
{
	while (n) {
		ssize_t w = h->tls ? xp_tls_send(h->tls, p, n) : send(h->fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			short ev = h->tls && !xp_tls_want_write(h->tls) ? POLLIN : POLLOUT;
			if (wait_fd(h->fd, ev, cc) != 1)
				return -1;
			continue;
		}
		return -1;
	}
	return 0;
}

/* ---- receiving ---- */

/* Refill the buffer; 1 got bytes, 0 the peer closed, -1 error (errno). */
static int fill(struct xp_http1 *h, const struct clockc *cc)
{
	if (h->off == h->have) {
		h->off = h->have = 0;
	} else if (h->have == sizeof(h->buf)) { /* keep the unconsumed tail */
		memmove(h->buf, h->buf + h->off, h->have - h->off);
		h->have -= h->off;
		h->off = 0;
	}
	for (;;) {
		void *at = h->buf + h->have;
		size_t room = sizeof(h->buf) - h->have;
		ssize_t r = h->tls ? xp_tls_recv(h->tls, at, room) : recv(h->fd, at, room, 0);
		if (r > 0) {
			h->have += (size_t)r;
			return 1;
		}
		if (r == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -1;
		short ev = h->tls && xp_tls_want_write(h->tls) ? POLLOUT : POLLIN;
		if (wait_fd(h->fd, ev, cc) != 1)
			return -1;
	}
}

/* One line ending in CRLF (or LF) into line, at most max bytes. 1 ok, 0
 * closed before it ended, -1 error, -2 too long. */
static int read_line(struct xp_http1 *h, struct xp_sb *line, size_t max, const struct clockc *cc)
{
	xp_sb_reset(line);
	for (;;) {
		char *nl = memchr(h->buf + h->off, '\n', h->have - h->off);
		size_t take = nl ? (size_t)(nl - (h->buf + h->off)) + 1 : h->have - h->off;
		if (line->len + take > max)
			return -2;
		xp_sb_putn(line, h->buf + h->off, take);
		h->off += take;
		if (nl) {
			while (line->len &&
			       (line->s[line->len - 1] == '\n' || line->s[line->len - 1] == '\r'))
				line->s[--line->len] = '\0';
			return 1;
		}
		int r = fill(h, cc);
		if (r <= 0)
			return r;
	}
}

/* does s contain w, ignoring case? (header values: "keep-alive, Close") */
static int ci_contains(const char *s, const char *w)
{
	size_t n = strlen(w);
	for (; *s; s++)
		if (!strncasecmp(s, w, n))
			return 1;
	return 0;
}

struct reply {
	long status;
	int chunked, close;
	long long length; /* -1: unknown */
};

static int parse_head(struct xp_http1 *h, struct reply *rp, const struct clockc *cc, int *nothing,
		      struct xp_err *err)
{
	struct xp_sb line = { 0 };
	size_t total = 0;
	int r = read_line(h, &line, HEAD_MAX, cc);
	int e = r == -2 ? EPROTO : r == 0 ? ECONNRESET : errno;
	/* the connection ended before the reply's first byte: a clean close or
	 * a reset (the server dropped the idle connection) */
	*nothing = line.len == 0 && (r == 0 || (r == -1 && (e == ECONNRESET || e == EPIPE)));
	if (r != 1) {
		xp_sb_free(&line);
		if (r == -2)
			return xp_errf(err, XP_EIO, "the reply from %s has an overlong status line",
				       h->url);
		/* an https:// controller closes a plain request unanswered */
		return fail(h, err,
			    *nothing && !h->trust ? "reading the reply (an https:// controller?)"
						  : "reading the reply",
			    e);
	}
	int minor;
	if (sscanf(line.s, "HTTP/1.%d %ld", &minor, &rp->status) != 2 || rp->status < 100 ||
	    rp->status > 999) {
		xp_errf(err, XP_EIO, "%s did not answer in HTTP/1.x: '%.60s'", h->url, line.s);
		xp_sb_free(&line);
		drop(h);
		return err->code;
	}
	rp->close = minor == 0;
	rp->chunked = 0;
	h->status = rp->status;
	h->ctype[0] = '\0';
	h->epoch = 0;
	h->leader[0] = '\0';
	rp->length = -1;
	for (;;) {
		r = read_line(h, &line, HEAD_MAX, cc);
		if (r != 1) {
			e = r == 0 ? ECONNRESET : errno;
			xp_sb_free(&line);
			if (r == -2)
				return xp_errf(err, XP_EIO,
					       "the reply from %s has an overlong header", h->url);
			return fail(h, err, "reading the reply headers", e);
		}
		total += line.len;
		if (line.len == 0)
			break;
		if (total > HEAD_MAX) {
			xp_sb_free(&line);
			drop(h);
			return xp_errf(err, XP_EIO, "the reply headers from %s are too large",
				       h->url);
		}
		char *colon = strchr(line.s, ':');
		if (!colon)
			continue;
		*colon = '\0';
		char *v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		if (!strcasecmp(line.s, "Content-Length"))
			rp->length = strtoll(v, NULL, 10);
		else if (!strcasecmp(line.s, "Transfer-Encoding") && ci_contains(v, "chunked"))
			rp->chunked = 1;
		else if (!strcasecmp(line.s, "Connection") && ci_contains(v, "close"))
			rp->close = 1;
		else if (!strcasecmp(line.s, "Content-Type"))
			snprintf(h->ctype, sizeof(h->ctype), "%s", v);
		else if (!strcasecmp(line.s, "X-Xpool-Epoch"))
			h->epoch = strtoll(v, NULL, 10);
		else if (!strcasecmp(line.s, "X-Xpool-Leader"))
			snprintf(h->leader, sizeof(h->leader), "%s", v);
	}
	xp_sb_free(&line);
	return 0;
}

/* Hand n bytes to the caller; 0 ok, 1 the caller stopped. */
static int deliver(const struct xp_http1_req *rq, const char *p, size_t n)
{
	if (!n)
		return 0;
	return rq->write((char *)p, 1, n, rq->ud) != n;
}

/* Up to want bytes of body (want < 0: to the close) from the buffer and the
 * socket. 0 done, 1 stopped by the caller, < 0 an error. */
static int body_bytes(struct xp_http1 *h, const struct xp_http1_req *rq, long long want,
		      const struct clockc *cc, struct xp_err *err)
{
	for (;;) {
		size_t avail = h->have - h->off;
		size_t take = want >= 0 && (long long)avail > want ? (size_t)want : avail;
		if (deliver(rq, h->buf + h->off, take))
			return 1;
		h->off += take;
		if (want >= 0) {
			want -= (long long)take;
			if (want == 0)
				return 0;
		}
		int r = fill(h, cc);
		if (r == 0) {
			if (want < 0)
				return 0; /* read to the close: done */
			return fail(h, err, "reading the reply body", ECONNRESET);
		}
		if (r < 0)
			return fail(h, err, "reading the reply body", errno);
	}
}

static int read_body(struct xp_http1 *h, const struct xp_http1_req *rq, const struct reply *rp,
		     int head, const struct clockc *cc, struct xp_err *err)
{
	if (head || rp->status == 204 || rp->status == 304 || rp->status / 100 == 1)
		return 0;
	if (!rp->chunked) /* a length, or everything up to the close */
		return body_bytes(h, rq, rp->length >= 0 ? rp->length : -1, cc, err);
	struct xp_sb line = { 0 };
	for (;;) {
		int r = read_line(h, &line, 1024, cc);
		if (r != 1) {
			xp_sb_free(&line);
			if (r == -2) {
				drop(h);
				return xp_errf(err, XP_EIO, "bad chunk header from %s", h->url);
			}
			return fail(h, err, "reading a chunk", r == 0 ? ECONNRESET : errno);
		}
		char *end;
		long long n = strtoll(line.s, &end, 16);
		if (end == line.s || n < 0) {
			xp_sb_free(&line);
			drop(h);
			return xp_errf(err, XP_EIO, "bad chunk size from %s", h->url);
		}
		if (n == 0) { /* trailers, then the empty line */
			do
				r = read_line(h, &line, HEAD_MAX, cc);
			while (r == 1 && line.len);
			xp_sb_free(&line);
			if (r != 1)
				return fail(h, err, "reading the last chunk",
					    r == 0 ? ECONNRESET : errno);
			return 0;
		}
		int b = body_bytes(h, rq, n, cc, err);
		if (b != 0) {
			xp_sb_free(&line);
			return b;
		}
		r = read_line(h, &line, 2, cc); /* the CRLF after the data */
		if (r != 1 || line.len) {
			xp_sb_free(&line);
			drop(h);
			return xp_errf(err, XP_EIO, "bad chunk framing from %s", h->url);
		}
	}
}

long long xp_http1_epoch(const struct xp_http1 *h)
{
	return h->epoch;
}

const char *xp_http1_leader(const struct xp_http1 *h)
{
	return h->leader;
}

void xp_http1_reply(const struct xp_http1 *h, long *status, const char **content_type)
{
	*status = h->status;
	*content_type = h->ctype[0] ? h->ctype : NULL;
}

/* may the request be sent twice? (see http1.h) */
static int may_repeat(const struct xp_http1_req *rq)
{
	if (rq->repeat_safe || !strcmp(rq->method, "GET") || !strcmp(rq->method, "HEAD"))
		return 1;
	for (const char *const *x = rq->headers; x && *x; x++)
		if (!strncasecmp(*x, "Idempotency-Key:", 16) && (*x)[16 + strspn(*x + 16, " \t")])
			return 1;
	return 0;
}

int xp_http1_perform(struct xp_http1 *h, const struct xp_http1_req *rq, long *status, int *aborted,
		     struct xp_err *err)
{
	struct clockc cc = { 0, rq->abort };
	struct xp_sb req = { 0 };
	int rc = 0;

	*status = 0;
	*aborted = 0;
	h->status = 0;
	h->ctype[0] = '\0';
	h->epoch = 0;
	h->leader[0] = '\0';
	if (rq->timeout_ms > 0)
		cc.deadline = xp_mono_ns() + (uint64_t)rq->timeout_ms * 1000000;
	xp_sb_printf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\n", rq->method, rq->path, h->hostport);
	for (const char *const *x = rq->headers; x && *x; x++) {
		const char *colon = strchr(*x, ':');
		if (!colon || !colon[1 + strspn(colon + 1, " \t")])
			continue; /* "Name:" alone: leave the header out */
		xp_sb_printf(&req, "%s\r\n", *x);
	}
	int has_body = rq->body != NULL || !strcmp(rq->method, "POST") ||
		       !strcmp(rq->method, "PUT") || !strcmp(rq->method, "PATCH");
	if (has_body)
		xp_sb_printf(&req, "Content-Length: %zu\r\n", rq->body ? rq->len : (size_t)0);
	xp_sb_puts(&req, "\r\n");

	for (int attempt = 0; attempt < 2; attempt++) {
		int reused = h->fd >= 0;
		if (!reused && (rc = open_conn(h, rq->connect_ms, &cc, err)) < 0)
			break;
		if (send_all(h, req.s, req.len, &cc) < 0 ||
		    (rq->body && rq->len && send_all(h, rq->body, rq->len, &cc) < 0)) {
			int e = errno;
			if (reused && attempt == 0 && e != ECANCELED && e != ETIMEDOUT) {
				drop(h); /* the server closed the idle connection: once more */
				continue;
			}
			rc = fail(h, err, "sending the request", e);
			break;
		}
		struct reply rp;
		int nothing = 0;
		do /* a 1xx interim reply is followed by the real one */
			rc = parse_head(h, &rp, &cc, &nothing, err);
		while (rc == 0 && rp.status / 100 == 1);
		if (rc < 0) {
			if (reused && nothing && attempt == 0 && may_repeat(rq)) {
				drop(h);
				continue;
			}
			break;
		}
		*status = rp.status;
		int head = !strcmp(rq->method, "HEAD");
		int nobody = head || rp.status == 204 || rp.status == 304;
		int b = read_body(h, rq, &rp, head, &cc, err);
		if (b < 0) {
			rc = b;
			break;
		}
		if (b == 1) { /* the caller stopped reading: the connection is spent */
			*aborted = 1;
			drop(h);
			break;
		}
		if (rp.close || (!nobody && rp.length < 0 && !rp.chunked))
			drop(h); /* it was read to the close, or the server said so */
		break;
	}
	xp_sb_free(&req);
	return rc;
}

void xp_http1_local_ip(const struct xp_http1 *h, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	buf[0] = '\0';
	if (h->fd < 0 || getsockname(h->fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, buf, (socklen_t)len);
	else if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, buf, (socklen_t)len);
}
