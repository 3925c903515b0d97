/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_ref_kernel_impl.h — the cpu-ref compute kernels, written once with
 * GCC/Clang vector extensions and compiled per ISA. The including file
 * defines CPU_REF_KERNELS_NAME (the cpu_ref_kernels object to emit) and
 * CPU_REF_KERNELS_LABEL (its name string) and sets the target flags.
 *
 * Layout. A work item has R rows (query token x query head), laid out KV
 * head by KV head and padded to whole vectors. Both products keep a long
 * dimension in the SIMD lanes and use plain vector loads for most operands:
 *   scores[j][r] = sum_d Q[r][d] K[j][d]   dot products along d, 4 rows x 2
 *                                           keys at a time, lane sums reduced
 *                                           together at the end
 *   acc[r][dv]  += P[j][r] V[j][dv]         dv in the lanes, 4 rows x 16 dv
 *                                           at a time, P broadcast
 * The online softmax works on the scores tile [key][row] with rows in the
 * lanes (row max, rescale factors, row sums are lane-wise arithmetic).
 *
 * Numerics: K and V tiles are decoded exactly to float (fp8 and f16/bf16 are
 * subsets of float); dot products and the softmax run in float; the descales
 * are applied once per score (K) and once per output row (V), so the products
 * themselves use the exact stored values.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attn_dtype_conv.h"
#include "cpu_ref_kernel.h"

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#define CPU_REF_USE_F16C 1
#endif

typedef float vf __attribute__((vector_size(32)));
typedef int32_t vi __attribute__((vector_size(32)));
typedef uint32_t vu __attribute__((vector_size(32)));
typedef uint16_t vh __attribute__((vector_size(16)));
typedef uint8_t vb __attribute__((vector_size(8)));

static inline vf splat(float x)
{
    return (vf){x, x, x, x, x, x, x, x};
}

static inline vi splat_i(int32_t x)
{
    return (vi){x, x, x, x, x, x, x, x};
}

static inline vu splat_u(uint32_t x)
{
    return (vu){x, x, x, x, x, x, x, x};
}

/* Lane-wise `mask ? a : b` (C has no vector conditional operator). */
static inline vf select_f(vi mask, vf a, vf b)
{
    return (vf)(((vi)a & mask) | ((vi)b & ~mask));
}

static inline vu select_u(vi mask, vu a, vu b)
{
    return (vu)(((vi)a & mask) | ((vi)b & ~mask));
}

static inline vf max_f(vf a, vf b)
{
    return select_f(a > b, a, b);
}

static inline vf load_f(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void store_f(float *p, vf v)
{
    memcpy(p, &v, sizeof v);
}

/* exp(x) to about 2 ulp (Cephes' expf polynomial after a Cody-Waite range
 * reduction). exp(-inf) and anything below -87.33 give 0, NaN stays NaN. */
static inline vf exp_f(vf x)
{
    const vf max_in = splat(88.3762626647949f);
    const vf min_in = splat(-87.3365447504f);
    vi underflow = x < min_in;
    x = select_f(x > max_in, max_in, x);
    x = select_f(underflow, min_in, x);
    /* n = round(x / ln 2), by adding 1.5 * 2^23: the low bits then hold n. */
    const vf magic = splat(12582912.0f);
    vf t = x * splat(1.44269504088896341f) + magic;
    vf n = t - magic;
    vi n_int = (vi)t - (vi)magic;
    vf r = x - n * splat(0.693359375f);
    r = r - n * splat(-2.12194440e-4f);
    vf y = splat(1.9875691500e-4f);
    y = y * r + splat(1.3981999507e-3f);
    y = y * r + splat(8.3334519073e-3f);
    y = y * r + splat(4.1665795894e-2f);
    y = y * r + splat(1.6666665459e-1f);
    y = y * r + splat(5.0000001201e-1f);
    y = y * (r * r) + r + splat(1.0f);
    vf pow2n = (vf)((n_int + splat_i(127)) << 23);
    return select_f(underflow, splat(0.0f), y * pow2n);
}

/* ---- decoding rows of K/V to float ------------------------------------ */

#define CPU_REF_INLINE static inline __attribute__((always_inline))

CPU_REF_INLINE void decode_row_bf16(const uint16_t *src, float *dst, int32_t n)
{
    int32_t i = 0;
#ifdef CPU_REF_USE_F16C
    /* bf16 is the top half of a float: widen and shift, 8 at a time. */
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
    }
#else
    for (; i + 8 <= n; i += 8) {
        vh h;
        memcpy(&h, src + i, sizeof h);
        vu w = __builtin_convertvector(h, vu) << 16;
        store_f(dst + i, (vf)w);
    }
#endif
    for (; i < n; i++)
        dst[i] = attn_conv_bf16_to_f32(src[i]);
}

