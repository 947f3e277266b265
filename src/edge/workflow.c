/*
 * workflow: POST /v1/workflows parsed and ordered at the edge (edge.h).
 *
 *   {name: WF, jobs: [{name: a, ...spec}, {name: b, depends_on: [{job: a}],
 *    ...spec}]}
 *
 * Every job is named, uniquely; a depends_on entry names a job of the
 * workflow or gives the id of an existing job (the owner checks those).
 * The order is Kahn's, stable by position: of the jobs whose workflow
 * dependencies are all placed, the first in the document goes next (a
 * heap of positions). Cost: O((jobs + edges) log jobs), the names looked
 * up in a hash table - a thousand jobs of 64 dependencies each took the
 * owner thread 98 s when this ran there with linear searches.
 */
#include "edge_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../descriptor/tree.h"
#include "../lib/strtab.h"
#include "../lib/xalloc.h"

static const char *const wf_keys[] = { "name", "jobs", NULL };

/* the job name of dependency entry d when it names one of the workflow's */
static const char *dep_name(const struct xp_tree *d)
{
	const struct xp_tree *v = d->kind == XP_TREE_MAP ? xp_tree_get(d, "job") : NULL;
	if (!v || v->kind != XP_TREE_SCALAR)
		return NULL;
	for (const char *p = v->text; *p; p++)
		if (*p < '0' || *p > '9')
			return v->text;
	return NULL; /* an id */
}

static const struct xp_tree *deps_of(const struct xp_tree *job)
{
	const struct xp_tree *d = xp_tree_get(job, "depends_on");
	return d && d->kind == XP_TREE_SEQ ? d : NULL;
}

/* a min-heap of document positions: the ready jobs */
struct heap {
	size_t *v, n;
};

static void heap_push(struct heap *h, size_t x)
{
	size_t i = h->n++;
	h->v[i] = x;
	while (i && h->v[(i - 1) / 2] > h->v[i]) {
		size_t p = (i - 1) / 2, t = h->v[p];
		h->v[p] = h->v[i];
		h->v[i] = t;
		i = p;
	}
}

static size_t heap_pop(struct heap *h)
{
	size_t top = h->v[0], i = 0;
	h->v[0] = h->v[--h->n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < h->n && h->v[l] < h->v[m])
			m = l;
		if (r < h->n && h->v[r] < h->v[m])
			m = r;
		if (m == i)
			return top;
		size_t t = h->v[m];
		h->v[m] = h->v[i];
		h->v[i] = t;
		i = m;
	}
}

/* The name, the job list and every job's name: 0, or an error in w */
static int check_shape(struct xp_walk *w, const struct xp_tree *t, const char **wf,
		       const struct xp_tree **jobs, struct xp_strtab *names)
{
	int rc;
	if (!t)
		return xp_walk_fail(w, 0, XP_EINVAL, "empty document, expected a workflow");
	if ((rc = xp_walk_want(w, t, XP_TREE_MAP, "a map {name, jobs}")) < 0 ||
	    (rc = xp_walk_keys(w, t, wf_keys)) < 0)
		return rc;
	if ((rc = xp_walk_get_str(w, t, "name", 253, wf)) == 0) {
		size_t m = xp_walk_push_key(w, "name"); /* the field's path, not "" */
		rc = xp_walk_fail(w, t->line, XP_EINVAL, "missing (the workflow's name)");
		xp_walk_pop(w, m);
		return rc;
	}
	if (rc < 0)
		return rc;
	if (!xp_name_ok(*wf)) {
		size_t m = xp_walk_push_key(w, "name");
		rc = xp_walk_fail(w, xp_tree_get(t, "name")->line, XP_EINVAL,
				  "expected 1..63 letters, digits, '-', '_' or '.'");
		xp_walk_pop(w, m);
		return rc;
	}
	*jobs = xp_tree_field(t, "jobs");
	size_t m = xp_walk_push_key(w, "jobs");
	rc = *jobs ? xp_walk_list(w, *jobs, XP_WORKFLOW_MAX_JOBS)
		   : xp_walk_fail(w, t->line, XP_EINVAL, "missing (a list of jobs)");
	if (rc == 0 && (*jobs)->n == 0)
		rc = xp_walk_fail(w, (*jobs)->line, XP_EINVAL, "a workflow needs a job");
	for (size_t i = 0; rc == 0 && i < (*jobs)->n; i++) {
		const struct xp_tree *j = (*jobs)->kids[i], *nm = xp_tree_get(j, "name");
		size_t m2 = xp_walk_push_idx(w, i);
		if ((rc = xp_walk_want(w, j, XP_TREE_MAP, "a map (a job spec)")) == 0 &&
		    (!nm || nm->kind != XP_TREE_SCALAR || !xp_name_ok(nm->text)))
			rc = xp_walk_fail(w, j->line, XP_EINVAL,
					  "name: every job of a workflow needs a valid name");
		/* names interned in order: job i is symbol i + 1 */
		if (rc == 0 && xp_strtab_intern(names, nm->text) != i + 1) {
			xp_walk_push_key(w, "name");
			rc = xp_walk_fail(w, nm->line, XP_EEXIST, "'%s' is used twice",
					  XP_SHOW(nm->text));
		}
		xp_walk_pop(w, m2);
	}
	xp_walk_pop(w, m);
	return rc;
}

