/*
 * test_hal: the device plugin router and the nvidia, cpu and fake families.
 *
 * The nvidia family is driven through its real dlopen/dlsym path against
 * tests/fakelibs/fake_nvml.c (built as libfake_nvml.so, and as
 * libfake_nvml_broken.so without nvmlDeviceGetCount_v2); the fake's
 * behaviour is set with FAKE_NVML_* environment variables before each
 * probe (see the top of fake_nvml.c). Enumeration is compared with the
 * fake's inventory field by field; health transitions (ECC, XID, row
 * remapping, a lost GPU) are made by changing the variables between stats
 * calls. The router tests discover a node end to end with the fakes set
 * through lib_override (every other vendor pointed at a missing path, so a
 * real GPU on the test machine cannot leak in), and check that stats and
 * env are routed by node device index. The cpu family runs on this
 * machine's real hwloc topology.
 */
#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "descriptor/descriptor.h"
#include "hal/hal.h"

extern char **environ;

#define MISSING "/nonexistent/xpool-test/libnone.so"

/* Unset every FAKE_* and XP_HAL_* variable a previous test set. */
static void clear_env(void)
{
	char names[64][64];
	int n = 0;
	for (char **e = environ; *e && n < 64; e++)
		if (strncmp(*e, "FAKE_", 5) == 0 || strncmp(*e, "XP_HAL_", 7) == 0) {
			size_t l = strcspn(*e, "=");
			if (l >= sizeof(names[0]))
				continue;
			memcpy(names[n], *e, l);
			names[n++][l] = '\0';
		}
	for (int i = 0; i < n; i++)
		unsetenv(names[i]);
}

static int setup(void **state)
{
	clear_env();
	return 0;
}

static const char *attr(const struct xp_device *d, const char *key)
{
	return xp_attrs_get(d->attrs, d->nattrs, key);
}

static const char *sym(const struct xp_cluster *c, xp_sym s)
{
	return xp_strtab_str(c->syms, s);
}

static const char *label(const struct xp_node *n, const char *key)
{
	return xp_attrs_get(n->labels, n->nlabels, key);
}

/* Options with every vendor library missing and no sysfs FPGAs; then the overrides. */
static void opts_none(struct xp_hal_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->lib_override[0] = "nvidia=" MISSING;
	o->lib_override[1] = "amd=" MISSING;
	o->lib_override[2] = "ascend=" MISSING;
	o->lib_override[3] = "cambricon=" MISSING;
	o->sysfs_root = "/nonexistent/xpool-test/sysfs";
}

/* A cluster with one empty node, for calling a family's enumerate. */
static struct xp_cluster *one_node(struct xp_node **n)
{
	struct xp_cluster *c = xp_cluster_create();
	*n = xp_cluster_add_node(c, "t");
	return c;
}

static const struct xp_device_ops *nvidia(void)
{
	const struct xp_device_ops *ops = xp_hal_family_ops("nvidia");
	assert_non_null(ops);
	return ops;
}

/* The table */

static void test_families_table(void **state)
{
	static const char *const want[] = { "cpu",	 "nvidia", "amd", "ascend",
					    "cambricon", "fpga",   "fake" };
	size_t i = 0;
	for (; xp_hal_families[i]; i++) {
		assert_true(i < sizeof(want) / sizeof(want[0]));
		assert_string_equal(xp_hal_families[i]->name, want[i]);
		assert_int_equal(xp_hal_families[i]->abi, XP_HAL_ABI);
		assert_non_null(xp_hal_families[i]->probe);
		assert_non_null(xp_hal_families[i]->enumerate);
		assert_non_null(xp_hal_families[i]->stats);
		assert_non_null(xp_hal_families[i]->env);
		assert_non_null(xp_hal_families[i]->close);
		xp_hal_families[i]->close(NULL); /* NULL-safe */
		assert_ptr_equal(xp_hal_family_ops(want[i]), xp_hal_families[i]);
	}
	assert_int_equal(i, 7);
	assert_null(xp_hal_family_ops("tpu"));
	xp_hal_close(NULL);
}

static void test_bad_opts(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia";
	assert_null(xp_hal_open(&o, &err));
	assert_int_equal(err.code, XP_EINVAL);
	assert_non_null(strstr(err.text, "FAMILY=PATH"));
	o.lib_override[0] = "tpu=/x.so";
	assert_null(xp_hal_open(&o, &err));
	assert_non_null(strstr(err.text, "no device family 'tpu'"));
}

/* nvidia: refusals */

