/*
 * beat: an agent's heartbeat read at the edge, on a pool thread
 * (docs/api.md "POST /v1/nodes/{name}/heartbeat"): device health and
 * figures, each replica's vGPU account ("tasks"), each service replica's
 * port, readiness and load ("services"), and the address replicas are
 * reached at, checked field by field into a struct xp_beat. The owner
 * (api_agents.c) checks only what needs the state - the node's device count,
 * and the MIG instances against its GPUs - and applies it.
 */
#include "ctl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xalloc.h"

static const char *const beat_keys[] = { "devices", "tasks", "services", "address", "mig",
					 NULL };
static const char *const dev_keys[] = { "health", "why",	  "util_pct", "power_w",
					"temp_c", "mem_used_mib", NULL };

void xp_beat_free(void *p)
{
	struct xp_beat *b = p;
	if (!b)
		return;
	json_decref(b->o);
	free(b->rep);
	free(b->svc);
	free(b);
}

/* one device's entry into b's slot d; 0, or -1 when it is malformed */
static int device(json_t *e, struct xp_beat *b, uint16_t d)
{
	json_t *v;
	const char *k;
	int bad = !json_is_object(e);
	json_object_foreach(bad ? NULL : e, k, v)
	{
		int known = 0;
		for (int i = 0; dev_keys[i]; i++)
			known |= !strcmp(k, dev_keys[i]);
		bad |= !known;
	}
	json_t *h = json_object_get(e, "health"), *w = json_object_get(e, "why");
	int health = json_is_string(h) ? xp_health_parse(json_string_value(h)) : -1;
	bad |= health < 0 || (w && !json_is_string(w));
	static const char *const nums[] = { "util_pct", "power_w", "temp_c", "mem_used_mib" };
	static const json_int_t lo[] = { -1, -1, -100, -1 };
	const json_int_t hi[] = { 100, 100000, 300, (json_int_t)XP_MAX_MEM_MIB };
	json_int_t got[4];
	for (int i = 0; i < 4; i++) {
		json_t *x = json_object_get(e, nums[i]);
		got[i] = -1;
		if (x && (!json_is_integer(x) || json_integer_value(x) < lo[i] ||
			  json_integer_value(x) > hi[i]))
			bad = 1;
		else if (x)
			got[i] = json_integer_value(x);
	}
	if (bad)
		return -1;
	b->ds[d] = (struct xp_devstat){ .util_pct = (int32_t)got[0],
					.power_w = (int32_t)got[1],
					.temp_c = (int32_t)got[2],
					.mem_used_mib = got[3] };
	b->ok[d] = health != XP_HEALTH_UNHEALTHY;
	b->why[d] = w ? json_string_value(w) : NULL;
	return 0;
}

/* "tasks": each replica's vGPU account; -1 with field set on the first bad one */
static int gpu_reports(json_t *tasks, struct xp_beat *b, char *field, size_t fn)
{
	size_t i;
	json_t *e;
	if (!tasks)
		return 0;
	if (!json_is_array(tasks) || json_array_size(tasks) > XP_GPU_REPORTS_MAX) {
		snprintf(field, fn, "tasks");
		return -1;
	}
	b->rep = XNEWV(struct xp_gpu_report, json_array_size(tasks) + 1);
	json_array_foreach(tasks, i, e)
	{
		struct xp_gpu_report *r = &b->rep[i];
		json_error_t je;
		snprintf(field, fn, "tasks[%zu]", i);
		if (json_unpack_ex(e, &je, JSON_STRICT,
				   "{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "job", &r->job,
				   "replica", &r->replica, "attempt", &r->attempt, "gpu_mem_mib",
				   &r->mem, "gpu_peak_mib", &r->peak, "ooms", &r->ooms,
				   "device_ooms", &r->dev_ooms, "spent_ns", &r->spent, "clock_ns",
				   &r->clock) < 0 ||
		    r->job <= 0 || r->replica < 0 || r->attempt < 0 || r->mem < 0 || r->peak < 0 ||
		    r->ooms < 0 || r->dev_ooms < 0 || r->ooms > UINT32_MAX ||
		    r->dev_ooms > UINT32_MAX || r->mem > (json_int_t)XP_MAX_MEM_MIB ||
		    r->peak > (json_int_t)XP_MAX_MEM_MIB)
			return -1;
	}
	b->nrep = (int)i;
	return 0;
}

int xp_beat_parse(struct xp_cmd *cmd)
{
	char field[64] = "";
	json_t *o = xp_cmd_body_object(cmd, beat_keys);
	if (!o)
		return -1;
	struct xp_beat *b = XNEW(struct xp_beat);
	b->o = o;
	json_t *devs = json_object_get(o, "devices"), *addr = json_object_get(o, "address");
	const char *why = NULL;
	if (!json_is_array(devs) || json_array_size(devs) > XP_MAX_NODE_DEVS) {
		snprintf(field, sizeof(field), "devices");
		why = "expected a list of the node's devices";
	}
	for (size_t d = 0; !why && d < json_array_size(devs); d++)
		if (device(json_array_get(devs, d), b, (uint16_t)d) < 0) {
			snprintf(field, sizeof(field), "devices[%zu]", d);
			why = "expected {health: ok|degraded|unhealthy|unknown, why, util_pct "
			      "0..100, power_w, temp_c, mem_used_mib}";
		}
	b->ndev = (uint16_t)json_array_size(devs);
	if (!why && gpu_reports(json_object_get(o, "tasks"), b, field, sizeof(field)) < 0)
		why = "expected a list of {job, replica, attempt, gpu_mem_mib, gpu_peak_mib, "
		      "ooms, device_ooms, spent_ns, clock_ns} with counts >= 0";
	if (!why &&
	    (b->nsvc = xp_svc_reports_check(json_object_get(o, "services"), &b->svc, field,
					    sizeof(field))) < 0)
		why = "expected a list of {job, replica, attempt, port 0..65535, ready}";
	if (!why && addr &&
	    (!json_is_string(addr) || !json_string_length(addr) || json_string_length(addr) >= 64)) {
		snprintf(field, sizeof(field), "address");
		why = "expected the host or address its replicas are reached at";
	}
	b->addr = json_string_value(addr);
	if (why) {
		fprintf(stderr, "xpool server: node=%s: report refused: %s: %s\n", cmd->name, field,
			why);
		xp_reply_error(cmd, XP_EINVAL, field, "%s: %s", field, why);
		xp_beat_free(b);
		return -1;
	}
	cmd->payload = b;
	cmd->payload_free = xp_beat_free;
	return 0;
}
