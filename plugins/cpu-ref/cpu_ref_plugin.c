/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_ref_plugin.c — the cpu-ref backend: the reference attention
 * implementation on the CPU, and the answer of last resort.
 *
 * This file holds the plugin descriptor, the capability predicates, the
 * constructor (thread pool, kernel choice), the workspace query and forward
 * (argument validation, work decomposition, dispatch to the kernels).
 *
 * Honesty rule: every predicate accepts exactly what forward computes
 * correctly, and forward checks its arguments against the shape the object
 * was created for, so a host that passes something the selection did not
 * cover gets an error naming it rather than a silently different result.
 */
#define _GNU_SOURCE /* sysconf(_SC_PHYS_PAGES) */

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn_append_check.h"
#include "attn_batch_check.h"
#include "attn_dtype_conv.h"
#include "attn_merge_cpu.h"
#include "attn_plugin.h"
#include "cpu_ref_kernel.h"
#include "cpu_ref_pool.h"

/* Head sizes cpu-ref accepts. Any size computes correctly; the bound keeps
 * the per-thread scratch (which grows linearly with it) below a few MiB and
 * is four times the largest head size in use today (256; MLA's 576/512). */
#define CPU_REF_MAX_HEAD_DIM 1024
/* More threads than this would only add scratch and wake-up cost. */
#define CPU_REF_MAX_THREADS 1024

/* The shape fields the plugin reads end with has_sinks. */
#define CPU_REF_SHAPE_MIN_SIZE (offsetof(attn_shape, has_sinks) + sizeof(int32_t))
#define CPU_REF_ARGS_MIN_SIZE (offsetof(attn_forward_args, stream) + sizeof(void *))

typedef struct cpu_ref_backend {
    attn_shape shape;
    int32_t num_kv_heads;
    int32_t head_dim_v;
    cpu_ref_geometry geometry;
    size_t scratch_bytes; /* per thread */
    size_t partial_bytes; /* per split slot */
    int num_threads;
    const cpu_ref_kernels *kernels;
    cpu_ref_pool pool;
} cpu_ref_backend;

/* ---- helpers ------------------------------------------------------------ */

static void set_error(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_error(char *err, size_t err_size, const char *fmt, ...)
{
    if (!err || err_size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
}

static int shape_readable(const attn_shape *s)
{
    return s && s->struct_size >= CPU_REF_SHAPE_MIN_SIZE;
}

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > CPU_REF_MAX_THREADS ? CPU_REF_MAX_THREADS : (int)n);
}

