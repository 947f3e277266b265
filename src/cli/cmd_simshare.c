/*
 * cmd_simshare: `xpool sim share` - the GenAI serving trace packed onto
 * GPUs whole, as enforced fractions and with memory overcommit, with the
 * minutes each packing would have been contended (src/sim/share.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "../lib/parse.h"
#include "../sim/share.h"
#include "cli.h"
#include "flags.h"

static int number(const char *flag, const char *v, double lo, double hi, double *out)
{
	if (xp_parse_double(v, out) == 0 && *out >= lo && *out <= hi)
		return 0;
	fprintf(stderr, "xpool sim share: --%s: expected a number in %g..%g, got '%s'\n", flag, lo,
		hi, v);
	return -1;
}

static void print_table(const struct xp_share_opts *o, const struct xp_share_result *r)
{
	printf("%s: %u pods over %u minutes (median pod: mean duty cycle %.1f%%, peak memory "
	       "%.1f GiB), %.0f GiB GPUs\n",
	       o->trace, r->pods, r->minutes, r->duty_p50_mean, r->peak_p50_gib, o->gpu_mem_gib);
	printf("%-11s %5s %12s %16s %12s %16s\n", "MODE", "GPUS", "HOT_MINUTES", "HOT_GPU_MINUTES",
	       "OOM_MINUTES", "OOM_GPU_MINUTES");
	for (int k = 0; k < XP_SHARE_NMODES; k++)
		printf("%-11s %5u %12u %16llu %12u %16llu\n", xp_share_mode_name(k), r->m[k].gpus,
		       r->m[k].hot_minutes, (unsigned long long)r->m[k].hot_gpu_minutes,
		       r->m[k].oom_minutes, (unsigned long long)r->m[k].oom_gpu_minutes);
	printf("fractions: memory cap = peak x %.2f, compute share = p%.0f duty cycle; "
	       "overcommit: memory admitted up to %.2f x; %u pods too big to share\n",
	       o->headroom, 100 * o->quantile, o->overcommit, r->too_big);
	printf("HOT: a GPU's summed duty cycle above 100 %% (its pods slowed each other); "
	       "OOM: its summed memory in use above the GPU's (an allocation would fail)\n");
}

static json_t *result_json(const struct xp_share_opts *o, const struct xp_share_result *r)
{
	json_t *modes = json_array();
	for (int k = 0; k < XP_SHARE_NMODES; k++)
		json_array_append_new(
			modes, json_pack("{s:s,s:i,s:i,s:I,s:i,s:I}", "mode", xp_share_mode_name(k),
					 "gpus", (int)r->m[k].gpus, "hot_minutes",
					 (int)r->m[k].hot_minutes, "hot_gpu_minutes",
					 (json_int_t)r->m[k].hot_gpu_minutes, "oom_minutes",
					 (int)r->m[k].oom_minutes, "oom_gpu_minutes",
					 (json_int_t)r->m[k].oom_gpu_minutes));
	return json_pack("{s:s,s:i,s:i,s:f,s:f,s:f,s:f,s:f,s:i,s:o}", "trace", o->trace, "pods",
			 (int)r->pods, "minutes", (int)r->minutes, "gpu_memory_gib",
			 o->gpu_mem_gib, "headroom", o->headroom, "overcommit", o->overcommit,
			 "duty_p50_mean", r->duty_p50_mean, "peak_p50_gib", r->peak_p50_gib,
			 "too_big", (int)r->too_big, "modes", modes);
}

int xp_verb_sim_share(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "trace", XP_FLAG_STR, "DIR", "the trace (default ../shared/traces/genai2026)" },
		{ "gpu-memory", XP_FLAG_STR, "GIB", "memory of a GPU in GiB (default 80)" },
		{ "headroom", XP_FLAG_STR, "X", "memory cap = measured peak x X (default 1.1)" },
		{ "overcommit", XP_FLAG_STR, "X", "memory admitted up to X x a GPU's (default 1.5)" },
		{ "output", XP_FLAG_STR, "FORMAT", "table (default) or json", 'o' },
		{ NULL, 0, NULL, NULL },
	};
	static const char *const outputs[] = { "table", "json", NULL };
	struct xp_share_opts o;
	struct xp_share_result r;
	struct xp_err err = { 0 };
	int help, status = 2, json = 0;
	const char *f;
	xp_share_defaults(&o);
	if (xp_flags_parse(flags, argc, argv, &help, &err) < 0 ||
	    (xp_flag_get(flags, "output")->sval &&
	     xp_flag_choice(flags, "output", outputs, &json, &err) < 0)) {
		status = xp_cli_fail("sim share", &err, 2);
		goto out;
	}
	if (help) {
		xp_flags_usage(stdout, "xpool sim share [flags]",
			       "The GenAI serving trace's pods (one GPU each in production) packed\n"
			       "whole, as enforced fractions (memory cap = peak x headroom, compute\n"
			       "share = p99 duty cycle) and with memory overcommit: GPUs needed, and\n"
			       "the minutes a GPU would have been over 100 % busy or out of memory\n"
			       "(docs/results/vgpu.md).",
			       flags);
		status = 0;
		goto out;
	}
	if ((f = xp_flag_get(flags, "trace")->sval))
		o.trace = f;
	if (((f = xp_flag_get(flags, "gpu-memory")->sval) &&
	     number("gpu-memory", f, 1, 1 << 20, &o.gpu_mem_gib) < 0) ||
	    ((f = xp_flag_get(flags, "headroom")->sval) &&
	     number("headroom", f, 1, 10, &o.headroom) < 0) ||
	    ((f = xp_flag_get(flags, "overcommit")->sval) &&
	     number("overcommit", f, 1, 10, &o.overcommit) < 0))
		goto out;
	if (xp_share_run(&o, &r, &err) < 0) {
		status = xp_cli_fail("sim share", &err, 1);
		goto out;
	}
	if (json) {
		json_t *j = result_json(&o, &r);
		char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("%s\n", s);
		free(s);
		json_decref(j);
	} else {
		print_table(&o, &r);
	}
	status = 0;
out:
	xp_flags_free(flags);
	return status;
}
