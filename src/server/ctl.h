/*
 * ctl: the map of the controller (docs/design/controller.md). One struct
 * xp_ctl per server; the files below each own one concern:
 *
 *   ctl.c        start-up (store, replay, bootstrap, emulated nodes), stop
 *   owner.c      the owner thread: command queue, journaling, the cycle,
 *                emulated task completion, snapshots
 *   snapshot_bg.c snapshots serialised in a child process, off the owner
 *   http.c       the HTTP front on libmicrohttpd (an event loop on a
 *                thread pool): admission before the body, connection
 *                accounting, suspend/resume around the owner, replies
 *   http_acct.c  connection accounting: strangers per address, their
 *                header timeout (a reaper thread), admission marks
 *   http_routes.c the route table (method, path, admin, body limit) and
 *                the edge's parsers (src/edge) run on the pool thread
 *   http_wait.c  long polls (events, a node's assignments), server-sent
 *                events, job logs streamed from files, /metrics, the UI
 *   park.c       suspended requests parked per key with a deadline heap
 *   http_int.h   what the http*.c files share
 *   reply.c      JSON replies and the one error-reply family
 *   api_jobs.c   /v1/jobs handlers (submit, hold, release, update,
 *                explain, logs) and the job object
 *   api_workflows.c POST /v1/workflows: the owner's side of a DAG the
 *                edge parsed and ordered
 *   api_admin.c  nodes, devices, queues, tenants, tokens
 *   api_agents.c agent registration, heartbeats, assignments, task reports,
 *                logs; node liveness (suspect, lost, back)
 *   beat.c       a heartbeat and a task report parsed at the edge into
 *                struct xp_beat and struct xp_reports
 *   api_mig.c    a node's MIG instances from its heartbeat (warm ones
 *                steer placement) and a MIG GPU's view in /v1/devices
 *   api_services.c /v1/services: create, update (roll out, canary, promote,
 *                rollback), scale, delete, endpoints
 *   services.c   the owner keeps each service's replicas (submit, drain,
 *                stop) and reads the agents' port and readiness reports
 *   api_meter.c  usage, cost and prices
 *   api_advise.c the cost forecast and the savings advice
 *   events.c     the event ring (long polls and streams: http_wait.c)
 *   metrics.c    /metrics in the Prometheus text format: the controller's
 *                own series; metrics_pool.c the pool's (devices, nodes,
 *                queues, tenants)
 *   history.c    the pool's recent past for the dashboard, sampled every 10 s
 *   alert.c/.h   the alert engine (grouping, de-duplication, flap damping);
 *                alert_feed.c the controller's signals into it and the
 *                webhook sender
 *   optimise.c   --optimise mcts --budget 10ms: the time budget of the
 *                cycle's batch search turned into rollouts (calibration)
 *   tls.c        --tls-cert/--tls-key read and checked for libmicrohttpd,
 *                and the CA and server certificate of `xpool dev --tls`
 *   ui/          the dashboard page, embedded in the binary
 *
 * Threads: an HTTP pool (http.c; http_routes.c the route table and the
 * edge's parsers, http_wait.c long polls, event streams, logs, metrics,
 * park.c parked requests) admits, parses and validates, then hands a
 * struct xp_cmd to the owner thread and suspends the connection; only the
 * owner touches ctl->st. The store has its own thread; a command is
 * answered from the store's durability callback whenever records are in
 * flight (its own or others': a reply never shows state that is not
 * durable yet), which resumes its connection. Beside them: park.c's
 * timer (parked requests' deadlines) and http_acct.c's reaper (strangers
 * past the header timeout).
 */
#ifndef XP_CTL_H
#define XP_CTL_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/state/state.h"
#include "../edge/edge.h"
#include "../lib/err.h"
#include "../lib/rng.h"
#include "../lib/dueheap.h"
#include "../lib/vec.h"
#include "../store/store.h"

#define XP_CTL_DEFAULT_PORT 7700
/* --store etcd: the largest request body (and the default). etcd takes 1.5 MiB a request and
 * the store puts at most 1 MiB of records in one txn: a record is a body and what the
 * controller adds, so bodies stay well under it (a bigger record would fail the leader). */
#define XP_CTL_ETCD_BODY_MAX (768 * 1024)

