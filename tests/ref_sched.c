/*
 * ref_sched: the naive reference of the scheduling core (see ref_sched.h).
 *
 * Written from docs/design/scheduler.md only. Per node it keeps free CPU and
 * memory, an up flag and affinity-tag counts; per device free milli, free
 * memory and health — plain arrays. Every question (can node n take r? its
 * score? F_n(M)?) copies the node into a struct nstate and evaluates the
 * rule of the specification on it, so a hypothetical placement (FGD's n')
 * is just the same function on a modified copy. Nothing is cached.
 *
 * Readings of the specification that the text leaves open, chosen here:
 *  - a device the cluster marks XP_HEALTH_UNHEALTHY starts unhealthy, every
 *    other health starts healthy (the specification does not say);
 *  - normalisers (MAXCPU, MAXMILLI) of a cluster without CPU (without
 *    accelerators) are 1 (1000), as the specification now says;
 *  - binpack's "no devices: the same over CPU" applies to a request without
 *    devices and to a node without healthy accelerators (capacity 0);
 *  - scores are clamped to 0..score_max ("an integer score in
 *    0..score_max"), which only matters for requests of cpu-class devices,
 *    whose k·u is not part of L_n;
 *  - packing's "Σ trunc(free·100/1000)/10" divides the integer sum by 10
 *    in integers (as the FGD simulator's GpuPacking does);
 *  - the whole-device group rule takes the lowest-index *fitting matching*
 *    device whose group has room;
 *  - L_n, used and total milli count healthy accelerators only, down nodes
 *    included (the definitions do not exclude them).
 */
#include "ref_sched.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const ref_names[REF_NPOLICIES] = {
	[REF_RANDOM] = "random",     [REF_DOTPROD] = "dotprod", [REF_CLUSTERING] = "clustering",
	[REF_PACKING] = "packing",   [REF_BESTFIT] = "bestfit", [REF_FGD] = "fgd",
	[REF_WEIGHTED] = "weighted", [REF_BINPACK] = "binpack", [REF_SPREAD] = "spread",
	[REF_XPOOL] = "xpool",
};

const char *ref_policy_name(int policy)
{
	return policy >= 0 && policy < REF_NPOLICIES ? ref_names[policy] : "?";
}

int32_t ref_score_max(int policy)
{
	switch (policy) {
	case REF_RANDOM:
		return 0;
	case REF_BINPACK:
	case REF_SPREAD:
	case REF_WEIGHTED:
		return 10000;
	case REF_XPOOL:
		return 40;
	default:
		return 100;
	}
}

/* One node's dynamic state, copied so that hypotheses can modify it. */
struct nstate {
	int64_t cpu;
	uint32_t ndev;
	int32_t milli[XP_MAX_NODE_DEVS];
	int64_t mem[XP_MAX_NODE_DEVS];
	uint8_t ok[XP_MAX_NODE_DEVS];
};

static void load(const struct ref_sched *r, uint32_t n, struct nstate *s)
{
	const struct xp_node *node = &r->c->nodes[n];
	memset(s, 0, sizeof(*s));
	s->cpu = r->cpu_free[n];
	s->ndev = node->ndevs;
	for (uint32_t d = 0; d < node->ndevs; d++) {
		s->milli[d] = r->dev_milli[r->dev0[n] + d];
		s->mem[d] = r->dev_mem[r->dev0[n] + d];
		s->ok[d] = r->dev_ok[r->dev0[n] + d];
	}
}

static int is_accel(const struct xp_device *d)
{
	return d->cls != XP_CLASS_CPU;
}

/* Whole devices: not one share (a share sized by memory is one device's,
 * whole there only when it asks all of that device's memory). */
static int is_whole(const struct xp_request *q)
{
	return q->dev_milli == XP_MILLI && !q->by_mem;
}

/* Device memory admitted: physical x the overcommit factor. */
static int64_t admitted(const struct xp_device *dv)
{
	int64_t f = dv->mem_overcommit ? dv->mem_overcommit : 100;
	return (int64_t)dv->mem_mib * f / 100;
}

/* The compute milli one slot of q takes on device d: a share sized by
 * memory is its memory's part of the device's, rounded up, at least 1; one
 * whole device of a time-sliced one with N replicas, one replica. */
static int32_t milli_on(const struct xp_node *node, uint32_t d, const struct xp_request *q)
{
	uint64_t m = node->devs[d].mem_mib;
	const struct xp_device *dv = &node->devs[d];
	if (is_whole(q) && q->dev_count == 1 && dv->mode == XP_MODE_TIMESLICE &&
	    dv->replicas > 1) /* one of its N replicas: floor(1000 / N) */
		return XP_MILLI / dv->replicas;
	if (!q->by_mem)
		return q->dev_milli;
	if (q->dev_mem_mib >= m)
		return XP_MILLI;
	int32_t k = 1;
	while ((uint64_t)k * m < q->dev_mem_mib * XP_MILLI) /* the least k with k/1000 >= mem/m */
		k++;
	return k;
}

