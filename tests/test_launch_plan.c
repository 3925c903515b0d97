/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_launch_plan.c — the contract between the GPU plugins' predicates and
 * their launch plans: for every arch a GPU plugin lists, walk a
 * grid over the shape space (head sizes, GQA ratios, dtypes, page sizes,
 * query lengths 1-4096, windows, softcap, sinks) and check
 *   - accepted => a launch plan exists, every kernel of it fits the arch's
 *     limits (shared memory / LDS, threads), and the plan's limits are the
 *     ones the plugin declares for that arch;
 *   - rejected => a reason code and a sentence; a RESOURCE rejection names
 *     the resource and the arch, and no plan is described.
 * The plugins are the built ones (aiter-generic, aiter-mtp-gfx950), loaded
 * through INIs that list every arch of the limits table; no GPU is needed:
 * predicates and plans are pure functions of the shape.
 */
#define _POSIX_C_SOURCE 200809L

#include <check.h>
#include <stdio.h>
#include <string.h>

#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "attn_launch_plan.h"
#include "attn_plugin.h"
#include "attnreg.h"
#include "support/test_support.h"

#ifndef ATTNREG_TEST_PLUGIN_DIR
#error "ATTNREG_TEST_PLUGIN_DIR must point at the built plugins"
#endif

static const char *const archs[] = {"gfx942", "gfx950", "sm_90"};

/* A registry that offers only `backend`, for the archs of the table. */
static attn_registry *open_forced(const char *backend, const char *library)
{
    const char *dirs[1];
    attn_registry_options opt;
    attn_registry *reg = NULL;
    char lib[1024];
    snprintf(lib, sizeof lib, "%s/%s%s", ATTNREG_TEST_PLUGIN_DIR, library, ATTNREG_MODULE_SUFFIX);
    ts_write_plugin_ini(ts_dir(), "p.ini", backend, lib, 50, "gfx942, gfx950, sm_90", NULL);
    dirs[0] = ts_dir();
    ts_options(&opt, dirs, 1);
    opt.log_level = ATTN_LOG_ERROR; /* tens of thousands of decisions */
    opt.forced_backend = backend;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    return reg;
}

/* The limits the plugin declares for `arch` (through the load info). */
static const attn_arch_limits *declared_limits(attn_registry *reg, const char *arch)
{
    attn_plugin_load_info li;
    memset(&li, 0, sizeof li);
    li.struct_size = sizeof li;
    ck_assert_int_eq(attn_registry_load_plugin(reg, 0, &li), ATTN_OK);
    for (uint32_t i = 0; i < li.num_arch_limits; i++)
        if (strcmp(li.arch_limits[i].arch, arch) == 0)
            return &li.arch_limits[i];
    ck_abort_msg("the plugin declares no limits for %s", arch);
    return NULL;
}

/* A GQA shape with the defaults otherwise (bf16, page 16, causal). */
static void gqa_shape(attn_shape *s, const char *arch, int32_t hq, int32_t hkv, int32_t d,
                      int32_t q_len, int32_t kv_len)
{
    attn_shape_init(s);
    ts_set_arch(s, arch);
    s->num_q_heads = hq;
    s->num_kv_heads = hkv;
    s->head_dim = d;
    s->max_q_len = q_len;
    s->max_kv_len = kv_len;
}

typedef struct tally {
    long accepted, rejected, resource;
} tally;

