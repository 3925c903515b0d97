/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gpu_attn_test — compares the GPU kernels (aiter-generic, aiter-mtp) with a
 * float64 CPU reference on identical inputs, and, when given the cpu-ref
 * plugin (argv[1] or $ATTNREG_CPU_REF_PLUGIN), with cpu-ref too.
 *
 *   seeded random sweep: >= 100 configurations per kernel (random block
 *   permutations, mixed query lengths, fp8 and bf16/f16 caches, windows,
 *   softcap, sinks, strided q/out, forced 2D / 3D segment counts);
 *   the generic kernel's decode path (every sequence one query token):
 *   the same features, one token per sequence; and the same again with Q
 *   and the cache of one 16-bit type, the batches that take the
 *   matrix-unit decode kernel on NVIDIA;
 *   the upstream MTP reference case: query lengths [4, 2], kv lengths
 *   [1024, 769], 16/1 and 32/2 heads, D 256, page 16, fp8 KV, descale 1.0;
 *   the prefill families (prefill, chunked, mixed) on both grids of the
 *   prefill kernel: every other case is built with more items than one
 *   wave (the dynamic grid), half of those with a workspace without room
 *   for its counters (one program an item); the summary counts each grid.
 *   A third of the MTP and prefill-family cases scale key j of each
 *   sequence by 1 + 10 j / k: their scores grow along the keys past the
 *   kernels' rescale slack, so the running maxima move (and O is rescaled)
 *   in later tiles too, not only in a row's first (Case::key_ramp).
 *   The K/V cache strides the forward must refuse come back as
 *   ATTN_ERR_UNSUPPORTED naming the reason (check_kv_layout_rejections).
 *
 * Tolerance, per element: |gpu - ref| <= atol + rtol * |ref|.
 *   rtol is the output rounding: half an ulp of the output type (bf16 2^-8,
 *   f16 2^-11, f32 0) plus 1e-5, because the GPU rounds its own float result,
 *   which may sit on the other side of a rounding boundary from the exact one.
 *   atol is the arithmetic error of the kernel, relative to max|V| x v_descale
 *   (the scale of an output element):
 *     generic: fp32 products, sums and exp2: 1e-4 (observed errors are ~1e-6;
 *       the margin covers softcap's tanhf and long sums). The matrix-unit
 *       decode kernel is held to the same: its products of 16-bit inputs are
 *       exact in f32, and P enters P x V as a hi + lo pair of 16-bit values
 *       (about 16 significant bits, a relative 2^-17 per probability);
 *     prefill kernel (multi-token batches on sm_90): P is rounded to the
 *       math type before P x V (bf16 with a bf16 cache: a relative 2^-9 per
 *       probability; f16, also for fp8 caches: 2^-11), so an output moves by
 *       at most that fraction of max|V|; atol is twice it (2^-8, 2^-10). Q
 *       and K reach the matrix units exactly (bf16 Q over an fp8 cache is
 *       scaled by a power of two per row into f16);
 *     mtp: Q, K and V reach the mma exactly (bf16 -> f16 with a per-row power
 *       of two; e4m3 -> f16 is exact), so the one rounding is P to f16, a
 *       relative 2^-11 on each probability: the output moves by at most
 *       2^-11 x max|V|; atol = 2^-10 x max|V| leaves a factor 2.
 *   All of these are tighter than the upstream 1e-2. NaN never passes, and
 *   the output is poisoned before each run so an unwritten element fails;
 *   fp8 caches hold NaN codes in the slots past each sequence's last key in
 *   its last page, so a kernel that lets a read of them into the output
 *   fails.
 *
 * Without a device the program prints why and exits 77 (ctest SKIP).
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "attn_dtype_conv.h"
#include "attn_launch_plan.h"
#include "attn_plugin.h"
#include "attnreg.h" /* attn_merge_args */
#include "gpu_attn.h"
#include "hip_compat.h"

#define SKIP_CODE 77

#define CHECK_HIP(x)                                                                             \
    do {                                                                                         \
        hipError_t e_ = (x);                                                                     \
        if (e_ != hipSuccess) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, hipGetErrorString(e_));   \
            exit(1);                                                                             \
        }                                                                                        \
    } while (0)

/* ---- deterministic RNG ---------------------------------------------------- */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int rng_int(int lo, int hi) /* inclusive */
{
    return lo + (int)(rng_next() % (uint64_t)(hi - lo + 1));
}
static double rng_unit(void)
{
    return (double)(rng_next() >> 11) * 0x1p-53;
}
static float rng_sym(float a)
{
    return (float)((2.0 * rng_unit() - 1.0) * a);
}
template <class T>
static T pick(std::initializer_list<T> l)
{
    return l.begin()[rng_int(0, (int)l.size() - 1)];
}

/* ---- one test case -------------------------------------------------------- */
struct Case {
    const char *name;
    gpu_attn_kernel kernel;
    int hq, hkv, d, page;
    int q_dtype, kv_dtype, out_dtype, compute_dtype;
    int causal, wl, wr;
    float softcap;
    int sinks;
    std::vector<int> qlens, klens;
    int nseg;        /* forced segments (0 = rule) */
    int q_pad, o_pad; /* extra elements per head / token for strided q/out */
    float k_descale, v_descale, q_descale;
    int scalar = 0; /* send multi-token batches to the portable generic kernel */
    int stages = 0; /* force the portable kernel's K/V stages (0 = the plan's) */
    int raw_kv = 0; /* ... and its raw-K/V variant (D 192/256) */
    /* The device cache's layout (attn_forward_args.k_stride_* / v_stride_*):
     * 0 contiguous [blocks, page, Hkv, D]; 1 one tensor [blocks, 2, page,
     * Hkv, D] with K and V views (FlashInfer NHD, a combined K/V cache); 2
     * HND [blocks, Hkv, page, D]; 3 token rows padded by 16 elements. The
     * reference reads the contiguous host copy. */
    int layout = 0;
    int lse = 0; /* return_lse: the log-sum-exp is checked against the reference's */
    /* Pass a workspace without room for the prefill kernel's dynamic-grid
     * counters (one byte short of them, or none where they would start it):
     * the kernel must run one program an item instead, with the same
     * results. */
    int small_ws = 0;
    int big = 0; /* built for the prefill kernel's dynamic grid (big_case) */
    /* Key j of a sequence of k keys scaled by 1 + key_ramp x j / k: the
     * scores grow along the keys past the MTP and prefill kernels' rescale
     * slack (ATTN_RESCALE_SLACK, 2^14 on the exponent: ~9.7 in natural
     * units), so their running maxima move and O is rescaled in later tiles
     * too, which scores of uniform size (the other cases) never make happen
     * after a row's first tile. 10: a row's largest score grows ~11x (score
     * spreads of 0.3-1.7 start it at ~1-6). Not more: the tolerances below
     * count P's rounding, not the f32 sums of Q K^T, whose error grows with
     * the scores' size; and fp8 keys (|k| <= 8) stay under e4m3fnuz's 240. */
    float key_ramp = 0.f;
};

/* Element strides (block, token, head) of a layout, and the distance from
 * the K view to the V view in one allocation (layout 1), in elements. */
struct KvLayout {
    int64_t sb, st, sh, v_off, elems;
};
static KvLayout kv_layout(int layout, int64_t nblocks, int64_t page, int64_t hkv, int64_t d)
{
    const int64_t row = hkv * d;
    switch (layout) {
    case 1:
        return {2 * page * row, row, d, page * row, 2 * nblocks * page * row};
    case 2:
        return {hkv * page * d, d, page * d, 0, nblocks * page * row};
    case 3:
        return {page * (row + 16), row + 16, d, 0, nblocks * page * (row + 16)};
    default:
        return {page * row, row, d, 0, nblocks * page * row};
    }
}
/* The contiguous host cache `src` in layout `l`, into dst at element `at`. */
static void relayout(const std::vector<uint8_t> &src, std::vector<uint8_t> &dst, int64_t at,
                     const KvLayout &l, int64_t nblocks, int64_t page, int64_t hkv, int64_t d,
                     size_t eb)
{
    for (int64_t b = 0; b < nblocks; b++)
        for (int64_t t = 0; t < page; t++)
            for (int64_t h = 0; h < hkv; h++)
                memcpy(&dst[(size_t)(at + b * l.sb + t * l.st + h * l.sh) * eb],
                       &src[(size_t)(((b * page + t) * hkv + h) * d) * eb], (size_t)d * eb);
}

struct Stats {
    int run = 0, failed = 0;
    double worst_ratio = 0; /* max over cases of max |err| / allowed */
    /* prefill kernel cases by grid (gpu_attn_plan_prefill_grid): the
     * dynamic grid, one program an item by the one-wave rule, and one
     * program an item for want of workspace (small_ws) */
    int grid_dynamic = 0, grid_one = 0, grid_fallback = 0;
    int big_on_prefill = 0; /* big cases that ran on the prefill kernel */
};

/* Compute units of device 0 (the big prefill cases size themselves by it). */
static int g_cus = 132;

static size_t dsize(int dt)
{
    return attn_conv_dtype_size(dt);
}

/* Encode float to a dtype into raw bytes. */
static void store_raw(std::vector<uint8_t> &buf, int dt, size_t idx, float v)
{
    attn_conv_store_f32(dt, buf.data(), (int64_t)idx, v);
}
static float load_raw(const std::vector<uint8_t> &buf, int dt, size_t idx)
{
    return attn_conv_load_f32(dt, buf.data(), (int64_t)idx);
}

/* cpu-ref through its plugin descriptor, when available. */
static const attn_plugin_descriptor *cpu_ref = NULL;
static attn_plugin_context cpu_ref_ctx;

static void cpu_ref_log(void *host, int32_t level, const char *msg)
{
    (void)host;
    if (level >= ATTN_LOG_WARN)
        fprintf(stderr, "cpu-ref: %s\n", msg);
}

static void load_cpu_ref(const char *path)
{
    if (!path || !*path)
        return;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("note: cpu-ref plugin not loaded (%s); float64 reference only\n", dlerror());
        return;
    }
    attn_plugin_entry_fn entry = (attn_plugin_entry_fn)dlsym(h, ATTN_PLUGIN_ENTRY_SYMBOL);
    if (!entry || !(cpu_ref = entry(ATTN_PLUGIN_ABI_MAJOR, ATTN_PLUGIN_ABI_MINOR))) {
        printf("note: %s has no usable descriptor; float64 reference only\n", path);
        cpu_ref = NULL;
        return;
    }
    static attn_host_services services;
    services.struct_size = sizeof services;
    services.log = cpu_ref_log;
    memset(&cpu_ref_ctx, 0, sizeof cpu_ref_ctx);
    cpu_ref_ctx.struct_size = sizeof cpu_ref_ctx;
    cpu_ref_ctx.services = &services;
    cpu_ref_ctx.conf_file = path;
    if (cpu_ref->init && cpu_ref->init(&cpu_ref_ctx) != ATTN_OK) {
        printf("note: cpu-ref init failed; float64 reference only\n");
        cpu_ref = NULL;
        return;
    }
    printf("cpu-ref plugin loaded from %s (version %s)\n", path, cpu_ref->version);
}

