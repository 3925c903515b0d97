/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_select.c — how fast the registry decides.
 *
 *   bench_select [--json OUT.json] [--conf DIR] [--quick]
 *
 * Measures, on the shipped conf unless --conf names another folder:
 *   - a cached select (a shape seen before): median ns per call;
 *   - an uncached select (every call a new shape, so the cache misses and the
 *     candidates' conf layer and predicates run): median ns per call, for a
 *     shape the first candidate accepts, one that falls to the second, and one
 *     that needs a fallback pass;
 *   - explain (+ free) of a shape;
 *   - opening the registry: the shipped conf, and 10, 100 and 1000 generated
 *     plugin INIs in a temporary folder, pointing either at the cpu-ref
 *     library or at a missing one (open must not load either);
 *   - the first select on the 1000-plugin registry (every candidate loaded
 *     and rejected: the "does not fall over" figure);
 *   - 8 threads doing cached selects at once.
 * Prints a table and writes the same figures as JSON. Targets (from the issue)
 * are printed next to the figures; missing one is reported, not fatal: this
 * is a benchmark, never a test.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attnreg.h"

/* ---- timing and statistics ------------------------------------------- */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* CPU time of the calling thread: with more threads than cores, wall time
 * per call would measure the scheduler's time slices, not the select. */
static double thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct stats {
    double median, p10, p90, min;
    size_t samples;
};

/* Sorts `values` in place. */
static struct stats summarise(double *values, size_t n)
{
    struct stats s = {0};
    if (n == 0)
        return s;
    qsort(values, n, sizeof *values, compare_doubles);
    s.samples = n;
    s.min = values[0];
    s.median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    s.p10 = values[(n - 1) / 10];
    s.p90 = values[(n - 1) * 9 / 10];
    return s;
}

/* ---- results --------------------------------------------------------- */

#define MAX_RESULTS 32

struct result {
    char name[64];
    char what[160];
    const char *unit;
    struct stats stats;
    double target; /* 0 = no target */
};

static struct result results[MAX_RESULTS];
static size_t num_results;

static void add_result(const char *name, const char *what, const char *unit, struct stats stats,
                       double target)
{
    if (num_results >= MAX_RESULTS)
        return;
    struct result *r = &results[num_results++];
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->what, sizeof r->what, "%s", what);
    r->unit = unit;
    r->stats = stats;
    r->target = target;
}

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void
die(const char *fmt, ...)
{
    va_list ap;
    fputs("bench_select: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* ---- registries -------------------------------------------------------- */

static void quiet_log(void *user, attn_log_level level, const char *message)
{
    /* Fallback warnings would be logged once per new shape, i.e. on every
     * uncached call; printing them would measure the terminal. */
    (void)user;
    (void)level;
    (void)message;
}

/* Opens a registry on `conf_dir` (NULL = the installation's default folder),
 * ignoring the environment so the figures describe only that conf. */
static attn_status open_registry(const char *conf_dir, attn_registry **reg)
{
    attn_registry_options o;
    const char *paths[1] = {conf_dir};
    attn_registry_options_init(&o);
    o.skip_env = 1;
    o.skip_env_conf_path = 1;
    if (conf_dir) {
        o.conf_paths = paths;
        o.num_conf_paths = 1;
        o.skip_default_conf = 1;
    }
    o.log_fn = quiet_log;
    o.log_level = ATTN_LOG_OFF;
    return attn_registry_open(&o, reg);
}

static attn_registry *open_or_die(const char *conf_dir)
{
    attn_registry *reg = NULL;
    attn_status st = open_registry(conf_dir, &reg);
    if (st != ATTN_OK)
        die("cannot open the registry on %s: %s: %s", conf_dir ? conf_dir : "the default conf",
            attn_status_name(st), attn_last_error());
    return reg;
}

/* ---- shapes ---------------------------------------------------------- */

/* The MTP shape of the issue: aiter-mtp-gfx950, the first candidate, accepts. */
static void mtp_shape(attn_shape *s)
{
    attn_shape_init(s);
    snprintf(s->arch, sizeof s->arch, "gfx950");
    s->num_q_heads = 16;
    s->num_kv_heads = 1;
    s->head_dim = 256;
    s->q_dtype = ATTN_DTYPE_BF16;
    s->kv_dtype = ATTN_DTYPE_FP8_E4M3FN;
    s->compute_dtype = ATTN_DTYPE_BF16;
    s->out_dtype = ATTN_DTYPE_BF16;
    s->page_size = 16;
    s->max_q_len = 4;
    s->max_kv_len = 4096;
}

/* The same with one query token: the MTP plugin declines, aiter-generic accepts. */
static void generic_shape(attn_shape *s)
{
    mtp_shape(s);
    s->max_q_len = 1;
}

/* gfx942, 32/8 heads, FP8 compute: no candidate accepts, the fp8 -> bf16
 * fallback rule runs a second pass. */
static void fallback_shape(attn_shape *s)
{
    attn_shape_init(s);
    snprintf(s->arch, sizeof s->arch, "gfx942");
    s->num_q_heads = 32;
    s->num_kv_heads = 8;
    s->head_dim = 128;
    s->kv_dtype = ATTN_DTYPE_FP8_E4M3FNUZ;
    s->compute_dtype = ATTN_DTYPE_FP8_E4M3FNUZ;
    s->max_q_len = 512;
    s->max_kv_len = 512;
}

/* ---- measurements ------------------------------------------------------- */

static volatile uintptr_t sink; /* keeps results observable */

/* Cached select: `batches` samples, each the mean of `per_batch` calls. */
static struct stats measure_cached(attn_registry *reg, const attn_shape *shape, size_t batches,
                                   size_t per_batch)
{
    attn_selection sel;
    double *samples = malloc(batches * sizeof *samples);
    if (!samples)
        die("out of memory");
    attn_selection_init(&sel);
    if (attn_registry_select(reg, shape, &sel) != ATTN_OK)
        die("the benchmark shape is not selected: %s", sel.message ? sel.message : "");
    for (size_t b = 0; b < batches; b++) {
        double t0 = now_ns();
        for (size_t k = 0; k < per_batch; k++) {
            attn_registry_select(reg, shape, &sel);
            sink += (uintptr_t)sel.backend_name;
        }
        samples[b] = (now_ns() - t0) / (double)per_batch;
    }
    struct stats s = summarise(samples, batches);
    free(samples);
    return s;
}

/* Uncached select: each call asks for a shape never seen (max_kv_len grows
 * by one; every tested predicate accepts all of them), so each one misses
 * the cache and is decided from scratch. Timed one call at a time.
 *
 * The registry is reopened every SHAPES_PER_REGISTRY calls (untimed, with an
 * untimed warm-up select that loads the plugins again): a server sees tens of
 * shapes, not 100000, and a cache grown far past that would measure its chain
 * length rather than the decision. */
#define SHAPES_PER_REGISTRY 256

static struct stats measure_uncached(const char *conf_dir, const attn_shape *base, size_t calls,
                                     int32_t *next_kv_len, const char **backend, char *backend_buf,
                                     size_t backend_size)
{
    attn_shape shape = *base;
    attn_selection sel;
    attn_registry *reg = NULL;
    double *samples = malloc(calls * sizeof *samples);
    if (!samples)
        die("out of memory");
    attn_selection_init(&sel);
    for (size_t k = 0; k < calls; k++) {
        if (k % SHAPES_PER_REGISTRY == 0) {
            if (reg)
                attn_registry_close(reg);
            reg = open_or_die(conf_dir);
            /* Loads the plugins (lazily, on first need) outside the timing. */
            attn_registry_select(reg, base, &sel);
            if (k == 0)
                snprintf(backend_buf, backend_size, "%s",
                         sel.backend_name ? sel.backend_name : "none");
        }
        shape.max_kv_len = (*next_kv_len)++;
        double t0 = now_ns();
        attn_registry_select(reg, &shape, &sel);
        samples[k] = now_ns() - t0;
        sink += (uintptr_t)sel.backend_name;
    }
    attn_registry_close(reg);
    *backend = backend_buf;
    struct stats s = summarise(samples, calls);
    free(samples);
    return s;
}

static struct stats measure_explain(attn_registry *reg, const attn_shape *shape, size_t calls)
{
    double *samples = malloc(calls * sizeof *samples);
    if (!samples)
        die("out of memory");
    for (size_t k = 0; k < calls; k++) {
        attn_explanation *ex = NULL;
        double t0 = now_ns();
        attn_registry_explain(reg, shape, &ex);
        if (ex)
            attn_explanation_free(ex);
        samples[k] = now_ns() - t0;
    }
    struct stats s = summarise(samples, calls);
    free(samples);
    return s;
}

/* Open time in µs (close not timed). */
static struct stats measure_open(const char *conf_dir, size_t runs, size_t *num_plugins)
{
    double *samples = malloc(runs * sizeof *samples);
    if (!samples)
        die("out of memory");
    for (size_t k = 0; k < runs; k++) {
        attn_registry *reg = NULL;
        double t0 = now_ns();
        attn_status st = open_registry(conf_dir, &reg);
        samples[k] = (now_ns() - t0) / 1e3;
        if (st != ATTN_OK)
            die("open failed on %s: %s: %s", conf_dir ? conf_dir : "the default conf",
                attn_status_name(st), attn_last_error());
        *num_plugins = attn_registry_plugin_count(reg);
        attn_registry_close(reg);
    }
    struct stats s = summarise(samples, runs);
    free(samples);
    return s;
}

/* ---- generated conf folders --------------------------------------------- */

static char temp_root[256];

static void write_plugin_inis(const char *dir, size_t count, const char *library)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        die("cannot create %s: %s", dir, strerror(errno));
    for (size_t k = 0; k < count; k++) {
        char path[1024]; /* the folder (< 512) plus a file name */
        snprintf(path, sizeof path, "%s/gen-%04zu.ini", dir, k);
        FILE *f = fopen(path, "w");
        if (!f)
            die("cannot write %s: %s", path, strerror(errno));
        /* Distinct priorities and names; all on arch cpu so a cpu select
         * has to walk every one of them. */
        fprintf(f,
                "[plugin]\nformat_version = 1.0\nname = gen-%04zu\nlibrary = %s\n"
                "priority = %zu\nenabled = true\narchs = cpu\n",
                k, library, k);
        fclose(f);
    }
}

static void remove_plugin_inis(const char *dir, size_t count)
{
    for (size_t k = 0; k < count; k++) {
        char path[1024]; /* the folder (< 512) plus a file name */
        snprintf(path, sizeof path, "%s/gen-%04zu.ini", dir, k);
        unlink(path);
    }
    rmdir(dir);
}

/* 1 when a file whose path contains `needle` is mapped into this process:
 * the way to see, from outside the library, that open loaded no plugin. */
static int library_is_mapped(const char *needle)
{
    char line[1024];
    int found = 0;
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps)
        return -1;
    while (fgets(line, sizeof line, maps))
        if (strstr(line, needle))
            found = 1;
    fclose(maps);
    return found;
}

