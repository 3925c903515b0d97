/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_status.c — status, reason, dtype and log-level names; versions;
 * attn_last_error. These names are a stable contract (tools parse them from
 * --json output and logs), so the tables here are the full expected lists,
 * not spot checks: renaming or renumbering any entry must fail a test.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "attnreg.h"
#include "attn_plugin.h"
#include "support/test_support.h"

static const char *const expected_status_names[ATTN_STATUS_COUNT] = {
    "ATTN_OK",
    "ATTN_ERR_INVALID_ARGUMENT",
    "ATTN_ERR_INVALID_SHAPE",
    "ATTN_ERR_UNSUPPORTED",
    "ATTN_ERR_BACKEND_REJECTED",
    "ATTN_ERR_NOT_FOUND",
    "ATTN_ERR_CONF",
    "ATTN_ERR_LOAD",
    "ATTN_ERR_ABI",
    "ATTN_ERR_NO_MEMORY",
    "ATTN_ERR_NO_DEVICE",
    "ATTN_ERR_ARCH_NOT_IN_BINARY",
    "ATTN_ERR_NO_KERNELS",
    "ATTN_ERR_CREATE_FAILED",
    "ATTN_ERR_RUNTIME",
    "ATTN_ERR_WORKSPACE_TOO_SMALL",
    "ATTN_ERR_INIT_FAILED",
    "ATTN_ERR_IO",
    "ATTN_ERR_INTERNAL",
};

/* attn_types.h: "attn_reason_name() gives the stable machine-readable name
 * ("Q_LEN", ...)": the enumerator without its ATTN_REASON_ prefix. */
static const char *const expected_reason_names[ATTN_REASON_COUNT] = {
    "NONE",
    "DISABLED",
    "DISABLED_BY_HOST",
    "ARCH_NOT_LISTED",
    "NARROWED",
    "LOAD_FAILED",
    "NO_ENTRY_SYMBOL",
    "ABI_MISMATCH",
    "BAD_DESCRIPTOR",
    "INIT_FAILED",
    "ARCH",
    "Q_DTYPE",
    "KV_DTYPE",
    "COMPUTE_DTYPE",
    "OUT_DTYPE",
    "GQA_RATIO",
    "HEAD_DIM",
    "HEAD_DIM_V",
    "PAGE_SIZE",
    "Q_LEN",
    "KV_LEN",
    "CAUSAL",
    "WINDOW",
    "SOFTCAP",
    "SINKS",
    "FP8_COMPUTE_MHA_ONLY",
    "ARCH_NOT_IN_BINARY",
    "NO_DEVICE",
    "OTHER",
    "INVALID_REASON",
    "RESOURCE",
    "LSE",
};

START_TEST(status_names_are_the_enumerators)
{
    int s;
    for (s = 0; s < ATTN_STATUS_COUNT; s++) {
        const char *name = attn_status_name((attn_status)s);
        ck_assert_msg(name != NULL, "status %d has no name", s);
        ck_assert_str_eq(name, expected_status_names[s]);
    }
}
END_TEST

START_TEST(status_messages_present_and_distinct)
{
    /* One table feeds names and messages; a copy-paste slip there would give
     * two statuses one message, which a user could not tell apart. */
    int a, b;
    for (a = 0; a < ATTN_STATUS_COUNT; a++) {
        const char *ma = attn_status_message((attn_status)a);
        ck_assert_msg(ma != NULL && ma[0] != '\0', "status %d has an empty message", a);
        ck_assert_msg(strchr(ma, '\n') == NULL, "status %d message is not one line", a);
        for (b = 0; b < a; b++)
            ck_assert_msg(strcmp(ma, attn_status_message((attn_status)b)) != 0,
                          "statuses %d and %d share the message \"%s\"", a, b, ma);
    }
}
END_TEST

