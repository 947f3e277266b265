/*
 * cmd_sim: `xpool sim <what>` - the trace-driven simulator.
 *
 *   openb     replay the OpenB trace under the FGD paper's protocol
 *   compare   ours vs published results, with the validation gate
 *   workload  the target workload M and the empty-cluster fragmentation
 *   bench     placement throughput on synthetic clusters (sim_bench.c)
 *   mig       MIG slices under static layouts and dynamic policies (cmd_simmig.c)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/sched/policy.h"
#include "../lib/clock.h"
#include "../lib/parse.h"
#include "../lib/xalloc.h"
#include "../sim/compare.h"
#include "../sim/gavel.h"
#include "../sim/grid.h"
#include "../sim/openb.h"
#include "cli.h"
#include "flags.h"

int xp_verb_sim_bench(int argc, char **argv);
int xp_verb_sim_tenants(int argc, char **argv);
int xp_verb_sim_gavel(int argc, char **argv);
int xp_verb_sim_share(int argc, char **argv);
int xp_verb_sim_mig(int argc, char **argv);
int xp_verb_sim_serving(int argc, char **argv);

static const char *const paper_workloads[] = {
	"default",    "cpu050",	    "cpu100",	   "cpu200",	 "cpu250",     "gpushare40",
	"gpushare60", "gpushare80", "gpushare100", "gpuspec10",	 "gpuspec20",  "gpuspec25",
	"gpuspec33",  "multigpu20", "multigpu30",  "multigpu40", "multigpu50", NULL,
};
static const char *const paper_policies = "random,dotprod,clustering,packing,bestfit,fgd";

static const char *openb_dir(void)
{
	const char *d = getenv("XPOOL_OPENB");
	return d && *d ? d : "../shared/traces/openb";
}

static char *default_path(const char *file)
{
	char buf[4096];
	snprintf(buf, sizeof(buf), "%s/%s", openb_dir(), file);
	return xstrdup(buf);
}

/* --pods: files, or workload names resolved in the OpenB folder, or "all" */
static char **resolve_pods(const char *spec, size_t *n)
{
	size_t np;
	char **parts = xp_split_list(spec, &np), **out = NULL;
	size_t cnt = 0;
	for (size_t i = 0; i < np; i++) {
		if (!strcmp(parts[i], "all")) {
			for (int w = 0; paper_workloads[w]; w++) {
				char file[256];
				snprintf(file, sizeof(file), "openb_pod_list_%s.csv",
					 paper_workloads[w]);
				out = xreallocarray(out, cnt + 1, sizeof(*out));
				out[cnt++] = default_path(file);
			}
			continue;
		}
		out = xreallocarray(out, cnt + 1, sizeof(*out));
		if (strchr(parts[i], '/') || strstr(parts[i], ".csv")) {
			out[cnt++] = xstrdup(parts[i]);
		} else {
			char file[512];
			snprintf(file, sizeof(file), "openb_pod_list_%s.csv", parts[i]);
			out[cnt++] = default_path(file);
		}
	}
	xp_free_list(parts, np);
	*n = cnt;
	return out;
}

struct progress {
	uint64_t t0;
	int tty;
	size_t last_pct;
};

static void on_progress(void *ctx, size_t done, size_t total)
{
	struct progress *p = ctx;
	double el = (double)(xp_mono_ns() - p->t0) / 1e9;
	double eta = done ? el * (double)(total - done) / (double)done : 0;
	size_t pct = total ? done * 100 / total : 100;
	if (p->tty) {
		fprintf(stderr, "\rsim: %zu/%zu runs (%zu%%), %.1f s, eta %.0f s   ", done, total,
			pct, el, eta);
		if (done == total)
			fputc('\n', stderr);
	} else if (pct / 10 != p->last_pct / 10 || done == total) {
		fprintf(stderr, "sim: %zu/%zu runs (%zu%%), %.1f s, eta %.0f s\n", done, total, pct,
			el, eta);
	}
	p->last_pct = pct;
}

