/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_select.c — selection: order, validation first, forced and disabled
 * backends, runnable mode, fallback, logging, explain; first on fake
 * plugins (hermetic, every rule in isolation), then on the shipped plugins
 * and conf (the cases the acceptance list names).
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attnreg.h"
#include "support/test_support.h"

/* ---- helpers -------------------------------------------------------- */

/* "fake-<variant>" plugin from libfake_<variant>.so, in the test's folder. */
static void fake_ini(const char *variant, int priority, const char *archs, const char *extra)
{
    char name[64], file[64];
    snprintf(name, sizeof name, "fake-%s", variant);
    snprintf(file, sizeof file, "%s.ini", variant);
    for (char *p = name; *p; p++)
        if (*p == '_')
            *p = '-';
    ts_write_plugin_ini(ts_dir(), file, name, ts_fake(variant), priority, archs, extra);
}

static attn_registry *open_with(attn_registry_options *opt)
{
    attn_registry *reg = NULL;
    attn_status st = attn_registry_open(opt, &reg);
    ck_assert_msg(st == ATTN_OK, "open: %s: %s", attn_status_name(st), attn_last_error());
    return reg;
}

static attn_status select_shape(attn_registry *reg, const attn_shape *s, attn_selection *sel)
{
    attn_selection_init(sel);
    return attn_registry_select(reg, s, sel);
}

/* Select, assert success and the backend. */
static void expect_backend(attn_registry *reg, const attn_shape *s, const char *backend)
{
    attn_selection sel;
    attn_status st = select_shape(reg, s, &sel);
    ck_assert_msg(st == ATTN_OK, "select: %s: %s", attn_status_name(st), sel.message);
    ck_assert_str_eq(sel.backend_name, backend);
}

static int contains_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; hay && *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return 1;
    return 0;
}

/* Same shape, reading "0 = same as" fields resolved: the registry may hand
 * back an effective shape with num_kv_heads/head_dim_v spelled out. */
static void assert_same_shape(const attn_shape *got, const attn_shape *want)
{
#define SAME(f)                                                                                    \
    ck_assert_msg(got->f == want->f, #f ": %g, expected %g", (double)got->f, (double)want->f)
    ck_assert_msg(strncmp(got->arch, want->arch, sizeof got->arch) == 0, "arch %.32s", got->arch);
    SAME(num_q_heads);
    ck_assert_int_eq(got->num_kv_heads ? got->num_kv_heads : got->num_q_heads,
                     want->num_kv_heads ? want->num_kv_heads : want->num_q_heads);
    SAME(head_dim);
    ck_assert_int_eq(got->head_dim_v ? got->head_dim_v : got->head_dim,
                     want->head_dim_v ? want->head_dim_v : want->head_dim);
    SAME(q_dtype);
    SAME(kv_dtype);
    SAME(compute_dtype);
    SAME(out_dtype);
    SAME(page_size);
    SAME(max_q_len);
    SAME(max_kv_len);
    SAME(causal);
    SAME(window_left);
    SAME(window_right);
    SAME(softcap);
    SAME(has_sinks);
#undef SAME
}

static const char *const *dir_list(void)
{
    static const char *dirs[1];
    dirs[0] = ts_dir();
    return dirs;
}

/* ---- order ---------------------------------------------------------- */

START_TEST(priority_then_name_order)
{
    /* Written in an order that matches neither priority nor name. */
    attn_registry *reg;
    attn_explanation *ex = NULL;
    attn_shape shape;
    const char *expect[] = {"fake-gamma", "fake-alpha", "fake-beta", "fake-delta"};
    size_t i;
    fake_ini("delta", 5, "fake", NULL);
    fake_ini("beta", 10, "fake", NULL);
    fake_ini("gamma", 20, "fake", NULL);
    fake_ini("alpha", 10, "fake", NULL);
    reg = ts_open_dir(ts_dir());

    ck_assert_uint_eq(attn_registry_plugin_count(reg), 4);
    for (i = 0; i < 4; i++) {
        attn_plugin_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        ck_assert_int_eq(attn_registry_plugin(reg, i, &info), ATTN_OK);
        ck_assert_str_eq(info.name, expect[i]);
    }

    ts_fake_shape(&shape);
    expect_backend(reg, &shape, "fake-gamma");

    /* Explain shows every candidate, in the same order, also those after the
     * winner; only the winner is "selected". */
    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_OK);
    ck_assert_uint_eq(attn_explanation_count(ex), 4);
    ck_assert_uint_eq(attn_explanation_pass_count(ex), 1);
    ck_assert_ptr_null(attn_explanation_pass_rule(ex, 0));
    for (i = 0; i < 4; i++) {
        attn_verdict_record r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        ck_assert_int_eq(attn_explanation_record(ex, i, &r), ATTN_OK);
        ck_assert_str_eq(r.backend, expect[i]);
        ck_assert_int_eq(r.pass, 0);
        ck_assert_int_eq(r.accepted, 1);
        ck_assert_int_eq(r.selected, i == 0);
        ck_assert_int_eq(r.reason, ATTN_REASON_NONE);
        ck_assert_str_eq(r.reason_name, "NONE");
    }
    attn_explanation_free(ex);

    /* Take the winner away: the tie at 10 goes to the smaller name. */
    {
        const char *off[] = {"fake-gamma"};
        attn_registry_options opt;
        attn_registry *reg2;
        ts_options(&opt, dir_list(), 1);
        opt.disabled_backends = off;
        opt.num_disabled_backends = 1;
        reg2 = open_with(&opt);
        expect_backend(reg2, &shape, "fake-alpha");
        attn_registry_close(reg2);
    }
    attn_registry_close(reg);
}
END_TEST

START_TEST(first_accepting_wins)
{
    attn_registry *reg;
    attn_shape shape;
    attn_verdict_record r;
    fake_ini("rejects", 20, "fake", NULL);
    fake_ini("good", 10, "fake", NULL);
    fake_ini("alpha", 5, "fake", NULL);
    reg = ts_open_dir(ts_dir());
    ts_fake_shape(&shape);
    expect_backend(reg, &shape, "fake-good");
    r = ts_record_for(reg, &shape, "fake-rejects");
    ck_assert_int_eq(r.accepted, 0);
    ck_assert_int_eq(r.reason, ATTN_REASON_HEAD_DIM);
    r = ts_record_for(reg, &shape, "fake-alpha");
    ck_assert_int_eq(r.accepted, 1);
    ck_assert_int_eq(r.selected, 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(invalid_shape_before_any_plugin)
{
    attn_registry *reg;
    attn_selection sel;
    attn_explanation *ex = NULL;
    attn_shape shape;
    fake_ini("good", 10, "fake", NULL);
    reg = ts_open_dir(ts_dir());
    ts_fake_shape(&shape);
    shape.num_q_heads = 32;
    shape.num_kv_heads = 5;
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_INVALID_SHAPE);
    ck_assert_ptr_null(sel.backend_name);
    ck_assert_str_eq(sel.message, "requires num_heads (32) to be a multiple of num_kv_heads (5)");
    ck_assert_msg(!ts_is_loaded(ts_fake("good")), "a plugin was consulted for an invalid shape");

    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_ERR_INVALID_SHAPE);
    ck_assert_ptr_nonnull(ex);
    ck_assert_int_eq(attn_explanation_status(ex), ATTN_ERR_INVALID_SHAPE);
    ck_assert_uint_eq(attn_explanation_count(ex), 0);
    /* The decision as select gives it, status included. */
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_explanation_selection(ex, &sel), ATTN_ERR_INVALID_SHAPE);
    ck_assert_ptr_null(sel.backend_name);
    ck_assert_str_eq(sel.message, "requires num_heads (32) to be a multiple of num_kv_heads (5)");
    attn_explanation_free(ex);
    ck_assert(!ts_is_loaded(ts_fake("good")));
    attn_registry_close(reg);
}
END_TEST

