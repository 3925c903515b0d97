/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu_attn_bench — kernel throughput of aiter-generic and aiter-mtp on the
 * device.
 *
 * Shapes:
 *   MTP:    16 query heads : 1 KV head, D 256, page 16, bf16 Q, fp8 e4m3fn KV,
 *           q_len 2 and 4, kv_len 1k/4k/16k, batch 1/8/32/64; both kernels.
 *   decode: 32 : 8 heads, D 128, page 16, bf16 Q/KV, q_len 1,
 *           kv_len 1k/4k/8k/16k, batch 1/8/32/64; generic kernel.
 *   decode-fp8: the same shapes over an e4m3fn cache (bf16 Q).
 * Method:
 *   - a device-to-device copy of 1 GiB, timed the same way, gives the copy
 *     bandwidth (bytes read + bytes written) of this run;
 *   - every configuration owns enough KV sets (block tables over disjoint
 *     blocks of one large cache) that together they are >= 4x the L2, and
 *     successive calls rotate through them, so L2 does not serve the KV;
 *   - 20 forward calls (rotating sets) are captured in one graph, so launch
 *     gaps stay out; after 3 warm-up replays, 15 replays are timed with
 *     device events and the median replay / 20 is the time of one call;
 *   - bytes = what must move at least: K and V of every visible key once, Q
 *     read, output written; GB/s = bytes / time; "of copy" = GB/s / copy GB/s.
 *
 *   prefill: 32:8 D 128 at 512/2048/8192 tokens x batch 1/4,
 *           32:8 and 16:1 D 256 at 2048 x 1/4, chunked prefill (512 new over
 *           4096 and 16384 cached, batch 4), a mixed batch (4 chunks of 512
 *           + 64 decode tokens over 4096) beside its two parts run alone;
 *           TFLOP/s over the visible (causal) pairs.
 *   usage: gpu_attn_bench [--decode-only | --mtp-only | --prefill-only] [out.json]
 *   --decode-only: only the plain-decode shapes (a short run for tuning).
 *   --mtp-only: only the MTP kernel on the MTP shapes (no generic, no decode).
 *   Environment (tuning runs): ATTNREG_BENCH_NSEG=N forces N key segments
 *   (gpu_attn_force_segments), ATTNREG_BENCH_PDL=0 launches the reduce
 *   plainly (gpu_attn_force_pdl), ATTNREG_BENCH_REDUCE_ROWS=0 merges every
 *   segment count with the per-row reduce (gpu_attn_force_reduce_rows),
 *   ATTNREG_BENCH_L2_FETCH=B sets the device's L2 fetch granularity hint,
 *   ATTNREG_BENCH_KV_SETS=N rotates N KV sets (1: a shape that fits the L2
 *   is served from it),
 *   ATTNREG_BENCH_PDL_MAIN=0 launches the decode-mma and MTP kernels plainly
 *   (gpu_attn_force_pdl_main; default: programmatic dependents where capable),
 *   ATTNREG_BENCH_PERSIST=0 runs the prefill kernel one program an item for
 *   every launch, =1 on its dynamic grid for every launch (unset: the
 *   one-wave rule; gpu_attn_force_prefill_persistent),
 *   ATTNREG_MTP_WGMMA picks the MTP variant, ATTNREG_MTP_PAIR=0|1 its pair form (gpu_attn_force_mtp_pair),
 *   ATTNREG_BENCH_DMMA_CARVEOUT / _TARGET tune the decode-mma kernel.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpu_attn.h"
#include "hip_compat.h"

#define CHECK_HIP(x)                                                                             \
    do {                                                                                         \
        hipError_t e_ = (x);                                                                     \
        if (e_ != hipSuccess) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_));   \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

/* Fill with valid, non-zero values: fp8 codes other than NaN (0x7F/0xFF),
 * or bf16 values in (-1, 1). */
__global__ void fill_kernel(uint8_t *p, size_t n, int fp8, uint32_t seed)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        if (fp8) {
            uint32_t code = h % 0x70u; /* |x| < 2^7: no NaN, no overflow in products */
            p[i] = (uint8_t)(code | (h & 0x80u));
        } else if ((i & 1) == 0 && i + 1 < n) {
            float f = ((h >> 8) * (1.0f / 16777216.0f)) * 2.f - 1.f;
            uint32_t u = __float_as_uint(f);
            p[i] = (uint8_t)(u >> 16);
            p[i + 1] = (uint8_t)(u >> 24);
        }
    }
}

static const size_t L2_BYTES = 60u << 20;

struct Result {
    std::string family;
    int kernel; /* 0 generic, 1 mtp */
    int q_len, kv_len, batch, nseg, sets;
    double us, bytes, gbs, frac, tflops;
    int hq = 0, hkv = 0, d = 0;
    std::string path; /* which kernel ran: "prefill" (matrix units) or "scalar"; "" otherwise */
    std::string label;
};

static hipStream_t stream;
static double copy_gbs = 0;
/* The next run_batch's cache layout and LSE output: 0 the contiguous
 * [blocks, page, Hkv, D], 2 HND [blocks, Hkv, page, D] (by strides); lse: the
 * log-sum-exp written too (the partials' path). */
static int g_layout = 0, g_lse = 0;

