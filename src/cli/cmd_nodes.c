/*
 * cmd_nodes: the verbs about nodes and devices - `xpool nodes`, `xpool
 * node NAME` (the node and its devices), `xpool cordon|uncordon|drain
 * NAME` (admin: PATCH the node's state) and `xpool devices`.
 *
 * Lists follow "next" to the end: a cluster view that silently stopped at
 * the first 100 nodes would mislead. Free capacity is shown next to the
 * total so a glance tells where a job could still go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../client/client.h"
#include "../lib/strbuf.h"
#include "../lib/xalloc.h"
#include "cli.h"
#include "flags.h"
#include "table.h"

/* "ready", or "ready,suspect" for an agent node that missed heartbeats */
static void cell_state(struct xp_table *t, const json_t *n)
{
	const char *st = json_string_value(json_object_get(n, "state"));
	if (json_is_true(json_object_get(n, "suspect")))
		xp_table_addf(t, "%s,suspect", st ? st : "?");
	else
		xp_table_add(t, st);
}

/* an agent node's last heartbeat: "3s" ago; "-" for emulated nodes */
static void cell_heartbeat(struct xp_table *t, const json_t *n)
{
	long long ms;
	if (xp_cli_jint(n, "heartbeat_age_ms", &ms) < 0)
		xp_table_add(t, NULL);
	else if (ms < 10000)
		xp_table_addf(t, "%.1fs", (double)ms / 1000.0);
	else
		xp_table_addf(t, "%llds", ms / 1000);
}

static void print_nodes(const json_t *list)
{
	static const char *const hdr[] = { "NAME",	"STATE",    "SOURCE", "HEARTBEAT",
					   "ARCH",	"ZONE",	    "CPU",    "CPU-FREE",
					   "MEMORY",	"MEM-FREE", "DEVICES", "DEV-FREE",
					   "JOBS",	NULL };
	struct xp_table *t = xp_table_create(hdr);
	json_t *n;
	size_t i;

	json_array_foreach(json_object_get(list, "nodes"), i, n)
	{
		xp_cli_cell_str(t, n, "name");
		cell_state(t, n);
		xp_cli_cell_str(t, n, "source");
		cell_heartbeat(t, n);
		xp_cli_cell_str(t, n, "arch");
		xp_cli_cell_str(t, n, "zone");
		xp_cli_cell_cpu(t, n, "cpu_milli");
		xp_cli_cell_cpu(t, n, "cpu_free_milli");
		xp_cli_cell_mib(t, n, "memory_mib");
		xp_cli_cell_mib(t, n, "memory_free_mib");
		xp_cli_cell_int(t, n, "devices");
		xp_cli_cell_int(t, n, "devices_free");
		xp_cli_cell_int(t, n, "jobs");
	}
	if (xp_table_rows(t))
		xp_table_print(t, stdout);
	else
		printf("no nodes\n");
	xp_table_destroy(t);
}

/* xpool nodes set NAME --mig-mode-change allow|deny: PATCH /v1/nodes/NAME */
static int nodes_set(int argc, char **argv)
{
	struct xp_flag flags[] = {
		XP_CLIENT_FLAGS,
		{ "mig-mode-change", XP_FLAG_STR, "allow|deny",
		  "let xpool turn MIG mode on for idle MIG-capable GPUs of the node when MIG "
		  "slices wait, and off again when whole-GPU work waits (default deny)" },
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"nodes set",
		"xpool nodes set NAME --mig-mode-change allow|deny",
		"Change what xpool may do on a node (admin): --mig-mode-change allow lets it turn "
		"MIG mode on for an idle GPU when a MIG slice waits that no GPU in MIG mode can "
		"give, and off again for an idle GPU in MIG mode when whole-GPU or fractional "
		"work waits that nothing places (the node's agent must also run with "
		"--mig-mode-change).",
		"NAME",
		1,
		1,
	};
	static const char *const leave[] = { "allow", "deny", NULL };
	struct xp_cli x;
	struct xp_sb path = { 0 };
	json_t *reply = NULL, *body = NULL;
	int status = 2, which = -1;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_check_name(&x, "node NAME", x.args[0]) < 0)
		goto out;
	if (!xp_flag_get(flags, "mig-mode-change")->given) {
		fprintf(stderr, "xpool nodes set: nothing to set (--mig-mode-change allow|deny)\n");
		goto out;
	}
	if (xp_flag_choice(flags, "mig-mode-change", leave, &which, &x.err) < 0) {
		fprintf(stderr, "xpool nodes set: %s\n", x.err.text);
		goto out;
	}
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	xp_sb_puts(&path, "/v1/nodes/");
	xp_client_escape(&path, x.args[0]);
	body = json_pack("{s:s}", "mig_mode_change", leave[which]);
	if (xp_cli_call(&x, "PATCH", path.s, body, &reply) < 0) {
		xp_cli_fail_api(&x);
		goto out;
	}
	if (x.json)
		xp_cli_print_json(reply);
	else
		printf("node %s: MIG mode changes %s\n", x.args[0],
		       which == 0 ? "allowed" : "denied");
	status = 0;
