/*
 * compare: our OpenB results side by side with the published ones.
 * Reads two result files of one series (analysis_allo_discrete.csv by
 * default), groups rows by (workload, sc_policy), and reports the value at
 * chosen arrival points (for allocation: unallocated GPU % = 100 - value)
 * as mean +- sample sd over seeds, with the validation gate of PROTOCOL.md
 * 6.8: |ours - published| <= max(2 published sd, 0.5).
 */
#ifndef XP_COMPARE_H
#define XP_COMPARE_H

#include <stdio.h>

#include "../lib/err.h"

enum xp_cmp_format { XP_CMP_TEXT, XP_CMP_MARKDOWN, XP_CMP_CSV };

/* What is compared: unallocated GPU % (100 - allocation), or the
 * fragmentation amount (% of GPU capacity) or ratio (% of idle GPU). */
enum xp_cmp_series { XP_CMP_UNALLOC, XP_CMP_FRAG, XP_CMP_RATIO };

struct xp_cmp_opts {
	const char *ours;      /* a directory or an analysis_allo_discrete.csv */
	const char *published; /* the same; NULL: ours alone, no published column */
	int format;	       /* enum xp_cmp_format */
	int series;	       /* enum xp_cmp_series */
	int points[4];	       /* arrival points, e.g. 100, 130 */
	int npoints;
	const char *against;   /* xp_compare_against: the baseline policy's label */
};

struct xp_cmp_summary {
	int cells;   /* (workload, policy, point) with both sides present */
	int outside; /* of those, outside the gate */
	int ours_only;
};

int xp_compare(const struct xp_cmp_opts *o, FILE *out, struct xp_cmp_summary *sum,
	       struct xp_err *err);

/* Every other policy of o->ours against the policy o->against of the same
 * results (same seeds): per workload the mean at o->points[0], the change
 * against the baseline, and a line with the mean over the workloads that
 * have both and the number where the policy is not lower. Text or markdown.
 * *not_better gets the largest such number over the policies. */
int xp_compare_against(const struct xp_cmp_opts *o, FILE *out, int *not_better,
		       struct xp_err *err);

/* The paper's Fig. 9a for one workload: unallocated GPU % (100 - allocated)
 * against arrived % from 60 to 130, one line per policy (mean over seeds)
 * of ours, and of published (may be NULL) as "(published)" lines; an SVG. */
int xp_compare_plot(const char *ours, const char *published, const char *workload,
		    const char *svg, struct xp_err *err);

#endif