/* One shape through the contract. */
static void check_shape(attn_registry *reg, const attn_shape *s, tally *t)
{
    attn_selection sel;
    attn_launch_plan plan;
    char text[512];
    attn_shape_format(s, text, sizeof text);
    attn_selection_init(&sel);
    attn_status st = attn_registry_select(reg, s, &sel);
    memset(&plan, 0, sizeof plan);
    plan.struct_size = sizeof plan;
    if (st == ATTN_ERR_INVALID_SHAPE)
        return;
    if (st == ATTN_OK) {
        const attn_arch_limits *lim = declared_limits(reg, s->arch);
        t->accepted++;
        ck_assert_msg(sel.graph_capturable == 1, "GPU backend not capturable: %s", text);
        ck_assert_msg(attn_registry_describe_plan(reg, &sel, &plan) == ATTN_OK,
                      "accepted without a plan: %s", text);
        ck_assert_msg(plan.num_kernels >= 1 && plan.num_kernels <= ATTN_PLAN_MAX_KERNELS, "%s",
                      text);
        ck_assert_str_eq(plan.arch, s->arch);
        ck_assert_int_eq(plan.shared_limit, lim->shared_bytes_per_block);
        ck_assert_int_eq(plan.wave_size, lim->wave_size);
        for (uint32_t k = 0; k < plan.num_kernels; k++) {
            const attn_kernel_plan *kp = &plan.kernels[k];
            ck_assert_msg(kp->kernel[0] && kp->role[0], "unnamed kernel: %s", text);
            ck_assert_msg(kp->shared_bytes > 0 && kp->shared_bytes <= lim->shared_bytes_per_block,
                          "%s needs %d bytes, %s has %d: %s", kp->kernel, (int)kp->shared_bytes,
                          s->arch, (int)lim->shared_bytes_per_block, text);
            ck_assert_msg(kp->threads > 0 && kp->threads <= lim->max_threads_per_block &&
                              kp->threads % 32 == 0,
                          "%s: %d threads: %s", kp->kernel, (int)kp->threads, text);
            ck_assert_msg(kp->rows > 0 && kp->keys > 0, "%s: %s", kp->kernel, text);
        }
        /* Batches at max_q_len run kernels[0]: a multi-token kernel when
         * max_q_len > 1 (aiter-generic), the decode kernel otherwise. */
        if (strcmp(sel.backend_name, "aiter-generic") == 0)
            ck_assert_str_eq(plan.kernels[0].role,
                             s->max_q_len > 1 ? "multi-token" : "one-token sequences");
        return;
    }
    ck_assert_msg(st == ATTN_ERR_BACKEND_REJECTED, "%s: %s", attn_status_name(st), text);
    t->rejected++;
    ck_assert_msg(sel.message && sel.message[0], "rejected without a sentence: %s", text);
    /* The first rejection's record carries the reason code. */
    attn_explanation *ex = NULL;
    ck_assert_int_eq(attn_registry_explain(reg, s, &ex), ATTN_ERR_BACKEND_REJECTED);
    int found = 0;
    for (size_t i = 0; i < attn_explanation_count(ex); i++) {
        attn_verdict_record r;
        memset(&r, 0, sizeof r);
        r.struct_size = sizeof r;
        ck_assert_int_eq(attn_explanation_record(ex, i, &r), ATTN_OK);
        if (r.pass != 0 || r.accepted)
            continue;
        found = 1;
        ck_assert_msg(r.reason > ATTN_REASON_NONE && r.reason < ATTN_REASON_COUNT, "%s", text);
        ck_assert_msg(r.message && r.message[0], "%s", text);
        if (r.reason == ATTN_REASON_RESOURCE) {
            t->resource++;
            ck_assert_msg(strstr(r.message, "LDS") || strstr(r.message, "shared memory"),
                          "a resource rejection must name the resource: %s", r.message);
            ck_assert_msg(strstr(r.message, s->arch), "and the arch: %s", r.message);
            ck_assert_str_eq(r.predicate, "launch_plan");
        }
    }
    ck_assert_msg(found, "no rejection record: %s", text);
    attn_explanation_free(ex);
}

static int32_t arch_fp8(const char *arch)
{
    return strcmp(arch, "gfx942") == 0 ? ATTN_DTYPE_FP8_E4M3FNUZ : ATTN_DTYPE_FP8_E4M3FN;
}

