/*
 * cmd_simtenants: `xpool sim tenants` - the multi-tenant simulator
 * (src/sim/tenants.h): one generated trace through the controller's state
 * layer under each set-up asked for, a table per tenant, or -o json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>

#include <jansson.h>

#include "../lib/parse.h"
#include "../lib/timefmt.h"
#include "../core/sched/policy.h"
#include "../core/sched/sched.h"
#include "../sim/tenants.h"
#include "../lib/fileio.h"
#include "cli.h"
#include "flags.h"

static const char *const kinds[XP_TSIM_NKINDS] = { "batch", "train", "infer" };

static int num(const char *flag, const char *v, int64_t min, int64_t max, int64_t *out)
{
	if (xp_parse_i64(v, min, max, out) == 0)
		return 0;
	fprintf(stderr, "xpool sim tenants: --%s: expected an integer %lld..%lld, got '%s'\n", flag,
		(long long)min, (long long)max, v);
	return -1;
}

static void print_table(const struct xp_tsim_opts *o, const struct xp_tsim_result *r)
{
	char pol[64];
	if (r->batches)
		snprintf(pol, sizeof(pol), "%s, budget %u", o->policy, o->budget);
	else
		snprintf(pol, sizeof(pol), "%s", o->policy);
	printf("%s: %u nodes (%u GPUs), %u jobs over %.1f h, load %.2f, seed %llu, policy %s: "
	       "makespan %.1f h, GPU utilisation %.1f%% (%.1f%% while jobs wait), Jain %.3f, %llu "
	       "preemptions, %llu never started, %.1f s\n",
	       xp_tsim_mode_name(o->mode), o->nodes, 8 * o->nodes, o->jobs, r->span_h, o->load,
	       (unsigned long long)o->seed, pol, r->makespan_h, 100 * r->util, 100 * r->util_waiting,
	       r->jain, (unsigned long long)r->preemptions, (unsigned long long)r->unstarted,
	       r->wall_s);
	printf("  fragmentation (%llu samples while jobs wait): stranded %.2f%% of free GPU "
	       "(%.2f%% of all GPU), F(M) %.2f%% of free GPU; free GPU %.2f%%",
	       (unsigned long long)r->frag_samples, 100 * r->frag_stranded,
	       100 * r->frag_stranded_cap, 100 * r->frag_fm, 100 * r->free_share);
	if (r->batches)
		printf("; %llu batches searched (%llu jobs), %llu rollouts",
		       (unsigned long long)r->batches, (unsigned long long)r->searched,
		       (unsigned long long)r->rollouts);
	printf("\n  %-7s %6s %8s %12s %12s %12s %12s %12s\n", "TENANT", "SHARE", "JOBS",
	       "WAIT_P50_S", "WAIT_P95_S", "WAIT_P99_S", "WAIT_MEAN_S", "GPU_HOURS");
	for (uint32_t i = 0; i < r->tenants + XP_TSIM_NKINDS + 1; i++) {
		const struct xp_tsim_tenant *t = i < r->tenants ? &r->t[i]
						 : i == r->tenants + XP_TSIM_NKINDS
							 ? &r->all
							 : &r->kind[i - r->tenants];
		char name[16], share[16] = "-";
		if (i < r->tenants) { /* then by job kind (priority 0, 5, 10), then all */
			snprintf(name, sizeof(name), "t%u", i);
			snprintf(share, sizeof(share), "%5.1f%%", 100 * t->share);
		} else {
			snprintf(name, sizeof(name), "%s",
				 t == &r->all ? "all" : kinds[i - r->tenants]);
		}
		printf("  %-7s %6s %8llu %12.0f %12.0f %12.0f %12.0f %12.0f\n", name, share,
		       (unsigned long long)t->jobs, t->wait_p50_s, t->wait_p95_s, t->wait_p99_s,
		       t->wait_mean_s, t->gpu_hours);
	}
}