/* "A device fits one slot of request r when it is healthy and ...": a
 * whole slot an idle device, a share a shared or time-sliced one, never a
 * MIG device, never more memory than the device physically has */
static int fits(const struct xp_node *node, const struct nstate *s, uint32_t d,
		const struct xp_request *q)
{
	const struct xp_device *dv = &node->devs[d];
	if (!s->ok[d] || dv->mode == XP_MODE_MIG || q->dev_mem_mib > dv->mem_mib)
		return 0;
	int32_t milli = milli_on(node, d, q);
	if (milli == XP_MILLI)
		return s->milli[d] == XP_MILLI && s->mem[d] == admitted(dv);
	return dv->mode != XP_MODE_WHOLE && s->milli[d] >= milli &&
	       s->mem[d] >= (int64_t)q->dev_mem_mib;
}

static int matches(const struct xp_node *node, uint32_t d, const struct xp_request *q)
{
	return xp_selector_match(&q->sel, &node->devs[d]);
}

static int usable(const struct xp_node *node, const struct nstate *s, uint32_t d,
		  const struct xp_request *q)
{
	return matches(node, d, q) && fits(node, s, d, q);
}

/* L_n: free milli of the healthy accelerators. */
static int64_t free_accel(const struct xp_node *node, const struct nstate *s)
{
	int64_t l = 0;
	for (uint32_t d = 0; d < s->ndev; d++)
		if (s->ok[d] && is_accel(&node->devs[d]))
			l += s->milli[d];
	return l;
}

static int64_t healthy_accel(const struct xp_node *node, const struct nstate *s)
{
	int64_t n = 0;
	for (uint32_t d = 0; d < s->ndev; d++)
		if (s->ok[d] && is_accel(&node->devs[d]))
			n++;
	return n;
}

static int constrained(const struct xp_request *q)
{
	return q->topo != XP_TOPO_ANY && q->dev_count > 1;
}

static int group_of(const struct xp_node *node, uint32_t d, const struct xp_request *q)
{
	return q->topo == XP_TOPO_SAME_NUMA ? node->devs[d].numa : node->devs[d].island;
}

/* Usable devices in d's group (island / NUMA domain; -1 = a group of its own). */
static uint32_t group_room(const struct xp_node *node, const struct nstate *s, uint32_t d,
			   const struct xp_request *q)
{
	int g = group_of(node, d, q);
	if (g == -1)
		return usable(node, s, d, q) ? 1 : 0;
	uint32_t n = 0;
	for (uint32_t e = 0; e < s->ndev; e++)
		if (group_of(node, e, q) == g && usable(node, s, e, q))
			n++;
	return n;
}

static int why_state(const struct ref_sched *r, uint32_t n, const struct nstate *s,
		     const struct xp_request *q)
{
	const struct xp_node *node = &r->c->nodes[n];
	if (q->node >= 0 && (uint32_t)q->node != n) /* pinned elsewhere: checked first */
		return XP_WHY_NODE;
	if (!r->up[n])
		return XP_WHY_DOWN;
	if (q->dev_count) {
		uint32_t m = 0;
		for (uint32_t d = 0; d < s->ndev; d++)
			if (s->ok[d] && matches(node, d, q))
				m++;
		if (m < q->dev_count)
			return XP_WHY_NO_DEVICE;
	}
	if (s->cpu < (int64_t)q->cpu_milli)
		return XP_WHY_CPU;
	if (r->mem_free[n] < (int64_t)q->mem_mib)
		return XP_WHY_MEM;
	if (q->dev_count) {
		uint32_t m = 0;
		for (uint32_t d = 0; d < s->ndev; d++)
			if (usable(node, s, d, q))
				m++;
		if (m < q->dev_count)
			return XP_WHY_DEV_BUSY;
		if (constrained(q)) {
			int ok = 0;
			for (uint32_t d = 0; d < s->ndev && !ok; d++)
				if (usable(node, s, d, q) &&
				    group_room(node, s, d, q) >= q->dev_count)
					ok = 1;
			if (!ok)
				return XP_WHY_TOPOLOGY;
		}
	}
	return XP_WHY_FITS;
}

int ref_why(const struct ref_sched *r, uint32_t node, const struct xp_request *q)
{
	struct nstate s;
	load(r, node, &s);
	return why_state(r, node, &s, q);
}

/* Whole devices: lowest-index usable ones, inside the group of the lowest-
 * index usable device whose group has room when topology is constrained.
 * Returns the number taken. */