START_TEST(gpu_plugins_declare_strides_lse_append)
{
    /* The GPU kernels read K/V caches by stride and write the log-sum-exp
     * (0.4): both plugins declare it, and both carry the KV append entry.
     * What a kernel cannot take (K and V strides that differ, rows not
     * 16-byte aligned) is refused by gpu_attn_forward with a sentence; that
     * needs a device and is tested on the H200 (tests/gpu). Here, without a
     * backend, every entry answers with an error, never a crash. */
    static const char *const libs[] = {"libattn_aiter_generic", "libattn_aiter_mtp_gfx950"};
    for (size_t i = 0; i < 2; i++) {
        char lib[1024], err[512] = "";
        snprintf(lib, sizeof lib, "%s/%s%s", ATTNREG_TEST_PLUGIN_DIR, libs[i],
                 ATTNREG_MODULE_SUFFIX);
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        ck_assert_msg(h != NULL, "%s: %s", lib, dlerror());
        attn_plugin_entry_fn entry;
        *(void **)&entry = dlsym(h, ATTN_PLUGIN_ENTRY_SYMBOL);
        ck_assert_ptr_nonnull(entry);
        const attn_plugin_descriptor *d = entry(ATTN_PLUGIN_ABI_MAJOR, ATTN_PLUGIN_ABI_MINOR);
        ck_assert_ptr_nonnull(d);
        ck_assert_uint_eq(d->forward_features & ATTN_FORWARD_KV_STRIDES, ATTN_FORWARD_KV_STRIDES);
        ck_assert_uint_eq(d->forward_features & ATTN_FORWARD_LSE, ATTN_FORWARD_LSE);
        ck_assert_ptr_nonnull(d->append_kv);
        attn_forward_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        ck_assert_int_ne(d->forward(NULL, &a, err, sizeof err), ATTN_OK);
        attn_append_args ap;
        memset(&ap, 0, sizeof ap);
        ap.struct_size = sizeof ap;
        err[0] = 0;
        ck_assert_int_ne(d->append_kv(NULL, &ap, err, sizeof err), ATTN_OK);
        ck_assert_msg(err[0] != 0, "append_kv without a backend gave no sentence");
        dlclose(h);
    }
}
END_TEST

START_TEST(generic_accepts_exactly_what_fits)
{
    static const int32_t dims[] = {64, 80, 96, 128, 192, 256, 72};
    static const int32_t ratios[] = {1, 4, 8, 16};
    static const int32_t pages[] = {1, 16, 48, 128, 512, 1024, 8, 1040};
    static const int32_t q_lens[] = {1, 2, 17, 4096};
    attn_registry *reg = open_forced("aiter-generic", "libattn_aiter_generic");
    tally t = {0, 0, 0};
    long n = 0;
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++)
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
            for (size_t ri = 0; ri < sizeof ratios / sizeof ratios[0]; ri++)
                for (int q16 = 0; q16 < 2; q16++)
                    for (int kvk = 0; kvk < 3; kvk++)
                        for (size_t pi = 0; pi < sizeof pages / sizeof pages[0]; pi++)
                            for (size_t qi = 0; qi < sizeof q_lens / sizeof q_lens[0]; qi++) {
                                attn_shape s;
                                attn_shape_init(&s);
                                ts_set_arch(&s, archs[a]);
                                s.num_kv_heads = 2;
                                s.num_q_heads = 2 * ratios[ri];
                                s.head_dim = dims[di];
                                s.q_dtype = s.out_dtype = s.compute_dtype =
                                    q16 ? ATTN_DTYPE_F16 : ATTN_DTYPE_BF16;
                                s.kv_dtype = kvk == 0   ? s.q_dtype
                                             : kvk == 1 ? arch_fp8(archs[a])
                                                        : ATTN_DTYPE_FP8_E4M3FNUZ;
                                /* FP8 compute on a quarter of the fp8 MHA shapes */
                                if (kvk == 1 && ratios[ri] == 1 && (pi + qi) % 4 == 0)
                                    s.compute_dtype = s.kv_dtype;
                                s.page_size = pages[pi];
                                s.max_q_len = q_lens[qi];
                                s.max_kv_len = 8192;
                                /* features: every fourth shape each */
                                s.window_left = (n % 4 == 1) ? 1023 : -1;
                                s.softcap = (n % 4 == 2) ? 30.0f : 0.0f;
                                s.has_sinks = (n % 4 == 3);
                                n++;
                                check_shape(reg, &s, &t);
                            }
    /* The grid covers both sides of the contract; every shape the kernels
     * take has a program that fits (gfx942's D 192/256 on raw K/V), so no
     * rejection is for a resource. */
    ck_assert_msg(t.accepted > 1000 && t.rejected > 1000 && t.resource == 0,
                  "accepted %ld, rejected %ld, resource %ld", t.accepted, t.rejected, t.resource);
    attn_registry_close(reg);
}
END_TEST

