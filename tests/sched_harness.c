/*
 * sched_harness: the shared machinery of the scheduling-core tests; see
 * sched_harness.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_harness.h"

const char *const det_policies[NDET_POLICIES] = { "dotprod", "clustering", "packing",
						  "bestfit", "fgd",	   "binpack",
						  "spread",  "weighted",   "xpool" };

/* operation counters, printed with XP_REF_VERBOSE=1 */
size_t total_ops, n_placed, n_nofit, n_released, n_explain, n_checks;

void sched_print_ops(const char *binary)
{
	if (getenv("XP_REF_VERBOSE"))
		fprintf(stderr,
			"%s: %zu random operations: %zu placed, %zu no fit, %zu "
			"released, "
			"%zu explain, %zu state checks\n",
			binary, total_ops, n_placed, n_nofit, n_released, n_explain, n_checks);
}

/* ------------------------------------------------------------------------ */
/* random worlds */

static int world_noaccel(const struct xp_cluster *c)
{
	for (size_t n = 0; n < c->nnodes; n++)
		for (uint16_t d = 0; d < c->nodes[n].ndevs; d++)
			if (c->nodes[n].devs[d].cls != XP_CLASS_CPU)
				return 0;
	return 1;
}

static uint64_t pick_u64(struct xp_rng *g, const uint64_t *v, size_t n)
{
	return v[below(g, n)];
}
#define PICK(g, arr) pick_u64((g), (arr), NELEM(arr))

struct devspec {
	uint8_t cls;
	xp_sym vendor, model;
	uint32_t cc;
	uint64_t mem;
	int16_t numa, island;
	uint32_t tdp, gflops, nic; /* power model, fp16 peak, an off-node link (Gbit/s) */
	uint8_t mode;		   /* enum xp_dev_mode */
	uint16_t overcommit;	   /* memory, hundredths; 0 = none */
	uint8_t replicas;	   /* mode timeslice: one-device whole slots at once */
};

struct ntype {
	uint64_t cpu, mem;
	int ndev;
	struct devspec dev[24];
};

static const uint64_t dev_mems[] = { 8192, 16384, 24576, 32768, 40960, 81920 };
static const uint64_t ccs[] = { 0, 600, 700, 750, 800, 860, 900 };

static void random_devspec(struct world *w, struct xp_rng *g, struct devspec *d)
{
	unsigned k = (unsigned)below(g, 100);
	d->cls = k < 66	  ? XP_CLASS_GPU
		 : k < 80 ? XP_CLASS_NPU
		 : k < 92 ? XP_CLASS_CPU
			  : XP_CLASS_FPGA;
	d->vendor = w->vendor[below(g, 3)];
	d->model = w->model[below(g, (uint64_t)w->nmodel)];
	d->cc = (uint32_t)PICK(g, ccs);
	d->mem = PICK(g, dev_mems);
	d->numa = -1;
	d->island = -1;
	d->tdp = chance(g, 70) ? 75 + (uint32_t)below(g, 650) : 0;
	d->gflops = chance(g, 80) ? 10000 + (uint32_t)below(g, 2000000) : 0;
	d->nic = chance(g, 30) ? 100 * (1 + (uint32_t)below(g, 4)) : 0;
	d->mode = chance(g, 15) ? (uint8_t)below(g, XP_MODE_N) : XP_MODE_SHARED;
	d->overcommit = chance(g, 20) ? (uint16_t)(100 + 25 * below(g, 9)) : 0;
	if (d->mode == XP_MODE_TIMESLICE && chance(g, 70))
		d->replicas = (uint8_t)(1 + below(g, XP_TIMESLICE_MAX));
}

static void world_syms(struct world *w)
{
	static const char *const vendors[] = { "nvidia", "amd", "huawei" };
	static const char *const models[] = { "A100",  "H100",	    "V100", "T4",
					      "MI250", "Ascend910", "L40",  "Gaudi2" };
	for (int i = 0; i < 3; i++)
		w->vendor[i] = xp_strtab_intern(w->c->syms, vendors[i]);
	for (int i = 0; i < 8; i++)
		w->model[i] = xp_strtab_intern(w->c->syms, models[i]);
}

