/*
 * snapshot_parts: the services', the meter's, the elastic jobs' and the
 * MIG mode changes' parts of a snapshot (snapshot.c has the rest), as the
 * state's files wrote and read them before they moved to the edge.
 */
#include "snapshot_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/xalloc.h"

/* A definition from its canonical JSON (a record's or a snapshot's). */
static int spec_from(const struct xp_state *st, json_t *def, struct xp_servicespec *out,
		     struct xp_err *err)
{
	char *text = json_is_object(def) ? json_dumps(def, JSON_COMPACT) : NULL;
	if (!text)
		return xp_errf(err, XP_ECORRUPT, "spec: missing or not an object");
	int rc = st->docs->servicespec("service", text, strlen(text), 1, out, NULL, err);
	free(text);
	return rc;
}

json_t *xp_services_snapshot(const struct xp_state *st)
{
	json_t *a = json_array();
	for (size_t i = 0; i < st->services.n; i++) {
		const struct xp_service *s = &st->services.v[i];
		json_t *sc = json_array();
		for (uint32_t k = s->nscales > XP_SERVICE_SCALES ? s->nscales - XP_SERVICE_SCALES
								 : 0;
		     k < s->nscales; k++) {
			const struct xp_scale_ev *e = &s->scales[k % XP_SERVICE_SCALES];
			json_array_append_new(sc, json_pack("{s:I,s:i,s:i,s:s}", "at",
							    (json_int_t)e->at, "from", (int)e->from,
							    "to", (int)e->to, "reason", e->reason));
		}
		json_array_append_new(a, json_pack("{s:o,s:i,s:i,s:I,s:I,s:i,s:I,s:I,s:I,s:o,s:i}",
						   "spec", xp_servicespec_json(&s->spec), "version",
						   (int)s->version, "desired", (int)s->desired,
						   "first_job", (json_int_t)s->first_job,
						   "created_at", (json_int_t)s->created_at,
						   "fail_streak", (int)s->fail_streak, "restarts",
						   (json_int_t)s->restarts, "last_end_job",
						   (json_int_t)s->last_end_job, "last_end_at",
						   (json_int_t)s->last_end_at, "scales", sc,
						   "nscales", (int)s->nscales));
		json_t *so = json_array_get(a, json_array_size(a) - 1);
		json_object_set_new(
			so, "rollout",
			json_pack("{s:i,s:i,s:i,s:i,s:b}", "prev_version", (int)s->prev_version,
				  "next_version", (int)s->next_version, "canary", (int)s->canary,
				  "weight", (int)s->canary_weight, "rolling", (int)s->rolling));
		if (s->prev)
			json_object_set_new(so, "prev", xp_servicespec_json(s->prev));
	}
	return a;
}

/* before the jobs: they join their services' lists as they load */
int xp_services_restore(struct xp_state *st, json_t *arr, struct xp_err *err)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
	{
		struct xp_service s;
		json_int_t first, created, restarts, last_job, last_at;
		int version, desired, streak;
		memset(&s, 0, sizeof(s));
		if (json_unpack(v, "{s:i,s:i,s:I,s:I,s:i,s:I,s:I,s:I}", "version", &version,
				"desired", &desired, "first_job", &first, "created_at", &created,
				"fail_streak", &streak, "restarts", &restarts, "last_end_job",
				&last_job, "last_end_at", &last_at) < 0 ||
		    version < 1 || desired < 0 || streak < 0)
			return xp_errf(err, XP_ECORRUPT, "snapshot: service %zu is malformed", i);
		int rc = spec_from(st, json_object_get(v, "spec"), &s.spec, err);
		if (rc < 0)
			return rc;
		s.version = (uint32_t)version;
		s.desired = (uint32_t)desired;
		s.first_job = (uint64_t)first;
		s.created_at = created;
		s.fail_streak = (uint32_t)streak;
		s.restarts = (uint64_t)restarts;
		s.last_end_job = (uint64_t)last_job;
		s.last_end_at = last_at;
		size_t k;
		json_t *e;
		json_t *sc = json_object_get(v, "scales");
		int nsc = (int)json_integer_value(json_object_get(v, "nscales"));
		s.nscales = nsc > 0 ? (uint32_t)nsc - (uint32_t)json_array_size(sc) : 0;
		json_array_foreach(sc, k, e)
		{
			struct xp_scale_ev *x = &s.scales[s.nscales++ % XP_SERVICE_SCALES];
			const char *why = json_string_value(json_object_get(e, "reason"));
			x->at = json_integer_value(json_object_get(e, "at"));
			x->from = (uint32_t)json_integer_value(json_object_get(e, "from"));
			x->to = (uint32_t)json_integer_value(json_object_get(e, "to"));
			snprintf(x->reason, sizeof(x->reason), "%s", why ? why : "");
		}
		json_t *ro = json_object_get(v, "rollout");
		s.next_version = (uint32_t)json_integer_value(json_object_get(ro, "next_version"));
		s.prev_version = (uint32_t)json_integer_value(json_object_get(ro, "prev_version"));
		s.canary = (uint32_t)json_integer_value(json_object_get(ro, "canary"));
		s.canary_weight = (uint32_t)json_integer_value(json_object_get(ro, "weight"));
		s.rolling = json_is_true(json_object_get(ro, "rolling"));
		if (s.next_version <= s.version)
			s.next_version = s.version + 1;
		if (json_object_get(v, "prev")) {
			s.prev = xcalloc(1, sizeof(*s.prev));
			if ((rc = spec_from(st, json_object_get(v, "prev"), s.prev, err)) < 0) {
				free(s.prev);
				s.prev = NULL;
				xp_service_free(&s);
				return rc;
			}
		}
		if ((rc = xp_service_add(st, &s, err)) < 0)
			return rc;
	}
	return 0;
}