struct xp_ctl_opts {
	const char *data;	  /* data directory (required) */
	const char *listen;	  /* "127.0.0.1:7700"; port 0 picks one */
	const char *cluster;	  /* descriptor of emulated nodes to register (xpool dev) */
	const char *policy;	  /* placement policy, default bestfit */
	uint32_t weights[XP_W_N]; /* the weighted policy's factors (thousandths); 0: the brief's */
	/* --optimise mcts (the policy is then mcts): the cycle's batch search
	 * (docs/design/batch-cycle.md), budget_rollouts per search, or with
	 * budget_us > 0 the search time of one cycle call, turned into
	 * rollouts by calibration (optimise.c) */
	int optimise;
	uint32_t budget_rollouts;
	int64_t budget_us;
	size_t body_limit;	  /* bytes, default 1 MiB */
	int tick_ms;		  /* owner timer, default 50 */
	size_t max_per_cycle;	  /* placement attempts per cycle call, default 2000 */
	uint64_t snapshot_every;  /* records between snapshots, default 20000 */
	size_t event_ring;	  /* events kept in memory, default 100000 */
	int sync;		  /* 1: fsync commits (default); 0: tests and benches only */
	size_t max_connections;	  /* default 16384 */
	size_t max_strangers;	  /* per address, before admission; default 64 */
	int header_timeout_ms;	  /* a stranger's time to send a request head, default 30000 */
	int heartbeat_ms;	  /* agents' heartbeat period, default 5000 */
	int suspect_beats;	  /* missed beats before a node is suspect, default 3 */
	int lost_ms;		  /* silence before a node is lost, default 40000 */
	int snapshot_inline;	  /* 1: serialise snapshots on the owner thread (no fork) */
	int64_t keep_finished_ms; /* finished jobs are forgotten after this, default 24 h */
	uint64_t max_finished;	  /* and beyond this many (oldest first), default 100000 */
	const char *alert_webhook; /* POST alert notifications here (alert_feed.c); NULL: log */
	int alert_group_wait_ms;   /* alert.h's options; 0: the defaults */
	int alert_interval_ms;
	int alert_repeat_ms;
	int alert_starved_ms; /* a queue waiting this long with nothing running (10 min) */
	int metrics_public;   /* /metrics without a token (the series without tenants) */
	int recover;	      /* open a damaged store anyway, dropping what fails its checks
			       * (xp_store_opts.recover; `--recover`); what went is on stderr */
	const char *store_vfs; /* SQLite VFS of the store; NULL: the default (tests) */
	/* HA: "etcd://HOST:PORT[,...][/PREFIX]" keeps the journal in etcd (docs/design/ha.md);
	 * start then waits until this controller leads (standby: called meanwhile, about every
	 * 100 ms; nonzero gives up). NULL: SQLite in data. */
	const char *store;
	const char *etcd_ca;   /* etcds://: the CA file etcd's members are verified against */
	const char *etcd_cert, *etcd_key; /* etcds://: the client certificate and its key */
	int lease_ms;	       /* etcd: the leader's lease TTL (default 5000, at least 2000) */
	const char *advertise; /* etcd: this controller's address, kept in the leader key */
	int (*standby)(void *arg, const char *leader, const char *why);
	void *standby_arg;
	const char *overcommit_memory; /* xp_oc_rules text for nodes that do not set their own
					* (`--overcommit-memory`); NULL: none */
	const char *tls_cert, *tls_key; /* PEM files: serve https:// only (tls.c); NULL: http:// */
	/* The journal failed (fail-stop): called once, on the owner thread, after the controller
	 * stopped being ready and began refusing every request; the process should stop (`xpool
	 * server` exits 1). NULL: nothing more (a test stops the controller itself). */
	void (*on_fatal)(void *arg);
	void *fatal_arg;
};

/* A job's output as the worker streams it (http.c), read from the files
 * the agents' uploads wrote, never on the owner thread: per part a header
 * line (may be empty) and a file (a missing one is empty). */
struct xp_logparts {
	size_t n;
	struct xp_logpart {
		char header[160];
		char path[4200];
	} * v;
};

/* ---- commands: one API request handed to the owner ---- */

struct xp_ctl;
struct xp_cmd;
typedef void (*xp_cmd_fn)(struct xp_ctl *ctl, struct xp_cmd *cmd);

#define XP_QUERY_MAX 16

/* Who a route is for (the route table, http_routes.c; docs/api.md "Auth").
 * An admin token may call every route. */
enum xp_route_scope {
	XP_ROUTE_TENANT, /* a tenant's token */
	XP_ROUTE_ADMIN,	 /* an admin's */
	XP_ROUTE_NODE,	 /* the {name} node's credential (POST /v1/agents: the node
			    its descriptor names) */
	XP_ROUTE_JOIN,	 /* a bootstrap token */
};

struct xp_cmd {
	xp_cmd_fn fn;
	int need; /* enum xp_route_scope */
	/* the request */
	const char *method;
	uint64_t id;   /* {id} in the path */
	long node;     /* a watch reply: the node index */
	char name[64]; /* {name} in the path */
	char token_sha[65];
	int has_token;
	const char *idem_key;
	const char *query_keys[XP_QUERY_MAX], *query_vals[XP_QUERY_MAX];
	int nquery;
	const char *body;
	size_t len;
	int body_json; /* 1 JSON, 0 YAML */
	void *payload; /* parsed at the edge; freed by payload_free */
	void (*payload_free)(void *);
	/* filled at admission and again by the owner before fn: who asks */
	long tenant;
	int admin;
	int scope;	     /* enum xp_scope of the token */
	/* a long command done over several owner turns: fn sets again to be
	 * queued once more (at the end, behind what came meanwhile); turns
	 * counts the turns it had (the admission checks run on the first) */
	int again, turns;
	char cred_node[254]; /* XP_SCOPE_NODE: the token's node */
	/* the reply */
	int status;
	char *reply; /* malloc'd */
	const char *reply_type;
	struct xp_logparts *logs; /* a logs reply: the worker streams these files */
	int journaled; /* records appended: reply once durable */
	char allow[64]; /* a 405: the methods the path takes */
	struct json_t *body_obj; /* EDGE_JSON: the body parsed at the edge */
	/* completion: on_done(cmd) when set (http.c resumes its connection),
	 * else the waiter of xp_owner_call is signalled */
	void (*on_done)(struct xp_cmd *cmd);
	void *done_arg;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
	struct xp_cmd *next;
};

/* ---- events (events.c) ---- */

struct xp_event {
	uint64_t seq;
	int64_t tenant; /* -1 everyone, -2 admin only, else the tenant index */
	char *json;
	char type[24];
};

