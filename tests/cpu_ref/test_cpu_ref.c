/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cpu_ref.c — the cpu-ref plugin against the float64 oracle.
 *
 * The plugin is loaded with dlopen and driven through its descriptor, as
 * libattnreg drives it. The sweep draws >= 200 random configurations that
 * cycle through every dtype combination and mix every feature (GQA, paging,
 * causal with query offset, windows, softcap, sinks, head_dim_v != head_dim,
 * strided q/out, varlen with empty and short sequences, threads, kernels).
 *
 * Environment:
 *   ATTNREG_TEST_SEED     base seed of the sweep (default 20261129)
 *   ATTNREG_SWEEP_CONFIGS number of configurations (default 240)
 *   ATTNREG_SWEEP_ONLY    run only this configuration index
 *   ATTNREG_SWEEP_VERBOSE 1 = print every configuration and its error
 * A failure prints the seed, the index and the whole configuration, and the
 * command line that repeats it.
 *
 * Tolerance (docs/TOLERANCES.md, "cpu-ref against the oracle"): every
 * element must satisfy
 *   |got - want| <= 2^-16 * value_scale + u_out * |want| + tiny_out
 * value_scale: the largest |dequantised V| of the batch (outputs are convex
 * combinations of V rows, so float errors scale with it); 2^-16: the float32
 * budget (dot products of up to 256 terms, a ~2 ulp exp, sums of up to ~1500
 * probabilities, each a few 2^-24 at their typical sqrt(n) growth; the
 * largest error seen over 7 seeds is about 1e-6, 15x inside); u_out: the unit
 * roundoff of the output dtype (0 for f32, 2^-11 f16, 2^-8 bf16), since
 * round-to-nearest adds at most half an ulp; tiny_out: half the smallest f16
 * subnormal (2^-25) for f16 outputs, whose absolute step near zero does not
 * scale with the value.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* setenv */
#endif

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_dtype_conv.h"
#include "attnreg.h"
#include "oracle.h"
#include "plugin_harness.h"

static harness_plugin plugin;

