/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hip_compat.h — lets the GPU sources be written once against the HIP runtime
 * API and built either by a HIP compiler (ROCm, AMD) or by nvcc (CUDA,
 * NVIDIA). Debian's HIP headers for NVIDIA are too old for CUDA 13, so under
 * nvcc this header maps the few HIP names we use onto the CUDA runtime
 * itself. Only the names the plugin sources use are mapped; add more here
 * rather than calling cuda* directly from the kernels.
 *
 * It also provides what differs between the two platforms in device code:
 *   ATTN_WARP_SIZE       compile-time warp (wavefront) width: 32 on NVIDIA,
 *                        64 on AMD CDNA. `warpSize` is not a constant on
 *                        recent ROCm, so never use it where a constant is needed.
 *   attn_shfl_xor32()    butterfly shuffle inside a group of 32 lanes. Kernels
 *                        are written for logical 32-lane groups so that one
 *                        source serves both widths (a 64-wide AMD wavefront
 *                        holds two such groups).
 *   attn_device_arch()   the arch name the registry uses: "sm_XY" from
 *                        major/minor on NVIDIA (there is no gcnArchName),
 *                        "gfxNNNN" from gcnArchName on AMD (feature suffixes
 *                        such as ":sramecc+:xnack-" are cut off).
 */
#ifndef ATTN_HIP_COMPAT_H
#define ATTN_HIP_COMPAT_H

#include <stdio.h>
#include <string.h>

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
/* ------------------------------------------------------------------ AMD */
/* Debian's HIP 5.2 headers predate clang 22: they read the macro that newer
 * clang no longer defines (the wave size is 64 on every CDNA arch we build),
 * and hip_fp16.h calls builtins that were removed, so it is not included:
 * f16 conversions use clang's _Float16 instead (gpu_attn_internal.h). */
#ifndef __AMDGCN_WAVEFRONT_SIZE
#define __AMDGCN_WAVEFRONT_SIZE 64
#endif
#include <hip/hip_runtime.h>
#define ATTN_PLATFORM_HIP 1
#define ATTN_PLATFORM_NAME "hip"
#define ATTN_WARP_SIZE 64

__device__ __forceinline__ float attn_shfl_xor32(float v, int mask)
{
    return __shfl_xor(v, mask, 32);
}
__device__ __forceinline__ float attn_shfl32(float v, int src)
{
    return __shfl(v, src, 32);
}

#else
/* --------------------------------------------------------------- NVIDIA */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#define ATTN_PLATFORM_CUDA 1
#define ATTN_PLATFORM_NAME "cuda"
#define ATTN_WARP_SIZE 32

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;
#define hipSuccess cudaSuccess
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipGetErrorString cudaGetErrorString
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDevice cudaGetDevice
#define hipSetDevice cudaSetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeMaxSharedMemoryPerBlock cudaDevAttrMaxSharedMemoryPerBlockOptin
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc(p, n, f) cudaMallocHost(p, n)
#define hipHostFree cudaFreeHost
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipStreamCreate cudaStreamCreate
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipFuncAttributePreferredSharedMemoryCarveout cudaFuncAttributePreferredSharedMemoryCarveout
#define hipDriverGetVersion cudaDriverGetVersion
#define hipRuntimeGetVersion cudaRuntimeGetVersion
typedef cudaGraph_t hipGraph_t;
typedef cudaGraphExec_t hipGraphExec_t;
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamEndCapture cudaStreamEndCapture
#define hipStreamCaptureModeGlobal cudaStreamCaptureModeGlobal
#define hipGraphInstantiate(e, g, a, b, c) cudaGraphInstantiate(e, g, 0)
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphDestroy cudaGraphDestroy
#define hipGraphExecDestroy cudaGraphExecDestroy

#ifdef __CUDACC__
/* CUDA 9+ has only the _sync shuffles (CUDA 13 removed the old ones). All
 * 32 lanes of the group take part in every call site. */
__device__ __forceinline__ float attn_shfl_xor32(float v, int mask)
{
    return __shfl_xor_sync(0xffffffffu, v, mask, 32);
}
__device__ __forceinline__ float attn_shfl32(float v, int src)
{
    return __shfl_sync(0xffffffffu, v, src, 32);
}
#endif
#endif

/* The registry's arch name of a device, into buf (at least 32 bytes). */
static inline void attn_device_arch(const hipDeviceProp_t *p, char *buf, size_t n)
{
#if defined(ATTN_PLATFORM_HIP)
    size_t i = 0;
    /* gcnArchName is e.g. "gfx942:sramecc+:xnack-"; the registry wants "gfx942". */
    while (i + 1 < n && p->gcnArchName[i] && p->gcnArchName[i] != ':') {
        buf[i] = p->gcnArchName[i];
        i++;
    }
    buf[i] = '\0';
#else
    snprintf(buf, n, "sm_%d%d", p->major, p->minor);
#endif
}

#endif /* ATTN_HIP_COMPAT_H */
