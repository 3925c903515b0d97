/* SPDX-License-Identifier: Apache-2.0 */
/* select.c — the decision: validate, walk the candidates in priority order
 * through the conf layer, the plugin's predicates and (runnable mode) the
 * binary/device checks, apply fallback rules when none accepts, and keep every
 * verdict as a record; select answers from the decision cache (cache.c)
 * when it can. */
#include <stdlib.h>
#include <string.h>

#include "abi_frozen.h"
#include "cache.h"
#include "internal.h"

/* ---- records ----------------------------------------------------------- */

static verdict_rec *add_record(attn_explanation *ex, int32_t pass, const attn_candidate *c)
{
    if (ex->num_records == ex->cap_records) {
        size_t cap = ex->cap_records ? ex->cap_records * 2 : 8;
        verdict_rec *p = realloc(ex->records, cap * sizeof *p);
        if (!p)
            return NULL;
        ex->records = p;
        ex->cap_records = cap;
    }
    verdict_rec *r = &ex->records[ex->num_records++];
    memset(r, 0, sizeof *r);
    r->pass = pass;
    r->candidate = c;
    return r;
}

#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
static int
reject(verdict_rec *r, int32_t reason, const char *predicate, const char *conf_file,
       int32_t conf_line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->message = attn_vasprintf(fmt, ap);
    va_end(ap);
    r->accepted = 0;
    r->reason = reason;
    r->predicate = predicate;
    r->conf_file = conf_file;
    r->conf_line = conf_line;
    return 0;
}

static void dtype_mask_text(uint32_t mask, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 1; d < ATTN_DTYPE_COUNT && used < size; d++)
        if (mask & (1u << d))
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? ", " : "",
                                     attn_dtype_name(d));
}

static void int_list_text(const int32_t *v, uint32_t n, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%d", i ? ", " : "", v[i]);
}

/* ---- the three layers -------------------------------------------------- */

static int check_narrowing(const attn_candidate *c, const attn_shape *s, verdict_rec *r)
{
    for (uint32_t i = 0; i < c->num_narrow; i++) {
        const narrow_rule *n = &c->narrow[i];
        int32_t v = attn_shape_field_get(s, n->field);
        const char *field = attn_field_name(n->field);
        char list[256];
        switch (n->kind) {
        case NARROW_DTYPES:
            if (!(n->dtype_mask & (1u << v))) {
                dtype_mask_text(n->dtype_mask, list, sizeof list);
                return reject(r, ATTN_REASON_NARROWED, "conf", c->conf_file, n->line,
                              "%s %s not in %s = {%s}", field, attn_dtype_name(v), n->key, list);
            }
            break;
        case NARROW_INTS: {
            int found = 0;
            for (uint32_t k = 0; k < n->num_values; k++)
                found |= n->values[k] == v;
            if (!found) {
                int_list_text(n->values, n->num_values, list, sizeof list);
                return reject(r, ATTN_REASON_NARROWED, "conf", c->conf_file, n->line,
                              "%s %d not in %s = {%s}", field, v, n->key, list);
            }
            break;
        }
        case NARROW_MIN:
            if (v < n->limit)
                return reject(r, ATTN_REASON_NARROWED, "conf", c->conf_file, n->line,
                              "%s %d below %s = %d", field, v, n->key, n->limit);
            break;
        case NARROW_MAX:
            if (v > n->limit)
                return reject(r, ATTN_REASON_NARROWED, "conf", c->conf_file, n->line,
                              "%s %d above %s = %d", field, v, n->key, n->limit);
            break;
        case NARROW_FEATURE:
            if (v && !n->allowed)
                return reject(r, ATTN_REASON_NARROWED, "conf", c->conf_file, n->line,
                              "%s turned off by %s = false", field, n->key);
            break;
        }
    }
    return 1;
}

/* Conf-layer sentences leave out file:line: the record carries them, and
 * the unsupported list and the CLI print them beside the sentence. */
