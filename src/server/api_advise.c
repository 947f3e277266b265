/*
 * api_advise: the cost forecast and the savings advice (issue 7 §4;
 * docs/design/metering.md "Forecast and advice"), on the owner thread.
 *
 *   GET /v1/forecast?tenant=T&days=30&hours=24
 *       the hourly cost (GPU-hours without a price table) of a tenant (a
 *       tenant: its own; an admin: anyone's, or the pool's without
 *       tenant=), the brief's model fitted on the history (the last 7 days
 *       held out for the MAPE) and the next hours predicted.
 *   GET /v1/advice (admin)
 *       what could be saved and how much a month, in the price table's
 *       currency (GPU-hours when unpriced):
 *         idle_quota      a queue guaranteed far more GPUs than it used in
 *                         the last 7 days;
 *         oversized_job   a running job whose GPUs its agent reports under
 *                         20 % busy;
 *         smaller_share   a fractional job using under half the device
 *                         memory its share allows;
 *         consolidate     a node holding little that the rest of the pool
 *                         could take, so it could be drained and powered off;
 *         cheaper_hours   batch work (priority <= 0) run in dearer hours
 *                         that the time-of-day prices make cheaper.
 */
#include "ctl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/forecast.h"
#include "../lib/parse.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"

#define MONTH_HOURS 730.0

static long query_long(struct xp_cmd *cmd, const char *key, long min, long max, long dflt)
{
	const char *s = xp_cmd_query(cmd, key);
	int64_t v;
	if (!s)
		return dflt;
	if (xp_parse_i64(s, min, max, &v) < 0) {
		xp_reply_error(cmd, XP_EINVAL, key, "%s: expected an integer %ld..%ld, got '%s'", key,
			       min, max, s);
		return -1;
	}
	return (long)v;
}

/* Hours of usage the ledger holds: since the first run it records began
 * (a run still going counts from its start); 0 with none. */
static double history_hours(const struct xp_state *st, int64_t now)
{
	int64_t first = now;
	for (size_t i = 0; i < st->meter.runs.n; i++)
		if (st->meter.runs.v[i].start < first)
			first = st->meter.runs.v[i].start;
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->state == XP_JOB_RUNNING && j->started_at > 0 && j->started_at < first)
			first = j->started_at;
	}
	return (double)(now - first) / XP_HOUR_MS;
}

/* The forecast fits a daily and weekly season: below three days of usage
 * it would fit noise (an all-zero model on a new controller) */
#define FORECAST_MIN_HOURS 72
/* idle-guarantee advice averages a week, and needs one day at least */
#define ADVICE_MIN_HOURS 24

