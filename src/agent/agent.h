/*
 * agent: the map of `xpool agent` - one per machine. It discovers the
 * machine's devices (src/hal), registers the node with the controller,
 * heartbeats, watches its assignments (a long poll, no busy polling), runs
 * each assigned replica as a real process and reports how it ended.
 *
 *   agent.c   registration, the heartbeat and watch loops, reconciliation,
 *             the exit reports (code, signal, reason)
 *   task.c    one task: the shim, its process group, output files,
 *             signals, exit status and reason, adoption after a restart
 *   cgroup.c  CPU and memory limits on cgroup v1 and v2, the CPUs handed
 *             out exclusively, OOM kills (cgroup.h)
 *   vgpu_limits.c  a GPU share enforced: libxpool-vgpu.so preloaded with
 *             the replica's memory cap and compute share, and a replica
 *             that never loaded it ended (reason "limits")
 *   serve.c   a service's replica: the port it gets (XPOOL_PORT) and its
 *             readiness check, run by the prober thread; both reported
 *             in the heartbeat
 *   mig_live.c  a replica's MIG instance: adopted or created at the
 *             reserved placement, CUDA_VISIBLE_DEVICES=MIG-<uuid>,
 *             destroyed when it ends (IN_USE: retried every tick)
 *   mig_keep.c  the MIG instances xpool created (WORK/mig-owned: only
 *             those are ever destroyed), kept warm after their replica
 *             (--mig-keep-warm), the reconciler of orphans, and the
 *             heartbeat's list of a node's instances
 *   output.c  HA: ended tasks' output sent again to a new leader
 *             (--output-resend), which lacks what the old one took
 *   mig_mode.c  the controller's orders to turn a GPU's MIG mode on or
 *             off (only with --mig-mode-change; off: xpool's idle
 *             instances destroyed first, anyone else's refuse it), and
 *             the report of each
 *
 * A task is run by a shim: the agent forks it, the shim starts a new
 * session and waits until the agent has moved it into the task's cgroups,
 * then forks the task, waits for it and writes its exit status into the
 * task's folder. A task whose limits cannot be set is not started: it is
 * reported failed with reason "limits" (unless the agent runs with
 * --no-limits, on purpose). The shim outlives
 * an agent restart, so a restarted agent finds its tasks (folder + shim pid
 * + the shim's start time, against pid reuse) and does not run them again.
 * Cancellation is SIGTERM to the task's process group, a grace period, then
 * SIGKILL; an elastic job's replica gets its checkpoint signal first and
 * SIGTERM after the checkpoint grace. A resize gives every replica a new
 * epoch: the old epoch's tasks leave the assignments and are stopped so,
 * and the new ones start once the job's older tasks on the node are gone
 * (docs/design/agent.md, "Elastic jobs").
 */
#ifndef XP_AGENT_H
#define XP_AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "../lib/err.h"
#include "../lib/strbuf.h"
#include "../lib/vec.h"

struct xp_hal;
struct xp_client;
struct json_t;

struct xp_agent_opts {
	const char *server; /* controller address */
	const char *ca;	    /* https://: the CA file (NULL: the system's CAs) */
	const char *token;	  /* a node credential (xpn_), a bootstrap token (xpb_)
				     to trade for one, or an admin's */
	const char *credential;	  /* where the node credential is kept (default
				     WORK/node.credential, mode 0600) */
	const char *node_name;	  /* default: the host name */
	const char *devices_file; /* fake devices (emulation) instead of the vendor plugins */
	const char *work;	  /* work folder (task folders, output) */
	const char *cgroup_root;  /* default /sys/fs/cgroup */
	int limits;		  /* enum xp_limits_mode */
	int grace_ms;		  /* SIGTERM -> SIGKILL, default 10000 */
	int heartbeat_ms;	  /* 0: what the controller says */
	int stop_tasks;		  /* on exit, end running tasks too (xpool dev); default: they
				     keep running and a restarted agent adopts them */
	int dedicated;		  /* the node takes only jobs that name it (xpool dev's host) */
	int device_mode;	  /* enum xp_dev_mode + 1 for the accelerators not in MIG
				     mode (--device-mode); 0: as discovered */
	uint16_t overcommit;	  /* device-memory overcommit, hundredths; 0: none */
	uint8_t replicas;	  /* --timeslice-replicas: one-GPU jobs a time-sliced
				     accelerator takes at once; 0: as discovered */
	const char *address;	  /* where service replicas are reached; NULL: the
				     address this host reaches the controller from */
	uint16_t port_min, port_max; /* service replicas' ports (XPOOL_PORT);
					0: 30000..32767 */
	int mig_keep_warm_ms;	  /* an ended replica's MIG instance is kept this long for
				     the next slice of its profile; 0: destroyed at once */
	int output_resend_s;	  /* HA: after a leader change, the output of tasks reported
				     within this long is sent again (--output-resend); 0: never */
	int mig_mode_change;	  /* --mig-mode-change: carry out the controller's MIG mode
				     changes (its admin's leave is needed too); 0: refuse */
};

