/*
 * sched_int: internals shared by the files of the scheduling core.
 *
 * Layout. Node state is an array indexed like the cluster's nodes; device
 * state is one flat array, node n owning dev[ns[n].dev0 .. + ndev). Nodes
 * with the same device signature (class, vendor, model, memory, capability
 * per device) share a type, so a selector is matched once per type, not
 * once per node: shape->tmask[type] has bit d set when device d matches.
 * Ranks order nodes for tie-breaks: slot_node[slot] is the node at rank
 * position slot, ns[n].slot its inverse.
 */
#ifndef XP_SCHED_INT_H
#define XP_SCHED_INT_H

#include "sched.h"
#include "policy.h"
#include "../model/mig.h"

#define XP_NTAGS    17 /* affinity tags: 0 = fractional, k = k whole devices (16 = 16+) */
#define XP_TAG_NONE 0xff
#define XP_MEMO	    4 /* node states a memo remembers (batch optimisers only) */

struct xp_dstate {
	uint16_t free_milli;
	uint8_t ok;    /* healthy: may take work, counts as capacity */
	uint8_t accel; /* class is not cpu */
	uint8_t mode;  /* enum xp_dev_mode */
	uint16_t rep;  /* milli of one time-slicing replica (xp_replica_milli);
			* XP_MILLI when the device has none */
	uint64_t free_mem;
	uint64_t mem;  /* device memory admitted: physical x overcommit */
	uint64_t phys; /* physical device memory: the most one request may ask */
	uint32_t mig;  /* 1 + its lattice in s->migs (mig_sched.c); 0: none */
};

/* A MIG-mode device's table and the slices of running allocations on it */
struct xp_sched_mig {
	struct xp_mig_table t;
	struct xp_mig_gpu g;	     /* g.t is &t */
	uint8_t warm[XP_MIG_NKINDS]; /* bit s: an idle instance of the kind at start s,
				      * kept warm by the agent (a hint, not state) */
	uint8_t foreign;	     /* memory slices an instance xpool did not create
				      * holds (the agent's report): never placed on */
	char names[XP_MIG_NKINDS][32];
};

struct xp_nstate {
	int64_t cpu_free, mem_free;
	uint32_t dev0;
	uint16_t ndev;
	uint8_t up;
	uint8_t dedicated; /* only requests naming the node (xp_node.dedicated) */
	uint32_t type;
	uint32_t slot;
	uint32_t free_milli; /* L_n: free milli of healthy accelerators */
	uint32_t cap_milli;  /* milli of healthy accelerators */
	uint32_t tagmask;    /* bit t set when tagcnt[t] > 0 */
	uint16_t tagcnt[XP_NTAGS];
	double frag; /* F_n(M) */
	/* a 64-bit hash of everything a score or F_n(M) reads of the node
	 * (free CPU, up/dedicated, affinity tags, failures, each device's free
	 * milli, free memory and health), kept by node_changed(); never 0.
	 * Memos key on it: with a batch optimiser, F_n(M) of the node's last
	 * XP_MEMO states (0 = empty; cleared when M changes) */
	uint64_t key;
	uint64_t fkey[XP_MEMO];
	double fval[XP_MEMO];
};

/* A request's shape: all of it but host memory, with per-type device masks. */
struct xp_shape {
	struct xp_request req; /* req.mem_mib is 0 */
	uint64_t *tmask;       /* [ntypes] devices matching req.sel */
	uint8_t tag;
	uint8_t sharing; /* one device, a fraction of it */
	uint8_t fitk;	 /* how a device's fit is checked (frag.c): 0 any (sized by
			  * memory, or one whole device where some device is
			  * time-sliced into replicas), 1 a whole device, 2 a fraction */
	double p;	 /* probability, for workload shapes */
};

struct xp_index;

struct xp_sched {
	const struct xp_cluster *c;
	const struct xp_policy_ops *pol;
	struct xp_sched_opts opts;
	uint32_t nnodes;
	struct xp_nstate *ns;
	struct xp_dstate *dev;
	uint32_t ndevs;
	uint32_t *slot_node;
	/* node types */
	uint32_t ntypes;
	uint32_t *type_node; /* exemplar node of each type */
	uint8_t *type_homog; /* all devices of the type alike */
	/* target workload M */
	struct xp_shape *m;
	size_t nm;
	double frag_total;
	/* M against the cluster (frag.c): CPU milli per device milli of M's
	 * device shapes, and per node type the pressure of the shapes that may
	 * use only some types (1 = that demand alone would fill its types'
	 * share of the pool) */
	double m_cpu_per_milli;
	double *type_pressure;
	/* totals */
	uint64_t total_milli, used_milli;
	/* normalisers of the OpenB-era policies: largest node CPU and device milli */
	double max_cpu, max_milli;
	uint8_t modes; /* some device is not in mode shared */
	uint8_t reps;  /* some device is time-sliced into replicas */
	struct xp_index *idx;
	/* the weighted policy's per-node numbers (policy_weighted.c) */
	uint32_t *w_ppw, *w_net, *w_fail;
	uint32_t w_max_ppw, w_max_net;
	struct xp_sched_mig *migs; /* one per MIG-mode device with a table */
	uint32_t nmigs;
};

static inline const struct xp_device *xp_node_dev(const struct xp_sched *s, uint32_t n, uint16_t d)
{
	return &s->c->nodes[n].devs[d];
}