static void test_nvidia_missing_library(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_hal_family *f = NULL;
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia=" MISSING;
	assert_int_equal(nvidia()->probe(&o, &f, &err), XP_ENOENT);
	assert_null(f);
	assert_non_null(strstr(err.text, "cannot load"));
	assert_non_null(strstr(err.text, MISSING));

	/* the same through the router: a note, no devices, no warning */
	opts_none(&o);
	struct xp_hal *h = xp_hal_open(&o, &err);
	assert_non_null(h);
	assert_non_null(strstr(xp_hal_notes(h), "nvidia: cannot load"));
	assert_string_equal(xp_hal_active(h), "cpu");
	struct xp_sb w;
	xp_sb_init(&w);
	struct xp_cluster *c = xp_hal_discover(h, "n0", &w, &err);
	assert_non_null(c);
	assert_int_equal(err.code, 0);
	assert_int_equal(w.len, 0);
	assert_int_equal(c->nodes[0].ndevs, 0);
	xp_sb_free(&w);
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

static void test_nvidia_env_variable_path(void **state)
{
	struct xp_err err = { 0 };
	struct xp_hal_family *f = NULL;
	setenv("XP_HAL_NVIDIA_LIB", XP_FAKE_NVML, 1);
	setenv("FAKE_NVML_COUNT", "1", 1);
	assert_int_equal(nvidia()->probe(NULL, &f, &err), 0);
	assert_non_null(f);
	nvidia()->close(f);
}

static void test_nvidia_missing_symbol(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_hal_family *f = NULL;
	setenv("FAKE_NVML_COUNT", "2", 1);
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia=" XP_FAKE_NVML_BROKEN;
	assert_int_equal(nvidia()->probe(&o, &f, &err), XP_ENOENT);
	assert_null(f);
	assert_non_null(strstr(err.text, "lacks nvmlDeviceGetCount_v2"));
}

static void test_nvidia_init_fails(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_hal_family *f = NULL;
	setenv("FAKE_NVML_COUNT", "2", 1);
	setenv("FAKE_NVML_INIT_FAIL", "9", 1); /* NVML_ERROR_DRIVER_NOT_LOADED */
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia=" XP_FAKE_NVML;
	assert_int_equal(nvidia()->probe(&o, &f, &err), XP_EIO);
	assert_null(f);
	assert_non_null(strstr(err.text, "nvmlInit_v2: Driver Not Loaded"));
}

static void test_nvidia_old_version(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_hal_family *f = NULL;
	setenv("FAKE_NVML_COUNT", "2", 1);
	setenv("FAKE_NVML_VERSION", "9.384.81", 1);
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia=" XP_FAKE_NVML;
	assert_int_equal(nvidia()->probe(&o, &f, &err), XP_EVERSION);
	assert_null(f);
	assert_non_null(strstr(err.text, "NVML 9.384.81 is older than 10"));
}

static void test_nvidia_no_gpus(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_hal_family *f = NULL;
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia=" XP_FAKE_NVML;
	assert_int_equal(nvidia()->probe(&o, &f, &err), XP_ENOENT);
	assert_null(f);
	assert_non_null(strstr(err.text, "no NVIDIA GPUs"));
}

/* nvidia: enumeration */

static struct xp_hal_family *nv_open(void)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_hal_family *f = NULL;
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia=" XP_FAKE_NVML;
	int rc = nvidia()->probe(&o, &f, &err);
	if (rc < 0)
		fail_msg("probe: %s", err.text);
	assert_non_null(f);
	return f;
}

static void check_links(const struct xp_device *d, int kind, const int *peers, int n)
{
	assert_int_equal(d->nlinks, n);
	for (int i = 0; i < n; i++) {
		assert_int_equal(d->links[i].kind, kind);
		assert_int_equal(d->links[i].peer, peers[i]);
		assert_int_equal(d->links[i].gbps, 0);
	}
}

static void test_nvidia_enumerate(void **state)
{
	setenv("FAKE_NVML_COUNT", "4", 1);
	setenv("FAKE_NVML_ISLANDS", "0,0,1,1", 1);
	setenv("FAKE_NVML_NUMA", "0,0,1,1", 1);
	setenv("FAKE_NVML_MIG", "3", 1);
	struct xp_hal_family *f = nv_open();
	struct xp_node *n;
	struct xp_cluster *c = one_node(&n);
	struct xp_err err = { 0 };

	assert_int_equal(nvidia()->enumerate(f, c, n, &err), 0);
	assert_int_equal(n->ndevs, 4);
	for (unsigned i = 0; i < 4; i++) {
		const struct xp_device *d = &n->devs[i];
		char buf[64];
		assert_int_equal(d->cls, XP_CLASS_GPU);
		assert_int_equal(d->health, XP_HEALTH_OK);
		assert_null(attr(d, "health_reason"));
		assert_string_equal(sym(c, d->vendor), "NVIDIA");
		assert_string_equal(sym(c, d->model), "A100-SXM4-80GB");
		assert_string_equal(sym(c, d->arch), "sm_80");
		assert_int_equal(d->cc, 800);
		assert_int_equal(d->mem_mib, 81920);
		assert_int_equal(d->mem_bw_mb_s, 0);
		assert_int_equal(d->tdp_w, 400);
		assert_int_equal(d->idle_w, 0);
		assert_int_equal(d->numa, i < 2 ? 0 : 1);
		assert_int_equal(d->island, i < 2 ? 0 : 1);
		snprintf(buf, sizeof(buf), "GPU-00000000-fake-4000-8000-%012u", i);
		assert_string_equal(d->uuid, buf);
		snprintf(buf, sizeof(buf), "0000:%02x:00.0", 0x10 * (i + 1));
		assert_string_equal(d->pci_bus_id, buf);
		assert_string_equal(attr(d, "hal"), "nvidia");
		snprintf(buf, sizeof(buf), "%u", i);
		assert_string_equal(attr(d, "hal_index"), buf);
		assert_string_equal(attr(d, "product_name"), "NVIDIA A100-SXM4-80GB");
		assert_string_equal(attr(d, "driver"), "535.104.05");
		assert_string_equal(attr(d, "interconnect"), "NVLink");
		snprintf(buf, sizeof(buf), "/dev/nvidia%u", i);
		assert_string_equal(attr(d, "dev_nodes"), buf);
		int peer = i ^ 1;
		check_links(d, XP_LINK_NVLINK, &peer, 1);
		assert_string_equal(attr(d, "mig_mode"), i == 3 ? "enabled" : "disabled");
		assert_int_equal(d->mode, i == 3 ? XP_MODE_MIG : XP_MODE_SHARED);
		/* MIG-capable: every GPU lists its profiles, in MIG mode or not */
		assert_int_equal(d->nparts, 7);
		assert_string_equal(d->parts[2].name, "3g.40gb");
		assert_int_equal(d->parts[2].compute_milli, 428);
		assert_int_equal(d->parts[2].mem_mib, 40192);
		assert_int_equal(d->parts[2].max_count, 2);
		if (i < 3)
			assert_null(attr(d, "mig_instances"));
	}
	const struct xp_device *m = &n->devs[3];
	assert_string_equal(attr(m, "mig_instances"), "MIG-00000000-fake-4000-9000-000003000000,"
						      "MIG-00000000-fake-4000-9000-000003000002");
	assert_string_equal(attr(m, "mig_layout"),
			    "3g.40gb:0+4:MIG-00000000-fake-4000-9000-000003000000,"
			    "3g.40gb:4+4:MIG-00000000-fake-4000-9000-000003000002");
	/* enumerate again (re-discovery): same result, no leaks */
	struct xp_node *n2;
	struct xp_cluster *c2 = one_node(&n2);
	assert_int_equal(nvidia()->enumerate(f, c2, n2, &err), 0);
	assert_int_equal(n2->ndevs, 4);
	assert_int_equal(n2->devs[3].nparts, 7);
	xp_cluster_destroy(c2);
	xp_cluster_destroy(c);
	nvidia()->close(f);
}

