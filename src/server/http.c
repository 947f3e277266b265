/*
 * http: the controller's HTTP/1.1 front on libmicrohttpd, one thread per
 * connection. A worker reads the body (up to the configured limit), routes
 * by method and path, checks and parses what it can at the edge (the job
 * spec, a node descriptor, the token's hash), hands a command to the owner
 * thread, waits for its reply and sends it. /healthz and /readyz are
 * answered here, and so is /v1/events, from the event ring. Tokens are
 * checked here first (against the owner's copy of the live tokens), so a
 * request without a valid token costs no parsing.
 */
#include "ctl.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <strings.h>
#include <time.h>

#include "../core/state/spec.h"
#include "../descriptor/descriptor.h"
#include "../edge/edge.h"
#include "../lib/parse.h"
#include "../lib/sha256.h"
#include "../lib/strbuf.h"
#include "../lib/xalloc.h"

enum { EDGE_NONE, EDGE_SPEC, EDGE_NODES, EDGE_RAW, EDGE_WATCH, EDGE_PATCH, EDGE_WORKFLOW };

static const struct route {
	const char *method, *pattern;
	xp_cmd_fn fn;
	int admin, edge;
} routes[] = {
	{ "GET", "/v1/jobs", xp_api_jobs_list, 0, 0 },
	{ "POST", "/v1/jobs", xp_api_jobs_submit, 0, EDGE_SPEC },
	{ "GET", "/v1/jobs/{id}", xp_api_job_get, 0, 0 },
	{ "PATCH", "/v1/jobs/{id}", xp_api_job_update, 0, EDGE_PATCH },
	{ "DELETE", "/v1/jobs/{id}", xp_api_job_cancel, 0, 0 },
	{ "POST", "/v1/jobs/{id}/hold", xp_api_job_hold, 0, 0 },
	{ "POST", "/v1/jobs/{id}/release", xp_api_job_release, 0, 0 },
	{ "POST", "/v1/jobs/{id}/cancel", xp_api_job_cancel, 0, 0 },
	{ "GET", "/v1/jobs/{id}/explain", xp_api_job_explain, 0, 0 },
	{ "GET", "/v1/jobs/{id}/logs", xp_api_job_logs, 0, 0 },
	{ "POST", "/v1/jobs/{id}/counters", xp_api_job_counters, 0, 0 },
	{ "GET", "/v1/usage", xp_api_usage, 0, 0 },
	{ "GET", "/v1/alerts", xp_api_alerts, 1, 0 },
	{ "GET", "/v1/forecast", xp_api_forecast, 0, 0 },
	{ "GET", "/v1/history", xp_api_history, 0, 0 },
	{ "GET", "/v1/advice", xp_api_advice, 1, 0 },
	{ "GET", "/v1/prices", xp_api_prices_get, 0, 0 },
	{ "PUT", "/v1/prices", xp_api_prices_put, 1, 0 },
	{ "POST", "/v1/workflows", xp_api_workflows_submit, 0, EDGE_WORKFLOW },
	{ "GET", "/v1/nodes", xp_api_nodes_list, 0, 0 },
	{ "POST", "/v1/nodes", xp_api_nodes_add, 1, EDGE_NODES },
	{ "GET", "/v1/nodes/{name}", xp_api_node_get, 0, 0 },
	{ "PATCH", "/v1/nodes/{name}", xp_api_node_patch, 1, 0 },
	{ "DELETE", "/v1/nodes/{name}", xp_api_node_delete, 1, 0 },
	{ "GET", "/v1/devices", xp_api_devices, 0, 0 },
	{ "GET", "/v1/queues", xp_api_queues_list, 0, 0 },
	{ "POST", "/v1/queues", xp_api_queues_create, 1, 0 },
	{ "GET", "/v1/queues/{name}", xp_api_queue_get, 0, 0 },
	{ "PATCH", "/v1/queues/{name}", xp_api_queue_patch, 1, 0 },
	{ "DELETE", "/v1/queues/{name}", xp_api_queue_delete, 1, 0 },
	{ "GET", "/v1/tenants", xp_api_tenants_list, 1, 0 },
	{ "POST", "/v1/tenants", xp_api_tenants_create, 1, 0 },
	{ "GET", "/v1/tokens", xp_api_tokens_list, 1, 0 },
	{ "POST", "/v1/tokens", xp_api_tokens_create, 1, 0 },
	{ "DELETE", "/v1/tokens/{id}", xp_api_token_delete, 1, 0 },
	{ "POST", "/v1/agents", xp_api_agents_register, 1, EDGE_NODES },
	{ "POST", "/v1/nodes/{name}/heartbeat", xp_api_node_heartbeat, 1, 0 },
	{ "GET", "/v1/nodes/{name}/assignments", xp_api_node_assignments, 1, EDGE_WATCH },
	{ "POST", "/v1/nodes/{name}/tasks", xp_api_node_tasks, 1, 0 },
	{ "POST", "/v1/nodes/{name}/logs", xp_api_node_logs, 1, EDGE_RAW },
	{ NULL, NULL, NULL, 0, 0 },
};

