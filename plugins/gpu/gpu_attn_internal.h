/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu_attn_internal.h — what the launcher (gpu_attn.hip) and the kernels
 * (attn_generic.hip, attn_mtp.hip) share: the flat parameter block every
 * kernel takes by value, and the device helpers for element conversion.
 * Not installed; not part of any ABI.
 */
#ifndef ATTN_GPU_ATTN_INTERNAL_H
#define ATTN_GPU_ATTN_INTERNAL_H

#include "attn_launch_plan.h"

#include <stdint.h>

#include "hip_compat.h"
#include "attn_types.h"

/* Everything a kernel needs, resolved on the host from the shape and the
 * forward args. Passed by value (kernel parameter space), so a forward call
 * allocates nothing and can be captured in a graph. */
typedef struct attn_kparams {
    const void *q;
    int64_t q_stride_token, q_stride_head;
    const void *k_cache, *v_cache;
    const int32_t *block_table;
    int64_t bt_stride;
    const int32_t *cu_seqlens_q;
    const int32_t *seqused_k;
    const float *sinks; /* NULL = none */
    void *out;
    int64_t out_stride_token, out_stride_head;
    float *ws_acc; /* [nseg][num_tokens][hq][dv] unnormalised partial outputs */
    float *ws_ml;  /* [nseg][num_tokens][hq][2]  (running max in log2 units, sum) */
    int32_t num_seqs, num_tokens;
    int32_t hq, hkv, group, d, dv, page;
    int32_t q_dtype, kv_dtype, out_dtype;
    int32_t q_quant;   /* FP8 compute: the e4m3 format Q is quantised to; else 0 */
    float score_scale; /* scale x k_descale (fp8 KV) x q_descale (fp8 compute) */
    float q_descale;   /* FP8 compute: Q is quantised as q / q_descale */
    float v_scale;     /* v_descale for an fp8 cache, else 1 */
    int32_t causal, window_left, window_right;
    float softcap;
    /* decomposition (generic kernel) */
    int32_t nseg;           /* key-range segments; 1 = 2D path (writes out directly) */
    int32_t block_q;        /* query tokens per program */
    int32_t heads_per_tile; /* query heads of one KV head per program */
    int32_t head_splits;    /* ceil(group / heads_per_tile) */
    int32_t stages;         /* raw KV stages in shared memory (the launch plan's) */
    int32_t shared_limit;   /* the arch's shared memory / LDS per program (the plan's) */
    int32_t raw_kv;         /* generic kernel: K/V read raw from the stages (the plan's) */
    int32_t q_vec16;        /* q rows start 16-byte aligned: vector loads are safe */
    int32_t out_pair;       /* every even output column is aligned for a two-element store */
    int32_t mtp_wgmma;      /* MTP: 0 mma.sync variant, 1 wgmma variant, 2 wgmma for q_len > 2 */
    int32_t mtp_pair;       /* MTP, wgmma variant: the pair form (two segments a program) */
    int32_t page_shift;     /* log2(page) when the page size is a power of two, else -1 */
    /* 1: the reduce kernel is launched as a programmatic dependent of the
     * kernel before it (NVIDIA sm_90+): it is scheduled while that kernel's
     * last programs finish and waits for their writes on the device, so the
     * step pays no launch gap between the two (0 on AMD and older GPUs). */
    int32_t pdl;
    /* 1: the decode-mma kernel over a 16-bit cache and the MTP kernel are
     * launched as programmatic dependents of the stream's kernel before
     * them (NVIDIA sm_90+; attn_launch): the launch overlaps that
     * kernel's end, and the kernel's first statement (attn_pdl_wait) waits
     * for it to finish and its writes to be visible, so no global read or
     * write of ours comes before. 0 on AMD and older GPUs. */
    int32_t pdl_main;
    /* A mixed batch split over two kernels: ATTN_PART_SINGLE = this launch
     * (decode kernels, and their reduce) takes only the sequences with one
     * query token, ATTN_PART_MULTI = only those with more (prefill kernel);
     * ATTN_PART_ALL = every sequence. */
    int32_t batch_part;
    /* 1: up to ATTN_REDUCE_ROWS_MAX_SEGMENTS segments are merged by the
     * row-wise reduce (attn_reduce_rows_kernel), 0: always by the per-row
     * one (gpu_attn_force_reduce_rows, for comparisons). */
    int32_t reduce_rows;
    /* Where a key's K/V row lies, in bytes: block b, slot t of the page, KV
     * head h at b * kv_stride_block + t * kv_stride_token + h *
     * kv_stride_head from k_cache (and from v_cache: K and V share one
     * layout). The host resolves attn_forward_args' element strides (0 = the
     * contiguous [blocks, page, Hkv, D] layout's). kv_block_slots =
     * kv_stride_block / kv_stride_token: the prefill producer's slot index
     * of (b, t) is b * kv_block_slots + t. */
    int64_t kv_stride_block, kv_stride_token, kv_stride_head;
    int32_t kv_block_slots;
    /* 1: every program writes (max, sum, acc) partials and attn_reduce_kernel
     * merges them (nseg > 1, the MTP kernel, or an lse output wanted: the
     * reduce is the one place that writes the log-sum-exp). */
    int32_t partials;
    float *lse; /* NULL = not wanted; [token * lse_stride_token + head * lse_stride_head] */
    int64_t lse_stride_token, lse_stride_head;
    /* The launch's counters (attn_family_ops.counter_bytes): in the
     * forward's workspace after the partials, zeroed on the stream right
     * before the kernel; NULL where the family wants none or the workspace
     * has no room for them. The prefill kernel: one a segment, its dynamic
     * grid's item counters (prefill_programs programs a segment take the
     * items from them); NULL: one program an item. */
    int32_t *counters;
    int32_t prefill_programs;
    /* The dynamic grid's items: ranks (ceil(max_seqlen_q / block_q), a
     * tile's rank from its sequence's end) x sequences x KV heads x head
     * splits, rank-major in groups of prefill_group_pairs (sequence, KV head
     * x head split) pairs (0: one group). */
    int32_t prefill_rank_tiles, prefill_group_pairs;
} attn_kparams;