out:
	xp_sb_free(&path);
	json_decref(body);
	json_decref(reply);
	return xp_cli_end(&x, status);
}

int xp_verb_nodes(int argc, char **argv)
{
	if (argc > 0 && !strcmp(argv[0], "set"))
		return nodes_set(argc - 1, argv + 1);
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	static const struct xp_cli_verb verb = {
		"nodes",
		"xpool nodes [-o table|json]; xpool nodes set NAME --mig-mode-change allow|deny",
		"List the nodes with their state and their free and total CPU, memory and devices.",
		NULL,
		0,
		0,
	};
	struct xp_cli x;
	json_t *reply = NULL;
	int status = 1;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (xp_cli_list(&x, "/v1/nodes", "nodes", 1, &reply) < 0) {
		xp_cli_fail_api(&x);
		goto out;
	}
	if (x.json)
		xp_cli_print_json(reply);
	else
		print_nodes(reply);
	status = 0;
out:
	json_decref(reply);
	return xp_cli_end(&x, status);
}

/* "a=1,b=2" from a labels object, "-" when empty. */
static void labels_text(struct xp_sb *b, const json_t *labels)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)labels, k, v)
	{
		char *s = xp_cli_jtext(v);
		xp_sb_printf(b, "%s%s=%s", b->len ? "," : "", k, s ? s : "");
		free(s);
	}
}

/* "shared", "whole", "mig", "timeslice x4 (not isolated: memory, compute)";
 * ", memory x1.5" with overcommit */
static void print_mode(struct xp_table *t, const json_t *d)
{
	const char *mode = json_string_value(json_object_get(d, "mode"));
	const char *what = json_string_value(json_object_get(d, "not_isolated"));
	long long mem = 0, adm = 0, reps = 0;
	struct xp_sb b;
	xp_sb_init(&b);
	xp_sb_printf(&b, "%s", mode ? mode : "-");
	if (xp_cli_jint(d, "replicas", &reps) == 0 && reps > 1)
		xp_sb_printf(&b, " x%lld", reps);
	if (json_is_false(json_object_get(d, "isolated")))
		xp_sb_printf(&b, " (not isolated%s%s)", what ? ": " : "", what ? what : "");
	if (xp_cli_jint(d, "memory_admitted_mib", &adm) == 0 &&
	    xp_cli_jint(d, "memory_mib", &mem) == 0 && mem > 0)
		xp_sb_printf(&b, ", memory x%.3g", (double)adm / (double)mem);
	xp_table_add(t, b.s);
	xp_sb_free(&b);
}

/* A MIG GPU's view (/v1/devices' "mig"): its memory slices ("aaaa...."
 * with a letter per instance), then one line per instance: its profile,
 * placement, GI, UUID, state and the jobs in it */
