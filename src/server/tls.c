/*
 * tls: the controller's side of TLS - its certificate and key read and
 * checked for libmicrohttpd (--tls-cert, --tls-key), and the small CA that
 * `xpool dev --tls` makes in its data directory (GnuTLS's x509 API, no
 * openssl command). See docs/design/tls.md.
 *
 * Keys are ECDSA P-256: made in a millisecond (an RSA key takes a good
 * part of a second), and every TLS 1.2/1.3 client takes them. Key files
 * are written 0600 through xp_afile (fsynced, renamed into place), so a
 * crash never leaves half a key. A dev certificate is valid from an hour
 * ago (clocks differ a little) for a year; the CA for ten.
 *
 * Errors name the file and the reason: an unreadable file, one without a
 * PEM certificate or key, a key that is not the certificate's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>

#include "../lib/fileio.h"
#include "../lib/xalloc.h"
#include "ctl.h"

#define PEM_MAX (1u << 20)

int xp_tls_server_load(const char *cert_file, const char *key_file, char **cert_pem, char **key_pem,
		       struct xp_err *err)
{
	size_t clen = 0, klen = 0;
	*cert_pem = *key_pem = NULL;
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
		return xp_errf(err, XP_EUNSUPP,
			       "--tls-cert: this libmicrohttpd was built without TLS support");
	if (xp_read_file(cert_file, PEM_MAX, cert_pem, &clen, err) < 0) {
		xp_err_prefix(err, "--tls-cert: ");
		return err->code;
	}
	if (xp_read_file(key_file, PEM_MAX, key_pem, &klen, err) < 0) {
		xp_err_prefix(err, "--tls-key: ");
		goto fail;
	}
	/* the pair as libmicrohttpd will load it: a clear error now, not a
	 * daemon that fails to start with no reason */
	gnutls_certificate_credentials_t cred;
	gnutls_datum_t c = { (unsigned char *)*cert_pem, (unsigned)clen };
	gnutls_datum_t k = { (unsigned char *)*key_pem, (unsigned)klen };
	int rc = gnutls_certificate_allocate_credentials(&cred);
	if (rc == 0) {
		rc = gnutls_certificate_set_x509_key_mem2(cred, &c, &k, GNUTLS_X509_FMT_PEM, NULL,
							  0);
		gnutls_certificate_free_credentials(cred);
	}
	if (rc < 0) {
		const char *why = gnutls_strerror(rc);
		if (rc == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
			xp_errf(err, XP_EINVAL, "--tls-key: %s is not the key of --tls-cert %s",
				key_file, cert_file);
		else if (rc == GNUTLS_E_BASE64_DECODING_ERROR ||
			 rc == GNUTLS_E_BASE64_UNEXPECTED_HEADER_ERROR)
			xp_errf(err, XP_EINVAL,
				"--tls-cert/--tls-key: %s or %s is not a PEM certificate/key: %s",
				cert_file, key_file, why);
		else
			xp_errf(err, XP_EINVAL, "--tls-cert %s / --tls-key %s: %s", cert_file,
				key_file, why);
		goto fail;
	}
	return 0;
fail:
	free(*cert_pem);
	free(*key_pem);
	*cert_pem = *key_pem = NULL;
	return err->code;
}

/* ---- making certificates ---- */

/* Write d to path (mode), atomically */
static int write_datum(const char *path, const gnutls_datum_t *d, unsigned mode, struct xp_err *err)
{
	struct xp_afile af = { 0 };
	if (xp_afile_open_mode(&af, path, mode, err) < 0)
		return err->code;
	if (fwrite(d->data, 1, d->size, af.f) != d->size) {
		xp_afile_abort(&af);
		return xp_errf(err, XP_EIO, "%s: short write", path);
	}
	return xp_afile_commit(&af, err);
}

static int gt_fail(struct xp_err *err, const char *what, int rc)
{
	return xp_errf(err, XP_EINTERNAL, "TLS: %s: %s", what, gnutls_strerror(rc));
}

