/*
 * agent: `xpool agent` (see agent.h). Three threads share the task list
 * under one mutex:
 *   - the main thread watches the node's assignments (a long poll on
 *     GET /v1/nodes/NAME/assignments) and reconciles: a new assignment
 *     starts a task, a task no longer assigned is killed;
 *   - the heartbeat thread sends device health and utilisation every
 *     heartbeat and uploads new task output;
 *   - the monitor thread reaps shims, notices exits, escalates kills and
 *     reports exits (after their last output).
 * Each thread has its own HTTP client. Lost contact is retried with a
 * growing pause; tasks keep running meanwhile.
 */
#define _GNU_SOURCE
#include "agent.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../client/client.h"
#include "../descriptor/descriptor.h"
#include "../hal/hal.h"
#include "../lib/fileio.h"
#include "../lib/hash.h"
#include "../lib/xalloc.h"
#include "cgroup.h"

#define OUTPUT_CHUNK (256 * 1024) /* per task and stream per upload */
#define STOP(a)	     (atomic_load(&(a)->stop) || atomic_load(&g_stop))

static atomic_int g_stop; /* lock-free: safe to store from the signal handler */

static void nap(struct xp_agent *a, int ms)
{
	while (ms > 0 && !STOP(a)) {
		int step = ms < 100 ? ms : 100;
		usleep((useconds_t)step * 1000);
		ms -= step;
	}
}

/* The monitor's wait: until a shim exits (SIGCHLD, blocked in every thread
 * of the agent and taken here), ms pass, or the agent stops. Adopted shims
 * are not our children: the timeout finds them. */
static void wait_child(struct xp_agent *a, int ms)
{
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	while (ms > 0 && !STOP(a)) {
		int step = ms < 100 ? ms : 100;
		struct timespec ts = { 0, (long)step * 1000000 };
		int sig = sigtimedwait(&chld, NULL, &ts);
		if (sig == SIGCHLD)
			return;
		if (sig < 0 && errno == EINTR)
			continue;
		ms -= step;
	}
}

static struct xp_cluster *discover(const struct xp_agent_opts *o, struct xp_hal **hal,
				   struct xp_err *err)
{
	struct xp_hal_opts ho;
	struct xp_sb warn;
	memset(&ho, 0, sizeof(ho));
	ho.devices_file = o->devices_file;
	*hal = xp_hal_open(&ho, err);
	if (!*hal)
		return NULL;
	xp_sb_init(&warn);
	struct xp_cluster *c = xp_hal_discover(*hal, o->node_name, &warn, err);
	if (warn.len)
		fprintf(stderr, "xpool agent: discovery warnings:\n%s", warn.s);
	xp_sb_free(&warn);
	for (uint16_t d = 0; c && d < c->nodes[0].ndevs; d++) { /* the admin's choices */
		struct xp_device *dv = &c->nodes[0].devs[d];
		if (dv->cls == XP_CLASS_CPU)
			continue;
		if (o->device_mode && dv->mode != XP_MODE_MIG)
			dv->mode = (uint8_t)(o->device_mode - 1);
		if (o->replicas && dv->mode == XP_MODE_TIMESLICE)
			dv->replicas = o->replicas;
		if (o->overcommit && !dv->mem_overcommit)
			dv->mem_overcommit = o->overcommit;
	}
	return c;
}

/* One line per partition (MIG profile) under its device, with the placements discovery
 * recorded in attribute mig_placements ("3g.40gb:0+4,4+4;..."), then its MIG instances
 * (attribute mig_layout) when it has any. */
static void print_partitions(const struct xp_device *d)
{
	const char *pl = xp_attrs_get(d->attrs, d->nattrs, "mig_placements");
	for (uint16_t i = 0; i < d->nparts; i++) {
		const struct xp_partition *p = &d->parts[i];
		const char *s = pl;
		size_t nl = strlen(p->name), len = 0;
		while (s && *s && !(strncmp(s, p->name, nl) == 0 && s[nl] == ':')) {
			s = strchr(s, ';');
			s = s ? s + 1 : NULL;
		}
		if (s && *s) {
			s += nl + 1;
			len = strcspn(s, ";");
		}
		printf("      %-5s %-12s %5u milli %8lluMi  max %-2u at %.*s\n", "part", p->name,
		       p->compute_milli, (unsigned long long)p->mem_mib, p->max_count, (int)len,
		       len ? s : "-");
	}
	const char *lay = xp_attrs_get(d->attrs, d->nattrs, "mig_layout");
	if (lay)
		printf("      %-5s %s\n", "inst", lay);
}

