/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_decode_mma.hip — the generic kernel's decode path on NVIDIA matrix
 * units: every sequence has at most one query token, Q bf16 or f16 over a
 * cache of Q's type or of fp8 (e4m3fn / e4m3fnuz, per-tensor descales), head
 * size == value head size (64, 80, 96, 128, 192 or 256), page size a
 * multiple of 16.
 *
 * Why a separate kernel. Plain decode (32:8 heads, D 128, bf16) does 4 FLOP
 * per byte of K/V, so it is memory-bound for any code that issues few
 * enough instructions per byte. The scalar decode kernel (attn_generic.hip)
 * spends about 60 warp instructions per key and KV head (conversions, one
 * FMA per element and head, shuffles for the dot products) and measured 54 %
 * of copy bandwidth at best on the H200: issue-bound. Here the dot products
 * and P x V run on mma.sync m16n8k16, so a 16-key tile costs about 48 mma,
 * 8 + D/8 ldmatrix and a few dozen softmax instructions: about 10x fewer
 * instructions per byte, which leaves the kernel free to keep memory busy.
 *
 * Layout:
 *   - one program = ONE warp, owning (sequence, KV head, up to 16 query
 *     heads of it, key segment). The query heads are the 16 rows of the mma
 *     tile (a group of 4 uses 4 rows; the matrix units have throughput to
 *     spare). One-warp programs need no block barrier inside the key loop,
 *     and many of them fit on a multiprocessor (each streams its own
 *     tiles), which is what keeps bytes in flight at every batch size.
 *     A block holds up to 4 of them (consecutive key segments, each warp in
 *     its own slice of shared memory), merged through shared memory after
 *     the loop (attn_launch_plan_decode_mma_warps).
 *   - K and V tiles of 16 keys go global -> shared memory with cp.async in
 *     STAGES stages (STAGES - 1 tiles in flight while one is computed). A
 *     tile lies in one page (one block-table entry), and the entries are
 *     read 32 tiles ahead (a window of 32 in the lanes), so no copy waits on
 *     a dependent lookup.
 *   - 16-bit rows of a multiple of 128 bytes (D 64, 128, 192, 256) are
 *     stored unpadded with their 16-byte chunks XOR-swizzled (chunk c of row
 *     r at c ^ (r & 7)); D 80 and 96 rows are padded by 16 bytes. Either way
 *     the 8 rows one ldmatrix phase reads fall in 8 different 16-byte bank
 *     groups. The swizzle also keeps each 128-byte line a copy reads inside
 *     one 128-byte line of shared memory: with padded rows every warp's copy
 *     of two 256-byte rows cost 24 L2 sectors instead of 16
 *     (attn_launch_plan_decode_mma_row).
 *   - S = Q K^T: A = Q (ldmatrix, row-major [head][d]), B = K (ldmatrix,
 *     [key][d] is the "col" layout B wants). f32 accumulation; the score
 *     multiplier (scale x log2 e) is applied to the f32 scores, so Q enters
 *     the matrix units unchanged (bf16 x bf16 and f16 x f16 products are
 *     exact in f32).
 *   - Online softmax on the accumulator fragments (rows g and g + 8 of each
 *     lane; a quad of lanes shares a row), in log2 units.
 *   - O += P V: P from the score fragments (the C layout of S is the A
 *     layout of P), split into hi + lo 16-bit parts so that P keeps about 16
 *     significant bits instead of 8 (bf16) or 11 (f16): two mma per n-tile,
 *     and the result is as close to cpu-ref's f32 math as the scalar kernel.
 *     B = V via ldmatrix.trans.
 *   - At the end: the block's warps merged, then the normalised output (one
 *     block's segments are all of them) or the same (max, sum, acc) partials
 *     the other kernels write, merged by attn_reduce_kernel.
 * Keys are tiled at absolute multiples of 16; keys outside the visible range
 * [klo, khi) are zero-filled by the copy and masked to -inf.
 *
 * fp8 caches (KV8). Decode reads each K/V byte once, so an fp8 cache should
 * take half the time of a 16-bit one; on the scalar kernel it took 2.6-4.4x
 * longer (0.17-0.52 TB/s), issue-bound on per-element conversions.
 *
 * D a multiple of 32 (DIRECT, attn_launch_plan_decode_mma_fp8_direct): the raw
 * tiles stream through ATTN_DMMA_FP8_STAGES stages, rows padded to D + 16
 * bytes, and the mma fragments are read from them directly, 4 bytes a lane,
 * converted in registers (cvt e4m3x2 -> f16x2, exact). K: lane (g, t) of
 * n-tile j reads bytes 4t..4t+3 of chunk kk of key 8j + g, and takes them as
 * the chunk's elements 2t, 2t+1, 2t+8, 2t+9 (b0, b1 of m16n8k16); Q's
 * columns are stored in that order, which leaves Q K^T unchanged. V: lane
 * (g, t) reads the words at column 32G + 4g of keys 2t, 2t+1, 2t+8, 2t+9
 * and byte-permutes them into the B fragments of output n-tiles 4G..4G+3,
 * whose column n is then 32G + 4n + i: the output is stored in that order.
 * Raw rows of 128 or 256 bytes (D 128, 256) are stored unpadded with their
 * 16-byte chunks XOR-swizzled like the 16-bit rows (chunk c of row r at c ^
 * (r & 7)), the others (D 64, 192) padded by 16 bytes; either way the 32
 * lanes' reads fall in 32 distinct banks. There is no f16 tile, no
 * shared-memory round trip and no warp barrier between the copies and the
 * mma, so a program needs 16.1 KB at D 128 (the f16 tile path 25 KB) and its
 * tile's chain of latencies is shorter.
 *
 * D 80 (not DIRECT): the raw fp8 tiles (D bytes a row, half the copies)
 * stream through ATTN_DMMA_FP8_STAGES stages; each lane converts exactly the 16-byte chunks
 * it copied (cvt e4m3x2 -> f16x2, exact), once per tile, into one f16 K/V
 * tile, so no lane waits for another's copies and the raw ring needs no
 * barrier; three __syncwarp fence the f16 tile (K written, then read by
 * every lane's ldmatrix while V is written under the Q K^T mma, then V
 * read). The math is f16: an f16 Q enters as it is, a bf16 Q row
 * is scaled by the power of two that puts its largest element in
 * [2^14, 2^15) (exact: 8 significant bits fit f16's 11) and that power comes
 * back as the row's score multiplier. Both e4m3 formats are read with the
 * e4m3fn instruction: an e4m3fnuz code is worth half its e4m3fn reading,
 * which the launcher folds into the descales (the codes the formats read
 * differently are fixed in attn_fp8_nuz_fix).
 */
#include <math.h>

#include "attn_launch_plan.h"
#include "gpu_attn_internal.h"

#include <atomic>

#define DMMA_TILE ATTN_DMMA_TILE
/* The carveout (percent of the largest shared-memory configuration, 228 KB
 * on sm_90) the kernel asks for, per cache type; the bench's tuning hook
 * gpu_attn_tune_decode_mma can set another (and the programs per CU the
 * segment rule in gpu_attn.hip fills).
 *
 * A program is one warp, so the warps a multiprocessor holds are the
 * programs its shared memory holds, and with one warp per scheduler (4
 * programs) every tile waits out its own instruction latencies. Measured on
 * the H200 (32:8, D 128, version 10): ~1900 cycles per 16-key tile and
 * warp over bf16 (about the latency chain of its ~200 instructions), ~3000
 * over fp8 (the conversion). bf16 reaches 3.9-4.0 TB/s at batch >= 32 with
 * half the storage as shared memory (4 programs at D 128) and gains
 * nothing from more at one wave; fp8 moved 1.3 TB/s with 4 programs and 2.4
 * with 8 (the whole 228 KB): it needs the warps. With all 228 KB (8
 * programs at D 128 over bf16 and over fp8) and the segment rule aiming at
 * 6 of them per CU, bf16 ran faster than before on every row of batch >= 8
 * (3-10 %). */
#define DMMA_CARVEOUT_PERCENT 100
#define DMMA_TARGET_PER_CU 6
static std::atomic<int> dmma_carveout_tuned{0};
static std::atomic<int> dmma_target_tuned{0};
static int dmma_carveout_percent(void)
{
    const int t = dmma_carveout_tuned.load(std::memory_order_relaxed);
    return t > 0 ? t : DMMA_CARVEOUT_PERCENT;
}

/* Shared memory of one program, rows of D 16-bit elements plus 16 bytes of
 * padding. A 16-bit cache: Q (16 rows) and STAGES stages of K and V (16 rows
 * each); three stages: two tiles in flight per program. An fp8 cache (KV8):
 * Q, one f16 K and V tile, the 16 rows' score multipliers, and STAGES stages
 * of raw K and V (16 rows of D bytes each): two raw tiles in flight. */
template <int D, bool KV8>
struct dmma_plan {
    static constexpr int ROW = attn_launch_plan_decode_mma_row(D);
    static constexpr bool SWZ = ROW == D * 2; /* chunk c of row r at c ^ (r & 7) */
    static constexpr int STAGES = attn_launch_plan_decode_mma_stages(KV8);
    static constexpr int SMEM = attn_launch_plan_decode_mma_bytes(D, KV8); /* the plan table's */
    /* Q in registers (D <= 128): its rows pass through a stage not yet in
     * use (16-bit: the last stage, which the first copies leave free; fp8:
     * the f16 tile, first written after Q is read). Else Q's own rows. */
    static constexpr bool QREG = D <= ATTN_DMMA_QREG_MAX_D;
    static constexpr int Q_BYTES = QREG ? 0 : DMMA_TILE * ROW;
    /* KV8: the raw tiles read straight into the fragments (no f16 tile;
     * attn_launch_plan_decode_mma_fp8_direct). */
    static constexpr bool DIRECT = KV8 && attn_launch_plan_decode_mma_fp8_direct(D);
    /* KV8: bytes a raw row takes; DIRECT rows of 128 or 256 bytes are
     * swizzled like the 16-bit ones (RSWZ), the others padded */
    static constexpr int RROW = DIRECT ? attn_launch_plan_decode_mma_raw_row(D) : D;
    static constexpr bool RSWZ = DIRECT && RROW == D;
    /* KV8: after Q and (not DIRECT) the f16 K and V tile */
    static constexpr int ROWMUL = Q_BYTES + (DIRECT ? 0 : 2 * DMMA_TILE * ROW);
    static constexpr int RAW = ROWMUL + ATTN_DMMA_ROWMUL_BYTES; /* KV8: the raw stages */
    static constexpr int RAW_STAGE = 2 * DMMA_TILE * RROW;      /* raw K rows, then V */
    static_assert(!DIRECT || !QREG || RAW_STAGE >= DMMA_TILE * ROW,
                  "Q passes through the last raw stage");
    static_assert(KV8 ? SMEM == RAW + STAGES * RAW_STAGE
                      : SMEM == Q_BYTES + STAGES * 2 * DMMA_TILE * ROW,
                  "Q and the stages");
    static_assert(RAW % 16 == 0 && RAW_STAGE % 16 == 0, "16-byte copies");
    /* A warp's slice of a block of several (ATTN_DMMA_MAX_WARPS); at the
     * end it holds the warp's state for the merge: D / 8 x 4 accumulators
     * and 4 row values, per lane. */
    static constexpr int SLICE = attn_launch_plan_decode_mma_slice(D, KV8);
    static_assert(SLICE >= SMEM && SLICE % 128 == 0, "the plan table's slice");
    static_assert((D / 8 * 4 + 4) * 32 * 4 <= SLICE, "the merge state fits a slice");
};

#if defined(ATTN_PLATFORM_CUDA)
#include <cuda_bf16.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define ATTN_DMMA_DEVICE 1
#endif

#ifdef ATTN_DMMA_DEVICE
/* Two floats -> a 16-bit pair (lo in the low half), round to nearest even,
 * and the residuals the rounding left, so that hi + lo carries ~16 bits. */
template <bool BF16>
static __device__ __forceinline__ void dmma_split(float x0, float x1, uint32_t &hi, uint32_t &lo)
{
    if constexpr (BF16) {
        const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
        const float2 back = __bfloat1622float2(h);
        const __nv_bfloat162 l = __floats2bfloat162_rn(x0 - back.x, x1 - back.y);
        hi = *(const uint32_t *)&h;
        lo = *(const uint32_t *)&l;
    } else {
        const __half2 h = __floats2half2_rn(x0, x1);
        const float2 back = __half22float2(h);
        const __half2 l = __floats2half2_rn(x0 - back.x, x1 - back.y);
        hi = *(const uint32_t *)&h;
        lo = *(const uint32_t *)&l;
    }
}
/* Sixteen e4m3 codes (one raw 16-byte chunk) -> sixteen f16 in y, exact
 * (e4m3fn reading; nuz: the codes e4m3fnuz reads differently fixed, every
 * code then worth twice its fnuz value, as the launcher's descales expect). */
static __device__ __forceinline__ void dmma_fp8x16_to_f16(uint4 x, bool nuz, uint32_t (&y)[8])
{
#if __CUDA_ARCH__ >= 890
    attn_fp8x4_to_f16x4(x.x, y[0], y[1]);
    attn_fp8x4_to_f16x4(x.y, y[2], y[3]);
    attn_fp8x4_to_f16x4(x.z, y[4], y[5]);
    attn_fp8x4_to_f16x4(x.w, y[6], y[7]);
    if (nuz)
        attn_fp8_nuz_fix(x, y);
#else
    /* No e4m3 conversion instruction before sm_89: the exact decoder. */
    const uint32_t w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (int e = 0; e < 16; e += 2) {
        const uint32_t c0 = (w[e >> 2] >> (8 * (e & 3))) & 0xFFu;
        const uint32_t c1 = (w[e >> 2] >> (8 * ((e + 1) & 3))) & 0xFFu;
        const float m = nuz ? 2.f : 1.f;
        y[e >> 1] = attn_f32_to_f16_bits(m * attn_fp8_to_f32(c0, nuz)) |
                    (attn_f32_to_f16_bits(m * attn_fp8_to_f32(c1, nuz)) << 16);
    }
#endif
}

/* Two e4m3 codes (the low 16 bits of x) -> an f16 pair (the first code in
 * the low half), exact; nuz: the codes attn_fp8_nuz_fix fixes, fixed the
 * same way (every code then worth twice its fnuz value). */
static __device__ __forceinline__ uint32_t dmma_fp8x2_to_f16x2(uint32_t x, bool nuz)
{
    uint32_t y;
#if __CUDA_ARCH__ >= 890
    asm("{\n .reg .b16 a, b;\n mov.b32 {a, b}, %1;\n cvt.rn.f16x2.e4m3x2 %0, a;\n}\n"
        : "=r"(y)
        : "r"(x));
#else
    y = attn_f32_to_f16_bits(attn_fp8_to_f32(x & 0xFFu, 0)) |
        (attn_f32_to_f16_bits(attn_fp8_to_f32((x >> 8) & 0xFFu, 0)) << 16);
#endif
    if (nuz) {
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const uint32_t code = (x >> (8 * e)) & 0xFFu;
            if (code == 0x7Fu || code == 0xFFu || code == 0x80u) {
                const uint32_t h = attn_f32_to_f16_bits(2.f * attn_fp8_to_f32(code, 1));
                y = e ? (y & 0xFFFFu) | (h << 16) : (y & 0xFFFF0000u) | h;
            }
        }
    }
    return y;
}

