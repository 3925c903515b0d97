/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu_attn.hip — host side of the GPU kernels: device probe, contexts,
 * workspace sizing, the 2D/3D and segment-count rules, argument checks and
 * launches. Also defines the hooks the two plugins call when they are built
 * with ATTNREG_HAVE_GPU_KERNELS.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_launch_plan.h"
#include "attn_plugin.h"
#ifndef ATTNREG_HAVE_GPU_KERNELS
#define ATTNREG_HAVE_GPU_KERNELS 1 /* this file is the kernel library: its entry points */
#endif
#include "attn_gpu_entry.h"
#include "gpu_attn.h"
#include "gpu_attn_internal.h"

/* ---- the archs this binary holds -------------------------------------
 * ATTNREG_GPU_ARCH_LIST is a comma-separated list of bare names from the
 * build (e.g. sm_90 or gfx942,gfx950); each name becomes a string here. */
#define ATTN_STR_(x) #x
#define ATTN_STR(x) ATTN_STR_(x)
#define ATTN_LIST_1(a) ATTN_STR(a)
#define ATTN_LIST_2(a, b) ATTN_STR(a), ATTN_STR(b)
#define ATTN_LIST_3(a, b, c) ATTN_STR(a), ATTN_STR(b), ATTN_STR(c)
#define ATTN_LIST_4(a, b, c, d) ATTN_STR(a), ATTN_STR(b), ATTN_STR(c), ATTN_STR(d)
#define ATTN_LIST_PICK(_1, _2, _3, _4, NAME, ...) NAME
#define ATTN_LIST_(...)                                                                           \
    ATTN_LIST_PICK(__VA_ARGS__, ATTN_LIST_4, ATTN_LIST_3, ATTN_LIST_2, ATTN_LIST_1)(__VA_ARGS__)
#define ATTN_LIST(...) ATTN_LIST_(__VA_ARGS__)

#ifdef ATTNREG_GPU_ARCH_LIST_HEADER
#include "attn_gpu_arch_list.h" /* CMake builds: ATTNREG_GPU_ARCH_LIST */
#endif
#ifndef ATTNREG_GPU_ARCH_LIST
#if defined(ATTN_PLATFORM_CUDA)
#define ATTNREG_GPU_ARCH_LIST sm_90
#else
#define ATTNREG_GPU_ARCH_LIST gfx942, gfx950
#endif
#endif

extern "C" {
__attribute__((visibility("hidden"))) extern const char *const attn_gpu_kernel_archs[];
__attribute__((visibility("hidden"))) const char *const attn_gpu_kernel_archs[] = {
    ATTN_LIST(ATTNREG_GPU_ARCH_LIST), NULL};
}

#define ATTN_MAX_SEGMENTS ATTN_REDUCE_MAX_SEGMENTS

/* ---- launch attributes, per (kernel, device) ---- */
#include <mutex>
namespace {
struct func_attrs {
    const void *func;
    int device, smem, carveout;
};
std::mutex func_attrs_lock;
func_attrs func_attrs_set[256];
int func_attrs_count;
} // namespace