/* Kahn's order into order[]; 0, or an error in w (an unknown name, a cycle) */
static int order_jobs(struct xp_walk *w, const struct xp_tree *jobs,
		      const struct xp_strtab *names, size_t *order)
{
	size_t n = jobs->n, nedges = 0, *indeg = xcalloc(n, sizeof(size_t));
	int rc = 0;
	for (size_t i = 0; i < n; i++) {
		const struct xp_tree *deps = deps_of(jobs->kids[i]);
		for (size_t k = 0; deps && k < deps->n; k++) {
			const char *dn = dep_name(deps->kids[k]);
			if (!dn)
				continue;
			if (!xp_strtab_find(names, dn)) {
				size_t m = xp_walk_push_key(w, "jobs");
				xp_walk_push_idx(w, i);
				xp_walk_push_key(w, "depends_on");
				xp_walk_push_idx(w, k);
				rc = xp_walk_fail(w, deps->kids[k]->line, XP_EINVAL,
						  "job: '%s' is neither a job of the workflow nor "
						  "a job id",
						  XP_SHOW(dn));
				xp_walk_pop(w, m);
				free(indeg);
				return rc;
			}
			indeg[i]++;
			nedges++;
		}
	}
	/* the edges out of each job, as lists in one array: job x's dependents
	 * are to[first[x] .. first[x + 1]) */
	size_t *first = xcalloc(n + 1, sizeof(size_t)), *at = xcalloc(n + 1, sizeof(size_t));
	size_t *to = xcalloc(nedges + 1, sizeof(size_t));
	for (size_t i = 0; i < n; i++) {
		const struct xp_tree *deps = deps_of(jobs->kids[i]);
		for (size_t k = 0; deps && k < deps->n; k++) {
			const char *dn = dep_name(deps->kids[k]);
			if (dn)
				first[xp_strtab_find(names, dn)]++; /* symbol = index + 1 */
		}
	}
	for (size_t x = 0; x < n; x++) {
		first[x + 1] += first[x];
		at[x] = first[x];
	}
	for (size_t i = 0; i < n; i++) {
		const struct xp_tree *deps = deps_of(jobs->kids[i]);
		for (size_t k = 0; deps && k < deps->n; k++) {
			const char *dn = dep_name(deps->kids[k]);
			if (dn)
				to[at[xp_strtab_find(names, dn) - 1]++] = i;
		}
	}
	free(at);
	struct heap h = { xcalloc(n, sizeof(size_t)), 0 };
	size_t done = 0;
	for (size_t i = 0; i < n; i++)
		if (!indeg[i])
			heap_push(&h, i);
	while (h.n) {
		size_t pick = heap_pop(&h);
		order[done++] = pick;
		for (size_t e = first[pick]; e < first[pick + 1]; e++)
			if (--indeg[to[e]] == 0)
				heap_push(&h, to[e]);
	}
	if (done < n) {
		size_t m = xp_walk_push_key(w, "jobs");
		rc = xp_walk_fail(w, jobs->line, XP_EINVAL,
				  "the dependencies form a cycle (%zu jobs on or after it)", n - done);
		xp_walk_pop(w, m);
	}
	free(h.v);
	free(first);
	free(to);
	free(indeg);
	return rc;
}

