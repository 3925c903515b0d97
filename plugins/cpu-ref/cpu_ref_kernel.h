/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpu_ref_kernel.h — the interface between the cpu-ref plugin (validation,
 * work decomposition, threads) and its compute kernels.
 *
 * The kernels are one source, cpu_ref_kernel_impl.h, compiled twice: once
 * for the baseline ISA (cpu_ref_kernel_generic.c) and, on x86-64, once with
 * AVX2/FMA/F16C enabled (cpu_ref_kernel_avx2.c). The plugin picks one when a
 * backend object is created, from what the CPU reports.
 *
 * Work decomposition. A "base item" is one sequence, one block of
 * consecutive query tokens, one run of consecutive KV heads, and (only when
 * a KV head has more than CPU_REF_MAX_ROWS_PER_ITEM query heads) one group of
 * the query heads that share each KV head. Its rows (token x query head) are
 * laid out KV head by KV head, each KV head's rows padded to whole vectors,
 * so every SIMD vector of rows reads the same keys. Decode-like shapes (few
 * rows per KV head) put several KV heads in one item: a cached token holds
 * the rows of all its KV heads next to each other, so the item then reads
 * whole cache pages front to back, which the hardware prefetchers follow;
 * one KV head per item would read a few hundred bytes out of every
 * kilobyte, in pages of random order, and run at memory latency.
 *
 * When a batch has too few base items to keep the threads busy (decode),
 * each base item's key range is split into `splits` chunks computed
 * independently into `partials` and merged by `combine` (the flash-decoding
 * split). The number of splits depends only on the batch, never on the
 * thread count, so a result does not change with the number of threads.
 */
#ifndef CPU_REF_KERNEL_H
#define CPU_REF_KERNEL_H

#include <stddef.h>
#include <stdint.h>

/* Floats per SIMD vector in the kernels (one AVX register). Rows of an item
 * are padded to a multiple of this. */
#define CPU_REF_LANES 8
/* Keys per tile: K and V tiles of this many keys are decoded to float. */
#define CPU_REF_TILE_KEYS 32
/* Rows (query token x query head, padded per KV head) per base item. 64
 * rows keep the per-thread scratch within the L2 cache for head_dim 128
 * while giving every decoded key up to 64 reuses. */
#define CPU_REF_MAX_ROWS_PER_ITEM 64
/* Split heuristics: splitting starts when a batch has fewer base items than
 * CPU_REF_TARGET_ITEMS, never gives a chunk fewer than CPU_REF_MIN_CHUNK keys
 * and never makes more than CPU_REF_MAX_SPLITS chunks. */
#define CPU_REF_TARGET_ITEMS 128
#define CPU_REF_MIN_CHUNK 512
#define CPU_REF_MAX_SPLITS 32
/* Alignment of every scratch section, in bytes. */
#define CPU_REF_ALIGN 64

/* A paged K or V cache: element (block b, token t of the page, KV head h,
 * i) is at base + b * stride_block + t * stride_token + h * stride_head + i,
 * in elements; the strides are resolved (never 0) from the args' K/V
 * strides, so the engines' layouts (vLLM, FlashInfer NHD/HND, K and V in one
 * tensor) are read in place. */
typedef struct cpu_ref_cache {
    const void *base;
    int64_t stride_block;
    int64_t stride_token;
    int64_t stride_head;
} cpu_ref_cache;

/* Everything one forward call needs, resolved from the shape and the args. */
typedef struct cpu_ref_problem {
    /* element types */
    int32_t q_dtype;
    int32_t kv_dtype;
    int32_t out_dtype;
    int32_t q_quant_dtype; /* fp8 compute: the e4m3 format Q is quantised to; else 0 */
    /* geometry */
    int32_t num_q_heads;
    int32_t num_kv_heads;
    int32_t group; /* query heads per KV head */
    int32_t head_dim;
    int32_t head_dim_v;
    int32_t head_dim_v_padded; /* rounded up to CPU_REF_LANES */
    int32_t page_size;
    /* masking and scores */
    int32_t causal;
    int32_t window_left;  /* -1 = unbounded */
    int32_t window_right; /* -1 = unbounded */
    float softcap;        /* 0 = none */
    const float *sinks;   /* NULL = none */
    float score_scale;    /* scale x k_descale (fp8 KV) x q_descale (fp8 compute) */
    float q_descale;      /* fp8 compute: Q is quantised as q / q_descale */
    float v_scale;        /* v_descale for fp8 KV, else 1 */
    /* tensors */
    const void *q;
    int64_t q_stride_token;
    int64_t q_stride_head;
    cpu_ref_cache k_cache;
    cpu_ref_cache v_cache;
    const int32_t *block_table;
    int64_t block_table_stride;
    const int32_t *cu_seqlens_q;
    const int32_t *seqused_k;
    void *out;
    int64_t out_stride_token;
    int64_t out_stride_head;
    float *lse; /* NULL = not asked; else resolved (non-zero) strides */
    int64_t lse_stride_token;
    int64_t lse_stride_head;
    /* decomposition (see cpu_ref_geometry) */
    int32_t num_seqs;
    int32_t heads_per_item;
    int32_t head_groups;
    int32_t tokens_per_item;
    int32_t kv_heads_per_item;
    int32_t kv_groups;
    int32_t rows_max;          /* padded rows of a full item */
    const int64_t *item_start; /* [num_seqs + 1]: first base item of each sequence */
    int64_t num_base_items;
    int32_t splits;
    float *partials; /* [num_base_items * splits] slots of cpu_ref_partial_floats() */
    /* per-worker scratch: worker w owns scratch + w * scratch_stride */
    char *scratch;
    size_t scratch_stride;
} cpu_ref_problem;

