/*
 * nvml_abi: the part of NVIDIA's NVML C ABI the nvidia family calls,
 * declared here because no CUDA SDK is installed where xpool builds.
 *
 * Written from NVML's published API reference (docs.nvidia.com/deploy/
 * nvml-api): return codes, handle types and struct layouts as the R410+
 * libnvidia-ml.so.1 exports them. The versioned entry points (_v2, _v3) are
 * the ones nvml.h maps the plain names to; binding them by their real names
 * keeps old layouts out. The size checks below pin layouts that the library
 * writes into our memory.
 *
 * Also included by tests/fakelibs/fake_nvml.c, which implements these
 * functions for the tests.
 */
#ifndef XP_NVML_ABI_H
#define XP_NVML_ABI_H

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_TIMEOUT = 10,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_RESET_REQUIRED = 16,
	NVML_ERROR_IN_USE = 19,
	NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
	NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
	NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE	       96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE	       96
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE   80
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE     32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE  16
#define NVML_NVLINK_MAX_LINKS		       18
#define NVML_TEMPERATURE_GPU		       0
#define NVML_FEATURE_ENABLED		       1
#define NVML_DEVICE_MIG_DISABLE		       0
#define NVML_DEVICE_MIG_ENABLE		       1
#define NVML_MEMORY_ERROR_TYPE_UNCORRECTED     1
#define NVML_VOLATILE_ECC		       0
#define nvmlEventTypeXidCriticalError	       0x0000000000000008ULL

typedef struct {
	unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

typedef struct {
	char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
	unsigned int domain;
	unsigned int bus;
	unsigned int device;
	unsigned int pciDeviceId; /* device id << 16 | vendor id */
	unsigned int pciSubSystemId;
	char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:3B:00.0" */
} nvmlPciInfo_t;

typedef struct {
	unsigned int gpu;    /* percent of time a kernel ran */
	unsigned int memory; /* percent of time memory was read or written */
} nvmlUtilization_t;

typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType;
	unsigned long long eventData; /* the XID for nvmlEventTypeXidCriticalError */
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlEventData_t; /* the nvmlEventSetWait_v2 layout */

/* MIG. GPU instance profile *indices* (what the profile-info calls take;
 * the info they return carries the profile *id* every other call takes):
 * 1, 2, 3, 4, 7, 8 and 6 slices, then 1 slice with the media engines
 * (REV1), 2 slices REV1, 1 slice with double memory (REV2). Newer drivers
 * add more (graphics, no/all media engines); a loop over indices stops at
 * NVML_GPU_INSTANCE_PROFILE_COUNT_MAX and skips NOT_SUPPORTED ones. */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE      0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE      1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE      2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE      3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE      4
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 7
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 9
#define NVML_GPU_INSTANCE_PROFILE_COUNT_MAX    17
/* compute instance profile indices: 1, 2, 3, 4, 7 slices (then 8, 6, 1 REV1) */
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT	    8
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0

typedef struct {
	unsigned int start, size; /* memory slices [start, start + size) */
} nvmlGpuInstancePlacement_t;

typedef struct {
	unsigned int id; /* the profile id */
	unsigned int isP2pSupported;
	unsigned int sliceCount; /* compute slices */
	unsigned int instanceCount;
	unsigned int multiprocessorCount;
	unsigned int copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount;
	unsigned long long memorySizeMB; /* MiB */
} nvmlGpuInstanceProfileInfo_t;

typedef struct {
	unsigned int version; /* nvmlGpuInstanceProfileInfo_v2 */
	unsigned int id;
	unsigned int isP2pSupported;
	unsigned int sliceCount;
	unsigned int instanceCount;
	unsigned int multiprocessorCount;
	unsigned int copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount;
	unsigned long long memorySizeMB;
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE]; /* "MIG 3g.40gb" */
} nvmlGpuInstanceProfileInfo_v2_t;
#define nvmlGpuInstanceProfileInfo_v2 (sizeof(nvmlGpuInstanceProfileInfo_v2_t) | (2u << 24))