/* Parses a whole decimal integer in [min, max]; 0 on success. */
static int parse_int(const char *text, long min, long max, long *out)
{
    if (!text)
        return -1;
    while (isspace((unsigned char)*text))
        text++;
    if (!*text)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* ---- predicates --------------------------------------------------------- */

#define REQUIRE_SHAPE(shape, verdict)                                                              \
    do {                                                                                           \
        if (!shape_readable(shape))                                                                \
            return attn_reject(verdict, ATTN_REASON_OTHER,                                         \
                               "the shape descriptor is older than cpu-ref needs (struct_size)");  \
    } while (0)

static int check_arch(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    REQUIRE_SHAPE(shape, v);
    if (strncmp(shape->arch, "cpu", sizeof shape->arch) != 0)
        return attn_reject(v, ATTN_REASON_ARCH, "cpu-ref runs on arch \"cpu\" only, not \"%.*s\"",
                           (int)sizeof shape->arch, shape->arch);
    return attn_accept(v);
}

static int is_float_dtype(int32_t dtype)
{
    return dtype == ATTN_DTYPE_F32 || dtype == ATTN_DTYPE_F16 || dtype == ATTN_DTYPE_BF16;
}

static int check_q_dtype(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    REQUIRE_SHAPE(shape, v);
    if (!is_float_dtype(shape->q_dtype))
        return attn_reject(v, ATTN_REASON_Q_DTYPE,
                           "cpu-ref takes queries as f32, f16 or bf16, not %s (FP8 queries come "
                           "from quantising with an fp8 compute dtype)",
                           attn_dtype_spelling(shape->q_dtype));
    return attn_accept(v);
}

static int check_kv_dtype(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    REQUIRE_SHAPE(shape, v);
    if (!is_float_dtype(shape->kv_dtype) && !attn_conv_dtype_is_fp8(shape->kv_dtype))
        return attn_reject(v, ATTN_REASON_KV_DTYPE,
                           "cpu-ref reads KV caches of f32, f16, bf16, fp8_e4m3fn or "
                           "fp8_e4m3fnuz, not dtype code %d",
                           (int)shape->kv_dtype);
    return attn_accept(v);
}

static int check_compute_dtype(const attn_plugin_context *ctx, const attn_shape *shape,
                               attn_verdict *v)
{
    (void)ctx;
    REQUIRE_SHAPE(shape, v);
    if (is_float_dtype(shape->compute_dtype))
        return attn_accept(v);
    if (attn_conv_dtype_is_fp8(shape->compute_dtype)) {
        /* FP8 compute emulates an FP8 dot product: both operands in one e4m3
         * format, so the KV cache must already be in it. */
        if (shape->kv_dtype != shape->compute_dtype)
            return attn_reject(v, ATTN_REASON_COMPUTE_DTYPE,
                               "cpu-ref computes in %s only with a %s KV cache, not %s",
                               attn_dtype_spelling(shape->compute_dtype),
                               attn_dtype_spelling(shape->compute_dtype),
                               attn_dtype_spelling(shape->kv_dtype));
        return attn_accept(v);
    }
    return attn_reject(v, ATTN_REASON_COMPUTE_DTYPE,
                       "cpu-ref computes in f32, f16, bf16, fp8_e4m3fn or fp8_e4m3fnuz, not dtype "
                       "code %d",
                       (int)shape->compute_dtype);
}

static int check_out_dtype(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    REQUIRE_SHAPE(shape, v);
    if (!is_float_dtype(shape->out_dtype))
        return attn_reject(v, ATTN_REASON_OUT_DTYPE,
                           "cpu-ref writes f32, f16 or bf16 outputs, not %s",
                           attn_dtype_spelling(shape->out_dtype));
    return attn_accept(v);
}

static int check_gqa(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    REQUIRE_SHAPE(shape, v);
    int32_t hq = shape->num_q_heads, hkv = attn_shape_kv_heads(shape);
    if (hq < 1 || hkv < 1 || hq % hkv != 0)
        return attn_reject(v, ATTN_REASON_GQA_RATIO,
                           "cpu-ref needs num_q_heads (%d) to be a positive multiple of "
                           "num_kv_heads (%d)",
                           (int)hq, (int)hkv);
    return attn_accept(v);
}

static int check_head_dims(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    REQUIRE_SHAPE(shape, v);
    if (shape->head_dim < 1 || shape->head_dim > CPU_REF_MAX_HEAD_DIM)
        return attn_reject(v, ATTN_REASON_HEAD_DIM, "cpu-ref supports head_dim 1..%d, not %d",
                           CPU_REF_MAX_HEAD_DIM, (int)shape->head_dim);
    int32_t dv = attn_shape_head_dim_v(shape);
    if (dv < 1 || dv > CPU_REF_MAX_HEAD_DIM)
        return attn_reject(v, ATTN_REASON_HEAD_DIM_V, "cpu-ref supports head_dim_v 1..%d, not %d",
                           CPU_REF_MAX_HEAD_DIM, (int)dv);
    return attn_accept(v);
}

static int check_page_size(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    REQUIRE_SHAPE(shape, v);
    if (shape->page_size < 1)
        return attn_reject(v, ATTN_REASON_PAGE_SIZE, "cpu-ref needs page_size >= 1, not %d",
                           (int)shape->page_size);
    return attn_accept(v);
}

static int check_lengths(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    REQUIRE_SHAPE(shape, v);
    if (shape->max_q_len < 0)
        return attn_reject(v, ATTN_REASON_Q_LEN, "cpu-ref needs max_q_len >= 0, not %d",
                           (int)shape->max_q_len);
    if (shape->max_kv_len < 0)
        return attn_reject(v, ATTN_REASON_KV_LEN, "cpu-ref needs max_kv_len >= 0, not %d",
                           (int)shape->max_kv_len);
    return attn_accept(v);
}

/* Causal and non-causal, any window, any softcap and sinks are computed;
 * only values that have no meaning are refused. */
static int check_features(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    REQUIRE_SHAPE(shape, v);
    if (shape->causal != 0 && shape->causal != 1)
        return attn_reject(v, ATTN_REASON_CAUSAL, "causal must be 0 or 1, not %d",
                           (int)shape->causal);
    if (shape->window_left < -1 || shape->window_right < -1)
        return attn_reject(v, ATTN_REASON_WINDOW,
                           "window sizes must be -1 (unbounded) or >= 0, not (%d, %d)",
                           (int)shape->window_left, (int)shape->window_right);
    if (!isfinite(shape->softcap) || shape->softcap < 0.0f)
        return attn_reject(v, ATTN_REASON_SOFTCAP,
                           "softcap must be 0 (none) or a finite positive number, not %g",
                           (double)shape->softcap);
    if (shape->has_sinks != 0 && shape->has_sinks != 1)
        return attn_reject(v, ATTN_REASON_SINKS, "has_sinks must be 0 or 1, not %d",
                           (int)shape->has_sinks);
    /* return_lse (0.4): a shape of an older host ends before it (off). */
    int32_t lse = shape->struct_size >= offsetof(attn_shape, return_lse) + sizeof(int32_t)
                      ? shape->return_lse
                      : 0;
    if (lse != 0 && lse != 1)
        return attn_reject(v, ATTN_REASON_LSE, "return_lse must be 0 or 1, not %d", (int)lse);
    return attn_accept(v);
}

static const attn_predicate cpu_ref_predicates[] = {
    {"arch", check_arch},           {"q_dtype", check_q_dtype},
    {"kv_dtype", check_kv_dtype},   {"compute_dtype", check_compute_dtype},
    {"out_dtype", check_out_dtype}, {"gqa_ratio", check_gqa},
    {"head_dims", check_head_dims}, {"page_size", check_page_size},
    {"lengths", check_lengths},     {"features", check_features},
};
#define CPU_REF_NUM_PREDICATES (sizeof cpu_ref_predicates / sizeof cpu_ref_predicates[0])

/* ---- devices ------------------------------------------------------------ */

static void cpu_model_name(char *out, size_t size)
{
    snprintf(out, size, "CPU");
    /* "e": O_CLOEXEC (glibc), so a host thread's exec meanwhile does not
     * inherit it. */
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *colon = strchr(line, ':');
        if (!colon)
            continue;
        colon++;
        while (*colon == ' ' || *colon == '\t')
            colon++;
        size_t n = strcspn(colon, "\n");
        if (n > 0)
            snprintf(out, size, "%.*s", (int)n, colon);
        break;
    }
    fclose(f);
}

