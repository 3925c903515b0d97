/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dtype_conv.c — element conversions, exhaustively where the format is
 * small enough.
 *
 * Expected values are derived here from the bit fields with ldexp(), not
 * from any table of the code under test. Three decoders are checked against
 * them: the scalar ones of plugins/cpu-ref/attn_dtype_conv.h, the oracle's,
 * and the vectorised row decoder the cpu-ref kernels use (both the baseline
 * and, where the CPU has it, the AVX2 build). Encoders are checked at every
 * midpoint between neighbouring values (ties go to the even code), just
 * beside each midpoint, at the overflow and subnormal boundaries, and on
 * infinities, NaN and signed zeros.
 */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_dtype_conv.h"
#include "oracle.h"

void test_decode_row_generic(int32_t dtype, const void *src, float *dst, int32_t n);
#if defined(__x86_64__) || defined(__i386__)
void test_decode_row_avx2(int32_t dtype, const void *src, float *dst, int32_t n);
#endif

/* ---- expected values from the bit fields ------------------------------ */

/* e4m3 with the given bias; fnuz: 0x80 is NaN, fn: S.1111.111 is NaN. */
static double expected_fp8(uint8_t code, int bias, int nuz)
{
    int sign = code >> 7, exponent = (code >> 3) & 15, mantissa = code & 7;
    if (nuz ? code == 0x80 : (exponent == 15 && mantissa == 7))
        return NAN;
    double magnitude =
        exponent == 0 ? ldexp(mantissa, 1 - bias - 3) : ldexp(8 + mantissa, exponent - bias - 3);
    return sign ? -magnitude : magnitude;
}

/* IEEE-style 16-bit formats: f16 (5, 10, bias 15) and bf16 (8, 7, bias 127). */
static double expected_16(uint16_t code, int exponent_bits, int mantissa_bits)
{
    int bias = (1 << (exponent_bits - 1)) - 1;
    int sign = code >> 15;
    int exponent = (code >> mantissa_bits) & ((1 << exponent_bits) - 1);
    int mantissa = code & ((1 << mantissa_bits) - 1);
    double magnitude;
    if (exponent == (1 << exponent_bits) - 1)
        magnitude = mantissa ? NAN : INFINITY;
    else if (exponent == 0)
        magnitude = ldexp(mantissa, 1 - bias - mantissa_bits);
    else
        magnitude = ldexp((1 << mantissa_bits) + mantissa, exponent - bias - mantissa_bits);
    return sign ? -magnitude : magnitude;
}

/* Same value, same sign of zero, or both NaN. */
static int same_value(double got, double want)
{
    if (isnan(want))
        return isnan(got);
    return got == want && signbit(got) == signbit(want);
}

typedef void (*row_decoder)(int32_t dtype, const void *src, float *dst, int32_t n);

static int have_avx2(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    /* F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
     * does not know "f16c". */
    unsigned eax, ebx, ecx, edx;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __get_cpuid(1, &eax, &ebx, &ecx, &edx) && ((ecx >> 29) & 1u);
#else
    return 0;
#endif
}

/* The row decoders available on this machine. */
static int row_decoders(row_decoder *out, const char **names)
{
    int n = 0;
    out[n] = test_decode_row_generic;
    names[n++] = "generic";
#if defined(__x86_64__) || defined(__i386__)
    if (have_avx2()) {
        out[n] = test_decode_row_avx2;
        names[n++] = "avx2";
    }
#endif
    return n;
}

/* ---- fp8 ---------------------------------------------------------------- */