void xp_api_forecast(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	const struct xp_state *st = ctl->st;
	long days = query_long(cmd, "days", 3, 365, 30), ahead = query_long(cmd, "hours", 1, 720, 24);
	if (days < 0 || ahead < 0)
		return;
	const char *tn = xp_cmd_query(cmd, "tenant");
	int64_t tenant = cmd->admin ? -1 : cmd->tenant;
	if (tn) {
		long t = xp_state_tenant(st, tn);
		if (t < 0 || (!cmd->admin && t != cmd->tenant))
			FAIL(cmd, XP_ENOENT, "tenant", "no tenant %s", tn);
		tenant = t;
	}
	int64_t now = xp_ctl_now(), end = now / XP_HOUR_MS * XP_HOUR_MS;
	double have = history_hours(st, now);
	if (have < FORECAST_MIN_HOURS) {
		json_t *o = json_pack("{s:s,s:f,s:i,s:o,s:[]}", "of",
				      st->meter.prices.set ? "cost" : "gpu_hours", "history_hours",
				      have, "history_needed_hours", FORECAST_MIN_HOURS, "model",
				      json_null(), "forecast");
		char why[160];
		snprintf(why, sizeof(why),
			 "not enough history: %.1f h of usage recorded, the model needs %d h "
			 "(three days)",
			 have, FORECAST_MIN_HOURS);
		json_object_set_new(o, "why", json_string(why));
		xp_reply_json(cmd, 200, xp_json_take(o));
		return;
	}
	size_t n = (size_t)days * 24;
	int64_t since = end - (int64_t)n * XP_HOUR_MS;
	double *c = XNEWV(double, n), *u = XNEWV(double, n), *out = XNEWV(double, (size_t)ahead);
	xp_meter_series(st, tenant, since, n, now, c, u);
	int hour0 = (int)(((since / XP_HOUR_MS) + 72) % 168); /* 1970-01-01 was a Thursday */
	struct xp_forecast f;
	int priced = st->meter.prices.set;
	json_t *o = json_pack("{s:s,s:s,s:I}", "of", priced ? "cost" : "gpu_hours", "currency",
			      priced ? st->meter.prices.currency : "", "history_hours",
			      (json_int_t)n);
	if (tenant >= 0)
		json_object_set_new(o, "tenant", json_string(st->tenants.v[tenant].name));
	if (xp_forecast_fit(c, u, n, hour0, 7.0 / (double)days, &f) == 0) {
		xp_forecast_ahead(&f, c, u, n, hour0, (size_t)ahead, out);
		json_t *fc = json_array();
		double total = 0;
		char ts[XP_TIME_LEN];
		for (long k = 0; k < ahead; k++) {
			xp_time_format(end + k * XP_HOUR_MS, ts);
			json_array_append_new(fc, json_pack("{s:s,s:f}", "at", ts, "value", out[k]));
			total += out[k];
		}
		json_object_set_new(
			o, "model",
			json_pack("{s:f,s:f,s:{s:f,s:f,s:f},s:f,s:f,s:f,s:i,s:I,s:I}", "a", f.a, "b",
				  f.b, "w", "seasonal", f.w[0], "growth", f.w[1], "utilisation",
				  f.w[2], "intercept", f.intercept, "mape", f.mape, "mape_persistence",
				  f.mape_naive, "period_hours", f.period, "fitted_hours",
				  (json_int_t)f.train, "held_out_hours", (json_int_t)f.test));
		json_object_set_new(o, "forecast", fc);
		json_object_set_new(o, "forecast_total", json_real(total));
	}
	double hist = 0;
	for (size_t h = n - 24; h < n; h++)
		hist += c[h];
	json_object_set_new(o, "last_24h", json_real(hist));
	free(c);
	free(u);
	free(out);
	xp_reply_json(cmd, 200, xp_json_take(o));
}

struct advice {
	json_t *items;
	json_t *notes; /* what was not judged, and why */
	double total;
};

