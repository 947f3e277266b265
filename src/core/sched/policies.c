/*
 * policies: the baseline placement policies and the policy registry.
 *
 * The first five are the baselines of the FGD paper, written as the
 * reference simulator computes them (pkg/simulator/plugin/, see
 * PROTOCOL.md 3.1 step 9), integer truncation included: it decides ties.
 * Their normalisers (128 vCPU, 8 GPUs in OpenB) are the cluster's largest
 * node CPU and device milli, which are those numbers on OpenB.
 * binpack and spread follow HAMi's node policies: score = (request + used) /
 * allocatable, highest (binpack) or lowest (spread) wins.
 */
#include "sched_int.h"

#include "../../lib/parse.h"

#include <stdio.h>
#include <string.h>

/* ---- random: a uniformly random feasible node (chosen by the core) ---- */

static void random_pick(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
			struct xp_rng *rng, struct xp_alloc *a)
{
	if (!m->sharing) {
		xp_pick_lowest(s, n, m, a);
		return;
	}
	const struct xp_nstate *ns = &s->ns[n];
	uint64_t mask = xp_shape_mask(s, n, m);
	uint64_t seen = 0;
	a->ndev = 0;
	while (mask) {
		int d = __builtin_ctzll(mask);
		mask &= mask - 1;
		if (!xp_dev_fits(&s->dev[ns->dev0 + d], &m->req))
			continue;
		if (xp_rng_below(rng, ++seen) == 0) { /* reservoir of one */
			a->devs[0] = (uint8_t)d;
			a->ndev = 1;
		}
	}
}

static int32_t zero_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	return 0;
}

/* ---- dotprod: Tetris' alignment, smallest dot product wins ---- */

static int32_t dotprod_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	double node0 = (double)ns->cpu_free / s->max_cpu;
	double node1 = (double)ns->free_milli / s->max_milli;
	double pod0 = (double)m->req.cpu_milli / s->max_cpu;
	double pod1 = (double)m->req.dev_count * m->req.dev_milli / s->max_milli;
	double dot = node0 * pod0 + node1 * pod1;
	return (int32_t)(100.0 * (1.0 - dot / 2.0));
}

/* ---- bestfit: least CPU and device milli left after placement ---- */

static int32_t bestfit_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	double left = 0;
	left += (double)(ns->cpu_free - (int64_t)m->req.cpu_milli) / s->max_cpu * 0.5;
	left += ((double)ns->free_milli - (double)m->req.dev_count * m->req.dev_milli) /
		s->max_milli * 0.5;
	return (int32_t)((1.0 - left) * 100.0);
}

/* ---- gpu clustering: keep pods of one affinity tag together ---- */

static int32_t clustering_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	int64_t max_milli = (int64_t)s->max_milli;
	int64_t base;

	if (m->tag == XP_TAG_NONE)
		return 0;
	base = 25 * (max_milli - (int64_t)ns->free_milli) / max_milli;
	if (ns->tagmask & (1u << m->tag))
		return (int32_t)(base + (__builtin_popcount(ns->tagmask) == 1 ? 75 : 50));
	return (int32_t)(base + (ns->tagmask == 0 ? 25 : 0));
}

/* ---- gpu packing: shared devices first, then used nodes, then idle ones ---- */

static int32_t packing_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	const struct xp_dstate *dv = &s->dev[ns->dev0];
	const struct xp_request *r = &m->req;
	int ndev = 0, full = 0, order[XP_MAX_NODE_DEVS], k = 0;
	int use_full = 0;
	int64_t pct = 0;

	if (r->dev_count == 0)
		return 0;
	for (uint16_t d = 0; d < ns->ndev; d++) {
		if (!dv[d].ok || !dv[d].accel)
			continue;
		ndev++;
		if (dv[d].free_milli == XP_MILLI && dv[d].free_mem == dv[d].mem)
			full++;
	}
	if (full == ndev) {
		int sc = 33 - full;
		return sc > full ? sc : full;
	}
	/* matching devices by free milli ascending (stable), take those with room */
	uint64_t mask = xp_shape_mask(s, n, m);
	while (mask) {
		int d = __builtin_ctzll(mask), i;
		mask &= mask - 1;
		if (!dv[d].ok)
			continue;
		for (i = k; i > 0 && dv[order[i - 1]].free_milli > dv[d].free_milli; i--)
			order[i] = order[i - 1];
		order[i] = d;
		k++;
	}
	int need = r->dev_count;
	for (int i = 0; i < k && need > 0; i++) {
		const struct xp_dstate *ds = &dv[order[i]];
		if (!xp_dev_fits(ds, r))
			continue;
		need--;
		if (ds->free_milli == XP_MILLI)
			use_full++;
		pct += (int64_t)ds->free_milli * 100 / XP_MILLI;
	}
	if (use_full > 0) {
		int sc = 50 - use_full;
		return sc > 33 ? sc : 33;
	}
	return (int32_t)(100 - pct / 10 > 50 ? 100 - pct / 10 : 50);
}

/* ---- HAMi binpack / spread ---- */