START_TEST(status_out_of_range)
{
    /* Hosts built against a newer header may pass codes this library does
     * not know; the answer must be a string, never NULL or a crash, and must
     * not impersonate a real status. */
    const int bad[] = {-1, ATTN_STATUS_COUNT, ATTN_STATUS_COUNT + 1, 1000, 0x7fffffff};
    size_t i;
    int s;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *name = attn_status_name((attn_status)bad[i]);
        const char *msg = attn_status_message((attn_status)bad[i]);
        ck_assert_msg(name != NULL && name[0] != '\0', "no name for status %d", bad[i]);
        ck_assert_msg(msg != NULL && msg[0] != '\0', "no message for status %d", bad[i]);
        for (s = 0; s < ATTN_STATUS_COUNT; s++)
            ck_assert_msg(strcmp(name, expected_status_names[s]) != 0,
                          "status %d is named like status %d (%s)", bad[i], s, name);
    }
}
END_TEST

START_TEST(reason_names_are_the_enumerators)
{
    int r;
    for (r = 0; r < ATTN_REASON_COUNT; r++) {
        const char *name = attn_reason_name(r);
        ck_assert_msg(name != NULL, "reason %d has no name", r);
        ck_assert_str_eq(name, expected_reason_names[r]);
    }
    /* The example the header documents. */
    ck_assert_str_eq(attn_reason_name(ATTN_REASON_Q_LEN), "Q_LEN");
}
END_TEST

START_TEST(reason_names_unique)
{
    int a, b;
    for (a = 0; a < ATTN_REASON_COUNT; a++)
        for (b = 0; b < a; b++)
            ck_assert_msg(strcmp(attn_reason_name(a), attn_reason_name(b)) != 0,
                          "reasons %d and %d share a name", a, b);
}
END_TEST

START_TEST(reason_out_of_range_is_unknown)
{
    ck_assert_str_eq(attn_reason_name(-1), "UNKNOWN");
    ck_assert_str_eq(attn_reason_name(ATTN_REASON_COUNT), "UNKNOWN");
    ck_assert_str_eq(attn_reason_name(1000), "UNKNOWN");
    ck_assert_str_eq(attn_reason_name(INT32_MIN), "UNKNOWN");
}
END_TEST

START_TEST(dtype_names_round_trip)
{
    static const struct {
        attn_dtype dtype;
        const char *name;
    } table[] = {
        {ATTN_DTYPE_F32, "f32"},
        {ATTN_DTYPE_F16, "f16"},
        {ATTN_DTYPE_BF16, "bf16"},
        {ATTN_DTYPE_FP8_E4M3FN, "fp8_e4m3fn"},
        {ATTN_DTYPE_FP8_E4M3FNUZ, "fp8_e4m3fnuz"},
    };
    size_t i;
    ck_assert_int_eq((int)(sizeof table / sizeof table[0]), ATTN_DTYPE_COUNT - 1);
    for (i = 0; i < sizeof table / sizeof table[0]; i++) {
        ck_assert_str_eq(attn_dtype_name(table[i].dtype), table[i].name);
        ck_assert_int_eq(attn_dtype_from_name(table[i].name), table[i].dtype);
    }
}
END_TEST

/* The classes of the statuses: the CLI's exit codes and the Python
 * package's exceptions follow them, so they are pinned here in full. */
