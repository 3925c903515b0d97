/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_launch_plan.h — the one table of the GPU kernels' launch plans: which
 * kernel runs a shape on an arch, its program configuration (threads, rows,
 * keys, stages) and the shared memory / LDS one program needs, checked
 * against the arch's limits.
 *
 * Three readers, one source:
 *   - the plugins' predicates (C, built with or without the kernels) reject
 *     a shape whose plan does not fit, naming the resource;
 *   - the plugins' describe_plan hook reports the plan (attnreg explain);
 *   - the launcher (gpu_attn.hip) computes the same plan at create and
 *     launches what it says; the kernels size their shared memory with the
 *     byte functions below (constexpr in C++), so the bytes the predicate
 *     checked are the bytes the launch asks for.
 * Header-only: plugins do not link libattnreg, and the kernels are C++.
 * Its functions are named attn_launch_plan_* after the struct they fill:
 * attn_plan_* alone is the model plan of attnreg.h (attn_registry_plan).
 */
#ifndef ATTN_LAUNCH_PLAN_H
#define ATTN_LAUNCH_PLAN_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attn_plugin.h"

#if defined(__CUDACC__) || defined(__HIP__)
/* Device code sizes its shared memory with these too (static_assert). */
#define ATTN_PLAN_FN static inline constexpr __host__ __device__
#elif defined(__cplusplus)
#define ATTN_PLAN_FN static inline constexpr
#else
#define ATTN_PLAN_FN static inline
#endif

/* ---- the arch limits table --------------------------------------------
 * AMD CDNA3 (gfx942, MI300) gives a workgroup 64 KB of LDS, CDNA4 (gfx950,
 * MI350) 160 KB; a wave is 64 lanes and may hold 512 VGPRs (256 arch + 256
 * accumulation). NVIDIA sm_90 lets a block opt in to 227 KB of shared memory
 * and a thread hold 255 registers. */
static const attn_arch_limits attn_gpu_arch_limits[] = {
    {sizeof(attn_arch_limits), "gfx942", 64 * 1024, 64, 1024, 512},
    {sizeof(attn_arch_limits), "gfx950", 160 * 1024, 64, 1024, 512},
    {sizeof(attn_arch_limits), "sm_90", 227 * 1024, 32, 1024, 255},
};
#define ATTN_GPU_ARCH_LIMITS_COUNT (sizeof attn_gpu_arch_limits / sizeof attn_gpu_arch_limits[0])

/* The limits of `arch`, or NULL when the table does not know it. */
static inline const attn_arch_limits *attn_gpu_limits_of(const char *arch)
{
    size_t i;
    for (i = 0; i < ATTN_GPU_ARCH_LIMITS_COUNT; i++)
        if (strncmp(attn_gpu_arch_limits[i].arch, arch, ATTN_ARCH_MAX) == 0)
            return &attn_gpu_arch_limits[i];
    return NULL;
}

/* NVIDIA archs copy K/V tiles with cp.async, so the generic kernel needs two
 * stages to overlap them; elsewhere copies are synchronous and one stage
 * does the same work. */
static inline int attn_launch_plan_arch_is_nvidia(const char *arch)
{
    return strncmp(arch, "sm_", 3) == 0;
}

/* ---- bytes per program, per kernel ------------------------------------ */

/* Portable generic kernel (attn_generic.hip): 4 warps of rows_per_warp query
 * rows, 32-key tiles. Q, K and V tiles as float (rows padded by 4 floats),
 * then `stages` raw tiles of K and V as stored. */
#define ATTN_GEN_TILE 32
#define ATTN_GEN_WARPS 4
ATTN_PLAN_FN int attn_launch_plan_generic_bytes(int d, int dv, int kv_bytes, int rows_per_warp,
                                                int stages)
{
    return 4 * ((ATTN_GEN_WARPS * rows_per_warp + ATTN_GEN_TILE) * (d + 4) +
                ATTN_GEN_TILE * (dv + 4)) +
           stages * ATTN_GEN_TILE * (d + dv) * kv_bytes;
}
/* The raw-K/V variant (RAWKV): no float K/V tiles; the raw stages' rows
 * padded by 16 bytes. What gfx942 runs at D 192 and 256. */
#define ATTN_GEN_RAW_PAD 16
ATTN_PLAN_FN int attn_launch_plan_generic_raw_bytes(int d, int dv, int kv_bytes, int rows_per_warp,
                                                    int stages)
{
    return 4 * ATTN_GEN_WARPS * rows_per_warp * (d + 4) +
           stages * ATTN_GEN_TILE * ((d + dv) * kv_bytes + ATTN_GEN_RAW_PAD);
}
/* Head sizes the raw-K/V variant is compiled for (a sub-list of
 * ATTN_GPU_HEAD_DIM_LIST; the generic launcher instantiates from it). */
#define ATTN_GPU_RAW_KV_HEAD_DIM_LIST(X) X(192) X(256)
#define ATTN_GPU_HEAD_DIM_EQ_(d) || dd == (d)
static inline int attn_launch_plan_generic_raw_built(int dd)
{
    return 0 ATTN_GPU_RAW_KV_HEAD_DIM_LIST(ATTN_GPU_HEAD_DIM_EQ_);
}
/* NVIDIA: at most 76 KB, which keeps three programs per multiprocessor at
 * head size 128 (more programs, more tiles in flight); elsewhere the arch's
 * limit. */