START_TEST(unsupported_lists_every_reason)
{
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    fake_ini("alpha", 20, "fake", "[params]\nreject_reason = 19\nreject_message = alpha says no\n");
    fake_ini("beta", 10, "fake", "[params]\nreject_reason = 16\nreject_message = beta says no\n");
    fake_ini("gamma", 5, "gfx942", NULL);
    reg = ts_open_dir(ts_dir());
    ts_fake_shape(&shape);
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_UNSUPPORTED);
    ck_assert_ptr_null(sel.backend_name);
    ck_assert_msg(strstr(sel.message, "fake-alpha") && strstr(sel.message, "alpha says no"), "%s",
                  sel.message);
    ck_assert_msg(strstr(sel.message, "fake-beta") && strstr(sel.message, "beta says no"), "%s",
                  sel.message);
    ck_assert_msg(strstr(sel.message, "fake-gamma"), "%s", sel.message);
    attn_registry_close(reg);
}
END_TEST

START_TEST(empty_registry_is_unsupported)
{
    attn_registry *reg = ts_open_dir(ts_dir());
    attn_selection sel;
    attn_shape shape;
    ts_fake_shape(&shape);
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_UNSUPPORTED);
    ck_assert_ptr_null(sel.backend_name);
    ck_assert_ptr_nonnull(sel.message);
    attn_registry_close(reg);
}
END_TEST

START_TEST(null_arguments)
{
    attn_registry *reg = ts_open_dir(ts_dir());
    attn_selection sel;
    attn_shape shape;
    attn_explanation *ex = NULL;
    ts_fake_shape(&shape);
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, NULL, &sel), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_registry_select(reg, &shape, NULL), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_registry_explain(reg, NULL, &ex), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_registry_explain(reg, &shape, NULL), ATTN_ERR_INVALID_ARGUMENT);
    /* A shape that does not even carry its size cannot be read. */
    shape.struct_size = 0;
    ck_assert_int_ne(select_shape(reg, &shape, &sel), ATTN_OK);
    ck_assert_ptr_null(sel.backend_name);
    attn_registry_close(reg);
    attn_registry_close(NULL); /* harmless */
}
END_TEST

/* ---- forced --------------------------------------------------------- */

START_TEST(forced_backend_rejecting_is_an_error)
{
    attn_registry_options opt;
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    fake_ini("rejects", 20, "fake", NULL);
    fake_ini("good", 10, "fake", NULL);
    ts_options(&opt, dir_list(), 1);
    opt.forced_backend = "fake-rejects";
    reg = open_with(&opt);
    ts_fake_shape(&shape);
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_BACKEND_REJECTED);
    /* No substitution, and the reason is named. */
    ck_assert_ptr_null(sel.backend_name);
    ck_assert_msg(strstr(sel.message, "fake-rejects") != NULL, "%s", sel.message);
    ck_assert_msg(strstr(sel.message, "head_dim is not supported by fake-rejects") != NULL ||
                      strstr(sel.message, "HEAD_DIM") != NULL,
                  "reason not named: %s", sel.message);
    attn_registry_close(reg);
}
END_TEST

START_TEST(forced_backend_skips_higher_priority)
{
    attn_registry_options opt;
    attn_registry *reg;
    attn_shape shape;
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    fake_ini("gamma", 20, "fake", NULL);
    fake_ini("good", 10, "fake", NULL);
    ts_options(&opt, dir_list(), 1);
    opt.forced_backend = "fake-good";
    reg = open_with(&opt);
    ts_fake_shape(&shape);
    expect_backend(reg, &shape, "fake-good");
    /* Only the forced candidate is tried. */
    ck_assert(!ts_is_loaded(ts_fake("gamma")));
    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_OK);
    ck_assert(ts_find_record(ex, 0, "fake-good", &r));
    ck_assert_int_eq(r.selected, 1);
    attn_explanation_free(ex);
    attn_registry_close(reg);
}
END_TEST

START_TEST(forced_backend_from_env)
{
    attn_registry_options opt;
    attn_registry *reg;
    attn_shape shape;
    fake_ini("gamma", 20, "fake", NULL);
    fake_ini("good", 10, "fake", NULL);
    ck_assert_int_eq(setenv("ATTNREG_BACKEND", "fake-good", 1), 0);
    ts_fake_shape(&shape);

    ts_options(&opt, dir_list(), 1);
    opt.skip_env = 0;
    reg = open_with(&opt);
    expect_backend(reg, &shape, "fake-good");
    attn_registry_close(reg);

    /* skip_env: the variable is ignored. */
    ts_options(&opt, dir_list(), 1);
    reg = open_with(&opt);
    expect_backend(reg, &shape, "fake-gamma");
    attn_registry_close(reg);

    /* The option wins over the variable. */
    ts_options(&opt, dir_list(), 1);
    opt.skip_env = 0;
    opt.forced_backend = "fake-gamma";
    reg = open_with(&opt);
    expect_backend(reg, &shape, "fake-gamma");
    attn_registry_close(reg);
}
END_TEST

START_TEST(forced_unknown_backend_not_found)
{
    /* Either open refuses the unknown name or select does; never a silent
     * ordinary selection. */
    attn_registry_options opt;
    attn_registry *reg = NULL;
    attn_selection sel;
    attn_shape shape;
    attn_status st;
    fake_ini("good", 10, "fake", NULL);
    ts_options(&opt, dir_list(), 1);
    opt.forced_backend = "no-such-backend";
    st = attn_registry_open(&opt, &reg);
    if (st == ATTN_OK) {
        ts_fake_shape(&shape);
        ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_NOT_FOUND);
        ck_assert_ptr_null(sel.backend_name);
        ck_assert_msg(strstr(sel.message, "no-such-backend") != NULL, "%s", sel.message);
        attn_registry_close(reg);
    } else {
        ck_assert_int_eq(st, ATTN_ERR_NOT_FOUND);
        ck_assert_msg(strstr(attn_last_error(), "no-such-backend") != NULL, "%s",
                      attn_last_error());
    }
}
END_TEST

START_TEST(forced_backend_gets_no_fallback)
{
    attn_registry_options opt;
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    fake_ini("good", 10, "fake", "[params]\nfp8_mha_only = 1\n");
    ts_write_fp8_fallback_ini(ts_dir());
    ts_options(&opt, dir_list(), 1);
    opt.forced_backend = "fake-good";
    reg = open_with(&opt);
    ts_fake_shape(&shape);
    shape.num_q_heads = 32;
    shape.num_kv_heads = 8;
    shape.compute_dtype = ATTN_DTYPE_FP8_E4M3FN;
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_BACKEND_REJECTED);
    ck_assert_int_eq(sel.fallback_applied, 0);
    ck_assert_msg(contains_ci(sel.message, "MHA-only"), "%s", sel.message);
    attn_registry_close(reg);
}
END_TEST