/* Median time of one call of `fn`, graph-captured `per_graph` times. */
template <class F>
static double time_calls(F fn, int per_graph, bool *used_graph)
{
    hipEvent_t a, b;
    CHECK_HIP(hipEventCreate(&a));
    CHECK_HIP(hipEventCreate(&b));
    for (int i = 0; i < 2; i++)
        fn(i); /* warm-up outside the graph: module load, attribute calls */
    CHECK_HIP(hipStreamSynchronize(stream));
    hipGraph_t graph;
    hipGraphExec_t exec;
    bool graph_ok = false;
    if (hipStreamBeginCapture(stream, hipStreamCaptureModeGlobal) == hipSuccess) {
        for (int i = 0; i < per_graph; i++)
            fn(i);
        if (hipStreamEndCapture(stream, &graph) == hipSuccess &&
            hipGraphInstantiate(&exec, graph, NULL, NULL, 0) == hipSuccess)
            graph_ok = true;
    }
    (void)hipGetLastError();
    *used_graph = graph_ok;
    std::vector<double> t;
    for (int r = 0; r < 18; r++) {
        CHECK_HIP(hipEventRecord(a, stream));
        if (graph_ok)
            CHECK_HIP(hipGraphLaunch(exec, stream));
        else
            for (int i = 0; i < per_graph; i++)
                fn(i);
        CHECK_HIP(hipEventRecord(b, stream));
        CHECK_HIP(hipEventSynchronize(b));
        float ms = 0;
        CHECK_HIP(hipEventElapsedTime(&ms, a, b));
        if (r >= 3)
            t.push_back(ms * 1000.0 / per_graph);
    }
    if (graph_ok) {
        hipGraphExecDestroy(exec);
        hipGraphDestroy(graph);
    }
    hipEventDestroy(a);
    hipEventDestroy(b);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/* A plain copy kernel: 16-byte loads and stores, grid-stride. */
__global__ void copy_kernel(const uint4 *__restrict__ src, uint4 *__restrict__ dst, size_t n16)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (; i < n16; i += stride)
        dst[i] = src[i];
}

/* A read-only stream: 16-byte loads, folded so the compiler keeps them. */
__global__ void read_kernel(const uint4 *__restrict__ src, size_t n16, uint32_t *sink)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t stride = (size_t)gridDim.x * blockDim.x;
    uint32_t x = 0;
    for (; i < n16; i += stride) {
        uint4 v = src[i];
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9E3779B9u)
        *sink = x;
}

static double memcpy_gbs = 0, kernel_copy_gbs = 0, read_gbs = 0;

/* Copy bandwidth of this run (bytes read + bytes written), the better of
 * the runtime's device-to-device memcpy and a copy kernel: the denominator
 * of every "% of copy" figure, so the larger one is the honest choice. */
static double measure_copy(void)
{
    size_t n = 1u << 30;
    void *src, *dst;
    CHECK_HIP(hipMalloc(&src, n));
    CHECK_HIP(hipMalloc(&dst, n));
    CHECK_HIP(hipMemset(src, 1, n));
    bool g;
    double us = time_calls([&](int) { CHECK_HIP(hipMemcpyAsync(dst, src, n, hipMemcpyDeviceToDevice, stream)); }, 4, &g);
    memcpy_gbs = 2.0 * n / (us * 1e-6) / 1e9;
    us = time_calls([&](int) { copy_kernel<<<132 * 16, 256, 0, stream>>>((const uint4 *)src, (uint4 *)dst, n / 16); }, 4, &g);
    kernel_copy_gbs = 2.0 * n / (us * 1e-6) / 1e9;
    us = time_calls([&](int) { read_kernel<<<132 * 16, 256, 0, stream>>>((const uint4 *)src, n / 16, (uint32_t *)dst); }, 4, &g);
    read_gbs = (double)n / (us * 1e-6) / 1e9;
    hipFree(src);
    hipFree(dst);
    return std::max(memcpy_gbs, kernel_copy_gbs);
}

/* One batch on one kernel: sequence s has qlens[s] new tokens and klens[s]
 * keys (new tokens included). scalar: send multi-token batches to the
 * portable generic kernel instead of the prefill kernel. */
