/*
 * cmd_simmig: `xpool sim mig` - MIG slices from the OpenB and GenAI traces
 * on a cluster of A100-80GB and H100-80GB GPUs, under three static
 * layouts and three dynamic placement policies (src/sim/mig.h,
 * docs/results/mig.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../lib/clock.h"
#include "../lib/parse.h"
#include "../lib/xalloc.h"
#include "../sim/mig.h"
#include "../sim/svg.h"
#include "cli.h"
#include "flags.h"

struct args {
	struct xp_migsim_opts o;
	int stream; /* 0 openb, 1 genai, 2 both */
	int poisson, json;
	uint64_t seed;
	double headroom;
	char *openb, *genai; /* malloc'd */
	const char *svg, *pods;
};

static int integer(const char *flag, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
	if (xp_parse_i64(v, lo, hi, out) == 0)
		return 0;
	fprintf(stderr, "xpool sim mig: --%s: expected an integer %lld..%lld, got '%s'\n", flag,
		(long long)lo, (long long)hi, v);
	return -1;
}

static int models(const char *spec, struct xp_migsim_opts *o)
{
	size_t n;
	char **v = xp_split_list(spec, &n);
	int rc = 0;
	o->nmodels = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const struct xp_mig_table *t = xp_mig_table_find(v[i]);
		if (!t || o->nmodels == XP_MIGSIM_MAX_MODELS) {
			fprintf(stderr,
				"xpool sim mig: --models: %s '%s' (known: A100-40GB, A100-80GB, "
				"H100-80GB, H200-141GB; at most %d)\n",
				t ? "too many models at" : "unknown GPU model", v[i],
				XP_MIGSIM_MAX_MODELS);
			rc = -1;
		} else {
			o->models[o->nmodels++] = t;
		}
	}
	if (rc == 0 && !o->nmodels) {
		fprintf(stderr,
			"xpool sim mig: --models: expected a list of GPU models, got '%s'\n", spec);
		rc = -1;
	}
	xp_free_list(v, n);
	return rc;
}

/* the numeric flags into a; -1 after printing the flag and the reason */
static int numbers(struct xp_flag *flags, struct args *a)
{
	const char *f;
	int64_t v;
	double d;
	if ((f = xp_flag_get(flags, "nodes")->sval)) {
		if (integer("nodes", f, 1, 4096, &v) < 0)
			return -1;
		a->o.nodes = (uint32_t)v;
	}
	if ((f = xp_flag_get(flags, "gpus")->sval)) {
		if (integer("gpus", f, 1, 16, &v) < 0)
			return -1;
		a->o.gpus_per_node = (uint32_t)v;
	}
	if ((f = xp_flag_get(flags, "timeout")->sval) &&
	    integer("timeout", f, 0, 365LL * 86400, &a->o.timeout_s) < 0)
		return -1;
	if ((f = xp_flag_get(flags, "warm")->sval) &&
	    integer("warm", f, 0, 365LL * 86400, &a->o.warm_s) < 0)
		return -1;
	if ((f = xp_flag_get(flags, "seed")->sval)) {
		if (integer("seed", f, 0, INT64_MAX, &v) < 0)
			return -1;
		a->seed = (uint64_t)v;
	}
	if ((f = xp_flag_get(flags, "headroom")->sval)) {
		if (xp_parse_double(f, &d) < 0 || !(d >= 1 && d <= 4)) {
			fprintf(stderr,
				"xpool sim mig: --headroom: expected a number in 1..4, got '%s'\n",
				f);
			return -1;
		}
		a->headroom = d;
	}
	if ((f = xp_flag_get(flags, "models")->sval) && models(f, &a->o) < 0)
		return -1;
	return 0;
}