struct xp_events;
struct xp_events *xp_events_create(size_t cap);
void xp_events_destroy(struct xp_events *e);
/* Add an event (owner thread); json is taken. */
void xp_events_add(struct xp_events *e, uint64_t seq, int64_t tenant, const char *type, char *json);
/* Everything up to seq is durable now: wake the readers. */
void xp_events_durable(struct xp_events *e, uint64_t seq);
void xp_events_stop(struct xp_events *e);
/* Copy visible events after since (at most limit), waiting up to wait_ms for
 * one; *next gets the seq to resume from. Returns a malloc'd JSON array, or
 * NULL when since is older than what is kept (then *oldest is set). */
char *xp_events_read(struct xp_events *e, uint64_t since, size_t limit, int wait_ms, long tenant,
		     int admin, uint64_t *next, uint64_t *oldest);
/* For server-sent events: the next visible event after since as an SSE
 * frame (malloc'd), waiting up to wait_ms; NULL on timeout or stop. */
char *xp_events_next_sse(struct xp_events *e, uint64_t *since, int wait_ms, long tenant, int admin,
			 int *stopped, int *gone);

/* ---- metrics (metrics.c) ---- */

#define XP_HIST_BUCKETS 14
struct xp_hist {
	uint64_t count[XP_HIST_BUCKETS + 1];
	double sum;
	uint64_t n;
};
void xp_hist_add(struct xp_hist *h, double seconds);
extern const double xp_hist_bounds[XP_HIST_BUCKETS];

struct xp_metrics {
	struct xp_hist sched_latency; /* submit -> start */
	struct xp_hist cycle;	      /* one cycle call */
	uint64_t http[6];	      /* replies by class: 1xx..5xx, [0] other */
	uint64_t preemptions, starts; /* job.preempt and job.start records (owner) */
	uint64_t gpu_ooms[2];	      /* vGPU allocations refused: at a job's cap, by a
				       * full device (heartbeats; owner) */
	pthread_mutex_t mu;	      /* http[] is bumped by workers */
};
/* The exposition text (owner); tenants: the queue and tenant series too. */
char *xp_metrics_render(struct xp_ctl *ctl, int tenants);

/* metrics.c: /metrics served off the owner. The owner renders the text
 * when a scrape asked for it and the last one is older than
 * XP_METRICS_EVERY_MS, publishing two reference-counted copies (with and
 * without the per-queue and per-tenant series); a scrape takes a reference
 * and sends it without a copy, so many scrapers cost one text each. */
#define XP_METRICS_EVERY_MS 2000
struct xp_mtext {
	int refs; /* under xp_metrics_pub.mu */
	struct xp_metrics_pub *pub;
	size_t len;
	char text[];
};
struct xp_metrics_pub {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct xp_mtext *full, *open; /* the newest of each; NULL before the first */
	int64_t at;		      /* when they were rendered (ms) */
	int wanted;		      /* a scrape asked since */
};
/* Owner: render and publish when asked and due. */
void xp_metrics_publish(struct xp_ctl *ctl, int64_t now);
/* Worker: a reference to the newest text (full: with the tenant series),
 * asking the owner for a fresh one when it is old; waits up to wait_ms
 * for the first. NULL when none came. Release with xp_mtext_release. */
struct xp_mtext *xp_metrics_take(struct xp_ctl *ctl, int full, int wait_ms);
void xp_mtext_release(void *m);
void xp_metrics_pub_destroy(struct xp_metrics_pub *p);

/* history.c: the pool sampled every 10 s for a day, for the dashboard */
struct xp_sample {
	int64_t at;
	double alloc, frag;
	uint32_t running, pending;
};
struct xp_history {
	struct xp_sample *ring;
	size_t head, n;
	int64_t next;
};
/* metrics_pool.c: the per device, node, queue and tenant series */
void xp_metrics_pool(struct xp_ctl *ctl, struct xp_sb *sb, int tenants);

/* ---- the controller ---- */

/* http_acct.c: connections that have not passed admission (strangers),
 * per address, and their timeout */
struct connrec;
struct xp_http_acct {
	pthread_mutex_t mu;
	struct ipcount **ips; /* a hash table of addresses holding strangers */
	size_t nips;
	size_t unauth;	  /* in all */
	size_t total;	  /* every open connection: --max-connections is held here,
			     not by libmicrohttpd's limit, which it splits evenly
			     over its pool threads */
	uint64_t refused; /* connections the accept policy refused */
	uint64_t reaped;  /* strangers closed after the header timeout */
	struct connrec *shead, *stail; /* strangers by their last request head */
	pthread_t reaper;
	pthread_cond_t reaper_cv;
	int reaper_started, reaper_stop;
};

/* park.c: a request parked until a wake of its key, its deadline or the
 * stop; the connection is suspended meanwhile and resumed exactly once
 * (the handler runs again). Keys: a node's assignments, the event ring. */
#define XP_PARK_NODE(n) ((uint32_t)(n))
#define XP_PARK_EVENTS 0xffffffffu
#define XP_PARK_SERVICES 0xfffffffeu /* services' endpoints (xp_ep_bump) */
enum { XP_PARK_WOKEN = 1, XP_PARK_EXPIRED, XP_PARK_STOPPED };
struct MHD_Connection;
struct xp_park {
	struct MHD_Connection *c;
	int64_t deadline; /* ms; 0: none */
	uint32_t key;
	uint8_t parked, woken;
	struct xp_park *next, *prev;
	size_t heap_i;
};
struct xp_parking;
int xp_park_start(struct xp_ctl *ctl, struct xp_err *err);
/* Read before looking at the state; park only if no wake came since. */
uint64_t xp_park_gen(struct xp_ctl *ctl, uint32_t key);
/* Suspend c (from its handler or content reader) and park it: 1; 0 when
 * a wake of key came since gen (look again), or the controller stops. */