/* --window, --budget, --k, --cands -> g */
static int batch_flags(struct xp_flag *flags, struct xp_grid *g, struct xp_err *err)
{
	long w, b, k, c;
	int rc;
	if ((rc = xp_parse_int_flag("window", xp_flag_get(flags, "window")->sval, 1, 1000000, &w,
				    err)) < 0 ||
	    (rc = xp_parse_int_flag("budget", xp_flag_get(flags, "budget")->sval, 0, 1000000, &b,
				    err)) < 0 ||
	    (rc = xp_parse_int_flag("k", xp_flag_get(flags, "k")->sval, 1, XP_BATCH_MAX, &k, err)) <
		    0 ||
	    (rc = xp_parse_int_flag("cands", xp_flag_get(flags, "cands")->sval, 1, 8, &c, err)) < 0)
		return rc;
	g->window = (size_t)w;
	g->batch.budget = (uint32_t)b;
	g->batch.k = (uint32_t)k;
	g->batch.cands = (uint32_t)c;
	if (xp_flag_get(flags, "weight")->given) {
		double wt;
		if ((rc = xp_parse_double_flag("weight", xp_flag_get(flags, "weight")->sval, 0,
					       1000, &wt, err)) < 0)
			return rc;
		g->batch.weight = wt > 0 ? wt : -1;
	}
	return 0;
}

/* the grid's policies, seeds, tuning, tie-break, threads and batch
 * planning from the flags: -1 with err filled for a bad value */
static int grid_from_flags(struct xp_flag *flags, struct xp_grid *g, char ***pols,
			   size_t *npols, struct xp_err *err)
{
	long jobs = sysconf(_SC_NPROCESSORS_ONLN), j;
	const char *pspec = xp_flag_get(flags, "policy")->sval;
	if (!strcmp(pspec, "paper"))
		pspec = paper_policies;
	*pols = xp_split_list(pspec, npols);
	g->policies = XNEWV(const struct xp_policy_ops *, *npols);
	for (size_t i = 0; i < *npols; i++) {
		g->policies[i] = xp_policy_find((*pols)[i]);
		if (!g->policies[i])
			return xp_errf(err, XP_EINVAL, "--policy: unknown policy '%s' (see --help)",
				       (*pols)[i]);
	}
	g->npolicies = *npols;
	if (xp_parse_seeds(xp_flag_get(flags, "seeds")->sval, &g->seeds, &g->nseeds, err) < 0 ||
	    xp_parse_double_flag("tune", xp_flag_get(flags, "tune")->sval, 0, 100, &g->tune, err) <
		    0)
		return -1;
	static const char *const tiebreaks[] = { "rank", "random", NULL }; /* enum xp_tiebreak */
	if (xp_flag_choice(flags, "tiebreak", tiebreaks, &g->tiebreak, err) < 0)
		return -1;
	if (xp_flag_get(flags, "jobs")->given) {
		if (xp_parse_int_flag("jobs", xp_flag_get(flags, "jobs")->sval, 1, 1024, &j,
				      err) < 0)
			return -1;
		jobs = j;
	}
	g->threads = jobs > 0 ? (int)jobs : 1;
	g->no_index = xp_flag_get(flags, "no-index")->bval;
	g->bound = xp_flag_get(flags, "bound")->bval;
	return batch_flags(flags, g, err);
}

/* the cluster (--nodes) and each workload (--pods) with its request
 * shapes into the grid: -1 with err filled */
static int load_traces(struct xp_flag *flags, struct xp_grid *g, struct xp_cluster **c,
		       char ***pods, size_t *npods, struct xp_err *err)
{
	*c = xp_openb_load_nodes(xp_flag_get(flags, "nodes")->sval, err);
	if (!*c)
		return -1;
	*pods = resolve_pods(xp_flag_get(flags, "pods")->sval, npods);
	g->c = *c;
	g->traces = XNEWV(struct xp_openb_trace *, *npods);
	g->m = XNEWV(struct xp_wshape *, *npods);
	g->nm = XNEWV(size_t, *npods);
	for (size_t i = 0; i < *npods; i++) {
		g->traces[i] = xp_openb_load_pods((*pods)[i], *c, err);
		g->ntraces = i + 1;
		if (!g->traces[i] ||
		    xp_openb_workload(g->traces[i], &g->m[i], &g->nm[i], err) < 0)
			return -1;
	}
	return 0;
}

/* the grid's CSVs into --out, the time it took on stderr, and the table of
 * ours (beside --published's): -1 with err filled */
