/*
 * client: the C client of the controller's HTTP API (docs/api.md). The CLI
 * reaches the controller only through this header.
 *
 * A client holds one connection (http1.c; TLS for https://, tls.c), reused
 * for every request so it is kept alive; it is not thread-safe (one client
 * per thread).
 * Every function returns 0 (or a non-negative value) on success and a
 * negative xpool code (lib/err.h) with err filled on failure; nothing here
 * prints or exits.
 *
 * Three layers, use the highest that fits:
 *   xp_client_json()     JSON in, JSON out; an API error reply becomes the
 *                        negative code of its "code" and the text of its
 *                        "message" (the HTTP status when the body has none).
 *   xp_client_request()  raw bytes, any status: for text/plain (logs) and
 *                        YAML bodies.
 *   xp_client_stream()   a server-sent event stream, one callback per event.
 * A transport failure (refused, timed out, reset) is XP_EUNAVAIL with
 * "cannot reach the controller at http://HOST:PORT: <the reason>"; a
 * certificate that fails verification is XP_EAUTH naming the check.
 *
 * Ownership: parameters are borrowed; what a function hands back through an
 * out-parameter (a reply buffer, a JSON value, a config string) belongs to
 * the caller, who frees it with free() or json_decref().
 */
#ifndef XP_CLIENT_H
#define XP_CLIENT_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

#include <jansson.h>

#include "../lib/err.h"
#include "../lib/strbuf.h"

#define XP_CLIENT_DEFAULT_ADDR	     "127.0.0.1:7700"
#define XP_CLIENT_DEFAULT_PORT	     "7700"
#define XP_CLIENT_CONNECT_TIMEOUT_MS 5000
#define XP_CLIENT_DEFAULT_TIMEOUT_MS 30000
/* Largest reply kept in memory (logs included); more is ETOOBIG. */
#define XP_CLIENT_MAX_REPLY (64u << 20)

struct xp_client;

/* ---- client.c: the connection ---- */

/* A client of the controller at addr ("127.0.0.1:7700", "host" = port
 * 7700, "http://host:port", "https://host:port/prefix"), or of several
 * controllers, comma-separated (HA: a request goes to the one that answered
 * last and moves on to the next when that one cannot be connected to);
 * token may be NULL (only /healthz, /readyz and /metrics answer then).
 * Nothing is sent yet. */
struct xp_client *xp_client_create(const char *addr, const char *token, struct xp_err *err);
/* The base URL addr stands for (*url malloc'd), or XP_EINVAL naming the
 * fault; xp_client_create() uses it. */
int xp_client_normalise_addr(const char *addr, char **url, struct xp_err *err);
/* NULL-safe. */
void xp_client_destroy(struct xp_client *c);
/* https://: verify the controller's certificate against the CAs of the PEM
 * file ca_file (loaded now: an error names the file and why) instead of
 * the system's. Ignored for http:// and for a NULL ca_file. */
int xp_client_set_ca(struct xp_client *c, const char *ca_file, struct xp_err *err);
/* The request timeout in milliseconds (0 = none); the default is
 * XP_CLIENT_DEFAULT_TIMEOUT_MS. Connecting is bounded separately (5 s). */
void xp_client_set_timeout(struct xp_client *c, long ms);
/* A flag the caller sets (from a signal handler, another thread) to end the
 * request in flight within about a second: it then fails with XP_EUNAVAIL
 * "interrupted". NULL (the default) turns the check off. */
void xp_client_set_abort(struct xp_client *c, const atomic_int *flag);
/* Mark the requests sent from now on as safe to send twice (the server
 * applies a repeat once: heartbeats, task reports keyed by attempt). On a
 * kept-alive connection that breaks before the first reply byte, GET and
 * HEAD, a request with an Idempotency-Key header, and these are sent once
 * more on a new connection; any other request fails with XP_EUNAVAIL, since
 * the server may have acted on it. Returns the previous setting. */
int xp_client_set_repeat_safe(struct xp_client *c, int on);
/* The normalised base URL ("http://127.0.0.1:7700"). */
const char *xp_client_base(const struct xp_client *c);
/* The local address of the client's last connection ("" before one):
 * where this host reaches the controller from. */
void xp_client_local_ip(const struct xp_client *c, char *buf, size_t len);
/* HA: the highest leader epoch (X-Xpool-Epoch) this client has met; 0: none (a controller
 * with the SQLite store sends none). */
long long xp_client_epoch(const struct xp_client *c);

/* Send one request; path starts with '/' and includes the query. body may
 * be NULL (no body); content_type is its type (NULL = application/json).
 * Any HTTP status is a success here: *status gets it and *resp a new
 * NUL-terminated buffer of resp_len bytes (the caller frees it). */
int xp_client_request(struct xp_client *c, const char *method, const char *path,
		      const char *content_type, const char *body, size_t len, long *status,
		      char **resp, size_t *resp_len, struct xp_err *err);

/* Send body (NULL = none; borrowed) as JSON and decode the reply. A 2xx
 * returns the status (200, 201, ...) with *reply a new reference (JSON null
 * for an empty body); any other status returns the decoded API error. */
int xp_client_json(struct xp_client *c, const char *method, const char *path, json_t *body,
		   json_t **reply, struct xp_err *err);