typedef struct {
	nvmlDevice_t device;
	unsigned int id; /* GPU instance id */
	unsigned int profileId;
	nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
	unsigned int id;
	unsigned int sliceCount;
	unsigned int instanceCount;
	unsigned int multiprocessorCount;
	unsigned int sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount;
	unsigned int sharedJpegCount, sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct {
	unsigned int start, size;
} nvmlComputeInstancePlacement_t;

typedef struct {
	nvmlDevice_t device;
	nvmlGpuInstance_t gpuInstance;
	unsigned int id; /* compute instance id, within its GPU instance */
	unsigned int profileId;
	nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t; /* the nvmlComputeInstanceGetInfo_v2 layout */

_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48, "nvmlGpuInstanceProfileInfo_t layout");
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152,
	       "nvmlGpuInstanceProfileInfo_v2_t layout");
_Static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24, "nvmlGpuInstanceInfo_t layout");
_Static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36,
	       "nvmlComputeInstanceProfileInfo_t layout");
_Static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32, "nvmlComputeInstanceInfo_t layout");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t layout");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t layout");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t layout");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t layout");

/* Prototypes, as function pointer types of the binding table (nvidia.c). */
#define XP_NVML_FUNCS(X)                                                                           \
	X(nvmlReturn_t, nvmlInit_v2, (void))                                                       \
	X(nvmlReturn_t, nvmlShutdown, (void))                                                      \
	X(const char *, nvmlErrorString, (nvmlReturn_t r))                                         \
	X(nvmlReturn_t, nvmlSystemGetNVMLVersion, (char *version, unsigned int len))               \
	X(nvmlReturn_t, nvmlSystemGetDriverVersion, (char *version, unsigned int len))             \
	X(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *count))                              \
	X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *dev))    \
	X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t dev, char *name, unsigned int len))       \
	X(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t dev, char *uuid, unsigned int len))       \
	X(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t dev, nvmlMemory_t * mem))           \
	X(nvmlReturn_t, nvmlDeviceGetPciInfo_v3, (nvmlDevice_t dev, nvmlPciInfo_t * pci))          \
	X(nvmlReturn_t, nvmlDeviceGetCudaComputeCapability,                                        \
	  (nvmlDevice_t dev, int *major, int *minor))                                              \
	X(nvmlReturn_t, nvmlDeviceGetNumaNodeId, (nvmlDevice_t dev, unsigned int *node))           \
	X(nvmlReturn_t, nvmlDeviceGetMinorNumber, (nvmlDevice_t dev, unsigned int *minor))         \
	X(nvmlReturn_t, nvmlDeviceGetPowerManagementDefaultLimit,                                  \
	  (nvmlDevice_t dev, unsigned int *mw))                                                    \
	X(nvmlReturn_t, nvmlDeviceGetNvLinkState,                                                  \
	  (nvmlDevice_t dev, unsigned int link, unsigned int *active))                             \
	X(nvmlReturn_t, nvmlDeviceGetNvLinkRemotePciInfo_v2,                                       \
	  (nvmlDevice_t dev, unsigned int link, nvmlPciInfo_t *pci))                               \
	X(nvmlReturn_t, nvmlDeviceGetMigMode,                                                      \
	  (nvmlDevice_t dev, unsigned int *current, unsigned int *pending))                        \
	X(nvmlReturn_t, nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t dev, unsigned int *count))   \
	X(nvmlReturn_t, nvmlDeviceGetMigDeviceHandleByIndex,                                       \
	  (nvmlDevice_t dev, unsigned int index, nvmlDevice_t *mig))                               \
	X(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t dev, nvmlUtilization_t * u))  \
	X(nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t dev, unsigned int *mw))             \
	X(nvmlReturn_t, nvmlDeviceGetTemperature,                                                  \
	  (nvmlDevice_t dev, int sensor, unsigned int *temp))                                      \
	X(nvmlReturn_t, nvmlDeviceGetTotalEccErrors,                                               \
	  (nvmlDevice_t dev, int type, int counter, unsigned long long *count))                    \
	X(nvmlReturn_t, nvmlDeviceGetRemappedRows,                                                 \
	  (nvmlDevice_t dev, unsigned int *corr, unsigned int *unc, unsigned int *pending,         \
	   unsigned int *failed))                                                                  \
	X(nvmlReturn_t, nvmlEventSetCreate, (nvmlEventSet_t * set))                                \
	X(nvmlReturn_t, nvmlDeviceRegisterEvents,                                                  \
	  (nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set))                        \
	X(nvmlReturn_t, nvmlEventSetWait_v2,                                                       \
	  (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeout_ms))                   \
	X(nvmlReturn_t, nvmlEventSetFree, (nvmlEventSet_t set))                                    \
	XP_NVML_MIG_FUNCS(X)