static attn_status cpu_ref_probe(const attn_plugin_context *ctx, attn_device_info *devices,
                                 uint32_t capacity, uint32_t *count, char *err, size_t err_size)
{
    (void)ctx;
    if (!count) {
        set_error(err, err_size, "count is NULL");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    *count = 1;
    if (capacity == 0)
        return ATTN_OK;
    if (!devices) {
        set_error(err, err_size, "devices is NULL with capacity %u", (unsigned)capacity);
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    attn_device_info *d = &devices[0];
    memset(d, 0, sizeof *d);
    d->struct_size = sizeof *d;
    d->index = 0;
    snprintf(d->arch, sizeof d->arch, "cpu");
    cpu_model_name(d->name, sizeof d->name);
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    d->memory_bytes = pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
    d->compute_units = online_cpus();
    return ATTN_OK;
}

/* ---- construction ------------------------------------------------------- */

/* Threads: [params] threads (0 = automatic: the number of online CPUs). A
 * value that is not a number is an error, not a silent default. The
 * environment is not read: settings come from the host (the INI), so a
 * host's skip_env and a privileged host's refusal of the environment cover
 * this plugin too. */
static int choose_threads(const attn_plugin_context *ctx, int *threads, char *err, size_t err_size)
{
    long n = 0;
    const char *param = ctx ? attn_param_get(ctx, "threads") : NULL;
    if (param && parse_int(param, 0, CPU_REF_MAX_THREADS, &n) != 0) {
        set_error(err, err_size, "cpu-ref: [params] threads = \"%s\" is not an integer in 0..%d",
                  param, CPU_REF_MAX_THREADS);
        return -1;
    }
    *threads = n > 0 ? (int)n : online_cpus();
    return 0;
}

static int cpu_has_avx2_fma_f16c(void)
{
#if defined(CPU_REF_HAVE_AVX2_KERNELS) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    /* F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
     * does not know "f16c". */
    unsigned eax, ebx, ecx, edx;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __get_cpuid(1, &eax, &ebx, &ecx, &edx) && ((ecx >> 29) & 1u);
#else
    return 0;
#endif
}

/* Kernels: [params] kernel = auto (default) | generic | avx2. */
static const cpu_ref_kernels *choose_kernels(const attn_plugin_context *ctx, char *err,
                                             size_t err_size)
{
    const char *want = ctx ? attn_param_get(ctx, "kernel") : NULL;
    if (!want || !*want || strcmp(want, "auto") == 0) {
#ifdef CPU_REF_HAVE_AVX2_KERNELS
        if (cpu_has_avx2_fma_f16c())
            return &cpu_ref_kernels_avx2;
#endif
        return &cpu_ref_kernels_generic;
    }
    if (strcmp(want, "generic") == 0)
        return &cpu_ref_kernels_generic;
    if (strcmp(want, "avx2") == 0) {
#ifdef CPU_REF_HAVE_AVX2_KERNELS
        if (cpu_has_avx2_fma_f16c())
            return &cpu_ref_kernels_avx2;
#endif
        set_error(err, err_size,
                  "cpu-ref: [params] kernel = avx2, but this CPU (or build) has "
                  "no AVX2+FMA+F16C");
        return NULL;
    }
    set_error(err, err_size, "cpu-ref: [params] kernel = \"%s\" is not auto, generic or avx2",
              want);
    return NULL;
}

static attn_status cpu_ref_create(const attn_plugin_context *ctx, const attn_shape *shape,
                                  void **out_backend, char *err, size_t err_size)
{
    if (!shape || !out_backend) {
        set_error(err, err_size, "cpu-ref: shape and backend must not be NULL");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    *out_backend = NULL;
    /* Validate like a real constructor: every predicate must accept. */
    for (size_t i = 0; i < CPU_REF_NUM_PREDICATES; i++) {
        attn_verdict v;
        memset(&v, 0, sizeof v);
        v.struct_size = sizeof v;
        if (!cpu_ref_predicates[i].check(ctx, shape, &v)) {
            set_error(err, err_size, "%s", v.message);
            return ATTN_ERR_CREATE_FAILED;
        }
    }
    int threads;
    if (choose_threads(ctx, &threads, err, err_size) != 0)
        return ATTN_ERR_CREATE_FAILED;
    const cpu_ref_kernels *kernels = choose_kernels(ctx, err, err_size);
    if (!kernels)
        return ATTN_ERR_CREATE_FAILED;

    cpu_ref_backend *b = calloc(1, sizeof *b);
    if (!b) {
        set_error(err, err_size, "cpu-ref: out of memory");
        return ATTN_ERR_NO_MEMORY;
    }
    /* Fields past an older host's struct_size read as 0 (return_lse off). */
    memcpy(&b->shape, shape,
           sizeof b->shape < shape->struct_size ? sizeof b->shape : shape->struct_size);
    b->shape.struct_size = sizeof b->shape;
    b->num_kv_heads = attn_shape_kv_heads(shape);
    b->head_dim_v = attn_shape_head_dim_v(shape);
    b->geometry = cpu_ref_plan_geometry(shape->num_q_heads, b->num_kv_heads, shape->max_q_len);
    b->scratch_bytes =
        cpu_ref_scratch_plan(shape->head_dim, b->head_dim_v, b->geometry.rows_max).total;
    b->partial_bytes = cpu_ref_partial_floats(b->head_dim_v, b->geometry.rows_max) * sizeof(float);
    b->num_threads = threads;
    b->kernels = kernels;
    int rc = cpu_ref_pool_init(&b->pool, threads);
    if (rc != 0) {
        set_error(err, err_size, "cpu-ref: could not start %d threads: %s", threads, strerror(rc));
        free(b);
        return ATTN_ERR_CREATE_FAILED;
    }
    *out_backend = b;
    return ATTN_OK;
}

static void cpu_ref_destroy(void *backend)
{
    cpu_ref_backend *b = backend;
    if (!b)
        return;
    cpu_ref_pool_destroy(&b->pool);
    free(b);
}

/* ---- workspace ---------------------------------------------------------- */

/* Bytes of workspace for a batch of `num_seqs` sequences whose forward uses
 * `split_slots` split partials. Monotonic in both, so the size answered for
 * the batch limits covers every batch within them. */
static size_t workspace_bytes(const cpu_ref_backend *b, int64_t num_seqs, int64_t split_slots)
{
    size_t bytes = CPU_REF_ALIGN; /* room to align the host's pointer */
    bytes += cpu_ref_align_up((size_t)(num_seqs + 1) * sizeof(int64_t), CPU_REF_ALIGN);
    bytes += (size_t)b->num_threads * b->scratch_bytes;
    bytes += cpu_ref_align_up((size_t)split_slots * b->partial_bytes, CPU_REF_ALIGN);
    return bytes;
}

/* Splits are used only when a batch has fewer than CPU_REF_TARGET_ITEMS base
 * items, and then (base items x splits) < 2 x CPU_REF_TARGET_ITEMS; they
 * need more than CPU_REF_MIN_CHUNK keys to happen at all. */
static int64_t max_split_slots(const cpu_ref_backend *b)
{
    if (b->shape.max_kv_len <= CPU_REF_MIN_CHUNK)
        return 0;
    return 2 * CPU_REF_TARGET_ITEMS - 1;
}

static attn_status cpu_ref_workspace_size(void *backend, const attn_batch_limits *limits,
                                          size_t *bytes)
{
    cpu_ref_backend *b = backend;
    if (!b || !limits || !bytes ||
        limits->struct_size < offsetof(attn_batch_limits, max_num_tokens) + sizeof(int32_t))
        return ATTN_ERR_INVALID_ARGUMENT;
    if (limits->max_num_seqs < 0 || limits->max_num_tokens < 0)
        return ATTN_ERR_INVALID_ARGUMENT;
    *bytes = workspace_bytes(b, limits->max_num_seqs, max_split_slots(b));
    return ATTN_OK;
}

/* ---- forward ------------------------------------------------------------ */

typedef struct cpu_ref_run {
    const cpu_ref_problem *problem;
    const cpu_ref_kernels *kernels;
} cpu_ref_run;

static void run_attend(void *arg, int64_t work, int worker)
{
    const cpu_ref_run *run = arg;
    const cpu_ref_problem *p = run->problem;
    run->kernels->attend(p, work, p->scratch + (size_t)worker * p->scratch_stride);
}

static void run_combine(void *arg, int64_t base_item, int worker)
{
    (void)worker;
    const cpu_ref_run *run = arg;
    run->kernels->combine(run->problem, base_item);
}

#define FAIL(status, ...)                                                                          \
    do {                                                                                           \
        set_error(err, err_size, __VA_ARGS__);                                                     \
        return status;                                                                             \
    } while (0)

/* Checks everything forward will read against the shape the object was made
 * for; the first problem is reported, naming the sequence or field. */
static attn_status validate_args(const cpu_ref_backend *b, const attn_forward_args *a, char *err,
                                 size_t err_size)
{
    const attn_shape *s = &b->shape;
    if (a->struct_size < CPU_REF_ARGS_MIN_SIZE)
        FAIL(ATTN_ERR_INVALID_ARGUMENT,
             "cpu-ref: args.struct_size %u is smaller than the %zu "
             "bytes of the 1.0 layout",
             (unsigned)a->struct_size, (size_t)CPU_REF_ARGS_MIN_SIZE);
    if (a->num_seqs < 0 || a->num_tokens < 0)
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: num_seqs (%d) and num_tokens (%d) must be >= 0",
             (int)a->num_seqs, (int)a->num_tokens);
    if (a->num_seqs == 0)
        return ATTN_OK;
    if (!a->cu_seqlens_q || !a->seqused_k)
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: cu_seqlens_q and seqused_k must not be NULL");
    if (a->max_seqlen_q > s->max_q_len)
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: max_seqlen_q %d exceeds the shape's max_q_len %d",
             (int)a->max_seqlen_q, (int)s->max_q_len);
    if (a->max_seqlen_k > s->max_kv_len)
        FAIL(ATTN_ERR_INVALID_ARGUMENT,
             "cpu-ref: max_seqlen_k %d exceeds the shape's max_kv_len %d", (int)a->max_seqlen_k,
             (int)s->max_kv_len);
    if (a->num_tokens > 0 && (!a->q || !a->out))
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: q and out must not be NULL");
    if (!isfinite(a->scale))
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: scale %g is not finite", (double)a->scale);
    if (attn_conv_dtype_is_fp8(s->kv_dtype) && (!isfinite(a->k_descale) || !isfinite(a->v_descale)))
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: k_descale (%g) and v_descale (%g) must be finite",
             (double)a->k_descale, (double)a->v_descale);
    if (attn_conv_dtype_is_fp8(s->compute_dtype) &&
        (!isfinite(a->q_descale) || a->q_descale == 0.0f))
        FAIL(ATTN_ERR_INVALID_ARGUMENT,
             "cpu-ref: q_descale %g must be finite and non-zero for %s compute",
             (double)a->q_descale, attn_dtype_spelling(s->compute_dtype));
    if (s->has_sinks && !a->sinks)
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: the shape has sinks but args.sinks is NULL");
    const int have_lse =
        a->struct_size >= offsetof(attn_forward_args, lse_stride_head) + sizeof(int64_t);
    if (s->return_lse && (!have_lse || !a->lse) && a->num_tokens > 0)
        FAIL(ATTN_ERR_INVALID_ARGUMENT,
             "cpu-ref: the shape asks for the log-sum-exp (return_lse) but args.lse is NULL");
    if (have_lse && !s->return_lse && a->lse)
        FAIL(ATTN_ERR_INVALID_ARGUMENT,
             "cpu-ref: args.lse is set but the backend was created for a shape without "
             "return_lse");
    if (have_lse && (a->lse_stride_token < 0 || a->lse_stride_head < 0))
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: lse strides (%lld, %lld) must be >= 0",
             (long long)a->lse_stride_token, (long long)a->lse_stride_head);
    if (!s->has_sinks && a->sinks)
        FAIL(ATTN_ERR_INVALID_ARGUMENT,
             "cpu-ref: args.sinks is set but the backend was created for a shape without sinks");
    if (a->block_table_stride < 0 || a->num_blocks < 0)
        FAIL(ATTN_ERR_INVALID_ARGUMENT,
             "cpu-ref: block_table_stride (%d) and num_blocks (%d) must be >= 0",
             (int)a->block_table_stride, (int)a->num_blocks);
    /* The per-sequence lengths against each other and the maxima (shared
     * with the CLI's run path): Q > K for a sequence under causal masking or
     * a window is an error, never rows of zeros. */
    attn_status st = attn_batch_check_seqlens("cpu-ref: ", a->cu_seqlens_q, a->seqused_k,
                                              a->num_seqs, a->num_tokens, attn_batch_positional(s),
                                              a->max_seqlen_q, a->max_seqlen_k, err, err_size);
    if (st != ATTN_OK)
        return st;
    int needs_cache = 0;
    for (int32_t i = 0; i < a->num_seqs; i++) {
        /* 64-bit: an int32 difference wraps (2147483584 - -2147483648 is a
         * small positive number) and a decreasing array would pass. */
        int64_t q_len = (int64_t)a->cu_seqlens_q[i + 1] - a->cu_seqlens_q[i];
        int32_t kv_len = a->seqused_k[i];
        if (q_len == 0 || kv_len == 0)
            continue;
        int64_t pages = ((int64_t)kv_len + s->page_size - 1) / s->page_size;
        if (pages > a->block_table_stride)
            FAIL(ATTN_ERR_INVALID_ARGUMENT,
                 "cpu-ref: sequence %d needs %lld pages for %d keys, but block_table_stride is %d",
                 (int)i, (long long)pages, (int)kv_len, (int)a->block_table_stride);
        if (!a->block_table)
            FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: block_table is NULL");
        const int32_t *row = a->block_table + (size_t)i * (size_t)a->block_table_stride;
        for (int64_t pg = 0; pg < pages; pg++) {
            if (row[pg] < 0 || row[pg] >= a->num_blocks)
                FAIL(ATTN_ERR_INVALID_ARGUMENT,
                     "cpu-ref: block_table[%d][%lld] = %d is outside 0..num_blocks-1 (%d blocks)",
                     (int)i, (long long)pg, (int)row[pg], (int)a->num_blocks);
        }
        needs_cache = 1;
    }
    if (a->struct_size >= offsetof(attn_forward_args, v_stride_head) + sizeof(int64_t) &&
        (a->k_stride_block < 0 || a->k_stride_token < 0 || a->k_stride_head < 0 ||
         a->v_stride_block < 0 || a->v_stride_token < 0 || a->v_stride_head < 0))
        FAIL(ATTN_ERR_INVALID_ARGUMENT,
             "cpu-ref: K/V strides must be >= 0 (0 = contiguous), got k (%lld, %lld, %lld) v "
             "(%lld, %lld, %lld)",
             (long long)a->k_stride_block, (long long)a->k_stride_token,
             (long long)a->k_stride_head, (long long)a->v_stride_block,
             (long long)a->v_stride_token, (long long)a->v_stride_head);
    if (needs_cache && (!a->k_cache || !a->v_cache))
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: k_cache and v_cache must not be NULL");
    return ATTN_OK;
}

