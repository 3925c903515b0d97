/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_backend.c — constructing and running a selected backend: create's
 * own checks (code for the arch in the binary, a device), the plugin's
 * constructor, workspace sizing and forward, all through fake plugins.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnreg.h"
#include "support/test_support.h"

#define TOKENS 10

static attn_registry *open_single(const char *variant, const char *name, const char *extra)
{
    ts_write_plugin_ini(ts_dir(), "p.ini", name, ts_fake(variant), 10, "fake", extra);
    return ts_open_dir(ts_dir());
}

static void forward_shape(attn_shape *s)
{
    ts_fake_shape(s);
    s->max_q_len = 16;
    s->max_kv_len = 16;
}

static void select_ok(attn_registry *reg, const attn_shape *s, attn_selection *sel,
                      const char *name)
{
    attn_status st;
    attn_selection_init(sel);
    st = attn_registry_select(reg, s, sel);
    ck_assert_msg(st == ATTN_OK, "select: %s: %s", attn_status_name(st), sel->message);
    ck_assert_str_eq(sel->backend_name, name);
}

/* Tensors for one sequence of TOKENS new tokens in one 16-token page, one
 * head of 128, bf16 (2 bytes per element). */
typedef struct tensors {
    uint16_t q[TOKENS * 128];
    uint16_t k[16 * 128];
    uint16_t v[16 * 128];
    uint16_t out[TOKENS * 128];
    int32_t block_table[1];
    int32_t cu_seqlens_q[2];
    int32_t seqused_k[1];
    unsigned char workspace[4096];
} tensors;

static void fill_args(attn_forward_args *a, tensors *t, size_t workspace_bytes)
{
    memset(t, 0, sizeof *t);
    memset(a, 0, sizeof *a);
    t->cu_seqlens_q[1] = TOKENS;
    t->seqused_k[0] = TOKENS;
    a->struct_size = sizeof *a;
    a->num_seqs = 1;
    a->num_tokens = TOKENS;
    a->q = t->q;
    a->q_stride_token = 128;
    a->q_stride_head = 128;
    a->k_cache = t->k;
    a->v_cache = t->v;
    a->num_blocks = 1;
    a->block_table = t->block_table;
    a->block_table_stride = 1;
    a->cu_seqlens_q = t->cu_seqlens_q;
    a->seqused_k = t->seqused_k;
    a->max_seqlen_q = TOKENS;
    a->max_seqlen_k = TOKENS;
    a->scale = 1.0f / sqrtf(128.0f);
    a->q_descale = a->k_descale = a->v_descale = 1.0f;
    a->out = t->out;
    a->out_stride_token = 128;
    a->out_stride_head = 128;
    a->workspace = workspace_bytes ? t->workspace : NULL;
    a->workspace_size = workspace_bytes;
}

START_TEST(create_workspace_forward_destroy)
{
    attn_registry *reg = open_single("good", "fake-good", NULL);
    static tensors t;
    attn_forward_args args;
    attn_batch_limits lim;
    attn_selection sel;
    attn_shape shape;
    attn_backend *be = NULL;
    size_t bytes = 0;
    attn_status st;

    forward_shape(&shape);
    select_ok(reg, &shape, &sel, "fake-good");
    st = attn_backend_create(reg, &sel, &be);
    ck_assert_msg(st == ATTN_OK, "create: %s: %s", attn_status_name(st), attn_last_error());
    ck_assert_ptr_nonnull(be);
    ck_assert_str_eq(attn_backend_name(be), "fake-good");
    ck_assert_int_eq(attn_backend_shape(be)->head_dim, 128);
    ck_assert_int_eq(attn_backend_shape(be)->max_q_len, 16);

    memset(&lim, 0, sizeof lim);
    lim.struct_size = sizeof lim;
    lim.max_num_seqs = 1;
    lim.max_num_tokens = TOKENS;
    ck_assert_int_eq(attn_backend_workspace_size(be, &lim, &bytes), ATTN_OK);
    /* The fake asks 64 bytes per token. */
    ck_assert_uint_ge(bytes, 64 * TOKENS);
    ck_assert_uint_le(bytes, sizeof t.workspace);

    fill_args(&args, &t, bytes);
    st = attn_backend_forward(be, &args);
    ck_assert_msg(st == ATTN_OK, "forward: %s: %s", attn_status_name(st), attn_last_error());
    ck_assert_int_eq(((unsigned char *)t.out)[0], 0xA5); /* the plugin ran */

    /* Too little scratch: the plugin's status and sentence come through. */
    fill_args(&args, &t, 100);
    st = attn_backend_forward(be, &args);
    ck_assert_int_eq(st, ATTN_ERR_WORKSPACE_TOO_SMALL);
    ck_assert_msg(strstr(attn_last_error(), "fake forward needs") != NULL, "last error \"%s\"",
                  attn_last_error());

    ck_assert_int_eq(attn_backend_forward(be, NULL), ATTN_ERR_INVALID_ARGUMENT);
    attn_backend_destroy(be);
    attn_backend_destroy(NULL); /* harmless */
    attn_registry_close(reg);
}
END_TEST