/* ---- disabled ------------------------------------------------------- */

START_TEST(disabled_by_option)
{
    const char *off[] = {"fake-gamma"};
    attn_registry_options opt;
    attn_registry *reg;
    attn_shape shape;
    attn_verdict_record r;
    fake_ini("gamma", 20, "fake", NULL);
    fake_ini("alpha", 10, "fake", NULL);
    ts_options(&opt, dir_list(), 1);
    opt.disabled_backends = off;
    opt.num_disabled_backends = 1;
    reg = open_with(&opt);
    ts_fake_shape(&shape);
    expect_backend(reg, &shape, "fake-alpha");
    r = ts_record_for(reg, &shape, "fake-gamma");
    ck_assert_int_eq(r.accepted, 0);
    ck_assert_int_eq(r.reason, ATTN_REASON_DISABLED_BY_HOST);
    ck_assert(!ts_is_loaded(ts_fake("gamma")));
    attn_registry_close(reg);
}
END_TEST

START_TEST(disabled_by_env_and_option_merge)
{
    const char *off[] = {"fake-beta"};
    attn_registry_options opt;
    attn_registry *reg;
    attn_shape shape;
    fake_ini("gamma", 20, "fake", NULL);
    fake_ini("alpha", 15, "fake", NULL);
    fake_ini("beta", 10, "fake", NULL);
    fake_ini("delta", 5, "fake", NULL);
    ck_assert_int_eq(setenv("ATTNREG_DISABLE", "fake-gamma,fake-alpha", 1), 0);
    ts_fake_shape(&shape);

    ts_options(&opt, dir_list(), 1);
    opt.skip_env = 0;
    reg = open_with(&opt);
    expect_backend(reg, &shape, "fake-beta");
    ck_assert_int_eq(ts_record_for(reg, &shape, "fake-alpha").reason, ATTN_REASON_DISABLED_BY_HOST);
    attn_registry_close(reg);

    /* The option's list is added to the variable's. */
    ts_options(&opt, dir_list(), 1);
    opt.skip_env = 0;
    opt.disabled_backends = off;
    opt.num_disabled_backends = 1;
    reg = open_with(&opt);
    expect_backend(reg, &shape, "fake-delta");
    attn_registry_close(reg);

    /* skip_env ignores the variable. */
    ts_options(&opt, dir_list(), 1);
    reg = open_with(&opt);
    expect_backend(reg, &shape, "fake-gamma");
    attn_registry_close(reg);
}
END_TEST

START_TEST(arch_not_listed_decided_in_conf)
{
    attn_registry *reg;
    attn_shape shape;
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    fake_ini("gamma", 20, "gfx950, gfx942", NULL);
    fake_ini("good", 10, "fake", NULL);
    reg = ts_open_dir(ts_dir());
    ts_fake_shape(&shape);
    expect_backend(reg, &shape, "fake-good");
    ck_assert(!ts_is_loaded(ts_fake("gamma")));
    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_OK);
    ck_assert(ts_find_record(ex, 0, "fake-gamma", &r));
    ck_assert_int_eq(r.reason, ATTN_REASON_ARCH_NOT_LISTED);
    ck_assert_str_eq(r.predicate, "conf");
    ck_assert_msg(ts_ends_with(r.conf_file, "/gamma.ini"), "conf_file %s", r.conf_file);
    ck_assert_int_eq(r.conf_line, TS_LINE_ARCHS);
    ck_assert_int_eq(r.priority, 20);
    ck_assert(!ts_is_loaded(ts_fake("gamma")));
    attn_explanation_free(ex);
    attn_registry_close(reg);
}
END_TEST

/* ---- runnable mode -------------------------------------------------- */

START_TEST(runnable_mode_checks_binary_and_device)
{
    static const struct {
        const char *variant, *name;
        attn_reason reason;
    } cases[] = {
        {"no_kernels", "fake-no-kernels", ATTN_REASON_ARCH_NOT_IN_BINARY},
        {"other_binary", "fake-other-binary", ATTN_REASON_ARCH_NOT_IN_BINARY},
        {"no_device", "fake-no-device", ATTN_REASON_NO_DEVICE},
    };
    size_t i;
    attn_shape shape;
    ts_fake_shape(&shape);
    for (i = 0; i < 3; i++) {
        attn_registry_options opt;
        attn_registry *reg;
        attn_verdict_record r;
        const char *sub = ts_subdir(cases[i].variant);
        const char *dirs[1];
        dirs[0] = sub;
        ts_write_plugin_ini(sub, "top.ini", cases[i].name, ts_fake(cases[i].variant), 20, "fake",
                            NULL);
        ts_write_plugin_ini(sub, "good.ini", "fake-good", ts_fake("good"), 10, "fake", NULL);

        /* Planning: the arch is only a name; the top candidate wins. */
        ts_options(&opt, dirs, 1);
        reg = open_with(&opt);
        expect_backend(reg, &shape, cases[i].name);
        attn_registry_close(reg);

        /* Runnable: the top candidate cannot run here; the next one does. */
        ts_options(&opt, dirs, 1);
        opt.runnable = 1;
        reg = open_with(&opt);
        expect_backend(reg, &shape, "fake-good");
        r = ts_record_for(reg, &shape, cases[i].name);
        ck_assert_int_eq(r.accepted, 0);
        ck_assert_msg(r.reason == (int32_t)cases[i].reason, "%s: %s", cases[i].name,
                      attn_reason_name(r.reason));
        attn_registry_close(reg);
    }
}
END_TEST

/* ---- fallback ------------------------------------------------------- */

static void fp8_gqa_fake_shape(attn_shape *s)
{
    ts_fake_shape(s);
    s->num_q_heads = 32;
    s->num_kv_heads = 8;
    s->kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
    s->compute_dtype = ATTN_DTYPE_FP8_E4M3FN;
    s->max_q_len = 16;
    s->max_kv_len = 512;
}

