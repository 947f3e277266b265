/*
 * api_admin: nodes, devices, queues, tenants and tokens (docs/api.md),
 * run on the owner thread. Writes here are admin-only (the route table
 * says so); reads of nodes, devices and queues are open to every tenant.
 */
#include "ctl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../core/state/migmode.h"
#include "../descriptor/descriptor.h"
#include "../lib/sha256.h"
#include "../lib/xalloc.h"

int xp_token_new(const char *prefix, char token[80], char sha[65])
{
	unsigned char raw[32];
	size_t got = 0;
	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
		if (n <= 0)
			return XP_EIO;
		got += (size_t)n;
	}
	snprintf(token, 5, "%.3s_", prefix);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(token + 4 + 2 * i, 3, "%02x", raw[i]);
	xp_sha256_hex(token, strlen(token), sha);
	return 0;
}

/* ---- nodes ---- */

static json_t *attrs_obj(const struct xp_attr *a, uint16_t n)
{
	json_t *o = json_object();
	for (uint16_t i = 0; i < n; i++)
		json_object_set_new(o, a[i].key, json_string(a[i].value));
	return o;
}

/* A device's fabric: the kind of its first link to a peer on its node
 * (NVLink, HCCS, xGMI: what makes an island), else the first kind its
 * descriptor's `interconnect` names (PCIe, ...); NULL when neither says. */
static const char *dev_interconnect(const struct xp_device *dv)
{
	for (uint16_t i = 0; i < dv->nlinks; i++)
		if (dv->links[i].peer >= 0 && dv->links[i].kind <= XP_LINK_XGMI)
			return xp_link_name(dv->links[i].kind);
	const char *ic = xp_attrs_get(dv->attrs, dv->nattrs, "interconnect");
	char first[32];
	if (!ic || !*ic)
		return NULL;
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(ic, ","), ic);
	int k = xp_link_parse(first);
	return k >= 0 ? xp_link_name(k) : NULL;
}

/* The node's device islands, in the order of their first device:
 * [{"id": 0, "interconnect": "nvlink", "devices": [0, 1, ...]}] */
static json_t *islands_json(const struct xp_node *node)
{
	json_t *arr = json_array();
	for (uint16_t d = 0; d < node->ndevs; d++) {
		int16_t id = node->devs[d].island;
		uint16_t first = 0;
		if (id < 0)
			continue;
		while (node->devs[first].island != id)
			first++;
		if (first != d) /* listed with its first device */
			continue;
		json_t *devs = json_array();
		for (uint16_t k = d; k < node->ndevs; k++)
			if (node->devs[k].island == id)
				json_array_append_new(devs, json_integer(k));
		json_array_append_new(arr,
				      json_pack("{s:i,s:s?,s:o}", "id", id, "interconnect",
						dev_interconnect(&node->devs[d]), "devices", devs));
	}
	return arr;
}