static void print_table(const struct xp_migsim_stream *s, const struct args *a,
			const struct xp_migsim_result *r)
{
	printf("%s: %zu requests over %.1f h (%zu trace rows not one-GPU requests skipped); "
	       "%u nodes x %u GPUs (",
	       s->name, s->n, r[0].hours, s->skipped, a->o.nodes, a->o.gpus_per_node);
	for (size_t m = 0; m < a->o.nmodels; m++)
		printf("%s%s", m ? ", " : "", a->o.models[m]->model);
	printf("); wait <= %llds, warm %llds, %s arrivals, seed %llu\n", (long long)a->o.timeout_s,
	       (long long)a->o.warm_s, a->poisson ? "poisson" : "trace",
	       (unsigned long long)a->seed);
	printf("%-19s %8s %7s %8s %5s %7s %8s %6s %8s %8s %7s %6s\n", "MODE", "ADMITTED", "WAITING",
	       "REJECTED", "UNFIT", "ADMIT%", "IDLE_SH", "IDLE%", "RECONF", "RECONF/H", "LARGEST",
	       "CPU_S");
	for (int k = 0; k < XP_MIGSIM_NMODES; k++) {
		const struct xp_migsim_result *x = &r[k];
		uint64_t rc = x->creations + x->destructions;
		printf("%-19s %8u %7u %8u %5u %6.1f%% %8.0f %5.1f%% %8llu %8.2f %7.2f %6.2f\n",
		       xp_migsim_mode_name(k), x->admitted, x->waiting, x->rejected, x->unfit,
		       100.0 * x->admitted / (x->requests ? x->requests : 1), x->idle_slice_hours,
		       100.0 * x->idle_slice_hours / (x->slice_hours > 0 ? x->slice_hours : 1),
		       (unsigned long long)rc, x->hours > 0 ? (double)rc / x->hours : 0,
		       x->largest_mean, x->cpu_s);
	}
	printf("rejected after waiting, by profile size (1g/2g/3g/4g/7g):");
	for (int k = 0; k < XP_MIGSIM_NMODES; k++)
		printf("%s %s %u/%u/%u/%u/%u", k ? ";" : "", xp_migsim_mode_name(k),
		       r[k].rejected_by[1], r[k].rejected_by[2], r[k].rejected_by[3],
		       r[k].rejected_by[4], r[k].rejected_by[7]);
	printf("\n");
	int best = 0;
	for (int k = 1; k <= XP_MIGSIM_STATIC_7G; k++)
		if (r[k].admitted > r[best].admitted)
			best = k;
	const struct xp_migsim_result *x = &r[XP_MIGSIM_XPOOL], *ff = &r[XP_MIGSIM_FIRST_FIT];
	printf("xpool admits %+.1f%% vs the best static layout (%s), %+.1f%% vs first-fit; "
	       "reconfigurations %llu vs first-fit's %llu\n\n",
	       100.0 * ((double)x->admitted / (r[best].admitted ? r[best].admitted : 1) - 1),
	       xp_migsim_mode_name(best),
	       100.0 * ((double)x->admitted / (ff->admitted ? ff->admitted : 1) - 1),
	       (unsigned long long)(x->creations + x->destructions),
	       (unsigned long long)(ff->creations + ff->destructions));
}

static json_t *result_json(const struct xp_migsim_stream *s, const struct xp_migsim_result *r)
{
	json_t *modes = json_array();
	for (int k = 0; k < XP_MIGSIM_NMODES; k++)
		json_array_append_new(
			modes,
			json_pack("{s:s,s:i,s:i,s:i,s:i,s:[iiiii],s:I,s:I,s:f,s:f,s:f,s:f}", "mode",
				  xp_migsim_mode_name(k), "admitted", (int)r[k].admitted, "waiting",
				  (int)r[k].waiting, "rejected", (int)r[k].rejected, "unfit",
				  (int)r[k].unfit, "rejected_by_size_1g_2g_3g_4g_7g",
				  (int)r[k].rejected_by[1], (int)r[k].rejected_by[2],
				  (int)r[k].rejected_by[3], (int)r[k].rejected_by[4],
				  (int)r[k].rejected_by[7], "creations", (json_int_t)r[k].creations,
				  "destructions", (json_int_t)r[k].destructions, "slice_hours",
				  r[k].slice_hours, "idle_slice_hours", r[k].idle_slice_hours,
				  "largest_mean", r[k].largest_mean, "cpu_s", r[k].cpu_s));
	return json_pack("{s:s,s:i,s:f,s:o}", "stream", s->name, "requests", (int)s->n, "hours",
			 r[0].hours, "modes", modes);
}

