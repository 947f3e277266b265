/*
 * mig_sched: MIG slices in the scheduling core (issue 21). A request with
 * r->mig asks for one instance of a named profile on one GPU in mode mig.
 *
 * Each MIG-mode device gets a slice lattice (core/model/mig.h) at create:
 * its table is the built-in one of its model, overridden by what NVML
 * discovery reported (the attributes mig_profiles "name:id:SMs,..." and
 * mig_placements "name:start+size,...;..."; the profile's memory from the
 * partition of that name). A device with neither has no lattice and takes
 * no slice. The lattice holds the slices of running allocations only
 * (instances the agent found that no allocation owns are not seen here).
 *
 * A slice fits a device that offers the profile and has a free placement
 * for it. Placement is xpool's policy (mig_place.h): over every free
 * {GPU, start} of every node that fits the rest of the request, the least
 * loss of the potential sum_k w[k] room_k, every kind weighing 1 (1g+me
 * 0); ties go to the lower slot, device and start. A pick scans every
 * node: MIG requests do not use the index.
 *
 * With mig: any (r->mig_any) the profile is chosen per GPU: the smallest
 * of its table whose compute slices cover r->dev_milli and whose memory
 * covers r->dev_mem_mib, among those with a free placement; the pick
 * prefers the smallest such profile over all GPUs (compute slices, then
 * memory). Then, for any request, warm instances (xp_sched_set_mig_warm, a
 * hint from the agents' heartbeats): a candidate that reuses one of its
 * kind at its start first, then the one that overlaps the fewest others;
 * then the least loss. Slices that instances xpool did not create hold
 * (the same hint) are never placed on: the agent would fail to create
 * there, and it never destroys those.
 *
 * An allocation's dev_milli is always its profile's compute slices / 7
 * (xp_mig_kind_milli): what quotas count.
 */
#include "sched_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../lib/xalloc.h"
#include "mig_place.h"

static const uint8_t kind_compute[XP_MIG_NKINDS] = { 1, 1, 1, 2, 3, 4, 7 };

/* "a+b,c+d" into p's placements */
static void parse_places(struct xp_mig_profile *p, const char *s, size_t len)
{
	p->nplace = 0;
	while (len && p->nplace < XP_MIG_MAX_PLACEMENTS) {
		char *end;
		long a = strtol(s, &end, 10), b = *end == '+' ? strtol(end + 1, &end, 10) : -1;
		if (a < 0 || a >= XP_MIG_MEM_SLICES || b < 1 || a + b > XP_MIG_MEM_SLICES)
			break;
		p->place[p->nplace++] = (struct xp_mig_placement){ (uint8_t)a, (uint8_t)b };
		size_t used = (size_t)(end - s);
		if (used >= len || *end != ',')
			break;
		s = end + 1;
		len -= used + 1;
	}
}

/* the placements of profile name in the mig_placements attribute */
static void attr_places(struct xp_mig_profile *p, const char *attr)
{
	size_t n = strlen(p->name);
	for (const char *q = attr; q && *q; q = strchr(q, ';') ? strchr(q, ';') + 1 : NULL)
		if (!strncasecmp(q, p->name, n) && q[n] == ':') {
			const char *e = strchr(q, ';');
			parse_places(p, q + n + 1, e ? (size_t)(e - q - n - 1) : strlen(q + n + 1));
			return;
		}
	p->nplace = 0;
}

