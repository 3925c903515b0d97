/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_pred_util.h — small header-only helpers for the capability predicates
 * of the plugins shipped with attnreg (the GPU plugins and cpu-ref).
 *
 * Plugins must not link libattnreg, so nothing here calls into it: the dtype
 * names are a private copy of the names libattnreg, the conf files and the
 * CLI use, and every helper is a static inline function.
 *
 * Every rejection sentence follows one pattern, so that `attnreg explain`
 * reads evenly across plugins and a user can see at once what was asked and
 * what is allowed:
 *
 *   "<field> <value> not in {<allowed>}"   e.g. "head_dim 72 not in {64, 80, 96, 128, 192, 256}"
 *   "<field> <value> not in [<lo>, <hi>]"  e.g. "max_q_len 1 not in [2, 4]"
 */
#ifndef ATTN_PRED_UTIL_H
#define ATTN_PRED_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attn_plugin.h"

/* Number of elements of a true array (not of a pointer). */
#define ATTN_PRED_COUNT(array) ((uint32_t)(sizeof(array) / sizeof((array)[0])))

/* Room for a formatted allowed set; a verdict message is 256 bytes, so a set
 * longer than this would not fit in the sentence anyway. */
#define ATTN_PRED_SET_MAX 160

/* ---- names ----------------------------------------------------------- */

static inline int attn_pred_is_fp8(int32_t dtype)
{
    return dtype == ATTN_DTYPE_FP8_E4M3FN || dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
}

static inline int attn_pred_is_16bit_float(int32_t dtype)
{
    return dtype == ATTN_DTYPE_BF16 || dtype == ATTN_DTYPE_F16;
}

/* The FP8 format an arch's hardware computes in: gfx942 (MI300) has only the
 * "fnuz" variant, while gfx950 (MI350) and NVIDIA from sm_89 on use OCP
 * e4m3fn. ATTN_DTYPE_INVALID for an arch without a known FP8 format. */
static inline int32_t attn_pred_arch_fp8_dtype(const char *arch)
{
    if (strncmp(arch, "gfx942", ATTN_ARCH_MAX) == 0)
        return ATTN_DTYPE_FP8_E4M3FNUZ;
    if (strncmp(arch, "gfx950", ATTN_ARCH_MAX) == 0)
        return ATTN_DTYPE_FP8_E4M3FN;
    if (strncmp(arch, "sm_", 3) == 0 && arch[3] >= '0' && arch[3] <= '9') {
        /* "sm_89", "sm_90", "sm_100", ...: compare the number, not the text. */
        int version = 0;
        int i;
        for (i = 3; i < ATTN_ARCH_MAX && arch[i] >= '0' && arch[i] <= '9' && version < 10000; i++)
            version = version * 10 + (arch[i] - '0');
        if (version >= 89)
            return ATTN_DTYPE_FP8_E4M3FN;
    }
    return ATTN_DTYPE_INVALID;
}

/* ---- sets -------------------------------------------------------------- */

/* Appends `text` at buf[*used] without ever writing past `size`; a string
 * that does not fit is cut, and buf always stays NUL-terminated. */
static inline void attn_pred_append(char *buf, size_t size, size_t *used, const char *text)
{
    while (*text && *used + 1 < size)
        buf[(*used)++] = *text++;
    buf[*used] = '\0';
}

/* "{64, 80, 96}" */
static inline const char *attn_pred_format_int_set(char *buf, size_t size, const int32_t *values,
                                                   uint32_t count)
{
    size_t used = 0;
    uint32_t i;
    char number[16];
    attn_pred_append(buf, size, &used, "{");
    for (i = 0; i < count; i++) {
        snprintf(number, sizeof number, "%d", (int)values[i]);
        if (i)
            attn_pred_append(buf, size, &used, ", ");
        attn_pred_append(buf, size, &used, number);
    }
    attn_pred_append(buf, size, &used, "}");
    return buf;
}

/* "{bf16, f16}" */
static inline const char *attn_pred_format_dtype_set(char *buf, size_t size, const int32_t *dtypes,
                                                     uint32_t count)
{
    size_t used = 0;
    uint32_t i;
    attn_pred_append(buf, size, &used, "{");
    for (i = 0; i < count; i++) {
        if (i)
            attn_pred_append(buf, size, &used, ", ");
        attn_pred_append(buf, size, &used, attn_dtype_spelling(dtypes[i]));
    }
    attn_pred_append(buf, size, &used, "}");
    return buf;
}

/* "{gfx942, gfx950}" from a NULL-terminated list. */
static inline const char *attn_pred_format_name_set(char *buf, size_t size,
                                                    const char *const *names)
{
    size_t used = 0;
    uint32_t i;
    attn_pred_append(buf, size, &used, "{");
    for (i = 0; names[i]; i++) {
        if (i)
            attn_pred_append(buf, size, &used, ", ");
        attn_pred_append(buf, size, &used, names[i]);
    }
    attn_pred_append(buf, size, &used, "}");
    return buf;
}