#define ATTN_GEN_NVIDIA_BUDGET (76 * 1024)
#define ATTN_GEN_MAX_STAGES 4

/* Scalar decode kernel (attn_generic.hip): 4 warps, static shared memory
 * for the cross-warp merge of gt heads: accumulators and (max, sum). */
#define ATTN_DEC_WARPS 4
#define ATTN_DEC_KEYS 8 /* keys per warp per iteration */
ATTN_PLAN_FN int attn_launch_plan_decode_bytes(int d, int gt)
{
    return 4 * ATTN_DEC_WARPS * gt * d + 4 * ATTN_DEC_WARPS * gt * 2;
}
/* Query heads per decode program: the whole group when it is small, so each
 * K/V byte is read once; at most 8 (4 for D > 128, where a lane holds two
 * chunks per head) to keep Q and the accumulator in registers. */
ATTN_PLAN_FN int attn_launch_plan_decode_heads(int group, int d)
{
    const int cap = d > 128 ? 4 : 8;
    const int gt = group <= 1 ? 1 : group <= 2 ? 2 : group <= 4 ? 4 : 8;
    return gt > cap ? cap : gt;
}

/* The segment reduce (attn_generic.hip): the most segments it merges (and a
 * forced count may ask for; each segment rule has its own, lower cap), its
 * block sizes (ATTN_REDUCE_THREADS_MANY from ATTN_REDUCE_MANY_SEGMENTS
 * segments, else ATTN_REDUCE_THREADS) and its static LDS: a float4 a thread
 * (the segment groups' sums) and one array of a weight and a sum per
 * segment plus the scale, padded to 4 floats. */
#define ATTN_REDUCE_MAX_SEGMENTS 256
#define ATTN_REDUCE_THREADS 128
#define ATTN_REDUCE_THREADS_MANY 256
#define ATTN_REDUCE_MANY_SEGMENTS 16
#define ATTN_REDUCE_ML_FLOATS (2 * ATTN_REDUCE_MAX_SEGMENTS + 4)
/* Its row-wise form (attn_reduce_rows_kernel): up to this many segments,
 * every thread one column quad of one (token, head) row and all of that
 * row's segments in flight at once, ATTN_REDUCE_ROWS_THREADS threads a
 * block (as many whole rows as fit), no LDS. */
#define ATTN_REDUCE_ROWS_MAX_SEGMENTS 8
#define ATTN_REDUCE_ROWS_THREADS 256
/* The (token, head) rows of dv floats one block of it merges (0: a row has
 * more column quads than the block has threads, and the per-row form runs). */
ATTN_PLAN_FN int attn_launch_plan_reduce_rows_per_block(int dv)
{
    return dv >= 4 ? ATTN_REDUCE_ROWS_THREADS / (dv / 4) : 0;
}
ATTN_PLAN_FN int attn_launch_plan_reduce_bytes(int threads)
{
    return 16 * threads + 4 * ATTN_REDUCE_ML_FLOATS;
}

/* Matrix-unit decode kernel (attn_decode_mma.hip, NVIDIA): one warp, Q (16
 * rows) and 16-key K and V tiles, rows of D 16-bit elements plus 16 bytes of
 * padding. A 16-bit cache: 3 stages of K and V tiles. An fp8 cache: the raw
 * 16-key K and V tiles (D bytes a row) in ATTN_DMMA_FP8_STAGES stages, each
 * converted in turn into one f16 K and V tile, and the 16 Q rows' score
 * multipliers (a bf16 Q row enters the f16 matrix units scaled by a power of
 * two). The raw tiles are half the bytes, so the fp8 program keeps more of
 * them in flight for about the same shared memory; read straight into the
 * fragments (attn_launch_plan_decode_mma_fp8_direct) they need no f16 tile, and a
 * multiprocessor holds more programs. */
#define ATTN_DMMA_TILE 16
#define ATTN_DMMA_STAGES 3
#define ATTN_DMMA_FP8_STAGES 4
#define ATTN_DMMA_ROWMUL_BYTES (ATTN_DMMA_TILE * 4)
/* Up to this head size the Q fragments live in registers for the whole
 * program (KC x 4 = 32 at D 128), so Q needs no shared memory of its own: it
 * passes through a stage that is not yet in use. Above it they would spill. */
#define ATTN_DMMA_QREG_MAX_D 128
ATTN_PLAN_FN int attn_launch_plan_decode_mma_stages(int kv8)
{
    return kv8 ? ATTN_DMMA_FP8_STAGES : ATTN_DMMA_STAGES;
}
/* fp8 caches whose head size is a multiple of 32 are read straight from the
 * raw stages into the matrix units' fragments (no f16 tile): their raw rows
 * are padded by 16 bytes, so that the fragments' 4-byte reads of 8 rows fall
 * in distinct banks. Other fp8 head sizes (80) convert through the f16 tile. */
