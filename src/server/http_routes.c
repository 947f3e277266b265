/*
 * http_routes: the route table - method, path, who may call it, how big a
 * body it takes and how the body is read at the edge - and the edge's
 * parsing, on an HTTP thread, before anything reaches the owner.
 *
 * Every document a handler gets is parsed here into a typed struct
 * (cmd->payload): job specs, job changes, workflows, descriptors, queue
 * definitions, price tables, services, heartbeats and task reports, and
 * the small bodies (a node's state, a tenant, a token, a join, a scale,
 * job counters: the route's parse function, struct xp_small). A syntax error or a bad
 * field is answered here with its path; the owner never parses text.
 */
#include "http_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../core/state/prices.h"
#include "../descriptor/descriptor.h"
#include "../edge/edge.h"
#include "../lib/parse.h"
#include "../lib/xalloc.h"

enum { EDGE_QUEUE = EDGE_JSON + 1, EDGE_PRICES, EDGE_SERVICE, EDGE_BEAT, EDGE_REPORTS };

/* who may call a route (an admin may call every one) */
#define T XP_ROUTE_TENANT
#define A XP_ROUTE_ADMIN
#define N XP_ROUTE_NODE
#define J XP_ROUTE_JOIN

#define LOGS_MAX ((size_t)8 << 20) /* one upload of an agent's output */
#define SMALL	 4096		   /* routes that take no document */

