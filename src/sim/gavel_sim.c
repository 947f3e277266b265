/*
 * gavel_sim: the round mechanism of Gavel's simulator (see gavel_sim.h),
 * ported from its behaviour as PROTOCOL.md §2.2 describes it (upstream
 * `Scheduler.simulate` and `_schedule_jobs_on_workers`).
 *
 * Two timing quirks are kept on purpose, since the published tables
 * include them: a round's start is the previous round's end, so after an
 * idle gap the first round's jobs are credited the gap as time received;
 * and a job that arrives between two allocations waits for the next one
 * (at most 1920 s later) while GPUs the greedy pass reserved for it idle.
 */
#include "gavel_sim_int.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/clock.h"
#include "../lib/csv.h"
#include "../lib/parse.h"
#include "../core/model/model.h"
#include "../lib/strtab.h"
#include "../lib/xalloc.h"

/* the GPU types by index, as Gavel's files name them */
static const char *const type_names[GT] = { "v100", "p100", "k80" };

static const char *const pnames[XP_GP_COUNT] = { "fifo",      "gavel-fifo", "las",
						 "gavel-las", "xpool",	    "gavel-las-ss",
						 "mcts" };

const char *xp_gavel_policy_name(enum xp_gavel_policy p)
{
	return (unsigned)p < XP_GP_COUNT ? pnames[p] : "?";
}

int xp_gavel_policy_parse(const char *name)
{
	for (int i = 0; i < XP_GP_COUNT; i++)
		if (!strcmp(name, pnames[i]))
			return i;
	return -1;
}

void xp_gavel_power_default(struct xp_gavel_power *p)
{
	static const double tdp[GT] = { 250, 250, 150 }, idle[GT] = { 35, 30, 25 };
	for (int k = 0; k < GT; k++) {
		p->idle_w[k] = idle[k];
		p->busy_w[k] = 0.8 * tdp[k];
	}
}

void xp_gavel_cfg_default(struct xp_gavel_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->gpus[0] = c->gpus[1] = c->gpus[2] = 36;
	c->rate = 2.0;
	c->policy = XP_GP_XPOOL;
	c->win_lo = 4000;
	c->win_hi = 5000;
	c->max_active = 2000;
	c->round_s = 360;
	c->reset_s = 1920;
	c->budget = 16;
	xp_gavel_power_default(&c->power);
}

int xp_gavel_cfg_cluster(struct xp_gavel_cfg *c, const struct xp_cluster *cl, double active,
			 struct xp_err *err)
{
	int n[GT] = { 0 };
	uint32_t tdp[GT] = { 0 }, idle[GT] = { 0 };
	for (size_t i = 0; i < cl->nnodes; i++)
		for (uint16_t d = 0; d < cl->nodes[i].ndevs; d++) {
			const struct xp_device *dv = &cl->nodes[i].devs[d];
			const char *model = xp_strtab_str(cl->syms, dv->model);
			char low[64];
			size_t l = 0;
			for (; model && model[l] && l < sizeof(low) - 1; l++)
				low[l] = (char)(model[l] >= 'A' && model[l] <= 'Z' ? model[l] + 32
										   : model[l]);
			low[l] = 0;
			for (int k = 0; k < GT; k++) {
				if (!strstr(low, type_names[k]))
					continue;
				if (n[k] && (tdp[k] != dv->tdp_w || idle[k] != dv->idle_w))
					return xp_errf(err, XP_EINVAL,
						       "node %s: model %s: tdp/idle_power differ "
						       "from the model's other devices",
						       cl->nodes[i].name, model);
				if (!dv->tdp_w || dv->idle_w > dv->tdp_w)
					return xp_errf(err, XP_EINVAL,
						       "node %s: model %s: needs tdp > 0 and "
						       "idle_power <= tdp",
						       cl->nodes[i].name, model);
				tdp[k] = dv->tdp_w;
				idle[k] = dv->idle_w;
				n[k]++;
			}
		}
	if (!n[0] && !n[1] && !n[2])
		return xp_errf(err, XP_EINVAL, "cluster: no V100, P100 or K80 device");
	for (int k = 0; k < GT; k++) {
		c->gpus[k] = n[k];
		if (n[k]) {
			c->power.idle_w[k] = idle[k];
			c->power.busy_w[k] = active * tdp[k] > idle[k] ? active * tdp[k] : idle[k];
		}
	}
	return 0;
}

