/*
 * policy_weighted: the brief's multi-factor score (docs/design/scheduler.md,
 * "weighted"). Each factor is an integer 0..10000 for (node, request):
 *
 *   affinity : (fit + locality) / 2 - fit as bestfit (little CPU and
 *              accelerator left over), locality the share of the request's
 *              devices that fit in the node's best NUMA domain;
 *   energy   : (busy + efficiency) / 2 - busy: the node already runs work
 *              (its idle power is paid), efficiency: its accelerators'
 *              peak GFLOPS per TDP watt against the cluster's best;
 *   network  : the node's off-node bandwidth against the cluster's most -
 *              for a request of 2 or more devices; a smaller one prefers
 *              the thin nodes, leaving the fat pipes to those who need them;
 *   health   : 10000 / (1 + failures), failures = the node's recorded
 *              device and node failures plus its devices unhealthy now.
 *
 * The score is their weighted mean (0..10000). The priority factor (the
 * brief's 0.3) is the job's, the same on every node: it orders jobs (the
 * cycle), not nodes, so it does not enter here.
 */
#include <string.h>

#include "../../lib/xalloc.h"
#include "policy.h"
#include "sched_int.h"

static int64_t clamp10k(int64_t v)
{
	return v < 0 ? 0 : v > 10000 ? 10000 : v;
}

static int64_t fit_factor(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	int64_t left =
		(int64_t)(5000.0 * (double)(ns->cpu_free - (int64_t)m->req.cpu_milli) /
			  s->max_cpu) +
		(int64_t)(5000.0 *
			  ((double)ns->free_milli - (double)m->req.dev_count * m->req.dev_milli) /
			  s->max_milli);
	return clamp10k(10000 - left);
}

static int64_t locality_factor(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	uint16_t k = m->req.dev_count;
	if (k <= 1)
		return 10000;
	const struct xp_nstate *ns = &s->ns[n];
	uint64_t mask = xp_shape_mask(s, n, m);
	uint32_t per[XP_MAX_NODE_DEVS] = { 0 }, best = 0;
	for (uint16_t d = 0; d < ns->ndev; d++) {
		if (!(mask >> d & 1) || !xp_dev_fits(&s->dev[ns->dev0 + d], &m->req))
			continue;
		int numa = xp_node_dev(s, n, d)->numa;
		uint32_t c = ++per[numa < 0 || numa >= XP_MAX_NODE_DEVS ? 0 : numa];
		if (c > best)
			best = c;
	}
	return clamp10k(10000 * (int64_t)best / k);
}

static int32_t weighted_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	const struct xp_node *node = &s->c->nodes[n];
	const uint32_t *w = s->opts.weights;
	int64_t f[XP_W_N] = { 0 };

	f[XP_W_AFFINITY] = (fit_factor(s, n, m) + locality_factor(s, n, m)) / 2;
	int busy = ns->cpu_free < (int64_t)node->cpu_milli;
	uint32_t bad = 0;
	for (uint16_t d = 0; d < ns->ndev; d++) {
		const struct xp_dstate *ds = &s->dev[ns->dev0 + d];
		busy |= ds->free_milli < XP_MILLI || ds->free_mem < ds->mem;
		bad += !ds->ok;
	}
	f[XP_W_ENERGY] = (busy ? 10000 : 0) / 2 +
			 (s->w_max_ppw ? 10000 * (int64_t)s->w_ppw[n] / s->w_max_ppw : 5000) / 2;
	int64_t net = s->w_max_net ? 10000 * (int64_t)s->w_net[n] / s->w_max_net : 5000;
	f[XP_W_NETWORK] = m->req.dev_count >= 2 ? net : 10000 - net;
	f[XP_W_HEALTH] = 10000 / (1 + (int64_t)s->w_fail[n] + bad);
	int64_t sum = 0, wsum = 0;
	for (int i = XP_W_AFFINITY; i < XP_W_N; i++) {
		sum += (int64_t)w[i] * f[i];
		wsum += w[i];
	}
	return wsum ? (int32_t)(sum / wsum) : 0;
}

const struct xp_policy_ops xp_policy_weighted = {
	.name = "weighted",
	.label = "weighted",
	.about = "the brief's factors: NUMA affinity and fit, energy, network, failure history",
	.score_max = 10000,
	.score = weighted_score,
};

/* per node: accelerators' mean peak GFLOPS (fp16, else fp32) per TDP watt
 * (x1000), and off-node link bandwidth */
void xp_weighted_prepare(struct xp_sched *s)
{
	s->w_ppw = XNEWV(uint32_t, s->nnodes ? s->nnodes : 1);
	s->w_net = XNEWV(uint32_t, s->nnodes ? s->nnodes : 1);
	s->w_fail = XNEWV(uint32_t, s->nnodes ? s->nnodes : 1);
	for (uint32_t n = 0; n < s->nnodes; n++) {
		const struct xp_node *node = &s->c->nodes[n];
		uint64_t ppw = 0, cnt = 0, net = 0;
		for (uint16_t d = 0; d < node->ndevs; d++) {
			const struct xp_device *dv = &node->devs[d];
			uint32_t g = dv->peak_gflops[XP_PREC_FP16] ? dv->peak_gflops[XP_PREC_FP16]
								   : dv->peak_gflops[XP_PREC_FP32];
			if (dv->cls != XP_CLASS_CPU && dv->tdp_w && g) {
				ppw += (uint64_t)g * 1000 / dv->tdp_w;
				cnt++;
			}
			for (uint16_t l = 0; l < dv->nlinks; l++)
				if (dv->links[l].peer < 0)
					net += dv->links[l].gbps;
		}
		s->w_ppw[n] = cnt ? (uint32_t)(ppw / cnt) : 0;
		s->w_net[n] = net > UINT32_MAX ? UINT32_MAX : (uint32_t)net;
		if (s->w_ppw[n] > s->w_max_ppw)
			s->w_max_ppw = s->w_ppw[n];
		if (s->w_net[n] > s->w_max_net)
			s->w_max_net = s->w_net[n];
	}
}
