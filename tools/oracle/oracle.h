/* SPDX-License-Identifier: Apache-2.0 */
/*
 * oracle.h — a deliberately naive float64 attention reference, the
 * comparison metrics and tolerances that judge a backend against it, and a
 * random problem builder.
 *
 * The oracle shares no code with cpu-ref: it decodes every element type from
 * its bit fields with ldexp(), gathers the pages of each sequence into plain
 * arrays, forms the full score matrix, masks it, and takes a two-pass
 * softmax, all in double. It exists to be obviously correct, not fast.
 *
 * Used by the cpu-ref tests (tests/cpu_ref) and `attnreg verify` (the
 * attnreg_oracle library, tools/oracle).
 */
#ifndef ATTNREG_ORACLE_H
#define ATTNREG_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- element decoding (independent of plugins/cpu-ref/attn_dtype_conv.h) */

/* Value of element `index` of an array of `dtype`, from its bit fields. */
double attn_oracle_decode(int32_t dtype, const void *base, int64_t index);
/* Value of one fp8 code (NaN codes give NaN). */
double attn_oracle_fp8_value(int32_t dtype, uint8_t code);
/* The code of the fp8 value nearest to x, found by searching all codes;
 * ties go to the code with an even mantissa; magnitudes beyond the largest
 * finite value saturate to it; NaN gives the format's NaN code. */
uint8_t attn_oracle_fp8_quantize(int32_t dtype, double x);

/* ---- the reference forward ------------------------------------------- */

/* Computes attention for `args` exactly as described in BRIEF.md
 * ("Attention semantics") and writes out[token][q_head][dv] as doubles
 * (num_tokens x num_q_heads x head_dim_v, contiguous). The shape must be
 * resolved (num_kv_heads and head_dim_v may be 0 = "same as"). For an fp8
 * compute dtype, Q is quantised as in cpu-ref: the float32 quotient
 * q / q_descale rounded to the nearest code. Returns 0, or -1 with a message
 * (inconsistent arguments, out of memory). */
int attn_oracle_forward(const attn_shape *shape, const attn_forward_args *args, double *out,
                        char *err, size_t err_size);
/* The same, and (lse not NULL) each row's log-sum-exp into lse[token][q_head]
 * (num_tokens x num_q_heads): ln of the softmax denominator in the scores'
 * units, the sink included, -inf for a row with nothing in it. */
int attn_oracle_forward_lse(const attn_shape *shape, const attn_forward_args *args, double *out,
                            double *lse, char *err, size_t err_size);

/* ---- comparing a backend's output with the oracle --------------------- */

typedef struct attn_oracle_error {
    double max_abs;      /* largest |got - want| */
    double rel_l2;       /* ||got - want||_2 / ||want||_2 (0 when both are 0) */
    double value_scale;  /* largest |dequantised V| of the batch: outputs lie within it */
    int64_t worst_index; /* flat index (token, head, dv) of max_abs */
    double worst_got;
    double worst_want;
    int64_t non_finite; /* elements of `got` that are NaN or infinite where want is finite */
} attn_oracle_error;

/* Compares the strided output view `got` (out_dtype, strides as in args)
 * with the oracle's `want`. */
void attn_oracle_compare(const attn_shape *shape, const attn_forward_args *args, const double *want,
                         attn_oracle_error *error);

/* The tolerance `attnreg verify` applies to any backend, by compute and out
 * dtype (docs/TOLERANCES.md justifies the numbers): PASS when
 *   max_abs <= max_abs_per_scale * value_scale  and  rel_l2 <= rel_l2. */
typedef struct attn_oracle_tolerance {
    double max_abs_per_scale;
    double rel_l2;
} attn_oracle_tolerance;

attn_oracle_tolerance attn_oracle_verify_tolerance(const attn_shape *shape);
int attn_oracle_within(const attn_oracle_error *error, const attn_oracle_tolerance *tol);

/* ---- random problems ------------------------------------------------- */

typedef struct attn_oracle_problem_options {
    int32_t num_seqs; /* >= 1 */
    uint64_t seed;
    int strided;             /* 1 = q and out are views with padding between heads and tokens */
    int allow_short_kv;      /* 1 = some sequences get fewer keys than queries */
    int allow_empty_q;       /* 1 = some sequences get no query tokens */
    int extra_table_columns; /* unused trailing block-table entries per row */
    int extra_blocks;        /* cache blocks no sequence uses (poisoned with NaN) */
} attn_oracle_problem_options;

/* One batch with every array allocated and filled: random lengths within the
 * shape's max_q_len / max_kv_len, a random permutation of cache blocks,
 * random non-zero values, unused cache slots and block-table entries
 * poisoned (NaN, out-of-range indices) so that reading them shows. */
typedef struct attn_oracle_problem {
    attn_shape shape; /* resolved: num_kv_heads and head_dim_v filled in */
    int32_t num_seqs;
    int32_t num_tokens;
    int32_t num_blocks;
    int32_t block_table_stride;
    int32_t max_seqlen_q;
    int32_t max_seqlen_k;
    int32_t *cu_seqlens_q;
    int32_t *seqused_k;
    int32_t *block_table;
    void *q;
    int64_t q_stride_token;
    int64_t q_stride_head;
    size_t q_bytes;
    void *k_cache;
    void *v_cache;
    size_t k_bytes;
    size_t v_bytes;
    float *sinks;
    void *out;
    int64_t out_stride_token;
    int64_t out_stride_head;
    size_t out_bytes;
    float scale;
    float q_descale;
    float k_descale;
    float v_descale;
} attn_oracle_problem;

/* The most KV-cache bytes a random problem may need; larger ones (and ones
 * whose token or block counts overflow int32) are refused with -2. */
#define ATTN_PROBLEM_MAX_BYTES (8.0 * 1024 * 1024 * 1024)
int attn_oracle_problem_random(attn_oracle_problem *problem, const attn_shape *shape,
                               const attn_oracle_problem_options *options, char *err,
                               size_t err_size);
void attn_oracle_problem_free(attn_oracle_problem *problem);
/* Fills args from the problem (workspace and stream left NULL / 0). */
void attn_oracle_problem_args(const attn_oracle_problem *problem, attn_forward_args *args);
/* Fills the whole out buffer (padding included) with a NaN pattern. */
void attn_oracle_problem_poison_out(attn_oracle_problem *problem);

/* A small deterministic generator (splitmix64), so a seed means the same
 * problem everywhere. */
uint64_t attn_oracle_rand_next(uint64_t *state);
double attn_oracle_rand_uniform(uint64_t *state);                      /* [0, 1) */
int32_t attn_oracle_rand_int(uint64_t *state, int32_t lo, int32_t hi); /* [lo, hi] */

#ifdef __cplusplus
}
#endif

#endif /* ATTNREG_ORACLE_H */