int xp_agent_discover(const struct xp_agent_opts *o, int json, struct xp_err *err)
{
	struct xp_hal *hal = NULL;
	struct xp_cluster *c = discover(o, &hal, err);
	if (!c) {
		xp_hal_close(hal);
		return err->code;
	}
	if (json) {
		char *s = xp_descriptor_to_json(c);
		puts(s);
		free(s);
	} else {
		const struct xp_node *n = &c->nodes[0];
		printf("node %s: %s, %.1f cores, %.1f GiB, %u NUMA domains, %u devices\n", n->name,
		       n->arch ? xp_strtab_str(c->syms, n->arch) : "?", (double)n->cpu_milli / 1000,
		       (double)n->mem_mib / 1024, n->numa_domains, n->ndevs);
		printf("%-5s %-6s %-10s %-24s %10s %-5s %-5s %-8s %-9s %s\n", "INDEX", "CLASS",
		       "VENDOR", "MODEL", "MEMORY", "NUMA", "ISL", "HEALTH", "MODE", "UUID / PCI");
		for (uint16_t d = 0; d < n->ndevs; d++) {
			const struct xp_device *dv = &n->devs[d];
			printf("%-5u %-6s %-10s %-24s %8lluMi %-5d %-5d %-8s %-9s %s %s\n", d,
			       xp_class_name(dv->cls), xp_strtab_str(c->syms, dv->vendor),
			       xp_strtab_str(c->syms, dv->model), (unsigned long long)dv->mem_mib,
			       dv->numa, dv->island, xp_health_name(dv->health),
			       xp_mode_name(dv->mode), dv->uuid ? dv->uuid : "-", dv->pci_bus_id ? dv->pci_bus_id : "");
			print_partitions(dv);
		}
	}
	xp_cluster_destroy(c);
	xp_hal_close(hal);
	return 0;
}

static int do_register(struct xp_agent *a, struct xp_client *cl, struct xp_err *err)
{
	json_error_t je;
	json_t *body = json_loads(a->descriptor, 0, &je), *reply = NULL;
	int rc = xp_client_json(cl, "POST", "/v1/agents", body, &reply, err);
	json_decref(body);
	if (rc >= 0) {
		int hb = (int)json_integer_value(json_object_get(reply, "heartbeat_ms"));
		if (!a->o.heartbeat_ms && hb > 0)
			a->heartbeat_ms = hb;
		fprintf(stderr, "xpool agent: node=%s: registered with %s (heartbeat %d ms)\n",
			a->node, xp_client_base(cl), a->heartbeat_ms);
	}
	json_decref(reply);
	return rc < 0 ? rc : 0;
}

/* ---- heartbeat thread ---- */

/* Sends what a task wrote since the last call. 0: all sent (or the
 * controller refused it for good: a 4xx); -1: try again later. */