static void load_plugin(void)
{
    char err[512];
    if (harness_load(&plugin, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
}

static void unload_plugin(void)
{
    harness_unload(&plugin);
}

static uint64_t env_u64(const char *name, uint64_t fallback)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : fallback;
}

/* ---- tolerance ---------------------------------------------------------- */

#define CPU_REF_FLOAT_BUDGET 0x1p-16

static double out_roundoff(int32_t dtype)
{
    return dtype == ATTN_DTYPE_BF16 ? 0x1p-8 : dtype == ATTN_DTYPE_F16 ? 0x1p-11 : 0.0;
}

typedef struct element_check {
    int64_t bad;        /* elements outside the tolerance */
    int64_t first_bad;  /* flat index of the first */
    double got, want;   /* at first_bad */
    double worst_ratio; /* max over elements of |got - want| / allowed */
    double value_scale;
    double float_error; /* f32 outputs: max |got - want| / value_scale */
} element_check;

/* Checks every output element against the oracle with the tolerance above. */
static void check_elements(const attn_oracle_problem *p, const attn_forward_args *a,
                           const double *want, element_check *c)
{
    attn_oracle_error e;
    attn_oracle_compare(&p->shape, a, want, &e);
    memset(c, 0, sizeof *c);
    c->first_bad = -1;
    c->value_scale = e.value_scale > 0 ? e.value_scale : 1.0;
    const int32_t hq = p->shape.num_q_heads, dv = p->shape.head_dim_v;
    const double u = out_roundoff(p->shape.out_dtype);
    const double tiny = p->shape.out_dtype == ATTN_DTYPE_F16 ? 0x1p-25 : 0.0;
    for (int64_t t = 0; t < p->num_tokens; t++)
        for (int32_t h = 0; h < hq; h++)
            for (int32_t i = 0; i < dv; i++) {
                int64_t flat = (t * hq + h) * dv + i;
                double g = attn_oracle_decode(p->shape.out_dtype, p->out,
                                              t * p->out_stride_token + h * p->out_stride_head + i);
                double w = want[flat];
                double allowed = CPU_REF_FLOAT_BUDGET * c->value_scale + u * fabs(w) + tiny;
                double diff = fabs(g - w);
                double ratio = isfinite(diff) ? diff / allowed : INFINITY;
                if (p->shape.out_dtype == ATTN_DTYPE_F32 && diff / c->value_scale > c->float_error)
                    c->float_error = diff / c->value_scale;
                if (!(ratio <= c->worst_ratio))
                    c->worst_ratio = ratio;
                if (!(diff <= allowed)) {
                    if (c->bad++ == 0) {
                        c->first_bad = flat;
                        c->got = g;
                        c->want = w;
                    }
                }
            }
}

static void describe_shape(const attn_shape *s, char *buf, size_t size)
{
    snprintf(buf, size,
             "q_heads=%d kv_heads=%d head_dim=%d head_dim_v=%d q=%s kv=%s compute=%s out=%s "
             "page=%d max_q_len=%d max_kv_len=%d causal=%d window=(%d,%d) softcap=%g sinks=%d",
             s->num_q_heads, s->num_kv_heads, s->head_dim, s->head_dim_v,
             attn_dtype_spelling(s->q_dtype), attn_dtype_spelling(s->kv_dtype),
             attn_dtype_spelling(s->compute_dtype), attn_dtype_spelling(s->out_dtype), s->page_size,
             s->max_q_len, s->max_kv_len, s->causal, s->window_left, s->window_right,
             (double)s->softcap, s->has_sinks);
}

/* Runs one problem through the plugin and the oracle; 0 when every element
 * is within tolerance, else -1 with a description in msg. */
static int run_and_check(const attn_shape *shape, const attn_oracle_problem_options *opt,
                         const char *const *params, element_check *result, char *msg,
                         size_t msg_size)
{
    char err[512];
    attn_oracle_problem p;
    if (attn_oracle_problem_random(&p, shape, opt, err, sizeof err) != 0) {
        snprintf(msg, msg_size, "%s", err);
        return -1;
    }
    harness_context hc;
    harness_context_init(&hc, params);
    attn_forward_args a;
    attn_oracle_problem_args(&p, &a);
    attn_status st = harness_run(&plugin, &hc.ctx, &p.shape, &a, err, sizeof err);
    if (st != ATTN_OK) {
        snprintf(msg, msg_size, "plugin failed with status %d: %s", (int)st, err);
        attn_oracle_problem_free(&p);
        return -1;
    }
    size_t n = (size_t)(p.num_tokens ? p.num_tokens : 1) * p.shape.num_q_heads * p.shape.head_dim_v;
    double *want = calloc(n, sizeof(double));
    if (!want || attn_oracle_forward(&p.shape, &a, want, err, sizeof err) != 0) {
        snprintf(msg, msg_size, "oracle failed: %s", want ? err : "out of memory");
        free(want);
        attn_oracle_problem_free(&p);
        return -1;
    }
    check_elements(&p, &a, want, result);
    int rc = 0;
    if (result->bad) {
        int64_t dv = p.shape.head_dim_v, hq = p.shape.num_q_heads;
        snprintf(msg, msg_size,
                 "%lld elements outside tolerance; first: token %lld head %lld dv %lld got %.9g "
                 "want %.9g (value_scale %g, worst ratio %.3g)",
                 (long long)result->bad, (long long)(result->first_bad / dv / hq),
                 (long long)(result->first_bad / dv % hq), (long long)(result->first_bad % dv),
                 result->got, result->want, result->value_scale, result->worst_ratio);
        rc = -1;
    }
    free(want);
    attn_oracle_problem_free(&p);
    return rc;
}

/* ---- the sweep ------------------------------------------------------------ */

static const int32_t float_dtypes[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16};
static const int32_t kv_dtypes[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16,
                                    ATTN_DTYPE_FP8_E4M3FN, ATTN_DTYPE_FP8_E4M3FNUZ};

#define PICK(rng, array)                                                                           \
    (array)[attn_oracle_rand_int(rng, 0, (int32_t)(sizeof(array) / sizeof((array)[0])) - 1)]

typedef struct sweep_config {
    attn_shape shape;
    attn_oracle_problem_options opt;
    char threads[8];
    const char *kernel;
} sweep_config;

/* Configuration `index` of the sweep for `seed`: the dtypes cycle through
 * all 45 q/kv/out combinations (and four compute choices), everything else
 * is drawn from the configuration's own generator. */
static void make_config(uint64_t seed, int index, sweep_config *c)
{
    uint64_t rng = seed ^ (0x9E3779B97F4A7C15ull * (uint64_t)(index + 1));
    attn_oracle_rand_next(&rng);
    memset(c, 0, sizeof *c);
    attn_shape *s = &c->shape;
    attn_shape_defaults(s);
    s->q_dtype = float_dtypes[index % 3];
    s->kv_dtype = kv_dtypes[(index / 3) % 5];
    s->out_dtype = float_dtypes[(index / 15) % 3];
    switch ((index / 45) % 4) {
    case 0:
        s->compute_dtype = ATTN_DTYPE_F32;
        break;
    case 1:
        s->compute_dtype = ATTN_DTYPE_F16;
        break;
    case 2:
        s->compute_dtype = ATTN_DTYPE_BF16;
        break;
    default: /* fp8 compute where the KV cache allows it */
        s->compute_dtype = attn_conv_dtype_is_fp8(s->kv_dtype) ? s->kv_dtype : ATTN_DTYPE_BF16;
        break;
    }
    static const int32_t kv_heads[] = {1, 1, 2, 3};
    static const int32_t groups[] = {1, 2, 3, 4, 5, 7, 8, 8, 16};
    static const int32_t dims[] = {1, 3, 8, 16, 24, 32, 40, 64, 72, 80, 96, 128, 128, 160, 256};
    static const int32_t pages[] = {1, 2, 3, 4, 7, 8, 16, 16, 32, 64};
    static const int32_t q_lens[] = {1, 1, 1, 2, 3, 4, 8, 13, 33, 64};
    s->num_kv_heads = PICK(&rng, kv_heads);
    s->num_q_heads = s->num_kv_heads * PICK(&rng, groups);
    s->head_dim = PICK(&rng, dims);
    s->head_dim_v = attn_oracle_rand_int(&rng, 0, 3) == 0 ? PICK(&rng, dims) : s->head_dim;
    s->page_size = PICK(&rng, pages);
    s->max_q_len = PICK(&rng, q_lens);
    switch (attn_oracle_rand_int(&rng, 0, 2)) {
    case 0:
        s->max_kv_len = attn_oracle_rand_int(&rng, 1, 64);
        break;
    case 1:
        s->max_kv_len = attn_oracle_rand_int(&rng, 65, 600);
        break;
    default: /* long enough for the kernels to split the key range */
        s->max_kv_len = attn_oracle_rand_int(&rng, 601, 1500);
        break;
    }
    if (s->max_kv_len < s->max_q_len)
        s->max_kv_len = s->max_q_len;
    s->causal = attn_oracle_rand_int(&rng, 0, 3) != 0;
    if (attn_oracle_rand_int(&rng, 0, 9) < 3) {
        s->window_left = attn_oracle_rand_int(&rng, -1, 80);
        s->window_right = attn_oracle_rand_int(&rng, -1, 20);
    }
    if (attn_oracle_rand_int(&rng, 0, 4) == 0)
        s->softcap = (float)(5.0 + 45.0 * attn_oracle_rand_uniform(&rng));
    s->has_sinks = attn_oracle_rand_int(&rng, 0, 3) == 0;

    attn_oracle_problem_options *o = &c->opt;
    o->seed = attn_oracle_rand_next(&rng);
    o->num_seqs = attn_oracle_rand_int(&rng, 1, 4);
    o->strided = attn_oracle_rand_int(&rng, 0, 9) < 3;
    /* Fewer keys than query tokens is an error under causal masking or a
     * window (test_short_kv_is_an_error); without them every
     * query sees every key (cascade attention's shorter prefix), which stays
     * in the sweep. */
    o->allow_short_kv = attn_oracle_rand_int(&rng, 0, 6) == 0 && !s->causal && s->window_left < 0 &&
                        s->window_right < 0;
    o->allow_empty_q = attn_oracle_rand_int(&rng, 0, 6) == 0;
    o->extra_table_columns = attn_oracle_rand_int(&rng, 0, 3);
    o->extra_blocks = attn_oracle_rand_int(&rng, 0, 3);
    snprintf(c->threads, sizeof c->threads, "%d", (int)attn_oracle_rand_int(&rng, 1, 3));
    c->kernel = attn_oracle_rand_int(&rng, 0, 1) ? "auto" : "generic";

    /* Keep the naive oracle fast: shrink until the multiply-adds it does
     * (tokens x heads x keys x (D + Dv)) stay under ~4e7. */
    for (;;) {
        double work = (double)o->num_seqs * s->max_q_len * s->num_q_heads * s->max_kv_len *
                      (s->head_dim + s->head_dim_v);
        if (work <= 4e7)
            break;
        if (o->num_seqs > 1)
            o->num_seqs--;
        else if (s->max_q_len > 1)
            s->max_q_len = (s->max_q_len + 1) / 2;
        else if (s->num_q_heads > s->num_kv_heads)
            s->num_q_heads -= s->num_kv_heads;
        else if (s->max_kv_len > 1)
            s->max_kv_len = (s->max_kv_len + 1) / 2;
        else
            break;
    }
    if (s->max_kv_len < s->max_q_len)
        s->max_kv_len = s->max_q_len;
}

START_TEST(test_sweep)
{
    const uint64_t seed = env_u64("ATTNREG_TEST_SEED", 20261129u);
    const int count = (int)env_u64("ATTNREG_SWEEP_CONFIGS", 240);
    const char *only = getenv("ATTNREG_SWEEP_ONLY");
    const int verbose = (int)env_u64("ATTNREG_SWEEP_VERBOSE", 0);
    int failures = 0, ran = 0;
    double worst = 0, worst_float = 0;
    for (int i = 0; i < count; i++) {
        if (only && *only && atoi(only) != i)
            continue;
        sweep_config c;
        make_config(seed, i, &c);
        const char *params[] = {"threads", c.threads, "kernel", c.kernel, NULL};
        element_check result;
        char msg[1024], shape_text[512];
        int rc = run_and_check(&c.shape, &c.opt, params, &result, msg, sizeof msg);
        ran++;
        if (result.worst_ratio > worst && isfinite(result.worst_ratio))
            worst = result.worst_ratio;
        if (result.float_error > worst_float)
            worst_float = result.float_error;
        describe_shape(&c.shape, shape_text, sizeof shape_text);
        if (rc != 0 || verbose)
            fprintf(stderr,
                    "%s config %d (seed %llu): %s | seqs=%d strided=%d short_kv=%d empty_q=%d "
                    "extra_cols=%d extra_blocks=%d threads=%s kernel=%s | %s\n"
                    "  repeat: ATTNREG_TEST_SEED=%llu ATTNREG_SWEEP_ONLY=%d\n",
                    rc ? "FAIL" : "ok", i, (unsigned long long)seed, shape_text, c.opt.num_seqs,
                    c.opt.strided, c.opt.allow_short_kv, c.opt.allow_empty_q,
                    c.opt.extra_table_columns, c.opt.extra_blocks, c.threads, c.kernel,
                    rc ? msg : "within tolerance", (unsigned long long)seed, i);
        if (rc != 0)
            failures++;
    }
    fprintf(stderr,
            "sweep: %d configurations, %d failed, seed %llu; worst element at %.3g of its "
            "tolerance; worst f32-output error %.3g x value_scale (budget %.3g)\n",
            ran, failures, (unsigned long long)seed, worst, worst_float, CPU_REF_FLOAT_BUDGET);
    ck_assert_int_eq(failures, 0);
}
END_TEST

/* ---- targeted cases --------------------------------------------------- */

static void base_shape(attn_shape *s)
{
    attn_shape_defaults(s);
    s->num_q_heads = 4;
    s->num_kv_heads = 2;
    s->head_dim = 32;
    s->q_dtype = s->kv_dtype = s->compute_dtype = s->out_dtype = ATTN_DTYPE_F32;
    s->page_size = 4;
    s->max_q_len = 6;
    s->max_kv_len = 40;
}

static const char *const two_threads[] = {"threads", "2", NULL};

/* Runs the plugin on p (args filled), returning the status. */
static attn_status run_plugin(attn_oracle_problem *p, attn_forward_args *a,
                              const char *const *params, char *err, size_t err_size)
{
    harness_context hc;
    harness_context_init(&hc, params);
    attn_oracle_problem_args(p, a);
    return harness_run(&plugin, &hc.ctx, &p->shape, a, err, err_size);
}

/* Every output element of a forward that ran against the float64 oracle. */
static void assert_matches_oracle(const attn_oracle_problem *p, const attn_forward_args *a)
{
    char err[512];
    double *want = calloc((size_t)p->num_tokens * p->shape.num_q_heads * p->shape.head_dim_v + 1,
                          sizeof(double));
    ck_assert_int_eq(attn_oracle_forward(&p->shape, a, want, err, sizeof err), 0);
    element_check c;
    check_elements(p, a, want, &c);
    ck_assert_msg(c.bad == 0, "%lld elements outside the tolerance", (long long)c.bad);
    free(want);
}

START_TEST(test_short_kv_is_an_error)
{
    /* A sequence with more query tokens than keys (the keys include
     * the new tokens) used to give rows of zeros; it is an error naming the
     * sequence and both arrays, and nothing is written. Sequences without
     * query tokens (and without keys) stay valid. */
    attn_shape s;
    base_shape(&s);
    s.max_q_len = 8;
    s.max_kv_len = 64;
    attn_oracle_problem_options o = {.num_seqs = 4, .seed = 7, .allow_empty_q = 1};
    attn_oracle_problem p;
    char err[512];
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    int32_t bad = -1;
    for (int32_t i = 0; i < p.num_seqs && bad < 0; i++)
        if (p.cu_seqlens_q[i + 1] - p.cu_seqlens_q[i] >= 2)
            bad = i;
    ck_assert_int_ge(bad, 0);
    int32_t q_len = p.cu_seqlens_q[bad + 1] - p.cu_seqlens_q[bad];
    p.seqused_k[bad] = q_len - 1;
    memset(p.out, 0x5a, p.out_bytes);
    attn_forward_args a;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_ERR_INVALID_ARGUMENT);
    char want[96];
    snprintf(want, sizeof want, "sequence %d has %d query tokens", (int)bad, (int)q_len);
    ck_assert_msg(strstr(err, want) != NULL, "%s", err);
    snprintf(want, sizeof want, "seqused_k[%d] is %d", (int)bad, (int)q_len - 1);
    ck_assert_msg(strstr(err, want) != NULL && strstr(err, "cu_seqlens_q") != NULL, "%s", err);
    for (size_t i = 0; i < p.out_bytes; i++)
        ck_assert_msg(((unsigned char *)p.out)[i] == 0x5a, "out written at byte %zu", i);

    /* No keys at all under query tokens: the same error, not zeros. */
    p.seqused_k[bad] = 0;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "seqused_k") != NULL, "%s", err);

    /* A query-less sequence with no keys is fine, and the rest is right. */
    p.seqused_k[bad] = q_len;
    p.cu_seqlens_q[bad + 1] = p.cu_seqlens_q[bad]; /* shift: make `bad` empty */
    for (int32_t i = bad + 1; i < p.num_seqs; i++)
        p.cu_seqlens_q[i + 1] -= q_len;
    p.seqused_k[bad] = 0;
    p.num_tokens -= q_len;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
    assert_matches_oracle(&p, &a);
    attn_oracle_problem_free(&p);
}
END_TEST

