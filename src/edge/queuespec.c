/*
 * queuespec: queue definitions read from a document tree (edge.h); the
 * writer stays in the state (src/core/state/queuespec.c).
 */
#include "edge_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../descriptor/tree.h"
#include "../lib/parse.h"
#include "../lib/timefmt.h"

static const char *const top_keys[] = { "name",	   "parent", "priority", "weight",
					"preempt", "quota",  "aging",	 "allow", NULL };
static const char *const quota_keys[] = { "guarantee", "max", NULL };

static int get_name(struct xp_walk *w, const struct xp_tree *t, const char *key, char *out)
{
	const char *v;
	int rc = xp_walk_get_name(w, t, key, &v);
	if (rc == 1)
		snprintf(out, XP_NAME_MAX + 1, "%s", v);
	return rc;
}

static int parse_quota(struct xp_walk *w, const struct xp_tree *t, struct xp_queuespec *q)
{
	int rc = xp_walk_want(w, t, XP_TREE_MAP, "a map of resource to {guarantee, max}");
	for (size_t i = 0; rc == 0 && i < t->n; i++) {
		const char *key = t->keys[i];
		const struct xp_tree *v = t->kids[i];
		int r = xp_res_parse(key);
		size_t m = xp_walk_push_key(w, key);
		if (r < 0)
			rc = xp_walk_fail(w, v->line, XP_EINVAL,
					  "unknown resource (expected cpu, memory, gpu, npu, fpga, "
					  "asic, dpu or cim)");
		if (rc == 0)
			rc = xp_walk_want(w, v, XP_TREE_MAP, "a map {guarantee, max}");
		if (rc == 0)
			rc = xp_walk_keys(w, v, quota_keys);
		int kind = r == XP_RES_MEM ? XP_QTY_MEM_MIB : XP_QTY_CPU_MILLI;
		uint64_t g = 0, mx = XP_QUOTA_NONE, x;
		if (rc == 0 && (rc = xp_walk_get_qty(w, v, "guarantee", kind,
						     (double)XP_QUOTA_MAX_VALUE, &x)) > 0)
			g = x;
		if (rc >= 0 &&
		    (rc = xp_walk_get_qty(w, v, "max", kind, (double)XP_QUOTA_MAX_VALUE, &x)) > 0)
			mx = x;
		if (rc >= 0 && g > mx) {
			char gs[32], ms[32];
			xp_res_format(r, g, gs, sizeof(gs));
			xp_res_format(r, mx, ms, sizeof(ms));
			rc = xp_walk_fail(w, v->line, XP_EINVAL, "guarantee %s is above max %s", gs,
					  ms);
		}
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
		rc = 0;
		q->guarantee[r] = g;
		q->max[r] = mx;
	}
	return rc;
}

