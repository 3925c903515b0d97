/* SPDX-License-Identifier: Apache-2.0 */
/* hf_config.c — the attention numbers of a Hugging Face config.json, read
 * with jansson. Every key is checked for its type and range, and every error
 * names the file and the key; nothing a file holds can crash the reader. */
#include "hf_config.h"

#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attn_tool_error.h"
#include "attn_tool_file.h"
#include "internal.h" /* strmap (core/strmap.c) */

/* Behaviour that a config does not spell out but its model type implies
 * (docs/DESIGN.md, "Planning a model", keeps this table too). */
static const struct model_type_rule {
    const char *model_type;
    int sinks;               /* per-head sink logits in every attention layer */
    int32_t sliding_pattern; /* without layer_types: layer i slides unless (i+1) % pattern == 0 */
    const char *why;
} model_type_rules[] = {
    {"gpt_oss", 1, 0, "gpt-oss attention has learned per-head sinks"},
    {"gemma2", 0, 2, "Gemma 2 alternates sliding and full layers, sliding first"},
    {"gemma3", 0, 6, "Gemma 3 has five sliding layers, then a full one"},
    {"gemma3_text", 0, 6, "Gemma 3 has five sliding layers, then a full one"},
};

static const struct model_type_rule *rule_for(const char *model_type)
{
    for (size_t k = 0; k < sizeof model_type_rules / sizeof model_type_rules[0]; k++)
        if (strcmp(model_type_rules[k].model_type, model_type) == 0)
            return &model_type_rules[k];
    return NULL;
}

/* ---- errors and notes ---------------------------------------------------- */

typedef struct reader {
    const char *path;
    const char *section; /* "" or "text_config." */
    json_t *obj;         /* the section */
    hf_config *cfg;
    char *err;
    size_t err_size;
    /* layer type name -> its index in cfg->type_names: a config of 65 536
     * distinct names took 11 s of CPU interning them by linear search */
    strmap type_index;
} reader;

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static hf_config_status
key_error(reader *r, hf_config_status status, const char *key, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    attn_tool_fail(r->err, r->err_size, "%s: %s%s: %s", r->path, r->section, key, what);
    return status;
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
note(hf_config *cfg, const char *fmt, ...)
{
    if (cfg->num_notes == HF_CONFIG_MAX_NOTES)
        return;
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    char *copy = malloc(strlen(text) + 1);
    if (copy) {
        memcpy(copy, text, strlen(text) + 1);
        cfg->notes[cfg->num_notes++] = copy;
    }
}

/* "st", "nd", "rd" or "th" after n. */
static const char *ordinal_suffix(int32_t n)
{
    if (n % 100 >= 11 && n % 100 <= 13)
        return "th";
    return n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number with a fraction or exponent";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
    default:
        return "null";
    }
}

/* ---- typed keys: 1 = present, 0 = absent or null, -1 = error (reported) --- */

static int get_int(reader *r, const char *key, long long min, long long max, int32_t *out)
{
    json_t *v = json_object_get(r->obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v)) {
        key_error(r, HF_CONFIG_MALFORMED, key, "expected an integer, got %s", type_name(v));
        return -1;
    }
    json_int_t x = json_integer_value(v);
    if (x < min || x > max) {
        key_error(r, HF_CONFIG_MALFORMED, key, "%lld is out of range (expected %lld to %lld)",
                  (long long)x, min, max);
        return -1;
    }
    *out = (int32_t)x;
    return 1;
}

static int require_int(reader *r, const char *key, long long min, long long max, int32_t *out)
{
    int got = get_int(r, key, min, max, out);
    if (got == 0)
        key_error(r, HF_CONFIG_MALFORMED, key, "%s; every config.json of a decoder names it",
                  json_object_get(r->obj, key) ? "is null" : "is missing");
    return got == 1 ? 1 : -1;
}

static int get_bool(reader *r, const char *key, int *out)
{
    json_t *v = json_object_get(r->obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v)) {
        key_error(r, HF_CONFIG_MALFORMED, key, "expected true or false, got %s", type_name(v));
        return -1;
    }
    *out = json_is_true(v);
    return 1;
}