/* Byte offset of 16-byte chunk c of row r in a tile of ROW-byte rows:
 * XOR-swizzled (SWZ: chunk c at c ^ (r & 7), rows a whole number of
 * 128-byte lines) or plain (padded rows). The 16-bit tiles and the direct
 * fp8 path's raw rows share it (plan::SWZ / plan::RSWZ). */
template <int ROW, bool SWZ> static __device__ __forceinline__ int dmma_chunk_off(int r, int c)
{
    return SWZ ? r * ROW + ((c ^ (r & 7)) << 4) : r * ROW + c * 16;
}
#endif /* ATTN_DMMA_DEVICE */

/* NUZ: an e4m3fnuz cache (a template argument, not a runtime test: the fix
 * of its special codes sits in every conversion of the fragments' loop, and
 * a branch there keeps the compiler from interleaving loads, conversions and
 * mma). */
template <int D, bool BF16Q, bool KV8, bool NUZ>
__global__ void __launch_bounds__(32 * ATTN_DMMA_MAX_WARPS) attn_decode_mma_kernel(const attn_kparams p)
{
#ifdef ATTN_DMMA_DEVICE
    attn_pdl_wait(); /* launched with p.pdl_main: the kernel before has finished */
    using plan = dmma_plan<D, KV8>;
    /* The matrix units' input type: Q's, or f16 over an fp8 cache. */
    constexpr bool BF16 = BF16Q && !KV8;
    constexpr int ROWB = plan::ROW;
    constexpr int CH = D / 8;      /* 16-byte chunks per row */
    constexpr int KC = D / 16;     /* k16 chunks of Q K^T */
    constexpr int NT = D / 8;      /* n8 tiles of the output */
    constexpr int STAGES = plan::STAGES;
    constexpr int STAGE = 2 * DMMA_TILE * ROWB; /* K rows, then V rows */
    constexpr int LOADS = DMMA_TILE * CH / 32;  /* 16-byte copies per lane per K tile */
    static_assert(DMMA_TILE * CH % 32 == 0, "a tile's chunks must split evenly over the lanes");
    /* fp8: raw 16-byte chunks per row and per lane (D 80: 80 chunks, the
     * last pass partial) */
    constexpr int RCH = D / 16;
    constexpr int RLOADS = (DMMA_TILE * RCH + 31) / 32;
    extern __shared__ __align__(128) uint8_t dmma_block_sm[];
    /* A block holds W = blockDim.x / 32 warps: warp w is the program of key
     * segment W blockIdx.z + w, in its own slice (see the merge below). */
    const int W = blockDim.x >> 5, wid = threadIdx.x >> 5;
    uint8_t *const dmma_sm = dmma_block_sm + wid * plan::SLICE;
    /* 16-bit cache: the stages; fp8: the one f16 K/V tile */
    uint8_t *stage0 = dmma_sm + plan::Q_BYTES;
    float *rowmul = (float *)(dmma_sm + plan::ROWMUL);
    uint8_t *raw0 = dmma_sm + plan::RAW;
    /* Q's rows: their own (D > 128), else a stage the first copies leave
     * free (fp8: the f16 tile, first written after Q is read; fp8 read
     * directly: the last raw stage) */
    uint8_t *Qs = !plan::QREG       ? dmma_sm
                  : plan::DIRECT    ? raw0 + (STAGES - 1) * plan::RAW_STAGE
                  : KV8             ? stage0
                                    : stage0 + (STAGES - 1) * STAGE;
    constexpr bool DIRECT = plan::DIRECT;
    constexpr int RROW = plan::RROW;
    constexpr bool nuz = KV8 && NUZ;
    /* chunk c of row r of a 16-bit tile (Q, K, V, the f16 tile) */
    auto chunk_at = [](int r, int c) -> int { return dmma_chunk_off<ROWB, plan::SWZ>(r, c); };

    const int lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    const int s = blockIdx.y;
    const int kvh = blockIdx.x / p.head_splits, hsplit = blockIdx.x % p.head_splits;
    const int seg = blockIdx.z * W + wid;
    const int q0 = p.cu_seqlens_q[s];
    if (p.cu_seqlens_q[s + 1] - q0 != 1)
        return; /* no query token for this sequence in this step, or (a mixed batch's
                   decode part) a prefill chunk */
    const int K = p.seqused_k[s];
    int klo, khi; /* the one query token is the last position */
    attn_visible_keys(p, K, K - 1, K - 1, klo, khi);
    /* Tiles at absolute multiples of 16 keys; this segment's share of them. */
    const int tfirst = klo / DMMA_TILE;
    const int ntile = khi > klo ? (khi + DMMA_TILE - 1) / DMMA_TILE - tfirst : 0;
    const int per = (ntile + p.nseg * W - 1) / (p.nseg * W);
    const int t_lo = tfirst + min(ntile, seg * per);
    const int t_hi = tfirst + min(ntile, seg * per + per);
    const int nt = t_hi - t_lo;

    const int32_t *bt = p.block_table + (int64_t)s * p.bt_stride;
    const bool pow2page = (p.page & (p.page - 1)) == 0;
    const int pshift = __ffs(p.page) - 1;
    const uint8_t *kc = (const uint8_t *)p.k_cache, *vc = (const uint8_t *)p.v_cache;

    /* The page size is a multiple of 16 (attn_launch_plan_decode_mma_takes), so a
     * tile lies in one page: one block-table entry per tile, and the tile's
     * rows sit at a fixed stride, so a copy costs an add, not a lookup and a
     * 64-bit multiply. */
    const int64_t row_stride = p.kv_stride_token; /* bytes between keys of a page */

    /* Lane l holds the block of tile t_lo + 32 w + l for the current window
     * w of 32 tiles, and the next window is read when the current one comes
     * into use, 32 tiles before it is needed. One lookup per tile issued a
     * single tile ahead left every tile waiting on a dependent global load. */
    auto fetch_window = [&](int w) -> int {
        const int tile = t_lo + 32 * w + lane;
        if (tile >= t_hi)
            return 0;
        const int key = tile * DMMA_TILE;
        return bt[pow2page ? key >> pshift : key / p.page];
    };
    int win_cur = fetch_window(0), win_nxt = fetch_window(1), wbase = 0;
    /* The block of tile t_lo + idx (idx increases call by call). */
    auto window_blk = [&](int idx) -> int {
        if ((idx >> 5) != wbase) {
            win_cur = win_nxt;
            wbase++;
            win_nxt = fetch_window(wbase + 1);
        }
        return __shfl_sync(0xffffffffu, win_cur, idx & 31);
    };
    /* One 16-byte K/V copy with the .L2::128B prefetch size (version 16
     * measured it against the plain copy). A compile-time choice: as a
     * runtime flag every copy was issued twice, one form predicated off. */
    auto copy16 = [&](uint8_t *dst, const uint8_t *src, bool ok) {
        attn_cp_async16<true>(dst, src, ok);
    };
    /* Issue the copies of one tile: lane-chunk i is key row r = idx / CH,
     * 16-byte chunk c = idx % CH of both K and V; keys outside the visible
     * range are zero-filled. */
    auto load_tile = [&](int tile, int st, int blk) {
        const int kb = tile * DMMA_TILE;
        const bool full = kb >= klo && kb + DMMA_TILE <= khi;
        const int inpage = pow2page ? kb & (p.page - 1) : kb % p.page;
        const int64_t base =
            (int64_t)blk * p.kv_stride_block + inpage * row_stride + kvh * p.kv_stride_head;
        if constexpr (KV8) {
            /* raw rows of D bytes: packed (lane-chunk idx lands at idx * 16),
             * or (DIRECT) rows of RROW bytes */
            uint8_t *Kr = raw0 + st * plan::RAW_STAGE;
            uint8_t *Vr = Kr + DMMA_TILE * RROW;
#pragma unroll
            for (int i = 0; i < RLOADS; i++) {
                const unsigned idx = (unsigned)lane + 32u * i;
                if (DMMA_TILE * RCH % 32 != 0 && idx >= (unsigned)(DMMA_TILE * RCH))
                    break;
                const unsigned r = idx / RCH, c = idx % RCH;
                const bool ok = full || (kb + (int)r >= klo && kb + (int)r < khi);
                const int64_t off = base + (int64_t)r * row_stride + c * 16;
                const unsigned dst =
                    DIRECT ? dmma_chunk_off<RROW, plan::RSWZ>(r, c) : idx * 16;
                copy16(Kr + dst, kc + off, ok);
                copy16(Vr + dst, vc + off, ok);
            }
        } else {
            uint8_t *Ks = stage0 + st * STAGE;
            uint8_t *Vs = Ks + DMMA_TILE * ROWB;
#pragma unroll
            for (int i = 0; i < LOADS; i++) {
                const unsigned idx = (unsigned)lane + 32u * i;
                const unsigned r = idx / CH, c = idx % CH;
                const bool ok = full || (kb + (int)r >= klo && kb + (int)r < khi);
                const int64_t off = base + (int64_t)r * row_stride + c * 16;
                copy16(Ks + chunk_at(r, c), kc + off, ok);
                copy16(Vs + chunk_at(r, c), vc + off, ok);
            }
        }
    };
    /* fp8: this lane's raw chunks of stage st (its own copies, waited for),
     * K (part 0) or V (part 1), into the f16 tile. */
    auto convert_part = [&](int st, int part) {
        const uint8_t *src = raw0 + st * plan::RAW_STAGE + part * DMMA_TILE * D;
        uint8_t *dst = stage0 + part * DMMA_TILE * ROWB;
#pragma unroll
        for (int i = 0; i < RLOADS; i++) {
            const unsigned idx = (unsigned)lane + 32u * i;
            if (DMMA_TILE * RCH % 32 != 0 && idx >= (unsigned)(DMMA_TILE * RCH))
                break;
            const unsigned r = idx / RCH, c = idx % RCH;
            uint32_t y[8];
            dmma_fp8x16_to_f16(*(const uint4 *)(src + idx * 16), nuz, y);
            *(uint4 *)(dst + chunk_at(r, 2 * c)) = make_uint4(y[0], y[1], y[2], y[3]);
            *(uint4 *)(dst + chunk_at(r, 2 * c + 1)) = make_uint4(y[4], y[5], y[6], y[7]);
        }
    };

    /* Start the first tiles before anything else: their latency then
     * overlaps the Q load below. */
#pragma unroll
    for (int i = 0; i < STAGES - 1; i++) {
        if (i < nt)
            load_tile(t_lo + i, i, window_blk(i));
        attn_cp_async_commit(); /* empty groups keep the wait counts uniform */
    }

    /* Q: 16 rows = query heads hsplit * 16 + row of this KV head, raw 16-bit
     * (the same type as the cache; fp8 cache: f16, scaled rows for a bf16
     * Q); rows past the group are zeros. */
    float qmul0, qmul1; /* rows g and g + 8: the score multiplier */
    {
        const float qm = p.softcap > 0.f ? p.score_scale : p.score_scale * ATTN_LOG2E;
        qmul0 = qmul1 = qm;
    }
    if constexpr (KV8) {
        /* lanes r and r + 16 share row r: chunks of one parity each */
        const int r = lane & 15, half = lane >> 4;
        const int hg = hsplit * DMMA_TILE + r;
        const bool ok = hg < p.group;
        const uint16_t *qrow = (const uint16_t *)p.q + (int64_t)q0 * p.q_stride_token +
                               (int64_t)(kvh * p.group + (ok ? hg : 0)) * p.q_stride_head;
        auto read8 = [&](int c, uint32_t (&w)[4]) {
            const uint4 u = ok ? attn_load_16bit8(qrow + c * 8, p.q_vec16) : make_uint4(0u, 0u, 0u, 0u);
            w[0] = u.x, w[1] = u.y, w[2] = u.z, w[3] = u.w;
        };
        /* Up to D 128 each lane reads its whole row once, every chunk's
         * global read issued together (read chunk by chunk, a pass for the
         * maximum and one for the conversion waited out a round trip a
         * chunk; see the 16-bit path below), at most 64 registers for the
         * prologue; above, the two passes' reads (unrolled, so each pass's
         * issue together). chunk(c, odd) picks chunk c + odd, c even or odd
         * a compile-time constant, so the row stays in registers. */
        constexpr bool ROW_IN_REGS = CH <= 16;
        uint32_t rowq[ROW_IN_REGS ? CH : 1][4];
        if constexpr (ROW_IN_REGS) {
#pragma unroll
            for (int c = 0; c < CH; c++)
                read8(c, rowq[c]);
        }
        auto chunk = [&](int c, bool odd, uint32_t (&w)[4]) {
            if constexpr (ROW_IN_REGS) {
#pragma unroll
                for (int k = 0; k < 4; k++)
                    w[k] = odd ? rowq[c + 1][k] : rowq[c][k];
            } else {
                read8(c + (odd ? 1 : 0), w);
            }
        };
        float mx = 0.f;
        if (BF16Q) {
#pragma unroll
            for (int cc = 0; cc < CH / 2; cc++) {
                uint32_t w[4];
                chunk(2 * cc, half, w);
#pragma unroll
                for (int k = 0; k < 4; k++)
                    mx = fmaxf(mx, fmaxf(fabsf(attn_bf16_to_f32(w[k] & 0xFFFFu)),
                                         fabsf(attn_bf16_to_f32(w[k] >> 16))));
            }
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 16));
        }
        int sh = 0;
