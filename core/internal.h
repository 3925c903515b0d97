/* SPDX-License-Identifier: Apache-2.0 */
/*
 * internal.h — data structures shared by the core's modules. Nothing here is
 * part of the ABI; hosts see only the opaque handles of attnreg.h.
 */
#ifndef ATTNREG_CORE_INTERNAL_H
#define ATTNREG_CORE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdatomic.h>

#include "attn_plugin.h"
#include "attnreg.h"

/* ---- small utilities (util.c) ---------------------------------------- */

char *attn_strdup(const char *s);
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
char *
attn_asprintf(const char *fmt, ...);
#if defined(__GNUC__)
__attribute__((format(printf, 1, 0)))
#endif
char *
attn_vasprintf(const char *fmt, va_list ap);

/* A growable byte string. */
typedef struct strbuf {
    char *data;
    size_t len;
    size_t cap;
} strbuf;
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void strbuf_printf(strbuf *sb, const char *fmt, ...);
char *strbuf_take(strbuf *sb); /* returns the string (never NULL), resets sb */

/* Sets the thread's attn_last_error() text and returns status. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
attn_status
attn_fail(attn_status status, const char *fmt, ...);
void attn_clear_error(void);

/* Formats why something is invalid into msg (when msg and size allow) and
 * returns 0: the "invalid" verdict of the validators. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
int
attn_invalid(char *msg, size_t size, const char *fmt, ...);

/* The checks of attn_registry_plan that depend on the model alone (heads,
 * head size, scale, tensor parallelism, layer count), not on its
 * capacities: 1 = valid, else 0 with the reason in msg (plan.c). */
int attn_model_check_own(const attn_model *model, char *msg, size_t size);

/* The boundary checks of a merge (merge.c), shared by attn_merge_states and
 * attn_backend_merge_states: refuses (ATTN_ERR_INVALID_ARGUMENT, the sentence
 * starting with `who`) a NULL or too-small struct, bad counts, dtype,
 * strides and, when num_tokens > 0, NULL arrays; on ATTN_OK *full is the
 * caller's struct in today's layout (struct_size = sizeof *full; fields a
 * 0.4 caller lacks are zero). */
attn_status attn_merge_check(const char *who, const attn_merge_args *in, attn_merge_args *full);

/* Copy min(dst_size, src_size) bytes of a versioned struct; zero the rest. */
void attn_copy_versioned(void *dst, uint32_t dst_size, const void *src, size_t src_size);
/* The body of every attn_*_init_sized: writes `full` (the library's struct,
 * defaults filled in) into the caller's `size` bytes, no more, and sets the
 * caller's struct_size to `size`; nothing for a NULL dst or a size that
 * cannot hold struct_size. */
void attn_init_sized(void *dst, size_t size, const void *full, size_t full_size);
/* Writes a selection in today's layout into `out` in the layout its
 * struct_size names (0.1's, 0.3's, today's or a newer host's) (select.c). */
void attn_selection_to_layout(const attn_selection *full, attn_selection *out);

/* A hash map from a pair of strings (b may be NULL) to an index (strmap.c).
 * Keys are not copied: they must outlive the map (or be owned by it and
 * freed with strmap_free(m, 1)). */
typedef struct strmap_slot {
    uint64_t hash;
    const char *k1; /* NULL = empty slot */
    const char *k2;
    size_t value;
} strmap_slot;
typedef struct strmap {
    strmap_slot *slots;
    size_t cap; /* a power of two */
    size_t len;
} strmap;
const strmap_slot *strmap_find(const strmap *m, const char *a, const char *b);
/* 1 inserted, 0 present already (*found is the existing slot), -1 no memory. */
int strmap_put(strmap *m, const char *a, const char *b, size_t value, const strmap_slot **found);
void strmap_free(strmap *m, int free_keys);

/* The layer of a reason code (attn_types.h's ATTN_REASON_MAP); NONE for an
 * unknown code. */