START_TEST(fallback_fp8_to_bf16)
{
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape, expect;
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    const attn_shape *ps;
    fake_ini("good", 10, "fake", "[params]\nfp8_mha_only = 1\n");
    ts_write_fp8_fallback_ini(ts_dir());
    reg = ts_open_dir(ts_dir());
    fp8_gqa_fake_shape(&shape);

    ck_assert_msg(select_shape(reg, &shape, &sel) == ATTN_OK, "%s", sel.message);
    ck_assert_str_eq(sel.backend_name, "fake-good");
    ck_assert_int_eq(sel.fallback_applied, 1);
    ck_assert_ptr_nonnull(sel.fallback_rule);
    ck_assert_msg(strstr(sel.fallback_rule, "compute_dtype") && strstr(sel.fallback_rule, "bf16"),
                  "rule \"%s\"", sel.fallback_rule);
    ck_assert_str_eq(sel.fallback_backend, "fake-good");
    ck_assert_int_eq(sel.fallback_reason, ATTN_REASON_FP8_COMPUTE_MHA_ONLY);
    ck_assert_msg(contains_ci(sel.fallback_message, "MHA-only"), "%s", sel.fallback_message);
    /* Only the rule's field changed. */
    expect = shape;
    expect.compute_dtype = ATTN_DTYPE_BF16;
    ck_assert_int_eq(sel.effective_shape.compute_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(sel.effective_shape.kv_dtype, ATTN_DTYPE_FP8_E4M3FN);
    assert_same_shape(&sel.effective_shape, &expect);

    /* Explain shows both passes. */
    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_OK);
    ck_assert_uint_eq(attn_explanation_pass_count(ex), 2);
    ck_assert_ptr_null(attn_explanation_pass_rule(ex, 0));
    ck_assert_ptr_nonnull(attn_explanation_pass_rule(ex, 1));
    ps = attn_explanation_pass_shape(ex, 0);
    ck_assert_int_eq(ps->compute_dtype, ATTN_DTYPE_FP8_E4M3FN);
    ps = attn_explanation_pass_shape(ex, 1);
    ck_assert_int_eq(ps->compute_dtype, ATTN_DTYPE_BF16);
    ck_assert(ts_find_record(ex, 0, "fake-good", &r));
    ck_assert_int_eq(r.accepted, 0);
    ck_assert_int_eq(r.reason, ATTN_REASON_FP8_COMPUTE_MHA_ONLY);
    ck_assert(ts_find_record(ex, 1, "fake-good", &r));
    ck_assert_int_eq(r.accepted, 1);
    ck_assert_int_eq(r.selected, 1);
    {
        attn_selection es;
        attn_selection_init(&es);
        ck_assert_int_eq(attn_explanation_selection(ex, &es), ATTN_OK);
        ck_assert_str_eq(es.backend_name, "fake-good");
        ck_assert_int_eq(es.fallback_applied, 1);
        ck_assert_int_eq(es.effective_shape.compute_dtype, ATTN_DTYPE_BF16);
    }
    attn_explanation_free(ex);
    attn_registry_close(reg);
}
END_TEST

START_TEST(fallback_refused_in_strict_mode)
{
    attn_registry_options opt;
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    attn_explanation *ex = NULL;
    fake_ini("good", 10, "fake", "[params]\nfp8_mha_only = 1\n");
    ts_write_fp8_fallback_ini(ts_dir());
    ts_options(&opt, dir_list(), 1);
    opt.strict = 1;
    reg = open_with(&opt);
    fp8_gqa_fake_shape(&shape);
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_UNSUPPORTED);
    ck_assert_ptr_null(sel.backend_name);
    ck_assert_int_eq(sel.fallback_applied, 0);
    ck_assert_msg(contains_ci(sel.message, "MHA-only"), "%s", sel.message);
    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_ERR_UNSUPPORTED);
    ck_assert_uint_eq(attn_explanation_pass_count(ex), 1);
    attn_explanation_free(ex);
    ck_assert_int_eq(ts_log_count(ATTN_LOG_WARN, "MHA-only", NULL), 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(no_fallback_when_not_needed)
{
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    fake_ini("good", 10, "fake", "[params]\nfp8_mha_only = 1\n");
    ts_write_fp8_fallback_ini(ts_dir());
    reg = ts_open_dir(ts_dir());
    fp8_gqa_fake_shape(&shape);
    shape.num_kv_heads = 32; /* MHA: the FP8 path takes it as asked */
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_OK);
    ck_assert_int_eq(sel.fallback_applied, 0);
    ck_assert_int_eq(sel.effective_shape.compute_dtype, ATTN_DTYPE_FP8_E4M3FN);
    assert_same_shape(&sel.effective_shape, &shape);
    ck_assert_int_eq(ts_log_count(ATTN_LOG_WARN, NULL), 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(fallback_rule_must_match)
{
    /* A rejection that no rule can cure stays unsupported: the fp8 rule does
     * not fire for a bf16 shape, and does not turn an unrelated rejection
     * into a fallback. */
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    fake_ini("good", 10, "fake", "[params]\nmax_head_dim = 128\n");
    ts_write_fp8_fallback_ini(ts_dir());
    reg = ts_open_dir(ts_dir());
    ts_fake_shape(&shape);
    shape.head_dim = 256;
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_UNSUPPORTED);
    ck_assert_int_eq(sel.fallback_applied, 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(fallback_motivation_skips_conf_layer)
{
    /* The highest-priority candidate here is not even listed for the arch;
     * the rejection that motivated the fallback is the FP8 one of the
     * candidate that actually looked at the shape (the gfx942 acceptance
     * case has the same layout: aiter-mtp-gfx950 is gfx950-only). */
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    fake_ini("gamma", 100, "gfx950", NULL);
    fake_ini("good", 10, "fake", "[params]\nfp8_mha_only = 1\n");
    ts_write_fp8_fallback_ini(ts_dir());
    reg = ts_open_dir(ts_dir());
    fp8_gqa_fake_shape(&shape);
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_OK);
    ck_assert_str_eq(sel.backend_name, "fake-good");
    ck_assert_int_eq(sel.fallback_applied, 1);
    ck_assert_str_eq(sel.fallback_backend, "fake-good");
    ck_assert_int_eq(sel.fallback_reason, ATTN_REASON_FP8_COMPUTE_MHA_ONLY);
    attn_registry_close(reg);
}
END_TEST

START_TEST(fallback_rules_in_file_order)
{
    /* Two rules match; the first in the file is applied first, and since
     * the plugin takes its result the second never runs. */
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    fake_ini("good", 10, "fake", "[params]\nfp8_mha_only = 1\n");
    ts_write(ts_dir(), "registry.ini",
             "[registry]\n"
             "format_version = 1.0\n"
             "[fallback:to-f16]\n"
             "field = compute_dtype\n"
             "from = fp8_e4m3fn\n"
             "to = f16\n"
             "[fallback:to-bf16]\n"
             "field = compute_dtype\n"
             "from = fp8_e4m3fn\n"
             "to = bf16\n");
    reg = ts_open_dir(ts_dir());
    ck_assert_uint_eq(attn_registry_diagnostic_count(reg), 0);
    fp8_gqa_fake_shape(&shape);
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_OK);
    ck_assert_int_eq(sel.fallback_applied, 1);
    ck_assert_int_eq(sel.effective_shape.compute_dtype, ATTN_DTYPE_F16);
    attn_registry_close(reg);
}
END_TEST

/* ---- logging -------------------------------------------------------- */

START_TEST(log_skipped_debug_selected_info)
{
    attn_registry *reg;
    attn_shape shape;
    fake_ini("gamma", 20, "fake",
             "[params]\nreject_reason = 19\nreject_message = gamma declines\n");
    fake_ini("good", 10, "fake", NULL);
    reg = ts_open_dir(ts_dir());
    ts_fake_shape(&shape);
    ts_log_clear();
    expect_backend(reg, &shape, "fake-good");
    ck_assert_msg(ts_log_count(ATTN_LOG_DEBUG, "fake-gamma", "gamma declines", NULL) >= 1,
                  "skipped candidate not logged at debug:%s", ts_log_dump());
    ck_assert_msg(ts_log_count(ATTN_LOG_INFO, "fake-good", NULL) >= 1,
                  "selection not logged at info:%s", ts_log_dump());
    /* Skips are not warnings: nothing is wrong. */
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN, NULL) == 0, "unexpected warning:%s", ts_log_dump());
    attn_registry_close(reg);
}
END_TEST

