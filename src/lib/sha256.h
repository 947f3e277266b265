/* sha256: the SHA-256 digest (FIPS 180-4), for hashing API tokens at rest. */
#ifndef XP_SHA256_H
#define XP_SHA256_H

#include <stddef.h>
#include <stdint.h>

void xp_sha256(const void *data, size_t len, uint8_t out[32]);
/* 64 lowercase hex digits and a NUL. */
void xp_sha256_hex(const void *data, size_t len, char out[65]);

#endif