static uint32_t pick_whole(const struct xp_node *node, const struct nstate *s,
			   const struct xp_request *q, uint8_t *devs)
{
	uint32_t k = 0;
	if (constrained(q)) {
		for (uint32_t d = 0; d < s->ndev; d++) {
			if (!usable(node, s, d, q) || group_room(node, s, d, q) < q->dev_count)
				continue;
			int g = group_of(node, d, q);
			for (uint32_t e = d; e < s->ndev && k < q->dev_count; e++)
				if (group_of(node, e, q) == g && usable(node, s, e, q))
					devs[k++] = (uint8_t)e;
			return k;
		}
		return 0;
	}
	for (uint32_t d = 0; d < s->ndev && k < q->dev_count; d++)
		if (usable(node, s, d, q))
			devs[k++] = (uint8_t)d;
	return k;
}

/* Fraction, best fit: least free milli, lowest index on ties. */
static int pick_least(const struct xp_node *node, const struct nstate *s,
		      const struct xp_request *q)
{
	int best = -1;
	for (uint32_t d = 0; d < s->ndev; d++)
		if (usable(node, s, d, q) && (best < 0 || s->milli[d] < s->milli[best]))
			best = (int)d;
	return best;
}

/* Fraction, spread: most free milli, lowest index on ties. */
static int pick_most(const struct xp_node *node, const struct nstate *s, const struct xp_request *q)
{
	int best = -1;
	for (uint32_t d = 0; d < s->ndev; d++)
		if (usable(node, s, d, q) && (best < 0 || s->milli[d] > s->milli[best]))
			best = (int)d;
	return best;
}

/* F_n(m) for one shape on a state. */
static int64_t frag_shape(const struct xp_node *node, const struct nstate *s,
			  const struct xp_request *m)
{
	int64_t l = free_accel(node, s);
	if (m->dev_count == 0 || s->cpu < (int64_t)m->cpu_milli)
		return l;
	uint32_t n = 0;
	for (uint32_t d = 0; d < s->ndev; d++)
		if (usable(node, s, d, m))
			n++;
	if (n < m->dev_count)
		return l;
	int64_t f = 0;
	for (uint32_t d = 0; d < s->ndev; d++)
		if (s->ok[d] && is_accel(&node->devs[d]) && !usable(node, s, d, m))
			f += s->milli[d];
	return f;
}

static double frag_state(const struct ref_sched *r, const struct xp_node *node,
			 const struct nstate *s)
{
	double f = 0;
	for (size_t i = 0; i < r->nm; i++)
		f += r->m[i].p * (double)frag_shape(node, s, &r->m[i].req);
	return f;
}

double ref_frag_node(const struct ref_sched *r, uint32_t node)
{
	struct nstate s;
	load(r, node, &s);
	return frag_state(r, &r->c->nodes[node], &s);
}

double ref_frag_total(const struct ref_sched *r)
{
	double f = 0;
	for (size_t n = 0; n < r->nnodes; n++)
		f += ref_frag_node(r, (uint32_t)n);
	return f;
}

/* Apply one slot of q on device d of a state. */
static void take(const struct xp_node *node, const struct xp_request *q, struct nstate *s,
		 uint32_t d)
{
	if (milli_on(node, d, q) == XP_MILLI) {
		s->milli[d] = 0;
		s->mem[d] = 0;
	} else {
		s->milli[d] -= milli_on(node, d, q);
		s->mem[d] -= (int64_t)q->dev_mem_mib;
	}
}

/* xpool's G_n: F_n(M) + max(0, L_n - c_n/rho) - pi_n * L_n. */
static double xpool_state(const struct ref_sched *r, const struct xp_node *node, uint32_t n,
			  const struct nstate *s)
{
	double f = frag_state(r, node, s), l = (double)free_accel(node, s), v = 0;
	if (r->rho > 0 && l - (double)s->cpu / r->rho > 0)
		v += l - (double)s->cpu / r->rho;
	if (r->pressure)
		v -= r->pressure[n] * l;
	return f + v;
}

/* fgd: trunc(100 sigmoid(delta/1000)); xpool: trunc(40 sigmoid(delta/3000)) */
static int32_t fgd_of(const struct ref_sched *r, double before, double after)
{
	double levels = r->policy == REF_XPOOL ? 40.0 : 100.0;
	double x = (before - after) / (r->policy == REF_XPOOL ? 3000.0 : 1000.0);
	return (int32_t)(levels * (1.0 / (1.0 + exp(-x))));
}

/* The measure the policy descends: F_n(M) for fgd, G_n for xpool. */
static double measure(const struct ref_sched *r, const struct xp_node *node, const struct nstate *s)
{
	if (r->policy == REF_XPOOL)
		return xpool_state(r, node, (uint32_t)(node - r->c->nodes), s);
	return frag_state(r, node, s);
}

/* FGD on a node: the score, and for a fraction the device of the best
 * score (first index on ties). */
