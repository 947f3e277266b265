/*
 * fake_nvml: a stand-in for libnvidia-ml.so.1 implementing the NVML
 * functions the nvidia family binds (src/hal/nvml_abi.h), so the family is
 * tested through its real dlopen/dlsym path.
 *
 * Knobs (environment, see fake_common.h; read at nvmlInit_v2 unless noted):
 *   FAKE_NVML_COUNT=n          GPUs (default 0)
 *   FAKE_NVML_NAME=s           product name (default "NVIDIA A100-SXM4-80GB")
 *   FAKE_NVML_MEM_MIB=n        memory per GPU (default 81920)
 *   FAKE_NVML_CC=M.m           compute capability (default 8.0)
 *   FAKE_NVML_VERSION=s        NVML version (default "12.535.104.05")
 *   FAKE_NVML_INIT_FAIL=code   nvmlInit_v2 returns code (e.g. 9: driver not loaded)
 *   FAKE_NVML_ISLANDS=0,0,1,1  NVLink island per GPU (-1: no NVLink); GPUs of an
 *                              island are linked all-to-all directly ...
 *   FAKE_NVML_NVSWITCH=1       ... or each through six NVSwitches instead
 *   FAKE_NVML_NUMA=0,1         nvmlDeviceGetNumaNodeId per GPU (absent: NOT_SUPPORTED)
 *   FAKE_NVML_MIG=2            GPUs in MIG mode at the start; without FAKE_NVML_STATE
 *                              each holds two 3g instances (starts 0 and 4, MIG
 *                              devices 0 and 2 of 7; 1 empty), with it none
 *   FAKE_NVML_STATE=path       MIG state (modes, instances) in this file, shared by
 *                              every process that loads the fake (flock), so an
 *                              agent restart sees what was created; created the
 *                              first time from FAKE_NVML_MIG
 *   FAKE_NVML_NOHANDLE=1       GPUs whose handle cannot be taken (NO_PERMISSION)
 * Read on every call:
 *   FAKE_NVML_ECC=1:3          uncorrectable volatile ECC errors per GPU
 *   FAKE_NVML_REMAP_PENDING=2  GPUs with a row remapping pending
 *   FAKE_NVML_XID=1:79         XIDs delivered once each by nvmlEventSetWait_v2
 *                              (a new value of the variable delivers again)
 *   FAKE_NVML_LOST=3           GPUs on which every query answers GPU_IS_LOST
 *   FAKE_NVML_FAIL=fn,...      functions that answer NVML_ERROR_UNKNOWN
 *   FAKE_NVML_BUSY=0,2         GPUs with processes: a MIG mode change is IN_USE
 *   FAKE_NVML_MIG_BUSY=MIG-..  MIG devices (UUIDs) with processes: destroying their
 *                              compute instance, or changing the mode, is IN_USE
 *   FAKE_NVML_MIG_DEFER=1      GPUs on which a MIG mode change stays pending (reset)
 *
 * MIG follows the real rules on the GPU's model (FAKE_NVML_NAME looked up in
 * the tables of src/core/model/mig.c; no table: MIG NOT_SUPPORTED): profile
 * *indices* as nvml.h numbers them, profile ids, placements and counts from
 * the table, a GPU instance only at one of its profile's starts and on
 * memory slices no other instance holds (else INSUFFICIENT_RESOURCES),
 * compute instances inside it, MIG devices numbered by the lowest free slot
 * of 7, UUIDs that never repeat, IN_USE on destroying a GPU instance that
 * has compute instances or one whose MIG device has processes. The MIG half
 * is at the end of this file.
 *
 * GPU i: UUID GPU-00000000-fake-4000-8000-00000000000i, PCI bus
 * 00000000:<0x10*(i+1)>:00.0, used memory (i+1) GiB, utilisation 10i+5 %,
 * power 100+i W (reported as (100+i)*1000+500 mW), temperature 40+i C,
 * default power limit 400 W, device node minor i.
 *
 * Built twice: -DFAKE_OMIT_REQUIRED leaves out nvmlDeviceGetCount_v2, for
 * the test that a library missing a required symbol is refused.
 */
#include <stdio.h>
#include <string.h>

#include "fake_nvml_int.h"

struct nvmlDevice_st fk_gpus[MAXG], fk_migs[MAXG][MIGSLOTS];
unsigned fk_count;
int fk_inited;
static char xid_seen[256];
static unsigned xid_next;