static int cpu_ref_checked = 0;
/* Multi-token cases the portable kernel ran with a forced program: one K/V
 * stage, and the raw-K/V variant (the programs of gfx942). */
static int forced_one_stage = 0, forced_raw_kv = 0;

/* Keep the float64 reference affordable (~1e8 multiply-adds a case): drop
 * sequences, then shorten the longest contexts. */
static void limit_cost(Case &c)
{
    for (;;) {
        double cost = 0;
        for (size_t s = 0; s < c.qlens.size(); s++)
            cost += (double)c.qlens[s] * c.klens[s] * c.hq * c.d;
        if (cost <= 1.2e8)
            return;
        if (c.qlens.size() > 2) {
            c.qlens.pop_back();
            c.klens.pop_back();
            continue;
        }
        bool shrunk = false;
        for (size_t s = 0; s < c.qlens.size(); s++) {
            const int k = std::max(c.qlens[s], c.klens[s] / 2);
            shrunk |= k < c.klens[s];
            c.klens[s] = k;
        }
        if (c.qlens[0] > 8 && cost > 4e8) {
            c.qlens[0] /= 2;
            shrunk = true;
        }
        /* Every sequence is down to its query tokens (prefill only) and the
         * rule above did not fire: halve the longest query, or the loop
         * would never end (seen with 130 tokens x 64 heads x D 256). */
        if (!shrunk) {
            size_t longest = 0;
            for (size_t s = 1; s < c.qlens.size(); s++)
                if (c.qlens[s] > c.qlens[longest])
                    longest = s;
            if (c.qlens[longest] <= 1)
                return;
            c.qlens[longest] /= 2;
        }
    }
}

