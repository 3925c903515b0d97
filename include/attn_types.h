/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_types.h — the types shared by hosts (attnreg.h) and plugin authors
 * (attn_plugin.h). It depends on nothing but the C standard headers, so a
 * third-party plugin can be built from include/ alone.
 *
 * Growth rule: every struct that crosses the boundary starts with a
 * `struct_size` field that the writer fills with sizeof() as it knows it.
 * Fields are only ever appended; a reader uses a field only when
 * struct_size covers it. Enum values are never renumbered.
 */
#ifndef ATTN_TYPES_H
#define ATTN_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI's lists, each written once (libuv's UV_ERRNO_MAP idea): every
 * enum, count, name table and class map below and in the library, the CLI
 * and the Python package is generated from these X-macros. Adding a status,
 * a reason or a dtype is one line here, appended with the next value.
 * Values are explicit and never renumbered. */

/* The classes a status falls into: what a host does about a status depends
 * on its class only. X(CLASS, name, exit_code): exit_code is the exit status
 * of the attnreg command for a status of the class (cli/cli.h's CLI_EXIT_*);
 * the Python package raises one exception class per class. */
#define ATTN_STATUS_CLASS_MAP(X)                                                                   \
    X(OK, "ok", 0)                                                                                 \
    X(INVALID_SHAPE, "invalid_shape", 3)                                                           \
    X(UNSUPPORTED, "unsupported", 4)                                                               \
    X(BACKEND_REJECTED, "backend_rejected", 5)                                                     \
    X(CONF, "conf", 6)                                                                             \
    X(BACKEND, "backend", 7)                                                                       \
    X(IO, "io", 9)                                                                                 \
    X(INTERNAL, "internal", 10)

typedef enum attn_status_class {
#define ATTN_STATUS_CLASS_ENUM_(CLASS, name, exit_code) ATTN_STATUS_CLASS_##CLASS,
    ATTN_STATUS_CLASS_MAP(ATTN_STATUS_CLASS_ENUM_)
#undef ATTN_STATUS_CLASS_ENUM_
} attn_status_class;

/* Status codes. Stable: the numeric values and the names returned by
 * attn_status_name() never change. X(NAME, value, CLASS, message): the
 * enumerator is ATTN_<NAME>, attn_status_name() gives "ATTN_<NAME>",
 * attn_status_message() the message. INVALID_ARGUMENT is a caller's bug (a
 * NULL pointer, a bad struct_size, ...), hence class INTERNAL. */
#define ATTN_STATUS_MAP(X)                                                                         \
    X(OK, 0, OK, "success")                                                                        \
    X(ERR_INVALID_ARGUMENT, 1, INTERNAL,                                                           \
      "an argument is invalid (NULL pointer or bad struct_size)")                                  \
    X(ERR_INVALID_SHAPE, 2, INVALID_SHAPE, "the shape is invalid: no backend could ever run it")   \
    X(ERR_UNSUPPORTED, 3, UNSUPPORTED, "no enabled backend supports the shape")                    \
    X(ERR_BACKEND_REJECTED, 4, BACKEND_REJECTED, "the forced backend rejects the shape")           \
    X(ERR_NOT_FOUND, 5, BACKEND_REJECTED, "no backend of that name is registered")                 \
    X(ERR_CONF, 6, CONF, "a conf file is malformed")                                               \
    X(ERR_LOAD, 7, BACKEND, "a plugin library could not be loaded")                                \
    X(ERR_ABI, 8, BACKEND, "a plugin's ABI is incompatible with this host")                        \
    X(ERR_NO_MEMORY, 9, INTERNAL, "out of memory")                                                 \
    X(ERR_NO_DEVICE, 10, BACKEND, "no device for this arch is present")                            \
    X(ERR_ARCH_NOT_IN_BINARY, 11, BACKEND, "the plugin binary holds no code for the arch")         \
    X(ERR_NO_KERNELS, 12, BACKEND, "the plugin was built without GPU kernels")                     \
    X(ERR_CREATE_FAILED, 13, BACKEND, "the backend's constructor refused the shape")               \
    X(ERR_RUNTIME, 14, BACKEND, "a device runtime call failed")                                    \
    X(ERR_WORKSPACE_TOO_SMALL, 15, BACKEND, "the workspace passed to forward is too small")        \
    X(ERR_INIT_FAILED, 16, BACKEND, "the plugin's init hook failed")                               \
    X(ERR_IO, 17, IO, "a file could not be read or written")                                       \
    X(ERR_INTERNAL, 18, INTERNAL, "internal error in attnreg")

