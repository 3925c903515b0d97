/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fake_plugin.c — broken plugins for the CLI baselines, one source built with
 * different defines, so `attnreg check` and `explain` can be shown reporting
 * each failure by name while selection still works:
 *   FAKE_WRONG_ABI  exports the entry symbol but returns a descriptor of ABI
 *                   major 99, which the host must refuse;
 *   FAKE_NO_ENTRY   a valid shared library without the entry symbol.
 * The descriptor is written by hand (not with ATTN_PLUGIN_DEFINE) precisely
 * because it must be wrong.
 */
#include "attn_plugin.h"

#if defined(FAKE_WRONG_ABI)

static const attn_plugin_descriptor fake_descriptor = {
    .struct_size = sizeof(attn_plugin_descriptor),
    .abi_major = 99,
    .abi_minor = 0,
    .name = "fake-wrong-abi",
    .version = "0.0.0",
    .description = "a plugin built against a future plugin ABI",
};

ATTN_PLUGIN_EXPORT const attn_plugin_descriptor *attn_plugin_entry(uint32_t host_abi_major,
                                                                   uint32_t host_abi_minor);
ATTN_PLUGIN_EXPORT const attn_plugin_descriptor *attn_plugin_entry(uint32_t host_abi_major,
                                                                   uint32_t host_abi_minor)
{
    /* A well-behaved plugin would return NULL to a host of another major; this
     * one answers anyway so the host's own check is what refuses it. */
    (void)host_abi_major;
    (void)host_abi_minor;
    return &fake_descriptor;
}

#elif defined(FAKE_NO_ENTRY)

/* Exported under a name the host does not look for. */
ATTN_PLUGIN_EXPORT int attn_plugin_entry_misspelled(void);
ATTN_PLUGIN_EXPORT int attn_plugin_entry_misspelled(void)
{
    return 0;
}

#else
#error "define FAKE_WRONG_ABI or FAKE_NO_ENTRY"
#endif
