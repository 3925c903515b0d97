/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_prefill.hip — aiter-generic's kernel for batches with more than one
 * query token per sequence (prefill, chunked prefill, mixed batches) on
 * NVIDIA sm_90 (wgmma; sm_90a builds), for Q and a KV cache of one 16-bit
 * type (bf16 or f16).
 *
 * Why: the portable generic kernel does this work on the FMA pipes at 5-8
 * TFLOP/s. Prefill is matrix work (S = Q K^T and O += P V, D FLOPs per byte
 * of K/V per query row), which only the warpgroup matrix units run near the
 * chip's rate.
 *
 * A program (384 threads, one per SM) owns BM = 128 rows of one KV head:
 * `block_q` query tokens x `heads_per_tile` query heads of that KV head
 * (row r = token r / hpt, head r % hpt), so that every K/V tile read from
 * memory serves all the heads that share it and a short query (chunked
 * prefill, a few speculative tokens) still fills the rows. It streams the
 * keys its rows can see in tiles of BN keys:
 *
 *   warpgroup 0 (producer, 56 registers after setmaxnreg): gathers each K
 *     and V tile through the block table (pages in any order, any page
 *     size: each key's slot is looked up once per tile into a small shared
 *     table) with 16-byte cp.async into a ring of
 *     STAGES shared-memory stages, and signals each tile on an mbarrier
 *     (cp.async.mbarrier.arrive: the barrier completes when the copies have
 *     landed). K and V of a stage have their own full/free barriers, so K of
 *     tile i + 1 lands while P V of tile i still reads V.
 *   warpgroups 1, 2 (consumers, 224 registers): 64 rows each. Per tile:
 *     S = Q K^T as DP/16 wgmma m64nBNk16 (Q and K from shared memory),
 *     the online softmax in base 2 on the accumulators (scale, softcap,
 *     masks only on tiles that cut a row's visible range, the row maximum,
 *     a rescale of O only when a maximum moved), P rounded to the input type
 *     in registers, then O += P V as BN/16 wgmma m64nDPk16 with P from
 *     registers and V read N-major. P V is left in flight while the next
 *     tile's S is issued; the wait for that S also retires it. The two
 *     consumer warpgroups run independently, so one's softmax overlaps the
 *     other's matrix work.
 *
 * Layout: Q, K and V tiles are stored in the wgmma 128-byte swizzle
 * (attn_wgmma.h), head dim padded with zeros to DP = a multiple of 64 (80
 * and 96 compute as 128). Tiles: BN = 128 keys for DP <= 128, 64 above;
 * stages: as many as fit 227 KB (D 64: 4, D 80-192: 3, D 256: 2).
 *
 * Key range: the keys any row of the program may see (causal, window),
 * split into `nseg` segments when the launcher asks (few programs): each
 * segment writes (max, sum, unnormalised acc) to the workspace and
 * attn_reduce_kernel merges them (sinks, v_descale there). With nseg == 1
 * the program writes the normalised output itself.
 *
 * Grids: one program an item, x = query tiles in reverse (tiles of a
 * sequence's end, which see the most keys under a causal mask, start
 * first), y = KV head x head split, z = segment; or the dynamic grid (the
 * launcher's choice): a program an SM a segment, each taking item after
 * item from a counter (attn_prefill_kernel's DYN).
 */
#include <math.h>

#include "attn_launch_plan.h"
#include "attn_wgmma.h"
#include "gpu_attn_internal.h"

/* The program plan of one head size and cache type (KV8: an fp8 cache): the
 * tile sizes, stages, threads and shared memory of attn_launch_plan.h's
 * prefill layout, which the predicates and the launcher read too. */
template <int D, bool KV8 = false>
struct prefill_cfg {
    /* The sizes the predicates checked: attn_launch_plan.h's layout. */
    static constexpr int DP = attn_launch_plan_prefill_layout(D, KV8).padded_d; /* head dim in smem */
    static constexpr int CPR = DP / 8;            /* 16-byte chunks of a row */
    static constexpr int DCH = D / 8;             /* chunks that hold data (rest: zeros) */
    static constexpr int BM = attn_launch_plan_prefill_layout(D, KV8).rows; /* rows per program */
    static constexpr int BN = attn_launch_plan_prefill_layout(D, KV8).keys; /* keys per tile */
    static constexpr int THREADS = attn_launch_plan_prefill_layout(D, KV8).threads;
    static constexpr int PRODUCER_REGS = 56, CONSUMER_REGS = 224;
    static constexpr int Q_BYTES = BM * DP * 2;
    static constexpr int TILE_BYTES = attn_launch_plan_prefill_layout(D, KV8).tile_bytes; /* K or V */
    static constexpr int STAGE_BYTES = attn_launch_plan_prefill_layout(D, KV8).stage_bytes;
    static constexpr int ALIGN = ATTN_PREFILL_ALIGN; /* the swizzle's base alignment */
    static constexpr int MAX_STAGES = ATTN_PREFILL_MAX_STAGES;
    static constexpr int BAR_BYTES = 4 * MAX_STAGES * 8;
    static constexpr int TAB_BYTES = 2 * BN * 4; /* the producer's slot table */
    /* fp8 cache: raw tiles (BN rows of D bytes, K then V) land in a ring of
     * RING raw stages and are converted to the f16 stages; Q rows carry a
     * power-of-two multiplier each (ROWMUL). Two raw stages where they fit
     * beside two f16 stages, else one. */
    static constexpr int RCH = D / 16; /* 16-byte chunks of a raw fp8 row */
    static constexpr int RAW_STAGE = attn_launch_plan_prefill_layout(D, KV8).raw_stage;
    static constexpr int ROWMUL_BYTES = KV8 ? BM * 4 : 0;
    static constexpr int RING = attn_launch_plan_prefill_layout(D, KV8).ring;
    static constexpr int FIXED = attn_launch_plan_prefill_layout(D, KV8).fixed;
    static constexpr int STAGES = attn_launch_plan_prefill_layout(D, KV8).stages;
    static constexpr int SMEM = attn_launch_plan_prefill_layout(D, KV8).bytes;
    static_assert(ATTN_PREFILL_SMEM_LIMIT == ATTN_SM90_SMEM_PER_BLOCK, "sm_90's opt-in limit");
    static_assert(FIXED == ALIGN + Q_BYTES + BAR_BYTES + TAB_BYTES + ROWMUL_BYTES +
                               RING * RAW_STAGE,
                  "the plan table's layout: alignment, Q, barriers, slot table, multipliers");
    static_assert(TILE_BYTES == BN * DP * 2 && STAGE_BYTES == 2 * TILE_BYTES &&
                      RAW_STAGE == (KV8 ? 2 * BN * D : 0) && SMEM == FIXED + STAGES * STAGE_BYTES,
                  "the plan table's tiles");
    static constexpr int RAW_LOADS = BN * RCH / 128; /* raw chunks per producer thread */
    static constexpr int PASSES = BN / 16; /* rows a producer thread copies per tile */
    static constexpr bool PINGPONG = true; /* the consumers take turns issuing wgmma */
    static_assert(STAGES >= 2, "two stages must fit");
    static_assert(BN % 16 == 0, "16 rows per pass of 128 producer threads");
    static_assert(PASSES % 4 == 0 && BAR_BYTES % 16 == 0 && Q_BYTES % 16 == 0,
                  "a thread's slots of the table: whole 16-byte reads at 16-byte offsets");
    static_assert(!KV8 || (D % 16 == 0 && BN * RCH % 128 == 0 && CPR <= 32 && 32 % CPR == 0),
                  "fp8: whole raw chunks, whole passes, a Q row within a warp");
    static_assert(2 * CONSUMER_REGS + PRODUCER_REGS <= 65536 / 128, "register file");
};

/* One work item of the prefill kernel: a query tile of one sequence (t0:
 * its first token), one KV head x head split, and this key segment's share
 * of the keys its rows see (key tiles my_lo .. my_lo + ntiles - 1). */
struct pf_item {
    int s, q0, t0, K, ctx0, ntok, kvh, hsplit, my_lo, ntiles;
};
/* The dynamic grid's ring of claimed items (attn_prefill_kernel), and the
 * static shared memory it adds to the plan's bytes. */
#define ATTN_PF_RING 4
#define ATTN_PF_RING_BYTES (ATTN_PF_RING * ((int)sizeof(pf_item) + 16) + 16)

#if defined(ATTN_PLATFORM_CUDA)

/* DYN = false: one program an item, x = query tiles of the batch in reverse
 * (its bound T / block_q + S), y = KV head x head split, z = segment (the
 * grid of attn_prefill.hip's header). DYN = true: the dynamic grid
 * (attn_kparams.counters): p.prefill_programs programs a segment, each
 * streaming item after item, so only its first pays the pipeline's start
 * (metadata, Q, first tiles; ~3 us a program, bench/RESULTS.md version
 * 19). */
template <int D, bool BF16, bool SOFTCAP, bool KV8, bool DYN>
__global__ void __launch_bounds__(384, 1) attn_prefill_kernel(const attn_kparams p)
{
#ifdef ATTN_HAVE_WGMMA
    static_assert(!KV8 || !BF16, "an fp8 cache computes in f16");
    using C = prefill_cfg<D, KV8>;
    static_assert(!DYN || C::SMEM + ATTN_PF_RING_BYTES <= ATTN_PREFILL_SMEM_LIMIT,
                  "the item ring fits beside the plan's shared memory");
    constexpr int DP = C::DP, BN = C::BN, BM = C::BM, ST = C::STAGES, CPR = C::CPR;
    extern __shared__ __align__(16) uint8_t pf_smem[];
    uint8_t *Qs =
        pf_smem + ((C::ALIGN - (attn_smem_addr(pf_smem) & (C::ALIGN - 1))) & (C::ALIGN - 1));
    uint8_t *KV = Qs + C::Q_BYTES; /* stage s: K tile at s * STAGE_BYTES, V after it */
    uint64_t *bars = (uint64_t *)(KV + ST * C::STAGE_BYTES);
    uint64_t *kfull = bars, *vfull = bars + C::MAX_STAGES;
    uint64_t *kfree = bars + 2 * C::MAX_STAGES, *vfree = bars + 3 * C::MAX_STAGES;
    int *slot_tab = (int *)(bars + 4 * C::MAX_STAGES); /* [2][BN], producer only */
    float *rowmul = (float *)(slot_tab + 2 * BN);       /* [BM], KV8 only */
    uint8_t *raw = (uint8_t *)(rowmul + (KV8 ? BM : 0)); /* [RING][2][BN x D], KV8 only */

    const int tid = threadIdx.x;
    const int seg = blockIdx.z;
    const int hpt = p.heads_per_tile;
    /* The rest of item w once its sequence (s, q0, K), first token t0 and
     * column y are known: the keys any row of it may see, in whole tiles,
     * and this segment's share of them. */
    auto finish_item = [&](pf_item &w, int y, int qlen) {
        w.kvh = y / p.head_splits;
        w.hsplit = y % p.head_splits;
        w.ctx0 = w.K - qlen; /* position of the sequence's first query token */
        w.ntok = min(p.block_q, qlen - w.t0);
        int klo, khi;
        attn_visible_keys(p, w.K, w.ctx0 + w.t0, w.ctx0 + w.t0 + w.ntok - 1, klo, khi);
        const int tlo = klo / BN, thi = khi > klo ? (khi + BN - 1) / BN : tlo;
        const int per = (thi - tlo + p.nseg - 1) / p.nseg;
        w.my_lo = tlo + seg * per;
        w.ntiles = max(0, min(thi, w.my_lo + per) - w.my_lo);
    };
    pf_item job;
    if constexpr (!DYN) {
        const int tile = gridDim.x - 1 - blockIdx.x;
        job.s = attn_find_tile_seq(p.cu_seqlens_q, p.num_seqs, p.block_q, tile);
        job.q0 = p.cu_seqlens_q[job.s];
        const int qlen = p.cu_seqlens_q[job.s + 1] - job.q0;
        job.t0 = (tile - (job.q0 / p.block_q + job.s)) * p.block_q;
        if (job.t0 >= qlen || (p.batch_part == ATTN_PART_MULTI && qlen == 1))
            return; /* a spare tile of the bound, or a decode token that a decode kernel
                       takes (mixed batches): uniform over the program */
        job.K = p.seqused_k[job.s];
        finish_item(job, blockIdx.y, qlen);
    }
    /* The dynamic grid's items: (query tile, KV head x head split) pairs in
     * groups of p.prefill_group_pairs (sequence, column y) pairs, whose K/V
     * fill a third of the L2 (0: one group), one group after the other;
     * within a group in the order of the tile's rank from its sequence's end
     * (rank 0: the last tile, which sees the most keys under a causal mask),
     * then the pair. R = p.prefill_rank_tiles ranks (the longest sequence's
     * tiles, from the host's max_seqlen_q): R x S x Y items a segment, those
     * of ranks a sequence does not have empty. A global counter a segment
     * (p.counters, in the launch's workspace, zeroed on the stream before
     * the launch) hands them out: a program's first item is its own index
     * (no round trip before the first copies); thread 0 of the producer
     * claims the next once the current item's last tile is issued, skipping
     * empty items,
     * into a ring in shared memory with full/free mbarriers that every warp
     * reads in order. So an item goes to the program about to be free for
     * it, as the hardware's block scheduler would, without a program's start
     * per item. (Read from the parameters where used, not held: the producer
     * has 56 registers.) */
    const int Y = p.hkv * p.head_splits;
    constexpr int IR = ATTN_PF_RING;
    __shared__ pf_item item_ring[IR];
    __shared__ __align__(8) uint64_t item_full[IR], item_free[IR];
    __shared__ int claims_ended;
    /* Item i of the order above; false where its sequence has no tile of
     * that rank, or is a decode token that a decode kernel takes (mixed
     * batches). Three independent loads. */
    auto decode_item = [&](int64_t i, pf_item &w) -> bool {
        const int64_t SY = (int64_t)p.num_seqs * Y;
        const int GP = p.prefill_group_pairs > 0 ? p.prefill_group_pairs : (int)SY;
        const int64_t group_items = (int64_t)p.prefill_rank_tiles * GP;
        const int grp = (int)(i / group_items);
        const int64_t gi = i - grp * group_items;
        const int npairs = (int)min((int64_t)GP, SY - (int64_t)grp * GP);
        const int r = (int)(gi / npairs);
        const int pair = grp * GP + (int)(gi - (int64_t)r * npairs);
        w.s = pair / Y;
        const int y = pair - w.s * Y;
        w.q0 = p.cu_seqlens_q[w.s];
        const int q1 = p.cu_seqlens_q[w.s + 1];
        w.K = p.seqused_k[w.s];
        const int qlen = q1 - w.q0;
        const int nt = (qlen + p.block_q - 1) / p.block_q;
        if (r >= nt || (p.batch_part == ATTN_PART_MULTI && qlen == 1))
            return false;
        w.t0 = (nt - 1 - r) * p.block_q;
        finish_item(w, y, qlen);
        return true;
    };
    /* Thread 0: claims this program's k-th live item (or the end) into the
     * ring, once every warp has read the item IR places before it. */
    auto fill_one = [&](int k) {
        const int64_t N = (int64_t)p.prefill_rank_tiles * p.num_seqs * Y;
        int32_t *ctr = p.counters + seg;
        const int sl = k % IR;
        if (k >= IR)
            attn_mbar_wait(&item_free[sl], ((k / IR) - 1) & 1);
        pf_item w = {};
        for (bool first = k == 0;; first = false) {
            const int64_t i =
                first ? (int64_t)blockIdx.x : (int64_t)gridDim.x + atomicAdd(ctr, 1);
            if (i >= N) {
                w.s = -1;
                claims_ended = 1;
                break;
            }
            if (decode_item(i, w))
                break;
        }
        item_ring[sl] = w;
        attn_mbar_arrive(&item_full[sl]);
    };
    /* Warp 0 (thread 0 claiming) fills ring entry k; nothing on the
     * one-program-an-item grid. */
    auto fill = [&](int k) {
        if constexpr (DYN) {
            if (threadIdx.x >= 32)
                return;
            if (threadIdx.x == 0 && !claims_ended)
                fill_one(k);
            __syncwarp(); /* warp 0 meets again before its next named barrier */
        } else {
            (void)k;
        }
    };
    /* This program's n-th item into w (n from 0): the grid's own item (n =
     * 0 only, in job already) or the ring's n-th entry. Returns n, or -1
     * when there is none. */
    auto next_item = [&](int n, pf_item &w) -> int {
        if constexpr (DYN) {
            const int sl = n % IR;
            attn_mbar_wait(&item_full[sl], (n / IR) & 1);
            w = item_ring[sl];
            __syncwarp();
            if ((threadIdx.x & 31) == 0)
                attn_mbar_arrive(&item_free[sl]);
            return w.s >= 0 ? n : -1;
        } else {
            (void)w;
            return n == 0 ? 0 : -1;
        }
    };

    if (tid == 0) {
#pragma unroll
        for (int i = 0; i < ST; i++) {
            attn_mbar_init(&kfull[i], 128); /* one cp.async arrival per producer thread */
            attn_mbar_init(&vfull[i], 128);
            attn_mbar_init(&kfree[i], 256); /* one arrival per consumer thread */
            attn_mbar_init(&vfree[i], 256);
        }
        if constexpr (DYN) {
            claims_ended = 0;
            for (int i = 0; i < IR; i++) {
                attn_mbar_init(&item_full[i], 1);
                attn_mbar_init(&item_free[i], 12); /* one arrival per warp */
            }
        }
    }
    if constexpr (C::DCH < CPR) {
        /* D 80 / 96: the padding columns of the K/V stages are never copied
         * or converted: zeros, once, in every stage, before the barrier
         * below orders them for the consumers. */
        constexpr int PAD = CPR - C::DCH;
        for (int idx = tid; idx < ST * 2 * BN * PAD; idx += C::THREADS) {
            const int tl = idx / (BN * PAD), rem = idx % (BN * PAD);
            *(uint4 *)(KV + tl * C::TILE_BYTES + attn_swz128_off(rem / PAD, C::DCH + rem % PAD, BN)) =
                make_uint4(0u, 0u, 0u, 0u);
        }
    }
    __syncthreads(); /* the last barrier of all 384 threads: the producer may leave early */
    fill(0); /* the next is claimed once the producer has issued this one's last tile */

    if (tid < 128) {
        /* ---- producer ---- */
        attn_regs_release<C::PRODUCER_REGS>();
        /* One slot of the cache, under 4 GiB (resolve_kv_layout in gpu_attn.hip
         * checks it): a row's offset is one 32 x 32 -> 64-bit multiply-add
         * (the 64-bit product of a signed slot took five instructions a row,
         * eight rows a thread a tile; bench/RESULTS.md version 34). */
        const uint32_t row_bytes = (uint32_t)p.kv_stride_token;
        const int pshift = p.page_shift, pmask = p.page - 1;
        constexpr int NB = DP / 64;
        const int lr = tid >> 3, c8 = tid & 7;
        const int dst_thr = attn_swz128_off(lr, c8, 0); /* c8 < 8: in the first 64 columns */
        /* gt: the tiles this program streamed before the current item (the
         * ring's stage and phase, and the slot table's half, run on across
         * items). */
        int gt = 0;
        for (int n = next_item(0, job); n >= 0; n = next_item(n + 1, job)) {
            const int K = job.K, my_lo = job.my_lo, ntiles = job.ntiles;
            const int32_t *bt = p.block_table + (int64_t)job.s * p.bt_stride;
            const int64_t col_bytes = job.kvh * p.kv_stride_head + c8 * 16;
            /* The cache slot of key `key`; past K, -1 for the fp8 copies (which
             * test it) and 0 for the 16-bit ones (a slot inside the cache, whose
             * copies then read nothing: they zero-fill by the key's index). */
            auto slot_of = [&](int key) {
                if (key >= K)
                    return KV8 ? -1 : 0;
                const int blk = pshift >= 0 ? bt[key >> pshift] : bt[key / p.page];
                return blk * p.kv_block_slots + (pshift >= 0 ? key & pmask : key % p.page);
            };
            /* The tile's cache slots, one key per thread (one coalesced read of
             * the block table, issued a tile ahead so that its latency hides
             * behind the copies), into a double-buffered table: the barrier below
             * also tells every producer thread that the table two tiles back is
             * no longer read. For the 16-bit copies key j of the tile sits at
             * tab_pos(j), so that the PASSES keys lr + 16 i a copying thread
             * needs are contiguous: one or two 16-byte reads (a bijection of 0
             * .. BN - 1); the fp8 copies read key j at j. */
            auto tab_pos = [](int j) { return KV8 ? j : (j & 15) * C::PASSES + (j >> 4); };
            int next_slot = ntiles > 0 && tid < BN ? slot_of(my_lo * BN + tid) : 0;
            auto publish_table = [&](int it) {
                int *tab = slot_tab + ((gt + it) & 1) * BN;
                if (tid < BN) {
                    tab[tab_pos(tid)] = next_slot;
                    if (it + 1 < ntiles)
                        next_slot = slot_of((my_lo + it + 1) * BN + tid);
                }
                attn_named_barrier(3, 128);
                return (const int *)tab;
            };
            if constexpr (!KV8) {
                /* K's base at this thread's column: a row's address in K is a
                 * 32 x 32 -> 64-bit product plus that base (three SASS
                 * instructions: ptxas folds the column into the IMAD.WIDE.U32
                 * and adds the cache's base apart, in C and in PTX's mad.wide
                 * alike), in V that address plus the distance between the
                 * caches (two). */
                const uint8_t *kbase = (const uint8_t *)p.k_cache + col_bytes;
                const int64_t v_minus_k = (int64_t)((uintptr_t)p.v_cache - (uintptr_t)p.k_cache);
                for (int it = 0; it < ntiles; it++) {
                    const int st = (gt + it) % ST, use = (gt + it) / ST;
                    const int *tab = publish_table(it);
                    /* This thread's rows lr + 16 i of the tile: their addresses in
                     * K (held over the wait for V's stage), and how many of them
                     * are keys: all but in the tile that reaches K (row i is one
                     * iff 16 i < rem). */
                    const uint8_t *krow[C::PASSES];
    #pragma unroll
                    for (int i = 0; i < C::PASSES; i += 4) {
                        const int4 s4 = *(const int4 *)(tab + lr * C::PASSES + i);
                        const int s[4] = {s4.x, s4.y, s4.z, s4.w};
    #pragma unroll
                        for (int j = 0; j < 4; j++)
                            krow[i + j] = kbase + (uint64_t)(uint32_t)s[j] * row_bytes;
                    }
                    const int key0 = (my_lo + it) * BN;
                    const int rem = K - (key0 + lr);
                    const bool tail = key0 + BN > K;
                    /* Thread t copies 16-byte chunk t % 8 of every 64-column
                     * block of rows t / 8 + 16 i: 8 consecutive threads copy the
                     * 128 contiguous bytes of one row's block, and their
                     * destinations (chunk c8 ^ (r & 7) of the row) fall in 8
                     * different bank groups. Every destination is a per-thread
                     * constant plus a compile-time offset (rows 16 apart keep
                     * r & 7), and every source a row's address plus a
                     * compile-time one, so a chunk costs its cp.async and
                     * little more (bench/RESULTS.md version 33: the producer's
                     * instructions compete with the consumers' for issue). A
                     * tile of keys only (every tile but the last of a sequence)
                     * reads 16 bytes a copy with no test. The padding columns
                     * of D 80 / 96 hold the zeros written at the start. */
                    auto load = [&](uint8_t *dst, int64_t from_k, auto has_tail) {
    #pragma unroll
                        for (int i = 0; i < C::PASSES; i++) {
                            const uint8_t *src = (const uint8_t *)((uintptr_t)krow[i] + from_k);
                            const uint32_t nbytes =
                                !decltype(has_tail)::value || 16 * i < rem ? 16u : 0u;
    #pragma unroll
                            for (int b = 0; b < NB; b++)
                                if (8 * b + c8 < C::DCH) /* always at D 64, 128 */
                                    attn_cp_async16_n(dst + b * BN * 128 + i * 16 * 128 + dst_thr,
                                                      src + b * 128, nbytes);
                        }
                    };
                    auto load_tile = [&](uint8_t *dst, int64_t from_k) {
                        if (tail)
                            load(dst, from_k, std::true_type{});
                        else
                            load(dst, from_k, std::false_type{});
                    };
                    uint8_t *Ks = KV + st * C::STAGE_BYTES;
                    if (use > 0)
                        attn_mbar_wait(&kfree[st], (use - 1) & 1);
                    load_tile(Ks, 0);
                    attn_mbar_arrive_cp_async(&kfull[st]);
                    if (use > 0)
                        attn_mbar_wait(&vfree[st], (use - 1) & 1);
                    load_tile(Ks + C::TILE_BYTES, v_minus_k);
                    attn_mbar_arrive_cp_async(&vfull[st]);
                }
            } else {
                /* fp8 cache: each thread copies raw 16-byte chunks (16 keys'
                 * worth of one row) into its own slots of a raw stage, waits for
                 * its own copies, and converts exactly those chunks to f16 in the
                 * swizzled stage (cvt e4m3x2 -> f16x2, exact): no thread reads
                 * another's raw bytes, so the raw ring needs no barrier. The
                 * raw copies of tile it + 1 are in flight while tile it is
                 * converted (two raw stages; with one, they start after it).
                 * (Partly unrolled, as above, for the producer's registers.) */
                const int64_t row8 = p.kv_stride_token, head8 = job.kvh * p.kv_stride_head;
                const bool nuz = p.kv_dtype == ATTN_DTYPE_FP8_E4M3FNUZ;
                auto issue_raw = [&](int it, const int *tab) {
                    uint8_t *rb = raw + ((gt + it) % C::RING) * C::RAW_STAGE;
    #pragma unroll 4
                    for (int i = 0; i < C::RAW_LOADS; i++) {
                        const int ci = tid + 128 * i, r = ci / C::RCH, c = ci % C::RCH;
                        const int slot = tab[r];
                        const int64_t off = slot >= 0 ? slot * row8 + head8 + c * 16 : 0;
                        attn_cp_async16(rb + ci * 16, (const uint8_t *)p.k_cache + off, slot >= 0);
                        attn_cp_async16(rb + BN * D + ci * 16, (const uint8_t *)p.v_cache + off,
                                        slot >= 0);
                    }
                    attn_cp_async_commit();
                };
                auto convert = [&](int it, int part, uint8_t *dst) {
                    const uint8_t *rb = raw + ((gt + it) % C::RING) * C::RAW_STAGE + part * BN * D;
    #pragma unroll 2
                    for (int i = 0; i < C::RAW_LOADS; i++) {
                        const int ci = tid + 128 * i, r = ci / C::RCH, c = ci % C::RCH;
                        const uint4 x = *(const uint4 *)(rb + ci * 16);
                        uint32_t y[8];
                        attn_fp8x4_to_f16x4(x.x, y[0], y[1]);
                        attn_fp8x4_to_f16x4(x.y, y[2], y[3]);
                        attn_fp8x4_to_f16x4(x.z, y[4], y[5]);
                        attn_fp8x4_to_f16x4(x.w, y[6], y[7]);
                        if (nuz)
                            attn_fp8_nuz_fix(x, y);
                        *(uint4 *)(dst + attn_swz128_off(r, 2 * c, BN)) =
                            make_uint4(y[0], y[1], y[2], y[3]);
                        *(uint4 *)(dst + attn_swz128_off(r, 2 * c + 1, BN)) =
                            make_uint4(y[4], y[5], y[6], y[7]);
                    }
                };
                if (ntiles > 0)
                    issue_raw(0, publish_table(0));
                for (int it = 0; it < ntiles; it++) {
                    const int st = (gt + it) % ST, use = (gt + it) / ST;
                    const bool ahead = C::RING == 2 && it + 1 < ntiles;
                    if (ahead)
                        issue_raw(it + 1, publish_table(it + 1));
                    if (ahead)
                        attn_cp_async_wait(1); /* this thread's raw chunks of tile it */
                    else
                        attn_cp_async_wait(0);
                    uint8_t *Ks = KV + st * C::STAGE_BYTES;
                    if (use > 0)
                        attn_mbar_wait(&kfree[st], (use - 1) & 1);
                    convert(it, 0, Ks);
                    attn_fence_proxy_async(); /* ordinary stores, read by wgmma */
                    attn_mbar_arrive(&kfull[st]);
                    if (use > 0)
                        attn_mbar_wait(&vfree[st], (use - 1) & 1);
                    convert(it, 1, Ks + C::TILE_BYTES);
                    attn_fence_proxy_async();
                    attn_mbar_arrive(&vfull[st]);
                    if (C::RING == 1 && it + 1 < ntiles)
                        issue_raw(it + 1, publish_table(it + 1));
                }
            }
            /* the next item is claimed now, once this one's tiles are all
             * issued: the consumers still have the ring's tiles of it to
             * work through, which hides the claim's round trips, and an
             * item goes to the program that is about to be free for it */
            if constexpr (!DYN)
                break; /* one item: no state runs on */
            fill(n + 1);
            gt += ntiles;
        }
        attn_cp_async_wait(0);
        return;
    }

    /* ---- consumers ---- */
    attn_regs_acquire<C::CONSUMER_REGS>();
    /* The consumer warpgroup (rows 64 cw .. 64 cw + 63), broadcast from lane 0
     * so that the compiler knows it is warp-uniform (CUTLASS's
     * canonical_warp_group_idx does the same): Q's wgmma descriptors, which
     * depend on it, then live in uniform registers. Computed from threadIdx
     * directly, each of the 8 Q K^T steps a tile rebuilt its descriptor in
     * regular registers and moved it over (IADD3, IMAD.X, UMOV, 2 R2UR),
     * inside the warpgroup's wgmma turn (the SASS, bench/RESULTS.md
     * version 35). */
    const int cw = __shfl_sync(0xffffffffu, (tid >> 7) - 1, 0);
    const int ctid = tid & 127, warp = ctid >> 5, lane = tid & 31;
    const int g = lane >> 2, t = lane & 3;
    /* The pipeline's turn barrier protocol (below) and the ring's position
     * run on from item to item: gt counts the tiles of the items before. */
    int gt = 0;
    int n = next_item(0, job);
    /* q_ready: this item's Q was issued while the previous item finished */
    bool q_ready = false;
    while (n >= 0) {
        const int q0 = job.q0, t0 = job.t0, K = job.K, ctx0 = job.ctx0, ntok = job.ntok;
        const int kvh = job.kvh, hsplit = job.hsplit, my_lo = job.my_lo, ntiles = job.ntiles;

        /* Q rows of this warpgroup, zero-filled where the row or column is
         * absent (rows past the tile's tokens or the group, D padding). With an
         * fp8 cache the math is f16: a bf16 Q row is scaled by the power of two
         * that puts its largest element in [2^14, 2^15) (exact: 8 significant
         * bits fit f16's 11, and no f16 overflow), and the power comes back as
         * the row's score multiplier. */
        const bool q_scaled = KV8 && p.q_dtype == ATTN_DTYPE_BF16;
        constexpr int QI = 64 * CPR / 128; /* chunks a thread */
        static_assert(64 * CPR % 128 == 0, "Q's chunks split evenly over the warpgroup");
        auto q_chunk_of = [&](const pf_item &w, int i, int &row, int &c, int64_t &off) -> bool {
            const int idx = ctid + 128 * i;
            row = cw * 64 + idx / CPR;
            c = idx % CPR;
            const int tok = row / hpt, hg = w.hsplit * hpt + row % hpt;
            const bool ok = tok < w.ntok && hg < p.group && c < C::DCH;
            off = ok ? (int64_t)(w.q0 + w.t0 + tok) * p.q_stride_token +
                           (int64_t)(w.kvh * p.group + hg) * p.q_stride_head + c * 8
                     : 0;
            return ok;
        };
        auto q_chunk = [&](int i, int &row, int &c, int64_t &off) -> bool {
            return q_chunk_of(job, i, row, c, off);
        };
        /* Item w's rows of Q, 16-bit, unscaled, straight into the tile: by
         * cp.async where the rows allow, else loaded and stored here. */
        auto issue_q_plain = [&](const pf_item &w) {
            for (int i = 0; i < QI; i++) {
                int row, c;
                int64_t off;
                const bool ok = q_chunk_of(w, i, row, c, off);
                uint8_t *dst = Qs + attn_swz128_off(row, c, BM);
                if (KV8 && c == 0)
                    rowmul[row] = 1.f;
                if (p.q_vec16)
                    attn_cp_async16(dst, (const uint16_t *)p.q + off, ok);
                else
                    *(uint4 *)dst = ok ? attn_load_16bit8((const uint16_t *)p.q + off, false)
                                       : make_uint4(0u, 0u, 0u, 0u);
            }
        };
        if (q_scaled) {
            /* Every chunk's global read is issued before the first conversion
             * (read-convert-store chunk by chunk waited out one round trip a
             * chunk; the decode kernel's Q, bench/RESULTS.md version 22). */
            uint4 qv[QI];
#pragma unroll
            for (int i = 0; i < QI; i++) {
                int row, c;
                int64_t off;
                const bool ok = q_chunk(i, row, c, off);
                qv[i] = ok ? attn_load_16bit8((const uint16_t *)p.q + off, p.q_vec16)
                           : make_uint4(0u, 0u, 0u, 0u);
            }
#pragma unroll
            for (int i = 0; i < QI; i++) {
                int row, c;
                int64_t off;
                (void)q_chunk(i, row, c, off);
                const uint32_t w4[4] = {qv[i].x, qv[i].y, qv[i].z, qv[i].w};
                float v[8];
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    v[2 * k] = attn_bf16_to_f32(w4[k] & 0xFFFFu);
                    v[2 * k + 1] = attn_bf16_to_f32(w4[k] >> 16);
                }
                float mx = 0.f;
#pragma unroll
                for (int k = 0; k < 8; k++)
                    mx = fmaxf(mx, fabsf(v[k]));
                /* the row's CPR chunks are CPR consecutive lanes */
#pragma unroll
                for (int m = 1; m < CPR; m <<= 1)
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, m));
                uint32_t h[4];
                const int sh = attn_q_to_f16_scaled(v, mx, h);
                *(uint4 *)(Qs + attn_swz128_off(row, c, BM)) = make_uint4(h[0], h[1], h[2], h[3]);
                if (c == 0)
                    rowmul[row] = attn_mul_pow2(1.f, -sh);
            }
        } else if (!q_ready) {
            issue_q_plain(job);
        }
        attn_cp_async_commit();
        /* The next item is read when this one's last S has landed (or at
         * its end): the producer claims it only after issuing this item's
         * last tile. */
        pf_item nxt;
        int n_next = -2; /* -2: not read yet */
        auto read_next = [&]() {
            if (n_next == -2)
                n_next = next_item(n + 1, nxt);
        };
        attn_cp_async_wait(0);
        attn_fence_proxy_async();
        attn_named_barrier(1 + cw, 128);
        /* Once this item's last S has landed, its Q rows are free: the next
         * item's go out then (cp.async rows only; the scaled fp8-cache rows
         * are converted in registers at the item's start). */
        bool q_next = false;
        auto prefetch_next_q = [&]() {
            if constexpr (!DYN)
                return;
            read_next();
            if (q_scaled || !p.q_vec16 || n_next < 0)
                return;
            attn_named_barrier(1 + cw, 128); /* every warp is past its reads of Q */
            issue_q_plain(nxt);
            attn_cp_async_commit();
            q_next = true;
        };

        /* This thread's two rows (g and g + 8 of its warp's 16), and the keys
         * each sees as one interval [lo, hi] (causal, window, the sequence's K):
         * a key is visible iff lo <= key <= hi. */
        const int r0 = cw * 64 + warp * 16 + g, r1 = r0 + 8;
        const int tok0 = r0 / hpt, tok1 = r1 / hpt;
        const int hg0 = hsplit * hpt + r0 % hpt, hg1 = hsplit * hpt + r1 % hpt;
        const bool ok0 = tok0 < ntok && hg0 < p.group, ok1 = tok1 < ntok && hg1 < p.group;
        auto key_hi = [&](int pos) {
            int hi = K - 1;
            if (p.causal)
                hi = min(hi, pos);
            if (p.window_right >= 0)
                hi = min(hi, pos + p.window_right);
            return hi;
        };
        auto key_lo = [&](int pos) { return p.window_left >= 0 ? pos - p.window_left : 0; };
        const int pos0 = ctx0 + t0 + tok0, pos1 = ctx0 + t0 + tok1;
        const int lo0 = key_lo(pos0), hi0 = key_hi(pos0), lo1 = key_lo(pos1), hi1 = key_hi(pos1);
        /* A tile with every key visible to every row of the warpgroup skips the
         * masks: keys [all_lo, all_hi] (from its first and last token). */
        const int wpos_lo = ctx0 + t0 + (cw * 64) / hpt;
        const int wpos_hi = ctx0 + t0 + min(ntok - 1, (cw * 64 + 63) / hpt);
        const int all_lo = key_lo(wpos_hi), all_hi = key_hi(wpos_lo);
        const float mul = SOFTCAP ? p.score_scale / p.softcap : p.score_scale * ATTN_LOG2E;
        /* per row: the Q row's power of two (fp8 cache, bf16 Q) */
        const float mul0 = KV8 ? mul * rowmul[r0] : mul, mul1 = KV8 ? mul * rowmul[r1] : mul;
        const float capl2 = p.softcap * ATTN_LOG2E;

        float o[DP / 2];
#pragma unroll
        for (int i = 0; i < DP / 2; i++)
            o[i] = 0.f;
        float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
        float sacc[BN / 2];
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            sacc[i] = 0.f;
        uint32_t pa[BN / 16][4];
        const uint64_t dq = attn_wgmma_desc(attn_smem_addr(Qs) + cw * 64 * 128, 16);
        auto stage_addr = [&](int it) { return attn_smem_addr(KV + ((gt + it) % ST) * C::STAGE_BYTES); };

        /* S = Q K^T of tile it: DP/16 k16 steps; step kk reads 16 columns of
         * 64-column block kk / 4 (32 bytes into each 128-byte row; the hardware
         * applies the swizzle to the final address). */
        auto issue_s = [&](int it) {
            const uint64_t dk = attn_wgmma_desc(stage_addr(it), 16);
#pragma unroll
            for (int kk = 0; kk < DP / 16; kk++)
                attn_wgmma<BN, BF16>::ss(sacc, dq + (((kk >> 2) * BM * 128 + (kk & 3) * 32) >> 4),
                                         dk + (((kk >> 2) * BN * 128 + (kk & 3) * 32) >> 4), kk > 0);
            attn_wgmma_commit();
        };
        /* O += P V of tile it: BN/16 k16 steps of 16 keys (2048 bytes of V). */
        auto issue_pv = [&](int it) {
            const uint64_t dv = attn_wgmma_desc(stage_addr(it) + C::TILE_BYTES, BN * 128);
#pragma unroll
            for (int kc = 0; kc < BN / 16; kc++)
                attn_wgmma<DP, BF16>::rs_tb(o, pa[kc], dv + ((kc * 16 * 128) >> 4));
            attn_wgmma_commit();
        };
        auto pin_pv = [&]() {
            attn_reg_fence(o);
#pragma unroll
            for (int kc = 0; kc < BN / 16; kc++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    attn_reg_fence(pa[kc][e]);
        };
        /* The online softmax of tile it on sacc, in place: scores in log2 units,
         * masks only where the tile cuts some row's interval, the new row maxima
         * and sums; returns the rescale factors of the old accumulators. Column n
         * of n8 tile j is key kb + 8j + n; this thread holds columns 2t, 2t + 1
         * of rows r0 (e = 0, 1) and r1 (e = 2, 3). */
        auto softmax = [&](int it, float &al0, float &al1) {
            const int kb = (my_lo + it) * BN;
            const bool full = kb >= all_lo && kb + BN - 1 <= all_hi;
            /* Without a softcap the scores stay raw until the exponent (max of
             * raw scores, then 2^(s mul - max mul) as one FFMA; mul > 0, the
             * launcher's condition); with one, they become log2 units first. */
            if constexpr (SOFTCAP) {
#pragma unroll
                for (int j = 0; j < BN / 8; j++)
#pragma unroll
                    for (int b = 0; b < 2; b++) {
                        sacc[4 * j + b] = capl2 * tanhf(sacc[4 * j + b] * mul0);
                        sacc[4 * j + 2 + b] = capl2 * tanhf(sacc[4 * j + 2 + b] * mul1);
                    }
            }
            /* The masks as one block under one uniform branch: tested element by
             * element inside the loop, the test became selects that every tile
             * ran, cut or not (132 ISETP and 66 FSEL of a consumer warp's 724
             * instructions a tile at 8192 tokens, on the ALU pipe, the busiest:
             * Nsight Compute source counters, bench/RESULTS.md version 24). */
            if (!full) {
#pragma unroll
                for (int j = 0; j < BN / 8; j++)
#pragma unroll
                    for (int b = 0; b < 2; b++) {
                        const int key = kb + 8 * j + 2 * t + b;
                        if (key < lo0 || key > hi0)
                            sacc[4 * j + b] = -INFINITY;
                        if (key < lo1 || key > hi1)
                            sacc[4 * j + 2 + b] = -INFINITY;
                    }
            }
            /* Row maxima in four independent chains (not one chain of BN / 4
             * dependent operations), then over the 4 lanes of the row. Each
             * chain starts from its first pair: started from -inf, every chain
             * paid one more FMNMX (the compiler cannot drop max(-inf, x), which
             * differs from x for a NaN). */
            static_assert(BN % 32 == 0, "four chains of whole n8 tiles");
            float mx[2][4];
#pragma unroll
            for (int j = 0; j < BN / 8; j++) {
                const float a = fmaxf(sacc[4 * j], sacc[4 * j + 1]);
                const float b = fmaxf(sacc[4 * j + 2], sacc[4 * j + 3]);
                mx[0][j & 3] = j < 4 ? a : fmaxf(mx[0][j & 3], a);
                mx[1][j & 3] = j < 4 ? b : fmaxf(mx[1][j & 3], b);
            }
            float mx0 = fmaxf(fmaxf(mx[0][0], mx[0][1]), fmaxf(mx[0][2], mx[0][3]));
            float mx1 = fmaxf(fmaxf(mx[1][0], mx[1][1]), fmaxf(mx[1][2], mx[1][3]));
            /* score -> log2 units in the exponent */
            const float sc0 = SOFTCAP ? 1.f : mul0, sc1 = SOFTCAP ? 1.f : mul1;
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
            mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
            mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
            /* The running maximum moves only past the slack
             * (attn_running_max): moved on every rise, it cost an O rescale
             * (64 FMUL a thread) on ~60 % of the tiles at 8192 tokens. */
            const float mn0 = attn_running_max(m0, mx0 * sc0);
            const float mn1 = attn_running_max(m1, mx1 * sc1);
            /* (a row that has seen no key yet keeps -inf: subtract 0 instead) */
            const float mu0 = mn0 == -INFINITY ? 0.f : mn0, mu1 = mn1 == -INFINITY ? 0.f : mn1;
            al0 = attn_exp2_ftz(m0 - mu0);
            al1 = attn_exp2_ftz(m1 - mu1);
            m0 = mn0;
            m1 = mn1;
            /* the sums' chains start from their first pair too (0 + x is not
             * x for x = -0, so a 0 start cost an FADD a chain) */
            float ps[2][4];
#pragma unroll
            for (int j = 0; j < BN / 8; j++) {
                sacc[4 * j + 0] = attn_exp2_ftz(fmaf(sacc[4 * j + 0], sc0, -mu0));
                sacc[4 * j + 1] = attn_exp2_ftz(fmaf(sacc[4 * j + 1], sc0, -mu0));
                sacc[4 * j + 2] = attn_exp2_ftz(fmaf(sacc[4 * j + 2], sc1, -mu1));
                sacc[4 * j + 3] = attn_exp2_ftz(fmaf(sacc[4 * j + 3], sc1, -mu1));
                const float a = sacc[4 * j + 0] + sacc[4 * j + 1];
                const float b = sacc[4 * j + 2] + sacc[4 * j + 3];
                ps[0][j & 3] = j < 4 ? a : ps[0][j & 3] + a;
                ps[1][j & 3] = j < 4 ? b : ps[1][j & 3] + b;
            }
            l0 = l0 * al0 + ((ps[0][0] + ps[0][1]) + (ps[0][2] + ps[0][3]));
            l1 = l1 * al1 + ((ps[1][0] + ps[1][1]) + (ps[1][2] + ps[1][3]));
        };
        /* P: the C fragments of n8 tiles 2kc, 2kc + 1 (keys 16kc..16kc+15) are
         * the A fragment of k16 step kc. */
        auto pack_p = [&]() {
#pragma unroll
            for (int kc = 0; kc < BN / 16; kc++) {
                pa[kc][0] = attn_pack2<BF16>(sacc[8 * kc + 0], sacc[8 * kc + 1]);
                pa[kc][1] = attn_pack2<BF16>(sacc[8 * kc + 2], sacc[8 * kc + 3]);
                pa[kc][2] = attn_pack2<BF16>(sacc[8 * kc + 4], sacc[8 * kc + 5]);
                pa[kc][3] = attn_pack2<BF16>(sacc[8 * kc + 6], sacc[8 * kc + 7]);
            }
        };

        /* The pipeline of one warpgroup: tile it's S is issued together with the
         * previous tile's P V, and the softmax of tile it runs while that P V is
         * still on the matrix units (wgmma groups retire in order: S first, then
         * P V). The softmax needs only the old row maxima; the rescale of O by
         * its factors waits for P V to land. */
        /* Turns (FlashAttention-3's ping-pong): the two consumer warpgroups issue
         * their wgmma alternately, through named barriers 4 (warpgroup 0's turn)
         * and 5, so that one's softmax runs while the other's matrix work does.
         * A warpgroup has ntiles + 1 issue phases; warpgroup 1 opens warpgroup
         * 0's first turn and leaves its own last one unanswered, so every arrival
         * has its wait. */
        const int phases = ntiles > 0 ? ntiles + 1 : 0;
        int phase = 0;
        auto turn_begin = [&]() {
            if constexpr (C::PINGPONG)
                attn_named_barrier(4 + cw, 256);
        };
        auto turn_end = [&]() {
            if constexpr (C::PINGPONG)
                if (!(cw == 1 && phase == phases - 1))
                    attn_named_arrive(4 + (cw ^ 1), 256);
            phase++;
        };
        if (C::PINGPONG && cw == 1 && phases > 0)
            attn_named_arrive(4, 256);

        if (ntiles > 0) {
            attn_mbar_wait(&kfull[gt % ST], (gt / ST) & 1);
            attn_fence_proxy_async(); /* cp.async wrote K; wgmma reads it */
            turn_begin();
            attn_wgmma_fence();
            issue_s(0);
            turn_end();
            attn_wgmma_wait<0>();
            attn_reg_fence(sacc);
            if (ntiles == 1)
                prefetch_next_q();
            attn_mbar_arrive(&kfree[gt % ST]);
            float al0, al1;
            softmax(0, al0, al1);
            pack_p();
        }
        for (int it = 1; it < ntiles; it++) {
            attn_mbar_wait(&kfull[(gt + it) % ST], ((gt + it) / ST) & 1);
            attn_mbar_wait(&vfull[(gt + it - 1) % ST], ((gt + it - 1) / ST) & 1);
            attn_fence_proxy_async();
            turn_begin();
            attn_wgmma_fence();
            issue_s(it);
            issue_pv(it - 1);
            turn_end();
            attn_wgmma_wait<1>(); /* S of tile it */
            attn_reg_fence(sacc);
            if (it == ntiles - 1)
                prefetch_next_q();
            attn_mbar_arrive(&kfree[(gt + it) % ST]);
            float al0, al1;
            softmax(it, al0, al1);
            attn_wgmma_wait<0>(); /* P V of tile it - 1 */
            pin_pv();
            attn_mbar_arrive(&vfree[(gt + it - 1) % ST]);
            /* Rescale O only when some row's maximum moved (after the first
             * tiles of a row it rarely does). */
            if (__any_sync(0xffffffffu, al0 != 1.f || al1 != 1.f)) {
#pragma unroll
                for (int j = 0; j < DP / 8; j++) {
                    o[4 * j + 0] *= al0;
                    o[4 * j + 1] *= al0;
                    o[4 * j + 2] *= al1;
                    o[4 * j + 3] *= al1;
                }
            }
            pack_p();
        }
        if (ntiles > 0) {
            attn_mbar_wait(&vfull[(gt + ntiles - 1) % ST], ((gt + ntiles - 1) / ST) & 1);
            attn_fence_proxy_async();
            turn_begin();
            attn_wgmma_fence();
            issue_pv(ntiles - 1);
            turn_end();
            attn_wgmma_wait<0>();
            pin_pv();
            /* the producer refills this stage with the next item's tiles */
            if constexpr (DYN)
                attn_mbar_arrive(&vfree[(gt + ntiles - 1) % ST]);
        }

        if (ntiles == 0)
            prefetch_next_q();

        /* Row sums over the 4 lanes of a row. */
        l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
        l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
        l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
        l1 += __shfl_xor_sync(0xffffffffu, l1, 2);

        const int head0 = kvh * p.group + hg0, head1 = kvh * p.group + hg1;
        const int token0 = q0 + t0 + tok0, token1 = q0 + t0 + tok1;
        /* This thread's part of its two rows, scaled by s0 and s1: the two
         * adjacent columns 8j + 2t, 8j + 2t + 1 of each n8 tile j, handed to
         * `put` as a pair at element index b + 8j + 2t of its row's base b. */
        auto row_pairs = [&](int64_t b0, int64_t b1, float s0, float s1, auto put) {
#pragma unroll
            for (int j = 0; j < D / 8; j++) {
                if (ok0)
                    put(b0 + 8 * j + 2 * t, o[4 * j + 0] * s0, o[4 * j + 1] * s0);
                if (ok1)
                    put(b1 + 8 * j + 2 * t, o[4 * j + 2] * s1, o[4 * j + 3] * s1);
            }
        };
        if (!p.partials) {
            /* A row without visible keys writes zeros. */
            const float inv0 = ok0 ? attn_row_inverse(m0, l0, p.sinks, head0, p.v_scale) : 0.f;
            const float inv1 = ok1 ? attn_row_inverse(m1, l1, p.sinks, head1, p.v_scale) : 0.f;
            const int64_t ob0 = (int64_t)token0 * p.out_stride_token + (int64_t)head0 * p.out_stride_head;
            const int64_t ob1 = (int64_t)token1 * p.out_stride_token + (int64_t)head1 * p.out_stride_head;
            /* pairs in one store each, the output type chosen once (as long
             * as 2-3 key tiles element by element, version 19) */
            attn_store_out_pairs(p, [&](auto put) { row_pairs(ob0, ob1, inv0, inv1, put); });
        } else {
            /* A segment's partial, in the layout attn_reduce_kernel reads; a
             * row without keys in this segment writes (-inf, 0). */
            const int64_t i0 = ((int64_t)seg * p.num_tokens + token0) * p.hq + head0;
            const int64_t i1 = ((int64_t)seg * p.num_tokens + token1) * p.hq + head1;
            if (ok0 && t == 0) {
                p.ws_ml[2 * i0] = m0;
                p.ws_ml[2 * i0 + 1] = l0;
            }
            if (ok1 && t == 0) {
                p.ws_ml[2 * i1] = m1;
                p.ws_ml[2 * i1 + 1] = l1;
            }
            row_pairs(i0 * D, i1 * D, 1.f, 1.f, [&](int64_t i, float a, float b) {
                *(float2 *)(p.ws_acc + i) = make_float2(a, b);
            });
        }
        if constexpr (!DYN)
            break; /* one item: no state runs on */
        gt += ntiles;
        read_next();
        n = n_next;
        job = nxt;
        q_ready = q_next;
    }
#else
    (void)p;
#endif
}

