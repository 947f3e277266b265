/*
 * api_workflows: POST /v1/workflows - a DAG of jobs in one document
 * (docs/api.md "Workflows").
 *
 *   {name: WF, jobs: [{name: a, ...spec}, {name: b, depends_on: [{job: a}],
 *    ...spec}]}
 *
 * Every job is named, uniquely; a depends_on entry names a job of the
 * workflow or gives the id of an existing job. The owner checks the whole
 * document - each spec, the names, that the graph has no cycle, the
 * tenants, queues, nodes and outside dependencies - before it journals
 * anything, then submits the jobs in an order where each comes after what
 * it depends on (ids ascend along every edge), each spec carrying
 * `workflow: WF`. GET /v1/jobs?workflow=WF lists them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/state/state.h"
#include "../descriptor/tree.h"
#include "../lib/xalloc.h"
#include "ctl.h"

#define XP_WORKFLOW_MAX_JOBS 1000

static const char *const wf_keys[] = { "name", "jobs", NULL };

static long find(char **names, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return (long)i;
	return -1;
}

/* the job name of dependency entry d when it names one of the workflow's */
static const char *dep_name(const struct xp_tree *d)
{
	const struct xp_tree *v = xp_tree_get(d, "job");
	if (!v || v->kind != XP_TREE_SCALAR)
		return NULL;
	for (const char *p = v->text; *p; p++)
		if (*p < '0' || *p > '9')
			return v->text;
	return NULL; /* an id */
}

