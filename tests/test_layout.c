/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_layout.c — attn_struct_size / attn_struct_layout / attn_struct_field_name:
 * the layout queries bindings use to check their mirrors of the public
 * structs (the Python package does at import).
 */
#include <check.h>
#include <stddef.h>
#include <string.h>

#include "attnreg.h"
#include "support/test_support.h"

#define EXPECT_FIELD(T, f)                                                                         \
    do {                                                                                           \
        size_t off = 99999, size = 99999;                                                          \
        ck_assert_int_eq(attn_struct_layout(#T, #f, &off, &size), ATTN_OK);                        \
        ck_assert_uint_eq(off, offsetof(T, f));                                                    \
        ck_assert_uint_eq(size, sizeof(((T *)0)->f));                                              \
    } while (0)

START_TEST(sizes_are_the_headers)
{
    ck_assert_uint_eq(attn_struct_size("attn_shape"), sizeof(attn_shape));
    ck_assert_uint_eq(attn_struct_size("attn_forward_args"), sizeof(attn_forward_args));
    ck_assert_uint_eq(attn_struct_size("attn_registry_options"), sizeof(attn_registry_options));
    ck_assert_uint_eq(attn_struct_size("attn_selection"), sizeof(attn_selection));
    ck_assert_uint_eq(attn_struct_size("attn_verdict_record"), sizeof(attn_verdict_record));
    ck_assert_uint_eq(attn_struct_size("attn_model"), sizeof(attn_model));
    ck_assert_uint_eq(attn_struct_size("attn_plan_entry"), sizeof(attn_plan_entry));
    ck_assert_uint_eq(attn_struct_size("attn_batch_limits"), sizeof(attn_batch_limits));
    ck_assert_uint_eq(attn_struct_size("attn_device_info"), sizeof(attn_device_info));
    ck_assert_uint_eq(attn_struct_size("no_such_struct"), 0);
    ck_assert_uint_eq(attn_struct_size(NULL), 0);
}
END_TEST

START_TEST(fields_are_the_headers)
{
    EXPECT_FIELD(attn_shape, struct_size);
    EXPECT_FIELD(attn_shape, arch);
    EXPECT_FIELD(attn_shape, softcap);
    EXPECT_FIELD(attn_shape, has_sinks);
    EXPECT_FIELD(attn_forward_args, q_stride_head);
    EXPECT_FIELD(attn_forward_args, workspace_size);
    EXPECT_FIELD(attn_forward_args, stream);
    EXPECT_FIELD(attn_registry_options, log_fn);
    EXPECT_FIELD(attn_registry_options, skip_env);
    EXPECT_FIELD(attn_selection, effective_shape);
    EXPECT_FIELD(attn_selection, message);
    EXPECT_FIELD(attn_verdict_record, priority);
    EXPECT_FIELD(attn_plugin_load_info, num_predicates);
    EXPECT_FIELD(attn_model, spec_tokens);
    EXPECT_FIELD(attn_plan_summary, max_kv_len);
    EXPECT_FIELD(attn_plan_entry, message);
    EXPECT_FIELD(attn_layer, type_name);
    EXPECT_FIELD(attn_device_info, name);
    EXPECT_FIELD(attn_diagnostic, message);
    EXPECT_FIELD(attn_plugin_info, candidate);
}
END_TEST

/* Every listed field resolves, in increasing offset order (declaration
 * order), inside the struct, and the list covers the struct's end. */
START_TEST(field_names_enumerate_each_struct)
{
    static const char *const names[] = {"attn_shape",
                                        "attn_forward_args",
                                        "attn_batch_limits",
                                        "attn_device_info",
                                        "attn_registry_options",
                                        "attn_diagnostic",
                                        "attn_plugin_info",
                                        "attn_plugin_load_info",
                                        "attn_selection",
                                        "attn_verdict_record",
                                        "attn_layer",
                                        "attn_model",
                                        "attn_plan_summary",
                                        "attn_plan_entry",
                                        "attn_arch_limits",
                                        "attn_launch_plan",
                                        "attn_merge_args",
                                        "attn_append_args"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        size_t total = attn_struct_size(names[k]), end = 0, prev = 0, n = 0;
        const char *field;
        ck_assert_uint_gt(total, 0);
        while ((field = attn_struct_field_name(names[k], n)) != NULL) {
            size_t off, size;
            ck_assert_int_eq(attn_struct_layout(names[k], field, &off, &size), ATTN_OK);
            if (n == 0)
                ck_assert_str_eq(field, "struct_size");
            else
                ck_assert_uint_gt(off, prev);
            ck_assert_uint_le(off + size, total);
            prev = off;
            end = off + size;
            n++;
        }
        ck_assert_uint_gt(n, 1);
        /* only padding after the last field */
        ck_assert_uint_lt(total - end, 8);
    }
    ck_assert_ptr_null(attn_struct_field_name("no_such_struct", 0));
}
END_TEST

START_TEST(unknown_names_are_not_found)
{
    size_t off, size;
    ck_assert_int_eq(attn_struct_layout("attn_shape", "num_heads", &off, &size),
                     ATTN_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(attn_last_error(), "attn_shape has no field 'num_heads'"));
    ck_assert_int_eq(attn_struct_layout("attn_nothing", "x", &off, &size), ATTN_ERR_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(attn_last_error(), "'attn_nothing'"));
    ck_assert_int_eq(attn_struct_layout("attn_shape", NULL, &off, &size),
                     ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_int_eq(attn_struct_layout("attn_shape", "arch", NULL, &size),
                     ATTN_ERR_INVALID_ARGUMENT);
}
END_TEST

static Suite *layout_suite(void)
{
    Suite *s = suite_create("layout");
    TCase *tc = tcase_create("queries");
    ts_add_fixtures(tc, 10);
    tcase_add_test(tc, sizes_are_the_headers);
    tcase_add_test(tc, fields_are_the_headers);
    tcase_add_test(tc, field_names_enumerate_each_struct);
    tcase_add_test(tc, unknown_names_are_not_found);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ts_run(layout_suite());
}
