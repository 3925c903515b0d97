/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_support.h — helpers shared by the core Check suites.
 *
 * Every test writes its own conf files into a fresh temporary folder and
 * opens the registry on exactly that folder with every environment and
 * default search path switched off, so a developer's ATTNREG_* variables or
 * an installed conf can never change a result. Tests that exercise the
 * environment on purpose set it themselves; Check forks each test, so the
 * change dies with the test's process.
 */
#ifndef ATTNREG_TEST_SUPPORT_H
#define ATTNREG_TEST_SUPPORT_H

#include <check.h>
#include <stddef.h>

#include "attnreg.h"

/* Paths handed over by CMake as compile definitions. */
#ifndef ATTNREG_FAKE_PLUGIN_DIR
#error "ATTNREG_FAKE_PLUGIN_DIR must point at <build>/tests/fake_plugins"
#endif
#ifndef ATTNREG_MODULE_SUFFIX
#define ATTNREG_MODULE_SUFFIX ".so"
#endif

/* Line numbers of the keys in the INI that ts_write_plugin_ini() writes, so
 * tests can check that diagnostics and verdicts name the right line. */
enum {
    TS_LINE_SECTION = 1,
    TS_LINE_FORMAT = 2,
    TS_LINE_NAME = 3,
    TS_LINE_LIBRARY = 4,
    TS_LINE_PRIORITY = 5,
    TS_LINE_ENABLED = 6,
    TS_LINE_ARCHS = 7,
    TS_LINE_EXTRA = 8 /* first line of the caller's extra text */
};

/* ---- fixtures ------------------------------------------------------- */

/* Add the standard fixtures to a test case: an unchecked (parent-process)
 * fixture that owns one temporary root per test case and removes it even
 * when tests fail, and a checked (per-test) fixture that gives each test a
 * fresh folder under it and a clean log capture. Also sets the timeout. */
void ts_add_fixtures(TCase *tc, double timeout_s);

/* The current test's private temporary folder (canonical absolute path). */
const char *ts_dir(void);

/* Run a suite; exit status for ctest. */
int ts_run(Suite *suite);

/* ---- files ---------------------------------------------------------- */

/* Make a fresh sub-folder of the test's folder; returns its canonical path
 * in a buffer owned by the test support (valid until the test ends). */
const char *ts_subdir(const char *name);
/* Write `text` to dir/name; returns the canonical path (owned as above). */
const char *ts_write(const char *dir, const char *name, const char *text);
/* printf-style path join into a buffer owned by the test support. */
const char *ts_join(const char *dir, const char *name);
/* Path of a fake plugin built from tests/fake_plugin/fake_plugin.c, e.g.
 * ts_fake("good") -> <build>/tests/fake_plugins/libfake_good.so. */
const char *ts_fake(const char *variant);
/* Write a [plugin] INI naming `library` (see TS_LINE_* for its layout) and
 * append `extra` (may be NULL). Returns the INI's path. */
const char *ts_write_plugin_ini(const char *dir, const char *file, const char *name,
                                const char *library, int priority, const char *archs,
                                const char *extra);
/* Write registry.ini with the rule compute_dtype fp8_e4m3fn -> bf16. */
const char *ts_write_fp8_fallback_ini(const char *dir);
/* 1 when `a` and `b` name the same existing file (after realpath). */
int ts_same_file(const char *a, const char *b);
/* 1 when `s` ends with `suffix`. */
int ts_ends_with(const char *s, const char *suffix);

/* 1 when the shared object at `path` is mapped into this process right now
 * (dlopen with RTLD_NOLOAD: asks, never loads). */
int ts_is_loaded(const char *path);

/* For a shared object that is already mapped: 1 when one of its DT_NEEDED
 * entries contains `needle`, 0 when none does, -1 when it is not mapped. */
int ts_loaded_needs(const char *path, const char *needle);

/* ---- registry ------------------------------------------------------- */

/* Hermetic options: only `dirs`, no ATTNREG_* variables, no default folder,
 * log everything (debug and up) into the test's log capture. */
void ts_options(attn_registry_options *opt, const char *const *dirs, uint32_t num_dirs);
/* Open hermetically on one folder; fails the test if open fails. */
attn_registry *ts_open_dir(const char *dir);
/* Find the registry's diagnostic whose file is `file` (any when NULL) and
 * whose line is `line` (any when < 0); returns its index or -1. */
long ts_find_diagnostic(const attn_registry *reg, const char *file, int line, attn_diagnostic *out);
/* Index of the plugin called `name` in the listing, or -1. */
long ts_plugin_index(const attn_registry *reg, const char *name);

/* ---- shapes --------------------------------------------------------- */

/* attn_shape_init() on arch "fake" (what the fake plugins run on). */
void ts_fake_shape(attn_shape *s);
/* The accepted MTP shape: gfx950, 16/1 heads, D 256, bf16 q, fp8_e4m3fn kv,
 * page 16, q len 4, kv len 4096. */
void ts_mtp_shape(attn_shape *s);
/* gfx942, 32/8 heads, D 128, fp8_e4m3fnuz kv and compute, lengths 512. */
void ts_fp8_gqa_gfx942_shape(attn_shape *s);
void ts_set_arch(attn_shape *s, const char *arch);

/* ---- models --------------------------------------------------------- */

/* Qwen3.5-397B-A17B's attention on `tp` ranks of gfx950: 60 layers, one
 * full-attention layer after every three linear-attention ones, 32 query
 * heads over 2 KV heads, D 256, fp8_e4m3fn KV, max model length 32768,
 * prefill chunk 8192, 3 speculative tokens. `layers` receives the layers. */
void ts_qwen35_model(attn_model *m, attn_layer layers[60], int32_t tp);

/* ---- explanations --------------------------------------------------- */

/* Find the record of `backend` in `pass`; returns 1 and fills out, or 0. */
int ts_find_record(const attn_explanation *ex, int pass, const char *backend,
                   attn_verdict_record *out);
/* Explain `shape` and return the record of `backend` in pass 0 (fails the
 * test if there is none). */
attn_verdict_record ts_record_for(attn_registry *reg, const attn_shape *shape, const char *backend);

/* ---- a forward call ------------------------------------------------- */

/* One sequence of one token, with non-NULL dummy buffers: what the
 * registry's argument checks let through to a plugin's forward. */
typedef struct ts_tiny_batch {
    char buf[64];
    char workspace[1024];
    int32_t table[1], cu[2], used[1];
    attn_forward_args args;
} ts_tiny_batch;
void ts_tiny_batch_init(ts_tiny_batch *t);

/* ---- log capture ---------------------------------------------------- */

/* The log callback every hermetic registry uses; `user` is ignored. */
void ts_log(void *user, attn_log_level level, const char *message);
/* Messages captured at exactly `level` (any level when < 0) that contain
 * every one of the NULL-terminated substrings. */
int ts_log_count(int level, ...) __attribute__((sentinel));
int ts_log_total(void);
void ts_log_clear(void);
/* All captured messages, one per line, for failure output. */
const char *ts_log_dump(void);

#endif /* ATTNREG_TEST_SUPPORT_H */
