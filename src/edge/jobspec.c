/*
 * jobspec: job specifications and job changes read from a document tree
 * (JSON or YAML; user input, records and snapshots alike) with every
 * field checked (edge.h). The walker reads the schema of docs/api.md
 * field by field with the tree walker of src/descriptor, so errors carry
 * the line (YAML) and the path of the field; the canonical writer stays
 * with the spec in the state (src/core/state/spec.c), and parsing its
 * output gives an equal spec.
 */
#include "edge_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../descriptor/tree.h"
#include "../lib/parse.h"
#include "../lib/signame.h"
#include "../lib/strbuf.h"
#include "../lib/timefmt.h"
#include "../lib/xalloc.h"
#include "../core/model/mig.h"

static int env_name_ok(const char *s)
{
	if (!*s || strlen(s) > 256 || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

static const char *const top_keys[] = { "name",	     "tenant",	       "queue",	       "priority",
					"command",   "args",	       "env",	       "workdir",
					"replicas",  "resources",      "labels",       "duration",
					"exit_code", "node",	       "on_node_lost", "time_limit",
					"gang",	     "depends_on",     "workflow",     "deadline",
					"qos",	     "hold_for_nodes", "vgpu",	       "service",
					"checkpoint", NULL };
static const char *const gang_keys[] = { "colocate", "timeout", NULL };
static const char *const dep_keys[] = { "job", "type", NULL };
static const char *const res_keys[] = { "cpu", "memory", "devices", NULL };
static const char *const dev_keys[] = {
	"count",    "compute_milli", "fraction", "memory",     "class",
	"vendor",   "models",	     "model",	 "min_memory", "min_compute_capability",
	"topology", "mig",	     NULL
};
static const char *const mig_keys[] = { "profile", NULL };

/* A name-like string field: 0 absent, 1 with *v (borrowed from t), or a
 * negative code naming the field. */
int xp_walk_get_name(struct xp_walk *w, const struct xp_tree *t, const char *key, const char **v)
{
	*v = NULL;
	int rc = xp_walk_get_str(w, t, key, 253, v);
	if (rc <= 0)
		return rc;
	if (!xp_name_ok(*v)) {
		size_t m = xp_walk_push_key(w, key);
		rc = xp_walk_fail(w, xp_tree_get(t, key)->line, XP_EINVAL,
				  "expected 1..%d letters, digits, '-', '_' or '.' starting with a "
				  "letter or digit, got '%s'",
				  XP_NAME_MAX, XP_SHOW(*v));
		xp_walk_pop(w, m);
		return rc;
	}
	return 1;
}

static int get_name(struct xp_walk *w, const struct xp_tree *t, const char *key, char **out)
{
	const char *v;
	int rc = xp_walk_get_name(w, t, key, &v);
	if (rc == 1)
		*out = xstrdup(v);
	return rc;
}

/* a list of strings (or, if one_ok, a single string) into argv */
static int get_strings(struct xp_walk *w, const struct xp_tree *t, const char *key, size_t max,
		       int one_ok, char ***out, uint16_t *n, uint8_t *single)
{
	const struct xp_tree *v = xp_tree_field(t, key);
	int rc;
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(w, key);
	if (one_ok && v->kind == XP_TREE_SCALAR) {
		if (!v->len)
			rc = xp_walk_fail(w, v->line, XP_EINVAL, "empty command");
		else if (v->len > 65536)
			rc = xp_walk_fail(w, v->line, XP_ERANGE, "longer than 65536 characters");
		else {
			*out = XNEWV(char *, 1);
			(*out)[0] = xstrdup(v->text);
			*n = 1;
			if (single)
				*single = 1;
			rc = 1;
		}
		xp_walk_pop(w, m);
		return rc;
	}
	rc = xp_walk_list(w, v, max);
	if (rc == 0 && one_ok && v->n == 0)
		rc = xp_walk_fail(w, v->line, XP_EINVAL, "empty command");
	if (rc == 0) {
		*out = XNEWV(char *, v->n ? v->n : 1);
		for (size_t i = 0; rc == 0 && i < v->n; i++) {
			const char *s;
			size_t m2 = xp_walk_push_idx(w, i);
			rc = xp_walk_str(w, v->kids[i], 4096, &s);
			xp_walk_pop(w, m2);
			if (rc == 0)
				(*out)[(*n)++] = xstrdup(s);
		}
	}
	xp_walk_pop(w, m);
	return rc < 0 ? rc : 1;
}

/* a map of string -> scalar into attrs; key_ok checks the keys */
static int get_map(struct xp_walk *w, const struct xp_tree *t, const char *key, size_t max,
		   int (*key_ok)(const char *), const char *key_what, struct xp_attr **out,
		   uint16_t *n)
{
	const struct xp_tree *v = xp_tree_field(t, key);
	int rc;
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(w, key);
	rc = xp_walk_want(w, v, XP_TREE_MAP, "a map");
	if (rc == 0 && v->n > max)
		rc = xp_walk_fail(w, v->line, XP_ERANGE, "more than %zu entries", max);
	for (size_t i = 0; rc == 0 && i < v->n; i++) {
		const char *s = "";
		size_t m2 = xp_walk_push_key(w, v->keys[i]);
		if (!key_ok(v->keys[i]))
			rc = xp_walk_fail(w, v->key_lines[i], XP_EINVAL, "not a valid %s",
					  key_what);
		if (rc == 0 && !xp_tree_is_null(v->kids[i]))
			rc = xp_walk_str(w, v->kids[i], 4096, &s);
		if (rc == 0)
			xp_attrs_set(out, n, v->keys[i], s);
		xp_walk_pop(w, m2);
	}
	xp_walk_pop(w, m);
	return rc < 0 ? rc : 1;
}

static int label_ok(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > 63)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' || *s == '.' || *s == '/'))
			return 0;
	return 1;
}

/* A MIG profile name: letters, digits, '.', '+' (1g.10gb+me) */
static int mig_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 31)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '.' && *s != '+')
			return 0;
	return 1;
}