static json_t *waits_json(const struct xp_tsim_tenant *t)
{
	return json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f}", "jobs", (json_int_t)t->jobs, "started",
			 (json_int_t)t->started, "wait_p50_s", t->wait_p50_s, "wait_p95_s",
			 t->wait_p95_s, "wait_p99_s", t->wait_p99_s, "wait_mean_s", t->wait_mean_s,
			 "gpu_hours", t->gpu_hours);
}

static json_t *result_json(const struct xp_tsim_opts *o, const struct xp_tsim_result *r)
{
	json_t *ts = json_array();
	for (uint32_t i = 0; i < r->tenants; i++)
		json_array_append_new(
			ts,
			json_pack("{s:i,s:f,s:I,s:I,s:f,s:f,s:f,s:f,s:f}", "tenant", (int)i, "share",
				  r->t[i].share, "jobs", (json_int_t)r->t[i].jobs, "started",
				  (json_int_t)r->t[i].started, "wait_p50_s", r->t[i].wait_p50_s,
				  "wait_p95_s", r->t[i].wait_p95_s, "wait_p99_s", r->t[i].wait_p99_s, "wait_mean_s",
				  r->t[i].wait_mean_s, "gpu_hours", r->t[i].gpu_hours));
	json_t *ks = json_array();
	for (int k = 0; k < XP_TSIM_NKINDS; k++)
		json_array_append_new(ks, json_pack("{s:s,s:I,s:f,s:f,s:f}", "kind", kinds[k],
						    "jobs", (json_int_t)r->kind[k].jobs,
						    "wait_p50_s", r->kind[k].wait_p50_s,
						    "wait_p99_s", r->kind[k].wait_p99_s,
						    "wait_mean_s", r->kind[k].wait_mean_s));
	json_t *frag = json_pack("{s:I,s:f,s:f,s:f,s:f}", "samples", (json_int_t)r->frag_samples,
				 "stranded", r->frag_stranded, "stranded_of_capacity",
				 r->frag_stranded_cap, "fm", r->frag_fm, "free", r->free_share);
	return json_pack("{s:s,s:s,s:i,s:I,s:I,s:I,s:i,s:i,s:I,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:f,s:o,s:o,"
			 "s:o,s:o}",
			 "mode", xp_tsim_mode_name(o->mode), "policy", o->policy, "budget",
			 (int)o->budget, "batches", (json_int_t)r->batches, "searched",
			 (json_int_t)r->searched, "rollouts",
			 (json_int_t)r->rollouts, "nodes", (int)o->nodes, "jobs", (int)o->jobs,
			 "seed", (json_int_t)o->seed, "span_h", r->span_h, "makespan_h",
			 r->makespan_h, "util", r->util, "util_waiting", r->util_waiting, "jain",
			 r->jain, "preemptions", (json_int_t)r->preemptions, "unstarted",
			 (json_int_t)r->unstarted, "wall_s", r->wall_s, "tenants", ts, "kinds", ks,
			 "all", waits_json(&r->all), "fragmentation", frag);
}

/* the run's options from the flags (--prices read into *prices, which
 * o->prices borrows): 0, or the exit status when one is bad (said) */