struct conn {
	struct xp_sb body;
	int too_big;
};

/* Match url against a pattern; fills {id} / {name}. 1 match, 0 no, -1 bad parameter. */
static int match(const char *pattern, const char *url, struct xp_cmd *cmd, char *bad, size_t blen)
{
	const char *p = pattern, *u = url;
	while (*p && *u) {
		if (*p == '{') {
			const char *pe = strchr(p, '}');
			size_t ul = strcspn(u, "/");
			char seg[128];
			if (ul >= sizeof(seg)) { /* never cut: a cut id would be another */
				snprintf(bad, blen, "a path segment of %zu characters (at most %zu)",
					 ul, sizeof(seg) - 1);
				return -1;
			}
			snprintf(seg, sizeof(seg), "%.*s", (int)ul, u);
			if (!strncmp(p, "{id}", 4)) {
				int64_t v;
				if (xp_parse_i64(seg, 1, INT64_MAX, &v) < 0) {
					snprintf(bad, blen, "'%s' is not an id", seg);
					return -1;
				}
				cmd->id = (uint64_t)v;
			} else {
				if (!xp_name_ok(seg)) {
					snprintf(bad, blen, "'%s' is not a valid name", seg);
					return -1;
				}
				snprintf(cmd->name, sizeof(cmd->name), "%.63s", seg);
			}
			p = pe + 1;
			u += ul;
			continue;
		}
		if (*p != *u)
			return 0;
		p++, u++;
	}
	return *p == '\0' && (*u == '\0' || (*u == '/' && u[1] == '\0'));
}

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

static void count_reply(struct xp_ctl *ctl, int status)
{
	int cls = status / 100;
	pthread_mutex_lock(&ctl->m.mu);
	ctl->m.http[cls >= 1 && cls <= 5 ? cls : 0]++;
	pthread_mutex_unlock(&ctl->m.mu);
}

static enum MHD_Result send_reply(struct xp_ctl *ctl, struct MHD_Connection *c, int status,
				  const char *type, char *body)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	count_reply(ctl, status);
	return ok;
}

