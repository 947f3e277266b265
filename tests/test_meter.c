/*
 * test_meter: the usage ledger, the price table and the cost report
 * (src/core/state/meter.c, prices.c; docs/design/metering.md).
 *
 * - the price table: good documents round-trip, bad ones name the field;
 * - time-of-day pricing against a naive second-by-second integration;
 * - a random workload through the state layer (starts, finishes,
 *   preemptions, requeues, cancellations, counters, a price change) checked
 *   against a naive model that watches the jobs from outside and integrates
 *   usage and cost itself: per job and per window the report agrees; the
 *   rows add up exactly to the total, by tenant exactly to by job; replay
 *   and snapshots rebuild the same ledger.
 */
#include "testutil.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/meter.h"
#include "core/state/prices.h"
#include "core/state/state.h"
#include "edge/edge.h"
#include "lib/rng.h"
#include "lib/xalloc.h"
#include "world.h"

#define T0 1795000000000LL /* 2026-11-18T.. UTC, ms */

static const char *const good_prices =
	"currency: EUR\ncpu: 0.04\nmemory: 0.005\nenergy: 0.2\n"
	"devices: {A100: 3, V100: 1.5, default: 0.5}\n"
	"time_of_day:\n  - {from: 0, to: 7, factor: 0.5}\n  - {from: 18, to: 22, factor: 1.25}\n";

