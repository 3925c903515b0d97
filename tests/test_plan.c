/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_plan.c — attn_registry_plan: a whole model planned once.
 *
 * First the rules on fake plugins (hermetic): defaults and struct sizes,
 * validation before any plugin, tensor parallelism, grouping of layers,
 * phases and capacities, lookup, failures; then the shipped plugins and conf:
 * the Qwen3.5 shape (32 query heads over 2 KV heads, D 256, one full
 * attention layer in four) gets the MTP kernel for its verify phase on gfx950
 * with fp8 KV at TP 1 and TP 2, and the generic kernel elsewhere.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_frozen.h"
#include "attnreg.h"
#include "support/test_support.h"

/* ---- helpers -------------------------------------------------------- */

static attn_registry *open_fake(const char *extra)
{
    ts_write_plugin_ini(ts_dir(), "good.ini", "fake-good", ts_fake("good"), 10, "fake", extra);
    return ts_open_dir(ts_dir());
}

/* A model on arch "fake" with capacities set. */
static void fake_model(attn_model *m, int32_t q, int32_t kv, int32_t layers)
{
    attn_model_init(m, sizeof *m);
    snprintf(m->arch, sizeof m->arch, "fake");
    m->num_q_heads = q;
    m->num_kv_heads = kv;
    m->num_layers = layers;
    m->max_model_len = 4096;
}

static attn_status plan_of(attn_registry *reg, const attn_model *m, attn_plan **plan)
{
    *plan = (attn_plan *)(uintptr_t)1; /* must be overwritten */
    return attn_registry_plan(reg, m, plan);
}

static attn_plan_summary summary_of(const attn_plan *plan)
{
    attn_plan_summary s = {.struct_size = sizeof s};
    ck_assert_int_eq(attn_plan_summarize(plan, &s), ATTN_OK);
    return s;
}

static attn_plan_entry entry_of(const attn_plan *plan, size_t i)
{
    attn_plan_entry e = {.struct_size = sizeof e};
    ck_assert_int_eq(attn_plan_entry_get(plan, i, &e), ATTN_OK);
    return e;
}

static void assert_invalid(attn_registry *reg, const attn_model *m, const char *message)
{
    attn_plan *plan;
    attn_status st = plan_of(reg, m, &plan);
    ck_assert_msg(st == ATTN_ERR_INVALID_SHAPE, "status %s", attn_status_name(st));
    ck_assert_ptr_nonnull(plan);
    attn_plan_summary s = summary_of(plan);
    ck_assert_int_eq(s.status, ATTN_ERR_INVALID_SHAPE);
    ck_assert_str_eq(s.message, message);
    ck_assert_str_eq(attn_last_error(), message);
    ck_assert_uint_eq(s.num_entries, 0);
    attn_plan_entry e = {.struct_size = sizeof e};
    ck_assert_int_eq(attn_plan_lookup(plan, 0, ATTN_PHASE_DECODE, &e), ATTN_ERR_NOT_FOUND);
    attn_plan_free(plan);
}

/* Every layer in exactly one entry of each planned phase, and lookup finds
 * that entry. */
static void assert_partition(const attn_plan *plan)
{
    attn_plan_summary s = summary_of(plan);
    int32_t phases = s.verify_q_len ? 3 : 2;
    for (int32_t ph = 0; ph < phases; ph++) {
        for (int32_t layer = 0; layer < s.num_layers; layer++) {
            int found = 0;
            for (size_t i = 0; i < s.num_entries; i++) {
                attn_plan_entry e = entry_of(plan, i);
                if (e.phase != ph)
                    continue;
                for (uint32_t k = 0; k < e.num_layers; k++)
                    found += e.layers[k] == layer;
            }
            ck_assert_msg(found == 1, "layer %d is in %d entries of phase %s", (int)layer, found,
                          attn_phase_name(ph));
            attn_plan_entry e = {.struct_size = sizeof e};
            ck_assert_int_eq(attn_plan_lookup(plan, layer, ph, &e), ATTN_OK);
            ck_assert_int_eq(e.phase, ph);
            int covers = 0;
            for (uint32_t k = 0; k < e.num_layers; k++)
                covers |= e.layers[k] == layer;
            ck_assert(covers);
        }
    }
}

/* ---- defaults and struct sizes ---------------------------------------- */

