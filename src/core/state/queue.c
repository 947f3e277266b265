/*
 * queue: the queue tree, quotas, usage and shares (docs/design/tenancy.md).
 *
 * Usage is derived: the demand of running jobs, charged to the job's leaf
 * queue and every ancestor (a queue's usage covers its subtree) and to the
 * job's tenant, when the job starts, and discharged when it stops running.
 * xp_usage_check() recomputes it from the jobs to catch a drift.
 */
#include "state_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/xalloc.h"
#include "../model/mig.h"

void xp_queue_spec(const struct xp_state *st, const struct xp_queue *q, struct xp_queuespec *out)
{
	xp_queuespec_init(out);
	snprintf(out->name, sizeof(out->name), "%s", q->name);
	if (q->parent >= 0)
		snprintf(out->parent, sizeof(out->parent), "%s", st->queues.v[q->parent].name);
	out->priority = q->priority;
	out->weight = q->weight;
	out->preempt = q->preempt;
	out->aging_ms = q->aging_ms;
	memcpy(out->guarantee, q->guarantee, sizeof(out->guarantee));
	memcpy(out->max, q->max, sizeof(out->max));
	out->nallow = q->nallow;
	for (uint8_t i = 0; i < q->nallow; i++)
		snprintf(out->allow[i], sizeof(out->allow[i]), "%s", q->allow[i]);
}

int xp_queue_allows(const struct xp_state *st, uint32_t q, const char *tenant)
{
	if (!strcmp(tenant, "admin"))
		return 1;
	for (int32_t i = (int32_t)q; i >= 0; i = st->queues.v[i].parent) {
		const struct xp_queue *qu = &st->queues.v[i];
		int ok = qu->nallow == 0;
		for (uint8_t k = 0; !ok && k < qu->nallow; k++)
			ok = !strcmp(qu->allow[k], tenant);
		if (!ok)
			return 0;
	}
	return 1;
}

int xp_queue_is_leaf(const struct xp_state *st, uint32_t q)
{
	return st->queues.v[q].children == 0;
}

/* The guarantees of q's children (skip: one to leave out) within q's own,
 * with extra (may be NULL) added; -1 and *res when not. */
static int children_fit(const struct xp_state *st, long q, long skip, const uint64_t *extra,
			const uint64_t *own, int *res)
{
	uint64_t sum[XP_RES_N] = { 0 };
	for (size_t i = 0; i < st->queues.n; i++) {
		const struct xp_queue *c = &st->queues.v[i];
		if (c->deleted || c->parent != q || (long)i == skip)
			continue;
		for (int r = 0; r < XP_RES_N; r++)
			sum[r] += c->guarantee[r];
	}
	for (int r = 0; r < XP_RES_N; r++)
		if (sum[r] + (extra ? extra[r] : 0) > own[r]) {
			*res = r;
			return -1;
		}
	return 0;
}

int xp_queue_define(struct xp_state *st, const struct xp_queuespec *def, int update,
		    struct xp_event_info *ev, struct xp_err *err)
{
	const struct xp_queuespec s = *def;
	int res;
	char a[32], b[32];

	long q = xp_state_queue(st, s.name), parent = -1;
	if (update && q < 0)
		return xp_errf(err, XP_ENOENT, "no queue %s", s.name);
	if (!update && q >= 0)
		return xp_errf(err, XP_EEXIST, "queue %s already exists", s.name);
	if (s.parent[0]) {
		parent = xp_state_queue(st, s.parent);
		if (parent < 0)
			return xp_errf(err, XP_ENOENT, "no parent queue %s", s.parent);
		const struct xp_queue *p = &st->queues.v[parent];
		if (!update && (p->pending || p->running))
			return xp_errf(err, XP_ESTATE,
				       "queue %s has jobs (%u pending, %u running): a queue with "
				       "children takes no jobs",
				       s.parent, p->pending, p->running);
		if (children_fit(st, parent, q, s.guarantee, p->guarantee, &res) < 0) {
			xp_res_format(res, p->guarantee[res], a, sizeof(a));
			return xp_errf(err, XP_EINVAL,
				       "quota.%s.guarantee: the guarantees under %s would add up "
				       "to more than its own (%s)",
				       xp_res_name(res), s.parent, a);
		}
	}
	if (s.nallow && !strcmp(s.name, "default"))
		return xp_errf(err, XP_EINVAL,
			       "allow: the default queue stays open to every tenant");
	if (update) {
		struct xp_queue *cur = &st->queues.v[q];
		if (parent != cur->parent)
			return xp_errf(err, XP_EINVAL,
				       "parent: a queue cannot move (delete and create it again)");
		if (children_fit(st, q, -1, NULL, s.guarantee, &res) < 0) {
			xp_res_format(res, s.guarantee[res], a, sizeof(a));
			return xp_errf(err, XP_EINVAL,
				       "quota.%s.guarantee: %s is below what its child queues are "
				       "guaranteed together",
				       xp_res_name(res), a);
		}
		(void)b;
	}
	struct xp_queue nq, *p;
	if (update) {
		p = &st->queues.v[q];
	} else {
		memset(&nq, 0, sizeof(nq));
		nq.name = xstrdup(s.name);
		nq.parent = (int32_t)parent;
		xp_vec_push(&st->queues, nq);
		p = &st->queues.v[st->queues.n - 1];
		if (parent >= 0)
			st->queues.v[parent].children++;
	}
	p->priority = s.priority;
	p->weight = s.weight;
	p->preempt = s.preempt;
	p->aging_ms = s.aging_ms;
	memcpy(p->guarantee, s.guarantee, sizeof(p->guarantee));
	memcpy(p->max, s.max, sizeof(p->max));
	free(p->allow);
	p->allow = NULL;
	p->nallow = s.nallow;
	if (s.nallow) {
		p->allow = xcalloc(s.nallow, sizeof(*p->allow));
		memcpy(p->allow, s.allow, s.nallow * sizeof(*p->allow));
	}
	st->cap_grew = 1; /* a raised max or guarantee may let jobs start */
	ev->type = update ? "queue.updated" : "queue.created";
	ev->tenant = -1;
	return 0;
}

