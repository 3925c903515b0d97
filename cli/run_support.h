/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_support.h — what `attnreg run` and `attnreg verify` share: memory in
 * the selected backend's space, and the mapping between attnreg dtypes and
 * .npy dtypes.
 *
 * Backends take tensors in their own memory space: host memory for arch
 * "cpu", device memory for GPUs. The CLI links nothing but libattnreg, so for
 * GPU archs it opens the vendor runtime at run time: the CUDA driver API
 * (libcuda.so.1, present wherever an NVIDIA driver is) for "sm_*" archs and
 * the HIP runtime (libamdhip64.so) for "gfx*" archs. The CUDA path uses the
 * device's primary context, which is the one the CUDA runtime inside a
 * plugin uses too, so pointers are shared. Device index: $ATTNREG_DEVICE,
 * else 0.
 */
#ifndef ATTNREG_CLI_RUN_SUPPORT_H
#define ATTNREG_CLI_RUN_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "attn_types.h"
#include "npy.h"

typedef struct run_memory run_memory;

/* Opens the memory space for `arch`. Returns NULL after writing why into
 * err (no driver, no device). */
run_memory *run_memory_open(const char *arch, char *err, size_t err_size);
void run_memory_close(run_memory *mem);
/* "host", "CUDA device 0", ... */
const char *run_memory_name(const run_memory *mem);

/* A buffer in the backend's space holding a copy of `bytes` host bytes
 * (host may be NULL: the buffer is left as allocated). NULL on failure. */
void *run_memory_upload(run_memory *mem, const void *host, size_t bytes, char *err,
                        size_t err_size);
/* Copies a buffer back to the host after waiting for the device. */
int run_memory_download(run_memory *mem, void *host, const void *buffer, size_t bytes, char *err,
                        size_t err_size);
void run_memory_free(run_memory *mem, void *buffer);

/* The .npy dtype that carries an attnreg dtype: f32 <f4, f16 <f2, bf16 as raw
 * <u2 bits, fp8 as raw |u1 bits. */
npy_dtype run_npy_dtype(int32_t dtype);
size_t run_dtype_size(int32_t dtype);

/* Uploads every array of `args` (host pointers) into `mem` and rewrites the
 * pointers in `device_args`; sizes come from the other arguments. The output
 * buffer and the workspace are allocated too (workspace_size bytes). Returns
 * 0, or -1 with a message; run_args_free releases what was uploaded. */
typedef struct run_args_sizes {
    size_t q_bytes;
    size_t k_bytes;
    size_t v_bytes;
    size_t out_bytes;
    size_t block_table_entries;
    int32_t num_q_heads;
} run_args_sizes;

int run_args_upload(run_memory *mem, const attn_forward_args *host_args,
                    const run_args_sizes *sizes, attn_forward_args *device_args, char *err,
                    size_t err_size);
void run_args_free(run_memory *mem, attn_forward_args *device_args);

#endif /* ATTNREG_CLI_RUN_SUPPORT_H */
