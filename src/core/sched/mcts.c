/*
 * mcts: batch planning (xp_sched_plan_batch, sched.h) and the batch
 * optimiser of the mcts policy: UCT over the orders and placements of the
 * next K pending requests (issue 24).
 *
 * Two phases. The coarse phase is the score index: for a request it names
 * the best few nodes (xp_index_top, cands of them) in the order the greedy
 * policy would take them. The fine phase is a tree search. A tree node is
 * the state after some requests were placed; its children are "place
 * request j next on its c-th candidate node", one per distinct remaining
 * shape (identical requests are interchangeable, the earliest stands for
 * them) and candidate, ordered largest GPU demand first and candidate 0
 * before candidate 1. An iteration descends by UCT, expands one unvisited
 * child, finishes the batch with a rollout (greedy picks of the fast core,
 * requests largest first), scores the result, backs the score up and
 * undoes every commit. The state is the real scheduler's: each step is a
 * commit, each undo a release, so the rollouts use the policy's own scores
 * through the index.
 *
 * Reward of a complete plan, in milli: the device milli it places minus
 * the growth of the policy's measure (policy.h measure()) summed over the
 * nodes it touched. Placed milli is what the OpenB figures count; the
 * measure says what the plan costs the requests still to come.
 *
 * The budget counts rollouts. Rollout 0 is the greedy plan itself
 * (arrival order, nothing searched), and the plan returned is the best
 * complete plan any rollout produced (ties: the earliest), so with budget
 * 1 the result is greedy and with more it is never worse by the reward.
 * No clock and no draw beyond what the policy's own pick makes: the search
 * is deterministic.
 */
#define _GNU_SOURCE
#include "sched_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"

struct tnode {
	uint32_t child0; /* first child in the node array */
	uint16_t nchild; /* 0 with expanded = 1: nothing more fits */
	uint8_t expanded;
	uint8_t cand; /* action that leads here: request job on candidate cand */
	uint16_t job;
	uint32_t visits;
	double sum; /* of raw rewards */
};

struct search {
	struct xp_sched *s;
	const struct xp_request *r;
	size_t n;
	struct xp_batch_opts *o;
	struct xp_rng *rng;
	uint32_t cands;
	uint16_t by_size[XP_BATCH_MAX]; /* requests, largest device demand first */
	struct tnode *t;
	size_t nt, capt;
	/* the plan being built by this iteration */
	struct xp_alloc traj[XP_BATCH_MAX];
	uint16_t tjob[XP_BATCH_MAX];
	size_t ntraj;
	uint64_t done; /* bit j: request j placed or given up this iteration */
	uint64_t placed_milli;
	uint32_t *stamp, gen, *touched;
	size_t ntouched;
	double g_before;
	/* the best complete plan so far */
	struct xp_alloc best[XP_BATCH_MAX];
	uint64_t best_placed;
	double best_r, rmin, rmax;
	int have_best;
};

static uint64_t demand(const struct xp_request *r)
{
	return (uint64_t)r->dev_count * r->dev_milli;
}

static void touch(struct search *S, uint32_t node)
{
	if (S->stamp[node] == S->gen)
		return;
	S->stamp[node] = S->gen;
	S->touched[S->ntouched++] = node;
	if (S->s->pol->measure)
		S->g_before += S->s->pol->measure(S->s, node);
}

static void commit(struct search *S, uint16_t job, const struct xp_alloc *a)
{
	touch(S, a->node);
	xp_sched_commit(S->s, a);
	S->traj[S->ntraj] = *a;
	S->tjob[S->ntraj++] = job;
	S->placed_milli += demand(&S->r[job]);
	S->o->placements++;
}

/* Greedy step for request job: the policy's own decision. */
static int greedy(struct search *S, uint16_t job)
{
	struct xp_alloc a;
	int rc = xp_sched_pick(S->s, &S->r[job], S->rng, &a);
	S->done |= 1ull << job;
	if (rc == XP_ENOSPC)
		return 0;
	if (rc < 0)
		return rc;
	commit(S, job, &a);
	return 0;
}

/* Request job on its cand-th candidate node; -1 when it has none. */
static int on_candidate(struct search *S, uint16_t job, uint32_t cand, struct xp_alloc *a)
{
	struct xp_sched *s = S->s;
	const struct xp_shape *m;
	uint32_t nodes[8];

	if (!s->idx) /* no index: only the greedy choice is known cheaply */
		return cand == 0 && xp_sched_pick(s, &S->r[job], S->rng, a) == 0 ? 0 : -1;
	if (xp_index_top(s, &S->r[job], nodes, (int)cand + 1, &m) <= (int)cand)
		return -1;
	xp_alloc_fill(a, nodes[cand], &S->r[job]);
	if (s->pol->pick)
		s->pol->pick(s, nodes[cand], m, S->rng, a);
	else
		xp_pick_default(s, nodes[cand], m, S->rng, a);
	xp_alloc_settle(s, a, &S->r[job]);
	return a->ndev == S->r[job].dev_count ? 0 : -1;
}

