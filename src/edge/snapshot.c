/*
 * snapshot: the whole state as one JSON document, and back. Written with
 * the shapes of the journal records (specs, one-node descriptors,
 * allocations), so loading a snapshot and applying the records after it
 * rebuilds exactly the state the records alone would. Nodes are kept in
 * index order, removed ones included, so allocations keep their indices.
 *
 * The encoding is the edge's (issue 19, item 2): the state in src/core
 * holds plain structs; this file walks them (state_int.h: the state's
 * types and its insert functions) and reads the documents inside a
 * snapshot with the edge's parsers (through st->docs, xp_edge_docs). The
 * services', meter's, elastic jobs' and MIG modes' parts are in
 * snapshot_parts.c.
 */
#include "snapshot_int.h"
#include "edge_int.h"

#include <stdlib.h>
#include <string.h>

#include "../core/model/mig.h"
#include "../lib/xalloc.h"

#define SNAPSHOT_FORMAT 1

/* A running job's allocations, as job.start records carry them (with
 * node_index: snapshots keep removed nodes): the records' writer. */
static json_t *allocs_json(const struct xp_state *st, const struct xp_alloc *a, uint32_t n)
{
	struct xp_rec_alloc *ra = xp_allocs_rec(st, a, n);
	json_t *arr = xp_rec_allocs_json(ra, n);
	free(ra);
	return arr;
}

/* Allocations of a snapshot back into a[n], read as a job.start's are. */
static int allocs_parse(struct xp_state *st, json_t *arr, struct xp_alloc *a, uint32_t n,
			struct xp_err *err)
{
	if (!json_is_array(arr) || json_array_size(arr) != n)
		return xp_errf(err, XP_ECORRUPT, "allocations: expected %u", n);
	char *text = json_dumps(arr, JSON_COMPACT);
	struct xp_rec_alloc *in = NULL;
	size_t got = 0;
	int rc = text ? st->docs->allocs(text, strlen(text), &in, &got, err)
		      : xp_errf(err, XP_ECORRUPT, "allocations: not JSON");
	free(text);
	if (rc == 0)
		rc = xp_allocs_resolve(st, in, n, a, err);
	free(in);
	return rc;
}

/* A node from a snapshot's one-node descriptor. */
static long add_node(struct xp_state *st, json_t *descriptor, int source, int state,
		     struct xp_err *err)
{
	char *text = json_dumps(descriptor, JSON_COMPACT);
	struct xp_cluster *one;

	if (!text)
		return xp_errf(err, XP_ECORRUPT, "node descriptor: not JSON");
	one = st->docs->nodes("node", text, strlen(text), err);
	free(text);
	if (!one)
		return err ? err->code : XP_EINVAL;
	long idx = xp_state_add_node_one(st, one, source, state, err);
	xp_cluster_destroy(one);
	return idx;
}

static json_t *node_descriptor(const struct xp_state *st, size_t n)
{
	struct xp_cluster *one = xp_cluster_create();
	xp_cluster_copy_node(one, st->c, &st->c->nodes[n], NULL);
	char *text = st->docs->nodes_json(one);
	xp_cluster_destroy(one);
	json_error_t e;
	json_t *d = json_loads(text, 0, &e);
	free(text);
	return d;
}

/* node n: its state, its one-node descriptor, health, failures, MIG modes */
static json_t *snap_node(const struct xp_state *st, size_t n)
{
	const struct xp_nodeinfo *ni = &st->nodes.v[n];
	json_t *no = json_pack("{s:s,s:s,s:b,s:o}", "source", xp_node_source_name(ni->source),
			       "state", xp_node_state_name(ni->state), "removed", ni->removed,
			       "descriptor", node_descriptor(st, n));
	if (ni->failures)
		json_object_set_new(no, "failures", json_integer(ni->failures));
	xp_migmode_snap(st, n, no);
	if (ni->dev_why) {
		json_t *why = json_array();
		for (uint16_t d = 0; d < st->c->nodes[n].ndevs; d++)
			json_array_append_new(why,
					      json_string(ni->dev_why[d] ? ni->dev_why[d] : ""));
		json_object_set_new(no, "why", why);
	}
	return no;
}

