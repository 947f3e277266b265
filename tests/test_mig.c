/*
 * test_mig: MIG geometry (core/model/mig.h), placement policies
 * (core/sched/mig_place.h) and `xpool sim mig` (sim/mig.h).
 *
 * The lattice is checked against a naive reference on random place/remove
 * sequences: the reference keeps a list of instances as intervals and
 * enumerates everything (feasible placements, the largest placeable
 * profile, the most instances of a kind that still fit, by exhaustive
 * search). The tables are checked against the facts of issue 21. The
 * trace-driven runs skip (77) when ../shared is absent.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/mig.h"
#include "core/sched/mig_place.h"
#include "lib/rng.h"
#include "sim/mig.h"

static const struct xp_mig_table *table(const char *name)
{
	const struct xp_mig_table *t = xp_mig_table_find(name);
	assert_non_null(t);
	return t;
}

/* issue 21: the A100-40GB placements, profile ids and names */
static void test_a100_40gb_table(void **state)
{
	static const struct {
		const char *name;
		uint16_t id;
		uint8_t size, n, starts[8];
	} want[] = {
		{ "1g.5gb", 19, 1, 7, { 0, 1, 2, 3, 4, 5, 6 } },
		{ "1g.5gb+me", 20, 1, 7, { 0, 1, 2, 3, 4, 5, 6 } },
		{ "1g.10gb", 15, 2, 4, { 0, 2, 4, 6 } },
		{ "2g.10gb", 14, 2, 3, { 0, 2, 4 } },
		{ "3g.20gb", 9, 4, 2, { 0, 4 } },
		{ "4g.20gb", 5, 4, 1, { 0 } },
		{ "7g.40gb", 0, 8, 1, { 0 } },
	};
	const struct xp_mig_table *t = table("A100-40GB");
	assert_string_equal(t->model, "A100-40GB");
	for (int k = 0; k < XP_MIG_NKINDS; k++) {
		const struct xp_mig_profile *p = &t->prof[k];
		assert_string_equal(p->name, want[k].name);
		assert_int_equal(p->id, want[k].id);
		assert_int_equal(p->nplace, want[k].n);
		for (unsigned i = 0; i < p->nplace; i++) {
			assert_int_equal(p->place[i].start, want[k].starts[i]);
			assert_int_equal(p->place[i].size, want[k].size);
		}
	}
}

/* every table: the same ids, compute slices and counts per kind */
static void test_ids_and_counts(void **state)
{
	static const uint16_t ids[] = { 19, 20, 15, 14, 9, 5, 0 };
	static const uint8_t compute[] = { 1, 1, 1, 2, 3, 4, 7 }, count[] = { 7, 1, 4, 3, 2, 1, 1 };
	assert_int_equal(xp_mig_ntables(), 4);
	for (size_t i = 0; i < xp_mig_ntables(); i++) {
		const struct xp_mig_table *t = xp_mig_table_at(i);
		assert_int_equal(xp_mig_table_index(t), i);
		for (int k = 0; k < XP_MIG_NKINDS; k++) {
			assert_int_equal(t->prof[k].id, ids[k]);
			assert_int_equal(t->prof[k].compute, compute[k]);
			assert_int_equal(t->prof[k].max_count, count[k]);
			assert_true(t->prof[k].mem_mib <= t->mem_mib);
			assert_true(k == 0 || t->prof[k].mem_mib >= t->prof[k - 1].mem_mib ||
				    k == XP_MIG_2G);
		}
	}
	assert_null(xp_mig_table_at(4));
}

/* issue 21: H200-141GB profiles, counts and SMs; memory from mig-parted#120 */
static void test_h200(void **state)
{
	static const char *const names[] = { "1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb",
					     "3g.71gb", "4g.71gb",    "7g.141gb" };
	static const uint16_t sms[] = { 16, 16, 26, 32, 60, 64, 132 };
	static const uint32_t mib[] = { 16384, 16384, 33024, 33024, 71168, 71168 };
	const struct xp_mig_table *t = table("H200");
	for (int k = 0; k < XP_MIG_NKINDS; k++) {
		assert_string_equal(t->prof[k].name, names[k]);
		assert_int_equal(t->prof[k].sms, sms[k]);
		if (k < XP_MIG_7G)
			assert_int_equal(t->prof[k].mem_mib, mib[k]);
	}
	assert_int_equal(t->prof[XP_MIG_1G].max_count, 7);
	assert_int_equal(t->prof[XP_MIG_1G_2X].max_count, 4);
	assert_int_equal(t->prof[XP_MIG_2G].max_count, 3);
	assert_int_equal(t->prof[XP_MIG_3G].max_count, 2);
	assert_int_equal(t->prof[XP_MIG_4G].max_count, 1);
	assert_int_equal(t->prof[XP_MIG_7G].max_count, 1);
}