int xp_agent_upload_output(struct xp_agent *a, struct xp_client *cl, struct xp_task *copy)
{
	int ret = 0;
	/* the heartbeat and the monitor both ship output, each from its own
	 * copy of the task: one at a time, from the offsets last recorded */
	pthread_mutex_lock(&a->up_mu);
	pthread_mutex_lock(&a->mu);
	const struct xp_task *now =
		xp_task_find_at(a, copy->job, copy->replica, copy->attempt, copy->epoch);
	if (now && copy->state != XP_TASK_DONE) { /* DONE: sent again from its start */
		copy->sent_out = now->sent_out;
		copy->sent_err = now->sent_err;
	}
	pthread_mutex_unlock(&a->mu);
	for (int stream = 0; stream < 2; stream++) {
		for (int round = 0; round < 64; round++) { /* at most 16 MiB per call */
			struct xp_sb sb;
			struct xp_err err = { 0 };
			char path[512];
			long status;
			char *resp = NULL;
			size_t rl;
			xp_sb_init(&sb);
			int n = xp_task_output(copy, stream, &sb, OUTPUT_CHUNK);
			if (n <= 0) {
				xp_sb_free(&sb);
				break;
			}
			off_t *sent = stream ? &copy->sent_err : &copy->sent_out;
			int pn = snprintf(path, sizeof(path),
					  "/v1/nodes/%s/logs?job=%llu&replica=%u&stream=%s&"
					  "attempt=%u&offset=%lld",
					  a->node, (unsigned long long)copy->job, copy->replica,
					  stream ? "stderr" : "stdout", copy->attempt,
					  (long long)*sent);
			if (copy->epoch && pn > 0 && (size_t)pn < sizeof(path))
				snprintf(path + pn, sizeof(path) - (size_t)pn, "&epoch=%u",
					 copy->epoch);
			int rc = xp_client_request(cl, "POST", path, "application/octet-stream",
						   sb.s, sb.len, &status, &resp, &rl, &err);
			xp_sb_free(&sb);
			if (rc < 0 || status / 100 != 2) {
				fprintf(stderr,
					"xpool agent: node=%s job=%llu: output not sent (%ld): "
					"%s\n",
					a->node, (unsigned long long)copy->job, status,
					rc < 0 ? err.text
					: resp ? resp
					       : "refused");
				free(resp);
				if (rc < 0 || status / 100 == 5) {
					ret = -1; /* on the next beat */
					goto save;
				}
				/* refused for good (over the cap, not ours): drop it */
				*sent += n;
				continue;
			}
			/* the controller says how much of the attempt it holds: an
			 * adopted task's output resumes there, not from its start */
			json_t *o = resp ? json_loadb(resp, rl, 0, NULL) : NULL;
			json_t *have = json_object_get(o, "have");
			*sent = json_is_integer(have) && json_integer_value(have) >= 0
					? (off_t)json_integer_value(have)
					: *sent + n;
			json_decref(o);
			free(resp);
		}
	}
save: /* the controller skips what it has, so a repeat keeps nothing twice */
	pthread_mutex_lock(&a->mu);
	struct xp_task *t = xp_task_find_at(a, copy->job, copy->replica, copy->attempt, copy->epoch);
	if (t) {
		t->sent_out = copy->sent_out;
		t->sent_err = copy->sent_err;
	}
	pthread_mutex_unlock(&a->mu);
	pthread_mutex_unlock(&a->up_mu);
	return ret;
}

/* A connection of the agent's own to the controller: each thread has one,
 * and SIGTERM ends whatever it waits for. What the agent sends (a
 * registration, a heartbeat, exits keyed by attempt) is applied once however
 * often it arrives, so a kept-alive connection that breaks under a request
 * sends it again; an output upload names its attempt and offset, and the
 * controller skips the bytes it holds already. */
static struct xp_client *agent_client(struct xp_agent *a, struct xp_err *err)
{
	struct xp_client *cl = xp_client_create(a->o.server, a->o.token, err);
	if (cl && xp_client_set_ca(cl, a->o.ca, err) < 0) {
		xp_client_destroy(cl);
		cl = NULL;
	}
	if (cl) {
		xp_client_set_abort(cl, &g_stop);
		xp_client_set_repeat_safe(cl, 1);
	} else
		fprintf(stderr, "xpool agent: node=%s: %s\n", a->node, err->text);
	return cl;
}

/* A bootstrap token is traded once for this node's credential, kept in
 * o.credential (0600) and used from then on; a kept one is used as it is
 * (a revoked one is refused by the controller: the agent stops, it does
 * not join again behind the admin's back). */
static int read_credential(struct xp_agent *a, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int ok = fgets(a->cred, sizeof(a->cred), f) != NULL;
	fclose(f);
	a->cred[strcspn(a->cred, "\r\n")] = '\0';
	return ok && !strncmp(a->cred, "xpn_", 4) ? 0 : -1;
}

