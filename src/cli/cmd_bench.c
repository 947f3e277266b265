/*
 * cmd_bench: `xpool sim bench` - placement decisions per second of the
 * core on synthetic clusters from the OpenB node mix (sim/bench.h). Each
 * (nodes, policy) cell runs --runs times; the median is printed with the
 * min and max, and the plain-scan mode (every node rescored per decision)
 * is measured in the same run as the baseline the index is compared with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/sched/policy.h"
#include "../lib/clock.h"
#include "../lib/xalloc.h"
#include "../sim/bench.h"
#include "cli.h"
#include "flags.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static const char *openb_file(const char *file, char *buf, size_t len)
{
	const char *d = getenv("XPOOL_OPENB");
	snprintf(buf, len, "%s/%s", d && *d ? d : "../shared/traces/openb", file);
	return buf;
}

/* the numbers of a bench: runs per cell, decisions per run (and in
 * plain-scan mode), the batch window and budget, the fill */
struct bench_plan {
	long runs, maxd, scand, window, budget;
	double fill;
};

static int parse_plan(struct xp_flag *flags, struct bench_plan *b, struct xp_err *err)
{
	if (xp_parse_int_flag("runs", xp_flag_get(flags, "runs")->sval, 1, 100, &b->runs, err) <
		    0 ||
	    xp_parse_int_flag("max-decisions", xp_flag_get(flags, "max-decisions")->sval, 0,
			      100000000, &b->maxd, err) < 0 ||
	    xp_parse_int_flag("scan-decisions", xp_flag_get(flags, "scan-decisions")->sval, 0,
			      10000000, &b->scand, err) < 0 ||
	    xp_parse_int_flag("window", xp_flag_get(flags, "window")->sval, 1, 1000000,
			      &b->window, err) < 0 ||
	    xp_parse_int_flag("budget", xp_flag_get(flags, "budget")->sval, 0, 1000000,
			      &b->budget, err) < 0 ||
	    xp_parse_double_flag("fill", xp_flag_get(flags, "fill")->sval, 0, 1000, &b->fill,
				 err) < 0)
		return -1;
	return 0;
}

/* one cell, a policy on a cluster of n nodes: b->runs timed runs (seeds
 * 1..runs) and the plain-scan baseline, printed as a row; -1 with err
 * filled when a run fails */
static int bench_cell(const struct xp_cluster *c, const struct xp_openb_trace *t,
		      const struct xp_wshape *m, size_t nm, const char *pol, size_t n,
		      const struct bench_plan *b, int csv, struct xp_err *err)
{
	long runs = b->runs;
	double *rate = XNEWV(double, (size_t)runs), scan_rate = 0;
	struct xp_bench_result r = { 0 };
	for (long k = 0; k < runs; k++) {
		struct xp_bench_opts o = { .policy = pol,
					   .nodes = n,
					   .fill = b->fill,
					   .max_decisions = (size_t)b->maxd,
					   .seed = (uint64_t)k + 1,
					   .window = (size_t)b->window,
					   .budget = (uint32_t)b->budget };
		if (xp_bench_run(c, t, m, nm, &o, &r, err) < 0) {
			free(rate);
			return -1;
		}
		rate[k] = (double)r.decisions / (r.secs > 0 ? r.secs : 1e-9);
	}
	if (b->scand > 0) {
		struct xp_bench_result sr;
		struct xp_bench_opts o = { .policy = pol,
					   .nodes = n,
					   .fill = b->fill,
					   .max_decisions = (size_t)b->scand,
					   .seed = 1,
					   .no_index = 1 };
		if (xp_bench_run(c, t, m, nm, &o, &sr, err) == 0)
			scan_rate = (double)sr.decisions / (sr.secs > 0 ? sr.secs : 1e-9);
	}
	qsort(rate, (size_t)runs, sizeof(double), cmp_double);
	double med = rate[runs / 2];
	if (runs % 2 == 0)
		med = (rate[runs / 2 - 1] + rate[runs / 2]) / 2;
	double rss = (double)xp_peak_rss_kib() / 1024;
	if (csv)
		printf("%zu,%s,%zu,%.0f,%.0f,%.0f,%.0f,%.1f,%.2f,%.0f\n", n, pol, r.decisions, med,
		       rate[0], rate[runs - 1], scan_rate, scan_rate > 0 ? med / scan_rate : 0,
		       r.unalloc_pct, rss);
	else
		printf("%9zu %-8s %10zu %14.0f %10.0f..%-11.0f %12.0f %7.0fx "
		       "%9.2f\n",
		       n, pol, r.decisions, med, rate[0], rate[runs - 1], scan_rate,
		       scan_rate > 0 ? med / scan_rate : 0, r.unalloc_pct);
	fflush(stdout);
	free(rate);
	return 0;
}