static void world_random(struct world *w, struct xp_rng *g, size_t nnodes)
{
	memset(w, 0, sizeof(*w));
	w->c = xp_cluster_create();
	world_syms(w);
	w->nmodel = 5 + (int)below(g, 4);
	struct ntype types[6];
	int ntypes = 1 + (int)below(g, 6);
	for (int t = 0; t < ntypes; t++) {
		struct ntype *nt = &types[t];
		nt->cpu = chance(g, 75) ? (1 + below(g, 128)) * 1000 : 1 + below(g, 128000);
		nt->mem = chance(g, 75) ? (1 + below(g, 64)) * 8192 : 1 + below(g, 1 << 20);
		nt->ndev = chance(g, 10) ? 9 + (int)below(g, 8) : (int)below(g, 9);
		if (chance(g, 3))
			nt->ndev = 17 + (int)below(g, 8); /* k >= 16 share one tag */
		int islands = (int)below(g, 4), numas = (int)below(g, 3), homo = chance(g, 50);
		for (int d = 0; d < nt->ndev; d++) {
			struct devspec *ds = &nt->dev[d];
			if (homo && d > 0)
				*ds = nt->dev[0];
			else
				random_devspec(w, g, ds);
			switch (islands) {
			case 0:
				ds->island = -1;
				break;
			case 1:
				ds->island = 0;
				break;
			case 2:
				ds->island = d < nt->ndev / 2 ? 0 : 1;
				break;
			default:
				ds->island = (int16_t)((int)below(g, 3) - 1);
				break;
			}
			ds->numa = numas == 0	? -1
				   : numas == 1 ? (int16_t)(d % 2)
						: (int16_t)((int)below(g, 3) - 1);
		}
	}
	for (size_t i = 0; i < nnodes; i++) {
		const struct ntype *nt = &types[below(g, (uint64_t)ntypes)];
		char name[32];
		snprintf(name, sizeof(name), "n%04zu", i);
		struct xp_node *n = xp_cluster_add_node(w->c, name);
		n->cpu_milli = chance(g, 10) ? 1 + below(g, 128000) : nt->cpu;
		n->mem_mib = chance(g, 10) ? 1 + below(g, 1 << 20) : nt->mem;
		for (int d = 0; d < nt->ndev; d++) {
			struct xp_device *dv = xp_node_add_device(n);
			const struct devspec *ds = &nt->dev[d];
			dv->cls = ds->cls;
			dv->vendor = ds->vendor;
			dv->model = ds->model;
			dv->cc = ds->cc;
			dv->mem_mib = ds->mem;
			dv->numa = ds->numa;
			dv->island = ds->island;
			dv->tdp_w = ds->tdp;
			dv->peak_gflops[XP_PREC_FP16] = ds->gflops;
			dv->mode = ds->mode;
			dv->mem_overcommit = ds->overcommit;
			dv->replicas = ds->replicas;
			if (ds->nic)
				xp_link_add(dv, XP_LINK_RDMA, -1, ds->nic);
			dv->health = chance(g, 4) ? XP_HEALTH_UNHEALTHY : XP_HEALTH_OK;
		}
	}
	w->noaccel = world_noaccel(w->c);
}

/* OpenB-like: 1/2/4/8 identical GPUs of one of four models per node. */
static void world_openb(struct world *w, struct xp_rng *g, size_t nnodes)
{
	memset(w, 0, sizeof(*w));
	w->c = xp_cluster_create();
	w->openb = 1;
	static const char *const models[] = { "G2", "T4", "P100", "V100M16" };
	static const uint64_t mems[] = { 16384, 15360, 16280, 16160 };
	static const uint32_t cc[] = { 0, 750, 600, 700 };
	w->nmodel = 4;
	w->vendor[0] = w->vendor[1] = w->vendor[2] = xp_strtab_intern(w->c->syms, "nvidia");
	for (int i = 0; i < 4; i++)
		w->model[i] = xp_strtab_intern(w->c->syms, models[i]);
	static const uint64_t gpus[] = { 1, 2, 2, 4, 4, 8, 8, 8 };
	static const uint64_t cores[] = { 8, 16, 32, 48, 64, 96, 128 };
	static const uint64_t gib[] = { 32, 64, 128, 256, 512, 768 };
	for (size_t i = 0; i < nnodes; i++) {
		char name[32];
		snprintf(name, sizeof(name), "openb-%04zu", i);
		struct xp_node *n = xp_cluster_add_node(w->c, name);
		n->cpu_milli = PICK(g, cores) * 1000;
		n->mem_mib = PICK(g, gib) * 1024;
		int m = (int)below(g, 4);
		uint64_t k = chance(g, 4) ? 0 : PICK(g, gpus);
		for (uint64_t d = 0; d < k; d++) {
			struct xp_device *dv = xp_node_add_device(n);
			dv->cls = XP_CLASS_GPU;
			dv->vendor = w->vendor[0];
			dv->model = w->model[m];
			dv->mem_mib = mems[m];
			dv->cc = cc[m];
		}
	}
}

