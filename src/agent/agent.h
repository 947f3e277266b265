/*
 * agent: the map of `xpool agent` - one per machine. It discovers the
 * machine's devices (src/hal), registers the node with the controller,
 * heartbeats, watches its assignments (a long poll, no busy polling), runs
 * each assigned replica as a real process and reports how it ended.
 *
 *   agent.c   registration, the heartbeat and watch loops, reconciliation
 *   task.c    one task: the shim, its process group, cgroup limits, output
 *             files, signals, exit status, adoption after a restart
 *
 * A task is run by a shim: the agent forks it, the shim starts a new
 * session, moves itself into the task's cgroup, forks the task, waits for
 * it and writes its exit status into the task's folder. The shim outlives
 * an agent restart, so a restarted agent finds its tasks (folder + shim pid
 * + the shim's start time, against pid reuse) and does not run them again.
 * Cancellation is SIGTERM to the task's process group, a grace period, then
 * SIGKILL.
 */
#ifndef XP_AGENT_H
#define XP_AGENT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "../lib/err.h"
#include "../lib/strbuf.h"
#include "../lib/vec.h"

struct xp_hal;
struct xp_client;

struct xp_agent_opts {
	const char *server; /* controller address */
	const char *token;
	const char *node_name;	  /* default: the host name */
	const char *devices_file; /* fake devices (emulation) instead of the vendor plugins */
	const char *work;	  /* work folder (task folders, output) */
	const char *cgroup_root;  /* default /sys/fs/cgroup */
	int grace_ms;		  /* SIGTERM -> SIGKILL, default 10000 */
	int heartbeat_ms;	  /* 0: what the controller says */
	int stop_tasks;		  /* on exit, end running tasks too (xpool dev); default: they
				     keep running and a restarted agent adopts them */
	int dedicated;		  /* the node takes only jobs that name it (xpool dev's host) */
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
	pid_t shim;
	uint64_t shim_start; /* /proc/<pid>/stat start time, against pid reuse */
	int state;
	int exit_code;	 /* 128 + signal for a signal, -1 lost */
	int64_t kill_at; /* ms: SIGKILL after this, 0 = not asked */
	off_t sent_out, sent_err;
	char dir[512];
};

struct xp_agent {
	struct xp_agent_opts o;
	struct xp_hal *hal;
	char node[256];
	char *descriptor; /* the node's one-node descriptor (JSON) */
	unsigned ndevs;
	int heartbeat_ms;
	pthread_mutex_t mu;    /* tasks, stop */
	pthread_mutex_t up_mu; /* one output upload at a time (heartbeat, monitor) */
	XP_VEC(struct xp_task) tasks;
	volatile int stop;
	int cgroup_warned;
};

/* agent.c */
int xp_agent_run(const struct xp_agent_opts *o, struct xp_err *err);
/* A signal handler: xp_agent_run() returns soon after (tasks keep running). */
void xp_agent_signal(int sig);
/* Discover and print the node (`xpool agent --discover`); json: -o json. */
int xp_agent_discover(const struct xp_agent_opts *o, int json, struct xp_err *err);

/* task.c (callers hold a->mu) */
struct xp_assign; /* one assigned replica, decoded from the controller's JSON */
int xp_task_launch(struct xp_agent *a, const void *assignment_json, struct xp_err *err);
void xp_task_kill(struct xp_agent *a, struct xp_task *t, int64_t now);
/* Reap children, notice exits, escalate kills. */
void xp_task_poll(struct xp_agent *a, int64_t now);
/* Find the tasks of an earlier agent in the work folder. */
void xp_task_adopt(struct xp_agent *a);
struct xp_task *xp_task_find(struct xp_agent *a, uint64_t job, uint32_t replica,
			     uint32_t attempt);
/* New output of a task stream (0 stdout, 1 stderr) since what was sent. */
int xp_task_output(struct xp_task *t, int stream, struct xp_sb *out, size_t max);
void xp_task_forget(struct xp_agent *a, struct xp_task *t);
int64_t xp_agent_now(void);

#endif