static inline attn_reason_layer attn_reason_layer_of(int32_t reason)
{
    switch (reason) {
#define ATTN_REASON_LAYER_CASE_(NAME, value, LAYER)                                                \
    case value:                                                                                    \
        return ATTN_REASON_LAYER_##LAYER;
        ATTN_REASON_MAP(ATTN_REASON_LAYER_CASE_)
#undef ATTN_REASON_LAYER_CASE_
    default:
        return ATTN_REASON_LAYER_NONE;
    }
}

/* The reason codes a plugin's predicate may give. */
static inline int attn_reason_is_plugin(int32_t reason)
{
    return attn_reason_layer_of(reason) == ATTN_REASON_LAYER_PLUGIN;
}

/* Seconds a plugin may take to load in the probing child (plugin.c). */
#define ATTN_PROBE_TIMEOUT_DEFAULT_S 30

/* ---- logging (log.c) ------------------------------------------------- */

typedef struct attn_logger {
    attn_log_fn fn; /* NULL = the default sink: `file`, else stderr */
    void *user;
    attn_log_level level;
    unsigned id; /* the registry instance, 1, 2, ... in opening order */
    FILE *file;  /* ATTNREG_LOG_FILE, opened for appending; NULL = stderr */
} attn_logger;

/* One event, one line. The host's callback gets the message alone; the
 * default sink writes `attnreg: LEVEL: reg=ID plugin=NAME: message` (no
 * plugin= part when `plugin` is NULL), with line breaks inside the message
 * folded into "; ". */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void attn_log(const attn_logger *logger, attn_log_level level, const char *fmt, ...);
#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
void attn_log_plugin(const attn_logger *logger, attn_log_level level, const char *plugin,
                     const char *fmt, ...);
int attn_log_level_from_name(const char *name, attn_log_level *out);

/* ---- shapes (shape.c) ------------------------------------------------ */

/* Reads a host shape of any struct_size into a full one (missing fields get
 * attn_shape_init's defaults) with arch zero-padded and "0 = same as" fields
 * kept as given, so equal shapes compare equal byte for byte. */
attn_status attn_shape_normalize(const attn_shape *in, attn_shape *out);
uint64_t attn_shape_hash(const attn_shape *shape);

/* The fields (and derived properties) of a shape that conf narrowing keys
 * and fallback rules name: X(ID, name, value), name being how messages and
 * fallback rules write it (a dtype field's is its member name) and value its
 * int32 value as an expression of `s` (const attn_shape *). The enum, the
 * names and attn_shape_field_get are generated from it (shape.c). */
#define ATTN_SHAPE_PROPERTY_MAP(X)                                                                 \
    X(Q_DTYPE, "q_dtype", s->q_dtype)                                                              \
    X(KV_DTYPE, "kv_dtype", s->kv_dtype)                                                           \
    X(COMPUTE_DTYPE, "compute_dtype", s->compute_dtype)                                            \
    X(OUT_DTYPE, "out_dtype", s->out_dtype)                                                        \
    X(HEAD_DIM, "head_dim", s->head_dim)                                                           \
    X(GQA_RATIO, "gqa_ratio", s->num_q_heads / attn_shape_kv_heads(s))                             \
    X(PAGE_SIZE, "page_size", s->page_size)                                                        \
    X(Q_LEN, "max_q_len", s->max_q_len)                                                            \
    X(KV_LEN, "max_kv_len", s->max_kv_len)                                                         \
    X(WINDOW, "window", s->window_left >= 0 || s->window_right >= 0)                               \
    X(SOFTCAP, "softcap", s->softcap != 0.0f)                                                      \
    X(SINKS, "sinks", s->has_sinks)                                                                \
    X(NON_CAUSAL, "non-causal masking", !s->causal)
typedef enum shape_field {
#define SHAPE_PROPERTY_ENUM_(ID, name, value) FIELD_##ID,
    ATTN_SHAPE_PROPERTY_MAP(SHAPE_PROPERTY_ENUM_)
#undef SHAPE_PROPERTY_ENUM_
} shape_field;
/* Their names in messages ("q_dtype", "max_q_len", "non-causal masking"). */
const char *attn_field_name(shape_field field);
int32_t attn_shape_field_get(const attn_shape *s, shape_field field);
/* Fallback rules rewrite the fields of ATTN_FALLBACK_FIELD_MAP only (below);
 * the others are left as they are. */
