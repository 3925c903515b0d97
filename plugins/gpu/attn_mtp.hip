/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_mtp.hip — the aiter-mtp kernel: the speculative-decoding verify shape
 * (2-4 query tokens per sequence, 16 query heads per KV head, head size 256,
 * page 16, bf16 Q, fp8 e4m3fn KV).
 *
 * Why a separate kernel: the generic kernel gives each query token its own
 * program, so a sequence's paged KV is read once per speculative token. Here
 * one program owns every query token of a sequence for one KV head (QW
 * tokens x 16 heads = 32 or 64 rows) and reads each KV tile once for all of
 * them. Per key it then does 64 rows x 1 KiB of math for 512 bytes of fp8
 * K+V: 128 FLOP/byte at q_len 4, which only the matrix units sustain at
 * memory speed, so on sm_89+ the math runs on mma.sync m16n8k16 (f16 inputs,
 * f32 accumulate).
 *
 * Layout of the mma path (NVIDIA, sm_89+; 4 warps, tiles of 32 keys, three
 * shared-memory stages of raw fp8 filled by cp.async, two tiles in flight):
 *   warp w owns token tw = w % QW (16 rows = its 16 heads, one m16 tile) and
 *   key group kg = w / QW: with QW = 4 every warp takes all 32 keys of a
 *   tile; with QW = 2 each of a token's two warps takes 16 of them, and
 *   their (max, sum, acc) states are merged at the end.
 *   Q: bf16 -> f16 in shared memory, each row scaled by a power of two that
 *   puts its largest element in [2^14, 2^15) (exact for bf16 inputs, no f16
 *   overflow); the power is folded into the row's score multiplier.
 *   K, V: convert once, then ldmatrix. When a raw fp8 tile has landed, all
 *   128 threads convert it once to f16 (cvt.rn.f16x2.e4m3x2, exact) into
 *   two row-major [key][d] tiles, Kh and Vh. Every warp then reads its
 *   operands with ldmatrix: Q (A operand) and K (B operand of S = Q K^T)
 *   plain, V (B operand of P V) transposed by ldmatrix .trans. With QW = 4
 *   a K or V element is thus converted once instead of once per warp, and
 *   V needs no transpose in software.
 *   Swizzle: every f16 row (Q, Kh, Vh) is 512 bytes = 32 chunks of 16
 *   bytes, and chunk c of row r is stored at chunk c ^ (r & 7). An ldmatrix
 *   phase reads one 16-byte chunk from each of 8 consecutive rows, which
 *   the swizzle puts in 8 different bank groups. The raw fp8 rows (256
 *   bytes) use the same rule so that the conversion, which reads one chunk
 *   of 8 consecutive keys per phase and writes two f16 chunks per key, is
 *   conflict-free on both sides.
 *   P: the f32 score accumulators become the A operand of P V directly
 *   (the mma C layout of two n8 tiles is the A layout of one k16 chunk),
 *   rounded to f16 (probabilities in [0, 1]: 11 significant bits).
 *   Partials (max, sum, acc) go to the workspace for every segment, and
 *   attn_reduce_kernel merges them (sinks, v_descale, output dtype there).
 *   Shared memory: Q 32 KiB (QW = 4), raw stages 3 x 16 KiB, Kh + Vh
 *   32 KiB: 112 KiB, so two programs (8 warps) fit on an SM of 228 KiB.
 *   Kh and Vh are single-buffered (a second pair, 32 KiB more, would leave
 *   room for one program per SM only), so each tile costs two barriers:
 *   one before the conversion (the previous tile's mma are done with Kh and
 *   Vh) and one after it; the other program on the SM fills those gaps.
 * Warpgroup variant (WG; sm_90a builds on sm_90 devices, chosen by the
 * launcher for q_len 3-4): the same program, tiles, loader, conversion and
 * softmax, but the 4 warps are one warpgroup and the math is wgmma:
 *   S = Q K^T: 16 wgmma m64n32k16 with Q (A) and Kh (B) read from shared
 *   memory by descriptors, in two accumulator chains (even and odd k16
 *   steps); warp w holds rows 16w..16w+15 (token w), in the mma.sync C
 *   layout, so the masks and the online softmax are unchanged.
 *   O += P V: 2 wgmma m64n256k16, P from registers (the C layout of S is
 *   the A layout), V read N-major from Vh. They stay in flight while the
 *   next tile's copies are waited for; the wait comes before the barrier
 *   after which Vh is overwritten.
 *   Layout: Q, Kh and Vh are stored in the wgmma 128-byte swizzle (blocks
 *   of 64 columns, see mtp_smem::chunk_off), 1024-byte aligned; the Q tile
 *   always has 64 rows (rows of absent tokens are zeros).
 *   Why it helps: the mma.sync variant issues 128 ldmatrix + 256 mma per
 *   warp and tile and is latency-bound at 8 warps per SM; here a warp
 *   issues 18 wgmma per tile. At q_len <= 2 half the 64 rows are padding,
 *   and the mma.sync variant (32 rows) stays faster there.
 * Pair form of the warpgroup variant (PAIR; the family's rule takes it where
 * the grid of nseg / 2 programs still covers the CUs: batch >= 32): one
 * 256-thread program a CU whose two warpgroups share the 64 Q rows (every
 * warp converts 8 of them; the row multipliers go through shared memory)
 * and each run the loop above on their own key segment (2z and 2z + 1), with
 * their own 4 raw stages and f16 tile and their own named barriers; at the
 * end warpgroup 1 leaves its state in its stages and warpgroup 0 merges it
 * and writes one partial. Against two one-warpgroup programs on the CU: Q
 * converted once, half the partials (16.8 -> 8.4 MB at q_len 4, batch 32 x
 * 4096 keys) and one more tile in flight per warpgroup: 0.83-0.96x the time
 * at batch 32-64 (H100, bench/RESULTS.md version 18).
 * On AMD the launcher runs the portable generic kernel with 64-row programs
 * instead, which keeps the "one KV read for all tokens" property but uses
 * scalar math. NVIDIA devices below sm_89 (no e4m3 conversion instruction)
 * are refused by gpu_attn_create.
 */
