/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_cpu_ref.c — throughput of the cpu-ref backend against the machine's
 * own ceilings, measured in the same run:
 *
 *   memcpy bandwidth  every thread copies its own slice of a buffer far
 *                     larger than the last-level cache; reported as bytes
 *                     copied per second (the read side of the copy);
 *   FMA peak          every thread runs a loop of independent 8-wide FMAs
 *                     (AVX2 when the CPU has it, as the kernels do).
 *
 * Decode: q_len 1, GQA 8:1 (32 query / 4 KV heads), head_dim 128, bf16 and
 * fp8_e4m3fn KV caches, kv_len 1k..32k, batch 1..64. Reported: GB/s of K/V
 * read (the bytes a decode step must read) and the fraction of the memcpy
 * bandwidth. Prefill: q_len = kv_len 512..4096, causal, batch 1; reported:
 * GFLOP/s of the visible (unmasked) score and value products and the
 * fraction of the FMA peak.
 *
 *   bench_cpu_ref [--quick | --full] [--threads N] [--plugin PATH]
 *                 [--json FILE] [--min-time SECONDS]
 *                 [--case KIND:KV_DTYPE:BATCH:Q_LEN:KV_LEN]   (one case, for profiling)
 *                 [--no-huge-pages]     (KV caches in 4 KiB pages)
 *                 [--best]              (fastest run instead of the median)
 *
 * The plugin is loaded with dlopen from <exe>/../lib/attnreg by default.
 */
#define _GNU_SOURCE /* sysconf(_SC_LEVEL3_CACHE_SIZE), readlink */

#include <dlfcn.h>
#include <sys/mman.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attn_dtype_conv.h"
#include "attn_plugin.h"

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x1234567887654321ull;
static uint64_t next_random(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Large buffers for the caches. With `huge`, 2 MiB aligned and advised as
 * transparent huge pages: a paged KV cache is read in page-sized pieces in
 * random order, and with 4 KiB pages nearly every key costs a TLB miss
 * (a two-level walk inside a virtual machine), which would measure the
 * page walker rather than the kernel. Hosts that keep KV caches in huge
 * pages (PyTorch advises them for large tensors) see the former. */
static int use_huge_pages = 1;
/* Report the fastest run instead of the median (for A/B comparisons on a
 * machine whose neighbours steal cycles). */
static int report_best = 0;

static void *alloc_cache(size_t bytes)
{
    if (!use_huge_pages)
        return malloc(bytes);
    size_t align = (size_t)2 << 20;
    void *p = NULL;
    if (posix_memalign(&p, align, (bytes + align - 1) / align * align) != 0)
        return NULL;
#ifdef MADV_HUGEPAGE
    madvise(p, (bytes + align - 1) / align * align, MADV_HUGEPAGE);
#endif
    return p;
}

/* ---- ceilings ---------------------------------------------------------- */

typedef struct copy_job {
    char *dst;
    const char *src;
    size_t bytes;
    int repeats;
    pthread_barrier_t *start;
} copy_job;

static void *copy_worker(void *arg)
{
    copy_job *job = arg;
    pthread_barrier_wait(job->start);
    for (int r = 0; r < job->repeats; r++)
        memcpy(job->dst, job->src, job->bytes);
    return NULL;
}

/* Bytes copied per second with `threads` threads, best of `rounds`. */
static double measure_memcpy(int threads, size_t total_bytes, int rounds)
{
    char *src = malloc(total_bytes), *dst = malloc(total_bytes);
    if (!src || !dst) {
        free(src);
        free(dst);
        return 0;
    }
    memset(src, 1, total_bytes);
    memset(dst, 2, total_bytes); /* fault every page in before timing */
    double best = 0;
    for (int round = 0; round < rounds; round++) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
        pthread_t tid[256];
        copy_job jobs[256];
        size_t slice = total_bytes / (size_t)threads;
        for (int t = 0; t < threads; t++) {
            jobs[t] = (copy_job){dst + slice * t, src + slice * t, slice, 4, &start};
            pthread_create(&tid[t], NULL, copy_worker, &jobs[t]);
        }
        double t0 = now_seconds();
        pthread_barrier_wait(&start);
        for (int t = 0; t < threads; t++)
            pthread_join(tid[t], NULL);
        double elapsed = now_seconds() - t0;
        pthread_barrier_destroy(&start);
        double rate = (double)slice * threads * 4 / elapsed;
        if (rate > best)
            best = rate;
    }
    free(src);
    free(dst);
    return best;
}