int xp_park_if(struct xp_ctl *ctl, struct xp_park *p, struct MHD_Connection *c, uint32_t key,
	       uint64_t gen, int64_t deadline);
void xp_park_wake(struct xp_ctl *ctl, uint32_t key);
size_t xp_park_count(struct xp_ctl *ctl);
/* Resume every parked request; later parks are refused. */
void xp_park_stop(struct xp_ctl *ctl);
void xp_park_destroy(struct xp_ctl *ctl);

struct xp_ctl {
	struct xp_ctl_opts o;
	char *own[11]; /* copies of o's strings */
	struct xp_oc_rules oc; /* o.overcommit_memory, parsed */
	struct xp_store *store;
	struct xp_state *st;
	struct xp_events *ev;
	struct xp_metrics m;
	struct xp_metrics_pub mx; /* /metrics as published (metrics.c) */
	struct MHD_Daemon *http;
	/* requests from their first byte to their reply's last (http.c): a stop waits for them,
	 * a second at most, so that a reply on its way - a 500 included - is not cut off */
	pthread_mutex_t http_mu;
	pthread_cond_t http_cv;
	int http_busy;		      /* requests between admission and their end */
	struct xp_http_acct acct;     /* connections before admission (http.c) */
	struct xp_parking *parking;   /* parked long polls (park.c) */
	uint16_t port;
	char addr[64];
	char *tls_pem[2]; /* the certificate and key libmicrohttpd serves with (http.c) */
	pthread_t owner;
	int owner_started;
	pthread_mutex_t qmu;
	pthread_cond_t qcv;
	struct xp_cmd *qhead, *qtail;
	int stopping;
	atomic_uint_least64_t node_epoch; /* bumped by every node.* record: a
					     cached watch reply older is not used */
	size_t start_nodes, start_jobs; /* at start, before the owner ran (for the banner) */
	atomic_int ready;      /* serving; 0 while starting, stopping, or once the journal failed */
	int fatal;	       /* the store failed: refuse everything (owner thread) */
	/* HA (--store etcd): a follower applies what the leader journals (ctl.c xp_ctl_follow),
	 * serves reads, and sends writes to the leader (307); lead_won: its campaign won, the
	 * owner promotes it (xp_ctl_promote); restart: start again from the store (a follower
	 * that fell behind a snapshot) */
	atomic_int follower, lead_won, restart;
	_Atomic int64_t follow_ok_ms; /* the last poll of the leader's journal that answered */
	int64_t follow_next;	      /* owner: the next poll (ms) */
	struct xp_dueheap emu; /* emulated tasks by when they end */
	int64_t overdue_next;  /* when to look for time limits and gang timeouts again */
	uint64_t since_snapshot;
	struct {	      /* the snapshot being written by a child (snapshot_bg.c) */
		pid_t pid;    /* 0: none */
		uint64_t seq; /* the state's seq it holds */
		uint64_t started_ns, fork_ns, last_ns, done;
	} snap;
	struct xp_rng rng;
	char admin_token[80]; /* set when this start created it */
	/* a copy of the live tokens for workers, so a bad token is refused at
	 * the edge before any body is parsed; the owner refreshes it */
	pthread_rwlock_t auth_lock;
	struct xp_auth_ent *auth;
	size_t nauth;
	/* agents: per node liveness (owner) and assignment versions (shared) */
	XP_VEC(struct xp_live) live;
	pthread_mutex_t watch_mu;
	/* a node's long poll parks on XP_PARK_NODE(n) (park.c) */
	XP_VEC(uint64_t) assign_ver; /* bumped when a node's assignments change (watch_mu) */
	struct xp_alert_feed *alerts; /* alert_feed.c */
	int64_t workload_next;	      /* when to estimate the target workload M again */
	struct xp_history history;    /* history.c */
	struct xp_intmap energy;      /* job id -> struct xp_energy: measured joules of the
				       * running attempt, from the agents' power reports */
	struct xp_intmap gpu_use;     /* job id -> struct xp_gpu_use: what the running
				       * attempt's replicas hold and spend on their GPUs,
				       * from the agents' heartbeats (not journaled) */
	struct xp_intmap svc_live;    /* job id -> struct xp_svc_rep: a service replica's
				       * port and readiness (heartbeats), and its drain */
	uint64_t ep_version;	      /* bumped when any service's endpoints change
				       * (xp_ep_bump; read by pool threads: atomic) */
	int64_t svc_settle_until;     /* services.c: no replica is taken away before (ms):
				       * after a start, readiness is unknown until the
				       * agents' first heartbeats */
	int64_t svc_sweep_at;	      /* services.c: the next look for orphan replicas */
	int64_t live_next;	      /* owner.c: the next walk of node liveness (ms) */
	int64_t svc_next;	      /* owner.c: the next services tick (ms) */
	int64_t mig_plan_next;	      /* owner.c: the next MIG mode plan (ms) */
	uint64_t sched_next;	      /* owner.c: no cycle rebuilds the scheduler before (mono ns) */
	struct xp_opt_cal {	      /* optimise.c: time budget -> rollouts */
		double ns_per;	      /* EWMA: cycle-call ns per search placement */
		double jobs;	      /* EWMA: jobs searched per call that searched */
		uint32_t rollouts;    /* the budget of the next call */
		size_t max_tried;     /* jobs tried per call with a time budget */
		int warm;	      /* ns_per measured */
		struct xp_state_batch before; /* the counters before the call */
	} opt;
	/* services.c: every service's endpoints as JSON, published by the owner
	 * when they change, for the streams read on pool threads (ep_mu) */
	pthread_mutex_t ep_mu;
	struct xp_ep_pub {
		char name[XP_NAME_MAX + 1];
		char *json;
		uint64_t version;
	} *ep_pub;
	size_t nep_pub;
	uint64_t ep_published; /* the version last published (owner) */
	struct xp_scaler *scalers;    /* services.c: one per autoscaled service */
	size_t nscalers;
};

