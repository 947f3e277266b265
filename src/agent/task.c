/*
 * task: one replica run as a real process (see agent.h).
 *
 * Everything the child processes need - argv, envp, paths - is prepared
 * before fork(), because the agent is multi-threaded: between fork() and
 * exec() (and in the shim, which never execs) only async-signal-safe calls
 * are made: setsid, open, read, write, dup2, fork, waitpid, rename,
 * sigaction, sigprocmask, execve, _exit. The agent itself writes the shim's
 * pid into the task's cgroups (cgroup.c) while the shim waits on a pipe:
 * a failure there is an ordinary error in the agent, and the shim is
 * killed before it runs anything.
 *
 * The task folder WORK/tasks/<job>-<replica>-<attempt>/ holds: shim.pid
 * (written by the shim first thing), cgroup (the task's cgroup, shared or
 * exclusive, its CPUs), stdout.log, stderr.log, and exit: "CODE SIGNAL"
 * (the code, or 128 + the signal, and the signal or 0), written atomically
 * by the shim; "CODE 0 REASON DETAIL" when the agent could not start it.
 */
#define _GNU_SOURCE
#include "agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../hal/hal.h"
#include "../lib/xalloc.h"
#include "cgroup.h"

extern char **environ;

int64_t xp_agent_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* start time of pid (clock ticks since boot), 0 when it is gone */
static uint64_t proc_start(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* fields after the command: state is field 3; starttime is field 22 */
	unsigned long long v = 0;
	int field = 2;
	for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " "))
		if (++field == 22) {
			v = strtoull(tok, NULL, 10);
			break;
		}
	return v;
}

static int alive(const struct xp_task *t)
{
	return t->shim > 0 && proc_start(t->shim) == t->shim_start;
}

struct xp_task *xp_task_find_at(struct xp_agent *a, uint64_t job, uint32_t replica,
				uint32_t attempt, uint32_t epoch)
{
	for (size_t i = 0; i < a->tasks.n; i++) {
		struct xp_task *t = &a->tasks.v[i];
		if (t->job == job && t->replica == replica && t->attempt == attempt &&
		    t->epoch == epoch)
			return t;
	}
	return NULL;
}

struct xp_task *xp_task_find(struct xp_agent *a, uint64_t job, uint32_t replica,
			     uint32_t attempt)
{
	return xp_task_find_at(a, job, replica, attempt, 0);
}

/* ---- preparing a launch ---- */

static char *resolve(const char *prog)
{
	if (strchr(prog, '/'))
		return xstrdup(prog);
	const char *path = getenv("PATH");
	char buf[4096];
	for (const char *p = path ? path : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, p, prog);
		if (access(buf, X_OK) == 0)
			return xstrdup(buf);
		p += n + (p[n] == ':');
	}
	return NULL;
}

struct strv {
	char **v;
	size_t n;
};

static void sv_add(struct strv *s, char *str)
{
	s->v = xreallocarray(s->v, s->n + 2, sizeof(char *));
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
}

static void sv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

static void env_set(struct strv *env, const char *k, const char *v)
{
	size_t kl = strlen(k);
	char *kv = xmalloc(kl + strlen(v) + 2);
	sprintf(kv, "%s=%s", k, v);
	for (size_t i = 0; i < env->n; i++)
		if (!strncmp(env->v[i], k, kl) && env->v[i][kl] == '=') {
			free(env->v[i]);
			env->v[i] = kv;
			return;
		}
	sv_add(env, kv);
}

/* ---- limits ---- */

void xp_task_limits_open(struct xp_agent *a, int quiet)
{
	const char *root = a->o.cgroup_root ? a->o.cgroup_root : "/sys/fs/cgroup";
	struct xp_err err = { 0 };
	char desc[600];
	if (a->cg)
		return;
	if (a->o.limits == XP_LIMITS_OFF) {
		if (!quiet)
			fprintf(stderr,
				"xpool agent: node=%s: limits off (--no-limits): tasks run without "
				"CPU and memory limits\n",
				a->node);
		return;
	}
	struct xp_cg *cg = XNEW(struct xp_cg);
	if (xp_cg_open(cg, root, a->tag, &err) == 0) {
		a->cg = cg;
		a->limits_why[0] = '\0';
		xp_cg_describe(cg, desc, sizeof(desc));
		fprintf(stderr, "xpool agent: node=%s: limits: %s\n", a->node, desc);
		return;
	}
	xp_cg_close(cg);
	free(cg);
	if (a->o.limits == XP_LIMITS_AUTO) {
		a->o.limits = XP_LIMITS_OFF;
		fprintf(stderr,
			"xpool agent: node=%s: limits off: %s (--limits auto): tasks run without "
			"CPU "
			"and memory limits\n",
			a->node, err.text);
		return;
	}
	snprintf(a->limits_why, sizeof(a->limits_why), "%s", err.text);
	if (!quiet)
		fprintf(stderr,
			"xpool agent: node=%s: limits cannot be set: %s; tasks are refused (reason "
			"limits) until they can, or run the agent with --no-limits\n",
			a->node, err.text);
}