START_TEST(log_level_filters)
{
    attn_registry_options opt;
    attn_registry *reg;
    attn_shape shape;
    fake_ini("gamma", 20, "fake",
             "[params]\nreject_reason = 19\nreject_message = gamma declines\n");
    fake_ini("good", 10, "fake", NULL);
    ts_options(&opt, dir_list(), 1);
    opt.log_level = ATTN_LOG_WARN;
    reg = open_with(&opt);
    ts_fake_shape(&shape);
    expect_backend(reg, &shape, "fake-good");
    ck_assert_msg(ts_log_count(ATTN_LOG_DEBUG, NULL) == 0 && ts_log_count(ATTN_LOG_INFO, NULL) == 0,
                  "below-threshold messages delivered:%s", ts_log_dump());
    attn_registry_close(reg);
}
END_TEST

START_TEST(fallback_warning_once_per_shape)
{
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    int i;
    fake_ini("good", 10, "fake", "[params]\nfp8_mha_only = 1\n");
    ts_write_fp8_fallback_ini(ts_dir());
    reg = ts_open_dir(ts_dir());
    fp8_gqa_fake_shape(&shape);
    for (i = 0; i < 5; i++) {
        ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_OK);
        ck_assert_int_eq(sel.fallback_applied, 1);
    }
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN, NULL) == 1, "expected one warning:%s", ts_log_dump());
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN, "MHA-only", NULL) == 1,
                  "the warning does not give the reason:%s", ts_log_dump());

    /* Another shape that needs the fallback: its own warning, once. */
    shape.num_q_heads = 64;
    for (i = 0; i < 3; i++)
        ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_OK);
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN, NULL) == 2, "expected two warnings:%s",
                  ts_log_dump());
    attn_registry_close(reg);
}
END_TEST

START_TEST(log_level_from_env)
{
    attn_registry_options opt;
    attn_registry *reg;
    attn_shape shape;
    attn_selection sel;
    fake_ini("gamma", 20, "fake",
             "[params]\nreject_reason = 19\nreject_message = gamma declines\n");
    fake_ini("good", 10, "fake", "[params]\nfp8_mha_only = 1\n");
    ts_write_fp8_fallback_ini(ts_dir());
    ts_fake_shape(&shape);

    /* log_level -1: ATTNREG_LOG decides. */
    ck_assert_int_eq(setenv("ATTNREG_LOG", "debug", 1), 0);
    ts_options(&opt, dir_list(), 1);
    opt.skip_env = 0;
    opt.log_level = -1;
    reg = open_with(&opt);
    expect_backend(reg, &shape, "fake-good");
    ck_assert_msg(ts_log_count(ATTN_LOG_DEBUG, "fake-gamma", NULL) >= 1, "%s", ts_log_dump());
    attn_registry_close(reg);

    /* off: not even the fallback warning. */
    ts_log_clear();
    ck_assert_int_eq(setenv("ATTNREG_LOG", "off", 1), 0);
    reg = open_with(&opt);
    fp8_gqa_fake_shape(&shape);
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_OK);
    ck_assert_int_eq(sel.fallback_applied, 1);
    ck_assert_msg(ts_log_total() == 0, "logged with ATTNREG_LOG=off:%s", ts_log_dump());
    attn_registry_close(reg);

    /* skip_env with log_level -1: the default, warnings and up. */
    ts_log_clear();
    ck_assert_int_eq(setenv("ATTNREG_LOG", "debug", 1), 0);
    ts_options(&opt, dir_list(), 1);
    opt.log_level = -1;
    reg = open_with(&opt);
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_OK);
    ck_assert_int_eq(ts_log_count(ATTN_LOG_DEBUG, NULL), 0);
    ck_assert_int_eq(ts_log_count(ATTN_LOG_INFO, NULL), 0);
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN, NULL) == 1, "fallback warning missing:%s",
                  ts_log_dump());
    attn_registry_close(reg);
}
END_TEST

/* ---- cache ---------------------------------------------------------- */

START_TEST(repeated_select_same_answer)
{
    attn_registry *reg;
    attn_selection a, b;
    attn_shape shape;
    fake_ini("good", 10, "fake", "[params]\nmax_head_dim = 128\n");
    fake_ini("alpha", 5, "fake", NULL);
    reg = ts_open_dir(ts_dir());
    ts_fake_shape(&shape);
    ck_assert_int_eq(select_shape(reg, &shape, &a), ATTN_OK);
    ck_assert_int_eq(select_shape(reg, &shape, &b), ATTN_OK);
    ck_assert_ptr_eq(a.backend_name, b.backend_name);
    ck_assert_ptr_eq(a.candidate, b.candidate);
    ck_assert_mem_eq(&a.effective_shape, &b.effective_shape, sizeof a.effective_shape);

    /* Alternating shapes that differ in one field each get their own
     * answer: the cache key covers every field. */
    {
        static const int dims[] = {128, 256, 64, 256, 128};
        size_t i;
        for (i = 0; i < 5; i++) {
            shape.head_dim = dims[i];
            expect_backend(reg, &shape, dims[i] > 128 ? "fake-alpha" : "fake-good");
        }
    }
    /* The first selection's strings stay valid until close. */
    ck_assert_str_eq(a.backend_name, "fake-good");
    attn_registry_close(reg);
}
END_TEST

START_TEST(many_distinct_shapes_cached_correctly)
{
    /* Hundreds of shapes, so hash buckets are shared: an answer may only
     * come from an entry whose whole key matches, never from a neighbour.
     * The second sweep is served from the cache. */
    attn_registry *reg;
    int sweep, d;
    fake_ini("good", 10, "fake", "[params]\nmax_head_dim = 300\n");
    fake_ini("alpha", 5, "fake", NULL);
    reg = ts_open_dir(ts_dir());
    for (sweep = 0; sweep < 2; sweep++) {
        for (d = 1; d <= 600; d++) {
            attn_shape shape;
            attn_selection sel;
            ts_fake_shape(&shape);
            shape.head_dim = d;
            shape.max_kv_len = 1 + (d % 7); /* a second varying field */
            ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_OK);
            ck_assert_msg(strcmp(sel.backend_name, d > 300 ? "fake-alpha" : "fake-good") == 0,
                          "sweep %d head_dim %d: %s", sweep, d, sel.backend_name);
            ck_assert_int_eq(sel.effective_shape.head_dim, d);
            ck_assert_int_eq(sel.effective_shape.max_kv_len, 1 + (d % 7));
        }
    }
    attn_registry_close(reg);
}
END_TEST

