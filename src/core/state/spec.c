/*
 * spec: job specifications - names, the canonical writer, the request a
 * spec asks for, a change applied (see spec.h). The writer emits the
 * schema of docs/api.md with canonical values (CPU as "<milli>m", memory
 * as MiB, durations in ms), so the parser at the edge (src/edge/jobspec.c)
 * reads its output back to an equal spec.
 */
#include "spec.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/parse.h"
#include "../../lib/strbuf.h"
#include "../../lib/timefmt.h"
#include "../../lib/xalloc.h"
#include "../model/mig.h"
#include "svcspec.h"

static const char *const dep_names[XP_DEP_N] = { "after-ok", "after-any", "after-not-ok" };
static const char *const coloc_names[XP_COLOC_N] = { "none", "node", "island", "numa", "zone" };

const char *xp_dep_type_name(int t)
{
	return xp_enum_name(dep_names, XP_DEP_N, t);
}

int xp_dep_type_parse(const char *s)
{
	return xp_enum_parse(dep_names, XP_DEP_N, s);
}

static const char *const qos_names[XP_QOS_N] = { "standard", "best-effort", "protected" };

int xp_qos_parse(const char *s)
{
	return xp_enum_parse(qos_names, XP_QOS_N, s);
}

int xp_coloc_parse(const char *s) /* "none" is the default, not a choice */
{
	int c = xp_enum_parse(coloc_names, XP_COLOC_N, s);
	return c > 0 ? c : -1;
}

static const char *const topo_names[] = { "any", "same_island", "same_numa", NULL };

int xp_topo_parse(const char *s)
{
	for (int i = 0; topo_names[i]; i++)
		if (!strcmp(topo_names[i], s))
			return i;
	return -1;
}

int xp_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > XP_NAME_MAX)
		return 0;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') ||
	      (s[0] >= '0' && s[0] <= '9')))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return 0;
	}
	return 1;
}

void xp_jobspec_free(struct xp_jobspec *s)
{
	if (!s)
		return;
	free(s->name);
	free(s->tenant);
	free(s->queue);
	free(s->node);
	for (uint16_t i = 0; i < s->ncommand; i++)
		free(s->command[i]);
	free(s->command);
	for (uint16_t i = 0; i < s->nargs; i++)
		free(s->args[i]);
	free(s->args);
	xp_attrs_free(s->env, s->nenv);
	free(s->workdir);
	free(s->vendor);
	for (uint8_t i = 0; i < s->nmodels; i++)
		free(s->models[i]);
	free(s->models);
	xp_attrs_free(s->labels, s->nlabels);
	free(s->deps);
	free(s->workflow);
	free(s->mig_profile);
	xp_svcref_free(&s->svc);
	memset(s, 0, sizeof(*s));
}


int xp_jobspec_check_submit(const struct xp_jobspec *s, const char *name, char field[320],
			    struct xp_err *err)
{
	const char *f = NULL, *why = NULL;
	if (s->cpu_milli == 0) {
		f = "resources.cpu";
		why = "must be at least 1m (a thousandth of a core); leave it out for 1 core";
	} else if (s->mem_mib == 0) {
		f = "resources.memory";
		why = "must be at least 1Mi; leave it out for 1Gi";
	} else if (s->svc.name) {
		if (field)
			snprintf(field, 320, "service");
		return xp_errf(err, XP_EINVAL,
			       "%s: service: set by the controller on a service's replicas; create "
			       "a service with POST /v1/services (xpool service create)",
			       name);
	}
	if (!f)
		return 0;
	if (field)
		snprintf(field, 320, "%s", f);
	return xp_errf(err, XP_EINVAL, "%s: %s: %s (quotas count every job)", name, f, why);
}


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

void xp_jobpatch_apply(const struct xp_jobpatch *p, struct xp_jobspec *s)
{
	if (p->set & XP_JP_NAME) {
		free(s->name);
		s->name = xstrdup(p->name);
	}
	if (p->set & XP_JP_PRIORITY)
		s->priority = p->priority;
	if (p->set & XP_JP_QUEUE) {
		free(s->queue);
		s->queue = xstrdup(p->queue);
	}
	if (p->set & XP_JP_TIME_LIMIT)
		s->time_limit_ms = p->time_limit_ms;
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
			json_object_set_new(d, "topology", json_string(topo_names[s->topo]));
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
			json_object_set_new(g, "colocate", json_string(coloc_names[s->colocate]));
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
							   dep_names[s->deps[i].type]));
		json_object_set_new(o, "depends_on", a);
	}
	if (s->workflow)
		json_object_set_new(o, "workflow", json_string(s->workflow));
	if (s->qos)
		json_object_set_new(o, "qos", json_string(qos_names[s->qos]));
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

void xp_jobspec_request(const struct xp_jobspec *s, struct xp_strtab *syms, struct xp_request *r)
{
	xp_request_init(r);
	r->cpu_milli = s->cpu_milli;
	r->mem_mib = s->mem_mib;
	if (!s->dev_count)
		return;
	r->dev_count = s->dev_count;
	r->dev_milli = s->dev_milli;
	r->dev_mem_mib = s->dev_mem_mib;
	r->by_mem = s->dev_by_mem;
	r->topo = s->topo;
	r->sel.cls = s->dev_class;
	r->sel.vendor = s->vendor ? xp_strtab_intern(syms, s->vendor) : 0;
	for (uint8_t i = 0; i < s->nmodels; i++)
		xp_selector_add_model(&r->sel, xp_strtab_intern(syms, s->models[i]));
	r->sel.min_mem_mib = s->min_mem_mib;
	r->sel.min_cc = s->min_cc;
	r->mig = s->mig_profile ? xp_strtab_intern(syms, s->mig_profile) : 0;
	r->mig_any = (uint8_t)xp_jobspec_mig_any(s);
}

int xp_jobspec_mig_any(const struct xp_jobspec *s)
{
	return s->mig_profile && !strcmp(s->mig_profile, XP_MIG_ANY);
}
