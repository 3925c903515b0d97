/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_hf_config.c — the config.json reader behind `attnreg plan`.
 *
 * On the configs in tests/hf_configs/ (written from the published configs
 * of Llama 3.1 8B, Qwen3.5-397B-A17B, Qwen3-Next-80B-A3B, Mistral 7B v0.1,
 * Gemma 2 9B, Gemma 2B, gpt-oss-20b, DeepSeek-V3 and a Qwen2 config changed
 * to 28 query heads over 6 KV heads): the numbers, the layer kinds, the
 * window mapping; then through attn_registry_plan on the shipped conf. On
 * broken files written here: every error names the file and the key, and
 * nothing a file holds (bad JSON, huge numbers, wrong types, deep nesting,
 * NUL bytes, a huge file) crashes the reader or leaks.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attnreg.h"
#include "hf_config.h"
#include "support/test_support.h"

#ifndef ATTNREG_HF_CONFIG_DIR
#error "ATTNREG_HF_CONFIG_DIR must point at tests/hf_configs"
#endif

static char err[1024];

static hf_config read_ok(const char *name)
{
    hf_config cfg;
    const char *path = ts_join(ATTNREG_HF_CONFIG_DIR, name);
    hf_config_status st = hf_config_read(path, &cfg, err, sizeof err);
    ck_assert_msg(st == HF_CONFIG_OK, "%s: status %d: %s", name, (int)st, err);
    return cfg;
}

/* Writes `text` as a config in the test's folder and reads it. */
static hf_config_status read_text(const char *text, hf_config *cfg)
{
    const char *path = ts_write(ts_dir(), "config.json", text);
    memset(err, 0, sizeof err);
    return hf_config_read(path, cfg, err, sizeof err);
}

static void expect_error(const char *text, hf_config_status status, const char *needle)
{
    hf_config cfg;
    hf_config_status st = read_text(text, &cfg);
    ck_assert_msg(st == status, "status %d, expected %d: %s\n%s", (int)st, (int)status, err, text);
    ck_assert_msg(strstr(err, needle) != NULL, "'%s' not in '%s'", needle, err);
    ck_assert_msg(strstr(err, "config.json") != NULL, "the error names no file: %s", err);
    ck_assert_ptr_null(cfg.layers); /* nothing to free */
    ck_assert_uint_eq(cfg.num_notes, 0);
}

static int has_note(const hf_config *cfg, const char *needle)
{
    for (size_t k = 0; k < cfg->num_notes; k++)
        if (strstr(cfg->notes[k], needle))
            return 1;
    return 0;
}

static void assert_layer(const hf_config *cfg, int i, int kind, int left, int right)
{
    const attn_layer *l = &cfg->layers[i];
    ck_assert_msg(l->kind == kind, "layer %d kind %d, expected %d", i, (int)l->kind, kind);
    if (kind == ATTN_LAYER_SLIDING) {
        ck_assert_int_eq(l->window_left, left);
        ck_assert_int_eq(l->window_right, right);
    }
}

/* A small valid config with `extra` keys spliced in. */
static const char *with(const char *extra)
{
    static char buf[8192];
    snprintf(buf, sizeof buf,
             "{\n  \"model_type\": \"llama\",\n  \"num_attention_heads\": 8,\n"
             "  \"num_key_value_heads\": 2,\n  \"head_dim\": 64,\n  \"num_hidden_layers\": 4,\n"
             "  \"max_position_embeddings\": 4096%s%s\n}\n",
             extra[0] ? ",\n  " : "", extra);
    return buf;
}

/* ---- the published configs ---------------------------------------------- */

START_TEST(llama_gqa)
{
    hf_config cfg = read_ok("llama-3.1-8b.json");
    ck_assert_str_eq(cfg.model_type, "llama");
    ck_assert_int_eq(cfg.from_text_config, 0);
    ck_assert_int_eq(cfg.num_q_heads, 32);
    ck_assert_int_eq(cfg.num_kv_heads, 8);
    ck_assert_int_eq(cfg.head_dim, 128); /* 4096 / 32 */
    ck_assert(has_note(&cfg, "head_dim absent: hidden_size 4096 / num_attention_heads 32 = 128"));
    ck_assert_int_eq(cfg.num_layers, 32);
    ck_assert_int_eq(cfg.max_position_embeddings, 131072);
    ck_assert(cfg.softcap == 0.0f);
    ck_assert_int_eq(cfg.has_sinks, 0);
    for (int i = 0; i < 32; i++)
        assert_layer(&cfg, i, ATTN_LAYER_FULL, -1, -1);

    attn_model m;
    attn_model_init(&m, sizeof m);
    hf_config_apply(&cfg, &m);
    ck_assert_int_eq(m.num_q_heads, 32);
    ck_assert_int_eq(m.num_kv_heads, 8);
    ck_assert_int_eq(m.head_dim, 128);
    ck_assert_int_eq(m.head_dim_v, 0);
    ck_assert_int_eq(m.num_layers, 32);
    ck_assert_ptr_eq(m.layers, cfg.layers);
    ck_assert_int_eq(m.max_model_len, 131072);
    hf_config_free(&cfg);
    hf_config_free(&cfg); /* twice is harmless */
}
END_TEST

START_TEST(qwen35_text_config_layer_types)
{
    hf_config cfg = read_ok("qwen3.5-397b-a17b.json");
    ck_assert_int_eq(cfg.from_text_config, 1);
    ck_assert_str_eq(cfg.model_type, "qwen3_5_moe_text");
    ck_assert_int_eq(cfg.num_q_heads, 32);
    ck_assert_int_eq(cfg.num_kv_heads, 2);
    ck_assert_int_eq(cfg.head_dim, 256);
    ck_assert_int_eq(cfg.num_layers, 60);
    ck_assert_int_eq(cfg.max_position_embeddings, 262144);
    for (int i = 0; i < 60; i++)
        assert_layer(&cfg, i, (i + 1) % 4 ? ATTN_LAYER_NOT_ATTENTION : ATTN_LAYER_FULL, 0, 0);
    ck_assert_str_eq(cfg.layers[0].type_name, "linear_attention");
    ck_assert_ptr_eq(cfg.layers[0].type_name, cfg.layers[58].type_name); /* interned */
    ck_assert_str_eq(cfg.layers[3].type_name, "full_attention");
    ck_assert(has_note(&cfg, "text_config"));
    ck_assert(has_note(&cfg, "mtp_num_hidden_layers 1"));
    hf_config_free(&cfg);
}
END_TEST

