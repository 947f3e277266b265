/*
 * cgroup: the limits of the agent's tasks on cgroup v1 and v2 (see
 * cgroup.h for the layout and the files written).
 *
 * Notes on the non-obvious:
 *  - v1 writes memory.limit_in_bytes before memory.memsw.limit_in_bytes
 *    (the kernel wants memory <= memory+swap at every moment) and sets both
 *    to the task's memory: no swap beyond it.
 *  - a new v1 cpuset has no CPUs and no memory nodes, and refuses tasks
 *    until both are written; the xpool parent gets its parent's (unless an
 *    admin already narrowed it: then its CPUs are the ones handed out).
 *  - v1's cfs_quota_us must be at least 1000 us: a share under 10m gets 1%.
 *  - the exclusive CPUs are bookkeeping, not cpuset.cpu_exclusive: the
 *    sharers' cpusets leave them out, which is what makes them exclusive.
 */
#define _GNU_SOURCE
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PERIOD_US 100000

/* ---- CPU sets ---- */

static void cpus_set(struct xp_cpus *s, unsigned c)
{
	s->w[c / 64] |= 1ull << (c % 64);
}

int xp_cpus_has(const struct xp_cpus *s, unsigned c)
{
	return c < XP_CPUS_MAX && (s->w[c / 64] >> (c % 64)) & 1;
}

unsigned xp_cpus_count(const struct xp_cpus *s)
{
	unsigned n = 0;
	for (size_t i = 0; i < XP_CPUS_MAX / 64; i++)
		n += (unsigned)__builtin_popcountll(s->w[i]);
	return n;
}

int xp_cpus_parse(const char *list, struct xp_cpus *s)
{
	memset(s, 0, sizeof(*s));
	const char *p = list;
	while (*p && *p != '\n') {
		char *end;
		if (*p < '0' || *p > '9')
			return XP_EINVAL;
		unsigned long lo = strtoul(p, &end, 10), hi = lo;
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				return XP_EINVAL;
			hi = strtoul(end + 1, &end, 10);
		}
		if (lo > hi || hi >= XP_CPUS_MAX)
			return XP_EINVAL;
		for (unsigned long c = lo; c <= hi; c++)
			cpus_set(s, (unsigned)c);
		if (*end == ',')
			end++;
		else if (*end && *end != '\n')
			return XP_EINVAL;
		p = end;
	}
	return 0;
}

void xp_cpus_format(const struct xp_cpus *s, char *buf, size_t len)
{
	size_t at = 0;
	buf[0] = '\0';
	for (unsigned c = 0; c < XP_CPUS_MAX; c++) {
		if (!xp_cpus_has(s, c))
			continue;
		unsigned hi = c;
		while (hi + 1 < XP_CPUS_MAX && xp_cpus_has(s, hi + 1))
			hi++;
		int n = hi == c ? snprintf(buf + at, len - at, "%s%u", at ? "," : "", c)
				: snprintf(buf + at, len - at, "%s%u-%u", at ? "," : "", c, hi);
		if (n < 0 || (size_t)n >= len - at)
			return; /* cut short: buf holds what fitted */
		at += (size_t)n;
		c = hi;
	}
}

int xp_cpus_take(struct xp_cpus *taken, const struct xp_cpus *avail, unsigned n,
		 struct xp_cpus *got)
{
	struct xp_cpus pick;
	unsigned have = 0;
	memset(&pick, 0, sizeof(pick));
	for (unsigned c = 0; c < XP_CPUS_MAX && have < n; c++)
		if (xp_cpus_has(avail, c) && !xp_cpus_has(taken, c)) {
			cpus_set(&pick, c);
			have++;
		}
	if (have < n)
		return -1;
	for (size_t i = 0; i < XP_CPUS_MAX / 64; i++)
		taken->w[i] |= pick.w[i];
	*got = pick;
	return 0;
}

void xp_cpus_give(struct xp_cpus *taken, const struct xp_cpus *got)
{
	for (size_t i = 0; i < XP_CPUS_MAX / 64; i++)
		taken->w[i] &= ~got->w[i];
}

/* ---- files ---- */

static const char *ename(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : strerror(e);
}

static int exists(const char *root, const char *rel)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	return access(path, F_OK) == 0;
}

/* The file's text without its trailing newline; -errno. */
static int read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, len - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return (int)n;
}

