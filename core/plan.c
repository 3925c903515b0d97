/* SPDX-License-Identifier: Apache-2.0 */
/* plan.c — a whole model's attention decided once, at config load: validate
 * the model (whole, then per tensor-parallel rank) before any plugin is
 * asked, group its layers by what they compute, and select a backend for
 * every (layer group, phase) on the per-rank shape. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "abi_frozen.h"
#include "internal.h"

/* One (layer group, phase), with every string and shape owned here. */
typedef struct plan_entry_rec {
    int32_t phase;
    int32_t kind;
    char *layer_type;
    int32_t *layers; /* shared by the group's entries; owned by the first */
    uint32_t num_layers;
    int32_t owns_layers;
    attn_status status;
    int32_t has_shape;
    attn_shape shape;
    attn_selection selection;
    /* The same decision in the 0.3 layout, for hosts built before attn_shape
     * grew (their attn_plan_entry ends before effective_shape). */
    attn_selection_0_3 selection_0_3;
    char *strings[4]; /* backend name, fallback rule, fallback backend, fallback message */
    char *message;
} plan_entry_rec;

struct attn_plan {
    attn_status status;
    char *message;
    plan_entry_rec *entries;
    size_t num_entries;
    int32_t num_layers;
    int32_t *entry_of; /* [phase * num_layers + layer]: entry index, -1 = phase not planned */
    int32_t tp_size;
    int32_t rank_q_heads;
    int32_t rank_kv_heads;
    int32_t kv_replicated;
    int32_t q_len[ATTN_PHASE_COUNT]; /* 0 = phase not planned */
    int32_t max_kv_len;
    float scale; /* the softmax scale of every attention entry */
};

/* ---- names and defaults ------------------------------------------------ */

ATTNREG_API const char *attn_phase_name(int32_t phase)
{
    static const char *const names[ATTN_PHASE_COUNT] = {
#define PHASE_ROW_(NAME, value, name) [value] = name,
        ATTN_PHASE_MAP(PHASE_ROW_)
#undef PHASE_ROW_
    };
    return phase >= 0 && phase < ATTN_PHASE_COUNT ? names[phase] : "unknown";
}

ATTNREG_API const char *attn_layer_kind_name(int32_t kind)
{
    static const char *const names[ATTN_LAYER_KIND_COUNT] = {
#define KIND_ROW_(NAME, value, name) [value] = name,
        ATTN_LAYER_KIND_MAP(KIND_ROW_)
#undef KIND_ROW_
    };
    return kind >= 0 && kind < ATTN_LAYER_KIND_COUNT ? names[kind] : "unknown";
}

ATTNREG_API void attn_layer_init_sized(attn_layer *layer, size_t size)
{
    attn_layer full = {sizeof full, ATTN_LAYER_FULL, -1, -1, NULL};
    attn_init_sized(layer, size, &full, sizeof full);
}

/* The 0.2 name, which took the caller's size already. */
ATTNREG_API void attn_layer_init(attn_layer *layer, uint32_t struct_size)
{
    attn_layer_init_sized(layer, struct_size);
}

ATTNREG_API void attn_model_init_sized(attn_model *model, size_t size)
{
    attn_model full;
    memset(&full, 0, sizeof full);
    memcpy(full.arch, "cpu", 4);
    full.num_q_heads = 1;
    full.num_kv_heads = 0;
    full.head_dim = 128;
    full.num_layers = 1;
    full.q_dtype = full.kv_dtype = full.compute_dtype = full.out_dtype = ATTN_DTYPE_BF16;
    full.page_size = 16;
    full.tp_size = 1;
    attn_init_sized(model, size, &full, sizeof full);
}

/* The 0.2 name, which took the caller's size already. */
ATTNREG_API void attn_model_init(attn_model *model, uint32_t struct_size)
{
    attn_model_init_sized(model, struct_size);
}

/* ---- reading the host's structs ------------------------------------------ */