int xp_verb_sim_bench(int argc, char **argv)
{
	char nodes_path[4096], pods_path[4096];
	struct xp_flag flags[] = {
		{ "nodes", XP_FLAG_STR, "N[,N...]", "cluster sizes in nodes" },
		{ "policy", XP_FLAG_STR, "P[,P...]", "policies" },
		{ "runs", XP_FLAG_STR, "R", "runs per cell; the median is reported" },
		{ "fill", XP_FLAG_STR, "PCT", "place pods until this % of GPU capacity arrived" },
		{ "max-decisions", XP_FLAG_STR, "D", "stop a run after D decisions (0: no cap)" },
		{ "scan-decisions", XP_FLAG_STR, "D",
		  "decisions timed in plain-scan mode, the baseline (0: skip)" },
		{ "node-list", XP_FLAG_STR, "FILE", "OpenB node list the clusters are built from" },
		{ "pods", XP_FLAG_STR, "FILE", "OpenB pod list the pods are sampled from" },
		{ "csv", XP_FLAG_BOOL, NULL, "print CSV instead of a table" },
		{ "window", XP_FLAG_STR, "N",
		  "plan pods N at a time (xp_sched_plan_batch; 1: one by one)" },
		{ "budget", XP_FLAG_STR, "R", "rollouts per search of a batch optimiser (mcts)" },
		{ NULL, 0, NULL, NULL },
	};
	struct xp_err err = { 0 };
	struct xp_cluster *openb = NULL;
	struct xp_openb_trace *t = NULL;
	struct xp_wshape *m = NULL;
	size_t nm = 0, nsizes = 0, npols = 0;
	char **sizes = NULL, **pols = NULL;
	struct bench_plan b;
	int help, status = 1, csv;

	xp_flag_get(flags, "nodes")->sval = (char *)"1000,10000,100000";
	xp_flag_get(flags, "policy")->sval = (char *)"fgd,bestfit";
	xp_flag_get(flags, "runs")->sval = (char *)"3";
	xp_flag_get(flags, "fill")->sval = (char *)"100";
	xp_flag_get(flags, "max-decisions")->sval = (char *)"200000";
	xp_flag_get(flags, "scan-decisions")->sval = (char *)"2000";
	xp_flag_get(flags, "window")->sval = (char *)"1";
	xp_flag_get(flags, "budget")->sval = (char *)XP_BATCH_BUDGET_DEFAULT_STR;
	xp_flag_get(flags, "node-list")->sval =
		(char *)openb_file("openb_node_list_gpu_node.csv", nodes_path, sizeof(nodes_path));
	xp_flag_get(flags, "pods")->sval =
		(char *)openb_file("openb_pod_list_default.csv", pods_path, sizeof(pods_path));
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0) {
		status = xp_cli_fail("sim bench", &err, 2);
		goto out;
	}
	if (help) {
		xp_flags_usage(
			stdout, "xpool sim bench [flags]",
			"Placement decisions per second on synthetic clusters built from the\n"
			"OpenB node mix, pods sampled from an OpenB pod list, one core, every\n"
			"feasible node considered. Median of --runs, and the plain-scan baseline.",
			flags);
		status = 0;
		goto out;
	}
	csv = xp_flag_get(flags, "csv")->bval;
	if (parse_plan(flags, &b, &err) < 0) {
		status = xp_cli_fail("sim bench", &err, 2);
		goto out;
	}
	sizes = xp_split_list(xp_flag_get(flags, "nodes")->sval, &nsizes);
	pols = xp_split_list(xp_flag_get(flags, "policy")->sval, &npols);
	for (size_t i = 0; i < npols; i++)
		if (!xp_policy_find(pols[i])) {
			xp_errf(&err, XP_EINVAL, "--policy: unknown policy '%s'", pols[i]);
			status = xp_cli_fail("sim bench", &err, 2);
			goto out;
		}
	for (size_t i = 0; i < nsizes; i++) {
		long n;
		if (xp_parse_int_flag("nodes", sizes[i], 1, 10000000, &n, &err) < 0) {
			status = xp_cli_fail("sim bench", &err, 2);
			goto out;
		}
	}
	if (!(openb = xp_openb_load_nodes(xp_flag_get(flags, "node-list")->sval, &err)) ||
	    !(t = xp_openb_load_pods(xp_flag_get(flags, "pods")->sval, openb, &err)) ||
	    xp_openb_workload(t, &m, &nm, &err) < 0) {
		status = xp_cli_fail("sim bench", &err, 1);
		goto out;
	}
	if (csv)
		puts("nodes,policy,decisions,median_per_s,min_per_s,max_per_s,scan_per_s,"
		     "speedup_vs_scan,unalloc_pct,peak_rss_mib");
	else
		printf("%9s %-8s %10s %14s %22s %12s %8s %9s\n", "nodes", "policy", "decisions",
		       "decisions/s", "(min..max)", "scan dec/s", "speedup", "unalloc%");
	for (size_t i = 0; i < nsizes; i++) {
		size_t n = (size_t)strtoull(sizes[i], NULL, 10);
		struct xp_cluster *c = xp_bench_cluster(openb, n, 1);
		for (size_t p = 0; p < npols; p++)
			if (bench_cell(c, t, m, nm, pols[p], n, &b, csv, &err) < 0) {
				xp_cluster_destroy(c);
				status = xp_cli_fail("sim bench", &err, 1);
				goto out;
			}
		xp_cluster_destroy(c);
	}
	if (!csv)
		printf("peak RSS of this process: %.0f MiB\n", (double)xp_peak_rss_kib() / 1024);
	status = 0;
out:
	xp_free_list(sizes, nsizes);
	xp_free_list(pols, npols);
	free(m);
	xp_openb_trace_free(t);
	xp_cluster_destroy(openb);
	xp_flags_free(flags);
	return status;
}
