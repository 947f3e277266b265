/*
 * cmd_simserving: `xpool sim serving` - an inference service and an
 * elastic training backlog on one pool, under the static, reactive and
 * xpool policies (src/sim/serving.h, docs/results/serving.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "../lib/clock.h"
#include "../lib/xalloc.h"
#include "../sim/serving.h"
#include "../sim/svg.h"
#include "cli.h"
#include "flags.h"

#define VERB "sim serving"

struct args {
	struct xp_serve_opts o;
	char *load; /* malloc'd */
	int series, json, policies[XP_SERVE_NPOLICIES], npolicies;
	double window, time_scale, qps_scale;
	const char *svg;
	int defaulted; /* --load not given: the shared genai2026 day */
};

/* the numeric flags: a double or an integer into args, with bounds */
struct num {
	const char *flag;
	double lo, hi;
	double *d;
	int64_t *i;
	uint32_t *u;
};

static int numbers(struct xp_flag *flags, struct args *a, struct xp_err *err)
{
	int64_t seed = 1;
	struct num t[] = {
		{ "gpus", 1, 100000, NULL, NULL, &a->o.gpus },
		{ "min-replicas", 1, 100000, NULL, NULL, &a->o.min_replicas },
		{ "capacity", 1e-6, 1e6, &a->o.capacity, NULL, NULL },
		{ "target", 0.05, 1, &a->o.target, NULL, NULL },
		{ "slo", 0.001, 86400, &a->o.slo_s, NULL, NULL },
		{ "headroom", 0, 10, &a->o.headroom, NULL, NULL },
		{ "startup", 0, 86400, NULL, &a->o.startup_s, NULL },
		{ "grace", 0, 86400, NULL, &a->o.grace_s, NULL },
		{ "restart", 0, 86400, NULL, &a->o.restart_s, NULL },
		{ "lead", 0, 86400, NULL, &a->o.lead_s, NULL },
		{ "noise-z", 0, 100, &a->o.noise_z, NULL, NULL },
		{ "train-load", 0, 100, &a->o.train_load, NULL, NULL },
		{ "job-hours", 0.01, 1000, &a->o.job_hours, NULL, NULL },
		{ "window", 1, 86400, &a->window, NULL, NULL },
		{ "time-scale", 1e-3, 1e3, &a->time_scale, NULL, NULL },
		{ "qps-scale", 1e-6, 1e6, &a->qps_scale, NULL, NULL },
		{ "seed", 0, 9e15, NULL, &seed, NULL },
	};
	for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		const char *f = xp_flag_get(flags, t[k].flag)->sval;
		double d;
		long v;
		if (!f)
			continue;
		if (t[k].d) {
			if (xp_parse_double_flag(t[k].flag, f, t[k].lo, t[k].hi, t[k].d, err) < 0)
				return -1;
			continue;
		}
		if (xp_parse_int_flag(t[k].flag, f, (long)t[k].lo, (long)t[k].hi, &v, err) < 0)
			return -1;
		d = (double)v;
		if (t[k].i)
			*t[k].i = (int64_t)d;
		else
			*t[k].u = (uint32_t)d;
	}
	a->o.seed = (uint64_t)seed;
	if (a->o.min_replicas > a->o.gpus)
		return xp_errf(err, XP_EINVAL, "--min-replicas: %u is more than the pool's %u GPUs",
			       a->o.min_replicas, a->o.gpus);
	return 0;
}

static int policies(const char *spec, struct args *a, struct xp_err *err)
{
	size_t n;
	char **v = xp_split_list(spec, &n);
	int rc = 0;
	a->npolicies = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		int p = xp_serve_policy_parse(v[i]);
		if (p < 0 || a->npolicies == XP_SERVE_NPOLICIES)
			rc = xp_errf(
				err, XP_EINVAL,
				"--policy: expected a list of static, reactive, xpool, got '%s'",
				v[i]);
		else
			a->policies[a->npolicies++] = p;
	}
	if (rc == 0 && !a->npolicies)
		rc = xp_errf(err, XP_EINVAL, "--policy: expected static, reactive or xpool");
	xp_free_list(v, n);
	return rc;
}

static double pct(double x, double of)
{
	return of > 0 ? 100 * x / of : 0;
}

