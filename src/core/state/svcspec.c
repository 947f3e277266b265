/*
 * svcspec: service definitions and a replica's service, in and out (see
 * svcspec.h).
 */
#include "svcspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../descriptor/tree.h"
#include "../../lib/timefmt.h"
#include "../../lib/xalloc.h"

static const char *const top_keys[] = { "kind", "name",	     "tenant", "queue",	   "replicas",
					"port", "readiness", "drain",  "template", NULL };
static const char *const range_keys[] = { "min", "max", NULL };
static const char *const probe_keys[] = { "http", "tcp", "period", "timeout", NULL };
static const char *const ref_keys[] = { "name", "version", "readiness", NULL };
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

/* readiness: {http: /path | tcp: true, period, timeout} */
static int parse_probe(struct xp_walk *w, const struct xp_tree *t, struct xp_probe *p)
{
	const char *path = NULL;
	int rc;
	probe_init(p);
	if ((rc = xp_walk_want(w, t, XP_TREE_MAP, "a map {http: PATH, period, timeout}")) < 0 ||
	    (rc = xp_walk_keys(w, t, probe_keys)) < 0 ||
	    (rc = xp_walk_get_str(w, t, "http", XP_PROBE_PATH_MAX, &path)) < 0)
		return rc;
	const struct xp_tree *tcp = xp_tree_field(t, "tcp");
	if (path && tcp)
		return fail_at(w, t, "tcp", "give http or tcp, not both");
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

static json_t *probe_json(const struct xp_probe *p)
{
	char per[32], to[32];
	snprintf(per, sizeof(per), "%lldms", (long long)p->period_ms);
	snprintf(to, sizeof(to), "%lldms", (long long)p->timeout_ms);
	if (p->kind == XP_PROBE_HTTP)
		return json_pack("{s:s,s:s,s:s}", "http", p->path, "period", per, "timeout", to);
	return json_pack("{s:b,s:s,s:s}", "tcp", 1, "period", per, "timeout", to);
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
	json_t *tm = xp_jobspec_json(&s->tmpl);
	json_object_del(tm, "replicas"); /* the service's */
	json_object_set_new(o, "template", tm);
	return o;
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
	json_object_set_new(o, "service",
			    json_pack("{s:s,s:i,s:o}", "name", s->name, "version", (int)version,
				      "readiness", probe_json(&s->ready)));
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
		probe_init(&out->ready);
		if (rd) {
			size_t m2 = xp_walk_push_key(w, "readiness");
			rc = parse_probe(w, rd, &out->ready);
			xp_walk_pop(w, m2);
		}
	}
	if (rc >= 0) {
		out->name = xstrdup(name);
		out->version = (uint32_t)ver;
	}
	xp_walk_pop(w, m);
	return rc < 0 ? rc : 0;
}

void xp_svcref_json(const struct xp_svcref *r, json_t *spec)
{
	if (r->name)
		json_object_set_new(spec, "service",
				    json_pack("{s:s,s:i,s:o}", "name", r->name, "version",
					      (int)r->version, "readiness", probe_json(&r->ready)));
}

void xp_svcref_free(struct xp_svcref *r)
{
	free(r->name);
	r->name = NULL;
}
