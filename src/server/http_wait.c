/*
 * http_wait: requests that wait and replies that stream, none of them
 * holding a thread (http.c's model):
 *
 *   GET /v1/nodes/NAME/assignments?since=V&wait=S  an agent's long poll:
 *       the owner answers; when nothing is newer than V the request parks
 *       on its node (park.c) until xp_watch_bump, or S seconds. The reply
 *       is kept on the connection: the agent's next poll, while its node's
 *       version and every node are unchanged, parks without the owner and
 *       gets that reply again at its deadline (the same version is the
 *       same list: every job record of a job running there bumps it);
 *   GET /v1/services/NAME/endpoints?since=V&wait=S   parks until any
 *       service's endpoints change (xp_ep_bump), or S seconds; with Accept:
 *       text/event-stream a stream of the service's endpoints, one event
 *       per version the owner publishes;
 *   GET /v1/events?since=N&wait=S   parks on the event ring until an event
 *       is durable; with Accept: text/event-stream a stream whose reader
 *       parks between events (a keep-alive comment every 15 s);
 *   GET /v1/jobs/ID/logs   the files the agents uploaded, read as the
 *       client takes them;
 *   GET /metrics   the owner's published text, sent without a copy;
 *   GET /ui, /ui/app.js   the embedded dashboard.
 *
 * Each looks at the state, and parks only if what it saw is still current
 * (xp_park_gen before the look, xp_park_if after): a wake in between makes
 * it look again.
 */
#include "http_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../lib/parse.h"
#include "../lib/xalloc.h"

#define SSE_KEEPALIVE_MS 15000

/* ---- the assignments long poll ---- */

static uint64_t assign_version(struct xp_ctl *ctl, long node)
{
	uint64_t v = 0;
	pthread_mutex_lock(&ctl->watch_mu);
	if (node >= 0 && (size_t)node < ctl->assign_ver.n)
		v = ctl->assign_ver.v[node];
	pthread_mutex_unlock(&ctl->watch_mu);
	return v;
}

static struct connrec *conn_rec(struct conn *k)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(k->c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

/* The connection's last reply, when it is still what the owner would say
 * to a poll since k->since: 1 with it in k->cmd. */
static int from_cache(struct conn *k)
{
	struct xp_ctl *ctl = k->ctl;
	struct connrec *r = conn_rec(k);
	if (!r || !r->reply || strcmp(r->node, k->cmd.name) || r->version > k->since ||
	    r->epoch != atomic_load(&ctl->node_epoch) ||
	    assign_version(ctl, r->index) != r->version)
		return 0;
	k->cmd.node = r->index;
	k->cmd.id = r->version;
	xp_reply_json(&k->cmd, 200, xstrdup(r->reply));
	k->cached = 1;
	return 1;
}

/* keep the owner's reply on the connection for the next poll */
static void to_cache(struct conn *k)
{
	struct connrec *r = conn_rec(k);
	if (!r || k->cached || k->cmd.status != 200 || !k->cmd.reply)
		return; /* the connection holds this reply already (or there is none) */
	free(r->reply);
	r->reply = xstrdup(k->cmd.reply);
	snprintf(r->node, sizeof(r->node), "%s", k->cmd.name);
	r->index = k->cmd.node;
	r->version = k->cmd.id;
	r->epoch = k->epoch;
	k->cached = 1; /* a wake of this request does not copy it again */
}

enum MHD_Result xp_http_watch(struct conn *k)
{
	struct xp_ctl *ctl = k->ctl;
	struct xp_cmd *cmd = &k->cmd;
	if (k->state == K_BODY) { /* the first look: the query, then the owner */
		const char *qs = xp_cmd_query(cmd, "since"), *qw = xp_cmd_query(cmd, "wait");
		int64_t since = 0, wait = 0;
		if (qs && xp_parse_i64(qs, 0, INT64_MAX, &since) < 0)
			return xp_http_error(k, XP_EINVAL, "since",
					     "since: expected a version, got '%s'", qs);
		if (qw && xp_parse_i64(qw, 0, 120, &wait) < 0)
			return xp_http_error(k, XP_EINVAL, "wait",
					     "wait: expected seconds 0..120, got '%s'", qw);
		k->since = (uint64_t)since;
		k->deadline = xp_ctl_now() + wait * 1000;
		k->state = K_WATCH;
		if (!from_cache(k)) {
			k->epoch = atomic_load(&ctl->node_epoch);
			return xp_http_to_owner(k);
		}
	}
	/* the owner (or the cache) answered (cmd->id: the node's version,
	 * cmd->node: its index) */
	to_cache(k);
	int64_t now = xp_ctl_now();
	if (cmd->status != 200 || cmd->id > k->since || now >= k->deadline || !ctl->ready)
		return xp_http_send(k);
	uint32_t key = XP_PARK_NODE((uint32_t)cmd->node);
	uint64_t gen = xp_park_gen(ctl, key);
	if (assign_version(ctl, cmd->node) <= k->since &&
	    xp_park_if(ctl, &k->park, k->c, key, gen, k->deadline))
		return MHD_YES; /* woken or expired: the owner is asked again */
	free(cmd->reply);
	cmd->reply = NULL;
	k->cached = 0;
	k->epoch = atomic_load(&ctl->node_epoch);
	return xp_http_to_owner(k);
}

/* ---- server-sent event streams (the event log's, a service's endpoints') ---- */

/* A stream's frames: next() sets frame (1), parks the reader (0) or ends
 * the stream (-1); the reader sends each frame as the client takes it. */
struct stream {
	int (*next)(struct stream *s);
	struct xp_ctl *ctl;
	struct MHD_Connection *c;
	int done;     /* the last frame is set: end after it */
	int64_t last; /* when something was last written (ms) */
	char *frame;
	size_t len, off;
	struct xp_park park;
};

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;
	(void)pos;
	if (s->done && !s->frame)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (!s->frame) {
		int r = s->next(s);
		if (r < 0)
			return MHD_CONTENT_READER_END_OF_STREAM;
		if (r == 0)
			return 0; /* parked: called again once resumed */
	}
	size_t n = s->len - s->off < max ? s->len - s->off : max;
	memcpy(buf, s->frame + s->off, n);
	s->off += n;
	s->last = xp_ctl_now();
	if (s->off == s->len) {
		free(s->frame);
		s->frame = NULL;
	}
	return (ssize_t)n;
}

