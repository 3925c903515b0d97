/* SPDX-License-Identifier: Apache-2.0 */
/*
 * problem.c — random attention problems for the oracle tests and
 * `attnreg verify` (see oracle.h).
 *
 * Values are never zero (a zero input hides sign and scaling mistakes), K/V
 * pages are a random permutation of the cache blocks, and everything a
 * correct backend must not read is poisoned: the slots past a sequence's last
 * key, blocks no sequence uses (NaN), and the unused trailing entries of each
 * block-table row (an out-of-range block index).
 */
#include "oracle.h"
#include "attn_dtype_conv.h"
#include "attn_tool_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t attn_oracle_rand_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double attn_oracle_rand_uniform(uint64_t *state)
{
    return (double)(attn_oracle_rand_next(state) >> 11) * 0x1p-53;
}

int32_t attn_oracle_rand_int(uint64_t *state, int32_t lo, int32_t hi)
{
    if (hi <= lo)
        return lo;
    uint64_t span = (uint64_t)((int64_t)hi - lo + 1);
    return (int32_t)(lo + (int64_t)(attn_oracle_rand_next(state) % span));
}

/* Stores the value of dtype nearest to x (x is chosen so that this never
 * overflows). bf16/f16 codes are found by truncating the float and then
 * stepping to the nearer neighbour, which is enough for test data (the
 * exact rounding rule is the subject of other tests). */
static void store_value(int32_t dtype, void *base, int64_t index, double x)
{
    switch (dtype) {
    case ATTN_DTYPE_F32: {
        float f = (float)x;
        memcpy((char *)base + index * 4, &f, 4);
        break;
    }
    case ATTN_DTYPE_BF16: {
        float f = (float)x;
        uint32_t u;
        memcpy(&u, &f, 4);
        uint16_t h = (uint16_t)(u >> 16);
        memcpy((char *)base + index * 2, &h, 2);
        break;
    }
    case ATTN_DTYPE_F16: {
        /* |x| is within [2^-6, 2]: a normal f16; truncate the mantissa. */
        double a = fabs(x);
        int exponent;
        double m = frexp(a, &exponent); /* a = m 2^exponent, m in [0.5, 1) */
        uint32_t mantissa = (uint32_t)((m * 2 - 1) * 1024);
        uint16_t h = (uint16_t)(((uint32_t)(exponent - 1 + 15) << 10) | mantissa);
        if (x < 0)
            h |= 0x8000u;
        memcpy((char *)base + index * 2, &h, 2);
        break;
    }
    case ATTN_DTYPE_FP8_E4M3FN:
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        ((uint8_t *)base)[index] = attn_oracle_fp8_quantize(dtype, x);
        break;
    default:
        break;
    }
}

/* A NaN of the dtype, to poison what must not be read. */
static void store_nan(int32_t dtype, void *base, int64_t index)
{
    switch (dtype) {
    case ATTN_DTYPE_F32: {
        uint32_t u = 0x7FC00000u;
        memcpy((char *)base + index * 4, &u, 4);
        break;
    }
    case ATTN_DTYPE_BF16: {
        uint16_t h = 0x7FC0u;
        memcpy((char *)base + index * 2, &h, 2);
        break;
    }
    case ATTN_DTYPE_F16: {
        uint16_t h = 0x7E00u;
        memcpy((char *)base + index * 2, &h, 2);
        break;
    }
    case ATTN_DTYPE_FP8_E4M3FN:
        ((uint8_t *)base)[index] = 0x7F;
        break;
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        ((uint8_t *)base)[index] = 0x80;
        break;
    default:
        break;
    }
}

/* A random non-zero value with magnitude in [1/16, 1] and a random sign. */
static double random_value(uint64_t *rng)
{
    double magnitude = 0.0625 + 0.9375 * attn_oracle_rand_uniform(rng);
    return (attn_oracle_rand_next(rng) & 1) ? -magnitude : magnitude;
}

/* A random non-NaN, non-zero fp8 code: uniform over codes, so every
 * exponent (subnormals included) appears. */
static uint8_t random_fp8_code(int32_t dtype, uint64_t *rng)
{
    for (;;) {
        uint8_t code = (uint8_t)attn_oracle_rand_next(rng);
        double v = attn_oracle_fp8_value(dtype, code);
        if (!isnan(v) && v != 0)
            return code;
    }
}

