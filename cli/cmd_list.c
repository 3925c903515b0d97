/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_list.c — `attnreg list`: the plugins the conf files declare, in
 * priority order. INI layer only: no plugin library is loaded, so listing
 * works on a machine without any GPU runtime.
 */
#include <string.h>

#include "cli.h"

void cli_help_list(FILE *out)
{
    fputs("Usage: attnreg list [--arch A] [OPTIONS]\n"
          "\n"
          "Lists the plugins the conf files declare, highest priority first (ties by\n"
          "name): name, priority, enabled, archs, library and the INI that declares it.\n"
          "Reads the INI files only; no plugin library is loaded.\n"
          "\n"
          "  --arch A             only plugins whose INI lists arch A\n"
          "\n",
          out);
    cli_help_common(out, CLI_ACCEPT_OF_list);
    fputs("\n"
          "Exit codes: 0 listed (also when nothing matches); 2 usage error; 6 conf error.\n",
          out);
}

/* cli_lists.h's CLI_LIST_FLAG_MAP. */
enum list_flag { CLI_LIST_FLAG_MAP(CLI_FLAG_ID_) };
static const char *const list_flags[] = {CLI_LIST_FLAG_MAP(CLI_FLAG_NAME_)};
#define NUM_LIST_FLAGS (sizeof list_flags / sizeof list_flags[0])

static int column_width(const char *text, int current)
{
    int len = text ? (int)strlen(text) : 0;
    return len > current ? len : current;
}

int cli_cmd_list(int argc, char **argv)
{
    struct cli_common c;
    const char *arch = NULL;
    attn_registry *reg;
    size_t count;
    int rc;

    cli_common_init(&c, CLI_ACCEPT_OF_list);
    for (int i = 1; i < argc; i++) {
        int r;
        if (cli_is_help_flag(argv[i])) {
            cli_help_list(stdout);
            return CLI_EXIT_OK;
        }
        const int k = cli_flag_index(argv[i], list_flags, NUM_LIST_FLAGS);
        if (k >= 0) {
            const char *flag = list_flags[k];
            switch ((enum list_flag)k) {
            case CLI_FLAG_ARCH: {
                char checked[ATTN_ARCH_MAX];
                if (!(arch = cli_flag_value(argc, argv, &i, flag)) ||
                    cli_parse_arch(flag, arch, checked) != 0)
                    return CLI_EXIT_USAGE;
                break;
            }
            }
            continue;
        }
        r = cli_parse_common_flag(&c, argc, argv, &i);
        if (r < 0)
            return CLI_EXIT_USAGE;
        if (r == 0)
            return cli_usage_error("list: unknown argument '%s'", argv[i]);
    }

    rc = cli_open_registry(&c, &reg);
    if (rc != CLI_EXIT_OK)
        return rc;
    count = attn_registry_plugin_count(reg);

    if (c.json) {
        struct cli_json j;
        cli_json_init(&j, stdout);
        cli_json_begin_object(&j, NULL);
        cli_json_string_member(&j, "arch", arch);
        cli_json_begin_array(&j, "plugins");
        for (size_t k = 0; k < count; k++) {
            attn_plugin_info info = {.struct_size = sizeof info};
            if (attn_registry_plugin(reg, k, &info) != ATTN_OK)
                continue;
            if (arch && !attn_plugin_info_has_arch(&info, arch))
                continue;
            cli_json_begin_object(&j, NULL);
            cli_json_string_member(&j, "backend", info.name);
            cli_json_int_member(&j, "priority", info.priority);
            cli_json_bool_member(&j, "enabled", info.enabled);
            cli_json_arch_list(&j, "archs", info.archs);
            cli_json_string_member(&j, "library", info.library);
            cli_json_string_member(&j, "conf_file", info.conf_file);
            cli_json_int_member(&j, "conf_line", info.conf_line);
            cli_json_end_object(&j);
        }
        cli_json_end_array(&j);
        cli_json_end_object(&j);
    } else {
        /* Two passes: widths first, so the columns line up for any names.
         * The paths go on their own lines below each row: aligning them as
         * columns would make every row as wide as the longest path. */
        int name_w = (int)strlen("NAME");
        for (size_t k = 0; k < count; k++) {
            attn_plugin_info info = {.struct_size = sizeof info};
            if (attn_registry_plugin(reg, k, &info) != ATTN_OK)
                continue;
            if (arch && !attn_plugin_info_has_arch(&info, arch))
                continue;
            name_w = column_width(info.name, name_w);
        }
        printf("%-*s  %8s  %-7s  %s\n", name_w, "NAME", "PRIORITY", "ENABLED", "ARCHS");
        for (size_t k = 0; k < count; k++) {
            attn_plugin_info info = {.struct_size = sizeof info};
            if (attn_registry_plugin(reg, k, &info) != ATTN_OK)
                continue;
            if (arch && !attn_plugin_info_has_arch(&info, arch))
                continue;
            printf("%-*s  %8d  %-7s  %s\n", name_w, info.name ? info.name : "?", (int)info.priority,
                   info.enabled ? "yes" : "no", info.archs ? info.archs : "");
            printf("    library  %s\n", info.library ? info.library : "?");
            printf("    conf     %s:%d\n", info.conf_file ? info.conf_file : "?",
                   (int)info.conf_line);
        }
    }
    attn_registry_close(reg);
    return CLI_EXIT_OK;
}