/* The task's cgroup, recorded in its folder (file "cgroup": NAME, shared
 * or exclusive, its CPUs) for an agent that adopts it. */
static int limits_setup(struct xp_agent *a, struct xp_task *t, const char *key, json_t *as,
			struct xp_cg_task *cgt, struct xp_err *err)
{
	memset(cgt, 0, sizeof(*cgt));
	if (a->o.limits == XP_LIMITS_OFF)
		return 0;
	if (!a->cg)
		xp_task_limits_open(a, 1);
	if (!a->cg)
		return xp_errf(err, XP_EUNSUPP, "%s", a->limits_why);
	int rc = xp_cg_setup(
		a->cg, key, (uint64_t)json_integer_value(json_object_get(as, "cpu_milli")),
		(uint64_t)json_integer_value(json_object_get(as, "memory_mib")), cgt, err);
	if (rc < 0)
		return rc;
	char path[700], cpus[512];
	snprintf(t->cg, sizeof(t->cg), "%s", cgt->name);
	xp_cpus_format(&cgt->cpus, cpus, sizeof(cpus));
	snprintf(path, sizeof(path), "%s/cgroup", t->dir);
	FILE *f = fopen(path, "w");
	if (f) {
		fprintf(f, "%s %s %s\n", cgt->name, cgt->exclusive ? "exclusive" : "shared",
			cpus[0] ? cpus : "-");
		fclose(f);
	}
	if (cgt->note[0])
		fprintf(stderr, "xpool agent: node=%s job=%llu replica=%u: %s\n", a->node,
			(unsigned long long)t->job, t->replica, cgt->note);
	return 0;
}

/* async-signal-safe decimal */
static size_t utoa(unsigned long v, char *buf)
{
	char tmp[24];
	size_t n = 0, i = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (n)
		buf[i++] = tmp[--n];
	buf[i] = '\0';
	return i;
}

struct launch {
	char *exe;
	char **argv, **envp;
	char out[600], err[600], pidf[600], exitf[600], exitt[600];
	const char *workdir;
	int ckpt_sig; /* an elastic replica's checkpoint signal: for the task, not the shim */
	int go[2]; /* the agent writes a byte once the shim is in its cgroups */
};

/* The stop signals - SIGTERM, SIGINT, SIGHUP and an elastic replica's
 * checkpoint signal - to how (SIG_IGN in the shim, SIG_DFL in the task);
 * async-signal-safe */
static void shim_signals(const struct launch *l, struct sigaction *sa, void (*how)(int))
{
	memset(sa, 0, sizeof(*sa));
	sa->sa_handler = how;
	sigaction(SIGTERM, sa, NULL);
	sigaction(SIGINT, sa, NULL);
	sigaction(SIGHUP, sa, NULL);
	if (l->ckpt_sig)
		sigaction(l->ckpt_sig, sa, NULL);
}