void attn_oracle_problem_free(attn_oracle_problem *p)
{
    free(p->cu_seqlens_q);
    free(p->seqused_k);
    free(p->block_table);
    free(p->q);
    free(p->k_cache);
    free(p->v_cache);
    free(p->sinks);
    free(p->out);
    memset(p, 0, sizeof *p);
}

void attn_oracle_problem_poison_out(attn_oracle_problem *p)
{
    int64_t count = (int64_t)(p->out_bytes / attn_conv_dtype_size(p->shape.out_dtype));
    for (int64_t i = 0; i < count; i++)
        store_nan(p->shape.out_dtype, p->out, i);
}

int attn_oracle_problem_random(attn_oracle_problem *p, const attn_shape *shape_in,
                               const attn_oracle_problem_options *o, char *err, size_t err_size)
{
    memset(p, 0, sizeof *p);
    p->shape = *shape_in;
    attn_shape *s = &p->shape;
    if (!s->num_kv_heads)
        s->num_kv_heads = s->num_q_heads;
    if (!s->head_dim_v)
        s->head_dim_v = s->head_dim;
    const int32_t hq = s->num_q_heads, hkv = s->num_kv_heads, d = s->head_dim, dv = s->head_dim_v,
                  page = s->page_size;
    if (o->num_seqs < 1 || hq < 1 || hkv < 1 || hq % hkv || d < 1 || dv < 1 || page < 1 ||
        s->max_q_len < 1 || s->max_kv_len < 0 || !attn_conv_dtype_size(s->q_dtype) ||
        !attn_conv_dtype_size(s->kv_dtype) || !attn_conv_dtype_size(s->out_dtype))
        return attn_tool_fail(err, err_size, "problem: unusable shape or options");
    /* The worst case in 64 bits first (--max-kv-len, --page-size and --seqs
     * near their limits once overflowed the int32 arithmetic below): token
     * counts and block indices must fit int32, the caches a sane size. */
    {
        const int64_t pages_per_seq = ((int64_t)s->max_kv_len + page - 1) / page;
        const int64_t tokens = (int64_t)o->num_seqs * s->max_q_len;
        const int64_t blocks = (int64_t)o->num_seqs * pages_per_seq +
                               (o->extra_blocks > 0 ? o->extra_blocks : 0) +
                               (o->extra_table_columns > 0 ? o->extra_table_columns : 0) + 1000;
        const double cache_bytes = (double)blocks * page * hkv * (d > dv ? d : dv) *
                                   (double)attn_conv_dtype_size(s->kv_dtype) * 2.0;
        if (tokens > INT32_MAX || blocks > INT32_MAX || cache_bytes > ATTN_PROBLEM_MAX_BYTES)
            return -1 +
                   attn_tool_fail(err, err_size,
                                  "problem too large: %d sequences of up to %d query and %d key "
                                  "tokens (page %d) need %.3g bytes of KV cache (limit %.3g) or "
                                  "overflow 32-bit token and block counts",
                                  o->num_seqs, s->max_q_len, s->max_kv_len, page, cache_bytes,
                                  (double)ATTN_PROBLEM_MAX_BYTES);
    }
    uint64_t rng = o->seed;

    /* Lengths. Keys include the new tokens (kv_len >= q_len) unless short
     * KV is allowed. */
    p->num_seqs = o->num_seqs;
    p->cu_seqlens_q = calloc((size_t)o->num_seqs + 1, sizeof(int32_t));
    p->seqused_k = calloc((size_t)o->num_seqs, sizeof(int32_t));
    if (!p->cu_seqlens_q || !p->seqused_k)
        goto oom;
    int64_t total_pages = 0;
    int32_t widest = 1;
    for (int32_t i = 0; i < o->num_seqs; i++) {
        int32_t q_len = attn_oracle_rand_int(&rng, 1, s->max_q_len);
        if (o->allow_empty_q && attn_oracle_rand_int(&rng, 0, 7) == 0)
            q_len = 0;
        int32_t kv_min = q_len < s->max_kv_len ? q_len : s->max_kv_len;
        if (o->allow_short_kv && attn_oracle_rand_int(&rng, 0, 3) == 0)
            kv_min = 0;
        int32_t kv_len = attn_oracle_rand_int(&rng, kv_min, s->max_kv_len);
        /* Bias towards the extremes: long contexts and exact page ends. */
        if (attn_oracle_rand_int(&rng, 0, 3) == 0)
            kv_len = s->max_kv_len;
        if (kv_len < q_len && !o->allow_short_kv)
            kv_len = q_len;
        p->cu_seqlens_q[i + 1] = p->cu_seqlens_q[i] + q_len;
        p->seqused_k[i] = kv_len;
        if (q_len > p->max_seqlen_q)
            p->max_seqlen_q = q_len;
        if (kv_len > p->max_seqlen_k)
            p->max_seqlen_k = kv_len;
        int32_t pages = (int32_t)(((int64_t)kv_len + page - 1) / page);
        total_pages += pages;
        if (pages > widest)
            widest = pages;
    }
    p->num_tokens = p->cu_seqlens_q[o->num_seqs];

    /* Block table: a random permutation of all blocks; rows padded with
     * unused entries that hold an out-of-range index. */
    p->num_blocks = (int32_t)total_pages + (o->extra_blocks > 0 ? o->extra_blocks : 0);
    if (p->num_blocks < 1)
        p->num_blocks = 1;
    p->block_table_stride = widest + (o->extra_table_columns > 0 ? o->extra_table_columns : 0);
    p->block_table = malloc(sizeof(int32_t) * (size_t)o->num_seqs * p->block_table_stride);
    int32_t *order = malloc(sizeof(int32_t) * (size_t)p->num_blocks);
    if (!p->block_table || !order) {
        free(order);
        goto oom;
    }
    for (int32_t b = 0; b < p->num_blocks; b++)
        order[b] = b;
    for (int32_t b = p->num_blocks - 1; b > 0; b--) {
        int32_t other = attn_oracle_rand_int(&rng, 0, b);
        int32_t tmp = order[b];
        order[b] = order[other];
        order[other] = tmp;
    }
    int32_t next_block = 0;
    for (int32_t i = 0; i < o->num_seqs; i++) {
        int32_t pages = (int32_t)(((int64_t)p->seqused_k[i] + page - 1) / page);
        for (int32_t c = 0; c < p->block_table_stride; c++)
            p->block_table[(size_t)i * p->block_table_stride + c] =
                c < pages ? order[next_block++] : p->num_blocks + 1000 + c;
    }
    free(order);

    /* Caches: every slot poisoned first, then the used slots filled. */
    const size_t kv_elem = attn_conv_dtype_size(s->kv_dtype);
    const int64_t k_count = (int64_t)p->num_blocks * page * hkv * d;
    const int64_t v_count = (int64_t)p->num_blocks * page * hkv * dv;
    p->k_bytes = (size_t)k_count * kv_elem;
    p->v_bytes = (size_t)v_count * kv_elem;
    p->k_cache = malloc(p->k_bytes);
    p->v_cache = malloc(p->v_bytes);
    if (!p->k_cache || !p->v_cache)
        goto oom;
    for (int64_t i = 0; i < k_count; i++)
        store_nan(s->kv_dtype, p->k_cache, i);
    for (int64_t i = 0; i < v_count; i++)
        store_nan(s->kv_dtype, p->v_cache, i);
    const int fp8_kv = attn_conv_dtype_is_fp8(s->kv_dtype);
    for (int32_t i = 0; i < o->num_seqs; i++) {
        for (int32_t j = 0; j < p->seqused_k[i]; j++) {
            int64_t slot =
                (int64_t)p->block_table[(size_t)i * p->block_table_stride + j / page] * page +
                j % page;
            for (int64_t e = 0; e < (int64_t)hkv * d; e++) {
                int64_t at = slot * hkv * d + e;
                if (fp8_kv)
                    ((uint8_t *)p->k_cache)[at] = random_fp8_code(s->kv_dtype, &rng);
                else
                    store_value(s->kv_dtype, p->k_cache, at, random_value(&rng));
            }
            for (int64_t e = 0; e < (int64_t)hkv * dv; e++) {
                int64_t at = slot * hkv * dv + e;
                if (fp8_kv)
                    ((uint8_t *)p->v_cache)[at] = random_fp8_code(s->kv_dtype, &rng);
                else
                    store_value(s->kv_dtype, p->v_cache, at, random_value(&rng));
            }
        }
    }

    /* Q and out, as views with padding when strided. */
    int32_t pad_heads = o->strided ? attn_oracle_rand_int(&rng, 1, 3) : 0;
    int32_t pad_dims = o->strided ? attn_oracle_rand_int(&rng, 1, 5) : 0;
    p->q_stride_head = d + pad_dims;
    p->q_stride_token = (int64_t)(hq + pad_heads) * p->q_stride_head;
    int64_t q_count = (int64_t)(p->num_tokens ? p->num_tokens : 1) * p->q_stride_token;
    p->q_bytes = (size_t)q_count * attn_conv_dtype_size(s->q_dtype);
    p->q = malloc(p->q_bytes);
    if (!p->q)
        goto oom;
    for (int64_t i = 0; i < q_count; i++)
        store_nan(s->q_dtype, p->q, i);
    for (int64_t t = 0; t < p->num_tokens; t++)
        for (int32_t h = 0; h < hq; h++)
            for (int32_t e = 0; e < d; e++)
                store_value(s->q_dtype, p->q, t * p->q_stride_token + h * p->q_stride_head + e,
                            random_value(&rng));
    if (o->strided) {
        /* Head-major output ([Hq][T][Dv] with padding) checks that the
         * strides are honoured rather than assumed token-major. */
        int64_t tokens = p->num_tokens ? p->num_tokens : 1;
        p->out_stride_token = dv + pad_dims;
        p->out_stride_head = tokens * p->out_stride_token + pad_heads;
        p->out_bytes = (size_t)(hq * p->out_stride_head) * attn_conv_dtype_size(s->out_dtype);
    } else {
        p->out_stride_head = dv;
        p->out_stride_token = (int64_t)hq * dv;
        p->out_bytes = (size_t)((p->num_tokens ? p->num_tokens : 1) * p->out_stride_token) *
                       attn_conv_dtype_size(s->out_dtype);
    }
    p->out = malloc(p->out_bytes);
    if (!p->out)
        goto oom;
    attn_oracle_problem_poison_out(p);

    if (s->has_sinks) {
        p->sinks = malloc(sizeof(float) * (size_t)hq);
        if (!p->sinks)
            goto oom;
        for (int32_t h = 0; h < hq; h++)
            p->sinks[h] = (float)(-2.0 + 6.0 * attn_oracle_rand_uniform(&rng));
    }

    /* Scales: the usual 1/sqrt(D), sometimes sharper so that the running
     * max changes often; fp8 descales bring the codes (up to 448) to O(1). */
    p->scale = (float)(1.0 / sqrt((double)d));
    if (attn_oracle_rand_int(&rng, 0, 2) == 0)
        p->scale *= (float)(1.0 + 7.0 * attn_oracle_rand_uniform(&rng));
    p->k_descale = fp8_kv ? (float)(0.002 + 0.01 * attn_oracle_rand_uniform(&rng)) : 1.0f;
    p->v_descale = fp8_kv ? (float)(0.002 + 0.01 * attn_oracle_rand_uniform(&rng)) : 1.0f;
    p->q_descale = attn_conv_dtype_is_fp8(s->compute_dtype)
                       ? (float)(0.002 + 0.01 * attn_oracle_rand_uniform(&rng))
                       : 1.0f;
    return 0;
oom:
    attn_oracle_problem_free(p);
    return attn_tool_fail(err, err_size, "problem: out of memory");
}

void attn_oracle_problem_args(const attn_oracle_problem *p, attn_forward_args *a)
{
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->num_seqs = p->num_seqs;
    a->num_tokens = p->num_tokens;
    a->q = p->q;
    a->q_stride_token = p->q_stride_token;
    a->q_stride_head = p->q_stride_head;
    a->k_cache = p->k_cache;
    a->v_cache = p->v_cache;
    a->num_blocks = p->num_blocks;
    a->block_table = p->block_table;
    a->block_table_stride = p->block_table_stride;
    a->cu_seqlens_q = p->cu_seqlens_q;
    a->seqused_k = p->seqused_k;
    a->max_seqlen_q = p->max_seqlen_q;
    a->max_seqlen_k = p->max_seqlen_k;
    a->scale = p->scale;
    a->q_descale = p->q_descale;
    a->k_descale = p->k_descale;
    a->v_descale = p->v_descale;
    a->sinks = p->sinks;
    a->out = p->out;
    a->out_stride_token = p->out_stride_token;
    a->out_stride_head = p->out_stride_head;
}
