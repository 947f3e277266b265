/* rng: xoshiro256** (Blackman and Vigna), seeded through splitmix64. */
#include "rng.h"

#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void xp_rng_seed(struct xp_rng *r, uint64_t seed)
{
	uint64_t x = seed;
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t xp_rng_next(struct xp_rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

uint64_t xp_rng_below(struct xp_rng *r, uint64_t n)
{
	unsigned __int128 m = (unsigned __int128)xp_rng_next(r) * n;
	uint64_t lo = (uint64_t)m;
	if (lo < n) {
		uint64_t thresh = -n % n;
		while (lo < thresh) {
			m = (unsigned __int128)xp_rng_next(r) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

double xp_rng_double(struct xp_rng *r)
{
	return (double)(xp_rng_next(r) >> 11) * 0x1.0p-53;
}

void xp_rng_shuffle(struct xp_rng *r, void *base, size_t n, size_t size)
{
	unsigned char *b = base, tmp[256];
	if (n < 2)
		return;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)xp_rng_below(r, i + 1);
		if (i == j)
			continue;
		for (size_t off = 0; off < size; off += sizeof(tmp)) {
			size_t c = size - off < sizeof(tmp) ? size - off : sizeof(tmp);
			memcpy(tmp, b + i * size + off, c);
			memcpy(b + i * size + off, b + j * size + off, c);
			memcpy(b + j * size + off, tmp, c);
		}
	}
}

void xp_rng_perm(struct xp_rng *r, uint32_t *perm, size_t n)
{
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	xp_rng_shuffle(r, perm, n, sizeof(*perm));
}
