/*
 * migmode: MIG mode changes with the admin's leave (migmode.h has the
 * design and the state diagram; docs/design/mig.md "MIG mode changes").
 *
 * Notes on the non-obvious:
 *  - A GPU is a candidate only when it is wholly idle as the controller
 *    knows it (no allocation of any kind on it, so no vGPU share either)
 *    and offers the job's profile through its partitions (what NVML
 *    discovery read, in any mode). Processes outside xpool are NVML's to
 *    judge: nvmlDeviceSetMigMode refuses with IN_USE, and the refusal is
 *    journaled and shown.
 *  - Only agent nodes: an emulated node has nothing to change.
 *  - One reservation per node at a time; a job gets more GPUs reserved
 *    only while the room it would have (free slices in MIG mode plus the
 *    slices the reserved GPUs will give) is short of its replicas.
 *  - The reserved GPU is marked not ok in the scheduler (as an unhealthy
 *    one), so nothing is placed on it; a release or a change rebuilds the
 *    scheduler (the device's mode and lattice change).
 */
#include "migmode.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../../lib/timefmt.h"
#include "../model/mig.h"
#include "../../lib/xalloc.h"
#include "rec.h"
#include "state_int.h"

const struct xp_migmode *xp_migmode_of(const struct xp_state *st, size_t n)
{
	return n < st->nodes.n ? st->nodes.v[n].mm : NULL;
}

static struct xp_migmode *mm_get(struct xp_state *st, size_t n)
{
	struct xp_nodeinfo *ni = &st->nodes.v[n];
	if (!ni->mm) {
		ni->mm = XNEW(struct xp_migmode);
		ni->mm->dev = -1;
		ni->mm->refused = -1;
	}
	return ni->mm;
}

void xp_migmode_node_gone(struct xp_state *st, size_t n)
{
	struct xp_nodeinfo *ni = &st->nodes.v[n];
	st->mm_held -= ni->mm && ni->mm->dev >= 0;
	st->mm_allowed -= ni->mig_leave;
	ni->mig_leave = 0;
	free(ni->mm);
	ni->mm = NULL;
}

/* Does any running replica hold device d of node n? */
static int dev_busy(const struct xp_state *st, size_t n, uint16_t d)
{
	const struct xp_nodeinfo *ni = &st->nodes.v[n];
	for (size_t i = 0; i < ni->run.n; i++) {
		const struct xp_alloc *a = &ni->run.v[i].job->allocs[ni->run.v[i].replica];
		for (uint16_t k = 0; k < a->ndev; k++)
			if (a->devs[k] == d)
				return 1;
	}
	return 0;
}

/* Could device d of node n, in MIG mode, take r's slices? How many on an
 * empty GPU (its partition's count), 0: it offers none; in any mode */
static unsigned profile_room(const struct xp_state *st, size_t n, uint16_t d,
			     const struct xp_request *r)
{
	const struct xp_device *dv = &st->c->nodes[n].devs[d];
	const char *name = r->mig_any ? NULL : xp_strtab_str(st->c->syms, r->mig);
	unsigned need = xp_mig_slices_for(r->dev_milli), best = 0;
	uint64_t best_mem = UINT64_MAX;
	if (dv->cls != XP_CLASS_GPU)
		return 0;
	for (uint16_t i = 0; i < dv->nparts; i++) {
		const struct xp_partition *p = &dv->parts[i];
		unsigned count = p->max_count ? p->max_count : 1;
		if (!p->name)
			continue;
		if (name && !strcasecmp(p->name, name))
			return count;
		if (!name && !strstr(p->name, "+me") && p->mem_mib >= r->dev_mem_mib &&
		    xp_mig_slices_for(p->compute_milli) >= need && p->mem_mib < best_mem) {
			best = count; /* the smallest that fits, as placement takes */
			best_mem = p->mem_mib;
		}
	}
	return best;
}

/* The same, only for a GPU with MIG mode off (one to switch on) */
static unsigned dev_offers(const struct xp_state *st, size_t n, uint16_t d,
			   const struct xp_request *r)
{
	return st->c->nodes[n].devs[d].mode == XP_MODE_MIG ? 0 : profile_room(st, n, d, r);
}

