/*
 * http: the controller's HTTP/1.1 front on libmicrohttpd - an event loop
 * (epoll) on a small pool of threads, not a thread per connection.
 *
 * A request goes through three steps, each on a pool thread, none of them
 * waiting:
 *
 *   1. admission, once its headers are in and before any body byte is
 *      read: health and the dashboard are answered; everything else needs
 *      the controller ready, a route (404, or 405 with Allow), a token the
 *      owner's copy knows (401), an admin's for admin routes (403), a body
 *      no larger than the route takes (413 from Content-Length, or as soon
 *      as it passes), and one unambiguous framing (two Content-Length
 *      values, or Content-Length with chunked: 400 and the connection
 *      closed - request smuggling). A refusal is answered at once, so an
 *      unauthenticated body is never buffered;
 *   2. the body, up to the route's limit;
 *   3. dispatch: the edge parses the body (http_routes.c), then the
 *      request is handed to the owner thread and its connection suspended;
 *      the owner (or the store thread, once the request's records are
 *      durable) resumes it, and libmicrohttpd calls the handler again to
 *      send the reply. Long polls and event streams park (park.c,
 *      http_wait.c). So a request waiting for durability or for news
 *      costs memory, not a thread, and group commit is not bounded by
 *      the number of threads.
 *
 * Connections that have not yet passed admission are counted per source
 * address and in all (--max-strangers, 64; a quarter of --max-connections
 * kept for those that did), and closed 30 s after their accept unless
 * admitted by then (http_acct.c, which says why that is not libmicrohttpd's
 * per-connection timeout); every connection has the 120 s idle timeout.
 * An attacker holding connections open from one address cannot take the
 * slots agents need for their heartbeats.
 *
 * Every reply, errors included, goes through k->cmd and xp_http_send: one
 * error family (reply.c).
 *
 * TLS (--tls-cert, --tls-key): libmicrohttpd's, on GnuTLS, for every
 * connection of the daemon: a plain HTTP request to it fails the handshake
 * and is closed without an HTTP answer. Suspended connections, long polls
 * and event streams work as over TCP (libmicrohttpd keeps the TLS session
 * with the connection).
 */
#include "http_int.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

#include "../lib/parse.h"
#include "../lib/sha256.h"
#include "../lib/xalloc.h"

#define XP_IDLE_TIMEOUT_S 120 /* any connection, idle (strangers: http_acct.c) */
#define XP_HTTP_MIN_THREADS 4

/* ---- replies ---- */

void xp_http_count(struct xp_ctl *ctl, int status)
{
	int cls = status / 100;
	pthread_mutex_lock(&ctl->m.mu);
	ctl->m.http[cls >= 1 && cls <= 5 ? cls : 0]++;
	pthread_mutex_unlock(&ctl->m.mu);
}

/* HA (--store etcd): who answers - the leader and its epoch, or a follower and whether what
 * it shows may be stale (its last poll of the leader's journal is over a second old) */
static void role_headers(struct xp_ctl *ctl, struct MHD_Response *r)
{
	char v[32];
	if (!ctl->o.store || !ctl->store)
		return;
	if (atomic_load(&ctl->follower)) {
		int stale = xp_ctl_now() - atomic_load(&ctl->follow_ok_ms) > 1000 ||
			    xp_store_quorum_age_ms(ctl->store) > 1000;
		MHD_add_response_header(r, "X-Xpool-Role", "follower");
		MHD_add_response_header(r, "X-Xpool-Stale", stale ? "true" : "false");
	} else {
		snprintf(v, sizeof(v), "%lld", (long long)xp_store_epoch(ctl->store));
		MHD_add_response_header(r, "X-Xpool-Role", "leader");
		MHD_add_response_header(r, "X-Xpool-Epoch", v);
	}
}