START_TEST(forward_kv_strides)
{
    /* 0.4: K/V strides. Strides equal to the contiguous layout's reach the
     * plugin as 0 (so a plugin that reads no strides still runs); any other
     * layout is refused for a plugin without ATTN_FORWARD_KV_STRIDES (the
     * fake declares none), never computed on the wrong rows; negative and
     * overlapping strides are refused for every plugin. */
    attn_registry *reg = open_single("good", "fake-good", NULL);
    static tensors t;
    attn_forward_args args;
    attn_selection sel;
    attn_shape shape;
    attn_backend *be = NULL;
    forward_shape(&shape); /* page 16, one KV head, D 128 */
    select_ok(reg, &shape, &sel, "fake-good");
    ck_assert_int_eq(attn_backend_create(reg, &sel, &be), ATTN_OK);
    fill_args(&args, &t, sizeof t.workspace);
    args.k_stride_block = args.v_stride_block = 16 * 128;
    args.k_stride_token = args.v_stride_token = 128;
    args.k_stride_head = args.v_stride_head = 128;
    ck_assert_msg(attn_backend_forward(be, &args) == ATTN_OK, "%s", attn_last_error());
    ck_assert_int_eq(args.k_stride_block, 16 * 128); /* the host's struct is left alone */

    fill_args(&args, &t, sizeof t.workspace);
    args.k_stride_token = 256; /* NHD-like: K and V interleaved per token */
    ck_assert_int_eq(attn_backend_forward(be, &args), ATTN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(attn_last_error(), "ATTN_FORWARD_KV_STRIDES") &&
                      strstr(attn_last_error(), "k strides (0, 256, 0)"),
                  "%s", attn_last_error());

    fill_args(&args, &t, sizeof t.workspace);
    args.v_stride_head = -128;
    ck_assert_int_eq(attn_backend_forward(be, &args), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(attn_last_error(), "v_stride_head is -128"), "%s", attn_last_error());
    fill_args(&args, &t, sizeof t.workspace);
    args.k_stride_token = 64; /* rows of 128 elements 64 apart */
    ck_assert_int_eq(attn_backend_forward(be, &args), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(strstr(attn_last_error(), "overlap"), "%s", attn_last_error());

    /* A 0.3 host's args (no stride fields) run as before. */
    fill_args(&args, &t, sizeof t.workspace);
    args.struct_size = ATTN_FORWARD_ARGS_SIZE_0_1;
    args.k_stride_token = 256; /* past its struct_size: never read */
    ck_assert_msg(attn_backend_forward(be, &args) == ATTN_OK, "%s", attn_last_error());
    attn_backend_destroy(be);
    attn_registry_close(reg);
}
END_TEST

/* The registry's one candidate refuses the forward shape with return_lse
 * for want of ATTN_FORWARD_LSE; *shape is left that shape. */
static void expect_lse_refused(attn_registry *reg, attn_shape *shape)
{
    forward_shape(shape);
    shape->return_lse = 1;
    attn_selection sel;
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, shape, &sel), ATTN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(sel.message, "ATTN_FORWARD_LSE"), "%s", sel.message);
}

START_TEST(lse_needs_a_plugin_that_writes_it)
{
    /* 0.4: a shape with return_lse is refused by the host (reason LSE,
     * check "host") for a plugin that accepts it in its predicates but does
     * not declare ATTN_FORWARD_LSE (the fake, like every older plugin), so
     * the LSE is never left unwritten. */
    attn_registry *reg = open_single("good", "fake-good", NULL);
    attn_shape shape;
    expect_lse_refused(reg, &shape);
    attn_explanation *ex = NULL;
    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_ERR_UNSUPPORTED);
    attn_verdict_record r = {.struct_size = sizeof r};
    ck_assert_int_eq(attn_explanation_record(ex, 0, &r), ATTN_OK);
    ck_assert_int_eq(r.reason, ATTN_REASON_LSE);
    ck_assert_str_eq(r.predicate, "host");
    ck_assert_msg(strstr(r.message, "ATTN_FORWARD_LSE"), "%s", r.message);
    attn_explanation_free(ex);
    shape.return_lse = 2;
    char why[256];
    ck_assert_int_eq(attn_shape_validate(&shape, why, sizeof why), 0);
    ck_assert_msg(strstr(why, "return_lse must be 0 or 1"), "%s", why);
    attn_registry_close(reg);
}
END_TEST

