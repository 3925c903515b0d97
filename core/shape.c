/* SPDX-License-Identifier: Apache-2.0 */
/* shape.c — shape defaults, validation (the "invalid" verdicts given before
 * any plugin is asked), text form, the normal form used as cache key, and the
 * fields that conf narrowing keys and fallback rules name. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

ATTNREG_API void attn_shape_init_sized(attn_shape *s, size_t size)
{
    attn_shape full;
    attn_shape_defaults(&full);
    attn_init_sized(s, size, &full, sizeof full);
}

/* Hosts built before 0.3 call this symbol: they hold at least the 0.1
 * layout, so that much is written and no more. */
ATTNREG_API void(attn_shape_init)(attn_shape *s)
{
    attn_shape_init_sized(s, ATTN_SHAPE_SIZE_0_1);
}

attn_status attn_shape_normalize(const attn_shape *in, attn_shape *out)
{
    if (!in || !out)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "shape is NULL");
    if (in->struct_size < ATTN_SHAPE_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "shape struct_size %u is smaller than the oldest known layout (%zu); "
                         "call attn_shape_init() first",
                         in->struct_size, (size_t)ATTN_SHAPE_MIN_SIZE);
    if (in->struct_size >= sizeof *in) {
        memcpy(out, in, sizeof *out);
    } else {
        attn_shape_defaults(out);
        attn_copy_versioned(out, sizeof *out, in, in->struct_size);
    }
    out->struct_size = sizeof *out;
    /* Bytes after the arch's NUL must not make equal shapes hash apart. */
    size_t n = strnlen(out->arch, ATTN_ARCH_MAX);
    if (n < ATTN_ARCH_MAX)
        memset(out->arch + n, 0, ATTN_ARCH_MAX - n);
    if (out->softcap == 0.0f)
        out->softcap = 0.0f; /* folds -0.0 into +0.0 */
    return ATTN_OK;
}