static void print_mig(const json_t *d)
{
	const json_t *m = json_object_get(d, "mig"), *in;
	long long idx = 0, free_c = 0;
	size_t i, k;
	xp_cli_jint(d, "index", &idx);
	xp_cli_jint(m, "free_compute", &free_c);
	const char *big = json_string_value(json_object_get(m, "largest_free"));
	printf("\nMIG %s GPU %lld (%s): slices [%s], %lld of 7 compute slices free, largest "
	       "new profile %s\n",
	       json_string_value(json_object_get(d, "node")), idx,
	       json_string_value(json_object_get(d, "model")),
	       json_string_value(json_object_get(m, "slices")), free_c, big && *big ? big : "none");
	static const char *const hdr[] = { "SLICES", "PROFILE", "PLACEMENT", "GI",
					   "UUID",   "STATE",	"JOBS",	     NULL };
	struct xp_table *t = xp_table_create(hdr);
	json_array_foreach(json_object_get(m, "instances"), i, in)
	{
		long long start = 0, size = 0;
		json_t *j;
		struct xp_sb jobs = { 0 };
		xp_cli_jint(in, "start", &start);
		xp_cli_jint(in, "size", &size);
		xp_table_addf(t, "%c", (char)('a' + (int)(i % 26)));
		xp_cli_cell_str(t, in, "profile");
		xp_table_addf(t, "{%lld,%lld}", start, size);
		xp_cli_cell_int(t, in, "gi");
		xp_cli_cell_str(t, in, "uuid");
		xp_cli_cell_str(t, in, "state");
		json_array_foreach(json_object_get(in, "jobs"), k, j)
		{
			long long id = 0, r = 0;
			xp_cli_jint(j, "job", &id);
			xp_cli_jint(j, "replica", &r);
			xp_sb_printf(&jobs, "%s%lld/%lld", k ? "," : "", id, r);
		}
		xp_table_add(t, jobs.s);
		xp_sb_free(&jobs);
	}
	if (xp_table_rows(t))
		xp_table_print(t, stdout);
	else
		printf("no instances\n");
	xp_table_destroy(t);
}

static void print_devices(const json_t *list, int with_node)
{
	static const char *const hdr[] = { "NODE",   "INDEX",  "CLASS", "VENDOR", "MODEL",
					   "MEMORY", "HEALTH", "MODE",	"UTIL",	  "ISLAND",
					   "NUMA",   "FREE",   "FREE-MEM", "JOBS", NULL };
	struct xp_table *t = xp_table_create(with_node ? hdr : hdr + 1);
	json_t *d;
	size_t i;

	json_array_foreach(json_object_get(list, "devices"), i, d)
	{
		long long v;
		json_t *j;
		size_t k;
		struct xp_sb jobs = { 0 };
		if (with_node)
			xp_cli_cell_str(t, d, "node");
		xp_cli_cell_int(t, d, "index");
		xp_cli_cell_str(t, d, "class");
		xp_cli_cell_str(t, d, "vendor");
		xp_cli_cell_str(t, d, "model");
		xp_cli_cell_mib(t, d, "memory_mib");
		const char *why = json_string_value(json_object_get(d, "why"));
		if (why && *why) /* "unhealthy: ECC errors" */
			xp_table_addf(t, "%s: %s", json_string_value(json_object_get(d, "health")),
				      why);
		else
			xp_cli_cell_str(t, d, "health");
		print_mode(t, d);
		if (xp_cli_jint(d, "util_pct", &v) == 0 && v >= 0)
			xp_table_addf(t, "%lld%%", v);
		else
			xp_table_add(t, NULL);
		xp_cli_cell_int(t, d, "island");
		xp_cli_cell_int(t, d, "numa");
		if (xp_cli_jint(d, "free_milli", &v) == 0)
			xp_table_addf(t, "%lldm", v);
		else
			xp_table_add(t, NULL);
		xp_cli_cell_mib(t, d, "free_memory_mib");
		json_array_foreach(json_object_get(d, "jobs"), k, j)
		{
			char *s = xp_cli_jtext(j);
			xp_sb_printf(&jobs, "%s%s", k ? "," : "", s ? s : "?");
			free(s);
		}
		xp_table_add(t, jobs.s);
		xp_sb_free(&jobs);
	}
	if (xp_table_rows(t))
		xp_table_print(t, stdout);
	else
		printf("no devices\n");
	xp_table_destroy(t);
	json_array_foreach(json_object_get(list, "devices"), i, d) if (json_object_get(d, "mig"))
		print_mig(d);
}

