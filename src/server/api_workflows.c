/*
 * api_workflows: POST /v1/workflows - a DAG of jobs in one document
 * (docs/api.md "Workflows"), on the owner thread.
 *
 * The edge has parsed and ordered the document (src/edge/workflow.c:
 * every spec checked, each job after those it depends on). The owner
 * checks what needs the state - the tenants, queues, nodes and outside
 * dependencies of every job - before it journals anything. Then it submits
 * the jobs in that order, XP_WF_SLICE per turn: between turns the command
 * goes back to the end of the owner's queue (cmd->again), so the reads,
 * heartbeats and cycles queued behind a workflow of 10,000 jobs are served
 * within one slice's time. Ids ascend along every edge (a dependency on
 * position p becomes the id position p got); other submissions may take
 * ids between the slices. Nothing between two turns can make a checked job
 * fail: a queue with pending jobs is not deleted, and a job may depend on
 * any job that ever existed. Only a failed journal (fail-stop) or a stop
 * between turns leaves part of a workflow submitted; its reply says so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/state/state.h"
#include "../edge/edge.h"
#include "../lib/xalloc.h"
#include "ctl.h"

#define XP_WF_SLICE 100

/* The first turn: every job checked before any is journaled. 0 or replied. */
static int check_all(struct xp_ctl *ctl, struct xp_cmd *cmd, struct xp_workflow *wf)
{
	struct xp_err err = { 0 };
	char field[640], at[64];
	wf->tenants = xcalloc(wf->n ? wf->n : 1, sizeof(*wf->tenants));
	wf->ids = xcalloc(wf->n ? wf->n : 1, sizeof(*wf->ids));
	for (size_t pos = 0; pos < wf->n; pos++) {
		struct xp_jobspec *s = &wf->specs[pos];
		snprintf(at, sizeof(at), "jobs[%zu].", wf->index[pos]);
		if (xp_api_submit_check(ctl, cmd, s, at, &wf->tenants[pos]) < 0)
			return -1;
		for (uint16_t k = 0; k < s->ndeps; k++) /* outside the workflow */
			if (s->deps[k].job < XP_WF_LOCAL &&
			    xp_deps_check_one(ctl->st, &s->deps[k], (uint32_t)wf->tenants[pos],
					      &err) < 0) {
				snprintf(field, sizeof(field), "%sdepends_on[%u]", at, k);
				xp_reply_error(cmd, err.code, field, "%s: %s", field, err.text);
				return -1;
			}
	}
	/* the reply is written as the jobs go in, its head first: megabytes
	 * for 10,000 jobs, never copied again */
	json_t *name = json_string(wf->name);
	char *qname = json_dumps(name, JSON_ENCODE_ANY);
	json_decref(name);
	xp_sb_init(&wf->out);
	xp_sb_printf(&wf->out, "{\"workflow\":%s,\"jobs\":[", qname);
	free(qname);
	return 0;
}

void xp_api_workflows_submit(struct xp_ctl *ctl, struct xp_cmd *cmd)
{
	struct xp_state *st = ctl->st;
	struct xp_workflow *wf = cmd->payload;
	struct xp_err err = { 0 };
	if (!wf->ids && check_all(ctl, cmd, wf) < 0)
		return;
	size_t end = wf->n - wf->done > XP_WF_SLICE ? wf->done + XP_WF_SLICE : wf->n;
	for (size_t pos = wf->done; pos < end; pos++) {
		struct xp_jobspec *s = &wf->specs[pos];
		for (uint16_t k = 0; k < s->ndeps; k++) /* earlier positions have their ids */
			if (s->deps[k].job >= XP_WF_LOCAL)
				s->deps[k].job = wf->ids[s->deps[k].job - XP_WF_LOCAL];
		uint64_t id = st->next_job_id;
		if (xp_ctl_journal_submit(ctl, id, st->tenants.v[wf->tenants[pos]].name, NULL, s,
					  &err) < 0) {
			/* checked before the first: only a failed journal gets here */
			xp_reply_error(cmd, err.code, NULL,
				       "%s (%zu of the workflow's %zu jobs were "
				       "submitted)",
				       err.text, pos, wf->n);
			return;
		}
		cmd->journaled = 1;
		wf->ids[pos] = id;
		json_t *j = xp_api_job_json(ctl, xp_state_job(st, id));
		char *txt = json_dumps(j, JSON_COMPACT);
		if (pos)
			xp_sb_putc(&wf->out, ',');
		xp_sb_puts(&wf->out, txt);
		free(txt);
		json_decref(j);
	}
	wf->done = end;
	if (wf->done < wf->n) {
		cmd->again = 1; /* the rest on a later turn */
		return;
	}
	xp_sb_puts(&wf->out, "]}");
	xp_reply_json(cmd, 201, xp_sb_steal(&wf->out));
}