/* d's table into m from discovery's attributes: 0, or -1 without them */
static int table_from_attrs(const struct xp_device *d, struct xp_sched_mig *m)
{
	const char *prof = xp_attrs_get(d->attrs, d->nattrs, "mig_profiles");
	const char *place = xp_attrs_get(d->attrs, d->nattrs, "mig_placements");
	if (!prof || !place)
		return -1;
	memset(m->t.prof, 0, sizeof(m->t.prof));
	for (const char *q = prof; *q; q = strchr(q, ',') ? strchr(q, ',') + 1 : "") {
		char name[32];
		unsigned id, sms;
		if (sscanf(q, "%31[^:]:%u:%u", name, &id, &sms) != 3)
			continue;
		int k = xp_mig_kind_of_id(id);
		if (k < 0)
			continue;
		struct xp_mig_profile *p = &m->t.prof[k];
		snprintf(m->names[k], sizeof(m->names[k]), "%s", name);
		p->name = m->names[k];
		p->id = (uint16_t)id;
		p->compute = kind_compute[k];
		p->sms = (uint16_t)sms;
		p->max_count = k == XP_MIG_1G_ME ? 1 : XP_MIG_MEM_SLICES;
		for (uint16_t i = 0; i < d->nparts; i++)
			if (d->parts[i].name && !strcasecmp(d->parts[i].name, name)) {
				p->mem_mib = (uint32_t)d->parts[i].mem_mib;
				if (d->parts[i].max_count)
					p->max_count = (uint8_t)d->parts[i].max_count;
			}
		attr_places(p, place);
	}
	for (int k = 0; k < XP_MIG_NKINDS; k++)
		if (!m->t.prof[k].name)
			m->t.prof[k].name = ""; /* offered by no request */
	return 0;
}

void xp_mig_sched_init(struct xp_sched *s)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->ndevs; i++)
		n += s->dev[i].mode == XP_MODE_MIG;
	s->migs = n ? XNEWV(struct xp_sched_mig, n) : NULL;
	s->nmigs = 0;
	for (uint32_t node = 0; node < s->nnodes; node++)
		for (uint16_t d = 0; d < s->ns[node].ndev; d++) {
			struct xp_dstate *ds = &s->dev[s->ns[node].dev0 + d];
			const struct xp_device *dv = xp_node_dev(s, node, d);
			struct xp_sched_mig *m = &s->migs[s->nmigs];
			if (ds->mode != XP_MODE_MIG)
				continue;
			const struct xp_mig_table *bt =
				dv->model ? xp_mig_table_find(xp_strtab_str(s->c->syms, dv->model))
					  : NULL;
			memset(m, 0, sizeof(*m));
			if (bt)
				m->t = *bt;
			if (table_from_attrs(dv, m) < 0 && !bt)
				continue;
			m->t.mem_mib = (uint32_t)dv->mem_mib;
			xp_mig_gpu_init(&m->g, &m->t);
			ds->mig = ++s->nmigs;
		}
}

/* Does kind k of t cover r's size (mig: any)? Never 1g+me. */
static int kind_covers(const struct xp_mig_table *t, int k, const struct xp_request *r)
{
	const struct xp_mig_profile *p = &t->prof[k];
	return k != XP_MIG_1G_ME && p->nplace && p->compute >= xp_mig_slices_for(r->dev_milli) &&
	       p->mem_mib >= r->dev_mem_mib;
}

/* Is kind a smaller than kind b of t (compute, memory, memory slices)? */
static int kind_smaller(const struct xp_mig_table *t, int a, int b)
{
	const struct xp_mig_profile *p = &t->prof[a], *q = &t->prof[b];
	if (p->compute != q->compute)
		return p->compute < q->compute;
	if (p->mem_mib != q->mem_mib)
		return p->mem_mib < q->mem_mib;
	return p->place[0].size < q->place[0].size;
}

/* The free placements of kind k on m (into pl, may be NULL) that no
 * foreign instance overlaps */
static size_t free_places(const struct xp_sched_mig *m, int k, struct xp_mig_placement *pl)
{
	struct xp_mig_placement all[XP_MIG_MAX_PLACEMENTS];
	size_t n = xp_mig_free_placements(&m->g, k, all), kept = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned span = ((1u << all[i].size) - 1) << all[i].start;
		if (m->foreign & span)
			continue;
		if (pl)
			pl[kept] = all[i];
		kept++;
	}
	return kept;
}

/* mig: any on lattice m: the smallest kind that covers r and has a free
 * placement, else the smallest that covers r (none free), else -1 */
static int any_kind(const struct xp_sched_mig *m, const struct xp_request *r)
{
	int best = -1, best_free = -1;
	for (int k = 0; k < XP_MIG_NKINDS; k++) {
		if (!kind_covers(&m->t, k, r))
			continue;
		if (best < 0 || kind_smaller(&m->t, k, best))
			best = k;
		if (free_places(m, k, NULL) && (best_free < 0 || kind_smaller(&m->t, k, best_free)))
			best_free = k;
	}
	return best_free >= 0 ? best_free : best;
}

