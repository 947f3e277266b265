/*
 * cndev_abi: the part of Cambricon's CNDev C ABI (libcndev.so, from the MLU
 * driver) the cambricon family calls, declared here because no Neuware SDK
 * is installed where xpool builds. Written from cndev.h as published with
 * Cambricon's device plugin.
 *
 * CNDev structs carry a version field the caller sets (CNDEV_VERSION_5
 * here); several have grown across releases, so the library writes into
 * padded copies. Older libraries take the device index where newer ones
 * take a handle from cndevGetDeviceHandleByIndex (the handle is the index
 * on every release seen); both are an int.
 *
 * Also included by tests/fakelibs/fake_cndev.c.
 */
#ifndef XP_CNDEV_ABI_H
#define XP_CNDEV_ABI_H

#include <stdint.h>

typedef int cndevRet_t;
typedef int cndevDevice_t;
enum {
	CNDEV_SUCCESS = 0,
	CNDEV_ERROR_NO_DRIVER = 1,
	CNDEV_ERROR_LOW_DRIVER_VERSION = 2,
	CNDEV_ERROR_UNSUPPORTED_API_VERSION = 3,
	CNDEV_ERROR_UNINITIALIZED = 4,
	CNDEV_ERROR_INVALID_ARGUMENT = 5,
	CNDEV_ERROR_INVALID_DEVICE_ID = 6,
	CNDEV_ERROR_UNKNOWN = 7,
	CNDEV_ERROR_NOT_SUPPORTED = 10,
	CNDEV_ERROR_NO_DEVICES = 12,
};
#define CNDEV_VERSION_5			     5
#define CNDEV_UUID_SIZE			     37
#define CNDEV_HEALTH_STATE_DEVICE_IN_PROBLEM 0
#define CNDEV_HEALTH_STATE_DEVICE_GOOD	     1
#define CNDEV_HEALTH_STATE_DRIVER_RUNNING    4

typedef struct {
	int version;
	unsigned number;
} cndevCardInfo_t;

typedef struct {
	int version;
	uint8_t uuid[CNDEV_UUID_SIZE];
	uint64_t ncsUUID64;
} cndevUUID_t;

typedef struct {
	int version;
	int64_t physicalMemoryTotal; /* MB */
	int64_t physicalMemoryUsed;  /* MB */
	int64_t virtualMemoryTotal;
	int64_t virtualMemoryUsed;
	int64_t channelNumber;
	int64_t channelMemoryUsed[20];
	uint64_t globalMemory;
} cndevMemoryInfo_t;

typedef struct {
	int version;
	int averageCoreUtilization;
	int coreUtilization[80];
} cndevUtilizationInfo_t;

typedef struct {
	int version;
	int health; /* 1 good, 0 in problem */
	int deviceState;
	int driverState;
} cndevCardHealthState_t;

typedef struct {
	int version;
	int id; /* cndevNameEnum_t */
} cndevCardName_t;

typedef struct {
	int version;
	int board; /* Celsius */
	int cluster[20];
} cndevTemperatureInfo_t;

typedef struct {
	int version;
	unsigned libMajorVersion, libMinorVersion, libBuildVersion;
} cndevLibVersionInfo_t;

#define XP_CNDEV_FUNCS(X)                                                                          \
	X(cndevRet_t, cndevInit, (int reserved))                                                   \
	X(cndevRet_t, cndevRelease, (void))                                                        \
	X(const char *, cndevGetErrorString, (cndevRet_t r))                                       \
	X(cndevRet_t, cndevGetLibVersion, (cndevLibVersionInfo_t * v))                             \
	X(cndevRet_t, cndevGetDeviceCount, (cndevCardInfo_t * info))                               \
	X(cndevRet_t, cndevGetDeviceHandleByIndex, (int index, cndevDevice_t *dev))                \
	X(cndevRet_t, cndevGetCardName, (cndevCardName_t * name, cndevDevice_t dev))               \
	X(const char *, cndevGetCardNameStringByDevId, (cndevDevice_t dev))                        \
	X(cndevRet_t, cndevGetUUID, (cndevUUID_t * uuid, cndevDevice_t dev))                       \
	X(cndevRet_t, cndevGetMemoryUsage, (cndevMemoryInfo_t * mem, cndevDevice_t dev))           \
	X(cndevRet_t, cndevGetDeviceUtilizationInfo,                                               \
	  (cndevUtilizationInfo_t * util, cndevDevice_t dev))                                      \
	X(cndevRet_t, cndevGetCardHealthState, (cndevCardHealthState_t * h, cndevDevice_t dev))    \
	X(cndevRet_t, cndevGetTemperatureInfo, (cndevTemperatureInfo_t * t, cndevDevice_t dev))

#endif
