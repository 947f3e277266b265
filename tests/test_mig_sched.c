/*
 * test_mig_sched: MIG slices as job requests (issue 21): devices.mig in a
 * spec (parse, the refusals naming the field, the journal's canonical
 * JSON), and the controller's refusals of a profile no registered node
 * offers or of MIG asked of devices without partitions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/model/mig.h"
#include "core/state/spec.h"
#include "core/state/state.h"
#include "lib/xalloc.h"
#include "testutil.h"
#include "world.h"

static int parse(const char *yaml, struct xp_jobspec *s, char field[320], struct xp_err *err)
{
	return xp_jobspec_parse_text("t", yaml, strlen(yaml), 0, s, field, err);
}

static void test_spec_round_trip(void **state)
{
	(void)state;
	struct xp_jobspec s, s2;
	struct xp_err err = { 0 };
	char field[320];
	assert_int_equal(parse("command: [true]\nresources:\n  devices: {mig: {profile: 3G.40GB}}\n",
			       &s, field, &err),
			 0);
	assert_string_equal(s.mig_profile, "3g.40gb");
	assert_int_equal(s.dev_count, 1);
	assert_int_equal(s.dev_milli, 3 * 1000 / 7); /* quotas: 3 slices of 7 */
	assert_int_equal(s.dev_mem_mib, 40192);	     /* the first table's 3g.40gb */
	assert_int_equal(xp_jobspec_check_submit(&s, "t", field, &err), 0);
	char *j = xp_jobspec_to_json(&s);
	assert_non_null(strstr(j, "\"mig\":{\"profile\":\"3g.40gb\"}"));
	assert_null(strstr(j, "compute_milli"));
	assert_int_equal(xp_jobspec_parse_text("t", j, strlen(j), 1, &s2, field, &err), 0);
	char *j2 = xp_jobspec_to_json(&s2);
	assert_string_equal(j, j2);
	struct xp_strtab *syms = xp_strtab_create();
	struct xp_request r1, r2;
	xp_jobspec_request(&s, syms, &r1);
	xp_jobspec_request(&s2, syms, &r2);
	assert_memory_equal(&r1, &r2, sizeof(r1));
	assert_string_equal(xp_strtab_str(syms, r1.mig), "3g.40gb");
	xp_strtab_destroy(syms);
	free(j);
	free(j2);
	xp_jobspec_free(&s);
	xp_jobspec_free(&s2);
}

static void expect_refused(const char *yaml, const char *field_want, const char *text)
{
	struct xp_jobspec s;
	struct xp_err err = { 0 };
	char field[320] = "";
	int rc = parse(yaml, &s, field, &err);
	if (rc == 0) {
		rc = xp_jobspec_check_submit(&s, "t", field, &err);
		xp_jobspec_free(&s);
	}
	assert_true(rc < 0);
	if (!strstr(field, field_want) || !strstr(err.text, text))
		fail_msg("field '%s', error '%s'; wanted '%s' and '%s'", field, err.text,
			 field_want, text);
}

static void test_spec_refusals(void **state)
{
	(void)state;
	expect_refused("resources: {devices: {mig: {profile: 3g.99gb}}}\n",
		       "resources.devices.mig.profile", "valid: 1g.5gb");
	expect_refused("resources: {devices: {mig: {profile: 3g.99gb}}}\n",
		       "resources.devices.mig.profile", "3g.40gb");
	expect_refused("resources: {devices: {fraction: 0.5, mig: {profile: 3g.40gb}}}\n",
		       "resources.devices.mig", "compute_milli and fraction");
	expect_refused("resources: {devices: {compute_milli: 500, mig: {profile: 3g.40gb}}}\n",
		       "resources.devices.mig", "compute_milli and fraction");
	expect_refused("resources: {devices: {count: 2, mig: {profile: 3g.40gb}}}\n",
		       "resources.devices", "count");
	expect_refused("resources: {devices: {memory: 10Gi, mig: {profile: 3g.40gb}}}\n",
		       "resources.devices.mig", "memory");
	expect_refused("resources: {devices: {mig: {}}}\n", "resources.devices.mig",
		       "profile is required");
	expect_refused("resources: {devices: {mig: {profile: '3g 40gb'}}}\n",
		       "resources.devices.mig", "expected a MIG profile name");
	expect_refused("resources: {devices: {mig: {size: 3}}}\n", "resources.devices.mig",
		       "size");
}

/* a node with n GPUs of model in mode (NULL: the default), or with the
 * partitions of a discovered GPU (parts: a JSON list) */
static void add_node(struct world *w, const char *name, const char *model, const char *mode,
		     const char *parts)
{
	char buf[1024];
	snprintf(buf, sizeof(buf),
		 "{\"version\":1,\"nodes\":[{\"name\":\"%s\",\"cpu\":32,\"memory\":262144,"
		 "\"devices\":[{\"type\":\"gpu\",\"vendor\":\"NVIDIA\",\"model\":\"%s\","
		 "\"memory\":81920,\"count\":2%s%s%s%s}]}]}",
		 name, model, mode ? ",\"mode\":\"" : "", mode ? mode : "", mode ? "\"" : "",
		 parts ? parts : "");
	assert_int_equal(world_apply(w, "node.add", xp_rec_node_add(XP_SRC_EMULATED, buf)),
			 0);
}

static int possible(struct world *w, const char *yaml, char field[320], struct xp_err *err)
{
	struct xp_jobspec s;
	assert_int_equal(parse(yaml, &s, field, err), 0);
	int rc = xp_state_possible(w->st, &s, field, err);
	xp_jobspec_free(&s);
	return rc;
}

static void test_possible(void **state)
{
	(void)state;
	struct world w;
	struct xp_err err = { 0 };
	char field[320] = "";
	const char *mig3 = "resources: {devices: {mig: {profile: 3g.40gb}}}\n";
	world_init(&w);
	add_node(&w, "plain", "A100-SXM4-80GB", NULL, NULL);
	assert_int_equal(possible(&w, mig3, field, &err), XP_ENOCONFIG);
	assert_string_equal(field, "resources.devices.mig");
	assert_non_null(strstr(err.text, "MIG partitions"));
	/* an emulated A100-80GB in mode mig offers its built-in table */
	add_node(&w, "mig", "A100-SXM4-80GB", "mig", NULL);
	assert_int_equal(possible(&w, mig3, field, &err), 0);
	assert_int_equal(possible(&w, "resources: {devices: {mig: {profile: 3g.20gb}}}\n", field,
				  &err),
			 XP_ENOCONFIG);
	assert_string_equal(field, "resources.devices.mig.profile");
	assert_non_null(strstr(err.text, "offered: 1g.10gb, 1g.10gb+me"));
	/* partitions reported by a node win over the table */
	add_node(&w, "parts", "H100", "mig",
		 ",\"partitions\":[{\"name\":\"1g.12gb\",\"compute_milli\":142,"
		 "\"memory\":12288,\"max\":7}]");
	assert_int_equal(possible(&w, "resources: {devices: {mig: {profile: 1g.12gb}}}\n", field,
				  &err),
			 0);
	world_free(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_round_trip),
		cmocka_unit_test(test_spec_refusals),
		cmocka_unit_test(test_possible),
	};
	return xp_run_tests(tests, NULL, NULL);
}