/* The state of device d of node n for a mode change for r (C_HOLD:
 * switched less than XP_MIGMODE_HOLD_MS ago; MIG off only: C_KEPT, it
 * holds a warm or an administrator's instance; C_MIGWAIT, a pending MIG
 * job could use it) */
enum cand { C_NONE, C_BUSY, C_KEPT, C_HOLD, C_MIGWAIT, C_REFUSED, C_DENIED, C_OK };

static int held_back(const struct xp_migmode *m, uint16_t d, int64_t now)
{
	return m && m->switched_at[d] && now < m->switched_at[d] + XP_MIGMODE_HOLD_MS;
}

static int candidate(const struct xp_state *st, size_t n, uint16_t d, const struct xp_request *r,
		     int64_t now, unsigned *room)
{
	const struct xp_nodeinfo *ni = &st->nodes.v[n];
	const struct xp_device *dv = &st->c->nodes[n].devs[d];
	*room = dev_offers(st, n, d, r);
	if (!*room || ni->removed || ni->source != XP_SRC_AGENT)
		return C_NONE;
	if (ni->state != XP_NODE_READY || dv->health == XP_HEALTH_UNHEALTHY || dev_busy(st, n, d) ||
	    (ni->mm && ni->mm->dev >= 0))
		return C_BUSY;
	if (!ni->mig_leave)
		return C_DENIED;
	if (held_back(ni->mm, d, now))
		return C_HOLD;
	if (ni->mm && now < ni->mm->refused_until[d])
		return C_REFUSED;
	return C_OK;
}

static int waits_for_mig(const struct xp_job *j);

/* Does a pending whole-GPU or fractional job j wait that device d of
 * node n, out of MIG mode, could serve? */
static int serves(const struct xp_state *st, size_t n, uint16_t d, const struct xp_job *j)
{
	const struct xp_device *dv = &st->c->nodes[n].devs[d];
	const struct xp_request *r = &j->req;
	return j->state == XP_JOB_PENDING && !r->mig && r->dev_count && !j->held && !j->unmet &&
	       dv->cls == XP_CLASS_GPU && xp_selector_match(&r->sel, dv) &&
	       (!r->dev_mem_mib || r->dev_mem_mib <= dv->mem_mib) &&
	       (r->node < 0 || (size_t)r->node == n);
}

/* Does a pending MIG job (of the first XP_MIGMODE_JOBS, as the planner
 * looks at) wait whose profile device d of node n offers? */
static int mig_waits_for(const struct xp_state *st, size_t n, uint16_t d)
{
	size_t looked = 0;
	for (size_t i = 0; i < st->pending.n && looked < XP_MIGMODE_JOBS; i++) {
		if (!waits_for_mig(st->pending.v[i]))
			continue;
		looked++;
		if (profile_room(st, n, d, &st->pending.v[i]->req))
			return 1;
	}
	return 0;
}

/* The state of device d of node n, in MIG mode, for switching it off for
 * j. live: the planner, which also reads the agent's instance hint (warm,
 * foreign); a record's apply reads journaled state only. */
static int candidate_off(const struct xp_state *st, size_t n, uint16_t d, const struct xp_job *j,
			 int64_t now, int live)
{
	const struct xp_nodeinfo *ni = &st->nodes.v[n];
	const struct xp_device *dv = &st->c->nodes[n].devs[d];
	if (dv->mode != XP_MODE_MIG || ni->removed || ni->source != XP_SRC_AGENT ||
	    !serves(st, n, d, j))
		return C_NONE;
	if (ni->state != XP_NODE_READY || dv->health == XP_HEALTH_UNHEALTHY || dev_busy(st, n, d) ||
	    (ni->mm && ni->mm->dev >= 0))
		return C_BUSY;
	if (live && xp_sched_mig_kept(st->sched, (uint32_t)n, d))
		return C_KEPT;
	if (!ni->mig_leave)
		return C_DENIED;
	if (held_back(ni->mm, d, now))
		return C_HOLD;
	if (mig_waits_for(st, n, d))
		return C_MIGWAIT;
	if (ni->mm && now < ni->mm->refused_until[d])
		return C_REFUSED;
	return C_OK;
}

/* Must j's slices be on one node (a gang with colocate node, island or numa)? */
static int colocated(const struct xp_job *j)
{
	return j->spec.replicas > 1 &&
	       (j->spec.colocate == XP_COLOC_NODE || j->spec.colocate == XP_COLOC_ISLAND ||
		j->spec.colocate == XP_COLOC_NUMA);
}