static int write_svg(const struct args *a, int64_t bucket_s, const struct xp_migsim_stream *s,
		     const struct xp_migsim_result *r, struct xp_err *err)
{
	struct xp_svg_series ser[XP_MIGSIM_NMODES];
	char path[1024], title[128];
	double *x = xcalloc(r[0].nbuckets + 1, sizeof(double));
	for (size_t b = 0; b < r[0].nbuckets; b++)
		x[b] = (double)b * (double)bucket_s / 3600;
	for (int k = 0; k < XP_MIGSIM_NMODES; k++)
		ser[k] = (struct xp_svg_series){
			xp_migsim_mode_name(k), x, r[k].largest,
			r[k].nbuckets,		0, k <= XP_MIGSIM_STATIC_7G
		};
	snprintf(path, sizeof(path), "%s-%s.svg", a->svg, s->name);
	snprintf(title, sizeof(title), "%s: largest MIG profile still obtainable (mean over GPUs)",
		 s->name);
	int rc = xp_svg_lines(path, title, "hours", "compute slices (0-7)", ser, XP_MIGSIM_NMODES,
			      err);
	free(x);
	return rc;
}

/* one stream, every mode; prints */
static int run_stream(const struct args *a, int which, json_t *out, struct xp_err *err)
{
	struct xp_migsim_stream s;
	struct xp_migsim_result r[XP_MIGSIM_NMODES];
	char path[1024];
	int rc;
	memset(r, 0, sizeof(r));
	if (strchr(a->pods, '/') || strstr(a->pods, ".csv"))
		snprintf(path, sizeof(path), "%s", a->pods);
	else
		snprintf(path, sizeof(path), "%s/openb_pod_list_%s.csv", a->openb, a->pods);
	rc = which == 0 ? xp_migsim_load_openb(path, &s, err)
			: xp_migsim_load_genai(a->genai, a->headroom, &s, err);
	if (rc < 0)
		return rc;
	xp_migsim_arrange(&s, a->seed, a->poisson);
	/* the series in hours, at most about 240 points */
	struct xp_migsim_opts o = a->o;
	int64_t span = s.r[s.n - 1].t - s.r[0].t, hours = span / (240 * 3600) + 1;
	o.bucket_s = hours * 3600;
	for (int k = 0; k < XP_MIGSIM_NMODES && rc == 0; k++) {
		uint64_t t0 = xp_thread_cpu_ns();
		rc = xp_migsim_run(&s, &o, k, &r[k], err);
		r[k].cpu_s = (double)(xp_thread_cpu_ns() - t0) / 1e9;
	}
	if (rc == 0 && a->svg)
		rc = write_svg(a, o.bucket_s, &s, r, err);
	if (rc == 0 && out)
		json_array_append_new(out, result_json(&s, r));
	else if (rc == 0)
		print_table(&s, a, r);
	for (int k = 0; k < XP_MIGSIM_NMODES; k++)
		xp_migsim_result_free(&r[k]);
	xp_migsim_stream_free(&s);
	return rc;
}

static void usage(const struct xp_flag *flags)
{
	xp_flags_usage(stdout, "xpool sim mig [flags]",
		       "MIG slices on a cluster of A100-80GB and H100-80GB GPUs (half the nodes\n"
		       "each), from the OpenB trace's GPU fractions and the GenAI trace's peak\n"
		       "GPU memory, each mapped to the smallest profile that fits. Compares three\n"
		       "static layouts (static-all-balanced, static-all-1g, static-all-7g) with\n"
		       "three dynamic policies (first-fit, hami-best-fit, xpool): requests\n"
		       "admitted, waiting and rejected, idle slices, reconfigurations (instances\n"
		       "created + destroyed) and the largest profile still obtainable\n"
		       "(docs/results/mig.md).",
		       flags);
}

