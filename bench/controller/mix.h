/*
 * mix: the job mix of the Slurm peer (../shared/bench/slurm/README.md):
 * job i asks for row i mod 8, one node (one replica), memory = cpus x 1 GiB.
 * The benchmark tools write these rows as job specs of docs/api.md and
 * hand them to the project's own spec parser (or to the controller).
 */
#ifndef XP_BENCH_MIX_H
#define XP_BENCH_MIX_H

#include <stddef.h>

#define XP_MIX_ROWS 8

struct xp_mix_row {
	int cpus;
	int gpus;	   /* 0: none */
	const char *model; /* "A100", "V100", or NULL: any GPU */
};

extern const struct xp_mix_row xp_mix[XP_MIX_ROWS];

/* The JSON job spec of job i (row i mod 8) into buf; duration is the
 * "duration" field ("0s": emulated nodes finish it at once), NULL for
 * none. Returns the length, or 0 if it did not fit. */
size_t xp_mix_spec(size_t i, const char *duration, char *buf, size_t len);

/* The token in file path (its first line), malloc'd; NULL after printing
 * "prog: why" on stderr. Shared by the benchmark clients' --token-file. */
char *xp_bench_token_file(const char *prog, const char *path);

#endif
