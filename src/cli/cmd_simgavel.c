/*
 * cmd_simgavel: `xpool sim gavel` - Gavel's round-based simulator on its
 * synthetic workload (src/sim/gavel_sim.h): policies x rates x seeds, run
 * on worker threads, one CSV row per run (PROTOCOL.md §5.7's columns) or a
 * table of means +- sd over the seeds.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../lib/parse.h"
#include "../lib/xalloc.h"
#include "../core/model/model.h"
#include "../descriptor/descriptor.h"
#include "../sim/gavel_sim.h"
#include "../sim/svg.h"
#include "cli.h"
#include "flags.h"

struct run {
	struct xp_gavel_cfg cfg;
	struct xp_gavel_result res;
	int rc;
	struct xp_err err;
};

struct pool {
	const struct xp_gavel_matrix *m;
	struct run *runs;
	size_t n, next;
	pthread_mutex_t mu;
};

static void *worker(void *arg)
{
	struct pool *p = arg;
	for (;;) {
		pthread_mutex_lock(&p->mu);
		size_t i = p->next++;
		pthread_mutex_unlock(&p->mu);
		if (i >= p->n)
			return NULL;
		struct run *r = &p->runs[i];
		r->rc = xp_gavel_simulate(p->m, &r->cfg, &r->res, &r->err);
	}
}

static void summary(const struct run *runs, size_t nruns, size_t nseeds)
{
	printf("%-11s %4s %6s %5s %14s %9s %14s %7s %7s %9s %9s %8s\n", "policy", "ew", "rate",
	       "seeds", "avg JCT h", "queue h", "p99 JCT h", "FTF", "util", "kWh/job", "idle MWh",
	       "ms/round");
	for (size_t i = 0; i < nruns; i += nseeds) {
		double s = 0, ss = 0, p99 = 0, ftf = 0, u = 0, kwh = 0, idle = 0, ms = 0, qh = 0;
		size_t ok = 0;
		for (size_t q = i; q < i + nseeds; q++) {
			const struct xp_gavel_result *r = &runs[q].res;
			if (runs[q].rc < 0 || r->saturated)
				continue;
			ok++;
			s += r->avg_jct_h;
			ss += r->avg_jct_h * r->avg_jct_h;
			p99 += r->p99_jct_h;
			qh += r->avg_queue_h;
			ftf += r->ftf_mean;
			u += (r->util[0] + r->util[1] + r->util[2]) / 3;
			kwh += r->job_kwh;
			idle += r->idle_kwh / 1000;
			ms += r->decision_ms;
		}
		const struct xp_gavel_cfg *c = &runs[i].cfg;
		if (ok < nseeds) {
			printf("%-11s %4.2f %6.2f %5zu %14s\n", xp_gavel_policy_name(c->policy),
			       c->energy_weight, c->rate, nseeds, "saturated");
			continue;
		}
		double n = (double)ok, mean = s / n;
		double sd = ok > 1 ? sqrt(fmax(0, (ss - n * mean * mean) / (n - 1))) : 0;
		printf("%-11s %4.2f %6.2f %5zu %8.2f +-%4.2f %9.2f %14.2f %7.2f %6.1f%% %9.1f %9.1f "
		       "%8.3f\n",
		       xp_gavel_policy_name(c->policy), c->energy_weight, c->rate, nseeds, mean, sd,
		       qh / n, p99 / n, ftf / n, 100 * u / n, kwh / n, idle / n, ms / n);
	}
}

/* mean over the seeds of runs[i..i+nseeds); NAN if any saturated */
static double seed_mean(const struct run *runs, size_t i, size_t nseeds, int energy)
{
	double s = 0;
	for (size_t q = i; q < i + nseeds; q++) {
		const struct xp_gavel_result *r = &runs[q].res;
		if (r->saturated || !r->jobs)
			return NAN;
		s += energy ? (r->busy_kwh + r->idle_kwh) / (double)r->jobs : r->avg_jct_h;
	}
	return s / (double)nseeds;
}

/* JCT against rate, one line per policy and weight; or, with several
 * energy weights, energy per job against JCT, one line per policy and rate */
