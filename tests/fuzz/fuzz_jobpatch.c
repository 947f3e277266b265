/*
 * fuzz_jobpatch: changes to a pending job (PATCH /v1/jobs/ID, spec.h)
 * read by xp_jobpatch_parse_text as JSON, YAML or by content.
 *
 * Checks: an accepted change sets at least one field and only known ones,
 * its names are valid, its JSON (xp_jobpatch_json, what the journal keeps)
 * parses back to the same change, and applied to a default spec it gives
 * a spec whose canonical JSON round-trips; a refusal carries its code, a
 * text and the faulty field's path.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/spec.h"
#include "edge/edge.h"
#include "fuzz.h"

static const char *const top[] = { "name", "priority", "queue", "time_limit", NULL };

static void same_patch(const struct xp_jobpatch *a, const struct xp_jobpatch *b)
{
	FZ_CHECK(a->set == b->set, "set %u became %u", a->set, b->set);
	FZ_CHECK(!(a->set & XP_JP_NAME) || !strcmp(a->name, b->name), "name changed");
	FZ_CHECK(!(a->set & XP_JP_QUEUE) || !strcmp(a->queue, b->queue), "queue changed");
	FZ_CHECK(!(a->set & XP_JP_PRIORITY) || a->priority == b->priority, "priority changed");
	FZ_CHECK(!(a->set & XP_JP_TIME_LIMIT) || a->time_limit_ms == b->time_limit_ms,
		 "time_limit changed");
}

static void check_applied(const struct xp_jobpatch *p)
{
	struct xp_jobspec s, again;
	struct xp_err err = { 0 };
	char field[320];
	FZ_CHECK(xp_jobspec_parse_text("base", "{}", 2, 1, &s, field, &err) == 0, "{} refused");
	xp_jobpatch_apply(p, &s);
	char *j1 = xp_jobspec_to_json(&s);
	int rc = xp_jobspec_parse_text("applied", j1, strlen(j1), 1, &again, field, &err);
	FZ_CHECK(rc == 0, "a spec with the change applied is refused: %s\n%s", err.text, j1);
	char *j2 = xp_jobspec_to_json(&again);
	FZ_CHECK(!strcmp(j1, j2), "applied spec changed on a round trip:\n%s\n%s", j1, j2);
	free(j1);
	free(j2);
	xp_jobspec_free(&s);
	xp_jobspec_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xp_jobpatch p, again;
	struct xp_err err = { 0 };
	char field[320];
	int json;

	fz_mode(&data, &size, &json, NULL);
	int rc = xp_jobpatch_parse_text("input", (const char *)data, size, json, &p, field, &err);
	if (rc < 0) {
		fz_check_refused(rc, &err, "input");
		fz_check_field(&err, "input", field, top);
		return 0;
	}
	FZ_CHECK(p.set && !(p.set & ~15u), "accepted with set %u", p.set);
	FZ_CHECK(!(p.set & XP_JP_NAME) || xp_name_ok(p.name), "invalid name '%s'", p.name);
	FZ_CHECK(!(p.set & XP_JP_QUEUE) || xp_name_ok(p.queue), "invalid queue '%s'", p.queue);
	json_t *j = xp_jobpatch_json(&p);
	char *text = json_dumps(j, JSON_COMPACT);
	rc = xp_jobpatch_parse_text("journal", text, strlen(text), 1, &again, field, &err);
	FZ_CHECK(rc == 0, "the change's own JSON is refused: %s\n%s", err.text, text);
	same_patch(&p, &again);
	check_applied(&p);
	free(text);
	json_decref(j);
	return 0;
}
