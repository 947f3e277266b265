/*
 * mig_place: the three MIG placement policies (mig_place.h). A request's
 * candidates are every GPU's free placements of its smallest fitting
 * profile: at most 7 per GPU, so every policy scans them all; xpool's
 * score costs one potential (7 kinds x at most 7 placements) per
 * candidate, and the GPU's own potential once.
 */
#include "mig_place.h"

#include <string.h>

static const char *const names[XP_MIG_NPOLICIES] = { "first-fit", "hami-best-fit", "xpool" };

const char *xp_mig_policy_name(int policy)
{
	return policy >= 0 && policy < XP_MIG_NPOLICIES ? names[policy] : "?";
}

int xp_mig_policy_parse(const char *s)
{
	for (int i = 0; s && i < XP_MIG_NPOLICIES; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

double xp_mig_potential(const struct xp_mig_gpu *g, const double *w)
{
	double phi = 0;
	for (int k = 0; k < XP_MIG_NKINDS; k++)
		if (!w || w[k] > 0)
			phi += (w ? w[k] : 1) * xp_mig_room(g, k);
	return phi;
}

/* is candidate (loss, gpu, start) better than the best so far? */
static int better(int policy, double loss, unsigned freeslices, const struct xp_mig_pick *best,
		  unsigned best_free, int have)
{
	if (!have)
		return 1;
	switch (policy) {
	case XP_MIG_BEST_FIT:
		return freeslices < best_free; /* ties: the earlier (lower) candidate */
	case XP_MIG_XPOOL:
		return loss < best->loss - 1e-12;
	default:
		return 0; /* first-fit: the first candidate found */
	}
}

int xp_mig_choose(int policy, const struct xp_mig_gpu *gpus, size_t n, uint32_t compute_milli,
		  uint64_t mem_mib, const struct xp_mig_mix *mix, struct xp_mig_pick *out)
{
	struct xp_mig_placement pl[XP_MIG_MAX_PLACEMENTS];
	unsigned best_free = 0;
	int have = 0;
	for (size_t i = 0; i < n; i++) {
		const struct xp_mig_gpu *g = &gpus[i];
		int kind = xp_mig_smallest(g->t, compute_milli, mem_mib);
		size_t np = kind < 0 ? 0 : xp_mig_free_placements(g, kind, pl);
		if (!np)
			continue;
		if (policy == XP_MIG_FIRST_FIT) {
			*out = (struct xp_mig_pick){ (uint32_t)i, (uint8_t)kind, pl[0].start, 0 };
			return 0;
		}
		const double *w = mix ? mix->w[xp_mig_table_index(g->t)] : NULL;
		double phi = policy == XP_MIG_XPOOL ? xp_mig_potential(g, w) : 0;
		unsigned freeslices = XP_MIG_MEM_SLICES - (unsigned)__builtin_popcount(g->mem);
		for (size_t j = 0; j < np; j++) {
			double loss = 0;
			if (policy == XP_MIG_XPOOL) {
				struct xp_mig_gpu after = *g;
				xp_mig_place(&after, kind, pl[j].start, NULL);
				loss = phi - xp_mig_potential(&after, w);
			}
			if (better(policy, loss, freeslices, out, best_free, have)) {
				*out = (struct xp_mig_pick){ (uint32_t)i, (uint8_t)kind,
							     pl[j].start, loss };
				best_free = freeslices;
				have = 1;
			}
		}
	}
	return have ? 0 : XP_ENOSPC;
}