static void describe_node(const json_t *n, const json_t *devices)
{
	static const struct {
		const char *label, *key;
		int unit; /* 0 text, 1 cpu, 2 MiB, 3 ms ago */
	} rows[] = {
		{ "Name:", "name", 0 },
		{ "State:", "state", 0 },
		{ "Source:", "source", 0 },
		{ "Arch:", "arch", 0 },
		{ "Zone:", "zone", 0 },
		{ "CPU:", "cpu_milli", 1 },
		{ "CPU free:", "cpu_free_milli", 1 },
		{ "Memory:", "memory_mib", 2 },
		{ "Memory free:", "memory_free_mib", 2 },
		{ "Devices:", "devices", 0 },
		{ "Devices free:", "devices_free", 0 },
		{ "Unhealthy:", "devices_unhealthy", 0 },
		{ "Jobs:", "jobs", 0 },
		{ "Heartbeat:", "heartbeat_age_ms", 3 },
		{ "Suspect:", "suspect", 0 },
		{ "MIG modes:", "mig_mode_change", 0 }, /* allow: xpool may turn MIG on */
	};
	struct xp_sb b = { 0 };

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char u[XP_UNIT_LEN];
		long long v;
		char *s = NULL;
		if (rows[i].unit && xp_cli_jint(n, rows[i].key, &v) == 0) {
			if (rows[i].unit == 1)
				xp_fmt_cpu(v, u);
			else if (rows[i].unit == 2)
				xp_fmt_mib(v, u);
			else
				snprintf(u, sizeof(u), "%.1fs ago", (double)v / 1000.0);
			s = xstrdup(u);
		} else {
			s = xp_cli_jtext(json_object_get(n, rows[i].key));
		}
		printf("%-14s %s\n", rows[i].label, s && *s ? s : "-");
		free(s);
	}
	const json_t *mr = json_object_get(n, "mig_mode_reserved"),
		     *mf = json_object_get(n, "mig_mode_refused");
	if (mr)
		printf("%-14s GPU %lld is being switched %s MIG mode for job %lld (since %s)\n", "",
		       (long long)json_integer_value(json_object_get(mr, "device")),
		       strcmp(json_string_value(json_object_get(mr, "mode")) ?: "", "off")
			       ? "to"
			       : "out of",
		       (long long)json_integer_value(json_object_get(mr, "job")),
		       json_string_value(json_object_get(mr, "since")));
	if (mf)
		printf("%-14s GPU %lld refused a MIG mode change at %s: %s\n", "",
		       (long long)json_integer_value(json_object_get(mf, "device")),
		       json_string_value(json_object_get(mf, "at")),
		       json_string_value(json_object_get(mf, "why")));
	labels_text(&b, json_object_get(n, "labels"));
	printf("%-14s %s\n", "Labels:", b.len ? b.s : "-");
	xp_sb_free(&b);
	if (json_array_size(json_object_get(devices, "devices"))) {
		printf("\n");
		print_devices(devices, 0);
	}
}

int xp_verb_node(int argc, char **argv)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	static const struct xp_cli_verb verb = {
		"node",
		"xpool node NAME [-o table|json]",
		"Show one node and its devices (-o json: the node object only).",
		"NAME",
		1,
		1,
	};
	struct xp_cli x;
	struct xp_sb path = { 0 };
	json_t *reply = NULL, *devs = NULL;
	int status = 2;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_check_name(&x, "node NAME", x.args[0]) < 0)
		goto out;
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	xp_sb_puts(&path, "/v1/nodes/");
	xp_client_escape(&path, x.args[0]);
	if (xp_cli_call(&x, "GET", path.s, NULL, &reply) < 0) {
		xp_cli_fail_api(&x);
		goto out;
	}
	if (x.json) {
		xp_cli_print_json(reply);
	} else {
		xp_sb_reset(&path);
		xp_sb_puts(&path, "/v1/devices");
		xp_client_query(&path, "node", x.args[0]);
		if (xp_cli_list(&x, path.s, "devices", 1, &devs) < 0) {
			xp_cli_fail_api(&x);
			goto out;
		}
		describe_node(reply, devs);
	}
	status = 0;
out:
	xp_sb_free(&path);
	json_decref(reply);
	json_decref(devs);
	return xp_cli_end(&x, status);
}

