/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oracle.c — the float64 reference attention and its comparison metrics.
 * See oracle.h. Written for clarity: every step is a plain loop over the
 * definitions in BRIEF.md ("Attention semantics").
 */
#include "oracle.h"
#include "attn_tool_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- decoding from bit fields ---------------------------------------- */

/* A binary floating-point format given by its field widths: value =
 * (-1)^s x 2^(e - bias) x 1.m for e > 0, (-1)^s x 2^(1 - bias) x 0.m for
 * e = 0. The caller handles infinities and NaN codes. */
static double from_fields(uint32_t bits, int exponent_bits, int mantissa_bits, int bias)
{
    uint32_t mantissa = bits & ((1u << mantissa_bits) - 1u);
    uint32_t exponent = (bits >> mantissa_bits) & ((1u << exponent_bits) - 1u);
    int negative = (bits >> (mantissa_bits + exponent_bits)) & 1u;
    double value;
    if (exponent == 0)
        value = ldexp((double)mantissa, 1 - bias - mantissa_bits);
    else
        value =
            ldexp((double)((1u << mantissa_bits) + mantissa), (int)exponent - bias - mantissa_bits);
    return negative ? -value : value;
}

double attn_oracle_fp8_value(int32_t dtype, uint8_t code)
{
    if (dtype == ATTN_DTYPE_FP8_E4M3FN) {
        if ((code & 0x7F) == 0x7F) /* S.1111.111 */
            return NAN;
        return from_fields(code, 4, 3, 7);
    }
    if (code == 0x80) /* fnuz: the negative-zero code is the only NaN */
        return NAN;
    return from_fields(code, 4, 3, 8);
}

double attn_oracle_decode(int32_t dtype, const void *base, int64_t index)
{
    switch (dtype) {
    case ATTN_DTYPE_F32: {
        float f;
        memcpy(&f, (const char *)base + index * 4, 4);
        return f;
    }
    case ATTN_DTYPE_F16:
    case ATTN_DTYPE_BF16: {
        uint16_t h;
        memcpy(&h, (const char *)base + index * 2, 2);
        int exponent_bits = dtype == ATTN_DTYPE_F16 ? 5 : 8;
        int mantissa_bits = dtype == ATTN_DTYPE_F16 ? 10 : 7;
        uint32_t all_ones = (1u << exponent_bits) - 1u;
        if (((h >> mantissa_bits) & all_ones) == all_ones) { /* inf or NaN */
            if (h & ((1u << mantissa_bits) - 1u))
                return NAN;
            return (h & 0x8000u) ? -INFINITY : INFINITY;
        }
        return from_fields(h, exponent_bits, mantissa_bits, (int)(all_ones >> 1));
    }
    case ATTN_DTYPE_FP8_E4M3FN:
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        return attn_oracle_fp8_value(dtype, ((const uint8_t *)base)[index]);
    default:
        return NAN;
    }
}

uint8_t attn_oracle_fp8_quantize(int32_t dtype, double x)
{
    int nuz = dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
    if (isnan(x))
        return nuz ? 0x80 : 0x7F;
    int best = -1;
    double best_distance = INFINITY;
    double largest = 0;
    int largest_code = 0;
    for (int code = 0; code < 256; code++) {
        double v = attn_oracle_fp8_value(dtype, (uint8_t)code);
        if (isnan(v))
            continue;
        if (v > largest) {
            largest = v;
            largest_code = code;
        }
    }
    if (x >= largest)
        return (uint8_t)largest_code;
    if (x <= -largest)
        return (uint8_t)(largest_code | 0x80);
    for (int code = 0; code < 256; code++) {
        double v = attn_oracle_fp8_value(dtype, (uint8_t)code);
        if (isnan(v))
            continue;
        /* Prefer the zero whose sign matches x (fn has both). */
        if (v == 0.0 && (signbit(v) != signbit(x)) && !nuz)
            continue;
        double distance = fabs(v - x);
        if (distance < best_distance ||
            (distance == best_distance && (code & 1) == 0 && (best & 1) == 1)) {
            best = code;
            best_distance = distance;
        }
    }
    return (uint8_t)best;
}