CPU_REF_INLINE void decode_row_f16(const uint16_t *src, float *dst, int32_t n)
{
    int32_t i = 0;
#ifdef CPU_REF_USE_F16C
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
#else
    for (; i + 8 <= n; i += 8) {
        vh raw;
        memcpy(&raw, src + i, sizeof raw);
        vu h = __builtin_convertvector(raw, vu);
        vu sign = (h & 0x8000u) << 16;
        vu exponent = (h >> 10) & 0x1Fu;
        vu mantissa = h & 0x3FFu;
        vu normal = sign | ((exponent + 112u) << 23) | (mantissa << 13);
        vu special = sign | splat_u(0x7F800000u) | (mantissa << 13);
        vf sub = __builtin_convertvector((vi)mantissa, vf) * splat(0x1p-24f);
        vu subnormal = (vu)sub | sign;
        vu bits = select_u((vi)(exponent == 0u), subnormal, normal);
        bits = select_u((vi)(exponent == 31u), special, bits);
        store_f(dst + i, (vf)bits);
    }
#endif
    for (; i < n; i++)
        dst[i] = attn_conv_f16_to_f32(src[i]);
}

/* Both e4m3 variants. */
CPU_REF_INLINE void decode_row_fp8(const uint8_t *src, float *dst, int32_t n, int nuz)
{
    int32_t i = 0;
#ifdef CPU_REF_USE_F16C
    /* An e4m3 code placed in the top of an f16 (sign at bit 15, exponent and
     * mantissa at bits 7..13) is an f16 whose value is the fp8 value times
     * 2^-(15 - bias), subnormals included; the F16C converter widens it
     * exactly and one multiply by a power of two restores the value. NaN
     * codes are made f16 NaNs first. 16 codes at a time. */
    const __m256i magnitude_mask = _mm256_set1_epi16(0x7F);
    const __m256i sign_mask = _mm256_set1_epi16(0x80);
    const __m256i nan_code = nuz ? sign_mask : magnitude_mask;
    const __m256 rescale = _mm256_set1_ps(nuz ? 0x1p7f : 0x1p8f);
    for (; i + 16 <= n; i += 16) {
        __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(src + i)));
        __m256i magnitude = _mm256_and_si256(b, magnitude_mask);
        __m256i h = _mm256_or_si256(_mm256_slli_epi16(magnitude, 7),
                                    _mm256_slli_epi16(_mm256_and_si256(b, sign_mask), 8));
        __m256i is_nan = _mm256_cmpeq_epi16(nuz ? b : magnitude, nan_code);
        h = _mm256_or_si256(h, is_nan); /* all ones: an f16 NaN */
        __m256 lo = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
        __m256 hi = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
        _mm256_storeu_ps(dst + i, _mm256_mul_ps(lo, rescale));
        _mm256_storeu_ps(dst + i + 8, _mm256_mul_ps(hi, rescale));
    }
#else
    const uint32_t bias = nuz ? 8u : 7u;
    const float sub_unit = nuz ? 0x1p-10f : 0x1p-9f;
    for (; i + 8 <= n; i += 8) {
        vb raw;
        memcpy(&raw, src + i, sizeof raw);
        vu b = __builtin_convertvector(raw, vu);
        vu magnitude = b & 0x7Fu;
        vu sign = (b & 0x80u) << 24;
        vu exponent = magnitude >> 3;
        vu normal = (magnitude << 20) + splat_u((127u - bias) << 23);
        vf sub = __builtin_convertvector((vi)(magnitude & 7u), vf) * splat(sub_unit);
        vu bits = select_u((vi)(exponent == 0u), (vu)sub, normal) | sign;
        vi is_nan = nuz ? (vi)(b == 0x80u) : (vi)(magnitude == 0x7Fu);
        bits = select_u(is_nan, sign | 0x7FC00000u, bits);
        store_f(dst + i, (vf)bits);
    }
#endif
    for (; i < n; i++)
        dst[i] = nuz ? attn_conv_fp8_e4m3fnuz_to_f32(src[i]) : attn_conv_fp8_e4m3fn_to_f32(src[i]);
}

CPU_REF_INLINE void decode_row(int32_t dtype, const void *src, float *dst, int32_t n)
{
    switch (dtype) {
    case ATTN_DTYPE_F32:
        memcpy(dst, src, (size_t)n * sizeof(float));
        break;
    case ATTN_DTYPE_BF16:
        decode_row_bf16(src, dst, n);
        break;
    case ATTN_DTYPE_F16:
        decode_row_f16(src, dst, n);
        break;
    case ATTN_DTYPE_FP8_E4M3FN:
        decode_row_fp8(src, dst, n, 0);
        break;
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        decode_row_fp8(src, dst, n, 1);
        break;
    default:
        memset(dst, 0, (size_t)n * sizeof(float));
        break;
    }
}