static int report_grid(struct xp_flag *flags, const struct xp_grid *g,
		       const struct xp_grid_cell *cells, uint64_t t0, struct xp_err *err)
{
	double wall = (double)(xp_mono_ns() - t0) / 1e9, cpu = 0;
	size_t n = g->ntraces * g->npolicies * g->nseeds;
	const char *dir = xp_flag_get(flags, "out")->sval;
	for (size_t i = 0; i < n; i++)
		cpu += (double)cells[i].res.cpu_ns / 1e9;
	if (xp_grid_write(dir, g, cells, err) < 0)
		return -1;
	fprintf(stderr, "sim: %zu runs in %.1f s wall, %.1f s CPU on %d threads; results in %s/\n",
		n, wall, cpu, g->threads, dir);
	struct xp_cmp_opts co = { .ours = dir,
				  .published = xp_flag_get(flags, "published")->given
						       ? xp_flag_get(flags, "published")->sval
						       : NULL, /* ours alone */
				  .format = XP_CMP_TEXT,
				  .points = { 100, 130 },
				  .npoints = 2 };
	struct xp_cmp_summary sum;
	if (xp_compare(&co, stdout, &sum, err) < 0)
		return -1;
	if (xp_flag_get(flags, "published")->given)
		printf("\n%d cells compared with published results, %d outside the gate "
		       "max(2 sd, 0.5 points)\n",
		       sum.cells, sum.outside);
	return 0;
}

static int cmd_openb(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "nodes", XP_FLAG_STR, "FILE",
		  "node list CSV (sn,cpu_milli,memory_mib,gpu,model)" },
		{ "pods", XP_FLAG_STR, "FILE[,...]",
		  "pod list CSVs, workload names (default, cpu050, ...) or 'all' (the 17 "
		  "published)" },
		{ "policy", XP_FLAG_STR, "P[,P...]",
		  "policies by name or label, or 'paper' (the six published)" },
		{ "seeds", XP_FLAG_STR, "LIST", "seeds, e.g. 42-51 or 1,2,5-9" },
		{ "tune", XP_FLAG_STR, "X",
		  "inflate the pods to X times the GPU capacity (0: as is)" },
		{ "tiebreak", XP_FLAG_STR, "RULE", "rank (lowest permuted node index) or random" },
		{ "out", XP_FLAG_STR, "DIR",
		  "write the three *_discrete.csv files and runs.csv here" },
		{ "published", XP_FLAG_STR, "DIR",
		  "print ours side by side with these published results" },
		{ "jobs", XP_FLAG_STR, "N", "worker threads (default: online CPUs)" },
		{ "no-index", XP_FLAG_BOOL, NULL,
		  "score every node on every decision (slow; for checks)" },
		{ "window", XP_FLAG_STR, "N",
		  "pods arrive in batches of N, planned together (1: one at a time); "
		  "greedy policies place a batch in arrival order" },
		{ "budget", XP_FLAG_STR, "R",
		  "rollouts per search of the mcts optimiser (0: greedy xpool)" },
		{ "k", XP_FLAG_STR, "K", "pods one search covers, 1..64 (default 64)" },
		{ "cands", XP_FLAG_STR, "C",
		  "candidate nodes per pod from the index, 1..8 (default 2)" },
		{ "weight", XP_FLAG_STR, "W",
		  "weight of the policy's measure in the search's reward (default 1; 0: placed "
		  "GPU milli only)" },
		{ "bound", XP_FLAG_BOOL, NULL,
		  "also compute the lower bound on unallocated GPU % at 100 % arrived "
		  "(docs/design/bound.md)" },
		{ NULL, 0, NULL, NULL },
	};
	struct xp_err err = { 0 };
	struct xp_grid g = { 0 };
	struct xp_grid_cell *cells = NULL;
	struct xp_cluster *c = NULL;
	char **pods = NULL, **pols = NULL;
	size_t npods = 0, npols = 0;
	int help, status = 1;
	struct progress prog = { 0 };
	char *nodes_default = default_path("openb_node_list_gpu_node.csv");

	xp_flag_get(flags, "nodes")->sval = nodes_default;
	xp_flag_get(flags, "pods")->sval = (char *)"default";
	xp_flag_get(flags, "policy")->sval = (char *)"paper";
	xp_flag_get(flags, "seeds")->sval = (char *)"42-51";
	xp_flag_get(flags, "tune")->sval = (char *)"1.3";
	xp_flag_get(flags, "tiebreak")->sval = (char *)"rank";
	xp_flag_get(flags, "out")->sval = (char *)"out/openb";
	xp_flag_get(flags, "window")->sval = (char *)"1";
	xp_flag_get(flags, "budget")->sval = (char *)XP_BATCH_BUDGET_DEFAULT_STR;
	xp_flag_get(flags, "k")->sval = (char *)"64";
	xp_flag_get(flags, "cands")->sval = (char *)"2";
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0) {
		status = xp_cli_fail("sim openb", &err, 2);
		goto out;
	}
	if (help) {
		xp_flags_usage(stdout, "xpool sim openb [flags]",
			       "Replay the Alibaba OpenB GPU trace under the FGD paper's protocol\n"
			       "(PROTOCOL.md): shuffle, inflate to --tune x capacity, permute node "
			       "ranks,\n"
			       "arrivals only; write the published CSV shapes to --out.",
			       flags);
		printf("\npolicies:\n");
		for (int i = 0; xp_policies[i]; i++)
			printf("  %-11s %-17s %s\n", xp_policies[i]->name, xp_policies[i]->label,
			       xp_policies[i]->about);
		status = 0;
		goto out;
	}
	if (grid_from_flags(flags, &g, &pols, &npols, &err) < 0) {
		status = xp_cli_fail("sim openb", &err, 2);
		goto out;
	}
	if (load_traces(flags, &g, &c, &pods, &npods, &err) < 0) {
		status = xp_cli_fail("sim openb", &err, 1);
		goto out;
	}
	prog.t0 = xp_mono_ns();
	prog.tty = isatty(2);
	g.progress = on_progress;
	g.ctx = &prog;
	if (xp_grid_run(&g, &cells, &err) < 0 || report_grid(flags, &g, cells, prog.t0, &err) < 0) {
		status = xp_cli_fail("sim openb", &err, 1);
		goto out;
	}
	status = 0;