/* The slices of j's profile node n gives: free now, plus what its GPU
 * reserved for j will give when with_reserved */
static uint32_t node_room(const struct xp_state *st, size_t n, const struct xp_job *j,
			  int with_reserved)
{
	const struct xp_migmode *m = st->nodes.v[n].mm;
	uint32_t room = xp_mig_room_on(st->sched, (uint32_t)n, &j->req);
	return room + (with_reserved && m && m->dev >= 0 && m->job == j->id ? m->room : 0);
}

/* The room job j has (with_reserved: and will have once its reserved GPUs
 * are switched): over all GPUs, or on its best node when colocated */
static uint32_t room_of(const struct xp_state *st, const struct xp_job *j, int with_reserved)
{
	uint32_t room = 0;
	if (colocated(j)) {
		for (size_t n = 0; n < st->nodes.n; n++) {
			uint32_t r = node_room(st, n, j, with_reserved);
			room = r > room ? r : room;
		}
		return room;
	}
	room = xp_mig_room_now(st->sched, &j->req);
	for (size_t n = 0; with_reserved && st->mm_held && n < st->nodes.n; n++) {
		const struct xp_migmode *m = st->nodes.v[n].mm;
		if (m && m->dev >= 0 && m->job == j->id)
			room += m->room;
	}
	return room;
}

static int waits_for_mig(const struct xp_job *j)
{
	return j->state == XP_JOB_PENDING && j->req.mig && !j->held && !j->unmet;
}

/* ---- records ---- */

static int leave(struct xp_state *st, long n, const struct xp_rec *r, struct xp_event_info *ev,
		 struct xp_err *err)
{
	struct xp_nodeinfo *ni = &st->nodes.v[n];
	int allow = r->u.migmode.allow;
	if (allow < 0)
		return xp_errf(err, XP_ECORRUPT, "node.mig_mode_change: allow: expected a boolean");
	st->mm_allowed += allow && !ni->mig_leave;
	st->mm_allowed -= !allow && ni->mig_leave;
	ni->mig_leave = (uint8_t)allow;
	ev->type = "node.mig_mode_change";
	return 0;
}

static int reserve(struct xp_state *st, long n, unsigned d, const struct xp_rec *r, int64_t at,
		   struct xp_event_info *ev, struct xp_err *err)
{
	const struct xp_job *j = xp_state_job(st, r->u.migmode.job);
	const char *name = st->c->nodes[n].name;
	unsigned room = 0;
	int on = r->u.migmode.mode_mig;
	if (!j)
		return xp_errf(err, XP_ECORRUPT, "node.mig_mode: job: no such job");
	if (on && candidate(st, (size_t)n, (uint16_t)d, &j->req, at, &room) != C_OK)
		return xp_errf(err, XP_ESTATE,
			       "node %s GPU %u: no MIG mode change for job %llu (not an idle, "
			       "MIG-capable GPU with MIG off on a node that allows it)",
			       name, d, (unsigned long long)j->id);
	if (!on && candidate_off(st, (size_t)n, (uint16_t)d, j, at, 0) != C_OK)
		return xp_errf(err, XP_ESTATE,
			       "node %s GPU %u: no MIG mode change to off for job %llu (not a GPU "
			       "in MIG mode with no slice in use, switched over %d s ago, that no "
			       "pending MIG job could use, on a node that allows it)",
			       name, d, (unsigned long long)j->id, XP_MIGMODE_HOLD_MS / 1000);
	struct xp_migmode *m = mm_get(st, (size_t)n);
	m->dev = (int16_t)d;
	m->on = (uint8_t)on;
	m->room = (uint8_t)(room > 255 ? 255 : room);
	m->job = j->id;
	m->at = at;
	st->mm_held++;
	if (!st->sched_stale)
		xp_sched_set_device_ok(st->sched, (uint32_t)n, (uint16_t)d, 0);
	ev->type = "node.mig_mode_reserved";
	ev->job = j->id;
	ev->tenant = (int64_t)j->tenant;
	return 0;
}