/* devices.mig: any, sized by compute_milli (or fraction) and/or memory:
 * the smallest profile that fits, chosen where it is placed. Nothing to
 * size it by is refused; the request keeps its milli (1 when only memory
 * is given: any compute) and memory, for quotas until it is placed. */
static int parse_mig_any(struct xp_walk *w, const struct xp_tree *d, const struct xp_tree *mg,
			 struct xp_jobspec *s, int milli_given)
{
	int rc = 0;
	size_t m = xp_walk_push_key(w, "mig");
	if (!milli_given && !xp_tree_field(d, "memory"))
		rc = xp_walk_fail(w, mg->line, XP_EINVAL,
				  "any needs a size: compute_milli (or fraction) and/or memory");
	else if (s->dev_count != 1)
		rc = xp_walk_fail(
			w, mg->line, XP_EINVAL,
			"a MIG slice is one profile of one GPU: leave out count (it is 1)");
	xp_walk_pop(w, m);
	if (rc < 0)
		return rc;
	s->mig_profile = xstrdup(XP_MIG_ANY);
	s->dev_by_mem = 0;
	if (!milli_given)
		s->dev_milli = 1;
	return 0;
}

/* devices.mig: {profile: NAME}, one replica's slice of one GPU (or any:
 * parse_mig_any). The profile sets the compute and the memory, so count
 * (1), compute_milli, fraction and memory are refused beside it. The
 * name's syntax is checked here; whether a table or a node knows it, at
 * the controller (xp_state_possible). */
