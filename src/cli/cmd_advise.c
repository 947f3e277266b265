/*
 * cmd_advise: `xpool forecast` (the cost model fitted on the ledger's
 * hourly history and the hours ahead) and `xpool advise` (savings, admin).
 * GET /v1/forecast and /v1/advice; docs/design/metering.md.
 */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/strbuf.h"
#include "cli.h"
#include "flags.h"
#include "table.h"

static void print_forecast(const json_t *rep)
{
	const char *of = xp_cli_jstr(rep, "of"), *cur = xp_cli_jstr(rep, "currency");
	json_t *m = json_object_get(rep, "model"), *f;
	if (!json_is_object(m)) { /* too little history: say so, and how much it needs */
		printf("%s of %s: no forecast: %s\n", of,
		       xp_cli_jstr(rep, "tenant") ? xp_cli_jstr(rep, "tenant") : "the pool",
		       xp_cli_jstr(rep, "why") ? xp_cli_jstr(rep, "why")
					       : "not enough history to fit");
		return;
	}
	printf("%s of %s, last 24 h: %.2f %s\n", of,
	       xp_cli_jstr(rep, "tenant") ? xp_cli_jstr(rep, "tenant") : "the pool",
	       json_real_value(json_object_get(rep, "last_24h")), cur && *cur ? cur : "");
	json_t *w = json_object_get(m, "w");
	printf("model: C(t+1) = %.3f C(t) + %.3f x (%.2f seasonal %+.2f growth %+.2f utilisation) "
	       "%+.3f\n",
	       json_real_value(json_object_get(m, "a")), json_real_value(json_object_get(m, "b")),
	       json_real_value(json_object_get(w, "seasonal")),
	       json_real_value(json_object_get(w, "growth")),
	       json_real_value(json_object_get(w, "utilisation")),
	       json_real_value(json_object_get(m, "intercept")));
	printf("error on the held-out hours: MAPE %.1f %% (persistence %.1f %%)\n",
	       json_real_value(json_object_get(m, "mape")),
	       json_real_value(json_object_get(m, "mape_persistence")));
	printf("next %zu hours: %.2f %s\n", json_array_size(json_object_get(rep, "forecast")),
	       json_real_value(json_object_get(rep, "forecast_total")), cur && *cur ? cur : "");
	size_t i;
	json_array_foreach(json_object_get(rep, "forecast"), i, f) if (i < 6)
		printf("  %s  %.3f\n", xp_cli_jstr(f, "at"), json_real_value(json_object_get(f, "value")));
}

int xp_verb_forecast(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "tenant", XP_FLAG_STR, "TENANT", "this tenant's cost (default: yours; admin: the pool)" },
		{ "days", XP_FLAG_STR, "N", "history to fit, 3..365 days (default 30)" },
		{ "hours", XP_FLAG_STR, "N", "hours ahead, 1..720 (default 24)" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"forecast",
		"xpool forecast [--tenant T] [--days 30] [--hours 24]",
		"The hourly cost (GPU-hours without a price table) fitted with the model\n"
		"C(t+1) = a C(t) + b sum w_i F_i(t) - seasonal, growth and utilisation factors -\n"
		"its error on the last 7 days, and the hours ahead.",
		NULL,
		0,
		0,
	};
	static const char *const q[] = { "tenant", "days", "hours", NULL };
	return xp_cli_get_verb(argc, argv, &verb, flags, "/v1/forecast", q, print_forecast);
}

static void print_advice(const json_t *rep)
{
	static const char *const hdr[] = { "KIND", "SUBJECT", "SAVING/MONTH", "ADVICE", NULL };
	struct xp_table *t = xp_table_create(hdr);
	const char *cur = xp_cli_jstr(rep, "currency");
	json_t *a;
	size_t i;
	json_array_foreach(json_object_get(rep, "advice"), i, a)
	{
		xp_cli_cell_str(t, a, "kind");
		xp_cli_cell_str(t, a, "subject");
		xp_table_addf(t, "%.2f %s", json_real_value(json_object_get(a, "saving_per_month")), cur);
		xp_cli_cell_str(t, a, "detail");
	}
	if (xp_table_rows(t))
		xp_table_print(t, stdout);
	else
		printf("no advice: nothing idle, oversized or in dear hours that we can see\n");
	xp_table_destroy(t);
	printf("total: %.2f %s a month\n",
	       json_real_value(json_object_get(rep, "total_saving_per_month")), cur);
	json_array_foreach(json_object_get(rep, "notes"), i, a)
		printf("not judged: %s\n", json_string_value(a));
}

int xp_verb_advise(int argc, char **argv)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	static const struct xp_cli_verb verb = {
		"advise",
		"xpool advise",
		"What could be saved, and about how much a month (admin): idle guarantees,\n"
		"jobs holding GPUs they barely use, fractional shares larger than their use,\n"
		"nodes that could be drained and powered off, batch work in dear hours.",
		NULL,
		0,
		0,
	};
	return xp_cli_get_verb(argc, argv, &verb, flags, "/v1/advice", NULL, print_advice);
}
