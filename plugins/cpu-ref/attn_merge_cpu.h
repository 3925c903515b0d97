/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_merge_cpu.h — the one CPU merge of two partial attention states by
 * their log-sum-exp (attn_merge_args, attn_types.h), in host memory.
 *
 * Header-only, like attn_dtype_conv.h beside it, so that libattnreg's
 * attn_merge_states and the cpu-ref plugin's merge_states entry (which must
 * not link libattnreg) run the same code. The caller has checked the
 * arguments (core/merge.c's attn_merge_check): arrays non-NULL, counts and
 * strides >= 0, dtype f32, f16 or bf16. Needs libm (expf, logf).
 */
#ifndef ATTN_MERGE_CPU_H
#define ATTN_MERGE_CPU_H

#include <math.h>
#include <stdint.h>

#include "attn_dtype_conv.h"
#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline void attn_merge_cpu(const attn_merge_args *args)
{
    const int64_t sh = args->stride_head ? args->stride_head : args->head_dim;
    const int64_t st =
        args->stride_token ? args->stride_token : (int64_t)args->num_heads * args->head_dim;
    const int64_t lh = args->lse_stride_head ? args->lse_stride_head : 1;
    const int64_t lt = args->lse_stride_token ? args->lse_stride_token : args->num_heads;
    for (int64_t t = 0; t < args->num_tokens; t++)
        for (int64_t h = 0; h < args->num_heads; h++) {
            const int64_t row = t * st + h * sh, at = t * lt + h * lh;
            const float la = args->lse_a[at], lb = args->lse_b[at];
            const float m = la > lb ? la : lb;
            /* -inf on a side: it saw no key (exp gives an exact 0); both:
             * a zero row, as attention writes for a row with no key. */
            const float wa = la == -INFINITY ? 0.0f : expf(la - m);
            const float wb = lb == -INFINITY ? 0.0f : expf(lb - m);
            const float sum = wa + wb;
            const float fa = sum > 0.0f ? wa / sum : 0.0f, fb = sum > 0.0f ? wb / sum : 0.0f;
            /* Each element is read from both sides before it is written, so
             * out may be a or b. */
            for (int64_t i = 0; i < args->head_dim; i++) {
                float va = attn_conv_load_f32(args->dtype, args->a, row + i);
                float vb = attn_conv_load_f32(args->dtype, args->b, row + i);
                attn_conv_store_f32(args->dtype, args->out, row + i, va * fa + vb * fb);
            }
            if (args->lse_out)
                args->lse_out[at] = sum > 0.0f ? m + logf(sum) : -INFINITY;
        }
}

#ifdef __cplusplus
}
#endif

#endif /* ATTN_MERGE_CPU_H */