static int plot(const char *path, const struct run *runs, size_t npol, size_t new, size_t nrate,
		size_t nseeds, struct xp_err *err)
{
	int curve = new > 1;
	size_t nser = curve ? npol * nrate : npol * new, per = curve ? new : nrate;
	struct xp_svg_series *ser = xcalloc(nser, sizeof(*ser));
	double *xs = xcalloc(nser * per, sizeof(double)), *ys = xcalloc(nser * per, sizeof(double));
	char **names = xcalloc(nser, sizeof(char *));
	for (size_t p = 0; p < npol; p++)
		for (size_t e = 0; e < new; e++)
			for (size_t q = 0; q < nrate; q++) {
				size_t i = ((p * new + e) * nrate + q) * nseeds;
				size_t si = curve ? p * nrate + q : p * new + e;
				const struct xp_gavel_cfg *c = &runs[i].cfg;
				double jct = seed_mean(runs, i, nseeds, 0);
				if (isnan(jct))
					continue;
				size_t k = ser[si].n++;
				xs[si * per + k] = curve ? jct : c->rate;
				ys[si * per + k] = curve ? seed_mean(runs, i, nseeds, 1) : jct;
				if (!names[si]) {
					names[si] = xmalloc(64);
					if (curve)
						snprintf(names[si], 64, "%s at %g jobs/h",
							 xp_gavel_policy_name(c->policy), c->rate);
					else if (new > 1 || c->energy_weight > 0)
						snprintf(names[si], 64, "%s (energy %g)",
							 xp_gavel_policy_name(c->policy),
							 c->energy_weight);
					else
						snprintf(names[si], 64, "%s",
							 xp_gavel_policy_name(c->policy));
				}
			}
	for (size_t i = 0; i < nser; i++) {
		ser[i].name = names[i] ? names[i] : "?";
		ser[i].x = xs + i * per;
		ser[i].y = ys + i * per;
	}
	int rc = curve ? xp_svg_lines(path, "Energy against JCT (xpool's energy weight)",
				      "average JCT (h)", "energy per job incl. idle (kWh)", ser,
				      nser, err)
		       : xp_svg_lines(path, "Average JCT against arrival rate (Gavel's workload)",
				      "arrival rate (jobs/h)", "average JCT (h)", ser, nser, err);
	for (size_t i = 0; i < nser; i++)
		free(names[i]);
	free(names);
	free(xs);
	free(ys);
	free(ser);
	return rc;
}

/* what the flags ask for: the runs' axes, the window, the worker threads */
struct plan {
	char **pols;
	double *rv, *ew;
	uint64_t *seeds;
	size_t npol, nrate, new, nseeds;
	long lo, hi, threads;
};

static void plan_free(struct plan *pl)
{
	free(pl->rv);
	free(pl->ew);
	free(pl->seeds);
	xp_free_list(pl->pols, pl->npol);
}

/* --policy (checked against --no-share), --rates, --seeds, --window,
 * --energy-weights and --jobs, in that order */
static int parse_plan(struct xp_flag *flags, struct plan *pl, struct xp_err *err)
{
	const char *f = xp_flag_get(flags, "policy")->sval;
	pl->pols = xp_split_list(f ? f : "fifo,gavel-fifo,las,gavel-las,xpool", &pl->npol);
	for (size_t i = 0; i < pl->npol; i++)
		if (xp_gavel_policy_parse(pl->pols[i]) < 0)
			return xp_errf(err, XP_EINVAL,
				       "--policy: unknown '%s' (fifo, gavel-fifo, las, gavel-las, "
				       "xpool, gavel-las-ss, mcts)",
				       pl->pols[i]);
		else if (xp_gavel_policy_parse(pl->pols[i]) == XP_GP_LAS_SS &&
			 xp_flag_get(flags, "no-share")->bval)
			return xp_errf(
				err, XP_EINVAL,
				"--policy gavel-las-ss shares GPUs: it cannot run with --no-share");
	f = xp_flag_get(flags, "rates")->sval;
	if (xp_parse_doubles_flag("rates", f ? f : "0.4,2,4", 0.001, 1000, &pl->rv, &pl->nrate,
				  err) < 0)
		return -1;
	if ((f = xp_flag_get(flags, "seeds")->sval)) {
		if (xp_parse_seeds(f, &pl->seeds, &pl->nseeds, err) < 0)
			return -1;
	} else {
		pl->seeds = xcalloc(1, sizeof(*pl->seeds));
		pl->nseeds = 1;
	}
	int used = 0;
	pl->lo = 4000;
	pl->hi = 5000;
	pl->threads = sysconf(_SC_NPROCESSORS_ONLN);
	if ((f = xp_flag_get(flags, "window")->sval) &&
	    (sscanf(f, "%ld-%ld%n", &pl->lo, &pl->hi, &used) != 2 || f[used] || pl->lo < 0 ||
	     pl->hi <= pl->lo || pl->hi > 10000000))
		return xp_errf(err, XP_EINVAL,
			       "--window: expected LO-HI with 0 <= LO < HI, got '%s'", f);
	f = xp_flag_get(flags, "energy-weights")->sval;
	if (xp_parse_doubles_flag("energy-weights", f ? f : "0", 0, 1.5, &pl->ew, &pl->new,
				  err) < 0)
		return -1;
	if ((f = xp_flag_get(flags, "jobs")->sval) &&
	    xp_parse_int_flag("jobs", f, 1, 1024, &pl->threads, err) < 0)
		return -1;
	return 0;
}

