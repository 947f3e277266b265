/*
 * meter_report: the usage report (GET /v1/usage, the advisor, the
 * simulator's tenants report) as JSON and CSV. The rows are the state's
 * (core/state/meter.h: xp_meter_rows); the documents are written here
 * (issue 19, item 2: moved from src/core/state/meter.c, the same bytes).
 */
#include "edge.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../core/state/meter.h"
#include "../lib/strbuf.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"

static json_t *row_json(const struct xp_meter_rows *rp, const struct xp_meter_row *w)
{
	json_t *o = json_object(), *d = json_object(), *c = json_object();
	json_object_set_new(o, "cpu_core_hours", json_real(w->cpu_ms / 1000.0 / 3600.0));
	json_object_set_new(o, "memory_gib_hours", json_real(w->mem_ms / 1024.0 / 3600.0));
	for (size_t i = 0; i < rp->nnames; i++) {
		if (w->dev[i])
			json_object_set_new(d, rp->names[i],
					    json_real(w->dev[i] / 1000.0 / 3600.0));
		if (w->count[i])
			json_object_set_new(c, rp->names[i], json_integer((json_int_t)w->count[i]));
	}
	json_object_set_new(o, "device_hours", d);
	json_object_set_new(o, "energy_kwh", json_real(w->joules / 3.6e6));
	json_object_set_new(o, "counters", c);
	json_object_set_new(o, "cost", json_real(w->cost_micros / 1e6));
	json_object_set_new(o, "cost_micros", json_integer(w->cost_micros));
	return o;
}

json_t *xp_meter_report(const struct xp_state *st, int by, int64_t since, int64_t until,
			int64_t now, int64_t tenant)
{
	const struct xp_meter *m = &st->meter;
	struct xp_meter_rows rp;
	char ts[XP_TIME_LEN];

	xp_meter_rows(st, by, since, until, now, tenant, &rp);
	json_t *o = json_object(), *rows = json_array();
	for (size_t i = 0; i < rp.n; i++) {
		const struct xp_meter_row *w = &rp.rows[i];
		json_t *r = row_json(&rp, w);
		if (by == XP_METER_TENANT)
			json_object_set_new(r, "tenant", json_string(st->tenants.v[w->key].name));
		else if (by == XP_METER_QUEUE)
			json_object_set_new(r, "queue", json_string(st->queues.v[w->key].name));
		else {
			const struct xp_job *j = xp_state_job(st, w->key);
			json_object_set_new(r, "job", json_integer((json_int_t)w->key));
			if (j) /* a forgotten job keeps its records, not its name */
				json_object_set_new(r, "tenant",
						    json_string(st->tenants.v[j->tenant].name));
		}
		json_array_append_new(rows, r);
	}
	json_object_set_new(o, "by", json_string(xp_meter_by_name(by)));
	xp_time_format(since, ts);
	json_object_set_new(o, "since", json_string(ts));
	xp_time_format(until, ts);
	json_object_set_new(o, "until", json_string(ts));
	json_object_set_new(o, "currency", json_string(m->prices.set ? m->prices.currency : ""));
	json_object_set_new(o, "priced", json_boolean(m->prices.set));
	json_object_set_new(o, "rows", rows);
	json_object_set_new(o, "total", row_json(&rp, &rp.total));
	xp_meter_rows_free(&rp);
	return o;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void csv_field(struct xp_sb *b, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		xp_sb_puts(b, s);
		return;
	}
	xp_sb_putc(b, '"');
	for (; *s; s++) {
		if (*s == '"')
			xp_sb_putc(b, '"');
		xp_sb_putc(b, *s);
	}
	xp_sb_putc(b, '"');
}

char *xp_meter_report_csv(const json_t *report)
{
	struct xp_sb b = { 0 };
	const char *by = json_string_value(json_object_get(report, "by"));
	json_t *rows = json_object_get(report, "rows"), *r;
	const char *k;
	json_t *v;
	size_t i;
	/* the device models and counters that occur, in name order */
	json_t *devs = json_object(), *counts = json_object();
	json_array_foreach(rows, i, r)
	{
		json_object_foreach(json_object_get(r, "device_hours"), k, v)
			json_object_set(devs, k, json_true());
		json_object_foreach(json_object_get(r, "counters"), k, v)
			json_object_set(counts, k, json_true());
	}
	const char **dn = XNEWV(const char *, json_object_size(devs) + 1),
		   **cn = XNEWV(const char *, json_object_size(counts) + 1);
	size_t nd = 0, nc = 0;
	json_object_foreach(devs, k, v) dn[nd++] = k;
	json_object_foreach(counts, k, v) cn[nc++] = k;
	qsort(dn, nd, sizeof(*dn), cmp_str);
	qsort(cn, nc, sizeof(*cn), cmp_str);
	xp_sb_printf(&b, "%s,cpu_core_hours,memory_gib_hours", by);
	for (size_t d = 0; d < nd; d++) {
		xp_sb_puts(&b, ",");
		struct xp_sb h = { 0 };
		xp_sb_printf(&h, "device_hours_%s", dn[d]);
		csv_field(&b, h.s);
		xp_sb_free(&h);
	}
	xp_sb_puts(&b, ",energy_kwh");
	for (size_t c = 0; c < nc; c++)
		xp_sb_printf(&b, ",count_%s", cn[c]);
	xp_sb_printf(&b, ",cost_%s\n",
		     *json_string_value(json_object_get(report, "currency"))
			     ? json_string_value(json_object_get(report, "currency"))
			     : "none");
	for (i = 0; i <= json_array_size(rows); i++) {
		int last = i == json_array_size(rows);
		r = last ? json_object_get(report, "total") : json_array_get(rows, i);
		json_t *key = json_object_get(r, by);
		if (last)
			xp_sb_puts(&b, "total");
		else if (json_is_string(key))
			csv_field(&b, json_string_value(key));
		else
			xp_sb_printf(&b, "%" JSON_INTEGER_FORMAT, json_integer_value(key));
		xp_sb_printf(&b, ",%.6f,%.6f",
			     json_real_value(json_object_get(r, "cpu_core_hours")),
			     json_real_value(json_object_get(r, "memory_gib_hours")));
		for (size_t d = 0; d < nd; d++)
			xp_sb_printf(&b, ",%.6f",
				     json_real_value(json_object_get(
					     json_object_get(r, "device_hours"), dn[d])));
		xp_sb_printf(&b, ",%.6f", json_real_value(json_object_get(r, "energy_kwh")));
		for (size_t c = 0; c < nc; c++)
			xp_sb_printf(&b, ",%" JSON_INTEGER_FORMAT,
				     json_integer_value(json_object_get(
					     json_object_get(r, "counters"), cn[c])));
		json_int_t micros = json_integer_value(json_object_get(r, "cost_micros"));
		xp_sb_printf(&b, ",%s%" JSON_INTEGER_FORMAT ".%06" JSON_INTEGER_FORMAT "\n",
			     micros < 0 ? "-" : "", (micros < 0 ? -micros : micros) / 1000000,
			     (micros < 0 ? -micros : micros) % 1000000);
	}
	free(dn);
	free(cn);
	json_decref(devs);
	json_decref(counts);
	return xp_sb_steal(&b);
}