static const struct route routes[] = {
	{ "GET", "/v1/jobs", xp_api_jobs_list, T, 0, SMALL },
	{ "POST", "/v1/jobs", xp_api_jobs_submit, T, EDGE_SPEC, 0 },
	{ "GET", "/v1/jobs/{id}", xp_api_job_get, T, 0, SMALL },
	{ "PATCH", "/v1/jobs/{id}", xp_api_job_update, T, EDGE_PATCH, SMALL },
	{ "DELETE", "/v1/jobs/{id}", xp_api_job_cancel, T, 0, SMALL },
	{ "POST", "/v1/jobs/{id}/hold", xp_api_job_hold, T, 0, SMALL },
	{ "POST", "/v1/jobs/{id}/release", xp_api_job_release, T, 0, SMALL },
	{ "POST", "/v1/jobs/{id}/cancel", xp_api_job_cancel, T, 0, SMALL },
	{ "GET", "/v1/jobs/{id}/explain", xp_api_job_explain, T, 0, SMALL },
	{ "GET", "/v1/jobs/{id}/logs", xp_api_job_logs, T, 0, SMALL },
	{ "POST", "/v1/jobs/{id}/counters", xp_api_job_counters, T, EDGE_JSON, 0, xp_edge_counters },
	{ "GET", "/v1/usage", xp_api_usage, T, 0, SMALL },
	{ "GET", "/v1/alerts", xp_api_alerts, A, 0, SMALL },
	{ "GET", "/v1/forecast", xp_api_forecast, T, 0, SMALL },
	{ "GET", "/v1/history", xp_api_history, T, 0, SMALL },
	{ "GET", "/v1/advice", xp_api_advice, A, 0, SMALL },
	{ "GET", "/v1/prices", xp_api_prices_get, T, 0, SMALL },
	{ "PUT", "/v1/prices", xp_api_prices_put, A, EDGE_PRICES, 0 },
	{ "POST", "/v1/workflows", xp_api_workflows_submit, T, EDGE_WORKFLOW, 0 },
	{ "GET", "/v1/services", xp_api_services_list, T, 0, SMALL },
	{ "POST", "/v1/services", xp_api_services_create, T, EDGE_SERVICE, 0 },
	{ "GET", "/v1/services/{name}", xp_api_service_get, T, 0, SMALL },
	{ "PUT", "/v1/services/{name}", xp_api_service_update, T, EDGE_SERVICE, 0 },
	{ "DELETE", "/v1/services/{name}", xp_api_service_delete, T, 0, SMALL },
	{ "POST", "/v1/services/{name}/promote", xp_api_service_promote, T, 0, SMALL },
	{ "POST", "/v1/services/{name}/rollback", xp_api_service_rollback, T, 0, SMALL },
	{ "POST", "/v1/services/{name}/scale", xp_api_service_scale, T, EDGE_JSON, SMALL, xp_edge_scale },
	{ "GET", "/v1/services/{name}/endpoints", xp_api_service_endpoints, T, EDGE_EPWATCH, SMALL },
	{ "GET", "/v1/nodes", xp_api_nodes_list, T, 0, SMALL },
	{ "POST", "/v1/nodes", xp_api_nodes_add, A, EDGE_NODES, 0 },
	{ "GET", "/v1/nodes/{name}", xp_api_node_get, T, 0, SMALL },
	{ "PATCH", "/v1/nodes/{name}", xp_api_node_patch, A, EDGE_JSON, SMALL, xp_edge_node_patch },
	{ "DELETE", "/v1/nodes/{name}", xp_api_node_delete, A, 0, SMALL },
	{ "GET", "/v1/devices", xp_api_devices, T, 0, SMALL },
	{ "GET", "/v1/queues", xp_api_queues_list, T, 0, SMALL },
	{ "POST", "/v1/queues", xp_api_queues_create, A, EDGE_QUEUE, 0 },
	{ "GET", "/v1/queues/{name}", xp_api_queue_get, T, 0, SMALL },
	{ "PATCH", "/v1/queues/{name}", xp_api_queue_patch, A, EDGE_QUEUE, 0 },
	{ "DELETE", "/v1/queues/{name}", xp_api_queue_delete, A, 0, SMALL },
	{ "GET", "/v1/tenants", xp_api_tenants_list, A, 0, SMALL },
	{ "POST", "/v1/tenants", xp_api_tenants_create, A, EDGE_JSON, SMALL, xp_edge_tenant },
	{ "GET", "/v1/tokens", xp_api_tokens_list, A, 0, SMALL },
	{ "POST", "/v1/tokens", xp_api_tokens_create, A, EDGE_JSON, SMALL, xp_edge_token },
	{ "DELETE", "/v1/tokens/{id}", xp_api_token_delete, A, 0, SMALL },
	{ "POST", "/v1/agents/join", xp_api_agents_join, J, EDGE_JSON, SMALL, xp_edge_join },
	{ "POST", "/v1/agents", xp_api_agents_register, N, EDGE_NODES, 0 },
	{ "POST", "/v1/nodes/{name}/heartbeat", xp_api_node_heartbeat, N, EDGE_BEAT, 0 },
	{ "GET", "/v1/nodes/{name}/assignments", xp_api_node_assignments, N, EDGE_WATCH, SMALL },
	{ "POST", "/v1/nodes/{name}/tasks", xp_api_node_tasks, N, EDGE_REPORTS, 0 },
	{ "POST", "/v1/nodes/{name}/logs", xp_api_node_logs, N, EDGE_RAW, LOGS_MAX },
	{ "POST", "/v1/nodes/{name}/mig-mode", xp_api_node_mig_mode, N, EDGE_JSON, SMALL, xp_edge_mig_mode },
	{ NULL, NULL, NULL, 0, 0, 0 },
};

/* Match url against a pattern; fills {id} / {name}. 1 match, 0 no, -1 bad parameter. */
static int match(const char *pattern, const char *url, struct xp_cmd *cmd, char *bad, size_t blen)
{
	const char *p = pattern, *u = url;
	while (*p && *u) {
		if (*p == '{') {
			const char *pe = strchr(p, '}');
			size_t ul = strcspn(u, "/");
			char seg[128];
			if (ul >= sizeof(seg)) { /* never cut: a cut id would be another */
				snprintf(bad, blen,
					 "a path segment of %zu characters (at most %zu)", ul,
					 sizeof(seg) - 1);
				return -1;
			}
			snprintf(seg, sizeof(seg), "%.*s", (int)ul, u);
			if (!strncmp(p, "{id}", 4)) {
				int64_t v;
				if (xp_parse_i64(seg, 1, INT64_MAX, &v) < 0) {
					snprintf(bad, blen, "'%s' is not an id", seg);
					return -1;
				}
				cmd->id = (uint64_t)v;
			} else {
				if (!xp_name_ok(seg)) {
					snprintf(bad, blen, "'%s' is not a valid name", seg);
					return -1;
				}
				snprintf(cmd->name, sizeof(cmd->name), "%.63s", seg);
			}
			p = pe + 1;
			u += ul;
			continue;
		}
		if (*p != *u)
			return 0;
		p++, u++;
	}
	return *p == '\0' && (*u == '\0' || (*u == '/' && u[1] == '\0'));
}

