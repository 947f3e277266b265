/*
 * mig_keep: the MIG instances this agent created, kept warm and reconciled
 * (issue 21, docs/design/mig.md "Owned instances").
 *
 * The rule: xpool destroys only what it created. Every GPU instance the
 * agent creates is recorded in WORK/mig-owned, one line "DEV GI UUID ID
 * START SIZE WARM_UNTIL" (written as .new, then renamed), and a record
 * leaves the file only when its instance is gone. An instance made by an
 * administrator (nvidia-smi mig -cgi) is never in it, so it is never
 * destroyed, even when a replica adopted it. A record names the MIG UUID as
 * well as the GI id: NVML reuses GI ids, so an instance at a recorded id
 * with another UUID is someone else's, and the record is dropped unused.
 *
 * Warm: with --mig-keep-warm D a replica's instance outlives it by D
 * (WARM_UNTIL, wall-clock ms, so a restarted agent keeps the deadline);
 * the heartbeat reports it and the controller prefers that {GPU, start}
 * for the next slice of that profile, which then adopts it (no create).
 * A create whose slices a warm instance holds destroys that one first.
 *
 * The reconciler (xp_mig_reconcile: at start, every XP_MIG_RECONCILE_MS,
 * and whenever a warm deadline passes) destroys every owned instance that
 * no task holds and that is not warm; IN_USE leaves it for the next round.
 * All calls hold a->mu.
 */
#include "agent.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "../hal/hal.h"

#define XP_MIG_RECONCILE_MS 10000

static int64_t wall_ms(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void own_path(const struct xp_agent *a, char *path, size_t len, const char *suffix)
{
	snprintf(path, len, "%s/mig-owned%s", a->o.work, suffix);
}

static void own_save(const struct xp_agent *a)
{
	char path[600], tmp[620];
	own_path(a, path, sizeof(path), "");
	own_path(a, tmp, sizeof(tmp), ".new");
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	for (unsigned i = 0; i < a->nmig_own; i++) {
		const struct xp_mig_owned *o = &a->mig_own[i];
		fprintf(f, "%u %u %s %u %u %u %lld\n", o->dev, o->gi, o->uuid, o->profile_id,
			o->start, o->size, (long long)o->warm_until);
	}
	if (fclose(f) == 0)
		rename(tmp, path);
}

void xp_mig_own_load(struct xp_agent *a)
{
	char path[600], line[256];
	own_path(a, path, sizeof(path), "");
	FILE *f = fopen(path, "r");
	a->nmig_own = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && a->nmig_own < XP_AGENT_MIG_OWN) {
		struct xp_mig_owned o;
		long long until;
		memset(&o, 0, sizeof(o));
		if (sscanf(line, "%u %u %95s %u %u %u %lld", &o.dev, &o.gi, o.uuid, &o.profile_id,
			   &o.start, &o.size, &until) == 7) {
			o.warm_until = until;
			a->mig_own[a->nmig_own++] = o;
		}
	}
	fclose(f);
}

static struct xp_mig_owned *own_find(struct xp_agent *a, unsigned dev, unsigned gi)
{
	for (unsigned i = 0; i < a->nmig_own; i++)
		if (a->mig_own[i].dev == dev && a->mig_own[i].gi == gi)
			return &a->mig_own[i];
	return NULL;
}

void xp_mig_own_gone(struct xp_agent *a, unsigned dev, unsigned gi)
{
	struct xp_mig_owned *o = own_find(a, dev, gi);
	if (!o)
		return;
	*o = a->mig_own[--a->nmig_own];
	own_save(a);
}

void xp_mig_own_add(struct xp_agent *a, unsigned dev, const struct xp_hal_mig_inst *in)
{
	struct xp_mig_owned *o = own_find(a, dev, in->gi_id);
	if (!o && a->nmig_own < XP_AGENT_MIG_OWN)
		o = &a->mig_own[a->nmig_own++];
	if (!o)
		return;
	memset(o, 0, sizeof(*o));
	o->dev = dev;
	o->gi = in->gi_id;
	snprintf(o->uuid, sizeof(o->uuid), "%s", in->uuid[0] ? in->uuid : "-");
	o->profile_id = in->profile_id;
	o->start = in->start;
	o->size = in->size;
	own_save(a);
}

int xp_mig_owned(struct xp_agent *a, unsigned dev, unsigned gi)
{
	return own_find(a, dev, gi) != NULL;
}

static int held(const struct xp_agent *a, unsigned dev, unsigned gi)
{
	for (size_t i = 0; i < a->tasks.n; i++)
		if (a->tasks.v[i].mig_held && a->tasks.v[i].mig_dev == dev &&
		    a->tasks.v[i].mig_gi == gi)
			return 1;
	return 0;
}

