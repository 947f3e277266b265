/*
 * gang: a job's replicas placed whole or not at all, together as its
 * gang.colocate asks (docs/design/tenancy.md, "Gangs").
 *
 *   none          : replica by replica, each where the policy puts it;
 *   node          : one node for all - placed as one request of the sum
 *                   (cpu, memory, devices x replicas), then split, so the
 *                   policy picks among the nodes that fit the whole gang;
 *   island / numa : the same, the sum's devices in one island / NUMA domain;
 *   zone          : nodes of one zone - the zone of the policy's first pick
 *                   first, then the others in node order; within a zone,
 *                   each replica pinned to its nodes in turn.
 * A fractional device share cannot be summed: node, island and numa place
 * such a gang replica by replica pinned to the first replica's node.
 * Neither can MIG slices (each its own placement on a slice lattice): a
 * gang of slices with node, island or numa is placed on one node tried in
 * turn - the policy's pick for the first replica first, then the others
 * in index order whose GPUs have room for every replica - each replica
 * pinned there, all or none (place_mig_together; issue 21).
 */
#include "state_int.h"

#include <string.h>

#include "../../lib/xalloc.h"

/* replica by replica; same_node: the rest pinned to the first's node */
static uint32_t place_each(struct xp_state *st, const struct xp_request *req, uint32_t n,
			   int same_node, struct xp_rng *rng, struct xp_alloc *a)
{
	struct xp_request r = *req;
	uint32_t k;
	for (k = 0; k < n; k++) {
		if (xp_sched_pick(st->sched, &r, rng, &a[k]) < 0)
			break;
		xp_sched_commit(st->sched, &a[k]);
		if (same_node)
			r.node = (int32_t)a[0].node;
	}
	return k;
}

/* node / island / numa: the sum of j's replicas as one request */
void xp_gang_sum(const struct xp_job *j, struct xp_request *r)
{
	uint32_t n = j->spec.replicas;
	*r = j->req;
	r->cpu_milli *= n;
	r->mem_mib *= n;
	r->dev_count = (uint16_t)(r->dev_count * n);
	if (j->spec.colocate == XP_COLOC_ISLAND)
		r->topo = XP_TOPO_SAME_ISLAND;
	else if (j->spec.colocate == XP_COLOC_NUMA)
		r->topo = XP_TOPO_SAME_NUMA;
}

/* the summed allocation m split into j's replicas a[0..replicas) */
void xp_gang_split(const struct xp_job *j, const struct xp_alloc *m, struct xp_alloc *a)
{
	uint16_t k = j->req.dev_count;
	for (uint32_t i = 0; i < j->spec.replicas; i++) {
		memset(&a[i], 0, sizeof(a[i]));
		a[i].node = m->node;
		a[i].cpu_milli = j->req.cpu_milli;
		a[i].mem_mib = j->req.mem_mib;
		a[i].ndev = k;
		a[i].dev_milli = m->dev_milli;
		a[i].dev_mem_mib = m->dev_mem_mib;
		memcpy(a[i].devs, m->devs + i * k, k);
	}
}

int xp_gang_summable(const struct xp_job *j)
{
	uint32_t n = j->spec.replicas;
	int coloc = n > 1 ? j->spec.colocate : XP_COLOC_NONE;
	/* summing replicas into one request would lose a MIG slice's placement */
	return coloc != XP_COLOC_NONE && coloc != XP_COLOC_ZONE &&
	       (j->req.dev_count == 0 || j->req.dev_milli >= XP_MILLI) && !j->req.mig &&
	       (uint32_t)j->req.dev_count * n <= XP_MAX_NODE_DEVS;
}

static int place_summed(struct xp_state *st, const struct xp_job *j, struct xp_rng *rng,
			struct xp_alloc *a, uint32_t *placed)
{
	uint32_t n = j->spec.replicas;
	struct xp_request r;
	struct xp_alloc m;
	xp_gang_sum(j, &r);
	*placed = 0;
	if (xp_sched_pick(st->sched, &r, rng, &m) < 0)
		return XP_ENOSPC;
	xp_gang_split(j, &m, a);
	for (uint32_t i = 0; i < n; i++)
		xp_sched_commit(st->sched, &a[i]);
	*placed = n;
	return 0;
}