typedef float v8f __attribute__((vector_size(32)));

/* 12 independent chains hide the FMA latency (4-5 cycles on 2 ports). The
 * chains converge (x -> 0.999 x + a), so nothing overflows. */
#define FMA_CHAINS 12

static float fma_loop_generic(long iterations, float seed)
{
    v8f acc[FMA_CHAINS];
    v8f a = {seed, seed, seed, seed, seed, seed, seed, seed};
    v8f b = a * 0.0f + 0.999f;
    for (int i = 0; i < FMA_CHAINS; i++)
        acc[i] = a + (float)i;
    for (long it = 0; it < iterations; it++)
        for (int i = 0; i < FMA_CHAINS; i++)
            acc[i] = acc[i] * b + a;
    float sum = 0;
    for (int i = 0; i < FMA_CHAINS; i++)
        for (int l = 0; l < 8; l++)
            sum += acc[i][l];
    return sum;
}

#if defined(__x86_64__)
#include <immintrin.h>
#define HAVE_FMA_AVX2 1
__attribute__((target("avx2,fma"))) static float fma_loop_avx2(long iterations, float seed)
{
    __m256 acc[FMA_CHAINS];
    __m256 a = _mm256_set1_ps(seed), b = _mm256_set1_ps(0.999f);
    for (int i = 0; i < FMA_CHAINS; i++)
        acc[i] = _mm256_set1_ps(seed + (float)i);
    for (long it = 0; it < iterations; it++)
        for (int i = 0; i < FMA_CHAINS; i++)
            acc[i] = _mm256_fmadd_ps(acc[i], b, a);
    float lanes[8], sum = 0;
    for (int i = 0; i < FMA_CHAINS; i++) {
        _mm256_storeu_ps(lanes, acc[i]);
        for (int l = 0; l < 8; l++)
            sum += lanes[l];
    }
    return sum;
}
#endif

static float fma_loop(long iterations, float seed)
{
#ifdef HAVE_FMA_AVX2
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return fma_loop_avx2(iterations, seed);
#endif
    return fma_loop_generic(iterations, seed);
}

typedef struct fma_job {
    long iterations;
    pthread_barrier_t *start;
    float result;
} fma_job;

static void *fma_worker(void *arg)
{
    fma_job *job = arg;
    pthread_barrier_wait(job->start);
    job->result = fma_loop(job->iterations, 1.0f + job->result);
    return NULL;
}

/* FLOP/s (2 per lane per FMA) with `threads` threads, best of `rounds`. */
static double measure_fma(int threads, long iterations, int rounds)
{
    double best = 0;
    for (int round = 0; round < rounds; round++) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
        pthread_t tid[256];
        fma_job jobs[256];
        for (int t = 0; t < threads; t++) {
            jobs[t] = (fma_job){iterations, &start, (float)t * 1e-3f};
            pthread_create(&tid[t], NULL, fma_worker, &jobs[t]);
        }
        double t0 = now_seconds();
        pthread_barrier_wait(&start);
        float sink = 0;
        for (int t = 0; t < threads; t++) {
            pthread_join(tid[t], NULL);
            sink += jobs[t].result;
        }
        double elapsed = now_seconds() - t0;
        pthread_barrier_destroy(&start);
        if (sink == 42.0f) /* keep the result alive */
            fputs("", stderr);
        double flops = (double)iterations * FMA_CHAINS * 8 * 2 * threads / elapsed;
        if (flops > best)
            best = flops;
    }
    return best;
}

/* The last-level cache size: sysfs first (what the kernel was told about
 * this machine), then sysconf (which some virtual machines fill with the
 * host's figure), then 32 MiB. */
static size_t last_level_cache_bytes(void)
{
    for (int index = 4; index >= 2; index--) {
        char path[128];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned long value = 0;
        char unit = 0;
        int got = fscanf(f, "%lu%c", &value, &unit);
        fclose(f);
        if (got >= 1 && value > 0)
            return (size_t)value << (unit == 'K' ? 10 : unit == 'M' ? 20 : 0);
    }
    long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    return l3 > 0 ? (size_t)l3 : (size_t)32 << 20;
}

