/*
 * spec: a job specification (docs/api.md "POST /v1/jobs") as plain C, and
 * written as canonical JSON that parses to the same spec. The parser and
 * the writer are at the edge (src/edge/jobspec.c, canon.c); they serve
 * the API and replay alike (replay through struct xp_state_docs), so what
 * was accepted is exactly what is replayed.
 *
 * Ownership: a spec owns its strings; xp_jobspec_free() releases them.
 */
#ifndef XP_SPEC_H
#define XP_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "../../lib/err.h"
#include "../model/model.h"

#define XP_NAME_MAX	    63
#define XP_JOB_MAX_REPLICAS 1024
#define XP_JOB_MAX_ARGS	    256
#define XP_JOB_MAX_ENV	    256
#define XP_JOB_MAX_LABELS   64
#define XP_PRIORITY_MAX	    1000
/* per replica; beyond these a request is absurd, not just large */
#define XP_JOB_MAX_CPU_MILLI 1000000000ULL /* a million cores */
#define XP_JOB_MAX_MEM_MIB   (1ULL << 30)  /* 1 PiB */
#define XP_DURATION_MAX_MS   (366LL * 24 * 3600 * 1000)

/* QoS class (qos): how a running job may be preempted (docs/design/tenancy.md) */
enum xp_qos {
	XP_QOS_STANDARD,    /* by reclaim of borrowed capacity or by priority, per policy */
	XP_QOS_BEST_EFFORT, /* also by any job of its priority or higher, from any queue */
	XP_QOS_PROTECTED,   /* never */
	XP_QOS_N
};
int xp_qos_parse(const char *s);
/* gang.colocate's names ("none" is no choice: -1) and devices.topology's
 * (any, same_island, same_numa: 0..2); -1 unknown */
int xp_coloc_parse(const char *s);
int xp_topo_parse(const char *s);

/* A gang's placement together (gang.colocate) */
enum xp_colocate {
	XP_COLOC_NONE,
	XP_COLOC_NODE,	 /* every replica on one node */
	XP_COLOC_ISLAND, /* one node, every replica's devices in one island */
	XP_COLOC_NUMA,	 /* one node, every replica's devices in one NUMA domain */
	XP_COLOC_ZONE,	 /* nodes of one zone */
	XP_COLOC_N
};

/* A dependency (depends_on): the job starts once job ended as type asks;
 * if it ends otherwise, the job is cancelled. */
enum xp_dep_type { XP_DEP_AFTER_OK, XP_DEP_AFTER_ANY, XP_DEP_AFTER_NOT_OK, XP_DEP_N };
#define XP_JOB_MAX_DEPS 64

struct xp_dep {
	uint64_t job;
	uint8_t type;
};

#define XP_PROBE_PATH_MAX 255

/* How an agent tells a replica is ready for traffic. */
enum xp_probe_kind {
	XP_PROBE_TCP, /* its port takes a connection (the default) */
	XP_PROBE_HTTP, /* GET path on its port answers 2xx or 3xx */
	XP_PROBE_CMD   /* path is a shell command that exits 0 (XPOOL_PORT set) */
};

struct xp_probe {
	uint8_t kind;
	char path[XP_PROBE_PATH_MAX + 1]; /* XP_PROBE_HTTP: starts with '/';
					   * XP_PROBE_CMD: the command, one line */
	int64_t period_ms;		  /* default 1000 */
	int64_t timeout_ms;		  /* default 1000 */
};

/* What an agent reads of a replica's load for the autoscaler: one series
 * of the Prometheus text the replica serves at path on its port. */
enum xp_scrape_kind {
	XP_SCRAPE_NONE,
	XP_SCRAPE_RATE, /* a counter: its increase per second between scrapes */
	XP_SCRAPE_GAUGE /* its value */
};
#define XP_SERIES_MAX 95

struct xp_scrape {
	uint8_t kind;
	char path[XP_PROBE_PATH_MAX + 1];
	char series[XP_SERIES_MAX + 1];
};

/* A service replica's checks (xp_svcref.chk). */
struct xp_svccheck {
	struct xp_probe ready;
	struct xp_scrape load; /* kind NONE: the service does not autoscale */
};

/* A replica job's service (xp_jobspec.svc); name NULL: not a replica. The
 * checks are held apart: inline they were 650 of a job's 1,240 bytes, in
 * every job - nearly none a replica - and in each of the finished jobs
 * kept for the API (1,000,000 of them: docs/results/scale.md). */
struct xp_svcref {
	char *name;
	uint32_t version;
	struct xp_svccheck *chk; /* with name: owned, never NULL; else NULL */
};

