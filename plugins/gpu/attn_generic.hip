/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_generic.hip — the aiter-generic kernels: paged unified attention for
 * any GQA/MQA ratio, head sizes up to 256, bf16/f16/f32/fp8 inputs, causal
 * and sliding-window masks, softcap, sinks, varlen batches, strided q/out,
 * and FP8 compute (Q quantised to e4m3 per cpu-ref's rule).
 *
 * Portable scalar code (FMA, no matrix instructions) written for logical
 * 32-lane groups, so the one source runs on NVIDIA warps and on AMD 64-lane
 * wavefronts (two logical groups each).
 *
 * One program (block of 128 threads = 4 logical warps) owns BLOCK_M =
 * 4 x ROWS rows of one KV head: BLOCK_Q query tokens x heads_per_tile query
 * heads that share the KV head (heads_per_tile = min(group, BLOCK_M)), and
 * streams that KV head's keys in tiles of 32 with an online softmax. Warp w
 * owns rows w, w+4, w+8, ... so that a tile with few valid rows (decode with
 * a small group) still spreads them over all warps.
 *   2D path (nseg == 1): the program walks its whole key range and writes the
 *     normalised output.
 *   3D path (nseg > 1): blockIdx.z picks one of nseg equal slices of the key
 *     range; the program writes (max, sum, unnormalised acc) to the workspace
 *     and attn_reduce_kernel merges the slices with the log-sum-exp rule.
 * Scores are kept in log2 units (exp2 is the native instruction).
 */
#include <math.h>

#include "attn_launch_plan.h"
#include "gpu_attn_internal.h"

/* Tile and program sizes: the plan table's (attn_launch_plan.h). */
#define GEN_TILE ATTN_GEN_TILE
#define GEN_WARPS ATTN_GEN_WARPS

static __device__ __forceinline__ float warp_max32(float v)
{
    for (int m = 16; m > 0; m >>= 1)
        v = fmaxf(v, attn_shfl_xor32(v, m));
    return v;
}
static __device__ __forceinline__ float warp_sum32(float v)
{
    for (int m = 16; m > 0; m >>= 1)
        v += attn_shfl_xor32(v, m);
    return v;
}

/* Load 8 consecutive elements (16 bytes for 16-bit types, 8 for fp8, 32 for
 * f32) starting at element index i and convert them to float. */
static __device__ __forceinline__ void load8(const void *base, int64_t i, int dtype, float *o)
{
    if (dtype == ATTN_DTYPE_BF16 || dtype == ATTN_DTYPE_F16) {
        uint4 u = *(const uint4 *)((const uint16_t *)base + i);
        uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            if (dtype == ATTN_DTYPE_BF16) {
                o[2 * k] = attn_bf16_to_f32(w[k] & 0xFFFFu);
                o[2 * k + 1] = attn_bf16_to_f32(w[k] >> 16);
            } else {
                o[2 * k] = attn_f16_to_f32(w[k] & 0xFFFFu);
                o[2 * k + 1] = attn_f16_to_f32(w[k] >> 16);
            }
        }
    } else if (dtype == ATTN_DTYPE_FP8_E4M3FN || dtype == ATTN_DTYPE_FP8_E4M3FNUZ) {
        uint2 u = *(const uint2 *)((const uint8_t *)base + i);
        int nuz = dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            o[k] = attn_fp8_to_f32((u.x >> (8 * k)) & 0xFFu, nuz);
            o[4 + k] = attn_fp8_to_f32((u.y >> (8 * k)) & 0xFFu, nuz);
        }
    } else {
        const float4 *f = (const float4 *)((const float *)base + i);
        float4 a = f[0], b = f[1];
        o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w;
        o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
    }
}

/* RAWKV: K and V are read from the raw stages and converted at each use,
 * instead of converted once into float tiles: 2-4x less shared memory (the
 * plan takes it where the float tiles do not fit: gfx942 at D 192 and 256),
 * each element converted once per warp instead of once. Raw rows are padded
 * by 16 bytes so the lanes' 16-byte reads of K rows (lane = key) spread over
 * the banks. */
