/*
 * cmd_service: `xpool services` (the list) and `xpool service
 * create|get|scale|delete|endpoints` (docs/cli.md "Services"); the proxy
 * verbs (proxy-config, proxy-sync) are in cmd_proxy.c.
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

#define SERVICE_FILE_MAX (1u << 20)

static void replicas_cell(struct xp_table *t, const json_t *s)
{
	const json_t *r = json_object_get(s, "replicas");
	long long ready = 0, desired = 0, min = 0, max = 0;
	xp_cli_jint(r, "ready", &ready);
	xp_cli_jint(r, "desired", &desired);
	xp_cli_jint(r, "min", &min);
	xp_cli_jint(r, "max", &max);
	if (min == max)
		xp_table_addf(t, "%lld/%lld", ready, desired);
	else
		xp_table_addf(t, "%lld/%lld (%lld..%lld)", ready, desired, min, max);
}

static void print_services(const json_t *reply)
{
	static const char *const hdr[] = { "NAME",  "TENANT",   "STATUS",  "READY/WANT",
					   "PORT",  "VERSION",  "RESTARTS", "MESSAGE", NULL };
	struct xp_table *t = xp_table_create(hdr);
	size_t i;
	json_t *s;
	const json_t *list = json_object_get(reply, "services");
	if (!list) /* one service */
		list = json_pack("[O]", reply);
	else
		json_incref((json_t *)list);
	json_array_foreach(list, i, s)
	{
		long long port = 0;
		xp_cli_cell_str(t, s, "name");
		xp_cli_cell_str(t, s, "tenant");
		xp_cli_cell_str(t, s, "status");
		replicas_cell(t, s);
		xp_cli_jint(json_object_get(s, "spec"), "port", &port);
		if (port > 0)
			xp_table_addf(t, "%lld", port);
		else
			xp_table_add(t, "-");
		xp_cli_cell_int(t, s, "version");
		xp_cli_cell_int(t, s, "restarts");
		xp_cli_cell_str(t, s, "message");
	}
	if (xp_table_rows(t))
		xp_table_print(t, stdout);
	else
		printf("no services\n");
	xp_table_destroy(t);
	json_decref((json_t *)list);
	const json_t *as = json_object_get(reply, "autoscale");
	if (as && xp_cli_jstr(as, "last")) /* one service: its autoscaler and scalings */
		printf("\nAutoscaler: %s\n", xp_cli_jstr(as, "last"));
	const json_t *sc = json_object_get(reply, "scalings");
	if (json_array_size(sc))
		printf("\nScalings (newest last):\n");
	json_array_foreach(sc, i, s)
	{
		long long from = 0, to = 0;
		xp_cli_jint(s, "from", &from);
		xp_cli_jint(s, "to", &to);
		printf("  %s  %lld -> %lld  %s\n", xp_cli_jstr(s, "at") ? xp_cli_jstr(s, "at") : "?",
		       from, to, xp_cli_jstr(s, "reason") ? xp_cli_jstr(s, "reason") : "");
	}
}

int xp_verb_services(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"services",
		"xpool services [-o table|json]",
		"List the services: status, ready replicas of those wanted, the proxy port, the "
		"template's version and the replicas that ended on their own.",
		NULL,
		0,
		0,
	};
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	return xp_cli_get_verb(argc, argv, &verb, flags, "/v1/services", NULL, print_services);
}

/* GET/POST/DELETE /v1/services/NAME[/sub]: one call, printed */
static int named_call(int argc, char **argv, const struct xp_cli_verb *verb, const char *method,
		      const char *sub, void (*print)(const json_t *))
{
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	struct xp_cli x;
	struct xp_sb p = { 0 };
	int status = 2;
	if (xp_cli_start(&x, verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_check_name(&x, "service NAME", x.args[0]) == 0) {
		xp_sb_puts(&p, "/v1/services/");
		xp_client_escape(&p, x.args[0]);
		xp_sb_puts(&p, sub);
		status = xp_cli_call_print(&x, method, p.s, print);
	}
	xp_sb_free(&p);
	return xp_cli_end(&x, status);
}

static int service_get(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"service get", "xpool service get NAME [-o table|json]",
		"One service: its status, replicas and why it is not ready (-o json: all of "
		"it, the definition included).",
		"NAME", 1, 1,
	};
	return named_call(argc, argv, &verb, "GET", "", print_services);
}

static void print_endpoints(const json_t *reply)
{
	static const char *const hdr[] = { "JOB", "NODE", "ADDRESS", "PORT", "VERSION", "WEIGHT",
					   NULL };
	struct xp_table *t = xp_table_create(hdr);
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(reply, "endpoints"), i, e)
	{
		xp_cli_cell_int(t, e, "job");
		xp_cli_cell_str(t, e, "node");
		xp_cli_cell_str(t, e, "address");
		xp_cli_cell_int(t, e, "port");
		xp_cli_cell_int(t, e, "version");
		xp_cli_cell_int(t, e, "weight");
	}
	if (xp_table_rows(t))
		xp_table_print(t, stdout);
	else
		printf("no ready replicas\n");
	xp_table_destroy(t);
}