/* a throughput that a float holds: a larger one would become infinite */
static int tput_ok(const char *s, double *v)
{
	return xp_parse_double(s, v) == 0 && *v >= 0 && *v <= FLT_MAX;
}

/* The table of an open CSV (closed here), behind both entry points. */
static int colo_from_csv(struct xp_csv *csv, struct xp_gavel_colo *c, struct xp_err *err)
{
	static const char *const need[] = { "worker_type",    "job_a",	"scale_factor_a", "job_b",
					    "scale_factor_b", "tput_a", "tput_b" };
	const char *path = xp_csv_name(csv);
	int rc;
	memset(c, 0, sizeof(*c));
	if ((rc = xp_csv_require(csv, need, 7, err)) < 0)
		goto out;
	int col[7];
	for (int i = 0; i < 7; i++)
		col[i] = xp_csv_col(csv, need[i]);
	while ((rc = xp_csv_next(csv, err)) > 0) {
		const char *f[7];
		for (int i = 0; i < 7; i++)
			f[i] = xp_csv_field(csv, (size_t)col[i]);
		int k = 0, a = xp_gavel_template_index(f[1]), b = xp_gavel_template_index(f[3]),
		    fa = -1, fb = -1;
		int64_t sa = 0, sb = 0;
		double ta, tb;
		while (k < GT && strcmp(type_names[k], f[0]))
			k++;
		if (xp_parse_i64(f[2], 1, 8, &sa) == 0)
			fa = xp_gavel_sf_index((int)sa);
		if (xp_parse_i64(f[4], 1, 8, &sb) == 0)
			fb = xp_gavel_sf_index((int)sb);
		const char *bad =
			k == GT		     ? "worker_type: expected v100, p100 or k80"
			: a < 0		     ? "job_a: unknown template"
			: b < 0		     ? "job_b: unknown template"
			: fa < 0 || fa != fb ? "scale_factor_a/b: expected equal 1, 2, 4 or 8"
			: !tput_ok(f[5], &ta) ? "tput_a: expected a throughput 0..3.4e38"
			: !tput_ok(f[6], &tb) ? "tput_b: expected a throughput 0..3.4e38"
					      : NULL;
		if (bad) {
			rc = xp_errf(err, XP_EINVAL, "%s:%zu: %s", path, xp_csv_line(csv), bad);
			goto out;
		}
		c->tput[k][fa][a][b][0] = (float)ta;
		c->tput[k][fa][a][b][1] = (float)tb;
	}
out:
	xp_csv_close(csv);
	return rc;
}

int xp_gavel_colo_load(const char *path, struct xp_gavel_colo *c, struct xp_err *err)
{
	struct xp_csv *csv;
	int rc = xp_csv_open(path, &csv, err);
	return rc < 0 ? rc : colo_from_csv(csv, c, err);
}

int xp_gavel_colo_parse(const char *name, const char *buf, size_t len, struct xp_gavel_colo *c,
			struct xp_err *err)
{
	struct xp_csv *csv;
	int rc = xp_csv_open_mem(name, buf, len, &csv, err);
	return rc < 0 ? rc : colo_from_csv(csv, c, err);
}

/* ---- the workload, generated as far as the run needs it ---- */

static void extend_trace(struct gsim *s)
{
	size_t n = s->ntrace ? s->ntrace * 2 : s->cfg->win_hi * 2 + 1000;
	free(s->trace);
	s->trace = xcalloc(n, sizeof(*s->trace));
	/* the streams are independent and sequential: a longer trace has the
	 * shorter one as its prefix */
	xp_gavel_trace(s->m, n, s->cfg->rate, s->cfg->multi_gpu, s->cfg->seed, s->trace);
	s->ntrace = n;
}

static double next_arrival(struct gsim *s)
{
	if (s->next >= s->ntrace)
		extend_trace(s);
	return s->trace[s->next].arrival_s;
}

static void add_job(struct gsim *s)
{
	const struct xp_gavel_job *tj = &s->trace[s->next++];
	struct gjob j = { 0 };
	j.tmpl = tj->template;
	j.sf = tj->sf;
	j.sfi = xp_gavel_sf_index(tj->sf);
	j.total = tj->total_steps;
	j.arrival = tj->arrival_s;
	j.finish = -1;
	j.first_run = -1;
	j.fifo_k = -1;
	j.last_k = -1;
	j.active = 1;
	for (int k = 0; k < GT; k++) {
		j.t[k] = s->m->tput[j.tmpl][j.sfi][k];
		if (j.t[k] > j.best)
			j.best = j.t[k];
		j.jt[k] = s->cfg->round_s / 2;
	}
	xp_vec_push(&s->jobs, j);
	xp_vec_push(&s->act, (int)s->jobs.n - 1);
	if (s->cfg->policy == XP_GP_LAS_SS)
		xp_gavel_ss_add(s);
	s->need_update = 1;
}

