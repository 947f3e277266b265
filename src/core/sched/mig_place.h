/*
 * mig_place: where a MIG slice goes - a GPU and a placement {start, size}
 * on its slice lattice (core/model/mig.h), chosen by one of three policies
 * (issue 21 part 3, docs/design/mig.md):
 *
 *   first-fit  the lowest GPU, then the lowest start, that can take the
 *              request's smallest fitting profile (what a dynamic MIG
 *              manager does when it creates the first instance that fits);
 *   best-fit   HAMi's: the GPU with the fewest free memory slices that can
 *              take it, then the lowest start;
 *   xpool      FGD's idea on the lattice: every (GPU, placement) candidate
 *              is scored by the expected loss of placeability of the
 *              request mix, sum over kinds k of w[k] x (room(k) before -
 *              room(k) after) on that GPU, where room(k) is how many more
 *              k instances fit together (xp_mig_room) and w[k] the
 *              probability that a request asks for k. The least loss wins;
 *              ties go to the lowest GPU, then the lowest start.
 *
 * A request is a size (compute milli of the GPU, memory MiB); each GPU
 * turns it into its own table's smallest fitting profile. Pure: reads the
 * GPUs, writes only *out.
 */
#ifndef XP_MIG_PLACE_H
#define XP_MIG_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "../model/mig.h"

#define XP_MIG_MIX_TABLES 8 /* >= xp_mig_ntables() */

enum { XP_MIG_FIRST_FIT, XP_MIG_BEST_FIT, XP_MIG_XPOOL, XP_MIG_NPOLICIES };

/* The request mix the xpool policy scores against: w[table][kind], the
 * probability that a request becomes kind on a GPU of built-in table
 * `table` (xp_mig_table_index). Rows need not be normalised. */
struct xp_mig_mix {
	double w[XP_MIG_MIX_TABLES][XP_MIG_NKINDS];
};

struct xp_mig_pick {
	uint32_t gpu;
	uint8_t kind, start;
	double loss; /* xpool: the expected placeability lost; others 0 */
};

/* "first-fit", "hami-best-fit", "xpool"; parse: -1 when unknown */
const char *xp_mig_policy_name(int policy);
int xp_mig_policy_parse(const char *s);

/* Choose where a request of compute_milli and mem_mib goes among n GPUs;
 * 0 with *out, or XP_ENOSPC when no GPU can take it now. mix is read by
 * the xpool policy only (NULL: every kind weighs 1). */
int xp_mig_choose(int policy, const struct xp_mig_gpu *gpus, size_t n, uint32_t compute_milli,
		  uint64_t mem_mib, const struct xp_mig_mix *mix, struct xp_mig_pick *out);

/* The xpool policy's potential of one GPU: sum over kinds of w[kind] x
 * room(kind). */
double xp_mig_potential(const struct xp_mig_gpu *g, const double *w);

#endif