/* One launch of one grid of the kernel. */
template <int D, bool BF16, bool SOFTCAP, bool KV8, bool DYN>
static hipError_t launch_prefill_g(const attn_kparams *p, dim3 grid, hipStream_t stream)
{
    using C = prefill_cfg<D, KV8>;
    /* more than 48 KB of shared memory (see the generic launcher) */
    const hipError_t e = attn_func_opt_in(
        (const void *)attn_prefill_kernel<D, BF16, SOFTCAP, KV8, DYN>, C::SMEM, -1);
    if (e != hipSuccess)
        return e;
    attn_prefill_kernel<D, BF16, SOFTCAP, KV8, DYN><<<grid, C::THREADS, C::SMEM, stream>>>(*p);
    return hipGetLastError();
}

/* The dynamic grid where the launcher gave it counters (p->prefill_programs
 * programs a segment), else one program an item; then the reduce where the
 * launch writes partials. */
template <int D, bool BF16, bool SOFTCAP, bool KV8>
static hipError_t launch_prefill_t(const attn_kparams *p, hipStream_t stream)
{
    const hipError_t e =
        p->counters
            ? launch_prefill_g<D, BF16, SOFTCAP, KV8, true>(
                  p, dim3((unsigned)p->prefill_programs, 1, p->nseg), stream)
            : launch_prefill_g<D, BF16, SOFTCAP, KV8, false>(
                  p,
                  dim3(p->num_tokens / p->block_q + p->num_seqs, p->hkv * p->head_splits,
                       p->nseg),
                  stream);
    if (e != hipSuccess || !p->partials)
        return e;
    return attn_launch_reduce(p, p->nseg, stream);
}