/* ---- Gavel's per-round decision ---- */

static int is_fifo(enum xp_gavel_policy p)
{
	return p == XP_GP_FIFO || p == XP_GP_FIFO_PERF;
}

/* `_reset_time_run_so_far` */
static void reset_time(struct gsim *s)
{
	double elapsed = s->now - s->last_reset, half = s->cfg->round_s / 2;
	for (int k = 0; k < GT; k++) {
		s->wt[k] = 0;
		for (size_t i = 0; i < s->act.n; i++) {
			struct gjob *j = &s->jobs.v[s->act.v[i]];
			double should = j->has_x ? j->x[k] * elapsed : 0;
			j->def[k] += should - (j->jt[k] - half);
			j->jt[k] = half;
			s->wt[k] += half;
		}
	}
	if (s->cfg->policy == XP_GP_LAS_SS)
		xp_gavel_ss_reset(s, elapsed);
	s->last_reset = s->now;
}

/* `_update_priorities` */
static void update_priorities(struct gsim *s)
{
	int elapsed = s->now - s->last_reset >= s->cfg->reset_s;
	if (s->need_update && (elapsed || s->last_reset == 0)) {
		reset_time(s);
		xp_gavel_alloc(s);
		for (size_t i = 0; i < s->act.n; i++)
			s->jobs.v[s->act.v[i]].has_x = 1;
		s->need_update = 0;
	}
	for (size_t i = 0; i < s->act.n; i++) {
		struct gjob *j = &s->jobs.v[s->act.v[i]];
		for (int k = 0; k < GT; k++) {
			double frac = s->wt[k] == 0 ? 0 : j->jt[k] / s->wt[k];
			if (!j->has_x || j->x[k] == 0 || j->t[k] == 0)
				j->pri[k] = 0;
			else
				j->pri[k] = frac > 0 ? j->x[k] / frac : j->x[k] * 1e9;
		}
	}
	if (s->cfg->policy == XP_GP_LAS_SS)
		xp_gavel_ss_priorities(s);
}

int xp_gavel_entry_cmp(const void *pa, const void *pb)
{
	const struct gentry *a = pa, *b = pb;
	/* descending by (priority, deficit, X); stable: ties keep their order */
	if (a->pri != b->pri)
		return a->pri < b->pri ? 1 : -1;
	if (a->def != b->def)
		return a->def < b->def ? 1 : -1;
	if (a->x != b->x)
		return a->x < b->x ? 1 : -1;
	return (a->pos > b->pos) - (a->pos < b->pos);
}

/* the heap below keeps the entry that sorts first at e[0] */
static void entry_sift(struct gentry *e, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, top = i;
		if (l < n && xp_gavel_entry_cmp(&e[l], &e[top]) < 0)
			top = l;
		if (l + 1 < n && xp_gavel_entry_cmp(&e[l + 1], &e[top]) < 0)
			top = l + 1;
		if (top == i)
			return;
		struct gentry t = e[i];
		e[i] = e[top];
		e[top] = t;
		i = top;
	}
}

void xp_gavel_entry_heapify(struct gentry *e, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		entry_sift(e, n, i);
}

struct gentry xp_gavel_entry_pop(struct gentry *e, size_t *n)
{
	struct gentry top = e[0];
	e[0] = e[--*n];
	entry_sift(e, *n, 0);
	return top;
}

