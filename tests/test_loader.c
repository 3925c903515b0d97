/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_loader.c — loading plugin libraries and negotiating the ABI.
 *
 * Each fake plugin (tests/fake_plugin/fake_plugin.c) has one fault. A load
 * failure must be a rejection with its own reason code and a sentence, never
 * a crash, and selection must step over the broken plugin to the next one
 * (acceptance: "selection skips it and still works"). Loading is lazy:
 * listing never maps a library, selection maps only what it must consult.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "attnreg.h"
#include "attn_plugin.h"
#include "support/test_support.h"

static attn_plugin_load_info load(attn_registry *reg, const char *name)
{
    attn_plugin_load_info li;
    long i = ts_plugin_index(reg, name);
    ck_assert_msg(i >= 0, "%s not listed", name);
    memset(&li, 0, sizeof li);
    li.struct_size = sizeof li;
    attn_registry_load_plugin(reg, (size_t)i, &li);
    return li;
}

/* One plugin of `variant` in a fresh folder, named `name` in its INI. */
static attn_registry *open_one(const char *variant, const char *name, const char *extra)
{
    ts_write_plugin_ini(ts_dir(), "p.ini", name, ts_fake(variant), 10, "fake", extra);
    return ts_open_dir(ts_dir());
}

START_TEST(good_plugin_loads)
{
    attn_registry *reg = open_one("good", "fake-good", NULL);
    attn_plugin_load_info li = load(reg, "fake-good");
    attn_status st;
    ck_assert_msg(li.status == ATTN_OK, "load: %s (%s)", attn_status_name(li.status),
                  li.message ? li.message : "");
    ck_assert_int_eq(li.reason, ATTN_REASON_NONE);
    ck_assert_str_eq(li.message, "");
    ck_assert_str_eq(li.version, "1.2.3");
    ck_assert_str_eq(li.description, "fake backend for tests");
    ck_assert_str_eq(li.built_archs, "fake");
    ck_assert_uint_eq(li.abi_major, ATTN_PLUGIN_ABI_MAJOR);
    ck_assert_uint_eq(li.abi_minor, ATTN_PLUGIN_ABI_MINOR);
    ck_assert_uint_eq(li.num_predicates, 2); /* arch, params */
    ck_assert(ts_is_loaded(ts_fake("good")));

    /* Asking again answers from the loaded plugin. */
    li = load(reg, "fake-good");
    ck_assert_int_eq(li.status, ATTN_OK);

    /* Out of range index. */
    memset(&li, 0, sizeof li);
    li.struct_size = sizeof li;
    st = attn_registry_load_plugin(reg, 99, &li);
    ck_assert_int_ne(st, ATTN_OK);
    attn_registry_close(reg);
}
END_TEST

/* A fault, what loading it must report, and the INI name to use. */
typedef struct fault_case {
    const char *variant;
    const char *name;
    attn_status status;
    attn_status status_alt; /* a second acceptable status, or ATTN_OK for none */
    attn_reason reason;
    const char *must_mention; /* in the sentence, or NULL */
} fault_case;

static const fault_case faults[] = {
    {"abi_major", "fake-abi-major", ATTN_ERR_ABI, ATTN_OK, ATTN_REASON_ABI_MISMATCH, NULL},
    {"abi_newer", "fake-abi-newer", ATTN_ERR_ABI, ATTN_OK, ATTN_REASON_ABI_MISMATCH, NULL},
    /* The header lets a plugin return NULL "when it cannot serve that host";
     * the reason table calls a NULL descriptor BAD_DESCRIPTOR. */
    {"null_descriptor", "fake-null-descriptor", ATTN_ERR_ABI, ATTN_ERR_LOAD,
     ATTN_REASON_BAD_DESCRIPTOR, NULL},
    {"no_entry", "fake-no-entry", ATTN_ERR_LOAD, ATTN_OK, ATTN_REASON_NO_ENTRY_SYMBOL,
     "attn_plugin_entry"},
    {"init_fails", "fake-init-fails", ATTN_ERR_INIT_FAILED, ATTN_OK, ATTN_REASON_INIT_FAILED, NULL},
    /* The INI calls it fake-impostor; the descriptor says fake-good. */
    {"good", "fake-impostor", ATTN_ERR_ABI, ATTN_ERR_LOAD, ATTN_REASON_BAD_DESCRIPTOR,
     "fake-impostor"},
};

