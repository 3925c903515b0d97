/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_families.hip — the kernel families' host-side rules, one table each
 * (attn_families.h): how a batch is tiled, how many key segments it is split
 * into, and how it is launched; and the two plugin kernels' tables: their
 * shape checks, launch plans and which family runs a batch. Host code only:
 * the kernels are in attn_generic.hip, attn_decode_mma.hip, attn_prefill.hip
 * and attn_mtp.hip.
 */
#include <string.h>

#include "attn_families.h"

/* Host code only. HIP's device pass would emit the const tables below (clang
 * treats constant-initialised const globals as usable on the device) with
 * references to host functions it cannot link. */
#if !defined(__HIP_DEVICE_COMPILE__)

static int next_pow2(int x)
{
    int p = 1;
    while (p < x)
        p <<= 1;
    return p;
}

static int ceil_div(int a, int b)
{
    return (a + b - 1) / b;
}

static int group_of(const gpu_attn_ctx *c)
{
    return c->shape.num_q_heads / attn_shape_kv_heads(&c->shape);
}

int attn_family_segments(const gpu_attn_ctx *c, const attn_family_ops *f,
                         const attn_batch_dims *b)
{
    return c->forced_nseg ? c->forced_nseg : f->segments(c, b);
}

/* The split every segment rule shares: `work` programs without a split,
 * `target` programs wanted. Split the key range into the power of two of
 * segments that brings the grid to the target, at most
 * ATTN_RULE_MAX_SEGMENTS (the reduce merges up to ATTN_REDUCE_MAX_SEGMENTS,
 * for forced counts) and never below `min_keys` keys a segment (rounded
 * down to a power of two when that bound is not one); 1 when the work
 * already reaches the target. */
#define ATTN_RULE_MAX_SEGMENTS 64
static int split_segments(long work, long target, int maxk, int min_keys)
{
    if (work <= 0 || work >= target)
        return 1;
    int n = next_pow2((int)((target + work - 1) / work));
    int cap = ceil_div(maxk > 0 ? maxk : 1, min_keys);
    if (n > cap)
        n = next_pow2(cap) > cap ? next_pow2(cap) / 2 : cap;
    if (n > ATTN_RULE_MAX_SEGMENTS)
        n = ATTN_RULE_MAX_SEGMENTS;
    return n < 1 ? 1 : n;
}

/* Programs of a 2D grid of query tiles (block_q tokens each) x KV heads x
 * head splits: each sequence gets ceil(q_len / block_q) tiles, bounded by
 * the grid's own bound T / block_q + S. */
static long grid_work(const gpu_attn_ctx *c, const attn_batch_dims *b, int block_q, int hsplit)
{
    long tiles = (long)b->seqs * ceil_div(b->max_q > 0 ? b->max_q : 1, block_q);
    long bound = (long)b->tokens / block_q + b->seqs;
    if (tiles > bound)
        tiles = bound;
    return tiles * attn_shape_kv_heads(&c->shape) * hsplit;
}

/* Programs of `rows` rows take all query heads of a KV head when they fit
 * (and as many tokens as fill the rows), else `rows` heads of one token. */
static void row_tiling(int rows, attn_kparams *p)
{
    p->heads_per_tile = p->group < rows ? p->group : rows;
    p->block_q = rows / p->heads_per_tile;
    p->head_splits = ceil_div(p->group, p->heads_per_tile);
}

/* ---- the portable generic kernel (attn_generic.hip): 16-row programs ---- */

static void generic_tiling(const gpu_attn_ctx *c, attn_kparams *p)
{
    (void)c;
    row_tiling(16, p);
}

/* The 2D grid has about `work` programs (query tiles x KV heads x head
 * splits). When that fills the GPU twice over (two programs per compute
 * unit) the 2D path runs. Otherwise the key range is split into the power of
 * two of segments that brings the grid to about two programs per compute
 * unit, at most 64, and never below 256 keys (8 tiles) per segment, where the
 * reduce would cost more than it saves. */
static int generic_segments(const gpu_attn_ctx *c, const attn_batch_dims *b)
{
    attn_kparams t;
    t.group = group_of(c);
    row_tiling(16, &t);
    return split_segments(grid_work(c, b, t.block_q, t.head_splits), 2L * c->cus, b->max_k, 256);
}

