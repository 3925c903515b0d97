/* SPDX-License-Identifier: Apache-2.0 */
/* backend.c — constructing, running and destroying a selected backend. The
 * checks of "what is really here" (code for the arch in the binary, a device)
 * happen in create, each with its own status, because selection answers for
 * the arch the host names even when this machine cannot run it. */
#include <stddef.h>
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

ATTNREG_API attn_status attn_backend_forward(attn_backend *b, const attn_forward_args *args)
{
    if (!b || !args)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_backend_forward: NULL argument");
    if (args->struct_size < ATTN_FORWARD_ARGS_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "forward args struct_size %u is smaller than the oldest layout's %zu",
                         args->struct_size, (size_t)ATTN_FORWARD_ARGS_MIN_SIZE);
    attn_forward_args full_args;
    if (args->struct_size < sizeof full_args) {
        attn_copy_versioned(&full_args, sizeof full_args, args, args->struct_size);
        full_args.struct_size = sizeof full_args;
        args = &full_args;
    }
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
    char err[512] = "";
    attn_status st = b->candidate->desc.forward(b->impl, args, err, sizeof err);
    err[sizeof err - 1] = '\0';
    if (st != ATTN_OK)
        return attn_fail(st, "%s: forward failed: %s", b->candidate->name,
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