START_TEST(mtp_accepts_exactly_what_fits)
{
    static const int32_t q_lens[] = {1, 2, 3, 4, 5};
    static const int32_t kv_lens[] = {256, 513, 4096, 131072};
    attn_registry *reg = open_forced("aiter-mtp-gfx950", "libattn_aiter_mtp_gfx950");
    tally t = {0, 0, 0};
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++)
        for (size_t qi = 0; qi < sizeof q_lens / sizeof q_lens[0]; qi++)
            for (size_t ki = 0; ki < sizeof kv_lens / sizeof kv_lens[0]; ki++)
                for (int page16 = 0; page16 < 2; page16++) {
                    attn_shape s;
                    ts_mtp_shape(&s);
                    ts_set_arch(&s, archs[a]);
                    s.max_q_len = q_lens[qi];
                    s.max_kv_len = kv_lens[ki];
                    s.page_size = page16 ? 16 : 32;
                    check_shape(reg, &s, &t);
                }
    ck_assert_msg(t.accepted > 0 && t.rejected > 0, "accepted %ld, rejected %ld", t.accepted,
                  t.rejected);
    attn_registry_close(reg);
}
END_TEST

/* The MTP shape on gfx950: the 64-row portable programs fit 160 KB with one
 * stage (two would need 162 KB), and the plan says so. */
START_TEST(mtp_on_gfx950_plans_one_stage)
{
    attn_registry *reg = open_forced("aiter-mtp-gfx950", "libattn_aiter_mtp_gfx950");
    attn_shape s;
    attn_selection sel;
    attn_launch_plan plan;
    ts_mtp_shape(&s);
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &s, &sel), ATTN_OK);
    memset(&plan, 0, sizeof plan);
    plan.struct_size = sizeof plan;
    ck_assert_int_eq(attn_registry_describe_plan(reg, &sel, &plan), ATTN_OK);
    ck_assert_uint_eq(plan.num_kernels, 1);
    ck_assert_str_eq(plan.kernels[0].kernel, "generic");
    ck_assert_int_eq(plan.kernels[0].rows, 64);
    ck_assert_int_eq(plan.kernels[0].stages, 1);
    ck_assert_int_le(plan.kernels[0].shared_bytes, 160 * 1024);
    ck_assert_int_eq(plan.shared_limit, 160 * 1024);
    attn_registry_close(reg);
}
END_TEST

/* gfx942's 64 KB of LDS: the generic kernel's float tiles fit up to D 128
 * (one stage), the raw-K/V variant takes D 192 and 256 there; gfx950 keeps
 * the float tiles. */
START_TEST(gfx942_plans_smaller_programs)
{
    attn_registry *reg = open_forced("aiter-generic", "libattn_aiter_generic");
    attn_shape s;
    attn_selection sel;
    attn_launch_plan plan;
    static const struct {
        const char *arch;
        int32_t d, kv_dtype;
        const char *kernel;
        int32_t stages;
    } want[] = {
        {"gfx942", 128, ATTN_DTYPE_BF16, "generic", 1},
        {"gfx942", 192, ATTN_DTYPE_BF16, "generic-raw", 2},
        {"gfx942", 256, ATTN_DTYPE_BF16, "generic-raw", 1},
        {"gfx942", 256, ATTN_DTYPE_FP8_E4M3FNUZ, "generic-raw", 2},
        {"gfx950", 256, ATTN_DTYPE_BF16, "generic", 2},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        gqa_shape(&s, want[k].arch, 32, 8, want[k].d, 4096, 8192);
        s.kv_dtype = want[k].kv_dtype;
        attn_selection_init(&sel);
        ck_assert_msg(attn_registry_select(reg, &s, &sel) == ATTN_OK, "%s D %d: %s", want[k].arch,
                      (int)want[k].d, sel.message);
        memset(&plan, 0, sizeof plan);
        plan.struct_size = sizeof plan;
        ck_assert_int_eq(attn_registry_describe_plan(reg, &sel, &plan), ATTN_OK);
        ck_assert_str_eq(plan.kernels[0].kernel, want[k].kernel);
        ck_assert_int_eq(plan.kernels[0].stages, want[k].stages);
        ck_assert_int_le(plan.kernels[0].shared_bytes, plan.shared_limit);
    }
    attn_registry_close(reg);
}
END_TEST