static hipError_t generic_launch(const gpu_attn_ctx *c, const attn_kparams *p,
                                 const attn_batch_dims *b, hipStream_t stream)
{
    (void)c;
    return attn_launch_generic(p, b->max_q, stream, 4);
}

const attn_family_ops attn_family_generic = {"generic", 0, generic_segments, generic_tiling,
                                             generic_launch, NULL};

/* ---- the wgmma prefill kernel (attn_prefill.hip): 128-row programs ---- */

static void prefill_tiling(const gpu_attn_ctx *c, attn_kparams *p)
{
    (void)c;
    row_tiling(128, p);
}

/* The prefill kernel's tiling of the context's heads. */
static attn_kparams prefill_tiles(const gpu_attn_ctx *c)
{
    attn_kparams t;
    t.group = group_of(c);
    row_tiling(128, &t);
    return t;
}

/* Its programs hold a whole SM each (one per SM), and a program's time grows
 * with its keys, so the grid needs about one program per SM. When the
 * unsplit grid has fewer than half as many programs as SMs, the key range is
 * split into the power of two of segments that brings it to one per SM, at
 * most 64 and never below four tiles of keys a segment (the partials and the
 * reduce would cost more than the keys). */
static int prefill_segments(const gpu_attn_ctx *c, const attn_batch_dims *b)
{
    const attn_kparams t = prefill_tiles(c);
    long work = grid_work(c, b, t.block_q, t.head_splits);
    if (2 * work > c->cus)
        return 1;
    const int k = attn_launch_plan_find(&c->plan, ATTN_ROLE_MULTI);
    if (k < 0)
        return 1;
    return split_segments(work, c->cus, b->max_k, 4 * c->plan.kernels[k].keys);
}

/* One wave of the prefill kernel: the programs the device holds at once
 * (SMs x programs an SM holds: one for every plan of this kernel). */
static long prefill_wave(const gpu_attn_ctx *c)
{
    return (long)c->cus * c->prefill_per_cu;
}

/* The dynamic grid's programs a segment: one wave, the segments sharing it. */
static long prefill_dynamic_programs(const gpu_attn_ctx *c, int nseg)
{
    return prefill_wave(c) / nseg > 0 ? prefill_wave(c) / nseg : 1;
}

/* The dynamic grid's item space of batch b, a segment: ranks (the longest
 * sequence's tiles) x sequences x KV heads x head splits. */
static double prefill_item_space(const gpu_attn_ctx *c, const attn_batch_dims *b)
{
    const attn_kparams t = prefill_tiles(c);
    return (double)ceil_div(b->max_q > 0 ? b->max_q : 1, t.block_q) * b->seqs *
           attn_shape_kv_heads(&c->shape) * t.head_splits;
}

/* The one-wave rule (README "Rules"): a launch runs on the dynamic grid
 * when its items, the programs of the one-program-an-item grid (query
 * tiles, bounded as the segment rule bounds them, x KV heads x head splits
 * x segments), exceed one wave: then programs that stream item after item
 * save the pipeline's start of all but their first, and take the next item
 * when they are free for one. With at most one wave every item is a
 * program's first anyway (512 tokens x batch 1: 128 items on 132 SMs, 1.18x
 * the time on the item-loop kernel; bench/RESULTS.md version 25). The
 * dynamic grid's item space is ranks x sequences x columns (ranks: the
 * longest sequence's tiles), and each empty item costs its claimer a round
 * trip to the counter: a batch whose items (at most the bound above) are
 * fewer than half of that space (sequences much shorter than the longest,
 * a mixed batch's decode tokens) runs one program an item too. (Version
 * 25's mixed row, 94 % of its space empty, was 1.03-1.04x on the dynamic
 * grid; that the empty claims cost it is an inference.) Only plans whose
 * layout allows it (attn_launch_plan_prefill_layout's `dynamic`: the
 * 128-key plans, D <= 128). The test and bench switch
 * (gpu_attn_force_prefill_persistent) sets it for every launch. */
static int prefill_takes_dynamic(const gpu_attn_ctx *c, const attn_batch_dims *b, int nseg)
{
    if (c->prefill_dynamic >= 0)
        return c->prefill_dynamic;
    if (!c->prefill_layout_dynamic)
        return 0;
    const attn_kparams t = prefill_tiles(c);
    const long work = grid_work(c, b, t.block_q, t.head_splits);
    return (double)work * nseg > (double)prefill_wave(c) &&
           2.0 * work >= prefill_item_space(c, b);
}

