/*
 * svcspec: service definitions and a replica's service reference read
 * from a document tree (edge.h); the writer stays in the state
 * (src/core/state/svcspec.c).
 */
#include "edge_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../descriptor/tree.h"
#include "../lib/parse.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"

static const char *const top_keys[] = { "kind",	"name",	 "tenant",    "queue",
					"replicas", "port",	 "readiness", "drain",
					"autoscale", "update",	 "template",  NULL };
static const char *const update_keys[] = { "max_surge", "max_unavailable", NULL };
static const char *const scale_keys[] = { "metric",	  "target",	 "path",
					  "series",	  "period",	 "up_window",
					  "down_window", "tolerance", "predict",
					  NULL };
static const char *const load_keys[] = { "kind", "path", "series", NULL };
static const char *const metric_series[XP_METRIC_N] = { "requests_total", "inflight_requests",
							 "latency_p99_seconds" };
static const char *const range_keys[] = { "min", "max", NULL };
static const char *const probe_keys[] = { "http", "tcp", "command", "period", "timeout", NULL };
static const char *const ref_keys[] = { "name", "version", "readiness", "load", NULL };
/* a template is one replica of the service: what the service sets, or
 * what a long-running replica cannot have, stays out of it */
static const char *const tmpl_forbidden[] = { "replicas", "tenant",   "queue",	  "depends_on",
					      "workflow", "deadline", "gang",	  "time_limit",
					      "service",  NULL };

#define DEFAULT_PERIOD_MS 1000
#define DEFAULT_DRAIN_MS  2000
#define PROBE_MAX_MS	  (10 * 60 * 1000)

static int fail_at(struct xp_walk *w, const struct xp_tree *t, const char *key, const char *why)
{
	size_t m = xp_walk_push_key(w, key);
	const struct xp_tree *v = xp_tree_get(t, key);
	int rc = xp_walk_fail(w, v ? v->line : t->line, XP_EINVAL, "%s", why);
	xp_walk_pop(w, m);
	return rc;
}

static void probe_init(struct xp_probe *p)
{
	memset(p, 0, sizeof(*p));
	p->kind = XP_PROBE_TCP;
	p->period_ms = DEFAULT_PERIOD_MS;
	p->timeout_ms = DEFAULT_PERIOD_MS;
}

/* readiness: {http: /path | tcp: true | command: CMD, period, timeout} */
static int parse_probe(struct xp_walk *w, const struct xp_tree *t, struct xp_probe *p)
{
	const char *path = NULL, *cmd = NULL;
	int rc;
	probe_init(p);
	if ((rc = xp_walk_want(w, t, XP_TREE_MAP, "a map {http: PATH, period, timeout}")) < 0 ||
	    (rc = xp_walk_keys(w, t, probe_keys)) < 0 ||
	    (rc = xp_walk_get_str(w, t, "http", XP_PROBE_PATH_MAX, &path)) < 0 ||
	    (rc = xp_walk_get_str(w, t, "command", XP_PROBE_PATH_MAX, &cmd)) < 0)
		return rc;
	const struct xp_tree *tcp = xp_tree_field(t, "tcp");
	if ((path != NULL) + (tcp != NULL) + (cmd != NULL) > 1)
		return fail_at(w, t, cmd ? "command" : "tcp",
			       "give one of http, tcp and command");
	if (cmd && (!*cmd || strpbrk(cmd, "\r\n")))
		return fail_at(w, t, "command", "expected a one-line shell command");
	if (cmd) {
		p->kind = XP_PROBE_CMD;
		snprintf(p->path, sizeof(p->path), "%s", cmd);
	}
	if (tcp && (tcp->kind != XP_TREE_SCALAR || strcmp(tcp->text, "true")))
		return fail_at(w, t, "tcp", "expected true (the port takes a connection)");
	if (path) {
		if (path[0] != '/' || strpbrk(path, " \r\n\t"))
			return fail_at(w, t, "http",
				       "expected a path starting with '/', without spaces");
		p->kind = XP_PROBE_HTTP;
		snprintf(p->path, sizeof(p->path), "%s", path);
	}
	if ((rc = xp_walk_get_duration(w, t, "period", PROBE_MAX_MS, &p->period_ms)) < 0 ||
	    (rc = xp_walk_get_duration(w, t, "timeout", PROBE_MAX_MS, &p->timeout_ms)) < 0)
		return rc;
	if (p->period_ms < 100)
		return fail_at(w, t, "period", "must be at least 100ms");
	if (p->timeout_ms < 10)
		return fail_at(w, t, "timeout", "must be at least 10ms");
	return 0;
}