START_TEST(append_kv_needs_a_plugin_that_has_it)
{
    /* 0.4: a backend whose plugin has no append_kv (the fake, and every
     * plugin older than 1.3) answers ATTN_ERR_UNSUPPORTED with a sentence;
     * bad arguments are refused before the plugin. */
    attn_registry *reg = open_single("good", "fake-good", NULL);
    attn_selection sel;
    attn_shape shape;
    attn_backend *be = NULL;
    forward_shape(&shape);
    select_ok(reg, &shape, &sel, "fake-good");
    ck_assert_int_eq(attn_backend_create(reg, &sel, &be), ATTN_OK);
    attn_append_args a;
    attn_append_args_init(&a);
    ck_assert(a.struct_size == sizeof a && a.k_scale == 1.0f && a.v_scale == 1.0f);
    ck_assert_int_eq(attn_backend_append_kv(be, &a), ATTN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(attn_last_error(), "has no KV append"), "%s", attn_last_error());
    a.struct_size = 8;
    ck_assert_int_eq(attn_backend_append_kv(be, &a), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_backend_append_kv(be, NULL), ATTN_ERR_INVALID_ARGUMENT);
    attn_backend_destroy(be);
    attn_registry_close(reg);
}
END_TEST

/* A valid merge of one token, one head of 4 floats, in host memory. */
typedef struct merge_rows {
    float a[4], b[4], out[4], lse_a[1], lse_b[1], lse_out[1];
} merge_rows;

static void merge_one_row(attn_merge_args *m, merge_rows *r)
{
    memset(r, 0, sizeof *r);
    attn_merge_args_init(m);
    m->num_tokens = m->num_heads = 1;
    m->head_dim = 4;
    m->dtype = ATTN_DTYPE_F32;
    m->a = r->a;
    m->b = r->b;
    m->out = r->out;
    m->lse_a = r->lse_a;
    m->lse_b = r->lse_b;
    m->lse_out = r->lse_out;
}

static attn_backend *create_single(attn_registry *reg, const char *name)
{
    attn_selection sel;
    attn_shape shape;
    attn_backend *be = NULL;
    forward_shape(&shape);
    select_ok(reg, &shape, &sel, name);
    ck_assert_int_eq(attn_backend_create(reg, &sel, &be), ATTN_OK);
    return be;
}

START_TEST(merge_states_needs_a_plugin_that_has_it)
{
    /* 0.5: a backend whose plugin has no merge_states answers
     * ATTN_ERR_UNSUPPORTED naming the plugin: a 1.4 plugin without the entry
     * (fake-good), and a 1.3 plugin, whose descriptor ends at append_kv and
     * whose merge_states past that end aborts if the host ever read it. */
    static const char *const variants[][2] = {{"good", "fake-good"}, {"abi_1_3", "fake-abi-1-3"}};
    for (size_t i = 0; i < 2; i++) {
        attn_registry *reg = open_single(variants[i][0], variants[i][1], NULL);
        attn_backend *be = create_single(reg, variants[i][1]);
        attn_merge_args m;
        merge_rows r;
        merge_one_row(&m, &r);
        ck_assert_int_eq(attn_backend_merge_states(be, &m), ATTN_ERR_UNSUPPORTED);
        ck_assert_msg(strstr(attn_last_error(), variants[i][1]) &&
                          strstr(attn_last_error(), "has no merge_states"),
                      "%s", attn_last_error());
        ck_assert_msg(strstr(attn_last_error(), i ? "ABI 1.3" : "ABI 1.4"), "%s",
                      attn_last_error());
        /* Bad arguments are refused at the boundary, before the plugin. */
        ck_assert_int_eq(attn_backend_merge_states(be, NULL), ATTN_ERR_INVALID_ARGUMENT);
        ck_assert_int_eq(attn_backend_merge_states(NULL, &m), ATTN_ERR_INVALID_ARGUMENT);
        m.struct_size = ATTN_MERGE_ARGS_SIZE_0_4 - 1;
        ck_assert_int_eq(attn_backend_merge_states(be, &m), ATTN_ERR_INVALID_ARGUMENT);
        ck_assert_msg(strstr(attn_last_error(), "attn_backend_merge_states: struct_size"), "%s",
                      attn_last_error());
        attn_backend_destroy(be);
        attn_registry_close(reg);
    }
}
END_TEST