static int check_conf_layer(const attn_candidate *c, const attn_shape *s, verdict_rec *r)
{
    if (!c->enabled)
        return reject(r, ATTN_REASON_DISABLED, "conf", c->conf_file, c->enabled_line,
                      "disabled by enabled = false");
    if (c->host_disabled)
        return reject(r, ATTN_REASON_DISABLED_BY_HOST, "host", NULL, 0,
                      "disabled by the host (registry option or ATTNREG_DISABLE)");
    int listed = 0;
    for (uint32_t i = 0; i < c->num_archs; i++)
        listed |= strcmp(c->archs[i], s->arch) == 0;
    if (!listed)
        return reject(r, ATTN_REASON_ARCH_NOT_LISTED, "conf", c->conf_file, c->archs_line,
                      "arch %s not in its archs (%s)", s->arch, c->archs_text);
    return check_narrowing(c, s, r);
}

static int check_plugin_layer(attn_candidate *c, const attn_shape *s, verdict_rec *r)
{
    if (!attn_candidate_ensure_loaded(c))
        return reject(r, c->load_reason, "load", c->conf_file, c->name_line, "%s",
                      c->load_message ? c->load_message : "load failed");
    for (uint32_t i = 0; i < c->desc.num_predicates; i++) {
        const attn_predicate *p = &c->desc.predicates[i];
        attn_verdict v;
        memset(&v, 0, sizeof v);
        v.struct_size = sizeof v;
        /* Each predicate sees a private copy: one that writes through its
         * const pointer cannot change the shape the host is told about, or
         * what the next predicate sees. */
        attn_shape given = *s;
        if (p->check(&c->ctx, &given, &v))
            continue;
        /* A plugin that rejects without saying why still gets a record that
         * names the predicate, so the trail is never blank. */
        v.message[sizeof v.message - 1] = '\0';
        if (!attn_reason_is_plugin(v.reason))
            return reject(r, ATTN_REASON_INVALID_REASON, p->name, NULL, 0,
                          "plugin returned an invalid reason %d (%s) from predicate %s: %s",
                          (int)v.reason, attn_reason_name(v.reason), p->name,
                          v.message[0] ? v.message : "rejected without a reason");
        return reject(r, v.reason, p->name, NULL, 0, "%s",
                      v.message[0] ? v.message : "rejected without a reason");
    }
    /* After the predicates, so a plugin that knows it cannot write the LSE
     * says why in its own words first; this catches the plugins that never
     * look at return_lse (every one older than ABI 1.3), which would accept
     * the shape and leave the LSE unwritten. */
    if (s->return_lse && !(c->desc.forward_features & ATTN_FORWARD_LSE))
        return reject(r, ATTN_REASON_LSE, "host", NULL, 0,
                      "the shape asks for the log-sum-exp output, which %s does not write (its "
                      "plugin declares no ATTN_FORWARD_LSE)",
                      c->name);
    return 1;
}

static int check_runnable_layer(attn_candidate *c, const attn_shape *s, verdict_rec *r)
{
    char why[512];
    attn_status st = attn_candidate_can_run(c, s->arch, why, sizeof why);
    if (st == ATTN_OK)
        return 1;
    return reject(r,
                  st == ATTN_ERR_NO_DEVICE ? ATTN_REASON_NO_DEVICE : ATTN_REASON_ARCH_NOT_IN_BINARY,
                  "runnable", NULL, 0, "%s", why);
}

/* ---- passes ------------------------------------------------------------ */

/* Evaluates one pass; returns the winner's index in `list` or -1. */
static long evaluate_pass(attn_registry *reg, attn_candidate *const *list, size_t n,
                          const attn_shape *s, int32_t pass, int evaluate_all, attn_explanation *ex)
{
    long winner = -1;
    for (size_t i = 0; i < n; i++) {
        attn_candidate *c = list[i];
        verdict_rec *r = add_record(ex, pass, c);
        if (!r)
            return winner;
        if (check_conf_layer(c, s, r) && check_plugin_layer(c, s, r) &&
            (!reg->runnable || check_runnable_layer(c, s, r))) {
            r->accepted = 1;
            r->reason = ATTN_REASON_NONE;
            r->message = attn_strdup("accepted");
            r->predicate = "all";
            if (winner < 0) {
                winner = (long)i;
                r->selected = 1;
                if (!evaluate_all)
                    return winner;
            }
        }
    }
    return winner;
}

static int is_conf_only_rejection(int32_t reason)
{
    return reason == ATTN_REASON_ARCH_NOT_LISTED || reason == ATTN_REASON_DISABLED ||
           reason == ATTN_REASON_DISABLED_BY_HOST;
}