#pragma unroll
        for (int cc = 0; cc < CH / 2; cc++) {
            const int c = 2 * cc + half;
            uint32_t w[4];
            if constexpr (DIRECT) {
                /* The K fragments read a lane's 4 raw bytes 4t..4t+3 of a
                 * 16-element chunk as the chunk's elements 2t, 2t+1, 2t+8,
                 * 2t+9: Q's columns are stored in that order too (the dot
                 * product does not care which order the pairs come in).
                 * Logical chunk c: elements {0,1,4,5,8,9,12,13} (even c) or
                 * {2,3,6,7,10,11,14,15} (odd c) of physical chunks c & ~1 and
                 * (c & ~1) + 1, two elements a word. */
                uint32_t a[4], b[4];
                chunk(2 * cc, false, a);
                chunk(2 * cc, true, b);
                const bool odd = c & 1;
                w[0] = odd ? a[1] : a[0], w[1] = odd ? a[3] : a[2];
                w[2] = odd ? b[1] : b[0], w[3] = odd ? b[3] : b[2];
            } else {
                chunk(2 * cc, half, w);
            }
            if (BF16Q) {
                float v[8];
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    v[2 * k] = attn_bf16_to_f32(w[k] & 0xFFFFu);
                    v[2 * k + 1] = attn_bf16_to_f32(w[k] >> 16);
                }
                sh = attn_q_to_f16_scaled(v, mx, w);
            }
            *(uint4 *)(Qs + chunk_at(r, c)) = make_uint4(w[0], w[1], w[2], w[3]);
        }
        if (half == 0)
            rowmul[r] = attn_mul_pow2(1.f, -sh);
        __syncwarp();
        qmul0 *= rowmul[g];
        qmul1 *= rowmul[g + 8];
    } else {
        /* Every chunk's global read is issued before the first shared store:
         * a loop that read and stored chunk by chunk waited out one round
         * trip per chunk (8 a lane at D 128; its store was the kernel's most
         * sampled stall, 10 % of the samples at batch 32 x 1024 keys, Nsight
         * Compute, bench/RESULTS.md version 22), while the first tiles'
         * copies had long landed. */
        constexpr int QL = DMMA_TILE * CH / 32; /* chunks a lane */
        uint4 qv[QL];
#pragma unroll
        for (int i = 0; i < QL; i++) {
            const int idx = lane + 32 * i;
            const int r = idx / CH, c = idx % CH;
            const int hg = hsplit * DMMA_TILE + r;
            qv[i] = make_uint4(0u, 0u, 0u, 0u);
            if (hg < p.group) {
                const int64_t off = (int64_t)q0 * p.q_stride_token +
                                    (int64_t)(kvh * p.group + hg) * p.q_stride_head + c * 8;
                qv[i] = attn_load_16bit8((const uint16_t *)p.q + off, p.q_vec16);
            }
        }
#pragma unroll
        for (int i = 0; i < QL; i++) {
            const int idx = lane + 32 * i;
            *(uint4 *)(Qs + chunk_at(idx / CH, idx % CH)) = qv[i];
        }
    }

    float o[NT][4];
