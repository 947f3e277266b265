/* state_int: internals shared by the files of the state layer. */
#ifndef XP_STATE_INT_H
#define XP_STATE_INT_H


#include "migmode.h"
#include "state.h"

void xp_state_job_free(struct xp_job *j);
void xp_state_key(const struct xp_state *st, uint32_t tenant, const char *key, char *buf,
		  size_t len);
/* Insert a decoded job (submit or snapshot). */
void xp_state_add_job(struct xp_state *st, struct xp_job *j);
/* Node added from a one-node descriptor (JSON: a snapshot's; or as read,
 * one: node.add's); returns its index or < 0. */
long xp_state_add_node_one(struct xp_state *st, const struct xp_cluster *one, int source,
			   int state, struct xp_err *err);
/* Allocations as decoded (rec.h) into a[n]: their nodes found. */
int xp_allocs_resolve(const struct xp_state *st, const struct xp_rec_alloc *in, uint32_t n,
		      struct xp_alloc *a, struct xp_err *err);

void xp_state_finish(struct xp_state *st, struct xp_job *j, int to, int64_t at);

/* The state machines asserted at each transition (an assert: a failed
 * check is a bug of this layer; assert's failure path prints the reason
 * and aborts); off with NDEBUG. */
__attribute__((noreturn)) void xp_state_assert_fail(const char *file, int line,
						    const struct xp_err *err);
#ifdef NDEBUG
#define XP_JOB_CHECK(st, j, from)  ((void)0)
#define XP_NODE_CHECK(st, n, from) ((void)0)
#else
#define XP_JOB_CHECK(st, j, from)                                                                  \
	do {                                                                                       \
		struct xp_err xp_check_err_ = { 0 };                                               \
		if (xp_job_check((st), (j), (from), &xp_check_err_) < 0)                           \
			xp_state_assert_fail(__FILE__, __LINE__, &xp_check_err_);                  \
	} while (0)
#define XP_NODE_CHECK(st, n, from)                                                                 \
	do {                                                                                       \
		struct xp_err xp_check_err_ = { 0 };                                               \
		if (xp_node_check((st), (uint32_t)(n), (from), &xp_check_err_) < 0)                \
			xp_state_assert_fail(__FILE__, __LINE__, &xp_check_err_);                  \
	} while (0)
#endif
/* service.c: the records service.create / .scale / .delete; a replica job
 * joins its service's list when it enters the state and leaves it when it
 * ends; snapshots */
int xp_service_apply(struct xp_state *st, const struct xp_rec *r, int64_t at,
		     struct xp_event_info *ev, struct xp_err *err);
int xp_service_admits(const struct xp_state *st, const struct xp_job *j, struct xp_err *err);
void xp_service_job_added(struct xp_state *st, const struct xp_job *j);
void xp_service_job_ended(struct xp_state *st, const struct xp_job *j, int to, int64_t at);
/* A service as a snapshot restores it: checked against the state; on
 * success it is the state's, on failure freed (src/edge/snapshot_parts.c) */
int xp_service_add(struct xp_state *st, struct xp_service *s, struct xp_err *err);
void xp_service_free(struct xp_service *s);
void xp_services_free(struct xp_state *st);
/* elastic.c: the record job.resize; a job's start and requeue; its size,
 * epoch and resize history in snapshots */
int xp_elastic_resize_apply(struct xp_state *st, const struct xp_rec *r, int64_t at,
			    struct xp_event_info *ev, struct xp_err *err);
void xp_elastic_started(struct xp_state *st, struct xp_job *j);
void xp_elastic_requeued(struct xp_job *j);
/* elastic_cycle.c: a pending job that does not fit takes elastic jobs'
 * replicas above their min (1: it fits now, the resizes emitted; 0: not
 * enough; < 0 emit()'s error; *tried 0: no elastic job had any to give);
 * growth after a full pass, bf's reserved nodes left alone (the number of
 * resizes or < 0) */
int xp_elastic_shrink_for(struct xp_state *st, const struct xp_job *j, const struct xp_rng *rng,
			  xp_emit_fn emit, void *ctx, int *tried);
/* explain: the elastic jobs a shrink for j would take from (*ids malloc'd;
 * 0: shrinking is not enough); the scheduler is left as it was */
size_t xp_elastic_would_shrink(struct xp_state *st, const struct xp_job *j,
			       const struct xp_rng *rng, uint64_t **ids);
long xp_elastic_grow(struct xp_state *st, const struct xp_backfill *bf, struct xp_rng *rng,
		     xp_emit_fn emit, void *ctx);
/* state.c: does allocation x match j's request; apply.c: node n to state (its
 * capacity, the drained rule, the check) */
int xp_alloc_matches(const struct xp_state *st, const struct xp_job *j, const struct xp_alloc *x);
void xp_state_node_set(struct xp_state *st, long n, int state);
/* retention.c: the finish-order FIFO, and the job.forget record */
void xp_state_note_done(struct xp_state *st, const struct xp_job *j);
void xp_state_done_rebuild(struct xp_state *st);
int xp_state_job_forget(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
			struct xp_err *err);
/* jobedit.c: the records job.hold and job.update of a pending job */
int xp_job_hold_apply(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
		      struct xp_err *err);