void attn_shape_field_set(attn_shape *s, shape_field field, int32_t value);

/* ---- conf (conf.c) --------------------------------------------------- */

/* The keys of a conf file's sections, each list written once: conf.c reads
 * them, and attnreg.conf(5) and the docs are checked against them
 * (tests/lists). Both kinds of file start with a format_version; load_file
 * reads it first. [plugin]: X(ID, key). */
#define ATTN_CONF_FORMAT_VERSION_KEY "format_version"
#define ATTN_CONF_PLUGIN_KEY_MAP(X)                                                                \
    X(FORMAT_VERSION, ATTN_CONF_FORMAT_VERSION_KEY)                                                \
    X(NAME, "name")                                                                                \
    X(LIBRARY, "library")                                                                          \
    X(PRIORITY, "priority")                                                                        \
    X(ENABLED, "enabled")                                                                          \
    X(ARCHS, "archs")
/* [narrow]: X(key, KIND, FIELD), a narrow_rule of kind NARROW_<KIND> on the
 * shape property FIELD_<FIELD>. */
#define ATTN_CONF_NARROW_KEY_MAP(X)                                                                \
    X("q_dtypes", DTYPES, Q_DTYPE)                                                                 \
    X("kv_dtypes", DTYPES, KV_DTYPE)                                                               \
    X("compute_dtypes", DTYPES, COMPUTE_DTYPE)                                                     \
    X("out_dtypes", DTYPES, OUT_DTYPE)                                                             \
    X("head_dims", INTS, HEAD_DIM)                                                                 \
    X("gqa_ratios", INTS, GQA_RATIO)                                                               \
    X("page_sizes", INTS, PAGE_SIZE)                                                               \
    X("min_q_len", MIN, Q_LEN)                                                                     \
    X("max_q_len", MAX, Q_LEN)                                                                     \
    X("min_kv_len", MIN, KV_LEN)                                                                   \
    X("max_kv_len", MAX, KV_LEN)                                                                   \
    X("allow_window", FEATURE, WINDOW)                                                             \
    X("allow_softcap", FEATURE, SOFTCAP)                                                           \
    X("allow_sinks", FEATURE, SINKS)                                                               \
    X("allow_non_causal", FEATURE, NON_CAUSAL)
/* [registry]: X(ID, key). */
#define ATTN_CONF_REGISTRY_KEY_MAP(X) X(FORMAT_VERSION, ATTN_CONF_FORMAT_VERSION_KEY)
/* [fallback:NAME]: X(ID, key). */
#define ATTN_CONF_FALLBACK_KEY_MAP(X)                                                              \
    X(FIELD, "field")                                                                              \
    X(FROM, "from")                                                                                \
    X(TO, "to")
/* The words of a boolean value (enabled, allow_*), in any case: X(word,
 * value). */
#define ATTN_CONF_BOOL_MAP(X)                                                                      \
    X("true", 1)                                                                                   \
    X("false", 0)                                                                                  \
    X("yes", 1)                                                                                    \
    X("no", 0)                                                                                     \
    X("on", 1)                                                                                     \
    X("off", 0)                                                                                    \
    X("1", 1)                                                                                      \
    X("0", 0)
/* The shape properties a fallback rule's `field` may name (by
 * attn_field_name): X(FIELD, member), the dtype fields, which
 * attn_shape_field_set writes. */
#define ATTN_FALLBACK_FIELD_MAP(X)                                                                 \
    X(Q_DTYPE, q_dtype)                                                                            \
    X(KV_DTYPE, kv_dtype)                                                                          \
    X(COMPUTE_DTYPE, compute_dtype)                                                                \
    X(OUT_DTYPE, out_dtype)

typedef enum narrow_kind {
    NARROW_DTYPES, /* field must be one of a dtype mask */
    NARROW_INTS,   /* field must be one of a list of ints */
    NARROW_MIN,    /* field >= value */
    NARROW_MAX,    /* field <= value */
    NARROW_FEATURE /* a feature (window, softcap, sinks, non-causal) allowed or not */
} narrow_kind;

