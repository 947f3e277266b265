/*
 * policy_fgd: Fragmentation Gradient Descent (Weng et al., ATC'23), as the
 * reference simulator implements it (pkg/simulator/plugin/fgd_score.go):
 * a node scores floor(100 * sigmoid((F_n(M) - F_n'(M)) / 1000)), where n' is
 * the node after the hypothetical placement, so the node whose
 * fragmentation grows least wins. A fractional request tries every device
 * with room and keeps the best (first index on ties); whole-device requests
 * take the lowest-index free devices.
 *
 * The integer quantisation is part of the policy: it creates ties that the
 * rank tie-break resolves, and both are needed to reproduce the paper.
 */
#include "sched_int.h"

#include <math.h>

static int32_t quantise(double delta)
{
	return (int32_t)(100.0 * (1.0 / (1.0 + exp(-delta / 1000.0))));
}

/* Best score over the devices a fraction could go to; *dev gets the device. */
static int32_t fgd_fraction(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
			    int *dev)
{
	const struct xp_nstate *ns = &s->ns[n];
	const struct xp_dstate *dv = &s->dev[ns->dev0];
	const struct xp_request *r = &m->req;
	uint16_t fm[XP_MAX_NODE_DEVS], seen_m[XP_MAX_NODE_DEVS];
	uint64_t fmem[XP_MAX_NODE_DEVS], seen_mem[XP_MAX_NODE_DEVS];
	uint64_t mask = xp_shape_mask(s, n, m);
	int nseen = 0, homog = s->c->nodes[n].ndevs > 0 && s->type_homog[ns->type];
	int32_t best = -1;
	int64_t cpu = ns->cpu_free - (int64_t)r->cpu_milli;

	for (uint16_t d = 0; d < ns->ndev; d++) {
		fm[d] = dv[d].free_milli;
		fmem[d] = dv[d].free_mem;
	}
	*dev = -1;
	while (mask) {
		int d = __builtin_ctzll(mask), i;
		mask &= mask - 1;
		if (!xp_dev_fits(&dv[d], r))
			continue;
		if (homog) { /* identical devices in identical states score alike */
			for (i = 0; i < nseen; i++)
				if (seen_m[i] == fm[d] && seen_mem[i] == fmem[d])
					break;
			if (i < nseen)
				continue;
			seen_m[nseen] = fm[d];
			seen_mem[nseen++] = fmem[d];
		}
		fm[d] = (uint16_t)(fm[d] - r->dev_milli);
		fmem[d] -= r->dev_mem_mib;
		int32_t sc = quantise(ns->frag - xp_frag_eval(s, n, cpu, fm, fmem));
		fm[d] = (uint16_t)(fm[d] + r->dev_milli);
		fmem[d] += r->dev_mem_mib;
		if (sc > best) {
			best = sc;
			*dev = d;
		}
	}
	return best < 0 ? 0 : best;
}

static int32_t fgd_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	const struct xp_dstate *dv = &s->dev[ns->dev0];
	uint16_t fm[XP_MAX_NODE_DEVS];
	uint64_t fmem[XP_MAX_NODE_DEVS];
	struct xp_alloc a;
	int dev;

	if (m->sharing)
		return fgd_fraction(s, n, m, &dev);
	for (uint16_t d = 0; d < ns->ndev; d++) {
		fm[d] = dv[d].free_milli;
		fmem[d] = dv[d].free_mem;
	}
	if (m->req.dev_count) {
		xp_pick_lowest(s, n, m, &a);
		for (uint16_t i = 0; i < a.ndev; i++) {
			fm[a.devs[i]] = 0;
			fmem[a.devs[i]] = 0;
		}
	}
	return quantise(ns->frag -
			xp_frag_eval(s, n, ns->cpu_free - (int64_t)m->req.cpu_milli, fm, fmem));
}

static void fgd_pick(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
		     struct xp_rng *rng, struct xp_alloc *a)
{
	if (m->sharing) {
		int dev;
		fgd_fraction(s, n, m, &dev);
		a->ndev = 0;
		if (dev >= 0)
			a->devs[a->ndev++] = (uint8_t)dev;
		return;
	}
	xp_pick_default(s, n, m, rng, a);
}

const struct xp_policy_ops xp_policy_fgd = {
	.name = "fgd",
	.label = "06-FGD",
	.about = "fragmentation gradient descent: least growth of expected GPU fragmentation",
	.flags = XP_POLICY_NEEDS_WORKLOAD,
	.score_max = 100,
	.score = fgd_score,
	.pick = fgd_pick,
};