static attn_status read_model(const attn_model *in, attn_model *out)
{
    if (in->struct_size < ATTN_MODEL_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "model struct_size %u is smaller than the oldest known layout (%zu); "
                         "call attn_model_init() first",
                         in->struct_size, (size_t)ATTN_MODEL_MIN_SIZE);
    attn_model_init(out, sizeof *out);
    memcpy(out, in, in->struct_size < sizeof *out ? in->struct_size : sizeof *out);
    out->struct_size = sizeof *out;
    return ATTN_OK;
}

/* Copies every layer into a full-size array (the host's stride is
 * layers[0].struct_size), or makes num_layers full-attention layers when the
 * host passed none. The count is validated before this is called. */
static attn_status read_layers(const attn_model *m, attn_layer **out)
{
    attn_layer *layers = calloc((size_t)m->num_layers, sizeof *layers);
    if (!layers)
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    uint32_t stride = m->layers ? m->layers[0].struct_size : 0;
    if (m->layers && stride < ATTN_LAYER_MIN_SIZE) {
        free(layers);
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "layers[0].struct_size %u is smaller than the oldest known layout (%zu); "
                         "call attn_layer_init() on every layer",
                         stride, (size_t)ATTN_LAYER_MIN_SIZE);
    }
    for (int32_t i = 0; i < m->num_layers; i++) {
        attn_layer_init(&layers[i], sizeof layers[i]);
        if (!m->layers)
            continue;
        const char *src = (const char *)m->layers + (size_t)i * stride;
        memcpy(&layers[i], src, stride < sizeof layers[i] ? stride : sizeof layers[i]);
        if (layers[i].struct_size != stride) {
            uint32_t got = layers[i].struct_size;
            free(layers);
            return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                             "layers[%d].struct_size %u differs from layers[0].struct_size %u: "
                             "the array's elements must all have one size",
                             (int)i, got, stride);
        }
    }
    *out = layers;
    return ATTN_OK;
}

/* ---- validation (before any plugin) --------------------------------------- */

/* The shape every entry starts from: the model's heads as they are on one
 * rank, its dtypes and page size, the kv capacity. */
static void rank_shape(const attn_model *m, int32_t q_heads, int32_t kv_heads, attn_shape *s)
{
    attn_shape_init(s);
    memcpy(s->arch, m->arch, ATTN_ARCH_MAX);
    s->num_q_heads = q_heads;
    s->num_kv_heads = kv_heads;
    s->head_dim = m->head_dim;
    s->head_dim_v = m->head_dim_v;
    s->q_dtype = m->q_dtype;
    s->kv_dtype = m->kv_dtype;
    s->compute_dtype = m->compute_dtype;
    s->out_dtype = m->out_dtype;
    s->page_size = m->page_size;
    s->max_q_len = 1;
    s->max_kv_len = m->max_model_len;
    s->causal = 1;
    s->softcap = m->softcap;
    s->has_sinks = m->has_sinks;
}

/* What the model itself decides, before its capacities: the whole model as
 * one shape first, so a bad head layout gives exactly the message select
 * gives ("requires num_heads (28) to be a multiple of num_kv_heads (6)");
 * then the softmax scale, tensor parallelism and the layer count. A host
 * reading a config that lacks a max model length learns this first
 * (attn_hf_config_apply). */
int attn_model_check_own(const attn_model *m, char *msg, size_t size)
{
    attn_shape whole;
    rank_shape(m, m->num_q_heads, m->num_kv_heads, &whole);
    whole.max_kv_len = 1; /* the capacities are judged on their own, after */
    if (!attn_shape_validate(&whole, msg, size))
        return 0;
    if (!isfinite(m->scale) || m->scale < 0.0f)
        return attn_invalid(msg, size,
                            "scale must be a finite number >= 0 (0 = head_dim^-1/2), got %g",
                            (double)m->scale);
    int32_t q = m->num_q_heads, kv = attn_shape_kv_heads(&whole), tp = m->tp_size;
    if (tp <= 0)
        return attn_invalid(msg, size, "tp_size must be positive (got %d)", tp);
    if (q % tp != 0)
        return attn_invalid(msg, size, "requires num_heads (%d) to be a multiple of tp (%d)", q,
                            tp);
    if (kv >= tp && kv % tp != 0)
        return attn_invalid(msg, size, "requires num_kv_heads (%d) to be a multiple of tp (%d)", kv,
                            tp);
    if (kv < tp && tp % kv != 0)
        return attn_invalid(msg, size,
                            "requires tp (%d) to be a multiple of num_kv_heads (%d) when tp "
                            "exceeds them (each rank holds one replicated KV head)",
                            tp, kv);
    if (m->num_layers <= 0)
        return attn_invalid(msg, size, "num_layers must be positive (got %d)", m->num_layers);
    if (m->num_layers > ATTN_MODEL_MAX_LAYERS)
        return attn_invalid(msg, size, "num_layers (%d) exceeds the %d the registry plans",
                            m->num_layers, ATTN_MODEL_MAX_LAYERS);
    return 1;
}

