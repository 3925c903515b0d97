/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_append_check.h — the checks of a KV append (attn_append_args) that
 * depend on the backend's shape, for every plugin with an append_kv entry
 * (cpu-ref, the GPU plugins). The host (attn_backend_append_kv) has checked
 * what needs no shape: the struct size, the counts, the pointers and the
 * strides.
 */
#ifndef ATTN_APPEND_CHECK_H
#define ATTN_APPEND_CHECK_H

#include <math.h>
#include <stdio.h>

#include "attn_plugin.h"

/* The rows' dtype (src_dtype, 0 = the shape's q_dtype) into *src: f32, f16
 * or bf16; for an FP8 cache, finite non-zero scales. ATTN_ERR_INVALID_ARGUMENT
 * with a sentence prefixed by `who` otherwise. */
static inline attn_status attn_append_check(const char *who, const attn_shape *s,
                                            const attn_append_args *a, int32_t *src, char *err,
                                            size_t err_size)
{
    *src = a->src_dtype ? a->src_dtype : s->q_dtype;
    if (*src != ATTN_DTYPE_F32 && *src != ATTN_DTYPE_F16 && *src != ATTN_DTYPE_BF16) {
        if (err && err_size)
            snprintf(err, err_size, "%s: append src_dtype %s: new K/V rows are f32, f16 or bf16",
                     who, attn_dtype_spelling(*src));
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    if (attn_dtype_is_fp8(s->kv_dtype) && (!isfinite(a->k_scale) || !isfinite(a->v_scale) ||
                                           a->k_scale == 0.0f || a->v_scale == 0.0f)) {
        if (err && err_size)
            snprintf(err, err_size,
                     "%s: k_scale (%g) and v_scale (%g) must be finite and non-zero for a %s "
                     "cache",
                     who, (double)a->k_scale, (double)a->v_scale, attn_dtype_spelling(s->kv_dtype));
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    return ATTN_OK;
}

#endif /* ATTN_APPEND_CHECK_H */
