/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu_attn.h — the C-callable launcher API of the GPU kernels shared by the
 * aiter-generic and aiter-mtp-gfx950 plugins (and used directly by the GPU
 * test and bench). Plain C declarations; the implementation is HIP source
 * compiled by nvcc (CUDA) or a HIP compiler (ROCm).
 *
 * Contract:
 *   - gpu_attn_probe never aborts: no driver or no device is ATTN_ERR_NO_DEVICE
 *     with the runtime's own message.
 *   - gpu_attn_create binds a context to the current device and one shape; it
 *     checks that a device is there and that the binary holds its arch.
 *   - gpu_attn_workspace_size is a pure function of the shape, the batch
 *     limits and the device's compute-unit count (fixed per context).
 *   - gpu_attn_forward allocates nothing, synchronises nothing and launches
 *     on args->stream only, so it can be captured in a CUDA/HIP graph.
 *
 * The plugins reach the same code through the descriptor-shaped entry points
 * of plugins/common/attn_gpu_entry.h (attn_gpu_*), defined in gpu_attn.hip.
 */
#ifndef ATTN_GPU_ATTN_H
#define ATTN_GPU_ATTN_H

#include <stddef.h>
#include <stdint.h>

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gpu_attn_kernel {
    GPU_ATTN_KERNEL_GENERIC = 0, /* aiter-generic: 2D / split-KV 3D, scalar math */
    GPU_ATTN_KERNEL_MTP = 1      /* aiter-mtp: MTP verify shape, matrix units where built */
} gpu_attn_kernel;

typedef struct gpu_attn_ctx gpu_attn_ctx;

/* NULL-terminated list of the archs this binary holds kernels for. */
const char *const *gpu_attn_built_archs(void);

/* "cuda" or "hip": the runtime this build links. */
const char *gpu_attn_platform(void);

attn_status gpu_attn_probe(attn_device_info *devices, uint32_t capacity, uint32_t *count, char *err,
                           size_t err_size);

attn_status gpu_attn_create(gpu_attn_kernel kernel, const attn_shape *shape, gpu_attn_ctx **out,
                            char *err, size_t err_size);
attn_status gpu_attn_workspace_size(const gpu_attn_ctx *ctx, const attn_batch_limits *limits,
                                    size_t *bytes);
attn_status gpu_attn_forward(gpu_attn_ctx *ctx, const attn_forward_args *args, char *err,
                             size_t err_size);
void gpu_attn_destroy(gpu_attn_ctx *ctx);

/* For tests and benchmarks: 0 = the documented rule (default), 1 = force the
 * 2D path (generic only), n > 1 = force n key segments (at most 64). */
void gpu_attn_force_segments(gpu_attn_ctx *ctx, int nseg);

/* For tests and benchmarks: use = 0 sends this context's multi-token batches
 * to the portable generic kernel instead of the prefill kernel; use = 1
 * keeps the rule. Returns whether the prefill kernel now runs them. */
int gpu_attn_force_prefill(gpu_attn_ctx *ctx, int use);

/* For tests: run the portable generic kernel with `stages` raw K/V stages
 * (1-4; the one-stage path is what gfx942 runs at head size 128 and gfx950
 * for the MTP shape) and, with raw_kv at D 192/256, its raw-K/V variant
 * (what gfx942 runs there) instead of the launch plan's choice. Returns 1
 * when taken, 0 (the plan's choice stays) when the plan has no generic
 * kernel or the program would exceed the arch's shared memory. */
int gpu_attn_force_generic(gpu_attn_ctx *ctx, int stages, int raw_kv);

/* The MTP kernel's variant (the plugin's [params] mtp_variant, the bench's
 * and the tests' ATTNREG_MTP_WGMMA): 0 = mma.sync for every q_len, 1 =
 * wgmma for every q_len, 2 = the rule (wgmma for 3-4 query tokens). Where
 * the build or the device has no wgmma variant, mma.sync stays. Returns the
 * variant in use, -1 for a context that is not the MTP kernel's. */
int gpu_attn_force_mtp_variant(gpu_attn_ctx *ctx, int variant);

/* For benchmarks and tests (ATTNREG_MTP_PAIR): the MTP warpgroup kernel's
 * pair form (two key segments a program of two warpgroups) by the family's
 * rule (-1, the default), never (0) or wherever the segment count is even
 * (1). Returns the setting, -2 for a context that is not the MTP kernel's. */