static int parse_mig(struct xp_walk *w, const struct xp_tree *d, struct xp_jobspec *s,
		     int milli_given)
{
	const struct xp_tree *mg = xp_tree_field(d, "mig");
	const char *name = NULL;
	if (!mg)
		return 0;
	if (mg->kind == XP_TREE_SCALAR && !strcasecmp(mg->text, XP_MIG_ANY))
		return parse_mig_any(w, d, mg, s, milli_given);
	size_t m = xp_walk_push_key(w, "mig");
	int rc = xp_walk_want(w, mg, XP_TREE_MAP, "any or a map {profile: NAME}");
	if (rc == 0)
		rc = xp_walk_keys(w, mg, mig_keys);
	if (rc == 0 && (rc = xp_walk_get_str(w, mg, "profile", 31, &name)) == 0)
		rc = xp_walk_fail(w, mg->line, XP_EINVAL, "profile is required (e.g. 3g.40gb)");
	if (rc > 0 && !strcasecmp(name, XP_MIG_ANY)) {
		xp_walk_pop(w, m);
		return parse_mig_any(w, d, mg, s, milli_given);
	}
	if (rc > 0 && !mig_name_ok(name))
		rc = xp_walk_fail(w, mg->line, XP_EINVAL,
				  "profile: expected a MIG profile name such as 3g.40gb, got '%s'",
				  XP_SHOW(name));
	else if (rc > 0 && (milli_given || xp_tree_field(d, "memory") || s->dev_count != 1))
		rc = xp_walk_fail(w, mg->line, XP_EINVAL,
				  "a MIG slice is one profile of one GPU: leave out %s",
				  milli_given		       ? "compute_milli and fraction"
				  : xp_tree_field(d, "memory") ? "memory (the profile sets it)"
							       : "count (it is 1)");
	xp_walk_pop(w, m);
	if (rc < 0)
		return rc;
	s->mig_profile = xstrdup(name);
	for (char *c = s->mig_profile; *c; c++) /* NVML's names are lower case */
		*c = (char)tolower((unsigned char)*c);
	int kind = -1;
	const struct xp_mig_profile *p = xp_mig_profile_any(name, &kind);
	/* quotas count compute slices / 7 of a device, and the profile's memory */
	s->dev_milli = (uint16_t)((p ? p->compute : 1) * XP_MILLI / XP_MIG_COMPUTE_SLICES);
	s->dev_mem_mib = p ? p->mem_mib : 0;
	s->dev_by_mem = 0;
	return 0;
}

static int parse_devices(struct xp_walk *w, const struct xp_tree *d, struct xp_jobspec *s)
{
	int64_t v;
	uint64_t q;
	int rc, cls;
	const char *str;

	if ((rc = xp_walk_want(w, d, XP_TREE_MAP, "a map")) < 0 ||
	    (rc = xp_walk_keys(w, d, dev_keys)) < 0)
		return rc;
	s->dev_count = 1;
	s->dev_milli = XP_MILLI;
	if ((rc = xp_walk_get_int(w, d, "count", 0, XP_MAX_NODE_DEVS, &v)) < 0)
		return rc;
	if (rc)
		s->dev_count = (uint16_t)v;
	const char *which;
	if ((rc = xp_walk_alias(w, d, "compute_milli", "fraction", &which)) < 0)
		return rc;
	if (which && !strcmp(which, "compute_milli")) {
		if ((rc = xp_walk_get_int(w, d, "compute_milli", 1, XP_MILLI, &v)) < 0)
			return rc;
		s->dev_milli = (uint16_t)v;
	} else if (which) {
		const struct xp_tree *f = xp_tree_field(d, "fraction");
		double x;
		size_t m = xp_walk_push_key(w, "fraction");
		rc = xp_walk_want(w, f, XP_TREE_SCALAR, "a number");
		if (rc == 0 && (xp_parse_double(f->text, &x) < 0 || x <= 0 || x > 1))
			rc = xp_walk_fail(w, f->line, XP_ERANGE,
					  "expected a number in (0, 1], got '%s'",
					  XP_SHOW(f->text));
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
		s->dev_milli = (uint16_t)(x * XP_MILLI + 0.5);
		if (s->dev_milli == 0)
			s->dev_milli = 1;
	}
	int milli_given = which != NULL;
	if ((rc = xp_walk_get_qty(w, d, "memory", XP_QTY_MEM_MIB, (double)XP_JOB_MAX_MEM_MIB, &q)) <
	    0)
		return rc;
	if (rc && q == 0) { /* 0 would read as no cap at all */
		size_t m = xp_walk_push_key(w, "memory");
		rc = xp_walk_fail(w, xp_tree_get(d, "memory")->line, XP_ERANGE,
				  "expected a device memory above 0, got '%s'",
				  XP_SHOW(xp_tree_get(d, "memory")->text));
		xp_walk_pop(w, m);
		return rc;
	}
	if (rc)
		s->dev_mem_mib = q;
	if ((rc = xp_walk_get_enum(w, d, "class", xp_class_parse,
				   "gpu, npu, fpga, asic, dpu, cim or cpu", &cls)) < 0)
		return rc;
	if (rc)
		s->dev_class = (int8_t)cls;
	if ((rc = xp_walk_get_str(w, d, "vendor", 128, &str)) < 0)
		return rc;
	if (rc)
		s->vendor = xstrdup(str);
	if ((rc = xp_walk_alias(w, d, "models", "model", &which)) < 0)
		return rc;
	if (which) {
		uint16_t n = 0;
		rc = get_strings(w, d, which, XP_MAX_SEL_MODELS, 1, &s->models, &n, NULL);
		s->nmodels = (uint8_t)n;
		if (rc < 0)
			return rc;
	}
	if ((rc = xp_walk_get_qty(w, d, "min_memory", XP_QTY_MEM_MIB, (double)XP_JOB_MAX_MEM_MIB,
				  &q)) < 0)
		return rc;
	if (rc)
		s->min_mem_mib = q;
	const struct xp_tree *cc = xp_tree_field(d, "min_compute_capability");
	if (cc) {
		size_t m = xp_walk_push_key(w, "min_compute_capability");
		rc = xp_walk_want(w, cc, XP_TREE_SCALAR, "a compute capability such as \"8.0\"");
		if (rc == 0 && xp_cc_parse(cc->text, &s->min_cc) < 0)
			rc = xp_walk_fail(w, cc->line, XP_EINVAL,
					  "expected a compute capability such as \"8.0\", got '%s'",
					  XP_SHOW(cc->text));
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
	}
	const struct xp_tree *tp = xp_tree_field(d, "topology");
	if (tp) {
		size_t m = xp_walk_push_key(w, "topology");
		rc = xp_walk_want(w, tp, XP_TREE_SCALAR, "any, same_island or same_numa");
		int k = rc == 0 ? xp_topo_parse(tp->text) : -1;
		if (rc == 0 && k < 0)
			rc = xp_walk_fail(w, tp->line, XP_EINVAL,
					  "expected any, same_island or same_numa, got '%s'",
					  XP_SHOW(tp->text));
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
		s->topo = (uint8_t)k;
	}
	/* memory alone on one device is a share of it sized by memory, as
	 * HAMi reads gpumem alone (docs/design/vgpu.md) */
	s->dev_by_mem = !milli_given && s->dev_mem_mib && s->dev_count == 1;
	if (s->dev_by_mem)
		s->dev_milli = XP_SHARE_BY_MEM_ESTIMATE;
	if (s->dev_milli < XP_MILLI && s->dev_count > 1)
		return xp_walk_fail(w, d->line, XP_EINVAL,
				    "a fraction of a device (%u milli) needs count 1, not %u",
				    s->dev_milli, s->dev_count);
	if (s->dev_count == 0) { /* no devices: the rest means nothing */
		s->dev_milli = 0;
		s->dev_mem_mib = 0;
	}
	return parse_mig(w, d, s, milli_given);
}

