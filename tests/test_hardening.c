/*
 * test_hardening.c — what a hostile plugin, a hostile file or a
 * careless host must not be able to do to the registry. Each test names the
 * fault it pins; each failed (crashed, hung, leaked or read out of bounds
 * under ASan) before the fix.
 */
#define _GNU_SOURCE /* strnlen, pthread */

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "abi_frozen.h"
#include "attnreg.h"
#include "support/test_support.h"

/* The path of libhostile_<variant>.so. */
static const char *hostile_lib(const char *variant)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/libhostile_%s%s", ATTNREG_FAKE_PLUGIN_DIR, variant,
             ATTNREG_MODULE_SUFFIX);
    return path;
}

/* One hostile plugin, named hostile-<variant with dashes>, in the test's folder. */
static attn_registry *open_hostile(const char *variant, int out_of_process)
{
    char name[128];
    snprintf(name, sizeof name, "hostile-%s", variant);
    for (char *p = name; *p; p++)
        if (*p == '_')
            *p = '-';
    ts_write_plugin_ini(ts_dir(), "h.ini", name, hostile_lib(variant), 10, "hostile", NULL);
    const char *dirs[1] = {ts_dir()};
    attn_registry_options opt;
    ts_options(&opt, dirs, 1);
    opt.probe_out_of_process = out_of_process;
    attn_registry *reg = NULL;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    return reg;
}

static void hostile_shape(attn_shape *s)
{
    attn_shape_init(s);
    ts_set_arch(s, "hostile");
}

static attn_backend *create_ok(attn_registry *reg)
{
    attn_shape s;
    hostile_shape(&s);
    attn_selection sel;
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &s, &sel), ATTN_OK);
    attn_backend *b = NULL;
    ck_assert_int_eq(attn_backend_create(reg, &sel, &b), ATTN_OK);
    return b;
}

/* ---- plugin output is untrusted --------------------------------------- */

START_TEST(create_error_without_nul_is_cut)
{
    attn_registry *reg = open_hostile("create_unterminated", 0);
    attn_shape s;
    hostile_shape(&s);
    attn_selection sel;
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &s, &sel), ATTN_OK);
    attn_backend *b = NULL;
    ck_assert_int_eq(attn_backend_create(reg, &sel, &b), ATTN_ERR_CREATE_FAILED);
    ck_assert_ptr_null(b);
    const char *e = attn_last_error();
    ck_assert_msg(strstr(e, "XXXXXXXX") != NULL, "%s", e);
    ck_assert_uint_lt(strlen(e), 1024);
    attn_registry_close(reg);
}
END_TEST

START_TEST(forward_error_without_nul_is_cut)
{
    attn_registry *reg = open_hostile("forward_unterminated", 0);
    attn_backend *b = create_ok(reg);
    ts_tiny_batch t;
    ts_tiny_batch_init(&t);
    ck_assert_int_eq(attn_backend_forward(b, &t.args), ATTN_ERR_RUNTIME);
    ck_assert_uint_lt(strlen(attn_last_error()), 1024);
    attn_backend_destroy(b);
    attn_registry_close(reg);
}
END_TEST

/* Probes hostile plugin `variant` into dev[0..capacity) and expects `want`;
 * returns the count. */
static uint32_t probe(const char *variant, attn_device_info *dev, uint32_t capacity,
                      attn_status want, attn_registry **reg)
{
    *reg = open_hostile(variant, 0);
    memset(dev, 0, capacity * sizeof *dev);
    uint32_t count = 9;
    ck_assert_int_eq(attn_registry_probe_devices(*reg, 0, dev, capacity, &count), want);
    return count;
}

START_TEST(probe_error_without_nul_is_cut)
{
    attn_registry *reg;
    attn_device_info dev[2];
    ck_assert_uint_eq(probe("probe_unterminated", dev, 2, ATTN_ERR_NO_DEVICE, &reg), 0);
    ck_assert_uint_lt(strlen(attn_last_error()), 1024);
    attn_registry_close(reg);
}
END_TEST

START_TEST(device_fields_without_nul_are_cut)
{
    attn_registry *reg;
    attn_device_info dev[2];
    ck_assert_uint_eq(probe("device_unterminated", dev, 2, ATTN_OK, &reg), 1);
    ck_assert_uint_lt(strnlen(dev[0].arch, sizeof dev[0].arch), sizeof dev[0].arch);
    ck_assert_uint_lt(strnlen(dev[0].name, sizeof dev[0].name), sizeof dev[0].name);
    attn_registry_close(reg);
}
END_TEST

START_TEST(device_count_past_capacity_is_capped)
{
    attn_registry *reg;
    attn_device_info dev[4];
    ck_assert_uint_le(probe("device_count", dev, 4, ATTN_OK, &reg), 64);
    attn_diagnostic d;
    ck_assert_int_ge(ts_find_diagnostic(reg, NULL, -1, &d), 0);
    ck_assert_msg(strstr(d.message, "1000000") != NULL, "%s", d.message);
    attn_registry_close(reg);
}
END_TEST

