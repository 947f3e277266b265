/*
 * api_jobs: the /v1/jobs handlers (docs/api.md), run on the owner thread,
 * and the job object they return. A tenant sees only its own jobs: another
 * tenant's job answers 404 exactly as a missing one.
 */
#include "ctl.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/state/migmode.h"
#include "../lib/fileio.h"
#include "../lib/parse.h"
#include "../lib/strbuf.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"
#include "../core/model/mig.h"

static json_t *time_or_null(int64_t ms)
{
	char ts[XP_TIME_LEN];
	if (!ms)
		return json_null();
	xp_time_format(ms, ts);
	return json_string(ts);
}

/* What replica r's vGPU account said at its agent's last heartbeat. */
static void gpu_usage_json(struct xp_ctl *ctl, const struct xp_job *j, uint32_t r, json_t *ao)
{
	const struct xp_gpu_use *u = xp_intmap_get(&ctl->gpu_use, j->id);
	if (!u || u->attempt != j->attempts || r >= u->nrep || !u->rep[r].at)
		return;
	const struct xp_gpu_rep *p = &u->rep[r];
	char ts[XP_TIME_LEN];
	xp_time_format(p->at, ts);
	json_t *g = json_pack("{s:I,s:I,s:i,s:i,s:s}", "memory_mib", (json_int_t)p->mem_mib,
			      "peak_memory_mib", (json_int_t)p->peak_mib, "ooms_at_cap",
			      (int)p->ooms, "device_ooms", (int)p->dev_ooms, "reported_at", ts);
	json_object_set_new(g, "compute_milli_used",
			    p->milli >= 0 ? json_integer(p->milli) : json_null());
	json_object_set_new(ao, "gpu_usage", g);
}

/* A replica's MIG slice: {profile, id (NVML's), start, size} */
static json_t *mig_json(struct xp_state *st, const struct xp_alloc *a)
{
	const struct xp_mig_profile *p = xp_state_mig_profile(st, a);
	return json_pack("{s:s,s:i,s:i,s:i}", "profile", p ? p->name : "", "id",
			 (int)xp_mig_kind_id(a->mig - 1), "start", (int)a->mig_start, "size",
			 p && p->nplace ? (int)p->place[0].size : 0);
}

/* an elastic job's size, range, epoch, resizes and the last one's reason */
static json_t *elastic_json(const struct xp_job *j)
{
	return json_pack("{s:i,s:i,s:i,s:i,s:i,s:s?}", "size", (int)j->spec.replicas, "min",
			 (int)j->spec.rmin, "max", (int)j->spec.rmax, "epoch", (int)j->epoch,
			 "resizes", (int)j->resizes, "last_reason", j->resize_why);
}