START_TEST(test_other_bad_metadata_is_named)
{
    /* The rest of the shared checks (plugins/common/attn_batch_check.h):
     * each names the array and, per sequence, the sequence. */
    attn_shape s;
    base_shape(&s);
    s.max_q_len = 4;
    s.max_kv_len = 64;
    attn_oracle_problem_options o = {.num_seqs = 3, .seed = 12};
    attn_oracle_problem p;
    char err[512];
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    attn_forward_args a;
    int32_t saved = p.seqused_k[1];
    p.seqused_k[1] = -3;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "seqused_k[1] is -3") != NULL, "%s", err);
    p.seqused_k[1] = saved;
    int32_t mid = p.cu_seqlens_q[2];
    p.cu_seqlens_q[2] = p.cu_seqlens_q[1] - 1;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "cu_seqlens_q decreases at sequence 1") != NULL, "%s", err);
    p.cu_seqlens_q[2] = mid;
    p.cu_seqlens_q[0] = 1;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "cu_seqlens_q[0] is 1") != NULL, "%s", err);
    p.cu_seqlens_q[0] = 0;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
    attn_oracle_problem_free(&p);
}
END_TEST

START_TEST(test_sinks_with_one_visible_key)
{
    /* A window of (0, 0) leaves each row its own key only; with sinks the
     * denominator is that key plus the sink (which has no value). Against
     * the float64 oracle. (Rows with no key at all need Q > K, an error
     * under causal masking.) */
    attn_shape s;
    base_shape(&s);
    s.has_sinks = 1;
    s.causal = 1;
    s.window_left = 0;
    s.window_right = 0;
    s.max_q_len = 6;
    s.max_kv_len = 40;
    attn_oracle_problem_options o = {.num_seqs = 3, .seed = 11};
    attn_oracle_problem p;
    char err[512];
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    attn_forward_args a;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
    assert_matches_oracle(&p, &a);
    attn_oracle_problem_free(&p);
}
END_TEST

/* ---- K/V caches by stride ----------------------------------------------- */

/* One engine layout: where K and V of (block, token, head) live in one
 * buffer, in elements. */
typedef struct kv_layout {
    const char *name;
    int64_t v_offset; /* V's first element within the buffer */
    int64_t k_strides[3], v_strides[3];
    int64_t elements;
} kv_layout;

/* The layouts engines keep their caches in, for a shape of hkv heads, page,
 * d and dv (d == dv where K and V share one tensor's inner dimensions). */
static int make_layout(int which, int64_t blocks, int64_t page, int64_t hkv, int64_t d, int64_t dv,
                       kv_layout *l)
{
    memset(l, 0, sizeof *l);
    switch (which) {
    case 0: /* vLLM [2, blocks, page, H, D]: kv.unbind(0), each contiguous */
        l->name = "vllm [2, blocks, page, H, D]";
        l->v_offset = blocks * page * hkv * d;
        l->elements = l->v_offset + blocks * page * hkv * dv;
        return d == dv;
    case 1: /* FlashInfer NHD [blocks, 2, page, H, D] */
        l->name = "flashinfer NHD [blocks, 2, page, H, D]";
        l->v_offset = page * hkv * d;
        l->k_strides[0] = l->v_strides[0] = 2 * page * hkv * d;
        l->k_strides[1] = l->v_strides[1] = hkv * d;
        l->k_strides[2] = l->v_strides[2] = d;
        l->elements = blocks * 2 * page * hkv * d;
        return d == dv;
    case 2: /* FlashInfer HND [blocks, 2, H, page, D] */
        l->name = "flashinfer HND [blocks, 2, H, page, D]";
        l->v_offset = hkv * page * d;
        l->k_strides[0] = l->v_strides[0] = 2 * hkv * page * d;
        l->k_strides[1] = l->v_strides[1] = d;
        l->k_strides[2] = l->v_strides[2] = page * d;
        l->elements = blocks * 2 * hkv * page * d;
        return d == dv;
    default: /* one [blocks, page, H, D + Dv] tensor: K and V side by side */
        l->name = "combined [blocks, page, H, D + Dv]";
        l->v_offset = d;
        l->k_strides[0] = l->v_strides[0] = page * hkv * (d + dv);
        l->k_strides[1] = l->v_strides[1] = hkv * (d + dv);
        l->k_strides[2] = l->v_strides[2] = d + dv;
        l->elements = blocks * page * hkv * (d + dv);
        return 1;
    }
}

/* Copies a contiguous cache into the layout (one of K or V). */
static void relayout(const void *src, char *dst, size_t elem, int64_t offset, const int64_t st[3],
                     int64_t blocks, int64_t page, int64_t hkv, int64_t dim)
{
    const int64_t sb = st[0] ? st[0] : page * hkv * dim, stok = st[1] ? st[1] : hkv * dim,
                  sh = st[2] ? st[2] : dim;
    for (int64_t b = 0; b < blocks; b++)
        for (int64_t t = 0; t < page; t++)
            for (int64_t h = 0; h < hkv; h++)
                memcpy(dst + (size_t)(offset + b * sb + t * stok + h * sh) * elem,
                       (const char *)src + (size_t)(((b * page + t) * hkv + h) * dim) * elem,
                       (size_t)dim * elem);
}

START_TEST(test_kv_layouts_match_contiguous)
{
    /* Each engine layout, read in place through the K/V strides, gives the
     * same bits as the contiguous copy and passes the float64 oracle (which
     * reads the strides on its own). The elements no layout uses hold NaN,
     * so a read off the strides shows. Bf16 and both FP8 caches, GQA, decode
     * and a prefill chunk, head_dim_v != head_dim for the combined tensor. */
    static const int32_t layout_kv_dtypes[] = {ATTN_DTYPE_BF16, ATTN_DTYPE_FP8_E4M3FN,
                                               ATTN_DTYPE_FP8_E4M3FNUZ};
    for (int c = 0; c < 3; c++) {
        attn_shape s;
        base_shape(&s);
        s.num_q_heads = 8;
        s.num_kv_heads = 2;
        s.head_dim = 64;
        s.head_dim_v = c == 0 ? 64 : 32;
        s.kv_dtype = layout_kv_dtypes[c];
        s.max_q_len = c == 1 ? 1 : 5;
        s.max_kv_len = 700;
        attn_oracle_problem_options o = {
            .num_seqs = 3, .seed = 40 + (uint64_t)c, .extra_blocks = 2};
        attn_oracle_problem p;
        char err[512];
        ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
        attn_forward_args a;
        ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
        void *contiguous = malloc(p.out_bytes);
        memcpy(contiguous, p.out, p.out_bytes);
        const size_t elem = attn_conv_dtype_size(s.kv_dtype);
        const unsigned char nan_byte = s.kv_dtype == ATTN_DTYPE_FP8_E4M3FNUZ ? 0x80 : 0xFF;
        const int64_t hkv = p.shape.num_kv_heads, d = s.head_dim, dv = p.shape.head_dim_v;
        for (int which = 0; which < 4; which++) {
            kv_layout l;
            if (!make_layout(which, p.num_blocks, s.page_size, hkv, d, dv, &l))
                continue;
            char *buf = malloc((size_t)l.elements * elem);
            memset(buf, nan_byte, (size_t)l.elements * elem);
            relayout(p.k_cache, buf, elem, 0, l.k_strides, p.num_blocks, s.page_size, hkv, d);
            relayout(p.v_cache, buf, elem, l.v_offset, l.v_strides, p.num_blocks, s.page_size, hkv,
                     dv);
            harness_context hc;
            harness_context_init(&hc, two_threads);
            attn_oracle_problem_args(&p, &a);
            a.k_cache = buf;
            a.v_cache = buf + (size_t)l.v_offset * elem;
            a.k_stride_block = l.k_strides[0];
            a.k_stride_token = l.k_strides[1];
            a.k_stride_head = l.k_strides[2];
            a.v_stride_block = l.v_strides[0];
            a.v_stride_token = l.v_strides[1];
            a.v_stride_head = l.v_strides[2];
            attn_oracle_problem_poison_out(&p);
            ck_assert_msg(harness_run(&plugin, &hc.ctx, &p.shape, &a, err, sizeof err) == ATTN_OK,
                          "%s: %s", l.name, err);
            ck_assert_msg(memcmp(p.out, contiguous, p.out_bytes) == 0,
                          "%s (%s KV): not the contiguous copy's bits", l.name,
                          attn_dtype_spelling(s.kv_dtype));
            assert_matches_oracle(&p, &a);
            free(buf);
        }
        free(contiguous);
        attn_oracle_problem_free(&p);
    }
}
END_TEST

/* ---- log-sum-exp output and merging ------------------------------------- */

/* Runs the problem with return_lse, the LSE in vLLM's [Hq, T] layout (token
 * stride 1, head stride T) to exercise the strides; lse gets [T][Hq]. */
static attn_status run_with_lse(attn_oracle_problem *p, attn_forward_args *a, float *lse, char *err,
                                size_t err_size)
{
    harness_context hc;
    harness_context_init(&hc, two_threads);
    attn_oracle_problem_args(p, a);
    float *hq_major = malloc(((size_t)p->num_tokens * p->shape.num_q_heads + 1) * sizeof(float));
    a->lse = hq_major;
    a->lse_stride_token = 1;
    a->lse_stride_head = p->num_tokens;
    p->shape.return_lse = 1;
    attn_status st = harness_run(&plugin, &hc.ctx, &p->shape, a, err, err_size);
    p->shape.return_lse = 0;
    for (int64_t t = 0; t < p->num_tokens; t++)
        for (int32_t h = 0; h < p->shape.num_q_heads; h++)
            lse[t * p->shape.num_q_heads + h] = hq_major[(int64_t)h * p->num_tokens + t];
    free(hq_major);
    a->lse = NULL;
    return st;
}