START_TEST(predicate_writing_its_shape_changes_nothing)
{
    attn_registry *reg = open_hostile("writes_shape", 0);
    attn_shape s;
    hostile_shape(&s);
    attn_selection sel;
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &s, &sel), ATTN_OK);
    ck_assert_int_eq(sel.effective_shape.head_dim, s.head_dim);
    ck_assert_int_eq(sel.effective_shape.max_q_len, s.max_q_len);
    attn_backend *b = NULL;
    ck_assert_int_eq(attn_backend_create(reg, &sel, &b), ATTN_OK);
    ck_assert_int_eq(attn_backend_shape(b)->head_dim, s.head_dim);
    attn_backend_destroy(b);
    attn_registry_close(reg);
}
END_TEST

static const char *const bad_reasons[] = {"reason_huge", "reason_negative", "reason_conf",
                                          "reason_runnable"};
static const char *const bad_reason_codes[] = {"999", "-5", "1", "27"};

START_TEST(reasons_outside_the_plugin_range_are_invalid)
{
    attn_registry *reg = open_hostile(bad_reasons[_i], 0);
    char name[64];
    snprintf(name, sizeof name, "hostile-%s", bad_reasons[_i]);
    for (char *p = name; *p; p++)
        if (*p == '_')
            *p = '-';
    attn_shape s;
    hostile_shape(&s);
    attn_explanation *ex = NULL;
    attn_registry_explain(reg, &s, &ex);
    attn_verdict_record r;
    memset(&r, 0, sizeof r);
    ck_assert(ts_find_record(ex, 0, name, &r));
    ck_assert_int_eq(r.accepted, 0);
    ck_assert_int_eq(r.reason, ATTN_REASON_INVALID_REASON);
    ck_assert_str_eq(r.reason_name, "INVALID_REASON");
    char want[64];
    snprintf(want, sizeof want, "invalid reason %s", bad_reason_codes[_i]);
    ck_assert_msg(strstr(r.message, want) != NULL, "%s", r.message);
    attn_explanation_free(ex);
    attn_registry_close(reg);
}
END_TEST

/* Loading hostile plugin `variant` fails with `status`, `reason` and a
 * message containing `says`, and leaves it unloaded. */
static void expect_load_failure(const char *variant, int out_of_process, attn_status status,
                                attn_reason reason, const char *says)
{
    attn_registry *reg = open_hostile(variant, out_of_process);
    attn_plugin_load_info li;
    memset(&li, 0, sizeof li);
    li.struct_size = sizeof li;
    ck_assert_int_eq(attn_registry_load_plugin(reg, 0, &li), status);
    ck_assert_int_eq(li.reason, reason);
    ck_assert_msg(strstr(li.message, says) != NULL, "%s", li.message);
    ck_assert(!ts_is_loaded(hostile_lib(variant)));
    attn_registry_close(reg);
}

static const char *const bad_descriptors[] = {"long_version", "predicate_count"};
static const char *const bad_descriptor_says[] = {"longer than 255 bytes",
                                                  "declares 100000 predicates"};

START_TEST(descriptor_strings_and_counts_are_bounded)
{
    expect_load_failure(bad_descriptors[_i], 0, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                        bad_descriptor_says[_i]);
}
END_TEST

/* ---- plugins that die while loading ------------------------------------ */

static const char *const dying[] = {"ctor_exit", "ctor_abort", "ctor_segv"};
static const char *const dying_says[] = {"called exit(3) while loading",
                                         "crashed while loading (signal 6", "while loading"};

START_TEST(plugin_dying_while_loading_fails_out_of_process)
{
    expect_load_failure(dying[_i], 1, ATTN_ERR_LOAD, ATTN_REASON_LOAD_FAILED, dying_says[_i]);
}
END_TEST

/* A constructor that never returns: the probing child is killed after
 * ATTNREG_PROBE_TIMEOUT seconds and the plugin fails as a plugin. */
START_TEST(plugin_hanging_while_loading_is_killed)
{
    ck_assert_int_eq(setenv("ATTNREG_PROBE_TIMEOUT", "1", 1), 0);
    ts_write_plugin_ini(ts_dir(), "h.ini", "hostile-ctor-hang", hostile_lib("ctor_hang"), 10,
                        "hostile", NULL);
    const char *dirs[1] = {ts_dir()};
    attn_registry_options opt;
    ts_options(&opt, dirs, 1);
    opt.skip_env = 0; /* ATTNREG_PROBE_TIMEOUT */
    opt.probe_out_of_process = 1;
    attn_registry *reg = NULL;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    attn_plugin_load_info li;
    memset(&li, 0, sizeof li);
    li.struct_size = sizeof li;
    ck_assert_int_eq(attn_registry_load_plugin(reg, 0, &li), ATTN_ERR_LOAD);
    ck_assert_msg(strstr(li.message, "did not finish loading within 1 s (killed)"), "%s",
                  li.message);
    attn_registry_close(reg);
    /* a value that is not a number of seconds: a warning, the default stays */
    ck_assert_int_eq(setenv("ATTNREG_PROBE_TIMEOUT", "soon", 1), 0);
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    ck_assert_int_eq(ts_log_count(ATTN_LOG_WARN, "ATTNREG_PROBE_TIMEOUT=soon is not", NULL), 1);
    attn_registry_close(reg);
}
END_TEST

