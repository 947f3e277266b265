/*
 * meter: the usage ledger and the cost report (see meter.h).
 */
#include "meter.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/intmap.h"
#include "../../lib/parse.h"
#include "../../lib/strbuf.h"
#include "../../lib/timefmt.h"
#include "../../lib/xalloc.h"
#include "state_int.h"


static const char *const by_names[XP_METER_BY_N] = { "tenant", "queue", "job" };

int xp_meter_by_parse(const char *s)
{
	return xp_enum_parse(by_names, XP_METER_BY_N, s);
}

const char *xp_meter_by_name(int by)
{
	return xp_enum_name(by_names, XP_METER_BY_N, by);
}

void xp_meter_free(struct xp_meter *m)
{
	for (size_t i = 0; i < m->names.n; i++)
		free(m->names.v[i]);
	xp_vec_free(&m->names);
	xp_vec_free(&m->runs);
	xp_vec_free(&m->devs);
	xp_vec_free(&m->counts);
}

static uint32_t name_id(struct xp_meter *m, const char *s)
{
	for (size_t i = 0; i < m->names.n; i++)
		if (!strcmp(m->names.v[i], s))
			return (uint32_t)i;
	xp_vec_push(&m->names, xstrdup(s));
	return (uint32_t)(m->names.n - 1);
}

static void add_dev(struct xp_meter *m, struct xp_meter_run *r, uint32_t model, uint32_t milli,
		    uint32_t watts)
{
	for (uint32_t i = 0; i < r->ndev; i++) {
		struct xp_meter_dev *d = &m->devs.v[r->dev0 + i];
		if (d->model == model) {
			d->milli += milli;
			d->watts += watts;
			return;
		}
	}
	struct xp_meter_dev d = { model, milli, watts };
	xp_vec_push(&m->devs, d);
	r->ndev++;
}

/* the record of j's running attempt as if it stopped at `at`, appended to m */
static void run_of(const struct xp_state *st, struct xp_meter *m, const struct xp_job *j,
		   int64_t at, struct xp_meter_run *r)
{
	memset(r, 0, sizeof(*r));
	r->job = j->id;
	r->tenant = j->tenant;
	r->queue = j->queue;
	r->attempt = j->attempts;
	r->start = j->resized_at ? j->resized_at : j->started_at; /* elastic: this size's */
	r->end = at > r->start ? at : r->start;
	r->dev0 = (uint32_t)m->devs.n;
	for (uint32_t k = 0; k < j->spec.replicas; k++) {
		const struct xp_alloc *a = &j->allocs[k];
		const struct xp_node *node = &st->c->nodes[a->node];
		r->cpu_milli += a->cpu_milli;
		r->mem_mib += a->mem_mib;
		for (uint16_t i = 0; i < a->ndev; i++) {
			const struct xp_device *d = &node->devs[a->devs[i]];
			const char *model = d->model ? xp_strtab_str(st->c->syms, d->model) : NULL;
			uint32_t mi = a->dev_milli ? a->dev_milli : 1000;
			add_dev(m, r, name_id(m, model && *model ? model : xp_class_name(d->cls)), mi,
				(uint32_t)((uint64_t)d->tdp_w * mi / 1000));
		}
	}
}

void xp_meter_close_run(struct xp_state *st, const struct xp_job *j, int64_t at)
{
	struct xp_meter_run r;
	run_of(st, &st->meter, j, at, &r);
	xp_vec_push(&st->meter.runs, r);
}

int xp_meter_counter(struct xp_state *st, const struct xp_rec *r, int64_t at, struct xp_err *err)
{
	const struct xp_job *j = xp_state_job(st, r->u.counter.id);
	if (!j)
		return xp_errf(err, XP_ENOENT, "no job %lld", (long long)r->u.counter.id);
	for (uint32_t i = 0; i < r->u.counter.n; i++) {
		struct xp_meter_count x = { j->id,
					    j->tenant,
					    j->queue,
					    name_id(&st->meter, r->u.counter.name[i]),
					    at,
					    r->u.counter.value[i] };
		xp_vec_push(&st->meter.counts, x);
	}
	return 0;
}


int xp_meter_energy(struct xp_state *st, const struct xp_rec *r, struct xp_err *err)
{
	long long id = (long long)r->u.energy.id, at = r->u.energy.attempt;
	uint64_t j = r->u.energy.joules;
	for (size_t i = st->meter.runs.n; i-- > 0;) {
		struct xp_meter_run *run = &st->meter.runs.v[i];
		if (run->job == (uint64_t)id && run->attempt == (uint32_t)at) {
			run->measured_j = (uint64_t)j;
			return 0;
		}
	}
	return xp_errf(err, XP_ENOENT, "job.energy: no ended run %lld of job %lld", (long long)at,
		       (long long)id);
}

void xp_meter_prices(struct xp_state *st, const struct xp_prices *p)
{
	st->meter.prices = *p;
}



/* --- pricing and the runs still going --- */