/* |got - want| within float32 accumulation of the softmax denominator. */
static void assert_lse_close(const float *got, const double *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        double w = want[i], g = got[i];
        if (w == -INFINITY) {
            ck_assert_msg(g == -INFINITY, "%s: lse[%lld] = %g, want -inf", what, (long long)i, g);
            continue;
        }
        ck_assert_msg(fabs(g - w) <= 2e-4 + 1e-5 * fabs(w), "%s: lse[%lld] = %.7g, oracle %.7g",
                      what, (long long)i, g, w);
    }
}

START_TEST(test_lse_matches_oracle)
{
    /* cpu-ref's log-sum-exp against the float64 oracle's: GQA prefill and
     * decode with sinks and softcap; long-context decode that the kernels
     * split (the combine path) on an fp8 cache with descales; a window. The
     * output is bitwise the one without the LSE. */
    for (int c = 0; c < 3; c++) {
        attn_shape s;
        base_shape(&s);
        s.num_q_heads = 8;
        s.num_kv_heads = 2;
        s.head_dim = 64;
        s.max_q_len = c == 1 ? 1 : 6;
        s.max_kv_len = c == 1 ? 3000 : 300;
        s.has_sinks = c == 0;
        s.softcap = c == 0 ? 30.0f : 0.0f;
        if (c == 1)
            s.kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
        if (c == 2) {
            s.window_left = 40;
            s.window_right = 0;
        }
        attn_oracle_problem_options o = {.num_seqs = c == 1 ? 2 : 3, .seed = 70 + (uint64_t)c};
        attn_oracle_problem p;
        char err[512];
        ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
        if (c == 1)
            p.k_descale = 0.75f, p.v_descale = 1.25f;
        attn_forward_args a;
        ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
        void *plain = malloc(p.out_bytes);
        memcpy(plain, p.out, p.out_bytes);
        const int64_t rows = (int64_t)p.num_tokens * s.num_q_heads;
        float *lse = malloc((size_t)(rows + 1) * sizeof(float));
        ck_assert_msg(run_with_lse(&p, &a, lse, err, sizeof err) == ATTN_OK, "%s", err);
        ck_assert_msg(memcmp(plain, p.out, p.out_bytes) == 0, "config %d: output changed", c);
        double *want = calloc((size_t)rows * p.shape.head_dim_v + 1, sizeof(double));
        double *want_lse = calloc((size_t)rows + 1, sizeof(double));
        ck_assert_int_eq(attn_oracle_forward_lse(&p.shape, &a, want, want_lse, err, sizeof err), 0);
        assert_lse_close(lse, want_lse, rows,
                         c == 0   ? "sinks+softcap"
                         : c == 1 ? "split"
                                  : "window");
        free(want);
        free(want_lse);
        free(lse);
        free(plain);
        attn_oracle_problem_free(&p);
    }
}
END_TEST

/* cpu-ref through libattnreg (the build's shipped conf), for the host API's
 * calls on a backend. */
static attn_backend *cpu_ref_backend(attn_registry **reg)
{
    const char *dirs[1] = {ATTNREG_TEST_CONF_DIR};
    attn_registry_options opt;
    attn_registry_options_init(&opt);
    opt.conf_paths = dirs;
    opt.num_conf_paths = 1;
    opt.skip_env_conf_path = opt.skip_default_conf = opt.skip_env = 1;
    opt.forced_backend = "cpu-ref";
    opt.log_level = ATTN_LOG_OFF;
    ck_assert_msg(attn_registry_open(&opt, reg) == ATTN_OK, "%s", attn_last_error());
    attn_shape s;
    attn_selection sel;
    attn_backend *b = NULL;
    attn_shape_init(&s);
    attn_selection_init(&sel);
    ck_assert_msg(attn_registry_select(*reg, &s, &sel) == ATTN_OK, "%s", sel.message);
    ck_assert_msg(attn_backend_create(*reg, &sel, &b) == ATTN_OK, "%s", attn_last_error());
    return b;
}

START_TEST(test_split_then_merge_equals_whole)
{
    /* Cascade attention: each sequence's keys split into a prefix of whole
     * pages before its new tokens (attended without causal masking: every
     * query sees all of it, even when it is shorter than the queries or
     * empty) and the rest (causal, so the mask is the whole's), merged by
     * attn_merge_states on the host and by the cpu-ref backend
     * (attn_backend_merge_states, 0.5), equal attention over all the keys,
     * output and LSE; f32 and bf16 states. */
    attn_registry *reg = NULL;
    attn_backend *backend = cpu_ref_backend(&reg);
    for (int c = 0; c < 4; c++) {
        const int on_backend = c >= 2;
        attn_shape s;
        base_shape(&s);
        s.num_q_heads = 4;
        s.num_kv_heads = 2;
        s.head_dim = 32;
        s.max_q_len = 5;
        s.max_kv_len = 400;
        s.out_dtype = c % 2 == 0 ? ATTN_DTYPE_F32 : ATTN_DTYPE_BF16;
        attn_oracle_problem_options o = {.num_seqs = 4, .seed = 90 + (uint64_t)c};
        attn_oracle_problem p;
        char err[512];
        ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
        const int64_t rows = (int64_t)p.num_tokens * s.num_q_heads;
        float *lse_whole = malloc((size_t)(rows + 1) * sizeof(float));
        float *lse_prefix = malloc((size_t)(rows + 1) * sizeof(float));
        float *lse_suffix = malloc((size_t)(rows + 1) * sizeof(float));
        attn_forward_args a;
        ck_assert_msg(run_with_lse(&p, &a, lse_whole, err, sizeof err) == ATTN_OK, "%s", err);
        char *whole = malloc(p.out_bytes), *prefix = malloc(p.out_bytes);
        memcpy(whole, p.out, p.out_bytes);

        int32_t *kv = malloc((size_t)p.num_seqs * sizeof(int32_t));
        int32_t *table = malloc((size_t)p.num_seqs * p.block_table_stride * sizeof(int32_t));
        memcpy(kv, p.seqused_k, (size_t)p.num_seqs * sizeof(int32_t));
        memcpy(table, p.block_table, (size_t)p.num_seqs * p.block_table_stride * sizeof(int32_t));
        int32_t *cut = malloc((size_t)p.num_seqs * sizeof(int32_t));
        for (int32_t i = 0; i < p.num_seqs; i++) {
            int32_t q = p.cu_seqlens_q[i + 1] - p.cu_seqlens_q[i];
            cut[i] = (kv[i] - q) / s.page_size * s.page_size;
            if (i == 0)
                cut[i] = 0; /* one sequence with an empty prefix (lse -inf) */
            p.seqused_k[i] = cut[i];
        }
        p.shape.causal = 0;
        ck_assert_msg(run_with_lse(&p, &a, lse_prefix, err, sizeof err) == ATTN_OK, "%s", err);
        memcpy(prefix, p.out, p.out_bytes);
        p.shape.causal = 1;
        for (int32_t i = 0; i < p.num_seqs; i++) {
            p.seqused_k[i] = kv[i] - cut[i];
            for (int32_t j = 0; j < p.block_table_stride; j++) {
                int32_t from = j + cut[i] / s.page_size;
                p.block_table[(size_t)i * p.block_table_stride + j] =
                    from < p.block_table_stride ? table[(size_t)i * p.block_table_stride + from]
                                                : 0;
            }
        }
        ck_assert_msg(run_with_lse(&p, &a, lse_suffix, err, sizeof err) == ATTN_OK, "%s", err);

        attn_merge_args m;
        attn_merge_args_init(&m);
        m.num_tokens = p.num_tokens;
        m.num_heads = s.num_q_heads;
        m.head_dim = p.shape.head_dim_v;
        m.dtype = s.out_dtype;
        m.a = prefix;
        m.lse_a = lse_prefix;
        m.b = p.out; /* merged in place over the suffix's output */
        m.lse_b = lse_suffix;
        m.out = p.out;
        m.lse_out = lse_suffix;
        m.stride_token = p.out_stride_token;
        m.stride_head = p.out_stride_head;
        if (on_backend)
            ck_assert_msg(attn_backend_merge_states(backend, &m) == ATTN_OK, "%s",
                          attn_last_error());
        else
            ck_assert_int_eq(attn_merge_states(&m), ATTN_OK);

        const int f32 = s.out_dtype == ATTN_DTYPE_F32;
        const double tol_rel = f32 ? 1e-5 : 0x1p-7, tol_abs = f32 ? 2e-6 : 0x1p-9;
        for (int64_t t = 0; t < p.num_tokens; t++)
            for (int32_t h = 0; h < s.num_q_heads; h++)
                for (int32_t i = 0; i < p.shape.head_dim_v; i++) {
                    int64_t at = t * p.out_stride_token + h * p.out_stride_head + i;
                    double w = attn_oracle_decode(s.out_dtype, whole, at);
                    double g = attn_oracle_decode(s.out_dtype, p.out, at);
                    ck_assert_msg(fabs(g - w) <= tol_abs + tol_rel * fabs(w),
                                  "%s on the %s: token %lld head %d [%d]: merged %.7g, whole %.7g",
                                  attn_dtype_spelling(s.out_dtype), on_backend ? "backend" : "host",
                                  (long long)t, (int)h, (int)i, g, w);
                }
        for (int64_t r = 0; r < rows; r++)
            ck_assert_msg(fabsf(lse_suffix[r] - lse_whole[r]) <=
                              1e-4f + 1e-5f * fabsf(lse_whole[r]),
                          "row %lld: merged lse %.7g, whole %.7g", (long long)r,
                          (double)lse_suffix[r], (double)lse_whole[r]);
        memcpy(p.block_table, table, (size_t)p.num_seqs * p.block_table_stride * sizeof(int32_t));
        memcpy(p.seqused_k, kv, (size_t)p.num_seqs * sizeof(int32_t));
        free(cut);
        free(table);
        free(kv);
        free(whole);
        free(prefix);
        free(lse_whole);
        free(lse_prefix);
        free(lse_suffix);
        attn_oracle_problem_free(&p);
    }
    attn_backend_destroy(backend);
    attn_registry_close(reg);
}
END_TEST

