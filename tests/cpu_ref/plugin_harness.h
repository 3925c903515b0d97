/* SPDX-License-Identifier: Apache-2.0 */
/*
 * plugin_harness.h — loads libattn_cpu_ref.so with dlopen and drives it
 * through its descriptor, exactly as libattnreg would, so the cpu-ref tests
 * need nothing but the plugin binary and include/attn_plugin.h.
 */
#ifndef CPU_REF_PLUGIN_HARNESS_H
#define CPU_REF_PLUGIN_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "attn_plugin.h"

typedef struct harness_plugin {
    void *handle;
    const attn_plugin_descriptor *desc;
} harness_plugin;

/* Loads the plugin at `path` (NULL: $ATTNREG_CPU_REF_PLUGIN, else the path
 * the build compiled in). Returns 0, or -1 with a message in err. */
int harness_load(harness_plugin *plugin, const char *path, char *err, size_t err_size);
void harness_unload(harness_plugin *plugin);

/* A plugin context with up to 8 [params] key/value pairs. */
typedef struct harness_context {
    attn_plugin_context ctx;
    attn_host_services services;
    attn_param params[8];
} harness_context;

/* `pairs` is a NULL-terminated list: key, value, key, value, ..., NULL. */
void harness_context_init(harness_context *hc, const char *const *pairs);

/* Runs every predicate; returns 1 when all accept, else 0 with the first
 * rejecting verdict in *verdict and its name in *predicate. */
int harness_accepts(const harness_plugin *plugin, const attn_plugin_context *ctx,
                    const attn_shape *shape, attn_verdict *verdict, const char **predicate);

/* create + workspace (sized from num_seqs/num_tokens limits) + forward +
 * destroy, as a host would. Returns the first non-OK status with its message
 * in err. */
attn_status harness_run(const harness_plugin *plugin, const attn_plugin_context *ctx,
                        const attn_shape *shape, attn_forward_args *args, char *err,
                        size_t err_size);

#endif /* CPU_REF_PLUGIN_HARNESS_H */
