/*
 * cuda_abi: the part of the CUDA driver API (libcuda.so.1) that the vGPU
 * interposer hooks or calls, declared here because no CUDA toolkit is
 * installed where xpool builds.
 *
 * Written from the CUDA driver API reference (docs.nvidia.com/cuda/
 * cuda-driver-api): result codes, opaque handle types, the one struct the
 * interposer reads (CUlaunchConfig) and the prototypes, as function pointer
 * types of the hook table. Names are those the driver exports: the
 * versioned `_v2` entry points are what cuda.h maps the plain names to
 * (cuGetProcAddress answers a plain name with them, per the version asked;
 * resolve.c holds that map).
 *
 * Also included by tests/fakelibs/fake_cuda.c, which implements these
 * functions for the tests.
 */
#ifndef XP_CUDA_ABI_H
#define XP_CUDA_ABI_H

#include <stddef.h>

typedef int CUresult;
enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
	CUDA_ERROR_NOT_SUPPORTED = 801,
	CUDA_ERROR_UNKNOWN = 999,
};

typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* the _v2 API: 64-bit device pointers */
typedef unsigned long long CUmemGenericAllocationHandle;
typedef unsigned long long cuuint64_t;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUmemAllocationProp_st CUmemAllocationProp; /* only passed through */
typedef struct CUlaunchAttribute_st CUlaunchAttribute;	   /* only passed through */

/* cuLaunchKernelEx's configuration (CUDA 12.0+) */
typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUstream hStream;
	CUlaunchAttribute *attrs;
	unsigned int numAttrs;
} CUlaunchConfig;

_Static_assert(sizeof(CUlaunchConfig) == 56, "CUlaunchConfig layout (LP64)");

/* cuGetProcAddress flags and cuGetProcAddress_v2's answer */
#define CU_GET_PROC_ADDRESS_DEFAULT			0
#define CU_GET_PROC_ADDRESS_LEGACY_STREAM		1
#define CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM	2
#define CU_GET_PROC_ADDRESS_SUCCESS			0
#define CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND		1
#define CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT	2
typedef int CUdriverProcAddressQueryResult;

#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT 16
#define CU_EVENT_DEFAULT			 0
#define CU_STREAM_CAPTURE_MODE_GLOBAL		 0

/* Every function the interposer hooks or calls, as X(ret, name, args). */
#define XP_CUDA_FUNCS(X)                                                                           \
	X(CUresult, cuInit, (unsigned int flags))                                                  \
	X(CUresult, cuDriverGetVersion, (int *version))                                            \
	X(CUresult, cuGetProcAddress,                                                              \
	  (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags))                     \
	X(CUresult, cuGetProcAddress_v2,                                                           \
	  (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,                      \
	   CUdriverProcAddressQueryResult *status))                                                \
	X(CUresult, cuDeviceGet, (CUdevice * dev, int ordinal))                                    \
	X(CUresult, cuDeviceGetCount, (int *count))                                                \
	X(CUresult, cuDeviceGetAttribute, (int *value, int attrib, CUdevice dev))                  \
	X(CUresult, cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev))                           \
	X(CUresult, cuCtxGetDevice, (CUdevice * dev))                                              \
	X(CUresult, cuDevicePrimaryCtxRetain, (CUcontext * ctx, CUdevice dev))                     \
	X(CUresult, cuCtxCreate_v2, (CUcontext * ctx, unsigned int flags, CUdevice dev))           \
	X(CUresult, cuMemGetInfo_v2, (size_t * free, size_t *total))                               \
	X(CUresult, cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytes))                             \
	X(CUresult, cuMemAllocPitch_v2,                                                            \
	  (CUdeviceptr * dptr, size_t *pitch, size_t width, size_t height, unsigned int elem))     \
	X(CUresult, cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytes, unsigned int flags))     \
	X(CUresult, cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytes, CUstream s))               \
	X(CUresult, cuMemAllocFromPoolAsync,                                                       \
	  (CUdeviceptr * dptr, size_t bytes, CUmemoryPool pool, CUstream s))                       \
	X(CUresult, cuMemFree_v2, (CUdeviceptr dptr))                                              \
	X(CUresult, cuMemFreeAsync, (CUdeviceptr dptr, CUstream s))                                \
	X(CUresult, cuMemCreate,                                                                   \
	  (CUmemGenericAllocationHandle * h, size_t bytes, const CUmemAllocationProp *prop,        \
	   unsigned long long flags))                                                              \
	X(CUresult, cuMemRelease, (CUmemGenericAllocationHandle h))                                \
	X(CUresult, cuLaunchKernel,                                                                \
	  (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,       \
	   unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params,        \
	   void **extra))                                                                          \
	X(CUresult, cuLaunchKernelEx,                                                              \
	  (const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra))                  \
	X(CUresult, cuLaunchCooperativeKernel,                                                     \
	  (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,       \
	   unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params))       \
	X(CUresult, cuGraphLaunch, (CUgraphExec g, CUstream s))                                    \
	X(CUresult, cuStreamBeginCapture_v2, (CUstream s, int mode))                               \
	X(CUresult, cuStreamEndCapture, (CUstream s, CUgraph * g))                                 \
	X(CUresult, cuEventCreate, (CUevent * e, unsigned int flags))                              \
	X(CUresult, cuEventRecord, (CUevent e, CUstream s))                                        \
	X(CUresult, cuEventQuery, (CUevent e))                                                     \
	X(CUresult, cuEventSynchronize, (CUevent e))                                               \
	X(CUresult, cuEventElapsedTime, (float *ms, CUevent start, CUevent end))

/* The per-thread-default-stream twins (cuGetProcAddress with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM): same prototypes. */
#define XP_CUDA_PTSZ(X)                                                                            \
	X(cuLaunchKernel)                                                                          \
	X(cuLaunchKernelEx)                                                                        \
	X(cuLaunchCooperativeKernel)                                                               \
	X(cuGraphLaunch)                                                                           \
	X(cuMemAllocAsync)                                                                         \
	X(cuMemAllocFromPoolAsync)                                                                 \
	X(cuMemFreeAsync)                                                                          \
	X(cuStreamBeginCapture_v2)                                                                 \
	X(cuStreamEndCapture)                                                                      \
	X(cuEventRecord)

#define X(ret, name, args) typedef ret(*name##_fn) args;
XP_CUDA_FUNCS(X)
#undef X

#endif
