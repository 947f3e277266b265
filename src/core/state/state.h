/*
 * state: the controller's state as data - tenants, tokens, queues, nodes
 * and jobs over the resource model and the scheduling core - changed only
 * by applying journal records (docs/design/controller.md).
 *
 * xp_state_apply_rec() is the one way in, live and on replay alike: the
 * codec at the store boundary (src/edge/codec.c, xp_rec_apply) decodes a
 * record's JSON into a struct xp_rec (rec.h), checking every field; the
 * state checks it against itself (an illegal transition or a
 * reference to something absent is rejected and changes nothing), then
 * applies it. The owner thread of the server builds records with the
 * xp_rec_*() functions, applies them, and only then appends them to the
 * store. Pure: no I/O, no clock (times arrive as arguments), no threads.
 *
 * Ownership: the state owns its cluster, scheduler, jobs and strings.
 *
 * The files of this folder (state_int.h: what they share):
 *   state.c      creation, lookups, names, transitions, record builders and
 *                decoded allocations resolved and their match to a request,
 *                the invariant check and the state machines' checks
 *   rec.h        journal records as plain C (the codec's typed records)
 *   apply.c      records into the state (xp_state_apply_rec)
 *   jobedit.c    records that change a pending job: job.hold, job.update
 *   (snapshots, canonical JSON and the usage report are written and read
 *   at the edge: src/edge/snapshot.c, canon.c, meter_report.c)
 *   docs.h       the edge's document code, given at creation: the
 *                readers the edge's snapshot reader calls through
 *                st->docs, a spec's canonical hash, a service's
 *                new-version test (this folder includes no JSON,
 *                document tree, YAML or descriptor)
 *   spec.c/.h    job specs and job changes: types and names
 *                (the parser: src/edge/jobspec.c)
 *   svcspec.c/.h service definitions and a replica's service: types
 *                (parser: src/edge/svcspec.c); service.c services
 *                in the state (records, replica lists)
 *   queuespec.c/.h queue definitions: types and names (parser:
 *                src/edge/queuespec.c); queue.c the tree, quotas, usage
 *                and shares
 *   elastic.c    elastic jobs (replicas: {min, max}): the checkpoint's
 *                defaults, the job.resize record;
 *                elastic_cycle.c shrinks instead of preemption and growth
 *                after the pending jobs
 *   cycle.c      the scheduling cycle and its batch step (a batch optimiser
 *                plans K jobs together); gang.c gangs placed whole;
 *                backfill.c reservations; preempt.c victims; deps.c
 *                dependencies; limits.c time limits and gang timeouts
 *   explain.c    why a job is not placed (per filter) and its admission;
 *                pending.c the one-code reason (squeue's REASON);
 *                possible.c could any node ever run it
 *   retention.c  finished jobs forgotten; workload.c the target workload
 *   meter.c/.h, prices.c/.h  the usage ledger, the report's rows
 *                (xp_meter_rows) and the price table (read by
 *                src/edge/prices.c)
 *   migmode.c/.h MIG mode changes with the admin's leave: the records
 *                (decoded by the codec), the planner that reserves an idle
 *                GPU, explain
 *   hpa.c/.h     the Horizontal Pod Autoscaler's rule (tolerance,
 *                stabilisation windows, rate limits, an optional forecast),
 *                shared by the serving simulator and the service autoscaler
 */
#ifndef XP_STATE_H
#define XP_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/err.h"
#include "../../lib/intmap.h"
#include "../../lib/rng.h"
#include "../../lib/vec.h"
#include "../model/model.h"
#include "../sched/sched.h"
#include "docs.h"
#include "meter.h"
#include "queuespec.h"
#include "rec.h"
#include "spec.h"
#include "svcspec.h"

enum xp_job_state {
	XP_JOB_PENDING,
	XP_JOB_RUNNING,
	XP_JOB_SUCCEEDED,
	XP_JOB_FAILED,
	XP_JOB_CANCELLED,
	XP_JOB_STATE_N
};