static json_t *node_json(struct xp_ctl *ctl, size_t n)
{
	struct xp_state *st = ctl->st;
	const struct xp_node *node = &st->c->nodes[n];
	const struct xp_nodeinfo *ni = &st->nodes.v[n];
	uint32_t free_devs = 0;

	for (uint16_t d = 0; d < node->ndevs; d++)
		free_devs +=
			xp_sched_dev_free_milli(st->sched, (uint32_t)n, d) == XP_MILLI &&
			xp_sched_dev_free_mem(st->sched, (uint32_t)n, d) == node->devs[d].mem_mib;
	json_t *o =
		json_pack("{s:s,s:s,s:s}", "name", node->name, "state",
			  xp_node_state_name(ni->state), "source", xp_node_source_name(ni->source));
	if (node->arch)
		json_object_set_new(o, "arch", json_string(xp_strtab_str(st->c->syms, node->arch)));
	if (node->zone)
		json_object_set_new(o, "zone", json_string(xp_strtab_str(st->c->syms, node->zone)));
	if (node->region)
		json_object_set_new(o, "region",
				    json_string(xp_strtab_str(st->c->syms, node->region)));
	json_object_set_new(o, "labels", attrs_obj(node->labels, node->nlabels));
	json_object_set_new(o, "numa_domains", json_integer(node->numa_domains));
	json_object_set_new(o, "islands", islands_json(node));
	json_object_set_new(o, "cpu_milli", json_integer((json_int_t)node->cpu_milli));
	json_object_set_new(o, "cpu_free_milli",
			    json_integer(xp_sched_node_cpu_left(st->sched, (uint32_t)n)));
	json_object_set_new(o, "memory_mib", json_integer((json_int_t)node->mem_mib));
	json_object_set_new(o, "memory_free_mib",
			    json_integer(xp_sched_node_mem_free(st->sched, (uint32_t)n)));
	json_object_set_new(o, "devices", json_integer(node->ndevs));
	json_object_set_new(o, "devices_free", json_integer(free_devs));
	json_object_set_new(o, "jobs", json_integer(ni->jobs));
	xp_mig_mode_node_json(ctl, n, o); /* the MIG mode leave, a change reserved or refused */
	if (ni->source == XP_SRC_AGENT && n < ctl->live.n && ctl->live.v[n].last_seen) {
		json_object_set_new(o, "heartbeat_age_ms",
				    json_integer(xp_ctl_now() - ctl->live.v[n].last_seen));
		json_object_set_new(o, "suspect", json_boolean(ctl->live.v[n].suspect));
	}
	uint32_t bad = 0;
	for (uint16_t d = 0; d < node->ndevs; d++)
		bad += node->devs[d].health == XP_HEALTH_UNHEALTHY;
	json_object_set_new(o, "devices_unhealthy", json_integer(bad));
	return o;
}

static int fresh_sched(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	if (xp_state_sched(ctl->st, &err) < 0) {
		xp_reply_err(cmd, &err, NULL);
		return -1;
	}
	return 0;
}

void xp_api_nodes_list(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	if (fresh_sched(ctl, cmd) < 0)
		return;
	json_t *arr = json_array();
	for (size_t n = 0; n < st->nodes.n; n++)
		if (!st->nodes.v[n].removed)
			json_array_append_new(arr, node_json(ctl, n));
	json_t *o = json_pack("{s:o,s:n}", "nodes", arr, "next");
	xp_reply_json(cmd, 200, xp_json_take(o));
}

static long node_or_404(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	long n = xp_state_node(ctl->st, cmd->name);
	if (n < 0)
		xp_reply_error(cmd, XP_ENOENT, NULL, "no node %s", cmd->name);
	return n;
}

void xp_api_node_get(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	long n;
	if (fresh_sched(ctl, cmd) < 0 || (n = node_or_404(ctl, cmd)) < 0)
		return;
	xp_reply_json(cmd, 200, xp_json_take(node_json(ctl, (size_t)n)));
}

void xp_api_nodes_add(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_cluster *c = cmd->payload;
	struct xp_err err = { 0 };

	for (size_t i = 0; i < c->nnodes; i++) /* all or nothing */
		if (xp_state_node(ctl->st, c->nodes[i].name) >= 0)
			FAIL(cmd, XP_EEXIST, NULL, "node %s is already registered",
			     c->nodes[i].name);
	json_t *arr = json_array();
	for (size_t i = 0; i < c->nnodes; i++) {
		int rc = xp_ctl_add_node(ctl, c, &c->nodes[i], XP_SRC_EMULATED, &err);
		if (rc < 0) {
			json_decref(arr);
			cmd->journaled = i > 0;
			FAIL_ERR(cmd, &err, NULL);
		}
	}
	cmd->journaled = 1;
	if (fresh_sched(ctl, cmd) < 0) {
		json_decref(arr);
		return;
	}
	for (size_t i = 0; i < c->nnodes; i++)
		json_array_append_new(
			arr, node_json(ctl, (size_t)xp_state_node(ctl->st, c->nodes[i].name)));
	xp_reply_json(cmd, 201, xp_json_take(json_pack("{s:o}", "nodes", arr)));
}