double xp_meter_run_rate(const struct xp_prices *p, const struct xp_meter_dev *devs,
			 char *const *names, const struct xp_meter_run *r)
{
	double rate = r->cpu_milli / 1000.0 * p->cpu + r->mem_mib / 1024.0 * p->memory;
	uint64_t watts = 0;
	for (uint32_t k = 0; k < r->ndev; k++) {
		const struct xp_meter_dev *d = &devs[r->dev0 + k];
		watts += d->watts;
		rate += d->milli / 1000.0 * xp_prices_device(p, names[d->model]);
	}
	if (r->measured_j && r->end > r->start) /* the agents' mean power: J per ms is kW */
		return rate + (double)r->measured_j / (double)(r->end - r->start) * p->energy;
	return rate + watts / 1000.0 * p->energy;
}

/* open: the ledger's names, then the runs of the running jobs (of tenant,
 * or all with tenant < 0) as if they stopped at now */
static void open_runs(const struct xp_state *st, int64_t tenant, int64_t now,
		      struct xp_meter *open)
{
	memset(open, 0, sizeof(*open));
	for (size_t i = 0; i < st->meter.names.n; i++)
		xp_vec_push(&open->names, xstrdup(st->meter.names.v[i]));
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		struct xp_meter_run r;
		if (j->state != XP_JOB_RUNNING || (tenant >= 0 && j->tenant != tenant))
			continue;
		run_of(st, open, j, now, &r);
		xp_vec_push(&open->runs, r);
	}
}

/* --- the report --- */

struct row {
	uint64_t key;
	uint64_t cpu_ms, mem_ms; /* milli-core-seconds, MiB-seconds */
	uint64_t joules;
	int64_t cost_micros;
	uint64_t *dev;	 /* per name: milli-device-seconds */
	uint64_t *count; /* per name */
};

struct report {
	int by;
	char **names; /* the ledger's names, then those only running jobs use */
	size_t nnames;
	const struct xp_prices *prices;
	XP_VEC(struct row) rows;
	struct xp_intmap at; /* key + 1 -> row index + 1 */
};

static void row_init(struct row *r, size_t nnames, uint64_t key)
{
	memset(r, 0, sizeof(*r));
	r->key = key;
	r->dev = XNEWV(uint64_t, nnames + 1);
	r->count = XNEWV(uint64_t, nnames + 1);
	memset(r->dev, 0, sizeof(uint64_t) * (nnames + 1));
	memset(r->count, 0, sizeof(uint64_t) * (nnames + 1));
}

static struct row *row_for(struct report *rp, uint64_t key)
{
	uintptr_t i = (uintptr_t)xp_intmap_get(&rp->at, key + 1);
	if (i)
		return &rp->rows.v[i - 1];
	struct row r;
	row_init(&r, rp->nnames, key);
	xp_vec_push(&rp->rows, r);
	xp_intmap_put(&rp->at, key + 1, (void *)(uintptr_t)rp->rows.n);
	return &rp->rows.v[rp->rows.n - 1];
}

static uint64_t key_of(int by, uint64_t job, uint32_t tenant, uint32_t queue)
{
	return by == XP_METER_TENANT ? tenant : by == XP_METER_QUEUE ? queue : job;
}

/* one run (devices in devs) clipped to [since, until) into its row */
static void add_run(struct report *rp, const struct xp_meter_dev *devs,
		    const struct xp_meter_run *r, int64_t since, int64_t until)
{
	int64_t a = r->start > since ? r->start : since, b = r->end < until ? r->end : until;
	if (b <= a)
		return;
	uint64_t ms = (uint64_t)(b - a), watts = 0;
	struct row *w = row_for(rp, key_of(rp->by, r->job, r->tenant, r->queue));
	const struct xp_prices *p = rp->prices;
	w->cpu_ms += (uint64_t)((unsigned __int128)r->cpu_milli * ms / 1000);
	w->mem_ms += (uint64_t)((unsigned __int128)r->mem_mib * ms / 1000);
	for (uint32_t k = 0; k < r->ndev; k++) {
		const struct xp_meter_dev *d = &devs[r->dev0 + k];
		w->dev[d->model] += (uint64_t)((unsigned __int128)d->milli * ms / 1000);
		watts += d->watts;
	}
	if (r->measured_j && r->end > r->start) /* the agents' figure, for the window's part */
		w->joules += (uint64_t)((double)r->measured_j * (double)ms /
					(double)(r->end - r->start));
	else
		w->joules += (uint64_t)((unsigned __int128)watts * ms / 1000);
	if (p->set)
		w->cost_micros += llround(xp_meter_run_rate(p, devs, rp->names, r) *
					  xp_prices_hours(p, a, b) * 1e6);
}

