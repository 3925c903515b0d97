/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_exp2_poly.h — 2^x on the FMA pipes, for part of a softmax's
 * exponentials (FlashAttention 4's offload): the same C on the host (the
 * test's reference, tests/test_exp2_poly.c) and in the kernels.
 *
 * Why: an SM runs ex2.approx on its special-function units at 16 a clock,
 * against 128 FMA lanes; the prefill kernel's softmax spends half of a
 * tile's matrix time in ex2 (bench/RESULTS.md version 9). Taking some of its
 * elements through a polynomial on the FMA pipes lets both pipes work.
 *
 * How: x = j + f with j = round(x) (by the 1.5 x 2^23 addition, which rounds
 * to nearest in any IEEE float add, no conversion instruction) and f in
 * [-0.5, 0.5]; 2^f by a degree-3 polynomial (relative minimax coefficients,
 * fitted by a Remez exchange: at most 7.5e-5 = 2^-13.7 relative error); 2^j
 * added to the result's exponent bits. x is first clamped at -125 (so that
 * the result stays a normal float: p >= 0.7 has exponent field >= 126), so a
 * masked score (-inf) gives 2^-125 (its share of a row's sum, which is at
 * least 1, is below f32's rounding; ex2.approx.ftz gives 0); the argument is
 * at most 0 in a softmax (scores minus their running maximum) or a little
 * above it (a slack), far below the exponent's overflow. A NaN stays NaN, as
 * through ex2.approx.
 * Accuracy against ex2.approx (2^-22): the probabilities enter P x V rounded
 * to bf16 (up to 2^-8 relative) or f16 (2^-11), so 2^-13.7 adds at most a
 * sixth of that rounding on f16 and a fortieth on bf16.
 * Every operation is an fmaf, an add or a bit move, so host and device give
 * the same bits.
 */
#ifndef ATTN_EXP2_POLY_H
#define ATTN_EXP2_POLY_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__) || defined(__HIP__)
#define ATTN_EXP2_POLY_FN static inline __host__ __device__
#else
#define ATTN_EXP2_POLY_FN static inline
#endif

/* The largest relative error of attn_exp2_poly over its range, which the
 * test checks and the tolerances above use. */
#define ATTN_EXP2_POLY_MAX_REL_ERR 7.6e-5

ATTN_EXP2_POLY_FN float attn_exp2_poly(float x)
{
    const float magic = 12582912.0f; /* 1.5 x 2^23: x + magic rounds x to an integer */
    const float xin = x;
    x = x < -125.0f ? -125.0f : x;
    const float t = x + magic;
    const float jf = t - magic, f = x - jf;
    int32_t tb, pb;
    memcpy(&tb, &t, sizeof tb);
    const int32_t j = tb - 0x4B400000; /* magic's bits: t's low bits hold j */
    float p = fmaf(f, 5.517166906e-02f, 2.426111222e-01f);
    p = fmaf(f, p, 6.932609855e-01f);
    p = fmaf(f, p, 9.999280735e-01f);
    memcpy(&pb, &p, sizeof pb);
    pb += j * (1 << 23); /* times 2^j */
    memcpy(&p, &pb, sizeof p);
    return xin != xin ? xin : p;
}

#endif /* ATTN_EXP2_POLY_H */
