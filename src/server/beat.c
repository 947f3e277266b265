/*
 * beat: what an agent sends, read at the edge on a pool thread into typed
 * structs, so the owner parses no text (issue 19):
 *
 *   a heartbeat (docs/api.md "POST /v1/nodes/{name}/heartbeat"): device
 *       health and figures, each replica's vGPU account ("tasks"), each
 *       service replica's port, readiness and load ("services"), and the
 *       address replicas are reached at -> struct xp_beat;
 *   a task report ("POST /v1/nodes/{name}/tasks"): replica exits, with
 *       their signal, reason, detail and epoch -> struct xp_reports.
 *
 * Every field is checked here and a bad one refused naming it. The owner
 * (api_agents.c) checks only what needs the state - the node's device
 * count, the MIG instances against its GPUs, whether a reported attempt
 * runs there - and applies them.
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

/* ---- replica exits: POST /v1/nodes/NAME/tasks ---- */

#define DETAIL_MAX 256

/* One report's fields: {job, attempt, replica, exit_code} and the
 * optional signal, reason, detail and epoch. 0, or the field at fault and
 * why. */
static int task_fields(json_t *t, size_t i, struct xp_task_report *r, char *field, size_t flen,
		       const char **what)
{
	static const char *const keys[] = { "job",    "attempt", "replica", "exit_code", "signal",
					    "reason", "detail",	 "epoch",   NULL };
	const char *k;
	json_t *val;
	snprintf(field, flen, "tasks[%zu]", i);
	*what = "expected {job, attempt, replica, exit_code -255..255[, signal, reason, detail]}";
	if (!json_is_object(t))
		return -1;
	json_object_foreach(t, k, val)
	{
		size_t n = 0;
		while (keys[n] && strcmp(keys[n], k))
			n++;
		if (!keys[n]) {
			snprintf(field, flen, "tasks[%zu].%.32s", i, k);
			*what = "unknown field";
			return -1;
		}
	}
	json_int_t code;
	struct xp_exit *x = &r->x;
	if (json_unpack(t, "{s:I,s:I,s:I,s:I}", "job", &r->job, "attempt", &r->attempt, "replica",
			&r->replica, "exit_code", &code) < 0 ||
	    code < -255 || code > 255 || r->job <= 0)
		return -1;
	memset(x, 0, sizeof(*x));
	json_t *ep = json_object_get(t, "epoch");
	if (ep && (!json_is_integer(ep) || json_integer_value(ep) < 0 ||
		   json_integer_value(ep) > UINT32_MAX)) {
		snprintf(field, flen, "tasks[%zu].epoch", i);
		*what = "expected 0 or more: the resize the replica ran in";
		return -1;
	}
	r->epoch = ep ? json_integer_value(ep) : 0;
	x->has_code = 1;
	x->code = (int)code;
	json_t *sig = json_object_get(t, "signal"), *rs = json_object_get(t, "reason"),
	       *dt = json_object_get(t, "detail");
	if (sig && (!json_is_integer(sig) || json_integer_value(sig) < 1 ||
		    json_integer_value(sig) > 64)) {
		snprintf(field, flen, "tasks[%zu].signal", i);
		*what = "expected the number of the signal that ended the task, 1..64";
		return -1;
	}
	x->signal = sig ? (int)json_integer_value(sig) : 0;
	if (rs && (!json_is_string(rs) || (x->end = xp_end_parse(json_string_value(rs))) < 0)) {
		snprintf(field, flen, "tasks[%zu].reason", i);
		*what = "expected one of oom, limits, time_limit, start";
		return -1;
	}
	if (dt && (!json_is_string(dt) || strlen(json_string_value(dt)) > DETAIL_MAX)) {
		snprintf(field, flen, "tasks[%zu].detail", i);
		*what = "expected a string of at most 256 bytes";
		return -1;
	}
	x->detail = dt ? json_string_value(dt) : NULL;
	return 0;
}

void xp_reports_free(void *p)
{
	struct xp_reports *r = p;
	if (!r)
		return;
	json_decref(r->o);
	free(r->v);
	free(r);
}

int xp_reports_parse(struct xp_cmd *cmd)
{
	static const char *const keys[] = { "tasks", NULL };
	char field[64];
	const char *what = NULL;
	json_t *o = xp_cmd_body_object(cmd, keys);
	if (!o)
		return -1;
	json_t *tasks = json_object_get(o, "tasks");
	struct xp_reports *r = XNEW(struct xp_reports);
	r->o = o;
	if (!json_is_array(tasks) || json_array_size(tasks) > XP_GPU_REPORTS_MAX) {
		snprintf(field, sizeof(field), "tasks");
		what = "expected a list (at most 4096)";
	}
	r->n = what ? 0 : json_array_size(tasks);
	r->v = XNEWV(struct xp_task_report, r->n + 1);
	for (size_t i = 0; !what && i < r->n; i++)
		if (task_fields(json_array_get(tasks, i), i, &r->v[i], field, sizeof(field),
				&what) == 0)
			what = NULL;
		else
			break;
	if (what) {
		fprintf(stderr, "xpool server: node=%s: report refused: %s: %s\n", cmd->name,
			field, what);
		xp_reply_error(cmd, XP_EINVAL, field, "%s: %s", field, what);
		xp_reports_free(r);
		return -1;
	}
	cmd->payload = r;
	cmd->payload_free = xp_reports_free;
	return 0;
}

/* ---- heartbeats ---- */

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