static void check_fp8_table(int32_t dtype, int bias, int nuz)
{
    uint8_t codes[256 + 1];
    float decoded[256];
    for (int c = 0; c < 256; c++)
        codes[c] = (uint8_t)c;
    int nan_codes = 0;
    for (int c = 0; c < 256; c++) {
        double want = expected_fp8((uint8_t)c, bias, nuz);
        nan_codes += isnan(want);
        float got = nuz ? attn_conv_fp8_e4m3fnuz_to_f32((uint8_t)c)
                        : attn_conv_fp8_e4m3fn_to_f32((uint8_t)c);
        ck_assert_msg(same_value(got, want), "%s code 0x%02x: conv %a, expected %a",
                      attn_dtype_spelling(dtype), c, (double)got, want);
        ck_assert_msg(same_value(attn_oracle_fp8_value(dtype, (uint8_t)c), want),
                      "oracle code 0x%02x", c);
        ck_assert_msg(same_value(attn_conv_load_f32(dtype, codes, c), want), "load code 0x%02x", c);
    }
    ck_assert_int_eq(nan_codes, nuz ? 1 : 2);
    /* The kernels' vector decoder: whole rows (8 lanes at a time) and a row
     * starting at an odd offset (so the scalar tail runs on every code). */
    row_decoder decoders[2];
    const char *names[2];
    int nd = row_decoders(decoders, names);
    for (int k = 0; k < nd; k++) {
        for (int offset = 0; offset <= 1; offset++) {
            int n = 256 - offset;
            decoders[k](dtype, codes + offset, decoded, n);
            for (int i = 0; i < n; i++) {
                uint8_t c = (uint8_t)(i + offset);
                double want = expected_fp8(c, bias, nuz);
                ck_assert_msg(same_value(decoded[i], want), "%s kernel %s code 0x%02x: %a vs %a",
                              attn_dtype_spelling(dtype), names[k], c, (double)decoded[i], want);
            }
        }
    }
}

START_TEST(test_fp8_e4m3fn_all_codes)
{
    check_fp8_table(ATTN_DTYPE_FP8_E4M3FN, 7, 0);
    /* Landmarks of the OCP format. */
    ck_assert(attn_conv_fp8_e4m3fn_to_f32(0x7E) == 448.0f);
    ck_assert(attn_conv_fp8_e4m3fn_to_f32(0x01) == 0x1p-9f);
    ck_assert(attn_conv_fp8_e4m3fn_to_f32(0x08) == 0x1p-6f);
    ck_assert(attn_conv_fp8_e4m3fn_to_f32(0x38) == 1.0f);
    ck_assert(signbit(attn_conv_fp8_e4m3fn_to_f32(0x80)));
}
END_TEST

START_TEST(test_fp8_e4m3fnuz_all_codes)
{
    check_fp8_table(ATTN_DTYPE_FP8_E4M3FNUZ, 8, 1);
    ck_assert(attn_conv_fp8_e4m3fnuz_to_f32(0x7F) == 240.0f);
    ck_assert(attn_conv_fp8_e4m3fnuz_to_f32(0x01) == 0x1p-10f);
    ck_assert(attn_conv_fp8_e4m3fnuz_to_f32(0x40) == 1.0f);
    ck_assert(isnan(attn_conv_fp8_e4m3fnuz_to_f32(0x80)));
    ck_assert(attn_conv_fp8_e4m3fnuz_to_f32(0xFF) == -240.0f);
}
END_TEST

static uint8_t encode_fp8(int32_t dtype, float x)
{
    return dtype == ATTN_DTYPE_FP8_E4M3FN ? attn_conv_f32_to_fp8_e4m3fn(x)
                                          : attn_conv_f32_to_fp8_e4m3fnuz(x);
}

static void check_fp8_encoder(int32_t dtype, int bias, int nuz)
{
    /* Non-negative finite codes in increasing order of value: 0x00..max. */
    int max_code = nuz ? 0x7F : 0x7E;
    for (int c = 0; c <= max_code; c++) {
        double v = expected_fp8((uint8_t)c, bias, nuz);
        ck_assert_int_eq(encode_fp8(dtype, (float)v), c);
        if (c > 0) {
            int expected_negative = c | 0x80;
            ck_assert_int_eq(encode_fp8(dtype, (float)-v), expected_negative);
        }
        if (c == max_code)
            break;
        double next = expected_fp8((uint8_t)(c + 1), bias, nuz);
        float mid = (float)((v + next) / 2); /* exact: 5 significant bits */
        int even = (c & 1) ? c + 1 : c;
        ck_assert_msg(encode_fp8(dtype, mid) == even, "%s midpoint %a: got 0x%02x want 0x%02x",
                      attn_dtype_spelling(dtype), (double)mid, encode_fp8(dtype, mid), even);
        ck_assert_int_eq(encode_fp8(dtype, nextafterf(mid, 0.0f)), c);
        ck_assert_int_eq(encode_fp8(dtype, nextafterf(mid, INFINITY)), c + 1);
    }
    /* Saturation, infinities, NaN, zeros. */
    double largest = expected_fp8((uint8_t)max_code, bias, nuz);
    ck_assert_int_eq(encode_fp8(dtype, (float)largest * 1.06f), max_code);
    ck_assert_int_eq(encode_fp8(dtype, 1e30f), max_code);
    ck_assert_int_eq(encode_fp8(dtype, INFINITY), max_code);
    ck_assert_int_eq(encode_fp8(dtype, -INFINITY), max_code | 0x80);
    ck_assert(isnan(expected_fp8(encode_fp8(dtype, NAN), bias, nuz)));
    ck_assert_int_eq(encode_fp8(dtype, 0.0f), 0);
    ck_assert_int_eq(encode_fp8(dtype, -0.0f), nuz ? 0x00 : 0x80);
    ck_assert_int_eq(encode_fp8(dtype, 1e-30f), 0);
    ck_assert_int_eq(encode_fp8(dtype, 0x1p-140f), 0); /* a float subnormal */
    /* Random floats over the whole exponent range agree with the oracle's
     * exhaustive nearest-code search. */
    uint64_t rng = 12345;
    for (int i = 0; i < 20000; i++) {
        double m = attn_oracle_rand_uniform(&rng) * 2 - 1;
        float x = (float)ldexp(m, attn_oracle_rand_int(&rng, -14, 10));
        uint8_t want = attn_oracle_fp8_quantize(dtype, x);
        ck_assert_msg(encode_fp8(dtype, x) == want, "%s %a: got 0x%02x want 0x%02x",
                      attn_dtype_spelling(dtype), (double)x, encode_fp8(dtype, x), want);
    }
}