/* ---- the probe against a host's signals and threads ------------------ */

/* A registry over one plugin INI, probing out of process, with the
 * environment read (ATTNREG_PROBE_TIMEOUT). */
static attn_registry *open_probing(const char *name, const char *library)
{
    ts_write_plugin_ini(ts_dir(), "p.ini", name, library, 10, "hostile", NULL);
    const char *dirs[1] = {ts_dir()};
    attn_registry_options opt;
    ts_options(&opt, dirs, 1);
    opt.skip_env = 0;
    opt.probe_out_of_process = 1;
    attn_registry *reg = NULL;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    return reg;
}

static attn_status load_first(attn_registry *reg, attn_plugin_load_info *li)
{
    memset(li, 0, sizeof *li);
    li->struct_size = sizeof *li;
    return attn_registry_load_plugin(reg, 0, li);
}

static void on_alarm(int sig)
{
    (void)sig;
}

/* A host with an interval timer: every tick interrupts the probe's wait.
 * The wait used to restart with the full timeout after each EINTR, so a
 * hanging constructor was never killed. */
START_TEST(probe_timeout_holds_across_eintr)
{
    ck_assert_int_eq(setenv("ATTNREG_PROBE_TIMEOUT", "1", 1), 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: poll fails with EINTR */
    ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
    struct itimerval tick = {{0, 100000}, {0, 100000}}, off = {{0, 0}, {0, 0}};
    ck_assert_int_eq(setitimer(ITIMER_REAL, &tick, NULL), 0);
    attn_registry *reg = open_probing("hostile-ctor-hang", hostile_lib("ctor_hang"));
    attn_plugin_load_info li;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    attn_status st = load_first(reg, &li);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    setitimer(ITIMER_REAL, &off, NULL);
    ck_assert_int_eq(st, ATTN_ERR_LOAD);
    ck_assert_msg(strstr(li.message, "did not finish loading within 1 s (killed)"), "%s",
                  li.message);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    ck_assert_msg(took < 4.0, "the 1 s probe took %.1f s under the timer", took);
    attn_registry_close(reg);
}
END_TEST

static void reap_everything(int sig)
{
    (void)sig;
    int saved = errno;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    errno = saved;
}

/* A host that ignores SIGCHLD (the kernel then reaps its children) or
 * reaps every child in a handler: the probe's own wait still gets the
 * plugin's real end. It used to report a crash as "called exit(0)". */
START_TEST(probe_survives_the_hosts_sigchld)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = _i == 0 ? SIG_IGN : reap_everything;
    ck_assert_int_eq(sigaction(SIGCHLD, &sa, &old), 0);
    /* abort(), not SIGSEGV: under ASan the helper turns a SIGSEGV into
     * exit(1) itself, while SIGABRT stays a signal in every build. */
    attn_registry *reg = open_probing("hostile-ctor-abort", hostile_lib("ctor_abort"));
    attn_plugin_load_info li;
    attn_status st = load_first(reg, &li);
    sigaction(SIGCHLD, &old, NULL);
    ck_assert_int_eq(st, ATTN_ERR_LOAD);
    ck_assert_msg(strstr(li.message, "crashed while loading (signal 6"), "%s", li.message);
    attn_registry_close(reg);
}
END_TEST

typedef struct hammer {
    attn_registry *reg;
    _Atomic int stop;
} hammer;

static void *hold_diag_lock(void *arg)
{
    hammer *h = arg;
    while (!atomic_load(&h->stop))
        (void)attn_registry_diagnostic_count(h->reg);
    return NULL;
}

/* Host threads that hold the registry's locks (here the diagnostics lock,
 * taken by every attn_registry_diagnostic_count) while the probe forks: a
 * forked child that went on in the library took that lock to record the
 * plugin's failure and deadlocked (reported as a timeout). The helper is a
 * fresh program: every probe reports the plugin's real error. */
START_TEST(probe_takes_no_lock_a_host_thread_holds)
{
    ck_assert_int_eq(setenv("ATTNREG_PROBE_TIMEOUT", "3", 1), 0);
    for (int round = 0; round < 40; round++) {
        attn_registry *reg = open_probing("fake-init-fails", ts_fake("init_fails"));
        hammer h = {reg, 0};
        pthread_t t[2];
        for (int k = 0; k < 2; k++)
            ck_assert_int_eq(pthread_create(&t[k], NULL, hold_diag_lock, &h), 0);
        attn_plugin_load_info li;
        attn_status st = load_first(reg, &li);
        atomic_store(&h.stop, 1);
        for (int k = 0; k < 2; k++)
            pthread_join(t[k], NULL);
        ck_assert_int_eq(st, ATTN_ERR_INIT_FAILED);
        ck_assert_msg(strstr(li.message, "init failed"), "round %d: %s", round, li.message);
        attn_registry_close(reg);
    }
}
END_TEST