START_TEST(test_merge_states_edges)
{
    /* attn_merge_states on its own: against a float64 merge of random rows,
     * a side at -inf contributes nothing, both at -inf give zeros and -inf;
     * the errors name what is wrong. */
    enum { T = 3, H = 2, D = 5 };
    float a[T][H][D], b[T][H][D], out[T][H][D], la[T][H], lb[T][H], lo[T][H];
    uint64_t rng = 12345;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            la[t][h] = (float)(4.0 * attn_oracle_rand_uniform(&rng) - 2.0);
            lb[t][h] = (float)(4.0 * attn_oracle_rand_uniform(&rng) - 2.0);
            for (int i = 0; i < D; i++) {
                a[t][h][i] = (float)(2.0 * attn_oracle_rand_uniform(&rng) - 1.0);
                b[t][h][i] = (float)(2.0 * attn_oracle_rand_uniform(&rng) - 1.0);
            }
        }
    la[1][0] = -INFINITY;
    la[2][1] = lb[2][1] = -INFINITY;
    attn_merge_args m;
    attn_merge_args_init_sized(&m, ATTN_MERGE_ARGS_SIZE_0_4); /* the oldest layout works */
    ck_assert_uint_eq(m.struct_size, ATTN_MERGE_ARGS_SIZE_0_4);
    m.num_tokens = T;
    m.num_heads = H;
    m.head_dim = D;
    m.dtype = ATTN_DTYPE_F32;
    m.a = a;
    m.lse_a = &la[0][0];
    m.b = b;
    m.lse_b = &lb[0][0];
    m.out = out;
    m.lse_out = &lo[0][0];
    ck_assert_int_eq(attn_merge_states(&m), ATTN_OK);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < H; h++) {
            double x = la[t][h], y = lb[t][h];
            if (x == -INFINITY && y == -INFINITY) {
                ck_assert(lo[t][h] == -INFINITY);
                for (int i = 0; i < D; i++)
                    ck_assert(out[t][h][i] == 0.0f);
                continue;
            }
            double mx = x > y ? x : y, wa = exp(x - mx), wb = exp(y - mx);
            ck_assert(fabs(lo[t][h] - (mx + log(wa + wb))) < 1e-6);
            for (int i = 0; i < D; i++) {
                double want = (a[t][h][i] * wa + b[t][h][i] * wb) / (wa + wb);
                ck_assert_msg(fabs(out[t][h][i] - want) < 1e-6, "[%d][%d][%d] %g vs %g", t, h, i,
                              (double)out[t][h][i], want);
            }
        }
    ck_assert(out[1][0][0] == b[1][0][0]); /* a side at -inf: the other, exactly */
    m.dtype = ATTN_DTYPE_FP8_E4M3FN;
    ck_assert_int_eq(attn_merge_states(&m), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(attn_last_error(), "f32, f16 or bf16"), "%s", attn_last_error());
    m.dtype = ATTN_DTYPE_F32;
    m.lse_b = NULL;
    ck_assert_int_eq(attn_merge_states(&m), ATTN_ERR_INVALID_ARGUMENT);
    m.lse_b = &lb[0][0];
    m.struct_size = 8;
    ck_assert_int_eq(attn_merge_states(&m), ATTN_ERR_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_backend_merge_states)
{
    /* attn_backend_merge_states on cpu-ref (host memory is its memory
     * space) gives attn_merge_states' bits: strided bf16 rows, -inf sides, a
     * 0.4 host's struct (no stream); the same checks at the boundary, named
     * for the call; nothing to merge is no call. */
    enum { T = 4, H = 3, D = 8, ST = H * D + 5, SH = D + 1 };
    static uint16_t a[T * ST], b[T * ST], out_host[T * ST], out_be[T * ST];
    float la[T * H], lb[T * H], lo_host[T * H], lo_be[T * H];
    uint64_t rng = 777;
    for (int i = 0; i < T * ST; i++) {
        a[i] = attn_conv_f32_to_bf16((float)(2.0 * attn_oracle_rand_uniform(&rng) - 1.0));
        b[i] = attn_conv_f32_to_bf16((float)(2.0 * attn_oracle_rand_uniform(&rng) - 1.0));
    }
    for (int i = 0; i < T * H; i++) {
        la[i] = (float)(6.0 * attn_oracle_rand_uniform(&rng) - 3.0);
        lb[i] = (float)(6.0 * attn_oracle_rand_uniform(&rng) - 3.0);
    }
    la[1] = -INFINITY;
    la[5] = lb[5] = -INFINITY;
    memset(out_host, 0, sizeof out_host);
    memset(out_be, 0, sizeof out_be);
    attn_merge_args m;
    attn_merge_args_init_sized(&m, ATTN_MERGE_ARGS_SIZE_0_4);
    m.num_tokens = T;
    m.num_heads = H;
    m.head_dim = D;
    m.dtype = ATTN_DTYPE_BF16;
    m.a = a;
    m.b = b;
    m.lse_a = la;
    m.lse_b = lb;
    m.stride_token = ST;
    m.stride_head = SH;
    m.out = out_host;
    m.lse_out = lo_host;
    ck_assert_int_eq(attn_merge_states(&m), ATTN_OK);
    attn_registry *reg = NULL;
    attn_backend *be = cpu_ref_backend(&reg);
    m.out = out_be;
    m.lse_out = lo_be;
    ck_assert_msg(attn_backend_merge_states(be, &m) == ATTN_OK, "%s", attn_last_error());
    ck_assert(memcmp(out_host, out_be, sizeof out_host) == 0);
    ck_assert(memcmp(lo_host, lo_be, sizeof lo_host) == 0);
    ck_assert(lo_be[5] == -INFINITY);

    /* Today's struct, with a stream (ignored by a CPU backend). */
    attn_merge_args full = m;
    full.struct_size = sizeof full;
    full.stream = NULL;
    ck_assert_int_eq(attn_backend_merge_states(be, &full), ATTN_OK);
    ck_assert(memcmp(out_host, out_be, sizeof out_host) == 0);

    m.dtype = ATTN_DTYPE_FP8_E4M3FN;
    ck_assert_int_eq(attn_backend_merge_states(be, &m), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(attn_last_error(), "attn_backend_merge_states: dtype fp8_e4m3fn"), "%s",
                  attn_last_error());
    m.dtype = ATTN_DTYPE_BF16;
    m.stride_head = -1;
    ck_assert_int_eq(attn_backend_merge_states(be, &m), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(attn_last_error(), "strides must be >= 0"), "%s", attn_last_error());
    m.stride_head = SH;
    m.b = NULL;
    ck_assert_int_eq(attn_backend_merge_states(be, &m), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(attn_last_error(), "must not be NULL"), "%s", attn_last_error());
    m.num_heads = 0;
    ck_assert_int_eq(attn_backend_merge_states(be, &m), ATTN_ERR_INVALID_ARGUMENT);
    m.num_heads = H;
    m.num_tokens = 0; /* nothing to merge: NULL arrays are fine */
    ck_assert_int_eq(attn_backend_merge_states(be, &m), ATTN_OK);
    m.struct_size = 8;
    ck_assert_int_eq(attn_backend_merge_states(be, &m), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_backend_merge_states(be, NULL), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_backend_merge_states(NULL, &full), ATTN_ERR_INVALID_ARGUMENT);
    attn_backend_destroy(be);
    attn_registry_close(reg);

    /* The plugin's own entry refuses a struct older than its header's (the
     * host always passes today's; cpu-ref needs no backend state). */
    ck_assert_ptr_nonnull(plugin.desc->merge_states);
    char err[256] = "";
    m.struct_size = (uint32_t)ATTN_MERGE_ARGS_SIZE_0_4;
    m.num_tokens = T;
    m.b = b;
    ck_assert_int_eq(plugin.desc->merge_states(NULL, &m, err, sizeof err),
                     ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "merge args"), "%s", err);
}
END_TEST

START_TEST(test_lse_flag_and_array_agree)
{
    /* return_lse without an lse array, or an array without the flag, is an
     * error naming it (never an unwritten or ignored output). */
    attn_shape s;
    base_shape(&s);
    attn_oracle_problem_options o = {.num_seqs = 2, .seed = 3};
    attn_oracle_problem p;
    char err[512];
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    harness_context hc;
    harness_context_init(&hc, two_threads);
    attn_forward_args a;
    attn_oracle_problem_args(&p, &a);
    p.shape.return_lse = 1;
    ck_assert_int_eq(harness_run(&plugin, &hc.ctx, &p.shape, &a, err, sizeof err),
                     ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "return_lse") && strstr(err, "args.lse is NULL"), "%s", err);
    p.shape.return_lse = 0;
    float lse[64];
    a.lse = lse;
    ck_assert_int_eq(harness_run(&plugin, &hc.ctx, &p.shape, &a, err, sizeof err),
                     ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "without return_lse"), "%s", err);
    attn_oracle_problem_free(&p);
}
END_TEST

/* ---- KV append ---------------------------------------------------------- */