json_t *xp_api_job_json(struct xp_ctl *ctl, const struct xp_job *j)
{
	const struct xp_state *st = ctl->st;
	char name[40];
	json_t *o;

	snprintf(name, sizeof(name), "job-%llu", (unsigned long long)j->id);
	o = json_pack("{s:I,s:s,s:s,s:s,s:i,s:s,s:s}", "id", (json_int_t)j->id, "name",
		      j->spec.name ? j->spec.name : name, "tenant", st->tenants.v[j->tenant].name,
		      "queue", st->queues.v[j->queue].name, "priority", j->spec.priority, "state",
		      xp_job_state_name(j->state), "reason", j->reason ? j->reason : "");
	json_object_set_new(o, "submitted_at", time_or_null(j->submitted_at));
	json_object_set_new(o, "started_at", time_or_null(j->started_at));
	json_object_set_new(o, "finished_at", time_or_null(j->finished_at));
	json_object_set_new(o, "exit_code", j->has_exit ? json_integer(j->exit_code) : json_null());
	json_object_set_new(o, "signal",
			    j->exit_signal ? json_integer(j->exit_signal) : json_null());
	json_object_set_new(o, "end_reason",
			    j->end ? json_string(xp_end_name(j->end)) : json_null());
	if (xp_job_deadline(j)) { /* EDF in its queue; flagged when it cannot be met */
		char ts[XP_TIME_LEN];
		xp_time_format(xp_job_deadline(j), ts);
		json_object_set_new(o, "deadline", json_string(ts));
		json_object_set_new(o, "deadline_status",
				    json_string(xp_job_deadline_status(j, xp_ctl_now())));
	}
	json_object_set_new(o, "attempts", json_integer(j->attempts));
	json_object_set_new(o, "requeues", json_integer(j->requeues));
	json_object_set_new(o, "preemptions", json_integer(j->preemptions));
	json_object_set_new(o, "spec", xp_jobspec_json(&j->spec));
	if (xp_job_elastic(j)) /* its size now and how it got there */
		json_object_set_new(o, "elastic", elastic_json(j));
	json_t *allocs = json_array();
	for (uint32_t r = 0; j->allocs && r < j->spec.replicas; r++) {
		const struct xp_alloc *a = &j->allocs[r];
		const struct xp_node *n = &st->c->nodes[a->node];
		json_t *devs = json_array();
		for (uint16_t i = 0; i < a->ndev; i++) {
			const struct xp_device *d = &n->devs[a->devs[i]];
			json_array_append_new(
				devs,
				json_pack("{s:i,s:s,s:s,s:i,s:I}", "index", a->devs[i], "class",
					  xp_class_name(d->cls), "model",
					  xp_strtab_str(st->c->syms, d->model), "compute_milli",
					  a->dev_milli, "memory_mib",
					  (json_int_t)(a->dev_milli >= XP_MILLI ? d->mem_mib
										: a->dev_mem_mib)));
		}
		json_t *ao = json_pack("{s:i,s:s,s:I,s:I,s:o}", "replica", (int)r, "node", n->name,
				       "cpu_milli", (json_int_t)a->cpu_milli, "memory_mib",
				       (json_int_t)a->mem_mib, "devices", devs);
		if (a->mig) /* the slice: its profile (what mig: any chose) and placement */
			json_object_set_new(ao, "mig", mig_json(ctl->st, a));
		/* what its agent enforces there: cgroup-v1, cgroup-v2, off, unavailable */
		const char *lim = xp_attrs_get(n->labels, n->nlabels, "limits");
		if (lim)
			json_object_set_new(ao, "limits", json_string(lim));
		gpu_usage_json(ctl, j, r, ao);
		json_array_append_new(allocs, ao);
	}
	json_object_set_new(o, "allocations", allocs);
	uint64_t wait[XP_JOB_MAX_DEPS];
	size_t nw = j->state == XP_JOB_PENDING ? xp_deps_waiting(st, j, wait, XP_JOB_MAX_DEPS) : 0;
	if (nw) { /* held by depends_on: the cycle does not try it yet */
		struct xp_sb sb;
		json_t *a = json_array();
		xp_sb_init(&sb);
		xp_sb_puts(&sb, "waiting for job");
		for (size_t i = 0; i < nw; i++) {
			json_array_append_new(a, json_integer((json_int_t)wait[i]));
			xp_sb_printf(&sb, "%s %llu",
				     i	      ? ","
				     : nw > 1 ? "s"
					      : "",
				     (unsigned long long)wait[i]);
		}
		json_object_set_new(o, "waiting_on", a);
		if (!j->reason)
			json_object_set_new(o, "reason", json_string(sb.s));
		xp_sb_free(&sb);
	}
	if (j->state == XP_JOB_PENDING) { /* squeue's REASON: what holds it first */
		struct xp_pending pd;
		xp_state_pending(ctl->st, j, &pd);
		json_object_set_new(o, "pending_reason", json_string(xp_pend_name(pd.code)));
		json_object_set_new(o, "pending_detail", json_string(pd.detail));
		if (j->held)
			json_object_set_new(o, "held", json_string(xp_hold_name(j->held)));
		if (!j->reason && !nw)
			json_object_set_new(o, "reason", json_string(pd.detail));
	}
	return o;
}