/* A MIG GPU instance this agent created (mig_keep.c) */
struct xp_mig_owned {
	unsigned dev, gi, profile_id, start, size;
	char uuid[96];
	int64_t warm_until; /* wall-clock ms; 0: not warm (held, or to destroy) */
};

enum xp_limits_mode {
	XP_LIMITS_REQUIRED, /* a task whose limits cannot be set is not run (default) */
	XP_LIMITS_AUTO,	    /* required where cgroups are writable, else off (xpool dev) */
	XP_LIMITS_OFF	    /* --no-limits: tasks run unbounded, on purpose */
};

enum xp_task_state {
	XP_TASK_RUNNING,
	XP_TASK_KILLING, /* SIGTERM sent */
	XP_TASK_EXITED,	 /* status known, not yet reported */
	XP_TASK_DONE	 /* reported (or refused as stale): only the folder is left */
};

struct xp_task {
	uint64_t job;
	uint32_t replica, attempt;
	uint32_t epoch;	      /* an elastic job's resizes: each epoch's replicas are new tasks */
	uint8_t ckpt_sig;     /* elastic: sent first when it is stopped, SIGTERM after */
	int32_t ckpt_grace_ms;
	int64_t term_at;      /* ms: SIGTERM then (after the checkpoint signal), 0 = not asked */
	pid_t shim;
	uint64_t shim_start; /* /proc/<pid>/stat start time, against pid reuse */
	int state;
	int exit_code;	  /* 128 + signal for a signal, -1 lost or never started */
	int signal;	  /* the signal that ended it, 0 none */
	char reason[16];  /* "oom", "limits", "start" or "" (docs/api.md) */
	char detail[256]; /* what could not be done, for limits and start */
	char cg[96];	  /* its cgroup's name, "" without limits */
	int64_t kill_at; /* ms: SIGKILL after this, 0 = not asked */
	int64_t vgpu_check_at; /* ms: its vGPU account must exist by then, 0 = no check */
	uint8_t mig_held;      /* it holds MIG GPU instance mig_gi of device mig_dev */
	unsigned mig_dev, mig_gi;
	off_t sent_out, sent_err;
	/* a service's replica (serve.c): its port, and its readiness check */
	uint16_t port;	       /* XPOOL_PORT; 0: not a service replica */
	uint8_t ready;	       /* the last check passed */
	uint8_t probe_kind;    /* XP_SERVE_TCP: the port connects; XP_SERVE_HTTP: GET
				* probe_path answers 2xx/3xx; XP_SERVE_CMD: the shell
				* command probe_path exits 0 */
	int32_t probe_period_ms, probe_timeout_ms;
	int64_t probe_at;      /* ms: the next check */
	char probe_path[256]; /* a path, or a command (one line) */
	/* its load for the autoscaler, read from its metrics with each check */
	uint8_t load_kind;     /* enum xp_scrape_kind; 0: not read */
	uint8_t load_ok;       /* load holds a value */
	char load_path[256], load_series[96];
	double load, load_last; /* the value; a counter's last reading */
	int64_t load_last_ms;	/* when it was read; 0: never */
	char dir[512];
};

