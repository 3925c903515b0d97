/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_plan.c — `attnreg plan --hf-config FILE`: a whole model's attention
 * decided once, at config load. The config.json gives the model's heads,
 * head size and layers (libattnreg's attn_hf_config_read); the flags give what the engine
 * chooses (target, dtypes, tensor parallelism, capacities); the library's
 * attn_registry_plan validates the model and selects a backend for every
 * (layer group, phase) on the per-rank shape. The exit code is what
 * `select` would return for the first entry that has no backend.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_help_plan(FILE *out)
{
    fputs("Usage: attnreg plan --hf-config FILE [OPTIONS]\n"
          "\n"
          "Plans a whole model's attention once, as an engine does at config load: reads\n"
          "the model's heads, head size and layers from a Hugging Face config.json,\n"
          "splits the heads over tensor-parallel ranks as vLLM and SGLang do, checks the\n"
          "model is valid (28 query heads over 6 KV heads is not) before any plugin is\n"
          "asked, and selects a backend for every layer group and phase on the shape one\n"
          "rank runs. Every rank gets the same shapes, so one plan serves them all.\n"
          "\n"
          "Prints one row per (layer group, phase): the layer type, the phase, its query\n"
          "length, the window, the backend and the layers it covers; a fallback and its\n"
          "reason, or why no backend accepts, on indented lines below the row. Layers that\n"
          "are not attention (linear attention, SSM, ...) get rows without a backend.\n"
          "\n"
          "Model flags (defaults in brackets):\n"
          "  --hf-config FILE     the model's config.json (required); a multimodal\n"
          "                       config's text_config is read when the top level has\n"
          "                       no num_attention_heads\n"
          "  --tp N               tensor-parallel ranks [1]: N must divide the query\n"
          "                       heads, and the KV heads (split) or be a multiple of\n"
          "                       them (replicated, one per rank)\n"
          "  --max-model-len N    longest context, the kv capacity of every phase\n"
          "                       [max_position_embeddings]\n"
          "  --max-prefill-tokens N\n"
          "                       largest prefill chunk, the prefill phase's query\n"
          "                       length (capped at --max-model-len) [--max-model-len]\n"
          "  --spec-tokens K      speculative tokens per step: plans a verify phase of\n"
          "                       K + 1 query tokens [0: no verify phase]\n"
          "  Phases: prefill (q = the chunk), decode (q = 1), verify (q = K + 1).\n"
          "\n",
          out);
    cli_help_common(out, CLI_ACCEPT_OF_plan);
    fputs("\n"
          "What is read from config.json (libattnreg's reader, attn_hf_config_read):\n"
          "num_attention_heads (or n_head, n_heads, num_heads), num_key_value_heads (or\n"
          "num_kv_heads, n_head_kv, multi_query; absent = MHA), head_dim (absent =\n"
          "hidden_size, n_embd or d_model / the heads), num_hidden_layers (or n_layer,\n"
          "n_layers, num_layers), layer_types (full_attention, sliding_attention; any\n"
          "other type is a layer the registry does not plan; it wins over the pattern\n"
          "keys), sliding_window (W keys, the query itself included, is the window\n"
          "W-1,0), use_sliding_window, max_window_layers, full_attention_interval,\n"
          "sliding_window_pattern (n, or letters such as LLLG), GPT-Neo's\n"
          "attention_types and window_size, attn_logit_softcapping,\n"
          "query_pre_attn_scalar and attention_multiplier (the softmax scale, else\n"
          "head_dim^-1/2), max_position_embeddings (or n_positions, max_seq_len,\n"
          "seq_length), model_type (sinks for gpt_oss; the layer pattern of gemma2 and\n"
          "gemma3 when layer_types is absent). A note says when another family's key\n"
          "was read. The config's dtype is not read: pass --q-dtype. Refused, naming\n"
          "the key, because no backend here computes them: multi-head latent attention\n"
          "(kv_lora_rank), block-sparse attention (blocksparse_*, Phi-3-small), chunked\n"
          "attention (attention_chunk_size), ALiBi (alibi, attn_config.alibi, bloom).\n"
          "The model's heads and --tp are checked before a missing max model length\n"
          "is asked for.\n"
          "\n"
          "Exit codes (as select): 0 every attention entry has a backend; 2 usage error,\n"
          "or a config.json that is not JSON or has a key of the wrong type or range;\n"
          "3 invalid model (heads that do not divide, a tp that does not divide them);\n"
          "4 some entry unsupported, or a model no backend here handles (MLA);\n"
          "5 forced backend rejects an entry or does not exist; 6 conf error;\n"
          "9 the config.json cannot be read; 10 internal.\n"
          "\n"
          "Example:\n"
          "  attnreg plan --hf-config Qwen3.5-397B-A17B/config.json --arch gfx950 \\\n"
          "      --kv-dtype fp8_e4m3fn --tp 2 --max-model-len 32768 --spec-tokens 3\n",
          out);
}

struct plan_args {
    const char *config;
    int32_t tp;
    int32_t max_model_len; /* -1 = from the config */
    int32_t max_prefill_tokens;
    int32_t spec_tokens;
};

/* cli_lists.h's CLI_PLAN_FLAG_MAP. */
enum plan_flag { CLI_PLAN_FLAG_MAP(CLI_FLAG_ID_) };
static const char *const plan_flags[] = {CLI_PLAN_FLAG_MAP(CLI_FLAG_NAME_)};

/* The plan flags: 1 consumed, 0 not ours, -1 usage error. Zero counts pass
 * through so that the library calls them an invalid model (exit 3), as a
 * zero count is for select. */
static int parse_plan_flag(struct plan_args *a, int argc, char **argv, int *i)
{
    const int k = cli_flag_index(argv[*i], plan_flags, sizeof plan_flags / sizeof plan_flags[0]);
    if (k < 0)
        return 0;
    const char *flag = plan_flags[k];
    const char *value = k == CLI_FLAG_HF_CONFIG ? cli_flag_text(argc, argv, i, flag, "file name")
                                                : cli_flag_value(argc, argv, i, flag);
    int32_t *count = &a->tp;
    if (!value)
        return -1;
    switch ((enum plan_flag)k) {
    case CLI_FLAG_HF_CONFIG:
        a->config = value;
        return 1;
    case CLI_FLAG_TP:
        count = &a->tp;
        break;
    case CLI_FLAG_MAX_MODEL_LEN:
        count = &a->max_model_len;
        break;
    case CLI_FLAG_MAX_PREFILL_TOKENS:
        count = &a->max_prefill_tokens;
        break;
    case CLI_FLAG_SPEC_TOKENS:
        count = &a->spec_tokens;
        break;
    }
    return cli_parse_int32(flag, value, 0, INT32_MAX, count) == 0 ? 1 : -1;
}

/* ---- text ---------------------------------------------------------------- */

/* "0-2,4-6,8" into buf; the layer list is the row's last column, so it may be
 * long without breaking the alignment. */
static char *format_layers(const int32_t *layers, uint32_t n)
{
    size_t cap = (size_t)n * 24 + 1, used = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j + 1 < n && layers[j + 1] == layers[j] + 1)
            j++;
        if (j == i)
            used += (size_t)snprintf(buf + used, cap - used, "%s%d", i ? "," : "", layers[i]);
        else
            used += (size_t)snprintf(buf + used, cap - used, "%s%d-%d", i ? "," : "", layers[i],
                                     layers[j]);
        i = j + 1;
    }
    return buf;
}