/* vgpu: on (the default: a GPU share is enforced by the interposer) or off */
static int get_vgpu(struct xp_walk *w, const struct xp_tree *t, struct xp_jobspec *s)
{
	const struct xp_tree *v = xp_tree_field(t, "vgpu");
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(w, "vgpu");
	int rc = xp_walk_want(w, v, XP_TREE_SCALAR, "on or off");
	if (rc == 0 && strcmp(v->text, "on") && strcmp(v->text, "off"))
		rc = xp_walk_fail(w, v->line, XP_EINVAL, "expected on or off, got '%s'",
				  XP_SHOW(v->text));
	xp_walk_pop(w, m);
	if (rc == 0)
		s->vgpu_off = !strcmp(v->text, "off");
	return rc;
}

/* a duration field in ms (0 absent, 1 set, < 0 error) */
int xp_walk_get_duration(struct xp_walk *w, const struct xp_tree *t, const char *key,
			 int64_t max_ms, int64_t *out)
{
	const struct xp_tree *v = xp_tree_field(t, key);
	if (!v)
		return 0;
	size_t m = xp_walk_push_key(w, key);
	int rc = xp_walk_want(w, v, XP_TREE_SCALAR, "a duration such as 30s");
	if (rc == 0 && xp_duration_parse(v->text, max_ms, out) < 0) {
		char most[32];
		xp_duration_short(max_ms, most, sizeof(most));
		rc = xp_walk_fail(w, v->line, XP_EINVAL,
				  "expected a duration such as 30s, 5m or 1h30m (at most %s), "
				  "got '%s'",
				  most, XP_SHOW(v->text));
	}
	xp_walk_pop(w, m);
	return rc < 0 ? rc : 1;
}

static int get_duration(struct xp_walk *w, const struct xp_tree *t, const char *key, int64_t *out)
{
	return xp_walk_get_duration(w, t, key, XP_DURATION_MAX_MS, out);
}