ATTN_PLAN_FN int attn_launch_plan_decode_mma_fp8_direct(int d)
{
    return d % 32 == 0;
}
/* Bytes a 16-bit row (Q, K, V or the f16 tile of an fp8 cache) takes in
 * shared memory. Rows of a multiple of 128 bytes are stored unpadded with
 * their 16-byte chunks XOR-swizzled (chunk c of row r at c ^ (r & 7)), so
 * that the 8 rows one ldmatrix phase reads fall in 8 bank groups and every
 * cp.async of a 128-byte line lands in one 128-byte line of shared memory;
 * the others (D 80, 96) are padded by 16 bytes. (Padded 256-byte rows made
 * each 16-byte copy's destination straddle shared-memory lines that its
 * source sectors do not: Nsight Compute counted 24 L2 sectors per warp's
 * copy of two rows instead of 16, 1.5x the K/V bytes through the L2 -> SM
 * crossbar; bench/RESULTS.md version 17.) */
ATTN_PLAN_FN int attn_launch_plan_decode_mma_row(int d)
{
    return d * 2 % 128 == 0 ? d * 2 : d * 2 + 16;
}
/* Bytes a raw fp8 row takes in the stages of the direct path: unpadded and
 * swizzled the same way where it is a multiple of 128 bytes (D 128, 256),
 * else padded by 16 bytes so that the fragments' 4-byte reads of 8 rows
 * fall in distinct banks. */
ATTN_PLAN_FN int attn_launch_plan_decode_mma_raw_row(int d)
{
    return d % 128 == 0 ? d : d + 16;
}
ATTN_PLAN_FN int attn_launch_plan_decode_mma_bytes(int d, int kv8)
{
    const int row = attn_launch_plan_decode_mma_row(d),
              q = d <= ATTN_DMMA_QREG_MAX_D ? 0 : ATTN_DMMA_TILE * row;
    if (kv8 && attn_launch_plan_decode_mma_fp8_direct(d))
        return q + ATTN_DMMA_ROWMUL_BYTES +
               ATTN_DMMA_FP8_STAGES * 2 * ATTN_DMMA_TILE * attn_launch_plan_decode_mma_raw_row(d);
    return kv8 ? q + 2 * ATTN_DMMA_TILE * row + ATTN_DMMA_ROWMUL_BYTES +
                     ATTN_DMMA_FP8_STAGES * 2 * ATTN_DMMA_TILE * d
               : q + ATTN_DMMA_STAGES * 2 * ATTN_DMMA_TILE * row;
}
/* A decode-mma launch groups up to ATTN_DMMA_MAX_WARPS of these one-warp
 * programs into one block: warp w takes key segment W z + w, each in its own
 * slice of the block's shared memory (the bytes above, rounded up to 128 so
 * that every slice keeps the rows' 128-byte alignment), and the W states
 * merge through shared memory at the end. W segments then write one partial,
 * and a launch whose segments all fit one block writes the output itself,
 * with no reduce launch. W is the largest of 4, 2, 1 that divides the
 * segment count and whose slices fit max_bytes (a block's shared memory). */
#define ATTN_DMMA_MAX_WARPS 4
ATTN_PLAN_FN int attn_launch_plan_decode_mma_slice(int d, int kv8)
{
    return (attn_launch_plan_decode_mma_bytes(d, kv8) + 127) / 128 * 128;
}
ATTN_PLAN_FN int attn_launch_plan_decode_mma_warps(int d, int kv8, int nseg, int max_bytes)
{
    int w = ATTN_DMMA_MAX_WARPS;
    while (w > 1 && (nseg % w != 0 || w * attn_launch_plan_decode_mma_slice(d, kv8) > max_bytes))
        w /= 2;
    return w;
}

/* MTP kernel (attn_mtp.hip, NVIDIA): D 256, 32-key fp8 tiles in 3 raw
 * stages, f16 K and V tiles, Q of qw warps x 16 rows (64 rows for the
 * warpgroup variant, which also aligns its base to 1024 bytes and keeps the
 * row multipliers in registers). */
#define ATTN_MTP_D 256
/* The shapes the MTP kernel is built and measured for, one set of names for
 * aiter-mtp-gfx950's predicates, the launcher's checks and the kernel: 16
 * query heads per KV head (stacked into the rows of one matrix tile), head
 * size ATTN_MTP_D, page 16, fp8 e4m3fn KV, 2-4 speculative tokens (one
 * token is plain decode, where the generic kernel is as fast) over more
 * than 512 keys (fewer leave too few pages for the KV reuse to pay). */
#define ATTN_MTP_GROUP 16
#define ATTN_MTP_PAGE 16
#define ATTN_MTP_MIN_Q_LEN 2
#define ATTN_MTP_MAX_Q_LEN 4
#define ATTN_MTP_MIN_KV_LEN_EXCLUSIVE 512
#define ATTN_MTP_TILE 32
#define ATTN_MTP_STAGES 3
ATTN_PLAN_FN int attn_launch_plan_mtp_rows(int qw, int wg)
{
    return wg ? 64 : qw * 16;
}
ATTN_PLAN_FN int attn_launch_plan_mtp_bytes(int qw, int wg)
{
    return (wg ? 1024 : 0) + attn_launch_plan_mtp_rows(qw, wg) * ATTN_MTP_D * 2 +
           ATTN_MTP_STAGES * 2 * ATTN_MTP_TILE * ATTN_MTP_D + 2 * ATTN_MTP_TILE * ATTN_MTP_D * 2 +
           (wg ? 0 : attn_launch_plan_mtp_rows(qw, wg) * 4);
}
/* The warpgroup variant's pair form: one 256-thread program a CU whose two
 * warpgroups share the 64 Q rows (converted once, by all 8 warps, their row
 * multipliers in shared memory), each with its own ATTN_MTP_PAIR_STAGES raw
 * stages and f16 K/V tile, taking two consecutive key segments and merging
 * them at the end: half the partials and half the Q work of two one-warpgroup
 * programs on the same CU. */