/* The kind of d's table named like r's profile (or, for mig: any, the
 * smallest that covers r's size), or -1 */
static int dev_kind(const struct xp_sched *s, const struct xp_dstate *d, const struct xp_request *r)
{
	if (!d->mig || !r->mig)
		return -1;
	if (r->mig_any)
		return any_kind(&s->migs[d->mig - 1], r);
	const struct xp_mig_table *t = &s->migs[d->mig - 1].t;
	const char *name = xp_strtab_str(s->c->syms, r->mig);
	for (int k = 0; name && k < XP_MIG_NKINDS; k++)
		if (t->prof[k].nplace && !strcasecmp(t->prof[k].name, name))
			return k;
	return -1;
}

int xp_mig_dev_fits(const struct xp_sched *s, const struct xp_dstate *d, const struct xp_request *r)
{
	int k = dev_kind(s, d, r);
	return d->ok && k >= 0 && free_places(&s->migs[d->mig - 1], k, NULL) > 0;
}

uint16_t xp_mig_kind_milli(int kind)
{
	return (uint16_t)(xp_mig_kind_compute(kind) * XP_MILLI / XP_MIG_COMPUTE_SLICES);
}

static const double mig_weights[XP_MIG_NKINDS] = { 1, 0, 1, 1, 1, 1, 1 };

/* A candidate's rank: for mig: any the profile's compute slices and
 * memory first (the smallest that fits); then a warm instance of the kind
 * at that start (reused: no create), then the fewest warm instances of
 * other kinds it would displace, then the loss of potential */
struct rank {
	unsigned compute;
	uint64_t mem;
	unsigned cold, displaced;
	double loss;
};

static int rank_better(const struct rank *a, const struct rank *b)
{
	if (a->compute != b->compute)
		return a->compute < b->compute;
	if (a->mem != b->mem)
		return a->mem < b->mem;
	if (a->cold != b->cold)
		return a->cold < b->cold;
	if (a->displaced != b->displaced)
		return a->displaced < b->displaced;
	return a->loss < b->loss - 1e-9;
}

/* Warm instances on m that kind k at start would overlap (its own kind at
 * that very start excepted: that one is reused) */
static unsigned displaced(const struct xp_sched_mig *m, int k, unsigned start)
{
	unsigned n = 0, size = m->t.prof[k].place[0].size;
	for (int j = 0; j < XP_MIG_NKINDS; j++)
		for (unsigned s = 0; m->warm[j] && s < XP_MIG_MEM_SLICES; s++) {
			unsigned sz = m->t.prof[j].nplace ? m->t.prof[j].place[0].size : 0;
			if (!(m->warm[j] >> s & 1) || (j == k && s == start))
				continue;
			n += s < start + size && start < s + sz;
		}
	return n;
}

void xp_sched_set_mig_warm(struct xp_sched *s, uint32_t node, uint16_t dev, const uint8_t *warm,
			   uint8_t foreign)
{
	if (node >= s->nnodes || dev >= s->ns[node].ndev)
		return;
	const struct xp_dstate *ds = &s->dev[s->ns[node].dev0 + dev];
	if (!ds->mig)
		return;
	memcpy(s->migs[ds->mig - 1].warm, warm, XP_MIG_NKINDS);
	s->migs[ds->mig - 1].foreign = foreign;
}

int xp_sched_mig_kept(const struct xp_sched *s, uint32_t node, uint16_t dev)
{
	if (node >= s->nnodes || dev >= s->ns[node].ndev)
		return 0;
	const struct xp_dstate *ds = &s->dev[s->ns[node].dev0 + dev];
	if (!ds->mig)
		return 0;
	const struct xp_sched_mig *m = &s->migs[ds->mig - 1];
	if (m->foreign)
		return 2;
	for (int k = 0; k < XP_MIG_NKINDS; k++)
		if (m->warm[k])
			return 1;
	return 0;
}

const struct xp_mig_table *xp_sched_mig_table(const struct xp_sched *s, uint32_t node, uint16_t dev)
{
	if (node >= s->nnodes || dev >= s->ns[node].ndev)
		return NULL;
	const struct xp_dstate *ds = &s->dev[s->ns[node].dev0 + dev];
	return ds->mig ? &s->migs[ds->mig - 1].t : NULL;
}