START_TEST(test_fp8_encoders)
{
    check_fp8_encoder(ATTN_DTYPE_FP8_E4M3FN, 7, 0);
    check_fp8_encoder(ATTN_DTYPE_FP8_E4M3FNUZ, 8, 1);
}
END_TEST

/* ---- 16-bit formats ----------------------------------------------------- */

static void check_16_all_codes(int32_t dtype, int exponent_bits, int mantissa_bits)
{
    static uint16_t codes[65536 + 1];
    static float decoded[65536];
    for (uint32_t c = 0; c < 65536; c++)
        codes[c] = (uint16_t)c;
    for (uint32_t c = 0; c < 65536; c++) {
        double want = expected_16((uint16_t)c, exponent_bits, mantissa_bits);
        float got = dtype == ATTN_DTYPE_F16 ? attn_conv_f16_to_f32((uint16_t)c)
                                            : attn_conv_bf16_to_f32((uint16_t)c);
        ck_assert_msg(same_value(got, want), "%s 0x%04x: %a vs %a", attn_dtype_spelling(dtype), c,
                      (double)got, want);
        ck_assert_msg(same_value(attn_oracle_decode(dtype, codes, c), want), "oracle 0x%04x", c);
        /* Every non-NaN value encodes back to its own code. */
        if (!isnan(want)) {
            uint16_t back =
                dtype == ATTN_DTYPE_F16 ? attn_conv_f32_to_f16(got) : attn_conv_f32_to_bf16(got);
            ck_assert_msg(back == c, "%s 0x%04x re-encodes as 0x%04x", attn_dtype_spelling(dtype),
                          c, back);
        } else {
            uint16_t back =
                dtype == ATTN_DTYPE_F16 ? attn_conv_f32_to_f16(got) : attn_conv_f32_to_bf16(got);
            ck_assert(isnan(expected_16(back, exponent_bits, mantissa_bits)));
        }
    }
    row_decoder decoders[2];
    const char *names[2];
    int nd = row_decoders(decoders, names);
    for (int k = 0; k < nd; k++) {
        for (int offset = 0; offset <= 3; offset += 3) {
            int n = 65536 - offset;
            decoders[k](dtype, codes + offset, decoded, n);
            for (int i = 0; i < n; i++) {
                uint16_t c = (uint16_t)(i + offset);
                double want = expected_16(c, exponent_bits, mantissa_bits);
                ck_assert_msg(same_value(decoded[i], want), "%s kernel %s 0x%04x: %a vs %a",
                              attn_dtype_spelling(dtype), names[k], c, (double)decoded[i], want);
            }
        }
    }
}

START_TEST(test_bf16_all_codes)
{
    check_16_all_codes(ATTN_DTYPE_BF16, 8, 7);
}
END_TEST

START_TEST(test_f16_all_codes)
{
    check_16_all_codes(ATTN_DTYPE_F16, 5, 10);
}
END_TEST

/* Between each pair of neighbouring finite non-negative codes: the exact
 * midpoint goes to the even code, one float ulp either side to the nearer. */