typedef struct narrow_rule {
    char *key;
    int32_t line;
    narrow_kind kind;
    shape_field field;
    uint32_t dtype_mask;
    int32_t *values;
    uint32_t num_values;
    int32_t limit;
    int32_t allowed;
} narrow_rule;

typedef struct fallback_rule {
    char *name;
    char *conf_file;
    int32_t line;
    shape_field field; /* one of the dtype fields */
    int32_t from;
    int32_t to;
    char *text; /* "compute_dtype fp8_e4m3fn -> bf16" */
} fallback_rule;

typedef enum load_state { LOAD_NOT_TRIED = 0, LOAD_OK = 1, LOAD_FAILED = 2 } load_state;

struct attn_registry;

struct attn_candidate {
    struct attn_registry *registry;
    char *name;
    int32_t priority;
    int32_t enabled;
    char *archs_text;
    char **archs;
    uint32_t num_archs;
    char *library;
    char *conf_file;
    int32_t name_line;
    int32_t enabled_line;
    int32_t archs_line;
    narrow_rule *narrow;
    uint32_t num_narrow;
    attn_param *params;
    uint32_t num_params;
    int32_t host_disabled; /* option or ATTNREG_DISABLE */

    /* Lazy loading: state is read lock-free (acquire); everything below is
     * written once under load_lock before state becomes LOAD_OK/FAILED. */
    pthread_mutex_t load_lock;
    _Atomic int load_state;
    void *dl_handle;
    attn_plugin_descriptor desc; /* zero-filled copy of the plugin's descriptor */
    attn_plugin_context ctx;
    attn_host_services services;
    attn_status load_status;
    int32_t load_reason;
    char *load_message;
    char *built_archs_text;
    attn_arch_limits *arch_limits; /* the host's checked copy of desc.arch_limits */
    uint32_t num_arch_limits;
    int32_t initialised;

    /* Device probe, done once (under load_lock). */
    int32_t probed;
    attn_status probe_status;
    char *probe_message;
    attn_device_info *devices;
    uint32_t num_devices;
};

typedef struct conf_diag {
    attn_status status;
    char *file;
    int32_t line;
    char *plugin;
    char *message;
} conf_diag;

/* ---- decisions (select.c) and their cache (cache.c) --------------------- */

typedef struct verdict_rec {
    int32_t pass;
    const attn_candidate *candidate;
    int32_t accepted;
    int32_t selected;
    int32_t reason;
    char *message;
    const char *predicate; /* static string or descriptor-owned */
    const char *conf_file;
    int32_t conf_line;
} verdict_rec;

/* The outcome of one selection; immutable once built. */
typedef struct decision {
    attn_status status;
    const attn_candidate *winner;
    attn_shape effective;
    int32_t fallback_applied;
    char *fallback_rule;
    const char *fallback_backend;
    int32_t fallback_reason;
    char *fallback_message;
    char *message;
} decision;

struct attn_explanation {
    verdict_rec *records;
    size_t num_records;
    size_t cap_records;
    attn_shape *pass_shapes;
    char **pass_rules;
    size_t num_passes;
    decision result;
};

#define ATTN_CACHE_BUCKETS 1024
#define ATTN_CACHE_MAX_ENTRIES 65536

typedef struct cache_node {
    attn_shape key;
    uint64_t hash;
    decision result;
    struct cache_node *next;
} cache_node;

/* ---- the registry (registry.c) --------------------------------------- */

struct attn_registry {
    attn_logger logger;
    int32_t probe_out_of_process;
    int32_t probe_timeout_s; /* how long a probing child may take (ATTNREG_PROBE_TIMEOUT) */
    int32_t strict;
    int32_t runnable;
    char *forced_backend;
    char **conf_paths;
    const char **conf_path_origins; /* static strings: option, ATTNREG_CONF_PATH, ... */
    size_t num_conf_paths;

    attn_candidate **candidates; /* sorted: priority desc, name asc */
    size_t num_candidates;
    size_t cap_candidates;
    strmap candidate_names; /* name -> index while the conf is read (unsorted) */
    fallback_rule *rules;
    size_t num_rules;
    size_t cap_rules;

    conf_diag *diags;
    size_t num_diags;
    pthread_mutex_t diag_lock;

