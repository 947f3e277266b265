/*
 * mig: one run of `xpool sim mig` (mig.h) - a discrete-event loop over
 * arrivals, job ends and warm-instance expiries, with the GPUs' slice
 * lattices from core/model/mig.h and the dynamic policies of
 * core/sched/mig_place.h.
 *
 * Bookkeeping per GPU and memory-slice start: the request running in the
 * instance that starts there (-1: none, or an idle warm instance). Events
 * go through one heap: a job's end (job = request index) or a warm
 * instance's expiry (job = WARM | gpu x 8 + start, attempt = the
 * instance's generation, so an expiry of an instance reused or destroyed
 * since is stale). Between events the idle compute slices and each GPU's
 * largest obtainable profile are integrated over time.
 *
 * The queue scan remembers the request sizes that failed during one scan
 * (nothing frees within a scan), so a long queue of one size costs one
 * placement attempt per event.
 */
#include "mig.h"

#include <stdlib.h>
#include <string.h>

#include "../core/sched/mig_place.h"
#include "../lib/dueheap.h"
#include "../lib/vec.h"
#include "../lib/xalloc.h"

#define WARM	  (1ull << 63)
#define MAXFAILED 64

static const char *const mode_names[XP_MIGSIM_NMODES] = {
	"static-all-balanced", "static-all-1g", "static-all-7g",
	"first-fit",	       "hami-best-fit", "xpool",
};

const char *xp_migsim_mode_name(int mode)
{
	return mode >= 0 && mode < XP_MIGSIM_NMODES ? mode_names[mode] : "?";
}

int xp_migsim_mode_parse(const char *s)
{
	for (int i = 0; s && i < XP_MIGSIM_NMODES; i++)
		if (!strcmp(s, mode_names[i]))
			return i;
	return -1;
}

void xp_migsim_defaults(struct xp_migsim_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->nodes = 4;
	o->gpus_per_node = 8;
	o->models[0] = xp_mig_table_find("A100-80GB");
	o->models[1] = xp_mig_table_find("H100-80GB");
	o->nmodels = 2;
	o->timeout_s = 3600;
	o->warm_s = 0;
	o->bucket_s = 3600;
}

struct run {
	const struct xp_migsim_stream *s;
	const struct xp_migsim_opts *o;
	struct xp_migsim_result *r;
	int mode, policy; /* policy: -1 for a static layout */
	struct xp_mig_gpu *g;
	size_t ng;
	int64_t (*job)[XP_MIG_MEM_SLICES]; /* request in the instance at start, -1 none */
	uint32_t (*gen)[XP_MIG_MEM_SLICES];
	uint8_t *largest; /* per GPU, compute slices */
	uint32_t *where;  /* per request: gpu x 8 + start */
	uint32_t busy;	  /* compute slices held by jobs */
	uint32_t idle_insts;
	double largest_sum;
	struct xp_dueheap ev;
	XP_VEC(uint32_t) queue;
	struct xp_mig_mix mix;
	int64_t now, t0;
};

/* the largest profile a request could get on GPU i now: a new instance
 * (dynamic modes) or a free existing one */
static unsigned gpu_largest(const struct run *u, size_t i)
{
	const struct xp_mig_gpu *g = &u->g[i];
	unsigned best = 0;
	if (u->policy >= 0) {
		int k = xp_mig_largest(g);
		best = k < 0 ? 0 : g->t->prof[k].compute;
	}
	for (unsigned j = 0; j < g->n; j++)
		if (u->job[i][g->inst[j].start] < 0 && g->t->prof[g->inst[j].kind].compute > best)
			best = g->t->prof[g->inst[j].kind].compute;
	return best;
}

static void refresh(struct run *u, size_t i)
{
	unsigned l = gpu_largest(u, i);
	u->largest_sum += (double)l - u->largest[i];
	u->largest[i] = (uint8_t)l;
}