START_TEST(model_defaults)
{
    attn_model m;
    memset(&m, 0xab, sizeof m);
    attn_model_init(&m, sizeof m);
    ck_assert_uint_eq(m.struct_size, sizeof m);
    ck_assert_str_eq(m.arch, "cpu");
    ck_assert_int_eq(m.num_q_heads, 1);
    ck_assert_int_eq(m.num_kv_heads, 0);
    ck_assert_int_eq(m.head_dim, 128);
    ck_assert_int_eq(m.head_dim_v, 0);
    ck_assert_int_eq(m.num_layers, 1);
    ck_assert_ptr_null(m.layers);
    ck_assert(m.softcap == 0.0f);
    ck_assert_int_eq(m.has_sinks, 0);
    ck_assert_int_eq(m.q_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(m.kv_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(m.compute_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(m.out_dtype, ATTN_DTYPE_BF16);
    ck_assert_int_eq(m.page_size, 16);
    ck_assert_int_eq(m.tp_size, 1);
    ck_assert_int_eq(m.max_model_len, 0);
    ck_assert_int_eq(m.max_prefill_tokens, 0);
    ck_assert_int_eq(m.spec_tokens, 0);

    attn_layer l;
    memset(&l, 0xab, sizeof l);
    attn_layer_init(&l, sizeof l);
    ck_assert_uint_eq(l.struct_size, sizeof l);
    ck_assert_int_eq(l.kind, ATTN_LAYER_FULL);
    ck_assert_int_eq(l.window_left, -1);
    ck_assert_int_eq(l.window_right, -1);
    ck_assert_ptr_null(l.type_name);
}
END_TEST

/* A host built against an older, smaller struct passes its size: init
 * writes no byte past it. */
START_TEST(init_respects_caller_size)
{
    unsigned char buf[sizeof(attn_model) + 16];
    uint32_t small = (uint32_t)offsetof(attn_model, num_layers);
    memset(buf, 0x5a, sizeof buf);
    attn_model_init((attn_model *)(void *)buf, small);
    attn_model head;
    memcpy(&head, buf, small);
    ck_assert_uint_eq(head.struct_size, small);
    ck_assert_int_eq(head.num_q_heads, 1);
    for (size_t i = small; i < sizeof buf; i++)
        ck_assert_msg(buf[i] == 0x5a, "attn_model_init wrote byte %zu past size %u", i, small);

    unsigned char lbuf[sizeof(attn_layer) + 8];
    uint32_t lsmall = (uint32_t)offsetof(attn_layer, window_right);
    memset(lbuf, 0x5a, sizeof lbuf);
    attn_layer_init((attn_layer *)(void *)lbuf, lsmall);
    for (size_t i = lsmall; i < sizeof lbuf; i++)
        ck_assert_msg(lbuf[i] == 0x5a, "attn_layer_init wrote byte %zu past size %u", i, lsmall);

    /* A caller whose struct is larger than this library's gets zeros after
     * the fields the library knows. */
    unsigned char big[sizeof(attn_model) + 16];
    memset(big, 0x5a, sizeof big);
    attn_model_init((attn_model *)(void *)big, (uint32_t)sizeof big);
    for (size_t i = sizeof(attn_model); i < sizeof big; i++)
        ck_assert_int_eq(big[i], 0);
    attn_model_init(NULL, sizeof(attn_model)); /* no crash */
    attn_layer_init(NULL, sizeof(attn_layer));
}
END_TEST

START_TEST(bad_arguments)
{
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 8, 2, 4);
    ck_assert_int_eq(attn_registry_plan(NULL, &m, &plan), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(plan);
    ck_assert_int_eq(attn_registry_plan(reg, NULL, &plan), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_registry_plan(reg, &m, NULL), ATTN_ERR_INVALID_ARGUMENT);
    m.struct_size = 8;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(plan);
    ck_assert_ptr_nonnull(strstr(attn_last_error(), "attn_model_init"));

    /* Layers whose elements disagree on their size. */
    attn_layer layers[4];
    for (int i = 0; i < 4; i++)
        attn_layer_init(&layers[i], sizeof layers[i]);
    layers[2].struct_size = 8;
    fake_model(&m, 8, 2, 4);
    m.layers = layers;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(plan);
    ck_assert_ptr_nonnull(strstr(attn_last_error(), "layers[2].struct_size 8"));
    layers[0].struct_size = 4;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(attn_last_error(), "attn_layer_init"));

    /* Accessors on bad arguments. */
    fake_model(&m, 8, 2, 4);
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    attn_plan_entry e = {.struct_size = 0};
    ck_assert_int_eq(attn_plan_entry_get(plan, 0, &e), ATTN_ERR_INVALID_ARGUMENT);
    e.struct_size = sizeof e;
    ck_assert_int_eq(attn_plan_entry_get(plan, 99, &e), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_plan_entry_get(NULL, 0, &e), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_plan_lookup(plan, 4, ATTN_PHASE_DECODE, &e), ATTN_ERR_NOT_FOUND);
    ck_assert_int_eq(attn_plan_lookup(plan, -1, ATTN_PHASE_DECODE, &e), ATTN_ERR_NOT_FOUND);
    ck_assert_int_eq(attn_plan_lookup(plan, 0, 7, &e), ATTN_ERR_NOT_FOUND);
    ck_assert_int_eq(attn_plan_lookup(plan, 0, ATTN_PHASE_VERIFY, &e), ATTN_ERR_NOT_FOUND);
    attn_plan_summary s = {.struct_size = 0};
    ck_assert_int_eq(attn_plan_summarize(plan, &s), ATTN_ERR_INVALID_ARGUMENT);
    attn_plan_free(plan);
    attn_plan_free(NULL);
    attn_registry_close(reg);
}
END_TEST

/* The entry a host built against an older header reads: only its bytes. */
START_TEST(entry_respects_caller_size)
{
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 8, 2, 4);
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    unsigned char buf[sizeof(attn_plan_entry) + 8];
    uint32_t small = (uint32_t)offsetof(attn_plan_entry, layers);
    memset(buf, 0x5a, sizeof buf);
    memcpy(buf, &small, sizeof small);
    ck_assert_int_eq(attn_plan_entry_get(plan, 1, (attn_plan_entry *)(void *)buf), ATTN_OK);
    attn_plan_entry head;
    memcpy(&head, buf, small);
    ck_assert_int_eq(head.phase, ATTN_PHASE_DECODE);
    ck_assert_int_eq(head.layer_kind, ATTN_LAYER_FULL);
    for (size_t i = small; i < sizeof buf; i++)
        ck_assert_int_eq(buf[i], 0x5a);
    attn_plan_free(plan);
    attn_registry_close(reg);
}
END_TEST

START_TEST(old_hosts_get_the_old_selection_layout)
{
    /* 0.4 grew attn_shape and with it the fields of attn_selection after
     * effective_shape. A host built against 0.3 (its attn_plan_entry ends
     * before effective_shape) reads entry.selection at 0.3's offsets, so it
     * gets a selection in that layout (core/abi_frozen.h); today's host gets
     * today's. */
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 8, 2, 4);
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    attn_plan_entry now = entry_of(plan, 1);
    ck_assert_ptr_nonnull(now.selection);
    ck_assert_ptr_eq(now.effective_shape, &now.selection->effective_shape);
    ck_assert_str_eq(now.selection->backend_name, "fake-good");
    ck_assert_str_eq(now.selection->message, "");
    attn_plan_entry old = {.struct_size = (uint32_t)offsetof(attn_plan_entry, effective_shape)};
    ck_assert_int_eq(attn_plan_entry_get(plan, 1, &old), ATTN_OK);
    const attn_selection_0_3 *o = (const attn_selection_0_3 *)(const void *)old.selection;
    ck_assert_uint_eq(o->struct_size, sizeof(attn_selection_0_3));
    ck_assert_str_eq(o->backend_name, "fake-good");
    ck_assert_ptr_eq(o->candidate, now.selection->candidate);
    ck_assert_int_eq(o->fallback_applied, 0);
    ck_assert_str_eq(o->message, "");
    ck_assert_int_eq(o->graph_capturable, now.selection->graph_capturable);
    attn_plan_free(plan);
    attn_registry_close(reg);
}
END_TEST

