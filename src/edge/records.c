/*
 * records: the journal records' writers - the encoding half of the record
 * codec (codec.c decodes). Each writes the bytes the journal has always
 * held for its record (test_codec pins them): key order, number and
 * string forms as before, so journals, snapshots and the etcd store stay
 * byte-compatible. xp_rec_encode writes the typed records the scheduling
 * cycle emits.
 */
#include "edge.h"
#include "edge_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/model/mig.h"
#include "../lib/strbuf.h"
#include "../lib/xalloc.h"

static char *dump(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

char *xp_rec_tenant_create(const char *name)
{
	return dump(json_pack("{s:s}", "name", name));
}

char *xp_rec_token_create(uint64_t id, const char *tenant, const char *name, int scope,
			  const char *node, const char *sha256)
{
	json_t *o = json_pack("{s:I,s:s,s:s,s:b,s:s}", "id", (json_int_t)id, "tenant", tenant,
			      "name", name, "admin", scope == XP_SCOPE_ADMIN, "sha256", sha256);
	/* tenant and admin tokens are written as before scopes existed */
	if (scope == XP_SCOPE_NODE)
		json_object_set_new(o, "node", json_string(node));
	else if (scope == XP_SCOPE_BOOTSTRAP)
		json_object_set_new(o, "bootstrap", json_true());
	return dump(o);
}

char *xp_rec_token_revoke(uint64_t id)
{
	return dump(json_pack("{s:I}", "id", (json_int_t)id));
}

char *xp_rec_queue_delete(const char *name)
{
	return dump(json_pack("{s:s}", "name", name));
}

char *xp_rec_node_add(int source, const char *descriptor)
{
	json_error_t e;
	json_t *d = json_loads(descriptor, 0, &e);
	if (!d)
		return NULL;
	return dump(json_pack("{s:s,s:o}", "source", xp_node_source_name(source), "descriptor", d));
}

char *xp_rec_node_state(const char *name, int state)
{
	return dump(json_pack("{s:s,s:s}", "name", name, "state", xp_node_state_name(state)));
}

char *xp_rec_node_remove(const char *name)
{
	return dump(json_pack("{s:s}", "name", name));
}

char *xp_rec_job_submit(uint64_t id, const char *tenant, const char *key,
			const struct xp_jobspec *spec)
{
	/* the spec's canonical JSON spliced in as it is: no parse and dump of
	 * it again (a workflow of 10,000 jobs writes 10,000 of these) */
	char *sj = xp_jobspec_to_json(spec);
	json_t *t = json_string(tenant), *k = key ? json_string(key) : json_null();
	char *ts = json_dumps(t, JSON_ENCODE_ANY), *ks = json_dumps(k, JSON_ENCODE_ANY);
	struct xp_sb sb = { 0 };
	if (ts && ks && sj) { /* else not UTF-8: no record, as json_pack gave none */
		xp_sb_init(&sb);
		xp_sb_printf(&sb, "{\"id\":%llu,\"tenant\":%s,\"key\":%s,\"spec\":",
			     (unsigned long long)id, ts, ks);
		xp_sb_puts(&sb, sj);
		xp_sb_puts(&sb, "}");
	}
	json_decref(t);
	json_decref(k);
	free(ts);
	free(ks);
	free(sj);
	return sb.s ? xp_sb_steal(&sb) : NULL;
}

char *xp_rec_job_finish(uint64_t id, int state, int exit_code, const char *reason)
{
	return dump(json_pack("{s:I,s:s,s:i,s:s}", "id", (json_int_t)id, "state",
			      xp_job_state_name(state), "exit_code", exit_code, "reason",
			      reason ? reason : ""));
}

char *xp_rec_job_hold(uint64_t id, int held)
{
	return dump(json_pack("{s:I,s:s}", "id", (json_int_t)id, "held", xp_hold_name(held)));
}

char *xp_rec_job_update(uint64_t id, const struct xp_jobpatch *p)
{
	return dump(json_pack("{s:I,s:o}", "id", (json_int_t)id, "change", xp_jobpatch_json(p)));
}

/* the optional fields of an exit: signal, end, detail */
static json_t *exit_fields(json_t *o, const struct xp_exit *x)
{
	if (x->signal > 0)
		json_object_set_new(o, "signal", json_integer(x->signal));
	if (x->end > 0 && x->end < XP_END_N)
		json_object_set_new(o, "end", json_string(xp_end_name(x->end)));
	if (x->detail && *x->detail)
		json_object_set_new(o, "detail", json_string(x->detail));
	return o;
}

char *xp_rec_job_finish_x(uint64_t id, int state, const struct xp_exit *x, const char *reason)
{
	json_t *o = json_pack("{s:I,s:s,s:s}", "id", (json_int_t)id, "state",
			      xp_job_state_name(state), "reason", reason ? reason : "");
	if (x->has_code) /* absent: no exit code (an agent's kill report brings it) */
		json_object_set_new(o, "exit_code", json_integer(x->code));
	return dump(exit_fields(o, x));
}

char *xp_rec_job_task(uint64_t id, uint32_t attempt, uint32_t replica, int exit_code)
{
	return dump(json_pack("{s:I,s:I,s:I,s:i}", "id", (json_int_t)id, "attempt",
			      (json_int_t)attempt, "replica", (json_int_t)replica, "exit_code",
			      exit_code));
}

char *xp_rec_job_task_x(uint64_t id, uint32_t attempt, uint32_t replica, const struct xp_exit *x)
{
	return dump(exit_fields(json_pack("{s:I,s:I,s:I,s:i}", "id", (json_int_t)id, "attempt",
					  (json_int_t)attempt, "replica", (json_int_t)replica,
					  "exit_code", x->code),
				x));
}

char *xp_rec_node_health(const char *name, const uint8_t *ok, char *const *why, unsigned n)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < n; i++)
		json_array_append_new(
			a, json_pack("{s:b,s:s}", "ok", ok[i], "why", why && why[i] ? why[i] : ""));
	return dump(json_pack("{s:s,s:o}", "name", name, "devices", a));
}

