/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_conf.c — reading conf folders: INI syntax, format versions, keys,
 * duplicates, relative libraries, narrowing, search path, diagnostics.
 *
 * Every conf error must name file:line (DESIGN.md, "Conf format"), and a bad
 * file is skipped without taking the good ones down with it, unless the host
 * asked for fail_on_conf_error.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnreg.h"
#include "support/test_support.h"

static attn_plugin_info plugin_info(const attn_registry *reg, size_t index)
{
    attn_plugin_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(attn_registry_plugin(reg, index, &info), ATTN_OK);
    return info;
}

/* Assert that the registry reported a problem at file:line, as a diagnostic
 * with that status, and that the diagnostic's sentence is not empty. */
static void assert_diag_at(const attn_registry *reg, const char *file, int line, attn_status status)
{
    attn_diagnostic d;
    long i = ts_find_diagnostic(reg, file, line, &d);
    ck_assert_msg(i >= 0, "no diagnostic at %s:%d (%zu diagnostics); log:%s", file, line,
                  attn_registry_diagnostic_count(reg), ts_log_dump());
    ck_assert_int_eq(d.status, status);
    ck_assert_msg(d.message && d.message[0], "diagnostic at %s:%d has no message", file, line);
}

/* With fail_on_conf_error, open must fail with ATTN_ERR_CONF and the last
 * error must name "<file>:<line>". */
static void assert_open_fails_at(const char *dir, const char *base, int line)
{
    const char *dirs[1];
    attn_registry_options opt;
    attn_registry *reg = NULL;
    char where[PATH_MAX];
    attn_status st;
    dirs[0] = dir;
    ts_options(&opt, dirs, 1);
    opt.fail_on_conf_error = 1;
    st = attn_registry_open(&opt, &reg);
    ck_assert_msg(st == ATTN_ERR_CONF, "open returned %s", attn_status_name(st));
    ck_assert_ptr_null(reg);
    snprintf(where, sizeof where, "%s:%d", base, line);
    ck_assert_msg(strstr(attn_last_error(), where) != NULL, "last error \"%s\" does not name %s",
                  attn_last_error(), where);
}

START_TEST(valid_plugin_listed)
{
    const char *dir = ts_dir();
    const char *lib = ts_fake("good");
    const char *ini =
        ts_write_plugin_ini(dir, "good.ini", "fake-good", lib, 7, "fake, fake9", NULL);
    attn_registry *reg = ts_open_dir(dir);
    attn_plugin_info info;

    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
    ck_assert_uint_eq(attn_registry_diagnostic_count(reg), 0);
    info = plugin_info(reg, 0);
    ck_assert_str_eq(info.name, "fake-good");
    ck_assert_int_eq(info.priority, 7);
    ck_assert_int_eq(info.enabled, 1);
    ck_assert_msg(strstr(info.archs, "fake") && strstr(info.archs, "fake9"), "archs \"%s\"",
                  info.archs);
    ck_assert_msg(ts_same_file(info.library, lib), "library %s", info.library);
    ck_assert_msg(ts_same_file(info.conf_file, ini), "conf_file %s", info.conf_file);
    ck_assert_int_eq(info.conf_line, TS_LINE_NAME);
    ck_assert_ptr_nonnull(info.candidate);
    ck_assert_int_eq(attn_plugin_info_has_arch(&info, "fake"), 1);
    ck_assert_int_eq(attn_plugin_info_has_arch(&info, "fake9"), 1);
    /* Whole names only: "fak" is not "fake". */
    ck_assert_int_eq(attn_plugin_info_has_arch(&info, "fak"), 0);
    ck_assert_int_eq(attn_plugin_info_has_arch(&info, "gfx950"), 0);
    /* Out of range. */
    ck_assert_int_ne(attn_registry_plugin(reg, 1, &info), ATTN_OK);
    attn_registry_close(reg);
}
END_TEST

START_TEST(syntax_error_names_file_line)
{
    const char *dir = ts_dir();
    const char *bad, *good;
    attn_registry *reg;
    /* Line 4 opens a section it never closes. */
    bad = ts_write(dir, "bad.ini",
                   "[plugin]\n"
                   "format_version = 1.0\n"
                   "name = fake-alpha\n"
                   "[unterminated\n"
                   "priority = 3\n");
    good = ts_write_plugin_ini(dir, "good.ini", "fake-good", ts_fake("good"), 1, "fake", NULL);
    (void)good;
    reg = ts_open_dir(dir);
    assert_diag_at(reg, bad, 4, ATTN_ERR_CONF);
    /* The bad file is skipped, the good one kept. */
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
    ck_assert_int_eq(ts_plugin_index(reg, "fake-good"), 0);
    ck_assert_int_lt(ts_plugin_index(reg, "fake-alpha"), 0);
    /* And it was logged (as an error or warning), naming the file. */
    ck_assert_msg(ts_log_count(ATTN_LOG_ERROR, "bad.ini", NULL) +
                          ts_log_count(ATTN_LOG_WARN, "bad.ini", NULL) >=
                      1,
                  "conf error not logged:%s", ts_log_dump());
    attn_registry_close(reg);

    assert_open_fails_at(dir, "bad.ini", 4);
}
END_TEST

