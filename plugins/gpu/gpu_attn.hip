/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu_attn.hip — host side of the GPU kernels: device probe, contexts,
 * workspace sizing, argument checks, the K/V layout and the forward call,
 * which runs a batch on the family its plugin kernel's table chooses
 * (attn_families.h: the families' tiling, segment rules and launches live
 * in attn_families.hip). Also defines the entry points the two plugins call
 * when they are built with ATTNREG_HAVE_GPU_KERNELS.
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
#include "attn_families.h"
#include "attn_gpu_entry.h"

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

/* What this build holds beyond the portable kernels (the plans' features,
 * attn_launch_plan_build_features). */
extern "C" __attribute__((visibility("hidden"))) int attn_gpu_kernels_have_wgmma(void)
{
    return attn_mtp_has_wgmma();
}
static attn_launch_plan_features build_features(void)
{
    return attn_launch_plan_build_features();
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

/* What every kernel needs of a shape; each plugin kernel's table checks the
 * rest (attn_families.hip). The plugins' predicates are the user-facing
 * truth and may be narrower. */
static attn_status check_shape(const attn_kernel_ops *ops, const attn_shape *s, char *err,
                               size_t n)
{
    int hkv = attn_shape_kv_heads(s);
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
               s->kv_dtype == ATTN_DTYPE_F32 || attn_dtype_is_fp8(s->kv_dtype);
    int ook = s->out_dtype == ATTN_DTYPE_BF16 || s->out_dtype == ATTN_DTYPE_F16 ||
              s->out_dtype == ATTN_DTYPE_F32;
    if (!qok || !kvok || !ook) {
        attn_set_err(err, n, "the GPU kernels take q bf16/f16/f32, kv bf16/f16/f32/fp8, out "
                        "bf16/f16/f32 (got q %d, kv %d, out %d)",
                (int)s->q_dtype, (int)s->kv_dtype, (int)s->out_dtype);
        return ATTN_ERR_CREATE_FAILED;
    }
    return ops->check_shape(s, err, n);
}

extern "C" attn_status gpu_attn_create(gpu_attn_kernel kernel, const attn_shape *shape,
                                       gpu_attn_ctx **out, char *err, size_t err_size)
{
    if (!shape || !out) {
        attn_set_err(err, err_size, "NULL shape or output pointer");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    *out = NULL;
    const attn_kernel_ops *ops = attn_kernel_ops_of(kernel);
    if (!ops) {
        attn_set_err(err, err_size, "no GPU kernel %d", (int)kernel);
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    attn_status st = check_shape(ops, shape, err, err_size);
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
    if (ops->check_device && (st = ops->check_device(&prop, dev, arch, err, err_size)) != ATTN_OK)
        return st;
    const attn_arch_limits *limits = attn_gpu_limits_of(arch);
    if (!limits) {
        attn_set_err(err, err_size, "no launch limits are known for %s (device %d, %s)", arch, dev,
                prop.name);
        return ATTN_ERR_CREATE_FAILED;
    }
    attn_launch_plan plan;
    char why[ATTN_VERDICT_MESSAGE_MAX];
    plan.struct_size = sizeof plan;
    if (!ops->plan(shape, limits, build_features(), &plan, why, sizeof why)) {
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
        const int dk = attn_launch_plan_find(&plan, ATTN_ROLE_DECODE);
        c->decode_mma =
            dk >= 0 && attn_launch_plan_kernel_of(&plan.kernels[dk]) == ATTN_PLAN_KERNEL_DECODE_MMA;
        for (uint32_t k = 0; k < plan.num_kernels && k < ATTN_PLAN_MAX_KERNELS; k++) {
            const attn_launch_plan_kernel_id id = attn_launch_plan_kernel_of(&plan.kernels[k]);
            if (id == ATTN_PLAN_KERNEL_GENERIC || id == ATTN_PLAN_KERNEL_GENERIC_RAW) {
                c->generic_stages = plan.kernels[k].stages;
                c->generic_raw = id == ATTN_PLAN_KERNEL_GENERIC_RAW;
            }
        }
    }
    c->ops = ops;
    c->kernel = kernel;
    memcpy(&c->shape, shape, sizeof c->shape < shape->struct_size ? sizeof c->shape
                                                                  : shape->struct_size);
    c->shape.struct_size = sizeof c->shape;
    c->device = dev;
    c->cus = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
    c->l2_bytes = prop.l2CacheSize > 0 ? prop.l2CacheSize : 0;
#if defined(ATTN_PLATFORM_CUDA)
    c->pdl_capable = prop.major >= 9; /* programmatic dependent launch: sm_90 and later */
#endif
    c->pdl = c->pdl_capable;
    c->pdl_main = c->pdl_capable;
    c->mtp_pair = -1;
    c->reduce_rows = 1;
    c->prefill_dynamic = -1;
    c->prefill_per_cu = 1;
    c->prefill_layout_dynamic = 0;
    ops->configure(c, &prop);
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

extern "C" int gpu_attn_force_mtp_pair(gpu_attn_ctx *ctx, int use)
{
    if (!ctx || ctx->kernel != GPU_ATTN_KERNEL_MTP || use < -1 || use > 1)
        return -2;
    ctx->mtp_pair = use;
    return use;
}

extern "C" int gpu_attn_force_pdl(gpu_attn_ctx *ctx, int use)
{
    if (!ctx)
        return -1;
    ctx->pdl = use && ctx->pdl_capable;
    return ctx->pdl;
}

extern "C" int gpu_attn_force_pdl_main(gpu_attn_ctx *ctx, int use)
{
    if (!ctx)
        return -1;
    ctx->pdl_main = use && ctx->pdl_capable;
    return ctx->pdl_main;
}

extern "C" int gpu_attn_force_reduce_rows(gpu_attn_ctx *ctx, int use)
{
    if (!ctx)
        return -1;
    ctx->reduce_rows = use ? 1 : 0;
    return ctx->reduce_rows;
}

extern "C" int gpu_attn_force_prefill_persistent(gpu_attn_ctx *ctx, int use)
{
    if (!ctx)
        return -2;
    ctx->prefill_dynamic = use < 0 ? -1 : use > 0 ? 1 : 0;
    return ctx->prefill_dynamic;
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
    const int rows = ctx->ops->generic_rows;
    const attn_shape *s = &ctx->shape;
    raw_kv = raw_kv && rows == 4 && attn_launch_plan_generic_raw_built(s->head_dim);
    if (attn_launch_plan_generic_variant_bytes(s->head_dim, attn_shape_head_dim_v(s),
                                        attn_launch_plan_kv_bytes(s->kv_dtype), rows, stages,
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
        ctx->forced_nseg = nseg < 0 ? 0 : nseg > ATTN_REDUCE_MAX_SEGMENTS ? ATTN_REDUCE_MAX_SEGMENTS : nseg;
}

extern "C" int gpu_attn_compute_units(const gpu_attn_ctx *ctx)
{
    return ctx ? ctx->cus : 0;
}

extern "C" const attn_shape *gpu_attn_shape(const gpu_attn_ctx *ctx)
{
    return ctx ? &ctx->shape : NULL;
}

/* The family and segment count of a batch, as a forward would plan it (the
 * prefill kernel assumed able to take it: a positive score scale). */
extern "C" int gpu_attn_plan_segments(const gpu_attn_ctx *ctx, int num_tokens, int num_seqs,
                                      int max_seqlen_q, int max_seqlen_k)
{
    if (!ctx)
        return 0;
    const attn_batch_dims b = {num_tokens, num_seqs, max_seqlen_q, max_seqlen_k};
    return attn_family_segments(ctx, ctx->ops->family(ctx, &b, 1), &b);
}

static size_t partial_bytes(const gpu_attn_ctx *c, int T, int nseg)
{
    size_t per = (size_t)c->shape.num_q_heads * ((size_t)attn_shape_head_dim_v(&c->shape) + 2);
    return (size_t)nseg * (size_t)T * per * sizeof(float);
}

/* A launch's counters (attn_family_ops.counter_bytes) go after its partials
 * (none: at the workspace's start), on a 128-byte line of their own. */
#define ATTN_COUNTERS_ALIGN 128
static size_t counters_offset(const gpu_attn_ctx *c, int T, int nseg, int partials)
{
    const size_t a = ATTN_COUNTERS_ALIGN;
    return partials ? (partial_bytes(c, T, nseg) + a - 1) / a * a : 0;
}

/* The largest workspace any batch within the limits can need: its
 * partials, then the counters of its family's launch. The segment count
 * only falls as sequences are added, so for each token count the fewest
 * sequences that can hold them is the worst case (fewer segments: fewer
 * partials and counters). */
extern "C" attn_status gpu_attn_workspace_size(const gpu_attn_ctx *ctx,
                                               const attn_batch_limits *limits, size_t *bytes)
{
    if (!ctx || !limits || !bytes)
        return ATTN_ERR_INVALID_ARGUMENT;
    int maxq = ctx->shape.max_q_len > 0 ? ctx->shape.max_q_len : 1;
    int maxk = ctx->shape.max_kv_len;
    size_t worst = 0;
    for (int T = 1; T <= limits->max_num_tokens; T++) {
        int S = (T + maxq - 1) / maxq;
        if (limits->max_num_seqs > 0 && S > limits->max_num_seqs)
            break; /* more tokens than the sequences can hold */
        const attn_batch_dims b = {T, S, maxq, maxk};
        const attn_family_ops *f = ctx->ops->family(ctx, &b, 1);
        const int n = attn_family_segments(ctx, f, &b);
        /* A batch of T one-token sequences may run on another family (the
         * generic kernel's decode path), whose segment rule differs: size
         * for it too. */
        const attn_batch_dims one = {T, T, 1, maxk};
        const attn_family_ops *fd = ctx->ops->family(ctx, &one, 1);
        if (maxq > 1 && fd != f && (limits->max_num_seqs <= 0 || T <= limits->max_num_seqs)) {
            const int nd = attn_family_segments(ctx, fd, &one);
            if (nd > 1 && partial_bytes(ctx, T, nd) > worst)
                worst = partial_bytes(ctx, T, nd);
        }
        /* One segment writes the output itself, unless the family always
         * writes partials or the log-sum-exp is wanted: the reduce kernel
         * writes it, from the partials. */
        const int partials = f->always_partials || n > 1 || ctx->shape.return_lse;
        size_t bytes_T = partials ? partial_bytes(ctx, T, n) : 0;
        const size_t cb = f->counter_bytes ? f->counter_bytes(ctx, NULL, n) : 0;
        if (cb)
            bytes_T = counters_offset(ctx, T, n, partials) + cb;
        if (bytes_T > worst)
            worst = bytes_T;
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

/* The score scale the kernels apply. cpu-ref's semantics: FP8 compute
 * quantises Q to e4m3(q / q_descale) and folds q_descale into the score
 * scale; descales of an FP8 cache apply only to an FP8 cache. */
static float score_scale_of(const attn_shape *s, const attn_forward_args *a)
{
    const float qd = a->q_descale != 0.f ? a->q_descale : 1.f;
    return a->scale * (attn_dtype_is_fp8(s->kv_dtype) ? a->k_descale : 1.f) *
           (attn_dtype_is_fp8(s->compute_dtype) ? qd : 1.f);
}

/* What a forward of `a` launches first: the family that runs the batch,
 * whether the batch is split over the prefill and decode kernels, its
 * segments within the workspace, whether it writes partials, and where
 * its family's counters go. */
typedef struct forward_plan {
    const attn_family_ops *fam;
    int mixed, nseg, partials;
    size_t counters_at, counter_bytes; /* counter_bytes 0: the launch wants none */
} forward_plan;

static forward_plan plan_forward(const gpu_attn_ctx *ctx, const attn_forward_args *a,
                                 int scale_positive, int lse)
{
    forward_plan f;
    const attn_batch_dims dims = {a->num_tokens, a->num_seqs, a->max_seqlen_q, a->max_seqlen_k};
    /* The prefill kernel folds the score scale into its exponent (max of
     * raw scores), which needs a positive scale: any other batch runs on
     * the portable kernel. */
    f.fam = ctx->ops->family(ctx, &dims, scale_positive);
    /* A batch that may hold sequences of one query token beside longer ones
     * (chunked prefill with decodes: fewer tokens than every sequence at the
     * longest) is split over two kernels: the prefill kernel takes the
     * chunks and writes their outputs itself (nseg 1), and the decode kernel
     * takes the one-token sequences with the workspace for its segments. A
     * 128-row program would spend most of its rows on a single token. */
    f.mixed = f.fam == &attn_family_prefill && !lse && a->num_seqs > 1 &&
              (long)a->num_tokens < (long)a->num_seqs * a->max_seqlen_q;
    /* A workspace sized for smaller limits than this batch: fewer segments
     * rather than a write past it. */
    f.nseg = segments_that_fit(ctx, a->num_tokens,
                               f.mixed ? 1 : attn_family_segments(ctx, f.fam, &dims),
                               a->workspace_size);
    f.partials = f.fam->always_partials || f.nseg > 1 || lse;
    f.counter_bytes = f.fam->counter_bytes ? f.fam->counter_bytes(ctx, &dims, f.nseg) : 0;
    f.counters_at = counters_offset(ctx, a->num_tokens, f.nseg, f.partials);
    return f;
}

/* The launch's counters have room in the workspace. Where they have not
 * (NULL, or sized before they were counted) the launch runs without: the
 * prefill kernel one program an item. */
static int counters_fit(const forward_plan *f, const attn_forward_args *a)
{
    return f->counter_bytes && a->workspace &&
           f->counters_at + f->counter_bytes <= a->workspace_size;
}

extern "C" int gpu_attn_plan_prefill_grid(const gpu_attn_ctx *ctx, const attn_forward_args *a,
                                          size_t *counters_end)
{
    if (counters_end)
        *counters_end = 0;
    if (!ctx || !a || a->num_seqs <= 0 || a->num_tokens <= 0)
        return -1;
    const forward_plan f =
        plan_forward(ctx, a, score_scale_of(&ctx->shape, a) > 0.f, ctx->shape.return_lse);
    if (f.fam != &attn_family_prefill)
        return 0;
    if (counters_end && f.counter_bytes)
        *counters_end = f.counters_at + f.counter_bytes;
    return counters_fit(&f, a) ? 2 : 1;
}

/* K/V caches by stride (attn_forward_args.k_stride_* / v_stride_*, elements,
 * 0 = the contiguous [blocks, page, Hkv, D] layout's): vLLM's layout,
 * FlashInfer's NHD ([blocks, 2, page, H, D]: K and V views of one tensor)
 * and HND ([blocks, H, page, D]) and padded rows are read in place. The
 * kernels copy 16-byte chunks and read K and V at one offset from their two
 * bases, and the prefill kernel indexes a block's slots by the token
 * stride: so K and V must share their strides, every stride and both bases
 * must be 16-byte aligned, the block stride a multiple of the token stride
 * and the token stride under 4 GiB. Anything else is ATTN_ERR_UNSUPPORTED
 * naming the strides (never a result read from the wrong rows). */
static attn_status resolve_kv_layout(const attn_shape *s, const attn_forward_args *a,
                                     attn_kparams *p, char *err, size_t err_size)
{
    const int64_t eb = attn_launch_plan_kv_bytes(s->kv_dtype);
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
    else if (k[1] * eb > (int64_t)UINT32_MAX)
        why = "the token stride is 4 GiB or more (the prefill kernel's copies take it as 32 bits)";
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
    p.pdl = ctx->pdl;
    p.pdl_main = ctx->pdl_main;
    p.reduce_rows = ctx->reduce_rows;
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
    /* the prefill kernel stores two columns at once where every row start
     * keeps them aligned */
    p.out_pair = (uintptr_t)a->out % (2 * attn_dtype_size(s->out_dtype)) == 0 &&
                 a->out_stride_token % 2 == 0 && a->out_stride_head % 2 == 0;
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
    p.q_quant = attn_dtype_is_fp8(s->compute_dtype) ? s->compute_dtype : 0;
    p.q_descale = a->q_descale != 0.f ? a->q_descale : 1.f;
    p.score_scale = score_scale_of(s, a);
    p.v_scale = attn_dtype_is_fp8(s->kv_dtype) ? a->v_descale : 1.f;
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

    if (ctx->ops->check_batch) {
        attn_status bs = ctx->ops->check_batch(ctx, a, err, err_size);
        if (bs != ATTN_OK)
            return bs;
    }
    const attn_batch_dims dims = {a->num_tokens, a->num_seqs, a->max_seqlen_q, a->max_seqlen_k};
    const forward_plan fp = plan_forward(ctx, a, p.score_scale > 0.f, p.lse != NULL);
    const attn_family_ops *fam = fp.fam;
    const int mixed = fp.mixed, nseg = fp.nseg;
    fam->tiling(ctx, &p);
    if (fp.partials &&
        (!a->workspace || partial_bytes(ctx, a->num_tokens, nseg) > a->workspace_size)) {
        attn_set_err(err, err_size, "workspace of %zu bytes is smaller than the %zu this batch needs",
                a->workspace_size, partial_bytes(ctx, a->num_tokens, nseg));
        return ATTN_ERR_WORKSPACE_TOO_SMALL;
    }
    set_segments(&p, a, nseg);
    if (counters_fit(&fp, a))
        p.counters = (int32_t *)((char *)a->workspace + fp.counters_at);

    hipStream_t stream = (hipStream_t)a->stream;
    p.batch_part = mixed ? ATTN_PART_MULTI : ATTN_PART_ALL;
    hipError_t e = fam->launch(ctx, &p, &dims, stream);
    if (e == hipSuccess && mixed) {
        /* The one-token sequences: the decode family of the same batch with
         * q_len 1, its own segments in the same workspace. */
        const attn_batch_dims one = {a->num_tokens, a->num_seqs, 1, a->max_seqlen_k};
        const attn_family_ops *dec = ctx->ops->family(ctx, &one, 0);
        attn_kparams d = p;
        d.batch_part = ATTN_PART_SINGLE;
        d.counters = NULL; /* the prefill launch's, done with in stream order */
        dec->tiling(ctx, &d);
        const int nd = segments_that_fit(ctx, a->num_tokens, attn_family_segments(ctx, dec, &one),
                                         a->workspace ? a->workspace_size : 0);
        set_segments(&d, a, nd);
        e = dec->launch(ctx, &d, &one, stream);
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