/* ---- the plugin ------------------------------------------------------------ */

static const attn_plugin_descriptor *desc;

static int load_plugin(const char *path)
{
    char buf[4096];
    if (!path) {
        ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 64);
        if (n <= 0)
            return -1;
        buf[n] = '\0';
        char *dir = dirname(buf);
        static char guess[4200];
        snprintf(guess, sizeof guess, "%s/../lib/attnreg/libattn_cpu_ref.so", dir);
        path = guess;
    }
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "bench: %s\n", dlerror());
        return -1;
    }
    void *sym = dlsym(h, ATTN_PLUGIN_ENTRY_SYMBOL);
    attn_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry);
    desc = sym ? entry(ATTN_PLUGIN_ABI_MAJOR, ATTN_PLUGIN_ABI_MINOR) : NULL;
    if (!desc) {
        fprintf(stderr, "bench: %s has no usable descriptor\n", path);
        return -1;
    }
    return 0;
}

typedef struct bench_case {
    const char *kind; /* "decode" or "prefill" */
    int32_t kv_dtype;
    int32_t batch;
    int32_t q_len;
    int32_t kv_len;
} bench_case;

typedef struct bench_result {
    double seconds;  /* median per forward */
    double kv_bytes; /* K/V bytes a forward must read */
    double flops;    /* visible multiply-adds x 2 */
    size_t working_set;
} bench_result;