static void check_16_midpoints(int32_t dtype, int exponent_bits, int mantissa_bits)
{
    uint16_t top = (uint16_t)(((1u << exponent_bits) - 1u) << mantissa_bits); /* +inf */
    for (uint32_t c = 0; c < top; c++) {
        double v = expected_16((uint16_t)c, exponent_bits, mantissa_bits);
        double next = expected_16((uint16_t)(c + 1), exponent_bits, mantissa_bits);
        if (isinf(next)) /* the overflow midpoint is checked on its own */
            next = 2 * v - expected_16((uint16_t)(c - 1), exponent_bits, mantissa_bits);
        float mid = (float)((v + next) / 2);
        ck_assert((double)mid == (v + next) / 2);
        uint32_t even = (c & 1u) ? c + 1 : c;
        for (int negative = 0; negative <= 1; negative++) {
            float m = negative ? -mid : mid;
            uint16_t sign = negative ? 0x8000u : 0;
            uint16_t got =
                dtype == ATTN_DTYPE_F16 ? attn_conv_f32_to_f16(m) : attn_conv_f32_to_bf16(m);
            ck_assert_msg(got == (uint16_t)(even | sign), "%s midpoint %a: 0x%04x, want 0x%04x",
                          attn_dtype_spelling(dtype), (double)m, got, even | sign);
            float below = nextafterf(m, 0.0f),
                  above = nextafterf(m, negative ? -INFINITY : INFINITY);
            got = dtype == ATTN_DTYPE_F16 ? attn_conv_f32_to_f16(below)
                                          : attn_conv_f32_to_bf16(below);
            ck_assert_uint_eq(got, c | sign);
            got = dtype == ATTN_DTYPE_F16 ? attn_conv_f32_to_f16(above)
                                          : attn_conv_f32_to_bf16(above);
            ck_assert_uint_eq(got, (c + 1) | sign);
        }
    }
}

START_TEST(test_bf16_rounding)
{
    check_16_midpoints(ATTN_DTYPE_BF16, 8, 7);
    /* Named edge cases. */
    ck_assert_uint_eq(attn_conv_f32_to_bf16(1.0f), 0x3F80);
    ck_assert_uint_eq(attn_conv_f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);           /* tie -> even */
    ck_assert_uint_eq(attn_conv_f32_to_bf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3F82); /* tie -> even */
    ck_assert_uint_eq(attn_conv_f32_to_bf16(1.0f + 0x1p-8f + 0x1p-23f), 0x3F81);
    ck_assert_uint_eq(attn_conv_f32_to_bf16(-0.0f), 0x8000);
    ck_assert_uint_eq(attn_conv_f32_to_bf16(INFINITY), 0x7F80);
    ck_assert_uint_eq(attn_conv_f32_to_bf16(-INFINITY), 0xFF80);
    ck_assert_uint_eq(attn_conv_f32_to_bf16(3.3895313892515355e38f), 0x7F7F); /* largest */
    /* Halfway between the largest bf16 (odd mantissa) and 2^128 rounds to
     * even, which is infinity; just below stays finite. */
    ck_assert_uint_eq(attn_conv_f32_to_bf16(attn_conv_bits_f32(0x7F7F8000u)), 0x7F80);
    ck_assert_uint_eq(attn_conv_f32_to_bf16(attn_conv_bits_f32(0x7F7F7FFFu)), 0x7F7F);
    ck_assert_uint_eq(attn_conv_f32_to_bf16(attn_conv_bits_f32(0x7F7FFFFFu)), 0x7F80);
    /* Float subnormals round like any other value. */
    ck_assert_uint_eq(attn_conv_f32_to_bf16(attn_conv_bits_f32(0x00008000u)), 0x0000);
    ck_assert_uint_eq(attn_conv_f32_to_bf16(attn_conv_bits_f32(0x00018000u)), 0x0002);
    /* NaN stays NaN (quiet) with its sign, even a payload that would round
     * away into infinity. */
    uint16_t n = attn_conv_f32_to_bf16(attn_conv_bits_f32(0x7F800001u));
    ck_assert(isnan(attn_conv_bf16_to_f32(n)));
    n = attn_conv_f32_to_bf16(attn_conv_bits_f32(0xFFFFFFFFu));
    ck_assert(isnan(attn_conv_bf16_to_f32(n)) && (n & 0x8000));
}
END_TEST

