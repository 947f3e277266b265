/*
 * api_mig: what the controller knows of a node's MIG instances (issue 21,
 * docs/design/mig.md "Warm instances" and "The MIG view").
 *
 * An agent's heartbeat carries "mig": every GPU instance on its GPUs in
 * MIG mode, [{device, gi, id, start, size, uuid, owned, warm}]. It is
 * checked here (bounded: 8 per device), kept per node in ctl->live, and
 * the warm ones become the scheduler's hint (xp_sched_set_mig_warm): the
 * next slice of that profile prefers the warm {GPU, start}, and others
 * avoid displacing it; the slices of instances xpool did not create
 * (owned false: an administrator's) are never placed on. The hint is not journaled: it is the
 * agent's to report again on every beat, and a placement made without it is still right (the agent
 * destroys a warm instance in the way).
 *
 * The view (xp_mig_dev_json, in /v1/devices and the dashboard): a MIG
 * GPU's slices, its instances (profile, placement, GI, UUID, state) and
 * the jobs in them, the reported instances merged with the slices that
 * running allocations hold. Owner thread only.
 *
 * MIG mode changes (core/state/migmode.h): the node's leave and its
 * reserved or refused change in GET /v1/nodes/NAME, the reserved change in
 * the agent's assignments ("mig_mode"), the agent's answer (POST
 * /v1/nodes/NAME/mig-mode, checked at the edge) journaled as
 * node.mig_mode_done, and the planner run after each cycle.
 */
#include "ctl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/model/mig.h"
#include "../core/state/migmode.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"

#define MIG_PER_DEV 8

int xp_mig_beat_check(json_t *arr, const struct xp_node *node, struct xp_live_mig **out,
		      char *field, size_t fn)
{
	size_t n = json_array_size(arr), max = (size_t)node->ndevs * MIG_PER_DEV;
	*out = NULL;
	if (!arr)
		return 0;
	snprintf(field, fn, "mig");
	if (!json_is_array(arr) || n > max)
		return -1;
	struct xp_live_mig *v = XNEWV(struct xp_live_mig, n ? n : 1);
	for (size_t i = 0; i < n; i++) {
		json_int_t dev, gi, id, start, size;
		const char *uuid;
		int owned, warm;
		json_error_t je;
		snprintf(field, fn, "mig[%zu]", i);
		if (json_unpack_ex(json_array_get(arr, i), &je, JSON_STRICT,
				   "{s:I,s:I,s:I,s:I,s:I,s:s,s:b,s:b}", "device", &dev, "gi", &gi,
				   "id", &id, "start", &start, "size", &size, "uuid", &uuid,
				   "owned", &owned, "warm", &warm) < 0 ||
		    dev < 0 || dev >= node->ndevs || gi < 0 || gi > 0xffff ||
		    xp_mig_kind_of_id((unsigned)id) < 0 || id < 0 || start < 0 ||
		    start >= XP_MIG_MEM_SLICES || size < 1 || start + size > XP_MIG_MEM_SLICES ||
		    strlen(uuid) >= sizeof(v[i].uuid)) {
			free(v);
			return -1;
		}
		v[i] = (struct xp_live_mig){ .dev = (uint8_t)dev,
					     .gi = (uint16_t)gi,
					     .id = (uint8_t)id,
					     .start = (uint8_t)start,
					     .size = (uint8_t)size,
					     .owned = (uint8_t)owned,
					     .warm = (uint8_t)warm };
		snprintf(v[i].uuid, sizeof(v[i].uuid), "%s", uuid);
	}
	*out = v;
	return (int)n;
}

void xp_mig_beat_apply(struct xp_ctl *ctl, long n, struct xp_live_mig *v, int k)
{
	struct xp_live *l = &ctl->live.v[n];
	const struct xp_node *node = &ctl->st->c->nodes[n];
	free(l->mig);
	l->mig = v;
	l->nmig = (uint16_t)k;
	int any = 0;
	for (uint16_t d = 0; d < node->ndevs; d++)
		any |= node->devs[d].mode == XP_MODE_MIG;
	if (!any || xp_state_sched(ctl->st, NULL) < 0)
		return;
	for (uint16_t d = 0; d < node->ndevs; d++) {
		uint8_t warm[XP_MIG_NKINDS] = { 0 }, foreign = 0;
		if (node->devs[d].mode != XP_MODE_MIG)
			continue;
		for (int i = 0; i < k; i++) {
			if (v[i].dev != d)
				continue;
			if (v[i].warm)
				warm[xp_mig_kind_of_id(v[i].id)] |= (uint8_t)(1u << v[i].start);
			if (!v[i].owned)
				foreign |= (uint8_t)(((1u << v[i].size) - 1) << v[i].start);
		}
		xp_sched_set_mig_warm(ctl->st->sched, (uint32_t)n, d, warm, foreign);
	}
}