static Result run_batch(const char *family, gpu_attn_kernel kernel, int hq, int hkv, int D,
                        int kv_dtype, const std::vector<int> &qlens, const std::vector<int> &klens,
                        uint8_t *cache_k, uint8_t *cache_v, size_t cache_bytes, bool scalar = false)
{
    const int page = 16;
    const size_t kvb = kv_dtype == ATTN_DTYPE_BF16 ? 2 : 1;
    const int batch = (int)qlens.size();
    int kv_len = 0, q_len = 0;
    for (int s = 0; s < batch; s++) {
        kv_len = std::max(kv_len, klens[s]);
        q_len = std::max(q_len, qlens[s]);
    }
    const int nb = (kv_len + page - 1) / page;
    const size_t block_bytes = (size_t)page * hkv * D * kvb;
    const size_t set_bytes = (size_t)batch * nb * block_bytes * 2; /* K and V */
    const int max_blocks = (int)(cache_bytes / block_bytes);
    int sets = (int)std::max<size_t>(2, (4 * L2_BYTES + set_bytes - 1) / set_bytes);
    /* ATTNREG_BENCH_KV_SETS=N: N sets instead (a diagnosis, not the
     * default: with 1 set a shape smaller than the L2 is served from it, so
     * a kernel whose loop streams at the memory's rate on this card can be
     * judged where memory is faster, e.g. the MTP loop of an H200 on an
     * H100). */
    if (const char *ks = getenv("ATTNREG_BENCH_KV_SETS"))
        sets = std::max(1, atoi(ks));
    sets = std::min(sets, max_blocks / (batch * nb));
    if (sets < 1) {
        fprintf(stderr, "cache too small\n");
        exit(1);
    }
    std::vector<int> cu(batch + 1, 0), sk(klens);
    for (int s = 0; s < batch; s++)
        cu[s + 1] = cu[s] + qlens[s];
    const int T = cu[batch];
    /* Block tables: set s owns blocks [s*batch*nb, (s+1)*batch*nb), shuffled. */
    std::vector<int> bt((size_t)sets * batch * nb);
    for (size_t i = 0; i < bt.size(); i++)
        bt[i] = (int)i;
    uint64_t x = 12345;
    /* ATTNREG_BENCH_LINEAR_BLOCKS=1: every sequence's blocks in order (a
     * diagnosis of how much the scattered pages cost; not the default). */
    const char *lin = getenv("ATTNREG_BENCH_LINEAR_BLOCKS");
    const bool shuffle = !(lin && strcmp(lin, "1") == 0);
    for (size_t i = bt.size() - 1; shuffle && i > 0; i--) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t j = (size_t)(x >> 33) % (i + 1);
        /* shuffle within a set only, so sets stay disjoint */
        size_t set = i / ((size_t)batch * nb), lo = set * batch * nb;
        j = lo + j % (i - lo + 1);
        std::swap(bt[i], bt[j]);
    }
    int *dbt, *dcu, *dsk;
    void *dq, *dout, *dws = NULL;
    CHECK_HIP(hipMalloc((void **)&dbt, bt.size() * 4));
    CHECK_HIP(hipMalloc((void **)&dcu, cu.size() * 4));
    CHECK_HIP(hipMalloc((void **)&dsk, sk.size() * 4));
    CHECK_HIP(hipMemcpy(dbt, bt.data(), bt.size() * 4, hipMemcpyHostToDevice));
    CHECK_HIP(hipMemcpy(dcu, cu.data(), cu.size() * 4, hipMemcpyHostToDevice));
    CHECK_HIP(hipMemcpy(dsk, sk.data(), sk.size() * 4, hipMemcpyHostToDevice));
    CHECK_HIP(hipMalloc(&dq, (size_t)T * hq * D * 2));
    CHECK_HIP(hipMalloc(&dout, (size_t)T * hq * D * 2));
    fill_kernel<<<1024, 256, 0, stream>>>((uint8_t *)dq, (size_t)T * hq * D * 2, 0, 7);

    attn_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.struct_size = sizeof sh;
    strcpy(sh.arch, "sm_90");
    sh.num_q_heads = hq;
    sh.num_kv_heads = hkv;
    sh.head_dim = D;
    sh.head_dim_v = D;
    sh.q_dtype = ATTN_DTYPE_BF16;
    sh.kv_dtype = kv_dtype;
    sh.compute_dtype = ATTN_DTYPE_BF16;
    sh.out_dtype = ATTN_DTYPE_BF16;
    sh.page_size = page;
    sh.max_q_len = q_len;
    sh.max_kv_len = kv_len;
    sh.causal = 1;
    sh.window_left = sh.window_right = -1;
    sh.return_lse = g_lse;
    gpu_attn_ctx *ctx;
    char err[256];
    sh.arch[0] = 0; /* whatever the device is */
    if (gpu_attn_create(kernel, &sh, &ctx, err, sizeof err) != ATTN_OK) {
        fprintf(stderr, "create: %s\n", err);
        exit(1);
    }
    /* the bench's switch for the MTP variant (the library reads none) */
    if (kernel == GPU_ATTN_KERNEL_MTP && getenv("ATTNREG_MTP_WGMMA"))
        gpu_attn_force_mtp_variant(ctx, atoi(getenv("ATTNREG_MTP_WGMMA")) ? 1 : 0);
    if (kernel == GPU_ATTN_KERNEL_MTP && getenv("ATTNREG_MTP_PAIR"))
        gpu_attn_force_mtp_pair(ctx, atoi(getenv("ATTNREG_MTP_PAIR")));
    /* the bench's switches for the reduce launch and the segment count */
    if (getenv("ATTNREG_BENCH_PDL"))
        gpu_attn_force_pdl(ctx, atoi(getenv("ATTNREG_BENCH_PDL")));
    if (getenv("ATTNREG_BENCH_PDL_MAIN"))
        gpu_attn_force_pdl_main(ctx, atoi(getenv("ATTNREG_BENCH_PDL_MAIN")));
    if (getenv("ATTNREG_BENCH_PERSIST"))
        gpu_attn_force_prefill_persistent(ctx, atoi(getenv("ATTNREG_BENCH_PERSIST")));
    if (getenv("ATTNREG_BENCH_REDUCE_ROWS"))
        gpu_attn_force_reduce_rows(ctx, atoi(getenv("ATTNREG_BENCH_REDUCE_ROWS")));
    if (getenv("ATTNREG_BENCH_NSEG"))
        gpu_attn_force_segments(ctx, atoi(getenv("ATTNREG_BENCH_NSEG")));
    const int prefill = q_len > 1 && gpu_attn_force_prefill(ctx, !scalar);
    attn_batch_limits lim = {sizeof lim, batch, T};
    size_t ws = 0;
    gpu_attn_workspace_size(ctx, &lim, &ws);
    if (ws)
        CHECK_HIP(hipMalloc(&dws, ws));
    attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.num_seqs = batch;
    a.num_tokens = T;
    a.q = dq;
    a.q_stride_token = (int64_t)hq * D;
    a.q_stride_head = D;
    a.k_cache = cache_k;
    a.v_cache = cache_v;
    a.num_blocks = max_blocks;
    a.block_table_stride = nb;
    a.cu_seqlens_q = dcu;
    a.seqused_k = dsk;
    a.max_seqlen_q = q_len;
    a.max_seqlen_k = kv_len;
    a.scale = 1.f / sqrtf((float)D);
    a.q_descale = a.k_descale = a.v_descale = 1.f;
    a.out = dout;
    a.out_stride_token = (int64_t)hq * D;
    a.out_stride_head = D;
    a.workspace = dws;
    a.workspace_size = ws;
    a.stream = stream;
    float *dlse = NULL;
    if (g_lse) {
        CHECK_HIP(hipMalloc((void **)&dlse, (size_t)T * hq * sizeof(float)));
        a.lse = dlse;
    }
    if (g_layout == 2) { /* HND: a page of one head is contiguous */
        a.k_stride_block = a.v_stride_block = (int64_t)hkv * page * D;
        a.k_stride_token = a.v_stride_token = D;
        a.k_stride_head = a.v_stride_head = (int64_t)page * D;
    }
    bool graph;
    double us = time_calls(
        [&](int i) {
            a.block_table = dbt + (size_t)(i % sets) * batch * nb;
            attn_status rc = gpu_attn_forward(ctx, &a, err, sizeof err);
            if (rc != ATTN_OK) {
                fprintf(stderr, "forward: %s\n", err);
                exit(1);
            }
        },
        20, &graph);
    CHECK_HIP(hipDeviceSynchronize());
    Result r;
    r.family = family;
    r.kernel = kernel;
    r.q_len = q_len;
    r.kv_len = kv_len;
    r.batch = batch;
    r.nseg = gpu_attn_plan_segments(ctx, T, batch, q_len, kv_len);
    r.sets = sets;
    r.us = us;
    r.hq = hq;
    r.hkv = hkv;
    r.d = D;
    r.path = q_len > 1 && kernel == GPU_ATTN_KERNEL_GENERIC ? (prefill ? "prefill" : "scalar") : "";
    /* Bytes: K and V of every key once, Q read, output written. FLOPs: the
     * visible (causal) pairs only: query i of a sequence with Q new tokens
     * and K keys sees K - Q + i + 1 of them. */
    double kv_keys = 0, pairs = 0;
    for (int s = 0; s < batch; s++) {
        kv_keys += klens[s];
        for (int i = 0; i < qlens[s]; i++)
            pairs += std::min(klens[s], klens[s] - qlens[s] + i + 1);
    }
    r.bytes = kv_keys * hkv * D * kvb * 2 + (double)T * hq * D * 2 * 2;
    r.gbs = r.bytes / (us * 1e-6) / 1e9;
    r.frac = r.gbs / copy_gbs;
    r.tflops = 4.0 * hq * D * pairs / (us * 1e-6) / 1e12;
    if (!graph)
        fprintf(stderr, "note: graph capture failed; timed plain launches\n");
    gpu_attn_destroy(ctx);
    hipFree(dbt);
    hipFree(dcu);
    hipFree(dsk);
    hipFree(dq);
    hipFree(dout);
    if (dws)
        hipFree(dws);
    if (dlse)
        hipFree(dlse);
    return r;
}