static int done(struct xp_state *st, long n, unsigned d, const struct xp_rec *r, int64_t at,
		struct xp_event_info *ev, struct xp_err *err)
{
	struct xp_migmode *m = st->nodes.v[n].mm;
	if (r->u.migmode.ok < 0 || !r->u.migmode.why)
		return xp_errf(err, XP_ECORRUPT, "node.mig_mode_done: expected {ok, why}");
	if (!m || m->dev != (int16_t)d)
		return xp_errf(err, XP_ESTATE, "node %s GPU %u: no MIG mode change reserved",
			       st->c->nodes[n].name, d);
	if (m->on != r->u.migmode.mode_mig)
		return xp_errf(err, XP_ESTATE, "node %s GPU %u: the change reserved is MIG %s",
			       st->c->nodes[n].name, d, m->on ? "on (mode mig)" : "off");
	const struct xp_job *j = xp_state_job(st, m->job);
	ev->job = m->job;
	ev->tenant = j ? (int64_t)j->tenant : -2;
	m->dev = -1;
	st->mm_held--;
	st->sched_stale = 1; /* the GPU takes work again, in its new mode or its old */
	if (r->u.migmode.ok) {
		/* off: a shared GPU again (whole-GPU work takes it as well) */
		st->c->nodes[n].devs[d].mode = m->on ? XP_MODE_MIG : XP_MODE_SHARED;
		st->nodes_gen++; /* a device of it changed */
		m->switched_at[d] = at;
		m->refused_until[d] = 0;
		if (m->refused == (int16_t)d)
			m->refused = -1;
		ev->type = "node.mig_mode_changed";
		return 0;
	}
	m->refused = (int16_t)d;
	m->refused_at = at;
	m->refused_until[d] = at + XP_MIGMODE_RETRY_MS;
	snprintf(m->why, sizeof(m->why), "%s", r->u.migmode.why);
	ev->type = "node.mig_mode_refused";
	return 0;
}

int xp_migmode_apply(struct xp_state *st, const struct xp_rec *r, int64_t at,
		     struct xp_event_info *ev, struct xp_err *err)
{
	const char *name = r->u.migmode.name, *type = xp_rec_type_name(r->type);
	if (!name)
		return xp_errf(err, XP_ECORRUPT, "%s: name: expected a string", type);
	long n = xp_state_node(st, name);
	if (n < 0 || st->nodes.v[n].removed)
		return xp_errf(err, XP_ENOENT, "no node %s", name);
	ev->tenant = -2;
	ev->node = (int32_t)n;
	if (r->type == XP_REC_NODE_MIG_LEAVE)
		return leave(st, n, r, ev, err);
	if (r->u.migmode.device < 0 || r->u.migmode.device >= st->c->nodes[n].ndevs)
		return xp_errf(err, XP_ECORRUPT, "%s: device: no such device on node %s", type,
			       name);
	/* "off" is read too; the text stays as tests/codec/mig-mode.json pins it */
	if (!r->u.migmode.mode_mig && !r->u.migmode.mode_off)
		return xp_errf(err, XP_ECORRUPT, "%s: mode: expected mig", type);
	unsigned d = (unsigned)r->u.migmode.device;
	if (r->type == XP_REC_NODE_MIG_MODE)
		return reserve(st, n, d, r, at, ev, err);
	return done(st, n, d, r, at, ev, err);
}

/* ---- the planner ---- */

typedef int (*emit_fn)(void *ctx, const struct xp_rec *r);

/* a node.mig_mode (job) or node.mig_mode_done (not ok, why) for GPU dev of node n */
/* a planner's record: node.mig_mode (job) or node.mig_mode_done (refused: why), toward MIG
 * on (on 1) or off */
static int emit_rec(emit_fn emit, void *ctx, int type, const char *node, unsigned dev, int on,
		    uint64_t job, const char *why)
{
	struct xp_rec r = { .type = type,
			    .u.migmode = { .name = node,
					   .device = dev,
					   .mode_mig = on,
					   .mode_off = !on,
					   .job = job,
					   .ok = 0,
					   .why = why } };
	return emit(ctx, &r);
}

