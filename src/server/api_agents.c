/*
 * api_agents: the controller's side of node agents (docs/api.md "Agents").
 *
 * An agent registers its node (a one-node descriptor), then heartbeats
 * every few seconds with device health and utilisation, watches its
 * assignments with a long poll, reports replica exits and uploads task
 * output. Heartbeats are not journaled - only what they change is (a
 * device turning unhealthy, a lost node coming back).
 *
 * Liveness (xp_live_check, on the owner's tick): an agent node silent for
 * suspect_beats heartbeats is shown suspect; silent for lost_ms it is lost:
 * node.state down is journaled, and each job with a replica there is
 * requeued once (job.requeue) or failed, per its spec's on_node_lost (an
 * elastic job whose other replicas still make its min shrinks instead,
 * job.resize). When
 * the node speaks again it is journaled ready; its agent then kills what
 * its assignments no longer list, so a requeued task never runs twice.
 *
 * Reports are checked like user input: a malformed or inconsistent one
 * (wrong device count, a job not running there, a stale attempt) is refused
 * whole with the reason, logged, and changes nothing.
 */
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../descriptor/descriptor.h"
#include "../core/model/mig.h"
#include "../lib/xalloc.h"

#define LOG_MAX_BYTES ((off_t)64 << 20) /* per replica log kept by the controller */
/* an elastic job's rendezvous port: this + its id modulo 10000 (docs/design/agent.md) */
#define XP_RDZV_PORT_BASE 20000

static void live_ensure(struct xp_ctl *ctl, size_t n)
{
	while (ctl->live.n <= n) {
		struct xp_live l = { 0 };
		xp_vec_push(&ctl->live, l);
	}
	pthread_mutex_lock(&ctl->watch_mu);
	while (ctl->assign_ver.n <= n)
		xp_vec_push(&ctl->assign_ver, 1);
	pthread_mutex_unlock(&ctl->watch_mu);
}

static void refuse_report(struct xp_ctl *ctl, struct xp_cmd *cmd, int code, const char *field,
			  const char *what)
{
	fprintf(stderr, "xpool server: node=%s: report refused: %s%s%s\n", cmd->name,
		field ? field : "", field ? ": " : "", what);
	xp_reply_error(cmd, code, field, "%s%s%s", field ? field : "", field ? ": " : "", what);
}

#define REFUSE(...)                                                                                \
	do {                                                                                       \
		refuse_report(__VA_ARGS__);                                                        \
		return;                                                                            \
	} while (0)

/* ---- watch: per-node assignment versions ---- */

void xp_watch_bump(struct xp_ctl *ctl, uint32_t node)
{
	live_ensure(ctl, node);
	pthread_mutex_lock(&ctl->watch_mu);
	ctl->assign_ver.v[node]++;
	pthread_mutex_unlock(&ctl->watch_mu);
	xp_park_wake(ctl, XP_PARK_NODE(node)); /* after the bump: a waiter looks again */
}

/* ---- registration ---- */

static int same_devices(const struct xp_state *st, long n, const struct xp_cluster *c,
			const struct xp_node *node)
{
	const struct xp_node *have = &st->c->nodes[n];
	if (have->ndevs != node->ndevs)
		return 0;
	for (uint16_t d = 0; d < node->ndevs; d++) {
		const struct xp_device *a = &have->devs[d], *b = &node->devs[d];
		if (a->cls != b->cls || a->mem_mib != b->mem_mib ||
		    strcmp(xp_strtab_str(st->c->syms, a->model), xp_strtab_str(c->syms, b->model)))
			return 0;
	}
	return 1;
}

