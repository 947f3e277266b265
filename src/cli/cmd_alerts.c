/*
 * cmd_alerts: `xpool alerts` - the alert groups firing now and the noise
 * filter's counters (GET /v1/alerts, admin; docs/design/alerts.md).
 */
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "cli.h"
#include "flags.h"
#include "table.h"

static void print_alerts(const json_t *rep)
{
	static const char *const hdr[] = { "RULE", "GROUP", "FIRING", "FLAPPING", "SUBJECTS", NULL };
	struct xp_table *t = xp_table_create(hdr);
	json_t *g;
	size_t i;
	json_array_foreach(json_object_get(rep, "active"), i, g)
	{
		json_t *fir = json_object_get(g, "firing"), *flap = json_object_get(g, "flapping");
		json_t *first = json_array_size(fir) ? json_array_get(fir, 0) : json_array_get(flap, 0);
		size_t more = json_array_size(fir) + json_array_size(flap) - 1;
		xp_cli_cell_str(t, g, "rule");
		xp_cli_cell_str(t, g, "group");
		xp_table_addf(t, "%zu", json_array_size(fir));
		xp_table_addf(t, "%zu", json_array_size(flap));
		if (more)
			xp_table_addf(t, "%s (+%zu)", xp_cli_jstr(first, "subject"), more);
		else
			xp_table_add(t, xp_cli_jstr(first, "subject"));
	}
	xp_table_print(t, stdout);
	xp_table_destroy(t);
	json_t *s = json_object_get(rep, "stats");
	printf("\n%lld signals, %lld state changes, %lld faults -> %lld notifications "
	       "(%lld delivered, %lld failed)\n",
	       (long long)json_integer_value(json_object_get(s, "signals")),
	       (long long)(json_integer_value(json_object_get(s, "signals")) -
			   json_integer_value(json_object_get(s, "duplicates"))),
	       (long long)json_integer_value(json_object_get(s, "faults")),
	       (long long)json_integer_value(json_object_get(s, "notifications")),
	       (long long)json_integer_value(json_object_get(s, "delivered")),
	       (long long)json_integer_value(json_object_get(s, "failed")));
}

int xp_verb_alerts(int argc, char **argv)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	static const struct xp_cli_verb verb = {
		"alerts",
		"xpool alerts",
		"The alert groups firing now (rule, group, subjects firing or flapping) and how\n"
		"many raw signals became notifications (admin).",
		NULL,
		0,
		0,
	};
	return xp_cli_get_verb(argc, argv, &verb, flags, "/v1/alerts", NULL, print_alerts);
}