int xp_queue_delete(struct xp_state *st, const char *name, struct xp_event_info *ev,
		    struct xp_err *err)
{
	long q = xp_state_queue(st, name);
	if (q < 0)
		return xp_errf(err, XP_ENOENT, "no queue %s", name);
	struct xp_queue *p = &st->queues.v[q];
	if (p->pending || p->running)
		return xp_errf(err, XP_ESTATE, "queue %s still has %u pending and %u running jobs",
			       name, p->pending, p->running);
	if (p->children)
		return xp_errf(err, XP_ESTATE, "queue %s still has %u child queues", name,
			       p->children);
	p->deleted = 1;
	if (p->parent >= 0)
		st->queues.v[p->parent].children--;
	ev->type = "queue.deleted";
	ev->tenant = -1;
	return 0;
}

/* ---- demand, usage, capacity ---- */

void xp_demand_of(const struct xp_state *st, const struct xp_alloc *a, uint32_t n,
		  uint64_t out[XP_RES_N])
{
	memset(out, 0, sizeof(uint64_t) * XP_RES_N);
	for (uint32_t i = 0; i < n; i++) {
		out[XP_RES_CPU] += a[i].cpu_milli;
		out[XP_RES_MEM] += a[i].mem_mib;
		const struct xp_node *node = &st->c->nodes[a[i].node];
		for (uint16_t d = 0; d < a[i].ndev; d++)
			out[XP_RES_DEV + node->devs[a[i].devs[d]].cls] += a[i].dev_milli;
	}
}

static void add_vec(uint64_t *to, const uint64_t *d, int sign)
{
	for (int r = 0; r < XP_RES_N; r++)
		to[r] = sign > 0 ? to[r] + d[r] : to[r] - d[r];
}

void xp_usage_charge(struct xp_state *st, const struct xp_job *j, int sign)
{
	uint64_t d[XP_RES_N];
	xp_demand_of(st, j->allocs, j->spec.replicas, d);
	for (int32_t q = (int32_t)j->queue; q >= 0; q = st->queues.v[q].parent)
		add_vec(st->queues.v[q].usage, d, sign);
	add_vec(st->tenants.v[j->tenant].usage, d, sign);
	if (j->spec.qos == XP_QOS_BEST_EFFORT)
		st->be_running += sign;
	if (j->spec.time_limit_ms)
		st->limited_running += sign;
}

/* usage of every queue and tenant from the running jobs, into qu / tu */
static void usage_compute(const struct xp_state *st, uint64_t *qu, uint64_t *tu)
{
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		if (j->state != XP_JOB_RUNNING)
			continue;
		uint64_t d[XP_RES_N];
		xp_demand_of(st, j->allocs, j->spec.replicas, d);
		for (int32_t q = (int32_t)j->queue; q >= 0; q = st->queues.v[q].parent)
			add_vec(qu + (size_t)q * XP_RES_N, d, 1);
		add_vec(tu + (size_t)j->tenant * XP_RES_N, d, 1);
	}
}

