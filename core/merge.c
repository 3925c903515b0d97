/* SPDX-License-Identifier: Apache-2.0 */
/* merge.c — attn_merge_states: two partial attention results over disjoint
 * key ranges, merged by their log-sum-exp (cascade attention, context-
 * parallel decode, chunked context). On the CPU, in host memory, with the
 * math of attn_merge_cpu.h (which cpu-ref's merge_states entry runs too);
 * attn_backend_merge_states (backend.c) shares the argument checks. */
#include <stddef.h>
#include <string.h>

#include "attn_merge_cpu.h"
#include "internal.h"

ATTNREG_API void attn_merge_args_init_sized(attn_merge_args *args, size_t size)
{
    attn_merge_args full;
    memset(&full, 0, sizeof full);
    attn_init_sized(args, size, &full, sizeof full);
}

attn_status attn_merge_check(const char *who, const attn_merge_args *in, attn_merge_args *full)
{
    if (!in)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "%s: args is NULL", who);
    if (in->struct_size < ATTN_MERGE_ARGS_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: struct_size %u is smaller than the oldest layout's %zu", who,
                         in->struct_size, (size_t)ATTN_MERGE_ARGS_MIN_SIZE);
    /* A newer host's extra fields are not read; an older one's are zero. */
    attn_copy_versioned(full, sizeof *full, in,
                        in->struct_size < sizeof *full ? in->struct_size : sizeof *full);
    full->struct_size = sizeof *full;
    if (full->num_tokens < 0 || full->num_heads < 1 || full->head_dim < 1)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: num_tokens (%d) must be >= 0, num_heads (%d) and head_dim (%d) >= 1",
                         who, full->num_tokens, full->num_heads, full->head_dim);
    if (full->dtype != ATTN_DTYPE_F32 && full->dtype != ATTN_DTYPE_F16 &&
        full->dtype != ATTN_DTYPE_BF16)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "%s: dtype %s: the states are f32, f16 or bf16",
                         who, attn_dtype_name(full->dtype));
    if (full->num_tokens == 0)
        return ATTN_OK;
    if (!full->a || !full->b || !full->out || !full->lse_a || !full->lse_b)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: a, lse_a, b, lse_b and out must not be NULL", who);
    if (full->stride_token < 0 || full->stride_head < 0 || full->lse_stride_token < 0 ||
        full->lse_stride_head < 0)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "%s: strides must be >= 0 (0 = contiguous)",
                         who);
    return ATTN_OK;
}

ATTNREG_API attn_status attn_merge_states(const attn_merge_args *in)
{
    attn_merge_args args;
    attn_status st = attn_merge_check("attn_merge_states", in, &args);
    if (st != ATTN_OK)
        return st;
    attn_merge_cpu(&args);
    return ATTN_OK;
}
