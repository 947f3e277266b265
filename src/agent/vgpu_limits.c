/*
 * vgpu_limits: the GPU share of a replica, enforced by the interposer
 * (src/vgpu, docs/design/vgpu.md).
 *
 * A replica on NVIDIA GPUs (its devices set CUDA_VISIBLE_DEVICES) whose
 * allocation is a fraction of a device, or caps device memory, runs with
 * libxpool-vgpu.so preloaded and its limits in the environment; the
 * account file lives in its task folder. The job's `vgpu: off`, and a
 * device in mode timeslice (the admin's choice), leave the share announced
 * only. The library is found beside the agent's binary
 * (or at XPOOL_VGPU_LIB); without it the replica is not started (reason
 * "limits"), as with cgroups that cannot be set.
 *
 * Every process that loads the library registers in the account from its
 * ELF constructor, which creates the file. A replica whose account does not
 * exist XP_VGPU_REGISTER_MS after start never loaded it (a static binary,
 * a set-uid program, LD_PRELOAD removed): it is ended with reason "limits"
 * rather than left running without its GPU limits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "../vgpu/account.h"
#include "agent.h"

#define XP_VGPU_REGISTER_MS 5000

/* the library: $XPOOL_VGPU_LIB, else beside this binary */
static int find_lib(char *out, size_t n)
{
	const char *env = getenv("XPOOL_VGPU_LIB");
	char exe[512];
	if (env && *env) {
		snprintf(out, n, "%s", env);
	} else {
		ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (l <= 0)
			return -1;
		exe[l] = '\0';
		snprintf(out, n, "%s/libxpool-vgpu.so", dirname(exe));
	}
	return access(out, R_OK) == 0 ? 0 : -1;
}

/* The board of the replica's GPU, shared by every limited job on it
 * (src/vgpu/board.c): WORK/vgpu/gpuN.board, WORK being the task folder's
 * grandparent (WORK/tasks/<job>-<replica>-<attempt>); "" when it cannot
 * be made (the share then holds without priority). */
static void board_path(const char *taskdir, const json_t *dev, struct xp_vgpu_env *v)
{
	char dir[600];
	snprintf(dir, sizeof(dir), "%s", taskdir);
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(dir, '/');
		if (!slash)
			return;
		*slash = '\0';
	}
	if (strlen(dir) + 6 >= sizeof(dir) || !json_is_integer(dev))
		return;
	strcat(dir, "/vgpu");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return;
	snprintf(v->board, sizeof(v->board), "%s/gpu%lld.board", dir,
		 (long long)json_integer_value(dev));
}

int xp_vgpu_plan(const void *assignment, const char *taskdir, int cuda, struct xp_vgpu_env *v,
		 struct xp_err *err)
{
	json_t *as = (json_t *)assignment;
	long long milli = json_integer_value(json_object_get(as, "dev_milli"));
	long long mem = json_integer_value(json_object_get(as, "dev_mem_mib"));
	const char *opt = json_string_value(json_object_get(as, "vgpu"));
	const char *mode = json_string_value(json_object_get(as, "dev_mode"));
	memset(v, 0, sizeof(*v));
	if (!cuda || (opt && !strcmp(opt, "off")) || !json_array_size(json_object_get(as, "devices")))
		return 0;
	if (mode && !strcmp(mode, "timeslice"))
		return 0; /* the admin's documented exception: time-sliced, nothing isolated */
	if (json_object_get(as, "mig"))
		return 0; /* a MIG instance: isolated by the GPU itself */
	if ((milli <= 0 || milli >= 1000) && mem <= 0)
		return 0; /* whole devices, no memory cap: nothing to enforce */
	if (find_lib(v->preload, sizeof(v->preload)) < 0)
		return xp_errf(err, XP_ENOENT,
			       "vgpu: %s not found: the GPU share cannot be enforced (vgpu: off in "
			       "the job runs it unenforced)",
			       v->preload[0] ? v->preload : "libxpool-vgpu.so");
	snprintf(v->account, sizeof(v->account), "%s/vgpu.acct", taskdir);
	if (mem > 0)
		snprintf(v->mem_mib, sizeof(v->mem_mib), "%lld", mem);
	if (milli > 0 && milli < 1000) {
		snprintf(v->milli, sizeof(v->milli), "%lld", milli);
		board_path(taskdir, json_array_get(json_object_get(as, "devices"), 0), v);
		snprintf(v->prio, sizeof(v->prio), "%lld",
			 json_integer_value(json_object_get(as, "priority")));
	}
	return 1;
}

void xp_vgpu_check(struct xp_agent *a, struct xp_task *t, int64_t now)
{
	char path[600];
	if (!t->vgpu_check_at || now < t->vgpu_check_at || t->state != XP_TASK_RUNNING)
		return;
	t->vgpu_check_at = 0;
	snprintf(path, sizeof(path), "%s/vgpu.acct", t->dir);
	if (access(path, F_OK) == 0)
		return;
	snprintf(t->reason, sizeof(t->reason), "limits");
	snprintf(t->detail, sizeof(t->detail),
		 "vgpu: no process of the replica loaded libxpool-vgpu.so within %d s (a static "
		 "binary, a set-uid program, or LD_PRELOAD removed): ended rather than run "
		 "without its GPU limits",
		 XP_VGPU_REGISTER_MS / 1000);
	fprintf(stderr, "xpool agent: node=%s job=%llu replica=%u: %s\n", a->node,
		(unsigned long long)t->job, t->replica, t->detail);
	xp_task_kill(a, t, now);
}

int xp_vgpu_usage(const char *taskdir, struct xp_vgpu_usage *u)
{
	char path[600];
	struct stat sb;
	snprintf(path, sizeof(path), "%s/vgpu.acct", taskdir);
	memset(u, 0, sizeof(*u));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	const struct xv_account *a = NULL;
	if (fstat(fd, &sb) == 0 && sb.st_size >= (off_t)sizeof(*a))
		a = mmap(NULL, sizeof(*a), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (!a || a == MAP_FAILED)
		return -1;
	int rc = -1;
	/* a replica started by an older library has another layout: not read */
	if (__atomic_load_n(&a->magic, __ATOMIC_ACQUIRE) == XV_MAGIC &&
	    a->version == XV_VERSION && a->ndev <= XV_MAXDEV) {
		for (uint32_t d = 0; d < a->ndev; d++) {
			const struct xv_dev *x = &a->dev[d];
			u->mem_mib += x->used_bytes / XV_MIB;
			u->peak_mib += x->peak_bytes / XV_MIB;
			u->ooms += x->ooms;
			u->dev_ooms += x->dev_ooms;
			if (x->milli < 1000) {
				u->spent_ns += x->filled_ns - atomic_load(&x->budget_ns);
				if (x->clock_ns > u->clock_ns)
					u->clock_ns = x->clock_ns;
			}
		}
		rc = 0;
	}
	munmap((void *)a, sizeof(*a));
	return rc;
}

int64_t xp_vgpu_check_after(void)
{
	return XP_VGPU_REGISTER_MS;
}