START_TEST(unknown_format_major_rejected)
{
    const char *dir = ts_dir();
    const char *ini = ts_write(dir, "future.ini",
                               "[plugin]\n"
                               "format_version = 2.0\n"
                               "name = fake-good\n"
                               "library = /nonexistent/libx.so\n"
                               "priority = 1\n"
                               "archs = fake\n");
    attn_registry *reg = ts_open_dir(dir);
    assert_diag_at(reg, ini, 2, ATTN_ERR_CONF);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 0);
    attn_registry_close(reg);
    assert_open_fails_at(dir, "future.ini", 2);
}
END_TEST

START_TEST(newer_minor_warns_but_loads)
{
    const char *dir = ts_dir();
    const char *dirs[1];
    attn_registry_options opt;
    attn_registry *reg = NULL;
    ts_write(dir, "newer.ini",
             "[plugin]\n"
             "format_version = 1.7\n"
             "name = fake-good\n"
             "library = /nonexistent/libx.so\n"
             "priority = 1\n"
             "archs = fake\n");
    reg = ts_open_dir(dir);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN, "newer.ini", NULL) >= 1,
                  "no warning naming newer.ini:%s", ts_log_dump());
    attn_registry_close(reg);

    /* A warning is not an error: fail_on_conf_error still opens. */
    dirs[0] = dir;
    ts_options(&opt, dirs, 1);
    opt.fail_on_conf_error = 1;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
    attn_registry_close(reg);
}
END_TEST

START_TEST(missing_library_rejected_at_select)
{
    const char *dir = ts_dir();
    const char *missing = ts_join(dir, "libdoes_not_exist.so");
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    attn_status st;

    ts_write_plugin_ini(dir, "ghost.ini", "fake-ghost", missing, 1, "fake", NULL);
    /* Opening loads nothing, so a missing library is not an open error. */
    reg = ts_open_dir(dir);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);

    ts_fake_shape(&shape);
    attn_selection_init(&sel);
    st = attn_registry_select(reg, &shape, &sel);
    ck_assert_int_eq(st, ATTN_ERR_UNSUPPORTED);
    ck_assert_ptr_null(sel.backend_name);
    ck_assert_msg(strstr(sel.message, missing) != NULL, "message \"%s\" does not name %s",
                  sel.message, missing);

    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_ERR_UNSUPPORTED);
    ck_assert(ts_find_record(ex, 0, "fake-ghost", &r));
    ck_assert_int_eq(r.accepted, 0);
    ck_assert_int_eq(r.reason, ATTN_REASON_LOAD_FAILED);
    ck_assert_str_eq(r.reason_name, "LOAD_FAILED");
    ck_assert_msg(strstr(r.message, missing) != NULL, "record \"%s\" does not name the path",
                  r.message);
    attn_explanation_free(ex);
    attn_registry_close(reg);
}
END_TEST