START_TEST(qwen3_next_interval)
{
    hf_config cfg = read_ok("qwen3-next-80b-a3b.json");
    ck_assert_int_eq(cfg.num_layers, 48);
    ck_assert_int_eq(cfg.num_q_heads, 16);
    ck_assert_int_eq(cfg.num_kv_heads, 2);
    for (int i = 0; i < 48; i++)
        assert_layer(&cfg, i, (i + 1) % 4 ? ATTN_LAYER_NOT_ATTENTION : ATTN_LAYER_FULL, 0, 0);
    ck_assert(has_note(&cfg, "every 4th layer is full_attention"));
    hf_config_free(&cfg);
}
END_TEST

START_TEST(mistral_sliding_every_layer)
{
    hf_config cfg = read_ok("mistral-7b-v0.1.json");
    for (int i = 0; i < 32; i++)
        assert_layer(&cfg, i, ATTN_LAYER_SLIDING, 4095, 0);
    ck_assert_str_eq(cfg.layers[0].type_name, "sliding_attention");
    ck_assert(has_note(&cfg, "sliding_window 4096 applies to every layer"));
    ck_assert(has_note(&cfg, "is the window (4095, 0)"));
    hf_config_free(&cfg);
}
END_TEST

START_TEST(gemma2_alternating_softcap)
{
    hf_config cfg = read_ok("gemma-2-9b.json");
    ck_assert_int_eq(cfg.num_q_heads, 16);
    ck_assert_int_eq(cfg.num_kv_heads, 8);
    ck_assert_int_eq(cfg.head_dim, 256);
    ck_assert(cfg.softcap == 50.0f);
    for (int i = 0; i < 42; i++)
        assert_layer(&cfg, i, i % 2 ? ATTN_LAYER_FULL : ATTN_LAYER_SLIDING, 4095, 0);
    ck_assert(has_note(&cfg, "Gemma 2 alternates"));
    hf_config_free(&cfg);
}
END_TEST

START_TEST(gemma_mqa)
{
    hf_config cfg = read_ok("gemma-2b.json");
    ck_assert_int_eq(cfg.num_q_heads, 8);
    ck_assert_int_eq(cfg.num_kv_heads, 1);
    ck_assert_int_eq(cfg.head_dim, 256);
    ck_assert_int_eq(cfg.num_layers, 18);
    hf_config_free(&cfg);
}
END_TEST

START_TEST(gpt_oss_sinks)
{
    hf_config cfg = read_ok("gpt-oss-20b.json");
    ck_assert_int_eq(cfg.has_sinks, 1);
    ck_assert(has_note(&cfg, "sinks"));
    for (int i = 0; i < 24; i++)
        assert_layer(&cfg, i, i % 2 ? ATTN_LAYER_FULL : ATTN_LAYER_SLIDING, 127, 0);
    hf_config_free(&cfg);
}
END_TEST

START_TEST(deepseek_mla_refused)
{
    hf_config cfg;
    const char *path = ts_join(ATTNREG_HF_CONFIG_DIR, "deepseek-v3.json");
    ck_assert_int_eq(hf_config_read(path, &cfg, err, sizeof err), HF_CONFIG_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(err, "deepseek-v3.json: kv_lora_rank: set (512)"));
    ck_assert_ptr_nonnull(strstr(err, "multi-head latent attention (MLA"));
    ck_assert_ptr_nonnull(strstr(err, "no backend here handles latent attention"));
    ck_assert_ptr_null(cfg.layers);
}
END_TEST

START_TEST(malformed_kv_heads_file)
{
    hf_config cfg;
    const char *path = ts_join(ATTNREG_HF_CONFIG_DIR, "malformed-kv-heads.json");
    ck_assert_int_eq(hf_config_read(path, &cfg, err, sizeof err), HF_CONFIG_MALFORMED);
    ck_assert_ptr_nonnull(strstr(err, "num_key_value_heads: expected an integer, got a string"));
}
END_TEST

/* ---- through the plan ------------------------------------------------- */

static attn_plan *plan_config(attn_registry *reg, const char *name, hf_config *cfg, int32_t tp,
                              attn_status expect)
{
    *cfg = read_ok(name);
    attn_model m;
    attn_model_init(&m, sizeof m);
    snprintf(m.arch, sizeof m.arch, "gfx950");
    m.kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
    hf_config_apply(cfg, &m);
    m.tp_size = tp;
    m.max_model_len = 32768;
    m.max_prefill_tokens = 8192;
    m.spec_tokens = 3;
    attn_plan *plan = NULL;
    attn_status st = attn_registry_plan(reg, &m, &plan);
    ck_assert_msg(st == expect, "%s tp %d: %s: %s", name, (int)tp, attn_status_name(st),
                  attn_last_error());
    return plan;
}

static const char *backend_at(const attn_plan *plan, int32_t layer, int32_t phase)
{
    attn_plan_entry e = {.struct_size = sizeof e};
    ck_assert_int_eq(attn_plan_lookup(plan, layer, phase, &e), ATTN_OK);
    return e.selection ? e.selection->backend_name : NULL;
}

START_TEST(qwen35_plans_mtp_verify_tp1_tp2)
{
    attn_registry *reg = ts_open_dir(ATTNREG_TEST_CONF_DIR);
    for (int32_t tp = 1; tp <= 2; tp++) {
        hf_config cfg;
        attn_plan *plan = plan_config(reg, "qwen3.5-397b-a17b.json", &cfg, tp, ATTN_OK);
        for (int32_t layer = 3; layer < 60; layer += 4) {
            ck_assert_str_eq(backend_at(plan, layer, ATTN_PHASE_VERIFY), "aiter-mtp-gfx950");
            ck_assert_str_eq(backend_at(plan, layer, ATTN_PHASE_DECODE), "aiter-generic");
            ck_assert_str_eq(backend_at(plan, layer, ATTN_PHASE_PREFILL), "aiter-generic");
        }
        ck_assert_ptr_null(backend_at(plan, 0, ATTN_PHASE_VERIFY)); /* linear attention */
        attn_plan_free(plan);
        hf_config_free(&cfg);
    }
    /* TP 3 does not divide the 32 query heads. */
    hf_config cfg;
    attn_plan *plan = plan_config(reg, "qwen3.5-397b-a17b.json", &cfg, 3, ATTN_ERR_INVALID_SHAPE);
    ck_assert_str_eq(attn_last_error(), "requires num_heads (32) to be a multiple of tp (3)");
    attn_plan_free(plan);
    hf_config_free(&cfg);
    attn_registry_close(reg);
}
END_TEST