START_TEST(status_classes_and_exit_codes)
{
    static const struct {
        attn_status status;
        const char *cls;
        int exit_code;
    } table[] = {
        {ATTN_OK, "ok", 0},
        {ATTN_ERR_INVALID_ARGUMENT, "internal", 10},
        {ATTN_ERR_INVALID_SHAPE, "invalid_shape", 3},
        {ATTN_ERR_UNSUPPORTED, "unsupported", 4},
        {ATTN_ERR_BACKEND_REJECTED, "backend_rejected", 5},
        {ATTN_ERR_NOT_FOUND, "backend_rejected", 5},
        {ATTN_ERR_CONF, "conf", 6},
        {ATTN_ERR_LOAD, "backend", 7},
        {ATTN_ERR_ABI, "backend", 7},
        {ATTN_ERR_NO_MEMORY, "internal", 10},
        {ATTN_ERR_NO_DEVICE, "backend", 7},
        {ATTN_ERR_ARCH_NOT_IN_BINARY, "backend", 7},
        {ATTN_ERR_NO_KERNELS, "backend", 7},
        {ATTN_ERR_CREATE_FAILED, "backend", 7},
        {ATTN_ERR_RUNTIME, "backend", 7},
        {ATTN_ERR_WORKSPACE_TOO_SMALL, "backend", 7},
        {ATTN_ERR_INIT_FAILED, "backend", 7},
        {ATTN_ERR_IO, "io", 9},
        {ATTN_ERR_INTERNAL, "internal", 10},
    };
    size_t i;
    ck_assert_int_eq((int)(sizeof table / sizeof table[0]), ATTN_STATUS_COUNT);
    for (i = 0; i < sizeof table / sizeof table[0]; i++) {
        ck_assert_str_eq(attn_status_class_name(table[i].status), table[i].cls);
        ck_assert_int_eq(attn_status_exit_code(table[i].status), table[i].exit_code);
    }
    ck_assert_str_eq(attn_status_class_name((attn_status)ATTN_STATUS_COUNT), "internal");
    ck_assert_int_eq(attn_status_exit_code((attn_status)-1), 10);
}
END_TEST

START_TEST(reason_layers)
{
    int32_t r;
    for (r = 0; r < ATTN_REASON_COUNT; r++) {
        const char *want = r == ATTN_REASON_NONE                   ? "none"
                           : r <= ATTN_REASON_NARROWED             ? "conf"
                           : r <= ATTN_REASON_INIT_FAILED          ? "load"
                           : r <= ATTN_REASON_FP8_COMPUTE_MHA_ONLY ? "plugin"
                           : r == ATTN_REASON_ARCH_NOT_IN_BINARY || r == ATTN_REASON_NO_DEVICE
                               ? "runnable"
                           : r == ATTN_REASON_INVALID_REASON ? "host"
                                                             : "plugin"; /* OTHER, RESOURCE */
        ck_assert_str_eq(attn_reason_layer_name(r), want);
    }
    ck_assert_str_eq(attn_reason_layer_name(ATTN_REASON_COUNT), "unknown");
    ck_assert_str_eq(attn_reason_layer_name(-1), "unknown");
}
END_TEST

START_TEST(enum_counts)
{
    ck_assert_uint_eq(attn_enum_count("attn_status"), ATTN_STATUS_COUNT);
    ck_assert_uint_eq(attn_enum_count("attn_reason"), ATTN_REASON_COUNT);
    ck_assert_uint_eq(attn_enum_count("attn_dtype"), ATTN_DTYPE_COUNT);
    ck_assert_uint_eq(attn_enum_count("attn_log_level"), ATTN_LOG_OFF + 1);
    ck_assert_uint_eq(attn_enum_count("attn_phase"), ATTN_PHASE_COUNT);
    ck_assert_uint_eq(attn_enum_count("attn_layer_kind"), ATTN_LAYER_KIND_COUNT);
    ck_assert_uint_eq(attn_enum_count("attn_nothing"), 0);
    ck_assert_uint_eq(attn_enum_count(NULL), 0);
}
END_TEST

