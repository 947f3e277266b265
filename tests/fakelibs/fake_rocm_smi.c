/*
 * fake_rocm_smi: a stand-in for librocm_smi64.so implementing the ROCm SMI
 * functions the amd family binds (src/hal/rsmi_abi.h).
 *
 * Knobs (environment, see fake_common.h; read at rsmi_init unless noted):
 *   FAKE_RSMI_COUNT=n        GPUs (default 0)
 *   FAKE_RSMI_NAME=s         marketing name (default "AMD Instinct MI250X")
 *   FAKE_RSMI_MEM_MIB=n      VRAM per GPU (default 65536)
 *   FAKE_RSMI_VERSION=M      library major version (default 7)
 *   FAKE_RSMI_INIT_FAIL=st   rsmi_init returns status st
 *   FAKE_RSMI_HIVE=1,1,2,2   xGMI hive id per GPU (0: none)
 * Read on every call:
 *   FAKE_RSMI_ECC=1:2        uncorrectable UMC ECC errors per GPU
 *   FAKE_RSMI_FAIL=fn,...    functions that answer RSMI_STATUS_NOT_SUPPORTED
 *
 * GPU i: unique id 0xa1b2c3d4e5f60000+i, PCI 0000:<0x20+0x10i>:00.0, NUMA
 * node i%2, render minor 128+i, busy 20+i %, used VRAM (i+2) GiB, average
 * power 200+i W, junction temperature 50+i C (edge: 45+i C).
 *
 * -DFAKE_OMIT_REQUIRED leaves out rsmi_dev_memory_total_get.
 */
#include <stdio.h>
#include <string.h>

#include "fake_common.h"
#include "rsmi_abi.h"

#define X(ret, name, args) FAKE_EXPORT ret name args;
XP_RSMI_FUNCS(X)
#undef X

static unsigned count;
static int inited;

#define CHECK(dv, fn)                                                                              \
	do {                                                                                       \
		if (!inited)                                                                       \
			return RSMI_STATUS_INIT_ERROR;                                             \
		if ((dv) >= count)                                                                 \
			return RSMI_STATUS_INVALID_ARGS;                                           \
		if (fk_has("FAKE_RSMI_FAIL", fn))                                                  \
			return RSMI_STATUS_NOT_SUPPORTED;                                          \
	} while (0)