START_TEST(invalid_28_6_config_plans_invalid)
{
    attn_registry *reg = ts_open_dir(ATTNREG_TEST_CONF_DIR);
    hf_config cfg;
    attn_plan *plan = plan_config(reg, "invalid-28-6.json", &cfg, 1, ATTN_ERR_INVALID_SHAPE);
    ck_assert_str_eq(attn_last_error(),
                     "requires num_heads (28) to be a multiple of num_kv_heads (6)");
    ck_assert(has_note(&cfg, "use_sliding_window is false"));
    attn_plan_free(plan);
    hf_config_free(&cfg);
    attn_registry_close(reg);
}
END_TEST

START_TEST(gemma2_plan_windows_softcap)
{
    attn_registry *reg = ts_open_dir(ATTNREG_TEST_CONF_DIR);
    hf_config cfg;
    attn_plan *plan = plan_config(reg, "gemma-2-9b.json", &cfg, 2, ATTN_OK);
    attn_plan_entry e = {.struct_size = sizeof e};
    ck_assert_int_eq(attn_plan_lookup(plan, 40, ATTN_PHASE_DECODE, &e), ATTN_OK);
    ck_assert_int_eq(e.shape->window_left, 4095);
    ck_assert_int_eq(e.shape->window_right, 0);
    ck_assert(e.shape->softcap == 50.0f);
    ck_assert_int_eq(e.shape->num_q_heads, 8);
    ck_assert_int_eq(e.shape->num_kv_heads, 4);
    ck_assert_uint_eq(e.num_layers, 21);
    /* Softcap and a window: the MTP kernel declines verify, the generic
     * kernel takes it. */
    ck_assert_str_eq(backend_at(plan, 41, ATTN_PHASE_VERIFY), "aiter-generic");
    attn_plan_free(plan);
    hf_config_free(&cfg);
    attn_registry_close(reg);
}
END_TEST

/* ---- derivation rules ------------------------------------------------- */

START_TEST(derived_layer_kinds)
{
    hf_config cfg;
    /* Qwen2: use_sliding_window with max_window_layers. */
    ck_assert_int_eq(read_text(with("\"sliding_window\": 1024, \"use_sliding_window\": true, "
                                    "\"max_window_layers\": 2"),
                               &cfg),
                     HF_CONFIG_OK);
    assert_layer(&cfg, 0, ATTN_LAYER_FULL, 0, 0);
    assert_layer(&cfg, 1, ATTN_LAYER_FULL, 0, 0);
    assert_layer(&cfg, 2, ATTN_LAYER_SLIDING, 1023, 0);
    assert_layer(&cfg, 3, ATTN_LAYER_SLIDING, 1023, 0);
    hf_config_free(&cfg);
    /* use_sliding_window false: the window is not used. */
    ck_assert_int_eq(
        read_text(with("\"sliding_window\": 1024, \"use_sliding_window\": false"), &cfg),
        HF_CONFIG_OK);
    for (int i = 0; i < 4; i++)
        assert_layer(&cfg, i, ATTN_LAYER_FULL, 0, 0);
    hf_config_free(&cfg);
    /* sliding_window null: none. */
    ck_assert_int_eq(read_text(with("\"sliding_window\": null"), &cfg), HF_CONFIG_OK);
    assert_layer(&cfg, 2, ATTN_LAYER_FULL, 0, 0);
    hf_config_free(&cfg);
    /* sliding_window_pattern 2 (Cohere 2, Gemma 3 style). */
    ck_assert_int_eq(
        read_text(with("\"sliding_window\": 512, \"sliding_window_pattern\": 2"), &cfg),
        HF_CONFIG_OK);
    assert_layer(&cfg, 0, ATTN_LAYER_SLIDING, 511, 0);
    assert_layer(&cfg, 1, ATTN_LAYER_FULL, 0, 0);
    assert_layer(&cfg, 2, ATTN_LAYER_SLIDING, 511, 0);
    assert_layer(&cfg, 3, ATTN_LAYER_FULL, 0, 0);
    hf_config_free(&cfg);
    /* Gemma 3 from its model type: five sliding, then one full. */
    ck_assert_int_eq(read_text("{\"model_type\": \"gemma3_text\", \"num_attention_heads\": 8, "
                               "\"num_key_value_heads\": 4, \"head_dim\": 256, "
                               "\"num_hidden_layers\": 12, \"sliding_window\": 1024}",
                               &cfg),
                     HF_CONFIG_OK);
    for (int i = 0; i < 12; i++)
        assert_layer(&cfg, i, (i + 1) % 6 ? ATTN_LAYER_SLIDING : ATTN_LAYER_FULL, 1023, 0);
    ck_assert_int_eq(cfg.max_position_embeddings, 0); /* absent */
    hf_config_free(&cfg);
    /* num_key_value_heads absent = MHA; unknown layer types are not attention. */
    ck_assert_int_eq(read_text("{\"num_attention_heads\": 12, \"hidden_size\": 768, "
                               "\"num_hidden_layers\": 3, \"layer_types\": [\"conv\", "
                               "\"full_attention\", \"conv\"]}",
                               &cfg),
                     HF_CONFIG_OK);
    ck_assert_int_eq(cfg.num_kv_heads, 12);
    ck_assert_int_eq(cfg.head_dim, 64);
    ck_assert(has_note(&cfg, "num_key_value_heads absent"));
    assert_layer(&cfg, 0, ATTN_LAYER_NOT_ATTENTION, 0, 0);
    assert_layer(&cfg, 1, ATTN_LAYER_FULL, 0, 0);
    ck_assert_str_eq(cfg.layers[2].type_name, "conv");
    ck_assert_uint_eq(cfg.num_type_names, 1);
    hf_config_free(&cfg);
    /* Falcon: multi_query means one KV head, num_kv_heads is its GQA key. */
    ck_assert_int_eq(read_text("{\"model_type\": \"falcon\", \"num_attention_heads\": 71, "
                               "\"hidden_size\": 4544, \"num_hidden_layers\": 32, "
                               "\"multi_query\": true, \"alibi\": false}",
                               &cfg),
                     HF_CONFIG_OK);
    ck_assert_int_eq(cfg.num_kv_heads, 1);
    ck_assert_int_eq(cfg.head_dim, 64);
    ck_assert(has_note(&cfg, "multi_query is true, so one KV head"));
    hf_config_free(&cfg);
    ck_assert_int_eq(read_text("{\"model_type\": \"falcon\", \"num_attention_heads\": 128, "
                               "\"num_kv_heads\": 8, \"head_dim\": 64, \"num_hidden_layers\": 2, "
                               "\"multi_query\": true}",
                               &cfg),
                     HF_CONFIG_OK);
    ck_assert_int_eq(cfg.num_kv_heads, 8);
    hf_config_free(&cfg);
    /* Integer softcap is a number too. */
    ck_assert_int_eq(read_text(with("\"attn_logit_softcapping\": 30"), &cfg), HF_CONFIG_OK);
    ck_assert(cfg.softcap == 30.0f);
    hf_config_free(&cfg);
}
END_TEST

