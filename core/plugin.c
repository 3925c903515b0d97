/* SPDX-License-Identifier: Apache-2.0 */
/* plugin.c — loading a plugin library on first need: dlopen, the entry
 * symbol, ABI negotiation, descriptor checks, init. Every failure becomes a
 * recorded reason on the candidate (a rejection in selection), never a crash.
 * Loading happens once per candidate, under its lock; readers check the
 * state lock-free. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi_frozen.h"
#include "candidate.h"
#include "diag.h"
#include "internal.h"

/* Bounds on what a descriptor may declare. */
#define DESC_STRING_MAX 256 /* name, version, predicate names, with the NUL */
#define DESC_TEXT_MAX 4096  /* description */
#define DESC_MAX_PREDICATES 1024
#define DESC_MAX_ARCHS 256
/* Longest log line a plugin can hand the host. */
#define PLUGIN_LOG_MAX 4096

static void plugin_log(void *host, int32_t level, const char *message)
{
    attn_candidate *c = host;
    if (level < ATTN_LOG_DEBUG || level > ATTN_LOG_ERROR)
        level = ATTN_LOG_INFO;
    /* The plugin's text is capped: a message without its NUL must not run
     * the logger through the plugin's memory. */
    attn_log_plugin(&c->registry->logger, (attn_log_level)level, c->name, "%.*s",
                    (int)(message ? strnlen(message, PLUGIN_LOG_MAX) : 0), message ? message : "");
}

static int copy_arch_limits(attn_candidate *c);

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static int
load_fail(attn_candidate *c, attn_status status, attn_reason reason, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(c->load_message);
    c->load_message = attn_vasprintf(fmt, ap);
    va_end(ap);
    c->load_status = status;
    c->load_reason = reason;
    attn_diag_add(c->registry, status, c->conf_file, c->name_line, c->name, "%s: %s", c->name,
                  c->load_message ? c->load_message : "");
    if (c->dl_handle) {
        dlclose(c->dl_handle);
        c->dl_handle = NULL;
    }
    return 0;
}

static int load_now(attn_candidate *c)
{
    struct stat st;
    if (stat(c->library, &st) != 0)
        return load_fail(c, ATTN_ERR_LOAD, ATTN_REASON_LOAD_FAILED,
                         "library %s cannot be found: %s", c->library, strerror(errno));
    /* A FIFO named as the library would block dlopen forever, a device
     * would be read without end: only a regular file is opened. */
    char why[256];
    int fd = attn_open_regular(c->library, &st, why, sizeof why);
    if (fd < 0)
        return load_fail(c, ATTN_ERR_LOAD, ATTN_REASON_LOAD_FAILED, "library %s: %s", c->library,
                         why);
    close(fd);
    if (attn_trust_check(c->registry, &st, c->library, "plugin library", c->name, ATTN_ERR_LOAD) <
        0)
        return load_fail(c, ATTN_ERR_LOAD, ATTN_REASON_LOAD_FAILED,
                         "library %s is writable by others or not owned by root or this "
                         "process's user; not loaded in a privileged process",
                         c->library);
    const char *slash = strrchr(c->library, '/');
    if (slash) {
        char *dir =
            attn_asprintf("%.*s", slash == c->library ? 1 : (int)(slash - c->library), c->library);
        struct stat dst;
        int refused =
            dir && stat(dir, &dst) == 0 &&
            attn_trust_check(c->registry, &dst, dir, "plugin folder", c->name, ATTN_ERR_LOAD) < 0;
        free(dir);
        if (refused)
            return load_fail(c, ATTN_ERR_LOAD, ATTN_REASON_LOAD_FAILED,
                             "the folder of library %s is writable by others or not owned by "
                             "root or this process's user; not loaded in a privileged process",
                             c->library);
    }
    if (c->registry->probe_out_of_process) {
        char crash[512];
        if (!attn_probe_in_child(c, crash, sizeof crash))
            return load_fail(c, ATTN_ERR_LOAD, ATTN_REASON_LOAD_FAILED, "%s", crash);
    }
    return attn_candidate_load_library(c);
}