static void stream_free(void *cls)
{
	struct stream *s = cls;
	free(s->frame);
	free(s);
}

/* s (its struct stream first, next set) as k's reply */
static enum MHD_Result stream_start(struct conn *k, struct stream *s)
{
	s->ctl = k->ctl;
	s->c = k->c;
	s->last = xp_ctl_now();
	s->len = s->frame ? strlen(s->frame) : 0;
	struct MHD_Response *r =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free);
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	return xp_http_queue(k, 200, r);
}

/* ---- the endpoints long poll ---- */

/* With Accept: text/event-stream the endpoints come as a stream: the
 * owner's answer first (it checked who may see the service), then each
 * version the owner publishes (xp_ep_published) as an "endpoints" event,
 * the reader parked between them, a keep-alive comment every 15 s, and a
 * "gone" event when the service is deleted. */
struct epsse {
	struct stream st; /* first */
	char name[XP_NAME_MAX + 1];
	uint64_t sent; /* the version last sent */
};

static char *ep_frame(const char *json)
{
	struct xp_sb sb;
	xp_sb_init(&sb);
	xp_sb_printf(&sb, "event: endpoints\ndata: %s\n\n", json);
	return xp_sb_steal(&sb);
}

/* the next frame; 0 parked, -1 at the end */
static int epsse_next(struct stream *st)
{
	struct epsse *s = (struct epsse *)st;
	uint64_t gen = xp_park_gen(st->ctl, XP_PARK_SERVICES), v = 0;
	char *json = xp_ep_published(st->ctl, s->name, &v);
	if (!json && st->ctl->ready) {
		st->frame = xstrdup("event: gone\ndata: {\"error\":{\"code\":\"ENOENT\","
				    "\"message\":\"the service was deleted\"}}\n\n");
		st->done = 1;
	} else if (json && v > s->sent) {
		st->frame = ep_frame(json);
		s->sent = v;
	} else if (!st->ctl->ready) {
		free(json);
		return -1;
	} else if (xp_ctl_now() - st->last >= SSE_KEEPALIVE_MS) {
		st->frame = xstrdup(": keep-alive\n\n");
	} else {
		free(json);
		if (xp_park_if(st->ctl, &st->park, st->c, XP_PARK_SERVICES, gen,
			       st->last + SSE_KEEPALIVE_MS))
			return 0;
		return epsse_next(st); /* woken meanwhile: look again */
	}
	free(json);
	st->len = strlen(st->frame);
	st->off = 0;
	return 1;
}

