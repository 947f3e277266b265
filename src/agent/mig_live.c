/*
 * mig_live: a replica's MIG instance (issue 21, docs/design/mig.md). The
 * assignment carries the controller's reservation {profile, id, start} on
 * the replica's one device. Before the replica starts, the agent adopts a
 * GPU instance of that profile already at that start (an earlier agent's,
 * or one left over) or creates it there through the HAL (GPU instance plus
 * one compute instance over it), and the replica gets
 * CUDA_VISIBLE_DEVICES=MIG-<uuid> of that instance alone. The task's folder
 * keeps "mig" = "DEV GI", so a restarted agent adopts it with the task.
 * When the replica ends the instance is destroyed if xpool created it
 * (mig_keep.c: else it stays; with --mig-keep-warm it is kept warm for
 * a while); NVML's IN_USE
 * (XP_ESTATE: a process still holds it) leaves it on a retry list that
 * every monitor tick tries again. Called with a->mu held.
 */
#include "agent.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../hal/hal.h"

static void mig_file(const struct xp_task *t, char *path, size_t len)
{
	snprintf(path, len, "%s/mig", t->dir);
}

int xp_mig_task_setup(struct xp_agent *a, const void *assignment, struct xp_task *t, char *uuid,
		      size_t len, struct xp_err *err)
{
	json_t *as = (json_t *)assignment, *m = json_object_get(as, "mig");
	json_t *devs = json_object_get(as, "devices");
	struct xp_hal_mig list;
	struct xp_hal_mig_inst inst;
	char path[600];
	if (!m)
		return 0;
	unsigned dev = (unsigned)json_integer_value(json_array_get(devs, 0));
	unsigned id = (unsigned)json_integer_value(json_object_get(m, "id"));
	unsigned start = (unsigned)json_integer_value(json_object_get(m, "start"));
	const char *name = json_string_value(json_object_get(m, "profile"));
	if (!a->hal)
		return xp_errf(err, XP_EUNSUPP, "mig %s: this agent has no device layer",
			       name ? name : "?");
	if (xp_hal_mig_list(a->hal, dev, &list, err) < 0)
		return err->code;
	int found = -1;
	for (unsigned i = 0; i < list.n; i++)
		if (list.inst[i].profile_id == id && list.inst[i].start == start &&
		    list.inst[i].uuid[0])
			found = (int)i;
	if (found >= 0) {
		inst = list.inst[found];
		xp_mig_own_hold(a, dev, inst.gi_id); /* a warm one is taken */
	} else {
		/* owned instances no task holds (warm ones) on its slices go first */
		xp_mig_free_overlap(a, dev, start,
				    (unsigned)json_integer_value(json_object_get(m, "size")));
		if (xp_hal_mig_create(a->hal, dev, id, start, &inst, err) < 0)
			return err->code;
		xp_mig_own_add(a, dev, &inst);
	}
	t->mig_held = 1;
	t->mig_dev = dev;
	t->mig_gi = inst.gi_id;
	snprintf(uuid, len, "%s", inst.uuid);
	mig_file(t, path, sizeof(path));
	FILE *f = fopen(path, "w");
	if (f) {
		fprintf(f, "%u %u\n", dev, inst.gi_id);
		fclose(f);
	}
	fprintf(stderr,
		"xpool agent: node=%s job=%llu replica=%u: MIG %s %s at {%u,%u} on device %u: "
		"GI %u, %s\n",
		a->node, (unsigned long long)t->job, t->replica, name ? name : "?",
		found >= 0 ? "adopted" : "created", start, inst.size, dev, inst.gi_id, inst.uuid);
	return 1;
}

void xp_mig_task_adopt(struct xp_task *t)
{
	char path[600];
	unsigned dev, gi;
	mig_file(t, path, sizeof(path));
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "%u %u", &dev, &gi) == 2) {
		t->mig_held = 1;
		t->mig_dev = dev;
		t->mig_gi = gi;
	}
	fclose(f);
}

/* 0: gone (or never there), 1: still in use, retry */
static int destroy(struct xp_agent *a, unsigned dev, unsigned gi)
{
	struct xp_err err = { 0 };
	int rc = xp_hal_mig_destroy(a->hal, dev, gi, &err);
	if (rc == XP_ESTATE)
		return 1;
	if (rc < 0 && rc != XP_ENOENT)
		fprintf(stderr, "xpool agent: node=%s: MIG GI %u on device %u: %s\n", a->node, gi,
			dev, err.text);
	else
		xp_mig_own_gone(a, dev, gi);
	return 0;
}

void xp_mig_task_end(struct xp_agent *a, struct xp_task *t)
{
	char path[600];
	if (!t->mig_held || !a->hal)
		return;
	t->mig_held = 0;
	mig_file(t, path, sizeof(path));
	unlink(path);
	int keep = xp_mig_own_release(a, t->mig_dev, t->mig_gi);
	if (keep) /* not created by xpool (it stays), or kept warm */
		return;
	if (!destroy(a, t->mig_dev, t->mig_gi))
		return;
	if (a->nmig_gc < XP_AGENT_MIG_GC) {
		a->mig_gc[a->nmig_gc].dev = t->mig_dev;
		a->mig_gc[a->nmig_gc++].gi = t->mig_gi;
	}
	fprintf(stderr, "xpool agent: node=%s job=%llu: MIG GI %u in use, destroyed later\n",
		a->node, (unsigned long long)t->job, t->mig_gi);
}

void xp_mig_gc(struct xp_agent *a)
{
	unsigned k = 0;
	for (unsigned i = 0; i < a->nmig_gc; i++)
		if (destroy(a, a->mig_gc[i].dev, a->mig_gc[i].gi))
			a->mig_gc[k++] = a->mig_gc[i];
	a->nmig_gc = k;
	xp_mig_reconcile(a, 0); /* orphans and expired warm instances, when due */
}