template <int ROWS, int D, int KVB, bool RAWKV>
__global__ void __launch_bounds__(GEN_WARPS * 32)
    attn_generic_kernel(const attn_kparams p)
{
    extern __shared__ float gen_smem[];
    constexpr int BM = GEN_WARPS * ROWS;
    constexpr int DCH = (D + 31) / 32; /* output columns per lane */
    constexpr int dkp = D + 4; /* padded rows: float4 reads by 8 lanes hit 32 banks */
    constexpr int dvp = D + 4;
    float *Qs = gen_smem;              /* [BM][dkp] q x score multiplier */
    float *Ks = Qs + BM * dkp;         /* [TILE][dkp] */
    float *Vs = Ks + GEN_TILE * dkp;   /* [TILE][dvp] */

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int tile = blockIdx.x;
    const int kvh = blockIdx.y / p.head_splits;
    const int hsplit = blockIdx.y % p.head_splits;
    const int seg = blockIdx.z;

    const int s = attn_find_tile_seq(p.cu_seqlens_q, p.num_seqs, p.block_q, tile);
    const int q0 = p.cu_seqlens_q[s];
    const int qlen = p.cu_seqlens_q[s + 1] - q0;
    const int t0 = (tile - (q0 / p.block_q + s)) * p.block_q;
    if (t0 >= qlen)
        return; /* a spare tile of the bound: uniform over the block */
    const int K = p.seqused_k[s];
    const int ctx0 = K - qlen; /* position of the sequence's first query token */
    const int hpt = p.heads_per_tile;
    const int ntok = min(p.block_q, qlen - t0);
    const int32_t *bt = p.block_table + (int64_t)s * p.bt_stride;

    /* Rows of this warp: r = i * 4 + warp. */
    int row_tok[ROWS], row_head[ROWS];
    bool row_ok[ROWS];
#pragma unroll
    for (int i = 0; i < ROWS; i++) {
        int r = i * GEN_WARPS + warp;
        int ti = r / hpt, hh = r % hpt;
        int hg = hsplit * hpt + hh;
        row_tok[i] = t0 + ti;
        row_head[i] = kvh * p.group + hg;
        row_ok[i] = ti < ntok && hg < p.group;
    }

    /* Q, converted once: times the score multiplier (log2 units unless a
     * softcap needs natural units first). FP8 compute quantises Q exactly as
     * cpu-ref does: e4m3(q / q_descale), with q_descale folded into the scale. */
    const float qmul = p.softcap > 0.f ? p.score_scale : p.score_scale * ATTN_LOG2E;
    for (int idx = tid; idx < BM * D; idx += blockDim.x) {
        int r = idx / D, dd = idx % D;
        int ti = r / hpt, hh = r % hpt, hg = hsplit * hpt + hh;
        float v = 0.f;
        if (ti < ntok && hg < p.group) {
            int64_t off = (int64_t)(q0 + t0 + ti) * p.q_stride_token +
                          (int64_t)(kvh * p.group + hg) * p.q_stride_head + dd;
            v = attn_load_elem(p.q, off, p.q_dtype);
            if (p.q_quant) {
                int nuz = p.q_quant == ATTN_DTYPE_FP8_E4M3FNUZ;
                v = attn_fp8_to_f32(attn_f32_to_fp8(v / p.q_descale, nuz), nuz);
            }
            v *= qmul;
        }
        Qs[r * dkp + dd] = v;
    }

    /* The keys any row of this program may see, then this segment's slice of
     * them in whole tiles. */
    int klo, khi;
    attn_visible_keys(p, K, ctx0 + t0, ctx0 + t0 + ntok - 1, klo, khi);
    int tlo = klo / GEN_TILE, thi = khi > klo ? (khi + GEN_TILE - 1) / GEN_TILE : tlo;
    int per = (thi - tlo + p.nseg - 1) / p.nseg;
    int my_lo = tlo + seg * per, my_hi = min(thi, my_lo + per);

    float m[ROWS], l[ROWS], acc[ROWS][DCH];
#pragma unroll
    for (int i = 0; i < ROWS; i++) {
        m[i] = -INFINITY;
        l[i] = 0.f;
#pragma unroll
        for (int c = 0; c < DCH; c++)
            acc[i][c] = 0.f;
    }

    /* KV tiles travel raw (as stored) into `stages` shared-memory stages by
     * asynchronous copies, stages - 1 tiles ahead of the one being used; each
     * tile is then converted once to float for the math. */
    constexpr int kvb = KVB;
    constexpr int kc16 = D * KVB / 16, vc16 = D * KVB / 16;
    constexpr int rowbytes = 2 * D * KVB + (RAWKV ? ATTN_GEN_RAW_PAD : 0);
    const int stages = p.stages;
    uint8_t *raw = RAWKV ? (uint8_t *)(Qs + BM * dkp) : (uint8_t *)(Vs + GEN_TILE * dvp);
    /* Block-table entries: with pages of a multiple of 16 keys, the two
     * 16-key halves of a 32-key tile each lie in one page, so a tile needs two
     * entries. They are fetched one tile ahead of the copies that use them:
     * a dependent global load in the copy loop would otherwise stall every
     * tile for a full memory latency. Other page sizes look up each key. */
    const bool two_pages = p.page % 16 == 0;
    auto fetch_bt = [&](int kt, int &b0, int &b1) {
        if (!two_pages || kt >= my_hi)
            return;
        const int kb = kt * GEN_TILE;
        b0 = (kb < khi && kb + 16 > klo) ? bt[kb / p.page] : 0;
        b1 = (kb + 16 < khi && kb + 32 > klo) ? bt[(kb + 16) / p.page] : 0;
    };
    auto issue = [&](int kt, int st, int b0, int b1) {
        uint8_t *dst = raw + (size_t)st * GEN_TILE * rowbytes;
        const int kb = kt * GEN_TILE;
        const int kbmod0 = kb % p.page, kbmod1 = (kb + 16) % p.page;
        constexpr int NCH = kc16 + vc16, TOTAL = GEN_TILE * NCH;
#pragma unroll
        for (int r = 0; r < (TOTAL + 127) / 128; r++) {
            const int idx = tid + 128 * r;
            if (TOTAL % 128 != 0 && idx >= TOTAL)
                break;
            const int j = idx / NCH, c = idx % NCH;
            const int key = kb + j;
            const bool ok = key < khi && key >= klo;
            const uint8_t *src = (const uint8_t *)p.k_cache;
            if (ok) {
                int64_t blk;
                int off;
                if (two_pages) {
                    /* Each 16-key half of the tile lies in one page (b0, b1),
                     * at (first key of the half) % page. (Not kb % page + j:
                     * with a page of 48 the second half starts a new page.) */
                    blk = j < 16 ? b0 : b1;
                    off = (j < 16 ? kbmod0 : kbmod1) + (j & 15);
                } else {
                    blk = bt[key / p.page];
                    off = key % p.page;
                }
                const int64_t row =
                    blk * p.kv_stride_block + off * p.kv_stride_token + kvh * p.kv_stride_head;
                src = c < kc16 ? (const uint8_t *)p.k_cache + (row + c * 16)
                               : (const uint8_t *)p.v_cache + (row + (c - kc16) * 16);
            }
            attn_cp_async16(dst + j * rowbytes + c * 16, src, ok);
        }
    };
    int nb0 = 0, nb1 = 0;
    for (int i = 0; i < stages - 1; i++) {
        if (my_lo + i < my_hi) {
            fetch_bt(my_lo + i, nb0, nb1);
            issue(my_lo + i, i, nb0, nb1);
        }
        attn_cp_async_commit(); /* empty groups keep the counting uniform */
    }
    fetch_bt(my_lo + stages - 1, nb0, nb1);

    constexpr int ch8 = 2 * D / 8;
    for (int kt = my_lo; kt < my_hi; kt++) {
        const int kb = kt * GEN_TILE;
        const int st = (kt - my_lo) % stages;
        attn_cp_async_wait(stages - 2);
        __syncthreads(); /* tile kt landed; the previous tile's readers are done */
        if (kt + stages - 1 < my_hi)
            issue(kt + stages - 1, (kt - my_lo + stages - 1) % stages, nb0, nb1);
        attn_cp_async_commit();
        if (stages == 1) {
            /* One stage (where the LDS holds no second one: gfx942 at head
             * size 128, the 64-row programs on gfx950): the tile just issued
             * is this iteration's; wait for it and publish it. */
            attn_cp_async_wait(0);
            __syncthreads();
        }
        fetch_bt(kt + stages, nb0, nb1); /* used by the next iteration's copies */
        const uint8_t *src = raw + (size_t)st * GEN_TILE * rowbytes;
#pragma unroll
        for (int r = 0; r < (RAWKV ? 0 : (GEN_TILE * ch8 + 127) / 128); r++) {
            const int idx = tid + 128 * r;
            if ((GEN_TILE * ch8) % 128 != 0 && idx >= GEN_TILE * ch8)
                break;
            const int j = idx / ch8, e = (idx % ch8) * 8;
            float v8[8];
            /* Zero bytes for keys outside the range (zero-filled copies):
             * their probability is 0, and 0 x finite stays 0. */
            load8(src + j * rowbytes + e * kvb, 0, p.kv_dtype, v8);
            float *dst = e < D ? Ks + j * dkp + e : Vs + j * dvp + (e - D);
            ((float4 *)dst)[0] = make_float4(v8[0], v8[1], v8[2], v8[3]);
            ((float4 *)dst)[1] = make_float4(v8[4], v8[5], v8[6], v8[7]);
        }
        if (!RAWKV) /* the raw stage was published above */
            __syncthreads();

        /* Scores: lane = key. */
        const int key = kb + lane;
        float pr[ROWS];
#pragma unroll
        for (int i = 0; i < ROWS; i++) {
            pr[i] = 0.f;
            if (!row_ok[i]) /* uniform over the warp */
                continue;
            const float4 *qr = (const float4 *)(Qs + (i * GEN_WARPS + warp) * dkp);
            const float4 *kr = (const float4 *)(Ks + lane * dkp);
            float a0 = 0.f, a1 = 0.f;
            if constexpr (RAWKV) {
                /* the same sums in the same order as the float tiles give */
                const uint8_t *krow = src + lane * rowbytes;
                for (int d8 = 0; d8 < D / 8; d8++) {
                    float k8[8];
                    load8(krow, (int64_t)d8 * 8, p.kv_dtype, k8);
                    const float4 x = qr[2 * d8], y = qr[2 * d8 + 1];
                    a0 = fmaf(x.x, k8[0], a0);
                    a0 = fmaf(x.y, k8[1], a0);
                    a0 = fmaf(x.z, k8[2], a0);
                    a0 = fmaf(x.w, k8[3], a0);
                    a1 = fmaf(y.x, k8[4], a1);
                    a1 = fmaf(y.y, k8[5], a1);
                    a1 = fmaf(y.z, k8[6], a1);
                    a1 = fmaf(y.w, k8[7], a1);
                }
            }
            for (int d4 = 0; d4 < (RAWKV ? 0 : D / 4); d4 += 2) {
                float4 x = qr[d4], y = kr[d4];
                a0 = fmaf(x.x, y.x, a0);
                a0 = fmaf(x.y, y.y, a0);
                a0 = fmaf(x.z, y.z, a0);
                a0 = fmaf(x.w, y.w, a0);
                x = qr[d4 + 1];
                y = kr[d4 + 1];
                a1 = fmaf(x.x, y.x, a1);
                a1 = fmaf(x.y, y.y, a1);
                a1 = fmaf(x.z, y.z, a1);
                a1 = fmaf(x.w, y.w, a1);
            }
            float sc = a0 + a1;
            if (p.softcap > 0.f)
                sc = p.softcap * tanhf(sc / p.softcap) * ATTN_LOG2E;
            int pos = ctx0 + row_tok[i];
            if (key >= khi || key < klo || !attn_visible(p, key, pos))
                sc = -INFINITY;
            float mt = warp_max32(sc);
            float mn = fmaxf(m[i], mt);
            float mu = mn == -INFINITY ? 0.f : mn; /* all masked so far: no NaN */
            float alpha = exp2f(m[i] - mu);
            pr[i] = exp2f(sc - mu);
            l[i] = l[i] * alpha + pr[i];
            m[i] = mn;
#pragma unroll
            for (int c = 0; c < DCH; c++)
                acc[i][c] *= alpha;
        }

        /* P x V: lane = output column. */
        for (int j = 0; j < GEN_TILE; j++) {
            float vv[DCH];
#pragma unroll
            for (int c = 0; c < DCH; c++) {
                int dd = lane + 32 * c;
                if constexpr (RAWKV)
                    vv[c] = dd < D ? attn_load_elem(src + j * rowbytes + D * kvb, dd, p.kv_dtype)
                                   : 0.f;
                else
                    vv[c] = dd < D ? Vs[j * dvp + dd] : 0.f;
            }
#pragma unroll
            for (int i = 0; i < ROWS; i++) {
                if (!row_ok[i])
                    continue;
                float pj = attn_shfl32(pr[i], j);
#pragma unroll
                for (int c = 0; c < DCH; c++)
                    acc[i][c] = fmaf(pj, vv[c], acc[i][c]);
            }
        }
    }

    /* Epilogue. */
#pragma unroll
    for (int i = 0; i < ROWS; i++) {
        if (!row_ok[i])
            continue;
        float lsum = warp_sum32(l[i]);
        int token = q0 + row_tok[i], head = row_head[i];
        if (!p.partials) {
            const float inv = attn_row_inverse(m[i], lsum, p.sinks, head, p.v_scale);
            int64_t ob = (int64_t)token * p.out_stride_token + (int64_t)head * p.out_stride_head;
#pragma unroll
            for (int c = 0; c < DCH; c++) {
                int dd = lane + 32 * c;
                if (dd < D)
                    attn_store_elem(p.out, ob + dd, p.out_dtype, acc[i][c] * inv);
            }
        } else {
            int64_t idx = ((int64_t)seg * p.num_tokens + token) * p.hq + head;
            if (lane == 0) {
                p.ws_ml[2 * idx] = m[i];
                p.ws_ml[2 * idx + 1] = lsum;
            }
            if (lsum > 0.f) {
#pragma unroll
                for (int c = 0; c < DCH; c++) {
                    int dd = lane + 32 * c;
                    if (dd < D)
                        p.ws_acc[idx * D + dd] = acc[i][c];
                }
            }
        }
    }
}