nvmlReturn_t nvmlInit_v2(void)
{
	long fail = fk_int("FAKE_NVML_INIT_FAIL", 0);
	if (fail)
		return (nvmlReturn_t)fail;
	fk_count = (unsigned)fk_int("FAKE_NVML_COUNT", 0);
	if (fk_count > MAXG)
		fk_count = MAXG;
	for (unsigned i = 0; i < fk_count; i++) {
		fk_gpus[i].idx = i;
		fk_gpus[i].mig = -1;
		fk_gpus[i].parent = i;
		for (int k = 0; k < MIGSLOTS; k++) {
			fk_migs[i][k].idx = i * MIGSLOTS + (unsigned)k;
			fk_migs[i][k].mig = k;
			fk_migs[i][k].parent = i;
		}
	}
	xid_seen[0] = '\0';
	xid_next = 0;
	fk_inited = 1;
	fk_mig_init();
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
	if (!fk_inited)
		return NVML_ERROR_UNINITIALIZED;
	fk_inited = 0;
	return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS:
		return "Success";
	case NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT:
		return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case NVML_ERROR_NO_PERMISSION:
		return "Insufficient Permissions";
	case NVML_ERROR_NOT_FOUND:
		return "Not Found";
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT:
		return "Timeout";
	case NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return "Insufficient Size";
	case NVML_ERROR_IN_USE:
		return "In use by another client";
	case NVML_ERROR_INSUFFICIENT_RESOURCES:
		return "Insufficient Resources";
	case NVML_ERROR_RESET_REQUIRED:
		return "GPU requires reset";
	default:
		return "Unknown Error";
	}
}

static nvmlReturn_t copy(char *out, unsigned len, const char *s)
{
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(s) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(out, s, strlen(s) + 1);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned len)
{
	if (!fk_inited)
		return NVML_ERROR_UNINITIALIZED;
	return copy(v, len, fk_str("FAKE_NVML_VERSION", "12.535.104.05"));
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
	if (!fk_inited)
		return NVML_ERROR_UNINITIALIZED;
	return copy(v, len, "535.104.05");
}

#ifndef FAKE_OMIT_REQUIRED
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n)
{
	if (!fk_inited)
		return NVML_ERROR_UNINITIALIZED;
	*n = fk_count;
	return NVML_SUCCESS;
}
#endif

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d)
{
	if (!fk_inited)
		return NVML_ERROR_UNINITIALIZED;
	if (i >= fk_count || !d)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (fk_lists("FAKE_NVML_NOHANDLE", i))
		return NVML_ERROR_NO_PERMISSION;
	*d = &fk_gpus[i];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned len)
{
	char buf[160];
	CHECK(d, "nvmlDeviceGetName");
	const char *base = fk_str("FAKE_NVML_NAME", "NVIDIA A100-SXM4-80GB");
	if (d->mig < 0)
		return copy(name, len, base);
	nvmlReturn_t r = fk_mig_dev(d, buf, sizeof(buf), NULL, 0, NULL);
	return r != NVML_SUCCESS ? r : copy(name, len, buf);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned len)
{
	char buf[96];
	CHECK(d, "nvmlDeviceGetUUID");
	if (d->mig >= 0) {
		nvmlReturn_t r = fk_mig_dev(d, NULL, 0, buf, sizeof(buf), NULL);
		return r != NVML_SUCCESS ? r : copy(uuid, len, buf);
	}
	snprintf(buf, sizeof(buf), "GPU-00000000-fake-4000-8000-%012u", d->idx);
	return copy(uuid, len, buf);
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	CHECK(d, "nvmlDeviceGetMemoryInfo");
	unsigned long long mib = (unsigned long long)fk_int("FAKE_NVML_MEM_MIB", 81920);
	if (d->mig >= 0) {
		nvmlReturn_t r = fk_mig_dev(d, NULL, 0, NULL, 0, &mib);
		if (r != NVML_SUCCESS)
			return r;
	}
	m->total = mib << 20;
	m->used = d->mig < 0 ? ((unsigned long long)d->idx + 1) << 30 : 0;
	m->free = m->total > m->used ? m->total - m->used : 0;
	return NVML_SUCCESS;
}

