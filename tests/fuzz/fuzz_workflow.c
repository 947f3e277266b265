/*
 * fuzz_workflow: workflows (POST /v1/workflows) read and ordered by
 * xp_workflow_parse (src/edge/edge.h) as JSON, YAML or by content.
 *
 * Checks: an accepted workflow lists every job once (index is a
 * permutation), each job after the workflow's jobs it depends on, each
 * spec labelled with the workflow's name, passing the submit check and
 * round-tripping through its canonical JSON; a refusal carries its code, a
 * text and the faulty field's path. A job's own error reads
 * "jobs[I]: NAME:LINE: PATH: reason" with field "jobs[I].PATH".
 */
#include <stdlib.h>
#include <string.h>

#include "edge/edge.h"
#include "fuzz.h"

static const char *const wf_top[] = { "name", "jobs", NULL };
static const char *const spec_top[] = {
	"name",	      "tenant",	  "queue",    "priority",     "command",    "args",
	"env",	      "workdir",  "replicas", "resources",    "labels",	    "duration",
	"exit_code",  "node",	  "on_node_lost", "time_limit", "gang",	    "depends_on",
	"workflow",   "deadline", "qos",      "hold_for_nodes", NULL
};

static void check_refused(int rc, const struct xp_err *err, const char *field)
{
	if (strncmp(err->text, "jobs[", 5) != 0) {
		fz_check_refused(rc, err, "input");
		fz_check_field(err, "input", field, wf_top);
		return;
	}
	/* a job's spec refused: "jobs[I]: " + the spec's error */
	size_t p = strcspn(err->text, ":");
	FZ_CHECK(err->text[p] == ':' && err->text[p + 1] == ' ', "malformed error: %s", err->text);
	FZ_CHECK(!strncmp(field, err->text, p) && field[p] == '.',
		 "field '%s' is not under the job the text names: %s", field, err->text);
	struct xp_err inner = *err;
	memmove(inner.text, err->text + p + 2, strlen(err->text + p + 2) + 1);
	fz_check_refused(rc, &inner, "input");
	fz_check_field(&inner, "input", field + p + 1, spec_top);
}

static void check_spec(const struct xp_workflow *w, size_t pos)
{
	const struct xp_jobspec *s = &w->specs[pos];
	struct xp_jobspec again;
	struct xp_err err = { 0 };
	char field[320];

	FZ_CHECK(s->workflow && !strcmp(s->workflow, w->name), "job %zu is not labelled %s", pos,
		 w->name);
	for (uint16_t d = 0; d < s->ndeps; d++)
		FZ_CHECK(!(s->deps[d].job & XP_WF_LOCAL) || s->deps[d].job - XP_WF_LOCAL < pos,
			 "job %zu depends on position %llu, not before it", pos,
			 (unsigned long long)(s->deps[d].job - XP_WF_LOCAL));
	FZ_CHECK(xp_jobspec_check_submit(s, "input", field, &err) == 0,
		 "an accepted job fails the submit check: %s", err.text);
	char *j1 = xp_jobspec_to_json(s);
	int rc = xp_jobspec_parse_text("canonical", j1, strlen(j1), 1, &again, field, &err);
	FZ_CHECK(rc == 0, "canonical JSON of job %zu refused: %s\n%s", pos, err.text, j1);
	char *j2 = xp_jobspec_to_json(&again);
	FZ_CHECK(!strcmp(j1, j2), "job %zu changed on a round trip:\n%s\n%s", pos, j1, j2);
	xp_jobspec_free(&again);
	free(j1);
	free(j2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xp_workflow w;
	struct xp_err err = { 0 };
	char field[640];
	int json;

	fz_mode(&data, &size, &json, NULL);
	int rc = xp_workflow_parse("input", (const char *)data, size, json, &w, field, &err);
	if (rc < 0) {
		check_refused(rc, &err, field);
		FZ_CHECK(!w.n && !w.specs && !w.index, "refused, yet the workflow holds jobs");
		return 0;
	}
	FZ_CHECK(w.n >= 1 && w.n <= XP_WORKFLOW_MAX_JOBS && xp_name_ok(w.name),
		 "accepted %zu jobs named '%s'", w.n, w.name);
	unsigned char *seen = calloc(w.n, 1);
	for (size_t pos = 0; pos < w.n; pos++) {
		FZ_CHECK(w.index[pos] < w.n && !seen[w.index[pos]], "index is not a permutation");
		seen[w.index[pos]] = 1;
		check_spec(&w, pos);
	}
	free(seen);
	xp_workflow_free(&w);
	return 0;
}
