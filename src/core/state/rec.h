/*
 * rec: journal records as plain C (docs/design/controller.md, "Journal
 * records"). The state applies a struct xp_rec (xp_state_apply_rec); the
 * JSON the journal holds is decoded into one, and written from one, by the
 * record codec at the store boundary (src/edge/codec.c), which checks
 * every field and names the faulty one ("id: missing or out of range"),
 * as the state did when it read the JSON itself.
 *
 * A decoded record's strings are borrowed from the decoder (valid until it
 * is released); the state copies what it keeps. Fields are checked for
 * form by the codec (ranges, enum names, lengths), and against the state
 * (the job exists, the transition is legal) by xp_state_apply_rec.
 *
 * Every record type is here (the table in docs/design/controller.md);
 * the documents inside some (a spec, a queue, a service, prices, a node's
 * descriptor) arrive read, as the plain structs of this folder.
 */
#ifndef XP_STATE_REC_H
#define XP_STATE_REC_H

#include <stdint.h>

#include "../model/model.h"

struct xp_cluster;
struct xp_jobspec;
struct xp_jobpatch;
struct xp_prices;
struct xp_queuespec;
struct xp_servicespec;

#define XP_REC_MAX_COUNTERS 32	     /* names in one job.counter */
#define XP_REC_MAX_FORGET   10000    /* ids in one job.forget */

/* How a replica or a job ended, as records carry it. */
struct xp_exit {
	int has_code;	    /* 0: no exit code (yet): a time limit the agent still enforces */
	int code;	    /* -255..255 */
	int signal;	    /* the terminating signal, 0 none */
	int end;	    /* enum xp_end */
	const char *detail; /* what failed (limits, start), NULL none */
};

enum xp_rec_type {
	XP_REC_TENANT_CREATE, /* tenant.create {name} */
	XP_REC_TOKEN_CREATE,  /* token.create {id, tenant, name, admin, sha256, node?, bootstrap?} */
	XP_REC_TOKEN_REVOKE,  /* token.revoke {id} */
	XP_REC_QUEUE_DELETE,  /* queue.delete {name} */
	XP_REC_NODE_STATE,    /* node.state {name, state} */
	XP_REC_NODE_REMOVE,   /* node.remove {name} */
	XP_REC_NODE_HEALTH,   /* node.health {name, devices: [{ok, why}]} */
	XP_REC_JOB_FINISH,    /* job.finish {id, state, exit_code?, reason?, signal?, end?, detail?} */
	XP_REC_JOB_CANCEL,    /* job.cancel {id, reason?} */
	XP_REC_JOB_TASK,      /* job.task {id, attempt, replica, exit_code, signal?, end?, detail?} */
	XP_REC_JOB_REQUEUE,   /* job.requeue {id, reason?} */
	XP_REC_JOB_PREEMPT,   /* job.preempt {id, reason?} */
	XP_REC_JOB_HOLD,      /* job.hold {id, held} */
	XP_REC_JOB_UPDATE,    /* job.update {id, change} */
	XP_REC_JOB_FORGET,    /* job.forget {ids} */
	XP_REC_JOB_COUNTER,   /* job.counter {id, counters} */
	XP_REC_JOB_ENERGY,    /* job.energy {id, attempt, joules} */
	XP_REC_PRICES_SET,    /* prices.set: the price table */
	XP_REC_QUEUE_CREATE,  /* queue.create: the queue's definition */
	XP_REC_QUEUE_UPDATE,  /* queue.update: the same, after the change */
	XP_REC_NODE_ADD,      /* node.add {source, descriptor} */
	XP_REC_JOB_SUBMIT,    /* job.submit {id, tenant, key, spec} */
	XP_REC_SERVICE_CREATE,	 /* service.create {spec} */
	XP_REC_SERVICE_UPDATE,	 /* service.update {spec, canary, weight} */
	XP_REC_SERVICE_SCALE,	 /* service.scale {name, replicas, reason} */
	XP_REC_SERVICE_DELETE,	 /* service.delete {name} */
	XP_REC_SERVICE_PROMOTE,	 /* service.promote {name} */
	XP_REC_SERVICE_ROLLBACK, /* service.rollback {name} */
	XP_REC_SERVICE_ROLLED,	 /* service.rolled {name} */
	XP_REC_JOB_START,	 /* job.start {id, allocations} */
	XP_REC_JOB_RESIZE,	 /* job.resize {id, epoch, size, keep, add, reason} */
	XP_REC_NODE_MIG_LEAVE,	 /* node.mig_mode_change {name, allow} */
	XP_REC_NODE_MIG_MODE,	 /* node.mig_mode {name, device, mode: mig|off, job} */
	XP_REC_NODE_MIG_DONE,	 /* node.mig_mode_done {name, device, mode: mig|off, ok, why} */
	XP_REC_N
};

/* One replica's allocation as records and snapshots carry it: the node by
 * name (and by index when given: snapshots keep removed nodes), the shares,
 * the device indices, a MIG slice. The state finds the node. */