static int32_t fgd_score(const struct ref_sched *r, const struct xp_node *node,
			 const struct nstate *s, const struct xp_request *q, int *dev)
{
	double before = measure(r, node, s);
	struct nstate t = *s;
	t.cpu -= (int64_t)q->cpu_milli;
	if (q->dev_count && !is_whole(q)) {
		int32_t best = -1;
		for (uint32_t d = 0; d < s->ndev; d++) {
			if (!usable(node, s, d, q))
				continue;
			struct nstate u = t;
			take(node, q, &u, d);
			int32_t sc = fgd_of(r, before, measure(r, node, &u));
			if (sc > best) {
				best = sc;
				if (dev)
					*dev = (int)d;
			}
		}
		return best;
	}
	if (q->dev_count) {
		uint8_t devs[XP_MAX_NODE_DEVS];
		uint32_t k = pick_whole(node, s, q, devs);
		for (uint32_t i = 0; i < k; i++)
			take(node, q, &t, devs[i]);
	}
	return fgd_of(r, before, measure(r, node, &t));
}

static int tag_of(uint16_t count, uint16_t milli)
{
	if (count == 0)
		return -1;
	if (milli < XP_MILLI)
		return 0;
	return count >= 16 ? 16 : count;
}

static int64_t imax(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int32_t packing_score(const struct xp_node *node, const struct nstate *s,
			     const struct xp_request *q)
{
	if (q->dev_count == 0)
		return 0;
	int64_t f = 0, nacc = 0;
	for (uint32_t d = 0; d < s->ndev; d++)
		if (s->ok[d] && is_accel(&node->devs[d])) {
			nacc++;
			if (s->milli[d] == XP_MILLI)
				f++;
		}
	if (f == nacc)
		return (int32_t)imax(33 - f, f);
	/* matching healthy devices by free milli ascending (stable) */
	uint32_t order[XP_MAX_NODE_DEVS], n = 0;
	for (uint32_t d = 0; d < s->ndev; d++)
		if (s->ok[d] && matches(node, d, q)) {
			uint32_t i = n++;
			while (i > 0 && s->milli[order[i - 1]] > s->milli[d]) {
				order[i] = order[i - 1];
				i--;
			}
			order[i] = d;
		}
	int64_t taken = 0, ffree = 0, pct = 0;
	for (uint32_t i = 0; i < n && taken < q->dev_count; i++) {
		uint32_t d = order[i];
		if (!fits(node, s, d, q))
			continue;
		taken++;
		if (s->milli[d] == XP_MILLI)
			ffree++;
		pct += (int64_t)s->milli[d] * 100 / XP_MILLI;
	}
	if (ffree > 0)
		return (int32_t)imax(50 - ffree, 33);
	return (int32_t)imax(100 - pct / 10, 50);
}

static double ratio(double a, double b)
{
	return b == 0 ? 0 : a / b;
}

static int32_t binpack_score(const struct xp_node *node, const struct nstate *s,
			     const struct xp_request *q)
{
	int64_t need, used, cap = XP_MILLI * healthy_accel(node, s);
	if (q->dev_count == 0 || cap == 0) {
		/* "no devices": the request asks for none, or the node has no
		 * accelerator capacity to divide by */
		cap = (int64_t)node->cpu_milli;
		used = cap - s->cpu;
		need = (int64_t)q->cpu_milli;
	} else {
		used = cap - free_accel(node, s);
		need = (int64_t)q->dev_count * q->dev_milli;
	}
	if (cap == 0)
		return 0;
	return (int32_t)(10000 * (need + used) / cap);
}

/* "weighted" (scheduler.md): per node, the accelerators' mean peak GFLOPS
 * (fp16, else fp32) x 1000 / TDP, and the sum of off-node link bandwidth */
static int64_t node_ppw(const struct xp_node *node)
{
	uint64_t sum = 0, cnt = 0;
	for (uint32_t d = 0; d < node->ndevs; d++) {
		const struct xp_device *dv = &node->devs[d];
		uint32_t g = dv->peak_gflops[XP_PREC_FP16] ? dv->peak_gflops[XP_PREC_FP16]
							   : dv->peak_gflops[XP_PREC_FP32];
		if (is_accel(dv) && dv->tdp_w && g) {
			sum += (uint64_t)g * 1000 / dv->tdp_w;
			cnt++;
		}
	}
	return cnt ? (int64_t)(sum / cnt) : 0;
}

static int64_t node_net(const struct xp_node *node)
{
	int64_t sum = 0;
	for (uint32_t d = 0; d < node->ndevs; d++)
		for (uint32_t l = 0; l < node->devs[d].nlinks; l++)
			if (node->devs[d].links[l].peer < 0)
				sum += node->devs[d].links[l].gbps;
	return sum;
}

static int64_t lim10k(int64_t v)
{
	return v < 0 ? 0 : v > 10000 ? 10000 : v;
}

static int32_t weighted_score(const struct ref_sched *r, const struct xp_node *node,
			      const struct nstate *s, const struct xp_request *q)
{
	/* affinity: fit (bestfit in 0..10000) and NUMA locality */
	double mc = (double)r->maxcpu, mm = (double)r->maxmilli;
	int64_t left =
		(int64_t)(5000.0 * (double)(s->cpu - (int64_t)q->cpu_milli) / mc) +
		(int64_t)(5000.0 *
			  ((double)free_accel(node, s) - (double)q->dev_count * q->dev_milli) / mm);
	int64_t fit = lim10k(10000 - left), loc = 10000;
	if (q->dev_count > 1) {
		int64_t best = 0;
		for (int numa = 0; numa < XP_MAX_NODE_DEVS; numa++) {
			int64_t c = 0;
			for (uint32_t d = 0; d < s->ndev; d++) {
				int nd = node->devs[d].numa;
				if ((nd < 0 || nd >= XP_MAX_NODE_DEVS ? 0 : nd) == numa &&
				    usable(node, s, d, q))
					c++;
			}
			if (c > best)
				best = c;
		}
		loc = lim10k(10000 * best / q->dev_count);
	}
	int64_t aff = (fit + loc) / 2;
	/* energy: busy, and efficiency against the cluster's best */
	int busy = s->cpu < (int64_t)node->cpu_milli;
	int64_t bad = 0, maxppw = 0, maxnet = 0;
	for (uint32_t d = 0; d < s->ndev; d++) {
		busy |= s->milli[d] < XP_MILLI || s->mem[d] < admitted(&node->devs[d]);
		bad += !s->ok[d];
	}
	for (size_t n = 0; n < r->nnodes; n++) {
		int64_t p = node_ppw(&r->c->nodes[n]), b = node_net(&r->c->nodes[n]);
		maxppw = p > maxppw ? p : maxppw;
		maxnet = b > maxnet ? b : maxnet;
	}
	int64_t energy =
		(busy ? 10000 : 0) / 2 + (maxppw ? 10000 * node_ppw(node) / maxppw : 5000) / 2;
	int64_t net = maxnet ? 10000 * node_net(node) / maxnet : 5000;
	if (q->dev_count < 2)
		net = 10000 - net;
	int64_t health = 10000 / (1 + bad);
	/* the brief's weights without priority's (the same on every node) */
	return (int32_t)((250 * aff + 200 * energy + 150 * net + 100 * health) / 700);
}

static int32_t clamp(int64_t v, int32_t max)
{
	return v < 0 ? 0 : v > max ? max : (int32_t)v;
}

static int32_t score_state(const struct ref_sched *r, uint32_t n, const struct nstate *s,
			   const struct xp_request *q, int *dev)
{
	const struct xp_node *node = &r->c->nodes[n];
	double mc = (double)r->maxcpu, mm = (double)r->maxmilli;
	double cn = (double)s->cpu, c = (double)q->cpu_milli;
	double l = (double)free_accel(node, s);
	double ku = (double)q->dev_count * q->dev_milli;
	int32_t max = ref_score_max(r->policy);
	switch (r->policy) {
	case REF_RANDOM:
		return 0;
	case REF_DOTPROD: {
		double v =
			100.0 *
			(1.0 - (ratio(ratio(cn, mc) * c, mc) + ratio(ratio(l, mm) * ku, mm)) / 2.0);
		return clamp((int64_t)v, max);
	}
	case REF_CLUSTERING: {
		if (q->dev_count == 0)
			return 0;
		int64_t b = r->maxmilli ? 25 * ((int64_t)r->maxmilli - (int64_t)l) /
						  (int64_t)r->maxmilli
					: 0;
		int t = tag_of(q->dev_count, q->dev_milli);
		int ntags = 0;
		for (int i = 0; i < REF_NTAGS; i++)
			if (r->tags[n][i])
				ntags++;
		int64_t v;
		if (r->tags[n][t])
			v = ntags == 1 ? b + 75 : b + 50;
		else if (ntags == 0)
			v = b + 25;
		else
			v = b;
		return clamp(v, max);
	}
	case REF_PACKING:
		return clamp(packing_score(node, s, q), max);
	case REF_BESTFIT: {
		double v = 100.0 * (1.0 - (ratio(0.5 * (cn - c), mc) + ratio(0.5 * (l - ku), mm)));
		return clamp((int64_t)v, max);
	}
	case REF_FGD:
	case REF_XPOOL:
		return clamp(fgd_score(r, node, s, q, dev), max);
	case REF_BINPACK:
		return clamp(binpack_score(node, s, q), max);
	case REF_SPREAD:
		return clamp(10000 - (int64_t)clamp(binpack_score(node, s, q), 10000), max);
	case REF_WEIGHTED:
		return clamp(weighted_score(r, node, s, q), max);
	}
	return 0;
}

int32_t ref_score(const struct ref_sched *r, uint32_t node, const struct xp_request *q)
{
	struct nstate s;
	load(r, node, &s);
	return score_state(r, node, &s, q, NULL);
}

/* Node ids by ascending rank (insertion sort: ranks are any distinct values). */
static uint32_t *rank_order(const struct ref_sched *r)
{
	uint32_t *o = malloc((r->nnodes + 1) * sizeof(*o));
	for (size_t n = 0; n < r->nnodes; n++) {
		size_t i = n;
		while (i > 0 && r->rank[o[i - 1]] > r->rank[n]) {
			o[i] = o[i - 1];
			i--;
		}
		o[i] = (uint32_t)n;
	}
	return o;
}

int32_t ref_max_score(const struct ref_sched *r, const struct xp_request *q)
{
	int32_t best = -1;
	for (size_t n = 0; n < r->nnodes; n++)
		if (ref_why(r, (uint32_t)n, q) == XP_WHY_FITS) {
			int32_t sc = ref_score(r, (uint32_t)n, q);
			if (sc > best)
				best = sc;
		}
	return best;
}

size_t ref_nfeasible(const struct ref_sched *r, const struct xp_request *q)
{
	size_t k = 0;
	for (size_t n = 0; n < r->nnodes; n++)
		if (ref_why(r, (uint32_t)n, q) == XP_WHY_FITS)
			k++;
	return k;
}

void ref_pick_on(const struct ref_sched *r, uint32_t n, const struct xp_request *q,
		 struct xp_rng *rng, struct xp_alloc *a)
{
	const struct xp_node *node = &r->c->nodes[n];
	struct nstate s;
	load(r, n, &s);
	memset(a, 0, sizeof(*a));
	a->node = n;
	a->cpu_milli = q->cpu_milli;
	a->mem_mib = q->mem_mib;
	if (q->dev_count == 0)
		return;
	a->dev_milli = q->dev_milli;
	a->dev_mem_mib = q->dev_mem_mib;
	if (is_whole(q)) {
		a->ndev = (uint16_t)pick_whole(node, &s, q, a->devs);
		if (a->ndev == 1)
			a->dev_milli = (uint16_t)milli_on(node, a->devs[0], q);
		return;
	}
	int d = -1;
	switch (r->policy) {
	case REF_RANDOM: {
		uint32_t cand[XP_MAX_NODE_DEVS], k = 0;
		for (uint32_t e = 0; e < s.ndev; e++)
			if (usable(node, &s, e, q))
				cand[k++] = e;
		if (k)
			d = (int)cand[xp_rng_below(rng, k)];
		break;
	}
	case REF_FGD:
	case REF_XPOOL:
		fgd_score(r, node, &s, q, &d);
		break;
	case REF_SPREAD:
		d = pick_most(node, &s, q);
		break;
	default:
		d = pick_least(node, &s, q);
		break;
	}
	if (d >= 0) {
		a->ndev = 1;
		a->devs[0] = (uint8_t)d;
		a->dev_milli = (uint16_t)milli_on(node, (uint32_t)d, q);
	}
}

int ref_alloc_fits(const struct ref_sched *r, const struct xp_request *q, const struct xp_alloc *a)
{
	if (a->node >= r->nnodes)
		return 0;
	const struct xp_node *node = &r->c->nodes[a->node];
	struct nstate s;
	load(r, a->node, &s);
	if (why_state(r, a->node, &s, q) != XP_WHY_FITS || a->ndev != q->dev_count)
		return 0;
	for (uint32_t i = 0; i < a->ndev; i++) {
		if (a->devs[i] >= s.ndev || !usable(node, &s, a->devs[i], q))
			return 0;
		for (uint32_t j = 0; j < i; j++)
			if (a->devs[j] == a->devs[i])
				return 0;
		if (constrained(q)) {
			int g = group_of(node, a->devs[i], q);
			if (g == -1 || g != group_of(node, a->devs[0], q))
				return 0;
		}
	}
	return 1;
}

int ref_pick(const struct ref_sched *r, const struct xp_request *q, struct xp_rng *rng,
	     struct xp_alloc *a)
{
	uint32_t *order = rank_order(r);
	uint32_t *cand = malloc((r->nnodes + 1) * sizeof(*cand));
	size_t k = 0;
	int32_t best = -1;
	for (size_t i = 0; i < r->nnodes; i++) {
		uint32_t n = order[i];
		if (ref_why(r, n, q) != XP_WHY_FITS)
			continue;
		if (r->policy == REF_RANDOM) {
			cand[k++] = n;
			continue;
		}
		int32_t sc = ref_score(r, n, q);
		if (sc > best) {
			best = sc;
			k = 0;
		}
		if (sc == best)
			cand[k++] = n;
	}
	int rc = -1;
	if (k) {
		uint32_t n = cand[0];
		if (r->policy == REF_RANDOM || r->tiebreak == XP_TIE_RANDOM)
			n = cand[xp_rng_below(rng, k)];
		ref_pick_on(r, n, q, rng, a);
		rc = 0;
	}
	free(cand);
	free(order);
	return rc;
}

void ref_commit(struct ref_sched *r, const struct xp_alloc *a)
{
	size_t n = a->node;
	r->cpu_free[n] -= (int64_t)a->cpu_milli;
	r->mem_free[n] -= (int64_t)a->mem_mib;
	for (uint32_t i = 0; i < a->ndev; i++) {
		size_t d = r->dev0[n] + a->devs[i];
		if (a->dev_milli == XP_MILLI) {
			r->dev_milli[d] = 0;
			r->dev_mem[d] = 0;
		} else {
			r->dev_milli[d] -= a->dev_milli;
			r->dev_mem[d] -= (int64_t)a->dev_mem_mib;
		}
	}
	int t = tag_of(a->ndev, a->dev_milli);
	if (t >= 0)
		r->tags[n][t]++;
}

void ref_release(struct ref_sched *r, const struct xp_alloc *a)
{
	size_t n = a->node;
	const struct xp_node *node = &r->c->nodes[n];
	r->cpu_free[n] += (int64_t)a->cpu_milli;
	r->mem_free[n] += (int64_t)a->mem_mib;
	for (uint32_t i = 0; i < a->ndev; i++) {
		size_t d = r->dev0[n] + a->devs[i];
		if (a->dev_milli == XP_MILLI) {
			r->dev_milli[d] = XP_MILLI;
			r->dev_mem[d] = admitted(&node->devs[a->devs[i]]);
		} else {
			r->dev_milli[d] += a->dev_milli;
			r->dev_mem[d] += (int64_t)a->dev_mem_mib;
		}
	}
	int t = tag_of(a->ndev, a->dev_milli);
	if (t >= 0)
		r->tags[n][t]--;
}

void ref_set_node_up(struct ref_sched *r, uint32_t node, int up)
{
	r->up[node] = up ? 1 : 0;
}

void ref_set_device_ok(struct ref_sched *r, uint32_t node, uint16_t dev, int ok)
{
	r->dev_ok[r->dev0[node] + dev] = ok ? 1 : 0;
}

void ref_explain(const struct ref_sched *r, const struct xp_request *q, struct xp_explain *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t n = 0; n < r->nnodes; n++) {
		int w = ref_why(r, (uint32_t)n, q);
		out->nodes[w]++;
		if (w == XP_WHY_CPU) {
			uint64_t sh = q->cpu_milli - (uint64_t)r->cpu_free[n];
			if (out->nodes[w] == 1 || sh < out->cpu_short_min)
				out->cpu_short_min = sh;
		} else if (w == XP_WHY_MEM) {
			uint64_t sh = q->mem_mib - (uint64_t)r->mem_free[n];
			if (out->nodes[w] == 1 || sh < out->mem_short_min)
				out->mem_short_min = sh;
		}
	}
}

