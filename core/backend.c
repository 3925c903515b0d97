/* SPDX-License-Identifier: Apache-2.0 */
/* backend.c — constructing, running and destroying a selected backend. The
 * checks of "what is really here" (code for the arch in the binary, a device)
 * happen in create, each with its own status, because selection answers for
 * the arch the host names even when this machine cannot run it. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_frozen.h"
#include "internal.h"

struct attn_backend {
    attn_candidate *candidate;
    void *impl;
    attn_shape shape;
};

/* The candidate of a selection, when it belongs to this registry. */
static attn_candidate *selection_candidate(attn_registry *reg, const attn_selection *sel)
{
    for (size_t i = 0; i < reg->num_candidates; i++)
        if (reg->candidates[i] == sel->candidate)
            return reg->candidates[i];
    return NULL;
}

ATTNREG_API attn_status attn_backend_create(attn_registry *reg, const attn_selection *sel,
                                            attn_backend **out)
{
    if (!reg || !sel || !out)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_backend_create: NULL argument");
    *out = NULL;
    if (!sel->candidate)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_backend_create: the selection holds no backend (did select fail?)");
    attn_candidate *c = selection_candidate(reg, sel);
    if (!c)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_backend_create: the selection comes from another registry");
    if (!attn_candidate_ensure_loaded(c))
        return attn_fail(c->load_status, "%s: %s", c->name, c->load_message);
    /* The selection may be of an older layout (its effective_shape then is
     * too): read the shape by the struct_size the library wrote into it. */
    attn_shape effective;
    if (sel->struct_size < ATTN_SELECTION_MIN_SIZE ||
        attn_shape_normalize(&sel->effective_shape, &effective) != ATTN_OK)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_backend_create: selection struct_size %u or its shape's is too "
                         "small; call attn_selection_init()",
                         sel->struct_size);
    const attn_shape *s = &effective;
    char why[512];
    attn_status st = attn_candidate_can_run(c, s->arch, why, sizeof why);
    if (st != ATTN_OK)
        return attn_fail(st, "%s: %s", c->name, why);

    attn_backend *b = calloc(1, sizeof *b);
    if (!b)
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    char err[512] = "";
    /* The plugin gets its own copy of the shape (a const pointer does not
     * stop a plugin from writing through it) and its error text is cut at
     * the buffer's end whether or not it wrote a NUL. */
    b->shape = *s;
    attn_shape given = *s;
    st = c->desc.create(&c->ctx, &given, &b->impl, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (st != ATTN_OK) {
        free(b);
        return attn_fail(st, "%s: create failed: %s", c->name,
                         err[0] ? err : attn_status_message(st));
    }
    b->candidate = c;
    attn_registry_backend_created(reg);
    attn_log(&reg->logger, ATTN_LOG_DEBUG, "created %s", c->name);
    *out = b;
    return ATTN_OK;
}

ATTNREG_API attn_status attn_registry_describe_plan(attn_registry *reg, const attn_selection *sel,
                                                    attn_launch_plan *plan)
{
    if (!reg || !sel || !plan)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_describe_plan: NULL argument");
    if (plan->struct_size < ATTN_LAUNCH_PLAN_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_registry_describe_plan: plan->struct_size %u is too small",
                         (unsigned)plan->struct_size);
    if (!sel->candidate)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_registry_describe_plan: the selection holds no backend");
    attn_candidate *c = selection_candidate(reg, sel);
    if (!c)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_registry_describe_plan: the selection comes from another registry");
    if (!attn_candidate_ensure_loaded(c))
        return attn_fail(c->load_status, "%s: %s", c->name, c->load_message);
    if (!c->desc.describe_plan)
        return attn_fail(ATTN_ERR_NOT_FOUND, "%s describes no launch plans", c->name);
    /* The plugin writes into the host's full-size copy, on a private copy of
     * the shape; names are terminated and the count bounded here. */
    attn_shape shape;
    if (sel->struct_size < ATTN_SELECTION_MIN_SIZE ||
        attn_shape_normalize(&sel->effective_shape, &shape) != ATTN_OK)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_registry_describe_plan: selection struct_size %u or its shape's "
                         "is too small; call attn_selection_init()",
                         sel->struct_size);
    attn_launch_plan full;
    memset(&full, 0, sizeof full);
    full.struct_size = sizeof full;
    attn_status st = c->desc.describe_plan(&c->ctx, &shape, &full);
    if (st != ATTN_OK)
        return attn_fail(st, "%s: no launch plan for the shape", c->name);
    full.struct_size = plan->struct_size;
    full.arch[ATTN_ARCH_MAX - 1] = '\0';
    if (full.num_kernels > ATTN_PLAN_MAX_KERNELS)
        full.num_kernels = ATTN_PLAN_MAX_KERNELS;
    for (uint32_t k = 0; k < ATTN_PLAN_MAX_KERNELS; k++) {
        full.kernels[k].kernel[ATTN_PLAN_NAME_MAX - 1] = '\0';
        full.kernels[k].role[ATTN_PLAN_NAME_MAX - 1] = '\0';
    }
    attn_copy_versioned(plan, plan->struct_size, &full, sizeof full);
    return ATTN_OK;
}

