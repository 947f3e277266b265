/*
 * edge: external documents parsed into typed structs on the HTTP worker,
 * before anything reaches the owner thread (ARCHITECTURE.md contract 5).
 * Each parser checks every field with size limits and names the faulty
 * field by its path ("jobs[3].depends_on[0]"); the owner receives the
 * typed result only, so its commands have a bounded cost.
 *
 * The files of this folder (edge_int.h: what they share):
 *   edge.h       this map, and the typed documents
 *   jobspec.c    job specs (with elastic sizes) and job changes
 *   svcspec.c    service definitions, a replica's service reference, and
 *                a replica's spec from its service
 *   queuespec.c  queue definitions
 *   prices.c     the price table
 *   codec.c      journal records: their JSON decoded into struct xp_rec
 *                (core/state/rec.h) with every field checked, and applied
 *                (xp_rec_apply: replay and the live path alike);
 *                records.c their writers (xp_rec_*)
 *   docs.c       xp_edge_docs: these parsers and the descriptor's, as the
 *                readers the state is given for the documents inside
 *                records and snapshots (src/core/state/docs.h)
 *   canon.c      the canonical JSON of specs, job changes, services,
 *                queues and prices (records, snapshots, API replies)
 *   meter_report.c the usage report as JSON and CSV (rows: the state's)
 *   snapshot.c   the whole state as one JSON document and back (the
 *                store keeps it; replay starts from it); snapshot_parts.c
 *                the services', meter's, elastic jobs' and MIG modes'
 *                parts; snapshot_int.h what the two share
 *   workflow.c   POST /v1/workflows: a DAG of job specs, put in an order
 *                where each job comes after those it depends on (Kahn's,
 *                O(jobs + edges) with the names hashed)
 *
 * The typed results (struct xp_jobspec, xp_queuespec, ...) are declared by
 * the state (src/core/state), which holds them as plain C; node
 * descriptors are read by src/descriptor. The parsers here are the only
 * ones: the API and replay read a document with the same code.
 *
 * Ownership: a parsed document owns its strings and specs; its _free()
 * releases them and is NULL-safe.
 */
#ifndef XP_EDGE_H
#define XP_EDGE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/state/docs.h"
#include "../core/state/prices.h"
#include "../core/state/queuespec.h"
#include "../core/state/spec.h"
#include "../core/state/state.h"
#include "../core/state/svcspec.h"
#include "../lib/err.h"
#include "../lib/strbuf.h"

/* Job specs (jobspec.c), from text: name labels errors ("request:12:
 * resources.cpu: ..."); json < 0 detects the syntax, 0 YAML, 1 JSON. On
 * error *field (if not NULL) gets the path of the faulty field. */
int xp_jobspec_parse_text(const char *name, const char *buf, size_t len, int json,
			  struct xp_jobspec *out, char field[320], struct xp_err *err);
/* A change to a pending job (spec.h, struct xp_jobpatch), json as above;
 * an empty change is refused. */
int xp_jobpatch_parse_text(const char *name, const char *buf, size_t len, int json,
			   struct xp_jobpatch *out, char field[320], struct xp_err *err);
/* A queue's definition (queuespec.c). need_name: the document must name
 * the queue (a create; an update takes the name from the URL). */
int xp_queuespec_parse_text(const char *name, const char *buf, size_t len, int json, int need_name,
			    struct xp_queuespec *out, char field[320], struct xp_err *err);
/* A service's definition (svcspec.c); field as above
 * ("template.resources.cpu"). */
int xp_servicespec_parse_text(const char *name, const char *buf, size_t len, int json,
			      struct xp_servicespec *out, char field[320], struct xp_err *err);
/* A replica's job spec: the template with the service's tenant, queue,
 * name ("NAME-vVERSION") and {service: {name, version, readiness}}. */
int xp_servicespec_replica(const struct xp_servicespec *s, uint32_t version,
			   struct xp_jobspec *out, struct xp_err *err);
/* A price table (prices.c); errors name the field ("devices.A100:
 * expected a price 0..1000000, got 'x'"). */
int xp_prices_parse(const char *name, const char *text, size_t len, int json,
		    struct xp_prices *out, struct xp_err *err);

/* codec.c: a journal record's JSON (type, body) into the state: decoded
 * into struct xp_rec and applied with xp_state_apply_rec. Codes and texts
 * as xp_state_apply_rec's; a malformed field is XP_ECORRUPT naming it
 * ("id: missing or out of range"). */
int xp_rec_apply(struct xp_state *st, uint64_t seq, int64_t at, const char *type,
		 const char *body, size_t len, struct xp_event_info *ev, struct xp_err *err);
/* Decode alone: 1 and *out (its strings borrowed from *hold, freed by
 * xp_rec_release), or < 0 (nothing held; an unknown type is XP_ECORRUPT). */
int xp_rec_decode(const char *type, const char *body, size_t len, struct xp_rec *out,
		  void **hold, struct xp_err *err);