    _Atomic(cache_node *) cache[ATTN_CACHE_BUCKETS];
    pthread_mutex_t cache_lock; /* serialises inserts; reads take no lock */
    int32_t cache_entries;      /* under cache_lock */
    int32_t cache_full_warned;  /* under cache_lock */
    strmap interned;            /* strings of uncached decisions; under cache_lock */

    /* Backends alive; a close while there are some is finished by the last
     * attn_backend_destroy. */
    pthread_mutex_t life_lock;
    size_t live_backends;
    int32_t close_pending;
};

/* fsafe.c: opens `path` read-only when it is a regular file (no FIFO,
 * device, directory; a FIFO does not block the open) and fills *st; -1 with
 * a sentence in why otherwise. */
struct stat;
int attn_open_regular(const char *path, struct stat *st, char *why, size_t size);
/* fsafe.c: opens `path` for appending (created 0644 if absent) when it is a
 * regular file, O_CLOEXEC; -1 with the reason in `why` otherwise. */
int attn_open_append_regular(const char *path, char *why, size_t size);
/* Judges a conf folder, conf file or plugin library by its owner and mode:
 * 0 fine; writable by others or owned by another user: a warning diagnostic
 * (1) in a normal process, a refusal with refuse_status (-1) in a privileged
 * one, where group-writable is refused too. */
int attn_trust_check(struct attn_registry *reg, const struct stat *st, const char *path,
                     const char *what, const char *plugin, attn_status refuse_status);

/* plugin.c: the part of a load after the library file was checked (and
 * probed): dlopen, the entry symbol, ABI negotiation, descriptor checks,
 * init. 1 loaded; 0 with the reason recorded on the candidate. */
int attn_candidate_load_library(attn_candidate *c);
/* probe.c: loads the candidate once in a fresh child process (the helper
 * below, run from <libdir>/attnreg/); 1 when the child finished loading
 * (whether or not the load succeeded: an ordinary failure repeats, and is
 * reported, in process), 0 with the sentence in msg when it died, hung or
 * could not be run. */
int attn_probe_in_child(attn_candidate *c, char *msg, size_t size);
#define ATTN_PROBE_HELPER_NAME "attnreg-probe"
/* probe_helper.c: the helper program's main (core/probe_main.c), exported for it
 * alone; not part of the API. */
ATTNREG_API int attn_probe_helper_main(int argc, char **argv);

/* conf.c -- read every INI of one folder into the registry. */
void attn_conf_load_dir(struct attn_registry *reg, const char *dir, int explicit_path);
void attn_conf_free_rule(fallback_rule *r);

/* plugin.c: lazy loading */
int attn_candidate_ensure_loaded(attn_candidate *c); /* 1 when LOAD_OK */
void attn_candidate_unload(attn_candidate *c);
int attn_candidate_has_built_arch(const attn_candidate *c, const char *arch);
/* Probe once; returns the status and fills the candidate-owned device list. */
attn_status attn_candidate_probe(attn_candidate *c);
/* Whether the loaded candidate can run `arch` on this machine: code for it in
 * the binary and a device of that arch. ATTN_OK, or ATTN_ERR_NO_KERNELS /
 * ATTN_ERR_ARCH_NOT_IN_BINARY / ATTN_ERR_NO_DEVICE with a sentence in msg.
 * Shared by runnable-mode selection and attn_backend_create. */
attn_status attn_candidate_can_run(attn_candidate *c, const char *arch, char *msg, size_t size);

/* env.c: warns once per process about ATTNREG_* variables nobody reads. */
void attn_env_check_once(const attn_logger *logger);
/* env.c: every ATTNREG_* read of the library. NULL when unset or when the
 * process is privileged (setuid/setgid, capabilities: AT_SECURE), so that a
 * user cannot steer a privileged host's conf path, backend or log. */
const char *attn_env_get(const char *name);
int attn_process_privileged(void);

/* registry.c: a backend was created / destroyed (the last destroy after a
 * close frees the registry). */
void attn_registry_backend_created(struct attn_registry *reg);
void attn_registry_backend_destroyed(struct attn_registry *reg);

#endif /* ATTNREG_CORE_INTERNAL_H */