int xp_http_route(struct conn *k, const char *url, const char *method, char *allow, size_t alen)
{
	char bad[160] = "";
	size_t len = 0;
	allow[0] = '\0';
	for (const struct route *r = routes; r->method; r++) {
		int m = match(r->pattern, url, &k->cmd, bad, sizeof(bad));
		if (m < 0) {
			xp_reply_error(&k->cmd, XP_EINVAL, NULL, "%s: %s", url, bad);
			return -1;
		}
		if (m == 0)
			continue;
		if (!strcmp(r->method, method)) {
			k->rt = r;
			k->cmd.fn = r->fn;
			k->cmd.need = r->scope;
			k->body_max = r->body_max ? r->body_max : k->ctl->o.body_limit;
			return 0;
		}
		if (!strstr(allow, r->method) && len + strlen(r->method) + 3 < alen)
			len += (size_t)snprintf(allow + len, alen - len, "%s%s", len ? ", " : "",
						r->method);
	}
	if (len)
		xp_reply_error(&k->cmd, XP_EMETHOD, NULL, "%s does not take %s (it takes %s)", url,
			       method, allow);
	else
		xp_reply_error(&k->cmd, XP_ENOENT, NULL, "no such endpoint: %s %s", method, url);
	return -1;
}

/* ---- the edge's parsers ---- */

static void free_spec(void *p)
{
	xp_jobspec_free(p);
	free(p);
}

static void free_workflow(void *p)
{
	xp_workflow_free(p);
	free(p);
}

static void free_cluster(void *p)
{
	xp_cluster_destroy(p);
}

static int content_json(struct MHD_Connection *c, const char *body, size_t len, int *json)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	if (!ct || !*ct || !strncasecmp(ct, "application/x-www-form-urlencoded", 33)) {
		/* none, or curl -d: JSON starts with { or [ */
		size_t i = 0;
		while (i < len && strchr(" \t\r\n", body[i]))
			i++;
		*json = i < len && (body[i] == '{' || body[i] == '[');
		return 0;
	}
	if (!strncasecmp(ct, "application/json", 16)) {
		*json = 1;
		return 0;
	}
	if (!strncasecmp(ct, "application/yaml", 16) || !strncasecmp(ct, "text/yaml", 9) ||
	    !strncasecmp(ct, "application/x-yaml", 18)) {
		*json = 0;
		return 0;
	}
	return -1;
}

static int parse_spec(struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	struct xp_jobspec *spec = XNEW(struct xp_jobspec);
	char field[320];
	if (xp_jobspec_parse_text("request", cmd->body, cmd->len, cmd->body_json, spec, field,
				  &err) < 0 ||
	    xp_jobspec_check_submit(spec, "request", field, &err) < 0) {
		xp_jobspec_free(spec);
		free(spec);
		xp_reply_err(cmd, &err, field);
		return -1;
	}
	cmd->payload = spec;
	cmd->payload_free = free_spec;
	return 0;
}

static int parse_workflow(struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	struct xp_workflow *wf = XNEW(struct xp_workflow);
	char field[640];
	if (xp_workflow_parse("request", cmd->body, cmd->len, cmd->body_json, wf, field, &err) <
	    0) {
		free(wf);
		xp_reply_err(cmd, &err, field[0] ? field : NULL);
		return -1;
	}
	cmd->payload = wf;
	cmd->payload_free = free_workflow;
	return 0;
}

static int parse_patch(struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	struct xp_jobpatch *p = XNEW(struct xp_jobpatch);
	char field[320];
	if (xp_jobpatch_parse_text("request", cmd->body, cmd->len, cmd->body_json, p, field, &err) <
	    0) {
		free(p);
		xp_reply_err(cmd, &err, field);
		return -1;
	}
	cmd->payload = p;
	cmd->payload_free = free;
	return 0;
}