enum xp_node_state {
	XP_NODE_READY,
	XP_NODE_CORDONED,
	XP_NODE_DRAINING,
	XP_NODE_DRAINED,
	XP_NODE_DOWN,
	XP_NODE_STATE_N
};

enum xp_node_source { XP_SRC_EMULATED, XP_SRC_AGENT, XP_SRC_N };

/* Why a job ended beyond its exit code (docs/api.md): the kernel's OOM
 * killer, limits that could not be set (not started), its time limit, a
 * command that could not be started. The job's reason text starts with
 * the name ("oom: replica 0 went over its memory limit of 64 MiB"). */
enum xp_end { XP_END_NONE, XP_END_OOM, XP_END_LIMITS, XP_END_TIME_LIMIT, XP_END_START, XP_END_N };

/* How a replica or a job ended, as records carry it: struct xp_exit (rec.h). */

struct xp_job {
	uint64_t id;
	uint32_t tenant, queue;
	uint8_t state;
	uint8_t has_exit;
	uint8_t end;	     /* enum xp_end, once finished */
	uint8_t exit_signal; /* the signal that ended the failing replica, 0 none */
	int32_t exit_code;
	char *key; /* idempotency key or NULL */
	uint64_t key_hash; /* with a key: FNV-1a of the spec as submitted (canonical JSON) */
	struct xp_jobspec spec;
	struct xp_request req; /* per replica, interned in the cluster */
	int64_t submitted_at, started_at, finished_at;
	char *reason;
	struct xp_alloc *allocs; /* spec.replicas of them once started (held while running) */
	uint32_t attempts;	 /* starts so far; a requeue makes the next start a new attempt */
	uint32_t requeues;
	uint32_t preemptions;
	uint8_t *exited;    /* per replica of the running attempt: reported exited */
	uint8_t forgetting; /* inside a job.forget record being applied */
	uint8_t doomed;	    /* a dependency can never be met: the cycle cancels it */
	uint16_t unmet;	    /* dependencies not ended yet: held while > 0 */
	uint8_t held;	    /* enum xp_hold: kept out of the cycle until released */
	uint8_t verdict;    /* the cycle's last word on it (enum xp_pend; derived) */
	/* elastic (spec.rmax > 0; elastic.c): spec.replicas is the size now */
	uint32_t epoch;	    /* resizes of the running attempt (XPOOL_RESTART_EPOCH) */
	uint32_t resizes;   /* job.resize records applied, every attempt */
	int64_t resized_at; /* the current size since (metering); 0: started_at */
	char *resize_why;   /* the last resize's reason, NULL: none */
	uint8_t shrunk;	    /* shrunk since the last growth (derived): not grown in that one */
	/* verdict XP_PEND_SEARCH (derived): the batch search placed this many
	 * jobs of its batch instead, search_first the first of them */
	uint32_t search_ahead;
	uint64_t search_first;
};

/* Who holds a pending job (xpool hold): a tenant releases its own hold,
 * only the admin an admin's (Slurm's user and admin holds). */
enum xp_hold { XP_HOLD_NONE, XP_HOLD_USER, XP_HOLD_ADMIN, XP_HOLD_N };
const char *xp_hold_name(int h);
int xp_hold_parse(const char *s);

struct xp_tenant {
	char *name;
	uint32_t live;		  /* pending + running jobs */
	uint64_t usage[XP_RES_N]; /* of its running jobs (derived) */
};

/* A token's scope: what it may call (docs/api.md, "Auth"). */
enum xp_scope {
	XP_SCOPE_TENANT,    /* its tenant's jobs, queues, usage */
	XP_SCOPE_ADMIN,	    /* everything */
	XP_SCOPE_NODE,	    /* one node's agent endpoints (node) */
	XP_SCOPE_BOOTSTRAP, /* POST /v1/agents/join only: trades for a node's */
};

struct xp_token {
	uint64_t id;
	uint32_t tenant;
	uint8_t admin, revoked;
	uint8_t scope; /* enum xp_scope; admin == (scope == XP_SCOPE_ADMIN) */
	char *name;
	char *node; /* XP_SCOPE_NODE: the node's name; else NULL */
	char sha256[65];
};

