/*
 * backfill: reservations for blocked jobs, and the test that a later job
 * would not delay them (docs/design/tenancy.md, "Backfill").
 *
 * When a job does not fit (and may not preempt), it gets a reservation -
 * the first XP_RESV_MAX such jobs of a pass, in the pass's order, each on
 * nodes no earlier one holds (at most 2 x XP_RESV_MAX tries): the running jobs with a time limit
 * are released, tentatively, in the order they will end, until it fits; the end of the last one
 * released is its expected start T, and where it would go then is what it holds. Per reserved node
 * and device the reservation keeps its slack at T: what will be free then beyond what the job
 * needs. A later job of the pass may start now if it will end before T (its time limit says so), or
 * if where it goes leaves every slack >= 0. Jobs without a time limit never end, for this purpose;
 * a job that would not fit even once every limited job has ended gets no reservation. Reservations
 * of one pass hold disjoint nodes (at most XP_RESV_MAX), so their slacks do not count the same free
 * capacity twice. A full pass makes them afresh; a pass over new jobs only starts from a copy of
 * the last pass's (nothing was freed since, so their slack still holds): a job submitted after a
 * reservation was made cannot take its room either.
 */
#include "state_int.h"

#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

struct rnode {
	uint32_t node;
	int64_t cpu, mem;
	int32_t milli[XP_MAX_NODE_DEVS];
	int64_t dmem[XP_MAX_NODE_DEVS];
};

struct resv {
	uint64_t job;
	int64_t at;
	struct rnode *n;
	size_t nn;
};

struct xp_backfill {
	struct resv r[XP_RESV_MAX];
	size_t nr;
	uint8_t *reserved; /* per node: held by a reservation */
	size_t nnodes;
};

struct xp_backfill *xp_backfill_new(const struct xp_state *st)
{
	struct xp_backfill *b = XNEW(struct xp_backfill);
	b->nnodes = st->nodes.n;
	b->reserved = xcalloc(b->nnodes + 1, 1);
	return b;
}

struct xp_backfill *xp_backfill_clone(const struct xp_backfill *src, const struct xp_state *st)
{
	struct xp_backfill *b = xp_backfill_new(st);
	for (size_t i = 0; i < src->nr; i++) {
		const struct resv *r = &src->r[i];
		int ok = 1;
		for (size_t k = 0; k < r->nn; k++)
			ok &= r->n[k].node < b->nnodes;
		if (!ok)
			continue;
		struct resv *c = &b->r[b->nr++];
		*c = *r;
		c->n = XNEWV(struct rnode, r->nn ? r->nn : 1);
		memcpy(c->n, r->n, r->nn * sizeof(*r->n));
		for (size_t k = 0; k < r->nn; k++)
			b->reserved[r->n[k].node] = 1;
	}
	return b;
}

void xp_backfill_free(struct xp_backfill *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->nr; i++)
		free(b->r[i].n);
	free(b->reserved);
	free(b);
}