/* Merge nseg partials of each (token, head) with the log-sum-exp rule, add
 * the sink to the denominator, scale by v_descale and store. A segment that
 * saw no key has sum 0 and weight 0 (its acc was never written: it is
 * loaded like the others but never enters a sum).
 * Why it is laid out so: the kernel is a few memory round trips long, so
 * what counts is how many loads each thread has in flight. Thread t owns
 * VEC consecutive output columns (16-byte loads where the workspace allows)
 * and one of THREADS / (dv / VEC) segment groups (every ng-th segment
 * from its group index), keeps RED_BATCH of its segments' loads in flight,
 * and issues the first batch before the weights exist; the first warp reads
 * every segment's (max, sum) at once meanwhile and leaves one weight per
 * segment in shared memory; the groups' sums meet in shared memory at the
 * end. (Version 13 gave each thread one column and every segment in turn,
 * 8 loads in flight: 26 us for the 64 segments of a batch-1 decode at 16k
 * keys, 17 us for a batch-32 MTP verify: as long as the attention kernel.)
 * Large batches make many small blocks (tokens x heads, a few segments
 * each), where what bounds the kernel is how many blocks a multiprocessor
 * holds: the blocks are kept to 64 registers a thread (1024 resident
 * threads), no per-thread arrays but the loads in flight. */