/* ---- the reference forward --------------------------------------------- */

/* Element index of (block, token of the page, KV head) in the K (v = 0) or V
 * cache, by the args' strides (0 = the contiguous layout's; written out here
 * on its own so the oracle does not share the backends' stride code). */
static int64_t cache_row_index(const attn_forward_args *a, int v, int64_t block, int32_t token,
                               int32_t head, int32_t page, int32_t hkv, int32_t dim)
{
    int64_t sb = v ? a->v_stride_block : a->k_stride_block;
    int64_t st = v ? a->v_stride_token : a->k_stride_token;
    int64_t sh = v ? a->v_stride_head : a->k_stride_head;
    if (a->struct_size < offsetof(attn_forward_args, v_stride_head) + sizeof(int64_t))
        sb = st = sh = 0;
    return block * (sb ? sb : (int64_t)page * hkv * dim) + token * (st ? st : (int64_t)hkv * dim) +
           head * (sh ? sh : dim);
}

int attn_oracle_forward(const attn_shape *shape, const attn_forward_args *args, double *out,
                        char *err, size_t err_size)
{
    return attn_oracle_forward_lse(shape, args, out, NULL, err, err_size);
}

int attn_oracle_forward_lse(const attn_shape *shape, const attn_forward_args *args, double *out,
                            double *lse, char *err, size_t err_size)
{
    const int32_t hq = shape->num_q_heads;
    const int32_t hkv = shape->num_kv_heads ? shape->num_kv_heads : hq;
    const int32_t d = shape->head_dim;
    const int32_t dv = shape->head_dim_v ? shape->head_dim_v : d;
    const int32_t page = shape->page_size;
    if (hq < 1 || hkv < 1 || hq % hkv || d < 1 || dv < 1 || page < 1)
        return attn_tool_fail(err, err_size, "oracle: unusable shape");
    const int32_t group = hq / hkv;
    const int fp8_kv =
        shape->kv_dtype == ATTN_DTYPE_FP8_E4M3FN || shape->kv_dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
    const int fp8_compute = shape->compute_dtype == ATTN_DTYPE_FP8_E4M3FN ||
                            shape->compute_dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
    const double k_descale = fp8_kv ? args->k_descale : 1.0;
    const double v_descale = fp8_kv ? args->v_descale : 1.0;

    for (int32_t s = 0; s < args->num_seqs; s++) {
        const int32_t q_begin = args->cu_seqlens_q[s];
        const int32_t q_len = args->cu_seqlens_q[s + 1] - q_begin;
        const int32_t kv_len = args->seqused_k[s];
        if (q_len <= 0)
            continue;
        /* 1. Gather this sequence's keys and values from the pages. */
        double *keys = malloc(sizeof(double) * (size_t)(kv_len ? kv_len : 1) * hkv * d);
        double *values = malloc(sizeof(double) * (size_t)(kv_len ? kv_len : 1) * hkv * dv);
        double *scores = malloc(sizeof(double) * (size_t)(kv_len ? kv_len : 1));
        double *query = malloc(sizeof(double) * (size_t)d);
        if (!keys || !values || !scores || !query) {
            free(keys);
            free(values);
            free(scores);
            free(query);
            return attn_tool_fail(err, err_size, "oracle: out of memory");
        }
        for (int32_t j = 0; j < kv_len; j++) {
            int64_t block = args->block_table[(int64_t)s * args->block_table_stride + j / page];
            for (int32_t h = 0; h < hkv; h++) {
                int64_t k_row = cache_row_index(args, 0, block, j % page, h, page, hkv, d);
                int64_t v_row = cache_row_index(args, 1, block, j % page, h, page, hkv, dv);
                for (int32_t i = 0; i < d; i++)
                    keys[((int64_t)j * hkv + h) * d + i] =
                        attn_oracle_decode(shape->kv_dtype, args->k_cache, k_row + i) * k_descale;
                for (int32_t i = 0; i < dv; i++)
                    values[((int64_t)j * hkv + h) * dv + i] =
                        attn_oracle_decode(shape->kv_dtype, args->v_cache, v_row + i) * v_descale;
            }
        }
        for (int32_t t = 0; t < q_len; t++) {
            const int64_t token = q_begin + t;
            const int64_t position = (int64_t)kv_len - q_len + t;
            for (int32_t h = 0; h < hq; h++) {
                const int32_t kvh = h / group;
                /* 2. The query row, quantised for fp8 compute. */
                for (int32_t i = 0; i < d; i++) {
                    double q = attn_oracle_decode(shape->q_dtype, args->q,
                                                  token * args->q_stride_token +
                                                      (int64_t)h * args->q_stride_head + i);
                    if (fp8_compute) {
                        float quotient = (float)q / args->q_descale;
                        q = attn_oracle_fp8_value(
                                shape->compute_dtype,
                                attn_oracle_fp8_quantize(shape->compute_dtype, quotient)) *
                            (double)args->q_descale;
                    }
                    query[i] = q;
                }
                /* 3. Full score row, then the mask. */
                for (int32_t j = 0; j < kv_len; j++) {
                    int visible = 1;
                    if (shape->causal && j > position)
                        visible = 0;
                    if (shape->window_left >= 0 && j < position - shape->window_left)
                        visible = 0;
                    if (shape->window_right >= 0 && j > position + shape->window_right)
                        visible = 0;
                    if (!visible) {
                        scores[j] = -INFINITY;
                        continue;
                    }
                    double dot = 0;
                    for (int32_t i = 0; i < d; i++)
                        dot += query[i] * keys[((int64_t)j * hkv + kvh) * d + i];
                    double score = (double)args->scale * dot;
                    if (shape->softcap > 0)
                        score = shape->softcap * tanh(score / shape->softcap);
                    scores[j] = score;
                }
                /* 4. Softmax with the sink logit in the denominator. */
                double max = -INFINITY;
                for (int32_t j = 0; j < kv_len; j++)
                    if (scores[j] > max)
                        max = scores[j];
                int has_sink = shape->has_sinks && args->sinks;
                double sink = has_sink ? args->sinks[h] : -INFINITY;
                if (sink > max)
                    max = sink;
                double *o = out + (token * hq + h) * dv;
                for (int32_t i = 0; i < dv; i++)
                    o[i] = 0;
                if (lse)
                    lse[token * hq + h] = -INFINITY;
                if (max == -INFINITY)
                    continue; /* no visible key and no sink: zeros */
                double denominator = has_sink ? exp(sink - max) : 0.0;
                for (int32_t j = 0; j < kv_len; j++) {
                    if (scores[j] == -INFINITY)
                        continue;
                    double p = exp(scores[j] - max);
                    denominator += p;
                    for (int32_t i = 0; i < dv; i++)
                        o[i] += p * values[((int64_t)j * hkv + kvh) * dv + i];
                }
                for (int32_t i = 0; i < dv; i++)
                    o[i] /= denominator;
                if (lse)
                    lse[token * hq + h] = max + log(denominator);
            }
        }
        free(keys);
        free(values);
        free(scores);
        free(query);
    }
    return 0;
}