rsmi_status_t rsmi_init(uint64_t flags)
{
	long fail = fk_int("FAKE_RSMI_INIT_FAIL", 0);
	if (fail)
		return (rsmi_status_t)fail;
	count = (unsigned)fk_int("FAKE_RSMI_COUNT", 0);
	inited = 1;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_shut_down(void)
{
	inited = 0;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_status_string(rsmi_status_t st, const char **s)
{
	switch (st) {
	case RSMI_STATUS_SUCCESS:
		*s = "RSMI_STATUS_SUCCESS: The function has been executed successfully.";
		break;
	case RSMI_STATUS_INIT_ERROR:
		*s = "RSMI_STATUS_INIT_ERROR: An error occurred when initializing internal data "
		     "structures.";
		break;
	case RSMI_STATUS_PERMISSION:
		*s = "RSMI_STATUS_PERMISSION: The user ID of the calling process does not have "
		     "sufficient permission to execute a command.";
		break;
	default:
		*s = "RSMI_STATUS_UNKNOWN_ERROR: An unknown error occurred";
	}
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_version_get(rsmi_version_t *v)
{
	static char build[] = "7.0.0.0-fake";
	v->major = (uint32_t)fk_int("FAKE_RSMI_VERSION", 7);
	v->minor = 0;
	v->patch = 0;
	v->build = build;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_num_monitor_devices(uint32_t *n)
{
	if (!inited)
		return RSMI_STATUS_INIT_ERROR;
	*n = count;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_name_get(uint32_t dv, char *name, size_t len)
{
	CHECK(dv, "rsmi_dev_name_get");
	const char *s = fk_str("FAKE_RSMI_NAME", "AMD Instinct MI250X");
	if (strlen(s) + 1 > len)
		return RSMI_STATUS_INVALID_ARGS;
	memcpy(name, s, strlen(s) + 1);
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_unique_id_get(uint32_t dv, uint64_t *id)
{
	CHECK(dv, "rsmi_dev_unique_id_get");
	*id = 0xa1b2c3d4e5f60000ULL + dv;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_pci_id_get(uint32_t dv, uint64_t *bdfid)
{
	CHECK(dv, "rsmi_dev_pci_id_get");
	*bdfid = (uint64_t)((0x20 + 0x10 * dv) & 0xff) << 8;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_topo_get_numa_node_number(uint32_t dv, uint32_t *node)
{
	CHECK(dv, "rsmi_topo_get_numa_node_number");
	*node = dv % 2;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_xgmi_hive_id_get(uint32_t dv, uint64_t *hive)
{
	CHECK(dv, "rsmi_dev_xgmi_hive_id_get");
	*hive = (uint64_t)fk_item("FAKE_RSMI_HIVE", dv, 0);
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_drm_render_minor_get(uint32_t dv, uint32_t *minor)
{
	CHECK(dv, "rsmi_dev_drm_render_minor_get");
	*minor = 128 + dv;
	return RSMI_STATUS_SUCCESS;
}

#ifndef FAKE_OMIT_REQUIRED
rsmi_status_t rsmi_dev_memory_total_get(uint32_t dv, int type, uint64_t *bytes)
{
	CHECK(dv, "rsmi_dev_memory_total_get");
	if (type != RSMI_MEM_TYPE_VRAM)
		return RSMI_STATUS_NOT_SUPPORTED;
	*bytes = (uint64_t)fk_int("FAKE_RSMI_MEM_MIB", 65536) << 20;
	return RSMI_STATUS_SUCCESS;
}
#endif

rsmi_status_t rsmi_dev_memory_usage_get(uint32_t dv, int type, uint64_t *bytes)
{
	CHECK(dv, "rsmi_dev_memory_usage_get");
	if (type != RSMI_MEM_TYPE_VRAM)
		return RSMI_STATUS_NOT_SUPPORTED;
	*bytes = (uint64_t)(dv + 2) << 30;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_busy_percent_get(uint32_t dv, uint32_t *pct)
{
	CHECK(dv, "rsmi_dev_busy_percent_get");
	*pct = 20 + dv;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_power_ave_get(uint32_t dv, uint32_t sensor, uint64_t *uw)
{
	CHECK(dv, "rsmi_dev_power_ave_get");
	*uw = (uint64_t)(200 + dv) * 1000000 + 123;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_temp_metric_get(uint32_t dv, uint32_t sensor, int metric, int64_t *millic)
{
	CHECK(dv, "rsmi_dev_temp_metric_get");
	if (metric != RSMI_TEMP_CURRENT)
		return RSMI_STATUS_NOT_SUPPORTED;
	if (sensor == RSMI_TEMP_TYPE_JUNCTION)
		*millic = (int64_t)(50 + dv) * 1000 + 300;
	else if (sensor == RSMI_TEMP_TYPE_EDGE)
		*millic = (int64_t)(45 + dv) * 1000;
	else
		return RSMI_STATUS_NOT_SUPPORTED;
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_dev_ecc_count_get(uint32_t dv, uint64_t block, rsmi_error_count_t *ec)
{
	CHECK(dv, "rsmi_dev_ecc_count_get");
	if (block != RSMI_GPU_BLOCK_UMC)
		return RSMI_STATUS_NOT_SUPPORTED;
	ec->correctable_err = 7;
	ec->uncorrectable_err = (uint64_t)fk_map("FAKE_RSMI_ECC", dv, 0);
	return RSMI_STATUS_SUCCESS;
}