static int place_zone(struct xp_state *st, const struct xp_job *j, struct xp_rng *rng,
		      struct xp_alloc *a, uint32_t *placed)
{
	uint32_t n = j->spec.replicas, got;
	const struct xp_cluster *c = st->c;
	*placed = 0;
	/* the zone of the policy's own first choice, then every other zone */
	if (xp_sched_pick(st->sched, &j->req, rng, &a[0]) < 0)
		return XP_ENOSPC;
	xp_sym first = c->nodes[a[0].node].zone;
	XP_VEC(xp_sym) zones = { 0 };
	if (first)
		xp_vec_push(&zones, first);
	for (size_t i = 0; i < c->nnodes; i++) {
		xp_sym z = c->nodes[i].zone;
		int seen = !z;
		for (size_t k = 0; k < zones.n && !seen; k++)
			seen = zones.v[k] == z;
		if (!seen)
			xp_vec_push(&zones, z);
	}
	int rc = XP_ENOSPC;
	struct xp_request r = j->req;
	for (size_t zi = 0; zi < zones.n && rc < 0; zi++) {
		got = 0;
		for (size_t i = 0; i < c->nnodes && got < n; i++) {
			if (c->nodes[i].zone != zones.v[zi] ||
			    (j->req.node >= 0 && (int32_t)i != j->req.node))
				continue;
			r.node = (int32_t)i;
			while (got < n && xp_sched_pick(st->sched, &r, rng, &a[got]) == 0)
				xp_sched_commit(st->sched, &a[got++]);
		}
		if (got == n)
			rc = 0;
		else
			xp_unplace(st, a, got);
	}
	xp_vec_free(&zones);
	*placed = rc == 0 ? n : 0;
	return rc;
}

/* MIG slices, all on one node: the first node whose GPUs take them all */
static int place_mig_together(struct xp_state *st, const struct xp_job *j, struct xp_rng *rng,
			      struct xp_alloc *a, uint32_t *placed)
{
	uint32_t n = j->spec.replicas, nn = (uint32_t)st->c->nnodes;
	struct xp_request r = j->req;
	*placed = 0;
	if (xp_sched_pick(st->sched, &r, rng, &a[0]) < 0)
		return XP_ENOSPC;
	uint32_t first = a[0].node;
	for (uint32_t i = 0; i <= nn; i++) {
		uint32_t node = i == 0 ? first : i - 1;
		if ((i > 0 && node == first) ||
		    (j->req.node >= 0 && (int32_t)node != j->req.node) ||
		    xp_mig_room_on(st->sched, node, &j->req) < n)
			continue;
		r.node = (int32_t)node;
		uint32_t got = place_each(st, &r, n, 0, rng, a);
		if (got == n) {
			*placed = n;
			return 0;
		}
		xp_unplace(st, a, got);
	}
	return XP_ENOSPC;
}

int xp_place_gang(struct xp_state *st, const struct xp_job *j, struct xp_rng *rng,
		  struct xp_alloc *a, uint32_t *placed)
{
	uint32_t n = j->spec.replicas;
	int coloc = n > 1 ? j->spec.colocate : XP_COLOC_NONE;
	if (coloc == XP_COLOC_ZONE)
		return place_zone(st, j, rng, a, placed);
	if (coloc != XP_COLOC_NONE && j->req.mig)
		return place_mig_together(st, j, rng, a, placed);
	if (xp_gang_summable(j)) /* never a MIG slice's: summing would lose its placement */
		return place_summed(st, j, rng, a, placed);
	*placed = place_each(st, &j->req, n, coloc != XP_COLOC_NONE, rng, a);
	return *placed == n ? 0 : XP_ENOSPC;
}
