/* SPDX-License-Identifier: Apache-2.0 */
/* cache.c — the decision cache (cache.h): one immutable decision per
 * normalised shape, read without a lock, inserted under one; and the
 * registry's copies of the strings of decisions it could not keep. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"

void attn_decision_free(decision *d)
{
    free(d->fallback_rule);
    free(d->fallback_message);
    free(d->message);
    memset(d, 0, sizeof *d);
}

void attn_cache_init(attn_registry *reg)
{
    pthread_mutex_init(&reg->cache_lock, NULL);
    for (size_t b = 0; b < ATTN_CACHE_BUCKETS; b++)
        atomic_init(&reg->cache[b], NULL);
}

/* Inserts a decision built by this thread; another thread may have won the
 * race, in which case its node is returned and ours discarded. *inserted says
 * whether ours went in (only then is the decision logged: once per shape). */
const cache_node *attn_cache_insert(attn_registry *reg, const attn_shape *key, uint64_t hash,
                                    decision *d, int *inserted)
{
    *inserted = 0;
    pthread_mutex_lock(&reg->cache_lock);
    const cache_node *existing = attn_cache_find(reg, key, hash);
    if (existing) {
        pthread_mutex_unlock(&reg->cache_lock);
        attn_decision_free(d);
        return existing;
    }
    /* A bound, so a host that passes a fresh max_kv_len on every call cannot
     * grow the cache without limit: past it, decisions are still correct,
     * just computed each time. */
    if (reg->cache_entries >= ATTN_CACHE_MAX_ENTRIES) {
        int warned = reg->cache_full_warned;
        reg->cache_full_warned = 1;
        pthread_mutex_unlock(&reg->cache_lock);
        if (!warned)
            attn_log(&reg->logger, ATTN_LOG_WARN,
                     "decision cache full (%d shapes); further shapes are decided uncached",
                     ATTN_CACHE_MAX_ENTRIES);
        return NULL;
    }
    cache_node *n = malloc(sizeof *n);
    if (!n) {
        pthread_mutex_unlock(&reg->cache_lock);
        return NULL;
    }
    n->key = *key;
    n->hash = hash;
    n->result = *d;
    memset(d, 0, sizeof *d);
    _Atomic(cache_node *) *bucket = &reg->cache[hash % ATTN_CACHE_BUCKETS];
    n->next = atomic_load_explicit(bucket, memory_order_relaxed);
    atomic_store_explicit(bucket, n, memory_order_release);
    reg->cache_entries++;
    pthread_mutex_unlock(&reg->cache_lock);
    *inserted = 1;
    return n;
}

/* The registry's copy of `s` (taken over or freed), valid until close;
 * under cache_lock. */
static char *intern(attn_registry *reg, char *s)
{
    static char out_of_memory[] = "(out of memory)";
    if (!s)
        return NULL;
    const strmap_slot *slot;
    int put = strmap_put(&reg->interned, s, NULL, 0, &slot);
    if (put == 1)
        return s;
    free(s);
    return put == 0 ? (char *)slot->k1 : out_of_memory;
}

void attn_cache_intern(attn_registry *reg, decision *d)
{
    pthread_mutex_lock(&reg->cache_lock);
    d->message = intern(reg, d->message);
    d->fallback_rule = intern(reg, d->fallback_rule);
    d->fallback_message = intern(reg, d->fallback_message);
    pthread_mutex_unlock(&reg->cache_lock);
}

void attn_cache_free(attn_registry *reg)
{
    strmap_free(&reg->interned, 1);
    for (size_t b = 0; b < ATTN_CACHE_BUCKETS; b++) {
        cache_node *n = atomic_load_explicit(&reg->cache[b], memory_order_relaxed);
        while (n) {
            cache_node *next = n->next;
            attn_decision_free(&n->result);
            free(n);
            n = next;
        }
        atomic_store_explicit(&reg->cache[b], NULL, memory_order_relaxed);
    }
    pthread_mutex_destroy(&reg->cache_lock);
}