static bool run_case(const Case &c, Stats &st, bool verbose)
{
    const int S = (int)c.qlens.size();
    const int G = c.hq / c.hkv, D = c.d, Dv = c.d;
    std::vector<int> cu(S + 1, 0);
    int maxq = 0, maxk = 0;
    for (int s = 0; s < S; s++) {
        cu[s + 1] = cu[s] + c.qlens[s];
        maxq = std::max(maxq, c.qlens[s]);
        maxk = std::max(maxk, c.klens[s]);
    }
    const int T = cu[S];

    /* Paged cache with the sequences' blocks scattered by a random permutation. */
    int bt_stride = 0, nblocks = 0;
    for (int s = 0; s < S; s++) {
        int nb = (c.klens[s] + c.page - 1) / c.page;
        bt_stride = std::max(bt_stride, nb);
        nblocks += nb;
    }
    bt_stride = std::max(bt_stride, 1) + 1;
    nblocks += 3; /* spare blocks nobody owns */
    std::vector<int> perm(nblocks);
    for (int i = 0; i < nblocks; i++)
        perm[i] = i;
    for (int i = nblocks - 1; i > 0; i--)
        std::swap(perm[i], perm[rng_int(0, i)]);
    std::vector<int> bt((size_t)S * bt_stride, -1);
    int next = 0;
    for (int s = 0; s < S; s++) {
        int nb = (c.klens[s] + c.page - 1) / c.page;
        for (int b = 0; b < nb; b++)
            bt[(size_t)s * bt_stride + b] = perm[next++];
    }
    for (auto &x : bt)
        if (x < 0)
            x = perm[nblocks - 1]; /* valid but unused entries */
    /* The row (in elements / D) of key j of sequence s, KV head h, in the
     * contiguous [blocks, page, Hkv, D] cache. */
    auto kv_row = [&](int s, int j, int h) {
        return ((size_t)bt[(size_t)s * bt_stride + j / c.page] * c.page + j % c.page) * c.hkv + h;
    };

    const size_t kv_elems = (size_t)nblocks * c.page * c.hkv * D;
    std::vector<uint8_t> kc(kv_elems * dsize(c.kv_dtype)), vc(kv_elems * dsize(c.kv_dtype));
    const bool kv8 = attn_conv_dtype_is_fp8(c.kv_dtype);
    const float kd = kv8 ? c.k_descale : 1.f, vd = kv8 ? c.v_descale : 1.f;
    for (size_t i = 0; i < kv_elems; i++) {
        /* fp8: values spread over the e4m3 range around the descale, some
         * subnormal; 16-bit: uniform in [-1, 1]. */
        float k = rng_sym(1.f), v = rng_sym(1.f);
        if (kv8) {
            k = rng_sym(1.f) * (float)exp2(rng_int(-8, 3)) / 1.f;
            v = rng_sym(1.f) * (float)exp2(rng_int(-8, 3));
        }
        store_raw(kc, c.kv_dtype, i, k);
        store_raw(vc, c.kv_dtype, i, v);
    }
    if (c.key_ramp > 0.f)
        for (int s = 0; s < S; s++)
            for (int j = 0; j < c.klens[s]; j++) {
                const float f = 1.f + c.key_ramp * (float)j / (float)c.klens[s];
                for (int h = 0; h < c.hkv; h++)
                    for (int d = 0; d < D; d++) {
                        const size_t e = kv_row(s, j, h) * D + d;
                        store_raw(kc, c.kv_dtype, e, load_raw(kc, c.kv_dtype, e) * f);
                    }
            }
    const int64_t q_sh = D + c.q_pad, q_st = (int64_t)c.hq * q_sh + c.q_pad;
    const int64_t o_sh = Dv + c.o_pad, o_st = (int64_t)c.hq * o_sh + 3 * c.o_pad;
    const size_t q_elems = (size_t)T * q_st, o_elems = (size_t)T * o_st;
    std::vector<uint8_t> qh(q_elems * dsize(c.q_dtype));
    for (size_t i = 0; i < q_elems; i++)
        store_raw(qh, c.q_dtype, i, rng_sym(2.f));
    std::vector<float> sinks(c.hq);
    for (auto &x : sinks)
        x = rng_sym(3.f);
    const float scale = 1.f / sqrtf((float)D) * (float)(0.5 + 2 * rng_unit());

    /* ---- float64 reference ---- */
    std::vector<double> ref((size_t)T * c.hq * Dv, 0.0);
    std::vector<double> ref_lse((size_t)T * c.hq, -INFINITY);
    double vmax = 0;
    for (size_t i = 0; i < kv_elems; i++)
        vmax = std::max(vmax, (double)fabsf(load_raw(vc, c.kv_dtype, i)));
    vmax *= vd;
    const bool fp8c = attn_conv_dtype_is_fp8(c.compute_dtype);
    /* One (token, head) row of the reference. Rows are independent, so they
     * are spread over the host's cores: the float64 reference is most of the
     * test's time, and the device machine has 16 cores. */
    std::vector<int> tok_seq(T);
    for (int s = 0; s < S; s++)
        for (int i = 0; i < c.qlens[s]; i++)
            tok_seq[cu[s] + i] = s;
    auto reference_row = [&](int tok, int h) {
        const int s = tok_seq[tok];
        const int Q = c.qlens[s], K = c.klens[s];
        const int pos = K - Q + (tok - cu[s]);
        const int kvh = h / G;
        std::vector<double> qv(D);
        for (int d = 0; d < D; d++) {
            float x = load_raw(qh, c.q_dtype, (size_t)tok * q_st + (size_t)h * q_sh + d);
            if (fp8c)
                x = attn_conv_round_to(c.compute_dtype, x / c.q_descale);
            qv[d] = x;
        }
        const double sc = (double)scale * kd * (fp8c ? c.q_descale : 1.0);
        std::vector<double> sv;
        std::vector<int> keys;
        double mx = c.sinks ? (double)sinks[h] : -INFINITY;
        for (int j = 0; j < K; j++) {
            if (c.causal && j > pos)
                continue;
            if (c.wl >= 0 && j < pos - c.wl)
                continue;
            if (c.wr >= 0 && j > pos + c.wr)
                continue;
            const size_t base = kv_row(s, j, kvh);
            double acc = 0;
            for (int d = 0; d < D; d++)
                acc += qv[d] * load_raw(kc, c.kv_dtype, base * D + d);
            double x = acc * sc;
            if (c.softcap > 0)
                x = c.softcap * tanh(x / c.softcap);
            sv.push_back(x);
            keys.push_back(j);
            mx = std::max(mx, x);
        }
        if (sv.empty()) {
            ref_lse[(size_t)tok * c.hq + h] = c.sinks ? (double)sinks[h] : -INFINITY;
            return; /* zeros (with or without a sink) */
        }
        double den = c.sinks ? exp((double)sinks[h] - mx) : 0.0;
        std::vector<double> o(Dv, 0.0);
        for (size_t n = 0; n < sv.size(); n++) {
            double pr = exp(sv[n] - mx);
            den += pr;
            const size_t base = kv_row(s, keys[n], kvh);
            for (int d = 0; d < Dv; d++)
                o[d] += pr * load_raw(vc, c.kv_dtype, base * Dv + d);
        }
        for (int d = 0; d < Dv; d++)
            ref[((size_t)tok * c.hq + h) * Dv + d] = o[d] / den * vd;
        ref_lse[(size_t)tok * c.hq + h] = mx + log(den);
    };
    {
        const long rows = (long)T * c.hq;
        unsigned nth = std::thread::hardware_concurrency();
        nth = std::max(1u, std::min({nth, 16u, (unsigned)std::max(1L, rows)}));
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < nth; t++)
            pool.emplace_back([&, t] {
                for (long r = t; r < rows; r += nth)
                    reference_row((int)(r / c.hq), (int)(r % c.hq));
            });
        for (auto &th : pool)
            th.join();
    }

    /* ---- GPU ---- */
    attn_shape shape;
    memset(&shape, 0, sizeof shape);
    shape.struct_size = sizeof shape;
    shape.num_q_heads = c.hq;
    shape.num_kv_heads = c.hkv;
    shape.head_dim = D;
    shape.head_dim_v = Dv;
    shape.q_dtype = c.q_dtype;
    shape.kv_dtype = c.kv_dtype;
    shape.compute_dtype = c.compute_dtype;
    shape.out_dtype = c.out_dtype;
    shape.page_size = c.page;
    shape.max_q_len = maxq;
    shape.max_kv_len = maxk;
    shape.causal = c.causal;
    shape.window_left = c.wl;
    shape.window_right = c.wr;
    shape.softcap = c.softcap;
    shape.has_sinks = c.sinks;
    shape.return_lse = c.lse;
    char err[512] = "";
    gpu_attn_ctx *ctx = NULL;
    attn_status rc = gpu_attn_create(c.kernel, &shape, &ctx, err, sizeof err);
    if (rc != ATTN_OK) {
        printf("FAIL %s: create: %s\n", c.name, err);
        st.run++;
        st.failed++;
        return false;
    }
    gpu_attn_force_segments(ctx, c.nseg);
    /* the test's own switch for the MTP variant (the library reads none) */
    if (c.kernel == GPU_ATTN_KERNEL_MTP && getenv("ATTNREG_MTP_WGMMA"))
        gpu_attn_force_mtp_variant(ctx, atoi(getenv("ATTNREG_MTP_WGMMA")) ? 1 : 0);
    if (c.kernel == GPU_ATTN_KERNEL_MTP && getenv("ATTNREG_MTP_PAIR"))
        gpu_attn_force_mtp_pair(ctx, atoi(getenv("ATTNREG_MTP_PAIR")));
    /* the bench's switches of the kernels' variants, so that both sides of
     * an A/B are checked (gpu_attn_bench.cu lists them) */
    if (getenv("ATTNREG_BENCH_PERSIST"))
        gpu_attn_force_prefill_persistent(ctx, atoi(getenv("ATTNREG_BENCH_PERSIST")));
    if (getenv("ATTNREG_BENCH_REDUCE_ROWS"))
        gpu_attn_force_reduce_rows(ctx, atoi(getenv("ATTNREG_BENCH_REDUCE_ROWS")));
    if (getenv("ATTNREG_BENCH_PDL_MAIN"))
        gpu_attn_force_pdl_main(ctx, atoi(getenv("ATTNREG_BENCH_PDL_MAIN")));
    const int forced = c.stages ? gpu_attn_force_generic(ctx, c.stages, c.raw_kv) : 0;
    /* Which kernel runs this batch: the prefill kernel (matrix units) takes
     * multi-token batches of the shapes it supports, unless the case asks
     * for the portable scalar kernel. */
    const bool on_prefill = c.kernel == GPU_ATTN_KERNEL_GENERIC && maxq > 1 &&
                            gpu_attn_force_prefill(ctx, !c.scalar);
    if (forced && c.kernel == GPU_ATTN_KERNEL_GENERIC && maxq > 1 && !on_prefill) {
        forced_one_stage += c.stages == 1;
        forced_raw_kv += c.raw_kv;
    }
    attn_batch_limits lim = {sizeof lim, S, T};
    size_t ws = 0;
    gpu_attn_workspace_size(ctx, &lim, &ws);
    if (c.nseg > 1)
        ws = std::max(ws, (size_t)c.nseg * T * c.hq * (Dv + 2) * sizeof(float));

    void *dq, *dk, *dv, *dbt, *dcu, *dsk, *dsinks, *dout, *dws = NULL;
    std::vector<int> klens(c.klens);
    CHECK_HIP(hipMalloc(&dq, qh.size()));
    /* fp8 caches: the slots past each sequence's keys in its last page hold
     * NaN codes (an engine's cache holds whatever was there; a kernel that
     * reads them must keep them out of the output: a NaN in V survives a zero
     * probability) */
    if (kv8)
        for (int s = 0; s < S; s++)
            for (int j = c.klens[s]; j % c.page != 0; j++)
                for (int h = 0; h < c.hkv; h++)
                    for (int d = 0; d < D; d++) {
                        store_raw(kc, c.kv_dtype, kv_row(s, j, h) * D + d, NAN);
                        store_raw(vc, c.kv_dtype, kv_row(s, j, h) * D + d, NAN);
                    }
    /* the cache in the case's layout: one allocation for K and V (layout 1)
     * or one each */
    const KvLayout lay = kv_layout(c.layout, nblocks, c.page, c.hkv, D);
    const size_t eb = dsize(c.kv_dtype);
    std::vector<uint8_t> kdev((size_t)lay.elems * eb, 0x5A), vdev;
    relayout(kc, kdev, 0, lay, nblocks, c.page, c.hkv, D, eb);
    if (c.layout == 1)
        relayout(vc, kdev, lay.v_off, lay, nblocks, c.page, c.hkv, D, eb);
    else {
        vdev.assign(kdev.size(), 0x5A);
        relayout(vc, vdev, 0, lay, nblocks, c.page, c.hkv, D, eb);
    }
    CHECK_HIP(hipMalloc(&dk, kdev.size()));
    dv = (uint8_t *)dk + lay.v_off * eb;
    if (c.layout != 1)
        CHECK_HIP(hipMalloc(&dv, vdev.size()));
    float *dlse = NULL;
    if (c.lse)
        CHECK_HIP(hipMalloc((void **)&dlse, (size_t)T * c.hq * 2 * sizeof(float)));
    CHECK_HIP(hipMalloc(&dbt, bt.size() * 4));
    CHECK_HIP(hipMalloc(&dcu, cu.size() * 4));
    CHECK_HIP(hipMalloc(&dsk, klens.size() * 4));
    CHECK_HIP(hipMalloc(&dsinks, sinks.size() * 4));
    const size_t out_bytes = o_elems * dsize(c.out_dtype);
    CHECK_HIP(hipMalloc(&dout, out_bytes));
    if (ws)
        CHECK_HIP(hipMalloc(&dws, ws));
    CHECK_HIP(hipMemcpy(dq, qh.data(), qh.size(), hipMemcpyHostToDevice));
    CHECK_HIP(hipMemcpy(dk, kdev.data(), kdev.size(), hipMemcpyHostToDevice));
    if (c.layout != 1)
        CHECK_HIP(hipMemcpy(dv, vdev.data(), vdev.size(), hipMemcpyHostToDevice));
    if (dlse) /* NaN: every row must be written */
        CHECK_HIP(hipMemset(dlse, 0xFF, (size_t)T * c.hq * 2 * sizeof(float)));
    CHECK_HIP(hipMemcpy(dbt, bt.data(), bt.size() * 4, hipMemcpyHostToDevice));
    CHECK_HIP(hipMemcpy(dcu, cu.data(), cu.size() * 4, hipMemcpyHostToDevice));
    CHECK_HIP(hipMemcpy(dsk, klens.data(), klens.size() * 4, hipMemcpyHostToDevice));
    CHECK_HIP(hipMemcpy(dsinks, sinks.data(), sinks.size() * 4, hipMemcpyHostToDevice));
    CHECK_HIP(hipMemset(dout, 0xFF, out_bytes)); /* NaN in every float format */
    if (dws)
        CHECK_HIP(hipMemset(dws, 0xFF, ws));

    attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.num_seqs = S;
    a.num_tokens = T;
    a.q = dq;
    a.q_stride_token = q_st;
    a.q_stride_head = q_sh;
    a.k_cache = dk;
    a.v_cache = dv;
    a.num_blocks = nblocks;
    a.block_table = (const int32_t *)dbt;
    a.block_table_stride = bt_stride;
    a.cu_seqlens_q = (const int32_t *)dcu;
    a.seqused_k = (const int32_t *)dsk;
    a.max_seqlen_q = maxq;
    a.max_seqlen_k = maxk;
    a.scale = scale;
    a.q_descale = c.q_descale;
    a.k_descale = c.k_descale;
    a.v_descale = c.v_descale;
    a.sinks = c.sinks ? (const float *)dsinks : NULL;
    a.out = dout;
    a.out_stride_token = o_st;
    a.out_stride_head = o_sh;
    a.workspace = dws;
    a.workspace_size = ws;
    a.stream = NULL;
    if (c.layout) {
        a.k_stride_block = a.v_stride_block = lay.sb;
        a.k_stride_token = a.v_stride_token = lay.st;
        a.k_stride_head = a.v_stride_head = lay.sh;
    }
    /* lse [Hq, T] with a token stride of 1 (vLLM's) in half of the cases,
     * else [T, Hq] by stride 2 Hq (padded) */
    const int64_t lse_st = (c.layout & 1) ? 1 : 2 * c.hq, lse_sh = (c.layout & 1) ? T : 1;
    if (c.lse) {
        a.lse = dlse;
        a.lse_stride_token = lse_st;
        a.lse_stride_head = lse_sh;
    }
    /* The prefill kernel's grid for this batch, as the forward decides it.
     * A small_ws case that would run on the dynamic grid gets a workspace
     * one byte short of its counters (none where they would be at its
     * start: the launch writes no partials then): one program an item. */
    size_t counters_end = 0;
    int grid = gpu_attn_plan_prefill_grid(ctx, &a, &counters_end);
    bool fallback = false;
    if (c.small_ws && grid == 2) {
        if (counters_end > 128) {
            a.workspace_size = counters_end - 1;
        } else {
            a.workspace = NULL;
            a.workspace_size = 0;
        }
        grid = gpu_attn_plan_prefill_grid(ctx, &a, NULL);
        fallback = true;
        if (grid != 1) {
            printf("FAIL %s: a workspace of %zu bytes (the counters end at %zu) still plans "
                   "grid %d\n",
                   c.name, a.workspace_size, counters_end, grid);
            st.failed++;
        }
    }
    st.grid_dynamic += grid == 2;
    st.grid_one += grid == 1 && !fallback;
    st.grid_fallback += grid == 1 && fallback;
    st.big_on_prefill += c.big && grid > 0;
    rc = gpu_attn_forward(ctx, &a, err, sizeof err);
    hipError_t e = hipDeviceSynchronize();
    int nseg_used = c.nseg ? c.nseg : gpu_attn_plan_segments(ctx, T, S, maxq, maxk);
    std::vector<uint8_t> outh(out_bytes);
    std::vector<float> lseh((size_t)T * c.hq * 2, NAN);
    if (rc == ATTN_OK && e == hipSuccess) {
        CHECK_HIP(hipMemcpy(outh.data(), dout, out_bytes, hipMemcpyDeviceToHost));
        if (dlse)
            CHECK_HIP(hipMemcpy(lseh.data(), dlse, lseh.size() * sizeof(float),
                                hipMemcpyDeviceToHost));
    }
    hipFree(dq);
    hipFree(dk);
    if (c.layout != 1)
        hipFree(dv);
    if (dlse)
        hipFree(dlse);
    hipFree(dbt);
    hipFree(dcu);
    hipFree(dsk);
    hipFree(dsinks);
    hipFree(dout);
    if (dws)
        hipFree(dws);
    gpu_attn_destroy(ctx);
    st.run++;
    if (rc != ATTN_OK || e != hipSuccess) {
        printf("FAIL %s: forward: %s %s\n", c.name, err, e != hipSuccess ? hipGetErrorString(e) : "");
        st.failed++;
        if (e != hipSuccess)
            exit(1); /* a device fault poisons the context: stop here */
        return false;
    }

    /* ---- compare ---- */
    const double out_rel = c.out_dtype == ATTN_DTYPE_BF16 ? 0x1p-8 : c.out_dtype == ATTN_DTYPE_F16 ? 0x1p-11 : 0.0;
    const double rtol = out_rel * 1.01 + 1e-5;
    /* The prefill kernel rounds P to the input type (bf16: 8 significant
     * bits, a relative 2^-9 per probability; f16: 2^-11) before P x V, so an
     * output element moves by at most that fraction of max|V|; the allowance
     * is twice it. Q and K reach the matrix units exactly. */
    const double p_round = c.q_dtype == ATTN_DTYPE_BF16 && !kv8 ? 0x1p-8 : 0x1p-10;
    const double atol = std::max(vmax, 1e-30) *
                        (c.kernel == GPU_ATTN_KERNEL_MTP ? 0x1p-10 : on_prefill ? p_round : 1e-4);
    double worst = 0, err2 = 0, ref2 = 0;
    long bad = 0;
    size_t first_bad = (size_t)-1;
    for (int tok = 0; tok < T; tok++)
        for (int h = 0; h < c.hq; h++)
            for (int d = 0; d < Dv; d++) {
                double r = ref[((size_t)tok * c.hq + h) * Dv + d];
                double gv = load_raw(outh, c.out_dtype, (size_t)tok * o_st + (size_t)h * o_sh + d);
                double diff = fabs(gv - r);
                double allowed = atol + rtol * fabs(r);
                if (!(diff <= allowed)) { /* NaN fails */
                    bad++;
                    if (first_bad == (size_t)-1)
                        first_bad = ((size_t)tok * c.hq + h) * Dv + d;
                }
                if (isfinite(diff))
                    worst = std::max(worst, diff / allowed);
                else
                    worst = INFINITY;
                err2 += isfinite(diff) ? diff * diff : 0;
                ref2 += r * r;
            }

    /* The log-sum-exp: natural-log units of the scores, so an error of the
     * f32 denominator (exp2 approximations, 2^-22 relative each; f32 sums of
     * up to 16k terms) of relative e moves it by e: 1e-3 absolute covers
     * that with a wide margin, plus 1e-5 of |lse| for the f32 max. */
    long bad_lse = 0;
    if (c.lse)
        for (int tok = 0; tok < T; tok++)
            for (int h = 0; h < c.hq; h++) {
                const double r = ref_lse[(size_t)tok * c.hq + h];
                const double g = lseh[(size_t)(tok * lse_st + h * lse_sh)];
                const bool ok_l = (r == -INFINITY && g == -INFINITY) ||
                                  fabs(g - r) <= 1e-3 + 1e-5 * fabs(r);
                if (!ok_l && bad_lse++ == 0)
                    printf("     lse token %d head %d: gpu %.7g ref %.7g\n", tok, h, g, r);
            }

    /* ---- cpu-ref cross-check: its result must agree with the float64
     * reference within the same output-rounding tolerance (it is exact up to
     * float32 arithmetic). ---- */
    long bad_cpu = 0;
    if (cpu_ref && cpu_ref->create) {
        void *be = NULL;
        char cerr[256] = "";
        attn_shape cs = shape;
        strcpy(cs.arch, "cpu");
        if (cpu_ref->create(&cpu_ref_ctx, &cs, &be, cerr, sizeof cerr) == ATTN_OK) {
            size_t cws = 0;
            if (cpu_ref->workspace_size)
                cpu_ref->workspace_size(be, &lim, &cws);
            std::vector<uint8_t> cw(cws + 64), co(out_bytes);
            attn_forward_args ca = a;
            std::vector<float> clse((size_t)T * c.hq * 2);
            ca.k_stride_block = ca.k_stride_token = ca.k_stride_head = 0; /* the host copy */
            ca.v_stride_block = ca.v_stride_token = ca.v_stride_head = 0;
            ca.lse = c.lse ? clse.data() : NULL;
            ca.q = qh.data();
            ca.k_cache = kc.data();
            ca.v_cache = vc.data();
            ca.block_table = bt.data();
            ca.cu_seqlens_q = cu.data();
            ca.seqused_k = klens.data();
            ca.sinks = c.sinks ? sinks.data() : NULL;
            ca.out = co.data();
            ca.workspace = cw.data();
            ca.workspace_size = cws;
            ca.stream = NULL;
            if (cpu_ref->forward(be, &ca, cerr, sizeof cerr) == ATTN_OK) {
                cpu_ref_checked++;
                for (int tok = 0; tok < T; tok++)
                    for (int h = 0; h < c.hq; h++)
                        for (int d = 0; d < Dv; d++) {
                            double r = ref[((size_t)tok * c.hq + h) * Dv + d];
                            double cv = load_raw(co, c.out_dtype, (size_t)tok * o_st + (size_t)h * o_sh + d);
                            if (!(fabs(cv - r) <= std::max(vmax, 1e-30) * 1e-4 + rtol * fabs(r)))
                                bad_cpu++;
                        }
            } else {
                printf("note %s: cpu-ref forward: %s\n", c.name, cerr);
            }
            cpu_ref->destroy(be);
        } else if (verbose) {
            printf("note %s: cpu-ref declines: %s\n", c.name, cerr);
        }
    }

    st.worst_ratio = std::max(st.worst_ratio, worst);
    double rel = ref2 > 0 ? sqrt(err2 / ref2) : sqrt(err2);
    bool ok = bad == 0 && bad_cpu == 0 && bad_lse == 0;
    if (!ok || verbose) {
        printf("%s %s: %s T=%d S=%d hq=%d hkv=%d D=%d page=%d q=%s kv=%s out=%s comp=%s causal=%d "
               "win=(%d,%d) softcap=%g sinks=%d nseg=%d maxk=%d st=%d raw=%d layout=%d lse=%d "
               "ramp=%g grid=%s | max err/allowed %.3g, rel L2 %.3g, bad %ld, cpu-ref bad %ld, "
               "lse bad %ld\n",
               ok ? "ok  " : "FAIL", c.name,
               c.kernel == GPU_ATTN_KERNEL_MTP ? "mtp" : on_prefill ? "prefill" : "generic", T, S,
               c.hq, c.hkv, D, c.page,
               attn_dtype_spelling(c.q_dtype), attn_dtype_spelling(c.kv_dtype),
               attn_dtype_spelling(c.out_dtype), attn_dtype_spelling(c.compute_dtype), c.causal,
               c.wl, c.wr, c.softcap, c.sinks, nseg_used, maxk, c.stages, c.raw_kv, c.layout, c.lse,
               (double)c.key_ramp, grid == 2       ? "dynamic"
               : grid != 1     ? "-"
               : fallback      ? "item(small-ws)"
                               : "item",
               worst, rel, bad, bad_cpu, bad_lse);
        if (!ok && first_bad != (size_t)-1) {
            size_t tok = first_bad / ((size_t)c.hq * Dv), h = first_bad / Dv % c.hq, d = first_bad % Dv;
            printf("     first bad: token %zu head %zu d %zu: gpu %.6g ref %.6g\n", tok, h, d,
                   (double)load_raw(outh, c.out_dtype, tok * o_st + h * o_sh + d), ref[first_bad]);
        }
    }
    if (!ok)
        st.failed++;
    return ok;
}