/* The shim: runs in the child of fork(); async-signal-safe calls only. */
static void shim(const struct launch *l)
{
	char buf[48], c;
	struct sigaction sa;
	sigset_t all;
	int st;
	ssize_t got;

	close(l->go[1]);
	setsid();
	int fd = open(l->pidf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		size_t n = utoa((unsigned long)getpid(), buf);
		buf[n++] = '\n';
		if (write(fd, buf, n) < 0) {
		}
		close(fd);
	}
	while ((got = read(l->go[0], &c, 1)) < 0 && errno == EINTR)
		;
	if (got != 1)
		_exit(0); /* the agent could not put it in its cgroups: never run it */
	close(l->go[0]);
	shim_signals(l, &sa, SIG_IGN); /* SIGTERM is for the task; the shim waits */
	int out = open(l->out, O_WRONLY | O_CREAT | O_APPEND, 0644);
	int err = open(l->err, O_WRONLY | O_CREAT | O_APPEND, 0644);
	pid_t t = fork();
	if (t == 0) {
		shim_signals(l, &sa, SIG_DFL);
		sigaction(SIGPIPE, &sa, NULL);
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		if (out >= 0)
			dup2(out, 1);
		if (err >= 0)
			dup2(err, 2);
		if (l->workdir && chdir(l->workdir) != 0) {
			static const char msg[] = "xpool: cannot enter the working directory\n";
			if (write(2, msg, sizeof(msg) - 1) < 0) {
			}
			_exit(126);
		}
		execve(l->exe, l->argv, l->envp);
		static const char msg[] = "xpool: cannot execute the command\n";
		if (write(2, msg, sizeof(msg) - 1) < 0) {
		}
		_exit(127);
	}
	int code = 127, sig = 0;
	if (t > 0) {
		while (waitpid(t, &st, 0) < 0 && errno == EINTR)
			;
		sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
		code = WIFEXITED(st) ? WEXITSTATUS(st) : sig ? 128 + sig : 255;
	}
	fd = open(l->exitt, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) { /* "CODE SIGNAL" */
		size_t n = utoa((unsigned long)code, buf);
		buf[n++] = ' ';
		n += utoa((unsigned long)sig, buf + n);
		buf[n++] = '\n';
		if (write(fd, buf, n) < 0) {
		}
		fsync(fd);
		close(fd);
		rename(l->exitt, l->exitf);
	}
	_exit(0);
}

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* argv: the command as a list, or /bin/sh -c "command" sh args... */
static void build_argv(json_t *as, struct strv *argv)
{
	json_t *cmd = json_object_get(as, "command"), *args = json_object_get(as, "args"), *v;
	size_t i;
	if (json_array_size(cmd) == 0) {
		sv_add(argv, xstrdup("true"));
	} else if (json_is_true(json_object_get(as, "shell"))) {
		sv_add(argv, xstrdup("/bin/sh"));
		sv_add(argv, xstrdup("-c"));
		sv_add(argv, xstrdup(json_string_value(json_array_get(cmd, 0))));
		sv_add(argv, xstrdup("sh"));
	} else {
		json_array_foreach(cmd, i, v) sv_add(argv, xstrdup(json_string_value(v)));
	}
	json_array_foreach(args, i, v) sv_add(argv, xstrdup(json_string_value(v)));
}

/* the devices' variables (CUDA_VISIBLE_DEVICES and the other vendors'):
 * always, so a replica without devices sees none (an unset variable would
 * show them all); XPOOL_DEVICES and the share */
static int device_env(struct xp_agent *a, json_t *as, struct strv *env, int *cuda,
		      struct xp_err *err)
{
	json_t *v;
	size_t i;
	unsigned idx[64], nd = 0;
	char buf[64];
	struct xp_sb list, lines;
	xp_sb_init(&list);
	xp_sb_init(&lines);
	json_array_foreach(json_object_get(as, "devices"), i, v)
	{
		if (nd < 64)
			idx[nd++] = (unsigned)json_integer_value(v);
		xp_sb_printf(&list, "%s%lld", i ? "," : "", (long long)json_integer_value(v));
	}
	if (a->hal && xp_hal_env(a->hal, idx, nd, &lines, err) < 0) {
		xp_sb_free(&lines);
		xp_sb_free(&list);
		return err->code;
	}
	for (char *p = lines.s; p && *p;) {
		char *nl = strchr(p, '\n'), *eq = strchr(p, '=');
		if (nl)
			*nl = '\0';
		if (eq && (!nl || eq < nl)) {
			*eq = '\0';
			env_set(env, p, eq + 1);
			if (!strcmp(p, "CUDA_VISIBLE_DEVICES") && eq[1])
				*cuda = 1;
		}
		p = nl ? nl + 1 : p + strlen(p);
	}
	xp_sb_free(&lines);
	env_set(env, "XPOOL_DEVICES", list.s ? list.s : "");
	xp_sb_free(&list);
	long long milli = json_integer_value(json_object_get(as, "dev_milli"));
	long long dmem = json_integer_value(json_object_get(as, "dev_mem_mib"));
	if (nd) {
		snprintf(buf, sizeof(buf), "%lld", milli);
		env_set(env, "XPOOL_DEVICE_MILLI", buf);
		snprintf(buf, sizeof(buf), "%.3f", (double)milli / 1000.0);
		env_set(env, "XPOOL_DEVICE_FRACTION", buf);
		if (dmem) {
			snprintf(buf, sizeof(buf), "%lld", dmem);
			env_set(env, "XPOOL_DEVICE_MEMORY_MIB", buf);
		}
		const char *mode = json_string_value(json_object_get(as, "dev_mode"));
		env_set(env, "XPOOL_DEVICE_MODE", mode ? mode : "shared");
	}
	return 0;
}

