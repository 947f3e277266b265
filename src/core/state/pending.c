/*
 * pending: why a pending job waits, as one code like squeue's REASON
 * column (state.h, enum xp_pend), with a short detail.
 *
 * The order is what holds the job first: a hold (nothing else is looked
 * at while it is held), its dependencies (placement is not the question
 * yet), its queue's max, then whether any node could take it at all now -
 * the nodes that could were they empty, by their state (possible.c,
 * cached) - and last the cycle's own verdict from its latest try
 * (job->verdict, set in cycle.c: Resources when it did not fit, Priority
 * when backfill kept the room for a job ahead, Search when it fitted but
 * the batch search placed other jobs of its batch instead; None before
 * any try).
 *
 * Cost: no placement is tried, so a listing may ask for every row: a hold
 * and a dependency are flags, the quota is a walk up the queue tree, the
 * nodes' verdict one cache probe for a shape seen before.
 */
#include "state_int.h"

#include <stdio.h>
#include <string.h>

static const char *const pend_names[XP_PEND_N] = {
	"None",	    "Held",	"Dependency", "DependencyNeverSatisfied", "QuotaMax",
	"NoMatchingDevice", "Draining", "NodeDown",   "Resources", "Priority",
	"Search",
};

static const char *const hold_names[XP_HOLD_N] = { "none", "user", "admin" };

const char *xp_pend_name(int code)
{
	return code >= 0 && code < XP_PEND_N ? pend_names[code] : "?";
}

const char *xp_hold_name(int h)
{
	return h >= 0 && h < XP_HOLD_N ? hold_names[h] : "?";
}

int xp_hold_parse(const char *s)
{
	for (int h = 0; h < XP_HOLD_N; h++)
		if (!strcmp(s, hold_names[h]))
			return h;
	return -1;
}

static void deps_detail(const struct xp_state *st, const struct xp_job *j, struct xp_pending *out)
{
	uint64_t w[XP_JOB_MAX_DEPS];
	size_t nw = xp_deps_waiting(st, j, w, XP_JOB_MAX_DEPS), len = 0;
	len += (size_t)snprintf(out->detail, sizeof(out->detail), "waiting for job%s",
				nw == 1 ? "" : "s");
	for (size_t i = 0; i < nw && len < sizeof(out->detail) - 24; i++)
		len += (size_t)snprintf(out->detail + len, sizeof(out->detail) - len, "%s %llu",
					i ? "," : "", (unsigned long long)w[i]);
}

static int quota_detail(const struct xp_state *st, const struct xp_job *j, struct xp_pending *out)
{
	uint64_t d[XP_RES_N];
	uint32_t where;
	int res;
	xp_request_demand(st, j, d);
	if (xp_queue_admits(st, j->queue, d, &where, &res) == 0)
		return 0;
	const struct xp_queue *q = &st->queues.v[where];
	char used[32], max[32], need[32];
	xp_res_format(res, q->usage[res], used, sizeof(used));
	xp_res_format(res, q->max[res], max, sizeof(max));
	xp_res_format(res, d[res], need, sizeof(need));
	snprintf(out->detail, sizeof(out->detail), "queue %s: %s %s/%s, needs %s", q->name,
		 xp_res_name(res), used, max, need);
	return 1;
}

void xp_state_pending(struct xp_state *st, const struct xp_job *j, struct xp_pending *out)
{
	memset(out, 0, sizeof(*out));
	if (j->state != XP_JOB_PENDING)
		return;
	if (j->held) {
		out->code = XP_PEND_HELD;
		snprintf(out->detail, sizeof(out->detail), "held by %s: xpool release %llu",
			 j->held == XP_HOLD_ADMIN ? "an admin" : "its tenant",
			 (unsigned long long)j->id);
		return;
	}
	if (j->doomed) {
		out->code = XP_PEND_DEP_NEVER;
		snprintf(out->detail, sizeof(out->detail),
			 "a dependency ended the wrong way: cancelled at the next cycle");
		return;
	}
	if (j->unmet) {
		out->code = XP_PEND_DEPENDENCY;
		deps_detail(st, j, out);
		return;
	}
	if (quota_detail(st, j, out)) {
		out->code = XP_PEND_QUOTA_MAX;
		return;
	}
	int nodes = xp_state_nodes_for(st, &j->req);
	if (nodes != XP_PEND_RESOURCES) {
		out->code = nodes;
		snprintf(out->detail, sizeof(out->detail), "%s",
			 nodes == XP_PEND_DRAINING ? "the nodes that could run it are draining or "
						     "cordoned"
			 : nodes == XP_PEND_NODE_DOWN
				 ? "the nodes that could run it are down"
			 : j->spec.hold_for_nodes
				 ? "no registered node could run it: held for nodes yet to join"
				 : "no registered node could run it");
		return;
	}
	if (j->verdict == XP_PEND_SEARCH) {
		out->code = XP_PEND_SEARCH;
		snprintf(out->detail, sizeof(out->detail),
			 "it fitted, but the batch search placed %u other job%s of its batch "
			 "instead (job %llu first)",
			 j->search_ahead, j->search_ahead == 1 ? "" : "s",
			 (unsigned long long)j->search_first);
		return;
	}
	out->code = j->verdict == XP_PEND_PRIORITY	? XP_PEND_PRIORITY
		    : j->verdict == XP_PEND_RESOURCES ? XP_PEND_RESOURCES
						      : XP_PEND_NONE;
	snprintf(out->detail, sizeof(out->detail), "%s",
		 out->code == XP_PEND_PRIORITY ? "it fits, but backfill keeps the room for a job "
						 "ahead of it"
		 : out->code == XP_PEND_RESOURCES ? "the nodes that could run it are busy"
						  : "not tried by the scheduler yet");
}