/* The counters of a launch on the dynamic grid: one a segment, in the
 * workspace (gpu_attn_workspace_size counts them, the forward places them
 * after the partials and the launch below zeroes them); 0 where the launch
 * runs one program an item. A launch whose item space (plus a claim a
 * program past it) would overflow the 32-bit counters runs one program an
 * item. b = NULL: the most a launch at nseg segments may need. */
static size_t prefill_counters_size(int nseg)
{
    return (size_t)nseg * sizeof(int32_t);
}
static size_t prefill_counter_bytes(const gpu_attn_ctx *c, const attn_batch_dims *b, int nseg)
{
    if (!b)
        return c->prefill_dynamic == 0 ? 0 : prefill_counters_size(nseg);
    if (prefill_item_space(c, b) + prefill_dynamic_programs(c, nseg) > (double)INT32_MAX ||
        !prefill_takes_dynamic(c, b, nseg))
        return 0;
    return prefill_counters_size(nseg);
}

/* The dynamic grid where the forward gave the launch its counters
 * (p->counters), else one program an item. The dynamic grid: a program
 * streams item after item, so only its first pays the pipeline's start;
 * its items go rank-major in groups of (sequence, KV head x head split)
 * pairs whose K/V fill a third of the L2. */
static hipError_t prefill_launch(const gpu_attn_ctx *c, const attn_kparams *p,
                                 const attn_batch_dims *b, hipStream_t stream)
{
    if (!p->counters)
        return attn_launch_prefill(p, stream);
    attn_kparams q = *p;
    const int64_t pairs = (int64_t)p->num_seqs * p->hkv * p->head_splits;
    q.prefill_rank_tiles = ceil_div(b->max_q, p->block_q);
    const int64_t items = q.prefill_rank_tiles * pairs;
    const int64_t programs = prefill_dynamic_programs(c, p->nseg);
    q.prefill_programs = (int)(programs < items ? programs : items);
    const int64_t pair_bytes =
        (int64_t)(b->max_k > 0 ? b->max_k : 1) * 2 * p->d * (int64_t)attn_dtype_size(p->kv_dtype);
    const int64_t budget = c->l2_bytes > 0 ? c->l2_bytes / 3 : (int64_t)16 << 20;
    const int64_t gp = budget / pair_bytes;
    q.prefill_group_pairs = (int)(gp < 1 ? 1 : gp > pairs ? pairs : gp);
    /* this launch's counters, zeroed in stream order (graph-capturable;
     * concurrent launches have their own workspaces); the forward gave them
     * only where prefill_counter_bytes granted them, so the rule is not
     * asked again */
    const hipError_t e = hipMemsetAsync(q.counters, 0, prefill_counters_size(p->nseg), stream);
    if (e != hipSuccess)
        return e;
    return attn_launch_prefill(&q, stream);
}

const attn_family_ops attn_family_prefill = {"prefill-wgmma",  0,
                                             prefill_segments, prefill_tiling,
                                             prefill_launch,   prefill_counter_bytes};

/* ---- decode (one query token a sequence): one program per (sequence, KV
 * head, head group, segment) ---- */

static void decode_tiling(const gpu_attn_ctx *c, attn_kparams *p)
{
    (void)c;
    p->block_q = 1;
    p->heads_per_tile = attn_decode_heads_per_program(p->group, p->d);
    p->head_splits = ceil_div(p->group, p->heads_per_tile);
}

/* The scalar decode kernel (attn_generic.hip). Its programs are short and
 * its grid is one wave or less at batch 64 (512 programs for 32:8 heads),
 * and a partly filled last wave leaves whole multiprocessors waiting on one
 * program's memory latency. So the key range is split until the grid has
 * about 16 programs per compute unit (several waves, so the last one is a
 * small fraction of the time), in powers of two, at most 64, and never below
 * 128 keys (32 per warp) a segment: a partial is hq x (D + 2) floats per
 * token, small against the K/V bytes of 128 keys. */
static int decode_segments(const gpu_attn_ctx *c, const attn_batch_dims *b)
{
    const int group = group_of(c);
    const int hs = ceil_div(group, attn_decode_heads_per_program(group, c->shape.head_dim));
    const long work = (long)b->seqs * attn_shape_kv_heads(&c->shape) * hs;
    return split_segments(work, 16L * c->cus, b->max_k, 128);
}