/* ---- errors ------------------------------------------------------------- */

/* A FIFO named as the config used to block the open forever (the
 * reader had fopen without O_NONBLOCK); it is refused at once. The test
 * runs the read in a forked child with an alarm, so a regression fails
 * instead of hanging the suite. */
START_TEST(fifo_config_refused)
{
    const char *fifo = ts_join(ts_dir(), "config-fifo.json");
    unlink(fifo);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(5);
        hf_config cfg;
        char why[512];
        hf_config_status st = hf_config_read(fifo, &cfg, why, sizeof why);
        _exit(st == HF_CONFIG_IO && strstr(why, "a FIFO, not a regular file") ? 0 : 1);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "reading a FIFO config: wait status %d (SIGALRM = blocked)", status);
    unlink(fifo);
}
END_TEST

/* CPU seconds to read a config of n layers, each of a distinct type name. */
static double read_distinct_types(int n)
{
    size_t cap = (size_t)n * 16 + 256, len = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    len += (size_t)snprintf(text + len, cap - len,
                            "{\"num_attention_heads\": 8, \"num_key_value_heads\": 8, "
                            "\"hidden_size\": 512, \"num_hidden_layers\": %d, "
                            "\"layer_types\": [",
                            n);
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(text + len, cap - len, "%s\"t%d\"", i ? "," : "", i);
    snprintf(text + len, cap - len, "]}");
    const char *path = ts_write(ts_dir(), "config.json", text);
    free(text);
    hf_config cfg;
    clock_t t0 = clock();
    hf_config_status st = hf_config_read(path, &cfg, err, sizeof err);
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (st == HF_CONFIG_OK) {
        ck_assert_uint_eq(cfg.num_type_names, (size_t)n);
        hf_config_free(&cfg);
    }
    return cpu;
}

/* 65 536 distinct layer type names were interned by linear search
 * (12 s of CPU in plan --hf-config before the config was judged). Linear
 * time: 16 times the names cost about 16 times the CPU, where the search
 * cost 256 times; compared with a ratio so that valgrind's slowdown (the
 * suite runs under it in .ci/run) does not matter. */
START_TEST(many_layer_type_names_in_linear_time)
{
    double small = read_distinct_types(4096), big = read_distinct_types(65536);
    ck_assert_msg(big < 64 * (small > 0.001 ? small : 0.001),
                  "4096 names: %.3f s of CPU, 65536 names: %.3f s (not linear)", small, big);
}
END_TEST

/* What an error quotes from the file (jansson's "near '...'"
 * token, a key) reaches a terminal: its control bytes come out as \xNN. */
START_TEST(quoted_control_bytes_escaped)
{
    hf_config cfg;
    const char *bad = ts_write(ts_dir(), "config.json", "\x1b[2J\x1b]0;owned\x07\n");
    ck_assert_int_eq(hf_config_read(bad, &cfg, err, sizeof err), HF_CONFIG_MALFORMED);
    for (const char *p = err; *p; p++)
        ck_assert_msg((unsigned char)*p >= 0x20 && *p != 0x7f, "raw control byte 0x%02x in: %s",
                      (unsigned char)*p, err);
    ck_assert_msg(strstr(err, "\\x1b"), "%s", err);
    const char *key =
        ts_write(ts_dir(), "config.json", "{\"num_attention_heads\": \"\\u001b[31m\\n\"}");
    ck_assert_int_ne(hf_config_read(key, &cfg, err, sizeof err), HF_CONFIG_OK);
    for (const char *p = err; *p; p++)
        ck_assert_msg((unsigned char)*p >= 0x20, "raw control byte 0x%02x in: %s",
                      (unsigned char)*p, err);
}
END_TEST

START_TEST(file_errors)
{
    hf_config cfg;
    const char *missing = ts_join(ts_dir(), "no-such-config.json");
    ck_assert_int_eq(hf_config_read(missing, &cfg, err, sizeof err), HF_CONFIG_IO);
    ck_assert_ptr_nonnull(strstr(err, "no-such-config.json: cannot open: No such file"));
    ck_assert_int_eq(hf_config_read(ts_dir(), &cfg, err, sizeof err), HF_CONFIG_IO);
    ck_assert_ptr_nonnull(strstr(err, "not a regular file"));

    /* A sparse 17 MiB file is refused before it is read. */
    const char *big = ts_write(ts_dir(), "config.json", "{}");
    ck_assert_int_eq(truncate(big, 17 << 20), 0);
    ck_assert_int_eq(hf_config_read(big, &cfg, err, sizeof err), HF_CONFIG_MALFORMED);
    ck_assert_ptr_nonnull(strstr(err, "larger than 16 MiB"));
}
END_TEST