/* integrate the idle slices and the largest profile up to t */
static void advance(struct run *u, int64_t t)
{
	struct xp_migsim_result *r = u->r;
	double total = (double)u->ng * XP_MIG_COMPUTE_SLICES;
	while (u->now < t) {
		size_t b = (size_t)((u->now - u->t0) / u->o->bucket_s);
		int64_t end = u->t0 + (int64_t)(b + 1) * u->o->bucket_s;
		if (end > t)
			end = t;
		double h = (double)(end - u->now) / 3600;
		r->slice_hours += total * h;
		r->idle_slice_hours += (total - u->busy) * h;
		if (b < r->nbuckets)
			r->largest[b] += u->largest_sum / (double)u->ng * (double)(end - u->now);
		r->largest_mean += u->largest_sum / (double)u->ng * (double)(end - u->now);
		u->now = end;
	}
}

static void start_job(struct run *u, uint32_t req, size_t gi, unsigned start)
{
	const struct xp_mig_gpu *g = &u->g[gi];
	int j = xp_mig_find_inst(g, start);
	u->job[gi][start] = req;
	u->gen[gi][start]++;
	u->busy += g->t->prof[g->inst[j].kind].compute;
	u->where[req] = (uint32_t)(gi * XP_MIG_MEM_SLICES + start);
	u->r->admitted++;
	xp_due_push(&u->ev, (struct xp_due){ u->now + u->s->r[req].dur, req, 0 });
	refresh(u, gi);
}

static void destroy(struct run *u, size_t gi, unsigned start)
{
	xp_mig_remove(&u->g[gi], start, NULL);
	u->gen[gi][start]++;
	u->r->destructions++;
}

/* a free existing instance for req: of exactly kind[table] (dynamic, a
 * warm one) or the smallest that fits (static); 0 and *gi, *start */
static int free_instance(const struct run *u, const struct xp_migsim_req *q, size_t *gi,
			 unsigned *start)
{
	int found = 0;
	uint32_t bc = 0, bm = 0;
	for (size_t i = 0; i < u->ng; i++) {
		const struct xp_mig_gpu *g = &u->g[i];
		int want = xp_mig_smallest(g->t, q->milli, q->mem_mib);
		for (unsigned j = 0; want >= 0 && j < g->n; j++) {
			const struct xp_mig_profile *p = &g->t->prof[g->inst[j].kind];
			if (u->job[i][g->inst[j].start] >= 0 ||
			    p->compute < g->t->prof[want].compute || p->mem_mib < q->mem_mib ||
			    (u->policy >= 0 && g->inst[j].kind != want))
				continue;
			if (!found || p->compute < bc || (p->compute == bc && p->mem_mib < bm) ||
			    (p->compute == bc && p->mem_mib == bm && i == *gi &&
			     g->inst[j].start < *start)) {
				*gi = i;
				*start = g->inst[j].start;
				bc = p->compute;
				bm = p->mem_mib;
				found = 1;
			}
		}
	}
	return found ? 0 : -1;
}

/* with idle warm instances in the way: choose on the GPUs without them,
 * then destroy those the chosen placement overlaps */
static int reclaim(struct run *u, const struct xp_migsim_req *q, struct xp_mig_pick *p)
{
	struct xp_mig_gpu *bare = xmalloc(u->ng * sizeof(*bare));
	memcpy(bare, u->g, u->ng * sizeof(*bare));
	for (size_t i = 0; i < u->ng; i++)
		for (unsigned j = u->g[i].n; j-- > 0;)
			if (u->job[i][u->g[i].inst[j].start] < 0)
				xp_mig_remove(&bare[i], u->g[i].inst[j].start, NULL);
	int rc = xp_mig_choose(u->policy, bare, u->ng, q->milli, q->mem_mib, &u->mix, p);
	free(bare);
	if (rc < 0)
		return rc;
	struct xp_mig_gpu *g = &u->g[p->gpu];
	unsigned size = g->t->prof[p->kind].place[0].size;
	uint8_t span = (uint8_t)(((1u << size) - 1) << p->start);
	for (unsigned j = g->n; j-- > 0;) {
		const struct xp_mig_inst *in = &g->inst[j];
		uint8_t m =
			(uint8_t)(((1u << g->t->prof[in->kind].place[0].size) - 1) << in->start);
		if (m & span) {
			u->idle_insts--;
			destroy(u, p->gpu, in->start);
		}
	}
	return 0;
}