struct xp_queue {
	char *name;
	int32_t priority;
	uint32_t weight;
	uint8_t deleted;
	uint8_t preempt;	      /* enum xp_preempt */
	int64_t aging_ms;	      /* xp_queuespec.aging_ms */
	int32_t parent;		      /* index; -1: a top-level queue (under the root) */
	uint32_t children;	      /* live child queues: a queue with children takes no jobs */
	uint32_t pending, running;    /* its own jobs */
	uint64_t guarantee[XP_RES_N]; /* 0: none */
	uint64_t max[XP_RES_N];	      /* XP_QUOTA_NONE: unlimited */
	uint64_t usage[XP_RES_N];     /* running demand, its subtree's included (derived) */
	char (*allow)[XP_NAME_MAX + 1]; /* tenants that may submit; NULL: every tenant */
	uint8_t nallow;
};

struct xp_replica_ref {
	struct xp_job *job;
	uint32_t replica;
};

struct xp_nodeinfo {
	uint8_t state, source, removed;
	uint32_t failures; /* device faults and losses seen (the weighted policy's health) */
	uint32_t jobs;	   /* running replicas on it (= run.n) */
	char **dev_why;	   /* per device: why it is unhealthy (NULL: healthy) */
	uint8_t mig_leave; /* the admin lets xpool change MIG modes here (migmode.c) */
	struct xp_migmode *mm; /* a MIG mode change reserved or refused, NULL: none */
	XP_VEC(struct xp_replica_ref) run; /* the running replicas, any order */
};

/* A service (service.c, docs/design/serving.md): replicas kept running
 * from a template. The restart figures count replicas that ended on their
 * own (not cancelled by a scale-down, an update or a delete). */
struct xp_service {
	struct xp_servicespec spec; /* tenant and queue filled in */
	uint32_t tenant;
	uint32_t version;     /* of the template: replicas carry it */
	uint32_t desired;     /* replicas wanted now, spec.min..spec.max */
	uint64_t first_job;   /* ids below it belong to an earlier service of the name */
	int64_t created_at;
	uint32_t fail_streak; /* replicas in a row that ended on their own */
	uint64_t restarts;    /* replicas that ended on their own, in all */
	uint64_t last_end_job; /* the last of them, 0: none */
	int64_t last_end_at;
	XP_VEC(uint64_t) jobs; /* its replica jobs not ended, by id (derived) */
#define XP_SERVICE_SCALES 16
	struct xp_scale_ev {
		int64_t at;
		uint32_t from, to;
		char reason[232];
	} scales[XP_SERVICE_SCALES]; /* the last service.scale records, a ring */
	uint32_t nscales;	     /* taken in all; the newest is [(n - 1) % 16] */
	/* updates: the version before the last change (rollback goes back to
	 * it), the next new version's number, and a canary in progress */
	struct xp_servicespec *prev; /* NULL: none */
	uint32_t prev_version, next_version;
	uint32_t canary;	/* > 0: the current version is held at this many
				 * replicas beside the others until promoted */
	uint32_t canary_weight; /* its share of the traffic, percent */
	uint8_t rolling;	/* a new version is being rolled out: set by an
				 * update or a rollback, cleared by service.rolled */
};

struct xp_state_opts {
	const char *policy; /* default "bestfit" */
	int tiebreak;
	uint32_t weights[XP_W_N]; /* the weighted policy's; all 0: the brief's */
	int fifo;		  /* order by submission alone: no priorities, no fair
				   * share (the simulator's FIFO baseline) */
	struct xp_state_batch {
		/* the cycle's batch step (cycle.c): with a policy that has a
		 * batch optimiser and budget > 0, the next k batchable jobs of
		 * the order are planned together, budget rollouts per search;
		 * 0 = the job-at-a-time cycle. The owner may change it
		 * between cycles (st->batch). */
		uint32_t budget, k;
		/* out: work done - searches, their rollouts, the jobs searched
		 * and the commits the searches made (about rollouts x jobs) */
		uint64_t batches, rollouts, searched, placements;
	} batch;
	/* the edge's document code (docs.h; xp_edge_docs): snapshots'
	 * readers, a spec's hash, a service's new-version test; required */
	const struct xp_state_docs *docs;
};

