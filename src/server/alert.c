/*
 * alert: the noise filter (see alert.h).
 *
 * Subjects and groups are kept in arrays indexed through string tables
 * ("rule\x1subject", "rule\x1group"). A subject remembers its last
 * flap_changes change times in a ring; a group its members, whether it has
 * unsent changes (dirty, since when) and what it last sent.
 */
#include "alert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/parse.h"
#include "../lib/strtab.h"
#include "../lib/timefmt.h"
#include "../lib/vec.h"
#include "../lib/xalloc.h"

#define RING 32

static const char *const rule_names[XP_AL_N] = { "device_unhealthy", "node_lost", "queue_starved",
						 "quota_exhausted", "job_failing",
						 "gpu_out_of_memory" };

const char *xp_alert_rule_name(int rule)
{
	return xp_enum_name(rule_names, XP_AL_N, rule);
}

int xp_alert_rule_parse(const char *s)
{
	return xp_enum_parse(rule_names, XP_AL_N, s);
}

struct subj {
	char *name, *detail;
	uint32_t group;
	uint8_t firing, flapping, notified, fired; /* fired: since its group's last send */
	int64_t since, last_change;
	int64_t ring[RING];
	uint32_t nring;
};

struct group {
	char *name;
	int rule;
	XP_VEC(uint32_t) members;
	uint8_t dirty, active;
	int64_t pending_since, last_sent;
};

struct xp_alerts {
	struct xp_alert_opts o;
	struct xp_strtab *skeys, *gkeys;
	XP_VEC(uint32_t) sidx, gidx; /* symbol -> index + 1 */
	XP_VEC(struct subj) subj;
	XP_VEC(struct group) grp;
	size_t nflapping; /* subjects flapping now: the tick looks for settled ones only then */
	struct xp_alert_stats st;
};

struct xp_alerts *xp_alerts_new(const struct xp_alert_opts *o)
{
	struct xp_alerts *a = xcalloc(1, sizeof(*a));
	if (o)
		a->o = *o;
	if (a->o.group_wait_ms <= 0)
		a->o.group_wait_ms = 30000;
	if (a->o.group_interval_ms <= 0)
		a->o.group_interval_ms = 300000;
	if (a->o.repeat_ms <= 0)
		a->o.repeat_ms = 4 * 3600000LL;
	if (a->o.flap_window_ms <= 0)
		a->o.flap_window_ms = 600000;
	if (a->o.flap_changes < 2)
		a->o.flap_changes = 4;
	if (a->o.flap_changes > RING)
		a->o.flap_changes = RING;
	a->skeys = xp_strtab_create();
	a->gkeys = xp_strtab_create();
	return a;
}

void xp_alerts_free(struct xp_alerts *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->subj.n; i++) {
		free(a->subj.v[i].name);
		free(a->subj.v[i].detail);
	}
	for (size_t i = 0; i < a->grp.n; i++) {
		free(a->grp.v[i].name);
		xp_vec_free(&a->grp.v[i].members);
	}
	xp_vec_free(&a->subj);
	xp_vec_free(&a->grp);
	xp_vec_free(&a->sidx);
	xp_vec_free(&a->gidx);
	xp_strtab_destroy(a->skeys);
	xp_strtab_destroy(a->gkeys);
	free(a);
}

/* index of key in tab/idx, or UINT32_MAX (created when make) */
static uint32_t lookup(struct xp_strtab *tab, void *idxv, int rule, const char *name, int make,
		       int *created)
{
	XP_VEC(uint32_t) *idx = idxv;
	char key[256];
	snprintf(key, sizeof(key), "%d\x01%s", rule, name);
	xp_sym s = make ? xp_strtab_intern(tab, key) : xp_strtab_find(tab, key);
	*created = 0;
	if (!s && !make)
		return UINT32_MAX;
	while (idx->n <= s)
		xp_vec_push(idx, 0);
	if (!idx->v[s]) {
		if (!make)
			return UINT32_MAX;
		*created = 1;
		return UINT32_MAX;
	}
	return idx->v[s] - 1;
}

static void set_index(struct xp_strtab *tab, void *idxv, int rule, const char *name, uint32_t i)
{
	XP_VEC(uint32_t) *idx = idxv;
	char key[256];
	snprintf(key, sizeof(key), "%d\x01%s", rule, name);
	xp_sym s = xp_strtab_intern(tab, key);
	while (idx->n <= s)
		xp_vec_push(idx, 0);
	idx->v[s] = i + 1;
}

static void mark(struct group *g, int64_t now)
{
	if (!g->dirty) {
		g->dirty = 1;
		g->pending_since = now;
	}
}

