/*
 * canon: the canonical JSON of the typed documents - job specs and job
 * changes, service definitions and a replica's service reference, queue
 * definitions, the price table - as the records, snapshots and API
 * replies carry them (issue 19, item 2: moved here from src/core/state,
 * which holds the types as plain C; the bytes are the same). A canonical
 * document parses back, with this folder's parsers, to the same struct
 * and writes the same text again: the idempotency key's hash
 * (xp_jobspec_hash) and a service's new-version test compare these texts,
 * and the state calls them through its xp_state_docs table.
 */
#include "edge.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/model/mig.h"
#include "../lib/hash.h"
#include "../lib/signame.h"
#include "../lib/timefmt.h"

json_t *xp_jobpatch_json(const struct xp_jobpatch *p)
{
	json_t *o = json_object();
	char buf[32];
	if (p->set & XP_JP_NAME)
		json_object_set_new(o, "name", json_string(p->name));
	if (p->set & XP_JP_PRIORITY)
		json_object_set_new(o, "priority", json_integer(p->priority));
	if (p->set & XP_JP_QUEUE)
		json_object_set_new(o, "queue", json_string(p->queue));
	if (p->set & XP_JP_TIME_LIMIT) {
		snprintf(buf, sizeof(buf), "%lldms", (long long)p->time_limit_ms);
		json_object_set_new(o, "time_limit", json_string(buf));
	}
	return o;
}

static json_t *attrs_json(const struct xp_attr *a, uint16_t n)
{
	json_t *o = json_object();
	for (uint16_t i = 0; i < n; i++)
		json_object_set_new(o, a[i].key, json_string(a[i].value));
	return o;
}

