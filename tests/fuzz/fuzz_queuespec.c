/*
 * fuzz_queuespec: queue definitions (POST and PATCH /v1/queues,
 * src/core/state/queuespec.h) read by xp_queuespec_parse_text as JSON,
 * YAML or by content; a leading '!' asks for a create (the name required).
 *
 * Checks: an accepted definition writes canonical JSON that parses back to
 * the same canonical JSON (also once merged onto the defaults, as an update
 * is), every guarantee is at most its max and the allow list holds valid,
 * distinct names; a refusal carries its code, a text and the faulty
 * field's path.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/queuespec.h"
#include "edge/edge.h"
#include "fuzz.h"

static const char *const top[] = { "name",    "parent", "priority", "weight",
				   "preempt", "quota",	"aging",    "allow", NULL };

/* the canonical text; a name left out when there is none (an update's) */
static char *canonical(const struct xp_queuespec *q)
{
	json_t *j = xp_queuespec_json(q);
	if (!q->name[0])
		json_object_del(j, "name");
	char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	return s;
}

static void round_trip(const struct xp_queuespec *q)
{
	struct xp_queuespec again;
	struct xp_err err = { 0 };
	char field[320];
	char *j1 = canonical(q);
	int rc = xp_queuespec_parse_text("canonical", j1, strlen(j1), 1, q->name[0] != 0, &again,
					 field, &err);
	FZ_CHECK(rc == 0, "canonical JSON refused: %s\n%s", err.text, j1);
	char *j2 = canonical(&again);
	FZ_CHECK(!strcmp(j1, j2), "canonical JSON changed on a round trip:\n%s\n%s", j1, j2);
	free(j1);
	free(j2);
}

static void check_accepted(const struct xp_queuespec *q, int need_name)
{
	FZ_CHECK(!need_name || xp_name_ok(q->name), "a create without a valid name");
	FZ_CHECK(!q->parent[0] || strcmp(q->parent, q->name), "its own parent");
	for (int r = 0; r < XP_RES_N; r++)
		FZ_CHECK(q->guarantee[r] <= q->max[r], "%s: guarantee above max", xp_res_name(r));
	for (int i = 0; i < q->nallow; i++) {
		FZ_CHECK(xp_name_ok(q->allow[i]), "allow[%d] '%s' is not a name", i, q->allow[i]);
		for (int k = 0; k < i; k++)
			FZ_CHECK(strcmp(q->allow[i], q->allow[k]), "allow lists %s twice",
				 q->allow[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xp_queuespec q, merged;
	struct xp_err err = { 0 };
	char field[320];
	int json, need_name;

	fz_mode(&data, &size, &json, &need_name);
	int rc = xp_queuespec_parse_text("input", (const char *)data, size, json, need_name, &q,
					 field, &err);
	if (rc < 0) {
		fz_check_refused(rc, &err, "input");
		fz_check_field(&err, "input", field, top);
		return 0;
	}
	FZ_CHECK(!field[0], "accepted, yet field is '%s'", field);
	check_accepted(&q, need_name);
	round_trip(&q);
	xp_queuespec_init(&merged);
	memcpy(merged.name, q.name, sizeof(merged.name));
	xp_queuespec_merge(&merged, &q);
	round_trip(&merged);
	return 0;
}