static double reward(struct search *S)
{
	double g_after = 0, w = S->o->weight ? S->o->weight : 1;
	if (!S->s->pol->measure || w < 0)
		return (double)S->placed_milli;
	for (size_t i = 0; i < S->ntouched; i++)
		g_after += S->s->pol->measure(S->s, S->touched[i]);
	return (double)S->placed_milli - w * (g_after - S->g_before);
}

static void undo(struct search *S)
{
	while (S->ntraj)
		xp_sched_release(S->s, &S->traj[--S->ntraj]);
	S->done = 0;
	S->placed_milli = 0;
	S->ntouched = 0;
	S->g_before = 0;
	if (++S->gen == 0) {
		memset(S->stamp, 0, S->s->nnodes * sizeof(*S->stamp));
		S->gen = 1;
	}
}

static void keep_if_best(struct search *S, double rw)
{
	if (!S->have_best || rw < S->rmin)
		S->rmin = rw;
	if (!S->have_best || rw > S->rmax)
		S->rmax = rw;
	if (S->have_best && rw <= S->best_r)
		return;
	S->have_best = 1;
	S->best_r = rw;
	S->best_placed = 0;
	for (size_t i = 0; i < S->ntraj; i++) {
		S->best[S->tjob[i]] = S->traj[i];
		S->best_placed |= 1ull << S->tjob[i];
	}
}

static uint32_t new_node(struct search *S, uint16_t job, uint8_t cand)
{
	if (S->nt == S->capt) {
		S->capt = S->capt ? 2 * S->capt : 256;
		S->t = xreallocarray(S->t, S->capt, sizeof(*S->t));
	}
	struct tnode *c = &S->t[S->nt];
	memset(c, 0, sizeof(*c));
	c->job = job;
	c->cand = cand;
	return (uint32_t)S->nt++;
}

static int same_request(const struct xp_request *a, const struct xp_request *b)
{
	return a->mem_mib == b->mem_mib && xp_request_same_shape(a, b);
}

/* Children of tree node v at the current state. */
static void expand(struct search *S, uint32_t v)
{
	uint16_t first[XP_BATCH_MAX];
	size_t nfirst = 0;
	uint32_t child0 = (uint32_t)S->nt;

	for (size_t i = 0; i < S->n; i++) {
		uint16_t j = S->by_size[i];
		size_t k;
		if (S->done >> j & 1)
			continue;
		for (k = 0; k < nfirst; k++)
			if (same_request(&S->r[first[k]], &S->r[j]))
				break;
		if (k == nfirst)
			first[nfirst++] = j;
	}
	for (uint32_t c = 0; c < S->cands; c++)
		for (size_t k = 0; k < nfirst; k++) {
			struct xp_alloc a;
			if (on_candidate(S, first[k], c, &a) == 0)
				new_node(S, first[k], (uint8_t)c);
		}
	S->t[v].child0 = child0;
	S->t[v].nchild = (uint16_t)(S->nt - child0);
	S->t[v].expanded = 1;
}

/* UCT: an unvisited child first (in prior order), else the best bound. */
static uint32_t select_child(const struct search *S, uint32_t v)
{
	const struct tnode *p = &S->t[v];
	double span = S->rmax - S->rmin, best = -INFINITY;
	double c = S->o->explore > 0 ? S->o->explore : 0.5;
	uint32_t pick = p->child0;

	for (uint32_t i = p->child0; i < p->child0 + p->nchild; i++) {
		const struct tnode *ch = &S->t[i];
		if (!ch->visits)
			return i;
		double q = span > 0 ? (ch->sum / ch->visits - S->rmin) / span : 0.5;
		double u = q + c * sqrt(log((double)p->visits) / ch->visits);
		if (u > best) {
			best = u;
			pick = i;
		}
	}
	return pick;
}

/* One iteration: descend, expand, roll out, back up, undo. */
static int iterate(struct search *S)
{
	uint32_t path[XP_BATCH_MAX + 1], v = 0;
	size_t depth = 0;
	int rc = 0;

	path[depth++] = 0;
	for (;;) {
		if (!S->t[v].expanded)
			expand(S, v);
		if (!S->t[v].nchild)
			break;
		struct xp_alloc a;
		v = select_child(S, v);
		S->done |= 1ull << S->t[v].job;
		/* the candidate existed when v was made, and picks are pure */
		if (on_candidate(S, S->t[v].job, S->t[v].cand, &a) == 0)
			commit(S, S->t[v].job, &a);
		path[depth++] = v;
		if (!S->t[v].visits)
			break; /* a new leaf: roll out from here */
	}
	for (size_t i = 0; i < S->n && rc == 0; i++)
		if (!(S->done >> S->by_size[i] & 1))
			rc = greedy(S, S->by_size[i]);
	if (rc == 0) {
		double rw = reward(S);
		keep_if_best(S, rw);
		for (size_t i = 0; i < depth; i++) {
			S->t[path[i]].visits++;
			S->t[path[i]].sum += rw;
		}
	}
	S->o->rollouts++;
	undo(S);
	return rc;
}