enum MHD_Result xp_http_queue(struct conn *k, int status, struct MHD_Response *r)
{
	MHD_add_response_header(r, "Cache-Control", "no-store");
	role_headers(k->ctl, r);
	if (status == 405 && k->cmd.allow[0])
		MHD_add_response_header(r, "Allow", k->cmd.allow);
	enum MHD_Result ok = MHD_queue_response(k->c, (unsigned)status, r);
	MHD_destroy_response(r);
	xp_http_count(k->ctl, status);
	k->state = K_DONE;
	return ok;
}

enum MHD_Result xp_http_send(struct conn *k)
{
	struct xp_cmd *cmd = &k->cmd;
	if (!cmd->reply)
		xp_reply_error(cmd, XP_EINTERNAL, NULL, "no reply");
	char *body = cmd->reply;
	cmd->reply = NULL;
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type",
				cmd->reply_type ? cmd->reply_type : "application/json");
	return xp_http_queue(k, cmd->status, r);
}

enum MHD_Result xp_http_error(struct conn *k, int code, const char *field, const char *fmt, ...)
{
	char msg[XP_ERR_TEXT_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	xp_reply_error(&k->cmd, code, field, "%s", msg);
	return xp_http_send(k);
}

static enum MHD_Result send_text(struct conn *k, const char *text)
{
	xp_reply_text(&k->cmd, 200, "text/plain", xstrdup(text));
	return xp_http_send(k);
}

/* 503: starting, or - never ready again - the journal failed and the process stops */
static enum MHD_Result not_ready(struct conn *k, const char *why)
{
	struct xp_err e = { 0 };
	if (k->ctl->store && xp_store_failure(k->ctl->store, &e) < 0)
		return xp_http_error(k, XP_EUNAVAIL, NULL,
				     "the journal failed, the controller is stopping: %s", e.text);
	return xp_http_error(k, XP_EUNAVAIL, NULL, "%s", why);
}

/* A follower's answer to a write, or to an agent: 307 to the leader, with no body (a client
 * that knows several controllers goes on to the next; see client.c), or 503 when etcd names
 * no leader. Sent from the headers: no body byte is read. */
static enum MHD_Result to_leader(struct conn *k, const char *url)
{
	char leader[256], loc[768];
	xp_store_leader(k->ctl->store, leader, sizeof(leader));
	if (leader[0] && k->ctl->o.advertise && !strcmp(leader, k->ctl->o.advertise))
		return xp_http_error(k, XP_EUNAVAIL, NULL,
				     "this controller is taking the lead; retry");
	if (!leader[0])
		return xp_http_error(k, XP_EUNAVAIL, NULL,
				     "no leader: this controller follows, and etcd names no leader "
				     "(lost quorum?); retry");
	struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"",
								 MHD_RESPMEM_PERSISTENT);
	snprintf(loc, sizeof(loc), "%s%s", leader, url);
	MHD_add_response_header(r, "Location", loc);
	MHD_add_response_header(r, "X-Xpool-Leader", leader);
	return xp_http_queue(k, 307, r);
}

/* ---- the owner ---- */

static void owner_done(struct xp_cmd *cmd)
{
	struct conn *k = cmd->done_arg;
	k->owner_done = 1;
	MHD_resume_connection(k->c);
}

enum MHD_Result xp_http_to_owner(struct conn *k)
{
	k->owner_done = 0;
	k->cmd.on_done = owner_done;
	k->cmd.done_arg = k;
	MHD_suspend_connection(k->c); /* before the owner can resume it */
	xp_owner_submit(k->ctl, &k->cmd);
	return MHD_YES;
}

/* ---- admission ---- */

static enum MHD_Result collect_query(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	struct xp_cmd *cmd = cls;
	(void)kind;
	if (cmd->nquery < XP_QUERY_MAX) {
		cmd->query_keys[cmd->nquery] = key;
		cmd->query_vals[cmd->nquery++] = value ? value : "";
	}
	return MHD_YES;
}

struct framing {
	const char *length; /* the first Content-Length */
	int lengths_differ, chunked;
};