/* The rejection that motivated a fallback: what the eventual winner said
 * about the shape as asked (for FP8 -> BF16 on a GQA shape, aiter-generic's
 * "FP8 compute is MHA-only", not the MTP plugin's unrelated Q_LEN). Without
 * a winner record, the highest-priority candidate that was really in the
 * running for the arch: one that the arch list or an enabled switch turned
 * away says nothing about the shape. */
static const verdict_rec *motivating_rejection(const attn_explanation *ex,
                                               const attn_candidate *winner)
{
    const verdict_rec *first = NULL, *first_real = NULL;
    for (size_t i = 0; i < ex->num_records; i++) {
        const verdict_rec *r = &ex->records[i];
        if (r->pass != 0 || r->accepted)
            continue;
        if (r->candidate == winner)
            return r;
        if (!first)
            first = r;
        if (!first_real && !is_conf_only_rejection(r->reason))
            first_real = r;
    }
    return first_real ? first_real : first;
}

static int add_pass(attn_explanation *ex, const attn_shape *s, const char *rule)
{
    attn_shape *ps = realloc(ex->pass_shapes, (ex->num_passes + 1) * sizeof *ps);
    if (!ps)
        return 0;
    ex->pass_shapes = ps;
    char **pr = realloc(ex->pass_rules, (ex->num_passes + 1) * sizeof *pr);
    if (!pr)
        return 0;
    ex->pass_rules = pr;
    ex->pass_shapes[ex->num_passes] = *s;
    ex->pass_rules[ex->num_passes] = rule ? attn_strdup(rule) : NULL;
    ex->num_passes++;
    return 1;
}

static char *rejection_list(const attn_explanation *ex)
{
    strbuf sb = {0};
    for (size_t p = 0; p < ex->num_passes; p++) {
        char shape_text[512];
        attn_shape_format(&ex->pass_shapes[p], shape_text, sizeof shape_text);
        if (p == 0)
            strbuf_printf(&sb, "no backend accepts %s", shape_text);
        else
            strbuf_printf(&sb, "\nafter fallback %s:", ex->pass_rules[p]);
        for (size_t i = 0; i < ex->num_records; i++) {
            const verdict_rec *r = &ex->records[i];
            if (r->pass != (int32_t)p || r->accepted)
                continue;
            strbuf_printf(&sb, "\n  %s: %s: %s", r->candidate->name, attn_reason_name(r->reason),
                          r->message);
            if (r->conf_file)
                strbuf_printf(&sb, " (%s:%d)", r->conf_file, r->conf_line);
        }
    }
    return strbuf_take(&sb);
}

static attn_candidate *find_by_name(attn_registry *reg, const char *name)
{
    for (size_t i = 0; i < reg->num_candidates; i++)
        if (strcmp(reg->candidates[i]->name, name) == 0)
            return reg->candidates[i];
    return NULL;
}