START_TEST(out_of_process_probe_then_loads_in_process)
{
    attn_registry *reg = open_hostile("polite", 1);
    attn_backend *b = create_ok(reg);
    ck_assert(ts_is_loaded(hostile_lib("polite")));
    attn_backend_destroy(b);
    attn_registry_close(reg);
}
END_TEST

/* ---- files that are not what they seem ---------------------------------- */

/* Opens a registry (no conf) with ATTNREG_LOG_FILE=path read from the
 * environment and no log callback. */
static attn_registry *open_with_log_file(const char *path)
{
    ck_assert_int_eq(setenv("ATTNREG_LOG_FILE", path, 1), 0);
    attn_registry_options opt;
    ts_options(&opt, NULL, 0);
    opt.skip_env = 0;
    opt.log_fn = NULL;
    attn_registry *reg = NULL;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    unsetenv("ATTNREG_LOG_FILE");
    return reg;
}

/* ATTNREG_LOG_FILE naming a FIFO once hung every registry open (and so
 * every command) waiting for a reader; now it is refused at once and the
 * log goes to stderr. Forked with an alarm: a regression fails, not hangs. */
START_TEST(fifo_as_log_file_does_not_block)
{
    const char *fifo = ts_join(ts_dir(), "log.fifo");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        alarm(5);
        attn_registry_close(open_with_log_file(fifo));
        _exit(0);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "open with a FIFO log file: wait status %d (SIGALRM = blocked)", status);
}
END_TEST

/* The log file's descriptor was once inherited by every program a host
 * execs; every descriptor the library opens is O_CLOEXEC. */
START_TEST(log_file_is_close_on_exec)
{
    const char *log = ts_join(ts_dir(), "attnreg.log");
    attn_registry *reg = open_with_log_file(log);
    int found = 0;
    for (int fd = 0; fd < 1024; fd++) {
        char link[64], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strcmp(target, log) != 0)
            continue;
        found++;
        int flags = fcntl(fd, F_GETFD);
        ck_assert_msg(flags >= 0 && (flags & FD_CLOEXEC), "fd %d on %s lacks FD_CLOEXEC", fd, log);
    }
    ck_assert_int_eq(found, 1);
    attn_registry_close(reg);
}
END_TEST

/* attn_shape_format once read an arch without a NUL past its 32 bytes
 * (ASan: stack-buffer-overflow); it prints those 32 bytes and no more. */
