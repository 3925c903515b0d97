/* fuzz_cli_flags.c — libFuzzer harness for the CLI's shared flag parser:
 * the input is split at NUL bytes into argv, parsed with every flag group
 * accepted, then finished and validated as the commands do. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* Usage errors are printed: run.sh passes -close_fd_mask=3, which
     * keeps them off libFuzzer's own output. */
    cli_set_command_name("fuzz");
    return 0;
}

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return -1;
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 1];
    int argc = 0;
    argv[argc++] = (char *)"fuzz";
    for (size_t at = 0; at <= size && argc < MAX_ARGS; at += strlen(buf + at) + 1)
        argv[argc++] = buf + at;
    argv[argc] = NULL;
    struct cli_common c;
    cli_common_init(&c, CLI_ACCEPT_SHAPE | CLI_ACCEPT_CONF | CLI_ACCEPT_SELECT | CLI_ACCEPT_JSON |
                            CLI_ACCEPT_LOG);
    int ok = 1;
    for (int i = 1; i < argc && ok; i++)
        ok = cli_parse_common_flag(&c, argc, argv, &i) >= 0;
    if (ok) {
        cli_common_finish(&c);
        char msg[512];
        attn_shape_validate(&c.shape, msg, sizeof msg);
        attn_shape_format(&c.shape, msg, sizeof msg);
    }
    free(buf);
    return 0;
}
