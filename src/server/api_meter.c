/*
 * api_meter: usage, cost and prices (docs/api.md "Usage and cost"), run on
 * the owner thread. The ledger and the price table live in the state
 * (src/core/state/meter.c); these handlers journal changes and read
 * reports.
 *
 *   GET  /v1/usage?by=tenant|queue|job&since=7d&until=...&tenant=T&format=csv
 *   GET  /v1/prices            PUT /v1/prices (admin; JSON or YAML)
 *   POST /v1/jobs/{id}/counters {"inference_requests": 1200, ...}
 */
#include "ctl.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../edge/edge.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"

#define MAX_WINDOW_MS (3660LL * 86400 * 1000)

/* a time: RFC 3339, or a duration before now ("7d") */
static int when(struct xp_cmd *cmd, const char *key, int64_t now, int64_t dflt, int64_t *out)
{
	const char *s = xp_cmd_query(cmd, key);
	int64_t d;
	if (!s) {
		*out = dflt;
		return 0;
	}
	if (xp_time_parse(s, out) == 0)
		return 0;
	if (xp_duration_parse(s, MAX_WINDOW_MS, &d) == 0) {
		*out = now - d;
		return 0;
	}
	xp_reply_error(cmd, XP_EINVAL, key,
		       "%s: expected a time such as 2026-11-01T00:00:00Z or a duration before "
		       "now such as 7d, got '%s'",
		       key, s);
	return -1;
}

void xp_api_usage(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	const char *bs = xp_cmd_query(cmd, "by"), *fmt = xp_cmd_query(cmd, "format"),
		   *tn = xp_cmd_query(cmd, "tenant");
	int64_t now = xp_ctl_now(), since, until, tenant = cmd->admin ? -1 : cmd->tenant;
	int by = bs ? xp_meter_by_parse(bs) : XP_METER_TENANT;
	if (by < 0)
		FAIL(cmd, XP_EINVAL, "by", "by: expected tenant, queue or job, got '%s'", bs);
	if (fmt && strcmp(fmt, "json") && strcmp(fmt, "csv"))
		FAIL(cmd, XP_EINVAL, "format", "format: expected json or csv, got '%s'", fmt);
	/* by default up to now, what was recorded in this millisecond included */
	if (when(cmd, "since", now, now - 30LL * 86400 * 1000, &since) < 0 ||
	    when(cmd, "until", now, now + 1, &until) < 0)
		return;
	if (until <= since)
		FAIL(cmd, XP_EINVAL, "until", "until: must be after since");
	if (tn) {
		long t = xp_state_tenant(ctl->st, tn);
		if (t < 0 || (!cmd->admin && t != cmd->tenant))
			FAIL(cmd, XP_ENOENT, "tenant", "no tenant %s", tn);
		tenant = t;
	}
	json_t *rep = xp_meter_report(ctl->st, by, since, until, now, tenant);
	if (fmt && !strcmp(fmt, "csv")) {
		char *csv = xp_meter_report_csv(rep);
		json_decref(rep);
		xp_reply_text(cmd, 200, "text/csv; charset=utf-8", csv);
		return;
	}
	xp_reply_json(cmd, 200, xp_json_take(rep));
}

void xp_api_prices_get(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	if (!ctl->st->meter.prices.set)
		FAIL(cmd, XP_ENOENT, NULL, "no price table set (PUT /v1/prices)");
	xp_reply_json(cmd, 200, xp_json_take(xp_prices_json(&ctl->st->meter.prices)));
}

void xp_api_prices_put(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	const struct xp_prices *p = cmd->payload; /* parsed at the edge */
	json_t *doc = xp_prices_json(p);
	char *rec = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (xp_ctl_journal(ctl, "prices.set", rec, &err) < 0) {
		json_decref(doc);
		FAIL_ERR(cmd, &err, NULL);
	}
	cmd->journaled = 1;
	xp_reply_json(cmd, 200, xp_json_take(doc));
}

/* edge (pool thread, no state): the counters map, checked */
int xp_edge_counters(struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	if (!cmd->body_obj)
		return xp_reply_error(cmd, XP_EINVAL, NULL,
				      "body: expected a JSON map of counter: count"),
		       -1;
	if (xp_meter_counters_check(cmd->body_obj, &err) < 0)
		return xp_reply_err(cmd, &err, NULL), -1;
	struct xp_small *b = XNEW(struct xp_small);
	b->o = json_incref(cmd->body_obj);
	cmd->payload = b;
	cmd->payload_free = xp_small_free;
	return 0;
}

void xp_api_job_counters(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	struct xp_job *j = xp_api_visible_job(ctl, cmd);
	if (!j)
		return;
	json_t *c = ((const struct xp_small *)cmd->payload)->o; /* checked at the edge */
	int rc = xp_ctl_journal(ctl, "job.counter", xp_rec_job_counter(j->id, c), &err);
	if (rc < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	json_t *rep = xp_meter_report(ctl->st, XP_METER_JOB, 0, INT64_MAX, xp_ctl_now(),
				      (long)j->tenant);
	json_t *rows = json_object_get(rep, "rows"), *r, *out = NULL;
	size_t i;
	json_array_foreach(rows, i, r) if ((uint64_t)json_integer_value(json_object_get(r, "job")) ==
					   j->id) out = json_incref(json_object_get(r, "counters"));
	json_decref(rep);
	xp_reply_json(cmd, 200,
		      xp_json_take(json_pack("{s:I,s:o}", "job", (json_int_t)j->id, "counters",
				      out ? out : json_object())));
}
