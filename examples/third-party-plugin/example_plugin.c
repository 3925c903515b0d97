/* SPDX-License-Identifier: Apache-2.0 */
/*
 * example_plugin.c — "example-cpu-naive", an attention backend as an outside
 * vendor would write it: built from include/attn_plugin.h (and the
 * attn_types.h it includes) alone, without attnreg's sources, without linking
 * libattnreg and without attnreg's private plugin helpers.
 *
 * What it runs: paged attention on host memory, one query row at a time, in
 * f32 only, for MHA shapes (as many KV heads as query heads) with head sizes
 * up to 128, causal or not, without sliding window, softcap or sinks. Every
 * limit is stated by a predicate, so the registry never hands it a shape it
 * cannot run, and `attnreg explain` says why it declined the others.
 *
 * Semantics (attnreg's, shared by every backend): for a sequence with Q new
 * tokens and K keys (the new tokens included), query i sits at position
 * K - Q + i and, with causal masking, sees key j iff j <= K - Q + i. A row
 * that sees no key is written as zeros.
 */
/* sysconf() is POSIX, not C11: ask for it before any header is included. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attn_plugin.h"

#define EXAMPLE_NAME "example-cpu-naive"

/* The widest K or V row this backend accepts. It bounds the per-row value
 * accumulator, which then lives on the stack: forward allocates nothing, as
 * the plugin ABI asks. */
#define EXAMPLE_MAX_HEAD_DIM 128

/* ---- capability predicates ---------------------------------------------
 * A predicate accepts with attn_accept() or rejects with attn_reject(), a
 * reason code and one sentence that names the offending value and what would
 * be accepted. The registry runs them in the order of example_predicates[]
 * and reports the first rejection. */

static int example_check_arch(const attn_plugin_context *ctx, const attn_shape *shape,
                              attn_verdict *verdict)
{
    (void)ctx;
    if (strncmp(shape->arch, "cpu", ATTN_ARCH_MAX) == 0)
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_ARCH, "arch %.*s not in {cpu}", ATTN_ARCH_MAX - 1,
                       shape->arch);
}

/* One predicate may answer with several reason codes: each dtype field has
 * its own, so a tool can tell which one was wrong. */
static int example_check_dtypes(const attn_plugin_context *ctx, const attn_shape *shape,
                                attn_verdict *verdict)
{
    (void)ctx;
    if (shape->q_dtype != ATTN_DTYPE_F32)
        return attn_reject(verdict, ATTN_REASON_Q_DTYPE, "q_dtype %s not in {f32}",
                           attn_dtype_spelling(shape->q_dtype));
    if (shape->kv_dtype != ATTN_DTYPE_F32)
        return attn_reject(verdict, ATTN_REASON_KV_DTYPE, "kv_dtype %s not in {f32}",
                           attn_dtype_spelling(shape->kv_dtype));
    if (shape->compute_dtype != ATTN_DTYPE_F32)
        return attn_reject(verdict, ATTN_REASON_COMPUTE_DTYPE, "compute_dtype %s not in {f32}",
                           attn_dtype_spelling(shape->compute_dtype));
    if (shape->out_dtype != ATTN_DTYPE_F32)
        return attn_reject(verdict, ATTN_REASON_OUT_DTYPE, "out_dtype %s not in {f32}",
                           attn_dtype_spelling(shape->out_dtype));
    return attn_accept(verdict);
}

/* Query head h reads KV head h: no grouping. attn_shape_kv_heads() resolves
 * "num_kv_heads 0 = same as num_q_heads". */
static int example_check_mha(const attn_plugin_context *ctx, const attn_shape *shape,
                             attn_verdict *verdict)
{
    (void)ctx;
    if (attn_shape_kv_heads(shape) == shape->num_q_heads)
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_GQA_RATIO,
                       "num_kv_heads (%d) != num_q_heads (%d): only MHA is supported",
                       (int)attn_shape_kv_heads(shape), (int)shape->num_q_heads);
}

static int example_check_head_dims(const attn_plugin_context *ctx, const attn_shape *shape,
                                   attn_verdict *verdict)
{
    int32_t head_dim_v = attn_shape_head_dim_v(shape);
    (void)ctx;
    if (shape->head_dim < 1 || shape->head_dim > EXAMPLE_MAX_HEAD_DIM)
        return attn_reject(verdict, ATTN_REASON_HEAD_DIM, "head_dim %d not in [1, %d]",
                           (int)shape->head_dim, EXAMPLE_MAX_HEAD_DIM);
    if (head_dim_v < 1 || head_dim_v > EXAMPLE_MAX_HEAD_DIM)
        return attn_reject(verdict, ATTN_REASON_HEAD_DIM_V, "head_dim_v %d not in [1, %d]",
                           (int)head_dim_v, EXAMPLE_MAX_HEAD_DIM);
    return attn_accept(verdict);
}