START_TEST(test_append_kv_round_trips_every_dtype)
{
    /* New tokens' K/V rows written at their slots (a shuffled slot mapping
     * with a padding entry, -1) into a cache of each dtype, the NHD layout
     * for one of them: each element is what the oracle's own quantisation
     * gives (fp8: the nearest code to x / scale; f16/bf16: within half an
     * ulp of x), the padding token and every other slot untouched. */
    static const int32_t dtypes[] = {ATTN_DTYPE_F32, ATTN_DTYPE_F16, ATTN_DTYPE_BF16,
                                     ATTN_DTYPE_FP8_E4M3FN, ATTN_DTYPE_FP8_E4M3FNUZ};
    enum { T = 7, HKV = 2, D = 16, DV = 8, PAGE = 4, BLOCKS = 5 };
    for (int c = 0; c < 6; c++) {
        const int32_t kv_dtype = dtypes[c < 5 ? c : 2];
        const int nhd = c == 5; /* bf16 again, K and V interleaved per block */
        attn_shape s;
        base_shape(&s);
        s.num_q_heads = 4;
        s.num_kv_heads = HKV;
        s.head_dim = D;
        s.head_dim_v = DV;
        s.page_size = PAGE;
        s.kv_dtype = kv_dtype;
        s.compute_dtype = ATTN_DTYPE_F32;
        harness_context hc;
        harness_context_init(&hc, two_threads);
        void *backend = NULL;
        char err[512];
        ck_assert_msg(plugin.desc->create(&hc.ctx, &s, &backend, err, sizeof err) == ATTN_OK, "%s",
                      err);
        const size_t elem = attn_conv_dtype_size(kv_dtype);
        /* NHD: [blocks, 2, page, H, D] with D == DV for both: use D for V's
         * row too and only DV of it */
        const int64_t k_block = nhd ? 2 * PAGE * HKV * D : PAGE * HKV * D;
        const int64_t v_block = nhd ? 2 * PAGE * HKV * D : PAGE * HKV * DV;
        const int64_t v_token = nhd ? HKV * D : HKV * DV, v_head = nhd ? D : DV;
        const size_t bytes = (size_t)BLOCKS * (size_t)(nhd ? 2 * PAGE * HKV * D : PAGE * HKV * D);
        unsigned char *kc = malloc(bytes * elem), *vc = malloc(bytes * elem);
        unsigned char *kc0 = malloc(bytes * elem), *vc0 = malloc(bytes * elem);
        memset(kc, 0x3c, bytes * elem);
        memset(vc, 0x3c, bytes * elem);
        memcpy(kc0, kc, bytes * elem);
        memcpy(vc0, vc, bytes * elem);
        float k[T][HKV][D], v[T][HKV][DV];
        uint64_t rng = 500 + (uint64_t)c;
        for (int t = 0; t < T; t++)
            for (int h = 0; h < HKV; h++) {
                for (int i = 0; i < D; i++)
                    k[t][h][i] = (float)(6.0 * attn_oracle_rand_uniform(&rng) - 3.0);
                for (int i = 0; i < DV; i++)
                    v[t][h][i] = (float)(6.0 * attn_oracle_rand_uniform(&rng) - 3.0);
            }
        const int64_t slot_mapping[T] = {13, 2, -1, 19, 7, 0, 8};
        attn_append_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.num_tokens = T;
        a.src_dtype = ATTN_DTYPE_F32;
        a.k = k;
        a.v = v;
        a.slot_mapping = slot_mapping;
        a.k_cache = kc;
        a.v_cache = nhd ? kc + (size_t)PAGE * HKV * D * elem : vc;
        a.num_blocks = BLOCKS;
        if (nhd) {
            a.k_cache_stride_block = a.v_cache_stride_block = k_block;
            a.v_cache_stride_token = v_token;
            a.v_cache_stride_head = v_head;
        }
        a.k_scale = 0.5f;
        a.v_scale = 0.25f;
        ck_assert_msg(plugin.desc->append_kv(backend, &a, err, sizeof err) == ATTN_OK, "%s", err);
        const int fp8 = attn_conv_dtype_is_fp8(kv_dtype);
        for (int kvs = 0; kvs < 2; kvs++) {
            const int64_t dim = kvs ? DV : D;
            const int64_t block_st = kvs ? v_block : k_block;
            const int64_t token_st = kvs ? v_token : HKV * D, head_st = kvs ? v_head : D;
            const unsigned char *cache = (const unsigned char *)(kvs ? a.v_cache : a.k_cache);
            for (int t = 0; t < T; t++) {
                if (slot_mapping[t] < 0)
                    continue;
                for (int h = 0; h < HKV; h++)
                    for (int i = 0; i < dim; i++) {
                        int64_t at = slot_mapping[t] / PAGE * block_st +
                                     slot_mapping[t] % PAGE * token_st + h * head_st + i;
                        double x = kvs ? v[t][h][i] : k[t][h][i];
                        if (fp8) {
                            double q = x / (kvs ? 0.25 : 0.5);
                            ck_assert_msg(cache[at] == attn_oracle_fp8_quantize(kv_dtype, q),
                                          "%s: token %d code 0x%02x, oracle 0x%02x",
                                          attn_dtype_spelling(kv_dtype), t, cache[at],
                                          attn_oracle_fp8_quantize(kv_dtype, q));
                            continue;
                        }
                        double got = attn_oracle_decode(kv_dtype, cache, at);
                        double half_ulp = kv_dtype == ATTN_DTYPE_BF16  ? 0x1p-8
                                          : kv_dtype == ATTN_DTYPE_F16 ? 0x1p-11
                                                                       : 0.0;
                        ck_assert_msg(fabs(got - x) <= half_ulp * fabs(x), "%s: %g stored as %g",
                                      attn_dtype_spelling(kv_dtype), x, got);
                    }
            }
        }
        /* A slot no token maps to (slot 1: the padding token's -1 wrote
         * nowhere) still holds the fill. */
        const int64_t free_slot = 1;
        ck_assert_int_eq(memcmp(kc + (size_t)(free_slot * HKV * D) * elem,
                                kc0 + (size_t)(free_slot * HKV * D) * elem, (size_t)HKV * D * elem),
                         0);
        /* A slot past the cache is named, and nothing is written. */
        memcpy(kc0, kc, bytes * elem);
        const int64_t bad[T] = {1, 2, 3, 4, 5, 6, BLOCKS * PAGE};
        a.slot_mapping = bad;
        ck_assert_int_eq(plugin.desc->append_kv(backend, &a, err, sizeof err),
                         ATTN_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(err, "slot_mapping[6] = 20"), "%s", err);
        ck_assert_int_eq(memcmp(kc, kc0, bytes * elem), 0);
        free(kc);
        free(vc);
        free(kc0);
        free(vc0);
        plugin.desc->destroy(backend);
    }
}
END_TEST

START_TEST(test_window_larger_than_context)
{
    /* A window wider than any context must give exactly the unwindowed
     * result (same tiles, same arithmetic). */
    attn_shape s;
    base_shape(&s);
    s.max_kv_len = 700;
    s.max_q_len = 3;
    attn_oracle_problem_options o = {.num_seqs = 2, .seed = 5};
    attn_oracle_problem p;
    char err[512];
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    attn_forward_args a;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
    void *plain = malloc(p.out_bytes);
    memcpy(plain, p.out, p.out_bytes);
    p.shape.window_left = 1 << 30;
    p.shape.window_right = 1 << 30;
    attn_oracle_problem_poison_out(&p);
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
    ck_assert_int_eq(memcmp(plain, p.out, p.out_bytes), 0);
    /* And non-causal with a huge window equals non-causal without one. */
    p.shape.causal = 0;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
    memcpy(plain, p.out, p.out_bytes);
    p.shape.window_left = p.shape.window_right = -1;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
    ck_assert_int_eq(memcmp(plain, p.out, p.out_bytes), 0);
    free(plain);
    attn_oracle_problem_free(&p);
}
END_TEST

/* The window convention (include/attn_types.h): window (L, R) lets query
 * position p see keys p - L .. p + R, both ends included. A model whose
 * config says sliding_window = W (Hugging Face, SGLang: a query sees the W
 * most recent keys, itself included) maps to (W - 1, 0), as vLLM passes it
 * to FlashAttention; under causal masking (W - 1, -1) is the same set.
 * Checked without the window code: with
 * pages of one token, "the last W keys" of a decode row is the same row
 * over a block table that starts K - W entries later, with no window. */
START_TEST(test_sliding_window_mappings)
{
    static const int32_t windows[] = {1, 2, 7, 16, 33};
    for (size_t wi = 0; wi < sizeof windows / sizeof windows[0]; wi++) {
        const int32_t W = windows[wi];
        attn_shape s;
        base_shape(&s);
        s.page_size = 1;
        s.max_q_len = 1;
        s.max_kv_len = 60;
        attn_oracle_problem_options o = {.num_seqs = 4, .seed = 40 + (uint64_t)wi};
        attn_oracle_problem p;
        char err[512];
        ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
        attn_forward_args a;
        const size_t out_bytes = p.out_bytes;
        unsigned char *want = malloc(out_bytes), *got = malloc(out_bytes);
        /* the last W keys, no window */
        int32_t *bt = malloc((size_t)p.num_seqs * (size_t)p.block_table_stride * sizeof *bt);
        int32_t *used = malloc((size_t)p.num_seqs * sizeof *used);
        for (int32_t q = 0; q < p.num_seqs; q++) {
            const int32_t K = p.seqused_k[q], skip = K > W ? K - W : 0;
            for (int32_t j = 0; j < p.block_table_stride; j++)
                bt[(size_t)q * p.block_table_stride + j] =
                    j + skip < p.block_table_stride
                        ? p.block_table[(size_t)q * p.block_table_stride + j + skip]
                        : 0;
            used[q] = K - skip;
        }
        attn_oracle_problem_args(&p, &a);
        a.block_table = bt;
        a.seqused_k = used;
        harness_context hc;
        harness_context_init(&hc, two_threads);
        ck_assert_int_eq(harness_run(&plugin, &hc.ctx, &p.shape, &a, err, sizeof err), ATTN_OK);
        memcpy(want, p.out, out_bytes);
        /* sliding_window W -> (W - 1, 0) (vLLM, attnreg plan); (W - 1, -1) */
        for (int m = 0; m < 2; m++) {
            p.shape.window_left = W - 1;
            p.shape.window_right = m == 0 ? -1 : 0;
            attn_oracle_problem_poison_out(&p);
            ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
            memcpy(got, p.out, out_bytes);
            /* Same keys in the same order: the same floats. */
            ck_assert_msg(memcmp(want, got, out_bytes) == 0,
                          "window %d mapped to (%d, %d) differs from the last %d keys", (int)W,
                          (int)(W - 1), m == 0 ? -1 : 0, (int)W);
        }
        free(bt);
        free(used);
        free(want);
        free(got);
        attn_oracle_problem_free(&p);
    }
}
END_TEST