/* For counting the entries of a list: (0 ATTN_LIST_ONE_ ...) is a constant
 * expression, usable in #if and array sizes. */
#define ATTN_LIST_ONE_(...) +1

typedef enum attn_status {
#define ATTN_STATUS_ENUM_(NAME, value, CLASS, message) ATTN_##NAME = value,
    ATTN_STATUS_MAP(ATTN_STATUS_ENUM_)
#undef ATTN_STATUS_ENUM_
} attn_status;
#define ATTN_STATUS_COUNT (0 ATTN_STATUS_MAP(ATTN_LIST_ONE_))

/* Element types. ATTN_DTYPE_INVALID (0) is never a valid choice.
 * X(NAME, value, spelling, bytes, fp8): the enumerator ATTN_DTYPE_<NAME>, its
 * spelling in conf files, the CLI, JSON and messages, the bytes of one
 * element, and 1 for the FP8 formats (e4m3fn: OCP, NVIDIA sm_89+ and gfx950;
 * e4m3fnuz, without negative zero: gfx942). */
#define ATTN_DTYPE_MAP(X)                                                                          \
    X(INVALID, 0, "invalid", 0, 0)                                                                 \
    X(F32, 1, "f32", 4, 0)                                                                         \
    X(F16, 2, "f16", 2, 0)                                                                         \
    X(BF16, 3, "bf16", 2, 0)                                                                       \
    X(FP8_E4M3FN, 4, "fp8_e4m3fn", 1, 1)                                                           \
    X(FP8_E4M3FNUZ, 5, "fp8_e4m3fnuz", 1, 1)

typedef enum attn_dtype {
#define ATTN_DTYPE_ENUM_(NAME, value, spelling, bytes, fp8) ATTN_DTYPE_##NAME = value,
    ATTN_DTYPE_MAP(ATTN_DTYPE_ENUM_)
#undef ATTN_DTYPE_ENUM_
} attn_dtype;
#define ATTN_DTYPE_COUNT (0 ATTN_DTYPE_MAP(ATTN_LIST_ONE_))

/* What the list says of one dtype; attn_dtype_traits_of gives the INVALID
 * row for unknown codes. Inline, with the helpers below, so that plugins,
 * which do not link libattnreg, read dtypes exactly as the registry does. */
typedef struct attn_dtype_traits {
    const char *spelling;
    uint32_t bytes;
    int32_t fp8;
} attn_dtype_traits;

static inline const attn_dtype_traits *attn_dtype_traits_of(int32_t dtype)
{
    /* In list order: the values are the positions (core/status.c checks). */
    static const attn_dtype_traits table[] = {
#define ATTN_DTYPE_ROW_(NAME, value, spelling, bytes, fp8) {spelling, bytes, fp8},
        ATTN_DTYPE_MAP(ATTN_DTYPE_ROW_)
#undef ATTN_DTYPE_ROW_
    };
    return dtype > 0 && dtype < ATTN_DTYPE_COUNT ? &table[dtype] : &table[0];
}

/* The spelling of a dtype in conf files, the CLI and messages ("bf16",
 * "fp8_e4m3fn", ...); "invalid" for anything else. */
static inline const char *attn_dtype_spelling(int32_t dtype)
{
    return attn_dtype_traits_of(dtype)->spelling;
}

/* Bytes of one element of a dtype; 0 for ATTN_DTYPE_INVALID and unknown
 * codes (host API 0.3). */
static inline size_t attn_dtype_size(int32_t dtype)
{
    return attn_dtype_traits_of(dtype)->bytes;
}

