/*
 * history: the pool's recent past for the dashboard (issue 7 §2) - every
 * 10 s the owner samples the accelerators' allocated share, the
 * fragmentation measure (F(M) / idle, as /metrics), and the running and
 * pending job counts into a ring of a day (8,640 samples). GET
 * /v1/history?since=TIME returns them oldest first. Memory only: a
 * restart starts a new history.
 */
#include "ctl.h"

#include <stdlib.h>
#include <string.h>

#include "../lib/timefmt.h"
#include "../lib/xalloc.h"

#define EVERY_MS 10000
#define KEEP	 8640

void xp_history_sample(struct xp_ctl *ctl, int64_t now)
{
	struct xp_history *h = &ctl->history;
	struct xp_state *st = ctl->st;
	if (now < h->next || st->sched_stale)
		return;
	h->next = now + EVERY_MS;
	if (!h->ring)
		h->ring = XNEWV(struct xp_sample, KEEP);
	uint64_t total = xp_sched_total_milli(st->sched), used = xp_sched_used_milli(st->sched);
	double idle = (double)(total - used);
	struct xp_sample s = { now, total ? (double)used / (double)total : 0,
			       idle > 0 ? xp_sched_frag(st->sched) / idle : 0,
			       (uint32_t)st->count[XP_JOB_RUNNING],
			       (uint32_t)st->count[XP_JOB_PENDING] };
	h->ring[(h->head + h->n) % KEEP] = s;
	if (h->n < KEEP)
		h->n++;
	else
		h->head = (h->head + 1) % KEEP;
}

void xp_history_free(struct xp_ctl *ctl)
{
	free(ctl->history.ring);
	memset(&ctl->history, 0, sizeof(ctl->history));
}

void xp_api_history(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	const struct xp_history *h = &ctl->history;
	const char *q = xp_cmd_query(cmd, "since");
	int64_t since = 0;
	if (q && xp_time_parse(q, &since) < 0)
		FAIL(cmd, XP_EINVAL, "since", "since: expected a time such as 2026-11-29T10:00:00Z, got '%s'",
		     q);
	json_t *arr = json_array();
	char ts[XP_TIME_LEN];
	for (size_t i = 0; i < h->n; i++) {
		const struct xp_sample *s = &h->ring[(h->head + i) % KEEP];
		if (s->at < since)
			continue;
		xp_time_format(s->at, ts);
		json_array_append_new(arr, json_pack("{s:s,s:f,s:f,s:i,s:i}", "at", ts, "allocated",
						     s->alloc, "fragmentation", s->frag, "running",
						     (int)s->running, "pending", (int)s->pending));
	}
	json_t *o = json_pack("{s:i,s:o}", "every_s", EVERY_MS / 1000, "samples", arr);
	xp_reply_json(cmd, 200, xp_json_take(o));
}