START_TEST(faulty_plugin_reports_reason)
{
    const fault_case *c = &faults[_i];
    attn_registry *reg = open_one(c->variant, c->name, NULL);
    attn_plugin_load_info li = load(reg, c->name);
    ck_assert_msg(li.status == c->status ||
                      (c->status_alt != ATTN_OK && li.status == c->status_alt),
                  "%s: status %s", c->variant, attn_status_name(li.status));
    ck_assert_msg(li.reason == (int32_t)c->reason, "%s: reason %s, expected %s", c->variant,
                  attn_reason_name(li.reason), attn_reason_name(c->reason));
    ck_assert_msg(li.message && li.message[0], "%s: no sentence", c->variant);
    if (c->must_mention)
        ck_assert_msg(strstr(li.message, c->must_mention) != NULL,
                      "%s: \"%s\" does not mention \"%s\"", c->variant, li.message,
                      c->must_mention);
    ck_assert_ptr_null(li.version);
    attn_registry_close(reg);
}
END_TEST

START_TEST(missing_file_and_junk_file)
{
    const char *dir = ts_dir();
    const char *missing = ts_join(dir, "libnothing.so");
    const char *junk = ts_write(dir, "libjunk.so", "this is not an ELF file\n");
    attn_registry *reg;
    attn_plugin_load_info li;
    ts_write_plugin_ini(dir, "a.ini", "fake-alpha", missing, 2, "fake", NULL);
    ts_write_plugin_ini(dir, "b.ini", "fake-beta", junk, 1, "fake", NULL);
    reg = ts_open_dir(dir);

    li = load(reg, "fake-alpha");
    ck_assert_int_eq(li.status, ATTN_ERR_LOAD);
    ck_assert_int_eq(li.reason, ATTN_REASON_LOAD_FAILED);
    ck_assert_msg(strstr(li.message, missing) != NULL, "\"%s\" does not name the path", li.message);

    li = load(reg, "fake-beta");
    ck_assert_int_eq(li.status, ATTN_ERR_LOAD);
    ck_assert_int_eq(li.reason, ATTN_REASON_LOAD_FAILED);
    ck_assert_msg(li.message && li.message[0], "no dlerror sentence");
    attn_registry_close(reg);
}
END_TEST

START_TEST(abi_1_0_plugin_accepted)
{
    /* Older minor: accepted, only the fields its struct_size covers are
     * read, so it has no device probe (the fake puts a trap where
     * probe_devices would be). */
    attn_registry *reg = open_one("abi_1_0", "fake-abi-1-0", NULL);
    attn_plugin_load_info li = load(reg, "fake-abi-1-0");
    attn_device_info dev[2];
    uint32_t count = 0;
    attn_status st;
    attn_selection sel;
    attn_shape shape;

    ck_assert_msg(li.status == ATTN_OK, "1.0 plugin refused: %s", li.message);
    ck_assert_uint_eq(li.abi_major, 1);
    ck_assert_uint_eq(li.abi_minor, 0);

    memset(dev, 0, sizeof dev);
    dev[0].struct_size = sizeof dev[0];
    dev[1].struct_size = sizeof dev[1];
    st = attn_registry_probe_devices(reg, 0, dev, 2, &count);
    ck_assert_msg(strcmp(dev[0].name, "MUST-NOT-BE-CALLED") != 0,
                  "host called probe_devices beyond the 1.0 descriptor's struct_size");
    ck_assert_int_ne(st, ATTN_OK);
    ck_assert_uint_eq(count, 0);

    ts_fake_shape(&shape);
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &sel), ATTN_OK);
    ck_assert_str_eq(sel.backend_name, "fake-abi-1-0");
    attn_registry_close(reg);
}
END_TEST

START_TEST(init_failure_logged_through_host_services)
{
    /* The plugin's own sentence reaches the host's log, under its name. */
    attn_registry *reg = open_one("init_fails", "fake-init-fails", NULL);
    attn_plugin_load_info li = load(reg, "fake-init-fails");
    ck_assert_int_eq(li.status, ATTN_ERR_INIT_FAILED);
    ck_assert_msg(
        ts_log_count(ATTN_LOG_ERROR, "fake init failed on purpose", "fake-init-fails", NULL) >= 1,
        "plugin log not forwarded:%s", ts_log_dump());
    attn_registry_close(reg);
}
END_TEST