START_TEST(arch_bytes_after_nul_ignored)
{
    /* Hosts fill arch with snprintf and leave stack garbage after the NUL;
     * the answer must depend on the string only. */
    attn_registry *reg;
    attn_shape shape;
    fake_ini("good", 10, "fake", NULL);
    reg = ts_open_dir(ts_dir());
    ts_fake_shape(&shape);
    expect_backend(reg, &shape, "fake-good");
    memset(shape.arch + 5, 'Z', sizeof shape.arch - 5);
    shape.arch[sizeof shape.arch - 1] = 'Z'; /* not even terminated at the end */
    shape.arch[4] = '\0';
    expect_backend(reg, &shape, "fake-good");
    attn_registry_close(reg);
}
END_TEST

START_TEST(shape_struct_size_rules)
{
    /* A newer host's longer shape selects like the same shape from a host
     * of this version; a shape shorter than the first layout is refused as
     * a bad argument, before any plugin. */
    attn_registry *reg;
    attn_selection sel;
    struct {
        attn_shape shape;
        int32_t future[4];
    } newer;
    attn_shape shape;
    fake_ini("good", 10, "fake", "[params]\nreject_sinks = 1\n");
    reg = ts_open_dir(ts_dir());
    ts_fake_shape(&newer.shape);
    newer.shape.struct_size = (uint32_t)sizeof newer;
    memset(newer.future, 0x7f, sizeof newer.future);
    ck_assert_msg(select_shape(reg, &newer.shape, &sel) == ATTN_OK, "%s", sel.message);
    ck_assert_str_eq(sel.backend_name, "fake-good");
    ck_assert_uint_eq(sel.effective_shape.struct_size, sizeof(attn_shape));

    ts_fake_shape(&shape);
    shape.struct_size = (uint32_t)offsetof(attn_shape, has_sinks);
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(sel.backend_name);
    attn_registry_close(reg);
}
END_TEST

/* ---- shipped plugins and conf ----------------------------------------- */

static attn_registry *open_shipped(int strict, int runnable)
{
    static const char *dirs[1] = {ATTNREG_TEST_CONF_DIR};
    attn_registry_options opt;
    ts_options(&opt, dirs, 1);
    opt.strict = strict;
    opt.runnable = runnable;
    return open_with(&opt);
}

/* attn_registry_list gives the same candidates, in the same priority order,
 * as the one-at-a-time accessor, and reports the full count when the
 * caller's array is smaller. */
START_TEST(list_matches_priority_order)
{
    attn_registry *reg = open_shipped(0, 0);
    attn_plugin_info infos[8];
    size_t count = 0;
    memset(infos, 0, sizeof infos);
    ck_assert_int_eq(attn_registry_list(reg, infos, 8, &count), ATTN_OK);
    ck_assert_uint_eq(count, 3);
    ck_assert_str_eq(infos[0].name, "aiter-mtp-gfx950");
    ck_assert_str_eq(infos[1].name, "aiter-generic");
    ck_assert_str_eq(infos[2].name, "cpu-ref");
    ck_assert_int_eq(infos[0].priority, 100);
    ck_assert(attn_plugin_info_has_arch(&infos[1], "gfx942"));
    ck_assert(!attn_plugin_info_has_arch(&infos[2], "gfx950"));
    attn_plugin_info one[1];
    memset(one, 0, sizeof one);
    count = 0;
    ck_assert_int_eq(attn_registry_list(reg, one, 1, &count), ATTN_OK);
    ck_assert_uint_eq(count, 3);
    ck_assert_str_eq(one[0].name, "aiter-mtp-gfx950");
    ck_assert_int_eq(attn_registry_list(reg, NULL, 4, &count), ATTN_ERR_INVALID_ARGUMENT);
    attn_registry_close(reg);
}
END_TEST

START_TEST(shipped_fp8_gqa_falls_back_to_bf16)
{
    attn_registry *reg = open_shipped(0, 0);
    attn_selection sel;
    attn_shape shape;
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    int i;
    ts_fp8_gqa_gfx942_shape(&shape);
    for (i = 0; i < 3; i++) {
        ck_assert_msg(select_shape(reg, &shape, &sel) == ATTN_OK, "%s", sel.message);
        ck_assert_str_eq(sel.backend_name, "aiter-generic");
        ck_assert_int_eq(sel.effective_shape.compute_dtype, ATTN_DTYPE_BF16);
        ck_assert_int_eq(sel.effective_shape.kv_dtype, ATTN_DTYPE_FP8_E4M3FNUZ);
        ck_assert_int_eq(sel.effective_shape.num_kv_heads, 8);
        ck_assert_int_eq(sel.fallback_applied, 1);
        ck_assert_str_eq(sel.fallback_backend, "aiter-generic");
        ck_assert_int_eq(sel.fallback_reason, ATTN_REASON_FP8_COMPUTE_MHA_ONLY);
        ck_assert_msg(contains_ci(sel.fallback_message, "MHA"), "fallback message \"%s\"",
                      sel.fallback_message);
        ck_assert_msg(strstr(sel.fallback_rule, "bf16") != NULL, "rule \"%s\"", sel.fallback_rule);
    }
    /* Logged once at warning level, with the reason. */
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN, NULL) == 1, "%s", ts_log_dump());
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN, "aiter-generic", NULL) == 1, "%s", ts_log_dump());

    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_OK);
    ck_assert(ts_find_record(ex, 0, "aiter-generic", &r));
    ck_assert_int_eq(r.reason, ATTN_REASON_FP8_COMPUTE_MHA_ONLY);
    ck_assert(ts_find_record(ex, 0, "aiter-mtp-gfx950", &r));
    ck_assert_int_eq(r.reason, ATTN_REASON_ARCH_NOT_LISTED);
    ck_assert(ts_find_record(ex, 0, "cpu-ref", &r));
    ck_assert_int_eq(r.reason, ATTN_REASON_ARCH_NOT_LISTED);
    ck_assert(ts_find_record(ex, 1, "aiter-generic", &r));
    ck_assert_int_eq(r.selected, 1);
    attn_explanation_free(ex);
    attn_registry_close(reg);
}
END_TEST

START_TEST(shipped_strict_refuses_fallback)
{
    attn_registry *reg = open_shipped(1, 0);
    attn_selection sel;
    attn_shape shape;
    ts_fp8_gqa_gfx942_shape(&shape);
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_UNSUPPORTED);
    ck_assert_ptr_null(sel.backend_name);
    ck_assert_msg(strstr(sel.message, "aiter-generic") && contains_ci(sel.message, "MHA"), "%s",
                  sel.message);
    attn_registry_close(reg);
}
END_TEST

START_TEST(shipped_fp8_mha_runs_fp8)
{
    attn_registry *reg = open_shipped(0, 0);
    attn_selection sel;
    attn_shape shape;
    ts_fp8_gqa_gfx942_shape(&shape);
    shape.num_kv_heads = 32;
    ck_assert_msg(select_shape(reg, &shape, &sel) == ATTN_OK, "%s", sel.message);
    ck_assert_str_eq(sel.backend_name, "aiter-generic");
    ck_assert_int_eq(sel.fallback_applied, 0);
    ck_assert_int_eq(sel.effective_shape.compute_dtype, ATTN_DTYPE_FP8_E4M3FNUZ);
    attn_registry_close(reg);
}
END_TEST

