/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_tool_error.h — how the helper code outside the library (the .npy
 * reader/writer, the float64 oracle and random problem builder, the CLI's
 * run support) reports an error: a sentence formatted into the caller's
 * buffer (when it has one) and -1 for the caller to return.
 */
#ifndef ATTN_TOOL_ERROR_H
#define ATTN_TOOL_ERROR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* Copies `src` into `dst` (always NUL-terminated, cut at a whole escape)
 * with every control byte (below 0x20, and 0x7f) written as \xNN, so that
 * text quoted from a file or a flag cannot move the cursor, recolour the
 * terminal or forge a line of output; with `keep_newlines`, '\n' stays (a
 * message that lists one item per line). Returns the length written. Also
 * used by the library (core/) for log lines and diagnostics. */
static inline size_t attn_escape_controls(char *dst, size_t dst_size, const char *src,
                                          int keep_newlines)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    if (!dst_size)
        return 0;
    for (const unsigned char *p = (const unsigned char *)src; p && *p; p++) {
        const int plain = (*p >= 0x20 && *p != 0x7f) || (keep_newlines && *p == '\n');
        if (n + (plain ? 1 : 4) >= dst_size)
            break;
        if (plain) {
            dst[n++] = (char)*p;
        } else {
            dst[n++] = '\\';
            dst[n++] = 'x';
            dst[n++] = hex[*p >> 4];
            dst[n++] = hex[*p & 15];
        }
    }
    dst[n] = '\0';
    return n;
}

static inline int attn_tool_fail(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline int attn_tool_fail(char *err, size_t err_size, const char *fmt, ...)
{
    if (err && err_size) {
        /* The sentences quote file contents (.npy headers, config.json
         * tokens) and paths: formatted whole, then escaped into err. */
        char raw[2048];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        attn_escape_controls(err, err_size, raw, 0);
    }
    return -1;
}

#endif /* ATTN_TOOL_ERROR_H */
