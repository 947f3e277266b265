/*
 * edge: external documents parsed into typed structs on the HTTP worker,
 * before anything reaches the owner thread (ARCHITECTURE.md contract 5).
 * Each parser checks every field with size limits and names the faulty
 * field by its path ("jobs[3].depends_on[0]"); the owner receives the
 * typed result only, so its commands have a bounded cost.
 *
 * The files of this folder:
 *   edge.h       this map, and the typed documents
 *   workflow.c   POST /v1/workflows: a DAG of job specs, put in an order
 *                where each job comes after those it depends on (Kahn's,
 *                O(jobs + edges) with the names hashed)
 *
 * Job specs, job changes and queue definitions are parsed at the edge by
 * the parsers in src/core/state (spec.h, queuespec.h), descriptors by
 * src/descriptor; they move here as the edge grows (issue 19).
 *
 * Ownership: a parsed document owns its strings and specs; its _free()
 * releases them and is NULL-safe.
 */
#ifndef XP_EDGE_H
#define XP_EDGE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/state/spec.h"
#include "../lib/err.h"
#include "../lib/strbuf.h"

/* A workflow: its jobs' specs in an order where each comes after the jobs
 * of the workflow it depends on. Such a dependency holds XP_WF_LOCAL plus
 * that job's position in the order; the owner turns it into the job id
 * (the first id it hands out plus the position). */
#define XP_WF_LOCAL (1ULL << 62)
#define XP_WORKFLOW_MAX_JOBS 10000
struct xp_workflow {
	char name[XP_NAME_MAX + 1];
	size_t n;
	struct xp_jobspec *specs; /* n, in order; each spec's workflow is name */
	size_t *index;		  /* per position: its index in the document's jobs */
	/* the owner's progress while it submits the jobs a slice per turn
	 * (src/server/api_workflows.c); freed with the workflow */
	size_t done;	  /* positions submitted */
	uint64_t *ids;	  /* per position: its job id, once submitted */
	long *tenants;	  /* per position: its tenant */
	struct xp_sb out; /* the reply so far: its head and the jobs submitted */
};

/* Parse and order a workflow document (json: 1 JSON, 0 YAML, < 0 guess).
 * On error field gets the path of the faulty field ("" for the document). */
int xp_workflow_parse(const char *src, const char *buf, size_t len, int json,
		      struct xp_workflow *out, char field[640], struct xp_err *err);
void xp_workflow_free(struct xp_workflow *w);

#endif
