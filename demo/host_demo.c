/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host_demo — what an inference engine does with attnreg, end to end:
 * open the registry from the shipped conf, plan for GPUs this machine does
 * not have (the answer is the same on a laptop), shape by shape and for a
 * whole model at config load, then select, construct and run a backend that
 * is really here (cpu-ref) on a small paged-KV batch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnreg.h"

/* The selection is the caller's: with one local `attn_selection` per call,
 * gcc 12 inlines the four calls into main() and, at -O2 and above, warns
 * (-Wdangling-pointer) that the library might keep the address of an earlier
 * call's dead local. It does not; one object that outlives every call makes
 * that visible to the compiler. */
static void plan(attn_registry *reg, const char *what, const attn_shape *shape, attn_selection *sel)
{
    attn_selection_init(sel);
    attn_status st = attn_registry_select(reg, shape, sel);
    if (st != ATTN_OK) {
        printf("plan  %-34s -> %s: %s\n", what, attn_status_name(st), sel->message);
        return;
    }
    printf("plan  %-34s -> %s", what, sel->backend_name);
    if (sel->fallback_applied)
        printf(" (fallback %s, because %s: %s)", sel->fallback_rule, sel->fallback_backend,
               sel->fallback_message);
    printf("\n");
}

/* At config load: the whole model planned once (here Qwen3.5-397B-A17B's
 * attention: one full-attention layer after every three linear-attention
 * layers, 32 query heads over 2 KV heads, D 256) on two tensor-parallel
 * ranks of gfx950 with an fp8 KV cache and 3 speculative tokens. At run time
 * a layer's backend is a lookup, not a decision. */
static int plan_model(attn_registry *reg)
{
    attn_layer layers[60];
    for (int i = 0; i < 60; i++) {
        attn_layer_init(&layers[i], sizeof layers[i]);
        if ((i + 1) % 4) {
            layers[i].kind = ATTN_LAYER_NOT_ATTENTION;
            layers[i].type_name = "linear_attention";
        }
    }
    attn_model model;
    attn_model_init(&model, sizeof model);
    strcpy(model.arch, "gfx950");
    model.num_q_heads = 32;
    model.num_kv_heads = 2;
    model.head_dim = 256;
    model.num_layers = 60;
    model.layers = layers;
    model.kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
    model.tp_size = 2;
    model.max_model_len = 32768;
    model.max_prefill_tokens = 8192;
    model.spec_tokens = 3;

    attn_plan *plan;
    attn_status st = attn_registry_plan(reg, &model, &plan);
    if (st != ATTN_OK) {
        printf("model Qwen3.5 shape, tp 2: %s: %s\n", attn_status_name(st), attn_last_error());
        attn_plan_free(plan);
        return 1;
    }
    attn_plan_summary sum = {.struct_size = sizeof sum};
    attn_plan_summarize(plan, &sum);
    printf("model Qwen3.5 shape, tp 2 (%d/%d heads per rank): %zu entries\n", sum.rank_q_heads,
           sum.rank_kv_heads, sum.num_entries);
    static const int32_t phases[] = {ATTN_PHASE_PREFILL, ATTN_PHASE_DECODE, ATTN_PHASE_VERIFY};
    for (size_t k = 0; k < sizeof phases / sizeof phases[0]; k++) {
        attn_plan_entry e = {.struct_size = sizeof e};
        attn_plan_lookup(plan, 3, phases[k], &e);
        printf("      layer 3 %-7s (q_len %d) -> %s\n", attn_phase_name(e.phase),
               e.shape->max_q_len, e.selection->backend_name);
    }
    attn_plan_entry e = {.struct_size = sizeof e};
    attn_plan_lookup(plan, 0, ATTN_PHASE_DECODE, &e);
    printf("      layer 0 %s -> %s\n", e.layer_type, e.message);
    attn_plan_free(plan);
    return 0;
}