START_TEST(test_f16_rounding)
{
    check_16_midpoints(ATTN_DTYPE_F16, 5, 10);
    ck_assert_uint_eq(attn_conv_f32_to_f16(65504.0f), 0x7BFF);
    ck_assert_uint_eq(attn_conv_f32_to_f16(65519.99609375f), 0x7BFF);
    ck_assert_uint_eq(attn_conv_f32_to_f16(65520.0f), 0x7C00); /* tie -> even = inf */
    ck_assert_uint_eq(attn_conv_f32_to_f16(-65520.0f), 0xFC00);
    ck_assert_uint_eq(attn_conv_f32_to_f16(1e10f), 0x7C00);
    ck_assert_uint_eq(attn_conv_f32_to_f16(0x1p-24f), 0x0001); /* smallest subnormal */
    ck_assert_uint_eq(attn_conv_f32_to_f16(0x1p-25f), 0x0000); /* tie -> even = 0 */
    ck_assert_uint_eq(attn_conv_f32_to_f16(0x1.000002p-25f), 0x0001);
    ck_assert_uint_eq(attn_conv_f32_to_f16(0x1.8p-24f), 0x0002);   /* 1.5 units: tie -> 2 */
    ck_assert_uint_eq(attn_conv_f32_to_f16(0x1.4p-23f), 0x0002);   /* 2.5 units: tie -> 2 */
    ck_assert_uint_eq(attn_conv_f32_to_f16(0x1.ffcp-15f), 0x0400); /* 1023.5 units -> normal */
    ck_assert_uint_eq(attn_conv_f32_to_f16(0x1p-30f), 0x0000);
    ck_assert_uint_eq(attn_conv_f32_to_f16(-0x1p-30f), 0x8000);
    ck_assert_uint_eq(attn_conv_f32_to_f16(attn_conv_bits_f32(0x00000001u)), 0x0000);
    ck_assert_uint_eq(attn_conv_f32_to_f16(-0.0f), 0x8000);
    ck_assert_uint_eq(attn_conv_f32_to_f16(INFINITY), 0x7C00);
    ck_assert(isnan(attn_conv_f16_to_f32(attn_conv_f32_to_f16(NAN))));
    ck_assert_uint_eq(attn_conv_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);            /* tie -> even */
    ck_assert_uint_eq(attn_conv_f32_to_f16(1.0f + 0x1p-10f + 0x1p-11f), 0x3C02); /* tie -> even */
}
END_TEST

START_TEST(test_store_and_round_helpers)
{
    /* attn_conv_store_f32 / round_to agree with the encoders for each dtype. */
    uint8_t buf[8];
    attn_conv_store_f32(ATTN_DTYPE_BF16, buf, 1, 1.0f + 0x1p-8f);
    ck_assert_uint_eq(buf[2] | (buf[3] << 8), 0x3F80);
    attn_conv_store_f32(ATTN_DTYPE_F16, buf, 0, 65520.0f);
    ck_assert_uint_eq(buf[0] | (buf[1] << 8), 0x7C00);
    attn_conv_store_f32(ATTN_DTYPE_FP8_E4M3FN, buf, 5, 500.0f);
    ck_assert_uint_eq(buf[5], 0x7E);
    ck_assert(attn_conv_round_to(ATTN_DTYPE_FP8_E4M3FNUZ, 1000.0f) == 240.0f);
    ck_assert(attn_conv_round_to(ATTN_DTYPE_F32, 0.1f) == 0.1f);
    ck_assert_uint_eq(attn_conv_dtype_size(ATTN_DTYPE_BF16), 2);
    ck_assert_uint_eq(attn_conv_dtype_size(ATTN_DTYPE_INVALID), 0);
    ck_assert_str_eq(attn_dtype_spelling(ATTN_DTYPE_FP8_E4M3FNUZ), "fp8_e4m3fnuz");
}
END_TEST

static Suite *dtype_suite(void)
{
    Suite *suite = suite_create("dtype_conv");
    TCase *tc = tcase_create("conversions");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_fp8_e4m3fn_all_codes);
    tcase_add_test(tc, test_fp8_e4m3fnuz_all_codes);
    tcase_add_test(tc, test_fp8_encoders);
    tcase_add_test(tc, test_bf16_all_codes);
    tcase_add_test(tc, test_f16_all_codes);
    tcase_add_test(tc, test_bf16_rounding);
    tcase_add_test(tc, test_f16_rounding);
    tcase_add_test(tc, test_store_and_round_helpers);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void)
{
    SRunner *runner = srunner_create(dtype_suite());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