/* A new ECDSA P-256 key */
static int new_key(gnutls_x509_privkey_t *key, struct xp_err *err)
{
	int rc = gnutls_x509_privkey_init(key);
	if (rc == 0)
		rc = gnutls_x509_privkey_generate(
			*key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
	return rc < 0 ? gt_fail(err, "generating a key", rc) : 0;
}

/* The fields every certificate here has: a random serial, validity from an
 * hour ago for days, the name, the key and its id */
static int crt_base(gnutls_x509_crt_t crt, const char *dn, gnutls_x509_privkey_t key, int days,
		    struct xp_err *err)
{
	unsigned char serial[16], id[64];
	size_t idlen = sizeof(id);
	time_t now = time(NULL);
	int rc = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial));
	serial[0] &= 0x7f; /* a positive number */
	if (rc == 0)
		rc = gnutls_x509_crt_set_version(crt, 3);
	if (rc == 0)
		rc = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
	if (rc == 0)
		rc = gnutls_x509_crt_set_activation_time(crt, now - 3600);
	if (rc == 0)
		rc = gnutls_x509_crt_set_expiration_time(crt, now + (time_t)days * 86400);
	if (rc == 0)
		rc = gnutls_x509_crt_set_dn(crt, dn, NULL);
	if (rc == 0)
		rc = gnutls_x509_crt_set_key(crt, key);
	if (rc == 0)
		rc = gnutls_x509_crt_get_key_id(crt, 0, id, &idlen);
	if (rc == 0)
		rc = gnutls_x509_crt_set_subject_key_id(crt, id, idlen);
	return rc < 0 ? gt_fail(err, "building a certificate", rc) : 0;
}

/* Export crt (0644) and key (0600) as PEM */
static int save_pair(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, const char *cert_file,
		     const char *key_file, struct xp_err *err)
{
	gnutls_datum_t c = { NULL, 0 }, k = { NULL, 0 };
	int rc = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &c);
	if (rc == 0)
		rc = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, &k);
	if (rc < 0)
		rc = gt_fail(err, "exporting a certificate", rc);
	else if ((rc = write_datum(key_file, &k, 0600, err)) == 0)
		rc = write_datum(cert_file, &c, 0644, err);
	gnutls_free(c.data);
	gnutls_free(k.data);
	return rc;
}

int xp_tls_make_ca(const char *cert_file, const char *key_file, const char *name,
		   struct xp_err *err)
{
	gnutls_x509_privkey_t key = NULL;
	gnutls_x509_crt_t crt = NULL;
	char dn[300];
	snprintf(dn, sizeof(dn), "CN=%s", name);
	int rc = new_key(&key, err);
	if (rc == 0 && (rc = gnutls_x509_crt_init(&crt)) < 0)
		rc = gt_fail(err, "a certificate", rc);
	if (rc == 0)
		rc = crt_base(crt, dn, key, 3650, err);
	if (rc == 0) {
		rc = gnutls_x509_crt_set_basic_constraints(crt, 1, 0);
		if (rc == 0)
			rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN |
									GNUTLS_KEY_CRL_SIGN);
		if (rc == 0)
			rc = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0);
		if (rc < 0)
			rc = gt_fail(err, "signing the CA", rc);
	}
	if (rc == 0)
		rc = save_pair(crt, key, cert_file, key_file, err);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_privkey_deinit(key);
	return rc;
}

/* The CA's certificate and key from their PEM files */
static int load_ca(const char *cert_file, const char *key_file, gnutls_x509_crt_t *crt,
		   gnutls_x509_privkey_t *key, struct xp_err *err)
{
	char *c = NULL, *k = NULL;
	size_t cl = 0, kl = 0;
	int rc = xp_read_file(cert_file, PEM_MAX, &c, &cl, err);
	if (rc == 0)
		rc = xp_read_file(key_file, PEM_MAX, &k, &kl, err);
	if (rc == 0) {
		gnutls_datum_t cd = { (unsigned char *)c, (unsigned)cl };
		gnutls_datum_t kd = { (unsigned char *)k, (unsigned)kl };
		gnutls_x509_crt_init(crt);
		gnutls_x509_privkey_init(key);
		int g = gnutls_x509_crt_import(*crt, &cd, GNUTLS_X509_FMT_PEM);
		if (g < 0)
			rc = xp_errf(err, XP_EINVAL, "CA certificate %s: %s", cert_file,
				     gnutls_strerror(g));
		else if ((g = gnutls_x509_privkey_import(*key, &kd, GNUTLS_X509_FMT_PEM)) < 0)
			rc = xp_errf(err, XP_EINVAL, "CA key %s: %s", key_file, gnutls_strerror(g));
	}
	free(c);
	free(k);
	return rc;
}

/* hosts into the certificate's subject alternative names: an IP literal
 * as an address, anything else as a DNS name */