/* services.c: a service replica as its agent and the owner see it (not
 * journaled: the next heartbeat after a restart says it again) */
struct xp_svc_rep {
	uint32_t attempt;
	uint16_t port;	    /* its agent's pick; 0: not said yet */
	uint8_t ready;	    /* its readiness check passes */
	int64_t seen;	    /* ms of the last report */
	int64_t drain_at;   /* ms: out of the endpoints since (scale-down); 0: not */
	int64_t stop_at;    /* ms: cancelled from then on; 0: not draining */
	double load;	    /* its autoscaling signal, as its agent read it */
	int64_t load_at;    /* ms of that reading; 0: none */
};

/* One running attempt's GPU use, per replica, as its vGPU accounts say. */
struct xp_gpu_use {
	uint32_t attempt, nrep;
	struct xp_gpu_rep {
		int64_t at;		    /* ms of the last report; 0 = none */
		uint64_t mem_mib, peak_mib; /* held now, the most at once */
		uint32_t ooms, dev_ooms;    /* refused at its cap, refused by a full device */
		int64_t spent_ns, clock_ns; /* device time spent, device clock: cumulative */
		int32_t milli;		    /* share used between the last two reports; -1 unknown */
	} rep[];
};

struct xp_energy {
	uint32_t attempt;
	double joules;
	int64_t ms; /* of the run that the reports covered */
};
struct xp_live {
	int64_t last_seen; /* ms; 0 = never (emulated) */
	char addr[64];	   /* where its service replicas are reached (heartbeat) */
	uint64_t gpu_full;  /* devices whose gpu_out_of_memory alert fires (api_agents.c) */
	uint8_t suspect;
	uint16_t ndev;
	struct xp_devstat {
		int32_t util_pct, power_w, temp_c;
		int64_t mem_used_mib;
	} * dev;
	uint16_t nmig;
	struct xp_live_mig { /* a MIG GPU instance the last heartbeat reported (api_mig.c) */
		uint8_t dev, id, start, size, owned, warm;
		uint16_t gi;
		char uuid[96];
	} * mig;
};

/* api_mig.c: a heartbeat's "mig" list checked into *out (malloc'd; NULL
 * when absent): its length, or -1 with field set; then kept for node n,
 * its warm instances handed to the scheduler as a hint (takes v) */
int xp_mig_beat_check(json_t *arr, const struct xp_node *node, struct xp_live_mig **out,
		      char *field, size_t fn);
void xp_mig_beat_apply(struct xp_ctl *ctl, long n, struct xp_live_mig *v, int k);
/* The MIG view of device d of node n ({slices, instances, ...}), NULL when
 * it is not a MIG GPU with a slice lattice; st->sched must be fresh */
json_t *xp_mig_dev_json(struct xp_ctl *ctl, size_t n, uint16_t d);
/* MIG mode changes: node n's leave, reserved and refused change into o
 * (GET /v1/nodes); the reserved change into an assignments reply; the
 * agent's answer (edge parser and owner handler); the planner, after each
 * cycle (owner thread) */
void xp_mig_mode_node_json(struct xp_ctl *ctl, size_t n, json_t *o);
void xp_mig_mode_assign(struct xp_ctl *ctl, size_t n, json_t *reply);
int xp_edge_mig_mode(struct xp_cmd *cmd);
void xp_api_node_mig_mode(struct xp_ctl *ctl, struct xp_cmd *cmd);
void xp_mig_mode_plan(struct xp_ctl *ctl);

/* api_agents.c: a heartbeat's power over the elapsed ms, shared among the
 * replicas holding each device; owner.c journals job.energy when the run ends */
void xp_energy_beat(struct xp_ctl *ctl, uint32_t node, const struct xp_devstat *ds,
		    int64_t elapsed_ms);

/* snapshot_bg.c: snapshots written by a forked child, off the owner thread */
void xp_snap_start(struct xp_ctl *ctl);
void xp_snap_poll(struct xp_ctl *ctl, int block);

/* A small request body read at the edge (the route's parse function, on
 * a pool thread; no state is read there): what its handler needs, typed. */
struct xp_small {
	struct json_t *o;      /* job counters: the checked map */
	int state, scope;      /* node patch: the state (-1: unchanged); token: its scope;
				* a node's mig-mode answer: ok */
	int mig_leave;	       /* node patch: mig_mode_change allow 1, deny 0, -1: unchanged */
	uint32_t replicas;     /* service scale; a node's mig-mode answer: the device */
	int has_reason;
	char name[XP_NAME_MAX + 1], tenant[XP_NAME_MAX + 1], node[XP_NAME_MAX + 1];
	char reason[256]; /* ...; a node's mig-mode answer: why */
};
void xp_small_free(void *small);
int xp_edge_node_patch(struct xp_cmd *cmd);
int xp_edge_tenant(struct xp_cmd *cmd);
int xp_edge_join(struct xp_cmd *cmd);
int xp_edge_token(struct xp_cmd *cmd);
int xp_edge_scale(struct xp_cmd *cmd);
int xp_edge_counters(struct xp_cmd *cmd);