/* the job, if it exists and the asker may see it; else a 404 reply */
struct xp_job *xp_api_visible_job(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_job *j = xp_state_job(ctl->st, cmd->id);
	/* one answer for absent, forgotten and another tenant's: the text
	 * tells none of them from the others */
	if (!j || (!cmd->admin && (long)j->tenant != cmd->tenant)) {
		xp_reply_error(cmd, XP_ENOENT, NULL,
			       "no job %llu (finished jobs are kept for %lld s, at most %llu of "
			       "them)",
			       (unsigned long long)cmd->id, (long long)ctl->o.keep_finished_ms / 1000,
			       (unsigned long long)ctl->o.max_finished);
		return NULL;
	}
	return j;
}

static int list_limit(struct xp_cmd *cmd, size_t *limit)
{
	const char *l = xp_cmd_query(cmd, "limit");
	int64_t v = 100;
	if (l && xp_parse_i64(l, 1, 1000, &v) < 0) {
		xp_reply_error(cmd, XP_EINVAL, "limit",
			       "limit: expected an integer 1..1000, got '%s'", l);
		return -1;
	}
	*limit = (size_t)v;
	return 0;
}

void xp_api_jobs_list(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	const char *qs = xp_cmd_query(cmd, "state"), *qq = xp_cmd_query(cmd, "queue"),
		   *qn = xp_cmd_query(cmd, "name"), *qt = xp_cmd_query(cmd, "tenant"),
		   *qa = xp_cmd_query(cmd, "after"), *qw = xp_cmd_query(cmd, "workflow");
	unsigned states = 0;
	long queue = -1, tenant = cmd->admin ? -1 : cmd->tenant;
	int64_t after = 0;
	size_t limit;

	if (list_limit(cmd, &limit) < 0)
		return;
	if (qa && xp_parse_i64(qa, 0, INT64_MAX, &after) < 0)
		FAIL(cmd, XP_EINVAL, "after", "after: expected a job id, got '%s'", qa);
	if (qs) {
		const char *p = qs;
		while (*p) {
			char word[32];
			size_t n = strcspn(p, ",");
			snprintf(word, sizeof(word), "%.*s", (int)(n < 31 ? n : 31), p);
			int s = xp_job_state_parse(word);
			if (s < 0)
				FAIL(cmd, XP_EINVAL, "state",
				     "state: unknown job state '%s' (pending, "
				     "running, succeeded, failed, cancelled)",
				     word);
			states |= 1u << s;
			p += n + (p[n] == ',');
		}
	}
	if (qq && (queue = xp_state_queue(st, qq)) < 0)
		FAIL(cmd, XP_ENOENT, "queue", "no queue %s", qq);
	if (qt) {
		if (!cmd->admin)
			FAIL(cmd, XP_EPERM, "tenant",
			     "only admin tokens may list other tenants' jobs");
		if ((tenant = xp_state_tenant(st, qt)) < 0)
			FAIL(cmd, XP_ENOENT, "tenant", "no tenant %s", qt);
	}
	/* jobs are in id order: start after the cursor */
	size_t lo = 0, hi = st->jobs.n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (st->jobs.v[mid]->id <= (uint64_t)after)
			lo = mid + 1;
		else
			hi = mid;
	}
	json_t *arr = json_array();
	uint64_t last = 0;
	size_t found = 0, i;
