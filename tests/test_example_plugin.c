/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_example_plugin.c — examples/third-party-plugin, loaded the way an
 * outside vendor's plugin would be: through nothing but a conf folder that
 * holds its INI (ATTNREG_EXAMPLE_CONF_DIR, set by the example's CMake). The
 * test does not know the plugin's name or arch; it reads them from the INI
 * layer like any host would.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "attnreg.h"
#include "attn_plugin.h"
#include "support/test_support.h"

#ifndef ATTNREG_EXAMPLE_CONF_DIR
#error "ATTNREG_EXAMPLE_CONF_DIR must name the example plugin's conf folder"
#endif

static attn_plugin_info info_at(const attn_registry *reg, size_t i)
{
    attn_plugin_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(attn_registry_plugin(reg, i, &info), ATTN_OK);
    return info;
}

/* The first arch of the INI's comma-separated list. */
static void first_arch(const char *archs, char *out, size_t size)
{
    size_t n;
    while (*archs == ' ' || *archs == '\t')
        archs++;
    n = strcspn(archs, ", \t");
    if (n >= size)
        n = size - 1;
    memcpy(out, archs, n);
    out[n] = '\0';
}

START_TEST(example_listed_and_loaded_through_conf)
{
    attn_registry *reg = ts_open_dir(ATTNREG_EXAMPLE_CONF_DIR);
    size_t i, n = attn_registry_plugin_count(reg);
    ck_assert_msg(n >= 1, "no plugin in %s", ATTNREG_EXAMPLE_CONF_DIR);
    ck_assert_msg(attn_registry_diagnostic_count(reg) == 0, "the example's INI has problems");
    for (i = 0; i < n; i++) {
        attn_plugin_info info = info_at(reg, i);
        attn_plugin_load_info li;
        ck_assert_msg(!ts_is_loaded(info.library), "listing loaded %s", info.library);
        memset(&li, 0, sizeof li);
        li.struct_size = sizeof li;
        ck_assert_msg(attn_registry_load_plugin(reg, i, &li) == ATTN_OK, "%s: %s (%s)", info.name,
                      li.message, attn_reason_name(li.reason));
        ck_assert_uint_eq(li.abi_major, ATTN_PLUGIN_ABI_MAJOR);
        ck_assert_uint_le(li.abi_minor, ATTN_PLUGIN_ABI_MINOR);
        ck_assert_ptr_nonnull(li.version);
        ck_assert_uint_gt(li.num_predicates, 0);
        /* Built from attn_plugin.h alone: it must not need libattnreg. */
        ck_assert_msg(ts_loaded_needs(info.library, "libattnreg") == 0,
                      "%s links libattnreg (or is not mapped)", info.library);
    }
    attn_registry_close(reg);
}
END_TEST

START_TEST(example_answers_through_its_predicates)
{
    /* For its own arch the registry must get past the conf and load layers
     * and ask the plugin's predicates; if they accept the default shape, the
     * backend must also construct. */
    attn_registry *reg = ts_open_dir(ATTNREG_EXAMPLE_CONF_DIR);
    attn_plugin_info info = info_at(reg, 0);
    attn_explanation *ex = NULL;
    attn_verdict_record r;
    attn_selection sel;
    attn_shape shape;
    char arch[ATTN_ARCH_MAX];
    attn_status st;

    first_arch(info.archs, arch, sizeof arch);
    ck_assert_msg(arch[0] != '\0', "%s lists no arch", info.name);
    attn_shape_init(&shape);
    ts_set_arch(&shape, arch);
    st = attn_registry_explain(reg, &shape, &ex);
    ck_assert_ptr_nonnull(ex);
    ck_assert(ts_find_record(ex, 0, info.name, &r));
    ck_assert_msg(r.predicate && strcmp(r.predicate, "conf") != 0 &&
                      strcmp(r.predicate, "load") != 0,
                  "%s was decided by \"%s\" (%s: %s), not by its predicates", info.name,
                  r.predicate, r.reason_name, r.message);
    attn_explanation_free(ex);

    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &shape, &sel), st);
    if (st == ATTN_OK && strcmp(sel.backend_name, info.name) == 0) {
        attn_backend *be = NULL;
        attn_status cst = attn_backend_create(reg, &sel, &be);
        ck_assert_msg(cst == ATTN_OK || cst == ATTN_ERR_NO_DEVICE || cst == ATTN_ERR_NO_KERNELS ||
                          cst == ATTN_ERR_ARCH_NOT_IN_BINARY,
                      "create: %s: %s", attn_status_name(cst), attn_last_error());
        if (cst == ATTN_OK) {
            ck_assert_str_eq(attn_backend_name(be), info.name);
            attn_backend_destroy(be);
        }
    }
    attn_registry_close(reg);
}
END_TEST

static Suite *example_suite(void)
{
    Suite *s = suite_create("example_plugin");
    TCase *tc = tcase_create("vendor");
    ts_add_fixtures(tc, 20);
    tcase_add_test(tc, example_listed_and_loaded_through_conf);
    tcase_add_test(tc, example_answers_through_its_predicates);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ts_run(example_suite());
}