static json_t *strings_json(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

char *xp_jobspec_to_json(const struct xp_jobspec *s)
{
	json_t *o = xp_jobspec_json(s);
	char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return text;
}

json_t *xp_jobspec_json(const struct xp_jobspec *s)
{
	json_t *o = json_object(), *res = json_object();
	char buf[64];

	if (s->name)
		json_object_set_new(o, "name", json_string(s->name));
	if (s->tenant)
		json_object_set_new(o, "tenant", json_string(s->tenant));
	if (s->queue)
		json_object_set_new(o, "queue", json_string(s->queue));
	if (s->node)
		json_object_set_new(o, "node", json_string(s->node));
	json_object_set_new(o, "priority", json_integer(s->priority));
	if (s->ncommand)
		json_object_set_new(o, "command",
				    s->shell ? json_string(s->command[0])
					     : strings_json(s->command, s->ncommand));
	if (s->nargs)
		json_object_set_new(o, "args", strings_json(s->args, s->nargs));
	if (s->nenv)
		json_object_set_new(o, "env", attrs_json(s->env, s->nenv));
	if (s->workdir)
		json_object_set_new(o, "workdir", json_string(s->workdir));
	xp_elastic_json(s, o); /* replicas, checkpoint */
	snprintf(buf, sizeof(buf), "%llum", (unsigned long long)s->cpu_milli);
	json_object_set_new(res, "cpu", json_string(buf));
	json_object_set_new(res, "memory", json_integer((json_int_t)s->mem_mib));
	if (s->dev_count) {
		json_t *d = json_object();
		json_object_set_new(d, "count", json_integer(s->dev_count));
		int any = xp_jobspec_mig_any(s);
		if (any)
			json_object_set_new(d, "mig", json_string(XP_MIG_ANY));
		else if (s->mig_profile)
			json_object_set_new(d, "mig",
					    json_pack("{s:s}", "profile", s->mig_profile));
		if (!s->dev_by_mem && (any || !s->mig_profile))
			json_object_set_new(d, "compute_milli", json_integer(s->dev_milli));
		if (s->dev_mem_mib && (any || !s->mig_profile))
			json_object_set_new(d, "memory", json_integer((json_int_t)s->dev_mem_mib));
		if (s->dev_class >= 0)
			json_object_set_new(d, "class", json_string(xp_class_name(s->dev_class)));
		if (s->vendor)
			json_object_set_new(d, "vendor", json_string(s->vendor));
		if (s->nmodels)
			json_object_set_new(d, "models", strings_json(s->models, s->nmodels));
		if (s->min_mem_mib)
			json_object_set_new(d, "min_memory",
					    json_integer((json_int_t)s->min_mem_mib));
		if (s->min_cc) {
			xp_cc_format(s->min_cc, buf, sizeof(buf));
			json_object_set_new(d, "min_compute_capability", json_string(buf));
		}
		if (s->topo)
			json_object_set_new(d, "topology", json_string(xp_topo_name(s->topo)));
		json_object_set_new(res, "devices", d);
	}
	json_object_set_new(o, "resources", res);
	if (s->nlabels)
		json_object_set_new(o, "labels", attrs_json(s->labels, s->nlabels));
	if (s->duration_ms >= 0) {
		snprintf(buf, sizeof(buf), "%lldms", (long long)s->duration_ms);
		json_object_set_new(o, "duration", json_string(buf));
	}
	if (s->exit_code)
		json_object_set_new(o, "exit_code", json_integer(s->exit_code));
	if (s->time_limit_ms) {
		snprintf(buf, sizeof(buf), "%lldms", (long long)s->time_limit_ms);
		json_object_set_new(o, "time_limit", json_string(buf));
	}
	if (s->colocate || s->gang_timeout_ms) {
		json_t *g = json_object();
		if (s->colocate)
			json_object_set_new(g, "colocate", json_string(xp_coloc_name(s->colocate)));
		if (s->gang_timeout_ms) {
			snprintf(buf, sizeof(buf), "%lldms", (long long)s->gang_timeout_ms);
			json_object_set_new(g, "timeout", json_string(buf));
		}
		json_object_set_new(o, "gang", g);
	}
	if (s->ndeps) {
		json_t *a = json_array();
		for (uint16_t i = 0; i < s->ndeps; i++)
			json_array_append_new(a, json_pack("{s:I,s:s}", "job",
							   (json_int_t)s->deps[i].job, "type",
							   xp_dep_type_name(s->deps[i].type)));
		json_object_set_new(o, "depends_on", a);
	}
	if (s->workflow)
		json_object_set_new(o, "workflow", json_string(s->workflow));
	if (s->qos)
		json_object_set_new(o, "qos", json_string(xp_qos_name(s->qos)));
	if (s->deadline_ms) {
		char ts[XP_TIME_LEN];
		xp_time_format(s->deadline_ms, ts);
		json_object_set_new(o, "deadline", json_string(ts));
	} else if (s->deadline_in_ms) {
		snprintf(buf, sizeof(buf), "%lldms", (long long)s->deadline_in_ms);
		json_object_set_new(o, "deadline", json_string(buf));
	}
	if (s->fail_on_lost)
		json_object_set_new(o, "on_node_lost", json_string("fail"));
	if (s->hold_for_nodes)
		json_object_set_new(o, "hold_for_nodes", json_true());
	if (s->vgpu_off)
		json_object_set_new(o, "vgpu", json_string("off"));
	xp_svcref_json(&s->svc, o);
	return o;
}

void xp_elastic_json(const struct xp_jobspec *s, json_t *o)
{
	if (s->rmax)
		json_object_set_new(
			o, "replicas",
			json_pack("{s:i,s:i}", "min", (int)s->rmin, "max", (int)s->rmax));
	else
		json_object_set_new(o, "replicas", json_integer(s->replicas));
	if (!s->ckpt_signal && s->ckpt_grace_ms < 0)
		return;
	json_t *c = json_object();
	if (s->ckpt_signal)
		json_object_set_new(c, "signal",
				    json_string(xp_signal_name(s->ckpt_signal)
							? xp_signal_name(s->ckpt_signal)
							: "SIGUSR1"));
	if (s->ckpt_grace_ms >= 0) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%lldms", (long long)s->ckpt_grace_ms);
		json_object_set_new(c, "grace", json_string(buf));
	}
	json_object_set_new(o, "checkpoint", c);
}