/* Instantiated per head size, input type, softcap (the tanh of a softcap is
 * long code: kernels without it should not carry it) and cache type (fp8:
 * f16 math, every head size but 192). */
template <bool BF16, bool SOFTCAP, bool KV8>
static hipError_t launch_prefill_d(const attn_kparams *p, hipStream_t stream)
{
    return attn_dispatch_head_dim(p->d, [&](auto d) {
        constexpr int D = decltype(d)::value;
        if constexpr (KV8 && D == 192)
            return hipErrorInvalidValue; /* the plan never takes D 192 over fp8 here */
        else
            return launch_prefill_t<D, BF16, SOFTCAP, KV8>(p, stream);
    });
}

#endif /* ATTN_PLATFORM_CUDA */

hipError_t attn_launch_prefill(const attn_kparams *p, hipStream_t stream)
{
#if defined(ATTN_PLATFORM_CUDA)
    const bool softcap = p->softcap > 0.f;
    if (attn_dtype_is_fp8(p->kv_dtype)) {
        /* The kernel decodes both e4m3 formats with the e4m3fn instruction;
         * an e4m3fnuz code is worth half its e4m3fn reading (exponent bias 8,
         * not 7), which the descales absorb exactly (the codes the formats
         * read differently are fixed in the kernel). */
        attn_kparams q = *p;
        if (p->kv_dtype == ATTN_DTYPE_FP8_E4M3FNUZ) {
            q.score_scale *= 0.5f;
            q.v_scale *= 0.5f;
        }
        return softcap ? launch_prefill_d<false, true, true>(&q, stream)
                       : launch_prefill_d<false, false, true>(&q, stream);
    }
    const bool bf16 = p->q_dtype == ATTN_DTYPE_BF16;
    return bf16 ? (softcap ? launch_prefill_d<true, true, false>(p, stream)
                           : launch_prefill_d<true, false, false>(p, stream))
                : (softcap ? launch_prefill_d<false, true, false>(p, stream)
                           : launch_prefill_d<false, false, false>(p, stream));
#else
    (void)p;
    (void)stream;
    return hipErrorInvalidValue;
#endif
}