/* depends_on: [{job: ID, type: after-ok|after-any|after-not-ok}] */
static int parse_deps(struct xp_walk *w, const struct xp_tree *t, struct xp_jobspec *s)
{
	const struct xp_tree *l = xp_tree_field(t, "depends_on");
	if (!l)
		return 0;
	size_t m = xp_walk_push_key(w, "depends_on");
	int rc = xp_walk_list(w, l, XP_JOB_MAX_DEPS);
	if (rc == 0 && l->n)
		s->deps = XNEWV(struct xp_dep, l->n);
	for (size_t i = 0; rc == 0 && i < l->n; i++) {
		const struct xp_tree *d = l->kids[i];
		size_t m2 = xp_walk_push_idx(w, i);
		int64_t id = 0;
		int type = XP_DEP_AFTER_OK;
		rc = xp_walk_want(w, d, XP_TREE_MAP, "a map {job, type}");
		if (rc == 0)
			rc = xp_walk_keys(w, d, dep_keys);
		if (rc == 0 && (rc = xp_walk_get_int(w, d, "job", 1, INT64_MAX, &id)) == 0)
			rc = xp_walk_fail(w, d->line, XP_EINVAL, "job: missing (a job id)");
		if (rc > 0)
			rc = xp_walk_get_enum(w, d, "type", xp_dep_type_parse,
					      "after-ok, after-any or after-not-ok", &type);
		for (size_t k = 0; rc >= 0 && k < s->ndeps; k++)
			if (s->deps[k].job == (uint64_t)id)
				rc = xp_walk_fail(w, d->line, XP_EINVAL, "job %lld is named twice",
						  (long long)id);
		xp_walk_pop(w, m2);
		if (rc >= 0) {
			rc = 0;
			s->deps[s->ndeps].job = (uint64_t)id;
			s->deps[s->ndeps++].type = (uint8_t)type;
		}
	}
	xp_walk_pop(w, m);
	return rc;
}