static int width_of(const char *s, int current)
{
    int n = s ? (int)strlen(s) : 0;
    return n > current ? n : current;
}

static const char *entry_backend_text(const attn_plan_entry *e)
{
    if (!e->selection)
        return "(not attention)";
    return e->selection->backend_name ? e->selection->backend_name : "(none)";
}

/* "L,R", or "-" for layers that are not attention. */
static const char *entry_window(const attn_plan_entry *e, char *buf, size_t size)
{
    if (!e->shape)
        return "-";
    snprintf(buf, size, "%d,%d", e->shape->window_left, e->shape->window_right);
    return buf;
}

/* Prints every line of `text`, each indented. */
static void print_indented(const char *indent, const char *text)
{
    while (text && *text) {
        size_t n = strcspn(text, "\n");
        printf("%s%.*s\n", indent, (int)n, text);
        text += n;
        if (*text == '\n')
            text++;
    }
}

static void print_entry_details(const attn_plan_entry *e)
{
    const attn_selection *sel = e->selection;
    if (!sel)
        return;
    if (e->status != ATTN_OK) {
        printf("    %s:\n", attn_status_name(e->status));
        print_indented("      ", e->message);
        return;
    }
    if (!sel->fallback_applied)
        return;
    printf("    fallback: %s\n", sel->fallback_rule ? sel->fallback_rule : "?");
    printf("    because: %s rejected the shape: %s: %s\n",
           sel->fallback_backend ? sel->fallback_backend : "?",
           attn_reason_name(sel->fallback_reason),
           sel->fallback_message ? sel->fallback_message : "");
}

