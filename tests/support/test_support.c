/* SPDX-License-Identifier: Apache-2.0 */
/* test_support.c — see test_support.h. */
#define _GNU_SOURCE /* RTLD_NOLOAD, mkdtemp, realpath, nftw */

#include "test_support.h"

#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- owned strings -------------------------------------------------- */

/* Paths handed back to tests live in a ring of buffers: a test never needs
 * more than a handful at once, and nothing has to be freed (which keeps
 * LeakSanitizer quiet in the forked test processes). */
#define TS_RING 64
static char ts_ring[TS_RING][PATH_MAX + 64];
static unsigned ts_ring_next;

static char *ts_slot(void)
{
    char *s = ts_ring[ts_ring_next++ % TS_RING];
    s[0] = '\0';
    return s;
}

/* ---- fixtures ------------------------------------------------------- */

static char ts_root[PATH_MAX]; /* per test case; made in the parent */
static char ts_test_dir[PATH_MAX];

static int ts_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void ts_rm_rf(const char *path)
{
    if (path[0])
        nftw(path, ts_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void ts_unchecked_setup(void)
{
    const char *tmp = getenv("TMPDIR");
    char templ[PATH_MAX];
    snprintf(templ, sizeof templ, "%s/attnreg-test-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(templ)) {
        fprintf(stderr, "mkdtemp(%s): %s\n", templ, strerror(errno));
        abort();
    }
    /* Canonical, so tests can compare paths the registry prints. */
    if (!realpath(templ, ts_root))
        abort();
}

static void ts_unchecked_teardown(void)
{
    ts_rm_rf(ts_root);
    ts_root[0] = '\0';
}

static void ts_checked_setup(void)
{
    /* Each test runs in its own forked process: clearing the developer's
     * ATTNREG_* variables here keeps even the tests that read the
     * environment on purpose hermetic, and dies with the test. */
    static const char *const vars[] = {"ATTNREG_CONF_PATH", "ATTNREG_BACKEND", "ATTNREG_DISABLE",
                                       "ATTNREG_LOG"};
    size_t i;
    char templ[PATH_MAX + 16];
    for (i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    snprintf(templ, sizeof templ, "%s/t-XXXXXX", ts_root);
    ck_assert_msg(mkdtemp(templ) != NULL, "mkdtemp(%s): %s", templ, strerror(errno));
    ck_assert_ptr_nonnull(realpath(templ, ts_test_dir));
    ts_log_clear();
}

static void ts_checked_teardown(void)
{
    /* Only reached when the test passed; the parent's teardown removes the
     * whole root anyway, this just keeps the root small for long suites. */
    ts_rm_rf(ts_test_dir);
    ts_test_dir[0] = '\0';
}

void ts_add_fixtures(TCase *tc, double timeout_s)
{
    tcase_add_unchecked_fixture(tc, ts_unchecked_setup, ts_unchecked_teardown);
    tcase_add_checked_fixture(tc, ts_checked_setup, ts_checked_teardown);
    tcase_set_timeout(tc, timeout_s);
}

const char *ts_dir(void)
{
    return ts_test_dir;
}

int ts_run(Suite *suite)
{
    SRunner *sr = srunner_create(suite);
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

/* ---- files ---------------------------------------------------------- */

const char *ts_join(const char *dir, const char *name)
{
    char *s = ts_slot();
    snprintf(s, PATH_MAX + 64, "%s/%s", dir, name);
    return s;
}

const char *ts_subdir(const char *name)
{
    const char *p = ts_join(ts_test_dir, name);
    char *s = ts_slot();
    ck_assert_msg(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir(%s): %s", p, strerror(errno));
    ck_assert_ptr_nonnull(realpath(p, s));
    return s;
}

const char *ts_write(const char *dir, const char *name, const char *text)
{
    const char *p = ts_join(dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_msg(f != NULL, "fopen(%s): %s", p, strerror(errno));
    ck_assert_int_eq(fputs(text, f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    return p;
}

const char *ts_fake(const char *variant)
{
    char *s = ts_slot();
    snprintf(s, PATH_MAX + 64, "%s/libfake_%s%s", ATTNREG_FAKE_PLUGIN_DIR, variant,
             ATTNREG_MODULE_SUFFIX);
    return s;
}

const char *ts_write_plugin_ini(const char *dir, const char *file, const char *name,
                                const char *library, int priority, const char *archs,
                                const char *extra)
{
    /* Keep in step with the TS_LINE_* constants. */
    char text[8192];
    snprintf(text, sizeof text,
             "[plugin]\n"
             "format_version = 1.0\n"
             "name = %s\n"
             "library = %s\n"
             "priority = %d\n"
             "enabled = true\n"
             "archs = %s\n"
             "%s",
             name, library, priority, archs, extra ? extra : "");
    return ts_write(dir, file, text);
}

const char *ts_write_fp8_fallback_ini(const char *dir)
{
    return ts_write(dir, "registry.ini",
                    "[registry]\n"
                    "format_version = 1.0\n"
                    "\n"
                    "[fallback:fp8-to-bf16]\n"
                    "field = compute_dtype\n"
                    "from = fp8_e4m3fn\n"
                    "to = bf16\n");
}

int ts_same_file(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (!a || !b || !realpath(a, ra) || !realpath(b, rb))
        return 0;
    return strcmp(ra, rb) == 0;
}

int ts_ends_with(const char *s, const char *suffix)
{
    size_t n, m;
    if (!s || !suffix)
        return 0;
    n = strlen(s);
    m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int ts_is_loaded(const char *path)
{
    /* glibc matches an already mapped object by name and by file identity,
     * so this finds the plugin however the registry spelled its path. */
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    dlclose(h);
    return 1;
}

/* A typedef so the ElfW() macro does not confuse clang-format. */
typedef ElfW(Dyn) elf_dyn;

int ts_loaded_needs(const char *path, const char *needle)
{
    void *h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    struct link_map *lm = NULL;
    const elf_dyn *d;
    const char *strtab = NULL;
    int found = 0;
    if (!h)
        return -1;
    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_ld) {
        dlclose(h);
        return -1;
    }
    for (d = lm->l_ld; d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_STRTAB)
            strtab = (const char *)d->d_un.d_ptr;
    /* glibc relocates the dynamic section in place on most targets; where
     * it does not, the address is still relative to the load base. */
    if (strtab && (uintptr_t)strtab < (uintptr_t)lm->l_addr)
        strtab += lm->l_addr;
    for (d = lm->l_ld; strtab && d->d_tag != DT_NULL; d++)
        if (d->d_tag == DT_NEEDED && strstr(strtab + d->d_un.d_val, needle))
            found = 1;
    dlclose(h);
    return found;
}

/* ---- registry ------------------------------------------------------- */

void ts_options(attn_registry_options *opt, const char *const *dirs, uint32_t num_dirs)
{
    attn_registry_options_init(opt);
    opt->conf_paths = dirs;
    opt->num_conf_paths = num_dirs;
    opt->skip_env_conf_path = 1;
    opt->skip_default_conf = 1;
    opt->skip_env = 1;
    opt->log_fn = ts_log;
    opt->log_user = NULL;
    opt->log_level = ATTN_LOG_DEBUG;
}

attn_registry *ts_open_dir(const char *dir)
{
    /* The options keep a pointer to the array only during open. */
    const char *dirs[1];
    attn_registry_options opt;
    attn_registry *reg = NULL;
    attn_status st;
    dirs[0] = dir;
    ts_options(&opt, dirs, 1);
    st = attn_registry_open(&opt, &reg);
    ck_assert_msg(st == ATTN_OK, "attn_registry_open(%s) = %s: %s", dir, attn_status_name(st),
                  attn_last_error());
    ck_assert_ptr_nonnull(reg);
    return reg;
}

long ts_find_diagnostic(const attn_registry *reg, const char *file, int line, attn_diagnostic *out)
{
    size_t i, n = attn_registry_diagnostic_count(reg);
    for (i = 0; i < n; i++) {
        attn_diagnostic d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        if (attn_registry_diagnostic(reg, i, &d) != ATTN_OK)
            continue;
        if (file && !ts_same_file(d.file, file))
            continue;
        if (line >= 0 && d.line != line)
            continue;
        if (out)
            *out = d;
        return (long)i;
    }
    return -1;
}

long ts_plugin_index(const attn_registry *reg, const char *name)
{
    size_t i, n = attn_registry_plugin_count(reg);
    for (i = 0; i < n; i++) {
        attn_plugin_info info;
        memset(&info, 0, sizeof info);
        info.struct_size = sizeof info;
        if (attn_registry_plugin(reg, i, &info) == ATTN_OK && info.name &&
            strcmp(info.name, name) == 0)
            return (long)i;
    }
    return -1;
}

/* ---- shapes --------------------------------------------------------- */

void ts_set_arch(attn_shape *s, const char *arch)
{
    memset(s->arch, 0, sizeof s->arch);
    snprintf(s->arch, sizeof s->arch, "%s", arch);
}

void ts_fake_shape(attn_shape *s)
{
    attn_shape_init(s);
    ts_set_arch(s, "fake");
}

void ts_mtp_shape(attn_shape *s)
{
    attn_shape_init(s);
    ts_set_arch(s, "gfx950");
    s->num_q_heads = 16;
    s->num_kv_heads = 1;
    s->head_dim = 256;
    s->head_dim_v = 256;
    s->q_dtype = ATTN_DTYPE_BF16;
    s->kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
    s->page_size = 16;
    s->max_q_len = 4;
    s->max_kv_len = 4096;
}

void ts_fp8_gqa_gfx942_shape(attn_shape *s)
{
    attn_shape_init(s);
    ts_set_arch(s, "gfx942");
    s->num_q_heads = 32;
    s->num_kv_heads = 8;
    s->head_dim = 128;
    s->q_dtype = ATTN_DTYPE_BF16;
    s->kv_dtype = ATTN_DTYPE_FP8_E4M3FNUZ;
    s->compute_dtype = ATTN_DTYPE_FP8_E4M3FNUZ;
    s->max_q_len = 512;
    s->max_kv_len = 512;
}

/* ---- models --------------------------------------------------------- */

void ts_qwen35_model(attn_model *m, attn_layer layers[60], int32_t tp)
{
    for (int i = 0; i < 60; i++) {
        attn_layer_init(&layers[i], sizeof layers[i]);
        if ((i + 1) % 4) {
            layers[i].kind = ATTN_LAYER_NOT_ATTENTION;
            layers[i].type_name = "linear_attention";
        }
    }
    attn_model_init(m, sizeof *m);
    snprintf(m->arch, sizeof m->arch, "gfx950");
    m->num_q_heads = 32;
    m->num_kv_heads = 2;
    m->head_dim = 256;
    m->num_layers = 60;
    m->layers = layers;
    m->kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
    m->tp_size = tp;
    m->max_model_len = 32768;
    m->max_prefill_tokens = 8192;
    m->spec_tokens = 3;
}

/* ---- explanations --------------------------------------------------- */

int ts_find_record(const attn_explanation *ex, int pass, const char *backend,
                   attn_verdict_record *out)
{
    size_t i, n = attn_explanation_count(ex);
    for (i = 0; i < n; i++) {
        attn_verdict_record r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        if (attn_explanation_record(ex, i, &r) != ATTN_OK)
            continue;
        if (r.pass == pass && r.backend && strcmp(r.backend, backend) == 0) {
            *out = r;
            return 1;
        }
    }
    return 0;
}

attn_verdict_record ts_record_for(attn_registry *reg, const attn_shape *shape, const char *backend)
{
    /* The record's strings live in the explanation, which is freed here:
     * callers get the numbers only (the string fields are cleared). */
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    int found;
    memset(&r, 0, sizeof r);
    attn_registry_explain(reg, shape, &ex);
    ck_assert_msg(ex != NULL, "explain returned no explanation: %s", attn_last_error());
    found = ts_find_record(ex, 0, backend, &r);
    attn_explanation_free(ex);
    ck_assert_msg(found, "no pass-0 record for %s", backend);
    r.backend = NULL;
    r.reason_name = NULL;
    r.message = NULL;
    r.predicate = NULL;
    r.conf_file = NULL;
    return r;
}

/* ---- a forward call ------------------------------------------------- */

void ts_tiny_batch_init(ts_tiny_batch *t)
{
    memset(t, 0, sizeof *t);
    t->cu[1] = 1;
    t->used[0] = 1;
    attn_forward_args *a = &t->args;
    a->struct_size = sizeof *a;
    a->num_seqs = 1;
    a->num_tokens = 1;
    a->q = a->k_cache = a->v_cache = t->buf;
    a->out = t->buf;
    a->block_table = t->table;
    a->cu_seqlens_q = t->cu;
    a->seqused_k = t->used;
    a->max_seqlen_q = a->max_seqlen_k = 1;
    a->workspace = t->workspace;
    a->workspace_size = sizeof t->workspace;
}

/* ---- log capture ---------------------------------------------------- */

#define TS_LOG_MAX 512
#define TS_LOG_LEN 1024
static struct {
    int level;
    char text[TS_LOG_LEN];
} ts_logs[TS_LOG_MAX];
static int ts_nlogs;
static int ts_nlogs_dropped;
static pthread_mutex_t ts_log_mutex = PTHREAD_MUTEX_INITIALIZER;

void ts_log(void *user, attn_log_level level, const char *message)
{
    (void)user;
    pthread_mutex_lock(&ts_log_mutex);
    if (ts_nlogs < TS_LOG_MAX) {
        ts_logs[ts_nlogs].level = (int)level;
        snprintf(ts_logs[ts_nlogs].text, TS_LOG_LEN, "%s", message ? message : "(null)");
        ts_nlogs++;
    } else {
        ts_nlogs_dropped++;
    }
    pthread_mutex_unlock(&ts_log_mutex);
}

int ts_log_count(int level, ...)
{
    int i, count = 0;
    pthread_mutex_lock(&ts_log_mutex);
    for (i = 0; i < ts_nlogs; i++) {
        va_list ap;
        const char *sub;
        int all = 1;
        if (level >= 0 && ts_logs[i].level != level)
            continue;
        va_start(ap, level);
        while ((sub = va_arg(ap, const char *)) != NULL)
            if (!strstr(ts_logs[i].text, sub))
                all = 0;
        va_end(ap);
        count += all;
    }
    pthread_mutex_unlock(&ts_log_mutex);
    return count;
}

int ts_log_total(void)
{
    int n;
    pthread_mutex_lock(&ts_log_mutex);
    n = ts_nlogs + ts_nlogs_dropped;
    pthread_mutex_unlock(&ts_log_mutex);
    return n;
}

void ts_log_clear(void)
{
    pthread_mutex_lock(&ts_log_mutex);
    ts_nlogs = 0;
    ts_nlogs_dropped = 0;
    pthread_mutex_unlock(&ts_log_mutex);
}

const char *ts_log_dump(void)
{
    static char dump[16384];
    size_t used = 0;
    int i;
    dump[0] = '\0';
    pthread_mutex_lock(&ts_log_mutex);
    for (i = 0; i < ts_nlogs && used + 1 < sizeof dump; i++) {
        int w = snprintf(dump + used, sizeof dump - used, "\n  [%d] %s", ts_logs[i].level,
                         ts_logs[i].text);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    pthread_mutex_unlock(&ts_log_mutex);
    return ts_nlogs ? dump : " (no log messages)";
}