/* The jobs whose running replicas hold a slice at start on (n, d) */
static json_t *slice_jobs(const struct xp_state *st, size_t n, uint16_t d, unsigned start,
			  const struct xp_alloc **held)
{
	json_t *jobs = json_array();
	const struct xp_nodeinfo *ni = &st->nodes.v[n];
	*held = NULL;
	for (size_t i = 0; i < ni->run.n; i++) {
		const struct xp_job *j = ni->run.v[i].job;
		const struct xp_alloc *a = &j->allocs[ni->run.v[i].replica];
		if (!a->mig || !a->ndev || a->devs[0] != d || a->mig_start != start ||
		    j->exited[ni->run.v[i].replica])
			continue;
		*held = a;
		json_array_append_new(jobs, json_pack("{s:I,s:i}", "job", (json_int_t)j->id,
						      "replica", (int)ni->run.v[i].replica));
	}
	return jobs;
}

static const char *prof_name(const struct xp_mig_table *t, int kind)
{
	return t && kind >= 0 && t->prof[kind].name ? t->prof[kind].name : "?";
}

json_t *xp_mig_dev_json(struct xp_ctl *ctl, size_t n, uint16_t d)
{
	struct xp_state *st = ctl->st;
	const struct xp_mig_table *t = xp_sched_mig_table(st->sched, (uint32_t)n, d);
	const struct xp_mig_gpu *g = xp_sched_mig_gpu(st->sched, (uint32_t)n, d);
	const struct xp_live *l = n < ctl->live.n ? &ctl->live.v[n] : NULL;
	char slices[XP_MIG_MEM_SLICES + 1];
	json_t *insts = json_array();
	if (!t || !g)
		return NULL;
	memset(slices, '.', XP_MIG_MEM_SLICES);
	slices[XP_MIG_MEM_SLICES] = 0;
	for (unsigned s = 0; s < XP_MIG_MEM_SLICES; s++) { /* by start */
		const struct xp_live_mig *r = NULL;
		for (uint16_t i = 0; l && i < l->nmig; i++)
			if (l->mig[i].dev == d && l->mig[i].start == s)
				r = &l->mig[i];
		const struct xp_alloc *a;
		json_t *jobs = slice_jobs(st, n, d, s, &a);
		if (!r && !a) {
			json_decref(jobs);
			continue;
		}
		int kind = r ? xp_mig_kind_of_id(r->id) : a->mig - 1;
		unsigned size = r ? r->size : t->prof[kind].place[0].size;
		const char *state = a	       ? (r ? "in use" : "reserved")
				    : r->warm  ? "warm"
				    : r->owned ? "idle"
					       : "foreign";
		json_t *o = json_pack("{s:s,s:i,s:i,s:i,s:s,s:o}", "profile", prof_name(t, kind),
				      "id", (int)xp_mig_kind_id(kind), "start", (int)s, "size",
				      (int)size, "state", state, "jobs", jobs);
		if (r) {
			json_object_set_new(o, "gi", json_integer(r->gi));
			json_object_set_new(o, "uuid", json_string(r->uuid));
			json_object_set_new(o, "owned", json_boolean(r->owned));
		}
		for (unsigned k = s; k < s + size && k < XP_MIG_MEM_SLICES; k++)
			slices[k] = (char)('a' + (int)json_array_size(insts) % 26);
		json_array_append_new(insts, o);
	}
	int big = xp_mig_largest(g);
	return json_pack("{s:i,s:i,s:s,s:i,s:s,s:o}", "compute_slices", XP_MIG_COMPUTE_SLICES,
			 "memory_slices", XP_MIG_MEM_SLICES, "slices", slices, "free_compute",
			 (int)xp_mig_free_compute(g), "largest_free",
			 big >= 0 ? prof_name(t, big) : "", "instances", insts);
}

/* ---- MIG mode changes (core/state/migmode.h) ---- */

void xp_mig_mode_node_json(struct xp_ctl *ctl, size_t n, json_t *o)
{
	const struct xp_state *st = ctl->st;
	const struct xp_migmode *m = xp_migmode_of(st, n);
	char ts[XP_TIME_LEN];
	json_object_set_new(o, "mig_mode_change",
			    json_string(st->nodes.v[n].mig_leave ? "allow" : "deny"));
	if (m && m->dev >= 0) {
		xp_time_format(m->at, ts);
		json_object_set_new(o, "mig_mode_reserved",
				    json_pack("{s:i,s:s,s:I,s:s}", "device", (int)m->dev, "mode",
					      m->on ? "mig" : "off", "job", (json_int_t)m->job,
					      "since", ts));
	}
	if (m && m->refused >= 0) {
		xp_time_format(m->refused_at, ts);
		json_object_set_new(o, "mig_mode_refused",
				    json_pack("{s:i,s:s,s:s}", "device", (int)m->refused, "at", ts,
					      "why", m->why));
	}
}