void xp_elastic_snapshot(const struct xp_job *j, json_t *jo)
{
	if (!xp_job_elastic(j) && !j->resizes)
		return;
	json_t *e = json_pack("{s:i,s:i,s:i,s:I}", "size", (int)j->spec.replicas, "epoch",
			      (int)j->epoch, "resizes", (int)j->resizes, "resized_at",
			      (json_int_t)j->resized_at);
	if (j->resize_why)
		json_object_set_new(e, "reason", json_string(j->resize_why));
	json_object_set_new(jo, "elastic", e);
}

int xp_elastic_restore(struct xp_job *j, json_t *jo, struct xp_err *err)
{
	json_t *e = json_object_get(jo, "elastic");
	json_int_t size = j->spec.replicas, epoch = 0, resizes = 0, at = 0;
	const char *why = NULL;
	if (!e)
		return 0;
	if (json_unpack(e, "{s:I,s:I,s:I,s:I,s?s}", "size", &size, "epoch", &epoch, "resizes",
			&resizes, "resized_at", &at, "reason", &why) < 0 ||
	    !xp_job_elastic(j) || size < j->spec.rmin || size > j->spec.rmax || epoch < 0 ||
	    epoch > UINT32_MAX || resizes < 0 || resizes > UINT32_MAX)
		return xp_errf(err, XP_ECORRUPT, "snapshot: job %llu: bad elastic size",
			       (unsigned long long)j->id);
	j->spec.replicas = (uint32_t)size;
	j->epoch = (uint32_t)epoch;
	j->resizes = (uint32_t)resizes;
	j->resized_at = at;
	j->resize_why = why && *why ? xstrdup(why) : NULL;
	return 0;
}

json_t *xp_meter_snapshot(const struct xp_state *st)
{
	const struct xp_meter *m = &st->meter;
	json_t *o = json_object(), *a = json_array();
	for (size_t i = 0; i < m->names.n; i++)
		json_array_append_new(a, json_string(m->names.v[i]));
	json_object_set_new(o, "names", a);
	a = json_array();
	for (size_t i = 0; i < m->runs.n; i++) {
		const struct xp_meter_run *r = &m->runs.v[i];
		json_t *d = json_array();
		for (uint32_t k = 0; k < r->ndev; k++) {
			const struct xp_meter_dev *x = &m->devs.v[r->dev0 + k];
			json_array_append_new(d,
					      json_pack("[i,i,i]", x->model, x->milli, x->watts));
		}
		json_t *row =
			json_pack("[I,i,i,i,I,I,I,I,o]", (json_int_t)r->job, r->tenant, r->queue,
				  r->attempt, (json_int_t)r->start, (json_int_t)r->end,
				  (json_int_t)r->cpu_milli, (json_int_t)r->mem_mib, d);
		if (r->measured_j)
			json_array_append_new(row, json_integer((json_int_t)r->measured_j));
		json_array_append_new(a, row);
	}
	json_object_set_new(o, "runs", a);
	a = json_array();
	for (size_t i = 0; i < m->counts.n; i++) {
		const struct xp_meter_count *c = &m->counts.v[i];
		json_array_append_new(a, json_pack("[I,i,i,i,I,I]", (json_int_t)c->job, c->tenant,
						   c->queue, c->name, (json_int_t)c->at,
						   (json_int_t)c->value));
	}
	json_object_set_new(o, "counts", a);
	if (m->prices.set)
		json_object_set_new(o, "prices", xp_prices_json(&m->prices));
	return o;
}