#define RED_MAX_SEG ATTN_REDUCE_MAX_SEGMENTS
/* Block sizes (attn_launch_plan.h): RED_THREADS_MANY where segments are
 * many (a batch-1 step, whose few blocks each have many loads to keep in
 * flight), else RED_THREADS (many blocks of few segments each). */
#define RED_THREADS ATTN_REDUCE_THREADS
#define RED_THREADS_MANY ATTN_REDUCE_THREADS_MANY
#define RED_MANY_SEGMENTS ATTN_REDUCE_MANY_SEGMENTS
/* loads in flight per thread: 4 of 16 bytes or 8 of 4 */
#define RED_BATCH (VEC == 4 ? 4 : 8)
template <int VEC>
static __device__ __forceinline__ float4 red_load(const float *ws, int64_t i)
{
    if constexpr (VEC == 4)
        return *(const float4 *)(ws + i);
    else
        return make_float4(ws[i], 0.f, 0.f, 0.f);
}

template <int VEC, int THREADS>
__global__ void __launch_bounds__(THREADS, 1024 / THREADS) attn_reduce_kernel(const attn_kparams p,
                                                                             int nseg)
{
    /* static LDS as attn_launch_plan_reduce_bytes counts it */
    __shared__ float4 part[THREADS];
    __shared__ float ml[ATTN_REDUCE_ML_FLOATS];
    float *const weight = ml, *const wsum = ml + RED_MAX_SEG;
    float &scale = ml[2 * RED_MAX_SEG];
    /* ATTN_PART_SINGLE: the decode part of a mixed batch, one block per
     * sequence (its one token), prefill chunks skipped. */
    int token = blockIdx.x;
    const int head = blockIdx.y;
    if (p.batch_part == ATTN_PART_SINGLE) {
        token = p.cu_seqlens_q[blockIdx.x];
        if (p.cu_seqlens_q[blockIdx.x + 1] - token != 1)
            return;
    }
    const int64_t stride = (int64_t)p.num_tokens * p.hq;
    const int64_t base = (int64_t)token * p.hq + head;
    nseg = min(nseg, RED_MAX_SEG);
    attn_pdl_wait(); /* launched with p.pdl: the partials are written */

    /* Column groups of VEC: nq of them, taken nqb at a time by the block;
     * ng segment groups share each (ng = 1 when the columns need every
     * thread, the block then walks them in passes). */
    const int nq = p.dv / VEC;
    const int nqb = min(nq, THREADS);
    const int ng = THREADS / nqb;
    const int grp = threadIdx.x / nqb, cq = threadIdx.x % nqb;
    const bool live = grp < ng;
    const int per = (nseg + ng - 1) / ng; /* segments of each group */
    float4 x[RED_BATCH];
    auto load_batch = [&](int col, int b) {
#pragma unroll
        for (int k = 0; k < RED_BATCH; k++) {
            const int sg = grp + ng * (k + RED_BATCH * b);
            x[k] = live && sg < nseg ? red_load<VEC>(p.ws_acc, (base + sg * stride) * p.dv + col)
                                     : make_float4(0.f, 0.f, 0.f, 0.f);
        }
    };
    load_batch(cq * VEC, 0); /* in flight while the weights are worked out */

    if (threadIdx.x < 32) {
        /* The (max, sum) pairs go to shared memory as they come (loads
         * independent of each other, so all of them are in flight at once),
         * the lanes meet on the maximum, and each lane turns its own
         * entries into weights (no per-lane arrays: registers decide how
         * many of these small blocks a multiprocessor holds). */
        const int lane = threadIdx.x;
        float lm = -INFINITY;
#pragma unroll
        for (int k = 0; k < RED_MAX_SEG / 32; k++) {
            const int sg = lane + 32 * k;
            if (sg < nseg) {
                const float m = p.ws_ml[2 * (base + sg * stride)];
                const float l = p.ws_ml[2 * (base + sg * stride) + 1];
                weight[sg] = l > 0.f ? m : -INFINITY; /* a segment without keys weighs 0 */
                wsum[sg] = l;
                lm = l > 0.f ? fmaxf(lm, m) : lm;
            }
        }
        const float mx = warp_max32(lm);
        const float sk = p.sinks ? p.sinks[head] * ATTN_LOG2E : -INFINITY;
        const float M = fmaxf(mx, sk);
        const float mu = M == -INFINITY ? 0.f : M;
        float partsum = 0.f;
        for (int sg = lane; sg < nseg; sg += 32) {
            const float w = weight[sg] == -INFINITY ? 0.f : exp2f(weight[sg] - mu);
            weight[sg] = w;
            partsum += wsum[sg] * w;
        }
        const float denom = warp_sum32(partsum) + (p.sinks ? exp2f(sk - mu) : 0.f);
        if (lane == 0) {
            scale = denom > 0.f ? p.v_scale / denom : 0.f;
            /* ln of the row's denominator in the scores' own units (the
             * partials' max is in log2 units of the scaled score) */
            if (p.lse)
                p.lse[(int64_t)token * p.lse_stride_token + (int64_t)head * p.lse_stride_head] =
                    denom > 0.f ? (mu + log2f(denom)) * ATTN_LN2 : -INFINITY;
        }
    }
    __syncthreads();
    const float inv = scale;
    const int64_t ob = (int64_t)(token)*p.out_stride_token + (int64_t)head * p.out_stride_head;
    for (int c0 = 0; c0 < nq; c0 += nqb) {
        const int col = (c0 + cq) * VEC;
        const bool mine = live && c0 + cq < nq;
        float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int b = 0; b * RED_BATCH < per; b++) {
            if (b > 0 || c0 > 0)
                load_batch(mine ? col : 0, b);
#pragma unroll
            for (int k = 0; k < RED_BATCH; k++) {
                const int sg = grp + ng * (k + RED_BATCH * b);
                const float w = live && sg < nseg ? weight[sg] : 0.f;
                if (w != 0.f) { /* a segment without keys left its acc unwritten */
                    a.x += x[k].x * w;
                    a.y += x[k].y * w;
                    a.z += x[k].z * w;
                    a.w += x[k].w * w;
                }
            }
        }
        if (ng > 1) { /* the segment groups' sums meet (one pass: nq <= THREADS) */
            part[threadIdx.x] = a;
            __syncthreads();
            if (grp != 0)
                return;
            for (int g2 = 1; g2 < ng; g2++) {
                const float4 o = part[g2 * nqb + cq];
                a.x += o.x;
                a.y += o.y;
                a.z += o.z;
                a.w += o.w;
            }
        }
        if (mine) {
            const float v[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
            for (int e = 0; e < VEC; e++)
                attn_store_elem(p.out, ob + col + e, p.out_dtype, v[e] * inv);
        }
    }
}