/* reservations past their time or on nodes that are no longer ready */
static long expire(struct xp_state *st, int64_t now, emit_fn emit, void *ctx)
{
	long made = 0;
	for (size_t n = 0; st->mm_held && n < st->nodes.n; n++) {
		const struct xp_nodeinfo *ni = &st->nodes.v[n];
		const char *why = NULL;
		if (!ni->mm || ni->mm->dev < 0)
			continue;
		if (ni->state != XP_NODE_READY)
			why = "the node is no longer ready";
		else if (now - ni->mm->at > XP_MIGMODE_TIMEOUT_MS)
			why = "no answer from the node's agent in 120 s";
		if (!why)
			continue;
		int rc = emit_rec(emit, ctx, XP_REC_NODE_MIG_DONE, st->c->nodes[n].name,
				  (unsigned)ni->mm->dev, ni->mm->on, 0, why);
		if (rc < 0)
			return rc;
		made++;
	}
	return made;
}

/* The node (and *dev, its GPU) to switch for j, or -1. Spread out: the
 * first node with a candidate. On one node: the node with the most room
 * for j (its change in flight counted), waiting while that node's own
 * change is in flight, so the GPUs switched for a gang end up together. */
static long pick_node(const struct xp_state *st, const struct xp_job *j, int64_t now, uint16_t *dev)
{
	long best = -1;
	uint32_t best_room = 0;
	int best_ok = 0;
	for (size_t n = 0; n < st->nodes.n; n++) {
		const struct xp_migmode *m = st->nodes.v[n].mm;
		unsigned room;
		uint16_t d;
		for (d = 0; d < st->c->nodes[n].ndevs; d++)
			if (candidate(st, n, d, &j->req, now, &room) == C_OK)
				break;
		int ok = d < st->c->nodes[n].ndevs;
		if (!colocated(j)) {
			if (!ok)
				continue;
			*dev = d;
			return (long)n;
		}
		uint32_t r = node_room(st, n, j, 1);
		if ((!ok && !(m && m->dev >= 0 && m->job == j->id)) ||
		    (best >= 0 && r <= best_room))
			continue;
		best = (long)n;
		best_room = r;
		best_ok = ok;
		*dev = d;
	}
	return best_ok ? best : -1;
}

/* The node whose reservation is for job j, or -1 */
static long reserved_for(const struct xp_state *st, const struct xp_job *j)
{
	for (size_t n = 0; st->mm_held && n < st->nodes.n; n++) {
		const struct xp_migmode *m = st->nodes.v[n].mm;
		if (m && m->dev >= 0 && m->job == j->id)
			return (long)n;
	}
	return -1;
}

/* MIG off: for each of the first XP_MIGMODE_JOBS pending whole-GPU or
 * fractional jobs (the cycle just placed none of them) with no change in
 * flight for it, the first GPU in MIG mode that may be switched off. One
 * GPU per job per plan: a job that needs more gets the next one once this
 * one is done and the cycle still cannot place it. */
static long plan_off(struct xp_state *st, int64_t now, emit_fn emit, void *ctx)
{
	long made = 0;
	size_t looked = 0;
	for (size_t i = 0; i < st->pending.n && looked < XP_MIGMODE_JOBS; i++) {
		const struct xp_job *j = st->pending.v[i];
		if (j->req.mig || !j->req.dev_count || j->held || j->unmet)
			continue;
		looked++;
		if (reserved_for(st, j) >= 0)
			continue;
		for (size_t n = 0; n < st->nodes.n; n++) {
			uint16_t d;
			if (!st->nodes.v[n].mig_leave)
				continue; /* cheaply: most nodes */
			for (d = 0; d < st->c->nodes[n].ndevs; d++)
				if (candidate_off(st, n, d, j, now, 1) == C_OK)
					break;
			if (d == st->c->nodes[n].ndevs)
				continue;
			int rc = emit_rec(emit, ctx, XP_REC_NODE_MIG_MODE, st->c->nodes[n].name, d, 0,
					  j->id, NULL);
			if (rc < 0)
				return rc;
			made++;
			break;
		}
	}
	return made;
}

long xp_migmode_plan(struct xp_state *st, int64_t now, emit_fn emit, void *ctx)
{
	long made = 0, off;
	size_t looked = 0;
	if (!st->mm_allowed && !st->mm_held)
		return 0;
	if ((made = expire(st, now, emit, ctx)) < 0)
		return made;
	if (!st->mm_allowed || xp_state_sched(st, NULL) < 0)
		return made;
	for (size_t i = 0; i < st->pending.n && looked < XP_MIGMODE_JOBS; i++) {
		const struct xp_job *j = st->pending.v[i];
		if (!waits_for_mig(j))
			continue;
		looked++;
		if (room_of(st, j, 1) >= j->spec.replicas)
			continue;
		uint16_t d;
		long n = pick_node(st, j, now, &d);
		if (n < 0)
			continue;
		int rc = emit_rec(emit, ctx, XP_REC_NODE_MIG_MODE, st->c->nodes[n].name, d, 1, j->id,
				  NULL);
		if (rc < 0)
			return rc;
		made++; /* one GPU per job per plan: the room is counted again next time */
	}
	if ((off = plan_off(st, now, emit, ctx)) < 0)
		return off;
	return made + off;
}

