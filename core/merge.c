/* SPDX-License-Identifier: Apache-2.0 */
/* merge.c — attn_merge_states: two partial attention results over disjoint
 * key ranges, merged by their log-sum-exp (cascade attention, context-
 * parallel decode, chunked context). On the CPU, in host memory. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "attn_dtype_conv.h"
#include "internal.h"

ATTNREG_API void attn_merge_args_init_sized(attn_merge_args *args, size_t size)
{
    attn_merge_args full;
    memset(&full, 0, sizeof full);
    attn_init_sized(args, size, &full, sizeof full);
}

ATTNREG_API attn_status attn_merge_states(const attn_merge_args *in)
{
    if (!in)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_merge_states: args is NULL");
    if (in->struct_size < ATTN_MERGE_ARGS_MIN_SIZE)
        return attn_fail(
            ATTN_ERR_INVALID_ARGUMENT,
            "attn_merge_states: struct_size %u is smaller than the oldest layout's %zu",
            in->struct_size, (size_t)ATTN_MERGE_ARGS_MIN_SIZE);
    /* A newer host's extra fields are not read; an older one has none. */
    attn_merge_args args;
    attn_copy_versioned(&args, sizeof args, in,
                        in->struct_size < sizeof args ? in->struct_size : sizeof args);
    if (args.num_tokens < 0 || args.num_heads < 1 || args.head_dim < 1)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_merge_states: num_tokens (%d) must be >= 0, num_heads (%d) and "
                         "head_dim (%d) >= 1",
                         args.num_tokens, args.num_heads, args.head_dim);
    if (args.dtype != ATTN_DTYPE_F32 && args.dtype != ATTN_DTYPE_F16 &&
        args.dtype != ATTN_DTYPE_BF16)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_merge_states: dtype %s: the states are f32, f16 or bf16",
                         attn_dtype_name(args.dtype));
    if (args.num_tokens == 0)
        return ATTN_OK;
    if (!args.a || !args.b || !args.out || !args.lse_a || !args.lse_b)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_merge_states: a, lse_a, b, lse_b and out must not be NULL");
    if (args.stride_token < 0 || args.stride_head < 0 || args.lse_stride_token < 0 ||
        args.lse_stride_head < 0)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_merge_states: strides must be >= 0 (0 = contiguous)");
    const int64_t sh = args.stride_head ? args.stride_head : args.head_dim;
    const int64_t st =
        args.stride_token ? args.stride_token : (int64_t)args.num_heads * args.head_dim;
    const int64_t lh = args.lse_stride_head ? args.lse_stride_head : 1;
    const int64_t lt = args.lse_stride_token ? args.lse_stride_token : args.num_heads;
    for (int64_t t = 0; t < args.num_tokens; t++)
        for (int64_t h = 0; h < args.num_heads; h++) {
            const int64_t row = t * st + h * sh, at = t * lt + h * lh;
            const float la = args.lse_a[at], lb = args.lse_b[at];
            const float m = la > lb ? la : lb;
            /* -inf on a side: it saw no key (exp gives an exact 0); both:
             * a zero row, as attention writes for a row with no key. */
            const float wa = la == -INFINITY ? 0.0f : expf(la - m);
            const float wb = lb == -INFINITY ? 0.0f : expf(lb - m);
            const float sum = wa + wb;
            const float fa = sum > 0.0f ? wa / sum : 0.0f, fb = sum > 0.0f ? wb / sum : 0.0f;
            /* Each element is read from both sides before it is written, so
             * out may be a or b. */
            for (int64_t i = 0; i < args.head_dim; i++) {
                float va = attn_conv_load_f32(args.dtype, args.a, row + i);
                float vb = attn_conv_load_f32(args.dtype, args.b, row + i);
                attn_conv_store_f32(args.dtype, args.out, row + i, va * fa + vb * fb);
            }
            if (args.lse_out)
                args.lse_out[at] = sum > 0.0f ? m + logf(sum) : -INFINITY;
        }
    return ATTN_OK;
}