/* The first element of key `offset` of cache block `block`, KV head `kv_head`. */
static inline const char *cache_row(const cpu_ref_cache *cache, int32_t block, int32_t offset,
                                    int32_t kv_head, size_t elem)
{
    return (const char *)cache->base +
           (size_t)((int64_t)block * cache->stride_block + (int64_t)offset * cache->stride_token +
                    (int64_t)kv_head * cache->stride_head) *
               elem;
}

/* One loop per element type, so the row decoder is inlined into it. */
#define CPU_REF_DECODE_KEYS(DECODE)                                                                \
    for (int32_t j = 0; j < count; j++) {                                                          \
        const char *src = cache_row(cache, block_row[page], offset, kv_head, elem);                \
        for (int32_t k = 0; k < num_kv; k++) {                                                     \
            float *dst = tile + k * head_stride + (size_t)j * row_len_padded;                      \
            DECODE;                                                                                \
            for (int32_t t = row_len; t < row_len_padded; t++)                                     \
                dst[t] = 0.0f;                                                                     \
            src += (size_t)cache->stride_head * elem;                                              \
        }                                                                                          \
        if (++offset == p->page_size) {                                                            \
            offset = 0;                                                                            \
            page++;                                                                                \
        }                                                                                          \
    }

/* Decodes keys [first, first + count) of KV heads [kv_head, kv_head +
 * num_kv) of one sequence into per-head tiles: head k's key j lands at
 * tile + (k * TILE_KEYS + j) * row_len_padded. In the contiguous layout the
 * heads of one cached token are adjacent, so each key is one contiguous
 * read; other layouts are read through the cache's strides. The tail of each row
 * (up to row_len_padded) and the keys up to count_padded are zeroed so that
 * padded lanes contribute exact zeros, never NaN. */
static void decode_tile(const cpu_ref_problem *p, const cpu_ref_cache *cache, int32_t row_len,
                        int32_t row_len_padded, const int32_t *block_row, int32_t kv_head,
                        int32_t num_kv, int32_t first, int32_t count, int32_t count_padded,
                        float *tile)
{
    const size_t elem = attn_conv_dtype_size(p->kv_dtype);
    const size_t head_stride = (size_t)CPU_REF_TILE_KEYS * row_len_padded;
    int32_t page = first / p->page_size;
    int32_t offset = first % p->page_size;
    switch (p->kv_dtype) {
    case ATTN_DTYPE_BF16:
        CPU_REF_DECODE_KEYS(decode_row_bf16((const uint16_t *)src, dst, row_len))
        break;
    case ATTN_DTYPE_F16:
        CPU_REF_DECODE_KEYS(decode_row_f16((const uint16_t *)src, dst, row_len))
        break;
    case ATTN_DTYPE_FP8_E4M3FN:
        CPU_REF_DECODE_KEYS(decode_row_fp8((const uint8_t *)src, dst, row_len, 0))
        break;
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        CPU_REF_DECODE_KEYS(decode_row_fp8((const uint8_t *)src, dst, row_len, 1))
        break;
    default:
        CPU_REF_DECODE_KEYS(decode_row(p->kv_dtype, src, dst, row_len))
        break;
    }
    if (count_padded > count)
        for (int32_t k = 0; k < num_kv; k++)
            memset(tile + k * head_stride + (size_t)count * row_len_padded, 0,
                   (size_t)(count_padded - count) * row_len_padded * sizeof(float));
}
#undef CPU_REF_DECODE_KEYS

/* Asks the memory system for keys [first, first + count) of KV heads
 * [kv_head, kv_head + num_kv) ahead of their use. Pages come in any order,
 * so at every page boundary the hardware prefetchers would have to start
 * over; fetching the next tile a few keys at a time during the current
 * tile's arithmetic keeps the loads in flight without overflowing the few
 * outstanding misses a core can track. */
static void prefetch_keys(const cpu_ref_problem *p, const cpu_ref_cache *cache, int32_t row_len,
                          const int32_t *block_row, int32_t kv_head, int32_t num_kv, int32_t first,
                          int32_t count)
{
    const size_t elem = attn_conv_dtype_size(p->kv_dtype);
    /* Adjacent heads (the contiguous and NHD layouts) are one range; other
     * layouts (HND) one range per head. */
    const int adjacent = cache->stride_head == row_len;
    const size_t bytes = (size_t)(adjacent ? num_kv : 1) * row_len * elem;
    const int32_t ranges = adjacent ? 1 : num_kv;
    int32_t page = first / p->page_size;
    int32_t offset = first % p->page_size;
    for (int32_t j = 0; j < count; j++) {
        for (int32_t r = 0; r < ranges; r++) {
            const char *src = cache_row(cache, block_row[page], offset, kv_head + r, elem);
            for (size_t line = 0; line < bytes; line += 64)
                __builtin_prefetch(src + line, 0, 3);
            __builtin_prefetch(src + bytes - 1, 0, 3);
        }
        if (++offset == p->page_size) {
            offset = 0;
            page++;
        }
    }
}