/* 1 for the FP8 dtypes, 0 otherwise (host API 0.3). */
static inline int attn_dtype_is_fp8(int32_t dtype)
{
    return attn_dtype_traits_of(dtype)->fp8;
}

/* The layers a reason belongs to: which part of a decision may give it.
 * X(LAYER, name). NONE: accepted. CONF: what the INI (or the host) says,
 * decided without loading the library. LOAD: loading and negotiation.
 * PLUGIN: the codes a plugin's predicates may give. RUNNABLE: runnable mode's
 * binary and device checks. HOST: the host's own record of a misbehaving
 * plugin. Conf, load, runnable and host codes are the host's to give. */
#define ATTN_REASON_LAYER_MAP(X)                                                                   \
    X(NONE, "none")                                                                                \
    X(CONF, "conf")                                                                                \
    X(LOAD, "load")                                                                                \
    X(PLUGIN, "plugin")                                                                            \
    X(RUNNABLE, "runnable")                                                                        \
    X(HOST, "host")

typedef enum attn_reason_layer {
#define ATTN_REASON_LAYER_ENUM_(LAYER, name) ATTN_REASON_LAYER_##LAYER,
    ATTN_REASON_LAYER_MAP(ATTN_REASON_LAYER_ENUM_)
#undef ATTN_REASON_LAYER_ENUM_
} attn_reason_layer;

/* Why a candidate was rejected. Stable codes; attn_reason_name() gives the
 * stable machine-readable name, NAME ("Q_LEN", ...). X(NAME, value, LAYER):
 *   DISABLED: enabled = false in its INI; DISABLED_BY_HOST: a host option or
 *   ATTNREG_DISABLE; ARCH_NOT_LISTED: the arch is not in the INI's archs;
 *   NARROWED: an INI narrowing key excludes the shape.
 *   LOAD_FAILED: file missing, dlopen error; ABI_MISMATCH: major differs or
 *   minor newer than the host; BAD_DESCRIPTOR: NULL or malformed.
 *   FP8_COMPUTE_MHA_ONLY: FP8 compute needs num_q_heads == num_kv_heads.
 *   INVALID_REASON (0.3): the host's record of a predicate that answered
 *   with a code outside the plugin layer.
 *   RESOURCE (0.3): no launch plan of the kernels fits the arch's limits
 *   (shared memory / LDS, threads, registers).
 *   LSE (0.4): the shape asks for the log-sum-exp output
 *   (attn_shape.return_lse) and the backend does not write it. */
#define ATTN_REASON_MAP(X)                                                                         \
    X(NONE, 0, NONE)                                                                               \
    X(DISABLED, 1, CONF)                                                                           \
    X(DISABLED_BY_HOST, 2, CONF)                                                                   \
    X(ARCH_NOT_LISTED, 3, CONF)                                                                    \
    X(NARROWED, 4, CONF)                                                                           \
    X(LOAD_FAILED, 5, LOAD)                                                                        \
    X(NO_ENTRY_SYMBOL, 6, LOAD)                                                                    \
    X(ABI_MISMATCH, 7, LOAD)                                                                       \
    X(BAD_DESCRIPTOR, 8, LOAD)                                                                     \
    X(INIT_FAILED, 9, LOAD)                                                                        \
    X(ARCH, 10, PLUGIN)                                                                            \
    X(Q_DTYPE, 11, PLUGIN)                                                                         \
    X(KV_DTYPE, 12, PLUGIN)                                                                        \
    X(COMPUTE_DTYPE, 13, PLUGIN)                                                                   \
    X(OUT_DTYPE, 14, PLUGIN)                                                                       \
    X(GQA_RATIO, 15, PLUGIN)                                                                       \
    X(HEAD_DIM, 16, PLUGIN)                                                                        \
    X(HEAD_DIM_V, 17, PLUGIN)                                                                      \
    X(PAGE_SIZE, 18, PLUGIN)                                                                       \
    X(Q_LEN, 19, PLUGIN)                                                                           \
    X(KV_LEN, 20, PLUGIN)                                                                          \
    X(CAUSAL, 21, PLUGIN)                                                                          \
    X(WINDOW, 22, PLUGIN)                                                                          \
    X(SOFTCAP, 23, PLUGIN)                                                                         \
    X(SINKS, 24, PLUGIN)                                                                           \
    X(FP8_COMPUTE_MHA_ONLY, 25, PLUGIN)                                                            \
    X(ARCH_NOT_IN_BINARY, 26, RUNNABLE)                                                            \
    X(NO_DEVICE, 27, RUNNABLE)                                                                     \
    X(OTHER, 28, PLUGIN)                                                                           \
    X(INVALID_REASON, 29, HOST)                                                                    \
    X(RESOURCE, 30, PLUGIN)                                                                        \
    X(LSE, 31, PLUGIN)