#define JOB_MATCHES(j)                                                                             \
	(!((tenant >= 0 && (long)(j)->tenant != tenant) ||                                         \
	   (states && !(states & (1u << (j)->state))) ||                                           \
	   (queue >= 0 && (long)(j)->queue != queue) ||                                            \
	   (qn && (!(j)->spec.name || strcmp((j)->spec.name, qn))) ||                              \
	   (qw && (!(j)->spec.workflow || strcmp((j)->spec.workflow, qw)))))
	const char *qnew = xp_cmd_query(cmd, "newest");
	if (qnew && !strcmp(qnew, "1")) { /* the newest page, still oldest first */
		size_t k = st->jobs.n, first = st->jobs.n;
		while (k > lo && found < limit) {
			k--;
			if (JOB_MATCHES(st->jobs.v[k])) {
				first = k;
				found++;
			}
		}
		size_t older = 0;
		while (k > lo && !older) /* is there one more before them? */
			older = JOB_MATCHES(st->jobs.v[k - 1]), k--;
		for (i = first; i < st->jobs.n; i++)
			if (JOB_MATCHES(st->jobs.v[i]))
				json_array_append_new(arr, xp_api_job_json(ctl, st->jobs.v[i]));
		json_t *o = json_pack("{s:o,s:o,s:b}", "jobs", arr, "next", json_null(), "older",
				      (int)older);
		xp_reply_json(cmd, 200, xp_json_take(o));
		return;
	}
	for (i = lo; i < st->jobs.n && found < limit; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (!JOB_MATCHES(j))
			continue;
		json_array_append_new(arr, xp_api_job_json(ctl, j));
		last = j->id;
		found++;
	}
#undef JOB_MATCHES
	json_t *o = json_pack("{s:o}", "jobs", arr);
	json_object_set_new(o, "next",
			    found == limit && i < st->jobs.n ? json_integer((json_int_t)last)
							     : json_null());
	xp_reply_json(cmd, 200, xp_json_take(o));
}

int xp_api_submit_check(struct xp_ctl *ctl, struct xp_cmd *cmd, struct xp_jobspec *spec,
			const char *at, long *tenant)
{
	struct xp_state *st = ctl->st;
	char f[320];
	*tenant = cmd->tenant;
	if (spec->tenant) {
		long t = xp_state_tenant(st, spec->tenant);
		snprintf(f, sizeof(f), "%stenant", at);
		if (!cmd->admin && t != cmd->tenant)
			return xp_reply_error(cmd, XP_EPERM, f,
					      "%s: only admin tokens may submit for another tenant",
					      f),
			       -1;
		if (t < 0)
			return xp_reply_error(cmd, XP_ENOENT, f, "%s: no tenant %s", f,
					      spec->tenant),
			       -1;
		*tenant = t;
	}
	if (spec->node && xp_state_node(st, spec->node) < 0) {
		snprintf(f, sizeof(f), "%snode", at);
		return xp_reply_error(cmd, XP_ENOENT, f, "%s: no node %s", f, spec->node), -1;
	}
	const char *q = spec->queue ? spec->queue : "default";
	long qi = xp_state_queue(st, q);
	snprintf(f, sizeof(f), "%squeue", at);
	if (qi < 0)
		return xp_reply_error(cmd, XP_ENOENT, f, "%s: no queue %s", f, q), -1;
	if (!xp_queue_is_leaf(st, (uint32_t)qi))
		return xp_reply_error(cmd, XP_EINVAL, f,
				      "%s: queue %s has child queues; jobs go to one of them", f,
				      q),
		       -1;
	if (!xp_queue_allows(st, (uint32_t)qi, st->tenants.v[*tenant].name))
		return xp_reply_error(cmd, XP_EPERM, f,
				      "%s: tenant %s may not use queue %s (its allow list, set by "
				      "an admin, leaves it out)",
				      f, st->tenants.v[*tenant].name, q),
		       -1;
	if (!spec->hold_for_nodes) { /* Slurm: "Requested node configuration is not available" */
		struct xp_err e = { 0 };
		char pf[320];
		if (xp_state_possible(st, spec, pf, &e) < 0) {
			snprintf(f, sizeof(f), "%s%s", at, pf);
			return xp_reply_error(cmd, e.code, f,
					      "%s%s; hold_for_nodes: true (--hold-for-nodes) keeps "
					      "it pending for nodes yet to join",
					      at, e.text),
			       -1;
		}
	}
	return 0;
}

