/* SPDX-License-Identifier: Apache-2.0 */
/* status.c — the one table of status names and messages, reason names,
 * dtype names and the library version. */
#include <string.h>

#include "internal.h"

static const struct {
    const char *name;
    const char *message;
} status_table[ATTN_STATUS_COUNT] = {
    [ATTN_OK] = {"ATTN_OK", "success"},
    [ATTN_ERR_INVALID_ARGUMENT] = {"ATTN_ERR_INVALID_ARGUMENT",
                                   "an argument is invalid (NULL pointer or bad struct_size)"},
    [ATTN_ERR_INVALID_SHAPE] = {"ATTN_ERR_INVALID_SHAPE",
                                "the shape is invalid: no backend could ever run it"},
    [ATTN_ERR_UNSUPPORTED] = {"ATTN_ERR_UNSUPPORTED", "no enabled backend supports the shape"},
    [ATTN_ERR_BACKEND_REJECTED] = {"ATTN_ERR_BACKEND_REJECTED",
                                   "the forced backend rejects the shape"},
    [ATTN_ERR_NOT_FOUND] = {"ATTN_ERR_NOT_FOUND", "no backend of that name is registered"},
    [ATTN_ERR_CONF] = {"ATTN_ERR_CONF", "a conf file is malformed"},
    [ATTN_ERR_LOAD] = {"ATTN_ERR_LOAD", "a plugin library could not be loaded"},
    [ATTN_ERR_ABI] = {"ATTN_ERR_ABI", "a plugin's ABI is incompatible with this host"},
    [ATTN_ERR_NO_MEMORY] = {"ATTN_ERR_NO_MEMORY", "out of memory"},
    [ATTN_ERR_NO_DEVICE] = {"ATTN_ERR_NO_DEVICE", "no device for this arch is present"},
    [ATTN_ERR_ARCH_NOT_IN_BINARY] = {"ATTN_ERR_ARCH_NOT_IN_BINARY",
                                     "the plugin binary holds no code for the arch"},
    [ATTN_ERR_NO_KERNELS] = {"ATTN_ERR_NO_KERNELS", "the plugin was built without GPU kernels"},
    [ATTN_ERR_CREATE_FAILED] = {"ATTN_ERR_CREATE_FAILED",
                                "the backend's constructor refused the shape"},
    [ATTN_ERR_RUNTIME] = {"ATTN_ERR_RUNTIME", "a device runtime call failed"},
    [ATTN_ERR_WORKSPACE_TOO_SMALL] = {"ATTN_ERR_WORKSPACE_TOO_SMALL",
                                      "the workspace passed to forward is too small"},
    [ATTN_ERR_INIT_FAILED] = {"ATTN_ERR_INIT_FAILED", "the plugin's init hook failed"},
    [ATTN_ERR_IO] = {"ATTN_ERR_IO", "a file could not be read or written"},
    [ATTN_ERR_INTERNAL] = {"ATTN_ERR_INTERNAL", "internal error in attnreg"},
};

ATTNREG_API const char *attn_status_name(attn_status status)
{
    if ((int)status < 0 || (int)status >= ATTN_STATUS_COUNT)
        return "ATTN_ERR_UNKNOWN";
    return status_table[status].name;
}

ATTNREG_API const char *attn_status_message(attn_status status)
{
    if ((int)status < 0 || (int)status >= ATTN_STATUS_COUNT)
        return "unknown status code";
    return status_table[status].message;
}

static const char *const reason_names[ATTN_REASON_COUNT] = {
    [ATTN_REASON_NONE] = "NONE",
    [ATTN_REASON_DISABLED] = "DISABLED",
    [ATTN_REASON_DISABLED_BY_HOST] = "DISABLED_BY_HOST",
    [ATTN_REASON_ARCH_NOT_LISTED] = "ARCH_NOT_LISTED",
    [ATTN_REASON_NARROWED] = "NARROWED",
    [ATTN_REASON_LOAD_FAILED] = "LOAD_FAILED",
    [ATTN_REASON_NO_ENTRY_SYMBOL] = "NO_ENTRY_SYMBOL",
    [ATTN_REASON_ABI_MISMATCH] = "ABI_MISMATCH",
    [ATTN_REASON_BAD_DESCRIPTOR] = "BAD_DESCRIPTOR",
    [ATTN_REASON_INIT_FAILED] = "INIT_FAILED",
    [ATTN_REASON_ARCH] = "ARCH",
    [ATTN_REASON_Q_DTYPE] = "Q_DTYPE",
    [ATTN_REASON_KV_DTYPE] = "KV_DTYPE",
    [ATTN_REASON_COMPUTE_DTYPE] = "COMPUTE_DTYPE",
    [ATTN_REASON_OUT_DTYPE] = "OUT_DTYPE",
    [ATTN_REASON_GQA_RATIO] = "GQA_RATIO",
    [ATTN_REASON_HEAD_DIM] = "HEAD_DIM",
    [ATTN_REASON_HEAD_DIM_V] = "HEAD_DIM_V",
    [ATTN_REASON_PAGE_SIZE] = "PAGE_SIZE",
    [ATTN_REASON_Q_LEN] = "Q_LEN",
    [ATTN_REASON_KV_LEN] = "KV_LEN",
    [ATTN_REASON_CAUSAL] = "CAUSAL",
    [ATTN_REASON_WINDOW] = "WINDOW",
    [ATTN_REASON_SOFTCAP] = "SOFTCAP",
    [ATTN_REASON_SINKS] = "SINKS",
    [ATTN_REASON_FP8_COMPUTE_MHA_ONLY] = "FP8_COMPUTE_MHA_ONLY",
    [ATTN_REASON_ARCH_NOT_IN_BINARY] = "ARCH_NOT_IN_BINARY",
    [ATTN_REASON_NO_DEVICE] = "NO_DEVICE",
    [ATTN_REASON_OTHER] = "OTHER",
    [ATTN_REASON_INVALID_REASON] = "INVALID_REASON",
    [ATTN_REASON_RESOURCE] = "RESOURCE",
    [ATTN_REASON_LSE] = "LSE",
};

ATTNREG_API const char *attn_reason_name(int32_t reason)
{
    if (reason < 0 || reason >= ATTN_REASON_COUNT)
        return "UNKNOWN";
    return reason_names[reason];
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
