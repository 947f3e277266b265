/*
 * capacity: the free capacity the core tracks and the changes to it:
 * creation, node types and ranks, commit and release of allocations,
 * node and device health, the getters (observers) and the invariant check.
 * What fits where, and which devices to take, is fit.c.
 *
 * Accounting rule: a node's contribution to the cluster totals (capacity
 * and used milli of healthy accelerators, F(M)) is subtracted before any
 * change to the node and added back after it (node_account), so totals
 * never drift from the per-node values whatever the change.
 */
#include "sched_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/strbuf.h"
#include "../../lib/xalloc.h"

static void node_sums(struct xp_sched *s, uint32_t n)
{
	struct xp_nstate *ns = &s->ns[n];
	ns->free_milli = ns->cap_milli = 0;
	for (uint16_t d = 0; d < ns->ndev; d++) {
		const struct xp_dstate *ds = &s->dev[ns->dev0 + d];
		if (ds->accel && ds->ok) {
			ns->free_milli += ds->free_milli;
			ns->cap_milli += XP_MILLI;
		}
	}
}

static void node_account(struct xp_sched *s, uint32_t n, int sign)
{
	const struct xp_nstate *ns = &s->ns[n];
	if (sign > 0) {
		s->total_milli += ns->cap_milli;
		s->used_milli += ns->cap_milli - ns->free_milli;
		s->frag_total += ns->frag;
	} else {
		s->total_milli -= ns->cap_milli;
		s->used_milli -= ns->cap_milli - ns->free_milli;
		s->frag_total -= ns->frag;
	}
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	h *= 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 31);
}

static uint64_t node_key(const struct xp_sched *s, uint32_t n)
{
	const struct xp_nstate *ns = &s->ns[n];
	uint64_t h = mix(0x51ed27, (uint64_t)ns->cpu_free);
	h = mix(h, (uint64_t)ns->up | (uint64_t)ns->dedicated << 8 | (uint64_t)ns->tagmask << 16);
	h = mix(h, s->w_fail ? s->w_fail[n] : 0);
	for (uint16_t t = 0; t < XP_NTAGS; t++)
		if (ns->tagmask >> t & 1)
			h = mix(h, ns->tagcnt[t] | (uint64_t)t << 32);
	for (uint16_t d = 0; d < ns->ndev; d++) {
		const struct xp_dstate *ds = &s->dev[ns->dev0 + d];
		h = mix(h, ds->free_milli | (uint64_t)ds->ok << 16);
		h = mix(h, ds->free_mem);
	}
	return h | 1;
}

/* F_n(M) of node n as it is; with a batch optimiser through a memo of the
 * node's last XP_MEMO states, most recent first (searches revisit states:
 * index.c). */
static double node_frag(struct xp_sched *s, uint32_t n)
{
	struct xp_nstate *ns = &s->ns[n];
	uint64_t key = ns->key;
	double v;
	int i;

	if (!s->pol->optimise)
		return xp_frag_eval(s, n, -1, NULL, NULL);
	for (i = 0; i < XP_MEMO - 1 && ns->fkey[i] != key; i++)
		;
	v = ns->fkey[i] == key ? ns->fval[i] : xp_frag_eval(s, n, -1, NULL, NULL);
	memmove(&ns->fkey[1], &ns->fkey[0], (size_t)i * sizeof(ns->fkey[0]));
	memmove(&ns->fval[1], &ns->fval[0], (size_t)i * sizeof(ns->fval[0]));
	ns->fkey[0] = key;
	ns->fval[0] = v;
	return v;
}

/* After a change to node n: sums, state key, F_n(M), totals, index. */
static void node_changed(struct xp_sched *s, uint32_t n)
{
	node_sums(s, n);
	s->ns[n].key = node_key(s, n);
	if (s->nm)
		s->ns[n].frag = node_frag(s, n);
	node_account(s, n, +1);
	if (s->idx)
		xp_index_node_changed(s, n);
}