START_TEST(duplicate_names_across_folders)
{
    const char *a = ts_subdir("a");
    const char *b = ts_subdir("b");
    const char *ini_a =
        ts_write_plugin_ini(a, "fake.ini", "fake-good", ts_fake("good"), 3, "fake", NULL);
    const char *ini_b =
        ts_write_plugin_ini(b, "fake.ini", "fake-good", ts_fake("good"), 9, "fake", NULL);
    const char *dirs[2];
    attn_registry_options opt;
    attn_registry *reg = NULL;
    attn_diagnostic d;
    attn_plugin_info info;
    size_t i, n;
    int found = 0;

    dirs[0] = a;
    dirs[1] = b;
    ts_options(&opt, dirs, 2);
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    /* The first found is kept. */
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
    info = plugin_info(reg, 0);
    ck_assert_msg(ts_same_file(info.conf_file, ini_a), "kept %s", info.conf_file);
    ck_assert_int_eq(info.priority, 3);
    /* A layered search: the earlier folder overrides the later one on
     * purpose, so it is no diagnostic (check stays clean) but one info line
     * naming both files. */
    n = attn_registry_diagnostic_count(reg);
    for (i = 0; i < n; i++) {
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        ck_assert_int_eq(attn_registry_diagnostic(reg, i, &d), ATTN_OK);
        if (d.status != ATTN_OK)
            found++;
    }
    ck_assert_msg(found == 0, "an override became %d error diagnostic(s); log:%s", found,
                  ts_log_dump());
    ck_assert_msg(ts_log_count(ATTN_LOG_INFO, "overridden", ini_a, ini_b, NULL) == 1,
                  "no single info line names %s and %s; log:%s", ini_a, ini_b, ts_log_dump());
    ck_assert_int_eq(ts_log_count(ATTN_LOG_WARN, "fake-good", NULL), 0);
    ck_assert_int_eq(ts_log_count(ATTN_LOG_ERROR, "fake-good", NULL), 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(duplicate_names_in_one_folder)
{
    /* Within a folder the order must not depend on readdir: files are read
     * in name order, so a<sfx>.ini wins over the 25 others on every file
     * system. They are written m..z then a..l, so neither creation order
     * nor its reverse (tmpfs) puts the winner first; a hashed order (ext4)
     * does so by chance 1 in 26, hence three name sets with different
     * hashes. Every duplicate is reported, naming both files. */
    static const char *const suffixes[] = {"", "-vendor", "_x9"};
    size_t set;
    for (set = 0; set < 3; set++) {
        const char *sfx = suffixes[set];
        char sub[16], winner[32];
        const char *dir, *ini_a = NULL;
        attn_registry *reg;
        attn_plugin_info info;
        size_t i, n;
        int k, named_both = 0;
        snprintf(sub, sizeof sub, "set%zu", set);
        dir = ts_subdir(sub);
        snprintf(winner, sizeof winner, "/a%s.ini", sfx);
        for (k = 0; k < 26; k++) {
            char c = (char)('a' + (k + 12) % 26), file[32];
            const char *p;
            snprintf(file, sizeof file, "%c%s.ini", c, sfx);
            p = ts_write_plugin_ini(dir, file, "fake-good", ts_fake("good"), c - 'a', "fake", NULL);
            if (c == 'a')
                ini_a = p;
        }
        reg = ts_open_dir(dir);
        ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
        info = plugin_info(reg, 0);
        ck_assert_msg(ts_same_file(info.conf_file, ini_a), "kept %s, not %s", info.conf_file,
                      ini_a);
        ck_assert_int_eq(info.priority, 0);
        n = attn_registry_diagnostic_count(reg);
        ck_assert_uint_eq(n, 25);
        for (i = 0; i < n; i++) {
            attn_diagnostic d;
            memset(&d, 0, sizeof d);
            d.struct_size = sizeof d;
            ck_assert_int_eq(attn_registry_diagnostic(reg, i, &d), ATTN_OK);
            if (strstr(d.message, winner) && strstr(d.message, d.file))
                named_both++;
        }
        ck_assert_int_eq(named_both, 25);
        attn_registry_close(reg);
    }
}
END_TEST

START_TEST(relative_library_resolved_against_ini_folder)
{
    /* <tmp>/conf/x.ini says ../lib/libfake_good.so; the process runs from
     * "/", so only resolving against the INI's folder can find it. */
    const char *conf = ts_subdir("conf");
    const char *libdir = ts_subdir("lib");
    const char *link = ts_join(libdir, "libfake_good" ATTNREG_MODULE_SUFFIX);
    attn_registry *reg;
    attn_plugin_info info;
    attn_plugin_load_info li;
    attn_selection sel;
    attn_shape shape;

    ck_assert_int_eq(symlink(ts_fake("good"), link), 0);
    ts_write_plugin_ini(conf, "good.ini", "fake-good", "../lib/libfake_good" ATTNREG_MODULE_SUFFIX,
                        1, "fake", NULL);
    ck_assert_int_eq(chdir("/"), 0);
    reg = ts_open_dir(conf);
    info = plugin_info(reg, 0);
    ck_assert_msg(info.library[0] == '/', "library not resolved: %s", info.library);
    ck_assert_msg(ts_same_file(info.library, link), "library %s is not %s", info.library, link);

    memset(&li, 0, sizeof li);
    li.struct_size = sizeof li;
    ck_assert_int_eq(attn_registry_load_plugin(reg, 0, &li), ATTN_OK);
    ts_fake_shape(&shape);
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &sel), ATTN_OK);
    ck_assert_str_eq(sel.backend_name, "fake-good");
    attn_registry_close(reg);
}
END_TEST

START_TEST(absolute_library_kept)
{
    const char *dir = ts_dir();
    attn_registry *reg;
    ts_write_plugin_ini(dir, "good.ini", "fake-good", ts_fake("good"), 1, "fake", NULL);
    reg = ts_open_dir(dir);
    ck_assert(ts_same_file(plugin_info(reg, 0).library, ts_fake("good")));
    attn_registry_close(reg);
}
END_TEST

/* Narrowing: each row writes one [narrow] key and a shape it must exclude;
 * the same shape with the `ok` tweak must still be accepted. The decision
 * must come from the conf layer, without loading the library. */
typedef struct narrow_case {
    const char *key; /* "head_dims = 64, 128" */
    void (*exclude)(attn_shape *);
    void (*include)(attn_shape *);
} narrow_case;

static void hd256(attn_shape *s)
{
    s->head_dim = 256;
}
static void hd128(attn_shape *s)
{
    s->head_dim = 128;
}
static void qf16(attn_shape *s)
{
    s->q_dtype = ATTN_DTYPE_F16;
}
static void kvfp8(attn_shape *s)
{
    s->kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
}
static void cf32(attn_shape *s)
{
    s->compute_dtype = ATTN_DTYPE_F32;
}
static void of16(attn_shape *s)
{
    s->out_dtype = ATTN_DTYPE_F16;
}
static void gqa8(attn_shape *s)
{
    s->num_q_heads = 32;
    s->num_kv_heads = 4;
}
static void gqa4(attn_shape *s)
{
    s->num_q_heads = 32;
    s->num_kv_heads = 8;
}
static void page32(attn_shape *s)
{
    s->page_size = 32;
}
static void nothing(attn_shape *s)
{
    (void)s;
}
static void qlen8(attn_shape *s)
{
    s->max_q_len = 8;
    s->max_kv_len = 64;
}
static void qlen1(attn_shape *s)
{
    s->max_q_len = 1;
    s->max_kv_len = 64;
}
static void kvlen4k(attn_shape *s)
{
    s->max_kv_len = 4096;
}
static void kvlen1k(attn_shape *s)
{
    s->max_kv_len = 1024;
}
static void window(attn_shape *s)
{
    s->window_left = 128;
    s->window_right = 0;
}
static void softcap(attn_shape *s)
{
    s->softcap = 30.0f;
}
static void sinks(attn_shape *s)
{
    s->has_sinks = 1;
}
static void noncausal(attn_shape *s)
{
    s->causal = 0;
}