out:
	free(cells);
	if (g.traces)
		for (size_t i = 0; i < g.ntraces; i++) {
			xp_openb_trace_free(g.traces[i]);
			free(g.m[i]);
		}
	free(g.traces);
	free(g.m);
	free(g.nm);
	free(g.policies);
	free(g.seeds);
	xp_free_list(pols, npols);
	xp_free_list(pods, npods);
	xp_cluster_destroy(c);
	xp_flags_free(flags);
	free(nodes_default);
	return status;
}

static int cmd_compare(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "ours", XP_FLAG_STR, "DIR",
		  "our results (a folder or analysis_allo_discrete.csv)" },
		{ "published", XP_FLAG_STR, "DIR", "published results" },
		{ "format", XP_FLAG_STR, "F", "text, markdown or csv" },
		{ "points", XP_FLAG_STR, "X[,X]", "arrival points, up to 4 of 0..130" },
		{ "series", XP_FLAG_STR, "S",
		  "unalloc (100 - GPU allocation %), frag (amount) or ratio" },
		{ "gate", XP_FLAG_BOOL, NULL,
		  "exit 1 when a cell is outside max(2 published sd, 0.5)" },
		{ "against", XP_FLAG_STR, "POLICY",
		  "instead: every other policy of --ours against this one of --ours (fgd or "
		  "06-FGD), per workload at the first point; exit 1 when one is not lower on "
		  "some workload, 2 on an error" },
		{ NULL, 0, NULL, NULL },
	};
	struct xp_err err = { 0 };
	struct xp_cmp_opts o = { 0 };
	struct xp_cmp_summary sum;
	char *pubdef = default_path("fgd_expected_results");
	int help, status = 2;

	xp_flag_get(flags, "published")->sval = pubdef;
	xp_flag_get(flags, "format")->sval = (char *)"text";
	xp_flag_get(flags, "points")->sval = (char *)"100,130";
	xp_flag_get(flags, "series")->sval = (char *)"unalloc";
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0) {
		status = xp_cli_fail("sim compare", &err, 2);
		goto out;
	}
	if (help) {
		xp_flags_usage(
			stdout, "xpool sim compare --ours DIR [flags]",
			"Unallocated GPU % (or, with --series, fragmentation amount or ratio),\n"
			"mean+-sd over seeds per workload and policy, ours beside published,\n"
			"with the gate |diff| <= max(2 published sd, 0.5).",
			flags);
		status = 0;
		goto out;
	}
	if (!xp_flag_get(flags, "ours")->given) {
		xp_errf(&err, XP_EINVAL, "--ours DIR is required");
		status = xp_cli_fail("sim compare", &err, 2);
		goto out;
	}
	o.ours = xp_flag_get(flags, "ours")->sval;
	o.published = xp_flag_get(flags, "published")->sval;
	{
		/* in the order of enum xp_cmp_format and enum xp_cmp_series */
		static const char *const formats[] = { "text", "markdown", "csv", NULL };
		static const char *const series[] = { "unalloc", "frag", "ratio", NULL };
		if (xp_flag_choice(flags, "format", formats, &o.format, &err) < 0 ||
		    xp_flag_choice(flags, "series", series, &o.series, &err) < 0) {
			status = xp_cli_fail("sim compare", &err, 2);
			goto out;
		}
		size_t np;
		char **pts = xp_split_list(xp_flag_get(flags, "points")->sval, &np);
		if (np > 4) {
			xp_free_list(pts, np);
			xp_errf(&err, XP_EINVAL, "--points: at most 4 points");
			status = xp_cli_fail("sim compare", &err, 2);
			goto out;
		}
		for (size_t i = 0; i < np; i++) {
			long x;
			if (xp_parse_int_flag("points", pts[i], 0, 130, &x, &err) < 0) {
				xp_free_list(pts, np);
				status = xp_cli_fail("sim compare", &err, 2);
				goto out;
			}
			o.points[o.npoints++] = (int)x;
		}
		xp_free_list(pts, np);
	}
	if (xp_flag_get(flags, "against")->given) {
		int not_better;
		const struct xp_policy_ops *pol = xp_policy_find(xp_flag_get(flags, "against")->sval);
		o.against = pol ? pol->label : xp_flag_get(flags, "against")->sval; /* fgd: 06-FGD */
		if (o.format == XP_CMP_CSV)
			xp_errf(&err, XP_EINVAL, "--against: the format is text or markdown");
		else if (xp_flag_get(flags, "published")->given || xp_flag_get(flags, "gate")->bval)
			xp_errf(&err, XP_EINVAL,
				"--against compares policies of --ours: not with --published or --gate");
		if (err.code)
			status = xp_cli_fail("sim compare", &err, 2);
		else if (xp_compare_against(&o, stdout, &not_better, &err) < 0)
			status = xp_cli_fail("sim compare", &err, 2);
		else
			status = not_better ? 1 : 0;
		goto out;
	}
	if (xp_compare(&o, stdout, &sum, &err) < 0) {
		status = xp_cli_fail("sim compare", &err, 1);
		goto out;
	}
	if (o.format == XP_CMP_TEXT)
		printf("\n%d cells compared, %d outside the gate max(2 published sd, 0.5 points)\n",
		       sum.cells, sum.outside);
	status = xp_flag_get(flags, "gate")->bval && sum.outside ? 1 : 0;