int xp_meter_restore(struct xp_state *st, json_t *o, struct xp_err *err)
{
	struct xp_meter *m = &st->meter;
	size_t i;
	json_t *v;
	if (!o)
		return 0; /* a snapshot from before metering */
	json_array_foreach(json_object_get(o, "names"), i, v)
	{
		if (!json_is_string(v))
			return xp_errf(err, XP_ECORRUPT, "snapshot: meter name %zu is malformed",
				       i);
		xp_vec_push(&m->names, xstrdup(json_string_value(v)));
	}
	json_array_foreach(json_object_get(o, "runs"), i, v)
	{
		json_int_t job, start, end, cpu, mem, mj = 0;
		int tenant, queue, attempt;
		json_t *d, *x;
		size_t k;
		if (json_unpack(v, "[I,i,i,i,I,I,I,I,o!]", &job, &tenant, &queue, &attempt, &start,
				&end, &cpu, &mem, &d) < 0 &&
		    json_unpack(v, "[I,i,i,i,I,I,I,I,o,I]", &job, &tenant, &queue, &attempt, &start,
				&end, &cpu, &mem, &d, &mj) < 0)
			return xp_errf(err, XP_ECORRUPT, "snapshot: meter run %zu is malformed", i);
		if (tenant < 0 || (size_t)tenant >= st->tenants.n || queue < 0 ||
		    (size_t)queue >= st->queues.n || !json_is_array(d) || mj < 0)
			return xp_errf(err, XP_ECORRUPT, "snapshot: meter run %zu is malformed", i);
		struct xp_meter_run r = { (uint64_t)job,
					  (uint32_t)tenant,
					  (uint32_t)queue,
					  (uint32_t)attempt,
					  start,
					  end,
					  (uint64_t)cpu,
					  (uint64_t)mem,
					  (uint32_t)m->devs.n,
					  0,
					  (uint64_t)mj };
		json_array_foreach(d, k, x)
		{
			int model, milli, watts;
			if (json_unpack(x, "[i,i,i]", &model, &milli, &watts) < 0 || model < 0 ||
			    (size_t)model >= m->names.n || milli < 0 || watts < 0)
				return xp_errf(err, XP_ECORRUPT,
					       "snapshot: meter run %zu device %zu is malformed", i,
					       k);
			struct xp_meter_dev dv = { (uint32_t)model, (uint32_t)milli,
						   (uint32_t)watts };
			xp_vec_push(&m->devs, dv);
			r.ndev++;
		}
		xp_vec_push(&m->runs, r);
	}
	json_array_foreach(json_object_get(o, "counts"), i, v)
	{
		json_int_t job, at, value;
		int tenant, queue, name;
		if (json_unpack(v, "[I,i,i,i,I,I]", &job, &tenant, &queue, &name, &at, &value) <
			    0 ||
		    tenant < 0 || (size_t)tenant >= st->tenants.n || queue < 0 ||
		    (size_t)queue >= st->queues.n || name < 0 || (size_t)name >= m->names.n)
			return xp_errf(err, XP_ECORRUPT, "snapshot: meter counter %zu is malformed",
				       i);
		struct xp_meter_count c = {
			(uint64_t)job,	(uint32_t)tenant, (uint32_t)queue, (uint32_t)name, at,
			(uint64_t)value
		};
		xp_vec_push(&m->counts, c);
	}
	json_t *p = json_object_get(o, "prices");
	if (p) { /* read as a prices.set record is */
		char *text = json_dumps(p, JSON_COMPACT);
		struct xp_prices pr;
		int rc = st->docs->prices("prices.set", text, strlen(text), 1, &pr, err);
		free(text);
		if (rc < 0)
			return xp_err_prefix(err, "snapshot: meter prices: "), XP_ECORRUPT;
		xp_meter_prices(st, &pr);
	}
	return 0;
}

