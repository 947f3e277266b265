/*
 * api_services: /v1/services (docs/api.md "Services"). The definition is
 * parsed at the edge (http_routes.c); here it is checked against the state
 * - tenant, queue, a template some node could run, a proxy port no other
 * service has - and journaled. The owner's tick (services.c) then keeps
 * the replicas.
 */
#include "ctl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../edge/edge.h"
#include "../lib/parse.h"
#include "../lib/xalloc.h"

/* the service NAME names, visible to the caller; else a 404 sent */
static struct xp_service *visible(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	long i = xp_state_service(ctl->st, cmd->name);
	struct xp_service *s = i >= 0 ? &ctl->st->services.v[i] : NULL;
	if (!s || (!cmd->admin && (long)s->tenant != cmd->tenant)) {
		xp_reply_error(cmd, XP_ENOENT, NULL, "no service %s", cmd->name);
		return NULL;
	}
	return s;
}

void xp_api_services_list(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	json_t *a = json_array();
	int64_t now = xp_ctl_now();
	for (size_t i = 0; i < ctl->st->services.n; i++) {
		const struct xp_service *s = &ctl->st->services.v[i];
		if (cmd->admin || (long)s->tenant == cmd->tenant)
			json_array_append_new(a, xp_service_json(ctl, s, now));
	}
	xp_reply_json(cmd, 200, xp_json_take(json_pack("{s:o}", "services", a)));
}

void xp_api_service_get(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_service *s = visible(ctl, cmd);
	if (s)
		xp_reply_json(cmd, 200, xp_json_take(xp_service_json(ctl, s, xp_ctl_now())));
}

/* tenant and queue of a new service: the caller's own unless an admin */
static int check_owner(struct xp_ctl *ctl, struct xp_cmd *cmd, struct xp_servicespec *sp)
{
	struct xp_state *st = ctl->st;
	long t = sp->tenant[0] ? xp_state_tenant(st, sp->tenant) : cmd->tenant;
	if (sp->tenant[0] && !cmd->admin && t != cmd->tenant)
		return xp_reply_error(cmd, XP_EPERM, "tenant",
				      "tenant: only admin tokens may create for another tenant"),
		       -1;
	if (t < 0)
		return xp_reply_error(cmd, XP_ENOENT, "tenant", "tenant: no tenant %s", sp->tenant),
		       -1;
	snprintf(sp->tenant, sizeof(sp->tenant), "%s", st->tenants.v[t].name);
	const char *q = sp->queue[0] ? sp->queue : "default";
	long qi = xp_state_queue(st, q);
	if (qi < 0 || !xp_queue_is_leaf(st, (uint32_t)qi))
		return xp_reply_error(cmd, XP_ENOENT, "queue",
				      "queue: no queue %s without child queues", q),
		       -1;
	if (!xp_queue_allows(st, (uint32_t)qi, sp->tenant))
		return xp_reply_error(cmd, XP_EPERM, "queue", "queue: tenant %s may not use queue %s",
				      sp->tenant, q),
		       -1;
	return 0;
}