out:
	xp_flags_free(flags);
	free(pubdef);
	return status;
}

static int cmd_plot(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "ours", XP_FLAG_STR, "DIR", "our results (xpool sim openb --out DIR)" },
		{ "published", XP_FLAG_STR, "DIR", "published results to draw beside ours" },
		{ "workload", XP_FLAG_STR, "W", "workload (default: default)" },
		{ "out", XP_FLAG_STR, "FILE", "the SVG to write (required)" },
		{ NULL, 0, NULL, NULL },
	};
	struct xp_err err = { 0 };
	int help, status = 2;
	xp_flag_get(flags, "ours")->sval = (char *)"out/openb";
	xp_flag_get(flags, "workload")->sval = (char *)"default";
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0) {
		status = xp_cli_fail("sim plot", &err, 2);
		goto out;
	}
	if (help) {
		xp_flags_usage(stdout, "xpool sim plot --out FILE.svg [flags]",
			       "The FGD paper's Fig. 9a from results: unallocated GPU against arrived\n"
			       "workload, a line per policy (mean over seeds).",
			       flags);
		status = 0;
		goto out;
	}
	if (!xp_flag_get(flags, "out")->sval) {
		xp_errf(&err, XP_EINVAL, "--out FILE is required");
		status = xp_cli_fail("sim plot", &err, 2);
		goto out;
	}
	if (xp_compare_plot(xp_flag_get(flags, "ours")->sval, xp_flag_get(flags, "published")->sval,
			    xp_flag_get(flags, "workload")->sval, xp_flag_get(flags, "out")->sval,
			    &err) < 0) {
		status = xp_cli_fail("sim plot", &err, 1);
		goto out;
	}
	printf("wrote %s\n", xp_flag_get(flags, "out")->sval);
	status = 0;