static void test_prices_parse(void **state)
{
	(void)state;
	struct xp_prices p, q;
	struct xp_err err = { 0 };
	assert_int_equal(xp_prices_parse("p", good_prices, strlen(good_prices), 0, &p, &err), 0);
	assert_string_equal(p.currency, "EUR");
	assert_true(p.factor[3] == 0.5 && p.factor[7] == 1 && p.factor[21] == 1.25);
	assert_true(xp_prices_device(&p, "A100") == 3 && xp_prices_device(&p, "H100") == 0.5);
	/* the canonical document parses back to the same table */
	json_t *j = xp_prices_json(&p);
	char *text = json_dumps(j, JSON_COMPACT);
	assert_int_equal(xp_prices_parse("j", text, strlen(text), 1, &q, &err), 0);
	assert_memory_equal(&p, &q, sizeof(p));
	free(text);
	json_decref(j);

	static const struct {
		const char *doc, *want;
	} bad[] = {
		{ "cpu: -1", "cpu: expected a price 0..1e+06, got -1" },
		{ "cpu: x", "cpu: expected a price" },
		{ "memory: [1]", "memory: expected a price 0..1e+06, got a list" },
		{ "gpu: 1", "gpu: unknown key (did you mean 'cpu'?)" },
		{ "currency: U$D", "currency: expected 1-8 letters" },
		{ "devices: 3", "devices: expected a map" },
		{ "devices: {A100: -2}", "devices.A100: expected a price" },
		{ "time_of_day: [{from: 5, to: 5, factor: 2}]",
		  "time_of_day[0]: to (5) must be after from (5)" },
		{ "time_of_day: [{from: 0, to: 25, factor: 2}]", "time_of_day[0].to:" },
		{ "time_of_day: [{from: 1, to: 2}]", "time_of_day[0]: factor: missing" },
		{ "time_of_day: [{from: 1, to: 2, factor: 101}]", "factor 0..100" },
		{ "[1, 2]", "expected a map (a price table)" },
		{ "", "empty document" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xp_err e = { 0 };
		struct xp_prices keep = p;
		int rc = xp_prices_parse("doc", bad[i].doc, strlen(bad[i].doc), 0, &keep, &e);
		if (rc >= 0 || !strstr(e.text, bad[i].want))
			fail_msg("'%s': rc %d '%s' (want '%s')", bad[i].doc, rc, e.text,
				 bad[i].want);
		assert_memory_equal(&keep, &p, sizeof(p)); /* untouched */
	}
}

/* factor-weighted hours, one second at a time */
static double naive_hours(const struct xp_prices *p, int64_t a, int64_t b)
{
	double s = 0;
	for (int64_t t = a; t < b; t += 1000) {
		int64_t e = t + 1000 < b ? t + 1000 : b;
		s += p->factor[(t / 3600000) % 24] * (double)(e - t) / 3600000.0;
	}
	return s;
}

static void test_time_of_day(void **state)
{
	(void)state;
	struct xp_prices p;
	struct xp_err err = { 0 };
	struct xp_rng g;
	assert_int_equal(xp_prices_parse("p", good_prices, strlen(good_prices), 0, &p, &err), 0);
	xp_rng_seed(&g, 7);
	for (int i = 0; i < 300; i++) {
		int64_t a = T0 + (int64_t)xp_rng_below(&g, 3 * 86400) * 1000;
		int64_t b = a + (int64_t)xp_rng_below(&g, i % 3 ? 7200 : 4 * 86400) * 1000;
		double want = naive_hours(&p, a, b), got = xp_prices_hours(&p, a, b);
		if (fabs(want - got) > 1e-9 * (1 + want))
			fail_msg("[%lld, %lld): %.12f, naive %.12f", (long long)a, (long long)b, got,
				 want);
	}
	assert_true(xp_prices_hours(&p, T0, T0) == 0);
	assert_true(fabs(xp_prices_hours(&p, T0, T0 + 86400000) - (7 * 0.5 + 4 * 1.25 + 13)) <
		    1e-12);
}

/* ---- the random workload and its naive model ---- */

struct mrun {
	uint64_t job;
	uint32_t tenant, attempt;
	int64_t start, end; /* end -1: running */
	double cores, gib, kw;
	double dev_price;   /* sum of fraction x the model's price */
	double a100, v100;  /* device fractions by model */
};

struct model {
	XP_VEC(struct mrun) runs;
	XP_VEC(uint32_t) seen_attempt; /* by job id */
	struct xp_prices prices;       /* the table in force (set once, before the runs) */
};

static int tdp_of(const char *model)
{
	return !strcmp(model, "A100") ? 400 : 300;
}

/* open runs for jobs that started now, close those that stopped */
static void observe(struct model *m, const struct xp_state *st, int64_t now)
{
	for (size_t i = 0; i < m->runs.n; i++) {
		struct mrun *r = &m->runs.v[i];
		const struct xp_job *j = xp_state_job(st, r->job);
		if (r->end < 0 && (!j || j->state != XP_JOB_RUNNING || j->attempts != r->attempt))
			r->end = now;
	}
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		while (m->seen_attempt.n <= j->id)
			xp_vec_push(&m->seen_attempt, 0);
		if (j->state != XP_JOB_RUNNING || m->seen_attempt.v[j->id] == j->attempts)
			continue;
		m->seen_attempt.v[j->id] = j->attempts;
		struct mrun r = { .job = j->id, .tenant = j->tenant, .attempt = j->attempts,
				  .start = j->started_at, .end = -1 };
		for (uint32_t k = 0; k < j->spec.replicas; k++) {
			const struct xp_alloc *a = &j->allocs[k];
			r.cores += a->cpu_milli / 1000.0;
			r.gib += a->mem_mib / 1024.0;
			for (uint16_t d = 0; d < a->ndev; d++) {
				const char *model = xp_strtab_str(
					st->c->syms, st->c->nodes[a->node].devs[a->devs[d]].model);
				double f = a->dev_milli / 1000.0;
				r.kw += f * tdp_of(model) / 1000.0;
				r.dev_price += f * xp_prices_device(&m->prices, model);
				*(strcmp(model, "A100") ? &r.v100 : &r.a100) += f;
			}
		}
		xp_vec_push(&m->runs, r);
	}
}

static double jreal(json_t *o, const char *k)
{
	return json_real_value(json_object_get(o, k));
}

