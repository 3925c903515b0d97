/* SPDX-License-Identifier: Apache-2.0 */
/* registry.c — opening (options, environment, conf search path), listing,
 * closing. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "candidate.h"
#include "diag.h"
#include "internal.h"

#ifndef ATTNREG_FALLBACK_CONF_DIR
#define ATTNREG_FALLBACK_CONF_DIR "/usr/local/share/attnreg/conf"
#endif

/* Numbers registries in log lines (reg=N), in opening order. */
static atomic_uint registries_opened;

ATTNREG_API void attn_registry_options_init_sized(attn_registry_options *o, size_t size)
{
    attn_registry_options full;
    memset(&full, 0, sizeof full);
    full.log_level = -1;
    attn_init_sized(o, size, &full, sizeof full);
}

/* Hosts built before 0.3 call this symbol with a 0.2 struct at least. */
ATTNREG_API void(attn_registry_options_init)(attn_registry_options *o)
{
    attn_registry_options_init_sized(o, ATTN_REGISTRY_OPTIONS_SIZE_0_2);
}

#ifndef ATTNREG_LIB_TO_CONF_DIR
#define ATTNREG_LIB_TO_CONF_DIR "../share/attnreg/conf"
#endif
#ifndef ATTNREG_SYSCONF_CONF_DIR
#define ATTNREG_SYSCONF_CONF_DIR "../etc/attnreg/conf.d"
#endif

/* A default conf folder: an absolute path as it is, a relative one found from
 * this library's own location, so the build tree and any installation prefix
 * work alike (<libdir>/libattnreg.so -> <libdir>/../share/attnreg/conf, or
 * ../../share/... under a multiarch libdir). */