static int get_nonnegative_number(reader *r, const char *key, float *out)
{
    json_t *v = json_object_get(r->obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v)) {
        key_error(r, HF_CONFIG_MALFORMED, key, "expected a number, got %s", type_name(v));
        return -1;
    }
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0 || x > FLT_MAX) {
        key_error(r, HF_CONFIG_MALFORMED, key, "%g is out of range (expected a number >= 0)", x);
        return -1;
    }
    *out = (float)x;
    return 1;
}

/* ---- layers ------------------------------------------------------------- */

/* The longest layer type name accepted; real ones are under 20 characters. */
#define TYPE_NAME_MAX 64

static const char *intern_type_name(reader *r, const char *name)
{
    hf_config *cfg = r->cfg;
    const strmap_slot *slot = strmap_find(&r->type_index, name, NULL);
    if (slot)
        return cfg->type_names[slot->value];
    /* Capacity doubles (a power of two, grown when full): amortised O(1). */
    size_t k = cfg->num_type_names;
    if ((k & (k - 1)) == 0) {
        char **names = realloc(cfg->type_names, (k ? 2 * k : 1) * sizeof *names);
        if (!names)
            return NULL;
        cfg->type_names = names;
    }
    size_t n = strlen(name) + 1;
    char *copy = malloc(n);
    if (!copy)
        return NULL;
    memcpy(copy, name, n);
    if (strmap_put(&r->type_index, copy, NULL, k, &slot) < 0) {
        free(copy);
        return NULL;
    }
    cfg->type_names[cfg->num_type_names++] = copy;
    return copy;
}

