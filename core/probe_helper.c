/* SPDX-License-Identifier: Apache-2.0 */
/* probe_helper.c — the child's side of the out-of-process probe (probe.c has
 * the parent's and says why a fresh program): attnreg-probe (probe_main.c)
 * loads this library and calls attn_probe_helper_main, which loads the one
 * plugin it is given as a host would and reports on the result descriptor.
 * Apart from probe.c so that the call graph runs one way: plugin.c asks
 * probe.c for the probe; this file asks plugin.c for the load. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

ATTNREG_API int attn_probe_helper_main(int argc, char **argv)
{
    /* Blocked by the parent across the clone; the plugin runs as a host
     * would run it. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (argc < 6 || (argc - 6) % 2 != 0) {
        fprintf(stderr, "%s: the out-of-process probe of libattnreg; not to be run by hand\n",
                argc > 0 ? argv[0] : ATTN_PROBE_HELPER_NAME);
        return 2;
    }
    int fd = atoi(argv[1]);
    attn_registry *reg = calloc(1, sizeof *reg);
    attn_candidate *c = calloc(1, sizeof *c);
    attn_param *params = calloc((size_t)(argc - 6) / 2 + 1, sizeof *params);
    if (!reg || !c || !params)
        return 3;
    reg->logger.level = ATTN_LOG_OFF; /* the parent reports */
    pthread_mutex_init(&reg->diag_lock, NULL);
    pthread_mutex_init(&c->load_lock, NULL);
    c->registry = reg;
    c->library = argv[2];
    c->name = argv[3];
    c->conf_file = argv[4];
    c->name_line = atoi(argv[5]);
    for (int i = 6; i + 1 < argc; i += 2) {
        params[c->num_params].key = argv[i];
        params[c->num_params].value = argv[i + 1];
        c->num_params++;
    }
    c->params = params;
    const char done = attn_candidate_load_library(c) ? 'K' : 'F';
    ssize_t w = write(fd, &done, 1);
    /* What the plugin left running is not ours to tear down. */
    _exit(w == 1 ? 0 : 1);
}