START_TEST(old_plugin_padding_is_no_promise)
{
    /* forward_features (1.3) lies in 1.2's tail padding: a 1.2 plugin's
     * struct_size covers it, so bits there must not opt it into K/V strides
     * or the LSE output. */
    attn_registry *reg = open_single("abi_1_2_padding", "fake-abi-1-2-padding", NULL);
    attn_shape shape;
    expect_lse_refused(reg, &shape);
    attn_selection sel;
    shape.return_lse = 0;
    select_ok(reg, &shape, &sel, "fake-abi-1-2-padding");
    attn_backend *be = NULL;
    ck_assert_int_eq(attn_backend_create(reg, &sel, &be), ATTN_OK);
    static tensors t;
    attn_forward_args args;
    fill_args(&args, &t, sizeof t.workspace);
    args.k_stride_token = 256;
    ck_assert_int_eq(attn_backend_forward(be, &args), ATTN_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(attn_last_error(), "ABI 1.2"), "%s", attn_last_error());
    attn_backend_destroy(be);
    attn_registry_close(reg);
}
END_TEST

START_TEST(create_refused_by_plugin)
{
    attn_registry *reg = open_single("create_fails", "fake-create-fails", NULL);
    attn_selection sel;
    attn_shape shape;
    attn_backend *be = NULL;
    ts_fake_shape(&shape);
    select_ok(reg, &shape, &sel, "fake-create-fails");
    ck_assert_int_eq(attn_backend_create(reg, &sel, &be), ATTN_ERR_CREATE_FAILED);
    ck_assert_ptr_null(be);
    ck_assert_msg(strstr(attn_last_error(), "fake create refused") != NULL, "last error \"%s\"",
                  attn_last_error());
    attn_registry_close(reg);
}
END_TEST

/* Planning selected it; create finds it cannot run. */
typedef struct create_case {
    const char *variant, *name;
    attn_status status;
    const char *mention1, *mention2;
} create_case;

static const create_case create_cases[] = {
    {"no_kernels", "fake-no-kernels", ATTN_ERR_NO_KERNELS, NULL, NULL},
    /* "naming the archs it holds" */
    {"other_binary", "fake-other-binary", ATTN_ERR_ARCH_NOT_IN_BINARY, "fake2", "fake3"},
    /* with the runtime's message */
    {"no_device", "fake-no-device", ATTN_ERR_NO_DEVICE, "no fake device here", NULL},
};

START_TEST(create_checks_what_is_there)
{
    const create_case *c = &create_cases[_i];
    attn_registry *reg = open_single(c->variant, c->name, NULL);
    attn_selection sel;
    attn_shape shape;
    attn_backend *be = NULL;
    attn_status st;
    ts_fake_shape(&shape);
    select_ok(reg, &shape, &sel, c->name);
    st = attn_backend_create(reg, &sel, &be);
    ck_assert_msg(st == c->status, "%s: create = %s", c->name, attn_status_name(st));
    ck_assert_ptr_null(be);
    ck_assert_msg(attn_last_error()[0] != '\0', "%s: no sentence", c->name);
    if (c->mention1)
        ck_assert_msg(strstr(attn_last_error(), c->mention1) != NULL, "%s: \"%s\" lacks %s",
                      c->name, attn_last_error(), c->mention1);
    if (c->mention2)
        ck_assert_msg(strstr(attn_last_error(), c->mention2) != NULL, "%s: \"%s\" lacks %s",
                      c->name, attn_last_error(), c->mention2);
    attn_registry_close(reg);
}
END_TEST