/* The page sizes engines use (SGLang 1; vLLM multiples of 16 up to 1024),
 * random problems against the float64 oracle. */
START_TEST(test_engine_page_sizes)
{
    static const int32_t pages[] = {1, 48, 128, 512};
    for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
        attn_shape s;
        base_shape(&s);
        s.page_size = pages[i];
        s.max_q_len = 9;
        s.max_kv_len = 1100;
        attn_oracle_problem_options o = {
            .num_seqs = 3, .seed = 60 + (uint64_t)i, .extra_blocks = 2};
        element_check c;
        char msg[1024];
        ck_assert_msg(run_and_check(&s, &o, two_threads, &c, msg, sizeof msg) == 0, "page %d: %s",
                      (int)pages[i], msg);
    }
}
END_TEST

START_TEST(test_block_table_trailing_entries)
{
    /* Rows much wider than needed, the unused entries out of range (they are
     * poison): the plugin must read only ceil(kv_len / page) entries. */
    attn_shape s;
    base_shape(&s);
    s.page_size = 3;
    attn_oracle_problem_options o = {
        .num_seqs = 3, .seed = 3, .extra_table_columns = 17, .extra_blocks = 5};
    element_check c;
    char msg[1024];
    ck_assert_msg(run_and_check(&s, &o, two_threads, &c, msg, sizeof msg) == 0, "%s", msg);
}
END_TEST

START_TEST(test_strided_views_leave_padding_alone)
{
    /* q and out as padded views (out head-major): results match the oracle
     * and the padding of out still holds its NaN poison afterwards. */
    attn_shape s;
    base_shape(&s);
    s.out_dtype = ATTN_DTYPE_BF16;
    s.head_dim_v = 24;
    attn_oracle_problem_options o = {.num_seqs = 3, .seed = 21, .strided = 1};
    attn_oracle_problem p;
    char err[512];
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    attn_forward_args a;
    ck_assert_int_eq(run_plugin(&p, &a, two_threads, err, sizeof err), ATTN_OK);
    const uint16_t *out = p.out;
    int64_t count = (int64_t)(p.out_bytes / 2), written = 0;
    for (int64_t i = 0; i < count; i++)
        if (out[i] != 0x7FC0u)
            written++;
    ck_assert_int_eq(written, (int64_t)p.num_tokens * s.num_q_heads * 24);
    assert_matches_oracle(&p, &a);
    attn_oracle_problem_free(&p);
}
END_TEST

START_TEST(test_threads_and_kernels_agree_bitwise)
{
    /* The split decision depends on the batch, never on the thread count,
     * so 1 and 3 threads give identical bits; the generic and AVX2 kernels
     * may differ (FMA contraction) but both pass the oracle. */
    attn_shape s;
    base_shape(&s);
    s.num_q_heads = 16;
    s.num_kv_heads = 2;
    s.head_dim = 128;
    s.kv_dtype = ATTN_DTYPE_BF16;
    s.max_q_len = 1;
    s.max_kv_len = 3000;
    attn_oracle_problem_options o = {.num_seqs = 2, .seed = 99};
    attn_oracle_problem p;
    char err[512];
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    attn_forward_args a;
    const char *one[] = {"threads", "1", NULL};
    const char *three[] = {"threads", "3", NULL};
    ck_assert_int_eq(run_plugin(&p, &a, one, err, sizeof err), ATTN_OK);
    void *first = malloc(p.out_bytes);
    memcpy(first, p.out, p.out_bytes);
    attn_oracle_problem_poison_out(&p);
    ck_assert_int_eq(run_plugin(&p, &a, three, err, sizeof err), ATTN_OK);
    ck_assert_int_eq(memcmp(first, p.out, p.out_bytes), 0);
    free(first);
    const char *generic[] = {"threads", "2", "kernel", "generic", NULL};
    element_check c;
    char msg[1024];
    ck_assert_msg(run_and_check(&s, &o, generic, &c, msg, sizeof msg) == 0, "%s", msg);
    attn_oracle_problem_free(&p);
}
END_TEST

START_TEST(test_fp8_compute_quantises_q)
{
    /* With fp8 compute, Q is quantised: the result must match the oracle
     * (which quantises) and differ from the same run in bf16 compute. */
    attn_shape s;
    base_shape(&s);
    s.kv_dtype = s.compute_dtype = ATTN_DTYPE_FP8_E4M3FN;
    attn_oracle_problem_options o = {.num_seqs = 2, .seed = 8};
    element_check c;
    char msg[1024];
    ck_assert_msg(run_and_check(&s, &o, two_threads, &c, msg, sizeof msg) == 0, "%s", msg);
    s.kv_dtype = s.compute_dtype = ATTN_DTYPE_FP8_E4M3FNUZ;
    ck_assert_msg(run_and_check(&s, &o, two_threads, &c, msg, sizeof msg) == 0, "%s", msg);
}
END_TEST

/* ---- errors and validation ------------------------------------------------ */

START_TEST(test_workspace_and_argument_errors)
{
    attn_shape s;
    base_shape(&s);
    s.has_sinks = 1;
    attn_oracle_problem_options o = {.num_seqs = 2, .seed = 4};
    attn_oracle_problem p;
    char err[512];
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    harness_context hc;
    harness_context_init(&hc, two_threads);
    void *backend = NULL;
    ck_assert_int_eq(plugin.desc->create(&hc.ctx, &p.shape, &backend, err, sizeof err), ATTN_OK);
    attn_batch_limits small = {sizeof small, 1, 1}, large = {sizeof large, 64, 4096};
    size_t small_bytes = 0, large_bytes = 0;
    ck_assert_int_eq(plugin.desc->workspace_size(backend, &small, &small_bytes), ATTN_OK);
    ck_assert_int_eq(plugin.desc->workspace_size(backend, &large, &large_bytes), ATTN_OK);
    ck_assert(small_bytes > 0 && large_bytes >= small_bytes);

    attn_forward_args a;
    attn_oracle_problem_args(&p, &a);
    /* Workspace sized for one sequence is too small for two. */
    char *ws = malloc(large_bytes);
    a.workspace = ws;
    a.workspace_size = small_bytes - 1;
    ck_assert_int_eq(plugin.desc->forward(backend, &a, err, sizeof err),
                     ATTN_ERR_WORKSPACE_TOO_SMALL);
    ck_assert_msg(strstr(err, "workspace") != NULL, "%s", err);
    a.workspace_size = large_bytes;
    ck_assert_int_eq(plugin.desc->forward(backend, &a, err, sizeof err), ATTN_OK);

    /* A used block-table entry out of range is named. */
    int32_t saved = p.block_table[0];
    p.block_table[0] = p.num_blocks;
    ck_assert_int_eq(plugin.desc->forward(backend, &a, err, sizeof err), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "block_table[0][0]") != NULL, "%s", err);
    p.block_table[0] = saved;

    /* Sinks promised by the shape but missing. */
    a.sinks = NULL;
    ck_assert_int_eq(plugin.desc->forward(backend, &a, err, sizeof err), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "sinks") != NULL, "%s", err);
    a.sinks = p.sinks;

    /* A sequence longer than the shape's max_kv_len. */
    a.max_seqlen_k = s.max_kv_len + 1;
    ck_assert_int_eq(plugin.desc->forward(backend, &a, err, sizeof err), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "max_kv_len") != NULL, "%s", err);
    a.max_seqlen_k = p.max_seqlen_k;

    /* cu_seqlens_q that does not end at num_tokens. */
    a.num_tokens += 1;
    ck_assert_int_eq(plugin.desc->forward(backend, &a, err, sizeof err), ATTN_ERR_INVALID_ARGUMENT);
    a.num_tokens -= 1;

    /* Zero sequences is a valid no-op, even without a workspace. */
    a.num_seqs = 0;
    a.workspace = NULL;
    a.workspace_size = 0;
    ck_assert_int_eq(plugin.desc->forward(backend, &a, err, sizeof err), ATTN_OK);

    free(ws);
    plugin.desc->destroy(backend);
    attn_oracle_problem_free(&p);
}
END_TEST

/* cu_seqlens_q = [0, 2147483584, -2147483648, -64, T] decreases
 * at sequence 1, but in int32 every difference wraps to a length within
 * max_seqlen_q (here the shape's capacity, INT32_MAX), so the check passed
 * and forward wrote ~2^31 rows past out. Refused, naming the sequence. */
START_TEST(test_cu_seqlens_wrap_is_refused)
{
    attn_shape s;
    base_shape(&s);
    attn_oracle_problem_options o = {.num_seqs = 4, .seed = 23};
    attn_oracle_problem p;
    char err[512];
    /* A small problem, then the backend made for the largest capacities. */
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    p.shape.max_q_len = p.shape.max_kv_len = INT32_MAX;
    harness_context hc;
    harness_context_init(&hc, two_threads);
    void *backend = NULL;
    ck_assert_int_eq(plugin.desc->create(&hc.ctx, &p.shape, &backend, err, sizeof err), ATTN_OK);
    attn_forward_args a;
    attn_oracle_problem_args(&p, &a);
    const int32_t cu[5] = {0, 2147483584, INT32_MIN, -64, p.num_tokens};
    a.cu_seqlens_q = cu;
    a.max_seqlen_q = INT32_MAX;
    ck_assert_int_eq(plugin.desc->forward(backend, &a, err, sizeof err), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(err, "decreases at sequence 1"), "%s", err);
    plugin.desc->destroy(backend);
    attn_oracle_problem_free(&p);
}
END_TEST

