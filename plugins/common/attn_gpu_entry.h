/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_gpu_entry.h — the descriptor-shaped entry points of the GPU kernel
 * library (plugins/gpu), which the aiter plugins name in their descriptors
 * directly. Two builds provide the same symbols:
 *   - with ATTNREG_HAVE_GPU_KERNELS, the kernel library (gpu_attn.hip,
 *     attn_append_merge.hip; C linkage, hidden visibility, linked into each
 *     plugin's module);
 *   - without it, attn_no_kernels.h: static functions of the same names that
 *     say "built without GPU kernels" (ATTN_ERR_NO_KERNELS).
 * Define ATTN_GPU_ENTRY_PLUGIN_NAME (the plugin's name, a string literal)
 * before including it.
 */
#ifndef ATTN_GPU_ENTRY_H
#define ATTN_GPU_ENTRY_H

#include "attn_plugin.h"

#ifdef ATTNREG_HAVE_GPU_KERNELS
#ifdef __cplusplus
extern "C" {
#endif
/* NULL-terminated list of the archs the kernel build compiled for. */
extern const char *const attn_gpu_kernel_archs[];
/* A backend of the generic kernels (aiter-generic) or of the MTP kernel
 * (aiter-mtp-gfx950, which reads [params] mtp_variant); every other entry
 * serves both. */
attn_status attn_gpu_generic_create(const attn_plugin_context *ctx, const attn_shape *shape,
                                    void **backend, char *err, size_t err_size);
attn_status attn_gpu_mtp_create(const attn_plugin_context *ctx, const attn_shape *shape,
                                void **backend, char *err, size_t err_size);
attn_status attn_gpu_workspace_size(void *backend, const attn_batch_limits *limits, size_t *bytes);
attn_status attn_gpu_forward(void *backend, const attn_forward_args *args, char *err,
                             size_t err_size);
void attn_gpu_destroy(void *backend);
attn_status attn_gpu_probe_devices(const attn_plugin_context *ctx, attn_device_info *devices,
                                   uint32_t capacity, uint32_t *count, char *err, size_t err_size);
attn_status attn_gpu_append_kv(void *backend, const attn_append_args *args, char *err,
                               size_t err_size);
attn_status attn_gpu_merge_states(void *backend, const attn_merge_args *args, char *err,
                                  size_t err_size);
#ifdef __cplusplus
}
#endif
#else
#define ATTN_NO_KERNELS_PLUGIN_NAME ATTN_GPU_ENTRY_PLUGIN_NAME
#include "attn_no_kernels.h"
#endif

/* What forward reads beyond the 1.2 arguments: K/V caches by stride and the
 * log-sum-exp output (both builds declare it; the no-kernels build refuses
 * every forward anyway). */
#define ATTN_GPU_FORWARD_FEATURES (ATTN_FORWARD_KV_STRIDES | ATTN_FORWARD_LSE)

#endif /* ATTN_GPU_ENTRY_H */