char *xp_rec_queue_define(const struct xp_queuespec *q)
{
	return dump(xp_queuespec_json(q));
}

char *xp_rec_queue_create(const char *name, int32_t priority, uint32_t weight)
{
	struct xp_queuespec q;
	xp_queuespec_init(&q);
	snprintf(q.name, sizeof(q.name), "%s", name);
	q.priority = priority;
	q.weight = weight;
	return xp_rec_queue_define(&q);
}

char *xp_rec_service_create(const struct xp_servicespec *spec)
{
	json_t *o = json_pack("{s:o}", "spec", xp_servicespec_json(spec));
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}

char *xp_rec_service_scale(const char *name, uint32_t replicas, const char *reason)
{
	json_t *o = json_pack("{s:s,s:i,s:s}", "name", name, "replicas", (int)replicas, "reason",
			      reason ? reason : "");
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}

char *xp_rec_service_delete(const char *name)
{
	return xp_rec_service_named(name);
}

char *xp_rec_service_named(const char *name)
{
	json_t *o = json_pack("{s:s}", "name", name);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return text;
}

char *xp_rec_service_update(const struct xp_servicespec *spec, uint32_t canary, uint32_t weight)
{
	json_t *o = json_pack("{s:o,s:i,s:i}", "spec", xp_servicespec_json(spec), "canary",
			      (int)canary, "weight", (int)weight);
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}

char *xp_rec_job_forget(const uint64_t *ids, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_integer((json_int_t)ids[i]));
	json_t *o = json_pack("{s:o}", "ids", a);
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

char *xp_rec_job_energy(uint64_t job, uint32_t attempt, uint64_t joules)
{
	json_t *o = json_pack("{s:I,s:i,s:I}", "id", (json_int_t)job, "attempt", (int)attempt,
			      "joules", (json_int_t)joules);
	char *s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(o);
	return s;
}

/* allocations as job.start and job.resize carry them; a MIG slice's kind
 * by its NVML profile id (the name depends on the device's table; the
 * assignment gives it to the agent) */
json_t *xp_rec_allocs_json(const struct xp_rec_alloc *a, uint32_t n)
{
	json_t *arr = json_array();
	for (uint32_t r = 0; r < n; r++) {
		json_t *devs = json_array(), *o;
		for (uint16_t i = 0; i < a[r].ndev; i++)
			json_array_append_new(devs, json_integer(a[r].devs[i]));
		json_array_append_new(
			arr, o = json_pack("{s:i,s:s,s:i,s:I,s:I,s:i,s:I,s:o}", "replica", (int)r,
					   "node", a[r].node, "node_index", (int)a[r].node_index,
					   "cpu_milli", (json_int_t)a[r].cpu_milli, "memory_mib",
					   (json_int_t)a[r].mem_mib, "dev_milli",
					   (int)a[r].dev_milli, "dev_mem_mib",
					   (json_int_t)a[r].dev_mem_mib, "devices", devs));
		if (a[r].mig)
			json_object_set_new(o, "mig",
					    json_pack("{s:i,s:i}", "id",
						      (int)xp_mig_kind_id(a[r].mig - 1), "start",
						      (int)a[r].mig_start));
	}
	return arr;
}