static int metric_parse(const char *s)
{
	for (int i = 0; i < XP_METRIC_N; i++)
		if (!strcmp(s, xp_metric_name(i)))
			return i;
	return -1;
}

static int series_ok(const char *s)
{
	if (!*s || strlen(s) > XP_SERIES_MAX || !(isalpha((unsigned char)*s) || *s == '_'))
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != ':')
			return 0;
	return 1;
}

/* a scrape's path and series; kind set by the caller */
static int parse_scrape(struct xp_walk *w, const struct xp_tree *t, struct xp_scrape *l)
{
	const char *path = NULL, *series = NULL;
	int rc;
	if ((rc = xp_walk_get_str(w, t, "path", XP_PROBE_PATH_MAX, &path)) < 0 ||
	    (rc = xp_walk_get_str(w, t, "series", XP_SERIES_MAX, &series)) < 0)
		return rc;
	if (path && (path[0] != '/' || strpbrk(path, " \r\n\t")))
		return fail_at(w, t, "path", "expected a path starting with '/', without spaces");
	if (series && !series_ok(series))
		return fail_at(w, t, "series", "expected a Prometheus metric name");
	if (path)
		snprintf(l->path, sizeof(l->path), "%s", path);
	if (series)
		snprintf(l->series, sizeof(l->series), "%s", series);
	return 0;
}

static int get_ms(struct xp_walk *w, const struct xp_tree *t, const char *key, int64_t *out)
{
	return xp_walk_get_duration(w, t, key, 24LL * 3600 * 1000, out);
}

/* autoscale: {metric, target, path, series, period, up_window, down_window, tolerance} */
static int parse_autoscale(struct xp_walk *w, const struct xp_tree *t, struct xp_autoscale *a)
{
	int rc, m = 0;
	const struct xp_tree *v;
	if ((rc = xp_walk_want(w, t, XP_TREE_MAP, "a map {metric, target, ...}")) < 0 ||
	    (rc = xp_walk_keys(w, t, scale_keys)) < 0)
		return rc;
	if ((rc = xp_walk_get_enum(w, t, "metric", metric_parse, "rps, inflight or latency_p99",
				   &m)) <= 0)
		return rc < 0 ? rc : fail_at(w, t, "metric", "expected rps, inflight or latency_p99");
	a->on = 1;
	a->metric = (uint8_t)m;
	if (!(v = xp_tree_field(t, "target")) || v->kind != XP_TREE_SCALAR ||
	    xp_parse_double(v->text, &a->target) < 0 || !(a->target > 0) || a->target > 1e9)
		return fail_at(w, t, "target", "expected a number above 0: the metric per replica");
	a->tolerance = 0.1;
	if ((v = xp_tree_field(t, "tolerance")) &&
	    (v->kind != XP_TREE_SCALAR || xp_parse_double(v->text, &a->tolerance) < 0 ||
	     !(a->tolerance >= 0) || a->tolerance > 1))
		return fail_at(w, t, "tolerance", "expected a number from 0 to 1");
	a->load.kind = m == XP_METRIC_RPS ? XP_SCRAPE_RATE : XP_SCRAPE_GAUGE;
	snprintf(a->load.path, sizeof(a->load.path), "/metrics");
	snprintf(a->load.series, sizeof(a->load.series), "%s", metric_series[m]);
	a->period_ms = 15000;
	a->down_window_ms = 300000;
	if ((rc = parse_scrape(w, t, &a->load)) < 0 || (rc = get_ms(w, t, "period", &a->period_ms)) < 0 ||
	    (rc = get_ms(w, t, "up_window", &a->up_window_ms)) < 0 ||
	    (rc = get_ms(w, t, "down_window", &a->down_window_ms)) < 0)
		return rc;
	if (a->period_ms < 100)
		return fail_at(w, t, "period", "must be at least 100ms");
	if ((rc = get_ms(w, t, "predict", &a->predict_ms)) < 0)
		return rc;
	return 0;
}