/* The model's own numbers, then its capacities; fills the plan's per-rank
 * numbers and phases. */
static int validate_model(const attn_model *m, attn_plan *p, char *msg, size_t size)
{
    if (!attn_model_check_own(m, msg, size))
        return 0;
    if (m->max_model_len <= 0)
        return attn_invalid(msg, size,
                            "max_model_len must be positive (got %d): it is the kv capacity of "
                            "every phase",
                            m->max_model_len);
    if (m->max_prefill_tokens < 0)
        return attn_invalid(msg, size,
                            "max_prefill_tokens must be positive, or 0 for max_model_len (got %d)",
                            m->max_prefill_tokens);
    if (m->spec_tokens < 0)
        return attn_invalid(msg, size, "spec_tokens must be 0 (none) or positive (got %d)",
                            m->spec_tokens);
    if (m->spec_tokens >= m->max_model_len)
        return attn_invalid(msg, size,
                            "spec_tokens (%d) + 1 exceeds max_model_len (%d): the verified tokens "
                            "are among the keys",
                            m->spec_tokens, m->max_model_len);

    int32_t q = m->num_q_heads, tp = m->tp_size;
    int32_t kv = m->num_kv_heads ? m->num_kv_heads : m->num_q_heads;
    p->tp_size = tp;
    p->rank_q_heads = q / tp;
    p->rank_kv_heads = kv >= tp ? kv / tp : 1;
    p->kv_replicated = kv < tp;
    p->num_layers = m->num_layers;
    p->max_kv_len = m->max_model_len;
    p->scale = m->scale > 0.0f ? m->scale : (float)(1.0 / sqrt((double)m->head_dim));
    int32_t chunk = m->max_prefill_tokens ? m->max_prefill_tokens : m->max_model_len;
    p->q_len[ATTN_PHASE_PREFILL] = chunk < m->max_model_len ? chunk : m->max_model_len;
    p->q_len[ATTN_PHASE_DECODE] = 1;
    p->q_len[ATTN_PHASE_VERIFY] = m->spec_tokens > 0 ? m->spec_tokens + 1 : 0;
    return 1;
}

/* The longest layer type_name taken, with its NUL: the host's string is read
 * no further (it is copied, sorted and printed afterwards). */
#define LAYER_TYPE_NAME_MAX 256

static int validate_layers(const attn_layer *layers, int32_t n, char *msg, size_t size)
{
    for (int32_t i = 0; i < n; i++) {
        const attn_layer *l = &layers[i];
        if (l->kind < 0 || l->kind >= ATTN_LAYER_KIND_COUNT)
            return attn_invalid(msg, size, "layer %d: kind %d is not a known layer kind", i,
                                l->kind);
        if (l->type_name && strnlen(l->type_name, LAYER_TYPE_NAME_MAX) == LAYER_TYPE_NAME_MAX)
            return attn_invalid(msg, size,
                                "layer %d: type_name is longer than %d bytes (or not "
                                "NUL-terminated)",
                                i, LAYER_TYPE_NAME_MAX - 1);
        if (l->kind != ATTN_LAYER_SLIDING)
            continue;
        if (l->window_left < -1 || l->window_right < -1)
            return attn_invalid(msg, size,
                                "layer %d: sliding window (%d, %d): each side must be -1 "
                                "(unbounded) or >= 0",
                                i, l->window_left, l->window_right);
        if (l->window_left == -1 && l->window_right == -1)
            return attn_invalid(msg, size,
                                "layer %d: a sliding window of (-1, -1) is unbounded: that is "
                                "ATTN_LAYER_FULL",
                                i);
    }
    return 1;
}