static int parse_nodes(struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	struct xp_cluster *cl = xp_descriptor_load_buf(
		"request", cmd->body, cmd->len, cmd->body_json ? XP_DESC_JSON : XP_DESC_YAML, &err);
	if (!cl) {
		xp_reply_err(cmd, &err, NULL);
		return -1;
	}
	if (cl->nnodes == 0) {
		xp_cluster_destroy(cl);
		xp_reply_error(cmd, XP_EINVAL, "nodes", "the descriptor has no nodes");
		return -1;
	}
	cmd->payload = cl;
	cmd->payload_free = free_cluster;
	return 0;
}

/* a queue definition; a create needs its name */
static int parse_queue(struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	struct xp_queuespec *q = XNEW(struct xp_queuespec);
	char field[320];
	if (xp_queuespec_parse_text("request", cmd->body, cmd->len, cmd->body_json,
				    !strcmp(cmd->method, "POST"), q, field, &err) < 0) {
		free(q);
		xp_reply_err(cmd, &err, field[0] ? field : NULL);
		return -1;
	}
	cmd->payload = q;
	cmd->payload_free = free;
	return 0;
}

static void free_service(void *p)
{
	xp_servicespec_free(p);
	free(p);
}

static int parse_service(struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	struct xp_servicespec *s = XNEW(struct xp_servicespec);
	char field[320];
	if (xp_servicespec_parse_text("request", cmd->body, cmd->len, cmd->body_json, s, field,
				      &err) < 0) {
		free(s);
		xp_reply_err(cmd, &err, field[0] ? field : NULL);
		return -1;
	}
	cmd->payload = s;
	cmd->payload_free = free_service;
	return 0;
}

static int parse_prices(struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	struct xp_prices *p = XNEW(struct xp_prices);
	if (xp_prices_parse("request", cmd->body, cmd->len, cmd->body_json, p, &err) < 0) {
		free(p);
		xp_reply_err(cmd, &err, NULL);
		return -1;
	}
	cmd->payload = p;
	cmd->payload_free = free;
	return 0;
}

/* a JSON object the handler's fields check reads (xp_cmd_body_object) */
static int parse_json(struct xp_cmd *cmd)
{
	json_error_t je;
	if (!cmd->len)
		return 0; /* the handler says what it needs */
	if (!cmd->body_json) {
		xp_reply_error(cmd, XP_EINVAL, NULL, "expected Content-Type: application/json");
		return -1;
	}
	json_t *o = json_loadb(cmd->body, cmd->len, JSON_REJECT_DUPLICATES, &je);
	if (!o) {
		xp_reply_error(cmd, XP_EINVAL, NULL, "body:%d:%d: %s", je.line, je.column, je.text);
		return -1;
	}
	cmd->body_obj = o;
	return 0;
}

int xp_http_parse(struct conn *k)
{
	struct xp_cmd *cmd = &k->cmd;
	cmd->body = k->body.s ? k->body.s : "";
	cmd->len = k->body.len;
	if (cmd->len && k->rt->edge != EDGE_RAW &&
	    content_json(k->c, cmd->body, cmd->len, &cmd->body_json) < 0) {
		xp_reply_error(cmd, XP_EINVAL, "Content-Type",
			       "unsupported Content-Type: send application/json or "
			       "application/yaml");
		return -1;
	}
	switch (k->rt->edge) {
	case EDGE_SPEC:
		return parse_spec(cmd);
	case EDGE_WORKFLOW:
		return parse_workflow(cmd);
	case EDGE_PATCH:
		return parse_patch(cmd);
	case EDGE_NODES:
		return parse_nodes(cmd);
	case EDGE_QUEUE:
		return parse_queue(cmd);
	case EDGE_PRICES:
		return parse_prices(cmd);
	case EDGE_SERVICE:
		return parse_service(cmd);
	case EDGE_BEAT:
		return xp_beat_parse(cmd);
	case EDGE_REPORTS:
		return xp_reports_parse(cmd);
	case EDGE_JSON:
		if (parse_json(cmd) < 0)
			return -1;
		return k->rt->parse ? k->rt->parse(cmd) : 0;
	default:
		return 0;
	}
}