/* Q and output rows: contiguous, padded by 8 elements (rows stay 16-byte
 * aligned: Q read 16 bytes at a time, output stored in pairs), or padded
 * by 3 / 1 elements, which leave rows unaligned: Q read element by
 * element, output pairs stored one element at a time. */
static void pick_row_pads(Case &c)
{
    c.q_pad = pick({0, 8, 8, 3});
    c.o_pad = pick({0, 8, 8, 1});
}

static Case random_generic(int i)
{
    Case c;
    static char names[200][32];
    snprintf(names[i % 200], 32, "generic-%03d", i);
    c.name = names[i % 200];
    c.kernel = GPU_ATTN_KERNEL_GENERIC;
    c.hkv = pick({1, 2, 4, 8});
    c.hq = c.hkv * pick({1, 2, 3, 4, 5, 8, 16, 32});
    c.d = pick({64, 80, 96, 128, 192, 256});
    c.page = pick({1, 16, 32, 48, 64, 128, 512});
    c.q_dtype = pick({ATTN_DTYPE_BF16, ATTN_DTYPE_F16});
    c.out_dtype = rng_int(0, 3) == 0 ? ATTN_DTYPE_F32 : c.q_dtype;
    int kvk = rng_int(0, 2);
    c.kv_dtype = kvk == 0 ? c.q_dtype : kvk == 1 ? ATTN_DTYPE_FP8_E4M3FN : ATTN_DTYPE_FP8_E4M3FNUZ;
    c.compute_dtype = c.q_dtype;
    if (attn_conv_dtype_is_fp8(c.kv_dtype) && rng_int(0, 4) == 0) {
        c.compute_dtype = c.kv_dtype; /* fp8 compute (MHA in the plugin; any ratio here) */
    }
    c.causal = rng_int(0, 5) != 0;
    c.wl = rng_int(0, 3) == 0 ? rng_int(0, 300) : -1;
    c.wr = (!c.causal || rng_int(0, 4) == 0) && rng_int(0, 2) == 0 ? rng_int(0, 50) : -1;
    c.softcap = rng_int(0, 4) == 0 ? (float)pick({5.0, 20.0, 50.0}) : 0.f;
    c.sinks = rng_int(0, 3) == 0;
    /* Multi-token batches: half on the portable kernel, a third of those
     * with one K/V stage (the path of gfx942 at D 128). */
    c.scalar = rng_int(0, 1);
    c.stages = pick({0, 1, 2});
    /* the raw-K/V variant of gfx942 at D 192/256, 1 or 2 stages */
    c.raw_kv = c.stages && (c.d == 192 || c.d == 256) && rng_int(0, 1);
    int S = pick({1, 1, 2, 3, 5, 8});
    int big = rng_int(0, 3) == 0;
    for (int s = 0; s < S; s++) {
        int q = pick({1, 1, 1, 2, 3, 4, 7, 16, 33});
        if (big && s == 0)
            q = rng_int(40, 130);
        int k = q + rng_int(0, rng_int(0, 1) ? 300 : 2500);
        if (rng_int(0, 9) == 0)
            k = 0 + q; /* no context: prefill only */
        c.qlens.push_back(q);
        c.klens.push_back(k);
    }
    c.nseg = pick({0, 0, 0, 1, 2, 3, 8, 64});
    pick_row_pads(c);
    c.k_descale = pick({1.0f, 0.5f, 0.03125f, 3.0f});
    c.v_descale = pick({1.0f, 0.25f, 2.0f});
    c.q_descale = pick({1.0f, 0.125f, 0.0625f});
    /* Half of the cases that the prefill kernel would take run on the
     * portable kernel instead, which still runs them on AMD and without
     * sm_90a code. */
    c.scalar = rng_int(0, 1);
    /* A third of those with one K/V stage, the path of gfx942 at D 128 and
     * of the MTP shape on gfx950 (where two stages do not fit the LDS). */
    if (c.scalar && rng_int(0, 2) == 0) {
        c.stages = 1;
        c.raw_kv = (c.d == 192 || c.d == 256) && rng_int(0, 1);
    }
    limit_cost(c);
    return c;
}

