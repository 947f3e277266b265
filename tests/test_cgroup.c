/*
 * test_cgroup: the agent's limits (src/agent/cgroup.c) against fake cgroup
 * roots made of plain files in a temp folder: the agent writes into them,
 * the test reads them back.
 *  - CPU lists parse and print back; the exclusive bookkeeping matches a
 *    naive model over random take/give sequences, and over random task
 *    starts and ends on a fake root (the files too: exclusive sets are
 *    disjoint, sharers hold the rest);
 *  - the layout is read from files: v2 (cgroup.controllers), v1 (memory/,
 *    cpu/ or cpu,cpuacct/, cpuset/), none;
 *  - the files written for a task, v1 and v2: memory and swap limits, CPU
 *    quota, cpusets (v1 copies the memory nodes), the procs files;
 *  - limits that cannot be set fail with the file and errno and leave
 *    nothing taken; OOM kills are read from memory.oom_control /
 *    memory.events.
 */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/cgroup.h"
#include "lib/rng.h"

static char root[64];

static void put(const char *rel, const char *text)
{
	char p[512], cmd[700];
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	assert_int_equal(system(cmd), 0);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* the file's text without the trailing newline ("" when absent) */
static const char *get(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *get(const char *fmt, ...)
{
	static char buf[4][1024];
	static int slot;
	char rel[512], p[700];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rel, sizeof(rel), fmt, ap);
	va_end(ap);
	snprintf(p, sizeof(p), "%s/%s", root, rel);
	char *b = buf[slot++ & 3];
	b[0] = '\0';
	FILE *f = fopen(p, "r");
	if (f) {
		size_t n = fread(b, 1, sizeof(buf[0]) - 1, f);
		fclose(f);
		b[n] = '\0';
		while (n && b[n - 1] == '\n')
			b[--n] = '\0';
	}
	return b;
}

static int setup_root(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/xpcgroupXXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown_root(void **state)
{
	(void)state;
	xp_test_rmdir(root);
	return 0;
}

/* a v1 machine as this project's CI has it: separate cpu and cpuacct */
static void fake_v1(const char *cpus)
{
	put("memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("memory/memory.memsw.limit_in_bytes", "9223372036854771712\n");
	put("cpu/cpu.cfs_quota_us", "-1\n");
	put("cpuacct/cpuacct.usage", "0\n");
	put("cpuset/cpuset.cpus", cpus);
	put("cpuset/cpuset.mems", "0-1\n");
}

static void test_cpus_lists(void **state)
{
	(void)state;
	static const char *const good[][2] = {
		{ "0-3,8,10-11\n", "0-3,8,10-11" },
		{ "", "" },
		{ "5", "5" },
		{ "0,1,2,3", "0-3" },
		{ "7-7", "7" },
		{ "1023", "1023" },
		{ "0-1023", "0-1023" },
	};
	struct xp_cpus s;
	char buf[8192];
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(xp_cpus_parse(good[i][0], &s), 0);
		xp_cpus_format(&s, buf, sizeof(buf));
		assert_string_equal(buf, good[i][1]);
	}
	assert_int_equal(xp_cpus_parse("0-1023", &s), 0);
	assert_int_equal(xp_cpus_count(&s), 1024);
	static const char *const bad[] = { "1024", "3-1", "a", "1-", "1,,2", "1;2", "-1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(xp_cpus_parse(bad[i], &s), XP_EINVAL);
}

/* xp_cpus_take / give against a naive model: an array of owners */
static void test_cpus_random(void **state)
{
	(void)state;
	enum { N = 96, HOLDERS = 12 };
	struct xp_rng rng;
	xp_rng_seed(&rng, 18);
	for (int round = 0; round < 50; round++) {
		struct xp_cpus avail, taken, held[HOLDERS];
		int owner[N], has[HOLDERS] = { 0 };
		memset(&avail, 0, sizeof(avail));
		memset(&taken, 0, sizeof(taken));
		for (int c = 0; c < N; c++) { /* a machine with holes (offline CPUs) */
			owner[c] = xp_rng_below(&rng, 8) ? -1 : -2;
			if (owner[c] == -1)
				avail.w[c / 64] |= 1ull << (c % 64);
		}
		for (int step = 0; step < 400; step++) {
			int h = (int)xp_rng_below(&rng, HOLDERS);
			if (has[h]) { /* give back */
				xp_cpus_give(&taken, &held[h]);
				for (int c = 0; c < N; c++)
					if (owner[c] == h)
						owner[c] = -1;
				has[h] = 0;
			} else { /* take n: the lowest free ones, or nothing */
				unsigned n = 1 + (unsigned)xp_rng_below(&rng, 16), nfree = 0;
				for (int c = 0; c < N; c++)
					nfree += owner[c] == -1;
				int rc = xp_cpus_take(&taken, &avail, n, &held[h]);
				assert_int_equal(rc, nfree >= n ? 0 : -1);
				for (int c = 0; rc == 0 && c < N && n; c++)
					if (owner[c] == -1) {
						owner[c] = h;
						n--;
					}
				has[h] = rc == 0;
			}
			for (int c = 0; c < N; c++) {
				assert_int_equal(xp_cpus_has(&taken, (unsigned)c), owner[c] >= 0);
				for (int k = 0; k < HOLDERS; k++)
					if (has[k])
						assert_int_equal(xp_cpus_has(&held[k], (unsigned)c),
								 owner[c] == k);
			}
		}
	}
}

static void test_detect(void **state)
{
	(void)state;
	struct xp_cg cg;
	struct xp_err err = { 0 };
	assert_int_equal(xp_cg_detect(&cg, root, &err), XP_EUNSUPP); /* empty */
	assert_non_null(strstr(err.text, "no cgroup at"));
	assert_int_equal(xp_cg_detect(&cg, "/nonexistent", &err), XP_EUNSUPP);
	/* v1 without a cpu hierarchy; then cpu,cpuacct as one */
	put("memory/memory.limit_in_bytes", "9223372036854771712\n");
	assert_int_equal(xp_cg_detect(&cg, root, &err), XP_EUNSUPP);
	assert_non_null(strstr(err.text, "no cpu hierarchy"));
	put("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
	assert_int_equal(xp_cg_detect(&cg, root, &err), 0);
	assert_int_equal(cg.layout, XP_CG_V1);
	assert_string_equal(cg.cpu_dir, "cpu,cpuacct");
	assert_false(cg.memsw);
	assert_false(cg.cpuset);
	fake_v1("0-3\n");
	assert_int_equal(xp_cg_detect(&cg, root, &err), 0);
	assert_string_equal(cg.cpu_dir, "cpu");
	assert_true(cg.memsw);
	assert_true(cg.cpuset);
	/* v2 wins where cgroup.controllers is; it needs cpu and memory */
	put("cgroup.controllers", "cpuset cpu io pids\n");
	assert_int_equal(xp_cg_detect(&cg, root, &err), XP_EUNSUPP);
	assert_non_null(strstr(err.text, "no memory controller"));
	put("cgroup.controllers", "cpu io memory pids\n");
	assert_int_equal(xp_cg_detect(&cg, root, &err), 0);
	assert_int_equal(cg.layout, XP_CG_V2);
	assert_false(cg.cpuset);
	put("cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	assert_int_equal(xp_cg_detect(&cg, root, &err), 0);
	assert_true(cg.cpuset);
	char why[512];
	assert_int_equal(xp_cg_probe("/nonexistent", why, sizeof(why)), 0);
	assert_non_null(strstr(why, "no cgroup at /nonexistent"));
}

static void test_v1_files(void **state)
{
	(void)state;
	struct xp_cg cg;
	struct xp_cg_task a, b;
	struct xp_err err = { 0 };
	fake_v1("0-3\n");
	assert_int_equal(xp_cg_open(&cg, root, "t1", &err), 0);
	/* the xpool cpuset got its parent's CPUs and memory nodes */
	assert_string_equal(get("cpuset/xpool/cpuset.cpus"), "0-3");
	assert_string_equal(get("cpuset/xpool/cpuset.mems"), "0-1");
	/* a fraction: memory and memory+swap, quota, the shared CPUs */
	assert_int_equal(xp_cg_setup(&cg, "7-0-1", 1500, 64, &a, &err), 0);
	assert_string_equal(a.name, "7-0-1.t1");
	assert_string_equal(get("memory/xpool/7-0-1.t1/memory.limit_in_bytes"), "67108864");
	assert_string_equal(get("memory/xpool/7-0-1.t1/memory.memsw.limit_in_bytes"), "67108864");
	assert_string_equal(get("cpu/xpool/7-0-1.t1/cpu.cfs_period_us"), "100000");
	assert_string_equal(get("cpu/xpool/7-0-1.t1/cpu.cfs_quota_us"), "150000");
	assert_string_equal(get("cpuset/xpool/7-0-1.t1/cpuset.mems"), "0-1");
	assert_string_equal(get("cpuset/xpool/7-0-1.t1/cpuset.cpus"), "0-3");
	assert_false(a.exclusive);
	assert_int_equal(a.nprocs, 3);
	assert_int_equal(xp_cg_attach(&a, 4242, &err), 0);
	assert_string_equal(get("memory/xpool/7-0-1.t1/cgroup.procs"), "4242");
	assert_string_equal(get("cpu/xpool/7-0-1.t1/cgroup.procs"), "4242");
	assert_string_equal(get("cpuset/xpool/7-0-1.t1/cgroup.procs"), "4242");
	/* two whole cores: CPUs of its own; the sharer leaves them */
	assert_int_equal(xp_cg_setup(&cg, "8-0-1", 2000, 1024, &b, &err), 0);
	assert_true(b.exclusive);
	assert_string_equal(get("cpuset/xpool/8-0-1.t1/cpuset.cpus"), "0-1");
	assert_string_equal(get("cpuset/xpool/7-0-1.t1/cpuset.cpus"), "2-3");
	assert_string_equal(get("memory/xpool/8-0-1.t1/memory.limit_in_bytes"), "1073741824");
	/* two more: one CPU must stay for the sharer, so it shares, and says so */
	struct xp_cg_task c;
	assert_int_equal(xp_cg_setup(&cg, "9-0-1", 2000, 64, &c, &err), 0);
	assert_false(c.exclusive);
	assert_non_null(strstr(c.note, "not enough free CPUs"));
	assert_string_equal(get("cpuset/xpool/9-0-1.t1/cpuset.cpus"), "2-3");
	/* a tiny share still gets v1's minimum quota */
	struct xp_cg_task d;
	assert_int_equal(xp_cg_setup(&cg, "10-0-1", 1, 64, &d, &err), 0);
	assert_string_equal(get("cpu/xpool/10-0-1.t1/cpu.cfs_quota_us"), "1000");
	/* the exclusive one ends: the sharers get its CPUs back */
	xp_cg_remove(&cg, b.name);
	assert_string_equal(get("cpuset/xpool/7-0-1.t1/cpuset.cpus"), "0-3");
	assert_string_equal(get("cpuset/xpool/9-0-1.t1/cpuset.cpus"), "0-3");
	assert_int_equal(xp_cpus_count(&cg.excl), 0);
	/* a restarted agent takes an adopted task's CPUs again */
	struct xp_cpus held;
	assert_int_equal(xp_cpus_parse("3", &held), 0);
	xp_cg_adopt(&cg, "11-0-1.t1", 1, &held);
	assert_int_equal(xp_cg_setup(&cg, "12-0-1", 1000, 64, &b, &err), 0);
	assert_true(b.exclusive);
	assert_string_equal(get("cpuset/xpool/12-0-1.t1/cpuset.cpus"), "0");
	assert_string_equal(get("cpuset/xpool/7-0-1.t1/cpuset.cpus"), "1-2");
	char desc[512];
	xp_cg_describe(&cg, desc, sizeof(desc));
	assert_non_null(strstr(desc, "cgroup v1 at"));
	assert_non_null(strstr(desc, "memory+swap, cpu quota, cpuset 0-3"));
	xp_cg_close(&cg);
}

/* an admin narrowed the xpool cpuset: its CPUs are the ones handed out;
 * cpu,cpuacct mounted as one; no swap accounting */
static void test_v1_narrowed(void **state)
{
	(void)state;
	struct xp_cg cg;
	struct xp_cg_task a;
	struct xp_err err = { 0 };
	put("memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
	put("cpuset/cpuset.cpus", "0-7\n");
	put("cpuset/cpuset.mems", "0\n");
	put("cpuset/xpool/cpuset.cpus", "4-7\n");
	assert_int_equal(xp_cg_open(&cg, root, "t2", &err), 0);
	assert_string_equal(get("cpuset/xpool/cpuset.cpus"), "4-7");
	assert_string_equal(get("cpuset/xpool/cpuset.mems"), "0");
	assert_int_equal(xp_cg_setup(&cg, "1-2-3", 3000, 100, &a, &err), 0);
	assert_string_equal(get("cpuset/xpool/1-2-3.t2/cpuset.cpus"), "4-6");
	assert_string_equal(get("cpu,cpuacct/xpool/1-2-3.t2/cpu.cfs_quota_us"), "300000");
	assert_string_equal(get("memory/xpool/1-2-3.t2/memory.memsw.limit_in_bytes"), "");
	xp_cg_close(&cg);
}

static void test_v2_files(void **state)
{
	(void)state;
	struct xp_cg cg;
	struct xp_cg_task a, b;
	struct xp_err err = { 0 };
	put("cgroup.controllers", "cpuset cpu io memory pids\n");
	put("cgroup.subtree_control", "cpu io\n");
	put("cpuset.cpus.effective", "0-7\n");
	put("xpool/memory.swap.max", "max\n"); /* the kernel's when swap is accounted */
	assert_int_equal(xp_cg_open(&cg, root, "t3", &err), 0);
	assert_true(cg.swap_max);
	assert_string_equal(get("cgroup.subtree_control"), "+cpu +memory +cpuset");
	assert_string_equal(get("xpool/cgroup.subtree_control"), "+cpu +memory +cpuset");
	assert_int_equal(xp_cg_setup(&cg, "3-0-1", 500, 256, &a, &err), 0);
	assert_string_equal(get("xpool/3-0-1.t3/cpu.max"), "50000 100000");
	assert_string_equal(get("xpool/3-0-1.t3/memory.max"), "268435456");
	assert_string_equal(get("xpool/3-0-1.t3/memory.swap.max"), "0");
	assert_string_equal(get("xpool/3-0-1.t3/cpuset.cpus"), "0-7");
	assert_int_equal(a.nprocs, 1);
	assert_int_equal(xp_cg_attach(&a, 77, &err), 0);
	assert_string_equal(get("xpool/3-0-1.t3/cgroup.procs"), "77");
	assert_int_equal(xp_cg_setup(&cg, "4-0-1", 4000, 256, &b, &err), 0);
	assert_string_equal(get("xpool/4-0-1.t3/cpuset.cpus"), "0-3");
	assert_string_equal(get("xpool/3-0-1.t3/cpuset.cpus"), "4-7");
	/* OOM: memory.events counts the kills */
	assert_int_equal(xp_cg_oom(&cg, a.name), 0);
	put("xpool/3-0-1.t3/memory.events", "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n");
	assert_int_equal(xp_cg_oom(&cg, a.name), 2);
	put("xpool/3-0-1.t3/memory.events", "low 0\nhigh 0\nmax 12\noom 0\noom_kill 0\n");
	assert_int_equal(xp_cg_oom(&cg, a.name), 0);
	xp_cg_close(&cg);
	/* the controllers on already: nothing written to the root */
	put("cgroup.subtree_control", "cpuset cpu io memory\n");
	put("cgroup.controllers", "cpu io memory pids\n");
	assert_int_equal(xp_cg_open(&cg, root, "t3", &err), 0);
	assert_string_equal(get("cgroup.subtree_control"), "cpuset cpu io memory");
	assert_false(cg.cpuset);
	assert_int_equal(xp_cg_setup(&cg, "5-0-1", 1000, 64, &a, &err), 0);
	assert_string_equal(get("xpool/5-0-1.t3/cpuset.cpus"), ""); /* no cpusets: not written */
	char desc[512];
	xp_cg_describe(&cg, desc, sizeof(desc));
	assert_non_null(strstr(desc, "cgroup v2 at "));
	assert_non_null(strstr(desc, "(memory+swap, cpu quota, no cpuset)"));
	xp_cg_close(&cg);
}

static void test_v1_oom(void **state)
{
	(void)state;
	struct xp_cg cg;
	struct xp_cg_task a;
	struct xp_err err = { 0 };
	fake_v1("0-1\n");
	assert_int_equal(xp_cg_open(&cg, root, "t4", &err), 0);
	assert_int_equal(xp_cg_setup(&cg, "1-0-1", 100, 64, &a, &err), 0);
	assert_int_equal(xp_cg_oom(&cg, a.name), 0);
	put("memory/xpool/1-0-1.t4/memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
	assert_int_equal(xp_cg_oom(&cg, a.name), 2);
	put("memory/xpool/1-0-1.t4/memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
	put("memory/xpool/1-0-1.t4/memory.failcnt", "12\n");
	assert_int_equal(xp_cg_oom(&cg, a.name), 0); /* the counter says no kill */
	/* a kernel before 4.13: no counter; under_oom or failcnt say it hit the limit */
	put("memory/xpool/1-0-1.t4/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\n");
	assert_int_equal(xp_cg_oom(&cg, a.name), 1);
	put("memory/xpool/1-0-1.t4/memory.failcnt", "0\n");
	assert_int_equal(xp_cg_oom(&cg, a.name), 0);
	xp_cg_close(&cg);
}

/* limits that cannot be set: the error names the file and errno, nothing
 * is held (root writes read-only files, so the failures are a folder
 * where a file should be, and a file where a folder should be) */
static void test_refused(void **state)
{
	(void)state;
	struct xp_cg cg;
	struct xp_cg_task a;
	struct xp_err err = { 0 };
	char want[512];
	fake_v1("0-3\n");
	assert_int_equal(xp_cg_open(&cg, root, "t5", &err), 0);
	snprintf(want, sizeof(want), "%s/memory/xpool/2-0-1.t5/memory.limit_in_bytes", root);
	put("memory/xpool/2-0-1.t5/x", "");
	assert_int_equal(mkdir(want, 0755), 0); /* a folder: EISDIR */
	assert_int_equal(xp_cg_setup(&cg, "2-0-1", 2000, 64, &a, &err), -EISDIR);
	char text[700];
	snprintf(text, sizeof(text), "memory limit could not be set: EISDIR at %s", want);
	assert_string_equal(err.text, text);
	assert_int_equal(xp_cpus_count(&cg.excl), 0);
	assert_int_equal(cg.live.n, 0);
	/* the cpuset fails after the exclusive CPUs were chosen: given back */
	put("cpuset/xpool/3-0-1.t5/x", "");
	snprintf(want, sizeof(want), "%s/cpuset/xpool/3-0-1.t5/cpuset.cpus", root);
	assert_int_equal(mkdir(want, 0755), 0);
	assert_int_equal(xp_cg_setup(&cg, "3-0-1", 2000, 64, &a, &err), -EISDIR);
	assert_non_null(strstr(err.text, "CPU set could not be set: EISDIR at "));
	assert_int_equal(xp_cpus_count(&cg.excl), 0);
	assert_int_equal(cg.live.n, 0);
	/* a file where the task's cgroup should be */
	put("cpu/xpool/4-0-1.t5", "not a folder");
	assert_int_equal(xp_cg_setup(&cg, "4-0-1", 1000, 64, &a, &err), -ENOTDIR);
	assert_non_null(strstr(err.text, "CPU limit could not be set: ENOTDIR at "));
	assert_int_equal(cg.live.n, 0);
	/* attach: a procs file that cannot be written */
	assert_int_equal(xp_cg_setup(&cg, "6-0-1", 500, 64, &a, &err), 0);
	snprintf(want, sizeof(want), "%s/cpu/xpool/6-0-1.t5/cgroup.procs", root);
	assert_int_equal(mkdir(want, 0755), 0);
	assert_int_equal(xp_cg_attach(&a, 1, &err), -EISDIR);
	assert_non_null(strstr(err.text, "the task could not be moved into its cgroup: EISDIR at"));
	/* no memory share: refused rather than unbounded */
	assert_int_equal(xp_cg_setup(&cg, "7-0-1", 500, 0, &a, &err), XP_EINVAL);
	assert_non_null(strstr(err.text, "memory limit could not be set"));
	xp_cg_close(&cg);
	/* open: the xpool folder cannot be made */
	char other[128];
	snprintf(other, sizeof(other), "%s/v2", root);
	assert_int_equal(mkdir(other, 0755), 0);
	put("v2/cgroup.controllers", "cpu memory\n");
	put("v2/xpool", "a file");
	assert_int_equal(xp_cg_open(&cg, other, "t5", &err), -ENOTDIR);
	assert_non_null(strstr(err.text, "cgroup controllers could not be set: ENOTDIR at "));
	xp_cg_close(&cg);
	char why[512];
	assert_int_equal(xp_cg_probe(other, why, sizeof(why)), 0);
	assert_string_equal(why, err.text);
}

/* Random task starts and ends on a fake v1 root against a model: whole
 * cores get the lowest free CPUs when enough are free with one left for
 * the sharers (while any runs); the files hold disjoint exclusive sets and
 * the sharers have the rest. */
static void test_random_tasks(void **state)
{
	(void)state;
	enum { N = 8, TASKS = 10 };
	struct xp_rng rng;
	xp_rng_seed(&rng, 7);
	fake_v1("0-7\n");
	for (int round = 0; round < 20; round++) {
		struct xp_cg cg;
		struct xp_err err = { 0 };
		char tag[16];
		snprintf(tag, sizeof(tag), "r%d", round);
		assert_int_equal(xp_cg_open(&cg, root, tag, &err), 0);
		int live[TASKS] = { 0 }, owner[N];
		uint64_t milli[TASKS];
		char names[TASKS][96];
		for (int c = 0; c < N; c++)
			owner[c] = -1;
		for (int step = 0; step < 60; step++) {
			int k = (int)xp_rng_below(&rng, TASKS);
			struct xp_cg_task t;
			if (live[k]) {
				xp_cg_remove(&cg, names[k]);
				for (int c = 0; c < N; c++)
					if (owner[c] == k)
						owner[c] = -1;
				live[k] = 0;
			} else {
				char key[32];
				milli[k] = xp_rng_below(&rng, 2)
						   ? 1000 * (1 + xp_rng_below(&rng, 4))
						   : 100 + xp_rng_below(&rng, 1800);
				snprintf(key, sizeof(key), "%d-0-%d", k, step);
				assert_int_equal(xp_cg_setup(&cg, key, milli[k], 64, &t, &err), 0);
				snprintf(names[k], sizeof(names[k]), "%s", t.name);
				unsigned nfree = 0, sharers = 0, want = 0;
				for (int c = 0; c < N; c++)
					nfree += owner[c] < 0;
				for (int j = 0; j < TASKS; j++)
					sharers += live[j] && milli[j] % 1000 != 0;
				if (milli[k] % 1000 == 0 &&
				    milli[k] / 1000 + (sharers ? 1 : 0) <= nfree)
					want = (unsigned)(milli[k] / 1000);
				assert_int_equal(t.exclusive, want > 0);
				for (int c = 0; c < N && want; c++)
					if (owner[c] < 0) {
						owner[c] = k;
						want--;
					}
				if (!t.exclusive)
					milli[k] = 1; /* a sharer from now on */
				live[k] = 1;
			}
			/* the files against the model */
			char shared[64] = "", list[64];
			struct xp_cpus s;
			memset(&s, 0, sizeof(s));
			for (int c = 0; c < N; c++)
				if (owner[c] < 0)
					s.w[0] |= 1ull << c;
			xp_cpus_format(&s, shared, sizeof(shared));
			for (int j = 0; j < TASKS; j++) {
				if (!live[j])
					continue;
				const char *have = get("cpuset/xpool/%s/cpuset.cpus", names[j]);
				if (milli[j] % 1000 == 0) {
					memset(&s, 0, sizeof(s));
					for (int c = 0; c < N; c++)
						if (owner[c] == j)
							s.w[0] |= 1ull << c;
					xp_cpus_format(&s, list, sizeof(list));
					assert_string_equal(have, list);
				} else {
					assert_string_equal(have, shared[0] ? shared : "0-7");
				}
			}
		}
		xp_cg_close(&cg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpus_lists),
		cmocka_unit_test(test_cpus_random),
		cmocka_unit_test_setup_teardown(test_detect, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_v1_files, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_v1_narrowed, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_v2_files, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_v1_oom, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_refused, setup_root, teardown_root),
		cmocka_unit_test_setup_teardown(test_random_tasks, setup_root, teardown_root),
	};
	return xp_run_tests(tests, NULL, NULL);
}