struct xp_state {
	const struct xp_state_docs *docs; /* xp_state_opts.docs */
	struct xp_cluster *c;
	struct xp_sched *sched;
	struct xp_sched_opts sopts;
	XP_VEC(struct xp_nodeinfo) nodes; /* parallel to c->nodes */
	struct xp_strtab *node_names;
	XP_VEC(uint32_t) node_of_sym; /* node index per name symbol, UINT32_MAX: none */
	XP_VEC(struct xp_tenant) tenants;
	XP_VEC(struct xp_token) tokens;
	XP_VEC(struct xp_queue) queues;
	XP_VEC(struct xp_job *) jobs; /* ascending id */
	struct xp_intmap job_by_id;
	struct xp_strtab *keys; /* "<tenant>\x1<key>" */
	XP_VEC(uint64_t) key_job;
	XP_VEC(struct xp_job *) pending; /* may hold jobs no longer pending */
	XP_VEC(struct xp_job *) fresh;	 /* submitted since the last full pass */
	int cap_grew;			 /* capacity freed since the last full pass began */
	struct xp_pass *pass;		 /* the pass in progress (cycle.c), NULL: none */
	int fifo;			 /* xp_state_opts.fifo */
	struct xp_state_batch batch;	 /* xp_state_opts.batch, then the owner's */
	struct xp_intmap dependents;	 /* job id -> pending jobs waiting for it (deps.c) */
	XP_VEC(uint64_t) doomed;	 /* pending jobs whose dependencies can never be met */
	struct xp_backfill *resv;	 /* the reservations of the last finished pass */
	uint64_t backfilled, held_back;	 /* starts that passed a reservation; starts it refused */
	long be_running;		 /* running best-effort jobs (queue.c) */
	long limited_running; /* running jobs with a time limit: backfill waits for their ends */
	int sched_stale;      /* nodes changed: rebuild the scheduler before use */
	uint64_t nodes_gen;   /* bumped whenever a node is added, removed or loaded */
	uint64_t nodes_state_gen; /* bumped whenever a node changes state */
	struct xp_possible_cache *possible; /* possible.c's verdicts, NULL until used */
	uint64_t next_job_id, next_token_id;
	uint64_t seq; /* last record applied */
	uint64_t count[XP_JOB_STATE_N];
	uint64_t placed, unplaced;   /* decisions of the cycle */
	XP_VEC(uint64_t) done;	     /* terminal job ids in finish order (retention.c) */
	uint64_t capacity[XP_RES_N]; /* of the registered nodes: fair shares' denominator */
	size_t done_head;	     /* done.v[< done_head]: forgotten already */
	struct xp_meter meter;	     /* the usage ledger and the price table (meter.c) */
	XP_VEC(struct xp_wshape) workload; /* the estimated target workload M (workload.c) */
	XP_VEC(struct xp_service) services; /* by creation; a deleted one leaves the list */
	uint32_t mm_allowed, mm_held; /* nodes with the MIG mode leave; reservations */
	uint64_t elastic_live; /* elastic jobs pending or running (derived): with none,
				* the cycle's grow and shrink steps skip their walk of
				* every node */
};

/* What a record did, for the event stream. */
struct xp_event_info {
	const char *type; /* "job.started", ... */
	uint64_t job;	  /* 0: not about a job */
	int64_t tenant;	  /* the job's tenant; -1: everyone may see it; -2: admin only */
	int32_t node;	  /* node index, -1 none */
	int state;	  /* job or node state after, -1 none */
};

struct xp_state *xp_state_create(const struct xp_state_opts *o, struct xp_err *err);
void xp_state_destroy(struct xp_state *st);

/* possible.c: could spec run on some registered node if it were empty?
 * 0 yes; else XP_ENOCONFIG naming the field (into field) and the nearest
 * valid values. Model and vendor names that match a registered one but
 * for case are rewritten to its spelling first. Reads the nodes only. */
int xp_state_possible(struct xp_state *st, struct xp_jobspec *spec, char field[320],
		      struct xp_err *err);