#pragma unroll
    for (int j = 0; j < NT; j++)
        o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

    /* Q's A fragments held for the whole program (D <= 128): read once, and
     * the stage Q passed through is free again after the barrier. */
    uint32_t qf[plan::QREG ? KC : 1][4];
    if constexpr (plan::QREG) {
        __syncwarp();
#pragma unroll
        for (int kk = 0; kk < KC; kk++)
            attn_ldsm_x4(attn_smem_addr(Qs + chunk_at(lane & 15, 2 * kk + (lane >> 4))), qf[kk]);
        __syncwarp();
    }

    /* Per-lane ldmatrix addresses (byte offsets inside a tile). A (Q): lanes
     * 8j..8j+7 address matrix j = (rows 0-7 | 8-15) x (chunk 2kc | 2kc+1).
     * B (K): matrix j = (keys 0-7 | 8-15 for j / 2) x (chunk 2kc + j % 2).
     * B (V, transposed): matrix j = (keys 0-7 | 8-15 for j % 2) x (chunk
     * 2n2 + j / 2). */
    /* A lane reads chunk 2k + j of its row, k the loop's step: with the
     * swizzle (rows of a lane's matrix are 8-aligned, so the row's swizzle
     * term is lane & 7) that chunk is 8 (k / 4) + ((2 (k % 4) + j) ^ (lane &
     * 7)), so a lane keeps one offset per k % 4 and adds 128 (k / 4) bytes,
     * a compile-time constant in the unrolled loops. */
    int a_off[4], k_off[4], v_off[4];