/* When no program fits, the plan says which resource (the table on an arch
 * with 24 KB of LDS, which nothing ships for). */
START_TEST(no_fit_names_the_resource)
{
    attn_arch_limits tiny = {sizeof tiny, "gfx-tiny", 24 * 1024, 64, 1024, 512};
    attn_launch_plan plan;
    attn_shape s;
    char why[ATTN_VERDICT_MESSAGE_MAX] = "";
    gqa_shape(&s, "gfx-tiny", 8, 2, 256, 512, 4096);
    plan.struct_size = sizeof plan;
    ck_assert_int_eq(attn_launch_plan_generic(&s, &tiny, attn_launch_plan_build_features(), &plan,
                                              why, sizeof why),
                     0);
    ck_assert_msg(strstr(why, "the generic kernel needs 49 KB of LDS per program") &&
                      strstr(why, "raw K/V") && strstr(why, "gfx-tiny has 24 KB"),
                  "%s", why);
    /* decode-only capacity: the decode kernel's 16 KB fit */
    s.max_q_len = 1;
    ck_assert_int_eq(attn_launch_plan_generic(&s, &tiny, attn_launch_plan_build_features(), &plan,
                                              why, sizeof why),
                     1);
    ck_assert_str_eq(plan.kernels[0].kernel, "decode");
    ck_assert_int_eq(
        attn_launch_plan_mtp(&s, &tiny, attn_launch_plan_build_features(), &plan, why, sizeof why),
        0);
    ck_assert_msg(strstr(why, "KB of LDS per program"), "%s", why);
}
END_TEST

/* Page sizes engines use: 1 and every multiple of 16 up to 1024. */
START_TEST(generic_page_sizes)
{
    attn_registry *reg = open_forced("aiter-generic", "libattn_aiter_generic");
    for (int32_t page = 1; page <= 2048; page++) {
        attn_shape s;
        attn_selection sel;
        gqa_shape(&s, "sm_90", 8, 2, 128, 128, 4096);
        s.page_size = page;
        attn_selection_init(&sel);
        attn_status st = attn_registry_select(reg, &s, &sel);
        const int want = page == 1 || (page % 16 == 0 && page <= 1024);
        ck_assert_msg((st == ATTN_OK) == want, "page %d: %s %s", (int)page, attn_status_name(st),
                      sel.message);
        if (!want)
            ck_assert_msg(strstr(sel.message, "page_size"), "%s", sel.message);
    }
    attn_registry_close(reg);
}
END_TEST

/* The matrix-unit decode kernel's shared-memory rows (version 17): for every
 * head size it takes, the 8 rows one ldmatrix phase (or one fragment read)
 * touches start their chunk in 8 distinct 16-byte bank groups, swizzled rows
 * are whole 128-byte lines (so a copy's 128-byte source line lands in one
 * shared-memory line), and 8 programs of the bf16 D 128 kernel still fit an
 * sm_90 multiprocessor. */