ATTNREG_API void attn_forward_args_init_sized(attn_forward_args *args, size_t size)
{
    attn_forward_args full;
    memset(&full, 0, sizeof full);
    full.q_descale = full.k_descale = full.v_descale = 1.0f;
    attn_init_sized(args, size, &full, sizeof full);
}

ATTNREG_API void attn_batch_limits_init_sized(attn_batch_limits *limits, size_t size)
{
    attn_batch_limits full;
    memset(&full, 0, sizeof full);
    attn_init_sized(limits, size, &full, sizeof full);
}

/* 0.4: the KV append's defaults: nothing to write yet, scales 1 (what an
 * FP8 cache without quantisation scales means). */
ATTNREG_API void attn_append_args_init_sized(attn_append_args *args, size_t size)
{
    attn_append_args full;
    memset(&full, 0, sizeof full);
    full.k_scale = full.v_scale = 1.0f;
    attn_init_sized(args, size, &full, sizeof full);
}

ATTNREG_API attn_status attn_backend_workspace_size(const attn_backend *b,
                                                    const attn_batch_limits *limits, size_t *bytes)
{
    if (!b || !limits || !bytes)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_backend_workspace_size: NULL argument");
    if (limits->struct_size < ATTN_BATCH_LIMITS_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "batch limits struct_size %u is smaller than the oldest layout's %zu",
                         limits->struct_size, (size_t)ATTN_BATCH_LIMITS_MIN_SIZE);
    /* Older hosts pass fewer fields: the plugin sees a whole struct of the
     * library's size, the missing fields zero. */
    attn_batch_limits full_limits;
    attn_copy_versioned(&full_limits, sizeof full_limits, limits,
                        limits->struct_size < sizeof full_limits ? limits->struct_size
                                                                 : sizeof full_limits);
    full_limits.struct_size = sizeof full_limits;
    limits = &full_limits;
    if (limits->max_num_seqs <= 0 || limits->max_num_tokens <= 0)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "batch limits must be positive (max_num_seqs %d, max_num_tokens %d)",
                         limits->max_num_seqs, limits->max_num_tokens);
    *bytes = 0;
    attn_status st = b->candidate->desc.workspace_size(b->impl, limits, bytes);
    if (st != ATTN_OK)
        return attn_fail(st, "%s: workspace_size failed", b->candidate->name);
    return ATTN_OK;
}

/* K/V strides (0.4): what a plugin is handed. A stride equal to the
 * contiguous layout's becomes 0, so a plugin tells "today's layout" by
 * zeros alone and needs no shape arithmetic at its boundary; negative
 * strides, and a token or head stride smaller than the row they step over
 * (rows that overlap), are refused here for every backend. Returns 1 when
 * any stride is left non-zero (a layout other than the contiguous one). */
static int resolve_kv_strides(const attn_shape *s, attn_forward_args *a, char *why, size_t size)
{
    const int64_t hkv = attn_shape_kv_heads(s), page = s->page_size;
    const int64_t dims[2] = {s->head_dim, attn_shape_head_dim_v(s)};
    int64_t *strides[2][3] = {{&a->k_stride_block, &a->k_stride_token, &a->k_stride_head},
                              {&a->v_stride_block, &a->v_stride_token, &a->v_stride_head}};
    static const char *const names[2][3] = {{"k_stride_block", "k_stride_token", "k_stride_head"},
                                            {"v_stride_block", "v_stride_token", "v_stride_head"}};
    int custom = 0;
    why[0] = '\0';
    for (int kv = 0; kv < 2; kv++) {
        const int64_t d = dims[kv];
        const int64_t contiguous[3] = {page * hkv * d, hkv * d, d};
        /* A token or head stride that is used (more than one token per page,
         * more than one KV head) must step over at least one row of d. */
        const int64_t counts[3] = {1, page, hkv};
        for (int i = 0; i < 3; i++) {
            int64_t v = *strides[kv][i];
            if (v < 0) {
                snprintf(why, size, "%s is %lld: strides are element counts >= 0 (0 = contiguous)",
                         names[kv][i], (long long)v);
                return -1;
            }
            if (v != 0 && i > 0 && counts[i] > 1 && v < d) {
                snprintf(why, size,
                         "%s is %lld, less than the %lld elements of a row: rows would overlap",
                         names[kv][i], (long long)v, (long long)d);
                return -1;
            }
            if (v == contiguous[i])
                *strides[kv][i] = 0;
            custom |= *strides[kv][i] != 0;
        }
    }
    return custom;
}

