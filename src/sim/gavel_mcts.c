/*
 * gavel_mcts: `--policy mcts` on Gavel's workload - xpool's per-round
 * policy (gavel_xpool.c) plus a Monte Carlo tree search (UCT) over the
 * order in which its round plan takes the jobs.
 *
 * xpool's plan selects jobs in its order (Gittins index, starving first)
 * while the pool could hold them and lets an LP place the selected; what
 * the order leaves out waits a round. The search asks which of the jobs
 * left out should go first instead:
 *  - A node is a prefix of promoted jobs; its children promote one more,
 *    "job j first" for the first MCTS_K jobs of xpool's order that its
 *    plan left out (rollout 0's), at most MCTS_DEPTH deep.
 *  - A rollout completes a node's order with xpool's own (the rest of the
 *    jobs in its order) and runs xpool's whole plan on it: selection, LP,
 *    fill, swaps, sharing. It is scored by the objective that plan
 *    maximises in a round (xp_gavel_xpool_score): the LP's column values
 *    summed over every placement - sf x (1 + the job's normalised
 *    throughput) alone, sf x (2 + both) for a pair (1 + both when the
 *    pool is crowded), throughputs weighted by class backlog when
 *    crowded (MaxWeight), less the energy term when set.
 *  - Rollout 0 is xpool's plan itself. The budget counts the rollouts
 *    after it (cfg->budget); the round keeps the best plan any rollout
 *    made, xpool's unless another scores strictly more, so a plan is never
 *    worse than xpool's by the objective and budget 0 is xpool exactly.
 * Rollouts are deterministic and children are expanded in xpool's order,
 * ties to the earliest: the search has no clock and no randomness, so a
 * run is a function of its seed. Rewards are the percent gain over
 * rollout 0's score, explored with UCB1 (constant MCTS_C).
 *
 * What it cannot see: the objective is one round's. Promoting a job the
 * order held back trades its wait for another's, and the Gittins order's
 * long-run JCT is not in the score (docs/results/mcts.md, "Gavel").
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xalloc.h"
#include "gavel_sim_int.h"

/* children per node: the first K jobs xpool's plan left out */
#define MCTS_K 8
/* jobs promoted on one path */
#define MCTS_DEPTH 4
/* UCB1's exploration constant, on rewards in percent of rollout 0's score */
#define MCTS_C 1.0

struct place_vec {
	struct gplace *v;
	size_t n, cap;
};

struct mnode {
	int parent, move, depth; /* move: index into the left-out list; root -1 */
	int tried;		 /* children expanded, in order */
	int kid[MCTS_K];
	double visits, sum, score;
};

struct search {
	struct gsim *s;
	const int *ids; /* xpool's order */
	size_t n;
	int crowded;
	int *out; /* indices into ids of the jobs rollout 0 left out, in order */
	size_t nout;
	struct mnode *nodes;
	size_t nn;
	int *order; /* a rollout's order */
	unsigned char *used;
};

/* the moves of node x: the first MCTS_K left-out jobs not on its path,
 * into mv (indices into out); their number */
static int moves(const struct search *q, int x, int *mv)
{
	unsigned char on[MCTS_K + MCTS_DEPTH] = { 0 };
	for (int y = x; q->nodes[y].move >= 0; y = q->nodes[y].parent)
		on[q->nodes[y].move] = 1;
	int m = 0;
	for (size_t i = 0; i < q->nout && i < MCTS_K + MCTS_DEPTH && m < MCTS_K; i++)
		if (!on[i])
			mv[m++] = (int)i;
	return m;
}

/* node x's order - its promoted jobs, first promoted first, then xpool's
 * order - planned into s->plan; the plan's score */
static double rollout(struct search *q, int x)
{
	int path[MCTS_DEPTH], d = 0;
	for (int y = x; q->nodes[y].move >= 0; y = q->nodes[y].parent)
		path[d++] = q->out[q->nodes[y].move];
	memset(q->used, 0, q->n);
	size_t w = 0;
	while (d > 0) {
		int i = path[--d];
		q->order[w++] = q->ids[i];
		q->used[i] = 1;
	}
	for (size_t i = 0; i < q->n; i++)
		if (!q->used[i])
			q->order[w++] = q->ids[i];
	q->s->plan.n = 0;
	xp_gavel_xpool_place(q->s, q->order, q->n, q->crowded);
	return xp_gavel_xpool_score(q->s, q->crowded);
}