START_TEST(shipped_invalid_shape)
{
    attn_registry *reg = open_shipped(0, 0);
    attn_selection sel;
    attn_shape shape;
    ts_mtp_shape(&shape);
    shape.num_q_heads = 32;
    shape.num_kv_heads = 5;
    ck_assert_int_eq(select_shape(reg, &shape, &sel), ATTN_ERR_INVALID_SHAPE);
    ck_assert_str_eq(sel.message, "requires num_heads (32) to be a multiple of num_kv_heads (5)");
    attn_registry_close(reg);
}
END_TEST

START_TEST(shipped_mtp_accepted)
{
    attn_registry *reg = open_shipped(0, 0);
    attn_selection sel;
    attn_shape shape;
    attn_verdict_record r;
    ts_mtp_shape(&shape);
    ck_assert_msg(select_shape(reg, &shape, &sel) == ATTN_OK, "%s", sel.message);
    ck_assert_str_eq(sel.backend_name, "aiter-mtp-gfx950");
    ck_assert_int_eq(sel.fallback_applied, 0);
    /* head_dim_v 0 means head_dim: the same decision. */
    shape.head_dim_v = 0;
    expect_backend(reg, &shape, "aiter-mtp-gfx950");
    /* q len 2 and 3 are inside the gate as well. */
    shape.max_q_len = 2;
    expect_backend(reg, &shape, "aiter-mtp-gfx950");
    r = ts_record_for(reg, &shape, "aiter-generic");
    ck_assert_int_eq(r.accepted, 1); /* evaluated after the winner, and would accept */
    ck_assert_int_eq(r.selected, 0);
    attn_registry_close(reg);
}
END_TEST

/* The MTP gate as a table: flip one condition of the accepted shape. */
typedef struct mtp_flip {
    const char *what;
    void (*flip)(attn_shape *);
    attn_reason reason;
    int to_generic; /* 1: aiter-generic must take it; 0: anything but MTP */
} mtp_flip;

static void f_qlen1(attn_shape *s)
{
    s->max_q_len = 1;
}
static void f_qlen5(attn_shape *s)
{
    s->max_q_len = 5;
}
static void f_kvlen512(attn_shape *s)
{
    s->max_kv_len = 512;
}
static void f_ratio32(attn_shape *s)
{
    s->num_q_heads = 32;
}
static void f_ratio8(attn_shape *s)
{
    s->num_kv_heads = 2;
}
static void f_hd128(attn_shape *s)
{
    s->head_dim = 128;
    s->head_dim_v = 0; /* = head_dim: a plain D 128 model */
}
static void f_hdv128(attn_shape *s)
{
    s->head_dim_v = 128;
}
static void f_page32(attn_shape *s)
{
    s->page_size = 32;
}
static void f_qf16(attn_shape *s)
{
    /* An f16 model: aiter-generic computes and writes in q's 16-bit dtype,
     * so compute and out follow q; neither is an MTP condition. */
    s->q_dtype = ATTN_DTYPE_F16;
    s->compute_dtype = ATTN_DTYPE_F16;
    s->out_dtype = ATTN_DTYPE_F16;
}
static void f_kvbf16(attn_shape *s)
{
    s->kv_dtype = ATTN_DTYPE_BF16;
}
static void f_noncausal(attn_shape *s)
{
    s->causal = 0;
}
static void f_window(attn_shape *s)
{
    s->window_left = 128;
    s->window_right = 0;
}
static void f_softcap(attn_shape *s)
{
    s->softcap = 30.0f;
}
static void f_sinks(attn_shape *s)
{
    s->has_sinks = 1;
}
static void f_gfx942(attn_shape *s)
{
    ts_set_arch(s, "gfx942");
}

static const mtp_flip mtp_flips[] = {
    {"max_q_len 1", f_qlen1, ATTN_REASON_Q_LEN, 1},
    {"max_q_len 5", f_qlen5, ATTN_REASON_Q_LEN, 1},
    {"max_kv_len 512", f_kvlen512, ATTN_REASON_KV_LEN, 1},
    {"heads 32/1", f_ratio32, ATTN_REASON_GQA_RATIO, 1},
    {"heads 16/2", f_ratio8, ATTN_REASON_GQA_RATIO, 1},
    {"head_dim 128", f_hd128, ATTN_REASON_HEAD_DIM, 1},
    {"head_dim_v 128", f_hdv128, ATTN_REASON_HEAD_DIM_V, 0},
    {"page 32", f_page32, ATTN_REASON_PAGE_SIZE, 1},
    {"q f16", f_qf16, ATTN_REASON_Q_DTYPE, 1},
    {"kv bf16", f_kvbf16, ATTN_REASON_KV_DTYPE, 1},
    {"non-causal", f_noncausal, ATTN_REASON_CAUSAL, 1},
    {"window 128,0", f_window, ATTN_REASON_WINDOW, 1},
    {"softcap 30", f_softcap, ATTN_REASON_SOFTCAP, 1},
    {"sinks", f_sinks, ATTN_REASON_SINKS, 1},
    {"arch gfx942", f_gfx942, ATTN_REASON_ARCH_NOT_LISTED, 0},
};

START_TEST(shipped_mtp_gate_table)
{
    const mtp_flip *f = &mtp_flips[_i];
    attn_registry *reg = open_shipped(0, 0);
    attn_selection sel;
    attn_shape shape;
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    attn_status st;

    ts_mtp_shape(&shape);
    f->flip(&shape);
    st = select_shape(reg, &shape, &sel);
    if (f->to_generic) {
        ck_assert_msg(st == ATTN_OK, "%s: %s: %s", f->what, attn_status_name(st), sel.message);
        ck_assert_msg(strcmp(sel.backend_name, "aiter-generic") == 0, "%s: went to %s", f->what,
                      sel.backend_name);
        ck_assert_int_eq(sel.fallback_applied, 0);
    } else {
        ck_assert_msg(st != ATTN_OK || strcmp(sel.backend_name, "aiter-mtp-gfx950") != 0,
                      "%s: still selected aiter-mtp-gfx950", f->what);
    }

    attn_registry_explain(reg, &shape, &ex);
    ck_assert_ptr_nonnull(ex);
    ck_assert(ts_find_record(ex, 0, "aiter-mtp-gfx950", &r));
    ck_assert_int_eq(r.accepted, 0);
    ck_assert_msg(r.reason == (int32_t)f->reason, "%s: reason %s, expected %s", f->what,
                  attn_reason_name(r.reason), attn_reason_name(f->reason));
    ck_assert_str_eq(r.reason_name, attn_reason_name(f->reason));
    ck_assert_msg(r.message && r.message[0], "%s: no sentence", f->what);
    attn_explanation_free(ex);

    /* The skip is logged at debug under the plugin's name (it is logged by
     * the select above, or not at all if explain came first). */
    ck_assert_msg(ts_log_count(ATTN_LOG_DEBUG, "aiter-mtp-gfx950", NULL) >= 1,
                  "%s: skip not logged:%s", f->what, ts_log_dump());
    attn_registry_close(reg);
}
END_TEST