static void test_table_find(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "NVIDIA A100-SXM4-80GB", "A100-80GB" },
		{ "A100 80GB PCIe", "A100-80GB" },
		{ "A100-PCIE-40GB", "A100-40GB" },
		{ "a100", "A100-40GB" },
		{ "H100 80GB HBM3", "H100-80GB" },
		{ "NVIDIA H100-SXM5-80GB", "H100-80GB" },
		{ "H200", "H200-141GB" },
		{ "h200-141gb", "H200-141GB" },
		{ "NVIDIA H200", "H200-141GB" },
		{ "H100-80GB", "H100-80GB" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct xp_mig_table *t = xp_mig_table_find(cases[i].in);
		if (!t || strcmp(t->model, cases[i].want))
			fail_msg("'%s': got %s, want %s", cases[i].in, t ? t->model : "none",
				 cases[i].want);
	}
	assert_null(xp_mig_table_find("V100"));
	assert_null(xp_mig_table_find("H100 94GB"));
	assert_null(xp_mig_table_find("NVIDIA H100 NVL"));
	assert_null(xp_mig_table_find("A100-20GB"));
	assert_null(xp_mig_table_find(""));
	assert_null(xp_mig_table_find(NULL));
}

static void test_profile_find(void **state)
{
	const struct xp_mig_table *t = table("A100-80GB");
	struct xp_err err = { 0 };
	assert_int_equal(xp_mig_profile_find(t, "3g.40gb", &err), XP_MIG_3G);
	assert_int_equal(xp_mig_profile_find(t, "3G.40GB", &err), XP_MIG_3G);
	assert_int_equal(xp_mig_profile_find(t, "1g.10GB+ME", &err), XP_MIG_1G_ME);
	assert_int_equal(xp_mig_profile_find(t, "3g.20gb", &err), XP_ENOENT);
	assert_non_null(strstr(err.text, "'3g.20gb'"));
	assert_non_null(strstr(err.text, "A100-80GB"));
	assert_non_null(strstr(err.text, "valid: 1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, "
					 "4g.40gb, 7g.80gb"));
	assert_int_equal(xp_mig_profile_find(t, NULL, &err), XP_ENOENT);
	assert_int_equal(xp_mig_profile_find(t, "", NULL), XP_ENOENT);
}

static void test_smallest(void **state)
{
	static const struct {
		uint32_t milli;
		uint64_t mib;
		int want;
	} cases[] = {
		{ 0, 0, XP_MIG_1G },	    { 142, 0, XP_MIG_1G },   { 143, 0, XP_MIG_2G },
		{ 285, 0, XP_MIG_2G },	    { 286, 0, XP_MIG_3G },   { 320, 0, XP_MIG_3G },
		{ 470, 0, XP_MIG_4G },	    { 571, 0, XP_MIG_4G },   { 572, 0, XP_MIG_7G },
		{ 1000, 0, XP_MIG_7G },	    { 0, 9728, XP_MIG_1G },  { 0, 9729, XP_MIG_1G_2X },
		{ 0, 19968, XP_MIG_1G_2X }, { 0, 19969, XP_MIG_3G }, { 300, 10000, XP_MIG_3G },
		{ 500, 30000, XP_MIG_4G },  { 0, 81152, XP_MIG_7G }, { 0, 81153, -1 },
	};
	const struct xp_mig_table *t = table("A100-80GB");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int k = xp_mig_smallest(t, cases[i].milli, cases[i].mib);
		if (k != cases[i].want)
			fail_msg("(%u milli, %llu MiB): kind %d, want %d", cases[i].milli,
				 (unsigned long long)cases[i].mib, k, cases[i].want);
	}
}

/* the naive reference: instances as intervals */
struct ref {
	int n;
	uint8_t kind[8], start[8];
};

