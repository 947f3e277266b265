/*
 * gavel: Gavel's workload (OSDI'20; traces/gavel/PROTOCOL.md §2.3) - the
 * throughput matrix, and its synthetic continuous traces generated with
 * CPython's random draw for draw (lib/pyrand.h), so a seed gives the job
 * sequence Gavel's own generator gives. The round-based mechanism and the
 * policies are not built yet (issue 6 §2).
 */
#ifndef XP_SIM_GAVEL_H
#define XP_SIM_GAVEL_H

#include <stddef.h>
#include <stdio.h>

#include "../lib/err.h"

#define XP_GAVEL_TYPES	   3 /* v100, p100, k80 */
#define XP_GAVEL_TEMPLATES 26

/* Isolated throughputs, iterations/s: tput[template][sf index 0..3][type];
 * 0 = infeasible. Templates in Gavel's JobTable order. */
struct xp_gavel_matrix {
	double tput[XP_GAVEL_TEMPLATES][4][XP_GAVEL_TYPES];
};

struct xp_gavel_job {
	int template, sf;
	double duration_s;  /* on a V100 */
	double total_steps; /* duration x the V100 throughput */
	double arrival_s;
};

const char *xp_gavel_template_name(int t);
/* the template by Gavel's name, -1 if unknown */
int xp_gavel_template_index(const char *name);
/* 1, 2, 4, 8 -> 0..3; -1 otherwise */
int xp_gavel_sf_index(long sf);
/* the template may run on more than one GPU (ResNet-18/50, Transformer, LM) */
int xp_gavel_distributed(int t);
/* gavel_isolated_throughputs.csv into m */
int xp_gavel_load(const char *csv, struct xp_gavel_matrix *m, struct xp_err *err);
/* The same from a buffer (copied; name labels errors): one reader serves both. */
int xp_gavel_parse(const char *name, const char *buf, size_t len, struct xp_gavel_matrix *m,
		   struct xp_err *err);
/* n jobs of Gavel's continuous trace: rate jobs/h, multi-GPU or not, seed */
void xp_gavel_trace(const struct xp_gavel_matrix *m, size_t n, double rate, int multi_gpu,
		    unsigned seed, struct xp_gavel_job *out);
/* Gavel's 10-field TSV (job_type, command, working_directory, num_steps_arg,
 * needs_data_dir, total_steps, scale_factor, priority_weight, SLO, arrival_time) */
void xp_gavel_write_tsv(FILE *f, const struct xp_gavel_job *j, size_t n);

#endif