static void build_types(struct xp_sched *s)
{
	struct xp_strtab *sig = xp_strtab_create();
	struct xp_sb b;
	size_t cap = 16;

	xp_sb_init(&b);
	s->type_node = XNEWV(uint32_t, cap);
	s->type_homog = XNEWV(uint8_t, cap);
	for (uint32_t n = 0; n < s->nnodes; n++) {
		const struct xp_node *node = &s->c->nodes[n];
		xp_sb_reset(&b);
		for (uint16_t d = 0; d < node->ndevs; d++) {
			const struct xp_device *dv = &node->devs[d];
			xp_sb_printf(&b, "%u:%u:%u:%llu:%u:%u:%u:%u;", dv->cls, dv->vendor,
				     dv->model, (unsigned long long)dv->mem_mib, dv->cc, dv->mode,
				     dv->mem_overcommit, dv->replicas);
		}
		xp_sym id = xp_strtab_intern(sig, b.s);
		uint32_t t = id - 1;
		if (t == s->ntypes) {
			if (s->ntypes == cap) {
				cap *= 2;
				s->type_node = xreallocarray(s->type_node, cap, sizeof(uint32_t));
				s->type_homog = xreallocarray(s->type_homog, cap, 1);
			}
			s->type_homog[s->ntypes] = 1;
			for (uint16_t d = 1; d < node->ndevs; d++) {
				const struct xp_device *a = &node->devs[0], *z = &node->devs[d];
				if (a->cls != z->cls || a->vendor != z->vendor ||
				    a->model != z->model || a->mem_mib != z->mem_mib ||
				    a->cc != z->cc || a->mode != z->mode ||
				    a->replicas != z->replicas ||
				    a->mem_overcommit != z->mem_overcommit)
					s->type_homog[s->ntypes] = 0;
			}
			s->type_node[s->ntypes++] = n;
		}
		s->ns[n].type = t;
	}
	xp_sb_free(&b);
	xp_strtab_destroy(sig);
}

struct xp_sched *xp_sched_create(const struct xp_cluster *c, const struct xp_sched_opts *o,
				 struct xp_err *err)
{
	struct xp_sched_opts opts = { 0 };
	const struct xp_policy_ops *pol;
	struct xp_sched *s;
	uint32_t ndevs = 0;

	if (o)
		opts = *o;
	if (!opts.policy)
		opts.policy = "fgd";
	pol = xp_policy_find(opts.policy);
	if (!pol) {
		xp_errf(err, XP_EINVAL, "unknown policy '%s'", opts.policy);
		return NULL;
	}
	uint32_t wsum = 0;
	for (int i = 0; i < XP_W_N; i++)
		wsum += opts.weights[i];
	if (!wsum) {
		static const uint32_t brief[XP_W_N] = { 300, 250, 200, 150, 100 };
		memcpy(opts.weights, brief, sizeof(brief));
	}
	if (opts.tiebreak != XP_TIE_RANK && opts.tiebreak != XP_TIE_RANDOM) {
		xp_errf(err, XP_EINVAL, "unknown tie-break rule %d", opts.tiebreak);
		return NULL;
	}
	if (c->nnodes > UINT32_MAX / 2) {
		xp_errf(err, XP_ERANGE, "%zu nodes is too many", c->nnodes);
		return NULL;
	}
	for (size_t n = 0; n < c->nnodes; n++) {
		if (c->nodes[n].ndevs > XP_MAX_NODE_DEVS) {
			xp_errf(err, XP_ERANGE, "node %s: %u devices, at most %d", c->nodes[n].name,
				c->nodes[n].ndevs, XP_MAX_NODE_DEVS);
			return NULL;
		}
		ndevs += c->nodes[n].ndevs;
	}

