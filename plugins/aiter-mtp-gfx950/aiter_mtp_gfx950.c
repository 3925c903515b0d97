/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aiter-mtp-gfx950: the speculative-decoding (MTP) verify kernel. It reads
 * each page of the paged KV cache once for all 2-4 speculative query tokens
 * and all 16 query heads sharing a KV head, where the generic kernel reloads
 * it once per token. That only pays off on one narrow shape, so the plugin is
 * tried first (priority 100 in its INI) and declines everything else with a
 * precise reason: gfx950 (and sm_90, where the kernel is validated through
 * the HIP->CUDA mapping; the shipped INI lists both), 2-4 query
 * tokens, a context longer than 512 keys, 16 query heads per KV head, head
 * size 256, page 16, bf16 Q and math and output, fp8_e4m3fn KV, causal, no
 * window, no softcap, no sinks.
 *
 * Every condition is its own predicate with its own reason code, in the
 * order a user would check them: where, how many tokens, how the heads are
 * laid out, how the cache is laid out, the types, then the masking features.
 */
#include <stdint.h>
#include <stdio.h>

#include "attn_launch_plan.h"
#include "attn_plugin.h"
#include "attn_pred_util.h"

#define AITER_MTP_NAME "aiter-mtp-gfx950"

static const char *const aiter_mtp_archs[] = {"gfx950", "sm_90", NULL};

/* The kernel's shapes are the launch-plan header's ATTN_MTP_* constants
 * (why each: there): speculative tokens per sequence, the shortest context,
 * query heads per KV head, head size and page. */
#define AITER_MTP_MIN_Q_LEN ATTN_MTP_MIN_Q_LEN
#define AITER_MTP_MAX_Q_LEN ATTN_MTP_MAX_Q_LEN
#define AITER_MTP_MIN_KV_LEN_EXCLUSIVE ATTN_MTP_MIN_KV_LEN_EXCLUSIVE
static const int32_t aiter_mtp_gqa_ratios[] = {ATTN_MTP_GROUP};
static const int32_t aiter_mtp_head_dims[] = {ATTN_MTP_D};
static const int32_t aiter_mtp_page_sizes[] = {ATTN_MTP_PAGE};
static const int32_t aiter_mtp_bf16[] = {ATTN_DTYPE_BF16};
static const int32_t aiter_mtp_kv_dtypes[] = {ATTN_DTYPE_FP8_E4M3FN};

/* ---- capability predicates ------------------------------------------- */

static int aiter_mtp_check_arch(const attn_plugin_context *ctx, const attn_shape *shape,
                                attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_arch_in(verdict, shape, aiter_mtp_archs);
}

static int aiter_mtp_check_q_len(const attn_plugin_context *ctx, const attn_shape *shape,
                                 attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_int_range(verdict, ATTN_REASON_Q_LEN, "max_q_len", shape->max_q_len,
                                       AITER_MTP_MIN_Q_LEN, AITER_MTP_MAX_Q_LEN);
}

static int aiter_mtp_check_kv_len(const attn_plugin_context *ctx, const attn_shape *shape,
                                  attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_int_range(verdict, ATTN_REASON_KV_LEN, "max_kv_len", shape->max_kv_len,
                                       AITER_MTP_MIN_KV_LEN_EXCLUSIVE + 1, INT32_MAX);
}

/* First the divisibility (a ratio is only meaningful when it is whole), then
 * the ratio itself. */
static int aiter_mtp_check_gqa_ratio(const attn_plugin_context *ctx, const attn_shape *shape,
                                     attn_verdict *verdict)
{
    int32_t ratio = attn_pred_gqa_ratio(shape);
    char set[ATTN_PRED_SET_MAX];
    (void)ctx;
    if (ratio == 0)
        return attn_pred_require_gqa_divisible(verdict, shape);
    if (attn_pred_int_in(ratio, aiter_mtp_gqa_ratios, ATTN_PRED_COUNT(aiter_mtp_gqa_ratios)))
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_GQA_RATIO,
                       "gqa_ratio %d (num_q_heads %d / num_kv_heads %d) not in %s", (int)ratio,
                       (int)shape->num_q_heads, (int)attn_shape_kv_heads(shape),
                       attn_pred_format_int_set(set, sizeof set, aiter_mtp_gqa_ratios,
                                                ATTN_PRED_COUNT(aiter_mtp_gqa_ratios)));
}

