/*
 * test_abi_layout.c — the layout of every public struct, pinned (the
 * idea of GStreamer's gstabi.c): sizeof and the offset of each field as
 * published, on LP64 Linux. A change here is an ABI break unless it only
 * appends: a new field adds an OFF line and changes that struct's SIZE (and
 * the structs that embed it), nothing else may move. Regenerate the table
 * with clang -Xclang -fdump-record-layouts only after deciding that.
 */
#include <check.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "attn_plugin.h"
#include "attnreg.h"
#include "support/test_support.h"

#define SIZE(type, n)                                                                              \
    ck_assert_msg(sizeof(type) == (n), "sizeof(" #type ") is %zu, pinned %d", sizeof(type), (n))
#define OFF(type, field, n)                                                                        \
    ck_assert_msg(offsetof(type, field) == (n),                                                    \
                  "offsetof(" #type ", " #field ") is %zu, pinned %d", offsetof(type, field), (n))

START_TEST(public_structs_keep_their_layout)
{
#if UINTPTR_MAX != 0xffffffffffffffffu || INT_MAX != 0x7fffffff
    ck_abort_msg("the pinned layouts are those of LP64; add this ABI's table");
#else
    SIZE(attn_shape, 104);
    OFF(attn_shape, struct_size, 0);
    OFF(attn_shape, arch, 4);
    OFF(attn_shape, num_q_heads, 36);
    OFF(attn_shape, num_kv_heads, 40);
    OFF(attn_shape, head_dim, 44);
    OFF(attn_shape, head_dim_v, 48);
    OFF(attn_shape, q_dtype, 52);
    OFF(attn_shape, kv_dtype, 56);
    OFF(attn_shape, compute_dtype, 60);
    OFF(attn_shape, out_dtype, 64);
    OFF(attn_shape, page_size, 68);
    OFF(attn_shape, max_q_len, 72);
    OFF(attn_shape, max_kv_len, 76);
    OFF(attn_shape, causal, 80);
    OFF(attn_shape, window_left, 84);
    OFF(attn_shape, window_right, 88);
    OFF(attn_shape, softcap, 92);
    OFF(attn_shape, has_sinks, 96);
    OFF(attn_shape, return_lse, 100); /* 0.4 */
    SIZE(attn_forward_args, 248);
    OFF(attn_forward_args, struct_size, 0);
    OFF(attn_forward_args, num_seqs, 4);
    OFF(attn_forward_args, num_tokens, 8);
    OFF(attn_forward_args, q, 16);
    OFF(attn_forward_args, q_stride_token, 24);
    OFF(attn_forward_args, q_stride_head, 32);
    OFF(attn_forward_args, k_cache, 40);
    OFF(attn_forward_args, v_cache, 48);
    OFF(attn_forward_args, num_blocks, 56);
    OFF(attn_forward_args, block_table, 64);
    OFF(attn_forward_args, block_table_stride, 72);
    OFF(attn_forward_args, cu_seqlens_q, 80);
    OFF(attn_forward_args, seqused_k, 88);
    OFF(attn_forward_args, max_seqlen_q, 96);
    OFF(attn_forward_args, max_seqlen_k, 100);
    OFF(attn_forward_args, scale, 104);
    OFF(attn_forward_args, q_descale, 108);
    OFF(attn_forward_args, k_descale, 112);
    OFF(attn_forward_args, v_descale, 116);
    OFF(attn_forward_args, sinks, 120);
    OFF(attn_forward_args, out, 128);
    OFF(attn_forward_args, out_stride_token, 136);
    OFF(attn_forward_args, out_stride_head, 144);
    OFF(attn_forward_args, workspace, 152);
    OFF(attn_forward_args, workspace_size, 160);
    OFF(attn_forward_args, stream, 168);
    OFF(attn_forward_args, k_stride_block, 176); /* 0.4 */
    OFF(attn_forward_args, k_stride_token, 184);
    OFF(attn_forward_args, k_stride_head, 192);
    OFF(attn_forward_args, v_stride_block, 200);
    OFF(attn_forward_args, v_stride_token, 208);
    OFF(attn_forward_args, v_stride_head, 216);
    OFF(attn_forward_args, lse, 224);
    OFF(attn_forward_args, lse_stride_token, 232);
    OFF(attn_forward_args, lse_stride_head, 240);
    SIZE(attn_batch_limits, 12);
    OFF(attn_batch_limits, struct_size, 0);
    OFF(attn_batch_limits, max_num_seqs, 4);
    OFF(attn_batch_limits, max_num_tokens, 8);
    SIZE(attn_device_info, 184);
    OFF(attn_device_info, struct_size, 0);
    OFF(attn_device_info, index, 4);
    OFF(attn_device_info, arch, 8);
    OFF(attn_device_info, name, 40);
    OFF(attn_device_info, memory_bytes, 168);
    OFF(attn_device_info, compute_units, 176);
    SIZE(attn_registry_options, 96);
    OFF(attn_registry_options, struct_size, 0);
    OFF(attn_registry_options, conf_paths, 8);
    OFF(attn_registry_options, num_conf_paths, 16);
    OFF(attn_registry_options, skip_env_conf_path, 20);
    OFF(attn_registry_options, skip_default_conf, 24);
    OFF(attn_registry_options, log_fn, 32);
    OFF(attn_registry_options, log_user, 40);
    OFF(attn_registry_options, log_level, 48);
    OFF(attn_registry_options, strict, 52);
    OFF(attn_registry_options, forced_backend, 56);
    OFF(attn_registry_options, disabled_backends, 64);
    OFF(attn_registry_options, num_disabled_backends, 72);
    OFF(attn_registry_options, runnable, 76);
    OFF(attn_registry_options, fail_on_conf_error, 80);
    OFF(attn_registry_options, skip_env, 84);
    OFF(attn_registry_options, probe_out_of_process, 88);
    SIZE(attn_diagnostic, 40);
    OFF(attn_diagnostic, struct_size, 0);
    OFF(attn_diagnostic, status, 4);
    OFF(attn_diagnostic, file, 8);
    OFF(attn_diagnostic, line, 16);
    OFF(attn_diagnostic, plugin, 24);
    OFF(attn_diagnostic, message, 32);
    SIZE(attn_plugin_info, 64);
    OFF(attn_plugin_info, struct_size, 0);
    OFF(attn_plugin_info, name, 8);
    OFF(attn_plugin_info, priority, 16);
    OFF(attn_plugin_info, enabled, 20);
    OFF(attn_plugin_info, archs, 24);
    OFF(attn_plugin_info, library, 32);
    OFF(attn_plugin_info, conf_file, 40);
    OFF(attn_plugin_info, conf_line, 48);
    OFF(attn_plugin_info, candidate, 56);
    SIZE(attn_plugin_load_info, 80);
    OFF(attn_plugin_load_info, struct_size, 0);
    OFF(attn_plugin_load_info, status, 4);
    OFF(attn_plugin_load_info, reason, 8);
    OFF(attn_plugin_load_info, message, 16);
    OFF(attn_plugin_load_info, version, 24);
    OFF(attn_plugin_load_info, description, 32);
    OFF(attn_plugin_load_info, built_archs, 40);
    OFF(attn_plugin_load_info, abi_major, 48);
    OFF(attn_plugin_load_info, abi_minor, 52);
    OFF(attn_plugin_load_info, num_predicates, 56);
    OFF(attn_plugin_load_info, arch_limits, 64); /* 0.3 */
    OFF(attn_plugin_load_info, num_arch_limits, 72);
    OFF(attn_plugin_load_info, graph_capturable, 76);
    /* 0.4: the embedded attn_shape grew by 4 bytes and moved what follows
     * it; the 0.1 and 0.3 layouts (core/abi_frozen.h: size 176, fallback_applied
     * at 124, graph_capturable at 168) are still written for hosts whose
     * struct_size names them (test_abi_growth, test_select). */
    SIZE(attn_selection, 184);
    OFF(attn_selection, struct_size, 0);
    OFF(attn_selection, backend_name, 8);
    OFF(attn_selection, candidate, 16);
    OFF(attn_selection, effective_shape, 24);
    OFF(attn_selection, fallback_applied, 128);
    OFF(attn_selection, fallback_rule, 136);
    OFF(attn_selection, fallback_backend, 144);
    OFF(attn_selection, fallback_reason, 152);
    OFF(attn_selection, fallback_message, 160);
    OFF(attn_selection, message, 168);
    OFF(attn_selection, graph_capturable, 176); /* 0.3 */
    SIZE(attn_arch_limits, 52);
    OFF(attn_arch_limits, struct_size, 0);
    OFF(attn_arch_limits, arch, 4);
    OFF(attn_arch_limits, shared_bytes_per_block, 36);
    OFF(attn_arch_limits, wave_size, 40);
    OFF(attn_arch_limits, max_threads_per_block, 44);
    OFF(attn_arch_limits, max_registers_per_thread, 48);
    SIZE(attn_kernel_plan, 84);
    OFF(attn_kernel_plan, kernel, 0);
    OFF(attn_kernel_plan, role, 32);
    OFF(attn_kernel_plan, threads, 64);
    OFF(attn_kernel_plan, rows, 68);
    OFF(attn_kernel_plan, keys, 72);
    OFF(attn_kernel_plan, stages, 76);
    OFF(attn_kernel_plan, shared_bytes, 80);
    SIZE(attn_launch_plan, 384);
    OFF(attn_launch_plan, struct_size, 0);
    OFF(attn_launch_plan, arch, 4);
    OFF(attn_launch_plan, shared_limit, 36);
    OFF(attn_launch_plan, wave_size, 40);
    OFF(attn_launch_plan, num_kernels, 44);
    OFF(attn_launch_plan, kernels, 48);
    SIZE(attn_verdict_record, 72);
    OFF(attn_verdict_record, struct_size, 0);
    OFF(attn_verdict_record, pass, 4);
    OFF(attn_verdict_record, backend, 8);
    OFF(attn_verdict_record, accepted, 16);
    OFF(attn_verdict_record, selected, 20);
    OFF(attn_verdict_record, reason, 24);
    OFF(attn_verdict_record, reason_name, 32);
    OFF(attn_verdict_record, message, 40);
    OFF(attn_verdict_record, predicate, 48);
    OFF(attn_verdict_record, conf_file, 56);
    OFF(attn_verdict_record, conf_line, 64);
    OFF(attn_verdict_record, priority, 68);
    SIZE(attn_layer, 24);
    OFF(attn_layer, struct_size, 0);
    OFF(attn_layer, kind, 4);
    OFF(attn_layer, window_left, 8);
    OFF(attn_layer, window_right, 12);
    OFF(attn_layer, type_name, 16);
    SIZE(attn_model, 112);
    OFF(attn_model, struct_size, 0);
    OFF(attn_model, arch, 4);
    OFF(attn_model, num_q_heads, 36);
    OFF(attn_model, num_kv_heads, 40);
    OFF(attn_model, head_dim, 44);
    OFF(attn_model, head_dim_v, 48);
    OFF(attn_model, num_layers, 52);
    OFF(attn_model, layers, 56);
    OFF(attn_model, softcap, 64);
    OFF(attn_model, has_sinks, 68);
    OFF(attn_model, q_dtype, 72);
    OFF(attn_model, kv_dtype, 76);
    OFF(attn_model, compute_dtype, 80);
    OFF(attn_model, out_dtype, 84);
    OFF(attn_model, page_size, 88);
    OFF(attn_model, tp_size, 92);
    OFF(attn_model, max_model_len, 96);
    OFF(attn_model, max_prefill_tokens, 100);
    OFF(attn_model, spec_tokens, 104);
    OFF(attn_model, scale, 108); /* 0.4, in 0.3's tail padding: sizeof unchanged */
    SIZE(attn_plan_summary, 64);
    OFF(attn_plan_summary, struct_size, 0);
    OFF(attn_plan_summary, status, 4);
    OFF(attn_plan_summary, message, 8);
    OFF(attn_plan_summary, num_entries, 16);
    OFF(attn_plan_summary, num_layers, 24);
    OFF(attn_plan_summary, tp_size, 28);
    OFF(attn_plan_summary, rank_q_heads, 32);
    OFF(attn_plan_summary, rank_kv_heads, 36);
    OFF(attn_plan_summary, kv_heads_replicated, 40);
    OFF(attn_plan_summary, prefill_q_len, 44);
    OFF(attn_plan_summary, decode_q_len, 48);
    OFF(attn_plan_summary, verify_q_len, 52);
    OFF(attn_plan_summary, max_kv_len, 56);
    SIZE(attn_plan_entry, 80);
    OFF(attn_plan_entry, struct_size, 0);
    OFF(attn_plan_entry, phase, 4);
    OFF(attn_plan_entry, layer_kind, 8);
    OFF(attn_plan_entry, layer_type, 16);
    OFF(attn_plan_entry, layers, 24);
    OFF(attn_plan_entry, num_layers, 32);
    OFF(attn_plan_entry, status, 36);
    OFF(attn_plan_entry, shape, 40);
    OFF(attn_plan_entry, selection, 48);
    OFF(attn_plan_entry, message, 56);
    OFF(attn_plan_entry, scale, 64);           /* 0.4 */
    OFF(attn_plan_entry, effective_shape, 72); /* 0.4 */
    SIZE(attn_merge_args, 112);                /* 0.4; 0.5 appended stream */
    OFF(attn_merge_args, struct_size, 0);
    OFF(attn_merge_args, num_tokens, 4);
    OFF(attn_merge_args, num_heads, 8);
    OFF(attn_merge_args, head_dim, 12);
    OFF(attn_merge_args, dtype, 16);
    OFF(attn_merge_args, a, 24);
    OFF(attn_merge_args, lse_a, 32);
    OFF(attn_merge_args, b, 40);
    OFF(attn_merge_args, lse_b, 48);
    OFF(attn_merge_args, out, 56);
    OFF(attn_merge_args, lse_out, 64);
    OFF(attn_merge_args, stride_token, 72);
    OFF(attn_merge_args, stride_head, 80);
    OFF(attn_merge_args, lse_stride_token, 88);
    OFF(attn_merge_args, lse_stride_head, 96);
    OFF(attn_merge_args, stream, 104); /* 0.5 */
    SIZE(attn_verdict, 268);
    OFF(attn_verdict, struct_size, 0);
    OFF(attn_verdict, accepted, 4);
    OFF(attn_verdict, reason, 8);
    OFF(attn_verdict, message, 12);
    SIZE(attn_host_services, 24);
    OFF(attn_host_services, struct_size, 0);
    OFF(attn_host_services, log, 8);
    OFF(attn_host_services, host, 16);
    SIZE(attn_param, 16);
    OFF(attn_param, key, 0);
    OFF(attn_param, value, 8);
    SIZE(attn_plugin_context, 48);
    OFF(attn_plugin_context, struct_size, 0);
    OFF(attn_plugin_context, services, 8);
    OFF(attn_plugin_context, params, 16);
    OFF(attn_plugin_context, num_params, 24);
    OFF(attn_plugin_context, conf_file, 32);
    OFF(attn_plugin_context, state, 40);
    SIZE(attn_predicate, 16);
    OFF(attn_predicate, name, 0);
    OFF(attn_predicate, check, 8);
    SIZE(attn_plugin_descriptor, 168);
    OFF(attn_plugin_descriptor, struct_size, 0);
    OFF(attn_plugin_descriptor, abi_major, 4);
    OFF(attn_plugin_descriptor, abi_minor, 8);
    OFF(attn_plugin_descriptor, name, 16);
    OFF(attn_plugin_descriptor, version, 24);
    OFF(attn_plugin_descriptor, description, 32);
    OFF(attn_plugin_descriptor, built_archs, 40);
    OFF(attn_plugin_descriptor, predicates, 48);
    OFF(attn_plugin_descriptor, num_predicates, 56);
    OFF(attn_plugin_descriptor, init, 64);
    OFF(attn_plugin_descriptor, fini, 72);
    OFF(attn_plugin_descriptor, create, 80);
    OFF(attn_plugin_descriptor, workspace_size, 88);
    OFF(attn_plugin_descriptor, forward, 96);
    OFF(attn_plugin_descriptor, destroy, 104);
    OFF(attn_plugin_descriptor, probe_devices, 112);
    OFF(attn_plugin_descriptor, graph_capturable, 120); /* ABI 1.2 */
    OFF(attn_plugin_descriptor, describe_plan, 128);
    OFF(attn_plugin_descriptor, arch_limits, 136);
    OFF(attn_plugin_descriptor, num_arch_limits, 144);
    OFF(attn_plugin_descriptor, forward_features, 148); /* ABI 1.3, in the padding */
    OFF(attn_plugin_descriptor, append_kv, 152);
    OFF(attn_plugin_descriptor, merge_states, 160); /* ABI 1.4: 1.3's descriptor ended here */
#endif
}
END_TEST

START_TEST(oldest_sizes_are_the_published_ones)
{
    /* The named minimum sizes are those of the first published layouts. */
    ck_assert_uint_eq(ATTN_SHAPE_SIZE_0_1, 100);
    ck_assert_uint_eq(ATTN_FORWARD_ARGS_SIZE_0_1, 176);
    ck_assert_uint_eq(ATTN_BATCH_LIMITS_SIZE_0_1, 12);
    ck_assert_uint_eq(ATTN_MERGE_ARGS_SIZE_0_4, 104);
    ck_assert_uint_eq(ATTN_APPEND_ARGS_SIZE_0_4, 160);
    ck_assert_uint_eq(ATTN_REGISTRY_OPTIONS_SIZE_0_1, 84);
    ck_assert_uint_eq(ATTN_REGISTRY_OPTIONS_SIZE_0_2, 88);
#if UINTPTR_MAX == 0xffffffffffffffffu
    ck_assert_uint_eq(ATTN_LAYER_SIZE_0_2, 24);
    ck_assert_uint_eq(ATTN_MODEL_SIZE_0_2, 108);       /* sizeof is 112: tail padding */
    ck_assert_uint_eq(ATTN_DEVICE_INFO_SIZE_0_1, 180); /* sizeof is 184 */
#endif
    /* Every minimum is a published size, or what the library must write. */
    ck_assert_uint_eq(ATTN_SHAPE_MIN_SIZE, ATTN_SHAPE_SIZE_0_1);
    ck_assert_uint_eq(ATTN_REGISTRY_OPTIONS_MIN_SIZE, ATTN_REGISTRY_OPTIONS_SIZE_0_1);
    ck_assert_uint_eq(ATTN_FORWARD_ARGS_MIN_SIZE, ATTN_FORWARD_ARGS_SIZE_0_1);
    ck_assert_uint_eq(ATTN_BATCH_LIMITS_MIN_SIZE, ATTN_BATCH_LIMITS_SIZE_0_1);
    ck_assert_uint_eq(ATTN_LAYER_MIN_SIZE, ATTN_LAYER_SIZE_0_2);
    ck_assert_uint_eq(ATTN_MODEL_MIN_SIZE, ATTN_MODEL_SIZE_0_2);
    ck_assert_uint_eq(ATTN_DEVICE_INFO_MIN_SIZE, ATTN_DEVICE_INFO_SIZE_0_1);
    ck_assert_uint_eq(ATTN_DIAGNOSTIC_MIN_SIZE, sizeof(uint32_t));
    ck_assert_uint_ge(ATTN_PLAN_ENTRY_MIN_SIZE, sizeof(uint32_t));
    ck_assert_uint_ge(ATTN_PLAN_SUMMARY_MIN_SIZE, sizeof(uint32_t));
    ck_assert_uint_ge(ATTN_LAUNCH_PLAN_MIN_SIZE, sizeof(uint32_t));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("abi_layout");
    TCase *tc = tcase_create("layout");
    tcase_add_test(tc, public_structs_keep_their_layout);
    tcase_add_test(tc, oldest_sizes_are_the_published_ones);
    suite_add_tcase(s, tc);
    return ts_run(s);
}
