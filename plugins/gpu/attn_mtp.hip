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
 * shared-memory stages filled by cp.async, two tiles in flight):
 *   warp w owns token tw = w % QW (16 rows = its 16 heads, one m16 tile) and
 *   key group kg = w / QW: with QW = 4 every warp takes all 32 keys of a
 *   tile; with QW = 2 each of a token's two warps takes 16 of them, and
 *   their (max, sum, acc) states are merged at the end.
 *   Q: bf16 -> f16 in shared memory, each row scaled by a power of two that
 *   puts its largest element in [2^14, 2^15) (exact for bf16 inputs, no f16
 *   overflow); the power is folded into the row's score multiplier.
 *   K: fp8 in shared memory (cp.async), converted to f16 pairs by the
 *   hardware (cvt.rn.f16x2.e4m3x2, exact) right before the mma. The head
 *   dimension is permuted consistently for Q and K so that each lane reads 8
 *   contiguous bytes per two mma; each key row is shifted by 0-96 bytes so
 *   that those reads hit every bank once with plain (base + constant)
 *   addresses.
 *   V: fp8, transposed in shared memory to [d][keys] so that a lane's four
 *   B-operand keys are one 32-bit word; the keys of the score tile are
 *   permuted so that they line up with that word.
 *   P: f16 (probabilities in [0, 1]: 11 significant bits).
 *   Partials (max, sum, acc) go to the workspace for every segment, and
 *   attn_reduce_kernel merges them (sinks, v_descale, output dtype there).
 * On AMD the launcher runs the portable generic kernel with 64-row programs
 * instead, which keeps the "one KV read for all tokens" property but uses
 * scalar math. NVIDIA devices below sm_89 (no e4m3 conversion instruction)
 * are refused by gpu_attn_create.
 */
#include <math.h>

#include "gpu_attn_internal.h"

#if defined(ATTN_PLATFORM_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define ATTN_MTP_MMA 1
#endif

#define MTP_D 256
#define MTP_GROUP 16
#define MTP_PAGE 16

#if defined(ATTN_PLATFORM_CUDA)

static __device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void cp_async16(void *dst, const void *src, int src_bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
                 "l"(src), "r"(src_bytes));
}
static __device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N>
static __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

#ifdef ATTN_MTP_MMA
/* Two e4m3 bytes -> two f16 (low byte -> low half), exact. */
static __device__ __forceinline__ uint32_t fp8x2_to_f16x2(uint32_t two)
{
    uint32_t r;
    asm("{\n .reg .b16 t;\n cvt.u16.u32 t, %1;\n cvt.rn.f16x2.e4m3x2 %0, t;\n}\n"
        : "=r"(r)
        : "r"(two));
    return r;
}

static __device__ __forceinline__ void mma16816(float *c, uint32_t a0, uint32_t a1, uint32_t a2,
                                                uint32_t a3, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

static __device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *(uint32_t *)&h;
}
#endif

/* Shared-memory plan of the mma kernel, in bytes. */
template <int QW>
struct mtp_smem {
    static constexpr int TILE = 32;               /* keys per tile */
    static constexpr int KW = 8 * QW;             /* keys of a tile per warp */
    static constexpr int STAGES = 3;              /* raw KV stages: 2 tiles in flight */
    static constexpr int QROW = MTP_D * 2 + 64;   /* f16 Q row, padded (bank spread) */
    static constexpr int Q_BYTES = QW * 16 * QROW;
    static constexpr int KROW = MTP_D + 128;      /* fp8 K row: 256 bytes shifted by 0-96 */
    static constexpr int KRAW = TILE * KROW;      /* one fp8 K tile */
    static constexpr int VRAW = TILE * MTP_D;
    static constexpr int STAGE = KRAW + VRAW;
    static constexpr int VT = MTP_D * TILE;       /* transposed V */
    static constexpr int TOTAL = Q_BYTES + STAGES * STAGE + VT + QW * 16 * 4;
};

