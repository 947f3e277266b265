/* hash: FNV-1a over bytes, for the hash tables of the util layer and above. */
#ifndef XP_HASH_H
#define XP_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t xp_hash_bytes(const void *p, size_t len)
{
	const unsigned char *s = p;
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < len; i++) {
		h ^= s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

#endif