/* The prefill families' reference budget: a float64 row per (token, head),
 * spread over the host's cores; ~1e9 multiply-adds is a second or two on
 * the device machine's 16 cores. Heads go first (the kernel's tiling is the
 * same for any number of KV heads), then the group, then the lengths. */
static void limit_cost_prefill(Case &c, double cap)
{
    for (;;) {
        double cost = 0;
        for (size_t s = 0; s < c.qlens.size(); s++)
            cost += (double)c.qlens[s] * c.klens[s] * c.hq * c.d;
        if (cost <= cap)
            return;
        if (c.hkv > 1) {
            c.hq /= c.hkv;
            c.hkv = 1;
            continue;
        }
        if (c.hq > 4 && c.hq % 2 == 0) {
            c.hq /= 2;
            c.hkv = 1;
            continue;
        }
        size_t longest = 0;
        for (size_t s = 1; s < c.qlens.size(); s++)
            if ((double)c.qlens[s] * c.klens[s] > (double)c.qlens[longest] * c.klens[longest])
                longest = s;
        const int ctx = c.klens[longest] - c.qlens[longest];
        if (ctx > c.qlens[longest]) {
            c.klens[longest] = c.qlens[longest] + ctx / 2; /* shorter cached context */
        } else if (c.qlens[longest] > 1) {
            c.qlens[longest] /= 2;
            c.klens[longest] = c.qlens[longest] + ctx / 2;
        } else {
            return;
        }
    }
}

/* Shapes and features of the prefill kernel: Q bf16/f16 with a cache of the
 * same type or e4m3fn/e4m3fnuz (f16 math), every head size, GQA ratios
 * 1-16, page sizes engines use (1, 16, 48, 64, 128, 512), causal or not, windows, softcap, sinks, strided q/out, rule and
 * forced segment counts. */
static Case random_prefill_base(int i, const char *family)
{
    Case c;
    static char names[3][200][32];
    const int fam = family[0] == 'p' ? 0 : family[0] == 'c' ? 1 : 2;
    snprintf(names[fam][i % 200], 32, "%s-%03d", family, i);
    c.name = names[fam][i % 200];
    c.kernel = GPU_ATTN_KERNEL_GENERIC;
    c.hkv = pick({1, 1, 2, 4, 8});
    c.hq = c.hkv * pick({1, 2, 3, 4, 5, 8, 16});
    c.d = pick({64, 80, 96, 128, 128, 192, 256});
    c.page = pick({1, 16, 16, 48, 64, 128, 512});
    c.q_dtype = pick({ATTN_DTYPE_BF16, ATTN_DTYPE_BF16, ATTN_DTYPE_F16});
    /* a third with an fp8 cache (converted to f16 per tile; D 192 runs on
     * the portable kernel), with descales != 1 */
    const int kvk = rng_int(0, 5);
    c.kv_dtype = kvk == 0 ? ATTN_DTYPE_FP8_E4M3FN : kvk == 1 ? ATTN_DTYPE_FP8_E4M3FNUZ : c.q_dtype;
    c.compute_dtype = c.q_dtype;
    c.out_dtype = rng_int(0, 3) == 0 ? ATTN_DTYPE_F32 : c.q_dtype;
    c.causal = rng_int(0, 4) != 0;
    c.wl = rng_int(0, 3) == 0 ? rng_int(0, 700) : -1;
    c.wr = (!c.causal || rng_int(0, 4) == 0) && rng_int(0, 2) == 0 ? rng_int(0, 200) : -1;
    c.softcap = rng_int(0, 4) == 0 ? (float)pick({5.0, 20.0, 50.0}) : 0.f;
    c.sinks = rng_int(0, 3) == 0;
    c.nseg = pick({0, 0, 0, 0, 1, 2, 4});
    pick_row_pads(c);
    c.k_descale = pick({1.0f, 0.5f, 0.03125f, 3.0f});
    c.v_descale = pick({1.0f, 0.25f, 2.0f});
    c.q_descale = 1.0f;
    c.key_ramp = i % 3 == 2 ? 10.f : 0.f; /* (no draw: the other cases stay as they were) */
    return c;
}

/* The prefill families' "big" cases, every fourth from the second and from
 * the fourth (i % 4 == 1, 3): enough items that the one-wave rule runs them
 * on the prefill kernel's dynamic grid (gpu_attn_plan_prefill_grid reports
 * which grid ran; main checks that both did). The fourth also passes a
 * workspace without room for that grid's counters (small_ws): one program
 * an item then. */
static bool big_case(int i, Case &c)
{
    c.small_ws = i % 4 == 3;
    c.big = i % 4 == 1 || i % 4 == 3;
    return c.big;
}

/* A big case's heads: 2-8 KV heads of 4-16 query heads (tiles of 8-32
 * tokens), a head size the prefill kernel takes with the case's types
 * (attn_launch_plan_prefill_takes) and whose plan the one-wave rule may run
 * on the dynamic grid (attn_launch_plan_prefill_layout's `dynamic`), or any
 * such size of `dims` where the bench's switch forces one grid for every
 * launch. The prefill families' types always leave one (random_prefill_base). */
static void big_heads(Case &c, std::initializer_list<int> dims)
{
    c.hkv = pick({2, 4, 8});
    c.hq = c.hkv * pick({4, 8, 16});
    const bool kv8 = attn_conv_dtype_is_fp8(c.kv_dtype);
    const bool forced = getenv("ATTNREG_BENCH_PERSIST") != NULL;
    attn_shape s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    s.q_dtype = c.q_dtype;
    s.kv_dtype = c.kv_dtype;
    s.compute_dtype = c.compute_dtype;
    std::vector<int> usable;
    for (int d : dims) {
        s.head_dim = d;
        if (attn_launch_plan_prefill_takes(&s) &&
            (forced || attn_launch_plan_prefill_layout(d, kv8).dynamic))
            usable.push_back(d);
    }
    c.d = usable[rng_int(0, (int)usable.size() - 1)];
}

/* Sequences of 3/4 to all of qmax tokens (up to ctx_hi cached keys more)
 * until the batch has 1.5-3 waves of (query tile, KV head) items, or the
 * next would take the float64 reference past `budget` multiply-adds: an
 * item costs the reference 128 rows x its keys x D, so a few waves of them
 * stay affordable only over short sequences (qmax: about 20000 / D tokens,
 * and a sequence at most a sixth of the budget). The lengths are close, so
 * that the batch's items fill most of the dynamic grid's item space (the
 * rule's second condition). */
static void add_big_sequences(Case &c, int ctx_hi, double budget)
{
    const int bq = 128 / std::min(c.hq / c.hkv, 128);
    int qmax = std::max(2 * bq, std::min(320, 20000 / c.d));
    while (qmax > 2 * bq && (double)qmax * (qmax + ctx_hi) * c.hq * c.d > budget / 6)
        qmax = qmax * 7 / 8;
    const int target = rng_int(3, 6) * g_cus / 2;
    double cost = 0;
    for (int items = 0; items < target;) {
        const int q = rng_int(qmax * 3 / 4, qmax), k = q + rng_int(0, ctx_hi);
        const double step = (double)q * k * c.hq * c.d;
        if (!c.qlens.empty() && cost + step > budget)
            break;
        c.qlens.push_back(q);
        c.klens.push_back(k);
        cost += step;
        items += (q + bq - 1) / bq * c.hkv;
    }
}

/* Prefill: query lengths up to 4096, a short cached context or none. */
static Case random_prefill(int i)
{
    Case c = random_prefill_base(i, "prefill");
    if (big_case(i, c)) {
        big_heads(c, {64, 80, 96, 128, 192, 256});
        add_big_sequences(c, rng_int(0, 2) == 0 ? 64 : 0, 1e9);
        limit_cost_prefill(c, 1.2e9);
        return c;
    }
    const int S = pick({1, 1, 2, 3});
    for (int s = 0; s < S; s++) {
        const int q = pick({rng_int(2, 200), rng_int(200, 1200), rng_int(1200, 4096)});
        c.qlens.push_back(q);
        c.klens.push_back(q + (rng_int(0, 2) == 0 ? rng_int(0, 300) : 0));
    }
    limit_cost_prefill(c, 1.2e9);
    return c;
}

/* Chunked prefill: 64-1024 new tokens over 1k-16k cached keys. */
static Case random_chunked(int i)
{
    Case c = random_prefill_base(i, "chunked");
    if (big_case(i, c)) {
        /* New tokens over long contexts cost the reference too much for a
         * wave of items at one segment: these have (query tiles x KV
         * heads) W just over a quarter of the SMs (at most half), so the
         * segment rule splits their keys in 4 (over 1536 keys at D <= 128)
         * and the launch's 4 W items pass one wave. Chunks of one length:
         * a batch with fewer tokens than its sequences at the longest runs
         * as a mixed batch, at one segment. */
        c.hkv = pick({2, 4});
        c.hq = c.hkv * pick({4, 8, 16});
        c.d = pick({64, 64, 80});
        c.nseg = 0;
        const int bq = 128 / (c.hq / c.hkv), S = pick({1, 2});
        const int w = rng_int(g_cus / 4 + 1, g_cus / 4 + 8);
        const int t = ((w + c.hkv - 1) / c.hkv + S - 1) / S; /* tiles a chunk */
        const int q = t * bq - rng_int(0, bq - 1), ctx = rng_int(1600, 1800);
        for (int s = 0; s < S; s++) {
            c.qlens.push_back(q);
            c.klens.push_back(q + ctx);
        }
        limit_cost_prefill(c, 1.2e9);
        return c;
    }
    const int S = pick({1, 2, 3, 4});
    for (int s = 0; s < S; s++) {
        const int q = rng_int(64, 1024);
        c.qlens.push_back(q);
        c.klens.push_back(q + rng_int(1000, 16000));
    }
    limit_cost_prefill(c, 1.2e9);
    return c;
}