void xp_migmode_sched(const struct xp_state *st, struct xp_sched *s)
{
	for (size_t n = 0; st->mm_held && n < st->nodes.n; n++) {
		const struct xp_migmode *m = st->nodes.v[n].mm;
		if (m && m->dev >= 0)
			xp_sched_set_device_ok(s, (uint32_t)n, (uint16_t)m->dev, 0);
	}
}

/* ---- explain ---- */

/* The first node (and how many) with GPUs in state `want` for j, and its GPU */
static unsigned scan(const struct xp_state *st, const struct xp_job *j, int64_t now, int want,
		     size_t *first, uint16_t *dev)
{
	unsigned count = 0;
	for (size_t n = 0; n < st->nodes.n; n++) {
		unsigned room;
		for (uint16_t d = 0; d < st->c->nodes[n].ndevs; d++)
			if (candidate(st, n, d, &j->req, now, &room) == want) {
				if (!count++) {
					*first = n;
					*dev = d;
				}
				break;
			}
	}
	return count;
}

/* The first GPU in MIG mode (node *first, GPU *dev; how many) in state
 * `want` for switching it off for j */
static unsigned scan_off(const struct xp_state *st, const struct xp_job *j, int64_t now, int want,
			 size_t *first, uint16_t *dev)
{
	unsigned count = 0;
	for (size_t n = 0; n < st->nodes.n; n++)
		for (uint16_t d = 0; d < st->c->nodes[n].ndevs; d++)
			if (candidate_off(st, n, d, j, now, 1) == want && !count++) {
				*first = n;
				*dev = d;
			}
	return count;
}

/* explain for a pending whole-GPU or fractional job: a GPU in MIG mode
 * that is (or is not, and why) switched off for it */
static void explain_off(struct xp_state *st, const struct xp_job *j, int64_t now, struct xp_sb *sb)
{
	const char *sep = sb->len ? "; " : "";
	long rn = reserved_for(st, j);
	size_t n = 0;
	uint16_t d = 0;
	char ts[XP_TIME_LEN];
	if (rn >= 0) {
		const struct xp_migmode *m = st->nodes.v[rn].mm;
		xp_time_format(m->at, ts);
		xp_sb_printf(sb,
			     "%sit waits for a MIG mode change: node %s GPU %d is being switched "
			     "out of MIG mode for it (since %s)",
			     sep, st->c->nodes[rn].name, m->dev, ts);
	} else if (scan_off(st, j, now, C_OK, &n, &d))
		xp_sb_printf(sb,
			     "%snode %s GPU %u, idle in MIG mode, is switched out of MIG mode "
			     "for it at the next cycle",
			     sep, st->c->nodes[n].name, d);
	else if (scan_off(st, j, now, C_REFUSED, &n, &d))
		xp_sb_printf(sb,
			     "%snode %s GPU %d refused a MIG mode change: %s (asked again %d s "
			     "after)",
			     sep, st->c->nodes[n].name, st->nodes.v[n].mm->refused,
			     st->nodes.v[n].mm->why, XP_MIGMODE_RETRY_MS / 1000);
	else if (scan_off(st, j, now, C_MIGWAIT, &n, &d))
		xp_sb_printf(sb,
			     "%snode %s GPU %u stays in MIG mode: a pending MIG job could use "
			     "it",
			     sep, st->c->nodes[n].name, d);
	else if (scan_off(st, j, now, C_HOLD, &n, &d)) {
		xp_time_format(st->nodes.v[n].mm->switched_at[d] + XP_MIGMODE_HOLD_MS, ts);
		xp_sb_printf(sb,
			     "%snode %s GPU %u, idle in MIG mode, was switched less than %d s "
			     "ago: not switched again before %s",
			     sep, st->c->nodes[n].name, d, XP_MIGMODE_HOLD_MS / 1000, ts);
	} else if (scan_off(st, j, now, C_DENIED, &n, &d))
		xp_sb_printf(sb,
			     "%snode %s does not allow MIG mode changes (its GPU %u, idle in MIG "
			     "mode, would take this job with MIG off; an admin allows it: xpool "
			     "nodes set %s --mig-mode-change allow)",
			     sep, st->c->nodes[n].name, d, st->c->nodes[n].name);
	else if (scan_off(st, j, now, C_KEPT, &n, &d))
		xp_sb_printf(sb,
			     "%snode %s GPU %u stays in MIG mode: it holds a warm instance or "
			     "one xpool did not create (an administrator's, never destroyed)",
			     sep, st->c->nodes[n].name, d);
}