#include <math.h>

#include "attn_launch_plan.h"
#include "attn_wgmma.h"
#include "gpu_attn_internal.h"

#if defined(ATTN_PLATFORM_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define ATTN_MTP_MMA 1
#endif
/* The warpgroup path needs wgmma, which only the arch-specific sm_90a target
 * has (__CUDA_ARCH_FEAT_SM90_ALL). */
#if defined(ATTN_MTP_MMA) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ATTN_MTP_WGMMA 1
#endif

#define MTP_D ATTN_MTP_D
#define MTP_GROUP ATTN_MTP_GROUP
#define MTP_PAGE ATTN_MTP_PAGE

#if defined(ATTN_PLATFORM_CUDA)




/* Shared-memory plan of the mma kernel, in bytes. WG: the warpgroup
 * (wgmma) variant, whose Q tile always has 64 rows (the wgmma M), whose
 * tiles must start on 1024-byte boundaries (PAD aligns the base), and which
 * keeps the row multipliers in registers. */
template <int QW, bool WG = false, bool PAIR = false>
struct mtp_smem {
    static_assert(!PAIR || WG, "the pair form is the warpgroup variant's");
    static constexpr int TILE = 32;                /* keys per tile */
    static constexpr int KW = WG ? TILE : 8 * QW; /* keys of a tile per warp */
    /* raw KV stages of a warpgroup: 2 tiles in flight (pair: 3) */
    static constexpr int STAGES = PAIR ? ATTN_MTP_PAIR_STAGES : ATTN_MTP_STAGES;
    static constexpr int ROW = MTP_D * 2;          /* f16 row: 32 swizzled 16-byte chunks */
    static constexpr int Q_ROWS = WG ? 64 : QW * 16;
    static constexpr int Q_BYTES = Q_ROWS * ROW;
    static constexpr int RAW = TILE * MTP_D; /* one fp8 K or V tile */
    static constexpr int STAGE = 2 * RAW;    /* K then V */
    static constexpr int HALF = TILE * ROW;  /* one f16 K or V tile */
    static constexpr int PAD = WG ? 1024 : 0;
    /* the row multipliers: in registers where the warp that converts a Q
     * row computes it (WG, not PAIR), else in shared memory */
    static constexpr int ROWMUL = WG && !PAIR ? 0 : Q_ROWS * 4;
    /* one warpgroup's stages and f16 K/V tile (a pair has two, one after the other) */
    static constexpr int WG_BYTES = STAGES * STAGE + 2 * HALF;
    static constexpr int TOTAL = PAIR ? attn_launch_plan_mtp_pair_bytes()
                                      : attn_launch_plan_mtp_bytes(QW, WG); /* the plan table's */
    static_assert(TOTAL == PAD + Q_BYTES + (PAIR ? 2 : 1) * WG_BYTES + ROWMUL,
                  "the plan table's MTP layout");
    static_assert(!PAIR || WG_BYTES == attn_launch_plan_mtp_pair_wg_bytes(), "the pair's warpgroup");
    static_assert(TILE == ATTN_MTP_TILE && MTP_D == ATTN_MTP_D, "the plan table's MTP tiles");
    /* The pair's merge: warpgroup 1 leaves 128 accumulators and 4 row
     * values a thread in its own stages. */
    static_assert(!PAIR || (32 * 4 + 4) * 128 * 4 <= WG_BYTES, "the pair's merge state fits");
    static_assert(!PAIR || TOTAL + 1024 <= 228 * 1024, "one pair a multiprocessor");
    /* Where f16 chunk c (8 columns) of row r of a tile lives. Plain layout:
     * rows of 512 bytes, chunk c at c ^ (r & 7). WG layout: 64-column
     * blocks of `rows` x 128 bytes, chunk c in block c / 8 at (c % 8) ^ (r &
     * 7) (the wgmma 128-byte swizzle). */
    static __device__ __forceinline__ int chunk_off(int r, int c, int rows)
    {
        return WG ? attn_swz128_off(r, c, rows) : r * ROW + ((c ^ (r & 7)) << 4);
    }
    /* ATTN_MTP_PROGRAMS_PER_CU programs per SM: 228 KiB, less 1 KiB
     * reserved per program. */
    static_assert(PAIR || ATTN_MTP_PROGRAMS_PER_CU * (TOTAL + 1024) <= 228 * 1024,
                  "the programs an SM holds must fit");
    /* The QW = 2 merge reuses the raw stages. */
    static_assert(QW != 2 || (QW * 128 * 32 + QW * 4 * 32) * 4 <= STAGES * STAGE,
                  "merge buffer must fit in the stages");
};

/* A barrier of the threads that share a program's tiles: the whole block,
 * or one warpgroup of a pair (named barriers 1 and 2). */
template <bool PAIR> static __device__ __forceinline__ void mtp_tile_barrier(int wg)
{
    if constexpr (PAIR)
        asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
    else
        __syncthreads();
}

