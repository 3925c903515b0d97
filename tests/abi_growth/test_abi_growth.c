/*
 * test_abi_growth.c — a host built against today's headers, run (by ctest,
 * through LD_LIBRARY_PATH) against a libattnreg built from a copy of the
 * headers where every versioned struct gained a field at its end
 * (grow_headers.py): what the next minor version may do. It must get no
 * byte written past its structs, fields where it expects them, and its
 * struct_size accepted. The fake plugins it loads are built against today's
 * headers too: old plugins under a newer host.
 */
#define _GNU_SOURCE /* dladdr */

#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attnreg.h"
#include "support/test_support.h"

enum { CANARY = 64 };

/* A host struct (or array of n) with guard bytes after it. */
#define GUARDED_N(type, n)                                                                         \
    struct {                                                                                       \
        type v[n];                                                                                 \
        unsigned char guard[CANARY];                                                               \
    }
#define GUARDED(type)                                                                              \
    struct {                                                                                       \
        type v;                                                                                    \
        unsigned char guard[CANARY];                                                               \
    }

static void arm(void *guard)
{
    memset(guard, 0xAB, CANARY);
}

/* A struct the library fills: zeroed, the host's struct_size, guard armed. */
#define PREPARE(g)                                                                                 \
    do {                                                                                           \
        memset(&(g).v, 0, sizeof(g).v);                                                            \
        (g).v.struct_size = sizeof(g).v;                                                           \
        arm((g).guard);                                                                            \
    } while (0)

static void check_guard(const unsigned char *guard, const char *what)
{
    for (int i = 0; i < CANARY; i++)
        ck_assert_msg(guard[i] == 0xAB, "%s: byte %d past the host's struct written", what, i);
}

START_TEST(runs_on_the_grown_library)
{
    Dl_info info;
    ck_assert(dladdr((void *)attn_registry_open, &info) && info.dli_fname);
    ck_assert_msg(strstr(info.dli_fname, "abi_growth") != NULL,
                  "libattnreg came from %s, not the grown build: the test would prove nothing",
                  info.dli_fname);
}
END_TEST

START_TEST(init_writes_only_the_hosts_struct)
{
    GUARDED(attn_shape) s;
    arm(s.guard);
    attn_shape_init(&s.v);
    check_guard(s.guard, "attn_shape_init");
    ck_assert_uint_eq(s.v.struct_size, sizeof s.v);
    ck_assert_int_eq(s.v.head_dim, 128);
    arm(s.guard);
    (attn_shape_init)(&s.v);
    check_guard(s.guard, "attn_shape_init (the old symbol)");

    GUARDED(attn_selection) sel;
    arm(sel.guard);
    attn_selection_init(&sel.v);
    check_guard(sel.guard, "attn_selection_init");
    ck_assert_str_eq(sel.v.message, "");
    arm(sel.guard);
    (attn_selection_init)(&sel.v);
    check_guard(sel.guard, "attn_selection_init (the old symbol)");
    ck_assert_str_eq(sel.v.message, "");

    GUARDED(attn_registry_options) o;
    arm(o.guard);
    attn_registry_options_init(&o.v);
    check_guard(o.guard, "attn_registry_options_init");
    ck_assert_int_eq(o.v.log_level, -1);
    arm(o.guard);
    (attn_registry_options_init)(&o.v);
    check_guard(o.guard, "attn_registry_options_init (the old symbol)");

    GUARDED(attn_layer) l;
    arm(l.guard);
    attn_layer_init_sized(&l.v, sizeof l.v);
    check_guard(l.guard, "attn_layer_init_sized");
    ck_assert_uint_eq(l.v.struct_size, sizeof l.v);
    ck_assert_int_eq(l.v.window_left, -1);
    arm(l.guard);
    attn_layer_init(&l.v, sizeof l.v);
    check_guard(l.guard, "attn_layer_init (the 0.2 name)");

    GUARDED(attn_model) m;
    arm(m.guard);
    attn_model_init_sized(&m.v, sizeof m.v);
    check_guard(m.guard, "attn_model_init_sized");
    ck_assert_uint_eq(m.v.struct_size, sizeof m.v);
    ck_assert_int_eq(m.v.tp_size, 1);
    arm(m.guard);
    attn_model_init(&m.v, sizeof m.v);
    check_guard(m.guard, "attn_model_init (the 0.2 name)");

    GUARDED(attn_forward_args) f;
    arm(f.guard);
    attn_forward_args_init(&f.v);
    check_guard(f.guard, "attn_forward_args_init");
    ck_assert_uint_eq(f.v.struct_size, sizeof f.v);
    ck_assert(f.v.k_descale == 1.0f && f.v.q == NULL);

    GUARDED(attn_batch_limits) b;
    arm(b.guard);
    attn_batch_limits_init(&b.v);
    check_guard(b.guard, "attn_batch_limits_init");
    ck_assert_uint_eq(b.v.struct_size, sizeof b.v);
    ck_assert_int_eq(b.v.max_num_seqs, 0);

    GUARDED(attn_append_args) ap;
    arm(ap.guard);
    attn_append_args_init(&ap.v);
    check_guard(ap.guard, "attn_append_args_init");
    ck_assert_uint_eq(ap.v.struct_size, sizeof ap.v);
    ck_assert(ap.v.k_scale == 1.0f && ap.v.v_scale == 1.0f && ap.v.num_tokens == 0);

    GUARDED(attn_merge_args) mg;
    arm(mg.guard);
    attn_merge_args_init(&mg.v);
    check_guard(mg.guard, "attn_merge_args_init");
    ck_assert_uint_eq(mg.v.struct_size, sizeof mg.v);
    ck_assert_ptr_null(mg.v.lse_out);
}
END_TEST