/* ---- validation before any plugin ----------------------------------- */

START_TEST(invalid_28_6_before_any_plugin)
{
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    fake_model(&m, 28, 6, 28);
    m.tp_size = 4; /* the model's own layout is reported first */
    assert_invalid(reg, &m, "requires num_heads (28) to be a multiple of num_kv_heads (6)");
    ck_assert_msg(!ts_is_loaded(ts_fake("good")), "a plugin was loaded for an invalid model");
    attn_registry_close(reg);
}
END_TEST

START_TEST(invalid_model_fields)
{
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    fake_model(&m, 32, 8, 4);
    m.head_dim = 0;
    assert_invalid(reg, &m, "head_dim must be positive (got 0)");
    fake_model(&m, 32, 8, 4);
    m.max_model_len = 0;
    assert_invalid(reg, &m,
                   "max_model_len must be positive (got 0): it is the kv capacity of every phase");
    fake_model(&m, 32, 8, 4);
    m.max_prefill_tokens = -5;
    assert_invalid(reg, &m, "max_prefill_tokens must be positive, or 0 for max_model_len (got -5)");
    fake_model(&m, 32, 8, 4);
    m.spec_tokens = -1;
    assert_invalid(reg, &m, "spec_tokens must be 0 (none) or positive (got -1)");
    fake_model(&m, 32, 8, 4);
    m.spec_tokens = 4096;
    assert_invalid(reg, &m,
                   "spec_tokens (4096) + 1 exceeds max_model_len (4096): the verified tokens are "
                   "among the keys");
    fake_model(&m, 32, 8, 4);
    m.spec_tokens = INT32_MAX; /* no overflow in spec_tokens + 1 */
    m.max_model_len = INT32_MAX;
    assert_invalid(reg, &m,
                   "spec_tokens (2147483647) + 1 exceeds max_model_len (2147483647): the verified "
                   "tokens are among the keys");
    fake_model(&m, 32, 8, 0);
    assert_invalid(reg, &m, "num_layers must be positive (got 0)");
    fake_model(&m, 32, 8, ATTN_MODEL_MAX_LAYERS + 1);
    assert_invalid(reg, &m, "num_layers (65537) exceeds the 65536 the registry plans");
    fake_model(&m, 32, 8, 4);
    m.q_dtype = 77;
    assert_invalid(reg, &m, "q_dtype 77 is not a known dtype");
    fake_model(&m, 32, 8, 4);
    m.softcap = -1.0f;
    assert_invalid(reg, &m, "softcap must be 0 (none) or a positive finite number (got -1)");
    fake_model(&m, 32, 8, 4);
    memset(m.arch, 'x', sizeof m.arch);
    assert_invalid(reg, &m, "arch is not NUL-terminated within 32 bytes");
    ck_assert(!ts_is_loaded(ts_fake("good")));
    attn_registry_close(reg);
}
END_TEST

