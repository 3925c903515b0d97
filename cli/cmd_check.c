/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_check.c — `attnreg check`: what is wrong with an installation. Lists
 * the conf diagnostics (each with file:line), then loads every declared plugin
 * and reports its version, ABI and built archs, or why it does not load.
 */
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

void cli_help_check(FILE *out)
{
    fputs("Usage: attnreg check [OPTIONS]\n"
          "\n"
          "Validates an installation: prints the conf folders in search order (--conf,\n"
          "ATTNREG_CONF_PATH, <sysconfdir>/attnreg/conf.d, <datadir>/attnreg/conf) with\n"
          "where each comes from, and every conf diagnostic (file:line, status,\n"
          "message), then loads every declared plugin\n"
          "library and prints OK with its version, plugin ABI and the archs the binary\n"
          "was built for, or FAIL with the reason name and sentence (missing file,\n"
          "dlopen error, no entry symbol, ABI refused, init failed, crashed or called\n"
          "exit() while loading: each plugin is loaded in a child process first).\n"
          "An enabled plugin none of whose INI archs is built into its binary gets a\n"
          "WARN line naming both lists (it is selected for archs it cannot run; a\n"
          "warning, not a failure).\n"
          "\n",
          out);
    cli_help_common(out, CLI_ACCEPT_OF_check);
    fputs("\n"
          "Exit codes: 0 no problem; 1 a conf diagnostic, a plugin that fails to load, or\n"
          "no plugin declared at all;\n"
          "2 usage error; 6 the registry could not be opened.\n",
          out);
}