static void check_rows_conflict_free(int d, int row, int swizzled, int chunks)
{
    for (int c = 0; c < chunks; c++) {
        int seen = 0;
        for (int r = 0; r < 8; r++) {
            const int off =
                swizzled ? r * row + (((c & ~7) | ((c & 7) ^ r)) << 4) : r * row + c * 16;
            const int group = (off / 16) % 8;
            ck_assert_msg(!(seen & (1 << group)), "D %d chunk %d: rows share bank group %d", d, c,
                          group);
            seen |= 1 << group;
        }
    }
}
START_TEST(decode_mma_rows)
{
    static const int dims[] = {64, 80, 96, 128, 192, 256};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        const int d = dims[i];
        const int row = attn_launch_plan_decode_mma_row(d);
        const int swz = row == d * 2;
        ck_assert_msg(swz == (d * 2 % 128 == 0), "D %d: 16-bit row %d", d, row);
        ck_assert_msg(swz || row == d * 2 + 16, "D %d: padded row %d", d, row);
        check_rows_conflict_free(d, row, swz, d / 8);
        if (attn_launch_plan_decode_mma_fp8_direct(d)) {
            const int raw = attn_launch_plan_decode_mma_raw_row(d);
            const int rswz = raw == d;
            ck_assert_msg(rswz == (d % 128 == 0) && (rswz || raw == d + 16), "D %d: raw row %d", d,
                          raw);
            check_rows_conflict_free(d, raw, rswz, d / 16);
            /* Q's f16 rows pass through the last raw stage (D <= 128) */
            if (d <= ATTN_DMMA_QREG_MAX_D)
                ck_assert_int_ge(2 * ATTN_DMMA_TILE * raw, ATTN_DMMA_TILE * row);
        }
    }
    /* 228 KB a multiprocessor, 1 KB reserved per block */
    ck_assert_int_le(8 * (attn_launch_plan_decode_mma_bytes(128, 0) + 1024), 228 * 1024);
    ck_assert_int_le(8 * (attn_launch_plan_decode_mma_bytes(128, 1) + 1024), 228 * 1024);
    /* two blocks of 4 warps at D 128 (8 programs a multiprocessor, as before) */
    for (int kv8 = 0; kv8 <= 1; kv8++)
        ck_assert_int_le(
            2 * (ATTN_DMMA_MAX_WARPS * attn_launch_plan_decode_mma_slice(128, kv8) + 1024),
            228 * 1024);
}
END_TEST

/* The MTP warpgroup kernel's pair form: one 256-thread program a CU (227 KB
 * a block, 228 KB a CU less 1 KB reserved), Q's 64 rows shared, two
 * warpgroups of ATTN_MTP_PAIR_STAGES raw stages and an f16 K/V tile each,
 * warpgroup 1's merge state (128 accumulators and 4 row values a thread)
 * inside its own part, and at least the one-warpgroup program's stages. */
START_TEST(mtp_pair_layout)
{
    const int wg = attn_launch_plan_mtp_pair_wg_bytes(), all = attn_launch_plan_mtp_pair_bytes();
    ck_assert_int_le(all, 227 * 1024);
    ck_assert_int_le(all + 1024, 228 * 1024);
    ck_assert_int_le((32 * 4 + 4) * 128 * 4, wg);
    ck_assert_int_ge(ATTN_MTP_PAIR_STAGES, ATTN_MTP_STAGES);
    ck_assert_int_eq(all, 1024 + 64 * ATTN_MTP_D * 2 + 2 * wg + 64 * 4);
    /* two one-warpgroup programs would not fit the stages the pair has */
    ck_assert_int_gt(2 * (attn_launch_plan_mtp_bytes(4, 1) + 1024) -
                         2 * (ATTN_MTP_STAGES - ATTN_MTP_PAIR_STAGES) * 2 * ATTN_MTP_TILE *
                             ATTN_MTP_D,
                     228 * 1024);
}
END_TEST

/* Blocks of W one-warp programs: W divides the segments, the W slices fit
 * the block's shared memory, each slice 128-byte aligned and holding its
 * program and, at the end, its merge state (D / 8 x 4 accumulators and 4 row
 * values a lane). */