START_TEST(json_errors)
{
    expect_error("", HF_CONFIG_MALFORMED, "config.json:1:0: not valid JSON");
    expect_error("{\n  \"num_attention_heads\": 8,\n  \"num_hidden_layers\": }\n",
                 HF_CONFIG_MALFORMED, "config.json:3:24: not valid JSON");
    expect_error("[1, 2]", HF_CONFIG_MALFORMED, "expected a JSON object at the top level");
    expect_error("{\"num_attention_heads\": 8, \"num_attention_heads\": 8}", HF_CONFIG_MALFORMED,
                 "duplicate object key");
    expect_error("{\"num_attention_heads\": 99999999999999999999999}", HF_CONFIG_MALFORMED,
                 "too big integer");
    expect_error("{\"attn_logit_softcapping\": 1e400}", HF_CONFIG_MALFORMED, "overflow");
    expect_error("{\"num_attention_heads\": NaN}", HF_CONFIG_MALFORMED, "not valid JSON");
    /* A NUL byte inside the text. */
    const char *path = ts_write(ts_dir(), "config.json", "{\"model_type\": \"llamaX\"}");
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, 20, SEEK_SET);
    fputc('\0', f);
    fclose(f);
    hf_config cfg;
    ck_assert_int_eq(hf_config_read(path, &cfg, err, sizeof err), HF_CONFIG_MALFORMED);
    /* Nesting far deeper than any config: refused, not a stack overflow. */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 64);
    ck_assert_ptr_nonnull(deep);
    strcpy(deep, "{\"x\": ");
    size_t n = strlen(deep);
    memset(deep + n, '[', depth);
    memset(deep + n + depth, ']', depth);
    strcpy(deep + n + 2 * depth, "}");
    expect_error(deep, HF_CONFIG_MALFORMED, "not valid JSON");
    free(deep);
}
END_TEST

START_TEST(key_errors)
{
    expect_error("{\"num_hidden_layers\": 4}", HF_CONFIG_MALFORMED,
                 "num_attention_heads: is missing");
    expect_error("{\"num_attention_heads\": null, \"num_hidden_layers\": 4}", HF_CONFIG_MALFORMED,
                 "num_attention_heads: is null");
    expect_error("{\"num_attention_heads\": 8, \"head_dim\": 64}", HF_CONFIG_MALFORMED,
                 "num_hidden_layers: is missing");
    expect_error("{\"num_attention_heads\": 3000000000}", HF_CONFIG_MALFORMED,
                 "num_attention_heads: 3000000000 is out of range (expected 1 to 2147483647)");
    expect_error("{\"num_attention_heads\": \"32\"}", HF_CONFIG_MALFORMED,
                 "num_attention_heads: expected an integer, got a string");
    expect_error("{\"num_attention_heads\": 32.0}", HF_CONFIG_MALFORMED,
                 "num_attention_heads: expected an integer, got a number with a fraction");
    expect_error("{\"num_attention_heads\": true}", HF_CONFIG_MALFORMED,
                 "expected an integer, got a boolean");
    expect_error("{\"num_attention_heads\": 8, \"num_key_value_heads\": -8, "
                 "\"num_hidden_layers\": 2, \"head_dim\": 64}",
                 HF_CONFIG_MALFORMED, "num_key_value_heads: -8 is out of range");
    expect_error("{\"num_attention_heads\": 8, \"num_hidden_layers\": 0}", HF_CONFIG_MALFORMED,
                 "num_hidden_layers: 0 is out of range (expected 1 to 65536)");
    expect_error("{\"num_attention_heads\": 8, \"num_hidden_layers\": 100000}", HF_CONFIG_MALFORMED,
                 "num_hidden_layers: 100000 is out of range");
    expect_error("{\"num_attention_heads\": 8, \"num_hidden_layers\": 2}", HF_CONFIG_MALFORMED,
                 "head_dim: is absent, and so is hidden_size, which would give it");
    expect_error("{\"num_attention_heads\": 3, \"num_hidden_layers\": 2, \"hidden_size\": 1000}",
                 HF_CONFIG_MALFORMED,
                 "hidden_size: 1000 is not a multiple of num_attention_heads (3)");
    expect_error(with("\"sliding_window\": 0"), HF_CONFIG_MALFORMED,
                 "sliding_window: 0 is out of range");
    expect_error(with("\"sliding_window\": \"4096\""), HF_CONFIG_MALFORMED,
                 "sliding_window: expected an integer");
    expect_error(with("\"use_sliding_window\": \"yes\""), HF_CONFIG_MALFORMED,
                 "use_sliding_window: expected true or false, got a string");
    expect_error(with("\"max_window_layers\": -1"), HF_CONFIG_MALFORMED,
                 "max_window_layers: -1 is out of range");
    expect_error(with("\"attn_logit_softcapping\": \"50\""), HF_CONFIG_MALFORMED,
                 "attn_logit_softcapping: expected a number, got a string");
    expect_error(with("\"attn_logit_softcapping\": -1.5"), HF_CONFIG_MALFORMED,
                 "attn_logit_softcapping: -1.5 is out of range");
    expect_error(with("\"attn_logit_softcapping\": 1e39"), HF_CONFIG_MALFORMED,
                 "attn_logit_softcapping: 1e+39 is out of range");
    expect_error("{\"model_type\": 7, \"num_attention_heads\": 8}", HF_CONFIG_MALFORMED,
                 "model_type: expected a string, got an integer");
    expect_error("{\"model_type\": \"bad name\", \"num_attention_heads\": 8}", HF_CONFIG_MALFORMED,
                 "model_type: not a model type name");
    expect_error("{\"text_config\": [1]}", HF_CONFIG_MALFORMED,
                 "text_config: expected an object, got an array");
    expect_error("{\"text_config\": {\"num_attention_heads\": 8, \"num_hidden_layers\": 2, "
                 "\"num_key_value_heads\": \"2\"}}",
                 HF_CONFIG_MALFORMED,
                 "text_config.num_key_value_heads: expected an integer, got a string");
    expect_error(with("\"full_attention_interval\": 0"), HF_CONFIG_MALFORMED,
                 "full_attention_interval: 0 is out of range");
    expect_error(with("\"mtp_num_hidden_layers\": \"1\""), HF_CONFIG_MALFORMED,
                 "mtp_num_hidden_layers: expected an integer");
}
END_TEST