static enum MHD_Result ep_stream(struct conn *k)
{
	struct epsse *s = XNEW(struct epsse);
	s->st.next = epsse_next;
	snprintf(s->name, sizeof(s->name), "%s", k->cmd.name);
	s->sent = k->cmd.id;
	s->st.frame = ep_frame(k->cmd.reply ? k->cmd.reply : "{}");
	free(k->cmd.reply);
	k->cmd.reply = NULL;
	return stream_start(k, &s->st);
}

/* GET /v1/services/NAME/endpoints?since=V&wait=S: the owner answers (cmd->id:
 * the endpoints' version); while it is not past V the request parks on
 * every service's endpoints until one changes (xp_ep_bump), or S seconds. */
enum MHD_Result xp_http_epwatch(struct conn *k)
{
	struct xp_ctl *ctl = k->ctl;
	struct xp_cmd *cmd = &k->cmd;
	if (k->state == K_BODY) {
		const char *qs = xp_cmd_query(cmd, "since"), *qw = xp_cmd_query(cmd, "wait");
		int64_t since = 0, wait = 0;
		if (qs && xp_parse_i64(qs, 0, INT64_MAX, &since) < 0)
			return xp_http_error(k, XP_EINVAL, "since",
					     "since: expected a version, got '%s'", qs);
		if (qw && xp_parse_i64(qw, 0, 120, &wait) < 0)
			return xp_http_error(k, XP_EINVAL, "wait",
					     "wait: expected seconds 0..120, got '%s'", qw);
		const char *accept = MHD_lookup_connection_value(k->c, MHD_HEADER_KIND, "Accept");
		k->stream = accept && strstr(accept, "text/event-stream");
		k->since = (uint64_t)since;
		k->deadline = xp_ctl_now() + wait * 1000;
		k->state = K_WATCH;
		return xp_http_to_owner(k);
	}
	if (k->stream && cmd->status == 200)
		return ep_stream(k);
	if (cmd->status != 200 || cmd->id > k->since || xp_ctl_now() >= k->deadline ||
	    !ctl->ready)
		return xp_http_send(k);
	uint64_t gen = xp_park_gen(ctl, XP_PARK_SERVICES);
	if (xp_ep_version(ctl) <= k->since &&
	    xp_park_if(ctl, &k->park, k->c, XP_PARK_SERVICES, gen, k->deadline))
		return MHD_YES; /* woken or expired: the owner is asked again */
	free(cmd->reply);
	cmd->reply = NULL;
	return xp_http_to_owner(k);
}

/* ---- events ---- */

struct sse {
	struct stream st; /* first */
	uint64_t since;
	long tenant;
	int admin;
};

/* the next frame to send; 0 with the reader parked, -1 at the end */
static int sse_next(struct stream *st)
{
	struct sse *s = (struct sse *)st;
	int stopped, gone;
	uint64_t gen = xp_park_gen(st->ctl, XP_PARK_EVENTS);
	st->frame =
		xp_events_next_sse(st->ctl->ev, &s->since, 0, s->tenant, s->admin, &stopped, &gone);
	if (gone) {
		st->frame = xstrdup("event: gone\ndata: {\"error\":{\"code\":\"EGONE\",\"message\":"
				    "\"events that old are no longer kept\"}}\n\n");
		st->done = 1;
	} else if (!st->frame && (stopped || !st->ctl->ready)) {
		return -1;
	} else if (!st->frame && xp_ctl_now() - st->last >= SSE_KEEPALIVE_MS) {
		st->frame = xstrdup(": keep-alive\n\n");
	} else if (!st->frame) {
		if (xp_park_if(st->ctl, &st->park, st->c, XP_PARK_EVENTS, gen,
			       st->last + SSE_KEEPALIVE_MS))
			return 0;
		return sse_next(st); /* woken meanwhile: look again */
	}
	st->len = strlen(st->frame);
	st->off = 0;
	return 1;
}

static enum MHD_Result events_stream(struct conn *k)
{
	struct sse *s = XNEW(struct sse);
	s->st.next = sse_next;
	s->since = k->since;
	s->tenant = k->cmd.tenant;
	s->admin = k->cmd.admin;
	return stream_start(k, &s->st);
}

