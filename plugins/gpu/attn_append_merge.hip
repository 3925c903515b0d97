/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_append_merge.hip — the two bandwidth-bound ops an engine runs beside
 * attention on the same device: writing the new tokens' K/V rows into the
 * paged cache (attn_append_args, vLLM's reshape_and_cache_flash) and merging
 * two partial results by their log-sum-exp (attn_merge_args, cascade
 * attention). Both move each byte once and do a few operations per element,
 * so what matters is full 16-byte accesses: a thread owns 8 consecutive
 * elements of a row (one uint4 of 16-bit data, two of f32, 8 bytes of fp8)
 * wherever the rows are aligned for it, element by element elsewhere.
 *
 * The conversions are the ones the attention kernels read back with
 * (gpu_attn_internal.h): round to nearest even for f16/bf16, cpu-ref's
 * saturating e4m3 encoder for fp8 after an IEEE division by the scale, so
 * the GPU cache is bit-identical to what cpu-ref's append_kv writes.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attn_append_check.h"
#include "attnreg.h" /* attn_merge_args */
#include "gpu_attn.h"
#include "gpu_attn_internal.h"

/* Kernel parameters of one append: element strides, resolved on the host. */
typedef struct attn_append_kparams {
    const void *src[2]; /* K rows, V rows */
    int64_t src_st[2], src_sh[2];
    void *cache[2];
    int64_t cache_sb[2], cache_st[2], cache_sh[2];
    const int64_t *slots;
    int64_t num_slots; /* num_blocks * page: slots at or past it are skipped */
    float scale[2];    /* fp8: stored = value / scale; else 1 */
    int32_t num_tokens, hkv, d[2], page;
    int32_t src_dtype, kv_dtype;
    int32_t vec; /* every row start is 16-byte aligned for the src and the cache */
} attn_append_kparams;

/* 8 elements as float (vector loads when aligned). */
static __device__ __forceinline__ void load8_f32(const void *base, int64_t i, int dtype, bool vec,
                                                 float (&x)[8])
{
    if (vec && dtype == ATTN_DTYPE_F32) {
        const float4 a = *(const float4 *)((const float *)base + i);
        const float4 b = *(const float4 *)((const float *)base + i + 4);
        x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w;
        x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
    } else if (vec) {
        const uint4 u = *(const uint4 *)((const uint16_t *)base + i);
        const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const bool bf = dtype == ATTN_DTYPE_BF16;
            x[2 * k] = bf ? attn_bf16_to_f32(w[k] & 0xFFFFu) : attn_f16_to_f32(w[k] & 0xFFFFu);
            x[2 * k + 1] = bf ? attn_bf16_to_f32(w[k] >> 16) : attn_f16_to_f32(w[k] >> 16);
        }
    } else {
#pragma unroll
        for (int k = 0; k < 8; k++)
            x[k] = attn_load_elem(base, i + k, dtype);
    }
}

/* 8 floats stored as `dtype` (f32, f16, bf16 or e4m3fn/fnuz). */
static __device__ __forceinline__ void store8(void *base, int64_t i, int dtype, bool vec,
                                              const float (&x)[8])
{
    if (!vec) {
#pragma unroll
        for (int k = 0; k < 8; k++)
            attn_store_elem(base, i + k, dtype, x[k]);
        return;
    }
    if (dtype == ATTN_DTYPE_F32) {
        *(float4 *)((float *)base + i) = make_float4(x[0], x[1], x[2], x[3]);
        *(float4 *)((float *)base + i + 4) = make_float4(x[4], x[5], x[6], x[7]);
    } else if (dtype == ATTN_DTYPE_F16 || dtype == ATTN_DTYPE_BF16) {
        uint32_t w[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const bool bf = dtype == ATTN_DTYPE_BF16;
            const uint32_t lo = bf ? attn_f32_to_bf16_bits(x[2 * k]) : attn_f32_to_f16_bits(x[2 * k]);
            const uint32_t hi =
                bf ? attn_f32_to_bf16_bits(x[2 * k + 1]) : attn_f32_to_f16_bits(x[2 * k + 1]);
            w[k] = lo | (hi << 16);
        }
        *(uint4 *)((uint16_t *)base + i) = make_uint4(w[0], w[1], w[2], w[3]);
    } else {
        const int nuz = dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
        uint32_t w[2] = {0u, 0u};
#pragma unroll
        for (int k = 0; k < 8; k++)
            w[k / 4] |= attn_f32_to_fp8(x[k], nuz) << (8 * (k % 4));
        *(uint2 *)((uint8_t *)base + i) = make_uint2(w[0], w[1]);
    }
}