/* Builds the whole decision for a normalised shape into `ex`. */
static attn_status decide(attn_registry *reg, const attn_shape *shape, int evaluate_all,
                          attn_explanation *ex)
{
    decision *d = &ex->result;
    memset(d, 0, sizeof *d);
    d->effective = *shape;
    char why[512];
    if (!attn_shape_validate(shape, why, sizeof why)) {
        d->status = ATTN_ERR_INVALID_SHAPE;
        d->message = attn_strdup(why);
        return d->status;
    }
    attn_candidate *const *list = reg->candidates;
    size_t n = reg->num_candidates;
    attn_candidate *forced = NULL;
    if (reg->forced_backend) {
        forced = find_by_name(reg, reg->forced_backend);
        if (!forced) {
            strbuf sb = {0};
            strbuf_printf(&sb,
                          "forced backend '%s' is not registered (known:", reg->forced_backend);
            for (size_t i = 0; i < reg->num_candidates; i++)
                strbuf_printf(&sb, " %s", reg->candidates[i]->name);
            strbuf_printf(&sb, "%s)", reg->num_candidates ? "" : " none");
            d->status = ATTN_ERR_NOT_FOUND;
            d->message = strbuf_take(&sb);
            return d->status;
        }
        list = &forced;
        n = 1;
    }

    attn_shape current = *shape;
    add_pass(ex, &current, NULL);
    long winner = evaluate_pass(reg, list, n, &current, 0, evaluate_all, ex);
    int32_t pass = 0;
    strbuf rules_text = {0};
    /* Fallback never applies to a forced backend: the host asked for that
     * backend on that shape, and a substitute answer would be silent. */
    for (size_t k = 0; winner < 0 && !reg->strict && !forced && k < reg->num_rules; k++) {
        const fallback_rule *rule = &reg->rules[k];
        if (attn_shape_field_get(&current, rule->field) != rule->from)
            continue;
        attn_shape_field_set(&current, rule->field, rule->to);
        pass++;
        add_pass(ex, &current, rule->text);
        strbuf_printf(&rules_text, "%s%s", rules_text.len ? ", then " : "", rule->text);
        winner = evaluate_pass(reg, list, n, &current, pass, evaluate_all, ex);
    }
    char *rules = strbuf_take(&rules_text);

    if (winner >= 0) {
        d->status = ATTN_OK;
        d->winner = list[winner];
        d->effective = current;
        d->message = attn_strdup("");
        if (pass > 0) {
            const verdict_rec *m = motivating_rejection(ex, list[winner]);
            d->fallback_applied = 1;
            d->fallback_rule = rules;
            rules = NULL;
            if (m) {
                d->fallback_backend = m->candidate->name;
                d->fallback_reason = m->reason;
                d->fallback_message = attn_strdup(m->message);
            }
        }
        free(rules);
        return ATTN_OK;
    }
    free(rules);
    if (forced) {
        const verdict_rec *r = &ex->records[0];
        d->status = ATTN_ERR_BACKEND_REJECTED;
        d->message = attn_asprintf("forced backend %s rejects the shape: %s: %s", forced->name,
                                   attn_reason_name(r->reason), r->message);
        return d->status;
    }
    d->status = ATTN_ERR_UNSUPPORTED;
    d->message = reg->num_candidates ? rejection_list(ex)
                                     : attn_strdup("no backend is registered (no plugin INI "
                                                   "found on the conf path)");
    return d->status;
}

/* ---- explanations ------------------------------------------------------ */

static void explanation_free_parts(attn_explanation *ex)
{
    for (size_t i = 0; i < ex->num_records; i++)
        free(ex->records[i].message);
    free(ex->records);
    for (size_t p = 0; p < ex->num_passes; p++)
        free(ex->pass_rules[p]);
    free(ex->pass_rules);
    free(ex->pass_shapes);
    attn_decision_free(&ex->result);
}

/* The decision's fields that every published selection layout has, set by
 * name: the layouts differ only in where the embedded shape ends. */
#define SET_SELECTION_FIELDS(sel, d)                                                               \
    do {                                                                                           \
        (sel).backend_name = (d)->winner ? (d)->winner->name : NULL;                               \
        (sel).candidate = (d)->winner;                                                             \
        (sel).fallback_applied = (d)->fallback_applied;                                            \
        (sel).fallback_rule = (d)->fallback_rule;                                                  \
        (sel).fallback_backend = (d)->fallback_backend;                                            \
        (sel).fallback_reason = (d)->fallback_reason;                                              \
        (sel).fallback_message = (d)->fallback_message;                                            \
        (sel).message = (d)->message ? (d)->message : "";                                          \
        (sel).graph_capturable = (d)->winner && (d)->winner->desc.graph_capturable ? 1 : 0;        \
    } while (0)

/* One published layout T of attn_selection, from today's: the same fields by
 * name, the embedded shape cut to T's. */
#define WRITE_SELECTION_LAYOUT(T, full, out, size)                                                 \
    do {                                                                                           \
        T old;                                                                                     \
        memset(&old, 0, sizeof old);                                                               \
        old.struct_size = (size);                                                                  \
        old.backend_name = (full)->backend_name;                                                   \
        old.candidate = (full)->candidate;                                                         \
        old.fallback_applied = (full)->fallback_applied;                                           \
        old.fallback_rule = (full)->fallback_rule;                                                 \
        old.fallback_backend = (full)->fallback_backend;                                           \
        old.fallback_reason = (full)->fallback_reason;                                             \
        old.fallback_message = (full)->fallback_message;                                           \
        old.message = (full)->message;                                                             \
        old.graph_capturable = (full)->graph_capturable;                                           \
        attn_copy_versioned(&old.effective_shape, sizeof old.effective_shape,                      \
                            &(full)->effective_shape, sizeof(full)->effective_shape);              \
        old.effective_shape.struct_size = sizeof old.effective_shape;                              \
        attn_copy_versioned((out), (size), &old, sizeof old);                                      \
    } while (0)