char *xp_rec_encode(const struct xp_rec *r)
{
	switch (r->type) {
	case XP_REC_JOB_START:
		return dump(json_pack("{s:I,s:o}", "id", (json_int_t)r->u.start.id, "allocations",
				      xp_rec_allocs_json(r->u.start.a, (uint32_t)r->u.start.n)));
	case XP_REC_JOB_CANCEL:
		return xp_rec_job_cancel(r->u.end.id, r->u.end.reason);
	case XP_REC_JOB_REQUEUE:
	case XP_REC_JOB_PREEMPT:
		return xp_rec_job_requeue(r->u.requeue.id, r->u.requeue.reason);
	case XP_REC_JOB_RESIZE: {
		json_t *k = json_array();
		for (int64_t i = 0; i < r->u.resize.nkeep; i++)
			json_array_append_new(k, json_integer(r->u.resize.keep[i]));
		return dump(json_pack("{s:I,s:i,s:i,s:o,s:o,s:s}", "id", (json_int_t)r->u.resize.id,
				      "epoch", (int)r->u.resize.epoch, "size",
				      (int)r->u.resize.size, "keep", k, "add",
				      xp_rec_allocs_json(r->u.resize.add, r->u.resize.nadd), "reason",
				      r->u.resize.reason ? r->u.resize.reason : ""));
	}
	case XP_REC_NODE_MIG_LEAVE:
		return xp_rec_node_mig_leave(r->u.migmode.name, r->u.migmode.allow);
	case XP_REC_NODE_MIG_MODE:
		return xp_rec_node_mig_mode_to(r->u.migmode.name, (unsigned)r->u.migmode.device,
					       !r->u.migmode.mode_off, r->u.migmode.job);
	case XP_REC_NODE_MIG_DONE:
		return xp_rec_node_mig_done_to(r->u.migmode.name, (unsigned)r->u.migmode.device,
					       !r->u.migmode.mode_off, r->u.migmode.ok,
					       r->u.migmode.why);
	}
	return NULL;
}

/* node.mig_mode_change, node.mig_mode, node.mig_mode_done (moved from
 * core/state/migmode.c, the same bytes) */
char *xp_rec_node_mig_leave(const char *node, int allow)
{
	return dump(json_pack("{s:s,s:b}", "name", node, "allow", allow));
}

char *xp_rec_node_mig_mode_to(const char *node, unsigned dev, int on, uint64_t job)
{
	return dump(json_pack("{s:s,s:i,s:s,s:I}", "name", node, "device", (int)dev, "mode",
			      on ? "mig" : "off", "job", (json_int_t)job));
}

char *xp_rec_node_mig_done_to(const char *node, unsigned dev, int on, int ok, const char *why)
{
	return dump(json_pack("{s:s,s:i,s:s,s:b,s:s}", "name", node, "device", (int)dev, "mode",
			      on ? "mig" : "off", "ok", ok, "why", why ? why : ""));
}

char *xp_rec_node_mig_mode(const char *node, unsigned dev, uint64_t job)
{
	return xp_rec_node_mig_mode_to(node, dev, 1, job);
}

char *xp_rec_node_mig_done(const char *node, unsigned dev, int ok, const char *why)
{
	return xp_rec_node_mig_done_to(node, dev, 1, ok, why);
}

char *xp_rec_job_start(const struct xp_state *st, uint64_t id, const struct xp_alloc *a, uint32_t n)
{
	struct xp_rec_alloc *ra = xp_allocs_rec(st, a, n);
	struct xp_rec r = { .type = XP_REC_JOB_START, .u.start = { .id = id, .n = n, .a = ra } };
	char *s = xp_rec_encode(&r);
	free(ra);
	return s;
}

char *xp_rec_job_cancel(uint64_t id, const char *reason)
{
	return dump(json_pack("{s:I,s:s}", "id", (json_int_t)id, "reason", reason ? reason : ""));
}

char *xp_rec_job_requeue(uint64_t id, const char *reason)
{
	return dump(json_pack("{s:I,s:s}", "id", (json_int_t)id, "reason", reason ? reason : ""));
}

char *xp_rec_job_resize(const struct xp_state *st, uint64_t id, uint32_t epoch,
			const uint32_t *keep, uint32_t nkeep, const struct xp_alloc *add,
			uint32_t nadd, const char *why)
{
	int64_t *k = XNEWV(int64_t, nkeep + 1);
	for (uint32_t i = 0; i < nkeep; i++)
		k[i] = keep[i];
	struct xp_rec_alloc *ra = xp_allocs_rec(st, add, nadd);
	struct xp_rec r = { .type = XP_REC_JOB_RESIZE,
			    .u.resize = { .id = id,
					  .epoch = epoch,
					  .size = nkeep + nadd,
					  .nkeep = nkeep,
					  .keep = k,
					  .nadd = nadd,
					  .add = ra,
					  .reason = why } };
	char *s = xp_rec_encode(&r);
	free(ra);
	free(k);
	return s;
}