void gen_request(const struct world *w, struct xp_rng *g, struct xp_request *q)
{
	static const uint64_t cpus[] = { 0, 500, 1000, 1000, 2000, 2000, 4000, 8000, 16000, 32000 };
	static const uint64_t mems[] = { 0, 512, 1024, 1024, 4096, 8192, 16384, 65536 };
	static const uint64_t millis[] = { 100, 200, 250, 300, 400, 500, 600, 700, 750, 800, 900 };
	static const uint64_t counts[] = { 1, 1, 1, 1, 2, 2, 2, 4, 4, 8, 3, 6, 16, 1, 2, 17, 20 };
	static const uint64_t wmems[] = { 4096, 8192, 16384, 20000, 40960, 81920, 100000 };
	xp_request_init(q);
	q->cpu_milli = chance(g, 90) ? PICK(g, cpus) : below(g, 130000);
	q->mem_mib = chance(g, 90) ? PICK(g, mems) : below(g, 1 << 19);
	if (!w->openb && chance(g, 4)) /* pinned to one node (or one past the end) */
		q->node = (int32_t)below(g, w->c->nnodes + 1);
	unsigned k = (unsigned)below(g, 100);
	if (k < 20)
		return;
	q->dev_count = 1;
	if (k < 60) {
		unsigned j = (unsigned)below(g, 4);
		q->dev_milli = (uint16_t)(j < 2	   ? 50 * (1 + below(g, 19))
					  : j == 2 ? PICK(g, millis)
						   : 1 + below(g, 999));
		q->dev_mem_mib = chance(g, 60) ? 0 : below(g, 24576);
		if (!w->openb && chance(g, 20)) { /* a share sized by memory */
			q->by_mem = 1;
			q->dev_milli = XP_SHARE_BY_MEM_ESTIMATE;
			q->dev_mem_mib = 1 + below(g, chance(g, 10) ? 200000 : 40000);
		}
	} else {
		q->dev_count = (uint16_t)PICK(g, counts);
		q->dev_milli = XP_MILLI;
		q->dev_mem_mib = chance(g, 70) ? 0 : PICK(g, wmems);
	}
	unsigned c = (unsigned)below(g, 100);
	if (w->openb)
		q->sel.cls = c < 70 ? -1 : c < 98 ? XP_CLASS_GPU : XP_CLASS_NPU;
	else
		q->sel.cls = c < 55   ? -1
			     : c < 80 ? XP_CLASS_GPU
			     : c < 90 ? XP_CLASS_NPU
			     : c < 95 ? XP_CLASS_CPU
				      : XP_CLASS_FPGA;
	/* With MAXMILLI = 0 the dotprod and bestfit formulas divide by zero for
	 * a request of cpu-class devices (k·u > 0, L_n = 0); the specification
	 * leaves that open, so such worlds get no cpu-class requests. */
	if (w->noaccel && q->sel.cls == XP_CLASS_CPU)
		q->sel.cls = -1;
	if (chance(g, 12))
		q->sel.vendor = w->vendor[below(g, 3)];
	if (chance(g, w->openb ? 40 : 25)) {
		int n = 1 + (int)below(g, 3);
		for (int i = 0; i < n; i++)
			xp_selector_add_model(&q->sel, w->model[below(g, (uint64_t)w->nmodel)]);
	}
	if (chance(g, 8))
		q->sel.min_mem_mib = PICK(g, dev_mems);
	if (chance(g, 8))
		q->sel.min_cc = (uint32_t)PICK(g, ccs);
	unsigned t = (unsigned)below(g, 100);
	q->topo = t < 60 ? XP_TOPO_ANY : t < 80 ? XP_TOPO_SAME_ISLAND : XP_TOPO_SAME_NUMA;
}