START_TEST(invalid_layers)
{
    attn_registry *reg = open_fake(NULL);
    attn_layer layers[3];
    for (int i = 0; i < 3; i++)
        attn_layer_init(&layers[i], sizeof layers[i]);
    attn_model m;
    fake_model(&m, 8, 2, 3);
    m.layers = layers;
    layers[1].kind = 7;
    assert_invalid(reg, &m, "layer 1: kind 7 is not a known layer kind");
    layers[1].kind = ATTN_LAYER_SLIDING;
    assert_invalid(reg, &m,
                   "layer 1: a sliding window of (-1, -1) is unbounded: that is ATTN_LAYER_FULL");
    layers[1].window_left = -2;
    layers[1].window_right = 0;
    assert_invalid(reg, &m,
                   "layer 1: sliding window (-2, 0): each side must be -1 (unbounded) or >= 0");
    /* A full layer's window is not read. */
    layers[1].kind = ATTN_LAYER_FULL;
    attn_plan *plan;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    ck_assert_int_eq(entry_of(plan, 0).shape->window_left, -1);
    attn_plan_free(plan);
    ck_assert(ts_is_loaded(ts_fake("good")));
    attn_registry_close(reg);
}
END_TEST

/* ---- tensor parallelism ---------------------------------------------- */

static void assert_rank_heads(attn_registry *reg, int32_t q, int32_t kv, int32_t tp, int32_t rank_q,
                              int32_t rank_kv, int replicated)
{
    attn_model m;
    attn_plan *plan;
    fake_model(&m, q, kv, 2);
    m.tp_size = tp;
    attn_status st = plan_of(reg, &m, &plan);
    ck_assert_msg(st == ATTN_OK, "%d/%d tp %d: %s", (int)q, (int)kv, (int)tp, attn_last_error());
    attn_plan_summary s = summary_of(plan);
    ck_assert_int_eq(s.tp_size, tp);
    ck_assert_int_eq(s.rank_q_heads, rank_q);
    ck_assert_int_eq(s.rank_kv_heads, rank_kv);
    ck_assert_int_eq(s.kv_heads_replicated, replicated);
    for (size_t i = 0; i < s.num_entries; i++) {
        attn_plan_entry e = entry_of(plan, i);
        ck_assert_int_eq(e.shape->num_q_heads, rank_q);
        ck_assert_int_eq(e.shape->num_kv_heads, rank_kv);
    }
    attn_plan_free(plan);
}

START_TEST(tp_splits_heads)
{
    attn_registry *reg = open_fake(NULL);
    assert_rank_heads(reg, 32, 8, 1, 32, 8, 0);
    assert_rank_heads(reg, 32, 8, 2, 16, 4, 0);
    assert_rank_heads(reg, 32, 8, 8, 4, 1, 0);
    assert_rank_heads(reg, 32, 8, 16, 2, 1, 1);  /* replicated: one KV head per rank */
    assert_rank_heads(reg, 32, 2, 2, 16, 1, 0);  /* the Qwen3.5 shape at TP 2 */
    assert_rank_heads(reg, 32, 2, 4, 8, 1, 1);   /* and at TP 4 */
    assert_rank_heads(reg, 8, 1, 8, 1, 1, 1);    /* MQA */
    assert_rank_heads(reg, 16, 0, 4, 4, 4, 0);   /* MHA spelled 0 */
    assert_rank_heads(reg, 64, 64, 64, 1, 1, 0); /* MHA, one head per rank */
    attn_registry_close(reg);
}
END_TEST

START_TEST(tp_invalid_names_tp)
{
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    fake_model(&m, 32, 8, 2);
    m.tp_size = 3;
    assert_invalid(reg, &m, "requires num_heads (32) to be a multiple of tp (3)");
    fake_model(&m, 24, 6, 2);
    m.tp_size = 4;
    assert_invalid(reg, &m, "requires num_kv_heads (6) to be a multiple of tp (4)");
    fake_model(&m, 40, 4, 2);
    m.tp_size = 10;
    assert_invalid(reg, &m,
                   "requires tp (10) to be a multiple of num_kv_heads (4) when tp exceeds them "
                   "(each rank holds one replicated KV head)");
    fake_model(&m, 32, 8, 2);
    m.tp_size = 0;
    assert_invalid(reg, &m, "tp_size must be positive (got 0)");
    m.tp_size = -2;
    assert_invalid(reg, &m, "tp_size must be positive (got -2)");
    ck_assert(!ts_is_loaded(ts_fake("good")));
    attn_registry_close(reg);
}
END_TEST

/* ---- phases, groups, lookup ------------------------------------------ */