static attn_status cpu_ref_forward(void *backend, const attn_forward_args *a, char *err,
                                   size_t err_size)
{
    cpu_ref_backend *b = backend;
    if (!b || !a)
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: backend and args must not be NULL");
    attn_status st = validate_args(b, a, err, err_size);
    if (st != ATTN_OK || a->num_seqs == 0)
        return st;
    const attn_shape *s = &b->shape;

    cpu_ref_problem p;
    memset(&p, 0, sizeof p);
    p.q_dtype = s->q_dtype;
    p.kv_dtype = s->kv_dtype;
    p.out_dtype = s->out_dtype;
    p.q_quant_dtype = attn_conv_dtype_is_fp8(s->compute_dtype) ? s->compute_dtype : 0;
    p.num_q_heads = s->num_q_heads;
    p.num_kv_heads = b->num_kv_heads;
    p.group = s->num_q_heads / b->num_kv_heads;
    p.head_dim = s->head_dim;
    p.head_dim_v = b->head_dim_v;
    p.head_dim_v_padded = cpu_ref_round_lanes(b->head_dim_v);
    p.page_size = s->page_size;
    p.causal = s->causal;
    p.window_left = s->window_left;
    p.window_right = s->window_right;
    p.softcap = s->softcap;
    p.sinks = s->has_sinks ? a->sinks : NULL;
    /* Descales only mean something for FP8 data (vLLM's convention): a
     * bf16/f16/f32 cache ignores k/v_descale, non-FP8 compute ignores
     * q_descale. */
    int fp8_kv = attn_conv_dtype_is_fp8(s->kv_dtype);
    p.score_scale =
        a->scale * (fp8_kv ? a->k_descale : 1.0f) * (p.q_quant_dtype ? a->q_descale : 1.0f);
    p.q_descale = p.q_quant_dtype ? a->q_descale : 1.0f;
    p.v_scale = fp8_kv ? a->v_descale : 1.0f;
    p.q = a->q;
    p.q_stride_token = a->q_stride_token;
    p.q_stride_head = a->q_stride_head;
    /* K/V strides (args 0.4): 0 is the contiguous layout's; an older host's
     * args end before them and read as 0 too. */
    const int64_t hkv = b->num_kv_heads, page = s->page_size;
    const int have_strides =
        a->struct_size >= offsetof(attn_forward_args, v_stride_head) + sizeof(int64_t);
    const int64_t ks[3] = {have_strides ? a->k_stride_block : 0,
                           have_strides ? a->k_stride_token : 0,
                           have_strides ? a->k_stride_head : 0};
    const int64_t vs[3] = {have_strides ? a->v_stride_block : 0,
                           have_strides ? a->v_stride_token : 0,
                           have_strides ? a->v_stride_head : 0};
    const int64_t d = s->head_dim, dv = b->head_dim_v;
    p.k_cache = (cpu_ref_cache){a->k_cache, ks[0] ? ks[0] : page * hkv * d, ks[1] ? ks[1] : hkv * d,
                                ks[2] ? ks[2] : d};
    p.v_cache = (cpu_ref_cache){a->v_cache, vs[0] ? vs[0] : page * hkv * dv,
                                vs[1] ? vs[1] : hkv * dv, vs[2] ? vs[2] : dv};
    p.block_table = a->block_table;
    p.block_table_stride = a->block_table_stride;
    p.cu_seqlens_q = a->cu_seqlens_q;
    p.seqused_k = a->seqused_k;
    p.out = a->out;
    p.out_stride_token = a->out_stride_token;
    p.out_stride_head = a->out_stride_head;
    if (s->return_lse) { /* validate_args made sure the array is there */
        p.lse = a->lse;
        p.lse_stride_token = a->lse_stride_token ? a->lse_stride_token : s->num_q_heads;
        p.lse_stride_head = a->lse_stride_head ? a->lse_stride_head : 1;
    }
    p.num_seqs = a->num_seqs;
    p.heads_per_item = b->geometry.heads_per_item;
    p.head_groups = b->geometry.head_groups;
    p.tokens_per_item = b->geometry.tokens_per_item;
    p.kv_heads_per_item = b->geometry.kv_heads_per_item;
    p.kv_groups = b->geometry.kv_groups;
    p.rows_max = b->geometry.rows_max;

    /* Count base items per sequence, and decide the splits from the batch
     * alone (not the thread count), so results do not depend on threads. */
    int64_t base_items = 0;
    int32_t longest_kv = 0;
    for (int32_t i = 0; i < a->num_seqs; i++) {
        int32_t q_len = a->cu_seqlens_q[i + 1] - a->cu_seqlens_q[i];
        base_items += cpu_ref_items_per_seq(&p, q_len);
        if (q_len > 0 && a->seqused_k[i] > longest_kv)
            longest_kv = a->seqused_k[i];
    }
    int32_t splits = 1;
    if (base_items > 0 && base_items < CPU_REF_TARGET_ITEMS && longest_kv > CPU_REF_MIN_CHUNK) {
        int64_t want = (CPU_REF_TARGET_ITEMS + base_items - 1) / base_items;
        int64_t by_length = ((int64_t)longest_kv + CPU_REF_MIN_CHUNK - 1) / CPU_REF_MIN_CHUNK;
        if (want > by_length)
            want = by_length;
        if (want > CPU_REF_MAX_SPLITS)
            want = CPU_REF_MAX_SPLITS;
        splits = (int32_t)(want < 1 ? 1 : want);
    }
    int64_t split_slots = splits > 1 ? base_items * splits : 0;

    size_t needed = workspace_bytes(b, a->num_seqs, split_slots);
    if (!a->workspace || a->workspace_size < needed)
        FAIL(ATTN_ERR_WORKSPACE_TOO_SMALL,
             "cpu-ref: this batch needs %zu bytes of workspace, got %zu%s", needed,
             a->workspace ? a->workspace_size : (size_t)0, a->workspace ? "" : " (NULL)");
    if (base_items == 0)
        return ATTN_OK;

    /* Carve the workspace: item offsets, per-thread scratch, split partials. */
    char *at = (char *)cpu_ref_align_up((size_t)(uintptr_t)a->workspace, CPU_REF_ALIGN);
    int64_t *item_start = (int64_t *)at;
    at += cpu_ref_align_up((size_t)(a->num_seqs + 1) * sizeof(int64_t), CPU_REF_ALIGN);
    item_start[0] = 0;
    for (int32_t i = 0; i < a->num_seqs; i++) {
        int32_t q_len = a->cu_seqlens_q[i + 1] - a->cu_seqlens_q[i];
        item_start[i + 1] = item_start[i] + cpu_ref_items_per_seq(&p, q_len);
    }
    p.item_start = item_start;
    p.num_base_items = base_items;
    p.splits = splits;
    p.scratch = at;
    p.scratch_stride = b->scratch_bytes;
    at += (size_t)b->num_threads * b->scratch_bytes;
    p.partials = splits > 1 ? (float *)at : NULL;

    cpu_ref_run run = {&p, b->kernels};
    cpu_ref_pool_run(&b->pool, run_attend, &run, base_items * splits);
    if (splits > 1)
        cpu_ref_pool_run(&b->pool, run_combine, &run, base_items);
    return ATTN_OK;
}

