/*
 * cmd_cost: metering and cost (docs/api.md "Usage and cost") -
 *
 *   xpool cost [--by tenant|queue|job] [--since 7d] [--until T] [--tenant T] [--csv]
 *   xpool prices                  the price table
 *   xpool prices set FILE         replace it (admin; YAML or JSON)
 *   xpool count JOB NAME=N ...    add to a job's business counters
 *
 * The window, the grouping and the CSV are the controller's: these verbs
 * check their flags, ask and print.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/fileio.h"
#include "../lib/parse.h"
#include "../lib/strbuf.h"
#include "cli.h"
#include "flags.h"
#include "table.h"

#define PRICE_FILE_MAX (1u << 20)

void xp_cli_print_cost(const json_t *rep)
{
	static const char *const hdr[] = { "KEY",     "CPU(core-h)", "MEM(GiB-h)", "DEVICES(h)",
					   "ENERGY(kWh)", "COUNTERS",	 "COST",       NULL };
	const char *by = xp_cli_jstr(rep, "by"), *cur = xp_cli_jstr(rep, "currency");
	struct xp_table *t = xp_table_create(hdr);
	json_t *rows = json_object_get(rep, "rows"), *r;
	size_t i;
	for (i = 0; i <= json_array_size(rows); i++) {
		int last = i == json_array_size(rows);
		r = last ? json_object_get(rep, "total") : json_array_get(rows, i);
		char *key = last ? strdup("total") : xp_cli_jtext(json_object_get(r, by));
		struct xp_sb d = { 0 }, c = { 0 };
		const char *k;
		json_t *v;
		json_object_foreach(json_object_get(r, "device_hours"), k, v)
			xp_sb_printf(&d, "%s%s=%.3f", d.len ? " " : "", k, json_real_value(v));
		json_object_foreach(json_object_get(r, "counters"), k, v)
			xp_sb_printf(&c, "%s%s=%" JSON_INTEGER_FORMAT, c.len ? " " : "", k,
				     json_integer_value(v));
		xp_table_add(t, key);
		xp_table_addf(t, "%.3f", json_real_value(json_object_get(r, "cpu_core_hours")));
		xp_table_addf(t, "%.3f", json_real_value(json_object_get(r, "memory_gib_hours")));
		xp_table_add(t, d.s);
		xp_table_addf(t, "%.3f", json_real_value(json_object_get(r, "energy_kwh")));
		xp_table_add(t, c.s);
		if (cur && *cur)
			xp_table_addf(t, "%.2f %s", json_real_value(json_object_get(r, "cost")), cur);
		else
			xp_table_add(t, "(no prices)");
		free(key);
		xp_sb_free(&d);
		xp_sb_free(&c);
	}
	printf("usage by %s from %s to %s\n", by ? by : "?", xp_cli_jstr(rep, "since"),
	       xp_cli_jstr(rep, "until"));
	xp_table_print(t, stdout);
	xp_table_destroy(t);
}

int xp_verb_cost(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "by", XP_FLAG_STR, "WHAT", "group by tenant (default), queue or job" },
		{ "since", XP_FLAG_STR, "WHEN", "from a time or a duration ago (default 30d)" },
		{ "until", XP_FLAG_STR, "WHEN", "to a time or a duration ago (default now)" },
		{ "tenant", XP_FLAG_STR, "TENANT", "only this tenant (admin; others see their own)" },
		{ "csv", XP_FLAG_BOOL, NULL, "print the controller's CSV export" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"cost",
		"xpool cost [--by tenant|queue|job] [--since 7d] [--until WHEN] [--tenant T] [--csv]",
		"Metered usage and its cost: CPU core-hours, memory GiB-hours, device-hours by\n"
		"model, energy, job counters, priced by the controller's price table (xpool\n"
		"prices). Running jobs count up to now.",
		NULL,
		0,
		0,
	};
	static const char *const bys[] = { "tenant", "queue", "job", NULL };
	struct xp_cli x;
	struct xp_sb path = { 0 };
	json_t *rep = NULL;
	char *resp = NULL;
	size_t rlen;
	int status = 2, by;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_flag_get(flags, "by")->given && xp_flag_choice(flags, "by", bys, &by, &x.err) < 0) {
		xp_cli_fail("cost", &x.err, 2);
		goto out;
	}
	if (xp_flag_get(flags, "tenant")->given &&
	    xp_cli_check_name(&x, "--tenant", xp_flag_get(flags, "tenant")->sval) < 0)
		goto out;
	xp_sb_puts(&path, "/v1/usage");
	static const char *const q[] = { "by", "since", "until", "tenant", NULL };
	xp_cli_query_flags(&path, flags, q);
	int csv = xp_flag_get(flags, "csv")->given;
	if (csv)
		xp_client_query(&path, "format", "csv");
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (csv) {
		const char *h[] = { "Accept: text/csv", NULL };
		if (xp_client_call(x.client, "GET", path.s, h, NULL, NULL, 0, &resp, &rlen,
				   &x.err) < 0) {
			status = xp_cli_fail_api(&x);
			goto out;
		}
		fwrite(resp, 1, rlen, stdout);
	} else {
		if (xp_cli_call(&x, "GET", path.s, NULL, &rep) < 0) {
			status = xp_cli_fail_api(&x);
			goto out;
		}
		if (x.json)
			xp_cli_print_json(rep);
		else
			xp_cli_print_cost(rep);
	}
	status = 0;
out:
	free(resp);
	json_decref(rep);
	xp_sb_free(&path);
	return xp_cli_end(&x, status);
}

static void print_prices(const json_t *rep)
{
	const char *k;
	json_t *v;
	size_t i;
	printf("currency: %s\ncpu: %g per core-hour\nmemory: %g per GiB-hour\n"
	       "energy: %g per kWh\ndevices (per device-hour):\n",
	       xp_cli_jstr(rep, "currency"), json_real_value(json_object_get(rep, "cpu")),
	       json_real_value(json_object_get(rep, "memory")),
	       json_real_value(json_object_get(rep, "energy")));
	json_object_foreach(json_object_get(rep, "devices"), k, v)
		printf("  %s: %g\n", k, json_real_value(v));
	json_array_foreach(json_object_get(rep, "time_of_day"), i, v)
	{
		long long f = 0, t = 0;
		xp_cli_jint(v, "from", &f);
		xp_cli_jint(v, "to", &t);
		printf("UTC %02lld:00-%02lld:00 x %g\n", f, t, json_real_value(json_object_get(v, "factor")));
	}
}

static int prices_show(int argc, char **argv)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	static const struct xp_cli_verb verb = {
		"prices", "xpool prices", "Show the price table (xpool prices set FILE sets it).",
		NULL,	  0,		  0,
	};
	return xp_cli_get_verb(argc, argv, &verb, flags, "/v1/prices", NULL, print_prices);
}

static int prices_set(int argc, char **argv)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	static const struct xp_cli_verb verb = {
		"prices set",
		"xpool prices set FILE",
		"Replace the price table (admin) with FILE, YAML or JSON ('-' = stdin):\n"
		"currency, cpu (per core-hour), memory (per GiB-hour), energy (per kWh),\n"
		"devices {MODEL: per device-hour, default: ...}, time_of_day [{from, to, "
		"factor}].",
		"FILE",
		1,
		1,
	};
	struct xp_cli x;
	char *text = NULL, *resp = NULL;
	size_t len = 0, rlen;
	int status = 1;
	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_read_file(strcmp(x.args[0], "-") ? x.args[0] : "/dev/stdin", PRICE_FILE_MAX, &text,
			 &len, &x.err) < 0) {
		status = xp_cli_errorf(&x, 1, "%s", x.err.text);
		goto out;
	}
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	const char *p = text;
	while (*p == ' ' || *p == '\n' || *p == '\t')
		p++;
	if (xp_client_call(x.client, "PUT", "/v1/prices", NULL,
			   *p == '{' ? "application/json" : "application/yaml", text, len, &resp,
			   &rlen, &x.err) < 0) {
		status = xp_cli_fail_api(&x);
		goto out;
	}
	if (x.json)
		printf("%.*s\n", (int)rlen, resp);
	else
		printf("price table set\n");
	status = 0;
out:
	free(text);
	free(resp);
	return xp_cli_end(&x, status);
}

int xp_verb_prices(int argc, char **argv)
{
	static const struct xp_cli_sub subs[] = {
		{ "set", prices_set, "replace the price table (admin)" },
		{ NULL, NULL, NULL },
	};
	if (argc > 0 && !strcmp(argv[0], "set"))
		return xp_cli_dispatch("prices", subs, argc, argv);
	return prices_show(argc, argv);
}

int xp_verb_count(int argc, char **argv)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	static const struct xp_cli_verb verb = {
		"count",
		"xpool count JOB NAME=N [NAME=N ...]",
		"Add to a job's business counters (training runs, inference requests...),\n"
		"metered with its usage: names of a-z, 0-9 and _, counts 1..10^12.",
		"JOB NAME=N",
		2,
		33,
	};
	struct xp_cli x;
	struct xp_sb path = { 0 }, done = { 0 };
	json_t *body;
	long long id;
	int status = 2;
	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	body = json_object();
	if (xp_cli_parse_id(&x, "job ID", x.args[0], &id) < 0)
		goto out;
	for (int i = 1; i < x.nargs; i++) {
		const char *eq = strchr(x.args[i], '=');
		int64_t n;
		if (!eq || eq == x.args[i] ||
		    xp_parse_i64(eq + 1, 1, 1000000000000LL, &n) < 0) {
			xp_cli_errorf(&x, 2, "expected NAME=N with N 1..10^12, got '%s'",
				      x.args[i]);
			goto out;
		}
		char name[64];
		snprintf(name, sizeof(name), "%.*s", (int)(eq - x.args[i]), x.args[i]);
		json_object_set_new(body, name, json_integer(n));
	}
	xp_sb_printf(&path, "/v1/jobs/%lld/counters", id);
	xp_sb_printf(&done, "job %lld counters updated", id);
	status = xp_cli_mutate(&x, "POST", path.s, body, done.s);
out:
	json_decref(body);
	xp_sb_free(&path);
	xp_sb_free(&done);
	return xp_cli_end(&x, status);
}