static const char *plural(int32_t n)
{
    return n == 1 ? "" : "s";
}

/* The config's notes and header numbers, from libattnreg's reader. */
struct config_view {
    const attn_hf_config *cfg;
    attn_hf_config_info info;
};

/* The softmax scale every attention entry gets (the plan's entries carry
 * it; the header shows it once). */
static double model_scale(const attn_model *m)
{
    return m->scale > 0.0f ? (double)m->scale : 1.0 / sqrt((double)m->head_dim);
}

static void print_header(const char *path, const struct config_view *v, const attn_model *m)
{
    const char *model_type = v->info.model_type ? v->info.model_type : "";
    printf("model: %s", path);
    if (model_type[0] || v->info.from_text_config)
        printf(" (%s%s%s)", model_type, model_type[0] && v->info.from_text_config ? ", " : "",
               v->info.from_text_config ? "text_config" : "");
    printf(": %d layer%s, %d query head%s, %d KV head%s, head_dim %d", m->num_layers,
           plural(m->num_layers), m->num_q_heads, plural(m->num_q_heads), m->num_kv_heads,
           plural(m->num_kv_heads), m->head_dim);
    if (m->head_dim > 0)
        printf(", scale %.6g", model_scale(m));
    if (m->softcap > 0.0f)
        printf(", softcap %g", (double)m->softcap);
    if (m->has_sinks)
        printf(", sinks");
    printf("\n");
    printf("target: arch %s, q %s, kv %s, compute %s, out %s, page %d\n", m->arch,
           attn_dtype_name(m->q_dtype), attn_dtype_name(m->kv_dtype),
           attn_dtype_name(m->compute_dtype), attn_dtype_name(m->out_dtype), m->page_size);
    for (size_t k = 0; k < v->info.num_notes; k++)
        printf("note: %s\n", attn_hf_config_note(v->cfg, k));
}

