/*
 * pyrand: CPython's random.Random (see pyrand.h). MT19937 as Matsumoto and
 * Nishimura published it, seeded the way CPython's random_seed() does:
 * the seed's absolute value split into 32-bit words, least significant
 * first, through init_by_array.
 */
#include "pyrand.h"

#define N 624
#define M 397

static void init_genrand(struct xp_pyrand *r, uint32_t s)
{
	r->mt[0] = s;
	for (int i = 1; i < N; i++)
		r->mt[i] = 1812433253U * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
	r->i = N;
}

static void init_by_array(struct xp_pyrand *r, const uint32_t *key, int len)
{
	int i = 1, j = 0, k = N > len ? N : len;
	init_genrand(r, 19650218U);
	for (; k; k--) {
		r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1664525U)) + key[j] +
			   (uint32_t)j;
		i++;
		j++;
		if (i >= N) {
			r->mt[0] = r->mt[N - 1];
			i = 1;
		}
		if (j >= len)
			j = 0;
	}
	for (k = N - 1; k; k--) {
		r->mt[i] = (r->mt[i] ^ ((r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) * 1566083941U)) -
			   (uint32_t)i;
		i++;
		if (i >= N) {
			r->mt[0] = r->mt[N - 1];
			i = 1;
		}
	}
	r->mt[0] = 0x80000000U;
	r->i = N;
}

void xp_pyrand_seed(struct xp_pyrand *r, uint64_t seed)
{
	uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
	init_by_array(r, key, key[1] ? 2 : 1);
}

uint32_t xp_pyrand_u32(struct xp_pyrand *r)
{
	static const uint32_t mag01[2] = { 0, 0x9908b0dfU };
	uint32_t y;
	if (r->i >= N) {
		int k;
		for (k = 0; k < N - M; k++) {
			y = (r->mt[k] & 0x80000000U) | (r->mt[k + 1] & 0x7fffffffU);
			r->mt[k] = r->mt[k + M] ^ (y >> 1) ^ mag01[y & 1];
		}
		for (; k < N - 1; k++) {
			y = (r->mt[k] & 0x80000000U) | (r->mt[k + 1] & 0x7fffffffU);
			r->mt[k] = r->mt[k + (M - N)] ^ (y >> 1) ^ mag01[y & 1];
		}
		y = (r->mt[N - 1] & 0x80000000U) | (r->mt[0] & 0x7fffffffU);
		r->mt[N - 1] = r->mt[M - 1] ^ (y >> 1) ^ mag01[y & 1];
		r->i = 0;
	}
	y = r->mt[r->i++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680U;
	y ^= (y << 15) & 0xefc60000U;
	y ^= y >> 18;
	return y;
}

double xp_pyrand_random(struct xp_pyrand *r)
{
	uint32_t a = xp_pyrand_u32(r) >> 5, b = xp_pyrand_u32(r) >> 6;
	return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

uint32_t xp_pyrand_bits(struct xp_pyrand *r, int k)
{
	return xp_pyrand_u32(r) >> (32 - k);
}

uint32_t xp_pyrand_below(struct xp_pyrand *r, uint32_t n)
{
	int k = 0;
	while (k < 32 && (n >> k))
		k++; /* n.bit_length() */
	uint32_t v = xp_pyrand_bits(r, k);
	while (v >= n)
		v = xp_pyrand_bits(r, k);
	return v;
}

double xp_pyrand_uniform(struct xp_pyrand *r, double a, double b)
{
	return a + (b - a) * xp_pyrand_random(r);
}
