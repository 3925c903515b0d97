/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cache_threads.c — the decision cache under concurrency.
 *
 * attnreg.h promises that select and explain may run from many threads on
 * one registry. Eight threads start together on a cold registry (so they
 * race on cache misses, not only on hits) and select a mix of shapes —
 * accepted, fallen back, invalid, unsupported — in different orders. Every
 * answer must equal what a single thread got from a separate registry, and
 * a thread asking twice must get the very same candidate and name pointers.
 * Whole-model plans from many threads agree with a single thread's too.
 * Build with ATTNREG_SANITIZE=thread to have TSan watch this test.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "attnreg.h"
#include "support/test_support.h"

#define NTHREADS 8
#define ITERATIONS 4000
#define MAX_SHAPES 32

typedef struct answer {
    attn_status status;
    char backend[64];
    attn_shape effective;
    int32_t fallback_applied;
} answer;

typedef struct shared {
    attn_registry *reg;
    const attn_shape *shapes;
    const answer *expect;
    size_t nshapes;
    pthread_barrier_t start;
} shared;

typedef struct worker {
    shared *sh;
    int id;
    long mismatches;
    char first_mismatch[512];
    const attn_candidate *candidate[MAX_SHAPES];
    const char *name_ptr[MAX_SHAPES];
    int seen[MAX_SHAPES];
} worker;

static void record(answer *a, attn_status st, const attn_selection *sel)
{
    memset(a, 0, sizeof *a);
    a->status = st;
    snprintf(a->backend, sizeof a->backend, "%s", sel->backend_name ? sel->backend_name : "-");
    if (st == ATTN_OK)
        a->effective = sel->effective_shape;
    a->fallback_applied = sel->fallback_applied;
}

static int same_answer(const answer *a, const answer *b)
{
    return a->status == b->status && strcmp(a->backend, b->backend) == 0 &&
           a->fallback_applied == b->fallback_applied &&
           memcmp(&a->effective, &b->effective, sizeof a->effective) == 0;
}

static void mismatch(worker *w, size_t k, const char *what, const answer *got)
{
    if (w->mismatches++ == 0)
        snprintf(w->first_mismatch, sizeof w->first_mismatch,
                 "thread %d, shape %zu: %s (got %s/%s, expected %s/%s)", w->id, k, what,
                 attn_status_name(got->status), got->backend,
                 attn_status_name(w->sh->expect[k].status), w->sh->expect[k].backend);
}

static void *run_worker(void *arg)
{
    worker *w = arg;
    shared *sh = w->sh;
    long i;
    pthread_barrier_wait(&sh->start);
    for (i = 0; i < ITERATIONS; i++) {
        /* Each thread walks the shapes in its own order and stride. */
        size_t k = (size_t)(i * (2 * w->id + 1) + w->id) % sh->nshapes;
        attn_selection sel;
        answer got;
        attn_status st;
        attn_selection_init(&sel);
        st = attn_registry_select(sh->reg, &sh->shapes[k], &sel);
        record(&got, st, &sel);
        if (!same_answer(&got, &sh->expect[k]))
            mismatch(w, k, "select differs", &got);
        if (!w->seen[k]) {
            w->seen[k] = 1;
            w->candidate[k] = sel.candidate;
            w->name_ptr[k] = sel.backend_name;
        } else if (w->candidate[k] != sel.candidate || w->name_ptr[k] != sel.backend_name) {
            mismatch(w, k, "repeated select returned other pointers", &got);
        }
        /* Explain now and then, concurrently with the selects. */
        if (i % 64 == w->id) {
            attn_explanation *ex = NULL;
            attn_status est = attn_registry_explain(sh->reg, &sh->shapes[k], &ex);
            if (!ex) {
                mismatch(w, k, "explain gave no explanation", &got);
            } else {
                attn_selection es;
                answer eg;
                attn_selection_init(&es);
                attn_explanation_selection(ex, &es);
                record(&eg, est, &es);
                if (!same_answer(&eg, &sh->expect[k]))
                    mismatch(w, k, "explain differs from select", &eg);
                attn_explanation_free(ex);
            }
        }
    }
    return NULL;
}

static attn_registry *open_on(const char *dir)
{
    const char *dirs[1];
    attn_registry_options opt;
    attn_registry *reg = NULL;
    dirs[0] = dir;
    ts_options(&opt, dirs, 1);
    /* Quiet: only the once-per-shape warnings are interesting, and the
     * capture is bounded anyway. */
    opt.log_level = ATTN_LOG_WARN;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    return reg;
}

