/*
 * task: one replica run as a real process (see agent.h).
 *
 * Everything the child processes need - argv, envp, paths, the cgroup's
 * procs file - is prepared before fork(), because the agent is
 * multi-threaded: between fork() and exec() (and in the shim, which never
 * execs) only async-signal-safe calls are made: setsid, open, write, dup2,
 * fork, waitpid, rename, sigaction, sigprocmask, execve, _exit.
 *
 * The task folder WORK/tasks/<job>-<replica>-<attempt>/ holds: shim.pid
 * (written by the shim first thing), stdout.log, stderr.log, and exit (the
 * status: the code, or 128 + the signal), written atomically by the shim.
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

struct xp_task *xp_task_find(struct xp_agent *a, uint64_t job, uint32_t replica,
			     uint32_t attempt)
{
	for (size_t i = 0; i < a->tasks.n; i++) {
		struct xp_task *t = &a->tasks.v[i];
		if (t->job == job && t->replica == replica && t->attempt == attempt)
			return t;
	}
	return NULL;
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

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, text, strlen(text));
	int e = n == (ssize_t)strlen(text) ? 0 : -errno;
	close(fd);
	return e;
}

/* The task's cgroup with cpu.max and memory.max; its cgroup.procs path, or
 * "" when limits cannot be applied (logged once, the task still runs). */
static void cgroup_setup(struct xp_agent *a, const char *key, uint64_t cpu_milli,
			 uint64_t mem_mib, char *procs, size_t plen)
{
	char dir[512], path[600], val[64];
	const char *root = a->o.cgroup_root ? a->o.cgroup_root : "/sys/fs/cgroup";
	int rc = 0;

	procs[0] = '\0';
	snprintf(dir, sizeof(dir), "%s/xpool", root);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		rc = -errno;
	if (rc == 0) { /* let the xpool cgroup's children use both controllers */
		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", root);
		write_file(path, "+cpu +memory");
		snprintf(path, sizeof(path), "%s/cgroup.subtree_control", dir);
		rc = write_file(path, "+cpu +memory");
	}
	snprintf(dir, sizeof(dir), "%s/xpool/%s", root, key);
	if (rc == 0 && mkdir(dir, 0755) != 0 && errno != EEXIST)
		rc = -errno;
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/cpu.max", dir);
		snprintf(val, sizeof(val), "%llu 100000",
			 (unsigned long long)(cpu_milli ? cpu_milli * 100 : 1000));
		rc = write_file(path, val);
	}
	if (rc == 0) {
		snprintf(path, sizeof(path), "%s/memory.max", dir);
		snprintf(val, sizeof(val), "%llu", (unsigned long long)mem_mib << 20);
		rc = write_file(path, val);
	}
	if (rc < 0) {
		if (!a->cgroup_warned)
			fprintf(stderr,
				"xpool agent: node=%s: CPU and memory limits are not applied (cgroup v2 "
				"at %s: %s); tasks still run\n",
				a->node, root, strerror(-rc));
		a->cgroup_warned = 1;
		rmdir(dir);
		return;
	}
	snprintf(procs, plen, "%s/cgroup.procs", dir);
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
	char out[600], err[600], pidf[600], exitf[600], exitt[600], procs[600];
	const char *workdir;
};