#pragma unroll
    for (int u = 0; u < 4; u++) {
        a_off[u] = chunk_at(lane & 15, 2 * u + (lane >> 4));
        k_off[u] = chunk_at((lane & 7) + 8 * (lane >> 4), 2 * u + ((lane >> 3) & 1));
        v_off[u] = chunk_at((lane & 7) + 8 * ((lane >> 3) & 1), 2 * u + (lane >> 4));
    }
    /* fp8 read directly (DIRECT): lane (g, t) reads 4 bytes at 4t of chunk
     * kk of K rows 8j + g, and 4 bytes at column 32G + 4g (chunk 2G + g / 4)
     * of V rows 2t, 2t + 1, 2t + 8, 2t + 9. With swizzled raw rows (RSWZ)
     * the K row's term is g and the V rows' terms are 2t and 2t + 1, so the
     * in-row offsets are kept per kk % 8 (K) and per G % 4 (V, one set per
     * term), plus 128 bytes per 8 chunks. */
    int rk_off[8], rv_off0[4], rv_off1[4]; /* (used where plan::RSWZ) */
#pragma unroll
    for (int u = 0; u < 8; u++)
        rk_off[u] = ((u ^ g) << 4) + 4 * t;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const int c = 2 * u + (g >> 2);
        rv_off0[u] = ((c ^ (2 * t)) << 4) + 4 * (g & 3);
        rv_off1[u] = ((c ^ (2 * t + 1)) << 4) + 4 * (g & 3);
    }

    for (int it = 0; it < nt; it++) {
        attn_cp_async_wait(STAGES - 2);
        const uint8_t *Ks, *Vs;
        if constexpr (DIRECT) {
            __syncwarp(); /* tile `it` visible to every lane; stage it-1 free */
            if (it + STAGES - 1 < nt)
                load_tile(t_lo + it + STAGES - 1, (it + STAGES - 1) % STAGES,
                          window_blk(it + STAGES - 1));
            attn_cp_async_commit();
            Ks = raw0 + (it % STAGES) * plan::RAW_STAGE;
        } else if constexpr (KV8) {
            /* This lane's raw chunks of tile it have landed; the raw stage of
             * it - 1 is free (this lane converted its own chunks of it). */
            if (it + STAGES - 1 < nt)
                load_tile(t_lo + it + STAGES - 1, (it + STAGES - 1) % STAGES,
                          window_blk(it + STAGES - 1));
            attn_cp_async_commit();
            __syncwarp(); /* every lane done reading the f16 tile of it - 1 */
            convert_part(it % STAGES, 0);
            __syncwarp(); /* K of it visible to every lane; V converts under Q K^T */
            Ks = stage0;
        } else {
            __syncwarp(); /* tile `it` visible to every lane; stage it-1 free */
            if (it + STAGES - 1 < nt)
                load_tile(t_lo + it + STAGES - 1, (it + STAGES - 1) % STAGES,
                          window_blk(it + STAGES - 1));
            attn_cp_async_commit();
            Ks = stage0 + (it % STAGES) * STAGE;
        }
        Vs = Ks + DMMA_TILE * (DIRECT ? RROW : ROWB);

        /* S = Q K^T: two n8 tiles (keys 0-7, 8-15), each accumulated in two
         * chains (even and odd k16 chunks) so that dependent mma wait half
         * as long; summed after. */
        float sc[2][4], sx[2][4];
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                sc[j][e] = sx[j][e] = 0.f;
#pragma unroll
        for (int kk = 0; kk < KC; kk++) {
            uint32_t a[4], b[4];
            if constexpr (plan::QREG) {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    a[e] = qf[kk][e];
            } else {
                attn_ldsm_x4(attn_smem_addr(Qs + a_off[kk & 3] + (kk >> 2) * 128), a);
            }
            if constexpr (DIRECT) {
                /* B of keys 8j + g: the raw bytes 4t..4t+3 of chunk kk (Q's
                 * columns are in the matching order) */
#pragma unroll
                for (int j = 0; j < 2; j++) {
                    const uint32_t w =
                        *(const uint32_t *)(Ks + (8 * j + g) * RROW +
                                            (plan::RSWZ ? rk_off[kk & 7] + (kk >> 3) * 128
                                                        : kk * 16 + 4 * t));
                    attn_mma16816<BF16>(kk & 1 ? sx[j] : sc[j], a, dmma_fp8x2_to_f16x2(w, nuz),
                                        dmma_fp8x2_to_f16x2(w >> 16, nuz));
                }
            } else {
                attn_ldsm_x4(attn_smem_addr(Ks + k_off[kk & 3] + (kk >> 2) * 128), b);
                attn_mma16816<BF16>(kk & 1 ? sx[0] : sc[0], a, b[0], b[1]);
                attn_mma16816<BF16>(kk & 1 ? sx[1] : sc[1], a, b[2], b[3]);
            }
        }
        /* fp8: V of this tile is converted while the Q K^T mma are in flight
         * (nothing here reads their results), then published for P V. A
         * warp's tile is a chain of latencies, and this takes the V half of
         * the conversion off it. */
        if constexpr (KV8 && !DIRECT) {
            convert_part(it % STAGES, 1);
            __syncwarp();
        }
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                sc[j][e] += sx[j][e];

        /* Scores in log2 units, masks, online softmax for rows g and g + 8. */
        const int kb = (t_lo + it) * DMMA_TILE;
        const bool full = kb >= klo && kb + DMMA_TILE <= khi;
        /* Each step its own pass under one uniform branch (per element, the
         * masks' tests became selects that every tile ran: the prefill
         * kernel's, bench/RESULTS.md version 24). */
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                sc[j][e] *= qmul0;
                sc[j][2 + e] *= qmul1;
            }
        if (p.softcap > 0.f) {
#pragma unroll
            for (int j = 0; j < 2; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    sc[j][e] = p.softcap * tanhf(sc[j][e] / p.softcap) * ATTN_LOG2E;
        }
        if (!full) {
#pragma unroll
            for (int j = 0; j < 2; j++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int key = kb + 8 * j + 2 * t + e;
                    if (key < klo || key >= khi)
                        sc[j][e] = sc[j][2 + e] = -INFINITY;
                }
        }
        float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
        for (int j = 0; j < 2; j++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                mx0 = fmaxf(mx0, sc[j][e]);
                mx1 = fmaxf(mx1, sc[j][2 + e]);
            }
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
        const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
        const float mu0 = mn0 == -INFINITY ? 0.f : mn0, mu1 = mn1 == -INFINITY ? 0.f : mn1;
        const float al0 = exp2f(m0 - mu0), al1 = exp2f(m1 - mu1);
        m0 = mn0;
        m1 = mn1;
#pragma unroll
        for (int j = 0; j < 2; j++) {
            sc[j][0] = exp2f(sc[j][0] - mu0);
            sc[j][1] = exp2f(sc[j][1] - mu0);
            sc[j][2] = exp2f(sc[j][2] - mu1);
            sc[j][3] = exp2f(sc[j][3] - mu1);
        }
        l0 = l0 * al0 + (sc[0][0] + sc[0][1] + sc[1][0] + sc[1][1]);
        l1 = l1 * al1 + (sc[0][2] + sc[0][3] + sc[1][2] + sc[1][3]);
        /* Rescale only when some row's maximum moved: after the first tiles
         * it rarely does, and it is D / 2 multiplies per lane. */
        if (__any_sync(0xffffffffu, al0 != 1.f || al1 != 1.f)) {
#pragma unroll
            for (int j = 0; j < NT; j++) {
                o[j][0] *= al0;
                o[j][1] *= al0;
                o[j][2] *= al1;
                o[j][3] *= al1;
            }
        }

        /* O += P V with P = hi + lo. A fragment of P (rows g, g + 8; keys
         * 2t, 2t+1 and 8 + 2t, 8 + 2t + 1): the C layout of the scores. */
        uint32_t ph[4], pl[4];
        dmma_split<BF16>(sc[0][0], sc[0][1], ph[0], pl[0]);
        dmma_split<BF16>(sc[0][2], sc[0][3], ph[1], pl[1]);
        dmma_split<BF16>(sc[1][0], sc[1][1], ph[2], pl[2]);
        dmma_split<BF16>(sc[1][2], sc[1][3], ph[3], pl[3]);
        if constexpr (DIRECT) {
            /* B of P V for output n-tile 4G + i: V at keys 2t, 2t+1, 2t+8,
             * 2t+9 and column 32G + 4g + i (the output columns are stored
             * in that order): byte i of the 4-byte reads of those rows at
             * 32G + 4g, two keys a pair. */
#pragma unroll
            for (int G = 0; G < NT / 4; G++) {
                const uint8_t *vb0 =
                    Vs + (plan::RSWZ ? rv_off0[G & 3] + (G >> 2) * 128 : 32 * G + 4 * g);
                const uint8_t *vb1 =
                    Vs + (plan::RSWZ ? rv_off1[G & 3] + (G >> 2) * 128 : 32 * G + 4 * g);
                const uint32_t w0 = *(const uint32_t *)(vb0 + (2 * t) * RROW);
                const uint32_t w1 = *(const uint32_t *)(vb1 + (2 * t + 1) * RROW);
                const uint32_t w2 = *(const uint32_t *)(vb0 + (2 * t + 8) * RROW);
                const uint32_t w3 = *(const uint32_t *)(vb1 + (2 * t + 9) * RROW);
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const uint32_t sel = (uint32_t)i | ((uint32_t)(4 + i) << 4);
                    const uint32_t b0 = dmma_fp8x2_to_f16x2(__byte_perm(w0, w1, sel), nuz);
                    const uint32_t b1 = dmma_fp8x2_to_f16x2(__byte_perm(w2, w3, sel), nuz);
                    attn_mma16816<BF16>(o[4 * G + i], ph, b0, b1);
                    attn_mma16816<BF16>(o[4 * G + i], pl, b0, b1);
                }
            }
        } else {
#pragma unroll
            for (int n2 = 0; n2 < NT / 2; n2++) {
                uint32_t b[4];
                attn_ldsm_x4_trans(attn_smem_addr(Vs + v_off[n2 & 3] + (n2 >> 2) * 128), b);
                attn_mma16816<BF16>(o[2 * n2], ph, b[0], b[1]);
                attn_mma16816<BF16>(o[2 * n2], pl, b[0], b[1]);
                attn_mma16816<BF16>(o[2 * n2 + 1], ph, b[2], b[3]);
                attn_mma16816<BF16>(o[2 * n2 + 1], pl, b[2], b[3]);
            }
        }
    }
    attn_cp_async_wait(0);
    attn_pdl_launch_dependents(); /* every load is done: the reduce may be scheduled */

    /* Row sums over the quad of lanes that shares a row. */
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);

    /* The block's W segments merge here: warps 1..W-1 leave their rows'
     * (max, sum) and accumulators in their own slices (their copies have
     * all landed), and warp 0 folds them into its own with the log-sum-exp
     * rule, then writes the block's one partial (or the output). One
     * partial per W segments: fewer bytes through L2, and where the grid's
     * segments fit one block (batch 32 and 64) no reduce launch: 0.96-0.98x
     * the time at 1k keys and at batch 1-8 on an H100 (bench/RESULTS.md
     * version 18). */
    if (W > 1) {
        constexpr int NS = NT * 4 * 32; /* accumulator floats of a slice */
        if (wid > 0) {
            float *mine = (float *)dmma_sm;
#pragma unroll
            for (int j = 0; j < NT; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    mine[(j * 4 + e) * 32 + lane] = o[j][e];
            mine[NS + lane] = m0;
            mine[NS + 32 + lane] = m1;
            mine[NS + 64 + lane] = l0;
            mine[NS + 96 + lane] = l1;
        }
        __syncthreads();
        if (wid > 0)
            return;
        for (int w = 1; w < W; w++) {
            const float *th = (const float *)(dmma_block_sm + w * plan::SLICE);
            const float bm0 = th[NS + lane], bm1 = th[NS + 32 + lane];
            const float bl0 = th[NS + 64 + lane], bl1 = th[NS + 96 + lane];
            float fa0, fb0, fa1, fb1;
            const float M0 = attn_merge_factors(m0, bm0, fa0, fb0);
            const float M1 = attn_merge_factors(m1, bm1, fa1, fb1);
#pragma unroll
            for (int j = 0; j < NT; j++) {
                o[j][0] = o[j][0] * fa0 + th[(j * 4 + 0) * 32 + lane] * fb0;
                o[j][1] = o[j][1] * fa0 + th[(j * 4 + 1) * 32 + lane] * fb0;
                o[j][2] = o[j][2] * fa1 + th[(j * 4 + 2) * 32 + lane] * fb1;
                o[j][3] = o[j][3] * fa1 + th[(j * 4 + 3) * 32 + lane] * fb1;
            }
            l0 = l0 * fa0 + bl0 * fb0;
            l1 = l1 * fa1 + bl1 * fb1;
            m0 = M0;
            m1 = M1;
        }
    }

    const int token = q0;
    /* Row `half` of the lane (g + 8 half) goes out in column pairs (c, c +
     * 1), put(base + c, value c, value c + 1) with the values times `mul`:
     * o[j][2 half] and o[j][2 half + 1] are columns 8j + 2t and the next;
     * fp8 read directly, 32 (j / 4) + 8t + j % 4 + 4e for o[j][2 half + e]
     * (the P V fragments' column order), so n-tiles j and j + 1 of one e
     * hold a pair. */
    auto row_pairs = [&](int half, int64_t base, float mul, auto put) {
        if constexpr (DIRECT) {
#pragma unroll
            for (int G = 0; G < NT / 4; G++)
#pragma unroll
                for (int c = 0; c < 4; c += 2)
#pragma unroll
                    for (int e = 0; e < 2; e++)
                        put(base + 32 * G + 8 * t + 4 * e + c, o[4 * G + c][2 * half + e] * mul,
                            o[4 * G + c + 1][2 * half + e] * mul);
        } else {
#pragma unroll
            for (int j = 0; j < NT; j++)
                put(base + 8 * j + 2 * t, o[j][2 * half] * mul, o[j][2 * half + 1] * mul);
        }
    };
#pragma unroll
    for (int half = 0; half < 2; half++) {
        const int hg = hsplit * DMMA_TILE + g + 8 * half;
        if (hg >= p.group)
            continue;
        const int head = kvh * p.group + hg;
        const float M = half ? m1 : m0, Ls = half ? l1 : l0;
        if (!p.partials) {
            const float inv = attn_row_inverse(M, Ls, p.sinks, head, p.v_scale);
            const int64_t ob = (int64_t)token * p.out_stride_token + (int64_t)head * p.out_stride_head;
            /* pairs in one store each, the output type chosen once (~700
             * instructions on the step's tail element by element, version 22) */
            attn_store_out_pairs(p, [&](auto put) { row_pairs(half, ob, inv, put); });
        } else {
            const int64_t wi = ((int64_t)blockIdx.z * p.num_tokens + token) * p.hq + head;
            if (t == 0) {
                p.ws_ml[2 * wi] = M;
                p.ws_ml[2 * wi + 1] = Ls;
            }
            if (Ls > 0.f)
                row_pairs(half, wi * D, 1.f, [&](int64_t i, float x, float y) {
                    *(float2 *)(p.ws_acc + i) = make_float2(x, y);
                });
        }
    }
#else
    (void)p;
#endif
}