static int parse(struct xp_walk *w, const struct xp_tree *t, struct xp_jobspec *s)
{
	int64_t v;
	uint64_t q;
	int rc;
	const char *str;

	if (!t)
		return xp_walk_fail(w, 0, XP_EINVAL, "empty document, expected a job spec");
	if ((rc = xp_walk_want(w, t, XP_TREE_MAP, "a map (a job spec)")) < 0 ||
	    (rc = xp_walk_keys(w, t, top_keys)) < 0)
		return rc;
	if ((rc = get_name(w, t, "name", &s->name)) < 0 ||
	    (rc = get_name(w, t, "tenant", &s->tenant)) < 0 ||
	    (rc = get_name(w, t, "queue", &s->queue)) < 0 ||
	    (rc = get_name(w, t, "node", &s->node)) < 0)
		return rc;
	if ((rc = xp_walk_get_int(w, t, "priority", -XP_PRIORITY_MAX, XP_PRIORITY_MAX, &v)) < 0)
		return rc;
	s->priority = rc ? (int32_t)v : 0;
	if ((rc = get_strings(w, t, "command", XP_JOB_MAX_ARGS, 1, &s->command, &s->ncommand,
			      &s->shell)) < 0 ||
	    (rc = get_strings(w, t, "args", XP_JOB_MAX_ARGS, 0, &s->args, &s->nargs, NULL)) < 0 ||
	    (rc = get_map(w, t, "env", XP_JOB_MAX_ENV, env_name_ok, "variable name", &s->env,
			  &s->nenv)) < 0 ||
	    (rc = get_map(w, t, "labels", XP_JOB_MAX_LABELS, label_ok, "label key", &s->labels,
			  &s->nlabels)) < 0)
		return rc;
	if ((rc = xp_walk_get_str(w, t, "workdir", 4096, &str)) < 0)
		return rc;
	if (rc) {
		if (str[0] != '/') {
			size_t m = xp_walk_push_key(w, "workdir");
			rc = xp_walk_fail(w, xp_tree_get(t, "workdir")->line, XP_EINVAL,
					  "expected an absolute path, got '%s'", XP_SHOW(str));
			xp_walk_pop(w, m);
			return rc;
		}
		s->workdir = xstrdup(str);
	}
	if ((rc = xp_elastic_parse(w, t, s)) < 0) /* replicas, checkpoint */
		return rc;
	s->cpu_milli = XP_MILLI;
	s->mem_mib = 1024;
	s->dev_class = -1;
	s->duration_ms = -1;
	const struct xp_tree *res = xp_tree_field(t, "resources");
	if (res) {
		size_t m = xp_walk_push_key(w, "resources");
		rc = xp_walk_want(w, res, XP_TREE_MAP, "a map");
		if (rc == 0)
			rc = xp_walk_keys(w, res, res_keys);
		if (rc == 0 && (rc = xp_walk_get_qty(w, res, "cpu", XP_QTY_CPU_MILLI,
						     (double)XP_JOB_MAX_CPU_MILLI, &q)) > 0)
			s->cpu_milli = q;
		if (rc >= 0 && (rc = xp_walk_get_qty(w, res, "memory", XP_QTY_MEM_MIB,
						     (double)XP_JOB_MAX_MEM_MIB, &q)) > 0)
			s->mem_mib = q;
		const struct xp_tree *d = rc >= 0 ? xp_tree_field(res, "devices") : NULL;
		if (d) {
			size_t m2 = xp_walk_push_key(w, "devices");
			rc = parse_devices(w, d, s);
			xp_walk_pop(w, m2);
		}
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
	}
	if ((rc = get_duration(w, t, "duration", &s->duration_ms)) < 0 ||
	    (rc = get_duration(w, t, "time_limit", &s->time_limit_ms)) < 0)
		return rc;
	if (rc && s->time_limit_ms == 0) {
		size_t m = xp_walk_push_key(w, "time_limit");
		rc = xp_walk_fail(w, xp_tree_get(t, "time_limit")->line, XP_EINVAL,
				  "must be above 0 (leave it out for none)");
		xp_walk_pop(w, m);
		return rc;
	}
	const struct xp_tree *gang = xp_tree_field(t, "gang");
	if (gang) {
		size_t m = xp_walk_push_key(w, "gang");
		int c = 0;
		rc = xp_walk_want(w, gang, XP_TREE_MAP, "a map {colocate, timeout}");
		if (rc == 0)
			rc = xp_walk_keys(w, gang, gang_keys);
		if (rc == 0)
			rc = xp_walk_get_enum(w, gang, "colocate", xp_coloc_parse,
					      "node, island, numa or zone", &c);
		if (rc >= 0)
			s->colocate = (uint8_t)(rc ? c : 0);
		if (rc >= 0)
			rc = get_duration(w, gang, "timeout", &s->gang_timeout_ms);
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
	}
	if ((rc = parse_deps(w, t, s)) < 0 || (rc = get_name(w, t, "workflow", &s->workflow)) < 0)
		return rc;
	int qos;
	if ((rc = xp_walk_get_enum(w, t, "qos", xp_qos_parse, "standard, best-effort or protected",
				   &qos)) < 0)
		return rc;
	s->qos = rc ? (uint8_t)qos : XP_QOS_STANDARD;
	const struct xp_tree *dl = xp_tree_field(t, "deadline");
	if (dl) { /* a time, or a duration from submission */
		size_t m = xp_walk_push_key(w, "deadline");
		rc = xp_walk_want(w, dl, XP_TREE_SCALAR, "an RFC 3339 time or a duration");
		if (rc == 0 && xp_time_parse(dl->text, &s->deadline_ms) < 0 &&
		    (xp_duration_parse(dl->text, XP_DURATION_MAX_MS, &s->deadline_in_ms) < 0 ||
		     !s->deadline_in_ms))
			rc = xp_walk_fail(w, dl->line, XP_EINVAL,
					  "expected a time such as 2026-12-01T08:00:00Z or a "
					  "duration such as 6h, got '%s'",
					  XP_SHOW(dl->text));
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
	}
	if ((rc = xp_walk_get_int(w, t, "exit_code", 0, 255, &v)) < 0)
		return rc;
	s->exit_code = rc ? (int32_t)v : 0;
	const struct xp_tree *lost = xp_tree_field(t, "on_node_lost");
	if (lost) {
		size_t m = xp_walk_push_key(w, "on_node_lost");
		rc = xp_walk_want(w, lost, XP_TREE_SCALAR, "requeue or fail");
		if (rc == 0 && strcmp(lost->text, "requeue") && strcmp(lost->text, "fail"))
			rc = xp_walk_fail(w, lost->line, XP_EINVAL,
					  "expected requeue or fail, got '%s'",
					  XP_SHOW(lost->text));
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
		s->fail_on_lost = !strcmp(lost->text, "fail");
	}
	const struct xp_tree *hold = xp_tree_field(t, "hold_for_nodes");
	if (hold) {
		size_t m = xp_walk_push_key(w, "hold_for_nodes");
		rc = xp_walk_want(w, hold, XP_TREE_SCALAR, "true or false");
		if (rc == 0 && strcmp(hold->text, "true") && strcmp(hold->text, "false"))
			rc = xp_walk_fail(w, hold->line, XP_EINVAL,
					  "expected true or false, got '%s'", XP_SHOW(hold->text));
		xp_walk_pop(w, m);
		if (rc < 0)
			return rc;
		s->hold_for_nodes = !strcmp(hold->text, "true");
	}
	if ((rc = get_vgpu(w, t, s)) < 0 || (rc = xp_svcref_parse(w, t, &s->svc)) < 0)
		return rc;
	return 0;
}