START_TEST(good_plugin_logs_and_keeps_state)
{
    /* init logs at info under the plugin's name, sets ctx->state; the
     * "params" predicate rejects if the state is gone, so a selection that
     * succeeds proves the host kept the context. */
    attn_registry *reg = open_one("good", "fake-good", NULL);
    attn_selection sel;
    attn_shape shape;
    ts_fake_shape(&shape);
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &sel), ATTN_OK);
    ck_assert_msg(ts_log_count(ATTN_LOG_INFO, "fake plugin initialised", "fake-good", NULL) == 1,
                  "init log missing:%s", ts_log_dump());
    attn_registry_close(reg);
}
END_TEST

START_TEST(params_passed_verbatim)
{
    attn_registry *reg = open_one("good", "fake-good",
                                  "[params]\nreject_reason = 19\n"
                                  "reject_message = rejected because the INI said so\n");
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    attn_shape shape;
    ts_fake_shape(&shape);
    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_ERR_UNSUPPORTED);
    ck_assert(ts_find_record(ex, 0, "fake-good", &r));
    ck_assert_int_eq(r.reason, ATTN_REASON_Q_LEN);
    ck_assert_str_eq(r.reason_name, "Q_LEN");
    ck_assert_str_eq(r.message, "rejected because the INI said so");
    ck_assert_str_eq(r.predicate, "params");
    attn_explanation_free(ex);
    attn_registry_close(reg);
}
END_TEST

START_TEST(fini_called_on_close)
{
    char extra[512];
    const char *marker = ts_join(ts_dir(), "fini-ran");
    attn_registry *reg;
    attn_plugin_load_info li;
    struct stat st;
    snprintf(extra, sizeof extra, "[params]\nfini_marker = %s\n", marker);
    reg = open_one("good", "fake-good", extra);
    li = load(reg, "fake-good");
    ck_assert_int_eq(li.status, ATTN_OK);
    ck_assert_int_ne(stat(marker, &st), 0);
    attn_registry_close(reg);
    ck_assert_msg(stat(marker, &st) == 0, "fini did not run at close");
}
END_TEST

START_TEST(listing_loads_nothing)
{
    const char *dir = ts_dir();
    const char *variants[] = {"good", "alpha", "beta", "no_entry", "abi_major"};
    const char *names[] = {"fake-good", "fake-alpha", "fake-beta", "fake-no-entry",
                           "fake-abi-major"};
    attn_registry *reg;
    size_t i, n;
    for (i = 0; i < 5; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.ini", variants[i]);
        ts_write_plugin_ini(dir, file, names[i], ts_fake(variants[i]), (int)i, "fake", NULL);
    }
    reg = ts_open_dir(dir);
    n = attn_registry_plugin_count(reg);
    ck_assert_uint_eq(n, 5);
    for (i = 0; i < n; i++) {
        attn_plugin_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        ck_assert_int_eq(attn_registry_plugin(reg, i, &info), ATTN_OK);
        (void)attn_plugin_info_has_arch(&info, "fake");
    }
    for (i = 0; i < 5; i++)
        ck_assert_msg(!ts_is_loaded(ts_fake(variants[i])), "open/list loaded %s", variants[i]);
    attn_registry_close(reg);
}
END_TEST

START_TEST(selection_loads_only_what_it_consults)
{
    /* Priority 30: arch not listed for the shape -> never loaded.
     * Priority 20: accepts -> loaded, wins.
     * Priority 10: after the winner -> select does not need it. */
    const char *dir = ts_dir();
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    ts_write_plugin_ini(dir, "a.ini", "fake-alpha", ts_fake("alpha"), 30, "gfx950", NULL);
    ts_write_plugin_ini(dir, "b.ini", "fake-beta", ts_fake("beta"), 20, "fake", NULL);
    ts_write_plugin_ini(dir, "c.ini", "fake-gamma", ts_fake("gamma"), 10, "fake", NULL);
    reg = ts_open_dir(dir);
    ts_fake_shape(&shape);
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &sel), ATTN_OK);
    ck_assert_str_eq(sel.backend_name, "fake-beta");
    ck_assert(!ts_is_loaded(ts_fake("alpha")));
    ck_assert(ts_is_loaded(ts_fake("beta")));
    ck_assert(!ts_is_loaded(ts_fake("gamma")));
    attn_registry_close(reg);
}
END_TEST