	s = XNEW(struct xp_sched);
	s->c = c;
	s->pol = pol;
	s->opts = opts;
	s->nnodes = (uint32_t)c->nnodes;
	s->ns = XNEWV(struct xp_nstate, s->nnodes);
	s->dev = XNEWV(struct xp_dstate, ndevs);
	s->ndevs = ndevs;
	s->slot_node = XNEWV(uint32_t, s->nnodes);
	ndevs = 0;
	for (uint32_t n = 0; n < s->nnodes; n++) {
		const struct xp_node *node = &c->nodes[n];
		struct xp_nstate *ns = &s->ns[n];
		uint64_t milli = 0;
		ns->cpu_free = (int64_t)node->cpu_milli;
		ns->mem_free = (int64_t)node->mem_mib;
		ns->dev0 = ndevs;
		ns->ndev = node->ndevs;
		ns->up = 1;
		ns->dedicated = node->dedicated;
		ns->slot = n;
		s->slot_node[n] = n;
		for (uint16_t d = 0; d < node->ndevs; d++) {
			struct xp_dstate *ds = &s->dev[ndevs++];
			ds->free_milli = XP_MILLI;
			ds->ok = node->devs[d].health != XP_HEALTH_UNHEALTHY;
			ds->accel = node->devs[d].cls != XP_CLASS_CPU;
			ds->mode = node->devs[d].mode;
			s->modes |= ds->mode != XP_MODE_SHARED;
			ds->rep = ds->mode == XP_MODE_TIMESLICE
					  ? xp_replica_milli(node->devs[d].replicas)
					  : XP_MILLI;
			s->reps |= ds->rep < XP_MILLI;
			ds->phys = node->devs[d].mem_mib;
			ds->mem = ds->free_mem = xp_dev_admit_mib(&node->devs[d]);
			if (ds->accel)
				milli += XP_MILLI;
		}
		if ((double)node->cpu_milli > s->max_cpu)
			s->max_cpu = (double)node->cpu_milli;
		if ((double)milli > s->max_milli)
			s->max_milli = (double)milli;
		node_sums(s, n);
		node_account(s, n, +1);
	}
	if (s->max_cpu <= 0)
		s->max_cpu = 1;
	if (s->max_milli <= 0)
		s->max_milli = XP_MILLI;
	xp_mig_sched_init(s);
	build_types(s);
	xp_weighted_prepare(s);
	for (uint32_t n = 0; n < s->nnodes; n++)
		s->ns[n].key = node_key(s, n);
	if (!opts.no_index && !(pol->flags & XP_POLICY_RANDOM_NODE))
		s->idx = xp_index_create(s);
	return s;
}

void xp_sched_destroy(struct xp_sched *s)
{
	if (!s)
		return;
	xp_index_destroy(s->idx);
	for (size_t i = 0; i < s->nm; i++)
		xp_shape_free(&s->m[i]);
	free(s->m);
	free(s->type_node);
	free(s->type_homog);
	free(s->type_pressure);
	free(s->slot_node);
	free(s->dev);
	free(s->migs);
	free(s->ns);
	free(s->w_ppw);
	free(s->w_net);
	free(s->w_fail);
	free(s);
}

const struct xp_policy_ops *xp_sched_policy(const struct xp_sched *s)
{
	return s->pol;
}

static int cmp_rank(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return *x < *y ? -1 : *x > *y;
}

int xp_sched_set_ranks(struct xp_sched *s, const uint32_t *rank, struct xp_err *err)
{
	uint64_t *key = XNEWV(uint64_t, s->nnodes);
	for (uint32_t n = 0; n < s->nnodes; n++)
		key[n] = (uint64_t)rank[n] << 32 | n;
	qsort(key, s->nnodes, sizeof(*key), cmp_rank);
	for (uint32_t i = 1; i < s->nnodes; i++)
		if (key[i] >> 32 == key[i - 1] >> 32) {
			uint32_t r = (uint32_t)(key[i] >> 32);
			free(key);
			return xp_errf(err, XP_EINVAL, "rank %u given to two nodes", r);
		}
	for (uint32_t i = 0; i < s->nnodes; i++) {
		uint32_t n = (uint32_t)key[i];
		s->slot_node[i] = n;
		s->ns[n].slot = i;
	}
	free(key);
	if (s->idx)
		xp_index_reset(s);
	return 0;
}

/* ---- commit / release ---- */

static void apply(struct xp_sched *s, const struct xp_alloc *a, int sign)
{
	struct xp_nstate *ns = &s->ns[a->node];
	uint8_t tag = xp_request_tag(a->ndev, a->dev_milli);

	node_account(s, a->node, -1);
	xp_mig_apply(s, a, sign);
	ns->cpu_free -= sign * (int64_t)a->cpu_milli;
	ns->mem_free -= sign * (int64_t)a->mem_mib;
	for (uint16_t i = 0; i < a->ndev; i++) {
		struct xp_dstate *ds = &s->dev[ns->dev0 + a->devs[i]];
		if (a->dev_milli >= XP_MILLI) {
			ds->free_milli = sign > 0 ? 0 : XP_MILLI;
			ds->free_mem = sign > 0 ? 0 : ds->mem;
		} else {
			ds->free_milli = (uint16_t)(ds->free_milli - sign * (int)a->dev_milli);
			ds->free_mem -= (uint64_t)(sign * (int64_t)a->dev_mem_mib);
		}
	}
	if (tag != XP_TAG_NONE) {
		ns->tagcnt[tag] = (uint16_t)(ns->tagcnt[tag] + sign);
		if (ns->tagcnt[tag])
			ns->tagmask |= 1u << tag;
		else
			ns->tagmask &= ~(1u << tag);
	}
	node_changed(s, a->node);
}