#define ATTN_MTP_PAIR_STAGES 4
ATTN_PLAN_FN int attn_launch_plan_mtp_pair_wg_bytes(void)
{
    return ATTN_MTP_PAIR_STAGES * 2 * ATTN_MTP_TILE * ATTN_MTP_D +
           2 * ATTN_MTP_TILE * ATTN_MTP_D * 2;
}
ATTN_PLAN_FN int attn_launch_plan_mtp_pair_bytes(void)
{
    const int rows = attn_launch_plan_mtp_rows(4, 1); /* the warpgroup variant's Q */
    return 1024 + rows * ATTN_MTP_D * 2 + 2 * attn_launch_plan_mtp_pair_wg_bytes() + rows * 4;
}

/* Prefill kernel (attn_prefill.hip, sm_90a): 128 rows, one producer and two
 * consumer warpgroups, 128-key tiles (64 at D >= 192), a ring of as many
 * f16 K/V stages (2-4) as fit the 227 KB; an fp8 cache adds one or two raw
 * stages and per-row Q multipliers. */
typedef struct attn_prefill_layout {
    int padded_d;    /* head dim in shared memory (a multiple of 64) */
    int rows, keys;  /* per program, per tile */
    int threads;     /* 1 producer + 2 consumer warpgroups */
    int tile_bytes;  /* one f16 K or V tile */
    int stage_bytes; /* K then V */
    int raw_stage;   /* one raw fp8 K+V tile (0 for 16-bit caches) */
    int ring;        /* raw fp8 stages */
    int fixed;       /* bytes before the f16 stages */
    int stages;      /* f16 K/V stages */
    int bytes;       /* dynamic shared memory per program */
    int dynamic;     /* the one-wave rule may run this plan on the dynamic grid */
} attn_prefill_layout;
#define ATTN_PREFILL_ALIGN 1024
#define ATTN_PREFILL_MAX_STAGES 4
#define ATTN_PREFILL_SMEM_LIMIT (227 * 1024)
ATTN_PLAN_FN attn_prefill_layout attn_launch_plan_prefill_layout(int d, int kv8)
{
    attn_prefill_layout l = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    l.padded_d = (d + 63) / 64 * 64;
    l.rows = 128;
    l.keys = l.padded_d <= 128 ? 128 : 64;
    l.threads = 384;
    l.tile_bytes = l.keys * l.padded_d * 2;
    l.stage_bytes = 2 * l.tile_bytes;
    l.raw_stage = kv8 ? 2 * l.keys * d : 0;
    /* alignment slack, Q, 4 mbarriers per stage, the producer's slot table
     * (2 x keys ints), the fp8 row multipliers */
    const int fixed0 = ATTN_PREFILL_ALIGN + l.rows * l.padded_d * 2 +
                       4 * ATTN_PREFILL_MAX_STAGES * 8 + 2 * l.keys * 4 + (kv8 ? l.rows * 4 : 0);
    l.ring = !kv8                                                                        ? 0
             : (ATTN_PREFILL_SMEM_LIMIT - fixed0 - 2 * l.raw_stage) / l.stage_bytes >= 2 ? 2
                                                                                         : 1;
    l.fixed = fixed0 + l.ring * l.raw_stage;
    l.stages = (ATTN_PREFILL_SMEM_LIMIT - l.fixed) / l.stage_bytes;
    if (l.stages > ATTN_PREFILL_MAX_STAGES)
        l.stages = ATTN_PREFILL_MAX_STAGES;
    l.bytes = l.fixed + l.stages * l.stage_bytes;
    /* The dynamic grid only for the 128-key plans: on the H200 the 64-key
     * plans (D >= 192) gained at one of four rows (32/8 D256 2048 x 1: 0.92x)
     * and lost at the others (16/1 D256 2048 x 1: 1.08x, x 4 and fp8 x 4:
     * 1.02x, 32/8 x 4: 1.00x; bench/RESULTS.md version 28). */
    l.dynamic = l.keys == 128;
    return l;
}

/* ---- which kernels a shape runs ---------------------------------------- */

static inline int attn_launch_plan_is_fp8(int32_t dtype)
{
    return dtype == ATTN_DTYPE_FP8_E4M3FN || dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
}
static inline int attn_launch_plan_kv_bytes(int32_t dtype)
{
    return dtype == ATTN_DTYPE_F32 ? 4 : attn_launch_plan_is_fp8(dtype) ? 1 : 2;
}
/* The head sizes the GPU kernels are compiled for (D == Dv), as one list: X(D) per
 * size. The array the predicates read, attn_launch_plan_head_dim_built, the
 * sentence naming them, and the launchers' compile-time dispatch
 * (attn_dispatch_head_dim in gpu_attn_internal.h) are generated from it, so
 * a new size is one entry here (plus its tests). */