static void print_table(const struct xp_load *l, const struct args *a,
			const struct xp_serve_result *r, int n)
{
	static const char *const series[] = { "Generative Requests", "API Requests", "both" };
	const struct xp_serve_opts *o = &a->o;
	double st = 0;
	for (int k = 0; k < n; k++)
		if (r[k].policy == XP_SERVE_STATIC)
			st = r[k].train_gpu_h;
	printf("load: %s%s%s%s, %zu windows of %g s = %.1f h, peak %.2f qps, mean %.2f qps\n",
	       l->name, l->genai ? " (" : "", l->genai ? series[a->series] : "",
	       l->genai ? ")" : "", l->n, l->step_s, xp_load_duration(l) / 3600, xp_load_peak(l),
	       xp_load_mean(l));
	printf("pool %u GPUs; replica capacity %g qps (service %.2f s), HPA target %.0f%%, min %u; "
	       "SLO p99 <= %g s; training offered %.2f x the pool, seed %llu\n",
	       o->gpus, o->capacity, 1 / o->capacity, 100 * o->target, o->min_replicas, o->slo_s,
	       o->train_load, (unsigned long long)o->seed);
	printf("%-9s %6s %6s %6s %6s %9s %8s %6s %8s %8s %7s %7s %5s %6s %6s\n", "POLICY", "ALLOC%",
	       "BUSY%", "SERVE%", "REPL", "REPL_MAX", "SLO_MIN", "SLO%", "TRAIN_H", "xSTATIC",
	       "SHRINKS", "PREEMPT", "GROWS", "DONE", "CPU_S");
	for (int k = 0; k < n; k++) {
		const struct xp_serve_result *x = &r[k];
		char ratio[16] = "-";
		if (st > 0)
			snprintf(ratio, sizeof(ratio), "%.2f", x->train_gpu_h / st);
		printf("%-9s %5.1f%% %5.1f%% %5.1f%% %6.1f %9u %8u %5.2f%% %8.1f %8s %7u %7u %5u "
		       "%6u "
		       "%6.3f\n",
		       xp_serve_policy_name(x->policy), pct(x->alloc_gpu_h, x->pool_gpu_h),
		       pct(x->busy_gpu_h, x->pool_gpu_h), pct(x->serve_gpu_h, x->pool_gpu_h),
		       x->replicas_mean, x->replicas_max, x->slo_minutes,
		       pct(x->slo_minutes, x->minutes), x->train_gpu_h, ratio, x->shrinks,
		       x->preemptions, x->grows, x->jobs_done, x->cpu_s);
	}
}

static json_t *result_json(const struct xp_serve_result *x)
{
	json_t *o = json_pack(
		"{s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "policy", xp_serve_policy_name(x->policy),
		"hours", x->hours, "pool_gpu_hours", x->pool_gpu_h, "allocated_gpu_hours",
		x->alloc_gpu_h, "serving_gpu_hours", x->serve_gpu_h, "training_allocated_gpu_hours",
		x->train_alloc_gpu_h, "busy_gpu_hours", x->busy_gpu_h, "training_gpu_hours",
		x->train_gpu_h, "training_lost_gpu_hours", x->lost_gpu_h);
	json_object_update_new(
		o, json_pack("{s:f,s:f,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:f}",
			     "utilisation", pct(x->alloc_gpu_h, x->pool_gpu_h), "busy_share",
			     pct(x->busy_gpu_h, x->pool_gpu_h), "minutes", (int)x->minutes,
			     "slo_minutes", (int)x->slo_minutes, "load_minutes",
			     (int)x->load_minutes, "shrinks", (int)x->shrinks, "preemptions",
			     (int)x->preemptions, "grows", (int)x->grows, "scale_ups",
			     (int)x->scale_ups, "scale_downs", (int)x->scale_downs, "jobs",
			     (int)x->jobs, "jobs_done", (int)x->jobs_done, "replicas_max",
			     (int)x->replicas_max, "static_replicas", (int)x->static_replicas,
			     "replicas_mean", x->replicas_mean, "cpu_s", x->cpu_s));
	return o;
}