int xp_usage_check(const struct xp_state *st, struct xp_err *err)
{
	uint64_t *qu = xcalloc(st->queues.n + 1, sizeof(uint64_t) * XP_RES_N);
	uint64_t *tu = xcalloc(st->tenants.n + 1, sizeof(uint64_t) * XP_RES_N);
	int rc = 0;
	usage_compute(st, qu, tu);
	for (size_t q = 0; rc == 0 && q < st->queues.n; q++)
		for (int r = 0; rc == 0 && r < XP_RES_N; r++)
			if (qu[q * XP_RES_N + r] != st->queues.v[q].usage[r])
				rc = xp_errf(err, XP_EINTERNAL,
					     "queue %s: %s usage %llu, running jobs hold %llu",
					     st->queues.v[q].name, xp_res_name(r),
					     (unsigned long long)st->queues.v[q].usage[r],
					     (unsigned long long)qu[q * XP_RES_N + r]);
	for (size_t t = 0; rc == 0 && t < st->tenants.n; t++)
		for (int r = 0; rc == 0 && r < XP_RES_N; r++)
			if (tu[t * XP_RES_N + r] != st->tenants.v[t].usage[r])
				rc = xp_errf(err, XP_EINTERNAL, "tenant %s: %s usage drifted",
					     st->tenants.v[t].name, xp_res_name(r));
	long be = 0, lim = 0;
	for (size_t i = 0; i < st->jobs.n; i++) {
		const struct xp_job *j = st->jobs.v[i];
		be += j->state == XP_JOB_RUNNING && j->spec.qos == XP_QOS_BEST_EFFORT;
		lim += j->state == XP_JOB_RUNNING && j->spec.time_limit_ms;
	}
	if (rc == 0 && lim != st->limited_running)
		rc = xp_errf(err, XP_EINTERNAL,
			     "%ld jobs with a time limit counted running, %ld are",
			     st->limited_running, lim);
	if (rc == 0 && be != st->be_running)
		rc = xp_errf(err, XP_EINTERNAL, "%ld best-effort jobs counted running, %ld are",
			     st->be_running, be);
	/* a child queue never has children's guarantees beyond its own */
	for (size_t q = 0; rc == 0 && q < st->queues.n; q++) {
		int res;
		const struct xp_queue *p = &st->queues.v[q];
		if (!p->deleted && p->children &&
		    children_fit(st, (long)q, -1, NULL, p->guarantee, &res) < 0)
			rc = xp_errf(err, XP_EINTERNAL, "queue %s: children guarantee more %s",
				     p->name, xp_res_name(res));
	}
	free(qu);
	free(tu);
	return rc;
}

void xp_capacity_node(struct xp_state *st, uint32_t n, int sign)
{
	const struct xp_node *node = &st->c->nodes[n];
	uint64_t d[XP_RES_N] = { 0 };
	d[XP_RES_CPU] = node->cpu_milli;
	d[XP_RES_MEM] = node->mem_mib;
	for (uint16_t i = 0; i < node->ndevs; i++)
		d[XP_RES_DEV + node->devs[i].cls] += XP_MILLI;
	add_vec(st->capacity, d, sign);
}

/* ---- admission and shares ---- */

int xp_queue_admits(const struct xp_state *st, uint32_t q, const uint64_t d[XP_RES_N],
		    uint32_t *where, int *res)
{
	for (int32_t a = (int32_t)q; a >= 0; a = st->queues.v[a].parent) {
		const struct xp_queue *p = &st->queues.v[a];
		for (int r = 0; r < XP_RES_N; r++)
			if (d[r] &&
			    (p->max[r] == XP_QUOTA_NONE ? 0 : p->usage[r] + d[r] > p->max[r])) {
				if (where)
					*where = (uint32_t)a;
				if (res)
					*res = r;
				return XP_ENOSPC;
			}
	}
	return 0;
}

static double dominant(const struct xp_state *st, const uint64_t *u)
{
	double m = 0;
	for (int r = 0; r < XP_RES_N; r++)
		if (st->capacity[r] && u[r]) {
			double s = (double)u[r] / (double)st->capacity[r];
			if (s > m)
				m = s;
		}
	return m;
}

double xp_queue_share(const struct xp_state *st, uint32_t q)
{
	return dominant(st, st->queues.v[q].usage) / st->queues.v[q].weight;
}

double xp_tenant_share(const struct xp_state *st, uint32_t t)
{
	return dominant(st, st->tenants.v[t].usage);
}

void xp_request_demand(const struct xp_state *st, const struct xp_job *j, uint64_t d[XP_RES_N])
{
	(void)st;
	uint64_t n = j->spec.replicas;
	memset(d, 0, sizeof(uint64_t) * XP_RES_N);
	d[XP_RES_CPU] = j->req.cpu_milli * n;
	d[XP_RES_MEM] = j->req.mem_mib * n;
	/* a share sized by memory is known once placed (xp_demand_of): count
	 * it at its least here, so this pre-check never refuses what fits */
	uint64_t milli = j->req.by_mem ? 1 : j->req.dev_milli;
	if (j->req.mig_any) /* mig: any takes at least the compute slices that cover it */
		milli = xp_mig_slices_for(j->req.dev_milli) * XP_MILLI / XP_MIG_COMPUTE_SLICES;
	if (j->req.dev_count && j->req.sel.cls >= 0)
		d[XP_RES_DEV + j->req.sel.cls] = (uint64_t)j->req.dev_count * milli * n;
}