START_TEST(layer_type_errors)
{
    expect_error(with("\"layer_types\": \"full_attention\""), HF_CONFIG_MALFORMED,
                 "layer_types: expected an array, got a string");
    expect_error(with("\"layer_types\": [\"full_attention\", \"full_attention\"]"),
                 HF_CONFIG_MALFORMED, "layer_types: has 2 entries but num_hidden_layers is 4");
    expect_error(with("\"layer_types\": [\"full_attention\", 5, \"full_attention\", "
                      "\"full_attention\"]"),
                 HF_CONFIG_MALFORMED, "layer_types[1]: expected a string, got an integer");
    expect_error(with("\"layer_types\": [\"\", \"full_attention\", \"full_attention\", "
                      "\"full_attention\"]"),
                 HF_CONFIG_MALFORMED, "layer_types[0]: not a layer type name");
    expect_error(with("\"layer_types\": [\"full\\nattention\", \"full_attention\", "
                      "\"full_attention\", \"full_attention\"]"),
                 HF_CONFIG_MALFORMED, "layer_types[0]: not a layer type name");
    expect_error(with("\"layer_types\": [\"sliding_attention\", \"full_attention\", "
                      "\"full_attention\", \"full_attention\"]"),
                 HF_CONFIG_MALFORMED,
                 "layer_types[0]: is sliding_attention but sliding_window is absent or null");
    expect_error(with("\"sliding_window\": 64, \"use_sliding_window\": false, \"layer_types\": "
                      "[\"full_attention\", \"sliding_attention\", \"full_attention\", "
                      "\"full_attention\"]"),
                 HF_CONFIG_MALFORMED,
                 "layer_types[1]: is sliding_attention but use_sliding_window is false");
    expect_error(with("\"layer_types\": [\"full_attention\", \"chunked_attention\", "
                      "\"full_attention\", \"full_attention\"]"),
                 HF_CONFIG_UNSUPPORTED, "layer_types[1]: chunked_attention");
    expect_error(with("\"alibi\": true"), HF_CONFIG_UNSUPPORTED,
                 "alibi: true: the model adds ALiBi position biases");
    expect_error("{\"num_attention_heads\": 8, \"head_dim\": 64, \"num_hidden_layers\": 2, "
                 "\"multi_query\": 1}",
                 HF_CONFIG_MALFORMED, "multi_query: expected true or false, got an integer");
    expect_error(with("\"attention_chunk_size\": 8192"), HF_CONFIG_UNSUPPORTED,
                 "attention_chunk_size: set: the model uses chunked local attention");
    expect_error(with("\"kv_lora_rank\": \"x\""), HF_CONFIG_UNSUPPORTED,
                 "kv_lora_rank: set: the model uses multi-head latent attention");
    /* A null kv_lora_rank is no MLA. */
    hf_config cfg;
    ck_assert_int_eq(read_text(with("\"kv_lora_rank\": null"), &cfg), HF_CONFIG_OK);
    hf_config_free(&cfg);
}
END_TEST

/* ---- kinds refused, other families' keys, layer_types first,
 * the softmax scale, validation before capacities, the public API -------- */

START_TEST(blocksparse_and_alibi_refused_with_the_key)
{
    hf_config cfg;
    const char *path = ts_join(ATTNREG_HF_CONFIG_DIR, "phi-3-small-8k.json");
    ck_assert_int_eq(hf_config_read(path, &cfg, err, sizeof err), HF_CONFIG_UNSUPPORTED);
    ck_assert_msg(strstr(err, "blocksparse_block_size: set: the model uses block-sparse "
                              "attention") &&
                      strstr(err, "every 2nd layer is dense"),
                  "%s", err);
    path = ts_join(ATTNREG_HF_CONFIG_DIR, "mpt-7b.json");
    ck_assert_int_eq(hf_config_read(path, &cfg, err, sizeof err), HF_CONFIG_UNSUPPORTED);
    ck_assert_msg(strstr(err, "attn_config.alibi: true"), "%s", err);
    path = ts_join(ATTNREG_HF_CONFIG_DIR, "bloom-560m.json");
    ck_assert_int_eq(hf_config_read(path, &cfg, err, sizeof err), HF_CONFIG_UNSUPPORTED);
    ck_assert_msg(strstr(err, "model_type: bloom: Bloom adds ALiBi"), "%s", err);
    /* One blocksparse key alone is enough; a wrong-typed alibi is malformed. */
    expect_error(with("\"blocksparse_vert_stride\": 8"), HF_CONFIG_UNSUPPORTED,
                 "blocksparse_vert_stride: set");
    expect_error(with("\"attn_config\": {\"alibi\": 1}"), HF_CONFIG_MALFORMED,
                 "attn_config.alibi: expected true or false, got an integer");
    hf_config ok;
    ck_assert_int_eq(read_text(with("\"attn_config\": {\"alibi\": false}"), &ok), HF_CONFIG_OK);
    hf_config_free(&ok);
}
END_TEST

START_TEST(other_families_key_names_noted)
{
    hf_config cfg = read_ok("gpt2.json");
    ck_assert_int_eq(cfg.num_q_heads, 12);
    ck_assert_int_eq(cfg.num_kv_heads, 12);
    ck_assert_int_eq(cfg.head_dim, 64);
    ck_assert_int_eq(cfg.num_layers, 12);
    ck_assert_int_eq(cfg.max_position_embeddings, 1024);
    ck_assert(has_note(&cfg, "num_attention_heads absent: n_head 12"));
    ck_assert(has_note(&cfg, "num_hidden_layers absent: n_layer 12"));
    ck_assert(has_note(&cfg, "hidden_size absent: n_embd 768"));
    ck_assert(has_note(&cfg, "max_position_embeddings absent: n_positions 1024"));
    hf_config_free(&cfg);
    cfg = read_ok("falcon-7b.json");
    ck_assert_int_eq(cfg.num_q_heads, 71);
    ck_assert_int_eq(cfg.num_kv_heads, 1); /* multi_query */
    ck_assert_int_eq(cfg.head_dim, 64);    /* 4544 / 71 */
    ck_assert_int_eq(cfg.max_position_embeddings, 0);
    hf_config_free(&cfg);
    ck_assert_int_eq(read_text("{\"n_heads\": 32, \"n_layers\": 4, \"d_model\": 4096, "
                               "\"max_seq_len\": 2048, \"n_head_kv\": 8}",
                               &cfg),
                     HF_CONFIG_OK);
    ck_assert_int_eq(cfg.num_q_heads, 32);
    ck_assert_int_eq(cfg.num_kv_heads, 8);
    ck_assert_int_eq(cfg.head_dim, 128);
    ck_assert_int_eq(cfg.max_position_embeddings, 2048);
    ck_assert(has_note(&cfg, "num_key_value_heads absent: n_head_kv 8"));
    ck_assert(has_note(&cfg, "head_dim absent: d_model 4096 / num_attention_heads 32 = 128"));
    hf_config_free(&cfg);
    /* None of the names: the error lists them; a bad value is never skipped. */
    expect_error("{\"num_hidden_layers\": 2, \"head_dim\": 64}", HF_CONFIG_MALFORMED,
                 "num_attention_heads: is missing, and so are n_head, n_heads");
    expect_error("{\"n_head\": \"8\", \"num_hidden_layers\": 2, \"head_dim\": 64}",
                 HF_CONFIG_MALFORMED, "n_head: expected an integer, got a string");
}
END_TEST