/* The shim: runs in the child of fork(); async-signal-safe calls only. */
static void shim(const struct launch *l)
{
	char buf[32];
	struct sigaction sa;
	sigset_t all;
	int st;

	setsid();
	int fd = open(l->pidf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		size_t n = utoa((unsigned long)getpid(), buf);
		buf[n++] = '\n';
		if (write(fd, buf, n) < 0) {
		}
		close(fd);
	}
	if (l->procs[0] && (fd = open(l->procs, O_WRONLY)) >= 0) {
		size_t n = utoa((unsigned long)getpid(), buf);
		if (write(fd, buf, n) < 0) {
		}
		close(fd);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN; /* SIGTERM is for the task; the shim waits */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	int out = open(l->out, O_WRONLY | O_CREAT | O_APPEND, 0644);
	int err = open(l->err, O_WRONLY | O_CREAT | O_APPEND, 0644);
	pid_t t = fork();
	if (t == 0) {
		sa.sa_handler = SIG_DFL;
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGHUP, &sa, NULL);
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
	int code = 127;
	if (t > 0) {
		while (waitpid(t, &st, 0) < 0 && errno == EINTR)
			;
		code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
	}
	fd = open(l->exitt, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		size_t n = utoa((unsigned long)code, buf);
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

int xp_task_launch(struct xp_agent *a, const void *assignment, struct xp_err *err)
{
	json_t *as = (json_t *)assignment, *v;
	struct strv argv = { 0 }, env = { 0 };
	struct launch l;
	struct xp_task t;
	char key[128], buf[4096];
	const char *k;
	size_t i;
	int rc = 0;

	memset(&l, 0, sizeof(l));
	memset(&t, 0, sizeof(t));
	t.job = (uint64_t)json_integer_value(json_object_get(as, "job"));
	t.replica = (uint32_t)json_integer_value(json_object_get(as, "replica"));
	t.attempt = (uint32_t)json_integer_value(json_object_get(as, "attempt"));
	snprintf(key, sizeof(key), "%llu-%u-%u", (unsigned long long)t.job, t.replica, t.attempt);
	snprintf(t.dir, sizeof(t.dir), "%s/tasks/%s", a->o.work, key);
	snprintf(buf, sizeof(buf), "%s/tasks", a->o.work);
	mkdir(buf, 0755);
	if (mkdir(t.dir, 0755) != 0 && errno != EEXIST)
		return xp_errf(err, -errno, "%s: %s", t.dir, strerror(errno));

	/* argv: the command as a list, or /bin/sh -c "command" sh args... */
	json_t *cmd = json_object_get(as, "command"), *args = json_object_get(as, "args");
	int shell = json_is_true(json_object_get(as, "shell"));
	if (json_array_size(cmd) == 0) {
		sv_add(&argv, xstrdup("true"));
	} else if (shell) {
		sv_add(&argv, xstrdup("/bin/sh"));
		sv_add(&argv, xstrdup("-c"));
		sv_add(&argv, xstrdup(json_string_value(json_array_get(cmd, 0))));
		sv_add(&argv, xstrdup("sh"));
	} else {
		json_array_foreach(cmd, i, v) sv_add(&argv, xstrdup(json_string_value(v)));
	}
	json_array_foreach(args, i, v) sv_add(&argv, xstrdup(json_string_value(v)));
	l.exe = resolve(argv.v[0]);
	if (!l.exe) {
		rc = xp_errf(err, XP_ENOENT, "job %llu: command '%s' not found in PATH",
			     (unsigned long long)t.job, argv.v[0]);
		goto out;
	}

	/* environment: a few of the agent's, the allocation's, then the job's own */
	for (const char *const *keep = (const char *const[]){ "PATH", "HOME", "LANG", "TZ", NULL };
	     *keep; keep++)
		if (getenv(*keep))
			env_set(&env, *keep, getenv(*keep));
	json_t *devs = json_object_get(as, "devices");
	unsigned idx[64], nd = 0;
	struct xp_sb list;
	xp_sb_init(&list);
	json_array_foreach(devs, i, v)
	{
		if (nd < 64)
			idx[nd++] = (unsigned)json_integer_value(v);
		xp_sb_printf(&list, "%s%lld", i ? "," : "", (long long)json_integer_value(v));
	}
	/* CUDA_VISIBLE_DEVICES and the other vendors': always, so a replica
	 * without devices sees none (an unset variable would show them all) */
	if (a->hal) {
		struct xp_sb lines;
		xp_sb_init(&lines);
		if (xp_hal_env(a->hal, idx, nd, &lines, err) < 0) {
			xp_sb_free(&lines);
			xp_sb_free(&list);
			rc = err->code;
			goto out;
		}
		for (char *p = lines.s; p && *p;) {
			char *nl = strchr(p, '\n'), *eq = strchr(p, '=');
			if (nl)
				*nl = '\0';
			if (eq && (!nl || eq < nl)) {
				*eq = '\0';
				env_set(&env, p, eq + 1);
			}
			p = nl ? nl + 1 : p + strlen(p);
		}
		xp_sb_free(&lines);
	}
	long long milli = json_integer_value(json_object_get(as, "dev_milli"));
	long long dmem = json_integer_value(json_object_get(as, "dev_mem_mib"));
#define SETNUM(name, fmt, val)                                                                     \
	do {                                                                                       \
		snprintf(buf, sizeof(buf), fmt, val);                                              \
		env_set(&env, name, buf);                                                          \
	} while (0)
	SETNUM("XPOOL_JOB_ID", "%llu", (unsigned long long)t.job);
	SETNUM("XPOOL_REPLICA", "%u", t.replica);
	SETNUM("XPOOL_REPLICAS", "%lld", (long long)json_integer_value(json_object_get(as, "replicas")));
	SETNUM("XPOOL_ATTEMPT", "%u", t.attempt);
	env_set(&env, "XPOOL_NODE", a->node);
	if (jstr(as, "tenant"))
		env_set(&env, "XPOOL_TENANT", jstr(as, "tenant"));
	if (jstr(as, "name"))
		env_set(&env, "XPOOL_JOB_NAME", jstr(as, "name"));
	SETNUM("XPOOL_CPU_MILLI", "%lld", (long long)json_integer_value(json_object_get(as, "cpu_milli")));
	SETNUM("XPOOL_MEMORY_MIB", "%lld",
	       (long long)json_integer_value(json_object_get(as, "memory_mib")));
	env_set(&env, "XPOOL_DEVICES", list.s);
	xp_sb_free(&list);
	if (nd) {
		SETNUM("XPOOL_DEVICE_MILLI", "%lld", milli);
		SETNUM("XPOOL_DEVICE_FRACTION", "%.3f", (double)milli / 1000.0);
		if (dmem)
			SETNUM("XPOOL_DEVICE_MEMORY_MIB", "%lld", dmem);
	}
#undef SETNUM
	json_object_foreach(json_object_get(as, "env"), k, v) env_set(&env, k, json_string_value(v));

	snprintf(l.out, sizeof(l.out), "%s/stdout.log", t.dir);
	snprintf(l.err, sizeof(l.err), "%s/stderr.log", t.dir);
	snprintf(l.pidf, sizeof(l.pidf), "%s/shim.pid", t.dir);
	snprintf(l.exitf, sizeof(l.exitf), "%s/exit", t.dir);
	snprintf(l.exitt, sizeof(l.exitt), "%s/exit.tmp", t.dir);
	l.workdir = jstr(as, "workdir") ? jstr(as, "workdir") : t.dir;
	l.argv = argv.v;
	l.envp = env.v;
	cgroup_setup(a, key, (uint64_t)json_integer_value(json_object_get(as, "cpu_milli")),
		     (uint64_t)json_integer_value(json_object_get(as, "memory_mib")), l.procs,
		     sizeof(l.procs));
	pid_t pid = fork();
	if (pid < 0) {
		rc = xp_errf(err, -errno, "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		shim(&l); /* never returns */
	t.shim = pid;
	/* the child may not have run yet: its start time is known already */
	t.shim_start = proc_start(pid);
	t.state = XP_TASK_RUNNING;
	xp_vec_push(&a->tasks, t);
	fprintf(stderr, "xpool agent: node=%s job=%llu replica=%u attempt=%u: started pid %d\n",
		a->node, (unsigned long long)t.job, t.replica, t.attempt, (int)pid);
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
	kill(-t->shim, SIGTERM);
	t->state = XP_TASK_KILLING;
	t->kill_at = now + a->o.grace_ms;
	fprintf(stderr, "xpool agent: node=%s job=%llu replica=%u: SIGTERM, SIGKILL in %d ms\n",
		a->node, (unsigned long long)t->job, t->replica, a->o.grace_ms);
}

static int read_exit(const struct xp_task *t, int *code)
{
	char path[600], buf[32];
	snprintf(path, sizeof(path), "%s/exit", t->dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (ok)
		*code = atoi(buf);
	return ok;
}

void xp_task_poll(struct xp_agent *a, int64_t now)
{
	int st;
	while (waitpid(-1, &st, WNOHANG) > 0) /* reap the shims that ended */
		;
	for (size_t i = 0; i < a->tasks.n; i++) {
		struct xp_task *t = &a->tasks.v[i];
		if (t->state != XP_TASK_RUNNING && t->state != XP_TASK_KILLING)
			continue;
		int code;
		if (read_exit(t, &code)) {
			t->exit_code = code;
			t->state = XP_TASK_EXITED;
		} else if (!alive(t)) {
			t->exit_code = t->state == XP_TASK_KILLING ? 128 + SIGKILL : -1;
			t->state = XP_TASK_EXITED;
		} else if (t->state == XP_TASK_KILLING && now >= t->kill_at) {
			kill(-t->shim, SIGKILL);
		}
		if (t->state == XP_TASK_EXITED)
			fprintf(stderr, "xpool agent: node=%s job=%llu replica=%u: exited %d\n", a->node,
				(unsigned long long)t->job, t->replica, t->exit_code);
	}
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
		if (sscanf(e->d_name, "%llu-%u-%u", &job, &replica, &attempt) != 3)
			continue;
		memset(&t, 0, sizeof(t));
		t.job = job;
		t.replica = replica;
		t.attempt = attempt;
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
		int code;
		if (read_exit(&t, &code)) {
			t.state = XP_TASK_EXITED;
			t.exit_code = code;
		} else if (pid > 0 && proc_start(pid)) {
			t.shim = pid;
			t.shim_start = proc_start(pid);
			t.state = XP_TASK_RUNNING;
		} else if (pid > 0) {
			t.state = XP_TASK_EXITED; /* the shim died without a status */
			t.exit_code = -1;
		} else {
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
	const char *root = a->o.cgroup_root ? a->o.cgroup_root : "/sys/fs/cgroup";
	snprintf(path, sizeof(path), "%s/reported", t->dir);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/xpool/%llu-%u-%u", root, (unsigned long long)t->job,
		 t->replica, t->attempt);
	rmdir(path);
	t->state = XP_TASK_DONE;
}