typedef enum attn_reason {
#define ATTN_REASON_ENUM_(NAME, value, LAYER) ATTN_REASON_##NAME = value,
    ATTN_REASON_MAP(ATTN_REASON_ENUM_)
#undef ATTN_REASON_ENUM_
} attn_reason;
#define ATTN_REASON_COUNT (0 ATTN_REASON_MAP(ATTN_LIST_ONE_))

/* Longest arch name, including the terminating NUL. */
#define ATTN_ARCH_MAX 32

/* The shape descriptor: everything a backend needs to decide whether it can
 * run a call, known before any tensor exists. Fill it with attn_shape_init()
 * (host API) or attn_shape_defaults() (below; for plugins and tests that do
 * not link libattnreg), then set what differs.
 *
 * Capacities, not live lengths: max_q_len and max_kv_len are the largest a
 * host will ever pass for one sequence in the calls this decision serves
 * (what it captures a CUDA/HIP graph for): e.g. 1 for decode, the
 * speculative-token count + 1 for verify, the prefill chunk for prefill, and
 * the model's context length (or the page-table width x page_size) for
 * max_kv_len. One decision then serves every batch of a captured graph, and
 * the answer never changes from one batch to the next. Gates are read
 * against the capacity: the MTP kernel's "kv > 512" is max_kv_len > 512, as
 * SGLang reads it against its page-table width, never against the keys of
 * the batch at hand. A forward's max_seqlen_q / max_seqlen_k must stay
 * within them.
 *
 * The window convention (FlashAttention's window_size): query position p
 * (p = K - Q + i, see the brief's semantics) sees key j iff
 * p - window_left <= j <= p + window_right, both ends included, -1 meaning
 * unbounded on that side; causal masking adds j <= p. So (L, R) shows
 * L + 1 + R keys around a query. A model config's `sliding_window = W`
 * (Hugging Face, SGLang: a query sees the W most recent keys, itself
 * included) is the window (W - 1, 0), as vLLM passes it to FlashAttention
 * and as `attnreg plan` maps it; under causal masking (W - 1, -1) is the
 * same set of keys (tests/cpu_ref: test_sliding_window_mappings). */
typedef struct attn_shape {
    uint32_t struct_size;     /* sizeof(attn_shape) as the writer knows it */
    char arch[ATTN_ARCH_MAX]; /* "gfx950", "gfx942", "sm_90", "cpu" */
    int32_t num_q_heads;
    int32_t num_kv_heads; /* 0 = same as num_q_heads (MHA) */
    int32_t head_dim;
    int32_t head_dim_v;    /* 0 = head_dim */
    int32_t q_dtype;       /* attn_dtype */
    int32_t kv_dtype;      /* attn_dtype of the K/V caches */
    int32_t compute_dtype; /* attn_dtype: the precision of the math asked for */
    int32_t out_dtype;     /* attn_dtype */
    int32_t page_size;     /* tokens per KV-cache block */
    int32_t max_q_len;     /* capacity: longest query (new tokens) of one sequence */
    int32_t max_kv_len;    /* capacity: longest key range of one sequence */
    int32_t causal;        /* 1 = causal masking */
    int32_t window_left;   /* keys p - window_left .. p visible; -1 = unbounded */
    int32_t window_right;  /* keys p .. p + window_right visible; -1 = unbounded */
    float softcap;         /* 0 = none */
    int32_t has_sinks;     /* 1 = per-head sink logits are passed */
    /* 0.4: 1 = forward also writes the log-sum-exp of each (token, query
     * head) row into attn_forward_args.lse (cascade attention, context-
     * parallel decode, chunked-context merging: attn_merge_states). A shape
     * flag, so selection only picks backends that write it and a captured
     * graph's decision covers it. */
    int32_t return_lse;
} attn_shape;

