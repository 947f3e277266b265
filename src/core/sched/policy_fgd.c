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
 *
 * xpool's policy (issue 6, docs/design/policy-notes.md) is the same machinery
 * over a measure that also sees what F_n(M) does not:
 *   G_n = F_n(M) + max(0, L_n - c_n / rho) - pi_t * L_n
 * where rho is M's CPU per device milli: free devices beyond what the
 * node's free CPU can feed at M's mix will be stranded by CPU (an
 * empty node whose CPU is short of its devices counts too). pi_t is the
 * pressure of M's model-constrained demand on the node's type, so that
 * devices others cannot do without are worth keeping free. Its scores are
 * trunc(40 sigmoid(delta / 3000)): coarser than FGD's, so more decisions
 * go to the rank tie-break, which consolidates.
 *
 * mcts (issue 24) is xpool's score and measure plus the batch optimiser of
 * mcts.c: one request at a time it decides exactly as xpool does.
 */
#include "sched_int.h"

#include <math.h>

struct measure {
	double levels, scale;	 /* score = trunc(levels * sigmoid(delta / scale)) */
	double strand, pressure; /* weights of G_n's terms; both 0: F_n(M) */
};

static const struct measure fgd_measure = { 100, 1000, 0, 0 };
/* docs/design/scheduler.md and tests/ref_sched.c state these weights as 1 */
static const struct measure xpool_measure = { 40, 3000, 1, 1 };

static int32_t quantise(const struct measure *me, double delta)
{
	return (int32_t)(me->levels * (1.0 / (1.0 + exp(-delta / me->scale))));
}

/* G_n - F_n(M) for a node of type t with free CPU cpu and free milli L. */
static double extension(const struct xp_sched *s, const struct measure *me, uint32_t t, int64_t cpu,
			double L)
{
	double rho = s->m_cpu_per_milli, v = 0;
	if (rho > 0 && L - (double)cpu / rho > 0)
		v += me->strand * (L - (double)cpu / rho);
	if (s->type_pressure)
		v -= me->pressure * s->type_pressure[t] * L;
	return v;
}

/* The measure of node n with free CPU cpu and devices fm / fmem. */
static double measure_of(const struct xp_sched *s, const struct measure *me, uint32_t n,
			 int64_t cpu, const uint16_t *fm, const uint64_t *fmem)
{
	const struct xp_nstate *ns = &s->ns[n];
	double f = xp_frag_eval(s, n, cpu, fm, fmem), L = 0;
	if (!me->strand && !me->pressure)
		return f;
	for (uint16_t d = 0; d < ns->ndev; d++)
		if (s->dev[ns->dev0 + d].ok && s->dev[ns->dev0 + d].accel)
			L += fm[d];
	return f + extension(s, me, ns->type, cpu, L);
}

/* The measure of node n as it is (F_n(M) is cached in ns->frag). */
static double measure_now(const struct xp_sched *s, const struct measure *me, uint32_t n)
{
	const struct xp_nstate *ns = &s->ns[n];
	if (!me->strand && !me->pressure)
		return ns->frag;
	return ns->frag + extension(s, me, ns->type, ns->cpu_free, ns->free_milli);
}

/* Best score over the devices a fraction could go to; *dev gets the device. */
static int32_t fgd_fraction(const struct xp_sched *s, const struct measure *me, uint32_t n,
			    const struct xp_shape *m, int *dev)
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
	double before = measure_now(s, me, n);

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
		uint16_t milli = xp_dev_milli(&dv[d], r);
		fm[d] = (uint16_t)(fm[d] - milli);
		fmem[d] -= r->dev_mem_mib;
		int32_t sc = quantise(me, before - measure_of(s, me, n, cpu, fm, fmem));
		fm[d] = (uint16_t)(fm[d] + milli);
		fmem[d] += r->dev_mem_mib;
		if (sc > best) {
			best = sc;
			*dev = d;
		}
	}
	return best < 0 ? 0 : best;
}

