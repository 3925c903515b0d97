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

/* Status codes. Stable: the numeric values and the names returned by
 * attn_status_name() never change. */
typedef enum attn_status {
    ATTN_OK = 0,
    ATTN_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer, a bad struct_size, ... */
    ATTN_ERR_INVALID_SHAPE = 2,    /* no backend could ever run this shape */
    ATTN_ERR_UNSUPPORTED = 3,      /* valid shape, no enabled backend accepts it */
    ATTN_ERR_BACKEND_REJECTED = 4, /* the forced backend rejects the shape */
    ATTN_ERR_NOT_FOUND = 5,        /* no backend of that name */
    ATTN_ERR_CONF = 6,             /* a conf file is malformed */
    ATTN_ERR_LOAD = 7,             /* a plugin library could not be loaded */
    ATTN_ERR_ABI = 8,              /* a plugin's ABI is incompatible */
    ATTN_ERR_NO_MEMORY = 9,
    ATTN_ERR_NO_DEVICE = 10,          /* no device (or no driver) for this arch */
    ATTN_ERR_ARCH_NOT_IN_BINARY = 11, /* the plugin binary holds no code for the arch */
    ATTN_ERR_NO_KERNELS = 12,         /* the plugin was built without GPU kernels */
    ATTN_ERR_CREATE_FAILED = 13,      /* the plugin's constructor refused */
    ATTN_ERR_RUNTIME = 14,            /* a device runtime call failed */
    ATTN_ERR_WORKSPACE_TOO_SMALL = 15,
    ATTN_ERR_INIT_FAILED = 16, /* the plugin's init hook failed */
    ATTN_ERR_IO = 17,          /* a file could not be read or written */
    ATTN_ERR_INTERNAL = 18
} attn_status;
#define ATTN_STATUS_COUNT 19

/* Element types. ATTN_DTYPE_INVALID (0) is never a valid choice. */
typedef enum attn_dtype {
    ATTN_DTYPE_INVALID = 0,
    ATTN_DTYPE_F32 = 1,
    ATTN_DTYPE_F16 = 2,
    ATTN_DTYPE_BF16 = 3,
    ATTN_DTYPE_FP8_E4M3FN = 4,  /* OCP e4m3: NVIDIA sm_89+, gfx950 */
    ATTN_DTYPE_FP8_E4M3FNUZ = 5 /* e4m3 without negative zero: gfx942 */
} attn_dtype;
#define ATTN_DTYPE_COUNT 6

/* The spelling of a dtype in conf files, the CLI and messages ("bf16",
 * "fp8_e4m3fn", ...); "invalid" for anything else. Inline so that plugins,
 * which do not link libattnreg, spell dtypes exactly as the registry does. */
static inline const char *attn_dtype_spelling(int32_t dtype)
{
    switch (dtype) {
    case ATTN_DTYPE_F32:
        return "f32";
    case ATTN_DTYPE_F16:
        return "f16";
    case ATTN_DTYPE_BF16:
        return "bf16";
    case ATTN_DTYPE_FP8_E4M3FN:
        return "fp8_e4m3fn";
    case ATTN_DTYPE_FP8_E4M3FNUZ:
        return "fp8_e4m3fnuz";
    default:
        return "invalid";
    }
}

/* Why a candidate was rejected. Stable codes; attn_reason_name() gives the
 * stable machine-readable name ("Q_LEN", ...). */
typedef enum attn_reason {
    ATTN_REASON_NONE = 0, /* accepted */
    /* conf (INI) layer, decided without loading the library */
    ATTN_REASON_DISABLED = 1,         /* enabled = false in its INI */
    ATTN_REASON_DISABLED_BY_HOST = 2, /* host option or ATTNREG_DISABLE */
    ATTN_REASON_ARCH_NOT_LISTED = 3,  /* arch not in the INI's archs list */
    ATTN_REASON_NARROWED = 4,         /* an INI narrowing key excludes the shape */
    /* loading */
    ATTN_REASON_LOAD_FAILED = 5, /* file missing, dlopen error */
    ATTN_REASON_NO_ENTRY_SYMBOL = 6,
    ATTN_REASON_ABI_MISMATCH = 7,   /* major differs or minor newer than host */
    ATTN_REASON_BAD_DESCRIPTOR = 8, /* NULL or malformed descriptor */
    ATTN_REASON_INIT_FAILED = 9,
    /* plugin predicates */
    ATTN_REASON_ARCH = 10,
    ATTN_REASON_Q_DTYPE = 11,
    ATTN_REASON_KV_DTYPE = 12,
    ATTN_REASON_COMPUTE_DTYPE = 13,
    ATTN_REASON_OUT_DTYPE = 14,
    ATTN_REASON_GQA_RATIO = 15,
    ATTN_REASON_HEAD_DIM = 16,
    ATTN_REASON_HEAD_DIM_V = 17,
    ATTN_REASON_PAGE_SIZE = 18,
    ATTN_REASON_Q_LEN = 19,
    ATTN_REASON_KV_LEN = 20,
    ATTN_REASON_CAUSAL = 21,
    ATTN_REASON_WINDOW = 22,
    ATTN_REASON_SOFTCAP = 23,
    ATTN_REASON_SINKS = 24,
    ATTN_REASON_FP8_COMPUTE_MHA_ONLY = 25, /* FP8 compute needs num_q_heads == num_kv_heads */
    /* runnable mode */
    ATTN_REASON_ARCH_NOT_IN_BINARY = 26,
    ATTN_REASON_NO_DEVICE = 27,
    ATTN_REASON_OTHER = 28,
    /* the host's record of a predicate that answered with a code outside
     * the plugin range (ARCH .. FP8_COMPUTE_MHA_ONLY, OTHER, RESOURCE, LSE): conf,
     * load and runnable codes are the host's to give (0.3) */
    ATTN_REASON_INVALID_REASON = 29,
    /* capability (appended, 0.3): no launch plan of the kernels fits the
     * arch's limits (shared memory / LDS, threads, registers) */
    ATTN_REASON_RESOURCE = 30,
    /* capability (appended, 0.4): the shape asks for the log-sum-exp output
     * (attn_shape.return_lse) and the backend does not write it */
    ATTN_REASON_LSE = 31
} attn_reason;
#define ATTN_REASON_COUNT 32

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

typedef enum attn_log_level {
    ATTN_LOG_DEBUG = 0,
    ATTN_LOG_INFO = 1,
    ATTN_LOG_WARN = 2,
    ATTN_LOG_ERROR = 3,
    ATTN_LOG_OFF = 4
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
