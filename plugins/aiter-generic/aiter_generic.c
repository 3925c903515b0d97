/* SPDX-License-Identifier: Apache-2.0 */
/*
 * aiter-generic: paged unified attention for any MHA/GQA/MQA ratio on AMD
 * Instinct GPUs (gfx942, gfx950) and NVIDIA sm_90, where the kernels are to be
 * validated on an H200 through the HIP->CUDA mapping. The shipped INI lists
 * all three (sm_90 is where the kernels have run and been verified).
 *
 * This file holds the capability predicates, which are the truth about what
 * the kernels can run, and the backend entry points. The kernels are in
 * plugins/gpu (the rule that picks one per batch is in its README); a build
 * without them is "built without GPU kernels" (an empty built_archs list),
 * so selection can plan for it but create refuses.
 *
 * Predicates run in descriptor order and the first rejection is the reason a
 * user sees, so the order goes from the most basic mismatch (wrong GPU) to
 * the finest (FP8 restrictions, lengths).
 */
#include <stdint.h>
#include <stdio.h>

#include "attn_launch_plan.h"
#include "attn_plugin.h"
#include "attn_pred_util.h"

#define AITER_GENERIC_NAME "aiter-generic"

static const char *const aiter_generic_archs[] = {"gfx942", "gfx950", "sm_90", NULL};

/* The page sizes engines use: 1 (SGLang's token-granular KV cache; the
 * kernels gather every key through the block table) and every multiple of
 * 16 up to 1024 (vLLM; a 16-key half tile then never straddles two pages, so
 * the tiled kernels look up one block per half tile). */
#define AITER_GENERIC_PAGE_STEP 16
#define AITER_GENERIC_PAGE_MAX 1024

static const int32_t aiter_generic_q_dtypes[] = {ATTN_DTYPE_BF16, ATTN_DTYPE_F16};

/* ---- capability predicates ------------------------------------------- */

static int aiter_generic_check_arch(const attn_plugin_context *ctx, const attn_shape *shape,
                                    attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_arch_in(verdict, shape, aiter_generic_archs);
}

/* The kernels map query head h to KV head h / (Hq / Hkv), which works for
 * every ratio where the KV heads divide the query heads. */
static int aiter_generic_check_gqa_ratio(const attn_plugin_context *ctx, const attn_shape *shape,
                                         attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_gqa_divisible(verdict, shape);
}

static int aiter_generic_check_head_dim(const attn_plugin_context *ctx, const attn_shape *shape,
                                        attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_int_in(verdict, ATTN_REASON_HEAD_DIM, "head_dim", shape->head_dim,
                                    attn_gpu_head_dims, ATTN_PRED_COUNT(attn_gpu_head_dims));
}

/* K and V share one tile layout in the kernels, so V must be as wide as K. */
static int aiter_generic_check_head_dim_v(const attn_plugin_context *ctx, const attn_shape *shape,
                                          attn_verdict *verdict)
{
    int32_t head_dim_v = attn_shape_head_dim_v(shape);
    (void)ctx;
    if (head_dim_v == shape->head_dim)
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_HEAD_DIM_V,
                       "head_dim_v %d not in {%d}: aiter-generic needs head_dim_v equal to "
                       "head_dim",
                       (int)head_dim_v, (int)shape->head_dim);
}

static int aiter_generic_check_q_dtype(const attn_plugin_context *ctx, const attn_shape *shape,
                                       attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_dtype_in(verdict, ATTN_REASON_Q_DTYPE, "q_dtype", shape->q_dtype,
                                      aiter_generic_q_dtypes,
                                      ATTN_PRED_COUNT(aiter_generic_q_dtypes));
}

/* The dtypes allowed for a KV cache or for the math: the query's 16-bit type
 * (the matrix instructions take both operands in one type) and the FP8 format
 * of the arch. Returns how many were written (0, 1 or 2). */
static uint32_t aiter_generic_q_or_fp8_dtypes(const attn_shape *shape, int32_t allowed[2])
{
    uint32_t count = 0;
    int32_t fp8 = attn_pred_arch_fp8_dtype(shape->arch);
    if (attn_pred_is_16bit_float(shape->q_dtype))
        allowed[count++] = shape->q_dtype;
    if (fp8 != ATTN_DTYPE_INVALID)
        allowed[count++] = fp8;
    return count;
}

/* Shared by the KV-cache and compute predicates: accept the query's 16-bit
 * type or the arch's FP8 format; name the arch when the FP8 flavour is the
 * wrong one, since that is the mistake a user makes when moving a model
 * between gfx942 and gfx950. */