void xp_migmode_explain(struct xp_state *st, const struct xp_job *j, int64_t now, struct xp_sb *sb)
{
	size_t n = 0;
	uint16_t d = 0;
	unsigned k;
	if (j->state == XP_JOB_PENDING && !j->req.mig && j->req.dev_count && !j->held &&
	    !j->unmet && xp_state_sched(st, NULL) >= 0) {
		explain_off(st, j, now, sb);
		return;
	}
	if (!waits_for_mig(j) || xp_state_sched(st, NULL) < 0)
		return;
	for (size_t i = 0; st->mm_held && i < st->nodes.n; i++) {
		const struct xp_migmode *m = st->nodes.v[i].mm;
		if (m && m->dev >= 0 && m->job == j->id) {
			char ts[XP_TIME_LEN];
			xp_time_format(m->at, ts);
			xp_sb_printf(sb,
				     "%sit waits for a MIG mode change: node %s GPU %d is being "
				     "switched to MIG mode for it (since %s)",
				     sb->len ? "; " : "", st->c->nodes[i].name, m->dev, ts);
			return;
		}
	}
	if (room_of(st, j, 0) >= j->spec.replicas)
		return;
	const char *sep = sb->len ? "; " : "";
	if ((k = scan(st, j, now, C_OK, &n, &d)))
		xp_sb_printf(sb,
			     "%snode %s GPU %u, idle with MIG mode off, is switched to MIG "
			     "mode for it at the next cycle",
			     sep, st->c->nodes[n].name, d);
	else if ((k = scan(st, j, now, C_REFUSED, &n, &d)))
		xp_sb_printf(sb,
			     "%snode %s GPU %d refused a MIG mode change: %s (asked again "
			     "%d s after)",
			     sep, st->c->nodes[n].name, st->nodes.v[n].mm->refused,
			     st->nodes.v[n].mm->why, XP_MIGMODE_RETRY_MS / 1000);
	else if ((k = scan(st, j, now, C_HOLD, &n, &d))) {
		char ts[XP_TIME_LEN];
		xp_time_format(st->nodes.v[n].mm->switched_at[d] + XP_MIGMODE_HOLD_MS, ts);
		xp_sb_printf(sb,
			     "%snode %s GPU %u, idle with MIG mode off, was switched less than "
			     "%d s ago: not switched again before %s",
			     sep, st->c->nodes[n].name, d, XP_MIGMODE_HOLD_MS / 1000, ts);
	} else if ((k = scan(st, j, now, C_DENIED, &n, &d)))
		xp_sb_printf(sb,
			     "%snode %s does not allow MIG mode changes (its GPU %u, idle "
			     "with MIG mode off, offers the profile%s; an admin allows it: "
			     "xpool nodes set %s --mig-mode-change allow)",
			     sep, st->c->nodes[n].name, d,
			     k > 1 ? ", as do GPUs of other such nodes" : "", st->c->nodes[n].name);
	else if ((k = scan(st, j, now, C_BUSY, &n, &d)))
		xp_sb_printf(sb,
			     "%sno MIG mode change: the GPUs with MIG mode off that offer the "
			     "profile (node %s GPU %u%s) are in use, reserved or on a node "
			     "not ready",
			     sep, st->c->nodes[n].name, d, k > 1 ? ", ..." : "");
}

/* a snapshot's reservation and refusal come back through here (src/edge/snapshot_parts.c) */
struct xp_migmode *xp_migmode_get(struct xp_state *st, size_t n)
{
	return mm_get(st, n);
}
