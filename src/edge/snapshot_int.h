/* snapshot_int: the parts of a snapshot shared by snapshot.c and
 * snapshot_parts.c (the edge's snapshot encoding; see snapshot.c). */
#ifndef XP_EDGE_SNAPSHOT_INT_H
#define XP_EDGE_SNAPSHOT_INT_H

#include <jansson.h>

#include "../core/state/meter.h"
#include "edge.h"
#include "../core/state/state_int.h"

/* the services, before the jobs: these join their services as they load */
json_t *xp_services_snapshot(const struct xp_state *st);
int xp_services_restore(struct xp_state *st, json_t *arr, struct xp_err *err);
/* the meter's ledger as compact arrays; o NULL: a snapshot from before metering */
json_t *xp_meter_snapshot(const struct xp_state *st);
int xp_meter_restore(struct xp_state *st, json_t *o, struct xp_err *err);
/* an elastic job's size, epoch and resize history, into / from its object */
void xp_elastic_snapshot(const struct xp_job *j, json_t *jo);
int xp_elastic_restore(struct xp_job *j, json_t *jo, struct xp_err *err);
/* node n's MIG mode leave, reservation and last refusal, into / from its object */
void xp_migmode_snap(const struct xp_state *st, size_t n, json_t *node);
int xp_migmode_restore(struct xp_state *st, size_t n, json_t *node, struct xp_err *err);

#endif