void xp_alerts_signal(struct xp_alerts *a, int64_t now, int rule, const char *subject,
		      const char *group, int firing, const char *detail)
{
	int created;
	a->st.signals++;
	if (rule < 0 || rule >= XP_AL_N || !subject)
		return;
	uint32_t si = lookup(a->skeys, &a->sidx, rule, subject, 1, &created);
	if (created) {
		const char *gname = group && *group ? group : "pool";
		uint32_t gi = lookup(a->gkeys, &a->gidx, rule, gname, 1, &created);
		if (created) {
			struct group g = { .name = xstrdup(gname), .rule = rule };
			xp_vec_push(&a->grp, g);
			gi = (uint32_t)(a->grp.n - 1);
			set_index(a->gkeys, &a->gidx, rule, gname, gi);
		}
		struct subj s = { .name = xstrdup(subject), .group = gi };
		xp_vec_push(&a->subj, s);
		si = (uint32_t)(a->subj.n - 1);
		set_index(a->skeys, &a->sidx, rule, subject, si);
		xp_vec_push(&a->grp.v[gi].members, si);
	}
	struct subj *s = &a->subj.v[si];
	struct group *g = &a->grp.v[s->group];
	firing = !!firing;
	if (s->firing == firing) {
		a->st.duplicates++;
		return;
	}
	if (detail) {
		free(s->detail);
		s->detail = xstrdup(detail);
	}
	s->ring[s->nring++ % RING] = now;
	uint32_t recent = 0, n = s->nring < RING ? s->nring : RING;
	for (uint32_t i = 0; i < n; i++)
		recent += s->ring[i] > now - a->o.flap_window_ms;
	s->firing = (uint8_t)firing;
	s->last_change = now;
	if (s->flapping) {
		a->st.flap_absorbed++;
		return;
	}
	if (recent >= a->o.flap_changes) {
		s->flapping = 1;
		a->nflapping++;
		mark(g, now);
		return;
	}
	if (firing) {
		s->since = now;
		s->fired = 1;
		a->st.faults++;
	}
	mark(g, now);
}

static json_t *entry(const struct subj *s)
{
	char ts[XP_TIME_LEN];
	xp_time_format(s->since, ts);
	json_t *o = json_pack("{s:s,s:s}", "subject", s->name, "since", ts);
	if (s->detail)
		json_object_set_new(o, "detail", json_string(s->detail));
	return o;
}

static void send_group(struct xp_alerts *a, struct group *g, int64_t now, int repeat,
		       xp_alert_send_fn send, void *ctx)
{
	json_t *fir = json_array(), *flap = json_array(), *res = json_array(), *tr = json_array();
	char ts[XP_TIME_LEN];
	for (size_t i = 0; i < g->members.n; i++) {
		struct subj *s = &a->subj.v[g->members.v[i]];
		if (s->flapping) {
			json_array_append_new(flap, entry(s));
			s->notified = 1;
		} else if (s->firing) {
			json_array_append_new(fir, entry(s));
			s->notified = 1;
		} else if (s->notified) {
			json_array_append_new(res, entry(s));
			s->notified = 0;
		} else if (s->fired) {
			json_array_append_new(tr, entry(s));
		}
		s->fired = 0;
	}
	int firing = json_array_size(fir) || json_array_size(flap);
	g->dirty = 0;
	if (!firing && !json_array_size(res) && !json_array_size(tr)) {
		json_decref(fir);
		json_decref(flap);
		json_decref(res);
		json_decref(tr);
		return; /* nothing to say: changes that cancelled out inside a flap */
	}
	xp_time_format(now, ts);
	json_t *n = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:b}", "status",
			      firing ? "firing" : "resolved", "rule", xp_alert_rule_name(g->rule),
			      "group", g->name, "at", ts, "firing", fir, "flapping", flap,
			      "resolved", res, "transient", tr, "repeat", repeat);
	g->active = (uint8_t)firing;
	g->last_sent = now;
	a->st.notifications++;
	send(ctx, n);
}

void xp_alerts_tick(struct xp_alerts *a, int64_t now, xp_alert_send_fn send, void *ctx)
{
	for (size_t i = 0; a->nflapping && i < a->subj.n; i++) { /* quiet flappers settle */
		struct subj *s = &a->subj.v[i];
		if (s->flapping && now - s->last_change >= a->o.flap_window_ms) {
			s->flapping = 0;
			a->nflapping--;
			s->nring = 0;
			if (s->firing)
				s->since = s->last_change;
			mark(&a->grp.v[s->group], now);
		}
	}
	for (size_t i = 0; i < a->grp.n; i++) {
		struct group *g = &a->grp.v[i];
		if (g->dirty) {
			int64_t due = g->pending_since + a->o.group_wait_ms;
			if (g->active && g->last_sent + a->o.group_interval_ms > due)
				due = g->last_sent + a->o.group_interval_ms;
			if (now >= due)
				send_group(a, g, now, 0, send, ctx);
		} else if (g->active && now - g->last_sent >= a->o.repeat_ms) {
			send_group(a, g, now, 1, send, ctx);
		}
	}
}

json_t *xp_alerts_active(const struct xp_alerts *a)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < a->grp.n; i++) {
		const struct group *g = &a->grp.v[i];
		json_t *fir = json_array(), *flap = json_array();
		for (size_t k = 0; k < g->members.n; k++) {
			const struct subj *s = &a->subj.v[g->members.v[k]];
			if (s->flapping)
				json_array_append_new(flap, entry(s));
			else if (s->firing)
				json_array_append_new(fir, entry(s));
		}
		if (!json_array_size(fir) && !json_array_size(flap)) {
			json_decref(fir);
			json_decref(flap);
			continue;
		}
		json_array_append_new(arr, json_pack("{s:s,s:s,s:o,s:o,s:b}", "rule",
						     xp_alert_rule_name(g->rule), "group", g->name,
						     "firing", fir, "flapping", flap, "notified",
						     g->active));
	}
	return arr;
}

void xp_alerts_get_stats(const struct xp_alerts *a, struct xp_alert_stats *out)
{
	*out = a->st;
}