/* PATCH /v1/nodes/NAME {"state": state}; done names the change. */
static int set_state(int argc, char **argv, const struct xp_cli_verb *verb, const char *state,
		     const char *done)
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	struct xp_cli x;
	struct xp_sb path = { 0 };
	json_t *reply = NULL, *body = NULL;
	int status = 2;

	if (xp_cli_start(&x, verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_check_name(&x, "node NAME", x.args[0]) < 0)
		goto out;
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	xp_sb_puts(&path, "/v1/nodes/");
	xp_client_escape(&path, x.args[0]);
	body = json_pack("{s:s}", "state", state);
	if (xp_cli_call(&x, "PATCH", path.s, body, &reply) < 0) {
		xp_cli_fail_api(&x);
		goto out;
	}
	if (x.json) {
		xp_cli_print_json(reply);
	} else {
		const char *now = xp_cli_jstr(reply, "state");
		if (now && strcmp(now, state) != 0)
			printf("node %s %s (now %s)\n", x.args[0], done, now);
		else
			printf("node %s %s\n", x.args[0], done);
	}
	status = 0;
out:
	xp_sb_free(&path);
	json_decref(body);
	json_decref(reply);
	return xp_cli_end(&x, status);
}

int xp_verb_cordon(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"cordon",
		"xpool cordon NAME",
		"Stop placing new work on a node; what runs there keeps running (admin).",
		"NAME",
		1,
		1,
	};
	return set_state(argc, argv, &verb, "cordoned", "cordoned");
}

int xp_verb_uncordon(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"uncordon",
		"xpool uncordon NAME",
		"Make a cordoned, draining or drained node ready for new work again (admin).",
		"NAME",
		1,
		1,
	};
	return set_state(argc, argv, &verb, "ready", "uncordoned");
}

int xp_verb_drain(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"drain",
		"xpool drain NAME",
		"Stop placing new work on a node; it becomes drained when its last job ends\n"
		"(admin).",
		"NAME",
		1,
		1,
	};
	return set_state(argc, argv, &verb, "draining", "draining");
}

int xp_verb_devices(int argc, char **argv)
{
	struct xp_flag flags[] = {
		{ "node", XP_FLAG_STR, "NAME", "only this node's devices" },
		{ "class", XP_FLAG_STR, "CLASS", "only gpu, npu, fpga, asic, dpu, cim or cpu" },
		{ "model", XP_FLAG_STR, "MODEL", "only this model" },
		{ "mig", XP_FLAG_BOOL, NULL,
		  "only GPUs in MIG mode: their slices, instances and the jobs in them" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	static const struct xp_cli_verb verb = {
		"devices",
		"xpool devices [--node NAME] [--class CLASS] [--model MODEL] [--mig]",
		"List devices: class, model, memory, health, topology, what is free and which\n"
		"jobs hold them; a GPU in MIG mode also shows its slices and instances.",
		NULL,
		0,
		0,
	};
	static const char *const classes[] = { "gpu", "npu", "fpga", "asic",
					       "dpu", "cim", "cpu",  NULL };
	struct xp_cli x;
	struct xp_sb path = { 0 };
	json_t *reply = NULL;
	int status = 2, cls;

	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_flag_get(flags, "class")->given &&
	    xp_flag_choice(flags, "class", classes, &cls, &x.err) < 0) {
		xp_cli_fail("devices", &x.err, 2);
		goto out;
	}
	if (xp_flag_get(flags, "node")->given &&
	    xp_cli_check_name(&x, "--node", xp_flag_get(flags, "node")->sval) < 0)
		goto out;
	xp_sb_puts(&path, "/v1/devices");
	static const char *const filters[] = { "node", "class", "model", NULL };
	xp_cli_query_flags(&path, flags, filters);
	status = 1;
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (xp_cli_list(&x, path.s, "devices", 1, &reply) < 0) {
		xp_cli_fail_api(&x);
		goto out;
	}
	if (xp_flag_get(flags, "mig")->bval) { /* MIG GPUs only */
		json_t *all = json_object_get(reply, "devices"), *keep = json_array(), *d;
		size_t i;
		json_array_foreach(all, i, d) if (json_object_get(d, "mig"))
			json_array_append(keep, d);
		json_object_set_new(reply, "devices", keep);
	}
	if (x.json)
		xp_cli_print_json(reply);
	else if (xp_flag_get(flags, "mig")->bval) {
		json_t *d;
		size_t i;
		json_array_foreach(json_object_get(reply, "devices"), i, d) print_mig(d);
		if (!json_array_size(json_object_get(reply, "devices")))
			printf("no GPU in MIG mode\n");
	} else
		print_devices(reply, 1);
	status = 0;
out:
	xp_sb_free(&path);
	json_decref(reply);
	return xp_cli_end(&x, status);
}