static enum MHD_Result collect_framing(void *cls, enum MHD_ValueKind kind, const char *key,
				       const char *value)
{
	struct framing *f = cls;
	(void)kind;
	if (!strcasecmp(key, "Content-Length")) {
		if (f->length && strcmp(f->length, value ? value : ""))
			f->lengths_differ = 1;
		else
			f->length = value ? value : "";
	} else if (!strcasecmp(key, "Transfer-Encoding")) {
		f->chunked = 1;
	}
	return MHD_YES;
}

/* the token, the route's scope, the body's size and framing: 0 admitted,
 * else the reply is queued */
static int admit_token(struct conn *k, const char *url)
{
	struct xp_ctl *ctl = k->ctl;
	struct xp_cmd *cmd = &k->cmd;
	const char *auth = MHD_lookup_connection_value(k->c, MHD_HEADER_KIND, "Authorization");
	if (auth && !strncasecmp(auth, "Bearer ", 7) && auth[7]) {
		xp_sha256_hex(auth + 7, strlen(auth + 7), cmd->token_sha);
		cmd->has_token = 1;
	}
	if (!strcmp(url, "/metrics") && !cmd->has_token && ctl->o.metrics_public)
		return 0; /* --metrics-public: no tenants' series */
	struct xp_err err = { 0 };
	if (xp_auth_admit(ctl, cmd, &err) < 0) {
		xp_http_error(k, err.code, NULL, "%s", err.text);
		return -1;
	}
	return 0;
}

static int admit_body(struct conn *k)
{
	struct framing f = { 0 };
	int64_t len;
	MHD_get_connection_values(k->c, MHD_HEADER_KIND, collect_framing, &f);
	if (f.lengths_differ || (f.length && f.chunked)) {
		MHD_set_connection_option(k->c, MHD_CONNECTION_OPTION_TIMEOUT, 1);
		xp_http_error(k, XP_EINVAL, "Content-Length",
			      "ambiguous framing: %s; the connection is closed",
			      f.lengths_differ ? "two different Content-Length values"
					       : "Content-Length with Transfer-Encoding");
		return -1;
	}
	if (f.length && xp_parse_i64(f.length, 0, INT64_MAX, &len) == 0 &&
	    (uint64_t)len > k->body_max) {
		xp_http_error(k, XP_ETOOBIG, NULL, "the body is larger than the %zu-byte limit",
			      k->body_max);
		return -1;
	}
	return 0;
}