/* ---- threads --------------------------------------------------------- */

#define NUM_THREADS 8

struct thread_job {
    attn_registry *reg;
    const attn_shape *shape;
    pthread_barrier_t *start;
    size_t batches, per_batch;
    double *samples; /* batches entries */
    double elapsed_ns;
    int mismatches;
    const char *expected;
};

static void *thread_main(void *arg)
{
    struct thread_job *job = arg;
    attn_selection sel;
    attn_selection_init(&sel);
    pthread_barrier_wait(job->start);
    double t_start = now_ns();
    for (size_t b = 0; b < job->batches; b++) {
        double t0 = thread_cpu_ns();
        for (size_t k = 0; k < job->per_batch; k++) {
            attn_registry_select(job->reg, job->shape, &sel);
            if (sel.backend_name != job->expected && (!sel.backend_name || !job->expected ||
                                                      strcmp(sel.backend_name, job->expected) != 0))
                job->mismatches++;
        }
        job->samples[b] = (thread_cpu_ns() - t0) / (double)job->per_batch;
    }
    job->elapsed_ns = now_ns() - t_start;
    return NULL;
}

/* Returns the stats of every thread's batches together; *throughput gets
 * selects per second over all threads. */
static struct stats measure_threads(attn_registry *reg, const attn_shape *shape, size_t batches,
                                    size_t per_batch, double *throughput, int *mismatches)
{
    pthread_t threads[NUM_THREADS];
    struct thread_job jobs[NUM_THREADS];
    pthread_barrier_t start;
    attn_selection sel;
    double *all = malloc(NUM_THREADS * batches * sizeof *all);
    double slowest = 0;
    if (!all)
        die("out of memory");
    attn_selection_init(&sel);
    attn_registry_select(reg, shape, &sel);
    pthread_barrier_init(&start, NULL, NUM_THREADS);
    for (int t = 0; t < NUM_THREADS; t++) {
        jobs[t] = (struct thread_job){.reg = reg,
                                      .shape = shape,
                                      .start = &start,
                                      .batches = batches,
                                      .per_batch = per_batch,
                                      .samples = all + (size_t)t * batches,
                                      .expected = sel.backend_name};
        if (pthread_create(&threads[t], NULL, thread_main, &jobs[t]) != 0)
            die("cannot start thread %d", t);
    }
    *mismatches = 0;
    for (int t = 0; t < NUM_THREADS; t++) {
        pthread_join(threads[t], NULL);
        *mismatches += jobs[t].mismatches;
        if (jobs[t].elapsed_ns > slowest)
            slowest = jobs[t].elapsed_ns;
    }
    pthread_barrier_destroy(&start);
    *throughput = (double)NUM_THREADS * (double)batches * (double)per_batch / (slowest / 1e9);
    struct stats s = summarise(all, NUM_THREADS * batches);
    free(all);
    return s;
}

