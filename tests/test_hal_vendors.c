/*
 * test_hal_vendors: the amd, ascend, cambricon and fpga device families.
 *
 * The three library families are driven through their real dlopen/dlsym
 * path against the fakes in tests/fakelibs (libfake_rocm_smi.so,
 * libfake_dcmi.so, libfake_cndev.so and their _broken twins, each missing
 * one required function), set up with FAKE_* environment variables (see
 * the top of each fake). For each: a missing library and a missing symbol
 * are refused with XP_ENOENT, a failing init and a too-old API are errors
 * with the vendor's text, enumeration is compared with the fake's
 * inventory field by field, health moves with the fake's knobs, a failing
 * query leaves a figure unknown, and the environment names exactly the
 * devices given.
 *
 * The fpga family reads tests/fakelibs/sysfs (a Xilinx U280 under XRT and
 * an Intel PAC N3000 under the DFL driver); health changes are made on a
 * copy of that tree in a temporary folder.
 */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hal/hal.h"

extern char **environ;

#define MISSING "/nonexistent/xpool-test/libnone.so"

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

static const struct xp_device_ops *fam(const char *name)
{
	const struct xp_device_ops *ops = xp_hal_family_ops(name);
	assert_non_null(ops);
	return ops;
}

/* Probe family name with library lib; the return code must be want. */
static struct xp_hal_family *probe(const char *name, const char *lib, int want, struct xp_err *err)
{
	struct xp_hal_opts o;
	char ov[512];
	struct xp_hal_family *f = NULL;
	memset(&o, 0, sizeof(o));
	memset(err, 0, sizeof(*err));
	snprintf(ov, sizeof(ov), "%s=%s", name, lib);
	o.lib_override[3] = ov;
	int rc = fam(name)->probe(&o, &f, err);
	if (rc != want)
		fail_msg("%s probe: want %d, got %d (%s)", name, want, rc, err->text);
	if (want < 0)
		assert_null(f);
	else
		assert_non_null(f);
	return f;
}

static struct xp_cluster *enumerate(const char *name, struct xp_hal_family *f, struct xp_node **n)
{
	struct xp_err err = { 0 };
	struct xp_cluster *c = xp_cluster_create();
	*n = xp_cluster_add_node(c, "t");
	int rc = fam(name)->enumerate(f, c, *n, &err);
	if (rc < 0)
		fail_msg("%s enumerate: %s", name, err.text);
	return c;
}

static void stats(const char *name, struct xp_hal_family *f, unsigned i, struct xp_hal_stats *s)
{
	struct xp_err err = { 0 };
	int rc = fam(name)->stats(f, i, s, &err);
	if (rc < 0)
		fail_msg("%s stats %u: %s", name, i, err.text);
}

static void env_is(const char *name, struct xp_hal_family *f, const unsigned *idx, unsigned n,
		   const char *want)
{
	struct xp_sb out;
	xp_sb_init(&out);
	assert_int_equal(fam(name)->env(f, idx, n, &out), 0);
	assert_string_equal(out.s ? out.s : "", want);
	xp_sb_free(&out);
}

/* amd (ROCm SMI) */

static void test_amd_refusals(void **state)
{
	struct xp_err err;
	probe("amd", MISSING, XP_ENOENT, &err);
	assert_non_null(strstr(err.text, "cannot load"));

	setenv("FAKE_RSMI_COUNT", "2", 1);
	probe("amd", XP_FAKE_ROCM_SMI_BROKEN, XP_ENOENT, &err);
	assert_non_null(strstr(err.text, "lacks rsmi_dev_memory_total_get"));

	setenv("FAKE_RSMI_INIT_FAIL", "8", 1);
	probe("amd", XP_FAKE_ROCM_SMI, XP_EIO, &err);
	assert_non_null(strstr(err.text, "rsmi_init: RSMI_STATUS_INIT_ERROR"));
	unsetenv("FAKE_RSMI_INIT_FAIL");

	setenv("FAKE_RSMI_VERSION", "0", 1);
	probe("amd", XP_FAKE_ROCM_SMI, XP_EVERSION, &err);
	assert_non_null(strstr(err.text, "older than 1.0"));
	unsetenv("FAKE_RSMI_VERSION");

	setenv("FAKE_RSMI_COUNT", "0", 1);
	probe("amd", XP_FAKE_ROCM_SMI, XP_ENOENT, &err);
	assert_non_null(strstr(err.text, "no AMD GPUs (ROCm SMI 7.0.0)"));
}