template <int QW, bool WG, bool PAIR = false>
__global__ void __launch_bounds__(PAIR ? 256 : 128, PAIR ? 1 : ATTN_MTP_PROGRAMS_PER_CU)
    attn_mtp_kernel(const attn_kparams p)
{
#ifdef ATTN_MTP_MMA
#ifndef ATTN_MTP_WGMMA
    if constexpr (WG) {
        __trap(); /* the launcher picks WG only where this build has sm_90a code */
        return;
    }
#endif
    attn_pdl_wait(); /* launched with p.pdl_main: the kernel before has finished */
    using L = mtp_smem<QW, WG, PAIR>;
    constexpr int TILE = L::TILE;
    constexpr int KW = L::KW;
    constexpr int NT = KW / 8;  /* n8 score tiles per warp */
    constexpr int KC = KW / 16; /* k16 chunks of P x V per warp */
    constexpr int STAGES = L::STAGES;
    constexpr int ROW = L::ROW;
    extern __shared__ __align__(16) uint8_t mtp_sm[];
    uint8_t *Qh = mtp_sm;
    if constexpr (L::PAD > 0)
        Qh += (L::PAD - (attn_smem_addr(mtp_sm) & (L::PAD - 1))) & (L::PAD - 1);
    /* PAIR: warpgroup wg has its own stages and f16 tile, and takes key
     * segment 2 blockIdx.z + wg of 2 nseg; both share Q. */
    const int tid = threadIdx.x, lane = tid & 31;
    const int wg = PAIR ? tid >> 7 : 0, wtid = tid & 127, warp = wtid >> 5;
    const int qwarp = tid >> 5; /* Q's rows are converted by every warp of the program */
    uint8_t *stage0 = Qh + L::Q_BYTES + wg * L::WG_BYTES;
    uint8_t *Kh = stage0 + STAGES * L::STAGE;
    uint8_t *Vh = Kh + L::HALF;
    float *rowmul = (float *)(Qh + L::Q_BYTES + (PAIR ? 2 : 1) * L::WG_BYTES);

    const int g = lane >> 2, t = lane & 3;
    /* WG: warp w holds the wgmma rows 16w..16w+15, token w, all keys. */
    const int tw = WG ? warp : warp % QW, kg = WG ? 0 : warp / QW;
    const int s = blockIdx.x, kvh = blockIdx.y;
    const int seg = PAIR ? 2 * blockIdx.z + wg : blockIdx.z, nsplit = (PAIR ? 2 : 1) * p.nseg;
    const int q0 = p.cu_seqlens_q[s];
    const int qlen = min(p.cu_seqlens_q[s + 1] - q0, QW);
    if (qlen <= 0)
        return;
    const int K = p.seqused_k[s];
    const int ctx0 = K - qlen;
    const int32_t *bt = p.block_table + (int64_t)s * p.bt_stride;

    /* ---- Q: bf16 -> f16 with a per-row power-of-two scale. Warp w converts
     * rows [w*RPW, (w+1)*RPW); each lane one 16-byte chunk of a row, stored
     * at its swizzled place. WG: every one of the 64 rows is written (rows
     * of absent tokens as zeros, since all of them enter the wgmma), and
     * the rows a warp converts are the rows it computes, so each lane keeps
     * the multipliers of its rows g and g + 8 in registers.
     * The usual case (bf16 rows, 16-byte aligned): each lane's 16 bytes of
     * every row go by cp.async into the very Qh chunk the lane converts in
     * place later, as the oldest copy group, ahead of the first tiles'
     * copies, so the conversion (after those are issued) waits for all of
     * Q once. Loading a row at a time made the prologue RPW dependent global
     * round trips (12 % of the stall samples at batch 32 x 4096 keys, Nsight
     * Compute), and keeping the rows in registers needed the conversion
     * unrolled: 10k instructions that pushed the main loop out of the
     * instruction cache (30 % of the samples "no instruction"). */
    constexpr int RPW = PAIR ? 8 : WG ? 16 : QW * 4;
    const float base = p.softcap > 0.f ? p.score_scale : p.score_scale * ATTN_LOG2E;
    float rm0 = 0.f, rm1 = 0.f;
    auto q_off = [&](int row) -> int64_t {
        return (int64_t)(q0 + (row >> 4)) * p.q_stride_token +
               (int64_t)(kvh * MTP_GROUP + (row & 15)) * p.q_stride_head + lane * 8;
    };
    const bool q_fast = p.q_dtype == ATTN_DTYPE_BF16 && p.q_vec16;
    if (q_fast)
        for (int rr = 0; rr < RPW; rr++) {
            const int row = qwarp * RPW + rr;
            if ((row >> 4) >= qlen)
                break; /* rows go token by token */
            attn_cp_async16(Qh + L::chunk_off(row, lane, L::Q_ROWS),
                            (const uint16_t *)p.q + q_off(row), true);
        }
    attn_cp_async_commit();
    /* ---- This segment's keys: the reference split of [0, K) into nseg
     * slices of whole 32-key blocks, clipped to what any row can see. */
    const int blocks32 = (K + 31) / 32;
    const int per = (blocks32 + nsplit - 1) / nsplit * 32;
    int kstart = seg * per, kend = min(K, kstart + per);
    if (p.window_left >= 0)
        kstart = max(kstart, (ctx0 - p.window_left) / 32 * 32);
    if (p.window_right >= 0 && !p.causal)
        kend = min(kend, ctx0 + qlen - 1 + p.window_right + 1);
    const int ntiles = kend > kstart ? (kend - kstart + TILE - 1) / TILE : 0;

    /* ---- Tile loader: K and V raw (fp8) by cp.async, 16 bytes a chunk,
     * zero-filled past kend (so those keys convert to +0 and never bring a
     * NaN into P x V). Chunk c of key k is stored at chunk c ^ (k & 7) of
     * its 256-byte row (see the conversion below). */
    /* The two block-table entries of a tile (16 keys each, page 16), fetched
     * one tile ahead of the copies that use them (see the generic kernel). */
    auto fetch_bt = [&](int it, int &b0, int &b1) {
        if (it >= ntiles)
            return;
        const int kb = kstart + it * TILE;
        b0 = kb < kend ? bt[kb / MTP_PAGE] : 0;
        b1 = kb + 16 < kend ? bt[kb / MTP_PAGE + 1] : 0;
    };
    /* In round i a thread copies chunk cc = tid % 16 of key kl = tid / 16 +
     * 8i of the tile. A tile starts at a multiple of 32 keys, so kl % 16 is
     * the key's slot in its page (rounds 0, 1 read page b0, rounds 2, 3 page
     * b1), and the source offset is blk * page_bytes plus one of two
     * per-thread constants. */
    const int64_t page_bytes = p.kv_stride_block;
    const int ckl = wtid >> 4, ccc = wtid & 15;
    const int64_t slot_off0 = ckl * p.kv_stride_token + kvh * p.kv_stride_head + ccc * 16;
    const int64_t slot_off1 = slot_off0 + 8 * p.kv_stride_token;
    const int cdst = ckl * MTP_D + ((ccc ^ ckl) << 4); /* ckl = kl & 7 */
    auto load_tile = [&](int it, int st, int b0, int b1) {
        uint8_t *Ks = stage0 + st * L::STAGE;
        uint8_t *Vs = Ks + L::RAW;
        const int kb = kstart + it * TILE;
#pragma unroll
        for (int i = 0; i < TILE * 16 / 128; i++) {
            const bool ok = kb + ckl + 8 * i < kend;
            const int64_t off =
                ok ? (int64_t)(i < 2 ? b0 : b1) * page_bytes + (i & 1 ? slot_off1 : slot_off0) : 0;
            const int dst = cdst + i * 8 * MTP_D;
            attn_cp_async16(Ks + dst, (const uint8_t *)p.k_cache + off, ok);
            attn_cp_async16(Vs + dst, (const uint8_t *)p.v_cache + off, ok);
        }
    };

    /* ---- Conversion of a landed raw tile into Kh and Vh. In round i, thread
     * tid takes raw chunk cc = tid / 8 (d 16cc..16cc+15) of key 8i + tid % 8,
     * and writes f16 chunks 2cc and 2cc+1 of that key. Each 8-lane phase
     * thus reads and writes one chunk of 8 consecutive keys, which the
     * swizzles spread over 8 bank groups. Every address is a per-thread base
     * plus a compile-time offset. */
    const int cr = wtid & 7, cc = wtid >> 3;
    const int raw_off = cr * MTP_D + ((cc ^ cr) << 4);
    const int h_off0 = L::chunk_off(cr, 2 * cc, TILE);
    const int h_off1 = L::chunk_off(cr, 2 * cc + 1, TILE);
    constexpr int H_ROWS8 = WG ? 8 * 128 : 8 * ROW; /* 8 more keys */
    auto convert = [&](const uint8_t *raw, uint8_t *hh) {
        uint4 x[TILE / 8];
#pragma unroll
        for (int i = 0; i < TILE / 8; i++)
            x[i] = *(const uint4 *)(raw + raw_off + i * 8 * MTP_D);
#pragma unroll
        for (int i = 0; i < TILE / 8; i++) {
            uint32_t y[8];
            attn_fp8x4_to_f16x4(x[i].x, y[0], y[1]);
            attn_fp8x4_to_f16x4(x[i].y, y[2], y[3]);
            attn_fp8x4_to_f16x4(x[i].z, y[4], y[5]);
            attn_fp8x4_to_f16x4(x[i].w, y[6], y[7]);
            *(uint4 *)(hh + h_off0 + i * H_ROWS8) = make_uint4(y[0], y[1], y[2], y[3]);
            *(uint4 *)(hh + h_off1 + i * H_ROWS8) = make_uint4(y[4], y[5], y[6], y[7]);
        }
    };

    /* ---- ldmatrix addresses. Lane l gives the address of row lr = l % 8 of
     * matrix lm = l / 8. Every row base below is a multiple of 8 rows, so
     * the swizzle term of that row is lr, and chunk 8a + x (x < 8) of it is
     * stored at chunk 8a + (x ^ lr): the XOR only touches the low three
     * bits. Each lane therefore keeps one base per value of x it uses, and
     * every read is such a base plus a compile-time offset (128a bytes plus
     * whole rows).
     * Q (A operand, k16 chunk kk): matrices (rows 0-7, d 0-7), (rows 8-15,
     * d 0-7), (rows 0-7, d 8-15), (rows 8-15, d 8-15) are registers a0..a3
     * of the m16n8k16 A fragment. Lane l reads chunk 2kk + lm / 2, stored
     * at 8(kk / 4) + ((2(kk % 4)) ^ (lm / 2 ^ lr)).
     * K (B operand of S; n8 tile j = keys 8j..8j+7; k16 chunks 2q, 2q+1):
     * matrix lm is d chunk 4q + lm of those 8 keys. Lane i receives key
     * i / 4, d 2(i % 4) and 2(i % 4) + 1 of each, which is b0, b1 of k16
     * chunk 2q, then b0, b1 of chunk 2q + 1. Chunk 4q + lm is stored at
     * 8(q / 2) + ((4(q % 2)) ^ (lm ^ lr)).
     * V (B operand of P V; k16 chunk kc = keys 16kc..16kc+15; n8 tiles 2u,
     * 2u+1 = d 16u..16u+15): matrix lm is keys 16kc + 8(lm % 2) + 0..7 x d
     * chunk 2u + lm / 2, read transposed: lane i receives keys 2(i % 4) and
     * 2(i % 4) + 1 at d i / 4 of each, which is b0, b1 of d tile 2u, then
     * b0, b1 of 2u + 1. Chunk 2u + lm / 2 is stored at 8(u / 4) +
     * ((2(u % 4)) ^ (lm / 2 ^ lr)). */
    const int lr = lane & 7, lm = lane >> 3;
    const int cq = (lm >> 1) ^ lr, ck = lm ^ lr;
    uint32_t qa[4], ka[2], va[4];
    {
        const uint32_t qrow = attn_smem_addr(Qh) + (tw * 16 + 8 * (lm & 1) + lr) * ROW;
        const uint32_t krow = attn_smem_addr(Kh) + (kg * KW + lr) * ROW;
        const uint32_t vrow = attn_smem_addr(Vh) + (kg * KW + 8 * (lm & 1) + lr) * ROW;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            qa[u] = qrow + (((2 * u) ^ cq) << 4);
            va[u] = vrow + (((2 * u) ^ cq) << 4);
        }
#pragma unroll
        for (int u = 0; u < 2; u++)
            ka[u] = krow + (((4 * u) ^ ck) << 4);
    }

    float o[32][4];
