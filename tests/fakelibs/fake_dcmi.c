/*
 * fake_dcmi: a stand-in for libdcmi.so implementing the DCMI functions the
 * ascend family binds (src/hal/dcmi_abi.h).
 *
 * Knobs (environment, see fake_common.h; read at dcmi_init unless noted):
 *   FAKE_DCMI_CARDS=n        cards (default 0), ids 0, 2, 4, ...
 *   FAKE_DCMI_CHIPS=n        NPUs per card (default 1); each card also has an
 *                            MCU, the device after its NPUs
 *   FAKE_DCMI_CHIP=s         chip name (default "910B3")
 *   FAKE_DCMI_HBM_MIB=n      HBM per NPU (default 65536; 0: no HBM, DDR
 *                            memory_info_v3 of 16384 MB instead)
 *   FAKE_DCMI_INIT_FAIL=err  dcmi_init returns err (e.g. -8005)
 *   FAKE_DCMI_OLD=1          dcmi_get_card_list answers NOT_SUPPORT: only the older
 *                            dcmi_get_card_num_list works (read at every listing)
 * Read on every call:
 *   FAKE_DCMI_HEALTH=1:3     health code per NPU (logic id)
 *   FAKE_DCMI_ERRCODE=1:0x80e01801   current error code per NPU
 *   FAKE_DCMI_FAIL=fn,...    functions that answer DCMI_ERR_CODE_NOT_SUPPORT
 *
 * NPU k (k-th NPU over all cards) has logic id k, physical id k+100, PCI
 * 0000:<0x80+k>:00.0, AI-core utilisation 30+k %, HBM used (k+1) GiB,
 * temperature 60+k C, power 80.5+k W (805+10k in 0.1 W).
 *
 * -DFAKE_OMIT_REQUIRED leaves out dcmi_get_device_logic_id.
 */
#include <stdio.h>
#include <string.h>

#include "dcmi_abi.h"
#include "fake_common.h"

#define X(ret, name, args) FAKE_EXPORT ret name args;
XP_DCMI_FUNCS(X)
#undef X

static int inited, cards, chips;

/* card id -> card index; -1 if no such card */
static int card_index(int card)
{
	return card >= 0 && card % 2 == 0 && card / 2 < cards ? card / 2 : -1;
}

/* the NPU (logic id) at (card, dev), -1 for the MCU or a bad address */
static int npu_of(int card, int dev)
{
	int ci = card_index(card);
	if (ci < 0 || dev < 0 || dev >= chips)
		return -1;
	return ci * chips + dev;
}

#define CHECK(card, dev, fn)                                                                       \
	do {                                                                                       \
		if (!inited)                                                                       \
			return DCMI_ERR_CODE_INNER_ERR;                                            \
		if (npu_of(card, dev) < 0)                                                         \
			return DCMI_ERR_CODE_DEVICE_NOT_EXIST;                                     \
		if (fk_has("FAKE_DCMI_FAIL", fn))                                                  \
			return DCMI_ERR_CODE_NOT_SUPPORT;                                          \
	} while (0)

int dcmi_init(void)
{
	long fail = fk_int("FAKE_DCMI_INIT_FAIL", 0);
	if (fail)
		return (int)fail;
	cards = (int)fk_int("FAKE_DCMI_CARDS", 0);
	chips = (int)fk_int("FAKE_DCMI_CHIPS", 1);
	inited = 1;
	return DCMI_OK;
}

static int copy(char *out, unsigned len, const char *s)
{
	if (strlen(s) + 1 > len)
		return DCMI_ERR_CODE_INVALID_PARAMETER;
	memcpy(out, s, strlen(s) + 1);
	return DCMI_OK;
}

int dcmi_get_dcmi_version(char *ver, unsigned len)
{
	return copy(ver, len, "24.1.rc2");
}

int dcmi_get_driver_version(char *ver, unsigned len)
{
	return copy(ver, len, "24.1.rc2.b030");
}

static int list(int *num, int *lst, int len)
{
	if (!inited)
		return DCMI_ERR_CODE_INNER_ERR;
	*num = cards;
	for (int i = 0; i < cards && i < len; i++)
		lst[i] = 2 * i;
	return DCMI_OK;
}

int dcmi_get_card_list(int *num, int *lst, int len)
{
	if (fk_int("FAKE_DCMI_OLD", 0))
		return DCMI_ERR_CODE_NOT_SUPPORT;
	return list(num, lst, len);
}

int dcmi_get_card_num_list(int *num, int *lst, int len)
{
	return list(num, lst, len);
}

int dcmi_get_device_num_in_card(int card, int *num)
{
	if (!inited)
		return DCMI_ERR_CODE_INNER_ERR;
	if (card_index(card) < 0)
		return DCMI_ERR_CODE_DEVICE_NOT_EXIST;
	*num = chips + 1; /* the NPUs and the card's MCU */
	return DCMI_OK;
}