void xp_rec_release(void *hold);
/* A list of allocations (JSON) decoded as job.start's are, for snapshots
 * (xp_edge_docs.allocs): *out malloc'd with their node names (one free),
 * *n of them. */
int xp_rec_allocs_read(const char *buf, size_t len, struct xp_rec_alloc **out, size_t *n,
		       struct xp_err *err);
/* job.counter: the counters of a POST body (a JSON object) checked -
 * {name: positive integer}, names [a-z0-9_] 1..63, at most 32; err names
 * the field - and the record of them */
struct json_t;
int xp_meter_counters_check(struct json_t *counters, struct xp_err *err);
char *xp_rec_job_counter(uint64_t job, struct json_t *counters);

/* records.c: the journal records' writers (bodies are malloc'd JSON, the
 * bytes the journal has always held; test_codec pins them). */
/* A typed record's JSON: the records the scheduling cycle emits
 * (job.start, job.preempt, job.cancel, job.resize), job.requeue and the
 * MIG mode planner's (node.mig_mode, node.mig_mode_done; and
 * node.mig_mode_change); NULL for the other types (their writers are
 * below). */
char *xp_rec_encode(const struct xp_rec *r);
/* node.mig_mode_change {name, allow}, node.mig_mode {name, device, mode:
 * "mig", job}, node.mig_mode_done {name, device, mode: "mig", ok, why} */
char *xp_rec_node_mig_leave(const char *node, int allow);
char *xp_rec_node_mig_mode(const char *node, unsigned dev, uint64_t job);
char *xp_rec_node_mig_done(const char *node, unsigned dev, int ok, const char *why);
/* the same for either direction: on 1 "mode": "mig", 0 "mode": "off" */
char *xp_rec_node_mig_mode_to(const char *node, unsigned dev, int on, uint64_t job);
char *xp_rec_node_mig_done_to(const char *node, unsigned dev, int on, int ok, const char *why);
char *xp_rec_job_start(const struct xp_state *st, uint64_t id, const struct xp_alloc *a,
		       uint32_t n);
char *xp_rec_job_cancel(uint64_t id, const char *reason);
/* Running -> pending: its node was lost; the allocations are released. */
char *xp_rec_job_requeue(uint64_t id, const char *reason);
/* Running -> pending: preempted (the same record shape, type job.preempt). */
#define xp_rec_job_preempt xp_rec_job_requeue
/* job.resize - the running elastic job id goes to epoch `epoch` (its
 * epoch + 1): the replicas keep[0..nkeep) (ascending ranks of the current
 * size) stay, renumbered 0.., and add[0..nadd) join after them; why is the
 * reason (docs/design/controller.md, "Elastic jobs"). */
char *xp_rec_job_resize(const struct xp_state *st, uint64_t id, uint32_t epoch,
			const uint32_t *keep, uint32_t nkeep, const struct xp_alloc *add,
			uint32_t nadd, const char *why);
char *xp_rec_tenant_create(const char *name);
/* scope: enum xp_scope; node: the node of a XP_SCOPE_NODE token, else NULL */
char *xp_rec_token_create(uint64_t id, const char *tenant, const char *name, int scope,
			  const char *node, const char *sha256);
char *xp_rec_token_revoke(uint64_t id);
/* A top-level queue with no quota (the rest default). */
char *xp_rec_queue_create(const char *name, int32_t priority, uint32_t weight);
/* queue.create / queue.update: the whole definition after the change */
char *xp_rec_queue_define(const struct xp_queuespec *q);
char *xp_rec_queue_delete(const char *name);
/* descriptor: a one-node descriptor document (JSON) */
char *xp_rec_node_add(int source, const char *descriptor);
char *xp_rec_node_state(const char *name, int state);
char *xp_rec_node_remove(const char *name);
char *xp_rec_job_submit(uint64_t id, const char *tenant, const char *key,
			const struct xp_jobspec *spec);
char *xp_rec_job_finish(uint64_t id, int state, int exit_code, const char *reason);
/* The same with a signal, an end reason, or no exit code (x->has_code 0). */
char *xp_rec_job_finish_x(uint64_t id, int state, const struct xp_exit *x, const char *reason);
/* A replica of attempt `attempt` exited (agent report). Also taken once
 * for a job its time limit failed (end time_limit, no exit code yet): it
 * gives the job the exit code and signal the agent saw. */