void xp_migmode_snap(const struct xp_state *st, size_t n, json_t *node)
{
	const struct xp_nodeinfo *ni = &st->nodes.v[n];
	if (ni->mig_leave)
		json_object_set_new(node, "mig_mode_change", json_true());
	if (ni->mm && ni->mm->dev >= 0)
		json_object_set_new(node, "mig_mode",
				    json_pack("{s:i,s:I,s:I,s:i}", "device", (int)ni->mm->dev,
					      "job", (json_int_t)ni->mm->job, "at",
					      (json_int_t)ni->mm->at, "room", (int)ni->mm->room));
	if (ni->mm && ni->mm->dev >= 0 && !ni->mm->on) /* MIG off; absent: on, as before */
		json_object_set_new(json_object_get(node, "mig_mode"), "mode", json_string("off"));
	if (ni->mm && ni->mm->refused >= 0)
		json_object_set_new(node, "mig_mode_refused",
				    json_pack("{s:i,s:I,s:s}", "device", (int)ni->mm->refused, "at",
					      (json_int_t)ni->mm->refused_at, "why", ni->mm->why));
	json_t *sw = json_array(); /* the hold against flapping: [[device, at], ...] */
	for (uint16_t d = 0; ni->mm && d < st->c->nodes[n].ndevs; d++)
		if (ni->mm->switched_at[d])
			json_array_append_new(
				sw, json_pack("[i,I]", (int)d, (json_int_t)ni->mm->switched_at[d]));
	if (json_array_size(sw))
		json_object_set(node, "mig_mode_switched", sw);
	json_decref(sw);
}

int xp_migmode_restore(struct xp_state *st, size_t n, json_t *node, struct xp_err *err)
{
	struct xp_nodeinfo *ni = &st->nodes.v[n];
	json_t *m = json_object_get(node, "mig_mode"),
	       *r = json_object_get(node, "mig_mode_refused");
	if (json_is_true(json_object_get(node, "mig_mode_change")) && !ni->mig_leave) {
		ni->mig_leave = 1;
		st->mm_allowed++;
	}
	json_int_t rd = json_integer_value(json_object_get(r, "device"));
	if (r && rd >= 0 && rd < st->c->nodes[n].ndevs) { /* the last refusal */
		struct xp_migmode *mm = xp_migmode_get(st, n);
		mm->refused = (int16_t)rd;
		mm->refused_at = json_integer_value(json_object_get(r, "at"));
		mm->refused_until[rd] = mm->refused_at + XP_MIGMODE_RETRY_MS;
		snprintf(mm->why, sizeof(mm->why), "%s",
			 json_string_value(json_object_get(r, "why")) ?: "");
	}
	size_t i;
	json_t *sw;
	json_array_foreach(json_object_get(node, "mig_mode_switched"), i, sw)
	{
		json_int_t sd = json_integer_value(json_array_get(sw, 0));
		if (sd >= 0 && sd < st->c->nodes[n].ndevs)
			xp_migmode_get(st, n)->switched_at[sd] = json_integer_value(json_array_get(sw, 1));
	}
	if (!m)
		return 0;
	json_int_t dev = json_integer_value(json_object_get(m, "device"));
	json_int_t room = json_integer_value(json_object_get(m, "room"));
	if (dev < 0 || dev >= st->c->nodes[n].ndevs)
		return xp_errf(err, XP_ECORRUPT, "snapshot: node %s: mig_mode: bad device",
			       st->c->nodes[n].name);
	struct xp_migmode *mm = xp_migmode_get(st, n);
	mm->dev = (int16_t)dev;
	mm->on = !json_is_string(json_object_get(m, "mode")) ||
		 strcmp(json_string_value(json_object_get(m, "mode")), "off");
	mm->room = (uint8_t)(!mm->on ? 0 : room > 0 && room < 256 ? room : 1); /* off: none */
	mm->job = (uint64_t)json_integer_value(json_object_get(m, "job"));
	mm->at = json_integer_value(json_object_get(m, "at"));
	st->mm_held++;
	st->sched_stale = 1;
	return 0;
}