out:
	xp_flags_free(flags);
	return status;
}

static int cmd_gavel_trace(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "matrix", XP_FLAG_STR, "FILE", "gavel_isolated_throughputs.csv" },
		{ "rate", XP_FLAG_STR, "R", "arrivals per hour (default 2.0)" },
		{ "jobs", XP_FLAG_STR, "N", "jobs (default 6000)" },
		{ "seed", XP_FLAG_STR, "S", "Gavel's seed (default 0)" },
		{ "multi-gpu", XP_FLAG_BOOL, NULL, "scale factors 1/2/4/8 (70/10/15/5 %)" },
		{ NULL, 0, NULL, NULL },
	};
	struct xp_err err = { 0 };
	char *def = NULL;
	int help, status = 2;
	long jobs = 6000, seed = 0;
	double rate = 2.0;
	def = xp_cli_shared_path("traces/gavel/gavel_isolated_throughputs.csv");
	xp_flag_get(flags, "matrix")->sval = def;
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0) {
		status = xp_cli_fail("sim gavel-trace", &err, 2);
		goto out;
	}
	if (help) {
		xp_flags_usage(stdout, "xpool sim gavel-trace [flags] > trace.tsv",
			       "Gavel's synthetic continuous trace (PROTOCOL.md 2.3), drawn as\n"
			       "CPython draws it, as Gavel's 10-field TSV on stdout.",
			       flags);
		status = 0;
		goto out;
	}
	const char *f;
	if ((f = xp_flag_get(flags, "rate")->sval) &&
	    (xp_parse_double(f, &rate) < 0 || !(rate > 0) || rate > 1000)) {
		xp_errf(&err, XP_EINVAL, "--rate: expected jobs per hour in (0, 1000], got '%s'", f);
		status = xp_cli_fail("sim gavel-trace", &err, 2);
		goto out;
	}
	if (((f = xp_flag_get(flags, "jobs")->sval) &&
	     xp_parse_int_flag("jobs", f, 1, 10000000, &jobs, &err) < 0) ||
	    ((f = xp_flag_get(flags, "seed")->sval) &&
	     xp_parse_int_flag("seed", f, 0, 1000000000, &seed, &err) < 0)) {
		status = xp_cli_fail("sim gavel-trace", &err, 2);
		goto out;
	}
	static struct xp_gavel_matrix m;
	if (xp_gavel_load(xp_flag_get(flags, "matrix")->sval, &m, &err) < 0) {
		status = xp_cli_fail("sim gavel-trace", &err, 1);
		goto out;
	}
	struct xp_gavel_job *t = malloc((size_t)jobs * sizeof(*t));
	xp_gavel_trace(&m, (size_t)jobs, rate, xp_flag_get(flags, "multi-gpu")->bval,
		       (unsigned)seed, t);
	xp_gavel_write_tsv(stdout, t, (size_t)jobs);
	free(t);
	status = 0;
out:
	free(def);
	xp_flags_free(flags);
	return status;
}