/* replicas: N | {min, max} */
static int parse_replicas(struct xp_walk *w, const struct xp_tree *t, struct xp_servicespec *s)
{
	const struct xp_tree *r = xp_tree_field(t, "replicas");
	int64_t v;
	int rc;
	s->min = s->max = s->replicas = 1;
	if (!r)
		return 0;
	size_t m = xp_walk_push_key(w, "replicas");
	if (r->kind == XP_TREE_SCALAR) {
		rc = xp_walk_int(w, r, 0, XP_SERVICE_MAX_REPLICAS, &v);
		if (rc >= 0)
			s->min = s->max = s->replicas = (uint32_t)v;
	} else {
		rc = xp_walk_want(w, r, XP_TREE_MAP, "a number or a map {min, max}");
		if (rc == 0)
			rc = xp_walk_keys(w, r, range_keys);
		if (rc == 0 && (rc = xp_walk_get_int(w, r, "min", 0, XP_SERVICE_MAX_REPLICAS,
						     &v)) >= 0)
			s->min = rc ? (uint32_t)v : 1;
		if (rc >= 0 && (rc = xp_walk_get_int(w, r, "max", 1, XP_SERVICE_MAX_REPLICAS,
						     &v)) == 0)
			rc = xp_walk_fail(w, r->line, XP_EINVAL, "max: expected the most replicas");
		if (rc > 0)
			s->max = (uint32_t)v;
		if (rc >= 0 && s->min > s->max)
			rc = xp_walk_fail(w, r->line, XP_EINVAL,
					  "min (%u) is above max (%u)", s->min, s->max);
		s->replicas = s->min;
	}
	xp_walk_pop(w, m);
	return rc < 0 ? rc : 0;
}

static int parse_template(struct xp_walk *w, const struct xp_tree *t, struct xp_servicespec *s)
{
	const struct xp_tree *tm = xp_tree_field(t, "template");
	char field[320];
	if (!tm)
		return fail_at(w, t, "template",
			       "a service needs a template: the job spec of one replica");
	if (tm->kind == XP_TREE_MAP)
		for (size_t i = 0; tmpl_forbidden[i]; i++)
			if (xp_tree_get(tm, tmpl_forbidden[i])) {
				size_t m = xp_walk_push_key(w, "template");
				int rc = fail_at(w, tm, tmpl_forbidden[i],
						 "set on the service, or not for a service's "
						 "replicas");
				xp_walk_pop(w, m);
				return rc;
			}
	char name[200];
	snprintf(name, sizeof(name), "%s: template", w->name);
	int rc = xp_jobspec_parse(tm, name, &s->tmpl, field, w->err);
	if (rc == 0)
		rc = xp_jobspec_check_submit(&s->tmpl, name, field, w->err);
	if (rc < 0)
		snprintf(w->field, sizeof(w->field), "template%s%.300s", field[0] ? "." : "",
			 field);
	return rc;
}