void xp_small_free(void *p)
{
	struct xp_small *b = p;
	if (b)
		json_decref(b->o);
	free(b);
}

static struct xp_small *small_new(struct xp_cmd *cmd)
{
	struct xp_small *b = XNEW(struct xp_small);
	cmd->payload = b;
	cmd->payload_free = xp_small_free;
	return b;
}

/* edge (pool thread, no state): PATCH /v1/nodes/NAME {state, mig_mode_change} */
int xp_edge_node_patch(struct xp_cmd *cmd)
{
	static const char *const allowed[] = { "state", "mig_mode_change", NULL };
	json_t *o = xp_cmd_body_object(cmd, allowed);
	if (!o)
		return -1;
	json_t *sv = json_object_get(o, "state"), *mv = json_object_get(o, "mig_mode_change");
	int to = json_is_string(sv) ? xp_node_state_parse(json_string_value(sv)) : -1;
	const char *m = json_is_string(mv) ? json_string_value(mv) : "";
	int leave = !strcmp(m, "allow") ? 1 : !strcmp(m, "deny") ? 0 : -1;
	json_decref(o);
	if (sv && to != XP_NODE_READY && to != XP_NODE_CORDONED && to != XP_NODE_DRAINING)
		return xp_reply_error(cmd, XP_EINVAL, "state",
				      "state: expected ready, cordoned or draining"),
		       -1;
	if (mv && leave < 0)
		return xp_reply_error(cmd, XP_EINVAL, "mig_mode_change",
				      "mig_mode_change: expected allow or deny"),
		       -1;
	if (!sv && !mv)
		return xp_reply_error(cmd, XP_EINVAL, "state",
				      "expected state and/or mig_mode_change"),
		       -1;
	struct xp_small *b = small_new(cmd);
	b->state = sv ? to : -1;
	b->mig_leave = leave;
	return 0;
}