typedef struct cpu_ref_kernels {
    const char *name;
    /* Computes work unit `work` = base_item * splits + split. */
    void (*attend)(const cpu_ref_problem *p, int64_t work, void *scratch);
    /* Merges the split partials of one base item into the output. */
    void (*combine)(const cpu_ref_problem *p, int64_t base_item);
} cpu_ref_kernels;

extern const cpu_ref_kernels cpu_ref_kernels_generic;
#if defined(__x86_64__) || defined(__i386__)
#define CPU_REF_HAVE_AVX2_KERNELS 1
extern const cpu_ref_kernels cpu_ref_kernels_avx2;
#endif

static inline size_t cpu_ref_align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

static inline int32_t cpu_ref_round_lanes(int32_t n)
{
    return (n + CPU_REF_LANES - 1) / CPU_REF_LANES * CPU_REF_LANES;
}

/* How a shape is cut into items (fixed when a backend object is created). */
typedef struct cpu_ref_geometry {
    int32_t heads_per_item;    /* query heads of one KV head per item */
    int32_t head_groups;       /* ceil(group / heads_per_item) */
    int32_t tokens_per_item;   /* query tokens per item */
    int32_t rows_per_kv_head;  /* tokens_per_item x heads_per_item, padded to lanes */
    int32_t kv_heads_per_item; /* consecutive KV heads per item */
    int32_t kv_groups;         /* ceil(num_kv_heads / kv_heads_per_item) */
    int32_t rows_max;          /* kv_heads_per_item x rows_per_kv_head */
} cpu_ref_geometry;

static inline cpu_ref_geometry cpu_ref_plan_geometry(int32_t num_q_heads, int32_t num_kv_heads,
                                                     int32_t max_q_len)
{
    cpu_ref_geometry g;
    int32_t group = num_q_heads / num_kv_heads;
    g.heads_per_item = group < CPU_REF_MAX_ROWS_PER_ITEM ? group : CPU_REF_MAX_ROWS_PER_ITEM;
    g.head_groups = (group + g.heads_per_item - 1) / g.heads_per_item;
    g.tokens_per_item = CPU_REF_MAX_ROWS_PER_ITEM / g.heads_per_item;
    if (max_q_len >= 1 && g.tokens_per_item > max_q_len)
        g.tokens_per_item = max_q_len;
    g.rows_per_kv_head = cpu_ref_round_lanes(g.heads_per_item * g.tokens_per_item);
    g.kv_heads_per_item = CPU_REF_MAX_ROWS_PER_ITEM / g.rows_per_kv_head;
    if (g.kv_heads_per_item < 1)
        g.kv_heads_per_item = 1;
    if (g.kv_heads_per_item > num_kv_heads)
        g.kv_heads_per_item = num_kv_heads;
    g.kv_groups = (num_kv_heads + g.kv_heads_per_item - 1) / g.kv_heads_per_item;
    g.rows_max = g.kv_heads_per_item * g.rows_per_kv_head;
    return g;
}

/* Byte offsets of the sections of one worker's scratch, for rows padded to
 * `rows_padded`. Every section is CPU_REF_ALIGN-aligned. */
typedef struct cpu_ref_scratch_layout {
    size_t q_rows;    /* float [rows][head_dim_padded]: Q */
    size_t scores;    /* float [TILE_KEYS][rows]: scores, then probabilities */
    size_t acc;       /* float [rows][head_dim_v_padded]: output accumulator */
    size_t k_tile;    /* float [TILE_KEYS][head_dim_padded]: one KV head's keys */
    size_t v_tile;    /* float [TILE_KEYS][head_dim_v_padded] */
    size_t row_max;   /* float [rows] */
    size_t row_sum;   /* float [rows] */
    size_t row_lo;    /* int32 [rows]: first visible key */
    size_t row_hi;    /* int32 [rows]: last visible key */
    size_t row_alpha; /* float [rows]: this tile's rescale factor */
    size_t total;
} cpu_ref_scratch_layout;