/* job j with its spec, allocations and counts */
static json_t *snap_job(const struct xp_state *st, const struct xp_job *j)
{
	char *sj = xp_jobspec_to_json(&j->spec);
	json_error_t e;
	json_t *jo = json_pack("{s:I,s:s,s:s?,s:s,s:o,s:I,s:I,s:I,s:s?}", "id", (json_int_t)j->id,
			       "tenant", st->tenants.v[j->tenant].name, "key", j->key, "state",
			       xp_job_state_name(j->state), "spec", json_loads(sj, 0, &e),
			       "submitted_at", (json_int_t)j->submitted_at, "started_at",
			       (json_int_t)j->started_at, "finished_at", (json_int_t)j->finished_at,
			       "reason", j->reason);
	free(sj);
	if (j->has_exit)
		json_object_set_new(jo, "exit_code", json_integer(j->exit_code));
	if (j->exit_signal)
		json_object_set_new(jo, "signal", json_integer(j->exit_signal));
	if (j->end)
		json_object_set_new(jo, "end", json_string(xp_end_name(j->end)));
	if (j->allocs)
		json_object_set_new(jo, "allocations",
				    allocs_json(st, j->allocs, j->spec.replicas));
	json_object_set_new(jo, "attempts", json_integer(j->attempts));
	json_object_set_new(jo, "requeues", json_integer(j->requeues));
	if (j->preemptions)
		json_object_set_new(jo, "preemptions", json_integer(j->preemptions));
	if (j->held)
		json_object_set_new(jo, "held", json_string(xp_hold_name(j->held)));
	if (j->key) { /* the spec may have changed since (job.update) */
		char h[24];
		snprintf(h, sizeof(h), "%016llx", (unsigned long long)j->key_hash);
		json_object_set_new(jo, "key_hash", json_string(h));
	}
	xp_elastic_snapshot(j, jo);
	if (j->exited) {
		json_t *ex = json_array();
		for (uint32_t k = 0; k < j->spec.replicas; k++)
			json_array_append_new(ex, json_boolean(j->exited[k]));
		json_object_set_new(jo, "exited", ex);
	}
	return jo;
}

char *xp_state_snapshot(const struct xp_state *st)
{
	json_t *o = json_object(), *a;

	json_object_set_new(o, "format", json_integer(SNAPSHOT_FORMAT));
	json_object_set_new(o, "seq", json_integer((json_int_t)st->seq));
	json_object_set_new(o, "next_job_id", json_integer((json_int_t)st->next_job_id));
	json_object_set_new(o, "next_token_id", json_integer((json_int_t)st->next_token_id));
	a = json_array();
	for (size_t i = 0; i < st->tenants.n; i++)
		json_array_append_new(a, json_pack("{s:s}", "name", st->tenants.v[i].name));
	json_object_set_new(o, "tenants", a);
	a = json_array();
	for (size_t i = 0; i < st->tokens.n; i++) {
		const struct xp_token *k = &st->tokens.v[i];
		json_t *t =
			json_pack("{s:I,s:s,s:s,s:b,s:b,s:s}", "id", (json_int_t)k->id, "tenant",
				  st->tenants.v[k->tenant].name, "name", k->name, "admin", k->admin,
				  "revoked", k->revoked, "sha256", k->sha256);
		if (k->scope == XP_SCOPE_NODE)
			json_object_set_new(t, "node", json_string(k->node));
		else if (k->scope == XP_SCOPE_BOOTSTRAP)
			json_object_set_new(t, "bootstrap", json_true());
		json_array_append_new(a, t);
	}
	json_object_set_new(o, "tokens", a);
	a = json_array();
	for (size_t i = 0; i < st->queues.n; i++) {
		const struct xp_queue *q = &st->queues.v[i];
		struct xp_queuespec qs;
		xp_queue_spec(st, q, &qs);
		json_array_append_new(a, json_pack("{s:o,s:i,s:b}", "def", xp_queuespec_json(&qs),
						   "parent", q->parent, "deleted", q->deleted));
	}
	json_object_set_new(o, "queues", a);
	a = json_array();
	for (size_t n = 0; n < st->nodes.n; n++)
		json_array_append_new(a, snap_node(st, n));
	json_object_set_new(o, "nodes", a);
	a = json_array();
	for (size_t i = 0; i < st->jobs.n; i++)
		json_array_append_new(a, snap_job(st, st->jobs.v[i]));
	json_object_set_new(o, "jobs", a);
	json_object_set_new(o, "services", xp_services_snapshot(st));
	json_object_set_new(o, "meter", xp_meter_snapshot(st));
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}