START_TEST(shape_format_bounds_an_unterminated_arch)
{
    attn_shape s;
    attn_shape_init(&s);
    memset(s.arch, 'x', sizeof s.arch);
    char text[512];
    ck_assert_int_gt(attn_shape_format(&s, text, sizeof text), 0);
    char want[64];
    snprintf(want, sizeof want, "arch=%.*s q_heads=", (int)sizeof s.arch,
             "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    ck_assert_msg(strncmp(text, want, strlen(want)) == 0, "%s", text);
}
END_TEST

/* A plugin INI naming `library` (not a regular file): the load fails with
 * ATTN_ERR_LOAD and a message containing `says`, without blocking. */
static void expect_library_refused(const char *library, const char *says)
{
    ts_write_plugin_ini(ts_dir(), "f.ini", "fake-good", library, 10, "fake", NULL);
    attn_registry *reg = ts_open_dir(ts_dir());
    attn_plugin_load_info li;
    memset(&li, 0, sizeof li);
    li.struct_size = sizeof li;
    ck_assert_int_eq(attn_registry_load_plugin(reg, 0, &li), ATTN_ERR_LOAD);
    ck_assert_msg(strstr(li.message, says) != NULL, "%s", li.message);
    attn_registry_close(reg);
}

START_TEST(fifo_as_library_fails_without_blocking)
{
    const char *fifo = ts_join(ts_dir(), "libfifo.so");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    expect_library_refused(fifo, "a FIFO");
}
END_TEST

START_TEST(device_as_library_fails)
{
    expect_library_refused("/dev/zero", "character device");
}
END_TEST

START_TEST(fifo_ini_and_symlink_loop_are_warned)
{
    ck_assert_int_eq(mkfifo(ts_join(ts_dir(), "fifo.ini"), 0600), 0);
    ck_assert_int_eq(symlink("b.ini", ts_join(ts_dir(), "a.ini")), 0);
    ck_assert_int_eq(symlink("a.ini", ts_join(ts_dir(), "b.ini")), 0);
    attn_registry *reg = ts_open_dir(ts_dir());
    int fifo = 0, loop = 0;
    for (size_t i = 0; i < attn_registry_diagnostic_count(reg); i++) {
        attn_diagnostic d = {.struct_size = sizeof d};
        ck_assert_int_eq(attn_registry_diagnostic(reg, i, &d), ATTN_OK);
        ck_assert_int_eq(d.status, ATTN_OK); /* warnings */
        fifo += strstr(d.message, "fifo.ini is not a regular file") != NULL;
        loop += strstr(d.message, "symbolic link loop") != NULL;
    }
    ck_assert_int_eq(fifo, 1);
    ck_assert_int_eq(loop, 2);
    attn_registry_close(reg);
}
END_TEST

START_TEST(world_writable_files_are_warned)
{
    const char *dir = ts_subdir("open");
    ck_assert_int_eq(chmod(dir, 0777), 0);
    const char *ini =
        ts_write_plugin_ini(dir, "p.ini", "fake-good", ts_fake("good"), 10, "fake", NULL);
    ck_assert_int_eq(chmod(ini, 0666), 0);
    attn_registry *reg = ts_open_dir(dir);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 1); /* loaded, with warnings */
    int folder = 0, file = 0;
    for (size_t i = 0; i < attn_registry_diagnostic_count(reg); i++) {
        attn_diagnostic d = {.struct_size = sizeof d};
        attn_registry_diagnostic(reg, i, &d);
        ck_assert_int_eq(d.status, ATTN_OK);
        folder += strstr(d.message, "conf folder") && strstr(d.message, "every user");
        file += strstr(d.message, "conf file") && strstr(d.message, "every user");
    }
    ck_assert_int_eq(folder, 1);
    ck_assert_int_eq(file, 1);
    attn_registry_close(reg);

    /* A plugin library every user can write: loaded, with a warning. */
    const char *lib = ts_join(dir, "libcopy.so");
    FILE *in = fopen(ts_fake("good"), "rb"), *out = fopen(lib, "wb");
    ck_assert(in && out);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
        ck_assert_uint_eq(fwrite(chunk, 1, n, out), n);
    fclose(in);
    fclose(out);
    ck_assert_int_eq(chmod(lib, 0777), 0);
    ts_write_plugin_ini(dir, "p.ini", "fake-good", lib, 10, "fake", NULL);
    reg = ts_open_dir(dir);
    size_t before = attn_registry_diagnostic_count(reg);
    attn_plugin_load_info li;
    memset(&li, 0, sizeof li);
    li.struct_size = sizeof li;
    ck_assert_int_eq(attn_registry_load_plugin(reg, 0, &li), ATTN_OK);
    /* The library and its folder (the test's 0777 folder). */
    ck_assert_uint_eq(attn_registry_diagnostic_count(reg), before + 2);
    attn_diagnostic d = {.struct_size = sizeof d};
    attn_registry_diagnostic(reg, before, &d);
    ck_assert_int_eq(d.status, ATTN_OK);
    ck_assert_msg(strstr(d.message, "plugin library") && strstr(d.message, "every user"), "%s",
                  d.message);
    attn_registry_diagnostic(reg, before + 1, &d);
    ck_assert_int_eq(d.status, ATTN_OK);
    ck_assert_msg(strstr(d.message, "plugin folder") && strstr(d.message, "every user"), "%s",
                  d.message);
    attn_registry_close(reg);
}
END_TEST

/* A diagnostic quotes the conf file (here a value with ESC and
 * BEL bytes, the terminal's title and screen-clear sequences); its control
 * bytes come out as \xNN, for the CLI, the log and the host alike. */
START_TEST(conf_diagnostics_escape_control_bytes)
{
    char text[512];
    snprintf(text, sizeof text,
             "[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = %s\n"
             "priority = 1\x1b]0;owned\x07\x1b[2J\narchs = fake\n",
             ts_fake("good"));
    ts_write(ts_dir(), "esc.ini", text);
    attn_registry *reg = ts_open_dir(ts_dir());
    ck_assert_uint_gt(attn_registry_diagnostic_count(reg), 0);
    int quoted = 0;
    for (size_t k = 0; k < attn_registry_diagnostic_count(reg); k++) {
        attn_diagnostic d;
        memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        ck_assert_int_eq(attn_registry_diagnostic(reg, k, &d), ATTN_OK);
        for (const char *c = d.message; *c; c++)
            ck_assert_msg((unsigned char)*c >= 0x20 && *c != 0x7f, "raw 0x%02x in: %s",
                          (unsigned char)*c, d.message);
        quoted += strstr(d.message, "\\x1b]0;owned\\x07") != NULL;
    }
    ck_assert_int_ge(quoted, 1);
    attn_registry_close(reg);
}
END_TEST

START_TEST(long_line_is_an_error_not_a_split)
{
    /* A comment longer than inih's buffer, ending in a key: before, its
     * tail was read as `enabled = false`. */
    size_t n = 70000;
    char *text = malloc(n + 512);
    int k = snprintf(text, 512,
                     "[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = %s\n"
                     "priority = 1\narchs = fake\n;",
                     ts_fake("good"));
    memset(text + k, 'x', n);
    snprintf(text + k + n, 64, " enabled = false\n");
    ts_write(ts_dir(), "long.ini", text);
    free(text);
    attn_registry *reg = ts_open_dir(ts_dir());
    attn_diagnostic d;
    ck_assert_int_ge(ts_find_diagnostic(reg, NULL, 7, &d), 0);
    ck_assert_int_eq(d.status, ATTN_ERR_CONF);
    ck_assert_msg(strstr(d.message, ":7: line of") && strstr(d.message, "longer than"), "%s",
                  d.message);
    ck_assert_uint_eq(attn_registry_plugin_count(reg), 0);
    attn_registry_close(reg);
}
END_TEST