uint64_t ref_total_milli(const struct ref_sched *r)
{
	uint64_t t = 0;
	for (size_t n = 0; n < r->nnodes; n++) {
		struct nstate s;
		load(r, (uint32_t)n, &s);
		t += XP_MILLI * (uint64_t)healthy_accel(&r->c->nodes[n], &s);
	}
	return t;
}

uint64_t ref_used_milli(const struct ref_sched *r)
{
	uint64_t t = 0;
	for (size_t n = 0; n < r->nnodes; n++) {
		struct nstate s;
		load(r, (uint32_t)n, &s);
		const struct xp_node *node = &r->c->nodes[n];
		t += (uint64_t)(XP_MILLI * healthy_accel(node, &s) - free_accel(node, &s));
	}
	return t;
}

int64_t ref_cpu_free(const struct ref_sched *r, uint32_t node)
{
	return r->cpu_free[node];
}

int64_t ref_mem_free(const struct ref_sched *r, uint32_t node)
{
	return r->mem_free[node];
}

int32_t ref_dev_free_milli(const struct ref_sched *r, uint32_t node, uint16_t dev)
{
	return r->dev_milli[r->dev0[node] + dev];
}

int64_t ref_dev_free_mem(const struct ref_sched *r, uint32_t node, uint16_t dev)
{
	return r->dev_mem[r->dev0[node] + dev];
}

