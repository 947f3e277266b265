/*
 * share: what enforced GPU sharing buys on a real serving trace (issue 20
 * part 7, `xpool sim share`, docs/results/vgpu.md).
 *
 * The GenAI serving trace (../shared/traces/genai2026: per pod, a GPU duty
 * cycle and the GPU memory in use, one sample a minute, one whole GPU per
 * pod in production) is packed onto GPUs of a given memory three ways:
 *
 *   whole       one pod per GPU (what production did);
 *   fractions   a pod's memory cap is its measured peak x headroom (1.1) and
 *               its compute share its p99 duty cycle; a GPU takes pods while
 *               the caps fit its memory and the shares sum to at most 100 %;
 *   overcommit  the same, with memory admitted up to factor (1.5) x the
 *               GPU's, never one pod above the GPU's memory.
 *
 * Packing is first-fit decreasing by memory cap. For each packing, the
 * honest cost: the minutes in which some GPU's summed duty cycle passes
 * 100 % (its pods would have slowed each other), and, with overcommit, the
 * minutes in which some GPU's summed memory in use passes its memory (an
 * allocation there would have failed with OOM).
 *
 * Reads files, prints nothing: the CLI prints (src/cli/cmd_simshare.c).
 * Ownership: xp_share_run fills a caller's result; nothing to free.
 */
#ifndef XP_SIM_SHARE_H
#define XP_SIM_SHARE_H

#include <stdint.h>

#include "../lib/err.h"

enum { XP_SHARE_WHOLE, XP_SHARE_FRACTIONS, XP_SHARE_OVERCOMMIT, XP_SHARE_NMODES };

struct xp_share_opts {
	const char *trace;  /* folder with the two CSV files */
	double gpu_mem_gib; /* 80 */
	double headroom;    /* 1.1: memory cap = peak x this */
	double overcommit;  /* 1.5 */
	double quantile;    /* 0.99: the duty-cycle quantile taken as the share */
};

struct xp_share_mode {
	uint32_t gpus;
	uint32_t hot_minutes;	  /* minutes in which some GPU's duty cycle sum > 100 % */
	uint64_t hot_gpu_minutes; /* (GPU, minute) pairs above 100 % */
	uint32_t oom_minutes;	  /* minutes in which some GPU's memory in use > its memory */
	uint64_t oom_gpu_minutes;
};

struct xp_share_result {
	uint32_t pods;	     /* pods with both series */
	uint32_t minutes;    /* span of the trace */
	uint32_t too_big;    /* pods whose cap exceeds a GPU's memory: a GPU of their own */
	double duty_p50_mean; /* median over pods of the mean duty cycle, % */
	double peak_p50_gib;  /* median over pods of the peak memory */
	struct xp_share_mode m[XP_SHARE_NMODES];
};

void xp_share_defaults(struct xp_share_opts *o);
const char *xp_share_mode_name(int mode);
int xp_share_run(const struct xp_share_opts *o, struct xp_share_result *r, struct xp_err *err);

#endif