static int32_t score_with(const struct xp_sched *s, const struct measure *me, uint32_t n,
			  const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	const struct xp_dstate *dv = &s->dev[ns->dev0];
	uint16_t fm[XP_MAX_NODE_DEVS];
	uint64_t fmem[XP_MAX_NODE_DEVS];
	struct xp_alloc a;
	int dev;

	if (m->sharing)
		return fgd_fraction(s, me, n, m, &dev);
	for (uint16_t d = 0; d < ns->ndev; d++) {
		fm[d] = dv[d].free_milli;
		fmem[d] = dv[d].free_mem;
	}
	if (m->req.dev_count) {
		xp_pick_lowest(s, n, m, &a);
		for (uint16_t i = 0; i < a.ndev; i++) {
			uint16_t milli = xp_dev_milli(&dv[a.devs[i]], &m->req);
			if (milli >= XP_MILLI) {
				fm[a.devs[i]] = 0;
				fmem[a.devs[i]] = 0;
			} else { /* one replica of a time-sliced device */
				fm[a.devs[i]] = (uint16_t)(fm[a.devs[i]] - milli);
				fmem[a.devs[i]] -= m->req.dev_mem_mib;
			}
		}
	}
	return quantise(me, measure_now(s, me, n) -
				    measure_of(s, me, n, ns->cpu_free - (int64_t)m->req.cpu_milli,
					       fm, fmem));
}

static void pick_with(const struct xp_sched *s, const struct measure *me, uint32_t n,
		      const struct xp_shape *m, struct xp_rng *rng, struct xp_alloc *a)
{
	if (m->sharing) {
		int dev;
		fgd_fraction(s, me, n, m, &dev);
		a->ndev = 0;
		if (dev >= 0)
			a->devs[a->ndev++] = (uint8_t)dev;
		return;
	}
	xp_pick_default(s, n, m, rng, a);
}

static int32_t fgd_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	return score_with(s, &fgd_measure, n, m);
}

static void fgd_pick(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
		     struct xp_rng *rng, struct xp_alloc *a)
{
	pick_with(s, &fgd_measure, n, m, rng, a);
}

static int32_t xpool_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	return score_with(s, &xpool_measure, n, m);
}

static void xpool_pick(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
		       struct xp_rng *rng, struct xp_alloc *a)
{
	pick_with(s, &xpool_measure, n, m, rng, a);
}

static double fgd_measure_node(const struct xp_sched *s, uint32_t n)
{
	return measure_now(s, &fgd_measure, n);
}

static double xpool_measure_node(const struct xp_sched *s, uint32_t n)
{
	return measure_now(s, &xpool_measure, n);
}

const struct xp_policy_ops xp_policy_fgd = {
	.name = "fgd",
	.label = "06-FGD",
	.about = "fragmentation gradient descent: least growth of expected GPU fragmentation",
	.flags = XP_POLICY_NEEDS_WORKLOAD,
	.score_max = 100,
	.score = fgd_score,
	.pick = fgd_pick,
	.measure = fgd_measure_node,
};

const struct xp_policy_ops xp_policy_xpool = {
	.name = "xpool",
	.label = "07-xpool",
	.about = "xpool's own: FGD's gradient over a measure that also counts devices "
		 "stranded by CPU and keeps devices of scarce models free",
	.flags = XP_POLICY_NEEDS_WORKLOAD,
	.score_max = 40,
	.score = xpool_score,
	.pick = xpool_pick,
	.measure = xpool_measure_node,
};

const struct xp_policy_ops xp_policy_mcts = {
	.name = "mcts",
	.label = "08-mcts",
	.about = "xpool's score plus a UCT search over orders and placements of each "
		 "batch (--window, --budget rollouts; budget 0 = xpool)",
	.flags = XP_POLICY_NEEDS_WORKLOAD,
	.score_max = 40,
	.score = xpool_score,
	.pick = xpool_pick,
	.measure = xpool_measure_node,
	.optimise = xp_mcts_optimise,
};
