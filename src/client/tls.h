/*
 * tls: the client's TLS for https:// controllers, GnuTLS under http1.c
 * (tls.c). Used through http1.c and client.c only.
 *
 * A trust (struct xp_tls_trust) is the CA certificates a client verifies
 * the controller's chain against: a PEM file's (--ca, $XPOOL_CA, "ca:" in
 * the config file) or the system's store. A session (struct xp_tls) runs
 * on a connected non-blocking socket that http1.c owns and waits on: the
 * calls here never block, they say what they wait for.
 *
 * What is verified: the chain up to one of the trust's CAs, the validity
 * dates, and the host name of the address (a DNS name against the
 * certificate's DNS names, an IP literal against its IP addresses).
 *
 * Ownership: parameters are borrowed; xp_tls_trust_load() and
 * xp_tls_start() hand back objects the caller frees with the matching
 * free/end function (NULL-safe).
 */
#ifndef XP_TLS_H
#define XP_TLS_H

#include <stddef.h>
#include <sys/types.h>

#include "../lib/err.h"

struct xp_tls_trust;
struct xp_tls;

/* The CAs of the PEM file ca_file, or the system's when ca_file is NULL.
 * Errors name the file and the reason (unreadable, no certificate in it),
 * or why GnuTLS could not be loaded. */
int xp_tls_trust_load(const char *ca_file, struct xp_tls_trust **out, struct xp_err *err);
void xp_tls_trust_free(struct xp_tls_trust *t);

/* Where the CA file is set, named when a verification fails (a static string; default
 * "--ca, $XPOOL_CA or 'ca:' in the config file"). */
void xp_tls_trust_where(struct xp_tls_trust *t, const char *where);

/* Present the certificate of cert_file (PEM, its chain may follow) with the
 * private key of key_file when a peer asks for one (etcd's
 * --client-cert-auth). Errors name the file and GnuTLS's reason (unreadable,
 * not PEM, the key not matching the certificate). */
int xp_tls_trust_identity(struct xp_tls_trust *t, const char *cert_file, const char *key_file,
			  struct xp_err *err);

/* A client session on fd for host (a name or an IP literal, no brackets). */
int xp_tls_start(struct xp_tls_trust *trust, int fd, const char *host, struct xp_tls **out,
		 struct xp_err *err);
void xp_tls_end(struct xp_tls *s);

#define XP_TLS_WANT_READ  1
#define XP_TLS_WANT_WRITE 2
/* One step of the handshake: 0 done, XP_TLS_WANT_* (wait, then call
 * again), or an XP_* code whose text says what failed, for a failed
 * verification (XP_EUNAVAIL) which check and against which CA ("url" names
 * the peer). */
int xp_tls_handshake(struct xp_tls *s, const char *url, struct xp_err *err);

/* Like send(2) and recv(2) on a non-blocking socket: bytes moved; recv 0 at
 * the end; -1 with errno EAGAIN (then xp_tls_want_write() says which way
 * to wait), EINTR, or EPROTO (xp_tls_why() has GnuTLS's reason). After
 * EAGAIN, send must be called again with the same bytes. */
ssize_t xp_tls_send(struct xp_tls *s, const void *p, size_t n);
ssize_t xp_tls_recv(struct xp_tls *s, void *p, size_t n);
int xp_tls_want_write(const struct xp_tls *s);
const char *xp_tls_why(const struct xp_tls *s);

#endif
