/*
 * test_sched_ref: the scheduling core against the naive reference of
 * tests/ref_sched.c (written from docs/design/scheduler.md alone).
 *
 * Randomized equivalence: random clusters (mixed classes, vendors, models,
 * islands, NUMA ids, unhealthy devices) and OpenB-like ones, driven by
 * random operation streams (place, release, node down/up, device health,
 * ranks, workload M). For each deterministic policy with XP_TIE_RANK the
 * core is run with the score index, without it (plain scan) and with a
 * tiny index budget (eviction), and after every operation all of them and
 * the reference must give the same decision; observers (F(M), F_n(M),
 * used/total milli, free capacity, explain, invariants) are compared
 * periodically. The random policy and XP_TIE_RANDOM draw from the rng in
 * ways the specification leaves open, so they are checked per decision for
 * feasibility and maximality and, on small clusters, for uniformity with a
 * chi-square bound (memory pruning included). Further: OpenB's size (1213
 * nodes); shapes asked again after growing amounts of state churn (the
 * index's lazy catch-up and rebuild); the reference's formulas on
 * hand-computed numbers; and small explicit cases that pin the edges (exact
 * fit, full devices, last node, one node, no devices, whole on a partly used
 * device, a fraction equal to the free milli, ranks deciding a tie, the
 * shared tag of k >= 16 devices).
 *
 * Everything is seeded; a failure prints the seed, the case and the
 * operation, so it can be replayed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "core/sched/policy.h"
#include "core/sched/sched.h"
#include "ref_sched.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static const char *const det_policies[] = { "dotprod", "clustering", "packing", "bestfit",
					    "fgd",     "binpack",    "spread" };

/* operation counters, printed with XP_REF_VERBOSE=1 */
static size_t total_ops, n_placed, n_nofit, n_released, n_explain, n_checks;

/* ------------------------------------------------------------------------ */
/* random worlds */

struct world {
	struct xp_cluster *c;
	xp_sym vendor[3];
	xp_sym model[8];
	int nmodel;
	int openb;
	int noaccel; /* no accelerator anywhere: MAXMILLI = 0 */
};

static int world_noaccel(const struct xp_cluster *c)
{
	for (size_t n = 0; n < c->nnodes; n++)
		for (uint16_t d = 0; d < c->nodes[n].ndevs; d++)
			if (c->nodes[n].devs[d].cls != XP_CLASS_CPU)
				return 0;
	return 1;
}

static uint64_t below(struct xp_rng *g, uint64_t n)
{
	return xp_rng_below(g, n);
}