void xp_api_agents_register(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	struct xp_cluster *c = cmd->payload;
	struct xp_err err = { 0 };

	if (c->nnodes != 1)
		FAIL(cmd, XP_EINVAL, "nodes", "an agent registers exactly one node, not %zu",
		     c->nnodes);
	const struct xp_node *node = &c->nodes[0];
	if (cmd->scope == XP_SCOPE_NODE && strcmp(node->name, cmd->cred_node))
		FAIL(cmd, XP_EPERM, "name", "this credential is node %s's, not %s's", cmd->cred_node,
		     node->name);
	long n = xp_state_node(st, node->name);
	if (n < 0) {
		int rc = xp_ctl_add_node(ctl, c, node, XP_SRC_AGENT, &err);
		if (rc < 0)
			FAIL_ERR(cmd, &err, NULL);
		cmd->journaled = 1;
		n = xp_state_node(st, node->name);
	} else {
		if (st->nodes.v[n].source != XP_SRC_AGENT)
			FAIL(cmd, XP_EEXIST, "name", "node %s is registered as %s, not by an agent",
			     node->name, xp_node_source_name(st->nodes.v[n].source));
		if (!same_devices(st, n, c, node))
			FAIL(cmd, XP_EEXIST, "devices",
			     "node %s is registered with other devices; remove it (xpool node "
			     "delete) before it registers again",
			     node->name);
		if (st->nodes.v[n].state == XP_NODE_DOWN) {
			if (xp_ctl_journal(ctl, "node.state",
					   xp_rec_node_state(node->name, XP_NODE_READY), &err) < 0)
				FAIL_ERR(cmd, &err, NULL);
			cmd->journaled = 1;
		}
	}
	live_ensure(ctl, (size_t)n);
	ctl->live.v[n].last_seen = xp_ctl_now();
	ctl->live.v[n].suspect = 0;
	xp_reply_json(
		cmd, cmd->journaled ? 201 : 200,
		xp_json_take(json_pack("{s:s,s:i,s:I}", "node", node->name, "heartbeat_ms",
				ctl->o.heartbeat_ms, "version", (json_int_t)ctl->assign_ver.v[n])));
}

static long agent_node(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	long n = xp_state_node(ctl->st, cmd->name);
	if (n < 0) {
		xp_reply_error(cmd, XP_ENOENT, NULL, "no node %s (register it first)", cmd->name);
		return -1;
	}
	if (ctl->st->nodes.v[n].source != XP_SRC_AGENT) {
		xp_reply_error(cmd, XP_ESTATE, NULL, "node %s is not an agent's", cmd->name);
		return -1;
	}
	live_ensure(ctl, (size_t)n);
	return n;
}

/* ---- heartbeats ---- */

/* Apply checked reports of node n: the running attempt's replicas on n only. */
static void gpu_reports_apply(struct xp_ctl *ctl, long n, const struct xp_gpu_report *r, int nr,
			      int64_t now)
{
	uint8_t full[XP_MAX_NODE_DEVS] = { 0 }; /* the device refused an allocation since */
	for (int i = 0; i < nr; i++) {
		struct xp_job *j = xp_state_job(ctl->st, (uint64_t)r[i].job);
		if (!j || j->state != XP_JOB_RUNNING || !j->allocs ||
		    r[i].attempt != (json_int_t)j->attempts || r[i].replica >= j->spec.replicas ||
		    j->allocs[r[i].replica].node != (uint32_t)n)
			continue; /* stale, or not this node's to report */
		struct xp_gpu_use *u = xp_intmap_get(&ctl->gpu_use, j->id);
		if (u && (u->attempt != j->attempts || u->nrep != j->spec.replicas)) { /* or resized */
			free(xp_intmap_del(&ctl->gpu_use, j->id));
			u = NULL;
		}
		if (!u) {
			u = xcalloc(1, sizeof(*u) + j->spec.replicas * sizeof(u->rep[0]));
			u->attempt = j->attempts;
			u->nrep = j->spec.replicas;
			xp_intmap_put(&ctl->gpu_use, j->id, u);
		}
		struct xp_gpu_rep *p = &u->rep[r[i].replica];
		uint32_t ooms = (uint32_t)r[i].ooms, dev = (uint32_t)r[i].dev_ooms;
		ctl->m.gpu_ooms[0] += ooms > p->ooms ? ooms - p->ooms : 0;
		ctl->m.gpu_ooms[1] += dev > p->dev_ooms ? dev - p->dev_ooms : 0;
		for (uint16_t k = 0; dev > p->dev_ooms && k < j->allocs[r[i].replica].ndev;
		     k++)
			full[j->allocs[r[i].replica].devs[k]] = 1;
		p->milli = -1;
		if (p->at && r[i].clock > p->clock_ns && r[i].spent >= p->spent_ns)
			p->milli = (int32_t)((r[i].spent - p->spent_ns) * 1000 /
					     (r[i].clock - p->clock_ns));
		else if (p->at && r[i].clock == p->clock_ns)
			p->milli = 0; /* no refill since: it launched nothing that needed one */
		p->at = now;
		p->mem_mib = (uint64_t)r[i].mem;
		p->peak_mib = (uint64_t)r[i].peak;
		p->ooms = ooms;
		p->dev_ooms = dev;
		p->spent_ns = r[i].spent;
		p->clock_ns = r[i].clock;
	}
	/* gpu_out_of_memory: fires on a beat with new refusals, resolves on one
	 * without; the engine hears of a device only when that changes */
	uint64_t now_full = 0, *was = &ctl->live.v[n].gpu_full;
	for (uint16_t d = 0; d < ctl->st->c->nodes[n].ndevs; d++)
		now_full |= (uint64_t)full[d] << d;
	for (uint64_t ch = now_full ^ *was; ch; ch &= ch - 1) {
		int d = __builtin_ctzll(ch);
		xp_alert_feed_gpu_oom(ctl, (uint32_t)n, (uint16_t)d, (int)(now_full >> d & 1));
	}
	*was = now_full;
}