static const char *env_get(const struct strv *env, const char *k)
{
	size_t kl = strlen(k);
	for (size_t i = 0; i < env->n; i++)
		if (!strncmp(env->v[i], k, kl) && env->v[i][kl] == '=')
			return env->v[i] + kl + 1;
	return NULL;
}

/* the interposer's variables, after the job's own (its LD_PRELOAD is kept,
 * after ours); -1 with *limits set when the share cannot be enforced */
static int vgpu_env(json_t *as, struct xp_task *t, struct strv *env, int cuda, int *limits,
		    struct xp_err *err)
{
	struct xp_vgpu_env v;
	int rc = xp_vgpu_plan(as, t->dir, cuda, &v, err);
	if (rc <= 0) {
		*limits = rc < 0;
		return rc;
	}
	const char *pre = env_get(env, "LD_PRELOAD");
	char both[2048];
	snprintf(both, sizeof(both), "%s%s%s", v.preload, pre && *pre ? " " : "", pre ? pre : "");
	env_set(env, "LD_PRELOAD", both);
	env_set(env, "XPOOL_VGPU_ACCOUNT", v.account);
	if (v.mem_mib[0])
		env_set(env, "XPOOL_VGPU_MEMORY_MIB", v.mem_mib);
	if (v.milli[0])
		env_set(env, "XPOOL_VGPU_COMPUTE_MILLI", v.milli);
	if (v.board[0]) {
		env_set(env, "XPOOL_VGPU_BOARD", v.board);
		env_set(env, "XPOOL_VGPU_PRIORITY", v.prio);
	}
	t->vgpu_check_at = xp_agent_now() + xp_vgpu_check_after();
	return 0;
}

/* A replica's place in its job (docs/design/agent.md): xpool's names and
 * torchrun's, which rendezvous reads; the job's own env may override them. */
static void world_env(json_t *as, const struct xp_task *t, struct strv *env)
{
	static const char *const pairs[][2] = {
		{ "XPOOL_WORLD_SIZE", "WORLD_SIZE" },
		{ "XPOOL_RANK", "RANK" },
		{ "XPOOL_LOCAL_RANK", "LOCAL_RANK" },
		{ "XPOOL_LOCAL_WORLD_SIZE", "LOCAL_WORLD_SIZE" },
		{ "XPOOL_RESTART_EPOCH", "TORCHELASTIC_RESTART_COUNT" },
	};
	long long v[5] = { json_integer_value(json_object_get(as, "replicas")), t->replica,
			   json_integer_value(json_object_get(as, "local_rank")),
			   json_integer_value(json_object_get(as, "local_world_size")), t->epoch };
	char buf[32];
	if (!json_object_get(as, "local_world_size")) /* an older controller */
		v[2] = 0, v[3] = 1;
	for (int i = 0; i < 5; i++) {
		snprintf(buf, sizeof(buf), "%lld", v[i]);
		env_set(env, pairs[i][0], buf);
		env_set(env, pairs[i][1], buf);
	}
	if (jstr(as, "master_addr")) {
		env_set(env, "MASTER_ADDR", jstr(as, "master_addr"));
		snprintf(buf, sizeof(buf), "%lld",
			 (long long)json_integer_value(json_object_get(as, "master_port")));
		env_set(env, "MASTER_PORT", buf);
	}
}

/* environment: a few of the agent's, the allocation's, then the job's own,
 * then the interposer's; *limits set when that last one fails */