/* ---- the two products ------------------------------------------------- */

/* The 8 lane sums of 8 vectors, in order: [sum a0, sum a1, ..., sum a7]
 * (a transpose-and-add in three shuffle levels). */
CPU_REF_INLINE vf sum_lanes8(vf a0, vf a1, vf a2, vf a3, vf a4, vf a5, vf a6, vf a7)
{
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 12)
    vf t0 = __builtin_shufflevector(a0, a1, 0, 8, 2, 10, 4, 12, 6, 14) +
            __builtin_shufflevector(a0, a1, 1, 9, 3, 11, 5, 13, 7, 15);
    vf t1 = __builtin_shufflevector(a2, a3, 0, 8, 2, 10, 4, 12, 6, 14) +
            __builtin_shufflevector(a2, a3, 1, 9, 3, 11, 5, 13, 7, 15);
    vf t2 = __builtin_shufflevector(a4, a5, 0, 8, 2, 10, 4, 12, 6, 14) +
            __builtin_shufflevector(a4, a5, 1, 9, 3, 11, 5, 13, 7, 15);
    vf t3 = __builtin_shufflevector(a6, a7, 0, 8, 2, 10, 4, 12, 6, 14) +
            __builtin_shufflevector(a6, a7, 1, 9, 3, 11, 5, 13, 7, 15);
    vf u0 = __builtin_shufflevector(t0, t1, 0, 1, 8, 9, 4, 5, 12, 13) +
            __builtin_shufflevector(t0, t1, 2, 3, 10, 11, 6, 7, 14, 15);
    vf u1 = __builtin_shufflevector(t2, t3, 0, 1, 8, 9, 4, 5, 12, 13) +
            __builtin_shufflevector(t2, t3, 2, 3, 10, 11, 6, 7, 14, 15);
    return __builtin_shufflevector(u0, u1, 0, 1, 2, 3, 8, 9, 10, 11) +
           __builtin_shufflevector(u0, u1, 4, 5, 6, 7, 12, 13, 14, 15);
#else /* compilers without __builtin_shufflevector: plain sums */
    const vf in[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
    vf out;
    for (int i = 0; i < 8; i++) {
        float s = 0.0f;
        for (int l = 0; l < 8; l++)
            s += in[i][l];
        out[i] = s;
    }
    return out;
#endif
}

/* scores[j][r] = sum_d q_rows[r][d] * k_tile[j][d] for rows [row_begin,
 * row_end) (a multiple of 4 apart) and keys [0, keys) (even). Dot products
 * run along d in the lanes, 4 rows x 2 keys at a time: 6 vector loads feed 8
 * FMAs, and the 8 lane sums are reduced together at the end. head_dim_p is
 * the padded row length (a multiple of 8, zero-filled). */
static void scores_block(const float *q_rows, const float *k_tile, float *scores,
                         int32_t head_dim_p, int32_t row_stride, int32_t row_begin, int32_t row_end,
                         int32_t keys)
{
    const size_t rs = (size_t)row_stride, dp = (size_t)head_dim_p;
    for (int32_t r = row_begin; r < row_end; r += 4) {
        const float *q0 = q_rows + (size_t)r * dp, *q1 = q0 + dp, *q2 = q1 + dp, *q3 = q2 + dp;
        for (int32_t j = 0; j < keys; j += 2) {
            const float *k0 = k_tile + (size_t)j * dp, *k1 = k0 + dp;
            vf a00 = splat(0), a01 = splat(0), a10 = splat(0), a11 = splat(0);
            vf a20 = splat(0), a21 = splat(0), a30 = splat(0), a31 = splat(0);
            for (size_t d = 0; d < dp; d += 8) {
                vf kv0 = load_f(k0 + d), kv1 = load_f(k1 + d);
                vf qv = load_f(q0 + d);
                a00 += qv * kv0;
                a01 += qv * kv1;
                qv = load_f(q1 + d);
                a10 += qv * kv0;
                a11 += qv * kv1;
                qv = load_f(q2 + d);
                a20 += qv * kv0;
                a21 += qv * kv1;
                qv = load_f(q3 + d);
                a30 += qv * kv0;
                a31 += qv * kv1;
            }
            vf sums = sum_lanes8(a00, a01, a10, a11, a20, a21, a30, a31);
            float *s0 = scores + (size_t)j * rs + r, *s1 = s0 + rs;
            s0[0] = sums[0];
            s1[0] = sums[1];
            s0[1] = sums[2];
            s1[1] = sums[3];
            s0[2] = sums[4];
            s1[2] = sums[5];
            s0[3] = sums[6];
            s1[3] = sums[7];
        }
    }
}