/* the configuration every run starts from: --active, --cluster,
 * --max-active, --budget. 0, or the exit status (2) with err filled */
static int base_config(struct xp_flag *flags, struct xp_gavel_cfg *base, struct xp_err *err)
{
	const char *f;
	xp_gavel_cfg_default(base);
	double active = 0.8;
	if ((f = xp_flag_get(flags, "active")->sval) &&
	    xp_parse_double_flag("active", f, 0.01, 1, &active, err) < 0)
		return 2;
	if ((f = xp_flag_get(flags, "cluster")->sval)) {
		struct xp_cluster *cl = xp_descriptor_load_file(f, err);
		int rc = !cl || xp_gavel_cfg_cluster(base, cl, active, err) < 0;
		xp_cluster_destroy(cl);
		if (rc)
			return 2;
	} else if (xp_flag_get(flags, "active")->sval)
		for (int k = 0; k < XP_GAVEL_TYPES; k++)
			base->power.busy_w[k] *= active / 0.8;
	long maxact = 2000;
	if ((f = xp_flag_get(flags, "max-active")->sval) &&
	    xp_parse_int_flag("max-active", f, 10, 1000000, &maxact, err) < 0)
		return 2;
	base->max_active = (size_t)maxact;
	long budget = 16;
	if ((f = xp_flag_get(flags, "budget")->sval) &&
	    xp_parse_int_flag("budget", f, 0, 100000, &budget, err) < 0)
		return 2;
	base->budget = (unsigned)budget;
	return 0;
}

/* one run per policy x energy weight x rate x seed, in that order */
static struct run *plan_runs(const struct plan *pl, const struct xp_gavel_cfg *base,
			     struct xp_gavel_colo *colo, int multi_gpu, size_t *nruns)
{
	*nruns = pl->npol * pl->new * pl->nrate * pl->nseeds;
	struct run *runs = xcalloc(*nruns, sizeof(*runs));
	size_t r = 0;
	for (size_t p = 0; p < pl->npol; p++)
		for (size_t e = 0; e < pl->new; e++)
			for (size_t q = 0; q < pl->nrate; q++)
				for (size_t s = 0; s < pl->nseeds; s++, r++) {
					struct xp_gavel_cfg *c = &runs[r].cfg;
					*c = *base;
					c->policy = xp_gavel_policy_parse(pl->pols[p]);
					c->rate = pl->rv[q];
					c->seed = (unsigned)pl->seeds[s];
					c->multi_gpu = multi_gpu;
					c->win_lo = (size_t)pl->lo;
					c->win_hi = (size_t)pl->hi;
					c->colo = colo;
					c->energy_weight = pl->ew[e];
				}
	return runs;
}

/* the runs on up to `threads` workers (this thread when none starts) */
static void run_all(const struct xp_gavel_matrix *m, struct run *runs, size_t nruns,
		    long threads)
{
	struct pool pool = { m, runs, nruns, 0, PTHREAD_MUTEX_INITIALIZER };
	size_t nt = (size_t)threads < nruns ? (size_t)threads : nruns;
	pthread_t *th = xcalloc(nt, sizeof(*th));
	size_t started = 0;
	while (started < nt && pthread_create(&th[started], NULL, worker, &pool) == 0)
		started++;
	if (started == 0) /* no thread at all: this one does the work */
		worker(&pool);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
}

static void print_csv(const struct run *runs, size_t nruns)
{
	printf("policy,energy_weight,rate,seed,multi_gpu,avg_jct_h,p50_jct_h,p99_jct_h,"
	       "makespan_h,util,"
	       "ftf_mean,ftf_max,energy_kwh,idle_kwh,decision_ms,saturated,avg_queue_h\n");
	for (size_t i = 0; i < nruns; i++) {
		const struct xp_gavel_result *x = &runs[i].res;
		const struct xp_gavel_cfg *c = &runs[i].cfg;
		printf("%s,%g,%g,%u,%d,%.4f,%.4f,%.4f,%.2f,%.4f,%.4f,%.4f,%.3f,%.1f,%.4f,%"
		       "d,%.4f\n",
		       xp_gavel_policy_name(c->policy), c->energy_weight, c->rate, c->seed,
		       c->multi_gpu, x->avg_jct_h, x->p50_jct_h, x->p99_jct_h, x->end_h,
		       (x->util[0] + x->util[1] + x->util[2]) / 3, x->ftf_mean, x->ftf_max,
		       x->job_kwh, x->idle_kwh, x->decision_ms, x->saturated, x->avg_queue_h);
	}
}

