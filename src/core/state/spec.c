/*
 * spec: job specifications - names, the canonical writer, the request a
 * spec asks for, a change applied (see spec.h). The writer emits the
 * schema of docs/api.md with canonical values (CPU as "<milli>m", memory
 * as MiB, durations in ms), so the parser at the edge (src/edge/jobspec.c)
 * reads its output back to an equal spec.
 */
#include "spec.h"

#include <ctype.h>
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

/* the names below, for the canonical writer (src/edge/canon.c); q, c, t in range */
const char *xp_qos_name(int q)
{
	return qos_names[q];
}

const char *xp_coloc_name(int c)
{
	return coloc_names[c];
}

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

const char *xp_topo_name(int t)
{
	return topo_names[t];
}

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