/* Single-threaded reference on one registry, then NTHREADS on a cold one. */
static void check_concurrent(const char *dir, const attn_shape *shapes, size_t nshapes)
{
    answer expect[MAX_SHAPES];
    worker workers[NTHREADS];
    pthread_t threads[NTHREADS];
    shared sh;
    attn_registry *ref;
    size_t k;
    int t;
    int ok_count = 0, fail_count = 0;

    ck_assert_uint_le(nshapes, MAX_SHAPES);
    ref = open_on(dir);
    for (k = 0; k < nshapes; k++) {
        attn_selection sel;
        attn_status st;
        attn_selection_init(&sel);
        st = attn_registry_select(ref, &shapes[k], &sel);
        record(&expect[k], st, &sel);
        if (st == ATTN_OK)
            ok_count++;
        else
            fail_count++;
    }
    attn_registry_close(ref);
    /* The mix must really be a mix, or the test proves little. */
    ck_assert_int_ge(ok_count, 2);
    ck_assert_int_ge(fail_count, 1);
    /* The reference registry logged its own warnings; count only the
     * threaded registry's. */
    ts_log_clear();

    memset(&sh, 0, sizeof sh);
    sh.reg = open_on(dir);
    sh.shapes = shapes;
    sh.expect = expect;
    sh.nshapes = nshapes;
    ck_assert_int_eq(pthread_barrier_init(&sh.start, NULL, NTHREADS), 0);
    memset(workers, 0, sizeof workers);
    for (t = 0; t < NTHREADS; t++) {
        workers[t].sh = &sh;
        workers[t].id = t;
        ck_assert_int_eq(pthread_create(&threads[t], NULL, run_worker, &workers[t]), 0);
    }
    for (t = 0; t < NTHREADS; t++)
        ck_assert_int_eq(pthread_join(threads[t], NULL), 0);
    pthread_barrier_destroy(&sh.start);

    for (t = 0; t < NTHREADS; t++)
        ck_assert_msg(workers[t].mismatches == 0, "%ld mismatches; first: %s",
                      workers[t].mismatches, workers[t].first_mismatch);
    /* Across threads: one candidate object per decision. */
    for (k = 0; k < nshapes; k++)
        for (t = 1; t < NTHREADS; t++)
            if (workers[0].seen[k] && workers[t].seen[k])
                ck_assert_msg(workers[t].candidate[k] == workers[0].candidate[k],
                              "shape %zu: threads 0 and %d got different candidates", k, t);
    /* Racing misses must not multiply the once-per-shape warning. */
    {
        size_t fallbacks = 0;
        for (k = 0; k < nshapes; k++)
            fallbacks += expect[k].fallback_applied ? 1 : 0;
        ck_assert_msg(ts_log_count(ATTN_LOG_WARN, NULL) == (int)fallbacks,
                      "%d warnings for %zu fallback shapes:%s", ts_log_count(ATTN_LOG_WARN, NULL),
                      fallbacks, ts_log_dump());
    }
    attn_registry_close(sh.reg);
}

START_TEST(concurrent_selects_on_fakes)
{
    const char *dir = ts_dir();
    attn_shape shapes[12];
    size_t n = 0;
    ts_write_plugin_ini(dir, "gamma.ini", "fake-gamma", ts_fake("gamma"), 30, "fake",
                        "[params]\nmax_head_dim = 64\n");
    ts_write_plugin_ini(dir, "good.ini", "fake-good", ts_fake("good"), 20, "fake",
                        "[params]\nfp8_mha_only = 1\nmax_head_dim = 128\n");
    ts_write_plugin_ini(dir, "alpha.ini", "fake-alpha", ts_fake("alpha"), 10, "fake",
                        "[params]\nreject_sinks = 1\nfp8_mha_only = 1\n");
    ts_write_fp8_fallback_ini(dir);

    ts_fake_shape(&shapes[n]); /* head_dim 128 -> fake-good */
    n++;
    ts_fake_shape(&shapes[n]); /* head_dim 64 -> fake-gamma */
    shapes[n++].head_dim = 64;
    ts_fake_shape(&shapes[n]); /* head_dim 256 -> fake-alpha */
    shapes[n++].head_dim = 256;
    ts_fake_shape(&shapes[n]); /* 256 with sinks -> unsupported */
    shapes[n].head_dim = 256;
    shapes[n++].has_sinks = 1;
    ts_fake_shape(&shapes[n]); /* invalid */
    shapes[n].num_q_heads = 32;
    shapes[n++].num_kv_heads = 5;
    ts_fake_shape(&shapes[n]); /* fp8 GQA -> fallback to bf16 */
    shapes[n].num_q_heads = 32;
    shapes[n].num_kv_heads = 8;
    shapes[n++].compute_dtype = ATTN_DTYPE_FP8_E4M3FN;
    ts_fake_shape(&shapes[n]); /* fp8 GQA D 256 -> fallback, alpha */
    shapes[n].num_q_heads = 16;
    shapes[n].num_kv_heads = 4;
    shapes[n].head_dim = 256;
    shapes[n++].compute_dtype = ATTN_DTYPE_FP8_E4M3FN;
    ts_fake_shape(&shapes[n]); /* other arch -> unsupported */
    ts_set_arch(&shapes[n++], "gfx950");
    ts_fake_shape(&shapes[n]); /* GQA bf16 -> fake-good */
    shapes[n].num_q_heads = 64;
    shapes[n++].num_kv_heads = 8;
    check_concurrent(dir, shapes, n);
}
END_TEST