/* update: {max_surge, max_unavailable} */
static int parse_update(struct xp_walk *w, const struct xp_tree *t, struct xp_servicespec *s)
{
	const struct xp_tree *up = xp_tree_field(t, "update");
	int64_t v;
	int rc = 0;
	s->max_surge = 1;
	if (!up)
		return 0;
	size_t m = xp_walk_push_key(w, "update");
	rc = xp_walk_want(w, up, XP_TREE_MAP, "a map {max_surge, max_unavailable}");
	if (rc == 0)
		rc = xp_walk_keys(w, up, update_keys);
	if (rc == 0 &&
	    (rc = xp_walk_get_int(w, up, "max_surge", 0, XP_SERVICE_MAX_REPLICAS, &v)) > 0)
		s->max_surge = (uint32_t)v;
	if (rc >= 0 &&
	    (rc = xp_walk_get_int(w, up, "max_unavailable", 0, XP_SERVICE_MAX_REPLICAS, &v)) > 0)
		s->max_unavailable = (uint32_t)v;
	if (rc >= 0 && !s->max_surge && !s->max_unavailable)
		rc = fail_at(w, up, "max_surge",
			     "max_surge and max_unavailable cannot both be 0: an update could "
			     "never start");
	xp_walk_pop(w, m);
	return rc < 0 ? rc : 0;
}

static int parse(struct xp_walk *w, const struct xp_tree *t, struct xp_servicespec *s)
{
	const char *str;
	int64_t v;
	int rc;
	if (!t)
		return xp_walk_fail(w, 0, XP_EINVAL, "empty document, expected a service");
	if ((rc = xp_walk_want(w, t, XP_TREE_MAP, "a map (a service)")) < 0 ||
	    (rc = xp_walk_keys(w, t, top_keys)) < 0)
		return rc;
	if ((rc = xp_walk_get_str(w, t, "kind", 32, &str)) < 0)
		return rc;
	if (rc && strcmp(str, "service"))
		return fail_at(w, t, "kind", "expected service (a job goes to POST /v1/jobs)");
	static const char *const names[] = { "name", "tenant", "queue" };
	char *dst[] = { s->name, s->tenant, s->queue };
	for (int i = 0; i < 3; i++) {
		if ((rc = xp_walk_get_str(w, t, names[i], XP_NAME_MAX, &str)) < 0)
			return rc;
		if (rc && !xp_name_ok(str))
			return fail_at(w, t, names[i],
				       "expected a name: letters, digits, '-', '_', '.'");
		if (rc)
			snprintf(dst[i], XP_NAME_MAX + 1, "%s", str);
	}
	if (!s->name[0])
		return fail_at(w, t, "name", "a service needs a name");
	if ((rc = parse_replicas(w, t, s)) < 0)
		return rc;
	if ((rc = xp_walk_get_int(w, t, "port", 1, 65535, &v)) < 0)
		return rc;
	s->port = rc ? (uint16_t)v : 0;
	probe_init(&s->ready);
	const struct xp_tree *rd = xp_tree_field(t, "readiness");
	if (rd) {
		size_t m = xp_walk_push_key(w, "readiness");
		rc = parse_probe(w, rd, &s->ready);
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
	}
	s->drain_ms = DEFAULT_DRAIN_MS;
	if ((rc = xp_walk_get_duration(w, t, "drain", PROBE_MAX_MS, &s->drain_ms)) < 0)
		return rc;
	if ((rc = parse_update(w, t, s)) < 0)
		return rc;
	const struct xp_tree *as = xp_tree_field(t, "autoscale");
	if (as) {
		size_t m = xp_walk_push_key(w, "autoscale");
		rc = parse_autoscale(w, as, &s->scale);
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
		if (s->min == s->max)
			return fail_at(w, t, "replicas",
				       "autoscale needs a range {min, max} to move in");
		if (!s->min)
			return fail_at(w, t, "replicas",
				       "autoscale needs min 1 or more: at 0 replicas no load is "
				       "measured, and it would never scale up");
	}
	return parse_template(w, t, s);
}

int xp_servicespec_parse_text(const char *name, const char *buf, size_t len, int json,
			      struct xp_servicespec *out, char field[320], struct xp_err *err)
{
	struct xp_tree *t = NULL;
	struct xp_walk w;
	memset(out, 0, sizeof(*out));
	int rc = xp_tree_parse_field(name, buf, len, json, &t, field, err);
	if (rc < 0)
		return rc;
	memset(&w, 0, sizeof(w));
	w.name = name;
	w.err = err;
	rc = parse(&w, t, out);
	xp_tree_destroy(t);
	if (field)
		memcpy(field, w.field, sizeof(w.field));
	if (rc < 0)
		xp_servicespec_free(out);
	return rc < 0 ? rc : 0;
}

