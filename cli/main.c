/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c — `attnreg`: the command table and dispatch. Each command parses its
 * own arguments (argv[0] is the command name) and returns a cli_exit code.
 */
#include <string.h>

#include "cli.h"

/* cli_lists.h's CLI_COMMAND_MAP, in its order. */
static const struct cli_command commands[] = {
#define COMMAND_ROW_(name, accept, FLAGS, summary)                                                 \
    {#name, summary, cli_cmd_##name, cli_help_##name},
    CLI_COMMAND_MAP(COMMAND_ROW_)
#undef COMMAND_ROW_
};

#define NUM_COMMANDS (sizeof commands / sizeof commands[0])

static const struct cli_command *find_command(const char *name)
{
    for (size_t k = 0; k < NUM_COMMANDS; k++) {
        if (strcmp(commands[k].name, name) == 0)
            return &commands[k];
    }
    return NULL;
}

static void print_main_help(FILE *out)
{
    fputs("Usage: attnreg COMMAND [ARGS...]\n"
          "       attnreg help COMMAND | attnreg COMMAND --help\n"
          "       attnreg --version\n"
          "\n"
          "Chooses and explains attention backends from the plugin INI files.\n"
          "\n"
          "Commands:\n",
          out);
    for (size_t k = 0; k < NUM_COMMANDS; k++)
        fprintf(out, "  %-9s %s\n", commands[k].name, commands[k].summary);
    fputs("\nExit codes:\n", out);
#define EXIT_LINE_(NAME, code, meaning) fprintf(out, "  %-3d %s\n", code, meaning);
    CLI_EXIT_MAP(EXIT_LINE_)
#undef EXIT_LINE_
    fputs("\n"
          "Environment: ATTNREG_CONF_PATH (conf folders, colon separated), ATTNREG_BACKEND\n"
          "(force a backend), ATTNREG_DISABLE (a,b: remove backends), ATTNREG_LOG (level).\n"
          "Any other ATTNREG_* variable is warned about once, with the closest known name.\n",
          out);
}

int main(int argc, char **argv)
{
    const struct cli_command *command;

    if (argc < 2) {
        print_main_help(stderr);
        return CLI_EXIT_USAGE;
    }
    if (cli_is_help_flag(argv[1])) {
        print_main_help(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], CLI_VERSION_FLAG) == 0) {
        printf("attnreg %s (plugin ABI %u.%u)\n", attnreg_version_string(),
               (unsigned)(attnreg_plugin_abi_version() >> 16),
               (unsigned)(attnreg_plugin_abi_version() & 0xffffu));
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], CLI_HELP_COMMAND) == 0) {
        if (argc == 2) {
            print_main_help(stdout);
            return CLI_EXIT_OK;
        }
        if (argc > 3)
            return cli_usage_error("help: expected one command name, got %d", argc - 2);
        command = find_command(argv[2]);
        if (!command)
            return cli_usage_error("help: unknown command '%s'", argv[2]);
        command->help(stdout);
        return CLI_EXIT_OK;
    }
    /* --json anywhere makes every error a JSON document too, including those
     * found before the command reads its flags. */
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--json") == 0)
            cli_json_set_mode(1);
    command = find_command(argv[1]);
    if (!command)
        return cli_usage_error("unknown command '%s'", argv[1]);
    cli_set_command_name(command->name);
    int rc = command->run(argc - 1, argv + 1);
    /* A failure path that printed only to stderr still leaves one JSON
     * document on stdout. */
    if (rc != CLI_EXIT_OK && !cli_json_document_written())
        cli_json_error(cli_exit_name(rc), "see the message on stderr", rc);
    return rc;
}