enum { HQ = 32, HKV = 4, HEAD_DIM = 128, PAGE = 16 };

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int run_case(const bench_case *c, int threads, double min_time, bench_result *r)
{
    attn_shape s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    snprintf(s.arch, sizeof s.arch, "cpu");
    s.num_q_heads = HQ;
    s.num_kv_heads = HKV;
    s.head_dim = HEAD_DIM;
    s.q_dtype = ATTN_DTYPE_BF16;
    s.kv_dtype = c->kv_dtype;
    s.compute_dtype = ATTN_DTYPE_BF16;
    s.out_dtype = ATTN_DTYPE_BF16;
    s.page_size = PAGE;
    s.max_q_len = c->q_len;
    s.max_kv_len = c->kv_len;
    s.causal = 1;
    s.window_left = s.window_right = -1;

    char threads_text[16];
    snprintf(threads_text, sizeof threads_text, "%d", threads);
    attn_param params[1] = {{"threads", threads_text}};
    attn_plugin_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.struct_size = sizeof ctx;
    ctx.params = params;
    ctx.num_params = 1;
    void *backend = NULL;
    char err[512];
    if (desc->create(&ctx, &s, &backend, err, sizeof err) != ATTN_OK) {
        fprintf(stderr, "bench: create: %s\n", err);
        return -1;
    }
    const int64_t pages_per_seq = (c->kv_len + PAGE - 1) / PAGE;
    const int64_t blocks = pages_per_seq * c->batch;
    const size_t elem = attn_conv_dtype_size(c->kv_dtype);
    const size_t cache_elems = (size_t)blocks * PAGE * HKV * HEAD_DIM;
    const int64_t tokens = (int64_t)c->batch * c->q_len;
    uint8_t *k = alloc_cache(cache_elems * elem), *v = alloc_cache(cache_elems * elem);
    uint16_t *q = malloc(sizeof(uint16_t) * (size_t)tokens * HQ * HEAD_DIM);
    uint16_t *out = malloc(sizeof(uint16_t) * (size_t)tokens * HQ * HEAD_DIM);
    int32_t *table = malloc(sizeof(int32_t) * (size_t)blocks);
    int32_t *cu = malloc(sizeof(int32_t) * ((size_t)c->batch + 1));
    int32_t *used = malloc(sizeof(int32_t) * (size_t)c->batch);
    if (!k || !v || !q || !out || !table || !cu || !used) {
        fprintf(stderr, "bench: out of memory\n");
        return -1;
    }
    /* Random values: bf16 in about [-1, 1], fp8 codes without NaN. */
    for (size_t i = 0; i < cache_elems; i++) {
        uint64_t bits = next_random();
        if (elem == 2) {
            uint16_t a = attn_conv_f32_to_bf16((float)((bits & 0xFFFF) / 32768.0 - 1.0));
            uint16_t b = attn_conv_f32_to_bf16((float)(((bits >> 16) & 0xFFFF) / 32768.0 - 1.0));
            memcpy(k + 2 * i, &a, 2);
            memcpy(v + 2 * i, &b, 2);
        } else {
            k[i] = (uint8_t)(bits & 0x77);
            v[i] = (uint8_t)((bits >> 8) & 0x77);
        }
    }
    for (int64_t i = 0; i < tokens * HQ * HEAD_DIM; i++)
        q[i] = attn_conv_f32_to_bf16((float)((next_random() & 0xFFFF) / 32768.0 - 1.0));
    for (int64_t b = 0; b < blocks; b++)
        table[b] = (int32_t)b;
    for (int64_t b = blocks - 1; b > 0; b--) { /* pages in random order */
        int64_t o = (int64_t)(next_random() % (uint64_t)(b + 1));
        int32_t t = table[b];
        table[b] = table[o];
        table[o] = t;
    }
    cu[0] = 0;
    for (int32_t i = 0; i < c->batch; i++) {
        cu[i + 1] = cu[i] + c->q_len;
        used[i] = c->kv_len;
    }
    attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.num_seqs = c->batch;
    a.num_tokens = (int32_t)tokens;
    a.q = q;
    a.q_stride_token = HQ * HEAD_DIM;
    a.q_stride_head = HEAD_DIM;
    a.k_cache = k;
    a.v_cache = v;
    a.num_blocks = (int32_t)blocks;
    a.block_table = table;
    a.block_table_stride = (int32_t)pages_per_seq;
    a.cu_seqlens_q = cu;
    a.seqused_k = used;
    a.max_seqlen_q = c->q_len;
    a.max_seqlen_k = c->kv_len;
    a.scale = 1.0f / sqrtf((float)HEAD_DIM);
    a.q_descale = a.k_descale = a.v_descale = 1.0f;
    a.out = out;
    a.out_stride_token = HQ * HEAD_DIM;
    a.out_stride_head = HEAD_DIM;
    attn_batch_limits limits = {sizeof limits, c->batch, (int32_t)tokens};
    size_t ws_bytes = 0;
    desc->workspace_size(backend, &limits, &ws_bytes);
    void *ws = malloc(ws_bytes);
    a.workspace = ws;
    a.workspace_size = ws_bytes;

    double times[1000];
    int runs = 0;
    double total = 0;
    int rc = 0;
    if (desc->forward(backend, &a, err, sizeof err) != ATTN_OK) { /* warm-up */
        fprintf(stderr, "bench: forward: %s\n", err);
        rc = -1;
    }
    while (rc == 0 && runs < 1000 && (total < min_time || runs < 3)) {
        double t0 = now_seconds();
        desc->forward(backend, &a, err, sizeof err);
        times[runs] = now_seconds() - t0;
        total += times[runs++];
    }
    if (rc == 0) {
        qsort(times, (size_t)runs, sizeof(double), compare_double);
        r->seconds = report_best ? times[0] : times[runs / 2];
        r->kv_bytes = (double)c->batch * c->kv_len * HKV * 2.0 * HEAD_DIM * (double)elem;
        /* Visible (query, key) pairs: causal, query i of q_len sees
         * kv_len - q_len + i + 1 keys. */
        double pairs = 0;
        for (int32_t i = 0; i < c->q_len; i++)
            pairs += (double)(c->kv_len - c->q_len + i + 1);
        r->flops = 2.0 * c->batch * HQ * pairs * (2.0 * HEAD_DIM);
        r->working_set = 2 * cache_elems * elem;
    }
    free(ws);
    free(k);
    free(v);
    free(q);
    free(out);
    free(table);
    free(cu);
    free(used);
    desc->destroy(backend);
    return rc;
}