static int join(struct xp_agent *a, struct xp_err *err)
{
	char path[600];
	struct xp_afile af = { 0 };
	if (a->o.credential)
		snprintf(path, sizeof(path), "%s", a->o.credential);
	else
		snprintf(path, sizeof(path), "%s/node.credential", a->o.work);
	if (read_credential(a, path) == 0)
		goto use;
	struct xp_client *cl = agent_client(a, err);
	if (!cl)
		return err->code;
	int rc = 0;
	for (int backoff = 500; !STOP(a); backoff = backoff < 8000 ? backoff * 2 : 8000) {
		json_t *body = json_pack("{s:s}", "node", a->node), *reply = NULL;
		rc = xp_client_json(cl, "POST", "/v1/agents/join", body, &reply, err);
		json_decref(body);
		if (rc >= 0)
			snprintf(a->cred, sizeof(a->cred), "%s",
				 json_string_value(json_object_get(reply, "token")) ?: "");
		json_decref(reply);
		if (rc >= 0 || (rc != XP_EUNAVAIL && rc != XP_EIO))
			break;
		fprintf(stderr, "xpool agent: node=%s: join: %s; retrying\n", a->node, err->text);
		nap(a, backoff);
	}
	xp_client_destroy(cl);
	if (rc < 0)
		return rc;
	if (strncmp(a->cred, "xpn_", 4))
		return xp_errf(err, XP_EIO, "join: the controller sent no node credential");
	if (xp_afile_open_mode(&af, path, 0600, err) < 0)
		return err->code;
	fprintf(af.f, "%s\n", a->cred);
	if (xp_afile_commit(&af, err) < 0)
		return err->code;
	fprintf(stderr, "xpool agent: node=%s: joined; its credential is in %s\n", a->node, path);
use:
	a->o.token = a->cred;
	return 0;
}

/* The agent's tasks as they are now (a copy: the lock is not held while
 * they are read or their output sent); *n of them. */
static struct xp_task *copy_tasks(struct xp_agent *a, size_t *n)
{
	pthread_mutex_lock(&a->mu);
	*n = a->tasks.n;
	struct xp_task *copy = *n ? XNEWV(struct xp_task, *n) : NULL;
	if (*n)
		memcpy(copy, a->tasks.v, *n * sizeof(*copy));
	pthread_mutex_unlock(&a->mu);
	return copy;
}

/* What each running replica holds and spent on its GPUs, from its vGPU
 * account (replicas without one are not listed). */
static json_t *gpu_usage(const struct xp_task *t, size_t n)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++) {
		struct xp_vgpu_usage u;
		if (t[i].state != XP_TASK_RUNNING || xp_vgpu_usage(t[i].dir, &u) < 0)
			continue;
		json_array_append_new(
			arr, json_pack("{s:I,s:i,s:i,s:I,s:I,s:i,s:i,s:I,s:I}", "job",
				       (json_int_t)t[i].job, "replica", (int)t[i].replica,
				       "attempt", (int)t[i].attempt, "gpu_mem_mib",
				       (json_int_t)u.mem_mib, "gpu_peak_mib", (json_int_t)u.peak_mib,
				       "ooms", (int)u.ooms, "device_ooms", (int)u.dev_ooms,
				       "spent_ns", (json_int_t)u.spent_ns, "clock_ns",
				       (json_int_t)u.clock_ns));
	}
	return arr;
}

static void *heartbeat_main(void *arg)
{
	struct xp_agent *a = arg;
	struct xp_err err = { 0 };
	struct xp_client *cl = agent_client(a, &err);
	char path[300];

	snprintf(path, sizeof(path), "/v1/nodes/%s/heartbeat", a->node);
	while (!STOP(a) && cl) {
		json_t *devs = json_array(), *reply = NULL;
		for (unsigned d = 0; d < a->ndevs; d++) {
			struct xp_hal_stats s;
			memset(&s, 0, sizeof(s));
			s.util_pct = s.power_w = s.temp_c = -1;
			s.mem_used_mib = -1;
			if (xp_hal_stats(a->hal, d, &s, &err) < 0) {
				s.health = XP_HEALTH_UNKNOWN;
				snprintf(s.why, sizeof(s.why), "%.120s", err.text);
			}
			json_t *o = json_pack("{s:s,s:s,s:i,s:I,s:i,s:i}", "health",
					      xp_health_name(s.health), "why", s.why, "util_pct",
					      s.util_pct < 0	 ? -1
					      : s.util_pct > 100 ? 100
								 : s.util_pct,
					      "mem_used_mib", (json_int_t)s.mem_used_mib, "power_w",
					      s.power_w, "temp_c", s.temp_c);
			json_array_append_new(devs, o);
		}
		size_t n;
		struct xp_task *copy = copy_tasks(a, &n); /* one snapshot per beat */
		json_t *body = json_pack("{s:o,s:o,s:o}", "devices", devs, "tasks",
					 gpu_usage(copy, n), "services", xp_serve_report(copy, n));
		char addr[64] = "";
		if (a->o.address)
			snprintf(addr, sizeof(addr), "%s", a->o.address);
		else
			xp_client_local_ip(cl, addr, sizeof(addr));
		if (addr[0])
			json_object_set_new(body, "address", json_string(addr));
		pthread_mutex_lock(&a->mu); /* mig_devs grows with a MIG mode change */
		if (a->mig_devs) /* the MIG instances: warm ones steer placement */
			json_object_set_new(body, "mig", xp_mig_beat_json(a));
		pthread_mutex_unlock(&a->mu);
		int rc = xp_client_json(cl, "POST", path, body, &reply, &err);
		json_decref(body);
		json_decref(reply);
		if (rc == XP_ENOENT || rc == XP_ESTATE) /* the controller forgot the node */
			do_register(a, cl, &err);
		else if (rc < 0)
			fprintf(stderr, "xpool agent: node=%s: heartbeat failed: %s\n", a->node,
				err.text);
		/* a new leader (HA): it may lack output the old one took */
		long long ep = rc >= 0 ? xp_client_epoch(cl) : 0, was = atomic_load(&a->leader_epoch);
		if (ep > was) {
			if (was && a->o.output_resend_s > 0)
				atomic_store(&a->resend, 1);
			atomic_store(&a->leader_epoch, ep);
		}
		/* output of running tasks */
		for (size_t i = 0; rc >= 0 && i < n; i++)
			if (copy[i].state == XP_TASK_RUNNING || copy[i].state == XP_TASK_KILLING)
				xp_agent_upload_output(a, cl, &copy[i]);
		free(copy);
		/* the period, or until a replica's readiness changes */
		for (int ms = a->heartbeat_ms; ms > 0 && !STOP(a); ms -= 20) {
			if (atomic_exchange(&a->beat_soon, 0))
				break;
			usleep(20000);
		}
	}
	xp_client_destroy(cl);
	return NULL;
}