/* Causal and non-causal masking are both implemented; these three are not. */
static int example_check_features(const attn_plugin_context *ctx, const attn_shape *shape,
                                  attn_verdict *verdict)
{
    (void)ctx;
    if (shape->window_left != -1 || shape->window_right != -1)
        return attn_reject(verdict, ATTN_REASON_WINDOW,
                           "sliding window (window_left %d, window_right %d) not supported: "
                           "both must be -1",
                           (int)shape->window_left, (int)shape->window_right);
    if (shape->softcap != 0.0f)
        return attn_reject(verdict, ATTN_REASON_SOFTCAP, "softcap %g not in {0}",
                           (double)shape->softcap);
    if (shape->has_sinks)
        return attn_reject(verdict, ATTN_REASON_SINKS, "has_sinks %d not in {0}",
                           (int)shape->has_sinks);
    return attn_accept(verdict);
}

static const attn_predicate example_predicates[] = {
    {"arch", example_check_arch},         {"dtypes", example_check_dtypes},
    {"mha", example_check_mha},           {"head_dims", example_check_head_dims},
    {"features", example_check_features},
};
#define EXAMPLE_NUM_PREDICATES (sizeof example_predicates / sizeof example_predicates[0])

/* ---- backend object ------------------------------------------------------ */

typedef struct example_backend {
    attn_shape shape; /* the shape it was built for: the limits forward checks */
} example_backend;

static void example_set_error(char *err, size_t err_size, const char *sentence)
{
    if (err && err_size)
        snprintf(err, err_size, "%s", sentence);
}

/* A real constructor does not trust its caller: it checks the shape with the
 * same predicates the registry ran, so the plugin is safe to use directly. */
