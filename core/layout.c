/* SPDX-License-Identifier: Apache-2.0 */
/* layout.c — the layout of every public struct as this library was compiled,
 * from one table of offsetof/sizeof, for bindings that mirror the structs
 * (the Python package checks each mirrored field at import). */
#include <string.h>

#include "internal.h"

typedef struct layout_field {
    const char *name;
    size_t offset;
    size_t size;
} layout_field;

typedef struct layout_struct {
    const char *name;
    size_t size;
    const layout_field *fields;
    size_t num_fields;
} layout_struct;

#define F(T, f)                                                                                    \
    {                                                                                              \
#f, offsetof(T, f), sizeof(((T *)0)->f)                                                    \
    }

#define SHAPE_FIELD_(member, KIND) F(attn_shape, member),
static const layout_field shape_fields[] = {F(attn_shape, struct_size),
                                            ATTN_SHAPE_FIELD_MAP(SHAPE_FIELD_)};
#undef SHAPE_FIELD_

/* ATTN_SHAPE_FIELD_MAP names every field: their sizes add up to the struct's
 * (attn_shape has no padding). The growth test's headers add one on purpose. */
#ifndef ATTNREG_ABI_GROWTH_BUILD
#define SHAPE_FIELD_SIZE_(member, KIND) +sizeof(((attn_shape *)0)->member)
_Static_assert(sizeof(uint32_t) ATTN_SHAPE_FIELD_MAP(SHAPE_FIELD_SIZE_) == sizeof(attn_shape),
               "ATTN_SHAPE_FIELD_MAP misses a field of attn_shape");
#undef SHAPE_FIELD_SIZE_
#endif

static const layout_field forward_args_fields[] = {
    F(attn_forward_args, struct_size),
    F(attn_forward_args, num_seqs),
    F(attn_forward_args, num_tokens),
    F(attn_forward_args, q),
    F(attn_forward_args, q_stride_token),
    F(attn_forward_args, q_stride_head),
    F(attn_forward_args, k_cache),
    F(attn_forward_args, v_cache),
    F(attn_forward_args, num_blocks),
    F(attn_forward_args, block_table),
    F(attn_forward_args, block_table_stride),
    F(attn_forward_args, cu_seqlens_q),
    F(attn_forward_args, seqused_k),
    F(attn_forward_args, max_seqlen_q),
    F(attn_forward_args, max_seqlen_k),
    F(attn_forward_args, scale),
    F(attn_forward_args, q_descale),
    F(attn_forward_args, k_descale),
    F(attn_forward_args, v_descale),
    F(attn_forward_args, sinks),
    F(attn_forward_args, out),
    F(attn_forward_args, out_stride_token),
    F(attn_forward_args, out_stride_head),
    F(attn_forward_args, workspace),
    F(attn_forward_args, workspace_size),
    F(attn_forward_args, stream),
    F(attn_forward_args, k_stride_block),
    F(attn_forward_args, k_stride_token),
    F(attn_forward_args, k_stride_head),
    F(attn_forward_args, v_stride_block),
    F(attn_forward_args, v_stride_token),
    F(attn_forward_args, v_stride_head),
    F(attn_forward_args, lse),
    F(attn_forward_args, lse_stride_token),
    F(attn_forward_args, lse_stride_head),
};

static const layout_field batch_limits_fields[] = {
    F(attn_batch_limits, struct_size),
    F(attn_batch_limits, max_num_seqs),
    F(attn_batch_limits, max_num_tokens),
};

static const layout_field device_info_fields[] = {
    F(attn_device_info, struct_size),  F(attn_device_info, index),
    F(attn_device_info, arch),         F(attn_device_info, name),
    F(attn_device_info, memory_bytes), F(attn_device_info, compute_units),
};

static const layout_field registry_options_fields[] = {
    F(attn_registry_options, struct_size),
    F(attn_registry_options, conf_paths),
    F(attn_registry_options, num_conf_paths),
    F(attn_registry_options, skip_env_conf_path),
    F(attn_registry_options, skip_default_conf),
    F(attn_registry_options, log_fn),
    F(attn_registry_options, log_user),
    F(attn_registry_options, log_level),
    F(attn_registry_options, strict),
    F(attn_registry_options, forced_backend),
    F(attn_registry_options, disabled_backends),
    F(attn_registry_options, num_disabled_backends),
    F(attn_registry_options, runnable),
    F(attn_registry_options, fail_on_conf_error),
    F(attn_registry_options, skip_env),
    F(attn_registry_options, probe_out_of_process),
};

static const layout_field diagnostic_fields[] = {
    F(attn_diagnostic, struct_size), F(attn_diagnostic, status), F(attn_diagnostic, file),
    F(attn_diagnostic, line),        F(attn_diagnostic, plugin), F(attn_diagnostic, message),
};

