/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.c — the CLI's JSON writer. Hand-written on purpose: the output is small,
 * the key set and its order are fixed (the CLI baselines pin the layout), and
 * it is written as a stream. jansson, which libattnreg uses to *read*
 * config.json (core/hf_config.c), was considered for writing too and not taken: it builds
 * a tree of every value before writing, prints floats with 17 digits ("50.0"
 * where this writer prints "50") and would change every baseline for no gain.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

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

/* The command being run (main sets it before dispatch): every document names
 * it, and usage errors point at its --help. */
static const char *current_command = NULL;

void cli_set_command_name(const char *name)
{
    current_command = name;
}

const char *cli_command_name(void)
{
    return current_command;
}

/* --json given on the command line (main sets it before dispatch), and
 * whether a whole top-level document has been written: cli_json_error writes
 * an error document only when nothing else was, so stdout always holds
 * exactly one JSON object. */
static int json_mode;
static int json_written;

void cli_json_set_mode(int on)
{
    json_mode = on;
}

int cli_json_mode(void)
{
    return json_mode;
}

int cli_json_document_written(void)
{
    return json_written;
}

static void open_container(struct cli_json *j, const char *key, char bracket)
{
    int top_level_object = j->depth == 0 && bracket == '{';
    begin_value(j, key);
    fputc(bracket, j->out);
    /* Deeper nesting than the CLI ever writes would overflow the comma
     * tracker; clamp so a bug produces odd layout instead of memory damage. */
    if (j->depth < CLI_JSON_MAX_DEPTH - 1)
        j->depth++;
    j->has_members[j->depth] = 0;
    /* Every document starts with its layout version and the command that
     * wrote it (docs/JSON.md, docs/attnreg.schema.json). */
    if (top_level_object) {
        cli_json_int_member(j, "schema_version", CLI_JSON_SCHEMA_VERSION);
        cli_json_string_member(j, "command", cli_command_name());
    }
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
    if (j->depth == 0) {
        fputc('\n', j->out);
        json_written = 1;
    }
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

/* Length of the well-formed UTF-8 sequence at p (1-4), or 0 when the bytes
 * there are not one (a stray continuation byte, an overlong form, a
 * surrogate, a code point above U+10FFFF, a truncated sequence). */
static int utf8_sequence_length(const unsigned char *p)
{
    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        return (p[1] & 0xc0) == 0x80 ? 2 : 0;
    if (p[0] >= 0xe0 && p[0] <= 0xef) {
        unsigned lo = p[0] == 0xe0 ? 0xa0 : 0x80, hi = p[0] == 0xed ? 0x9f : 0xbf;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        unsigned lo = p[0] == 0xf0 ? 0x90 : 0x80, hi = p[0] == 0xf4 ? 0x8f : 0xbf;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xc0) == 0x80 && (p[3] & 0xc0) == 0x80 ? 4 : 0;
    }
    return 0;
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
            if (*p < 0x20) {
                fprintf(out, "\\u%04x", *p);
            } else if (*p < 0x80) {
                fputc(*p, out);
            } else {
                /* Paths and messages can carry bytes from conf files that
                 * are not UTF-8; the output must stay valid UTF-8 JSON, so
                 * each byte of a malformed sequence becomes U+FFFD. */
                int len = utf8_sequence_length(p);
                if (len == 0) {
                    fputs("\\ufffd", out);
                } else {
                    fwrite(p, 1, (size_t)len, out);
                    p += len - 1;
                }
            }
        }
    }
    fputc('"', out);
}

void cli_json_error(const char *status, const char *message, int exit_code)
{
    if (!json_mode || json_written)
        return;
    struct cli_json j;
    cli_json_init(&j, stdout);
    cli_json_begin_object(&j, NULL);
    cli_json_error_member(&j, status, message, exit_code);
    cli_json_end_object(&j);
}

void cli_json_error_member(struct cli_json *j, const char *status, const char *message,
                           int exit_code)
{
    cli_json_begin_object(j, "error");
    cli_json_string_member(j, "status", status);
    cli_json_string_member(j, "message", message ? message : "");
    cli_json_int_member(j, "exit_code", exit_code);
    cli_json_end_object(j);
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
    /* Every field, by the kind attn_types.h's ATTN_SHAPE_FIELD_MAP gives it. */
#define JSON_ARCH_(name, v) cli_json_string_member(j, name, v)
#define JSON_INT_(name, v) cli_json_int_member(j, name, v)
#define JSON_DTYPE_(name, v) cli_json_string_member(j, name, attn_dtype_name(v))
#define JSON_BOOL_(name, v) cli_json_bool_member(j, name, v)
#define JSON_FLOAT_(name, v) cli_json_double_member(j, name, v)
#define JSON_FIELD_(member, KIND) JSON_##KIND##_(#member, shape->member);
    ATTN_SHAPE_FIELD_MAP(JSON_FIELD_)
#undef JSON_FIELD_
#undef JSON_FLOAT_
#undef JSON_BOOL_
#undef JSON_DTYPE_
#undef JSON_INT_
#undef JSON_ARCH_
    cli_json_end_object(j);
}

void cli_json_arch_list(struct cli_json *j, const char *key, const char *archs)
{
    cli_json_begin_array(j, key);
    while (archs && *archs) {
        char name[ATTN_ARCH_MAX * 4];
        size_t len = strcspn(archs, ",");
        const char *start = archs, *end = archs + len;
        while (start < end && (*start == ' ' || *start == '\t'))
            start++;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end > start) {
            size_t n = (size_t)(end - start);
            if (n >= sizeof name)
                n = sizeof name - 1;
            memcpy(name, start, n);
            name[n] = '\0';
            cli_json_string_member(j, NULL, name);
        }
        archs += len;
        if (*archs == ',')
            archs++;
    }
    cli_json_end_array(j);
}