static size_t gen_workload(const struct world *w, struct xp_rng *g, struct xp_wshape *m)
{
	size_t n = 5 + below(g, 36);
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		gen_request(w, g, &m[i].req);
		m[i].p = (double)(1 + below(g, 100));
		sum += m[i].p;
	}
	for (size_t i = 0; i < n; i++)
		m[i].p /= sum;
	return n;
}

/* ------------------------------------------------------------------------ */
/* printing, for failures */

void print_request(const char *what, const struct xp_request *q)
{
	fprintf(stderr,
		"  %s: node %d cpu %llu mem %llu dev_count %u dev_milli %u dev_mem %llu topo %u "
		"sel{cls %d vendor %u min_mem %llu min_cc %u models",
		what, (int)q->node, (unsigned long long)q->cpu_milli,
		(unsigned long long)q->mem_mib, q->dev_count, q->dev_milli,
		(unsigned long long)q->dev_mem_mib, q->topo, q->sel.cls, q->sel.vendor,
		(unsigned long long)q->sel.min_mem_mib, q->sel.min_cc);
	for (int i = 0; i < q->sel.nmodels; i++)
		fprintf(stderr, " %u", q->sel.models[i]);
	fprintf(stderr, "}\n");
}

void print_alloc(const char *who, int rc, const struct xp_alloc *a)
{
	if (rc != 0) {
		fprintf(stderr, "  %-8s rc %d (no fit)\n", who, rc);
		return;
	}
	fprintf(stderr, "  %-8s node %u ndev %u devs", who, a->node, a->ndev);
	for (int i = 0; i < a->ndev; i++)
		fprintf(stderr, " %u", a->devs[i]);
	fprintf(stderr, "\n");
}

void print_node(const struct ref_sched *r, uint32_t n, const struct xp_request *q)
{
	const struct xp_node *node = &r->c->nodes[n];
	int why = ref_why(r, n, q);
	fprintf(stderr, "  node %u rank %u up %d cpu %lld/%llu mem %lld/%llu why %s score %d\n", n,
		r->rank[n], r->up[n], (long long)ref_cpu_free(r, n),
		(unsigned long long)node->cpu_milli, (long long)ref_mem_free(r, n),
		(unsigned long long)node->mem_mib, xp_why_name(why),
		why == XP_WHY_FITS ? ref_score(r, n, q) : -1);
	for (uint16_t d = 0; d < node->ndevs; d++) {
		const struct xp_device *dv = &node->devs[d];
		fprintf(stderr,
			"    dev %u cls %d vendor %u model %u cc %u mem %llu numa %d island %d ok "
			"%d "
			"free %d/%lld\n",
			d, dv->cls, dv->vendor, dv->model, dv->cc, (unsigned long long)dv->mem_mib,
			dv->numa, dv->island, r->dev_ok[r->dev0[n] + d],
			ref_dev_free_milli(r, n, d), (long long)ref_dev_free_mem(r, n, d));
	}
}

/* ------------------------------------------------------------------------ */
/* small hand-made clusters and requests */

struct xp_node *add_node(struct xp_cluster *c, uint64_t cpu, uint64_t mem, int ngpu, uint64_t gmem)
{
	char name[32];
	snprintf(name, sizeof(name), "e%02zu", c->nnodes);
	struct xp_node *n = xp_cluster_add_node(c, name);
	n->cpu_milli = cpu;
	n->mem_mib = mem;
	for (int i = 0; i < ngpu; i++) {
		struct xp_device *d = xp_node_add_device(n);
		d->cls = XP_CLASS_GPU;
		d->mem_mib = gmem;
	}
	return n;
}

void whole_req(struct xp_request *q, uint64_t cpu, uint16_t k)
{
	xp_request_init(q);
	q->cpu_milli = cpu;
	q->mem_mib = 1024;
	q->dev_count = k;
	q->dev_milli = XP_MILLI;
}

void frac_req(struct xp_request *q, uint64_t cpu, uint16_t milli, uint64_t mem)
{
	xp_request_init(q);
	q->cpu_milli = cpu;
	q->mem_mib = 1024;
	q->dev_count = 1;
	q->dev_milli = milli;
	q->dev_mem_mib = mem;
}