/* beat.c: a heartbeat parsed at the edge (EDGE_BEAT); the owner checks
 * the device count and the MIG instances against the node, and applies it */
#define XP_GPU_REPORTS_MAX 4096 /* replicas one heartbeat may report */
/* One entry of a heartbeat's "tasks": a replica's vGPU account. */
struct xp_gpu_report {
	json_int_t job, replica, attempt, mem, peak, ooms, dev_ooms, spent, clock;
};
struct xp_beat {
	struct json_t *o; /* the body: "mig" is read by the owner */
	uint16_t ndev;
	uint8_t ok[XP_MAX_NODE_DEVS];	     /* health is not unhealthy */
	const char *why[XP_MAX_NODE_DEVS]; /* into o; NULL: none */
	struct xp_devstat ds[XP_MAX_NODE_DEVS];
	struct xp_gpu_report *rep;
	int nrep;
	struct xp_svc_report *svc;
	int nsvc;
	const char *addr; /* into o; NULL: not said */
};
int xp_beat_parse(struct xp_cmd *cmd);
void xp_beat_free(void *beat);
/* A task report's replica exits, parsed at the edge (EDGE_REPORTS): each
 * checked field by field; the owner checks them against the state. */
struct xp_task_report {
	json_int_t job, attempt, replica, epoch;
	struct xp_exit x; /* x.detail points into the body */
};
struct xp_reports {
	struct json_t *o;
	size_t n;
	struct xp_task_report *v;
};
int xp_reports_parse(struct xp_cmd *cmd);
void xp_reports_free(void *reports);

/* services.c: the owner keeps each service's replicas (every tick), and
 * reads what agents say of them */
void xp_services_tick(struct xp_ctl *ctl, int64_t now);
/* A heartbeat's "services": [{job, replica, attempt, port, ready}], checked
 * whole (-1 with field set) before any is applied. */
struct xp_svc_report;
int xp_svc_reports_check(struct json_t *arr, struct xp_svc_report **out, char *field,
			 size_t fn);
void xp_svc_reports_apply(struct xp_ctl *ctl, long node, struct xp_svc_report *r, int n,
			  int64_t now);
/* A service as the API shows it; its ready replicas as endpoints. */
struct json_t *xp_service_json(struct xp_ctl *ctl, const struct xp_service *s, int64_t now);
struct json_t *xp_service_endpoints(struct xp_ctl *ctl, const struct xp_service *s);
void xp_svc_live_free(struct xp_ctl *ctl);
/* The endpoints changed: a new version, and the long polls on it woken. */
void xp_ep_bump(struct xp_ctl *ctl);
uint64_t xp_ep_version(struct xp_ctl *ctl);
/* The last published endpoints of service name (malloc'd JSON) and their
 * version, or NULL when there is no such service. */
char *xp_ep_published(struct xp_ctl *ctl, const char *name, uint64_t *version);
void xp_scalers_free(struct xp_ctl *ctl);

/* api_services.c: /v1/services */
void xp_api_services_list(struct xp_ctl *, struct xp_cmd *);
void xp_api_services_create(struct xp_ctl *, struct xp_cmd *);
void xp_api_service_get(struct xp_ctl *, struct xp_cmd *);
void xp_api_service_delete(struct xp_ctl *, struct xp_cmd *);
void xp_api_service_scale(struct xp_ctl *, struct xp_cmd *);
void xp_api_service_update(struct xp_ctl *, struct xp_cmd *);
void xp_api_service_promote(struct xp_ctl *, struct xp_cmd *);
void xp_api_service_rollback(struct xp_ctl *, struct xp_cmd *);
void xp_api_service_endpoints(struct xp_ctl *, struct xp_cmd *);

/* api_agents.c */
void xp_api_agents_register(struct xp_ctl *, struct xp_cmd *);
void xp_api_agents_join(struct xp_ctl *, struct xp_cmd *);
/* api_admin.c: journal a new token and reply 201 with its secret. */
void xp_token_mint(struct xp_ctl *ctl, struct xp_cmd *cmd, const char *tenant, const char *name,
		   int scope, const char *node);
void xp_api_node_heartbeat(struct xp_ctl *, struct xp_cmd *);
void xp_api_node_assignments(struct xp_ctl *, struct xp_cmd *);
void xp_api_node_tasks(struct xp_ctl *, struct xp_cmd *);
void xp_api_node_logs(struct xp_ctl *, struct xp_cmd *);
/* Owner tick: mark silent agent nodes suspect, lose the silent ones. */
void xp_live_check(struct xp_ctl *ctl, int64_t now);
/* Owner: node n's assignments changed (its long polls are woken). */
void xp_watch_bump(struct xp_ctl *ctl, uint32_t node);
/* A replica's uploaded output: DATA/logs/<job>-<replica>.<out|err>. */
void xp_log_path(const struct xp_ctl *ctl, uint64_t job, uint32_t replica, int err_stream,
		 char *buf, size_t len);
/* Removes both streams of a replica's output and their attempt marks. */
void xp_log_unlink(const struct xp_ctl *ctl, uint64_t job, uint32_t replica);

struct xp_auth_ent {
	char sha256[65];
	long tenant;
	int scope; /* enum xp_scope */
	char node[254];
};

/* owner.c: refresh ctl->auth from the state (owner thread or start-up). */
void xp_auth_refresh(struct xp_ctl *ctl);
/* Any thread: is cmd's token known, and may it call a route for cmd->need
 * (with cmd->name the path's node)? 0 with cmd's tenant, admin, scope and
 * cred_node filled; else XP_EAUTH (no or unknown token) or XP_EPERM, the
 * reason in err. */
