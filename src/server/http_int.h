/*
 * http_int: what the files of the HTTP front share (http.c, http_acct.c,
 * http_routes.c, http_wait.c). See http.c for the model: an event loop on
 * a small thread pool, requests that wait held as suspended connections.
 */
#ifndef XP_HTTP_INT_H
#define XP_HTTP_INT_H

#include <microhttpd.h>

#include "ctl.h"
#include "../lib/strbuf.h"

/* How a route's body is read at the edge, before the owner sees it. */
enum {
	EDGE_NONE,     /* no document: query and path only */
	EDGE_SPEC,     /* a job spec (spec.h) */
	EDGE_NODES,    /* a cluster descriptor */
	EDGE_RAW,      /* bytes as they are (an agent's log upload) */
	EDGE_WATCH,    /* a long poll on a node's assignments (http_wait.c) */
	EDGE_EPWATCH,  /* a long poll on services' endpoints (http_wait.c) */
	EDGE_PATCH,    /* a change to a pending job (spec.h) */
	EDGE_WORKFLOW, /* a workflow (src/edge) */
	EDGE_JSON,     /* a JSON object the handler reads (reports, queues, tokens) */
};

struct route {
	const char *method, *pattern;
	xp_cmd_fn fn;
	int scope, edge; /* enum xp_route_scope; how the body is read */
	size_t body_max; /* 0: the server's --body-limit; else this many bytes */
	int (*parse)(struct xp_cmd *cmd); /* EDGE_JSON: the body into a typed
					   * cmd->payload, on the pool thread */
};

/* A connection's own record (its socket context): for the accounting
 * (http.c) and the last assignments reply its agent's long poll got
 * (http_wait.c), so a poll with no news waits without the owner. */
struct connrec {
	uint32_t ip; /* IPv4, network order */
	int admitted;
	int fd;			       /* the socket (-1 unknown): the reaper shuts it down */
	int queued;		       /* in the strangers' FIFO (http_acct.c) */
	int64_t since;		       /* its accept (ms, xp_ctl_now) */
	struct connrec *sprev, *snext; /* the FIFO, under acct.mu */
	char node[64];	  /* the node the cached reply is for ("" none) */
	long index;	  /* its index in the state */
	uint64_t version; /* the assignment version the reply reflects */
	uint64_t epoch;	  /* ctl->node_epoch when the owner made it */
	char *reply;	  /* the reply's JSON */
};

/* A request's state, the connection's *con_cls. */
enum k_state { K_BODY, K_OWNER, K_WATCH, K_DONE };
struct conn {
	struct xp_ctl *ctl;
	struct MHD_Connection *c;
	const struct route *rt; /* NULL: not a routed request (events, metrics) */
	struct xp_cmd cmd;
	struct xp_sb body;
	size_t body_max;
	int too_big;
	enum k_state state;
	int owner_done; /* the owner finished cmd (set before the resume) */
	int events;	/* GET /v1/events */
	int64_t deadline;
	uint64_t since;
	uint64_t epoch; /* a watch: ctl->node_epoch before the owner looked */
	int cached;	/* a watch: its reply is the one the connection keeps */
	int stream;	/* an endpoints watch asked for text/event-stream */
	struct xp_park park;
};

/* http_routes.c */
/* The route for method and url into k->rt (and {id}/{name} into k->cmd):
 * 0, or an error reply in k->cmd (404, 405 with allow[], 400 a bad id). */
int xp_http_route(struct conn *k, const char *url, const char *method, char *allow, size_t alen);
/* Parse the body at the edge as the route says: 0, or an error reply in k->cmd. */
int xp_http_parse(struct conn *k);

/* http_wait.c: requests that wait, and replies that stream */
enum MHD_Result xp_http_events(struct conn *k);
enum MHD_Result xp_http_watch(struct conn *k);
enum MHD_Result xp_http_epwatch(struct conn *k);
enum MHD_Result xp_http_logs(struct conn *k);
enum MHD_Result xp_http_metrics(struct conn *k, int full);
enum MHD_Result xp_http_ui(struct conn *k, int script);

/* http_acct.c: the accept policy and connection notices libmicrohttpd
 * calls; admission; the reaper of strangers */
enum MHD_Result xp_http_on_accept(void *cls, const struct sockaddr *addr, socklen_t len);
void xp_http_on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			   enum MHD_ConnectionNotificationCode code);
/* k passed admission: no longer a stranger (no header timeout, not counted) */
void xp_http_admitted(struct conn *k);
int xp_http_acct_start(struct xp_ctl *ctl, struct xp_err *err);
void xp_http_acct_stop(struct xp_ctl *ctl);

/* http.c */
/* Send k->cmd's reply (status, body, type); frees the body. */
enum MHD_Result xp_http_send(struct conn *k);
/* An error reply sent at once (the one error family, reply.c). */
enum MHD_Result xp_http_error(struct conn *k, int code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Hand k->cmd to the owner and suspend until it is done; the handler is
 * called again then (k->owner_done). */
enum MHD_Result xp_http_to_owner(struct conn *k);
void xp_http_count(struct xp_ctl *ctl, int status);
/* Queue r with the usual headers and count it. */
enum MHD_Result xp_http_queue(struct conn *k, int status, struct MHD_Response *r);

#endif
