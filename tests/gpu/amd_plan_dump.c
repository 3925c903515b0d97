/* SPDX-License-Identifier: Apache-2.0 */
/*
 * amd_plan_dump.c — prints, one JSON object per line, what the launch-plan
 * table (plugins/common/attn_launch_plan.h) says about every kernel the AMD
 * build compiles, per AMD arch: its demangled name, the threads of a
 * program, the static LDS the plan counts, the dynamic LDS a launch asks
 * for, and whether any shape the predicates accept launches it. The AMD
 * code-object check (plugins/gpu/amd_code_objects.py) compares these with
 * the kernels' metadata in the compiled code objects.
 */
#include <stdio.h>
#include <string.h>

#include "attn_launch_plan.h"

static const int head_dims[] = {64, 80, 96, 128, 192, 256};
static const int decode_heads[] = {1, 2, 4, 8};

static void line(const attn_arch_limits *lim, const char *name, int threads, int static_bytes,
                 int dynamic_bytes, int planned)
{
    printf("{\"arch\": \"%s\", \"kernel\": \"%s\", \"threads\": %d, \"static_bytes\": %d, "
           "\"dynamic_bytes\": %d, \"planned\": %s, \"shared_limit\": %d, "
           "\"max_registers\": %d}\n",
           lim->arch, name, threads, static_bytes, dynamic_bytes, planned ? "true" : "false",
           (int)lim->shared_bytes_per_block, (int)lim->max_registers_per_thread);
}

int main(void)
{
    for (size_t a = 0; a < ATTN_GPU_ARCH_LIMITS_COUNT; a++) {
        const attn_arch_limits *lim = &attn_gpu_arch_limits[a];
        char name[128];
        if (attn_launch_plan_arch_is_nvidia(lim->arch))
            continue;
        /* The portable generic kernel: 4 rows a warp (multi-token batches)
         * at every head size and cache width; 16 rows a warp only for the
         * MTP shape (D 256, fp8). Static LDS: none (all dynamic). */
        for (int rows = 4; rows <= 16; rows *= 4)
            for (size_t di = 0; di < sizeof head_dims / sizeof head_dims[0]; di++)
                for (int kvb = 1; kvb <= 2; kvb++) {
                    const int d = head_dims[di];
                    if (rows == 16 && (d != ATTN_MTP_D || kvb != 1))
                        continue;
                    const int st = attn_launch_plan_generic_stages(d, d, kvb, rows, lim, 0);
                    snprintf(name, sizeof name, "attn_generic_kernel<%d, %d, %d, false>", rows, d,
                             kvb);
                    line(lim, name, 32 * ATTN_GEN_WARPS, 0,
                         attn_launch_plan_generic_bytes(d, d, kvb, rows, st ? st : 1), st > 0);
                    /* the raw-K/V variant: planned where the float tiles do
                     * not fit */
                    if (rows != 4 || !attn_launch_plan_generic_raw_built(d))
                        continue;
                    const int rst =
                        st ? 0 : attn_launch_plan_generic_stages(d, d, kvb, rows, lim, 1);
                    snprintf(name, sizeof name, "attn_generic_kernel<%d, %d, %d, true>", rows, d,
                             kvb);
                    line(lim, name, 32 * ATTN_GEN_WARPS, 0,
                         attn_launch_plan_generic_raw_bytes(d, d, kvb, rows, rst ? rst : 1),
                         rst > 0);
                }
        /* The scalar decode kernel: static LDS only (the cross-warp merge);
         * 8 heads a program only up to D 128. */
        for (size_t di = 0; di < sizeof head_dims / sizeof head_dims[0]; di++)
            for (int kvb = 1; kvb <= 2; kvb++)
                for (size_t gi = 0; gi < sizeof decode_heads / sizeof decode_heads[0]; gi++) {
                    const int d = head_dims[di], gt = decode_heads[gi];
                    if (gt == 8 && d > 128)
                        continue;
                    const int bytes = attn_launch_plan_decode_bytes(d, gt);
                    snprintf(name, sizeof name, "attn_decode_kernel<%d, %d, %d>", d, kvb, gt);
                    line(lim, name, 32 * ATTN_DEC_WARPS, bytes, 0,
                         bytes <= lim->shared_bytes_per_block);
                }
        /* The segment reduce: 16-byte and scalar loads, both block sizes. */
        for (int vec = 4; vec >= 1; vec -= 3)
            for (int t = ATTN_REDUCE_THREADS; t <= ATTN_REDUCE_THREADS_MANY; t *= 2) {
                snprintf(name, sizeof name, "attn_reduce_kernel<%d, %d>", vec, t);
                line(lim, name, t, attn_launch_plan_reduce_bytes(t), 0, 1);
            }
        /* Its row-wise form for few segments: no LDS. */
        line(lim, "attn_reduce_rows_kernel", ATTN_REDUCE_ROWS_THREADS, 0, 0, 1);
        /* KV append (no LDS) and the state merge (12 bytes a head of
         * dynamic LDS, at most 48 KB: gpu_attn_merge_states refuses more). */
        line(lim, "attn_append_kernel", 128, 0, 0, 1);
        line(lim, "attn_merge_kernel", 128, 0, 48 * 1024, 1);
    }
    return 0;
}
