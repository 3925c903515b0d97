/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_search.c — the conf search order (host folders, ATTNREG_CONF_PATH,
 * <sysconfdir>/attnreg/conf.d, <datadir>/attnreg/conf), overriding a plugin
 * from an earlier folder, and the default log sink (one line per event,
 * registry and plugin named, ATTNREG_LOG_FILE).
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnreg.h"
#include "support/test_support.h"

START_TEST(search_order_with_origins)
{
    const char *a = ts_subdir("a");
    const char *b = ts_subdir("b");
    const char *dirs[1] = {a};
    attn_registry_options opt;
    attn_registry *reg = NULL;
    ck_assert_int_eq(setenv("ATTNREG_CONF_PATH", b, 1), 0);
    ts_options(&opt, dirs, 1);
    opt.skip_env = 0;
    opt.skip_env_conf_path = 0;
    opt.skip_default_conf = 0;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    unsetenv("ATTNREG_CONF_PATH");
    ck_assert_uint_eq(attn_registry_conf_path_count(reg), 4);
    static const char *const origins[] = {"option", "ATTNREG_CONF_PATH", "sysconf", "datadir"};
    for (size_t i = 0; i < 4; i++)
        ck_assert_str_eq(attn_registry_conf_path_origin(reg, i), origins[i]);
    ck_assert(ts_same_file(attn_registry_conf_path(reg, 0), a));
    ck_assert(ts_same_file(attn_registry_conf_path(reg, 1), b));
    /* The build tree's sysconf folder is <build>/etc/attnreg/conf.d, found
     * from libattnreg like the shipped one (absent, yet listed). */
    ck_assert_msg(ts_ends_with(attn_registry_conf_path(reg, 2), "/etc/attnreg/conf.d"), "%s",
                  attn_registry_conf_path(reg, 2));
    ck_assert_msg(strstr(attn_registry_conf_path(reg, 2), "..") == NULL, "not normalised: %s",
                  attn_registry_conf_path(reg, 2));
    ck_assert(ts_same_file(attn_registry_conf_path(reg, 3), ATTNREG_TEST_CONF_DIR));
    attn_registry_close(reg);
}
END_TEST

START_TEST(earlier_folder_overrides_shipped_plugin)
{
    /* An admin's (or host's) cpu-ref.ini, searched before the shipped one:
     * its settings win, the shipped file is skipped with one info line, and
     * nothing counts as a conf problem. */
    const char *admin = ts_subdir("conf.d");
    char library[4096];
    snprintf(library, sizeof library, "%s/libattn_cpu_ref%s", ATTNREG_TEST_PLUGIN_DIR,
             ATTNREG_MODULE_SUFFIX);
    const char *ini = ts_write_plugin_ini(admin, "cpu-ref.ini", "cpu-ref", library, 7, "cpu", NULL);
    const char *dirs[2] = {admin, ATTNREG_TEST_CONF_DIR};
    attn_registry_options opt;
    attn_registry *reg = NULL;
    ts_options(&opt, dirs, 2);
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    long k = ts_plugin_index(reg, "cpu-ref");
    ck_assert_int_ge(k, 0);
    attn_plugin_info info = {.struct_size = sizeof info};
    ck_assert_int_eq(attn_registry_plugin(reg, (size_t)k, &info), ATTN_OK);
    ck_assert_int_eq(info.priority, 7);
    ck_assert(ts_same_file(info.conf_file, ini));
    for (size_t i = 0; i < attn_registry_diagnostic_count(reg); i++) {
        attn_diagnostic d = {.struct_size = sizeof d};
        ck_assert_int_eq(attn_registry_diagnostic(reg, i, &d), ATTN_OK);
        ck_assert_msg(d.status == ATTN_OK, "diagnostic %s", d.message);
    }
    ck_assert_msg(ts_log_count(ATTN_LOG_INFO, "cpu-ref.ini", "plugin 'cpu-ref' is overridden by",
                               ini, NULL) == 1,
                  "log:\n%s", ts_log_dump());
    /* The override really loads. */
    attn_plugin_load_info load = {.struct_size = sizeof load};
    ck_assert_int_eq(attn_registry_load_plugin(reg, (size_t)k, &load), ATTN_OK);
    ck_assert_int_eq(load.status, ATTN_OK);
    attn_registry_close(reg);
}
END_TEST

/* Reads the whole file into a buffer owned by the caller. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char text[65536];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

START_TEST(log_file_one_line_per_event)
{
    const char *dir = ts_subdir("conf");
    ts_write_plugin_ini(dir, "good.ini", "fake-good", ts_fake("good"), 5, "fake", NULL);
    ts_write(dir, "typo.ini",
             "[plugin]\nformat_version = 1.0\nname = typo\nlibrary = x.so\npriority = 1\n"
             "archs = fake\nlibary = y.so\n");
    const char *log_path = ts_join(ts_dir(), "attnreg.log");
    char log_copy[4096];
    snprintf(log_copy, sizeof log_copy, "%s", log_path);
    ck_assert_int_eq(setenv("ATTNREG_LOG_FILE", log_copy, 1), 0);
    const char *dirs[1] = {dir};
    attn_registry_options opt;
    attn_registry *reg = NULL;
    ts_options(&opt, dirs, 1);
    opt.skip_env = 0;
    opt.log_fn = NULL; /* the default sink */
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    unsetenv("ATTNREG_LOG_FILE");
    /* A plugin's own log line (fake-good logs from init), and a shape no
     * backend takes: its message lists every candidate on its own line. */
    long k = ts_plugin_index(reg, "fake-good");
    ck_assert_int_ge(k, 0);
    attn_plugin_load_info load = {.struct_size = sizeof load};
    ck_assert_int_eq(attn_registry_load_plugin(reg, (size_t)k, &load), ATTN_OK);
    attn_shape shape;
    ts_fake_shape(&shape);
    ts_set_arch(&shape, "elsewhere");
    attn_selection sel;
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &sel), ATTN_ERR_UNSUPPORTED);
    attn_registry_close(reg);

    char *text = slurp(log_copy);
    ck_assert_msg(strstr(text, ": unknown key 'libary' in [plugin]") != NULL, "log file:\n%s",
                  text);
    ck_assert_msg(strstr(text, "attnreg: error: reg=") == text, "log file:\n%s", text);
    ck_assert_msg(strstr(text, " plugin=fake-good: fake plugin initialised\n") != NULL,
                  "log file:\n%s", text);
    ck_assert_msg(strstr(text, "attnreg: info: reg=") != NULL, "log file:\n%s", text);
    ck_assert_msg(strstr(text, "ATTN_ERR_UNSUPPORTED") != NULL, "log file:\n%s", text);
    /* Every line is one whole event in the one format. */
    int lines = 0;
    for (char *line = text; *line; lines++) {
        char *end = strchr(line, '\n');
        ck_assert_msg(end != NULL, "unterminated line: %s", line);
        ck_assert_msg(strncmp(line, "attnreg: ", 9) == 0 && strstr(line, " reg=") != NULL,
                      "line %d is not an event line: %.*s", lines + 1, (int)(end - line), line);
        line = end + 1;
    }
    ck_assert_int_ge(lines, 3);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("search");
    TCase *tc = tcase_create("search");
    ts_add_fixtures(tc, 30);
    tcase_add_test(tc, search_order_with_origins);
    tcase_add_test(tc, earlier_folder_overrides_shipped_plugin);
    tcase_add_test(tc, log_file_one_line_per_event);
    suite_add_tcase(s, tc);
    return ts_run(s);
}