START_TEST(selection_skips_every_broken_plugin)
{
    /* Acceptance: broken plugins are rejections with their reasons, and
     * the selection still reaches the good one below them. */
    static const struct {
        const char *variant, *name;
        attn_reason reason;
    } broken[] = {
        {"abi_major", "fake-abi-major", ATTN_REASON_ABI_MISMATCH},
        {"abi_newer", "fake-abi-newer", ATTN_REASON_ABI_MISMATCH},
        {"null_descriptor", "fake-null-descriptor", ATTN_REASON_BAD_DESCRIPTOR},
        {"no_entry", "fake-no-entry", ATTN_REASON_NO_ENTRY_SYMBOL},
        {"init_fails", "fake-init-fails", ATTN_REASON_INIT_FAILED},
        {"rejects", "fake-rejects", ATTN_REASON_HEAD_DIM},
        {"wrong_arch", "fake-wrong-arch", ATTN_REASON_ARCH},
    };
    const size_t nb = sizeof broken / sizeof broken[0];
    const char *dir = ts_dir();
    attn_registry *reg;
    attn_selection sel;
    attn_shape shape;
    attn_explanation *ex = NULL;
    size_t i;

    for (i = 0; i < nb; i++) {
        char file[64];
        snprintf(file, sizeof file, "%s.ini", broken[i].variant);
        ts_write_plugin_ini(dir, file, broken[i].name, ts_fake(broken[i].variant), 100 + (int)i,
                            "fake", NULL);
    }
    ts_write_plugin_ini(dir, "missing.ini", "fake-missing", ts_join(dir, "libgone.so"), 99, "fake",
                        NULL);
    ts_write_plugin_ini(dir, "good.ini", "fake-good", ts_fake("good"), 1, "fake", NULL);
    reg = ts_open_dir(dir);

    ts_fake_shape(&shape);
    attn_selection_init(&sel);
    ck_assert_msg(attn_registry_select(reg, &shape, &sel) == ATTN_OK, "select: %s", sel.message);
    ck_assert_str_eq(sel.backend_name, "fake-good");

    ck_assert_int_eq(attn_registry_explain(reg, &shape, &ex), ATTN_OK);
    for (i = 0; i < nb; i++) {
        attn_verdict_record r;
        ck_assert_msg(ts_find_record(ex, 0, broken[i].name, &r), "no record for %s",
                      broken[i].name);
        ck_assert_int_eq(r.accepted, 0);
        ck_assert_msg(r.reason == (int32_t)broken[i].reason, "%s: %s, expected %s", broken[i].name,
                      attn_reason_name(r.reason), attn_reason_name(broken[i].reason));
        ck_assert_str_eq(r.reason_name, attn_reason_name(broken[i].reason));
        ck_assert_msg(r.message && r.message[0], "%s: no sentence", broken[i].name);
    }
    {
        attn_verdict_record r;
        ck_assert(ts_find_record(ex, 0, "fake-missing", &r));
        ck_assert_int_eq(r.reason, ATTN_REASON_LOAD_FAILED);
        ck_assert_str_eq(r.predicate, "load");
        ck_assert(ts_find_record(ex, 0, "fake-good", &r));
        ck_assert_int_eq(r.accepted, 1);
        ck_assert_int_eq(r.selected, 1);
    }
    attn_explanation_free(ex);

    /* Load failures are remembered: a second select on another shape gives
     * the same answer without crashing on the half-loaded plugins. */
    shape.head_dim = 64;
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &sel), ATTN_OK);
    ck_assert_str_eq(sel.backend_name, "fake-good");
    attn_registry_close(reg);
}
END_TEST

START_TEST(predicate_rejection_carries_plugin_sentence)
{
    attn_registry *reg = open_one("rejects", "fake-rejects", NULL);
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    attn_shape shape;
    ts_fake_shape(&shape);
    attn_registry_explain(reg, &shape, &ex);
    ck_assert_ptr_nonnull(ex);
    ck_assert(ts_find_record(ex, 0, "fake-rejects", &r));
    ck_assert_int_eq(r.reason, ATTN_REASON_HEAD_DIM);
    ck_assert_str_eq(r.message, "head_dim is not supported by fake-rejects");
    ck_assert_str_eq(r.predicate, "reject");
    ck_assert_int_eq(r.priority, 10);
    attn_explanation_free(ex);
    attn_registry_close(reg);
}
END_TEST