static hipError_t decode_launch(const gpu_attn_ctx *c, const attn_kparams *p,
                                const attn_batch_dims *b, hipStream_t stream)
{
    (void)c;
    (void)b;
    return attn_launch_decode(p, stream);
}

const attn_family_ops attn_family_decode = {"decode", 0, decode_segments, decode_tiling,
                                            decode_launch, NULL};

/* The matrix-unit decode kernel (attn_decode_mma.hip): up to 16 query heads
 * a program. */
static void decode_mma_tiling(const gpu_attn_ctx *c, attn_kparams *p)
{
    (void)c;
    p->block_q = 1;
    p->heads_per_tile = 16;
    p->head_splits = ceil_div(p->group, p->heads_per_tile);
}

/* Its programs are single warps that each stream their own tiles, and a
 * warp spends most of a tile waiting out its own instruction latencies, so
 * what matters is that every multiprocessor holds many at once; beyond that
 * more segments only add partials and per-program start-up (measured: 2 and
 * 4 waves were slower than 1 at every batch of 8 or more, and aiming at 6 of
 * the 8 programs a CU holds beat aiming at all of them: the grid then ends
 * in fewer, longer programs). Split the key range until the grid reaches
 * attn_decode_mma_target_per_cu programs per CU, in powers of two, at most
 * 64, and never below 32 keys (2 tiles) a segment, where the partial and the
 * reduce would cost more than the keys (measured at batch 1 over 1024 keys
 * with the vectorised reduce: 32 segments 8.4 us, 16 segments 9.5 us). */
static int decode_mma_segments(const gpu_attn_ctx *c, const attn_batch_dims *b)
{
    const int hkv = attn_shape_kv_heads(&c->shape);
    const long work = (long)b->seqs * hkv * ceil_div(group_of(c), 16);
    const long target =
        (long)attn_decode_mma_target_per_cu(c->shape.head_dim, attn_dtype_is_fp8(c->shape.kv_dtype)) *
        c->cus;
    return split_segments(work, target, b->max_k, 32);
}

static hipError_t decode_mma_launch(const gpu_attn_ctx *c, const attn_kparams *p,
                                    const attn_batch_dims *b, hipStream_t stream)
{
    (void)c;
    (void)b;
    return attn_launch_decode_mma(p, stream);
}

const attn_family_ops attn_family_decode_mma = {"decode-mma", 0, decode_mma_segments,
                                                decode_mma_tiling, decode_mma_launch, NULL};

/* ---- the MTP verify kernel (attn_mtp.hip) ---- */

static void mtp_tiling(const gpu_attn_ctx *c, attn_kparams *p)
{
    (void)c;
    (void)p; /* its launcher tiles: a program is one KV head's 16 query heads */
}

/* The upstream reference rule:
 *   num_2d = (T/2 + S) * Hkv; p = ceil(2 * CUs / num_2d);
 *   NSEG = min(64, next_pow2(min(min(64, ceil(K/32)),
 *                                max(8, p, min(ceil(K/1024), 8p)))))
 * bounded by one wave: the grid is S * Hkv * NSEG programs and a CU holds
 * ATTN_MTP_PROGRAMS_PER_CU of them, so NSEG is at most the power of two at
 * or below 2 * CUs / (S * Hkv). The reference rule's floor of 8 segments
 * made batch 64 two waves, each program writing partials the reduce reads
 * back (measured, q 2/4 over 1k-16k keys at batch 64: 4 segments 11-22 %
 * faster than the rule's 8 or 16; at batch 32 its 8 was best over 4096
 * keys, and at batch 1-8 the rule stands). */
static int mtp_segments(const gpu_attn_ctx *c, const attn_batch_dims *b)
{
    const int maxk = b->max_k;
    if (maxk <= 0)
        return 1;
    long num_2d = ((long)b->tokens / 2 + b->seqs) * attn_shape_kv_heads(&c->shape);
    if (num_2d < 1)
        num_2d = 1;
    int p = (int)((2L * c->cus + num_2d - 1) / num_2d);
    int a = ceil_div(maxk, 32);
    if (a > 64)
        a = 64;
    int bb = ceil_div(maxk, 1024);
    if (bb > 8 * p)
        bb = 8 * p;
    int x = 8;
    if (p > x)
        x = p;
    if (bb > x)
        x = bb;
    int n = next_pow2(a < x ? a : x);
    if (n > 64)
        n = 64;
    const long programs = (long)b->seqs * attn_shape_kv_heads(&c->shape);
    const long wave = (long)ATTN_MTP_PROGRAMS_PER_CU * c->cus;
    while (n > 1 && programs * n > wave)
        n >>= 1;
    return n;
}