/* The reduce for few segments (nseg <= ATTN_REDUCE_ROWS_MAX_SEGMENTS):
 * thread t owns column quad t % (dv / 4) of row t / (dv / 4) of the block's
 * rows (a row = one (token, head)), issues the 16-byte loads of every
 * segment's acc and (max, sum) at once, works out the weights itself (the
 * row's threads read the same pairs: one L1 line) and stores. A step is
 * then one memory round trip a thread, in blocks of several rows. The
 * per-row kernel above gives each (token, head) its own block: at batch 64
 * of the MTP shape (4096 rows of 4 segments) that is 4096 blocks of a round
 * trip each, 13 us for 17 MB (version 14's profile), where this form has
 * 1024 blocks and the same bytes. */
#define RED_ROWS_MAX ATTN_REDUCE_ROWS_MAX_SEGMENTS
__global__ void __launch_bounds__(ATTN_REDUCE_ROWS_THREADS)
    attn_reduce_rows_kernel(const attn_kparams p, int nseg)
{
    const int nq = p.dv / 4;
    const int rows = attn_launch_plan_reduce_rows_per_block(p.dv);
    const int rb = threadIdx.x / nq, cq = threadIdx.x % nq;
    const int nidx = p.batch_part == ATTN_PART_SINGLE ? p.num_seqs : p.num_tokens;
    const int64_t row = (int64_t)blockIdx.x * rows + rb;
    if (rb >= rows || row >= (int64_t)nidx * p.hq)
        return;
    const int idx = (int)(row / p.hq), head = (int)(row % p.hq);
    int token = idx;
    if (p.batch_part == ATTN_PART_SINGLE) {
        /* the decode part of a mixed batch: sequence idx's one token */
        token = p.cu_seqlens_q[idx];
        if (p.cu_seqlens_q[idx + 1] - token != 1)
            return;
    }
    const int64_t stride = (int64_t)p.num_tokens * p.hq;
    const int64_t base = (int64_t)token * p.hq + head;
    attn_pdl_wait(); /* launched with p.pdl: the partials are written */
    float4 x[RED_ROWS_MAX];
    float m[RED_ROWS_MAX], l[RED_ROWS_MAX];
#pragma unroll
    for (int k = 0; k < RED_ROWS_MAX; k++) {
        x[k] = make_float4(0.f, 0.f, 0.f, 0.f);
        m[k] = -INFINITY;
        l[k] = 0.f; /* segments past nseg weigh 0 */
        if (k < nseg) {
            x[k] = *(const float4 *)(p.ws_acc + (base + k * stride) * p.dv + cq * 4);
            m[k] = p.ws_ml[2 * (base + k * stride)];
            l[k] = p.ws_ml[2 * (base + k * stride) + 1];
        }
    }
    float mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < RED_ROWS_MAX; k++)
        if (l[k] > 0.f) /* a segment without keys weighs 0 */
            mx = fmaxf(mx, m[k]);
    const float sk = p.sinks ? p.sinks[head] * ATTN_LOG2E : -INFINITY;
    const float M = fmaxf(mx, sk);
    const float mu = M == -INFINITY ? 0.f : M;
    float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
    float denom = p.sinks ? exp2f(sk - mu) : 0.f;
#pragma unroll
    for (int k = 0; k < RED_ROWS_MAX; k++) {
        const float w = l[k] > 0.f ? exp2f(m[k] - mu) : 0.f;
        if (w != 0.f) { /* a segment without keys left its acc unwritten */
            denom += l[k] * w;
            a.x += x[k].x * w;
            a.y += x[k].y * w;
            a.z += x[k].z * w;
            a.w += x[k].w * w;
        }
    }
    const float inv = denom > 0.f ? p.v_scale / denom : 0.f;
    if (p.lse && cq == 0)
        p.lse[(int64_t)token * p.lse_stride_token + (int64_t)head * p.lse_stride_head] =
            denom > 0.f ? (mu + log2f(denom)) * ATTN_LN2 : -INFINITY;
    const int64_t ob = (int64_t)token * p.out_stride_token + (int64_t)head * p.out_stride_head;
    const float v[4] = {a.x, a.y, a.z, a.w};
#pragma unroll
    for (int e = 0; e < 4; e++)
        attn_store_elem(p.out, ob + cq * 4 + e, p.out_dtype, v[e] * inv);
}

static int kv_bytes_of(int dtype)
{
    return attn_launch_plan_kv_bytes(dtype);
}

template <int ROWS, int D, int KVB, bool RAWKV = false>
static hipError_t launch_generic_t(const attn_kparams *p, hipStream_t stream)
{
    /* Raw stages and the arch's limit: the launch plan's (set by the host
     * from attn_launch_plan_generic / attn_launch_plan_mtp, the table the predicates read). */
    if (p->stages < 1 || p->stages > ATTN_GEN_MAX_STAGES)
        return hipErrorInvalidValue;
    const int smem = RAWKV ? attn_launch_plan_generic_raw_bytes(D, D, KVB, ROWS, p->stages)
                           : attn_launch_plan_generic_bytes(D, D, KVB, ROWS, p->stages);
    if (smem > p->shared_limit)
        return hipErrorInvalidValue;
    /* Above 48 KB a kernel must opt in to the larger dynamic limit: asked
     * for the arch's whole limit (the largest any launch asks), so that
     * later forwards, graph capture included, make no such call. */
    hipError_t e = attn_func_opt_in((const void *)attn_generic_kernel<ROWS, D, KVB, RAWKV>,
                                    p->shared_limit, -1);
    if (e != hipSuccess)
        return e;
    dim3 grid(p->num_tokens / p->block_q + p->num_seqs, p->hkv * p->head_splits, p->nseg);
    attn_generic_kernel<ROWS, D, KVB, RAWKV><<<grid, GEN_WARPS * 32, smem, stream>>>(*p);
    e = hipGetLastError();
    if (e != hipSuccess || !p->partials)
        return e;
    return attn_launch_reduce(p, p->nseg, stream);
}

/* One launch of a reduce kernel: plainly, or (p->pdl) as a programmatic
 * dependent of the attention kernel before it (see attn_kparams.pdl). */
template <int VEC, int THREADS>
static hipError_t launch_reduce_t(const attn_kparams *p, int nseg, dim3 grid, hipStream_t stream)
{
    return attn_launch(p->pdl != 0, attn_reduce_kernel<VEC, THREADS>, grid, THREADS, 0, stream, *p,
                       nseg);
}