static void close_to(double got, double want, const char *what, uint64_t job)
{
	if (fabs(got - want) > 1e-6 * (1 + fabs(want)))
		fail_msg("job %llu %s: report %.9f, model %.9f", (unsigned long long)job, what, got,
			 want);
}

/* the report by job over [a, b) against the model, and exact sums */
static void check_window(struct model *m, const struct xp_state *st, int64_t a, int64_t b,
			 int64_t now)
{
	json_t *rep = xp_meter_report(st, XP_METER_JOB, a, b, now, -1);
	json_t *rows = json_object_get(rep, "rows"), *r;
	size_t i, matched = 0;
	json_int_t sum = 0;
	json_array_foreach(rows, i, r)
	{
		uint64_t job = (uint64_t)json_integer_value(json_object_get(r, "job"));
		double cores = 0, gib = 0, kwh = 0, a100 = 0, v100 = 0, cost = 0;
		int nruns = 0;
		for (size_t k = 0; k < m->runs.n; k++) {
			const struct mrun *x = &m->runs.v[k];
			int64_t s = x->start > a ? x->start : a;
			int64_t e = (x->end < 0 ? now : x->end) < b ? (x->end < 0 ? now : x->end) : b;
			if (x->job != job || e <= s)
				continue;
			double h = (e - s) / 3600000.0;
			cores += x->cores * h;
			gib += x->gib * h;
			kwh += x->kw * h;
			a100 += x->a100 * h;
			v100 += x->v100 * h;
			cost += (x->cores * m->prices.cpu + x->gib * m->prices.memory + x->dev_price +
				 x->kw * m->prices.energy) *
				naive_hours(&m->prices, s, e);
			nruns++;
		}
		close_to(jreal(r, "cpu_core_hours"), cores, "cpu", job);
		close_to(jreal(r, "memory_gib_hours"), gib, "memory", job);
		close_to(jreal(r, "energy_kwh"), kwh, "energy", job);
		close_to(jreal(json_object_get(r, "device_hours"), "A100"), a100, "A100", job);
		close_to(jreal(json_object_get(r, "device_hours"), "V100"), v100, "V100", job);
		json_int_t micros = json_integer_value(json_object_get(r, "cost_micros"));
		/* each run's cost is rounded once to a micro-unit */
		if (fabs((double)micros - cost * 1e6) > nruns + 1e-9 * cost * 1e6)
			fail_msg("job %llu cost: %lld micros, model %.3f", (unsigned long long)job,
				 (long long)micros, cost * 1e6);
		sum += micros;
		matched += nruns > 0;
	}
	/* every run of the model in the window has its row */
	size_t want = 0;
	for (size_t k = 0; k < m->runs.n; k++) {
		const struct mrun *x = &m->runs.v[k];
		int64_t s = x->start > a ? x->start : a, e = x->end < 0 ? now : x->end;
		if (e > b)
			e = b;
		int first = 1;
		for (size_t q = 0; q < k; q++)
			if (m->runs.v[q].job == x->job) {
				const struct mrun *y = &m->runs.v[q];
				int64_t ys = y->start > a ? y->start : a, ye = y->end < 0 ? now : y->end;
				if ((ye > b ? b : ye) > ys)
					first = 0;
			}
		want += e > s && first;
	}
	assert_int_equal(matched, want);
	json_t *total = json_object_get(rep, "total");
	assert_int_equal(json_integer_value(json_object_get(total, "cost_micros")), sum);
	/* by tenant adds up exactly to by job */
	json_t *bt = xp_meter_report(st, XP_METER_TENANT, a, b, now, -1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(bt, "total"),
							    "cost_micros")),
			 sum);
	json_t *ct = json_object_get(json_object_get(bt, "total"), "counters");
	json_t *cj = json_object_get(total, "counters");
	assert_true(json_equal(ct, cj));
	json_decref(bt);
	json_decref(rep);
}