const struct xp_mig_gpu *xp_sched_mig_gpu(const struct xp_sched *s, uint32_t node, uint16_t dev)
{
	if (node >= s->nnodes || dev >= s->ns[node].ndev)
		return NULL;
	const struct xp_dstate *ds = &s->dev[s->ns[node].dev0 + dev];
	return ds->mig ? &s->migs[ds->mig - 1].g : NULL;
}

/* The best free placement of r on node n's fitting devices, if it beats
 * *best */
static int node_best(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
		     struct rank *best, struct xp_alloc *out)
{
	const struct xp_nstate *ns = &s->ns[n];
	uint64_t mask = xp_shape_mask(s, n, m);
	int found = 0;
	while (mask) {
		int d = __builtin_ctzll(mask);
		mask &= mask - 1;
		const struct xp_dstate *ds = &s->dev[ns->dev0 + d];
		int k = dev_kind(s, ds, &m->req);
		if (k < 0 || !ds->ok)
			continue;
		const struct xp_sched_mig *sm = &s->migs[ds->mig - 1];
		const struct xp_mig_gpu *g = &sm->g;
		struct xp_mig_placement pl[XP_MIG_MAX_PLACEMENTS];
		size_t np = free_places(sm, k, pl);
		double before = xp_mig_potential(g, mig_weights);
		for (size_t i = 0; i < np; i++) {
			struct xp_mig_gpu after = *g;
			if (xp_mig_place(&after, k, pl[i].start, NULL) < 0)
				continue;
			struct rank c = { 0, 0, !(sm->warm[k] >> pl[i].start & 1),
					  displaced(sm, k, pl[i].start),
					  before - xp_mig_potential(&after, mig_weights) };
			if (m->req.mig_any) {
				c.compute = g->t->prof[k].compute;
				c.mem = g->t->prof[k].mem_mib;
			}
			if (rank_better(&c, best)) {
				*best = c;
				xp_alloc_fill(out, n, &m->req);
				out->ndev = 1;
				out->devs[0] = (uint8_t)d;
				out->mig = (uint8_t)(k + 1);
				out->mig_start = pl[i].start;
				out->dev_milli = xp_mig_kind_milli(k);
				out->dev_mem_mib = g->t->prof[k].mem_mib;
				found = 1;
			}
		}
	}
	return found;
}

int xp_mig_pick(struct xp_sched *s, const struct xp_request *r, struct xp_alloc *out)
{
	struct xp_shape m;
	struct rank best = { ~0u, ~0ull, ~0u, ~0u, 1e300 };
	int found = 0;
	xp_shape_init(s, &m, r);
	for (uint32_t slot = 0; slot < s->nnodes; slot++) {
		uint32_t n = s->slot_node[slot];
		if (s->ns[n].mem_free < (int64_t)r->mem_mib || xp_node_why(s, n, &m) != XP_WHY_FITS)
			continue;
		found |= node_best(s, n, &m, &best, out);
	}
	xp_shape_free(&m);
	if (found)
		out->mem_mib = r->mem_mib; /* the shape's request has none */
	return found ? 0 : XP_ENOSPC;
}

void xp_mig_apply(struct xp_sched *s, const struct xp_alloc *a, int sign)
{
	const struct xp_dstate *ds = &s->dev[s->ns[a->node].dev0 + a->devs[0]];
	if (!a->mig || !a->ndev || !ds->mig)
		return;
	struct xp_mig_gpu *g = &s->migs[ds->mig - 1].g;
	if (sign > 0)
		xp_mig_place(g, a->mig - 1, a->mig_start, NULL);
	else
		xp_mig_remove(g, a->mig_start, NULL);
}