/* ------------------------------------------------------------------------ */
/* the harness: cores + reference, one operation stream */

static void h_context(const struct harness *h, const char *what)
{
	fprintf(stderr,
		"MISMATCH (%s): policy %s tie %d %s cluster, %zu nodes, seed %llu, op %zu "
		"(MAXCPU %llu MAXMILLI %llu)\n",
		what, h->policy, h->tiebreak, h->kind, h->w.c->nnodes, (unsigned long long)h->seed,
		h->op, (unsigned long long)h->r->maxcpu, (unsigned long long)h->r->maxmilli);
}

struct xp_sched *mk_core(const struct xp_cluster *c, const char *policy, int tiebreak, int no_index,
			 size_t index_bytes)
{
	struct xp_sched_opts o;
	memset(&o, 0, sizeof(o));
	o.policy = policy;
	o.tiebreak = tiebreak;
	o.no_index = no_index;
	o.index_bytes = index_bytes;
	struct xp_err err;
	struct xp_sched *s = xp_sched_create(c, &o, &err);
	if (!s)
		fprintf(stderr, "xp_sched_create(%s): %s\n", policy, err.text);
	assert_non_null(s);
	return s;
}

static void h_set_workload(struct harness *h)
{
	h->nm = gen_workload(&h->w, &h->g, h->m);
	size_t nm = chance(&h->g, 10) ? 0 : h->nm; /* sometimes no M at all */
	for (int i = 0; i < h->ns; i++) {
		struct xp_err err;
		assert_int_equal(xp_sched_set_workload(h->s[i], h->m, nm, &err), 0);
	}
	ref_set_workload(h->r, h->m, nm);
}

static void h_set_ranks(struct harness *h)
{
	size_t n = h->w.c->nnodes;
	xp_rng_perm(&h->g, h->rank, n);
	if (chance(&h->g, 30)) /* distinct, not a permutation */
		for (size_t i = 0; i < n; i++)
			h->rank[i] = h->rank[i] * 7 + 3;
	for (int i = 0; i < h->ns; i++) {
		struct xp_err err;
		assert_int_equal(xp_sched_set_ranks(h->s[i], h->rank, &err), 0);
	}
	ref_set_ranks(h->r, h->rank);
}

void h_init(struct harness *h, const char *policy, int tiebreak, int exact, int no_index,
	    const char *kind, size_t nnodes, uint64_t seed)
{
	memset(h, 0, sizeof(*h));
	h->policy = policy;
	h->tiebreak = tiebreak;
	h->exact = exact;
	h->seed = seed;
	h->kind = kind;
	xp_rng_seed(&h->g, seed);
	xp_rng_seed(&h->cr, seed ^ 0x5eedc0de);
	xp_rng_seed(&h->rr, seed ^ 0x5eedc0de);
	if (strcmp(kind, "openb") == 0)
		world_openb(&h->w, &h->g, nnodes);
	else
		world_random(&h->w, &h->g, nnodes);
	if (exact) {
		h->s[0] = mk_core(h->w.c, policy, tiebreak, 0, 0);
		h->sname[0] = "index";
		h->s[1] = mk_core(h->w.c, policy, tiebreak, 1, 0);
		h->sname[1] = "scan";
		h->s[2] = mk_core(h->w.c, policy, tiebreak, 0, 4096);
		h->sname[2] = "index4k";
		h->ns = 3;
	} else {
		h->s[0] = mk_core(h->w.c, policy, tiebreak, no_index, 0);
		h->sname[0] = no_index ? "scan" : "index";
		h->ns = 1;
	}
	h->r = ref_create(h->w.c, policy);
	assert_non_null(h->r);
	ref_set_tiebreak(h->r, tiebreak);
	h->rank = calloc(nnodes + 1, sizeof(*h->rank));
	h_set_workload(h);
}

void h_free(struct harness *h)
{
	for (int i = 0; i < h->ns; i++)
		xp_sched_destroy(h->s[i]);
	ref_destroy(h->r);
	xp_cluster_destroy(h->w.c);
	free(h->live);
	free(h->rank);
}

int same_alloc(const struct xp_alloc *a, const struct xp_alloc *b)
{
	if (a->node != b->node || a->ndev != b->ndev)
		return 0;
	for (int i = 0; i < a->ndev; i++)
		if (a->devs[i] != b->devs[i])
			return 0;
	return 1;
}

