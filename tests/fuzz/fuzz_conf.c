#define _GNU_SOURCE /* memmem */
/* fuzz_conf.c — libFuzzer harness for the conf reader: each input is written
 * as the only INI of a private folder, a registry is opened on that folder
 * (the whole path: folder listing, file checks, inih, duplicate detection,
 * interpretation) and one shape is selected through it. Plugins named by a
 * fuzzed INI are never loaded: the selected arch is "fuzz", which no INI
 * lists unless the input says so, and then the library path does not exist
 * (a library named by path would be refused: see the check below). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnreg.h"

static char dir[64];
static char file[96];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "/tmp/attnreg-fuzz-conf-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    snprintf(file, sizeof file, "%s/fuzz.ini", dir);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A library path in the input could name a real .so: keep the fuzzer
     * from loading code by refusing inputs that mention one. */
    if (size >= 3 && memmem(data, size, ".so", 3))
        return -1;
    FILE *f = fopen(file, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    const char *paths[1] = {dir};
    attn_registry_options opt;
    attn_registry_options_init(&opt);
    opt.conf_paths = paths;
    opt.num_conf_paths = 1;
    opt.skip_default_conf = 1;
    opt.skip_env = 1;
    opt.log_level = ATTN_LOG_OFF;
    attn_registry *reg = NULL;
    if (attn_registry_open(&opt, &reg) == ATTN_OK) {
        for (size_t i = 0; i < attn_registry_diagnostic_count(reg); i++) {
            attn_diagnostic d = {.struct_size = sizeof d};
            attn_registry_diagnostic(reg, i, &d);
        }
        attn_shape s;
        attn_shape_init(&s);
        snprintf(s.arch, sizeof s.arch, "fuzz");
        attn_selection sel;
        attn_selection_init(&sel);
        attn_registry_select(reg, &s, &sel);
        attn_registry_close(reg);
    }
    return 0;
}