int xp_sched_alloc_fits(const struct xp_sched *s, const struct xp_alloc *a, struct xp_err *err)
{
	if (a->node >= s->nnodes)
		return xp_errf(err, XP_EINVAL, "node %u does not exist", a->node);
	const struct xp_nstate *ns = &s->ns[a->node];
	const char *name = s->c->nodes[a->node].name;
	if (ns->cpu_free < (int64_t)a->cpu_milli)
		return xp_errf(err, XP_ENOSPC, "node %s: CPU short", name);
	if (ns->mem_free < (int64_t)a->mem_mib)
		return xp_errf(err, XP_ENOSPC, "node %s: memory short", name);
	if (a->ndev && (a->dev_milli == 0 || a->dev_milli > XP_MILLI))
		return xp_errf(err, XP_EINVAL, "node %s: %u milli per device", name, a->dev_milli);
	if (a->mig)
		return a->ndev == 1 && a->devs[0] < ns->ndev
			       ? xp_mig_alloc_fits(s, a, err)
			       : xp_errf(err, XP_EINVAL, "node %s: a MIG slice on one device",
					 name);
	for (uint16_t i = 0; i < a->ndev; i++) {
		if (a->devs[i] >= ns->ndev)
			return xp_errf(err, XP_EINVAL, "node %s has no device %u", name,
				       a->devs[i]);
		for (uint16_t k = 0; k < i; k++)
			if (a->devs[k] == a->devs[i])
				return xp_errf(err, XP_EINVAL, "node %s: device %u given twice",
					       name, a->devs[i]);
		struct xp_request r;
		xp_request_init(&r);
		r.dev_count = a->ndev; /* a whole slot of several is never a replica */
		r.dev_milli = a->dev_milli;
		r.dev_mem_mib = a->dev_milli >= XP_MILLI ? 0 : a->dev_mem_mib;
		if (!xp_dev_fits(&s->dev[ns->dev0 + a->devs[i]], &r))
			return xp_errf(err, XP_ENOSPC, "node %s: device %u has no room", name,
				       a->devs[i]);
	}
	return 0;
}

void xp_sched_commit(struct xp_sched *s, const struct xp_alloc *a)
{
	apply(s, a, +1);
}

void xp_sched_release(struct xp_sched *s, const struct xp_alloc *a)
{
	apply(s, a, -1);
}

int xp_sched_place(struct xp_sched *s, const struct xp_request *r, struct xp_rng *rng,
		   struct xp_alloc *out)
{
	int rc = xp_sched_pick(s, r, rng, out);
	if (rc == 0)
		xp_sched_commit(s, out);
	return rc;
}

void xp_sched_set_node_up(struct xp_sched *s, uint32_t node, int up)
{
	if (node >= s->nnodes || s->ns[node].up == !!up)
		return;
	node_account(s, node, -1);
	s->ns[node].up = !!up;
	node_changed(s, node);
}

void xp_sched_set_device_ok(struct xp_sched *s, uint32_t node, uint16_t dev, int ok)
{
	if (node >= s->nnodes || dev >= s->ns[node].ndev)
		return;
	struct xp_dstate *ds = &s->dev[s->ns[node].dev0 + dev];
	if (ds->ok == !!ok)
		return;
	node_account(s, node, -1);
	ds->ok = !!ok;
	node_changed(s, node);
}

void xp_sched_set_node_failures(struct xp_sched *s, uint32_t node, uint32_t failures)
{
	if (node >= s->nnodes || s->w_fail[node] == failures)
		return;
	node_account(s, node, -1);
	s->w_fail[node] = failures;
	node_changed(s, node);
}

/* ---- observers ---- */

uint64_t xp_sched_total_milli(const struct xp_sched *s)
{
	return s->total_milli;
}