/* Programs of this kernel one multiprocessor holds at once, for head size d
 * (kv8: an fp8 cache): its shared memory (the plan's bytes, the dynamic
 * grid's item ring, the runtime's reserve a block), its threads and its
 * registers (the setmaxnreg split: 56 a producer thread, 224 a consumer
 * thread). One for every plan (146-232 KB of the 228 KB an H100/H200 SM
 * has); the one-wave rule of the prefill family counts with it. */
int attn_prefill_programs_per_cu(const hipDeviceProp_t *prop, int d, int kv8)
{
#if defined(ATTN_PLATFORM_CUDA)
    using C = prefill_cfg<128>;
    const attn_prefill_layout l = attn_launch_plan_prefill_layout(d, kv8);
    const long smem = (long)l.bytes + ATTN_PF_RING_BYTES + (long)prop->reservedSharedMemPerBlock;
    const long regs = 128L * C::PRODUCER_REGS + 256L * C::CONSUMER_REGS;
    long n = (long)prop->sharedMemPerMultiprocessor / smem;
    if (n > prop->maxThreadsPerMultiProcessor / l.threads)
        n = prop->maxThreadsPerMultiProcessor / l.threads;
    if (n > prop->regsPerMultiprocessor / regs)
        n = prop->regsPerMultiprocessor / regs;
    return n < 1 ? 1 : (int)n;
#else
    (void)prop;
    (void)d;
    (void)kv8;
    return 1;
#endif
}
