/*
 * migmode: MIG mode changes with the admin's leave (issue 21,
 * docs/design/mig.md "MIG mode changes").
 *
 * An admin lets xpool change MIG modes on a node (record
 * node.mig_mode_change {name, allow}; default deny). When a pending job
 * asks for MIG slices that no GPU in MIG mode can give, the planner
 * (xp_migmode_plan, called by the owner after each cycle) picks a wholly
 * idle, MIG-capable GPU with MIG mode off on an allowed, ready agent node
 * and journals a reservation (node.mig_mode {name, device, mode, job}):
 * nothing is placed on that GPU meanwhile. The node's agent is told in its
 * assignments, asks NVML (nvmlDeviceSetMigMode) and reports; the owner
 * journals node.mig_mode_done {name, device, mode, ok, why}. ok: the
 * device is in mode mig from then on and the pending job is placed on it
 * as any MIG slice. Refused (NVML's IN_USE while processes run, a reset
 * required, an agent that does not allow it): the reservation is released,
 * the job stays pending, the refusal is kept (its GPU is not asked again
 * for XP_MIGMODE_RETRY_MS) and explain names it. A reservation the agent
 * does not answer in XP_MIGMODE_TIMEOUT_MS, or on a node that is no longer
 * ready, is released the same way.
 *
 *   (none) --plan: node.mig_mode--> reserved --done ok--> (mode mig | mode shared)
 *                                     |--done refused / timeout / node lost--> refused
 *   refused --XP_MIGMODE_RETRY_MS--> (none)
 *
 * Both directions. MIG on ("mode": "mig") for a pending MIG job, on a GPU
 * with MIG off; MIG off ("mode": "off") for a pending whole-GPU or
 * fractional job that nothing places, on a GPU in MIG mode that holds no
 * slice of a running job, no warm instance and no instance xpool did not
 * create (an administrator's: never destroyed), while no pending MIG job
 * could use it. The agent destroys xpool's idle instances on it first; on
 * success it is a shared GPU again. Against flapping, a GPU switched either
 * way is not switched again for XP_MIGMODE_HOLD_MS.
 *
 * Pure (contract 1): now comes in; records go out through emit.
 * Ownership: a node's struct xp_migmode belongs to its xp_nodeinfo.
 */
#ifndef XP_MIGMODE_H
#define XP_MIGMODE_H

#include <stdint.h>

#include "../../lib/strbuf.h"
#include "../model/model.h"

struct xp_state;
struct xp_job;
struct xp_sched;
struct xp_event_info;
struct xp_err;

#define XP_MIGMODE_TIMEOUT_MS 120000 /* a reservation the agent never answers */
#define XP_MIGMODE_RETRY_MS   60000  /* a refused GPU is not asked again before */
#define XP_MIGMODE_JOBS	      64     /* pending jobs looked at per plan, per direction */
#define XP_MIGMODE_HOLD_MS    600000 /* a GPU switched either way stays so at least */

struct xp_migmode {
	int16_t dev;	 /* the GPU reserved for a mode change, -1: none */
	uint8_t on;	 /* the change asked: 1 MIG on, 0 MIG off */
	uint8_t room;	 /* slices of the job's profile it gives in MIG mode (estimate) */
	uint64_t job;	 /* the job it was reserved for */
	int64_t at;	 /* reserved at */
	int16_t refused; /* the GPU of the last refusal, -1: none */
	int64_t refused_at;
	char why[240];				 /* NVML's or the agent's reason */
	int64_t refused_until[XP_MAX_NODE_DEVS]; /* per GPU: not asked again before */
	int64_t switched_at[XP_MAX_NODE_DEVS];	 /* per GPU: its last change, 0: none */
};

struct xp_rec;
/* node.mig_mode_change, node.mig_mode, node.mig_mode_done (decoded by the codec) */
int xp_migmode_apply(struct xp_state *st, const struct xp_rec *r, int64_t at,
		     struct xp_event_info *ev, struct xp_err *err);
/* (their writers: src/edge/records.c, xp_rec_node_mig_*) */

/* After a cycle: release reservations past their time or on lost nodes,
 * then reserve GPUs for pending MIG jobs that nothing in MIG mode can
 * take (MIG on), then for pending whole-GPU or fractional jobs (MIG off).
 * The records are typed (node.mig_mode, node.mig_mode_done), as
 * the cycle's are (state.h's xp_emit_fn): the emitter encodes them
 * (xp_rec_encode) and journals them. Returns the records emitted, or a
 * negative code from emit. */
long xp_migmode_plan(struct xp_state *st, int64_t now,
		     int (*emit)(void *ctx, const struct xp_rec *r), void *ctx);

/* The reserved GPUs take nothing in s (after a rebuild of the scheduler). */
void xp_migmode_sched(const struct xp_state *st, struct xp_sched *s);
/* Why pending job j (MIG or not) waits for a MIG mode change or why none is made, in
 * a sentence appended to sb ("" when it is not about MIG modes). */
void xp_migmode_explain(struct xp_state *st, const struct xp_job *j, int64_t now, struct xp_sb *sb);
/* The reservation and last refusal on node n (NULL: never any). */
const struct xp_migmode *xp_migmode_of(const struct xp_state *st, size_t n);
/* The reservation and refusal record of node n, made on first use: a
 * snapshot's come back through it (src/edge/snapshot_parts.c). */
struct xp_migmode *xp_migmode_get(struct xp_state *st, size_t n);
/* Node n removed (record node.remove): its leave and reservation go. */
void xp_migmode_node_gone(struct xp_state *st, size_t n);

#endif