static void bus_of(unsigned i, char *out, size_t len, int legacy)
{
	snprintf(out, len, legacy ? "0000:%02X:00.0" : "00000000:%02X:00.0", 0x10 * (i + 1));
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p)
{
	CHECK(d, "nvmlDeviceGetPciInfo_v3");
	memset(p, 0, sizeof(*p));
	p->bus = 0x10 * (d->idx + 1);
	p->pciDeviceId = 0x20B510DE;
	bus_of(d->idx, p->busId, sizeof(p->busId), 0);
	bus_of(d->idx, p->busIdLegacy, sizeof(p->busIdLegacy), 1);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor)
{
	CHECK(d, "nvmlDeviceGetCudaComputeCapability");
	const char *cc = fk_str("FAKE_NVML_CC", "8.0");
	*major = atoi(cc);
	*minor = strchr(cc, '.') ? atoi(strchr(cc, '.') + 1) : 0;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t d, unsigned *node)
{
	CHECK(d, "nvmlDeviceGetNumaNodeId");
	long v = fk_item("FAKE_NVML_NUMA", d->idx, -1);
	if (v < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*node = (unsigned)v;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned *minor)
{
	CHECK(d, "nvmlDeviceGetMinorNumber");
	*minor = d->idx;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned *mw)
{
	CHECK(d, "nvmlDeviceGetPowerManagementDefaultLimit");
	*mw = 400000;
	return NVML_SUCCESS;
}

/* The peers of GPU i (same island, in index order). */
static unsigned peers(unsigned i, unsigned *out)
{
	long isl = fk_item("FAKE_NVML_ISLANDS", i, -1);
	unsigned n = 0;
	if (isl < 0)
		return 0;
	for (unsigned j = 0; j < fk_count; j++)
		if (j != i && fk_item("FAKE_NVML_ISLANDS", j, -1) == isl)
			out[n++] = j;
	return n;
}

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, unsigned *active)
{
	unsigned p[MAXG];
	CHECK(d, "nvmlDeviceGetNvLinkState");
	if (link >= NVML_NVLINK_MAX_LINKS)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (fk_item("FAKE_NVML_ISLANDS", d->idx, -1) < 0)
		return NVML_ERROR_NOT_SUPPORTED;
	unsigned n = fk_int("FAKE_NVML_NVSWITCH", 0) ? 6 : peers(d->idx, p);
	*active = link < n ? NVML_FEATURE_ENABLED : 0;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t d, unsigned link, nvmlPciInfo_t *pci)
{
	unsigned p[MAXG];
	CHECK(d, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
	if (link >= NVML_NVLINK_MAX_LINKS)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(pci, 0, sizeof(*pci));
	if (fk_int("FAKE_NVML_NVSWITCH", 0)) {
		/* one switch fabric per island: buses 0xc0.. for island 0, 0xd0.. for 1 */
		long isl = fk_item("FAKE_NVML_ISLANDS", d->idx, -1);
		if (isl < 0 || link >= 6)
			return NVML_ERROR_INVALID_ARGUMENT;
		snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0",
			 (unsigned)(0xc0 + 0x10 * isl + link));
		return NVML_SUCCESS;
	}
	unsigned n = peers(d->idx, p);
	if (link >= n)
		return NVML_ERROR_INVALID_ARGUMENT;
	bus_of(p[link], pci->busId, sizeof(pci->busId), 0);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	unsigned cur = 0, pend = 0;
	CHECK(d, "nvmlDeviceGetUtilizationRates");
	if (d->mig < 0 && fk_mig_mode(d->idx, &cur, &pend) == 0 && cur == NVML_DEVICE_MIG_ENABLE)
		return NVML_ERROR_NOT_SUPPORTED; /* as on a real MIG-mode GPU */
	u->gpu = 10 * d->idx + 5;
	u->memory = 3;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw)
{
	CHECK(d, "nvmlDeviceGetPowerUsage");
	*mw = (100 + d->idx) * 1000 + 500;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned *t)
{
	CHECK(d, "nvmlDeviceGetTemperature");
	if (sensor != NVML_TEMPERATURE_GPU)
		return NVML_ERROR_INVALID_ARGUMENT;
	*t = 40 + d->idx;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter,
					 unsigned long long *n)
{
	CHECK(d, "nvmlDeviceGetTotalEccErrors");
	*n = type == NVML_MEMORY_ERROR_TYPE_UNCORRECTED && counter == NVML_VOLATILE_ECC
		     ? (unsigned long long)fk_map("FAKE_NVML_ECC", d->idx, 0)
		     : 0;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned *corr, unsigned *unc,
				       unsigned *pend, unsigned *failed)
{
	CHECK(d, "nvmlDeviceGetRemappedRows");
	*corr = *unc = *failed = 0;
	*pend = (unsigned)fk_lists("FAKE_NVML_REMAP_PENDING", d->idx);
	return NVML_SUCCESS;
}

static int evset_token;

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	if (!fk_inited)
		return NVML_ERROR_UNINITIALIZED;
	*set = (nvmlEventSet_t)&evset_token;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set)
{
	CHECK(d, "nvmlDeviceRegisterEvents");
	return set == (nvmlEventSet_t)&evset_token ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeout_ms)
{
	const char *x = getenv("FAKE_NVML_XID");
	if (!fk_inited)
		return NVML_ERROR_UNINITIALIZED;
	if (set != (nvmlEventSet_t)&evset_token || !data)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!x)
		x = "";
	if (strcmp(x, xid_seen) != 0) { /* a new setting: deliver its events again */
		snprintf(xid_seen, sizeof(xid_seen), "%s", x);
		xid_next = 0;
	}
	/* the xid_next-th "dev:xid" pair */
	const char *s = x;
	for (unsigned k = 0; k < xid_next && s; k++) {
		s = strchr(s, ',');
		if (s)
			s++;
	}
	if (!s || !*s)
		return NVML_ERROR_TIMEOUT;
	char *end;
	unsigned long dev = strtoul(s, &end, 0);
	unsigned long long xid = *end == ':' ? strtoull(end + 1, NULL, 0) : 0;
	xid_next++;
	memset(data, 0, sizeof(*data));
	data->device = dev < fk_count ? &fk_gpus[dev] : NULL;
	data->eventType = nvmlEventTypeXidCriticalError;
	data->eventData = xid;
	data->gpuInstanceId = data->computeInstanceId = 0xFFFFFFFFu;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	return set == (nvmlEventSet_t)&evset_token ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