/* attn_shape's fields after struct_size, in declaration order: X(member,
 * KIND), KIND being how tools read and write the field (ARCH: the NUL
 * terminated name; INT: an int32_t; DTYPE: an attn_dtype, written by its
 * spelling; BOOL: an int32_t 0 or 1; FLOAT: a float). The JSON name of a
 * field is its member name. The library checks the list against the struct;
 * its layout query, the attnreg command's JSON shape and the dtype checks of
 * attn_shape_validate are generated from it.
 * ATTN_SHAPE_FIELD_FLAG_MAP(X) is the same list as X(member, KIND, flag),
 * flag being the attnreg command's flag that sets the field (window_left and
 * window_right share "--window L,R"; "--no-causal" clears causal; the BOOL
 * others are switches that set it); the command's flag parser is generated
 * from it. */
#define ATTN_SHAPE_FIELD_TABLE_(X, A)                                                              \
    A(X, arch, ARCH, "--arch")                                                                     \
    A(X, num_q_heads, INT, "--q-heads")                                                            \
    A(X, num_kv_heads, INT, "--kv-heads")                                                          \
    A(X, head_dim, INT, "--head-dim")                                                              \
    A(X, head_dim_v, INT, "--head-dim-v")                                                          \
    A(X, q_dtype, DTYPE, "--q-dtype")                                                              \
    A(X, kv_dtype, DTYPE, "--kv-dtype")                                                            \
    A(X, compute_dtype, DTYPE, "--compute-dtype")                                                  \
    A(X, out_dtype, DTYPE, "--out-dtype")                                                          \
    A(X, page_size, INT, "--page-size")                                                            \
    A(X, max_q_len, INT, "--max-q-len")                                                            \
    A(X, max_kv_len, INT, "--max-kv-len")                                                          \
    A(X, causal, BOOL, "--no-causal")                                                              \
    A(X, window_left, INT, "--window")                                                             \
    A(X, window_right, INT, "--window")                                                            \
    A(X, softcap, FLOAT, "--softcap")                                                              \
    A(X, has_sinks, BOOL, "--sinks")                                                               \
    A(X, return_lse, BOOL, "--lse")
#define ATTN_SHAPE_FIELD_PICK2_(X, member, KIND, flag) X(member, KIND)
#define ATTN_SHAPE_FIELD_PICK3_(X, member, KIND, flag) X(member, KIND, flag)
#define ATTN_SHAPE_FIELD_MAP(X) ATTN_SHAPE_FIELD_TABLE_(X, ATTN_SHAPE_FIELD_PICK2_)
#define ATTN_SHAPE_FIELD_FLAG_MAP(X) ATTN_SHAPE_FIELD_TABLE_(X, ATTN_SHAPE_FIELD_PICK3_)

/* The defaults of attn_shape_init(): arch "cpu", 1 query head, MHA, head_dim
 * 128, every dtype bf16, page 16, q and kv length 1, causal, no window, no
 * softcap, no sinks, no LSE output. */
static inline void attn_shape_defaults(attn_shape *s)
{
    static const attn_shape defaults = {sizeof(attn_shape),
                                        "cpu",
                                        1,
                                        0,
                                        128,
                                        0,
                                        ATTN_DTYPE_BF16,
                                        ATTN_DTYPE_BF16,
                                        ATTN_DTYPE_BF16,
                                        ATTN_DTYPE_BF16,
                                        16,
                                        1,
                                        1,
                                        1,
                                        -1,
                                        -1,
                                        0.0f,
                                        0,
                                        0};
    *s = defaults;
}