static int build_env(struct xp_agent *a, json_t *as, struct xp_task *t, struct strv *env,
		     int *limits, struct xp_err *err)
{
	char buf[64];
	const char *k;
	json_t *v;
	int cuda = 0;
	for (const char *const *keep = (const char *const[]){ "PATH", "HOME", "LANG", "TZ", NULL };
	     *keep; keep++)
		if (getenv(*keep))
			env_set(env, *keep, getenv(*keep));
	if (device_env(a, as, env, &cuda, err) < 0)
		return err->code;
	char mig[96];
	int rc = xp_mig_task_setup(a, as, t, mig, sizeof(mig), err);
	if (rc < 0)
		return rc;
	if (rc > 0) { /* its instance alone */
		env_set(env, "CUDA_VISIBLE_DEVICES", mig);
		cuda = 1;
	}
#define SETNUM(name, fmt, val)                                                                     \
	do {                                                                                       \
		snprintf(buf, sizeof(buf), fmt, val);                                              \
		env_set(env, name, buf);                                                           \
	} while (0)
	SETNUM("XPOOL_JOB_ID", "%llu", (unsigned long long)t->job);
	SETNUM("XPOOL_REPLICA", "%u", t->replica);
	SETNUM("XPOOL_REPLICAS", "%lld", (long long)json_integer_value(json_object_get(as, "replicas")));
	SETNUM("XPOOL_ATTEMPT", "%u", t->attempt);
	world_env(as, t, env);
	SETNUM("XPOOL_CPU_MILLI", "%lld", (long long)json_integer_value(json_object_get(as, "cpu_milli")));
	SETNUM("XPOOL_MEMORY_MIB", "%lld",
	       (long long)json_integer_value(json_object_get(as, "memory_mib")));
#undef SETNUM
	env_set(env, "XPOOL_NODE", a->node);
	if ((rc = xp_serve_setup(a, as, t, err)) < 0)
		return rc;
	if (rc > 0) { /* a service's replica: the port it serves on */
		snprintf(buf, sizeof(buf), "%u", t->port);
		env_set(env, "XPOOL_PORT", buf);
		env_set(env, "PORT", buf);
	}
	if (jstr(as, "tenant"))
		env_set(env, "XPOOL_TENANT", jstr(as, "tenant"));
	if (jstr(as, "name"))
		env_set(env, "XPOOL_JOB_NAME", jstr(as, "name"));
	json_object_foreach(json_object_get(as, "env"), k, v) env_set(env, k, json_string_value(v));
	return vgpu_env(as, t, env, cuda, limits, err);
}

/* The exit file as the shim writes it ("CODE SIGNAL"), with the agent's
 * reason and detail after them when it wrote it itself. */
static void write_exit(const struct xp_task *t)
{
	char path[600], tmp[620];
	snprintf(path, sizeof(path), "%s/exit", t->dir);
	snprintf(tmp, sizeof(tmp), "%s/exit.tmp", t->dir);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%d %d %s %s\n", t->exit_code, t->signal, t->reason[0] ? t->reason : "-",
		t->detail);
	if (fclose(f) == 0)
		rename(tmp, path);
}

/* Not started: an ended task with its reason, reported like any exit (and
 * found again by an agent that restarts before it is reported). */
static int not_started(struct xp_agent *a, struct xp_task *t, int code, const char *reason,
		       struct xp_err *err)
{
	xp_mig_task_end(a, t); /* an instance made for it and not used */
	t->state = XP_TASK_EXITED;
	t->exit_code = code;
	t->signal = 0;
	snprintf(t->reason, sizeof(t->reason), "%s", reason);
	snprintf(t->detail, sizeof(t->detail), "%.*s", (int)sizeof(t->detail) - 1, err->text);
	t->cg[0] = '\0'; /* none is left: its record goes too */
	char path[600];
	snprintf(path, sizeof(path), "%s/cgroup", t->dir);
	unlink(path);
	write_exit(t);
	xp_vec_push(&a->tasks, *t);
	return err->code ? err->code : XP_EINTERNAL;
}