/* ---- grouping ------------------------------------------------------------- */

/* What makes two layers plan alike: the kind, the window of a sliding layer
 * and the type name of a layer that is not attention. The index comes last,
 * so sorting keys puts each group's layers in ascending order. */
typedef struct layer_key {
    int32_t kind;
    int32_t window_left;
    int32_t window_right;
    const char *type_name; /* "" unless not attention */
    int32_t index;
} layer_key;

static int keys_differ(const layer_key *a, const layer_key *b)
{
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->window_left != b->window_left)
        return a->window_left < b->window_left ? -1 : 1;
    if (a->window_right != b->window_right)
        return a->window_right < b->window_right ? -1 : 1;
    return strcmp(a->type_name, b->type_name);
}

static int compare_keys(const void *x, const void *y)
{
    const layer_key *a = x, *b = y;
    int d = keys_differ(a, b);
    return d ? d : (a->index > b->index) - (a->index < b->index);
}

typedef struct layer_group {
    int32_t *layers;
    uint32_t num_layers;
} layer_group;

static int compare_group_first(const void *x, const void *y)
{
    int32_t a = ((const layer_group *)x)->layers[0], b = ((const layer_group *)y)->layers[0];
    return (a > b) - (a < b);
}

static void free_groups(layer_group *groups, size_t count)
{
    for (size_t g = 0; g < count; g++)
        free(groups[g].layers);
    free(groups);
}

/* Groups the layers, each group ascending, groups in the order of their
 * first layer. O(n log n), so a hostile model with a new window on every
 * layer costs no more than sorting it. */
static attn_status group_layers(const attn_layer *layers, size_t n, layer_group **out,
                                size_t *num_out)
{
    layer_key *keys = malloc(n * sizeof *keys);
    layer_group *groups = calloc(n, sizeof *groups);
    if (!keys || !groups) {
        free(keys);
        free(groups);
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const attn_layer *l = &layers[i];
        int sliding = l->kind == ATTN_LAYER_SLIDING;
        keys[i].kind = l->kind;
        keys[i].window_left = sliding ? l->window_left : -1;
        keys[i].window_right = sliding ? l->window_right : -1;
        keys[i].type_name = l->kind == ATTN_LAYER_NOT_ATTENTION && l->type_name ? l->type_name : "";
        keys[i].index = (int32_t)i;
    }
    qsort(keys, n, sizeof *keys, compare_keys);

    size_t count = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && keys_differ(&keys[i], &keys[j]) == 0)
            j++;
        int32_t *members = malloc((j - i) * sizeof *members);
        if (!members) {
            free_groups(groups, count);
            free(keys);
            return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
        }
        for (size_t k = i; k < j; k++)
            members[k - i] = keys[k].index;
        groups[count].layers = members;
        groups[count].num_layers = (uint32_t)(j - i);
        count++;
        i = j;
    }
    free(keys);
    qsort(groups, count, sizeof *groups, compare_group_first);
    *out = groups;
    *num_out = count;
    return ATTN_OK;
}

/* ---- entries ------------------------------------------------------------- */

/* Keeps the selection with copies of its strings, so the plan does not
 * depend on where select kept them (the cache, or a per-thread slot). */
static int own_selection(plan_entry_rec *e, const attn_selection *sel)
{
    const char *src[4] = {sel->backend_name, sel->fallback_rule, sel->fallback_backend,
                          sel->fallback_message};
    for (int k = 0; k < 4; k++) {
        e->strings[k] = attn_strdup(src[k]);
        if (src[k] && !e->strings[k])
            return 0;
    }
    e->selection = *sel;
    e->selection.backend_name = e->strings[0];
    e->selection.fallback_rule = e->strings[1];
    e->selection.fallback_backend = e->strings[2];
    e->selection.fallback_message = e->strings[3];
    e->message = attn_strdup(sel->message ? sel->message : "");
    e->selection.message = e->message;
    /* The library's own writer of the old layout (select.c), so the copy is
     * exactly what a 0.3 host's attn_registry_select would have got. */
    e->selection_0_3.struct_size = sizeof e->selection_0_3;
    attn_selection_to_layout(&e->selection, (attn_selection *)&e->selection_0_3);
    return e->message != NULL;
}