/* The first call: headers in, no body byte read. 0 admitted; else replied. */
static int admit(struct conn *k, const char *url, const char *method)
{
	struct xp_ctl *ctl = k->ctl;
	if (!strcmp(url, "/healthz"))
		return send_text(k, "ok\n"), -1;
	if (!strcmp(url, "/readyz"))
		return (ctl->ready ? send_text(k, "ready\n")
				   : not_ready(k, "replaying the journal")),
		       -1;
	if (!strcmp(url, "/ui") || !strcmp(url, "/ui/") || !strcmp(url, "/ui/app.js")) {
		if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
			snprintf(k->cmd.allow, sizeof(k->cmd.allow), "GET, HEAD");
			return xp_http_error(k, XP_EMETHOD, NULL, "use GET"), -1;
		}
		return xp_http_ui(k, !strcmp(url, "/ui/app.js")), -1; /* no data in it */
	}
	if (!ctl->ready)
		return not_ready(k, "the controller is starting"), -1;
	k->body_max = ctl->o.body_limit;
	k->events = !strcmp(url, "/v1/events") || !strcmp(url, "/v1/events/");
	if (k->events || !strcmp(url, "/metrics")) {
		if (strcmp(method, "GET")) {
			snprintf(k->cmd.allow, sizeof(k->cmd.allow), "GET");
			return xp_http_error(k, XP_EMETHOD, NULL, "%s takes GET", url), -1;
		}
		k->body_max = 4096;
	} else if (xp_http_route(k, url, method, k->cmd.allow, sizeof(k->cmd.allow)) < 0) {
		return xp_http_send(k), -1;
	}
	/* a follower sends on writes, agents, and job output (kept on the leader's disk) */
	if (atomic_load(&ctl->follower) && (strcmp(method, "GET") || k->cmd.need == XP_ROUTE_NODE ||
					    k->cmd.need == XP_ROUTE_JOIN ||
					    k->cmd.fn == xp_api_job_logs))
		return to_leader(k, url), -1;
	if (admit_token(k, url) < 0 || admit_body(k) < 0)
		return -1;
	xp_http_admitted(k);
	MHD_get_connection_values(k->c, MHD_GET_ARGUMENT_KIND, collect_query, &k->cmd);
	k->cmd.idem_key = MHD_lookup_connection_value(k->c, MHD_HEADER_KIND, "Idempotency-Key");
	if (k->cmd.idem_key) {
		size_t n = strlen(k->cmd.idem_key);
		int printable = n >= 1 && n <= 128;
		for (size_t i = 0; printable && i < n; i++)
			printable = k->cmd.idem_key[i] > 32 && k->cmd.idem_key[i] < 127;
		if (!printable)
			return xp_http_error(
				       k, XP_EINVAL, "Idempotency-Key",
				       "Idempotency-Key: expected 1..128 printable characters"),
			       -1;
	}
	return 0;
}

/* ---- dispatch ---- */

/* the body is in: parse it at the edge, then the owner or a wait */
static enum MHD_Result dispatch(struct conn *k, const char *url)
{
	if (k->too_big)
		return xp_http_error(k, XP_ETOOBIG, NULL,
				     "the body is larger than the %zu-byte limit", k->body_max);
	if (k->events)
		return xp_http_events(k);
	if (!strcmp(url, "/metrics"))
		return xp_http_metrics(k, k->cmd.has_token && k->cmd.admin);
	if (xp_http_parse(k) < 0)
		return xp_http_send(k);
	if (k->rt->edge == EDGE_WATCH)
		return xp_http_watch(k);
	if (k->rt->edge == EDGE_EPWATCH)
		return xp_http_epwatch(k);
	k->state = K_OWNER;
	return xp_http_to_owner(k);
}

/* called again after a resume: the owner answered, or a park ended */
static enum MHD_Result resumed(struct conn *k)
{
	if (k->events)
		return xp_http_events(k);
	if (k->state == K_WATCH && !k->owner_done)
		return xp_http_to_owner(k);
	if (k->state == K_WATCH)
		return k->rt->edge == EDGE_EPWATCH ? xp_http_epwatch(k) : xp_http_watch(k);
	if (k->cmd.logs && k->cmd.status == 200) {
		free(k->cmd.reply);
		k->cmd.reply = NULL;
		return xp_http_logs(k);
	}
	return xp_http_send(k);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct xp_ctl *ctl = cls;
	struct conn *k = *con_cls;
	(void)version;