#pragma unroll
    for (int i = 0; i < 32; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
    const bool active = tw < qlen;
    const int pos = ctx0 + tw;

    /* The block-table entries of the first STAGES tiles, all requested
     * before any copy waits for them (one tile at a time, the first tiles'
     * copies waited for a global round trip each). */
    int bt0[STAGES], bt1[STAGES];
#pragma unroll
    for (int i = 0; i < STAGES; i++) {
        bt0[i] = bt1[i] = 0;
        fetch_bt(i, bt0[i], bt1[i]);
    }
#pragma unroll
    for (int i = 0; i < STAGES - 1; i++) {
        if (i < ntiles)
            load_tile(i, i, bt0[i], bt1[i]);
        attn_cp_async_commit(); /* empty groups keep the counting uniform */
    }
    int nb0 = bt0[STAGES - 1], nb1 = bt1[STAGES - 1];

    /* Q's conversion, while the first tiles' copies are in flight. QB rows
     * at a time: each row's largest |element| is a chain of five dependent
     * shuffles, and the rows' chains are independent, so they overlap (one
     * row at a time, the prologue took 7.5 us of a 40 us step at q_len 4,
     * batch 32 x 4096 keys: per-program timestamps, bench/RESULTS.md
     * version 18). A warp's rows go token by token, QB of them at a time,
     * so a group of QB rows is one token's. */
    constexpr int QB = 4;
    static_assert(RPW % QB == 0 && 16 % QB == 0, "a group of rows is one token's");
    attn_cp_async_wait(STAGES - 1); /* Q's group: this thread's own copies */
    for (int r0 = 0; r0 < RPW; r0 += QB) {
        const int row0 = qwarp * RPW + r0; /* row = token*16 + head */
        if ((row0 >> 4) >= qlen) {
            if constexpr (WG) { /* every row enters the wgmma: zeros */
#pragma unroll
                for (int k = 0; k < QB; k++)
                    *(uint4 *)(Qh + L::chunk_off(row0 + k, lane, L::Q_ROWS)) = make_uint4(0u, 0u, 0u, 0u);
                continue;
            } else {
                break;
            }
        }
        float v[QB][8], mx[QB];
#pragma unroll
        for (int k = 0; k < QB; k++) {
            if (q_fast) {
                const uint4 u = *(const uint4 *)(Qh + L::chunk_off(row0 + k, lane, L::Q_ROWS));
                const uint32_t w4[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    v[k][2 * e] = attn_bf16_to_f32(w4[e] & 0xFFFFu);
                    v[k][2 * e + 1] = attn_bf16_to_f32(w4[e] >> 16);
                }
            } else {
                const int64_t off = q_off(row0 + k);
#pragma unroll
                for (int e = 0; e < 8; e++)
                    v[k][e] = attn_load_elem(p.q, off + e, p.q_dtype);
            }
            mx[k] = 0.f;
#pragma unroll
            for (int e = 0; e < 8; e++)
                mx[k] = fmaxf(mx[k], fabsf(v[k][e]));
        }
#pragma unroll
        for (int m = 16; m > 0; m >>= 1)
#pragma unroll
            for (int k = 0; k < QB; k++)
                mx[k] = fmaxf(mx[k], __shfl_xor_sync(0xffffffffu, mx[k], m));
#pragma unroll
        for (int k = 0; k < QB; k++) {
            uint32_t h[4];
            const int sh = attn_q_to_f16_scaled(v[k], mx[k], h);
            *(uint4 *)(Qh + L::chunk_off(row0 + k, lane, L::Q_ROWS)) = make_uint4(h[0], h[1], h[2], h[3]);
            if (WG && !PAIR) {
                if (r0 + k == g)
                    rm0 = attn_mul_pow2(base, -sh);
                if (r0 + k == g + 8)
                    rm1 = attn_mul_pow2(base, -sh);
            } else if (lane == 0) {
                rowmul[row0 + k] = attn_mul_pow2(base, -sh);
            }
        }
    }

    uint32_t pa[KC][4]; /* P fragments (WG: read by the in-flight P V wgmma) */
#ifdef ATTN_MTP_WGMMA
    /* After a wait for the P V wgmma: its accumulators and P fragments are
     * the compiler's again. */
    auto pin_pv_registers = [&]() {
#pragma unroll
        for (int i = 0; i < 32; i++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                attn_reg_fence(o[i][e]);
#pragma unroll
        for (int kc = 0; kc < KC; kc++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                attn_reg_fence(pa[kc][e]);
    };
    uint64_t dq0 = 0, dk0 = 0, dv0 = 0;
    if constexpr (WG) {
        attn_fence_proxy_async(); /* Q, written by plain stores, is read by wgmma */
        dq0 = attn_wgmma_desc(attn_smem_addr(Qh), 16);
        dk0 = attn_wgmma_desc(attn_smem_addr(Kh), 16);
        dv0 = attn_wgmma_desc(attn_smem_addr(Vh), TILE * 128); /* next 64 columns */
    }
#endif
    __syncthreads(); /* Q and rowmul visible */
    if (!WG || PAIR) {
        rm0 = rowmul[tw * 16 + g];
        rm1 = rowmul[tw * 16 + g + 8];
    }

    for (int it = 0; it < ntiles; it++) {
        const int st = it % STAGES;
        attn_cp_async_wait(STAGES - 2);
#ifdef ATTN_MTP_WGMMA
        if constexpr (WG) {
            /* The previous tile's P V must be done with Vh (and with pa)
             * before the conversion below overwrites it. */
            attn_wgmma_wait<0>();
            pin_pv_registers();
        }
#endif
        mtp_tile_barrier<PAIR>(wg); /* B1: tile `it` landed; tile it-1's stage and Kh/Vh are free */
        if (it + STAGES - 1 < ntiles)
            load_tile(it + STAGES - 1, (it + STAGES - 1) % STAGES, nb0, nb1);
        attn_cp_async_commit();
        fetch_bt(it + STAGES, nb0, nb1); /* used by the next iteration's copies */

        const uint8_t *Ks = stage0 + st * L::STAGE;
        convert(Ks, Kh);
        convert(Ks + L::RAW, Vh);
#ifdef ATTN_MTP_WGMMA
        if constexpr (WG)
            attn_fence_proxy_async();
#endif
        mtp_tile_barrier<PAIR>(wg); /* B2: Kh and Vh complete */
        if (!WG && !active)
            continue; /* (a warpgroup computes all 64 rows together) */

        /* S = Q K^T for this warp's KW keys: column n of n-tile j is key
         * kg*KW + 8j + n. */
        /* Each n-tile's sum over the 16 k16 chunks is a chain of dependent
         * mma, and a warp has only NT (2 or 4) of them: a second accumulator
         * per n-tile (odd chunks) halves the chains (ptxas: no spills). */
        constexpr int CHAINS = 2;
        float sacc[NT][4], sodd[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                sacc[j][e] = sodd[j][e] = 0.f;
        if constexpr (WG) {
#ifdef ATTN_MTP_WGMMA
            /* 16 k16 steps over D. Step kk reads 16 columns of 64-column
             * block kk / 4 (32 bytes into each 128-byte row): the hardware
             * applies the swizzle to the final address. */
            /* Even and odd steps go to two accumulators: two chains of 8
             * dependent wgmma instead of one of 16. */
            static_assert(NT == 4, "one m64n32 tile per 32 keys");
            attn_wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 16; kk++)
                attn_wgmma<32, false>::ss(
                    reinterpret_cast<float(&)[16]>(kk & 1 ? sodd : sacc),
                    dq0 + (((kk >> 2) * L::Q_ROWS * 128 + (kk & 3) * 32) >> 4),
                    dk0 + (((kk >> 2) * TILE * 128 + (kk & 3) * 32) >> 4), kk > 1);
            attn_wgmma_commit();
            attn_wgmma_wait<0>();
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    attn_reg_fence(sacc[j][e]);
                    attn_reg_fence(sodd[j][e]);
                    sacc[j][e] += sodd[j][e];
                }
#endif
        } else {
#pragma unroll
            for (int q = 0; q < 8; q++) {
                uint32_t a[2][4];
                attn_ldsm_x4(qa[(2 * q) & 3] + ((2 * q) >> 2) * 128, a[0]);
                attn_ldsm_x4(qa[(2 * q + 1) & 3] + ((2 * q + 1) >> 2) * 128, a[1]);
                uint32_t b[NT][4];
#pragma unroll
                for (int j = 0; j < NT; j++)
                    attn_ldsm_x4(ka[q & 1] + j * 8 * ROW + (q >> 1) * 128, b[j]);
#pragma unroll
                for (int j = 0; j < NT; j++)
                    attn_mma16816<false>(sacc[j], a[0], b[j][0], b[j][1]);
#pragma unroll
                for (int j = 0; j < NT; j++)
                    attn_mma16816<false>(CHAINS == 2 ? sodd[j] : sacc[j], a[1], b[j][2], b[j][3]);
            }
            if (CHAINS == 2) {
#pragma unroll
                for (int j = 0; j < NT; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        sacc[j][e] += sodd[j][e];
            }
        }

        /* Scores in log2 units, masks, online softmax (rows g, g+8). */
        const int kb = kstart + it * TILE + kg * KW;
        const bool full = kb + KW - 1 < kend && (!p.causal || kb + KW - 1 <= pos) &&
                          (p.window_left < 0 || kb >= pos - p.window_left) &&
                          (p.window_right < 0 || kb + KW - 1 <= pos + p.window_right);
        /* Each step is its own loop under one uniform branch: per-element
         * branches made 8 divergence regions a tile (Nsight Compute). */
#pragma unroll
        for (int j = 0; j < NT; j++) {
            sacc[j][0] *= rm0;
            sacc[j][1] *= rm0;
            sacc[j][2] *= rm1;
            sacc[j][3] *= rm1;
        }
        if (p.softcap > 0.f) {
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    sacc[j][e] = p.softcap * tanhf(sacc[j][e] / p.softcap) * ATTN_LOG2E;
        }
        if (!full) {
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int b = 0; b < 2; b++) {
                    const int key = kb + 8 * j + 2 * t + b;
                    if (key >= kend || !attn_visible(p, key, pos)) {
                        sacc[j][b] = -INFINITY;
                        sacc[j][2 + b] = -INFINITY;
                    }
                }
        }
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < NT; j++) {
            mx0 = fmaxf(mx0, fmaxf(sacc[j][0], sacc[j][1]));
            mx1 = fmaxf(mx1, fmaxf(sacc[j][2], sacc[j][3]));
        }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        /* The running maximum moves only past the slack (attn_running_max):
         * moved on every rise, as it did, some row of 64 rose in nearly
         * every tile of random data, and the rescale of the 128 accumulators
         * a thread was a fifth of the instructions executed. */
        const float mn0 = attn_running_max(m0, mx0), mn1 = attn_running_max(m1, mx1);
        const float mu0 = mn0 == -INFINITY ? 0.f : mn0, mu1 = mn1 == -INFINITY ? 0.f : mn1;
        const float al0 = attn_exp2_ftz(m0 - mu0), al1 = attn_exp2_ftz(m1 - mu1);
        m0 = mn0;
        m1 = mn1;
        float ps0 = 0.f, ps1 = 0.f;
#pragma unroll
        for (int j = 0; j < NT; j++) {
            sacc[j][0] = attn_exp2_ftz(sacc[j][0] - mu0);
            sacc[j][1] = attn_exp2_ftz(sacc[j][1] - mu0);
            sacc[j][2] = attn_exp2_ftz(sacc[j][2] - mu1);
            sacc[j][3] = attn_exp2_ftz(sacc[j][3] - mu1);
            ps0 += sacc[j][0] + sacc[j][1];
            ps1 += sacc[j][2] + sacc[j][3];
        }
        l0 = l0 * al0 + ps0;
        l1 = l1 * al1 + ps1;
        if (__any_sync(0xffffffffu, al0 != 1.f || al1 != 1.f)) {
#pragma unroll
            for (int i = 0; i < 32; i++) {
                o[i][0] *= al0;
                o[i][1] *= al0;
                o[i][2] *= al1;
                o[i][3] *= al1;
            }
        }

        /* O += P V: the C fragments of n-tiles 2kc and 2kc+1 (keys 16kc..
         * 16kc+15) are the A fragment of k16 chunk kc. */
#pragma unroll
        for (int kc = 0; kc < KC; kc++) {
            pa[kc][0] = attn_pack2<false>(sacc[2 * kc][0], sacc[2 * kc][1]);
            pa[kc][1] = attn_pack2<false>(sacc[2 * kc][2], sacc[2 * kc][3]);
            pa[kc][2] = attn_pack2<false>(sacc[2 * kc + 1][0], sacc[2 * kc + 1][1]);
            pa[kc][3] = attn_pack2<false>(sacc[2 * kc + 1][2], sacc[2 * kc + 1][3]);
        }
        if constexpr (WG) {
#ifdef ATTN_MTP_WGMMA
            /* Two k16 steps (keys 0-15, 16-31: 8-key groups 1024 bytes
             * apart); left in flight until the next tile's first barrier. */
            attn_wgmma_fence();
#pragma unroll
            for (int kc = 0; kc < KC; kc++)
                attn_wgmma<256, false>::rs_tb(reinterpret_cast<float(&)[128]>(o), pa[kc],
                                              dv0 + ((kc * 16 * 128) >> 4));
            attn_wgmma_commit();
#endif
        } else {
#pragma unroll
            for (int kc = 0; kc < KC; kc++) {
                /* V fragments are read one step ahead of the mma that use
                 * them, so the ldmatrix latency overlaps the previous step's
                 * mma. */
                uint32_t b[2][4];
                attn_ldsm_x4_trans(va[0] + kc * 16 * ROW, b[0]);
#pragma unroll
                for (int u = 0; u < 16; u++) {
                    if (u + 1 < 16)
                        attn_ldsm_x4_trans(va[(u + 1) & 3] + kc * 16 * ROW +
                                               ((u + 1) >> 2) * 128,
                                           b[(u + 1) & 1]);
                    attn_mma16816<false>(o[2 * u], pa[kc], b[u & 1][0], b[u & 1][1]);
                    attn_mma16816<false>(o[2 * u + 1], pa[kc], b[u & 1][2], b[u & 1][3]);
                }
            }
        }
    }
    attn_cp_async_wait(0);
#ifdef ATTN_MTP_WGMMA
    if constexpr (WG) {
        attn_wgmma_wait<0>();
        pin_pv_registers();
    }
#endif
    attn_pdl_launch_dependents(); /* every load is done: the reduce may be scheduled */

    /* Row sums over the 4 lanes of a row. */
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);

    if constexpr (PAIR) {
        /* The pair's two segments merge: warpgroup 1 leaves its state in
         * its own stages (thread-major, conflict-free), warpgroup 0 folds it
         * into its own with the log-sum-exp rule (each state's maximum is
         * the one its accumulators were scaled by) and writes the partial. */
        float *scr = (float *)(Qh + L::Q_BYTES + L::WG_BYTES);
        __syncthreads(); /* both warpgroups are past their last tile */
        if (wg == 1) {
#pragma unroll
            for (int i = 0; i < 32; i++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    scr[(i * 4 + e) * 128 + wtid] = o[i][e];
            scr[128 * 128 + wtid] = m0;
            scr[129 * 128 + wtid] = m1;
            scr[130 * 128 + wtid] = l0;
            scr[131 * 128 + wtid] = l1;
        }
        __syncthreads();
        if (wg == 1)
            return;
        const float bm0 = scr[128 * 128 + wtid], bm1 = scr[129 * 128 + wtid];
        const float bl0 = scr[130 * 128 + wtid], bl1 = scr[131 * 128 + wtid];
        float fa0, fb0, fa1, fb1;
        const float M0 = attn_merge_factors(m0, bm0, fa0, fb0);
        const float M1 = attn_merge_factors(m1, bm1, fa1, fb1);
#pragma unroll
        for (int i = 0; i < 32; i++) {
            o[i][0] = o[i][0] * fa0 + scr[(i * 4 + 0) * 128 + wtid] * fb0;
            o[i][1] = o[i][1] * fa0 + scr[(i * 4 + 1) * 128 + wtid] * fb0;
            o[i][2] = o[i][2] * fa1 + scr[(i * 4 + 2) * 128 + wtid] * fb1;
            o[i][3] = o[i][3] * fa1 + scr[(i * 4 + 3) * 128 + wtid] * fb1;
        }
        l0 = l0 * fa0 + bl0 * fb0;
        l1 = l1 * fa1 + bl1 * fb1;
        m0 = M0;
        m1 = M1;
    }

    if (QW == 2 && !WG) {
        /* Merge the two key groups of each token through shared memory (the
         * stage buffers are free now). */
        __syncthreads();
        float *mo = (float *)stage0; /* [QW][128][32] */
        float *ml = mo + QW * 128 * 32; /* [QW][4][32] */
        if (kg == 1 && active) {
#pragma unroll
            for (int i = 0; i < 32; i++)
#pragma unroll
                for (int k = 0; k < 4; k++)
                    mo[(tw * 128 + i * 4 + k) * 32 + lane] = o[i][k];
            ml[(tw * 4 + 0) * 32 + lane] = m0;
            ml[(tw * 4 + 1) * 32 + lane] = m1;
            ml[(tw * 4 + 2) * 32 + lane] = l0;
            ml[(tw * 4 + 3) * 32 + lane] = l1;
        }
        __syncthreads();
        if (kg == 0 && active) {
            const float bm0 = ml[(tw * 4 + 0) * 32 + lane], bm1 = ml[(tw * 4 + 1) * 32 + lane];
            const float bl0 = ml[(tw * 4 + 2) * 32 + lane], bl1 = ml[(tw * 4 + 3) * 32 + lane];
            float fa0, fb0, fa1, fb1;
            const float M0 = attn_merge_factors(m0, bm0, fa0, fb0);
            const float M1 = attn_merge_factors(m1, bm1, fa1, fb1);
#pragma unroll
            for (int i = 0; i < 32; i++) {
                o[i][0] = o[i][0] * fa0 + mo[(tw * 128 + i * 4 + 0) * 32 + lane] * fb0;
                o[i][1] = o[i][1] * fa0 + mo[(tw * 128 + i * 4 + 1) * 32 + lane] * fb0;
                o[i][2] = o[i][2] * fa1 + mo[(tw * 128 + i * 4 + 2) * 32 + lane] * fb1;
                o[i][3] = o[i][3] * fa1 + mo[(tw * 128 + i * 4 + 3) * 32 + lane] * fb1;
            }
            l0 = l0 * fa0 + bl0 * fb0;
            l1 = l1 * fa1 + bl1 * fb1;
            m0 = M0;
            m1 = M1;
        }
    }

    if (kg == 0 && active) {
        const int token = q0 + tw;
        /* the partial's segment: the program's (a pair's two are one) */
        const int64_t i0 =
            ((int64_t)blockIdx.z * p.num_tokens + token) * p.hq + kvh * MTP_GROUP + g;
        const int64_t i1 = i0 + 8;
        if (t == 0) {
            p.ws_ml[2 * i0] = m0;
            p.ws_ml[2 * i0 + 1] = l0;
            p.ws_ml[2 * i1] = m1;
            p.ws_ml[2 * i1 + 1] = l1;
        }
#pragma unroll
        for (int dt = 0; dt < 32; dt++) {
            *(float2 *)(p.ws_acc + i0 * MTP_D + 8 * dt + 2 * t) = make_float2(o[dt][0], o[dt][1]);
            *(float2 *)(p.ws_acc + i1 * MTP_D + 8 * dt + 2 * t) = make_float2(o[dt][2], o[dt][3]);
        }
    }
#else
    (void)p;
#endif
}