void xp_api_jobs_submit(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	struct xp_jobspec *spec = cmd->payload;
	struct xp_err err = { 0 };
	long tenant;

	if (xp_api_submit_check(ctl, cmd, spec, "", &tenant) < 0)
		return;
	if (cmd->idem_key) {
		uint64_t id = xp_state_job_by_key(st, (uint32_t)tenant, cmd->idem_key);
		const struct xp_job *j = id ? xp_state_job(st, id) : NULL;
		if (j && j->key_hash != xp_jobspec_hash(spec))
			FAIL(cmd, XP_EEXIST, "Idempotency-Key",
			     "Idempotency-Key: already used for a different request (job %llu); a "
			     "retry must send the same body",
			     (unsigned long long)id);
		if (j)
			DONE_JSON(cmd, 200, xp_json_take(xp_api_job_json(ctl, j)));
	}
	uint64_t id = st->next_job_id;
	if (xp_ctl_journal_submit(ctl, id, st->tenants.v[tenant].name, cmd->idem_key, spec, &err) <
	    0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_reply_json(cmd, 201, xp_json_take(xp_api_job_json(ctl, xp_state_job(st, id))));
}

void xp_api_job_get(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_job *j = xp_api_visible_job(ctl, cmd);
	if (j)
		xp_reply_json(cmd, 200, xp_json_take(xp_api_job_json(ctl, j)));
}

void xp_api_job_cancel(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_err err = { 0 };
	struct xp_job *j = xp_api_visible_job(ctl, cmd);
	if (!j)
		return;
	if (xp_job_terminal(j->state))
		FAIL(cmd, XP_ESTATE, NULL, "job %llu is already %s", (unsigned long long)j->id,
		     xp_job_state_name(j->state));
	if (xp_ctl_journal(ctl, "job.cancel", xp_rec_job_cancel(j->id, "cancelled by request"),
			   &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_reply_json(cmd, 200, xp_json_take(xp_api_job_json(ctl, j)));
}

/* the pending job id names, if the asker may see it; else a reply */
static struct xp_job *pending_visible(struct xp_ctl *ctl, struct xp_cmd *cmd, const char *what)
{
	struct xp_job *j = xp_api_visible_job(ctl, cmd);
	if (j && j->state != XP_JOB_PENDING) {
		xp_reply_error(cmd, XP_ESTATE, NULL, "job %llu is %s: only a pending job %s",
			       (unsigned long long)j->id, xp_job_state_name(j->state), what);
		return NULL;
	}
	return j;
}

static void journal_job(struct xp_ctl *ctl, struct xp_cmd *cmd, struct xp_job *j,
			const char *type, char *body)
{
	struct xp_err err = { 0 };
	if (xp_ctl_journal(ctl, type, body, &err) < 0)
		FAIL_ERR(cmd, &err, NULL);
	cmd->journaled = 1;
	xp_reply_json(cmd, 200, xp_json_take(xp_api_job_json(ctl, j)));
}

/* Slurm's scontrol hold: a tenant's hold, or an admin's (which only an
 * admin releases); holding a held job again changes nothing but raises a
 * tenant's hold to an admin's */
void xp_api_job_hold(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_job *j = pending_visible(ctl, cmd, "is held");
	int h = cmd->admin ? XP_HOLD_ADMIN : XP_HOLD_USER;
	if (!j)
		return;
	if (j->held >= h)
		DONE_JSON(cmd, 200, xp_json_take(xp_api_job_json(ctl, j)));
	journal_job(ctl, cmd, j, "job.hold", xp_rec_job_hold(j->id, h));
}

void xp_api_job_release(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_job *j = pending_visible(ctl, cmd, "is released");
	if (!j)
		return;
	if (!j->held)
		FAIL(cmd, XP_ESTATE, NULL, "job %llu is not held", (unsigned long long)j->id);
	if (j->held == XP_HOLD_ADMIN && !cmd->admin)
		FAIL(cmd, XP_EPERM, NULL, "job %llu is held by an admin: only an admin releases it",
		     (unsigned long long)j->id);
	journal_job(ctl, cmd, j, "job.hold", xp_rec_job_hold(j->id, XP_HOLD_NONE));
}

/* scontrol update of a pending job: name, priority, queue, time limit
 * (parsed at the edge); a new queue is checked as at submit */
void xp_api_job_update(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	const struct xp_jobpatch *p = cmd->payload;
	struct xp_job *j = pending_visible(ctl, cmd, "changes");
	if (!j)
		return;
	if (p->set & XP_JP_QUEUE) {
		long qi = xp_state_queue(st, p->queue);
		const char *tn = st->tenants.v[j->tenant].name;
		if (qi < 0)
			FAIL(cmd, XP_ENOENT, "queue", "queue: no queue %s", p->queue);
		if (!xp_queue_is_leaf(st, (uint32_t)qi))
			FAIL(cmd, XP_EINVAL, "queue",
			     "queue: queue %s has child queues; jobs go to one of them", p->queue);
		if (!xp_queue_allows(st, (uint32_t)qi, tn))
			FAIL(cmd, XP_EPERM, "queue",
			     "queue: tenant %s may not use queue %s (its allow list, set by an "
			     "admin, leaves it out)",
			     tn, p->queue);
	}
	journal_job(ctl, cmd, j, "job.update", xp_rec_job_update(j->id, p));
}

/* quota and preemption, after placement's reasons */
static void explain_admission(struct xp_ctl *ctl, const struct xp_job *j, json_t *o,
			      struct xp_sb *sum)
{
	struct xp_admission ad;
	xp_state_admission(ctl->st, j, &ad);
	if (ad.quota_blocked) {
		char used[32], max[32], need[32];
		const char *qn = ctl->st->queues.v[ad.where].name, *rn = xp_res_name(ad.res);
		xp_res_format(ad.res, ad.used, used, sizeof(used));
		xp_res_format(ad.res, ad.max, max, sizeof(max));
		xp_res_format(ad.res, ad.need, need, sizeof(need));
		json_object_set_new(o, "quota_blocked", json_true());
		json_object_set_new(o, "quota",
				    json_pack("{s:s,s:s,s:s,s:s,s:s}", "queue", qn, "resource", rn,
					      "used", used, "max", max, "needs", need));
		/* the quota is the answer: placement would not be tried */
		xp_sb_free(sum);
		xp_sb_init(sum);
		xp_sb_printf(sum,
			     "queue %s is at its max of %s: it uses %s of %s, the job needs %s", qn,
			     rn, used, max, need);
	} else if (ad.nshrinks) { /* elastic jobs give back their spare replicas */
		json_t *v = json_array();
		for (size_t i = 0; i < ad.nshrinks; i++)
			json_array_append_new(v, json_integer((json_int_t)ad.shrinks[i]));
		json_object_set_new(o, "would_shrink", v);
		xp_sb_printf(sum, "; it would shrink %zu elastic job%s at the next cycle",
			     ad.nshrinks, ad.nshrinks == 1 ? "" : "s");
	} else if (ad.nvictims) {
		json_t *v = json_array();
		for (size_t i = 0; i < ad.nvictims; i++)
			json_array_append_new(v, json_integer((json_int_t)ad.victims[i]));
		json_object_set_new(o, "would_preempt", v);
		xp_sb_printf(sum, "; it would preempt %zu job%s at the next cycle", ad.nvictims,
			     ad.nvictims == 1 ? "" : "s");
	} else if (ad.why_not[0] && ad.preempt_considered) {
		json_object_set_new(o, "cannot_preempt", json_string(ad.why_not));
		xp_sb_printf(sum, "; it cannot preempt: %s", ad.why_not);
	}
	if (ad.reserved) { /* backfill keeps room for it */
		char ts[XP_TIME_LEN];
		xp_time_format(ad.resv_at, ts);
		json_object_set_new(o, "reserved_from", json_string(ts));
		xp_sb_printf(sum, "; it holds a reservation: later jobs may not delay it past %s",
			     ts);
	}
	xp_admission_free(&ad);
}

/* where it could go: per filter, how many nodes refuse it and why */
static void explain_placement(struct xp_ctl *ctl, const struct xp_job *j, json_t *o,
			      struct xp_sb *sum, int *fits)
{
	struct xp_explain ex;
	json_t *rs = json_array();
	uint32_t total = 0;
	xp_state_explain(ctl->st, j, &ex, fits);
	for (int w = XP_WHY_DOWN; w < XP_WHY_N; w++) {
		if (!ex.nodes[w])
			continue;
		json_t *r = json_pack("{s:s,s:i}", "reason", xp_why_name(w), "nodes",
				      (int)ex.nodes[w]);
		if (w == XP_WHY_CPU)
			json_object_set_new(r, "short_by_milli",
					    json_integer((json_int_t)ex.cpu_short_min));
		if (w == XP_WHY_MEM)
			json_object_set_new(r, "short_by_mib",
					    json_integer((json_int_t)ex.mem_short_min));
		json_array_append_new(rs, r);
	}
	for (int w = 0; w < XP_WHY_N; w++)
		total += ex.nodes[w];
	xp_explain_summary(&ex, *fits, j->spec.replicas, sum);
	if (!*fits) /* a MIG mode change it waits for, or why none is made */
		xp_migmode_explain(ctl->st, j, xp_ctl_now(), sum);
	json_object_set_new(o, "reasons", rs);
	json_object_set_new(o, "nodes", json_integer(total));
}

static void explain_elastic(const struct xp_job *j, json_t *o, struct xp_sb *sum)
{
	xp_sb_printf(sum, "; %u of %u..%u replicas, epoch %u, %u resize%s", j->spec.replicas,
		     j->spec.rmin, j->spec.rmax, j->epoch, j->resizes, j->resizes == 1 ? "" : "s");
	if (j->resize_why)
		xp_sb_printf(sum, "; last: %s", j->resize_why);
	json_object_set_new(o, "elastic", elastic_json(j));
}

void xp_api_job_explain(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_job *j = xp_api_visible_job(ctl, cmd);
	struct xp_pending pd;
	struct xp_sb sum;
	int fits = 0;

	if (!j)
		return;
	json_t *o = json_pack("{s:I,s:s}", "id", (json_int_t)j->id, "state",
			      xp_job_state_name(j->state));
	xp_sb_init(&sum);
	xp_state_pending(ctl->st, j, &pd);
	if (j->state != XP_JOB_PENDING) {
		xp_sb_printf(&sum, "job %llu is %s, not waiting", (unsigned long long)j->id,
			     xp_job_state_name(j->state));
		if (xp_job_elastic(j)) /* elastic: its size and why it has it */
			explain_elastic(j, o, &sum);
		json_object_set_new(o, "reasons", json_array());
	} else if (pd.code == XP_PEND_HELD || pd.code == XP_PEND_DEPENDENCY ||
		   pd.code == XP_PEND_DEP_NEVER) { /* placement is not the question yet */
		json_object_set_new(o, "reasons", json_array());
		if (pd.code == XP_PEND_HELD)
			xp_sb_printf(&sum, "it is %s", pd.detail);
		else if (pd.code == XP_PEND_DEP_NEVER)
			xp_sb_puts(&sum, pd.detail);
		else
			xp_sb_printf(&sum, "it waits for %u job%s it depends on (%s)", j->unmet,
				     j->unmet == 1 ? "" : "s", pd.detail);
		if (j->unmet) {
			uint64_t w[XP_JOB_MAX_DEPS];
			size_t nw = xp_deps_waiting(ctl->st, j, w, XP_JOB_MAX_DEPS);
			json_t *a = json_array();
			for (size_t i = 0; i < nw; i++)
				json_array_append_new(a, json_integer((json_int_t)w[i]));
			json_object_set_new(o, "waiting_on", a);
		}
	} else {
		explain_placement(ctl, j, o, &sum, &fits);
		explain_admission(ctl, j, o, &sum);
		if (json_is_true(json_object_get(o, "quota_blocked")))
			fits = 0;
	}
	if (j->state == XP_JOB_PENDING) {
		json_object_set_new(o, "pending_reason", json_string(xp_pend_name(pd.code)));
		json_object_set_new(o, "pending_detail", json_string(pd.detail));
		if (pd.code == XP_PEND_SEARCH) /* the batch search placed these instead */
			json_object_set_new(o, "search",
					    json_pack("{s:I,s:I}", "placed_instead",
						      (json_int_t)j->search_ahead, "first",
						      (json_int_t)j->search_first));
	}
	json_object_set_new(o, "fits_now", json_boolean(fits));
	json_object_set_new(o, "summary", json_string(sum.s));
	xp_sb_free(&sum);
	xp_reply_json(cmd, 200, xp_json_take(o));
}

void xp_api_job_logs(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_job *j = xp_api_visible_job(ctl, cmd);
	struct xp_sb sb;
	char ts[XP_TIME_LEN];

	if (!j)
		return;
	if (!j->allocs)
		FAIL(cmd, XP_ENOENT, NULL, "job %llu has not started: no logs yet",
		     (unsigned long long)j->id);
	if (ctl->st->nodes.v[j->allocs[0].node].source == XP_SRC_AGENT) { /* uploaded output */
		const char *qs = xp_cmd_query(cmd, "stream");
		if (qs && strcmp(qs, "stdout") && strcmp(qs, "stderr"))
			FAIL(cmd, XP_EINVAL, "stream", "stream: expected stdout or stderr");
		/* the worker reads the files (http.c): up to 64 MiB a replica
		 * must not be read or copied on the owner thread */
		struct xp_logparts *lp = XNEW(struct xp_logparts);
		lp->n = j->spec.replicas;
		lp->v = XNEWV(struct xp_logpart, lp->n);
		for (uint32_t r = 0; r < j->spec.replicas; r++) {
			xp_log_path(ctl, j->id, r, qs && !strcmp(qs, "stderr"), lp->v[r].path,
				    sizeof(lp->v[r].path));
			lp->v[r].header[0] = '\0';
			if (j->spec.replicas > 1)
				snprintf(lp->v[r].header, sizeof(lp->v[r].header),
					 "==> replica %u on %s <==\n", r,
					 ctl->st->c->nodes[j->allocs[r].node].name);
		}
		cmd->logs = lp;
		xp_reply_text(cmd, 200, "text/plain; charset=utf-8", xstrdup(""));
		return;
	}
	xp_sb_init(&sb);
	for (uint32_t r = 0; r < j->spec.replicas; r++) {
		const struct xp_alloc *a = &j->allocs[r];
		const struct xp_node *n = &ctl->st->c->nodes[a->node];
		xp_time_format(j->started_at, ts);
		xp_sb_printf(&sb, "%s [xpool emulator] replica %u started on %s", ts, r, n->name);
		if (a->ndev) {
			xp_sb_puts(&sb, " devices");
			for (uint16_t i = 0; i < a->ndev; i++)
				xp_sb_printf(&sb, "%s%u", i ? "," : " ", a->devs[i]);
		}
		xp_sb_puts(&sb, "\n");
		xp_sb_printf(&sb, "%s [xpool emulator] command:", ts);
		for (uint16_t i = 0; i < j->spec.ncommand; i++)
			xp_sb_printf(&sb, " %s", j->spec.command[i]);
		for (uint16_t i = 0; i < j->spec.nargs; i++)
			xp_sb_printf(&sb, " %s", j->spec.args[i]);
		xp_sb_puts(&sb, j->spec.ncommand ? "\n" : " (none)\n");
	}
	if (j->finished_at) {
		xp_time_format(j->finished_at, ts);
		xp_sb_printf(&sb, "%s [xpool emulator] %s", ts, xp_job_state_name(j->state));
		if (j->has_exit)
			xp_sb_printf(&sb, " with exit code %d", j->exit_code);
		if (j->end && j->reason)
			xp_sb_printf(&sb, " (%s)", j->reason);
		xp_sb_puts(&sb, "\n");
	}
	xp_reply_text(cmd, 200, "text/plain; charset=utf-8", xp_sb_steal(&sb));
}
