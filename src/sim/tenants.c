/*
 * tenants: the multi-tenant simulator (see tenants.h).
 *
 * The trace (seeded, generated here):
 *   - tenant i of n has share (n - i) / (1 + ... + n) of the jobs and of
 *     the GPUs (its guarantee in the xpool and noborrow set-ups); its
 *     arrivals follow a rate 1 + 0.9 sin(2 pi t / P + 2 pi i / n) over two
 *     periods P of the span, so the tenants' peaks do not coincide;
 *   - 30 % training: 1, 2 or 4 replicas (p .5/.3/.2) of 8 GPUs, 32 cores,
 *     256 GiB each, a gang; lognormal duration, median 2 h, sigma 0.8, at
 *     most 24 h; priority 5;
 *   - 20 % inference: one GPU (half of one, p .5), 4 cores, 16 GiB; 4-12 h;
 *     priority 10;
 *   - 50 % batch: 1 or 2 GPUs, 8 cores, 32 GiB; lognormal, median 15 min,
 *     sigma 1, at most 6 h; priority 0;
 *   - every job declares a time limit of 1.5 x its duration (backfill reads
 *     it) and runs for its duration;
 *   - the span is chosen so that the offered GPU-time is `load` x the
 *     cluster's over it.
 * The clock jumps from event to event (arrival, completion), rounded up to
 * the tick; at each step the arrivals are submitted, the completions
 * finished, then the cycle runs until it has nothing more to do. All
 * through journal records applied with xp_rec_apply(), as the
 * controller does.
 */
#include "tenants.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/sched/policy.h"
#include "../core/state/state.h"
#include "../edge/edge.h"
#include "../lib/clock.h"
#include "../lib/dueheap.h"
#include "../lib/parse.h"
#include "../lib/rng.h"
#include "../lib/xalloc.h"
#include "svg.h"

#define T0 1000000000000LL /* the simulated epoch, ms */

static const char *const mode_names[XP_TSIM_NMODES] = { "xpool", "noborrow", "fifo" };

const char *xp_tsim_mode_name(int m)
{
	return xp_enum_name(mode_names, XP_TSIM_NMODES, m);
}

int xp_tsim_mode_parse(const char *s)
{
	return xp_enum_parse(mode_names, XP_TSIM_NMODES, s);
}

void xp_tsim_defaults(struct xp_tsim_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->nodes = 10000;
	o->jobs = 100000;
	o->tenants = 4;
	o->seed = 1;
	o->load = 0.9;
	o->tick_ms = 60000;
	o->policy = "bestfit";
	o->budget = XP_BATCH_BUDGET_DEFAULT;
	o->frag_ms = 600000;
}

struct sim {
	const struct xp_tsim_opts *o;
	struct xp_state *st;
	struct xp_tsim_job *j;
	uint64_t base; /* job id of j[0] */
	uint64_t seq;
	int64_t now;
	struct xp_dueheap heap; /* completions */
	uint64_t preemptions;
	struct xp_err err;
	int failed;
};

static double lognormal(struct xp_rng *g, double median, double sigma)
{
	double u1 = xp_rng_double(g), u2 = xp_rng_double(g);
	if (u1 < 1e-12)
		u1 = 1e-12;
	double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
	return median * exp(sigma * z);
}

int xp_tsim_kind(const struct xp_tsim_job *x)
{
	return x->prio == 0 ? XP_TSIM_BATCH : x->prio == 5 ? XP_TSIM_TRAIN : XP_TSIM_INFER;
}