static void advise(struct advice *ad, const char *kind, const char *subject, double saving,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void advise(struct advice *ad, const char *kind, const char *subject, double saving,
		   const char *fmt, ...)
{
	char detail[400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	json_array_append_new(ad->items, json_pack("{s:s,s:s,s:s,s:f}", "kind", kind, "subject",
						   subject, "detail", detail, "saving_per_month",
						   saving));
	ad->total += saving;
}

/* the price of one GPU-hour: the default device price, or 1 (GPU-hours) unpriced */
static double gpu_hour(const struct xp_state *st)
{
	const struct xp_prices *p = &st->meter.prices;
	if (!p->set)
		return 1;
	double sum = p->dev_default;
	int n = 1;
	for (uint32_t i = 0; i < p->nmodels; i++, n++)
		sum += p->model_price[i];
	return sum / n;
}

static void idle_quota(const struct xp_state *st, struct advice *ad, int64_t now);

void xp_advice_idle_quota(const struct xp_state *st, int64_t now, json_t *items, json_t *notes)
{
	struct advice ad = { items, notes, 0 };
	idle_quota(st, &ad, now);
}

static void idle_quota(const struct xp_state *st, struct advice *ad, int64_t now)
{
	double hours = history_hours(st, now);
	if (hours < ADVICE_MIN_HOURS) {
		char why[160];
		snprintf(why, sizeof(why),
			 "idle_quota: %.1f h of usage recorded, guarantees are judged over %d h "
			 "at least",
			 hours, ADVICE_MIN_HOURS);
		json_array_append_new(ad->notes, json_string(why));
		return;
	}
	if (hours > 7 * 24)
		hours = 7 * 24;
	json_t *rep = xp_meter_report(st, XP_METER_QUEUE, now - (int64_t)(hours * XP_HOUR_MS), now,
				      now, -1);
	double *used = xcalloc(st->queues.n + 1, sizeof(double)); /* subtree device-hours */
	json_t *row;
	size_t i;
	int r = XP_RES_DEV + XP_CLASS_GPU;
	json_array_foreach(json_object_get(rep, "rows"), i, row)
	{
		long q = xp_state_queue(st, json_string_value(json_object_get(row, "queue")));
		const char *k;
		json_t *v;
		double h = 0;
		json_object_foreach(json_object_get(row, "device_hours"), k, v)
			h += json_real_value(v);
		for (; q >= 0; q = st->queues.v[q].parent) /* a guarantee covers its subtree */
			used[q] += h;
	}
	/* what the pool left idle on average: a guarantee idle while others
	 * borrowed its GPUs was lent out, and saves nothing */
	double pool_used = 0;
	for (size_t q = 0; q < st->queues.n; q++)
		if (st->queues.v[q].parent < 0)
			pool_used += used[q];
	double pool_idle = (double)st->capacity[r] / 1000.0 - pool_used / hours;
	for (size_t q = 0; q < st->queues.n; q++) {
		const struct xp_queue *qu = &st->queues.v[q];
		double g = (double)qu->guarantee[r] / 1000.0, avg = used[q] / hours;
		if (qu->deleted || g <= 0)
			continue;
		double spare = fmin(g - avg, pool_idle);
		if (avg < 0.5 * g && spare > 0)
			advise(ad, "idle_quota", qu->name, spare * gpu_hour(st) * MONTH_HOURS,
			       "guaranteed %.1f GPUs, used %.1f on average over %.0f h, %.1f of "
			       "them idle in the pool too (the rest was lent out): lower the "
			       "guarantee to %.0f",
			       g, avg, hours, spare, ceil(avg * 1.2));
	}
	free(used);
	json_decref(rep);
}

static void per_job(struct xp_ctl *ctl, struct advice *ad)
{
	const struct xp_state *st = ctl->st;
	char subj[48];
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->state != XP_JOB_RUNNING)
			continue;
		double held = 0, busy = 0, mem_used = 0, mem_share = 0;
		int reported = 0;
		for (uint32_t k = 0; k < j->spec.replicas; k++) {
			const struct xp_alloc *a = &j->allocs[k];
			for (uint16_t d = 0; d < a->ndev; d++) {
				uint32_t n = a->node;
				double f = (a->dev_milli ? a->dev_milli : 1000) / 1000.0;
				held += f;
				mem_share += f * (double)st->c->nodes[n].devs[a->devs[d]].mem_mib;
				if (n < ctl->live.n && ctl->live.v[n].dev &&
				    a->devs[d] < ctl->live.v[n].ndev) {
					const struct xp_devstat *x = &ctl->live.v[n].dev[a->devs[d]];
					if (x->util_pct >= 0) {
						busy += x->util_pct / 100.0;
						reported++;
					}
					if (x->mem_used_mib >= 0)
						mem_used += (double)x->mem_used_mib;
				}
			}
		}
		if (!reported || held <= 0)
			continue;
		snprintf(subj, sizeof(subj), "job %llu", (unsigned long long)j->id);
		double util = busy / reported;
		if (util < 0.2 && held >= 1)
			advise(ad, "oversized_job", subj, held * (1 - util) * gpu_hour(st) * MONTH_HOURS,
			       "holds %.1f GPUs that are %.0f %% busy: ask for fewer, or share them",
			       held, util * 100);
		else if (held < 1 && mem_share > 0 && mem_used < 0.5 * mem_share)
			advise(ad, "smaller_share", subj,
			       (held - held * mem_used / mem_share) * gpu_hour(st) * MONTH_HOURS,
			       "a %.0f %% share uses %.0f of %.0f MiB of device memory: a %.0f %% "
			       "share would do",
			       held * 100, mem_used, mem_share,
			       ceil(100 * held * (mem_used / mem_share) * 1.2));
	}
}