template <int D, bool BF16Q, bool KV8, bool NUZ>
static hipError_t launch_dmma_t(const attn_kparams *p0, hipStream_t stream)
{
    /* W segments a block (attn_launch_plan_decode_mma_warps): the grid's z
     * counts blocks, and so does the partials' segment count. */
    const int W = attn_launch_plan_decode_mma_warps(D, KV8, p0->nseg, ATTN_SM90_SMEM_PER_BLOCK);
    attn_kparams q = *p0;
    q.nseg = p0->nseg / W;
    q.partials = q.nseg > 1 || q.lse != NULL;
    /* Programmatic launch for the 16-bit cache only: over fp8 the kernel
     * took 1.04-1.13x the time at batch 32-64 launched that way (H100,
     * bench/RESULTS.md version 31; the cause is not located), where the
     * 16-bit kernel gains at batch 1 (0.94-0.99x) and is unchanged above. */
    q.pdl_main = p0->pdl_main && !KV8;
    const attn_kparams *p = &q;
    const int smem = W * dmma_plan<D, KV8>::SLICE;
    hipError_t e = attn_func_opt_in((const void *)attn_decode_mma_kernel<D, BF16Q, KV8, NUZ>, smem,
                                    dmma_carveout_percent());
    if (e != hipSuccess)
        return e;
    /* KV heads vary fastest: the programs of one sequence start together
     * and read the 256-byte rows of neighbouring heads (one contiguous row
     * of hkv x D per key) close in time, which DRAM serves better than
     * scattered rows. */
    dim3 grid(p->hkv * p->head_splits, p->num_seqs, p->nseg);
    e = attn_launch(p->pdl_main, attn_decode_mma_kernel<D, BF16Q, KV8, NUZ>, grid, 32 * W, smem,
                    stream, *p);
    if (e != hipSuccess || !p->partials)
        return e;
    return attn_launch_reduce(p, p->nseg, stream);
}