template <int QW, bool WG, bool PAIR = false>
static hipError_t launch_mtp_t(const attn_kparams *p, int nseg, hipStream_t stream)
{
    const int smem = mtp_smem<QW, WG, PAIR>::TOTAL;
    /* more than 48 KB of shared memory (see the generic launcher) */
    hipError_t e = attn_func_opt_in((const void *)attn_mtp_kernel<QW, WG, PAIR>, smem, -1);
    if (e != hipSuccess)
        return e;
    dim3 grid(p->num_seqs, p->hkv, nseg);
    return attn_launch(p->pdl_main, attn_mtp_kernel<QW, WG, PAIR>, grid, PAIR ? 256 : 128, smem,
                       stream, *p);
}

#endif /* ATTN_PLATFORM_CUDA */

/* Whether this build holds the warpgroup (wgmma) kernel: CMake defines
 * ATTNREG_CUDA_SM90A when the arch list has 90a. */
int attn_mtp_has_wgmma(void)
{
#if defined(ATTN_PLATFORM_CUDA) && defined(ATTNREG_CUDA_SM90A)
    return 1;
#else
    return 0;
#endif
}

/* Whether this build holds the mma path (every CUDA arch we build, sm_90,
 * is >= sm_89; the HIP build never does). */
int attn_mtp_has_mma(void)
{
#if defined(ATTN_PLATFORM_CUDA)
    return 1;
#else
    return 0;
#endif
}

