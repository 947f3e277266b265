/*
 * err: one table of error codes for all of xpool.
 *
 * Functions return 0 (or a non-negative value) on success and a negative
 * code on failure. Codes in (-1000, 0) are -errno from the system; xpool's
 * own codes are listed in XP_ERR_MAP, which also gives each a name, a
 * message and the HTTP status an API reply uses for it.
 *
 * struct xp_err carries a code plus a short text naming what failed and
 * why ("nodes.csv:14: field gpu: expected an integer 0..64, got 'x'").
 * xp_errf() fills it and returns the code, so error paths are one line:
 *
 *     return xp_errf(err, XP_EINVAL, "%s:%zu: missing column '%s'", ...);
 */
#ifndef XP_ERR_H
#define XP_ERR_H

#include <stddef.h>

/* X(name, code, message, http status) */
#define XP_ERR_MAP(X)                                                                              \
	X(EINVAL, -1001, "invalid input", 400)                                                     \
	X(ERANGE, -1002, "value out of range", 400)                                                \
	X(ENOENT, -1003, "not found", 404)                                                         \
	X(EEXIST, -1004, "already exists", 409)                                                    \
	X(ENOSPC, -1005, "does not fit", 409)                                                      \
	X(ESTATE, -1006, "illegal state transition", 409)                                          \
	X(EPERM, -1007, "permission denied", 403)                                                  \
	X(EAUTH, -1008, "authentication required", 401)                                            \
	X(ETOOBIG, -1009, "input too large", 413)                                                  \
	X(EVERSION, -1010, "unsupported version", 500)                                             \
	X(ECORRUPT, -1011, "corrupt data", 500)                                                    \
	X(EUNSUPP, -1012, "not supported", 501)                                                    \
	X(EIO, -1013, "input/output error", 500)                                                   \
	X(EINTERNAL, -1014, "internal error", 500)                                                 \
	X(EUNAVAIL, -1015, "service unavailable", 503)                                             \
	X(EGONE, -1016, "no longer available", 410)                                                \
	X(ENOCONFIG, -1017, "requested node configuration is not available", 422)              \
	X(EMETHOD, -1018, "method not allowed", 405)

enum {
#define XP_ERR_ENUM(name, code, msg, http) XP_##name = (code),
	XP_ERR_MAP(XP_ERR_ENUM)
#undef XP_ERR_ENUM
};

#define XP_ERR_TEXT_MAX 512

struct xp_err {
	int code;
	char text[XP_ERR_TEXT_MAX];
};

/* Message for a code (xpool's own or -errno); never NULL. */
const char *xp_strerror(int code);
/* Symbolic name ("EINVAL"); never NULL. */
const char *xp_errname(int code);
/* HTTP status an API reply uses for the code. */
int xp_errhttp(int code);

/* Fill err (may be NULL) with code and formatted text; returns code. */
int xp_errf(struct xp_err *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Prefix err->text with formatted context ("file.yaml: " + old text). */
void xp_err_prefix(struct xp_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