static void print_text(const attn_plan *plan, const attn_plan_summary *sum)
{
    if (sum->status == ATTN_ERR_INVALID_SHAPE) {
        printf("plan: none (%s)\n", attn_status_name(sum->status));
        return;
    }
    printf("per rank: tp %d, %d query head%s, %d KV head%s%s (every rank gets the same shapes)\n",
           sum->tp_size, sum->rank_q_heads, plural(sum->rank_q_heads), sum->rank_kv_heads,
           plural(sum->rank_kv_heads), sum->kv_heads_replicated ? ", replicated" : "");
    printf("phases: prefill q_len %d, decode q_len %d", sum->prefill_q_len, sum->decode_q_len);
    if (sum->verify_q_len)
        printf(", verify q_len %d", sum->verify_q_len);
    printf("; kv_len %d\n", sum->max_kv_len);

    int type_w = (int)strlen("TYPE"), window_w = (int)strlen("WINDOW");
    int backend_w = (int)strlen("BACKEND");
    for (size_t k = 0; k < sum->num_entries; k++) {
        attn_plan_entry e = {.struct_size = sizeof e};
        char window[32];
        if (attn_plan_entry_get(plan, k, &e) != ATTN_OK)
            continue;
        type_w = width_of(e.layer_type, type_w);
        window_w = width_of(entry_window(&e, window, sizeof window), window_w);
        backend_w = width_of(entry_backend_text(&e), backend_w);
    }
    printf("%-*s  %-7s  %6s  %-*s  %-*s  %5s  %s\n", type_w, "TYPE", "PHASE", "Q_LEN", window_w,
           "WINDOW", backend_w, "BACKEND", "N", "LAYERS");
    for (size_t k = 0; k < sum->num_entries; k++) {
        attn_plan_entry e = {.struct_size = sizeof e};
        if (attn_plan_entry_get(plan, k, &e) != ATTN_OK)
            continue;
        char q_len[16] = "-", window[32];
        if (e.shape)
            snprintf(q_len, sizeof q_len, "%d", e.shape->max_q_len);
        char *layers = format_layers(e.layers, e.num_layers);
        printf("%-*s  %-7s  %6s  %-*s  %-*s  %5u  %s\n", type_w, e.layer_type,
               attn_phase_name(e.phase), q_len, window_w, entry_window(&e, window, sizeof window),
               backend_w, entry_backend_text(&e), e.num_layers, layers ? layers : "?");
        free(layers);
        print_entry_details(&e);
    }
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_int_or_null(struct cli_json *j, const char *key, int present, long long value)
{
    if (present)
        cli_json_int_member(j, key, value);
    else
        cli_json_string_member(j, key, NULL);
}

/* One entry, in the key names of shapes and selections (select --json).
 * The names of attnreg 0.3 (q_heads, kv_heads, q_len, kv_len, window,
 * sinks, fallback) are written too, for one minor version: the schema marks
 * them deprecated. */
static void json_entry(struct cli_json *j, const attn_plan_entry *e)
{
    const attn_shape *s = e->shape;
    const attn_selection *sel = e->selection;
    int applied = sel && sel->fallback_applied;
    cli_json_begin_object(j, NULL);
    cli_json_begin_array(j, "layers");
    for (uint32_t k = 0; k < e->num_layers; k++)
        cli_json_int_member(j, NULL, e->layers[k]);
    cli_json_end_array(j);
    cli_json_string_member(j, "layer_type", e->layer_type);
    cli_json_string_member(j, "kind", attn_layer_kind_name(e->layer_kind));
    cli_json_string_member(j, "phase", attn_phase_name(e->phase));
    json_int_or_null(j, "num_q_heads", s != NULL, s ? s->num_q_heads : 0);
    json_int_or_null(j, "num_kv_heads", s != NULL, s ? s->num_kv_heads : 0);
    json_int_or_null(j, "head_dim", s != NULL, s ? s->head_dim : 0);
    json_int_or_null(j, "head_dim_v", s != NULL,
                     s && s->head_dim_v ? s->head_dim_v
                     : s                ? s->head_dim
                                        : 0);
    json_int_or_null(j, "max_q_len", s != NULL, s ? s->max_q_len : 0);
    json_int_or_null(j, "max_kv_len", s != NULL, s ? s->max_kv_len : 0);
    json_int_or_null(j, "window_left", s != NULL, s ? s->window_left : 0);
    json_int_or_null(j, "window_right", s != NULL, s ? s->window_right : 0);
    if (s) {
        cli_json_double_member(j, "softcap", s->softcap);
        cli_json_bool_member(j, "has_sinks", s->has_sinks);
        cli_json_double_member(j, "scale", e->scale);
    } else {
        cli_json_string_member(j, "softcap", NULL);
        cli_json_string_member(j, "has_sinks", NULL);
        cli_json_string_member(j, "scale", NULL);
    }
    cli_json_string_member(j, "backend", sel ? sel->backend_name : NULL);
    cli_json_string_member(j, "fallback_rule", applied ? sel->fallback_rule : NULL);
    cli_json_string_member(j, "fallback_backend", applied ? sel->fallback_backend : NULL);
    cli_json_string_member(j, "fallback_reason",
                           applied ? attn_reason_name(sel->fallback_reason) : NULL);
    cli_json_string_member(j, "fallback_message", applied ? sel->fallback_message : NULL);
    cli_json_string_member(j, "status", sel ? attn_status_name(e->status) : "NOT_ATTENTION");
    cli_json_string_member(j, "message", e->message);
    /* deprecated (0.3 names) */
    json_int_or_null(j, "q_heads", s != NULL, s ? s->num_q_heads : 0);
    json_int_or_null(j, "kv_heads", s != NULL, s ? s->num_kv_heads : 0);
    json_int_or_null(j, "q_len", s != NULL, s ? s->max_q_len : 0);
    json_int_or_null(j, "kv_len", s != NULL, s ? s->max_kv_len : 0);
    if (s) {
        cli_json_begin_array(j, "window");
        cli_json_int_member(j, NULL, s->window_left);
        cli_json_int_member(j, NULL, s->window_right);
        cli_json_end_array(j);
        cli_json_bool_member(j, "sinks", s->has_sinks);
    } else {
        cli_json_string_member(j, "window", NULL);
        cli_json_string_member(j, "sinks", NULL);
    }
    cli_json_string_member(j, "fallback", applied ? sel->fallback_rule : NULL);
    cli_json_end_object(j);
}

/* The whole answer; plan NULL when the config refused planning (MLA). */
static void print_json(const char *path, const struct config_view *v, const attn_model *m,
                       const attn_plan *plan, attn_status status, const char *message)
{
    struct cli_json j;
    attn_plan_summary sum = {.struct_size = sizeof sum};
    int have_sum = plan && attn_plan_summarize(plan, &sum) == ATTN_OK;
    int planned = have_sum && sum.status != ATTN_ERR_INVALID_SHAPE;

    cli_json_init(&j, stdout);
    cli_json_begin_object(&j, NULL);
    cli_json_string_member(&j, "status", attn_status_name(status));
    cli_json_int_member(&j, "exit_code", cli_exit_from_status(status));
    cli_json_string_member(&j, "message", message ? message : "");
    cli_json_string_member(&j, "config", path);
    if (v && m) {
        const char *model_type = v->info.model_type ? v->info.model_type : "";
        cli_json_begin_object(&j, "model");
        cli_json_string_member(&j, "model_type", model_type[0] ? model_type : NULL);
        cli_json_bool_member(&j, "from_text_config", v->info.from_text_config);
        cli_json_int_member(&j, "num_layers", m->num_layers);
        cli_json_int_member(&j, "num_q_heads", m->num_q_heads);
        cli_json_int_member(&j, "num_kv_heads", m->num_kv_heads);
        cli_json_int_member(&j, "head_dim", m->head_dim);
        cli_json_double_member(&j, "softcap", m->softcap);
        cli_json_bool_member(&j, "has_sinks", m->has_sinks);
        if (m->head_dim > 0)
            cli_json_double_member(&j, "scale", model_scale(m));
        else
            cli_json_string_member(&j, "scale", NULL);
        json_int_or_null(&j, "max_position_embeddings", v->info.max_position_embeddings > 0,
                         v->info.max_position_embeddings);
        /* deprecated (0.3 names) */
        cli_json_int_member(&j, "num_attention_heads", m->num_q_heads);
        cli_json_int_member(&j, "num_key_value_heads", m->num_kv_heads);
        cli_json_bool_member(&j, "sinks", m->has_sinks);
        cli_json_end_object(&j);
        cli_json_begin_object(&j, "target");
        cli_json_string_member(&j, "arch", m->arch);
        cli_json_string_member(&j, "q_dtype", attn_dtype_name(m->q_dtype));
        cli_json_string_member(&j, "kv_dtype", attn_dtype_name(m->kv_dtype));
        cli_json_string_member(&j, "compute_dtype", attn_dtype_name(m->compute_dtype));
        cli_json_string_member(&j, "out_dtype", attn_dtype_name(m->out_dtype));
        cli_json_int_member(&j, "page_size", m->page_size);
        cli_json_int_member(&j, "tp", m->tp_size);
        cli_json_int_member(&j, "max_model_len", m->max_model_len);
        cli_json_int_member(&j, "max_prefill_tokens", m->max_prefill_tokens);
        cli_json_int_member(&j, "spec_tokens", m->spec_tokens);
        cli_json_end_object(&j);
    } else {
        cli_json_string_member(&j, "model", NULL);
        cli_json_string_member(&j, "target", NULL);
    }
    if (planned) {
        cli_json_begin_object(&j, "per_rank");
        cli_json_int_member(&j, "num_q_heads", sum.rank_q_heads);
        cli_json_int_member(&j, "num_kv_heads", sum.rank_kv_heads);
        cli_json_bool_member(&j, "kv_heads_replicated", sum.kv_heads_replicated);
        cli_json_int_member(&j, "prefill_q_len", sum.prefill_q_len);
        cli_json_int_member(&j, "decode_q_len", sum.decode_q_len);
        json_int_or_null(&j, "verify_q_len", sum.verify_q_len > 0, sum.verify_q_len);
        cli_json_int_member(&j, "max_kv_len", sum.max_kv_len);
        /* deprecated (0.3 names) */
        cli_json_int_member(&j, "q_heads", sum.rank_q_heads);
        cli_json_int_member(&j, "kv_heads", sum.rank_kv_heads);
        cli_json_int_member(&j, "kv_len", sum.max_kv_len);
        cli_json_end_object(&j);
    } else {
        cli_json_string_member(&j, "per_rank", NULL);
    }
    cli_json_begin_array(&j, "notes");
    for (size_t k = 0; v && k < v->info.num_notes; k++)
        cli_json_string_member(&j, NULL, attn_hf_config_note(v->cfg, k));
    cli_json_end_array(&j);
    cli_json_begin_array(&j, "entries");
    for (size_t k = 0; planned && k < sum.num_entries; k++) {
        attn_plan_entry e = {.struct_size = sizeof e};
        if (attn_plan_entry_get(plan, k, &e) == ATTN_OK)
            json_entry(&j, &e);
    }
    cli_json_end_array(&j);
    if (status != ATTN_OK)
        cli_json_error_member(&j, attn_status_name(status), message, cli_exit_from_status(status));
    cli_json_end_object(&j);
}

/* ---- the command ---------------------------------------------------------- */

/* A config the reader refused: I/O (exit 9), malformed (exit 2, a usage
 * error: the input is wrong) or a model no backend handles (exit 4). */
static int report_config_error(attn_status st, const char *path, const char *err, int json)
{
    if (st == ATTN_ERR_UNSUPPORTED) {
        if (json)
            print_json(path, NULL, NULL, NULL, ATTN_ERR_UNSUPPORTED, err);
        return cli_report_failure(ATTN_ERR_UNSUPPORTED, err);
    }
    if (st == ATTN_ERR_NO_MEMORY)
        return cli_report_failure(st, err);
    fprintf(stderr, "attnreg: %s\n", err);
    cli_json_error(st == ATTN_ERR_IO ? "ATTN_ERR_IO" : "USAGE", err,
                   st == ATTN_ERR_IO ? CLI_EXIT_IO : CLI_EXIT_USAGE);
    return st == ATTN_ERR_IO ? CLI_EXIT_IO : CLI_EXIT_USAGE;
}

int cli_cmd_plan(int argc, char **argv)
{
    struct cli_common c;
    struct plan_args a = {NULL, 1, -1, 0, 0};

    cli_common_init(&c, CLI_ACCEPT_OF_plan);
    for (int i = 1; i < argc; i++) {
        if (cli_is_help_flag(argv[i])) {
            cli_help_plan(stdout);
            return CLI_EXIT_OK;
        }
        int r = cli_parse_common_flag(&c, argc, argv, &i);
        if (r == 0)
            r = parse_plan_flag(&a, argc, argv, &i);
        if (r < 0)
            return CLI_EXIT_USAGE;
        if (r == 0 && cli_is_model_shape_flag(argv[i]))
            return cli_usage_error("plan: %s is not a plan flag: the model's config.json "
                                   "(--hf-config) gives the heads, head size, layers, window, "
                                   "softcap and sinks",
                                   argv[i]);
        if (r == 0)
            return cli_usage_error("plan: unknown argument '%s'", argv[i]);
    }
    if (!a.config)
        return cli_usage_error("plan: --hf-config FILE is required");
    cli_common_finish(&c);

    struct config_view v = {NULL, {.struct_size = sizeof v.info}};
    attn_hf_config *cfg = NULL;
    attn_status hst = attn_hf_config_read(a.config, &cfg);
    if (hst != ATTN_OK)
        return report_config_error(hst, a.config, attn_last_error(), c.json);
    v.cfg = cfg;
    attn_hf_config_describe(cfg, &v.info);

    attn_model m;
    attn_model_init_sized(&m, sizeof m);
    memcpy(m.arch, c.shape.arch, ATTN_ARCH_MAX);
    m.q_dtype = c.shape.q_dtype;
    m.kv_dtype = c.shape.kv_dtype;
    m.compute_dtype = c.shape.compute_dtype;
    m.out_dtype = c.shape.out_dtype;
    m.page_size = c.shape.page_size;
    m.tp_size = a.tp;
    m.max_model_len = a.max_model_len >= 0 ? a.max_model_len : 0;
    m.max_prefill_tokens = a.max_prefill_tokens;
    m.spec_tokens = a.spec_tokens;
    /* apply checks the model's own numbers (heads, tp, layers): an invalid
     * model is reported by the plan below, whose validation starts with the
     * same checks, so a config without max_position_embeddings that is
     * invalid anyway says so in one run instead of asking for a length. */
    attn_status ast = attn_hf_config_apply(cfg, &m);
    if (ast != ATTN_OK && ast != ATTN_ERR_INVALID_SHAPE) {
        int rc = cli_report_failure(ast, attn_last_error());
        attn_hf_config_free(cfg);
        return rc;
    }
    if (a.max_model_len >= 0)
        m.max_model_len = a.max_model_len; /* --max-model-len 0 is the library's to refuse */
    else if (ast == ATTN_OK && m.max_model_len == 0) {
        attn_hf_config_free(cfg);
        return cli_usage_error("plan: %s has no max_position_embeddings (nor n_positions, "
                               "max_seq_len, seq_length): pass --max-model-len N",
                               a.config);
    }

    attn_registry *reg;
    int rc = cli_open_registry(&c, &reg);
    if (rc != CLI_EXIT_OK) {
        attn_hf_config_free(cfg);
        return rc;
    }
    attn_plan *plan = NULL;
    attn_status status = attn_registry_plan(reg, &m, &plan);
    attn_plan_summary sum = {.struct_size = sizeof sum};
    /* The plan's message lives as long as the plan; without a plan (bad
     * argument, no memory) the thread's last error is all there is. */
    const char *message = "";
    if (plan && attn_plan_summarize(plan, &sum) == ATTN_OK)
        message = sum.message;
    else if (status != ATTN_OK)
        message = attn_last_error();

    if (c.json) {
        print_json(a.config, &v, &m, plan, status, message);
    } else {
        print_header(a.config, &v, &m);
        if (plan)
            print_text(plan, &sum);
    }
    rc = status == ATTN_OK ? CLI_EXIT_OK : cli_report_failure(status, message);
    attn_plan_free(plan);
    attn_registry_close(reg);
    attn_hf_config_free(cfg);
    return rc;
}