/* ---- monitor thread ---- */

static json_t *exit_json(const struct xp_task *t, int plain)
{
	json_t *o =
		json_pack("{s:I,s:i,s:i,s:i}", "job", (json_int_t)t->job, "attempt",
			  (int)t->attempt, "replica", (int)t->replica, "exit_code", t->exit_code);
	if (t->epoch) /* an elastic job's: an older epoch's exit is stale */
		json_object_set_new(o, "epoch", json_integer(t->epoch));
	if (plain) /* what a controller before exit reasons takes */
		return o;
	if (t->signal > 0)
		json_object_set_new(o, "signal", json_integer(t->signal));
	if (t->reason[0])
		json_object_set_new(o, "reason", json_string(t->reason));
	if (t->detail[0])
		json_object_set_new(o, "detail", json_string(t->detail));
	return o;
}

/* POST the exits of t[n] as one report; taken (or refused as stale, for a
 * single one: the job moved on), they are forgotten. < 0: not taken. A
 * single report refused as malformed goes once more without the signal
 * and reason: an older controller takes {job, attempt, replica,
 * exit_code} only, and the exit is what matters. */
static int report_exits(struct xp_agent *a, struct xp_client *cl, const char *path,
			const struct xp_task *t, size_t n, struct xp_err *err)
{
	int rc = 0;
	for (int plain = 0; plain < 2; plain++) {
		json_t *list = json_array(), *reply = NULL;
		for (size_t i = 0; i < n; i++)
			json_array_append_new(list, exit_json(&t[i], plain));
		json_t *body = json_pack("{s:o}", "tasks", list);
		rc = xp_client_json(cl, "POST", path, body, &reply, err);
		json_decref(body);
		json_decref(reply);
		if (rc != XP_EINVAL || n != 1 ||
		    (!t[0].signal && !t[0].reason[0] && !t[0].detail[0]))
			break;
		fprintf(stderr,
			"xpool agent: node=%s job=%llu: exit refused (%s); again without "
			"its signal and reason\n",
			a->node, (unsigned long long)t[0].job, err->text);
	}
	int stale = rc == XP_ESTATE || rc == XP_EINVAL;
	if (rc < 0 && !(stale && n == 1))
		return rc;
	if (rc < 0) /* stale: the job moved on (cancelled, requeued) */
		fprintf(stderr, "xpool agent: node=%s job=%llu: exit not taken: %s\n", a->node,
			(unsigned long long)t[0].job, err->text);
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < n; i++) {
		struct xp_task *live =
			xp_task_find_at(a, t[i].job, t[i].replica, t[i].attempt, t[i].epoch);
		if (live)
			xp_task_forget(a, live);
	}
	pthread_mutex_unlock(&a->mu);
	return 0;
}