void xp_possible_cache_free(struct xp_possible_cache *c);

/* workload.c: estimate M from the jobs submitted since `since` and give it to
 * the scheduler; returns the number of shapes or < 0. */
int xp_state_estimate_workload(struct xp_state *st, int64_t since, struct xp_err *err);

/* A journal record into the state (apply.c): checked whole against the
 * state, then applied, or refused with nothing changed. seq > 0 becomes
 * st->seq. The record arrives decoded (rec.h) from the codec at the store
 * boundary (src/edge/codec.c: xp_rec_apply takes a record's JSON). */
int xp_state_apply_rec(struct xp_state *st, uint64_t seq, int64_t at, const struct xp_rec *r,
		       struct xp_event_info *ev, struct xp_err *err);

/* queue.c: the queue tree, quotas and shares (docs/design/tenancy.md) */
/* q's definition (for records, snapshots and the API). */
void xp_queue_spec(const struct xp_state *st, const struct xp_queue *q, struct xp_queuespec *out);
/* The demand of allocations a[n] (replicas) as a resource vector. */
void xp_demand_of(const struct xp_state *st, const struct xp_alloc *a, uint32_t n,
		  uint64_t out[XP_RES_N]);
/* May tenant (a name) use queue q: q and each ancestor list it, or list
 * none? The admin tenant may use every queue. */
int xp_queue_allows(const struct xp_state *st, uint32_t q, const char *tenant);
/* 0 when q and its ancestors admit demand d under their max; else
 * XP_ENOSPC with *where (the queue) and *res (the resource) that refuse. */
int xp_queue_admits(const struct xp_state *st, uint32_t q, const uint64_t d[XP_RES_N],
		    uint32_t *where, int *res);
/* Dominant share: usage over the cluster's capacity, the largest over the
 * resources, divided by the weight (a tenant's weight is 1). */
double xp_queue_share(const struct xp_state *st, uint32_t q);
double xp_tenant_share(const struct xp_state *st, uint32_t t);
int xp_queue_is_leaf(const struct xp_state *st, uint32_t q);

/* service.c: services (docs/design/serving.md) */
/* The service called name, or -1. */
long xp_state_service(const struct xp_state *st, const char *name);
/* The delay before the next replica may start after replicas ended on
 * their own: 0 with no streak, then 1 s doubling to 60 s (Kubernetes'
 * CrashLoopBackOff: 10 s doubling to 300 s, shortened for a pool that
 * restarts on another node). */
int64_t xp_service_backoff_ms(const struct xp_service *s);

/* Allocations a[n] as records carry them (rec.h; node names borrowed
 * from the state), malloc'd: for job.start and job.resize records. */
struct xp_rec_alloc *xp_allocs_rec(const struct xp_state *st, const struct xp_alloc *a,
				   uint32_t n);
/* Is j elastic (replicas: {min, max})? */
int xp_job_elastic(const struct xp_job *j);

/* Retention (retention.c): up to max ids of terminal jobs due to be
 * forgotten at `now` - finished keep_ms ago or more, or beyond the newest
 * max_kept - oldest first. The caller journals xp_rec_job_forget(ids). */
size_t xp_state_forget_due(struct xp_state *st, int64_t now, int64_t keep_ms, uint64_t max_kept,
			   uint64_t *ids, size_t max);

/* Rebuild the scheduler over the current nodes if they changed (node
 * additions are applied lazily); call before reading st->sched. */
int xp_state_sched(struct xp_state *st, struct xp_err *err);
/* The MIG profile of allocation a's slice on its device (what mig: any
 * chose), or NULL when it holds none. */
const struct xp_mig_profile *xp_state_mig_profile(struct xp_state *st, const struct xp_alloc *a);

/* Lookups (NULL / -1 when absent). */
struct xp_job *xp_state_job(const struct xp_state *st, uint64_t id);
long xp_state_tenant(const struct xp_state *st, const char *name);
long xp_state_queue(const struct xp_state *st, const char *name);
long xp_state_node(const struct xp_state *st, const char *name);
/* The hash a job submitted with an idempotency key keeps of its spec is
 * the edge's (xp_jobspec_hash, src/edge/canon.c; st->docs->jobspec_hash). */
