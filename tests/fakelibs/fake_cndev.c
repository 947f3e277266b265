/*
 * fake_cndev: a stand-in for libcndev.so implementing the CNDev functions
 * the cambricon family binds (src/hal/cndev_abi.h).
 *
 * Knobs (environment, see fake_common.h; read at cndevInit unless noted):
 *   FAKE_CNDEV_COUNT=n        MLUs (default 0)
 *   FAKE_CNDEV_NAME=s         cndevGetCardNameStringByDevId (default "MLU370-X8")
 *   FAKE_CNDEV_MEM_MIB=n      physical memory per MLU (default 49152)
 *   FAKE_CNDEV_INIT_FAIL=r    cndevInit returns r (e.g. 1: no driver)
 *   FAKE_CNDEV_MIN_VERSION=v  struct versions below v answer UNSUPPORTED_API_VERSION
 * Read on every call:
 *   FAKE_CNDEV_SICK=1         MLUs whose health flag is 0 (device in problem)
 *   FAKE_CNDEV_DRIVER=1:6     driver state per MLU (default 4, running)
 *   FAKE_CNDEV_FAIL=fn,...    functions that answer CNDEV_ERROR_NOT_SUPPORTED
 *
 * MLU i: UUID "MLU-" + "fake0000-0000-0000-0000-00000000000i", core
 * utilisation 40+i %, used memory (i+1)*512 MB, board temperature 35+i C.
 * Handles are i + 100, so a family that passed an index where a handle
 * belongs would read the wrong device.
 *
 * -DFAKE_OMIT_REQUIRED leaves out cndevGetCardHealthState.
 */
#include <stdio.h>
#include <string.h>

#include "cndev_abi.h"
#include "fake_common.h"

#define X(ret, name, args) FAKE_EXPORT ret name args;
XP_CNDEV_FUNCS(X)
#undef X

#define H0 100

static int inited;
static unsigned count;

#define CHECK(ver, dev, fn)                                                                        \
	do {                                                                                       \
		if (!inited)                                                                       \
			return CNDEV_ERROR_UNINITIALIZED;                                          \
		if ((ver) < fk_int("FAKE_CNDEV_MIN_VERSION", 1))                                   \
			return CNDEV_ERROR_UNSUPPORTED_API_VERSION;                                \
		if ((dev) < H0 || (unsigned)((dev)-H0) >= count)                                   \
			return CNDEV_ERROR_INVALID_DEVICE_ID;                                      \
		if (fk_has("FAKE_CNDEV_FAIL", fn))                                                 \
			return CNDEV_ERROR_NOT_SUPPORTED;                                          \
	} while (0)

cndevRet_t cndevInit(int reserved)
{
	long fail = fk_int("FAKE_CNDEV_INIT_FAIL", 0);
	if (fail)
		return (cndevRet_t)fail;
	count = (unsigned)fk_int("FAKE_CNDEV_COUNT", 0);
	inited = 1;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevRelease(void)
{
	inited = 0;
	return CNDEV_SUCCESS;
}

const char *cndevGetErrorString(cndevRet_t r)
{
	switch (r) {
	case CNDEV_SUCCESS:
		return "CNDEV_SUCCESS";
	case CNDEV_ERROR_NO_DRIVER:
		return "No Driver";
	case CNDEV_ERROR_UNSUPPORTED_API_VERSION:
		return "API Version is not support";
	case CNDEV_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	default:
		return "Unknown Error";
	}
}

cndevRet_t cndevGetLibVersion(cndevLibVersionInfo_t *v)
{
	v->libMajorVersion = 5;
	v->libMinorVersion = 10;
	v->libBuildVersion = 22;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetDeviceCount(cndevCardInfo_t *info)
{
	if (!inited)
		return CNDEV_ERROR_UNINITIALIZED;
	if (info->version < fk_int("FAKE_CNDEV_MIN_VERSION", 1))
		return CNDEV_ERROR_UNSUPPORTED_API_VERSION;
	info->number = count;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetDeviceHandleByIndex(int index, cndevDevice_t *dev)
{
	if (!inited)
		return CNDEV_ERROR_UNINITIALIZED;
	if (index < 0 || (unsigned)index >= count)
		return CNDEV_ERROR_INVALID_DEVICE_ID;
	*dev = H0 + index;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetCardName(cndevCardName_t *name, cndevDevice_t dev)
{
	CHECK(name->version, dev, "cndevGetCardName");
	name->id = 23; /* MLU370 */
	return CNDEV_SUCCESS;
}

const char *cndevGetCardNameStringByDevId(cndevDevice_t dev)
{
	if (!inited || dev < H0 || (unsigned)(dev - H0) >= count)
		return "Unknown";
	if (fk_has("FAKE_CNDEV_FAIL", "cndevGetCardNameStringByDevId"))
		return "";
	return fk_str("FAKE_CNDEV_NAME", "MLU370-X8");
}

cndevRet_t cndevGetUUID(cndevUUID_t *u, cndevDevice_t dev)
{
	CHECK(u->version, dev, "cndevGetUUID");
	snprintf((char *)u->uuid, sizeof(u->uuid), "fake0000-0000-0000-0000-%012d", dev - H0);
	u->ncsUUID64 = 0x1234;
	return CNDEV_SUCCESS;
}

#ifndef FAKE_OMIT_REQUIRED
cndevRet_t cndevGetCardHealthState(cndevCardHealthState_t *h, cndevDevice_t dev)
{
	CHECK(h->version, dev, "cndevGetCardHealthState");
	int sick = fk_lists("FAKE_CNDEV_SICK", (unsigned)(dev - H0));
	h->health = sick ? 0 : 1;
	h->deviceState =
		sick ? CNDEV_HEALTH_STATE_DEVICE_IN_PROBLEM : CNDEV_HEALTH_STATE_DEVICE_GOOD;
	h->driverState = (int)fk_map("FAKE_CNDEV_DRIVER", (unsigned)(dev - H0),
				     CNDEV_HEALTH_STATE_DRIVER_RUNNING);
	return CNDEV_SUCCESS;
}
#endif

cndevRet_t cndevGetMemoryUsage(cndevMemoryInfo_t *m, cndevDevice_t dev)
{
	CHECK(m->version, dev, "cndevGetMemoryUsage");
	m->physicalMemoryTotal = fk_int("FAKE_CNDEV_MEM_MIB", 49152);
	m->physicalMemoryUsed = (int64_t)(dev - H0 + 1) * 512;
	m->virtualMemoryTotal = m->physicalMemoryTotal * 2;
	m->virtualMemoryUsed = 0;
	m->channelNumber = 4;
	m->globalMemory = 0;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetDeviceUtilizationInfo(cndevUtilizationInfo_t *u, cndevDevice_t dev)
{
	CHECK(u->version, dev, "cndevGetDeviceUtilizationInfo");
	u->averageCoreUtilization = 40 + dev - H0;
	for (int i = 0; i < 80; i++)
		u->coreUtilization[i] = u->averageCoreUtilization;
	return CNDEV_SUCCESS;
}

cndevRet_t cndevGetTemperatureInfo(cndevTemperatureInfo_t *t, cndevDevice_t dev)
{
	CHECK(t->version, dev, "cndevGetTemperatureInfo");
	t->board = 35 + dev - H0;
	return CNDEV_SUCCESS;
}