START_TEST(phases_and_capacities)
{
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 8, 2, 3);
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    attn_plan_summary s = summary_of(plan);
    ck_assert_int_eq(s.status, ATTN_OK);
    ck_assert_str_eq(s.message, "");
    ck_assert_uint_eq(s.num_entries, 2); /* one group (every layer full), prefill + decode */
    ck_assert_int_eq(s.num_layers, 3);
    ck_assert_int_eq(s.prefill_q_len, 4096); /* no chunk: the whole context */
    ck_assert_int_eq(s.decode_q_len, 1);
    ck_assert_int_eq(s.verify_q_len, 0);
    ck_assert_int_eq(s.max_kv_len, 4096);
    attn_plan_entry e = entry_of(plan, 0);
    ck_assert_int_eq(e.phase, ATTN_PHASE_PREFILL);
    ck_assert_int_eq(e.layer_kind, ATTN_LAYER_FULL);
    ck_assert_str_eq(e.layer_type, "full");
    ck_assert_uint_eq(e.num_layers, 3);
    ck_assert_int_eq(e.layers[0], 0);
    ck_assert_int_eq(e.layers[2], 2);
    ck_assert_int_eq(e.status, ATTN_OK);
    ck_assert_str_eq(e.message, "");
    ck_assert_int_eq(e.shape->max_q_len, 4096);
    ck_assert_int_eq(e.shape->max_kv_len, 4096);
    ck_assert_int_eq(e.shape->causal, 1);
    ck_assert_str_eq(e.selection->backend_name, "fake-good");
    ck_assert_int_eq(e.selection->fallback_applied, 0);
    e = entry_of(plan, 1);
    ck_assert_int_eq(e.phase, ATTN_PHASE_DECODE);
    ck_assert_int_eq(e.shape->max_q_len, 1);
    assert_partition(plan);
    attn_plan_free(plan);

    /* A chunk and speculative tokens. */
    m.max_prefill_tokens = 512;
    m.spec_tokens = 3;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    s = summary_of(plan);
    ck_assert_uint_eq(s.num_entries, 3);
    ck_assert_int_eq(s.prefill_q_len, 512);
    ck_assert_int_eq(s.verify_q_len, 4);
    e = entry_of(plan, 2);
    ck_assert_int_eq(e.phase, ATTN_PHASE_VERIFY);
    ck_assert_int_eq(e.shape->max_q_len, 4);
    ck_assert_int_eq(e.shape->max_kv_len, 4096);
    assert_partition(plan);
    attn_plan_free(plan);

    /* A chunk larger than the context is one sequence's whole context. */
    m.max_prefill_tokens = 1 << 20;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    ck_assert_int_eq(summary_of(plan).prefill_q_len, 4096);
    attn_plan_free(plan);
    attn_registry_close(reg);
}
END_TEST

/* Gemma-2 style: sliding and full layers alternate; softcap and sinks go to
 * every attention layer; a layer that is not attention gets its own group. */
START_TEST(groups_by_kind_and_window)
{
    attn_registry *reg = open_fake(NULL);
    enum { N = 7 };
    attn_layer layers[N];
    for (int i = 0; i < N; i++) {
        attn_layer_init(&layers[i], sizeof layers[i]);
        if (i % 2 == 0) {
            layers[i].kind = ATTN_LAYER_SLIDING;
            layers[i].window_left = 4095;
            layers[i].window_right = 0;
            layers[i].type_name = "sliding_attention";
        } else {
            layers[i].type_name = "full_attention";
        }
    }
    layers[4].window_left = 1023; /* another window: another group */
    layers[5].kind = ATTN_LAYER_NOT_ATTENTION;
    layers[5].type_name = "mamba";
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 16, 8, N);
    m.softcap = 50.0f;
    m.has_sinks = 1;
    m.layers = layers;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    attn_plan_summary s = summary_of(plan);
    /* groups by first layer: sliding 4095 {0,2,6}, full {1,3}, sliding 1023
     * {4}, mamba {5}; two phases each */
    ck_assert_uint_eq(s.num_entries, 8);
    attn_plan_entry e = entry_of(plan, 0);
    ck_assert_str_eq(e.layer_type, "sliding_attention");
    ck_assert_int_eq(e.layer_kind, ATTN_LAYER_SLIDING);
    ck_assert_uint_eq(e.num_layers, 3);
    ck_assert_int_eq(e.layers[0], 0);
    ck_assert_int_eq(e.layers[1], 2);
    ck_assert_int_eq(e.layers[2], 6);
    ck_assert_int_eq(e.shape->window_left, 4095);
    ck_assert_int_eq(e.shape->window_right, 0);
    ck_assert(e.shape->softcap == 50.0f);
    ck_assert_int_eq(e.shape->has_sinks, 1);
    e = entry_of(plan, 2);
    ck_assert_str_eq(e.layer_type, "full_attention");
    ck_assert_uint_eq(e.num_layers, 2);
    ck_assert_int_eq(e.layers[0], 1);
    ck_assert_int_eq(e.layers[1], 3);
    ck_assert_int_eq(e.shape->window_left, -1);
    ck_assert_int_eq(e.shape->window_right, -1);
    ck_assert(e.shape->softcap == 50.0f);
    e = entry_of(plan, 4);
    ck_assert_uint_eq(e.num_layers, 1);
    ck_assert_int_eq(e.layers[0], 4);
    ck_assert_int_eq(e.shape->window_left, 1023);
    e = entry_of(plan, 6);
    ck_assert_int_eq(e.layer_kind, ATTN_LAYER_NOT_ATTENTION);
    ck_assert_str_eq(e.layer_type, "mamba");
    ck_assert_int_eq(e.layers[0], 5);
    ck_assert_int_eq(e.status, ATTN_OK);
    ck_assert_ptr_null(e.shape);
    ck_assert_ptr_null(e.selection);
    ck_assert_str_eq(e.message,
                     "layers of type mamba are not attention: the registry plans no backend for "
                     "them");
    assert_partition(plan);
    attn_plan_entry found = {.struct_size = sizeof found};
    ck_assert_int_eq(attn_plan_lookup(plan, 6, ATTN_PHASE_DECODE, &found), ATTN_OK);
    ck_assert_int_eq(found.shape->window_left, 4095);
    ck_assert_int_eq(found.shape->max_q_len, 1);
    attn_plan_free(plan);

    /* The host's type names need only live during the call. */
    char name[16];
    snprintf(name, sizeof name, "conv");
    layers[5].type_name = name;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    memset(name, 'z', sizeof name - 1);
    ck_assert_str_eq(entry_of(plan, 6).layer_type, "conv");
    attn_plan_free(plan);
    attn_registry_close(reg);
}
END_TEST