static void node(struct world *w, const char *name, int gpus, const char *model)
{
	char doc[512];
	snprintf(doc, sizeof(doc),
		 "{\"version\":1,\"nodes\":[{\"name\":\"%s\",\"cpu\":32,\"memory\":262144,"
		 "\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"%s\","
		 "\"memory\":81920,\"count\":%d,\"tdp\":%d}]}]}",
		 name, model, gpus, tdp_of(model));
	assert_int_equal(world_apply(w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, doc)), 0);
}

static void random_run(uint64_t seed)
{
	struct world w;
	struct model m = { 0 };
	struct xp_rng g;
	struct xp_err err = { 0 };
	uint64_t counted = 0;
	world_init(&w);
	w.now = T0;
	xp_rng_seed(&g, seed);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("t1")), 0);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("t2")), 0);
	assert_int_equal(xp_prices_parse("p", good_prices, strlen(good_prices), 0, &m.prices, &err),
			 0);
	json_t *pj = xp_prices_json(&m.prices);
	assert_int_equal(world_apply(&w, "prices.set", json_dumps(pj, JSON_COMPACT)), 0);
	json_decref(pj);
	node(&w, "a0", 8, "A100");
	node(&w, "a1", 8, "A100");
	node(&w, "v0", 4, "V100");
	static const char *const devs[] = { "", ", devices: {count: 1}", ", devices: {count: 2}",
					    ", devices: {fraction: 0.25}",
					    ", devices: {count: 1, models: [V100]}" };
	char *mid = NULL;
	size_t mid_at = 0;
	for (int op = 0; op < 2500; op++) {
		uint64_t k = xp_rng_below(&g, 100);
		w.now += 1000 * (int64_t)(1 + xp_rng_below(&g, 1800)); /* up to half an hour */
		if (k < 35) {
			char y[256];
			snprintf(y, sizeof(y), "priority: %d\nreplicas: %d\nresources: {cpu: %d%s}\n",
				 (int)xp_rng_below(&g, 3), 1 + (int)(xp_rng_below(&g, 5) == 0),
				 1 + (int)xp_rng_below(&g, 8), devs[xp_rng_below(&g, 5)]);
			assert_true(world_submit(&w, xp_rng_below(&g, 2) ? "t1" : "t2", y, NULL) > 0);
		} else if (k < 60) {
			world_cycle(&w);
		} else if (k < 85 && w.st->count[XP_JOB_RUNNING]) {
			/* a running job: the first from a random place on */
			size_t at = xp_rng_below(&g, w.st->jobs.n), n = w.st->jobs.n;
			struct xp_job *j = w.st->jobs.v[at];
			for (size_t s = 0; s < n && j->state != XP_JOB_RUNNING; s++)
				j = w.st->jobs.v[(at + s) % n];
			if (j->state == XP_JOB_RUNNING)
				assert_int_equal(
					world_apply(&w, k < 75 ? "job.finish" : "job.preempt",
						    k < 75 ? xp_rec_job_finish(j->id, XP_JOB_SUCCEEDED,
									       0, NULL)
							   : xp_rec_job_requeue(j->id, "test")),
					0);
		} else if (k < 90 && w.st->jobs.n) {
			struct xp_job *j = w.st->jobs.v[xp_rng_below(&g, w.st->jobs.n)];
			if (!xp_job_terminal(j->state))
				assert_int_equal(world_apply(&w, "job.cancel",
							     xp_rec_job_cancel(j->id, NULL)),
						 0);
		} else if (w.st->jobs.n) { /* counters, on any job, finished ones too */
			struct xp_job *j = w.st->jobs.v[xp_rng_below(&g, w.st->jobs.n)];
			json_t *c = json_pack("{s:I}", xp_rng_below(&g, 2) ? "inference_requests"
									   : "training_runs",
					      (json_int_t)(1 + xp_rng_below(&g, 1000)));
			counted += (uint64_t)json_integer_value(
				json_object_iter_value(json_object_iter(c)));
			assert_int_equal(world_apply(&w, "job.counter", xp_rec_job_counter(j->id, c)),
					 0);
			json_decref(c);
		}
		observe(&m, w.st, w.now);
		if (op == 1200) {
			mid = xp_state_snapshot(w.st);
			mid_at = w.log.n;
		}
	}
	/* the workload exercised what it checks: many runs, restarts, counters */
	size_t again = 0;
	for (size_t k = 0; k < m.runs.n; k++)
		again += m.runs.v[k].attempt > 1;
	print_message("seed %llu: %zu runs, %zu restarts, %llu counted\n", (unsigned long long)seed,
		      m.runs.n, again, (unsigned long long)counted);
	assert_true(m.runs.n > 150 && again > 10 && counted > 0);
	/* windows: everything and random ones */
	check_window(&m, w.st, 0, INT64_MAX, w.now);
	for (int i = 0; i < 20; i++) {
		/* whole seconds, so the naive integration is exact */
		int64_t a = T0 + 1000 * (int64_t)xp_rng_below(&g, (uint64_t)(w.now - T0) / 1000);
		int64_t b = a + 1000 * (1 + (int64_t)xp_rng_below(&g, (uint64_t)(w.now - a) / 1000));
		check_window(&m, w.st, a, b, w.now);
	}
	/* the counters add up */
	json_t *rep = xp_meter_report(w.st, XP_METER_QUEUE, 0, INT64_MAX, w.now, -1);
	json_t *c = json_object_get(json_object_get(rep, "total"), "counters");
	assert_int_equal(json_integer_value(json_object_get(c, "inference_requests")) +
				 json_integer_value(json_object_get(c, "training_runs")),
			 (json_int_t)counted);
	/* one tenant sees only its own */
	json_t *t1 = xp_meter_report(w.st, XP_METER_JOB, 0, INT64_MAX, w.now, 0);
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(t1, "rows"), i, r)
		assert_string_equal(json_string_value(json_object_get(r, "tenant")), "t1");
	json_decref(t1);
	json_decref(rep);
	/* replay from the journal and from a snapshot rebuild the same ledger */
	char *s = xp_state_snapshot(w.st), *r1 = world_replay(&w, w.log.n, NULL, 0),
	     *r2 = world_replay(&w, w.log.n, mid, mid_at);
	assert_string_equal(s, r1);
	assert_string_equal(s, r2);
	free(s);
	free(r1);
	free(r2);
	free(mid);
	xp_vec_free(&m.runs);
	xp_vec_free(&m.seen_attempt);
	world_free(&w);
}

