/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_wgmma.h — the Hopper (sm_90a) building blocks of the NVIDIA kernels
 * (attn_mtp.hip's warpgroup variant, attn_prefill.hip): wgmma descriptors,
 * fences and waits, the generated wgmma wrappers (attn_wgmma_gen.inc, from
 * gen_wgmma.py), mbarriers and register reallocation.
 *
 * Everything here exists only in the sm_90a device pass: ATTN_HAVE_WGMMA is
 * defined there and nowhere else (host pass, other archs, AMD), and code
 * that uses these helpers must sit under the same guard.
 */
#ifndef ATTN_WGMMA_H
#define ATTN_WGMMA_H

#include "gpu_attn_internal.h"

#if defined(__CUDACC__) || defined(__HIP__)
/* Byte offset of 16-byte chunk c (8 columns) of row r in a tile of `rows`
 * rows stored in the 128-byte swizzle layout below (blocks of 64 columns x
 * `rows` rows, chunk c of row r at chunk c ^ (r & 7)); plain arithmetic, so
 * every pass and every kernel may use it. */
static __device__ __forceinline__ int attn_swz128_off(int r, int c, int rows)
{
    return (c >> 3) * rows * 128 + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

#endif

#if defined(ATTN_PLATFORM_CUDA) && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTN_HAVE_WGMMA 1

/* A shared-memory operand of wgmma: the start address, the leading and stride
 * byte offsets (each >> 4) and the swizzle mode. Every tile the kernels hand
 * to wgmma is stored in the 128-byte swizzle layout: blocks of 64 columns
 * (128 bytes of a 16-bit type) x R rows, 16-byte chunk c of row r at chunk
 * c ^ (r & 7), 8-row groups 1024 bytes apart (the stride byte offset), each
 * block 1024-byte aligned. For a K-major operand the leading offset is
 * unused (encoded 1); for an N-major one it is the distance between
 * 64-column blocks. */
static __device__ __forceinline__ uint64_t attn_wgmma_desc(uint32_t smem_addr,
                                                           uint32_t leading_bytes)
{
    return (uint64_t)((smem_addr & 0x3FFFFu) >> 4) | ((uint64_t)(leading_bytes >> 4) << 16) |
           ((uint64_t)(1024 >> 4) << 32) | (1ull << 62);
}

static __device__ __forceinline__ void attn_wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
static __device__ __forceinline__ void attn_wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
/* Wait until at most N committed wgmma groups of this warp are pending. */
template <int N> static __device__ __forceinline__ void attn_wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Shared-memory writes made by the generic proxy (ordinary stores, cp.async)
 * become visible to wgmma (the async proxy) only after this fence, executed
 * after the writes are known complete and before the wgmma that reads them. */
static __device__ __forceinline__ void attn_fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* Pins a register that an in-flight wgmma reads or writes: the compiler may
 * neither move accesses across this point nor reuse the register before it. */
static __device__ __forceinline__ void attn_reg_fence(float &x)
{
    asm volatile("" : "+f"(x)::"memory");
}
static __device__ __forceinline__ void attn_reg_fence(uint32_t &x)
{
    asm volatile("" : "+r"(x)::"memory");
}
template <int M> static __device__ __forceinline__ void attn_reg_fence(float (&x)[M])
{
#pragma unroll
    for (int i = 0; i < M; i++)
        attn_reg_fence(x[i]);
}

/* ---- mbarriers (shared-memory arrive/wait barriers) ---------------------- */
static __device__ __forceinline__ void attn_mbar_init(uint64_t *bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(attn_smem_addr(bar)), "r"(count)
                 : "memory");
}
static __device__ __forceinline__ void attn_mbar_arrive(uint64_t *bar)
{
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(
                     attn_smem_addr(bar))
                 : "memory");
}
/* Arrives on `bar` once every cp.async this thread issued before has landed
 * (the arrival is one of the barrier's expected count: .noinc). */
static __device__ __forceinline__ void attn_mbar_arrive_cp_async(uint64_t *bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(attn_smem_addr(bar))
                 : "memory");
}
/* Blocks until the barrier's phase with this parity has completed. */
static __device__ __forceinline__ void attn_mbar_wait(uint64_t *bar, int parity)
{
    const uint32_t a = attn_smem_addr(bar);
    uint32_t done;
    do {
        asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     " selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
    } while (!done);
}

/* A barrier for `count` threads (a multiple of 32) with id 1..15 (0 is
 * __syncthreads). */
static __device__ __forceinline__ void attn_named_barrier(int id, int count)
{
    asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

/* Arrives on barrier `id` without waiting (the producer side of a
 * handshake whose other side calls attn_named_barrier with the same count). */
static __device__ __forceinline__ void attn_named_arrive(int id, int count)
{
    asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

/* Register reallocation between warpgroups (needs a register cap at entry:
 * __launch_bounds__(threads, 1)). */
template <int REGS> static __device__ __forceinline__ void attn_regs_release()
{
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS));
}
template <int REGS> static __device__ __forceinline__ void attn_regs_acquire()
{
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS));
}

#include "attn_wgmma_gen.inc"

#endif /* sm_90a device pass */
#endif /* ATTN_WGMMA_H */