template <bool BF16Q, bool KV8, bool NUZ = false>
static hipError_t launch_dmma_d(const attn_kparams *p, hipStream_t stream)
{
    return attn_dispatch_head_dim(p->d, [&](auto d) {
        return launch_dmma_t<decltype(d)::value, BF16Q, KV8, NUZ>(p, stream);
    });
}

#endif /* ATTN_PLATFORM_CUDA */

/* Programs of this kernel one multiprocessor holds at once: the shared
 * memory the carveout leaves them (sm_90 configurations 0, 8, 16, 32, 64,
 * 100, 132, 164, 196 and 228 KB; the carveout's share of 228 KB rounded up
 * to one; 1 KB of it reserved per block), at most 32 resident blocks. */
int attn_decode_mma_programs_per_cu(int d, int kv8)
{
    static const int configs_kb[] = {0, 8, 16, 32, 64, 100, 132, 164, 196, 228};
    const int want_kb = (228 * dmma_carveout_percent() + 99) / 100;
    int kb = 228;
    for (int c : configs_kb)
        if (c >= want_kb) {
            kb = c;
            break;
        }
    const int smem = attn_launch_plan_decode_mma_slice(d, kv8);
    const int n = kb * 1024 / (smem + 1024);
    return n < 1 ? 1 : n > 32 ? 32 : n;
}