/* Names the entry and builds its per-rank shape (none when not attention). */
static attn_status prepare_entry(attn_plan *p, const attn_shape *base, const attn_layer *first,
                                 plan_entry_rec *e)
{
    const char *type = first->type_name ? first->type_name : attn_layer_kind_name(first->kind);
    e->kind = first->kind;
    e->layer_type = attn_strdup(type);
    if (!e->layer_type)
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    if (first->kind == ATTN_LAYER_NOT_ATTENTION)
        return ATTN_OK;
    e->has_shape = 1;
    e->shape = *base;
    e->shape.max_q_len = p->q_len[e->phase];
    if (first->kind == ATTN_LAYER_SLIDING) {
        e->shape.window_left = first->window_left;
        e->shape.window_right = first->window_right;
    }
    return ATTN_OK;
}

static attn_status decide_entry(attn_registry *reg, plan_entry_rec *e)
{
    if (!e->has_shape) {
        e->status = ATTN_OK;
        e->message = attn_asprintf("layers of type %s are not attention: the registry plans no "
                                   "backend for them",
                                   e->layer_type);
        return e->message ? ATTN_OK : attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    }
    attn_selection sel;
    attn_selection_init(&sel);
    e->status = attn_registry_select(reg, &e->shape, &sel);
    if (e->status == ATTN_ERR_INVALID_ARGUMENT || e->status == ATTN_ERR_NO_MEMORY)
        return e->status;
    return own_selection(e, &sel) ? ATTN_OK : attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
}

/* "the verify phase of 15 full layers (first: layer 3)" */
static char *entry_place(const plan_entry_rec *e)
{
    if (e->num_layers == 1)
        return attn_asprintf("the %s phase of %s layer %d", attn_phase_name(e->phase),
                             e->layer_type, e->layers[0]);
    return attn_asprintf("the %s phase of %u %s layers (first: layer %d)",
                         attn_phase_name(e->phase), e->num_layers, e->layer_type, e->layers[0]);
}

static attn_status build_entries(attn_plan *p, const attn_model *m, const attn_layer *layers)
{
    layer_group *groups = NULL;
    size_t num_groups = 0;
    attn_status st = group_layers(layers, (size_t)m->num_layers, &groups, &num_groups);
    if (st != ATTN_OK)
        return st;
    size_t num_phases = p->q_len[ATTN_PHASE_VERIFY] ? 3 : 2;
    p->entries = calloc(num_groups * num_phases, sizeof *p->entries);
    p->entry_of = malloc((size_t)ATTN_PHASE_COUNT * (size_t)m->num_layers * sizeof *p->entry_of);
    if (!p->entries || !p->entry_of) {
        free_groups(groups, num_groups);
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    }
    for (size_t k = 0; k < (size_t)ATTN_PHASE_COUNT * (size_t)m->num_layers; k++)
        p->entry_of[k] = -1;

    attn_shape base;
    rank_shape(m, p->rank_q_heads, p->rank_kv_heads, &base);
    for (size_t g = 0; g < num_groups; g++) {
        for (size_t ph = 0; ph < num_phases; ph++) {
            plan_entry_rec *e = &p->entries[p->num_entries++];
            e->phase = (int32_t)ph;
            e->layers = groups[g].layers;
            e->num_layers = groups[g].num_layers;
            e->owns_layers = ph == 0;
            for (uint32_t k = 0; k < e->num_layers; k++)
                p->entry_of[ph * (size_t)m->num_layers + (size_t)e->layers[k]] =
                    (int32_t)(p->num_entries - 1);
            st = prepare_entry(p, &base, &layers[e->layers[0]], e);
            if (st != ATTN_OK) {
                /* The groups' layer arrays not yet in an entry are freed here;
                 * those in entries go with the plan. */
                for (size_t rest = g + 1; rest < num_groups; rest++)
                    free(groups[rest].layers);
                free(groups);
                return st;
            }
        }
    }
    free(groups);
    return ATTN_OK;
}

