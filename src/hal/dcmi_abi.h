/*
 * dcmi_abi: the part of Huawei's Ascend DCMI C ABI (libdcmi.so, from the
 * Ascend NPU driver) the ascend family calls, declared here because no
 * Ascend SDK is installed where xpool builds. Written from the DCMI API
 * reference (dcmi_interface_api.h). DCMI addresses a chip as (card id,
 * device id in the card); the runtime (ASCEND_RT_VISIBLE_DEVICES) uses the
 * chip's logic id.
 *
 * Errors are negative (DCMI_ERROR_CODE_BASE -8000 and below); 0 is success.
 * dcmi_get_card_list replaced dcmi_get_card_num_list in newer drivers; the
 * family takes whichever the library has (the older one when the newer one
 * answers with an error).
 *
 * Also included by tests/fakelibs/fake_dcmi.c.
 */
#ifndef XP_DCMI_ABI_H
#define XP_DCMI_ABI_H

#define DCMI_OK				0
#define DCMI_ERR_CODE_INVALID_PARAMETER (-8001)
#define DCMI_ERR_CODE_INNER_ERR		(-8005)
#define DCMI_ERR_CODE_DEVICE_NOT_EXIST	(-8008)
#define DCMI_ERR_CODE_NOT_SUPPORT	(-8255)

#define DCMI_MAX_CHIP_NAME_LEN 32
#define DCMI_NPU_TYPE	       0 /* enum dcmi_unit_type: NPU_TYPE */
#define DCMI_UTIL_AICORE       2 /* dcmi_get_device_utilization_rate input_type */

/* dcmi_get_device_health: 0 ok, 1 minor, 2 major, 3 critical alarm. */
#define DCMI_HEALTH_OK	     0
#define DCMI_HEALTH_MINOR    1
#define DCMI_HEALTH_MAJOR    2
#define DCMI_HEALTH_CRITICAL 3

struct dcmi_chip_info {
	unsigned char chip_type[DCMI_MAX_CHIP_NAME_LEN]; /* "Ascend" */
	unsigned char chip_name[DCMI_MAX_CHIP_NAME_LEN]; /* "910B3" */
	unsigned char chip_ver[DCMI_MAX_CHIP_NAME_LEN];
	unsigned int aicore_cnt;
};

struct dcmi_hbm_info {
	unsigned long long memory_size; /* MB */
	unsigned int freq;
	unsigned long long memory_usage; /* MB */
	int temp;
	unsigned int bandwith_util_rate;
};

struct dcmi_get_memory_info_stru {
	unsigned long long memory_size;	     /* MB */
	unsigned long long memory_available; /* MB */
	unsigned int freq;
	unsigned long hugepagesize;
	unsigned long hugepages_total;
	unsigned long hugepages_free;
	unsigned int utiliza;
	unsigned char reserve[60];
};

struct dcmi_pcie_info_all {
	unsigned int venderid;
	unsigned int subvenderid;
	unsigned int deviceid;
	unsigned int subdeviceid;
	int domain;
	unsigned int bdf_busid;
	unsigned int bdf_deviceid;
	unsigned int bdf_funcid;
	unsigned char reserve[32];
};

_Static_assert(sizeof(struct dcmi_chip_info) == 100, "dcmi_chip_info layout");
_Static_assert(sizeof(struct dcmi_pcie_info_all) == 64, "dcmi_pcie_info_all layout");

#define XP_DCMI_FUNCS(X)                                                                           \
	X(int, dcmi_init, (void))                                                                  \
	X(int, dcmi_get_dcmi_version, (char *ver, unsigned int len))                               \
	X(int, dcmi_get_driver_version, (char *ver, unsigned int len))                             \
	X(int, dcmi_get_card_list, (int *num, int *list, int len))                                 \
	X(int, dcmi_get_card_num_list, (int *num, int *list, int len))                             \
	X(int, dcmi_get_device_num_in_card, (int card, int *num))                                  \
	X(int, dcmi_get_device_type, (int card, int dev, int *type))                               \
	X(int, dcmi_get_device_logic_id, (int *logic, int card, int dev))                          \
	X(int, dcmi_get_device_phyid_from_logicid, (unsigned int logic, unsigned int *phy))        \
	X(int, dcmi_get_device_chip_info, (int card, int dev, struct dcmi_chip_info *chip))        \
	X(int, dcmi_get_device_pcie_info_v2, (int card, int dev, struct dcmi_pcie_info_all *pci))  \
	X(int, dcmi_get_device_hbm_info, (int card, int dev, struct dcmi_hbm_info *hbm))           \
	X(int, dcmi_get_device_memory_info_v3,                                                     \
	  (int card, int dev, struct dcmi_get_memory_info_stru *mem))                              \
	X(int, dcmi_get_device_health, (int card, int dev, unsigned int *health))                  \
	X(int, dcmi_get_device_errorcode_v2,                                                       \
	  (int card, int dev, int *count, unsigned int *codes, unsigned int len))                  \
	X(int, dcmi_get_device_utilization_rate, (int card, int dev, int type, unsigned int *pct)) \
	X(int, dcmi_get_device_temperature, (int card, int dev, int *celsius))                     \
	X(int, dcmi_get_device_power_info, (int card, int dev, int *deciwatts))

#endif