/* The tensors of one forward call (vLLM's paged layouts). Pointers are in
 * the backend's memory space (host memory for cpu-ref, device memory for
 * GPU backends). Strides are in elements.
 *
 * KV caches by stride (0.4, plugin ABI 1.3): element (block b, token t of the
 * page, KV head h, d) of the K cache is at
 *   k_cache + b * k_stride_block + t * k_stride_token + h * k_stride_head + d
 * (V likewise with v_stride_*); the last dimension is contiguous. A stride of
 * 0 is that stride of the contiguous layout [num_blocks, page_size, Hkv, D]
 * (k_stride_block = page_size * Hkv * D, k_stride_token = Hkv * D,
 * k_stride_head = D; V with Dv), so a host that leaves them zero, as every
 * host built before 0.4 does, passes what it always did. Engines' caches in
 * place:
 *   vLLM [2, blocks, page, H, D], kv.unbind(0): contiguous, all 0;
 *   FlashInfer NHD [blocks, 2, page, H, D]: block 2*page*H*D, token H*D, head D;
 *   FlashInfer HND [blocks, 2, H, page, D]: block 2*H*page*D, token D, head page*D;
 *   one [blocks, page, H, D + Dv] tensor holding K and V side by side.
 * A backend that cannot read a layout refuses the call (never a wrong
 * result); the registry refuses non-contiguous strides for plugins older
 * than ABI 1.3, which do not know the fields. */
typedef struct attn_forward_args {
    uint32_t struct_size;
    int32_t num_seqs;
    int32_t num_tokens; /* total query tokens = cu_seqlens_q[num_seqs] */
    const void *q;      /* [num_tokens, Hq, D], q_dtype */
    int64_t q_stride_token;
    int64_t q_stride_head;
    const void *k_cache; /* [num_blocks, page_size, Hkv, D], kv_dtype, k_stride_* */
    const void *v_cache; /* [num_blocks, page_size, Hkv, Dv], kv_dtype, v_stride_* */
    int32_t num_blocks;
    const int32_t *block_table; /* [num_seqs, block_table_stride] */
    int32_t block_table_stride;
    const int32_t *cu_seqlens_q; /* [num_seqs + 1] */
    const int32_t *seqused_k;    /* [num_seqs] keys per sequence, new tokens included */
    int32_t max_seqlen_q;        /* <= shape.max_q_len */
    int32_t max_seqlen_k;        /* <= shape.max_kv_len */
    float scale;                 /* softmax scale, usually 1/sqrt(D) */
    float q_descale;             /* FP8 compute: Q quantisation scale (1 = none) */
    float k_descale;             /* FP8 caches: dequantised = byte value x descale */
    float v_descale;
    const float *sinks; /* [Hq] float32, when shape.has_sinks */
    void *out;          /* [num_tokens, Hq, Dv], out_dtype */
    int64_t out_stride_token;
    int64_t out_stride_head;
    void *workspace; /* scratch sized by attn_backend_workspace_size */
    size_t workspace_size;
    void *stream; /* hipStream_t / cudaStream_t; NULL = default */
    /* 0.4 / plugin ABI 1.3: K/V cache strides in elements (see above; 0 =
     * the contiguous layout's). */
    int64_t k_stride_block;
    int64_t k_stride_token; /* between the tokens of one page */
    int64_t k_stride_head;
    int64_t v_stride_block;
    int64_t v_stride_token;
    int64_t v_stride_head;
    /* 0.4 / plugin ABI 1.3: the log-sum-exp output, float32, one value per
     * (token, query head) at lse[token * lse_stride_token + head *
     * lse_stride_head] (0 strides: [num_tokens, Hq] contiguous; vLLM's
     * [Hq, num_tokens] is lse_stride_token 1, lse_stride_head num_tokens).
     * Written iff shape.return_lse (then required); NULL otherwise. The value
     * is ln(sum over the row's visible keys of exp(s)) with s the score after
     * scale and softcap (the softmax's own units), the sink's exp(sink[h])
     * included when the shape has sinks; -inf for a row with nothing in its
     * denominator. */
    float *lse;
    int64_t lse_stride_token;
    int64_t lse_stride_head;
} attn_forward_args;