START_TEST(layer_types_win_over_pattern_keys)
{
    hf_config cfg = read_ok("exaone-4.0-32b.json");
    ck_assert_int_eq(cfg.num_layers, 64);
    for (int i = 0; i < 64; i++)
        assert_layer(&cfg, i, (i + 1) % 4 ? ATTN_LAYER_SLIDING : ATTN_LAYER_FULL, 4095, 0);
    ck_assert(has_note(&cfg, "layer_types gives every layer's kind: sliding_window_pattern is "
                             "not read"));
    hf_config_free(&cfg);
    /* Beside layer_types a pattern of any form is not read ... */
    ck_assert_int_eq(
        read_text(with("\"sliding_window\": 16, \"sliding_window_pattern\": {\"odd\": 1}, "
                       "\"layer_types\": [\"full_attention\", \"sliding_attention\", "
                       "\"full_attention\", \"sliding_attention\"]"),
                  &cfg),
        HF_CONFIG_OK);
    assert_layer(&cfg, 0, ATTN_LAYER_FULL, -1, -1);
    assert_layer(&cfg, 1, ATTN_LAYER_SLIDING, 15, 0);
    hf_config_free(&cfg);
    /* ... and without it, the letters are the pattern: L slides, G is full. */
    ck_assert_int_eq(
        read_text(with("\"sliding_window\": 16, \"sliding_window_pattern\": \"LLG\""), &cfg),
        HF_CONFIG_OK);
    assert_layer(&cfg, 0, ATTN_LAYER_SLIDING, 15, 0);
    assert_layer(&cfg, 1, ATTN_LAYER_SLIDING, 15, 0);
    assert_layer(&cfg, 2, ATTN_LAYER_FULL, -1, -1);
    assert_layer(&cfg, 3, ATTN_LAYER_SLIDING, 15, 0);
    ck_assert(has_note(&cfg, "sliding_window_pattern \"LLG\" repeats"));
    hf_config_free(&cfg);
    expect_error(with("\"sliding_window\": 16, \"sliding_window_pattern\": \"LLX\""),
                 HF_CONFIG_MALFORMED, "sliding_window_pattern: expected an integer or 1 to");
}
END_TEST

START_TEST(gpt_neo_attention_types_unscaled)
{
    hf_config cfg = read_ok("gpt-neo-1.3b.json");
    ck_assert_int_eq(cfg.num_q_heads, 16);
    ck_assert_int_eq(cfg.num_layers, 24);
    for (int i = 0; i < 24; i++)
        assert_layer(&cfg, i, i % 2 ? ATTN_LAYER_SLIDING : ATTN_LAYER_FULL, 255, 0);
    ck_assert_str_eq(cfg.layers[1].type_name, "local_attention");
    ck_assert(cfg.scale == 1.0f);
    ck_assert(has_note(&cfg, "num_attention_heads absent: num_heads 16 (the key of GPT-Neo)"));
    ck_assert(has_note(&cfg, "softmax scale 1: GPT-Neo does not scale"));
    hf_config_free(&cfg);
    expect_error(with("\"attention_types\": [[[\"global\"], 3]]"), HF_CONFIG_MALFORMED,
                 "attention_types: names 3 layers but num_layers is 4");
    expect_error(with("\"attention_types\": [[[\"local\"], 4]]"), HF_CONFIG_MALFORMED,
                 "window_size: is absent, but attention_types[0] has local layers");
    expect_error(with("\"attention_types\": [[[], 65536], [[\"global\"], 4]]"), HF_CONFIG_MALFORMED,
                 "attention_types[0]: expected");
    expect_error(with("\"attention_types\": [[[\"sparse\"], 4]]"), HF_CONFIG_MALFORMED,
                 "layer kinds are \"global\" or \"local\"");
}
END_TEST

START_TEST(softmax_scale)
{
    hf_config cfg = read_ok("gemma-2-27b.json");
    ck_assert_float_eq_tol(cfg.scale, 1.0f / 12.0f, 1e-7f); /* 144 ^ -1/2, not 128 ^ -1/2 */
    ck_assert(has_note(&cfg, "softmax scale 0.0833333"));
    attn_model m;
    attn_model_init(&m, sizeof m);
    hf_config_apply(&cfg, &m);
    ck_assert_float_eq(m.scale, cfg.scale);
    m.max_model_len = 4096;
    attn_registry *reg = ts_open_dir(ATTNREG_TEST_CONF_DIR);
    attn_plan *plan = NULL;
    ck_assert_int_eq(attn_registry_plan(reg, &m, &plan), ATTN_OK);
    attn_plan_entry e = {.struct_size = sizeof e};
    ck_assert_int_eq(attn_plan_lookup(plan, 0, ATTN_PHASE_DECODE, &e), ATTN_OK);
    ck_assert_float_eq(e.scale, cfg.scale);
    attn_plan_free(plan);
    hf_config_free(&cfg);
    /* Without a scale key every entry gets head_dim ^ -1/2. */
    cfg = read_ok("llama-3.1-8b.json");
    ck_assert(cfg.scale == 0.0f);
    attn_model_init(&m, sizeof m);
    hf_config_apply(&cfg, &m);
    ck_assert_int_eq(attn_registry_plan(reg, &m, &plan), ATTN_OK);
    ck_assert_int_eq(attn_plan_entry_get(plan, 0, &e), ATTN_OK);
    ck_assert_float_eq_tol(e.scale, 0.08838834764f, 1e-8f);
    attn_plan_free(plan);
    hf_config_free(&cfg);
    attn_registry_close(reg);
    ck_assert_int_eq(read_text(with("\"attention_multiplier\": 0.0078125"), &cfg), HF_CONFIG_OK);
    ck_assert(cfg.scale == 0.0078125f);
    hf_config_free(&cfg);
    expect_error(with("\"query_pre_attn_scalar\": 0"), HF_CONFIG_MALFORMED,
                 "query_pre_attn_scalar: 0 would make the softmax scale infinite");
}
END_TEST