static void test_random_ledger(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 4; seed++)
		random_run(seed);
}

/* bad records change nothing */
static void test_bad_records(void **state)
{
	(void)state;
	struct world w;
	world_init(&w);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("t1")), 0);
	char *before = xp_state_snapshot(w.st);
	static const char *const bad[][2] = {
		{ "job.counter", "{\"id\":99,\"counters\":{\"x\":1}}" },
		{ "job.counter", "{\"id\":1,\"counters\":{}}" },
		{ "job.counter", "{\"id\":1,\"counters\":{\"Bad-Name\":1}}" },
		{ "job.counter", "{\"id\":1,\"counters\":{\"x\":0}}" },
		{ "prices.set", "{\"cpu\":\"cheap\"}" },
		{ "prices.set", "{\"devices\":{\"A100\":-1}}" },
		{ "job.energy", "{\"id\":1,\"attempt\":1}" },
		{ "job.energy", "{\"id\":7,\"attempt\":1,\"joules\":5}" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xp_err err = { 0 };
		assert_true(xp_rec_apply(w.st, 0, w.now, bad[i][0], bad[i][1], strlen(bad[i][1]),
					   NULL, &err) < 0);
		char *after = xp_state_snapshot(w.st);
		assert_string_equal(before, after);
		free(after);
	}
	free(before);
	world_free(&w);
}