/* The warpgroup kernel's pair form (attn_mtp.hip: two segments a program of
 * two warpgroups, one program a CU) where its grid of nseg / 2 programs still
 * covers the CUs (9 in 10): it holds as many warpgroups on a CU as two
 * one-warpgroup programs, but converts Q once and writes half the partials.
 * Below that (batch 8 and less) the one-warpgroup programs keep every CU
 * busy. */
static int mtp_pair_rule(const gpu_attn_ctx *c, const attn_batch_dims *b, int nseg)
{
    if (c->mtp_pair >= 0)
        return c->mtp_pair;
    const long pairs = (long)b->seqs * attn_shape_kv_heads(&c->shape) * (nseg / 2);
    return nseg >= 2 && pairs * 10 >= 9L * c->cus;
}

static hipError_t mtp_launch(const gpu_attn_ctx *c, const attn_kparams *p,
                             const attn_batch_dims *b, hipStream_t stream)
{
    attn_kparams q = *p;
    q.mtp_pair = mtp_pair_rule(c, b, p->nseg);
    return attn_launch_mtp(&q, b->max_q, p->nseg, stream);
}

/* Its programs write partials at every segment count: the reduce writes the
 * output. */
const attn_family_ops attn_family_mtp = {"mtp", 1, mtp_segments, mtp_tiling, mtp_launch, NULL};

/* ==== the plugin kernels ================================================ */

static int sm90_proper(const hipDeviceProp_t *prop)
{
    return prop->major == 9 && prop->minor == 0;
}

/* ---- aiter-generic: every head size of the list, 16-bit and fp8 caches ---- */

static attn_status generic_check_shape(const attn_shape *s, char *err, size_t n)
{
    const int dv = attn_shape_head_dim_v(s);
    if (!attn_generic_supports(s->head_dim, dv, s->kv_dtype)) {
        attn_set_err(err, n,
                     "head_dim %d / head_dim_v %d / kv %d: the generic kernel is built for "
                     "head_dim = head_dim_v in {%s} and a 16-bit or fp8 KV cache",
                     (int)s->head_dim, (int)dv, (int)s->kv_dtype, ATTN_GPU_HEAD_DIMS_TEXT);
        return ATTN_ERR_CREATE_FAILED;
    }
    return ATTN_OK;
}

/* The plan decides which kernels run the shape; the prefill kernel is wgmma
 * code: the plan takes it where the build has sm_90a code (its features) for
 * the shapes it takes, and the device must be sm_90 itself, not only named
 * so. */
static void generic_configure(gpu_attn_ctx *c, const hipDeviceProp_t *prop)
{
    const int multi = attn_launch_plan_find(&c->plan, ATTN_ROLE_MULTI);
    c->prefill = sm90_proper(prop) && multi >= 0 &&
                 attn_launch_plan_kernel_of(&c->plan.kernels[multi]) == ATTN_PLAN_KERNEL_PREFILL_WGMMA;
    if (c->prefill) {
        const int kv8 = attn_dtype_is_fp8(c->shape.kv_dtype);
        c->prefill_per_cu = attn_prefill_programs_per_cu(prop, c->shape.head_dim, kv8);
        c->prefill_layout_dynamic = attn_launch_plan_prefill_layout(c->shape.head_dim, kv8).dynamic;
    }
}

/* One query token a sequence: the matrix-unit decode kernel where the plan
 * takes the shape and the batch fits its grid (sequences in y, at most
 * 65535), else the scalar decode kernel. More: the prefill kernel where the
 * context has it, else the portable kernel. */
static const attn_family_ops *generic_family(const gpu_attn_ctx *c, const attn_batch_dims *b,
                                             int prefill_ok)
{
    if (b->max_q == 1)
        return c->decode_mma && b->seqs <= 65535 ? &attn_family_decode_mma : &attn_family_decode;
    if (c->prefill && prefill_ok)
        return &attn_family_prefill;
    return &attn_family_generic;
}