static void h_dump(const struct harness *h, const struct xp_request *q, const struct xp_alloc *ra,
		   int rrc, const struct xp_alloc *ca, const int *crc)
{
	print_request("request", q);
	print_alloc("ref", rrc, ra);
	for (int i = 0; i < h->ns; i++)
		print_alloc(h->sname[i], crc[i], &ca[i]);
	if (rrc == 0)
		print_node(h->r, ra->node, q);
	for (int i = 0; i < h->ns; i++)
		if (crc[i] == 0 && (rrc != 0 || ca[i].node != ra->node))
			print_node(h->r, ca[i].node, q);
}

static void h_remember(struct harness *h, const struct xp_alloc *ca, const struct xp_alloc *ra)
{
	if (h->nlive == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 256;
		h->live = realloc(h->live, h->cap * sizeof(*h->live));
	}
	struct entry *e = &h->live[h->nlive++];
	for (int i = 0; i < h->ns; i++)
		e->a[i] = ca[i];
	e->ra = *ra;
}

void h_place(struct harness *h, const struct xp_request *q)
{
	struct xp_alloc ca[NCORE], ra;
	int crc[NCORE];
	memset(ca, 0, sizeof(ca));
	memset(&ra, 0, sizeof(ra));
	for (int i = 0; i < h->ns; i++)
		crc[i] = xp_sched_pick(h->s[i], q, &h->cr, &ca[i]);
	if (h->exact) {
		int rrc = ref_pick(h->r, q, &h->rr, &ra);
		int bad = 0;
		for (int i = 0; i < h->ns; i++) {
			if ((crc[i] == 0) != (rrc == 0) || (crc[i] != 0 && crc[i] != XP_ENOSPC))
				bad = 1;
			else if (rrc == 0 && !same_alloc(&ca[i], &ra))
				bad = 1;
		}
		if (bad) {
			h_context(h, "decision");
			h_dump(h, q, &ra, rrc, ca, crc);
			fail();
		}
		if (rrc != 0) {
			n_nofit++;
			return;
		}
		n_placed++;
		for (int i = 0; i < h->ns; i++)
			xp_sched_commit(h->s[i], &ca[i]);
		ref_commit(h->r, &ra);
		h_remember(h, ca, &ra);
		return;
	}
	/* loose: one core; validate its decision against the reference */
	size_t nf = ref_nfeasible(h->r, q);
	int bad = 0;
	const char *why = "";
	if (crc[0] != 0) {
		if (crc[0] != XP_ENOSPC || nf != 0) {
			bad = 1;
			why = "no fit claimed, the reference has one";
		}
	} else if (nf == 0) {
		bad = 1;
		why = "placed, the reference has no feasible node";
	} else if (!ref_alloc_fits(h->r, q, &ca[0])) {
		bad = 1;
		why = "placement infeasible";
	} else {
		if (strcmp(h->policy, "random") != 0 &&
		    ref_score(h->r, ca[0].node, q) != ref_max_score(h->r, q)) {
			bad = 1;
			why = "node score below the maximum";
		}
		/* device choice: deterministic except a random policy's fraction */
		if (strcmp(h->policy, "random") != 0 || q->dev_milli == XP_MILLI ||
		    q->dev_count == 0) {
			struct xp_alloc want;
			ref_pick_on(h->r, ca[0].node, q, &h->rr, &want);
			if (!same_alloc(&want, &ca[0])) {
				bad = 1;
				why = "devices differ from the policy's choice";
			}
		}
	}
	if (bad) {
		h_context(h, why);
		int rrc = ref_pick(h->r, q, &h->rr, &ra);
		h_dump(h, q, &ra, rrc, ca, crc);
		fail();
	}
	if (crc[0] != 0) {
		n_nofit++;
		return;
	}
	n_placed++;
	xp_sched_commit(h->s[0], &ca[0]);
	ref_commit(h->r, &ca[0]);
	h_remember(h, ca, &ca[0]);
}

/* Commit the policy's devices on a random node that can take a random
 * request, bypassing pick: state churn without queries. */
