/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_env.c — unknown ATTNREG_* variables: a typo is named, with the
 * closest variable attnreg reads, once per process; a registry that ignores
 * the environment says nothing.
 *
 * One test on purpose: the warning is once per process, and valgrind runs
 * this suite with CK_FORK=no (every test in one process).
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdlib.h>

#include "attnreg.h"
#include "support/test_support.h"

static attn_registry *open_env(int skip_env)
{
    const char *dirs[1] = {ts_dir()};
    attn_registry_options opt;
    ts_options(&opt, dirs, 1);
    opt.skip_env = skip_env;
    attn_registry *reg = NULL;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    return reg;
}

START_TEST(unknown_variables_warned_once)
{
    ck_assert_int_eq(setenv("ATTNREG_BACKNED", "cpu-ref", 1), 0);
    ck_assert_int_eq(setenv("attnreg_log", "debug", 1), 0);
    ck_assert_int_eq(setenv("ATTNREG_ZZZQQQ", "1", 1), 0);
    ck_assert_int_eq(setenv("ATTNREG_MTP_WGMMA", "1", 1), 0); /* known: no warning */

    /* Ignoring the environment ignores its typos too. */
    attn_registry_close(open_env(1));
    ck_assert_int_eq(ts_log_count(-1, "environment variable", NULL), 0);

    attn_registry_close(open_env(0));
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN,
                               "environment variable ATTNREG_BACKNED is not one attnreg reads: did "
                               "you mean ATTNREG_BACKEND?",
                               NULL) == 1,
                  "log:\n%s", ts_log_dump());
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN, "attnreg_log", "did you mean ATTNREG_LOG?", NULL) ==
                      1,
                  "log:\n%s", ts_log_dump());
    ck_assert_msg(
        ts_log_count(ATTN_LOG_WARN, "ATTNREG_ZZZQQQ is not one attnreg reads (it reads", NULL) == 1,
        "log:\n%s", ts_log_dump());
    ck_assert_int_eq(ts_log_count(-1, "ATTNREG_MTP_WGMMA is not", NULL), 0);

    /* Once per process: a second registry says nothing more. */
    attn_registry_close(open_env(0));
    ck_assert_int_eq(ts_log_count(-1, "environment variable", NULL), 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("env");
    TCase *tc = tcase_create("typos");
    ts_add_fixtures(tc, 30);
    tcase_add_test(tc, unknown_variables_warned_once);
    suite_add_tcase(s, tc);
    return ts_run(s);
}