static int chance(struct xp_rng *g, unsigned pct)
{
	return below(g, 100) < pct;
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

static void gen_request(const struct world *w, struct xp_rng *g, struct xp_request *q)
{
	static const uint64_t cpus[] = { 0, 500, 1000, 1000, 2000, 2000, 4000, 8000, 16000, 32000 };
	static const uint64_t mems[] = { 0, 512, 1024, 1024, 4096, 8192, 16384, 65536 };
	static const uint64_t millis[] = { 100, 200, 250, 300, 400, 500, 600, 700, 750, 800, 900 };
	static const uint64_t counts[] = { 1, 1, 1, 1, 2, 2, 2, 4, 4, 8, 3, 6, 16, 1, 2, 17, 20 };
	static const uint64_t wmems[] = { 4096, 8192, 16384, 20000, 40960, 81920, 100000 };
	xp_request_init(q);
	q->cpu_milli = chance(g, 90) ? PICK(g, cpus) : below(g, 130000);
	q->mem_mib = chance(g, 90) ? PICK(g, mems) : below(g, 1 << 19);
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

static void print_request(const char *what, const struct xp_request *q)
{
	fprintf(stderr,
		"  %s: cpu %llu mem %llu dev_count %u dev_milli %u dev_mem %llu topo %u "
		"sel{cls %d vendor %u min_mem %llu min_cc %u models",
		what, (unsigned long long)q->cpu_milli, (unsigned long long)q->mem_mib,
		q->dev_count, q->dev_milli, (unsigned long long)q->dev_mem_mib, q->topo, q->sel.cls,
		q->sel.vendor, (unsigned long long)q->sel.min_mem_mib, q->sel.min_cc);
	for (int i = 0; i < q->sel.nmodels; i++)
		fprintf(stderr, " %u", q->sel.models[i]);
	fprintf(stderr, "}\n");
}

static void print_alloc(const char *who, int rc, const struct xp_alloc *a)
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

static void print_node(const struct ref_sched *r, uint32_t n, const struct xp_request *q)
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
/* small hand-made clusters and requests, chi-square */

static double chi2(const unsigned *obs, size_t k, double expect)
{
	double x = 0;
	for (size_t i = 0; i < k; i++)
		x += ((double)obs[i] - expect) * ((double)obs[i] - expect) / expect;
	return x;
}

/* Chi-square bound for k categories (k-1 degrees of freedom: mean df, sd
 * sqrt(2 df)), far in the tail; the seeds are fixed, so no flakes. */
static double chi2_bound(size_t k)
{
	double df = (double)k - 1;
	return df + 6.0 * sqrt(2.0 * df) + 10.0;
}

static struct xp_node *add_node(struct xp_cluster *c, uint64_t cpu, uint64_t mem, int ngpu,
				uint64_t gmem)
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

static void whole_req(struct xp_request *q, uint64_t cpu, uint16_t k)
{
	xp_request_init(q);
	q->cpu_milli = cpu;
	q->mem_mib = 1024;
	q->dev_count = k;
	q->dev_milli = XP_MILLI;
}

static void frac_req(struct xp_request *q, uint64_t cpu, uint16_t milli, uint64_t mem)
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

#define NCORE 3

struct entry {
	struct xp_alloc a[NCORE];
	struct xp_alloc ra;
};

struct harness {
	struct world w;
	const char *policy;
	int tiebreak;
	int exact; /* 1: decisions must be identical; 0: checked for validity */
	struct xp_sched *s[NCORE];
	const char *sname[NCORE];
	int ns;
	struct ref_sched *r;
	struct entry *live;
	size_t nlive, cap;
	struct xp_rng g;  /* the stream */
	struct xp_rng cr; /* handed to the cores */
	struct xp_rng rr; /* handed to the reference */
	uint64_t seed;
	size_t op;
	const char *kind;
	struct xp_wshape m[64];
	size_t nm;
	uint32_t *rank;
};

static void h_context(const struct harness *h, const char *what)
{
	fprintf(stderr,
		"MISMATCH (%s): policy %s tie %d %s cluster, %zu nodes, seed %llu, op %zu "
		"(MAXCPU %llu MAXMILLI %llu)\n",
		what, h->policy, h->tiebreak, h->kind, h->w.c->nnodes, (unsigned long long)h->seed,
		h->op, (unsigned long long)h->r->maxcpu, (unsigned long long)h->r->maxmilli);
}

static struct xp_sched *mk_core(const struct xp_cluster *c, const char *policy, int tiebreak,
				int no_index, size_t index_bytes)
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

static void h_init(struct harness *h, const char *policy, int tiebreak, int exact, int no_index,
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

static void h_free(struct harness *h)
{
	for (int i = 0; i < h->ns; i++)
		xp_sched_destroy(h->s[i]);
	ref_destroy(h->r);
	xp_cluster_destroy(h->w.c);
	free(h->live);
	free(h->rank);
}

static int same_alloc(const struct xp_alloc *a, const struct xp_alloc *b)
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

static void h_place(struct harness *h, const struct xp_request *q)
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
static void h_direct(struct harness *h)
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

static void h_release(struct harness *h)
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

static void h_toggle_node(struct harness *h)
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

static void h_toggle_dev(struct harness *h)
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

static void h_check_state(struct harness *h)
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
			if (xp_sched_node_cpu_free(s, n) != ref_cpu_free(h->r, n) ||
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
static void h_run(struct harness *h, size_t nops)
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

static void run_policy_cases(const char *policy, int tiebreak, int exact, int ncases,
			     uint64_t seed0)
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

#define EQUIV_CASES 40

static void test_equiv_dotprod(void **st)
{
	(void)st;
	run_policy_cases("dotprod", XP_TIE_RANK, 1, EQUIV_CASES, 101);
}

static void test_equiv_clustering(void **st)
{
	(void)st;
	run_policy_cases("clustering", XP_TIE_RANK, 1, EQUIV_CASES, 102);
}

static void test_equiv_packing(void **st)
{
	(void)st;
	run_policy_cases("packing", XP_TIE_RANK, 1, EQUIV_CASES, 103);
}

static void test_equiv_bestfit(void **st)
{
	(void)st;
	run_policy_cases("bestfit", XP_TIE_RANK, 1, EQUIV_CASES, 104);
}

static void test_equiv_fgd(void **st)
{
	(void)st;
	run_policy_cases("fgd", XP_TIE_RANK, 1, EQUIV_CASES, 105);
}

static void test_equiv_binpack(void **st)
{
	(void)st;
	run_policy_cases("binpack", XP_TIE_RANK, 1, EQUIV_CASES, 106);
}

static void test_equiv_spread(void **st)
{
	(void)st;
	run_policy_cases("spread", XP_TIE_RANK, 1, EQUIV_CASES, 107);
}

/* OpenB's size: 1213 nodes, a short stream per policy. */
static void test_equiv_openb_large(void **st)
{
	(void)st;
	for (size_t i = 0; i < NELEM(det_policies); i++) {
		struct harness h;
		h_init(&h, det_policies[i], XP_TIE_RANK, 1, 0, "openb", 1213, 500 + i);
		h_run(&h, 600);
		total_ops += 600;
		h_free(&h);
	}
}

static void test_valid_random_policy(void **st)
{
	(void)st;
	run_policy_cases("random", XP_TIE_RANK, 0, 6, 201);
	run_policy_cases("random", XP_TIE_RANDOM, 0, 3, 202);
}

static void test_valid_tie_random(void **st)
{
	(void)st;
	for (size_t i = 0; i < NELEM(det_policies); i++)
		run_policy_cases(det_policies[i], XP_TIE_RANDOM, 0, 3, 300 + i);
}

/* The index's per-shape trees lag behind the state and catch up lazily; a
 * tree more than one ring of changes behind is rebuilt. Ask a few shapes,
 * then churn the state by growing amounts (direct commits, releases, node
 * and device toggles) without asking them, and ask again. */
static void run_stale(const char *policy, uint64_t seed)
{
	static const size_t churn[] = { 0, 1, 7, 60, 500, 3000, 12000, 40000 };
	struct harness h;
	h_init(&h, policy, XP_TIE_RANK, 1, 0, seed & 1 ? "openb" : "random", 120, seed);
	struct xp_request rare[4];
	for (int i = 0; i < 4; i++)
		gen_request(&h.w, &h.g, &rare[i]);
	for (size_t c = 0; c < NELEM(churn); c++) {
		for (int i = 0; i < 4; i++)
			h_place(&h, &rare[i]);
		for (size_t k = 0; k < churn[c]; k++) {
			unsigned u = (unsigned)below(&h.g, 100);
			if (u < 45)
				h_direct(&h);
			else if (u < 90)
				h_release(&h);
			else if (u < 95)
				h_toggle_node(&h);
			else
				h_toggle_dev(&h);
		}
		total_ops += churn[c];
		h.op = c;
		h_check_state(&h);
	}
	h_free(&h);
}

static void test_equiv_stale_index(void **st)
{
	(void)st;
	for (size_t i = 0; i < NELEM(det_policies); i++)
		run_stale(det_policies[i], 400 + i);
}

/* ------------------------------------------------------------------------ */
/* the reference's formulas on hand-computed numbers (OpenB normalisers:
 * MAXCPU 128000, MAXMILLI 8000) */

static void test_ref_formulas(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	add_node(c, 128000, 262144, 8, 16384); /* node 0: all free */
	add_node(c, 64000, 262144, 4, 16384);  /* node 1: partly used */
	add_node(c, 32000, 262144, 2, 16384);  /* node 2: all free */
	struct xp_alloc frac, whole;
	memset(&frac, 0, sizeof(frac));
	frac.node = 1;
	frac.ndev = 1;
	frac.dev_milli = 300;
	frac.devs[0] = 0;
	whole = frac;
	whole.dev_milli = XP_MILLI;
	whole.dev_mem_mib = 16384;
	whole.cpu_milli = 8000;
	whole.devs[0] = 1;
	/* node 1: c_n 56000, devices free 700, 0, 1000, 1000: L_n 2700 */
	struct xp_request q; /* c 16000, k·u 500 */
	frac_req(&q, 16000, 500, 0);
	static const struct {
		const char *policy;
		int32_t s0, s1, s2;
	} want[] = {
		/* dotprod n0: 100(1 - (1*0.125 + 1*0.0625)/2) = 90.6;
		 * n1: 100(1 - (0.4375*0.125 + 0.3375*0.0625)/2) = 96.2;
		 * n2: 100(1 - (0.25*0.125 + 0.25*0.0625)/2) = 97.7 */
		{ "dotprod", 90, 96, 97 },
		/* bestfit n0: 100(1 - (0.5*112000/128000 + 0.5*7500/8000)) = 9.4;
		 * n1: 100(1 - (0.5*40000/128000 + 0.5*2200/8000)) = 70.6;
		 * n2: 100(1 - (0.5*16000/128000 + 0.5*1500/8000)) = 84.4 */
		{ "bestfit", 9, 70, 84 },
		/* clustering: n0 b 0 no tags: 25; n1 b 16, tags {share, 1}: 66;
		 * n2 b 18: 43 */
		{ "clustering", 25, 66, 43 },
		/* packing: n0 all free f 8: max(25, 8); n1 takes the 700 device:
		 * 100 - 70/10 = 93; n2 f 2: 31 */
		{ "packing", 25, 93, 31 },
		/* binpack n1: 10000 (500 + 1300) / 4000; n0 500/8000; n2 500/2000 */
		{ "binpack", 625, 4500, 2500 },
		{ "spread", 9375, 5500, 7500 },
	};
	for (size_t i = 0; i < NELEM(want); i++) {
		struct ref_sched *r = ref_create(c, want[i].policy);
		ref_commit(r, &frac);
		ref_commit(r, &whole);
		assert_int_equal(ref_score(r, 0, &q), want[i].s0);
		assert_int_equal(ref_score(r, 1, &q), want[i].s1);
		assert_int_equal(ref_score(r, 2, &q), want[i].s2);
		ref_destroy(r);
		/* the core, on the same state, must pick the best of the three */
		int32_t b = want[i].s0;
		uint32_t bn = 0;
		if (want[i].s1 > b)
			b = want[i].s1, bn = 1;
		if (want[i].s2 > b)
			b = want[i].s2, bn = 2;
		for (int no_index = 0; no_index <= 1; no_index++) {
			struct xp_sched *s = mk_core(c, want[i].policy, XP_TIE_RANK, no_index, 0);
			xp_sched_commit(s, &frac);
			xp_sched_commit(s, &whole);
			struct xp_alloc a;
			struct xp_rng g;
			xp_rng_seed(&g, 5);
			assert_int_equal(xp_sched_pick(s, &q, &g, &a), 0);
			assert_int_equal(a.node, bn);
			xp_sched_destroy(s);
		}
	}
	/* FGD: M = {2 whole GPUs}; on n2 a 500 fraction leaves one fitting GPU:
	 * F 0 -> L_n' 1500, Δ = -1500, 100 sigmoid(-1.5) = 18.2 */
	struct xp_wshape m[2];
	whole_req(&m[0].req, 0, 2);
	m[0].p = 1;
	struct ref_sched *r = ref_create(c, "fgd");
	ref_set_workload(r, m, 1);
	ref_commit(r, &frac);
	ref_commit(r, &whole);
	assert_int_equal(ref_score(r, 2, &q), 18);
	/* n1 (free 700, 0, 1000, 1000): F = 700 + 0 (devices that do not fit
	 * 2 whole ones; two do fit) ... */
	assert_true(fabs(ref_frag_node(r, 1) - 700) < 1e-9);
	/* ... a 500 fraction on the 700 device: F' = 200, Δ = 500 -> 62;
	 * on a free one: only one whole fits, F' = L_n' = 2200 -> 18 */
	assert_int_equal(ref_score(r, 1, &q), 62);
	struct xp_alloc a;
	ref_pick_on(r, 1, &q, NULL, &a);
	assert_int_equal(a.devs[0], 0);
	/* M = {500 fraction 0.5, CPU-only 0.5}: n0 F = 0.5*0 + 0.5*8000 */
	frac_req(&m[0].req, 0, 500, 0);
	m[0].p = 0.5;
	xp_request_init(&m[1].req);
	m[1].p = 0.5;
	ref_set_workload(r, m, 2);
	assert_true(fabs(ref_frag_node(r, 0) - 4000) < 1e-9);
	assert_true(fabs(ref_frag_total(r) - (4000 + 0.5 * 0 + 0.5 * 2700 + 1000)) < 1e-9);
	/* a fraction's CPU above the free CPU makes the shape count L_n */
	m[0].req.cpu_milli = 64001;
	ref_set_workload(r, m, 2);
	assert_true(fabs(ref_frag_node(r, 1) - 2700) < 1e-9);
	ref_destroy(r);
	xp_cluster_destroy(c);
}

/* ------------------------------------------------------------------------ */
/* statistics: uniform draws */

/* random policy: nodes uniform among the feasible ones (8 nodes: 1 down,
 * 1 without CPU room, 1 without the device model -> 5 feasible). */
static void test_chi_random_node(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	for (int i = 0; i < 8; i++)
		add_node(c, i == 5 ? 1000 : 32000, 65536, 2, 16384);
	c->nodes[7].devs[0].cls = XP_CLASS_NPU;
	c->nodes[7].devs[1].cls = XP_CLASS_NPU;
	for (int no_index = 0; no_index <= 1; no_index++) {
		for (int tb = XP_TIE_RANK; tb <= XP_TIE_RANDOM; tb++) {
			struct xp_sched *s = mk_core(c, "random", tb, no_index, 0);
			xp_sched_set_node_up(s, 2, 0);
			struct xp_request q;
			frac_req(&q, 4000, 500, 0);
			q.sel.cls = XP_CLASS_GPU;
			struct xp_rng g;
			xp_rng_seed(&g, 77 + (uint64_t)no_index);
			unsigned cnt[8] = { 0 };
			const int draws = 10000;
			for (int i = 0; i < draws; i++) {
				struct xp_alloc a;
				assert_int_equal(xp_sched_pick(s, &q, &g, &a), 0);
				assert_true(a.node < 8);
				cnt[a.node]++;
			}
			assert_int_equal(cnt[2] + cnt[5] + cnt[7], 0);
			unsigned f[5] = { cnt[0], cnt[1], cnt[3], cnt[4], cnt[6] };
			double x = chi2(f, 5, draws / 5.0);
			if (x > chi2_bound(5))
				fprintf(stderr, "random node: chi2 %.1f (%u %u %u %u %u)\n", x,
					f[0], f[1], f[2], f[3], f[4]);
			assert_true(x <= chi2_bound(5));
			xp_sched_destroy(s);
		}
	}
	xp_cluster_destroy(c);
}

/* random policy: a fraction's device uniform among the fitting ones. */
static void test_chi_random_device(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	add_node(c, 64000, 65536, 6, 16384);
	for (int no_index = 0; no_index <= 1; no_index++) {
		struct xp_sched *s = mk_core(c, "random", XP_TIE_RANK, no_index, 0);
		/* devices: 0 free, 1 has 700 used (300 free), 2 has 200 used,
		 * 3 whole-used, 4 free, 5 unhealthy -> fitting for 300: 0, 1, 2, 4 */
		struct xp_request q;
		struct xp_alloc a;
		memset(&a, 0, sizeof(a));
		a.node = 0;
		a.ndev = 1;
		a.dev_milli = 700;
		a.devs[0] = 1;
		xp_sched_commit(s, &a);
		a.dev_milli = 200;
		a.devs[0] = 2;
		xp_sched_commit(s, &a);
		a.dev_milli = XP_MILLI;
		a.dev_mem_mib = 16384;
		a.devs[0] = 3;
		xp_sched_commit(s, &a);
		xp_sched_set_device_ok(s, 0, 5, 0);
		frac_req(&q, 1000, 300, 0);
		struct xp_rng g;
		xp_rng_seed(&g, 99 + (uint64_t)no_index);
		unsigned cnt[6] = { 0 };
		const int draws = 8000;
		for (int i = 0; i < draws; i++) {
			assert_int_equal(xp_sched_pick(s, &q, &g, &a), 0);
			assert_int_equal(a.ndev, 1);
			cnt[a.devs[0]]++;
		}
		assert_int_equal(cnt[3] + cnt[5], 0);
		unsigned f[4] = { cnt[0], cnt[1], cnt[2], cnt[4] };
		double x = chi2(f, 4, draws / 4.0);
		if (x > chi2_bound(4))
			fprintf(stderr, "random device: chi2 %.1f (%u %u %u %u)\n", x, f[0], f[1],
				f[2], f[3]);
		assert_true(x <= chi2_bound(4));
		xp_sched_destroy(s);
	}
	xp_cluster_destroy(c);
}

/* XP_TIE_RANDOM: uniform among the tied best nodes only. 9 identical nodes;
 * a whole GPU runs on nodes 1, 4 and 7, so binpack prefers exactly those
 * three, dotprod prefers them too (less free milli), and with no node
 * preferred (cpu-only under clustering: 0 everywhere) all 9 tie. */
static void test_chi_tie_random(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	for (int i = 0; i < 9; i++)
		add_node(c, 32000, 65536, 4, 16384);
	const char *const pols[] = { "binpack", "dotprod", "packing", "clustering" };
	for (size_t p = 0; p < NELEM(pols); p++) {
		for (int no_index = 0; no_index <= 1; no_index++) {
			struct xp_sched *s = mk_core(c, pols[p], XP_TIE_RANDOM, no_index, 0);
			struct ref_sched *r = ref_create(c, pols[p]);
			struct xp_request q;
			whole_req(&q, 1000, 1);
			for (uint32_t n = 1; n < 9; n += 3) {
				struct xp_alloc a;
				ref_pick_on(r, n, &q, NULL, &a);
				xp_sched_commit(s, &a);
				ref_commit(r, &a);
			}
			int cpu_only = strcmp(pols[p], "clustering") == 0;
			if (cpu_only)
				xp_request_init(&q), q.cpu_milli = 1000;
			else
				whole_req(&q, 1000, 1);
			int32_t best = ref_max_score(r, &q);
			unsigned tied[9], nt = 0;
			for (uint32_t n = 0; n < 9; n++)
				if (ref_score(r, n, &q) == best)
					tied[nt++] = n;
			assert_true(nt == (cpu_only ? 9u : 3u));
			struct xp_rng g;
			xp_rng_seed(&g, 1234 + p * 2 + (uint64_t)no_index);
			unsigned cnt[9] = { 0 };
			const int draws = 9000;
			for (int i = 0; i < draws; i++) {
				struct xp_alloc a;
				assert_int_equal(xp_sched_pick(s, &q, &g, &a), 0);
				cnt[a.node]++;
			}
			unsigned f[9];
			unsigned in = 0;
			for (unsigned i = 0; i < nt; i++) {
				f[i] = cnt[tied[i]];
				in += f[i];
			}
			if (in != (unsigned)draws)
				fprintf(stderr,
					"tie random %s: %u of %d picks outside the tied set\n",
					pols[p], draws - in, draws);
			assert_int_equal(in, draws);
			double x = chi2(f, nt, (double)draws / nt);
			if (x > chi2_bound(nt))
				fprintf(stderr, "tie random %s (%s): chi2 %.1f\n", pols[p],
					no_index ? "scan" : "index", x);
			assert_true(x <= chi2_bound(nt));
			ref_destroy(r);
			xp_sched_destroy(s);
		}
	}
	xp_cluster_destroy(c);
}

/* XP_TIE_RANDOM when memory prunes: 100 identical nodes in a random rank
 * order; 12 random ones run a whole GPU (binpack prefers them), and 4 of
 * those 12 have too little memory left. Picks must be uniform over the
 * other 8; with every node tied (cpu-only), uniform over the 100 minus the
 * memory-starved ones. */
static void test_chi_tie_random_memory(void **st)
{
	(void)st;
	enum { N = 100 };
	struct xp_cluster *c = xp_cluster_create();
	for (int i = 0; i < N; i++)
		add_node(c, 64000, 65536, 4, 16384);
	struct xp_rng g;
	xp_rng_seed(&g, 4242);
	uint32_t rank[N], pick[N];
	xp_rng_perm(&g, rank, N);
	xp_rng_perm(&g, pick, N);
	for (int no_index = 0; no_index <= 1; no_index++) {
		struct xp_sched *s = mk_core(c, "binpack", XP_TIE_RANDOM, no_index, 0);
		assert_int_equal(xp_sched_set_ranks(s, rank, NULL), 0);
		unsigned role[N] = { 0 }; /* 1: runs a GPU, 2: also starved of memory */
		for (int i = 0; i < 12; i++) {
			struct xp_alloc a;
			memset(&a, 0, sizeof(a));
			a.node = pick[i];
			a.ndev = 1;
			a.dev_milli = XP_MILLI;
			a.dev_mem_mib = 16384;
			a.mem_mib = i < 4 ? 60000 : 1000;
			xp_sched_commit(s, &a);
			role[pick[i]] = i < 4 ? 2 : 1;
		}
		for (int cpu_only = 0; cpu_only <= 1; cpu_only++) {
			struct xp_request q;
			whole_req(&q, 1000, 1);
			if (cpu_only) {
				xp_request_init(&q);
				q.cpu_milli = 1000;
			}
			q.mem_mib = 8192;
			unsigned cnt[N] = { 0 };
			unsigned nwin = 0;
			for (int i = 0; i < N; i++)
				nwin += cpu_only ? role[i] != 2 : role[i] == 1;
			const int draws = 200 * (int)nwin;
			for (int i = 0; i < draws; i++) {
				struct xp_alloc a;
				assert_int_equal(xp_sched_pick(s, &q, &g, &a), 0);
				cnt[a.node]++;
			}
			unsigned f[N], k = 0, out = 0;
			for (int i = 0; i < N; i++) {
				int win = cpu_only ? role[i] != 2 : role[i] == 1;
				if (win)
					f[k++] = cnt[i];
				else
					out += cnt[i];
			}
			/* cpu-only binpack is over CPU: the GPU nodes used 0 CPU
			 * here, so every node with memory ties */
			assert_int_equal(out, 0);
			double x = chi2(f, k, (double)draws / k);
			if (x > chi2_bound(k))
				fprintf(stderr,
					"tie random with memory (%s, %s): chi2 %.1f over %u\n",
					no_index ? "scan" : "index", cpu_only ? "cpu-only" : "gpu",
					x, k);
			assert_true(x <= chi2_bound(k));
		}
		xp_sched_destroy(s);
	}
	xp_cluster_destroy(c);
}

/* ------------------------------------------------------------------------ */
/* edge cases: every deterministic policy, index and scan, and the reference */

struct trio {
	const char *policy;
	struct xp_sched *s[2];
	struct ref_sched *r;
};

static void trio_open(struct trio *t, const struct xp_cluster *c, const char *policy)
{
	t->policy = policy;
	t->s[0] = mk_core(c, policy, XP_TIE_RANK, 0, 0);
	t->s[1] = mk_core(c, policy, XP_TIE_RANK, 1, 0);
	t->r = ref_create(c, policy);
	assert_non_null(t->r);
}

static void trio_close(struct trio *t)
{
	xp_sched_destroy(t->s[0]);
	xp_sched_destroy(t->s[1]);
	ref_destroy(t->r);
}

/* Allocations of one placement: [0] index core, [1] scan core, [2] reference. */
struct tri {
	struct xp_alloc a[3];
};

/* Pick in all three; they must agree with each other and with the expected
 * outcome (node -1: no fit; ANY: fits somewhere; ndev < 0: do not check
 * the devices). Commits
 * when commit is set. */
#define ANY (-2)

static struct tri trio_pick(struct trio *t, const struct xp_request *q, int node, int ndev,
			    const uint8_t *devs, int commit)
{
	struct tri x;
	memset(&x, 0, sizeof(x));
	struct xp_alloc *ra = &x.a[2], *ca = x.a;
	struct xp_rng g;
	xp_rng_seed(&g, 1);
	int rrc = ref_pick(t->r, q, &g, ra);
	int crc[2];
	for (int i = 0; i < 2; i++)
		crc[i] = xp_sched_pick(t->s[i], q, &g, &ca[i]);
	int bad = (node == -1) != (rrc != 0);
	if (!bad && node != -1) {
		if (node >= 0)
			bad = ra->node != (uint32_t)node;
		if (ndev >= 0) {
			bad |= ra->ndev != ndev;
			for (int i = 0; i < ndev && !bad; i++)
				bad |= ra->devs[i] != devs[i];
		}
	}
	for (int i = 0; i < 2; i++) {
		bad |= (crc[i] == 0) != (rrc == 0);
		if (rrc == 0 && crc[i] == 0)
			bad |= !same_alloc(ra, &ca[i]);
	}
	if (bad) {
		fprintf(stderr, "EDGE MISMATCH: policy %s, expected node %d\n", t->policy, node);
		print_request("request", q);
		print_alloc("ref", rrc, ra);
		print_alloc("index", crc[0], &ca[0]);
		print_alloc("scan", crc[1], &ca[1]);
		for (size_t n = 0; n < t->r->nnodes; n++)
			print_node(t->r, (uint32_t)n, q);
		fail();
	}
	if (commit && rrc == 0) {
		xp_sched_commit(t->s[0], &ca[0]);
		xp_sched_commit(t->s[1], &ca[1]);
		ref_commit(t->r, ra);
	}
	return x;
}

static void trio_release(struct trio *t, const struct tri *x)
{
	xp_sched_release(t->s[0], &x->a[0]);
	xp_sched_release(t->s[1], &x->a[1]);
	ref_release(t->r, &x->a[2]);
}

/* Every node's reason must be `why` except node `other` (reason `owhy`). */
static void trio_explain(struct trio *t, const struct xp_request *q, int why, int other, int owhy,
			 uint64_t cpu_short, uint64_t mem_short)
{
	struct xp_explain want;
	ref_explain(t->r, q, &want);
	uint32_t expect[XP_WHY_N] = { 0 };
	for (size_t n = 0; n < t->r->nnodes; n++)
		expect[(int)n == other ? owhy : why]++;
	assert_memory_equal(want.nodes, expect, sizeof(expect));
	for (int i = 0; i < 2; i++) {
		struct xp_explain got;
		xp_sched_explain(t->s[i], q, &got);
		if (memcmp(got.nodes, expect, sizeof(expect)) != 0) {
			fprintf(stderr, "EDGE MISMATCH (explain): policy %s\n", t->policy);
			print_request("request", q);
			for (int w = 0; w < XP_WHY_N; w++)
				fprintf(stderr, "  %-24s expected %u core %u\n", xp_why_name(w),
					expect[w], got.nodes[w]);
			fail();
		}
		if (expect[XP_WHY_CPU])
			assert_int_equal(got.cpu_short_min, cpu_short);
		if (expect[XP_WHY_MEM])
			assert_int_equal(got.mem_short_min, mem_short);
	}
	if (expect[XP_WHY_CPU])
		assert_int_equal(want.cpu_short_min, cpu_short);
	if (expect[XP_WHY_MEM])
		assert_int_equal(want.mem_short_min, mem_short);
}

static const uint8_t D0[] = { 0 }, D1[] = { 1 }, D01[] = { 0, 1 };

/* request == free: fits; one more milli-core / MiB / device MiB: does not. */
static void test_edge_exact_fit(void **st)
{
	(void)st;
	for (size_t p = 0; p < NELEM(det_policies); p++) {
		struct xp_cluster *c = xp_cluster_create();
		add_node(c, 4000, 8192, 1, 16384);
		struct trio t;
		trio_open(&t, c, det_policies[p]);
		struct xp_request q;
		whole_req(&q, 4000, 1);
		q.mem_mib = 8192;
		q.dev_mem_mib = 16384;
		trio_pick(&t, &q, 0, 1, D0, 0);
		q.cpu_milli = 4001;
		trio_pick(&t, &q, -1, 0, NULL, 0);
		trio_explain(&t, &q, XP_WHY_CPU, -1, 0, 1, 0);
		q.cpu_milli = 4000;
		q.mem_mib = 8193;
		trio_pick(&t, &q, -1, 0, NULL, 0);
		trio_explain(&t, &q, XP_WHY_MEM, -1, 0, 0, 1);
		q.mem_mib = 8192;
		q.dev_mem_mib = 16385; /* not a selector field: the device matches, no slot fits */
		trio_pick(&t, &q, -1, 0, NULL, 0);
		trio_explain(&t, &q, XP_WHY_DEV_BUSY, -1, 0, 0, 0);
		/* place it exactly, then nothing else fits, not even 1 milli-core */
		q.dev_mem_mib = 16384;
		struct tri a = trio_pick(&t, &q, 0, 1, D0, 1);
		xp_request_init(&q);
		q.cpu_milli = 1;
		trio_pick(&t, &q, -1, 0, NULL, 0);
		q.cpu_milli = 0; /* an empty request still fits (0 >= 0) */
		trio_pick(&t, &q, 0, 0, NULL, 0);
		trio_release(&t, &a);
		whole_req(&q, 4000, 1);
		q.mem_mib = 8192;
		trio_pick(&t, &q, 0, 1, D0, 0);
		trio_close(&t);
		xp_cluster_destroy(c);
	}
}

/* Every device taken: device requests fail as "busy", CPU-only ones fit. */
static void test_edge_zero_free_devices(void **st)
{
	(void)st;
	for (size_t p = 0; p < NELEM(det_policies); p++) {
		struct xp_cluster *c = xp_cluster_create();
		add_node(c, 64000, 65536, 2, 16384);
		add_node(c, 64000, 65536, 2, 16384);
		struct trio t;
		trio_open(&t, c, det_policies[p]);
		struct xp_request q;
		whole_req(&q, 1000, 2);
		trio_pick(&t, &q, ANY, 2, D01, 1);
		trio_pick(&t, &q, ANY, 2, D01, 1);
		trio_pick(&t, &q, -1, 0, NULL, 0);
		trio_explain(&t, &q, XP_WHY_DEV_BUSY, -1, 0, 0, 0);
		frac_req(&q, 1000, 1, 0);
		trio_pick(&t, &q, -1, 0, NULL, 0);
		trio_explain(&t, &q, XP_WHY_DEV_BUSY, -1, 0, 0, 0);
		xp_request_init(&q);
		q.cpu_milli = 1000;
		trio_pick(&t, &q, ANY, -1, NULL, 0);
		assert_int_equal(ref_nfeasible(t.r, &q), 2);
		assert_int_equal(xp_sched_used_milli(t.s[0]), 4000);
		assert_int_equal(xp_sched_used_milli(t.s[1]), 4000);
		trio_close(&t);
		xp_cluster_destroy(c);
	}
}

/* Only the last node (index and rank) can take it. */
static void test_edge_last_node(void **st)
{
	(void)st;
	for (size_t p = 0; p < NELEM(det_policies); p++) {
		struct xp_cluster *c = xp_cluster_create();
		for (int i = 0; i < 6; i++)
			add_node(c, 16000, 65536, 2, 16384);
		xp_sym h100 = xp_strtab_intern(c->syms, "H100");
		c->nodes[5].devs[1].model = h100;
		struct trio t;
		trio_open(&t, c, det_policies[p]);
		struct xp_request q;
		frac_req(&q, 1000, 500, 0);
		xp_selector_add_model(&q.sel, h100);
		trio_pick(&t, &q, 5, 1, D1, 0);
		trio_explain(&t, &q, XP_WHY_NO_DEVICE, 5, XP_WHY_FITS, 0, 0);
		/* the last node also loses on CPU: nothing fits */
		q.cpu_milli = 16001;
		trio_pick(&t, &q, -1, 0, NULL, 0);
		trio_explain(&t, &q, XP_WHY_NO_DEVICE, 5, XP_WHY_CPU, 1, 0);
		trio_close(&t);
		xp_cluster_destroy(c);
	}
}

/* One node: fill it to the brim, fail, release, fit again. */
static void test_edge_one_node(void **st)
{
	(void)st;
	for (size_t p = 0; p < NELEM(det_policies); p++) {
		struct xp_cluster *c = xp_cluster_create();
		add_node(c, 8000, 16384, 4, 16384);
		struct trio t;
		trio_open(&t, c, det_policies[p]);
		struct xp_request q;
		struct tri keep[8];
		int nk = 0;
		frac_req(&q, 1000, 500, 4096);
		for (int i = 0; i < 8; i++)
			keep[nk++] = trio_pick(&t, &q, 0, -1, NULL, 1);
		trio_pick(&t, &q, -1, 0, NULL, 0); /* CPU is exhausted */
		trio_explain(&t, &q, XP_WHY_CPU, -1, 0, 1000, 0);
		assert_int_equal(xp_sched_used_milli(t.s[0]), 4000);
		trio_release(&t, &keep[3]);
		trio_pick(&t, &q, 0, 1, &keep[3].a[2].devs[0], 0); /* the only room left */
		for (int i = 0; i < nk; i++)
			if (i != 3)
				trio_release(&t, &keep[i]);
		assert_int_equal(xp_sched_used_milli(t.s[0]), 0);
		assert_int_equal(xp_sched_used_milli(t.s[1]), 0);
		whole_req(&q, 8000, 4);
		trio_pick(&t, &q, 0, 4, (const uint8_t[]){ 0, 1, 2, 3 }, 0);
		trio_close(&t);
		xp_cluster_destroy(c);
	}
}

/* A node without devices takes CPU-only work and explains "no device". */
static void test_edge_node_without_devices(void **st)
{
	(void)st;
	for (size_t p = 0; p < NELEM(det_policies); p++) {
		struct xp_cluster *c = xp_cluster_create();
		add_node(c, 64000, 65536, 0, 0);
		add_node(c, 8000, 16384, 1, 16384);
		struct trio t;
		trio_open(&t, c, det_policies[p]);
		struct xp_request q;
		whole_req(&q, 1000, 1);
		trio_pick(&t, &q, 1, 1, D0, 0);
		trio_explain(&t, &q, XP_WHY_NO_DEVICE, 1, XP_WHY_FITS, 0, 0);
		xp_request_init(&q);
		q.cpu_milli = 16000; /* only node 0 has the CPU */
		trio_pick(&t, &q, 0, 0, NULL, 1);
		trio_close(&t);
		/* a one-node cluster without any device */
		struct xp_cluster *c1 = xp_cluster_create();
		add_node(c1, 4000, 4096, 0, 0);
		trio_open(&t, c1, det_policies[p]);
		trio_pick(&t, &q, -1, 0, NULL, 0);
		q.cpu_milli = 4000;
		trio_pick(&t, &q, 0, 0, NULL, 1);
		assert_int_equal(xp_sched_total_milli(t.s[0]), 0);
		trio_close(&t);
		xp_cluster_destroy(c1);
		xp_cluster_destroy(c);
	}
}

/* Whole devices need the device entirely free, memory included. */
static void test_edge_whole_on_partly_used(void **st)
{
	(void)st;
	for (size_t p = 0; p < NELEM(det_policies); p++) {
		struct xp_cluster *c = xp_cluster_create();
		add_node(c, 64000, 65536, 2, 16384);
		struct trio t;
		trio_open(&t, c, det_policies[p]);
		/* a tiny fraction with much memory on device 0 */
		struct xp_request q;
		frac_req(&q, 1000, 1, 8192);
		struct tri tiny = trio_pick(&t, &q, 0, -1, NULL, 1);
		uint8_t used = tiny.a[2].devs[0], other = (uint8_t)(1 - used);
		whole_req(&q, 1000, 1);
		trio_pick(&t, &q, 0, 1, &other, 0);
		whole_req(&q, 1000, 2);
		trio_pick(&t, &q, -1, 0, NULL, 0);
		trio_explain(&t, &q, XP_WHY_DEV_BUSY, -1, 0, 0, 0);
		/* a fraction wanting more memory than is left on the used device
		 * must go to the other one */
		frac_req(&q, 1000, 1, 8193);
		trio_pick(&t, &q, 0, 1, &other, 0);
		trio_release(&t, &tiny);
		whole_req(&q, 1000, 2);
		trio_pick(&t, &q, 0, 2, D01, 0);
		/* memory fully taken by a fraction: a fraction asking for none fits,
		 * one asking for 1 MiB does not */
		frac_req(&q, 1000, 100, 16384);
		struct tri all = trio_pick(&t, &q, 0, -1, NULL, 1);
		frac_req(&q, 1000, 100, 0);
		trio_pick(&t, &q, 0, -1, NULL, 0);
		whole_req(&q, 1000, 1);
		uint8_t free_dev = (uint8_t)(1 - all.a[2].devs[0]);
		trio_pick(&t, &q, 0, 1, &free_dev, 0);
		trio_close(&t);
		xp_cluster_destroy(c);
	}
}

/* A fraction equal to the free milli fits and leaves 0. */
static void test_edge_fraction_equal_free(void **st)
{
	(void)st;
	for (size_t p = 0; p < NELEM(det_policies); p++) {
		struct xp_cluster *c = xp_cluster_create();
		add_node(c, 64000, 65536, 1, 16384);
		struct trio t;
		trio_open(&t, c, det_policies[p]);
		struct xp_request q;
		frac_req(&q, 1000, 700, 1000);
		trio_pick(&t, &q, 0, 1, D0, 1);
		frac_req(&q, 1000, 301, 0);
		trio_pick(&t, &q, -1, 0, NULL, 0);
		trio_explain(&t, &q, XP_WHY_DEV_BUSY, -1, 0, 0, 0);
		frac_req(&q, 1000, 300, 15384);
		trio_pick(&t, &q, 0, 1, D0, 1);
		assert_int_equal(xp_sched_dev_free_milli(t.s[0], 0, 0), 0);
		assert_int_equal(xp_sched_dev_free_mem(t.s[1], 0, 0), 0);
		assert_int_equal(ref_dev_free_milli(t.r, 0, 0), 0);
		frac_req(&q, 1000, 1, 0);
		trio_pick(&t, &q, -1, 0, NULL, 0);
		assert_int_equal(xp_sched_used_milli(t.s[0]), 1000);
		trio_close(&t);
		xp_cluster_destroy(c);
	}
}

/* Equal scores: the lowest rank wins, so reversing the ranks flips it. */
static void test_edge_ranks_decide_ties(void **st)
{
	(void)st;
	for (size_t p = 0; p < NELEM(det_policies); p++) {
		struct xp_cluster *c = xp_cluster_create();
		for (int i = 0; i < 4; i++)
			add_node(c, 32000, 65536, 2, 16384);
		struct trio t;
		trio_open(&t, c, det_policies[p]);
		struct xp_request q[3];
		whole_req(&q[0], 1000, 1);
		frac_req(&q[1], 1000, 250, 0);
		xp_request_init(&q[2]);
		q[2].cpu_milli = 2000;
		for (int i = 0; i < 3; i++)
			trio_pick(&t, &q[i], 0, -1, NULL, 0);
		uint32_t rev[4] = { 3, 2, 1, 0 };
		for (int i = 0; i < 2; i++)
			assert_int_equal(xp_sched_set_ranks(t.s[i], rev, NULL), 0);
		ref_set_ranks(t.r, rev);
		for (int i = 0; i < 3; i++)
			trio_pick(&t, &q[i], 3, -1, NULL, 0);
		uint32_t sparse[4] = { 40, 10, 30, 20 }; /* distinct, not 0..n-1 */
		for (int i = 0; i < 2; i++)
			assert_int_equal(xp_sched_set_ranks(t.s[i], sparse, NULL), 0);
		ref_set_ranks(t.r, sparse);
		for (int i = 0; i < 3; i++)
			trio_pick(&t, &q[i], 1, -1, NULL, 0);
		trio_close(&t);
		xp_cluster_destroy(c);
	}
}

/* Affinity tags: k >= 16 whole devices share one tag. Node 0 (40 GPUs, 20
 * unhealthy) holds nothing: 25 + 25*20000/40000 = 37. Node 1 (40 GPUs) runs
 * 16 whole ones; for 17 or 20 whole devices it holds the request's tag as
 * its only tag: 75 + 25*16000/40000 = 85. Were 17 a tag of its own, node 1
 * would score 10 and lose. */
static void test_edge_tag16(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	add_node(c, 128000, 262144, 40, 16384);
	add_node(c, 128000, 262144, 40, 16384);
	for (int d = 20; d < 40; d++)
		c->nodes[0].devs[d].health = XP_HEALTH_UNHEALTHY;
	for (size_t p = 0; p < NELEM(det_policies); p++) {
		struct trio t;
		trio_open(&t, c, det_policies[p]);
		struct xp_alloc a;
		struct xp_request q;
		whole_req(&q, 1000, 16);
		ref_pick_on(t.r, 1, &q, NULL, &a);
		xp_sched_commit(t.s[0], &a);
		xp_sched_commit(t.s[1], &a);
		ref_commit(t.r, &a);
		int clustering = strcmp(det_policies[p], "clustering") == 0;
		whole_req(&q, 1000, 17);
		if (clustering)
			assert_int_equal(ref_score(t.r, 1, &q), 85);
		trio_pick(&t, &q, clustering ? 1 : ANY, -1, NULL, 0);
		whole_req(&q, 1000, 20);
		trio_pick(&t, &q, clustering ? 1 : ANY, -1, NULL, 0);
		whole_req(&q, 1000, 2); /* another tag: node 1 scores 10, node 0 37 */
		trio_pick(&t, &q, clustering ? 0 : ANY, -1, NULL, 0);
		trio_close(&t);
	}
	xp_cluster_destroy(c);
}

/* The policy table: the names and score ranges the reference assumes. */
static void test_policy_table(void **st)
{
	(void)st;
	for (int p = 0; p < REF_NPOLICIES; p++) {
		const struct xp_policy_ops *ops = xp_policy_find(ref_policy_name(p));
		assert_non_null(ops);
		assert_string_equal(ops->name, ref_policy_name(p));
		if (p != REF_RANDOM)
			assert_int_equal(ops->score_max, ref_score_max(p));
	}
	assert_true(xp_policy_find("random")->flags & XP_POLICY_RANDOM_NODE);
	assert_null(xp_policy_find("no-such-policy"));
}

/* The documented input contracts: distinct ranks, probabilities >= 0
 * summing to ~1, a known policy (NULL = fgd). */
static void test_api_contracts(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	for (int i = 0; i < 3; i++)
		add_node(c, 8000, 8192, 1, 16384);
	struct xp_sched *s = mk_core(c, NULL, XP_TIE_RANK, 0, 0);
	assert_string_equal(xp_sched_policy(s)->name, "fgd");
	struct xp_err err;
	uint32_t dup[3] = { 2, 0, 2 }, ok[3] = { 2, 0, 1 };
	assert_true(xp_sched_set_ranks(s, dup, &err) < 0);
	assert_int_equal(xp_sched_set_ranks(s, ok, &err), 0);
	struct xp_wshape m[2];
	xp_request_init(&m[0].req); /* CPU-only: F_n = L_n */
	frac_req(&m[1].req, 0, 500, 0);
	m[0].p = -0.25;
	m[1].p = 1.25;
	assert_true(xp_sched_set_workload(s, m, 2, &err) < 0);
	m[0].p = m[1].p = 0.25;
	assert_true(xp_sched_set_workload(s, m, 2, &err) < 0);
	m[0].p = 0.3;
	m[1].p = 0.7;
	assert_int_equal(xp_sched_set_workload(s, m, 2, &err), 0);
	assert_true(fabs(xp_sched_frag(s) - 0.3 * 3000) < 1e-6);
	assert_int_equal(xp_sched_set_workload(s, NULL, 0, &err), 0);
	assert_true(xp_sched_frag(s) == 0);
	xp_sched_destroy(s);
	struct xp_sched_opts o;
	memset(&o, 0, sizeof(o));
	o.policy = "no-such-policy";
	assert_null(xp_sched_create(c, &o, &err));
	assert_null(ref_create(c, "no-such-policy"));
	xp_cluster_destroy(c);
}

static int report_ops(void **st)
{
	(void)st;
	if (getenv("XP_REF_VERBOSE"))
		fprintf(stderr,
			"test_sched_ref: %zu random operations: %zu placed, %zu no fit, %zu "
			"released, "
			"%zu explain, %zu state checks\n",
			total_ops, n_placed, n_nofit, n_released, n_explain, n_checks);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_table),
		cmocka_unit_test(test_api_contracts),
		cmocka_unit_test(test_ref_formulas),
		cmocka_unit_test(test_edge_exact_fit),
		cmocka_unit_test(test_edge_zero_free_devices),
		cmocka_unit_test(test_edge_last_node),
		cmocka_unit_test(test_edge_one_node),
		cmocka_unit_test(test_edge_node_without_devices),
		cmocka_unit_test(test_edge_whole_on_partly_used),
		cmocka_unit_test(test_edge_fraction_equal_free),
		cmocka_unit_test(test_edge_ranks_decide_ties),
		cmocka_unit_test(test_edge_tag16),
		cmocka_unit_test(test_chi_random_node),
		cmocka_unit_test(test_chi_random_device),
		cmocka_unit_test(test_chi_tie_random),
		cmocka_unit_test(test_chi_tie_random_memory),
		cmocka_unit_test(test_equiv_dotprod),
		cmocka_unit_test(test_equiv_clustering),
		cmocka_unit_test(test_equiv_packing),
		cmocka_unit_test(test_equiv_bestfit),
		cmocka_unit_test(test_equiv_fgd),
		cmocka_unit_test(test_equiv_binpack),
		cmocka_unit_test(test_equiv_spread),
		cmocka_unit_test(test_equiv_stale_index),
		cmocka_unit_test(test_equiv_openb_large),
		cmocka_unit_test(test_valid_random_policy),
		cmocka_unit_test(test_valid_tie_random),
	};
	return cmocka_run_group_tests(tests, NULL, report_ops);
}