/* Uniform in [-1, 1): attention on zeros would hide indexing mistakes. */
static float random_unit(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

int main(void)
{
    attn_registry_options opt;
    attn_registry_options_init(&opt);
    attn_registry *reg;
    if (attn_registry_open(&opt, &reg) != ATTN_OK) {
        fprintf(stderr, "host_demo: %s\n", attn_last_error());
        return 1;
    }
    printf("attnreg %s, plugin ABI %u.%u, %zu backends registered\n", attnreg_version_string(),
           attnreg_plugin_abi_version() >> 16, attnreg_plugin_abi_version() & 0xffff,
           attn_registry_plugin_count(reg));

    /* Planning: the MTP verify shape on gfx950, then plain decode. */
    attn_selection planned;
    attn_shape mtp;
    attn_shape_init(&mtp);
    strcpy(mtp.arch, "gfx950");
    mtp.num_q_heads = 16;
    mtp.num_kv_heads = 1;
    mtp.head_dim = 256;
    mtp.kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
    mtp.max_q_len = 4;
    mtp.max_kv_len = 4096;
    plan(reg, "gfx950 MTP verify (q_len 4)", &mtp, &planned);
    mtp.max_q_len = 1;
    plan(reg, "gfx950 decode (q_len 1)", &mtp, &planned);
    attn_shape gqa_fp8;
    attn_shape_init(&gqa_fp8);
    strcpy(gqa_fp8.arch, "gfx942");
    gqa_fp8.num_q_heads = 32;
    gqa_fp8.num_kv_heads = 8;
    gqa_fp8.kv_dtype = gqa_fp8.compute_dtype = ATTN_DTYPE_FP8_E4M3FNUZ;
    gqa_fp8.max_q_len = gqa_fp8.max_kv_len = 512;
    plan(reg, "gfx942 GQA 32/8 with FP8 compute", &gqa_fp8, &planned);
    attn_shape bad = gqa_fp8;
    bad.num_kv_heads = 5;
    plan(reg, "gfx942 32/5 heads", &bad, &planned);
    if (plan_model(reg) != 0) {
        attn_registry_close(reg);
        return 1;
    }

    /* Running: two sequences on the CPU, GQA 8/2, D 64, f32. */
    enum { HQ = 8, HKV = 2, D = 64, PAGE = 16, SEQS = 2, BLOCKS = 16, BLOCKS_PER_SEQ = 8 };
    const int q_lens[SEQS] = {3, 1}, kv_lens[SEQS] = {100, 37};
    attn_shape shape;
    attn_shape_init(&shape);
    shape.num_q_heads = HQ;
    shape.num_kv_heads = HKV;
    shape.head_dim = D;
    shape.q_dtype = shape.kv_dtype = shape.compute_dtype = shape.out_dtype = ATTN_DTYPE_F32;
    shape.page_size = PAGE;
    shape.max_q_len = 3;
    shape.max_kv_len = 100;
    attn_selection sel;
    attn_selection_init(&sel);
    attn_backend *backend = NULL;
    if (attn_registry_select(reg, &shape, &sel) != ATTN_OK ||
        attn_backend_create(reg, &sel, &backend) != ATTN_OK) {
        fprintf(stderr, "host_demo: %s\n", attn_last_error());
        attn_registry_close(reg);
        return 1;
    }
    attn_batch_limits limits = {sizeof limits, SEQS, 4};
    size_t ws_bytes = 0;
    attn_backend_workspace_size(backend, &limits, &ws_bytes);

    int tokens = q_lens[0] + q_lens[1];
    unsigned seed = 12345;
    float *q = malloc(sizeof(float) * (size_t)tokens * HQ * D);
    float *k = malloc(sizeof(float) * BLOCKS * PAGE * HKV * D);
    float *v = malloc(sizeof(float) * BLOCKS * PAGE * HKV * D);
    float *out = malloc(sizeof(float) * (size_t)tokens * HQ * D);
    void *ws = malloc(ws_bytes ? ws_bytes : 1);
    for (int i = 0; i < tokens * HQ * D; i++)
        q[i] = random_unit(&seed);
    for (int i = 0; i < BLOCKS * PAGE * HKV * D; i++) {
        k[i] = random_unit(&seed);
        v[i] = random_unit(&seed);
    }
    /* Blocks handed out in reverse so that the table, not memory order,
     * decides which page holds which keys. */
    int32_t block_table[SEQS * BLOCKS_PER_SEQ];
    for (int i = 0; i < SEQS * BLOCKS_PER_SEQ; i++)
        block_table[i] = BLOCKS - 1 - i;
    int32_t cu_seqlens_q[SEQS + 1] = {0, q_lens[0], q_lens[0] + q_lens[1]};
    int32_t seqused_k[SEQS] = {kv_lens[0], kv_lens[1]};

    attn_forward_args args;
    memset(&args, 0, sizeof args);
    args.struct_size = sizeof args;
    args.num_seqs = SEQS;
    args.num_tokens = tokens;
    args.q = q;
    args.q_stride_token = HQ * D;
    args.q_stride_head = D;
    args.k_cache = k;
    args.v_cache = v;
    args.num_blocks = BLOCKS;
    args.block_table = block_table;
    args.block_table_stride = BLOCKS_PER_SEQ;
    args.cu_seqlens_q = cu_seqlens_q;
    args.seqused_k = seqused_k;
    args.max_seqlen_q = 3;
    args.max_seqlen_k = 100;
    args.scale = 1.0f / sqrtf((float)D);
    args.q_descale = args.k_descale = args.v_descale = 1.0f;
    args.out = out;
    args.out_stride_token = HQ * D;
    args.out_stride_head = D;
    args.workspace = ws;
    args.workspace_size = ws_bytes;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    attn_status st = attn_backend_forward(backend, &args);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int rc = 0;
    if (st != ATTN_OK) {
        fprintf(stderr, "host_demo: %s\n", attn_last_error());
        rc = 1;
    } else {
        double sum = 0;
        for (int i = 0; i < tokens * HQ * D; i++)
            sum += out[i];
        printf("run   %-34s -> %s: %d tokens, workspace %zu bytes, %.1f us, out[0..2] = "
               "%.5f %.5f %.5f, sum %.5f\n",
               "cpu GQA 8/2 D64 f32, 2 seqs", attn_backend_name(backend), tokens, ws_bytes,
               (double)(t1.tv_sec - t0.tv_sec) * 1e6 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e3,
               (double)out[0], (double)out[1], (double)out[2], sum);
    }
    attn_backend_destroy(backend);
    free(q);
    free(k);
    free(v);
    free(out);
    free(ws);
    attn_registry_close(reg);
    return rc;
}