static int cmp_end(const void *a, const void *b)
{
	const struct xp_job *x = *(const struct xp_job *const *)a;
	const struct xp_job *y = *(const struct xp_job *const *)b;
	int64_t ex = x->started_at + x->spec.time_limit_ms,
		ey = y->started_at + y->spec.time_limit_ms;
	if (ex != ey)
		return ex < ey ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void commit_job(struct xp_state *st, const struct xp_job *v, int sign)
{
	for (uint32_t r = 0; r < v->spec.replicas; r++)
		if (sign > 0)
			xp_sched_commit(st->sched, &v->allocs[r]);
		else
			xp_sched_release(st->sched, &v->allocs[r]);
}

static struct rnode *rnode_of(struct resv *r, uint32_t node)
{
	for (size_t i = 0; i < r->nn; i++)
		if (r->n[i].node == node)
			return &r->n[i];
	return NULL;
}

/* take (sign 1) or give back (-1) what alloc a uses from the slacks */
static void use(const struct xp_state *st, struct rnode *x, const struct xp_alloc *a, int sign)
{
	x->cpu -= sign * (int64_t)a->cpu_milli;
	x->mem -= sign * (int64_t)a->mem_mib;
	for (uint16_t i = 0; i < a->ndev; i++) {
		uint8_t d = a->devs[i];
		int whole = a->dev_milli >= XP_MILLI;
		x->milli[d] -= sign * (whole ? XP_MILLI : a->dev_milli);
		x->dmem[d] -= sign * (int64_t)(whole ? st->c->nodes[a->node].devs[d].mem_mib
						     : a->dev_mem_mib);
	}
}

static int short_of(const struct rnode *x, const struct xp_state *st)
{
	if (x->cpu < 0 || x->mem < 0)
		return 1;
	for (uint16_t d = 0; d < st->c->nodes[x->node].ndevs; d++)
		if (x->milli[d] < 0 || x->dmem[d] < 0)
			return 1;
	return 0;
}

int xp_backfill_reserve(struct xp_state *st, struct xp_backfill *b, const struct xp_job *j,
			const struct xp_rng *rng)
{
	if (b->nr == XP_RESV_MAX || b->nnodes != st->nodes.n || !st->limited_running)
		return 0; /* full, stale, or no running job has an end to wait for */
	XP_VEC(struct xp_job *) run = { 0 };
	for (size_t i = 0; i < st->jobs.n; i++)
		if (st->jobs.v[i]->state == XP_JOB_RUNNING && st->jobs.v[i]->spec.time_limit_ms)
			xp_vec_push(&run, st->jobs.v[i]);
	if (run.n > 1)
		qsort(run.v, run.n, sizeof(*run.v), cmp_end);
	struct xp_alloc *a = XNEWV(struct xp_alloc, j->spec.replicas);
	size_t k = 0;
	int fits = 0;
	xp_backfill_exclude(st, b, 1); /* on nodes no reservation holds yet */
	uint32_t got = 0;
	while (k < run.n && !fits) {
		int64_t end = run.v[k]->started_at + run.v[k]->spec.time_limit_ms;
		while (k < run.n && run.v[k]->started_at + run.v[k]->spec.time_limit_ms == end)
			commit_job(st, run.v[k++], -1); /* everything that ends then */
		struct xp_rng r2 = *rng;
		fits = xp_place_gang(st, j, &r2, a, &got) == 0;
		xp_unplace(st, a, got);
	}
	int made = 0;
	if (fits) {
		struct resv *r = &b->r[b->nr];
		memset(r, 0, sizeof(*r));
		r->job = j->id;
		r->at = run.v[k - 1]->started_at + run.v[k - 1]->spec.time_limit_ms;
		r->n = XNEWV(struct rnode, j->spec.replicas);
		int overlap = 0;
		for (uint32_t i = 0; i < j->spec.replicas; i++) {
			uint32_t n = a[i].node;
			overlap |= b->reserved[n];
			struct rnode *x = rnode_of(r, n);
			if (!x) { /* what will be free at T: the scheduler's view now */
				x = &r->n[r->nn++];
				memset(x, 0, sizeof(*x));
				x->node = n;
				x->cpu = xp_sched_node_cpu_left(st->sched, n);
				x->mem = xp_sched_node_mem_free(st->sched, n);
				for (uint16_t d = 0; d < st->c->nodes[n].ndevs; d++) {
					x->milli[d] = xp_sched_dev_free_milli(st->sched, n, d);
					x->dmem[d] =
						(int64_t)xp_sched_dev_free_mem(st->sched, n, d);
				}
			}
			use(st, x, &a[i], 1);
		}
		if (overlap) {
			free(r->n);
		} else {
			for (size_t i = 0; i < r->nn; i++)
				b->reserved[r->n[i].node] = 1;
			b->nr++;
			made = 1;
		}
	}
	while (k-- > 0)
		commit_job(st, run.v[k], 1);
	xp_backfill_exclude(st, b, 0);
	xp_vec_free(&run);
	free(a);
	return made;
}

/* take (sign 1) or give back (-1) k's allocations from reservation r */
static int take(const struct xp_state *st, struct resv *r, const struct xp_job *k,
		const struct xp_alloc *a, int sign)
{
	int bad = 0;
	for (uint32_t i = 0; i < k->spec.replicas; i++) {
		struct rnode *x = rnode_of(r, a[i].node);
		if (x) {
			use(st, x, &a[i], sign);
			bad |= short_of(x, st);
		}
	}
	return bad;
}

int xp_backfill_allows(const struct xp_state *st, struct xp_backfill *b, const struct xp_job *k,
		       const struct xp_alloc *a, int64_t now, uint64_t *blocks)
{
	int touches = 0;
	for (uint32_t i = 0; i < k->spec.replicas; i++)
		touches |= a[i].node < b->nnodes && b->reserved[a[i].node];
	if (!touches)
		return 1;
	size_t ri;
	for (ri = 0; ri < b->nr; ri++) {
		struct resv *r = &b->r[ri];
		if (k->spec.time_limit_ms && now + k->spec.time_limit_ms <= r->at)
			continue; /* it ends before the reservation begins */
		if (take(st, r, k, a, 1))
			break;
	}
	if (ri == b->nr)
		return 1;
	*blocks = b->r[ri].job;
	for (size_t i = 0; i <= ri; i++) { /* give back what was taken, refuse */
		struct resv *r = &b->r[i];
		if (!(k->spec.time_limit_ms && now + k->spec.time_limit_ms <= r->at))
			take(st, r, k, a, -1);
	}
	return 0;
}

int xp_backfill_holds(const struct xp_backfill *b, uint64_t job, int64_t *at)
{
	for (size_t i = 0; b && i < b->nr; i++)
		if (b->r[i].job == job) {
			*at = b->r[i].at;
			return 1;
		}
	return 0;
}

void xp_backfill_exclude(struct xp_state *st, const struct xp_backfill *b, int out)
{
	for (size_t i = 0; i < b->nr; i++)
		for (size_t k = 0; k < b->r[i].nn; k++) {
			uint32_t n = b->r[i].n[k].node;
			/* a node cordoned or lost since the reservation stays out */
			if (st->nodes.v[n].state == XP_NODE_READY && !st->nodes.v[n].removed)
				xp_sched_set_node_up(st->sched, n, !out);
		}
}

int xp_backfill_active(const struct xp_backfill *b)
{
	return b->nr != 0;
}