/* KV append (gpu_attn_append_kv): T new tokens of 8 KV heads x D 128, bf16
 * rows, into random slots of a bf16 or fp8 cache; bytes = rows read + cache
 * written. */
static Result run_append(int T, int kv_dtype, uint8_t *cache_k, uint8_t *cache_v,
                         size_t cache_bytes)
{
    const int hkv = 8, D = 128, page = 16;
    const size_t kvb = kv_dtype == ATTN_DTYPE_BF16 ? 2 : 1;
    const int nblocks = (int)(cache_bytes / ((size_t)page * hkv * D * kvb));
    std::vector<int64_t> slots(T);
    uint64_t x = 99;
    for (int t = 0; t < T; t++) { /* distinct random slots: one per block */
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        slots[t] = (int64_t)((x >> 33) % (uint64_t)(nblocks / T)) * T * page + (int64_t)t * page %
                   ((int64_t)nblocks * page);
    }
    void *dk, *dv, *ds;
    CHECK_HIP(hipMalloc(&dk, (size_t)T * hkv * D * 2));
    CHECK_HIP(hipMalloc(&dv, (size_t)T * hkv * D * 2));
    CHECK_HIP(hipMalloc(&ds, (size_t)T * 8));
    CHECK_HIP(hipMemcpy(ds, slots.data(), (size_t)T * 8, hipMemcpyHostToDevice));
    fill_kernel<<<1024, 256, 0, stream>>>((uint8_t *)dk, (size_t)T * hkv * D * 2, 0, 21);
    fill_kernel<<<1024, 256, 0, stream>>>((uint8_t *)dv, (size_t)T * hkv * D * 2, 0, 23);
    attn_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.struct_size = sizeof sh;
    sh.num_q_heads = 32;
    sh.num_kv_heads = hkv;
    sh.head_dim = sh.head_dim_v = D;
    sh.q_dtype = sh.compute_dtype = sh.out_dtype = ATTN_DTYPE_BF16;
    sh.kv_dtype = kv_dtype;
    sh.page_size = page;
    sh.max_q_len = 1;
    sh.max_kv_len = 16384;
    sh.causal = 1;
    sh.window_left = sh.window_right = -1;
    gpu_attn_ctx *ctx;
    char err[256];
    if (gpu_attn_create(GPU_ATTN_KERNEL_GENERIC, &sh, &ctx, err, sizeof err) != ATTN_OK) {
        fprintf(stderr, "create: %s\n", err);
        exit(1);
    }
    attn_append_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.num_tokens = T;
    a.src_dtype = ATTN_DTYPE_BF16;
    a.k = dk;
    a.v = dv;
    a.slot_mapping = (const int64_t *)ds;
    a.k_cache = cache_k;
    a.v_cache = cache_v;
    a.num_blocks = nblocks;
    a.k_scale = a.v_scale = 0.5f;
    a.stream = stream;
    bool graph;
    double us = time_calls(
        [&](int) {
            if (gpu_attn_append_kv(ctx, &a, err, sizeof err) != ATTN_OK) {
                fprintf(stderr, "append: %s\n", err);
                exit(1);
            }
        },
        20, &graph);
    CHECK_HIP(hipDeviceSynchronize());
    Result r;
    r.family = "append";
    r.kernel = 0;
    r.q_len = 1;
    r.kv_len = 0;
    r.batch = T;
    r.nseg = 0;
    r.sets = 1;
    r.us = us;
    r.hq = 32;
    r.hkv = hkv;
    r.d = D;
    r.label = kv_dtype == ATTN_DTYPE_BF16 ? "bf16" : "fp8_e4m3fn";
    r.bytes = (double)T * hkv * D * 2 * (2 + kvb);
    r.gbs = r.bytes / (us * 1e-6) / 1e9;
    r.frac = r.gbs / copy_gbs;
    r.tflops = 0;
    gpu_attn_destroy(ctx);
    hipFree(dk);
    hipFree(dv);
    hipFree(ds);
    return r;
}

