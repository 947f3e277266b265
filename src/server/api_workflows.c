/*
 * api_workflows: POST /v1/workflows - a DAG of jobs in one document
 * (docs/api.md "Workflows"), on the owner thread.
 *
 * The edge has parsed and ordered the document (src/edge/workflow.c:
 * every spec checked, each job after those it depends on). The owner
 * checks what needs the state - the tenants, queues, nodes and outside
 * dependencies of every job - before it journals anything, then submits
 * the jobs in that order, so ids ascend along every edge: a dependency on
 * position p becomes the id base + p.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/state/state.h"
#include "../edge/edge.h"
#include "../lib/xalloc.h"
#include "ctl.h"

void xp_api_workflows_submit(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	struct xp_workflow *wf = cmd->payload;
	struct xp_err err = { 0 };
	size_t n = wf->n;
	long *tenants = xcalloc(n, sizeof(*tenants));
	uint64_t base = st->next_job_id;
	char field[640], at[64];

	for (size_t pos = 0; pos < n; pos++) {
		struct xp_jobspec *s = &wf->specs[pos];
		snprintf(at, sizeof(at), "jobs[%zu].", wf->index[pos]);
		for (uint16_t k = 0; k < s->ndeps; k++)
			if (s->deps[k].job >= XP_WF_LOCAL)
				s->deps[k].job = base + (s->deps[k].job - XP_WF_LOCAL);
		if (xp_api_submit_check(ctl, cmd, s, at, &tenants[pos]) < 0)
			goto out;
		for (uint16_t k = 0; k < s->ndeps; k++) /* outside the workflow */
			if (s->deps[k].job < base &&
			    xp_deps_check_one(st, &s->deps[k], (uint32_t)tenants[pos], &err) < 0) {
				snprintf(field, sizeof(field), "%sdepends_on[%u]", at, k);
				xp_reply_error(cmd, err.code, field, "%s: %s", field, err.text);
				goto out;
			}
	}
	json_t *arr = json_array();
	for (size_t pos = 0; pos < n; pos++) {
		char *body = xp_rec_job_submit(base + pos, st->tenants.v[tenants[pos]].name, NULL,
					       &wf->specs[pos]);
		if (xp_ctl_journal(ctl, "job.submit", body, &err) < 0) {
			/* checked above: only a failed journal gets here */
			json_decref(arr);
			xp_reply_err(cmd, &err, NULL);
			goto out;
		}
		cmd->journaled = 1;
		json_array_append_new(arr, xp_api_job_json(ctl, xp_state_job(st, base + pos)));
	}
	json_t *o = json_pack("{s:s,s:o}", "workflow", wf->name, "jobs", arr);
	xp_reply_json(cmd, 201, xp_json_take(o));
out:
	free(tenants);
}