/* -errno; see cgroup.h for why O_CREAT */
static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	ssize_t n = write(fd, text, len);
	int e = n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
	if (close(fd) != 0 && e == 0)
		e = -errno; /* a cgroupfs write may only fail here on some filesystems */
	return e;
}

static int put(const char *dir, const char *file, const char *text, const char *what,
	       struct xp_err *err)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	int rc = write_text(path, text);
	if (rc < 0)
		return xp_errf(err, rc, "%s could not be set: %s at %s", what, ename(-rc), path);
	return 0;
}

static int make_dir(const char *dir, struct xp_err *err)
{
	if (mkdir(dir, 0755) == 0 || errno == EEXIST)
		return 0;
	int e = errno;
	return xp_errf(err, -e, "cgroup could not be made: %s at %s", ename(e), dir);
}

/* whether word is one of the space-separated words of list */
static int has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return 1;
	return 0;
}

/* ---- layout ---- */

int xp_cg_detect(struct xp_cg *cg, const char *root, struct xp_err *err)
{
	char path[600], buf[512];
	memset(cg, 0, sizeof(*cg));
	snprintf(cg->root, sizeof(cg->root), "%s", root);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
	if (read_text(path, buf, sizeof(buf)) >= 0) {
		cg->layout = XP_CG_V2;
		if (!has_word(buf, "memory") || !has_word(buf, "cpu"))
			return xp_errf(
				err, XP_EUNSUPP,
				"cgroup v2 at %s offers no %s controller (cgroup.controllers: "
				"\"%s\")",
				root, has_word(buf, "memory") ? "cpu" : "memory", buf);
		cg->cpuset = (uint8_t)has_word(buf, "cpuset");
		return 0;
	}
	if (exists(root, "memory/memory.limit_in_bytes")) {
		cg->layout = XP_CG_V1;
		if (exists(root, "cpu/cpu.cfs_quota_us"))
			snprintf(cg->cpu_dir, sizeof(cg->cpu_dir), "cpu");
		else if (exists(root, "cpu,cpuacct/cpu.cfs_quota_us"))
			snprintf(cg->cpu_dir, sizeof(cg->cpu_dir), "cpu,cpuacct");
		else
			return xp_errf(err, XP_EUNSUPP,
				       "cgroup v1 at %s has no cpu hierarchy with cpu.cfs_quota_us "
				       "(%s/cpu)",
				       root, root);
		cg->memsw = (uint8_t)exists(root, "memory/memory.memsw.limit_in_bytes");
		cg->cpuset = (uint8_t)exists(root, "cpuset/cpuset.cpus");
		return 0;
	}
	return xp_errf(err, XP_EUNSUPP,
		       "no cgroup at %s: neither v2 (cgroup.controllers) nor v1 "
		       "(memory/memory.limit_in_bytes)",
		       root);
}

/* The CPUs of a cpuset folder: cpus_file if set, else the first of the
 * others that reads (v1: effective_cpus / cpus; v2 cpuset.cpus.effective). */
