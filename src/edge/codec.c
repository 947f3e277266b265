/*
 * codec: journal records between their JSON (what the journal, snapshots'
 * neighbours and the etcd store hold, byte for byte as before) and struct
 * xp_rec (src/core/state/rec.h), at the store boundary: replay decodes
 * each record here and hands the state a typed one; the live path builds
 * the JSON with the xp_rec_*() writers and applies it through here too, so
 * both paths read a record with the same code.
 *
 * Every field is checked for form here, with the state's texts of before
 * ("id: missing or out of range", XP_ECORRUPT); the checks against the
 * state (the job exists, the transition is legal) stay with the state.
 * Where a record is wrong both ways, the field is named first.
 *
 * A decoded record's strings point into the parsed JSON, which the hold
 * keeps until xp_rec_release().
 */
#include "edge.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "../core/state/state.h"

struct dec {
	json_t *o;
	struct xp_err *err;
};

/* a malformed record (the text the state gave, replay names the record) */
static int bad(struct dec *d, const char *what, const char *field)
{
	return xp_errf(d->err, XP_ECORRUPT, "%s%s%s", field ? field : "", field ? ": " : "", what);
}

static int get_str(struct dec *d, const char *key, const char **out)
{
	json_t *v = json_object_get(d->o, key);
	*out = NULL;
	if (!json_is_string(v))
		return bad(d, "missing or not a string", key);
	*out = json_string_value(v);
	return 0;
}

static int get_int(struct dec *d, const char *key, int64_t min, int64_t max, int64_t *out)
{
	json_t *v = json_object_get(d->o, key);
	*out = 0;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return bad(d, "missing or out of range", key);
	*out = json_integer_value(v);
	return 0;
}

#define NODE_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

/* The scope of a token.create record: absent "node" and "bootstrap" is a
 * tenant's or admin's token, as every record before scopes was. */
static int token_scope(struct dec *d, int admin, int *scope, const char **node)
{
	json_t *jn = json_object_get(d->o, "node"), *jb = json_object_get(d->o, "bootstrap");
	*scope = admin ? XP_SCOPE_ADMIN : XP_SCOPE_TENANT;
	*node = NULL;
	if (jb && !json_is_boolean(jb))
		return bad(d, "not a boolean", "bootstrap");
	if (jn) {
		*node = json_string_value(jn);
		size_t n = *node ? strlen(*node) : 0;
		if (n < 1 || n > 253 || strspn(*node, NODE_CHARS) != n)
			return bad(d, "not a node name", "node");
		*scope = XP_SCOPE_NODE;
	}
	if (json_is_true(jb))
		*scope = jn ? -1 : XP_SCOPE_BOOTSTRAP;
	if (*scope < 0 || ((jn || json_is_true(jb)) && admin))
		return bad(d, "an admin, node or bootstrap token: one of them", "admin");
	return 0;
}

static int token_create(struct dec *d, struct xp_rec *r)
{
	int64_t id;
	json_t *admin = json_object_get(d->o, "admin");
	int rc;
	if ((rc = get_int(d, "id", 1, INT64_MAX, &id)) < 0 ||
	    (rc = get_str(d, "tenant", &r->u.token.tenant)) < 0 ||
	    (rc = get_str(d, "name", &r->u.token.name)) < 0 ||
	    (rc = get_str(d, "sha256", &r->u.token.sha256)) < 0)
		return rc;
	if (!json_is_boolean(admin))
		return bad(d, "missing or not a boolean", "admin");
	if ((rc = token_scope(d, json_is_true(admin), &r->u.token.scope, &r->u.token.node)) < 0)
		return rc;
	const char *sha = r->u.token.sha256;
	if (strlen(sha) != 64 || strspn(sha, "0123456789abcdef") != 64)
		return bad(d, "not a SHA-256 in hex", "sha256");
	r->u.token.id = (uint64_t)id;
	return 0;
}

static int node_state(struct dec *d, struct xp_rec *r)
{
	const char *sname;
	int rc;
	if ((rc = get_str(d, "name", &r->u.node.name)) < 0 || (rc = get_str(d, "state", &sname)) < 0)
		return rc;
	if ((r->u.node.state = xp_node_state_parse(sname)) < 0)
		return bad(d, "unknown node state", "state");
	return 0;
}

static int node_health(struct dec *d, struct xp_rec *r)
{
	int rc = get_str(d, "name", &r->u.health.name);
	if (rc < 0)
		return rc;
	json_t *devs = json_object_get(d->o, "devices");
	if (!json_is_array(devs)) {
		r->u.health.ndevs = -1; /* the state says how many it wants */
		return 0;
	}
	size_t n = json_array_size(devs);
	r->u.health.ndevs = n > INT32_MAX ? INT32_MAX : (int)n;
	if (n > XP_MAX_NODE_DEVS)
		return 0; /* more than any node has: the state refuses the count */
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(devs, i), *okv = json_object_get(o, "ok"),
		       *wv = json_object_get(o, "why");
		if (!json_is_boolean(okv) || (wv && !json_is_string(wv)))
			return bad(d, "expected {ok, why}", "devices");
		r->u.health.ok[i] = json_is_true(okv);
		r->u.health.why[i] = wv ? json_string_value(wv) : NULL;
	}
	return 0;
}

/* The optional exit fields of a job.finish or job.task record: signal,
 * end, detail (absent in older journals: none). */