static const layout_field plugin_info_fields[] = {
    F(attn_plugin_info, struct_size), F(attn_plugin_info, name),
    F(attn_plugin_info, priority),    F(attn_plugin_info, enabled),
    F(attn_plugin_info, archs),       F(attn_plugin_info, library),
    F(attn_plugin_info, conf_file),   F(attn_plugin_info, conf_line),
    F(attn_plugin_info, candidate),
};

static const layout_field plugin_load_info_fields[] = {
    F(attn_plugin_load_info, struct_size),      F(attn_plugin_load_info, status),
    F(attn_plugin_load_info, reason),           F(attn_plugin_load_info, message),
    F(attn_plugin_load_info, version),          F(attn_plugin_load_info, description),
    F(attn_plugin_load_info, built_archs),      F(attn_plugin_load_info, abi_major),
    F(attn_plugin_load_info, abi_minor),        F(attn_plugin_load_info, num_predicates),
    F(attn_plugin_load_info, arch_limits),      F(attn_plugin_load_info, num_arch_limits),
    F(attn_plugin_load_info, graph_capturable),
};

static const layout_field selection_fields[] = {
    F(attn_selection, struct_size),      F(attn_selection, backend_name),
    F(attn_selection, candidate),        F(attn_selection, effective_shape),
    F(attn_selection, fallback_applied), F(attn_selection, fallback_rule),
    F(attn_selection, fallback_backend), F(attn_selection, fallback_reason),
    F(attn_selection, fallback_message), F(attn_selection, message),
    F(attn_selection, graph_capturable),
};

static const layout_field arch_limits_fields[] = {
    F(attn_arch_limits, struct_size),
    F(attn_arch_limits, arch),
    F(attn_arch_limits, shared_bytes_per_block),
    F(attn_arch_limits, wave_size),
    F(attn_arch_limits, max_threads_per_block),
    F(attn_arch_limits, max_registers_per_thread),
};

static const layout_field kernel_plan_fields[] = {
    F(attn_kernel_plan, kernel),       F(attn_kernel_plan, role), F(attn_kernel_plan, threads),
    F(attn_kernel_plan, rows),         F(attn_kernel_plan, keys), F(attn_kernel_plan, stages),
    F(attn_kernel_plan, shared_bytes),
};

static const layout_field launch_plan_fields[] = {
    F(attn_launch_plan, struct_size),  F(attn_launch_plan, arch),
    F(attn_launch_plan, shared_limit), F(attn_launch_plan, wave_size),
    F(attn_launch_plan, num_kernels),  F(attn_launch_plan, kernels),
};

static const layout_field verdict_record_fields[] = {
    F(attn_verdict_record, struct_size), F(attn_verdict_record, pass),
    F(attn_verdict_record, backend),     F(attn_verdict_record, accepted),
    F(attn_verdict_record, selected),    F(attn_verdict_record, reason),
    F(attn_verdict_record, reason_name), F(attn_verdict_record, message),
    F(attn_verdict_record, predicate),   F(attn_verdict_record, conf_file),
    F(attn_verdict_record, conf_line),   F(attn_verdict_record, priority),
};

static const layout_field layer_fields[] = {
    F(attn_layer, struct_size),  F(attn_layer, kind),      F(attn_layer, window_left),
    F(attn_layer, window_right), F(attn_layer, type_name),
};

static const layout_field model_fields[] = {
    F(attn_model, struct_size),   F(attn_model, arch),          F(attn_model, num_q_heads),
    F(attn_model, num_kv_heads),  F(attn_model, head_dim),      F(attn_model, head_dim_v),
    F(attn_model, num_layers),    F(attn_model, layers),        F(attn_model, softcap),
    F(attn_model, has_sinks),     F(attn_model, q_dtype),       F(attn_model, kv_dtype),
    F(attn_model, compute_dtype), F(attn_model, out_dtype),     F(attn_model, page_size),
    F(attn_model, tp_size),       F(attn_model, max_model_len), F(attn_model, max_prefill_tokens),
    F(attn_model, spec_tokens),   F(attn_model, scale),
};

static const layout_field plan_summary_fields[] = {
    F(attn_plan_summary, struct_size),
    F(attn_plan_summary, status),
    F(attn_plan_summary, message),
    F(attn_plan_summary, num_entries),
    F(attn_plan_summary, num_layers),
    F(attn_plan_summary, tp_size),
    F(attn_plan_summary, rank_q_heads),
    F(attn_plan_summary, rank_kv_heads),
    F(attn_plan_summary, kv_heads_replicated),
    F(attn_plan_summary, prefill_q_len),
    F(attn_plan_summary, decode_q_len),
    F(attn_plan_summary, verify_q_len),
    F(attn_plan_summary, max_kv_len),
};

static const layout_field plan_entry_fields[] = {
    F(attn_plan_entry, struct_size), F(attn_plan_entry, phase),
    F(attn_plan_entry, layer_kind),  F(attn_plan_entry, layer_type),
    F(attn_plan_entry, layers),      F(attn_plan_entry, num_layers),
    F(attn_plan_entry, status),      F(attn_plan_entry, shape),
    F(attn_plan_entry, selection),   F(attn_plan_entry, message),
    F(attn_plan_entry, scale),       F(attn_plan_entry, effective_shape),
};