int attn_candidate_load_library(attn_candidate *c)
{
    dlerror();
    /* RTLD_LOCAL: two plugins may define the same internal symbols. */
    c->dl_handle = dlopen(c->library, RTLD_NOW | RTLD_LOCAL);
    if (!c->dl_handle) {
        const char *err = dlerror();
        return load_fail(c, ATTN_ERR_LOAD, ATTN_REASON_LOAD_FAILED, "dlopen failed: %s",
                         err ? err : "unknown error");
    }
    dlerror();
    void *sym = dlsym(c->dl_handle, ATTN_PLUGIN_ENTRY_SYMBOL);
    if (!sym)
        return load_fail(c, ATTN_ERR_LOAD, ATTN_REASON_NO_ENTRY_SYMBOL,
                         "%s does not export %s (write the plugin with ATTN_PLUGIN_DEFINE)",
                         c->library, ATTN_PLUGIN_ENTRY_SYMBOL);
    attn_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* object pointer to function pointer, POSIX-style */
    const attn_plugin_descriptor *d = entry(ATTN_PLUGIN_ABI_MAJOR, ATTN_PLUGIN_ABI_MINOR);
    if (!d)
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                         "%s returned no descriptor for host ABI %d.%d (built for another ABI "
                         "major?)",
                         ATTN_PLUGIN_ENTRY_SYMBOL, ATTN_PLUGIN_ABI_MAJOR, ATTN_PLUGIN_ABI_MINOR);
    /* Enough to read the ABI version first, so that a descriptor of another
     * major is refused as such, whatever its size. */
    if (d->struct_size < offsetof(attn_plugin_descriptor, abi_minor) + sizeof(uint32_t))
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                         "descriptor struct_size %u is too small to be a descriptor",
                         d->struct_size);
    if (d->abi_major != ATTN_PLUGIN_ABI_MAJOR)
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_ABI_MISMATCH,
                         "plugin ABI %u.%u has another major than this host's %d.%d", d->abi_major,
                         d->abi_minor, ATTN_PLUGIN_ABI_MAJOR, ATTN_PLUGIN_ABI_MINOR);
    if (d->abi_minor > ATTN_PLUGIN_ABI_MINOR)
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_ABI_MISMATCH,
                         "plugin ABI %u.%u is newer than this host's %d.%d; upgrade attnreg",
                         d->abi_major, d->abi_minor, ATTN_PLUGIN_ABI_MAJOR, ATTN_PLUGIN_ABI_MINOR);
    if (d->struct_size < ATTN_PLUGIN_DESCRIPTOR_MIN_SIZE)
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                         "descriptor struct_size %u is smaller than ABI 1.0's %zu", d->struct_size,
                         (size_t)ATTN_PLUGIN_DESCRIPTOR_MIN_SIZE);
    /* Read only what the plugin's struct_size covers; newer fields stay
     * zero, which every optional field treats as "absent". */
    attn_copy_versioned(&c->desc, sizeof c->desc, d, d->struct_size);
    /* ABI 1.3's forward_features sits in what was the tail padding of 1.2's
     * descriptor, so a 1.2 plugin's struct_size covers it: whatever bytes a
     * 1.0-1.2 plugin has there are no promise, and never opt it into K/V
     * strides or the LSE output it would not honour. */
    if (c->desc.abi_minor < 3)
        c->desc.forward_features = 0;
    const attn_plugin_descriptor *cd = &c->desc;
    if (!cd->name || !cd->version)
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                         "descriptor lacks a name or a version");
    /* The descriptor's strings and counts are the plugin's word: each must
     * end within a bound before the host reads it as a string or an array. */
    if (strnlen(cd->name, DESC_STRING_MAX) == DESC_STRING_MAX ||
        strnlen(cd->version, DESC_STRING_MAX) == DESC_STRING_MAX ||
        (cd->description && strnlen(cd->description, DESC_TEXT_MAX) == DESC_TEXT_MAX))
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                         "descriptor name or version longer than %d bytes, or description "
                         "longer than %d",
                         DESC_STRING_MAX - 1, DESC_TEXT_MAX - 1);
    if (cd->num_predicates > DESC_MAX_PREDICATES)
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                         "descriptor declares %u predicates, more than %d", cd->num_predicates,
                         DESC_MAX_PREDICATES);
    size_t num_built = 0;
    for (const char *const *a = cd->built_archs; a && *a; a++, num_built++)
        if (num_built == DESC_MAX_ARCHS || strnlen(*a, ATTN_ARCH_MAX) == ATTN_ARCH_MAX)
            return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                             "built_archs holds more than %d archs or one longer than %d "
                             "characters (or is not NULL-terminated)",
                             DESC_MAX_ARCHS, ATTN_ARCH_MAX - 1);
    if (strcmp(cd->name, c->name) != 0)
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                         "the library calls itself '%s' but %s:%d names it '%s'", cd->name,
                         c->conf_file, c->name_line, c->name);
    if (!cd->create || !cd->forward || !cd->destroy || !cd->workspace_size)
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                         "descriptor lacks create, forward, destroy or workspace_size");
    if (cd->num_predicates == 0 || !cd->predicates)
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                         "descriptor declares no capability predicates");
    for (uint32_t i = 0; i < cd->num_predicates; i++)
        if (!cd->predicates[i].check || !cd->predicates[i].name ||
            strnlen(cd->predicates[i].name, DESC_STRING_MAX) == DESC_STRING_MAX)
            return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                             "predicate %u has no name (or one longer than %d bytes) or no check "
                             "function",
                             i, DESC_STRING_MAX - 1);

    strbuf sb = {0};
    for (const char *const *a = cd->built_archs; a && *a; a++)
        strbuf_printf(&sb, "%s%s", a == cd->built_archs ? "" : ", ", *a);
    c->built_archs_text = strbuf_take(&sb);
    if (!copy_arch_limits(c))
        return 0;

    c->services.struct_size = sizeof c->services;
    c->services.log = plugin_log;
    c->services.host = c;
    c->ctx.struct_size = sizeof c->ctx;
    c->ctx.services = &c->services;
    c->ctx.params = c->params;
    c->ctx.num_params = c->num_params;
    c->ctx.conf_file = c->conf_file;
    if (cd->init) {
        attn_status init_status = cd->init(&c->ctx);
        if (init_status != ATTN_OK)
            return load_fail(c, ATTN_ERR_INIT_FAILED, ATTN_REASON_INIT_FAILED,
                             "init failed with %s", attn_status_name(init_status));
    }
    c->initialised = 1;
    c->load_status = ATTN_OK;
    c->load_reason = ATTN_REASON_NONE;
    attn_log(&c->registry->logger, ATTN_LOG_DEBUG, "loaded %s %s (ABI %u.%u) from %s", cd->name,
             cd->version, cd->abi_major, cd->abi_minor, c->library);
    return 1;
}