ATTNREG_API attn_status attn_backend_forward(attn_backend *b, const attn_forward_args *args)
{
    if (!b || !args)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_backend_forward: NULL argument");
    if (args->struct_size < ATTN_FORWARD_ARGS_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "forward args struct_size %u is smaller than the oldest layout's %zu",
                         args->struct_size, (size_t)ATTN_FORWARD_ARGS_MIN_SIZE);
    /* Always a private copy: older hosts' missing fields read as zero, and
     * the K/V strides are resolved in it (never in the host's struct). */
    attn_forward_args full_args;
    attn_copy_versioned(&full_args, sizeof full_args, args,
                        args->struct_size < sizeof full_args ? args->struct_size
                                                             : sizeof full_args);
    full_args.struct_size = sizeof full_args;
    args = &full_args;
    char why[256];
    int custom = resolve_kv_strides(&b->shape, &full_args, why, sizeof why);
    if (custom < 0)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "%s: %s", b->candidate->name, why);
    /* forward_features is 0 for plugins older than 1.3 (the descriptor is
     * copied by its struct_size), so one test covers them. */
    if (custom && !(b->candidate->desc.forward_features & ATTN_FORWARD_KV_STRIDES))
        return attn_fail(ATTN_ERR_UNSUPPORTED,
                         "%s: reads only contiguous [blocks, page, kv_heads, head_dim] K/V caches "
                         "(its plugin, ABI %u.%u, does not declare ATTN_FORWARD_KV_STRIDES); got "
                         "k strides (%lld, %lld, %lld), v strides (%lld, %lld, %lld)",
                         b->candidate->name, (unsigned)b->candidate->desc.abi_major,
                         (unsigned)b->candidate->desc.abi_minor, (long long)args->k_stride_block,
                         (long long)args->k_stride_token, (long long)args->k_stride_head,
                         (long long)args->v_stride_block, (long long)args->v_stride_token,
                         (long long)args->v_stride_head);
    /* Cheap checks of the call against the shape the backend was built for:
     * a kernel selected for 2-4 query tokens must not be handed 8. */
    const attn_shape *s = &b->shape;
    if (!args->q || !args->k_cache || !args->v_cache || !args->out || !args->block_table ||
        !args->cu_seqlens_q || !args->seqused_k)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: forward needs q, k_cache, v_cache, out, block_table, cu_seqlens_q "
                         "and seqused_k",
                         b->candidate->name);
    if (args->num_seqs <= 0 || args->num_tokens < 0)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "%s: num_seqs %d / num_tokens %d out of range",
                         b->candidate->name, args->num_seqs, args->num_tokens);
    if (args->max_seqlen_q > s->max_q_len || args->max_seqlen_k > s->max_kv_len)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: batch max_seqlen_q %d / max_seqlen_k %d exceed the shape's max_q_len "
                         "%d / max_kv_len %d the backend was created for",
                         b->candidate->name, args->max_seqlen_q, args->max_seqlen_k, s->max_q_len,
                         s->max_kv_len);
    if (s->has_sinks && !args->sinks)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: the shape has sinks but forward got no sinks array",
                         b->candidate->name);
    /* The LSE output (0.4) is part of the decision (shape.return_lse), so
     * an array without the flag, or the flag without an array, is the
     * host's mistake, not something to ignore. */
    if (s->return_lse && !args->lse)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: the shape asks for the log-sum-exp (return_lse) but forward got no "
                         "lse array",
                         b->candidate->name);
    if (!s->return_lse && args->lse)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: forward got an lse array, but the backend was created for a shape "
                         "without return_lse",
                         b->candidate->name);
    if (args->lse_stride_token < 0 || args->lse_stride_head < 0)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: lse strides (%lld, %lld) must be >= 0 (0 = [num_tokens, Hq])",
                         b->candidate->name, (long long)args->lse_stride_token,
                         (long long)args->lse_stride_head);
    char err[512] = "";
    attn_status st = b->candidate->desc.forward(b->impl, args, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (st != ATTN_OK)
        return attn_fail(st, "%s: forward failed: %s", b->candidate->name,
                         err[0] ? err : attn_status_message(st));
    return ATTN_OK;
}