static enum MHD_Result send_error(struct xp_ctl *ctl, struct MHD_Connection *c, int code,
				  const char *field, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static enum MHD_Result send_error(struct xp_ctl *ctl, struct MHD_Connection *c, int code,
				  const char *field, const char *fmt, ...)
{
	char msg[XP_ERR_TEXT_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return send_reply(ctl, c, xp_errhttp(code), "application/json",
			  xp_error_body(code, field, msg));
}

/* 405: the path exists, the method does not; Allow lists those it takes */
static enum MHD_Result send_not_allowed(struct xp_ctl *ctl, struct MHD_Connection *c,
					const char *url, const char *method)
{
	char allow[128] = "", msg[XP_ERR_TEXT_MAX], bad[160];
	struct xp_cmd probe;
	size_t len = 0;
	for (const struct route *r = routes; r->method; r++) {
		memset(&probe, 0, sizeof(probe));
		if (match(r->pattern, url, &probe, bad, sizeof(bad)) > 0 &&
		    !strstr(allow, r->method) && len + strlen(r->method) + 3 < sizeof(allow))
			len += (size_t)snprintf(allow + len, sizeof(allow) - len, "%s%s",
						len ? ", " : "", r->method);
	}
	snprintf(msg, sizeof(msg), "%s does not take %s (it takes %s)", url, method, allow);
	char *body = xp_error_body(XP_EMETHOD, NULL, msg);
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
	MHD_add_response_header(r, "Content-Type", "application/json");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	MHD_add_response_header(r, "Allow", allow);
	enum MHD_Result ok = MHD_queue_response(c, 405, r);
	MHD_destroy_response(r);
	count_reply(ctl, 405);
	return ok;
}

static void free_spec(void *p)
{
	xp_jobspec_free(p);
	free(p);
}

static void free_workflow(void *p)
{
	xp_workflow_free(p);
	free(p);
}

static void free_cluster(void *p)
{
	xp_cluster_destroy(p);
}

/* ---- /v1/events: long poll or server-sent events ---- */

struct sse {
	struct xp_ctl *ctl;
	uint64_t since;
	long tenant;
	int admin, done;
	char *frame;
	size_t len, off;
};

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sse *s = cls;
	(void)pos;
	if (s->done && !s->frame)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (!s->frame) {
		int stopped, gone;
		s->frame = xp_events_next_sse(s->ctl->ev, &s->since, 15000, s->tenant, s->admin,
					      &stopped, &gone);
		if (gone) {
			s->frame = xstrdup(
				"event: gone\ndata: {\"error\":{\"code\":\"EGONE\",\"message\":"
				"\"events that old are no longer kept\"}}\n\n");
			s->done = 1;
		} else if (!s->frame && stopped) {
			return MHD_CONTENT_READER_END_OF_STREAM;
		} else if (!s->frame) {
			s->frame = xstrdup(": keep-alive\n\n");
		}
		s->len = strlen(s->frame);
		s->off = 0;
	}
	size_t n = s->len - s->off < max ? s->len - s->off : max;
	memcpy(buf, s->frame + s->off, n);
	s->off += n;
	if (s->off == s->len) {
		free(s->frame);
		s->frame = NULL;
	}
	return (ssize_t)n;
}

static void sse_free(void *cls)
{
	struct sse *s = cls;
	free(s->frame);
	free(s);
}

static enum MHD_Result events(struct xp_ctl *ctl, struct MHD_Connection *c, struct xp_cmd *cmd)
{
	const char *qs = xp_cmd_query(cmd, "since"), *qw = xp_cmd_query(cmd, "wait"),
		   *ql = xp_cmd_query(cmd, "limit");
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
	const char *last = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
	int64_t since = 0, wait = 0, limit = 1000;

	if (last && !qs)
		qs = last;
	if (qs && xp_parse_i64(qs, 0, INT64_MAX, &since) < 0)
		return send_error(ctl, c, XP_EINVAL, "since",
				  "since: expected a sequence number, got '%s'", qs);
	if (qw && xp_parse_i64(qw, 0, 60, &wait) < 0)
		return send_error(ctl, c, XP_EINVAL, "wait",
				  "wait: expected seconds 0..60, got '%s'", qw);
	if (ql && xp_parse_i64(ql, 1, 10000, &limit) < 0)
		return send_error(ctl, c, XP_EINVAL, "limit", "limit: expected 1..10000, got '%s'",
				  ql);
	if (accept && strstr(accept, "text/event-stream")) {
		struct sse *s = XNEW(struct sse);
		s->ctl = ctl;
		s->since = (uint64_t)since;
		s->tenant = cmd->tenant;
		s->admin = cmd->admin;
		struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096,
									   sse_read, s, sse_free);
		MHD_add_response_header(r, "Content-Type", "text/event-stream");
		MHD_add_response_header(r, "Cache-Control", "no-store");
		enum MHD_Result ok = MHD_queue_response(c, 200, r);
		MHD_destroy_response(r);
		count_reply(ctl, 200);
		return ok;
	}
	uint64_t next = 0, oldest = 0;
	char *arr = xp_events_read(ctl->ev, (uint64_t)since, (size_t)limit, (int)wait * 1000,
				   cmd->tenant, cmd->admin, &next, &oldest);
	if (!arr)
		return send_error(ctl, c, XP_EGONE, "since",
				  "events after %lld are no longer kept (the oldest is %llu): list "
				  "the jobs, then follow from the newest",
				  (long long)since, (unsigned long long)oldest);
	struct xp_sb sb;
	xp_sb_init(&sb);
	xp_sb_printf(&sb, "{\"events\":%s,\"next\":%llu}", arr, (unsigned long long)next);
	free(arr);
	return send_reply(ctl, c, 200, "application/json", xp_sb_steal(&sb));
}

