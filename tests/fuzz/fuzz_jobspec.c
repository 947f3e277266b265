/*
 * fuzz_jobspec: job specs (POST /v1/jobs, src/core/state/spec.h) read by
 * xp_jobspec_parse_text as JSON, YAML or by content (fuzz.h's mode byte),
 * then xp_jobspec_check_submit.
 *
 * Checks: an accepted spec writes canonical JSON that parses again to the
 * same canonical JSON, and the submit check says the same of both; a
 * refusal (parse or submit check) carries its code and a text naming the
 * document, and a field's error names the field's path, the same in the
 * text and in `field`.
 */
#include <stdlib.h>
#include <string.h>

#include "core/state/spec.h"
#include "edge/edge.h"
#include "fuzz.h"

static const char *const top[] = { "name",	   "tenant",	"queue",    "priority",
				   "command",	   "args",	"env",	    "workdir",
				   "replicas",	   "resources", "labels",   "duration",
				   "exit_code",	   "node",	"on_node_lost", "time_limit",
				   "gang",	   "depends_on", "workflow", "deadline",
				   "qos",	   "hold_for_nodes", NULL };

static int submit_check(const struct xp_jobspec *s)
{
	struct xp_err err = { 0 };
	char field[320] = "";
	int rc = xp_jobspec_check_submit(s, "input", field, &err);
	if (rc < 0) {
		fz_check_refused(rc, &err, "input");
		fz_check_field(&err, "input", field, top);
		FZ_CHECK(field[0], "the submit check refused without a field: %s", err.text);
	}
	return rc;
}

static void round_trip(const struct xp_jobspec *s)
{
	struct xp_jobspec again;
	struct xp_err err = { 0 };
	char field[320];
	char *j1 = xp_jobspec_to_json(s);
	int rc = xp_jobspec_parse_text("canonical", j1, strlen(j1), 1, &again, field, &err);
	FZ_CHECK(rc == 0, "the canonical JSON of an accepted spec is refused: %s\n%s", err.text, j1);
	char *j2 = xp_jobspec_to_json(&again);
	FZ_CHECK(!strcmp(j1, j2), "canonical JSON changed on a round trip:\n%s\n%s", j1, j2);
	FZ_CHECK(submit_check(s) == submit_check(&again), "the submit check changed on a round trip");
	xp_jobspec_free(&again);
	free(j1);
	free(j2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xp_jobspec s;
	struct xp_err err = { 0 };
	char field[320];
	int json;

	fz_mode(&data, &size, &json, NULL);
	int rc = xp_jobspec_parse_text("input", (const char *)data, size, json, &s, field, &err);
	if (rc < 0) {
		fz_check_refused(rc, &err, "input");
		fz_check_field(&err, "input", field, top);
		return 0;
	}
	FZ_CHECK(!field[0], "accepted, yet field is '%s'", field);
	round_trip(&s);
	xp_jobspec_free(&s);
	return 0;
}