/* ---- comparison ------------------------------------------------------- */

void attn_oracle_compare(const attn_shape *shape, const attn_forward_args *args, const double *want,
                         attn_oracle_error *e)
{
    const int32_t hq = shape->num_q_heads;
    const int32_t hkv = shape->num_kv_heads ? shape->num_kv_heads : hq;
    const int32_t d = shape->head_dim;
    const int32_t dv = shape->head_dim_v ? shape->head_dim_v : d;
    (void)d;
    memset(e, 0, sizeof *e);
    e->worst_index = -1;
    /* The value scale: the largest dequantised |V| any sequence can read. */
    const int fp8_kv =
        shape->kv_dtype == ATTN_DTYPE_FP8_E4M3FN || shape->kv_dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
    for (int32_t s = 0; s < args->num_seqs; s++) {
        for (int32_t j = 0; j < args->seqused_k[s]; j++) {
            int64_t block =
                args->block_table[(int64_t)s * args->block_table_stride + j / shape->page_size];
            for (int32_t h = 0; h < hkv; h++) {
                int64_t row = cache_row_index(args, 1, block, j % shape->page_size, h,
                                              shape->page_size, hkv, dv);
                for (int32_t i = 0; i < dv; i++) {
                    double v = fabs(attn_oracle_decode(shape->kv_dtype, args->v_cache, row + i) *
                                    (fp8_kv ? args->v_descale : 1.0));
                    if (v > e->value_scale)
                        e->value_scale = v;
                }
            }
        }
    }
    double diff2 = 0, want2 = 0;
    for (int64_t t = 0; t < args->num_tokens; t++) {
        for (int32_t h = 0; h < hq; h++) {
            for (int32_t i = 0; i < dv; i++) {
                int64_t flat = (t * hq + h) * dv + i;
                double w = want[flat];
                double g = attn_oracle_decode(shape->out_dtype, args->out,
                                              t * args->out_stride_token +
                                                  (int64_t)h * args->out_stride_head + i);
                if (!isfinite(g) && isfinite(w)) {
                    /* The first non-finite element is the one reported. */
                    if (e->non_finite++ == 0) {
                        e->worst_index = flat;
                        e->worst_got = g;
                        e->worst_want = w;
                    }
                    continue;
                }
                double diff = fabs(g - w);
                diff2 += diff * diff;
                want2 += w * w;
                if (!e->non_finite && (e->worst_index < 0 || diff > e->max_abs)) {
                    e->max_abs = diff;
                    e->worst_index = flat;
                    e->worst_got = g;
                    e->worst_want = w;
                }
            }
        }
    }
    if (e->non_finite) {
        e->max_abs = INFINITY;
        e->rel_l2 = INFINITY;
    } else
        e->rel_l2 = want2 > 0 ? sqrt(diff2 / want2) : (diff2 > 0 ? INFINITY : 0.0);
}