static int service_endpoints(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"service endpoints", "xpool service endpoints NAME [-o table|json]",
		"The service's ready replicas: where a proxy sends its requests.", "NAME", 1, 1,
	};
	return named_call(argc, argv, &verb, "GET", "/endpoints", print_endpoints);
}

static void print_deleted(const json_t *reply)
{
	long long n = 0;
	xp_cli_jint(reply, "replicas_cancelled", &n);
	printf("service %s deleted; %lld replicas cancelled\n", xp_cli_jstr(reply, "name"), n);
}

static int service_delete(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"service delete", "xpool service delete NAME",
		"Delete a service; its replicas are cancelled.", "NAME", 1, 1,
	};
	return named_call(argc, argv, &verb, "DELETE", "", print_deleted);
}

/* application/yaml or application/json, by extension, else by the first byte */
static const char *doc_type(const char *path, const char *text)
{
	const char *dot = strrchr(path, '.');
	if (dot && !strcmp(dot, ".json"))
		return "application/json";
	if (dot && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml")))
		return "application/yaml";
	text += strspn(text, " \t\r\n");
	return *text == '{' ? "application/json" : "application/yaml";
}

static int service_create(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"service create",
		"xpool service create FILE",
		"Create a service from a YAML or JSON file ('-': standard input): kind: service, "
		"name, replicas (N or {min, max}), port (the proxy's), readiness, drain, "
		"template (a job spec of one replica). docs/api.md \"Services\".",
		"FILE",
		1,
		1,
	};
	struct xp_flag flags[] = { XP_CLIENT_FLAGS, { NULL, 0, NULL, NULL } };
	struct xp_cli x;
	char *text = NULL, *resp = NULL;
	size_t len = 0, rlen = 0;
	int status = 1;
	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	const char *path = strcmp(x.args[0], "-") ? x.args[0] : "/dev/stdin";
	if (xp_read_file(path, SERVICE_FILE_MAX, &text, &len, &x.err) < 0) {
		status = xp_cli_errorf(&x, 1, "%s", x.err.text);
		goto out;
	}
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (xp_client_call(x.client, "POST", "/v1/services", NULL, doc_type(path, text), text, len,
			   &resp, &rlen, &x.err) < 0) {
		status = xp_cli_fail_api(&x);
		goto out;
	}
	json_t *o = json_loadb(resp, rlen, 0, NULL);
	if (x.json)
		xp_cli_print_json(o);
	else
		printf("service %s created\n", xp_cli_jstr(o, "name") ? xp_cli_jstr(o, "name") : "?");
	json_decref(o);
	status = 0;
out:
	free(text);
	free(resp);
	return xp_cli_end(&x, status);
}

static int service_update(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"service update",
		"xpool service update NAME FILE [--canary N] [--weight PERCENT]",
		"Replace a service's definition. A change to its replicas (template, readiness, "
		"load) is a new version, rolled out within update.max_surge and "
		"update.max_unavailable; with --canary it runs on N replicas beside the old ones "
		"and takes --weight percent of the traffic (default 10) until `service promote` "
		"or `service rollback`.",
		"NAME FILE",
		2,
		2,
	};
	struct xp_flag flags[] = {
		{ "canary", XP_FLAG_STR, "N", "try the new version on N replicas first" },
		{ "weight", XP_FLAG_STR, "PERCENT", "the canary's share of the traffic (default 10)" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	struct xp_cli x;
	struct xp_sb p = { 0 };
	char *text = NULL, *resp = NULL;
	size_t len = 0, rlen = 0;
	int status = 2;
	int64_t v;
	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_check_name(&x, "service NAME", x.args[0]) < 0)
		goto out;
	xp_sb_puts(&p, "/v1/services/");
	xp_client_escape(&p, x.args[0]);
	xp_sb_puts(&p, "?");
	static const char *const q[] = { "canary", "weight", NULL };
	static const int64_t hi[] = { 1024, 100 };
	for (int i = 0; q[i]; i++) {
		const struct xp_flag *f = xp_flag_get(flags, q[i]);
		if (!f->given)
			continue;
		if (xp_parse_i64(f->sval, 0, hi[i], &v) < 0) {
			xp_cli_errorf(&x, 2, "--%s: expected 0..%lld, got '%s'", q[i],
				      (long long)hi[i], f->sval);
			goto out;
		}
		xp_sb_printf(&p, "%s=%lld&", q[i], (long long)v);
	}
	const char *path = strcmp(x.args[1], "-") ? x.args[1] : "/dev/stdin";
	status = 1;
	if (xp_read_file(path, SERVICE_FILE_MAX, &text, &len, &x.err) < 0) {
		status = xp_cli_errorf(&x, 1, "%s", x.err.text);
		goto out;
	}
	if (xp_cli_connect(&x) < 0) {
		status = x.status;
		goto out;
	}
	if (xp_client_call(x.client, "PUT", p.s, NULL, doc_type(path, text), text, len, &resp,
			   &rlen, &x.err) < 0) {
		status = xp_cli_fail_api(&x);
		goto out;
	}
	json_t *o = json_loadb(resp, rlen, 0, NULL);
	if (x.json)
		xp_cli_print_json(o);
	else
		printf("service %s updated: version %lld, %s\n", x.args[0],
		       (long long)json_integer_value(json_object_get(o, "version")),
		       xp_cli_jstr(o, "message") ? xp_cli_jstr(o, "message")
						 : xp_cli_jstr(o, "status") ?: "");
	json_decref(o);
	status = 0;
out:
	free(text);
	free(resp);
	xp_sb_free(&p);
	return xp_cli_end(&x, status);
}