void h_direct(struct harness *h)
{
	struct xp_request q;
	gen_request(&h->w, &h->g, &q);
	uint32_t n = (uint32_t)below(&h->g, h->w.c->nnodes);
	if (ref_why(h->r, n, &q) != XP_WHY_FITS)
		return;
	struct xp_alloc a, ca[NCORE];
	ref_pick_on(h->r, n, &q, &h->rr, &a);
	for (int i = 0; i < h->ns; i++) {
		ca[i] = a;
		xp_sched_commit(h->s[i], &a);
	}
	ref_commit(h->r, &a);
	h_remember(h, ca, &a);
}

void h_release(struct harness *h)
{
	if (!h->nlive)
		return;
	size_t i = below(&h->g, h->nlive);
	struct entry e = h->live[i];
	n_released++;
	h->live[i] = h->live[--h->nlive];
	for (int k = 0; k < h->ns; k++)
		xp_sched_release(h->s[k], &e.a[k]);
	ref_release(h->r, &e.ra);
}

void h_toggle_node(struct harness *h)
{
	uint32_t n = (uint32_t)below(&h->g, h->w.c->nnodes);
	int up = !h->r->up[n];
	/* keep most nodes up: bring down only with some luck */
	if (!up && !chance(&h->g, 60))
		return;
	for (int k = 0; k < h->ns; k++)
		xp_sched_set_node_up(h->s[k], n, up);
	ref_set_node_up(h->r, n, up);
}

void h_toggle_dev(struct harness *h)
{
	uint32_t n = (uint32_t)below(&h->g, h->w.c->nnodes);
	const struct xp_node *node = &h->w.c->nodes[n];
	if (!node->ndevs)
		return;
	uint16_t d = (uint16_t)below(&h->g, node->ndevs);
	int ok = !h->r->dev_ok[h->r->dev0[n] + d];
	for (int k = 0; k < h->ns; k++)
		xp_sched_set_device_ok(h->s[k], n, d, ok);
	ref_set_device_ok(h->r, n, d, ok);
}

static int close_enough(double a, double b)
{
	double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
	return fabs(a - b) <= 1e-6 * (m > 1 ? m : 1);
}

static void h_explain(struct harness *h)
{
	struct xp_request q;
	gen_request(&h->w, &h->g, &q);
	struct xp_explain want, got;
	ref_explain(h->r, &q, &want);
	n_explain++;
	for (int k = 0; k < h->ns; k++) {
		memset(&got, 0, sizeof(got));
		xp_sched_explain(h->s[k], &q, &got);
		int bad = memcmp(want.nodes, got.nodes, sizeof(want.nodes)) != 0;
		if (want.nodes[XP_WHY_CPU] && want.cpu_short_min != got.cpu_short_min)
			bad = 1;
		if (want.nodes[XP_WHY_MEM] && want.mem_short_min != got.mem_short_min)
			bad = 1;
		if (bad) {
			h_context(h, "explain");
			print_request("request", &q);
			for (int i = 0; i < XP_WHY_N; i++)
				fprintf(stderr, "  %-24s ref %u %s %u\n", xp_why_name(i),
					want.nodes[i], h->sname[k], got.nodes[i]);
			fprintf(stderr,
				"  cpu_short_min ref %llu core %llu; mem_short_min ref %llu core "
				"%llu\n",
				(unsigned long long)want.cpu_short_min,
				(unsigned long long)got.cpu_short_min,
				(unsigned long long)want.mem_short_min,
				(unsigned long long)got.mem_short_min);
			for (size_t n = 0; n < h->w.c->nnodes && n < 8; n++)
				print_node(h->r, (uint32_t)n, &q);
			fail();
		}
	}
}