hipError_t attn_launch_reduce(const attn_kparams *p, int nseg, hipStream_t stream)
{
    dim3 grid(p->batch_part == ATTN_PART_SINGLE ? p->num_seqs : p->num_tokens, p->hq);
    /* 16-byte partial loads where the workspace is 16-byte aligned (the
     * host's pointer; every built head size is a multiple of 4 floats). */
    const bool vec = ((uintptr_t)p->ws_acc % 16) == 0 && p->dv % 4 == 0;
    const int rows = attn_launch_plan_reduce_rows_per_block(p->dv);
    if (vec && p->reduce_rows && nseg <= RED_ROWS_MAX && rows > 0) {
        const int64_t n = (int64_t)grid.x * p->hq; /* the (token, head) rows */
        const dim3 rgrid((unsigned)((n + rows - 1) / rows));
        return attn_launch(p->pdl != 0, attn_reduce_rows_kernel, rgrid, ATTN_REDUCE_ROWS_THREADS, 0,
                           stream, *p, nseg);
    }
    if (nseg >= RED_MANY_SEGMENTS)
        return vec ? launch_reduce_t<4, RED_THREADS_MANY>(p, nseg, grid, stream)
                   : launch_reduce_t<1, RED_THREADS_MANY>(p, nseg, grid, stream);
    return vec ? launch_reduce_t<4, RED_THREADS>(p, nseg, grid, stream)
               : launch_reduce_t<1, RED_THREADS>(p, nseg, grid, stream);
}

/* The kernel is compiled per head size (the generic plugin's list) and per
 * KV element width, so that every loop has compile-time bounds; the raw-K/V
 * variant only at the head sizes whose float tiles can exceed an arch's LDS
 * (192, 256; the plan picks it, p->raw_kv). */
#define GEN_RAW_EQ_(x) || D == (x)
template <int ROWS, int KVB>
static hipError_t launch_generic_d(const attn_kparams *p, hipStream_t stream)
{
    return attn_dispatch_head_dim(p->d, [&](auto d) {
        constexpr int D = decltype(d)::value;
        constexpr bool raw_built = 0 ATTN_GPU_RAW_KV_HEAD_DIM_LIST(GEN_RAW_EQ_);
        if constexpr (raw_built) {
            if (p->raw_kv)
                return launch_generic_t<ROWS, D, KVB, true>(p, stream);
        }
        return launch_generic_t<ROWS, D, KVB>(p, stream);
    });
}

int attn_generic_supports(int d, int dv, int kv_dtype)
{
    return d == dv && kv_bytes_of(kv_dtype) <= 2 && attn_launch_plan_head_dim_built(d);
}

hipError_t attn_launch_generic(const attn_kparams *p, int max_tile_q, hipStream_t stream,
                               int rows_per_warp)
{
    (void)max_tile_q;
    const int kvb = kv_bytes_of(p->kv_dtype);
#if !defined(ATTN_PLATFORM_CUDA)
    /* 64-row programs: only the portable MTP path uses them (on CUDA the MTP
     * kernel has its own mma code, so the instantiation is left out). */
    if (rows_per_warp == 16)
        return launch_generic_t<16, 256, 1>(p, stream);
#else
    (void)rows_per_warp;
#endif
    if (kvb == 1)
        return launch_generic_d<4, 1>(p, stream);
    return launch_generic_d<4, 2>(p, stream);
}

/* ---- decode path: every sequence of the batch has at most one query token ----
 *
 * Plain decode is memory-bound even for scalar FP32 code (32:8 heads, D 128,
 * bf16: 4 FLOP per byte of K/V), so what limits the kernel above on it is
 * the instructions it spends per byte: with one query row per warp it stages
 * every K/V element as float through shared memory and leaves most rows of a
 * program empty. This path instead:
 *   - runs one program per (sequence, KV head, group of GT query heads, key
 *     segment), with all GT query heads of that KV head in the program, so
 *     each K/V element is read once from global memory for all of them;
 *   - splits the KEYS across warps and lanes, not the rows: a row of D
 *     elements is held by L lanes (8 elements each, one 16-byte load for
 *     bf16/f16, 8 bytes for fp8), so a warp reads 32 / L whole key rows per
 *     load, straight from the paged cache into registers;
 *   - keeps an online softmax per warp over tiles of DEC_KEYS keys (one
 *     rescale of the accumulator per tile, not per key), merges the warps in
 *     shared memory at the end, and writes either the normalised output
 *     (nseg == 1) or the same (max, sum, acc) partials the 3D path writes, so
 *     attn_reduce_kernel merges the segments.
 * With one query position per sequence every head sees the same key range
 * [klo, khi), so masking is a range check per key. */
#define DEC_WARPS ATTN_DEC_WARPS
#define DEC_KEYS ATTN_DEC_KEYS /* keys per warp per iteration */

/* 8 elements of a K/V row as raw words: 16 bytes for 16-bit types, 8 for fp8. */
template <int KVB>
static __device__ __forceinline__ void dec_load(const uint8_t *src, uint32_t (&w)[2 * KVB])
{
    if constexpr (KVB == 2) {
        const uint4 u = *(const uint4 *)src;
        w[0] = u.x;
        w[1] = u.y;
        w[2] = u.z;
        w[3] = u.w;
    } else {
        const uint2 u = *(const uint2 *)src;
        w[0] = u.x;
        w[1] = u.y;
    }
}

/* Raw words -> 8 floats. The dtype test is uniform over the grid, so it is
 * a predictable branch, not divergence. */
template <int KVB>
static __device__ __forceinline__ void dec_cvt(const uint32_t (&w)[2 * KVB], int dtype, float *o)
{
    if constexpr (KVB == 2) {
        if (dtype == ATTN_DTYPE_BF16) {
#pragma unroll
            for (int k = 0; k < 4; k++) {
                o[2 * k] = __uint_as_float(w[k] << 16);
                o[2 * k + 1] = __uint_as_float(w[k] & 0xFFFF0000u);
            }
        } else {
#pragma unroll
            for (int k = 0; k < 4; k++) {
                o[2 * k] = attn_f16_to_f32(w[k] & 0xFFFFu);
                o[2 * k + 1] = attn_f16_to_f32(w[k] >> 16);
            }
        }
    } else {
        const int nuz = dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            o[k] = attn_fp8_to_f32((w[0] >> (8 * k)) & 0xFFu, nuz);
            o[4 + k] = attn_fp8_to_f32((w[1] >> (8 * k)) & 0xFFu, nuz);
        }
    }
}

/* Programs a multiprocessor should hold at once: with up to 4 heads of at
 * most 128 dims the registers allow 4 (16 warps, each with a tile of K/V
 * loads in flight: more bytes in flight hide more memory latency); the
 * larger variants need more registers than 4 programs would leave them. */
#define DEC_MIN_BLOCKS(D, GT) ((D) <= 128 && (GT) <= 4 ? 4 : 1)