/* Every per-rank shape is checked before any plugin is asked. The model's
 * own checks make this hold already; it stays as the guarantee that no
 * entry reaches selection with a shape select would call invalid. */
static int validate_entries(const attn_plan *p, char *msg, size_t size)
{
    for (size_t i = 0; i < p->num_entries; i++) {
        const plan_entry_rec *e = &p->entries[i];
        char why[512];
        if (!e->has_shape || attn_shape_validate(&e->shape, why, sizeof why))
            continue;
        char *place = entry_place(e);
        attn_invalid(msg, size, "per rank, %s: %s", place ? place : "an entry", why);
        free(place);
        return 0;
    }
    return 1;
}

static attn_status decide_entries(attn_registry *reg, attn_plan *p)
{
    for (size_t i = 0; i < p->num_entries; i++) {
        attn_status st = decide_entry(reg, &p->entries[i]);
        if (st != ATTN_OK)
            return st;
    }
    return ATTN_OK;
}

static void plan_free_parts(attn_plan *p)
{
    for (size_t i = 0; i < p->num_entries; i++) {
        plan_entry_rec *e = &p->entries[i];
        if (e->owns_layers)
            free(e->layers);
        free(e->layer_type);
        for (int k = 0; k < 4; k++)
            free(e->strings[k]);
        free(e->message);
    }
    free(p->entries);
    free(p->entry_of);
    free(p->message);
}

ATTNREG_API void attn_plan_free(attn_plan *plan)
{
    if (!plan)
        return;
    plan_free_parts(plan);
    free(plan);
}

/* The plan's status and message: the first entry without a backend. */
static attn_status conclude(attn_plan *p)
{
    for (size_t i = 0; i < p->num_entries; i++) {
        const plan_entry_rec *e = &p->entries[i];
        if (e->status == ATTN_OK)
            continue;
        char *place = entry_place(e);
        p->status = e->status;
        p->message = attn_asprintf("no backend for %s: %s", place ? place : "an entry",
                                   e->message ? e->message : "");
        free(place);
        if (!p->message)
            return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
        return attn_fail(p->status, "%s", p->message);
    }
    p->status = ATTN_OK;
    p->message = attn_strdup("");
    return p->message ? ATTN_OK : attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
}

/* An invalid model: no entries, the reason as message. */
static attn_status invalid_plan(attn_plan *p, const char *why, attn_plan **out)
{
    plan_free_parts(p);
    memset(p, 0, sizeof *p);
    p->status = ATTN_ERR_INVALID_SHAPE;
    p->message = attn_strdup(why);
    if (!p->message) {
        free(p);
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    }
    *out = p;
    return attn_fail(p->status, "%s", p->message);
}

/* Frees the plan on a failure that leaves no plan, keeping its message. */
static attn_status abandon_plan(attn_plan *p, attn_status st)
{
    char keep[1024];
    snprintf(keep, sizeof keep, "%s", attn_last_error());
    attn_plan_free(p);
    return attn_fail(st, "%s", keep);
}

ATTNREG_API attn_status attn_registry_plan(attn_registry *reg, const attn_model *model,
                                           attn_plan **out)
{
    if (!out)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_plan: plan is NULL");
    *out = NULL;
    if (!reg || !model)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_plan: NULL argument");
    attn_model m;
    attn_status st = read_model(model, &m);
    if (st != ATTN_OK)
        return st;
    attn_plan *p = calloc(1, sizeof *p);
    if (!p)
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");

    /* Everything is validated before the first select. */
    char why[512];
    attn_layer *layers = NULL;
    int valid = validate_model(&m, p, why, sizeof why);
    if (valid) {
        st = read_layers(&m, &layers);
        if (st != ATTN_OK)
            return abandon_plan(p, st);
        valid = validate_layers(layers, m.num_layers, why, sizeof why);
    }
    if (valid) {
        st = build_entries(p, &m, layers);
        if (st != ATTN_OK) {
            free(layers);
            return abandon_plan(p, st);
        }
        valid = validate_entries(p, why, sizeof why);
    }
    free(layers);
    if (!valid)
        return invalid_plan(p, why, out);

    st = decide_entries(reg, p);
    if (st == ATTN_OK)
        st = conclude(p);
    if (st == ATTN_ERR_INVALID_ARGUMENT || st == ATTN_ERR_NO_MEMORY)
        return abandon_plan(p, st);
    *out = p;
    return st;
}