static int parse(struct xp_flag *flags, int argc, char **argv, struct args *a, int *help)
{
	static const char *const streams[] = { "openb", "genai", "both", NULL };
	static const char *const arrivals[] = { "trace", "poisson", NULL };
	static const char *const outputs[] = { "table", "json", NULL };
	struct xp_err err = { 0 };
	const char *f;
	if (xp_flags_parse(flags, argc, argv, help, &err) < 0 ||
	    (xp_flag_get(flags, "stream")->sval &&
	     xp_flag_choice(flags, "stream", streams, &a->stream, &err) < 0) ||
	    (xp_flag_get(flags, "arrivals")->sval &&
	     xp_flag_choice(flags, "arrivals", arrivals, &a->poisson, &err) < 0) ||
	    (xp_flag_get(flags, "output")->sval &&
	     xp_flag_choice(flags, "output", outputs, &a->json, &err) < 0))
		return xp_cli_fail("sim mig", &err, 2);
	if (*help)
		return 0;
	a->openb = (f = xp_flag_get(flags, "openb-trace")->sval)
			   ? xstrdup(f)
			   : xp_cli_shared_path("traces/openb");
	a->genai = (f = xp_flag_get(flags, "genai-trace")->sval)
			   ? xstrdup(f)
			   : xp_cli_shared_path("traces/genai2026");
	if ((f = xp_flag_get(flags, "pods")->sval))
		a->pods = f;
	a->svg = xp_flag_get(flags, "svg")->sval;
	return numbers(flags, a) < 0 ? 2 : 0;
}

int xp_verb_sim_mig(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "stream", XP_FLAG_STR, "WHICH", "openb, genai or both (default)" },
		{ "openb-trace", XP_FLAG_STR, "DIR",
		  "OpenB trace (default ../shared/traces/openb)" },
		{ "pods", XP_FLAG_STR, "NAME|FILE", "OpenB pod list (default: default)" },
		{ "genai-trace", XP_FLAG_STR, "DIR",
		  "GenAI trace (default ../shared/traces/genai2026)" },
		{ "nodes", XP_FLAG_STR, "N", "nodes (default 4)" },
		{ "gpus", XP_FLAG_STR, "N", "GPUs per node (default 8)" },
		{ "models", XP_FLAG_STR, "LIST",
		  "GPU models, node i gets model i mod n (default A100-80GB,H100-80GB)" },
		{ "timeout", XP_FLAG_STR, "SECONDS", "longest wait in the queue (default 3600)" },
		{ "warm", XP_FLAG_STR, "SECONDS", "keep an ended job's instance warm (default 0)" },
		{ "arrivals", XP_FLAG_STR, "HOW", "trace (default) or poisson (seeded)" },
		{ "seed", XP_FLAG_STR, "N", "orders equal arrivals; poisson gaps (default 1)" },
		{ "headroom", XP_FLAG_STR, "X", "GenAI memory asked = peak x X (default 1.0)" },
		{ "svg", XP_FLAG_STR, "PREFIX", "largest profile over time to PREFIX-STREAM.svg" },
		{ "output", XP_FLAG_STR, "FORMAT", "table (default) or json", 'o' },
		{ NULL, 0, NULL, NULL },
	};
	struct args a = { .stream = 2, .seed = 1, .headroom = 1.0, .pods = "default" };
	struct xp_err err = { 0 };
	json_t *out = NULL;
	int help = 0, status;
	xp_migsim_defaults(&a.o);
	if ((status = parse(flags, argc, argv, &a, &help)) != 0 || help) {
		if (help)
			usage(flags);
		goto out;
	}
	out = a.json ? json_array() : NULL;
	for (int w = 0; w < 2 && status == 0; w++)
		if ((a.stream == w || a.stream == 2) && run_stream(&a, w, out, &err) < 0)
			status = xp_cli_fail("sim mig", &err, 1);
	if (out && status == 0) {
		char *s = json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("%s\n", s);
		free(s);
	}
out:
	json_decref(out);
	free(a.openb);
	free(a.genai);
	xp_flags_free(flags);
	return status;
}