uint64_t attn_shape_hash(const attn_shape *s)
{
    /* Each 8-byte word times its own odd constant, summed: the multiplies are
     * independent, so they run in parallel instead of as one serial chain. */
    static const uint64_t k[16] = {
        0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull, 0x27d4eb2f165667c5ull,
        0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull, 0x85ebca6b27d4eb2full, 0xd6e8feb86659fd93ull,
        0xa0761d6478bd642full, 0xe7037ed1a0b428dbull, 0x8ebc6af09c88c6e3ull, 0x589965cc75374cc3ull,
        0x1d8e4e27c47d124full, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull, 0x2545f4914f6cdd1dull};
    const unsigned char *p = (const unsigned char *)s;
    enum { WORDS = sizeof(attn_shape) / 8 };
    _Static_assert(WORDS < 16, "attn_shape grew: add constants");
    uint64_t h = 0;
    for (size_t i = 0; i < WORDS; i++) {
        uint64_t w;
        memcpy(&w, p + i * 8, 8);
        h += (w ^ k[i]) * k[15 - i];
    }
    if (sizeof(attn_shape) % 8 == 4) {
        uint32_t w;
        memcpy(&w, p + WORDS * 8, 4);
        h += (uint64_t)w * k[15];
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static int dtype_known(int32_t d)
{
    return d > ATTN_DTYPE_INVALID && d < ATTN_DTYPE_COUNT;
}

/* The DTYPE fields of ATTN_SHAPE_FIELD_MAP, in its order. */
#define DTYPE_ROW_ARCH_(member)
#define DTYPE_ROW_INT_(member)
#define DTYPE_ROW_BOOL_(member)
#define DTYPE_ROW_FLOAT_(member)
#define DTYPE_ROW_DTYPE_(member) {#member, offsetof(attn_shape, member)},
#define DTYPE_ROW_(member, KIND) DTYPE_ROW_##KIND##_(member)
static const struct {
    const char *name;
    size_t offset;
} dtype_fields[] = {ATTN_SHAPE_FIELD_MAP(DTYPE_ROW_)};
#undef DTYPE_ROW_
#undef DTYPE_ROW_DTYPE_
#undef DTYPE_ROW_FLOAT_
#undef DTYPE_ROW_BOOL_
#undef DTYPE_ROW_INT_
#undef DTYPE_ROW_ARCH_

ATTNREG_API int attn_shape_validate(const attn_shape *in, char *msg, size_t size)
{
    attn_shape s;
    if (msg && size)
        msg[0] = '\0';
    if (attn_shape_normalize(in, &s) != ATTN_OK)
        return attn_invalid(msg, size, "%s", attn_last_error());
    if (strnlen(in->arch, ATTN_ARCH_MAX) == ATTN_ARCH_MAX)
        return attn_invalid(msg, size, "arch is not NUL-terminated within %d bytes", ATTN_ARCH_MAX);
    if (s.arch[0] == '\0')
        return attn_invalid(msg, size, "arch is empty");
    if (s.num_q_heads <= 0)
        return attn_invalid(msg, size, "num_q_heads must be positive (got %d)", s.num_q_heads);
    if (s.num_kv_heads < 0)
        return attn_invalid(msg, size, "num_kv_heads must be positive, or 0 for MHA (got %d)",
                            s.num_kv_heads);
    int32_t kv = attn_shape_kv_heads(&s);
    if (s.num_q_heads % kv != 0)
        return attn_invalid(msg, size,
                            "requires num_heads (%d) to be a multiple of num_kv_heads (%d)",
                            s.num_q_heads, kv);
    if (s.head_dim <= 0)
        return attn_invalid(msg, size, "head_dim must be positive (got %d)", s.head_dim);
    if (s.head_dim_v < 0)
        return attn_invalid(msg, size, "head_dim_v must be positive, or 0 for head_dim (got %d)",
                            s.head_dim_v);
    for (size_t i = 0; i < sizeof dtype_fields / sizeof dtype_fields[0]; i++) {
        int32_t d;
        memcpy(&d, (const char *)&s + dtype_fields[i].offset, sizeof d);
        if (!dtype_known(d))
            return attn_invalid(msg, size, "%s %d is not a known dtype", dtype_fields[i].name, d);
    }
    if (s.page_size <= 0)
        return attn_invalid(msg, size, "page_size must be positive (got %d)", s.page_size);
    if (s.max_q_len <= 0)
        return attn_invalid(msg, size, "max_q_len must be positive (got %d)", s.max_q_len);
    if (s.max_kv_len <= 0)
        return attn_invalid(msg, size, "max_kv_len must be positive (got %d)", s.max_kv_len);
    if (s.max_q_len > s.max_kv_len)
        return attn_invalid(
            msg, size, "max_q_len (%d) exceeds max_kv_len (%d): the new tokens are among the keys",
            s.max_q_len, s.max_kv_len);
    if (s.causal != 0 && s.causal != 1)
        return attn_invalid(msg, size, "causal must be 0 or 1 (got %d)", s.causal);
    if (s.window_left < -1)
        return attn_invalid(msg, size, "window_left must be -1 (unbounded) or >= 0 (got %d)",
                            s.window_left);
    if (s.window_right < -1)
        return attn_invalid(msg, size, "window_right must be -1 (unbounded) or >= 0 (got %d)",
                            s.window_right);
    if (!isfinite(s.softcap) || s.softcap < 0.0f)
        return attn_invalid(msg, size,
                            "softcap must be 0 (none) or a positive finite number (got %g)",
                            (double)s.softcap);
    if (s.has_sinks != 0 && s.has_sinks != 1)
        return attn_invalid(msg, size, "has_sinks must be 0 or 1 (got %d)", s.has_sinks);
    if (s.return_lse != 0 && s.return_lse != 1)
        return attn_invalid(msg, size, "return_lse must be 0 or 1 (got %d)", s.return_lse);
    return 1;
}

ATTNREG_API int attn_shape_format(const attn_shape *in, char *buf, size_t size)
{
    attn_shape s;
    if (!buf || !size)
        return -1;
    if (attn_shape_normalize(in, &s) != ATTN_OK)
        return snprintf(buf, size, "(invalid shape struct)");
    /* lse=1 only when asked: the text of every other shape reads as before
     * 0.4 (logs and messages that tools may match). */
    return snprintf(buf, size,
                    "arch=%.*s q_heads=%d kv_heads=%d head_dim=%d head_dim_v=%d q=%s kv=%s "
                    "compute=%s out=%s page=%d q_len=%d kv_len=%d causal=%d window=%d,%d "
                    "softcap=%g sinks=%d%s",
                    /* Bounded: a host's arch need not hold a NUL (validate
                     * refuses it, but formatting comes first in messages). */
                    (int)strnlen(s.arch, ATTN_ARCH_MAX), s.arch, s.num_q_heads,
                    attn_shape_kv_heads(&s), s.head_dim, attn_shape_head_dim_v(&s),
                    attn_dtype_name(s.q_dtype), attn_dtype_name(s.kv_dtype),
                    attn_dtype_name(s.compute_dtype), attn_dtype_name(s.out_dtype), s.page_size,
                    s.max_q_len, s.max_kv_len, s.causal, s.window_left, s.window_right,
                    (double)s.softcap, s.has_sinks, s.return_lse ? " lse=1" : "");
}

/* ---- fields of a shape that conf keys and fallback rules name ---------- */

const char *attn_field_name(shape_field f)
{
    switch (f) {
#define SHAPE_PROPERTY_NAME_(ID, name, value)                                                      \
    case FIELD_##ID:                                                                               \
        return name;
        ATTN_SHAPE_PROPERTY_MAP(SHAPE_PROPERTY_NAME_)
#undef SHAPE_PROPERTY_NAME_
    }
    return "?";
}

int32_t attn_shape_field_get(const attn_shape *s, shape_field f)
{
    switch (f) {
#define SHAPE_PROPERTY_GET_(ID, name, value)                                                       \
    case FIELD_##ID:                                                                               \
        return value;
        ATTN_SHAPE_PROPERTY_MAP(SHAPE_PROPERTY_GET_)
#undef SHAPE_PROPERTY_GET_
    }
    return 0;
}

void attn_shape_field_set(attn_shape *s, shape_field f, int32_t v)
{
    switch (f) {
#define FALLBACK_FIELD_SET_(ID, member)                                                            \
    case FIELD_##ID:                                                                               \
        s->member = v;                                                                             \
        break;
        ATTN_FALLBACK_FIELD_MAP(FALLBACK_FIELD_SET_)
#undef FALLBACK_FIELD_SET_
    default:
        break; /* fallback rules only rewrite dtypes */
    }
}