static const layout_field append_args_fields[] = {
    F(attn_append_args, struct_size),
    F(attn_append_args, num_tokens),
    F(attn_append_args, src_dtype),
    F(attn_append_args, k),
    F(attn_append_args, v),
    F(attn_append_args, k_stride_token),
    F(attn_append_args, k_stride_head),
    F(attn_append_args, v_stride_token),
    F(attn_append_args, v_stride_head),
    F(attn_append_args, slot_mapping),
    F(attn_append_args, k_cache),
    F(attn_append_args, v_cache),
    F(attn_append_args, num_blocks),
    F(attn_append_args, k_cache_stride_block),
    F(attn_append_args, k_cache_stride_token),
    F(attn_append_args, k_cache_stride_head),
    F(attn_append_args, v_cache_stride_block),
    F(attn_append_args, v_cache_stride_token),
    F(attn_append_args, v_cache_stride_head),
    F(attn_append_args, k_scale),
    F(attn_append_args, v_scale),
    F(attn_append_args, stream),
};

static const layout_field merge_args_fields[] = {
    F(attn_merge_args, struct_size),     F(attn_merge_args, num_tokens),
    F(attn_merge_args, num_heads),       F(attn_merge_args, head_dim),
    F(attn_merge_args, dtype),           F(attn_merge_args, a),
    F(attn_merge_args, lse_a),           F(attn_merge_args, b),
    F(attn_merge_args, lse_b),           F(attn_merge_args, out),
    F(attn_merge_args, lse_out),         F(attn_merge_args, stride_token),
    F(attn_merge_args, stride_head),     F(attn_merge_args, lse_stride_token),
    F(attn_merge_args, lse_stride_head), F(attn_merge_args, stream),
};

static const layout_field hf_config_info_fields[] = {
    F(attn_hf_config_info, struct_size),      F(attn_hf_config_info, model_type),
    F(attn_hf_config_info, from_text_config), F(attn_hf_config_info, max_position_embeddings),
    F(attn_hf_config_info, num_notes),
};

#undef F
#define S(T, fields)                                                                               \
    {                                                                                              \
#T, sizeof(T), fields, sizeof fields / sizeof fields[0]                                    \
    }

static const layout_struct layout_table[] = {
    S(attn_shape, shape_fields),
    S(attn_forward_args, forward_args_fields),
    S(attn_batch_limits, batch_limits_fields),
    S(attn_device_info, device_info_fields),
    S(attn_registry_options, registry_options_fields),
    S(attn_diagnostic, diagnostic_fields),
    S(attn_plugin_info, plugin_info_fields),
    S(attn_plugin_load_info, plugin_load_info_fields),
    S(attn_selection, selection_fields),
    S(attn_verdict_record, verdict_record_fields),
    S(attn_layer, layer_fields),
    S(attn_model, model_fields),
    S(attn_plan_summary, plan_summary_fields),
    S(attn_plan_entry, plan_entry_fields),
    S(attn_arch_limits, arch_limits_fields),
    S(attn_kernel_plan, kernel_plan_fields),
    S(attn_launch_plan, launch_plan_fields),
    S(attn_merge_args, merge_args_fields),
    S(attn_append_args, append_args_fields),
    S(attn_hf_config_info, hf_config_info_fields),
};

#undef S

static const layout_struct *find_struct(const char *name)
{
    if (!name)
        return NULL;
    for (size_t k = 0; k < sizeof layout_table / sizeof layout_table[0]; k++)
        if (strcmp(layout_table[k].name, name) == 0)
            return &layout_table[k];
    return NULL;
}

ATTNREG_API size_t attn_struct_size(const char *struct_name)
{
    const layout_struct *s = find_struct(struct_name);
    return s ? s->size : 0;
}

ATTNREG_API attn_status attn_struct_layout(const char *struct_name, const char *field_name,
                                           size_t *offset, size_t *size)
{
    const layout_struct *s = find_struct(struct_name);
    if (!offset || !size || !field_name)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_struct_layout: NULL argument");
    if (!s)
        return attn_fail(ATTN_ERR_NOT_FOUND, "no public struct named '%s'",
                         struct_name ? struct_name : "(null)");
    for (size_t k = 0; k < s->num_fields; k++) {
        if (strcmp(s->fields[k].name, field_name) == 0) {
            *offset = s->fields[k].offset;
            *size = s->fields[k].size;
            return ATTN_OK;
        }
    }
    return attn_fail(ATTN_ERR_NOT_FOUND, "struct %s has no field '%s'", s->name, field_name);
}

ATTNREG_API const char *attn_struct_field_name(const char *struct_name, size_t index)
{
    const layout_struct *s = find_struct(struct_name);
    return s && index < s->num_fields ? s->fields[index].name : NULL;
}