/* MIG instances (nvidia_mig.c); all optional. */
#define XP_NVML_MIG_FUNCS(X)                                                                       \
	X(nvmlReturn_t, nvmlDeviceGetGpuInstanceProfileInfo,                                       \
	  (nvmlDevice_t dev, unsigned int index, nvmlGpuInstanceProfileInfo_t *info))              \
	X(nvmlReturn_t, nvmlDeviceGetGpuInstanceProfileInfoV,                                      \
	  (nvmlDevice_t dev, unsigned int index, nvmlGpuInstanceProfileInfo_v2_t *info))           \
	X(nvmlReturn_t, nvmlDeviceGetGpuInstancePossiblePlacements_v2,                             \
	  (nvmlDevice_t dev, unsigned int profile_id, nvmlGpuInstancePlacement_t *out,             \
	   unsigned int *count))                                                                   \
	X(nvmlReturn_t, nvmlDeviceGetGpuInstanceRemainingCapacity,                                 \
	  (nvmlDevice_t dev, unsigned int profile_id, unsigned int *count))                        \
	X(nvmlReturn_t, nvmlDeviceCreateGpuInstance,                                               \
	  (nvmlDevice_t dev, unsigned int profile_id, nvmlGpuInstance_t *gi))                      \
	X(nvmlReturn_t, nvmlDeviceCreateGpuInstanceWithPlacement,                                  \
	  (nvmlDevice_t dev, unsigned int profile_id, const nvmlGpuInstancePlacement_t *where,     \
	   nvmlGpuInstance_t *gi))                                                                 \
	X(nvmlReturn_t, nvmlDeviceGetGpuInstances,                                                 \
	  (nvmlDevice_t dev, unsigned int profile_id, nvmlGpuInstance_t *gis,                      \
	   unsigned int *count))                                                                   \
	X(nvmlReturn_t, nvmlDeviceGetGpuInstanceById,                                              \
	  (nvmlDevice_t dev, unsigned int id, nvmlGpuInstance_t *gi))                              \
	X(nvmlReturn_t, nvmlGpuInstanceGetInfo,                                                    \
	  (nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t * info))                                    \
	X(nvmlReturn_t, nvmlGpuInstanceDestroy, (nvmlGpuInstance_t gi))                            \
	X(nvmlReturn_t, nvmlGpuInstanceGetComputeInstanceProfileInfo,                              \
	  (nvmlGpuInstance_t gi, unsigned int index, unsigned int eng,                             \
	   nvmlComputeInstanceProfileInfo_t *info))                                                \
	X(nvmlReturn_t, nvmlGpuInstanceCreateComputeInstance,                                      \
	  (nvmlGpuInstance_t gi, unsigned int profile_id, nvmlComputeInstance_t *ci))              \
	X(nvmlReturn_t, nvmlGpuInstanceGetComputeInstances,                                        \
	  (nvmlGpuInstance_t gi, unsigned int profile_id, nvmlComputeInstance_t *cis,              \
	   unsigned int *count))                                                                   \
	X(nvmlReturn_t, nvmlComputeInstanceGetInfo_v2,                                             \
	  (nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t * info))                            \
	X(nvmlReturn_t, nvmlComputeInstanceDestroy, (nvmlComputeInstance_t ci))                    \
	X(nvmlReturn_t, nvmlDeviceGetGpuInstanceId, (nvmlDevice_t mig, unsigned int *id))          \
	X(nvmlReturn_t, nvmlDeviceGetComputeInstanceId, (nvmlDevice_t mig, unsigned int *id))      \
	X(nvmlReturn_t, nvmlDeviceSetMigMode,                                                      \
	  (nvmlDevice_t dev, unsigned int mode, nvmlReturn_t *activation))

#endif