template <int QW>
__global__ void __launch_bounds__(128, 2) attn_mtp_kernel(const attn_kparams p)
{
#ifdef ATTN_MTP_MMA
    using L = mtp_smem<QW>;
    constexpr int TILE = L::TILE;
    constexpr int KW = L::KW;
    constexpr int NT = KW / 8;  /* n8 score tiles per warp */
    constexpr int KC = KW / 16; /* k16 chunks of P x V per warp */
    constexpr int STAGES = L::STAGES;
    constexpr int W = TILE / 4; /* 32-bit words per transposed V row */
    extern __shared__ __align__(16) uint8_t mtp_sm[];
    uint8_t *Qh = mtp_sm;
    uint8_t *stage0 = Qh + L::Q_BYTES;
    uint8_t *Vt = stage0 + STAGES * L::STAGE;
    float *rowmul = (float *)(Vt + L::VT);

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int tw = warp % QW, kg = warp / QW;
    const int s = blockIdx.x, kvh = blockIdx.y, seg = blockIdx.z;
    const int q0 = p.cu_seqlens_q[s];
    const int qlen = min(p.cu_seqlens_q[s + 1] - q0, QW);
    if (qlen <= 0)
        return;
    const int K = p.seqused_k[s];
    const int ctx0 = K - qlen;
    const int32_t *bt = p.block_table + (int64_t)s * p.bt_stride;

    /* ---- Q: bf16 -> f16 with a per-row power-of-two scale. Warp w converts
     * rows [w*QW*4, (w+1)*QW*4); each lane one 16-byte chunk of a row. */
    for (int rr = 0; rr < QW * 4; rr++) {
        const int row = warp * QW * 4 + rr; /* row = token*16 + head */
        const int tok = row >> 4, hh = row & 15;
        if (tok >= qlen)
            break;
        const int64_t off = (int64_t)(q0 + tok) * p.q_stride_token +
                            (int64_t)(kvh * MTP_GROUP + hh) * p.q_stride_head + lane * 8;
        float v[8];
        float mx = 0.f;
        if (p.q_dtype == ATTN_DTYPE_BF16 && p.q_vec16) {
            uint4 u = *(const uint4 *)((const uint16_t *)p.q + off);
            uint32_t w4[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
            for (int k = 0; k < 4; k++) {
                v[2 * k] = attn_bf16_to_f32(w4[k] & 0xFFFFu);
                v[2 * k + 1] = attn_bf16_to_f32(w4[k] >> 16);
            }
        } else {
#pragma unroll
            for (int k = 0; k < 8; k++)
                v[k] = attn_load_elem(p.q, off + k, p.q_dtype);
        }
#pragma unroll
        for (int k = 0; k < 8; k++)
            mx = fmaxf(mx, fabsf(v[k]));
        for (int m = 16; m > 0; m >>= 1)
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, m));
        int e = 0;
        if (mx > 0.f && isfinite(mx))
            (void)frexpf(mx, &e);
        const int sh = mx > 0.f && isfinite(mx) ? 15 - e : 0;
        uint32_t h[4];
#pragma unroll
        for (int k = 0; k < 4; k++)
            h[k] = pack_f16x2(ldexpf(v[2 * k], sh), ldexpf(v[2 * k + 1], sh));
        *(uint4 *)(Qh + row * L::QROW + lane * 16) = make_uint4(h[0], h[1], h[2], h[3]);
        if (lane == 0) {
            const float base = p.softcap > 0.f ? p.score_scale : p.score_scale * ATTN_LOG2E;
            rowmul[row] = ldexpf(base, -sh);
        }
    }

    /* ---- This segment's keys: the reference split of [0, K) into nseg
     * slices of whole 32-key blocks, clipped to what any row can see. */
    const int blocks32 = (K + 31) / 32;
    const int per = (blocks32 + p.nseg - 1) / p.nseg * 32;
    int kstart = seg * per, kend = min(K, kstart + per);
    if (p.window_left >= 0)
        kstart = max(kstart, (ctx0 - p.window_left) / 32 * 32);
    if (p.window_right >= 0 && !p.causal)
        kend = min(kend, ctx0 + qlen - 1 + p.window_right + 1);
    const int ntiles = kend > kstart ? (kend - kstart + TILE - 1) / TILE : 0;

    /* ---- Tile loader: K and V raw (fp8) by cp.async, 16 bytes a chunk,
     * zero-filled past kend. Swizzles: K chunk c of key k at c ^ fK(k) (the
     * mma reads of 8 rows x 4 lanes hit 32 banks); V chunk c at c ^ ((k>>2)&7)
     * (the transposing 16-byte reads of 8 key quads hit 32 banks). */
    /* The two block-table entries of a tile (16 keys each, page 16), fetched
     * one tile ahead of the copies that use them (see the generic kernel). */
    auto fetch_bt = [&](int it, int &b0, int &b1) {
        if (it >= ntiles)
            return;
        const int kb = kstart + it * TILE;
        b0 = kb < kend ? bt[kb / MTP_PAGE] : 0;
        b1 = kb + 16 < kend ? bt[kb / MTP_PAGE + 1] : 0;
    };
    auto load_tile = [&](int it, int st, int b0, int b1) {
        uint8_t *Ks = stage0 + st * L::STAGE;
        uint8_t *Vs = Ks + L::KRAW;
        const int kb = kstart + it * TILE;
#pragma unroll
        for (int i = 0; i < TILE * 16 / 128; i++) {
            const int idx = tid + 128 * i;
            const int kl = idx >> 4, c = idx & 15;
            const int key = kb + kl;
            const bool ok = key < kend;
            const uint8_t *srck = (const uint8_t *)p.k_cache, *srcv = (const uint8_t *)p.v_cache;
            if (ok) {
                const int64_t blk = kl < 16 ? b0 : b1;
                const int64_t row = ((blk * MTP_PAGE + key % MTP_PAGE) * p.hkv + kvh) * MTP_D + c * 16;
                srck += row;
                srcv += row;
            }
            /* Key kl's row starts 32 x kshift(kl) bytes into its slot, so
             * that the 4 keys one mma phase reads (kl, kl+1, kl+4, kl+5)
             * fall in 4 different 32-byte bank groups at any one d. */
            const int kshift = (kl & 1) + 2 * ((kl >> 2) & 1);
            cp_async16(Ks + kl * L::KROW + 32 * kshift + c * 16, srck, ok ? 16 : 0);
            cp_async16(Vs + kl * MTP_D + ((c ^ ((kl >> 2) & 7)) * 16), srcv, ok ? 16 : 0);
        }
    };

    float o[32][4];
