/*
 * fit: what fits where, on the capacity that capacity.c keeps: request shapes
 * (the per-node-type device masks of a request, its tag), feasibility
 * (xp_node_why: fits, or the first reason it does not) and device choice
 * (the lowest fitting devices honouring topology, the fraction with the
 * least or most room). Reads the capacity; never changes it.
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

/* ---- tags ---- */

uint8_t xp_request_tag(uint16_t count, uint16_t milli)
{
	if (count == 0)
		return XP_TAG_NONE;
	if (milli < XP_MILLI)
		return 0;
	return count >= XP_NTAGS - 1 ? XP_NTAGS - 1 : (uint8_t)count;
}

/* ---- shapes ---- */

int xp_shape_eq(const struct xp_request *a, const struct xp_request *b)
{
	if (a->cpu_milli != b->cpu_milli || a->dev_count != b->dev_count || a->node != b->node ||
	    a->dev_milli != b->dev_milli || a->dev_mem_mib != b->dev_mem_mib ||
	    a->topo != b->topo || a->by_mem != b->by_mem)
		return 0;
	if (a->dev_count == 0)
		return 1;
	const struct xp_selector *x = &a->sel, *y = &b->sel;
	if (x->cls != y->cls || x->vendor != y->vendor || x->nmodels != y->nmodels ||
	    x->min_mem_mib != y->min_mem_mib || x->min_cc != y->min_cc)
		return 0;
	return memcmp(x->models, y->models, x->nmodels * sizeof(x->models[0])) == 0;
}

int xp_request_same_shape(const struct xp_request *a, const struct xp_request *b)
{
	return xp_shape_eq(a, b);
}

void xp_shape_init(const struct xp_sched *s, struct xp_shape *m, const struct xp_request *r)
{
	memset(m, 0, sizeof(*m));
	m->req = *r;
	m->req.mem_mib = 0;
	if (r->dev_count == 0) {
		/* selector is irrelevant: normalise so equal shapes compare equal */
		memset(&m->req.sel, 0, sizeof(m->req.sel));
		m->req.sel.cls = -1;
		m->req.topo = XP_TOPO_ANY;
	}
	m->tag = xp_request_tag(r->dev_count, r->dev_milli);
	m->sharing = r->dev_count == 1 && (r->dev_milli < XP_MILLI || r->by_mem);
	/* one whole device may be a replica of a time-sliced one: judged per device */
	int replica = s->reps && r->dev_count == 1 && r->dev_milli >= XP_MILLI;
	m->fitk = r->by_mem || replica ? 0 : r->dev_milli >= XP_MILLI ? 1 : 2;
	m->tmask = XNEWV(uint64_t, s->ntypes ? s->ntypes : 1);
	for (uint32_t t = 0; t < s->ntypes; t++) {
		const struct xp_node *node = &s->c->nodes[s->type_node[t]];
		uint64_t mask = 0;
		for (uint16_t d = 0; d < node->ndevs; d++)
			if (xp_selector_match(&m->req.sel, &node->devs[d]))
				mask |= 1ULL << d;
		m->tmask[t] = mask;
	}
}

void xp_shape_free(struct xp_shape *m)
{
	if (!m)
		return;
	free(m->tmask);
	m->tmask = NULL;
}

/* ---- feasibility ---- */

/* Largest number of fitting devices inside one island / NUMA domain. */
static int best_group(const struct xp_sched *s, uint32_t n, uint64_t fit, int topo)
{
	int16_t ids[XP_MAX_NODE_DEVS];
	int cnt[XP_MAX_NODE_DEVS], ng = 0, best = 0;

	while (fit) {
		int d = __builtin_ctzll(fit);
		const struct xp_device *dv = xp_node_dev(s, n, (uint16_t)d);
		int16_t g = topo == XP_TOPO_SAME_ISLAND ? dv->island : dv->numa;
		int i = 0;
		fit &= fit - 1;
		if (g < 0) { /* in no group: alone */
			if (best < 1)
				best = 1;
			continue;
		}
		while (i < ng && ids[i] != g)
			i++;
		if (i == ng) {
			ids[ng] = g;
			cnt[ng++] = 0;
		}
		if (++cnt[i] > best)
			best = cnt[i];
	}
	return best;
}

static uint64_t fit_mask(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	uint64_t mask = xp_shape_mask(s, n, m), fit = 0;
	while (mask) {
		int d = __builtin_ctzll(mask);
		mask &= mask - 1;
		const struct xp_dstate *ds = &s->dev[ns->dev0 + d];
		if (m->req.mig ? xp_mig_dev_fits(s, ds, &m->req) : xp_dev_fits(ds, &m->req))
			fit |= 1ULL << d;
	}
	return fit;
}