static inline uint64_t xp_shape_mask(const struct xp_sched *s, uint32_t n, const struct xp_shape *m)
{
	return m->tmask[s->ns[n].type];
}

/* Compute milli one slot of r takes on device d (a share sized by memory
 * takes its part of this device's physical memory; one whole device of a
 * time-sliced device with replicas, one replica: xp_slot_milli). */
static inline uint16_t xp_dev_milli(const struct xp_dstate *d, const struct xp_request *r)
{
	if (r->by_mem)
		return xp_share_by_mem(r->dev_mem_mib, d->phys);
	return r->dev_count == 1 && r->dev_milli >= XP_MILLI ? d->rep : r->dev_milli;
}

/* Can device d, with fm milli and fmem MiB free, take one slot of r
 * (health aside)? A whole device must be idle; a fraction needs a device
 * shared or time-sliced; a MIG device takes no whole or fractional slot,
 * and a MIG slice (r->mig) is never a whole or fractional slot
 * (xp_mig_dev_fits in mig_sched.c judges it);
 * no slot asks more memory than the device physically has. */
static inline int xp_dev_fits_as(const struct xp_dstate *d, uint16_t fm, uint64_t fmem,
				 const struct xp_request *r)
{
	uint16_t milli = xp_dev_milli(d, r);
	if (r->mig || d->mode == XP_MODE_MIG || r->dev_mem_mib > d->phys)
		return 0;
	if (milli >= XP_MILLI)
		return fm == XP_MILLI && fmem == d->mem;
	return d->mode != XP_MODE_WHOLE && fm >= milli && fmem >= r->dev_mem_mib;
}

/* Can a device with this state take one slot of r? */
static inline int xp_dev_fits(const struct xp_dstate *d, const struct xp_request *r)
{
	return d->ok && xp_dev_fits_as(d, d->free_milli, d->free_mem, r);
}

/* fit.c: shapes, feasibility, device choice (capacity.c keeps the capacity) */
void xp_shape_init(const struct xp_sched *s, struct xp_shape *m, const struct xp_request *r);
void xp_shape_free(struct xp_shape *m);
int xp_shape_eq(const struct xp_request *a, const struct xp_request *b);
uint8_t xp_request_tag(uint16_t count, uint16_t milli);
/* A share sized by memory (r->by_mem): its milli on the device chosen. */
void xp_alloc_settle(const struct xp_sched *s, struct xp_alloc *a, const struct xp_request *r);
/* Feasibility ignoring host memory: XP_WHY_FITS or the first failing reason. */
int xp_node_why(const struct xp_sched *s, uint32_t n, const struct xp_shape *m);
/* Lowest-index fitting devices honouring topology; returns count placed (k or less). */
int xp_pick_lowest(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
		   struct xp_alloc *a);
/* Fractional request: the fitting device with the least (best) or most (worst) room. */
int xp_pick_fraction(const struct xp_sched *s, uint32_t n, const struct xp_shape *m, int worst);
void xp_pick_default(const struct xp_sched *s, uint32_t n, const struct xp_shape *m,
		     struct xp_rng *rng, struct xp_alloc *a);
void xp_alloc_fill(struct xp_alloc *a, uint32_t n, const struct xp_request *r);

/* mig_sched.c: MIG slices (requests with r->mig) */
void xp_mig_sched_init(struct xp_sched *s); /* the lattices, at create */
int xp_mig_dev_fits(const struct xp_sched *s, const struct xp_dstate *d,
		    const struct xp_request *r);
int xp_mig_pick(struct xp_sched *s, const struct xp_request *r, struct xp_alloc *out);
void xp_mig_apply(struct xp_sched *s, const struct xp_alloc *a, int sign);
int xp_mig_alloc_fits(const struct xp_sched *s, const struct xp_alloc *a, struct xp_err *err);

/* policy_weighted.c: per-node efficiency and bandwidth, once */
void xp_weighted_prepare(struct xp_sched *s);

/* frag.c: F_n(M) of node n with the given CPU and device state (defaults:
 * the node's own when cpu_free < 0 / free == NULL). */
double xp_frag_eval(const struct xp_sched *s, uint32_t n, int64_t cpu_free,
		    const uint16_t *free_milli, const uint64_t *free_mem);

/* index.c */
struct xp_index *xp_index_create(const struct xp_sched *s);
void xp_index_destroy(struct xp_index *x);
void xp_index_node_changed(struct xp_sched *s, uint32_t n);
void xp_index_reset(struct xp_sched *s); /* ranks or workload changed */
/* Best node for r (mem checked); -1 if none. */
long xp_index_best(struct xp_sched *s, const struct xp_request *r, struct xp_rng *rng,
		   const struct xp_shape **shape);
/* Up to k (<= 8) best nodes for r, best first, ties by rank; the count. */
int xp_index_top(struct xp_sched *s, const struct xp_request *r, uint32_t *nodes, int k,
		 const struct xp_shape **shape);

/* mcts.c: the batch optimiser of the mcts policy (policy.h optimise) */
int xp_mcts_optimise(struct xp_sched *s, const struct xp_request *r, size_t n,
		     struct xp_batch_opts *o, struct xp_rng *rng, struct xp_alloc *out,
		     uint8_t *placed);

#endif
