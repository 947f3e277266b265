/*
 * rsmi_abi: the part of AMD's ROCm SMI C ABI (librocm_smi64.so) the amd
 * family calls, declared here because no ROCm SDK is installed where xpool
 * builds. Written from rocm_smi.h as published in ROCm/rocm_smi_lib.
 *
 * rsmi_gpu_block_t is a 64-bit bit-mask enum in current releases
 * (RSMI_GPU_BLOCK_RESERVED = 1 << 63), so it is passed as uint64_t.
 * rsmi_error_count_t has grown a field in newer releases; the library
 * writes into a padded copy.
 *
 * Also included by tests/fakelibs/fake_rocm_smi.c.
 */
#ifndef XP_RSMI_ABI_H
#define XP_RSMI_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int rsmi_status_t;
enum {
	RSMI_STATUS_SUCCESS = 0,
	RSMI_STATUS_INVALID_ARGS = 1,
	RSMI_STATUS_NOT_SUPPORTED = 2,
	RSMI_STATUS_FILE_ERROR = 3,
	RSMI_STATUS_PERMISSION = 4,
	RSMI_STATUS_INIT_ERROR = 8,
	RSMI_STATUS_NOT_FOUND = 10,
};

#define RSMI_MEM_TYPE_VRAM	0
#define RSMI_TEMP_TYPE_EDGE	0
#define RSMI_TEMP_TYPE_JUNCTION 1
#define RSMI_TEMP_CURRENT	0
#define RSMI_GPU_BLOCK_UMC	0x1ULL

typedef struct {
	uint64_t correctable_err;
	uint64_t uncorrectable_err;
} rsmi_error_count_t;

typedef struct {
	uint32_t major, minor, patch;
	const char *build;
} rsmi_version_t;

#define XP_RSMI_FUNCS(X)                                                                           \
	X(rsmi_status_t, rsmi_init, (uint64_t flags))                                              \
	X(rsmi_status_t, rsmi_shut_down, (void))                                                   \
	X(rsmi_status_t, rsmi_status_string, (rsmi_status_t status, const char **str))             \
	X(rsmi_status_t, rsmi_version_get, (rsmi_version_t * v))                                   \
	X(rsmi_status_t, rsmi_num_monitor_devices, (uint32_t * n))                                 \
	X(rsmi_status_t, rsmi_dev_name_get, (uint32_t dv, char *name, size_t len))                 \
	X(rsmi_status_t, rsmi_dev_unique_id_get, (uint32_t dv, uint64_t * id))                     \
	X(rsmi_status_t, rsmi_dev_pci_id_get, (uint32_t dv, uint64_t * bdfid))                     \
	X(rsmi_status_t, rsmi_topo_get_numa_node_number, (uint32_t dv, uint32_t * node))           \
	X(rsmi_status_t, rsmi_dev_xgmi_hive_id_get, (uint32_t dv, uint64_t * hive))                \
	X(rsmi_status_t, rsmi_dev_drm_render_minor_get, (uint32_t dv, uint32_t * minor))           \
	X(rsmi_status_t, rsmi_dev_memory_total_get, (uint32_t dv, int type, uint64_t *bytes))      \
	X(rsmi_status_t, rsmi_dev_memory_usage_get, (uint32_t dv, int type, uint64_t *bytes))      \
	X(rsmi_status_t, rsmi_dev_busy_percent_get, (uint32_t dv, uint32_t * pct))                 \
	X(rsmi_status_t, rsmi_dev_power_ave_get, (uint32_t dv, uint32_t sensor, uint64_t * uw))    \
	X(rsmi_status_t, rsmi_dev_temp_metric_get,                                                 \
	  (uint32_t dv, uint32_t sensor, int metric, int64_t *millic))                             \
	X(rsmi_status_t, rsmi_dev_ecc_count_get,                                                   \
	  (uint32_t dv, uint64_t block, rsmi_error_count_t * ec))

#endif
