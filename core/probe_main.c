/* SPDX-License-Identifier: Apache-2.0 */
/* probe_main.c — attnreg-probe, the program libattnreg runs to load one
 * plugin out of process (probe.c says why a fresh program, not a fork).
 *
 *   attnreg-probe LIBATTNREG FD LIBRARY NAME CONF_FILE LINE [KEY VALUE]...
 *
 * It links nothing but libc: it loads the very libattnreg that started it,
 * by the absolute path it is given, and runs its attn_probe_helper_main. (A
 * RUNPATH of $ORIGIN would not do: the dynamic loader ignores $ORIGIN when
 * the exec is secure, as it is under a setuid host.) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "attnreg-probe: the out-of-process probe of libattnreg; not to be run "
                        "by hand\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    void *sym = lib ? dlsym(lib, "attn_probe_helper_main") : NULL;
    if (!sym) {
        fprintf(stderr, "attnreg-probe: %s: %s\n", argv[1], dlerror());
        /* 'E' on the result descriptor: "the helper could not be run". */
        const char failed = 'E';
        ssize_t w = write(atoi(argv[2]), &failed, 1);
        return w == 1 ? 125 : 126;
    }
    int (*helper_main)(int, char **);
    memcpy(&helper_main, &sym, sizeof helper_main);
    return helper_main(argc - 1, argv + 1);
}