static void *monitor_main(void *arg)
{
	struct xp_agent *a = arg;
	struct xp_err err = { 0 };
	struct xp_client *cl = agent_client(a, &err);
	char path[300];

	snprintf(path, sizeof(path), "/v1/nodes/%s/tasks", a->node);
	while (!STOP(a) && cl) {
		pthread_mutex_lock(&a->mu);
		xp_task_poll(a, xp_agent_now());
		size_t n = 0;
		struct xp_task *ended = XNEWV(struct xp_task, a->tasks.n ? a->tasks.n : 1);
		for (size_t i = 0; i < a->tasks.n; i++)
			if (a->tasks.v[i].state == XP_TASK_EXITED)
				ended[n++] = a->tasks.v[i];
		pthread_mutex_unlock(&a->mu);
		/* output first, then every exit of this pass in one report; a
		 * refused batch (one is stale) goes again one by one */
		size_t ready = 0;
		for (size_t i = 0; i < n; i++)
			if (xp_agent_upload_output(a, cl, &ended[i]) == 0)
				ended[ready++] = ended[i];
		for (size_t at = 0; at < ready; at += 4096) { /* the API's most per report */
			size_t k = ready - at < 4096 ? ready - at : 4096;
			int rc = report_exits(a, cl, path, ended + at, k, &err);
			for (size_t i = 0; (rc == XP_ESTATE || rc == XP_EINVAL) && i < k; i++)
				report_exits(a, cl, path, &ended[at + i], 1, &err);
		}
		free(ended);
		if (atomic_exchange(&a->resend, 0))
			xp_output_resend(a, cl);
		/* a shim's exit wakes it at once; otherwise it looks every second,
		 * or every 200 ms while a kill's grace period runs */
		int killing = 0;
		pthread_mutex_lock(&a->mu);
		for (size_t i = 0; i < a->tasks.n; i++)
			killing |= a->tasks.v[i].state == XP_TASK_KILLING;
		pthread_mutex_unlock(&a->mu);
		wait_child(a, killing ? 200 : 1000);
	}
	xp_client_destroy(cl);
	return NULL;
}

/* ---- the watch ---- */

/* a task of an earlier epoch of the job's attempt still runs here */
static int older_epoch_alive(struct xp_agent *a, uint64_t job, uint32_t attempt, uint32_t epoch)
{
	for (size_t k = 0; k < a->tasks.n; k++) {
		const struct xp_task *t = &a->tasks.v[k];
		if (t->job == job && t->attempt == attempt && t->epoch < epoch &&
		    (t->state == XP_TASK_RUNNING || t->state == XP_TASK_KILLING))
			return 1;
	}
	return 0;
}

static void reconcile(struct xp_agent *a, json_t *assignments)
{
	json_t *as;
	size_t i;
	int64_t now = xp_agent_now();
	pthread_mutex_lock(&a->mu);
	a->deferred = 0;
	json_array_foreach(assignments, i, as)
	{
		uint64_t job = (uint64_t)json_integer_value(json_object_get(as, "job"));
		uint32_t r = (uint32_t)json_integer_value(json_object_get(as, "replica"));
		uint32_t at = (uint32_t)json_integer_value(json_object_get(as, "attempt"));
		uint32_t ep = (uint32_t)json_integer_value(json_object_get(as, "epoch"));
		if (xp_task_find_at(a, job, r, at, ep))
			continue; /* running, or ran: never twice */
		if (older_epoch_alive(a, job, at, ep)) {
			a->deferred = 1; /* its devices are still in use: after it ends */
			continue;
		}
		struct xp_err err = { 0 };
		/* a task it cannot start is reported failed, with the reason, so
		 * the job does not hang */
		if (xp_task_launch(a, as, &err) < 0)
			fprintf(stderr, "xpool agent: node=%s job=%llu: cannot start: %s\n",
				a->node, (unsigned long long)job, err.text);
	}
	for (size_t k = 0; k < a->tasks.n; k++) {
		struct xp_task *t = &a->tasks.v[k];
		if (t->state != XP_TASK_RUNNING)
			continue;
		int wanted = 0;
		json_array_foreach(assignments, i, as)
		{
			if ((uint64_t)json_integer_value(json_object_get(as, "job")) == t->job &&
			    json_integer_value(json_object_get(as, "replica")) == t->replica &&
			    json_integer_value(json_object_get(as, "attempt")) == t->attempt &&
			    json_integer_value(json_object_get(as, "epoch")) == t->epoch)
				wanted = 1;
		}
		if (!wanted) /* cancelled, failed elsewhere, or requeued while we were away */
			xp_task_kill(a, t, now);
	}
	/* forget reported tasks from the in-memory list */
	size_t keep = 0;
	for (size_t k = 0; k < a->tasks.n; k++)
		if (a->tasks.v[k].state != XP_TASK_DONE)
			a->tasks.v[keep++] = a->tasks.v[k];
	a->tasks.n = keep;
	pthread_mutex_unlock(&a->mu);
}

