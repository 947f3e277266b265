/*
 * tls: GnuTLS client sessions for http1.c (see tls.h).
 *
 * GnuTLS is opened with dlopen the first time an https:// address is used,
 * as libcurl was before it: a CLI verb is one short process, and linking
 * GnuTLS would map its 9 libraries (nettle, hogweed, gmp, p11-kit, idn2,
 * tasn1, unistring ...) into every `xpool` call, plain http:// ones too.
 * The daemon (xpoold) links GnuTLS anyway (libmicrohttpd's TLS, the dev
 * CA): there dlopen finds the library already mapped. Its headers give the
 * types and constants only; every call goes through the table below.
 *
 * Notes on the non-obvious:
 * - Verification is GnuTLS's own (gnutls_session_set_verify_cert): the
 *   handshake fails with CERTIFICATE_VERIFICATION_ERROR, and the status
 *   bits are printed by GnuTLS ("The certificate is NOT trusted. The
 *   certificate issuer is unknown."), so the text says which check failed.
 * - SNI is sent for host names only: RFC 6066 forbids IP literals there.
 * - A peer that closes without close_notify (a server dropping an idle
 *   kept-alive connection) reads as an end, not as an error: http1.c then
 *   resends a request that may repeat, as it does over plain TCP.
 */
#include "tls.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h> /* types and constants only: the library is dlopened */

#include "../lib/fileio.h"
#include "../lib/xalloc.h"

#define CA_FILE_MAX (4u << 20)

static struct {
	int (*cred_alloc)(gnutls_certificate_credentials_t *);
	void (*cred_free)(gnutls_certificate_credentials_t);
	int (*trust_mem)(gnutls_certificate_credentials_t, const gnutls_datum_t *,
			 gnutls_x509_crt_fmt_t);
	int (*system_trust)(gnutls_certificate_credentials_t);
	int (*key_mem2)(gnutls_certificate_credentials_t, const gnutls_datum_t *,
			const gnutls_datum_t *, gnutls_x509_crt_fmt_t, const char *, unsigned);
	int (*init)(gnutls_session_t *, unsigned int);
	void (*deinit)(gnutls_session_t);
	int (*default_priority)(gnutls_session_t);
	int (*cred_set)(gnutls_session_t, gnutls_credentials_type_t, void *);
	int (*server_name_set)(gnutls_session_t, gnutls_server_name_type_t, const void *, size_t);
	void (*verify_cert)(gnutls_session_t, const char *, unsigned);
	unsigned (*verify_status)(gnutls_session_t);
	int (*status_print)(unsigned, gnutls_certificate_type_t, gnutls_datum_t *, unsigned);
	void (*transport_int2)(gnutls_session_t, int, int);
	int (*handshake)(gnutls_session_t);
	int (*direction)(gnutls_session_t);
	ssize_t (*send)(gnutls_session_t, const void *, size_t);
	ssize_t (*recv)(gnutls_session_t, void *, size_t);
	const char *(*strerror)(int);
	gnutls_alert_description_t (*alert_get)(gnutls_session_t);
	const char *(*alert_name)(gnutls_alert_description_t);
	gnutls_free_function *free_fn; /* a variable of the library's */
	int state;		       /* 0 not tried, 1 ready, -1 failed */
	char why[256];
} gt;

static pthread_once_t gt_once = PTHREAD_ONCE_INIT;

static void gt_open(void)
{
	void *h = dlopen("libgnutls.so.30", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(gt.why, sizeof(gt.why), "%s", dlerror());
		gt.state = -1;
		return;
	}
#define SYM(field, name)                                                                           \
	do {                                                                                       \
		*(void **)&gt.field = dlsym(h, name);                                              \
		if (!gt.field) {                                                                   \
			snprintf(gt.why, sizeof(gt.why), "libgnutls.so.30 has no %s", name);       \
			gt.state = -1;                                                             \
			return;                                                                    \
		}                                                                                  \
	} while (0)
	SYM(cred_alloc, "gnutls_certificate_allocate_credentials");
	SYM(cred_free, "gnutls_certificate_free_credentials");
	SYM(trust_mem, "gnutls_certificate_set_x509_trust_mem");
	SYM(system_trust, "gnutls_certificate_set_x509_system_trust");
	SYM(key_mem2, "gnutls_certificate_set_x509_key_mem2");
	SYM(init, "gnutls_init");
	SYM(deinit, "gnutls_deinit");
	SYM(default_priority, "gnutls_set_default_priority");
	SYM(cred_set, "gnutls_credentials_set");
	SYM(server_name_set, "gnutls_server_name_set");
	SYM(verify_cert, "gnutls_session_set_verify_cert");
	SYM(verify_status, "gnutls_session_get_verify_cert_status");
	SYM(status_print, "gnutls_certificate_verification_status_print");
	SYM(transport_int2, "gnutls_transport_set_int2");
	SYM(handshake, "gnutls_handshake");
	SYM(direction, "gnutls_record_get_direction");
	SYM(send, "gnutls_record_send");
	SYM(recv, "gnutls_record_recv");
	SYM(strerror, "gnutls_strerror");
	SYM(alert_get, "gnutls_alert_get");
	SYM(alert_name, "gnutls_alert_get_name");
	SYM(free_fn, "gnutls_free");
#undef SYM
	gt.state = 1;
}