int gpu_attn_force_mtp_pair(gpu_attn_ctx *ctx, int use);

/* For benchmarks (the bench's ATTNREG_BENCH_PDL=0): launch the reduce kernel
 * as a programmatic dependent of the attention kernel (use = 1, the default
 * on sm_90 and later) or plainly (0). Returns the setting in effect (0 where
 * the device or platform has none), -1 for no context. */
int gpu_attn_force_pdl(gpu_attn_ctx *ctx, int use);
/* For benchmarks and tests (ATTNREG_BENCH_PDL_MAIN): the decode-mma (16-bit
 * cache) and MTP kernels launched as programmatic dependents of the kernel
 * before them (attn_kparams.pdl_main; default: where the device can, sm_90+).
 * Returns the setting in force, -1 without a context. */
int gpu_attn_force_pdl_main(gpu_attn_ctx *ctx, int use);

/* For benchmarks (the bench's ATTNREG_BENCH_REDUCE_ROWS=0): merge up to
 * ATTN_REDUCE_ROWS_MAX_SEGMENTS segments with the row-wise reduce (use = 1,
 * the default) or always with the per-row one (0). Returns the setting, -1
 * for no context. */
int gpu_attn_force_reduce_rows(gpu_attn_ctx *ctx, int use);

/* For benchmarks and tests (the bench's and the test's ATTNREG_BENCH_PERSIST):
 * the prefill kernel's grid. use < 0: the one-wave rule (the default; its
 * dynamic grid, one program an SM each taking items from a counter, where a
 * launch has more items than one wave of programs; plugins/gpu/README.md,
 * "Rules"); 0: one program an item for every launch; > 0: the dynamic grid
 * for every launch. The dynamic grid needs its counters' room in the
 * workspace (gpu_attn_workspace_size counts it): without, one program an
 * item.
 * Returns the setting (-1, 0 or 1), -2 for no context. */
int gpu_attn_force_prefill_persistent(gpu_attn_ctx *ctx, int use);

/* For benchmarks: the matrix-unit decode kernel's shared-memory carveout
 * (percent of 228 KB on sm_90; 0 = the default, 100) and the programs per
 * compute unit its segment rule fills (0 = the default, 6; at most what the
 * carveout holds). Process-wide; set it before
 * the forwards it should time, and size workspaces after it. */
void gpu_attn_tune_decode_mma(int carveout_percent, int target_per_cu);

/* For tests: the prefill kernel's grid that gpu_attn_forward runs for `args`
 * (the forward's own decision, from the same sizes, scales and workspace;
 * nothing is launched): 2 the dynamic grid, 1 one program an item (the
 * one-wave rule's choice, or a workspace without room for the counters), 0
 * the batch does not run on the prefill kernel, -1 no context or an empty
 * batch. *counters_end (may be NULL): where the dynamic grid's counters end
 * in the workspace (bytes from its start; the partials before them), 0 when
 * the launch wants none. */
int gpu_attn_plan_prefill_grid(const gpu_attn_ctx *ctx, const attn_forward_args *args,
                               size_t *counters_end);

/* The number of key segments the rule picks for a batch (1 = 2D path). */
int gpu_attn_plan_segments(const gpu_attn_ctx *ctx, int num_tokens, int num_seqs, int max_seqlen_q,
                           int max_seqlen_k);

/* Compute units of the context's device. */
int gpu_attn_compute_units(const gpu_attn_ctx *ctx);

/* The context's shape (the library's copy). */
const attn_shape *gpu_attn_shape(const gpu_attn_ctx *ctx);

/* The new tokens' K/V rows into the paged cache (attn_append_args: slots,
 * strides, dtype conversion bit-identical to cpu-ref's append_kv), one
 * launch on args->stream; slots < 0 (padding) or past num_blocks * page are
 * skipped. Allocates and synchronises nothing (graph capturable). */
attn_status gpu_attn_append_kv(gpu_attn_ctx *ctx, const attn_append_args *args, char *err,
                               size_t err_size);

/* attn_merge_states on device arrays, one launch on `stream`, the host
 * merge's float math; head_dim a multiple of 8. */
struct attn_merge_args;
attn_status gpu_attn_merge_states(gpu_attn_ctx *ctx, const struct attn_merge_args *args,
                                  void *stream, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* ATTN_GPU_ATTN_H */