/* ABI 1.2: a private copy of the plugin's per-arch limits, each entry read
 * only as far as its struct_size covers and its arch name terminated here,
 * so that nothing later reads plugin memory for them. */
static int copy_arch_limits(attn_candidate *c)
{
    enum { MAX_ARCH_LIMITS = 64 };
    const attn_plugin_descriptor *cd = &c->desc;
    if (!cd->arch_limits || cd->num_arch_limits == 0)
        return 1;
    if (cd->num_arch_limits > MAX_ARCH_LIMITS)
        return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                         "descriptor declares %u arch limits (at most %d)", cd->num_arch_limits,
                         MAX_ARCH_LIMITS);
    c->arch_limits = calloc(cd->num_arch_limits, sizeof *c->arch_limits);
    if (!c->arch_limits)
        return load_fail(c, ATTN_ERR_NO_MEMORY, ATTN_REASON_LOAD_FAILED, "out of memory");
    for (uint32_t i = 0; i < cd->num_arch_limits; i++) {
        const attn_arch_limits *in = &cd->arch_limits[i];
        if (in->struct_size < ATTN_ARCH_LIMITS_MIN_SIZE) {
            attn_candidate_free_limits(c);
            return load_fail(c, ATTN_ERR_ABI, ATTN_REASON_BAD_DESCRIPTOR,
                             "arch_limits[%u].struct_size %u is too small", i, in->struct_size);
        }
        attn_copy_versioned(&c->arch_limits[i], sizeof c->arch_limits[i], in, in->struct_size);
        c->arch_limits[i].struct_size = sizeof c->arch_limits[i];
        c->arch_limits[i].arch[ATTN_ARCH_MAX - 1] = '\0';
    }
    c->num_arch_limits = cd->num_arch_limits;
    return 1;
}

int attn_candidate_ensure_loaded(attn_candidate *c)
{
    int state = atomic_load_explicit(&c->load_state, memory_order_acquire);
    if (state != LOAD_NOT_TRIED)
        return state == LOAD_OK;
    pthread_mutex_lock(&c->load_lock);
    state = atomic_load_explicit(&c->load_state, memory_order_relaxed);
    if (state == LOAD_NOT_TRIED) {
        state = load_now(c) ? LOAD_OK : LOAD_FAILED;
        atomic_store_explicit(&c->load_state, state, memory_order_release);
    }
    pthread_mutex_unlock(&c->load_lock);
    return state == LOAD_OK;
}

void attn_candidate_unload(attn_candidate *c)
{
    if (c->initialised && c->desc.fini)
        c->desc.fini(&c->ctx);
    c->initialised = 0;
    if (c->dl_handle) {
        dlclose(c->dl_handle);
        c->dl_handle = NULL;
    }
}

