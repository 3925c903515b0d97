/* abi_frozen.h — the published layouts of the versioned structs whose
 * layout is not a prefix of today's: a struct that embeds another versioned
 * struct (attn_selection embeds attn_shape) moves its later fields when the
 * embedded one grows, so the library keeps the old layout here and writes it
 * for a host whose struct_size says it was built against it. Never edit a
 * frozen layout; add the next one beside it. */
#ifndef ATTNREG_CORE_ABI_FROZEN_H
#define ATTNREG_CORE_ABI_FROZEN_H

#include <stddef.h>

#include "attnreg.h"

/* attn_shape as published in 0.1 (ends with has_sinks). */
typedef struct attn_shape_0_1 {
    uint32_t struct_size;
    char arch[ATTN_ARCH_MAX];
    int32_t num_q_heads, num_kv_heads, head_dim, head_dim_v;
    int32_t q_dtype, kv_dtype, compute_dtype, out_dtype;
    int32_t page_size, max_q_len, max_kv_len, causal, window_left, window_right;
    float softcap;
    int32_t has_sinks;
} attn_shape_0_1;

/* attn_selection as published in 0.1. */
typedef struct attn_selection_0_1 {
    uint32_t struct_size;
    const char *backend_name;
    const attn_candidate *candidate;
    attn_shape_0_1 effective_shape;
    int32_t fallback_applied;
    const char *fallback_rule;
    const char *fallback_backend;
    int32_t fallback_reason;
    const char *fallback_message;
    const char *message;
} attn_selection_0_1;

/* The smallest selection a host may pass: 0.1's whole layout (the public
 * ATTN_<STRUCT>_MIN_SIZE spelling; private, as only this frozen layout
 * can say it). */
#define ATTN_SELECTION_MIN_SIZE sizeof(attn_selection_0_1)

/* attn_selection as published in 0.3: 0.1's and graph_capturable. */
typedef struct attn_selection_0_3 {
    uint32_t struct_size;
    const char *backend_name;
    const attn_candidate *candidate;
    attn_shape_0_1 effective_shape;
    int32_t fallback_applied;
    const char *fallback_rule;
    const char *fallback_backend;
    int32_t fallback_reason;
    const char *fallback_message;
    const char *message;
    int32_t graph_capturable;
} attn_selection_0_3;

/* attn_shape as published in 0.4: 0.1's and return_lse. */
typedef struct attn_shape_0_4 {
    uint32_t struct_size;
    char arch[ATTN_ARCH_MAX];
    int32_t num_q_heads, num_kv_heads, head_dim, head_dim_v;
    int32_t q_dtype, kv_dtype, compute_dtype, out_dtype;
    int32_t page_size, max_q_len, max_kv_len, causal, window_left, window_right;
    float softcap;
    int32_t has_sinks;
    int32_t return_lse;
} attn_shape_0_4;

/* attn_selection as published in 0.4: 0.3's fields around 0.4's shape. */
typedef struct attn_selection_0_4 {
    uint32_t struct_size;
    const char *backend_name;
    const attn_candidate *candidate;
    attn_shape_0_4 effective_shape;
    int32_t fallback_applied;
    const char *fallback_rule;
    const char *fallback_backend;
    int32_t fallback_reason;
    const char *fallback_message;
    const char *message;
    int32_t graph_capturable;
} attn_selection_0_4;

/* attn_plan_entry as published in 0.4 ends with effective_shape; a host
 * whose entry is smaller was built against 0.3 (plan.c). */
#define ATTN_PLAN_ENTRY_SIZE_0_4 (offsetof(attn_plan_entry, effective_shape) + sizeof(void *))

/* attn_device_info as published with plugin ABI 1.1: the stride of the
 * array a plugin fills, whatever the host's own attn_device_info is. */
typedef struct attn_device_info_1_1 {
    uint32_t struct_size;
    int32_t index;
    char arch[ATTN_ARCH_MAX];
    char name[128];
    uint64_t memory_bytes;
    int32_t compute_units;
} attn_device_info_1_1;

/* The growth test builds the library from headers with fields appended, so
 * there today's layout and the frozen one differ by design. */
#ifndef ATTNREG_ABI_GROWTH_BUILD
/* 0.4 appended return_lse to attn_shape: 0.1's is a prefix of it, and
 * today's selection is larger than 0.3's, so struct_size tells them apart. */
_Static_assert(sizeof(attn_shape_0_1) == offsetof(attn_shape, return_lse),
               "attn_shape_0_1 is frozen");
_Static_assert(sizeof(attn_selection_0_3) < sizeof(attn_selection),
               "today's selection is told from 0.3's by its size");
_Static_assert(offsetof(attn_selection_0_3, message) == offsetof(attn_selection_0_1, message),
               "0.3 appends to 0.1");
_Static_assert(sizeof(attn_shape_0_4) == sizeof(attn_shape), "attn_shape_0_4 is frozen");
_Static_assert(sizeof(attn_selection_0_4) == sizeof(attn_selection), "selection_0_4 is frozen");
_Static_assert(offsetof(attn_selection_0_4, graph_capturable) ==
                   offsetof(attn_selection, graph_capturable),
               "selection_0_4 is frozen");
_Static_assert(ATTN_PLAN_ENTRY_SIZE_0_4 == sizeof(attn_plan_entry), "plan entry 0.4 is frozen");
_Static_assert(sizeof(attn_device_info_1_1) == sizeof(attn_device_info), "device_info is frozen");
#endif

#endif