struct xp_tls_trust {
	gnutls_certificate_credentials_t cred;
	char *from; /* the CA file, or "the system's CAs" */
	const char *where; /* where the CA file is set, for messages (static) */
};

struct xp_tls {
	gnutls_session_t s;
	struct xp_tls_trust *trust;
	char why[160]; /* GnuTLS's reason for the last EPROTO */
};

int xp_tls_trust_load(const char *ca_file, struct xp_tls_trust **out, struct xp_err *err)
{
	*out = NULL;
	pthread_once(&gt_once, gt_open);
	if (gt.state != 1)
		return xp_errf(err, XP_EUNSUPP, "https:// needs GnuTLS (libgnutls30): %s", gt.why);
	char *pem = NULL;
	size_t len = 0;
	if (ca_file && xp_read_file(ca_file, CA_FILE_MAX, &pem, &len, err) < 0) {
		xp_err_prefix(err, "CA file: ");
		return err->code;
	}
	struct xp_tls_trust *t = XNEW(struct xp_tls_trust);
	int n = gt.cred_alloc(&t->cred);
	if (n == 0 && ca_file) {
		gnutls_datum_t d = { (unsigned char *)pem, (unsigned)len };
		n = gt.trust_mem(t->cred, &d, GNUTLS_X509_FMT_PEM);
		if (n == 0)
			n = -1;
	} else if (n == 0) {
		n = gt.system_trust(t->cred);
	}
	free(pem);
	if (n < 0) {
		if (t->cred)
			gt.cred_free(t->cred);
		free(t);
		if (!ca_file)
			return xp_errf(err, XP_EINVAL,
				       "cannot load the system's CA certificates: %s",
				       gt.strerror(n));
		return xp_errf(err, XP_EINVAL, "CA file %s: %s", ca_file,
			       n == -1 ? "no PEM certificate in it" : gt.strerror(n));
	}
	t->from = xstrdup(ca_file ? ca_file : "the system's CA certificates");
	t->where = "--ca, $XPOOL_CA or 'ca:' in the config file";
	*out = t;
	return 0;
}

void xp_tls_trust_where(struct xp_tls_trust *t, const char *where)
{
	t->where = where;
}

