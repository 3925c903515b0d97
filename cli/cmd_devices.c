/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_devices.c — `attnreg devices`: the devices each plugin can run on, as
 * the plugin's own probe reports them. Having no device is information, not
 * an error: the exit code is 0 unless the arguments or the conf are wrong.
 */
#include "cli.h"

/* More devices than any one host has; extra ones are counted, not listed. */
#define MAX_DEVICES 64

void cli_help_devices(FILE *out)
{
    fputs("Usage: attnreg devices [OPTIONS]\n"
          "\n"
          "Loads every declared plugin and asks it for the devices it can run on: index,\n"
          "arch, name, memory and compute units; or \"no device\" with the runtime's\n"
          "message (no GPU, no driver), or why the plugin does not load.\n"
          "\n",
          out);
    cli_help_common(out, CLI_ACCEPT_OF_devices);
    fputs("\n"
          "Exit codes: 0 listed (also when no plugin has a device); 2 usage error;\n"
          "6 the registry could not be opened.\n",
          out);
}

int cli_cmd_devices(int argc, char **argv)
{
    struct cli_common c;
    attn_registry *reg;
    size_t num_plugins;
    struct cli_json j;
    int rc;

    cli_common_init(&c, CLI_ACCEPT_OF_devices);
    for (int i = 1; i < argc; i++) {
        int r;
        if (cli_is_help_flag(argv[i])) {
            cli_help_devices(stdout);
            return CLI_EXIT_OK;
        }
        r = cli_parse_common_flag(&c, argc, argv, &i);
        if (r < 0)
            return CLI_EXIT_USAGE;
        if (r == 0)
            return cli_usage_error("devices: unknown argument '%s'", argv[i]);
    }

    rc = cli_open_registry(&c, &reg);
    if (rc != CLI_EXIT_OK)
        return rc;
    num_plugins = attn_registry_plugin_count(reg);
    if (c.json) {
        cli_json_init(&j, stdout);
        cli_json_begin_object(&j, NULL);
        cli_json_begin_array(&j, "plugins");
    }

    for (size_t k = 0; k < num_plugins; k++) {
        attn_plugin_info info = {.struct_size = sizeof info};
        attn_plugin_load_info load = {.struct_size = sizeof load};
        attn_device_info devices[MAX_DEVICES];
        uint32_t count = 0;
        attn_status status;
        const char *why = NULL;

        if (attn_registry_plugin(reg, k, &info) != ATTN_OK)
            continue;
        for (uint32_t d = 0; d < MAX_DEVICES; d++)
            devices[d] = (attn_device_info){.struct_size = sizeof devices[d]};
        /* Load first so that a plugin that cannot load says why, rather than
         * a bare "no device". */
        status = attn_registry_load_plugin(reg, k, &load);
        if (status == ATTN_OK && load.status != ATTN_OK)
            status = load.status;
        if (status == ATTN_OK) {
            status = attn_registry_probe_devices(reg, k, devices, MAX_DEVICES, &count);
            if (status != ATTN_OK)
                why = attn_last_error();
        } else {
            why = load.message;
        }
        if (!why || !*why)
            why = attn_status_message(status);
        if (count > MAX_DEVICES)
            count = MAX_DEVICES;
        /* The names come from a plugin; never trust them to be terminated. */
        for (uint32_t d = 0; d < count; d++) {
            devices[d].arch[sizeof devices[d].arch - 1] = '\0';
            devices[d].name[sizeof devices[d].name - 1] = '\0';
        }

        if (c.json) {
            cli_json_begin_object(&j, NULL);
            cli_json_string_member(&j, "backend", info.name);
            cli_json_string_member(&j, "status", attn_status_name(status));
            cli_json_string_member(&j, "message", status == ATTN_OK ? "" : why);
            cli_json_begin_array(&j, "devices");
            for (uint32_t d = 0; status == ATTN_OK && d < count; d++) {
                cli_json_begin_object(&j, NULL);
                cli_json_int_member(&j, "index", devices[d].index);
                cli_json_string_member(&j, "arch", devices[d].arch);
                cli_json_string_member(&j, "name", devices[d].name);
                cli_json_int_member(&j, "memory_bytes", (long long)devices[d].memory_bytes);
                cli_json_int_member(&j, "compute_units", devices[d].compute_units);
                cli_json_end_object(&j);
            }
            cli_json_end_array(&j);
            cli_json_end_object(&j);
            continue;
        }
        if (status == ATTN_ERR_NO_DEVICE) {
            printf("%s: no device: %s\n", info.name, why);
        } else if (load.status != ATTN_OK) {
            printf("%s: not loaded: %s: %s\n", info.name, attn_reason_name(load.reason), why);
        } else if (status != ATTN_OK) {
            printf("%s: %s: %s\n", info.name, attn_status_name(status), why);
        } else {
            printf("%s: %u device%s\n", info.name, (unsigned)count, count == 1 ? "" : "s");
            for (uint32_t d = 0; d < count; d++)
                printf("  %d  %-10s  %s  %.1f GiB  %d compute units\n", (int)devices[d].index,
                       devices[d].arch, devices[d].name,
                       (double)devices[d].memory_bytes / (1024.0 * 1024.0 * 1024.0),
                       (int)devices[d].compute_units);
        }
    }
    if (c.json) {
        cli_json_end_array(&j);
        cli_json_end_object(&j);
    }
    attn_registry_close(reg);
    return CLI_EXIT_OK;
}