#pragma unroll
    for (int i = 0; i < 32; i++)
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
    const bool active = tw < qlen;
    const int pos = ctx0 + tw;

    int nb0 = 0, nb1 = 0;
#pragma unroll
    for (int i = 0; i < STAGES - 1; i++) {
        if (i < ntiles) {
            fetch_bt(i, nb0, nb1);
            load_tile(i, i, nb0, nb1);
        }
        cp_async_commit(); /* empty groups keep the counting uniform */
    }
    fetch_bt(STAGES - 1, nb0, nb1);
    __syncthreads(); /* Q and rowmul visible */
    const float rm0 = rowmul[tw * 16 + g], rm1 = rowmul[tw * 16 + g + 8];

    for (int it = 0; it < ntiles; it++) {
        const int st = it % STAGES;
        cp_async_wait<STAGES - 2>();
        __syncthreads(); /* B1: tile `it` landed; tile it-1 and Vt are free */
        if (it + STAGES - 1 < ntiles)
            load_tile(it + STAGES - 1, (it + STAGES - 1) % STAGES, nb0, nb1);
        cp_async_commit();
        fetch_bt(it + STAGES, nb0, nb1); /* used by the next iteration's copies */

        const uint8_t *Ks = stage0 + st * L::STAGE;
        const uint8_t *Vs = Ks + L::KRAW;
        /* Transpose V: unit (a, dq) = keys 4a..4a+3 x d 16dq..16dq+15. The
         * store order is rotated by dq so that the 32 lanes of a store hit
         * 32 banks. */
#pragma unroll
        for (int i = 0; i < W * 16 / 128; i++) {
            const int u = tid + 128 * i;
            const int a = u % W, dq = u / W;
            uint4 x[4];
#pragma unroll
            for (int r = 0; r < 4; r++)
                x[r] = *(const uint4 *)(Vs + (4 * a + r) * MTP_D + ((dq ^ (a & 7)) * 16));
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const uint32_t c0 = c == 0 ? x[0].x : c == 1 ? x[0].y : c == 2 ? x[0].z : x[0].w;
                const uint32_t c1 = c == 0 ? x[1].x : c == 1 ? x[1].y : c == 2 ? x[1].z : x[1].w;
                const uint32_t c2 = c == 0 ? x[2].x : c == 1 ? x[2].y : c == 2 ? x[2].z : x[2].w;
                const uint32_t c3 = c == 0 ? x[3].x : c == 1 ? x[3].y : c == 2 ? x[3].z : x[3].w;
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    const int rb = (k + dq) & 3;
                    const uint32_t sel = (uint32_t)rb | ((uint32_t)(rb + 4) << 4);
                    const uint32_t lo = __byte_perm(c0, c1, sel);
                    const uint32_t hi = __byte_perm(c2, c3, sel);
                    const uint32_t y = __byte_perm(lo, hi, 0x5410);
                    const int d = 16 * dq + 4 * c + rb;
                    const int hv = 4 * ((d / (32 / W)) & (W / 4 - 1));
                    *(uint32_t *)(Vt + d * TILE + 4 * (a ^ hv)) = y;
                }
            }
        }

        /* S = Q K^T for this warp's KW keys (NT n-tiles). Column n of n-tile
         * j is key kg*KW + sigma(j, n), sigma(j, n) = (j/2)*16 + 4(n/2) +
         * 2(j%2) + n%2, which makes the P fragments line up with V words. */
        float sacc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++)
            sacc[j][0] = sacc[j][1] = sacc[j][2] = sacc[j][3] = 0.f;
        const int kb = kstart + it * TILE + kg * KW;
        if (active) {
            /* Every address below is a per-lane base plus a compile-time
             * offset (no swizzle arithmetic in the loop). */
            const uint8_t *qa_row = Qh + (tw * 16 + g) * L::QROW + t * 16;
            const uint8_t *qb_row = qa_row + 8 * L::QROW;
            /* kshift of every key this lane reads is g & 3 (see load_tile). */
            const uint8_t *k_lane = Ks + (kg * KW + 4 * (g >> 1) + (g & 1)) * L::KROW +
                                    32 * (g & 3) + (t >> 1) * 16 + (t & 1) * 8;
#pragma unroll
            for (int pp = 0; pp < 8; pp++) {
                const uint4 qa = *(const uint4 *)(qa_row + pp * 64);
                const uint4 qb = *(const uint4 *)(qb_row + pp * 64);
#pragma unroll
                for (int j = 0; j < NT; j++) {
                    const uint2 kk = *(const uint2 *)(k_lane + ((j >> 1) * 16 + 2 * (j & 1)) * L::KROW +
                                                      pp * 32);
                    mma16816(sacc[j], qa.x, qb.x, qa.y, qb.y, fp8x2_to_f16x2(kk.x & 0xFFFFu),
                             fp8x2_to_f16x2(kk.x >> 16));
                    mma16816(sacc[j], qa.z, qb.z, qa.w, qb.w, fp8x2_to_f16x2(kk.y & 0xFFFFu),
                             fp8x2_to_f16x2(kk.y >> 16));
                }
            }

            /* Scores in log2 units, masks, online softmax (rows g, g+8). */
            const bool full = kb + KW - 1 < kend && (!p.causal || kb + KW - 1 <= pos) &&
                              (p.window_left < 0 || kb >= pos - p.window_left) &&
                              (p.window_right < 0 || kb + KW - 1 <= pos + p.window_right);
            float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
            for (int j = 0; j < NT; j++) {
#pragma unroll
                for (int b = 0; b < 2; b++) {
                    float s0 = sacc[j][b] * rm0, s1 = sacc[j][2 + b] * rm1;
                    if (p.softcap > 0.f) {
                        s0 = p.softcap * tanhf(s0 / p.softcap) * ATTN_LOG2E;
                        s1 = p.softcap * tanhf(s1 / p.softcap) * ATTN_LOG2E;
                    }
                    if (!full) {
                        const int key = kb + (j >> 1) * 16 + 4 * t + 2 * (j & 1) + b;
                        if (key >= kend || !attn_visible(p, key, pos)) {
                            s0 = -INFINITY;
                            s1 = -INFINITY;
                        }
                    }
                    sacc[j][b] = s0;
                    sacc[j][2 + b] = s1;
                    mx0 = fmaxf(mx0, s0);
                    mx1 = fmaxf(mx1, s1);
                }
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
            float ps0 = 0.f, ps1 = 0.f;
#pragma unroll
            for (int j = 0; j < NT; j++) {
                sacc[j][0] = exp2f(sacc[j][0] - mu0);
                sacc[j][1] = exp2f(sacc[j][1] - mu0);
                sacc[j][2] = exp2f(sacc[j][2] - mu1);
                sacc[j][3] = exp2f(sacc[j][3] - mu1);
                ps0 += sacc[j][0] + sacc[j][1];
                ps1 += sacc[j][2] + sacc[j][3];
            }
            l0 = l0 * al0 + ps0;
            l1 = l1 * al1 + ps1;
            /* Rescale the accumulator only when some row's maximum moved
             * (after the first tiles it rarely does): 128 multiplies saved
             * per tile otherwise. */
            if (__any_sync(0xffffffffu, al0 != 1.f || al1 != 1.f)) {
#pragma unroll
                for (int i = 0; i < 32; i++) {
                    o[i][0] *= al0;
                    o[i][1] *= al0;
                    o[i][2] *= al1;
                    o[i][3] *= al1;
                }
            }
        }
        __syncthreads(); /* B2: Vt complete */

        if (active) {
#pragma unroll
            for (int kc = 0; kc < KC; kc++) {
                const uint32_t a0 = pack_f16x2(sacc[2 * kc][0], sacc[2 * kc][1]);
                const uint32_t a1 = pack_f16x2(sacc[2 * kc][2], sacc[2 * kc][3]);
                const uint32_t a2 = pack_f16x2(sacc[2 * kc + 1][0], sacc[2 * kc + 1][1]);
                const uint32_t a3 = pack_f16x2(sacc[2 * kc + 1][2], sacc[2 * kc + 1][3]);
                const int wv = kg * (KW / 4) + kc * 4 + t;
#pragma unroll
                for (int dt = 0; dt < 32; dt++) {
                    const int d = 8 * dt + g;
                    const int hv = 4 * ((d / (32 / W)) & (W / 4 - 1));
                    const uint32_t vw = *(const uint32_t *)(Vt + d * TILE + 4 * (wv ^ hv));
                    mma16816(o[dt], a0, a1, a2, a3, fp8x2_to_f16x2(vw & 0xFFFFu),
                             fp8x2_to_f16x2(vw >> 16));
                }
            }
        }
    }
    cp_async_wait<0>();

    /* Row sums over the 4 lanes of a row. */
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);

    if (QW == 2) {
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
            const float M0 = fmaxf(m0, bm0), M1 = fmaxf(m1, bm1);
            const float u0 = M0 == -INFINITY ? 0.f : M0, u1 = M1 == -INFINITY ? 0.f : M1;
            const float fa0 = exp2f(m0 - u0), fb0 = exp2f(bm0 - u0);
            const float fa1 = exp2f(m1 - u1), fb1 = exp2f(bm1 - u1);
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
        const int64_t i0 = ((int64_t)seg * p.num_tokens + token) * p.hq + kvh * MTP_GROUP + g;
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

template <int QW>
static hipError_t launch_mtp_t(const attn_kparams *p, int nseg, hipStream_t stream)
{
    const int smem = mtp_smem<QW>::TOTAL;
    /* Opt in to more than 48 KB of shared memory once (see the generic
     * launcher for why once). */
    static volatile int opted_in = 0;
    if (!opted_in) {
        hipError_t e = hipFuncSetAttribute((const void *)attn_mtp_kernel<QW>,
                                           hipFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != hipSuccess)
            return e;
        opted_in = 1;
    }
    dim3 grid(p->num_seqs, p->hkv, nseg);
    attn_mtp_kernel<QW><<<grid, 128, smem, stream>>>(*p);
    return hipGetLastError();
}

#endif /* ATTN_PLATFORM_CUDA */

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
#if defined(ATTN_PLATFORM_CUDA)
    if (max_seqlen_q <= 2)
        e = launch_mtp_t<2>(&q, nseg, stream);
    else
        e = launch_mtp_t<4>(&q, nseg, stream);
    if (e != hipSuccess)
        return e;
    return attn_launch_reduce(&q, nseg, stream);
#else
    /* Portable path: the generic kernel with 64-row programs (all 4 tokens x
     * 16 heads of a sequence share each KV tile). */
    q.block_q = 4;
    q.heads_per_tile = MTP_GROUP;
    q.head_splits = 1;
    (void)max_seqlen_q;
    e = attn_launch_generic(&q, 4, stream, 16);
    return e;
#endif
}