static void test_amd_enumerate(void **state)
{
	struct xp_err err;
	struct xp_node *n;
	setenv("FAKE_RSMI_COUNT", "4", 1);
	setenv("FAKE_RSMI_HIVE", "9,9,7,0", 1); /* one hive of two; a hive of one is no island */
	struct xp_hal_family *f = probe("amd", XP_FAKE_ROCM_SMI, 0, &err);
	struct xp_cluster *c = enumerate("amd", f, &n);
	assert_int_equal(n->ndevs, 4);
	for (unsigned i = 0; i < 4; i++) {
		const struct xp_device *d = &n->devs[i];
		char buf[64];
		assert_int_equal(d->cls, XP_CLASS_GPU);
		assert_int_equal(d->health, XP_HEALTH_OK);
		assert_string_equal(sym(c, d->vendor), "AMD");
		assert_string_equal(sym(c, d->model), "Instinct-MI250X");
		assert_int_equal(d->arch, 0);
		assert_int_equal(d->cc, 0);
		assert_int_equal(d->mem_mib, 65536);
		snprintf(buf, sizeof(buf), "GPU-a1b2c3d4e5f6000%u", i);
		assert_string_equal(d->uuid, buf);
		snprintf(buf, sizeof(buf), "0000:%02x:00.0", 0x20 + 0x10 * i);
		assert_string_equal(d->pci_bus_id, buf);
		assert_int_equal(d->numa, (int)(i % 2));
		assert_string_equal(attr(d, "hal"), "amd");
		snprintf(buf, sizeof(buf), "%u", i);
		assert_string_equal(attr(d, "hal_index"), buf);
		assert_string_equal(attr(d, "product_name"), "AMD Instinct MI250X");
		assert_string_equal(attr(d, "rocm_smi_version"), "7.0.0");
		snprintf(buf, sizeof(buf), "/dev/dri/renderD%u,/dev/kfd", 128 + i);
		assert_string_equal(attr(d, "dev_nodes"), buf);
		assert_int_equal(d->island, i < 2 ? 0 : -1);
		assert_int_equal(d->nlinks, i < 2 ? 1 : 0);
		if (i < 2) {
			assert_int_equal(d->links[0].kind, XP_LINK_XGMI);
			assert_int_equal(d->links[0].peer, (int)(i ^ 1));
			assert_string_equal(attr(d, "interconnect"), "xGMI");
		}
	}
	xp_cluster_destroy(c);
	fam("amd")->close(f);
}

