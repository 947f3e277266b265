/*
 * mig: MIG slices on a cluster of A100-80GB and H100-80GB GPUs under a
 * request stream from a real trace (issue 21 part 6, `xpool sim mig`,
 * docs/results/mig.md, docs/design/mig.md).
 *
 * Streams (mig_trace.c):
 *   openb  the OpenB trace's single-GPU pods: a pod asking a fraction f of
 *          a GPU asks the smallest profile with compute slices >= f x 7
 *          (the trace has no GPU memory per pod); arrival = creation_time,
 *          duration = deletion_time - creation_time;
 *   genai  the GenAI serving trace's pods: the smallest profile whose
 *          memory covers the pod's peak GPU memory x headroom; arrival =
 *          its first memory sample, duration = last - first + 60 s.
 * Requests arriving in the same second are ordered by a seeded shuffle;
 * with poisson arrivals the stream keeps its durations and its mean rate
 * and takes seeded exponential gaps instead of the trace's times.
 *
 * Modes: three static layouts (instances fixed at start; a request takes a
 * free instance of the smallest profile that fits) and three dynamic
 * policies (core/sched/mig_place.h), which create an instance per request
 * and destroy it when the job ends, or keep it warm for warm_s seconds for
 * a request of the same profile (a warm idle instance is destroyed when it
 * expires or when its slices are needed). A request no GPU can take now
 * waits in a FIFO queue, scanned in order at every event (a later request
 * may start before an earlier one that does not fit), and is rejected once
 * it has waited timeout_s. A request no profile of any GPU model fits is
 * rejected at once (unfit). The run ends at the last arrival: what is
 * still queued then is "waiting", so admitted + waiting + rejected =
 * requests.
 *
 * Ownership: a stream owns its requests (xp_migsim_stream_free); a result
 * owns its series (xp_migsim_result_free).
 */
#ifndef XP_SIM_MIG_H
#define XP_SIM_MIG_H

#include <stddef.h>
#include <stdint.h>

#include "../core/model/mig.h"
#include "../lib/err.h"

#define XP_MIGSIM_MAX_MODELS 4

enum {
	XP_MIGSIM_STATIC_BALANCED,
	XP_MIGSIM_STATIC_1G,
	XP_MIGSIM_STATIC_7G,
	XP_MIGSIM_FIRST_FIT,
	XP_MIGSIM_BEST_FIT,
	XP_MIGSIM_XPOOL,
	XP_MIGSIM_NMODES
};

struct xp_migsim_req {
	int64_t t, dur;	  /* arrival and duration, seconds */
	uint32_t milli;	  /* compute, milli of a GPU (0: by memory alone) */
	uint64_t mem_mib; /* GPU memory, 0: any */
	uint64_t key;	  /* seeded order among equal arrivals */
};

struct xp_migsim_stream {
	char name[16];
	struct xp_migsim_req *r; /* by arrival */
	size_t n;
	size_t skipped; /* trace rows that are not one-GPU requests */
};

struct xp_migsim_opts {
	uint32_t nodes, gpus_per_node;
	const struct xp_mig_table *models[XP_MIGSIM_MAX_MODELS]; /* node i: models[i % n] */
	size_t nmodels;
	int64_t timeout_s; /* bounded wait in the queue */
	int64_t warm_s;	   /* 0: destroy an instance when its job ends */
	int64_t bucket_s;  /* the series' step */
};

struct xp_migsim_result {
	uint32_t requests, admitted, waiting, rejected, unfit;
	/* rejected after waiting, by the compute slices of the request's
	 * profile on models[0] (0: none there) */
	uint32_t rejected_by[XP_MIG_COMPUTE_SLICES + 1];
	uint64_t creations, destructions;     /* instances; a reconfiguration is either */
	double hours;			      /* first to last arrival */
	double slice_hours, idle_slice_hours; /* compute slices, idle = held by no job */
	double largest_mean; /* time mean over GPUs of the largest profile a request could get
				now (compute slices, 0..7) */
	double *largest;     /* the same per bucket of bucket_s */
	size_t nbuckets;
	double cpu_s; /* set by the caller */
};

void xp_migsim_defaults(struct xp_migsim_opts *o);
const char *xp_migsim_mode_name(int mode);
int xp_migsim_mode_parse(const char *s);

/* Streams (mig_trace.c). Errors name the file and line, or the path when
 * the trace is missing. */
int xp_migsim_load_openb(const char *path, struct xp_migsim_stream *s, struct xp_err *err);
int xp_migsim_load_genai(const char *dir, double headroom, struct xp_migsim_stream *s,
			 struct xp_err *err);
/* Order equal arrivals by a seeded shuffle; with poisson, re-time arrivals
 * as a seeded Poisson process of the stream's mean rate. */
void xp_migsim_arrange(struct xp_migsim_stream *s, uint64_t seed, int poisson);
void xp_migsim_stream_free(struct xp_migsim_stream *s);

/* One run of a mode over a stream (arranged); fills *r. */
int xp_migsim_run(const struct xp_migsim_stream *s, const struct xp_migsim_opts *o, int mode,
		  struct xp_migsim_result *r, struct xp_err *err);
void xp_migsim_result_free(struct xp_migsim_result *r);

#endif