/* acc[r][dv] += sum_j probs[j][r] * v_tile[j][dv] for rows [row_begin,
 * row_end) (a multiple of 4 apart): dv in the lanes, 4 rows x 2 vectors of
 * dv at a time, so 2 loads and 4 broadcasts feed 8 FMAs. */
static void accumulate_tile(const float *probs, const float *v_tile, float *acc,
                            int32_t head_dim_v_padded, int32_t row_stride, int32_t row_begin,
                            int32_t row_end, int32_t keys)
{
    const size_t rs = (size_t)row_stride, dvp = (size_t)head_dim_v_padded;
    for (int32_t r = row_begin; r < row_end; r += 4) {
        float *o0 = acc + (size_t)r * dvp, *o1 = o0 + dvp, *o2 = o1 + dvp, *o3 = o2 + dvp;
        size_t db = 0;
        for (; db + 16 <= dvp; db += 16) {
            vf a00 = load_f(o0 + db), a01 = load_f(o0 + db + 8);
            vf a10 = load_f(o1 + db), a11 = load_f(o1 + db + 8);
            vf a20 = load_f(o2 + db), a21 = load_f(o2 + db + 8);
            vf a30 = load_f(o3 + db), a31 = load_f(o3 + db + 8);
            const float *vp = v_tile + db, *pp = probs + r;
            for (int32_t j = 0; j < keys; j++, vp += dvp, pp += rs) {
                vf v0 = load_f(vp), v1 = load_f(vp + 8);
                vf p = splat(pp[0]);
                a00 += p * v0;
                a01 += p * v1;
                p = splat(pp[1]);
                a10 += p * v0;
                a11 += p * v1;
                p = splat(pp[2]);
                a20 += p * v0;
                a21 += p * v1;
                p = splat(pp[3]);
                a30 += p * v0;
                a31 += p * v1;
            }
            store_f(o0 + db, a00);
            store_f(o0 + db + 8, a01);
            store_f(o1 + db, a10);
            store_f(o1 + db + 8, a11);
            store_f(o2 + db, a20);
            store_f(o2 + db + 8, a21);
            store_f(o3 + db, a30);
            store_f(o3 + db + 8, a31);
        }
        if (db < dvp) { /* one vector of dv left */
            vf a0 = load_f(o0 + db), a1 = load_f(o1 + db);
            vf a2 = load_f(o2 + db), a3 = load_f(o3 + db);
            const float *vp = v_tile + db, *pp = probs + r;
            for (int32_t j = 0; j < keys; j++, vp += dvp, pp += rs) {
                vf v = load_f(vp);
                a0 += splat(pp[0]) * v;
                a1 += splat(pp[1]) * v;
                a2 += splat(pp[2]) * v;
                a3 += splat(pp[3]) * v;
            }
            store_f(o0 + db, a0);
            store_f(o1 + db, a1);
            store_f(o2 + db, a2);
            store_f(o3 + db, a3);
        }
    }
}

/* ---- output ----------------------------------------------------------- */

/* Writes one output row from its unnormalised accumulator `acc` (head_dim_v
 * floats), running max `m` and sum `l`, folding in the head's sink logit. A
 * row that saw no key and has no sink (l == 0) is written as zeros. When
 * asked, the row's log-sum-exp: ln of the softmax denominator in the
 * scores' own units (m + ln l, the sink included), -inf for an empty one. */
static void write_output_row(const cpu_ref_problem *p, int64_t token, int32_t head, float m,
                             float l, const float *acc)
{
    float factor = 0.0f, lse = -INFINITY;
    if (p->sinks) {
        float sink = p->sinks[head];
        float new_max = m > sink ? m : sink;
        float shift = new_max == -INFINITY ? 0.0f : new_max;
        float keep = m == -INFINITY ? 0.0f : expf(m - shift);
        float denom = l * keep + expf(sink - shift);
        if (denom > 0.0f) {
            factor = keep * p->v_scale / denom;
            lse = shift + logf(denom);
        }
    } else if (l > 0.0f) {
        factor = p->v_scale / l;
        lse = m + logf(l);
    }
    if (p->lse)
        p->lse[token * p->lse_stride_token + (int64_t)head * p->lse_stride_head] = lse;
    size_t base = (size_t)(token * p->out_stride_token + (int64_t)head * p->out_stride_head);
    for (int32_t dv = 0; dv < p->head_dim_v; dv++)
        attn_conv_store_f32(p->out_dtype, p->out, (int64_t)base + dv, acc[dv] * factor);
}

/* ---- one work unit ------------------------------------------------------ */

/* Row r of an item (rows laid out KV head by KV head, each padded to
 * rows_per_kv_head) belongs to KV head r / rows_per_kv_head; within it, row
 * w = r % rows_per_kv_head is token w / num_heads, query head w % num_heads.
 * Rows with w >= num_tokens * num_heads are padding. */