void xp_api_node_patch(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	long n = node_or_404(ctl, cmd);
	if (n < 0)
		return;
	const struct xp_small *b = cmd->payload;
	if (b->state >= 0 &&
	    xp_ctl_journal(ctl, "node.state", xp_rec_node_state(cmd->name, b->state), &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled |= b->state >= 0;
	if (b->mig_leave >= 0 &&
	    xp_ctl_journal(ctl, "node.mig_mode_change",
			   xp_rec_node_mig_leave(cmd->name, b->mig_leave), &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	if (fresh_sched(ctl, cmd) == 0)
		xp_reply_json(cmd, 200, xp_json_take(node_json(ctl, (size_t)n)));
}

void xp_api_node_delete(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	if (node_or_404(ctl, cmd) < 0)
		return;
	if (xp_ctl_journal(ctl, "node.remove", xp_rec_node_remove(cmd->name), &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_reply_json(cmd, 200,
		      xp_json_take(json_pack("{s:s,s:b}", "name", cmd->name, "removed", 1)));
}

void xp_api_devices(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	const char *qn = xp_cmd_query(cmd, "node"), *qc = xp_cmd_query(cmd, "class"),
		   *qm = xp_cmd_query(cmd, "model");
	int cls = -1;
	if (qc && (cls = xp_class_parse(qc)) < 0)
		FAIL(cmd, XP_EINVAL, "class", "class: unknown device class '%s'", qc);
	if (qn && xp_state_node(st, qn) < 0)
		FAIL(cmd, XP_ENOENT, "node", "no node %s", qn);
	if (fresh_sched(ctl, cmd) < 0)
		return;
	json_t *arr = json_array();
	for (size_t n = 0; n < st->nodes.n; n++) {
		const struct xp_node *node = &st->c->nodes[n];
		if (st->nodes.v[n].removed || (qn && strcmp(qn, node->name)))
			continue;
		for (uint16_t d = 0; d < node->ndevs; d++) {
			const struct xp_device *dv = &node->devs[d];
			const char *model = xp_strtab_str(st->c->syms, dv->model);
			if ((cls >= 0 && dv->cls != cls) || (qm && strcmp(qm, model)))
				continue;
			json_t *jobs = json_array();
			for (size_t i = 0; st->nodes.v[n].jobs && i < st->jobs.n; i++) {
				const struct xp_job *j = st->jobs.v[i];
				if (j->state != XP_JOB_RUNNING)
					continue;
				for (uint32_t r = 0; r < j->spec.replicas; r++)
					for (uint16_t k = 0;
					     j->allocs[r].node == n && k < j->allocs[r].ndev; k++)
						if (j->allocs[r].devs[k] == d)
							json_array_append_new(
								jobs,
								json_integer((json_int_t)j->id));
			}
			json_t *dj = json_pack(
				"{s:s,s:i,s:s,s:s,s:s,s:I,s:s,s:i,s:i,s:i,s:I,s:o}", "node",
				node->name, "index", d, "class", xp_class_name(dv->cls), "vendor",
				xp_strtab_str(st->c->syms, dv->vendor), "model", model,
				"memory_mib", (json_int_t)dv->mem_mib, "health",
				xp_health_name(dv->health), "island", dv->island, "numa", dv->numa,
				"free_milli", xp_sched_dev_free_milli(st->sched, (uint32_t)n, d),
				"free_memory_mib",
				(json_int_t)xp_sched_dev_free_mem(st->sched, (uint32_t)n, d),
				"jobs", jobs);
			json_object_set_new(dj, "mode", json_string(xp_mode_name(dv->mode)));
			json_object_set_new(dj, "isolated", json_boolean(dv->mode != XP_MODE_TIMESLICE));
			if (dv->mode == XP_MODE_TIMESLICE) { /* said plainly, for every reader */
				json_object_set_new(dj, "not_isolated",
						    json_string("memory, compute"));
				json_object_set_new(dj, "replicas",
						    json_integer(dv->replicas ? dv->replicas : 1));
			}
			if (dv->mem_overcommit && dv->mem_overcommit != XP_OVERCOMMIT_NONE)
				json_object_set_new(dj, "memory_admitted_mib",
						    json_integer((json_int_t)xp_dev_admit_mib(dv)));
			const struct xp_nodeinfo *ni = &st->nodes.v[n];
			const char *ic = dev_interconnect(dv);
			if (ic)
				json_object_set_new(dj, "interconnect", json_string(ic));
			if (ni->dev_why && ni->dev_why[d])
				json_object_set_new(dj, "why", json_string(ni->dev_why[d]));
			json_t *mig = dv->mode == XP_MODE_MIG ? xp_mig_dev_json(ctl, n, d) : NULL;
			if (mig) /* its slices, instances and the jobs in them */
				json_object_set_new(dj, "mig", mig);
			if (n < ctl->live.n && d < ctl->live.v[n].ndev) {
				const struct xp_devstat *x = &ctl->live.v[n].dev[d];
				json_object_set_new(dj, "util_pct", json_integer(x->util_pct));
				json_object_set_new(dj, "mem_used_mib",
						    json_integer(x->mem_used_mib));
				json_object_set_new(dj, "power_w", json_integer(x->power_w));
				json_object_set_new(dj, "temp_c", json_integer(x->temp_c));
			}
			json_array_append_new(arr, dj);
		}
	}
	xp_reply_json(cmd, 200, xp_json_take(json_pack("{s:o}", "devices", arr)));
}

/* ---- queues, tenants, tokens ---- */

static json_t *queue_json(const struct xp_state *st, const struct xp_queue *q)
{
	struct xp_queuespec qs;
	xp_queue_spec(st, q, &qs);
	json_t *o = xp_queuespec_json(&qs), *quota = json_object_get(o, "quota");
	int borrowing = 0;
	for (int r = 0; r < XP_RES_N; r++) {
		json_t *e = json_object_get(quota, xp_res_name(r));
		if (!e && !q->usage[r])
			continue;
		if (!e) {
			e = json_object();
			json_object_set_new(quota, xp_res_name(r), e);
		}
		char b[32];
		xp_res_format(r, q->usage[r], b, sizeof(b));
		json_object_set_new(e, "used", json_string(b));
		borrowing |= q->usage[r] > q->guarantee[r] && q->guarantee[r];
	}
	json_object_set_new(o, "leaf", json_boolean(q->children == 0));
	json_object_set_new(o, "pending", json_integer(q->pending));
	json_object_set_new(o, "running", json_integer(q->running));
	json_object_set_new(o, "share",
			    json_real(xp_queue_share(st, (uint32_t)(q - st->queues.v))));
	json_object_set_new(o, "borrowing", json_boolean(borrowing));
	return o;
}

void xp_api_queues_list(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < ctl->st->queues.n; i++)
		if (!ctl->st->queues.v[i].deleted)
			json_array_append_new(arr, queue_json(ctl->st, &ctl->st->queues.v[i]));
	xp_reply_json(cmd, 200, xp_json_take(json_pack("{s:o}", "queues", arr)));
}

void xp_api_queue_get(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	long q = xp_state_queue(ctl->st, cmd->name);
	if (q < 0)
		FAIL(cmd, XP_ENOENT, NULL, "no queue %s", cmd->name);
	xp_reply_json(cmd, 200, xp_json_take(queue_json(ctl->st, &ctl->st->queues.v[q])));
}

/* queue.create (POST) or queue.update (PATCH, the fields given) */
static void queue_define(struct xp_ctl *ctl, struct xp_cmd *cmd, int update)
{
	struct xp_err err = { 0 };
	struct xp_queuespec in, def;
	long q = -1;
	if (update && (q = xp_state_queue(ctl->st, cmd->name)) < 0)
		FAIL(cmd, XP_ENOENT, NULL, "no queue %s", cmd->name);
	in = *(const struct xp_queuespec *)cmd->payload; /* parsed at the edge */
	if (update) {
		if (in.name[0] && strcmp(in.name, cmd->name))
			FAIL(cmd, XP_EINVAL, "name", "name: a queue cannot be renamed");
		xp_queue_spec(ctl->st, &ctl->st->queues.v[q], &def);
		xp_queuespec_merge(&def, &in);
	} else {
		def = in;
	}
	if (xp_ctl_journal(ctl, update ? "queue.update" : "queue.create", xp_rec_queue_define(&def),
			   &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	q = xp_state_queue(ctl->st, def.name);
	xp_reply_json(cmd, update ? 200 : 201,
		      xp_json_take(queue_json(ctl->st, &ctl->st->queues.v[q])));
}

void xp_api_queues_create(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	queue_define(ctl, cmd, 0);
}

void xp_api_queue_patch(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	queue_define(ctl, cmd, 1);
}

static int body_name(struct xp_cmd *cmd, json_t *o, const char *key, const char **out)
{
	json_t *v = json_object_get(o, key);
	if (!json_is_string(v) || !xp_name_ok(json_string_value(v))) {
		xp_reply_error(cmd, XP_EINVAL, key,
			       "%s: expected a name of 1..63 letters, digits, '-', '_' or '.'",
			       key);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

void xp_api_queue_delete(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	if (xp_state_queue(ctl->st, cmd->name) < 0)
		FAIL(cmd, XP_ENOENT, NULL, "no queue %s", cmd->name);
	if (xp_ctl_journal(ctl, "queue.delete", xp_rec_queue_delete(cmd->name), &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_reply_json(cmd, 200,
		      xp_json_take(json_pack("{s:s,s:b}", "name", cmd->name, "deleted", 1)));
}

void xp_api_tenants_list(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < ctl->st->tenants.n; i++)
		json_array_append_new(arr,
				      json_pack("{s:s,s:i}", "name", ctl->st->tenants.v[i].name,
						"jobs", (int)ctl->st->tenants.v[i].live));
	xp_reply_json(cmd, 200, xp_json_take(json_pack("{s:o}", "tenants", arr)));
}

/* edge: POST /v1/tenants {name} */
int xp_edge_tenant(struct xp_cmd *cmd)
{
	static const char *const allowed[] = { "name", NULL };
	const char *name;
	json_t *o = xp_cmd_body_object(cmd, allowed);
	if (!o)
		return -1;
	int rc = body_name(cmd, o, "name", &name);
	if (rc == 0)
		snprintf(small_new(cmd)->name, XP_NAME_MAX + 1, "%s", name);
	json_decref(o);
	return rc;
}

void xp_api_tenants_create(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	const char *name = ((const struct xp_small *)cmd->payload)->name;
	if (xp_ctl_journal(ctl, "tenant.create", xp_rec_tenant_create(name), &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_reply_json(cmd, 201, xp_json_take(json_pack("{s:s,s:i}", "name", name, "jobs", 0)));
}

static const char *const scope_names[] = { "tenant", "admin", "node", "bootstrap" };

static json_t *token_json(struct xp_ctl *ctl, const struct xp_token *t)
{
	json_t *o = json_pack("{s:I,s:s,s:s,s:b,s:s}", "id", (json_int_t)t->id, "tenant",
			      ctl->st->tenants.v[t->tenant].name, "name", t->name, "admin",
			      t->admin, "scope", scope_names[t->scope]);
	if (t->node)
		json_object_set_new(o, "node", json_string(t->node));
	return o;
}

void xp_api_tokens_list(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < ctl->st->tokens.n; i++)
		if (!ctl->st->tokens.v[i].revoked)
			json_array_append_new(arr, token_json(ctl, &ctl->st->tokens.v[i]));
	xp_reply_json(cmd, 200, xp_json_take(json_pack("{s:o}", "tokens", arr)));
}

void xp_token_mint(struct xp_ctl *ctl, struct xp_cmd *cmd, const char *tenant, const char *name,
		   int scope, const char *node)
{
	static const char *const prefix[] = { "xpt", "xpt", "xpn", "xpb" };
	struct xp_err err = { 0 };
	char token[80], sha[65];
	if (xp_token_new(prefix[scope], token, sha) < 0)
		FAIL(cmd, XP_EIO, NULL, "no randomness for a token");
	uint64_t id = ctl->st->next_token_id;
	if (xp_ctl_journal(ctl, "token.create",
			   xp_rec_token_create(id, tenant, name, scope, node, sha), &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	json_t *r = token_json(ctl, &ctl->st->tokens.v[ctl->st->tokens.n - 1]);
	json_object_set_new(r, "token", json_string(token));
	xp_reply_json(cmd, 201, xp_json_take(r));
}

/* a node name that fits a path's {name}: 1..63 of A-Z a-z 0-9 . _ - */
static int node_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n >= 1 && n <= 63 &&
	       strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}

/* "scope" of a new token: tenant (default), admin, node (with "node") or
 * bootstrap; "admin": true is the older spelling of scope admin */
static int token_scope_of(struct xp_cmd *cmd, json_t *o, int *scope, const char **node)
{
	json_t *adm = json_object_get(o, "admin"), *sc = json_object_get(o, "scope");
	json_t *jn = json_object_get(o, "node");
	*scope = XP_SCOPE_TENANT;
	*node = NULL;
	if (adm && !json_is_boolean(adm))
		return xp_reply_error(cmd, XP_EINVAL, "admin", "admin: expected true or false"), -1;
	if (sc) {
		const char *s = json_string_value(sc);
		int i = 0;
		while (i < 4 && !(s && !strcmp(s, scope_names[i])))
			i++;
		if (i == 4)
			return xp_reply_error(cmd, XP_EINVAL, "scope",
					      "scope: expected tenant, admin, node or bootstrap"),
			       -1;
		*scope = i;
	}
	if (json_is_true(adm)) {
		if (sc && *scope != XP_SCOPE_ADMIN)
			return xp_reply_error(cmd, XP_EINVAL, "admin",
					      "admin: true is scope admin, not %s",
					      scope_names[*scope]),
			       -1;
		*scope = XP_SCOPE_ADMIN;
	}
	if ((*scope == XP_SCOPE_NODE) != (jn != NULL))
		return xp_reply_error(cmd, XP_EINVAL, "node",
				      jn ? "node: only a node-scoped token names a node"
					 : "node: a node-scoped token names its node"),
		       -1;
	if (jn && !node_name_ok(json_string_value(jn)))
		return xp_reply_error(cmd, XP_EINVAL, "node",
				      "node: expected a node name (1..63 of A-Z a-z 0-9 . _ -)"),
		       -1;
	*node = json_string_value(jn);
	return 0;
}

/* POST /v1/agents/join {"node": NAME} with a bootstrap token: a credential
 * for that node alone (scope node), in the bootstrap token's tenant. */
/* edge: POST /v1/agents/join {node} */
int xp_edge_join(struct xp_cmd *cmd)
{
	static const char *const allowed[] = { "node", NULL };
	json_t *o = xp_cmd_body_object(cmd, allowed);
	if (!o)
		return -1;
	const char *node = json_string_value(json_object_get(o, "node"));
	int ok = node_name_ok(node);
	if (ok)
		snprintf(small_new(cmd)->node, XP_NAME_MAX + 1, "%s", node);
	json_decref(o);
	if (!ok)
		return xp_reply_error(cmd, XP_EINVAL, "node",
				      "node: expected a node name (1..63 of A-Z a-z 0-9 . _ -)"),
		       -1;
	return 0;
}

void xp_api_agents_join(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	const struct xp_small *b = cmd->payload;
	xp_token_mint(ctl, cmd, ctl->st->tenants.v[cmd->tenant].name, "agent", XP_SCOPE_NODE,
		      b->node);
}

/* edge: POST /v1/tokens {tenant, name, admin, scope, node} */
int xp_edge_token(struct xp_cmd *cmd)
{
	static const char *const allowed[] = { "tenant", "name", "admin", "scope", "node", NULL };
	const char *tenant, *name, *node;
	int scope;
	json_t *o = xp_cmd_body_object(cmd, allowed);
	if (!o)
		return -1;
	int rc = body_name(cmd, o, "tenant", &tenant) == 0 &&
				 body_name(cmd, o, "name", &name) == 0 &&
				 token_scope_of(cmd, o, &scope, &node) == 0
			 ? 0
			 : -1;
	if (rc == 0) {
		struct xp_small *b = small_new(cmd);
		snprintf(b->tenant, sizeof(b->tenant), "%s", tenant);
		snprintf(b->name, sizeof(b->name), "%s", name);
		snprintf(b->node, sizeof(b->node), "%s", node ? node : "");
		b->scope = scope;
	}
	json_decref(o);
	return rc;
}

void xp_api_tokens_create(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	const struct xp_small *b = cmd->payload;
	if (xp_state_tenant(ctl->st, b->tenant) < 0)
		FAIL(cmd, XP_ENOENT, "tenant", "tenant: no tenant %s", b->tenant);
	xp_token_mint(ctl, cmd, b->tenant, b->name, b->scope, b->node[0] ? b->node : NULL);
}

void xp_api_token_delete(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	const struct xp_state *st = ctl->st;
	size_t admins = 0, self = 0;
	for (size_t i = 0; i < st->tokens.n; i++)
		if (!st->tokens.v[i].revoked && st->tokens.v[i].admin) {
			admins++;
			self |= st->tokens.v[i].id == cmd->id;
		}
	/* checked here, not on replay: an old journal that did it still loads */
	if (self && admins == 1)
		FAIL(cmd, XP_ESTATE, NULL,
		     "token %llu is the last admin token: revoking it would leave no way to "
		     "administer the controller (create another admin token first)",
		     (unsigned long long)cmd->id);
	if (xp_ctl_journal(ctl, "token.revoke", xp_rec_token_revoke(cmd->id), &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_reply_json(
		cmd, 200,
		xp_json_take(json_pack("{s:I,s:b}", "id", (json_int_t)cmd->id, "revoked", 1)));
}