START_TEST(concurrent_selects_on_shipped_conf)
{
    attn_shape shapes[12];
    size_t n = 0;
    ts_mtp_shape(&shapes[n++]); /* aiter-mtp-gfx950 */
    ts_mtp_shape(&shapes[n]);   /* q len 1 -> aiter-generic */
    shapes[n++].max_q_len = 1;
    ts_mtp_shape(&shapes[n]); /* q len 3 -> MTP */
    shapes[n++].max_q_len = 3;
    ts_fp8_gqa_gfx942_shape(&shapes[n++]); /* fallback to bf16 */
    ts_fp8_gqa_gfx942_shape(&shapes[n]);   /* MHA fp8 */
    shapes[n++].num_kv_heads = 32;
    ts_fp8_gqa_gfx942_shape(&shapes[n]); /* invalid */
    shapes[n++].num_kv_heads = 5;
    attn_shape_init(&shapes[n++]); /* cpu-ref */
    attn_shape_init(&shapes[n]);   /* cpu GQA */
    shapes[n].num_q_heads = 32;
    shapes[n].num_kv_heads = 8;
    shapes[n++].max_kv_len = 2048;
    attn_shape_init(&shapes[n]); /* nobody serves this arch */
    ts_set_arch(&shapes[n++], "no-such-arch");
    check_concurrent(ATTNREG_TEST_CONF_DIR, shapes, n);
}
END_TEST

/* Plans from many threads at once on a cold registry: each thread's plan of
 * the Qwen3.5 shape (TP 1 and 2 alternating) names the same backends as a
 * single thread's on a separate registry. */
#define PLAN_ROUNDS 40

typedef struct plan_worker {
    attn_registry *reg;
    pthread_barrier_t *start;
    int id;
    long mismatches;
} plan_worker;

/* "b0,b1,...": the backend of every entry, in order. */
static void plan_signature(attn_registry *reg, int32_t tp, char *out, size_t size)
{
    attn_layer layers[60];
    attn_model m;
    attn_plan *plan = NULL;
    ts_qwen35_model(&m, layers, tp);
    size_t used =
        (size_t)snprintf(out, size, "%s:", attn_status_name(attn_registry_plan(reg, &m, &plan)));
    attn_plan_summary sum = {.struct_size = sizeof sum};
    if (plan && attn_plan_summarize(plan, &sum) == ATTN_OK) {
        for (size_t i = 0; i < sum.num_entries && used < size; i++) {
            attn_plan_entry e = {.struct_size = sizeof e};
            attn_plan_entry_get(plan, i, &e);
            used += (size_t)snprintf(
                out + used, size - used, "%s,",
                e.selection && e.selection->backend_name ? e.selection->backend_name : "-");
        }
    }
    attn_plan_free(plan);
}

static char plan_expect[3][512];

static void *run_plan_worker(void *arg)
{
    plan_worker *w = arg;
    pthread_barrier_wait(w->start);
    for (int r = 0; r < PLAN_ROUNDS; r++) {
        int32_t tp = (r + w->id) % 2 ? 2 : 1;
        char got[512];
        plan_signature(w->reg, tp, got, sizeof got);
        if (strcmp(got, plan_expect[tp]) != 0)
            w->mismatches++;
    }
    return NULL;
}