/* Mixed batches: prefill chunks and single decode tokens in one batch. */
static Case random_mixed(int i)
{
    Case c = random_prefill_base(i, "mixed");
    if (big_case(i, c)) {
        /* chunks of close lengths and up to half as many decode tokens
         * (more would leave most of the dynamic grid's item space empty:
         * the rule's second condition) */
        big_heads(c, {64, 80, 96, 128});
        add_big_sequences(c, 50, 1e9);
        const int chunks = (int)c.qlens.size(), decodes = rng_int(1, std::max(1, chunks / 2));
        for (int s = 0; s < decodes; s++) {
            c.qlens.push_back(1);
            c.klens.push_back(1 + rng_int(0, 3000));
        }
        for (int s = (int)c.qlens.size() - 1; s > 0; s--) { /* decode tokens anywhere */
            const int j = rng_int(0, s);
            std::swap(c.qlens[s], c.qlens[j]);
            std::swap(c.klens[s], c.klens[j]);
        }
        limit_cost_prefill(c, 1.2e9);
        return c;
    }
    const int S = rng_int(3, 10);
    for (int s = 0; s < S; s++) {
        const bool chunk = s == 0 || rng_int(0, 2) == 0;
        const int q = chunk ? rng_int(2, 600) : 1;
        c.qlens.push_back(q);
        c.klens.push_back(q + rng_int(0, 3000));
    }
    std::swap(c.qlens[0], c.qlens[rng_int(0, S - 1)]); /* the chunk anywhere */
    for (int s = 0; s < S; s++)
        c.klens[s] = std::max(c.klens[s], c.qlens[s]);
    limit_cost_prefill(c, 1.2e9);
    return c;
}

/* The generic kernel's decode path: every sequence has one query token
 * (max_seqlen_q == 1), with every feature the generic kernel has (any GQA
 * ratio, all head sizes, 16-bit and fp8 caches, FP8 compute, windows,
 * softcap, sinks, strided q/out, forced and rule segment counts). */
static Case random_decode(int i)
{
    Case c = random_generic(i);
    static char names[200][32];
    snprintf(names[i % 200], 32, "decode-%03d", i);
    c.name = names[i % 200];
    int S = pick({1, 1, 2, 3, 5, 8, 16, 33});
    c.qlens.assign(S, 1);
    c.klens.clear();
    for (int s = 0; s < S; s++) {
        int k = 1 + (rng_int(0, 1) ? rng_int(0, 300) : rng_int(0, 4000));
        if (rng_int(0, 9) == 0)
            k = pick({1, 2, 7, 8, 9, 16, 17});
        c.klens.push_back(k);
    }
    c.nseg = pick({0, 0, 0, 1, 2, 3, 8, 64});
    limit_cost(c);
    return c;
}

/* Decode batches that take the matrix-unit decode kernel on NVIDIA
 * (attn_decode_mma.hip): Q and cache of one 16-bit type, no FP8 compute;
 * every other feature as random_decode. */
static Case random_decode_mma(int i)
{
    Case c = random_decode(i);
    static char names[200][32];
    snprintf(names[i % 200], 32, "decode-mma-%03d", i);
    c.name = names[i % 200];
    c.page = pick({16, 48, 128, 512}); /* the kernel's pages: multiples of 16 */
    c.kv_dtype = c.q_dtype;
    c.compute_dtype = c.q_dtype;
    c.k_descale = c.v_descale = c.q_descale = 1.0f;
    return c;
}

/* Decode batches over fp8 caches (e4m3fn and e4m3fnuz) that take the
 * matrix-unit decode kernel on NVIDIA (f16 math, the raw tiles converted
 * per tile): bf16 or f16 Q, descales != 1, pages of a multiple of 16, every
 * other feature as random_decode (no FP8 compute: that stays scalar). */
static Case random_decode_fp8(int i)
{
    Case c = random_decode(i);
    static char names[200][32];
    snprintf(names[i % 200], 32, "decode-fp8-%03d", i);
    c.name = names[i % 200];
    c.page = pick({16, 32, 48, 128, 512});
    c.kv_dtype = rng_int(0, 1) ? ATTN_DTYPE_FP8_E4M3FN : ATTN_DTYPE_FP8_E4M3FNUZ;
    c.compute_dtype = c.q_dtype;
    c.k_descale = pick({0.5f, 0.03125f, 3.0f, 1.0f});
    c.v_descale = pick({0.25f, 2.0f, 1.0f});
    c.q_descale = 1.0f;
    return c;
}

static Case random_mtp(int i)
{
    Case c;
    static char names[200][32];
    snprintf(names[i % 200], 32, "mtp-%03d", i);
    c.name = names[i % 200];
    c.kernel = GPU_ATTN_KERNEL_MTP;
    c.hkv = pick({1, 1, 2, 4});
    c.hq = 16 * c.hkv;
    c.d = 256;
    c.page = 16;
    c.q_dtype = ATTN_DTYPE_BF16;
    c.kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
    c.out_dtype = pick({ATTN_DTYPE_BF16, ATTN_DTYPE_BF16, ATTN_DTYPE_F32});
    c.compute_dtype = ATTN_DTYPE_BF16;
    /* The plugin accepts causal, no window/softcap/sinks; the kernel handles
     * them anyway, so a quarter of the cases exercise them. */
    int extras = rng_int(0, 3) == 0;
    c.causal = extras ? rng_int(0, 3) != 0 : 1;
    c.wl = extras && rng_int(0, 1) ? rng_int(0, 400) : -1;
    c.wr = extras && !c.causal && rng_int(0, 1) ? rng_int(0, 40) : -1;
    c.softcap = extras && rng_int(0, 2) == 0 ? 30.f : 0.f;
    c.sinks = extras && rng_int(0, 1);
    int S = pick({1, 2, 3, 5, 8, 13});
    int maxq = pick({2, 4, 3, 1});
    for (int s = 0; s < S; s++) {
        int q = rng_int(1, maxq);
        int k = q + (rng_int(0, 4) == 0 ? rng_int(0, 40) : rng_int(0, 3000));
        c.qlens.push_back(q);
        c.klens.push_back(k);
    }
    c.nseg = pick({0, 0, 0, 1, 2, 5, 64});
    pick_row_pads(c);
    c.k_descale = pick({1.0f, 0.5f, 0.0625f, 2.0f});
    c.v_descale = pick({1.0f, 0.25f, 4.0f});
    c.q_descale = 1.f;
    c.key_ramp = i % 3 == 2 ? 10.f : 0.f;
    limit_cost(c);
    return c;
}

static Case upstream_case(gpu_attn_kernel kernel, int hq, int hkv, int out_dtype)
{
    Case c;
    c.name = kernel == GPU_ATTN_KERNEL_MTP ? (hq == 16 ? "upstream-mtp-16/1" : "upstream-mtp-32/2")
                                           : (hq == 16 ? "upstream-generic-16/1" : "upstream-generic-32/2");
    c.kernel = kernel;
    c.hq = hq;
    c.hkv = hkv;
    c.d = 256;
    c.page = 16;
    c.q_dtype = ATTN_DTYPE_BF16;
    c.kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
    c.out_dtype = out_dtype;
    c.compute_dtype = ATTN_DTYPE_BF16;
    c.causal = 1;
    c.wl = c.wr = -1;
    c.softcap = 0;
    c.sinks = 0;
    c.qlens = {4, 2};
    c.klens = {1024, 769};
    c.nseg = 0;
    c.q_pad = c.o_pad = 0;
    c.k_descale = c.v_descale = c.q_descale = 1.0f;
    return c;
}

/* ---- K/V layouts the forward refuses, by name -------------------------- */

/* The K/V cache layouts the forward must refuse (resolve_kv_layout in
 * gpu_attn.hip): ATTN_ERR_UNSUPPORTED with the reason in the message, before
 * any read of the (here tiny) buffers. Returns the failures. */
static int check_kv_layout_rejections()
{
    attn_shape shape;
    memset(&shape, 0, sizeof shape);
    shape.struct_size = sizeof shape;
    shape.num_q_heads = 8;
    shape.num_kv_heads = 2;
    shape.head_dim = shape.head_dim_v = 128;
    shape.q_dtype = shape.kv_dtype = shape.compute_dtype = shape.out_dtype = ATTN_DTYPE_BF16;
    shape.page_size = 16;
    shape.max_q_len = 4;
    shape.max_kv_len = 64;
    shape.causal = 1;
    shape.window_left = shape.window_right = -1;
    char err[512] = "";
    gpu_attn_ctx *ctx = NULL;
    if (gpu_attn_create(GPU_ATTN_KERNEL_GENERIC, &shape, &ctx, err, sizeof err) != ATTN_OK) {
        printf("FAIL kv layout rejections: create: %s\n", err);
        return 1;
    }
    void *buf = NULL;
    CHECK_HIP(hipMalloc(&buf, 1 << 20));
    struct Bad {
        int64_t kb, kt, kh, vb, vt, vh; /* strides in elements (block, token, head) */
        int misalign;                   /* the cache base 2 bytes off */
        const char *why;                /* in the message */
    };
    const Bad bad[] = {
        {4096, 256, 128, 4096, 264, 128, 0, "K and V strides differ"},
        {4096, 260, 128, 4096, 260, 128, 0, "not 16-byte aligned"},
        {4096, 256, 128, 4096, 256, 128, 1, "not 16-byte aligned"},
        {4104, 256, 128, 4104, 256, 128, 0, "not a multiple of the token stride"},
        /* 2^31 bf16 elements: a 4 GiB token stride (the prefill producer's
         * offsets are 32 x 32 -> 64-bit products) */
        {16ll << 31, 1ll << 31, 128, 16ll << 31, 1ll << 31, 128, 0, "token stride is 4 GiB"},
    };
    int failed = 0;
    for (const Bad &b : bad) {
        attn_forward_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.num_seqs = 1;
        a.num_tokens = 1;
        uint8_t *base = (uint8_t *)buf;
        a.q = a.out = base;
        a.k_cache = a.v_cache = base + (b.misalign ? 2 : 0);
        a.num_blocks = 1;
        a.block_table = a.cu_seqlens_q = a.seqused_k = (const int32_t *)(base + 4096);
        a.block_table_stride = 1;
        a.max_seqlen_q = 1;
        a.max_seqlen_k = 16;
        a.scale = 1.f;
        a.q_descale = a.k_descale = a.v_descale = 1.f;
        a.k_stride_block = b.kb;
        a.k_stride_token = b.kt;
        a.k_stride_head = b.kh;
        a.v_stride_block = b.vb;
        a.v_stride_token = b.vt;
        a.v_stride_head = b.vh;
        err[0] = 0;
        const attn_status rc = gpu_attn_forward(ctx, &a, err, sizeof err);
        if (rc != ATTN_ERR_UNSUPPORTED || !strstr(err, b.why) || !strstr(err, "K/V cache strides")) {
            printf("FAIL kv layout rejection (strides k %lld %lld %lld, v %lld %lld %lld%s): "
                   "status %d, want ATTN_ERR_UNSUPPORTED with \"%s\"; message: %s\n",
                   (long long)b.kb, (long long)b.kt, (long long)b.kh, (long long)b.vb,
                   (long long)b.vt, (long long)b.vh, b.misalign ? ", base 2 bytes off" : "",
                   (int)rc, b.why, err);
            failed++;
        }
    }
    CHECK_HIP(hipFree(buf));
    gpu_attn_destroy(ctx);
    printf("kv layout rejections: %d cases, %d failed\n", (int)(sizeof bad / sizeof bad[0]),
           failed);
    return failed;
}

