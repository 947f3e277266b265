/*
 * compare: our OpenB results side by side with the published ones.
 * Reads two analysis_allo_discrete.csv files, groups rows by (workload,
 * sc_policy), and reports unallocated GPU % = 100 - allocation at chosen
 * arrival points as mean +- sample sd over seeds, with the validation gate
 * of PROTOCOL.md 6.8: |ours - published| <= max(2 published sd, 0.5).
 */
#ifndef XP_COMPARE_H
#define XP_COMPARE_H

#include <stdio.h>

#include "../lib/err.h"

enum xp_cmp_format { XP_CMP_TEXT, XP_CMP_MARKDOWN, XP_CMP_CSV };

struct xp_cmp_opts {
	const char *ours;      /* a directory or an analysis_allo_discrete.csv */
	const char *published; /* the same */
	int format;            /* enum xp_cmp_format */
	int points[4];         /* arrival points, e.g. 100, 130 */
	int npoints;
};

struct xp_cmp_summary {
	int cells;   /* (workload, policy, point) with both sides present */
	int outside; /* of those, outside the gate */
	int ours_only;
};

int xp_compare(const struct xp_cmp_opts *o, FILE *out, struct xp_cmp_summary *sum,
	       struct xp_err *err);

#endif