/* ---- output ---------------------------------------------------------- */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void cpu_model(char *buf, size_t size)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");
    snprintf(buf, size, "unknown");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon += 2;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(buf, size, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

static const char *verdict(const struct result *r)
{
    if (r->target <= 0)
        return "";
    return r->stats.median <= r->target ? "meets" : "MISSES";
}

static void print_table(void)
{
    printf("%-38s %10s %10s %10s %10s  %-6s %-8s %s\n", "measurement", "median", "p10", "p90",
           "min", "unit", "target", "");
    for (size_t k = 0; k < num_results; k++) {
        const struct result *r = &results[k];
        char target[32] = "";
        if (r->target > 0)
            snprintf(target, sizeof target, "<= %g", r->target);
        printf("%-38s %10.1f %10.1f %10.1f %10.1f  %-6s %-8s %s\n", r->name, r->stats.median,
               r->stats.p10, r->stats.p90, r->stats.min, r->unit, target, verdict(r));
    }
}

static int write_json(const char *path, const char *command, double throughput, int mismatches,
                      int loaded_after_open)
{
    char cpu[256];
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "bench_select: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    cpu_model(cpu, sizeof cpu);
    fprintf(f, "{\n  \"bench\": \"select\",\n  \"attnreg_version\": ");
    json_string(f, attnreg_version_string());
    fprintf(f, ",\n  \"command\": ");
    json_string(f, command);
    fprintf(f, ",\n  \"cpu\": ");
    json_string(f, cpu);
    fprintf(f, ",\n  \"online_cpus\": %ld,\n", sysconf(_SC_NPROCESSORS_ONLN));
    fprintf(f, "  \"threads\": %d,\n  \"threaded_selects_per_second\": %.0f,\n", NUM_THREADS,
            throughput);
    fprintf(f, "  \"threaded_mismatches\": %d,\n", mismatches);
    fprintf(f, "  \"plugin_loaded_by_open\": %s,\n",
            loaded_after_open < 0 ? "null"
            : loaded_after_open   ? "true"
                                  : "false");
    fprintf(f, "  \"results\": [");
    for (size_t k = 0; k < num_results; k++) {
        const struct result *r = &results[k];
        fprintf(f, "%s\n    {\"name\": ", k ? "," : "");
        json_string(f, r->name);
        fprintf(f, ", \"what\": ");
        json_string(f, r->what);
        fprintf(f, ", \"unit\": ");
        json_string(f, r->unit);
        fprintf(f,
                ", \"median\": %.3f, \"p10\": %.3f, \"p90\": %.3f, \"min\": %.3f, "
                "\"samples\": %zu",
                r->stats.median, r->stats.p10, r->stats.p90, r->stats.min, r->stats.samples);
        if (r->target > 0)
            fprintf(f, ", \"target\": %g, \"meets_target\": %s", r->target,
                    r->stats.median <= r->target ? "true" : "false");
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    return fclose(f) == 0 ? 0 : -1;
}

/* ---- main ------------------------------------------------------------ */

static void usage(FILE *out)
{
    fputs("Usage: bench_select [--json OUT.json] [--conf DIR] [--quick]\n"
          "  --json PATH   also write the figures as JSON\n"
          "  --conf DIR    the conf folder to measure [the installation's default]\n"
          "  --quick       fewer repetitions (a smoke run, not for the record)\n",
          out);
}

int main(int argc, char **argv)
{
    const char *json_path = NULL, *conf_dir = NULL;
    int quick = 0;
    char command[1024];
    size_t used = 0;

    for (int i = 0; i < argc && used < sizeof command; i++)
        used +=
            (size_t)snprintf(command + used, sizeof command - used, "%s%s", i ? " " : "", argv[i]);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
            json_path = argv[++i];
        } else if (strcmp(argv[i], "--conf") == 0 && i + 1 < argc) {
            conf_dir = argv[++i];
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    const size_t scale = quick ? 10 : 1;

    /* Open scale first, before any plugin was loaded in this process, so the
     * "was the library mapped by open" check means something. */
    snprintf(temp_root, sizeof temp_root, "%s/attnreg-bench-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(temp_root))
        die("cannot create a temporary folder: %s", strerror(errno));

    char cpu_ref_library[1024] = "";
    {
        attn_registry *reg = open_or_die(conf_dir);
        for (size_t k = 0; k < attn_registry_plugin_count(reg); k++) {
            attn_plugin_info info = {.struct_size = sizeof info};
            if (attn_registry_plugin(reg, k, &info) == ATTN_OK && info.name &&
                strcmp(info.name, "cpu-ref") == 0 && info.library)
                snprintf(cpu_ref_library, sizeof cpu_ref_library, "%s", info.library);
        }
        attn_registry_close(reg);
    }

    size_t num_plugins = 0;
    int loaded_after_open = -1;
    {
        const size_t runs = 200 / scale;
        struct stats s = measure_open(conf_dir, runs, &num_plugins);
        char what[160];
        snprintf(what, sizeof what, "open + read the shipped conf (%zu plugins)", num_plugins);
        add_result("open_shipped_conf", what, "us", s, 5000);
    }

    static const size_t counts[] = {10, 100, 1000};
    for (int variant = 0; variant < 2; variant++) {
        const char *library =
            variant == 0 ? cpu_ref_library : "/nonexistent/attnreg-bench/libmissing.so";
        if (variant == 0 && !*cpu_ref_library)
            continue; /* no cpu-ref in this conf: only the missing-library run */
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            char dir[512], name[64], what[160];
            size_t n = counts[c], found = 0;
            const size_t runs = (n >= 1000 ? 20 : n >= 100 ? 50 : 200) / (quick ? 5 : 1);
            snprintf(dir, sizeof dir, "%s/%s-%zu", temp_root, variant == 0 ? "cpu-ref" : "missing",
                     n);
            write_plugin_inis(dir, n, library);
            struct stats s = measure_open(dir, runs, &found);
            if (found != n)
                die("%s: expected %zu plugins, the registry has %zu", dir, n, found);
            snprintf(name, sizeof name, "open_%zu_plugins_%s", n,
                     variant == 0 ? "cpu_ref_lib" : "missing_lib");
            snprintf(what, sizeof what, "open %zu generated INIs (library: %s)", n,
                     variant == 0 ? "cpu-ref .so" : "missing");
            add_result(name, what, "us", s, n == 1000 ? 100000 : 0);
            if (variant == 0 && n == 1000)
                loaded_after_open = library_is_mapped("libattn_cpu_ref");

            /* The stress figure: one select on the 1000-plugin registry, which
             * must load (or fail to load) and reject every one of them. */
            if (n == 1000) {
                attn_registry *reg = open_or_die(dir);
                attn_shape shape;
                attn_selection sel;
                attn_shape_init(&shape);
                attn_selection_init(&sel);
                double t0 = now_ns();
                attn_status st = attn_registry_select(reg, &shape, &sel);
                double elapsed_us = (now_ns() - t0) / 1e3;
                struct stats one = {elapsed_us, elapsed_us, elapsed_us, elapsed_us, 1};
                snprintf(name, sizeof name, "first_select_1000_plugins_%s",
                         variant == 0 ? "cpu_ref_lib" : "missing_lib");
                snprintf(what, sizeof what,
                         "first select, 1000 candidates each loaded and rejected (%s)",
                         attn_status_name(st));
                add_result(name, what, "us", one, 0);
                attn_registry_close(reg);
            }
            remove_plugin_inis(dir, n);
        }
    }
    rmdir(temp_root);

    attn_registry *reg = open_or_die(conf_dir);
    attn_shape mtp, generic, fallback;
    mtp_shape(&mtp);
    generic_shape(&generic);
    fallback_shape(&fallback);

    add_result("select_cached", "select, cache hit (MTP shape -> aiter-mtp-gfx950)", "ns",
               measure_cached(reg, &mtp, 2000 / scale, 1000), 50);
    add_result("select_cached_fallback", "select, cache hit (gfx942 fp8 shape, fallback)", "ns",
               measure_cached(reg, &fallback, 2000 / scale, 1000), 50);

    int32_t kv_len = 600; /* > 512, so the MTP shape stays accepted */
    const char *backend = NULL;
    char what[160], backend_buf[64];
    struct stats s = measure_uncached(conf_dir, &mtp, 100000 / scale, &kv_len, &backend,
                                      backend_buf, sizeof backend_buf);
    snprintf(what, sizeof what, "select, cache miss, first candidate accepts (%s)", backend);
    add_result("select_uncached_first", what, "ns", s, 2000);
    s = measure_uncached(conf_dir, &generic, 100000 / scale, &kv_len, &backend, backend_buf,
                         sizeof backend_buf);
    snprintf(what, sizeof what, "select, cache miss, second candidate accepts (%s)", backend);
    add_result("select_uncached_second", what, "ns", s, 2000);
    s = measure_uncached(conf_dir, &fallback, 100000 / scale, &kv_len, &backend, backend_buf,
                         sizeof backend_buf);
    snprintf(what, sizeof what, "select, cache miss, fallback pass needed (%s)", backend);
    add_result("select_uncached_fallback", what, "ns", s, 2000);

    add_result("explain_mtp", "explain + free (MTP shape, every candidate)", "ns",
               measure_explain(reg, &mtp, 20000 / scale), 0);
    add_result("explain_fallback", "explain + free (gfx942 fp8 shape, 2 passes)", "ns",
               measure_explain(reg, &fallback, 20000 / scale), 0);

    double throughput = 0;
    int mismatches = 0;
    s = measure_threads(reg, &mtp, 500 / scale, 1000, &throughput, &mismatches);
    add_result("select_cached_8_threads",
               "select, cache hit, 8 threads at once (thread CPU time per call)", "ns", s, 50);
    attn_registry_close(reg);

    print_table();
    printf("8 threads: %.1f M selects/s in total, %d mismatched answers\n", throughput / 1e6,
           mismatches);
    if (loaded_after_open >= 0)
        printf("open of 1000 INIs naming the cpu-ref library mapped it: %s\n",
               loaded_after_open ? "yes (open loaded a plugin!)" : "no");
    if (json_path && write_json(json_path, command, throughput, mismatches, loaded_after_open))
        return 1;
    return mismatches ? 1 : 0;
}
