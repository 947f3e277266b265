/*
 * xp-tls-certs: certificates for the TLS tests, made by the controller's
 * own code (src/server/tls.c), never committed.
 *
 *   xp-tls-certs ca CERT KEY NAME
 *   xp-tls-certs cert CA_CERT CA_KEY CERT KEY HOST...
 */
#include <stdio.h>
#include <string.h>

#include "server/ctl.h"

int main(int argc, char **argv)
{
	struct xp_err err = { 0 };
	int rc;
	if (argc == 5 && !strcmp(argv[1], "ca"))
		rc = xp_tls_make_ca(argv[2], argv[3], argv[4], &err);
	else if (argc >= 7 && !strcmp(argv[1], "cert"))
		rc = xp_tls_make_cert(argv[2], argv[3], (const char *const *)argv + 6,
				      (size_t)(argc - 6), argv[4], argv[5], &err);
	else {
		fprintf(stderr, "usage: xp-tls-certs ca CERT KEY NAME | cert CA_CERT CA_KEY CERT "
				"KEY HOST...\n");
		return 2;
	}
	if (rc < 0) {
		fprintf(stderr, "xp-tls-certs: %s\n", err.text);
		return 1;
	}
	return 0;
}