/* ---- GET /v1/nodes/{name}/assignments?since=V&wait=S ---- */

static enum MHD_Result watch(struct xp_ctl *ctl, struct MHD_Connection *c, struct xp_cmd *cmd)
{
	const char *qs = xp_cmd_query(cmd, "since"), *qw = xp_cmd_query(cmd, "wait");
	int64_t since = 0, wait = 0, deadline;
	if (qs && xp_parse_i64(qs, 0, INT64_MAX, &since) < 0)
		return send_error(ctl, c, XP_EINVAL, "since", "since: expected a version, got '%s'", qs);
	if (qw && xp_parse_i64(qw, 0, 120, &wait) < 0)
		return send_error(ctl, c, XP_EINVAL, "wait", "wait: expected seconds 0..120, got '%s'", qw);
	deadline = xp_ctl_now() + wait * 1000;
	for (;;) {
		struct xp_cmd q = *cmd;
		q.reply = NULL;
		xp_owner_call(ctl, &q);
		if (!q.reply)
			return send_error(ctl, c, XP_EINTERNAL, NULL, "no reply");
		int64_t left = deadline - xp_ctl_now();
		if (q.status != 200 || q.id > (uint64_t)since || left <= 0 || ctl->watch_stop)
			return send_reply(ctl, c, q.status, "application/json", q.reply);
		free(q.reply);
		xp_watch_wait(ctl, (uint32_t)q.node, (uint64_t)since, (int)left);
	}
}

/* ---- the daemon ---- */

/* per-connection thread stacks: small, since there is one per agent;
 * sanitizer builds need their red zones */
#if defined(__SANITIZE_ADDRESS__)
#define XP_HTTP_STACK (2 * 1024 * 1024)
#else
#define XP_HTTP_STACK (256 * 1024)
#endif

static void mhd_log(void *ud, const char *fmt, va_list ap)
{
	(void)ud;
	char msg[512];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	size_t n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	fprintf(stderr, "xpool server: http: %s\n", msg);
}

/* Each connection is a descriptor (and a thread): lift the soft limit to
 * the hard one so --max-connections, not a 1,024 default, is the bound. */
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

/* ---- dispatch ---- */

static int content_json(struct MHD_Connection *c, const char *body, size_t len, int *json)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	if (!ct || !*ct) { /* guess: JSON starts with { or [ */
		size_t i = 0;
		while (i < len && strchr(" \t\r\n", body[i]))
			i++;
		*json = i < len && (body[i] == '{' || body[i] == '[');
		return 0;
	}
	if (!strncasecmp(ct, "application/x-www-form-urlencoded", 33)) { /* curl -d */
		size_t i = 0;
		while (i < len && strchr(" \t\r\n", body[i]))
			i++;
		*json = i < len && (body[i] == '{' || body[i] == '[');
		return 0;
	}
	if (!strncasecmp(ct, "application/json", 16)) {
		*json = 1;
		return 0;
	}
	if (!strncasecmp(ct, "application/yaml", 16) || !strncasecmp(ct, "text/yaml", 9) ||
	    !strncasecmp(ct, "application/x-yaml", 18)) {
		*json = 0;
		return 0;
	}
	return -1;
}