hipError_t attn_launch_mtp(const attn_kparams *p, int max_seqlen_q, int nseg, hipStream_t stream)
{
    hipError_t e;
    attn_kparams q = *p;
    q.nseg = nseg;
    q.partials = 1; /* the MTP kernel always writes partials */
#if defined(ATTN_PLATFORM_CUDA)
    /* p->mtp_wgmma: 1 = the warpgroup kernel for every q_len, 2 = for
     * q_len 3-4 only (the launcher's choice, see gpu_attn.hip). */
    /* p->mtp_pair (the family's rule, attn_families.hip): the warpgroup
     * kernel's pair form, two segments a program, nseg / 2 partials. */
    const bool wg = max_seqlen_q <= 2 ? p->mtp_wgmma == 1 : p->mtp_wgmma != 0;
    const bool pair = wg && p->mtp_pair && nseg % 2 == 0;
    const int nprog = pair ? nseg / 2 : nseg;
    q.nseg = nprog;
    if (max_seqlen_q <= 2)
        e = !wg ? launch_mtp_t<2, false>(&q, nprog, stream)
            : pair ? launch_mtp_t<2, true, true>(&q, nprog, stream)
                   : launch_mtp_t<2, true>(&q, nprog, stream);
    else
        e = !wg ? launch_mtp_t<4, false>(&q, nprog, stream)
            : pair ? launch_mtp_t<4, true, true>(&q, nprog, stream)
                   : launch_mtp_t<4, true>(&q, nprog, stream);
    if (e != hipSuccess)
        return e;
    return attn_launch_reduce(&q, nprog, stream);
#else
    /* Portable path: the generic kernel with 64-row programs (all 4 tokens x
     * 16 heads of a sequence share each KV tile). */
    q.block_q = 4;
    q.heads_per_tile = MTP_GROUP;
    q.head_splits = 1;
    q.partials = nseg > 1 || q.lse; /* the generic kernel writes out itself at one segment */
    (void)max_seqlen_q;
    e = attn_launch_generic(&q, 4, stream, 16);
    return e;
#endif
}