static int opts_from_flags(struct xp_flag *flags, struct xp_tsim_opts *o, char **prices,
			   struct xp_err *err)
{
	const char *f;
	int64_t v;
	double load;
	if ((f = xp_flag_get(flags, "nodes")->sval) && (num("nodes", f, 1, 1000000, &v) < 0))
		return 2;
	if (f)
		o->nodes = (uint32_t)v;
	if ((f = xp_flag_get(flags, "jobs")->sval) && (num("jobs", f, 1, 10000000, &v) < 0))
		return 2;
	if (f)
		o->jobs = (uint32_t)v;
	if ((f = xp_flag_get(flags, "tenants")->sval) &&
	    (num("tenants", f, 2, XP_TSIM_MAX_TENANTS, &v) < 0))
		return 2;
	if (f)
		o->tenants = (uint32_t)v;
	if ((f = xp_flag_get(flags, "seed")->sval) && (num("seed", f, 0, INT64_MAX, &v) < 0))
		return 2;
	if (f)
		o->seed = (uint64_t)v;
	if ((f = xp_flag_get(flags, "load")->sval)) {
		if (xp_parse_double(f, &load) < 0 || load <= 0 || load > 10) {
			fprintf(stderr,
				"xpool sim tenants: --load: expected a number in (0, 10], got "
				"'%s'\n",
				f);
			return 2;
		}
		o->load = load;
	}
	if ((f = xp_flag_get(flags, "budget")->sval) && (num("budget", f, 0, 1000000, &v) < 0))
		return 2;
	if (f)
		o->budget = (uint32_t)v;
	if ((f = xp_flag_get(flags, "aging")->sval) &&
	    (xp_duration_parse(f, 366LL * 86400000, &o->aging_ms) < 0 || o->aging_ms < 1000)) {
		fprintf(stderr,
			"xpool sim tenants: --aging: expected a duration of 1s or more, got "
			"'%s'\n",
			f);
		return 2;
	}
	if ((f = xp_flag_get(flags, "prices")->sval)) {
		size_t len;
		if (xp_read_file(f, 1u << 20, prices, &len, err) < 0)
			return xp_cli_fail("sim tenants", err, 2);
		o->prices = *prices;
	}
	if ((f = xp_flag_get(flags, "report")->sval)) {
		if (strcmp(f, "cost")) {
			fprintf(stderr, "xpool sim tenants: --report: expected cost, got '%s'\n", f);
			return 2;
		}
		o->report_cost = 1;
	}
	if ((f = xp_flag_get(flags, "plot")->sval)) {
		if (mkdir(f, 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "xpool sim tenants: --plot: cannot create %s: %s\n", f,
				strerror(errno));
			return 1;
		}
		o->plot_dir = f;
	}
	return 0;
}

/* --mode's list (all three when absent) into modes: their count, or -1
 * (said) */
static int parse_modes(const char *ml, int *modes)
{
	int nm = 0;
	if (!ml) {
		for (int m = 0; m < XP_TSIM_NMODES; m++)
			modes[nm++] = m;
		return nm;
	}
	size_t n;
	char **list = xp_split_list(ml, &n);
	for (size_t i = 0; i < n; i++) {
		int m = xp_tsim_mode_parse(list[i]);
		if (m < 0 || nm == XP_TSIM_NMODES) {
			fprintf(stderr,
				"xpool sim tenants: --mode: expected xpool, noborrow or "
				"fifo, "
				"got '%s'\n",
				list[i]);
			xp_free_list(list, n);
			return -1;
		}
		modes[nm++] = m;
	}
	xp_free_list(list, n);
	return nm;
}

/* --policy's list (bestfit when absent), each checked: their count, or -1
 * (said); list[] borrows from pl's split, freed by the caller */
static int parse_policies(const char *pl, char ***list, size_t *n)
{
	*list = xp_split_list(pl ? pl : "bestfit", n);
	for (size_t i = 0; i < *n; i++)
		if (!xp_policy_find((*list)[i])) {
			fprintf(stderr, "xpool sim tenants: --policy: no policy '%s' (xpool sim "
					"policies lists them)\n",
				(*list)[i]);
			return -1;
		}
	if (!*n) {
		fprintf(stderr, "xpool sim tenants: --policy: expected a policy name\n");
		return -1;
	}
	return (int)*n;
}

/* one run per policy and mode, each printed as a table (and its metered
 * cost), or all as one JSON array at the end: the exit status */
static int run_modes(struct xp_tsim_opts *o, char **pols, size_t np, const int *modes, int nm,
		     int json)
{
	struct xp_err err = { 0 };
	json_t *all = json_array();
	int status = 0;
	for (size_t k = 0; k < (size_t)nm * np && status == 0; k++) {
		struct xp_tsim_result r;
		o->policy = pols[k / (size_t)nm];
		o->mode = modes[k % (size_t)nm];
		if (xp_tsim_run(o, &r, &err) < 0) {
			status = xp_cli_fail("sim tenants", &err, 1);
			break;
		}
		json_error_t je;
		json_t *cost = r.cost ? json_loads(r.cost, 0, &je) : NULL;
		free(r.cost);
		if (json) {
			json_t *one = result_json(o, &r);
			if (cost)
				json_object_set(one, "cost", cost);
			json_array_append_new(all, one);
		} else {
			print_table(o, &r);
			if (cost) {
				printf("\nmetered (%s):\n", xp_tsim_mode_name(o->mode));
				xp_cli_print_cost(cost);
			}
		}
		json_decref(cost);
	}
	if (json && status == 0)
		xp_cli_print_json(all);
	json_decref(all);
	return status;
}

