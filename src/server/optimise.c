/*
 * optimise: `--optimise mcts --budget 10ms` - the cycle's batch search
 * (docs/design/batch-cycle.md) under a time budget. The core counts its
 * budget in rollouts and reads no clock; here, outside it, the owner turns
 * a time into rollouts from what the last cycle calls cost.
 *
 * Per call that searched, c = the call's wall time / the commits its
 * searches made (st->batch.placements: about rollouts x jobs searched;
 * the call's other work is charged to the search too, so c errs high and
 * the search low), and J = the jobs it searched; both EWMAs (1/4 the new
 * value). Before each call:
 *
 *   max_tried = clamp(2 J, 64, --max-per-cycle)   jobs the call may try
 *   rollouts  = clamp(B / (c x max_tried), 1, 1024)
 *
 * so even if every job the call tries is searched, its search costs about
 * rollouts x max_tried x c <= B. The bound is B while rollouts > 1; at 1
 * (the greedy plan itself, about twice greedy's cost) it is that. A call
 * that tries fewer jobs than the pending ones returns "more" and the owner
 * calls again after the commands that queued meanwhile (Redis's bounded
 * tick). The first call, with nothing measured, plans with 1 rollout.
 * With --budget N (rollouts), N per search and the usual --max-per-cycle.
 */
#include "ctl.h"

#define ALPHA	     0.25
#define ROLLOUTS_MAX 1024
#define TRIED_MIN    64

size_t xp_opt_before(struct xp_ctl *ctl)
{
	struct xp_opt_cal *c = &ctl->opt;
	size_t cap = ctl->o.max_per_cycle ? ctl->o.max_per_cycle : 2000;
	c->before = ctl->st->batch;
	if (!ctl->o.optimise) {
		ctl->st->batch.budget = 0;
		return cap;
	}
	if (!ctl->o.budget_us) {
		c->rollouts = ctl->o.budget_rollouts;
		c->max_tried = cap;
	} else {
		double j = 2 * c->jobs;
		c->max_tried = j < TRIED_MIN ? TRIED_MIN : j > (double)cap ? cap : (size_t)j;
		if (c->max_tried > cap)
			c->max_tried = cap;
		double r = c->warm ? (double)ctl->o.budget_us * 1000.0 /
					     (c->ns_per * (double)c->max_tried)
				   : 1;
		c->rollouts = r < 1 ? 1 : r > ROLLOUTS_MAX ? ROLLOUTS_MAX : (uint32_t)r;
	}
	ctl->st->batch.budget = c->rollouts;
	return c->max_tried;
}

void xp_opt_after(struct xp_ctl *ctl, uint64_t ns)
{
	struct xp_opt_cal *c = &ctl->opt;
	const struct xp_state_batch *now = &ctl->st->batch;
	uint64_t placements = now->placements - c->before.placements;
	uint64_t searched = now->searched - c->before.searched;
	if (!ctl->o.optimise || !searched)
		return;
	double per = (double)ns / (double)(placements ? placements : 1);
	c->ns_per = c->warm ? (1 - ALPHA) * c->ns_per + ALPHA * per : per;
	c->jobs = c->warm ? (1 - ALPHA) * c->jobs + ALPHA * (double)searched : (double)searched;
	c->warm = 1;
}