struct xp_agent {
	struct xp_agent_opts o;
	struct xp_hal *hal;
	char node[256];
	char cred[80];	  /* the node credential a bootstrap token was traded for */
	char *descriptor; /* the node's one-node descriptor (JSON) */
	unsigned ndevs;
	int heartbeat_ms;
	pthread_mutex_t mu;    /* tasks, stop */
	pthread_mutex_t up_mu; /* one output upload at a time (heartbeat, monitor) */
	XP_VEC(struct xp_task) tasks;
#define XP_AGENT_MIG_GC 64
	struct {
		unsigned dev, gi;
	} mig_gc[XP_AGENT_MIG_GC]; /* MIG instances to destroy once free (mu) */
	unsigned nmig_gc;
	int deferred;	 /* a launch waits for an older epoch's task to end (mu) */
#define XP_AGENT_MIG_OWN 128
	struct xp_mig_owned mig_own[XP_AGENT_MIG_OWN]; /* created by xpool (mu) */
	unsigned nmig_own;
	int64_t mig_next_reconcile;	  /* wall-clock ms */
	uint64_t mig_devs;		  /* devices in MIG mode (mu) */
#define XP_AGENT_MIG_MODE 64
	struct {
		uint8_t tried, ok, posted, on; /* on: the order, 1 MIG on, 0 off */
		char why[256];
	} mig_mode[XP_AGENT_MIG_MODE]; /* MIG mode orders, by device (main thread) */
	atomic_int stop; /* the agent is stopping: every thread ends its loop */
	atomic_int beat_soon; /* a replica's readiness changed: heartbeat now */
	atomic_llong leader_epoch; /* HA: the highest leader epoch the heartbeats met */
	atomic_int resend;	/* a new leader: the monitor sends recent output again */
	struct xp_cg *cg;		  /* the limits; NULL when off or not available */
	char tag[16];			  /* names this agent's cgroups (its work folder, hashed) */
	char limits_why[XP_ERR_TEXT_MAX]; /* limits required but not available: why */
};

/* agent.c */
int xp_agent_run(const struct xp_agent_opts *o, struct xp_err *err);
/* A signal handler: xp_agent_run() returns soon after (tasks keep running). */
void xp_agent_signal(int sig);
/* Discover and print the node (`xpool agent --discover`); json: -o json. */
int xp_agent_discover(const struct xp_agent_opts *o, int json, struct xp_err *err);

/* Send what a task wrote since copy's offsets (the heartbeat's and the monitor's
 * uploads, one at a time). 0: all sent, or refused for good; -1: again later. */
int xp_agent_upload_output(struct xp_agent *a, struct xp_client *cl, struct xp_task *copy);

/* output.c: HA. After a leader change the new leader may lack output the old
 * one took: every task reported within o.output_resend_s (its folder's
 * "reported" file) sends its output again from the start; the controller
 * skips the bytes it holds, so nothing is kept twice. Monitor thread. */
void xp_output_resend(struct xp_agent *a, struct xp_client *cl);

/* task.c (callers hold a->mu) */
/* Start the assigned replica. A failure is recorded as an ended task with
 * its reason ("limits", "start"), to be reported like any exit, and
 * returned for the log. */
int xp_task_launch(struct xp_agent *a, const void *assignment_json, struct xp_err *err);
void xp_task_kill(struct xp_agent *a, struct xp_task *t, int64_t now);
/* Reap children, notice exits, escalate kills. */
void xp_task_poll(struct xp_agent *a, int64_t now);
/* Find the tasks of an earlier agent in the work folder. */
void xp_task_adopt(struct xp_agent *a);
struct xp_task *xp_task_find(struct xp_agent *a, uint64_t job, uint32_t replica,
			     uint32_t attempt);
/* The same at an elastic job's epoch (xp_task_find: epoch 0). */
struct xp_task *xp_task_find_at(struct xp_agent *a, uint64_t job, uint32_t replica,
				uint32_t attempt, uint32_t epoch);
/* New output of a task stream (0 stdout, 1 stderr) since what was sent. */
int xp_task_output(struct xp_task *t, int stream, struct xp_sb *out, size_t max);
void xp_task_forget(struct xp_agent *a, struct xp_task *t);
/* Remove an ended task's cgroup; its exclusive CPUs go back. */
void xp_task_release(struct xp_agent *a, struct xp_task *t);
/* Open the limits per a->o.limits (at start, and again before a launch
 * while they are required but not available); says in the log what holds. */
void xp_task_limits_open(struct xp_agent *a, int quiet);
int64_t xp_agent_now(void);