static int cmp_size(const void *a, const void *b, void *ctx)
{
	const struct xp_request *r = ctx;
	uint16_t x = *(const uint16_t *)a, y = *(const uint16_t *)b;
	uint64_t dx = demand(&r[x]), dy = demand(&r[y]);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	if (r[x].cpu_milli != r[y].cpu_milli)
		return r[x].cpu_milli > r[y].cpu_milli ? -1 : 1;
	return x < y ? -1 : x > y;
}

int xp_mcts_optimise(struct xp_sched *s, const struct xp_request *r, size_t n,
		     struct xp_batch_opts *o, struct xp_rng *rng, struct xp_alloc *out,
		     uint8_t *placed)
{
	struct search *S = xcalloc(1, sizeof(*S));
	int rc = 0;

	*S = (struct search){ .s = s, .r = r, .n = n, .o = o, .rng = rng, .gen = 1 };
	S->cands = o->cands ? (o->cands > 8 ? 8 : o->cands) : XP_BATCH_CANDS_DEFAULT;
	S->stamp = xcalloc(s->nnodes ? s->nnodes : 1, sizeof(*S->stamp));
	S->touched = XNEWV(uint32_t, XP_BATCH_MAX);
	for (size_t i = 0; i < n; i++)
		S->by_size[i] = (uint16_t)i;
	qsort_r(S->by_size, n, sizeof(S->by_size[0]), cmp_size, (void *)r);
	new_node(S, 0, 0); /* the root */
	/* rollout 0: the greedy plan, arrival order */
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = greedy(S, (uint16_t)i);
	if (rc == 0) {
		double rw = reward(S);
		keep_if_best(S, rw);
		S->t[0].visits = 1;
		S->t[0].sum = rw;
	}
	o->rollouts++;
	undo(S);
	for (uint32_t b = 1; b < o->budget && rc == 0; b++)
		rc = iterate(S);
	if (rc == 0)
		for (size_t i = 0; i < n; i++) {
			placed[i] = (uint8_t)(S->best_placed >> i & 1);
			if (placed[i])
				out[i] = S->best[i];
		}
	free(S->t);
	free(S->stamp);
	free(S->touched);
	free(S);
	return rc;
}

/* ---- planning a batch ---- */

static int plan_greedy(struct xp_sched *s, const struct xp_request *r, size_t n,
		       struct xp_batch_opts *o, struct xp_rng *rng, struct xp_alloc *out,
		       uint8_t *placed)
{
	for (size_t i = 0; i < n; i++) {
		int rc = xp_sched_pick(s, &r[i], rng, &out[i]);
		placed[i] = rc == 0;
		if (rc == 0) {
			xp_sched_commit(s, &out[i]);
			o->placements++;
		} else if (rc != XP_ENOSPC) {
			while (i-- > 0)
				if (placed[i])
					xp_sched_release(s, &out[i]);
			return rc;
		}
	}
	for (size_t i = n; i-- > 0;)
		if (placed[i])
			xp_sched_release(s, &out[i]);
	return 0;
}

int xp_sched_plan_batch(struct xp_sched *s, const struct xp_request *r, size_t n,
			struct xp_batch_opts *o, struct xp_rng *rng, struct xp_alloc *out,
			uint8_t *placed)
{
	size_t k = o->k ? o->k : XP_BATCH_K_DEFAULT, done = 0;
	int rc = 0, count = 0;

	if (k > XP_BATCH_MAX)
		k = XP_BATCH_MAX;
	while (done < n && rc == 0) {
		size_t m = n - done < k ? n - done : k;
		if (o->budget && s->pol->optimise)
			rc = s->pol->optimise(s, r + done, m, o, rng, out + done, placed + done);
		else
			rc = plan_greedy(s, r + done, m, o, rng, out + done, placed + done);
		for (size_t i = done; i < done + m && rc == 0; i++)
			if (placed[i])
				xp_sched_commit(s, &out[i]); /* later chunks see this one */
		if (rc == 0)
			done += m;
	}
	for (size_t i = done; i-- > 0;)
		if (placed[i]) {
			xp_sched_release(s, &out[i]);
			count++;
		}
	return rc < 0 ? rc : count;
}