static int aiter_generic_require_q_or_fp8(attn_verdict *verdict, const attn_shape *shape,
                                          attn_reason reason, const char *field, int32_t dtype)
{
    int32_t allowed[2];
    uint32_t count = aiter_generic_q_or_fp8_dtypes(shape, allowed);
    int32_t arch_fp8 = attn_pred_arch_fp8_dtype(shape->arch);
    char set[ATTN_PRED_SET_MAX];

    if (attn_pred_int_in(dtype, allowed, count))
        return attn_accept(verdict);
    if (attn_pred_is_fp8(dtype) && arch_fp8 != ATTN_DTYPE_INVALID)
        return attn_reject(verdict, reason, "%s %s is not the FP8 format of %.*s, which uses %s",
                           field, attn_dtype_spelling(dtype), ATTN_ARCH_MAX - 1, shape->arch,
                           attn_dtype_spelling(arch_fp8));
    if (attn_pred_is_fp8(dtype))
        return attn_reject(verdict, reason, "%s %s: no FP8 format is known for arch %.*s", field,
                           attn_dtype_spelling(dtype), ATTN_ARCH_MAX - 1, shape->arch);
    /* Without a usable q_dtype there is no 16-bit type to match; say so
     * rather than print a set that leaves out the very type asked for. */
    if (attn_pred_is_16bit_float(dtype) && !attn_pred_is_16bit_float(shape->q_dtype))
        return attn_reject(verdict, reason,
                           "%s %s needs q_dtype bf16 or f16 to match, but q_dtype is %s", field,
                           attn_dtype_spelling(dtype), attn_dtype_spelling(shape->q_dtype));
    return attn_reject(verdict, reason, "%s %s not in %s: a 16-bit %s must equal q_dtype", field,
                       attn_dtype_spelling(dtype),
                       attn_pred_format_dtype_set(set, sizeof set, allowed, count), field);
}

/* A 16-bit cache in the query's type, or an FP8 cache in the arch's format
 * (dequantised with k_descale / v_descale inside the kernel). */
static int aiter_generic_check_kv_dtype(const attn_plugin_context *ctx, const attn_shape *shape,
                                        attn_verdict *verdict)
{
    (void)ctx;
    return aiter_generic_require_q_or_fp8(verdict, shape, ATTN_REASON_KV_DTYPE, "kv_dtype",
                                          shape->kv_dtype);
}

/* The output is written in the query's type: bf16 or f16, never f32, so a
 * host never pays for a wider output it did not ask the query for. */
static int aiter_generic_check_out_dtype(const attn_plugin_context *ctx, const attn_shape *shape,
                                         attn_verdict *verdict)
{
    (void)ctx;
    if (attn_pred_is_16bit_float(shape->out_dtype) && shape->out_dtype == shape->q_dtype)
        return attn_accept(verdict);
    if (attn_pred_is_16bit_float(shape->q_dtype))
        return attn_reject(verdict, ATTN_REASON_OUT_DTYPE,
                           "out_dtype %s not in {%s}: aiter-generic writes its output in q_dtype",
                           attn_dtype_spelling(shape->out_dtype),
                           attn_dtype_spelling(shape->q_dtype));
    if (!attn_pred_is_16bit_float(shape->out_dtype))
        return attn_reject(verdict, ATTN_REASON_OUT_DTYPE,
                           "out_dtype %s not in {bf16, f16}: aiter-generic writes its output in "
                           "q_dtype",
                           attn_dtype_spelling(shape->out_dtype));
    /* Without a usable q_dtype there is no type to match (see q_dtype). */
    return attn_reject(verdict, ATTN_REASON_OUT_DTYPE,
                       "out_dtype %s needs q_dtype bf16 or f16 to match, but q_dtype is %s",
                       attn_dtype_spelling(shape->out_dtype), attn_dtype_spelling(shape->q_dtype));
}

/* 16-bit math runs in the query's type; FP8 math in the arch's format. */
static int aiter_generic_check_compute_dtype(const attn_plugin_context *ctx,
                                             const attn_shape *shape, attn_verdict *verdict)
{
    (void)ctx;
    return aiter_generic_require_q_or_fp8(verdict, shape, ATTN_REASON_COMPUTE_DTYPE,
                                          "compute_dtype", shape->compute_dtype);
}

/* The FP8 path quantises Q per head and has only an MHA kernel. This is the
 * restriction that once ran BF16 silently for grouped shapes; here it is a
 * named rejection, and the registry's fallback rule (FP8 -> BF16 compute)
 * records it as the reason when it applies. */
static int aiter_generic_check_fp8_compute_mha_only(const attn_plugin_context *ctx,
                                                    const attn_shape *shape, attn_verdict *verdict)
{
    int32_t kv_heads = attn_shape_kv_heads(shape);
    (void)ctx;
    if (!attn_pred_is_fp8(shape->compute_dtype) || shape->num_q_heads == kv_heads)
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_FP8_COMPUTE_MHA_ONLY,
                       "FP8 compute is MHA-only: num_q_heads (%d) != num_kv_heads (%d)",
                       (int)shape->num_q_heads, (int)kv_heads);
}

/* FP8 math reads K and V as stored, so it needs an FP8 cache; with a 16-bit
 * cache the host should ask for 16-bit math. */
static int aiter_generic_check_fp8_compute_kv(const attn_plugin_context *ctx,
                                              const attn_shape *shape, attn_verdict *verdict)
{
    (void)ctx;
    if (!attn_pred_is_fp8(shape->compute_dtype) || attn_pred_is_fp8(shape->kv_dtype))
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_COMPUTE_DTYPE,
                       "compute_dtype %s needs an FP8 KV cache, but kv_dtype is %s",
                       attn_dtype_spelling(shape->compute_dtype),
                       attn_dtype_spelling(shape->kv_dtype));
}