int xp_jobspec_parse(const struct xp_tree *t, const char *name, struct xp_jobspec *out,
		     char field[320], struct xp_err *err)
{
	struct xp_walk w;
	memset(&w, 0, sizeof(w));
	w.name = name;
	w.err = err;
	memset(out, 0, sizeof(*out));
	int rc = parse(&w, t, out);
	if (field)
		memcpy(field, w.field, sizeof(w.field));
	if (rc < 0)
		xp_jobspec_free(out);
	return rc < 0 ? rc : 0;
}

int xp_jobspec_parse_text(const char *name, const char *buf, size_t len, int json,
			  struct xp_jobspec *out, char field[320], struct xp_err *err)
{
	struct xp_tree *t = NULL;
	int rc = xp_tree_parse_field(name, buf, len, json, &t, field, err);
	if (rc < 0)
		return rc;
	rc = xp_jobspec_parse(t, name, out, field, err);
	xp_tree_destroy(t);
	return rc;
}

static const char *const patch_keys[] = { "name", "priority", "queue", "time_limit", NULL };

/* the fields a change gives a value (null gives none) */
static uint32_t patch_set(const struct xp_tree *t)
{
	return (xp_tree_field(t, "name") ? XP_JP_NAME : 0) |
	       (xp_tree_field(t, "priority") ? XP_JP_PRIORITY : 0) |
	       (xp_tree_field(t, "queue") ? XP_JP_QUEUE : 0) |
	       (xp_tree_field(t, "time_limit") ? XP_JP_TIME_LIMIT : 0);
}

int xp_jobpatch_parse_text(const char *name, const char *buf, size_t len, int json,
			   struct xp_jobpatch *out, char field[320], struct xp_err *err)
{
	struct xp_tree *t = NULL;
	struct xp_walk w;
	struct xp_jobspec s;
	int rc = xp_tree_parse_field(name, buf, len, json, &t, field, err);

	memset(out, 0, sizeof(*out));
	memset(&w, 0, sizeof(w));
	w.name = name;
	w.err = err;
	if (rc < 0)
		return rc;
	if (!t)
		rc = xp_walk_fail(&w, 0, XP_EINVAL,
				  "empty document, expected a change: name, priority, queue or "
				  "time_limit");
	else if ((rc = xp_walk_want(&w, t, XP_TREE_MAP, "a map (a change to a job)")) == 0 &&
		 (rc = xp_walk_keys(&w, t, patch_keys)) == 0 && !patch_set(t))
		rc = xp_walk_fail(&w, t->line, XP_EINVAL,
				  "nothing to change: give name, priority, queue or time_limit "
				  "(null is no value)");
	if (rc < 0) {
		if (field)
			memcpy(field, w.field, sizeof(w.field));
		xp_tree_destroy(t);
		return rc;
	}
	/* each field as a spec reads it: the rest of the spec is defaults */
	rc = xp_jobspec_parse(t, name, &s, field, err);
	if (rc == 0) {
		out->set = patch_set(t);
		snprintf(out->name, sizeof(out->name), "%s", s.name ? s.name : "");
		snprintf(out->queue, sizeof(out->queue), "%s", s.queue ? s.queue : "");
		out->priority = s.priority;
		out->time_limit_ms = s.time_limit_ms;
		xp_jobspec_free(&s);
	}
	xp_tree_destroy(t);
	return rc;
}

static const char *const range_keys[] = { "min", "max", NULL };
static const char *const ckpt_keys[] = { "signal", "grace", NULL };

#define CKPT_GRACE_MAX_MS (3600LL * 1000)