uint64_t xp_sched_used_milli(const struct xp_sched *s)
{
	return s->used_milli;
}

double xp_sched_frag(const struct xp_sched *s)
{
	return s->nm ? s->frag_total : 0;
}

double xp_sched_node_frag(const struct xp_sched *s, uint32_t node)
{
	return s->ns[node].frag;
}

double xp_sched_measure(const struct xp_sched *s, uint32_t node)
{
	return s->pol->measure ? s->pol->measure(s, node) : 0;
}

int64_t xp_sched_node_cpu_left(const struct xp_sched *s, uint32_t node)
{
	return s->ns[node].cpu_free;
}

int64_t xp_sched_node_mem_free(const struct xp_sched *s, uint32_t node)
{
	return s->ns[node].mem_free;
}

uint16_t xp_sched_dev_free_milli(const struct xp_sched *s, uint32_t node, uint16_t dev)
{
	return s->dev[s->ns[node].dev0 + dev].free_milli;
}

uint64_t xp_sched_dev_free_mem(const struct xp_sched *s, uint32_t node, uint16_t dev)
{
	return s->dev[s->ns[node].dev0 + dev].free_mem;
}

int xp_sched_check_invariants(const struct xp_sched *s, struct xp_err *err)
{
	uint64_t total = 0, used = 0;
	double frag = 0;

	for (uint32_t n = 0; n < s->nnodes; n++) {
		const struct xp_nstate *ns = &s->ns[n];
		const struct xp_node *node = &s->c->nodes[n];
		uint32_t fm = 0, cm = 0, mask = 0;
		if (ns->cpu_free < 0 || ns->cpu_free > (int64_t)node->cpu_milli)
			return xp_errf(err, XP_EINTERNAL, "node %s: cpu_free %lld out of 0..%llu",
				       node->name, (long long)ns->cpu_free,
				       (unsigned long long)node->cpu_milli);
		if (ns->mem_free < 0 || ns->mem_free > (int64_t)node->mem_mib)
			return xp_errf(err, XP_EINTERNAL, "node %s: mem_free %lld out of range",
				       node->name, (long long)ns->mem_free);
		for (uint16_t d = 0; d < ns->ndev; d++) {
			const struct xp_dstate *ds = &s->dev[ns->dev0 + d];
			if (ds->free_milli > XP_MILLI || ds->free_mem > ds->mem)
				return xp_errf(err, XP_EINTERNAL, "node %s dev %u: free %u/%llu",
					       node->name, d, ds->free_milli,
					       (unsigned long long)ds->free_mem);
			if (ds->accel && ds->ok) {
				fm += ds->free_milli;
				cm += XP_MILLI;
			}
		}
		if (fm != ns->free_milli || cm != ns->cap_milli)
			return xp_errf(err, XP_EINTERNAL, "node %s: cached free milli %u != %u",
				       node->name, ns->free_milli, fm);
		for (int t = 0; t < XP_NTAGS; t++)
			if (ns->tagcnt[t])
				mask |= 1u << t;
		if (mask != ns->tagmask)
			return xp_errf(err, XP_EINTERNAL, "node %s: tag mask %#x != %#x",
				       node->name, ns->tagmask, mask);
		if (ns->slot >= s->nnodes || s->slot_node[ns->slot] != n)
			return xp_errf(err, XP_EINTERNAL, "node %s: slot map broken", node->name);
		if (s->nm) {
			double f = xp_frag_eval(s, n, -1, NULL, NULL);
			if (fabs(f - ns->frag) > 1e-6 * (1 + fabs(f)))
				return xp_errf(err, XP_EINTERNAL, "node %s: cached F %.6f != %.6f",
					       node->name, ns->frag, f);
		}
		total += cm;
		used += cm - fm;
		frag += ns->frag;
	}
	if (total != s->total_milli || used != s->used_milli)
		return xp_errf(err, XP_EINTERNAL, "totals %llu/%llu != %llu/%llu",
			       (unsigned long long)s->used_milli,
			       (unsigned long long)s->total_milli, (unsigned long long)used,
			       (unsigned long long)total);
	if (s->nm && fabs(frag - s->frag_total) > 1e-6 * (1 + fabs(frag)))
		return xp_errf(err, XP_EINTERNAL, "F(M) total %.6f != %.6f", s->frag_total, frag);
	return 0;
}