static json_t *row_json(const struct report *rp, const struct row *w)
{
	json_t *o = json_object(), *d = json_object(), *c = json_object();
	json_object_set_new(o, "cpu_core_hours", json_real(w->cpu_ms / 1000.0 / 3600.0));
	json_object_set_new(o, "memory_gib_hours", json_real(w->mem_ms / 1024.0 / 3600.0));
	for (size_t i = 0; i < rp->nnames; i++) {
		if (w->dev[i])
			json_object_set_new(d, rp->names[i], json_real(w->dev[i] / 1000.0 / 3600.0));
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

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

json_t *xp_meter_report(const struct xp_state *st, int by, int64_t since, int64_t until,
			int64_t now, int64_t tenant)
{
	const struct xp_meter *m = &st->meter;
	struct report rp = { .by = by, .prices = &m->prices };
	struct xp_meter open; /* running jobs, as if they stopped now */
	char ts[XP_TIME_LEN];
	struct row total;

	open_runs(st, tenant, now, &open);
	rp.names = open.names.v;
	rp.nnames = open.names.n;
	xp_intmap_init(&rp.at);
	for (size_t i = 0; i < m->runs.n; i++)
		if (tenant < 0 || m->runs.v[i].tenant == tenant)
			add_run(&rp, m->devs.v, &m->runs.v[i], since, until);
	for (size_t i = 0; i < open.runs.n; i++)
		add_run(&rp, open.devs.v, &open.runs.v[i], since, until);
	for (size_t i = 0; i < m->counts.n; i++) {
		const struct xp_meter_count *c = &m->counts.v[i];
		if ((tenant >= 0 && c->tenant != tenant) || c->at < since || c->at >= until)
			continue;
		row_for(&rp, key_of(by, c->job, c->tenant, c->queue))->count[c->name] += c->value;
	}
	if (rp.rows.n) /* qsort(NULL, 0) is undefined */
		qsort(rp.rows.v, rp.rows.n, sizeof(struct row), cmp_row);

	json_t *o = json_object(), *rows = json_array();
	row_init(&total, rp.nnames, 0);
	for (size_t i = 0; i < rp.rows.n; i++) {
		struct row *w = &rp.rows.v[i];
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
		total.cpu_ms += w->cpu_ms;
		total.mem_ms += w->mem_ms;
		total.joules += w->joules;
		total.cost_micros += w->cost_micros;
		for (size_t k = 0; k < rp.nnames; k++) {
			total.dev[k] += w->dev[k];
			total.count[k] += w->count[k];
		}
		free(w->dev);
		free(w->count);
	}
	json_object_set_new(o, "by", json_string(xp_meter_by_name(by)));
	xp_time_format(since, ts);
	json_object_set_new(o, "since", json_string(ts));
	xp_time_format(until, ts);
	json_object_set_new(o, "until", json_string(ts));
	json_object_set_new(o, "currency", json_string(m->prices.set ? m->prices.currency : ""));
	json_object_set_new(o, "priced", json_boolean(m->prices.set));
	json_object_set_new(o, "rows", rows);
	json_object_set_new(o, "total", row_json(&rp, &total));
	free(total.dev);
	free(total.count);
	xp_vec_free(&rp.rows);
	xp_intmap_free(&rp.at);
	xp_meter_free(&open);
	return o;
}

/* spread one run over the hourly buckets it overlaps */
static void series_run(const struct xp_state *st, const struct xp_meter_dev *devs, char **names,
		       const struct xp_meter_run *r, int64_t tenant, int64_t since, size_t hours,
		       double *cost, double *util)
{
	const struct xp_prices *p = &st->meter.prices;
	double price = xp_meter_run_rate(p, devs, names, r), gpus = 0;
	for (uint32_t k = 0; k < r->ndev; k++)
		gpus += devs[r->dev0 + k].milli / 1000.0;
	int64_t end = since + (int64_t)hours * 3600000;
	int64_t a = r->start > since ? r->start : since, b = r->end < end ? r->end : end;
	while (a < b) {
		size_t h = (size_t)((a - since) / 3600000);
		int64_t he = since + (int64_t)(h + 1) * 3600000, e = he < b ? he : b;
		double hrs = (double)(e - a) / 3600000.0;
		if (tenant < 0 || r->tenant == tenant)
			cost[h] += p->set ? price * xp_prices_hours(p, a, e) : gpus * hrs;
		util[h] += gpus * hrs;
		a = e;
	}
}

void xp_meter_series(const struct xp_state *st, int64_t tenant, int64_t since, size_t hours,
		     int64_t now, double *cost, double *util)
{
	const struct xp_meter *m = &st->meter;
	struct xp_meter open;
	double gpus = (double)st->capacity[XP_RES_DEV + XP_CLASS_GPU] / 1000.0;
	memset(cost, 0, hours * sizeof(double));
	memset(util, 0, hours * sizeof(double));
	open_runs(st, -1, now, &open); /* everyone's: the pool's utilisation */
	for (size_t i = 0; i < m->runs.n; i++)
		series_run(st, m->devs.v, open.names.v, &m->runs.v[i], tenant, since, hours, cost,
			   util);
	for (size_t i = 0; i < open.runs.n; i++)
		series_run(st, open.devs.v, open.names.v, &open.runs.v[i], tenant, since, hours, cost,
			   util);
	for (size_t h = 0; h < hours; h++)
		util[h] = gpus > 0 ? util[h] / gpus : 0;
	xp_meter_free(&open);
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
				     json_integer_value(
					     json_object_get(json_object_get(r, "counters"), cn[c])));
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