/* "SIGUSR1", "USR1", "usr1" or "10": a signal a process can catch; 0 none */
static int signal_parse(const char *text)
{
	if (*text && strspn(text, "0123456789") == strlen(text)) {
		long v = strlen(text) < 4 ? atol(text) : 0;
		return v >= 1 && v <= 64 && v != 9 && v != 19 ? (int)v : 0;
	}
	char want[16];
	size_t n = strlen(text);
	if (n >= sizeof(want) - 3)
		return 0;
	snprintf(want, sizeof(want), "%s%s", strncasecmp(text, "SIG", 3) ? "SIG" : "", text);
	for (int sig = 1; sig < 64; sig++) {
		const char *name = xp_signal_name(sig);
		if (name && !strcasecmp(name, want))
			return sig != 9 && sig != 19 ? sig : 0;
	}
	return 0;
}

static int parse_range(struct xp_walk *w, const struct xp_tree *r, struct xp_jobspec *s)
{
	int64_t lo = 1, hi = 0;
	int rc = xp_walk_keys(w, r, range_keys);
	if (rc == 0 && (rc = xp_walk_get_int(w, r, "min", 1, XP_JOB_MAX_REPLICAS, &lo)) == 0)
		lo = 1;
	if (rc >= 0 && (rc = xp_walk_get_int(w, r, "max", 1, XP_JOB_MAX_REPLICAS, &hi)) == 0)
		rc = xp_walk_fail(w, r->line, XP_EINVAL,
				  "max: expected the most replicas (1..%d) beside min",
				  XP_JOB_MAX_REPLICAS);
	if (rc >= 0 && lo > hi) {
		size_t m = xp_walk_push_key(w, "min");
		rc = xp_walk_fail(w, r->line, XP_EINVAL, "min (%lld) is above max (%lld)",
				  (long long)lo, (long long)hi);
		xp_walk_pop(w, m);
	}
	if (rc < 0)
		return rc;
	s->rmin = (uint32_t)lo;
	s->rmax = (uint32_t)hi;
	s->replicas = s->rmin;
	return 0;
}

static int parse_checkpoint(struct xp_walk *w, const struct xp_tree *c, struct xp_jobspec *s)
{
	const char *sig = NULL;
	int rc = xp_walk_want(w, c, XP_TREE_MAP, "a map {signal, grace}");
	if (rc == 0)
		rc = xp_walk_keys(w, c, ckpt_keys);
	if (rc == 0 && (rc = xp_walk_get_str(w, c, "signal", 15, &sig)) > 0) {
		int v = signal_parse(sig);
		if (!v) {
			size_t m = xp_walk_push_key(w, "signal");
			rc = xp_walk_fail(w, xp_tree_get(c, "signal")->line, XP_EINVAL,
					  "expected a signal a process can catch such as SIGUSR1, "
					  "SIGUSR2 or SIGTERM, got '%s'",
					  XP_SHOW(sig));
			xp_walk_pop(w, m);
		}
		s->ckpt_signal = (uint8_t)v;
	}
	if (rc >= 0) {
		int d = xp_walk_get_duration(w, c, "grace", CKPT_GRACE_MAX_MS, &s->ckpt_grace_ms);
		rc = d < 0 ? d : 0;
	}
	return rc < 0 ? rc : 0;
}

int xp_elastic_parse(struct xp_walk *w, const struct xp_tree *t, struct xp_jobspec *s)
{
	const struct xp_tree *r = xp_tree_field(t, "replicas"), *c;
	int64_t v;
	int rc = 0;
	s->replicas = 1;
	s->rmin = s->rmax = 0;
	s->ckpt_signal = 0;
	s->ckpt_grace_ms = -1;
	if (r && r->kind == XP_TREE_MAP) {
		size_t m = xp_walk_push_key(w, "replicas");
		rc = parse_range(w, r, s);
		xp_walk_pop(w, m);
	} else if ((rc = xp_walk_get_int(w, t, "replicas", 1, XP_JOB_MAX_REPLICAS, &v)) > 0) {
		s->replicas = (uint32_t)v;
	}
	if (rc >= 0 && (c = xp_tree_field(t, "checkpoint"))) {
		size_t m = xp_walk_push_key(w, "checkpoint");
		rc = parse_checkpoint(w, c, s);
		xp_walk_pop(w, m);
	}
	return rc < 0 ? rc : 0;
}