START_TEST(create_uses_effective_shape)
{
    /* After the FP8 -> BF16 fallback the backend is built for what it
     * accepted, not what was asked. */
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    attn_backend *be = NULL;
    ts_write_fp8_fallback_ini(ts_dir());
    reg = open_single("good", "fake-good", "[params]\nfp8_mha_only = 1\n");
    ts_fake_shape(&shape);
    shape.num_q_heads = 32;
    shape.num_kv_heads = 8;
    shape.compute_dtype = ATTN_DTYPE_FP8_E4M3FN;
    select_ok(reg, &shape, &sel, "fake-good");
    ck_assert_int_eq(sel.fallback_applied, 1);
    ck_assert_int_eq(attn_backend_create(reg, &sel, &be), ATTN_OK);
    ck_assert_int_eq(attn_backend_shape(be)->compute_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(attn_backend_shape(be)->num_q_heads, 32);
    attn_backend_destroy(be);
    attn_registry_close(reg);
}
END_TEST

START_TEST(create_bad_arguments)
{
    attn_registry *reg = open_single("good", "fake-good", NULL);
    attn_selection sel, failed;
    attn_shape shape;
    attn_backend *be = NULL;
    ts_fake_shape(&shape);
    select_ok(reg, &shape, &sel, "fake-good");
    ck_assert_int_eq(attn_backend_create(reg, &sel, NULL), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_backend_create(reg, NULL, &be), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(be);
    /* A selection that selected nothing cannot be constructed. */
    ts_set_arch(&shape, "gfx950");
    attn_selection_init(&failed);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &failed), ATTN_ERR_UNSUPPORTED);
    ck_assert_int_ne(attn_backend_create(reg, &failed, &be), ATTN_OK);
    ck_assert_ptr_null(be);
    attn_registry_close(reg);
}
END_TEST

START_TEST(create_on_tampered_shape_refused)
{
    /* create is a real constructor: a host that edits effective_shape into
     * an impossible shape after selecting gets INVALID_SHAPE, not a backend
     * built on 32 query heads over 5 KV heads. */
    attn_registry *reg = open_single("good", "fake-good", NULL);
    attn_selection sel;
    attn_shape shape;
    attn_backend *be = NULL;
    ts_fake_shape(&shape);
    shape.num_q_heads = 32;
    shape.num_kv_heads = 8;
    select_ok(reg, &shape, &sel, "fake-good");
    sel.effective_shape.num_kv_heads = 5;
    ck_assert_int_eq(attn_backend_create(reg, &sel, &be), ATTN_ERR_INVALID_SHAPE);
    ck_assert_ptr_null(be);
    ck_assert_msg(attn_last_error()[0] != '\0', "no sentence");
    attn_registry_close(reg);
}
END_TEST

START_TEST(runnable_selection_constructs)
{
    /* In runnable mode the answer is one that create accepts. */
    const char *dirs[1];
    attn_registry_options opt;
    attn_registry *reg = NULL;
    attn_selection sel;
    attn_shape shape;
    attn_backend *be = NULL;
    ts_write_plugin_ini(ts_dir(), "a.ini", "fake-no-kernels", ts_fake("no_kernels"), 30, "fake",
                        NULL);
    ts_write_plugin_ini(ts_dir(), "b.ini", "fake-no-device", ts_fake("no_device"), 20, "fake",
                        NULL);
    ts_write_plugin_ini(ts_dir(), "c.ini", "fake-good", ts_fake("good"), 10, "fake", NULL);
    dirs[0] = ts_dir();
    ts_options(&opt, dirs, 1);
    opt.runnable = 1;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    ts_fake_shape(&shape);
    select_ok(reg, &shape, &sel, "fake-good");
    ck_assert_int_eq(attn_backend_create(reg, &sel, &be), ATTN_OK);
    attn_backend_destroy(be);
    attn_registry_close(reg);
}
END_TEST

static Suite *backend_suite(void)
{
    Suite *s = suite_create("backend");
    TCase *tc = tcase_create("create");
    ts_add_fixtures(tc, 20);
    tcase_add_test(tc, create_workspace_forward_destroy);
    tcase_add_test(tc, forward_kv_strides);
    tcase_add_test(tc, lse_needs_a_plugin_that_writes_it);
    tcase_add_test(tc, append_kv_needs_a_plugin_that_has_it);
    tcase_add_test(tc, merge_states_needs_a_plugin_that_has_it);
    tcase_add_test(tc, old_plugin_padding_is_no_promise);
    tcase_add_test(tc, create_refused_by_plugin);
    tcase_add_loop_test(tc, create_checks_what_is_there, 0,
                        (int)(sizeof create_cases / sizeof create_cases[0]));
    tcase_add_test(tc, create_uses_effective_shape);
    tcase_add_test(tc, create_bad_arguments);
    tcase_add_test(tc, create_on_tampered_shape_refused);
    tcase_add_test(tc, runnable_selection_constructs);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ts_run(backend_suite());
}