/* A host built against a future, larger attn_layer: the stride is
 * layers[0].struct_size and the unknown tail is not read as a next layer. */
START_TEST(layer_stride_from_struct_size)
{
    struct future_layer {
        attn_layer base;
        int64_t added_later;
    } layers[4];
    for (int i = 0; i < 4; i++) {
        memset(&layers[i], 0, sizeof layers[i]);
        attn_layer_init(&layers[i].base, sizeof layers[i]);
        layers[i].added_later = -1;
    }
    layers[3].base.kind = ATTN_LAYER_SLIDING;
    layers[3].base.window_left = 127;
    layers[3].base.window_right = 0;
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 8, 8, 4);
    m.layers = &layers[0].base;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    attn_plan_summary s = summary_of(plan);
    ck_assert_uint_eq(s.num_entries, 4);
    ck_assert_uint_eq(entry_of(plan, 0).num_layers, 3);
    ck_assert_int_eq(entry_of(plan, 2).layers[0], 3);
    ck_assert_int_eq(entry_of(plan, 2).shape->window_left, 127);
    attn_plan_free(plan);
    attn_registry_close(reg);
}
END_TEST

/* A hostile model with a new window on every layer is grouped by sorting,
 * not pairwise, and every group is still planned. */
START_TEST(many_groups)
{
    enum { N = 3000 };
    attn_layer *layers = calloc(N, sizeof *layers);
    ck_assert_ptr_nonnull(layers);
    for (int i = 0; i < N; i++) {
        attn_layer_init(&layers[i], sizeof layers[i]);
        layers[i].kind = ATTN_LAYER_SLIDING;
        layers[i].window_left = N - i; /* groups sort the other way round */
        layers[i].window_right = 0;
    }
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 4, 1, N);
    m.layers = layers;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    attn_plan_summary s = summary_of(plan);
    ck_assert_uint_eq(s.num_entries, 2 * N);
    for (int i = 0; i < N; i++) {
        attn_plan_entry e = entry_of(plan, (size_t)(2 * i));
        ck_assert_int_eq(e.layers[0], i);
        ck_assert_int_eq(e.shape->window_left, N - i);
    }
    attn_plan_free(plan);
    attn_registry_close(reg);
    free(layers);
}
END_TEST

/* ---- failures ------------------------------------------------------- */

START_TEST(unsupported_entries_named)
{
    /* fake-good rejects head_dim > 64: every attention entry fails, and the
     * layers that are not attention still plan. */
    attn_registry *reg = open_fake("[params]\nmax_head_dim = 64\n");
    attn_layer layers[2];
    attn_layer_init(&layers[0], sizeof layers[0]);
    layers[0].kind = ATTN_LAYER_NOT_ATTENTION;
    layers[0].type_name = "linear_attention";
    attn_layer_init(&layers[1], sizeof layers[1]);
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 8, 2, 2);
    m.layers = layers;
    attn_status st = plan_of(reg, &m, &plan);
    ck_assert_int_eq(st, ATTN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(plan);
    attn_plan_summary s = summary_of(plan);
    ck_assert_int_eq(s.status, ATTN_ERR_UNSUPPORTED);
    ck_assert_uint_eq(s.num_entries, 4);
    ck_assert_ptr_nonnull(
        strstr(s.message, "no backend for the prefill phase of full layer 1: no backend accepts"));
    ck_assert_ptr_nonnull(strstr(s.message, "head_dim 128 > 64"));
    ck_assert_str_eq(attn_last_error(), s.message);
    attn_plan_entry e = entry_of(plan, 0);
    ck_assert_int_eq(e.status, ATTN_OK); /* linear attention: nothing to select */
    e = entry_of(plan, 2);
    ck_assert_int_eq(e.status, ATTN_ERR_UNSUPPORTED);
    ck_assert_ptr_null(e.selection->backend_name);
    ck_assert_ptr_nonnull(strstr(e.message, "fake-good: HEAD_DIM: head_dim 128 > 64"));
    e = entry_of(plan, 3);
    ck_assert_int_eq(e.status, ATTN_ERR_UNSUPPORTED);
    attn_plan_free(plan);

    /* A model the plugin accepts plans through the same registry. */
    m.head_dim = 64;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    attn_plan_free(plan);
    attn_registry_close(reg);
}
END_TEST