static const narrow_case narrow_cases[] = {
    {"head_dims = 64, 128", hd256, hd128},
    {"q_dtypes = bf16", qf16, nothing},
    {"kv_dtypes = bf16, f16", kvfp8, nothing},
    {"compute_dtypes = bf16", cf32, nothing},
    {"out_dtypes = bf16", of16, nothing},
    {"gqa_ratios = 1, 4", gqa8, gqa4},
    {"page_sizes = 16", page32, nothing},
    {"max_q_len = 4", qlen8, qlen1},
    {"min_q_len = 2", qlen1, qlen8},
    {"max_kv_len = 2048", kvlen4k, kvlen1k},
    {"min_kv_len = 2048", kvlen1k, kvlen4k},
    {"allow_window = false", window, nothing},
    {"allow_softcap = no", softcap, nothing},
    {"allow_sinks = 0", sinks, nothing},
    {"allow_non_causal = false", noncausal, nothing},
};

START_TEST(narrowing_keys)
{
    const narrow_case *c = &narrow_cases[_i];
    const char *dir = ts_dir();
    const char *lib = ts_fake("good");
    const char *ini;
    char extra[256];
    attn_registry *reg;
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    attn_selection sel;
    attn_shape shape;
    attn_status st;

    snprintf(extra, sizeof extra, "[narrow]\n%s\n", c->key);
    ini = ts_write_plugin_ini(dir, "good.ini", "fake-good", lib, 1, "fake", extra);
    reg = ts_open_dir(dir);
    ck_assert_uint_eq(attn_registry_diagnostic_count(reg), 0);

    ts_fake_shape(&shape);
    c->exclude(&shape);
    attn_selection_init(&sel);
    st = attn_registry_select(reg, &shape, &sel);
    ck_assert_msg(st == ATTN_ERR_UNSUPPORTED, "[narrow] %s: select = %s", c->key,
                  attn_status_name(st));
    ck_assert_msg(!ts_is_loaded(lib), "[narrow] %s: the library was loaded to decide", c->key);
    attn_registry_explain(reg, &shape, &ex);
    ck_assert_ptr_nonnull(ex);
    ck_assert(ts_find_record(ex, 0, "fake-good", &r));
    ck_assert_int_eq(r.reason, ATTN_REASON_NARROWED);
    ck_assert_msg(r.message && r.message[0], "no sentence");
    ck_assert_msg(ts_same_file(r.conf_file, ini), "conf_file %s", r.conf_file);
    ck_assert_int_eq(r.conf_line, TS_LINE_EXTRA + 1); /* the key's line */
    attn_explanation_free(ex);

    ts_fake_shape(&shape);
    c->include(&shape);
    attn_selection_init(&sel);
    st = attn_registry_select(reg, &shape, &sel);
    ck_assert_msg(st == ATTN_OK, "[narrow] %s: in-range shape refused: %s", c->key, sel.message);
    ck_assert_str_eq(sel.backend_name, "fake-good");
    attn_registry_close(reg);
}
END_TEST

START_TEST(narrowing_never_widens)
{
    /* fake-rejects refuses every head_dim in its predicates; an INI that
     * "allows" 128 must not override the plugin's truth. */
    const char *dir = ts_dir();
    attn_registry *reg;
    attn_verdict_record r;
    attn_shape shape;
    attn_selection sel;
    ts_write_plugin_ini(dir, "rej.ini", "fake-rejects", ts_fake("rejects"), 1, "fake",
                        "[narrow]\nhead_dims = 128\nq_dtypes = bf16, f16\n");
    reg = ts_open_dir(dir);
    ts_fake_shape(&shape);
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &sel), ATTN_ERR_UNSUPPORTED);
    r = ts_record_for(reg, &shape, "fake-rejects");
    ck_assert_int_eq(r.reason, ATTN_REASON_HEAD_DIM);
    attn_registry_close(reg);
}
END_TEST

/* Bad values: each row is a plugin INI with one bad key at a known line. */
typedef struct bad_value_case {
    const char *text;
    int line;
} bad_value_case;

static const bad_value_case bad_values[] = {
    {"[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = /x.so\npriority = high\n"
     "archs = fake\n",
     5},
    {"[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = /x.so\npriority = 12abc\n"
     "archs = fake\n",
     5},
    {"[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = /x.so\nenabled = maybe\n"
     "archs = fake\n",
     5},
    {"[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = /x.so\narchs = fake\n"
     "[narrow]\nq_dtypes = bf17\n",
     7},
    {"[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = /x.so\narchs = fake\n"
     "[narrow]\nhead_dims = 64, huge\n",
     7},
    {"[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = /x.so\narchs = fake\n"
     "[narrow]\nallow_window = perhaps\n",
     7},
    {"[plugin]\nformat_version = one\nname = fake-good\nlibrary = /x.so\narchs = fake\n", 2},
    {"[registry]\nformat_version = 1.0\n[fallback:x]\nfield = head_dim\nfrom = bf16\nto = f16\n",
     4},
    {"[registry]\nformat_version = 1.0\n[fallback:x]\nfield = compute_dtype\nfrom = fp9\n"
     "to = bf16\n",
     5},
    {"[registry]\nformat_version = 1.0\n[fallback:x]\nfield = compute_dtype\n"
     "from = fp8_e4m3fn\nto = nope\n",
     6},
};

