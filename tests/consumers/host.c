/* SPDX-License-Identifier: Apache-2.0 */
/*
 * host.c — an out-of-tree C host of the installed attnreg: opens the
 * registry with the default search (the installation's conf folders), runs
 * what it selects for a small f32 GQA batch on the CPU and checks it against
 * a float64 reference. Built by CMakeLists.txt (find_package) and by
 * run.sh (pkg-config).
 */
#include "consumer_check.h"

int main(void)
{
    attn_registry_options opt;
    attn_registry *reg;
    attn_registry_options_init(&opt);
    opt.fail_on_conf_error = 1;
    if (attn_registry_open(&opt, &reg) != ATTN_OK) {
        fprintf(stderr, "host.c: %s\n", attn_last_error());
        return 1;
    }
    cc_problem p;
    if (cc_problem_init(&p, 12345) != 0) {
        fprintf(stderr, "host.c: out of memory\n");
        return 1;
    }
    const char *chosen = NULL;
    double err = cc_run(reg, &p, &chosen);
    int ok = err >= 0.0 && err < 1e-4 && chosen && strcmp(chosen, "cpu-ref") == 0;
    printf("host.c: attnreg %s, %zu plugins, %s: max abs error %.3g vs float64: %s\n",
           attnreg_version_string(), attn_registry_plugin_count(reg), chosen ? chosen : "(none)",
           err, ok ? "PASS" : "FAIL");
    cc_problem_free(&p);
    attn_registry_close(reg);
    return ok ? 0 : 1;
}
