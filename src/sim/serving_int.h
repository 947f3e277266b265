/*
 * serving_int: what serving.c (the run, the service) and serving_train.c
 * (the training backlog) share. Every GPU of the pool is in exactly one of
 * free, a ready replica, a starting replica, a running job, or draining
 * (leaving training, held grace_s, promised to the service).
 */
#ifndef XP_SIM_SERVING_INT_H
#define XP_SIM_SERVING_INT_H

#include "../lib/rng.h"
#include "../lib/vec.h"
#include "serving.h"

enum { SV_FUTURE, SV_QUEUED, SV_RUN, SV_DONE };

struct sv_job {
	double arrive, work, done, saved; /* s; GPU-s */
	double since_ckpt, pause_until, last_resize, started;
	uint32_t n, min, max, size;
	int state;
};

struct sv_drain {
	double at; /* released to free */
	uint32_t n;
};

struct sv {
	const struct xp_load *l;
	const struct xp_serve_opts *o;
	int policy, elastic;
	double t, dt;
	uint32_t free, ready, waiting, draining;
	XP_VEC(double) starting; /* ready times */
	XP_VEC(struct sv_drain) drain;
	struct sv_job *jobs;
	size_t njobs, arrived;
	XP_VEC(uint32_t) queue; /* job indices, head first */
	struct xp_serve_result *r;
};

/* serving_train.c */
void sv_jobs_make(struct sv *s, double horizon);
void sv_train_arrivals(struct sv *s);
void sv_train_place(struct sv *s);
/* Take up to need GPUs from training into draining; returns how many. */
uint32_t sv_train_reclaim(struct sv *s, uint32_t need);
void sv_train_progress(struct sv *s);
uint32_t sv_train_held(const struct sv *s);

#endif