START_TEST(public_api_reads_validates_before_capacity)
{
    attn_hf_config *cfg = NULL;
    /* 28 / 6 without max_position_embeddings: invalid in one call. */
    ck_assert_int_eq(
        attn_hf_config_read(ts_join(ATTNREG_HF_CONFIG_DIR, "invalid-28-6-no-max-len.json"), &cfg),
        ATTN_OK);
    attn_hf_config_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(attn_hf_config_describe(cfg, &info), ATTN_OK);
    ck_assert_str_eq(info.model_type, "qwen2");
    ck_assert_int_eq(info.max_position_embeddings, 0);
    ck_assert_uint_eq(info.num_notes, 2);
    ck_assert_ptr_nonnull(strstr(attn_hf_config_note(cfg, 0), "head_dim absent"));
    ck_assert_ptr_null(attn_hf_config_note(cfg, 2));
    attn_model m;
    attn_model_init(&m, sizeof m);
    ck_assert_int_eq(attn_hf_config_apply(cfg, &m), ATTN_ERR_INVALID_SHAPE);
    ck_assert_str_eq(attn_last_error(),
                     "requires num_heads (28) to be a multiple of num_kv_heads (6)");
    ck_assert_int_eq(m.max_model_len, 0);
    attn_hf_config_free(cfg);

    /* A valid model: apply checks tp too, and keeps the host's length. */
    ck_assert_int_eq(attn_hf_config_read(ts_join(ATTNREG_HF_CONFIG_DIR, "llama-3.1-8b.json"), &cfg),
                     ATTN_OK);
    attn_model_init(&m, sizeof m);
    m.tp_size = 3;
    ck_assert_int_eq(attn_hf_config_apply(cfg, &m), ATTN_ERR_INVALID_SHAPE);
    ck_assert_str_eq(attn_last_error(), "requires num_heads (32) to be a multiple of tp (3)");
    m.tp_size = 2;
    m.max_model_len = 8192;
    ck_assert_int_eq(attn_hf_config_apply(cfg, &m), ATTN_OK);
    ck_assert_int_eq(m.max_model_len, 8192);
    ck_assert_int_eq(m.num_kv_heads, 8);
    attn_hf_config_free(cfg);

    /* In memory, and the statuses of the three failures. */
    const char *text = "{\"num_attention_heads\": 8, \"num_hidden_layers\": 2, \"head_dim\": 64, "
                       "\"max_position_embeddings\": 512}";
    ck_assert_int_eq(attn_hf_config_parse(text, strlen(text), "mem.json", &cfg), ATTN_OK);
    attn_model_init(&m, sizeof m);
    ck_assert_int_eq(attn_hf_config_apply(cfg, &m), ATTN_OK);
    ck_assert_int_eq(m.max_model_len, 512);
    attn_hf_config_free(cfg);
    ck_assert_int_eq(attn_hf_config_parse("{", 1, "mem.json", &cfg), ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_ptr_null(cfg);
    ck_assert_ptr_nonnull(strstr(attn_last_error(), "mem.json:1:"));
    ck_assert_int_eq(attn_hf_config_read(ts_join(ATTNREG_HF_CONFIG_DIR, "deepseek-v3.json"), &cfg),
                     ATTN_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(attn_last_error(), "kv_lora_rank"));
    ck_assert_int_eq(attn_hf_config_read(ts_join(ATTNREG_HF_CONFIG_DIR, "none.json"), &cfg),
                     ATTN_ERR_IO);
    ck_assert_int_eq(attn_hf_config_read(NULL, &cfg), ATTN_ERR_INVALID_ARGUMENT);
    attn_hf_config_free(NULL);
}
END_TEST

static Suite *hf_config_suite(void)
{
    Suite *s = suite_create("hf_config");
    TCase *published = tcase_create("published");
    TCase *planned = tcase_create("planned");
    TCase *rules = tcase_create("rules");
    TCase *errors = tcase_create("errors");
    TCase *all[] = {published, planned, rules, errors};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        ts_add_fixtures(all[i], 60);
        suite_add_tcase(s, all[i]);
    }
    tcase_add_test(published, llama_gqa);
    tcase_add_test(published, qwen35_text_config_layer_types);
    tcase_add_test(published, qwen3_next_interval);
    tcase_add_test(published, mistral_sliding_every_layer);
    tcase_add_test(published, gemma2_alternating_softcap);
    tcase_add_test(published, gemma_mqa);
    tcase_add_test(published, gpt_oss_sinks);
    tcase_add_test(published, deepseek_mla_refused);
    tcase_add_test(published, malformed_kv_heads_file);
    tcase_add_test(planned, qwen35_plans_mtp_verify_tp1_tp2);
    tcase_add_test(planned, invalid_28_6_config_plans_invalid);
    tcase_add_test(planned, gemma2_plan_windows_softcap);
    tcase_add_test(rules, derived_layer_kinds);
    tcase_add_test(errors, file_errors);
    tcase_add_test(errors, fifo_config_refused);
    tcase_add_test(errors, many_layer_type_names_in_linear_time);
    tcase_add_test(errors, quoted_control_bytes_escaped);
    tcase_add_test(errors, json_errors);
    tcase_add_test(errors, key_errors);
    tcase_add_test(errors, layer_type_errors);
    tcase_add_test(rules, blocksparse_and_alibi_refused_with_the_key);
    tcase_add_test(rules, other_families_key_names_noted);
    tcase_add_test(rules, layer_types_win_over_pattern_keys);
    tcase_add_test(rules, softmax_scale);
    tcase_add_test(rules, gpt_neo_attention_types_unscaled);
    tcase_add_test(planned, public_api_reads_validates_before_capacity);
    return s;
}

int main(void)
{
    return ts_run(hf_config_suite());
}