static int folder_exists(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static const char *archs_text(const char *built_archs)
{
    return built_archs && *built_archs ? built_archs : "none (built without kernels)";
}

/* 1 when one of the binary's built archs (comma separated, as the load info
 * gives them) is also in the plugin's INI archs. When none is, selection can
 * still plan for the INI's archs, but every create fails (the binary holds
 * no code for them), and the archs the binary does hold are never selected:
 * an INI written for another build, which `check` is the place to say. */
static int archs_meet(const attn_plugin_info *info, const char *built_archs)
{
    while (built_archs && *built_archs) {
        char arch[ATTN_ARCH_MAX];
        size_t len = strcspn(built_archs, ",");
        const char *start = built_archs, *end = built_archs + len;
        while (start < end && *start == ' ')
            start++;
        while (end > start && end[-1] == ' ')
            end--;
        if ((size_t)(end - start) < sizeof arch) {
            memcpy(arch, start, (size_t)(end - start));
            arch[end - start] = '\0';
            if (attn_plugin_info_has_arch(info, arch))
                return 1;
        }
        built_archs += len;
        if (*built_archs == ',')
            built_archs++;
    }
    return 0;
}

/* The warning of an enabled plugin whose INI archs and built archs do not
 * meet, naming both lists; "" when they meet (or the plugin is disabled). */
static void arch_warning(char *out, size_t size, const attn_plugin_info *info,
                         const char *built_archs)
{
    out[0] = '\0';
    if (!info->enabled || archs_meet(info, built_archs))
        return;
    const char *ini = info->archs && *info->archs ? info->archs : "none";
    if (!built_archs || !*built_archs)
        snprintf(out, size,
                 "none of the INI's archs (%s) is built into the binary (built archs: none, "
                 "built without kernels): selection plans for them, but create fails",
                 ini);
    else
        snprintf(out, size,
                 "none of the INI's archs (%s) is built into the binary (built archs: %s): "
                 "selection plans for the former, create fails there, and the latter are never "
                 "selected",
                 ini, built_archs);
}

int cli_cmd_check(int argc, char **argv)
{
    struct cli_common c;
    attn_registry *reg;
    size_t num_diagnostics, num_plugins, num_conf_paths, num_failed = 0, num_conf_problems = 0,
                                                         num_arch_warnings = 0;
    struct cli_json j;
    int rc;

    cli_common_init(&c, CLI_ACCEPT_OF_check);
    for (int i = 1; i < argc; i++) {
        int r;
        if (cli_is_help_flag(argv[i])) {
            cli_help_check(stdout);
            return CLI_EXIT_OK;
        }
        r = cli_parse_common_flag(&c, argc, argv, &i);
        if (r < 0)
            return CLI_EXIT_USAGE;
        if (r == 0)
            return cli_usage_error("check: unknown argument '%s'", argv[i]);
    }

    /* Each plugin is loaded in a child process first: one that crashes or
     * calls exit() while loading is that plugin's FAIL line, not the end of
     * the check (nor its exit status). */
    c.probe_out_of_process = 1;
    rc = cli_open_registry(&c, &reg);
    if (rc != CLI_EXIT_OK)
        return rc;

    /* Conf diagnostics are taken before loading: loading adds its own
     * diagnostics, which the per-plugin lines below already report. */
    num_diagnostics = attn_registry_diagnostic_count(reg);
    num_plugins = attn_registry_plugin_count(reg);
    num_conf_paths = attn_registry_conf_path_count(reg);

    if (c.json) {
        cli_json_init(&j, stdout);
        cli_json_begin_object(&j, NULL);
        /* The search order: each folder, where it came from, and whether it
         * is there (the default folders are listed even when absent). */
        cli_json_begin_array(&j, "conf_paths");
        for (size_t k = 0; k < num_conf_paths; k++) {
            cli_json_begin_object(&j, NULL);
            cli_json_string_member(&j, "path", attn_registry_conf_path(reg, k));
            cli_json_string_member(&j, "origin", attn_registry_conf_path_origin(reg, k));
            cli_json_bool_member(&j, "exists", folder_exists(attn_registry_conf_path(reg, k)));
            cli_json_end_object(&j);
        }
        cli_json_end_array(&j);
        cli_json_begin_array(&j, "diagnostics");
    } else {
        printf("conf folders, in search order (an earlier folder's plugin overrides a later "
               "one of the same name):\n");
        for (size_t k = 0; k < num_conf_paths; k++)
            printf("  %-17s  %s%s\n", attn_registry_conf_path_origin(reg, k),
                   attn_registry_conf_path(reg, k),
                   folder_exists(attn_registry_conf_path(reg, k)) ? "" : " (absent)");
        printf("conf diagnostics:%s\n", num_diagnostics ? "" : " none");
    }
    for (size_t k = 0; k < num_diagnostics; k++) {
        attn_diagnostic d = {.struct_size = sizeof d};
        if (attn_registry_diagnostic(reg, k, &d) != ATTN_OK)
            continue;
        /* A diagnostic with ATTN_OK is a warning (say a newer format minor):
         * shown, but not a reason to fail. */
        if (d.status != ATTN_OK)
            num_conf_problems++;
        if (c.json) {
            cli_json_begin_object(&j, NULL);
            cli_json_string_member(&j, "status", attn_status_name(d.status));
            cli_json_bool_member(&j, "problem", d.status != ATTN_OK);
            cli_json_string_member(&j, "file", d.file);
            cli_json_int_member(&j, "line", d.line);
            cli_json_string_member(&j, "backend", d.plugin);
            cli_json_string_member(&j, "message", d.message);
            cli_json_end_object(&j);
        } else {
            /* The library's messages usually begin with file:line already;
             * add the location only when the message does not. */
            int located = d.file && d.message && strncmp(d.message, d.file, strlen(d.file)) == 0;
            printf("  %s  ", d.status == ATTN_OK ? "WARN" : "FAIL");
            if (d.file && !located && d.line > 0)
                printf("%s:%d: ", d.file, (int)d.line);
            else if (d.file && !located)
                printf("%s: ", d.file);
            printf("%s (%s)\n", d.message ? d.message : "",
                   d.status == ATTN_OK ? "warn" : attn_status_name(d.status));
        }
    }
    if (c.json) {
        cli_json_end_array(&j);
        cli_json_begin_array(&j, "plugins");
    } else {
        printf("plugins:%s\n", num_plugins ? "" : " none declared");
    }

    /* Plugin names padded to one width, so the OK/FAIL lines read as a table. */
    int name_w = 0;
    for (size_t k = 0; k < num_plugins; k++) {
        attn_plugin_info info = {.struct_size = sizeof info};
        if (attn_registry_plugin(reg, k, &info) == ATTN_OK && info.name &&
            (int)strlen(info.name) > name_w)
            name_w = (int)strlen(info.name);
    }

    size_t seen_diagnostics = num_diagnostics;
    for (size_t k = 0; k < num_plugins; k++) {
        attn_plugin_info info = {.struct_size = sizeof info};
        attn_plugin_load_info load = {.struct_size = sizeof load};
        attn_status status;
        if (attn_registry_plugin(reg, k, &info) != ATTN_OK)
            continue;
        status = attn_registry_load_plugin(reg, k, &load);
        if (status == ATTN_OK && load.status != ATTN_OK)
            status = load.status;
        if (status != ATTN_OK)
            num_failed++;
        char warning[1024] = "";
        if (status == ATTN_OK)
            arch_warning(warning, sizeof warning, &info, load.built_archs);
        if (warning[0])
            num_arch_warnings++;
        if (c.json) {
            cli_json_begin_object(&j, NULL);
            cli_json_string_member(&j, "backend", info.name);
            cli_json_bool_member(&j, "ok", status == ATTN_OK);
            cli_json_string_member(&j, "status", attn_status_name(status));
            cli_json_string_member(&j, "library", info.library);
            cli_json_string_member(&j, "conf_file", info.conf_file);
            cli_json_int_member(&j, "conf_line", info.conf_line);
            if (status == ATTN_OK) {
                char abi[32];
                snprintf(abi, sizeof abi, "%u.%u", (unsigned)load.abi_major,
                         (unsigned)load.abi_minor);
                cli_json_string_member(&j, "version", load.version);
                cli_json_string_member(&j, "abi", abi);
                cli_json_arch_list(&j, "built_archs", load.built_archs);
                cli_json_arch_list(&j, "ini_archs", info.archs);
                cli_json_bool_member(&j, "enabled", info.enabled);
                cli_json_string_member(&j, "arch_warning", warning[0] ? warning : NULL);
                cli_json_int_member(&j, "num_predicates", load.num_predicates);
                cli_json_string_member(&j, "description", load.description);
                cli_json_bool_member(&j, "graph_capturable", load.graph_capturable);
                cli_json_arch_limits(&j, "arch_limits", &load);
            } else {
                cli_json_string_member(&j, "reason", attn_reason_name(load.reason));
                cli_json_string_member(&j, "message", load.message);
            }
            cli_json_end_object(&j);
        } else if (status == ATTN_OK) {
            printf("  OK    %-*s  version %s  ABI %u.%u  built archs: %s\n", name_w, info.name,
                   load.version ? load.version : "?", (unsigned)load.abi_major,
                   (unsigned)load.abi_minor, archs_text(load.built_archs));
            cli_print_arch_limits(stdout, "        ", &load);
            if (warning[0])
                printf("        %-*s  WARN %s\n", name_w, "", warning);
        } else {
            printf("  FAIL  %-*s  %s: %s\n", name_w, info.name, attn_reason_name(load.reason),
                   load.message && *load.message ? load.message : attn_status_message(status));
            printf("        %-*s  library %s (%s:%d)\n", name_w, "",
                   info.library ? info.library : "?", info.conf_file ? info.conf_file : "?",
                   (int)info.conf_line);
        }
        /* Warnings the load added (a plugin library or folder that others
         * can write, a device count cut): shown under the plugin's line. */
        size_t now = attn_registry_diagnostic_count(reg);
        for (; !c.json && seen_diagnostics < now; seen_diagnostics++) {
            attn_diagnostic d = {.struct_size = sizeof d};
            if (attn_registry_diagnostic(reg, seen_diagnostics, &d) == ATTN_OK &&
                d.status == ATTN_OK)
                printf("        %-*s  WARN %s\n", name_w, "", d.message ? d.message : "");
        }
    }

    if (c.json) {
        cli_json_end_array(&j);
        cli_json_int_member(&j, "conf_problems", (long long)num_conf_problems);
        cli_json_int_member(&j, "failed_plugins", (long long)num_failed);
        cli_json_int_member(&j, "arch_warnings", (long long)num_arch_warnings);
        cli_json_bool_member(&j, "ok", num_conf_problems == 0 && num_failed == 0 && num_plugins);
        cli_json_end_object(&j);
    } else {
        printf("summary: %zu plugin%s, %zu failed to load, %zu conf problem%s", num_plugins,
               num_plugins == 1 ? "" : "s", num_failed, num_conf_problems,
               num_conf_problems == 1 ? "" : "s");
        /* Said only when there are any, so the summary of a clean
         * installation reads as before. */
        if (num_arch_warnings)
            printf(", %zu arch warning%s", num_arch_warnings, num_arch_warnings == 1 ? "" : "s");
        printf("\n");
    }
    attn_registry_close(reg);
    /* No plugin at all is a broken installation (INIs not found, or
     * written for another prefix), not a clean one. */
    return num_conf_problems || num_failed || !num_plugins ? CLI_EXIT_PROBLEMS : CLI_EXIT_OK;
}