/* ---- KV append: the GPU cache must be byte-identical to cpu-ref's ------ */

/* Random tokens (some padding slots, -1) into a random cache in one of the
 * layouts, from f32/f16/bf16 rows with padded strides, into every cache
 * dtype with scales != 1 and values past the fp8 range (saturation); the
 * whole cache, untouched slots included, is compared byte for byte with
 * what cpu-ref's append_kv makes of the same start. */
static bool run_append_case(int i, Stats &st)
{
    const int hkv = pick({1, 2, 4, 8}), d = pick({64, 80, 96, 128, 192, 256});
    const int page = pick({1, 16, 48, 64});
    const int kvd = pick({ATTN_DTYPE_BF16, ATTN_DTYPE_F16, ATTN_DTYPE_FP8_E4M3FN,
                          ATTN_DTYPE_FP8_E4M3FNUZ});
    const int src = pick({ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16});
    const int layout = pick({0, 1, 2, 3});
    const int T = pick({1, 7, 64, 300});
    const int nblocks = (T + page - 1) / page + 3;
    const float ks = pick({1.0f, 0.5f, 3.7f}), vs = pick({1.0f, 0.25f, 11.0f});
    const int64_t pad = rng_int(0, 1) ? 8 : 0;
    const int64_t sh = d + pad, stt = hkv * sh + pad;
    std::vector<uint8_t> kin((size_t)T * stt * dsize(src)), vin(kin.size());
    for (size_t x = 0; x < (size_t)T * stt; x++) {
        store_raw(kin, src, x, rng_sym(rng_int(0, 9) == 0 ? 900.f : 4.f));
        store_raw(vin, src, x, rng_sym(rng_int(0, 9) == 0 ? 900.f : 4.f));
    }
    std::vector<int> perm((size_t)nblocks * page);
    for (size_t x = 0; x < perm.size(); x++)
        perm[x] = (int)x;
    for (size_t x = perm.size() - 1; x > 0; x--)
        std::swap(perm[x], perm[rng_int(0, (int)x)]);
    std::vector<int64_t> slots(T);
    for (int t = 0; t < T; t++)
        slots[t] = rng_int(0, 9) == 0 ? -1 : perm[t];
    const KvLayout lay = kv_layout(layout, nblocks, page, hkv, d);
    const size_t eb = dsize(kvd);
    std::vector<uint8_t> cache((size_t)lay.elems * eb);
    for (auto &b : cache)
        b = (uint8_t)rng_int(0, 255) & 0x3F; /* finite codes in every format */
    std::vector<uint8_t> vcache = layout == 1 ? std::vector<uint8_t>() : cache;

    attn_shape shape;
    memset(&shape, 0, sizeof shape);
    shape.struct_size = sizeof shape;
    shape.num_q_heads = hkv;
    shape.num_kv_heads = hkv;
    shape.head_dim = shape.head_dim_v = d;
    shape.q_dtype = ATTN_DTYPE_BF16;
    shape.kv_dtype = kvd;
    shape.compute_dtype = ATTN_DTYPE_BF16;
    shape.out_dtype = ATTN_DTYPE_BF16;
    shape.page_size = page;
    shape.max_q_len = 1;
    shape.max_kv_len = nblocks * page;
    shape.causal = 1;
    shape.window_left = shape.window_right = -1;
    attn_append_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.num_tokens = T;
    a.src_dtype = src;
    a.k_stride_token = a.v_stride_token = stt;
    a.k_stride_head = a.v_stride_head = sh;
    a.num_blocks = nblocks;
    a.k_cache_stride_block = a.v_cache_stride_block = lay.sb;
    a.k_cache_stride_token = a.v_cache_stride_token = lay.st;
    a.k_cache_stride_head = a.v_cache_stride_head = lay.sh;
    a.k_scale = ks;
    a.v_scale = vs;

    /* cpu-ref on the host copy */
    std::vector<uint8_t> want = cache, vwant = vcache;
    char err[256] = "";
    bool ok = cpu_ref && cpu_ref->append_kv;
    if (ok) {
        void *be = NULL;
        attn_shape cs = shape;
        strcpy(cs.arch, "cpu");
        ok = cpu_ref->create(&cpu_ref_ctx, &cs, &be, err, sizeof err) == ATTN_OK;
        if (ok) {
            attn_append_args ca = a;
            ca.k = kin.data();
            ca.v = vin.data();
            ca.slot_mapping = slots.data();
            ca.k_cache = want.data();
            ca.v_cache = layout == 1 ? want.data() + lay.v_off * eb : vwant.data();
            ok = cpu_ref->append_kv(be, &ca, err, sizeof err) == ATTN_OK;
            cpu_ref->destroy(be);
        }
    }
    gpu_attn_ctx *ctx = NULL;
    attn_status rc = ok ? gpu_attn_create(GPU_ATTN_KERNEL_GENERIC, &shape, &ctx, err, sizeof err)
                        : ATTN_ERR_INVALID_ARGUMENT;
    void *dk = NULL, *dv = NULL, *dkin = NULL, *dvin = NULL, *dslots = NULL;
    if (rc == ATTN_OK) {
        CHECK_HIP(hipMalloc(&dk, cache.size()));
        CHECK_HIP(hipMemcpy(dk, cache.data(), cache.size(), hipMemcpyHostToDevice));
        dv = (uint8_t *)dk + lay.v_off * eb;
        if (layout != 1) {
            CHECK_HIP(hipMalloc(&dv, vcache.size()));
            CHECK_HIP(hipMemcpy(dv, vcache.data(), vcache.size(), hipMemcpyHostToDevice));
        }
        CHECK_HIP(hipMalloc(&dkin, kin.size()));
        CHECK_HIP(hipMalloc(&dvin, vin.size()));
        CHECK_HIP(hipMalloc(&dslots, slots.size() * 8));
        CHECK_HIP(hipMemcpy(dkin, kin.data(), kin.size(), hipMemcpyHostToDevice));
        CHECK_HIP(hipMemcpy(dvin, vin.data(), vin.size(), hipMemcpyHostToDevice));
        CHECK_HIP(hipMemcpy(dslots, slots.data(), slots.size() * 8, hipMemcpyHostToDevice));
        a.k = dkin;
        a.v = dvin;
        a.slot_mapping = (const int64_t *)dslots;
        a.k_cache = dk;
        a.v_cache = dv;
        rc = gpu_attn_append_kv(ctx, &a, err, sizeof err);
        CHECK_HIP(hipDeviceSynchronize());
    }
    std::vector<uint8_t> got(cache.size()), vgot(vcache.size());
    if (rc == ATTN_OK) {
        CHECK_HIP(hipMemcpy(got.data(), dk, got.size(), hipMemcpyDeviceToHost));
        if (layout != 1)
            CHECK_HIP(hipMemcpy(vgot.data(), dv, vgot.size(), hipMemcpyDeviceToHost));
    }
    hipFree(dk);
    if (layout != 1)
        hipFree(dv);
    hipFree(dkin);
    hipFree(dvin);
    hipFree(dslots);
    if (ctx)
        gpu_attn_destroy(ctx);
    st.run++;
    long diff = 0;
    size_t first = (size_t)-1;
    for (size_t x = 0; rc == ATTN_OK && x < got.size(); x++)
        if (got[x] != want[x] && diff++ == 0)
            first = x;
    for (size_t x = 0; rc == ATTN_OK && x < vgot.size(); x++)
        if (vgot[x] != vwant[x] && diff++ == 0)
            first = x;
    const bool pass = rc == ATTN_OK && diff == 0;
    if (!pass) {
        st.failed++;
        printf("FAIL append-%03d: hkv=%d D=%d page=%d kv=%s src=%s layout=%d T=%d scales %g/%g: "
               "%s, %ld bytes differ (first at %zu)\n",
               i, hkv, d, page, attn_dtype_spelling(kvd), attn_dtype_spelling(src), layout, T, ks,
               vs, rc == ATTN_OK ? "ran" : err, diff, first);
    }
    return pass;
}

/* ---- merging partial states on the GPU --------------------------------- */

/* Random states (rows with -inf on one side or both), padded strides, the
 * output in place over a in a share of the cases, against the float64
 * merge: the GPU does the host's float math, so f32 states agree to float
 * rounding (1e-6 relative) and 16-bit ones to their output rounding. */