static int get_exit(struct dec *d, struct xp_exit *x)
{
	int64_t sig = 0;
	int rc;
	json_t *v = json_object_get(d->o, "signal");
	if (v && (rc = get_int(d, "signal", 1, 127, &sig)) < 0)
		return rc;
	x->signal = (int)sig;
	if ((v = json_object_get(d->o, "end")) &&
	    (!json_is_string(v) || (x->end = xp_end_parse(json_string_value(v))) < 0))
		return bad(d, "expected oom, limits, time_limit or start", "end");
	if ((v = json_object_get(d->o, "detail")) && !json_is_string(v))
		return bad(d, "not a string", "detail");
	x->detail = v ? json_string_value(v) : NULL;
	return 0;
}

/* job.finish and job.cancel */
static int job_end(struct dec *d, struct xp_rec *r)
{
	int cancel = r->type == XP_REC_JOB_CANCEL;
	int64_t id, code = 0;
	struct xp_exit *x = &r->u.end.x;
	const char *sname = "cancelled";
	int rc = get_int(d, "id", 1, INT64_MAX, &id);
	if (rc == 0 && !cancel && (rc = get_str(d, "state", &sname)) == 0 &&
	    (x->has_code = json_object_get(d->o, "exit_code") != NULL))
		rc = get_int(d, "exit_code", -255, 255, &code);
	if (rc == 0 && !cancel)
		rc = get_exit(d, x);
	if (rc < 0)
		return rc;
	json_t *rs = json_object_get(d->o, "reason");
	r->u.end.reason = json_is_string(rs) ? json_string_value(rs) : "";
	r->u.end.state = xp_job_state_parse(sname);
	if (!cancel && r->u.end.state != XP_JOB_SUCCEEDED && r->u.end.state != XP_JOB_FAILED)
		return bad(d, "expected succeeded or failed", "state");
	r->u.end.id = (uint64_t)id;
	x->code = (int)code;
	return 0;
}

static int job_task(struct dec *d, struct xp_rec *r)
{
	int64_t id, attempt, replica, code;
	int rc;
	if ((rc = get_int(d, "id", 1, INT64_MAX, &id)) < 0 ||
	    (rc = get_int(d, "attempt", 1, INT32_MAX, &attempt)) < 0 ||
	    (rc = get_int(d, "replica", 0, XP_JOB_MAX_REPLICAS - 1, &replica)) < 0 ||
	    (rc = get_int(d, "exit_code", -255, 255, &code)) < 0 ||
	    (rc = get_exit(d, &r->u.task.x)) < 0)
		return rc;
	r->u.task.id = (uint64_t)id;
	r->u.task.attempt = (uint32_t)attempt;
	r->u.task.replica = (uint32_t)replica;
	r->u.task.x.code = (int)code;
	r->u.task.x.has_code = 1;
	return 0;
}

static int decode(struct dec *d, struct xp_rec *r)
{
	int64_t id;
	int rc;
	json_t *v;
	switch (r->type) {
	case XP_REC_TENANT_CREATE:
		return get_str(d, "name", &r->u.tenant.name);
	case XP_REC_TOKEN_CREATE:
		return token_create(d, r);
	case XP_REC_TOKEN_REVOKE:
		rc = get_int(d, "id", 1, INT64_MAX, &id);
		r->u.revoke.id = (uint64_t)id;
		return rc;
	case XP_REC_QUEUE_DELETE:
	case XP_REC_NODE_REMOVE:
		return get_str(d, "name", &r->u.node.name);
	case XP_REC_NODE_STATE:
		return node_state(d, r);
	case XP_REC_NODE_HEALTH:
		return node_health(d, r);
	case XP_REC_JOB_FINISH:
	case XP_REC_JOB_CANCEL:
		return job_end(d, r);
	case XP_REC_JOB_TASK:
		return job_task(d, r);
	case XP_REC_JOB_REQUEUE:
	case XP_REC_JOB_PREEMPT:
		rc = get_int(d, "id", 1, INT64_MAX, &id);
		r->u.requeue.id = (uint64_t)id;
		v = json_object_get(d->o, "reason");
		r->u.requeue.reason = json_is_string(v) ? json_string_value(v) : NULL;
		return rc;
	}
	return xp_errf(d->err, XP_EINTERNAL, "record type %d has no decoder", r->type);
}

int xp_rec_decode(const char *type, const char *body, size_t len, struct xp_rec *out,
		  void **hold, struct xp_err *err)
{
	json_error_t je;
	struct dec d = { .err = err };
	*hold = NULL;
	memset(out, 0, sizeof(*out));
	if ((out->type = xp_rec_type_parse(type)) < 0)
		return 0;
	d.o = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(d.o)) {
		json_decref(d.o);
		return xp_errf(err, XP_ECORRUPT, "not a JSON object: %s", je.text);
	}
	int rc = decode(&d, out);
	if (rc < 0) {
		json_decref(d.o);
		return rc;
	}
	*hold = d.o;
	return 1;
}

void xp_rec_release(void *hold)
{
	json_decref(hold);
}

int xp_rec_apply(struct xp_state *st, uint64_t seq, int64_t at, const char *type,
		 const char *body, size_t len, struct xp_event_info *ev, struct xp_err *err)
{
	struct xp_rec r;
	void *hold;
	int rc = xp_rec_decode(type, body, len, &r, &hold, err);
	if (rc == 0)
		return xp_state_apply_json(st, seq, at, type, body, len, ev, err);
	if (rc < 0) {
		if (ev) { /* as the state leaves it on a refusal */
			memset(ev, 0, sizeof(*ev));
			ev->node = -1;
			ev->state = -1;
		}
		return rc;
	}
	rc = xp_state_apply_rec(st, seq, at, &r, ev, err);
	xp_rec_release(hold);
	return rc;
}