static int valid_type_name(const char *s, size_t len)
{
    if (len == 0 || len > TYPE_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

static void set_layer(attn_layer *l, int32_t kind, int32_t window, const char *name)
{
    attn_layer_init(l, sizeof *l);
    l->kind = kind;
    l->type_name = name;
    if (kind == ATTN_LAYER_SLIDING) {
        /* HF sliding_window W: a query sees the W keys ending at itself
         * (transformers' masks keep kv > q - W), so W - 1 to its left. */
        l->window_left = window - 1;
        l->window_right = 0;
    }
}

/* The sliding window in effect: 0 = none, else W. */
typedef struct window_info {
    int32_t window;
    int32_t use_given;      /* use_sliding_window present */
    int use_sliding_window; /* its value */
    int32_t max_window_layers;
    int32_t has_max_window_layers;
} window_info;

static hf_config_status layers_from_types(reader *r, json_t *types, const window_info *w)
{
    hf_config *cfg = r->cfg;
    if (!json_is_array(types))
        return key_error(r, HF_CONFIG_MALFORMED, "layer_types", "expected an array, got %s",
                         type_name(types));
    if (json_array_size(types) != (size_t)cfg->num_layers)
        return key_error(r, HF_CONFIG_MALFORMED, "layer_types",
                         "has %zu entries but num_hidden_layers is %d", json_array_size(types),
                         cfg->num_layers);
    for (int32_t i = 0; i < cfg->num_layers; i++) {
        json_t *v = json_array_get(types, (size_t)i);
        char key[48];
        snprintf(key, sizeof key, "layer_types[%d]", i);
        if (!json_is_string(v))
            return key_error(r, HF_CONFIG_MALFORMED, key, "expected a string, got %s",
                             type_name(v));
        const char *s = json_string_value(v);
        size_t len = json_string_length(v);
        if (!valid_type_name(s, len))
            return key_error(r, HF_CONFIG_MALFORMED, key,
                             "not a layer type name (1 to %d letters, digits, '_', '-', '.')",
                             TYPE_NAME_MAX);
        if (strcmp(s, "full_attention") == 0) {
            set_layer(&cfg->layers[i], ATTN_LAYER_FULL, 0, "full_attention");
        } else if (strcmp(s, "sliding_attention") == 0) {
            if (!w->window)
                return key_error(r, HF_CONFIG_MALFORMED, key, "is sliding_attention but %s",
                                 w->use_given && !w->use_sliding_window
                                     ? "use_sliding_window is false"
                                     : "sliding_window is absent or null");
            set_layer(&cfg->layers[i], ATTN_LAYER_SLIDING, w->window, "sliding_attention");
        } else if (strcmp(s, "chunked_attention") == 0) {
            return key_error(r, HF_CONFIG_UNSUPPORTED, key,
                             "chunked_attention (chunked local attention, as in Llama 4) is not "
                             "handled by any backend here");
        } else {
            const char *name = intern_type_name(r, s);
            if (!name)
                return key_error(r, HF_CONFIG_MALFORMED, key, "out of memory");
            set_layer(&cfg->layers[i], ATTN_LAYER_NOT_ATTENTION, 0, name);
        }
    }
    return HF_CONFIG_OK;
}

/* Without layer_types: the keys that older configs use, then the model-type
 * table, then "the sliding window on every layer" (Mistral). */
static hf_config_status layers_derived(reader *r, const window_info *w, int32_t interval,
                                       int32_t pattern)
{
    hf_config *cfg = r->cfg;
    const struct model_type_rule *rule = rule_for(cfg->model_type);
    if (interval) {
        const char *linear = intern_type_name(r, "linear_attention");
        if (!linear)
            return key_error(r, HF_CONFIG_MALFORMED, "full_attention_interval", "out of memory");
        for (int32_t i = 0; i < cfg->num_layers; i++)
            set_layer(&cfg->layers[i],
                      (i + 1) % interval ? ATTN_LAYER_NOT_ATTENTION : ATTN_LAYER_FULL, 0,
                      (i + 1) % interval ? linear : "full_attention");
        note(cfg,
             "layer_types absent: every %d%s layer is full_attention, the others "
             "linear_attention (full_attention_interval %d)",
             interval, ordinal_suffix(interval), interval);
        return HF_CONFIG_OK;
    }
    if (!w->window) {
        for (int32_t i = 0; i < cfg->num_layers; i++)
            set_layer(&cfg->layers[i], ATTN_LAYER_FULL, 0, "full_attention");
        return HF_CONFIG_OK;
    }
    const char *why = NULL;
    if (!pattern && rule && rule->sliding_pattern) {
        pattern = rule->sliding_pattern;
        why = rule->why;
    }
    int32_t first_sliding = 0;
    if (pattern) {
        if (!why)
            note(cfg,
                 "layer_types absent: every layer slides except every %d%s "
                 "(sliding_window_pattern %d)",
                 pattern, ordinal_suffix(pattern), pattern);
        else
            note(cfg, "layer_types absent: %s (model_type %s)", why, cfg->model_type);
    } else if (w->use_given) {
        first_sliding = w->has_max_window_layers ? w->max_window_layers : 0;
        note(cfg, "layer_types absent: use_sliding_window is true, so layers %d and up slide%s",
             first_sliding, w->has_max_window_layers ? " (max_window_layers)" : "");
    } else {
        note(cfg, "layer_types absent: sliding_window %d applies to every layer", w->window);
    }
    for (int32_t i = 0; i < cfg->num_layers; i++) {
        int sliding = pattern ? (i + 1) % pattern != 0 : i >= first_sliding;
        set_layer(&cfg->layers[i], sliding ? ATTN_LAYER_SLIDING : ATTN_LAYER_FULL, w->window,
                  sliding ? "sliding_attention" : "full_attention");
    }
    return HF_CONFIG_OK;
}

/* ---- the whole file -------------------------------------------------------- */

static hf_config_status refuse_unsupported(reader *r)
{
    json_t *mla = json_object_get(r->obj, "kv_lora_rank");
    if (mla && !json_is_null(mla)) {
        if (json_is_integer(mla))
            return key_error(r, HF_CONFIG_UNSUPPORTED, "kv_lora_rank",
                             "set (%lld): the model uses multi-head latent attention (MLA, as in "
                             "DeepSeek-V2/V3); no backend here handles latent attention, so "
                             "nothing is planned",
                             (long long)json_integer_value(mla));
        return key_error(r, HF_CONFIG_UNSUPPORTED, "kv_lora_rank",
                         "set: the model uses multi-head latent attention (MLA, as in "
                         "DeepSeek-V2/V3); no backend here handles latent attention, so nothing "
                         "is planned");
    }
    int alibi = 0;
    if (get_bool(r, "alibi", &alibi) < 0)
        return HF_CONFIG_MALFORMED;
    if (alibi)
        return key_error(r, HF_CONFIG_UNSUPPORTED, "alibi",
                         "true: the model adds ALiBi position biases to its attention scores, "
                         "which no backend here computes");
    json_t *chunk = json_object_get(r->obj, "attention_chunk_size");
    if (chunk && !json_is_null(chunk))
        return key_error(
            r, HF_CONFIG_UNSUPPORTED, "attention_chunk_size",
            "set: the model uses chunked local attention (as in Llama 4), which no backend "
            "here handles");
    return HF_CONFIG_OK;
}

static hf_config_status read_heads(reader *r)
{
    hf_config *cfg = r->cfg;
    if (require_int(r, "num_attention_heads", 1, INT32_MAX, &cfg->num_q_heads) < 0 ||
        require_int(r, "num_hidden_layers", 1, ATTN_MODEL_MAX_LAYERS, &cfg->num_layers) < 0)
        return HF_CONFIG_MALFORMED;
    int got = get_int(r, "num_key_value_heads", 1, INT32_MAX, &cfg->num_kv_heads);
    if (got < 0)
        return HF_CONFIG_MALFORMED;
    /* Falcon spells the KV heads its own way: num_kv_heads (new decoder
     * architecture) or multi_query (one KV head). Reading them as absent
     * would plan MHA, a wrong shape. */
    if (got == 0) {
        got = get_int(r, "num_kv_heads", 1, INT32_MAX, &cfg->num_kv_heads);
        if (got < 0)
            return HF_CONFIG_MALFORMED;
        if (got)
            note(cfg, "num_key_value_heads absent: num_kv_heads %d (Falcon's key)",
                 cfg->num_kv_heads);
    }
    int multi_query = 0;
    if (got == 0 && get_bool(r, "multi_query", &multi_query) < 0)
        return HF_CONFIG_MALFORMED;
    if (got == 0 && multi_query) {
        cfg->num_kv_heads = 1;
        note(cfg, "num_key_value_heads absent: multi_query is true, so one KV head");
    } else if (got == 0) {
        cfg->num_kv_heads = cfg->num_q_heads;
        note(cfg, "num_key_value_heads absent: multi-head attention (%d KV heads)",
             cfg->num_kv_heads);
    }
    got = get_int(r, "head_dim", 1, INT32_MAX, &cfg->head_dim);
    if (got < 0)
        return HF_CONFIG_MALFORMED;
    if (got == 0) {
        int32_t hidden = 0;
        got = get_int(r, "hidden_size", 1, INT32_MAX, &hidden);
        if (got < 0)
            return HF_CONFIG_MALFORMED;
        if (got == 0)
            return key_error(r, HF_CONFIG_MALFORMED, "head_dim",
                             "is absent, and so is hidden_size, which would give it");
        if (hidden % cfg->num_q_heads != 0)
            return key_error(r, HF_CONFIG_MALFORMED, "hidden_size",
                             "%d is not a multiple of num_attention_heads (%d), so head_dim "
                             "cannot be derived: the config needs head_dim",
                             hidden, cfg->num_q_heads);
        cfg->head_dim = hidden / cfg->num_q_heads;
        note(cfg, "head_dim absent: hidden_size %d / num_attention_heads %d = %d", hidden,
             cfg->num_q_heads, cfg->head_dim);
    }
    return HF_CONFIG_OK;
}

static hf_config_status read_window(reader *r, window_info *w)
{
    memset(w, 0, sizeof *w);
    int32_t window = 0;
    if (get_int(r, "sliding_window", 1, INT32_MAX, &window) < 0 ||
        (w->use_given = get_bool(r, "use_sliding_window", &w->use_sliding_window)) < 0 ||
        (w->has_max_window_layers =
             get_int(r, "max_window_layers", 0, INT32_MAX, &w->max_window_layers)) < 0)
        return HF_CONFIG_MALFORMED;
    if (window && w->use_given && !w->use_sliding_window) {
        note(r->cfg, "use_sliding_window is false: sliding_window %d is not used", window);
        window = 0;
    }
    w->window = window;
    return HF_CONFIG_OK;
}

static hf_config_status read_layers(reader *r)
{
    hf_config *cfg = r->cfg;
    window_info w;
    int32_t interval = 0, pattern = 0;
    if (read_window(r, &w) != HF_CONFIG_OK ||
        get_int(r, "full_attention_interval", 1, INT32_MAX, &interval) < 0 ||
        get_int(r, "sliding_window_pattern", 1, INT32_MAX, &pattern) < 0)
        return HF_CONFIG_MALFORMED;
    cfg->layers = calloc((size_t)cfg->num_layers, sizeof *cfg->layers);
    if (!cfg->layers)
        return key_error(r, HF_CONFIG_MALFORMED, "num_hidden_layers", "out of memory");
    json_t *types = json_object_get(r->obj, "layer_types");
    hf_config_status st = types && !json_is_null(types) ? layers_from_types(r, types, &w)
                                                        : layers_derived(r, &w, interval, pattern);
    if (st != HF_CONFIG_OK)
        return st;
    for (int32_t i = 0; i < cfg->num_layers; i++) {
        if (cfg->layers[i].kind == ATTN_LAYER_SLIDING) {
            note(cfg,
                 "sliding_window %d (a query sees %d keys, itself included) is the window "
                 "(%d, 0)",
                 w.window, w.window, w.window - 1);
            break;
        }
    }
    return HF_CONFIG_OK;
}

static hf_config_status read_rest(reader *r)
{
    hf_config *cfg = r->cfg;
    if (get_nonnegative_number(r, "attn_logit_softcapping", &cfg->softcap) < 0 ||
        get_int(r, "max_position_embeddings", 1, INT32_MAX, &cfg->max_position_embeddings) < 0)
        return HF_CONFIG_MALFORMED;
    const struct model_type_rule *rule = rule_for(cfg->model_type);
    if (rule && rule->sinks) {
        cfg->has_sinks = 1;
        note(cfg, "sinks: %s (model_type %s)", rule->why, cfg->model_type);
    }
    static const char *const mtp_keys[] = {"mtp_num_hidden_layers", "num_nextn_predict_layers"};
    for (size_t k = 0; k < 2; k++) {
        int32_t mtp = 0;
        if (get_int(r, mtp_keys[k], 0, INT32_MAX, &mtp) < 0)
            return HF_CONFIG_MALFORMED;
        if (mtp > 0)
            note(cfg,
                 "%s %d: the model has MTP layers for speculative decoding; the verify phase is "
                 "planned when speculative tokens are given",
                 mtp_keys[k], mtp);
    }
    return HF_CONFIG_OK;
}

/* The section holding the numbers: the top level, or text_config. */
static hf_config_status find_section(reader *r, json_t *root)
{
    r->obj = root;
    r->section = "";
    if (json_object_get(root, "num_attention_heads"))
        return HF_CONFIG_OK;
    json_t *text = json_object_get(root, "text_config");
    if (!text)
        return HF_CONFIG_OK; /* require_int names the missing key */
    if (!json_is_object(text))
        return key_error(r, HF_CONFIG_MALFORMED, "text_config", "expected an object, got %s",
                         type_name(text));
    r->obj = text;
    r->section = "text_config.";
    r->cfg->from_text_config = 1;
    note(r->cfg, "the attention numbers are read from text_config");
    return HF_CONFIG_OK;
}

/* model_type from the section (text_config's is the more specific one),
 * else from the top level. */
static hf_config_status read_model_type(reader *r, json_t *root)
{
    const char *section = r->section;
    json_t *v = json_object_get(r->obj, "model_type");
    if ((!v || json_is_null(v)) && r->obj != root) {
        v = json_object_get(root, "model_type");
        r->section = "";
    }
    hf_config_status st = HF_CONFIG_OK;
    if (v && !json_is_null(v)) {
        if (!json_is_string(v))
            st = key_error(r, HF_CONFIG_MALFORMED, "model_type", "expected a string, got %s",
                           type_name(v));
        else if (!valid_type_name(json_string_value(v), json_string_length(v)) ||
                 json_string_length(v) >= sizeof r->cfg->model_type)
            st = key_error(r, HF_CONFIG_MALFORMED, "model_type",
                           "not a model type name (1 to %zu letters, digits, '_', '-', '.')",
                           sizeof r->cfg->model_type - 1);
        else
            memcpy(r->cfg->model_type, json_string_value(v), json_string_length(v) + 1);
    }
    r->section = section;
    return st;
}

/* Reads the whole file into memory, refusing what cannot be a config. */
static hf_config_status slurp(const char *path, char **data, size_t *size, char *err,
                              size_t err_size)
{
    /* A regular file opened with the caller's rights (attn_tool_file.h):
     * a FIFO used to block plan --hf-config forever, and a setuid attnreg
     * read (and quoted) a root-only file. */
    struct stat st;
    int fd = attn_tool_open_input(path, &st, err, err_size);
    if (fd < 0)
        return HF_CONFIG_IO;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        attn_tool_fail(err, err_size, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return HF_CONFIG_IO;
    }
    if (st.st_size > (off_t)HF_CONFIG_MAX_BYTES) {
        fclose(f);
        attn_tool_fail(err, err_size, "%s: %lld bytes, larger than %u MiB: not a config.json", path,
                       (long long)st.st_size, HF_CONFIG_MAX_BYTES >> 20);
        return HF_CONFIG_MALFORMED;
    }
    size_t expected = (size_t)st.st_size;
    char *buf = malloc(expected + 1);
    if (!buf) {
        fclose(f);
        attn_tool_fail(err, err_size, "%s: out of memory", path);
        return HF_CONFIG_IO;
    }
    /* One byte more than the size, to see a file that grows meanwhile. */
    size_t n = fread(buf, 1, expected + 1, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || n != expected) {
        free(buf);
        attn_tool_fail(err, err_size, "%s: %s", path,
                       failed ? "read error" : "changed size while being read");
        return HF_CONFIG_IO;
    }
    *data = buf;
    *size = n;
    return HF_CONFIG_OK;
}

hf_config_status hf_config_read(const char *path, hf_config *cfg, char *err, size_t err_size)
{
    memset(cfg, 0, sizeof *cfg);
    char *data = NULL;
    size_t size = 0;
    hf_config_status st = slurp(path, &data, &size, err, err_size);
    if (st != HF_CONFIG_OK)
        return st;
    st = hf_config_parse(data, size, path, cfg, err, err_size);
    free(data);
    return st;
}

hf_config_status hf_config_parse(const char *data, size_t size, const char *path, hf_config *cfg,
                                 char *err, size_t err_size)
{
    memset(cfg, 0, sizeof *cfg);
    hf_config_status st = HF_CONFIG_OK;
    if (size > HF_CONFIG_MAX_BYTES) {
        attn_tool_fail(err, err_size, "%s: %zu bytes, larger than %u MiB: not a config.json", path,
                       size, HF_CONFIG_MAX_BYTES >> 20);
        return HF_CONFIG_MALFORMED;
    }
    json_error_t jerr;
    json_t *root = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        attn_tool_fail(err, err_size, "%s:%d:%d: not valid JSON: %s", path, jerr.line, jerr.column,
                       jerr.text);
        return HF_CONFIG_MALFORMED;
    }
    reader r = {path, "", root, cfg, err, err_size, {0}};
    if (!json_is_object(root)) {
        attn_tool_fail(err, err_size, "%s: expected a JSON object at the top level, got %s", path,
                       type_name(root));
        st = HF_CONFIG_MALFORMED;
    }
    if (st == HF_CONFIG_OK)
        st = find_section(&r, root);
    if (st == HF_CONFIG_OK)
        st = read_model_type(&r, root);
    if (st == HF_CONFIG_OK)
        st = refuse_unsupported(&r);
    if (st == HF_CONFIG_OK)
        st = read_heads(&r);
    if (st == HF_CONFIG_OK)
        st = read_layers(&r);
    if (st == HF_CONFIG_OK)
        st = read_rest(&r);
    strmap_free(&r.type_index, 0); /* the names belong to cfg->type_names */
    json_decref(root);
    if (st != HF_CONFIG_OK)
        hf_config_free(cfg);
    return st;
}

void hf_config_free(hf_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->layers);
    for (size_t k = 0; k < cfg->num_type_names; k++)
        free(cfg->type_names[k]);
    free(cfg->type_names);
    for (size_t k = 0; k < cfg->num_notes; k++)
        free(cfg->notes[k]);
    memset(cfg, 0, sizeof *cfg);
}

void hf_config_apply(const hf_config *cfg, attn_model *model)
{
    model->num_q_heads = cfg->num_q_heads;
    model->num_kv_heads = cfg->num_kv_heads;
    model->head_dim = cfg->head_dim;
    model->head_dim_v = 0;
    model->num_layers = cfg->num_layers;
    model->layers = cfg->layers;
    model->softcap = cfg->softcap;
    model->has_sinks = cfg->has_sinks;
    if (cfg->max_position_embeddings > 0)
        model->max_model_len = cfg->max_position_embeddings;
}
