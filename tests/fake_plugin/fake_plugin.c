/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_plugin.c — one source for every fake backend the core tests load.
 *
 * tests/CMakeLists.txt compiles it into many MODULE libraries, each with its
 * own defines. Like a real third-party plugin it sees only attn_plugin.h and
 * never links libattnreg. Variants:
 *
 *   FAKE_NAME="x"            descriptor name (must match the INI's name)
 *   FAKE_ARCH="x"            the one arch the "arch" predicate accepts
 *   FAKE_BUILT_NONE          built_archs is empty ("built without kernels")
 *   FAKE_BUILT_OTHER         built_archs is {"fake2", "fake3"}, not FAKE_ARCH
 *   FAKE_NO_DEVICE           probe_devices reports no device
 *   FAKE_ABI_WRONG_MAJOR     hand-written descriptor claiming ABI major + 1
 *   FAKE_ABI_NEWER_MINOR     hand-written descriptor claiming the host's minor + 1
 *   FAKE_ABI_1_0             an ABI 1.0 plugin: struct_size stops before
 *                            probe_devices, abi_minor 0 (must be accepted)
 *   FAKE_ABI_1_2_PADDING     an ABI 1.2 plugin (struct_size 1.2's, abi_minor 2)
 *                            whose tail padding, where 1.3 put forward_features,
 *                            holds set bits: no promise, never read as one
 *   FAKE_ABI_1_3             an ABI 1.3 plugin (struct_size 1.3's: it ends at
 *                            append_kv, abi_minor 3) with a merge_states past
 *                            its struct_size that aborts if ever called
 *   FAKE_NULL_DESCRIPTOR     the entry symbol returns NULL
 *   FAKE_NO_ENTRY            exports a misspelled entry symbol only
 *   FAKE_CREATE_FAILS        create refuses with a sentence
 *   FAKE_INIT_FAILS          init logs through the host and fails
 *   FAKE_REJECT_REASON=r     an extra "reject" predicate rejects every shape
 *   FAKE_REJECT_MESSAGE="s"  ... with this sentence
 *
 * Behaviour that tests vary per INI comes from the [params] section, read by
 * the "params" predicate, so one library can play several roles:
 *
 *   reject_reason = N         reject every shape with reason code N ...
 *   reject_message = text     ... and this sentence
 *   fp8_mha_only = 1          reject FP8 compute unless num_q_heads == num_kv_heads
 *                             (reason FP8_COMPUTE_MHA_ONLY), like aiter-generic
 *   max_head_dim = N          reject head_dim > N (reason HEAD_DIM)
 *   reject_sinks = 1          reject has_sinks (reason SINKS)
 *   fini_marker = path        fini writes this file, so tests can see it ran
 *
 * The hand-written descriptors exist because ATTN_PLUGIN_DEFINE can only
 * emit a correct one; the faults under test need wrong ones.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_plugin.h"

#ifndef FAKE_NAME
#define FAKE_NAME "fake-good"
#endif
#ifndef FAKE_ARCH
#define FAKE_ARCH "fake"
#endif
#ifndef FAKE_REJECT_MESSAGE
#define FAKE_REJECT_MESSAGE FAKE_NAME " rejects every shape on purpose"
#endif
#define FAKE_VERSION "1.2.3"

/* Bytes of scratch space per query token that forward insists on, so tests
 * can check that workspace_size and forward reach the plugin. */
#define FAKE_WORKSPACE_PER_TOKEN 64

/* ctx->state is set to this by init; predicates check that the host kept
 * the context (and therefore the state) between calls. */
static int fake_state_token;

static const char *const fake_built_archs[] = {
#if defined(FAKE_BUILT_NONE)
    NULL
#elif defined(FAKE_BUILT_OTHER)
    "fake2", "fake3", NULL
#else
    FAKE_ARCH, NULL
#endif
};

static long param_long(const attn_plugin_context *ctx, const char *key, long dflt)
{
    const char *v = attn_param_get(ctx, key);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

static int is_fp8(int32_t dtype)
{
    return dtype == ATTN_DTYPE_FP8_E4M3FN || dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
}

static int fake_pred_arch(const attn_plugin_context *ctx, const attn_shape *shape, attn_verdict *v)
{
    (void)ctx;
    if (strncmp(shape->arch, FAKE_ARCH, sizeof shape->arch) != 0)
        return attn_reject(v, ATTN_REASON_ARCH, "%s runs only on %s, not %.32s", FAKE_NAME,
                           FAKE_ARCH, shape->arch);
    return attn_accept(v);
}

static int fake_pred_params(const attn_plugin_context *ctx, const attn_shape *shape,
                            attn_verdict *v)
{
    long reason = param_long(ctx, "reject_reason", 0);
    long max_head_dim = param_long(ctx, "max_head_dim", 0);
    int32_t kv_heads = attn_shape_kv_heads(shape);

    if (ctx->state != &fake_state_token)
        return attn_reject(v, ATTN_REASON_OTHER, "%s lost the state its init set", FAKE_NAME);
    if (reason != 0) {
        const char *msg = attn_param_get(ctx, "reject_message");
        return attn_reject(v, (attn_reason)reason, "%s", msg ? msg : "rejected by params");
    }
    if (param_long(ctx, "fp8_mha_only", 0) && is_fp8(shape->compute_dtype) &&
        shape->num_q_heads != kv_heads)
        return attn_reject(v, ATTN_REASON_FP8_COMPUTE_MHA_ONLY,
                           "FP8 compute in %s is MHA-only: num_q_heads (%d) != num_kv_heads (%d)",
                           FAKE_NAME, (int)shape->num_q_heads, (int)kv_heads);
    if (max_head_dim > 0 && shape->head_dim > max_head_dim)
        return attn_reject(v, ATTN_REASON_HEAD_DIM, "head_dim %d > %ld", (int)shape->head_dim,
                           max_head_dim);
    if (param_long(ctx, "reject_sinks", 0) && shape->has_sinks)
        return attn_reject(v, ATTN_REASON_SINKS, "%s has no sinks", FAKE_NAME);
    return attn_accept(v);
}

#ifdef FAKE_REJECT_REASON
static int fake_pred_reject(const attn_plugin_context *ctx, const attn_shape *shape,
                            attn_verdict *v)
{
    (void)ctx;
    (void)shape;
    return attn_reject(v, FAKE_REJECT_REASON, "%s", FAKE_REJECT_MESSAGE);
}
#endif

static const attn_predicate fake_predicates[] = {
    {"arch", fake_pred_arch},
    {"params", fake_pred_params},
#ifdef FAKE_REJECT_REASON
    {"reject", fake_pred_reject},
#endif
};

static void fake_log(attn_plugin_context *ctx, int32_t level, const char *msg)
{
    if (ctx->services && ctx->services->log)
        ctx->services->log(ctx->services->host, level, msg);
}

static attn_status fake_init(attn_plugin_context *ctx)
{
#ifdef FAKE_INIT_FAILS
    fake_log(ctx, ATTN_LOG_ERROR, "fake init failed on purpose");
    return ATTN_ERR_INIT_FAILED;
#else
    fake_log(ctx, ATTN_LOG_INFO, "fake plugin initialised");
    ctx->state = &fake_state_token;
    return ATTN_OK;
#endif
}

static void fake_fini(attn_plugin_context *ctx)
{
    const char *marker = attn_param_get(ctx, "fini_marker");
    if (marker && *marker) {
        FILE *f = fopen(marker, "w");
        if (f) {
            fputs(FAKE_NAME "\n", f);
            fclose(f);
        }
    }
}

typedef struct fake_backend {
    attn_shape shape;
} fake_backend;

static attn_status fake_create(const attn_plugin_context *ctx, const attn_shape *shape,
                               void **backend, char *err, size_t err_size)
{
    (void)ctx;
#ifdef FAKE_CREATE_FAILS
    (void)shape;
    (void)backend;
    snprintf(err, err_size, "fake create refused: %s never constructs", FAKE_NAME);
    return ATTN_ERR_CREATE_FAILED;
#else
    fake_backend *b;
    /* Validate like a real constructor: the registry already did, so this
     * only fires if the host passes a shape the registry never checked. */
    if (shape->num_q_heads <= 0 || shape->num_q_heads % attn_shape_kv_heads(shape) != 0) {
        snprintf(err, err_size, "fake create: bad head counts");
        return ATTN_ERR_INVALID_SHAPE;
    }
    b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, err_size, "out of memory");
        return ATTN_ERR_NO_MEMORY;
    }
    b->shape = *shape;
    *backend = b;
    return ATTN_OK;
#endif
}

static attn_status fake_workspace_size(void *backend, const attn_batch_limits *limits,
                                       size_t *bytes)
{
    (void)backend;
    *bytes = (size_t)(limits->max_num_tokens > 0 ? limits->max_num_tokens : 0) *
             FAKE_WORKSPACE_PER_TOKEN;
    return ATTN_OK;
}

static attn_status fake_forward(void *backend, const attn_forward_args *args, char *err,
                                size_t err_size)
{
    size_t need = (size_t)(args->num_tokens > 0 ? args->num_tokens : 0) * FAKE_WORKSPACE_PER_TOKEN;
    (void)backend;
    if (args->workspace_size < need || (need && !args->workspace)) {
        snprintf(err, err_size, "fake forward needs %zu workspace bytes, got %zu", need,
                 args->workspace_size);
        return ATTN_ERR_WORKSPACE_TOO_SMALL;
    }
    /* A visible mark that forward ran in the plugin. */
    if (args->out)
        memset(args->out, 0xA5, 1);
    return ATTN_OK;
}

static void fake_destroy(void *backend)
{
    free(backend);
}

#if defined(FAKE_ABI_1_0)
/* An ABI 1.0 plugin has no probe_devices; this one exists past the end of
 * the 1.0 struct only to catch a host that reads beyond struct_size. */
static attn_status fake_probe(const attn_plugin_context *ctx, attn_device_info *devices,
                              uint32_t capacity, uint32_t *count, char *err, size_t err_size)
{
    (void)ctx;
    (void)err;
    (void)err_size;
    if (capacity > 0)
        snprintf(devices[0].name, sizeof devices[0].name, "MUST-NOT-BE-CALLED");
    *count = 1;
    return ATTN_OK;
}
#else
static attn_status fake_probe(const attn_plugin_context *ctx, attn_device_info *devices,
                              uint32_t capacity, uint32_t *count, char *err, size_t err_size)
{
    (void)ctx;
#ifdef FAKE_NO_DEVICE
    (void)devices;
    (void)capacity;
    *count = 0;
    snprintf(err, err_size, "no fake device here");
    return ATTN_ERR_NO_DEVICE;
#else
    (void)err;
    (void)err_size;
    if (capacity > 0) {
        memset(&devices[0], 0, sizeof devices[0]);
        devices[0].struct_size = sizeof devices[0];
        devices[0].index = 0;
        snprintf(devices[0].arch, sizeof devices[0].arch, "%s", FAKE_ARCH);
        snprintf(devices[0].name, sizeof devices[0].name, "Fake Device 0");
        devices[0].memory_bytes = (uint64_t)1 << 30;
        devices[0].compute_units = 4;
    }
    *count = 1;
    return ATTN_OK;
#endif
}
#endif

#define FAKE_DESCRIPTOR_FIELDS                                                                     \
    .name = FAKE_NAME, .version = FAKE_VERSION, .description = "fake backend for tests",           \
    .built_archs = fake_built_archs, .predicates = fake_predicates,                                \
    .num_predicates = (uint32_t)(sizeof fake_predicates / sizeof fake_predicates[0]),              \
    .init = fake_init, .fini = fake_fini, .create = fake_create,                                   \
    .workspace_size = fake_workspace_size, .forward = fake_forward, .destroy = fake_destroy,       \
    .probe_devices = fake_probe

#if defined(FAKE_ABI_WRONG_MAJOR) || defined(FAKE_ABI_NEWER_MINOR) || defined(FAKE_ABI_1_0) ||     \
    defined(FAKE_NULL_DESCRIPTOR) || defined(FAKE_NO_ENTRY) || defined(FAKE_ABI_1_2_PADDING) ||    \
    defined(FAKE_ABI_1_3)

#if defined(FAKE_ABI_1_0)
#define FAKE_STRUCT_SIZE offsetof(attn_plugin_descriptor, probe_devices)
#define FAKE_ABI_MINOR 0
#elif defined(FAKE_ABI_1_2_PADDING)
/* 1.2's descriptor ended with num_arch_limits, padded to 152 bytes. */
#define FAKE_STRUCT_SIZE offsetof(attn_plugin_descriptor, append_kv)
#define FAKE_ABI_MINOR 2
#define FAKE_UNREAD_FIELDS .forward_features = ATTN_FORWARD_KV_STRIDES | ATTN_FORWARD_LSE,
#elif defined(FAKE_ABI_1_3)
/* 1.3's descriptor ended with append_kv; the merge_states after it is
 * outside the plugin's struct_size, so the host must never read it. */
static attn_status fake_merge_never(void *backend, const attn_merge_args *args, char *err,
                                    size_t err_size)
{
    (void)backend;
    (void)args;
    (void)err;
    (void)err_size;
    abort();
}
#define FAKE_STRUCT_SIZE offsetof(attn_plugin_descriptor, merge_states)
#define FAKE_ABI_MINOR 3
#define FAKE_UNREAD_FIELDS .merge_states = fake_merge_never,
#elif defined(FAKE_ABI_NEWER_MINOR)
#define FAKE_STRUCT_SIZE sizeof(attn_plugin_descriptor)
#define FAKE_ABI_MINOR (ATTN_PLUGIN_ABI_MINOR + 1)
#else
#define FAKE_STRUCT_SIZE sizeof(attn_plugin_descriptor)
#define FAKE_ABI_MINOR ATTN_PLUGIN_ABI_MINOR
#endif
#if defined(FAKE_ABI_WRONG_MAJOR)
#define FAKE_ABI_MAJOR (ATTN_PLUGIN_ABI_MAJOR + 1)
#else
#define FAKE_ABI_MAJOR ATTN_PLUGIN_ABI_MAJOR
#endif

/* Fields the variant's ABI version does not cover (tail padding, entries
 * past its struct_size): the host must not honour them. */
#ifndef FAKE_UNREAD_FIELDS
#define FAKE_UNREAD_FIELDS
#endif
static const attn_plugin_descriptor fake_descriptor = {.struct_size = (uint32_t)FAKE_STRUCT_SIZE,
                                                       .abi_major = FAKE_ABI_MAJOR,
                                                       .abi_minor = FAKE_ABI_MINOR,
                                                       FAKE_UNREAD_FIELDS FAKE_DESCRIPTOR_FIELDS};

#if defined(FAKE_NO_ENTRY)
/* Exports something, just not attn_plugin_entry: the host must report the
 * missing symbol rather than guess. */
ATTN_PLUGIN_EXPORT const attn_plugin_descriptor *attn_plugin_entry_v2(uint32_t host_abi_major,
                                                                      uint32_t host_abi_minor);
ATTN_PLUGIN_EXPORT const attn_plugin_descriptor *attn_plugin_entry_v2(uint32_t host_abi_major,
                                                                      uint32_t host_abi_minor)
{
    (void)host_abi_major;
    (void)host_abi_minor;
    return &fake_descriptor;
}
#else
ATTN_PLUGIN_EXPORT const attn_plugin_descriptor *attn_plugin_entry(uint32_t host_abi_major,
                                                                   uint32_t host_abi_minor);
ATTN_PLUGIN_EXPORT const attn_plugin_descriptor *attn_plugin_entry(uint32_t host_abi_major,
                                                                   uint32_t host_abi_minor)
{
    (void)host_abi_major;
    (void)host_abi_minor;
#if defined(FAKE_NULL_DESCRIPTOR)
    (void)&fake_descriptor;
    return NULL;
#else
    /* Deliberately returns the descriptor whatever the host's version: the
     * host, not the plugin, must enforce the negotiation rules. */
    return &fake_descriptor;
#endif
}
#endif

#else /* a well-formed plugin, written the way plugin authors are told to */

ATTN_PLUGIN_DEFINE(FAKE_DESCRIPTOR_FIELDS)

#endif