/* grid (tokens, 2: K then V), 128 threads over the Hkv * D / 8 chunks of a
 * token's row. */
__global__ void __launch_bounds__(128) attn_append_kernel(const attn_append_kparams p)
{
    const int t = blockIdx.x, kv = blockIdx.y;
    const int64_t slot = p.slots[t];
    if (slot < 0 || slot >= p.num_slots)
        return; /* padding (negative), or past the cache: never written */
    const int64_t blk = slot / p.page, off = slot % p.page;
    const int d = p.d[kv], chunks = p.hkv * (d / 8);
    const bool fp8 = p.kv_dtype == ATTN_DTYPE_FP8_E4M3FN || p.kv_dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
        const int h = c / (d / 8), e = (c % (d / 8)) * 8;
        float x[8];
        load8_f32(p.src[kv], t * p.src_st[kv] + h * p.src_sh[kv] + e, p.src_dtype, p.vec, x);
        if (fp8) {
#pragma unroll
            for (int k = 0; k < 8; k++)
                x[k] = __fdiv_rn(x[k], p.scale[kv]); /* IEEE, as cpu-ref divides */
        }
        store8(p.cache[kv], blk * p.cache_sb[kv] + off * p.cache_st[kv] + h * p.cache_sh[kv] + e,
               p.kv_dtype, p.vec, x);
    }
}

/* The counts, pointers and strides were checked by the host
 * (attn_backend_append_kv); what depends on the shape by attn_append_check. */