static json_t *probe_json(const struct xp_probe *p)
{
	char per[32], to[32];
	snprintf(per, sizeof(per), "%lldms", (long long)p->period_ms);
	snprintf(to, sizeof(to), "%lldms", (long long)p->timeout_ms);
	if (p->kind == XP_PROBE_HTTP)
		return json_pack("{s:s,s:s,s:s}", "http", p->path, "period", per, "timeout", to);
	if (p->kind == XP_PROBE_CMD)
		return json_pack("{s:s,s:s,s:s}", "command", p->path, "period", per, "timeout", to);
	return json_pack("{s:b,s:s,s:s}", "tcp", 1, "period", per, "timeout", to);
}

static json_t *scrape_json(const struct xp_scrape *l)
{
	return json_pack("{s:s,s:s,s:s}", "kind", l->kind == XP_SCRAPE_RATE ? "rate" : "gauge",
			 "path", l->path, "series", l->series);
}

static json_t *autoscale_json(const struct xp_autoscale *a)
{
	char per[32], up[32], down[32];
	snprintf(per, sizeof(per), "%lldms", (long long)a->period_ms);
	snprintf(up, sizeof(up), "%lldms", (long long)a->up_window_ms);
	snprintf(down, sizeof(down), "%lldms", (long long)a->down_window_ms);
	json_t *o = json_pack("{s:s,s:f,s:s,s:s,s:s,s:s,s:s,s:f}", "metric",
			      xp_metric_name(a->metric), "target", a->target, "path", a->load.path,
			      "series", a->load.series, "period", per, "up_window", up,
			      "down_window", down, "tolerance", a->tolerance);
	if (a->predict_ms) {
		snprintf(per, sizeof(per), "%lldms", (long long)a->predict_ms);
		json_object_set_new(o, "predict", json_string(per));
	}
	return o;
}

json_t *xp_servicespec_json(const struct xp_servicespec *s)
{
	char buf[32];
	json_t *o = json_pack("{s:s,s:s}", "kind", "service", "name", s->name);
	if (s->tenant[0])
		json_object_set_new(o, "tenant", json_string(s->tenant));
	if (s->queue[0])
		json_object_set_new(o, "queue", json_string(s->queue));
	if (s->min == s->max)
		json_object_set_new(o, "replicas", json_integer(s->min));
	else
		json_object_set_new(o, "replicas",
				    json_pack("{s:i,s:i}", "min", (int)s->min, "max", (int)s->max));
	if (s->port)
		json_object_set_new(o, "port", json_integer(s->port));
	json_object_set_new(o, "readiness", probe_json(&s->ready));
	snprintf(buf, sizeof(buf), "%lldms", (long long)s->drain_ms);
	json_object_set_new(o, "drain", json_string(buf));
	json_object_set_new(o, "update",
			    json_pack("{s:i,s:i}", "max_surge", (int)s->max_surge,
				      "max_unavailable", (int)s->max_unavailable));
	if (s->scale.on)
		json_object_set_new(o, "autoscale", autoscale_json(&s->scale));
	json_t *tm = xp_jobspec_json(&s->tmpl);
	json_object_del(tm, "replicas"); /* the service's */
	json_object_set_new(o, "template", tm);
	return o;
}

/* A replica's canonical JSON: the template's with the service's tenant,
 * queue, name and reference, as xp_servicespec_replica (src/edge) writes
 * them before it parses the result - canonical JSON parses to the same
 * spec and writes the same text again (spec.h), so comparing these texts
 * compares the replicas without parsing. */
static char *replica_json(const struct xp_servicespec *s)
{
	struct xp_jobspec r = s->tmpl; /* borrowed: only read */
	char name[XP_NAME_MAX + 1];
	snprintf(name, sizeof(name), "%.50s-v%u", s->name, 1u);
	r.name = name;
	r.tenant = s->tenant[0] ? (char *)s->tenant : NULL;
	r.queue = s->queue[0] ? (char *)s->queue : NULL;
	struct xp_svccheck chk = { .ready = s->ready };
	if (s->scale.on)
		chk.load = s->scale.load;
	memset(&r.svc, 0, sizeof(r.svc));
	r.svc.name = (char *)s->name;
	r.svc.version = 1;
	r.svc.chk = &chk;
	return xp_jobspec_to_json(&r);
}