/* Every sequence of the batch the same: q_len new tokens over kv_len keys. */
static Result run_one(const char *family, gpu_attn_kernel kernel, int hq, int hkv, int D, int kv_dtype,
                      int q_len, int kv_len, int batch, uint8_t *cache_k, uint8_t *cache_v,
                      size_t cache_bytes, bool scalar = false)
{
    return run_batch(family, kernel, hq, hkv, D, kv_dtype, std::vector<int>(batch, q_len),
                     std::vector<int>(batch, kv_len), cache_k, cache_v, cache_bytes, scalar);
}

/* The prefill families: causal prefill, chunked prefill and a mixed
 * batch, bf16 Q/KV, page 16, on the prefill kernel; a few rows again on the
 * portable scalar kernel (the version before it). */
static void run_prefill_families(std::vector<Result> &res, uint8_t *ck, uint8_t *cv, size_t bytes)
{
    const int BF = ATTN_DTYPE_BF16;
    const gpu_attn_kernel G = GPU_ATTN_KERNEL_GENERIC;
    for (int L : {512, 2048, 8192})
        for (int b : {1, 4})
            res.push_back(run_one("prefill", G, 32, 8, 128, BF, L, L, b, ck, cv, bytes));
    for (int b : {1, 4}) {
        res.push_back(run_one("prefill", G, 32, 8, 256, BF, 2048, 2048, b, ck, cv, bytes));
        res.push_back(run_one("prefill", G, 16, 1, 256, BF, 2048, 2048, b, ck, cv, bytes));
    }
    for (int ctx : {4096, 16384})
        res.push_back(run_one("chunked", G, 32, 8, 128, BF, 512, 512 + ctx, 4, ck, cv, bytes));
    /* Mixed: 4 chunks of 512 and 64 decode tokens, all over 4096 cached keys;
     * beside it the same work as two calls (the chunks, then the decodes). */
    std::vector<int> q(4, 512), k(4, 4096 + 512);
    for (int i = 0; i < 64; i++) {
        q.push_back(1);
        k.push_back(4096 + 1);
    }
    Result mixed = run_batch("mixed", G, 32, 8, 128, BF, q, k, ck, cv, bytes);
    mixed.label = "4 x q512 + 64 x q1 over 4096";
    res.push_back(mixed);
    Result pre = run_one("mixed-parts", G, 32, 8, 128, BF, 512, 4096 + 512, 4, ck, cv, bytes);
    pre.label = "4 x q512 over 4096 (alone)";
    res.push_back(pre);
    Result dec = run_one("mixed-parts", G, 32, 8, 128, BF, 1, 4096 + 1, 64, ck, cv, bytes);
    dec.label = "64 x q1 over 4096 (alone)";
    res.push_back(dec);
    /* fp8 (e4m3fn) caches: the prefill kernel converts each tile to f16 */
    fill_kernel<<<4096, 256, 0, stream>>>(ck, bytes, 1, 23);
    fill_kernel<<<4096, 256, 0, stream>>>(cv, bytes, 1, 29);
    CHECK_HIP(hipStreamSynchronize(stream));
    const int F8 = ATTN_DTYPE_FP8_E4M3FN;
    for (int L : {2048, 8192})
        res.push_back(run_one("prefill-fp8", G, 32, 8, 128, F8, L, L, 1, ck, cv, bytes));
    res.push_back(run_one("prefill-fp8", G, 16, 1, 256, F8, 2048, 2048, 4, ck, cv, bytes));
    res.push_back(run_one("chunked-fp8", G, 32, 8, 128, F8, 512, 512 + 16384, 4, ck, cv, bytes));
    fill_kernel<<<4096, 256, 0, stream>>>(ck, bytes, 0, 17);
    fill_kernel<<<4096, 256, 0, stream>>>(cv, bytes, 0, 19);
    CHECK_HIP(hipStreamSynchronize(stream));
    /* the version before: the scalar kernel on the short rows */
    res.push_back(run_one("prefill", G, 32, 8, 128, BF, 512, 512, 1, ck, cv, bytes, true));
    res.push_back(run_one("prefill", G, 32, 8, 128, BF, 2048, 2048, 1, ck, cv, bytes, true));
}

