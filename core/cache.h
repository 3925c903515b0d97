/* SPDX-License-Identifier: Apache-2.0 */
/* cache.h — the decision cache of a registry (cache.c). */
#ifndef ATTNREG_CORE_CACHE_H
#define ATTNREG_CORE_CACHE_H

#include <string.h>

#include "internal.h"

/* Frees what a decision owns and zeroes it. */
void attn_decision_free(decision *d);

void attn_cache_init(struct attn_registry *reg);
/* Frees every cached decision and interned string (at close). */
void attn_cache_free(struct attn_registry *reg);
/* The cached decision for a normalised shape and its hash; lock-free (inline:
 * it is most of a cached select). */
static inline const cache_node *attn_cache_find(struct attn_registry *reg, const attn_shape *key,
                                                uint64_t hash)
{
    const cache_node *n =
        atomic_load_explicit(&reg->cache[hash % ATTN_CACHE_BUCKETS], memory_order_acquire);
    for (; n; n = n->next)
        if (n->hash == hash && memcmp(&n->key, key, sizeof *key) == 0)
            return n;
    return NULL;
}
/* Takes decision `d` over into the cache (or frees it when another thread
 * cached that shape first: its node is returned). NULL when the cache is
 * full or out of memory, `d` untouched. *inserted: whether `d` went in. */
const cache_node *attn_cache_insert(struct attn_registry *reg, const attn_shape *key, uint64_t hash,
                                    decision *d, int *inserted);
/* Replaces the strings of an uncached decision by the registry's copies,
 * valid until close (one copy per distinct string). */
void attn_cache_intern(struct attn_registry *reg, decision *d);

#endif