static int load_job(struct xp_state *st, json_t *jo, size_t i, struct xp_err *err)
{
	json_int_t id, sub, start, fin;
	const char *tenant, *state;
	json_t *spec, *exit = json_object_get(jo, "exit_code");
	json_t *kv = json_object_get(jo, "key"), *rv = json_object_get(jo, "reason");
	const char *key = json_is_string(kv) ? json_string_value(kv) : NULL;
	const char *reason = json_is_string(rv) ? json_string_value(rv) : NULL;
	int rc;

	if (json_unpack(jo, "{s:I,s:s,s:s,s:o,s:I,s:I,s:I}", "id", &id, "tenant", &tenant, "state",
			&state, "spec", &spec, "submitted_at", &sub, "started_at", &start,
			"finished_at", &fin) < 0 ||
	    id < 1)
		return xp_errf(err, XP_ECORRUPT, "snapshot: job %zu is malformed", i);
	long t = xp_state_tenant(st, tenant);
	int s = xp_job_state_parse(state);
	if (t < 0 || s < 0 || xp_state_job(st, (uint64_t)id))
		return xp_errf(err, XP_ECORRUPT, "snapshot: job %lld: bad tenant, state or id",
			       (long long)id);
	struct xp_job *j = XNEW(struct xp_job);
	char *text = json_dumps(spec, JSON_COMPACT);
	rc = st->docs->jobspec("snapshot", text, strlen(text), 1, &j->spec, NULL, err);
	free(text);
	const char *qname = rc == 0 && j->spec.queue ? j->spec.queue : "default";
	long q = -1;
	for (size_t k = 0; rc == 0 && k < st->queues.n; k++) /* deleted ones too */
		if (!strcmp(st->queues.v[k].name, qname) && (q < 0 || !st->queues.v[k].deleted))
			q = (long)k;
	if (rc == 0 && q < 0)
		rc = xp_errf(err, XP_ECORRUPT, "snapshot: job %lld: no queue %s", (long long)id,
			     qname);
	j->id = (uint64_t)id;
	if (rc == 0)
		rc = xp_elastic_restore(j, jo, err); /* the size: allocations count it */
	json_t *al = json_object_get(jo, "allocations");
	if (rc == 0 && (s == XP_JOB_RUNNING) && !al)
		rc = xp_errf(err, XP_ECORRUPT, "snapshot: running job %lld without allocations",
			     (long long)id);
	if (rc == 0 && al) {
		j->allocs = XNEWV(struct xp_alloc, j->spec.replicas);
		rc = allocs_parse(st, al, j->allocs, j->spec.replicas, err);
	}
	if (rc < 0) {
		xp_state_job_free(j);
		return rc;
	}
	xp_jobspec_request(&j->spec, st->c->syms, &j->req);
	if (j->spec.node) { /* by name: a removed node keeps no name */
		j->req.node = (int32_t)xp_state_node(st, j->spec.node);
		if (j->req.node < 0) /* never placed again */
			j->req.node = INT32_MAX;
	}
	j->id = (uint64_t)id;
	j->tenant = (uint32_t)t;
	j->queue = (uint32_t)q;
	j->state = (uint8_t)s;
	j->key = key ? xstrdup(key) : NULL;
	j->submitted_at = sub;
	j->started_at = start;
	j->finished_at = fin;
	j->reason = reason && *reason ? xstrdup(reason) : NULL;
	j->attempts = (uint32_t)json_integer_value(json_object_get(jo, "attempts"));
	j->requeues = (uint32_t)json_integer_value(json_object_get(jo, "requeues"));
	j->preemptions = (uint32_t)json_integer_value(json_object_get(jo, "preemptions"));
	json_t *hv = json_object_get(jo, "held");
	int held = json_is_string(hv) ? xp_hold_parse(json_string_value(hv)) : 0;
	if (held < 0 || (held && s != XP_JOB_PENDING)) {
		xp_state_job_free(j);
		return xp_errf(err, XP_ECORRUPT, "snapshot: job %lld: bad hold", (long long)id);
	}
	j->held = (uint8_t)held;
	json_t *kh = json_object_get(jo, "key_hash");
	if (j->key) /* snapshots before key_hash: the spec as it stands */
		j->key_hash = json_is_string(kh) ? strtoull(json_string_value(kh), NULL, 16)
						 : xp_jobspec_hash(&j->spec);
	json_t *ex = json_object_get(jo, "exited");
	if (s == XP_JOB_RUNNING) {
		j->exited = XNEWV(uint8_t, j->spec.replicas);
		for (uint32_t k = 0; k < j->spec.replicas && json_is_array(ex); k++)
			j->exited[k] = json_is_true(json_array_get(ex, k));
	}
	if (json_is_integer(exit)) {
		j->has_exit = 1;
		j->exit_code = (int32_t)json_integer_value(exit);
	}
	/* absent in older snapshots: none */
	json_t *sig = json_object_get(jo, "signal"), *end = json_object_get(jo, "end");
	if (json_is_integer(sig) && json_integer_value(sig) > 0 && json_integer_value(sig) < 128)
		j->exit_signal = (uint8_t)json_integer_value(sig);
	if (json_is_string(end) && xp_end_parse(json_string_value(end)) > 0)
		j->end = (uint8_t)xp_end_parse(json_string_value(end));
	xp_state_add_job(st, j);
	return 0;
}

