/* SPDX-License-Identifier: Apache-2.0 */
/* diag.c — the registry's diagnostics (diag.h) and their public queries. */
#include <stdlib.h>
#include <string.h>

#include "attn_tool_error.h"
#include "diag.h"

void attn_diag_init(attn_registry *reg)
{
    pthread_mutex_init(&reg->diag_lock, NULL);
}

void attn_diag_free(attn_registry *reg)
{
    for (size_t i = 0; i < reg->num_diags; i++) {
        free(reg->diags[i].file);
        free(reg->diags[i].plugin);
        free(reg->diags[i].message);
    }
    free(reg->diags);
    reg->diags = NULL;
    reg->num_diags = 0;
    pthread_mutex_destroy(&reg->diag_lock);
}

void attn_diag_add(attn_registry *reg, attn_status status, const char *file, int32_t line,
                   const char *plugin, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *raw = attn_vasprintf(fmt, ap);
    va_end(ap);
    /* A diagnostic quotes what it found in a file (a key, a value, a path):
     * its control bytes are escaped here, once, for every reader. */
    size_t cap = raw ? strlen(raw) * 4 + 1 : 0;
    char *message = raw ? malloc(cap) : NULL;
    if (message)
        attn_escape_controls(message, cap, raw, 1);
    free(raw);
    attn_log_plugin(&reg->logger, status == ATTN_OK ? ATTN_LOG_WARN : ATTN_LOG_ERROR, plugin, "%s",
                    message ? message : "");
    pthread_mutex_lock(&reg->diag_lock);
    conf_diag *p = realloc(reg->diags, (reg->num_diags + 1) * sizeof *p);
    if (p) {
        reg->diags = p;
        conf_diag *dg = &reg->diags[reg->num_diags++];
        dg->status = status;
        dg->file = attn_strdup(file);
        dg->line = line;
        dg->plugin = attn_strdup(plugin);
        dg->message = message;
        message = NULL;
    }
    pthread_mutex_unlock(&reg->diag_lock);
    free(message);
}

ATTNREG_API size_t attn_registry_diagnostic_count(const attn_registry *reg)
{
    if (!reg)
        return 0;
    pthread_mutex_lock((pthread_mutex_t *)&reg->diag_lock);
    size_t n = reg->num_diags;
    pthread_mutex_unlock((pthread_mutex_t *)&reg->diag_lock);
    return n;
}

ATTNREG_API attn_status attn_registry_diagnostic(const attn_registry *reg, size_t index,
                                                 attn_diagnostic *out)
{
    if (!reg || !out || out->struct_size < ATTN_DIAGNOSTIC_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_diagnostic: bad argument");
    attn_diagnostic full;
    memset(&full, 0, sizeof full);
    full.struct_size = out->struct_size;
    pthread_mutex_lock((pthread_mutex_t *)&reg->diag_lock);
    if (index >= reg->num_diags) {
        pthread_mutex_unlock((pthread_mutex_t *)&reg->diag_lock);
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "diagnostic index %zu out of range", index);
    }
    const conf_diag *d = &reg->diags[index];
    full.status = d->status;
    full.file = d->file;
    full.line = d->line;
    full.plugin = d->plugin;
    full.message = d->message;
    pthread_mutex_unlock((pthread_mutex_t *)&reg->diag_lock);
    attn_copy_versioned(out, out->struct_size, &full, sizeof full);
    return ATTN_OK;
}