static int aiter_generic_check_page_size(const attn_plugin_context *ctx, const attn_shape *shape,
                                         attn_verdict *verdict)
{
    const int32_t page = shape->page_size;
    (void)ctx;
    if (page == 1 || (page >= AITER_GENERIC_PAGE_STEP && page <= AITER_GENERIC_PAGE_MAX &&
                      page % AITER_GENERIC_PAGE_STEP == 0))
        return attn_accept(verdict);
    return attn_reject(verdict, ATTN_REASON_PAGE_SIZE,
                       "page_size %d not in {1, 16, 32, 48, ..., %d}: aiter-generic takes page 1 "
                       "or a multiple of %d up to %d",
                       (int)page, AITER_GENERIC_PAGE_MAX, AITER_GENERIC_PAGE_STEP,
                       AITER_GENERIC_PAGE_MAX);
}

/* Any query length: the 2D kernel serves prefill and decode alike. */
static int aiter_generic_check_q_len(const attn_plugin_context *ctx, const attn_shape *shape,
                                     attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_int_range(verdict, ATTN_REASON_Q_LEN, "max_q_len", shape->max_q_len, 1,
                                       INT32_MAX);
}

/* Any context length: long contexts go to the split-KV 3D kernel. */
static int aiter_generic_check_kv_len(const attn_plugin_context *ctx, const attn_shape *shape,
                                      attn_verdict *verdict)
{
    (void)ctx;
    return attn_pred_require_int_range(verdict, ATTN_REASON_KV_LEN, "max_kv_len", shape->max_kv_len,
                                       1, INT32_MAX);
}

/* Last, once the shape is known to be one the kernels take: the launch plan
 * of the shape on its arch (the table the launcher reads) must fit the
 * arch's shared memory / LDS. */
static int aiter_generic_check_launch_plan(const attn_plugin_context *ctx, const attn_shape *shape,
                                           attn_verdict *verdict)
{
    (void)ctx;
    return attn_launch_plan_predicate(attn_launch_plan_generic, shape, verdict);
}

static attn_status aiter_generic_describe_plan(const attn_plugin_context *ctx,
                                               const attn_shape *shape, attn_launch_plan *plan)
{
    (void)ctx;
    return attn_launch_plan_describe(attn_launch_plan_generic, shape, plan);
}

/* Causal and non-causal masking, sliding windows, softcap and sinks are all
 * handled by the kernels, so there is no predicate for them: a predicate
 * that always accepts would only add noise to `attnreg explain`. */
static const attn_predicate aiter_generic_predicates[] = {
    {"arch", aiter_generic_check_arch},
    {"gqa_ratio", aiter_generic_check_gqa_ratio},
    {"head_dim", aiter_generic_check_head_dim},
    {"head_dim_v", aiter_generic_check_head_dim_v},
    {"q_dtype", aiter_generic_check_q_dtype},
    {"kv_dtype", aiter_generic_check_kv_dtype},
    {"out_dtype", aiter_generic_check_out_dtype},
    {"compute_dtype", aiter_generic_check_compute_dtype},
    {"fp8_compute_mha_only", aiter_generic_check_fp8_compute_mha_only},
    {"fp8_compute_kv", aiter_generic_check_fp8_compute_kv},
    {"page_size", aiter_generic_check_page_size},
    {"q_len", aiter_generic_check_q_len},
    {"kv_len", aiter_generic_check_kv_len},
    {"launch_plan", aiter_generic_check_launch_plan},
};

/* ---- backend: the kernel library's entry points ------------------------
 * attn_gpu_entry.h declares them: the kernel library's with GPU kernels,
 * attn_no_kernels.h's ("built without GPU kernels") without. */
#define ATTN_GPU_ENTRY_PLUGIN_NAME AITER_GENERIC_NAME
#include "attn_gpu_entry.h"

ATTN_PLUGIN_DEFINE(.name = AITER_GENERIC_NAME, .version = "0.1.0",
                   .description = "paged unified attention for any MHA/GQA/MQA ratio (2D and "
                                  "split-KV 3D kernels)",
                   .built_archs = attn_gpu_kernel_archs, .predicates = aiter_generic_predicates,
                   .num_predicates = ATTN_PRED_COUNT(aiter_generic_predicates),
                   .create = attn_gpu_generic_create, .workspace_size = attn_gpu_workspace_size,
                   .forward = attn_gpu_forward, .destroy = attn_gpu_destroy,
                   .probe_devices = attn_gpu_probe_devices, .graph_capturable = 1,
                   .describe_plan = aiter_generic_describe_plan,
                   .arch_limits = attn_gpu_arch_limits,
                   .num_arch_limits = (uint32_t)ATTN_GPU_ARCH_LIMITS_COUNT,
                   .forward_features = ATTN_GPU_FORWARD_FEATURES, .append_kv = attn_gpu_append_kv,
                   .merge_states = attn_gpu_merge_states)
