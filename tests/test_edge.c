/*
 * test_edge: the edge's parsers (src/edge). The workflow parser's order is
 * checked against a naive reference on random DAGs - the smallest
 * topological order by position, found by rescanning every job at each
 * step - and its refusals name the field. The large documents the issue
 * found stalling the owner (1,000 jobs of 64 dependencies each, 10,000
 * jobs) are parsed here, off any owner thread; their time is a bench
 * figure (bench/edge), not an assertion.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edge/edge.h"
#include "lib/rng.h"
#include "lib/strbuf.h"
#include "lib/xalloc.h"

/* the reference: at each step the first job (by position) whose
 * dependencies are all taken */
static void naive_order(size_t n, const uint8_t *adj, size_t *out)
{
	uint8_t *taken = xcalloc(n, 1);
	for (size_t step = 0; step < n; step++) {
		for (size_t i = 0; i < n; i++) {
			int ready = !taken[i];
			for (size_t d = 0; ready && d < n; d++)
				ready = !adj[i * n + d] || taken[d];
			if (ready) {
				taken[i] = 1;
				out[step] = i;
				break;
			}
		}
	}
	free(taken);
}

/* a random DAG over n jobs (edges only to lower-numbered jobs, then the
 * names shuffled so positions and order differ); adj[i * n + d]: i after d */
static char *random_workflow(struct xp_rng *rng, size_t n, uint8_t *adj, int cyclic)
{
	size_t *perm = xcalloc(n, sizeof(size_t));
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	for (size_t i = n; i > 1; i--) {
		size_t k = (size_t)xp_rng_below(rng, i), t = perm[i - 1];
		perm[i - 1] = perm[k];
		perm[k] = t;
	}
	memset(adj, 0, n * n);
	for (size_t a = 1; a < n; a++)
		for (size_t b = 0; b < a; b++)
			if (xp_rng_below(rng, 4) == 0)
				adj[perm[a] * n + perm[b]] = 1; /* rank a after rank b */
	if (cyclic && n > 1) { /* rank 0 and the last wait for each other */
		adj[perm[0] * n + perm[n - 1]] = 1;
		adj[perm[n - 1] * n + perm[0]] = 1;
	}
	struct xp_sb sb = { 0 };
	xp_sb_puts(&sb, "{\"name\": \"wf\", \"jobs\": [");
	for (size_t i = 0; i < n; i++) {
		xp_sb_printf(&sb, "%s{\"name\": \"j%zu\", \"resources\": {\"cpu\": 1}, \"depends_on\": [",
			     i ? ", " : "", i);
		int first = 1;
		for (size_t d = 0; d < n; d++)
			if (adj[i * n + d]) {
				xp_sb_printf(&sb, "%s{\"job\": \"j%zu\"}", first ? "" : ", ", d);
				first = 0;
			}
		xp_sb_puts(&sb, "]}");
	}
	xp_sb_puts(&sb, "]}");
	free(perm);
	return xp_sb_steal(&sb);
}

static void test_order_reference(void **state)
{
	(void)state;
	struct xp_rng rng;
	xp_rng_seed(&rng, 19);
	for (int round = 0; round < 300; round++) {
		size_t n = 1 + (size_t)xp_rng_below(&rng, 40);
		int cyclic = round % 10 == 9;
		uint8_t *adj = xcalloc(n * n, 1);
		size_t *want = xcalloc(n, sizeof(size_t));
		char *doc = random_workflow(&rng, n, adj, cyclic);
		struct xp_workflow wf;
		struct xp_err err = { 0 };
		char field[640];
		int rc = xp_workflow_parse("request", doc, strlen(doc), 1, &wf, field, &err);
		if (cyclic && n > 1) {
			if (rc >= 0)
				fail_msg("round %d: a cycle was accepted", round);
			assert_string_equal(field, "jobs");
			assert_non_null(strstr(err.text, "cycle"));
		} else {
			if (rc < 0)
				fail_msg("round %d: %s", round, err.text);
			naive_order(n, adj, want);
			assert_int_equal(wf.n, n);
			for (size_t p = 0; p < n; p++) {
				if (wf.index[p] != want[p])
					fail_msg("round %d position %zu: job %zu, the reference "
						 "says %zu",
						 round, p, wf.index[p], want[p]);
				assert_string_equal(wf.specs[p].workflow, "wf");
				/* each dependency points at an earlier position */
				for (uint16_t k = 0; k < wf.specs[p].ndeps; k++) {
					uint64_t d = wf.specs[p].deps[k].job;
					assert_true(d >= XP_WF_LOCAL && d - XP_WF_LOCAL < p);
					assert_true(adj[wf.index[p] * n + wf.index[d - XP_WF_LOCAL]]);
				}
			}
			xp_workflow_free(&wf);
		}
		free(doc);
		free(adj);
		free(want);
	}
}