/* rows_max: padded rows of a full item. */
static inline cpu_ref_scratch_layout cpu_ref_scratch_plan(int32_t head_dim, int32_t head_dim_v,
                                                          int32_t rows_max)
{
    cpu_ref_scratch_layout l;
    size_t rp = (size_t)cpu_ref_round_lanes(rows_max);
    size_t dvp = (size_t)cpu_ref_round_lanes(head_dim_v);
    size_t dp = (size_t)cpu_ref_round_lanes(head_dim);
    size_t at = 0;
#define CPU_REF_SECTION(field, bytes)                                                              \
    l.field = at;                                                                                  \
    at = cpu_ref_align_up(at + (bytes), CPU_REF_ALIGN)
    CPU_REF_SECTION(q_rows, dp * rp * sizeof(float));
    CPU_REF_SECTION(scores, (size_t)CPU_REF_TILE_KEYS * rp * sizeof(float));
    CPU_REF_SECTION(acc, dvp * rp * sizeof(float));
    CPU_REF_SECTION(k_tile, (size_t)CPU_REF_TILE_KEYS * dp * sizeof(float));
    CPU_REF_SECTION(v_tile, (size_t)CPU_REF_TILE_KEYS * dvp * sizeof(float));
    CPU_REF_SECTION(row_max, rp * sizeof(float));
    CPU_REF_SECTION(row_sum, rp * sizeof(float));
    CPU_REF_SECTION(row_lo, rp * sizeof(int32_t));
    CPU_REF_SECTION(row_hi, rp * sizeof(int32_t));
    CPU_REF_SECTION(row_alpha, rp * sizeof(float));
#undef CPU_REF_SECTION
    l.total = at;
    return l;
}

/* Floats in one split partial: rows_max x (head_dim_v accumulator, max, sum);
 * rows are indexed as in the item (padded per KV head). */
static inline size_t cpu_ref_partial_floats(int32_t head_dim_v, int32_t rows_max)
{
    return (size_t)rows_max * ((size_t)head_dim_v + 2);
}

/* Where a base item lies: which sequence, KV heads, query heads, tokens. */
typedef struct cpu_ref_item {
    int32_t seq;
    int32_t first_kv_head;
    int32_t num_kv_heads;
    int32_t head_offset; /* first query head within each KV head's group */
    int32_t num_heads;   /* query heads per KV head in this item */
    int32_t first_token; /* within the sequence */
    int32_t num_tokens;
    int32_t rows_per_kv_head; /* num_tokens x num_heads, padded to lanes */
    int32_t q_len;            /* of the sequence */
    int32_t kv_len;           /* of the sequence */
} cpu_ref_item;

static inline int32_t cpu_ref_items_per_seq(const cpu_ref_problem *p, int32_t q_len)
{
    int32_t blocks = (q_len + p->tokens_per_item - 1) / p->tokens_per_item;
    return blocks * p->kv_groups * p->head_groups;
}

/* Decodes a base item index. Within a sequence the token blocks are ordered
 * last block first: under causal masking the last block sees the most keys,
 * and handing out the longest items first balances the threads. */
static inline cpu_ref_item cpu_ref_item_at(const cpu_ref_problem *p, int64_t base_item)
{
    int32_t lo = 0, hi = p->num_seqs - 1;
    while (lo < hi) { /* last sequence whose first item is <= base_item */
        int32_t mid = lo + (hi - lo + 1) / 2;
        if (p->item_start[mid] <= base_item)
            lo = mid;
        else
            hi = mid - 1;
    }
    cpu_ref_item it;
    int64_t local = base_item - p->item_start[lo];
    int64_t per_block = (int64_t)p->kv_groups * p->head_groups;
    int32_t q_len = p->cu_seqlens_q[lo + 1] - p->cu_seqlens_q[lo];
    int32_t blocks = (q_len + p->tokens_per_item - 1) / p->tokens_per_item;
    int32_t block = blocks - 1 - (int32_t)(local / per_block);
    int32_t rest = (int32_t)(local % per_block);
    int32_t head_group = rest % p->head_groups;
    int32_t kv_group = rest / p->head_groups;
    it.seq = lo;
    it.first_kv_head = kv_group * p->kv_heads_per_item;
    it.num_kv_heads = p->num_kv_heads - it.first_kv_head;
    if (it.num_kv_heads > p->kv_heads_per_item)
        it.num_kv_heads = p->kv_heads_per_item;
    it.head_offset = head_group * p->heads_per_item;
    it.num_heads = p->group - it.head_offset;
    if (it.num_heads > p->heads_per_item)
        it.num_heads = p->heads_per_item;
    it.first_token = block * p->tokens_per_item;
    it.num_tokens = q_len - it.first_token;
    if (it.num_tokens > p->tokens_per_item)
        it.num_tokens = p->tokens_per_item;
    it.rows_per_kv_head = cpu_ref_round_lanes(it.num_tokens * it.num_heads);
    it.q_len = q_len;
    it.kv_len = p->seqused_k[lo];
    return it;
}

#endif /* CPU_REF_KERNEL_H */