struct xp_jobspec {
	char *name;   /* NULL: "job-<id>" */
	char *tenant; /* NULL: the submitter's */
	char *queue;  /* NULL: "default" */
	char *node;   /* NULL: any node; else only this one */
	int32_t priority;
	char **command; /* argv, or one string run by /bin/sh -c when shell */
	uint16_t ncommand;
	uint8_t shell;
	char **args;
	uint16_t nargs;
	struct xp_attr *env;
	uint16_t nenv;
	char *workdir;
	uint32_t replicas; /* elastic: the current size (min until it runs) */
	uint32_t rmin, rmax; /* replicas: {min, max} - elastic when rmax > 0 (elastic.c) */
	uint8_t ckpt_signal; /* checkpoint.signal: sent to replicas a resize stops; 0: SIGUSR1 */
	int64_t ckpt_grace_ms; /* checkpoint.grace before SIGTERM; -1: 30 s */
	/* per replica */
	uint64_t cpu_milli, mem_mib;
	uint16_t dev_count, dev_milli;
	uint64_t dev_mem_mib;
	uint8_t dev_by_mem; /* memory alone on one device: a share sized by memory
			     * (memory / the device's x 1000 milli where it lands) */
	int8_t dev_class;   /* -1: any accelerator */
	uint8_t topo;
	char *vendor;
	char **models;
	uint8_t nmodels;
	uint64_t min_mem_mib;
	uint32_t min_cc;
	struct xp_attr *labels;
	uint16_t nlabels;
	int64_t duration_ms;	 /* emulated run time, -1 unset */
	int32_t exit_code;	 /* emulated exit code */
	uint8_t fail_on_lost;	 /* on_node_lost: fail (1) or requeue (0, the default) */
	uint8_t qos;		 /* enum xp_qos */
	int64_t time_limit_ms;	 /* stopped (failed) past it; 0: none */
	uint8_t colocate;	 /* enum xp_colocate */
	int64_t gang_timeout_ms; /* a job still pending after it fails, saying why; 0: none */
	struct xp_dep *deps;
	uint16_t ndeps;
	char *workflow;		/* the workflow it was submitted with, or NULL */
	int64_t deadline_ms;	/* deadline: an absolute time in ms since the epoch, 0: none */
	int64_t deadline_in_ms; /* or a duration from submission, 0: none */
	uint8_t hold_for_nodes; /* accepted though no registered node could run it */
	uint8_t vgpu_off;	/* vgpu: off - a GPU share announced, not enforced (trusted) */
	char *mig_profile;	/* devices.mig.profile: a MIG slice of one GPU, or NULL;
				 * XP_MIG_ANY: the smallest profile that fits the size */
	struct xp_svcref svc;	/* a service's replica (svcspec.h): set by the controller */
};

/* elastic.c: a job's size range and checkpoint (the edge reads and
 * writes them: src/edge/jobspec.c, canon.c). */
#define XP_CKPT_SIGNAL_DEFAULT 10    /* SIGUSR1 */
#define XP_CKPT_GRACE_DEFAULT  30000 /* ms */
/* The checkpoint signal and grace a resize uses (the defaults filled in). */
int xp_ckpt_signal(const struct xp_jobspec *s);
int64_t xp_ckpt_grace_ms(const struct xp_jobspec *s);

const char *xp_dep_type_name(int t);
/* The names of a QoS class, a colocation and a topology constraint (in
 * range: a parsed spec's), as the canonical JSON spells them. */
const char *xp_qos_name(int q);
const char *xp_coloc_name(int c);
const char *xp_topo_name(int t);
int xp_dep_type_parse(const char *s);

/* The rules a submitted spec obeys beyond what replay accepts (records
 * written before them still load): a CPU and a memory request above 0. */
int xp_jobspec_check_submit(const struct xp_jobspec *s, const char *name, char field[320],
			    struct xp_err *err);
void xp_jobspec_free(struct xp_jobspec *s);
/* Its canonical JSON is the edge's (src/edge/canon.c: xp_jobspec_to_json). */
/* The per-replica request, with vendor and models interned in syms. */
void xp_jobspec_request(const struct xp_jobspec *s, struct xp_strtab *syms, struct xp_request *r);
/* Does s ask for a MIG slice by size (devices.mig: any)? */
int xp_jobspec_mig_any(const struct xp_jobspec *s);
/*
 * A change to a pending job (PATCH /v1/jobs/ID and the job.update record):
 * any of name, priority, queue and time_limit, each checked exactly as in
 * a spec (the same parser reads it), nothing else. Plain values: nothing
 * to free.
 */
enum { XP_JP_NAME = 1, XP_JP_PRIORITY = 2, XP_JP_QUEUE = 4, XP_JP_TIME_LIMIT = 8 };
struct xp_jobpatch {
	uint32_t set; /* XP_JP_* */
	char name[XP_NAME_MAX + 1], queue[XP_NAME_MAX + 1];
	int32_t priority;
	int64_t time_limit_ms;
};
/* Apply p to s (the spec of a pending job). */
void xp_jobpatch_apply(const struct xp_jobpatch *p, struct xp_jobspec *s);
/* Is s a valid name (1..63 of [A-Za-z0-9._-], starting with a letter or digit)? */
int xp_name_ok(const char *s);

#endif