static int32_t usage_after(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	const struct xp_node *node = &s->c->nodes[n];
	if (m->req.dev_count && ns->cap_milli) {
		uint64_t used = ns->cap_milli - ns->free_milli;
		uint64_t req = (uint64_t)m->req.dev_count * m->req.dev_milli;
		return (int32_t)((used + req) * 10000 / ns->cap_milli);
	}
	if (!node->cpu_milli)
		return 10000;
	uint64_t used = node->cpu_milli - (uint64_t)ns->cpu_free;
	return (int32_t)((used + m->req.cpu_milli) * 10000 / node->cpu_milli);
}

static int32_t binpack_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	return usage_after(s, n, m);
}

static int32_t spread_score(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	return 10000 - usage_after(s, n, m);
}

static void spread_pick(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
			struct xp_rng *rng, struct xp_alloc *a)
{
	if (m->sharing) {
		int d = xp_pick_fraction(s, n, m, 1);
		a->ndev = 0;
		if (d >= 0)
			a->devs[a->ndev++] = (uint8_t)d;
		return;
	}
	xp_pick_lowest(s, n, m, a);
}

static const struct xp_policy_ops policy_random = {
	.name = "random",
	.label = "01-Random",
	.about = "a uniformly random feasible node (and device, for a fraction)",
	.flags = XP_POLICY_RANDOM_NODE,
	.score_max = 0,
	.score = zero_score,
	.pick = random_pick,
};

static const struct xp_policy_ops policy_dotprod = {
	.name = "dotprod",
	.label = "02-DotProd",
	.about = "Tetris dot product of free and requested CPU and GPU; smallest wins",
	.score_max = 100,
	.score = dotprod_score,
};

static const struct xp_policy_ops policy_clustering = {
	.name = "clustering",
	.label = "03-GpuClustering",
	.about = "pods of the same GPU shape (fraction, k GPUs) kept on the same nodes",
	.score_max = 100,
	.score = clustering_score,
};

static const struct xp_policy_ops policy_packing = {
	.name = "packing",
	.label = "04-GpuPacking",
	.about = "partly used GPUs first, then used nodes, then idle nodes",
	.score_max = 100,
	.score = packing_score,
};

static const struct xp_policy_ops policy_bestfit = {
	.name = "bestfit",
	.label = "05-BestFit",
	.about = "least CPU and GPU left over after placement",
	.score_max = 100,
	.score = bestfit_score,
};

static const struct xp_policy_ops policy_binpack = {
	.name = "binpack",
	.label = "binpack",
	.about = "HAMi binpack: highest (request + used) / allocatable",
	.score_max = 10000,
	.score = binpack_score,
};

static const struct xp_policy_ops policy_spread = {
	.name = "spread",
	.label = "spread",
	.about = "HAMi spread: lowest (request + used) / allocatable",
	.score_max = 10000,
	.score = spread_score,
	.pick = spread_pick,
};

extern const struct xp_policy_ops xp_policy_fgd;
extern const struct xp_policy_ops xp_policy_weighted;
extern const struct xp_policy_ops xp_policy_xpool;
extern const struct xp_policy_ops xp_policy_mcts;

const struct xp_policy_ops *const xp_policies[] = {
	&policy_random,	     &policy_dotprod,  &policy_clustering, &policy_packing,
	&policy_bestfit,     &xp_policy_fgd,   &policy_binpack,	   &policy_spread,
	&xp_policy_weighted, &xp_policy_xpool, &xp_policy_mcts,	   NULL,
};

const struct xp_policy_ops *xp_policy_find(const char *name)
{
	for (int i = 0; xp_policies[i]; i++)
		if (strcmp(xp_policies[i]->name, name) == 0 ||
		    strcmp(xp_policies[i]->label, name) == 0)
			return xp_policies[i];
	return NULL;
}

static const char *const weight_names[XP_W_N] = { "priority", "affinity", "energy", "network",
						  "health" };

int xp_weights_parse(const char *s, uint32_t w[XP_W_N], struct xp_err *err)
{
	uint32_t out[XP_W_N] = { 0 }, total = 0;
	const char *p = s;
	while (*p) {
		size_t n = strcspn(p, ","), k = strcspn(p, "=");
		int f = -1;
		for (int i = 0; i < XP_W_N && k < n; i++)
			if (strlen(weight_names[i]) == k && !strncmp(p, weight_names[i], k))
				f = i;
		char num[32];
		double v;
		snprintf(num, sizeof(num), "%.*s", (int)(k < n ? n - k - 1 : 0), p + k + 1);
		if (f < 0 || xp_parse_double(num, &v) < 0 || v < 0 || v > 1000)
			return xp_errf(err, XP_EINVAL,
				       "'%.*s': expected FACTOR=WEIGHT, FACTOR one of priority, "
				       "affinity, energy, network, health, WEIGHT 0..1000",
				       (int)n, p);
		out[f] = (uint32_t)(v * 1000 + 0.5);
		total += out[f];
		p += n + (p[n] == ',');
	}
	if (!total)
		return xp_errf(err, XP_EINVAL, "'%s': at least one weight above 0", s);
	memcpy(w, out, sizeof(out));
	return 0;
}