template <int D, int KVB, int GT>
__global__ void __launch_bounds__(DEC_WARPS * 32, DEC_MIN_BLOCKS(D, GT))
    attn_decode_kernel(const attn_kparams p)
{
    constexpr int NCH = D / 8;              /* 8-element chunks per row */
    constexpr int L = NCH <= 8 ? 8 : 16;    /* lanes per key row (power of two) */
    constexpr int C = (NCH + L - 1) / L;    /* chunks per lane */
    constexpr int KPW = 32 / L;             /* key rows per warp-wide load */
    constexpr int U = DEC_KEYS / KPW;       /* loads per lane per iteration */
    constexpr int W = 2 * KVB;              /* 32-bit words per chunk */
    __shared__ float sm_acc[DEC_WARPS][GT][D];
    __shared__ float sm_ml[DEC_WARPS][GT][2];
    static_assert(sizeof sm_acc + sizeof sm_ml == attn_launch_plan_decode_bytes(D, GT),
                  "the plan table's decode bytes");

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int grp = lane / L, gl = lane % L;
    const int s = blockIdx.x;
    const int kvh = blockIdx.y / p.head_splits, hsplit = blockIdx.y % p.head_splits;
    const int seg = blockIdx.z;
    const int q0 = p.cu_seqlens_q[s];
    if (p.cu_seqlens_q[s + 1] - q0 != 1)
        return; /* a sequence without a query token this step, or (a mixed batch's decode
                   part) a prefill chunk: uniform over the block */
    const int K = p.seqused_k[s];
    int klo, khi; /* the one query token is the last position */
    attn_visible_keys(p, K, K - 1, K - 1, klo, khi);
    /* This segment's slice of the visible keys, in whole tiles of DEC_KEYS. */
    const int ntile = khi > klo ? (khi - klo + DEC_KEYS - 1) / DEC_KEYS : 0;
    const int per = (ntile + p.nseg - 1) / p.nseg;
    const int t_lo = seg * per, t_hi = min(ntile, t_lo + per);

    /* Q of the GT heads, this lane's chunks, times the score multiplier (log2
     * units unless a softcap needs natural units first); FP8 compute
     * quantises Q as cpu-ref does. Heads past the group are zero and never
     * stored. */
    const float qmul = p.softcap > 0.f ? p.score_scale : p.score_scale * ATTN_LOG2E;
    float q[GT][C][8];
#pragma unroll
    for (int h = 0; h < GT; h++) {
        const int hg = hsplit * GT + h;
#pragma unroll
        for (int c = 0; c < C; c++) {
            const int ch = gl + c * L;
#pragma unroll
            for (int e = 0; e < 8; e++) {
                float v = 0.f;
                if (hg < p.group && ch < NCH) {
                    const int64_t off = (int64_t)q0 * p.q_stride_token +
                                        (int64_t)(kvh * p.group + hg) * p.q_stride_head + ch * 8 + e;
                    v = attn_load_elem(p.q, off, p.q_dtype);
                    if (p.q_quant) {
                        const int nuz = p.q_quant == ATTN_DTYPE_FP8_E4M3FNUZ;
                        v = attn_fp8_to_f32(attn_f32_to_fp8(v / p.q_descale, nuz), nuz);
                    }
                    v *= qmul;
                }
                q[h][c][e] = v;
            }
        }
    }

    float m[GT], l[GT], acc[GT][C][8];
#pragma unroll
    for (int h = 0; h < GT; h++) {
        m[h] = -INFINITY;
        l[h] = 0.f;
#pragma unroll
        for (int c = 0; c < C; c++)
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc[h][c][e] = 0.f;
    }

    const int32_t *bt = p.block_table + (int64_t)s * p.bt_stride;
    /* Pages are almost always a power of two: a shift and a mask instead of
     * two integer divisions per key. */
    const bool pow2page = (p.page & (p.page - 1)) == 0;
    const int pshift = __ffs(p.page) - 1;
    const uint8_t *kc = (const uint8_t *)p.k_cache, *vc = (const uint8_t *)p.v_cache;

    /* Block-table entries of a warp's keys are fetched one tile ahead: the
     * K/V loads depend on them, and a lookup in the same iteration would put
     * a second memory latency in front of every tile. */
    int nblk[U];
    auto fetch_bt = [&](int t) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int key = klo + t * DEC_KEYS + u * KPW + grp;
            nblk[u] = 0;
            if (t < t_hi && key < khi)
                nblk[u] = bt[pow2page ? key >> pshift : key / p.page];
        }
    };
    fetch_bt(t_lo + warp);

    for (int t = t_lo + warp; t < t_hi; t += DEC_WARPS) {
        const int kb = klo + t * DEC_KEYS;
        /* All loads of the tile first (K and V of DEC_KEYS keys), so that a
         * warp has them in flight together before it waits on any. */
        uint32_t kw[U][C][W], vw[U][C][W];
        bool kok[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int key = kb + u * KPW + grp;
            const bool ok = key < khi;
            kok[u] = ok;
            int64_t row = 0;
            if (ok) {
                const int off = pow2page ? key & (p.page - 1) : key % p.page;
                row = (int64_t)nblk[u] * p.kv_stride_block + off * p.kv_stride_token +
                      kvh * p.kv_stride_head;
            }
#pragma unroll
            for (int c = 0; c < C; c++) {
                const int ch = gl + c * L;
                if (ok && (NCH % L == 0 || ch < NCH)) {
                    dec_load<KVB>(kc + row + ch * 8 * KVB, kw[u][c]);
                    dec_load<KVB>(vc + row + ch * 8 * KVB, vw[u][c]);
                } else {
                    /* Zero words: the key's probability is 0 and 0 x 0 stays 0. */
#pragma unroll
                    for (int x = 0; x < W; x++)
                        kw[u][c][x] = vw[u][c][x] = 0u;
                }
            }
        }

        fetch_bt(t + DEC_WARPS);

        /* Scores: each lane's partial dot product over its chunks, summed over
         * the L lanes of the row (all lanes end with the full score). */
        float sc[U][GT];
#pragma unroll
        for (int u = 0; u < U; u++) {
            float kf[C][8];
#pragma unroll
            for (int c = 0; c < C; c++)
                dec_cvt<KVB>(kw[u][c], p.kv_dtype, kf[c]);
#pragma unroll
            for (int h = 0; h < GT; h++) {
                float a0 = 0.f, a1 = 0.f;
#pragma unroll
                for (int c = 0; c < C; c++)
#pragma unroll
                    for (int e = 0; e < 8; e += 2) {
                        a0 = fmaf(q[h][c][e], kf[c][e], a0);
                        a1 = fmaf(q[h][c][e + 1], kf[c][e + 1], a1);
                    }
                float a = a0 + a1;
#pragma unroll
                for (int mk = L / 2; mk >= 1; mk >>= 1)
                    a += attn_shfl_xor32(a, mk);
                if (p.softcap > 0.f)
                    a = p.softcap * tanhf(a / p.softcap) * ATTN_LOG2E;
                sc[u][h] = kok[u] ? a : -INFINITY;
            }
        }

        /* Online softmax over the tile: one maximum per head over the warp's
         * DEC_KEYS keys, one rescale of the accumulator. */
#pragma unroll
        for (int h = 0; h < GT; h++) {
            float mt = sc[0][h];
#pragma unroll
            for (int u = 1; u < U; u++)
                mt = fmaxf(mt, sc[u][h]);
#pragma unroll
            for (int mk = L; mk < 32; mk <<= 1)
                mt = fmaxf(mt, attn_shfl_xor32(mt, mk));
            const float mn = fmaxf(m[h], mt);
            const float mu = mn == -INFINITY ? 0.f : mn; /* all masked so far: no NaN */
            const float alpha = exp2f(m[h] - mu);
            m[h] = mn;
            float ls = l[h] * alpha;
#pragma unroll
            for (int u = 0; u < U; u++) {
                const float pr = exp2f(sc[u][h] - mu);
                ls += pr;
                sc[u][h] = pr;
            }
            l[h] = ls;
#pragma unroll
            for (int c = 0; c < C; c++)
#pragma unroll
                for (int e = 0; e < 8; e++)
                    acc[h][c][e] *= alpha;
        }

        /* P x V: each lane accumulates its chunks of its own keys' rows. */
#pragma unroll
        for (int u = 0; u < U; u++) {
            float vf[C][8];
#pragma unroll
            for (int c = 0; c < C; c++)
                dec_cvt<KVB>(vw[u][c], p.kv_dtype, vf[c]);
#pragma unroll
            for (int h = 0; h < GT; h++)
#pragma unroll
                for (int c = 0; c < C; c++)
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        acc[h][c][e] = fmaf(sc[u][h], vf[c][e], acc[h][c][e]);
        }
    }

    /* Sum the KPW key groups of the warp (same maximum: it was reduced over
     * the whole warp), then hand each warp's (max, sum, acc) to shared memory. */