void xp_mig_mode_assign(struct xp_ctl *ctl, size_t n, json_t *reply)
{
	const struct xp_migmode *m = xp_migmode_of(ctl->st, n);
	if (m && m->dev >= 0)
		json_object_set_new(reply, "mig_mode",
				    json_pack("[{s:i,s:s,s:I}]", "device", (int)m->dev, "mode",
					      m->on ? "mig" : "off", "job", (json_int_t)m->job));
}

/* edge (pool thread): POST /v1/nodes/NAME/mig-mode {device, mode (mig | off), ok, why} */
int xp_edge_mig_mode(struct xp_cmd *cmd)
{
	static const char *const allowed[] = { "device", "mode", "ok", "why", NULL };
	json_t *o = xp_cmd_body_object(cmd, allowed);
	if (!o)
		return -1;
	json_t *d = json_object_get(o, "device"), *m = json_object_get(o, "mode"),
	       *ok = json_object_get(o, "ok"), *why = json_object_get(o, "why");
	const char *field = !json_is_integer(d) || json_integer_value(d) < 0 ||
					    json_integer_value(d) >= XP_MAX_NODE_DEVS
				    ? "device"
			    : !json_is_string(m) || (strcmp(json_string_value(m), "mig") &&
						     strcmp(json_string_value(m), "off"))
				    ? "mode"
			    : !json_is_boolean(ok) ? "ok"
			    : why && (!json_is_string(why) || strlen(json_string_value(why)) > 255)
				    ? "why"
				    : NULL;
	if (field) {
		json_decref(o);
		return xp_reply_error(
			       cmd, XP_EINVAL, field,
			       "%s: expected device (a device index), mode (mig or off), ok (a "
			       "boolean) and why (at most 255 characters)",
			       field),
		       -1;
	}
	struct xp_small *b = XNEW(struct xp_small);
	b->replicas = (uint32_t)json_integer_value(d);
	b->state = json_is_true(ok);
	b->scope = !strcmp(json_string_value(m), "mig"); /* 1 MIG on, 0 off */
	snprintf(b->reason, sizeof(b->reason), "%s", why ? json_string_value(why) : "");
	json_decref(o);
	cmd->payload = b;
	cmd->payload_free = xp_small_free;
	return 0;
}

/* owner: the agent's answer to a reserved MIG mode change */
void xp_api_node_mig_mode(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	const struct xp_small *b = cmd->payload;
	long n = xp_state_node(ctl->st, cmd->name);
	if (n < 0)
		FAIL(cmd, XP_ENOENT, NULL, "no node %s", cmd->name);
	const struct xp_migmode *m = xp_migmode_of(ctl->st, (size_t)n);
	if (!m || m->dev != (int16_t)b->replicas)
		FAIL(cmd, XP_ESTATE, "device", "node %s GPU %u: no MIG mode change is reserved",
		     cmd->name, b->replicas);
	if (m->on != b->scope)
		FAIL(cmd, XP_ESTATE, "mode", "node %s GPU %u: the change reserved is MIG %s",
		     cmd->name, b->replicas, m->on ? "on (mode mig)" : "off");
	if (!b->state)
		fprintf(stderr, "xpool server: node=%s GPU %u: MIG mode change (%s) refused: %s\n",
			cmd->name, b->replicas, b->scope ? "on" : "off", b->reason);
	if (xp_ctl_journal(
		    ctl, "node.mig_mode_done",
		    xp_rec_node_mig_done_to(cmd->name, b->replicas, b->scope, b->state, b->reason),
		    &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_reply_json(cmd, 200,
		      xp_json_take(json_pack("{s:s,s:i,s:b}", "node", cmd->name, "device",
					     (int)b->replicas, "ok", b->state)));
}

static int plan_emit(void *ctx, const struct xp_rec *r)
{
	struct xp_err err = { 0 };
	const char *type = xp_rec_type_name(r->type);
	int rc = xp_ctl_journal(ctx, type, xp_rec_encode(r), &err);
	if (rc < 0)
		fprintf(stderr, "xpool server: a MIG mode change's %s was refused: %s\n", type,
			err.text);
	return rc;
}

void xp_mig_mode_plan(struct xp_ctl *ctl)
{
	xp_migmode_plan(ctl->st, xp_ctl_now(), plan_emit, ctl);
}