char *xp_rec_job_task(uint64_t id, uint32_t attempt, uint32_t replica, int exit_code);
char *xp_rec_job_task_x(uint64_t id, uint32_t attempt, uint32_t replica, const struct xp_exit *x);
/* Device health of a node: ok[i] / why[i] for each of its n devices. */
char *xp_rec_node_health(const char *name, const uint8_t *ok, char *const *why, unsigned n);
/* A pending job held (held: enum xp_hold) or released (XP_HOLD_NONE). */
char *xp_rec_job_hold(uint64_t id, int held);
/* A pending job changed. */
char *xp_rec_job_update(uint64_t id, const struct xp_jobpatch *p);
/* Forget finished jobs: at most 10000 ids, each terminal. */
char *xp_rec_job_forget(const uint64_t *ids, size_t n);
/* The energy measured for an ended run. */
char *xp_rec_job_energy(uint64_t job, uint32_t attempt, uint64_t joules);
/* service.create: spec's tenant is filled in (the record names it). */
char *xp_rec_service_create(const struct xp_servicespec *spec);
/* service.scale: replicas wanted from now on, and why (a user, the autoscaler) */
char *xp_rec_service_scale(const char *name, uint32_t replicas, const char *reason);
char *xp_rec_service_delete(const char *name);
/* service.update: the whole definition after the change; canary > 0 holds
 * a new version at that many replicas taking weight percent of the traffic */
char *xp_rec_service_update(const struct xp_servicespec *spec, uint32_t canary, uint32_t weight);
/* service.promote (a canary goes on to all replicas), service.rollback,
 * service.rolled (the owner saw a rollout finish) */
char *xp_rec_service_named(const char *name);

/* canon.c: the canonical JSON of the typed documents, as records,
 * snapshots and API replies carry them; each parses back to the same
 * struct. _to_json: malloc'd text; _json: a new reference. */
struct json_t;
char *xp_jobspec_to_json(const struct xp_jobspec *s);
struct json_t *xp_jobspec_json(const struct xp_jobspec *s);
/* the fields a job change sets */
struct json_t *xp_jobpatch_json(const struct xp_jobpatch *p);
/* a spec's size range and checkpoint, into its object o */
void xp_elastic_json(const struct xp_jobspec *s, struct json_t *o);
/* a replica's "service" key, into its spec's object */
void xp_svcref_json(const struct xp_svcref *r, struct json_t *spec);
struct json_t *xp_servicespec_json(const struct xp_servicespec *s);
struct json_t *xp_queuespec_json(const struct xp_queuespec *q);
struct json_t *xp_prices_json(const struct xp_prices *p);
/* The hash a job submitted with an idempotency key keeps of its spec
 * (canonical JSON), to tell a retry from a different request. */
uint64_t xp_jobspec_hash(const struct xp_jobspec *s);
/* Would replicas of a and b differ (template, readiness, load)? Then a
 * change from a to b is a new version, rolled out. */
int xp_servicespec_new_version(const struct xp_servicespec *a, const struct xp_servicespec *b);

/* meter_report.c: the usage report {"by", "since", "until", "currency",
 * "priced", "rows": [...], "total": {...}} (a new reference) from the
 * state's rows (xp_meter_rows; tenant >= 0: only that tenant's usage),
 * and the same rows as CSV, one line per row then "total" (malloc'd). */
struct json_t *xp_meter_report(const struct xp_state *st, int by, int64_t since, int64_t until,
			       int64_t now, int64_t tenant);
char *xp_meter_report_csv(const struct json_t *report);

/* snapshot.c: the whole state as JSON (malloc'd; the format and bytes
 * the state wrote before it moved here), and a snapshot loaded into a
 * fresh state (XP_ECORRUPT naming the part at fault, XP_EVERSION for a
 * newer format). */
char *xp_state_snapshot(const struct xp_state *st);
int xp_state_load_snapshot(struct xp_state *st, const char *body, size_t len, struct xp_err *err);

/* docs.c: the readers the state is given (xp_state_opts.docs). */
extern const struct xp_state_docs xp_edge_docs;

/* A workflow: its jobs' specs in an order where each comes after the jobs
 * of the workflow it depends on. Such a dependency holds XP_WF_LOCAL plus
 * that job's position in the order; the owner turns it into the job id
 * (the first id it hands out plus the position). */
#define XP_WF_LOCAL (1ULL << 62)
#define XP_WORKFLOW_MAX_JOBS 10000
struct xp_workflow {
	char name[XP_NAME_MAX + 1];
	size_t n;
	struct xp_jobspec *specs; /* n, in order; each spec's workflow is name */
	size_t *index;		  /* per position: its index in the document's jobs */
	/* the owner's progress while it submits the jobs a slice per turn
	 * (src/server/api_workflows.c); freed with the workflow */
	size_t done;	  /* positions submitted */
	uint64_t *ids;	  /* per position: its job id, once submitted */
	long *tenants;	  /* per position: its tenant */
	struct xp_sb out; /* the reply so far: its head and the jobs submitted */
};

/* Parse and order a workflow document (json: 1 JSON, 0 YAML, < 0 guess).
 * On error field gets the path of the faulty field ("" for the document). */
int xp_workflow_parse(const char *src, const char *buf, size_t len, int json,
		      struct xp_workflow *out, char field[640], struct xp_err *err);
void xp_workflow_free(struct xp_workflow *w);

#endif