hipError_t attn_func_opt_in(const void *func, int smem_bytes, int carveout_percent)
{
    int dev = 0;
    hipError_t e = hipGetDevice(&dev);
    if (e != hipSuccess)
        return e;
    std::lock_guard<std::mutex> hold(func_attrs_lock);
    func_attrs *rec = NULL;
    for (int i = 0; i < func_attrs_count; i++)
        if (func_attrs_set[i].func == func && func_attrs_set[i].device == dev)
            rec = &func_attrs_set[i];
    if (rec && rec->smem >= smem_bytes &&
        (carveout_percent < 0 || rec->carveout == carveout_percent))
        return hipSuccess;
    e = hipFuncSetAttribute(func, hipFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    if (e != hipSuccess)
        return e;
    if (carveout_percent >= 0) {
        e = hipFuncSetAttribute(func, hipFuncAttributePreferredSharedMemoryCarveout,
                                carveout_percent);
        if (e != hipSuccess)
            return e;
    }
    if (!rec) {
        if (func_attrs_count == (int)(sizeof func_attrs_set / sizeof func_attrs_set[0]))
            return hipSuccess; /* set, just not remembered: the next launch sets it again */
        rec = &func_attrs_set[func_attrs_count++];
        rec->func = func;
        rec->device = dev;
        rec->smem = 0;
    }
    if (smem_bytes > rec->smem)
        rec->smem = smem_bytes;
    rec->carveout = carveout_percent;
    return hipSuccess;
}

struct gpu_attn_ctx {
    gpu_attn_kernel kernel;
    attn_shape shape;
    int device;
    int cus;
    int forced_nseg;
    int mtp_wgmma; /* attn_kparams.mtp_wgmma */
    int mtp_wgmma_capable; /* the build and the device have the wgmma variant */
    int prefill;   /* batches with q_len > 1 run the prefill kernel (attn_prefill.hip) */
    /* The launch plan of the shape on the device's arch: the same function
     * (attn_launch_plan.h) the plugin's predicate accepted the shape with. */
    attn_launch_plan plan;
    int decode_mma;     /* one-token batches run the matrix-unit decode kernel */
    int generic_stages; /* the portable generic kernel's stages */
    int generic_raw;    /* ... and whether it reads K/V raw (the plan's generic-raw) */
};

/* What this build holds beyond the portable kernels (the plans' features,
 * attn_plan_build_features). */
extern "C" __attribute__((visibility("hidden"))) int attn_gpu_kernels_have_wgmma(void)
{
    return attn_mtp_has_wgmma();
}
static attn_plan_features build_features(void)
{
    return attn_plan_build_features();
}

void attn_set_err(char *err, size_t n, const char *fmt, ...)
{
    if (!err || n == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

static int is_fp8(int32_t dt)
{
    return dt == ATTN_DTYPE_FP8_E4M3FN || dt == ATTN_DTYPE_FP8_E4M3FNUZ;
}

static int next_pow2(int x)
{
    int p = 1;
    while (p < x)
        p <<= 1;
    return p;
}

static int ceil_div(int a, int b)
{
    return (a + b - 1) / b;
}

extern "C" const char *const *gpu_attn_built_archs(void)
{
    return attn_gpu_kernel_archs;
}

extern "C" const char *gpu_attn_platform(void)
{
    return ATTN_PLATFORM_NAME;
}

extern "C" attn_status gpu_attn_probe(attn_device_info *devices, uint32_t capacity,
                                      uint32_t *count, char *err, size_t err_size)
{
    int n = 0;
    if (count)
        *count = 0;
    hipError_t e = hipGetDeviceCount(&n);
    if (e != hipSuccess) {
        /* No driver, no device, or a driver older than the runtime: the
         * runtime's own words are the useful ones. */
        attn_set_err(err, err_size, "%s: %s", ATTN_PLATFORM_NAME, hipGetErrorString(e));
        (void)hipGetLastError(); /* clear the sticky-free error state */
        return ATTN_ERR_NO_DEVICE;
    }
    if (n == 0) {
        attn_set_err(err, err_size, "%s: no device found", ATTN_PLATFORM_NAME);
        return ATTN_ERR_NO_DEVICE;
    }
    for (int i = 0; i < n; i++) {
        if ((uint32_t)i < capacity && devices) {
            hipDeviceProp_t prop;
            e = hipGetDeviceProperties(&prop, i);
            if (e != hipSuccess) {
                attn_set_err(err, err_size, "%s: device %d: %s", ATTN_PLATFORM_NAME, i,
                        hipGetErrorString(e));
                return ATTN_ERR_RUNTIME;
            }
            attn_device_info *d = &devices[i];
            uint32_t sz = d->struct_size ? d->struct_size : (uint32_t)sizeof *d;
            memset(d, 0, sizeof *d);
            d->struct_size = sz;
            d->index = i;
            attn_device_arch(&prop, d->arch, sizeof d->arch);
            snprintf(d->name, sizeof d->name, "%.127s", prop.name);
            d->memory_bytes = (uint64_t)prop.totalGlobalMem;
            d->compute_units = prop.multiProcessorCount;
        }
    }
    if (count)
        *count = (uint32_t)n;
    return ATTN_OK;
}

/* What the kernels themselves can run; the plugins' predicates are the
 * user-facing truth and may be narrower. */
static attn_status check_shape(gpu_attn_kernel kernel, const attn_shape *s, char *err, size_t n)
{
    int hkv = attn_shape_kv_heads(s), dv = attn_shape_head_dim_v(s);
    if (s->num_q_heads <= 0 || hkv <= 0 || s->num_q_heads % hkv != 0) {
        attn_set_err(err, n, "requires num_heads (%d) to be a multiple of num_kv_heads (%d)",
                (int)s->num_q_heads, (int)hkv);
        return ATTN_ERR_INVALID_SHAPE;
    }
    if (s->page_size <= 0) {
        attn_set_err(err, n, "page_size %d must be positive", (int)s->page_size);
        return ATTN_ERR_INVALID_SHAPE;
    }
    int qok = s->q_dtype == ATTN_DTYPE_BF16 || s->q_dtype == ATTN_DTYPE_F16 ||
              s->q_dtype == ATTN_DTYPE_F32;
    int kvok = s->kv_dtype == ATTN_DTYPE_BF16 || s->kv_dtype == ATTN_DTYPE_F16 ||
               s->kv_dtype == ATTN_DTYPE_F32 || is_fp8(s->kv_dtype);
    int ook = s->out_dtype == ATTN_DTYPE_BF16 || s->out_dtype == ATTN_DTYPE_F16 ||
              s->out_dtype == ATTN_DTYPE_F32;
    if (!qok || !kvok || !ook) {
        attn_set_err(err, n, "the GPU kernels take q bf16/f16/f32, kv bf16/f16/f32/fp8, out "
                        "bf16/f16/f32 (got q %d, kv %d, out %d)",
                (int)s->q_dtype, (int)s->kv_dtype, (int)s->out_dtype);
        return ATTN_ERR_CREATE_FAILED;
    }
    if (kernel == GPU_ATTN_KERNEL_GENERIC) {
        if (!attn_generic_supports(s->head_dim, dv, s->kv_dtype)) {
            attn_set_err(err, n, "head_dim %d / head_dim_v %d / kv %d: the generic kernel is built for "
                            "head_dim = head_dim_v in {%s} and a 16-bit or fp8 KV cache",
                    (int)s->head_dim, (int)dv, (int)s->kv_dtype, ATTN_GPU_HEAD_DIMS_TEXT);
            return ATTN_ERR_CREATE_FAILED;
        }
    } else {
        if (s->num_q_heads / hkv != ATTN_MTP_GROUP || s->head_dim != ATTN_MTP_D ||
            dv != ATTN_MTP_D || s->page_size != ATTN_MTP_PAGE ||
            s->kv_dtype != ATTN_DTYPE_FP8_E4M3FN || s->max_q_len < 1 ||
            s->max_q_len > ATTN_MTP_MAX_Q_LEN) {
            attn_set_err(err, n, "the MTP kernel needs %d query heads per KV head, head_dim %d, page "
                            "%d, fp8_e4m3fn KV and 1-%d query tokens",
                    ATTN_MTP_GROUP, ATTN_MTP_D, ATTN_MTP_PAGE, ATTN_MTP_MAX_Q_LEN);
            return ATTN_ERR_CREATE_FAILED;
        }
    }
    return ATTN_OK;
}

extern "C" attn_status gpu_attn_create(gpu_attn_kernel kernel, const attn_shape *shape,
                                       gpu_attn_ctx **out, char *err, size_t err_size)
{
    if (!shape || !out) {
        attn_set_err(err, err_size, "NULL shape or output pointer");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    *out = NULL;
    attn_status st = check_shape(kernel, shape, err, err_size);
    if (st != ATTN_OK)
        return st;
    int ndev = 0;
    hipError_t e = hipGetDeviceCount(&ndev);
    if (e != hipSuccess || ndev == 0) {
        attn_set_err(err, err_size, "%s: %s", ATTN_PLATFORM_NAME,
                e != hipSuccess ? hipGetErrorString(e) : "no device found");
        return ATTN_ERR_NO_DEVICE;
    }
    int dev = 0;
    if (hipGetDevice(&dev) != hipSuccess)
        dev = 0;
    hipDeviceProp_t prop;
    e = hipGetDeviceProperties(&prop, dev);
    if (e != hipSuccess) {
        attn_set_err(err, err_size, "%s: %s", ATTN_PLATFORM_NAME, hipGetErrorString(e));
        return ATTN_ERR_RUNTIME;
    }
    char arch[ATTN_ARCH_MAX];
    attn_device_arch(&prop, arch, sizeof arch);
    if (shape->arch[0] && strncmp(shape->arch, arch, ATTN_ARCH_MAX) != 0) {
        attn_set_err(err, err_size, "no %.31s device: device %d is %s (%s)", shape->arch, dev, arch,
                prop.name);
        return ATTN_ERR_NO_DEVICE;
    }
    int in_binary = 0;
    for (const char *const *a = attn_gpu_kernel_archs; *a; a++)
        if (strcmp(*a, arch) == 0)
            in_binary = 1;
    if (!in_binary) {
        attn_set_err(err, err_size, "this binary holds no kernels for %s (device %d, %s)", arch, dev,
                prop.name);
        return ATTN_ERR_ARCH_NOT_IN_BINARY;
    }
#if defined(ATTN_PLATFORM_CUDA)
    /* The MTP kernel's CUDA path needs the e4m3 -> f16 conversion instruction
     * of sm_89 and later. */
    if (kernel == GPU_ATTN_KERNEL_MTP && prop.major * 10 + prop.minor < 89) {
        attn_set_err(err, err_size, "the MTP kernel needs sm_89 or later (device %d is %s)", dev, arch);
        return ATTN_ERR_CREATE_FAILED;
    }
#endif
    const attn_arch_limits *limits = attn_gpu_limits_of(arch);
    if (!limits) {
        attn_set_err(err, err_size, "no launch limits are known for %s (device %d, %s)", arch, dev,
                prop.name);
        return ATTN_ERR_CREATE_FAILED;
    }
    attn_launch_plan plan;
    char why[ATTN_VERDICT_MESSAGE_MAX];
    plan.struct_size = sizeof plan;
    const int fits = kernel == GPU_ATTN_KERNEL_MTP
                         ? attn_plan_mtp(shape, limits, build_features(), &plan, why, sizeof why)
                         : attn_plan_generic(shape, limits, build_features(), &plan, why,
                                             sizeof why);
    if (!fits) {
        attn_set_err(err, err_size, "%s", why);
        return ATTN_ERR_CREATE_FAILED;
    }
    gpu_attn_ctx *c = (gpu_attn_ctx *)calloc(1, sizeof *c);
    if (!c) {
        attn_set_err(err, err_size, "out of memory");
        return ATTN_ERR_NO_MEMORY;
    }
    c->plan = plan;
    {
        const int dk = attn_plan_find(&plan, ATTN_ROLE_DECODE);
        c->decode_mma =
            dk >= 0 && attn_plan_kernel_of(&plan.kernels[dk]) == ATTN_PLAN_KERNEL_DECODE_MMA;
        for (uint32_t k = 0; k < plan.num_kernels && k < ATTN_PLAN_MAX_KERNELS; k++) {
            const attn_plan_kernel_id id = attn_plan_kernel_of(&plan.kernels[k]);
            if (id == ATTN_PLAN_KERNEL_GENERIC || id == ATTN_PLAN_KERNEL_GENERIC_RAW) {
                c->generic_stages = plan.kernels[k].stages;
                c->generic_raw = id == ATTN_PLAN_KERNEL_GENERIC_RAW;
            }
        }
    }
    c->kernel = kernel;
    memcpy(&c->shape, shape, sizeof c->shape < shape->struct_size ? sizeof c->shape
                                                                  : shape->struct_size);
    c->shape.struct_size = sizeof c->shape;
    c->device = dev;
    c->cus = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
    /* The MTP kernel's warpgroup (wgmma) variant runs where the build has
     * sm_90a code and the device is sm_90, for batches with 3-4 query tokens
     * per sequence: its 64 rows are all used there, and on the H200 it is
     * 1.25x faster than the mma.sync variant, which stays faster at q_len
     * <= 2 (32 rows; bench/RESULTS.md). gpu_attn_force_mtp_variant (the
     * plugin's [params] mtp_variant, the bench's and the tests' switch)
     * picks one variant for every q_len. The library reads no environment
     * here: a host's skip_env covers its plugins too. */
    if (kernel == GPU_ATTN_KERNEL_MTP && attn_mtp_has_wgmma() && prop.major == 9 &&
        prop.minor == 0)
        c->mtp_wgmma = 2;
    c->mtp_wgmma_capable = c->mtp_wgmma != 0;
    /* The prefill kernel is wgmma code: the plan takes it where the build has
     * sm_90a code (its features) for the shapes it takes; the device must be
     * sm_90 itself, not only named so. */
    const int multi = attn_plan_find(&plan, ATTN_ROLE_MULTI);
    c->prefill = kernel == GPU_ATTN_KERNEL_GENERIC && prop.major == 9 && prop.minor == 0 &&
                 multi >= 0 &&
                 attn_plan_kernel_of(&plan.kernels[multi]) == ATTN_PLAN_KERNEL_PREFILL_WGMMA;
    *out = c;
    return ATTN_OK;
}

extern "C" int gpu_attn_force_mtp_variant(gpu_attn_ctx *ctx, int variant)
{
    if (!ctx || ctx->kernel != GPU_ATTN_KERNEL_MTP || variant < 0 || variant > 2)
        return -1;
    ctx->mtp_wgmma = ctx->mtp_wgmma_capable ? variant : 0;
    return ctx->mtp_wgmma;
}

extern "C" int gpu_attn_force_prefill(gpu_attn_ctx *ctx, int use)
{
    if (!ctx)
        return 0;
    if (!use)
        ctx->prefill = 0;
    return ctx->prefill;
}

extern "C" int gpu_attn_force_generic(gpu_attn_ctx *ctx, int stages, int raw_kv)
{
    if (!ctx || ctx->generic_stages == 0 || stages < 1 || stages > ATTN_GEN_MAX_STAGES)
        return 0;
    const int rows = ctx->kernel == GPU_ATTN_KERNEL_MTP ? 16 : 4;
    const attn_shape *s = &ctx->shape;
    raw_kv = raw_kv && rows == 4 && attn_plan_generic_raw_built(s->head_dim);
    if (attn_plan_generic_variant_bytes(s->head_dim, attn_shape_head_dim_v(s),
                                        attn_plan_kv_bytes(s->kv_dtype), rows, stages,
                                        raw_kv) > ctx->plan.shared_limit)
        return 0;
    ctx->generic_stages = stages;
    ctx->generic_raw = raw_kv;
    return 1;
}

extern "C" void gpu_attn_destroy(gpu_attn_ctx *ctx)
{
    free(ctx);
}

extern "C" void gpu_attn_force_segments(gpu_attn_ctx *ctx, int nseg)
{
    if (ctx)
        ctx->forced_nseg = nseg < 0 ? 0 : nseg > ATTN_MAX_SEGMENTS ? ATTN_MAX_SEGMENTS : nseg;
}

extern "C" int gpu_attn_compute_units(const gpu_attn_ctx *ctx)
{
    return ctx ? ctx->cus : 0;
}

/* Tiling of the generic kernel: a program has 16 rows; it takes all query
 * heads of a KV head when they fit (and as many tokens as fill 16 rows),
 * else 16 heads of one token. */
static void generic_tiling(int group, int *block_q, int *hpt, int *hsplit)
{
    *hpt = group < 16 ? group : 16;
    *block_q = 16 / *hpt;
    *hsplit = ceil_div(group, *hpt);
}

/* The split every segment rule shares: `work` programs without a split,
 * `target` programs wanted. Split the key range into the power of two of
 * segments that brings the grid to the target, at most ATTN_MAX_SEGMENTS
 * and never below `min_keys` keys a segment (rounded down to a power of two
 * when that bound is not one); 1 when the work already reaches the target. */
static int split_segments(long work, long target, int maxk, int min_keys)
{
    if (work <= 0 || work >= target)
        return 1;
    int n = next_pow2((int)((target + work - 1) / work));
    int cap = ceil_div(maxk > 0 ? maxk : 1, min_keys);
    if (n > cap)
        n = next_pow2(cap) > cap ? next_pow2(cap) / 2 : cap;
    if (n > ATTN_MAX_SEGMENTS)
        n = ATTN_MAX_SEGMENTS;
    return n < 1 ? 1 : n;
}

/* Programs of a 2D grid of query tiles (block_q tokens each) x KV heads x
 * head splits: each sequence gets ceil(q_len / block_q) tiles, bounded by
 * the grid's own bound T / block_q + S. */
static long grid_work(const gpu_attn_ctx *c, int T, int S, int maxq, int block_q, int hsplit)
{
    long tiles = (long)S * ceil_div(maxq > 0 ? maxq : 1, block_q);
    long bound = (long)T / block_q + S;
    if (tiles > bound)
        tiles = bound;
    return tiles * attn_shape_kv_heads(&c->shape) * hsplit;
}

/* Tiling of the prefill kernel: a program has 128 rows; all query heads of a
 * KV head when they fit (and as many tokens as fill the rows), else 128
 * heads of one token. */
static void prefill_tiling(int group, int *block_q, int *hpt, int *hsplit)
{
    *hpt = group < 128 ? group : 128;
    *block_q = 128 / *hpt;
    *hsplit = ceil_div(group, *hpt);
}

/* Segment rule of the prefill kernel. Its programs hold a whole SM each (one
 * per SM), and a program's time grows with its keys, so the grid needs about
 * one program per SM. When the unsplit grid has fewer than half as many
 * programs as SMs, the key range is split into the power of two of segments
 * that brings it to one per SM, at most 64 and never below four tiles of keys
 * a segment (the partials and the reduce would cost more than the keys). */
static int prefill_nseg(const gpu_attn_ctx *c, int T, int S, int maxq, int maxk)
{
    int group = c->shape.num_q_heads / attn_shape_kv_heads(&c->shape);
    int bq, hpt, hs;
    prefill_tiling(group, &bq, &hpt, &hs);
    long work = grid_work(c, T, S, maxq, bq, hs);
    if (2 * work > c->cus)
        return 1;
    const int k = attn_plan_find(&c->plan, ATTN_ROLE_MULTI);
    if (k < 0)
        return 1;
    return split_segments(work, c->cus, maxk, 4 * c->plan.kernels[k].keys);
}

/* Whether this shape's decode batches run on the matrix-unit decode kernel
 * (attn_decode_mma.hip): the launch plan's choice (attn_plan_decode_mma_takes:
 * NVIDIA, a bf16/f16 Q over a cache of its type or of fp8, D == Dv, pages of
 * a multiple of 16). */
static int decode_uses_mma(const gpu_attn_ctx *c)
{
    return c->decode_mma;
}

/* Segment rule of the matrix-unit decode kernel. Its programs are single
 * warps that each stream their own tiles, and a warp spends most of a tile
 * waiting out its own instruction latencies, so what matters is that every
 * multiprocessor holds many at once; beyond that more segments only add
 * partials and per-program start-up (measured: 2 and 4 waves were slower
 * than 1 at every batch of 8 or more, and aiming at 6 of the 8 programs
 * a CU holds beat aiming at all of them: the grid then ends in fewer,
 * longer programs).
 * Split the key range until the grid reaches DMMA target programs per CU
 * (attn_decode_mma_target_per_cu), in powers of two, at most 64, and never
 * below 64 keys (4 tiles) a segment, where the partial and the reduce would
 * cost more than the keys. */
static int decode_mma_nseg(const gpu_attn_ctx *c, int S, int maxk)
{
    int hkv = attn_shape_kv_heads(&c->shape);
    int group = c->shape.num_q_heads / hkv;
    long work = (long)S * hkv * ceil_div(group, 16);
    long target = (long)attn_decode_mma_target_per_cu(c->shape.head_dim,
                                                      is_fp8(c->shape.kv_dtype)) *
                  c->cus;
    return split_segments(work, target, maxk, 64);
}

/* Segment rule of the decode path (max_seqlen_q == 1): the matrix-unit
 * kernel's rule above when that kernel runs; else the scalar decode kernel's
 * (attn_generic.hip).
 * Its programs are short and its grid is one wave or less at batch 64 (512
 * programs for 32:8 heads), and a partly filled last wave leaves whole
 * multiprocessors waiting on one program's memory latency. So the key range
 * is split until the grid has about 16 programs per compute unit (several
 * waves, so the last one is a small fraction of the time), in powers of two,
 * at most 64, and never below 128 keys (32 per warp) a segment: a partial is
 * hq x (D + 2) floats per token, small against the K/V bytes of 128 keys. */
static int decode_nseg(const gpu_attn_ctx *c, int S, int maxk)
{
    if (c->forced_nseg)
        return c->forced_nseg;
    if (decode_uses_mma(c))
        return decode_mma_nseg(c, S, maxk);
    int hkv = attn_shape_kv_heads(&c->shape);
    int group = c->shape.num_q_heads / hkv;
    int hs = ceil_div(group, attn_decode_heads_per_program(group, c->shape.head_dim));
    long work = (long)S * hkv * hs;
    long target = 16L * c->cus;
    return split_segments(work, target, maxk, 128);
}

/* Segment rule of the generic kernel. The 2D grid has about `work` programs
 * (query tiles x KV heads x head splits). When that fills the GPU twice over
 * (two programs per compute unit) the 2D path runs. Otherwise the key range
 * is split into the power of two of segments that brings the grid to about
 * two programs per compute unit, at most 64, and never below 256 keys (8
 * tiles) per segment, where the reduce would cost more than it saves. */
/* (prefill: the batch runs on the prefill kernel) */
static int generic_nseg(const gpu_attn_ctx *c, int T, int S, int maxq, int maxk, int prefill)
{
    if (maxq == 1)
        return decode_nseg(c, S, maxk);
    if (c->forced_nseg)
        return c->forced_nseg;
    if (prefill)
        return prefill_nseg(c, T, S, maxq, maxk);
    int group = c->shape.num_q_heads / attn_shape_kv_heads(&c->shape);
    int bq, hpt, hs;
    generic_tiling(group, &bq, &hpt, &hs);
    long work = grid_work(c, T, S, maxq, bq, hs);
    long target = 2L * c->cus;
    return split_segments(work, target, maxk, 256);
}

/* Segment rule of the MTP kernel, the upstream reference rule verbatim:
 *   num_2d = (T/2 + S) * Hkv; p = ceil(2 * CUs / num_2d);
 *   NSEG = min(64, next_pow2(min(min(64, ceil(K/32)),
 *                                max(8, p, min(ceil(K/1024), 8p))))) */
static int mtp_nseg(const gpu_attn_ctx *c, int T, int S, int maxk)
{
    if (c->forced_nseg)
        return c->forced_nseg;
    if (maxk <= 0)
        return 1;
    long num_2d = ((long)T / 2 + S) * attn_shape_kv_heads(&c->shape);
    if (num_2d < 1)
        num_2d = 1;
    int p = (int)((2L * c->cus + num_2d - 1) / num_2d);
    int a = ceil_div(maxk, 32);
    if (a > 64)
        a = 64;
    int b = ceil_div(maxk, 1024);
    if (b > 8 * p)
        b = 8 * p;
    int x = 8;
    if (p > x)
        x = p;
    if (b > x)
        x = b;
    int n = next_pow2(a < x ? a : x);
    return n > 64 ? 64 : n;
}

extern "C" const attn_shape *gpu_attn_shape(const gpu_attn_ctx *ctx)
{
    return ctx ? &ctx->shape : NULL;
}

extern "C" int gpu_attn_plan_segments(const gpu_attn_ctx *ctx, int num_tokens, int num_seqs,
                                      int max_seqlen_q, int max_seqlen_k)
{
    if (!ctx)
        return 0;
    if (ctx->kernel == GPU_ATTN_KERNEL_MTP)
        return mtp_nseg(ctx, num_tokens, num_seqs, max_seqlen_k);
    return generic_nseg(ctx, num_tokens, num_seqs, max_seqlen_q, max_seqlen_k, ctx->prefill);
}

static size_t partial_bytes(const gpu_attn_ctx *c, int T, int nseg)
{
    size_t per = (size_t)c->shape.num_q_heads * ((size_t)attn_shape_head_dim_v(&c->shape) + 2);
    return (size_t)nseg * (size_t)T * per * sizeof(float);
}

/* The largest partial buffer any batch within the limits can need: the
 * segment count only falls as sequences are added, so for each token count
 * the fewest sequences that can hold them is the worst case. */
extern "C" attn_status gpu_attn_workspace_size(const gpu_attn_ctx *ctx,
                                               const attn_batch_limits *limits, size_t *bytes)
{
    if (!ctx || !limits || !bytes)
        return ATTN_ERR_INVALID_ARGUMENT;
    int maxq = ctx->shape.max_q_len > 0 ? ctx->shape.max_q_len : 1;
    int maxk = ctx->shape.max_kv_len;
    size_t worst = 0;
    for (int T = 1; T <= limits->max_num_tokens; T++) {
        int S = ceil_div(T, maxq);
        if (limits->max_num_seqs > 0 && S > limits->max_num_seqs)
            break; /* more tokens than the sequences can hold */
        int n = gpu_attn_plan_segments(ctx, T, S, maxq, maxk);
        /* A batch of T one-token sequences takes the generic kernel's decode
         * path, whose segment rule differs: size for it too. */
        if (ctx->kernel == GPU_ATTN_KERNEL_GENERIC && maxq > 1 &&
            (limits->max_num_seqs <= 0 || T <= limits->max_num_seqs)) {
            int nd = gpu_attn_plan_segments(ctx, T, T, 1, maxk);
            if (nd > 1 && partial_bytes(ctx, T, nd) > worst)
                worst = partial_bytes(ctx, T, nd);
        }
        /* One segment writes the output itself, unless the log-sum-exp is
         * wanted: the reduce kernel writes it, from the partials. */
        if (ctx->kernel == GPU_ATTN_KERNEL_GENERIC && n <= 1 && !ctx->shape.return_lse)
            continue;
        size_t b = partial_bytes(ctx, T, n);
        if (b > worst)
            worst = b;
    }
    *bytes = worst;
    return ATTN_OK;
}

/* The most segments, up to nseg (halving), whose partials fit `bytes`. */
static int segments_that_fit(const gpu_attn_ctx *ctx, int T, int nseg, size_t bytes)
{
    while (nseg > 1 && partial_bytes(ctx, T, nseg) > bytes)
        nseg /= 2;
    return nseg;
}

/* Decode tiling: one program per (sequence, KV head, head group, segment);
 * the matrix-unit kernel takes up to 16 heads a program. */
static void decode_tiling(const gpu_attn_ctx *ctx, attn_kparams *p)
{
    p->block_q = 1;
    p->heads_per_tile = decode_uses_mma(ctx) ? 16 : attn_decode_heads_per_program(p->group, p->d);
    p->head_splits = ceil_div(p->group, p->heads_per_tile);
}

/* The segment count of a launch and where its partials go in the workspace
 * ([nseg][tokens][hq][dv] accumulators, then [nseg][tokens][hq][2]). */
static void set_segments(attn_kparams *p, const attn_forward_args *a, int nseg)
{
    size_t acc_bytes = (size_t)nseg * a->num_tokens * p->hq * p->dv * sizeof(float);
    p->nseg = nseg;
    p->partials = nseg > 1 || p->lse != NULL;
    p->ws_acc = (float *)a->workspace;
    p->ws_ml = (float *)((char *)a->workspace + acc_bytes);
}

/* K/V caches by stride (attn_forward_args.k_stride_* / v_stride_*, elements,
 * 0 = the contiguous [blocks, page, Hkv, D] layout's): vLLM's layout,
 * FlashInfer's NHD ([blocks, 2, page, H, D]: K and V views of one tensor)
 * and HND ([blocks, H, page, D]) and padded rows are read in place. The
 * kernels copy 16-byte chunks and read K and V at one offset from their two
 * bases, and the prefill kernel indexes a block's slots by the token
 * stride: so K and V must share their strides, every stride and both bases
 * must be 16-byte aligned, and the block stride a multiple of the token
 * stride. Anything else is ATTN_ERR_UNSUPPORTED naming the strides (never
 * a result read from the wrong rows). */
static attn_status resolve_kv_layout(const attn_shape *s, const attn_forward_args *a,
                                     attn_kparams *p, char *err, size_t err_size)
{
    const int64_t eb = attn_plan_kv_bytes(s->kv_dtype);
    const int64_t hkv = p->hkv, d = p->d, page = s->page_size;
    const int64_t k[3] = {a->k_stride_block ? a->k_stride_block : page * hkv * d,
                          a->k_stride_token ? a->k_stride_token : hkv * d,
                          a->k_stride_head ? a->k_stride_head : d};
    const int64_t v[3] = {a->v_stride_block ? a->v_stride_block : page * hkv * p->dv,
                          a->v_stride_token ? a->v_stride_token : hkv * p->dv,
                          a->v_stride_head ? a->v_stride_head : p->dv};
    const char *why = NULL;
    if (k[0] != v[0] || k[1] != v[1] || k[2] != v[2])
        why = "K and V strides differ (the kernels read both at one offset)";
    else if ((k[0] * eb) % 16 || (k[1] * eb) % 16 || (k[2] * eb) % 16 ||
             (uintptr_t)a->k_cache % 16 || (uintptr_t)a->v_cache % 16)
        why = "a stride or a cache base is not 16-byte aligned";
    else if (k[1] <= 0 || k[0] % k[1] != 0 || k[0] / k[1] > INT32_MAX / 2)
        why = "the block stride is not a multiple of the token stride";
    if (why) {
        attn_set_err(err, err_size,
                "K/V cache strides k (%lld, %lld, %lld), v (%lld, %lld, %lld) (block, token, "
                "head; elements of %lld bytes): %s",
                (long long)k[0], (long long)k[1], (long long)k[2], (long long)v[0],
                (long long)v[1], (long long)v[2], (long long)eb, why);
        return ATTN_ERR_UNSUPPORTED;
    }
    p->kv_stride_block = k[0] * eb;
    p->kv_stride_token = k[1] * eb;
    p->kv_stride_head = k[2] * eb;
    p->kv_block_slots = (int32_t)(k[0] / k[1]);
    return ATTN_OK;
}

/* The decode launch: the matrix-unit kernel where the shape takes it and the
 * batch fits its grid (sequences in y, at most 65535), else the scalar decode
 * kernel with the same segments. */
static hipError_t launch_decode(const gpu_attn_ctx *ctx, const attn_kparams *p,
                                hipStream_t stream)
{
    if (decode_uses_mma(ctx) && p->num_seqs <= 65535)
        return attn_launch_decode_mma(p, stream);
    return attn_launch_decode(p, stream);
}

extern "C" attn_status gpu_attn_forward(gpu_attn_ctx *ctx, const attn_forward_args *a, char *err,
                                        size_t err_size)
{
    if (!ctx || !a) {
        attn_set_err(err, err_size, "NULL backend or args");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    if (a->struct_size < sizeof(attn_forward_args)) {
        attn_set_err(err, err_size, "attn_forward_args.struct_size %u is smaller than %zu",
                (unsigned)a->struct_size, sizeof(attn_forward_args));
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    const attn_shape *s = &ctx->shape;
    if (a->num_seqs < 0 || a->num_tokens < 0) {
        attn_set_err(err, err_size, "negative num_seqs or num_tokens");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    if (a->num_seqs == 0 || a->num_tokens == 0)
        return ATTN_OK;
    if (!a->q || !a->k_cache || !a->v_cache || !a->block_table || !a->cu_seqlens_q ||
        !a->seqused_k || !a->out || (s->has_sinks && !a->sinks) || (s->return_lse && !a->lse)) {
        attn_set_err(err, err_size, "a required tensor pointer is NULL");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    if (a->max_seqlen_q < 1 || (s->max_q_len > 0 && a->max_seqlen_q > s->max_q_len) ||
        (s->max_kv_len > 0 && a->max_seqlen_k > s->max_kv_len)) {
        attn_set_err(err, err_size, "max_seqlen_q %d / max_seqlen_k %d outside the shape's %d / %d",
                (int)a->max_seqlen_q, (int)a->max_seqlen_k, (int)s->max_q_len,
                (int)s->max_kv_len);
        return ATTN_ERR_INVALID_ARGUMENT;
    }

    attn_kparams p;
    memset(&p, 0, sizeof p);
    int hkv = attn_shape_kv_heads(s);
    p.q = a->q;
    p.q_stride_token = a->q_stride_token;
    /* Hosts pass views of a fused qkv tensor: the MTP kernel reads a row 16
     * bytes at a time only when every row start is 16-byte aligned. */
    p.q_vec16 = ((uintptr_t)a->q % 16 == 0) && a->q_stride_token % 8 == 0 &&
                a->q_stride_head % 8 == 0;
    p.mtp_wgmma = ctx->mtp_wgmma;
    p.q_stride_head = a->q_stride_head;
    p.k_cache = a->k_cache;
    p.v_cache = a->v_cache;
    p.block_table = a->block_table;
    p.bt_stride = a->block_table_stride;
    p.cu_seqlens_q = a->cu_seqlens_q;
    p.seqused_k = a->seqused_k;
    p.sinks = s->has_sinks ? a->sinks : NULL;
    p.out = a->out;
    p.out_stride_token = a->out_stride_token;
    p.out_stride_head = a->out_stride_head;
    p.num_seqs = a->num_seqs;
    p.num_tokens = a->num_tokens;
    p.hq = s->num_q_heads;
    p.hkv = hkv;
    p.group = s->num_q_heads / hkv;
    p.d = s->head_dim;
    p.dv = attn_shape_head_dim_v(s);
    p.page = s->page_size;
    p.q_dtype = s->q_dtype;
    p.kv_dtype = s->kv_dtype;
    p.out_dtype = s->out_dtype;
    /* cpu-ref's semantics: FP8 compute quantises Q to e4m3(q / q_descale)
     * and folds q_descale into the score scale; descales of an FP8 cache
     * apply only to an FP8 cache. */
    int fp8_compute = is_fp8(s->compute_dtype);
    p.q_quant = fp8_compute ? s->compute_dtype : 0;
    p.q_descale = a->q_descale != 0.f ? a->q_descale : 1.f;
    p.score_scale = a->scale * (is_fp8(s->kv_dtype) ? a->k_descale : 1.f) *
                    (fp8_compute ? p.q_descale : 1.f);
    p.v_scale = is_fp8(s->kv_dtype) ? a->v_descale : 1.f;
    p.causal = s->causal;
    p.window_left = s->window_left;
    p.window_right = s->window_right;
    p.softcap = s->softcap;
    p.stages = ctx->generic_stages;
    p.raw_kv = ctx->generic_raw;
    p.shared_limit = ctx->plan.shared_limit;
    p.page_shift = -1;
    for (int sh = 0; sh < 31; sh++)
        if (s->page_size == (1 << sh))
            p.page_shift = sh;
    attn_status lay = resolve_kv_layout(s, a, &p, err, err_size);
    if (lay != ATTN_OK)
        return lay;
    if (s->return_lse) {
        p.lse = a->lse;
        p.lse_stride_token = a->lse_stride_token ? a->lse_stride_token : s->num_q_heads;
        p.lse_stride_head = a->lse_stride_head ? a->lse_stride_head : 1;
    }

    /* The prefill kernel takes the context's multi-token batches; it folds
     * the score scale into its exponent (max of raw scores), which needs a
     * positive scale: any other runs on the portable kernel. */
    const int use_prefill = ctx->prefill && a->max_seqlen_q > 1 && p.score_scale > 0.f;
    /* A batch that may hold sequences of one query token beside longer ones
     * (chunked prefill with decodes: fewer tokens than every sequence at the
     * longest) is split over two kernels: the prefill kernel takes the
     * chunks and writes their outputs itself (nseg 1), and the decode kernel
     * takes the one-token sequences with the workspace for its segments. A
     * 128-row program would spend most of its rows on a single token. */
    const int mixed = use_prefill && !p.lse && a->num_seqs > 1 &&
                      (long)a->num_tokens < (long)a->num_seqs * a->max_seqlen_q;
    int nseg;
    if (ctx->kernel == GPU_ATTN_KERNEL_MTP) {
        if (a->max_seqlen_q > ATTN_MTP_MAX_Q_LEN) {
            attn_set_err(err, err_size, "the MTP kernel takes at most %d query tokens per sequence",
                    ATTN_MTP_MAX_Q_LEN);
            return ATTN_ERR_INVALID_ARGUMENT;
        }
        nseg = mtp_nseg(ctx, a->num_tokens, a->num_seqs, a->max_seqlen_k);
    } else {
        nseg = mixed ? 1
                     : generic_nseg(ctx, a->num_tokens, a->num_seqs, a->max_seqlen_q,
                                    a->max_seqlen_k, use_prefill);
        if (a->max_seqlen_q == 1)
            decode_tiling(ctx, &p);
        else if (use_prefill)
            prefill_tiling(p.group, &p.block_q, &p.heads_per_tile, &p.head_splits);
        else
            generic_tiling(p.group, &p.block_q, &p.heads_per_tile, &p.head_splits);
    }
    /* A workspace sized for smaller limits than this batch: use fewer
     * segments rather than write past it. */
    nseg = segments_that_fit(ctx, a->num_tokens, nseg, a->workspace_size);
    if ((ctx->kernel == GPU_ATTN_KERNEL_MTP || nseg > 1 || p.lse) &&
        (!a->workspace || partial_bytes(ctx, a->num_tokens, nseg) > a->workspace_size)) {
        attn_set_err(err, err_size, "workspace of %zu bytes is smaller than the %zu this batch needs",
                a->workspace_size, partial_bytes(ctx, a->num_tokens, nseg));
        return ATTN_ERR_WORKSPACE_TOO_SMALL;
    }
    set_segments(&p, a, nseg);

    hipStream_t stream = (hipStream_t)a->stream;
    hipError_t e;
    if (ctx->kernel == GPU_ATTN_KERNEL_MTP) {
        e = attn_launch_mtp(&p, a->max_seqlen_q, nseg, stream);
    } else if (a->max_seqlen_q == 1) {
        e = launch_decode(ctx, &p, stream);
    } else if (use_prefill) {
        p.batch_part = mixed ? ATTN_PART_MULTI : ATTN_PART_ALL;
        e = attn_launch_prefill(&p, stream);
        if (e == hipSuccess && mixed) {
            attn_kparams d = p;
            d.batch_part = ATTN_PART_SINGLE;
            decode_tiling(ctx, &d);
            const int nd = segments_that_fit(ctx, a->num_tokens,
                                             decode_nseg(ctx, a->num_seqs, a->max_seqlen_k),
                                             a->workspace ? a->workspace_size : 0);
            set_segments(&d, a, nd);
            e = launch_decode(ctx, &d, stream);
        }
    } else {
        e = attn_launch_generic(&p, a->max_seqlen_q, stream, 4);
    }
    if (e != hipSuccess) {
        attn_set_err(err, err_size, "%s: kernel launch failed: %s", ATTN_PLATFORM_NAME,
                hipGetErrorString(e));
        return ATTN_ERR_RUNTIME;
    }
    return ATTN_OK;
}

/* ---- the plugins' entry points (attn_gpu_entry.h) ----------------------- */

#define ATTN_HIDDEN __attribute__((visibility("hidden")))

extern "C" {

ATTN_HIDDEN attn_status attn_gpu_generic_create(const attn_plugin_context *ctx,
                                                const attn_shape *shape, void **backend,
                                                char *err, size_t err_size)
{
    (void)ctx;
    return gpu_attn_create(GPU_ATTN_KERNEL_GENERIC, shape, (gpu_attn_ctx **)backend, err,
                           err_size);
}
/* [params] mtp_variant = auto | mma | wgmma: the MTP kernel's variant for
 * every q_len (auto: the rule in gpu_attn_create), for comparisons. */
ATTN_HIDDEN attn_status attn_gpu_mtp_create(const attn_plugin_context *ctx,
                                            const attn_shape *shape, void **backend, char *err,
                                            size_t err_size)
{
    const char *v = ctx ? attn_param_get(ctx, "mtp_variant") : NULL;
    int variant = 2;
    if (v && strcmp(v, "mma") == 0)
        variant = 0;
    else if (v && strcmp(v, "wgmma") == 0)
        variant = 1;
    else if (v && strcmp(v, "auto") != 0) {
        attn_set_err(err, err_size, "[params] mtp_variant '%.64s' not in {auto, mma, wgmma} (%s)",
                     v, ctx->conf_file ? ctx->conf_file : "its INI");
        return ATTN_ERR_CREATE_FAILED;
    }
    attn_status st =
        gpu_attn_create(GPU_ATTN_KERNEL_MTP, shape, (gpu_attn_ctx **)backend, err, err_size);
    if (st == ATTN_OK)
        gpu_attn_force_mtp_variant((gpu_attn_ctx *)*backend, variant);
    return st;
}
ATTN_HIDDEN attn_status attn_gpu_workspace_size(void *backend, const attn_batch_limits *limits,
                                                size_t *bytes)
{
    return gpu_attn_workspace_size((const gpu_attn_ctx *)backend, limits, bytes);
}
ATTN_HIDDEN attn_status attn_gpu_forward(void *backend, const attn_forward_args *args, char *err,
                                         size_t err_size)
{
    return gpu_attn_forward((gpu_attn_ctx *)backend, args, err, err_size);
}
ATTN_HIDDEN void attn_gpu_destroy(void *backend)
{
    gpu_attn_destroy((gpu_attn_ctx *)backend);
}
ATTN_HIDDEN attn_status attn_gpu_probe_devices(const attn_plugin_context *ctx,
                                               attn_device_info *devices, uint32_t capacity,
                                               uint32_t *count, char *err, size_t err_size)
{
    (void)ctx;
    return gpu_attn_probe(devices, capacity, count, err, err_size);
}
ATTN_HIDDEN attn_status attn_gpu_append_kv(void *backend, const attn_append_args *args,
                                           char *err, size_t err_size)
{
    return gpu_attn_append_kv((gpu_attn_ctx *)backend, args, err, err_size);
}
/* The host checked the arguments and passes its full-size struct (as
 * cpu-ref's entry, anything older than 0.5 is refused). */
ATTN_HIDDEN attn_status attn_gpu_merge_states(void *backend, const attn_merge_args *args,
                                              char *err, size_t err_size)
{
    if (!args || args->struct_size < offsetof(attn_merge_args, stream) + sizeof(void *)) {
        attn_set_err(err, err_size, "merge_states: args missing or older than 0.5");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    return gpu_attn_merge_states((gpu_attn_ctx *)backend, args, args->stream, err, err_size);
}
}
