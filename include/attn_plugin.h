/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_plugin.h — the ABI between libattnreg and backend plugins.
 *
 * A plugin is a shared library that exports exactly one symbol,
 * ATTN_PLUGIN_ENTRY_SYMBOL ("attn_plugin_entry"). The host calls it with its
 * own ABI version; the plugin returns its descriptor, or NULL when it cannot
 * serve that host. Write plugins with ATTN_PLUGIN_DEFINE(), never by hand.
 * Plugins must not link libattnreg: everything they need from the host
 * arrives in the attn_plugin_context (logging through its services table).
 *
 * ABI changelog (append-only; a minor bump only appends fields):
 *   1.0  Initial ABI: descriptor with name, version, description,
 *        built_archs, predicates, init/fini, create, workspace_size,
 *        forward, destroy.
 *   1.1  Appended attn_plugin_descriptor.probe_devices (optional device
 *        probe). Hosts accept 1.0 plugins and treat them as having no probe.
 *   1.2  Appended graph_capturable (forward may be captured in a CUDA/HIP
 *        graph), describe_plan (optional: the launch plan of a shape, see
 *        attn_launch_plan in attn_types.h) and arch_limits / num_arch_limits
 *        (optional: the per-arch limits the plans are checked against).
 *        Appended ATTN_REASON_RESOURCE for predicates that find no launch
 *        plan within the arch's limits. Hosts accept 1.0 and 1.1 plugins and
 *        treat them as not capturable, with no plan and no limits.
 *        (Host 0.3: ATTN_PLUGIN_DESCRIPTOR_SIZE_1_0 / _MIN_SIZE and
 *        ATTN_ARCH_LIMITS_MIN_SIZE name the sizes the host checks; no
 *        layout changed.)
 *   1.3  attn_forward_args (attn_types.h) appended K/V cache strides
 *        (k_stride_block/token/head, v_stride_block/token/head; 0 = the
 *        contiguous layout's). Appended attn_plugin_descriptor.
 *        forward_features (ATTN_FORWARD_KV_STRIDES). The host hands a plugin
 *        strides equal to the contiguous ones as 0, and refuses a call with
 *        any other stride (ATTN_ERR_UNSUPPORTED) for a plugin that does not
 *        set ATTN_FORWARD_KV_STRIDES (every 1.0-1.2 plugin). A plugin whose
 *        kernels cannot take a layout returns an error status with a
 *        sentence, never a result computed on the wrong rows.
 *        The log-sum-exp output: attn_shape.return_lse, attn_forward_args.
 *        lse / lse_stride_token / lse_stride_head, ATTN_FORWARD_LSE and
 *        ATTN_REASON_LSE. Selection rejects (LSE, "host") a plugin that does
 *        not declare ATTN_FORWARD_LSE for a shape with return_lse, after its
 *        own predicates (which may say why first).
 *        KV append: attn_append_args (attn_types.h) and the optional
 *        descriptor entry append_kv (appended after forward_features).
 *   1.4  Merging on the backend's device: attn_merge_args moved to
 *        attn_types.h (from attnreg.h) and appended `stream`; the optional
 *        descriptor entry merge_states (appended after append_kv), which the
 *        host's attn_backend_merge_states calls with arguments it has
 *        checked. Hosts accept 1.0-1.3 plugins, whose descriptors end at
 *        append_kv or before (their struct_size does not cover the entry),
 *        and answer ATTN_ERR_UNSUPPORTED for them.
 *
 * Threads: the host may call predicates, create and probe_devices from
 * several threads at once (selection is concurrent); they must not modify
 * shared state without their own locking. init and fini run once, alone.
 * One backend object is used by one thread at a time.
 *
 * Negotiation rules (enforced by the host):
 *   - descriptor.abi_major must equal the host's ATTN_PLUGIN_ABI_MAJOR;
 *   - descriptor.abi_minor newer than the host's is refused;
 *   - an older minor is accepted and only the fields that its struct_size
 *     covers are read.
 */
#ifndef ATTN_PLUGIN_H
#define ATTN_PLUGIN_H

#include <stdarg.h>
#include <stdio.h>

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ATTN_PLUGIN_ABI_MAJOR 1
#define ATTN_PLUGIN_ABI_MINOR 4
#define ATTN_PLUGIN_ENTRY_SYMBOL "attn_plugin_entry"

#if defined(_WIN32)
#define ATTN_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ATTN_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Longest verdict sentence, including the NUL. */
#define ATTN_VERDICT_MESSAGE_MAX 256

/* What a predicate answers. The host zeroes it and sets struct_size before
 * each call; a predicate that rejects sets reason and message. */
typedef struct attn_verdict {
    uint32_t struct_size;
    int32_t accepted;                       /* 1 = accept, 0 = reject */
    int32_t reason;                         /* attn_reason when rejected */
    char message[ATTN_VERDICT_MESSAGE_MAX]; /* one human sentence */
} attn_verdict;

/* Services the host offers to plugins. */
typedef struct attn_host_services {
    uint32_t struct_size;
    /* Log a message under the plugin's name; level is attn_log_level. */
    void (*log)(void *host, int32_t level, const char *message);
    void *host;
} attn_host_services;

/* One key of the INI's [params] section, passed through verbatim. */
typedef struct attn_param {
    const char *key;
    const char *value;
} attn_param;

/* Handed to every plugin callback. Owned by the host; lives as long as the
 * loaded plugin. `state` belongs to the plugin (set it in init). */
typedef struct attn_plugin_context {
    uint32_t struct_size;
    const attn_host_services *services;
    const attn_param *params;
    uint32_t num_params;
    const char *conf_file; /* the INI that named this plugin */
    void *state;
} attn_plugin_context;

/* A capability predicate: fill `verdict` and return 1 to accept, 0 to reject. */
typedef int (*attn_predicate_fn)(const attn_plugin_context *ctx, const attn_shape *shape,
                                 attn_verdict *verdict);

typedef struct attn_predicate {
    const char *name; /* "arch", "dtypes", "gqa_ratio", "head_dims", ... */
    attn_predicate_fn check;
} attn_predicate;

typedef struct attn_plugin_descriptor {
    uint32_t struct_size; /* sizeof(attn_plugin_descriptor) as the plugin knows it */
    uint32_t abi_major;
    uint32_t abi_minor;
    const char *name; /* must equal the `name` of the INI that loads it */
    const char *version;
    const char *description;
    /* NULL-terminated list of the archs this binary holds code for; an empty
     * list means "built without kernels". */
    const char *const *built_archs;
    const attn_predicate *predicates;
    uint32_t num_predicates;
    /* Optional: called once after load; may set ctx->state. */
    attn_status (*init)(attn_plugin_context *ctx);
    /* Optional: called once before unload. */
    void (*fini)(attn_plugin_context *ctx);
    /* Construct a backend object for `shape` (already accepted by every
     * predicate). Validates like a real constructor. On failure writes one
     * sentence into err. */
    attn_status (*create)(const attn_plugin_context *ctx, const attn_shape *shape, void **backend,
                          char *err, size_t err_size);
    /* Scratch bytes forward needs for batches within `limits`. */
    attn_status (*workspace_size)(void *backend, const attn_batch_limits *limits, size_t *bytes);
    attn_status (*forward)(void *backend, const attn_forward_args *args, char *err,
                           size_t err_size);
    void (*destroy)(void *backend);
    /* ABI 1.1. Optional: list devices this plugin can run on. Writes at most
     * `capacity` entries, sets *count to the number found. No device or no
     * driver: return ATTN_ERR_NO_DEVICE with the runtime's message in err. */
    attn_status (*probe_devices)(const attn_plugin_context *ctx, attn_device_info *devices,
                                 uint32_t capacity, uint32_t *count, char *err, size_t err_size);
    /* ABI 1.2. 1 when forward allocates nothing, synchronises nothing and
     * launches only on args->stream, for every batch within the shape's
     * capacities: a host may then capture it in a CUDA/HIP graph and replay
     * it. 0 (the default) promises nothing. */
    int32_t graph_capturable;
    /* ABI 1.2. Optional: the launch plan for a shape the predicates accept
     * (the kernels forward may launch, their programs and shared memory, and
     * the arch's limits), computed by the same code the predicates and the
     * launcher use. The host sets plan->struct_size; ATTN_ERR_UNSUPPORTED
     * when no plan fits. */
    attn_status (*describe_plan)(const attn_plugin_context *ctx, const attn_shape *shape,
                                 attn_launch_plan *plan);
    /* ABI 1.2. Optional: the limits of each arch the plans are checked
     * against (`attnreg check` prints them). */
    const attn_arch_limits *arch_limits;
    uint32_t num_arch_limits;
    /* ABI 1.3. What forward reads beyond the 1.2 arguments, ATTN_FORWARD_*
     * bits. A plugin sets a bit only for what its forward really honours:
     * rebuilding an old plugin against these headers leaves it 0, and the
     * host then refuses such calls rather than letting it compute on the
     * wrong memory. */
    uint32_t forward_features;
    /* ABI 1.3. Optional: write new tokens' K/V into the paged cache (see
     * attn_append_args in attn_types.h); NULL = the backend has no KV append
     * (the host answers ATTN_ERR_UNSUPPORTED). */
    attn_status (*append_kv)(void *backend, const attn_append_args *args, char *err,
                             size_t err_size);
    /* ABI 1.4. Optional: merge two partial attention states by their
     * log-sum-exp (attn_merge_args in attn_types.h) in the backend's memory
     * space, on args->stream. The host has checked the arguments as
     * attn_merge_states does (non-NULL arrays, counts, strides >= 0, dtype f32,
     * f16 or bf16, num_tokens > 0) and passes its full struct (struct_size
     * the host's sizeof, >= this header's for a plugin no newer than it);
     * NULL = the backend cannot merge (the host answers ATTN_ERR_UNSUPPORTED).
     * A dtype or layout the kernel cannot take is an error status with a
     * sentence in err. */
    attn_status (*merge_states)(void *backend, const attn_merge_args *args, char *err,
                                size_t err_size);
} attn_plugin_descriptor;

/* The descriptor's layout of ABI 1.0, which ended before probe_devices: the
 * smallest struct_size a host accepts (attnreg.h's ATTN_<STRUCT>_MIN_SIZE
 * rule). */
#define ATTN_PLUGIN_DESCRIPTOR_SIZE_1_0 offsetof(attn_plugin_descriptor, probe_devices)
#define ATTN_PLUGIN_DESCRIPTOR_MIN_SIZE ATTN_PLUGIN_DESCRIPTOR_SIZE_1_0

/* attn_plugin_descriptor.forward_features (ABI 1.3). */
/* forward reads attn_forward_args.k_stride_* / v_stride_* (KV caches in any
 * strided layout, last dimension contiguous). */
#define ATTN_FORWARD_KV_STRIDES (1u << 0)
/* forward writes attn_forward_args.lse when the shape has return_lse. */
#define ATTN_FORWARD_LSE (1u << 1)

typedef const attn_plugin_descriptor *(*attn_plugin_entry_fn)(uint32_t host_abi_major,
                                                              uint32_t host_abi_minor);

/* Helpers for predicates. */
static inline int attn_accept(attn_verdict *v)
{
    v->accepted = 1;
    v->reason = ATTN_REASON_NONE;
    v->message[0] = '\0';
    return 1;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static inline int
attn_reject(attn_verdict *v, attn_reason reason, const char *fmt, ...)
{
    va_list ap;
    v->accepted = 0;
    v->reason = (int32_t)reason;
    va_start(ap, fmt);
    vsnprintf(v->message, sizeof v->message, fmt, ap);
    va_end(ap);
    return 0;
}

/* Look up a [params] key; NULL when absent. */
static inline const char *attn_param_get(const attn_plugin_context *ctx, const char *key)
{
    uint32_t i;
    for (i = 0; i < ctx->num_params; i++) {
        const char *a = ctx->params[i].key, *b = key;
        while (*a && *a == *b) {
            a++;
            b++;
        }
        if (*a == *b)
            return ctx->params[i].value;
    }
    return NULL;
}

/* Resolved helpers for the shape's "0 = same as" fields. */
static inline int32_t attn_shape_kv_heads(const attn_shape *s)
{
    return s->num_kv_heads ? s->num_kv_heads : s->num_q_heads;
}
static inline int32_t attn_shape_head_dim_v(const attn_shape *s)
{
    return s->head_dim_v ? s->head_dim_v : s->head_dim;
}

/*
 * ATTN_PLUGIN_DEFINE(designated initialisers...) emits the descriptor and
 * the exported entry symbol:
 *
 *   ATTN_PLUGIN_DEFINE(.name = "my-backend", .version = "1.0.0",
 *                      .predicates = my_predicates, .num_predicates = 3,
 *                      .create = my_create, ...)
 *
 * The descriptor refuses hosts of another major; the host refuses plugins
 * newer in minor than itself.
 *
 * The same call compiles as C++ from C++11 on (C++17 is what the tests
 * build): there each `.field = value` argument becomes an assignment to a
 * value-initialised descriptor (C++ before C++20 has no designated
 * initialisers), and attn_plugin_entry is declared extern "C" so the host
 * finds it by its C name. At most 32 arguments.
 */
#ifndef __cplusplus
#define ATTN_PLUGIN_DEFINE(...)                                                                    \
    static const attn_plugin_descriptor attn_plugin_descriptor_instance = {                        \
        .struct_size = sizeof(attn_plugin_descriptor),                                             \
        .abi_major = ATTN_PLUGIN_ABI_MAJOR,                                                        \
        .abi_minor = ATTN_PLUGIN_ABI_MINOR,                                                        \
        __VA_ARGS__};                                                                              \
    ATTN_PLUGIN_EXPORT const attn_plugin_descriptor *attn_plugin_entry(uint32_t host_abi_major,    \
                                                                       uint32_t host_abi_minor);   \
    ATTN_PLUGIN_EXPORT const attn_plugin_descriptor *attn_plugin_entry(uint32_t host_abi_major,    \
                                                                       uint32_t host_abi_minor)    \
    {                                                                                              \
        (void)host_abi_minor;                                                                      \
        return host_abi_major == ATTN_PLUGIN_ABI_MAJOR ? &attn_plugin_descriptor_instance : NULL;  \
    }
#else
/* clang-format off */
#define ATTN_PP_NARG(...) ATTN_PP_NARG_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define ATTN_PP_NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, _32, N, ...) N
#define ATTN_PP_CAT_(a, b) a##b
#define ATTN_PP_CAT(a, b) ATTN_PP_CAT_(a, b)
#define ATTN_PP_FOR_EACH(m, ...) ATTN_PP_CAT(ATTN_PP_EACH_, ATTN_PP_NARG(__VA_ARGS__))(m, __VA_ARGS__)
#define ATTN_PP_EACH_1(m, x) m(x)
#define ATTN_PP_EACH_2(m, x, ...) m(x) ATTN_PP_EACH_1(m, __VA_ARGS__)
#define ATTN_PP_EACH_3(m, x, ...) m(x) ATTN_PP_EACH_2(m, __VA_ARGS__)
#define ATTN_PP_EACH_4(m, x, ...) m(x) ATTN_PP_EACH_3(m, __VA_ARGS__)
#define ATTN_PP_EACH_5(m, x, ...) m(x) ATTN_PP_EACH_4(m, __VA_ARGS__)
#define ATTN_PP_EACH_6(m, x, ...) m(x) ATTN_PP_EACH_5(m, __VA_ARGS__)
#define ATTN_PP_EACH_7(m, x, ...) m(x) ATTN_PP_EACH_6(m, __VA_ARGS__)
#define ATTN_PP_EACH_8(m, x, ...) m(x) ATTN_PP_EACH_7(m, __VA_ARGS__)
#define ATTN_PP_EACH_9(m, x, ...) m(x) ATTN_PP_EACH_8(m, __VA_ARGS__)
#define ATTN_PP_EACH_10(m, x, ...) m(x) ATTN_PP_EACH_9(m, __VA_ARGS__)
#define ATTN_PP_EACH_11(m, x, ...) m(x) ATTN_PP_EACH_10(m, __VA_ARGS__)
#define ATTN_PP_EACH_12(m, x, ...) m(x) ATTN_PP_EACH_11(m, __VA_ARGS__)
#define ATTN_PP_EACH_13(m, x, ...) m(x) ATTN_PP_EACH_12(m, __VA_ARGS__)
#define ATTN_PP_EACH_14(m, x, ...) m(x) ATTN_PP_EACH_13(m, __VA_ARGS__)
#define ATTN_PP_EACH_15(m, x, ...) m(x) ATTN_PP_EACH_14(m, __VA_ARGS__)
#define ATTN_PP_EACH_16(m, x, ...) m(x) ATTN_PP_EACH_15(m, __VA_ARGS__)
#define ATTN_PP_EACH_17(m, x, ...) m(x) ATTN_PP_EACH_16(m, __VA_ARGS__)
#define ATTN_PP_EACH_18(m, x, ...) m(x) ATTN_PP_EACH_17(m, __VA_ARGS__)
#define ATTN_PP_EACH_19(m, x, ...) m(x) ATTN_PP_EACH_18(m, __VA_ARGS__)
#define ATTN_PP_EACH_20(m, x, ...) m(x) ATTN_PP_EACH_19(m, __VA_ARGS__)
#define ATTN_PP_EACH_21(m, x, ...) m(x) ATTN_PP_EACH_20(m, __VA_ARGS__)
#define ATTN_PP_EACH_22(m, x, ...) m(x) ATTN_PP_EACH_21(m, __VA_ARGS__)
#define ATTN_PP_EACH_23(m, x, ...) m(x) ATTN_PP_EACH_22(m, __VA_ARGS__)
#define ATTN_PP_EACH_24(m, x, ...) m(x) ATTN_PP_EACH_23(m, __VA_ARGS__)
#define ATTN_PP_EACH_25(m, x, ...) m(x) ATTN_PP_EACH_24(m, __VA_ARGS__)
#define ATTN_PP_EACH_26(m, x, ...) m(x) ATTN_PP_EACH_25(m, __VA_ARGS__)
#define ATTN_PP_EACH_27(m, x, ...) m(x) ATTN_PP_EACH_26(m, __VA_ARGS__)
#define ATTN_PP_EACH_28(m, x, ...) m(x) ATTN_PP_EACH_27(m, __VA_ARGS__)
#define ATTN_PP_EACH_29(m, x, ...) m(x) ATTN_PP_EACH_28(m, __VA_ARGS__)
#define ATTN_PP_EACH_30(m, x, ...) m(x) ATTN_PP_EACH_29(m, __VA_ARGS__)
#define ATTN_PP_EACH_31(m, x, ...) m(x) ATTN_PP_EACH_30(m, __VA_ARGS__)
#define ATTN_PP_EACH_32(m, x, ...) m(x) ATTN_PP_EACH_31(m, __VA_ARGS__)
/* clang-format on */
#define ATTN_PLUGIN_SET_FIELD_(assignment) attn_plugin_d_ assignment;
#define ATTN_PLUGIN_DEFINE(...)                                                                    \
    static const attn_plugin_descriptor attn_plugin_descriptor_instance = []() {                   \
        attn_plugin_descriptor attn_plugin_d_{};                                                   \
        attn_plugin_d_.struct_size = sizeof(attn_plugin_descriptor);                               \
        attn_plugin_d_.abi_major = ATTN_PLUGIN_ABI_MAJOR;                                          \
        attn_plugin_d_.abi_minor = ATTN_PLUGIN_ABI_MINOR;                                          \
        ATTN_PP_FOR_EACH(ATTN_PLUGIN_SET_FIELD_, __VA_ARGS__)                                      \
        return attn_plugin_d_;                                                                     \
    }();                                                                                           \
    extern "C" ATTN_PLUGIN_EXPORT const attn_plugin_descriptor *attn_plugin_entry(                 \
        uint32_t host_abi_major, uint32_t host_abi_minor);                                         \
    extern "C" ATTN_PLUGIN_EXPORT const attn_plugin_descriptor *attn_plugin_entry(                 \
        uint32_t host_abi_major, uint32_t host_abi_minor)                                          \
    {                                                                                              \
        (void)host_abi_minor;                                                                      \
        return host_abi_major == ATTN_PLUGIN_ABI_MAJOR ? &attn_plugin_descriptor_instance          \
                                                       : nullptr;                                  \
    }
#endif

#ifdef __cplusplus
}
#endif

#endif /* ATTN_PLUGIN_H */