extern "C" attn_status gpu_attn_append_kv(gpu_attn_ctx *ctx, const attn_append_args *a, char *err,
                                          size_t err_size)
{
    if (!ctx || !a || a->struct_size < offsetof(attn_append_args, stream) + sizeof(void *)) {
        attn_set_err(err, err_size, "append: NULL backend or args, or args older than 0.4");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    const attn_shape *s = gpu_attn_shape(ctx);
    int32_t src;
    attn_status st = attn_append_check(ATTN_PLATFORM_NAME, s, a, &src, err, err_size);
    if (st != ATTN_OK)
        return st;
    if (a->num_tokens == 0)
        return ATTN_OK; /* no grid of zero blocks */
    const int kvd = s->kv_dtype;
    const bool fp8 = attn_dtype_is_fp8(kvd);
    attn_append_kparams p;
    memset(&p, 0, sizeof p);
    const int64_t hkv = attn_shape_kv_heads(s), page = s->page_size;
    const int32_t dims[2] = {s->head_dim, attn_shape_head_dim_v(s)};
    if (dims[0] % 8 || dims[1] % 8) {
        attn_set_err(err, err_size, "append: head_dim %d / head_dim_v %d: multiples of 8 only",
                   (int)dims[0], (int)dims[1]);
        return ATTN_ERR_UNSUPPORTED;
    }
    const int64_t given[2][5] = {{a->k_stride_token, a->k_stride_head, a->k_cache_stride_block,
                                  a->k_cache_stride_token, a->k_cache_stride_head},
                                 {a->v_stride_token, a->v_stride_head, a->v_cache_stride_block,
                                  a->v_cache_stride_token, a->v_cache_stride_head}};
    const void *rows[2] = {a->k, a->v};
    void *caches[2] = {a->k_cache, a->v_cache};
    const int64_t sb = (int64_t)attn_dtype_size(src), cb = (int64_t)attn_dtype_size(kvd);
    int vec = 1;
    for (int kv = 0; kv < 2; kv++) {
        const int64_t d = dims[kv];
        p.src[kv] = rows[kv];
        p.src_st[kv] = given[kv][0] ? given[kv][0] : hkv * d;
        p.src_sh[kv] = given[kv][1] ? given[kv][1] : d;
        p.cache[kv] = caches[kv];
        p.cache_sb[kv] = given[kv][2] ? given[kv][2] : page * hkv * d;
        p.cache_st[kv] = given[kv][3] ? given[kv][3] : hkv * d;
        p.cache_sh[kv] = given[kv][4] ? given[kv][4] : d;
        p.d[kv] = (int32_t)d;
        /* 8 elements at a time: 16 (f32: 32) source bytes, 16 or 8 cache bytes */
        vec &= (uintptr_t)rows[kv] % 16 == 0 && (p.src_st[kv] * sb) % 16 == 0 &&
               (p.src_sh[kv] * sb) % 16 == 0;
        vec &= (uintptr_t)caches[kv] % 8 == 0 && (p.cache_sb[kv] * cb) % 8 == 0 &&
               (p.cache_st[kv] * cb) % 8 == 0 && (p.cache_sh[kv] * cb) % 8 == 0;
        if (cb == 2)
            vec &= (uintptr_t)caches[kv] % 16 == 0 && (p.cache_sb[kv] * cb) % 16 == 0 &&
                   (p.cache_st[kv] * cb) % 16 == 0 && (p.cache_sh[kv] * cb) % 16 == 0;
    }
    p.slots = a->slot_mapping;
    p.num_slots = (int64_t)a->num_blocks * page;
    p.scale[0] = fp8 ? a->k_scale : 1.f;
    p.scale[1] = fp8 ? a->v_scale : 1.f;
    p.num_tokens = a->num_tokens;
    p.hkv = (int32_t)hkv;
    p.page = (int32_t)page;
    p.src_dtype = src;
    p.kv_dtype = kvd;
    p.vec = vec;
    hipStream_t stream = (hipStream_t)a->stream;
    attn_append_kernel<<<dim3((unsigned)a->num_tokens, 2), 128, 0, stream>>>(p);
    hipError_t e = hipGetLastError();
    if (e != hipSuccess) {
        attn_set_err(err, err_size, "append: %s: kernel launch failed: %s", ATTN_PLATFORM_NAME,
                   hipGetErrorString(e));
        return ATTN_ERR_RUNTIME;
    }
    return ATTN_OK;
}

/* ---- merging two partial states -------------------------------------- */

typedef struct attn_merge_kparams {
    const void *a, *b;
    void *out;
    const float *lse_a, *lse_b;
    float *lse_out;
    int64_t st, sh, lt, lh;
    int32_t heads, dim, dtype, vec;
} attn_merge_kparams;

/* One block per token; the token's (lse_a, lse_b) pairs are read into
 * shared memory before any lse_out is written (lse_out may be lse_a or
 * lse_b), then each thread merges 8 elements of a row: out may be a or b,
 * every element is read from both sides before it is written. Float math
 * as attn_merge_states on the host (expf, logf). */
__global__ void __launch_bounds__(128) attn_merge_kernel(const attn_merge_kparams p)
{
    /* [heads][2]: the weights of a and b, then [heads]: the merged lse */
    extern __shared__ float wts[];
    const int64_t t = blockIdx.x;
    for (int h = threadIdx.x; h < p.heads; h += blockDim.x) {
        const int64_t at = t * p.lt + h * p.lh;
        const float la = p.lse_a[at], lb = p.lse_b[at];
        const float m = la > lb ? la : lb;
        const float wa = la == -INFINITY ? 0.f : expf(la - m);
        const float wb = lb == -INFINITY ? 0.f : expf(lb - m);
        const float sum = wa + wb;
        wts[2 * h] = sum > 0.f ? wa / sum : 0.f;
        wts[2 * h + 1] = sum > 0.f ? wb / sum : 0.f;
        /* lse_out is written after the barrier: it may be lse_a or lse_b */
        wts[2 * p.heads + h] = sum > 0.f ? m + logf(sum) : -INFINITY;
    }
    __syncthreads();
    if (p.lse_out)
        for (int h = threadIdx.x; h < p.heads; h += blockDim.x)
            p.lse_out[t * p.lt + h * p.lh] = wts[2 * p.heads + h];
    const int per = p.dim / 8;
    for (int c = threadIdx.x; c < p.heads * per; c += blockDim.x) {
        const int h = c / per;
        const int64_t i = t * p.st + h * p.sh + (int64_t)(c % per) * 8;
        float xa[8], xb[8], xo[8];
        load8_f32(p.a, i, p.dtype, p.vec, xa);
        load8_f32(p.b, i, p.dtype, p.vec, xb);
        const float fa = wts[2 * h], fb = wts[2 * h + 1];
#pragma unroll
        for (int k = 0; k < 8; k++)
            xo[k] = xa[k] * fa + xb[k] * fb;
        store8(p.out, i, p.dtype, p.vec, xo);
    }
}

/* The arguments were checked by the host (attn_merge_check, as
 * attn_merge_states checks them); here only what the GPU adds. */
extern "C" attn_status gpu_attn_merge_states(gpu_attn_ctx *ctx, const struct attn_merge_args *m,
                                             void *stream, char *err, size_t err_size)
{
    (void)ctx;
    if (!m) {
        attn_set_err(err, err_size, "merge_states: NULL args");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    if (m->num_tokens == 0)
        return ATTN_OK; /* no grid of zero blocks */
    if (m->head_dim % 8) {
        attn_set_err(err, err_size, "merge_states: head_dim %d: multiples of 8 only on the GPU",
                   (int)m->head_dim);
        return ATTN_ERR_UNSUPPORTED;
    }
    attn_merge_kparams p;
    memset(&p, 0, sizeof p);
    p.a = m->a;
    p.b = m->b;
    p.out = m->out;
    p.lse_a = m->lse_a;
    p.lse_b = m->lse_b;
    p.lse_out = m->lse_out;
    p.sh = m->stride_head ? m->stride_head : m->head_dim;
    p.st = m->stride_token ? m->stride_token : (int64_t)m->num_heads * m->head_dim;
    p.lh = m->lse_stride_head ? m->lse_stride_head : 1;
    p.lt = m->lse_stride_token ? m->lse_stride_token : m->num_heads;
    p.heads = m->num_heads;
    p.dim = m->head_dim;
    p.dtype = m->dtype;
    const int64_t eb = (int64_t)attn_dtype_size(m->dtype);
    p.vec = (uintptr_t)m->a % 16 == 0 && (uintptr_t)m->b % 16 == 0 && (uintptr_t)m->out % 16 == 0 &&
            (p.st * eb) % 16 == 0 && (p.sh * eb) % 16 == 0;
    const size_t smem = (size_t)m->num_heads * 3 * sizeof(float);
    if (smem > 48 * 1024) {
        attn_set_err(err, err_size, "merge_states: %d heads: at most %d on the GPU",
                   (int)m->num_heads, (int)(48 * 1024 / (3 * sizeof(float))));
        return ATTN_ERR_UNSUPPORTED;
    }
    attn_merge_kernel<<<(unsigned)m->num_tokens, 128, smem, (hipStream_t)stream>>>(p);
    hipError_t e = hipGetLastError();
    if (e != hipSuccess) {
        attn_set_err(err, err_size, "merge_states: %s: kernel launch failed: %s",
                   ATTN_PLATFORM_NAME, hipGetErrorString(e));
        return ATTN_ERR_RUNTIME;
    }
    return ATTN_OK;
}