START_TEST(wrong_arch_decided_by_predicate)
{
    /* The INI claims "fake", the binary's arch predicate says "other": the
     * predicate is the truth (an INI may narrow, never widen). */
    attn_registry *reg = open_one("wrong_arch", "fake-wrong-arch", NULL);
    attn_verdict_record r;
    attn_shape shape;
    ts_fake_shape(&shape);
    r = ts_record_for(reg, &shape, "fake-wrong-arch");
    ck_assert_int_eq(r.accepted, 0);
    ck_assert_int_eq(r.reason, ATTN_REASON_ARCH);
    attn_registry_close(reg);
}
END_TEST

START_TEST(probe_devices_through_plugin)
{
    const char *dir = ts_dir();
    attn_registry *reg;
    attn_device_info dev[4];
    uint32_t count = 0, i;
    ts_write_plugin_ini(dir, "good.ini", "fake-good", ts_fake("good"), 2, "fake", NULL);
    ts_write_plugin_ini(dir, "nodev.ini", "fake-no-device", ts_fake("no_device"), 1, "fake", NULL);
    reg = ts_open_dir(dir);
    memset(dev, 0, sizeof dev);
    for (i = 0; i < 4; i++)
        dev[i].struct_size = sizeof dev[i];
    ck_assert_int_eq(
        attn_registry_probe_devices(reg, (size_t)ts_plugin_index(reg, "fake-good"), dev, 4, &count),
        ATTN_OK);
    ck_assert_uint_eq(count, 1);
    ck_assert_str_eq(dev[0].arch, "fake");
    ck_assert_str_eq(dev[0].name, "Fake Device 0");

    count = 99;
    ck_assert_int_eq(attn_registry_probe_devices(
                         reg, (size_t)ts_plugin_index(reg, "fake-no-device"), dev, 4, &count),
                     ATTN_ERR_NO_DEVICE);
    ck_assert_uint_eq(count, 0);
    ck_assert_msg(strstr(attn_last_error(), "no fake device here") != NULL,
                  "last error \"%s\" lacks the runtime's message", attn_last_error());
    attn_registry_close(reg);
}
END_TEST

START_TEST(shipped_plugins_load_without_libattnreg)
{
    /* The shipped plugins load and negotiate, and like any plugin they get
     * everything from the context: none may link libattnreg. */
    attn_registry *reg = ts_open_dir(ATTNREG_TEST_CONF_DIR);
    const char *names[] = {"cpu-ref", "aiter-generic", "aiter-mtp-gfx950"};
    size_t i;
    for (i = 0; i < 3; i++) {
        long k = ts_plugin_index(reg, names[i]);
        attn_plugin_info info;
        attn_plugin_load_info li;
        ck_assert_msg(k >= 0, "%s not in the shipped conf", names[i]);
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        ck_assert_int_eq(attn_registry_plugin(reg, (size_t)k, &info), ATTN_OK);
        li = load(reg, names[i]);
        ck_assert_msg(li.status == ATTN_OK, "%s: %s", names[i], li.message);
        ck_assert_ptr_nonnull(li.built_archs);
        ck_assert_msg(ts_loaded_needs(info.library, "libattnreg") == 0, "%s links libattnreg",
                      info.library);
    }
    attn_registry_close(reg);
}
END_TEST

static Suite *loader_suite(void)
{
    Suite *s = suite_create("loader");
    TCase *tc = tcase_create("load");
    ts_add_fixtures(tc, 20);
    tcase_add_test(tc, good_plugin_loads);
    tcase_add_loop_test(tc, faulty_plugin_reports_reason, 0,
                        (int)(sizeof faults / sizeof faults[0]));
    tcase_add_test(tc, missing_file_and_junk_file);
    tcase_add_test(tc, abi_1_0_plugin_accepted);
    tcase_add_test(tc, init_failure_logged_through_host_services);
    tcase_add_test(tc, good_plugin_logs_and_keeps_state);
    tcase_add_test(tc, params_passed_verbatim);
    tcase_add_test(tc, fini_called_on_close);
    tcase_add_test(tc, listing_loads_nothing);
    tcase_add_test(tc, selection_loads_only_what_it_consults);
    tcase_add_test(tc, selection_skips_every_broken_plugin);
    tcase_add_test(tc, predicate_rejection_carries_plugin_sentence);
    tcase_add_test(tc, wrong_arch_decided_by_predicate);
    tcase_add_test(tc, probe_devices_through_plugin);
    tcase_add_test(tc, shipped_plugins_load_without_libattnreg);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ts_run(loader_suite());
}