int main(int argc, char **argv)
{
    /* The bench's own tuning switches for the matrix-unit decode kernel
     * (the library reads no environment): carveout percent and the programs
     * per CU the segment rule fills (0 = the defaults). */
    if (getenv("ATTNREG_BENCH_DMMA_CARVEOUT") || getenv("ATTNREG_BENCH_DMMA_TARGET")) {
        const char *c = getenv("ATTNREG_BENCH_DMMA_CARVEOUT"), *w = getenv("ATTNREG_BENCH_DMMA_TARGET");
        gpu_attn_tune_decode_mma(c ? atoi(c) : 0, w ? atoi(w) : 0);
        printf("decode-mma tuning: carveout %s%%, target %s programs per CU\n", c ? c : "default",
               w ? w : "default");
    }
    attn_device_info dev;
    dev.struct_size = sizeof dev;
    uint32_t n = 0;
    char err[256];
    if (gpu_attn_probe(&dev, 1, &n, err, sizeof err) != ATTN_OK || n == 0) {
        printf("SKIPPED: no GPU device: %s\n", err);
        return 77;
    }
    CHECK_HIP(hipStreamCreate(&stream));
#if defined(ATTN_PLATFORM_CUDA)
    /* A diagnosis (not a library setting): the device's L2 fetch granularity
     * hint (cudaLimitMaxL2FetchGranularity, bytes 0-128) for the whole run. */
    if (getenv("ATTNREG_BENCH_L2_FETCH")) {
        CHECK_HIP(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity,
                                     (size_t)atoi(getenv("ATTNREG_BENCH_L2_FETCH"))));
        size_t got = 0;
        CHECK_HIP(cudaDeviceGetLimit(&got, cudaLimitMaxL2FetchGranularity));
        printf("L2 fetch granularity: %zu bytes\n", got);
    }
