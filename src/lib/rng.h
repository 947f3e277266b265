/*
 * rng: a seeded pseudo-random stream (xoshiro256**, seeded by splitmix64).
 *
 * The scheduling core never seeds or stores a generator of its own: callers
 * pass a struct xp_rng in, so a run is reproduced by its seed alone.
 */
#ifndef XP_RNG_H
#define XP_RNG_H

#include <stddef.h>
#include <stdint.h>

struct xp_rng {
	uint64_t s[4];
};

void xp_rng_seed(struct xp_rng *r, uint64_t seed);
uint64_t xp_rng_next(struct xp_rng *r);
/* Uniform integer in [0, n); n must be > 0. Unbiased (Lemire's method). */
uint64_t xp_rng_below(struct xp_rng *r, uint64_t n);
/* Uniform double in [0, 1). */
double xp_rng_double(struct xp_rng *r);
/* Fisher-Yates shuffle of n elements of the given size. */
void xp_rng_shuffle(struct xp_rng *r, void *base, size_t n, size_t size);
/* perm[i] = a uniformly random permutation of 0..n-1. */
void xp_rng_perm(struct xp_rng *r, uint32_t *perm, size_t n);

#endif
