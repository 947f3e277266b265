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
 */
#include "ctl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/model/mig.h"
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
