/*
 * http1: the client's own HTTP/1.1 transport for http:// and https://
 * controllers (see http1.c for why it is not libcurl; TLS: tls.h). Used
 * through client.c only.
 */
#ifndef XP_HTTP1_H
#define XP_HTTP1_H

#include <stdatomic.h>
#include <stddef.h>

#include "../lib/err.h"

struct xp_http1;
struct xp_tls_trust;

struct xp_http1_req {
	const char *method, *path;
	const char *const *headers; /* "Name: value", NULL-ended; "Name:" alone is left out */
	const char *body;	    /* NULL: none (POST/PUT/PATCH still send Content-Length: 0) */
	size_t len;
	long timeout_ms; /* the whole request; 0: none */
	long connect_ms; /* connecting */
	/* the body as it arrives; returning less than size*n stops the transfer */
	size_t (*write)(char *p, size_t size, size_t n, void *ud);
	void *ud;
	const atomic_int *abort; /* set: stop within about a second; NULL: never */
	int repeat_safe; /* may be sent twice (see xp_client_set_repeat_safe()) */
};

struct xp_http1 *xp_http1_create(const char *host, const char *port);
/* https://: TLS on every connection from now on, the server verified
 * against trust's CAs (borrowed: it outlives h). */
void xp_http1_set_tls(struct xp_http1 *h, struct xp_tls_trust *trust);
void xp_http1_destroy(struct xp_http1 *h);
/* What the server is in error texts ("cannot reach PEER at URL: ..."); a
 * static string; default "the controller". */
void xp_http1_set_peer(struct xp_http1 *h, const char *peer);

/* One request on the kept-alive connection (opened as needed). When a
 * reused connection fails to send, or ends (EOF or reset) before the first
 * byte of the reply, the request goes once more on a new connection if it
 * may repeat: GET, HEAD, an Idempotency-Key header, or rq->repeat_safe. 0 with
 * *status set; *aborted when the write callback stopped it. Otherwise an
 * XP_* code (XP_EUNAVAIL "cannot reach ...", "interrupted", "did not answer
 * in time"; XP_EIO for a reply that is not HTTP). */
int xp_http1_perform(struct xp_http1 *h, const struct xp_http1_req *rq, long *status,
		     int *aborted, struct xp_err *err);

/* The status and Content-Type of the reply being read: valid from the
 * first write callback on (event streams decide there what the body is). */
void xp_http1_reply(const struct xp_http1 *h, long *status, const char **content_type);
/* The X-Xpool-Epoch of the last reply (the HA leader's epoch), 0 when it had none. */
long long xp_http1_epoch(const struct xp_http1 *h);
/* The last reply's X-Xpool-Leader (a follower's 307: the leader's address), "" when absent */
const char *xp_http1_leader(const struct xp_http1 *h);
/* The local address of the open connection ("" when none). */
void xp_http1_local_ip(const struct xp_http1 *h, char *buf, size_t len);

#endif
