/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_dtype_conv.h — scalar conversions between float32 and the element
 * types attnreg moves around: bf16, IEEE fp16, and the two 8-bit e4m3
 * formats (OCP e4m3fn and the "fnuz" variant of gfx942).
 *
 * Header-only (static inline, no libm) so that the cpu-ref plugin, its tests,
 * the CLI and the benchmarks compile the same code without a shared library
 * between them. Every function is exact where the target can represent the
 * value, and rounds to nearest, ties to even, where it cannot.
 *
 * Formats:
 *   bf16          1 sign, 8 exponent (bias 127), 7 mantissa bits.
 *   f16           1 sign, 5 exponent (bias 15), 10 mantissa; subnormals, inf, NaN.
 *   fp8_e4m3fn    1 sign, 4 exponent (bias 7), 3 mantissa; no infinities;
 *                 S.1111.111 (0x7F, 0xFF) is NaN; largest finite 448; -0 exists.
 *   fp8_e4m3fnuz  1 sign, 4 exponent (bias 8), 3 mantissa; no infinities and no
 *                 negative zero: 0x80 is the only NaN; largest finite 240.
 *
 * Encoding to fp8 saturates: magnitudes beyond the largest finite value
 * (infinities included) become that value, as the FP8 quantisers of vLLM and
 * aiter clamp before converting. NaN stays NaN.
 */
#ifndef ATTN_DTYPE_CONV_H
#define ATTN_DTYPE_CONV_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline uint32_t attn_conv_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float attn_conv_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Bytes per element of a dtype; 0 for ATTN_DTYPE_INVALID and unknown codes
 * (attn_types.h's ATTN_DTYPE_MAP). */
static inline size_t attn_conv_dtype_size(int32_t dtype)
{
    return attn_dtype_size(dtype);
}

static inline int attn_conv_dtype_is_fp8(int32_t dtype)
{
    return attn_dtype_is_fp8(dtype);
}

/* Shift a (at most 24-bit) significand right by `shift`, rounding to nearest
 * with ties to even. Used for results that land in a subnormal range. */
static inline uint32_t attn_conv_shift_right_rne(uint32_t significand, int shift)
{
    if (shift <= 0)
        return significand << -shift;
    if (shift >= 25) /* significand < 2^24, so the value is below one half */
        return 0;
    uint32_t kept = significand >> shift;
    uint32_t rest = significand & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u)))
        kept++;
    return kept;
}

/* ---- bf16 ------------------------------------------------------------- */

static inline float attn_conv_bf16_to_f32(uint16_t h)
{
    return attn_conv_bits_f32((uint32_t)h << 16);
}