/* the child of x with the highest UCB1 (ties: the earliest) */
static int best_child(const struct search *q, int x)
{
	const struct mnode *p = &q->nodes[x];
	int bk = p->kid[0];
	double bv = -1e300, ln = log(p->visits > 1 ? p->visits : 1);
	for (int i = 0; i < p->tried; i++) {
		const struct mnode *c = &q->nodes[p->kid[i]];
		double v = c->sum / c->visits + MCTS_C * sqrt(ln / c->visits);
		if (v > bv) {
			bv = v;
			bk = p->kid[i];
		}
	}
	return bk;
}

/* the left-out jobs of s->plan (rollout 0's), in xpool's order */
static void left_out(struct search *q)
{
	unsigned char *in = xcalloc(q->s->jobs.n + 1, 1);
	for (size_t i = 0; i < q->s->plan.n; i++) {
		const struct gplace *p = &q->s->plan.v[i];
		in[p->a] = 1;
		if (p->b >= 0)
			in[p->b] = 1;
	}
	q->out = xcalloc(q->n + 1, sizeof(int));
	for (size_t i = 0; i < q->n; i++)
		if (!in[q->ids[i]])
			q->out[q->nout++] = (int)i;
	free(in);
}

/* the rollouts: select by UCB1 down to a node with an untried move,
 * expand it, roll out, back up; the best plan into best (*bscore) */
static void run_search(struct search *q, unsigned budget, double s0, struct place_vec *best,
		       double *bscore)
{
	int mv[MCTS_K];
	q->nodes = xcalloc((size_t)budget + 1, sizeof(struct mnode));
	q->nodes[0] = (struct mnode){ .parent = -1, .move = -1, .visits = 1, .score = s0 };
	q->nn = 1;
	for (unsigned b = 0; b < budget; b++) {
		int x = 0, m;
		while ((m = moves(q, x, mv)) > 0 && q->nodes[x].depth < MCTS_DEPTH &&
		       q->nodes[x].tried == m)
			x = best_child(q, x);
		double r;
		if (m > 0 && q->nodes[x].depth < MCTS_DEPTH) {
			int c = (int)q->nn++;
			struct mnode *p = &q->nodes[x];
			q->nodes[c] = (struct mnode){ .parent = x,
						      .move = mv[p->tried],
						      .depth = p->depth + 1 };
			p->kid[p->tried++] = c;
			x = c;
			double sc = q->nodes[x].score = rollout(q, x);
			if (sc > *bscore + 1e-9 * fabs(*bscore)) {
				*bscore = sc;
				best->n = 0;
				for (size_t i = 0; i < q->s->plan.n; i++)
					xp_vec_push(best, q->s->plan.v[i]);
			}
		} else if (x == 0)
			break; /* nothing to search: every job is placed */
		r = s0 != 0 ? 100 * (q->nodes[x].score / s0 - 1) : 0;
		for (int y = x; y >= 0; y = q->nodes[y].parent) {
			q->nodes[y].visits += 1;
			q->nodes[y].sum += r;
		}
	}
	free(q->nodes);
}

void xp_gavel_mcts_plan(struct gsim *s)
{
	if (!s->act.n)
		return;
	struct search q = { .s = s, .n = s->act.n };
	q.ids = xp_gavel_xpool_order(s, &q.crowded);
	xp_gavel_xpool_place(s, q.ids, q.n, q.crowded); /* rollout 0 */
	if (s->cfg->budget == 0) {
		free((void *)q.ids);
		return;
	}
	left_out(&q);
	if (q.nout) {
		struct place_vec best = { 0 };
		for (size_t i = 0; i < s->plan.n; i++)
			xp_vec_push(&best, s->plan.v[i]);
		double s0 = xp_gavel_xpool_score(s, q.crowded), bscore = s0;
		q.order = xcalloc(q.n + 1, sizeof(int));
		q.used = xcalloc(q.n + 1, 1);
		run_search(&q, s->cfg->budget, s0, &best, &bscore);
		s->plan.n = 0;
		for (size_t i = 0; i < best.n; i++)
			xp_vec_push(&s->plan, best.v[i]);
		xp_vec_free(&best);
		free(q.order);
		free(q.used);
	}
	free(q.out);
	free((void *)q.ids);
}
