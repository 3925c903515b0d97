/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attnreg.h — the host API of libattnreg, the attention-backend registry.
 *
 * A host opens a registry (which reads the INI files describing backend
 * plugins), asks it to select a backend for a shape, and constructs the
 * chosen backend:
 *
 *   attn_registry *reg;
 *   attn_registry_options opt;
 *   attn_registry_options_init(&opt);
 *   if (attn_registry_open(&opt, &reg) != ATTN_OK) ...
 *   attn_shape shape;
 *   attn_shape_init(&shape);
 *   shape.num_q_heads = 32; shape.num_kv_heads = 8; shape.head_dim = 128; ...
 *   attn_selection sel;
 *   attn_selection_init(&sel);
 *   attn_status st = attn_registry_select(reg, &shape, &sel);
 *   if (st != ATTN_OK) fprintf(stderr, "%s\n", sel.message);
 *
 * Ownership: every `const char *` the library hands out is owned by the
 * library. Strings inside a selection, an explanation record, a plugin info
 * or a diagnostic stay valid until the registry is closed (explanation
 * strings: until the explanation is freed). attn_last_error() is valid until
 * the next failing call on the same thread.
 *
 * Thread safety: attn_registry_select, attn_registry_explain, attn_registry_plan
 * and the read-only queries may be called from many threads at once on one
 * registry. Open and close are not concurrent with anything else on that
 * registry. A backend object is used by one thread at a time; a plan is
 * immutable and may be read from many threads.
 *
 * ABI rules: every struct a host passes or receives starts with
 * `struct_size` (see attn_types.h); fields are only appended; a function
 * that fills a host's struct writes no more than the struct_size the host
 * gave. Opaque handles grow freely.
 *
 * Host API changelog (append-only):
 *   0.1  Registry, selection, explanation, backends.
 *   0.2  Model planning: attn_layer, attn_model (with attn_layer_init and
 *        attn_model_init, which take the caller's struct size),
 *        attn_registry_plan, attn_plan_summarize, attn_plan_entry_get,
 *        attn_plan_lookup, attn_plan_free, attn_phase_name,
 *        attn_layer_kind_name. No existing struct or function changed.
 *        Opening a registry with the environment enabled now warns, once
 *        per process, about unknown ATTNREG_* variables.
 *   0.3  Launch plans and graph capture: attn_selection.graph_capturable,
 *        attn_plugin_load_info.arch_limits / num_arch_limits /
 *        graph_capturable (appended), attn_registry_describe_plan, the
 *        attn_arch_limits / attn_kernel_plan / attn_launch_plan types and
 *        ATTN_REASON_RESOURCE (attn_types.h). Shape capacities documented
 *        (attn_shape.max_q_len / max_kv_len), and the window convention.
 *        Struct layout queries for bindings that mirror the structs (the
 *        Python package): attn_struct_size, attn_struct_layout,
 *        attn_struct_field_name.
 *        attn_registry_conf_path_origin; the default search adds
 *        <sysconfdir>/attnreg/conf.d before the shipped folder; a plugin
 *        name in an earlier folder overrides a later one (an info line, not
 *        a diagnostic); ATTNREG_LOG_FILE sends the default log to a file.
 *        Hardening: attn_shape_init_sized,
 *        attn_selection_init_sized, attn_registry_options_init_sized (the
 *        _init names became macros that pass the caller's sizeof; the old
 *        functions stay and write only their first layout);
 *        attn_registry_options.probe_out_of_process; named oldest sizes
 *        (ATTN_*_SIZE_*); ATTN_REASON_INVALID_REASON; selection strings
 *        stay valid until close past the decision cache; closing a
 *        registry with live backends defers the unload to the last
 *        attn_backend_destroy. The library reads no ATTNREG_* variable in a
 *        privileged process.
 *        The ABI's lists as X-macros in attn_types.h (ATTN_STATUS_MAP,
 *        ATTN_STATUS_CLASS_MAP, ATTN_REASON_MAP, ATTN_REASON_LAYER_MAP,
 *        ATTN_DTYPE_MAP, ATTN_SHAPE_FIELD_MAP, ATTN_LOG_LEVEL_MAP; in this
 *        header ATTN_PHASE_MAP, ATTN_LAYER_KIND_MAP), the enums and ATTN_*_COUNT
 *        generated from them (same values); attn_dtype_traits_of,
 *        attn_dtype_size and attn_dtype_is_fp8 (inline); attn_status_class_name,
 *        attn_status_exit_code, attn_reason_layer_name and attn_enum_count,
 *        so that bindings build their lists from the library.
 *        One struct-growth rule (above ATTN_SHAPE_SIZE_0_1): a minimum size
 *        ATTN_<STRUCT>_MIN_SIZE for every versioned struct (with
 *        ATTN_LAYER_SIZE_0_2, ATTN_MODEL_SIZE_0_2, ATTN_DEVICE_INFO_SIZE_0_1);
 *        attn_layer_init_sized, attn_model_init_sized,
 *        attn_forward_args_init_sized and attn_batch_limits_init_sized (the
 *        last two with their _init macros). A struct the library fills is
 *        refused below ATTN_<STRUCT>_MIN_SIZE (for attn_diagnostic,
 *        attn_plugin_info, attn_plugin_load_info and attn_verdict_record:
 *        below a struct_size field; before, only 0 was).
 *   0.4  KV caches by stride: attn_forward_args.k_stride_block,
 *        k_stride_token, k_stride_head, v_stride_block, v_stride_token,
 *        v_stride_head (appended; 0 = the contiguous layout's, so older hosts
 *        are unchanged; see attn_types.h). attn_backend_forward refuses
 *        negative strides, rows they would overlap, and non-contiguous
 *        strides for a plugin that does not declare ATTN_FORWARD_KV_STRIDES
 *        (attn_plugin.h, ABI 1.3; no plugin older than 1.3 does):
 *        ATTN_ERR_UNSUPPORTED naming the strides.
 *        Log-sum-exp output and merging: attn_shape.return_lse (appended;
 *        attn_selection's effective_shape grows with it, the 0.3 selection
 *        layout is kept for older hosts), attn_forward_args.lse,
 *        lse_stride_token, lse_stride_head (appended), ATTN_REASON_LSE;
 *        attn_merge_args, ATTN_MERGE_ARGS_SIZE_0_4 and attn_merge_states (on
 *        the CPU: host memory). attn_plan_entry.effective_shape (appended): a
 *        host whose attn_plan_entry is the 0.3 size gets its `selection` in
 *        the 0.3 layout.
 *        KV append: attn_append_args (attn_types.h), ATTN_APPEND_ARGS_SIZE_0_4
 *        and attn_backend_append_kv. By 0.3's struct-growth rule:
 *        attn_append_args_init_sized and attn_merge_args_init_sized (with
 *        _init macros), ATTN_APPEND_ARGS_MIN_SIZE, ATTN_MERGE_ARGS_MIN_SIZE.
 *        Hugging Face configs: attn_hf_config_read / _parse / _free /
 *        _describe / _note / _apply and attn_hf_config_info; the softmax
 *        scale: attn_model.scale and attn_plan_entry.scale (appended).
 *        attn_registry_plan checks the model's own numbers (heads, tp,
 *        layers) before its capacities.
 *        ATTN_SHAPE_FIELD_FLAG_MAP (attn_types.h): the shape fields with the
 *        attnreg command's flag for each; ATTN_SHAPE_FIELD_MAP is derived
 *        from it and keeps its two-argument form.
 *   0.5  Merging on a backend's device: attn_merge_args moved from this
 *        header to attn_types.h (source compatible: this header includes
 *        it; the plugin ABI needs it) and appended `stream` (the device
 *        merge's stream; attn_merge_states ignores it). ATTN_MERGE_ARGS_SIZE_0_4
 *        stays the minimum, so a 0.4 host's struct is accepted everywhere.
 *        attn_backend_merge_states: the backend's plugin merges in its memory
 *        space (plugin ABI 1.4's optional merge_states entry), with the
 *        arguments checked as attn_merge_states checks them;
 *        ATTN_ERR_UNSUPPORTED naming the plugin when it has no merge_states.
 *   1.0  (planned; not built) attn_selection stops embedding attn_shape by
 *        value: effective_shape becomes a `const attn_shape *` owned by the
 *        registry (valid until close, like the selection's strings), so a
 *        selection grows by appending like every other struct, and the
 *        frozen 0.1 / 0.3 selection layouts with the per-layout paths that
 *        fill them (core/abi_frozen.h, fill_selection) go. struct_size 0 as
 *        "the library's size" for the arrays of attn_registry_list and
 *        attn_registry_probe_devices goes too: 0 is refused everywhere.
 */
#ifndef ATTNREG_H
#define ATTNREG_H

#include "attn_types.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ATTNREG_BUILDING)
#define ATTNREG_API __attribute__((visibility("default")))
#else
#define ATTNREG_API
#endif

#define ATTNREG_VERSION_MAJOR 0
#define ATTNREG_VERSION_MINOR 5
#define ATTNREG_VERSION_PATCH 0

/* Struct growth, one rule for every versioned struct:
 *   - A struct the host fills for the library (attn_shape, attn_selection,
 *     attn_registry_options, attn_layer, attn_model, attn_forward_args,
 *     attn_batch_limits; 0.4: attn_append_args, attn_merge_args) is initialised with
 * attn_<struct>_init_sized(p, sizeof *p), which writes the defaults into the caller's bytes only
 * and sets struct_size; attn_<struct>_init(p) is a macro for it. (attn_layer and attn_model have no
 * such macro: their 0.2 functions attn_layer_init(p, size) and attn_model_init(p, size), which took
 * the size already, keep the name and are the same functions.)
 *   - A struct the library fills for the host (attn_diagnostic,
 *     attn_plugin_info, attn_plugin_load_info, attn_device_info,
 *     attn_verdict_record, attn_plan_summary, attn_plan_entry,
 *     attn_launch_plan) carries the host's sizeof in struct_size; the
 *     library writes no byte past it.
 *   - ATTN_<STRUCT>_MIN_SIZE is the smallest struct_size the library accepts
 *     for a struct; a smaller one, 0 included, is refused with
 *     ATTN_ERR_INVALID_ARGUMENT. The one exception, kept from 0.1: the
 *     arrays of attn_registry_list and attn_registry_probe_devices take
 *     their stride from the first element's struct_size, where 0 means this
 *     library's sizeof.
 *   - ATTN_<STRUCT>_SIZE_<version> is the size of a published layout (the
 *     first one is the minimum where the library needs every field of it);
 *     the values never change. */
#define ATTN_SHAPE_SIZE_0_1 (offsetof(attn_shape, has_sinks) + sizeof(int32_t))
#define ATTN_FORWARD_ARGS_SIZE_0_1 (offsetof(attn_forward_args, stream) + sizeof(void *))
#define ATTN_BATCH_LIMITS_SIZE_0_1 (offsetof(attn_batch_limits, max_num_tokens) + sizeof(int32_t))
#define ATTN_REGISTRY_OPTIONS_SIZE_0_1 offsetof(attn_registry_options, skip_env)
#define ATTN_REGISTRY_OPTIONS_SIZE_0_2 offsetof(attn_registry_options, probe_out_of_process)
#define ATTN_LAYER_SIZE_0_2 (offsetof(attn_layer, type_name) + sizeof(const char *))
#define ATTN_MODEL_SIZE_0_2 (offsetof(attn_model, spec_tokens) + sizeof(int32_t))
#define ATTN_DEVICE_INFO_SIZE_0_1 (offsetof(attn_device_info, compute_units) + sizeof(int32_t))

/* attn_selection's minimum is the size of its 0.1 layout, which embeds 0.1's
 * attn_shape: the library keeps it (ATTN_SELECTION_MIN_SIZE, private), as
 * the embedded shape makes it no prefix of a grown selection. */
#define ATTN_SHAPE_MIN_SIZE ATTN_SHAPE_SIZE_0_1
#define ATTN_REGISTRY_OPTIONS_MIN_SIZE ATTN_REGISTRY_OPTIONS_SIZE_0_1
#define ATTN_FORWARD_ARGS_MIN_SIZE ATTN_FORWARD_ARGS_SIZE_0_1
#define ATTN_BATCH_LIMITS_MIN_SIZE ATTN_BATCH_LIMITS_SIZE_0_1
#define ATTN_LAYER_MIN_SIZE ATTN_LAYER_SIZE_0_2
#define ATTN_MODEL_MIN_SIZE ATTN_MODEL_SIZE_0_2
#define ATTN_DEVICE_INFO_MIN_SIZE ATTN_DEVICE_INFO_SIZE_0_1
/* The structs the library fills for the host: enough to hold what the
 * library must write (a struct_size, and for some the first fields). */
#define ATTN_DIAGNOSTIC_MIN_SIZE sizeof(uint32_t)
#define ATTN_PLUGIN_INFO_MIN_SIZE sizeof(uint32_t)
#define ATTN_PLUGIN_LOAD_INFO_MIN_SIZE sizeof(uint32_t)
#define ATTN_VERDICT_RECORD_MIN_SIZE sizeof(uint32_t)
#define ATTN_PLAN_SUMMARY_MIN_SIZE (offsetof(attn_plan_summary, status) + sizeof(attn_status))
#define ATTN_PLAN_ENTRY_MIN_SIZE (offsetof(attn_plan_entry, phase) + sizeof(int32_t))
#define ATTN_LAUNCH_PLAN_MIN_SIZE (offsetof(attn_launch_plan, num_kernels) + sizeof(uint32_t))
/* 0.4's structs. */
#define ATTN_APPEND_ARGS_SIZE_0_4 (offsetof(attn_append_args, stream) + sizeof(void *))
#define ATTN_MERGE_ARGS_SIZE_0_4 (offsetof(attn_merge_args, lse_stride_head) + sizeof(int64_t))
#define ATTN_APPEND_ARGS_MIN_SIZE ATTN_APPEND_ARGS_SIZE_0_4
#define ATTN_MERGE_ARGS_MIN_SIZE ATTN_MERGE_ARGS_SIZE_0_4
#define ATTN_HF_CONFIG_INFO_MIN_SIZE (offsetof(attn_hf_config_info, num_notes) + sizeof(size_t))

typedef struct attn_registry attn_registry;       /* opaque */
typedef struct attn_backend attn_backend;         /* opaque: a constructed backend */
typedef struct attn_explanation attn_explanation; /* opaque: a decision trail */
typedef struct attn_candidate attn_candidate;     /* opaque: one registered plugin */

/* ---- library, status, names ------------------------------------------ */

ATTNREG_API const char *attnreg_version_string(void); /* "0.5.0" */
ATTNREG_API void attnreg_version(int *major, int *minor, int *patch);
ATTNREG_API uint32_t attnreg_plugin_abi_version(void); /* (major << 16) | minor */

/* Stable name ("ATTN_ERR_UNSUPPORTED") and one-line message of a status. */
ATTNREG_API const char *attn_status_name(attn_status status);
ATTNREG_API const char *attn_status_message(attn_status status);
/* 0.3: the class of a status (attn_types.h's ATTN_STATUS_CLASS_MAP: "ok",
 * "invalid_shape", "unsupported", "backend_rejected", "conf", "backend",
 * "io", "internal"; "internal" for an unknown code) and the exit status the
 * attnreg command gives for it (10 for an unknown code). */
ATTNREG_API const char *attn_status_class_name(attn_status status);
ATTNREG_API int attn_status_exit_code(attn_status status);
/* Stable name of a reason code ("Q_LEN"); "UNKNOWN" for out-of-range codes. */
ATTNREG_API const char *attn_reason_name(int32_t reason);
/* 0.3: the layer of a reason code (ATTN_REASON_LAYER_MAP: "none", "conf",
 * "load", "plugin", "runnable", "host"); "unknown" for out-of-range codes. */
ATTNREG_API const char *attn_reason_layer_name(int32_t reason);
/* 0.3: the number of values of a public enum ("attn_status", "attn_reason",
 * "attn_dtype", "attn_log_level", "attn_phase", "attn_layer_kind"), whose
 * values are 0 .. count - 1 and whose names the *_name functions give; 0 for
 * any other name. For bindings that build their lists from the library. */
ATTNREG_API size_t attn_enum_count(const char *enum_name);
/* Names used by the CLI and the conf files: f32 f16 bf16 fp8_e4m3fn fp8_e4m3fnuz. */
ATTNREG_API const char *attn_dtype_name(int32_t dtype);
ATTNREG_API attn_dtype attn_dtype_from_name(const char *name); /* INVALID if unknown */
ATTNREG_API const char *attn_log_level_name(attn_log_level level);

/* Detailed sentence of the last failure on this thread ("" if none). */
ATTNREG_API const char *attn_last_error(void);

/* ---- shapes --------------------------------------------------------- */

/* Defaults: arch "cpu", 1 query head, MHA, head_dim 128, all dtypes bf16,
 * page 16, q len 1, kv len 1, causal, no window, no softcap, no sinks. */
ATTNREG_API void attn_shape_init(attn_shape *shape);
/* 0.3: the same into the caller's `size` bytes, never more (struct_size =
 * size). attn_shape_init(s) is a macro for attn_shape_init_sized(s,
 * sizeof *s), so a host built against these headers passes its own size; the
 * function of that name, kept for hosts built before 0.3, writes only the
 * 0.1 layout (ATTN_SHAPE_SIZE_0_1 bytes). */
ATTNREG_API void attn_shape_init_sized(attn_shape *shape, size_t size);
#define attn_shape_init(shape) attn_shape_init_sized((shape), sizeof *(shape))
/* 1 and an empty `message` when the shape is valid; otherwise 0 and the
 * reason, e.g. "requires num_heads (32) to be a multiple of num_kv_heads (5)". */
ATTNREG_API int attn_shape_validate(const attn_shape *shape, char *message, size_t message_size);
/* One-line text form ("arch=gfx950 q_heads=16 kv_heads=1 ..."). */
ATTNREG_API int attn_shape_format(const attn_shape *shape, char *buf, size_t buf_size);

/* ---- opening ------------------------------------------------------- */

typedef struct attn_registry_options {
    uint32_t struct_size;
    /* Conf folders searched first, in order; then ATTNREG_CONF_PATH
     * (colon separated), then the installation's default folders:
     * <sysconfdir>/attnreg/conf.d (the administrator's), then
     * <datadir>/attnreg/conf (the shipped INIs). */
    const char *const *conf_paths;
    uint32_t num_conf_paths;
    int32_t skip_env_conf_path; /* 1 = ignore ATTNREG_CONF_PATH */
    int32_t skip_default_conf;  /* 1 = do not search the default folders */
    attn_log_fn log_fn;         /* NULL = stderr */
    /* The callback may run while a plugin is being loaded; it must not call
     * back into this registry. */
    void *log_user;
    int32_t log_level;                    /* attn_log_level; -1 = ATTNREG_LOG or WARN */
    int32_t strict;                       /* 1 = never apply fallback rules */
    const char *forced_backend;           /* NULL = ATTNREG_BACKEND or none */
    const char *const *disabled_backends; /* added to ATTNREG_DISABLE */
    uint32_t num_disabled_backends;
    int32_t runnable;           /* 1 = reject candidates that cannot run here */
    int32_t fail_on_conf_error; /* 1 = open fails on any conf error */
    int32_t skip_env;           /* 1 = ignore every ATTNREG_* variable */
    /* 0.3. 1 = load each plugin first in a child process (once, when it is
     * first needed), so that one that crashes, calls exit() or hangs while
     * loading fails with ATTN_ERR_LOAD ("crashed while loading (signal 11,
     * ...)", "called exit(3) while loading", "did not finish loading within
     * N s (killed)") instead of ending the host; it is then loaded in
     * process. The child runs a fresh program (<libdir>/attnreg/
     * attnreg-probe), so it is safe in a multithreaded host and whatever the
     * host's SIGCHLD disposition. */
    int32_t probe_out_of_process;
} attn_registry_options;

ATTNREG_API void attn_registry_options_init(attn_registry_options *options);
/* 0.3: into the caller's `size` bytes only; attn_registry_options_init(o) is
 * a macro for it with sizeof *o (the function writes the 0.2 layout). */
ATTNREG_API void attn_registry_options_init_sized(attn_registry_options *options, size_t size);
#define attn_registry_options_init(options)                                                        \
    attn_registry_options_init_sized((options), sizeof *(options))

/* Reads every conf file; loads no plugin library. Conf errors are logged and
 * kept as diagnostics, and the offending file is skipped (or, with
 * fail_on_conf_error, open fails with ATTN_ERR_CONF and attn_last_error()
 * names file:line). */
ATTNREG_API attn_status attn_registry_open(const attn_registry_options *options,
                                           attn_registry **registry);
/* Closes the registry. With backends still alive (created and not yet
 * destroyed) the plugins stay loaded and the registry's memory is kept until
 * the last of them is destroyed: those backends keep working, and
 * attn_backend_destroy of the last one finishes the close (0.3; before, the
 * plugin was unloaded under them). After close the host uses nothing of the
 * registry but those backends: not the handle, nor its strings. */
ATTNREG_API void attn_registry_close(attn_registry *registry);

/* Problems found while reading conf files or loading plugins. */
typedef struct attn_diagnostic {
    uint32_t struct_size;
    attn_status status;
    const char *file;   /* NULL if no file applies */
    int32_t line;       /* 0 if no line applies */
    const char *plugin; /* NULL if no plugin applies */
    const char *message;
} attn_diagnostic;

ATTNREG_API size_t attn_registry_diagnostic_count(const attn_registry *registry);
ATTNREG_API attn_status attn_registry_diagnostic(const attn_registry *registry, size_t index,
                                                 attn_diagnostic *out);
/* The conf folders searched, in order. */
ATTNREG_API size_t attn_registry_conf_path_count(const attn_registry *registry);
ATTNREG_API const char *attn_registry_conf_path(const attn_registry *registry, size_t index);

/* ---- listing (INI layer; loads nothing) ------------------------------ */

typedef struct attn_plugin_info {
    uint32_t struct_size;
    const char *name;
    int32_t priority;
    int32_t enabled;
    const char *archs;   /* comma separated, as declared in the INI */
    const char *library; /* resolved path */
    const char *conf_file;
    int32_t conf_line; /* line of the name key */
    const attn_candidate *candidate;
} attn_plugin_info;

/* Candidates in priority order (high first, ties by name). */
ATTNREG_API size_t attn_registry_plugin_count(const attn_registry *registry);
ATTNREG_API attn_status attn_registry_plugin(const attn_registry *registry, size_t index,
                                             attn_plugin_info *out);
/* Every candidate at once, in priority order: fills up to `capacity` infos
 * and sets *count to the number registered, which may exceed capacity. The
 * array's stride is infos[0].struct_size as the caller set it (its sizeof;
 * 0 = the library's), and every entry gets that struct_size. */
ATTNREG_API attn_status attn_registry_list(const attn_registry *registry, attn_plugin_info *infos,
                                           size_t capacity, size_t *count);
ATTNREG_API int attn_plugin_info_has_arch(const attn_plugin_info *info, const char *arch);

/* What loading the plugin's library found. Loads it if not loaded yet. */
typedef struct attn_plugin_load_info {
    uint32_t struct_size;
    attn_status status;  /* ATTN_OK when loaded and negotiated */
    int32_t reason;      /* attn_reason of a failure */
    const char *message; /* sentence of a failure, "" when fine */
    const char *version; /* plugin's version string (NULL on failure) */
    const char *description;
    const char *built_archs; /* comma separated; "" = built without kernels */
    uint32_t abi_major;
    uint32_t abi_minor;
    uint32_t num_predicates;
    /* 0.3: the plugin's per-arch limits (a copy the registry owns, valid
     * until it is closed; NULL and 0 when the plugin declares none). */
    const attn_arch_limits *arch_limits;
    uint32_t num_arch_limits;
    int32_t graph_capturable; /* the descriptor's promise (see attn_selection) */
} attn_plugin_load_info;

ATTNREG_API attn_status attn_registry_load_plugin(attn_registry *registry, size_t index,
                                                  attn_plugin_load_info *out);

/* Devices a plugin reports (loads it if needed). ATTN_ERR_NO_DEVICE with
 * attn_last_error() carrying the runtime's message when there are none. */
ATTNREG_API attn_status attn_registry_probe_devices(attn_registry *registry, size_t index,
                                                    attn_device_info *devices, uint32_t capacity,
                                                    uint32_t *count);

/* ---- selection ------------------------------------------------------ */

typedef struct attn_selection {
    uint32_t struct_size;
    const char *backend_name; /* NULL when no backend was selected */
    const attn_candidate *candidate;
    attn_shape effective_shape;   /* the shape after any fallback */
    int32_t fallback_applied;     /* 1 when a fallback rule was applied */
    const char *fallback_rule;    /* e.g. "compute_dtype fp8_e4m3fn -> bf16" */
    const char *fallback_backend; /* the top candidate whose rejection motivated it */
    int32_t fallback_reason;      /* its attn_reason */
    const char *fallback_message; /* its sentence */
    const char *message;          /* on failure: why (invalid reason, every candidate's
                                     reason for unsupported); on success: "" */
    /* 0.3: 1 when the backend's forward may be captured in a CUDA/HIP graph
     * (it allocates and synchronises nothing for any batch within the
     * shape's capacities, see attn_shape.max_q_len); 0 otherwise. */
    int32_t graph_capturable;
} attn_selection;

ATTNREG_API void attn_selection_init(attn_selection *selection);
/* 0.3: into the caller's `size` bytes only; attn_selection_init(s) is a
 * macro for it with sizeof *s (the function writes the 0.1 layout). A
 * selection embeds an attn_shape: the library writes the layout that the
 * selection's struct_size names (today's, or 0.1's for an older host), so
 * the fields after effective_shape never shift under a host. */
ATTNREG_API void attn_selection_init_sized(attn_selection *selection, size_t size);
#define attn_selection_init(selection) attn_selection_init_sized((selection), sizeof *(selection))

/* Select a backend for `shape`. ATTN_OK, ATTN_ERR_INVALID_SHAPE,
 * ATTN_ERR_UNSUPPORTED or ATTN_ERR_BACKEND_REJECTED (forced backend).
 * Repeated calls on one shape are answered from a cache (lock-free reads) of
 * up to 65536 distinct shapes; past that bound decisions are computed on
 * every call (still correct). Either way the selection's strings stay valid
 * until the registry is closed (0.3; past the bound the registry keeps one
 * copy of each distinct string, so memory grows with the distinct failure
 * messages of uncached shapes, not with the calls). */
ATTNREG_API attn_status attn_registry_select(attn_registry *registry, const attn_shape *shape,
                                             attn_selection *selection);

/* ---- explanation ---------------------------------------------------- */

typedef struct attn_verdict_record {
    uint32_t struct_size;
    int32_t pass; /* 0 = the asked shape; k = after k fallback rules */
    const char *backend;
    int32_t accepted;
    int32_t selected;        /* 1 for the winner */
    int32_t reason;          /* attn_reason */
    const char *reason_name; /* stable name, e.g. "Q_LEN" */
    const char *message;     /* the human sentence */
    const char *predicate; /* predicate or check that decided ("conf", "load", "head_dims", ...) */
    const char *conf_file; /* the INI, when the conf layer decided */
    int32_t conf_line;
    int32_t priority;
} attn_verdict_record;

/* Evaluate every candidate (also those after the winner) for the shape and
 * each fallback pass that was needed. The status is what select returns. */
/* The launch plan of the selected backend for selection->effective_shape:
 * the kernels its forward may launch, their programs and shared memory, and
 * the arch's limits (plan->struct_size set by the caller). ATTN_ERR_NOT_FOUND
 * when the backend describes no plans (cpu-ref); ATTN_ERR_UNSUPPORTED when no
 * plan fits (its predicates would have said so). */
ATTNREG_API attn_status attn_registry_describe_plan(attn_registry *registry,
                                                    const attn_selection *selection,
                                                    attn_launch_plan *plan);

ATTNREG_API attn_status attn_registry_explain(attn_registry *registry, const attn_shape *shape,
                                              attn_explanation **explanation);
ATTNREG_API void attn_explanation_free(attn_explanation *explanation);
ATTNREG_API attn_status attn_explanation_status(const attn_explanation *explanation);
ATTNREG_API size_t attn_explanation_count(const attn_explanation *explanation);
ATTNREG_API attn_status attn_explanation_record(const attn_explanation *explanation, size_t index,
                                                attn_verdict_record *out);
/* The decision itself (same fields as select fills); returns the decision's
 * status, as select would. */
ATTNREG_API attn_status attn_explanation_selection(const attn_explanation *explanation,
                                                   attn_selection *out);
/* Number of passes evaluated and, per pass, the rule that produced it
 * (pass 0: NULL) and the effective shape. */
ATTNREG_API size_t attn_explanation_pass_count(const attn_explanation *explanation);
ATTNREG_API const char *attn_explanation_pass_rule(const attn_explanation *explanation,
                                                   size_t pass);
ATTNREG_API const attn_shape *attn_explanation_pass_shape(const attn_explanation *explanation,
                                                          size_t pass);

/* ---- planning a whole model (at config load) ------------------------ */

/* What one layer of a model computes. A model mixes them: Gemma-2 alternates
 * sliding and full layers, Qwen3.5 puts one full-attention layer after three
 * linear-attention (Gated DeltaNet) layers. */
/* X(NAME, value, name): FULL, causal attention over the whole context;
 * SLIDING, causal attention inside a sliding window; NOT_ATTENTION, linear
 * attention, SSM, convolution, ...: the registry plans no backend for it. */
#define ATTN_LAYER_KIND_MAP(X)                                                                     \
    X(FULL, 0, "full")                                                                             \
    X(SLIDING, 1, "sliding")                                                                       \
    X(NOT_ATTENTION, 2, "not_attention")

typedef enum attn_layer_kind {
#define ATTN_LAYER_KIND_ENUM_(NAME, value, name) ATTN_LAYER_##NAME = value,
    ATTN_LAYER_KIND_MAP(ATTN_LAYER_KIND_ENUM_)
#undef ATTN_LAYER_KIND_ENUM_
} attn_layer_kind;
#define ATTN_LAYER_KIND_COUNT (0 ATTN_LAYER_KIND_MAP(ATTN_LIST_ONE_))

/* One layer. Set struct_size with attn_layer_init(). */
typedef struct attn_layer {
    uint32_t struct_size;
    int32_t kind; /* attn_layer_kind */
    /* ATTN_LAYER_SLIDING: the window in the shape's convention
     * (FlashAttention's window_size (L, R), -1 = unbounded): a query at
     * position p sees keys p - L .. p + R. A Hugging Face sliding_window W
     * (a query sees W keys, itself included) is (W - 1, 0). Ignored for the
     * other kinds. */
    int32_t window_left;
    int32_t window_right;
    /* Optional name of the layer's type, shown in plans and messages
     * ("linear_attention"); NULL = the kind's name. Not copied into the
     * registry: it only needs to live until attn_registry_plan returns. */
    const char *type_name;
} attn_layer;

/* Fills the defaults (full attention, window -1,-1, no name) into the first
 * struct_size bytes of *layer and sets layer->struct_size to it: pass
 * sizeof(attn_layer) as the caller knows it. */
ATTNREG_API void attn_layer_init(attn_layer *layer, uint32_t struct_size);
/* 0.3: the same with the growth rule's name and a size_t size. */
ATTNREG_API void attn_layer_init_sized(attn_layer *layer, size_t size);

/* The largest num_layers a model may have. */
#define ATTN_MODEL_MAX_LAYERS 65536

/* A whole model's attention as an engine is about to run it: the model's
 * own numbers (before tensor parallelism), the engine's choices (dtypes,
 * page size, tensor parallelism) and its capacities. Every phase of every
 * layer is planned from it. */
typedef struct attn_model {
    uint32_t struct_size;
    char arch[ATTN_ARCH_MAX]; /* target arch, as in attn_shape */
    int32_t num_q_heads;      /* the whole model's query heads (num_attention_heads) */
    int32_t num_kv_heads;     /* the whole model's KV heads; 0 = num_q_heads (MHA) */
    int32_t head_dim;
    int32_t head_dim_v; /* 0 = head_dim */
    int32_t num_layers; /* 1 .. ATTN_MODEL_MAX_LAYERS */
    /* num_layers layers, or NULL for "every layer full attention". The
     * array's stride is layers[0].struct_size (every element must carry the
     * same), so a host built against an older, smaller attn_layer works. */
    const attn_layer *layers;
    float softcap;     /* 0 = none; every attention layer */
    int32_t has_sinks; /* 1 = per-head sink logits on every attention layer */
    int32_t q_dtype;   /* attn_dtype, as in attn_shape */
    int32_t kv_dtype;
    int32_t compute_dtype;
    int32_t out_dtype;
    int32_t page_size;
    /* Tensor parallelism as vLLM and SGLang split heads: each of tp_size
     * ranks gets num_q_heads / tp_size query heads (tp_size must divide
     * them); KV heads are split the same way when num_kv_heads >= tp_size
     * (tp_size must divide them) and replicated, one per rank, when
     * tp_size > num_kv_heads (tp_size must be a multiple of them). Every rank
     * gets the same shapes, so one plan serves them all. */
    int32_t tp_size; /* 1 = no tensor parallelism */
    /* Capacities, not live lengths (decisions are made once, e.g. per
     * captured graph): every phase's max_kv_len is max_model_len; prefill's
     * max_q_len is min(max_prefill_tokens, max_model_len), decode's is 1 and
     * verify's (planned only when spec_tokens > 0) is spec_tokens + 1. */
    int32_t max_model_len;      /* no default: must be set (> 0) */
    int32_t max_prefill_tokens; /* the largest prefill chunk; 0 = max_model_len */
    int32_t spec_tokens;        /* speculative tokens verified per step; 0 = none */
    /* 0.4: the softmax scale every attention layer uses; 0 = head_dim^-1/2.
     * Not part of the shape (it does not decide the backend): every plan
     * entry reports it as the scale to pass to attn_backend_forward. On LP64
     * it fills 0.3's tail padding (sizeof stays 112), which attn_model_init
     * zeroes: a 0.3 host that called it, as it must, gets the default. */
    float scale;
} attn_model;

/* Fills the defaults into the first struct_size bytes of *model and sets
 * model->struct_size to it (pass sizeof(attn_model) as the caller knows it):
 * arch "cpu", 1 query head, MHA, head_dim 128, 1 layer of full attention
 * (layers NULL), no softcap, no sinks, every dtype bf16, page 16, tp 1,
 * max_model_len 0 (to be set), prefill chunk = max_model_len, no
 * speculative tokens. */
ATTNREG_API void attn_model_init(attn_model *model, uint32_t struct_size);
/* 0.3: the same with the growth rule's name and a size_t size. */
ATTNREG_API void attn_model_init_sized(attn_model *model, size_t size);

/* X(NAME, value, name): PREFILL, max_q_len = the prefill chunk; DECODE,
 * max_q_len = 1; VERIFY, max_q_len = spec_tokens + 1 (speculative decoding). */
#define ATTN_PHASE_MAP(X)                                                                          \
    X(PREFILL, 0, "prefill")                                                                       \
    X(DECODE, 1, "decode")                                                                         \
    X(VERIFY, 2, "verify")

typedef enum attn_phase {
#define ATTN_PHASE_ENUM_(NAME, value, name) ATTN_PHASE_##NAME = value,
    ATTN_PHASE_MAP(ATTN_PHASE_ENUM_)
#undef ATTN_PHASE_ENUM_
} attn_phase;
#define ATTN_PHASE_COUNT (0 ATTN_PHASE_MAP(ATTN_LIST_ONE_))

/* "prefill", "decode", "verify"; "unknown" otherwise. */
ATTNREG_API const char *attn_phase_name(int32_t phase);
/* "full", "sliding", "not_attention"; "unknown" otherwise. */
ATTNREG_API const char *attn_layer_kind_name(int32_t kind);

typedef struct attn_plan attn_plan; /* opaque, immutable */

/* Plans every (layer group, phase) of a model, where a layer group is the
 * set of layers with one kind and window (and, for layers that are not
 * attention, one type name). The model is validated first, whole and per
 * rank, before any plugin is asked: an invalid one gives
 * ATTN_ERR_INVALID_SHAPE, a plan without entries and the reason as message,
 * e.g. "requires num_heads (28) to be a multiple of num_kv_heads (6)" or
 * "requires num_heads (32) to be a multiple of tp (3)". Otherwise each
 * attention entry is decided by attn_registry_select on its per-rank shape
 * (so the cache, fallback rules, strict, forced and runnable modes apply as
 * for select), and layers that are not attention get entries without a
 * shape or selection.
 *
 * Returns ATTN_OK when every attention entry has a backend; otherwise the
 * status of the first entry that has none (ATTN_ERR_UNSUPPORTED,
 * ATTN_ERR_BACKEND_REJECTED, ATTN_ERR_NOT_FOUND), with every entry still
 * filled; ATTN_ERR_INVALID_SHAPE as above. *plan is set whenever the status
 * is one of those (free it with attn_plan_free); on ATTN_ERR_INVALID_ARGUMENT
 * (NULL, a struct_size too small, layers of unequal struct_size) and
 * ATTN_ERR_NO_MEMORY it is NULL. attn_last_error() has the message of a
 * failure. The plan owns its strings and shapes (valid until
 * attn_plan_free); a selection's candidate, which attn_backend_create takes,
 * is valid until the registry is closed. */
ATTNREG_API attn_status attn_registry_plan(attn_registry *registry, const attn_model *model,
                                           attn_plan **plan);
ATTNREG_API void attn_plan_free(attn_plan *plan);

/* The plan as a whole. Set struct_size before the call. */
typedef struct attn_plan_summary {
    uint32_t struct_size;
    attn_status status;  /* what attn_registry_plan returned */
    const char *message; /* "" when ATTN_OK; else the reason */
    size_t num_entries;  /* 0 for an invalid model */
    int32_t num_layers;
    int32_t tp_size;
    int32_t rank_q_heads;        /* query heads on each rank */
    int32_t rank_kv_heads;       /* KV heads on each rank */
    int32_t kv_heads_replicated; /* 1 when tp_size > num_kv_heads: ranks hold copies */
    int32_t prefill_q_len;       /* the phases' max_q_len; verify_q_len 0 = not planned */
    int32_t decode_q_len;
    int32_t verify_q_len;
    int32_t max_kv_len; /* max_model_len */
} attn_plan_summary;

ATTNREG_API attn_status attn_plan_summarize(const attn_plan *plan, attn_plan_summary *out);

/* One (layer group, phase). Entries come ordered by each group's first
 * layer, then by phase; every layer appears in exactly one entry of each
 * planned phase. */
typedef struct attn_plan_entry {
    uint32_t struct_size;
    int32_t phase;          /* attn_phase */
    int32_t layer_kind;     /* attn_layer_kind */
    const char *layer_type; /* the layers' type_name, else the kind's name */
    const int32_t *layers;  /* the layer indices, ascending */
    uint32_t num_layers;
    /* ATTN_OK: a backend was selected, or the layers are not attention (no
     * backend needed). Otherwise the selection's failure status. */
    attn_status status;
    const attn_shape *shape;         /* the per-rank shape asked; NULL when not attention */
    const attn_selection *selection; /* the decision (backend, effective shape, fallback rule
                                        and reason); NULL when not attention */
    const char *message;             /* "" when selected; the failure's reason; or, when not
                                        attention, why nothing is planned */
    /* 0.4: the softmax scale to pass to attn_backend_forward (the model's
     * scale, else head_dim^-1/2); 0 when not attention. */
    float scale;
    /* 0.4: selection->effective_shape (NULL when not attention). Hosts
     * whose attn_plan_entry ends before this field were built against the
     * 0.3 headers: their `selection` points at a selection in the 0.3
     * layout (attn_shape grew in 0.4 and moved the fields after
     * effective_shape), so their reads stay right. */
    const attn_shape *effective_shape;
} attn_plan_entry;

/* Fills entry `index` (0 .. num_entries - 1). */
ATTNREG_API attn_status attn_plan_entry_get(const attn_plan *plan, size_t index,
                                            attn_plan_entry *out);
/* The entry that covers `layer` in `phase`: what a host asks at run time
 * (ATTN_ERR_NOT_FOUND when the layer or phase is not in the plan). */
ATTNREG_API attn_status attn_plan_lookup(const attn_plan *plan, int32_t layer, int32_t phase,
                                         attn_plan_entry *out);

/* ---- reading a Hugging Face config.json (0.4) ------------------------ */

/* The model's attention as a Hugging Face config.json describes it, read by
 * the rules `attnreg plan --hf-config` follows (docs/DESIGN.md, "Reading a
 * Hugging Face config.json"), so an engine does not re-implement them:
 * heads (with the other families' key names: n_head, n_heads, num_kv_heads,
 * ...), head size, the kind and window of every layer (layer_types first,
 * else the pattern keys and the model-type rules), softcap, sinks and the
 * softmax scale, each derivation noted. Opaque and immutable. */
typedef struct attn_hf_config attn_hf_config;

/* Reads `path`. ATTN_OK with *config set (free it with attn_hf_config_free);
 * ATTN_ERR_IO when the file cannot be read; ATTN_ERR_INVALID_ARGUMENT when
 * it is not JSON or a key has the wrong type or range; ATTN_ERR_UNSUPPORTED
 * when the model's attention is something no backend here computes
 * (multi-head latent attention, block-sparse, chunked local attention,
 * ALiBi): never planned as full attention. attn_last_error() names the file
 * and the key. *config is NULL on failure. */
ATTNREG_API attn_status attn_hf_config_read(const char *path, attn_hf_config **config);
/* The same on `size` bytes of JSON text in memory (a binding's dict);
 * `name` stands for the file in messages (NULL = "config.json"). */
ATTNREG_API attn_status attn_hf_config_parse(const char *text, size_t size, const char *name,
                                             attn_hf_config **config);
ATTNREG_API void attn_hf_config_free(attn_hf_config *config);

/* What the config says besides the model's numbers. Set struct_size. */
typedef struct attn_hf_config_info {
    uint32_t struct_size;
    const char *model_type;          /* "" when the config names none */
    int32_t from_text_config;        /* 1: the numbers came from text_config */
    int32_t max_position_embeddings; /* 0 when the config has none */
    size_t num_notes;                /* sentences saying how values were derived */
} attn_hf_config_info;

ATTNREG_API attn_status attn_hf_config_describe(const attn_hf_config *config,
                                                attn_hf_config_info *info);
/* Note `index` (0 .. num_notes - 1), e.g. "num_attention_heads absent: n_head
 * 32 (the key of GPT-2, GPT-J, Bloom, Falcon)"; NULL past the end. Valid
 * until attn_hf_config_free. */
ATTNREG_API const char *attn_hf_config_note(const attn_hf_config *config, size_t index);

/* Writes the model's own numbers into *model (set up with attn_model_init
 * and the engine's choices first): num_q_heads, num_kv_heads, head_dim,
 * num_layers, layers (owned by config: keep it until attn_registry_plan
 * returns), softcap, has_sinks, scale, and max_model_len from
 * max_position_embeddings when model->max_model_len is 0 and the config has
 * it. Then checks what the model itself decides, as attn_registry_plan
 * would (heads that divide, head size, the tensor-parallel split of
 * model->tp_size, the layers): ATTN_ERR_INVALID_SHAPE with the reason in
 * attn_last_error(), so a host learns that a model is invalid before it is
 * asked for a max_model_len the config lacks. ATTN_OK otherwise, even when
 * max_model_len is still 0 (attn_registry_plan then refuses it). */
ATTNREG_API attn_status attn_hf_config_apply(const attn_hf_config *config, attn_model *model);

/* ---- backends ------------------------------------------------------- */

/* Construct the selected backend for selection->effective_shape. Checks that
 * the binary holds code for the arch (ATTN_ERR_ARCH_NOT_IN_BINARY, naming the
 * archs it holds; ATTN_ERR_NO_KERNELS when it holds none) and that a device is
 * present (ATTN_ERR_NO_DEVICE), then calls the plugin's constructor. */
ATTNREG_API attn_status attn_backend_create(attn_registry *registry,
                                            const attn_selection *selection,
                                            attn_backend **backend);
/* 0.3: a zeroed forward_args (descales 1: none) and batch limits in the
 * caller's `size` bytes, struct_size set; the macros pass sizeof *p. */
ATTNREG_API void attn_forward_args_init_sized(attn_forward_args *args, size_t size);
#define attn_forward_args_init(args) attn_forward_args_init_sized((args), sizeof *(args))
ATTNREG_API void attn_batch_limits_init_sized(attn_batch_limits *limits, size_t size);
#define attn_batch_limits_init(limits) attn_batch_limits_init_sized((limits), sizeof *(limits))
ATTNREG_API attn_status attn_backend_workspace_size(const attn_backend *backend,
                                                    const attn_batch_limits *limits, size_t *bytes);
ATTNREG_API attn_status attn_backend_forward(attn_backend *backend, const attn_forward_args *args);
/* 0.4: writes new tokens' K and V into the paged cache at their slots,
 * converted to the backend's kv_dtype (attn_append_args, attn_types.h), on
 * args->stream. ATTN_ERR_UNSUPPORTED when the backend has no KV append;
 * ATTN_ERR_INVALID_ARGUMENT naming the field or token otherwise wrong. */
ATTNREG_API attn_status attn_backend_append_kv(attn_backend *backend, const attn_append_args *args);
/* Defaults (nothing to append, k_scale = v_scale = 1) into the caller's
 * `size` bytes; attn_append_args_init(a) passes sizeof *a. */
ATTNREG_API void attn_append_args_init_sized(attn_append_args *args, size_t size);
#define attn_append_args_init(args) attn_append_args_init_sized((args), sizeof *(args))
ATTNREG_API void attn_backend_destroy(attn_backend *backend);
ATTNREG_API const char *attn_backend_name(const attn_backend *backend);
ATTNREG_API const attn_shape *attn_backend_shape(const attn_backend *backend);

/* ---- merging partial attention states (0.4; on a backend: 0.5) ------ */

/* attn_merge_args (the two states, their log-sum-exps and where the merged
 * one goes) is in attn_types.h since 0.5, so that plugins merge too. */

/* Host memory only (a CPU merge; device arrays are merged by the backend
 * whose device holds them: attn_backend_merge_states). args->stream is
 * ignored. ATTN_ERR_INVALID_ARGUMENT with attn_last_error() naming the field
 * for NULL arrays, negative counts or strides, an unsupported dtype or a
 * struct_size below ATTN_MERGE_ARGS_SIZE_0_4. */
ATTNREG_API attn_status attn_merge_states(const attn_merge_args *args);
/* 0.5: the same merge by a backend, in its memory space (device arrays of a
 * GPU backend; host memory for cpu-ref) and on args->stream, as engines
 * merge where their attention runs. The arguments are checked as
 * attn_merge_states checks them (ATTN_ERR_INVALID_ARGUMENT naming the field);
 * ATTN_ERR_UNSUPPORTED, with attn_last_error() naming the plugin, when the
 * backend's plugin has no merge_states (every plugin older than ABI 1.4, and
 * those that add none). With the entry, nothing to merge (num_tokens 0)
 * returns ATTN_OK without calling the plugin. */
ATTNREG_API attn_status attn_backend_merge_states(attn_backend *backend,
                                                  const attn_merge_args *args);
/* Zeroes into the caller's `size` bytes and sets struct_size;
 * attn_merge_args_init(m) passes sizeof *m. */
ATTNREG_API void attn_merge_args_init_sized(attn_merge_args *args, size_t size);
#define attn_merge_args_init(args) attn_merge_args_init_sized((args), sizeof *(args))

/* ---- struct layouts (for bindings) ---------------------------------- */

/* The layout of the public structs as this library was compiled, so that a
 * binding that mirrors them (ctypes, cffi, another language's FFI) can check
 * every field before its first call. Struct names are the typedef names
 * ("attn_shape", "attn_forward_args", ...: every struct of attn_types.h and
 * this header), field names the member names.
 *
 * attn_struct_size: sizeof the struct; 0 for a name that is not a public
 * struct. attn_struct_layout: ATTN_OK with the field's offset and size;
 * ATTN_ERR_NOT_FOUND (attn_last_error() names the struct or field) for an
 * unknown struct or field; ATTN_ERR_INVALID_ARGUMENT for NULL pointers.
 * attn_struct_field_name: the index-th field in declaration order; NULL past
 * the last one or for an unknown struct. */
ATTNREG_API size_t attn_struct_size(const char *struct_name);
ATTNREG_API attn_status attn_struct_layout(const char *struct_name, const char *field_name,
                                           size_t *offset, size_t *size);
ATTNREG_API const char *attn_struct_field_name(const char *struct_name, size_t index);

/* ---- conf folders' origins (0.3) ------------------------------------ */

/* Where conf folder `index` came from: "option" (conf_paths),
 * "ATTNREG_CONF_PATH", "sysconf" (<sysconfdir>/attnreg/conf.d) or "datadir"
 * (the shipped <datadir>/attnreg/conf); NULL for a bad index. Default
 * folders are listed even when absent. */
ATTNREG_API const char *attn_registry_conf_path_origin(const attn_registry *registry, size_t index);

#ifdef __cplusplus
}
#endif

#endif /* ATTNREG_H */