static void test_nvidia_nvswitch(void **state)
{
	setenv("FAKE_NVML_COUNT", "8", 1);
	setenv("FAKE_NVML_ISLANDS", "0,0,0,0,1,1,1,1", 1);
	setenv("FAKE_NVML_NVSWITCH", "1", 1);
	setenv("FAKE_NVML_NAME", "NVIDIA H100 80GB HBM3", 1);
	setenv("FAKE_NVML_CC", "9.0", 1);
	struct xp_hal_family *f = nv_open();
	struct xp_node *n;
	struct xp_cluster *c = one_node(&n);
	struct xp_err err = { 0 };

	/* a device already on the node: islands and peers start after it */
	struct xp_device *pre = xp_node_add_device(n);
	pre->island = 4;
	assert_int_equal(nvidia()->enumerate(f, c, n, &err), 0);
	assert_int_equal(n->ndevs, 9);
	for (unsigned i = 0; i < 8; i++) {
		const struct xp_device *d = &n->devs[1 + i];
		assert_string_equal(sym(c, d->model), "H100-80GB-HBM3");
		assert_int_equal(d->cc, 900);
		assert_string_equal(sym(c, d->arch), "sm_90");
		assert_int_equal(d->island, i < 4 ? 5 : 6);
		assert_int_equal(d->numa, -1); /* no NUMA from NVML: the cpu family's job */
		int peers[3], k = 0;
		for (unsigned j = i < 4 ? 0 : 4; j < (i < 4 ? 4u : 8u); j++)
			if (j != i)
				peers[k++] = 1 + (int)j;
		check_links(d, XP_LINK_NVLINK, peers, 3);
	}
	xp_cluster_destroy(c);
	nvidia()->close(f);
}

static void test_nvidia_no_nvlink(void **state)
{
	setenv("FAKE_NVML_COUNT", "2", 1);
	struct xp_hal_family *f = nv_open();
	struct xp_node *n;
	struct xp_cluster *c = one_node(&n);
	struct xp_err err = { 0 };
	assert_int_equal(nvidia()->enumerate(f, c, n, &err), 0);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(n->devs[i].island, -1);
		assert_int_equal(n->devs[i].nlinks, 0);
		assert_null(attr(&n->devs[i], "interconnect"));
	}
	xp_cluster_destroy(c);
	nvidia()->close(f);
}

/* nvidia: health and stats */

static void stats_of(struct xp_hal_family *f, unsigned i, struct xp_hal_stats *s)
{
	struct xp_err err = { 0 };
	int rc = nvidia()->stats(f, i, s, &err);
	if (rc < 0)
		fail_msg("stats %u: %s", i, err.text);
}