/* A heartbeat the edge parsed (beat.c): checked against the node - its
 * device count, its MIG instances - then applied. */
void xp_api_node_heartbeat(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	struct xp_beat *b = cmd->payload;
	struct xp_err err = { 0 };
	char field[64];
	long n = agent_node(ctl, cmd);
	if (n < 0)
		return;
	const struct xp_node *node = &st->c->nodes[n];
	if (b->ndev != node->ndevs) {
		char what[96];
		snprintf(what, sizeof(what), "expected a list of the node's %u devices",
			 node->ndevs);
		REFUSE(ctl, cmd, XP_EINVAL, "devices", what);
	}
	struct xp_live_mig *mig;
	int nmig = xp_mig_beat_check(json_object_get(b->o, "mig"), node, &mig, field,
				     sizeof(field));
	if (nmig < 0)
		REFUSE(ctl, cmd, XP_EINVAL, field,
		       "expected at most 8 per device of {device, gi, id (a MIG profile id), "
		       "start, size, uuid, owned, warm}");
	/* all checked: now it may change things */
	struct xp_live *l = &ctl->live.v[n];
	int64_t beat_now = xp_ctl_now();
	xp_mig_beat_apply(ctl, n, mig, nmig);
	gpu_reports_apply(ctl, n, b->rep, b->nrep, beat_now);
	xp_svc_reports_apply(ctl, n, b->svc, b->nsvc, beat_now);
	if (b->addr)
		snprintf(l->addr, sizeof(l->addr), "%s", b->addr);
	if (l->last_seen && node->ndevs)
		xp_energy_beat(ctl, (uint32_t)n, b->ds, beat_now - l->last_seen);
	l->last_seen = beat_now;
	l->suspect = 0;
	if (l->ndev != node->ndevs) {
		free(l->dev);
		l->dev = XNEWV(struct xp_devstat, node->ndevs ? node->ndevs : 1);
		l->ndev = node->ndevs;
	}
	if (node->ndevs) /* a node without devices has no stats (and l->dev may be NULL) */
		memcpy(l->dev, b->ds, sizeof(b->ds[0]) * node->ndevs);
	int changed = 0;
	for (uint16_t d = 0; d < node->ndevs; d++)
		changed |= b->ok[d] != (node->devs[d].health != XP_HEALTH_UNHEALTHY);
	int rc = 0;
	if (st->nodes.v[n].state == XP_NODE_DOWN) /* it is back */
		rc = xp_ctl_journal(ctl, "node.state", xp_rec_node_state(node->name, XP_NODE_READY),
				    &err);
	if (rc == 0 && changed)
		rc = xp_ctl_journal(ctl, "node.health",
				    xp_rec_node_health(node->name, b->ok, (char **)b->why,
						       node->ndevs),
				    &err);
	if (rc < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = st->nodes.v[n].state == XP_NODE_READY && changed;
	xp_reply_json(cmd, 200,
		      xp_json_take(json_pack("{s:I}", "version", (json_int_t)ctl->assign_ver.v[n])));
}

void xp_energy_beat(struct xp_ctl *ctl, uint32_t node, const struct xp_devstat *ds,
		    int64_t elapsed_ms)
{
	const struct xp_nodeinfo *ni = &ctl->st->nodes.v[node];
	int hb = ctl->o.heartbeat_ms ? ctl->o.heartbeat_ms : 5000;
	if (elapsed_ms <= 0)
		return;
	if (elapsed_ms > 3 * hb) /* a gap: count no more than three beats */
		elapsed_ms = 3 * hb;
	for (size_t k = 0; k < ni->run.n; k++) {
		const struct xp_job *j = ni->run.v[k].job;
		const struct xp_alloc *a = &j->allocs[ni->run.v[k].replica];
		double joules = 0;
		for (uint16_t i = 0; i < a->ndev; i++)
			if (ds[a->devs[i]].power_w >= 0)
				joules += ds[a->devs[i]].power_w * (elapsed_ms / 1000.0) *
					  ((a->dev_milli ? a->dev_milli : 1000) / 1000.0);
		if (joules <= 0)
			continue;
		struct xp_energy *e = xp_intmap_get(&ctl->energy, j->id);
		if (!e) {
			e = xcalloc(1, sizeof(*e));
			xp_intmap_put(&ctl->energy, j->id, e);
		}
		if (e->attempt != j->attempts) { /* a new run */
			e->attempt = j->attempts;
			e->joules = 0;
			e->ms = 0;
		}
		e->joules += joules;
		e->ms += elapsed_ms;
	}
}

/* ---- assignments ---- */

/* A replica's MIG reservation: {profile, id (NVML's), start, size} */
static json_t *assign_mig(struct xp_state *st, const struct xp_alloc *a)
{
	const struct xp_mig_profile *p = xp_state_mig_profile(st, a); /* mig: any chose it */
	return json_pack("{s:s,s:i,s:i,s:i}", "profile", p ? p->name : "", "id",
			 (int)xp_mig_kind_id(a->mig - 1), "start", (int)a->mig_start, "size",
			 p && p->nplace ? (int)p->place[0].size : 0);
}

/* A service replica's {name, version, probe: http|tcp, path, period_ms,
 * timeout_ms}: the agent gives it a port and runs the check */
static json_t *assign_service(const struct xp_svcref *r)
{
	json_t *o = json_pack("{s:s,s:i,s:s,s:I,s:I}", "name", r->name, "version",
			      (int)r->version, "probe",
			      r->chk->ready.kind == XP_PROBE_HTTP  ? "http"
			      : r->chk->ready.kind == XP_PROBE_CMD ? "command"
							      : "tcp",
			      "period_ms",
			      (json_int_t)r->chk->ready.period_ms, "timeout_ms",
			      (json_int_t)r->chk->ready.timeout_ms);
	if (r->chk->ready.kind != XP_PROBE_TCP) /* the path, or the command */
		json_object_set_new(o, "path", json_string(r->chk->ready.path));
	if (r->chk->load.kind) /* its load for the autoscaler: read with each check */
		json_object_set_new(o, "load",
				    json_pack("{s:s,s:s,s:s}", "kind",
					      r->chk->load.kind == XP_SCRAPE_RATE ? "rate" : "gauge",
					      "path", r->chk->load.path, "series", r->chk->load.series));
	return o;
}

/* A replica's place in its job, as torchrun-style rendezvous reads it
 * (docs/design/agent.md): epoch (its restarts by resizes), its local rank
 * among the job's replicas on its node and their count, and rank 0's
 * address and the job's rendezvous port. */
static void assign_world(struct xp_ctl *ctl, const struct xp_job *j, uint32_t r, json_t *e)
{
	uint32_t node = j->allocs[r].node, local = 0, nlocal = 0;
	for (uint32_t k = 0; k < j->spec.replicas; k++)
		if (j->allocs[k].node == node) {
			local += k < r;
			nlocal++;
		}
	uint32_t n0 = j->allocs[0].node; /* its address as its agent says, else its name */
	const char *master = n0 < ctl->live.n && ctl->live.v[n0].addr[0]
				     ? ctl->live.v[n0].addr
				     : ctl->st->c->nodes[n0].name;
	json_object_set_new(e, "epoch", json_integer(j->epoch));
	json_object_set_new(e, "local_rank", json_integer(local));
	json_object_set_new(e, "local_world_size", json_integer(nlocal));
	json_object_set_new(e, "master_addr", json_string(master));
	json_object_set_new(e, "master_port", json_integer(XP_RDZV_PORT_BASE + (int)(j->id % 10000)));
}

void xp_api_node_assignments(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	long n = agent_node(ctl, cmd);
	if (n < 0)
		return;
	json_t *arr = json_array();
	const struct xp_nodeinfo *ni = &st->nodes.v[n];
	for (size_t i = 0; i < ni->run.n; i++) { /* the replicas running here: O(them) */
		const struct xp_job *j = ni->run.v[i].job;
		uint32_t r = ni->run.v[i].replica;
		const struct xp_alloc *a = &j->allocs[r];
		if (j->exited[r])
			continue;
		json_t *devs = json_array(), *cmdv = json_array(), *args = json_array(),
		       *env = json_object();
		for (uint16_t k = 0; k < a->ndev; k++)
			json_array_append_new(devs, json_integer(a->devs[k]));
		for (uint16_t k = 0; k < j->spec.ncommand; k++)
			json_array_append_new(cmdv, json_string(j->spec.command[k]));
		for (uint16_t k = 0; k < j->spec.nargs; k++)
			json_array_append_new(args, json_string(j->spec.args[k]));
		for (uint16_t k = 0; k < j->spec.nenv; k++)
			json_object_set_new(env, j->spec.env[k].key,
					    json_string(j->spec.env[k].value));
		json_t *e = json_pack("{s:I,s:i,s:i,s:i,s:s,s:o,s:b,s:o,s:o,s:I,s:I,s:o,s:i,s:I}",
				      "job", (json_int_t)j->id, "replica", (int)r, "replicas",
				      (int)j->spec.replicas, "attempt", (int)j->attempts, "tenant",
				      st->tenants.v[j->tenant].name, "command", cmdv, "shell",
				      j->spec.shell, "args", args, "env", env, "cpu_milli",
				      (json_int_t)a->cpu_milli, "memory_mib",
				      (json_int_t)a->mem_mib, "devices", devs, "dev_milli",
				      (int)a->dev_milli, "dev_mem_mib", (json_int_t)a->dev_mem_mib);
		if (j->spec.name)
			json_object_set_new(e, "name", json_string(j->spec.name));
		if (j->spec.workdir)
			json_object_set_new(e, "workdir", json_string(j->spec.workdir));
		if (j->spec.vgpu_off)
			json_object_set_new(e, "vgpu", json_string("off"));
		if (j->spec.priority) /* served first on a contended GPU (the vGPU board) */
			json_object_set_new(e, "priority", json_integer(j->spec.priority));
		if (j->spec.svc.name) /* a service's replica: its port and check */
			json_object_set_new(e, "service", assign_service(&j->spec.svc));
		if (xp_job_elastic(j)) /* the agent stops a replica with it first */
			json_object_set_new(e, "checkpoint",
					    json_pack("{s:i,s:I}", "signal", xp_ckpt_signal(&j->spec),
						      "grace_ms",
						      (json_int_t)xp_ckpt_grace_ms(&j->spec)));
		assign_world(ctl, j, r, e);
		if (a->mig) /* the reservation: the agent creates or adopts the instance */
			json_object_set_new(e, "mig", assign_mig(st, a));
		if (a->ndev) /* how its devices are shared: timeslice runs without the interposer */
			json_object_set_new(
				e, "dev_mode",
				json_string(xp_mode_name(st->c->nodes[n].devs[a->devs[0]].mode)));
		json_array_append_new(arr, e);
	}
	cmd->id = ctl->assign_ver.v[n]; /* the version this list reflects */
	cmd->node = n;			/* for the worker's wait */
	json_t *reply = json_pack("{s:s,s:I,s:o}", "node", cmd->name, "version",
				  (json_int_t)cmd->id, "assignments", arr);
	xp_mig_mode_assign(ctl, (size_t)n, reply); /* a MIG mode change to make */
	xp_reply_json(cmd, 200, xp_json_take(reply));
}

/* ---- task reports ---- */

/* Why a well-formed report cannot be taken (NULL: it can). Taken also:
 * the agent's report of the attempt a time limit ended, which gives the
 * job its exit code and signal. */
static const char *task_stale(const struct xp_state *st, long n, const struct xp_reports *rs,
			      size_t i)
{
	const struct xp_task_report *t = &rs->v[i];
	const struct xp_job *j = xp_state_job(st, (uint64_t)t->job);
	json_int_t replica = t->replica;
	if (j && j->state == XP_JOB_FAILED && j->end == XP_END_TIME_LIMIT && !j->has_exit &&
	    t->attempt == (json_int_t)j->attempts && j->allocs && replica >= 0 &&
	    replica < (json_int_t)j->spec.replicas && j->allocs[replica].node == (uint32_t)n)
		return NULL;
	if (!j || j->state != XP_JOB_RUNNING || t->attempt != (json_int_t)j->attempts)
		return "that job attempt is not running";
	if (t->epoch != (json_int_t)j->epoch)
		return "that epoch of the job is over (it was resized)";
	if (replica < 0 || replica >= (json_int_t)j->spec.replicas ||
	    j->allocs[replica].node != (uint32_t)n)
		return "that replica does not run on this node";
	if (j->exited[replica])
		return "that replica already exited";
	for (size_t k = 0; k < i; k++)
		if (rs->v[k].job == t->job && rs->v[k].replica == replica)
			return "reported twice";
	return NULL;
}

/* Replica exits the edge parsed (beat.c): each checked against the state
 * before any is journaled. */
void xp_api_node_tasks(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	const struct xp_reports *rs = cmd->payload;
	struct xp_err err = { 0 };
	char field[64], what[160];
	long n = agent_node(ctl, cmd);
	if (n < 0)
		return;
	for (size_t i = 0; i < rs->n; i++) {
		const char *stale = task_stale(st, n, rs, i);
		if (stale) {
			const struct xp_task_report *t = &rs->v[i];
			snprintf(field, sizeof(field), "tasks[%zu]", i);
			snprintf(what, sizeof(what), "job %lld attempt %lld replica %lld: %s",
				 (long long)t->job, (long long)t->attempt, (long long)t->replica,
				 stale);
			REFUSE(ctl, cmd, XP_ESTATE, field, what);
		}
	}
	for (size_t i = 0; i < rs->n; i++) {
		const struct xp_task_report *t = &rs->v[i];
		const struct xp_job *j = xp_state_job(st, (uint64_t)t->job);
		if (j->state != XP_JOB_RUNNING && (j->end != XP_END_TIME_LIMIT || j->has_exit))
			continue; /* an earlier report of this batch ended the job */
		if (xp_ctl_journal(ctl, "job.task",
				   xp_rec_job_task_x((uint64_t)t->job, (uint32_t)t->attempt,
						     (uint32_t)t->replica, &t->x),
				   &err) < 0) {
			cmd->journaled = i > 0;
			FAIL_ERR(cmd, &err, NULL);
		}
		cmd->journaled = 1;
	}
	xp_reply_json(cmd, 200, xp_json_take(json_pack("{s:i}", "accepted", (int)rs->n)));
}

/* ---- logs ---- */

void xp_log_path(const struct xp_ctl *ctl, uint64_t job, uint32_t replica, int err_stream,
		 char *buf, size_t len)
{
	snprintf(buf, len, "%s/logs/%llu-%u.%s", ctl->o.data, (unsigned long long)job, replica,
		 err_stream ? "err" : "out");
}

void xp_log_unlink(const struct xp_ctl *ctl, uint64_t job, uint32_t replica)
{
	char path[4200], at[4300];
	for (int e = 0; e < 2; e++) {
		xp_log_path(ctl, job, replica, e, path, sizeof(path));
		snprintf(at, sizeof(at), "%s.at", path);
		unlink(path);
		unlink(at);
	}
}

/* Where an attempt's output begins in its replica's file. The sidecar
 * "<file>.at" holds "ATTEMPT BASE": the attempt last heard from and the
 * size of the file when its output began. A newer attempt starts at the
 * end of the file; an older one is over (1: refuse it). */
static int log_base(const char *path, uint64_t attempt, off_t size, off_t *base)
{
	char at[4300], tmp[4400], buf[64];
	unsigned long long have_att = 0;
	long long have_base = 0;
	snprintf(at, sizeof(at), "%s.at", path);
	FILE *f = fopen(at, "r");
	int known = f && fgets(buf, sizeof(buf), f) &&
		    sscanf(buf, "%llu %lld", &have_att, &have_base) == 2 && have_base >= 0 &&
		    have_base <= size;
	if (f)
		fclose(f);
	if (known && attempt < have_att)
		return 1;
	if (known && attempt == have_att) {
		*base = (off_t)have_base;
		return 0;
	}
	*base = size; /* a new attempt (or the first upload): it starts here */
	snprintf(tmp, sizeof(tmp), "%s.tmp", at);
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	int ok = fprintf(f, "%llu %lld\n", (unsigned long long)attempt, (long long)size) > 0;
	ok &= fclose(f) == 0;
	return ok && rename(tmp, at) == 0 ? 0 : -1;
}

/* POST /v1/nodes/NAME/logs?job=&replica=&stream=&attempt=&offset=
 * appends what an attempt wrote from offset on. A repeated upload (an agent
 * restarted and adopted the task, a request sent again) sends bytes the
 * controller has: those are skipped, so output is never kept twice. A gap
 * appends nothing. The reply's "have" is how much of the attempt's stream
 * the controller holds: the agent goes on from there. */
void xp_api_node_logs(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	const char *qj = xp_cmd_query(cmd, "job"), *qr = xp_cmd_query(cmd, "replica"),
		   *qs = xp_cmd_query(cmd, "stream"), *qa = xp_cmd_query(cmd, "attempt"),
		   *qo = xp_cmd_query(cmd, "offset"), *qe = xp_cmd_query(cmd, "epoch");
	char path[4200];
	long n = agent_node(ctl, cmd);
	if (n < 0)
		return;
	long long id = qj ? atoll(qj) : 0, r = qr ? atoll(qr) : -1;
	long long att = qa ? atoll(qa) : 0, off = qo ? atoll(qo) : -1;
	const struct xp_job *j = id > 0 ? xp_state_job(st, (uint64_t)id) : NULL;
	if (!qs || (strcmp(qs, "stdout") && strcmp(qs, "stderr")))
		REFUSE(ctl, cmd, XP_EINVAL, "stream", "expected stdout or stderr");
	/* an elastic job's earlier epoch: its ranks and nodes were others */
	int earlier = j && xp_job_elastic(j) && qe && atoll(qe) >= 0 &&
		      atoll(qe) < (long long)j->epoch && r >= 0 && r < (long long)j->spec.rmax;
	if (!j || !j->allocs ||
	    (!earlier && (r < 0 || r >= (long long)j->spec.replicas ||
			  j->allocs[r].node != (uint32_t)n)))
		REFUSE(ctl, cmd, XP_ESTATE, "job",
		       "output of a replica that did not run on this node");
	if ((qa || qo) && (att < 1 || off < 0))
		REFUSE(ctl, cmd, XP_EINVAL, "offset",
		       "expected attempt 1.. and offset 0.. together");
	if (qa && att > (long long)j->attempts)
		REFUSE(ctl, cmd, XP_ESTATE, "attempt", "not an attempt of this job");
	snprintf(path, sizeof(path), "%s/logs", ctl->o.data);
	mkdir(path, 0700);
	xp_log_path(ctl, (uint64_t)id, (uint32_t)r, !strcmp(qs, "stderr"), path, sizeof(path));
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (fd < 0)
		FAIL(cmd, XP_EIO, NULL, "%s: %s", path, strerror(errno));
	struct stat sb;
	off_t size = fstat(fd, &sb) == 0 ? sb.st_size : 0, base = 0;
	const char *body = cmd->body;
	size_t len = cmd->len;
	if (qa) {
		/* an elastic job's epochs follow one another in a replica's file */
		uint64_t seg = (uint64_t)att << 32 | (uint32_t)(qe ? atoll(qe) : 0);
		int rc = log_base(path, seg, size, &base);
		if (rc) {
			close(fd);
			if (rc > 0)
				REFUSE(ctl, cmd, XP_ESTATE, "attempt",
				       "a later attempt of this replica has started");
			FAIL(cmd, XP_EIO, NULL, "%s.at: %s", path, strerror(errno));
		}
		off_t have = size - base;
		if ((off_t)off > have) { /* a gap: nothing is appended */
			len = 0;
		} else { /* skip what is here already */
			size_t dup = (size_t)(have - (off_t)off);
			dup = dup < len ? dup : len;
			body += dup;
			len -= dup;
		}
	}
	if (size + (off_t)len > LOG_MAX_BYTES) {
		close(fd);
		FAIL(cmd, XP_ETOOBIG, NULL,
		     "the output of job %lld passed %lld bytes; the rest is dropped", id,
		     (long long)LOG_MAX_BYTES);
	}
	if (len && write(fd, body, len) != (ssize_t)len) {
		int e = errno;
		close(fd);
		FAIL(cmd, XP_EIO, NULL, "%s: %s", path, strerror(e));
	}
	close(fd);
	xp_reply_json(cmd, 200,
		      xp_json_take(json_pack("{s:I,s:I}", "bytes", (json_int_t)len, "have",
					     (json_int_t)(size + (off_t)len - base))));
}

/* ---- liveness ---- */

/* An elastic job that loses node n keeps its other replicas if they are
 * at least its min (on_node_lost: requeue, the default): it shrinks (0);
 * else -1, and it is requeued or failed as any job. */
static int lost_shrink(struct xp_ctl *ctl, const struct xp_job *j, uint32_t n, const char *name)
{
	struct xp_err err = { 0 };
	char why[200];
	if (!xp_job_elastic(j) || j->spec.fail_on_lost)
		return -1;
	uint32_t *keep = XNEWV(uint32_t, j->spec.replicas), nk = 0;
	for (uint32_t r = 0; r < j->spec.replicas; r++)
		if (j->allocs[r].node != n)
			keep[nk++] = r;
	int rc = -1;
	if (nk && nk >= j->spec.rmin) {
		snprintf(why, sizeof(why), "shrink: node %s was lost; %u -> %u replicas", name,
			 j->spec.replicas, nk);
		rc = xp_ctl_journal(ctl, "job.resize",
				    xp_rec_job_resize(ctl->st, j->id, j->epoch + 1, keep, nk, NULL, 0,
						      why),
				    &err);
		if (rc < 0)
			fprintf(stderr, "xpool server: job=%llu node=%s: %s\n",
				(unsigned long long)j->id, name, err.text);
	}
	free(keep);
	return rc < 0 ? -1 : 0;
}

void xp_live_check(struct xp_ctl *ctl, int64_t now)
{
	struct xp_state *st = ctl->st;
	int64_t suspect_ms = (int64_t)ctl->o.heartbeat_ms * ctl->o.suspect_beats;
	for (size_t n = 0; n < st->nodes.n && n < ctl->live.n; n++) {
		struct xp_live *l = &ctl->live.v[n];
		const struct xp_nodeinfo *ni = &st->nodes.v[n];
		if (ni->source != XP_SRC_AGENT || ni->removed || ni->state == XP_NODE_DOWN ||
		    !l->last_seen)
			continue;
		int64_t silent = now - l->last_seen;
		l->suspect = silent > suspect_ms;
		if (silent <= ctl->o.lost_ms)
			continue;
		struct xp_err err = { 0 };
		const char *name = st->c->nodes[n].name;
		fprintf(stderr, "xpool server: node=%s: lost (no heartbeat for %lld ms)\n", name,
			(long long)silent);
		if (xp_ctl_journal(ctl, "node.state", xp_rec_node_state(name, XP_NODE_DOWN), &err) <
		    0) {
			fprintf(stderr, "xpool server: node=%s: %s\n", name, err.text);
			continue;
		}
		char reason[160];
		snprintf(reason, sizeof(reason), "node %s was lost", name);
		/* the jobs with a live replica here; requeueing edits the list */
		XP_VEC(struct xp_job *) hit = { 0 };
		for (size_t k = 0; k < st->nodes.v[n].run.n; k++) {
			struct xp_job *j = st->nodes.v[n].run.v[k].job;
			int dup = 0;
			for (size_t m = 0; m < hit.n; m++)
				dup |= hit.v[m] == j;
			if (!dup && !j->exited[st->nodes.v[n].run.v[k].replica])
				xp_vec_push(&hit, j);
		}
		for (size_t i = 0; i < hit.n; i++) {
			struct xp_job *j = hit.v[i];
			if (lost_shrink(ctl, j, (uint32_t)n, name) == 0)
				continue; /* elastic: the others go on at a smaller size */
			char *body = j->spec.fail_on_lost
					     ? xp_rec_job_finish(j->id, XP_JOB_FAILED, -1, reason)
					     : xp_rec_job_requeue(j->id, reason);
			if (xp_ctl_journal(ctl, j->spec.fail_on_lost ? "job.finish" : "job.requeue",
					   body, &err) < 0)
				fprintf(stderr, "xpool server: job=%llu node=%s: %s\n",
					(unsigned long long)j->id, name, err.text);
		}
		xp_vec_free(&hit);
	}
}
