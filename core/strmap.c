/* strmap.c — a small open-addressing hash map from a pair of strings to an
 * index, so that duplicate-key detection and rule lookup in a conf file of n
 * keys take O(n), not O(n^2), and a registry can keep one copy of each
 * decision string. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static uint64_t hash_pair(const char *a, const char *b)
{
    /* FNV-1a over a, a separator, b. */
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)a; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    h = (h ^ 0xffu) * 0x100000001b3ull;
    for (const unsigned char *p = (const unsigned char *)(b ? b : ""); *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static int same(const strmap_slot *s, uint64_t h, const char *a, const char *b)
{
    return s->k1 && s->hash == h && strcmp(s->k1, a) == 0 &&
           strcmp(s->k2 ? s->k2 : "", b ? b : "") == 0;
}

static int grow(strmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    strmap_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return 0;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].k1)
            continue;
        size_t j = m->slots[i].hash & (cap - 1);
        while (slots[j].k1)
            j = (j + 1) & (cap - 1);
        slots[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return 1;
}

const strmap_slot *strmap_find(const strmap *m, const char *a, const char *b)
{
    if (!m->cap)
        return NULL;
    uint64_t h = hash_pair(a, b);
    for (size_t j = h & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
        if (!m->slots[j].k1)
            return NULL;
        if (same(&m->slots[j], h, a, b))
            return &m->slots[j];
    }
}

int strmap_put(strmap *m, const char *a, const char *b, size_t value, const strmap_slot **found)
{
    *found = NULL;
    if ((m->len + 1) * 4 > m->cap * 3 && !grow(m))
        return -1;
    uint64_t h = hash_pair(a, b);
    size_t j = h & (m->cap - 1);
    for (; m->slots[j].k1; j = (j + 1) & (m->cap - 1)) {
        if (same(&m->slots[j], h, a, b)) {
            *found = &m->slots[j];
            return 0;
        }
    }
    m->slots[j].hash = h;
    m->slots[j].k1 = a;
    m->slots[j].k2 = b;
    m->slots[j].value = value;
    m->len++;
    *found = &m->slots[j];
    return 1;
}

void strmap_free(strmap *m, int free_keys)
{
    if (free_keys)
        for (size_t i = 0; i < m->cap; i++)
            free((char *)m->slots[i].k1);
    free(m->slots);
    memset(m, 0, sizeof *m);
}