static inline int row_is_real(const cpu_ref_item *it, int32_t r)
{
    return r % it->rows_per_kv_head < it->num_tokens * it->num_heads;
}

static inline int64_t row_token(const cpu_ref_problem *p, const cpu_ref_item *it, int32_t r)
{
    int32_t w = r % it->rows_per_kv_head;
    return (int64_t)p->cu_seqlens_q[it->seq] + it->first_token + w / it->num_heads;
}

static inline int32_t row_head(const cpu_ref_problem *p, const cpu_ref_item *it, int32_t r)
{
    int32_t kv = it->first_kv_head + r / it->rows_per_kv_head;
    int32_t w = r % it->rows_per_kv_head;
    return kv * p->group + it->head_offset + w % it->num_heads;
}

static void attend(const cpu_ref_problem *p, int64_t work, void *scratch)
{
    const int64_t base_item = work / p->splits;
    const int32_t split = (int32_t)(work % p->splits);
    const cpu_ref_item it = cpu_ref_item_at(p, base_item);
    const int32_t rph = it.rows_per_kv_head;
    const int32_t real_rows = it.num_tokens * it.num_heads; /* per KV head */
    const int32_t rows_padded = it.num_kv_heads * rph;      /* row stride of every array */
    const int32_t d = p->head_dim, dp = cpu_ref_round_lanes(d), dvp = p->head_dim_v_padded;
    const cpu_ref_scratch_layout lay = cpu_ref_scratch_plan(d, p->head_dim_v, p->rows_max);
    char *base = scratch;
    float *q_rows = (float *)(base + lay.q_rows);
    float *scores = (float *)(base + lay.scores);
    float *acc = (float *)(base + lay.acc);
    float *k_tile = (float *)(base + lay.k_tile);
    float *v_tile = (float *)(base + lay.v_tile);
    float *row_max = (float *)(base + lay.row_max);
    float *row_sum = (float *)(base + lay.row_sum);
    int32_t *row_lo = (int32_t *)(base + lay.row_lo);
    int32_t *row_hi = (int32_t *)(base + lay.row_hi);
    float *row_alpha = (float *)(base + lay.row_alpha);

    /* The key range this split covers. */
    int32_t chunk_begin = 0, chunk_end = it.kv_len;
    if (p->splits > 1) {
        int64_t chunk = ((int64_t)it.kv_len + p->splits - 1) / p->splits;
        chunk = (chunk + CPU_REF_TILE_KEYS - 1) / CPU_REF_TILE_KEYS * CPU_REF_TILE_KEYS;
        int64_t b = chunk * split, e = b + chunk;
        chunk_begin = (int32_t)(b < it.kv_len ? b : it.kv_len);
        chunk_end = (int32_t)(e < it.kv_len ? e : it.kv_len);
    }

    /* Visible keys per row, clipped to the chunk: query t sits at position
     * kv_len - q_len + t. Padding rows copy their KV head's last real row so
     * they never widen the range or force masking. */
    int32_t range_begin = INT32_MAX, range_end = INT32_MIN; /* union, [begin, end) */
    int32_t all_lo = INT32_MIN, all_hi = INT32_MAX;         /* intersection bounds */
    for (int32_t r = 0; r < rows_padded; r++) {
        int32_t w = r % rph;
        int32_t token = (w < real_rows ? w : real_rows - 1) / it.num_heads;
        int64_t pos = (int64_t)it.kv_len - it.q_len + it.first_token + token;
        int64_t lo = chunk_begin, hi = (int64_t)chunk_end - 1;
        if (p->causal && pos < hi)
            hi = pos;
        if (p->window_right >= 0 && pos + p->window_right < hi)
            hi = pos + p->window_right;
        if (p->window_left >= 0 && pos - p->window_left > lo)
            lo = pos - p->window_left;
        if (hi < lo - 1)
            hi = lo - 1; /* empty; keep the bounds within int32 */
        row_lo[r] = (int32_t)lo;
        row_hi[r] = (int32_t)hi;
        if (lo <= hi) {
            if (lo < range_begin)
                range_begin = (int32_t)lo;
            if (hi + 1 > range_end)
                range_end = (int32_t)(hi + 1);
        }
        if (lo > all_lo)
            all_lo = (int32_t)lo;
        if (hi < all_hi)
            all_hi = (int32_t)hi;
    }

    for (int32_t r = 0; r < rows_padded; r++) {
        row_max[r] = -INFINITY;
        row_sum[r] = 0.0f;
    }
    memset(acc, 0, (size_t)dvp * rows_padded * sizeof(float));

    if (range_begin < range_end) {
        /* Q rows, decoded (and for fp8 compute quantised) once, padded
         * with zeros to a whole number of vectors. */
        const size_t q_elem = attn_conv_dtype_size(p->q_dtype);
        for (int32_t r = 0; r < rows_padded; r++) {
            float *q = q_rows + (size_t)r * dp;
            if (!row_is_real(&it, r)) {
                memset(q, 0, (size_t)dp * sizeof(float));
                continue;
            }
            int64_t at = row_token(p, &it, r) * p->q_stride_token +
                         (int64_t)row_head(p, &it, r) * p->q_stride_head;
            decode_row(p->q_dtype, (const char *)p->q + (size_t)at * q_elem, q, d);
            if (p->q_quant_dtype)
                for (int32_t i = 0; i < d; i++)
                    q[i] = attn_conv_round_to(p->q_quant_dtype, q[i] / p->q_descale);
            for (int32_t i = d; i < dp; i++)
                q[i] = 0.0f;
        }

        const int32_t *block_row = p->block_table + (size_t)it.seq * p->block_table_stride;
        const vf score_scale = splat(p->score_scale);
        for (int32_t j0 = range_begin; j0 < range_end; j0 += CPU_REF_TILE_KEYS) {
            int32_t nk = range_end - j0 < CPU_REF_TILE_KEYS ? range_end - j0 : CPU_REF_TILE_KEYS;
            int32_t nkp = cpu_ref_round_lanes(nk);
            /* The next tile is fetched during this tile's scores, a few keys
             * per step of 8 keys x 1 KV head: K's keys first, then V's. */
            const int32_t next = j0 + CPU_REF_TILE_KEYS;
            const int32_t next_count = next >= range_end                      ? 0
                                       : range_end - next < CPU_REF_TILE_KEYS ? range_end - next
                                                                              : CPU_REF_TILE_KEYS;
            const int32_t steps = it.num_kv_heads * (nkp / 8);
            const int32_t per_step = (2 * next_count + steps - 1) / steps;
            int32_t fetched = 0;
            /* One KV head at a time, so the decoded tile stays in the L1
             * cache; the heads of a cached token are adjacent, so together
             * they still read each page front to back. */
            for (int32_t k = 0; k < it.num_kv_heads; k++) {
                decode_tile(p, &p->k_cache, d, dp, block_row, it.first_kv_head + k, 1, j0, nk, nkp,
                            k_tile);
                for (int32_t jb = 0; jb < nkp; jb += 8) {
                    for (int32_t f = 0; f < per_step && fetched < 2 * next_count; f++, fetched++) {
                        int k_side = fetched < next_count;
                        prefetch_keys(p, k_side ? &p->k_cache : &p->v_cache,
                                      k_side ? d : p->head_dim_v, block_row, it.first_kv_head,
                                      it.num_kv_heads,
                                      next + (k_side ? fetched : fetched - next_count), 1);
                    }
                    scores_block(q_rows, k_tile + (size_t)jb * dp,
                                 scores + (size_t)jb * rows_padded, dp, rows_padded, k * rph,
                                 (k + 1) * rph, 8);
                }
            }

            /* Scale, cap, then mask (capping after masking would turn -inf
             * into -softcap). Masking is skipped when every row sees every
             * key of the (padded) tile. */
            int need_mask = j0 < all_lo || j0 + nkp - 1 > all_hi;
            for (int32_t j = 0; j < nkp; j++) {
                float *s = scores + (size_t)j * rows_padded;
                for (int32_t rv = 0; rv < rows_padded; rv += CPU_REF_LANES)
                    store_f(s + rv, load_f(s + rv) * score_scale);
                if (p->softcap > 0.0f) {
                    for (int32_t r = 0; r < rows_padded; r++)
                        s[r] = p->softcap * tanhf(s[r] / p->softcap);
                }
                if (need_mask) {
                    vi key = splat_i(j0 + j);
                    for (int32_t rv = 0; rv < rows_padded; rv += CPU_REF_LANES) {
                        vi lo, hi;
                        memcpy(&lo, row_lo + rv, sizeof lo);
                        memcpy(&hi, row_hi + rv, sizeof hi);
                        vi hidden = (key < lo) | (key > hi);
                        store_f(s + rv, select_f(hidden, splat(-INFINITY), load_f(s + rv)));
                    }
                }
            }

            /* Online softmax: new running max, rescale what was summed so
             * far, exponentiate the tile in place. A row whose max is still
             * -inf (no visible key yet) uses 0 as its shift so that every
             * exp() argument is -inf and gives an exact 0 instead of NaN. */
            for (int32_t rv = 0; rv < rows_padded; rv += CPU_REF_LANES) {
                vf tile_max = load_f(scores + rv);
                for (int32_t j = 1; j < nkp; j++)
                    tile_max = max_f(tile_max, load_f(scores + (size_t)j * rows_padded + rv));
                vf old_max = load_f(row_max + rv);
                vf new_max = max_f(old_max, tile_max);
                vf shift = select_f(new_max == splat(-INFINITY), splat(0.0f), new_max);
                vf alpha = exp_f(old_max - shift);
                vf sum = splat(0.0f);
                for (int32_t j = 0; j < nkp; j++) {
                    float *s = scores + (size_t)j * rows_padded + rv;
                    vf e = exp_f(load_f(s) - shift);
                    store_f(s, e);
                    sum += e;
                }
                store_f(row_sum + rv, load_f(row_sum + rv) * alpha + sum);
                store_f(row_max + rv, new_max);
                store_f(row_alpha + rv, alpha);
            }
            /* Rescale the accumulator rows whose max moved. */
            for (int32_t r = 0; r < rows_padded; r++) {
                if (row_alpha[r] != 1.0f) {
                    float *o = acc + (size_t)r * dvp;
                    vf alpha = splat(row_alpha[r]);
                    for (int32_t dv = 0; dv < dvp; dv += CPU_REF_LANES)
                        store_f(o + dv, load_f(o + dv) * alpha);
                }
            }
            for (int32_t k = 0; k < it.num_kv_heads; k++) {
                decode_tile(p, &p->v_cache, p->head_dim_v, dvp, block_row, it.first_kv_head + k, 1,
                            j0, nk, nkp, v_tile);
                accumulate_tile(scores, v_tile, acc, dvp, rows_padded, k * rph, (k + 1) * rph, nkp);
            }
        }
    }

    if (p->splits == 1) {
        for (int32_t r = 0; r < rows_padded; r++) {
            if (!row_is_real(&it, r))
                continue;
            write_output_row(p, row_token(p, &it, r), row_head(p, &it, r), row_max[r], row_sum[r],
                             acc + (size_t)r * dvp);
        }
        return;
    }
    /* Split: keep this chunk's unnormalised state for combine(), row r of
     * the item in row r of the slot. */
    const size_t slot_floats = cpu_ref_partial_floats(p->head_dim_v, p->rows_max);
    float *slot = p->partials + (size_t)work * slot_floats;
    float *slot_max = slot + (size_t)p->rows_max * p->head_dim_v;
    float *slot_sum = slot_max + p->rows_max;
    for (int32_t r = 0; r < rows_padded; r++) {
        if (!row_is_real(&it, r))
            continue;
        for (int32_t dv = 0; dv < p->head_dim_v; dv++)
            slot[(size_t)r * p->head_dim_v + dv] = acc[(size_t)r * dvp + dv];
        slot_max[r] = row_max[r];
        slot_sum[r] = row_sum[r];
    }
}

