/*
 * sched: the decision - filter, score, pick a node, pick devices - and the
 * explanation of a request that does not fit (see sched.h).
 */
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

static const char *const why_names[XP_WHY_N] = {
	"fits",
	"node down",
	"no matching device",
	"CPU short",
	"memory short",
	"matching devices busy",
	"no island/NUMA domain with room",
	"not the requested node",
	"node draining",
	"node cordoned",
};

const char *xp_why_name(int why)
{
	return why >= 0 && why < XP_WHY_N ? why_names[why] : "?";
}

static int fits_mem(const struct xp_sched *s, uint32_t n, const struct xp_request *r)
{
	return s->ns[n].mem_free >= (int64_t)r->mem_mib;
}

/* Plain scan over slots: the policy's best node, or a random feasible one. */
static long scan(struct xp_sched *s, const struct xp_shape *m, const struct xp_request *r,
		 struct xp_rng *rng)
{
	long best = -1;
	int32_t best_score = -1;
	uint64_t ties = 0;
	int random_node = (s->pol->flags & XP_POLICY_RANDOM_NODE) != 0;

	for (uint32_t slot = 0; slot < s->nnodes; slot++) {
		uint32_t n = s->slot_node[slot];
		if (!fits_mem(s, n, r) || xp_node_why(s, n, m) != XP_WHY_FITS)
			continue;
		if (random_node) {
			if (xp_rng_below(rng, ++ties) == 0)
				best = n;
			continue;
		}
		int32_t sc = s->pol->score(s, n, m);
		if (sc < 0)
			sc = 0;
		if (sc > s->pol->score_max)
			sc = s->pol->score_max;
		if (sc > best_score) {
			best_score = sc;
			best = n;
			ties = 1;
		} else if (sc == best_score && s->opts.tiebreak == XP_TIE_RANDOM && rng) {
			if (xp_rng_below(rng, ++ties) == 0)
				best = n;
		}
	}
	return best;
}

int xp_sched_pick(struct xp_sched *s, const struct xp_request *r, struct xp_rng *rng,
		  struct xp_alloc *out)
{
	const struct xp_shape *m;
	struct xp_shape local;
	long n;

	if (r->mig)
		return xp_mig_pick(s, r, out);
	if (s->idx) {
		n = xp_index_best(s, r, rng, &m);
	} else {
		xp_shape_init(s, &local, r);
		m = &local;
		n = scan(s, m, r, rng);
	}
	if (n >= 0) {
		xp_alloc_fill(out, (uint32_t)n, r);
		if (s->pol->pick)
			s->pol->pick(s, (uint32_t)n, m, rng, out);
		else
			xp_pick_default(s, (uint32_t)n, m, rng, out);
		xp_alloc_settle(s, out, r);
	}
	if (!s->idx)
		xp_shape_free(&local);
	if (n < 0)
		return XP_ENOSPC;
	if (out->ndev != r->dev_count)
		return XP_EINTERNAL; /* a policy chose fewer devices than fit: a bug */
	return 0;
}

void xp_sched_explain(const struct xp_sched *s, const struct xp_request *r, struct xp_explain *out)
{
	struct xp_shape m;

	memset(out, 0, sizeof(*out));
	xp_shape_init(s, &m, r);
	for (uint32_t n = 0; n < s->nnodes; n++) {
		int why = xp_node_why(s, n, &m);
		const struct xp_nstate *ns = &s->ns[n];
		if (why == XP_WHY_CPU) {
			uint64_t short_by = r->cpu_milli - (uint64_t)ns->cpu_free;
			if (!out->cpu_short_min || short_by < out->cpu_short_min)
				out->cpu_short_min = short_by;
		}
		/* memory is checked right after CPU, before device room */
		if ((why == XP_WHY_FITS || why == XP_WHY_DEV_BUSY || why == XP_WHY_TOPOLOGY) &&
		    !fits_mem(s, n, r)) {
			uint64_t short_by = r->mem_mib - (uint64_t)ns->mem_free;
			if (!out->mem_short_min || short_by < out->mem_short_min)
				out->mem_short_min = short_by;
			why = XP_WHY_MEM;
		}
		out->nodes[why]++;
	}
	xp_shape_free(&m);
	xp_mig_explain(s, r, NULL, out);
}