int attn_candidate_has_built_arch(const attn_candidate *c, const char *arch)
{
    for (const char *const *a = c->desc.built_archs; a && *a; a++)
        if (strcmp(*a, arch) == 0)
            return 1;
    return 0;
}

attn_status attn_candidate_probe(attn_candidate *c)
{
    if (!attn_candidate_ensure_loaded(c))
        return c->load_status;
    pthread_mutex_lock(&c->load_lock);
    if (!c->probed) {
        c->probed = 1;
        if (!c->desc.probe_devices) {
            c->probe_status = ATTN_ERR_NO_DEVICE;
            c->probe_message = attn_asprintf("%s offers no device probe", c->name);
        } else {
            enum { MAX_DEVICES = 64 };
            char err[256] = "";
            uint32_t count = 0;
            /* The plugin indexes the array with its own sizeof: hand it the
             * layout of the ABI it was built for (1.1's, the only one so
             * far), whatever attn_device_info is in this host's headers. */
            attn_device_info_1_1 *found = calloc(MAX_DEVICES, sizeof *found);
            c->devices = calloc(MAX_DEVICES, sizeof *c->devices);
            for (uint32_t i = 0; found && i < MAX_DEVICES; i++)
                found[i].struct_size = sizeof found[i];
            c->probe_status = c->devices && found
                                  ? c->desc.probe_devices(&c->ctx, (attn_device_info *)found,
                                                          MAX_DEVICES, &count, err, sizeof err)
                                  : ATTN_ERR_NO_MEMORY;
            for (uint32_t i = 0; c->devices && found && i < MAX_DEVICES; i++)
                attn_copy_versioned(&c->devices[i], sizeof c->devices[i], &found[i],
                                    sizeof found[i]);
            free(found);
            /* Everything the plugin wrote is untrusted: the error text and
             * the device strings end where their buffers end, the count is
             * what the buffer can hold. */
            err[sizeof err - 1] = '\0';
            if (count > MAX_DEVICES)
                attn_diag_add(c->registry, ATTN_OK, c->conf_file, c->name_line, c->name,
                              "%s: probe_devices reported %u devices but the host "
                              "offered room for %d; the rest are ignored",
                              c->name, count, (int)MAX_DEVICES);
            c->num_devices = count > MAX_DEVICES ? MAX_DEVICES : count;
            for (uint32_t i = 0; c->devices && i < c->num_devices; i++) {
                c->devices[i].struct_size = sizeof c->devices[i];
                c->devices[i].arch[sizeof c->devices[i].arch - 1] = '\0';
                c->devices[i].name[sizeof c->devices[i].name - 1] = '\0';
            }
            if (c->probe_status == ATTN_OK && c->num_devices == 0) {
                c->probe_status = ATTN_ERR_NO_DEVICE;
                if (!err[0])
                    snprintf(err, sizeof err, "no device found");
            }
            c->probe_message = attn_strdup(err);
        }
    }
    attn_status st = c->probe_status;
    pthread_mutex_unlock(&c->load_lock);
    return st;
}

attn_status attn_candidate_can_run(attn_candidate *c, const char *arch, char *msg, size_t size)
{
    if (!attn_candidate_has_built_arch(c, arch)) {
        if (!c->built_archs_text || !c->built_archs_text[0]) {
            snprintf(msg, size, "built without kernels: the binary holds code for no arch");
            return ATTN_ERR_NO_KERNELS;
        }
        snprintf(msg, size, "the binary holds code for %s, not %s", c->built_archs_text, arch);
        return ATTN_ERR_ARCH_NOT_IN_BINARY;
    }
    attn_status st = attn_candidate_probe(c);
    if (st != ATTN_OK) {
        snprintf(msg, size, "no device: %s",
                 c->probe_message ? c->probe_message : attn_status_message(st));
        return ATTN_ERR_NO_DEVICE;
    }
    for (uint32_t i = 0; i < c->num_devices; i++)
        if (strcmp(c->devices[i].arch, arch) == 0)
            return ATTN_OK;
    strbuf sb = {0};
    for (uint32_t i = 0; i < c->num_devices; i++)
        strbuf_printf(&sb, "%s%s", i ? ", " : "", c->devices[i].arch);
    char *found = strbuf_take(&sb);
    snprintf(msg, size, "no %s device present (found: %s)", arch, found);
    free(found);
    return ATTN_ERR_NO_DEVICE;
}