int xp_tls_trust_identity(struct xp_tls_trust *t, const char *cert_file, const char *key_file,
			  struct xp_err *err)
{
	char *cert = NULL, *key = NULL;
	size_t cl = 0, kl = 0;
	if (xp_read_file(cert_file, CA_FILE_MAX, &cert, &cl, err) < 0) {
		xp_err_prefix(err, "client certificate: ");
		return err->code;
	}
	if (xp_read_file(key_file, CA_FILE_MAX, &key, &kl, err) < 0) {
		free(cert);
		xp_err_prefix(err, "client key: ");
		return err->code;
	}
	gnutls_datum_t c = { (unsigned char *)cert, (unsigned)cl };
	gnutls_datum_t k = { (unsigned char *)key, (unsigned)kl };
	int n = gt.key_mem2(t->cred, &c, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
	free(cert);
	free(key);
	if (n < 0)
		return xp_errf(err, XP_EINVAL, "client certificate %s with key %s: %s", cert_file,
			       key_file, gt.strerror(n));
	return 0;
}

void xp_tls_trust_free(struct xp_tls_trust *t)
{
	if (!t)
		return;
	gt.cred_free(t->cred);
	free(t->from);
	free(t);
}

static int is_ip(const char *host)
{
	unsigned char buf[16];
	return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

int xp_tls_start(struct xp_tls_trust *trust, int fd, const char *host, struct xp_tls **out,
		 struct xp_err *err)
{
	struct xp_tls *s = XNEW(struct xp_tls);
	int rc = gt.init(&s->s, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
	if (rc == 0)
		rc = gt.default_priority(s->s);
	if (rc == 0)
		rc = gt.cred_set(s->s, GNUTLS_CRD_CERTIFICATE, trust->cred);
	if (rc == 0 && !is_ip(host))
		rc = gt.server_name_set(s->s, GNUTLS_NAME_DNS, host, strlen(host));
	if (rc < 0) {
		xp_errf(err, XP_EINTERNAL, "TLS: cannot set up a session: %s", gt.strerror(rc));
		xp_tls_end(s);
		return err->code;
	}
	gt.verify_cert(s->s, host, 0);
	gt.transport_int2(s->s, fd, fd);
	s->trust = trust;
	*out = s;
	return 0;
}

void xp_tls_end(struct xp_tls *s)
{
	if (!s)
		return;
	if (s->s)
		gt.deinit(s->s);
	free(s);
}

/* A failed verification: which check failed, against which CAs. It is
 * XP_EUNAVAIL (no controller this client trusts answers), not XP_EAUTH,
 * which means a refused token. */
static int verify_failed(struct xp_tls *s, const char *url, struct xp_err *err)
{
	gnutls_datum_t out = { NULL, 0 };
	char why[300];
	unsigned st = gt.verify_status(s->s);
	if (gt.status_print(st, GNUTLS_CRT_X509, &out, 0) < 0 || !out.data) {
		snprintf(why, sizeof(why), "status 0x%x", st);
	} else {
		snprintf(why, sizeof(why), "%s", (char *)out.data);
		(*gt.free_fn)(out.data);
	}
	size_t n = strlen(why);
	while (n && (why[n - 1] == ' ' || why[n - 1] == '\n'))
		why[--n] = '\0';
	return xp_errf(err, XP_EUNAVAIL,
		       "TLS: the certificate of %s failed verification against %s: %s (the CA "
		       "file: %s)",
		       url, s->trust->from, why, s->trust->where);
}

int xp_tls_handshake(struct xp_tls *s, const char *url, struct xp_err *err)
{
	int rc = gt.handshake(s->s);
	if (rc == 0)
		return 0;
	if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED)
		return gt.direction(s->s) ? XP_TLS_WANT_WRITE : XP_TLS_WANT_READ;
	if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR)
		return verify_failed(s, url, err);
	if (rc == GNUTLS_E_FATAL_ALERT_RECEIVED || rc == GNUTLS_E_WARNING_ALERT_RECEIVED)
		return xp_errf(err, XP_EUNAVAIL, "TLS: %s refused the handshake: alert %s", url,
			       gt.alert_name(gt.alert_get(s->s)));
	if (rc == GNUTLS_E_UNEXPECTED_PACKET_LENGTH || rc == GNUTLS_E_UNSUPPORTED_VERSION_PACKET)
		return xp_errf(err, XP_EUNAVAIL,
			       "TLS: %s did not answer in TLS (%s): is it an http:// controller?",
			       url, gt.strerror(rc));
	return xp_errf(err, XP_EUNAVAIL, "TLS: the handshake with %s failed: %s", url,
		       gt.strerror(rc));
}

static ssize_t io_result(struct xp_tls *s, ssize_t r)
{
	if (r >= 0)
		return r;
	if (r == GNUTLS_E_AGAIN) {
		errno = EAGAIN;
		return -1;
	}
	if (r == GNUTLS_E_INTERRUPTED) {
		errno = EINTR;
		return -1;
	}
	if (r == GNUTLS_E_PREMATURE_TERMINATION)
		return 0; /* closed without close_notify: an end (see the top) */
	if (r == GNUTLS_E_PULL_ERROR || r == GNUTLS_E_PUSH_ERROR) {
		/* the socket failed under GnuTLS (a reset): as plain TCP says it,
		 * so http1.c resends what may repeat */
		errno = r == GNUTLS_E_PULL_ERROR ? ECONNRESET : EPIPE;
		return -1;
	}
	if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) /* TLS 1.3: a refused client certificate */
		snprintf(s->why, sizeof(s->why), "TLS: the peer sent the alert '%s'",
			 gt.alert_name(gt.alert_get(s->s)));
	else
		snprintf(s->why, sizeof(s->why), "TLS: %s", gt.strerror((int)r));
	errno = EPROTO;
	return -1;
}

ssize_t xp_tls_send(struct xp_tls *s, const void *p, size_t n)
{
	return io_result(s, gt.send(s->s, p, n));
}

ssize_t xp_tls_recv(struct xp_tls *s, void *p, size_t n)
{
	return io_result(s, gt.recv(s->s, p, n));
}

int xp_tls_want_write(const struct xp_tls *s)
{
	return gt.direction(s->s) == 1;
}

const char *xp_tls_why(const struct xp_tls *s)
{
	return s->why[0] ? s->why : "TLS error";
}