static int read_cpus(const char *dir, const char *file, struct xp_cpus *s)
{
	char path[700], buf[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (read_text(path, buf, sizeof(buf)) <= 0)
		return -1;
	return xp_cpus_parse(buf, s) == 0 && xp_cpus_count(s) ? 0 : -1;
}

/* v1: the xpool cpuset with CPUs and memory nodes (its parent's unless
 * set already); a failure turns cpusets off */
static int v1_cpuset_parent(struct xp_cg *cg, struct xp_err *err)
{
	char top[400], dir[420], path[500], buf[4096];
	snprintf(top, sizeof(top), "%s/cpuset", cg->root);
	snprintf(dir, sizeof(dir), "%s/xpool", top);
	int rc = make_dir(dir, err);
	if (rc < 0)
		return rc;
	if (read_cpus(dir, "cpuset.cpus", &cg->all) < 0) {
		if (read_cpus(top, "cpuset.effective_cpus", &cg->all) < 0 &&
		    read_cpus(top, "cpuset.cpus", &cg->all) < 0)
			return xp_errf(err, XP_EUNSUPP, "no CPUs in %s/cpuset.cpus", top);
		xp_cpus_format(&cg->all, buf, sizeof(buf));
		if ((rc = put(dir, "cpuset.cpus", buf, "CPU set", err)) < 0)
			return rc;
	}
	snprintf(path, sizeof(path), "%s/cpuset.mems", dir);
	if (read_text(path, cg->mems, sizeof(cg->mems)) <= 0) {
		snprintf(path, sizeof(path), "%s/cpuset.effective_mems", top);
		if (read_text(path, cg->mems, sizeof(cg->mems)) <= 0) {
			snprintf(path, sizeof(path), "%s/cpuset.mems", top);
			if (read_text(path, cg->mems, sizeof(cg->mems)) <= 0)
				return xp_errf(err, XP_EUNSUPP, "no memory nodes in %s", path);
		}
		if ((rc = put(dir, "cpuset.mems", cg->mems, "CPU set memory nodes", err)) < 0)
			return rc;
	}
	return 0;
}

static int v1_parents(struct xp_cg *cg, struct xp_err *err)
{
	char dir[400];
	int rc;
	snprintf(dir, sizeof(dir), "%s/memory/xpool", cg->root);
	if ((rc = make_dir(dir, err)) < 0)
		return rc;
	snprintf(dir, sizeof(dir), "%s/%s/xpool", cg->root, cg->cpu_dir);
	if ((rc = make_dir(dir, err)) < 0)
		return rc;
	struct xp_err cerr = { 0 };
	if (cg->cpuset && v1_cpuset_parent(cg, &cerr) < 0) {
		cg->cpuset = 0;
		snprintf(cg->note, sizeof(cg->note), "%s", cerr.text);
	}
	return 0;
}

/* v2: enable what the children need in dir's cgroup.subtree_control
 * (unless it is on already) */
static int v2_enable(const char *dir, const char *want, struct xp_err *err)
{
	char path[500], have[256], w[64];
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
	if (read_text(path, have, sizeof(have)) < 0)
		have[0] = '\0';
	snprintf(w, sizeof(w), "%s", want);
	int all = 1;
	char *save = NULL;
	for (char *tok = strtok_r(w, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		all &= has_word(have, tok + 1); /* "+cpu" -> "cpu" */
	return all ? 0 : put(dir, "cgroup.subtree_control", want, "cgroup controllers", err);
}

static int v2_parents(struct xp_cg *cg, struct xp_err *err)
{
	char dir[400], path[500];
	const char *want = cg->cpuset ? "+cpu +memory +cpuset" : "+cpu +memory";
	int rc;
	snprintf(dir, sizeof(dir), "%s/xpool", cg->root);
	if ((rc = v2_enable(cg->root, want, err)) < 0 || (rc = make_dir(dir, err)) < 0 ||
	    (rc = v2_enable(dir, want, err)) < 0)
		return rc;
	snprintf(path, sizeof(path), "%s/memory.swap.max", dir);
	cg->swap_max = access(path, F_OK) == 0;
	if (cg->cpuset && read_cpus(dir, "cpuset.cpus.effective", &cg->all) < 0 &&
	    read_cpus(cg->root, "cpuset.cpus.effective", &cg->all) < 0) {
		cpu_set_t mine; /* the agent's own CPUs */
		memset(&cg->all, 0, sizeof(cg->all));
		if (sched_getaffinity(0, sizeof(mine), &mine) == 0)
			for (unsigned c = 0; c < CPU_SETSIZE && c < XP_CPUS_MAX; c++)
				if (CPU_ISSET(c, &mine))
					cpus_set(&cg->all, c);
		if (!xp_cpus_count(&cg->all)) {
			cg->cpuset = 0;
			snprintf(cg->note, sizeof(cg->note), "no CPUs in %s/cpuset.cpus.effective",
				 dir);
		}
	}
	return 0;
}

int xp_cg_open(struct xp_cg *cg, const char *root, const char *tag, struct xp_err *err)
{
	int rc = xp_cg_detect(cg, root, err);
	if (rc < 0)
		return rc;
	snprintf(cg->tag, sizeof(cg->tag), "%s", tag);
	return cg->layout == XP_CG_V1 ? v1_parents(cg, err) : v2_parents(cg, err);
}

void xp_cg_close(struct xp_cg *cg)
{
	if (cg) {
		xp_vec_free(&cg->live);
		xp_vec_free(&cg->busy);
	}
}

int xp_cg_probe(const char *root, char *why, size_t len)
{
	struct xp_cg cg;
	struct xp_err err = { 0 };
	int rc = xp_cg_open(&cg, root, "probe", &err);
	xp_cg_close(&cg);
	if (rc < 0) {
		snprintf(why, len, "%s", err.text);
		return 0;
	}
	why[0] = '\0';
	return cg.layout;
}

void xp_cg_describe(const struct xp_cg *cg, char *buf, size_t len)
{
	char cpus[256] = "";
	if (cg->cpuset)
		xp_cpus_format(&cg->all, cpus, sizeof(cpus));
	const char *swap =
		cg->layout == XP_CG_V1 ? (cg->memsw ? "+swap" : "") : (cg->swap_max ? "+swap" : "");
	if (cg->cpuset)
		snprintf(buf, len, "cgroup v%d at %s (memory%s, cpu quota, cpuset %s)",
			 cg->layout == XP_CG_V1 ? 1 : 2, cg->root, swap, cpus);
	else /* the quota alone bounds CPU: no CPUs of their own */
		snprintf(buf, len, "cgroup v%d at %s (memory%s, cpu quota, no cpuset%s%s)",
			 cg->layout == XP_CG_V1 ? 1 : 2, cg->root, swap, cg->note[0] ? ": " : "",
			 cg->note);
}

/* ---- one task ---- */

static struct xp_cg_live *live_find(struct xp_cg *cg, const char *name)
{
	for (size_t i = 0; i < cg->live.n; i++)
		if (!strcmp(cg->live.v[i].name, name))
			return &cg->live.v[i];
	return NULL;
}

/* the folder of name in a hierarchy ("" for v2's single one) */
static void task_dir(const struct xp_cg *cg, const char *hier, const char *name, char *buf,
		     size_t len)
{
	if (cg->layout == XP_CG_V1)
		snprintf(buf, len, "%s/%s/xpool/%s", cg->root, hier, name);
	else
		snprintf(buf, len, "%s/xpool/%s", cg->root, name);
}

/* what sharers may use: the CPUs nobody holds, or all when none is left */
static struct xp_cpus shared_cpus(const struct xp_cg *cg)
{
	struct xp_cpus s = cg->all;
	xp_cpus_give(&s, &cg->excl);
	return xp_cpus_count(&s) ? s : cg->all;
}

/* Rewrite the sharers' cpuset.cpus after the exclusive set changed. */
static int reshare(struct xp_cg *cg, struct xp_err *err)
{
	char dir[600], list[4096];
	struct xp_cpus s = shared_cpus(cg);
	int rc = 0;
	xp_cpus_format(&s, list, sizeof(list));
	for (size_t i = 0; i < cg->live.n; i++) {
		if (cg->live.v[i].exclusive)
			continue;
		task_dir(cg, "cpuset", cg->live.v[i].name, dir, sizeof(dir));
		struct xp_err e = { 0 };
		if (put(dir, "cpuset.cpus", list, "CPU set", &e) < 0 && rc == 0)
			rc = xp_errf(err, e.code, "%s", e.text);
	}
	return rc;
}

/* Choose the task's CPUs: exclusive for a whole-core request when enough
 * are free (one stays for the sharers while any runs), else shared. */
static void choose_cpus(struct xp_cg *cg, uint64_t cpu_milli, struct xp_cg_task *t)
{
	uint64_t n = cpu_milli % 1000 == 0 ? cpu_milli / 1000 : 0;
	unsigned sharers = 0;
	for (size_t i = 0; i < cg->live.n; i++)
		sharers += !cg->live.v[i].exclusive;
	struct xp_cpus free_ = cg->all;
	xp_cpus_give(&free_, &cg->excl);
	unsigned nfree = xp_cpus_count(&free_);
	if (n && n + (sharers ? 1 : 0) <= nfree &&
	    xp_cpus_take(&cg->excl, &cg->all, (unsigned)n, &t->cpus) == 0) {
		t->exclusive = 1;
		return;
	}
	if (n)
		snprintf(t->note, sizeof(t->note),
			 "not enough free CPUs for %llu of its own (%u free, %u shared tasks): it "
			 "shares CPUs, bounded by its CPU quota",
			 (unsigned long long)n, nfree, sharers);
	t->cpus = shared_cpus(cg);
	if (xp_cpus_count(&free_) == 0 && !n)
		snprintf(t->note, sizeof(t->note),
			 "every CPU is held by a task of its own: it shares them all, bounded by "
			 "its CPU quota");
}

static int setup_v1(struct xp_cg *cg, const char *name, uint64_t quota, const char *mem,
		    struct xp_cg_task *t, struct xp_err *err)
{
	char dir[600], val[64];
	int rc;
	task_dir(cg, "memory", name, dir, sizeof(dir));
	if ((rc = make_dir(dir, err)) < 0 ||
	    (rc = put(dir, "memory.limit_in_bytes", mem, "memory limit", err)) < 0 ||
	    (cg->memsw &&
	     (rc = put(dir, "memory.memsw.limit_in_bytes", mem, "swap limit", err)) < 0))
		return rc;
	snprintf(t->procs[t->nprocs++], sizeof(t->procs[0]), "%s/cgroup.procs", dir);
	task_dir(cg, cg->cpu_dir, name, dir, sizeof(dir));
	snprintf(val, sizeof(val), "%llu", (unsigned long long)quota);
	if ((rc = make_dir(dir, err)) < 0 ||
	    (rc = put(dir, "cpu.cfs_period_us", "100000", "CPU limit", err)) < 0 ||
	    (rc = put(dir, "cpu.cfs_quota_us", val, "CPU limit", err)) < 0)
		return rc;
	snprintf(t->procs[t->nprocs++], sizeof(t->procs[0]), "%s/cgroup.procs", dir);
	return 0;
}

static int setup_v2(struct xp_cg *cg, const char *name, uint64_t quota, const char *mem,
		    struct xp_cg_task *t, struct xp_err *err)
{
	char dir[600], val[64];
	int rc;
	task_dir(cg, "", name, dir, sizeof(dir));
	snprintf(val, sizeof(val), "%llu %d", (unsigned long long)quota, PERIOD_US);
	if ((rc = make_dir(dir, err)) < 0 ||
	    (rc = put(dir, "cpu.max", val, "CPU limit", err)) < 0 ||
	    (rc = put(dir, "memory.max", mem, "memory limit", err)) < 0 ||
	    (cg->swap_max && (rc = put(dir, "memory.swap.max", "0", "swap limit", err)) < 0))
		return rc;
	snprintf(t->procs[t->nprocs++], sizeof(t->procs[0]), "%s/cgroup.procs", dir);
	return 0;
}

static int setup_cpuset(struct xp_cg *cg, const char *name, struct xp_cg_task *t,
			struct xp_err *err)
{
	char dir[600], list[4096];
	int rc;
	task_dir(cg, "cpuset", name, dir, sizeof(dir));
	xp_cpus_format(&t->cpus, list, sizeof(list));
	if (cg->layout == XP_CG_V1) {
		if ((rc = make_dir(dir, err)) < 0 ||
		    (rc = put(dir, "cpuset.mems", cg->mems, "CPU set memory nodes", err)) < 0)
			return rc;
	}
	if ((rc = put(dir, "cpuset.cpus", list, "CPU set", err)) < 0)
		return rc;
	if (cg->layout == XP_CG_V1)
		snprintf(t->procs[t->nprocs++], sizeof(t->procs[0]), "%s/cgroup.procs", dir);
	return 0;
}

/* 1 when a folder of name is still busy (a process not gone yet) */
static int rmdirs(const struct xp_cg *cg, const char *name)
{
	char dir[600];
	int busy = 0;
	if (cg->layout == XP_CG_V2) {
		task_dir(cg, "", name, dir, sizeof(dir));
		return rmdir(dir) != 0 && errno == EBUSY;
	}
	static const char *const hier[] = { "memory", "cpuset" };
	for (int i = 0; i < 2; i++) {
		task_dir(cg, hier[i], name, dir, sizeof(dir));
		busy |= rmdir(dir) != 0 && errno == EBUSY;
	}
	task_dir(cg, cg->cpu_dir, name, dir, sizeof(dir));
	busy |= rmdir(dir) != 0 && errno == EBUSY;
	return busy;
}

int xp_cg_setup(struct xp_cg *cg, const char *key, uint64_t cpu_milli, uint64_t mem_mib,
		struct xp_cg_task *t, struct xp_err *err)
{
	char mem[32];
	memset(t, 0, sizeof(*t));
	snprintf(t->name, sizeof(t->name), "%s.%s", key, cg->tag);
	if (!mem_mib || !cpu_milli)
		return xp_errf(err, XP_EINVAL, "%s limit could not be set: the assignment has none",
			       mem_mib ? "CPU" : "memory");
	uint64_t quota = cpu_milli * (PERIOD_US / 1000);
	if (quota < 1000)
		quota = 1000;
	snprintf(mem, sizeof(mem), "%llu", (unsigned long long)mem_mib << 20);
	int rc = cg->layout == XP_CG_V1 ? setup_v1(cg, t->name, quota, mem, t, err)
					: setup_v2(cg, t->name, quota, mem, t, err);
	if (rc == 0 && cg->cpuset) {
		choose_cpus(cg, cpu_milli, t);
		/* the sharers first leave the new exclusive CPUs */
		if (!t->exclusive || (rc = reshare(cg, err)) == 0)
			rc = setup_cpuset(cg, t->name, t, err);
		if (rc < 0 && t->exclusive) { /* back as they were */
			struct xp_err ignored = { 0 };
			xp_cpus_give(&cg->excl, &t->cpus);
			reshare(cg, &ignored);
		}
	}
	if (rc < 0) {
		rmdirs(cg, t->name);
		return rc;
	}
	struct xp_cg_live l;
	memset(&l, 0, sizeof(l));
	snprintf(l.name, sizeof(l.name), "%s", t->name);
	l.exclusive = t->exclusive;
	l.cpus = t->cpus;
	xp_vec_push(&cg->live, l);
	return 0;
}

int xp_cg_attach(const struct xp_cg_task *t, pid_t pid, struct xp_err *err)
{
	char val[32];
	snprintf(val, sizeof(val), "%d", (int)pid);
	for (int i = 0; i < t->nprocs; i++) {
		int rc = write_text(t->procs[i], val);
		if (rc < 0)
			return xp_errf(err, rc,
				       "the task could not be moved into its cgroup: %s at %s",
				       ename(-rc), t->procs[i]);
	}
	return 0;
}

/* the number after key in a "key N" lines file, -1 when absent */
static long long field(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return atoll(p + n + 1);
	return -1;
}

int xp_cg_oom(const struct xp_cg *cg, const char *name)
{
	char dir[600], path[700], buf[1024];
	task_dir(cg, "memory", name, dir, sizeof(dir));
	if (cg->layout == XP_CG_V2) {
		snprintf(path, sizeof(path), "%s/memory.events", dir);
		if (read_text(path, buf, sizeof(buf)) < 0)
			return 0;
		return field(buf, "oom_kill") > 0 ? 2 : field(buf, "oom") > 0 ? 1 : 0;
	}
	snprintf(path, sizeof(path), "%s/memory.oom_control", dir);
	if (read_text(path, buf, sizeof(buf)) >= 0) {
		long long kills = field(buf, "oom_kill");
		if (kills >= 0) /* 4.13 and later count the kills */
			return kills > 0 ? 2 : 0;
		if (field(buf, "under_oom") > 0)
			return 1;
	}
	snprintf(path, sizeof(path), "%s/memory.failcnt", dir);
	return read_text(path, buf, sizeof(buf)) > 0 && atoll(buf) > 0 ? 1 : 0;
}

void xp_cg_remove(struct xp_cg *cg, const char *name)
{
	if (rmdirs(cg, name)) { /* the shim wrote its exit but is not gone yet */
		struct xp_cg_live later;
		memset(&later, 0, sizeof(later));
		snprintf(later.name, sizeof(later.name), "%s", name);
		xp_vec_push(&cg->busy, later);
	}
	struct xp_cg_live *l = live_find(cg, name);
	if (!l)
		return;
	int excl = l->exclusive;
	if (excl)
		xp_cpus_give(&cg->excl, &l->cpus);
	*l = cg->live.v[--cg->live.n];
	if (excl) {
		struct xp_err ignored = { 0 };
		reshare(cg, &ignored); /* the sharers may use them again */
	}
}

size_t xp_cg_sweep(struct xp_cg *cg)
{
	size_t keep = 0;
	for (size_t i = 0; i < cg->busy.n; i++)
		if (rmdirs(cg, cg->busy.v[i].name))
			cg->busy.v[keep++] = cg->busy.v[i];
	cg->busy.n = keep;
	return keep;
}

void xp_cg_adopt(struct xp_cg *cg, const char *name, int exclusive, const struct xp_cpus *cpus)
{
	if (live_find(cg, name))
		return;
	struct xp_cg_live l;
	memset(&l, 0, sizeof(l));
	snprintf(l.name, sizeof(l.name), "%s", name);
	l.exclusive = (uint8_t)(exclusive && cpus);
	if (l.exclusive) {
		l.cpus = *cpus;
		for (size_t i = 0; i < XP_CPUS_MAX / 64; i++)
			cg->excl.w[i] |= cpus->w[i];
	}
	xp_vec_push(&cg->live, l);
}