/* try to start request req now; 0 when it started */
static int try_place(struct run *u, uint32_t req)
{
	const struct xp_migsim_req *q = &u->s->r[req];
	struct xp_mig_pick p;
	size_t gi = 0;
	unsigned start = 0;
	if (free_instance(u, q, &gi, &start) == 0) {
		u->idle_insts -= u->policy >= 0;
		start_job(u, req, gi, start);
		return 0;
	}
	if (u->policy < 0)
		return -1;
	if (xp_mig_choose(u->policy, u->g, u->ng, q->milli, q->mem_mib, &u->mix, &p) < 0 &&
	    (!u->idle_insts || reclaim(u, q, &p) < 0))
		return -1;
	if (xp_mig_place(&u->g[p.gpu], p.kind, p.start, NULL) < 0)
		return -1; /* not reached: the pick was free */
	u->r->creations++;
	start_job(u, req, p.gpu, p.start);
	return 0;
}

static void job_end(struct run *u, uint32_t req)
{
	size_t gi = u->where[req] / XP_MIG_MEM_SLICES;
	unsigned start = u->where[req] % XP_MIG_MEM_SLICES;
	struct xp_mig_gpu *g = &u->g[gi];
	u->busy -= g->t->prof[g->inst[xp_mig_find_inst(g, start)].kind].compute;
	u->job[gi][start] = -1;
	u->gen[gi][start]++;
	if (u->policy >= 0 && u->o->warm_s <= 0) {
		destroy(u, gi, start);
	} else if (u->policy >= 0) {
		u->idle_insts++;
		xp_due_push(&u->ev, (struct xp_due){ u->now + u->o->warm_s,
						     WARM | (gi * XP_MIG_MEM_SLICES + start),
						     u->gen[gi][start] });
	}
	refresh(u, gi);
}

static void warm_end(struct run *u, struct xp_due e)
{
	size_t gi = (size_t)((e.job & ~WARM) / XP_MIG_MEM_SLICES);
	unsigned start = (unsigned)((e.job & ~WARM) % XP_MIG_MEM_SLICES);
	if (u->gen[gi][start] != e.attempt || u->job[gi][start] >= 0 ||
	    xp_mig_find_inst(&u->g[gi], start) < 0)
		return; /* reused or destroyed since */
	u->idle_insts--;
	destroy(u, gi, start);
	refresh(u, gi);
}

/* an arrival: count it in the mix; unfit when no model has a profile */
static void arrive(struct run *u, uint32_t req)
{
	const struct xp_migsim_req *q = &u->s->r[req];
	int fits = 0;
	for (size_t m = 0; m < u->o->nmodels; m++) {
		int k = xp_mig_smallest(u->o->models[m], q->milli, q->mem_mib);
		if (k >= 0) {
			u->mix.w[xp_mig_table_index(u->o->models[m])][k] += 1;
			fits = 1;
		}
	}
	if (!fits) {
		u->r->unfit++;
		u->r->rejected++;
		return;
	}
	xp_vec_push(&u->queue, req);
}

/* drop timed-out requests, then start what fits, in queue order */
static void scan(struct run *u)
{
	struct {
		uint32_t milli;
		uint64_t mem;
	} failed[MAXFAILED];
	size_t nf = 0, keep = 0;
	for (size_t i = 0; i < u->queue.n; i++) {
		uint32_t req = u->queue.v[i];
		const struct xp_migsim_req *q = &u->s->r[req];
		size_t f = 0;
		if (q->t + u->o->timeout_s < u->now) {
			int k = xp_mig_smallest(u->o->models[0], q->milli, q->mem_mib);
			u->r->rejected++;
			u->r->rejected_by[k < 0 ? 0 : u->o->models[0]->prof[k].compute]++;
			continue;
		}
		while (f < nf && (failed[f].milli != q->milli || failed[f].mem != q->mem_mib))
			f++;
		if (f == nf && try_place(u, req) == 0)
			continue;
		if (f == nf && nf < MAXFAILED) {
			failed[nf].milli = q->milli;
			failed[nf++].mem = q->mem_mib;
		}
		u->queue.v[keep++] = req;
	}
	u->queue.n = keep;
}