/* Merges the chunks of one base item: rescale each chunk's sum and
 * accumulator to the common max, add them in chunk order, write the rows. */
static void combine(const cpu_ref_problem *p, int64_t base_item)
{
    const cpu_ref_item it = cpu_ref_item_at(p, base_item);
    const int32_t rows_padded = it.num_kv_heads * it.rows_per_kv_head;
    const int32_t dv_count = p->head_dim_v;
    const size_t slot_floats = cpu_ref_partial_floats(dv_count, p->rows_max);
    float *first = p->partials + (size_t)base_item * p->splits * slot_floats;
    const size_t max_at = (size_t)p->rows_max * dv_count, sum_at = max_at + p->rows_max;
    /* Slot 0's accumulator row is rewritten in place as the merged row. */
    for (int32_t r = 0; r < rows_padded; r++) {
        if (!row_is_real(&it, r))
            continue;
        float m = -INFINITY;
        for (int32_t s = 0; s < p->splits; s++) {
            float ms = first[s * slot_floats + max_at + r];
            if (ms > m)
                m = ms;
        }
        float shift = m == -INFINITY ? 0.0f : m;
        float l = 0.0f;
        float *merged = first + (size_t)r * dv_count;
        for (int32_t s = 0; s < p->splits; s++) {
            const float *slot = first + s * slot_floats;
            float ms = slot[max_at + r];
            float w = ms == -INFINITY ? 0.0f : expf(ms - shift);
            const float *acc = slot + (size_t)r * dv_count;
            l += slot[sum_at + r] * w;
            if (s == 0) {
                for (int32_t dv = 0; dv < dv_count; dv++)
                    merged[dv] = acc[dv] * w;
            } else {
                for (int32_t dv = 0; dv < dv_count; dv++)
                    merged[dv] += acc[dv] * w;
            }
        }
        write_output_row(p, row_token(p, &it, r), row_head(p, &it, r), m, l, merged);
    }
}

const cpu_ref_kernels CPU_REF_KERNELS_NAME = {
    .name = CPU_REF_KERNELS_LABEL,
    .attend = attend,
    .combine = combine,
};