void h_check_state(struct harness *h)
{
	double rf = ref_frag_total(h->r);
	n_checks++;
	uint64_t used = ref_used_milli(h->r), total = ref_total_milli(h->r);
	for (int k = 0; k < h->ns; k++) {
		const struct xp_sched *s = h->s[k];
		struct xp_err err;
		if (xp_sched_check_invariants(s, &err) != 0) {
			h_context(h, "invariants");
			fprintf(stderr, "  %s: %s\n", h->sname[k], err.text);
			fail();
		}
		if (!close_enough(xp_sched_frag(s), rf)) {
			h_context(h, "frag");
			fprintf(stderr, "  F(M): ref %.9g %s %.9g\n", rf, h->sname[k],
				xp_sched_frag(s));
			fail();
		}
		if (xp_sched_used_milli(s) != used || xp_sched_total_milli(s) != total) {
			h_context(h, "used/total milli");
			fprintf(stderr, "  used ref %llu %s %llu; total ref %llu %s %llu\n",
				(unsigned long long)used, h->sname[k],
				(unsigned long long)xp_sched_used_milli(s),
				(unsigned long long)total, h->sname[k],
				(unsigned long long)xp_sched_total_milli(s));
			fail();
		}
		for (uint32_t n = 0; n < h->w.c->nnodes; n++) {
			double fn = ref_frag_node(h->r, n);
			if (!close_enough(xp_sched_node_frag(s, n), fn)) {
				h_context(h, "node frag");
				fprintf(stderr, "  F_%u(M): ref %.9g %s %.9g\n", n, fn, h->sname[k],
					xp_sched_node_frag(s, n));
				print_node(h->r, n, &h->m[0].req);
				fail();
			}
			if (xp_sched_node_cpu_left(s, n) != ref_cpu_free(h->r, n) ||
			    xp_sched_node_mem_free(s, n) != ref_mem_free(h->r, n)) {
				h_context(h, "node free cpu/mem");
				fail();
			}
			for (uint16_t d = 0; d < h->w.c->nodes[n].ndevs; d++)
				if (xp_sched_dev_free_milli(s, n, d) !=
					    ref_dev_free_milli(h->r, n, d) ||
				    (int64_t)xp_sched_dev_free_mem(s, n, d) !=
					    ref_dev_free_mem(h->r, n, d)) {
					h_context(h, "device free milli/mem");
					fprintf(stderr, "  node %u dev %u\n", n, d);
					fail();
				}
		}
	}
}

/* One random stream of nops operations. */
void h_run(struct harness *h, size_t nops)
{
	h_check_state(h);
	for (h->op = 0; h->op < nops; h->op++) {
		unsigned u = (unsigned)below(&h->g, 1000);
		if (u < 580) {
			/* shapes repeat (from M, host memory varied) so that the index's
			 * per-shape trees are caught up lazily, not only built fresh */
			struct xp_request q;
			gen_request(&h->w, &h->g, &q);
			if (chance(&h->g, 40)) {
				uint64_t mem = q.mem_mib;
				q = h->m[below(&h->g, h->nm)].req;
				q.mem_mib = mem;
			}
			h_place(h, &q);
		} else if (u < 620) {
			h_direct(h);
		} else if (u < 880) {
			h_release(h);
		} else if (u < 905) {
			h_toggle_node(h);
		} else if (u < 935) {
			h_toggle_dev(h);
		} else if (u < 940) {
			h_set_ranks(h);
		} else if (u < 945) {
			h_set_workload(h);
		} else {
			h_explain(h);
		}
		if (h->op % 64 == 63)
			h_check_state(h);
	}
	h_check_state(h);
	/* drain: release everything, the state must return to empty */
	while (h->nlive)
		h_release(h);
	h_check_state(h);
}

/* Node counts of the cases: mostly small and medium, a few large. */
static size_t case_nodes(struct xp_rng *g, int i)
{
	static const size_t fixed[] = { 1, 2, 3, 300, 5, 17, 64, 150 };
	if (i < (int)NELEM(fixed))
		return fixed[i];
	return 1 + below(g, chance(g, 30) ? 300 : 40);
}

void run_policy_cases(const char *policy, int tiebreak, int exact, int ncases, uint64_t seed0)
{
	struct xp_rng g;
	xp_rng_seed(&g, seed0);
	for (int i = 0; i < ncases; i++) {
		size_t nodes = case_nodes(&g, i);
		/* keep the big FGD cases short: the reference is quadratic per node */
		size_t nops = nodes > 100 ? 2500 : 4000;
		const char *kind = i % 3 == 2 ? "openb" : "random";
		for (int no_index = 0; no_index <= (exact ? 0 : 1); no_index++) {
			struct harness h;
			h_init(&h, policy, tiebreak, exact, no_index, kind, nodes,
			       seed0 * 1000003u + (uint64_t)i);
			h_run(&h, nops);
			total_ops += nops;
			h_free(&h);
		}
	}
}