static void test_nvidia_stats_and_health(void **state)
{
	struct xp_hal_stats s;
	struct xp_err err = { 0 };
	setenv("FAKE_NVML_COUNT", "3", 1);
	struct xp_hal_family *f = nv_open();

	stats_of(f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	assert_string_equal(s.why, "");
	assert_int_equal(s.util_pct, 15);
	assert_int_equal(s.mem_used_mib, 2048);
	assert_int_equal(s.power_w, 101);
	assert_int_equal(s.temp_c, 41);

	/* ECC: unhealthy with a reason; the volatile counter clears on reset */
	setenv("FAKE_NVML_ECC", "1:3", 1);
	stats_of(f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "3 uncorrectable ECC errors");
	stats_of(f, 0, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	unsetenv("FAKE_NVML_ECC");
	stats_of(f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);

	/* XID 79 (fell off the bus) is sticky; XID 13 (an application fault) is not counted */
	setenv("FAKE_NVML_XID", "2:13,0:79", 1);
	stats_of(f, 2, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	stats_of(f, 0, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "XID 79");
	unsetenv("FAKE_NVML_XID");
	stats_of(f, 0, &s);
	assert_string_equal(s.why, "XID 79");
	assert_int_equal(s.util_pct, 5); /* figures still read */

	/* two reasons at once */
	setenv("FAKE_NVML_ECC", "0:1", 1);
	stats_of(f, 0, &s);
	assert_string_equal(s.why, "1 uncorrectable ECC error; XID 79");
	unsetenv("FAKE_NVML_ECC");

	/* row remapping pending: degraded */
	setenv("FAKE_NVML_REMAP_PENDING", "2", 1);
	stats_of(f, 2, &s);
	assert_int_equal(s.health, XP_HEALTH_DEGRADED);
	assert_string_equal(s.why, "row remapping pending: reset the GPU");
	unsetenv("FAKE_NVML_REMAP_PENDING");

	/* a failing query is an unknown figure, not a crash or an error */
	setenv("FAKE_NVML_FAIL", "nvmlDeviceGetPowerUsage,nvmlDeviceGetTemperature", 1);
	stats_of(f, 2, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	assert_int_equal(s.power_w, -1);
	assert_int_equal(s.temp_c, -1);
	assert_int_equal(s.util_pct, 25);
	unsetenv("FAKE_NVML_FAIL");

	/* a lost GPU: every figure unknown, one reason */
	setenv("FAKE_NVML_LOST", "2", 1);
	stats_of(f, 2, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "GPU is lost");
	assert_int_equal(s.util_pct, -1);
	assert_int_equal(s.mem_used_mib, -1);
	assert_int_equal(s.power_w, -1);
	assert_int_equal(s.temp_c, -1);
	unsetenv("FAKE_NVML_LOST");

	assert_int_equal(nvidia()->stats(f, 3, &s, &err), XP_ENOENT);
	nvidia()->close(f);
}

static void test_nvidia_health_at_discovery(void **state)
{
	setenv("FAKE_NVML_COUNT", "3", 1);
	setenv("FAKE_NVML_ECC", "0:2", 1);
	setenv("FAKE_NVML_NOHANDLE", "1", 1);
	struct xp_hal_family *f = nv_open();
	struct xp_node *n;
	struct xp_cluster *c = one_node(&n);
	struct xp_err err = { 0 };
	assert_int_equal(nvidia()->enumerate(f, c, n, &err), 0);
	assert_int_equal(n->ndevs, 3);
	assert_int_equal(n->devs[0].health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(attr(&n->devs[0], "health_reason"), "2 uncorrectable ECC errors");
	/* a GPU NVML cannot open is still a GPU: unhealthy, with the reason */
	const struct xp_device *d = &n->devs[1];
	assert_int_equal(d->cls, XP_CLASS_GPU);
	assert_int_equal(d->health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(attr(d, "health_reason"),
			    "nvmlDeviceGetHandleByIndex_v2(1): Insufficient Permissions");
	assert_null(d->uuid);
	assert_int_equal(d->model, 0);
	assert_string_equal(attr(d, "hal_index"), "1");
	assert_int_equal(n->devs[2].health, XP_HEALTH_OK);
	struct xp_hal_stats s;
	stats_of(f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "no NVML handle: Insufficient Permissions");
	/* its environment falls back to the index */
	struct xp_sb out;
	xp_sb_init(&out);
	unsigned idx[] = { 1, 2 };
	assert_int_equal(nvidia()->env(f, idx, 2, &out), 0);
	assert_string_equal(out.s,
			    "CUDA_VISIBLE_DEVICES=1,GPU-00000000-fake-4000-8000-000000000002\n"
			    "NVIDIA_VISIBLE_DEVICES=1,GPU-00000000-fake-4000-8000-000000000002\n");
	xp_sb_free(&out);
	xp_cluster_destroy(c);
	nvidia()->close(f);
}

static void test_nvidia_env(void **state)
{
	setenv("FAKE_NVML_COUNT", "4", 1);
	setenv("FAKE_NVML_MIG", "3", 1);
	struct xp_hal_family *f = nv_open();
	struct xp_node *n;
	struct xp_cluster *c = one_node(&n);
	struct xp_err err = { 0 };
	struct xp_sb out;
	assert_int_equal(nvidia()->enumerate(f, c, n, &err), 0); /* reads the MIG instances */

	xp_sb_init(&out);
	unsigned a[] = { 2, 0 };
	assert_int_equal(nvidia()->env(f, a, 2, &out), 0);
	assert_string_equal(out.s,
			    "CUDA_VISIBLE_DEVICES=GPU-00000000-fake-4000-8000-000000000002,"
			    "GPU-00000000-fake-4000-8000-000000000000\n"
			    "NVIDIA_VISIBLE_DEVICES=GPU-00000000-fake-4000-8000-000000000002,"
			    "GPU-00000000-fake-4000-8000-000000000000\n");
	xp_sb_reset(&out);
	unsigned b[] = { 3 };
	assert_int_equal(nvidia()->env(f, b, 1, &out), 0);
	assert_string_equal(out.s,
			    "CUDA_VISIBLE_DEVICES=MIG-00000000-fake-4000-9000-000003000000,"
			    "MIG-00000000-fake-4000-9000-000003000002\n"
			    "NVIDIA_VISIBLE_DEVICES=MIG-00000000-fake-4000-9000-000003000000,"
			    "MIG-00000000-fake-4000-9000-000003000002\n");
	xp_sb_reset(&out);
	assert_int_equal(nvidia()->env(f, NULL, 0, &out), 0);
	assert_string_equal(out.s, "CUDA_VISIBLE_DEVICES=\nNVIDIA_VISIBLE_DEVICES=none\n");
	xp_sb_reset(&out);
	unsigned bad[] = { 4 };
	assert_int_equal(nvidia()->env(f, bad, 1, &out), XP_ENOENT);
	xp_sb_free(&out);
	xp_cluster_destroy(c);
	nvidia()->close(f);
}

/* cpu */

static void test_cpu_this_machine(void **state)
{
	const struct xp_device_ops *ops = xp_hal_family_ops("cpu");
	struct xp_hal_family *f = NULL;
	struct xp_err err = { 0 };
	assert_int_equal(ops->probe(NULL, &f, &err), 0);
	struct xp_node *n;
	struct xp_cluster *c = one_node(&n);
	struct xp_device *bogus = xp_node_add_device(n);
	bogus->pci_bus_id = strdup("0000:fe:1f.7");
	/* a real NIC, disk controller or display on this machine, when there is one */
	char real[256] = "";
	DIR *dir = opendir("/sys/bus/pci/devices");
	struct dirent *e;
	while (dir && !real[0] && (e = readdir(dir))) {
		char p[600], cls[32] = "";
		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/class", e->d_name);
		FILE *fp = fopen(p, "r");
		if (fp && fgets(cls, sizeof(cls), fp) &&
		    (!strncmp(cls, "0x01", 4) || !strncmp(cls, "0x02", 4) ||
		     !strncmp(cls, "0x03", 4)))
			snprintf(real, sizeof(real), "%s", e->d_name);
		if (fp)
			fclose(fp);
	}
	if (dir)
		closedir(dir);
	if (real[0])
		xp_node_add_device(n)->pci_bus_id = strdup(real);
	assert_int_equal(ops->enumerate(f, c, n, &err), 0);

	assert_true(n->cpu_milli >= 1000);
	assert_int_equal(n->cpu_milli % 1000, 0);
	assert_true(n->cpu_milli / 1000 <= (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
	assert_true(n->mem_mib > 0);
	assert_true(n->numa_domains >= 1);
#if defined(__x86_64__)
	assert_string_equal(sym(c, n->arch), "x86_64");
#elif defined(__aarch64__)
	assert_string_equal(sym(c, n->arch), "aarch64");
#endif
	assert_true(atoi(label(n, "cpu.cores")) >= 1);
	assert_true(atoi(label(n, "cpu.sockets")) >= 1);
	assert_int_equal(atoi(label(n, "cpu.threads")), (int)(n->cpu_milli / 1000));
	assert_int_equal(n->ndevs, real[0] ? 2 : 1); /* the cpu family adds no devices */
	assert_int_equal(n->devs[0].numa, -1);	     /* no such PCI device */
	if (real[0] && n->numa_domains == 1)	     /* placed by hwloc on the only NUMA node */
		assert_int_equal(n->devs[1].numa, 0);
	else if (real[0])
		assert_true(n->devs[1].numa >= -1 && n->devs[1].numa < n->numa_domains);

	struct xp_hal_stats s;
	assert_int_equal(ops->stats(f, 0, &s, &err), XP_ENOENT);
	assert_int_equal(s.util_pct, -1);
	struct xp_sb out;
	xp_sb_init(&out);
	assert_int_equal(ops->env(f, NULL, 0, &out), 0);
	assert_int_equal(out.len, 0);
	xp_sb_free(&out);
	xp_cluster_destroy(c);
	ops->close(f);
}

/* The router, end to end */

static struct xp_hal *open_fakes(struct xp_hal_opts *o)
{
	struct xp_err err = { 0 };
	opts_none(o);
	o->lib_override[0] = "nvidia=" XP_FAKE_NVML;
	o->lib_override[1] = "amd=" XP_FAKE_ROCM_SMI;
	struct xp_hal *h = xp_hal_open(o, &err);
	if (!h)
		fail_msg("open: %s", err.text);
	return h;
}

static void test_discover_end_to_end(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_sb w, env;
	struct xp_hal_stats s;

	setenv("FAKE_NVML_COUNT", "2", 1);
	setenv("FAKE_NVML_ISLANDS", "0,0", 1);
	setenv("FAKE_RSMI_COUNT", "2", 1);
	setenv("FAKE_RSMI_HIVE", "5,5", 1);
	struct xp_hal *h = open_fakes(&o);
	assert_string_equal(xp_hal_active(h), "cpu,nvidia,amd");
	assert_non_null(strstr(xp_hal_notes(h), "ascend: cannot load"));
	assert_non_null(strstr(xp_hal_notes(h), "cambricon: cannot load"));
	assert_non_null(strstr(xp_hal_notes(h), "fpga: no PCI devices under"));
	assert_null(strstr(xp_hal_notes(h), "nvidia"));

	/* before discovery there are no devices to route to */
	assert_int_equal(xp_hal_stats(h, 0, &s, &err), XP_ENOENT);

	xp_sb_init(&w);
	struct xp_cluster *c = xp_hal_discover(h, "node-x", &w, &err);
	assert_non_null(c);
	assert_int_equal(err.code, 0);
	assert_int_equal(w.len, 0);
	assert_int_equal(c->nnodes, 1);
	const struct xp_node *n = &c->nodes[0];
	assert_string_equal(n->name, "node-x");
	/* the cpu family's node figures */
	assert_true(n->cpu_milli >= 1000);
	assert_true(n->mem_mib > 0);
	assert_true(n->numa_domains >= 1);
#if defined(__x86_64__)
	assert_string_equal(sym(c, n->arch), "x86_64");
#endif
	/* nvidia first, then amd; amd's island and peers shifted past nvidia's */
	assert_int_equal(n->ndevs, 4);
	static const char *const fam[] = { "nvidia", "nvidia", "amd", "amd" };
	static const char *const idx[] = { "0", "1", "0", "1" };
	for (unsigned i = 0; i < 4; i++) {
		assert_string_equal(attr(&n->devs[i], "hal"), fam[i]);
		assert_string_equal(attr(&n->devs[i], "hal_index"), idx[i]);
		assert_int_equal(n->devs[i].island, i < 2 ? 0 : 1);
		int peer = (int)(i ^ 1);
		check_links(&n->devs[i], i < 2 ? XP_LINK_NVLINK : XP_LINK_XGMI, &peer, 1);
	}
	assert_string_equal(sym(c, n->devs[0].vendor), "NVIDIA");
	assert_string_equal(sym(c, n->devs[2].vendor), "AMD");
	assert_int_equal(n->devs[2].numa, 0);
	assert_int_equal(n->devs[3].numa, 1);

	/* stats routed by node index */
	assert_int_equal(xp_hal_stats(h, 1, &s, &err), 0);
	assert_int_equal(s.util_pct, 15); /* nvidia GPU 1 */
	assert_int_equal(xp_hal_stats(h, 3, &s, &err), 0);
	assert_int_equal(s.util_pct, 21); /* amd GPU 1 */
	assert_int_equal(s.temp_c, 51);
	assert_int_equal(xp_hal_stats(h, 4, &s, &err), XP_ENOENT);
	setenv("FAKE_RSMI_ECC", "0:4", 1);
	assert_int_equal(xp_hal_stats(h, 2, &s, &err), 0);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "4 uncorrectable ECC errors in memory");
	unsetenv("FAKE_RSMI_ECC");

	/* env: every family writes its lines; one with no device given hides all */
	xp_sb_init(&env);
	unsigned a[] = { 1, 2 };
	assert_int_equal(xp_hal_env(h, a, 2, &env, &err), 0);
	assert_string_equal(env.s,
			    "CUDA_VISIBLE_DEVICES=GPU-00000000-fake-4000-8000-000000000001\n"
			    "NVIDIA_VISIBLE_DEVICES=GPU-00000000-fake-4000-8000-000000000001\n"
			    "ROCR_VISIBLE_DEVICES=0\n"
			    "HIP_VISIBLE_DEVICES=0\n");
	xp_sb_reset(&env);
	unsigned b[] = { 3 };
	assert_int_equal(xp_hal_env(h, b, 1, &env, &err), 0);
	assert_string_equal(env.s, "CUDA_VISIBLE_DEVICES=\nNVIDIA_VISIBLE_DEVICES=none\n"
				   "ROCR_VISIBLE_DEVICES=1\nHIP_VISIBLE_DEVICES=0\n");
	xp_sb_reset(&env);
	unsigned dup[] = { 3, 3 };
	assert_int_equal(xp_hal_env(h, dup, 2, &env, &err), XP_EINVAL);
	unsigned out_of_range[] = { 9 };
	assert_int_equal(xp_hal_env(h, out_of_range, 1, &env, &err), XP_ENOENT);

	/* a second discovery gives an equal node */
	struct xp_cluster *c2 = xp_hal_discover(h, NULL, NULL, &err);
	assert_non_null(c2);
	assert_int_equal(c2->nodes[0].ndevs, 4);
	char host[256];
	gethostname(host, sizeof(host));
	host[sizeof(host) - 1] = '\0';
	assert_string_equal(c2->nodes[0].name, host);
	xp_cluster_destroy(c2);

	xp_sb_free(&env);
	xp_sb_free(&w);
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

static void test_discover_warnings(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_sb w;

	setenv("FAKE_NVML_COUNT", "2", 1);
	setenv("FAKE_NVML_INIT_FAIL", "9", 1);
	setenv("FAKE_RSMI_COUNT", "1", 1);
	struct xp_hal *h = open_fakes(&o);
	assert_string_equal(xp_hal_active(h), "cpu,amd");

	xp_sb_init(&w);
	struct xp_cluster *c = xp_hal_discover(h, "n", &w, &err);
	assert_non_null(c);
	assert_int_equal(err.code, XP_EIO);
	assert_non_null(strstr(err.text, "nvidia: "));
	assert_non_null(strstr(err.text, "Driver Not Loaded"));
	assert_non_null(strstr(w.s, "nvidia: "));
	assert_non_null(strstr(w.s, "nvmlInit_v2: Driver Not Loaded"));
	assert_int_equal(w.s[w.len - 1], '\n');
	/* the other families are unaffected */
	assert_int_equal(c->nodes[0].ndevs, 1);
	assert_string_equal(attr(&c->nodes[0].devs[0], "hal"), "amd");
	assert_true(c->nodes[0].cpu_milli >= 1000);
	struct xp_hal_stats s;
	assert_int_equal(xp_hal_stats(h, 0, &s, &err), 0);
	assert_int_equal(s.util_pct, 20);
	xp_sb_free(&w);
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

/* A family that fails half way through is rolled back whole; the others stay. */
static void test_discover_rolls_back_a_family(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_sb w;
	setenv("FAKE_NVML_COUNT", "40", 1);
	setenv("FAKE_RSMI_COUNT", "30", 1); /* 70 > 64 devices on one node */
	setenv("FAKE_RSMI_HIVE", "3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3,3", 1);
	struct xp_hal *h = open_fakes(&o);
	xp_sb_init(&w);
	struct xp_cluster *c = xp_hal_discover(h, "full", &w, &err);
	assert_non_null(c);
	assert_int_equal(err.code, XP_ENOSPC);
	assert_string_equal(w.s, "amd: more than 64 devices on one node (device 24 of amd)\n");
	assert_int_equal(c->nodes[0].ndevs, 40);
	for (unsigned i = 0; i < 40; i++)
		assert_string_equal(attr(&c->nodes[0].devs[i], "hal"), "nvidia");
	struct xp_hal_stats s;
	assert_int_equal(xp_hal_stats(h, 39, &s, &err), 0);
	assert_int_equal(xp_hal_stats(h, 40, &s, &err), XP_ENOENT);
	xp_sb_free(&w);
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

/* What the agent registers: the discovered node as a descriptor, which must load back. */
static void test_discover_descriptor_round_trip(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	setenv("FAKE_NVML_COUNT", "4", 1);
	setenv("FAKE_NVML_ISLANDS", "0,0,0,0", 1);
	setenv("FAKE_NVML_NVSWITCH", "1", 1);
	setenv("FAKE_NVML_MIG", "2", 1);
	setenv("FAKE_NVML_ECC", "1:5", 1);
	setenv("FAKE_NVML_NOHANDLE", "3", 1);
	setenv("FAKE_RSMI_COUNT", "2", 1);
	setenv("FAKE_RSMI_HIVE", "1,1", 1);
	struct xp_hal *h = open_fakes(&o);
	struct xp_cluster *c = xp_hal_discover(h, "rt-0", NULL, &err);
	assert_non_null(c);
	assert_int_equal(err.code, 0);
	char *json = xp_descriptor_to_json(c);
	assert_non_null(json);
	struct xp_cluster *back =
		xp_descriptor_load_buf("rt.json", json, strlen(json), XP_DESC_JSON, &err);
	if (!back)
		fail_msg("the discovered node does not load back: %s\n%s", err.text, json);
	const struct xp_node *a = &c->nodes[0], *b = &back->nodes[0];
	assert_string_equal(b->name, "rt-0");
	assert_int_equal(b->cpu_milli, a->cpu_milli);
	assert_int_equal(b->mem_mib, a->mem_mib);
	assert_int_equal(b->numa_domains, a->numa_domains);
	assert_int_equal(b->nlabels, a->nlabels);
	assert_int_equal(b->ndevs, 6);
	for (unsigned i = 0; i < a->ndevs; i++) {
		const struct xp_device *x = &a->devs[i], *y = &b->devs[i];
		assert_int_equal(y->cls, x->cls);
		assert_int_equal(y->health, x->health);
		assert_string_equal(sym(back, y->model), sym(c, x->model));
		assert_int_equal(y->mem_mib, x->mem_mib);
		assert_int_equal(y->cc, x->cc);
		assert_int_equal(y->island, x->island);
		assert_int_equal(y->nlinks, x->nlinks);
		assert_int_equal(y->nparts, x->nparts);
		assert_int_equal(y->nattrs, x->nattrs);
		if (x->uuid)
			assert_string_equal(y->uuid, x->uuid);
		else
			assert_null(y->uuid);
	}
	assert_int_equal(b->devs[1].health, XP_HEALTH_UNHEALTHY);
	assert_int_equal(b->devs[2].nparts, 7); /* an A100's seven MIG profiles */
	assert_non_null(attr(&b->devs[2], "mig_placements"));
	assert_int_equal(b->devs[3].health, XP_HEALTH_UNHEALTHY);
	free(json);
	xp_cluster_destroy(back);
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

/* The fake family (emulation) */

static void test_fake_family(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_hal_stats s;

	/* a real vendor library is there, but emulation replaces the vendor families */
	setenv("FAKE_NVML_COUNT", "2", 1);
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia=" XP_FAKE_NVML;
	o.devices_file = XP_FAKE_NODE;
	struct xp_hal *h = xp_hal_open(&o, &err);
	assert_non_null(h);
	assert_string_equal(xp_hal_active(h), "cpu,fake");

	struct xp_cluster *c = xp_hal_discover(h, "emu", NULL, &err);
	assert_non_null(c);
	assert_int_equal(err.code, 0);
	const struct xp_node *n = &c->nodes[0];
	assert_string_equal(n->name, "emu");
	/* the file's node figures win over the host's */
	assert_int_equal(n->cpu_milli, 64000);
	assert_int_equal(n->mem_mib, 512 * 1024);
	assert_string_equal(sym(c, n->arch), "aarch64");
	assert_int_equal(n->numa_domains, 1);
	assert_non_null(label(n, "cpu.cores")); /* the host's labels stay */

	assert_int_equal(n->ndevs, 4);
	for (unsigned i = 0; i < 2; i++) {
		const struct xp_device *d = &n->devs[i];
		assert_int_equal(d->cls, XP_CLASS_GPU);
		assert_string_equal(sym(c, d->vendor), "NVIDIA");
		assert_string_equal(sym(c, d->model), "H100-SXM5-80GB");
		assert_int_equal(d->mem_mib, 81920);
		assert_int_equal(d->cc, 900);
		assert_int_equal(d->numa, 0);
		assert_int_equal(d->island, 0);
		int peer = (int)(i ^ 1);
		check_links(d, XP_LINK_NVLINK, &peer, 1);
		assert_int_equal(d->nparts, 1);
		assert_string_equal(d->parts[0].name, "3g.40gb");
		assert_int_equal(d->parts[0].max_count, 2);
		assert_string_equal(attr(d, "interconnect"), "NVLink");
		assert_int_equal(d->health, XP_HEALTH_OK);
	}
	const struct xp_device *npu = &n->devs[2];
	assert_int_equal(npu->cls, XP_CLASS_NPU);
	assert_string_equal(sym(c, npu->model), "Ascend910B");
	assert_string_equal(npu->uuid, "npu-fake-0");
	assert_string_equal(npu->pci_bus_id, "0000:c1:00.0");
	assert_string_equal(attr(npu, "driver"), "24.1.rc2");
	assert_int_equal(npu->island, -1);
	const struct xp_device *fpga = &n->devs[3];
	assert_int_equal(fpga->cls, XP_CLASS_FPGA);
	assert_int_equal(fpga->health, XP_HEALTH_UNHEALTHY);
	for (unsigned i = 0; i < 4; i++) {
		char buf[8];
		snprintf(buf, sizeof(buf), "%u", i);
		assert_string_equal(attr(&n->devs[i], "hal"), "fake");
		assert_string_equal(attr(&n->devs[i], "hal_index"), buf);
	}

	assert_int_equal(xp_hal_stats(h, 0, &s, &err), 0);
	assert_int_equal(s.health, XP_HEALTH_OK);
	assert_int_equal(s.util_pct, -1);
	assert_int_equal(xp_hal_stats(h, 3, &s, &err), 0);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_non_null(strstr(s.why, "unhealthy in "));

	struct xp_sb env;
	xp_sb_init(&env);
	unsigned a[] = { 3, 0 };
	assert_int_equal(xp_hal_env(h, a, 2, &env, &err), 0);
	/* plus what the vendor runtime reads: device 0 is the first NVIDIA GPU;
	 * the Ascend NPU was not given, so its variable hides it */
	assert_string_equal(env.s, "XP_FAKE_VISIBLE_DEVICES=3,0\nCUDA_VISIBLE_DEVICES=0\n"
				   "ASCEND_RT_VISIBLE_DEVICES=\n");
	xp_sb_reset(&env);
	unsigned b[] = { 1, 2 }; /* the second H100 and the Ascend (by its UUID) */
	assert_int_equal(xp_hal_env(h, b, 2, &env, &err), 0);
	assert_string_equal(env.s, "XP_FAKE_VISIBLE_DEVICES=1,2\nCUDA_VISIBLE_DEVICES=1\n"
				   "ASCEND_RT_VISIBLE_DEVICES=npu-fake-0\n");
	xp_sb_reset(&env);
	assert_int_equal(xp_hal_env(h, NULL, 0, &env, &err), 0); /* no devices: none seen */
	assert_string_equal(env.s, "XP_FAKE_VISIBLE_DEVICES=\nCUDA_VISIBLE_DEVICES=\n"
				   "ASCEND_RT_VISIBLE_DEVICES=\n");
	xp_sb_free(&env);
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

static void test_fake_family_bad_files(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	memset(&o, 0, sizeof(o));
	o.devices_file = "/nonexistent/xpool-test/node.yaml";
	assert_null(xp_hal_open(&o, &err));
	assert_non_null(strstr(err.text, "fake: "));
	assert_non_null(strstr(err.text, "node.yaml"));

	char *two = xp_test_tmpfile(".yaml", "nodes:\n  - {name: a}\n  - {name: b}\n");
	o.devices_file = two;
	assert_null(xp_hal_open(&o, &err));
	assert_non_null(strstr(err.text, "describes 2 nodes"));
	unlink(two);
	free(two);

	char *bad = xp_test_tmpfile(".yaml", "resources:\n  - {type: gpu, memory: 80Gx}\n");
	o.devices_file = bad;
	assert_null(xp_hal_open(&o, &err));
	assert_non_null(strstr(err.text, "memory"));
	unlink(bad);
	free(bad);

	/* the fake family alone: without a file it is "not here" */
	struct xp_hal_family *f = NULL;
	memset(&o, 0, sizeof(o));
	assert_int_equal(xp_hal_family_ops("fake")->probe(&o, &f, &err), XP_ENOENT);
	assert_null(f);
}

static void put(const char *root, const char *rel, const char *text)
{
	char p[4096], cmd[4200];
	snprintf(p, sizeof(p), "%s%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", p);
	assert_int_equal(system(cmd), 0);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The host's memory: MemTotal or the cgroup's limit, the lower; hwloc's
 * figure (a NUMA node's share on some VMs) only when neither reads */
static void test_host_memory(void **state)
{
	(void)state;
	char root[] = "/tmp/xphostmemXXXXXX";
	const char *src;
	assert_non_null(mkdtemp(root));
	assert_int_equal(xp_hal_host_memory(root, 5ull << 30, &src), 5ull << 30);
	assert_string_equal(src, "hwloc");
	put(root, "/proc/meminfo", "MemFree:  1000 kB\nMemTotal:       24684084 kB\n");
	assert_int_equal(xp_hal_host_memory(root, 5ull << 30, &src), 24684084ull * 1024);
	assert_string_equal(src, "meminfo");
	put(root, "/sys/fs/cgroup/memory.max", "max\n"); /* v2, unlimited */
	put(root, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	assert_int_equal(xp_hal_host_memory(root, 5ull << 30, &src), 24684084ull * 1024);
	assert_string_equal(src, "meminfo");
	put(root, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "8589934592\n"); /* v1, 8 GiB */
	assert_int_equal(xp_hal_host_memory(root, 5ull << 30, &src), 8ull << 30);
	assert_string_equal(src, "cgroup");
	put(root, "/sys/fs/cgroup/memory.max", "4294967296\n"); /* v2, 4 GiB */
	assert_int_equal(xp_hal_host_memory(root, 5ull << 30, &src), 4ull << 30);
	xp_test_rmdir(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_families_table, setup),
		cmocka_unit_test_setup(test_bad_opts, setup),
		cmocka_unit_test_setup(test_nvidia_missing_library, setup),
		cmocka_unit_test_setup(test_nvidia_env_variable_path, setup),
		cmocka_unit_test_setup(test_nvidia_missing_symbol, setup),
		cmocka_unit_test_setup(test_nvidia_init_fails, setup),
		cmocka_unit_test_setup(test_nvidia_old_version, setup),
		cmocka_unit_test_setup(test_nvidia_no_gpus, setup),
		cmocka_unit_test_setup(test_nvidia_enumerate, setup),
		cmocka_unit_test_setup(test_nvidia_nvswitch, setup),
		cmocka_unit_test_setup(test_nvidia_no_nvlink, setup),
		cmocka_unit_test_setup(test_nvidia_stats_and_health, setup),
		cmocka_unit_test_setup(test_nvidia_health_at_discovery, setup),
		cmocka_unit_test_setup(test_nvidia_env, setup),
		cmocka_unit_test_setup(test_cpu_this_machine, setup),
		cmocka_unit_test_setup(test_discover_end_to_end, setup),
		cmocka_unit_test_setup(test_discover_warnings, setup),
		cmocka_unit_test_setup(test_discover_rolls_back_a_family, setup),
		cmocka_unit_test_setup(test_discover_descriptor_round_trip, setup),
		cmocka_unit_test_setup(test_fake_family, setup),
		cmocka_unit_test_setup(test_fake_family_bad_files, setup),
		cmocka_unit_test(test_host_memory),
	};
	return xp_run_tests(tests, NULL, NULL);
}