#define ATTN_GPU_HEAD_DIM_LIST(X) X(64) X(80) X(96) X(128) X(192) X(256)
#define ATTN_GPU_HEAD_DIM_ENTRY_(d) d,
#define ATTN_GPU_HEAD_DIM_TEXT_(d) ", " #d
static const int32_t attn_gpu_head_dims[] = {ATTN_GPU_HEAD_DIM_LIST(ATTN_GPU_HEAD_DIM_ENTRY_)};
#define ATTN_GPU_HEAD_DIMS_COUNT (sizeof attn_gpu_head_dims / sizeof attn_gpu_head_dims[0])
/* "64, 80, 96, 128, 192, 256": for messages (past the first ", ") */
#define ATTN_GPU_HEAD_DIMS_TEXT (&(ATTN_GPU_HEAD_DIM_LIST(ATTN_GPU_HEAD_DIM_TEXT_))[2])
static inline int attn_launch_plan_head_dim_built(int d)
{
    size_t i;
    for (i = 0; i < ATTN_GPU_HEAD_DIMS_COUNT; i++)
        if (attn_gpu_head_dims[i] == d)
            return 1;
    return 0;
}

/* The prefill kernel takes D == Dv in the built list, Q bf16/f16 with a
 * cache of Q's type or an e4m3 cache (not at D 192), no FP8 compute. */
static inline int attn_launch_plan_prefill_takes(const attn_shape *s)
{
    const int32_t dv = attn_shape_head_dim_v(s);
    const int kv8 = attn_launch_plan_is_fp8(s->kv_dtype);
    if (s->head_dim != dv || !attn_launch_plan_head_dim_built(s->head_dim) ||
        attn_launch_plan_is_fp8(s->compute_dtype))
        return 0;
    if (s->q_dtype != ATTN_DTYPE_BF16 && s->q_dtype != ATTN_DTYPE_F16)
        return 0;
    return kv8 ? s->head_dim != 192 : s->kv_dtype == s->q_dtype;
}

/* The matrix-unit decode kernel takes a bf16 or f16 Q over a cache of Q's
 * type or an e4m3fn / e4m3fnuz cache (f16 math, converted per tile), D == Dv
 * in the built list, no FP8 compute, pages of a multiple of 16. */
static inline int attn_launch_plan_decode_mma_takes(const attn_shape *s)
{
    const int32_t dv = attn_shape_head_dim_v(s);
    const int q16 = s->q_dtype == ATTN_DTYPE_BF16 || s->q_dtype == ATTN_DTYPE_F16;
    return s->head_dim == dv && attn_launch_plan_head_dim_built(s->head_dim) && q16 &&
           (s->kv_dtype == s->q_dtype || attn_launch_plan_is_fp8(s->kv_dtype)) &&
           !attn_launch_plan_is_fp8(s->compute_dtype) && s->page_size > 0 &&
           s->page_size % ATTN_DMMA_TILE == 0;
}

/* What the build holds beyond the portable kernels. */
typedef struct attn_launch_plan_features {
    int wgmma; /* sm_90a code: the prefill kernel and the MTP warpgroup variant */
} attn_launch_plan_features;

/* The features of this build: asked of the kernels where they are linked
 * (gpu_attn.hip), else those of the default CUDA build (90a), so that a
 * plugin built without kernels plans as the shipped one would. */
#if defined(ATTNREG_HAVE_GPU_KERNELS)
#ifdef __cplusplus
extern "C"
#endif
    int
    attn_gpu_kernels_have_wgmma(void);
#endif
static inline attn_launch_plan_features attn_launch_plan_build_features(void)
{
    attn_launch_plan_features f;
#if defined(ATTNREG_HAVE_GPU_KERNELS)
    f.wgmma = attn_gpu_kernels_have_wgmma();
#else
    f.wgmma = 1;
#endif
    return f;
}

/* The kernels a plan names, as one list: X(ID, display name). A plan entry
 * carries the name (attn_kernel_plan.kernel, what explain shows); the
 * launcher reads it back as the id, never by comparing its own literals. */
#define ATTN_PLAN_KERNEL_LIST(X)                                                                   \
    X(GENERIC, "generic")                                                                          \
    X(GENERIC_RAW, "generic-raw")                                                                  \
    X(DECODE, "decode")                                                                            \
    X(DECODE_MMA, "decode-mma")                                                                    \
    X(PREFILL_WGMMA, "prefill-wgmma")                                                              \
    X(MTP_MMA, "mtp-mma")                                                                          \
    X(MTP_WGMMA, "mtp-wgmma")
#define ATTN_PLAN_KERNEL_ENUM_(id, name) ATTN_PLAN_KERNEL_##id,
#define ATTN_PLAN_KERNEL_NAME_(id, name) name,
typedef enum attn_launch_plan_kernel_id {
    ATTN_PLAN_KERNEL_NONE = -1,
    ATTN_PLAN_KERNEL_LIST(ATTN_PLAN_KERNEL_ENUM_) ATTN_PLAN_KERNEL_COUNT
} attn_launch_plan_kernel_id;
static const char *const attn_launch_plan_kernel_names[] = {
    ATTN_PLAN_KERNEL_LIST(ATTN_PLAN_KERNEL_NAME_)};