enum { ATTN_PART_ALL = 0, ATTN_PART_SINGLE = 1, ATTN_PART_MULTI = 2 };

#define ATTN_LOG2E 1.4426950408889634f
/* How far (log2 units) a row's scores may pass its running maximum before
 * the maximum moves and the output accumulator is rescaled (the MTP and
 * prefill loops; FlashAttention-4's rule). Below it every exponent of a
 * tile's P stays under 2^14, a quarter of f16's largest finite value (f16
 * and bf16 keep their significant bits at any magnitude; the sums are f32),
 * and no accumulator is rescaled. m and l stay a pair (the partials carry the
 * maximum used), so O / l, the reduce and the log-sum-exp are unchanged. */
#define ATTN_RESCALE_SLACK 14.f
#define ATTN_LN2 0.6931471805599453f

#if defined(__CUDACC__) || defined(__HIP__)
/* Programmatic dependent launch (sm_90+ device code; nothing elsewhere).
 * attn_pdl_launch_dependents: this program has issued its last loads, so
 * the kernel launched after it with attn_kparams.pdl may be scheduled (it is
 * once every program has said so or exited); attn_pdl_wait: in that
 * dependent kernel, block until the kernel before has finished and its
 * writes are visible. */
static __device__ __forceinline__ void attn_pdl_launch_dependents()
{
#if defined(ATTN_PLATFORM_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
static __device__ __forceinline__ void attn_pdl_wait()
{
#if defined(ATTN_PLATFORM_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

/* One kernel launch: plainly, or (programmatic, NVIDIA only) as a
 * programmatic dependent of the stream's kernel before it, captured into a
 * CUDA graph as such an edge (attn_kparams.pdl for the reduce, .pdl_main
 * for the decode-mma and MTP kernels). A kernel launched that way calls
 * attn_pdl_wait before it reads what the kernel before it writes. */
template <typename Kernel, typename... Args>
static inline hipError_t attn_launch(bool programmatic, Kernel kernel, dim3 grid, int threads,
                                     int smem, hipStream_t stream, const Args &...args)
{
#if defined(ATTN_PLATFORM_CUDA)
    if (programmatic) {
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = dim3(threads);
        cfg.dynamicSmemBytes = smem;
        cfg.stream = stream;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        return cudaLaunchKernelEx(&cfg, kernel, args...);
    }
#else
    (void)programmatic;
#endif
    kernel<<<grid, threads, smem, stream>>>(args...);
    return hipGetLastError();
}

/* The keys [klo, khi) that a query at any of the positions pos_lo..pos_hi of
 * a sequence of K keys may see: none past pos_hi when causal, and the
 * window pos - window_left .. pos + window_right (a side < 0: unbounded).
 * Every kernel derives its tiles and segments from this range. */
__device__ __forceinline__ void attn_visible_keys(const attn_kparams &p, int K, int pos_lo,
                                                  int pos_hi, int &klo, int &khi)
{
    klo = 0;
    khi = K;
    if (p.causal)
        khi = min(khi, pos_hi + 1);
    if (p.window_right >= 0)
        khi = min(khi, pos_hi + p.window_right + 1);
    if (p.window_left >= 0)
        klo = max(klo, pos_lo - p.window_left);
}

/* A row's running maximum after a tile whose largest score is t (both in
 * log2 units): it moves only past the slack (ATTN_RESCALE_SLACK). From -inf
 * any finite t moves it; a tile with no visible key (t = -inf) never does. */
__device__ __forceinline__ float attn_running_max(float m, float t)
{
    return t > m + ATTN_RESCALE_SLACK ? t : m;
}

/* The factor a row's unnormalised output is multiplied by when a program
 * writes it directly (one segment): v_descale over the softmax denominator
 * (l at the running max m, log2 units), with the row's sink joining the
 * denominator (sinks: one logit per query head, natural-log units); 0 for a
 * row without visible keys. The reduce kernel does the same over segments. */
__device__ __forceinline__ float attn_row_inverse(float m, float l, const float *sinks, int head,
                                                  float v_scale)
{
    const float sk = sinks ? sinks[head] * ATTN_LOG2E : -INFINITY;
    const float M = fmaxf(m, sk), mu = M == -INFINITY ? 0.f : M;
    const float f = exp2f(m - mu);
    const float den = l * f + (sinks ? exp2f(sk - mu) : 0.f);
    return den > 0.f ? f * v_scale / den : 0.f;
}

__device__ __forceinline__ float attn_bf16_to_f32(uint32_t bits16)
{
    return __uint_as_float(bits16 << 16);
}

/* Eight 16-bit elements (one 16-byte chunk of a bf16/f16 row) as four
 * packed pairs: one vector load where the row is 16-byte aligned
 * (attn_kparams::q_vec16), else four 4-byte pairs built from 2-byte loads
 * (a row with an odd stride or offset may start on any 2-byte boundary). */
__device__ __forceinline__ uint4 attn_load_16bit8(const uint16_t *src, bool vec16)
{
    if (vec16)
        return *(const uint4 *)src;
    uint32_t w[4];
#pragma unroll
    for (int k = 0; k < 4; k++)
        w[k] = (uint32_t)src[2 * k] | ((uint32_t)src[2 * k + 1] << 16);
    return make_uint4(w[0], w[1], w[2], w[3]);
}

/* IEEE half bits -> float, exact (subnormals included). */
__device__ __forceinline__ float attn_f16_to_f32(uint32_t h)
{
#if defined(ATTN_PLATFORM_HIP)
    union {
        uint16_t u;
        _Float16 f;
    } x;
    x.u = (uint16_t)h;
    return (float)x.f;
#else
    __half_raw r;
    r.x = (unsigned short)h;
    return __half2float(__half(r));
#endif
}

/* float -> IEEE half bits, round to nearest even. */
__device__ __forceinline__ uint16_t attn_f32_to_f16_bits(float v)
{
#if defined(ATTN_PLATFORM_HIP)
    union {
        uint16_t u;
        _Float16 f;
    } x;
    x.f = (_Float16)v;
    return x.u;
#else
    __half_raw r = __half_raw(__float2half_rn(v));
    return r.x;
#endif
}

/* e4m3 decode, exact, written out so that it is the same code on every arch
 * and matches cpu-ref's attn_dtype_conv.h bit for bit (NaN codes included). */
__device__ __forceinline__ float attn_fp8_to_f32(uint32_t code, int nuz)
{
    uint32_t sign = (code & 0x80u) << 24;
    uint32_t mag = code & 0x7Fu;
    if (nuz ? code == 0x80u : mag == 0x7Fu)
        return __uint_as_float(sign | 0x7FC00000u);
    uint32_t e = mag >> 3, m = mag & 7u;
    float v;
    if (e == 0)
        v = (float)m * (nuz ? 0x1p-10f : 0x1p-9f);
    else
        v = __uint_as_float(((e + (nuz ? 119u : 120u)) << 23) | (m << 20));
    return __uint_as_float(__float_as_uint(v) | sign);
}

/* Round-to-nearest-even, saturating float -> e4m3 (cpu-ref's encoder). */
__device__ __forceinline__ uint32_t attn_f32_to_fp8(float f, int nuz)
{
    const int bias = nuz ? 8 : 7;
    uint32_t u = __float_as_uint(f);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t mag = u & 0x7FFFFFFFu;
    uint32_t max_code = nuz ? 0x7Fu : 0x7Eu;
    if (mag > 0x7F800000u)
        return nuz ? 0x80u : (sign | 0x7Fu);
    uint32_t e = mag >> 23;
    uint32_t code;
    if ((int)e >= 128 - bias) {
        if (e >= 255u) {
            code = max_code;
        } else {
            uint32_t r = mag - ((uint32_t)(127 - bias) << 23);
            r += 0x7FFFFu + ((r >> 20) & 1u);
            code = r >> 20;
            if (code > max_code)
                code = max_code;
        }
    } else if (e == 0) {
        code = 0;
    } else {
        uint32_t sig = (mag & 0x7FFFFFu) | 0x800000u;
        int shift = 148 - bias - (int)e;
        if (shift >= 25) {
            code = 0;
        } else {
            uint32_t kept = sig >> shift, rest = sig & ((1u << shift) - 1u),
                     half = 1u << (shift - 1);
            if (rest > half || (rest == half && (kept & 1u)))
                kept++;
            code = kept;
        }
    }
    if (nuz && code == 0)
        return 0;
    return sign | code;
}

/* One element of a Q/K/V array as float. */
__device__ __forceinline__ float attn_load_elem(const void *base, int64_t i, int dtype)
{
    switch (dtype) {
    case ATTN_DTYPE_F32:
        return ((const float *)base)[i];
    case ATTN_DTYPE_F16:
        return attn_f16_to_f32(((const uint16_t *)base)[i]);
    case ATTN_DTYPE_BF16:
        return attn_bf16_to_f32(((const uint16_t *)base)[i]);
    case ATTN_DTYPE_FP8_E4M3FN:
        return attn_fp8_to_f32(((const uint8_t *)base)[i], 0);
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        return attn_fp8_to_f32(((const uint8_t *)base)[i], 1);
    default:
        return 0.0f;
    }
}

__device__ __forceinline__ uint32_t attn_f32_to_bf16_bits(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return ((u >> 16) | 0x40u) & 0xFFFFu;
    u += 0x7FFFu + ((u >> 16) & 1u);
    return u >> 16;
}

__device__ __forceinline__ void attn_store_elem(void *base, int64_t i, int dtype, float v)
{
    switch (dtype) {
    case ATTN_DTYPE_F32:
        ((float *)base)[i] = v;
        break;
    case ATTN_DTYPE_F16:
        ((uint16_t *)base)[i] = attn_f32_to_f16_bits(v);
        break;
    case ATTN_DTYPE_BF16:
        ((uint16_t *)base)[i] = (uint16_t)attn_f32_to_bf16_bits(v);
        break;
    default:
        break;
    }
}

/* Asynchronous 16-byte global -> shared copies reading nbytes (16, or 0:
 * zero-fill; src must still be an address inside the allocation, so callers
 * that compute the count once per row need no select of the source).
 * On NVIDIA (sm_80+) these are cp.async: a program keeps several KV tiles in
 * flight while it computes on an earlier one, which is what hides memory
 * latency at the occupancy these kernels run at. Elsewhere they are plain
 * synchronous copies (same results, no overlap).
 * L2_128B: the copy asks L2 to fetch the whole 128-byte line from memory at
 * once (the .L2::128B prefetch size); the decode-mma kernel's K/V rows are
 * 128-byte multiples read in full. Measured on an H100: decode 2 % faster at
 * batch >= 8 over bf16, 1 % over fp8 (bench/RESULTS.md, version 16). */
template <bool L2_128B = false>
__device__ __forceinline__ void attn_cp_async16_n(void *dst, const void *src, uint32_t nbytes)
{
#if defined(ATTN_PLATFORM_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    const uint32_t d = (uint32_t)__cvta_generic_to_shared(dst);
    if constexpr (L2_128B)
        asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                     "r"(nbytes));
    else
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                     "r"(nbytes));
#else
    *(uint4 *)dst = nbytes ? *(const uint4 *)src : make_uint4(0u, 0u, 0u, 0u);
#endif
}
/* The copy by a flag: valid reads 16 bytes, else zero-fills. */
template <bool L2_128B = false>
__device__ __forceinline__ void attn_cp_async16(void *dst, const void *src, bool valid)
{
    attn_cp_async16_n<L2_128B>(dst, src, valid ? 16u : 0u);
}
__device__ __forceinline__ void attn_cp_async_commit()
{
#if defined(ATTN_PLATFORM_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}
/* Wait until at most n committed groups are still in flight (n <= 3). */
__device__ __forceinline__ void attn_cp_async_wait(int n)
{
#if defined(ATTN_PLATFORM_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if (n <= 0)
        asm volatile("cp.async.wait_group 0;\n" ::);
    else if (n == 1)
        asm volatile("cp.async.wait_group 1;\n" ::);
    else if (n == 2)
        asm volatile("cp.async.wait_group 2;\n" ::);
    else
        asm volatile("cp.async.wait_group 3;\n" ::);
#else
    (void)n;
#endif
}

#if defined(ATTN_PLATFORM_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
/* Matrix-unit building blocks of the NVIDIA kernels (attn_decode_mma.hip,
 * attn_mtp.hip). */
__device__ __forceinline__ uint32_t attn_smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* Four 8x8 b16 matrices from shared memory: lanes 8j..8j+7 give the row
 * addresses of matrix j, and register j of lane i receives row i/4, columns
 * 2(i%4), 2(i%4)+1 of matrix j (of its transpose with .trans). Volatile: the
 * compiler must not move the reads across the barriers that publish the
 * tiles. */
__device__ __forceinline__ void attn_ldsm_x4(uint32_t addr, uint32_t *r)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void attn_ldsm_x4_trans(uint32_t addr, uint32_t *r)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* 2^x by the hardware (MUFU.EX2), flushing results below 2^-126 to zero.
 * exp2f gives the same value for every normal result, but wraps the
 * instruction in a range fix-up for subnormal results (3 more instructions
 * per call). Such results cannot matter in an online softmax: a probability
 * that small rounds to 0 in a 16-bit P anyway and cannot move a row sum that
 * is >= 1 (the row's maximum contributes 2^0), and a rescale factor that
 * small only drops old contributions below 2^-126 of the new maximum's. */
__device__ __forceinline__ float attn_exp2_ftz(float x)
{
    float r;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
    return r;
}

/* Two floats -> two 16-bit values in one register (lo in the low half),
 * round to nearest even; BF16 picks bf16, else f16. */
template <bool BF16> __device__ __forceinline__ uint32_t attn_pack2(float lo, float hi)
{
    uint32_t r;
    if constexpr (BF16)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* The output written in column pairs (c, c + 1 with c even): `rows(put)`
 * calls put(i, value c, value c + 1) for each pair at element index i of
 * p.out, and put stores it in p.out_dtype, the type chosen once, not per
 * element. A pair is one store (bf16x2, f16x2 or float2) where p.out_pair
 * says every even column is aligned for it, else two element stores. Per
 * element (a type switch, a conversion and a 2-byte store) the prefill
 * kernel's output took ~6 us of a program (bench/RESULTS.md version 19)
 * and the decode kernel's ~700 instructions on a step's tail (version 22). */
template <class Rows>
__device__ __forceinline__ void attn_store_out_pairs(const attn_kparams &p, Rows rows)
{
    uint16_t *out16 = (uint16_t *)p.out;
    if (p.out_pair && p.out_dtype == ATTN_DTYPE_BF16)
        rows([&](int64_t i, float a, float b) {
            *(uint32_t *)(out16 + i) = attn_pack2<true>(a, b);
        });
    else if (p.out_pair && p.out_dtype == ATTN_DTYPE_F16)
        rows([&](int64_t i, float a, float b) {
            *(uint32_t *)(out16 + i) = attn_pack2<false>(a, b);
        });
    else if (p.out_pair && p.out_dtype == ATTN_DTYPE_F32)
        rows([&](int64_t i, float a, float b) {
            *(float2 *)((float *)p.out + i) = make_float2(a, b);
        });
    else
        rows([&](int64_t i, float a, float b) {
            attn_store_elem(p.out, i, p.out_dtype, a);
            attn_store_elem(p.out, i + 1, p.out_dtype, b);
        });
}

#if __CUDA_ARCH__ >= 890
/* Four e4m3fn bytes -> four f16, exact: bytes 0, 1 -> lo (byte 0 in the low
 * half), bytes 2, 3 -> hi. */
__device__ __forceinline__ void attn_fp8x4_to_f16x4(uint32_t four, uint32_t &lo, uint32_t &hi)
{
    asm("{\n .reg .b16 a, b;\n mov.b32 {a, b}, %2;\n cvt.rn.f16x2.e4m3x2 %0, a;\n"
        " cvt.rn.f16x2.e4m3x2 %1, b;\n}\n"
        : "=r"(lo), "=r"(hi)
        : "r"(four));
}

/* The e4m3fnuz codes that the e4m3fn reading above gets wrong beyond a
 * factor of 2 (0x7F, 0xFF: +-240 in fnuz, NaN in fn; 0x80: NaN in fnuz, -0
 * in fn) in 16 codes and their 8 f16 pairs: set to twice their fnuz value,
 * the scale at which the caller reads every other code. */
__device__ __forceinline__ void attn_fp8_nuz_fix(uint4 x, uint32_t (&y)[8])
{
    const uint32_t w[4] = {x.x, x.y, x.z, x.w};
    /* bytes equal to 0x7F or 0x80 (0xFF is 0x7F with the sign bit) */
    uint32_t special = 0;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const uint32_t a = (w[k] & 0x7F7F7F7Fu) ^ 0x7F7F7F7Fu, b = w[k] ^ 0x80808080u;
        special |= ((a - 0x01010101u) & ~a & 0x80808080u) | ((b - 0x01010101u) & ~b & 0x80808080u);
    }
    if (!special)
        return;
#pragma unroll
    for (int e = 0; e < 16; e++) {
        const uint32_t code = (w[e >> 2] >> (8 * (e & 3))) & 0xFFu;
        if (code == 0x7Fu || code == 0xFFu || code == 0x80u) {
            const uint32_t h = attn_f32_to_f16_bits(2.f * attn_fp8_to_f32(code, 1));
            y[e >> 1] = e & 1 ? (y[e >> 1] & 0xFFFFu) | (h << 16) : (y[e >> 1] & 0xFFFF0000u) | h;
        }
    }
}
#endif

/* Two states of one row (their maxima ma, mb, in log2 units; -inf for a
 * side without keys) merged by the log-sum-exp rule: returns the merged
 * maximum and each side's factor for its sum and accumulators (0 for an
 * empty side; both 0 when both are empty). */
__device__ __forceinline__ float attn_merge_factors(float ma, float mb, float &fa, float &fb)
{
    const float m = fmaxf(ma, mb), u = m == -INFINITY ? 0.f : m;
    fa = exp2f(ma - u);
    fb = exp2f(mb - u);
    return m;
}

/* x * 2^e, for -252 <= e <= 254, as two multiplies by normal powers of two:
 * exact wherever the result is a normal float or zero, so the same value as
 * ldexpf there (whose device code clamps the exponent and multiplies each
 * element four times; the Q prologues scale every element). A result below
 * the normal range may be rounded twice: a Q element, converted to f16
 * afterwards, is 0 either way, and a row multiplier that small belongs to a
 * row whose scores are zero to f32 precision. */
__device__ __forceinline__ float attn_mul_pow2(float x, int e)
{
    const int a = e >> 1, b = e - a;
    return x * __int_as_float((127 + a) << 23) * __int_as_float((127 + b) << 23);
}

/* Eight elements of a Q row (v) into f16 for the f16 matrix units (fp8
 * caches, where K and V are f16): the row is scaled by the power of two that
 * puts its largest |element| (row_max, over the whole row) in [2^14, 2^15),
 * which is exact for bf16 inputs (8 significant bits fit f16's 11) and never
 * overflows f16. Returns that power's exponent; the caller folds 2^-shift
 * back into the row's score multiplier. */
__device__ __forceinline__ int attn_q_to_f16_scaled(const float (&v)[8], float row_max,
                                                    uint32_t (&h)[4])
{
    int e = 0;
    const bool scale = row_max > 0.f && isfinite(row_max);
    if (scale)
        (void)frexpf(row_max, &e);
    const int sh = scale ? 15 - e : 0;
#pragma unroll
    for (int k = 0; k < 4; k++)
        h[k] = attn_pack2<false>(attn_mul_pow2(v[2 * k], sh), attn_mul_pow2(v[2 * k + 1], sh));
    return sh;
}

/* c += a b, m16n8k16, f32 accumulate; BF16 picks bf16 inputs, else f16. */
template <bool BF16>
__device__ __forceinline__ void attn_mma16816(float *c, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    if constexpr (BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

/* Which sequence owns query tile `tile` of a grid whose tiles of sequence s
 * start at cu[s] / block_q + s (a bound that needs no scan: each sequence
 * gets at least ceil(q_len / block_q) tiles). Binary search for the last
 * start <= tile. */
__device__ __forceinline__ int attn_find_tile_seq(const int32_t *cu, int num_seqs, int block_q,
                                                  int tile)
{
    int lo = 0, hi = num_seqs;
    while (hi - lo > 1) {
        int mid = (lo + hi) >> 1;
        if (cu[mid] / block_q + mid <= tile)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Whether key j is visible from query position pos (BRIEF "Attention
 * semantics"); j < K is checked by the caller. */
__device__ __forceinline__ bool attn_visible(const attn_kparams &p, int j, int pos)
{
    if (p.causal && j > pos)
        return false;
    if (p.window_left >= 0 && j < pos - p.window_left)
        return false;
    if (p.window_right >= 0 && j > pos + p.window_right)
        return false;
    return true;
}

#endif /* device compiler */

#ifdef __cplusplus
/* The launchers' compile-time dispatch on the head size (FlashAttention's
 * static-switch idea over ATTN_GPU_HEAD_DIM_LIST): calls f with
 * std::integral_constant<int, D> for the built size d, so each caller names
 * its kernel template once; a size off the list is hipErrorInvalidValue. */
#include <type_traits>
template <typename F> static inline hipError_t attn_dispatch_head_dim(int d, F &&f)
{
    switch (d) {
#define ATTN_HEAD_DIM_CASE_(D)                                                                     \
    case D:                                                                                        \
        return f(std::integral_constant<int, D>{});
        ATTN_GPU_HEAD_DIM_LIST(ATTN_HEAD_DIM_CASE_)
#undef ATTN_HEAD_DIM_CASE_
    default:
        return hipErrorInvalidValue;
    }
}
#endif

/* Launchers (defined in the kernel sources, called by gpu_attn.hip). They
 * return the launch error, if any. */
hipError_t attn_launch_generic(const attn_kparams *p, int max_tile_q, hipStream_t stream,
                               int rows_per_warp);
hipError_t attn_launch_mtp(const attn_kparams *p, int max_seqlen_q, int nseg, hipStream_t stream);
/* Programs of the MTP kernel a multiprocessor holds at once (its launch
 * bounds, its shared memory checked against it; the segment rule fills one
 * wave of them). */
#define ATTN_MTP_PROGRAMS_PER_CU 2
hipError_t attn_launch_reduce(const attn_kparams *p, int nseg, hipStream_t stream);
/* printf into the caller's error buffer (NULL or 0 bytes: nothing). */
void attn_set_err(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* ATTN_REDUCE_MAX_SEGMENTS: attn_launch_plan.h (the reduce's table). */
/* Dynamic shared memory the generic kernel needs for `stages` raw KV stages. */
int attn_mtp_has_mma(void);
int attn_mtp_has_wgmma(void);
/* Whether the generic kernel is compiled for this head size / KV type. */
int attn_generic_supports(int d, int dv, int kv_dtype);
/* The generic kernel's decode path (every sequence has at most one query
 * token; same head sizes and KV types as attn_generic_supports): query heads
 * per program for a group size and head size, and the launch (which expects
 * heads_per_tile, head_splits and nseg set). */
int attn_decode_heads_per_program(int group, int d);
hipError_t attn_launch_decode(const attn_kparams *p, hipStream_t stream);
/* The matrix-unit decode kernel (attn_decode_mma.hip, NVIDIA only): how many
 * of its one-warp programs a compute unit holds for head size d (kv8: an fp8
 * cache), and the launch (heads_per_tile 16, head_splits and nseg set by the
 * caller). Which shapes it takes is the launch plan's
 * (attn_launch_plan_decode_mma_takes). */
int attn_decode_mma_programs_per_cu(int d, int kv8);
/* The programs per compute unit the decode-mma segment rule fills: that
 * capacity, unless the bench's tuning hook set another target. */
int attn_decode_mma_target_per_cu(int d, int kv8);
hipError_t attn_launch_decode_mma(const attn_kparams *p, hipStream_t stream);
/* Programs of the prefill kernel (attn_prefill.hip) a multiprocessor of
 * this device holds at once, for head size d (kv8: an fp8 cache); 1 where
 * the build has no prefill kernel. */
int attn_prefill_programs_per_cu(const hipDeviceProp_t *prop, int d, int kv8);

/* A kernel's launch attributes, set where they differ from what this device
 * last got for it: the dynamic shared memory limit (the call is needed above
 * 48 KB) and, when carveout_percent >= 0, the preferred shared-memory
 * carveout. Kept per (kernel, device), since attributes belong to a
 * device's context: a process-wide "done" flag left a second GPU without
 * them. Thread-safe; a launch that needs nothing new makes no runtime call
 * but hipGetDevice, so forwards under graph capture stay capture-safe once
 * a first forward has run. */
hipError_t attn_func_opt_in(const void *func, int smem_bytes, int carveout_percent);

/* Shared memory one block may opt in to on sm_90 (H100/H200): 227 KB. */
#define ATTN_SM90_SMEM_PER_BLOCK (227 * 1024)

/* The prefill kernel (attn_prefill.hip, NVIDIA sm_90a builds only): the
 * launch (which expects block_q, heads_per_tile, head_splits, nseg and
 * page_shift set). Which shapes it takes and its program are the launch
 * plan's (attn_launch_plan_prefill_takes, attn_launch_plan_prefill_layout). */
hipError_t attn_launch_prefill(const attn_kparams *p, hipStream_t stream);

#endif /* ATTN_GPU_ATTN_INTERNAL_H */