int xp_job_update_apply(struct xp_state *st, const struct xp_rec *r, struct xp_event_info *ev,
			struct xp_err *err);
/* queue.c: records queue.create / queue.update / queue.delete; usage
 * charged (sign 1) when a job starts and discharged (-1) when it stops;
 * capacity added (1) or taken (-1) with a node */
int xp_queue_define(struct xp_state *st, const struct xp_queuespec *s, int update,
		    struct xp_event_info *ev, struct xp_err *err);
int xp_queue_delete(struct xp_state *st, const char *name, struct xp_event_info *ev,
		    struct xp_err *err);
void xp_usage_charge(struct xp_state *st, const struct xp_job *j, int sign);
int xp_usage_check(const struct xp_state *st, struct xp_err *err);
void xp_capacity_node(struct xp_state *st, uint32_t n, int sign);
/* What j asks for before placement: CPU, memory and devices of its class
 * (a request for any accelerator leaves devices out). */
void xp_request_demand(const struct xp_state *st, const struct xp_job *j, uint64_t d[XP_RES_N]);

/* cycle.c: tentative placement of a whole gang (a[] committed on success;
 * on failure *placed of them are, for xp_unplace), and a pass given up */
int xp_place_gang(struct xp_state *st, const struct xp_job *j, struct xp_rng *rng,
		  struct xp_alloc *a, uint32_t *placed);
void xp_unplace(struct xp_state *st, struct xp_alloc *a, uint32_t n);
void xp_cycle_abort(struct xp_state *st);
/* gang.c: a gang that is one request (colocate node / island / numa,
 * whole devices, no MIG): its sum, and the sum's allocation split back */
int xp_gang_summable(const struct xp_job *j);
void xp_gang_sum(const struct xp_job *j, struct xp_request *r);
void xp_gang_split(const struct xp_job *j, const struct xp_alloc *m, struct xp_alloc *a);

/* deps.c: dependencies checked at submit (they exist, are the tenant's,
 * and can still be met), registered with the job, resolved when a job
 * ends; doomed jobs cancelled by the cycle; the ids a job still waits for. */
int xp_deps_check(const struct xp_state *st, const struct xp_jobspec *s, uint32_t tenant,
		  struct xp_err *err);
void xp_deps_add(struct xp_state *st, struct xp_job *j);
void xp_deps_ended(struct xp_state *st, const struct xp_job *x);
void xp_deps_free(struct xp_state *st);
long xp_deps_cancel_doomed(struct xp_state *st, xp_emit_fn emit, void *ctx);
int xp_deps_check_state(const struct xp_state *st, struct xp_err *err);

/* backfill.c: the reservations of a pass. reserve: j (blocked) gets one
 * if it can (1); allows: may job k start now at a[] without delaying a
 * reservation (1; else 0 and *blocks the job it would delay) - allowed,
 * its use of the reservations' slack is kept. */
#define XP_RESV_MAX 8
struct xp_backfill;
struct xp_backfill *xp_backfill_new(const struct xp_state *st);
/* A pass over new jobs only keeps the last pass's reservations (capacity
 * only shrank since, so their slack still holds): a copy. */
struct xp_backfill *xp_backfill_clone(const struct xp_backfill *src, const struct xp_state *st);
void xp_backfill_free(struct xp_backfill *b);
int xp_backfill_reserve(struct xp_state *st, struct xp_backfill *b, const struct xp_job *j,
			const struct xp_rng *rng);
int xp_backfill_allows(const struct xp_state *st, struct xp_backfill *b, const struct xp_job *k,
		       const struct xp_alloc *a, int64_t now, uint64_t *blocks);
/* Take the reserved nodes out of the scheduler (out 1) or back (0): a job
 * refused where the policy put it may fit elsewhere. */
void xp_backfill_exclude(struct xp_state *st, const struct xp_backfill *b, int out);
/* Does the pass hold a reservation (starts now are backfill)? */
int xp_backfill_active(const struct xp_backfill *b);

/* preempt.c: the victims that let j start (0), or why there are none
 * (XP_ENOSPC and out->why). The scheduler is left as it was. */
struct xp_plan {
	uint64_t *victims;
	uint8_t *kinds; /* per victim: XP_PREEMPT_RECLAIM, _PRIORITY or _BEST_EFFORT */
	size_t n;
	char why[300];
	int considered; /* 0: the policy gives it no claim at all (never, or no
			 * guarantee of what it needs): explain stays quiet */
};
int xp_preempt_plan(struct xp_state *st, const struct xp_job *j, const struct xp_rng *rng,
		    struct xp_plan *out);
void xp_plan_free(struct xp_plan *p);
/* the reason journaled with victim k */
void xp_plan_reason(const struct xp_state *st, const struct xp_job *j, const struct xp_plan *p,
		    size_t k, char *buf, size_t len);
/* Replica r of j starts / stops running on node n (count and list). */
void xp_node_run_add(struct xp_state *st, uint32_t n, struct xp_job *j, uint32_t r);
void xp_node_run_del(struct xp_state *st, uint32_t n, const struct xp_job *j, uint32_t r);
/* Device health of node n; count_faults: a device turning unhealthy counts
 * as a failure (not when a snapshot is loaded). */
void xp_state_set_health(struct xp_state *st, long n, const uint8_t *ok, char *const *why,
			 int count_faults);

#endif
