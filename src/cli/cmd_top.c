/*
 * cmd_top: `xpool top` - the pool as a heatmap in the terminal (issue 7
 * §2): a row per node (state, CPU and memory in use), a cell per device
 * shaded by how much of it running jobs hold, unhealthy devices marked,
 * then totals. Filters as `xpool devices` (--class, --model) plus --zone.
 * Refreshes every --interval until interrupted; --once (or output that is
 * not a terminal) prints one frame without colour.
 *
 *   cell  meaning               colour (terminal)
 *   .     free                  green
 *   -     held below half       yellow
 *   +     held from half        orange
 *   #     held whole            red
 *   X     unhealthy             inverse
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/parse.h"
#include "../lib/strbuf.h"
#include "../lib/timefmt.h"
#include "cli.h"
#include "flags.h"

static volatile sig_atomic_t g_stop;

static void on_sigint(int sig)
{
	(void)sig;
	g_stop = 1;
}

/* one device cell: its mark and colour */
static void cell(struct xp_sb *out, const json_t *d, int colour)
{
	long long free_milli = 1000;
	const char *health = xp_cli_jstr(d, "health");
	xp_cli_jint(d, "free_milli", &free_milli);
	long long held = 1000 - free_milli;
	char mark = held <= 0 ? '.' : held < 500 ? '-' : held < 1000 ? '+' : '#';
	const char *col = held <= 0 ? "32" : held < 500 ? "33" : held < 1000 ? "38;5;208" : "31";
	if (health && !strcmp(health, "unhealthy")) {
		mark = 'X';
		col = "7";
	}
	if (colour)
		xp_sb_printf(out, "\033[%sm%c\033[0m", col, mark);
	else
		xp_sb_putc(out, mark);
}

static int frame(struct xp_cli *x, struct xp_flag *flags, int colour, struct xp_sb *out)
{
	json_t *nodes = NULL, *devs = NULL, *n, *d;
	struct xp_sb path = { 0 };
	size_t i, k = 0;
	int rc = -1;
	const char *zone = xp_flag_get(flags, "zone")->sval;
	static const char *const filters[] = { "class", "model", NULL };
	xp_sb_puts(&path, "/v1/devices");
	xp_cli_query_flags(&path, flags, filters);
	if (xp_cli_list(x, "/v1/nodes", "nodes", 1, &nodes) < 0 ||
	    xp_cli_list(x, path.s, "devices", 1, &devs) < 0)
		goto out;
	json_t *dl = json_object_get(devs, "devices");
	long long total = 0, held = 0, bad = 0, shown = 0;
	char ts[XP_TIME_LEN];
	xp_time_format(xp_cli_now_ms(), ts);
	xp_sb_printf(out, "xpool top - %s - %s\n", xp_client_base(x->client), ts);
	xp_sb_puts(out, "NODE                 STATE      CPU%  MEM%  DEVICES (. free  - <1/2  + >=1/2  # "
			"whole  X unhealthy)\n");
	json_array_foreach(json_object_get(nodes, "nodes"), i, n)
	{
		const char *name = xp_cli_jstr(n, "name");
		int skip = zone && (!xp_cli_jstr(n, "zone") || strcmp(zone, xp_cli_jstr(n, "zone")));
		/* the devices of this node: the device list comes in node order, so
		 * they are the next ones */
		struct xp_sb cells = { 0 };
		int nd = 0;
		for (; k < json_array_size(dl); k++) {
			d = json_array_get(dl, k);
			if (strcmp(xp_cli_jstr(d, "node"), name))
				break;
			long long fm = 1000;
			if (skip)
				continue;
			xp_cli_jint(d, "free_milli", &fm);
			cell(&cells, d, colour);
			nd++;
			total += 1000;
			held += 1000 - fm;
			bad += xp_cli_jstr(d, "health") && !strcmp(xp_cli_jstr(d, "health"), "unhealthy");
		}
		if (skip || (!nd && (xp_flag_get(flags, "class")->given ||
				     xp_flag_get(flags, "model")->given))) {
			xp_sb_free(&cells);
			continue; /* filtered out: no matching device */
		}
		long long cpu = 0, cpuf = 0, mem = 0, memf = 0;
		xp_cli_jint(n, "cpu_milli", &cpu);
		xp_cli_jint(n, "cpu_free_milli", &cpuf);
		xp_cli_jint(n, "memory_mib", &mem);
		xp_cli_jint(n, "memory_free_mib", &memf);
		xp_sb_printf(out, "%-20.20s %-9.9s %4lld  %4lld  %s\n", name, xp_cli_jstr(n, "state"),
			     cpu ? (cpu - cpuf) * 100 / cpu : 0, mem ? (mem - memf) * 100 / mem : 0,
			     cells.s ? cells.s : "");
		xp_sb_free(&cells);
		shown++;
	}
	xp_sb_printf(out, "\n%lld nodes, %lld devices: %.1f held, %.1f %% in use, %lld unhealthy\n",
		     shown, total / 1000, held / 1000.0, total ? 100.0 * (double)held / (double)total : 0.0,
		     bad);
	rc = 0;
out:
	json_decref(nodes);
	json_decref(devs);
	xp_sb_free(&path);
	return rc;
}

int xp_verb_top(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "class", XP_FLAG_STR, "CLASS", "only devices of this class (gpu, npu, ...)" },
		{ "model", XP_FLAG_STR, "MODEL", "only devices of this model" },
		{ "zone", XP_FLAG_STR, "ZONE", "only nodes of this zone" },
		{ "interval", XP_FLAG_STR, "DURATION", "refresh period (default 2s)" },
		{ "once", XP_FLAG_BOOL, NULL, "print one frame and exit (no colour)" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"top",
		"xpool top [--class CLASS] [--model MODEL] [--zone ZONE] [--interval 2s] [--once]",
		"The pool as a heatmap: a row per node, a cell per device shaded by how much\n"
		"of it running jobs hold; refreshed until Ctrl-C.",
		NULL,
		0,
		0,
	};
	static const char *const classes[] = { "gpu", "npu", "fpga", "asic",
					       "dpu", "cim", "cpu",  NULL };
	struct xp_cli x;
	int status = 2, cls;
	int64_t every = 2000;
	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_flag_get(flags, "class")->given &&
	    xp_flag_choice(flags, "class", classes, &cls, &x.err) < 0) {
		xp_cli_fail("top", &x.err, 2);
		goto out;
	}
	const char *iv = xp_flag_get(flags, "interval")->sval;
	if (iv && (xp_duration_parse(iv, 3600000, &every) < 0 || every < 200)) {
		status = xp_cli_errorf(&x, 2, "--interval: expected a duration 200ms..1h, got '%s'",
				       iv);
		goto out;
	}
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	int once = xp_flag_get(flags, "once")->given || !isatty(1);
	signal(SIGINT, on_sigint);
	status = 0;
	while (!g_stop) {
		struct xp_sb out = { 0 };
		if (frame(&x, flags, !once, &out) < 0) {
			xp_sb_free(&out);
			status = xp_cli_fail_api(&x);
			break;
		}
		if (!once)
			fputs("\033[H\033[2J", stdout);
		fputs(out.s, stdout);
		fflush(stdout);
		xp_sb_free(&out);
		if (once)
			break;
		struct timespec ts = { every / 1000, (every % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
out:
	return xp_cli_end(&x, status);
}