START_TEST(decode_mma_warps)
{
    static const int dims[] = {64, 80, 96, 128, 192, 256};
    const int lim = 227 * 1024;
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        for (int kv8 = 0; kv8 <= 1; kv8++) {
            const int d = dims[i], slice = attn_launch_plan_decode_mma_slice(d, kv8);
            ck_assert_int_eq(slice % 128, 0);
            ck_assert_int_ge(slice, attn_launch_plan_decode_mma_bytes(d, kv8));
            ck_assert_int_lt(slice - attn_launch_plan_decode_mma_bytes(d, kv8), 128);
            ck_assert_int_le((d / 8 * 4 + 4) * 32 * 4, slice);
            for (int nseg = 1; nseg <= 64; nseg++) {
                const int w = attn_launch_plan_decode_mma_warps(d, kv8, nseg, lim);
                ck_assert_msg(w >= 1 && w <= ATTN_DMMA_MAX_WARPS && nseg % w == 0,
                              "D %d kv8 %d nseg %d: %d warps", d, kv8, nseg, w);
                ck_assert_int_le(w * slice, lim);
                /* the largest such: 4 wherever 4 divides and fits */
                if (nseg % 4 == 0 && 4 * slice <= lim)
                    ck_assert_int_eq(w, 4);
            }
            /* a block too small for two slices: one warp */
            ck_assert_int_eq(attn_launch_plan_decode_mma_warps(d, kv8, 8, slice), 1);
        }
}
END_TEST

/* cpu-ref promises no graph capture; the plan query says it has none. */
START_TEST(cpu_ref_is_not_capturable)
{
    const char *dirs[1] = {ATTNREG_TEST_CONF_DIR};
    attn_registry_options opt;
    attn_registry *reg = NULL;
    attn_shape s;
    attn_selection sel;
    attn_launch_plan plan;
    ts_options(&opt, dirs, 1);
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    attn_shape_init(&s);
    attn_selection_init(&sel);
    ck_assert_int_eq(attn_registry_select(reg, &s, &sel), ATTN_OK);
    ck_assert_str_eq(sel.backend_name, "cpu-ref");
    ck_assert_int_eq(sel.graph_capturable, 0);
    memset(&plan, 0, sizeof plan);
    plan.struct_size = sizeof plan;
    ck_assert_int_eq(attn_registry_describe_plan(reg, &sel, &plan), ATTN_ERR_NOT_FOUND);
    plan.struct_size = 4;
    ck_assert_int_eq(attn_registry_describe_plan(reg, &sel, &plan), ATTN_ERR_INVALID_ARGUMENT);
    attn_registry_close(reg);
}
END_TEST

/* A replay of real model shapes as an engine asks for them
 * (every config in tests/hf_configs, tensor-parallel 1-8, gfx942 and
 * gfx950, bf16 and the arch's fp8 cache, with and without 3 speculative
 * tokens: the prefill, decode and verify phase of every layer group)
 * through the shipped conf. Every aiter pick has a plan within its arch's
 * limits; every shape refused for a resource names it. */