START_TEST(concurrent_plans_on_shipped_conf)
{
    attn_registry *ref = open_on(ATTNREG_TEST_CONF_DIR);
    plan_signature(ref, 1, plan_expect[1], sizeof plan_expect[1]);
    plan_signature(ref, 2, plan_expect[2], sizeof plan_expect[2]);
    attn_registry_close(ref);
    ck_assert_ptr_nonnull(strstr(plan_expect[1], "ATTN_OK:"));
    ck_assert_ptr_nonnull(strstr(plan_expect[2], "aiter-mtp-gfx950"));

    attn_registry *reg = open_on(ATTNREG_TEST_CONF_DIR);
    pthread_barrier_t start;
    ck_assert_int_eq(pthread_barrier_init(&start, NULL, NTHREADS), 0);
    plan_worker workers[NTHREADS];
    pthread_t threads[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        workers[t] = (plan_worker){reg, &start, t, 0};
        ck_assert_int_eq(pthread_create(&threads[t], NULL, run_plan_worker, &workers[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++)
        ck_assert_int_eq(pthread_join(threads[t], NULL), 0);
    pthread_barrier_destroy(&start);
    for (int t = 0; t < NTHREADS; t++)
        ck_assert_msg(workers[t].mismatches == 0, "thread %d: %ld plans differ", t,
                      workers[t].mismatches);
    attn_registry_close(reg);
}
END_TEST

/* The cache is bounded (65536 shapes): a host that passes a fresh
 * max_kv_len on every call must not grow it forever. Past the bound the
 * answers stay right, repeated asks agree, and the bound is logged once. */
START_TEST(cache_bound_keeps_answers_right)
{
    enum { BOUND = 65536, EXTRA = 50 };
    const char *dirs[1] = {ATTNREG_TEST_CONF_DIR};
    attn_registry_options opt;
    attn_registry *reg = NULL;
    ts_options(&opt, dirs, 1);
    opt.log_level = ATTN_LOG_WARN; /* debug lines for 65k decisions would swamp the log */
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    ts_log_clear();
    attn_shape shape;
    ts_mtp_shape(&shape);
    for (int i = 0; i < BOUND + EXTRA; i++) {
        attn_selection sel;
        attn_selection_init(&sel);
        /* Alternate q len 4 (MTP) and 1 (generic) so the answer depends on
         * the shape, not on what was cached last. */
        shape.max_q_len = i % 2 ? 1 : 4;
        shape.max_kv_len = 1024 + i;
        ck_assert_int_eq(attn_registry_select(reg, &shape, &sel), ATTN_OK);
        ck_assert_str_eq(sel.backend_name, i % 2 ? "aiter-generic" : "aiter-mtp-gfx950");
        ck_assert_int_eq(sel.effective_shape.max_kv_len, 1024 + i);
    }
    /* A shape past the bound asked twice: same answer both times. */
    attn_selection a, b;
    attn_selection_init(&a);
    attn_selection_init(&b);
    shape.max_q_len = 4;
    shape.max_kv_len = 1024 + BOUND + EXTRA + 7;
    ck_assert_int_eq(attn_registry_select(reg, &shape, &a), ATTN_OK);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &b), ATTN_OK);
    ck_assert_str_eq(a.backend_name, "aiter-mtp-gfx950");
    ck_assert_str_eq(b.backend_name, "aiter-mtp-gfx950");
    /* An invalid shape past the bound still carries its message. */
    shape.num_kv_heads = 5;
    ck_assert_int_eq(attn_registry_select(reg, &shape, &a), ATTN_ERR_INVALID_SHAPE);
    ck_assert_ptr_nonnull(strstr(a.message, "multiple of num_kv_heads (5)"));
    ck_assert_int_eq(ts_log_count(ATTN_LOG_WARN, "decision cache full", NULL), 1);
    attn_registry_close(reg);
}
END_TEST

static Suite *cache_suite(void)
{
    Suite *s = suite_create("cache_threads");
    TCase *tc = tcase_create("threads");
    ts_add_fixtures(tc, 120);
    tcase_add_test(tc, concurrent_selects_on_fakes);
    tcase_add_test(tc, concurrent_selects_on_shipped_conf);
    tcase_add_test(tc, concurrent_plans_on_shipped_conf);
    tcase_add_test(tc, cache_bound_keeps_answers_right);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ts_run(cache_suite());
}
