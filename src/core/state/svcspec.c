/*
 * svcspec: service definitions and a replica's service, in and out (see
 * svcspec.h).
 */
#include "svcspec.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/parse.h"
#include "../../lib/timefmt.h"
#include "../../lib/xalloc.h"

static const char *const metric_names[XP_METRIC_N] = { "rps", "inflight", "latency_p99" };

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

const char *xp_metric_name(int m)
{
	return m >= 0 && m < XP_METRIC_N ? metric_names[m] : "?";
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
			      metric_names[a->metric], "target", a->target, "path", a->load.path,
			      "series", a->load.series, "period", per, "up_window", up,
			      "down_window", down, "tolerance", a->tolerance);
	if (a->predict_ms) {
		snprintf(per, sizeof(per), "%lldms", (long long)a->predict_ms);
		json_object_set_new(o, "predict", json_string(per));
	}
	return o;
}

void xp_servicespec_free(struct xp_servicespec *s)
{
	xp_jobspec_free(&s->tmpl);
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
	json_object_set_new(o, "update", json_pack("{s:i,s:i}", "max_surge", (int)s->max_surge,
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

void xp_svcref_free(struct xp_svcref *r)
{
	free(r->name);
	free(r->chk);
	r->name = NULL;
	r->chk = NULL;
}