int xp_verb_sim_tenants(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "nodes", XP_FLAG_STR, "N", "nodes of 8 GPUs (default 10000)" },
		{ "jobs", XP_FLAG_STR, "N", "jobs in the trace (default 100000)" },
		{ "tenants", XP_FLAG_STR, "N", "tenants, shares N..1 (default 4)" },
		{ "seed", XP_FLAG_STR, "S", "trace seed (default 1)" },
		{ "mode", XP_FLAG_STR, "M[,M...]", "xpool, noborrow, fifo (default all three)" },
		{ "load", XP_FLAG_STR, "L",
		  "offered GPU load over the arrival span (default 0.9)" },
		{ "policy", XP_FLAG_STR, "P[,P...]",
		  "placement policies, each run with each mode (default bestfit; mcts: the "
		  "cycle's batch search)" },
		{ "budget", XP_FLAG_STR, "R",
		  "rollouts per batch search of mcts (default " XP_BATCH_BUDGET_DEFAULT_STR
		  "; 0: greedy xpool)" },
		{ "aging", XP_FLAG_STR, "DURATION",
		  "xpool and noborrow queues: +1 priority per DURATION waited, up to +10 (default "
		  "off)" },
		{ "prices", XP_FLAG_STR, "FILE",
		  "meter the run and price it with this table (docs/api.md, Usage and cost)" },
		{ "report", XP_FLAG_STR, "WHAT",
		  "cost: print the metered usage (and cost, with --prices) per tenant" },
		{ "plot", XP_FLAG_STR, "DIR",
		  "write SVG plots of utilisation, fragmentation and cost over time to DIR" },
		{ "output", XP_FLAG_STR, "FORMAT", "table (default) or json", 'o' },
		{ NULL, 0, NULL, NULL },
	};
	struct xp_tsim_opts o;
	char *prices = NULL, **pols = NULL;
	size_t np = 0;
	struct xp_err err = { 0 };
	int help, status = 2;

	xp_tsim_defaults(&o);
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0) {
		status = xp_cli_fail("sim tenants", &err, 2);
		goto out;
	}
	if (help) {
		xp_flags_usage(stdout, "xpool sim tenants [flags]",
			       "A generated multi-tenant trace (training gangs, inference, batch;\n"
			       "tenants of unequal shares peaking at different times) through the\n"
			       "controller's own queues, quotas, preemption and backfill, on a\n"
			       "simulated clock: queueing time per tenant, utilisation, Jain's\n"
			       "fairness index, preemptions - xpool against FIFO and against\n"
			       "guarantees without borrowing (docs/results/tenancy.md).",
			       flags);
		status = 0;
		goto out;
	}
	if ((status = opts_from_flags(flags, &o, &prices, &err)))
		goto out;
	status = 2;
	const char *fmt = xp_flag_get(flags, "output")->sval;
	if (fmt && strcmp(fmt, "table") && strcmp(fmt, "json")) {
		fprintf(stderr, "xpool sim tenants: -o: expected table or json, got '%s'\n", fmt);
		goto out;
	}
	int modes[XP_TSIM_NMODES];
	int nm = parse_modes(xp_flag_get(flags, "mode")->sval, modes);
	if (nm < 0)
		goto out;
	if (parse_policies(xp_flag_get(flags, "policy")->sval, &pols, &np) < 0)
		goto out;
	status = run_modes(&o, pols, np, modes, nm, fmt && !strcmp(fmt, "json"));
out:
	if (pols)
		xp_free_list(pols, np);
	free(prices);
	xp_flags_free(flags);
	return status;
}