static void consolidate(const struct xp_state *st, struct advice *ad)
{
	/* what the rest of the pool has free, in GPUs and cores */
	double free_gpu = 0, free_cpu = 0;
	size_t n = st->nodes.n;
	double *held = xcalloc(n + 1, sizeof(double)), *cpu = xcalloc(n + 1, sizeof(double));
	for (size_t i = 0; i < n; i++) {
		const struct xp_nodeinfo *ni = &st->nodes.v[i];
		double gpus = 0;
		for (uint16_t d = 0; d < st->c->nodes[i].ndevs; d++)
			gpus += st->c->nodes[i].devs[d].cls == XP_CLASS_GPU;
		for (size_t k = 0; k < ni->run.n; k++) {
			const struct xp_alloc *a = &ni->run.v[k].job->allocs[ni->run.v[k].replica];
			held[i] += a->ndev * (a->dev_milli ? a->dev_milli : 1000) / 1000.0;
			cpu[i] += a->cpu_milli / 1000.0;
		}
		if (!ni->removed && ni->state == XP_NODE_READY) {
			free_gpu += gpus - held[i];
			free_cpu += st->c->nodes[i].cpu_milli / 1000.0 - cpu[i];
		}
	}
	const struct xp_prices *p = &st->meter.prices;
	int shown = 0;
	for (size_t i = 0; i < n && shown < 20; i++) {
		const struct xp_nodeinfo *ni = &st->nodes.v[i];
		const struct xp_node *node = &st->c->nodes[i];
		double gpus = 0, idle_w = 0;
		for (uint16_t d = 0; d < node->ndevs; d++) {
			gpus += node->devs[d].cls == XP_CLASS_GPU;
			idle_w += node->devs[d].idle_w;
		}
		if (ni->removed || ni->state != XP_NODE_READY || gpus < 1 || !ni->run.n ||
		    held[i] > 0.25 * gpus)
			continue;
		/* its work fits in what the others have free (room, not placement) */
		if (free_gpu - (gpus - held[i]) < held[i] ||
		    free_cpu - (node->cpu_milli / 1000.0 - cpu[i]) < cpu[i])
			continue;
		double kwh = idle_w * MONTH_HOURS / 1000.0;
		advise(ad, "consolidate", node->name,
		       p->set ? kwh * p->energy : kwh,
		       "holds %.1f of %.0f GPUs; the others have room for its %u replicas: drain it "
		       "and power it off (%.0f W idle, %.0f kWh a month)",
		       held[i], gpus, ni->jobs, idle_w, kwh);
		free_gpu -= gpus - held[i];
		shown++;
	}
	free(held);
	free(cpu);
}

static void cheaper_hours(const struct xp_state *st, struct advice *ad, int64_t now)
{
	const struct xp_prices *p = &st->meter.prices;
	double lo = 1e300;
	if (!p->set)
		return;
	for (int h = 0; h < 24; h++)
		if (p->factor[h] < lo)
			lo = p->factor[h];
	/* batch runs of the last 7 days: cost at their hours against the cheapest */
	double extra = 0;
	for (size_t i = 0; i < st->meter.runs.n; i++) {
		const struct xp_meter_run *r = &st->meter.runs.v[i];
		const struct xp_job *j = xp_state_job(st, r->job);
		int64_t a = r->start > now - 7 * 24 * XP_HOUR_MS ? r->start : now - 7 * 24 * XP_HOUR_MS;
		if (!j || j->spec.priority > 0 || r->end <= a)
			continue;
		double hrs = (double)(r->end - a) / XP_HOUR_MS, w = xp_prices_hours(p, a, r->end);
		double rate = xp_meter_run_rate(p, st->meter.devs.v, st->meter.names.v, r);
		extra += rate * (w - lo * hrs);
	}
	if (extra > 1e-6)
		advise(ad, "cheaper_hours", "batch (priority <= 0)", extra * 30.0 / 7.0,
		       "batch work of the last 7 days cost %.2f more than in the cheapest hours "
		       "(x%.2f): hold it for them (a deadline or a queue that starts at night)",
		       extra, lo);
}

void xp_api_advice(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct advice ad = { json_array(), json_array(), 0 };
	int64_t now = xp_ctl_now();
	idle_quota(ctl->st, &ad, now);
	per_job(ctl, &ad);
	consolidate(ctl->st, &ad);
	cheaper_hours(ctl->st, &ad, now);
	const struct xp_prices *p = &ctl->st->meter.prices;
	xp_reply_json(cmd, 200,
		      xp_json_take(json_pack("{s:s,s:o,s:o,s:f}", "currency",
					     p->set ? p->currency : "GPU-hours", "advice", ad.items,
					     "notes", ad.notes, "total_saving_per_month", ad.total)));
}