/* PREFIX-replicas.svg, -load.svg, -util.svg, -training.svg */
static int write_svg(const struct args *a, const struct xp_serve_result *r, int n,
		     struct xp_err *err)
{
	struct xp_svg_series s[XP_SERVE_NPOLICIES + 1];
	char path[1024];
	size_t ns = r[0].ns;
	double *need = xcalloc(ns + 1, sizeof(double));
	int rc = 0;
	for (size_t m = 0; m < ns; m++)
		need[m] = r[0].load[m] / a->o.capacity;
	static const struct {
		const char *file, *title, *ylabel;
	} plots[] = {
		{ "replicas", "service replicas (GPUs held) and the GPUs its load keeps busy",
		  "GPUs" },
		{ "load", "the load series", "requests/s" },
		{ "util", "allocated share of the pool", "allocated GPUs / pool" },
		{ "training", "GPUs held by training", "GPUs" },
	};
	for (size_t p = 0; p < 4 && rc == 0; p++) {
		size_t k = 0;
		for (int i = 0; i < n && p != 1; i++) {
			const struct xp_serve_result *x = &r[i];
			const double *y = p == 0 ? x->replicas : p == 2 ? x->util : x->train;
			s[k++] = (struct xp_svg_series){
				xp_serve_policy_name(x->policy), x->t_h, y, ns,
				(unsigned)x->policy + 1,	 0
			};
		}
		if (p == 0)
			s[k++] = (struct xp_svg_series){
				"load / capacity", r[0].t_h, need, ns, 4, 1
			};
		if (p == 1)
			s[k++] = (struct xp_svg_series){ "qps", r[0].t_h, r[0].load, ns, 4, 0 };
		snprintf(path, sizeof(path), "%s-%s.svg", a->svg, plots[p].file);
		rc = xp_svg_lines(path, plots[p].title, "hours", plots[p].ylabel, s, k, err);
	}
	free(need);
	return rc;
}

static void usage(const struct xp_flag *flags)
{
	xp_flags_usage(stdout, "xpool sim serving [flags]",
		       "An inference service, whose load comes from a series, and an elastic,\n"
		       "preemptible training backlog on one pool of GPUs, under three policies:\n"
		       "static (the service reserves the day's peak + 40 %), reactive (the HPA\n"
		       "alone, rigid training preempted) and xpool (the HPA with a forecast,\n"
		       "training shrunk and grown). Reports the pool's allocated and busy share,\n"
		       "minutes violating the latency SLO (M/M/c p99), training GPU-hours,\n"
		       "shrinks and preemptions (docs/results/serving.md). With no flags: the\n"
		       "genai2026 day from ../shared/traces.",
		       flags);
}

static int parse(struct xp_flag *flags, int argc, char **argv, struct args *a, int *help)
{
	static const char *const series[] = { "generative", "api", "both", NULL };
	static const char *const outputs[] = { "table", "json", NULL };
	struct xp_err err = { 0 };
	const char *f;
	if (xp_flags_parse(flags, argc, argv, help, &err) < 0 ||
	    (xp_flag_get(flags, "series")->sval &&
	     xp_flag_choice(flags, "series", series, &a->series, &err) < 0) ||
	    (xp_flag_get(flags, "output")->sval &&
	     xp_flag_choice(flags, "output", outputs, &a->json, &err) < 0) ||
	    ((f = xp_flag_get(flags, "policy")->sval) && policies(f, a, &err) < 0) ||
	    numbers(flags, a, &err) < 0)
		return xp_cli_fail(VERB, &err, 2);
	if (*help)
		return 0;
	a->defaulted = !(f = xp_flag_get(flags, "load")->sval);
	a->load = f ? xstrdup(f) : xp_cli_shared_path("traces/genai2026/qps.csv");
	a->svg = xp_flag_get(flags, "svg")->sval;
	return 0;
}

/* the load, or an error saying what is missing */
static int read_load(const struct args *a, struct xp_load *l, struct xp_err *err)
{
	if (a->defaulted && access(a->load, R_OK) != 0)
		return xp_errf(err, XP_ENOENT,
			       "%s: the default load series (the genai2026 day) is not there: "
			       "../shared is absent (set XP_SHARED_DIR to the shared folder, or "
			       "give --load FILE, any CSV of time,qps)",
			       a->load);
	int rc = xp_load_read(a->load, a->window, a->series, l, err);
	if (rc == 0)
		xp_load_scale(l, a->time_scale, a->qps_scale);
	return rc;
}