static inline const char *attn_launch_plan_kernel_name(attn_launch_plan_kernel_id id)
{
    return id >= 0 && id < ATTN_PLAN_KERNEL_COUNT ? attn_launch_plan_kernel_names[id] : "?";
}
/* The id of a plan entry (ATTN_PLAN_KERNEL_NONE for NULL or an unknown name). */
static inline attn_launch_plan_kernel_id attn_launch_plan_kernel_of(const attn_kernel_plan *k)
{
    int i;
    for (i = 0; k && i < ATTN_PLAN_KERNEL_COUNT; i++)
        if (strncmp(k->kernel, attn_launch_plan_kernel_names[i], sizeof k->kernel) == 0)
            return (attn_launch_plan_kernel_id)i;
    return ATTN_PLAN_KERNEL_NONE;
}

static inline void attn_launch_plan_set(attn_kernel_plan *k, attn_launch_plan_kernel_id kernel,
                                        const char *role, int threads, int rows, int keys,
                                        int stages, int bytes)
{
    memset(k, 0, sizeof *k);
    snprintf(k->kernel, sizeof k->kernel, "%s", attn_launch_plan_kernel_name(kernel));
    snprintf(k->role, sizeof k->role, "%s", role);
    k->threads = threads;
    k->rows = rows;
    k->keys = keys;
    k->stages = stages;
    k->shared_bytes = bytes;
}

static inline void attn_launch_plan_begin(attn_launch_plan *out, const attn_arch_limits *lim)
{
    uint32_t size = out->struct_size;
    memset(out, 0, sizeof *out);
    out->struct_size = size ? size : (uint32_t)sizeof *out;
    snprintf(out->arch, sizeof out->arch, "%s", lim->arch);
    out->shared_limit = lim->shared_bytes_per_block;
    out->wave_size = lim->wave_size;
}

/* The bytes of the generic kernel's program, float tiles or raw K/V. */
static inline int attn_launch_plan_generic_variant_bytes(int d, int dv, int kv_bytes,
                                                         int rows_per_warp, int stages, int raw)
{
    return raw ? attn_launch_plan_generic_raw_bytes(d, dv, kv_bytes, rows_per_warp, stages)
               : attn_launch_plan_generic_bytes(d, dv, kv_bytes, rows_per_warp, stages);
}

/* The generic kernel's stages for a program of rows_per_warp rows (raw: the
 * raw-K/V variant): as many as fit the budget (2-4 on NVIDIA, 1-4
 * elsewhere); 0 when even the fewest exceed the arch's limit. */
static inline int attn_launch_plan_generic_stages(int d, int dv, int kv_bytes, int rows_per_warp,
                                                  const attn_arch_limits *lim, int raw)
{
    const int nvidia = attn_launch_plan_arch_is_nvidia(lim->arch);
    const int min_stages = nvidia ? 2 : 1;
    const int budget = nvidia && lim->shared_bytes_per_block > ATTN_GEN_NVIDIA_BUDGET
                           ? ATTN_GEN_NVIDIA_BUDGET
                           : lim->shared_bytes_per_block;
    int st = ATTN_GEN_MAX_STAGES;
    while (st > min_stages &&
           attn_launch_plan_generic_variant_bytes(d, dv, kv_bytes, rows_per_warp, st, raw) > budget)
        st--;
    return attn_launch_plan_generic_variant_bytes(d, dv, kv_bytes, rows_per_warp, st, raw) <=
                   lim->shared_bytes_per_block
               ? st
               : 0;
}

/* Writes why no plan fits (the resource, what is needed, what the arch has)
 * and returns 0. */
static inline int attn_launch_plan_too_big(char *why, size_t why_size, const char *kernel,
                                           const char *what, int bytes, const attn_arch_limits *lim)
{
    const int nvidia = attn_launch_plan_arch_is_nvidia(lim->arch);
    if (why && why_size)
        snprintf(why, why_size, "the %s kernel needs %d KB of %s per program (%s), %s has %d KB",
                 kernel, (bytes + 1023) / 1024, nvidia ? "shared memory" : "LDS", what, lim->arch,
                 lim->shared_bytes_per_block / 1024);
    return 0;
}

/* Index of the kernel entry of a plan with `role`, or -1. */
static inline int attn_launch_plan_find(const attn_launch_plan *plan, const char *role)
{
    uint32_t i;
    for (i = 0; i < plan->num_kernels && i < ATTN_PLAN_MAX_KERNELS; i++)
        if (strcmp(plan->kernels[i].role, role) == 0)
            return (int)i;
    return -1;
}

/* Role names (the launcher looks entries up by them). */
#define ATTN_ROLE_MULTI "multi-token"
#define ATTN_ROLE_MULTI_PORTABLE "multi-token, scale <= 0"
#define ATTN_ROLE_DECODE "one-token sequences"
#define ATTN_ROLE_MTP "mtp"
#define ATTN_ROLE_MTP_SHORT "mtp, q_len <= 2"

