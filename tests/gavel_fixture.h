/*
 * gavel_fixture: Gavel's throughput tables from ../shared (M: isolated, C:
 * co-located), loaded once by the cmocka group setup of the Gavel tests;
 * absent shared data leaves C NULL (the tests skip).
 */
#ifndef XP_TEST_GAVEL_FIXTURE_H
#define XP_TEST_GAVEL_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "sim/gavel_sim.h"
#include "testutil.h"

static struct xp_gavel_matrix M;
static struct xp_gavel_colo *C;

static int setup(void **state)
{
	(void)state;
	const char *iso = xp_test_shared("traces/gavel/gavel_isolated_throughputs.csv");
	const char *col = xp_test_shared("traces/gavel/gavel_colocated_throughputs.csv");
	if (!iso || !col)
		return 0;
	struct xp_err err = { 0 };
	C = malloc(sizeof(*C));
	if (xp_gavel_load(iso, &M, &err) < 0 || xp_gavel_colo_load(col, C, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	free(C);
	return 0;
}

#endif
