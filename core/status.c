/* SPDX-License-Identifier: Apache-2.0 */
/* status.c — the tables of status names, messages and classes, reason names
 * and layers, dtype names (all generated from the lists of attn_types.h),
 * enum counts for bindings, and the library version. */
#include <string.h>

#include "internal.h"

/* Each list's values are its positions (0, 1, 2, ...), so the tables below
 * can be indexed by them: a gap or a repeated value fails here. */
#define CHECK_POSITION_(NAME, value, ...) ATTN_POS_##NAME,
enum { ATTN_STATUS_MAP(CHECK_POSITION_) };
enum { ATTN_REASON_MAP(CHECK_POSITION_) };
enum { ATTN_DTYPE_MAP(CHECK_POSITION_) };
#undef CHECK_POSITION_
#define CHECK_VALUE_(NAME, value, ...) _Static_assert(value == ATTN_POS_##NAME, #NAME);
ATTN_STATUS_MAP(CHECK_VALUE_)
ATTN_REASON_MAP(CHECK_VALUE_)
ATTN_DTYPE_MAP(CHECK_VALUE_)
#undef CHECK_VALUE_

static const struct {
    const char *name;
    const char *message;
    attn_status_class cls;
} status_table[ATTN_STATUS_COUNT] = {
#define STATUS_ROW_(NAME, value, CLASS, message)                                                   \
    [value] = {"ATTN_" #NAME, message, ATTN_STATUS_CLASS_##CLASS},
    ATTN_STATUS_MAP(STATUS_ROW_)
#undef STATUS_ROW_
};

static const struct {
    const char *name;
    int exit_code;
} status_class_table[] = {
#define CLASS_ROW_(CLASS, name, exit_code) [ATTN_STATUS_CLASS_##CLASS] = {name, exit_code},
    ATTN_STATUS_CLASS_MAP(CLASS_ROW_)
#undef CLASS_ROW_
};

static int status_known(attn_status status)
{
    return (int)status >= 0 && (int)status < ATTN_STATUS_COUNT;
}

ATTNREG_API const char *attn_status_name(attn_status status)
{
    return status_known(status) ? status_table[status].name : "ATTN_ERR_UNKNOWN";
}

ATTNREG_API const char *attn_status_message(attn_status status)
{
    return status_known(status) ? status_table[status].message : "unknown status code";
}

static attn_status_class status_class(attn_status status)
{
    return status_known(status) ? status_table[status].cls : ATTN_STATUS_CLASS_INTERNAL;
}

ATTNREG_API const char *attn_status_class_name(attn_status status)
{
    return status_class_table[status_class(status)].name;
}

ATTNREG_API int attn_status_exit_code(attn_status status)
{
    return status_class_table[status_class(status)].exit_code;
}

static const char *const reason_names[ATTN_REASON_COUNT] = {
#define REASON_ROW_(NAME, value, LAYER) [value] = #NAME,
    ATTN_REASON_MAP(REASON_ROW_)
#undef REASON_ROW_
};

static const char *const reason_layer_names[] = {
#define LAYER_ROW_(LAYER, name) [ATTN_REASON_LAYER_##LAYER] = name,
    ATTN_REASON_LAYER_MAP(LAYER_ROW_)
#undef LAYER_ROW_
};

ATTNREG_API const char *attn_reason_name(int32_t reason)
{
    if (reason < 0 || reason >= ATTN_REASON_COUNT)
        return "UNKNOWN";
    return reason_names[reason];
}

ATTNREG_API const char *attn_reason_layer_name(int32_t reason)
{
    if (reason < 0 || reason >= ATTN_REASON_COUNT)
        return "unknown";
    return reason_layer_names[attn_reason_layer_of(reason)];
}

ATTNREG_API const char *attn_dtype_name(int32_t dtype)
{
    return attn_dtype_spelling(dtype);
}

ATTNREG_API attn_dtype attn_dtype_from_name(const char *name)
{
    if (!name)
        return ATTN_DTYPE_INVALID;
    for (int i = 1; i < ATTN_DTYPE_COUNT; i++)
        if (strcmp(name, attn_dtype_spelling(i)) == 0)
            return (attn_dtype)i;
    return ATTN_DTYPE_INVALID;
}

ATTNREG_API size_t attn_enum_count(const char *enum_name)
{
    static const struct {
        const char *name;
        size_t count;
    } enums[] = {
        {"attn_status", ATTN_STATUS_COUNT}, {"attn_reason", ATTN_REASON_COUNT},
        {"attn_dtype", ATTN_DTYPE_COUNT},   {"attn_log_level", (size_t)ATTN_LOG_OFF + 1},
        {"attn_phase", ATTN_PHASE_COUNT},   {"attn_layer_kind", ATTN_LAYER_KIND_COUNT},
    };
    for (size_t i = 0; enum_name && i < sizeof enums / sizeof enums[0]; i++)
        if (strcmp(enum_name, enums[i].name) == 0)
            return enums[i].count;
    return 0;
}

#define ATTNREG_STR_(x) #x
#define ATTNREG_STR(x) ATTNREG_STR_(x)

ATTNREG_API const char *attnreg_version_string(void)
{
    return ATTNREG_STR(ATTNREG_VERSION_MAJOR) "." ATTNREG_STR(
        ATTNREG_VERSION_MINOR) "." ATTNREG_STR(ATTNREG_VERSION_PATCH);
}

ATTNREG_API void attnreg_version(int *major, int *minor, int *patch)
{
    if (major)
        *major = ATTNREG_VERSION_MAJOR;
    if (minor)
        *minor = ATTNREG_VERSION_MINOR;
    if (patch)
        *patch = ATTNREG_VERSION_PATCH;
}

ATTNREG_API uint32_t attnreg_plugin_abi_version(void)
{
    return ((uint32_t)ATTN_PLUGIN_ABI_MAJOR << 16) | ATTN_PLUGIN_ABI_MINOR;
}
