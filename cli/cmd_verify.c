/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_verify.c — `attnreg verify`: a backend against the float64 oracle on
 * random inputs.
 *
 * The inputs come from the oracle's problem builder (tools/oracle): random
 * query and key lengths within the SHAPE flags, pages in a random order,
 * values that are never zero, and poisoned slots a correct backend never
 * reads. The oracle computes the selection's effective shape (what the
 * backend was built for, after any fallback), so a fallback is verified
 * against its own semantics and reported. PASS/FAIL uses the tolerance of
 * attn_oracle_verify_tolerance() (docs/TOLERANCES.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_dtype_conv.h"
#include "cli.h"
#include "oracle.h"
#include "run_support.h"

void cli_help_verify(FILE *out)
{
    fputs("Usage: attnreg verify SHAPE [--seqs N] [--seed S] [--strided] [OPTIONS]\n"
          "\n"
          "Builds a random batch for SHAPE (N sequences, default 4; query and key\n"
          "lengths random within --max-q-len / --max-kv-len; cache pages in random\n"
          "order; no zero values), runs the selected backend (or --backend) and a\n"
          "float64 reference, and prints the largest absolute error, the relative L2\n"
          "error and PASS or FAIL against the tolerance for the compute and output\n"
          "dtypes (docs/TOLERANCES.md). --strided passes q and out as padded views.\n"
          "\n",
          out);
    cli_help_common(out, CLI_ACCEPT_OF_verify);
    fputs("\n"
          "Exit codes: 0 PASS; 8 FAIL (beyond tolerance); 2 usage error; 3 invalid shape;\n"
          "4 unsupported; 5 forced backend rejects the shape; 6 conf error; 7 backend\n"
          "error (create/forward, no device); 10 internal.\n"
          "\n"
          "Example:\n"
          "  attnreg verify --backend cpu-ref --q-heads 32 --kv-heads 8 --head-dim 128 \\\n"
          "      --kv-dtype fp8_e4m3fn --compute-dtype fp8_e4m3fn --max-q-len 4 \\\n"
          "      --max-kv-len 2048 --sinks --window 128,0 --seqs 8 --seed 7\n",
          out);
}

/* cli_lists.h's CLI_VERIFY_FLAG_MAP. */
enum verify_flag { CLI_VERIFY_FLAG_MAP(CLI_FLAG_ID_) };
static const char *const verify_flags[] = {CLI_VERIFY_FLAG_MAP(CLI_FLAG_NAME_)};

int cli_cmd_verify(int argc, char **argv)
{
    struct cli_common c;
    int32_t seqs = 4;
    unsigned long long seed = 1;
    int strided = 0;

    cli_common_init(&c, CLI_ACCEPT_OF_verify);
    for (int i = 1; i < argc; i++) {
        if (cli_is_help_flag(argv[i])) {
            cli_help_verify(stdout);
            return CLI_EXIT_OK;
        }
        int r = cli_parse_common_flag(&c, argc, argv, &i);
        if (r < 0)
            return CLI_EXIT_USAGE;
        if (r > 0)
            continue;
        const int k =
            cli_flag_index(argv[i], verify_flags, sizeof verify_flags / sizeof verify_flags[0]);
        if (k < 0)
            return cli_usage_error("verify: unknown argument '%s'", argv[i]);
        const char *flag = verify_flags[k], *value;
        char *end;
        switch ((enum verify_flag)k) {
        case CLI_FLAG_SEQS:
            value = cli_flag_value(argc, argv, &i, flag);
            if (!value || cli_parse_int32(flag, value, 1, 1 << 20, &seqs) != 0)
                return CLI_EXIT_USAGE;
            break;
        case CLI_FLAG_SEED:
            if (!(value = cli_flag_value(argc, argv, &i, flag)))
                return CLI_EXIT_USAGE;
            seed = strtoull(value, &end, 0);
            if (!*value || *end)
                return cli_usage_error("%s: '%s' is not a number", flag, value);
            break;
        case CLI_FLAG_STRIDED:
            strided = 1;
            if (cli_switch_flag(argv[i], flag) < 0)
                return CLI_EXIT_USAGE;
            break;
        }
    }
    cli_common_finish(&c);

    attn_registry *reg = NULL;
    int rc = cli_open_registry(&c, &reg);
    if (rc != CLI_EXIT_OK)
        return rc;
    attn_selection sel;
    attn_selection_init(&sel);
    attn_status status = attn_registry_select(reg, &c.shape, &sel);
    if (status != ATTN_OK) {
        rc = cli_report_failure(status, sel.message);
        attn_registry_close(reg);
        return rc;
    }
    const attn_shape *eff = &sel.effective_shape;

    char err[1024];
    attn_oracle_problem problem;
    attn_oracle_problem_options opt;
    memset(&opt, 0, sizeof opt);
    opt.num_seqs = seqs;
    opt.seed = seed;
    opt.strided = strided;
    opt.extra_table_columns = 2;
    opt.extra_blocks = 2;
    int built = attn_oracle_problem_random(&problem, eff, &opt, err, sizeof err);
    if (built != 0) {
        attn_registry_close(reg);
        /* -2: the flags ask for more than verify builds: the user's to fix. */
        if (built == -2)
            return cli_usage_error("verify: %s", err);
        fprintf(stderr, "attnreg: verify: %s\n", err);
        return CLI_EXIT_INTERNAL;
    }
    attn_forward_args host;
    attn_oracle_problem_args(&problem, &host);

    attn_backend *backend = NULL;
    run_memory *mem = NULL;
    float *lse_got = NULL;
    double *want_lse = NULL;
    const size_t lse_rows = (size_t)problem.num_tokens * problem.shape.num_q_heads;
    attn_forward_args dev;
    memset(&dev, 0, sizeof dev);
    status = attn_backend_create(reg, &sel, &backend);
    if (status == ATTN_OK) {
        attn_batch_limits limits = {sizeof limits, problem.num_seqs, problem.num_tokens};
        size_t ws = 0;
        status = attn_backend_workspace_size(backend, &limits, &ws);
        host.workspace_size = ws;
    }
    if (status == ATTN_OK) {
        mem = run_memory_open(eff->arch, err, sizeof err);
        if (!mem) {
            fprintf(stderr, "attnreg: verify: %s\n", err);
            status = ATTN_ERR_NO_DEVICE;
        }
    }
    if (status == ATTN_OK) {
        run_args_sizes sizes = {problem.q_bytes,
                                problem.k_bytes,
                                problem.v_bytes,
                                problem.out_bytes,
                                (size_t)problem.num_seqs * problem.block_table_stride,
                                problem.shape.num_q_heads};
        if (run_args_upload(mem, &host, &sizes, &dev, err, sizeof err) != 0) {
            fprintf(stderr, "attnreg: verify: %s\n", err);
            status = ATTN_ERR_RUNTIME;
        } else {
            /* --lse: the backend writes [num_tokens, q_heads] float32 too. */
            if (eff->return_lse) {
                lse_got = calloc(lse_rows ? lse_rows : 1, sizeof(float));
                dev.lse = run_memory_upload(mem, NULL, (lse_rows ? lse_rows : 1) * sizeof(float),
                                            err, sizeof err);
                if (!lse_got || !dev.lse) {
                    fprintf(stderr, "attnreg: verify: %s\n", lse_got ? err : "out of memory");
                    status = ATTN_ERR_RUNTIME;
                }
            }
            if (status == ATTN_OK)
                status = attn_backend_forward(backend, &dev);
            if (status == ATTN_OK && run_memory_download(mem, problem.out, dev.out,
                                                         problem.out_bytes, err, sizeof err) != 0) {
                fprintf(stderr, "attnreg: verify: %s\n", err);
                status = ATTN_ERR_RUNTIME;
            }
            if (status == ATTN_OK && dev.lse &&
                run_memory_download(mem, lse_got, dev.lse, lse_rows * sizeof(float), err,
                                    sizeof err) != 0) {
                fprintf(stderr, "attnreg: verify: %s\n", err);
                status = ATTN_ERR_RUNTIME;
            }
            run_memory_free(mem, dev.lse);
            dev.lse = NULL;
            run_args_free(mem, &dev);
        }
    }
    if (status != ATTN_OK) {
        rc = cli_report_failure(status, "");
        goto done;
    }

    size_t n = (size_t)(problem.num_tokens ? problem.num_tokens : 1) * problem.shape.num_q_heads *
               problem.shape.head_dim_v;
    double *want = calloc(n, sizeof(double));
    want_lse = lse_got ? calloc(lse_rows ? lse_rows : 1, sizeof(double)) : NULL;
    if (!want || (lse_got && !want_lse) ||
        attn_oracle_forward_lse(&problem.shape, &host, want, want_lse, err, sizeof err) != 0) {
        fprintf(stderr, "attnreg: verify: oracle: %s\n", want ? err : "out of memory");
        free(want);
        rc = CLI_EXIT_INTERNAL;
        goto done;
    }
    /* The LSE against the oracle's, per row: float32 accumulation of the
     * softmax denominator (the tolerance of tests/cpu_ref); both -inf (a row
     * with nothing in its denominator) is a match. */
    double lse_max_abs = 0;
    long long lse_bad = 0;
    for (size_t r = 0; lse_got && r < lse_rows; r++) {
        double w = want_lse[r], g = lse_got[r];
        if (w == -INFINITY || g == -INFINITY) {
            lse_bad += w != g;
            continue;
        }
        double diff = fabs(g - w);
        if (!(diff <= 2e-4 + 1e-5 * fabs(w)))
            lse_bad++;
        if (!(diff <= lse_max_abs))
            lse_max_abs = diff;
    }
    attn_oracle_error e;
    attn_oracle_compare(&problem.shape, &host, want, &e);
    attn_oracle_tolerance tol = attn_oracle_verify_tolerance(&problem.shape);
    int pass = attn_oracle_within(&e, &tol) && lse_bad == 0;
    double scale = e.value_scale > 0 ? e.value_scale : 1.0;
    const int64_t dv = problem.shape.head_dim_v, hq = problem.shape.num_q_heads;
    if (c.json) {
        struct cli_json j;
        cli_json_init(&j, stdout);
        cli_json_begin_object(&j, NULL);
        cli_json_string_member(&j, "result", pass ? "PASS" : "FAIL");
        cli_json_int_member(&j, "exit_code", pass ? CLI_EXIT_OK : CLI_EXIT_MISMATCH);
        cli_json_selection(&j, "selection", &sel);
        cli_json_string_member(&j, "memory", run_memory_name(mem));
        cli_json_int_member(&j, "seed", (long long)seed);
        cli_json_int_member(&j, "num_seqs", problem.num_seqs);
        cli_json_int_member(&j, "num_tokens", problem.num_tokens);
        cli_json_int_member(&j, "max_seqlen_q", problem.max_seqlen_q);
        cli_json_int_member(&j, "max_seqlen_k", problem.max_seqlen_k);
        cli_json_double_member(&j, "max_abs", e.max_abs);
        cli_json_double_member(&j, "rel_l2", e.rel_l2);
        cli_json_double_member(&j, "value_scale", e.value_scale);
        cli_json_double_member(&j, "max_abs_tolerance", tol.max_abs_per_scale * scale);
        cli_json_double_member(&j, "rel_l2_tolerance", tol.rel_l2);
        cli_json_int_member(&j, "non_finite", e.non_finite);
        if (lse_got) {
            cli_json_double_member(&j, "lse_max_abs", lse_max_abs);
            cli_json_int_member(&j, "lse_mismatches", lse_bad);
        }
        if (e.worst_index >= 0) {
            cli_json_begin_object(&j, "worst");
            cli_json_int_member(&j, "token", e.worst_index / dv / hq);
            cli_json_int_member(&j, "head", e.worst_index / dv % hq);
            cli_json_int_member(&j, "dv", e.worst_index % dv);
            cli_json_double_member(&j, "got", e.worst_got);
            cli_json_double_member(&j, "want", e.worst_want);
            cli_json_end_object(&j);
        }
        cli_json_end_object(&j);
    } else {
        cli_print_selection(stdout, &sel);
        printf("batch: %d sequences, %d query tokens, up to %d queries and %d keys per "
               "sequence (seed %llu)\n",
               problem.num_seqs, problem.num_tokens, problem.max_seqlen_q, problem.max_seqlen_k,
               seed);
        printf("max_abs %.3e (tolerance %.3e = %.3g x value scale %.3g)\n", e.max_abs,
               tol.max_abs_per_scale * scale, tol.max_abs_per_scale, scale);
        printf("rel_l2  %.3e (tolerance %.3e)\n", e.rel_l2, tol.rel_l2);
        if (e.non_finite)
            printf("non-finite outputs: %lld\n", (long long)e.non_finite);
        if (lse_got)
            printf("lse     max_abs %.3e, %lld of %zu rows outside 2e-4 + 1e-5 |lse|\n",
                   lse_max_abs, lse_bad, lse_rows);
        if (e.worst_index >= 0)
            printf("worst: token %lld head %lld dv %lld: got %.9g want %.9g\n",
                   (long long)(e.worst_index / dv / hq), (long long)(e.worst_index / dv % hq),
                   (long long)(e.worst_index % dv), e.worst_got, e.worst_want);
        printf("%s\n", pass ? "PASS" : "FAIL");
    }
    free(want);
    rc = pass ? CLI_EXIT_OK : CLI_EXIT_MISMATCH;
done:
    free(lse_got);
    free(want_lse);
    run_memory_close(mem);
    attn_backend_destroy(backend);
    attn_oracle_problem_free(&problem);
    attn_registry_close(reg);
    return rc;
}