int xp_node_why(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	const struct xp_nstate *ns = &s->ns[n];
	const struct xp_request *r = &m->req;

	if ((r->node >= 0 || ns->dedicated) && (uint32_t)r->node != n)
		return XP_WHY_NODE; /* r->node -1 never names a node */
	if (!ns->up)
		return XP_WHY_DOWN;
	if (r->dev_count) {
		uint64_t mask = xp_shape_mask(s, n, m);
		int healthy = 0;
		while (mask) {
			int d = __builtin_ctzll(mask);
			mask &= mask - 1;
			healthy += s->dev[ns->dev0 + d].ok;
		}
		if (healthy < r->dev_count)
			return XP_WHY_NO_DEVICE;
	}
	if (ns->cpu_free < (int64_t)r->cpu_milli)
		return XP_WHY_CPU;
	if (r->dev_count) {
		uint64_t fit = fit_mask(s, n, m);
		if (__builtin_popcountll(fit) < r->dev_count)
			return XP_WHY_DEV_BUSY;
		if (r->topo != XP_TOPO_ANY && r->dev_count > 1 &&
		    best_group(s, n, fit, r->topo) < r->dev_count)
			return XP_WHY_TOPOLOGY;
	}
	return XP_WHY_FITS;
}

/* ---- device choice ---- */

void xp_alloc_fill(struct xp_alloc *a, uint32_t n, const struct xp_request *r)
{
	a->node = n;
	a->ndev = 0;
	a->cpu_milli = r->cpu_milli;
	a->mem_mib = r->mem_mib;
	a->dev_milli = r->dev_milli;
	a->dev_mem_mib = r->dev_mem_mib;
	a->mig = 0;
	a->mig_start = 0;
}

void xp_alloc_settle(const struct xp_sched *s, struct xp_alloc *a, const struct xp_request *r)
{
	if (a->ndev == 1 && !a->mig)
		a->dev_milli = xp_dev_milli(&s->dev[s->ns[a->node].dev0 + a->devs[0]], r);
}

int xp_pick_lowest(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
		   struct xp_alloc *a)
{
	const struct xp_request *r = &m->req;
	uint64_t fit = fit_mask(s, n, m);
	int k = r->dev_count;

	a->ndev = 0;
	if (r->topo != XP_TOPO_ANY && k > 1) {
		/* the group of the lowest-index device that has room for all k */
		uint64_t rest = fit;
		while (rest) {
			int d = __builtin_ctzll(rest);
			const struct xp_device *dv = xp_node_dev(s, n, (uint16_t)d);
			int16_t g = r->topo == XP_TOPO_SAME_ISLAND ? dv->island : dv->numa;
			uint64_t grp = 0, f = fit;
			while (f && g >= 0) {
				int e = __builtin_ctzll(f);
				const struct xp_device *ev = xp_node_dev(s, n, (uint16_t)e);
				f &= f - 1;
				if ((r->topo == XP_TOPO_SAME_ISLAND ? ev->island : ev->numa) == g)
					grp |= 1ULL << e;
			}
			if (g >= 0 && __builtin_popcountll(grp) >= k) {
				fit = grp;
				break;
			}
			rest &= ~(grp | (1ULL << d));
		}
		if (!rest)
			return 0;
	}
	while (fit && a->ndev < k) {
		a->devs[a->ndev++] = (uint8_t)__builtin_ctzll(fit);
		fit &= fit - 1;
	}
	return a->ndev;
}

int xp_pick_fraction(const struct xp_sched *s, uint32_t n, const struct xp_shape *m, int worst)
{
	const struct xp_nstate *ns = &s->ns[n];
	uint64_t fit = fit_mask(s, n, m);
	int best = -1;
	while (fit) {
		int d = __builtin_ctzll(fit);
		fit &= fit - 1;
		uint16_t f = s->dev[ns->dev0 + d].free_milli;
		if (best < 0 || (worst ? f > s->dev[ns->dev0 + best].free_milli
				       : f < s->dev[ns->dev0 + best].free_milli))
			best = d;
	}
	return best;
}

void xp_pick_default(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
		     struct xp_rng *rng, struct xp_alloc *a)
{
	(void)rng;
	if (m->sharing) {
		int d = xp_pick_fraction(s, n, m, 0);
		a->ndev = 0;
		if (d >= 0)
			a->devs[a->ndev++] = (uint8_t)d;
		return;
	}
	xp_pick_lowest(s, n, m, a);
}