/* vgpu_limits.c */
struct xp_vgpu_env {
	char preload[512]; /* libxpool-vgpu.so */
	char account[600]; /* the task folder's vgpu.acct */
	char mem_mib[24];  /* "" when memory is not capped */
	char milli[8];	   /* "" when compute is not limited */
	char board[600];   /* with a compute share: the GPU's board, WORK/vgpu/gpuN.board */
	char prio[16];	   /* the job's priority there */
};
/* The interposer's settings for an assignment whose devices are CUDA
 * devices (cuda): 1 when its share is enforced (v filled), 0 when there is
 * nothing to enforce or the job said vgpu: off, < 0 when it cannot be
 * enforced (the library is missing). */
int xp_vgpu_plan(const void *assignment_json, const char *taskdir, int cuda,
		 struct xp_vgpu_env *v, struct xp_err *err);
/* ms after start by which a limited replica must have registered */
int64_t xp_vgpu_check_after(void);
/* What a replica's processes hold and spent on their GPU, read from its
 * vGPU account (src/vgpu/account.h) for the heartbeat. */
struct xp_vgpu_usage {
	uint64_t mem_mib, peak_mib; /* held now, the most held at once */
	uint32_t ooms;		    /* allocations refused at its cap */
	uint32_t dev_ooms;	    /* allocations the device refused (it was full) */
	int64_t spent_ns, clock_ns; /* device time spent (limited devices), device clock */
};
/* 0 with u filled; -1 when the task has no (readable) account. */
int xp_vgpu_usage(const char *taskdir, struct xp_vgpu_usage *u);
/* Past t->vgpu_check_at without an account: end it, reason "limits". */
void xp_vgpu_check(struct xp_agent *a, struct xp_task *t, int64_t now);

/* mig_live.c (a->mu held) */
/* 0 without a reservation, 1 with its instance's uuid, < 0 when it fails */
int xp_mig_task_setup(struct xp_agent *a, const void *assignment, struct xp_task *t, char *uuid,
		      size_t len, struct xp_err *err);
void xp_mig_task_adopt(struct xp_task *t);
void xp_mig_task_end(struct xp_agent *a, struct xp_task *t);
void xp_mig_gc(struct xp_agent *a);

/* mig_keep.c (a->mu held) */
struct xp_hal_mig_inst;
void xp_mig_own_load(struct xp_agent *a); /* WORK/mig-owned, at start */
/* in was created by this agent on dev: recorded (so it may be destroyed) */
void xp_mig_own_add(struct xp_agent *a, unsigned dev, const struct xp_hal_mig_inst *in);
int xp_mig_owned(struct xp_agent *a, unsigned dev, unsigned gi);
void xp_mig_own_gone(struct xp_agent *a, unsigned dev, unsigned gi); /* destroyed */
/* a replica adopted it: no longer warm */
void xp_mig_own_hold(struct xp_agent *a, unsigned dev, unsigned gi);
/* its replica ended: -1 not ours (it stays), 1 kept warm, 0 destroy it now */
int xp_mig_own_release(struct xp_agent *a, unsigned dev, unsigned gi);
/* destroy owned instances no task holds on dev's slices [start, start+size) */
void xp_mig_free_overlap(struct xp_agent *a, unsigned dev, unsigned start, unsigned size);
/* destroy owned instances no task holds and not warm: when due, or force */
void xp_mig_reconcile(struct xp_agent *a, int force);
/* the node's MIG instances for the heartbeat: [{device, gi, id, start,
 * size, uuid, owned, warm}] */
void *xp_mig_beat_json(struct xp_agent *a);

/* mig_mode.c (main thread): carry out the assignments' "mig_mode" orders
 * (once each) and report them to the controller */
void xp_mig_mode_orders(struct xp_agent *a, struct xp_client *cl, struct json_t *orders);

/* serve.c */
enum { XP_SERVE_TCP, XP_SERVE_HTTP, XP_SERVE_CMD };
/* A service replica (a->mu held): its port picked (free on the host, held
 * by no other task) and kept in the task folder with its check. 0 when the
 * assignment is not a service's, 1 when it is, < 0 when no port is free. */
int xp_serve_setup(struct xp_agent *a, const void *assignment, struct xp_task *t,
		   struct xp_err *err);
/* The port and check of an adopted task, from its folder. */
void xp_serve_adopt(struct xp_task *t);
/* The prober thread: each service replica's check, every period. */
void *xp_serve_prober(void *agent);
/* The heartbeat's "services": [{job, replica, attempt, port, ready}]. */
struct json_t *xp_serve_report(const struct xp_task *t, size_t n);

#endif