START_TEST(dtype_sizes)
{
    ck_assert_uint_eq(attn_dtype_size(ATTN_DTYPE_F32), 4);
    ck_assert_uint_eq(attn_dtype_size(ATTN_DTYPE_F16), 2);
    ck_assert_uint_eq(attn_dtype_size(ATTN_DTYPE_BF16), 2);
    ck_assert_uint_eq(attn_dtype_size(ATTN_DTYPE_FP8_E4M3FN), 1);
    ck_assert_uint_eq(attn_dtype_size(ATTN_DTYPE_FP8_E4M3FNUZ), 1);
    ck_assert_uint_eq(attn_dtype_size(ATTN_DTYPE_INVALID), 0);
    ck_assert_uint_eq(attn_dtype_size(ATTN_DTYPE_COUNT), 0);
    ck_assert_int_eq(attn_dtype_is_fp8(ATTN_DTYPE_FP8_E4M3FN), 1);
    ck_assert_int_eq(attn_dtype_is_fp8(ATTN_DTYPE_FP8_E4M3FNUZ), 1);
    ck_assert_int_eq(attn_dtype_is_fp8(ATTN_DTYPE_BF16), 0);
    ck_assert_int_eq(attn_dtype_is_fp8(-1), 0);
}
END_TEST

START_TEST(dtype_unknown_names)
{
    /* "fp8" alone is ambiguous (fn or fnuz): it must not silently pick one. */
    const char *bad[] = {"", "bf17", "fp8", "fp8_e4m3", "bf16 ", "float", "invalid"};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(attn_dtype_from_name(bad[i]) == ATTN_DTYPE_INVALID,
                      "\"%s\" was accepted as a dtype", bad[i]);
    ck_assert_int_eq(attn_dtype_from_name(NULL), ATTN_DTYPE_INVALID);
}
END_TEST

START_TEST(dtype_name_of_invalid_codes)
{
    /* Never NULL (hosts print it), never the name of a real dtype. */
    const int32_t bad[] = {ATTN_DTYPE_INVALID, -1, ATTN_DTYPE_COUNT, 99};
    size_t i;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *name = attn_dtype_name(bad[i]);
        ck_assert_msg(name != NULL, "dtype %d has a NULL name", (int)bad[i]);
        ck_assert_msg(attn_dtype_from_name(name) == ATTN_DTYPE_INVALID,
                      "invalid dtype %d is named like a real one (%s)", (int)bad[i], name);
    }
}
END_TEST

START_TEST(log_level_names)
{
    /* The same words ATTNREG_LOG accepts. */
    ck_assert_str_eq(attn_log_level_name(ATTN_LOG_DEBUG), "debug");
    ck_assert_str_eq(attn_log_level_name(ATTN_LOG_INFO), "info");
    ck_assert_str_eq(attn_log_level_name(ATTN_LOG_WARN), "warn");
    ck_assert_str_eq(attn_log_level_name(ATTN_LOG_ERROR), "error");
    ck_assert_str_eq(attn_log_level_name(ATTN_LOG_OFF), "off");
    ck_assert_ptr_nonnull(attn_log_level_name((attn_log_level)42));
}
END_TEST

START_TEST(versions_match_headers)
{
    int major = -1, minor = -1, patch = -1;
    char expect[64];
    attnreg_version(&major, &minor, &patch);
    ck_assert_int_eq(major, ATTNREG_VERSION_MAJOR);
    ck_assert_int_eq(minor, ATTNREG_VERSION_MINOR);
    ck_assert_int_eq(patch, ATTNREG_VERSION_PATCH);
    snprintf(expect, sizeof expect, "%d.%d.%d", ATTNREG_VERSION_MAJOR, ATTNREG_VERSION_MINOR,
             ATTNREG_VERSION_PATCH);
    ck_assert_str_eq(attnreg_version_string(), expect);
    ck_assert_uint_eq(attnreg_plugin_abi_version(),
                      ((uint32_t)ATTN_PLUGIN_ABI_MAJOR << 16) | ATTN_PLUGIN_ABI_MINOR);
}
END_TEST

START_TEST(last_error_empty_at_start)
{
    ck_assert_ptr_nonnull(attn_last_error());
    ck_assert_str_eq(attn_last_error(), "");
}
END_TEST