/* Like xp_client_request() with extra headers ("Name: value", NULL-ended;
 * may be NULL), then the error decoding of xp_client_json() for a non-2xx
 * status; a 2xx returns the status and the raw reply. */
int xp_client_call(struct xp_client *c, const char *method, const char *path,
		   const char *const *headers, const char *content_type, const char *body,
		   size_t len, char **resp, size_t *resp_len, struct xp_err *err);

/* ---- client.c: API errors ---- */

/* The xpool code an HTTP status stands for when the body names none
 * (404 -> XP_ENOENT, 409 -> XP_ESTATE, 503 -> XP_EUNAVAIL, ...). */
int xp_client_status_code(long status);
/* Decode a non-2xx reply: {"error": {"code", "message", "field"}} gives
 * the code by name (the status decides when the name is unknown) and the
 * message as the text; any other body gives "HTTP 502: <its first line>".
 * *field (may be NULL) gets a malloc'd copy of "field" or NULL. Returns
 * the (negative) code. */
int xp_client_decode_error(long status, const char *body, size_t len, char **field,
			   struct xp_err *err);

/* ---- client.c: server-sent events ---- */

struct xp_sse_event {
	const char *id;	  /* the "id:" field, "" when the event had none */
	const char *type; /* the "event:" field, "message" by default */
	const char *data; /* the "data:" lines joined with '\n' */
	size_t data_len;
};

/* Called once per event; a non-zero return ends the stream (and becomes
 * xp_client_stream()'s return value). */
typedef int (*xp_sse_fn)(void *ud, const struct xp_sse_event *ev);

/* GET path with "Accept: text/event-stream" and, when last_id[0] is set,
 * "Last-Event-ID: <last_id>"; call fn per event until the server ends the
 * stream (returns 0) or fn returns non-zero. last_id (XP_SSE_ID_MAX bytes)
 * is updated to the id of every event delivered, so calling again resumes
 * where the stream broke. No request timeout applies. A 200 reply that is
 * not an event stream is XP_EUNSUPP (the caller may fall back to polling);
 * an error status is the decoded API error; a stream that breaks after its
 * first bytes is XP_EIO, while XP_EUNAVAIL means it never got that far. */
#define XP_SSE_ID_MAX 128
int xp_client_stream(struct xp_client *c, const char *path, char *last_id, xp_sse_fn fn, void *ud,
		     struct xp_err *err);

/* The event-stream parser xp_client_stream() uses, exposed for tests:
 * feed bytes in any chunking; each complete event goes to fn. */
struct xp_sse_parser {
	struct xp_sb line, data, type, id;
	int saw_cr;   /* the last byte was '\r': a following '\n' is part of it */
	int has_data; /* a data: line was seen in this event */
	xp_sse_fn fn;
	void *ud;
};
void xp_sse_init(struct xp_sse_parser *p, xp_sse_fn fn, void *ud);
/* Returns 0 or the first non-zero value fn returned (later bytes ignored). */
int xp_sse_feed(struct xp_sse_parser *p, const char *buf, size_t len);
void xp_sse_free(struct xp_sse_parser *p);

/* ---- client.c: building paths ---- */

/* Append s percent-encoded (everything but A-Z a-z 0-9 - . _ ~). */
void xp_client_escape(struct xp_sb *b, const char *s);
/* Append "?key=value" or "&key=value" (value escaped) to a path. */
void xp_client_query(struct xp_sb *b, const char *key, const char *value);

/* ---- config.c: where the controller is and who we are ---- */

struct xp_client_config {
	char *addr;  /* never NULL after a successful resolve */
	char *token; /* never NULL after a successful resolve */
	char *ca;    /* https://: the CA file; NULL: the system's CAs (or http://) */
	/* where each came from: "--addr", "XPOOL_ADDR", "<file>:<line>", "default" */
	char *addr_from, *token_from, *ca_from;
};

/* Resolve the address and the token, each on its own: the flag (NULL when
 * not given), else $XPOOL_ADDR / $XPOOL_TOKEN, else the config file
 * ($HOME/.config/xpool/config: "addr:", "token:" or "token_file:" lines),
 * else (address only) XP_CLIENT_DEFAULT_ADDR. The file is read only when a
 * value is still missing; a broken file is an error naming file:line. No
 * token anywhere is XP_EAUTH with text telling how to set one. */
int xp_client_config_resolve(const char *flag_addr, const char *flag_token,
			     struct xp_client_config *cfg, struct xp_err *err);
/* The same, and the CA file of an https:// address: flag_ca (--ca), else
 * $XPOOL_CA, else "ca:" in the file (relative to its folder, or "~/");
 * none: cfg->ca NULL (the system's CAs). For an http:// address the file
 * is not read for it, and cfg->ca is only what the flag or the
 * environment gave. */
int xp_client_config_resolve_ca(const char *flag_addr, const char *flag_token, const char *flag_ca,
				struct xp_client_config *cfg, struct xp_err *err);
/* A client for cfg: xp_client_create() and xp_client_set_ca(). */
struct xp_client *xp_client_create_cfg(const struct xp_client_config *cfg, struct xp_err *err);
void xp_client_config_free(struct xp_client_config *cfg);
/* The config file's path into out (empty when $HOME is unset). */
void xp_client_config_path(char *out, size_t len);

#endif