int xp_servicespec_replica(const struct xp_servicespec *s, uint32_t version,
			   struct xp_jobspec *out, struct xp_err *err)
{
	json_t *o = xp_jobspec_json(&s->tmpl);
	char name[XP_NAME_MAX + 1];
	snprintf(name, sizeof(name), "%.50s-v%u", s->name, version);
	json_object_set_new(o, "name", json_string(name));
	if (s->tenant[0])
		json_object_set_new(o, "tenant", json_string(s->tenant));
	if (s->queue[0])
		json_object_set_new(o, "queue", json_string(s->queue));
	struct xp_svccheck chk = { .ready = s->ready };
	if (s->scale.on)
		chk.load = s->scale.load;
	struct xp_svcref ref = { .name = (char *)s->name, .version = version, .chk = &chk };
	xp_svcref_json(&ref, o);
	char *text = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	int rc = xp_jobspec_parse_text("service replica", text, strlen(text), 1, out, NULL, err);
	free(text);
	return rc;
}

int xp_svcref_parse(struct xp_walk *w, const struct xp_tree *t, struct xp_svcref *out)
{
	const struct xp_tree *v = xp_tree_field(t, "service");
	const char *name;
	int64_t ver;
	int rc;
	struct xp_svccheck chk = { 0 };
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(w, "service");
	if ((rc = xp_walk_want(w, v, XP_TREE_MAP, "a map {name, version, readiness}")) == 0 &&
	    (rc = xp_walk_keys(w, v, ref_keys)) == 0 &&
	    (rc = xp_walk_get_str(w, v, "name", XP_NAME_MAX, &name)) == 0)
		rc = xp_walk_fail(w, v->line, XP_EINVAL, "name: expected the service's name");
	if (rc > 0 && (rc = xp_walk_get_int(w, v, "version", 1, UINT32_MAX, &ver)) == 0)
		rc = xp_walk_fail(w, v->line, XP_EINVAL, "version: expected 1 or more");
	const struct xp_tree *rd = rc > 0 ? xp_tree_field(v, "readiness") : NULL;
	if (rc > 0) {
		probe_init(&chk.ready);
		if (rd) {
			size_t m2 = xp_walk_push_key(w, "readiness");
			rc = parse_probe(w, rd, &chk.ready);
			xp_walk_pop(w, m2);
		}
	}
	const struct xp_tree *ld = rc >= 0 ? xp_tree_field(v, "load") : NULL;
	if (ld) { /* {kind: rate|gauge, path, series} */
		size_t m2 = xp_walk_push_key(w, "load");
		const char *kind = NULL;
		rc = xp_walk_want(w, ld, XP_TREE_MAP, "a map {kind, path, series}");
		if (rc == 0 && (rc = xp_walk_keys(w, ld, load_keys)) == 0 &&
		    (rc = xp_walk_get_str(w, ld, "kind", 8, &kind)) >= 0)
			rc = parse_scrape(w, ld, &chk.load);
		if (rc >= 0 && (!kind || (strcmp(kind, "rate") && strcmp(kind, "gauge"))))
			rc = fail_at(w, ld, "kind", "expected rate or gauge");
		if (rc >= 0) {
			chk.load.kind = !strcmp(kind, "rate") ? XP_SCRAPE_RATE : XP_SCRAPE_GAUGE;
			rc = 1;
		}
		xp_walk_pop(w, m2);
	}
	if (rc >= 0) {
		out->name = xstrdup(name);
		out->version = (uint32_t)ver;
		out->chk = XNEW(struct xp_svccheck);
		*out->chk = chk;
	}
	xp_walk_pop(w, m);
	return rc < 0 ? rc : 0;
}