/* `_schedule_jobs_on_workers`: the plan of the next round */
static void gavel_plan(struct gsim *s)
{
	int order[GT] = { 0, 1, 2 };
	enum xp_gavel_policy p = s->cfg->policy;
	update_priorities(s);
	if (p == XP_GP_LAS_SS) {
		xp_gavel_ss_plan(s);
		return;
	}
	if (p == XP_GP_FIFO || p == XP_GP_LAS)
		for (int i = GT - 1; i > 0; i--) {
			int r = (int)xp_pyrand_below(&s->shuffler, (uint32_t)i + 1), t = order[i];
			order[i] = order[r];
			order[r] = t;
		}
	size_t n = s->act.n;
	struct gentry *e = xcalloc(n * GT + 1, sizeof(*e));
	for (int o = 0; o < GT; o++) {
		int k = order[o];
		struct gentry *row = e + (size_t)o * n;
		for (size_t i = 0; i < n; i++) {
			const struct gjob *j = &s->jobs.v[s->act.v[i]];
			row[i] = (struct gentry){ j->pri[k], j->def[k], j->has_x ? j->x[k] : 0,
						  s->act.v[i], 0, (int)i };
		}
		qsort(row, n, sizeof(*row), xp_gavel_entry_cmp);
	}
	int left[GT];
	for (int k = 0; k < GT; k++)
		left[k] = s->cfg->gpus[k];
	unsigned char *placed = xcalloc(n + 1, 1); /* by position in act */
	for (int o = 0; o < GT; o++) {
		int k = order[o];
		for (size_t i = 0; i < n; i++) {
			const struct gentry *en = &e[(size_t)o * n + i];
			const struct gjob *j = &s->jobs.v[en->id];
			if (!left[k] || placed[en->pos] || j->t[k] <= 0)
				continue;
			if (is_fifo(p) && j->pri[k] <= 0)
				continue;
			if (j->sf > left[k])
				continue;
			left[k] -= j->sf;
			placed[en->pos] = 1;
			/* a job without an X yet holds its GPUs idle this round */
			if (j->has_x)
				xp_vec_push(&s->plan, ((struct gplace){ en->id, -1, k }));
		}
	}
	free(placed);
	free(e);
}

/* ---- running a round ---- */

struct running {
	int a, b, k;
	double steps[2], fin[2], start, end;
};

static double run_tput(const struct gsim *s, const struct gplace *pl, int which)
{
	const struct gjob *a = &s->jobs.v[pl->a];
	if (pl->b < 0)
		return a->t[pl->k];
	const struct gjob *b = &s->jobs.v[pl->b];
	const float *tp = s->cfg->colo->tput[pl->k][a->sfi][a->tmpl][b->tmpl];
	return tp[which];
}

struct runvec {
	struct running *v;
	size_t n, cap;
};

static void start_round(struct gsim *s, struct runvec *run)
{
	run->n = 0;
	for (size_t i = 0; i < s->plan.n; i++) {
		const struct gplace *pl = &s->plan.v[i];
		struct running r = { pl->a,  pl->b, pl->k, { 0, 0 }, { s->now, s->now },
				     s->now, s->now };
		for (int w = 0; w < (pl->b < 0 ? 1 : 2); w++) {
			struct gjob *j = &s->jobs.v[w ? pl->b : pl->a];
			double tp = run_tput(s, pl, w);
			if (j->first_run < 0)
				j->first_run = s->now;
			double steps = floor(tp * s->cfg->round_s), rem = j->total - j->done;
			if (steps > rem)
				steps = rem;
			r.steps[w] = steps;
			r.fin[w] = tp > 0 ? s->now + steps / tp : s->now;
			if (r.fin[w] > r.end)
				r.end = r.fin[w];
		}
		xp_vec_push(run, r);
	}
}

/* what every round's plan must hold, whatever the policy: active jobs,
 * each at most once, on a type where it runs, pairs of equal size, and no
 * type's GPUs over-committed */
