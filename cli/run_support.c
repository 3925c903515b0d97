/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_support.c — see run_support.h.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "run_support.h"
#include "attn_tool_error.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

npy_dtype run_npy_dtype(int32_t dtype)
{
    switch (dtype) {
    case ATTN_DTYPE_F32:
        return NPY_DTYPE_F4;
    case ATTN_DTYPE_F16:
        return NPY_DTYPE_F2;
    case ATTN_DTYPE_BF16:
        return NPY_DTYPE_U2;
    case ATTN_DTYPE_FP8_E4M3FN:
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        return NPY_DTYPE_U1;
    default:
        return NPY_DTYPE_INVALID;
    }
}

size_t run_dtype_size(int32_t dtype)
{
    return npy_dtype_size(run_npy_dtype(dtype));
}

/* ---- memory spaces ------------------------------------------------------- */

typedef enum memory_kind { MEMORY_HOST, MEMORY_CUDA, MEMORY_HIP } memory_kind;

/* The few entry points of each runtime, resolved with dlsym. Signatures
 * follow the vendors' headers (CUresult / hipError_t are ints, CUdeviceptr
 * is a 64-bit integer). */
typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_primary_retain_fn)(void **, int);
typedef int (*cu_primary_release_fn)(int);
typedef int (*cu_ctx_set_fn)(void *);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_free_fn)(unsigned long long);
typedef int (*cu_htod_fn)(unsigned long long, const void *, size_t);
typedef int (*cu_dtoh_fn)(void *, unsigned long long, size_t);
typedef int (*cu_sync_fn)(void);
typedef int (*cu_error_string_fn)(int, const char **);

typedef int (*hip_set_device_fn)(int);
typedef int (*hip_malloc_fn)(void **, size_t);
typedef int (*hip_free_fn)(void *);
typedef int (*hip_memcpy_fn)(void *, const void *, size_t, int);
typedef int (*hip_sync_fn)(void);
typedef const char *(*hip_error_string_fn)(int);

struct run_memory {
    memory_kind kind;
    char name[64];
    void *library;
    int device;
    struct {
        cu_primary_release_fn primary_release;
        cu_ctx_set_fn ctx_set;
        cu_alloc_fn alloc;
        cu_free_fn free;
        cu_htod_fn htod;
        cu_dtoh_fn dtoh;
        cu_sync_fn sync;
        cu_error_string_fn error_string;
        void *context;
    } cu;
    struct {
        hip_malloc_fn malloc;
        hip_free_fn free;
        hip_memcpy_fn memcpy;
        hip_sync_fn sync;
        hip_error_string_fn error_string;
    } hip;
};

static const char *cuda_error(const run_memory *m, int code)
{
    const char *text = NULL;
    if (m->cu.error_string && m->cu.error_string(code, &text) == 0 && text)
        return text;
    return "unknown CUDA error";
}

static const char *hip_error(const run_memory *m, int code)
{
    const char *text = m->hip.error_string ? m->hip.error_string(code) : NULL;
    return text ? text : "unknown HIP error";
}

static void *symbol(void *library, const char *name, int *missing)
{
    void *p = dlsym(library, name);
    if (!p)
        *missing = 1;
    return p;
}

static int device_index(void)
{
    /* secure_getenv: nothing from the environment in a setuid attnreg. */
    const char *v = secure_getenv("ATTNREG_DEVICE");
    return v && *v ? atoi(v) : 0;
}

static int open_cuda(run_memory *m, char *err, size_t err_size)
{
    m->library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!m->library)
        return attn_tool_fail(err, err_size, "no CUDA driver (libcuda.so.1): %s", dlerror());
    int missing = 0;
    cu_init_fn init = (cu_init_fn)symbol(m->library, "cuInit", &missing);
    cu_device_get_fn device_get = (cu_device_get_fn)symbol(m->library, "cuDeviceGet", &missing);
    cu_primary_retain_fn retain =
        (cu_primary_retain_fn)symbol(m->library, "cuDevicePrimaryCtxRetain", &missing);
    m->cu.primary_release =
        (cu_primary_release_fn)symbol(m->library, "cuDevicePrimaryCtxRelease_v2", &missing);
    m->cu.ctx_set = (cu_ctx_set_fn)symbol(m->library, "cuCtxSetCurrent", &missing);
    m->cu.alloc = (cu_alloc_fn)symbol(m->library, "cuMemAlloc_v2", &missing);
    m->cu.free = (cu_free_fn)symbol(m->library, "cuMemFree_v2", &missing);
    m->cu.htod = (cu_htod_fn)symbol(m->library, "cuMemcpyHtoD_v2", &missing);
    m->cu.dtoh = (cu_dtoh_fn)symbol(m->library, "cuMemcpyDtoH_v2", &missing);
    m->cu.sync = (cu_sync_fn)symbol(m->library, "cuCtxSynchronize", &missing);
    m->cu.error_string = (cu_error_string_fn)symbol(m->library, "cuGetErrorString", &missing);
    if (missing)
        return attn_tool_fail(err, err_size, "libcuda.so.1 lacks a driver API entry point");
    int rc, dev = 0;
    if ((rc = init(0)) != 0)
        return attn_tool_fail(err, err_size, "cuInit: %s", cuda_error(m, rc));
    if ((rc = device_get(&dev, m->device)) != 0)
        return attn_tool_fail(err, err_size, "cuDeviceGet(%d): %s", m->device, cuda_error(m, rc));
    if ((rc = retain(&m->cu.context, dev)) != 0)
        return attn_tool_fail(err, err_size, "cuDevicePrimaryCtxRetain: %s", cuda_error(m, rc));
    if ((rc = m->cu.ctx_set(m->cu.context)) != 0)
        return attn_tool_fail(err, err_size, "cuCtxSetCurrent: %s", cuda_error(m, rc));
    snprintf(m->name, sizeof m->name, "CUDA device %d", m->device);
    return 0;
}

