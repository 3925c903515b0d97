/* SPDX-License-Identifier: Apache-2.0 */
/* probe_main.c — attnreg-probe, the program libattnreg runs to load one
 * plugin out of process (probe.c says why a fresh program, not a fork). */
#include "internal.h"

int main(int argc, char **argv)
{
    return attn_probe_helper_main(argc, argv);
}