static int parse(struct xp_walk *w, const struct xp_tree *t, int need_name, struct xp_queuespec *q)
{
	int64_t v;
	int rc, p;

	if (!t)
		return xp_walk_fail(w, 0, XP_EINVAL, "empty document, expected a queue");
	if ((rc = xp_walk_want(w, t, XP_TREE_MAP, "a map (a queue)")) < 0 ||
	    (rc = xp_walk_keys(w, t, top_keys)) < 0)
		return rc;
	if ((rc = get_name(w, t, "name", q->name)) < 0)
		return rc;
	if (rc == 0 && need_name) {
		size_t m = xp_walk_push_key(w, "name"); /* the field's path, not "" */
		rc = xp_walk_fail(w, t->line, XP_EINVAL, "missing");
		xp_walk_pop(w, m);
		return rc;
	}
	if ((rc = get_name(w, t, "parent", q->parent)) < 0)
		return rc;
	q->set |= rc ? XP_QS_PARENT : 0;
	if (rc && !strcmp(q->parent, q->name)) {
		size_t m = xp_walk_push_key(w, "parent");
		rc = xp_walk_fail(w, xp_tree_get(t, "parent")->line, XP_EINVAL,
				  "a queue cannot be its own parent");
		xp_walk_pop(w, m);
		return rc;
	}
	if ((rc = xp_walk_get_int(w, t, "priority", -XP_PRIORITY_MAX, XP_PRIORITY_MAX, &v)) < 0)
		return rc;
	if (rc) {
		q->priority = (int32_t)v;
		q->set |= XP_QS_PRIORITY;
	}
	if ((rc = xp_walk_get_int(w, t, "weight", 1, 1000000, &v)) < 0)
		return rc;
	if (rc) {
		q->weight = (uint32_t)v;
		q->set |= XP_QS_WEIGHT;
	}
	if ((rc = xp_walk_get_enum(w, t, "preempt", xp_preempt_parse, "never, reclaim or priority",
				   &p)) < 0)
		return rc;
	if (rc) {
		q->preempt = (uint8_t)p;
		q->set |= XP_QS_PREEMPT;
	}
	const struct xp_tree *ag = xp_tree_field(t, "aging");
	if (ag) {
		size_t m = xp_walk_push_key(w, "aging");
		rc = xp_walk_want(w, ag, XP_TREE_SCALAR, "a duration such as 30m");
		if (rc == 0 &&
		    (xp_duration_parse(ag->text, 366LL * 24 * 3600 * 1000, &q->aging_ms) < 0 ||
		     q->aging_ms < 1000))
			rc = xp_walk_fail(w, ag->line, XP_EINVAL,
					  "expected a duration of 1s or more such as 30m, got '%s'",
					  XP_SHOW(ag->text));
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
		q->set |= XP_QS_AGING;
	}
	const struct xp_tree *al = xp_tree_field(t, "allow");
	if (al) {
		size_t m = xp_walk_push_key(w, "allow");
		rc = xp_walk_list(w, al, XP_QUEUE_MAX_ALLOW);
		for (size_t i = 0; rc >= 0 && i < al->n; i++) {
			const struct xp_tree *e = al->kids[i];
			size_t m2 = xp_walk_push_idx(w, i);
			rc = xp_walk_want(w, e, XP_TREE_SCALAR, "a tenant name");
			if (rc == 0 && !xp_name_ok(e->text))
				rc = xp_walk_fail(w, e->line, XP_EINVAL,
						  "expected a tenant name (1..63 of [A-Za-z0-9._-]), "
						  "got '%s'",
						  XP_SHOW(e->text));
			for (size_t k = 0; rc == 0 && k < i; k++)
				if (!strcmp(q->allow[k], e->text))
					rc = xp_walk_fail(w, e->line, XP_EINVAL,
							  "tenant %s is listed twice", e->text);
			if (rc == 0)
				snprintf(q->allow[i], sizeof(q->allow[i]), "%s", e->text);
			xp_walk_pop(w, m2);
		}
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
		q->nallow = (uint8_t)al->n;
		q->set |= XP_QS_ALLOW;
	}
	const struct xp_tree *quota = xp_tree_field(t, "quota");
	if (quota) {
		size_t m = xp_walk_push_key(w, "quota");
		for (int r = 0; r < XP_RES_N; r++) {
			q->guarantee[r] = 0;
			q->max[r] = XP_QUOTA_NONE;
		}
		rc = parse_quota(w, quota, q);
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
		q->set |= XP_QS_QUOTA;
	}
	return 0;
}

int xp_queuespec_parse_text(const char *name, const char *buf, size_t len, int json, int need_name,
			    struct xp_queuespec *out, char field[320], struct xp_err *err)
{
	struct xp_tree *t = NULL;
	struct xp_walk w;
	int rc = xp_tree_parse_field(name, buf, len, json, &t, field, err);

	xp_queuespec_init(out);
	memset(&w, 0, sizeof(w));
	w.name = name;
	w.err = err;
	if (rc == 0) {
		rc = parse(&w, t, need_name, out);
		if (field)
			memcpy(field, w.field, sizeof(w.field));
	}
	xp_tree_destroy(t);
	return rc < 0 ? rc : 0;
}