START_TEST(shipped_create_gpu_plugins_refuse_cleanly)
{
    /* Selection plans for gfx950/gfx942 on a machine without them; create
     * checks what is really there and refuses with its own status. */
    attn_registry *reg = open_shipped(0, 0);
    attn_shape shapes[2];
    const char *expect[2] = {"aiter-mtp-gfx950", "aiter-generic"};
    size_t i;
    ts_mtp_shape(&shapes[0]);
    ts_fp8_gqa_gfx942_shape(&shapes[1]);
    for (i = 0; i < 2; i++) {
        attn_selection sel;
        attn_backend *be = NULL;
        attn_status st;
        ck_assert_int_eq(select_shape(reg, &shapes[i], &sel), ATTN_OK);
        ck_assert_str_eq(sel.backend_name, expect[i]);
        st = attn_backend_create(reg, &sel, &be);
        ck_assert_msg(st == ATTN_ERR_NO_KERNELS || st == ATTN_ERR_ARCH_NOT_IN_BINARY,
                      "%s: create = %s (%s)", expect[i], attn_status_name(st), attn_last_error());
        ck_assert_ptr_null(be);
        ck_assert_msg(attn_last_error()[0] != '\0', "%s: no sentence", expect[i]);
    }
    attn_registry_close(reg);
}
END_TEST

START_TEST(shipped_cpu_ref_constructible)
{
    attn_registry *reg = open_shipped(0, 0);
    attn_selection sel;
    attn_shape shape;
    attn_backend *be = NULL;
    attn_batch_limits lim;
    size_t bytes = 0;
    attn_status st;
    attn_shape_init(&shape); /* arch "cpu" */
    shape.num_q_heads = 8;
    shape.num_kv_heads = 2;
    shape.max_q_len = 4;
    shape.max_kv_len = 64;
    ck_assert_msg(select_shape(reg, &shape, &sel) == ATTN_OK, "%s", sel.message);
    ck_assert_str_eq(sel.backend_name, "cpu-ref");
    st = attn_backend_create(reg, &sel, &be);
    ck_assert_msg(st == ATTN_OK, "create: %s: %s", attn_status_name(st), attn_last_error());
    ck_assert_str_eq(attn_backend_name(be), "cpu-ref");
    ck_assert_int_eq(attn_backend_shape(be)->num_q_heads, 8);
    memset(&lim, 0, sizeof lim);
    lim.struct_size = sizeof lim;
    lim.max_num_seqs = 4;
    lim.max_num_tokens = 16;
    ck_assert_int_eq(attn_backend_workspace_size(be, &lim, &bytes), ATTN_OK);
    attn_backend_destroy(be);
    attn_registry_close(reg);
}
END_TEST

START_TEST(shipped_runnable_mode)
{
    /* On a machine without gfx950 (every machine we test on), runnable mode
     * turns the MTP plan into a rejection with the runnable reason. */
    attn_registry *reg = open_shipped(0, 1);
    attn_selection sel;
    attn_shape shape;
    attn_verdict_record r;
    ts_mtp_shape(&shape);
    ck_assert_int_ne(select_shape(reg, &shape, &sel), ATTN_OK);
    r = ts_record_for(reg, &shape, "aiter-mtp-gfx950");
    ck_assert_int_eq(r.accepted, 0);
    ck_assert_msg(r.reason == ATTN_REASON_ARCH_NOT_IN_BINARY || r.reason == ATTN_REASON_NO_DEVICE,
                  "reason %s", attn_reason_name(r.reason));
    /* The CPU can always run. */
    attn_shape_init(&shape);
    expect_backend(reg, &shape, "cpu-ref");
    attn_registry_close(reg);
}
END_TEST

static Suite *select_suite(void)
{
    Suite *s = suite_create("select");
    TCase *order = tcase_create("order");
    TCase *forced = tcase_create("forced_disabled");
    TCase *fallback = tcase_create("fallback");
    TCase *logging = tcase_create("logging");
    TCase *cache = tcase_create("cache");
    TCase *shipped = tcase_create("shipped");

    ts_add_fixtures(order, 20);
    tcase_add_test(order, priority_then_name_order);
    tcase_add_test(order, list_matches_priority_order);
    tcase_add_test(order, first_accepting_wins);
    tcase_add_test(order, invalid_shape_before_any_plugin);
    tcase_add_test(order, unsupported_lists_every_reason);
    tcase_add_test(order, empty_registry_is_unsupported);
    tcase_add_test(order, null_arguments);
    tcase_add_test(order, arch_not_listed_decided_in_conf);
    tcase_add_test(order, runnable_mode_checks_binary_and_device);
    suite_add_tcase(s, order);

    ts_add_fixtures(forced, 20);
    tcase_add_test(forced, forced_backend_rejecting_is_an_error);
    tcase_add_test(forced, forced_backend_skips_higher_priority);
    tcase_add_test(forced, forced_backend_from_env);
    tcase_add_test(forced, forced_unknown_backend_not_found);
    tcase_add_test(forced, forced_backend_gets_no_fallback);
    tcase_add_test(forced, disabled_by_option);
    tcase_add_test(forced, disabled_by_env_and_option_merge);
    suite_add_tcase(s, forced);

    ts_add_fixtures(fallback, 20);
    tcase_add_test(fallback, fallback_fp8_to_bf16);
    tcase_add_test(fallback, fallback_refused_in_strict_mode);
    tcase_add_test(fallback, no_fallback_when_not_needed);
    tcase_add_test(fallback, fallback_rule_must_match);
    tcase_add_test(fallback, fallback_motivation_skips_conf_layer);
    tcase_add_test(fallback, fallback_rules_in_file_order);
    suite_add_tcase(s, fallback);

    ts_add_fixtures(logging, 20);
    tcase_add_test(logging, log_skipped_debug_selected_info);
    tcase_add_test(logging, log_level_filters);
    tcase_add_test(logging, fallback_warning_once_per_shape);
    tcase_add_test(logging, log_level_from_env);
    suite_add_tcase(s, logging);

    ts_add_fixtures(cache, 20);
    tcase_add_test(cache, repeated_select_same_answer);
    tcase_add_test(cache, many_distinct_shapes_cached_correctly);
    tcase_add_test(cache, arch_bytes_after_nul_ignored);
    tcase_add_test(cache, shape_struct_size_rules);
    suite_add_tcase(s, cache);

    ts_add_fixtures(shipped, 30);
    tcase_add_test(shipped, shipped_fp8_gqa_falls_back_to_bf16);
    tcase_add_test(shipped, shipped_strict_refuses_fallback);
    tcase_add_test(shipped, shipped_fp8_mha_runs_fp8);
    tcase_add_test(shipped, shipped_invalid_shape);
    tcase_add_test(shipped, shipped_mtp_accepted);
    tcase_add_loop_test(shipped, shipped_mtp_gate_table, 0,
                        (int)(sizeof mtp_flips / sizeof mtp_flips[0]));
    tcase_add_test(shipped, shipped_create_gpu_plugins_refuse_cleanly);
    tcase_add_test(shipped, shipped_cpu_ref_constructible);
    tcase_add_test(shipped, shipped_runnable_mode);
    suite_add_tcase(s, shipped);
    return s;
}

int main(void)
{
    return ts_run(select_suite());
}