static int ref_free(const struct xp_mig_table *t, const struct ref *r, int kind, unsigned start)
{
	const struct xp_mig_profile *p = &t->prof[kind];
	int valid = 0, count = 0;
	unsigned size = 0;
	for (unsigned i = 0; i < p->nplace; i++)
		if (p->place[i].start == start) {
			valid = 1;
			size = p->place[i].size;
		}
	if (!valid)
		return 0;
	for (int i = 0; i < r->n; i++) {
		unsigned s = r->start[i], e = s + t->prof[r->kind[i]].place[0].size;
		count += r->kind[i] == kind;
		if (start < e && s < start + size)
			return 0;
	}
	return count < p->max_count;
}

/* the most instances of kind that fit together, by exhaustive search over
 * the subsets of its placements (taken from index `from` on) */
static unsigned ref_room_from(const struct xp_mig_table *t, struct ref *r, int kind, unsigned from)
{
	unsigned best = 0;
	for (unsigned i = from; i < t->prof[kind].nplace; i++) {
		unsigned st = t->prof[kind].place[i].start;
		if (!ref_free(t, r, kind, st))
			continue;
		r->kind[r->n] = (uint8_t)kind;
		r->start[r->n++] = (uint8_t)st;
		unsigned v = 1 + ref_room_from(t, r, kind, i + 1);
		r->n--;
		if (v > best)
			best = v;
	}
	return best;
}

static unsigned ref_room(const struct xp_mig_table *t, struct ref *r, int kind)
{
	return ref_room_from(t, r, kind, 0);
}

static void check_against_ref(const struct xp_mig_gpu *g, struct ref *r)
{
	const struct xp_mig_table *t = g->t;
	int largest = -1;
	unsigned compute = 0;
	for (int i = 0; i < r->n; i++)
		compute += t->prof[r->kind[i]].compute;
	assert_int_equal(xp_mig_free_compute(g), 7 - compute);
	for (int k = 0; k < XP_MIG_NKINDS; k++) {
		struct xp_mig_placement pl[XP_MIG_MAX_PLACEMENTS];
		size_t n = xp_mig_free_placements(g, k, pl), m = 0;
		for (unsigned i = 0; i < t->prof[k].nplace; i++)
			if (ref_free(t, r, k, t->prof[k].place[i].start)) {
				assert_true(m < n);
				assert_int_equal(pl[m++].start, t->prof[k].place[i].start);
			}
		assert_int_equal(n, m);
		assert_int_equal(xp_mig_room(g, k), ref_room(t, r, k));
		if (m && (largest < 0 || t->prof[k].compute > t->prof[largest].compute ||
			  (t->prof[k].compute == t->prof[largest].compute &&
			   t->prof[k].mem_mib > t->prof[largest].mem_mib)))
			largest = k;
	}
	assert_int_equal(xp_mig_largest(g), largest);
}

/* thousands of random place/remove sequences against the reference */
static void test_lattice_random(void **state)
{
	struct xp_rng rng;
	xp_rng_seed(&rng, 21);
	for (int seq = 0; seq < 2000; seq++) {
		const struct xp_mig_table *t = xp_mig_table_at(seq % xp_mig_ntables());
		struct xp_mig_gpu g;
		struct ref r = { 0 };
		xp_mig_gpu_init(&g, t);
		for (int op = 0; op < 24; op++) {
			struct xp_err err = { 0 };
			if (r.n && xp_rng_below(&rng, 3) == 0) {
				int i = (int)xp_rng_below(&rng, (uint64_t)r.n);
				assert_int_equal(xp_mig_remove(&g, r.start[i], &err), 0);
				r.kind[i] = r.kind[r.n - 1];
				r.start[i] = r.start[--r.n];
			} else if (xp_rng_below(&rng, 8) == 0) {
				unsigned st = (unsigned)xp_rng_below(&rng, 8);
				int has = 0;
				for (int i = 0; i < r.n; i++)
					has |= r.start[i] == st;
				assert_int_equal(xp_mig_remove(&g, st, &err) == 0, has);
				for (int i = 0; has && i < r.n; i++)
					if (r.start[i] == st) {
						r.kind[i] = r.kind[r.n - 1];
						r.start[i] = r.start[--r.n];
						break;
					}
			} else {
				int k = (int)xp_rng_below(&rng, XP_MIG_NKINDS);
				unsigned st = (unsigned)xp_rng_below(&rng, 8);
				int ok = ref_free(t, &r, k, st);
				assert_int_equal(xp_mig_can_place(&g, k, st), ok);
				assert_int_equal(xp_mig_place(&g, k, st, &err), ok ? 0 : XP_ENOSPC);
				if (ok) {
					r.kind[r.n] = (uint8_t)k;
					r.start[r.n++] = (uint8_t)st;
				}
			}
			check_against_ref(&g, &r);
		}
	}
}