int xp_verb_sim_gavel(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "policy", XP_FLAG_STR, "P[,P...]",
		  "fifo, gavel-fifo, las, gavel-las, xpool, gavel-las-ss (LAS w/ space "
		  "sharing), mcts (xpool + search) (default: all but gavel-las-ss, mcts)" },
		{ "budget", XP_FLAG_STR, "N",
		  "mcts: rollouts per round after xpool's plan, 0..100000 (default 16; 0 = "
		  "xpool)" },
		{ "rates", XP_FLAG_STR, "R[,R...]", "arrivals per hour (default 0.4,2,4)" },
		{ "seeds", XP_FLAG_STR, "LIST", "Gavel seeds, e.g. 0-2 (default 0)" },
		{ "multi-gpu", XP_FLAG_BOOL, NULL, "scale factors 1/2/4/8 (70/10/15/5 %)" },
		{ "window", XP_FLAG_STR, "LO-HI", "measured job ids, end exclusive (4000-5000)" },
		{ "cluster", XP_FLAG_STR, "FILE",
		  "descriptor: V100/P100/K80 counts and tdp/idle_power (default 36:36:36)" },
		{ "active", XP_FLAG_STR, "F", "share of TDP a running job draws (default 0.8)" },
		{ "matrix", XP_FLAG_STR, "FILE", "gavel_isolated_throughputs.csv" },
		{ "colo", XP_FLAG_STR, "FILE",
		  "gavel_colocated_throughputs.csv (xpool's and gavel-las-ss's sharing)" },
		{ "no-share", XP_FLAG_BOOL, NULL,
		  "xpool without space sharing (an error with gavel-las-ss)" },
		{ "energy-weights", XP_FLAG_STR, "W[,W...]",
		  "xpool's energy factor, each 0..1.5 (default 0)" },
		{ "plot", XP_FLAG_STR, "FILE",
		  "SVG: JCT against rate per policy, or energy against JCT for the weights" },
		{ "max-active", XP_FLAG_STR, "N",
		  "more active jobs than this = saturated, run stops (default 2000)" },
		{ "csv", XP_FLAG_BOOL, NULL, "one CSV row per run instead of the summary" },
		{ "jobs", XP_FLAG_STR, "N", "worker threads (default: online CPUs)" },
		{ NULL, 0, NULL, NULL },
	};
	struct xp_err err = { 0 };
	int help, status = 2;
	char *mdef = xp_cli_shared_path("traces/gavel/gavel_isolated_throughputs.csv");
	char *cdef = xp_cli_shared_path("traces/gavel/gavel_colocated_throughputs.csv");
	struct plan pl = { 0 };
	size_t nruns = 0;
	struct run *runs = NULL;
	static struct xp_gavel_matrix m;
	struct xp_gavel_colo *colo = NULL;
	struct xp_gavel_cfg base;
	const char *f;
	xp_flag_get(flags, "matrix")->sval = mdef;
	xp_flag_get(flags, "colo")->sval = cdef;
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0)
		goto fail;
	if (help) {
		xp_flags_usage(stdout, "xpool sim gavel [flags]",
			       "Gavel's round-based simulator (36 V100 + 36 P100 + 36 K80, 360 s\n"
			       "rounds) on its synthetic trace: average JCT of the window's jobs.",
			       flags);
		status = 0;
		goto out;
	}
	if (parse_plan(flags, &pl, &err) < 0)
		goto fail;
	if (xp_gavel_load(xp_flag_get(flags, "matrix")->sval, &m, &err) < 0) {
		status = xp_cli_fail("sim gavel", &err, 1);
		goto out;
	}
	if (!xp_flag_get(flags, "no-share")->bval) {
		colo = xmalloc(sizeof(*colo));
		if (xp_gavel_colo_load(xp_flag_get(flags, "colo")->sval, colo, &err) < 0) {
			status = xp_cli_fail("sim gavel", &err, 1);
			goto out;
		}
	}
	if ((status = base_config(flags, &base, &err))) {
		status = xp_cli_fail("sim gavel", &err, status);
		goto out;
	}
	runs = plan_runs(&pl, &base, colo, xp_flag_get(flags, "multi-gpu")->bval, &nruns);
	run_all(&m, runs, nruns, pl.threads);
	for (size_t i = 0; i < nruns; i++)
		if (runs[i].rc < 0) {
			status = xp_cli_fail("sim gavel", &runs[i].err, 1);
			goto out;
		}
	if (xp_flag_get(flags, "csv")->bval)
		print_csv(runs, nruns);
	else
		summary(runs, nruns, pl.nseeds);
	if ((f = xp_flag_get(flags, "plot")->sval) &&
	    plot(f, runs, pl.npol, pl.new, pl.nrate, pl.nseeds, &err) < 0) {
		status = xp_cli_fail("sim gavel", &err, 1);
		goto out;
	}
	status = 0;
	goto out;
fail:
	status = xp_cli_fail("sim gavel", &err, 2);
out:
	free(runs);
	free(colo);
	plan_free(&pl);
	free(mdef);
	free(cdef);
	xp_flags_free(flags);
	return status;
}