#pragma unroll
    for (int h = 0; h < GT; h++) {
#pragma unroll
        for (int mk = L; mk < 32; mk <<= 1) {
            l[h] += attn_shfl_xor32(l[h], mk);
#pragma unroll
            for (int c = 0; c < C; c++)
#pragma unroll
                for (int e = 0; e < 8; e++)
                    acc[h][c][e] += attn_shfl_xor32(acc[h][c][e], mk);
        }
    }
    if (grp == 0) {
#pragma unroll
        for (int h = 0; h < GT; h++) {
#pragma unroll
            for (int c = 0; c < C; c++) {
                const int ch = gl + c * L;
                if (NCH % L == 0 || ch < NCH)
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        sm_acc[warp][h][ch * 8 + e] = acc[h][c][e];
            }
            if (lane == 0) {
                sm_ml[warp][h][0] = m[h];
                sm_ml[warp][h][1] = l[h];
            }
        }
    }
    __syncthreads();

    /* Merge the warps with the log-sum-exp rule and store: the normalised
     * output (with the sink in the denominator and v_descale) for one
     * segment, else this segment's partial for attn_reduce_kernel. */
    const int token = q0;
    for (int idx = tid; idx < GT * D; idx += DEC_WARPS * 32) {
        const int h = idx / D, dd = idx % D;
        const int hg = hsplit * GT + h;
        if (hg >= p.group)
            continue;
        const int head = kvh * p.group + hg;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; w++)
            if (sm_ml[w][h][1] > 0.f)
                M = fmaxf(M, sm_ml[w][h][0]);
        const float mu = M == -INFINITY ? 0.f : M;
        float Ls = 0.f, A = 0.f;
#pragma unroll
        for (int w = 0; w < DEC_WARPS; w++) {
            const float lw = sm_ml[w][h][1];
            if (lw > 0.f) {
                const float f = exp2f(sm_ml[w][h][0] - mu);
                Ls += lw * f;
                A = fmaf(sm_acc[w][h][dd], f, A);
            }
        }
        if (!p.partials) {
            const float inv = attn_row_inverse(M, Ls, p.sinks, head, p.v_scale);
            const int64_t ob =
                (int64_t)token * p.out_stride_token + (int64_t)head * p.out_stride_head;
            attn_store_elem(p.out, ob + dd, p.out_dtype, A * inv);
        } else {
            const int64_t wi = ((int64_t)seg * p.num_tokens + token) * p.hq + head;
            if (dd == 0) {
                p.ws_ml[2 * wi] = M;
                p.ws_ml[2 * wi + 1] = Ls;
            }
            if (Ls > 0.f)
                p.ws_acc[wi * D + dd] = A;
        }
    }
}

/* Query heads per decode program: the plan table's rule. */
int attn_decode_heads_per_program(int group, int d)
{
    return attn_launch_plan_decode_heads(group, d);
}

template <int D, int KVB, int GT>
static hipError_t launch_decode_t(const attn_kparams *p, hipStream_t stream)
{
    dim3 grid(p->num_seqs, p->hkv * p->head_splits, p->nseg);
    attn_decode_kernel<D, KVB, GT><<<grid, DEC_WARPS * 32, 0, stream>>>(*p);
    hipError_t e = hipGetLastError();
    if (e != hipSuccess || !p->partials)
        return e;
    return attn_launch_reduce(p, p->nseg, stream);
}

template <int D, int KVB>
static hipError_t launch_decode_g(const attn_kparams *p, hipStream_t stream)
{
    switch (p->heads_per_tile) {
    case 1:
        return launch_decode_t<D, KVB, 1>(p, stream);
    case 2:
        return launch_decode_t<D, KVB, 2>(p, stream);
    case 4:
        return launch_decode_t<D, KVB, 4>(p, stream);
    case 8:
        if constexpr (D <= 128)
            return launch_decode_t<D, KVB, 8>(p, stream);
        else
            return hipErrorInvalidValue;
    default:
        return hipErrorInvalidValue;
    }
}

template <int KVB>
static hipError_t launch_decode_d(const attn_kparams *p, hipStream_t stream)
{
    return attn_dispatch_head_dim(
        p->d, [&](auto d) { return launch_decode_g<decltype(d)::value, KVB>(p, stream); });
}

/* p->heads_per_tile (a value of attn_decode_heads_per_program), head_splits
 * and nseg are set by the caller. */
hipError_t attn_launch_decode(const attn_kparams *p, hipStream_t stream)
{
    if (kv_bytes_of(p->kv_dtype) == 1)
        return launch_decode_d<1>(p, stream);
    return launch_decode_d<2>(p, stream);
}