START_TEST(test_bad_params_fail_create)
{
    attn_shape s;
    base_shape(&s);
    char err[512];
    void *backend = NULL;
    harness_context hc;
    const char *bad_threads[] = {"threads", "many", NULL};
    harness_context_init(&hc, bad_threads);
    ck_assert_int_eq(plugin.desc->create(&hc.ctx, &s, &backend, err, sizeof err),
                     ATTN_ERR_CREATE_FAILED);
    ck_assert_msg(strstr(err, "threads") != NULL, "%s", err);
    const char *bad_kernel[] = {"kernel", "sse9", NULL};
    harness_context_init(&hc, bad_kernel);
    ck_assert_int_eq(plugin.desc->create(&hc.ctx, &s, &backend, err, sizeof err),
                     ATTN_ERR_CREATE_FAILED);
    /* The environment is not a fallback for the thread count (a plugin
     * reads no ATTNREG_* variable; skip_env must cover it): a bad
     * value there changes nothing, and [params] threads is what counts. */
    harness_context_init(&hc, NULL);
    setenv("ATTNREG_CPU_THREADS", "lots", 1);
    ck_assert_int_eq(plugin.desc->create(&hc.ctx, &s, &backend, err, sizeof err), ATTN_OK);
    plugin.desc->destroy(backend);
    backend = NULL;
    unsetenv("ATTNREG_CPU_THREADS");
    const char *three_threads[] = {"threads", "3", NULL};
    harness_context_init(&hc, three_threads);
    ck_assert_int_eq(plugin.desc->create(&hc.ctx, &s, &backend, err, sizeof err), ATTN_OK);
    plugin.desc->destroy(backend);
    backend = NULL;
    /* create re-checks the predicates like a real constructor. */
    harness_context_init(&hc, NULL);
    snprintf(s.arch, sizeof s.arch, "gfx950");
    ck_assert_int_eq(plugin.desc->create(&hc.ctx, &s, &backend, err, sizeof err),
                     ATTN_ERR_CREATE_FAILED);
    ck_assert_ptr_null(backend);
}
END_TEST

/* ---- predicates and devices ---------------------------------------------- */

static void expect_reject(attn_shape *s, attn_reason reason, const char *predicate)
{
    harness_context hc;
    harness_context_init(&hc, NULL);
    attn_verdict v;
    const char *name = NULL;
    ck_assert_int_eq(harness_accepts(&plugin, &hc.ctx, s, &v, &name), 0);
    ck_assert_int_eq(v.reason, reason);
    ck_assert_str_eq(name, predicate);
    ck_assert(strlen(v.message) > 0);
}

static void expect_accept(const attn_shape *s)
{
    harness_context hc;
    harness_context_init(&hc, NULL);
    attn_verdict v;
    const char *name = NULL;
    ck_assert_msg(harness_accepts(&plugin, &hc.ctx, s, &v, &name) == 1, "rejected by %s: %s", name,
                  v.message);
}

START_TEST(test_predicates)
{
    ck_assert_str_eq(plugin.desc->name, "cpu-ref");
    ck_assert_str_eq(plugin.desc->built_archs[0], "cpu");
    ck_assert_ptr_null(plugin.desc->built_archs[1]);
    attn_shape s;
    attn_shape_defaults(&s);
    expect_accept(&s);
    /* Everything the semantics describe is accepted. */
    s.num_q_heads = 32;
    s.num_kv_heads = 8;
    s.head_dim = 1024;
    s.head_dim_v = 1;
    s.kv_dtype = ATTN_DTYPE_FP8_E4M3FNUZ;
    s.compute_dtype = ATTN_DTYPE_FP8_E4M3FNUZ;
    s.q_dtype = ATTN_DTYPE_F16;
    s.out_dtype = ATTN_DTYPE_F32;
    s.page_size = 1;
    s.max_q_len = 100000;
    s.max_kv_len = 1 << 30;
    s.causal = 0;
    s.window_left = 0;
    s.window_right = 7;
    s.softcap = 30.0f;
    s.has_sinks = 1;
    expect_accept(&s);
    attn_shape r = s;
    snprintf(r.arch, sizeof r.arch, "gfx950");
    expect_reject(&r, ATTN_REASON_ARCH, "arch");
    r = s;
    r.q_dtype = ATTN_DTYPE_FP8_E4M3FN;
    expect_reject(&r, ATTN_REASON_Q_DTYPE, "q_dtype");
    r = s;
    r.kv_dtype = ATTN_DTYPE_BF16; /* fp8 compute needs an fp8 cache of the same format */
    expect_reject(&r, ATTN_REASON_COMPUTE_DTYPE, "compute_dtype");
    r = s;
    r.kv_dtype = ATTN_DTYPE_FP8_E4M3FN; /* ... of the same format */
    expect_reject(&r, ATTN_REASON_COMPUTE_DTYPE, "compute_dtype");
    r = s;
    r.out_dtype = ATTN_DTYPE_FP8_E4M3FN;
    expect_reject(&r, ATTN_REASON_OUT_DTYPE, "out_dtype");
    r = s;
    r.kv_dtype = 42;
    expect_reject(&r, ATTN_REASON_KV_DTYPE, "kv_dtype");
    r = s;
    r.num_kv_heads = 5;
    expect_reject(&r, ATTN_REASON_GQA_RATIO, "gqa_ratio");
    r = s;
    r.head_dim = 1025;
    expect_reject(&r, ATTN_REASON_HEAD_DIM, "head_dims");
    r = s;
    r.head_dim_v = 2048;
    expect_reject(&r, ATTN_REASON_HEAD_DIM_V, "head_dims");
    r = s;
    r.page_size = 0;
    expect_reject(&r, ATTN_REASON_PAGE_SIZE, "page_size");
    r = s;
    r.window_left = -2;
    expect_reject(&r, ATTN_REASON_WINDOW, "features");
    r = s;
    r.softcap = NAN;
    expect_reject(&r, ATTN_REASON_SOFTCAP, "features");
    r = s;
    r.struct_size = 8;
    expect_reject(&r, ATTN_REASON_OTHER, "arch");
}
END_TEST

START_TEST(test_probe_devices)
{
    harness_context hc;
    harness_context_init(&hc, NULL);
    ck_assert_ptr_nonnull(plugin.desc->probe_devices);
    attn_device_info devices[4];
    uint32_t count = 0;
    char err[256] = "";
    ck_assert_int_eq(plugin.desc->probe_devices(&hc.ctx, devices, 4, &count, err, sizeof err),
                     ATTN_OK);
    ck_assert_uint_eq(count, 1);
    ck_assert_str_eq(devices[0].arch, "cpu");
    ck_assert(strlen(devices[0].name) > 0);
    ck_assert_int_ge(devices[0].compute_units, 1);
    ck_assert_int_eq(plugin.desc->probe_devices(&hc.ctx, NULL, 0, &count, err, sizeof err),
                     ATTN_OK);
    ck_assert_uint_eq(count, 1);
}
END_TEST

static Suite *cpu_ref_suite(void)
{
    Suite *suite = suite_create("cpu_ref");
    TCase *basics = tcase_create("basics");
    tcase_add_unchecked_fixture(basics, load_plugin, unload_plugin);
    tcase_add_test(basics, test_predicates);
    tcase_add_test(basics, test_probe_devices);
    tcase_add_test(basics, test_bad_params_fail_create);
    tcase_add_test(basics, test_workspace_and_argument_errors);
    tcase_add_test(basics, test_cu_seqlens_wrap_is_refused);
    suite_add_tcase(suite, basics);

    TCase *edges = tcase_create("edges");
    tcase_add_unchecked_fixture(edges, load_plugin, unload_plugin);
    tcase_set_timeout(edges, 120);
    tcase_add_test(edges, test_short_kv_is_an_error);
    tcase_add_test(edges, test_other_bad_metadata_is_named);
    tcase_add_test(edges, test_sinks_with_one_visible_key);
    tcase_add_test(edges, test_window_larger_than_context);
    tcase_add_test(edges, test_kv_layouts_match_contiguous);
    tcase_add_test(edges, test_lse_matches_oracle);
    tcase_add_test(edges, test_split_then_merge_equals_whole);
    tcase_add_test(edges, test_merge_states_edges);
    tcase_add_test(edges, test_backend_merge_states);
    tcase_add_test(edges, test_lse_flag_and_array_agree);
    tcase_add_test(edges, test_append_kv_round_trips_every_dtype);
    tcase_add_test(edges, test_block_table_trailing_entries);
    tcase_add_test(edges, test_sliding_window_mappings);
    tcase_add_test(edges, test_engine_page_sizes);
    tcase_add_test(edges, test_strided_views_leave_padding_alone);
    tcase_add_test(edges, test_threads_and_kernels_agree_bitwise);
    tcase_add_test(edges, test_fp8_compute_quantises_q);
    suite_add_tcase(suite, edges);

    TCase *sweep = tcase_create("sweep");
    tcase_add_unchecked_fixture(sweep, load_plugin, unload_plugin);
    tcase_set_timeout(sweep, 900);
    tcase_add_test(sweep, test_sweep);
    suite_add_tcase(suite, sweep);
    return suite;
}

int main(void)
{
    SRunner *runner = srunner_create(cpu_ref_suite());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