START_TEST(huge_ini_and_nul_byte_are_errors)
{
    const char *dir = ts_subdir("big");
    size_t n = (2u << 20);
    char *text = malloc(n + 1);
    memset(text, ';', n);
    text[n] = '\0';
    ts_write(dir, "big.ini", text);
    free(text);
    attn_registry *reg = ts_open_dir(dir);
    attn_diagnostic d;
    ck_assert_int_ge(ts_find_diagnostic(reg, NULL, -1, &d), 0);
    ck_assert_msg(strstr(d.message, "larger than"), "%s", d.message);
    attn_registry_close(reg);

    dir = ts_subdir("nul");
    FILE *f = fopen(ts_join(dir, "nul.ini"), "wb");
    ck_assert_ptr_nonnull(f);
    fwrite("[plugin]\nname = a\0b\n", 1, 20, f);
    fclose(f);
    reg = ts_open_dir(dir);
    ck_assert_int_ge(ts_find_diagnostic(reg, NULL, 2, &d), 0);
    ck_assert_msg(strstr(d.message, "NUL byte"), "%s", d.message);
    attn_registry_close(reg);
}
END_TEST

START_TEST(many_keys_are_read_in_linear_time)
{
    /* 90 000 [params] keys and one repeat at the end: the pairwise check
     * took minutes here (40 000 keys: 11.5 s); this case's timeout is 60 s
     * even under ASan. */
    enum { KEYS = 90000 };
    size_t cap = (size_t)KEYS * 16 + 1024, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap,
                            "[plugin]\nformat_version = 1.0\nname = fake-good\nlibrary = %s\n"
                            "priority = 1\narchs = fake\n[params]\n",
                            ts_fake("good"));
    for (int i = 0; i < KEYS; i++)
        len += (size_t)snprintf(text + len, cap - len, "k%d = v\n", i);
    snprintf(text + len, cap - len, "k17 = again\n");
    ts_write(ts_dir(), "many.ini", text);
    free(text);
    attn_registry *reg = ts_open_dir(ts_dir());
    attn_diagnostic d;
    ck_assert_int_ge(ts_find_diagnostic(reg, NULL, 8 + KEYS, &d), 0);
    ck_assert_msg(strstr(d.message, "key 'k17' in [params] repeats line 25"), "%s", d.message);
    attn_registry_close(reg);
}
END_TEST

/* ---- lifetimes ------------------------------------------------------- */

static attn_registry *open_good(const char *extra)
{
    ts_write_plugin_ini(ts_dir(), "g.ini", "fake-good", ts_fake("good"), 10, "fake", extra);
    return ts_open_dir(ts_dir());
}

/* Fills the decision cache with 65536 distinct shapes. */
static void fill_cache(attn_registry *reg)
{
    attn_shape s;
    ts_fake_shape(&s);
    attn_selection sel;
    attn_selection_init(&sel);
    for (int i = 0; i < 65536; i++) {
        s.max_kv_len = 1 + i;
        attn_registry_select(reg, &s, &sel);
    }
}

START_TEST(selection_strings_outlive_the_cache)
{
    attn_registry *reg = open_good(NULL);
    fill_cache(reg);
    attn_shape s;
    ts_fake_shape(&s);
    ts_set_arch(&s, "nowhere");
    s.max_kv_len = 7777777;
    attn_selection held;
    attn_selection_init(&held);
    ck_assert_int_eq(attn_registry_select(reg, &s, &held), ATTN_ERR_UNSUPPORTED);
    char *copy = strdup(held.message);
    attn_selection other;
    attn_selection_init(&other);
    for (int i = 0; i < 8; i++) {
        s.max_kv_len = 8000000 + i;
        attn_registry_select(reg, &s, &other);
    }
    /* Before, the held strings were freed by the next uncached select. */
    ck_assert_str_eq(held.message, copy);
    free(copy);
    attn_registry_close(reg);
}
END_TEST

static void *select_uncached(void *arg)
{
    attn_registry *reg = arg;
    attn_shape s;
    ts_fake_shape(&s);
    ts_set_arch(&s, "nowhere");
    s.max_kv_len = 9000000;
    attn_selection sel;
    attn_selection_init(&sel);
    attn_registry_select(reg, &s, &sel);
    return NULL;
}

START_TEST(thread_exit_leaves_nothing_behind)
{
    /* Before, each thread's last uncached decision stayed in thread-local
     * memory that nothing freed (LeakSanitizer in the ASan stage). */
    attn_registry *reg = open_good(NULL);
    fill_cache(reg);
    for (int i = 0; i < 4; i++) {
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, select_uncached, reg), 0);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
    }
    attn_registry_close(reg);
}
END_TEST