/* a run's hourly rate: energy from the agents' measurement when there is
 * one (3.6 MJ over an hour is 1 kW), else from the power model */
static void test_run_rate(void **state)
{
	(void)state;
	struct xp_prices p;
	struct xp_err err = { 0 };
	const char *doc = "cpu: 1\nmemory: 0.5\nenergy: 0.25\ndevices: {A100: 3, default: 2}\n";
	assert_int_equal(xp_prices_parse("p", doc, strlen(doc), 0, &p, &err), 0);
	char *names[] = { "A100", "L4" };
	struct xp_meter_dev devs[2] = { { 0, 1000, 400 }, { 1, 500, 35 } };
	struct xp_meter_run r = { .start = 0, .end = 3600000, .cpu_milli = 2000, .mem_mib = 2048,
				  .dev0 = 0, .ndev = 2 };
	/* 2 cores + 2 GiB x 0.5 + A100 3 + half an L4 x 2 + 0.435 kW x 0.25 */
	assert_true(fabs(xp_meter_run_rate(&p, devs, names, &r) - (2 + 1 + 3 + 1 + 0.435 * 0.25)) <
		    1e-12);
	r.measured_j = 3600000;
	assert_true(fabs(xp_meter_run_rate(&p, devs, names, &r) - (2 + 1 + 3 + 1 + 1 * 0.25)) < 1e-12);
}

/* the controller's estimate of M (workload.c): shapes by replicas, the top
 * 95 %, renormalised; host memory and node pinning do not split a shape */
static void test_workload_estimate(void **state)
{
	(void)state;
	struct world w;
	struct xp_err err = { 0 };
	world_init(&w);
	assert_int_equal(world_apply(&w, "queue.create", xp_rec_queue_create("default", 0, 1)), 0);
	assert_int_equal(world_apply(&w, "tenant.create", xp_rec_tenant_create("t1")), 0);
	node(&w, "a0", 8, "A100");
	for (int i = 0; i < 60; i++) /* 60 replicas: 1 GPU, any memory */
		assert_true(world_submit(&w, "t1",
					 i % 2 ? "resources: {cpu: 2, memory: 4Gi, devices: {count: 1}}"
					       : "resources: {cpu: 2, memory: 9Gi, devices: {count: 1}}",
					 NULL) > 0);
	for (int i = 0; i < 15; i++) /* 30 replicas: gangs of 2 x half a GPU */
		assert_true(world_submit(&w, "t1",
					 "replicas: 2\nresources: {cpu: 1, devices: {fraction: 0.5}}",
					 NULL) > 0);
	for (int i = 0; i < 9; i++) /* 9 replicas: CPU only */
		assert_true(world_submit(&w, "t1", "resources: {cpu: 4}", NULL) > 0);
	/* 1 replica: a rare shape, beyond 95 % */
	assert_true(world_submit(&w, "t1", "resources: {cpu: 3, devices: {count: 3}}", NULL) > 0);
	assert_int_equal(xp_state_estimate_workload(w.st, 0, &err), 3);
	assert_int_equal(w.st->workload.n, 3);
	double p[3] = { 60 / 99.0, 30 / 99.0, 9 / 99.0 };
	for (int k = 0; k < 3; k++)
		assert_true(fabs(w.st->workload.v[k].p - p[k]) < 1e-12);
	assert_int_equal(w.st->workload.v[0].req.dev_count, 1);
	assert_int_equal(w.st->workload.v[1].req.dev_milli, 500);
	/* a window after every submission: nothing */
	assert_int_equal(xp_state_estimate_workload(w.st, w.now + 1, &err), 0);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prices_parse),
		cmocka_unit_test(test_time_of_day),
		cmocka_unit_test(test_random_ledger),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_workload_estimate),
		cmocka_unit_test(test_run_rate),
	};
	return xp_run_tests(tests, NULL, NULL);
}