START_TEST(forced_backend_rejects)
{
    ts_write_plugin_ini(ts_dir(), "good.ini", "fake-good", ts_fake("good"), 10, "fake",
                        "[params]\nmax_head_dim = 64\n");
    ts_write_plugin_ini(ts_dir(), "alpha.ini", "fake-alpha", ts_fake("alpha"), 5, "fake", NULL);
    const char *dirs[1] = {ts_dir()};
    attn_registry_options opt;
    ts_options(&opt, dirs, 1);
    opt.forced_backend = "fake-good";
    attn_registry *reg = NULL;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 8, 2, 2);
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_ERR_BACKEND_REJECTED);
    ck_assert_ptr_nonnull(strstr(summary_of(plan).message, "forced backend fake-good rejects"));
    attn_plan_free(plan);
    attn_registry_close(reg);
}
END_TEST

/* The plan owns its strings: it outlives the registry (the candidate
 * pointer does not, and is not read here). */
START_TEST(plan_outlives_registry)
{
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 8, 2, 2);
    m.spec_tokens = 1;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    attn_registry_close(reg);
    attn_plan_entry e = entry_of(plan, 2);
    ck_assert_str_eq(e.selection->backend_name, "fake-good");
    ck_assert_str_eq(e.selection->message, "");
    ck_assert_int_eq(e.selection->effective_shape.max_q_len, 2);
    attn_plan_free(plan);
}
END_TEST

/* A selection from the plan constructs the backend, as select's does. */
START_TEST(entry_selection_creates_backend)
{
    attn_registry *reg = open_fake(NULL);
    attn_model m;
    attn_plan *plan;
    fake_model(&m, 8, 2, 2);
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    attn_plan_entry e = {.struct_size = sizeof e};
    ck_assert_int_eq(attn_plan_lookup(plan, 1, ATTN_PHASE_DECODE, &e), ATTN_OK);
    attn_backend *b = NULL;
    attn_status st = attn_backend_create(reg, e.selection, &b);
    ck_assert_msg(st == ATTN_OK, "create: %s", attn_last_error());
    ck_assert_str_eq(attn_backend_name(b), "fake-good");
    ck_assert_int_eq(attn_backend_shape(b)->max_q_len, 1);
    attn_backend_destroy(b);
    attn_plan_free(plan);
    attn_registry_close(reg);
}
END_TEST

/* ---- the shipped plugins ---------------------------------------------- */

static void assert_qwen35(int32_t tp, const char *verify_backend)
{
    attn_registry *reg = ts_open_dir(ATTNREG_TEST_CONF_DIR);
    attn_layer layers[60];
    attn_model m;
    attn_plan *plan;
    ts_qwen35_model(&m, layers, tp);
    attn_status st = plan_of(reg, &m, &plan);
    ck_assert_msg(st == ATTN_OK, "tp %d: %s", (int)tp, attn_last_error());
    attn_plan_summary s = summary_of(plan);
    ck_assert_uint_eq(s.num_entries, 6);
    ck_assert_int_eq(s.rank_q_heads, 32 / tp);
    ck_assert_int_eq(s.rank_kv_heads, tp <= 2 ? 2 / tp : 1);
    /* entries 0-2: linear attention (layers 0-2, 4-6, ...), 3-5: full */
    for (size_t i = 0; i < 3; i++) {
        attn_plan_entry e = entry_of(plan, i);
        ck_assert_str_eq(e.layer_type, "linear_attention");
        ck_assert_uint_eq(e.num_layers, 45);
        ck_assert_ptr_null(e.selection);
    }
    static const char *const expect[3] = {"aiter-generic", "aiter-generic", NULL};
    for (size_t i = 3; i < 6; i++) {
        attn_plan_entry e = entry_of(plan, i);
        ck_assert_str_eq(e.layer_type, "full");
        ck_assert_uint_eq(e.num_layers, 15);
        ck_assert_int_eq(e.layers[0], 3);
        ck_assert_int_eq(e.layers[14], 59);
        ck_assert_int_eq(e.phase, (int32_t)(i - 3));
        ck_assert_str_eq(e.selection->backend_name, expect[i - 3] ? expect[i - 3] : verify_backend);
        ck_assert_int_eq(e.selection->fallback_applied, 0);
    }
    attn_plan_entry e = {.struct_size = sizeof e};
    ck_assert_int_eq(attn_plan_lookup(plan, 59, ATTN_PHASE_VERIFY, &e), ATTN_OK);
    ck_assert_int_eq(e.shape->max_q_len, 4);
    ck_assert_int_eq(e.shape->num_q_heads / e.shape->num_kv_heads, 32 / 2 / (tp <= 2 ? 1 : tp / 2));
    ck_assert_str_eq(e.selection->backend_name, verify_backend);
    assert_partition(plan);
    attn_plan_free(plan);
    attn_registry_close(reg);
}