static int aiter_mtp_check_head_dim(const attn_plugin_context *ctx, const attn_shape *shape,
                                    attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_int_in(verdict, ATTN_REASON_HEAD_DIM, "head_dim", shape->head_dim,
                                    aiter_mtp_head_dims, ATTN_PRED_COUNT(aiter_mtp_head_dims));
}

static int aiter_mtp_check_head_dim_v(const attn_plugin_context *ctx, const attn_shape *shape,
                                      attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_int_in(verdict, ATTN_REASON_HEAD_DIM_V, "head_dim_v",
                                    attn_shape_head_dim_v(shape), aiter_mtp_head_dims,
                                    ATTN_PRED_COUNT(aiter_mtp_head_dims));
}

static int aiter_mtp_check_page_size(const attn_plugin_context *ctx, const attn_shape *shape,
                                     attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_int_in(verdict, ATTN_REASON_PAGE_SIZE, "page_size", shape->page_size,
                                    aiter_mtp_page_sizes, ATTN_PRED_COUNT(aiter_mtp_page_sizes));
}

static int aiter_mtp_check_q_dtype(const attn_plugin_context *ctx, const attn_shape *shape,
                                   attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_dtype_in(verdict, ATTN_REASON_Q_DTYPE, "q_dtype", shape->q_dtype,
                                      aiter_mtp_bf16, ATTN_PRED_COUNT(aiter_mtp_bf16));
}

/* gfx950 and sm_90 both use the OCP e4m3fn format, so one flavour serves
 * every arch this plugin accepts. */
static int aiter_mtp_check_kv_dtype(const attn_plugin_context *ctx, const attn_shape *shape,
                                    attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_dtype_in(verdict, ATTN_REASON_KV_DTYPE, "kv_dtype", shape->kv_dtype,
                                      aiter_mtp_kv_dtypes, ATTN_PRED_COUNT(aiter_mtp_kv_dtypes));
}

static int aiter_mtp_check_compute_dtype(const attn_plugin_context *ctx, const attn_shape *shape,
                                         attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_dtype_in(verdict, ATTN_REASON_COMPUTE_DTYPE, "compute_dtype",
                                      shape->compute_dtype, aiter_mtp_bf16,
                                      ATTN_PRED_COUNT(aiter_mtp_bf16));
}

static int aiter_mtp_check_out_dtype(const attn_plugin_context *ctx, const attn_shape *shape,
                                     attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_dtype_in(verdict, ATTN_REASON_OUT_DTYPE, "out_dtype", shape->out_dtype,
                                      aiter_mtp_bf16, ATTN_PRED_COUNT(aiter_mtp_bf16));
}

/* Verifying speculative tokens is always causal: token i must not see the
 * tokens drafted after it. */
static int aiter_mtp_check_causal(const attn_plugin_context *ctx, const attn_shape *shape,
                                  attn_verdict *verdict)
{
    (void)ctx;
    if (shape->causal == 1)
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_CAUSAL, "causal %d not in {1}: %s is causal only",
                       (int)shape->causal, AITER_MTP_NAME);
}

static int aiter_mtp_check_window(const attn_plugin_context *ctx, const attn_shape *shape,
                                  attn_verdict *verdict)
{
    (void)ctx;
    if (shape->window_left == -1 && shape->window_right == -1)
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_WINDOW,
                       "sliding window (window_left %d, window_right %d) not supported: both must "
                       "be -1",
                       (int)shape->window_left, (int)shape->window_right);
}

