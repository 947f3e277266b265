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
			add_dev(m, r, name_id(m, model && *model ? model : xp_class_name(d->cls)),
				mi, (uint32_t)((uint64_t)d->tdp_w * mi / 1000));
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
		struct xp_meter_count x = { j->id,    j->tenant,
					    j->queue, name_id(&st->meter, r->u.counter.name[i]),
					    at,	      r->u.counter.value[i] };
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
static void open_runs(const struct xp_state *st, int64_t tenant, int64_t now, struct xp_meter *open)
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

struct report {
	int by;
	char **names; /* the ledger's names, then those only running jobs use */
	size_t nnames;
	const struct xp_prices *prices;
	XP_VEC(struct xp_meter_row) rows;
	struct xp_intmap at; /* key + 1 -> row index + 1 */
};

static void row_init(struct xp_meter_row *r, size_t nnames, uint64_t key)
{
	memset(r, 0, sizeof(*r));
	r->key = key;
	r->dev = XNEWV(uint64_t, nnames + 1);
	r->count = XNEWV(uint64_t, nnames + 1);
	memset(r->dev, 0, sizeof(uint64_t) * (nnames + 1));
	memset(r->count, 0, sizeof(uint64_t) * (nnames + 1));
}

static struct xp_meter_row *row_for(struct report *rp, uint64_t key)
{
	uintptr_t i = (uintptr_t)xp_intmap_get(&rp->at, key + 1);
	if (i)
		return &rp->rows.v[i - 1];
	struct xp_meter_row r;
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
	struct xp_meter_row *w = row_for(rp, key_of(rp->by, r->job, r->tenant, r->queue));
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

static int cmp_row(const void *a, const void *b)
{
	const struct xp_meter_row *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

void xp_meter_rows(const struct xp_state *st, int by, int64_t since, int64_t until, int64_t now,
		   int64_t tenant, struct xp_meter_rows *out)
{
	const struct xp_meter *m = &st->meter;
	struct report rp = { .by = by, .prices = &m->prices };

	memset(out, 0, sizeof(*out));
	open_runs(st, tenant, now, &out->open); /* running jobs, as if they stopped now */
	rp.names = out->open.names.v;
	rp.nnames = out->open.names.n;
	xp_intmap_init(&rp.at);
	for (size_t i = 0; i < m->runs.n; i++)
		if (tenant < 0 || m->runs.v[i].tenant == tenant)
			add_run(&rp, m->devs.v, &m->runs.v[i], since, until);
	for (size_t i = 0; i < out->open.runs.n; i++)
		add_run(&rp, out->open.devs.v, &out->open.runs.v[i], since, until);
	for (size_t i = 0; i < m->counts.n; i++) {
		const struct xp_meter_count *c = &m->counts.v[i];
		if ((tenant >= 0 && c->tenant != tenant) || c->at < since || c->at >= until)
			continue;
		row_for(&rp, key_of(by, c->job, c->tenant, c->queue))->count[c->name] += c->value;
	}
	if (rp.rows.n) /* qsort(NULL, 0) is undefined */
		qsort(rp.rows.v, rp.rows.n, sizeof(struct xp_meter_row), cmp_row);
	struct xp_meter_row *total = &out->total;
	row_init(total, rp.nnames, 0);
	for (size_t i = 0; i < rp.rows.n; i++) {
		const struct xp_meter_row *w = &rp.rows.v[i];
		total->cpu_ms += w->cpu_ms;
		total->mem_ms += w->mem_ms;
		total->joules += w->joules;
		total->cost_micros += w->cost_micros;
		for (size_t k = 0; k < rp.nnames; k++) {
			total->dev[k] += w->dev[k];
			total->count[k] += w->count[k];
		}
	}
	out->by = by;
	out->names = rp.names;
	out->nnames = rp.nnames;
	out->rows = rp.rows.v;
	out->n = rp.rows.n;
	xp_intmap_free(&rp.at);
}

void xp_meter_rows_free(struct xp_meter_rows *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->rows[i].dev);
		free(r->rows[i].count);
	}
	free(r->rows);
	free(r->total.dev);
	free(r->total.count);
	xp_meter_free(&r->open);
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
		series_run(st, open.devs.v, open.names.v, &open.runs.v[i], tenant, since, hours,
			   cost, util);
	for (size_t h = 0; h < hours; h++)
		util[h] = gpus > 0 ? util[h] / gpus : 0;
	xp_meter_free(&open);
}