static int open_hip(run_memory *m, char *err, size_t err_size)
{
    m->library = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    if (!m->library)
        m->library = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!m->library)
        return attn_tool_fail(err, err_size, "no HIP runtime (libamdhip64.so): %s", dlerror());
    int missing = 0;
    hip_set_device_fn set_device = (hip_set_device_fn)symbol(m->library, "hipSetDevice", &missing);
    m->hip.malloc = (hip_malloc_fn)symbol(m->library, "hipMalloc", &missing);
    m->hip.free = (hip_free_fn)symbol(m->library, "hipFree", &missing);
    m->hip.memcpy = (hip_memcpy_fn)symbol(m->library, "hipMemcpy", &missing);
    m->hip.sync = (hip_sync_fn)symbol(m->library, "hipDeviceSynchronize", &missing);
    m->hip.error_string = (hip_error_string_fn)symbol(m->library, "hipGetErrorString", &missing);
    if (missing)
        return attn_tool_fail(err, err_size, "libamdhip64.so lacks a HIP entry point");
    int rc = set_device(m->device);
    if (rc != 0)
        return attn_tool_fail(err, err_size, "hipSetDevice(%d): %s", m->device, hip_error(m, rc));
    snprintf(m->name, sizeof m->name, "HIP device %d", m->device);
    return 0;
}

run_memory *run_memory_open(const char *arch, char *err, size_t err_size)
{
    run_memory *m = calloc(1, sizeof *m);
    if (!m) {
        attn_tool_fail(err, err_size, "out of memory");
        return NULL;
    }
    m->device = device_index();
    int rc = 0;
    if (strncmp(arch, "sm_", 3) == 0) {
        m->kind = MEMORY_CUDA;
        rc = open_cuda(m, err, err_size);
    } else if (strncmp(arch, "gfx", 3) == 0) {
        m->kind = MEMORY_HIP;
        rc = open_hip(m, err, err_size);
    } else {
        m->kind = MEMORY_HOST;
        snprintf(m->name, sizeof m->name, "host");
    }
    if (rc != 0) {
        run_memory_close(m);
        return NULL;
    }
    return m;
}

void run_memory_close(run_memory *m)
{
    if (!m)
        return;
    if (m->kind == MEMORY_CUDA && m->cu.context && m->cu.primary_release)
        m->cu.primary_release(m->device);
    /* The runtime library stays loaded: a plugin may still hold it. */
    free(m);
}

const char *run_memory_name(const run_memory *m)
{
    return m->name;
}

void *run_memory_upload(run_memory *m, const void *host, size_t bytes, char *err, size_t err_size)
{
    size_t n = bytes ? bytes : 1;
    int rc;
    switch (m->kind) {
    case MEMORY_HOST: {
        void *p = malloc(n);
        if (!p) {
            attn_tool_fail(err, err_size, "out of memory (%zu bytes)", n);
            return NULL;
        }
        if (host && bytes)
            memcpy(p, host, bytes);
        return p;
    }
    case MEMORY_CUDA: {
        unsigned long long d = 0;
        if ((rc = m->cu.alloc(&d, n)) != 0) {
            attn_tool_fail(err, err_size, "cuMemAlloc(%zu): %s", n, cuda_error(m, rc));
            return NULL;
        }
        if (host && bytes && (rc = m->cu.htod(d, host, bytes)) != 0) {
            attn_tool_fail(err, err_size, "cuMemcpyHtoD: %s", cuda_error(m, rc));
            m->cu.free(d);
            return NULL;
        }
        return (void *)(uintptr_t)d;
    }
    case MEMORY_HIP: {
        void *d = NULL;
        if ((rc = m->hip.malloc(&d, n)) != 0) {
            attn_tool_fail(err, err_size, "hipMalloc(%zu): %s", n, hip_error(m, rc));
            return NULL;
        }
        if (host && bytes && (rc = m->hip.memcpy(d, host, bytes, 1)) != 0) {
            attn_tool_fail(err, err_size, "hipMemcpy to device: %s", hip_error(m, rc));
            m->hip.free(d);
            return NULL;
        }
        return d;
    }
    }
    return NULL;
}