	if (!k) {
		k = XNEW(struct conn);
		k->ctl = ctl;
		k->c = c;
		k->cmd.method = method;
		k->state = K_BODY;
		*con_cls = k;
		pthread_mutex_lock(&ctl->http_mu);
		ctl->http_busy++;
		pthread_mutex_unlock(&ctl->http_mu);
		if (admit(k, url, method) < 0)
			return MHD_YES; /* answered before any body byte was read */
		return MHD_YES;
	}
	if (k->state == K_DONE)
		return MHD_YES; /* answered at admission: the rest of the body is dropped */
	if (*upload_size) {
		if (!k->too_big) {
			if (k->body.len + *upload_size > k->body_max)
				k->too_big = 1;
			else
				xp_sb_putn(&k->body, upload, *upload_size);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (k->state == K_BODY)
		return dispatch(k, url);
	return resumed(k);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct xp_ctl *ctl = cls;
	struct conn *k = *con_cls;
	(void)c, (void)toe;
	if (!k)
		return;
	if (k->cmd.payload_free)
		k->cmd.payload_free(k->cmd.payload);
	if (k->cmd.body_obj)
		json_decref(k->cmd.body_obj);
	if (k->cmd.logs) {
		free(k->cmd.logs->v);
		free(k->cmd.logs);
	}
	free(k->cmd.reply);
	xp_sb_free(&k->body);
	free(k);
	*con_cls = NULL;
	pthread_mutex_lock(&ctl->http_mu);
	if (--ctl->http_busy == 0)
		pthread_cond_broadcast(&ctl->http_cv);
	pthread_mutex_unlock(&ctl->http_mu);
}

/* ---- the daemon ---- */

/* libmicrohttpd's messages are mostly about clients (a closed connection,
 * a bad request line): at most one a second reaches the log, with a count
 * of those left out, so a client cannot flood it. */
static void mhd_log(void *ud, const char *fmt, va_list ap)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	static int64_t last;
	static unsigned long dropped;
	(void)ud;
	int64_t now = xp_ctl_now();
	pthread_mutex_lock(&mu);
	if (last && now - last < 1000) {
		dropped++;
		pthread_mutex_unlock(&mu);
		return;
	}
	unsigned long d = dropped;
	dropped = 0;
	last = now;
	pthread_mutex_unlock(&mu);
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	if (d)
		fprintf(stderr, "xpool server: http: %s (and %lu more messages left out)\n", msg,
			d);
	else
		fprintf(stderr, "xpool server: http: %s\n", msg);
}

/* Each connection is a descriptor: lift the soft limit to the hard one so
 * --max-connections, not a 1,024 default, is the bound. */
static void raise_fd_limit(struct xp_ctl *ctl)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == rl.rlim_max)
		return;
	rlim_t want = (rlim_t)ctl->o.max_connections + 256;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || want < rl.rlim_max ? want : rl.rlim_max;
	if (rl.rlim_cur > 1024)
		setrlimit(RLIMIT_NOFILE, &rl);
}

static int listen_addr(struct xp_ctl *ctl, struct sockaddr_in *sa, char *host, size_t hlen,
		       struct xp_err *err)
{
	const char *colon = strrchr(ctl->o.listen, ':');
	struct addrinfo hints, *ai = NULL;
	int64_t port;
	if (!colon || colon == ctl->o.listen || (size_t)(colon - ctl->o.listen) >= hlen ||
	    xp_parse_i64(colon + 1, 0, 65535, &port) < 0)
		return xp_errf(err, XP_EINVAL, "--listen: expected HOST:PORT, got '%s'",
			       ctl->o.listen);
	snprintf(host, hlen, "%.*s", (int)(colon - ctl->o.listen), ctl->o.listen);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai)
		return xp_errf(err, XP_EINVAL, "--listen: cannot resolve '%s' (IPv4)", host);
	memcpy(sa, ai->ai_addr, sizeof(*sa));
	sa->sin_port = htons((uint16_t)port);
	freeaddrinfo(ai);
	return 0;
}