static int check_plan(const struct gsim *s, struct xp_err *err)
{
	int used[GT] = { 0 };
	unsigned char *seen = xcalloc(s->jobs.n + 1, 1);
	int rc = 0;
	for (size_t i = 0; i < s->plan.n && !rc; i++) {
		const struct gplace *p = &s->plan.v[i];
		for (int w = 0; w < 2 && !rc; w++) {
			int id = w ? p->b : p->a;
			if (w && id < 0)
				break;
			const struct gjob *j =
				id >= 0 && (size_t)id < s->jobs.n ? &s->jobs.v[id] : NULL;
			if (!j || !j->active || seen[id] || j->t[p->k] <= 0 ||
			    (w && j->sf != s->jobs.v[p->a].sf) || (w && !s->cfg->colo))
				rc = xp_errf(err, XP_EINVAL,
					     "gavel: round at %.0f s: bad placement of job %d on "
					     "type %d",
					     s->now, id, p->k);
			else
				seen[id] = 1;
		}
		if (!rc && p->k >= 0 && p->k < GT)
			used[p->k] += s->jobs.v[p->a].sf;
	}
	for (int k = 0; k < GT && !rc; k++)
		if (used[k] > s->cfg->gpus[k])
			rc = xp_errf(err, XP_EINVAL,
				     "gavel: round at %.0f s: type %d over-committed", s->now, k);
	free(seen);
	return rc;
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* what the rounds add up to: when the last one started and ended, GPU
 * busy time (in all, and from the window's first arrival), the energy
 * from then, and how many of the window's jobs are done */
struct tally {
	double round_start, round_end, busy_s[GT], busy_win[GT], win_start, ebusy;
	size_t done_in_win;
};

/* The round that ran ends with its last job (or, with none running, the
 * clock goes to the next arrival); each placement's GPU time, energy and
 * progress are credited to its jobs, and those done leave */
static void end_round(struct gsim *s, const struct runvec *run, struct tally *t)
{
	const struct xp_gavel_cfg *cfg = s->cfg;
	int ss = cfg->policy == XP_GP_LAS_SS;
	if (run->n) {
		double mx = 0;
		for (size_t i = 0; i < run->n; i++)
			if (run->v[i].end > mx)
				mx = run->v[i].end;
		if (t->round_end >= 0)
			t->round_start = t->round_end;
		t->round_end = mx;
		s->now = mx;
	} else
		s->now = next_arrival(s);
	for (size_t i = 0; i < run->n; i++) {
		const struct running *r = &run->v[i];
		/* the GPUs draw busy power from the round's start until the
		 * placement's last job ends */
		double gs = (r->end - r->start) * s->jobs.v[r->a].sf;
		double wh = cfg->power.busy_w[r->k] * gs;
		t->busy_s[r->k] += gs;
		if (t->win_start >= 0 && r->start >= t->win_start) {
			t->busy_win[r->k] += gs;
			t->ebusy += wh;
		}
		/* Gavel credits a pair's time to the pair, as the longer
		 * of its two, and ends both jobs' leases at that time */
		int combo = ss && r->b >= 0;
		if (combo) {
			xp_gavel_ss_find(s, r->a, r->b)->jt[r->k] += r->end - t->round_start;
			s->wt[r->k] += r->end - t->round_start;
		}
		for (int w = 0; w < (r->b < 0 ? 1 : 2); w++) {
			struct gjob *j = &s->jobs.v[w ? r->b : r->a];
			double exec = r->fin[w] - t->round_start;
			j->done += r->steps[w];
			j->served += r->steps[w] / j->best;
			j->energy_j += r->b < 0 ? wh : wh / 2;
			if (!combo) {
				j->jt[r->k] += exec;
				s->wt[r->k] += exec;
			}
			j->last_k = r->k;
			if (j->total - j->done <= 0) {
				j->finish = combo ? r->end : r->fin[w];
				j->active = 0;
				s->need_update = 1;
				if (xp_gavel_is_xpool(cfg->policy))
					xp_gittins_finished(&s->git, j->served * j->sf);
				size_t id = (size_t)(j - s->jobs.v);
				if (id >= cfg->win_lo && id < cfg->win_hi)
					t->done_in_win++;
			}
		}
	}
}

/* The active list without the finished jobs, then the arrivals up to now
 * (the window's first marks its start): 1 when more are active than
 * cfg->max_active (saturated), else 0 */
static int admit(struct gsim *s, struct tally *t)
{
	size_t w = 0;
	for (size_t i = 0; i < s->act.n; i++)
		if (s->jobs.v[s->act.v[i]].active)
			s->act.v[w++] = s->act.v[i];
	s->act.n = w;
	if (s->cfg->policy == XP_GP_LAS_SS)
		xp_gavel_ss_drop(s);
	while (next_arrival(s) <= s->now) {
		if (s->next == s->cfg->win_lo)
			t->win_start = s->trace[s->next].arrival_s;
		add_job(s);
	}
	return s->act.n > s->cfg->max_active;
}

/* the window's JCTs, finish-time fairness, energy, utilisation and idle
 * energy into res */
static void results(const struct gsim *s, const struct tally *t, struct xp_gavel_result *res)
{
	const struct xp_gavel_cfg *cfg = s->cfg;
	size_t nwin = cfg->win_hi - cfg->win_lo;
	double *jct = xcalloc(nwin + 1, sizeof(*jct)), sum = 0, ftf = 0, ftfmax = 0, kwh = 0;
	double queue = 0;
	double end = 0;
	size_t n = 0;
	for (size_t id = cfg->win_lo; id < cfg->win_hi; id++)
		if (cfg->finish)
			cfg->finish[id - cfg->win_lo] = id < s->jobs.n ? s->jobs.v[id].finish : -1;
	for (size_t id = cfg->win_lo; id < cfg->win_hi && id < s->jobs.n; id++) {
		const struct gjob *j = &s->jobs.v[id];
		if (j->finish < 0)
			continue;
		double c = j->finish - j->arrival, alone = j->total / j->best;
		jct[n++] = c;
		sum += c;
		queue += j->first_run - j->arrival;
		ftf += c / alone;
		if (c / alone > ftfmax)
			ftfmax = c / alone;
		if (c - alone > res->excess_max_s)
			res->excess_max_s = c - alone;
		kwh += j->energy_j / 3.6e6;
		if (j->finish > end)
			end = j->finish;
	}
	res->jobs = n;
	if (n) {
		res->avg_jct_h = sum / (double)n / 3600;
		res->avg_queue_h = queue / (double)n / 3600;
		qsort(jct, n, sizeof(*jct), dbl_cmp);
		res->p50_jct_h = jct[n / 2] / 3600;
		res->p99_jct_h = jct[(size_t)ceil(0.99 * (double)n) - 1] / 3600;
		res->ftf_mean = ftf / (double)n;
		res->ftf_max = ftfmax;
		res->job_kwh = kwh / (double)n;
	}
	res->end_h = (n && !res->saturated ? end : s->now) / 3600;
	for (int k = 0; k < GT; k++)
		res->util[k] =
			s->now > 0 && cfg->gpus[k] ? t->busy_s[k] / (s->now * cfg->gpus[k]) : 0;
	if (t->win_start >= 0 && s->now > t->win_start) {
		double span = s->now - t->win_start, idle = 0;
		res->busy_kwh = t->ebusy / 3.6e6;
		for (int k = 0; k < GT; k++) {
			double free_s = cfg->gpus[k] * span - t->busy_win[k];
			idle += cfg->power.idle_w[k] * (free_s > 0 ? free_s : 0);
		}
		res->idle_kwh = idle / 3.6e6;
	}
	free(jct);
}

int xp_gavel_simulate(const struct xp_gavel_matrix *m, const struct xp_gavel_cfg *cfg,
		      struct xp_gavel_result *res, struct xp_err *err)
{
	if (cfg->win_hi <= cfg->win_lo || !(cfg->rate > 0) || !(cfg->round_s > 0))
		return xp_errf(err, XP_EINVAL, "gavel: window, rate and round must be positive");
	if (cfg->policy == XP_GP_LAS_SS && !cfg->colo)
		return xp_errf(err, XP_EINVAL, "gavel: gavel-las-ss needs the co-location table");
	struct gsim s = { 0 };
	s.m = m;
	s.cfg = cfg;
	xp_pyrand_seed(&s.shuffler, (uint64_t)cfg->seed + 5);
	xp_pyrand_seed(&s.fifo_rng, cfg->seed);
	/* xpool's learned sizes: 1 s to 10^9 s in 5 % steps */
	if (xp_gavel_is_xpool(cfg->policy))
		xp_gittins_init(&s.git, 1, 1e9, 48);
	memset(res, 0, sizeof(*res));
	struct runvec run = { 0 };
	int rc = 0;
	XP_VEC(double) dec = { 0 };
	struct tally t = { .round_end = -1, .win_start = -1 };
	s.now = 0;
	for (;;) {
		end_round(&s, &run, &t);
		if (t.done_in_win == cfg->win_hi - cfg->win_lo)
			break;
		if (admit(&s, &t)) {
			res->saturated = 1;
			break;
		}
		s.plan.n = 0;
		uint64_t t0 = xp_thread_cpu_ns();
		if (cfg->policy == XP_GP_XPOOL)
			xp_gavel_xpool_plan(&s);
		else if (cfg->policy == XP_GP_MCTS)
			xp_gavel_mcts_plan(&s);
		else
			gavel_plan(&s);
		xp_vec_push(&dec, (double)(xp_thread_cpu_ns() - t0) / 1e6);
		if (cfg->check && check_plan(&s, err) < 0) {
			rc = -1;
			break;
		}
		start_round(&s, &run);
		res->rounds++;
	}
	results(&s, &t, res);
	res->decision_ms = median(dec.v, dec.n);
	xp_vec_free(&run);
	xp_vec_free(&dec);
	xp_vec_free(&s.jobs);
	xp_vec_free(&s.act);
	xp_vec_free(&s.plan);
	xp_vec_free(&s.pairs);
	xp_vec_free(&s.fifo_alloc);
	xp_gittins_free(&s.git);
	free(s.trace);
	return rc;
}
