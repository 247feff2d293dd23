//===- DynamicSymbolTables.h - the CUDA entry points mixprec loads -------===//
//
// The one list of the CUDA driver and cuBLASLt functions the runtime calls.
// It is an X-macro file (after IREE's dynamic_symbol_tables.h): no include
// guard; an includer defines the macros it wants and includes this file.
//
//   MIXPREC_CU_PFN_DECL(name, parameter types...)
//       a driver function returning CUresult, found with cuGetProcAddress
//       under its base name for the headers' CUDA_VERSION (cuda.h maps
//       `cuMemAlloc` to `cuMemAlloc_v2`; the driver returns that version)
//   MIXPREC_CUBLASLT_PFN_DECL(return type, name, parameter types...)
//       a cuBLASLt function, found with dlsym
//
// SymbolTables.cpp checks at compile time that each signature here is the
// one the CUDA headers declare. Adding a function is one line here.
//
//===----------------------------------------------------------------------===//

#ifdef MIXPREC_CU_PFN_DECL
// Initialization, errors, devices.
MIXPREC_CU_PFN_DECL(cuInit, unsigned int)
MIXPREC_CU_PFN_DECL(cuDriverGetVersion, int *)
MIXPREC_CU_PFN_DECL(cuGetErrorName, CUresult, const char **)
MIXPREC_CU_PFN_DECL(cuGetErrorString, CUresult, const char **)
MIXPREC_CU_PFN_DECL(cuDeviceGetCount, int *)
MIXPREC_CU_PFN_DECL(cuDeviceGet, CUdevice *, int)
MIXPREC_CU_PFN_DECL(cuDeviceGetName, char *, int, CUdevice)
MIXPREC_CU_PFN_DECL(cuDeviceGetAttribute, int *, CUdevice_attribute, CUdevice)
MIXPREC_CU_PFN_DECL(cuDeviceTotalMem, size_t *, CUdevice)
// Contexts.
MIXPREC_CU_PFN_DECL(cuDevicePrimaryCtxRetain, CUcontext *, CUdevice)
MIXPREC_CU_PFN_DECL(cuDevicePrimaryCtxRelease, CUdevice)
MIXPREC_CU_PFN_DECL(cuCtxSetCurrent, CUcontext)
MIXPREC_CU_PFN_DECL(cuCtxSynchronize, void)
// Modules and launches.
MIXPREC_CU_PFN_DECL(cuModuleLoadData, CUmodule *, const void *)
MIXPREC_CU_PFN_DECL(cuModuleUnload, CUmodule)
MIXPREC_CU_PFN_DECL(cuModuleGetFunction, CUfunction *, CUmodule, const char *)
MIXPREC_CU_PFN_DECL(cuFuncSetAttribute, CUfunction, CUfunction_attribute, int)
MIXPREC_CU_PFN_DECL(cuLaunchKernel, CUfunction, unsigned int, unsigned int, unsigned int,
                    unsigned int, unsigned int, unsigned int, unsigned int, CUstream, void **,
                    void **)
