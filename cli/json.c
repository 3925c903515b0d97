/*
 * json.c — the CLI's JSON writer. Hand-written on purpose: the output is small,
 * the key set and its order are fixed (the CLI baselines pin the layout), and
 * it is written as a stream. jansson, which `plan` links to *read* config.json
 * (tools/hf_config), was considered for writing too and not taken: it builds
 * a tree of every value before writing, prints floats with 17 digits ("50.0"
 * where this writer prints "50") and would change every baseline for no gain.
 */
#include <math.h>
#include <stdio.h>

#include "cli.h"

void cli_json_init(struct cli_json *j, FILE *out)
{
    j->out = out;
    j->depth = 0;
    j->has_members[0] = 0;
}

static void write_indent(struct cli_json *j)
{
    for (int level = 0; level < j->depth; level++)
        fputs("  ", j->out);
}

/* Starts a value: the comma after the previous member, the line break and
 * indent inside containers, and "key": when inside an object. */
static void begin_value(struct cli_json *j, const char *key)
{
    if (j->depth > 0) {
        fputs(j->has_members[j->depth] ? ",\n" : "\n", j->out);
        j->has_members[j->depth] = 1;
        write_indent(j);
    }
    if (key) {
        cli_json_write_string(j->out, key);
        fputs(": ", j->out);
    }
}

static void open_container(struct cli_json *j, const char *key, char bracket)
{
    begin_value(j, key);
    fputc(bracket, j->out);
    /* Deeper nesting than the CLI ever writes would overflow the comma
     * tracker; clamp so a bug produces odd layout instead of memory damage. */
    if (j->depth < CLI_JSON_MAX_DEPTH - 1)
        j->depth++;
    j->has_members[j->depth] = 0;
}

static void close_container(struct cli_json *j, char bracket)
{
    int had_members = j->has_members[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (had_members) {
        fputc('\n', j->out);
        write_indent(j);
    }
    fputc(bracket, j->out);
    if (j->depth == 0)
        fputc('\n', j->out);
}

void cli_json_begin_object(struct cli_json *j, const char *key)
{
    open_container(j, key, '{');
}

void cli_json_end_object(struct cli_json *j)
{
    close_container(j, '}');
}

void cli_json_begin_array(struct cli_json *j, const char *key)
{
    open_container(j, key, '[');
}

void cli_json_end_array(struct cli_json *j)
{
    close_container(j, ']');
}

void cli_json_write_string(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", out);
            break;
        case '\\':
            fputs("\\\\", out);
            break;
        case '\b':
            fputs("\\b", out);
            break;
        case '\f':
            fputs("\\f", out);
            break;
        case '\n':
            fputs("\\n", out);
            break;
        case '\r':
            fputs("\\r", out);
            break;
        case '\t':
            fputs("\\t", out);
            break;
        default:
            /* Other control characters must be escaped; bytes >= 0x80 pass
             * through, since paths and messages are UTF-8 (or opaque bytes
             * a consumer must cope with anyway). */
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

void cli_json_string_member(struct cli_json *j, const char *key, const char *value)
{
    begin_value(j, key);
    cli_json_write_string(j->out, value);
}

void cli_json_int_member(struct cli_json *j, const char *key, long long value)
{
    begin_value(j, key);
    fprintf(j->out, "%lld", value);
}

void cli_json_bool_member(struct cli_json *j, const char *key, int value)
{
    begin_value(j, key);
    fputs(value ? "true" : "false", j->out);
}

void cli_json_double_member(struct cli_json *j, const char *key, double value)
{
    begin_value(j, key);
    /* JSON has no NaN or infinity. %.9g round-trips a float exactly. */
    if (isfinite(value))
        fprintf(j->out, "%.9g", value);
    else
        fputs("null", j->out);
}

void cli_json_shape(struct cli_json *j, const char *key, const attn_shape *shape)
{
    cli_json_begin_object(j, key);
    cli_json_string_member(j, "arch", shape->arch);
    cli_json_int_member(j, "num_q_heads", shape->num_q_heads);
    cli_json_int_member(j, "num_kv_heads", shape->num_kv_heads);
    cli_json_int_member(j, "head_dim", shape->head_dim);
    cli_json_int_member(j, "head_dim_v", shape->head_dim_v);
    cli_json_string_member(j, "q_dtype", attn_dtype_name(shape->q_dtype));
    cli_json_string_member(j, "kv_dtype", attn_dtype_name(shape->kv_dtype));
    cli_json_string_member(j, "compute_dtype", attn_dtype_name(shape->compute_dtype));
    cli_json_string_member(j, "out_dtype", attn_dtype_name(shape->out_dtype));
    cli_json_int_member(j, "page_size", shape->page_size);
    cli_json_int_member(j, "max_q_len", shape->max_q_len);
    cli_json_int_member(j, "max_kv_len", shape->max_kv_len);
    cli_json_bool_member(j, "causal", shape->causal);
    cli_json_int_member(j, "window_left", shape->window_left);
    cli_json_int_member(j, "window_right", shape->window_right);
    cli_json_double_member(j, "softcap", shape->softcap);
    cli_json_bool_member(j, "has_sinks", shape->has_sinks);
    cli_json_end_object(j);
}