static const attn_kernel_ops generic_kernel_ops = {
    GPU_ATTN_KERNEL_GENERIC, 4, generic_check_shape, NULL, attn_launch_plan_generic, generic_configure,
    NULL, generic_family};

/* ---- aiter-mtp: the MTP verify shape (attn_launch_plan.h's limits) ---- */

static attn_status mtp_check_shape(const attn_shape *s, char *err, size_t n)
{
    const int hkv = attn_shape_kv_heads(s), dv = attn_shape_head_dim_v(s);
    if (s->num_q_heads / hkv != ATTN_MTP_GROUP || s->head_dim != ATTN_MTP_D || dv != ATTN_MTP_D ||
        s->page_size != ATTN_MTP_PAGE || s->kv_dtype != ATTN_DTYPE_FP8_E4M3FN ||
        s->max_q_len < 1 || s->max_q_len > ATTN_MTP_MAX_Q_LEN) {
        attn_set_err(err, n,
                     "the MTP kernel needs %d query heads per KV head, head_dim %d, page "
                     "%d, fp8_e4m3fn KV and 1-%d query tokens",
                     ATTN_MTP_GROUP, ATTN_MTP_D, ATTN_MTP_PAGE, ATTN_MTP_MAX_Q_LEN);
        return ATTN_ERR_CREATE_FAILED;
    }
    return ATTN_OK;
}

/* The kernel's CUDA path needs the e4m3 -> f16 conversion instruction of
 * sm_89 and later. */
static attn_status mtp_check_device(const hipDeviceProp_t *prop, int device, const char *arch,
                                    char *err, size_t n)
{
#if defined(ATTN_PLATFORM_CUDA)
    if (prop->major * 10 + prop->minor < 89) {
        attn_set_err(err, n, "the MTP kernel needs sm_89 or later (device %d is %s)", device,
                     arch);
        return ATTN_ERR_CREATE_FAILED;
    }
#else
    (void)prop;
    (void)device;
    (void)arch;
    (void)err;
    (void)n;
#endif
    return ATTN_OK;
}

/* The warpgroup (wgmma) variant runs where the build has sm_90a code and the
 * device is sm_90, for batches with 3-4 query tokens per sequence: its 64
 * rows are all used there, and on the H200 it is 1.25x faster than the
 * mma.sync variant, which stays faster at q_len <= 2 (32 rows;
 * bench/RESULTS.md). gpu_attn_force_mtp_variant (the plugin's [params]
 * mtp_variant, the bench's and the tests' switch) picks one variant for
 * every q_len. The library reads no environment here: a host's skip_env
 * covers its plugins too. */
static void mtp_configure(gpu_attn_ctx *c, const hipDeviceProp_t *prop)
{
    if (attn_mtp_has_wgmma() && sm90_proper(prop))
        c->mtp_wgmma = 2;
    c->mtp_wgmma_capable = c->mtp_wgmma != 0;
}

static attn_status mtp_check_batch(const gpu_attn_ctx *c, const attn_forward_args *a, char *err,
                                   size_t n)
{
    (void)c;
    if (a->max_seqlen_q > ATTN_MTP_MAX_Q_LEN) {
        attn_set_err(err, n, "the MTP kernel takes at most %d query tokens per sequence",
                     ATTN_MTP_MAX_Q_LEN);
        return ATTN_ERR_INVALID_ARGUMENT;
    }
    return ATTN_OK;
}

static const attn_family_ops *mtp_family(const gpu_attn_ctx *c, const attn_batch_dims *b,
                                         int prefill_ok)
{
    (void)c;
    (void)b;
    (void)prefill_ok;
    return &attn_family_mtp;
}

static const attn_kernel_ops mtp_kernel_ops = {
    GPU_ATTN_KERNEL_MTP, 16,           mtp_check_shape, mtp_check_device, attn_launch_plan_mtp,
    mtp_configure,       mtp_check_batch, mtp_family};

const attn_kernel_ops *attn_kernel_ops_of(gpu_attn_kernel kernel)
{
    switch (kernel) {
    case GPU_ATTN_KERNEL_GENERIC:
        return &generic_kernel_ops;
    case GPU_ATTN_KERNEL_MTP:
        return &mtp_kernel_ops;
    }
    return NULL;
}

#endif /* !__HIP_DEVICE_COMPILE__ */