/* Job id for (tenant, idempotency key), 0 when none. */
uint64_t xp_state_job_by_key(const struct xp_state *st, uint32_t tenant, const char *key);

/*
 * The scheduling cycle: pending jobs in order (queue priority, job
 * priority, then id), each gang placed whole or not at all. A placement is
 * handed to emit() as a job.start record, which must apply it before
 * returning (the owner also journals it). At most budget jobs are tried.
 * With st->batch.budget > 0 and a policy with a batch optimiser, jobs
 * that are one request are planned up to K at a time (cycle.c, the batch
 * step; docs/design/batch-cycle.md); the records are the same kinds.
 * Returns the number placed, or a negative code from emit().
 *
 * The record is typed (rec.h: job.start, job.preempt, job.cancel,
 * job.resize) and borrowed for the call: emit() encodes it for the journal
 * (src/edge: xp_rec_encode) and applies it.
 */
typedef int (*xp_emit_fn)(void *ctx, const struct xp_rec *r);
long xp_state_cycle(struct xp_state *st, int64_t now, size_t budget, struct xp_rng *rng,
		    xp_emit_fn emit, void *ctx);
/* The reservation the last finished pass made for job (backfill.c): 1 and
 * *at, its expected start, or 0. */
struct xp_backfill;
int xp_backfill_holds(const struct xp_backfill *b, uint64_t job, int64_t *at);
/* Can tenant's job depend on dep (it exists, is the tenant's, and has not
 * ended in a way that can never meet it)? 0 or an error. */
int xp_deps_check_one(const struct xp_state *st, const struct xp_dep *dep, uint32_t tenant,
		      struct xp_err *err);
/* The jobs a pending job still waits for (depends_on not ended), at most max. */
size_t xp_deps_waiting(const struct xp_state *st, const struct xp_job *j, uint64_t *ids,
		       size_t max);
/* Has the cycle more to do (a pass in progress, jobs not yet tried)? */
int xp_state_cycle_more(const struct xp_state *st);
/* Why job j (pending) is not placed: the explanation for its first replica
 * that does not fit once the earlier ones are tentatively placed. */
void xp_state_explain(struct xp_state *st, const struct xp_job *j, struct xp_explain *out,
		      int *fits_now);

/* The explanation as one line ("412 nodes: no matching device; 37 nodes:
 * CPU short by 4000m", "fits now: ...", ...) appended to sb. */
struct xp_sb;
void xp_explain_summary(const struct xp_explain *ex, int fits, uint32_t replicas, struct xp_sb *sb);
/* Jobs the clock stops (limits.c): running past time_limit, pending past
 * gang.timeout; at most max, the reason each. The caller journals
 * job.finish (failed) for each. */
struct xp_overdue {
	uint64_t id;
	int time_limit; /* 1: running past its time limit; 0: a gang timeout */
	char why[400];
};
size_t xp_state_overdue(struct xp_state *st, int64_t now, struct xp_overdue *out, size_t max);

/* What holds a pending job back beyond placement: its queue's max (then
 * nothing else is looked at), or - when it does not fit - which elastic
 * jobs it would shrink (shrinks), else whom it would preempt (victims) or
 * why it cannot (why_not). */
struct xp_admission {
	int quota_blocked;
	uint32_t where; /* the queue whose max refuses it */
	int res;	/* the resource */
	uint64_t used, max, need;
	uint64_t *victims;
	size_t nvictims;
	uint64_t *shrinks; /* elastic jobs it would shrink instead (then no victims) */
	size_t nshrinks;
	char why_not[300];
	int preempt_considered; /* the cycle would look for victims (why_not is its answer) */
	int reserved;	 /* backfill holds a reservation for it, */
	int64_t resv_at; /* expected to start then (the running jobs' limits) */
};
void xp_state_admission(struct xp_state *st, const struct xp_job *j, struct xp_admission *out);
void xp_admission_free(struct xp_admission *a);