void xp_tsim_gen(const struct xp_tsim_opts *o, double gpus, struct xp_tsim_job *j, double *span_h)
{
	struct xp_rng g;
	double wsum = 0, gpu_ms = 0;
	xp_rng_seed(&g, o->seed);
	for (uint32_t i = 0; i < o->tenants; i++)
		wsum += o->tenants - i;
	for (uint32_t k = 0; k < o->jobs; k++) {
		struct xp_tsim_job *x = &j[k];
		double u = xp_rng_double(&g) * wsum, acc = 0;
		x->tenant = 0;
		for (uint32_t i = 0; i < o->tenants; i++) {
			acc += o->tenants - i;
			if (u < acc) {
				x->tenant = i;
				break;
			}
		}
		double kind = xp_rng_double(&g), h;
		if (kind < 0.3) { /* training */
			double r = xp_rng_double(&g);
			x->replicas = r < 0.5 ? 1 : r < 0.8 ? 2 : 4;
			x->gpus = 8;
			x->milli = 1000;
			x->cpu = 32;
			x->mem_gib = 256;
			x->prio = 5;
			h = fmin(lognormal(&g, 2, 0.8), 24);
		} else if (kind < 0.5) { /* inference */
			x->replicas = 1;
			x->gpus = 1;
			x->milli = xp_rng_below(&g, 2) ? 500 : 1000;
			x->cpu = 4;
			x->mem_gib = 16;
			x->prio = 10;
			h = 4 + 8 * xp_rng_double(&g);
		} else { /* batch */
			x->replicas = 1;
			x->gpus = (uint16_t)(1 + xp_rng_below(&g, 2));
			x->milli = 1000;
			x->cpu = 8;
			x->mem_gib = 32;
			x->prio = 0;
			h = fmin(lognormal(&g, 0.25, 1), 6);
		}
		x->dur = (int64_t)(h * 3600000) + 1000;
		x->first_start = -1;
		gpu_ms += (double)x->dur * x->replicas * x->gpus * x->milli / 1000.0;
	}
	/* the span that makes the offered load o->load */
	double span = gpu_ms / (o->load * gpus);
	*span_h = span / 3600000;
	/* arrivals: per tenant a phase-shifted rate, by thinning, then sorted */
	for (uint32_t k = 0; k < o->jobs; k++) {
		struct xp_tsim_job *x = &j[k];
		double phase = 2 * M_PI * x->tenant / o->tenants, t;
		do {
			t = xp_rng_double(&g) * span;
		} while (xp_rng_double(&g) * 1.9 > 1 + 0.9 * sin(4 * M_PI * t / span + phase));
		x->arrive = (int64_t)t;
	}
}

static int cmp_arrive(const void *a, const void *b)
{
	const struct xp_tsim_job *x = a, *y = b;
	return x->arrive < y->arrive ? -1 : x->arrive > y->arrive;
}

static int apply(struct sim *s, int64_t at, const char *type, char *body)
{
	if (!body)
		return xp_errf(&s->err, XP_EINTERNAL, "%s: no record", type);
	int rc = xp_rec_apply(s->st, ++s->seq, at, type, body, strlen(body), NULL, &s->err);
	free(body);
	if (rc < 0)
		s->failed = 1;
	return rc;
}

static int emit(void *ctx, const struct xp_rec *r)
{
	struct sim *s = ctx;
	const char *type = xp_rec_type_name(r->type);
	int rc = apply(s, s->now, type, xp_rec_encode(r));
	if (rc < 0)
		return rc;
	if (!strcmp(type, "job.preempt"))
		s->preemptions++;
	return 0;
}

static void start_seen(struct sim *s, struct xp_job *job)
{
	struct xp_tsim_job *x = &s->j[job->id - s->base];
	if (x->first_start < 0)
		x->first_start = job->started_at;
	struct xp_due e = { job->started_at + x->dur, job->id, job->attempts };
	xp_due_push(&s->heap, e);
}

static char *queue_doc(const struct xp_tsim_opts *o, uint32_t i, double share, int64_t gpus)
{
	char buf[512], aging[48] = "";
	int64_t g = (int64_t)(share * gpus * 1000); /* milli */
	if (o->aging_ms)
		snprintf(aging, sizeof(aging), "\"aging\":\"%lldms\",", (long long)o->aging_ms);
	if (o->mode == XP_TSIM_XPOOL)
		snprintf(buf, sizeof(buf),
			 "{\"name\":\"t%u\",\"weight\":%u,%s\"preempt\":\"reclaim\",\"quota\":"
			 "{\"gpu\":{\"guarantee\":\"%lldm\"}}}",
			 i, o->tenants - i, aging, (long long)g);
	else
		snprintf(buf, sizeof(buf),
			 "{\"name\":\"t%u\",\"weight\":%u,%s\"preempt\":\"never\",\"quota\":"
			 "{\"gpu\":{\"guarantee\":\"%lldm\",\"max\":\"%lldm\"}}}",
			 i, o->tenants - i, aging, (long long)g, (long long)g);
	return xstrdup(buf);
}