START_TEST(close_with_a_live_backend_defers_the_unload)
{
    const char *marker = ts_join(ts_dir(), "fini-ran");
    char extra[4200];
    snprintf(extra, sizeof extra, "[params]\nfini_marker = %s\n", marker);
    attn_registry *reg = open_good(extra);
    attn_shape s;
    ts_fake_shape(&s);
    attn_selection sel;
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &s, &sel), ATTN_OK);
    attn_backend *b = NULL;
    ck_assert_int_eq(attn_backend_create(reg, &sel, &b), ATTN_OK);
    attn_registry_close(reg);
    /* The plugin is still loaded and its fini has not run. */
    ck_assert(ts_is_loaded(ts_fake("good")));
    ck_assert_int_ne(access(marker, F_OK), 0);
    attn_batch_limits lim = {.struct_size = sizeof lim, .max_num_seqs = 1, .max_num_tokens = 1};
    size_t bytes = 0;
    ck_assert_int_eq(attn_backend_workspace_size(b, &lim, &bytes), ATTN_OK);
    ck_assert_str_eq(attn_backend_name(b), "fake-good");
    attn_backend_destroy(b);
    /* The last destroy finished the close. */
    ck_assert_int_eq(access(marker, F_OK), 0);
}
END_TEST

/* ---- ABI growth: *_init writes no more than the caller's struct -------- */

enum { PAD = 64 };

static void check_untouched(const unsigned char *p, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        ck_assert_msg(p[i] == 0xAB, "byte %zu written", i);
}

START_TEST(init_functions_write_only_the_callers_size)
{
    unsigned char buf[sizeof(attn_selection) + sizeof(attn_registry_options) + PAD];
    /* A host whose struct is smaller than this library's (built against
     * older headers): *_init_sized gets its sizeof. */
    size_t small = ATTN_SHAPE_SIZE_0_1 - 8;
    memset(buf, 0xAB, sizeof buf);
    attn_shape_init_sized((attn_shape *)buf, small);
    ck_assert_uint_eq(((attn_shape *)buf)->struct_size, small);
    check_untouched(buf, small, sizeof buf);

    memset(buf, 0xAB, sizeof buf);
    attn_registry_options_init_sized((attn_registry_options *)buf, ATTN_REGISTRY_OPTIONS_SIZE_0_2);
    check_untouched(buf, ATTN_REGISTRY_OPTIONS_SIZE_0_2, sizeof buf);
    ck_assert_int_eq(((attn_registry_options *)buf)->log_level, -1);

    /* The exported functions of the old names write their first layout. */
    memset(buf, 0xAB, sizeof buf);
    (attn_shape_init)((attn_shape *)buf);
    check_untouched(buf, ATTN_SHAPE_SIZE_0_1, sizeof buf);
    memset(buf, 0xAB, sizeof buf);
    (attn_registry_options_init)((attn_registry_options *)buf);
    check_untouched(buf, ATTN_REGISTRY_OPTIONS_SIZE_0_2, sizeof buf);
    memset(buf, 0xAB, sizeof buf);
    (attn_selection_init)((attn_selection *)buf);
    /* That is 0.1's layout (core/abi_frozen.h): today's attn_shape is larger
     * (0.4), so 0.1's message sits where that version put it. */
    check_untouched(buf, sizeof(attn_selection_0_1), sizeof buf);
    ck_assert_str_eq(((attn_selection_0_1 *)(void *)buf)->message, "");

    /* The macros pass the caller's sizeof. */
    attn_shape s;
    attn_shape_init(&s);
    ck_assert_uint_eq(s.struct_size, sizeof s);
}
END_TEST

START_TEST(oldest_sizes_are_accepted)
{
    attn_registry *reg = open_good(NULL);
    attn_shape s;
    attn_shape_init_sized(&s, ATTN_SHAPE_SIZE_0_1);
    ts_set_arch(&s, "fake");
    attn_selection sel;
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &s, &sel), ATTN_OK);
    attn_backend *b = NULL;
    ck_assert_int_eq(attn_backend_create(reg, &sel, &b), ATTN_OK);
    attn_batch_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.struct_size = (uint32_t)ATTN_BATCH_LIMITS_SIZE_0_1;
    lim.max_num_seqs = 1;
    lim.max_num_tokens = 4;
    size_t bytes = 0;
    ck_assert_int_eq(attn_backend_workspace_size(b, &lim, &bytes), ATTN_OK);
    lim.struct_size = (uint32_t)ATTN_BATCH_LIMITS_SIZE_0_1 - 4;
    ck_assert_int_eq(attn_backend_workspace_size(b, &lim, &bytes), ATTN_ERR_INVALID_ARGUMENT);
    attn_backend_destroy(b);
    attn_registry_close(reg);
}
END_TEST