void attn_selection_to_layout(const attn_selection *full, attn_selection *out)
{
    const uint32_t size = out->struct_size;
    /* A host built against an older layout (0.1's is a prefix of 0.3's):
     * its effective_shape is that version's attn_shape and the fields after
     * it sit where that version put them. */
    if (size < sizeof *out && size <= sizeof(attn_selection_0_3)) {
        WRITE_SELECTION_LAYOUT(attn_selection_0_3, full, out, size);
        return;
    }
    if (size < sizeof *out && size <= sizeof(attn_selection_0_4)) {
        WRITE_SELECTION_LAYOUT(attn_selection_0_4, full, out, size);
        return;
    }
    attn_selection copy = *full;
    copy.struct_size = size;
    attn_copy_versioned(out, size, &copy, sizeof copy);
}

#undef WRITE_SELECTION_LAYOUT

static void fill_selection(const decision *d, attn_selection *out)
{
    const uint32_t size = out->struct_size;
    if (size == sizeof *out) { /* today's host: in place (the cached-select path) */
        SET_SELECTION_FIELDS(*out, d);
        out->effective_shape = d->effective;
        return;
    }
    attn_selection full;
    memset(&full, 0, sizeof full);
    full.struct_size = size;
    SET_SELECTION_FIELDS(full, d);
    full.effective_shape = d->effective;
    attn_selection_to_layout(&full, out);
}

#undef SET_SELECTION_FIELDS

ATTNREG_API void attn_selection_init_sized(attn_selection *sel, size_t size)
{
    if (!sel || size < sizeof(uint32_t))
        return;
    decision none;
    memset(&none, 0, sizeof none);
    sel->struct_size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    fill_selection(&none, sel);
}

/* Hosts built before 0.3 call this symbol with a 0.1 selection at least. */
ATTNREG_API void(attn_selection_init)(attn_selection *sel)
{
    attn_selection_init_sized(sel, sizeof(attn_selection_0_1));
}

/* `d` is passed apart from `ex` because the cache took ex->result over. */
static void log_decision(attn_registry *reg, const attn_explanation *ex, const decision *d)
{
    if (reg->logger.level <= ATTN_LOG_DEBUG)
        for (size_t i = 0; i < ex->num_records; i++) {
            const verdict_rec *r = &ex->records[i];
            if (!r->accepted)
                attn_log(&reg->logger, ATTN_LOG_DEBUG, "%s skipped: %s", r->candidate->name,
                         r->message);
        }
    /* Formatting the shape costs more than the rest of an uncached select:
     * skip it when no line below would be printed. */
    if (reg->logger.level > ATTN_LOG_WARN ||
        (reg->logger.level > ATTN_LOG_INFO && !d->fallback_applied))
        return;
    char shape_text[512];
    attn_shape_format(&d->effective, shape_text, sizeof shape_text);
    if (d->status != ATTN_OK) {
        attn_log(&reg->logger, ATTN_LOG_INFO, "%s: %s", attn_status_name(d->status), d->message);
        return;
    }
    if (d->fallback_applied)
        attn_log(&reg->logger, ATTN_LOG_WARN,
                 "fallback %s applied: %s rejected the shape as asked (%s: %s); selected %s for "
                 "%s",
                 d->fallback_rule, d->fallback_backend ? d->fallback_backend : "?",
                 attn_reason_name(d->fallback_reason),
                 d->fallback_message ? d->fallback_message : "", d->winner->name, shape_text);
    attn_log(&reg->logger, ATTN_LOG_INFO, "selected %s for %s", d->winner->name, shape_text);
}