void xp_api_services_create(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_servicespec *sp = cmd->payload;
	struct xp_state *st = ctl->st;
	struct xp_err err = { 0 };
	if (check_owner(ctl, cmd, sp) < 0)
		return;
	if (xp_state_service(st, sp->name) >= 0)
		FAIL(cmd, XP_EEXIST, "name", "name: service %s already exists", sp->name);
	for (size_t i = 0; sp->port && i < st->services.n; i++)
		if (st->services.v[i].spec.port == sp->port)
			FAIL(cmd, XP_EEXIST, "port", "port: %u is service %s's", sp->port,
			     st->services.v[i].spec.name);
	struct xp_jobspec rs;
	long t;
	if (xp_servicespec_replica(sp, 1, &rs, &err) < 0)
		FAIL_ERR(cmd, &err, "template");
	int rc = xp_api_submit_check(ctl, cmd, &rs, "template.", &t);
	xp_jobspec_free(&rs);
	if (rc < 0)
		return;
	if (xp_ctl_journal(ctl, "service.create", xp_rec_service_create(sp), &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_ep_bump(ctl); /* a service to stream */
	long i = xp_state_service(st, sp->name);
	xp_reply_json(cmd, 201, xp_json_take(xp_service_json(ctl, &st->services.v[i], xp_ctl_now())));
}

/* a query's integer lo..hi into *v (absent: keeps *v); -1 with a 400 sent */
static int query_int(struct xp_cmd *cmd, const char *key, int64_t lo, int64_t hi, int64_t *v)
{
	const char *q = xp_cmd_query(cmd, key);
	if (q && xp_parse_i64(q, lo, hi, v) < 0)
		return xp_reply_error(cmd, XP_EINVAL, key, "%s: expected an integer %lld..%lld, got '%s'",
				      key, (long long)lo, (long long)hi, q),
		       -1;
	return 0;
}

/* PUT /v1/services/NAME[?canary=N&weight=W]: the whole definition again.
 * When its replicas differ it is a new version, rolled out within the
 * update bounds - or, with a canary, held at N replicas taking W % of the
 * traffic until promoted or rolled back. */
void xp_api_service_update(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_servicespec *sp = cmd->payload;
	struct xp_state *st = ctl->st;
	struct xp_err err = { 0 };
	int64_t canary = 0, weight = 10;
	struct xp_service *s = visible(ctl, cmd);
	if (!s || query_int(cmd, "canary", 0, XP_SERVICE_MAX_REPLICAS, &canary) < 0 ||
	    query_int(cmd, "weight", 0, 100, &weight) < 0)
		return;
	if (strcmp(sp->name, cmd->name))
		FAIL(cmd, XP_EINVAL, "name", "name: '%s' is not the service's name (%s)", sp->name,
		     cmd->name);
	if (sp->tenant[0] && strcmp(sp->tenant, s->spec.tenant))
		FAIL(cmd, XP_EINVAL, "tenant", "tenant: a service keeps its tenant (%s)",
		     s->spec.tenant);
	snprintf(sp->tenant, sizeof(sp->tenant), "%s", s->spec.tenant);
	if (check_owner(ctl, cmd, sp) < 0)
		return;
	for (size_t i = 0; sp->port && i < st->services.n; i++)
		if (st->services.v[i].spec.port == sp->port && strcmp(st->services.v[i].spec.name, sp->name))
			FAIL(cmd, XP_EEXIST, "port", "port: %u is service %s's", sp->port,
			     st->services.v[i].spec.name);
	int fresh = xp_servicespec_new_version(&s->spec, sp);
	if (canary && !fresh)
		FAIL(cmd, XP_EINVAL, "canary",
		     "canary: this change makes no new version of the replicas to try");
	if (fresh && s->canary)
		FAIL(cmd, XP_ESTATE, "canary",
		     "canary: version %u is held as a canary; promote it or roll back before "
		     "another version",
		     s->version);
	struct xp_jobspec rs;
	long t;
	if (xp_servicespec_replica(sp, 1, &rs, &err) < 0)
		FAIL_ERR(cmd, &err, "template");
	int rc = xp_api_submit_check(ctl, cmd, &rs, "template.", &t);
	xp_jobspec_free(&rs);
	if (rc < 0)
		return;
	if (xp_ctl_journal(ctl, "service.update",
			   xp_rec_service_update(sp, (uint32_t)canary, (uint32_t)weight), &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_ep_bump(ctl); /* versions and weights of the endpoints change */
	xp_reply_json(cmd, 200, xp_json_take(xp_service_json(ctl, visible(ctl, cmd), xp_ctl_now())));
}

static void named_record(struct xp_ctl *ctl, struct xp_cmd *cmd, const char *type)
{
	struct xp_err err = { 0 };
	struct xp_service *s = visible(ctl, cmd);
	if (!s)
		return;
	if (xp_ctl_journal(ctl, type, xp_rec_service_named(s->spec.name), &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_ep_bump(ctl); /* versions and weights of the endpoints change */
	xp_reply_json(cmd, 200, xp_json_take(xp_service_json(ctl, visible(ctl, cmd), xp_ctl_now())));
}

void xp_api_service_promote(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	named_record(ctl, cmd, "service.promote");
}

void xp_api_service_rollback(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	named_record(ctl, cmd, "service.rollback");
}

/* edge (pool thread, no state): POST /v1/services/NAME/scale {replicas, reason} */
int xp_edge_scale(struct xp_cmd *cmd)
{
	static const char *const allowed[] = { "replicas", "reason", NULL };
	json_t *o = xp_cmd_body_object(cmd, allowed);
	if (!o)
		return -1;
	json_t *r = json_object_get(o, "replicas"), *why = json_object_get(o, "reason");
	int rc = 0;
	if (!json_is_integer(r) || json_integer_value(r) < 0 ||
	    json_integer_value(r) > XP_SERVICE_MAX_REPLICAS) {
		xp_reply_error(cmd, XP_EINVAL, "replicas", "replicas: expected a count 0..%d",
			       XP_SERVICE_MAX_REPLICAS);
		rc = -1;
	} else if (why && (!json_is_string(why) || strlen(json_string_value(why)) > 200)) {
		xp_reply_error(cmd, XP_EINVAL, "reason",
			       "reason: expected a string of at most 200 bytes");
		rc = -1;
	}
	if (rc == 0) {
		struct xp_small *b = XNEW(struct xp_small);
		b->replicas = (uint32_t)json_integer_value(r);
		snprintf(b->reason, sizeof(b->reason), "%s",
			 why ? json_string_value(why) : "by request");
		cmd->payload = b;
		cmd->payload_free = xp_small_free;
	}
	json_decref(o);
	return rc;
}

void xp_api_service_scale(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	const struct xp_small *b = cmd->payload;
	struct xp_service *s = visible(ctl, cmd);
	if (!s)
		return;
	if (b->replicas < s->spec.min || b->replicas > s->spec.max)
		FAIL(cmd, XP_EINVAL, "replicas", "replicas: expected %u..%u (the service's min..max)",
		     s->spec.min, s->spec.max);
	const char *reason = b->reason;
	uint32_t n = b->replicas;
	if (xp_ctl_journal(ctl, "service.scale", xp_rec_service_scale(s->spec.name, n, reason),
			   &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_reply_json(cmd, 200, xp_json_take(xp_service_json(ctl, visible(ctl, cmd), xp_ctl_now())));
}

/* the service leaves the state; its replicas are cancelled with it */
void xp_api_service_delete(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	struct xp_service *s = visible(ctl, cmd);
	if (!s)
		return;
	size_t n = s->jobs.n;
	uint64_t *ids = xcalloc(n ? n : 1, sizeof(*ids));
	memcpy(ids, s->jobs.v, n * sizeof(*ids));
	if (xp_ctl_journal(ctl, "service.delete", xp_rec_service_delete(cmd->name), &err) < 0) {
		free(ids);
		FAIL_ERR(cmd, &err, NULL);
	}
	cmd->journaled = 1;
	char reason[128];
	snprintf(reason, sizeof(reason), "service %s was deleted", cmd->name);
	for (size_t i = 0; i < n; i++) {
		const struct xp_job *j = xp_state_job(ctl->st, ids[i]);
		if (j && !xp_job_terminal(j->state) &&
		    xp_ctl_journal(ctl, "job.cancel", xp_rec_job_cancel(ids[i], reason), &err) < 0)
			fprintf(stderr, "xpool server: service %s: job %llu: %s\n", cmd->name,
				(unsigned long long)ids[i], err.text);
	}
	free(ids);
	xp_ep_bump(ctl); /* its streams end */
	xp_reply_json(cmd, 200,
		      xp_json_take(json_pack("{s:s,s:b,s:i}", "name", cmd->name, "deleted", 1,
					     "replicas_cancelled", (int)n)));
}

void xp_api_service_endpoints(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_service *s = visible(ctl, cmd);
	if (!s)
		return;
	cmd->id = xp_ep_version(ctl); /* for a long poll's wait (http_wait.c) */
	xp_reply_json(cmd, 200,
		      xp_json_take(json_pack("{s:s,s:i,s:I,s:o}", "service", s->spec.name, "port",
					     (int)s->spec.port, "version", (json_int_t)cmd->id,
					     "endpoints", xp_service_endpoints(ctl, s))));
}