// Memory.
MIXPREC_CU_PFN_DECL(cuMemGetInfo, size_t *, size_t *)
MIXPREC_CU_PFN_DECL(cuMemAlloc, CUdeviceptr *, size_t)
MIXPREC_CU_PFN_DECL(cuMemFree, CUdeviceptr)
MIXPREC_CU_PFN_DECL(cuMemAllocHost, void **, size_t)
MIXPREC_CU_PFN_DECL(cuMemFreeHost, void *)
MIXPREC_CU_PFN_DECL(cuMemcpyHtoDAsync, CUdeviceptr, const void *, size_t, CUstream)
MIXPREC_CU_PFN_DECL(cuMemcpyDtoHAsync, void *, CUdeviceptr, size_t, CUstream)
MIXPREC_CU_PFN_DECL(cuMemcpyDtoDAsync, CUdeviceptr, CUdeviceptr, size_t, CUstream)
MIXPREC_CU_PFN_DECL(cuMemsetD8Async, CUdeviceptr, unsigned char, size_t, CUstream)
// Streams, events, graphs.
MIXPREC_CU_PFN_DECL(cuStreamCreate, CUstream *, unsigned int)
MIXPREC_CU_PFN_DECL(cuStreamDestroy, CUstream)
MIXPREC_CU_PFN_DECL(cuStreamSynchronize, CUstream)
MIXPREC_CU_PFN_DECL(cuStreamWaitEvent, CUstream, CUevent, unsigned int)
MIXPREC_CU_PFN_DECL(cuStreamBeginCapture, CUstream, CUstreamCaptureMode)
MIXPREC_CU_PFN_DECL(cuStreamEndCapture, CUstream, CUgraph *)
MIXPREC_CU_PFN_DECL(cuEventCreate, CUevent *, unsigned int)
MIXPREC_CU_PFN_DECL(cuEventDestroy, CUevent)
MIXPREC_CU_PFN_DECL(cuEventRecord, CUevent, CUstream)
MIXPREC_CU_PFN_DECL(cuEventSynchronize, CUevent)
MIXPREC_CU_PFN_DECL(cuEventElapsedTime, float *, CUevent, CUevent)
MIXPREC_CU_PFN_DECL(cuGraphInstantiateWithFlags, CUgraphExec *, CUgraph, unsigned long long)
MIXPREC_CU_PFN_DECL(cuGraphLaunch, CUgraphExec, CUstream)
MIXPREC_CU_PFN_DECL(cuGraphExecDestroy, CUgraphExec)
MIXPREC_CU_PFN_DECL(cuGraphDestroy, CUgraph)
#endif // MIXPREC_CU_PFN_DECL

#ifdef MIXPREC_CUBLASLT_PFN_DECL
MIXPREC_CUBLASLT_PFN_DECL(size_t, cublasLtGetVersion, void)
MIXPREC_CUBLASLT_PFN_DECL(const char *, cublasLtGetStatusName, cublasStatus_t)
MIXPREC_CUBLASLT_PFN_DECL(const char *, cublasLtGetStatusString, cublasStatus_t)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtCreate, cublasLtHandle_t *)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtDestroy, cublasLtHandle_t)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatmulDescCreate, cublasLtMatmulDesc_t *,
                          cublasComputeType_t, cudaDataType_t)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatmulDescDestroy, cublasLtMatmulDesc_t)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatmulDescSetAttribute, cublasLtMatmulDesc_t,
                          cublasLtMatmulDescAttributes_t, const void *, size_t)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatmulDescGetAttribute, cublasLtMatmulDesc_t,
                          cublasLtMatmulDescAttributes_t, void *, size_t, size_t *)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatrixLayoutCreate, cublasLtMatrixLayout_t *,
                          cudaDataType, uint64_t, uint64_t, int64_t)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatrixLayoutDestroy, cublasLtMatrixLayout_t)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatrixLayoutSetAttribute,
                          cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, const void *,
                          size_t)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatrixLayoutGetAttribute,
                          cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void *, size_t,
                          size_t *)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatmulPreferenceCreate,
                          cublasLtMatmulPreference_t *)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatmulPreferenceDestroy,
                          cublasLtMatmulPreference_t)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatmulPreferenceSetAttribute,
                          cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                          const void *, size_t)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatmulAlgoGetHeuristic, cublasLtHandle_t,
                          cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                          cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                          cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *,
                          int *)
MIXPREC_CUBLASLT_PFN_DECL(cublasStatus_t, cublasLtMatmul, cublasLtHandle_t, cublasLtMatmulDesc_t,
                          const void *, const void *, cublasLtMatrixLayout_t, const void *,
                          cublasLtMatrixLayout_t, const void *, const void *,
                          cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                          const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t)
#endif // MIXPREC_CUBLASLT_PFN_DECL
