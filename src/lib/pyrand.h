/*
 * pyrand: CPython's `random.Random`, draw for draw - MT19937 seeded by
 * init_by_array from an integer's 32-bit words, random() with 53 bits,
 * getrandbits(), randbelow() by rejection, choice(), uniform(). Published
 * simulators (Gavel) generate their traces with it; a port that draws the
 * same numbers reproduces their seed-0 traces exactly, not just in
 * distribution (traces/gavel/PROTOCOL.md §2.3).
 */
#ifndef XP_PYRAND_H
#define XP_PYRAND_H

#include <stdint.h>

struct xp_pyrand {
	uint32_t mt[624];
	int i;
};

/* random.Random(seed) for a non-negative integer seed */
void xp_pyrand_seed(struct xp_pyrand *r, uint64_t seed);
uint32_t xp_pyrand_u32(struct xp_pyrand *r);
/* random(): [0, 1) with 53 bits */
double xp_pyrand_random(struct xp_pyrand *r);
/* getrandbits(k), 1 <= k <= 32 */
uint32_t xp_pyrand_bits(struct xp_pyrand *r, int k);
/* randbelow(n) as choice() and randrange(n) use it; n >= 1 */
uint32_t xp_pyrand_below(struct xp_pyrand *r, uint32_t n);
/* uniform(a, b) */
double xp_pyrand_uniform(struct xp_pyrand *r, double a, double b);

#endif