ATTNREG_API attn_status attn_backend_append_kv(attn_backend *b, const attn_append_args *args)
{
    if (!b || !args)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_backend_append_kv: NULL argument");
    if (args->struct_size < ATTN_APPEND_ARGS_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "append args struct_size %u is smaller than the oldest layout's %zu",
                         args->struct_size, (size_t)ATTN_APPEND_ARGS_MIN_SIZE);
    /* The descriptor is copied by its struct_size: NULL for plugins older
     * than 1.3 and for those without an append. */
    if (!b->candidate->desc.append_kv)
        return attn_fail(ATTN_ERR_UNSUPPORTED, "%s has no KV append (its plugin has no append_kv)",
                         b->candidate->name);
    attn_append_args full;
    attn_copy_versioned(&full, sizeof full, args,
                        args->struct_size < sizeof full ? args->struct_size : sizeof full);
    full.struct_size = sizeof full;
    if (full.num_tokens < 0 || full.num_blocks < 0)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: append num_tokens (%d) and num_blocks (%d) must be >= 0",
                         b->candidate->name, full.num_tokens, full.num_blocks);
    if (full.num_tokens > 0 &&
        (!full.k || !full.v || !full.slot_mapping || !full.k_cache || !full.v_cache))
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "%s: append needs k, v, slot_mapping, k_cache and v_cache",
                         b->candidate->name);
    const int64_t strides[] = {full.k_stride_token,       full.k_stride_head,
                               full.v_stride_token,       full.v_stride_head,
                               full.k_cache_stride_block, full.k_cache_stride_token,
                               full.k_cache_stride_head,  full.v_cache_stride_block,
                               full.v_cache_stride_token, full.v_cache_stride_head};
    for (size_t i = 0; i < sizeof strides / sizeof strides[0]; i++)
        if (strides[i] < 0)
            return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                             "%s: append strides are element counts >= 0 (0 = contiguous)",
                             b->candidate->name);
    char err[512] = "";
    attn_status st = b->candidate->desc.append_kv(b->impl, &full, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (st != ATTN_OK)
        return attn_fail(st, "%s: KV append failed: %s", b->candidate->name,
                         err[0] ? err : attn_status_message(st));
    return ATTN_OK;
}

ATTNREG_API attn_status attn_backend_merge_states(attn_backend *b, const attn_merge_args *args)
{
    if (!b)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_backend_merge_states: backend is NULL");
    /* The checks attn_merge_states makes, in one place (merge.c). */
    attn_merge_args full;
    attn_status st = attn_merge_check("attn_backend_merge_states", args, &full);
    if (st != ATTN_OK)
        return st;
    /* The descriptor is copied by its struct_size: NULL for plugins older
     * than 1.4 and for those without a merge. */
    if (!b->candidate->desc.merge_states)
        return attn_fail(ATTN_ERR_UNSUPPORTED,
                         "%s cannot merge attention states (its plugin, ABI %u.%u, has no "
                         "merge_states); merge host arrays with attn_merge_states",
                         b->candidate->name, (unsigned)b->candidate->desc.abi_major,
                         (unsigned)b->candidate->desc.abi_minor);
    if (full.num_tokens == 0)
        return ATTN_OK;
    char err[512] = "";
    st = b->candidate->desc.merge_states(b->impl, &full, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (st != ATTN_OK)
        return attn_fail(st, "%s: merge_states failed: %s", b->candidate->name,
                         err[0] ? err : attn_status_message(st));
    return ATTN_OK;
}

ATTNREG_API void attn_backend_destroy(attn_backend *b)
{
    if (!b)
        return;
    attn_registry *reg = b->candidate->registry;
    b->candidate->desc.destroy(b->impl);
    free(b);
    attn_registry_backend_destroyed(reg);
}

ATTNREG_API const char *attn_backend_name(const attn_backend *b)
{
    return b ? b->candidate->name : NULL;
}

ATTNREG_API const attn_shape *attn_backend_shape(const attn_backend *b)
{
    return b ? &b->shape : NULL;
}