extern const unsigned char xp_ui_index[], xp_ui_app[];
extern const unsigned long xp_ui_index_len, xp_ui_app_len;

/* /ui: the embedded page, /ui/app.js its script (this origin only: no
 * inline script runs); they fetch everything else with the user's token */
static enum MHD_Result send_ui(struct xp_ctl *ctl, struct MHD_Connection *c, const char *method,
			       int script)
{
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return send_error(ctl, c, XP_EINVAL, NULL, "use GET");
	struct MHD_Response *r = MHD_create_response_from_buffer(
		script ? xp_ui_app_len : xp_ui_index_len,
		(void *)(script ? xp_ui_app : xp_ui_index), MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, "Content-Type", script ? "text/javascript; charset=utf-8"
							  : "text/html; charset=utf-8");
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; script-src 'self'; "
				"style-src 'unsafe-inline'; img-src 'self' data:");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	enum MHD_Result ok = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	count_reply(ctl, 200);
	return ok;
}

/* ---- a job's output, streamed from its files ---- */

struct logstream {
	struct xp_logparts *p;
	size_t part, hoff; /* the part; how much of its header went out */
	int fd;		   /* its file, -1: not opened yet (or done) */
	off_t left;	   /* what is still to send of it (a file grows as it is read) */
};

static ssize_t log_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct logstream *s = cls;
	(void)pos;
	while (s->part < s->p->n) {
		struct xp_logpart *lp = &s->p->v[s->part];
		size_t hl = strlen(lp->header);
		if (s->hoff < hl) {
			size_t k = hl - s->hoff < max ? hl - s->hoff : max;
			memcpy(buf, lp->header + s->hoff, k);
			s->hoff += k;
			return (ssize_t)k;
		}
		if (s->fd < 0) {
			struct stat sb;
			s->fd = open(lp->path, O_RDONLY | O_CLOEXEC);
			s->left = s->fd >= 0 && fstat(s->fd, &sb) == 0 ? sb.st_size : 0;
		}
		ssize_t k = s->fd >= 0 && s->left > 0
				    ? read(s->fd, buf, (size_t)s->left < max ? (size_t)s->left : max)
				    : 0;
		if (k > 0) {
			s->left -= k;
			return k;
		}
		if (s->fd >= 0)
			close(s->fd);
		s->fd = -1;
		s->part++;
		s->hoff = 0;
	}
	return MHD_CONTENT_READER_END_OF_STREAM;
}

static void log_free(void *cls)
{
	struct logstream *s = cls;
	if (s->fd >= 0)
		close(s->fd);
	free(s->p->v);
	free(s->p);
	free(s);
}

/* the files, read as the client takes them: a few KiB in memory a reader */
static enum MHD_Result send_logs(struct xp_ctl *ctl, struct MHD_Connection *c,
				 struct xp_logparts *p)
{
	struct logstream *s = XNEW(struct logstream);
	s->p = p;
	s->fd = -1;
	struct MHD_Response *r =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, log_read, s, log_free);
	MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	enum MHD_Result ok = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	count_reply(ctl, 200);
	return ok;
}

/* /metrics from the owner's published text (metrics.c), sent without a
 * copy: full (admin) with the queue and tenant series */
static enum MHD_Result send_metrics(struct xp_ctl *ctl, struct MHD_Connection *c,
				    const char *method, int full)
{
	if (strcmp(method, "GET")) {
		struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
		MHD_add_response_header(r, "Allow", "GET");
		enum MHD_Result ok = MHD_queue_response(c, 405, r);
		MHD_destroy_response(r);
		count_reply(ctl, 405);
		return ok;
	}
	struct xp_mtext *m = xp_metrics_take(ctl, full, 5000);
	if (!m)
		return send_error(ctl, c, XP_EUNAVAIL, NULL, "the metrics are not rendered yet");
	struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback_cls(
		m->len, m->text, xp_mtext_release, m);
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	enum MHD_Result ok = MHD_queue_response(c, 200, r);
	MHD_destroy_response(r);
	count_reply(ctl, 200);
	return ok;
}

