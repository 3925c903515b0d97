/* SPDX-License-Identifier: Apache-2.0 */
/* candidate.h — the lifetime of a candidate (one registered plugin): made by
 * the conf reader, filled by it and by the loader, freed at close. */
#ifndef ATTNREG_CORE_CANDIDATE_H
#define ATTNREG_CORE_CANDIDATE_H

#include "internal.h"

/* A new, enabled candidate of `reg` named by the INI at conf_file; NULL when
 * out of memory. */
attn_candidate *attn_candidate_new(struct attn_registry *reg, const char *conf_file);
/* Frees the candidate and all it owns. The loader's part (the library
 * handle, the plugin's fini) must be released first: attn_candidate_unload. */
void attn_candidate_free(attn_candidate *c);
/* Frees the candidate's copy of the plugin's arch limits. */
void attn_candidate_free_limits(attn_candidate *c);

#endif
