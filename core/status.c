/* SPDX-License-Identifier: Apache-2.0 */
/* status.c — the tables of status names, messages and classes, reason names
 * and layers, dtype names (all generated from the lists of attn_types.h),
 * enum counts for bindings, and the library version. */
#include <string.h>

#include "internal.h"

/* Each list's values are its positions (0, 1, 2, ...), so the tables below
 * can be indexed by them: a gap or a repeated value fails here. */
#define CHECK_POSITIONS_(MAP, LIST)                                                                \
    enum { MAP(POSITION_##LIST##_) };                                                              \
    MAP(CHECK_##LIST##_)
#define POSITION_STATUS_(NAME, value, ...) POS_STATUS_##NAME,
#define CHECK_STATUS_(NAME, value, ...) _Static_assert(value == POS_STATUS_##NAME, #NAME);
#define POSITION_REASON_(NAME, value, ...) POS_REASON_##NAME,
#define CHECK_REASON_(NAME, value, ...) _Static_assert(value == POS_REASON_##NAME, #NAME);
#define POSITION_DTYPE_(NAME, value, ...) POS_DTYPE_##NAME,
#define CHECK_DTYPE_(NAME, value, ...) _Static_assert(value == POS_DTYPE_##NAME, #NAME);
#define POSITION_LOG_(NAME, value, ...) POS_LOG_##NAME,
#define CHECK_LOG_(NAME, value, ...) _Static_assert(value == POS_LOG_##NAME, #NAME);
#define POSITION_PHASE_(NAME, value, ...) POS_PHASE_##NAME,
#define CHECK_PHASE_(NAME, value, ...) _Static_assert(value == POS_PHASE_##NAME, #NAME);
#define POSITION_KIND_(NAME, value, ...) POS_KIND_##NAME,
#define CHECK_KIND_(NAME, value, ...) _Static_assert(value == POS_KIND_##NAME, #NAME);
CHECK_POSITIONS_(ATTN_STATUS_MAP, STATUS)
CHECK_POSITIONS_(ATTN_REASON_MAP, REASON)
CHECK_POSITIONS_(ATTN_DTYPE_MAP, DTYPE)
CHECK_POSITIONS_(ATTN_LOG_LEVEL_MAP, LOG)
CHECK_POSITIONS_(ATTN_PHASE_MAP, PHASE)
CHECK_POSITIONS_(ATTN_LAYER_KIND_MAP, KIND)

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
        {"attn_status", ATTN_STATUS_COUNT},
        {"attn_reason", ATTN_REASON_COUNT},
        {"attn_dtype", ATTN_DTYPE_COUNT},
        {"attn_log_level", 0 ATTN_LOG_LEVEL_MAP(ATTN_LIST_ONE_)},
        {"attn_phase", ATTN_PHASE_COUNT},
        {"attn_layer_kind", ATTN_LAYER_KIND_COUNT},
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