ATTNREG_API attn_status attn_registry_select(attn_registry *reg, const attn_shape *shape,
                                             attn_selection *sel)
{
    if (!reg || !shape || !sel)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_select: NULL argument");
    if (sel->struct_size < ATTN_SELECTION_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT,
                         "selection struct_size %u too small; call attn_selection_init()",
                         sel->struct_size);
    attn_shape key;
    attn_status st = attn_shape_normalize(shape, &key);
    if (st != ATTN_OK)
        return st;
    uint64_t hash = attn_shape_hash(&key);
    const cache_node *n = attn_cache_find(reg, &key, hash);
    if (!n) {
        attn_explanation ex;
        memset(&ex, 0, sizeof ex);
        decide(reg, &key, 0, &ex);
        int inserted;
        n = attn_cache_insert(reg, &key, hash, &ex.result, &inserted);
        if (!n) {
            /* Not cached (cache full or no memory): the selection's strings
             * must still live until the registry is closed, as the header
             * promises, so they are interned in the registry (one copy per
             * distinct string; no per-thread state to leak). */
            log_decision(reg, &ex, &ex.result);
            decision kept = ex.result;
            memset(&ex.result, 0, sizeof ex.result);
            explanation_free_parts(&ex);
            attn_cache_intern(reg, &kept);
            fill_selection(&kept, sel);
            if (kept.status != ATTN_OK)
                return attn_fail(kept.status, "%s", kept.message);
            return ATTN_OK;
        }
        if (inserted)
            log_decision(reg, &ex, &n->result);
        explanation_free_parts(&ex);
    }
    fill_selection(&n->result, sel);
    if (n->result.status != ATTN_OK)
        return attn_fail(n->result.status, "%s", n->result.message);
    return ATTN_OK;
}

ATTNREG_API attn_status attn_registry_explain(attn_registry *reg, const attn_shape *shape,
                                              attn_explanation **out)
{
    if (!reg || !shape || !out)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_registry_explain: NULL argument");
    *out = NULL;
    attn_shape key;
    attn_status st = attn_shape_normalize(shape, &key);
    if (st != ATTN_OK)
        return st;
    attn_explanation *ex = calloc(1, sizeof *ex);
    if (!ex)
        return attn_fail(ATTN_ERR_NO_MEMORY, "out of memory");
    st = decide(reg, &key, 1, ex);
    *out = ex;
    if (st != ATTN_OK)
        attn_fail(st, "%s", ex->result.message);
    return st;
}

ATTNREG_API void attn_explanation_free(attn_explanation *ex)
{
    if (!ex)
        return;
    explanation_free_parts(ex);
    free(ex);
}

ATTNREG_API attn_status attn_explanation_status(const attn_explanation *ex)
{
    return ex ? ex->result.status : ATTN_ERR_INVALID_ARGUMENT;
}

ATTNREG_API size_t attn_explanation_count(const attn_explanation *ex)
{
    return ex ? ex->num_records : 0;
}

ATTNREG_API attn_status attn_explanation_record(const attn_explanation *ex, size_t i,
                                                attn_verdict_record *out)
{
    if (!ex || !out || i >= ex->num_records || out->struct_size < ATTN_VERDICT_RECORD_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_explanation_record: bad argument");
    const verdict_rec *r = &ex->records[i];
    attn_verdict_record full;
    memset(&full, 0, sizeof full);
    full.struct_size = out->struct_size;
    full.pass = r->pass;
    full.backend = r->candidate->name;
    full.accepted = r->accepted;
    full.selected = r->selected;
    full.reason = r->reason;
    full.reason_name = attn_reason_name(r->reason);
    full.message = r->message ? r->message : "";
    full.predicate = r->predicate ? r->predicate : "";
    full.conf_file = r->conf_file;
    full.conf_line = r->conf_line;
    full.priority = r->candidate->priority;
    attn_copy_versioned(out, out->struct_size, &full, sizeof full);
    return ATTN_OK;
}

ATTNREG_API attn_status attn_explanation_selection(const attn_explanation *ex, attn_selection *out)
{
    if (!ex || !out || out->struct_size < ATTN_SELECTION_MIN_SIZE)
        return attn_fail(ATTN_ERR_INVALID_ARGUMENT, "attn_explanation_selection: bad argument");
    fill_selection(&ex->result, out);
    return ex->result.status;
}

ATTNREG_API size_t attn_explanation_pass_count(const attn_explanation *ex)
{
    return ex ? ex->num_passes : 0;
}

ATTNREG_API const char *attn_explanation_pass_rule(const attn_explanation *ex, size_t pass)
{
    return ex && pass < ex->num_passes ? ex->pass_rules[pass] : NULL;
}

ATTNREG_API const attn_shape *attn_explanation_pass_shape(const attn_explanation *ex, size_t pass)
{
    return ex && pass < ex->num_passes ? &ex->pass_shapes[pass] : NULL;
}