/*
 * Why a pending job waits, as one code (pending.c), like squeue's REASON:
 * what holds it first, in this order - a hold, its dependencies, its
 * queue's max, whether any node could take it (none: NoMatchingDevice;
 * only draining or cordoned ones: Draining; only down ones: NodeDown),
 * then the cycle's last verdict (Resources: busy; Priority: backfill keeps
 * the room for a job ahead; None: not tried yet). Read-only, and cheap
 * enough for every row of a listing: no placement is tried.
 */
enum xp_pend {
	XP_PEND_NONE,
	XP_PEND_HELD,
	XP_PEND_DEPENDENCY,
	XP_PEND_DEP_NEVER,
	XP_PEND_QUOTA_MAX,
	XP_PEND_NO_DEVICE,
	XP_PEND_DRAINING,
	XP_PEND_NODE_DOWN,
	XP_PEND_RESOURCES,
	XP_PEND_PRIORITY,
	XP_PEND_SEARCH, /* it fitted, but the batch search placed others of its batch */
	XP_PEND_N
};
struct xp_pending {
	int code;	  /* enum xp_pend */
	char detail[200]; /* "queue team-a: gpu 8/8, needs 1", "" */
};
const char *xp_pend_name(int code);
void xp_state_pending(struct xp_state *st, const struct xp_job *j, struct xp_pending *out);
/* possible.c: the best state among the nodes that could take r were they
 * empty: XP_PEND_RESOURCES (a ready one), _DRAINING, _NODE_DOWN or
 * _NO_DEVICE (none); cached per request and node generation. */
int xp_state_nodes_for(struct xp_state *st, const struct xp_request *r);

/* A job's deadline (ms since the epoch; 0: none), and how it stands at
 * now: "met", "missed", "at_risk" (it cannot end in time by its time
 * limit), "ok" (NULL without a deadline). */
int64_t xp_job_deadline(const struct xp_job *j);
const char *xp_job_deadline_status(const struct xp_job *j, int64_t now);

/* Names of states and sources; parse returns -1 when unknown. */
const char *xp_job_state_name(int s);
int xp_job_state_parse(const char *s);
const char *xp_node_state_name(int s);
int xp_node_state_parse(const char *s);
const char *xp_node_source_name(int s);
int xp_node_source_parse(const char *s);
int xp_job_terminal(int s);
const char *xp_end_name(int e);	 /* "" for none */
int xp_end_parse(const char *s); /* "oom" -> XP_END_OOM; -1 unknown (or "") */
/* A job.submit record applied from the spec it was encoded from, as
 * xp_rec_apply(st, 0, at, "job.submit", xp_rec_job_submit(id, tenant,
 * key, spec), ...) would, without parsing the record again: the owner's
 * path, and the typed job.submit's (replay decodes the record; a spec's
 * canonical JSON parses to the same spec, spec.h). Takes *spec (zeroed),
 * applied or not. */
int xp_state_submit(struct xp_state *st, int64_t at, uint64_t id, const char *tenant,
		    const char *key, struct xp_jobspec *spec, struct xp_event_info *ev,
		    struct xp_err *err);
/* Legal transitions (docs/design/controller.md). */
int xp_job_transition_ok(int from, int to);
int xp_node_transition_ok(int from, int to);
/* The state machines at one transition (controller.md, "Job states",
 * "Node states"): job j went from state `from` (-1: just submitted) to
 * j->state (the same: changed within its state), node n likewise (-1:
 * just added), and what its state promises holds. 0, or XP_EINTERNAL
 * naming what is wrong. apply.c calls them at every transition through
 * XP_JOB_CHECK and XP_NODE_CHECK (state_int.h), in every build without
 * NDEBUG, tests included. */
int xp_job_check(const struct xp_state *st, const struct xp_job *j, int from, struct xp_err *err);
int xp_node_check(const struct xp_state *st, uint32_t n, int from, struct xp_err *err);
/* Check every invariant of the state; 0 or XP_EINTERNAL naming the first
 * broken one. For tests and debug builds. */
int xp_state_check(const struct xp_state *st, struct xp_err *err);

#endif