/* Writing new tokens' K and V into the paged cache (0.4 / plugin ABI 1.3),
 * as vLLM's reshape_and_cache_flash and FlashInfer's append_paged_kv_cache
 * do: token t's K row of KV head h goes to cache slot slot_mapping[t]
 * (block = slot / page_size, offset = slot % page_size), converted to the
 * backend's kv_dtype: rounded to nearest even for f16/bf16; for FP8 caches
 * stored = value / k_scale (v_scale for V), saturating, so that forward's
 * k_descale = k_scale reads it back. A negative slot skips the token (vLLM's
 * padding). Pointers are in the backend's memory space; strides in
 * elements, 0 = contiguous ([num_tokens, Hkv, D] for the new rows, the
 * forward's layout for the caches); the last dimension is contiguous. */
typedef struct attn_append_args {
    uint32_t struct_size;
    int32_t num_tokens;
    int32_t src_dtype; /* attn_dtype of k and v (f32, f16, bf16); 0 = the shape's q_dtype */
    const void *k;     /* [num_tokens, Hkv, D] */
    const void *v;     /* [num_tokens, Hkv, Dv] */
    int64_t k_stride_token;
    int64_t k_stride_head;
    int64_t v_stride_token;
    int64_t v_stride_head;
    const int64_t *slot_mapping; /* [num_tokens] */
    void *k_cache;               /* [num_blocks, page_size, Hkv, D], kv_dtype */
    void *v_cache;
    int32_t num_blocks;
    int64_t k_cache_stride_block;
    int64_t k_cache_stride_token;
    int64_t k_cache_stride_head;
    int64_t v_cache_stride_block;
    int64_t v_cache_stride_token;
    int64_t v_cache_stride_head;
    float k_scale; /* FP8 caches: stored = value / k_scale; ignored otherwise */
    float v_scale;
    void *stream; /* hipStream_t / cudaStream_t; NULL = default */
} attn_append_args;

/* Merging partial attention states (0.4; here from attnreg.h since 0.5).
 * Two attention results over disjoint key ranges of the same queries (a
 * shared prefix and each request's suffix in cascade attention, two ranks
 * of context-parallel decode, two chunks of a long context), each with its
 * log-sum-exp (attn_forward_args.lse), merged into the result over the
 * union: with m = max(lse_a, lse_b), w_a = exp(lse_a - m), w_b = exp(lse_b -
 * m), out = (a * w_a + b * w_b) / (w_a + w_b) and lse_out = m + ln(w_a +
 * w_b), per (token, head) row, in float arithmetic. A side whose lse is -inf
 * saw no key and contributes nothing; both -inf gives a zero row and -inf.
 * (With sinks, pass the sink to one side only: each side's lse includes it.)
 * Pointers are in the memory space of whoever merges: host memory for
 * attn_merge_states, the backend's (a GPU's) for attn_backend_merge_states
 * (0.5 / plugin ABI 1.4). Set struct_size (sizeof, or at least attnreg.h's
 * ATTN_MERGE_ARGS_SIZE_0_4: the 0.4 layout, which ends before stream) and
 * zero what you do not set. */
typedef struct attn_merge_args {
    uint32_t struct_size;
    int32_t num_tokens;
    int32_t num_heads;
    int32_t head_dim;   /* of the values (head_dim_v) */
    int32_t dtype;      /* attn_dtype of a, b and out: f32, f16 or bf16 */
    const void *a;      /* [num_tokens, num_heads, head_dim] */
    const float *lse_a; /* [num_tokens, num_heads] */
    const void *b;
    const float *lse_b;
    void *out;                /* may be a or b (each row is read before it is written) */
    float *lse_out;           /* NULL = not wanted; may be lse_a or lse_b */
    int64_t stride_token;     /* of a, b and out, in elements; 0 = num_heads * head_dim */
    int64_t stride_head;      /* 0 = head_dim; the last dimension is contiguous */
    int64_t lse_stride_token; /* of lse_a, lse_b and lse_out; 0 = num_heads */
    int64_t lse_stride_head;  /* 0 = 1 */
    /* 0.5: hipStream_t / cudaStream_t of a device merge; NULL = the default
     * stream. The host's CPU merge ignores it. */
    void *stream;
} attn_merge_args;

