/* edge_int: what the parsers of this folder share (edge.h is the map). */
#ifndef XP_EDGE_INT_H
#define XP_EDGE_INT_H

#include <stdint.h>

#include "edge.h"

struct xp_walk;
struct xp_tree;

/* jobspec.c: a spec from a tree; name labels errors ("request:12:
 * resources.cpu: ..."). On error *field (if not NULL) gets the path of the
 * faulty field. */
int xp_jobspec_parse(const struct xp_tree *t, const char *name, struct xp_jobspec *out,
		     char field[320], struct xp_err *err);
/* A name-like string field (xp_name_ok): 0 absent, 1 with *v (borrowed
 * from t), or a negative code naming the field and what a name may hold. */
int xp_walk_get_name(struct xp_walk *w, const struct xp_tree *t, const char *key, const char **v);
/* records.c: allocations as job.start and job.resize carry them (snapshots
 * too), a MIG slice's kind by its NVML profile id */
struct xp_rec_alloc;
struct json_t;
struct json_t *xp_rec_allocs_json(const struct xp_rec_alloc *a, uint32_t n);
/* A duration field (30s, 5m, 1h30m) of at most max_ms: 0 absent, 1 set,
 * or a negative code naming the field. */
int xp_walk_get_duration(struct xp_walk *w, const struct xp_tree *t, const char *key,
			 int64_t max_ms, int64_t *out);
/* A job's size range and checkpoint. replicas: N | {min: A, max: B}:
 * 1 <= A <= B <= XP_JOB_MAX_REPLICAS; a number is a fixed gang (rmax 0).
 * checkpoint: {signal: SIGUSR1, grace: 30s}. Errors name the field
 * (replicas.min, checkpoint.signal). */
int xp_elastic_parse(struct xp_walk *w, const struct xp_tree *t, struct xp_jobspec *s);
/* svcspec.c: the spec's "service" key (set by the controller only) */
int xp_svcref_parse(struct xp_walk *w, const struct xp_tree *t, struct xp_svcref *out);

#endif