/* --stop-tasks: SIGTERM every running task, SIGKILL after the grace */
static void stop_all_tasks(struct xp_agent *a)
{
	int64_t now = xp_agent_now(), until = now + a->o.grace_ms + 2000;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->tasks.n; i++) {
		xp_task_kill(a, &a->tasks.v[i], now);
		if (a->tasks.v[i].term_at) /* an elastic replica's checkpoint grace first */
			until = a->tasks.v[i].kill_at + 2000 > until ? a->tasks.v[i].kill_at + 2000
								     : until;
	}
	for (;;) {
		size_t live = 0;
		xp_task_poll(a, xp_agent_now());
		for (size_t i = 0; i < a->tasks.n; i++)
			live += a->tasks.v[i].state == XP_TASK_RUNNING ||
				a->tasks.v[i].state == XP_TASK_KILLING;
		if (!live || xp_agent_now() > until)
			break;
		pthread_mutex_unlock(&a->mu);
		usleep(20000);
		pthread_mutex_lock(&a->mu);
	}
	/* they are gone for good: so are their cgroups, once their shims
	 * have exited (an ASAN build takes a while to exit: 3 s at most) */
	for (size_t i = 0; i < a->tasks.n; i++)
		if (a->tasks.v[i].state == XP_TASK_EXITED)
			xp_task_release(a, &a->tasks.v[i]);
	for (int64_t end = xp_agent_now() + 3000;
	     a->cg && xp_cg_sweep(a->cg) && xp_agent_now() < end;) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		usleep(20000);
	}
	pthread_mutex_unlock(&a->mu);
}

/* The limits at start: this agent's cgroup tag (its work folder, hashed,
 * so two agents on one machine never share a cgroup), the cgroups opened
 * per --limits, and the node's label "limits" saying what holds there:
 * cgroup-v1, cgroup-v2, off (tasks run unbounded) or unavailable (tasks
 * are refused). */
static void limits_start(struct xp_agent *a, struct xp_node *n)
{
	char real[4096];
	const char *work = realpath(a->o.work, real) ? real : a->o.work;
	snprintf(a->tag, sizeof(a->tag), "%08x",
		 (unsigned)(xp_hash_bytes(work, strlen(work)) >> 32));
	xp_task_limits_open(a, 0);
	const char *what = a->cg ? (a->cg->layout == XP_CG_V1 ? "cgroup-v1" : "cgroup-v2")
			   : a->o.limits == XP_LIMITS_OFF ? "off"
							  : "unavailable";
	xp_attrs_set(&n->labels, &n->nlabels, "limits", what);
}

void xp_agent_signal(int sig)
{
	(void)sig;
	atomic_store(&g_stop, 1);
}