static int setup(struct sim *s, double *share)
{
	const struct xp_tsim_opts *o = s->o;
	char name[32], doc[512];
	struct xp_queuespec q;
	if (apply(s, T0, "queue.create", xp_rec_queue_create("default", 0, 1)) < 0)
		return -1;
	for (uint32_t i = 0; i < o->tenants; i++) {
		snprintf(name, sizeof(name), "t%u", i);
		if (apply(s, T0, "tenant.create", xp_rec_tenant_create(name)) < 0)
			return -1;
		if (o->mode == XP_TSIM_FIFO)
			continue;
		char *d = queue_doc(o, i, share[i], 8LL * o->nodes);
		int rc = xp_queuespec_parse_text("sim", d, strlen(d), 1, 1, &q, NULL, &s->err);
		free(d);
		if (rc < 0 || apply(s, T0, "queue.create", xp_rec_queue_define(&q)) < 0)
			return -1;
	}
	for (uint32_t n = 0; n < o->nodes; n++) {
		snprintf(doc, sizeof(doc),
			 "{\"version\":1,\"nodes\":[{\"name\":\"n%05u\",\"cpu\":64,\"memory\":"
			 "524288,"
			 "\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"A100\","
			 "\"memory\":81920,\"count\":8,\"tdp\":400,\"idle_power\":60}]}]}",
			 n);
		if (apply(s, T0, "node.add", xp_rec_node_add(XP_SRC_EMULATED, doc)) < 0)
			return -1;
	}
	return 0;
}

static int submit(struct sim *s, const struct xp_tsim_job *x)
{
	struct xp_jobspec sp;
	char tenant[32], queue[32];
	memset(&sp, 0, sizeof(sp));
	snprintf(tenant, sizeof(tenant), "t%u", x->tenant);
	snprintf(queue, sizeof(queue), "t%u", x->tenant);
	sp.queue = s->o->mode == XP_TSIM_FIFO ? NULL : queue;
	sp.priority = x->prio;
	sp.replicas = x->replicas;
	sp.cpu_milli = (uint64_t)x->cpu * 1000;
	sp.mem_mib = (uint64_t)x->mem_gib * 1024;
	sp.dev_count = x->gpus;
	sp.dev_milli = x->milli;
	sp.dev_class = XP_CLASS_GPU;
	sp.duration_ms = -1;
	sp.time_limit_ms = x->dur + x->dur / 2;
	return apply(s, x->arrive, "job.submit",
		     xp_rec_job_submit(s->st->next_job_id, tenant, NULL, &sp));
}

/* the plots of a run: usage (utilisation and fragmentation) and cost (or
 * GPU-hours) per tenant, hour by hour */
