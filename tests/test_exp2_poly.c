/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_exp2_poly.c — attn_exp2_poly (plugins/common/attn_exp2_poly.h), the
 * FMA-pipe 2^x that the prefill kernel may use for part of its softmax: the
 * same C runs here and on the device, so its error bound is checked here,
 * over the whole range a softmax feeds it.
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attn_exp2_poly.h"
#include "support/test_support.h"

static double rel_err(float x)
{
    const double want = exp2((double)x), got = attn_exp2_poly(x);
    return fabs(got - want) / want;
}

/* Every float in [-1.5, -0.5] (f over its whole interval, at the finest
 * grid any j leaves it), every 1/4096 step in [-125, 0.5], and the small
 * arguments near 0 on a geometric grid: within the bound, and every result a
 * normal float. */
START_TEST(within_bound)
{
    /* (one assertion at the end: Check marks a point per assertion) */
    double worst = 0;
    long n = 0, abnormal = 0;
    for (float x = -1.5f; x <= -0.5f; x = nextafterf(x, 1.0f), n++) {
        worst = fmax(worst, rel_err(x));
        abnormal += !isnormal(attn_exp2_poly(x));
    }
    for (float x = -0.5f; x < -1e-30f; x *= 0.999f, n++) {
        worst = fmax(worst, fmax(rel_err(x), rel_err(-x)));
        abnormal += !isnormal(attn_exp2_poly(x));
    }
    for (int i = -125 * 4096; i <= 2048; i++, n++) {
        const float x = (float)i / 4096.0f;
        worst = fmax(worst, rel_err(x));
        abnormal += !isnormal(attn_exp2_poly(x));
    }
    ck_assert_int_eq(abnormal, 0);
    fprintf(stderr, "exp2_poly: %ld arguments, worst relative error %.3g (2^%.2f), bound %.3g\n", n,
            worst, log2(worst), ATTN_EXP2_POLY_MAX_REL_ERR);
    ck_assert_double_le(worst, ATTN_EXP2_POLY_MAX_REL_ERR);
    ck_assert_double_gt(worst, 1e-6); /* the polynomial, not an exp2 call */
}
END_TEST

/* Exact where a softmax needs it exact enough, and the edges: 2^0 within the
 * bound of 1, -inf (a masked score) a normal float below 2^-124, NaN stays
 * NaN, powers of two to the bound. */
START_TEST(edges)
{
    ck_assert_double_le(fabs(attn_exp2_poly(0.0f) - 1.0), ATTN_EXP2_POLY_MAX_REL_ERR);
    const float masked = attn_exp2_poly(-INFINITY);
    ck_assert(isnormal(masked));
    ck_assert_float_lt(masked, 0x1p-124f);
    ck_assert(isnan(attn_exp2_poly(NAN)));
    for (int j = -125; j <= 0; j++)
        ck_assert_double_le(rel_err((float)j), ATTN_EXP2_POLY_MAX_REL_ERR);
    /* below the clamp: 2^-125, whatever x */
    ck_assert_float_eq(attn_exp2_poly(-1000.0f), attn_exp2_poly(-125.0f));
}
END_TEST

static Suite *exp2_poly_suite(void)
{
    Suite *s = suite_create("exp2_poly");
    TCase *tc = tcase_create("bound");
    ts_add_fixtures(tc, 60);
    tcase_add_test(tc, within_bound);
    tcase_add_test(tc, edges);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ts_run(exp2_poly_suite());
}