void xp_mig_own_hold(struct xp_agent *a, unsigned dev, unsigned gi)
{
	struct xp_mig_owned *o = own_find(a, dev, gi);
	if (o && o->warm_until) {
		o->warm_until = 0;
		own_save(a);
	}
}

int xp_mig_own_release(struct xp_agent *a, unsigned dev, unsigned gi)
{
	struct xp_mig_owned *o = own_find(a, dev, gi);
	if (!o)
		return -1; /* not ours: it stays */
	if (a->o.mig_keep_warm_ms <= 0)
		return 0;
	o->warm_until = wall_ms() + a->o.mig_keep_warm_ms;
	own_save(a);
	fprintf(stderr, "xpool agent: node=%s: MIG GI %u on device %u kept warm for %d ms\n",
		a->node, gi, dev, a->o.mig_keep_warm_ms);
	return 1;
}

/* Destroy owned instance o (its UUID checked against list): 1 when it is
 * gone (or was not ours after all), 0 when it is still in use */
static int own_destroy(struct xp_agent *a, const struct xp_mig_owned *o,
		       const struct xp_hal_mig *list)
{
	struct xp_err err = { 0 };
	for (unsigned i = 0; i < list->n; i++)
		if (list->inst[i].gi_id == o->gi && strcmp(list->inst[i].uuid, o->uuid) &&
		    strcmp(o->uuid, "-"))
			return 1; /* the GI id was reused by another instance: not ours */
	int rc = xp_hal_mig_destroy(a->hal, o->dev, o->gi, &err);
	if (rc == XP_ESTATE)
		return 0;
	if (rc < 0 && rc != XP_ENOENT)
		fprintf(stderr, "xpool agent: node=%s: MIG GI %u on device %u: %s\n", a->node,
			o->gi, o->dev, err.text);
	else if (rc == 0)
		fprintf(stderr,
			"xpool agent: node=%s: MIG GI %u on device %u (%s) destroyed: "
			"created by xpool, held by no task\n",
			a->node, o->gi, o->dev, o->uuid);
	return 1;
}

void xp_mig_free_overlap(struct xp_agent *a, unsigned dev, unsigned start, unsigned size)
{
	struct xp_hal_mig list;
	struct xp_err err = { 0 };
	if (!size || xp_hal_mig_list(a->hal, dev, &list, &err) < 0)
		return;
	for (unsigned i = 0; i < a->nmig_own;) {
		const struct xp_mig_owned *o = &a->mig_own[i];
		int overlap = o->start < start + size && start < o->start + o->size;
		if (o->dev == dev && overlap && !held(a, dev, o->gi) && own_destroy(a, o, &list)) {
			xp_mig_own_gone(a, o->dev, o->gi);
			continue;
		}
		i++;
	}
}

void xp_mig_reconcile(struct xp_agent *a, int force)
{
	int64_t now = wall_ms();
	int due = force || now >= a->mig_next_reconcile;
	for (unsigned i = 0; !due && i < a->nmig_own; i++)
		due = a->mig_own[i].warm_until && a->mig_own[i].warm_until <= now &&
		      !held(a, a->mig_own[i].dev, a->mig_own[i].gi);
	if (!due || !a->hal)
		return;
	a->mig_next_reconcile = now + XP_MIG_RECONCILE_MS;
	for (unsigned i = 0; i < a->nmig_own;) {
		struct xp_mig_owned *o = &a->mig_own[i];
		struct xp_hal_mig list;
		struct xp_err err = { 0 };
		if (held(a, o->dev, o->gi) || (o->warm_until && o->warm_until > now) ||
		    xp_hal_mig_list(a->hal, o->dev, &list, &err) < 0) {
			i++;
			continue;
		}
		if (own_destroy(a, o, &list)) {
			xp_mig_own_gone(a, o->dev, o->gi);
			continue;
		}
		i++;
	}
}

void *xp_mig_beat_json(struct xp_agent *a)
{
	json_t *arr = json_array();
	int64_t now = wall_ms();
	for (unsigned d = 0; a->hal && d < a->ndevs && d < 64; d++) {
		struct xp_hal_mig list;
		struct xp_err err = { 0 };
		if (!(a->mig_devs >> d & 1) || xp_hal_mig_list(a->hal, d, &list, &err) < 0)
			continue;
		for (unsigned i = 0; i < list.n; i++) {
			const struct xp_hal_mig_inst *in = &list.inst[i];
			const struct xp_mig_owned *o = own_find(a, d, in->gi_id);
			int warm = o && o->warm_until > now && !held(a, d, in->gi_id);
			json_array_append_new(arr, json_pack("{s:i,s:i,s:i,s:i,s:i,s:s,s:b,s:b}",
							     "device", (int)d, "gi", (int)in->gi_id,
							     "id", (int)in->profile_id, "start",
							     (int)in->start, "size", (int)in->size,
							     "uuid", in->uuid, "owned", o != NULL,
							     "warm", warm));
		}
	}
	return arr;
}