static int run(const struct args *a, struct xp_err *err)
{
	struct xp_load l;
	struct xp_serve_result r[XP_SERVE_NPOLICIES];
	int rc, n = 0;
	if ((rc = read_load(a, &l, err)) < 0)
		return rc;
	for (int k = 0; k < a->npolicies && rc == 0; k++, n++) {
		uint64_t t0 = xp_thread_cpu_ns();
		rc = xp_serve_run(&l, &a->o, a->policies[k], &r[k], err);
		r[k].cpu_s = (double)(xp_thread_cpu_ns() - t0) / 1e9;
	}
	if (rc < 0)
		n--;
	if (rc == 0 && a->svg)
		rc = write_svg(a, r, n, err);
	if (rc == 0 && a->json) {
		json_t *out = json_array();
		for (int k = 0; k < n; k++)
			json_array_append_new(out, result_json(&r[k]));
		char *s = json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("%s\n", s);
		free(s);
		json_decref(out);
	} else if (rc == 0) {
		print_table(&l, a, r, n);
	}
	for (int k = 0; k < n; k++)
		xp_serve_result_free(&r[k]);
	xp_load_free(&l);
	return rc;
}

int xp_verb_sim_serving(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "load", XP_FLAG_STR, "FILE",
		  "load series: any CSV of time,qps, or the GenAI qps.csv (default "
		  "../shared/traces/genai2026/qps.csv)" },
		{ "series", XP_FLAG_STR, "WHICH",
		  "GenAI rows: generative (default), api (the gateway's) or both" },
		{ "window", XP_FLAG_STR, "SECONDS",
		  "sum/average the series per window (default: the GenAI sample, 57 s; else 60)" },
		{ "time-scale", XP_FLAG_STR, "X", "stretch the series' time by X (default 1)" },
		{ "qps-scale", XP_FLAG_STR, "X", "multiply the rate by X (default 1)" },
		{ "gpus", XP_FLAG_STR, "N", "GPUs in the pool (default 64)" },
		{ "capacity", XP_FLAG_STR, "QPS", "requests/s one replica serves (default 0.29)" },
		{ "target", XP_FLAG_STR, "F", "HPA target per replica, of capacity (default 0.7)" },
		{ "min-replicas", XP_FLAG_STR, "N", "the service's minimum (default 2)" },
		{ "slo", XP_FLAG_STR, "SECONDS", "p99 response time bound (default 30)" },
		{ "headroom", XP_FLAG_STR, "F", "static: reserve peak x (1 + F) (default 0.4)" },
		{ "startup", XP_FLAG_STR, "SECONDS", "a replica's start to ready (default 60)" },
		{ "grace", XP_FLAG_STR, "SECONDS",
		  "training's exit after its signal (default 30)" },
		{ "restart", XP_FLAG_STR, "SECONDS", "a job's restart at a new size (default 60)" },
		{ "lead", XP_FLAG_STR, "SECONDS", "xpool's forecast horizon (default 300)" },
		{ "noise-z", XP_FLAG_STR, "Z",
		  "xpool: replicas for the SLO at forecast + Z sigma of the load (default 2)" },
		{ "train-load", XP_FLAG_STR, "X",
		  "training offered over the day, x the pool's GPU-time (default 1)" },
		{ "job-hours", XP_FLAG_STR, "H", "mean job duration at its size (default 2)" },
		{ "seed", XP_FLAG_STR, "N", "the training backlog's draw (default 1)" },
		{ "policy", XP_FLAG_STR, "LIST", "static,reactive,xpool (default all)" },
		{ "svg", XP_FLAG_STR, "PREFIX",
		  "plots to PREFIX-replicas.svg, -load.svg, -util.svg, -training.svg" },
		{ "output", XP_FLAG_STR, "FORMAT", "table (default) or json", 'o' },
		{ NULL, 0, NULL, NULL },
	};
	struct args a = { .window = 0,
			  .time_scale = 1,
			  .qps_scale = 1,
			  .npolicies = 3,
			  .policies = { XP_SERVE_STATIC, XP_SERVE_REACTIVE, XP_SERVE_XPOOL } };
	struct xp_err err = { 0 };
	int help = 0, status;
	xp_serve_defaults(&a.o);
	if ((status = parse(flags, argc, argv, &a, &help)) != 0 || help) {
		if (help)
			usage(flags);
		goto out;
	}
	if (run(&a, &err) < 0)
		status = xp_cli_fail(VERB, &err, 1);
out:
	free(a.load);
	xp_flags_free(flags);
	return status;
}