/* each job's spec, in order, its workflow dependencies as XP_WF_LOCAL + position */
static int parse_specs(const char *src, struct xp_tree *jobs, const struct xp_strtab *names,
		       const char *wf, struct xp_workflow *out, char field[640],
		       struct xp_err *err)
{
	size_t n = jobs->n, *pos_of = xcalloc(n, sizeof(size_t));
	int rc = 0;
	for (size_t pos = 0; pos < n; pos++)
		pos_of[out->index[pos]] = pos;
	for (size_t pos = 0; pos < n && rc == 0; pos++) {
		size_t i = out->index[pos];
		struct xp_tree *j = jobs->kids[i];
		const struct xp_tree *deps = deps_of(j);
		for (size_t k = 0; deps && k < deps->n; k++) {
			const char *dn = dep_name(deps->kids[k]);
			if (!dn)
				continue;
			struct xp_tree *v = (struct xp_tree *)xp_tree_get(deps->kids[k], "job");
			char id[32];
			snprintf(id, sizeof(id), "%llu",
				 (unsigned long long)(XP_WF_LOCAL +
						      pos_of[xp_strtab_find(names, dn) - 1]));
			free(v->text);
			v->text = xstrdup(id);
			v->len = strlen(id);
		}
		char f[320];
		struct xp_jobspec *s = &out->specs[pos];
		rc = xp_jobspec_parse(j, src, s, f, err);
		if (rc == 0) {
			out->n = pos + 1; /* parsed: freed with the rest */
			rc = xp_jobspec_check_submit(s, src, f, err);
		}
		if (rc == 0 && s->workflow && strcmp(s->workflow, wf)) {
			snprintf(f, sizeof(f), "workflow");
			rc = xp_errf(err, XP_EINVAL, "%s: workflow: not the workflow's name %s", src,
				     wf);
		}
		if (rc < 0) {
			snprintf(field, 640, "jobs[%zu].%s", i, f);
			xp_err_prefix(err, "jobs[%zu]: ", i);
			break;
		}
		free(s->workflow);
		s->workflow = xstrdup(wf);
	}
	free(pos_of);
	return rc;
}

int xp_workflow_parse(const char *src, const char *buf, size_t len, int json,
		      struct xp_workflow *out, char field[640], struct xp_err *err)
{
	struct xp_tree *t = NULL;
	struct xp_walk w;
	struct xp_strtab *names = xp_strtab_create();
	const char *wf = NULL;
	const struct xp_tree *jobs = NULL;

	memset(out, 0, sizeof(*out));
	memset(&w, 0, sizeof(w));
	w.name = src;
	w.err = err;
	field[0] = '\0';
	int rc = xp_tree_parse_field(src, buf ? buf : "", len, json, &t, w.field, err);
	if (rc == 0)
		rc = check_shape(&w, t, &wf, &jobs, names);
	if (rc == 0) {
		out->index = xcalloc(jobs->n, sizeof(size_t));
		rc = order_jobs(&w, jobs, names, out->index);
	}
	if (rc < 0) {
		snprintf(field, 640, "%s", w.field);
	} else {
		snprintf(out->name, sizeof(out->name), "%s", wf);
		out->specs = xcalloc(jobs->n, sizeof(*out->specs));
		rc = parse_specs(src, (struct xp_tree *)jobs, names, wf, out, field, err);
	}
	xp_strtab_destroy(names);
	xp_tree_destroy(t);
	if (rc < 0)
		xp_workflow_free(out);
	return rc < 0 ? rc : 0;
}

void xp_workflow_free(struct xp_workflow *w)
{
	if (!w)
		return;
	for (size_t i = 0; w->specs && i < w->n; i++)
		xp_jobspec_free(&w->specs[i]);
	free(w->specs);
	free(w->index);
	free(w->ids);
	free(w->tenants);
	xp_sb_free(&w->out);
	memset(w, 0, sizeof(*w));
}
