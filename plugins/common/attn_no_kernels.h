/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_no_kernels.h — the entry points of a GPU plugin built without GPU
 * kernels (no nvcc or HIP compiler, or ATTNREG_GPU=off). The plugin still
 * loads, answers its predicates and so takes part in planning; everything
 * that would need a kernel says so with ATTN_ERR_NO_KERNELS.
 *
 * Included by attn_gpu_entry.h in a build without kernels: it defines, as
 * static functions, the attn_gpu_* entry points the kernel library provides
 * otherwise (and the empty arch list attn_gpu_kernel_archs), so a plugin's
 * descriptor names the same symbols in both builds. Define
 * ATTN_NO_KERNELS_PLUGIN_NAME (a string literal) before including it.
 */
#ifndef ATTN_NO_KERNELS_H
#define ATTN_NO_KERNELS_H

#include "attn_plugin.h"
#include "attn_pred_util.h"

#ifndef ATTN_NO_KERNELS_PLUGIN_NAME
#error "define ATTN_NO_KERNELS_PLUGIN_NAME before including attn_no_kernels.h"
#endif

#define ATTN_NO_KERNELS_SENTENCE ATTN_NO_KERNELS_PLUGIN_NAME ": built without GPU kernels"

/* Empty: the binary holds code for no arch. */
static const char *const attn_gpu_kernel_archs[] = {NULL};

static attn_status attn_no_kernels_create(const attn_plugin_context *ctx, const attn_shape *shape,
                                          void **backend, char *err, size_t err_size)
{
    (void)ctx;
    (void)shape;
    if (backend)
        *backend = NULL;
    attn_pred_set_error(err, err_size, ATTN_NO_KERNELS_SENTENCE);
    return ATTN_ERR_NO_KERNELS;
}
/* Each plugin names one of the two (the other is unused there). */
#define attn_gpu_generic_create attn_no_kernels_create
#define attn_gpu_mtp_create attn_no_kernels_create

static attn_status attn_gpu_workspace_size(void *backend, const attn_batch_limits *limits,
                                           size_t *bytes)
{
    (void)backend;
    (void)limits;
    if (bytes)
        *bytes = 0;
    return ATTN_ERR_NO_KERNELS;
}

static attn_status attn_gpu_forward(void *backend, const attn_forward_args *args, char *err,
                                    size_t err_size)
{
    (void)backend;
    (void)args;
    attn_pred_set_error(err, err_size, ATTN_NO_KERNELS_SENTENCE);
    return ATTN_ERR_NO_KERNELS;
}

/* create never succeeds, so there is never a backend object to free. */
static void attn_gpu_destroy(void *backend)
{
    (void)backend;
}

/* No GPU runtime is linked in, so there is nothing to ask for devices; say
 * why rather than leave the probe out, which would read as an old plugin. */
static attn_status attn_gpu_probe_devices(const attn_plugin_context *ctx, attn_device_info *devices,
                                          uint32_t capacity, uint32_t *count, char *err,
                                          size_t err_size)
{
    (void)ctx;
    (void)devices;
    (void)capacity;
    if (count)
        *count = 0;
    attn_pred_set_error(err, err_size, ATTN_NO_KERNELS_SENTENCE);
    return ATTN_ERR_NO_DEVICE;
}

static attn_status attn_gpu_append_kv(void *backend, const attn_append_args *args, char *err,
                                      size_t err_size)
{
    (void)backend;
    (void)args;
    attn_pred_set_error(err, err_size, ATTN_NO_KERNELS_SENTENCE);
    return ATTN_ERR_NO_KERNELS;
}

static attn_status attn_gpu_merge_states(void *backend, const attn_merge_args *args, char *err,
                                         size_t err_size)
{
    (void)backend;
    (void)args;
    attn_pred_set_error(err, err_size, ATTN_NO_KERNELS_SENTENCE);
    return ATTN_ERR_NO_KERNELS;
}

#endif /* ATTN_NO_KERNELS_H */