int xp_auth_admit(struct xp_ctl *ctl, struct xp_cmd *cmd, struct xp_err *err);

/* ctl.c, HA: apply what the leader journaled since the last poll (owner thread; the number
 * of records, or < 0); become the leader once the campaign won. */
long xp_ctl_follow(struct xp_ctl *ctl, struct xp_err *err);
int xp_ctl_promote(struct xp_ctl *ctl, struct xp_err *err);

/* ---- tls.c: the controller's certificate; xpool dev's CA ---- */

/* Read --tls-cert and --tls-key into new buffers (the caller frees them),
 * checked: PEM, and the key is the certificate's. Errors name the flag,
 * the file and the reason; XP_EUNSUPP when libmicrohttpd has no TLS. */
int xp_tls_server_load(const char *cert_file, const char *key_file, char **cert_pem,
		       char **key_pem, struct xp_err *err);
/* A self-signed CA named name: its certificate (0644) and key (0600). */
int xp_tls_make_ca(const char *cert_file, const char *key_file, const char *name,
		   struct xp_err *err);
/* A server certificate for hosts[0..n) (DNS names and IP literals, as
 * subject alternative names) signed by the CA of ca_cert and ca_key. */
int xp_tls_make_cert(const char *ca_cert, const char *ca_key, const char *const *hosts, size_t n,
		     const char *cert_file, const char *key_file, struct xp_err *err);
struct xp_tls_files {
	char dir[4200], ca[4300], ca_key[4300], cert[4300], key[4300];
};
/* `xpool dev --tls`: DATA/tls/ (0700) with ca.pem, ca.key, server.pem and
 * server.key (for localhost, 127.0.0.1, ::1 and listen_host), each made
 * unless it is there already (a restart keeps the CA its clients trust). */
int xp_tls_dev_files(const char *data, const char *listen_host, struct xp_tls_files *f,
		     struct xp_err *err);

/* ctl.c */
int xp_ctl_start(const struct xp_ctl_opts *o, struct xp_ctl **out, struct xp_err *err);
void xp_ctl_stop(struct xp_ctl *ctl);
int64_t xp_ctl_now(void);

/* owner.c */
int xp_owner_start(struct xp_ctl *ctl, struct xp_err *err);
void xp_owner_stop(struct xp_ctl *ctl);
/* Hand cmd to the owner and wait for the reply (tests, tools). */
void xp_owner_call(struct xp_ctl *ctl, struct xp_cmd *cmd);
/* Hand cmd to the owner; cmd->on_done(cmd) runs once it is answered (on
 * the owner or the store thread), maybe before this returns. */
void xp_owner_submit(struct xp_ctl *ctl, struct xp_cmd *cmd);
/* Owner thread: apply a record, journal it, publish its event. 0 or < 0
 * (refused: nothing changed, the error in err). body is taken. */
int xp_ctl_journal(struct xp_ctl *ctl, const char *type, char *body, struct xp_err *err);
/* Journal node.add for node of c (source enum xp_node_source), with the
 * server's memory overcommit on the devices that set none (the record
 * carries it, so a replay never depends on today's flags). */
int xp_ctl_add_node(struct xp_ctl *ctl, const struct xp_cluster *c, const struct xp_node *node,
		    int source, struct xp_err *err);
/* The same for a job.submit of job id: its record is encoded from spec,
 * and spec itself is applied (xp_state_submit), not the record parsed
 * again. spec is taken (zeroed), journaled or not. */
int xp_ctl_journal_submit(struct xp_ctl *ctl, uint64_t id, const char *tenant, const char *key,
			  struct xp_jobspec *spec, struct xp_err *err);
/* After replay: emulated tasks of running jobs get their completion time. */
void xp_emu_schedule(struct xp_ctl *ctl, const struct xp_job *j);
/* Build the event JSON of an applied record. */
char *xp_event_json(struct xp_ctl *ctl, uint64_t seq, int64_t at, const struct xp_event_info *ev);

/* http.c */
int xp_http_start(struct xp_ctl *ctl, struct xp_err *err);
void xp_http_stop(struct xp_ctl *ctl);
/* http_acct.c: the per-address table's memory (at the controller's end) */
void xp_http_acct_free(struct xp_http_acct *a);

/* reply.c: the one family of replies */
void xp_reply_json(struct xp_cmd *cmd, int status, char *json);
/* The compact text of o, members in insertion order, reals to 15 digits
 * (0.04, not 0.040000000000000001); releases o. */
