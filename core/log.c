/* SPDX-License-Identifier: Apache-2.0 */
/* log.c — levelled logging through the host's callback, or one line per
 * event on stderr or ATTNREG_LOG_FILE. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attn_tool_error.h"
#include "internal.h"

static const char *const level_names[] = {
#define LEVEL_ROW_(NAME, value, name) [value] = name,
    ATTN_LOG_LEVEL_MAP(LEVEL_ROW_)
#undef LEVEL_ROW_
};

ATTNREG_API const char *attn_log_level_name(attn_log_level level)
{
    if ((int)level < 0 || (int)level > ATTN_LOG_OFF)
        return "unknown";
    return level_names[level];
}

int attn_log_level_from_name(const char *name, attn_log_level *out)
{
    for (int i = 0; i <= ATTN_LOG_OFF; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (attn_log_level)i;
            return 1;
        }
    }
    if (strcmp(name, "warning") == 0) {
        *out = ATTN_LOG_WARN;
        return 1;
    }
    return 0;
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 0)))
#endif
static void
log_v(const attn_logger *logger, attn_log_level level, const char *plugin, const char *fmt,
      va_list ap)
{
    if (level < logger->level || level >= ATTN_LOG_OFF)
        return;
    char raw[1024], text[1024];
    vsnprintf(raw, sizeof raw, fmt, ap);
    /* Messages quote conf values, paths and plugin text: a control byte
     * among them (ESC, CR, BEL) is escaped before any sink sees it; the
     * newlines of a multi-line message stay, folded below. */
    attn_escape_controls(text, sizeof text, raw, 1);
    /* Messages about one plugin often begin with its name already. */
    size_t plen = plugin ? strlen(plugin) : 0;
    int prefixed =
        plugin && strncmp(text, plugin, plen) == 0 && text[plen] == ':' && text[plen + 1] == ' ';
    if (logger->fn) {
        /* The callback has no plugin argument: the name leads the message. */
        if (plugin && !prefixed) {
            char named[1200];
            snprintf(named, sizeof named, "%s: %s", plugin, text);
            logger->fn(logger->user, level, named);
        } else {
            logger->fn(logger->user, level, text);
        }
        return;
    }
    const char *msg = prefixed ? text + plen + 2 : text;
    /* One line per event: a multi-line message (an unsupported shape lists
     * every candidate on its own line) is folded, its indentation dropped. */
    char line[1280];
    size_t n = 0;
    for (const char *p = msg; *p && n + 3 < sizeof line; p++) {
        if (*p == '\n') {
            while (p[1] == ' ' || p[1] == '\t')
                p++;
            if (p[1] && n > 0) {
                line[n++] = ';';
                line[n++] = ' ';
            }
            continue;
        }
        line[n++] = *p;
    }
    line[n] = '\0';
    FILE *out = logger->file ? logger->file : stderr;
    if (plugin)
        fprintf(out, "attnreg: %s: reg=%u plugin=%s: %s\n", level_names[level], logger->id, plugin,
                line);
    else
        fprintf(out, "attnreg: %s: reg=%u: %s\n", level_names[level], logger->id, line);
    if (logger->file)
        fflush(logger->file);
}

void attn_log(const attn_logger *logger, attn_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_v(logger, level, NULL, fmt, ap);
    va_end(ap);
}

void attn_log_plugin(const attn_logger *logger, attn_log_level level, const char *plugin,
                     const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_v(logger, level, plugin, fmt, ap);
    va_end(ap);
}