/* fork the shim, put it in its cgroups, let it go */
static int spawn(struct launch *l, struct xp_task *t, const struct xp_cg_task *cgt, int *in_limits,
		 struct xp_err *err)
{
	char go = 1;
	if (pipe2(l->go, O_CLOEXEC) != 0)
		return xp_errf(err, -errno, "pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(l->go[0]);
		close(l->go[1]);
		return xp_errf(err, -e, "fork: %s", strerror(e));
	}
	if (pid == 0)
		shim(l); /* never returns */
	close(l->go[0]);
	/* the child may not have run yet: its start time is known already */
	t->shim = pid;
	t->shim_start = proc_start(pid);
	int rc = cgt->nprocs ? xp_cg_attach(cgt, pid, err) : 0;
	*in_limits = rc < 0;
	if (rc == 0 && write(l->go[1], &go, 1) != 1)
		rc = xp_errf(err, -errno, "the shim did not start: %s", strerror(errno));
	close(l->go[1]);
	if (rc < 0) { /* it never runs the task */
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return rc;
}

/* an elastic replica's epoch and its checkpoint signal and grace */
static void task_checkpoint(json_t *as, struct xp_task *t)
{
	json_t *c = json_object_get(as, "checkpoint");
	t->epoch = (uint32_t)json_integer_value(json_object_get(as, "epoch"));
	if (!json_is_object(c))
		return;
	json_int_t sig = json_integer_value(json_object_get(c, "signal"));
	json_int_t grace = json_integer_value(json_object_get(c, "grace_ms"));
	t->ckpt_sig = (uint8_t)(sig > 0 && sig < 65 ? sig : 0);
	t->ckpt_grace_ms = (int32_t)(grace > 0 && grace < INT32_MAX ? grace : 0);
}

/* the checkpoint in the task folder ("SIGNAL GRACE_MS"), for an agent that adopts it */
static void save_checkpoint(const struct xp_task *t)
{
	char path[600];
	if (!t->ckpt_sig)
		return;
	snprintf(path, sizeof(path), "%s/checkpoint", t->dir);
	FILE *f = fopen(path, "w");
	if (f) {
		fprintf(f, "%u %d\n", t->ckpt_sig, t->ckpt_grace_ms);
		fclose(f);
	}
}

static void adopt_checkpoint(struct xp_task *t)
{
	char path[600];
	unsigned sig = 0;
	int grace = 0;
	snprintf(path, sizeof(path), "%s/checkpoint", t->dir);
	FILE *f = fopen(path, "r");
	if (f && fscanf(f, "%u %d", &sig, &grace) == 2 && sig > 0 && sig < 65 && grace >= 0) {
		t->ckpt_sig = (uint8_t)sig;
		t->ckpt_grace_ms = grace;
	}
	if (f)
		fclose(f);
}

int xp_task_launch(struct xp_agent *a, const void *assignment, struct xp_err *err)
{
	json_t *as = (json_t *)assignment;
	struct strv argv = { 0 }, env = { 0 };
	struct launch l;
	struct xp_task t;
	struct xp_cg_task cgt;
	char key[128], buf[4096];
	int rc = 0;

	memset(&l, 0, sizeof(l));
	memset(&t, 0, sizeof(t));
	memset(&cgt, 0, sizeof(cgt));
	t.job = (uint64_t)json_integer_value(json_object_get(as, "job"));
	t.replica = (uint32_t)json_integer_value(json_object_get(as, "replica"));
	t.attempt = (uint32_t)json_integer_value(json_object_get(as, "attempt"));
	task_checkpoint(as, &t);
	/* an elastic job's later epochs: "JOB-REPLICA-ATTEMPT-eEPOCH" */
	int kn = snprintf(key, sizeof(key), "%llu-%u-%u", (unsigned long long)t.job, t.replica,
			  t.attempt);
	if (t.epoch)
		snprintf(key + kn, sizeof(key) - (size_t)kn, "-e%u", t.epoch);
	snprintf(t.dir, sizeof(t.dir), "%s/tasks/%s", a->o.work, key);
	snprintf(buf, sizeof(buf), "%s/tasks", a->o.work);
	mkdir(buf, 0755);
	if (mkdir(t.dir, 0755) != 0 && errno != EEXIST) {
		xp_errf(err, -errno, "%s: %s", t.dir, strerror(errno));
		return not_started(a, &t, 127, "start", err);
	}
	build_argv(as, &argv);
	l.exe = resolve(argv.v[0]);
	if (!l.exe) {
		xp_errf(err, XP_ENOENT, "command '%s' not found in PATH", argv.v[0]);
		rc = not_started(a, &t, 127, "start", err);
		goto out;
	}
	int vgpu_failed = 0;
	if (build_env(a, as, &t, &env, &vgpu_failed, err) < 0) {
		rc = not_started(a, &t, vgpu_failed ? -1 : 127, vgpu_failed ? "limits" : "start", err);
		goto out;
	}
	snprintf(l.out, sizeof(l.out), "%s/stdout.log", t.dir);
	snprintf(l.err, sizeof(l.err), "%s/stderr.log", t.dir);
	snprintf(l.pidf, sizeof(l.pidf), "%s/shim.pid", t.dir);
	snprintf(l.exitf, sizeof(l.exitf), "%s/exit", t.dir);
	snprintf(l.exitt, sizeof(l.exitt), "%s/exit.tmp", t.dir);
	l.workdir = jstr(as, "workdir") ? jstr(as, "workdir") : t.dir;
	l.argv = argv.v;
	l.envp = env.v;
	l.ckpt_sig = t.ckpt_sig;
	if (limits_setup(a, &t, key, as, &cgt, err) < 0) {
		rc = not_started(a, &t, -1, "limits", err);
		goto out;
	}
	int in_limits = 0;
	if ((rc = spawn(&l, &t, &cgt, &in_limits, err)) < 0) {
		if (t.cg[0])
			xp_cg_remove(a->cg, t.cg);
		rc = not_started(a, &t, in_limits ? -1 : 127, in_limits ? "limits" : "start", err);
		goto out;
	}
	t.state = XP_TASK_RUNNING;
	save_checkpoint(&t);
	xp_vec_push(&a->tasks, t);
	fprintf(stderr, "xpool agent: node=%s job=%llu replica=%u attempt=%u: started pid %d%s%s\n",
		a->node, (unsigned long long)t.job, t.replica, t.attempt, (int)t.shim,
		t.cg[0] ? " in cgroup " : " without limits", t.cg);
out:
	free(l.exe);
	sv_free(&argv);
	sv_free(&env);
	return rc;
}

void xp_task_kill(struct xp_agent *a, struct xp_task *t, int64_t now)
{
	if (t->state != XP_TASK_RUNNING || !alive(t))
		return;
	t->state = XP_TASK_KILLING;
	if (t->ckpt_sig) { /* an elastic replica: its checkpoint first */
		kill(-t->shim, t->ckpt_sig);
		t->term_at = now + t->ckpt_grace_ms;
		t->kill_at = t->term_at + a->o.grace_ms;
		fprintf(stderr,
			"xpool agent: node=%s job=%llu replica=%u epoch=%u: signal %u to "
			"checkpoint, SIGTERM in %d ms\n",
			a->node, (unsigned long long)t->job, t->replica, t->epoch, t->ckpt_sig,
			t->ckpt_grace_ms);
		return;
	}
	kill(-t->shim, SIGTERM);
	t->kill_at = now + a->o.grace_ms;
	fprintf(stderr, "xpool agent: node=%s job=%llu replica=%u: SIGTERM, SIGKILL in %d ms\n",
		a->node, (unsigned long long)t->job, t->replica, a->o.grace_ms);
}

/* The exit file into t: "CODE SIGNAL [REASON DETAIL]" (an older shim
 * wrote "CODE" alone). 1 when there is one. */
static int read_exit(struct xp_task *t)
{
	char path[600], buf[512], reason[16] = "";
	int code, sig = 0, at = 0;
	snprintf(path, sizeof(path), "%s/exit", t->dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok || sscanf(buf, "%d %d %15s %n", &code, &sig, reason, &at) < 1)
		return 0;
	t->exit_code = code;
	t->signal = sig > 0 && sig < 128 ? sig : 0;
	if (reason[0] && strcmp(reason, "-")) {
		snprintf(t->reason, sizeof(t->reason), "%s", reason);
		snprintf(t->detail, sizeof(t->detail), "%.*s", (int)strcspn(buf + at, "\n"),
			 buf + at);
	}
	return 1;
}

/* An ended task's reason when the agent did not set one: the kernel's OOM
 * killer (read before its cgroup is removed). */
static void ended(struct xp_agent *a, struct xp_task *t)
{
	t->state = XP_TASK_EXITED;
	xp_mig_task_end(a, t);
	if (!t->reason[0] && t->exit_code != 0 && t->cg[0] && a->cg) {
		int oom = xp_cg_oom(a->cg, t->cg);
		if (oom == 2 || (oom == 1 && t->signal == SIGKILL))
			snprintf(t->reason, sizeof(t->reason), "oom");
	}
	char sig[32] = "";
	if (t->signal)
		snprintf(sig, sizeof(sig), " (signal %d)", t->signal);
	fprintf(stderr, "xpool agent: node=%s job=%llu replica=%u: exited %d%s%s%s\n", a->node,
		(unsigned long long)t->job, t->replica, t->exit_code, sig,
		t->reason[0] ? ", reason " : "", t->reason);
}

void xp_task_poll(struct xp_agent *a, int64_t now)
{
	int st;
	while (waitpid(-1, &st, WNOHANG) > 0) /* reap the shims that ended */
		;
	if (a->cg)
		xp_cg_sweep(a->cg);
	xp_mig_gc(a);
	for (size_t i = 0; i < a->tasks.n; i++) {
		struct xp_task *t = &a->tasks.v[i];
		if (t->state != XP_TASK_RUNNING && t->state != XP_TASK_KILLING)
			continue;
		if (read_exit(t)) {
			ended(a, t);
		} else if (!alive(t)) {
			int killed = t->state == XP_TASK_KILLING;
			t->exit_code = killed ? 128 + SIGKILL : -1;
			t->signal = killed ? SIGKILL : 0;
			ended(a, t);
		} else if (t->state == XP_TASK_KILLING && t->term_at && now >= t->term_at) {
			kill(-t->shim, SIGTERM); /* the checkpoint grace is over */
			t->term_at = 0;
		} else if (t->state == XP_TASK_KILLING && now >= t->kill_at) {
			kill(-t->shim, SIGKILL);
		} else {
			xp_vgpu_check(a, t, now);
		}
	}
}

/* The cgroup an earlier agent gave the task (its folder's "cgroup" file):
 * its CPUs are held again. */
static void adopt_cgroup(struct xp_agent *a, struct xp_task *t)
{
	char path[700], name[96], kind[16], list[512];
	struct xp_cpus cpus;
	snprintf(path, sizeof(path), "%s/cgroup", t->dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	int n = fscanf(f, "%95s %15s %511s", name, kind, list);
	fclose(f);
	if (n < 2)
		return;
	snprintf(t->cg, sizeof(t->cg), "%s", name);
	int excl = !strcmp(kind, "exclusive") && n == 3 && xp_cpus_parse(list, &cpus) == 0;
	if (a->cg)
		xp_cg_adopt(a->cg, name, excl, excl ? &cpus : NULL);
}

void xp_task_adopt(struct xp_agent *a)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/tasks", a->o.work);
	DIR *d = opendir(path);
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		unsigned long long job;
		unsigned replica, attempt;
		struct xp_task t;
		unsigned epoch = 0;
		if (sscanf(e->d_name, "%llu-%u-%u-e%u", &job, &replica, &attempt, &epoch) < 3)
			continue;
		memset(&t, 0, sizeof(t));
		t.job = job;
		t.replica = replica;
		t.attempt = attempt;
		t.epoch = epoch;
		snprintf(t.dir, sizeof(t.dir), "%s/tasks/%s", a->o.work, e->d_name);
		char pf[700], done[700];
		snprintf(pf, sizeof(pf), "%s/shim.pid", t.dir);
		snprintf(done, sizeof(done), "%s/reported", t.dir);
		if (access(done, F_OK) == 0)
			continue; /* finished and reported by the earlier agent */
		FILE *f = fopen(pf, "r");
		int pid = 0;
		if (f) {
			if (fscanf(f, "%d", &pid) != 1)
				pid = 0;
			fclose(f);
		}
		adopt_cgroup(a, &t);
		adopt_checkpoint(&t);
		xp_mig_task_adopt(&t);
		xp_serve_adopt(&t);
		if (read_exit(&t)) {
			ended(a, &t);
		} else if (pid > 0 && proc_start(pid)) {
			t.shim = pid;
			t.shim_start = proc_start(pid);
			t.state = XP_TASK_RUNNING;
		} else if (pid > 0) {
			t.exit_code = -1; /* the shim died without a status */
			ended(a, &t);
		} else {
			if (t.cg[0] && a->cg)
				xp_cg_remove(a->cg, t.cg);
			continue; /* never started: the assignment will start it */
		}
		xp_vec_push(&a->tasks, t);
		fprintf(stderr, "xpool agent: node=%s job=%llu replica=%u attempt=%u: %s\n", a->node,
			(unsigned long long)t.job, t.replica, t.attempt,
			t.state == XP_TASK_RUNNING ? "still running, adopted" : "ended while away");
	}
	closedir(d);
}

int xp_task_output(struct xp_task *t, int stream, struct xp_sb *out, size_t max)
{
	char path[600], buf[65536];
	off_t *sent = stream ? &t->sent_err : &t->sent_out;
	snprintf(path, sizeof(path), "%s/%s", t->dir, stream ? "stderr.log" : "stdout.log");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t got = 0;
	while (got < max) {
		size_t want = max - got < sizeof(buf) ? max - got : sizeof(buf);
		ssize_t n = pread(fd, buf, want, *sent + (off_t)got);
		if (n <= 0)
			break;
		xp_sb_putn(out, buf, (size_t)n);
		got += (size_t)n;
	}
	close(fd);
	return (int)got;
}

void xp_task_forget(struct xp_agent *a, struct xp_task *t)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/reported", t->dir);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
	xp_task_release(a, t);
	t->state = XP_TASK_DONE;
}

void xp_task_release(struct xp_agent *a, struct xp_task *t)
{
	if (t->cg[0] && a->cg)
		xp_cg_remove(a->cg, t->cg);
	t->cg[0] = '\0';
}