static int aiter_mtp_check_softcap(const attn_plugin_context *ctx, const attn_shape *shape,
                                   attn_verdict *verdict)
{
    (void)ctx;
    if (shape->softcap == 0.0f)
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_SOFTCAP, "softcap %g not in {0}: %s has no softcap",
                       (double)shape->softcap, AITER_MTP_NAME);
}

static int aiter_mtp_check_sinks(const attn_plugin_context *ctx, const attn_shape *shape,
                                 attn_verdict *verdict)
{
    (void)ctx;
    if (shape->has_sinks == 0)
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_SINKS, "has_sinks %d not in {0}: %s has no sinks",
                       (int)shape->has_sinks, AITER_MTP_NAME);
}

/* Last: the launch plan of the shape on its arch (the table the launcher
 * reads) must fit the arch's shared memory / LDS. */
static int aiter_mtp_check_launch_plan(const attn_plugin_context *ctx, const attn_shape *shape,
                                       attn_verdict *verdict)
{
    (void)ctx;
    return attn_launch_plan_predicate(attn_launch_plan_mtp, shape, verdict);
}

static attn_status aiter_mtp_describe_plan(const attn_plugin_context *ctx, const attn_shape *shape,
                                           attn_launch_plan *plan)
{
    (void)ctx;
    return attn_launch_plan_describe(attn_launch_plan_mtp, shape, plan);
}

static const attn_predicate aiter_mtp_predicates[] = {
    {"arch", aiter_mtp_check_arch},
    {"q_len", aiter_mtp_check_q_len},
    {"kv_len", aiter_mtp_check_kv_len},
    {"gqa_ratio", aiter_mtp_check_gqa_ratio},
    {"head_dim", aiter_mtp_check_head_dim},
    {"head_dim_v", aiter_mtp_check_head_dim_v},
    {"page_size", aiter_mtp_check_page_size},
    {"q_dtype", aiter_mtp_check_q_dtype},
    {"kv_dtype", aiter_mtp_check_kv_dtype},
    {"compute_dtype", aiter_mtp_check_compute_dtype},
    {"out_dtype", aiter_mtp_check_out_dtype},
    {"causal", aiter_mtp_check_causal},
    {"window", aiter_mtp_check_window},
    {"softcap", aiter_mtp_check_softcap},
    {"sinks", aiter_mtp_check_sinks},
    /* last: the plan of a shape every check above accepted */
    {"launch_plan", aiter_mtp_check_launch_plan},
};

/* ---- backend: the kernel library's entry points ------------------------
 * attn_gpu_entry.h declares them: the kernel library's with GPU kernels,
 * attn_no_kernels.h's ("built without GPU kernels") without. */
#define ATTN_GPU_ENTRY_PLUGIN_NAME AITER_MTP_NAME
#include "attn_gpu_entry.h"

ATTN_PLUGIN_DEFINE(.name = AITER_MTP_NAME, .version = "0.1.0",
                   .description = "speculative-decoding (MTP) verify kernel: 2-4 query tokens, "
                                  "GQA 16, head_dim 256, fp8_e4m3fn KV, page 16",
                   .built_archs = attn_gpu_kernel_archs, .predicates = aiter_mtp_predicates,
                   .num_predicates = ATTN_PRED_COUNT(aiter_mtp_predicates),
                   .create = attn_gpu_mtp_create, .workspace_size = attn_gpu_workspace_size,
                   .forward = attn_gpu_forward, .destroy = attn_gpu_destroy,
                   .probe_devices = attn_gpu_probe_devices, .graph_capturable = 1,
                   .describe_plan = aiter_mtp_describe_plan, .arch_limits = attn_gpu_arch_limits,
                   .num_arch_limits = (uint32_t)ATTN_GPU_ARCH_LIMITS_COUNT,
                   .forward_features = ATTN_GPU_FORWARD_FEATURES, .append_kv = attn_gpu_append_kv,
                   .merge_states = attn_gpu_merge_states)