/* The plan of aiter-generic for a valid shape it accepts otherwise: the
 * multi-token kernel (max_q_len > 1), then the decode kernel (batches of
 * one-token sequences, and the one-token rows of mixed batches). Returns 1
 * when every kernel fits `lim`, else 0 with the reason in why. */
static inline int attn_launch_plan_generic(const attn_shape *s, const attn_arch_limits *lim,
                                           attn_launch_plan_features feat, attn_launch_plan *out,
                                           char *why, size_t why_size)
{
    const int d = s->head_dim, dv = attn_shape_head_dim_v(s);
    const int kvb = attn_launch_plan_kv_bytes(s->kv_dtype);
    const int nvidia = attn_launch_plan_arch_is_nvidia(lim->arch);
    const int hkv = attn_shape_kv_heads(s);
    const int group = hkv > 0 ? s->num_q_heads / hkv : 1;
    char what[96];
    attn_launch_plan_begin(out, lim);
    if (s->max_q_len > 1) {
        /* The float tiles where they fit, else the raw-K/V variant. */
        int raw = 0;
        int gen_stages = attn_launch_plan_generic_stages(d, dv, kvb, 4, lim, 0);
        if (!gen_stages && attn_launch_plan_generic_raw_built(d)) {
            gen_stages = attn_launch_plan_generic_stages(d, dv, kvb, 4, lim, 1);
            raw = gen_stages > 0;
        }
        const attn_launch_plan_kernel_id gen_kernel =
            raw ? ATTN_PLAN_KERNEL_GENERIC_RAW : ATTN_PLAN_KERNEL_GENERIC;
        const int gen_bytes =
            attn_launch_plan_generic_variant_bytes(d, dv, kvb, 4, gen_stages ? gen_stages : 1, raw);
        if (nvidia && feat.wgmma && strcmp(lim->arch, "sm_90") == 0 &&
            attn_launch_plan_prefill_takes(s)) {
            const attn_prefill_layout l =
                attn_launch_plan_prefill_layout(d, attn_launch_plan_is_fp8(s->kv_dtype));
            if (l.bytes > lim->shared_bytes_per_block)
                return attn_launch_plan_too_big(why, why_size, "prefill", "128 rows", l.bytes, lim);
            attn_launch_plan_set(&out->kernels[out->num_kernels++], ATTN_PLAN_KERNEL_PREFILL_WGMMA,
                                 ATTN_ROLE_MULTI, l.threads, l.rows, l.keys, l.stages, l.bytes);
            if (gen_stages)
                attn_launch_plan_set(&out->kernels[out->num_kernels++], gen_kernel,
                                     ATTN_ROLE_MULTI_PORTABLE, 32 * ATTN_GEN_WARPS,
                                     4 * ATTN_GEN_WARPS, ATTN_GEN_TILE, gen_stages, gen_bytes);
        } else if (gen_stages) {
            attn_launch_plan_set(&out->kernels[out->num_kernels++], gen_kernel, ATTN_ROLE_MULTI,
                                 32 * ATTN_GEN_WARPS, 4 * ATTN_GEN_WARPS, ATTN_GEN_TILE, gen_stages,
                                 gen_bytes);
        }
        if (!gen_stages) {
            snprintf(what, sizeof what, "head_dim %d, %s cache, %d stage%s%s", d,
                     attn_dtype_spelling(s->kv_dtype), nvidia ? 2 : 1, nvidia ? "s" : "",
                     attn_launch_plan_generic_raw_built(d) ? ", raw K/V" : "");
            /* the smallest program there is: one stage, raw K/V where built */
            return attn_launch_plan_too_big(
                why, why_size, attn_launch_plan_kernel_name(ATTN_PLAN_KERNEL_GENERIC), what,
                attn_launch_plan_generic_variant_bytes(d, dv, kvb, 4, 1,
                                                       attn_launch_plan_generic_raw_built(d)),
                lim);
        }
    }
    if (nvidia && attn_launch_plan_decode_mma_takes(s)) {
        const int kv8 = attn_launch_plan_is_fp8(s->kv_dtype);
        const int bytes = attn_launch_plan_decode_mma_bytes(d, kv8);
        if (bytes > lim->shared_bytes_per_block)
            return attn_launch_plan_too_big(
                why, why_size, attn_launch_plan_kernel_name(ATTN_PLAN_KERNEL_DECODE_MMA), "16 rows",
                bytes, lim);
        attn_launch_plan_set(&out->kernels[out->num_kernels++], ATTN_PLAN_KERNEL_DECODE_MMA,
                             ATTN_ROLE_DECODE, 32, ATTN_DMMA_TILE, ATTN_DMMA_TILE,
                             attn_launch_plan_decode_mma_stages(kv8), bytes);
    } else {
        const int gt = attn_launch_plan_decode_heads(group, d);
        const int bytes = attn_launch_plan_decode_bytes(d, gt);
        if (bytes > lim->shared_bytes_per_block) {
            snprintf(what, sizeof what, "%d heads", gt);
            return attn_launch_plan_too_big(why, why_size,
                                            attn_launch_plan_kernel_name(ATTN_PLAN_KERNEL_DECODE),
                                            what, bytes, lim);
        }
        attn_launch_plan_set(&out->kernels[out->num_kernels++], ATTN_PLAN_KERNEL_DECODE,
                             ATTN_ROLE_DECODE, 32 * ATTN_DEC_WARPS, gt,
                             ATTN_DEC_WARPS * ATTN_DEC_KEYS, 0, bytes);
    }
    return 1;
}