char *xp_json_take(json_t *o);
void xp_reply_text(struct xp_cmd *cmd, int status, const char *type, char *text);
void xp_reply_error(struct xp_cmd *cmd, int code, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void xp_reply_err(struct xp_cmd *cmd, const struct xp_err *err, const char *field);
char *xp_error_body(int code, const char *field, const char *msg);
const char *xp_cmd_query(const struct xp_cmd *cmd, const char *key);
/* Parse the body as a JSON object whose keys are all in allowed. */
struct json_t;
struct json_t *xp_cmd_body_object(struct xp_cmd *cmd, const char *const *allowed);

/* Reply and return from a void handler. */
#define FAIL(...)                                                                                  \
	do {                                                                                       \
		xp_reply_error(__VA_ARGS__);                                                       \
		return;                                                                            \
	} while (0)
#define FAIL_ERR(...)                                                                              \
	do {                                                                                       \
		xp_reply_err(__VA_ARGS__);                                                         \
		return;                                                                            \
	} while (0)
#define DONE_JSON(...)                                                                             \
	do {                                                                                       \
		xp_reply_json(__VA_ARGS__);                                                        \
		return;                                                                            \
	} while (0)

/* api_jobs.c / api_admin.c: handlers, run on the owner thread */
void xp_api_jobs_list(struct xp_ctl *, struct xp_cmd *);
void xp_api_jobs_submit(struct xp_ctl *, struct xp_cmd *);
void xp_api_job_get(struct xp_ctl *, struct xp_cmd *);
void xp_api_job_cancel(struct xp_ctl *, struct xp_cmd *);
void xp_api_job_hold(struct xp_ctl *, struct xp_cmd *);
void xp_api_job_release(struct xp_ctl *, struct xp_cmd *);
void xp_api_job_update(struct xp_ctl *, struct xp_cmd *);
void xp_api_job_explain(struct xp_ctl *, struct xp_cmd *);
void xp_api_job_logs(struct xp_ctl *, struct xp_cmd *);
/* the job {id} of the path if the asker may see it; else replied 404 and NULL */
struct xp_job *xp_api_visible_job(struct xp_ctl *, struct xp_cmd *);
/* alert_feed.c: signals from applied records and periodic rules, the webhook sender */
struct xp_event_info;
int xp_alert_feed_start(struct xp_ctl *ctl, struct xp_err *err);
void xp_alert_feed_stop(struct xp_ctl *ctl);
void xp_alert_feed_record(struct xp_ctl *ctl, const char *type, const struct xp_event_info *ev,
			  int64_t now);
void xp_alert_feed_tick(struct xp_ctl *ctl, int64_t now);
/* A heartbeat's news for device d of node n: firing when an allocation
 * there was refused by the full device since the last beat. */
void xp_alert_feed_gpu_oom(struct xp_ctl *ctl, uint32_t n, uint16_t d, int firing);
void xp_api_alerts(struct xp_ctl *, struct xp_cmd *);
struct xp_alert_stats;
void xp_alert_feed_stats(struct xp_ctl *ctl, struct xp_alert_stats *out);
void xp_history_sample(struct xp_ctl *ctl, int64_t now);
void xp_history_free(struct xp_ctl *ctl);
void xp_api_history(struct xp_ctl *, struct xp_cmd *);
/* api_advise.c */
void xp_api_forecast(struct xp_ctl *, struct xp_cmd *);
void xp_api_advice(struct xp_ctl *, struct xp_cmd *);
/* api_advise.c: the idle-guarantee advice over st's ledger at now (its
 * items and notes appended to the arrays): a guarantee counts as used
 * when others borrowed what it left idle. For tests without a clock. */
void xp_advice_idle_quota(const struct xp_state *st, int64_t now, json_t *items, json_t *notes);
/* api_meter.c */
void xp_api_usage(struct xp_ctl *, struct xp_cmd *);
void xp_api_prices_get(struct xp_ctl *, struct xp_cmd *);
void xp_api_prices_put(struct xp_ctl *, struct xp_cmd *);
void xp_api_job_counters(struct xp_ctl *, struct xp_cmd *);
void xp_api_nodes_list(struct xp_ctl *, struct xp_cmd *);
void xp_api_nodes_add(struct xp_ctl *, struct xp_cmd *);
void xp_api_node_get(struct xp_ctl *, struct xp_cmd *);
void xp_api_node_patch(struct xp_ctl *, struct xp_cmd *);
void xp_api_node_delete(struct xp_ctl *, struct xp_cmd *);
void xp_api_devices(struct xp_ctl *, struct xp_cmd *);
void xp_api_queues_list(struct xp_ctl *, struct xp_cmd *);
void xp_api_queues_create(struct xp_ctl *, struct xp_cmd *);
void xp_api_queue_get(struct xp_ctl *, struct xp_cmd *);
void xp_api_workflows_submit(struct xp_ctl *, struct xp_cmd *);
/* api_jobs.c, shared with workflows: the job object; the checks of a spec
 * against the state that the record would refuse less clearly (tenant,
 * node, queue), fields named after prefix at; 0, or -1 with the reply sent */
struct xp_job;
struct xp_jobspec;
json_t *xp_api_job_json(struct xp_ctl *ctl, const struct xp_job *j);
int xp_api_submit_check(struct xp_ctl *ctl, struct xp_cmd *cmd, struct xp_jobspec *spec,
			const char *at, long *tenant);
void xp_api_queue_patch(struct xp_ctl *, struct xp_cmd *);
void xp_api_queue_delete(struct xp_ctl *, struct xp_cmd *);
void xp_api_tenants_list(struct xp_ctl *, struct xp_cmd *);
void xp_api_tenants_create(struct xp_ctl *, struct xp_cmd *);
void xp_api_tokens_list(struct xp_ctl *, struct xp_cmd *);
void xp_api_tokens_create(struct xp_ctl *, struct xp_cmd *);
void xp_api_token_delete(struct xp_ctl *, struct xp_cmd *);
/* A new secret "PREFIX_<64 hex>" and its SHA-256: prefix "xpt" for tenants'
 * and admins' tokens, "xpn" node credentials, "xpb" bootstrap tokens. */
int xp_token_new(const char *prefix, char token[80], char sha[65]);

/* optimise.c: before a cycle call, the batch budget (st->batch.budget) and
 * the jobs the call may try; after it, what it cost (ns of the call) */
size_t xp_opt_before(struct xp_ctl *ctl);
void xp_opt_after(struct xp_ctl *ctl, uint64_t ns);

#endif
