/*
 * bound: an upper bound on the accelerator milli that a set of requests can
 * hold at once on a cluster, by any choice of which to place and where; so
 * a lower bound on the unallocated share every policy leaves
 * (docs/design/bound.md has the derivation).
 *
 * It is the optimum of one linear programme (src/lib/lp.c) that relaxes
 * the placement two ways at once: per node type, CPU, memory and device
 * milli are pooled over the type's nodes (a request counts on a type only
 * if one node of it could take it alone); and over all accelerators,
 * fractions are packed by the configuration LP of bin packing (each device
 * holds one multiset of fraction sizes that fits in 1000 milli), which is
 * what makes the slivers an 810-milli request leaves count. Requests
 * without devices are left out (they add no milli).
 *
 * Pure: numbers in, a number out; the inputs are borrowed.
 */
#ifndef XP_BOUND_H
#define XP_BOUND_H

#include <stddef.h>

#include "../core/model/model.h"
#include "../lib/err.h"

struct xp_bound_info {
	size_t shapes, types, configs; /* the LP's parts */
	size_t rows, cols;
	int configs_dropped; /* too many configurations: fractions pooled as fluid */
};

/* On 0, *milli >= the most device milli r[0..n) can hold on c at once. */
int xp_bound_milli(const struct xp_cluster *c, const struct xp_request *r, size_t n, double *milli,
		   struct xp_bound_info *info, struct xp_err *err);

#endif
