/*
 * test_sched_edges: small explicit cases, input contracts and
 * hand-computed scores.
 *
 * The random streams of test_sched_ref rarely land exactly on a boundary,
 * so the edges are pinned here by hand, for every deterministic policy,
 * with the core (index and scan) and the reference in lock-step: exact fit,
 * full devices, last node, one node, no devices, whole on a partly used
 * device, a fraction equal to the free milli, ranks deciding a tie, the
 * shared tag of k >= 16 devices. Further: the reference's formulas on
 * hand-computed numbers (so that the reference itself is checked, not only
 * agreed with), the policy table the reference assumes, and the documented
 * input contracts (ranks, workload probabilities, policy names).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sched_harness.h"

#include "core/sched/policy.h"

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

/* xpool's measure by hand. Nodes: A 64 cores + 4 GPUs (16 GiB), B 16 cores
 * + 2 GPUs (32 GiB), C 8 cores + 4 GPUs (16 GiB). M: one whole GPU with 8
 * cores, p 0.5 anywhere, p 0.5 only on 32 GiB GPUs (B). rho = 8000 / 1000
 * = 8 cores per GPU; the constrained shape's share is 0.5, its supply 2000
 * milli of 10000. B is down for the last check. A request: one GPU, 8
 * cores. */
static void test_ref_xpool_by_hand(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	add_node(c, 64000, 262144, 4, 16384);
	add_node(c, 16000, 262144, 2, 32768);
	add_node(c, 8000, 262144, 4, 16384);
	struct xp_wshape m[2];
	whole_req(&m[0].req, 8000, 1);
	m[0].p = 0.5;
	whole_req(&m[1].req, 8000, 1);
	m[1].req.sel.min_mem_mib = 32768;
	m[1].p = 0.5;
	struct xp_request q;
	whole_req(&q, 8000, 1);
	struct ref_sched *r = ref_create(c, "xpool");
	assert_non_null(r);
	ref_set_workload(r, m, 2);
	assert_true(fabs(r->rho - 8) < 1e-12);
	/* pi_B = 0.5 * 10000 / 2000 */
	assert_true(r->pressure[0] == 0 && fabs(r->pressure[1] - 2.5) < 1e-12 &&
		    r->pressure[2] == 0);
	/* A: G = F (0.5 * 0 + 0.5 * 4000) + no stranding (4000 < 64000/8) = 2000;
	 * after: F' = 0.5 * 3000 = 1500, delta 500: trunc(40 sigmoid(1/6)) = 21 */
	assert_int_equal(ref_score(r, 0, &q), 21);
	/* B: G = 0 + 0 (2000 - 16000/8 = 0) - 2.5 * 2000 = -5000; after:
	 * -2.5 * 1000, delta -2500: trunc(40 sigmoid(-5/6)) = 12 */
	assert_int_equal(ref_score(r, 1, &q), 12);
	/* C: G = 2000 + (4000 - 8000/8) = 5000; after (no CPU left: the
	 * unconstrained shape sees all 3000): 3000 + 3000, delta -1000:
	 * trunc(40 sigmoid(-1/3)) = 16; FGD would give trunc(100 sigmoid(-1)) */
	assert_int_equal(ref_score(r, 2, &q), 16);
	for (int no_index = 0; no_index <= 1; no_index++) {
		struct xp_sched *s = mk_core(c, "xpool", XP_TIE_RANK, no_index, 0);
		struct xp_alloc a;
		struct xp_rng g;
		assert_int_equal(xp_sched_set_workload(s, m, 2, NULL), 0);
		xp_rng_seed(&g, 5);
		assert_int_equal(xp_sched_pick(s, &q, &g, &a), 0);
		assert_int_equal(a.node, 0);
		xp_sched_destroy(s);
	}
	/* with B down, the constrained shape has no supply: no pressure */
	r->up[1] = 0;
	ref_set_workload(r, m, 2);
	assert_true(r->pressure[0] == 0 && r->pressure[1] == 0 && r->pressure[2] == 0);
	ref_destroy(r);
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

/* weighted: the factors move the choice as documented (scheduler.md) -
 * failures, efficiency, network; and the weights parse strictly */
static void test_weighted_factors(void **st)
{
	(void)st;
	struct xp_cluster *c = xp_cluster_create();
	for (int i = 0; i < 3; i++)
		add_node(c, 32000, 65536, 4, 16384);
	struct xp_sched_opts o = { .policy = "weighted" };
	struct xp_sched *s = xp_sched_create(c, &o, NULL);
	struct xp_request q;
	struct xp_alloc a;
	struct xp_rng rng;
	xp_rng_seed(&rng, 1);
	whole_req(&q, 1000, 1);
	assert_int_equal(xp_sched_pick(s, &q, &rng, &a), 0);
	assert_int_equal(a.node, 0); /* all alike: the rank */
	xp_sched_set_node_failures(s, 0, 3);
	assert_int_equal(xp_sched_pick(s, &q, &rng, &a), 0);
	assert_int_equal(a.node, 1); /* a node that failed loses */
	xp_sched_set_node_failures(s, 0, 0);
	xp_sched_destroy(s);
	/* efficiency: node 2's accelerators do more per watt */
	for (int i = 0; i < 3; i++)
		for (int d = 0; d < 4; d++) {
			c->nodes[i].devs[d].tdp_w = 400;
			c->nodes[i].devs[d].peak_gflops[XP_PREC_FP16] = i == 2 ? 900000 : 300000;
		}
	s = xp_sched_create(c, &o, NULL);
	assert_int_equal(xp_sched_pick(s, &q, &rng, &a), 0);
	assert_int_equal(a.node, 2);
	xp_sched_destroy(s);
	/* network: a request of 2+ devices wants the fat pipe (node 1); a small
	 * one leaves it */
	for (int i = 0; i < 3; i++)
		for (int d = 0; d < 4; d++)
			c->nodes[i].devs[d].peak_gflops[XP_PREC_FP16] = 300000;
	xp_link_add(&c->nodes[1].devs[0], XP_LINK_RDMA, -1, 400);
	xp_link_add(&c->nodes[0].devs[0], XP_LINK_RDMA, -1, 100);
	xp_link_add(&c->nodes[2].devs[0], XP_LINK_RDMA, -1, 100);
	s = xp_sched_create(c, &o, NULL);
	whole_req(&q, 1000, 2);
	assert_int_equal(xp_sched_pick(s, &q, &rng, &a), 0);
	assert_int_equal(a.node, 1);
	whole_req(&q, 1000, 1);
	assert_int_equal(xp_sched_pick(s, &q, &rng, &a), 0);
	assert_int_not_equal(a.node, 1);
	xp_sched_destroy(s);
	/* only network counts: weights decide */
	assert_int_equal(xp_weights_parse("network=1", o.weights, NULL), 0);
	assert_int_equal(o.weights[XP_W_NETWORK], 1000);
	assert_int_equal(o.weights[XP_W_AFFINITY], 0);
	struct xp_err err = { 0 };
	assert_int_equal(xp_weights_parse("affinity=0.25,energy=x", o.weights, &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "energy=x"));
	assert_int_equal(xp_weights_parse("speed=1", o.weights, NULL), XP_EINVAL);
	assert_int_equal(xp_weights_parse("health=0", o.weights, NULL), XP_EINVAL);
	assert_int_equal(xp_weights_parse("affinity", o.weights, NULL), XP_EINVAL);
	assert_int_equal(o.weights[XP_W_NETWORK], 1000); /* refused: unchanged */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_table),
		cmocka_unit_test(test_api_contracts),
		cmocka_unit_test(test_ref_formulas),
		cmocka_unit_test(test_ref_xpool_by_hand),
		cmocka_unit_test(test_edge_exact_fit),
		cmocka_unit_test(test_edge_zero_free_devices),
		cmocka_unit_test(test_edge_last_node),
		cmocka_unit_test(test_edge_one_node),
		cmocka_unit_test(test_edge_node_without_devices),
		cmocka_unit_test(test_edge_whole_on_partly_used),
		cmocka_unit_test(test_edge_fraction_equal_free),
		cmocka_unit_test(test_edge_ranks_decide_ties),
		cmocka_unit_test(test_edge_tag16),
		cmocka_unit_test(test_weighted_factors),
	};
	return xp_run_tests(tests, NULL, NULL);
}