/* Unit roundoff (half an ulp at 1) of each dtype. */
static double unit_roundoff(int32_t dtype)
{
    switch (dtype) {
    case ATTN_DTYPE_F32:
        return 0x1p-24;
    case ATTN_DTYPE_F16:
        return 0x1p-11;
    case ATTN_DTYPE_BF16:
        return 0x1p-8;
    case ATTN_DTYPE_FP8_E4M3FN:
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        return 0x1p-4;
    default:
        return 1.0;
    }
}

/* See docs/TOLERANCES.md ("attnreg verify"). A backend may round Q, K and P
 * to the compute dtype (an MMA takes operands in it) and rounds the output
 * to the out dtype; it must otherwise accumulate in float. With u_c and u_o
 * the unit roundoffs of the compute and out dtypes:
 *   max_abs <= (8 u_c + 2 u_o + 2^-14) x value_scale
 *   rel_l2  <=  2 u_c + u_o + 2^-16
 * For fp8 compute, Q is already quantised by the semantics; what a backend
 * may still round is P (to fp8 or bf16), so u_c is taken as bf16's there and
 * the P rounding to fp8 is covered by the same 8 u_c bound (2^-5). */
attn_oracle_tolerance attn_oracle_verify_tolerance(const attn_shape *shape)
{
    double uc = unit_roundoff(shape->compute_dtype);
    double uo = unit_roundoff(shape->out_dtype);
    if (shape->compute_dtype == ATTN_DTYPE_FP8_E4M3FN ||
        shape->compute_dtype == ATTN_DTYPE_FP8_E4M3FNUZ)
        uc = 0x1p-8;
    /* A bf16 or f16 KV cache read with f32 compute still has exact values;
     * an f32 compute dtype with a coarser q is likewise exact: u_c applies
     * to what the backend may round, which is never coarser than u_c. */
    attn_oracle_tolerance t;
    t.max_abs_per_scale = 8 * uc + 2 * uo + 0x1p-14;
    t.rel_l2 = 2 * uc + uo + 0x1p-16;
    return t;
}

int attn_oracle_within(const attn_oracle_error *e, const attn_oracle_tolerance *t)
{
    if (e->non_finite)
        return 0;
    double scale = e->value_scale > 0 ? e->value_scale : 1.0;
    return e->max_abs <= t->max_abs_per_scale * scale && e->rel_l2 <= t->rel_l2;
}