static attn_status example_create(const attn_plugin_context *ctx, const attn_shape *shape,
                                  void **backend, char *err, size_t err_size)
{
    example_backend *self;
    size_t i;

    if (!backend || !shape || shape->struct_size < sizeof(attn_shape)) {
        example_set_error(err, err_size, EXAMPLE_NAME ": create needs a full attn_shape");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    *backend = NULL;
    for (i = 0; i < EXAMPLE_NUM_PREDICATES; i++) {
        attn_verdict verdict;
        memset(&verdict, 0, sizeof verdict);
        verdict.struct_size = sizeof verdict;
        if (!example_predicates[i].check(ctx, shape, &verdict)) {
            if (err && err_size)
                snprintf(err, err_size, EXAMPLE_NAME ": %s", verdict.message);
            return ATTN_ERR_CREATE_FAILED;
        }
    }
    self = malloc(sizeof *self);
    if (!self) {
        example_set_error(err, err_size, EXAMPLE_NAME ": out of memory");
        return ATTN_ERR_NO_MEMORY;
    }
    self->shape = *shape;
    *backend = self;
    return ATTN_OK;
}

/* forward keeps its running state on the stack, so it needs no scratch. */
static attn_status example_workspace_size(void *backend, const attn_batch_limits *limits,
                                          size_t *bytes)
{
    (void)limits;
    if (!backend || !bytes)
        return ATTN_ERR_INVALID_ARGUMENT;
    *bytes = 0;
    return ATTN_OK;
}

static void example_destroy(void *backend)
{
    free(backend);
}

/* ---- forward ------------------------------------------------------------ */

/* The fields of attn_forward_args this backend reads end with out_stride_head;
 * a caller built against an older, shorter struct must still cover them. */
#define EXAMPLE_ARGS_MIN_SIZE (offsetof(attn_forward_args, out_stride_head) + sizeof(int64_t))

/* Checks the batch against the shape the backend was built for and against
 * the tensors' own extents, so a bad index is an error, never a stray read. */
static attn_status example_check_args(const example_backend *self, const attn_forward_args *args,
                                      char *err, size_t err_size)
{
    const attn_shape *shape = &self->shape;
    int32_t s;

    if (!args || args->struct_size < EXAMPLE_ARGS_MIN_SIZE) {
        example_set_error(err, err_size, EXAMPLE_NAME ": forward needs attn_forward_args");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    if (args->num_seqs < 0 || args->num_tokens < 0 || !args->cu_seqlens_q ||
        (args->num_seqs > 0 && !args->seqused_k)) {
        example_set_error(err, err_size,
                          EXAMPLE_NAME ": num_seqs, num_tokens, cu_seqlens_q or seqused_k "
                                       "missing or negative");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    if (args->num_tokens > 0 &&
        (!args->q || !args->out || !args->k_cache || !args->v_cache || !args->block_table)) {
        example_set_error(err, err_size, EXAMPLE_NAME ": a tensor pointer is NULL");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    if (args->cu_seqlens_q[0] != 0 || args->cu_seqlens_q[args->num_seqs] != args->num_tokens) {
        if (err && err_size)
            snprintf(err, err_size,
                     EXAMPLE_NAME ": cu_seqlens_q must run from 0 to num_tokens (%d)",
                     (int)args->num_tokens);
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    for (s = 0; s < args->num_seqs; s++) {
        int32_t q_len = args->cu_seqlens_q[s + 1] - args->cu_seqlens_q[s];
        int32_t kv_len = args->seqused_k[s];
        int64_t pages = ((int64_t)kv_len + shape->page_size - 1) / shape->page_size;
        int64_t p;
        if (q_len < 0 || q_len > shape->max_q_len || kv_len < 0 || kv_len > shape->max_kv_len ||
            pages > args->block_table_stride) {
            if (err && err_size)
                snprintf(err, err_size,
                         EXAMPLE_NAME ": sequence %d has q_len %d (max %d) and kv_len %d (max "
                                      "%d, %d pages of block table)",
                         (int)s, (int)q_len, (int)shape->max_q_len, (int)kv_len,
                         (int)shape->max_kv_len, (int)args->block_table_stride);
            return ATTN_ERR_INVALID_ARGUMENT;
        }
        if (q_len == 0)
            continue; /* no row to write, so its blocks are never read */
        for (p = 0; p < pages; p++) {
            int32_t block = args->block_table[(int64_t)s * args->block_table_stride + p];
            if (block < 0 || block >= args->num_blocks) {
                if (err && err_size)
                    snprintf(err, err_size,
                             EXAMPLE_NAME ": sequence %d page %d names block %d of %d", (int)s,
                             (int)p, (int)block, (int)args->num_blocks);
                return ATTN_ERR_INVALID_ARGUMENT;
            }
        }
    }
    return ATTN_OK;
}

/* Address of key (or value) row `key` of `head` in a cache laid out
 * [num_blocks, page_size, num_heads, row_width]. */
static const float *example_cache_row(const float *cache, const attn_forward_args *args,
                                      const attn_shape *shape, int32_t seq, int32_t key,
                                      int32_t head, int32_t row_width)
{
    int32_t block =
        args->block_table[(int64_t)seq * args->block_table_stride + key / shape->page_size];
    int64_t slot = (int64_t)block * shape->page_size + key % shape->page_size;
    return cache + (slot * attn_shape_kv_heads(shape) + head) * row_width;
}

static float example_dot(const float *a, const float *b, int32_t n)
{
    float sum = 0.0f;
    int32_t d;
    for (d = 0; d < n; d++)
        sum += a[d] * b[d];
    return sum;
}

/* One output row: a two-pass softmax over the visible keys (the maximum
 * first, so the exponentials cannot overflow), then the weighted sum of V. */
static void example_attend_row(const attn_forward_args *args, const attn_shape *shape, int32_t seq,
                               int32_t head, const float *q_row, int32_t visible_keys,
                               float *out_row)
{
    const int32_t head_dim = shape->head_dim;
    const int32_t head_dim_v = attn_shape_head_dim_v(shape);
    double accumulator[EXAMPLE_MAX_HEAD_DIM];
    double denominator = 0.0;
    float max_score = -INFINITY;
    int32_t j, d;

    if (visible_keys <= 0) {
        for (d = 0; d < head_dim_v; d++)
            out_row[d] = 0.0f;
        return;
    }
    for (j = 0; j < visible_keys; j++) {
        const float *k_row = example_cache_row(args->k_cache, args, shape, seq, j, head, head_dim);
        float score = args->scale * example_dot(q_row, k_row, head_dim);
        if (score > max_score)
            max_score = score;
    }
    for (d = 0; d < head_dim_v; d++)
        accumulator[d] = 0.0;
    for (j = 0; j < visible_keys; j++) {
        const float *k_row = example_cache_row(args->k_cache, args, shape, seq, j, head, head_dim);
        const float *v_row =
            example_cache_row(args->v_cache, args, shape, seq, j, head, head_dim_v);
        double weight =
            exp((double)(args->scale * example_dot(q_row, k_row, head_dim)) - (double)max_score);
        denominator += weight;
        for (d = 0; d < head_dim_v; d++)
            accumulator[d] += weight * v_row[d];
    }
    for (d = 0; d < head_dim_v; d++)
        out_row[d] = (float)(accumulator[d] / denominator);
}

static attn_status example_forward(void *backend, const attn_forward_args *args, char *err,
                                   size_t err_size)
{
    const example_backend *self = backend;
    const attn_shape *shape;
    attn_status status;
    int32_t s, i, h;

    if (!self) {
        example_set_error(err, err_size, EXAMPLE_NAME ": forward needs a backend");
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    status = example_check_args(self, args, err, err_size);
    if (status != ATTN_OK)
        return status;
    shape = &self->shape;

    for (s = 0; s < args->num_seqs; s++) {
        int32_t first_token = args->cu_seqlens_q[s];
        int32_t q_len = args->cu_seqlens_q[s + 1] - first_token;
        int32_t kv_len = args->seqused_k[s];
        for (i = 0; i < q_len; i++) {
            /* Keys 0..visible_keys-1 are seen: all of them without causal
             * masking, else those up to the query's own position K - Q + i. */
            int64_t position = (int64_t)kv_len - q_len + i;
            int32_t visible_keys =
                shape->causal ? (int32_t)(position + 1 < kv_len ? position + 1 : kv_len) : kv_len;
            int64_t token = first_token + i;
            for (h = 0; h < shape->num_q_heads; h++) {
                const float *q_row =
                    (const float *)args->q + token * args->q_stride_token + h * args->q_stride_head;
                float *out_row =
                    (float *)args->out + token * args->out_stride_token + h * args->out_stride_head;
                example_attend_row(args, shape, s, h, q_row, visible_keys, out_row);
            }
        }
    }
    return ATTN_OK;
}

/* ---- device probe (ABI 1.1) ----------------------------------------------
 * The registry constructs a backend only where a device of the arch is
 * present, and asks the plugin which devices it has. For a CPU backend that
 * is the host itself, which is always there. */
static attn_status example_probe_devices(const attn_plugin_context *ctx, attn_device_info *devices,
                                         uint32_t capacity, uint32_t *count, char *err,
                                         size_t err_size)
{
    attn_device_info *cpu;
    long online_cpus = -1, pages = -1, page_bytes = -1;
    (void)ctx;
    (void)err;
    (void)err_size;
    if (!count || (capacity && !devices))
        return ATTN_ERR_INVALID_ARGUMENT;
    *count = 1;
    if (capacity == 0)
        return ATTN_OK;
#ifdef _SC_NPROCESSORS_ONLN
    online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
#endif
#ifdef _SC_PHYS_PAGES
    pages = sysconf(_SC_PHYS_PAGES);
    page_bytes = sysconf(_SC_PAGESIZE);
#endif
    /* Fill only the fields this plugin knows, keeping the host's struct_size:
     * the host may know a longer attn_device_info than we do. */
    cpu = &devices[0];
    cpu->index = 0;
    snprintf(cpu->arch, sizeof cpu->arch, "cpu");
    snprintf(cpu->name, sizeof cpu->name, "host CPU");
    cpu->memory_bytes = pages > 0 && page_bytes > 0 ? (uint64_t)pages * (uint64_t)page_bytes : 0;
    cpu->compute_units = online_cpus > 0 ? (int32_t)online_cpus : 1;
    return ATTN_OK;
}

/* ---- the descriptor and the exported entry point --------------------------
 * ATTN_PLUGIN_DEFINE fills in struct_size and the ABI version this file was
 * compiled against, and defines attn_plugin_entry, the library's only
 * exported symbol (everything else is static, and the build hides the rest
 * with -fvisibility=hidden). built_archs lists "cpu": the library holds code
 * for the arch it accepts, so the registry may construct it. */
static const char *const example_built_archs[] = {"cpu", NULL};

ATTN_PLUGIN_DEFINE(.name = EXAMPLE_NAME, .version = "1.0.0",
                   .description = "naive f32 paged attention on the CPU (third-party example)",
                   .built_archs = example_built_archs, .predicates = example_predicates,
                   .num_predicates = (uint32_t)EXAMPLE_NUM_PREDICATES, .create = example_create,
                   .workspace_size = example_workspace_size, .forward = example_forward,
                   .destroy = example_destroy, .probe_devices = example_probe_devices)