static int add_names(gnutls_x509_crt_t crt, const char *const *hosts, size_t n)
{
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		unsigned char ip[16];
		if (inet_pton(AF_INET, hosts[i], ip) == 1)
			rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4,
								  GNUTLS_FSAN_APPEND);
		else if (inet_pton(AF_INET6, hosts[i], ip) == 1)
			rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 16,
								  GNUTLS_FSAN_APPEND);
		else
			rc = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, hosts[i],
								  (unsigned)strlen(hosts[i]),
								  GNUTLS_FSAN_APPEND);
	}
	return rc;
}

int xp_tls_make_cert(const char *ca_cert, const char *ca_key, const char *const *hosts, size_t n,
		     const char *cert_file, const char *key_file, struct xp_err *err)
{
	gnutls_x509_crt_t ca = NULL, crt = NULL;
	gnutls_x509_privkey_t cakey = NULL, key = NULL;
	unsigned char id[64];
	size_t idlen = sizeof(id);
	char dn[300];
	if (n == 0)
		return xp_errf(err, XP_EINVAL, "a server certificate needs a host name");
	snprintf(dn, sizeof(dn), "CN=%s", hosts[0]);
	int rc = load_ca(ca_cert, ca_key, &ca, &cakey, err);
	if (rc == 0)
		rc = new_key(&key, err);
	if (rc == 0 && (rc = gnutls_x509_crt_init(&crt)) < 0)
		rc = gt_fail(err, "a certificate", rc);
	if (rc == 0)
		rc = crt_base(crt, dn, key, 365, err);
	if (rc == 0) {
		rc = gnutls_x509_crt_set_basic_constraints(crt, 0, -1);
		if (rc == 0)
			rc = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE);
		if (rc == 0)
			rc = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0);
		/* a client too: etcd members with --client-cert-auth dial themselves (their
		 * JSON gateway) with their server certificate, and a controller may show its
		 * own to etcd (--etcd-cert) */
		if (rc == 0)
			rc = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_CLIENT, 0);
		if (rc == 0)
			rc = add_names(crt, hosts, n);
		if (rc == 0)
			rc = gnutls_x509_crt_get_subject_key_id(ca, id, &idlen, NULL);
		if (rc == 0)
			rc = gnutls_x509_crt_set_authority_key_id(crt, id, idlen);
		if (rc == 0)
			rc = gnutls_x509_crt_sign2(crt, ca, cakey, GNUTLS_DIG_SHA256, 0);
		if (rc < 0)
			rc = gt_fail(err, "signing the server certificate", rc);
	}
	if (rc == 0)
		rc = save_pair(crt, key, cert_file, key_file, err);
	gnutls_x509_crt_deinit(crt);
	gnutls_x509_crt_deinit(ca);
	gnutls_x509_privkey_deinit(key);
	gnutls_x509_privkey_deinit(cakey);
	return rc;
}

int xp_tls_dev_files(const char *data, const char *listen_host, struct xp_tls_files *f,
		     struct xp_err *err)
{
	snprintf(f->dir, sizeof(f->dir), "%s/tls", data);
	snprintf(f->ca, sizeof(f->ca), "%s/ca.pem", f->dir);
	snprintf(f->ca_key, sizeof(f->ca_key), "%s/ca.key", f->dir);
	snprintf(f->cert, sizeof(f->cert), "%s/server.pem", f->dir);
	snprintf(f->key, sizeof(f->key), "%s/server.key", f->dir);
	/* mkdir -p, 0700 for what it makes (the store makes DATA so, later) */
	for (char *p = f->dir + 1;; p++) {
		char c = *p;
		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		int bad = mkdir(f->dir, 0700) < 0 && errno != EEXIST;
		*p = c;
		if (bad)
			return xp_errf(err, -errno, "%s: %s", f->dir, strerror(errno));
		if (!c)
			break;
	}
	int rc = 0;
	if (access(f->ca, R_OK) != 0 || access(f->ca_key, R_OK) != 0)
		rc = xp_tls_make_ca(f->ca, f->ca_key, "xpool dev CA", err);
	if (rc == 0 && (access(f->cert, R_OK) != 0 || access(f->key, R_OK) != 0)) {
		const char *hosts[4] = { "localhost", "127.0.0.1", "::1", NULL };
		size_t n = 3;
		if (listen_host && *listen_host && strcmp(listen_host, "0.0.0.0") &&
		    strcmp(listen_host, "localhost") && strcmp(listen_host, "127.0.0.1"))
			hosts[n++] = listen_host;
		rc = xp_tls_make_cert(f->ca, f->ca_key, hosts, n, f->cert, f->key, err);
	}
	return rc;
}