int dcmi_get_device_type(int card, int dev, int *type)
{
	if (!inited)
		return DCMI_ERR_CODE_INNER_ERR;
	if (card_index(card) < 0 || dev < 0 || dev > chips)
		return DCMI_ERR_CODE_DEVICE_NOT_EXIST;
	*type = dev < chips ? DCMI_NPU_TYPE : 1 /* MCU_TYPE */;
	return DCMI_OK;
}

#ifndef FAKE_OMIT_REQUIRED
int dcmi_get_device_logic_id(int *logic, int card, int dev)
{
	CHECK(card, dev, "dcmi_get_device_logic_id");
	*logic = npu_of(card, dev);
	return DCMI_OK;
}
#endif

int dcmi_get_device_phyid_from_logicid(unsigned logic, unsigned *phy)
{
	if (!inited)
		return DCMI_ERR_CODE_INNER_ERR;
	if ((int)logic >= cards * chips)
		return DCMI_ERR_CODE_DEVICE_NOT_EXIST;
	*phy = logic + 100;
	return DCMI_OK;
}

int dcmi_get_device_chip_info(int card, int dev, struct dcmi_chip_info *chip)
{
	CHECK(card, dev, "dcmi_get_device_chip_info");
	memset(chip, 0, sizeof(*chip));
	snprintf((char *)chip->chip_type, sizeof(chip->chip_type), "Ascend");
	snprintf((char *)chip->chip_name, sizeof(chip->chip_name), "%s",
		 fk_str("FAKE_DCMI_CHIP", "910B3"));
	snprintf((char *)chip->chip_ver, sizeof(chip->chip_ver), "V1");
	chip->aicore_cnt = 20;
	return DCMI_OK;
}

int dcmi_get_device_pcie_info_v2(int card, int dev, struct dcmi_pcie_info_all *pci)
{
	CHECK(card, dev, "dcmi_get_device_pcie_info_v2");
	memset(pci, 0, sizeof(*pci));
	pci->venderid = 0x19e5;
	pci->deviceid = 0xd802;
	pci->domain = 0;
	pci->bdf_busid = (unsigned)(0x80 + npu_of(card, dev));
	return DCMI_OK;
}

int dcmi_get_device_hbm_info(int card, int dev, struct dcmi_hbm_info *hbm)
{
	CHECK(card, dev, "dcmi_get_device_hbm_info");
	long mib = fk_int("FAKE_DCMI_HBM_MIB", 65536);
	if (mib <= 0)
		return DCMI_ERR_CODE_NOT_SUPPORT;
	memset(hbm, 0, sizeof(*hbm));
	hbm->memory_size = (unsigned long long)mib;
	hbm->memory_usage = (unsigned long long)(npu_of(card, dev) + 1) * 1024;
	hbm->temp = 50;
	return DCMI_OK;
}

int dcmi_get_device_memory_info_v3(int card, int dev, struct dcmi_get_memory_info_stru *mem)
{
	CHECK(card, dev, "dcmi_get_device_memory_info_v3");
	memset(mem, 0, sizeof(*mem));
	mem->memory_size = 16384;
	mem->memory_available = 16384 - 512;
	return DCMI_OK;
}

int dcmi_get_device_health(int card, int dev, unsigned *health)
{
	CHECK(card, dev, "dcmi_get_device_health");
	*health = (unsigned)fk_map("FAKE_DCMI_HEALTH", (unsigned)npu_of(card, dev), 0);
	return DCMI_OK;
}

int dcmi_get_device_errorcode_v2(int card, int dev, int *cnt, unsigned *codes, unsigned len)
{
	CHECK(card, dev, "dcmi_get_device_errorcode_v2");
	long code = fk_map("FAKE_DCMI_ERRCODE", (unsigned)npu_of(card, dev), 0);
	*cnt = 0;
	if (code && len > 0) {
		codes[0] = (unsigned)code;
		*cnt = 1;
	}
	return DCMI_OK;
}

int dcmi_get_device_utilization_rate(int card, int dev, int type, unsigned *pct)
{
	CHECK(card, dev, "dcmi_get_device_utilization_rate");
	if (type != DCMI_UTIL_AICORE)
		return DCMI_ERR_CODE_NOT_SUPPORT;
	*pct = (unsigned)(30 + npu_of(card, dev));
	return DCMI_OK;
}

int dcmi_get_device_temperature(int card, int dev, int *celsius)
{
	CHECK(card, dev, "dcmi_get_device_temperature");
	*celsius = 60 + npu_of(card, dev);
	return DCMI_OK;
}

int dcmi_get_device_power_info(int card, int dev, int *deciwatts)
{
	CHECK(card, dev, "dcmi_get_device_power_info");
	*deciwatts = 805 + 10 * npu_of(card, dev);
	return DCMI_OK;
}