#endif
    if (argc > 1 && strcmp(argv[1], "--one") == 0 && argc >= 10) {
        /* One configuration, for a profiler:
         *   --one KERNEL(0 generic, 1 mtp) HQ HKV D KV(8 = fp8, 16 = bf16) Q_LEN KV_LEN BATCH */
        copy_gbs = 1;
        const size_t bytes = 3ull << 30;
        uint8_t *k1, *v1;
        CHECK_HIP(hipMalloc((void **)&k1, bytes));
        CHECK_HIP(hipMalloc((void **)&v1, bytes));
        int fp8 = atoi(argv[6]) == 8;
        fill_kernel<<<4096, 256, 0, stream>>>(k1, bytes, fp8, 3);
        fill_kernel<<<4096, 256, 0, stream>>>(v1, bytes, fp8, 5);
        Result r = run_one("one", (gpu_attn_kernel)atoi(argv[2]), atoi(argv[3]), atoi(argv[4]),
                           atoi(argv[5]), fp8 ? ATTN_DTYPE_FP8_E4M3FN : ATTN_DTYPE_BF16,
                           atoi(argv[7]), atoi(argv[8]), atoi(argv[9]), k1, v1, bytes);
        printf("one: %.1f us, %.0f GB/s, nseg %d\n", r.us, r.gbs, r.nseg);
        return 0;
    }
    bool decode_only = false, mtp_only = false, prefill_only = false;
    if (argc > 1 && strcmp(argv[1], "--prefill-only") == 0) {
        prefill_only = true;
        argc--;
        argv++;
    } else if (argc > 1 && strcmp(argv[1], "--decode-only") == 0) {
        decode_only = true;
        argc--;
        argv++;
    } else if (argc > 1 && strcmp(argv[1], "--mtp-only") == 0) {
        mtp_only = true;
        argc--;
        argv++;
    }
    copy_gbs = measure_copy();
    printf("device: %s (%s, %d CUs); device-to-device copy (read + write): memcpy %.0f GB/s, "
           "copy kernel %.0f GB/s; using %.0f GB/s; read-only kernel %.0f GB/s\n",
           dev.name, dev.arch, dev.compute_units, memcpy_gbs, kernel_copy_gbs, copy_gbs, read_gbs);

    const size_t cache_bytes = 3ull << 30; /* per K and V: covers batch 64 x 16k x 2 sets */
    uint8_t *ck, *cv;
    CHECK_HIP(hipMalloc((void **)&ck, cache_bytes));
    CHECK_HIP(hipMalloc((void **)&cv, cache_bytes));

    std::vector<Result> res;
    /* MTP shapes, both kernels. */
    fill_kernel<<<4096, 256, 0, stream>>>(ck, cache_bytes, 1, 11);
    fill_kernel<<<4096, 256, 0, stream>>>(cv, cache_bytes, 1, 13);
    CHECK_HIP(hipStreamSynchronize(stream));
    if (!decode_only && !prefill_only)
        for (int q : {2, 4})
            for (int kv : {1024, 4096, 16384})
                for (int b : {1, 8, 32, 64})
                    for (int k : {0, 1})
                        if (k == 1 || !mtp_only)
                            res.push_back(run_one("mtp", (gpu_attn_kernel)k, 16, 1, 256,
                                              ATTN_DTYPE_FP8_E4M3FN, q, kv, b, ck, cv,
                                              cache_bytes));
    /* fp8 (e4m3fn) KV decode on the MTP rows' fp8 caches: the matrix-unit
     * decode kernel over raw fp8 tiles, half the bytes of bf16 decode. */
    for (int kv : {1024, 4096, 8192, 16384})
        for (int b : {1, 8, 32, 64})
            if (!mtp_only && !prefill_only)
                res.push_back(run_one("decode-fp8", GPU_ATTN_KERNEL_GENERIC, 32, 8, 128,
                                      ATTN_DTYPE_FP8_E4M3FN, 1, kv, b, ck, cv, cache_bytes));
    /* Plain decode, generic kernel. */
    fill_kernel<<<4096, 256, 0, stream>>>(ck, cache_bytes, 0, 17);
    fill_kernel<<<4096, 256, 0, stream>>>(cv, cache_bytes, 0, 19);
    CHECK_HIP(hipStreamSynchronize(stream));
    for (int kv : {1024, 4096, 8192, 16384})
        for (int b : {1, 8, 32, 64})
            if (!mtp_only && !prefill_only)
                res.push_back(run_one("decode", GPU_ATTN_KERNEL_GENERIC, 32, 8, 128, ATTN_DTYPE_BF16,
                                  1, kv, b, ck, cv, cache_bytes));

    /* The same decode over an HND cache (by strides) and with the
     * log-sum-exp output, a few rows. */
    for (int kv : {4096, 16384})
        for (int b : {1, 32, 64})
            if (!mtp_only && !prefill_only) {
                g_layout = 2;
                res.push_back(run_one("decode-hnd", GPU_ATTN_KERNEL_GENERIC, 32, 8, 128,
                                      ATTN_DTYPE_BF16, 1, kv, b, ck, cv, cache_bytes));
                g_layout = 0;
                g_lse = 1;
                res.push_back(run_one("decode-lse", GPU_ATTN_KERNEL_GENERIC, 32, 8, 128,
                                      ATTN_DTYPE_BF16, 1, kv, b, ck, cv, cache_bytes));
                g_lse = 0;
            }
    /* KV append into bf16 and fp8 caches. */
    for (int kvd : {ATTN_DTYPE_BF16, ATTN_DTYPE_FP8_E4M3FN})
        for (int t : {64, 1024, 4096, 16384, 65536})
            if (!mtp_only && !prefill_only)
                res.push_back(run_append(t, kvd, ck, cv, cache_bytes));

    if (!mtp_only && !decode_only)
        run_prefill_families(res, ck, cv, cache_bytes);

    /* Table. */
    if (mtp_only) {
        printf("\nMTP kernel, 16:1 heads, D 256, page 16, bf16 Q, fp8 KV (copy %.0f GB/s)\n", copy_gbs);
        printf("| q_len | kv_len | batch | MB | mtp us | GB/s | %% copy | TFLOP/s | nseg |\n");
        printf("|---|---|---|---|---|---|---|---|---|\n");
        for (const Result &m : res)
            printf("| %d | %d | %d | %.2f | %.1f | %.0f | %.1f | %.0f | %d |\n", m.q_len, m.kv_len,
                   m.batch, m.bytes / 1e6, m.us, m.gbs, 100 * m.frac, m.tflops, m.nseg);
    } else if (!decode_only && !prefill_only) {
        printf("\nMTP shapes: 16:1 heads, D 256, page 16, bf16 Q, fp8 KV (copy %.0f GB/s)\n", copy_gbs);
        printf("| q_len | kv_len | batch | MB | generic us | GB/s | %% copy | nseg | mtp us | GB/s | %% copy | TFLOP/s | nseg | mtp/generic |\n");
        printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (size_t i = 0; i + 1 < res.size(); i++) {
            if (res[i].family != "mtp" || res[i].kernel != 0)
                continue;
            const Result &g = res[i], &m = res[i + 1];
            printf("| %d | %d | %d | %.2f | %.1f | %.0f | %.1f | %d | %.1f | %.0f | %.1f | %.0f | %d | %.2fx |\n",
                   g.q_len, g.kv_len, g.batch, g.bytes / 1e6, g.us, g.gbs, 100 * g.frac, g.nseg, m.us,
                   m.gbs, 100 * m.frac, m.tflops, m.nseg, g.us / m.us);
        }
    }
    if (!mtp_only && !decode_only) {
        printf("\nPrefill, chunked prefill, mixed: bf16 Q, bf16 KV (-fp8: e4m3fn KV), page 16, "
               "causal; TFLOP/s over the visible pairs\n");
        printf("| family | heads | D | q_len | kv_len | batch | kernel | us | TFLOP/s | nseg |\n");
        printf("|---|---|---|---|---|---|---|---|---|---|\n");
        double mixed_us = 0, parts_us = 0;
        for (const Result &r : res) {
            if (r.family.rfind("prefill", 0) != 0 && r.family.rfind("chunked", 0) != 0 &&
                r.family.rfind("mixed", 0) != 0)
                continue;
            if (r.family == "mixed")
                mixed_us = r.us;
            if (r.family == "mixed-parts")
                parts_us += r.us;
            printf("| %s | %d/%d | %d | %d | %d | %d | %s | %.1f | %.1f | %d |%s%s\n",
                   r.family.c_str(), r.hq, r.hkv, r.d, r.q_len, r.kv_len, r.batch,
                   r.path.empty() ? "decode" : r.path.c_str(), r.us, r.tflops, r.nseg,
                   r.label.empty() ? "" : " ", r.label.c_str());
        }
        if (mixed_us > 0 && parts_us > 0)
            printf("mixed batch: %.1f us in one call, %.1f us as two calls (ratio %.2f)\n",
                   mixed_us, parts_us, mixed_us / parts_us);
    }
    if (!prefill_only) {
        printf("\nPlain decode: 32:8 heads, D 128, page 16, bf16 Q/KV, q_len 1 (generic)\n");
        printf("| kv_len | batch | MB | us | GB/s | %% copy | nseg |\n|---|---|---|---|---|---|---|\n");
        for (const Result &r : res)
            if (r.family == "decode")
                printf("| %d | %d | %.2f | %.1f | %.0f | %.1f | %d |\n", r.kv_len, r.batch, r.bytes / 1e6,
                       r.us, r.gbs, 100 * r.frac, r.nseg);
        printf("\nfp8 KV decode: 32:8 heads, D 128, page 16, bf16 Q, e4m3fn KV, q_len 1 (generic); "
               "bf16 us: the row above of the same shape\n");
        printf("| kv_len | batch | MB | us | GB/s | %% copy | nseg | bf16 us | bf16/fp8 |\n"
               "|---|---|---|---|---|---|---|---|---|\n");
        for (const Result &r : res) {
            if (r.family != "decode-fp8")
                continue;
            double b16 = 0;
            for (const Result &o : res)
                if (o.family == "decode" && o.kv_len == r.kv_len && o.batch == r.batch)
                    b16 = o.us;
            printf("| %d | %d | %.2f | %.1f | %.0f | %.1f | %d | %.1f | %.2f |\n", r.kv_len, r.batch,
                   r.bytes / 1e6, r.us, r.gbs, 100 * r.frac, r.nseg, b16, b16 > 0 ? b16 / r.us : 0.0);
        }
        printf("\nbf16 decode over an HND cache (strides) and with the log-sum-exp output; "
               "contiguous us: the plain decode row of the same shape\n");
        printf("| variant | kv_len | batch | us | GB/s | nseg | contiguous us | ratio |\n"
               "|---|---|---|---|---|---|---|---|\n");
        for (const Result &r : res) {
            if (r.family != "decode-hnd" && r.family != "decode-lse")
                continue;
            double b16 = 0;
            for (const Result &o : res)
                if (o.family == "decode" && o.kv_len == r.kv_len && o.batch == r.batch)
                    b16 = o.us;
            printf("| %s | %d | %d | %.1f | %.0f | %d | %.1f | %.2f |\n", r.family.c_str() + 7,
                   r.kv_len, r.batch, r.us, r.gbs, r.nseg, b16, b16 > 0 ? r.us / b16 : 0.0);
        }
        printf("\nKV append: 8 KV heads x D 128, bf16 rows into random slots (bytes: rows read + "
               "cache written; copy %.0f GB/s)\n", copy_gbs);
        printf("| cache | tokens | MB | us | GB/s | %% copy |\n|---|---|---|---|---|---|\n");
        for (const Result &r : res)
            if (r.family == "append")
                printf("| %s | %d | %.2f | %.1f | %.0f | %.1f |\n", r.label.c_str(), r.batch,
                       r.bytes / 1e6, r.us, r.gbs, 100 * r.frac);
    }
    if (argc > 1) {
        FILE *f = fopen(argv[1], "w");
        if (f) {
            fprintf(f, "{\n  \"device\": \"%s\",\n  \"arch\": \"%s\",\n  \"copy_gbs\": %.1f,\n  "
                       "\"memcpy_gbs\": %.1f,\n  \"copy_kernel_gbs\": %.1f,\n  \"read_kernel_gbs\": %.1f,\n  "
                       "\"results\": [\n",
                    dev.name, dev.arch, copy_gbs, memcpy_gbs, kernel_copy_gbs, read_gbs);
            for (size_t i = 0; i < res.size(); i++) {
                const Result &r = res[i];
                fprintf(f,
                        "    {\"family\": \"%s\", \"kernel\": \"%s\", \"q_len\": %d, \"kv_len\": %d, "
                        "\"batch\": %d, \"nseg\": %d, \"kv_sets\": %d, \"us\": %.3f, \"bytes\": %.0f, "
                        "\"gbs\": %.1f, \"copy_fraction\": %.4f, \"tflops\": %.2f, "
                        "\"q_heads\": %d, \"kv_heads\": %d, \"head_dim\": %d, \"path\": \"%s\"}%s\n",
                        r.family.c_str(), r.kernel ? "mtp" : "generic", r.q_len, r.kv_len, r.batch,
                        r.nseg, r.sets, r.us, r.bytes, r.gbs, r.frac, r.tflops, r.hq, r.hkv, r.d,
                        r.path.c_str(), i + 1 < res.size() ? "," : "");
            }
            fprintf(f, "  ]\n}\n");
            fclose(f);
        }
    }
    hipFree(ck);
    hipFree(cv);
    return 0;
}