void xp_api_workflows_submit(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	struct xp_err err = { 0 };
	struct xp_tree *t = NULL;
	struct xp_walk w;
	char **names = NULL, field[640];
	size_t n = 0, *order = NULL, *indeg = NULL;
	struct xp_jobspec *specs = NULL;
	long *tenants = NULL;
	const char *wf = NULL;
	int rc;

	memset(&w, 0, sizeof(w));
	w.name = "request";
	w.err = &err;
	rc = xp_tree_parse("request", cmd->body ? cmd->body : "", cmd->len, cmd->body_json, &t,
			   &err);
	if (rc == 0 && !t)
		rc = xp_walk_fail(&w, 0, XP_EINVAL, "empty document, expected a workflow");
	if (rc == 0 && (rc = xp_walk_want(&w, t, XP_TREE_MAP, "a map {name, jobs}")) == 0)
		rc = xp_walk_keys(&w, t, wf_keys);
	if (rc == 0 && (rc = xp_walk_get_str(&w, t, "name", 253, &wf)) == 0)
		rc = xp_walk_fail(&w, t->line, XP_EINVAL, "name: missing (the workflow's name)");
	if (rc > 0 && !xp_name_ok(wf))
		rc = xp_walk_fail(&w, xp_tree_get(t, "name")->line, XP_EINVAL,
				  "name: expected 1..63 letters, digits, '-', '_' or '.'");
	const struct xp_tree *jobs = rc >= 0 ? xp_tree_field(t, "jobs") : NULL;
	if (rc >= 0) {
		size_t m = xp_walk_push_key(&w, "jobs");
		rc = jobs ? xp_walk_list(&w, jobs, XP_WORKFLOW_MAX_JOBS)
			  : xp_walk_fail(&w, t->line, XP_EINVAL, "missing (a list of jobs)");
		if (rc == 0 && jobs->n == 0)
			rc = xp_walk_fail(&w, jobs->line, XP_EINVAL, "a workflow needs a job");
		xp_walk_pop(&w, m);
	}
	if (rc < 0)
		goto fail;
	n = jobs->n;
	names = xcalloc(n, sizeof(*names));
	/* names first: every job has one, once */
	for (size_t i = 0; i < n && rc >= 0; i++) {
		const struct xp_tree *j = jobs->kids[i], *nm = xp_tree_get(j, "name");
		size_t m = xp_walk_push_key(&w, "jobs");
		xp_walk_push_idx(&w, i);
		if ((rc = xp_walk_want(&w, j, XP_TREE_MAP, "a map (a job spec)")) == 0 &&
		    (!nm || nm->kind != XP_TREE_SCALAR || !xp_name_ok(nm->text)))
			rc = xp_walk_fail(&w, j->line, XP_EINVAL,
					  "name: every job of a workflow needs a valid name");
		if (rc == 0 && find(names, i, nm->text) >= 0)
			rc = xp_walk_fail(&w, nm->line, XP_EEXIST, "name: '%s' is used twice",
					  XP_SHOW(nm->text));
		if (rc == 0)
			names[i] = nm->text;
		xp_walk_pop(&w, m);
	}
	if (rc < 0)
		goto fail;
	/* edges by name; Kahn's order, stable by position */
	indeg = xcalloc(n, sizeof(*indeg));
	order = xcalloc(n, sizeof(*order));
	for (size_t i = 0; i < n && rc >= 0; i++) {
		const struct xp_tree *deps = xp_tree_get(jobs->kids[i], "depends_on");
		for (size_t k = 0; deps && deps->kind == XP_TREE_SEQ && k < deps->n; k++) {
			const char *dn = dep_name(deps->kids[k]);
			if (!dn)
				continue;
			if (find(names, n, dn) < 0) {
				size_t m = xp_walk_push_key(&w, "jobs");
				xp_walk_push_idx(&w, i);
				xp_walk_push_key(&w, "depends_on");
				xp_walk_push_idx(&w, k);
				rc = xp_walk_fail(
					&w, deps->kids[k]->line, XP_EINVAL,
					"job: '%s' is neither a job of the workflow nor a "
					"job id",
					XP_SHOW(dn));
				xp_walk_pop(&w, m);
				break;
			}
			indeg[i]++;
		}
	}
	if (rc < 0)
		goto fail;
	size_t done = 0;
	while (done < n) {
		size_t pick = n;
		for (size_t i = 0; i < n && pick == n; i++)
			if (indeg[i] == 0)
				pick = i;
		if (pick == n) {
			size_t m = xp_walk_push_key(&w, "jobs");
			rc = xp_walk_fail(&w, jobs->line, XP_EINVAL,
					  "the dependencies form a cycle (%zu jobs on or after it)",
					  n - done);
			xp_walk_pop(&w, m);
			goto fail;
		}
		indeg[pick] = (size_t)-1;
		order[done++] = pick;
		for (size_t i = 0; i < n; i++) { /* the edges out of pick */
			const struct xp_tree *deps = xp_tree_get(jobs->kids[i], "depends_on");
			for (size_t k = 0; deps && deps->kind == XP_TREE_SEQ && k < deps->n; k++) {
				const char *dn = dep_name(deps->kids[k]);
				if (dn && !strcmp(dn, names[pick]) && indeg[i] != (size_t)-1)
					indeg[i]--;
			}
		}
	}
	/* ids in that order; names in depends_on become ids; then each spec */
	uint64_t base = st->next_job_id;
	specs = xcalloc(n, sizeof(*specs));
	tenants = xcalloc(n, sizeof(*tenants));
	for (size_t pos = 0; pos < n && rc >= 0; pos++) {
		size_t i = order[pos];
		struct xp_tree *j = jobs->kids[i];
		const struct xp_tree *deps = xp_tree_get(j, "depends_on");
		for (size_t k = 0; deps && deps->kind == XP_TREE_SEQ && k < deps->n; k++) {
			const char *dn = dep_name(deps->kids[k]);
			if (!dn)
				continue;
			size_t at = 0;
			while (order[at] != (size_t)find(names, n, dn))
				at++;
			struct xp_tree *v = (struct xp_tree *)xp_tree_get(deps->kids[k], "job");
			char id[32];
			snprintf(id, sizeof(id), "%llu", (unsigned long long)(base + at));
			free(v->text);
			v->text = xstrdup(id);
			v->len = strlen(id);
		}
		char f[320], at[64];
		rc = xp_jobspec_parse(j, "request", &specs[pos], f, &err);
		if (rc == 0)
			rc = xp_jobspec_check_submit(&specs[pos], "request", f, &err);
		snprintf(at, sizeof(at), "jobs[%zu].", i);
		if (rc < 0) {
			snprintf(field, sizeof(field), "%s%s", at, f);
			xp_reply_error(cmd, err.code, field, "jobs[%zu]: %s", i, err.text);
			goto out;
		}
		if (specs[pos].workflow && strcmp(specs[pos].workflow, wf)) {
			snprintf(field, sizeof(field), "%sworkflow", at);
			xp_reply_error(cmd, XP_EINVAL, field, "%s: not the workflow's name %s",
				       field, wf);
			goto out;
		}
		free(specs[pos].workflow);
		specs[pos].workflow = xstrdup(wf);
		if (xp_api_submit_check(ctl, cmd, &specs[pos], at, &tenants[pos]) < 0)
			goto out;
		for (uint16_t k = 0; k < specs[pos].ndeps; k++) /* outside the workflow */
			if (specs[pos].deps[k].job < base &&
			    xp_deps_check_one(st, &specs[pos].deps[k], (uint32_t)tenants[pos],
					      &err) < 0) {
				snprintf(field, sizeof(field), "%sdepends_on[%u]", at, k);
				xp_reply_error(cmd, err.code, field, "%s: %s", field, err.text);
				goto out;
			}
	}
	json_t *arr = json_array();
	for (size_t pos = 0; pos < n; pos++) {
		char *body = xp_rec_job_submit(base + pos, st->tenants.v[tenants[pos]].name, NULL,
					       &specs[pos]);
		if (xp_ctl_journal(ctl, "job.submit", body, &err) < 0) {
			/* checked above: only a failed journal gets here */
			json_decref(arr);
			xp_reply_err(cmd, &err, NULL);
			goto out;
		}
		cmd->journaled = 1;
		json_array_append_new(arr, xp_api_job_json(ctl, xp_state_job(st, base + pos)));
	}
	json_t *o = json_pack("{s:s,s:o}", "workflow", wf, "jobs", arr);
	xp_reply_json(cmd, 201, xp_json_take(o));
	goto out;
fail:
	xp_reply_error(cmd, err.code, w.field[0] ? w.field : NULL, "%s", err.text);
out:
	for (size_t i = 0; specs && i < n; i++)
		xp_jobspec_free(&specs[i]);
	free(specs);
	free(tenants);
	free(names);
	free(order);
	free(indeg);
	xp_tree_destroy(t);
}