static inline int attn_pred_int_in(int32_t value, const int32_t *values, uint32_t count)
{
    uint32_t i;
    for (i = 0; i < count; i++)
        if (values[i] == value)
            return 1;
    return 0;
}

/* Whether `name` is one of a NULL-terminated list. The comparison is bounded
 * by ATTN_ARCH_MAX because arch names arrive in a fixed-size shape field. */
static inline int attn_pred_name_in(const char *name, const char *const *names)
{
    uint32_t i;
    for (i = 0; names[i]; i++)
        if (strncmp(name, names[i], ATTN_ARCH_MAX) == 0)
            return 1;
    return 0;
}

/* ---- predicate building blocks -------------------------------------------
 * Each accepts or rejects `verdict` and returns what the predicate returns
 * (1 = accept), so a predicate can end with `return attn_pred_require_...`. */

/* "arch gfx90a not in {gfx942, gfx950}" with ATTN_REASON_ARCH. */
static inline int attn_pred_require_arch_in(attn_verdict *verdict, const attn_shape *shape,
                                            const char *const *archs)
{
    char set[ATTN_PRED_SET_MAX];
    if (attn_pred_name_in(shape->arch, archs))
        return attn_accept(verdict);
    /* %.*s: the shape's arch is a fixed-size field that a careless host may
     * not have terminated. */
    return attn_reject(verdict, ATTN_REASON_ARCH, "arch %.*s not in %s", ATTN_ARCH_MAX - 1,
                       shape->arch, attn_pred_format_name_set(set, sizeof set, archs));
}

/* "head_dim 72 not in {64, 80, 96, 128, 192, 256}" */
static inline int attn_pred_require_int_in(attn_verdict *verdict, attn_reason reason,
                                           const char *field, int32_t value, const int32_t *allowed,
                                           uint32_t count)
{
    char set[ATTN_PRED_SET_MAX];
    if (attn_pred_int_in(value, allowed, count))
        return attn_accept(verdict);
    return attn_reject(verdict, reason, "%s %d not in %s", field, (int)value,
                       attn_pred_format_int_set(set, sizeof set, allowed, count));
}

/* "max_q_len 1 not in [2, 4]"; an upper bound of INT32_MAX is written as
 * "INT32_MAX", which reads better than its ten digits. */
static inline int attn_pred_require_int_range(attn_verdict *verdict, attn_reason reason,
                                              const char *field, int32_t value, int32_t lo,
                                              int32_t hi)
{
    if (value >= lo && value <= hi)
        return attn_accept(verdict);
    if (hi == INT32_MAX)
        return attn_reject(verdict, reason, "%s %d not in [%d, INT32_MAX]", field, (int)value,
                           (int)lo);
    return attn_reject(verdict, reason, "%s %d not in [%d, %d]", field, (int)value, (int)lo,
                       (int)hi);
}

/* "q_dtype f32 not in {bf16, f16}" */
static inline int attn_pred_require_dtype_in(attn_verdict *verdict, attn_reason reason,
                                             const char *field, int32_t dtype,
                                             const int32_t *allowed, uint32_t count)
{
    char set[ATTN_PRED_SET_MAX];
    if (attn_pred_int_in(dtype, allowed, count))
        return attn_accept(verdict);
    return attn_reject(verdict, reason, "%s %s not in %s", field, attn_dtype_spelling(dtype),
                       attn_pred_format_dtype_set(set, sizeof set, allowed, count));
}

/* The GQA ratio num_q_heads / num_kv_heads (kv heads 0 = MHA), or 0 when
 * the heads are not positive or do not divide evenly. */
static inline int32_t attn_pred_gqa_ratio(const attn_shape *shape)
{
    int32_t kv_heads = attn_shape_kv_heads(shape);
    if (shape->num_q_heads <= 0 || kv_heads <= 0 || shape->num_q_heads % kv_heads != 0)
        return 0;
    return shape->num_q_heads / kv_heads;
}

/* Any MHA/GQA/MQA ratio, as long as the KV heads divide the query heads:
 * "num_q_heads (30) is not a multiple of num_kv_heads (4)". */
static inline int attn_pred_require_gqa_divisible(attn_verdict *verdict, const attn_shape *shape)
{
    if (attn_pred_gqa_ratio(shape) > 0)
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_GQA_RATIO,
                       "num_q_heads (%d) is not a multiple of num_kv_heads (%d)",
                       (int)shape->num_q_heads, (int)attn_shape_kv_heads(shape));
}

/* Writes one sentence into a constructor's or forward's error buffer, which
 * the caller may leave out (NULL or size 0). */
static inline void attn_pred_set_error(char *err, size_t err_size, const char *sentence)
{
    if (err && err_size)
        snprintf(err, err_size, "%s", sentence);
}

#endif /* ATTN_PRED_UTIL_H */