int xp_agent_run(const struct xp_agent_opts *o, struct xp_err *err)
{
	struct xp_agent *a = XNEW(struct xp_agent);
	struct xp_cluster *c = NULL;
	struct xp_client *cl = NULL;
	pthread_t hb, mon, probe;
	int rc = 0, started = 0;

	a->o = *o;
	if (!a->o.work)
		a->o.work = "/var/lib/xpool/agent";
	if (a->o.grace_ms <= 0)
		a->o.grace_ms = 10000;
	a->heartbeat_ms = a->o.heartbeat_ms > 0 ? a->o.heartbeat_ms : 5000;
	pthread_mutex_init(&a->mu, NULL);
	pthread_mutex_init(&a->up_mu, NULL);
	if (mkdir(a->o.work, 0755) != 0 && errno != EEXIST) {
		rc = xp_errf(err, -errno, "%s: %s", a->o.work, strerror(errno));
		goto out;
	}
	c = discover(&a->o, &a->hal, err);
	if (!c) {
		rc = err->code;
		goto out;
	}
	snprintf(a->node, sizeof(a->node), "%s", c->nodes[0].name);
	a->ndevs = c->nodes[0].ndevs;
	c->nodes[0].dedicated = (uint8_t)(a->o.dedicated != 0);
	limits_start(a, &c->nodes[0]);
	a->descriptor = xp_descriptor_to_json(c);
	for (unsigned d = 0; d < a->ndevs && d < 64; d++)
		if (c->nodes[0].devs[d].mode == XP_MODE_MIG)
			a->mig_devs |= 1ull << d;
	xp_mig_own_load(a); /* before the tasks: one that ended while away releases its own */
	xp_task_adopt(a);
	xp_mig_reconcile(a, 1); /* then the orphans: instances xpool made that no task holds */
	if (a->o.token && !strncmp(a->o.token, "xpb_", 4) && (rc = join(a, err)) < 0)
		goto out;
	cl = agent_client(a, err);
	if (!cl) {
		rc = err->code;
		goto out;
	}
	for (int backoff = 500; !STOP(a); backoff = backoff < 8000 ? backoff * 2 : 8000) {
		if ((rc = do_register(a, cl, err)) == 0)
			break;
		if (rc != XP_EUNAVAIL && rc != XP_EIO)
			goto out; /* refused: a bad token, another node's name ... */
		fprintf(stderr, "xpool agent: node=%s: %s; retrying\n", a->node, err->text);
		nap(a, backoff);
	}
	sigset_t chld; /* the monitor takes SIGCHLD with sigtimedwait() */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, NULL);
	if ((rc = pthread_create(&hb, NULL, heartbeat_main, a)) != 0) {
		rc = xp_errf(err, XP_EIO, "cannot start the heartbeat thread: %s", strerror(rc));
		goto out;
	}
	if ((rc = pthread_create(&mon, NULL, monitor_main, a)) != 0) {
		atomic_store(&a->stop, 1);
		pthread_join(hb, NULL);
		rc = xp_errf(err, XP_EIO, "cannot start the monitor thread: %s", strerror(rc));
		goto out;
	}
	if ((rc = pthread_create(&probe, NULL, xp_serve_prober, a)) != 0) {
		atomic_store(&a->stop, 1);
		pthread_join(hb, NULL);
		pthread_join(mon, NULL);
		rc = xp_errf(err, XP_EIO, "cannot start the prober thread: %s", strerror(rc));
		goto out;
	}
	started = 1;
	uint64_t version = 0;
	char path[400];
	xp_client_set_timeout(cl, 60000);
	for (int backoff = 500; !STOP(a);) {
		json_t *reply = NULL;
		pthread_mutex_lock(&a->mu); /* a deferred launch: look again within a second */
		int soon = a->deferred;
		pthread_mutex_unlock(&a->mu);
		snprintf(path, sizeof(path), "/v1/nodes/%s/assignments?since=%llu&wait=%d", a->node,
			 (unsigned long long)version, soon ? 1 : 10);
		rc = xp_client_json(cl, "GET", path, NULL, &reply, err);
		if (rc < 0) {
			json_decref(reply);
			if (STOP(a))
				break; /* SIGTERM ended the long poll */
			if (rc == XP_ENOENT || rc == XP_ESTATE)
				do_register(a, cl, err);
			else
				fprintf(stderr, "xpool agent: node=%s: watch: %s\n", a->node,
					err->text);
			nap(a, backoff);
			backoff = backoff < 8000 ? backoff * 2 : 8000;
			continue;
		}
		backoff = 500;
		version = (uint64_t)json_integer_value(json_object_get(reply, "version"));
		reconcile(a, json_object_get(reply, "assignments"));
		xp_mig_mode_orders(a, cl, json_object_get(reply, "mig_mode"));
		json_decref(reply);
	}
	rc = 0;
out:
	atomic_store(&a->stop, 1);
	if (started) {
		pthread_join(hb, NULL);
		pthread_join(mon, NULL);
		pthread_join(probe, NULL);
	}
	if (a->o.stop_tasks)
		stop_all_tasks(a);
	xp_client_destroy(cl);
	xp_cluster_destroy(c);
	xp_hal_close(a->hal);
	xp_cg_close(a->cg);
	free(a->cg);
	free(a->descriptor);
	xp_vec_free(&a->tasks);
	pthread_mutex_destroy(&a->mu);
	pthread_mutex_destroy(&a->up_mu);
	free(a);
	return rc;
}
