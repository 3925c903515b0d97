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

static inline int attn_tool_fail(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline int attn_tool_fail(char *err, size_t err_size, const char *fmt, ...)
{
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#endif /* ATTN_TOOL_ERROR_H */
