/* log.c — levelled logging through the host's callback or stderr. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const level_names[] = {"debug", "info", "warn", "error", "off"};

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

void attn_log(const attn_logger *logger, attn_log_level level, const char *fmt, ...)
{
    if (level < logger->level || level >= ATTN_LOG_OFF)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (logger->fn)
        logger->fn(logger->user, level, msg);
    else
        fprintf(stderr, "attnreg: %s: %s\n", level_names[level], msg);
}
