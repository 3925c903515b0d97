/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_select.c — `attnreg select SHAPE`: the backend the registry chooses.
 */
#include "cli.h"

void cli_help_select(FILE *out)
{
    fputs("Usage: attnreg select SHAPE [OPTIONS]\n"
          "\n"
          "Prints the backend the registry chooses for SHAPE on its first line. When a\n"
          "fallback rule was needed, the following indented lines give the rule, the\n"
          "rejection that triggered it and the effective shape. On failure the reason\n"
          "goes to stderr.\n"
          "\n",
          out);
    cli_help_common(out, CLI_ACCEPT_OF_select);
    fputs("\n"
          "Exit codes: 0 selected; 2 usage error; 3 invalid shape; 4 unsupported;\n"
          "5 forced backend rejects the shape or does not exist; 6 conf error; 10 internal.\n"
          "\n"
          "Example:\n"
          "  attnreg select --arch gfx950 --q-heads 16 --kv-heads 1 --head-dim 256 \\\n"
          "      --kv-dtype fp8_e4m3fn --max-q-len 4 --max-kv-len 4096\n",
          out);
}

int cli_cmd_select(int argc, char **argv)
{
    struct cli_common c;
    attn_registry *reg;
    attn_selection sel;
    attn_status status;
    int rc;

    cli_common_init(&c, CLI_ACCEPT_OF_select);
    for (int i = 1; i < argc; i++) {
        int r;
        if (cli_is_help_flag(argv[i])) {
            cli_help_select(stdout);
            return CLI_EXIT_OK;
        }
        r = cli_parse_common_flag(&c, argc, argv, &i);
        if (r < 0)
            return CLI_EXIT_USAGE;
        if (r == 0)
            return cli_usage_error("select: unknown argument '%s'", argv[i]);
    }
    cli_common_finish(&c);

    rc = cli_open_registry(&c, &reg);
    if (rc != CLI_EXIT_OK)
        return rc;
    attn_selection_init(&sel);
    status = attn_registry_select(reg, &c.shape, &sel);
    if (c.json) {
        struct cli_json j;
        cli_json_init(&j, stdout);
        cli_json_begin_object(&j, NULL);
        cli_json_string_member(&j, "status", attn_status_name(status));
        cli_json_int_member(&j, "exit_code", cli_exit_from_status(status));
        cli_json_shape(&j, "shape", &c.shape);
        cli_json_selection(&j, "selection", &sel);
        if (status != ATTN_OK)
            cli_json_error_member(&j, attn_status_name(status), sel.message,
                                  cli_exit_from_status(status));
        cli_json_end_object(&j);
    } else if (status == ATTN_OK) {
        cli_print_selection(stdout, &sel);
    }
    rc = status == ATTN_OK ? CLI_EXIT_OK : cli_report_failure(status, sel.message);
    attn_registry_close(reg);
    return rc;
}