static inline uint16_t attn_conv_f32_to_bf16(float f)
{
    uint32_t u = attn_conv_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: keep the sign, force a quiet NaN */
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Adding 0x7FFF plus the kept LSB rounds to nearest even; a carry into the
     * exponent is the right answer (it may reach infinity). */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ---- IEEE fp16 -------------------------------------------------------- */

static inline float attn_conv_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0) {
        /* Zero or subnormal: mantissa x 2^-24, exact in float. */
        float magnitude = (float)mantissa * 0x1p-24f;
        return attn_conv_bits_f32(attn_conv_f32_bits(magnitude) | sign);
    }
    if (exponent == 31) /* infinity or NaN (payload kept) */
        return attn_conv_bits_f32(sign | 0x7F800000u | (mantissa << 13));
    return attn_conv_bits_f32(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static inline uint16_t attn_conv_f32_to_f16(float f)
{
    uint32_t u = attn_conv_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t magnitude = u & 0x7FFFFFFFu;
    if (magnitude > 0x7F800000u)
        return (uint16_t)(sign | 0x7E00u);
    /* 65520 = halfway between 65504 (largest f16) and 65536: ties to even
     * round it up, so everything from there on is infinity. */
    if (magnitude >= 0x477FF000u)
        return (uint16_t)(sign | 0x7C00u);
    uint32_t exponent = magnitude >> 23;
    if (exponent < 113) {
        /* Below 2^-14: an f16 subnormal (or zero) in units of 2^-24. The
         * value is significand x 2^(exponent-150), so the count of units is
         * significand >> (126 - exponent). A carry to 1024 is the smallest
         * normal, which is the right encoding. Float subnormals are far
         * below half a unit: zero. */
        if (exponent == 0)
            return sign;
        uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
        return (uint16_t)(sign | attn_conv_shift_right_rne(significand, 126 - (int)exponent));
    }
    uint32_t rebased = magnitude - (112u << 23);
    rebased += 0xFFFu + ((rebased >> 13) & 1u);
    return (uint16_t)(sign | (rebased >> 13));
}

/* ---- fp8 e4m3 ----------------------------------------------------------- */

static inline float attn_conv_fp8_e4m3_decode(uint8_t code, int bias, int nuz)
{
    uint32_t sign = (uint32_t)(code & 0x80u) << 24;
    uint32_t magnitude = code & 0x7Fu;
    if (nuz ? code == 0x80u : magnitude == 0x7Fu)
        return attn_conv_bits_f32(sign | 0x7FC00000u);
    uint32_t exponent = magnitude >> 3;
    uint32_t mantissa = magnitude & 7u;
    float value;
    if (exponent == 0) /* subnormal: mantissa/8 x 2^(1-bias) */
        value = (float)mantissa * (bias == 7 ? 0x1p-9f : 0x1p-10f);
    else
        value = attn_conv_bits_f32(((exponent + 127u - (uint32_t)bias) << 23) | (mantissa << 20));
    return attn_conv_bits_f32(attn_conv_f32_bits(value) | sign);
}

static inline float attn_conv_fp8_e4m3fn_to_f32(uint8_t code)
{
    return attn_conv_fp8_e4m3_decode(code, 7, 0);
}

static inline float attn_conv_fp8_e4m3fnuz_to_f32(uint8_t code)
{
    return attn_conv_fp8_e4m3_decode(code, 8, 1);
}

/* Round-to-nearest-even, saturating encoder shared by both e4m3 variants:
 * `max_code` is the code of the largest finite magnitude (0x7E = 448 for fn,
 * 0x7F = 240 for fnuz). */
static inline uint8_t attn_conv_f32_to_fp8_e4m3(float f, int bias, int nuz)
{
    uint32_t u = attn_conv_f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t magnitude = u & 0x7FFFFFFFu;
    uint8_t max_code = nuz ? 0x7F : 0x7E;
    if (magnitude > 0x7F800000u)
        return nuz ? 0x80 : (uint8_t)(sign | 0x7F);
    uint32_t exponent = magnitude >> 23;
    uint32_t code;
    /* Normal fp8 numbers need an unbiased exponent of at least 1 - bias. */
    if ((int)exponent >= 128 - bias) {
        if (exponent >= 255u) {
            code = max_code; /* infinity saturates */
        } else {
            uint32_t rebased = magnitude - ((uint32_t)(127 - bias) << 23);
            rebased += 0x7FFFFu + ((rebased >> 20) & 1u);
            code = rebased >> 20;
            if (code > max_code) /* beyond the largest finite value: saturate */
                code = max_code;
        }
    } else if (exponent == 0) {
        code = 0; /* float subnormals are far below half the smallest fp8 step */
    } else {
        /* Subnormal fp8: the value in units of 2^(1-bias-3) is
         * significand x 2^(exponent-150+bias+2); a carry to 8 is the smallest
         * normal, whose code is 8. */
        uint32_t significand = (magnitude & 0x7FFFFFu) | 0x800000u;
        code = attn_conv_shift_right_rne(significand, 148 - bias - (int)exponent);
    }
    if (nuz && code == 0)
        return 0; /* fnuz has no negative zero: 0x80 is NaN */
    return (uint8_t)(sign | code);
}

static inline uint8_t attn_conv_f32_to_fp8_e4m3fn(float f)
{
    return attn_conv_f32_to_fp8_e4m3(f, 7, 0);
}

static inline uint8_t attn_conv_f32_to_fp8_e4m3fnuz(float f)
{
    return attn_conv_f32_to_fp8_e4m3(f, 8, 1);
}

/* ---- generic element access ------------------------------------------- */

/* Element `index` of an array of `dtype`, as float (exact for every dtype). */
static inline float attn_conv_load_f32(int32_t dtype, const void *base, int64_t index)
{
    switch (dtype) {
    case ATTN_DTYPE_F32: {
        float f;
        memcpy(&f, (const char *)base + index * 4, 4);
        return f;
    }
    case ATTN_DTYPE_F16: {
        uint16_t h;
        memcpy(&h, (const char *)base + index * 2, 2);
        return attn_conv_f16_to_f32(h);
    }
    case ATTN_DTYPE_BF16: {
        uint16_t h;
        memcpy(&h, (const char *)base + index * 2, 2);
        return attn_conv_bf16_to_f32(h);
    }
    case ATTN_DTYPE_FP8_E4M3FN:
        return attn_conv_fp8_e4m3fn_to_f32(((const uint8_t *)base)[index]);
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        return attn_conv_fp8_e4m3fnuz_to_f32(((const uint8_t *)base)[index]);
    default:
        return 0.0f;
    }
}

/* Store `value` as element `index` of an array of `dtype`, rounding to
 * nearest even (fp8: saturating). */
static inline void attn_conv_store_f32(int32_t dtype, void *base, int64_t index, float value)
{
    switch (dtype) {
    case ATTN_DTYPE_F32:
        memcpy((char *)base + index * 4, &value, 4);
        break;
    case ATTN_DTYPE_F16: {
        uint16_t h = attn_conv_f32_to_f16(value);
        memcpy((char *)base + index * 2, &h, 2);
        break;
    }
    case ATTN_DTYPE_BF16: {
        uint16_t h = attn_conv_f32_to_bf16(value);
        memcpy((char *)base + index * 2, &h, 2);
        break;
    }
    case ATTN_DTYPE_FP8_E4M3FN:
        ((uint8_t *)base)[index] = attn_conv_f32_to_fp8_e4m3fn(value);
        break;
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        ((uint8_t *)base)[index] = attn_conv_f32_to_fp8_e4m3fnuz(value);
        break;
    default:
        break;
    }
}

/* Round a float to the nearest value representable in `dtype` and return it
 * as float (the identity for f32). */
static inline float attn_conv_round_to(int32_t dtype, float value)
{
    switch (dtype) {
    case ATTN_DTYPE_F16:
        return attn_conv_f16_to_f32(attn_conv_f32_to_f16(value));
    case ATTN_DTYPE_BF16:
        return attn_conv_bf16_to_f32(attn_conv_f32_to_bf16(value));
    case ATTN_DTYPE_FP8_E4M3FN:
        return attn_conv_fp8_e4m3fn_to_f32(attn_conv_f32_to_fp8_e4m3fn(value));
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        return attn_conv_fp8_e4m3fnuz_to_f32(attn_conv_f32_to_fp8_e4m3fnuz(value));
    default:
        return value;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* ATTN_DTYPE_CONV_H */