/* The plan of aiter-mtp-gfx950 (D 256, 16 query heads per KV head, fp8
 * cache, 1-4 query tokens): on NVIDIA the mma kernel (32 rows at q_len <= 2,
 * 64 rows above, the warpgroup variant there where the build has sm_90a);
 * elsewhere the portable generic kernel with 64-row programs. */
static inline int attn_launch_plan_mtp(const attn_shape *s, const attn_arch_limits *lim,
                                       attn_launch_plan_features feat, attn_launch_plan *out,
                                       char *why, size_t why_size)
{
    attn_launch_plan_begin(out, lim);
    if (attn_launch_plan_arch_is_nvidia(lim->arch)) {
        const int wg = feat.wgmma && strcmp(lim->arch, "sm_90") == 0;
        const int long_q = s->max_q_len > 2;
        const int b4 = attn_launch_plan_mtp_bytes(4, wg), b2 = attn_launch_plan_mtp_bytes(2, 0);
        if (long_q && b4 > lim->shared_bytes_per_block)
            return attn_launch_plan_too_big(
                why, why_size,
                attn_launch_plan_kernel_name(wg ? ATTN_PLAN_KERNEL_MTP_WGMMA
                                                : ATTN_PLAN_KERNEL_MTP_MMA),
                "64 rows", b4, lim);
        if (b2 > lim->shared_bytes_per_block)
            return attn_launch_plan_too_big(why, why_size,
                                            attn_launch_plan_kernel_name(ATTN_PLAN_KERNEL_MTP_MMA),
                                            "32 rows", b2, lim);
        if (long_q)
            attn_launch_plan_set(&out->kernels[out->num_kernels++],
                                 wg ? ATTN_PLAN_KERNEL_MTP_WGMMA : ATTN_PLAN_KERNEL_MTP_MMA,
                                 ATTN_ROLE_MTP, 128, attn_launch_plan_mtp_rows(4, wg),
                                 ATTN_MTP_TILE, ATTN_MTP_STAGES, b4);
        attn_launch_plan_set(&out->kernels[out->num_kernels++], ATTN_PLAN_KERNEL_MTP_MMA,
                             long_q ? ATTN_ROLE_MTP_SHORT : ATTN_ROLE_MTP, 128,
                             attn_launch_plan_mtp_rows(2, 0), ATTN_MTP_TILE, ATTN_MTP_STAGES, b2);
        return 1;
    }
    {
        const int st = attn_launch_plan_generic_stages(ATTN_MTP_D, ATTN_MTP_D, 1, 16, lim, 0);
        const int bytes =
            attn_launch_plan_generic_bytes(ATTN_MTP_D, ATTN_MTP_D, 1, 16, st ? st : 1);
        if (!st)
            return attn_launch_plan_too_big(why, why_size,
                                            attn_launch_plan_kernel_name(ATTN_PLAN_KERNEL_GENERIC),
                                            "64 rows, head_dim 256, fp8 cache", bytes, lim);
        attn_launch_plan_set(&out->kernels[out->num_kernels++], ATTN_PLAN_KERNEL_GENERIC,
                             ATTN_ROLE_MTP, 32 * ATTN_GEN_WARPS, 16 * ATTN_GEN_WARPS, ATTN_GEN_TILE,
                             st, bytes);
    }
    return 1;
}

/* ---- the plugins' side ---------------------------------------------- */

typedef int (*attn_launch_plan_fn)(const attn_shape *s, const attn_arch_limits *lim,
                                   attn_launch_plan_features feat, attn_launch_plan *out, char *why,
                                   size_t why_size);

/* The `launch_plan` predicate of a plugin whose plans `plan` computes: the
 * shape's plan on its arch must fit the arch's limits (RESOURCE otherwise,
 * with the sentence naming the resource). */
static inline int attn_launch_plan_predicate(attn_launch_plan_fn plan, const attn_shape *shape,
                                             attn_verdict *verdict)
{
    const attn_arch_limits *lim = attn_gpu_limits_of(shape->arch);
    attn_launch_plan p;
    char why[ATTN_VERDICT_MESSAGE_MAX];
    if (!lim)
        return attn_reject(verdict, ATTN_REASON_RESOURCE,
                           "no launch limits are known for arch %.*s", ATTN_ARCH_MAX - 1,
                           shape->arch);
    p.struct_size = sizeof p;
    if (plan(shape, lim, attn_launch_plan_build_features(), &p, why, sizeof why))
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_RESOURCE, "%s", why);
}

/* The describe_plan hook of such a plugin. */
static inline attn_status attn_launch_plan_describe(attn_launch_plan_fn plan,
                                                    const attn_shape *shape, attn_launch_plan *out)
{
    const attn_arch_limits *lim = attn_gpu_limits_of(shape->arch);
    if (!lim || !plan(shape, lim, attn_launch_plan_build_features(), out, NULL, 0))
        return ATTN_ERR_UNSUPPORTED;
    return ATTN_OK;
}

#endif /* ATTN_LAUNCH_PLAN_H */