static void test_layouts(void **state)
{
	struct xp_mig_gpu g;
	struct xp_err err = { 0 };
	for (size_t i = 0; i < xp_mig_ntables(); i++) {
		xp_mig_gpu_init(&g, xp_mig_table_at(i));
		assert_int_equal(xp_mig_layout(&g, "all-balanced", &err), 0);
		assert_int_equal(g.n, 4);
		assert_int_equal(xp_mig_free_compute(&g), 0);
		assert_int_equal(xp_mig_largest(&g), -1);
		assert_int_equal(xp_mig_layout(&g, "all-1g", &err), 0);
		assert_int_equal(g.n, 7);
		assert_int_equal(xp_mig_largest(&g), -1);
		assert_int_equal(xp_mig_layout(&g, "all-7g", &err), 0);
		assert_int_equal(g.n, 1);
		assert_int_equal(g.inst[0].kind, XP_MIG_7G);
	}
	assert_int_equal(xp_mig_layout(&g, "all-2g", &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "all-balanced, all-1g, all-7g"));
	assert_int_equal(xp_mig_remove(&g, 3, &err), XP_ENOENT);
}

static void test_policy_choices(void **state)
{
	const struct xp_mig_table *t = table("A100-80GB");
	struct xp_mig_gpu g[2];
	struct xp_mig_pick p;
	xp_mig_gpu_init(&g[0], t);
	xp_mig_gpu_init(&g[1], t);
	/* empty GPUs: first-fit takes start 0; xpool keeps the 4g (3g at 4) and
	 * puts a 1g at 6, where it breaks the fewest placements */
	assert_int_equal(xp_mig_choose(XP_MIG_FIRST_FIT, g, 2, 320, 0, NULL, &p), 0);
	assert_true(p.gpu == 0 && p.kind == XP_MIG_3G && p.start == 0);
	assert_int_equal(xp_mig_choose(XP_MIG_XPOOL, g, 2, 320, 0, NULL, &p), 0);
	assert_true(p.gpu == 0 && p.kind == XP_MIG_3G && p.start == 4);
	assert_int_equal(xp_mig_choose(XP_MIG_XPOOL, g, 2, 100, 0, NULL, &p), 0);
	assert_true(p.gpu == 0 && p.kind == XP_MIG_1G && p.start == 6);
	/* GPU 1 in use: best-fit and xpool go there, first-fit stays on 0 */
	assert_int_equal(xp_mig_place(&g[1], XP_MIG_2G, 0, NULL), 0);
	assert_int_equal(xp_mig_choose(XP_MIG_BEST_FIT, g, 2, 100, 0, NULL, &p), 0);
	assert_int_equal(p.gpu, 1);
	assert_int_equal(xp_mig_choose(XP_MIG_XPOOL, g, 2, 100, 0, NULL, &p), 0);
	assert_int_equal(p.gpu, 1);
	assert_int_equal(xp_mig_choose(XP_MIG_FIRST_FIT, g, 2, 100, 0, NULL, &p), 0);
	assert_true(p.gpu == 0 && p.start == 0);
	/* nothing fits: a 7g when both are in use */
	assert_int_equal(xp_mig_place(&g[0], XP_MIG_1G, 6, NULL), 0);
	for (int pol = 0; pol < XP_MIG_NPOLICIES; pol++)
		assert_int_equal(xp_mig_choose(pol, g, 2, 1000, 0, NULL, &p), XP_ENOSPC);
	assert_int_equal(xp_mig_policy_parse("hami-best-fit"), XP_MIG_BEST_FIT);
	assert_int_equal(xp_mig_policy_parse("best"), -1);
	assert_string_equal(xp_mig_policy_name(XP_MIG_XPOOL), "xpool");
}