/* Found in a red-team pass: a layer's type_name is the host's
 * string, copied, sorted and printed by the plan: one without a NUL within
 * 256 bytes was read past its end. Refused as invalid, before any plugin. */
START_TEST(plan_bounds_a_layer_type_name)
{
    ts_write_plugin_ini(ts_dir(), "good.ini", "fake-good", ts_fake("good"), 10, "fake", NULL);
    attn_registry *reg = ts_open_dir(ts_dir());
    enum { LONG = 300 };
    char *name = malloc(LONG); /* no NUL: ASan sees any read past it */
    ck_assert_ptr_nonnull(name);
    memset(name, 'x', LONG);
    attn_layer layers[2];
    for (int i = 0; i < 2; i++)
        attn_layer_init(&layers[i], sizeof layers[i]);
    layers[1].kind = ATTN_LAYER_NOT_ATTENTION;
    layers[1].type_name = name;
    attn_model m;
    attn_model_init(&m, sizeof m);
    snprintf(m.arch, sizeof m.arch, "fake");
    m.num_layers = 2;
    m.layers = layers;
    m.max_model_len = 64;
    attn_plan *plan = NULL;
    ck_assert_int_eq(attn_registry_plan(reg, &m, &plan), ATTN_ERR_INVALID_SHAPE);
    attn_plan_summary sum;
    memset(&sum, 0, sizeof sum);
    sum.struct_size = sizeof sum;
    ck_assert_int_eq(attn_plan_summarize(plan, &sum), ATTN_OK);
    ck_assert_msg(strstr(sum.message, "layer 1: type_name is longer than 255 bytes"), "%s",
                  sum.message);
    attn_plan_free(plan);
    /* 255 bytes and a NUL is a name like any other. */
    name[255] = '\0';
    ck_assert_int_eq(attn_registry_plan(reg, &m, &plan), ATTN_OK);
    attn_plan_free(plan);
    free(name);
    attn_registry_close(reg);
}
END_TEST

static Suite *hardening_suite(void)
{
    Suite *s = suite_create("hardening");
    TCase *tc = tcase_create("plugin output");
    ts_add_fixtures(tc, 60);
    tcase_add_test(tc, create_error_without_nul_is_cut);
    tcase_add_test(tc, forward_error_without_nul_is_cut);
    tcase_add_test(tc, probe_error_without_nul_is_cut);
    tcase_add_test(tc, device_fields_without_nul_are_cut);
    tcase_add_test(tc, device_count_past_capacity_is_capped);
    tcase_add_test(tc, predicate_writing_its_shape_changes_nothing);
    tcase_add_loop_test(tc, reasons_outside_the_plugin_range_are_invalid, 0, 4);
    tcase_add_loop_test(tc, descriptor_strings_and_counts_are_bounded, 0, 2);
    suite_add_tcase(s, tc);
    tc = tcase_create("dying plugins");
    ts_add_fixtures(tc, 60);
    tcase_add_loop_test(tc, plugin_dying_while_loading_fails_out_of_process, 0, 3);
    tcase_add_test(tc, out_of_process_probe_then_loads_in_process);
    tcase_add_test(tc, plugin_hanging_while_loading_is_killed);
    tcase_add_test(tc, probe_timeout_holds_across_eintr);
    tcase_add_loop_test(tc, probe_survives_the_hosts_sigchld, 0, 2);
    tcase_add_test(tc, probe_takes_no_lock_a_host_thread_holds);
    suite_add_tcase(s, tc);
    tc = tcase_create("files");
    ts_add_fixtures(tc, 60);
    tcase_add_test(tc, fifo_as_library_fails_without_blocking);
    tcase_add_test(tc, fifo_as_log_file_does_not_block);
    tcase_add_test(tc, log_file_is_close_on_exec);
    tcase_add_test(tc, shape_format_bounds_an_unterminated_arch);
    tcase_add_test(tc, plan_bounds_a_layer_type_name);
    tcase_add_test(tc, device_as_library_fails);
    tcase_add_test(tc, fifo_ini_and_symlink_loop_are_warned);
    tcase_add_test(tc, world_writable_files_are_warned);
    tcase_add_test(tc, long_line_is_an_error_not_a_split);
    tcase_add_test(tc, conf_diagnostics_escape_control_bytes);
    tcase_add_test(tc, huge_ini_and_nul_byte_are_errors);
    tcase_add_test(tc, many_keys_are_read_in_linear_time);
    suite_add_tcase(s, tc);
    tc = tcase_create("lifetimes");
    ts_add_fixtures(tc, 300);
    tcase_add_test(tc, selection_strings_outlive_the_cache);
    tcase_add_test(tc, thread_exit_leaves_nothing_behind);
    tcase_add_test(tc, close_with_a_live_backend_defers_the_unload);
    suite_add_tcase(s, tc);
    tc = tcase_create("abi");
    ts_add_fixtures(tc, 60);
    tcase_add_test(tc, init_functions_write_only_the_callers_size);
    tcase_add_test(tc, oldest_sizes_are_accepted);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ts_run(hardening_suite());
}