static int plots(struct sim *s, const struct xp_tsim_opts *o, const long *tix, const double *h,
		 const double *u, const double *f, size_t n)
{
	char path[4096], title[160];
	const char *mode = xp_tsim_mode_name(o->mode);
	struct xp_svg_series us[2] = { { "GPUs allocated (share)", h, u, n },
				       { "fragmentation F(M) / idle", h, f, n } };
	snprintf(path, sizeof(path), "%s/tenants-%s-usage.svg", o->plot_dir, mode);
	snprintf(title, sizeof(title), "%s: %u nodes, %u jobs, load %.2f, seed %llu", mode, o->nodes,
		 o->jobs, o->load, (unsigned long long)o->seed);
	int rc = xp_svg_lines(path, title, "hours", "share of the GPUs", us, 2, &s->err);
	size_t hours = (size_t)((s->now - T0) / 3600000) + 1;
	double *x = XNEWV(double, hours), *cost = XNEWV(double, hours * o->tenants),
	       *util = XNEWV(double, hours);
	struct xp_svg_series cs[XP_TSIM_MAX_TENANTS];
	char names[XP_TSIM_MAX_TENANTS][16];
	for (size_t k = 0; k < hours; k++)
		x[k] = (double)k;
	for (uint32_t i = 0; i < o->tenants && rc == 0; i++) {
		xp_meter_series(s->st, tix[i], T0, hours, s->now, cost + i * hours, util);
		snprintf(names[i], sizeof(names[i]), "t%u", i);
		cs[i] = (struct xp_svg_series){ names[i], x, cost + i * hours, hours };
	}
	int priced = s->st->meter.prices.set;
	snprintf(path, sizeof(path), "%s/tenants-%s-cost.svg", o->plot_dir, mode);
	if (rc == 0)
		rc = xp_svg_lines(path, title, "hours",
				  priced ? "cost per hour" : "GPU-hours per hour", cs, o->tenants,
				  &s->err);
	free(x);
	free(cost);
	free(util);
	return rc;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* what a run accumulates between its steps: the integrals over time of
 * utilisation and fairness, and the plots' points */
struct tally {
	double gpus, share[XP_TSIM_MAX_TENANTS];
	long tix[XP_TSIM_MAX_TENANTS]; /* each tenant's index in the state */
	double used_int, wait_time, used_wait, jain_int, jain_time, last_used, last_jain;
	int last_contended;
	int64_t last_t, next_m; /* the last step; when to estimate M again */
	int needs_m;		/* the policy reads M (and fm is sampled anyway) */
	int64_t next_frag;	/* the next fragmentation sample: not before */
	double frag_str, frag_str_cap, frag_fm, frag_free;
	uint64_t frag_n;
	XP_VEC(double) ph, pu, pf; /* plots: hours, utilisation, frag */
};

/* the state, the trace, the cluster, the prices and the tenants' shares;
 * < 0 with s->st NULL when the state could not be made */
static int start_run(struct sim *s, struct tally *a, struct xp_tsim_result *r, struct xp_err *err)
{
	const struct xp_tsim_opts *o = s->o;
	struct xp_state_opts so = { .policy = o->policy,
				    .fifo = o->mode == XP_TSIM_FIFO,
				    .batch = { .budget = o->budget },
				    .docs = &xp_edge_docs };
	const struct xp_policy_ops *pol = xp_policy_find(o->policy);
	double wsum = 0;
	s->st = xp_state_create(&so, err);
	if (!s->st)
		return err ? err->code : XP_EINVAL;
	for (uint32_t i = 0; i < o->tenants; i++)
		wsum += o->tenants - i;
	for (uint32_t i = 0; i < o->tenants; i++)
		a->share[i] = (o->tenants - i) / wsum;
	s->j = XNEWV(struct xp_tsim_job, o->jobs);
	xp_tsim_gen(o, 8.0 * o->nodes, s->j, &r->span_h);
	qsort(s->j, o->jobs, sizeof(*s->j), cmp_arrive);
	for (uint32_t k = 0; k < o->jobs; k++)
		s->j[k].arrive += T0;
	int rc = setup(s, a->share);
	if (rc == 0 && o->prices) {
		struct xp_prices p;
		if ((rc = xp_prices_parse("--prices", o->prices, strlen(o->prices), -1, &p,
					    &s->err)) == 0) {
			json_t *pj = xp_prices_json(&p);
			rc = apply(s, T0, "prices.set", json_dumps(pj, JSON_COMPACT));
			json_decref(pj);
		}
	}
	s->base = s->st->next_job_id;
	for (uint32_t i = 0; i < o->tenants; i++) {
		char name[32];
		snprintf(name, sizeof(name), "t%u", i);
		a->tix[i] = rc == 0 ? xp_state_tenant(s->st, name) : 0;
	}
	a->gpus = 8.0 * o->nodes;
	a->next_m = a->last_t = a->next_frag = T0;
	a->needs_m = pol && (pol->flags & XP_POLICY_NEEDS_WORKLOAD);
	return rc;
}

/* what held from the last step until t: utilisation over the span load is
 * offered in, and while jobs wait, utilisation and Jain's index */
static void hold_until(struct tally *a, const struct xp_tsim_result *r, int64_t t)
{
	double dt = (double)(t - a->last_t);
	int64_t span_end = T0 + (int64_t)(r->span_h * 3600000);
	if (a->last_t < span_end)
		a->used_int += a->last_used * (double)((t < span_end ? t : span_end) - a->last_t);
	if (a->last_contended) {
		a->wait_time += dt;
		a->used_wait += a->last_used * dt;
		a->jain_int += a->last_jain * dt;
		a->jain_time += dt;
	}
	a->last_t = t;
}

/* the step at t: the arrivals submitted, the completions finished, then
 * the cycle until it has nothing more to do */
static int step(struct sim *s, int64_t t, uint32_t *ai, struct xp_rng *rng,
		struct xp_tsim_result *r)
{
	const struct xp_tsim_opts *o = s->o;
	int rc = 0;
	while (rc == 0 && *ai < o->jobs && s->j[*ai].arrive <= t)
		rc = submit(s, &s->j[(*ai)++]);
	while (rc == 0 && xp_due_ready(&s->heap, t)) {
		struct xp_due e = xp_due_pop(&s->heap);
		struct xp_job *jb = xp_state_job(s->st, e.job);
		if (!jb || jb->state != XP_JOB_RUNNING || jb->attempts != e.attempt)
			continue; /* preempted meanwhile: that attempt is gone */
		rc = apply(s, e.due, "job.finish",
			   xp_rec_job_finish(e.job, XP_JOB_SUCCEEDED, 0, NULL));
	}
	uint64_t placed0 = s->st->placed;
	for (int k = 0; rc == 0 && k < 100000 && xp_state_cycle_more(s->st); k++) {
		long n = xp_state_cycle(s->st, t, 1u << 30, rng, emit, s);
		if (n < 0)
			rc = (int)n;
		r->cycles++;
	}
	if (rc == 0 && o->check && (rc = xp_state_check(s->st, &s->err)) < 0)
		s->failed = 1;
	/* the starts of this step */
	if (s->st->placed != placed0)
		for (size_t i = 0; i < s->st->jobs.n; i++) {
			struct xp_job *jb = s->st->jobs.v[i];
			if (jb->state == XP_JOB_RUNNING && jb->started_at == t)
				start_seen(s, jb);
		}
	return rc;
}

/* the smallest pending replica (fewest GPU milli, then CPU), 0 when none */
static const struct xp_request *smallest_pending(const struct xp_state *st)
{
	const struct xp_request *best = NULL;
	uint64_t bd = 0;
	for (size_t i = 0; i < st->pending.n; i++) {
		const struct xp_job *j = st->pending.v[i];
		if (j->state != XP_JOB_PENDING)
			continue;
		uint64_t d = (uint64_t)j->req.dev_count * j->req.dev_milli;
		if (!best || d < bd || (d == bd && j->req.cpu_milli < best->cpu_milli)) {
			best = &j->req;
			bd = d;
		}
	}
	return best;
}

/* one fragmentation sample (xp_tsim_result): used GPUs now */
static void frag_sample(struct sim *s, struct tally *a, double used)
{
	const struct xp_state *st = s->st;
	const struct xp_sched *sc = st->sched;
	const struct xp_request *r = smallest_pending(st);
	double free_m = 0, stranded = 0;
	if (!r)
		return;
	for (uint32_t n = 0; n < st->c->nnodes; n++) {
		const struct xp_node *nd = &st->c->nodes[n];
		uint64_t node_free = 0;
		uint32_t fit = 0;
		for (uint16_t d = 0; d < nd->ndevs; d++) {
			uint16_t f = xp_sched_dev_free_milli(sc, n, d);
			node_free += f;
			fit += f && f >= r->dev_milli;
		}
		free_m += (double)node_free;
		if (node_free && (fit < r->dev_count ||
				  xp_sched_node_cpu_left(sc, n) < (int64_t)r->cpu_milli ||
				  xp_sched_node_mem_free(sc, n) < (int64_t)r->mem_mib))
			stranded += (double)node_free;
	}
	double idle = (a->gpus - used) * 1000.0;
	a->frag_n++;
	a->frag_free += free_m / (a->gpus * 1000.0);
	if (free_m > 0) {
		a->frag_str += stranded / free_m;
		a->frag_fm += idle > 0 ? xp_sched_frag(sc) / idle : 0;
	}
	a->frag_str_cap += stranded / (a->gpus * 1000.0);
}

/* the state after the step at t, held until the next: GPUs used, whether
 * tenants contend, Jain's index over those that wait (usage / share), and
 * the plots' points */
static void measure(struct sim *s, struct tally *a, int64_t t, int rc)
{
	const struct xp_tsim_opts *o = s->o;
	uint8_t demand[XP_TSIM_MAX_TENANTS + 1] = { 0 }; /* who has pending jobs */
	for (size_t i = 0; i < s->st->jobs.n; i++) {
		struct xp_job *jb = s->st->jobs.v[i];
		if (jb->state == XP_JOB_PENDING) /* it wants more than it has */
			for (uint32_t k = 0; k < o->tenants; k++)
				demand[k] |= (long)jb->tenant == a->tix[k];
	}
	double used = 0, sx = 0, sx2 = 0;
	int nd = 0, pending = s->st->count[XP_JOB_PENDING] != 0;
	for (uint32_t i = 0; i < o->tenants; i++)
		used += (double)s->st->tenants.v[a->tix[i]].usage[XP_RES_DEV + XP_CLASS_GPU] /
			1000.0;
	if (pending) {
		for (uint32_t i = 0; i < o->tenants; i++)
			if (demand[i]) {
				double x = (double)s->st->tenants.v[a->tix[i]]
						   .usage[XP_RES_DEV + XP_CLASS_GPU] /
					   1000.0 / (a->share[i] * a->gpus);
				sx += x;
				sx2 += x * x;
				nd++;
			}
	}
	if (rc == 0 && t >= a->next_m) { /* M from the last day's jobs, as the controller */
		struct xp_err e2 = { 0 };
		xp_state_estimate_workload(s->st, t - 86400000LL, &e2);
		a->next_m = t + 3600000;
	}
	if (rc == 0 && pending && t >= a->next_frag && !s->st->sched_stale) {
		frag_sample(s, a, used);
		a->next_frag = t + o->frag_ms;
	}
	if (o->plot_dir && rc == 0) {
		double idle = a->gpus - used;
		xp_vec_push(&a->ph, (double)(t - T0) / 3600000.0);
		xp_vec_push(&a->pu, used / a->gpus);
		xp_vec_push(&a->pf, idle > 0 && !s->st->sched_stale
					    ? xp_sched_frag(s->st->sched) / (idle * 1000.0)
					    : 0);
	}
	a->last_used = used;
	a->last_contended = pending && nd > 1;
	a->last_jain = sx2 > 0 ? sx * sx / (nd * sx2) : 1;
}

/* per tenant, then per job kind (batch 0, training 5, inference 10): jobs,
 * GPU-hours, and the waits of those that started */
static void tally_waits(const struct sim *s, const struct tally *a, struct xp_tsim_result *r)
{
	const struct xp_tsim_opts *o = s->o;
	double *w = XNEWV(double, o->jobs);
	for (uint32_t i = 0; i < o->tenants + XP_TSIM_NKINDS + 1; i++) {
		int by_kind = i >= o->tenants, every = i == o->tenants + XP_TSIM_NKINDS;
		uint32_t kind = i - o->tenants;
		struct xp_tsim_tenant *tt = every ? &r->all : by_kind ? &r->kind[kind] : &r->t[i];
		size_t n = 0;
		double sum = 0;
		tt->share = by_kind ? 0 : a->share[i];
		for (uint32_t k = 0; k < o->jobs; k++) {
			const struct xp_tsim_job *x = &s->j[k];
			int kx = xp_tsim_kind(x);
			if (!every && (by_kind ? kx != (int)kind : x->tenant != i))
				continue;
			tt->jobs++;
			tt->gpu_hours += (double)x->dur * x->replicas * x->gpus * x->milli /
					 1000.0 / 3600000.0 * (x->first_start >= 0);
			if (x->first_start < 0)
				continue;
			w[n] = (double)(x->first_start - x->arrive) / 1000.0;
			sum += w[n++];
		}
		tt->started = n;
		if (!by_kind)
			r->unstarted += tt->jobs - n;
		if (n) {
			qsort(w, n, sizeof(*w), cmp_d);
			tt->wait_p50_s = w[n / 2];
			tt->wait_p95_s = w[(size_t)(0.95 * (double)(n - 1))];
			tt->wait_p99_s = w[(size_t)(0.99 * (double)(n - 1))];
			tt->wait_mean_s = sum / (double)n;
		}
	}
	free(w);
}

int xp_tsim_run(const struct xp_tsim_opts *o, struct xp_tsim_result *r, struct xp_err *err)
{
	struct sim s;
	struct tally a;
	uint64_t t_start = xp_mono_ns();

	if (o->tenants < 2 || o->tenants > XP_TSIM_MAX_TENANTS || o->nodes < 1 || o->jobs < 1 ||
	    o->mode < 0 || o->mode >= XP_TSIM_NMODES || o->load <= 0 || o->tick_ms < 1)
		return xp_errf(err, XP_EINVAL, "tenants 2..%d, nodes and jobs >= 1, load > 0",
			       XP_TSIM_MAX_TENANTS);
	memset(r, 0, sizeof(*r));
	memset(&s, 0, sizeof(s));
	memset(&a, 0, sizeof(a));
	s.o = o;
	int rc = start_run(&s, &a, r, err);
	if (!s.st)
		return rc;
	uint32_t ai = 0;
	struct xp_rng rng;
	xp_rng_seed(&rng, o->seed);
	while (rc == 0 && (ai < o->jobs || s.heap.h.n)) {
		int64_t next = ai < o->jobs ? s.j[ai].arrive : INT64_MAX;
		if (s.heap.h.n && s.heap.h.v[0].due < next)
			next = s.heap.h.v[0].due;
		int64_t t = T0 + ((next - T0 + o->tick_ms - 1) / o->tick_ms) * o->tick_ms;
		hold_until(&a, r, t);
		s.now = t;
		rc = step(&s, t, &ai, &rng, r);
		measure(&s, &a, t, rc);
	}
	if (rc < 0 || s.failed) {
		if (err)
			*err = s.err;
		rc = rc < 0 ? rc : XP_EINTERNAL;
	}
	double makespan = (double)(a.last_t - T0);
	r->tenants = o->tenants;
	r->util = r->span_h > 0 ? a.used_int / (a.gpus * r->span_h * 3600000) : 0;
	r->util_waiting = a.wait_time > 0 ? a.used_wait / (a.gpus * a.wait_time) : 0;
	r->jain = a.jain_time > 0 ? a.jain_int / a.jain_time : 1;
	r->preemptions = s.preemptions;
	r->makespan_h = makespan / 3600000;
	r->frag_samples = a.frag_n;
	if (a.frag_n) {
		r->frag_stranded = a.frag_str / (double)a.frag_n;
		r->frag_stranded_cap = a.frag_str_cap / (double)a.frag_n;
		r->frag_fm = a.frag_fm / (double)a.frag_n;
		r->free_share = a.frag_free / (double)a.frag_n;
	}
	r->batches = s.st->batch.batches;
	r->rollouts = s.st->batch.rollouts;
	r->searched = s.st->batch.searched;
	tally_waits(&s, &a, r);
	free(s.j);
	xp_due_free(&s.heap);
	if (rc == 0 && o->plot_dir)
		rc = plots(&s, o, a.tix, a.ph.v, a.pu.v, a.pf.v, a.ph.n);
	xp_vec_free(&a.ph);
	xp_vec_free(&a.pu);
	xp_vec_free(&a.pf);
	if (rc == 0 && (o->prices || o->report_cost)) {
		json_t *rep = xp_meter_report(s.st, XP_METER_TENANT, T0, s.now + 1, s.now, -1);
		r->cost = json_dumps(rep, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(rep);
	}
	xp_state_destroy(s.st);
	r->wall_s = (double)(xp_mono_ns() - t_start) / 1e9;
	return rc;
}
