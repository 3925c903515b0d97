/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer_check.h — what the out-of-tree hosts (host.c, host.cpp) share:
 * a small paged-KV batch with random values, a float64 reference of
 * attnreg's attention semantics, and running one backend on it through the
 * installed libattnreg. Written in the common subset of C11 and C++17.
 */
#ifndef ATTNREG_CONSUMER_CHECK_H
#define ATTNREG_CONSUMER_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <attnreg.h>

enum {
    CC_HQ = 8,
    CC_HKV = 2,
    CC_D = 64,
    CC_PAGE = 16,
    CC_SEQS = 2,
    CC_BLOCKS = 16,
    CC_BPS = 8
}; /* blocks per sequence in the block table */

typedef struct cc_problem {
    int q_lens[CC_SEQS], kv_lens[CC_SEQS];
    int tokens;
    float *q, *k, *v;
    int32_t block_table[CC_SEQS * CC_BPS];
    int32_t cu_seqlens_q[CC_SEQS + 1];
    int32_t seqused_k[CC_SEQS];
    double *want; /* [tokens, HQ, D] */
} cc_problem;

static float cc_random(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return (float)((*state >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

static void cc_shape(attn_shape *s)
{
    attn_shape_init(s);
    s->num_q_heads = CC_HQ;
    s->num_kv_heads = CC_HKV;
    s->head_dim = CC_D;
    s->q_dtype = s->kv_dtype = s->compute_dtype = s->out_dtype = ATTN_DTYPE_F32;
    s->page_size = CC_PAGE;
    s->max_q_len = 3;
    s->max_kv_len = 100;
}

static const float *cc_row(const cc_problem *p, const float *cache, int seq, int key, int head)
{
    int block = p->block_table[seq * CC_BPS + key / CC_PAGE];
    return cache + ((size_t)(block * CC_PAGE + key % CC_PAGE) * CC_HKV + (size_t)head) * CC_D;
}

/* Causal attention in float64: query i of a sequence with Q new tokens and K
 * keys sits at K - Q + i and sees keys 0 .. K - Q + i. */
static void cc_reference(cc_problem *p)
{
    double scale = 1.0 / sqrt((double)CC_D);
    for (int s = 0; s < CC_SEQS; s++)
        for (int i = 0; i < p->q_lens[s]; i++)
            for (int h = 0; h < CC_HQ; h++) {
                int t = p->cu_seqlens_q[s] + i, kvh = h / (CC_HQ / CC_HKV);
                int visible = p->kv_lens[s] - p->q_lens[s] + i + 1;
                const float *q = p->q + ((size_t)t * CC_HQ + (size_t)h) * CC_D;
                double scores[128], top = -INFINITY, sum = 0.0;
                for (int j = 0; j < visible; j++) {
                    const float *k = cc_row(p, p->k, s, j, kvh);
                    double dot = 0.0;
                    for (int d = 0; d < CC_D; d++)
                        dot += (double)q[d] * (double)k[d];
                    scores[j] = dot * scale;
                    top = scores[j] > top ? scores[j] : top;
                }
                double *out = p->want + ((size_t)t * CC_HQ + (size_t)h) * CC_D;
                for (int d = 0; d < CC_D; d++)
                    out[d] = 0.0;
                for (int j = 0; j < visible; j++) {
                    double w = exp(scores[j] - top);
                    const float *v = cc_row(p, p->v, s, j, kvh);
                    sum += w;
                    for (int d = 0; d < CC_D; d++)
                        out[d] += w * (double)v[d];
                }
                for (int d = 0; d < CC_D; d++)
                    out[d] /= sum;
            }
}

static int cc_problem_init(cc_problem *p, unsigned seed)
{
    size_t cache = (size_t)CC_BLOCKS * CC_PAGE * CC_HKV * CC_D;
    memset(p, 0, sizeof *p);
    p->q_lens[0] = 3;
    p->q_lens[1] = 1;
    p->kv_lens[0] = 100;
    p->kv_lens[1] = 37;
    p->tokens = p->q_lens[0] + p->q_lens[1];
    p->q = (float *)malloc(sizeof(float) * (size_t)p->tokens * CC_HQ * CC_D);
    p->k = (float *)malloc(sizeof(float) * cache);
    p->v = (float *)malloc(sizeof(float) * cache);
    p->want = (double *)malloc(sizeof(double) * (size_t)p->tokens * CC_HQ * CC_D);
    if (!p->q || !p->k || !p->v || !p->want)
        return -1;
    for (size_t i = 0; i < (size_t)p->tokens * CC_HQ * CC_D; i++)
        p->q[i] = cc_random(&seed);
    for (size_t i = 0; i < cache; i++) {
        p->k[i] = cc_random(&seed);
        p->v[i] = cc_random(&seed);
    }
    /* Blocks in reverse: the table, not memory order, decides the pages. */
    for (int i = 0; i < CC_SEQS * CC_BPS; i++)
        p->block_table[i] = CC_BLOCKS - 1 - i;
    p->cu_seqlens_q[0] = 0;
    for (int s = 0; s < CC_SEQS; s++) {
        p->cu_seqlens_q[s + 1] = p->cu_seqlens_q[s] + p->q_lens[s];
        p->seqused_k[s] = p->kv_lens[s];
    }
    cc_reference(p);
    return 0;
}

static void cc_problem_free(cc_problem *p)
{
    free(p->q);
    free(p->k);
    free(p->v);
    free(p->want);
}

/* Selects a backend for the problem's shape (a host that wants one backend
 * opens the registry with forced_backend), runs it and returns the largest
 * absolute difference from the reference, or a negative number after
 * printing why it could not run. `chosen` receives the backend's name. */
static double cc_run(attn_registry *reg, const cc_problem *p, const char **chosen)
{
    attn_shape shape;
    attn_selection sel;
    attn_backend *b = NULL;
    cc_shape(&shape);
    attn_selection_init(&sel);
    attn_status st = attn_registry_select(reg, &shape, &sel);
    if (st != ATTN_OK || attn_backend_create(reg, &sel, &b) != ATTN_OK) {
        fprintf(stderr, "consumer: select/create: %s: %s\n", attn_status_name(st),
                st != ATTN_OK ? sel.message : attn_last_error());
        return -1.0;
    }
    *chosen = sel.backend_name;
    attn_batch_limits limits = {sizeof limits, CC_SEQS, 4};
    size_t ws_bytes = 0;
    attn_backend_workspace_size(b, &limits, &ws_bytes);
    void *ws = malloc(ws_bytes ? ws_bytes : 1);
    float *out = (float *)calloc((size_t)p->tokens * CC_HQ * CC_D, sizeof(float));
    attn_forward_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.num_seqs = CC_SEQS;
    a.num_tokens = p->tokens;
    a.q = p->q;
    a.q_stride_token = CC_HQ * CC_D;
    a.q_stride_head = CC_D;
    a.k_cache = p->k;
    a.v_cache = p->v;
    a.num_blocks = CC_BLOCKS;
    a.block_table = p->block_table;
    a.block_table_stride = CC_BPS;
    a.cu_seqlens_q = p->cu_seqlens_q;
    a.seqused_k = p->seqused_k;
    a.max_seqlen_q = 3;
    a.max_seqlen_k = 100;
    a.scale = 1.0f / sqrtf((float)CC_D);
    a.q_descale = a.k_descale = a.v_descale = 1.0f;
    a.out = out;
    a.out_stride_token = CC_HQ * CC_D;
    a.out_stride_head = CC_D;
    a.workspace = ws;
    a.workspace_size = ws_bytes;
    double worst = -1.0;
    if (!ws || !out) {
        fprintf(stderr, "consumer: out of memory\n");
    } else if ((st = attn_backend_forward(b, &a)) != ATTN_OK) {
        fprintf(stderr, "consumer: forward: %s: %s\n", attn_status_name(st), attn_last_error());
    } else {
        worst = 0.0;
        for (size_t i = 0; i < (size_t)p->tokens * CC_HQ * CC_D; i++) {
            double e = fabs((double)out[i] - p->want[i]);
            worst = e > worst ? e : worst;
        }
    }
    free(ws);
    free(out);
    attn_backend_destroy(b);
    return worst;
}

#endif