enum MHD_Result xp_http_events(struct conn *k)
{
	struct xp_ctl *ctl = k->ctl;
	struct xp_cmd *cmd = &k->cmd;
	int64_t limit = 1000;
	const char *ql = xp_cmd_query(cmd, "limit");
	if (k->state == K_BODY) {
		const char *qs = xp_cmd_query(cmd, "since"), *qw = xp_cmd_query(cmd, "wait");
		const char *accept = MHD_lookup_connection_value(k->c, MHD_HEADER_KIND, "Accept");
		const char *last =
			MHD_lookup_connection_value(k->c, MHD_HEADER_KIND, "Last-Event-ID");
		int64_t since = 0, wait = 0;
		if (last && !qs)
			qs = last;
		if (qs && xp_parse_i64(qs, 0, INT64_MAX, &since) < 0)
			return xp_http_error(k, XP_EINVAL, "since",
					     "since: expected a sequence number, got '%s'", qs);
		if (qw && xp_parse_i64(qw, 0, 60, &wait) < 0)
			return xp_http_error(k, XP_EINVAL, "wait",
					     "wait: expected seconds 0..60, got '%s'", qw);
		if (ql && xp_parse_i64(ql, 1, 10000, &limit) < 0)
			return xp_http_error(k, XP_EINVAL, "limit",
					     "limit: expected 1..10000, got '%s'", ql);
		k->since = (uint64_t)since;
		k->deadline = xp_ctl_now() + wait * 1000;
		k->state = K_WATCH;
		if (accept && strstr(accept, "text/event-stream"))
			return events_stream(k);
	}
	if (ql)
		xp_parse_i64(ql, 1, 10000, &limit);
	uint64_t next = 0, oldest = 0;
	uint64_t gen = xp_park_gen(ctl, XP_PARK_EVENTS);
	char *arr = xp_events_read(ctl->ev, k->since, (size_t)limit, 0, cmd->tenant, cmd->admin,
				   &next, &oldest);
	if (!arr)
		return xp_http_error(k, XP_EGONE, "since",
				     "events after %llu are no longer kept (the oldest is %llu): "
				     "list the jobs, then follow from the newest",
				     (unsigned long long)k->since, (unsigned long long)oldest);
	if (!strcmp(arr, "[]") && xp_ctl_now() < k->deadline && ctl->ready) {
		free(arr);
		if (xp_park_if(ctl, &k->park, k->c, XP_PARK_EVENTS, gen, k->deadline))
			return MHD_YES;
		return xp_http_events(k); /* woken meanwhile: look again */
	}
	struct xp_sb sb;
	xp_sb_init(&sb);
	xp_sb_printf(&sb, "{\"events\":%s,\"next\":%llu}", arr, (unsigned long long)next);
	free(arr);
	xp_reply_json(cmd, 200, xp_sb_steal(&sb));
	return xp_http_send(k);
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
		ssize_t k =
			s->fd >= 0 && s->left > 0
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

enum MHD_Result xp_http_logs(struct conn *k)
{
	struct logstream *s = XNEW(struct logstream);
	s->p = k->cmd.logs;
	s->fd = -1;
	k->cmd.logs = NULL;
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
								   log_read, s, log_free);
	MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
	return xp_http_queue(k, 200, r);
}

/* ---- /metrics and the dashboard ---- */

enum MHD_Result xp_http_metrics(struct conn *k, int full)
{
	struct xp_mtext *m = xp_metrics_take(k->ctl, full, 5000);
	if (!m)
		return xp_http_error(k, XP_EUNAVAIL, NULL, "the metrics are not rendered yet");
	struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback_cls(
		m->len, m->text, xp_mtext_release, m);
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
	return xp_http_queue(k, 200, r);
}

extern const unsigned char xp_ui_index[], xp_ui_app[];
extern const unsigned long xp_ui_index_len, xp_ui_app_len;

/* /ui: the embedded page, /ui/app.js its script (this origin only: no
 * inline script runs); they fetch everything else with the user's token */
enum MHD_Result xp_http_ui(struct conn *k, int script)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(
		script ? xp_ui_app_len : xp_ui_index_len,
		(void *)(script ? xp_ui_app : xp_ui_index), MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, "Content-Type",
				script ? "text/javascript; charset=utf-8"
				       : "text/html; charset=utf-8");
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; script-src 'self'; "
				"style-src 'unsafe-inline'; img-src 'self' data:");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	return xp_http_queue(k, 200, r);
}
