/* SPDX-License-Identifier: Apache-2.0 */
/* diag.h — the registry's diagnostics: problems found while reading conf
 * files and loading plugins, logged as they are found and kept for
 * attn_registry_diagnostic. */
#ifndef ATTNREG_CORE_DIAG_H
#define ATTNREG_CORE_DIAG_H

#include "internal.h"

/* Logs the sentence (a warning for ATTN_OK, else an error) and keeps it;
 * file and plugin may be NULL. Safe from several threads (lazy loads). */
void attn_diag_add(struct attn_registry *reg, attn_status status, const char *file, int32_t line,
                   const char *plugin, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
void attn_diag_init(struct attn_registry *reg);
void attn_diag_free(struct attn_registry *reg);

#endif