/* 503: starting (why), or - never ready again - the journal failed and the process stops. */
static enum MHD_Result not_ready(struct xp_ctl *ctl, struct MHD_Connection *c, const char *why)
{
	struct xp_err e = { 0 };
	if (ctl->store && xp_store_failure(ctl->store, &e) < 0)
		return send_error(ctl, c, XP_EUNAVAIL, NULL,
				  "the journal failed, the controller is stopping: %s", e.text);
	return send_error(ctl, c, XP_EUNAVAIL, NULL, "%s", why);
}

static enum MHD_Result dispatch(struct xp_ctl *ctl, struct MHD_Connection *c, const char *url,
				const char *method, struct conn *k)
{
	struct xp_cmd cmd;
	const struct route *rt = NULL;
	int path_known = 0;
	char bad[160] = "";
	enum MHD_Result ok;

	if (!strcmp(url, "/healthz"))
		return send_reply(ctl, c, 200, "text/plain", xstrdup("ok\n"));
	if (!strcmp(url, "/readyz"))
		return ctl->ready ? send_reply(ctl, c, 200, "text/plain", xstrdup("ready\n"))
				  : not_ready(ctl, c, "replaying the journal");
	if (!strcmp(url, "/ui") || !strcmp(url, "/ui/")) /* the dashboard: no data in it */
		return send_ui(ctl, c, method, 0);
	if (!strcmp(url, "/ui/app.js"))
		return send_ui(ctl, c, method, 1);
	if (!ctl->ready)
		return not_ready(ctl, c, "the controller is starting");
	if (k->too_big)
		return send_error(ctl, c, XP_ETOOBIG, NULL,
				  "the body is larger than the %zu-byte limit", ctl->o.body_limit);

	memset(&cmd, 0, sizeof(cmd));
	cmd.method = method;
	cmd.body = k->body.s ? k->body.s : "";
	cmd.len = k->body.len;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_query, &cmd);
	const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (auth && !strncasecmp(auth, "Bearer ", 7) && auth[7]) {
		xp_sha256_hex(auth + 7, strlen(auth + 7), cmd.token_sha);
		cmd.has_token = 1;
	}

	if (!strcmp(url, "/metrics") && !cmd.has_token && ctl->o.metrics_public)
		return send_metrics(ctl, c, method, 0); /* --metrics-public: no tenants */
	if (!cmd.has_token) /* everything else needs a token: refuse early */
		return send_error(ctl, c, XP_EAUTH, NULL, "missing 'Authorization: Bearer <token>'");
	if (xp_auth_check(ctl, cmd.token_sha, &cmd.tenant, &cmd.admin) < 0)
		return send_error(ctl, c, XP_EAUTH, NULL, "unknown or revoked token");
	if (!strcmp(url, "/metrics"))
		return send_metrics(ctl, c, method, cmd.admin);
	if (!strcmp(url, "/v1/events") || !strcmp(url, "/v1/events/")) {
		if (strcmp(method, "GET"))
			return send_error(ctl, c, XP_EINVAL, NULL, "use GET on /v1/events");
		return events(ctl, c, &cmd);
	}
	for (const struct route *r = routes; r->method; r++) {
		int m = match(r->pattern, url, &cmd, bad, sizeof(bad));
		if (m < 0)
			return send_error(ctl, c, XP_EINVAL, NULL, "%s: %s", url, bad);
		if (m == 0)
			continue;
		path_known = 1;
		if (!strcmp(r->method, method)) {
			rt = r;
			break;
		}
	}
	if (!rt && path_known) /* 405 with the methods it takes */
		return send_not_allowed(ctl, c, url, method);
	if (!rt)
		return send_error(ctl, c, XP_ENOENT, NULL, "no such endpoint: %s %s", method, url);
	cmd.fn = rt->fn;
	cmd.admin_only = rt->admin;
	cmd.idem_key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key");
	if (cmd.idem_key) {
		size_t n = strlen(cmd.idem_key);
		int printable = n >= 1 && n <= 128;
		for (size_t i = 0; printable && i < n; i++)
			printable = cmd.idem_key[i] > 32 && cmd.idem_key[i] < 127;
		if (!printable)
			return send_error(ctl, c, XP_EINVAL, "Idempotency-Key",
					  "Idempotency-Key: expected 1..128 printable characters");
	}
	if (cmd.len && rt->edge != EDGE_RAW && content_json(c, cmd.body, cmd.len, &cmd.body_json) < 0)
		return send_error(
			ctl, c, XP_EINVAL, "Content-Type",
			"unsupported Content-Type: send application/json or application/yaml");
	if (rt->edge == EDGE_SPEC) {
		struct xp_err err = { 0 };
		struct xp_jobspec *spec = XNEW(struct xp_jobspec);
		char field[320];
		if (xp_jobspec_parse_text("request", cmd.body, cmd.len, cmd.body_json, spec, field,
					  &err) < 0 ||
		    xp_jobspec_check_submit(spec, "request", field, &err) < 0) {
			xp_jobspec_free(spec);
			free(spec);
			return send_error(ctl, c, err.code, field, "%s", err.text);
		}
		cmd.payload = spec;
		cmd.payload_free = free_spec;
	} else if (rt->edge == EDGE_WORKFLOW) {
		struct xp_err err = { 0 };
		struct xp_workflow *wf = XNEW(struct xp_workflow);
		char field[640];
		if (xp_workflow_parse("request", cmd.body, cmd.len, cmd.body_json, wf, field,
				      &err) < 0) {
			free(wf);
			return send_error(ctl, c, err.code, field[0] ? field : NULL, "%s",
					  err.text);
		}
		cmd.payload = wf;
		cmd.payload_free = free_workflow;
	} else if (rt->edge == EDGE_PATCH) {
		struct xp_err err = { 0 };
		struct xp_jobpatch *p = XNEW(struct xp_jobpatch);
		char field[320];
		if (xp_jobpatch_parse_text("request", cmd.body, cmd.len, cmd.body_json, p, field,
					   &err) < 0) {
			free(p);
			return send_error(ctl, c, err.code, field, "%s", err.text);
		}
		cmd.payload = p;
		cmd.payload_free = free;
	} else if (rt->edge == EDGE_NODES) {
		struct xp_err err = { 0 };
		struct xp_cluster *cl =
			xp_descriptor_load_buf("request", cmd.body, cmd.len,
					       cmd.body_json ? XP_DESC_JSON : XP_DESC_YAML, &err);
		if (!cl)
			return send_error(ctl, c, err.code, NULL, "%s", err.text);
		if (cl->nnodes == 0) {
			xp_cluster_destroy(cl);
			return send_error(ctl, c, XP_EINVAL, "nodes",
					  "the descriptor has no nodes");
		}
		cmd.payload = cl;
		cmd.payload_free = free_cluster;
	}
	if (rt->edge == EDGE_WATCH) /* a long poll on a node's assignments */
		return watch(ctl, c, &cmd);

	xp_owner_call(ctl, &cmd);
	if (cmd.payload_free)
		cmd.payload_free(cmd.payload);
	if (cmd.logs && cmd.status == 200) {
		free(cmd.reply);
		return send_logs(ctl, c, cmd.logs);
	}
	if (cmd.logs) {
		free(cmd.logs->v);
		free(cmd.logs);
	}
	if (!cmd.reply)
		return send_error(ctl, c, XP_EINTERNAL, NULL, "no reply");
	ok = send_reply(ctl, c, cmd.status, cmd.reply_type ? cmd.reply_type : "application/json",
			cmd.reply);
	return ok;
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
		*con_cls = k;
		pthread_mutex_lock(&ctl->http_mu);
		ctl->http_busy++;
		pthread_mutex_unlock(&ctl->http_mu);
		return MHD_YES;
	}
	if (*upload_size) {
		if (!k->too_big) {
			if (k->body.len + *upload_size > ctl->o.body_limit)
				k->too_big = 1;
			else
				xp_sb_putn(&k->body, upload, *upload_size);
		}
		*upload_size = 0;
		return MHD_YES;
	}
	return dispatch(ctl, c, url, method, k);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct xp_ctl *ctl = cls;
	struct conn *k = *con_cls;
	(void)c, (void)toe;
	if (k) {
		xp_sb_free(&k->body);
		free(k);
		*con_cls = NULL;
		pthread_mutex_lock(&ctl->http_mu);
		if (--ctl->http_busy == 0)
			pthread_cond_broadcast(&ctl->http_cv);
		pthread_mutex_unlock(&ctl->http_mu);
	}
}