int main(int argc, char **argv)
{
    int quick = 1, threads = 0;
    const char *plugin_path = NULL, *json_path = NULL;
    double min_time = -1;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--full") == 0)
            quick = 0;
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc)
            plugin_path = argv[++i];
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json_path = argv[++i];
        else if (strcmp(argv[i], "--best") == 0)
            report_best = 1;
        else if (strcmp(argv[i], "--no-huge-pages") == 0)
            use_huge_pages = 0;
        else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--min-time") == 0 && i + 1 < argc)
            min_time = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_cpu_ref [--quick | --full] [--threads N] [--plugin PATH] "
                            "[--json FILE] [--min-time SECONDS] [--no-huge-pages] [--best] [--case "
                            "KIND:KV_DTYPE:BATCH:Q_LEN:KV_LEN]\n");
            return 2;
        }
    }
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    if (threads > 256)
        threads = 256;
    if (min_time < 0)
        min_time = quick ? 0.3 : 1.0;
    if (load_plugin(plugin_path) != 0)
        return 1;

    size_t llc = last_level_cache_bytes();
    size_t copy_bytes = llc * 8 > ((size_t)256 << 20) ? llc * 8 : ((size_t)256 << 20);
    /* The ceilings are measured once up front and again right before every
     * case, and each case is judged against its own: on a shared machine
     * (a virtual machine whose neighbours take cycles and memory bandwidth
     * at times) a figure measured minutes apart would not be comparable. */
    const long fma_iterations = 20000000L;
    double copy_bw = measure_memcpy(threads, copy_bytes, 3);
    double fma_peak = measure_fma(threads, fma_iterations, 3);
    printf("cpu-ref bench: %d threads, %s mode, last-level cache %zu MiB, KV caches in %s pages\n",
           threads, quick ? "quick" : "full", llc >> 20, use_huge_pages ? "huge" : "4 KiB");
    printf("ceilings at start: memcpy %.2f GB/s (bytes copied per second, %zu MiB buffers), FMA "
           "peak %.1f GFLOP/s; each row is judged against the ceilings measured just before "
           "it\n\n",
           copy_bw / 1e9, copy_bytes >> 20, fma_peak / 1e9);

    bench_case cases[64];
    int n = 0;
    const int32_t decode_kv_quick[] = {1024, 4096, 16384};
    const int32_t decode_kv_full[] = {1024, 4096, 16384, 32768};
    const int32_t batch_quick[] = {1, 8};
    const int32_t batch_full[] = {1, 8, 64};
    const int32_t kv_dtypes[] = {ATTN_DTYPE_BF16, ATTN_DTYPE_FP8_E4M3FN};
    for (int d = 0; d < 2; d++) {
        int nb = quick ? 2 : 3, nk = quick ? 3 : 4;
        for (int b = 0; b < nb; b++)
            for (int kidx = 0; kidx < nk; kidx++) {
                int32_t batch = quick ? batch_quick[b] : batch_full[b];
                int32_t kv = quick ? decode_kv_quick[kidx] : decode_kv_full[kidx];
                /* Keep the caches within a few GiB of memory. */
                double bytes = (double)batch * kv * HKV * 2 * HEAD_DIM *
                               (double)attn_conv_dtype_size(kv_dtypes[d]);
                if (bytes > (quick ? 0.6e9 : 4.5e9))
                    continue;
                cases[n++] = (bench_case){"decode", kv_dtypes[d], batch, 1, kv};
            }
    }
    const int32_t prefill_quick[] = {512, 1024};
    const int32_t prefill_full[] = {512, 1024, 2048, 4096};
    for (int i = 0; i < (quick ? 2 : 4); i++) {
        int32_t len = quick ? prefill_quick[i] : prefill_full[i];
        cases[n++] = (bench_case){"prefill", ATTN_DTYPE_BF16, 1, len, len};
    }

    if (only) { /* one case, e.g. decode:bf16:8:1:4096 (for profiling) */
        char kind[16], dtype[16];
        int batch, q_len, kv_len;
        if (sscanf(only, "%15[a-z]:%15[a-z0-9_]:%d:%d:%d", kind, dtype, &batch, &q_len, &kv_len) !=
            5) {
            fprintf(stderr, "bench: --case wants KIND:KV_DTYPE:BATCH:Q_LEN:KV_LEN\n");
            return 2;
        }
        cases[0] =
            (bench_case){strcmp(kind, "prefill") == 0 ? "prefill" : "decode",
                         strcmp(dtype, "fp8_e4m3fn") == 0 ? ATTN_DTYPE_FP8_E4M3FN : ATTN_DTYPE_BF16,
                         batch, q_len, kv_len};
        n = 1;
    }
    FILE *json = json_path ? fopen(json_path, "w") : NULL;
    if (json_path && !json) {
        perror(json_path);
        return 1;
    }
    if (json)
        fprintf(json,
                "{\n  \"threads\": %d,\n  \"mode\": \"%s\",\n  \"start_memcpy_gbps\": %.3f,\n"
                "  \"start_fma_peak_gflops\": %.2f,\n  \"huge_pages\": %s,\n  \"llc_bytes\": "
                "%zu,\n  \"shape\": {\"q_heads\": %d, "
                "\"kv_heads\": %d, \"head_dim\": %d, \"page_size\": %d, \"q_dtype\": \"bf16\", "
                "\"out_dtype\": \"bf16\", \"compute_dtype\": \"bf16\"},\n  \"cases\": [",
                threads, quick ? "quick" : "full", copy_bw / 1e9, fma_peak / 1e9,
                use_huge_pages ? "true" : "false", llc, HQ, HKV, HEAD_DIM, PAGE);
    printf("%-8s %-11s %5s %6s %6s %9s %10s %9s %8s %8s %9s %8s %8s\n", "kind", "kv_dtype", "batch",
           "q_len", "kv_len", "KV MiB", "time ms", "KV GB/s", "memcpy", "of copy", "GFLOP/s",
           "FMA pk", "of FMA");
    int decode_ok = 1, decode_judged = 0, prefill_ok = 1;
    for (int i = 0; i < n; i++) {
        bench_result r = {0, 0, 0, 0};
        copy_bw = measure_memcpy(threads, copy_bytes, 2);
        fma_peak = measure_fma(threads, fma_iterations, 2);
        if (run_case(&cases[i], threads, min_time, &r) != 0)
            return 1;
        double gbps = r.kv_bytes / r.seconds / 1e9;
        double gflops = r.flops / r.seconds / 1e9;
        double of_copy = gbps * 1e9 / copy_bw, of_fma = gflops * 1e9 / fma_peak;
        /* The decode target is judged where the caches exceed the last-level
         * cache (otherwise the copy ceiling is not the ceiling). */
        int from_dram = r.working_set >= 2 * llc;
        const char *mark = "";
        if (strcmp(cases[i].kind, "decode") == 0 && cases[i].kv_len >= 4096 && from_dram) {
            decode_judged++;
            if (of_copy < 0.5) {
                decode_ok = 0;
                mark = "  < target";
            }
        }
        if (strcmp(cases[i].kind, "prefill") == 0 && of_fma < 0.25) {
            prefill_ok = 0;
            mark = "  < target";
        }
        printf("%-8s %-11s %5d %6d %6d %9.1f %10.3f %9.2f %8.2f %7.0f%% %9.1f %8.1f %7.0f%%%s%s\n",
               cases[i].kind, attn_dtype_spelling(cases[i].kv_dtype), cases[i].batch,
               cases[i].q_len, cases[i].kv_len, r.kv_bytes / (1 << 20), r.seconds * 1e3, gbps,
               copy_bw / 1e9, of_copy * 100, gflops, fma_peak / 1e9, of_fma * 100,
               from_dram ? "" : "  (in cache)", mark);
        fflush(stdout);
        if (json)
            fprintf(
                json,
                "%s\n    {\"kind\": \"%s\", \"kv_dtype\": \"%s\", \"batch\": %d, \"q_len\": %d, "
                "\"kv_len\": %d, \"seconds\": %.6g, \"kv_gbps\": %.4g, \"frac_memcpy\": %.4f, "
                "\"gflops\": %.4g, \"frac_fma\": %.4f, \"working_set_bytes\": %zu, "
                "\"memcpy_gbps\": %.3f, \"fma_peak_gflops\": %.2f}",
                i ? "," : "", cases[i].kind, attn_dtype_spelling(cases[i].kv_dtype), cases[i].batch,
                cases[i].q_len, cases[i].kv_len, r.seconds, gbps, of_copy, gflops, of_fma,
                r.working_set, copy_bw / 1e9, fma_peak / 1e9);
    }
    printf("\ntargets: decode >= 50%% of memcpy at kv_len >= 4096 from DRAM: %s (%d cases); "
           "prefill >= 25%% of FMA peak: %s\n",
           decode_judged ? (decode_ok ? "met" : "NOT met") : "not judged", decode_judged,
           prefill_ok ? "met" : "NOT met");
    if (json) {
        fprintf(json, "\n  ],\n  \"decode_target_met\": %s,\n  \"prefill_target_met\": %s\n}\n",
                decode_judged && decode_ok ? "true" : "false", prefill_ok ? "true" : "false");
        fclose(json);
    }
    return 0;
}