int xp_http_start(struct xp_ctl *ctl, struct xp_err *err)
{
	char host[256];
	struct sockaddr_in sa;
	int rc = listen_addr(ctl, &sa, host, sizeof(host), err);
	if (rc < 0)
		return rc;
	raise_fd_limit(ctl);
	if ((rc = xp_park_start(ctl, err)) < 0 || (rc = xp_http_acct_start(ctl, err)) < 0)
		return rc;
	unsigned tls = 0;
	if (ctl->o.tls_cert || ctl->o.tls_key) {
		if (!ctl->o.tls_cert || !ctl->o.tls_key)
			return xp_errf(err, XP_EINVAL, "%s: give --tls-cert and --tls-key together",
				       ctl->o.tls_cert ? "--tls-key" : "--tls-cert");
		rc = xp_tls_server_load(ctl->o.tls_cert, ctl->o.tls_key, &ctl->tls_pem[0],
					&ctl->tls_pem[1], err);
		if (rc < 0)
			return rc;
		tls = MHD_USE_TLS;
	}
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = cpus > XP_HTTP_MIN_THREADS ? (unsigned)cpus : XP_HTTP_MIN_THREADS;
	/* the options that TLS adds (none when plain: MHD_OPTION_END ends the list there) */
	struct MHD_OptionItem tlsopt[] = {
		{ tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, ctl->tls_pem[0] },
		{ MHD_OPTION_HTTPS_MEM_KEY, 0, ctl->tls_pem[1] },
		{ MHD_OPTION_END, 0, NULL },
	};
	ctl->http = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
			MHD_USE_ERROR_LOG | tls,
		ntohs(sa.sin_port), xp_http_on_accept, ctl, on_request, ctl, MHD_OPTION_EXTERNAL_LOGGER,
		mhd_log, ctl, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
		/* libmicrohttpd gives each pool thread limit / threads: a thread
		 * that the kernel hands more accepts than its share would refuse
		 * them while others idle. Each may take them all; on_accept holds
		 * --max-connections over the whole pool. */
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)ctl->o.max_connections * threads,
		/* one timeout for all: a connection with its own is walked
		 * every loop round (http_acct.c) */
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)XP_IDLE_TIMEOUT_S,
		MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
		ctl, MHD_OPTION_NOTIFY_CONNECTION, xp_http_on_connection, ctl,
		MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)4096, MHD_OPTION_ARRAY, tlsopt,
		MHD_OPTION_END);
	if (!ctl->http)
		return xp_errf(err, XP_EIO, "cannot listen on %s (in use, or not permitted%s)",
			       ctl->o.listen, tls ? ", or TLS refused the certificate" : "");
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(ctl->http, MHD_DAEMON_INFO_BIND_PORT);
	ctl->port = info ? info->port : ntohs(sa.sin_port);
	snprintf(ctl->addr, sizeof(ctl->addr), "%.40s:%u", host, ctl->port);
	return 0;
}

void xp_http_stop(struct xp_ctl *ctl)
{
	if (!ctl->http) {
		xp_http_acct_stop(ctl);
		free(ctl->tls_pem[0]);
		free(ctl->tls_pem[1]);
		ctl->tls_pem[0] = ctl->tls_pem[1] = NULL;
		xp_park_destroy(ctl);
		return;
	}
	/* parked requests answer now (the controller is no longer ready); those
	 * with the owner are answered by it; then the replies on their way go
	 * out. No connection may stay suspended when the daemon stops. */
	xp_park_stop(ctl);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 30;
	pthread_mutex_lock(&ctl->http_mu);
	while (ctl->http_busy > 0 &&
	       pthread_cond_timedwait(&ctl->http_cv, &ctl->http_mu, &until) == 0)
		;
	pthread_mutex_unlock(&ctl->http_mu);
	xp_http_acct_stop(ctl); /* before the descriptors go */
	MHD_stop_daemon(ctl->http);
	ctl->http = NULL;
	for (int i = 0; i < 2; i++) {
		free(ctl->tls_pem[i]);
		ctl->tls_pem[i] = NULL;
	}
	if (ctl->acct.refused)
		fprintf(stderr, "xpool server: http: %llu connections refused at accept (limits)\n",
			(unsigned long long)ctl->acct.refused);
	if (ctl->acct.reaped)
		fprintf(stderr,
			"xpool server: http: %llu connections closed without a request head in %d s\n",
			(unsigned long long)ctl->acct.reaped, ctl->o.header_timeout_ms / 1000);
	/* the parking itself goes in xp_ctl_stop, after the owner and the
	 * store thread, which still wake keys (a refused park is answered) */
}
