/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_harness.c — see plugin_harness.h.
 */
#include "plugin_harness.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CPU_REF_PLUGIN_PATH
#define CPU_REF_PLUGIN_PATH "libattn_cpu_ref.so"
#endif

int harness_load(harness_plugin *plugin, const char *path, char *err, size_t err_size)
{
    memset(plugin, 0, sizeof *plugin);
    if (!path)
        path = getenv("ATTNREG_CPU_REF_PLUGIN");
    if (!path || !*path)
        path = CPU_REF_PLUGIN_PATH;
    plugin->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!plugin->handle) {
        snprintf(err, err_size, "dlopen %s: %s", path, dlerror());
        return -1;
    }
    void *sym = dlsym(plugin->handle, ATTN_PLUGIN_ENTRY_SYMBOL);
    if (!sym) {
        snprintf(err, err_size, "%s has no %s", path, ATTN_PLUGIN_ENTRY_SYMBOL);
        dlclose(plugin->handle);
        plugin->handle = NULL;
        return -1;
    }
    attn_plugin_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* object pointer to function pointer, as POSIX allows */
    plugin->desc = entry(ATTN_PLUGIN_ABI_MAJOR, ATTN_PLUGIN_ABI_MINOR);
    if (!plugin->desc) {
        snprintf(err, err_size, "%s refused ABI %d.%d", path, ATTN_PLUGIN_ABI_MAJOR,
                 ATTN_PLUGIN_ABI_MINOR);
        dlclose(plugin->handle);
        plugin->handle = NULL;
        return -1;
    }
    return 0;
}

void harness_unload(harness_plugin *plugin)
{
    if (plugin->handle)
        dlclose(plugin->handle);
    memset(plugin, 0, sizeof *plugin);
}

static void harness_log(void *host, int32_t level, const char *message)
{
    (void)host;
    fprintf(stderr, "cpu-ref log (%d): %s\n", (int)level, message);
}

void harness_context_init(harness_context *hc, const char *const *pairs)
{
    memset(hc, 0, sizeof *hc);
    hc->services.struct_size = sizeof hc->services;
    hc->services.log = harness_log;
    hc->ctx.struct_size = sizeof hc->ctx;
    hc->ctx.services = &hc->services;
    hc->ctx.params = hc->params;
    hc->ctx.conf_file = "(test)";
    uint32_t n = 0;
    for (size_t i = 0; pairs && pairs[i] && pairs[i + 1] && n < 8; i += 2, n++) {
        hc->params[n].key = pairs[i];
        hc->params[n].value = pairs[i + 1];
    }
    hc->ctx.num_params = n;
}

int harness_accepts(const harness_plugin *plugin, const attn_plugin_context *ctx,
                    const attn_shape *shape, attn_verdict *verdict, const char **predicate)
{
    for (uint32_t i = 0; i < plugin->desc->num_predicates; i++) {
        memset(verdict, 0, sizeof *verdict);
        verdict->struct_size = sizeof *verdict;
        if (!plugin->desc->predicates[i].check(ctx, shape, verdict)) {
            if (predicate)
                *predicate = plugin->desc->predicates[i].name;
            return 0;
        }
    }
    return 1;
}

attn_status harness_run(const harness_plugin *plugin, const attn_plugin_context *ctx,
                        const attn_shape *shape, attn_forward_args *args, char *err,
                        size_t err_size)
{
    void *backend = NULL;
    err[0] = '\0';
    attn_status st = plugin->desc->create(ctx, shape, &backend, err, err_size);
    if (st != ATTN_OK)
        return st;
    attn_batch_limits limits = {sizeof limits, args->num_seqs, args->num_tokens};
    size_t bytes = 0;
    st = plugin->desc->workspace_size(backend, &limits, &bytes);
    if (st != ATTN_OK) {
        snprintf(err, err_size, "workspace_size failed");
        plugin->desc->destroy(backend);
        return st;
    }
    void *workspace = bytes ? malloc(bytes) : NULL;
    args->workspace = workspace;
    args->workspace_size = bytes;
    st = plugin->desc->forward(backend, args, err, err_size);
    args->workspace = NULL;
    args->workspace_size = 0;
    free(workspace);
    plugin->desc->destroy(backend);
    return st;
}