/* ---- KV append ------------------------------------------------------------ */

/* Writes each new token's K and V rows into its cache slot in kv_dtype
 * (attn_append_args): what vLLM's reshape_and_cache_flash does, on the CPU.
 * Every slot is checked before anything is written, so a bad slot leaves
 * the cache as it was. */
static attn_status cpu_ref_append_kv(void *backend, const attn_append_args *a, char *err,
                                     size_t err_size)
{
    const cpu_ref_backend *b = backend;
    if (!b || !a || a->struct_size < offsetof(attn_append_args, stream) + sizeof(void *))
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: append args missing or older than 0.4");
    const attn_shape *s = &b->shape;
    int32_t src;
    attn_status st = attn_append_check("cpu-ref", s, a, &src, err, err_size);
    if (st != ATTN_OK)
        return st;
    const int fp8 = attn_conv_dtype_is_fp8(s->kv_dtype);
    if (a->num_tokens > 0 && (!a->k || !a->v || !a->slot_mapping || !a->k_cache || !a->v_cache))
        FAIL(ATTN_ERR_INVALID_ARGUMENT,
             "cpu-ref: append needs k, v, slot_mapping, k_cache and v_cache");
    const int64_t slots = (int64_t)a->num_blocks * s->page_size;
    for (int32_t t = 0; t < a->num_tokens; t++)
        if (a->slot_mapping[t] >= slots)
            FAIL(ATTN_ERR_INVALID_ARGUMENT,
                 "cpu-ref: slot_mapping[%d] = %lld is past the cache (%d blocks of %d = %lld "
                 "slots)",
                 (int)t, (long long)a->slot_mapping[t], (int)a->num_blocks, (int)s->page_size,
                 (long long)slots);
    const int64_t hkv = b->num_kv_heads, page = s->page_size;
    const int64_t dims[2] = {s->head_dim, b->head_dim_v};
    const void *rows[2] = {a->k, a->v};
    void *caches[2] = {a->k_cache, a->v_cache};
    const int64_t row_st[2][2] = {{a->k_stride_token, a->k_stride_head},
                                  {a->v_stride_token, a->v_stride_head}};
    const int64_t cache_st[2][3] = {
        {a->k_cache_stride_block, a->k_cache_stride_token, a->k_cache_stride_head},
        {a->v_cache_stride_block, a->v_cache_stride_token, a->v_cache_stride_head}};
    const float scales[2] = {a->k_scale, a->v_scale};
    for (int kv = 0; kv < 2; kv++) {
        const int64_t d = dims[kv];
        const int64_t rt = row_st[kv][0] ? row_st[kv][0] : hkv * d,
                      rh = row_st[kv][1] ? row_st[kv][1] : d;
        const int64_t cb = cache_st[kv][0] ? cache_st[kv][0] : page * hkv * d;
        const int64_t ct = cache_st[kv][1] ? cache_st[kv][1] : hkv * d;
        const int64_t ch = cache_st[kv][2] ? cache_st[kv][2] : d;
        for (int32_t t = 0; t < a->num_tokens; t++) {
            const int64_t slot = a->slot_mapping[t];
            if (slot < 0)
                continue; /* padding */
            const int64_t base = slot / page * cb + slot % page * ct;
            for (int64_t h = 0; h < hkv; h++)
                for (int64_t i = 0; i < d; i++) {
                    /* fp8: x / scale in float, as vLLM's quantiser divides */
                    float x = attn_conv_load_f32(src, rows[kv], t * rt + h * rh + i);
                    attn_conv_store_f32(s->kv_dtype, caches[kv], base + h * ch + i,
                                        fp8 ? x / scales[kv] : x);
                }
        }
    }
    return ATTN_OK;
}

