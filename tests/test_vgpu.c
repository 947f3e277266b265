/*
 * test_vgpu: libxpool-vgpu.so (src/vgpu) held to its limits through the
 * real path - LD_PRELOAD, dlopen("libcuda.so.1"), dlsym and
 * cuGetProcAddress - in real processes (tests/helpers/vgpu_app.c) against
 * the fake driver (tests/fakelibs/fake_cuda.c). Compute shares are measured
 * in the fake's simulated device time, so they hold under sanitizers and on
 * a loaded machine; nothing here sleeps or times anything on the wall
 * clock.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/state/spec.h"
#include "edge/edge.h"
#include "lib/err.h"
#include "testutil.h"

#define MIB (1024ULL * 1024ULL)

struct app {
	pid_t pid;
	FILE *in, *out;
};

static char dir[256];
static const char *app = XP_VGPU_APP; /* or the one linked against libcuda */

/* start the app with env ("K=V", NULL-terminated); preload: the interposer */
static void start(struct app *a, const char *const *env, int preload, const char *const *argv)
{
	int in[2], out[2];
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	a->pid = fork();
	assert_true(a->pid >= 0);
	if (a->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		setenv("LD_LIBRARY_PATH", XP_FAKE_CUDA_DIR, 1);
		/* the sanitizer build: the runtime need not come first; the
		 * app's deliberate leaks (streams, graphs) are not the subject */
		setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1);
		if (preload)
			setenv("LD_PRELOAD", XP_VGPU_LIB, 1);
		for (; env && *env; env++)
			putenv((char *)*env);
		execv(app, (char *const *)argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	a->in = fdopen(in[1], "w");
	a->out = fdopen(out[0], "r");
}

static void say(struct app *a, const char *line)
{
	fputs(line, a->in);
	fflush(a->in);
}

/* the first line that starts with key: its first number */
static long long read_value(struct app *a, const char *key)
{
	char line[512];
	while (fgets(line, sizeof(line), a->out)) {
		if (!strncmp(line, key, strlen(key)))
			return strtoll(line + strlen(key), NULL, 10);
		fprintf(stderr, "(app said: %s)", line);
	}
	fail_msg("the app ended without '%s'", key);
	return -1;
}

static int finish(struct app *a)
{
	int st = 0;
	if (a->in)
		fclose(a->in);
	a->in = NULL;
	waitpid(a->pid, &st, 0);
	fclose(a->out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *path(const char *name)
{
	static char buf[8][320];
	static int k;
	char *p = buf[k++ % 8];
	snprintf(p, 320, "%s/%s", dir, name);
	return p;
}

static char *kv(const char *k, const char *v)
{
	static char buf[32][400];
	static int n;
	char *p = buf[n++ % 32];
	snprintf(p, 400, "%s=%s", k, v);
	return p;
}

static int setup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/xp-vgpu-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	xp_test_rmdir(dir);
	return 0;
}

/* three processes of one job allocate at once: the job ends exactly at the
 * cap (the largest multiple of the chunk under it), every allocation call
 * in turn, two resolving through cuGetProcAddress and one through dlsym */
static void test_vgpu_cap_three_processes(void **state)
{
	struct app a[3];
	const char *argv[] = { "vgpu_app", "alloc", "7", NULL };
	long long got = 0;
	for (int i = 0; i < 3; i++) {
		const char *env[] = { kv("XPOOL_VGPU_ACCOUNT", path("acct")),
				      kv("XPOOL_VGPU_MEMORY_MIB", "1000"),
				      kv("VGPU_APP_RESOLVE", i == 2 ? "dlsym" : "gpa"),
				      kv("FAKE_CUDA_STATE", path("gpu")), NULL };
		start(&a[i], env, 1, argv);
	}
	for (int i = 0; i < 3; i++)
		say(&a[i], "go\n");
	for (int i = 0; i < 3; i++)
		got += read_value(&a[i], "got ");
	for (int i = 0; i < 3; i++)
		assert_int_equal(finish(&a[i]), 0);
	printf("vgpu: 3 processes at a 1000 MiB cap in 7 MiB chunks got %lld MiB together "
	       "(exact: %d)\n", got / (long long)MIB, 1000 / 7 * 7);
	assert_int_equal(got, (long long)(1000 / 7 * 7) * (long long)MIB);
}

static void info(const char *const *env, int preload, long long mib, long long out[5])
{
	struct app a;
	char arg[32];
	snprintf(arg, sizeof(arg), "%lld", mib);
	const char *argv[] = { "vgpu_app", "info", arg, NULL };
	start(&a, env, preload, argv);
	char line[512];
	assert_non_null(fgets(line, sizeof(line), a.out));
	memset(out, 0, 5 * sizeof(out[0]));
	int n = sscanf(line, "free %lld total %lld devtotal %lld nvml_total %lld nvml_used %lld",
		       &out[0], &out[1], &out[2], &out[3], &out[4]);
	assert_int_equal(finish(&a), 0);
	assert_int_equal(n, 5);
}

/* cuMemGetInfo, cuDeviceTotalMem and NVML report the cap */
static void test_vgpu_meminfo_shows_cap(void **state)
{
	long long v[5];
	const char *env[] = { kv("XPOOL_VGPU_ACCOUNT", path("acct")),
			      kv("XPOOL_VGPU_MEMORY_MIB", "4096"), kv("VGPU_APP_NVML", XP_FAKE_NVML),
			      "FAKE_NVML_COUNT=1", NULL };
	info(env, 1, 1000, v);
	assert_int_equal(v[0], 3096 * (long long)MIB);
	assert_int_equal(v[1], 4096 * (long long)MIB);
	assert_int_equal(v[2], 4096 * (long long)MIB);
	assert_int_equal(v[3], 4096 * (long long)MIB);
	assert_int_equal(v[4], 1000 * (long long)MIB);
}

/* a context is charged its constant once per process */
static void test_vgpu_context_charged(void **state)
{
	long long v[5];
	const char *env[] = { kv("XPOOL_VGPU_ACCOUNT", path("acct")),
			      kv("XPOOL_VGPU_MEMORY_MIB", "4096"), "XPOOL_VGPU_CONTEXT_MIB=300",
			      kv("VGPU_APP_NVML", XP_FAKE_NVML), "FAKE_NVML_COUNT=1", NULL };
	info(env, 1, 1000, v);
	assert_int_equal(v[0], (4096 - 300 - 1000) * (long long)MIB);
	assert_int_equal(v[4], 1300 * (long long)MIB);
}

/* no limit: the real totals, with and without the library */
static void test_vgpu_unlimited_real_totals(void **state)
{
	long long v[5];
	const char *env[] = { kv("VGPU_APP_NVML", XP_FAKE_NVML), "FAKE_NVML_COUNT=1", NULL };
	for (int preload = 0; preload < 2; preload++) {
		info(env, preload, 1000, v);
		assert_int_equal(v[0], (16384 - 1000) * (long long)MIB);
		assert_int_equal(v[1], 16384 * (long long)MIB);
		assert_int_equal(v[2], 16384 * (long long)MIB);
		assert_int_equal(v[3], 81920 * (long long)MIB);
	}
}

/* two jobs at m1 and m2 milli, greedy, mode; their shares of 10 s of
 * simulated device time within 3 points */
/* the two jobs' shares of 10 s of simulated device time, in got[];
 * with prio[] set, both jobs are on one GPU's board with those priorities */
static const char *prio[2];
static void run_pair(const char *m1, const char *m2, const char *mode, const char *mode2, int ptsz,
		     const char *jitter, int preload, double got[2])
{
	struct app a[2];
	const char *milli[2] = { m1, m2 };
	for (int i = 0; i < 2; i++) {
		const char *argv[] = { "vgpu_app", "run", "10", "264", "500", i ? mode2 : mode, NULL };
		char acct[32];
		snprintf(acct, sizeof(acct), "acct%d", i);
		const char *env[] = { kv("XPOOL_VGPU_ACCOUNT", path(acct)),
				      kv("XPOOL_VGPU_COMPUTE_MILLI", milli[i]),
				      kv("FAKE_CUDA_STATE", path("gpu")),
				      "FAKE_CUDA_PARTIES=2",
				      "FAKE_CUDA_HORIZON_MS=10000",
				      ptsz ? "VGPU_APP_PTSZ=1" : "VGPU_APP_NONE=1",
				      kv("FAKE_CUDA_JITTER", jitter),
				      prio[i] ? kv("XPOOL_VGPU_BOARD", path("board")) : NULL,
				      prio[i] ? kv("XPOOL_VGPU_PRIORITY", prio[i]) : NULL,
				      NULL };
		start(&a[i], env, preload, argv);
	}
	for (int i = 0; i < 2; i++) {
		long long busy = read_value(&a[i], "busy_ns ");
		got[i] = (double)busy / 1e10;
		assert_int_equal(finish(&a[i]), 0);
	}
}

static void shares_jitter(const char *m1, const char *m2, const char *mode, const char *mode2,
			  int ptsz, const char *jitter)
{
	double got[2];
	run_pair(m1, m2, mode, mode2, ptsz, jitter, 1, got);
	printf("vgpu: %s/%s milli, %s/%s launches, kernel times +-%s%%: %.1f%% and %.1f%% of 10 s "
	       "simulated device time (errors %+.1f and %+.1f points)\n",
	       m1, m2, mode, mode2, jitter, 100 * got[0], 100 * got[1], 100 * got[0] - atoi(m1) / 10.0,
	       100 * got[1] - atoi(m2) / 10.0);
	assert_true(fabs(100 * got[0] - atoi(m1) / 10.0) <= 3.0);
	assert_true(fabs(100 * got[1] - atoi(m2) / 10.0) <= 3.0);
}

static void shares(const char *m1, const char *m2, const char *mode, const char *mode2, int ptsz)
{
	shares_jitter(m1, m2, mode, mode2, ptsz, "0");
}

static void test_vgpu_share_eager(void **state)
{
	shares("300", "700", "eager", "eager", 0);
}

static void test_vgpu_share_graph(void **state)
{
	shares("300", "700", "graph", "graph", 0);
}

/* cuLaunchKernelEx and cuLaunchCooperativeKernel, per-thread streams */
static void test_vgpu_share_ex_coop_ptsz(void **state)
{
	shares("100", "900", "ex", "coop", 1);
}

/* a program linked against libcuda.so.1 (-lcuda, as Triton's launcher
 * is) calls the driver's symbols directly: held the same way */
static void test_vgpu_direct_linked(void **state)
{
	double got[2];
	app = XP_VGPU_APP_DIRECT;
	test_vgpu_cap_three_processes(state);
	xp_test_rmdir(dir);
	setup(state);
	run_pair("300", "700", "eager", "graph", 0, "0", 1, got);
	app = XP_VGPU_APP;
	printf("vgpu: linked with -lcuda, 300/700 milli: %.1f%% and %.1f%%\n", 100 * got[0],
	       100 * got[1]);
	assert_true(fabs(100 * got[0] - 30) <= 3.0 && fabs(100 * got[1] - 70) <= 3.0);
}

/* the control: without the library the same two greedy jobs split the
 * GPU about evenly, so the shares above are the interposer's doing */
static void test_vgpu_share_control_unlimited(void **state)
{
	double got[2];
	run_pair("300", "700", "eager", "eager", 0, "0", 0, got);
	printf("vgpu: without the library, the 300 and 700 milli jobs got %.1f%% and %.1f%%\n",
	       100 * got[0], 100 * got[1]);
	assert_true(got[0] > 0.4 && got[1] > 0.4);
}

/* kernels whose times vary +-20 % around their shape's mean */
static void test_vgpu_share_jitter(void **state)
{
	shares_jitter("300", "700", "eager", "graph", 0, "20");
}

/* priority under contention: a 700-milli job of priority 10 and a
 * 600-milli job of priority 0, both greedy, want 1.3 GPUs; the high one
 * is served its 70 % first and the low one yields to 30 %. The control:
 * at equal priority the same pair splits the GPU nearer even, so the 70/30
 * is the board's doing */
static void test_vgpu_priority_contended(void **state)
{
	double got[2], ctl[2];
	prio[0] = "10", prio[1] = "0";
	run_pair("700", "600", "eager", "eager", 0, "0", 1, got);
	xp_test_rmdir(dir);
	setup(state);
	prio[0] = prio[1] = "5";
	run_pair("700", "600", "eager", "eager", 0, "0", 1, ctl);
	prio[0] = prio[1] = NULL;
	printf("vgpu: 700 milli at priority 10 and 600 at 0 on one GPU: %.1f%% and %.1f%% of 10 s "
	       "simulated device time (errors %+.1f and %+.1f points against 70/30); at equal "
	       "priority %.1f%% and %.1f%%\n",
	       100 * got[0], 100 * got[1], 100 * got[0] - 70, 100 * got[1] - 30, 100 * ctl[0],
	       100 * ctl[1]);
	assert_true(fabs(100 * got[0] - 70) <= 3.0);
	assert_true(fabs(100 * got[1] - 30) <= 3.0);
	assert_true(ctl[1] > got[1] + 0.05); /* without priority the low one gets more */
	assert_true(ctl[0] <= 0.70 + 0.03 && ctl[1] <= 0.60 + 0.03); /* caps hold either way */
}

/* the low-priority job yields only while the high one launches: with the
 * high one idle (its job never launches: vgpu_app's "idle" mode) the low
 * one gets its whole 600 */
static void test_vgpu_priority_idle_high(void **state)
{
	double got[2];
	prio[0] = "10", prio[1] = "0";
	run_pair("700", "600", "idle", "eager", 0, "0", 1, got);
	prio[0] = prio[1] = NULL;
	printf("vgpu: the 600-milli job of priority 0 beside an idle one of priority 10: %.1f%%\n",
	       100 * got[1]);
	assert_true(got[0] < 0.01);
	assert_true(fabs(100 * got[1] - 60) <= 3.0);
}

/* a killed process's memory is back for the next allocation */
static void test_vgpu_killed_reclaimed(void **state)
{
	struct app hold, other, reclaim;
	const char *env[] = { kv("XPOOL_VGPU_ACCOUNT", path("acct")),
			      kv("XPOOL_VGPU_MEMORY_MIB", "1024"), NULL };
	const char *hold_argv[] = { "vgpu_app", "hold", "800", NULL };
	const char *info_argv[] = { "vgpu_app", "info", "800", NULL };
	const char *reclaim_argv[] = { "vgpu_app", "reclaim", "800", NULL };
	char line[256];
	start(&hold, env, 1, hold_argv);
	assert_int_equal(read_value(&hold, "held"), 0);
	start(&other, env, 1, info_argv); /* while it lives, 800 more do not fit */
	assert_non_null(fgets(line, sizeof(line), other.out));
	assert_string_equal(line, "alloc refused\n");
	assert_int_equal(finish(&other), 0);
	start(&reclaim, env, 1, reclaim_argv);
	kill(hold.pid, SIGKILL);
	assert_int_equal(finish(&hold), 128 + SIGKILL);
	say(&reclaim, "go\n");
	long long ns = read_value(&reclaim, "reclaim_ns ");
	assert_int_equal(finish(&reclaim), 0);
	printf("vgpu: a killed process's 800 MiB were back after %.3f s simulated\n", ns / 1e9);
	assert_true(ns >= 0 && ns <= 1000000000LL);
}

/* a forked child that exits gives back nothing of its parent's */
static void test_vgpu_fork_child(void **state)
{
	struct app a;
	long long fr, tot;
	const char *env[] = { kv("XPOOL_VGPU_ACCOUNT", path("acct")),
			      kv("XPOOL_VGPU_MEMORY_MIB", "1024"), NULL };
	const char *argv[] = { "vgpu_app", "fork", "100", NULL };
	char line[256];
	start(&a, env, 1, argv);
	assert_non_null(fgets(line, sizeof(line), a.out));
	assert_int_equal(sscanf(line, "free %lld total %lld", &fr, &tot), 2);
	assert_int_equal(finish(&a), 0);
	assert_int_equal(fr, 924 * (long long)MIB);
}

/* limits, but no driver: one line, and the program runs */
static void test_vgpu_no_driver(void **state)
{
	char cmd[1024], line[512];
	snprintf(cmd, sizeof(cmd),
		 "env -u LD_LIBRARY_PATH LD_PRELOAD=%s XPOOL_VGPU_MEMORY_MIB=100 "
		 "ASAN_OPTIONS=verify_asan_link_order=0 /bin/sh -c 'echo ran' 2>&1",
		 XP_VGPU_LIB);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	int lines = 0, ran = 0, said = 0;
	while (fgets(line, sizeof(line), f)) {
		lines++;
		ran |= !strcmp(line, "ran\n");
		said |= strstr(line, "no CUDA driver") != NULL;
	}
	assert_int_equal(pclose(f), 0);
	assert_true(ran && said);
	assert_int_equal(lines, 2);
}

/* bad limits are refused at submit, naming the field */
static void test_vgpu_bad_limits_refused(void **state)
{
	static const struct {
		const char *devices, *field;
	} bad[] = {
		{ "{fraction: 0}", "resources.devices.fraction" },
		{ "{fraction: -0.5}", "resources.devices.fraction" },
		{ "{fraction: 1.5}", "resources.devices.fraction" },
		{ "{fraction: half}", "resources.devices.fraction" },
		{ "{compute_milli: 0}", "resources.devices.compute_milli" },
		{ "{compute_milli: 1001}", "resources.devices.compute_milli" },
		{ "{fraction: 0.3, memory: 0}", "resources.devices.memory" },
		{ "{fraction: 0.3, memory: -4Gi}", "resources.devices.memory" },
		{ "{fraction: 0.3, memory: lots}", "resources.devices.memory" },
		{ "{fraction: 0.3, memory: 99999Ti}", "resources.devices.memory" },
		{ "{fraction: 0.3, count: 2}", "resources.devices" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[256], field[320] = "";
		struct xp_jobspec s;
		struct xp_err err = { 0 };
		snprintf(text, sizeof(text), "command: [true]\nresources: {devices: %s}\n",
			 bad[i].devices);
		memset(&s, 0, sizeof(s));
		int rc = xp_jobspec_parse_text("spec", text, strlen(text), 0, &s, field, &err);
		xp_jobspec_free(&s);
		if (rc >= 0 || strcmp(field, bad[i].field))
			fail_msg("devices %s: rc %d field '%s' (%s), want %s", bad[i].devices, rc,
				 field, err.text, bad[i].field);
	}
	const char *opt = "command: [true]\nvgpu: maybe\n";
	char field[320] = "";
	struct xp_jobspec s;
	struct xp_err err = { 0 };
	memset(&s, 0, sizeof(s));
	assert_true(xp_jobspec_parse_text("spec", opt, strlen(opt), 0, &s, field, &err) < 0);
	xp_jobspec_free(&s);
	assert_string_equal(field, "vgpu");
	opt = "command: [true]\nvgpu: off\n";
	memset(&s, 0, sizeof(s));
	assert_int_equal(xp_jobspec_parse_text("spec", opt, strlen(opt), 0, &s, field, &err), 0);
	assert_int_equal(s.vgpu_off, 1);
	char *json = xp_jobspec_to_json(&s);
	assert_non_null(strstr(json, "\"vgpu\":\"off\""));
	free(json);
	xp_jobspec_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_vgpu_cap_three_processes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_meminfo_shows_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_context_charged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_unlimited_real_totals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_share_eager, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_share_graph, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_share_ex_coop_ptsz, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_share_jitter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_share_control_unlimited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_priority_contended, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_priority_idle_high, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_direct_linked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_killed_reclaimed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_fork_child, setup, teardown),
		cmocka_unit_test_setup_teardown(test_vgpu_no_driver, setup, teardown),
		cmocka_unit_test(test_vgpu_bad_limits_refused),
	};
	return xp_run_tests(tests, NULL, NULL);
}