static bool run_merge_case(int i, Stats &st)
{
    const int T = pick({1, 5, 64, 300}), H = pick({1, 8, 32, 64}), D = pick({8, 64, 128, 256});
    const int dt = pick({ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16});
    const int64_t sh = D + (rng_int(0, 1) ? 8 : 0), stt = H * sh + (rng_int(0, 1) ? 8 : 0);
    const int64_t lt = H + (rng_int(0, 1) ? 3 : 0);
    const bool in_place = rng_int(0, 2) == 0;
    const size_t n = (size_t)T * stt, eb = dsize(dt);
    std::vector<uint8_t> ha(n * eb), hb(n * eb);
    for (size_t x = 0; x < n; x++) {
        store_raw(ha, dt, x, rng_sym(2.f));
        store_raw(hb, dt, x, rng_sym(2.f));
    }
    std::vector<float> la((size_t)T * lt), lb(la.size());
    for (size_t x = 0; x < la.size(); x++) {
        la[x] = rng_sym(20.f);
        lb[x] = rng_sym(20.f);
        const int k = rng_int(0, 15);
        if (k == 0)
            la[x] = -INFINITY;
        else if (k == 1)
            lb[x] = -INFINITY;
        else if (k == 2)
            la[x] = lb[x] = -INFINITY;
    }
    void *da, *db, *dout, *dla, *dlb, *dlo;
    CHECK_HIP(hipMalloc(&da, n * eb));
    CHECK_HIP(hipMalloc(&db, n * eb));
    CHECK_HIP(hipMalloc(&dla, la.size() * 4));
    CHECK_HIP(hipMalloc(&dlb, lb.size() * 4));
    CHECK_HIP(hipMalloc(&dlo, la.size() * 4));
    CHECK_HIP(hipMemcpy(da, ha.data(), n * eb, hipMemcpyHostToDevice));
    CHECK_HIP(hipMemcpy(db, hb.data(), n * eb, hipMemcpyHostToDevice));
    CHECK_HIP(hipMemcpy(dla, la.data(), la.size() * 4, hipMemcpyHostToDevice));
    CHECK_HIP(hipMemcpy(dlb, lb.data(), lb.size() * 4, hipMemcpyHostToDevice));
    dout = da;
    if (!in_place)
        CHECK_HIP(hipMalloc(&dout, n * eb));
    attn_merge_args m;
    memset(&m, 0, sizeof m);
    m.struct_size = sizeof m;
    m.num_tokens = T;
    m.num_heads = H;
    m.head_dim = D;
    m.dtype = dt;
    m.a = da;
    m.b = db;
    m.lse_a = (const float *)dla;
    m.lse_b = (const float *)dlb;
    m.out = dout;
    m.lse_out = in_place ? (float *)dla : (float *)dlo;
    m.stride_token = stt;
    m.stride_head = sh;
    m.lse_stride_token = lt;
    m.lse_stride_head = 1;
    char err[256] = "";
    attn_status rc = gpu_attn_merge_states(NULL, &m, NULL, err, sizeof err);
    CHECK_HIP(hipDeviceSynchronize());
    std::vector<uint8_t> ho(n * eb);
    std::vector<float> lo(la.size());
    CHECK_HIP(hipMemcpy(ho.data(), dout, n * eb, hipMemcpyDeviceToHost));
    CHECK_HIP(hipMemcpy(lo.data(), m.lse_out, lo.size() * 4, hipMemcpyDeviceToHost));
    hipFree(da);
    hipFree(db);
    hipFree(dla);
    hipFree(dlb);
    hipFree(dlo);
    if (!in_place)
        hipFree(dout);
    const double rel = dt == ATTN_DTYPE_BF16 ? 0x1p-8 : dt == ATTN_DTYPE_F16 ? 0x1p-11 : 1e-6;
    long bad = 0;
    for (int t = 0; rc == ATTN_OK && t < T; t++)
        for (int h = 0; h < H; h++) {
            const size_t at = (size_t)t * lt + h;
            const double a_ = la[at], b_ = lb[at], mx = std::max(a_, b_);
            const double wa = a_ == -INFINITY ? 0 : exp(a_ - mx), wb = b_ == -INFINITY ? 0 : exp(b_ - mx);
            const double sum = wa + wb, rl = sum > 0 ? mx + log(sum) : -INFINITY;
            if (!((rl == -INFINITY && lo[at] == -INFINITY) || fabs(lo[at] - rl) <= 1e-5 * (1 + fabs(rl))))
                bad++;
            for (int e = 0; e < D; e++) {
                const size_t x = (size_t)t * stt + (size_t)h * sh + e;
                const double r = sum > 0 ? (load_raw(ha, dt, x) * wa + load_raw(hb, dt, x) * wb) / sum : 0;
                if (!(fabs(load_raw(ho, dt, x) - r) <= rel * (fabs(r) + 2.0) * 1.01))
                    bad++;
            }
        }
    st.run++;
    const bool pass = rc == ATTN_OK && bad == 0;
    if (!pass) {
        st.failed++;
        printf("FAIL merge-%03d: T=%d H=%d D=%d %s in_place=%d: %s, %ld values off\n", i, T, H, D,
               attn_dtype_spelling(dt), (int)in_place, rc == ATTN_OK ? "ran" : err, bad);
    }
    return pass;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* progress survives a timeout kill */
    attn_device_info devs[8];
    for (auto &d : devs)
        d.struct_size = sizeof d;
    uint32_t n = 0;
    char err[256] = "";
    if (gpu_attn_probe(devs, 8, &n, err, sizeof err) != ATTN_OK || n == 0) {
        printf("SKIPPED: no GPU device: %s\n", err);
        return SKIP_CODE;
    }
    int in_binary = 0;
    for (const char *const *a = gpu_attn_built_archs(); *a; a++)
        if (strcmp(*a, devs[0].arch) == 0)
            in_binary = 1;
    if (!in_binary) {
        printf("SKIPPED: device 0 is %s (%s), which this build holds no kernels for\n",
               devs[0].arch, devs[0].name);
        return SKIP_CODE;
    }
    printf("device 0: %s (%s), %d compute units, platform %s\n", devs[0].name, devs[0].arch,
           devs[0].compute_units, gpu_attn_platform());
    if (devs[0].compute_units > 0)
        g_cus = devs[0].compute_units;
    const char *cref = argc > 1 ? argv[1] : getenv("ATTNREG_CPU_REF_PLUGIN");
    load_cpu_ref(cref);
    int count = argc > 2 ? atoi(argv[2]) : 120;
    /* argv[3]: the families to run, a comma list of generic, mtp, decode,
     * decode-mma, decode-fp8, prefill, chunked, mixed, append, merge (default: all), for a
     * device run on a time budget. */
    const char *fam =
        argc > 3 ? argv[3]
                 : "generic,mtp,decode,decode-mma,decode-fp8,prefill,chunked,mixed,append,merge";
    /* The prefill families' cases cost ~10x a generic case on the host (the
     * float64 reference): a third as many of them. */
    const int count_prefill = argc > 4 ? atoi(argv[4]) : std::max(1, count / 3);
    auto wants = [&](const char *name) {
        std::string list = std::string(",") + fam + ",";
        return list.find(std::string(",") + name + ",") != std::string::npos;
    };
    const char *seed = getenv("ATTNREG_TEST_SEED");
    rng_state ^= seed ? strtoull(seed, NULL, 0) : 20261129ull;

    Stats gen, mtp, dec, dmma, dfp8, pre, chk, mix, app, mrg;
    /* Upstream reference case on both kernels, both head layouts, bf16 and f32 out. */
    for (int o : {ATTN_DTYPE_BF16, ATTN_DTYPE_F32}) {
        run_case(upstream_case(GPU_ATTN_KERNEL_MTP, 16, 1, o), mtp, true);
        run_case(upstream_case(GPU_ATTN_KERNEL_MTP, 32, 2, o), mtp, true);
        run_case(upstream_case(GPU_ATTN_KERNEL_GENERIC, 16, 1, o), gen, true);
        run_case(upstream_case(GPU_ATTN_KERNEL_GENERIC, 32, 2, o), gen, true);
    }
    /* Random cases print only when they fail; a progress line every 20
     * cases says how far a run on a time limit got. */
    const auto t0 = std::chrono::steady_clock::now();
    auto sweep = [&](const char *family, Case (*make)(int), Stats &st, int n) {
        if (!wants(family))
            return;
        for (int i = 0; i < n; i++) {
            Case c = make(i);
            /* every family over the engines' cache layouts and with the
             * log-sum-exp output, on a share of its cases */
            c.layout = pick({0, 0, 1, 2, 3});
            c.lse = rng_int(0, 3) == 0;
            run_case(c, st, false);
            if ((i + 1) % 20 == 0 || i + 1 == n)
                printf("  %s: %d/%d cases, %d failed, %.0f s\n", family, i + 1, n, st.failed,
                       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                           .count());
        }
    };
    sweep("generic", random_generic, gen, count);
    sweep("mtp", random_mtp, mtp, count);
    sweep("decode", random_decode, dec, count);
    sweep("decode-mma", random_decode_mma, dmma, count);
    sweep("decode-fp8", random_decode_fp8, dfp8, count);
    sweep("prefill", random_prefill, pre, count_prefill);
    sweep("chunked", random_chunked, chk, count_prefill);
    sweep("mixed", random_mixed, mix, count_prefill);
    for (int i = 0; wants("append") && i < count; i++)
        run_append_case(i, app);
    for (int i = 0; wants("merge") && i < count; i++)
        run_merge_case(i, mrg);
    const int layout_failed = check_kv_layout_rejections();

    printf("generic: %d configurations, %d failed, worst error/allowed %.3g\n", gen.run, gen.failed,
           gen.worst_ratio);
    printf("mtp:     %d configurations, %d failed, worst error/allowed %.3g\n", mtp.run, mtp.failed,
           mtp.worst_ratio);
    printf("decode (generic, q_len 1): %d configurations, %d failed, worst error/allowed %.3g\n",
           dec.run, dec.failed, dec.worst_ratio);
    printf("decode, q and cache one 16-bit type (matrix units on NVIDIA): %d configurations, "
           "%d failed, worst error/allowed %.3g\n",
           dmma.run, dmma.failed, dmma.worst_ratio);
    printf("decode, fp8 e4m3fn/e4m3fnuz cache (matrix units on NVIDIA): %d configurations, "
           "%d failed, worst error/allowed %.3g\n",
           dfp8.run, dfp8.failed, dfp8.worst_ratio);
    printf("prefill (q up to 4096): %d configurations, %d failed, worst error/allowed %.3g\n",
           pre.run, pre.failed, pre.worst_ratio);
    printf("chunked prefill (q 64-1024 over 1k-16k): %d configurations, %d failed, worst "
           "error/allowed %.3g\n",
           chk.run, chk.failed, chk.worst_ratio);
    printf("mixed (chunks and q_len 1 rows): %d configurations, %d failed, worst error/allowed "
           "%.3g\n",
           mix.run, mix.failed, mix.worst_ratio);
    /* Both prefill grids ran in every prefill family that ran four or more
     * big cases on the prefill kernel (eight cases a family), unless the
     * bench's switch forced one grid. */
    const bool grid_forced = getenv("ATTNREG_BENCH_PERSIST") != NULL;
    for (Stats *f : {&pre, &chk, &mix}) {
        const char *name = f == &pre ? "prefill" : f == &chk ? "chunked" : "mixed";
        printf("%s: prefill kernel grids: %d dynamic, %d one program an item (rule), %d one "
               "program an item (workspace without the counters)\n",
               name, f->grid_dynamic, f->grid_one, f->grid_fallback);
        if (!grid_forced && f->big_on_prefill >= 4 &&
            (f->grid_dynamic == 0 || f->grid_fallback == 0)) {
            printf("FAIL %s: the big cases did not run both the dynamic grid and its fallback\n",
                   name);
            f->failed++;
        }
    }
    printf("append_kv (every cache dtype and layout, byte-identical to cpu-ref): %d "
           "configurations, %d failed\n",
           app.run, app.failed);
    printf("merge_states (f32/f16/bf16, -inf sides, in place): %d configurations, %d failed\n",
           mrg.run, mrg.failed);
    printf("cpu-ref cross-check: %s (%d configurations compared with cpu-ref)\n",
           cpu_ref ? "on" : "off", cpu_ref_checked);
    printf("portable kernel, forced programs: %d multi-token cases on one K/V stage, %d on raw "
           "K/V\n",
           forced_one_stage, forced_raw_kv);
    return layout_failed || gen.failed || mtp.failed || dec.failed || dmma.failed || dfp8.failed ||
                   pre.failed ||
                   chk.failed ||
                   mix.failed || app.failed || mrg.failed
               ? 1
               : 0;
}