static int cmd_workload(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "nodes", XP_FLAG_STR, "FILE", "node list CSV" },
		{ "pods", XP_FLAG_STR, "FILE", "pod list CSV or workload name" },
		{ NULL, 0, NULL, NULL },
	};
	struct xp_err err = { 0 };
	char *nodes_default = default_path("openb_node_list_gpu_node.csv");
	struct xp_cluster *c = NULL;
	struct xp_openb_trace *t = NULL;
	struct xp_wshape *m = NULL;
	size_t nm = 0, npods = 0;
	char **pods = NULL;
	int help, status = 1;

	xp_flag_get(flags, "nodes")->sval = nodes_default;
	xp_flag_get(flags, "pods")->sval = (char *)"default";
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0) {
		status = xp_cli_fail("sim workload", &err, 2);
		goto out;
	}
	if (help) {
		xp_flags_usage(
			stdout, "xpool sim workload [flags]",
			"Print the target workload M of a pod list (PROTOCOL.md 2.1) and the\n"
			"empty cluster's fragmentation ratio.",
			flags);
		status = 0;
		goto out;
	}
	pods = resolve_pods(xp_flag_get(flags, "pods")->sval, &npods);
	if (npods != 1) {
		xp_errf(&err, XP_EINVAL, "--pods: give exactly one pod list");
		status = xp_cli_fail("sim workload", &err, 2);
		goto out;
	}
	if (!(c = xp_openb_load_nodes(xp_flag_get(flags, "nodes")->sval, &err)) ||
	    !(t = xp_openb_load_pods(pods[0], c, &err)) ||
	    xp_openb_workload(t, &m, &nm, &err) < 0) {
		status = xp_cli_fail("sim workload", &err, 1);
		goto out;
	}
	printf("workload %s: %zu pods, %zu shapes in M\n", t->workload, t->n, nm);
	printf("%4s %8s %6s %5s %-24s %8s\n", "#", "cpu_m", "milli", "gpus", "models", "p");
	for (size_t i = 0; i < nm; i++) {
		const struct xp_request *r = &m[i].req;
		char models[128] = "";
		size_t off = 0;
		for (int k = 0; k < r->sel.nmodels && off < sizeof(models) - 1; k++)
			off += (size_t)snprintf(models + off, sizeof(models) - off, "%s%s",
						k ? "|" : "",
						xp_strtab_str(c->syms, r->sel.models[k]));
		printf("%4zu %8llu %6u %5u %-24s %8.5f\n", i, (unsigned long long)r->cpu_milli,
		       r->dev_milli, r->dev_count, models[0] ? models : "-", m[i].p);
	}
	printf("empty-cluster fragmentation ratio: %.2f%%\n", xp_openb_empty_frag_ratio(c, m, nm));
	status = 0;
out:
	free(m);
	xp_openb_trace_free(t);
	xp_cluster_destroy(c);
	xp_free_list(pods, npods);
	xp_flags_free(flags);
	free(nodes_default);
	return status;
}

int xp_verb_sim(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
		const char *about;
	} subs[] = {
		{ "openb", cmd_openb, "replay the OpenB trace under the FGD paper's protocol" },
		{ "compare", cmd_compare, "our results beside the published ones" },
		{ "plot", cmd_plot, "the FGD paper's Fig. 9a from results, as SVG" },
		{ "gavel", xp_verb_sim_gavel,
		  "Gavel's round-based simulator: FIFO, LAS, Gavel, xpool (JCT)" },
		{ "gavel-trace", cmd_gavel_trace,
		  "Gavel's synthetic trace, drawn as CPython draws it (TSV)" },
		{ "workload", cmd_workload,
		  "the target workload M and empty-cluster fragmentation" },
		{ "bench", xp_verb_sim_bench,
		  "placement throughput on synthetic OpenB-like clusters" },
		{ "tenants", xp_verb_sim_tenants,
		  "a multi-tenant trace through queues, quotas, preemption, backfill" },
		{ "share", xp_verb_sim_share,
		  "GenAI pods packed whole, as enforced GPU fractions, overcommitted" },
		{ "mig", xp_verb_sim_mig,
		  "MIG slices: static layouts vs first-fit, HAMi best-fit, xpool" },
		{ "serving", xp_verb_sim_serving,
		  "an inference service and elastic training on one pool: static, reactive, xpool" },
		{ NULL, NULL, NULL },
	};
	if (argc < 1 || !strcmp(argv[0], "-h") || !strcmp(argv[0], "--help")) {
		FILE *out = argc < 1 ? stderr : stdout;
		fprintf(out, "usage: xpool sim <what> [flags]\n\n");
		for (int i = 0; subs[i].name; i++)
			fprintf(out, "  %-9s %s\n", subs[i].name, subs[i].about);
		return argc < 1 ? 2 : 0;
	}
	for (int i = 0; subs[i].name; i++)
		if (!strcmp(argv[0], subs[i].name))
			return subs[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "xpool sim: unknown '%s' (see xpool sim --help)\n", argv[0]);
	return 2;
}