static void test_refusals(void **state)
{
	(void)state;
	static const struct {
		const char *doc, *field, *text;
	} bad[] = {
		{ "", "", "empty document" },
		{ "[1]", "", "a map" },
		{ "{jobs: [{name: a}]}", "name", "name: missing" },
		{ "{name: 'a b', jobs: [{name: a}]}", "name", "expected 1..63" },
		{ "{name: w, jobs: []}", "jobs", "needs a job" },
		{ "{name: w, jobs: [{name: a}, {name: a}]}", "jobs[1].name", "used twice" },
		{ "{name: w, jobs: [{resources: {cpu: 1}}]}", "jobs[0]", "valid name" },
		{ "{name: w, jobs: [{name: a, depends_on: [{job: zz}]}]}", "jobs[0].depends_on[0]",
		  "neither a job of the workflow" },
		{ "{name: w, jobs: [{name: a, resources: {cpu: lots}}]}", "jobs[0].resources.cpu",
		  "" },
		{ "{name: w, jobs: [{name: a, resources: {cpu: 0}}]}", "jobs[0].resources.cpu", "" },
		{ "{name: w, jobs: [{name: a, workflow: other}]}", "jobs[0].workflow", "not the" },
		{ "{name: w, extra: 1, jobs: [{name: a}]}", "extra", "" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct xp_workflow wf;
		struct xp_err err = { 0 };
		char field[640];
		if (xp_workflow_parse("request", bad[i].doc, strlen(bad[i].doc), 0, &wf, field,
				      &err) >= 0)
			fail_msg("'%s' accepted", bad[i].doc);
		if (strcmp(field, bad[i].field) || !strstr(err.text, bad[i].text))
			fail_msg("'%s': field '%s' (%s), want '%s' with '%s'", bad[i].doc, field,
				 err.text, bad[i].field, bad[i].text);
	}
}

/* the documents that stalled the owner: a thousand jobs of 64 dependencies
 * each, and ten thousand jobs in a chain */
static void test_large(void **state)
{
	(void)state;
	struct xp_sb sb = { 0 };
	xp_sb_puts(&sb, "{\"name\": \"big\", \"jobs\": [");
	for (size_t i = 0; i < 1000; i++) {
		xp_sb_printf(&sb, "%s{\"name\": \"step-%zu\", \"depends_on\": [", i ? "," : "", i);
		for (size_t d = 0; d < 64 && d < i; d++)
			xp_sb_printf(&sb, "%s{\"job\": \"step-%zu\"}", d ? "," : "", i - 1 - d);
		xp_sb_puts(&sb, "]}");
	}
	xp_sb_puts(&sb, "]}");
	struct xp_workflow wf;
	struct xp_err err = { 0 };
	char field[640];
	assert_int_equal(xp_workflow_parse("request", sb.s, sb.len, 1, &wf, field, &err), 0);
	assert_int_equal(wf.n, 1000);
	for (size_t p = 0; p < 1000; p++)
		assert_int_equal(wf.index[p], p);
	xp_workflow_free(&wf);
	xp_sb_free(&sb);
	xp_sb_init(&sb);
	xp_sb_puts(&sb, "{\"name\": \"chain\", \"jobs\": [");
	for (size_t i = 0; i < XP_WORKFLOW_MAX_JOBS; i++) { /* listed last first */
		size_t me = XP_WORKFLOW_MAX_JOBS - 1 - i;
		xp_sb_printf(&sb, "%s{\"name\": \"c%zu\"", i ? "," : "", me);
		if (me)
			xp_sb_printf(&sb, ", \"depends_on\": [{\"job\": \"c%zu\"}]", me - 1);
		xp_sb_puts(&sb, "}");
	}
	xp_sb_puts(&sb, "]}");
	int rc = xp_workflow_parse("request", sb.s, sb.len, 1, &wf, field, &err);
	if (rc < 0)
		fail_msg("chain: %s (%s)", err.text, field);
	assert_int_equal(wf.n, XP_WORKFLOW_MAX_JOBS);
	assert_int_equal(wf.index[0], XP_WORKFLOW_MAX_JOBS - 1); /* c0 first */
	xp_workflow_free(&wf);
	xp_sb_free(&sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_reference),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_large),
	};
	return xp_run_tests(tests, NULL, NULL);
}