int xp_http_start(struct xp_ctl *ctl, struct xp_err *err)
{
	char host[256];
	const char *colon = strrchr(ctl->o.listen, ':');
	struct addrinfo hints, *ai = NULL;
	int64_t port;

	if (!colon || colon == ctl->o.listen || (size_t)(colon - ctl->o.listen) >= sizeof(host) ||
	    xp_parse_i64(colon + 1, 0, 65535, &port) < 0)
		return xp_errf(err, XP_EINVAL, "--listen: expected HOST:PORT, got '%s'",
			       ctl->o.listen);
	snprintf(host, sizeof(host), "%.*s", (int)(colon - ctl->o.listen), ctl->o.listen);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &ai) != 0 || !ai)
		return xp_errf(err, XP_EINVAL, "--listen: cannot resolve '%s' (IPv4)", host);
	struct sockaddr_in sa;
	memcpy(&sa, ai->ai_addr, sizeof(sa));
	sa.sin_port = htons((uint16_t)port);
	freeaddrinfo(ai);
	raise_fd_limit(ctl);
	/* poll(), not select(): select() cannot watch a descriptor >= 1024, and
	 * libmicrohttpd then drops the connection silently - with one long poll
	 * per agent that cap was ~1,000 agents (docs/results/agents.md). A
	 * thread per connection (agents hold one each) with small stacks. */
	ctl->http = MHD_start_daemon(
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
			MHD_USE_ERROR_LOG,
		(uint16_t)port, NULL, NULL, on_request, ctl, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
		ctl, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)ctl->o.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)300,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, ctl, MHD_OPTION_LISTEN_BACKLOG_SIZE,
		(unsigned)4096, MHD_OPTION_THREAD_STACK_SIZE, (size_t)(XP_HTTP_STACK),
		MHD_OPTION_END);
	if (!ctl->http)
		return xp_errf(err, XP_EIO, "cannot listen on %s (in use, or not permitted)",
			       ctl->o.listen);
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(ctl->http, MHD_DAEMON_INFO_BIND_PORT);
	ctl->port = info ? info->port : (uint16_t)port;
	snprintf(ctl->addr, sizeof(ctl->addr), "%.40s:%u", host, ctl->port);
	return 0;
}

void xp_http_stop(struct xp_ctl *ctl)
{
	if (!ctl->http)
		return;
	/* let the replies on their way go out (a second at most): new requests get 503, as the
	 * controller is no longer ready, and long polls were woken by the caller */
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	pthread_mutex_lock(&ctl->http_mu);
	while (ctl->http_busy > 0 &&
	       pthread_cond_timedwait(&ctl->http_cv, &ctl->http_mu, &until) == 0)
		;
	pthread_mutex_unlock(&ctl->http_mu);
	MHD_stop_daemon(ctl->http);
	ctl->http = NULL;
}