/* the tenants, in index order */
static int load_tenants(struct xp_state *st, json_t *arr, struct xp_err *err)
{
	size_t i;
	json_t *v;
	int rc = 0;

	json_array_foreach(arr, i, v)
	{
		const char *name;
		if (rc == 0 && (json_unpack(v, "{s:s}", "name", &name) < 0 || !xp_name_ok(name)))
			rc = xp_errf(err, XP_ECORRUPT, "snapshot: tenant %zu is malformed", i);
		if (rc == 0) {
			struct xp_tenant t = { .name = xstrdup(name) };
			xp_vec_push(&st->tenants, t);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* the tokens (their tenants loaded) */
static int load_tokens(struct xp_state *st, json_t *arr, struct xp_err *err)
{
	size_t i;
	json_t *v;
	int rc = 0;

	json_array_foreach(arr, i, v)
	{
		json_int_t id;
		const char *tenant, *name, *sha, *node = NULL;
		int admin, revoked, boot = 0;
		long t = -1;
		if (rc == 0 &&
		    (json_unpack(v, "{s:I,s:s,s:s,s:b,s:b,s:s,s?s,s?b}", "id", &id, "tenant",
				 &tenant, "name", &name, "admin", &admin, "revoked", &revoked,
				 "sha256", &sha, "node", &node, "bootstrap", &boot) < 0 ||
		     strlen(sha) != 64 || (t = xp_state_tenant(st, tenant)) < 0 ||
		     (admin && (node || boot))))
			rc = xp_errf(err, XP_ECORRUPT, "snapshot: token %zu is malformed", i);
		if (rc == 0) {
			struct xp_token k = { .id = (uint64_t)id,
					      .tenant = (uint32_t)t,
					      .admin = (uint8_t)admin,
					      .revoked = (uint8_t)revoked,
					      .scope = admin  ? XP_SCOPE_ADMIN
						       : node ? XP_SCOPE_NODE
						       : boot ? XP_SCOPE_BOOTSTRAP
							      : XP_SCOPE_TENANT,
					      .name = xstrdup(name),
					      .node = node ? xstrdup(node) : NULL };
			memcpy(k.sha256, sha, 65);
			xp_vec_push(&st->tokens, k);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* the queues: a parent before its children */
static int load_queues(struct xp_state *st, json_t *arr, struct xp_err *err)
{
	size_t i;
	json_t *v;
	int rc = 0;

	json_array_foreach(arr, i, v)
	{
		int parent, deleted;
		json_t *def;
		char *text = NULL;
		struct xp_queuespec qs;
		if (rc == 0 && (json_unpack(v, "{s:o,s:i,s:b}", "def", &def, "parent", &parent,
					    "deleted", &deleted) < 0 ||
				parent < -1 || parent >= (int)i))
			rc = xp_errf(err, XP_ECORRUPT, "snapshot: queue %zu is malformed", i);
		if (rc == 0 && !(text = json_dumps(def, JSON_COMPACT)))
			rc = xp_errf(err, XP_ECORRUPT, "snapshot: queue %zu is malformed", i);
		if (rc == 0)
			rc = st->docs->queuespec("snapshot queue", text, strlen(text), 1, 1, &qs,
						 NULL, err);
		free(text);
		if (rc == 0) {
			struct xp_queue q = { .name = xstrdup(qs.name),
					      .priority = qs.priority,
					      .weight = qs.weight,
					      .preempt = qs.preempt,
					      .aging_ms = qs.aging_ms,
					      .parent = parent,
					      .deleted = (uint8_t)deleted };
			memcpy(q.guarantee, qs.guarantee, sizeof(q.guarantee));
			memcpy(q.max, qs.max, sizeof(q.max));
			if (qs.nallow) {
				q.nallow = qs.nallow;
				q.allow = xcalloc(qs.nallow, sizeof(*q.allow));
				memcpy(q.allow, qs.allow, qs.nallow * sizeof(*q.allow));
			}
			if (parent >= 0 && !deleted)
				st->queues.v[parent].children++;
			xp_vec_push(&st->queues, q);
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* the nodes in index order, removed ones too, with health, failures and MIG modes */
static int load_nodes(struct xp_state *st, json_t *arr, struct xp_err *err)
{
	size_t i;
	json_t *v;
	int rc = 0;

	json_array_foreach(arr, i, v)
	{
		const char *src, *state;
		int removed;
		json_t *d;
		if (rc == 0 && json_unpack(v, "{s:s,s:s,s:b,s:o}", "source", &src, "state", &state,
					   "removed", &removed, "descriptor", &d) < 0)
			rc = xp_errf(err, XP_ECORRUPT, "snapshot: node %zu is malformed", i);
		int so = rc == 0 ? xp_node_source_parse(src) : -1,
		    ns = rc == 0 ? xp_node_state_parse(state) : -1;
		if (rc == 0 && (so < 0 || ns < 0))
			rc = xp_errf(err, XP_ECORRUPT, "snapshot: node %zu: bad source or state",
				     i);
		if (rc == 0) {
			long idx = add_node(st, d, so, ns, err);
			json_t *why = json_object_get(v, "why");
			if (idx >= 0 && json_is_array(why)) { /* health comes with the descriptor */
				uint16_t nd = st->c->nodes[idx].ndevs;
				uint8_t ok[XP_MAX_NODE_DEVS];
				char *w[XP_MAX_NODE_DEVS];
				for (uint16_t k = 0; k < nd; k++) {
					const char *t = json_string_value(json_array_get(why, k));
					ok[k] = st->c->nodes[idx].devs[k].health !=
						XP_HEALTH_UNHEALTHY;
					w[k] = (char *)(t ? t : "");
				}
				xp_state_set_health(st, idx, ok, w, 0);
			}
			if (idx < 0) {
				rc = (int)idx;
			} else { /* the failure history, for the weighted policy */
				st->nodes.v[idx].failures = (uint32_t)json_integer_value(
					json_object_get(v, "failures"));
				rc = xp_migmode_restore(st, (size_t)idx, v, err);
			}
			if (idx >= 0 && removed) {
				st->nodes.v[idx].removed = 1;
				xp_capacity_node(st, (uint32_t)idx, -1);
				st->node_of_sym
					.v[xp_strtab_find(st->node_names, st->c->nodes[idx].name)] =
					UINT32_MAX;
			}
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

int xp_state_load_snapshot(struct xp_state *st, const char *body, size_t len, struct xp_err *err)
{
	json_error_t je;
	json_t *o = json_loadb(body, len, 0, &je), *a, *v;
	json_int_t fmt, seq, nj, nt;
	size_t i;
	int rc = 0;

	if (!o || json_unpack(o, "{s:I,s:I,s:I,s:I}", "format", &fmt, "seq", &seq, "next_job_id",
			      &nj, "next_token_id", &nt) < 0) {
		json_decref(o);
		return xp_errf(err, XP_ECORRUPT, "snapshot: not a state snapshot%s%s",
			       o ? "" : ": ", o ? "" : je.text);
	}
	if (fmt > SNAPSHOT_FORMAT) {
		json_decref(o);
		return xp_errf(err, XP_EVERSION,
			       "snapshot format %lld is newer than this build's %d", (long long)fmt,
			       SNAPSHOT_FORMAT);
	}
	rc = load_tenants(st, json_object_get(o, "tenants"), err);
	if (rc == 0)
		rc = load_tokens(st, json_object_get(o, "tokens"), err);
	if (rc == 0)
		rc = load_queues(st, json_object_get(o, "queues"), err);
	if (rc == 0)
		rc = load_nodes(st, json_object_get(o, "nodes"), err);
	if (rc == 0) /* before the jobs, which join their services */
		rc = xp_services_restore(st, json_object_get(o, "services"), err);
	a = json_object_get(o, "jobs");
	json_array_foreach(a, i, v)
	{
		if (rc == 0)
			rc = load_job(st, v, i, err);
	}
	if (rc == 0)
		rc = xp_meter_restore(st, json_object_get(o, "meter"), err);
	if (rc == 0) {
		st->seq = (uint64_t)seq;
		if ((uint64_t)nj > st->next_job_id)
			st->next_job_id = (uint64_t)nj;
		if ((uint64_t)nt > st->next_token_id)
			st->next_token_id = (uint64_t)nt;
		st->sched_stale = 1;
		st->nodes_gen++;
		rc = xp_state_sched(st, err);
		xp_state_done_rebuild(st);
	}
	json_decref(o);
	return rc;
}