static void print_state(const json_t *reply)
{
	printf("service %s: version %lld, %s%s%s\n", xp_cli_jstr(reply, "name"),
	       (long long)json_integer_value(json_object_get(reply, "version")),
	       xp_cli_jstr(reply, "status") ?: "", xp_cli_jstr(reply, "message") ? ": " : "",
	       xp_cli_jstr(reply, "message") ?: "");
}

static int service_promote(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"service promote", "xpool service promote NAME",
		"A canary goes on: the new version is rolled out to every replica.", "NAME", 1, 1,
	};
	return named_call(argc, argv, &verb, "POST", "/promote", print_state);
}

static int service_rollback(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"service rollback", "xpool service rollback NAME",
		"Back to the version before the last update (its definition and number); its "
		"replicas replace the others within the update bounds.",
		"NAME", 1, 1,
	};
	return named_call(argc, argv, &verb, "POST", "/rollback", print_state);
}

static int service_scale(int argc, char **argv)
{
	static const struct xp_cli_verb verb = {
		"service scale",
		"xpool service scale NAME REPLICAS [--reason TEXT]",
		"Set how many replicas the service keeps (within its min..max); the change and "
		"its reason are journaled.",
		"NAME REPLICAS",
		2,
		2,
	};
	struct xp_flag flags[] = {
		{ "reason", XP_FLAG_STR, "TEXT", "why (kept in the journal; default: by request)" },
		XP_CLIENT_FLAGS,
		{ NULL, 0, NULL, NULL },
	};
	struct xp_cli x;
	struct xp_sb p = { 0 }, done = { 0 };
	json_t *body = NULL;
	int64_t n;
	int status = 2;
	if (xp_cli_start(&x, &verb, flags, argc, argv))
		return xp_cli_end(&x, x.status);
	if (xp_cli_check_name(&x, "service NAME", x.args[0]) < 0)
		goto out;
	if (xp_parse_i64(x.args[1], 0, 1024, &n) < 0) {
		xp_cli_errorf(&x, 2, "REPLICAS: expected a count 0..1024, got '%s'", x.args[1]);
		goto out;
	}
	body = json_pack("{s:I}", "replicas", (json_int_t)n);
	if (xp_flag_get(flags, "reason")->given)
		json_object_set_new(body, "reason", json_string(xp_flag_get(flags, "reason")->sval));
	xp_sb_puts(&p, "/v1/services/");
	xp_client_escape(&p, x.args[0]);
	xp_sb_puts(&p, "/scale");
	xp_sb_printf(&done, "service %s scaled to %lld", x.args[0], (long long)n);
	status = xp_cli_mutate(&x, "POST", p.s, body, done.s);
out:
	json_decref(body);
	xp_sb_free(&p);
	xp_sb_free(&done);
	return xp_cli_end(&x, status);
}

int xp_verb_service(int argc, char **argv)
{
	static const struct xp_cli_sub subs[] = {
		{ "create", service_create, "create a service from a file" },
		{ "get", service_get, "one service: status and replicas" },
		{ "update", service_update, "a new definition: rolled out, or a canary" },
		{ "promote", service_promote, "a canary goes on to every replica" },
		{ "rollback", service_rollback, "back to the version before" },
		{ "scale", service_scale, "set how many replicas it keeps" },
		{ "delete", service_delete, "delete a service and its replicas" },
		{ "endpoints", service_endpoints, "its ready replicas" },
		{ "proxy-config", xp_verb_proxy_config, "an HAProxy configuration for services" },
		{ "proxy-sync", xp_verb_proxy_sync,
		  "keep a running HAProxy's servers in step with the endpoints" },
		{ NULL, NULL, NULL },
	};
	return xp_cli_dispatch("service", subs, argc, argv);
}