static char *default_conf_dir(const char *configured, const char *fallback)
{
    if (configured[0] == '/')
        return attn_strdup(configured);
    Dl_info info;
    if (dladdr((void *)attn_registry_open, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        if (slash) {
            char *dir =
                attn_asprintf("%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname, configured);
            /* Shown in listings and messages: the short real path reads better. */
            char real[PATH_MAX];
            if (dir && realpath(dir, real)) {
                free(dir);
                return attn_strdup(real);
            }
            /* Absent (the admin folder usually is): the library's real
             * folder, then `configured` with each leading ../ taken off it. */
            char *libdir = attn_asprintf("%.*s", (int)(slash - info.dli_fname), info.dli_fname);
            if (dir && libdir && realpath(libdir, real)) {
                const char *rest = configured;
                char *end;
                while (strncmp(rest, "../", 3) == 0 && (end = strrchr(real, '/')) && end != real) {
                    *end = '\0';
                    rest += 3;
                }
                free(dir);
                dir = attn_asprintf("%s/%s", real, rest);
            }
            free(libdir);
            return dir;
        }
    }
    return fallback ? attn_strdup(fallback) : NULL;
}

/* Records a conf folder and where it came from (the search order of
 * attn_registry_conf_path_origin); 0 when it is to be skipped because the
 * same folder (by real path) was already searched, e.g. the default folder
 * also named in ATTNREG_CONF_PATH: reading it twice would report every plugin
 * as a duplicate of itself. */
static int add_conf_path(attn_registry *reg, const char *path, const char *origin)
{
    char real[PATH_MAX];
    const char *shown = realpath(path, real) ? real : path;
    for (size_t i = 0; i < reg->num_conf_paths; i++) {
        if (strcmp(reg->conf_paths[i], shown) == 0) {
            attn_log(&reg->logger, ATTN_LOG_DEBUG, "conf folder %s already searched", path);
            return 0;
        }
    }
    char **p = realloc(reg->conf_paths, (reg->num_conf_paths + 1) * sizeof *p);
    if (!p)
        return 0;
    reg->conf_paths = p;
    const char **o = realloc(reg->conf_path_origins, (reg->num_conf_paths + 1) * sizeof *o);
    if (!o)
        return 0;
    reg->conf_path_origins = o;
    reg->conf_path_origins[reg->num_conf_paths] = origin;
    reg->conf_paths[reg->num_conf_paths++] = attn_strdup(shown);
    return 1;
}

static int compare_candidates(const void *a, const void *b)
{
    const attn_candidate *x = *(const attn_candidate *const *)a;
    const attn_candidate *y = *(const attn_candidate *const *)b;
    if (x->priority != y->priority)
        return x->priority > y->priority ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void disable_backend(attn_registry *reg, const char *name, const char *source)
{
    for (size_t i = 0; i < reg->num_candidates; i++) {
        if (strcmp(reg->candidates[i]->name, name) == 0) {
            reg->candidates[i]->host_disabled = 1;
            return;
        }
    }
    attn_log(&reg->logger, ATTN_LOG_WARN, "%s names unknown backend '%s'", source, name);
}

ATTNREG_API attn_status attn_registry_open(const attn_registry_options *options,
                                           attn_registry **out)
{
    attn_clear_error();
    if (!out)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_open: registry is NULL");
    *out = NULL;
    attn_registry_options opt;
    attn_registry_options_init(&opt);
    if (options) {
        if (options->struct_size < ATTN_REGISTRY_OPTIONS_MIN_SIZE)
            return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                             "options struct_size %u too small; call attn_registry_options_init()",
                             options->struct_size);
        attn_copy_versioned(&opt, sizeof opt, options,
                            options->struct_size < sizeof opt ? options->struct_size : sizeof opt);
    }
    attn_registry *reg = calloc(1, sizeof *reg);
    if (!reg)
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    attn_diag_init(reg);
    attn_cache_init(reg);
    pthread_mutex_init(&reg->life_lock, NULL);

    const int use_env = !opt.skip_env;
    reg->logger.fn = opt.log_fn;
    reg->logger.user = opt.log_user;
    reg->logger.level = ATTN_LOG_WARN;
    reg->logger.id = (unsigned)atomic_fetch_add(&registries_opened, 1) + 1;
    const char *log_file = use_env && !opt.log_fn ? attn_env_get("ATTNREG_LOG_FILE") : NULL;
    if (log_file && *log_file) {
        /* Appending, so several processes (and registries) can share one
         * file; each line is written whole and flushed. */
        char why[128];
        int fd = attn_open_append_regular(log_file, why, sizeof why);
        reg->logger.file = fd >= 0 ? fdopen(fd, "a") : NULL;
        if (fd >= 0 && !reg->logger.file) {
            snprintf(why, sizeof why, "%s", strerror(errno));
            close(fd);
        }
        if (!reg->logger.file)
            attn_log(&reg->logger, ATTN_LOG_WARN,
                     "ATTNREG_LOG_FILE=%s cannot be opened for appending: %s; logging to stderr",
                     log_file, why);
    }
    const char *env_log = use_env ? attn_env_get("ATTNREG_LOG") : NULL;
    if (opt.log_level >= ATTN_LOG_DEBUG && opt.log_level <= ATTN_LOG_OFF) {
        reg->logger.level = (attn_log_level)opt.log_level;
    } else if (env_log && *env_log) {
        if (!attn_log_level_from_name(env_log, &reg->logger.level))
            attn_log(&reg->logger, ATTN_LOG_WARN,
                     "ATTNREG_LOG=%s is not one of debug, info, warn, error, off; using warn",
                     env_log);
    }
    if (use_env)
        attn_env_check_once(&reg->logger);
    reg->strict = opt.strict != 0;
    reg->probe_out_of_process = opt.probe_out_of_process != 0;
    /* A plugin whose constructor never returns would hang the probe: the
     * child is killed after this many seconds. */
    reg->probe_timeout_s = ATTN_PROBE_TIMEOUT_DEFAULT_S;
    const char *env_probe = use_env ? attn_env_get("ATTNREG_PROBE_TIMEOUT") : NULL;
    if (env_probe && *env_probe) {
        char *end = NULL;
        errno = 0;
        long v = strtol(env_probe, &end, 10);
        if (errno || end == env_probe || *end || v < 1 || v > 3600)
            attn_log(&reg->logger, ATTN_LOG_WARN,
                     "ATTNREG_PROBE_TIMEOUT=%.64s is not a number of seconds in [1, 3600]; using "
                     "%d",
                     env_probe, ATTN_PROBE_TIMEOUT_DEFAULT_S);
        else
            reg->probe_timeout_s = (int32_t)v;
    }
    reg->runnable = opt.runnable != 0;
    const char *forced = opt.forced_backend;
    if (!forced && use_env) {
        const char *env = attn_env_get("ATTNREG_BACKEND");
        if (env && *env)
            forced = env;
    }
    reg->forced_backend = attn_strdup(forced);

    /* The search order: the host's folders, ATTNREG_CONF_PATH, the admin's
     * <sysconfdir>/attnreg/conf.d, the shipped <datadir>/attnreg/conf. A
     * plugin name defined in an earlier folder overrides a later one. */
    for (uint32_t i = 0; i < opt.num_conf_paths && opt.conf_paths; i++)
        if (opt.conf_paths[i] && add_conf_path(reg, opt.conf_paths[i], "option"))
            attn_conf_load_dir(reg, reg->conf_paths[reg->num_conf_paths - 1], 1);
    const char *env_path =
        use_env && !opt.skip_env_conf_path ? attn_env_get("ATTNREG_CONF_PATH") : NULL;
    if (env_path && *env_path) {
        char *copy = attn_strdup(env_path), *save = NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
            if (add_conf_path(reg, dir, "ATTNREG_CONF_PATH"))
                attn_conf_load_dir(reg, reg->conf_paths[reg->num_conf_paths - 1], 1);
        free(copy);
    }
    if (!opt.skip_default_conf) {
        char *dir = default_conf_dir(ATTNREG_SYSCONF_CONF_DIR, NULL);
        if (dir && add_conf_path(reg, dir, "sysconf"))
            attn_conf_load_dir(reg, reg->conf_paths[reg->num_conf_paths - 1], 0);
        free(dir);
        dir = default_conf_dir(ATTNREG_LIB_TO_CONF_DIR, ATTNREG_FALLBACK_CONF_DIR);
        if (dir && add_conf_path(reg, dir, "datadir"))
            attn_conf_load_dir(reg, reg->conf_paths[reg->num_conf_paths - 1], 0);
        free(dir);
    }
    /* The name index holds pre-sort positions: only conf reading uses it. */
    strmap_free(&reg->candidate_names, 0);
    if (reg->num_candidates)
        qsort(reg->candidates, reg->num_candidates, sizeof *reg->candidates, compare_candidates);

    for (uint32_t i = 0; i < opt.num_disabled_backends && opt.disabled_backends; i++)
        if (opt.disabled_backends[i])
            disable_backend(reg, opt.disabled_backends[i], "the disabled_backends option");
    const char *env_disable = use_env ? attn_env_get("ATTNREG_DISABLE") : NULL;
    if (env_disable && *env_disable) {
        char *copy = attn_strdup(env_disable), *save = NULL;
        for (char *n = strtok_r(copy, ", ", &save); n; n = strtok_r(NULL, ", ", &save))
            disable_backend(reg, n, "ATTNREG_DISABLE");
        free(copy);
    }
    if (reg->forced_backend) {
        int known = 0;
        for (size_t i = 0; i < reg->num_candidates; i++)
            known |= strcmp(reg->candidates[i]->name, reg->forced_backend) == 0;
        if (!known)
            attn_log(&reg->logger, ATTN_LOG_WARN,
                     "forced backend '%s' is not registered; every select will fail",
                     reg->forced_backend);
    }

    if (opt.fail_on_conf_error) {
        for (size_t i = 0; i < reg->num_diags; i++) {
            if (reg->diags[i].status != ATTN_OK) {
                attn_status st = reg->diags[i].status == ATTN_ERR_IO ? ATTN_ERR_IO : ATTN_ERR_CONF;
                attn_fail(st, "%s", reg->diags[i].message);
                attn_registry_close(reg);
                return st;
            }
        }
    }
    *out = reg;
    return ATTN_OK;
}

static void registry_free(attn_registry *reg);

ATTNREG_API void attn_registry_close(attn_registry *reg)
{
    if (!reg)
        return;
    /* Backends still alive keep their plugins loaded: unloading a library
     * under a live backend would crash its next call. */
    pthread_mutex_lock(&reg->life_lock);
    int pending = reg->live_backends > 0;
    reg->close_pending = pending;
    pthread_mutex_unlock(&reg->life_lock);
    if (pending) {
        attn_log(&reg->logger, ATTN_LOG_DEBUG,
                 "close with %zu live backends: the registry is freed by the last "
                 "attn_backend_destroy",
                 reg->live_backends);
        return;
    }
    registry_free(reg);
}

void attn_registry_backend_created(attn_registry *reg)
{
    pthread_mutex_lock(&reg->life_lock);
    reg->live_backends++;
    pthread_mutex_unlock(&reg->life_lock);
}

void attn_registry_backend_destroyed(attn_registry *reg)
{
    pthread_mutex_lock(&reg->life_lock);
    int last = --reg->live_backends == 0 && reg->close_pending;
    pthread_mutex_unlock(&reg->life_lock);
    if (last)
        registry_free(reg);
}

static void registry_free(attn_registry *reg)
{
    attn_cache_free(reg);
    for (size_t i = 0; i < reg->num_candidates; i++) {
        attn_candidate_unload(reg->candidates[i]);
        attn_candidate_free(reg->candidates[i]);
    }
    free(reg->candidates);
    for (size_t i = 0; i < reg->num_rules; i++)
        attn_conf_free_rule(&reg->rules[i]);
    free(reg->rules);
    attn_diag_free(reg);
    for (size_t i = 0; i < reg->num_conf_paths; i++)
        free(reg->conf_paths[i]);
    free(reg->conf_paths);
    free(reg->conf_path_origins);
    free(reg->forced_backend);
    if (reg->logger.file)
        fclose(reg->logger.file);
    pthread_mutex_destroy(&reg->life_lock);
    free(reg);
}

ATTNREG_API size_t attn_registry_conf_path_count(const attn_registry *reg)
{
    return reg ? reg->num_conf_paths : 0;
}

ATTNREG_API const char *attn_registry_conf_path(const attn_registry *reg, size_t index)
{
    return reg && index < reg->num_conf_paths ? reg->conf_paths[index] : NULL;
}

ATTNREG_API const char *attn_registry_conf_path_origin(const attn_registry *reg, size_t index)
{
    return reg && index < reg->num_conf_paths ? reg->conf_path_origins[index] : NULL;
}

ATTNREG_API size_t attn_registry_plugin_count(const attn_registry *reg)
{
    return reg ? reg->num_candidates : 0;
}

ATTNREG_API attn_status attn_registry_plugin(const attn_registry *reg, size_t index,
                                             attn_plugin_info *out)
{
    if (!reg || !out || out->struct_size < ATTN_PLUGIN_INFO_MIN_SIZE ||
        index >= reg->num_candidates)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_plugin: bad argument");
    const attn_candidate *c = reg->candidates[index];
    attn_plugin_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = out->struct_size;
    full.name = c->name;
    full.priority = c->priority;
    full.enabled = c->enabled && !c->host_disabled;
    full.archs = c->archs_text;
    full.library = c->library;
    full.conf_file = c->conf_file;
    full.conf_line = c->name_line;
    full.candidate = c;
    attn_copy_versioned(out, out->struct_size, &full, sizeof full);
    return ATTN_OK;
}

ATTNREG_API attn_status attn_registry_list(const attn_registry *reg, attn_plugin_info *infos,
                                           size_t capacity, size_t *count)
{
    if (!reg || !count || (capacity && !infos))
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_list: bad argument");
    /* The array has the host's stride: infos[0].struct_size (0 = this
     * library's size), never this library's sizeof. */
    uint32_t size =
        capacity && infos[0].struct_size ? infos[0].struct_size : (uint32_t)sizeof *infos;
    for (size_t i = 0; i < capacity && i < reg->num_candidates; i++) {
        attn_plugin_info *info = (attn_plugin_info *)((char *)infos + i * size);
        info->struct_size = size;
        attn_registry_plugin(reg, i, info);
    }
    *count = reg->num_candidates;
    return ATTN_OK;
}

ATTNREG_API int attn_plugin_info_has_arch(const attn_plugin_info *info, const char *arch)
{
    if (!info || !info->candidate || !arch)
        return 0;
    const attn_candidate *c = info->candidate;
    for (uint32_t i = 0; i < c->num_archs; i++)
        if (strcmp(c->archs[i], arch) == 0)
            return 1;
    return 0;
}

ATTNREG_API attn_status attn_registry_load_plugin(attn_registry *reg, size_t index,
                                                  attn_plugin_load_info *out)
{
    if (!reg || !out || out->struct_size < ATTN_PLUGIN_LOAD_INFO_MIN_SIZE ||
        index >= reg->num_candidates)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_load_plugin: bad argument");
    attn_candidate *c = reg->candidates[index];
    int ok = attn_candidate_ensure_loaded(c);
    attn_plugin_load_info full;
    memset(&full, 0, sizeof full);
    full.struct_size = out->struct_size;
    full.status = ok ? ATTN_OK : c->load_status;
    full.reason = ok ? ATTN_REASON_NONE : c->load_reason;
    full.message = ok ? "" : (c->load_message ? c->load_message : "");
    if (ok) {
        full.version = c->desc.version;
        full.description = c->desc.description ? c->desc.description : "";
        full.built_archs = c->built_archs_text ? c->built_archs_text : "";
        full.abi_major = c->desc.abi_major;
        full.abi_minor = c->desc.abi_minor;
        full.num_predicates = c->desc.num_predicates;
        full.arch_limits = c->arch_limits;
        full.num_arch_limits = c->num_arch_limits;
        full.graph_capturable = c->desc.graph_capturable ? 1 : 0;
    }
    attn_copy_versioned(out, out->struct_size, &full, sizeof full);
    if (!ok)
        return attn_fail(full.status, "%s: %s", c->name, full.message);
    return ATTN_OK;
}

ATTNREG_API attn_status attn_registry_probe_devices(attn_registry *reg, size_t index,
                                                    attn_device_info *devices, uint32_t capacity,
                                                    uint32_t *count)
{
    if (!reg || !count || index >= reg->num_candidates || (capacity && !devices))
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_probe_devices: bad argument");
    *count = 0;
    attn_candidate *c = reg->candidates[index];
    attn_status st = attn_candidate_probe(c);
    if (st != ATTN_OK) {
        const char *msg = c->probe_message ? c->probe_message : c->load_message;
        return attn_fail(st, "%s", msg ? msg : attn_status_message(st));
    }
    /* The host's array has the host's stride: devices[0].struct_size (0 =
     * this library's size), never this library's sizeof. */
    uint32_t size =
        capacity && devices[0].struct_size ? devices[0].struct_size : (uint32_t)sizeof *devices;
    if (capacity && size < ATTN_DEVICE_INFO_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "attn_registry_probe_devices: device struct_size %u is smaller than the "
                         "oldest layout",
                         size);
    for (uint32_t i = 0; i < c->num_devices && i < capacity; i++) {
        attn_device_info *d = (attn_device_info *)((char *)devices + (size_t)i * size);
        attn_copy_versioned(d, size, &c->devices[i], sizeof c->devices[i]);
        d->struct_size = size;
    }
    *count = c->num_devices;
    return ATTN_OK;
}