/* ---- reading a plan ------------------------------------------------------ */

ATTNREG_API attn_status attn_plan_summarize(const attn_plan *p, attn_plan_summary *out)
{
    if (!p || !out || out->struct_size < ATTN_PLAN_SUMMARY_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_plan_summarize: bad argument");
    attn_plan_summary full;
    memset(&full, 0, sizeof full);
    full.struct_size = out->struct_size;
    full.status = p->status;
    full.message = p->message ? p->message : "";
    full.num_entries = p->num_entries;
    full.num_layers = p->num_layers;
    full.tp_size = p->tp_size;
    full.rank_q_heads = p->rank_q_heads;
    full.rank_kv_heads = p->rank_kv_heads;
    full.kv_heads_replicated = p->kv_replicated;
    full.prefill_q_len = p->q_len[ATTN_PHASE_PREFILL];
    full.decode_q_len = p->q_len[ATTN_PHASE_DECODE];
    full.verify_q_len = p->q_len[ATTN_PHASE_VERIFY];
    full.max_kv_len = p->max_kv_len;
    attn_copy_versioned(out, out->struct_size, &full, sizeof full);
    return ATTN_OK;
}

static void fill_entry(const plan_entry_rec *e, float scale, attn_plan_entry *out)
{
    attn_plan_entry full;
    memset(&full, 0, sizeof full);
    full.struct_size = out->struct_size;
    full.phase = e->phase;
    full.layer_kind = e->kind;
    full.layer_type = e->layer_type;
    full.layers = e->layers;
    full.num_layers = e->num_layers;
    full.status = e->status;
    full.shape = e->has_shape ? &e->shape : NULL;
    const int old_host =
        out->struct_size < offsetof(attn_plan_entry, effective_shape) + sizeof(const attn_shape *);
    full.selection = !e->has_shape ? NULL
                     : old_host    ? (const attn_selection *)&e->selection_0_3
                                   : &e->selection;
    full.effective_shape = e->has_shape ? &e->selection.effective_shape : NULL;
    full.message = e->message ? e->message : "";
    full.scale = e->has_shape ? scale : 0.0f;
    attn_copy_versioned(out, out->struct_size, &full, sizeof full);
}

ATTNREG_API attn_status attn_plan_entry_get(const attn_plan *p, size_t index, attn_plan_entry *out)
{
    if (!p || !out || out->struct_size < ATTN_PLAN_ENTRY_MIN_SIZE || index >= p->num_entries)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_plan_entry_get: bad argument");
    fill_entry(&p->entries[index], p->scale, out);
    return ATTN_OK;
}

ATTNREG_API attn_status attn_plan_lookup(const attn_plan *p, int32_t layer, int32_t phase,
                                         attn_plan_entry *out)
{
    if (!p || !out || out->struct_size < ATTN_PLAN_ENTRY_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_plan_lookup: bad argument");
    if (!p->entry_of || layer < 0 || layer >= p->num_layers || phase < 0 ||
        phase >= ATTN_PHASE_COUNT ||
        p->entry_of[(size_t)phase * (size_t)p->num_layers + (size_t)layer] < 0)
        return attn_fail(ATTN_ERR_NOT_FOUND, "the plan has no entry for layer %d in phase %s",
                         (int)layer, attn_phase_name(phase));
    fill_entry(&p->entries[p->entry_of[(size_t)phase * (size_t)p->num_layers + (size_t)layer]],
               p->scale, out);
    return ATTN_OK;
}