static attn_registry *open_fallback(void)
{
    ts_write_plugin_ini(ts_dir(), "g.ini", "fake-good", ts_fake("good"), 10, "fake",
                        "[params]\nfp8_mha_only = 1\n");
    ts_write_fp8_fallback_ini(ts_dir());
    return ts_open_dir(ts_dir());
}

START_TEST(selection_fields_do_not_shift)
{
    attn_registry *reg = open_fallback();
    attn_shape s;
    ts_fake_shape(&s);
    s.num_q_heads = 8;
    s.num_kv_heads = 2;
    s.compute_dtype = ATTN_DTYPE_FP8_E4M3FN;
    GUARDED(attn_selection) sel;
    attn_selection_init(&sel.v);
    arm(sel.guard);
    ck_assert_int_eq(attn_registry_select(reg, &s, &sel.v), ATTN_OK);
    check_guard(sel.guard, "attn_registry_select");
    ck_assert_str_eq(sel.v.backend_name, "fake-good");
    ck_assert_int_eq(sel.v.effective_shape.num_q_heads, 8);
    ck_assert_int_eq(sel.v.effective_shape.compute_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(sel.v.fallback_applied, 1);
    ck_assert_str_eq(sel.v.fallback_rule, "compute_dtype fp8_e4m3fn -> bf16");
    ck_assert_str_eq(sel.v.fallback_backend, "fake-good");
    ck_assert_int_eq(sel.v.fallback_reason, ATTN_REASON_FP8_COMPUTE_MHA_ONLY);
    ck_assert_ptr_nonnull(strstr(sel.v.fallback_message, "MHA-only"));
    ck_assert_str_eq(sel.v.message, "");

    /* The same through an explanation. */
    attn_explanation *ex = NULL;
    ck_assert_int_eq(attn_registry_explain(reg, &s, &ex), ATTN_OK);
    arm(sel.guard);
    ck_assert_int_eq(attn_explanation_selection(ex, &sel.v), ATTN_OK);
    check_guard(sel.guard, "attn_explanation_selection");
    ck_assert_str_eq(sel.v.fallback_rule, "compute_dtype fp8_e4m3fn -> bf16");
    GUARDED(attn_verdict_record) r;
    r.v.struct_size = sizeof r.v;
    arm(r.guard);
    ck_assert_int_eq(attn_explanation_record(ex, 0, &r.v), ATTN_OK);
    check_guard(r.guard, "attn_explanation_record");
    ck_assert_str_eq(r.v.backend, "fake-good");
    ck_assert_int_eq(r.v.priority, 10);
    attn_explanation_free(ex);

    /* And a backend made from the host's selection, run with the host's
     * structs (an old plugin under a newer host). */
    attn_backend *b = NULL;
    ck_assert_int_eq(attn_backend_create(reg, &sel.v, &b), ATTN_OK);
    ck_assert_int_eq(attn_backend_shape(b)->compute_dtype, ATTN_DTYPE_BF16);
    attn_batch_limits lim = {sizeof lim, 2, 8};
    size_t bytes = 0;
    ck_assert_int_eq(attn_backend_workspace_size(b, &lim, &bytes), ATTN_OK);
    ck_assert_uint_eq(bytes, 8 * 64);
    ts_tiny_batch t;
    ts_tiny_batch_init(&t);
    ck_assert_int_eq(attn_backend_forward(b, &t.args), ATTN_OK);
    ck_assert_uint_eq((unsigned char)t.buf[0], 0xA5);
    attn_backend_destroy(b);
    attn_registry_close(reg);
}
END_TEST

START_TEST(listing_and_probing_use_the_hosts_stride)
{
    ts_write_plugin_ini(ts_dir(), "a.ini", "fake-alpha", ts_fake("alpha"), 20, "fake", NULL);
    ts_write_plugin_ini(ts_dir(), "b.ini", "fake-beta", ts_fake("beta"), 10, "fake", NULL);
    attn_registry *reg = ts_open_dir(ts_dir());
    GUARDED_N(attn_plugin_info, 2) infos;
    memset(&infos.v, 0, sizeof infos.v);
    infos.v[0].struct_size = sizeof infos.v[0];
    arm(infos.guard);
    size_t count = 0;
    ck_assert_int_eq(attn_registry_list(reg, infos.v, 2, &count), ATTN_OK);
    check_guard(infos.guard, "attn_registry_list");
    ck_assert_uint_eq(count, 2);
    ck_assert_str_eq(infos.v[0].name, "fake-alpha");
    ck_assert_str_eq(infos.v[1].name, "fake-beta");
    ck_assert_int_eq(infos.v[1].priority, 10);

    GUARDED(attn_plugin_load_info) li;
    PREPARE(li);
    ck_assert_int_eq(attn_registry_load_plugin(reg, 0, &li.v), ATTN_OK);
    check_guard(li.guard, "attn_registry_load_plugin");
    ck_assert_str_eq(li.v.version, "1.2.3");
    ck_assert_uint_eq(li.v.num_predicates, 2);

    GUARDED_N(attn_device_info, 2) dev;
    memset(&dev.v, 0, sizeof dev.v);
    dev.v[0].struct_size = sizeof dev.v[0];
    arm(dev.guard);
    uint32_t n = 0;
    ck_assert_int_eq(attn_registry_probe_devices(reg, 0, dev.v, 2, &n), ATTN_OK);
    check_guard(dev.guard, "attn_registry_probe_devices");
    ck_assert_uint_eq(n, 1);
    ck_assert_str_eq(dev.v[0].name, "Fake Device 0");
    ck_assert_int_eq(dev.v[0].compute_units, 4);
    attn_registry_close(reg);
}
END_TEST

/* The structs the library fills for the host that the tests above do not
 * reach: a diagnostic, one plugin info, a plan's summary and entries. */
START_TEST(diagnostics_and_plans_use_the_hosts_size)
{
    ts_write_plugin_ini(ts_dir(), "g.ini", "fake-good", ts_fake("good"), 10, "fake", NULL);
    char bad[4096];
    snprintf(bad, sizeof bad, "%s/bad.ini", ts_dir());
    FILE *f = fopen(bad, "w");
    ck_assert_ptr_nonnull(f);
    fputs("[plugin]\nname = fake-bad\nno equals sign here\n", f);
    fclose(f);
    attn_registry *reg = ts_open_dir(ts_dir());
    ck_assert_uint_ge(attn_registry_diagnostic_count(reg), 1);
    GUARDED(attn_diagnostic) d;
    PREPARE(d);
    ck_assert_int_eq(attn_registry_diagnostic(reg, 0, &d.v), ATTN_OK);
    check_guard(d.guard, "attn_registry_diagnostic");
    ck_assert_ptr_nonnull(strstr(d.v.file, "bad.ini"));

    GUARDED(attn_plugin_info) info;
    PREPARE(info);
    ck_assert_int_eq(attn_registry_plugin(reg, 0, &info.v), ATTN_OK);
    check_guard(info.guard, "attn_registry_plugin");
    ck_assert_str_eq(info.v.name, "fake-good");

    attn_model m;
    attn_model_init_sized(&m, sizeof m);
    snprintf(m.arch, sizeof m.arch, "fake");
    m.num_q_heads = 8;
    m.num_kv_heads = 2;
    m.num_layers = 2;
    m.max_model_len = 4096;
    attn_plan *plan = NULL;
    ck_assert_int_eq(attn_registry_plan(reg, &m, &plan), ATTN_OK);
    GUARDED(attn_plan_summary) sum;
    PREPARE(sum);
    ck_assert_int_eq(attn_plan_summarize(plan, &sum.v), ATTN_OK);
    check_guard(sum.guard, "attn_plan_summarize");
    ck_assert_int_eq(sum.v.rank_kv_heads, 2);
    GUARDED(attn_plan_entry) e;
    PREPARE(e);
    ck_assert_int_eq(attn_plan_lookup(plan, 1, ATTN_PHASE_DECODE, &e.v), ATTN_OK);
    check_guard(e.guard, "attn_plan_lookup");
    ck_assert_int_eq(e.v.phase, ATTN_PHASE_DECODE);
    ck_assert_str_eq(e.v.selection->backend_name, "fake-good");
    attn_plan_free(plan);
    attn_registry_close(reg);
}
END_TEST

/* A merge with the host's attn_merge_args (0.5's, with stream) on a library
 * whose struct is larger: the fields it has are read where it put them, the
 * rest is zero; a backend whose plugin (built against today's headers) has
 * no merge_states says so. */
START_TEST(merge_reads_the_hosts_struct)
{
    float a[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}}, b[2][4] = {{4, 3, 2, 1}, {0, 0, 0, 0}};
    float la[2] = {0.0f, -INFINITY}, lb[2] = {0.0f, 0.0f};
    GUARDED(attn_merge_args) m;
    arm(m.guard);
    attn_merge_args_init(&m.v);
    m.v.num_tokens = 2;
    m.v.num_heads = 1;
    m.v.head_dim = 4;
    m.v.dtype = ATTN_DTYPE_F32;
    m.v.a = a;
    m.v.b = b;
    m.v.out = a;
    m.v.lse_a = la;
    m.v.lse_b = lb;
    m.v.lse_out = la;
    ck_assert_int_eq(attn_merge_states(&m.v), ATTN_OK);
    check_guard(m.guard, "attn_merge_states");
    ck_assert(a[0][0] == 2.5f && a[0][3] == 2.5f && a[1][0] == 0.0f);
    ck_assert(la[1] == 0.0f && fabsf(la[0] - logf(2.0f)) < 1e-6f);

    ts_write_plugin_ini(ts_dir(), "g.ini", "fake-good", ts_fake("good"), 10, "fake", NULL);
    attn_registry *reg = ts_open_dir(ts_dir());
    attn_shape s;
    attn_selection sel;
    attn_backend *be = NULL;
    ts_fake_shape(&s);
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &s, &sel), ATTN_OK);
    ck_assert_int_eq(attn_backend_create(reg, &sel, &be), ATTN_OK);
    ck_assert_int_eq(attn_backend_merge_states(be, &m.v), ATTN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(attn_last_error(), "fake-good"), "%s", attn_last_error());
    attn_backend_destroy(be);
    attn_registry_close(reg);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("abi_growth");
    TCase *tc = tcase_create("old host, grown library");
    ts_add_fixtures(tc, 60);
    tcase_add_test(tc, runs_on_the_grown_library);
    tcase_add_test(tc, init_writes_only_the_hosts_struct);
    tcase_add_test(tc, selection_fields_do_not_shift);
    tcase_add_test(tc, listing_and_probing_use_the_hosts_stride);
    tcase_add_test(tc, diagnostics_and_plans_use_the_hosts_size);
    tcase_add_test(tc, merge_reads_the_hosts_struct);
    suite_add_tcase(s, tc);
    return ts_run(s);
}