void ref_set_tiebreak(struct ref_sched *r, int tiebreak)
{
	r->tiebreak = tiebreak;
}

void ref_set_ranks(struct ref_sched *r, const uint32_t *rank)
{
	memcpy(r->rank, rank, r->nnodes * sizeof(*rank));
}

/* Does some device of node n match m's selector? */
static int node_matches(const struct ref_sched *r, size_t n, const struct xp_request *m)
{
	const struct xp_node *node = &r->c->nodes[n];
	for (uint32_t d = 0; d < node->ndevs; d++)
		if (matches(node, d, m))
			return 1;
	return 0;
}

/* cap_n: milli of node n's healthy accelerators now, 0 when n is down. */
static double node_cap(const struct ref_sched *r, size_t n)
{
	const struct xp_node *node = &r->c->nodes[n];
	double cap = 0;
	if (!r->up[n])
		return 0;
	for (uint32_t d = 0; d < node->ndevs; d++)
		if (r->dev_ok[r->dev0[n] + d] && is_accel(&node->devs[d]))
			cap += XP_MILLI;
	return cap;
}

/* rho and pi_n, as docs/design/scheduler.md defines them for xpool. */
static void xpool_summaries(struct ref_sched *r)
{
	double cpu = 0, milli = 0, total = 0;
	free(r->pressure);
	r->pressure = calloc(r->nnodes + 1, sizeof(*r->pressure));
	for (size_t n = 0; n < r->nnodes; n++)
		total += node_cap(r, n);
	for (size_t i = 0; i < r->nm; i++)
		if (r->m[i].req.dev_count) {
			cpu += r->m[i].p * (double)r->m[i].req.cpu_milli;
			milli += r->m[i].p * (double)r->m[i].req.dev_count * r->m[i].req.dev_milli;
		}
	r->rho = milli > 0 ? cpu / milli : 0;
	for (size_t i = 0; i < r->nm && milli > 0; i++) {
		const struct xp_request *m = &r->m[i].req;
		double supply = 0;
		if (!m->dev_count)
			continue;
		for (size_t n = 0; n < r->nnodes; n++)
			if (node_matches(r, n, m))
				supply += node_cap(r, n);
		if (supply <= 0 || supply >= total)
			continue;
		double share = r->m[i].p * m->dev_count * m->dev_milli / milli;
		for (size_t n = 0; n < r->nnodes; n++)
			if (node_matches(r, n, m))
				r->pressure[n] += share * total / supply;
	}
}