static void *other_thread_last_error(void *arg)
{
    /* Copy, since the pointer is only valid on that thread. */
    snprintf((char *)arg, 256, "%s", attn_last_error());
    return NULL;
}

START_TEST(last_error_set_by_failure_and_thread_local)
{
    attn_registry_options opt;
    attn_selection sel;
    attn_shape shape;
    attn_status st;
    char seen[256] = "unset";
    pthread_t t;

    attn_registry_options_init(&opt);
    ck_assert_uint_eq(opt.struct_size, sizeof opt);
    /* NULL output pointer: the documented INVALID_ARGUMENT case. */
    st = attn_registry_open(&opt, NULL);
    ck_assert_int_eq(st, ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(attn_last_error()[0] != '\0', "open(NULL) left no last error");

    attn_shape_init(&shape);
    attn_selection_init(&sel);
    st = attn_registry_select(NULL, &shape, &sel);
    ck_assert_int_eq(st, ATTN_ERR_INVALID_ARGUMENT);
    ck_assert_msg(attn_last_error()[0] != '\0', "select(NULL) left no last error");

    /* Another thread made no failing call: its last error is empty. */
    ck_assert_int_eq(pthread_create(&t, NULL, other_thread_last_error, seen), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    ck_assert_str_eq(seen, "");
}
END_TEST

START_TEST(init_functions_set_struct_size)
{
    attn_registry_options opt;
    attn_selection sel;
    attn_shape shape;
    memset(&opt, 0xff, sizeof opt);
    memset(&sel, 0xff, sizeof sel);
    memset(&shape, 0xff, sizeof shape);
    attn_registry_options_init(&opt);
    attn_selection_init(&sel);
    attn_shape_init(&shape);
    ck_assert_uint_eq(opt.struct_size, sizeof opt);
    ck_assert_uint_eq(sel.struct_size, sizeof sel);
    ck_assert_uint_eq(shape.struct_size, sizeof shape);
    /* Option defaults the header documents. */
    ck_assert_ptr_null(opt.conf_paths);
    ck_assert_uint_eq(opt.num_conf_paths, 0);
    ck_assert_ptr_null(opt.log_fn);
    ck_assert_int_eq(opt.log_level, -1);
    ck_assert_int_eq(opt.strict, 0);
    ck_assert_ptr_null(opt.forced_backend);
    ck_assert_int_eq(opt.runnable, 0);
    ck_assert_int_eq(opt.fail_on_conf_error, 0);
    ck_assert_int_eq(opt.skip_env, 0);
    /* An empty selection names no backend. */
    ck_assert_ptr_null(sel.backend_name);
    ck_assert_int_eq(sel.fallback_applied, 0);
}
END_TEST

static Suite *status_suite(void)
{
    Suite *s = suite_create("status");
    TCase *tc = tcase_create("names");
    ts_add_fixtures(tc, 10);
    tcase_add_test(tc, status_names_are_the_enumerators);
    tcase_add_test(tc, status_messages_present_and_distinct);
    tcase_add_test(tc, status_out_of_range);
    tcase_add_test(tc, reason_names_are_the_enumerators);
    tcase_add_test(tc, reason_names_unique);
    tcase_add_test(tc, reason_out_of_range_is_unknown);
    tcase_add_test(tc, dtype_names_round_trip);
    tcase_add_test(tc, dtype_unknown_names);
    tcase_add_test(tc, status_classes_and_exit_codes);
    tcase_add_test(tc, reason_layers);
    tcase_add_test(tc, enum_counts);
    tcase_add_test(tc, dtype_sizes);
    tcase_add_test(tc, dtype_name_of_invalid_codes);
    tcase_add_test(tc, log_level_names);
    tcase_add_test(tc, versions_match_headers);
    tcase_add_test(tc, last_error_empty_at_start);
    tcase_add_test(tc, last_error_set_by_failure_and_thread_local);
    tcase_add_test(tc, init_functions_set_struct_size);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ts_run(status_suite());
}