int xp_servicespec_new_version(const struct xp_servicespec *a, const struct xp_servicespec *b)
{
	char *ta = replica_json(a), *tb = replica_json(b);
	int differ = !ta || !tb || strcmp(ta, tb);
	free(ta);
	free(tb);
	return differ;
}

void xp_svcref_json(const struct xp_svcref *r, json_t *spec)
{
	if (!r->name)
		return;
	json_t *o = json_pack("{s:s,s:i,s:o}", "name", r->name, "version", (int)r->version,
			      "readiness", probe_json(&r->chk->ready));
	if (r->chk->load.kind)
		json_object_set_new(o, "load", scrape_json(&r->chk->load));
	json_object_set_new(spec, "service", o);
}

json_t *xp_queuespec_json(const struct xp_queuespec *q)
{
	json_t *o = json_object(), *quota = json_object();
	json_object_set_new(o, "name", json_string(q->name));
	if (q->parent[0])
		json_object_set_new(o, "parent", json_string(q->parent));
	json_object_set_new(o, "priority", json_integer(q->priority));
	json_object_set_new(o, "weight", json_integer(q->weight));
	json_object_set_new(o, "preempt", json_string(xp_preempt_name(q->preempt)));
	if (q->aging_ms) {
		char b[32];
		snprintf(b, sizeof(b), "%lldms", (long long)q->aging_ms);
		json_object_set_new(o, "aging", json_string(b));
	}
	for (int r = 0; r < XP_RES_N; r++) {
		if (!q->guarantee[r] && q->max[r] == XP_QUOTA_NONE)
			continue;
		json_t *e = json_object();
		char b[32];
		if (q->guarantee[r]) {
			xp_res_format(r, q->guarantee[r], b, sizeof(b));
			json_object_set_new(e, "guarantee", json_string(b));
		}
		if (q->max[r] != XP_QUOTA_NONE) {
			xp_res_format(r, q->max[r], b, sizeof(b));
			json_object_set_new(e, "max", json_string(b));
		}
		json_object_set_new(quota, xp_res_name(r), e);
	}
	json_object_set_new(o, "quota", quota);
	if (q->nallow) {
		json_t *a = json_array();
		for (uint8_t i = 0; i < q->nallow; i++)
			json_array_append_new(a, json_string(q->allow[i]));
		json_object_set_new(o, "allow", a);
	}
	return o;
}

json_t *xp_prices_json(const struct xp_prices *p)
{
	json_t *o = json_object(), *d = json_object(), *tod = json_array();
	json_object_set_new(o, "currency", json_string(p->currency));
	json_object_set_new(o, "cpu", json_real(p->cpu));
	json_object_set_new(o, "memory", json_real(p->memory));
	json_object_set_new(o, "energy", json_real(p->energy));
	for (uint32_t i = 0; i < p->nmodels; i++)
		json_object_set_new(d, p->model[i], json_real(p->model_price[i]));
	json_object_set_new(d, "default", json_real(p->dev_default));
	json_object_set_new(o, "devices", d);
	for (int h = 0; h < 24;) { /* runs of equal factors other than 1 */
		int e = h + 1;
		while (e < 24 && p->factor[e] == p->factor[h])
			e++;
		if (p->factor[h] != 1)
			json_array_append_new(tod, json_pack("{s:i,s:i,s:f}", "from", h, "to", e,
							     "factor", p->factor[h]));
		h = e;
	}
	json_object_set_new(o, "time_of_day", tod);
	return o;
}

uint64_t xp_jobspec_hash(const struct xp_jobspec *s)
{
	char *j = xp_jobspec_to_json(s);
	uint64_t h = xp_hash_bytes(j, strlen(j));
	free(j);
	return h;
}