void ref_set_workload(struct ref_sched *r, const struct xp_wshape *m, size_t n)
{
	free(r->m);
	r->m = NULL;
	r->nm = n;
	if (n) {
		r->m = malloc(n * sizeof(*m));
		memcpy(r->m, m, n * sizeof(*m));
	}
	xpool_summaries(r);
}

struct ref_sched *ref_create(const struct xp_cluster *c, const char *policy)
{
	int p = -1;
	if (policy && strcmp(policy, "mcts") == 0)
		policy = "xpool"; /* one request at a time, mcts decides as xpool */
	for (int i = 0; i < REF_NPOLICIES; i++)
		if (strcmp(policy ? policy : "fgd", ref_names[i]) == 0)
			p = i;
	if (p < 0)
		return NULL;
	struct ref_sched *r = calloc(1, sizeof(*r));
	size_t nn = c->nnodes, nd = 0;
	r->c = c;
	r->policy = p;
	r->tiebreak = XP_TIE_RANK;
	r->nnodes = nn;
	r->cpu_free = calloc(nn + 1, sizeof(*r->cpu_free));
	r->mem_free = calloc(nn + 1, sizeof(*r->mem_free));
	r->up = calloc(nn + 1, sizeof(*r->up));
	r->rank = calloc(nn + 1, sizeof(*r->rank));
	r->tags = calloc(nn + 1, sizeof(*r->tags));
	r->dev0 = calloc(nn + 1, sizeof(*r->dev0));
	for (size_t n = 0; n < nn; n++) {
		r->dev0[n] = nd;
		nd += c->nodes[n].ndevs;
	}
	r->dev_milli = calloc(nd + 1, sizeof(*r->dev_milli));
	r->dev_mem = calloc(nd + 1, sizeof(*r->dev_mem));
	r->dev_ok = calloc(nd + 1, sizeof(*r->dev_ok));
	for (size_t n = 0; n < nn; n++) {
		const struct xp_node *node = &c->nodes[n];
		r->cpu_free[n] = (int64_t)node->cpu_milli;
		r->mem_free[n] = (int64_t)node->mem_mib;
		r->up[n] = 1;
		r->rank[n] = (uint32_t)n;
		uint64_t acc = 0;
		for (uint16_t d = 0; d < node->ndevs; d++) {
			r->dev_milli[r->dev0[n] + d] = XP_MILLI;
			r->dev_mem[r->dev0[n] + d] = admitted(&node->devs[d]);
			r->dev_ok[r->dev0[n] + d] = node->devs[d].health != XP_HEALTH_UNHEALTHY;
			if (is_accel(&node->devs[d]))
				acc += XP_MILLI;
		}
		if (node->cpu_milli > r->maxcpu)
			r->maxcpu = node->cpu_milli;
		if (acc > r->maxmilli)
			r->maxmilli = acc;
	}
	if (r->maxcpu == 0)
		r->maxcpu = 1;
	if (r->maxmilli == 0)
		r->maxmilli = XP_MILLI;
	return r;
}

void ref_destroy(struct ref_sched *r)
{
	if (!r)
		return;
	free(r->cpu_free);
	free(r->mem_free);
	free(r->up);
	free(r->rank);
	free(r->tags);
	free(r->dev0);
	free(r->dev_milli);
	free(r->dev_mem);
	free(r->dev_ok);
	free(r->pressure);
	free(r->m);
	free(r);
}