START_TEST(replay_model_shapes)
{
    static const int32_t tps[] = {1, 2, 4, 8};
    static const char *const gfx[] = {"gfx942", "gfx950"};
    const char *dirs[1] = {ATTNREG_TEST_CONF_DIR};
    attn_registry_options opt;
    attn_registry *reg = NULL;
    ts_options(&opt, dirs, 1);
    opt.log_level = ATTN_LOG_OFF;
    ck_assert_int_eq(attn_registry_open(&opt, &reg), ATTN_OK);
    DIR *dir = opendir(ATTNREG_HF_CONFIG_DIR);
    ck_assert_ptr_nonnull(dir);
    long shapes = 0, planned = 0, resource = 0, configs = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        char path[1024];
        attn_hf_config *cfg = NULL;
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", ATTNREG_HF_CONFIG_DIR, de->d_name);
        if (attn_hf_config_read(path, &cfg) != ATTN_OK)
            continue; /* the broken configs test_hf_config reads */
        configs++;
        for (size_t a = 0; a < 2; a++)
            for (size_t ti = 0; ti < sizeof tps / sizeof tps[0]; ti++)
                for (int fp8 = 0; fp8 < 2; fp8++)
                    for (int spec = 0; spec <= 3; spec += 3) {
                        attn_model m;
                        attn_plan *plan = NULL;
                        attn_model_init(&m, sizeof m);
                        /* An invalid model is the plan's to report. */
                        attn_hf_config_apply(cfg, &m);
                        snprintf(m.arch, sizeof m.arch, "%s", gfx[a]);
                        m.tp_size = tps[ti];
                        if (fp8)
                            m.kv_dtype = a == 0 ? ATTN_DTYPE_FP8_E4M3FNUZ : ATTN_DTYPE_FP8_E4M3FN;
                        m.max_model_len = 32768;
                        m.max_prefill_tokens = 8192;
                        m.spec_tokens = spec;
                        attn_status st = attn_registry_plan(reg, &m, &plan);
                        if (st == ATTN_ERR_INVALID_SHAPE || !plan) {
                            attn_plan_free(plan);
                            continue; /* heads that tp does not divide */
                        }
                        attn_plan_summary sum;
                        memset(&sum, 0, sizeof sum);
                        sum.struct_size = sizeof sum;
                        ck_assert_int_eq(attn_plan_summarize(plan, &sum), ATTN_OK);
                        for (size_t e = 0; e < sum.num_entries; e++) {
                            attn_plan_entry ent;
                            memset(&ent, 0, sizeof ent);
                            ent.struct_size = sizeof ent;
                            ck_assert_int_eq(attn_plan_entry_get(plan, e, &ent), ATTN_OK);
                            if (!ent.shape)
                                continue;
                            shapes++;
                            if (ent.status != ATTN_OK) {
                                if (strstr(ent.message, "RESOURCE")) {
                                    resource++;
                                    ck_assert_msg(strstr(ent.message, "KB of LDS per program") &&
                                                      strstr(ent.message, gfx[a]),
                                                  "%s: %s", de->d_name, ent.message);
                                }
                                continue;
                            }
                            if (strncmp(ent.selection->backend_name, "aiter-", 6) != 0)
                                continue;
                            attn_launch_plan lp;
                            memset(&lp, 0, sizeof lp);
                            lp.struct_size = sizeof lp;
                            ck_assert_msg(attn_registry_describe_plan(reg, ent.selection, &lp) ==
                                              ATTN_OK,
                                          "%s: %s picked without a plan", de->d_name,
                                          ent.selection->backend_name);
                            for (uint32_t k = 0; k < lp.num_kernels; k++)
                                ck_assert_int_le(lp.kernels[k].shared_bytes, lp.shared_limit);
                            planned++;
                        }
                        attn_plan_free(plan);
                    }
        attn_hf_config_free(cfg);
    }
    closedir(dir);
    fprintf(stderr,
            "replay: %ld model configs, %ld shapes; %ld aiter picks, each with a plan within its "
            "arch's limits; %ld refused for a resource, each naming it\n",
            configs, shapes, planned, resource);
    ck_assert_int_gt(configs, 5);
    ck_assert_int_gt(planned, 100);
    attn_registry_close(reg);
}
END_TEST

static Suite *launch_plan_suite(void)
{
    Suite *s = suite_create("launch_plan");
    TCase *tc = tcase_create("contract");
    ts_add_fixtures(tc, 300);
    tcase_add_test(tc, generic_accepts_exactly_what_fits);
    tcase_add_test(tc, gpu_plugins_declare_strides_lse_append);
    tcase_add_test(tc, mtp_accepts_exactly_what_fits);
    tcase_add_test(tc, mtp_on_gfx950_plans_one_stage);
    tcase_add_test(tc, gfx942_plans_smaller_programs);
    tcase_add_test(tc, no_fit_names_the_resource);
    tcase_add_test(tc, generic_page_sizes);
    tcase_add_test(tc, decode_mma_rows);
    tcase_add_test(tc, decode_mma_warps);
    tcase_add_test(tc, mtp_pair_layout);
    tcase_add_test(tc, cpu_ref_is_not_capturable);
    tcase_add_test(tc, replay_model_shapes);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return ts_run(launch_plan_suite());
}