START_TEST(bad_values_name_file_line)
{
    const bad_value_case *c = &bad_values[_i];
    const char *dir = ts_dir();
    const char *ini = ts_write(dir, "bad.ini", c->text);
    attn_registry *reg = ts_open_dir(dir);
    assert_diag_at(reg, ini, c->line, ATTN_ERR_CONF);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 0);
    attn_registry_close(reg);
    assert_open_fails_at(dir, "bad.ini", c->line);
}
END_TEST

START_TEST(missing_required_keys)
{
    /* No library, no name: the plugin cannot be registered; the diagnostic
     * names the file. */
    const char *dir = ts_dir();
    const char *no_lib =
        ts_write(dir, "nolib.ini", "[plugin]\nformat_version = 1.0\nname = fake-a\narchs = fake\n");
    const char *no_name = ts_write(
        dir, "noname.ini", "[plugin]\nformat_version = 1.0\nlibrary = /x.so\narchs = fake\n");
    attn_registry *reg = ts_open_dir(dir);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 0);
    ck_assert_int_ge(ts_find_diagnostic(reg, no_lib, -1, NULL), 0);
    ck_assert_int_ge(ts_find_diagnostic(reg, no_name, -1, NULL), 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(only_ini_files_read)
{
    const char *dir = ts_dir();
    attn_registry *reg;
    ts_write(dir, "README.txt", "this [is not an INI\n");
    ts_write(dir, "backup.ini~", "garbage\n[x\n");
    ts_write_plugin_ini(dir, "good.ini", "fake-good", ts_fake("good"), 1, "fake", NULL);
    reg = ts_open_dir(dir);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
    ck_assert_uint_eq(attn_registry_diagnostic_count(reg), 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(disabled_in_ini)
{
    const char *dir = ts_dir();
    const char *ini;
    attn_registry *reg;
    attn_verdict_record r;
    attn_shape shape;
    attn_selection sel;
    ini = ts_write(dir, "off.ini",
                   "[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = /x.so\n"
                   "priority = 1\nenabled = false\narchs = fake\n");
    reg = ts_open_dir(dir);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
    ck_assert_int_eq(plugin_info(reg, 0).enabled, 0);
    ts_fake_shape(&shape);
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &sel), ATTN_ERR_UNSUPPORTED);
    {
        attn_explanation *ex = NULL;
        attn_registry_explain(reg, &shape, &ex);
        ck_assert(ts_find_record(ex, 0, "fake-good", &r));
        ck_assert_int_eq(r.reason, ATTN_REASON_DISABLED);
        ck_assert_msg(ts_same_file(r.conf_file, ini), "conf_file %s", r.conf_file);
        ck_assert_int_eq(r.conf_line, 6); /* enabled = false */
        attn_explanation_free(ex);
    }
    attn_registry_close(reg);
}
END_TEST

START_TEST(search_path_order_and_env)
{
    const char *a = ts_subdir("a");
    const char *e1 = ts_subdir("e1");
    const char *e2 = ts_subdir("e2");
    const char *dirs[1];
    char env[2 * PATH_MAX + 2];
    attn_registry_options opt;
    attn_registry *reg = NULL;

    ts_write_plugin_ini(e2, "good.ini", "fake-good", ts_fake("good"), 1, "fake", NULL);
    snprintf(env, sizeof env, "%s:%s", e1, e2);
    ck_assert_int_eq(setenv("ATTNREG_CONF_PATH", env, 1), 0);
    dirs[0] = a;

    /* Option first, then the variable's folders in order; no default. */
    ts_options(&opt, dirs, 1);
    opt.skip_env = 0;
    opt.skip_env_conf_path = 0;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    ck_assert_uint_eq(attn_registry_conf_path_count(reg), 3);
    ck_assert(ts_same_file(attn_registry_conf_path(reg, 0), a));
    ck_assert(ts_same_file(attn_registry_conf_path(reg, 1), e1));
    ck_assert(ts_same_file(attn_registry_conf_path(reg, 2), e2));
    ck_assert_ptr_null(attn_registry_conf_path(reg, 3));
    ck_assert_int_eq(ts_plugin_index(reg, "fake-good"), 0);
    attn_registry_close(reg);

    /* skip_env_conf_path and skip_env both ignore the variable. */
    ts_options(&opt, dirs, 1);
    opt.skip_env = 0;
    opt.skip_env_conf_path = 1;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    ck_assert_uint_eq(attn_registry_conf_path_count(reg), 1);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 0);
    attn_registry_close(reg);

    ts_options(&opt, dirs, 1);
    opt.skip_env = 1;
    opt.skip_env_conf_path = 0;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    ck_assert_uint_eq(attn_registry_conf_path_count(reg), 1);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(default_conf_folder_next_to_library)
{
    /* The default folder is <libdir>/../share/attnreg/conf, found from
     * libattnreg's own location, so the build tree works unconfigured. */
    attn_registry_options opt;
    attn_registry *reg = NULL;
    size_t n;
    ts_options(&opt, NULL, 0);
    opt.skip_default_conf = 0;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    /* Two default folders, in search order: the administrator's
     * <sysconfdir>/attnreg/conf.d (listed although absent), then the shipped
     * one. */
    n = attn_registry_conf_path_count(reg);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(attn_registry_conf_path_origin(reg, 0), "sysconf");
    ck_assert_msg(strstr(attn_registry_conf_path(reg, 0), "attnreg/conf.d") != NULL,
                  "sysconf folder %s", attn_registry_conf_path(reg, 0));
    ck_assert_str_eq(attn_registry_conf_path_origin(reg, 1), "datadir");
    ck_assert_msg(ts_same_file(attn_registry_conf_path(reg, 1), ATTNREG_TEST_CONF_DIR),
                  "default folder %s, expected %s", attn_registry_conf_path(reg, 1),
                  ATTNREG_TEST_CONF_DIR);
    ck_assert_ptr_null(attn_registry_conf_path_origin(reg, 2));
    attn_registry_close(reg);
}
END_TEST

START_TEST(shipped_conf_reads_clean)
{
    /* The INIs we ship must parse without a single diagnostic. */
    attn_registry *reg = ts_open_dir(ATTNREG_TEST_CONF_DIR);
    attn_diagnostic d;
    memset(&d, 0, sizeof d);
    if (attn_registry_diagnostic_count(reg) > 0) {
        d.struct_size = sizeof d;
        attn_registry_diagnostic(reg, 0, &d);
    }
    ck_assert_msg(attn_registry_diagnostic_count(reg) == 0, "shipped conf: %s:%d %s", d.file,
                  (int)d.line, d.message);
    ck_assert_int_ge(ts_plugin_index(reg, "cpu-ref"), 0);
    ck_assert_int_ge(ts_plugin_index(reg, "aiter-generic"), 0);
    ck_assert_int_ge(ts_plugin_index(reg, "aiter-mtp-gfx950"), 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(list_by_arch_shipped)
{
    /* Acceptance: the gfx950 list is aiter-mtp-gfx950 then aiter-generic,
     * without cpu-ref, decided from the INIs alone. */
    attn_registry *reg = ts_open_dir(ATTNREG_TEST_CONF_DIR);
    const char *names[8];
    size_t i, n = attn_registry_plugin_count(reg), k = 0;
    for (i = 0; i < n; i++) {
        attn_plugin_info info = plugin_info(reg, i);
        if (attn_plugin_info_has_arch(&info, "gfx950") && k < 8)
            names[k++] = info.name;
        ck_assert_msg(!ts_is_loaded(info.library), "listing loaded %s", info.library);
    }
    ck_assert_uint_eq(k, 2);
    ck_assert_str_eq(names[0], "aiter-mtp-gfx950");
    ck_assert_str_eq(names[1], "aiter-generic");
    attn_registry_close(reg);
}
END_TEST

START_TEST(missing_conf_folder_is_not_fatal)
{
    /* A folder that does not exist (a stale ATTNREG_CONF_PATH entry, say)
     * must not make open fail; the other folders still count. */
    const char *good = ts_subdir("good");
    const char *dirs[2];
    attn_registry_options opt;
    attn_registry *reg = NULL;
    ts_write_plugin_ini(good, "good.ini", "fake-good", ts_fake("good"), 1, "fake", NULL);
    dirs[0] = ts_join(ts_dir(), "no-such-folder");
    dirs[1] = good;
    ts_options(&opt, dirs, 2);
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    ck_assert_int_eq(ts_plugin_index(reg, "fake-good"), 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(long_lines_read_whole)
{
    /* A long absolute library path (deep build trees, vendor prefixes) is
     * still one key = value line: it must be read whole, not split into a
     * "syntax error" on the wrong line. The folder name alone is 240 bytes,
     * so the library line is well over 200. */
    char longname[241];
    const char *dir = ts_dir();
    const char *deep, *link, *ini;
    attn_registry *reg;
    attn_plugin_load_info li;
    memset(longname, 'd', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    deep = ts_subdir(longname);
    link = ts_join(deep, "libfake_good" ATTNREG_MODULE_SUFFIX);
    ck_assert_int_eq(symlink(ts_fake("good"), link), 0);
    ck_assert_uint_gt(strlen(link), 250);
    ini = ts_write_plugin_ini(dir, "long.ini", "fake-good", link, 1, "fake", NULL);
    reg = ts_open_dir(dir);
    {
        attn_diagnostic d;
        memset(&d, 0, sizeof d);
        if (ts_find_diagnostic(reg, NULL, -1, &d) >= 0)
            ck_abort_msg("a valid INI with a %zu-byte line was rejected: %s:%d: %s",
                         strlen(link) + 10, d.file, (int)d.line, d.message);
    }
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
    ck_assert(ts_same_file(plugin_info(reg, 0).library, link));
    memset(&li, 0, sizeof li);
    li.struct_size = sizeof li;
    ck_assert_int_eq(attn_registry_load_plugin(reg, 0, &li), ATTN_OK);
    (void)ini;
    attn_registry_close(reg);
}
END_TEST

START_TEST(continuation_lines_not_dropped)
{
    /* inih treats an indented line as a continuation of the previous
     * value and hands it over as a second value of the same key. Keeping
     * only the last piece would silently drop gfx942 from the list; either
     * both archs count or the file is refused naming file:line. */
    const char *dir = ts_dir();
    const char *ini = ts_write(dir, "wrapped.ini",
                               "[plugin]\n"
                               "format_version = 1.0\n"
                               "name = fake-good\n"
                               "library = /nonexistent/libx.so\n"
                               "priority = 1\n"
                               "archs = gfx942,\n"
                               "        gfx950\n");
    attn_registry *reg = ts_open_dir(dir);
    if (attn_registry_plugin_count(reg) == 1) {
        attn_plugin_info info = plugin_info(reg, 0);
        ck_assert_msg(attn_plugin_info_has_arch(&info, "gfx942") &&
                          attn_plugin_info_has_arch(&info, "gfx950"),
                      "wrapped archs list read as \"%s\" without a diagnostic", info.archs);
    } else {
        attn_diagnostic d;
        ck_assert_msg(ts_find_diagnostic(reg, ini, -1, &d) >= 0, "plugin dropped silently");
        ck_assert_msg(d.line == 6 || d.line == 7, "diagnostic names line %d", (int)d.line);
    }
    attn_registry_close(reg);
}
END_TEST

START_TEST(duplicate_key_reported)
{
    /* Two priorities in one section: whichever wins, the user wrote a
     * contradiction and must hear about it at the second line. */
    const char *dir = ts_dir();
    const char *ini = ts_write(dir, "dup.ini",
                               "[plugin]\n"
                               "format_version = 1.0\n"
                               "name = fake-good\n"
                               "library = /nonexistent/libx.so\n"
                               "priority = 1\n"
                               "priority = 90\n"
                               "archs = fake\n");
    attn_registry *reg = ts_open_dir(dir);
    ck_assert_msg(ts_find_diagnostic(reg, ini, 6, NULL) >= 0 ||
                      ts_log_count(ATTN_LOG_WARN, "dup.ini:6", NULL) >= 1,
                  "duplicate key not reported at dup.ini:6:%s", ts_log_dump());
    attn_registry_close(reg);
}
END_TEST

START_TEST(design_example_reads_clean)
{
    /* DESIGN.md's conf example, inline comments and all, must be a valid
     * conf: people copy it. */
    const char *dir = ts_dir();
    attn_registry *reg;
    attn_plugin_info info;
    ts_write(dir, "aiter-generic.ini",
             "[plugin]\n"
             "format_version = 1.0        ; major 1 understood; unknown major = file rejected; "
             "newer minor = warning\n"
             "name = aiter-generic        ; must equal the plugin descriptor's name\n"
             "library = ../../../lib/attnreg/libattn_aiter_generic.so  ; relative to this "
             "file's folder unless absolute\n"
             "priority = 50               ; higher is tried first; ties by name\n"
             "enabled = true              ; true/false/yes/no/1/0\n"
             "archs = gfx942, gfx950      ; the arch list; checked without loading the library\n"
             "\n"
             "[narrow]                    ; optional: narrow (never widen) what the plugin's "
             "predicates accept\n"
             "q_dtypes = bf16             ; lists: q_dtypes kv_dtypes compute_dtypes "
             "out_dtypes\n"
             "head_dims = 128, 256        ; int lists: head_dims gqa_ratios page_sizes\n"
             "min_q_len = 1               ; ints: min_q_len max_q_len min_kv_len max_kv_len\n"
             "allow_window = false        ; bools: allow_window allow_softcap allow_sinks "
             "allow_non_causal\n"
             "\n"
             "[params]                    ; passed verbatim to the plugin "
             "(attn_plugin_context.params)\n"
             "threads = 0\n");
    ts_write(dir, "registry.ini",
             "[registry]\n"
             "format_version = 1.0\n"
             "[fallback:NAME]             ; tried in file order, files in search-path order\n"
             "field = compute_dtype       ; compute_dtype | q_dtype | kv_dtype | out_dtype\n"
             "from = fp8_e4m3fn\n"
             "to = bf16\n");
    reg = ts_open_dir(dir);
    ck_assert_msg(attn_registry_diagnostic_count(reg) == 0, "diagnostics:%s", ts_log_dump());
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
    info = plugin_info(reg, 0);
    ck_assert_str_eq(info.name, "aiter-generic");
    ck_assert_int_eq(info.priority, 50);
    ck_assert(attn_plugin_info_has_arch(&info, "gfx942"));
    ck_assert(attn_plugin_info_has_arch(&info, "gfx950"));
    ck_assert_msg(ts_ends_with(info.library, "lib/attnreg/libattn_aiter_generic.so"), "%s",
                  info.library);
    {
        /* The narrowing took effect: head_dim 64 is refused in the conf
         * layer (the library does not even exist here). */
        attn_shape shape;
        attn_verdict_record r;
        attn_shape_init(&shape);
        ts_set_arch(&shape, "gfx942");
        shape.head_dim = 64;
        r = ts_record_for(reg, &shape, "aiter-generic");
        ck_assert_int_eq(r.reason, ATTN_REASON_NARROWED);
        ck_assert_int_eq(r.conf_line, 11);
    }
    attn_registry_close(reg);
}
END_TEST

START_TEST(crlf_line_endings)
{
    const char *dir = ts_dir();
    attn_registry *reg;
    attn_plugin_info info;
    char text[1024];
    snprintf(text, sizeof text,
             "[plugin]\r\nformat_version = 1.0\r\nname = fake-good\r\nlibrary = %s\r\n"
             "priority = 4\r\nenabled = yes\r\narchs = fake, gfx942\r\n",
             ts_fake("good"));
    ts_write(dir, "dos.ini", text);
    reg = ts_open_dir(dir);
    ck_assert_uint_eq(attn_registry_diagnostic_count(reg), 0);
    info = plugin_info(reg, 0);
    ck_assert_str_eq(info.name, "fake-good");
    ck_assert(attn_plugin_info_has_arch(&info, "gfx942"));
    ck_assert(ts_same_file(info.library, ts_fake("good")));
    attn_registry_close(reg);
}
END_TEST

START_TEST(line_numbers_count_comments_and_blanks)
{
    const char *dir = ts_dir();
    const char *ini = ts_write(dir, "c.ini",
                               "; a comment\n"
                               "\n"
                               "# another comment\n"
                               "[plugin]\n"
                               "\n"
                               "format_version = 1.0\n"
                               "name = fake-good\n"
                               "; more\n"
                               "library = /x.so\n"
                               "\n"
                               "priority = fifty\n"
                               "archs = fake\n");
    attn_registry *reg = ts_open_dir(dir);
    assert_diag_at(reg, ini, 11, ATTN_ERR_CONF);
    attn_registry_close(reg);
}
END_TEST

START_TEST(unknown_keys)
{
    /* A typo in a file of our own format minor is an error (a misspelt
     * narrowing key would silently widen); in a newer minor's file it is a
     * key from the future, so only a warning. */
    const char *old_dir = ts_subdir("same");
    const char *new_dir = ts_subdir("newer");
    const char *ini;
    attn_registry *reg;
    ini = ts_write(old_dir, "typo.ini",
                   "[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = /x.so\n"
                   "priority = 1\narchs = fake\n[narrow]\nhead_dimz = 128\n");
    reg = ts_open_dir(old_dir);
    assert_diag_at(reg, ini, 8, ATTN_ERR_CONF);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 0);
    attn_registry_close(reg);

    ts_write(new_dir, "future.ini",
             "[plugin]\nformat_version = 1.3\nname = fake-good\nlibrary = /x.so\n"
             "priority = 1\narchs = fake\nvendor_hint = fast\n");
    reg = ts_open_dir(new_dir);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1);
    ck_assert_msg(ts_log_count(ATTN_LOG_WARN, "future.ini", "vendor_hint", NULL) >= 1,
                  "future key not warned about:%s", ts_log_dump());
    attn_registry_close(reg);
}
END_TEST

START_TEST(plugin_and_registry_in_one_file)
{
    const char *dir = ts_dir();
    const char *ini = ts_write(dir, "both.ini",
                               "[plugin]\nformat_version = 1.0\nname = fake-good\n"
                               "library = /x.so\npriority = 1\narchs = fake\n"
                               "[registry]\nformat_version = 1.0\n");
    attn_registry *reg = ts_open_dir(dir);
    ck_assert_int_ge(ts_find_diagnostic(reg, ini, -1, NULL), 0);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 0);
    attn_registry_close(reg);
}
END_TEST

static Suite *conf_suite(void)
{
    Suite *s = suite_create("conf");
    TCase *tc = tcase_create("read");
    TCase *shipped = tcase_create("shipped");
    ts_add_fixtures(tc, 20);
    tcase_add_test(tc, valid_plugin_listed);
    tcase_add_test(tc, syntax_error_names_file_line);
    tcase_add_test(tc, unknown_format_major_rejected);
    tcase_add_test(tc, newer_minor_warns_but_loads);
    tcase_add_test(tc, missing_library_rejected_at_select);
    tcase_add_test(tc, duplicate_names_across_folders);
    tcase_add_test(tc, duplicate_names_in_one_folder);
    tcase_add_test(tc, relative_library_resolved_against_ini_folder);
    tcase_add_test(tc, absolute_library_kept);
    tcase_add_loop_test(tc, narrowing_keys, 0, (int)(sizeof narrow_cases / sizeof narrow_cases[0]));
    tcase_add_test(tc, narrowing_never_widens);
    tcase_add_loop_test(tc, bad_values_name_file_line, 0,
                        (int)(sizeof bad_values / sizeof bad_values[0]));
    tcase_add_test(tc, missing_required_keys);
    tcase_add_test(tc, only_ini_files_read);
    tcase_add_test(tc, disabled_in_ini);
    tcase_add_test(tc, search_path_order_and_env);
    tcase_add_test(tc, missing_conf_folder_is_not_fatal);
    tcase_add_test(tc, long_lines_read_whole);
    tcase_add_test(tc, continuation_lines_not_dropped);
    tcase_add_test(tc, duplicate_key_reported);
    tcase_add_test(tc, design_example_reads_clean);
    tcase_add_test(tc, crlf_line_endings);
    tcase_add_test(tc, line_numbers_count_comments_and_blanks);
    tcase_add_test(tc, unknown_keys);
    tcase_add_test(tc, plugin_and_registry_in_one_file);
    suite_add_tcase(s, tc);

    ts_add_fixtures(shipped, 20);
    tcase_add_test(shipped, default_conf_folder_next_to_library);
    tcase_add_test(shipped, shipped_conf_reads_clean);
    tcase_add_test(shipped, list_by_arch_shipped);
    suite_add_tcase(s, shipped);
    return s;
}

int main(void)
{
    return ts_run(conf_suite());
}