/* xpool's pick has the least loss over all candidates, by enumeration */
static void test_xpool_least_loss(void **state)
{
	struct xp_rng rng;
	struct xp_mig_mix mix;
	xp_rng_seed(&rng, 7);
	for (int round = 0; round < 500; round++) {
		struct xp_mig_gpu g[4];
		for (int i = 0; i < 4; i++) {
			xp_mig_gpu_init(&g[i], xp_mig_table_at((size_t)(i % 4)));
			for (int j = 0; j < 6; j++)
				xp_mig_place(&g[i], (int)xp_rng_below(&rng, XP_MIG_NKINDS),
					     (unsigned)xp_rng_below(&rng, 8), NULL);
		}
		for (int t = 0; t < XP_MIG_MIX_TABLES; t++)
			for (int k = 0; k < XP_MIG_NKINDS; k++)
				mix.w[t][k] = (double)xp_rng_below(&rng, 10);
		uint32_t milli = (uint32_t)xp_rng_below(&rng, 1001);
		struct xp_mig_pick p;
		double best = 1e300;
		for (int i = 0; i < 4; i++) {
			const double *w = mix.w[xp_mig_table_index(g[i].t)];
			int k = xp_mig_smallest(g[i].t, milli, 0);
			for (unsigned s = 0; s < 8; s++) {
				struct xp_mig_gpu a = g[i];
				if (xp_mig_place(&a, k, s, NULL) < 0)
					continue;
				double loss = xp_mig_potential(&g[i], w) - xp_mig_potential(&a, w);
				best = loss < best ? loss : best;
			}
		}
		int rc = xp_mig_choose(XP_MIG_XPOOL, g, 4, milli, 0, &mix, &p);
		if (best == 1e300) {
			assert_int_equal(rc, XP_ENOSPC);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_true(p.loss <= best + 1e-9 && p.loss >= best - 1e-9);
		assert_true(xp_mig_can_place(&g[p.gpu], p.kind, p.start));
	}
}

static void opts(struct xp_migsim_opts *o, uint32_t gpus)
{
	xp_migsim_defaults(o);
	o->nodes = 1;
	o->gpus_per_node = gpus;
	o->models[0] = table("A100-80GB");
	o->nmodels = 1;
	o->timeout_s = 50;
}

static struct xp_migsim_result run(const struct xp_migsim_stream *s, const struct xp_migsim_opts *o,
				   int mode)
{
	struct xp_migsim_result r;
	struct xp_err err = { 0 };
	if (xp_migsim_run(s, o, mode, &r, &err) < 0)
		fail_msg("%s", err.text);
	assert_int_equal(r.admitted + r.waiting + r.rejected, s->n);
	if (mode <= XP_MIGSIM_STATIC_7G)
		assert_int_equal(r.creations + r.destructions, 0);
	assert_true(r.destructions <= r.creations);
	xp_migsim_result_free(&r);
	return r;
}

/* hand-computed runs: all-7g holds one job per GPU; dynamic packs 3g x 2 */
static void test_sim_small(void **state)
{
	struct xp_migsim_req req[11];
	struct xp_migsim_stream s = { "test", req, 11, 0 };
	struct xp_migsim_opts o;
	opts(&o, 2);
	for (int i = 0; i < 10; i++)
		req[i] = (struct xp_migsim_req){ 0, 100, 320, 0, (uint64_t)i };
	req[10] = (struct xp_migsim_req){ 200, 10, 100, 0, 10 };
	struct xp_migsim_result r = run(&s, &o, XP_MIGSIM_STATIC_7G);
	assert_int_equal(r.admitted, 3); /* 2 at t=0, the last at 200 */
	assert_int_equal(r.rejected, 8); /* waited past 50 s */
	r = run(&s, &o, XP_MIGSIM_XPOOL);
	assert_int_equal(r.admitted, 5); /* 2 x 3g per GPU */
	assert_int_equal(r.creations, 5);
	assert_int_equal(r.destructions, 4);
	r = run(&s, &o, XP_MIGSIM_STATIC_1G);
	assert_int_equal(r.admitted, 1);
	/* warm: the second 3g reuses the first's instance */
	req[0] = (struct xp_migsim_req){ 0, 10, 320, 0, 0 };
	req[1] = (struct xp_migsim_req){ 20, 10, 320, 0, 1 };
	s.n = 2;
	o.warm_s = 100;
	r = run(&s, &o, XP_MIGSIM_FIRST_FIT);
	assert_int_equal(r.creations, 1);
	assert_int_equal(r.destructions, 0);
	o.warm_s = 0;
	r = run(&s, &o, XP_MIGSIM_FIRST_FIT);
	assert_int_equal(r.creations, 2);
	assert_int_equal(r.destructions, 1);
	/* an 85 GB request fits no profile of an 80 GB GPU */
	req[1].mem_mib = 85 * 1024;
	r = run(&s, &o, XP_MIGSIM_XPOOL);
	assert_int_equal(r.unfit, 1);
}

/* random streams: conservation in every mode; all-7g never holds more
 * jobs than GPUs when every job outlives the run */
static void test_sim_random(void **state)
{
	struct xp_rng rng;
	struct xp_migsim_req req[300];
	struct xp_migsim_stream s = { "random", req, 0, 0 };
	struct xp_migsim_opts o;
	xp_rng_seed(&rng, 5);
	for (int round = 0; round < 40; round++) {
		opts(&o, 1 + (uint32_t)xp_rng_below(&rng, 6));
		o.warm_s = round % 2 ? 30 : 0;
		o.timeout_s = (int64_t)xp_rng_below(&rng, 100);
		s.n = 50 + xp_rng_below(&rng, 250);
		int longjobs = round % 4 == 0;
		for (size_t i = 0; i < s.n; i++)
			req[i] = (struct xp_migsim_req){
				(int64_t)xp_rng_below(&rng, 1000),
				longjobs ? 100000 : 1 + (int64_t)xp_rng_below(&rng, 300),
				(uint32_t)xp_rng_below(&rng, 1001),
				xp_rng_below(&rng, 4) ? 0 : xp_rng_below(&rng, 90000), 0
			};
		xp_migsim_arrange(&s, (uint64_t)round, round % 3 == 0);
		for (int m = 0; m < XP_MIGSIM_NMODES; m++) {
			struct xp_migsim_result r = run(&s, &o, m);
			if (longjobs && m == XP_MIGSIM_STATIC_7G)
				assert_true(r.admitted <= o.gpus_per_node);
			if (longjobs && m >= XP_MIGSIM_FIRST_FIT)
				assert_true(r.admitted <= 7 * o.gpus_per_node);
			assert_true(r.largest_mean >= 0 && r.largest_mean <= 7);
		}
	}
}

/* the real traces: the stream's facts and conservation */
static void test_sim_traces(void **state)
{
	const char *openb = xp_test_shared("traces/openb/openb_pod_list_default.csv");
	const char *genai = xp_test_shared("traces/genai2026/pod_gpu_memory_used_bytes_anon.csv");
	struct xp_migsim_stream s;
	struct xp_migsim_opts o;
	struct xp_err err = { 0 };
	if (!openb || !genai)
		xp_skip();
	xp_migsim_defaults(&o);
	assert_int_equal(xp_migsim_load_openb(openb, &s, &err), 0);
	assert_int_equal(s.n, 6989); /* one-GPU pods */
	assert_int_equal(s.skipped, 1163);
	xp_migsim_arrange(&s, 1, 0);
	for (int m = 0; m < XP_MIGSIM_NMODES; m++)
		assert_int_equal(run(&s, &o, m).unfit, 0);
	xp_migsim_stream_free(&s);
	char dir[1024];
	snprintf(dir, sizeof(dir), "%s", genai);
	*strrchr(dir, '/') = 0;
	assert_int_equal(xp_migsim_load_genai(dir, 1.0, &s, &err), 0);
	assert_int_equal(s.n, 144);
	xp_migsim_arrange(&s, 1, 0);
	run(&s, &o, XP_MIGSIM_XPOOL);
	xp_migsim_stream_free(&s);
	assert_int_equal(xp_migsim_load_genai("/nonexistent", 1.0, &s, &err), XP_ENOENT);
	assert_non_null(strstr(err.text, "/nonexistent/pod_gpu_memory_used_bytes_anon.csv"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a100_40gb_table),
		cmocka_unit_test(test_ids_and_counts),
		cmocka_unit_test(test_h200),
		cmocka_unit_test(test_table_find),
		cmocka_unit_test(test_profile_find),
		cmocka_unit_test(test_smallest),
		cmocka_unit_test(test_lattice_random),
		cmocka_unit_test(test_layouts),
		cmocka_unit_test(test_policy_choices),
		cmocka_unit_test(test_xpool_least_loss),
		cmocka_unit_test(test_sim_small),
		cmocka_unit_test(test_sim_random),
		cmocka_unit_test(test_sim_traces),
	};
	return xp_run_tests(tests, NULL, NULL);
}