int attn_decode_mma_target_per_cu(int d, int kv8)
{
    const int t = dmma_target_tuned.load(std::memory_order_relaxed);
    const int cap = attn_decode_mma_programs_per_cu(d, kv8);
    const int want = t > 0 ? t : DMMA_TARGET_PER_CU;
    return want < cap ? want : cap;
}

extern "C" void gpu_attn_tune_decode_mma(int carveout_percent, int target_per_cu)
{
    dmma_carveout_tuned.store(carveout_percent <= 0 ? 0 : carveout_percent > 100 ? 100 : carveout_percent,
                              std::memory_order_relaxed);
    dmma_target_tuned.store(target_per_cu <= 0 ? 0 : target_per_cu > 32 ? 32 : target_per_cu,
                            std::memory_order_relaxed);
}

hipError_t attn_launch_decode_mma(const attn_kparams *p, hipStream_t stream)
{
#if defined(ATTN_PLATFORM_CUDA)
    const bool bf16 = p->q_dtype == ATTN_DTYPE_BF16;
    if (attn_dtype_is_fp8(p->kv_dtype)) {
        /* Both e4m3 formats are read as e4m3fn; an e4m3fnuz code is worth
         * half that reading (exponent bias 8, not 7): the descales absorb
         * it exactly (the kernel fixes the codes the formats read apart). */
        attn_kparams q = *p;
        if (p->kv_dtype == ATTN_DTYPE_FP8_E4M3FNUZ) {
            q.score_scale *= 0.5f;
            q.v_scale *= 0.5f;
        }
        if (p->kv_dtype == ATTN_DTYPE_FP8_E4M3FNUZ)
            return bf16 ? launch_dmma_d<true, true, true>(&q, stream)
                        : launch_dmma_d<false, true, true>(&q, stream);
        return bf16 ? launch_dmma_d<true, true>(&q, stream) : launch_dmma_d<false, true>(&q, stream);
    }
    return bf16 ? launch_dmma_d<true, false>(p, stream) : launch_dmma_d<false, false>(p, stream);
#else
    (void)p;
    (void)stream;
    return hipErrorInvalidValue;
#endif
}