/* ---- merging states ------------------------------------------------------- */

/* The host's CPU merge (attn_merge_cpu.h, the code attn_merge_states runs):
 * cpu-ref's memory space is host memory. The host has checked the arguments
 * (attn_backend_merge_states); stream is not used. */
static attn_status cpu_ref_merge_states(void *backend, const attn_merge_args *m, char *err,
                                        size_t err_size)
{
    (void)backend; /* the merge needs nothing of the shape */
    if (!m || m->struct_size < offsetof(attn_merge_args, stream) + sizeof(void *))
        FAIL(ATTN_ERR_INVALID_ARGUMENT, "cpu-ref: merge args missing or older than 0.5");
    attn_merge_cpu(m);
    return ATTN_OK;
}

static const char *const cpu_ref_built_archs[] = {"cpu", NULL};

ATTN_PLUGIN_DEFINE(.name = "cpu-ref", .version = "1.0.0", .graph_capturable = 0,
                   .description = "reference attention on the CPU (float accumulation, all "
                                  "dtypes and masks; pthreads)",
                   .built_archs = cpu_ref_built_archs, .predicates = cpu_ref_predicates,
                   .num_predicates = CPU_REF_NUM_PREDICATES, .create = cpu_ref_create,
                   .workspace_size = cpu_ref_workspace_size, .forward = cpu_ref_forward,
                   .destroy = cpu_ref_destroy, .probe_devices = cpu_ref_probe,
                   .forward_features = ATTN_FORWARD_KV_STRIDES | ATTN_FORWARD_LSE,
                   .append_kv = cpu_ref_append_kv, .merge_states = cpu_ref_merge_states)
