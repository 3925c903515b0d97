/* SPDX-License-Identifier: Apache-2.0 */
/* util.c — strings, growable buffers, the thread's last error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

char *attn_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

char *attn_vasprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return attn_strdup("");
    char *p = malloc((size_t)n + 1);
    if (p)
        vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *attn_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = attn_vasprintf(fmt, ap);
    va_end(ap);
    return p;
}

void strbuf_printf(strbuf *sb, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        va_end(ap);
        return;
    }
    if (sb->len + (size_t)n + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap : 128;
        while (cap < sb->len + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(sb->data, cap);
        if (!p) {
            va_end(ap);
            return;
        }
        sb->data = p;
        sb->cap = cap;
    }
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
    va_end(ap);
}

char *strbuf_take(strbuf *sb)
{
    char *p = sb->data ? sb->data : attn_strdup("");
    sb->data = NULL;
    sb->len = sb->cap = 0;
    return p;
}

/* The detailed sentence of the last failure, per thread, so that concurrent
 * callers never see each other's messages. */
static _Thread_local char last_error[1024];

attn_status attn_fail(attn_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

void attn_clear_error(void)
{
    last_error[0] = '\0';
}

ATTNREG_API const char *attn_last_error(void)
{
    return last_error;
}

void attn_copy_versioned(void *dst, uint32_t dst_size, const void *src, size_t src_size)
{
    size_t n = dst_size < src_size ? dst_size : src_size;
    memcpy(dst, src, n);
    if (n < dst_size)
        memset((char *)dst + n, 0, dst_size - n);
}

void attn_init_sized(void *dst, size_t size, const void *full, size_t full_size)
{
    if (!dst || size < sizeof(uint32_t))
        return;
    /* A host newer than the library: its extra fields are zeroed (zero is
     * every appended field's "absent"); an older one gets its prefix. */
    uint32_t n = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    attn_copy_versioned(dst, n, full, full_size);
    memcpy(dst, &n, sizeof n); /* struct_size leads every versioned struct */
}

int attn_invalid(char *msg, size_t size, const char *fmt, ...)
{
    if (msg && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, size, fmt, ap);
        va_end(ap);
    }
    return 0;
}
