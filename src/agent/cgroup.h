/*
 * cgroup: the CPU and memory limits of the agent's tasks, on cgroup v1 or
 * v2, and the CPUs handed out exclusively (docs/design/agent.md "Limits").
 *
 * The layout is read from files under the root (--cgroup-root, default
 * /sys/fs/cgroup), never from `mount`, so a test points the agent at a
 * fake root made of plain files:
 *   v2  ROOT/cgroup.controllers exists (and lists cpu and memory);
 *   v1  ROOT/memory/memory.limit_in_bytes exists, with a cpu hierarchy at
 *       ROOT/cpu or ROOT/cpu,cpuacct and optionally ROOT/cpuset.
 * Each task gets a cgroup named NAME = "<job>-<replica>-<attempt>.<tag>"
 * (tag: the agent's work folder hashed, so two agents on one machine never
 * share one) under an `xpool` parent in every hierarchy it uses:
 *   v1  memory/xpool/NAME  memory.limit_in_bytes, memory.memsw.limit_in_bytes
 *       cpu/xpool/NAME     cpu.cfs_period_us, cpu.cfs_quota_us
 *       cpuset/xpool/NAME  cpuset.mems, cpuset.cpus
 *   v2  xpool/NAME         cpu.max, memory.max, memory.swap.max, cpuset.cpus
 * Control files are opened with O_CREAT: a real cgroupfs refuses to create
 * a file (EACCES), so only the kernel's own files are ever written there,
 * while a fake root gets plain files the test reads back.
 *
 * CPUs: a whole-core request (cpu_milli a multiple of 1000) gets that many
 * CPUs of its own when enough are free, so `nproc` in the task prints what
 * it was given; every other task shares the CPUs nobody holds exclusively
 * (its CFS quota still bounds it). Handing CPUs out or back rewrites the
 * sharers' cpuset.cpus. One CPU stays shared while sharers run.
 *
 * Not thread-safe: the agent calls it under its task mutex. Errors name
 * what could not be set, the errno and the file ("memory limit could not
 * be set: EACCES at /sys/fs/cgroup/memory/xpool/3-0-1.9f2c01aa/...").
 */
#ifndef XP_AGENT_CGROUP_H
#define XP_AGENT_CGROUP_H

#include <stdint.h>
#include <sys/types.h>

#include "../lib/err.h"
#include "../lib/vec.h"

/* ---- CPU sets as bitmaps (pure; tested against a naive model) ---- */

#define XP_CPUS_MAX 1024

struct xp_cpus {
	uint64_t w[XP_CPUS_MAX / 64];
};

/* "0-3,8,10-11" (the kernel's list format, trailing newline allowed); ""
 * is the empty set. XP_EINVAL when malformed or a CPU >= XP_CPUS_MAX. */
int xp_cpus_parse(const char *list, struct xp_cpus *s);
/* The list form of s into buf ("" when empty). */
void xp_cpus_format(const struct xp_cpus *s, char *buf, size_t len);
unsigned xp_cpus_count(const struct xp_cpus *s);
int xp_cpus_has(const struct xp_cpus *s, unsigned cpu);
/* The n lowest CPUs of avail not in taken: added to taken and set in got.
 * 0, or -1 (nothing changed) when fewer than n are free. */
int xp_cpus_take(struct xp_cpus *taken, const struct xp_cpus *avail, unsigned n,
		 struct xp_cpus *got);
/* Give got back: taken loses it. */
void xp_cpus_give(struct xp_cpus *taken, const struct xp_cpus *got);

/* ---- the limits ---- */

enum xp_cg_layout { XP_CG_NONE, XP_CG_V1, XP_CG_V2 };

struct xp_cg_live { /* a task's cgroup the agent still holds */
	char name[96];
	uint8_t exclusive;
	struct xp_cpus cpus; /* exclusive: its own */
};

struct xp_cg {
	char root[256];
	char tag[16];
	int layout;	     /* enum xp_cg_layout */
	char cpu_dir[16];    /* v1: "cpu" or "cpu,cpuacct" */
	uint8_t memsw;	     /* v1: swap is accounted (memory.memsw.*) */
	uint8_t swap_max;    /* v2: memory.swap.max exists */
	uint8_t cpuset;	     /* cpusets are in use */
	struct xp_cpus all;  /* the CPUs tasks may run on (the xpool cpuset's) */
	struct xp_cpus excl; /* handed out exclusively */
	char mems[64];	     /* v1: the memory nodes a new cpuset gets */
	char note[512];	     /* why cpusets are off, when they are */
	XP_VEC(struct xp_cg_live) live;
	XP_VEC(struct xp_cg_live) busy; /* removed, but a process was not gone yet */
};

/* What one task got: the files the shim's pid goes into, its CPUs. */
struct xp_cg_task {
	char name[96];
	char procs[3][640];
	int nprocs;
	uint8_t exclusive;
	struct xp_cpus cpus; /* the cpuset written; empty without cpusets */
	char note[512];	     /* said in the agent log: a fallback to shared CPUs */
};

/* Read the layout under root: XP_CG_V1 or XP_CG_V2 into cg->layout and
 * what it offers, or an error saying what is missing. */
int xp_cg_detect(struct xp_cg *cg, const char *root, struct xp_err *err);
/* Detect, then make the xpool parents (v2: enable the controllers for
 * them; v1: give the xpool cpuset its CPUs and memory nodes). tag names
 * this agent's cgroups. A cpuset that cannot be made only turns cpusets
 * off (cg->note says why); anything else fails. */
int xp_cg_open(struct xp_cg *cg, const char *root, const char *tag, struct xp_err *err);
void xp_cg_close(struct xp_cg *cg);
/* Whether the limits hold under root: the layout (> 0), or 0 with why. */
int xp_cg_probe(const char *root, char *why, size_t len);
/* "cgroup v1 at /sys/fs/cgroup (memory+swap, cpu quota, cpuset 0-3)" */
void xp_cg_describe(const struct xp_cg *cg, char *buf, size_t len);

/* The task's cgroup "<key>.<tag>" with its limits (cpu_milli, mem_mib >
 * 0). On failure nothing is left behind and err says what could not be
 * set. */
int xp_cg_setup(struct xp_cg *cg, const char *key, uint64_t cpu_milli, uint64_t mem_mib,
		struct xp_cg_task *t, struct xp_err *err);
/* Move pid (the stopped shim) into every hierarchy of t. */
int xp_cg_attach(const struct xp_cg_task *t, pid_t pid, struct xp_err *err);
/* How the memory controller saw the task end: 2 the kernel OOM-killed in
 * it (oom_kill counter), 1 it hit its limit (a kernel without the counter:
 * failcnt or under_oom), 0 neither. */
int xp_cg_oom(const struct xp_cg *cg, const char *name);
/* Remove the task's cgroup (every hierarchy) and give its CPUs back. A
 * folder still busy (the shim writes its exit file just before it exits)
 * is tried again by xp_cg_sweep(). */
void xp_cg_remove(struct xp_cg *cg, const char *name);
/* Retry the busy removals; how many are still busy. */
size_t xp_cg_sweep(struct xp_cg *cg);
/* A task of an earlier agent, still holding name: take its CPUs again. */
void xp_cg_adopt(struct xp_cg *cg, const char *name, int exclusive, const struct xp_cpus *cpus);

#endif