int xp_mig_alloc_fits(const struct xp_sched *s, const struct xp_alloc *a, struct xp_err *err)
{
	const char *name = s->c->nodes[a->node].name;
	const struct xp_dstate *ds = &s->dev[s->ns[a->node].dev0 + a->devs[0]];
	if (a->ndev != 1 || !ds->mig || a->mig > XP_MIG_NKINDS)
		return xp_errf(err, XP_EINVAL, "node %s: device %u takes no MIG slice", name,
			       a->devs[0]);
	if (!xp_mig_can_place(&s->migs[ds->mig - 1].g, a->mig - 1, a->mig_start))
		return xp_errf(err, XP_ENOSPC, "node %s: device %u: no room for %s at %u", name,
			       a->devs[0], s->migs[ds->mig - 1].t.prof[a->mig - 1].name,
			       a->mig_start);
	return 0;
}

const struct xp_mig_profile *xp_sched_mig_prof(const struct xp_sched *s, const struct xp_alloc *a)
{
	const struct xp_dstate *ds;
	if (!a->mig || !a->ndev || a->node >= s->nnodes || a->devs[0] >= s->ns[a->node].ndev)
		return NULL;
	ds = &s->dev[s->ns[a->node].dev0 + a->devs[0]];
	return ds->mig ? &s->migs[ds->mig - 1].t.prof[a->mig - 1] : NULL;
}

const char *xp_sched_mig_profile(const struct xp_sched *s, const struct xp_alloc *a)
{
	const struct xp_mig_profile *p = xp_sched_mig_prof(s, a);
	return p ? p->name : NULL;
}

void xp_mig_explain(const struct xp_sched *s, const struct xp_request *r, const struct xp_alloc *a,
		    struct xp_explain *out)
{
	const char *name = r->mig ? xp_strtab_str(s->c->syms, r->mig) : NULL;
	uint32_t offer = 0, room = 0;
	char what[48];
	if (!name)
		return;
	if (r->mig_any)
		snprintf(what, sizeof(what), "any (%u milli, %llu MiB)", r->dev_milli,
			 (unsigned long long)r->dev_mem_mib);
	else
		snprintf(what, sizeof(what), "%s", name);
	if (a && a->mig) {
		const struct xp_sched_mig *m =
			&s->migs[s->dev[s->ns[a->node].dev0 + a->devs[0]].mig - 1];
		const struct xp_mig_profile *p = &m->t.prof[a->mig - 1];
		snprintf(out->mig, sizeof(out->mig),
			 "MIG %s%s%s: node %s GPU %u, placement {%u,%u}%s", what,
			 r->mig_any ? " takes " : "", r->mig_any ? p->name : "",
			 s->c->nodes[a->node].name, a->devs[0], a->mig_start, p->place[0].size,
			 m->warm[a->mig - 1] >> a->mig_start & 1 ? ", a warm instance" : "");
		return;
	}
	for (uint32_t i = 0; i < s->ndevs; i++) {
		offer += dev_kind(s, &s->dev[i], r) >= 0;
		room += xp_mig_dev_fits(s, &s->dev[i], r);
	}
	if (!offer)
		snprintf(out->mig, sizeof(out->mig), "MIG %s: no GPU in MIG mode offers it", what);
	else if (!room)
		snprintf(out->mig, sizeof(out->mig),
			 "MIG %s: none of the %u GPUs offering it has a free placement", what,
			 offer);
	else
		snprintf(out->mig, sizeof(out->mig),
			 "MIG %s: %u of the %u GPUs offering it have a free placement", what, room,
			 offer);
}

/* slices of r's profile device d could take now, each at a free placement */
static uint32_t dev_room(const struct xp_sched *s, const struct xp_dstate *d,
			 const struct xp_request *r)
{
	int k = dev_kind(s, d, r);
	return d->ok && k >= 0 ? (uint32_t)free_places(&s->migs[d->mig - 1], k, NULL) : 0;
}

uint32_t xp_mig_room_now(const struct xp_sched *s, const struct xp_request *r)
{
	uint32_t room = 0;
	for (uint32_t i = 0; r->mig && i < s->ndevs; i++)
		room += dev_room(s, &s->dev[i], r);
	return room;
}

uint32_t xp_mig_room_on(const struct xp_sched *s, uint32_t node, const struct xp_request *r)
{
	uint32_t room = 0;
	if (!r->mig || node >= s->nnodes)
		return 0;
	for (uint16_t d = 0; d < s->ns[node].ndev; d++)
		room += dev_room(s, &s->dev[s->ns[node].dev0 + d], r);
	return room;
}
