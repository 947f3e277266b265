/*
 * base64: the standard alphabet with padding (RFC 4648 §4), as etcd's JSON
 * gateway writes bytes fields. The caller owns the output buffers.
 */
#ifndef XP_BASE64_H
#define XP_BASE64_H

#include <stddef.h>

#include "strbuf.h"

/* Append the encoding of p[0..n) to b. */
void xp_b64_put(struct xp_sb *b, const void *p, size_t n);
/* Decode s[0..n) into out (at least n / 4 * 3 bytes), NUL-terminated past the data (so out
 * needs one byte more); returns the decoded length, or -1 when s is not padded base64 (a bad
 * character, a length not a multiple of 4, padding in the middle). */
long xp_b64_decode(const char *s, size_t n, char *out);

#endif