struct xp_rec_alloc {
	const char *node;
	int has_index;	    /* node_index given (an integer) */
	int64_t node_index;
	uint64_t cpu_milli, mem_mib, dev_mem_mib;
	uint16_t dev_milli, ndev;
	uint8_t devs[XP_MAX_NODE_DEVS];
	uint8_t mig, mig_start; /* mig: the slice's kind + 1, 0 none */
};

/* The record type's name ("job.task"), NULL when out of range. */
const char *xp_rec_type_name(int type);
/* The type of a name; -1 when it is not a typed record (yet). */
int xp_rec_type_parse(const char *name);

struct xp_rec {
	int type; /* enum xp_rec_type */
	union {
		struct {
			const char *name;
		} tenant; /* tenant.create */
		struct {
			uint64_t id;
			const char *tenant, *name, *sha256;
			int scope;	  /* enum xp_scope (state.h) */
			const char *node; /* XP_SCOPE_NODE: the node; else NULL */
		} token; /* token.create */
		struct {
			uint64_t id;
		} revoke; /* token.revoke */
		struct {
			const char *name;
			int state; /* enum xp_node_state; node.state only */
		} node;	   /* queue.delete (name), node.state, node.remove */
		struct {
			const char *name;
			int ndevs; /* devices listed; -1: "devices" is not a list */
			uint8_t ok[XP_MAX_NODE_DEVS];
			const char *why[XP_MAX_NODE_DEVS]; /* NULL: none given */
		} health; /* node.health */
		struct {
			uint64_t id;
			int state;	    /* job.finish: XP_JOB_SUCCEEDED or XP_JOB_FAILED */
			struct xp_exit x;   /* job.finish: x.has_code 0 when no exit code */
			const char *reason; /* "" none */
		} end;			    /* job.finish, job.cancel */
		struct {
			uint64_t id;
			uint32_t attempt, replica;
			struct xp_exit x; /* x.code: the exit code (always given) */
		} task;			  /* job.task */
		struct {
			uint64_t id;
			const char *reason; /* NULL: not a string */
		} requeue;		    /* job.requeue, job.preempt */
		struct {
			uint64_t id;
			int held; /* enum xp_hold */
		} hold;		  /* job.hold */
		struct {
			uint64_t id;
			const struct xp_jobpatch *change;
		} update; /* job.update */
		struct {
			size_t n; /* 1..XP_REC_MAX_FORGET */
			const uint64_t *ids;
		} forget; /* job.forget */
		struct {
			uint64_t id;
			uint32_t n; /* 1..XP_REC_MAX_COUNTERS */
			const char *name[XP_REC_MAX_COUNTERS];
			uint64_t value[XP_REC_MAX_COUNTERS];
		} counter; /* job.counter */
		struct {
			uint64_t id;
			int64_t attempt; /* >= 1; a run's attempt is its low 32 bits */
			uint64_t joules;
		} energy; /* job.energy */
		struct {
			int source;		       /* enum xp_node_source */
			const struct xp_cluster *desc; /* the descriptor as read: one node */
		} node_add;			       /* node.add */
		struct {
			uint64_t id;
			const char *tenant, *key; /* key NULL: none */
			struct xp_jobspec *spec;  /* the state takes its contents (zeroed) */
		} submit;			  /* job.submit */
		struct {
			const char *name;	     /* update: the spec's; else the record's */
			struct xp_servicespec *spec; /* create, update: the state takes it (zeroed) */
			uint32_t canary, weight;     /* update */
			int64_t replicas;	     /* scale; INT64_MIN: not an integer */
			const char *reason;	     /* scale; NULL: none */
		} service;			     /* service.* */
		struct {
			uint64_t id;
			int64_t n; /* allocations listed; -1: not a list */
			const struct xp_rec_alloc *a;
		} start; /* job.start */
		struct {
			uint64_t id;
			uint32_t epoch, size;
			int64_t nkeep;	      /* ranks listed; -1: not a list */
			const int64_t *keep;  /* INT64_MIN: not an integer */
			uint32_t nadd;
			const struct xp_rec_alloc *add;
			const char *reason;
		} resize; /* job.resize */
		struct {
			/* read as given: the state checks them in its order, with its
			 * texts (migmode.c), as it did when it read the JSON */
			const char *name; /* NULL: not a string */
			int allow;	  /* leave: 1, 0; -1: not a boolean */
			int64_t device;	  /* mode, done; -1: not an integer or negative */
			int mode_mig;	  /* mode, done: "mode" is "mig" (MIG on) */
			int mode_off;	  /* mode, done: "mode" is "off" (MIG off) */
			uint64_t job;	  /* mode; 0: not an integer */
			int ok;		  /* done: 1, 0; -1: not a boolean */
			const char *why;  /* done: "" absent; NULL: not a string */
		} migmode;		  /* node.mig_mode_change, node.mig_mode, node.mig_mode_done */
		const struct xp_prices *prices;	 /* prices.set */
		const struct xp_queuespec *queue; /* queue.create, queue.update */
	} u;
};

#endif