int run_memory_download(run_memory *m, void *host, const void *buffer, size_t bytes, char *err,
                        size_t err_size)
{
    int rc;
    switch (m->kind) {
    case MEMORY_HOST:
        memcpy(host, buffer, bytes);
        return 0;
    case MEMORY_CUDA:
        if ((rc = m->cu.sync()) != 0)
            return attn_tool_fail(err, err_size, "cuCtxSynchronize: %s", cuda_error(m, rc));
        if ((rc = m->cu.dtoh(host, (unsigned long long)(uintptr_t)buffer, bytes)) != 0)
            return attn_tool_fail(err, err_size, "cuMemcpyDtoH: %s", cuda_error(m, rc));
        return 0;
    case MEMORY_HIP:
        if ((rc = m->hip.sync()) != 0)
            return attn_tool_fail(err, err_size, "hipDeviceSynchronize: %s", hip_error(m, rc));
        if ((rc = m->hip.memcpy(host, buffer, bytes, 2)) != 0)
            return attn_tool_fail(err, err_size, "hipMemcpy to host: %s", hip_error(m, rc));
        return 0;
    }
    return -1;
}

void run_memory_free(run_memory *m, void *buffer)
{
    if (!buffer)
        return;
    switch (m->kind) {
    case MEMORY_HOST:
        free(buffer);
        break;
    case MEMORY_CUDA:
        m->cu.free((unsigned long long)(uintptr_t)buffer);
        break;
    case MEMORY_HIP:
        m->hip.free(buffer);
        break;
    }
}

/* ---- argument transfer ------------------------------------------------- */

int run_args_upload(run_memory *m, const attn_forward_args *h, const run_args_sizes *sizes,
                    attn_forward_args *d, char *err, size_t err_size)
{
    *d = *h;
    d->q = d->k_cache = d->v_cache = NULL;
    d->block_table = d->cu_seqlens_q = d->seqused_k = NULL;
    d->sinks = NULL;
    d->out = d->workspace = NULL;
#define UPLOAD(field, type, bytes)                                                                 \
    do {                                                                                           \
        d->field = (type)run_memory_upload(m, h->field, (bytes), err, err_size);                   \
        if (!d->field) {                                                                           \
            run_args_free(m, d);                                                                   \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
    UPLOAD(q, const void *, sizes->q_bytes);
    UPLOAD(k_cache, const void *, sizes->k_bytes);
    UPLOAD(v_cache, const void *, sizes->v_bytes);
    UPLOAD(block_table, const int32_t *, sizes->block_table_entries * sizeof(int32_t));
    UPLOAD(cu_seqlens_q, const int32_t *, ((size_t)h->num_seqs + 1) * sizeof(int32_t));
    UPLOAD(seqused_k, const int32_t *, (size_t)h->num_seqs * sizeof(int32_t));
    if (h->sinks)
        UPLOAD(sinks, const float *, (size_t)sizes->num_q_heads * sizeof(float));
    UPLOAD(out, void *, sizes->out_bytes);
    if (h->workspace_size) {
        d->workspace = run_memory_upload(m, NULL, h->workspace_size, err, err_size);
        if (!d->workspace) {
            run_args_free(m, d);
            return -1;
        }
    }
#undef UPLOAD
    return 0;
}

void run_args_free(run_memory *m, attn_forward_args *d)
{
    run_memory_free(m, (void *)d->q);
    run_memory_free(m, (void *)d->k_cache);
    run_memory_free(m, (void *)d->v_cache);
    run_memory_free(m, (void *)d->block_table);
    run_memory_free(m, (void *)d->cu_seqlens_q);
    run_memory_free(m, (void *)d->seqused_k);
    run_memory_free(m, (void *)d->sinks);
    run_memory_free(m, d->out);
    run_memory_free(m, d->workspace);
    d->q = d->k_cache = d->v_cache = NULL;
    d->block_table = d->cu_seqlens_q = d->seqused_k = NULL;
    d->sinks = NULL;
    d->out = d->workspace = NULL;
}