static void test_amd_stats_env(void **state)
{
	struct xp_err err;
	struct xp_hal_stats s;
	setenv("FAKE_RSMI_COUNT", "4", 1);
	struct xp_hal_family *f = probe("amd", XP_FAKE_ROCM_SMI, 0, &err);

	stats("amd", f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	assert_string_equal(s.why, "");
	assert_int_equal(s.util_pct, 21);
	assert_int_equal(s.mem_used_mib, 3072);
	assert_int_equal(s.power_w, 201);
	assert_int_equal(s.temp_c, 51); /* junction */

	setenv("FAKE_RSMI_ECC", "1:2", 1);
	stats("amd", f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "2 uncorrectable ECC errors in memory");
	unsetenv("FAKE_RSMI_ECC");
	stats("amd", f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);

	setenv("FAKE_RSMI_FAIL", "rsmi_dev_temp_metric_get,rsmi_dev_busy_percent_get", 1);
	stats("amd", f, 2, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	assert_int_equal(s.temp_c, -1);
	assert_int_equal(s.util_pct, -1);
	assert_int_equal(s.power_w, 202);
	unsetenv("FAKE_RSMI_FAIL");
	assert_int_equal(fam("amd")->stats(f, 4, &s, &err), XP_ENOENT);

	unsigned a[] = { 3, 1 };
	env_is("amd", f, a, 2, "ROCR_VISIBLE_DEVICES=3,1\nHIP_VISIBLE_DEVICES=0,1\n");
	env_is("amd", f, NULL, 0, "ROCR_VISIBLE_DEVICES=-1\nHIP_VISIBLE_DEVICES=-1\n");
	struct xp_sb out;
	xp_sb_init(&out);
	unsigned bad[] = { 7 };
	assert_int_equal(fam("amd")->env(f, bad, 1, &out), XP_ENOENT);
	xp_sb_free(&out);
	fam("amd")->close(f);
}

/* ascend (DCMI) */

static void test_ascend_refusals(void **state)
{
	struct xp_err err;
	probe("ascend", MISSING, XP_ENOENT, &err);
	assert_non_null(strstr(err.text, "cannot load"));

	setenv("FAKE_DCMI_CARDS", "1", 1);
	probe("ascend", XP_FAKE_DCMI_BROKEN, XP_ENOENT, &err);
	assert_non_null(strstr(err.text, "lacks dcmi_get_device_logic_id"));

	setenv("FAKE_DCMI_INIT_FAIL", "-8005", 1);
	probe("ascend", XP_FAKE_DCMI, XP_EIO, &err);
	assert_non_null(strstr(err.text, "dcmi_init: DCMI error -8005"));
	unsetenv("FAKE_DCMI_INIT_FAIL");

	setenv("FAKE_DCMI_CARDS", "0", 1);
	probe("ascend", XP_FAKE_DCMI, XP_ENOENT, &err);
	assert_non_null(strstr(err.text, "no Ascend NPUs"));
}

static void test_ascend_enumerate(void **state)
{
	struct xp_err err;
	struct xp_node *n;
	setenv("FAKE_DCMI_CARDS", "2", 1);
	setenv("FAKE_DCMI_CHIPS", "2", 1);
	struct xp_hal_family *f = probe("ascend", XP_FAKE_DCMI, 0, &err);
	struct xp_cluster *c = enumerate("ascend", f, &n);
	assert_int_equal(n->ndevs, 4); /* the cards' MCUs are not NPUs */
	for (unsigned k = 0; k < 4; k++) {
		const struct xp_device *d = &n->devs[k];
		char buf[128];
		assert_int_equal(d->cls, XP_CLASS_NPU);
		assert_int_equal(d->health, XP_HEALTH_OK);
		assert_string_equal(sym(c, d->vendor), "Huawei");
		assert_string_equal(sym(c, d->model), "Ascend910B3");
		assert_int_equal(d->mem_mib, 65536);
		assert_null(d->uuid);
		snprintf(buf, sizeof(buf), "0000:%02x:00.0", 0x80 + k);
		assert_string_equal(d->pci_bus_id, buf);
		assert_int_equal(d->numa, -1);
		assert_int_equal(d->island, -1);
		assert_int_equal(d->nlinks, 0);
		assert_string_equal(attr(d, "hal"), "ascend");
		snprintf(buf, sizeof(buf), "%u", k);
		assert_string_equal(attr(d, "hal_index"), buf);
		assert_string_equal(attr(d, "logic_id"), buf);
		snprintf(buf, sizeof(buf), "%u", 2 * (k / 2));
		assert_string_equal(attr(d, "card_id"), buf);
		snprintf(buf, sizeof(buf), "%u", k % 2);
		assert_string_equal(attr(d, "chip_id"), buf);
		snprintf(buf, sizeof(buf),
			 "/dev/davinci%u,/dev/davinci_manager,/dev/devmm_svm,/dev/hisi_hdc",
			 100 + k);
		assert_string_equal(attr(d, "dev_nodes"), buf);
		assert_string_equal(attr(d, "driver"), "24.1.rc2.b030");
		assert_string_equal(attr(d, "dcmi_version"), "24.1.rc2");
		assert_string_equal(attr(d, "aicore_count"), "20");
	}
	xp_cluster_destroy(c);
	fam("ascend")->close(f);

	/* an older driver (card_num_list) without HBM (DDR memory) */
	setenv("FAKE_DCMI_OLD", "1", 1);
	setenv("FAKE_DCMI_HBM_MIB", "0", 1);
	setenv("FAKE_DCMI_CHIP", "310P3", 1);
	f = probe("ascend", XP_FAKE_DCMI, 0, &err);
	c = enumerate("ascend", f, &n);
	assert_int_equal(n->ndevs, 4);
	assert_string_equal(sym(c, n->devs[0].model), "Ascend310P3");
	assert_int_equal(n->devs[0].mem_mib, 16384);
	struct xp_hal_stats s;
	stats("ascend", f, 0, &s);
	assert_int_equal(s.mem_used_mib, 512);
	xp_cluster_destroy(c);
	fam("ascend")->close(f);
}

static void test_ascend_stats_env(void **state)
{
	struct xp_err err;
	struct xp_hal_stats s;
	setenv("FAKE_DCMI_CARDS", "2", 1);
	setenv("FAKE_DCMI_CHIPS", "2", 1);
	struct xp_hal_family *f = probe("ascend", XP_FAKE_DCMI, 0, &err);

	stats("ascend", f, 2, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	assert_int_equal(s.util_pct, 32);
	assert_int_equal(s.mem_used_mib, 3 * 1024);
	assert_int_equal(s.temp_c, 62);
	assert_int_equal(s.power_w, 82); /* 825 deciwatts */

	setenv("FAKE_DCMI_HEALTH", "1:3,2:1", 1);
	setenv("FAKE_DCMI_ERRCODE", "1:0x80e01801", 1);
	stats("ascend", f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "critical alarm, error codes 0x80e01801");
	stats("ascend", f, 2, &s);
	assert_int_equal(s.health, XP_HEALTH_DEGRADED);
	assert_string_equal(s.why, "minor alarm");
	setenv("FAKE_DCMI_HEALTH", "0:2", 1);
	stats("ascend", f, 0, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "major alarm");
	stats("ascend", f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	unsetenv("FAKE_DCMI_HEALTH");

	setenv("FAKE_DCMI_FAIL", "dcmi_get_device_health,dcmi_get_device_power_info", 1);
	stats("ascend", f, 3, &s);
	assert_int_equal(s.health, XP_HEALTH_UNKNOWN);
	assert_non_null(strstr(s.why, "dcmi_get_device_health: DCMI error -8255"));
	assert_int_equal(s.power_w, -1);
	assert_int_equal(s.util_pct, 33);
	unsetenv("FAKE_DCMI_FAIL");

	unsigned a[] = { 3, 1 };
	env_is("ascend", f, a, 2, "ASCEND_RT_VISIBLE_DEVICES=3,1\n");
	env_is("ascend", f, NULL, 0, "ASCEND_RT_VISIBLE_DEVICES=\n");
	fam("ascend")->close(f);
}

/* cambricon (CNDev) */

static void test_cambricon_refusals(void **state)
{
	struct xp_err err;
	probe("cambricon", MISSING, XP_ENOENT, &err);
	assert_non_null(strstr(err.text, "cannot load"));

	setenv("FAKE_CNDEV_COUNT", "2", 1);
	probe("cambricon", XP_FAKE_CNDEV_BROKEN, XP_ENOENT, &err);
	assert_non_null(strstr(err.text, "lacks cndevGetCardHealthState"));

	setenv("FAKE_CNDEV_INIT_FAIL", "1", 1);
	probe("cambricon", XP_FAKE_CNDEV, XP_EIO, &err);
	assert_non_null(strstr(err.text, "cndevInit: No Driver"));
	unsetenv("FAKE_CNDEV_INIT_FAIL");

	setenv("FAKE_CNDEV_MIN_VERSION", "6", 1);
	probe("cambricon", XP_FAKE_CNDEV, XP_EVERSION, &err);
	assert_non_null(strstr(err.text, "API version 5 not supported"));
	unsetenv("FAKE_CNDEV_MIN_VERSION");

	setenv("FAKE_CNDEV_COUNT", "0", 1);
	probe("cambricon", XP_FAKE_CNDEV, XP_ENOENT, &err);
	assert_non_null(strstr(err.text, "no Cambricon MLUs"));
}

static void test_cambricon_enumerate(void **state)
{
	struct xp_err err;
	struct xp_node *n;
	setenv("FAKE_CNDEV_COUNT", "2", 1);
	struct xp_hal_family *f = probe("cambricon", XP_FAKE_CNDEV, 0, &err);
	struct xp_cluster *c = enumerate("cambricon", f, &n);
	assert_int_equal(n->ndevs, 2);
	for (unsigned i = 0; i < 2; i++) {
		const struct xp_device *d = &n->devs[i];
		char buf[96];
		assert_int_equal(d->cls, XP_CLASS_NPU);
		assert_int_equal(d->health, XP_HEALTH_OK);
		assert_string_equal(sym(c, d->vendor), "Cambricon");
		assert_string_equal(sym(c, d->model), "MLU370-X8");
		assert_int_equal(d->mem_mib, 49152);
		snprintf(buf, sizeof(buf), "MLU-fake0000-0000-0000-0000-%012u", i);
		assert_string_equal(d->uuid, buf);
		assert_null(d->pci_bus_id);
		assert_int_equal(d->island, -1);
		assert_string_equal(attr(d, "hal"), "cambricon");
		snprintf(buf, sizeof(buf), "%u", i);
		assert_string_equal(attr(d, "hal_index"), buf);
		snprintf(buf, sizeof(buf), "/dev/cambricon_dev%u", i);
		assert_string_equal(attr(d, "dev_nodes"), buf);
		assert_string_equal(attr(d, "cndev_version"), "5.10.22");
	}
	xp_cluster_destroy(c);

	/* no name string: the name enum */
	setenv("FAKE_CNDEV_FAIL", "cndevGetCardNameStringByDevId", 1);
	c = enumerate("cambricon", f, &n);
	assert_string_equal(sym(c, n->devs[0].model), "MLU370");
	xp_cluster_destroy(c);
	fam("cambricon")->close(f);
}

static void test_cambricon_stats_env(void **state)
{
	struct xp_err err;
	struct xp_hal_stats s;
	setenv("FAKE_CNDEV_COUNT", "3", 1);
	struct xp_hal_family *f = probe("cambricon", XP_FAKE_CNDEV, 0, &err);

	stats("cambricon", f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	assert_int_equal(s.util_pct, 41);
	assert_int_equal(s.mem_used_mib, 1024);
	assert_int_equal(s.temp_c, 36);
	assert_int_equal(s.power_w, -1);

	setenv("FAKE_CNDEV_SICK", "1", 1);
	stats("cambricon", f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "CNDev health flag 0; device in problem");
	unsetenv("FAKE_CNDEV_SICK");
	setenv("FAKE_CNDEV_DRIVER", "2:6", 1);
	stats("cambricon", f, 2, &s);
	assert_int_equal(s.health, XP_HEALTH_DEGRADED);
	assert_string_equal(s.why, "driver state 6");
	unsetenv("FAKE_CNDEV_DRIVER");

	setenv("FAKE_CNDEV_FAIL", "cndevGetCardHealthState,cndevGetTemperatureInfo", 1);
	stats("cambricon", f, 0, &s);
	assert_int_equal(s.health, XP_HEALTH_UNKNOWN);
	assert_string_equal(s.why, "cndevGetCardHealthState: Not Supported");
	assert_int_equal(s.temp_c, -1);
	assert_int_equal(s.util_pct, 40);
	unsetenv("FAKE_CNDEV_FAIL");

	unsigned a[] = { 2 };
	env_is("cambricon", f, a, 1, "MLU_VISIBLE_DEVICES=2\n");
	env_is("cambricon", f, NULL, 0, "MLU_VISIBLE_DEVICES=\n");
	fam("cambricon")->close(f);
}

/* fpga (sysfs) */

static struct xp_hal_family *fpga_probe(const char *root, int want, struct xp_err *err)
{
	struct xp_hal_opts o;
	struct xp_hal_family *f = NULL;
	memset(&o, 0, sizeof(o));
	memset(err, 0, sizeof(*err));
	o.sysfs_root = root;
	int rc = fam("fpga")->probe(&o, &f, err);
	if (rc != want)
		fail_msg("fpga probe: want %d, got %d (%s)", want, rc, err->text);
	return f;
}

static void test_fpga_enumerate(void **state)
{
	struct xp_err err;
	struct xp_node *n;
	struct xp_hal_family *f = fpga_probe(XP_FAKE_SYSFS, 0, &err);
	struct xp_cluster *c = enumerate("fpga", f, &n);
	assert_int_equal(n->ndevs, 2); /* two cards; the SATA controller and NIC are not FPGAs */

	const struct xp_device *x = &n->devs[0];
	assert_int_equal(x->cls, XP_CLASS_FPGA);
	assert_int_equal(x->health, XP_HEALTH_OK);
	assert_string_equal(sym(c, x->vendor), "Xilinx");
	assert_string_equal(sym(c, x->model), "Alveo-U280");
	assert_string_equal(x->pci_bus_id, "0000:3b:00.1"); /* the user function */
	assert_null(x->uuid);
	assert_int_equal(x->numa, 0);
	assert_int_equal(x->mem_mib, 32768);
	assert_int_equal(x->island, -1);
	assert_string_equal(attr(x, "hal"), "fpga");
	assert_string_equal(attr(x, "hal_index"), "0");
	assert_string_equal(attr(x, "shell"), "xilinx_u280_xdma_201920_3");
	assert_string_equal(attr(x, "fpga_part"), "xcu280-fsvh2892-2L-e");
	assert_string_equal(attr(x, "serial"), "21770297400L");
	assert_string_equal(attr(x, "dev_nodes"), "/dev/dri/renderD128");
	assert_string_equal(attr(x, "interconnect"), "PCIe");

	const struct xp_device *i = &n->devs[1];
	assert_int_equal(i->cls, XP_CLASS_FPGA);
	assert_int_equal(i->health, XP_HEALTH_OK);
	assert_string_equal(sym(c, i->vendor), "Intel");
	assert_string_equal(sym(c, i->model), "PAC-N3000");
	assert_string_equal(i->pci_bus_id, "0000:5e:00.0");
	assert_int_equal(i->numa, 1);
	assert_int_equal(i->mem_mib, 0);
	assert_string_equal(attr(i, "hal_index"), "1");
	assert_string_equal(attr(i, "bitstream_id"), "0x23000410010309");
	assert_string_equal(attr(i, "dev_nodes"), "/dev/dfl-fme.0,/dev/dfl-port.0");

	struct xp_hal_stats s;
	stats("fpga", f, 0, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	assert_int_equal(s.temp_c, 45);
	assert_int_equal(s.power_w, 35);
	assert_int_equal(s.util_pct, -1);
	assert_int_equal(s.mem_used_mib, -1);
	stats("fpga", f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);
	assert_int_equal(s.temp_c, 52);
	assert_int_equal(s.power_w, 62);
	assert_int_equal(fam("fpga")->stats(f, 2, &s, &err), XP_ENOENT);

	unsigned a[] = { 1, 0 };
	env_is("fpga", f, a, 2, "XP_VISIBLE_FPGAS=0000:5e:00.0,0000:3b:00.1\n");
	env_is("fpga", f, NULL, 0, "XP_VISIBLE_FPGAS=\n");
	xp_cluster_destroy(c);
	fam("fpga")->close(f);
}

static void put(const char *root, const char *rel, const char *text)
{
	char p[1024];
	snprintf(p, sizeof(p), "%s/sys/bus/pci/devices/%s", root, rel);
	FILE *f = fopen(p, "w");
	if (!f)
		fail_msg("cannot write %s", p);
	fputs(text, f);
	fclose(f);
}

static void test_fpga_health(void **state)
{
	char root[] = "/tmp/xp_hal_sysfs_XXXXXX", cmd[1024];
	struct xp_err err;
	struct xp_hal_stats s;
	assert_non_null(mkdtemp(root));
	snprintf(cmd, sizeof(cmd), "cp -r '%s/sys' '%s/'", XP_FAKE_SYSFS, root);
	assert_int_equal(system(cmd), 0);
	struct xp_hal_family *f = fpga_probe(root, 0, &err);

	put(root, "0000:3b:00.1/dev_offline", "1\n");
	stats("fpga", f, 0, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "device offline");
	put(root, "0000:3b:00.1/ready", "0x0\n");
	stats("fpga", f, 0, &s);
	assert_string_equal(s.why, "device offline; shell not ready");
	put(root, "0000:3b:00.1/dev_offline", "0\n");
	put(root, "0000:3b:00.1/ready", "0x1\n");
	stats("fpga", f, 0, &s);
	assert_int_equal(s.health, XP_HEALTH_OK);

	put(root, "0000:5e:00.0/fpga_region/region0/dfl-fme.0/errors/nonfatal_errors", "0x10\n");
	stats("fpga", f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_DEGRADED);
	assert_string_equal(s.why, "non-fatal error 0x10");
	put(root, "0000:5e:00.0/fpga_region/region0/dfl-fme.0/errors/catfatal_errors", "0x4\n");
	stats("fpga", f, 1, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "catastrophic/fatal error 0x4; non-fatal error 0x10");

	/* the card fell off the bus */
	snprintf(cmd, sizeof(cmd), "rm -r '%s/sys/bus/pci/devices/0000:3b:00.1'", root);
	assert_int_equal(system(cmd), 0);
	stats("fpga", f, 0, &s);
	assert_int_equal(s.health, XP_HEALTH_UNHEALTHY);
	assert_string_equal(s.why, "PCI device 0000:3b:00.1 is gone");
	fam("fpga")->close(f);

	/* a tree with no FPGA cards, and no tree at all: not here */
	snprintf(
		cmd, sizeof(cmd),
		"rm -r '%s/sys/bus/pci/devices/0000:3b:00.0' '%s/sys/bus/pci/devices/0000:5e:00.0'",
		root, root);
	assert_int_equal(system(cmd), 0);
	assert_null(fpga_probe(root, XP_ENOENT, &err));
	assert_non_null(strstr(err.text, "no Xilinx or Intel FPGA cards"));
	assert_null(fpga_probe("/nonexistent/xpool-test", XP_ENOENT, &err));
	snprintf(cmd, sizeof(cmd), "rm -r '%s'", root);
	assert_int_equal(system(cmd), 0);
}

/* All four at once through the router */

static void test_router_all_vendors(void **state)
{
	struct xp_hal_opts o;
	struct xp_err err = { 0 };
	struct xp_sb env, w;
	setenv("FAKE_RSMI_COUNT", "1", 1);
	setenv("FAKE_DCMI_CARDS", "1", 1);
	setenv("FAKE_CNDEV_COUNT", "1", 1);
	memset(&o, 0, sizeof(o));
	o.lib_override[0] = "nvidia=" MISSING;
	o.lib_override[1] = "amd=" XP_FAKE_ROCM_SMI;
	o.lib_override[2] = "ascend=" XP_FAKE_DCMI;
	o.lib_override[3] = "cambricon=" XP_FAKE_CNDEV;
	o.sysfs_root = XP_FAKE_SYSFS;
	struct xp_hal *h = xp_hal_open(&o, &err);
	assert_non_null(h);
	assert_string_equal(xp_hal_active(h), "cpu,amd,ascend,cambricon,fpga");
	xp_sb_init(&w);
	struct xp_cluster *c = xp_hal_discover(h, "all", &w, &err);
	assert_non_null(c);
	assert_int_equal(err.code, 0);
	assert_int_equal(w.len, 0);
	const struct xp_node *n = &c->nodes[0];
	assert_int_equal(n->ndevs, 5);
	static const char *const fams[] = { "amd", "ascend", "cambricon", "fpga", "fpga" };
	for (unsigned i = 0; i < 5; i++)
		assert_string_equal(attr(&n->devs[i], "hal"), fams[i]);

	struct xp_hal_stats s;
	assert_int_equal(xp_hal_stats(h, 1, &s, &err), 0);
	assert_int_equal(s.util_pct, 30); /* ascend NPU 0 */
	assert_int_equal(xp_hal_stats(h, 4, &s, &err), 0);
	assert_int_equal(s.temp_c, 52); /* the Intel card */

	xp_sb_init(&env);
	unsigned a[] = { 4, 1 };
	assert_int_equal(xp_hal_env(h, a, 2, &env, &err), 0);
	assert_string_equal(env.s, "ROCR_VISIBLE_DEVICES=-1\nHIP_VISIBLE_DEVICES=-1\n"
				   "ASCEND_RT_VISIBLE_DEVICES=0\n"
				   "MLU_VISIBLE_DEVICES=\n"
				   "XP_VISIBLE_FPGAS=0000:5e:00.0\n");
	xp_sb_free(&env);
	xp_sb_free(&w);
	xp_cluster_destroy(c);
	xp_hal_close(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_amd_refusals, setup),
		cmocka_unit_test_setup(test_amd_enumerate, setup),
		cmocka_unit_test_setup(test_amd_stats_env, setup),
		cmocka_unit_test_setup(test_ascend_refusals, setup),
		cmocka_unit_test_setup(test_ascend_enumerate, setup),
		cmocka_unit_test_setup(test_ascend_stats_env, setup),
		cmocka_unit_test_setup(test_cambricon_refusals, setup),
		cmocka_unit_test_setup(test_cambricon_enumerate, setup),
		cmocka_unit_test_setup(test_cambricon_stats_env, setup),
		cmocka_unit_test_setup(test_fpga_enumerate, setup),
		cmocka_unit_test_setup(test_fpga_health, setup),
		cmocka_unit_test_setup(test_router_all_vendors, setup),
	};
	return xp_run_tests(tests, NULL, NULL);
}