START_TEST(qwen35_mtp_verify_tp1)
{
    assert_qwen35(1, "aiter-mtp-gfx950");
}
END_TEST

START_TEST(qwen35_mtp_verify_tp2)
{
    assert_qwen35(2, "aiter-mtp-gfx950");
}
END_TEST

/* At TP 4 a rank has 8 query heads over its replicated KV head: ratio 8,
 * which the MTP kernel declines. */
START_TEST(qwen35_tp4_generic_verify)
{
    assert_qwen35(4, "aiter-generic");
}
END_TEST

/* FP8 compute on gfx942 with grouped heads: every entry records the
 * fallback rule and the rejection that motivated it. */
START_TEST(fallback_recorded_per_entry)
{
    attn_registry *reg = ts_open_dir(ATTNREG_TEST_CONF_DIR);
    attn_model m;
    attn_plan *plan;
    attn_model_init(&m, sizeof m);
    snprintf(m.arch, sizeof m.arch, "gfx942");
    m.num_q_heads = 32;
    m.num_kv_heads = 8;
    m.num_layers = 32;
    m.kv_dtype = m.compute_dtype = ATTN_DTYPE_FP8_E4M3FNUZ;
    m.max_model_len = 8192;
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_OK);
    for (size_t i = 0; i < 2; i++) {
        attn_plan_entry e = entry_of(plan, i);
        ck_assert_str_eq(e.selection->backend_name, "aiter-generic");
        ck_assert_int_eq(e.selection->fallback_applied, 1);
        ck_assert_str_eq(e.selection->fallback_rule, "compute_dtype fp8_e4m3fnuz -> bf16");
        ck_assert_str_eq(e.selection->fallback_backend, "aiter-generic");
        ck_assert_int_eq(e.selection->fallback_reason, ATTN_REASON_FP8_COMPUTE_MHA_ONLY);
        ck_assert_int_eq(e.selection->effective_shape.compute_dtype, ATTN_DTYPE_BF16);
        ck_assert_int_eq(e.shape->compute_dtype, ATTN_DTYPE_FP8_E4M3FNUZ); /* as asked */
    }
    attn_plan_free(plan);
    attn_registry_close(reg);

    const char *dirs[1] = {ATTNREG_TEST_CONF_DIR};
    attn_registry_options opt;
    ts_options(&opt, dirs, 1);
    opt.strict = 1;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    ck_assert_int_eq(plan_of(reg, &m, &plan), ATTN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(summary_of(plan).message, "FP8_COMPUTE_MHA_ONLY"));
    attn_plan_free(plan);
    attn_registry_close(reg);
}
END_TEST

Suite *plan_suite(void);

Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *abi = tcase_create("abi");
    TCase *validation = tcase_create("validation");
    TCase *tp = tcase_create("tensor_parallel");
    TCase *groups = tcase_create("groups");
    TCase *failures = tcase_create("failures");
    TCase *shipped = tcase_create("shipped");
    TCase *all[] = {abi, validation, tp, groups, failures, shipped};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        ts_add_fixtures(all[i], 60);
        suite_add_tcase(s, all[i]);
    }
    tcase_add_test(abi, model_defaults);
    tcase_add_test(abi, init_respects_caller_size);
    tcase_add_test(abi, bad_arguments);
    tcase_add_test(abi, entry_respects_caller_size);
    tcase_add_test(abi, old_hosts_get_the_old_selection_layout);
    tcase_add_test(validation, invalid_28_6_before_any_plugin);
    tcase_add_test(validation, invalid_model_fields);
    tcase_add_test(validation, invalid_layers);
    tcase_add_test(tp, tp_splits_heads);
    tcase_add_test(tp, tp_invalid_names_tp);
    tcase_add_test(groups, phases_and_capacities);
    tcase_add_test(groups, groups_by_kind_and_window);
    tcase_add_test(groups, layer_stride_from_struct_size);
    tcase_add_test(groups, many_groups);
    tcase_add_test(failures, unsupported_entries_named);
    tcase_add_test(failures, forced_backend_rejects);
    tcase_add_test(failures, plan_outlives_registry);
    tcase_add_test(failures, entry_selection_creates_backend);
    tcase_add_test(shipped, qwen35_mtp_verify_tp1);
    tcase_add_test(shipped, qwen35_mtp_verify_tp2);
    tcase_add_test(shipped, qwen35_tp4_generic_verify);
    tcase_add_test(shipped, fallback_recorded_per_entry);
    return s;
}

int main(void)
{
    return ts_run(plan_suite());
}