static void setup(struct run *u, struct xp_migsim_result *r)
{
	const struct xp_migsim_opts *o = u->o;
	u->ng = (size_t)o->nodes * o->gpus_per_node;
	u->g = xcalloc(u->ng + 1, sizeof(*u->g));
	u->job = xcalloc(u->ng + 1, sizeof(*u->job));
	u->gen = xcalloc(u->ng + 1, sizeof(*u->gen));
	u->largest = xcalloc(u->ng + 1, 1);
	u->where = xcalloc(u->s->n + 1, sizeof(*u->where));
	memset(u->job, 0xff, (u->ng + 1) * sizeof(*u->job));
	for (size_t i = 0; i < u->ng; i++) {
		xp_mig_gpu_init(&u->g[i], o->models[(i / o->gpus_per_node) % o->nmodels]);
		if (u->mode == XP_MIGSIM_STATIC_BALANCED)
			xp_mig_layout(&u->g[i], "all-balanced", NULL);
		else if (u->mode == XP_MIGSIM_STATIC_1G)
			xp_mig_layout(&u->g[i], "all-1g", NULL);
		else if (u->mode == XP_MIGSIM_STATIC_7G)
			xp_mig_layout(&u->g[i], "all-7g", NULL);
		refresh(u, i);
	}
	for (size_t t = 0; t < XP_MIG_MIX_TABLES; t++)
		for (int k = 0; k < XP_MIG_NKINDS; k++)
			u->mix.w[t][k] = k != XP_MIG_1G_ME; /* a prior of one request per kind */
	u->t0 = u->now = u->s->r[0].t;
	r->requests = (uint32_t)u->s->n;
	r->hours = (double)(u->s->r[u->s->n - 1].t - u->t0) / 3600;
	r->nbuckets = (size_t)((u->s->r[u->s->n - 1].t - u->t0) / o->bucket_s) + 1;
	r->largest = xcalloc(r->nbuckets, sizeof(double));
}

static void finish(struct run *u, struct xp_migsim_result *r)
{
	int64_t span = u->now - u->t0;
	for (size_t b = 0; b < r->nbuckets; b++) {
		int64_t len =
			b + 1 < r->nbuckets ? u->o->bucket_s : span - (int64_t)b * u->o->bucket_s;
		r->largest[b] =
			len > 0 ? r->largest[b] / (double)len : u->largest_sum / (double)u->ng;
	}
	r->largest_mean =
		span > 0 ? r->largest_mean / (double)span : u->largest_sum / (double)u->ng;
	r->waiting = (uint32_t)u->queue.n;
	free(u->g);
	free(u->job);
	free(u->gen);
	free(u->largest);
	free(u->where);
	xp_due_free(&u->ev);
	xp_vec_free(&u->queue);
}

int xp_migsim_run(const struct xp_migsim_stream *s, const struct xp_migsim_opts *o, int mode,
		  struct xp_migsim_result *r, struct xp_err *err)
{
	static const int policy_of[XP_MIGSIM_NMODES] = {
		-1, -1, -1, XP_MIG_FIRST_FIT, XP_MIG_BEST_FIT, XP_MIG_XPOOL
	};
	struct run u = { s, o, r, mode, 0 };
	memset(r, 0, sizeof(*r));
	if (mode < 0 || mode >= XP_MIGSIM_NMODES)
		return xp_errf(err, XP_EINVAL, "unknown mode %d", mode);
	if (!s->n || !o->nodes || !o->gpus_per_node || !o->nmodels || o->bucket_s <= 0)
		return xp_errf(err, XP_EINVAL, "an empty stream or cluster");
	u.policy = policy_of[mode];
	setup(&u, r);
	size_t i = 0;
	int64_t horizon = s->r[s->n - 1].t;
	for (;;) {
		int64_t next = i < s->n ? s->r[i].t : INT64_MAX;
		if (u.ev.h.n && u.ev.h.v[0].due < next)
			next = u.ev.h.v[0].due;
		if (next > horizon)
			break;
		advance(&u, next);
		while (xp_due_ready(&u.ev, next)) {
			struct xp_due e = xp_due_pop(&u.ev);
			if (e.job & WARM)
				warm_end(&u, e);
			else
				job_end(&u, (uint32_t)e.job);
		}
		while (i < s->n && s->r[i].t == next)
			arrive(&u, (uint32_t)i++);
		scan(&u);
	}
	finish(&u, r);
	return 0;
}

void xp_migsim_result_free(struct xp_migsim_result *r)
{
	free(r->largest);
	r->largest = NULL;
}