/* Limits of the batches a backend object will see, for sizing scratch. */
typedef struct attn_batch_limits {
    uint32_t struct_size;
    int32_t max_num_seqs;
    int32_t max_num_tokens;
} attn_batch_limits;

/* A device a plugin can run on. */
typedef struct attn_device_info {
    uint32_t struct_size;
    int32_t index;
    char arch[ATTN_ARCH_MAX]; /* "sm_90", "gfx950", "cpu" */
    char name[128];
    uint64_t memory_bytes;
    int32_t compute_units;
} attn_device_info;

/* Log levels: X(NAME, value, name), the enumerator ATTN_LOG_<NAME> and its
 * name in ATTNREG_LOG, the CLI's --log and attn_log_level_name(). */
#define ATTN_LOG_LEVEL_MAP(X)                                                                      \
    X(DEBUG, 0, "debug")                                                                           \
    X(INFO, 1, "info")                                                                             \
    X(WARN, 2, "warn")                                                                             \
    X(ERROR, 3, "error")                                                                           \
    X(OFF, 4, "off")

typedef enum attn_log_level {
#define ATTN_LOG_LEVEL_ENUM_(NAME, value, name) ATTN_LOG_##NAME = value,
    ATTN_LOG_LEVEL_MAP(ATTN_LOG_LEVEL_ENUM_)
#undef ATTN_LOG_LEVEL_ENUM_
} attn_log_level;

typedef void (*attn_log_fn)(void *user, attn_log_level level, const char *message);

/* The hard limits of one GPU arch that decide whether a kernel can launch,
 * as a plugin's launch plans read them (plugin ABI 1.2). */
typedef struct attn_arch_limits {
    uint32_t struct_size;
    char arch[ATTN_ARCH_MAX];       /* "gfx942", "gfx950", "sm_90" */
    int32_t shared_bytes_per_block; /* shared memory / LDS one program may use (opt-in max) */
    int32_t wave_size;              /* threads per wave / warp */
    int32_t max_threads_per_block;
    int32_t max_registers_per_thread; /* VGPRs (AMD: arch + accumulation) / registers */
} attn_arch_limits;

/* The smallest attn_arch_limits a host reads (arch and shared memory; the
 * other limits count as absent when struct_size does not cover them). */
#define ATTN_ARCH_LIMITS_MIN_SIZE                                                                  \
    (offsetof(attn_arch_limits, shared_bytes_per_block) + sizeof(int32_t))

/* Longest kernel and role name of a launch plan, including the NUL. */
#define ATTN_PLAN_NAME_MAX 32
/* Most kernels one launch plan lists. */
#define ATTN_PLAN_MAX_KERNELS 4

/* One kernel a backend's forward may launch for a shape, with its program
 * configuration and the resources one program needs. */
typedef struct attn_kernel_plan {
    char kernel[ATTN_PLAN_NAME_MAX]; /* e.g. "prefill-wgmma", "generic", "decode" */
    char role[ATTN_PLAN_NAME_MAX];   /* which batches run it: "multi-token", "decode", ... */
    int32_t threads;                 /* per program */
    int32_t rows;                    /* query rows (tokens x heads) per program */
    int32_t keys;                    /* keys per K/V tile */
    int32_t stages;                  /* K/V tiles in shared memory */
    int32_t shared_bytes;            /* shared memory / LDS per program, static + dynamic */
} attn_kernel_plan;

/* The launch plan of a shape on an arch: every kernel its forward may launch
 * (kernels[0] is the one batches at max_q_len run) and the arch's limits they
 * were checked against. The plugin's predicates and its launcher compute it
 * from the same table, so a shape that is accepted can be launched. */
typedef struct attn_launch_plan {
    uint32_t struct_size;
    char arch[ATTN_ARCH_MAX];
    int32_t shared_limit; /* the arch's shared_bytes_per_block */
    int32_t wave_size;
    uint32_t num_kernels;
    attn_kernel_plan kernels[ATTN_PLAN_MAX_KERNELS];
} attn_launch_plan;

#ifdef __cplusplus
}
#endif

#endif /* ATTN_TYPES_H */
