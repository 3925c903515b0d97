/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd_run.c — `attnreg run`: the selected backend on tensors from .npy
 * files, the output written as .npy.
 *
 * Every array is checked against the SHAPE flags and against the others
 * before anything runs, and a mismatch names the array and the dimension.
 * --max-q-len / --max-kv-len, when not given, are taken from the data. GPU
 * backends get device copies (see run_support.h).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn_batch_check.h"
#include "cli.h"
#include "npy.h"
#include "run_support.h"

void cli_help_run(FILE *out)
{
    fputs("Usage: attnreg run SHAPE --q Q.npy --k-cache K.npy --v-cache V.npy\n"
          "                  --block-table BT.npy --cu-seqlens-q CU.npy --seqused-k SK.npy\n"
          "                  --out OUT.npy [--sinks-file S.npy] [--scale S]\n"
          "                  [--q-descale X] [--k-descale X] [--v-descale X]\n"
          "                  [--new-k NK.npy --new-v NV.npy --slot-mapping SM.npy]\n"
          "                  [--lse-out LSE.npy] [OPTIONS]\n"
          "\n"
          "Selects a backend for SHAPE (or uses --backend), runs it on the arrays and\n"
          "writes the output. Arrays and their .npy dtypes:\n"
          "  --q             [num_tokens, q_heads, head_dim]            q dtype\n"
          "  --k-cache       [num_blocks, page_size, kv_heads, head_dim]   kv dtype\n"
          "  --v-cache       [num_blocks, page_size, kv_heads, head_dim_v] kv dtype\n"
          "  --block-table   [num_seqs, max_blocks_per_seq]             <i4\n"
          "  --cu-seqlens-q  [num_seqs + 1]                             <i4\n"
          "  --seqused-k     [num_seqs]                                 <i4\n"
          "  --sinks-file    [q_heads] (implies --sinks)                <f4\n"
          "  --out           [num_tokens, q_heads, head_dim_v], written  out dtype\n"
          "  --new-k         [new_tokens, kv_heads, head_dim]           q dtype\n"
          "  --new-v         [new_tokens, kv_heads, head_dim_v]         q dtype\n"
          "  --slot-mapping  [new_tokens] (block * page_size + offset)  <i8\n"
          "  --lse-out       [num_tokens, q_heads] log-sum-exp, written  <f4 (implies --lse)\n"
          "The new tokens' K/V are written into the caches by the backend's KV append\n"
          "(FP8 caches: value / --k-descale, --v-descale) before the forward reads them;\n"
          "a negative slot skips its token.\n"
          "f32 travels as <f4, f16 as <f2, bf16 as raw <u2 bits, fp8 as raw |u1 codes.\n"
          "--scale defaults to 1/sqrt(head_dim); descales default to 1 (they apply to fp8\n"
          "caches and fp8 compute). --max-q-len and --max-kv-len default to the data's.\n"
          "\n",
          out);
    cli_help_common(out, CLI_ACCEPT_OF_run);
    fputs("\n"
          "Exit codes: 0 written; 2 usage error or inconsistent arrays; 3 invalid shape;\n"
          "4 unsupported; 5 forced backend rejects the shape; 6 conf error; 7 backend\n"
          "error (create/forward); 9 a file could not be read or written; 10 internal.\n"
          "\n"
          "Example (see plugins/cpu-ref/README.md for making the files with NumPy):\n"
          "  attnreg run --q-heads 8 --kv-heads 2 --head-dim 64 --q-dtype f32 \\\n"
          "      --q q.npy --k-cache k.npy --v-cache v.npy --block-table bt.npy \\\n"
          "      --cu-seqlens-q cu.npy --seqused-k sk.npy --out out.npy\n",
          out);
}

/* cli_lists.h's CLI_RUN_FLAG_MAP. */
enum run_flag { CLI_RUN_FLAG_MAP(CLI_FLAG_ID_) };
static const char *const run_flags[] = {CLI_RUN_FLAG_MAP(CLI_FLAG_NAME_)};

typedef struct run_files {
    const char *q, *k, *v, *block_table, *cu_seqlens_q, *seqused_k, *sinks, *out;
    const char *new_k, *new_v, *slot_mapping; /* KV append before the forward */
    const char *lse_out;                      /* the log-sum-exp, written (implies --lse) */
} run_files;

static int parse_float(const char *flag, const char *value, float *out)
{
    char *end;
    double v = strtod(value, &end);
    if (!*value || *end || !isfinite(v)) {
        cli_usage_error("%s: '%s' is not a finite number", flag, value);
        return -1;
    }
    *out = (float)v;
    return 0;
}

/* Reports a data inconsistency (a usage error: the files do not fit). */
static int mismatch(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int mismatch(const char *fmt, ...)
{
    va_list ap;
    fputs("attnreg: run: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_USAGE;
}

/* --new-k/--new-v/--slot-mapping: uploads the rows and slots into the
 * backend's memory and appends them to the (uploaded) caches of `dev`, with
 * the descales as the FP8 scales (stored = value / k_descale, what the
 * forward reads back). */
static attn_status run_append(run_memory *mem, attn_backend *backend, const npy_array *nk,
                              const npy_array *nv, const npy_array *slots,
                              const attn_forward_args *dev, const attn_shape *eff, float k_scale,
                              float v_scale, char *err, size_t err_size)
{
    const size_t elem = run_dtype_size(eff->q_dtype);
    void *k = run_memory_upload(mem, nk->data, (size_t)nk->count * elem, err, err_size);
    void *v = k ? run_memory_upload(mem, nv->data, (size_t)nv->count * elem, err, err_size) : NULL;
    void *slot = v ? run_memory_upload(mem, slots->data, (size_t)slots->count * sizeof(int64_t),
                                       err, err_size)
                   : NULL;
    attn_status st = ATTN_ERR_RUNTIME;
    if (slot) {
        attn_append_args a;
        memset(&a, 0, sizeof a);
        a.struct_size = sizeof a;
        a.num_tokens = (int32_t)nk->shape[0];
        a.k = k;
        a.v = v;
        a.slot_mapping = slot;
        a.k_cache = (void *)dev->k_cache;
        a.v_cache = (void *)dev->v_cache;
        a.num_blocks = dev->num_blocks;
        a.k_scale = k_scale;
        a.v_scale = v_scale;
        st = attn_backend_append_kv(backend, &a); /* its message: attn_last_error() */
    } else {
        fprintf(stderr, "attnreg: run: %s\n", err);
    }
    run_memory_free(mem, k);
    run_memory_free(mem, v);
    run_memory_free(mem, slot);
    return st;
}

int cli_cmd_run(int argc, char **argv)
{
    struct cli_common c;
    run_files f = {0};
    float scale = 0, q_descale = 1, k_descale = 1, v_descale = 1;
    int have_scale = 0;

    cli_common_init(&c, CLI_ACCEPT_OF_run);
    for (int i = 1; i < argc; i++) {
        if (cli_is_help_flag(argv[i])) {
            cli_help_run(stdout);
            return CLI_EXIT_OK;
        }
        int r = cli_parse_common_flag(&c, argc, argv, &i);
        if (r < 0)
            return CLI_EXIT_USAGE;
        if (r > 0)
            continue;
        const int k = cli_flag_index(argv[i], run_flags, sizeof run_flags / sizeof run_flags[0]);
        if (k < 0)
            return cli_usage_error("run: unknown argument '%s'", argv[i]);
        const char *flag = run_flags[k];
        const char **file = NULL;
        float *number = NULL;
        switch ((enum run_flag)k) {
        case CLI_FLAG_Q:
            file = &f.q;
            break;
        case CLI_FLAG_K_CACHE:
            file = &f.k;
            break;
        case CLI_FLAG_V_CACHE:
            file = &f.v;
            break;
        case CLI_FLAG_BLOCK_TABLE:
            file = &f.block_table;
            break;
        case CLI_FLAG_CU_SEQLENS_Q:
            file = &f.cu_seqlens_q;
            break;
        case CLI_FLAG_SEQUSED_K:
            file = &f.seqused_k;
            break;
        case CLI_FLAG_SINKS_FILE:
            file = &f.sinks;
            break;
        case CLI_FLAG_OUT:
            file = &f.out;
            break;
        case CLI_FLAG_LSE_OUT:
            file = &f.lse_out;
            break;
        case CLI_FLAG_NEW_K:
            file = &f.new_k;
            break;
        case CLI_FLAG_NEW_V:
            file = &f.new_v;
            break;
        case CLI_FLAG_SLOT_MAPPING:
            file = &f.slot_mapping;
            break;
        case CLI_FLAG_SCALE:
            number = &scale;
            break;
        case CLI_FLAG_Q_DESCALE:
            number = &q_descale;
            break;
        case CLI_FLAG_K_DESCALE:
            number = &k_descale;
            break;
        case CLI_FLAG_V_DESCALE:
            number = &v_descale;
            break;
        }
        const char *value = cli_flag_value(argc, argv, &i, flag);
        if (!value)
            return CLI_EXIT_USAGE;
        if (file) {
            *file = value;
        } else {
            if (parse_float(flag, value, number) != 0)
                return CLI_EXIT_USAGE;
            if (number == &scale)
                have_scale = 1;
        }
    }
    const struct {
        const char *path, *flag;
    } required[] = {{f.q, "--q"},
                    {f.k, "--k-cache"},
                    {f.v, "--v-cache"},
                    {f.block_table, "--block-table"},
                    {f.cu_seqlens_q, "--cu-seqlens-q"},
                    {f.seqused_k, "--seqused-k"},
                    {f.out, "--out"}};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!required[i].path)
            return cli_usage_error("run: %s FILE is required", required[i].flag);
    unsigned given_lengths = c.given & (CLI_GIVEN_MAX_Q_LEN | CLI_GIVEN_MAX_KV_LEN);
    if (f.sinks)
        c.shape.has_sinks = 1;
    const int append_files = !!f.new_k + !!f.new_v + !!f.slot_mapping;
    if (append_files && append_files != 3)
        return cli_usage_error("run: --new-k, --new-v and --slot-mapping go together");
    if (f.lse_out)
        c.shape.return_lse = 1;
    if (c.shape.return_lse && !f.lse_out)
        return cli_usage_error("run: --lse needs --lse-out FILE (where the log-sum-exp goes)");
    cli_common_finish(&c);
    attn_shape *s = &c.shape;
    const int32_t hq = s->num_q_heads;
    const int32_t hkv = s->num_kv_heads ? s->num_kv_heads : hq;
    const int32_t d = s->head_dim, dv = s->head_dim_v ? s->head_dim_v : d;

    /* Read and cross-check the arrays. */
    char err[1024];
    npy_array q = {0}, k = {0}, v = {0}, bt = {0}, cu = {0}, sk = {0}, sinks = {0};
    npy_array nk = {0}, nv = {0}, slots = {0};
    int rc = CLI_EXIT_OK;
#define READ(arr, path, what, dtype, ndim, ...)                                                    \
    do {                                                                                           \
        const int64_t expect[] = {__VA_ARGS__};                                                    \
        if (npy_read_expect(path, what, dtype, ndim, expect, &arr, err, sizeof err) != 0) {        \
            fprintf(stderr, "attnreg: run: %s\n", err);                                            \
            rc = strstr(err, "No such file") || strstr(err, "truncated") ||                        \
                         strstr(err, "read error")                                                 \
                     ? CLI_EXIT_IO                                                                 \
                     : CLI_EXIT_USAGE;                                                             \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)
    READ(q, f.q, "--q", run_npy_dtype(s->q_dtype), 3, -1, hq, d);
    READ(k, f.k, "--k-cache", run_npy_dtype(s->kv_dtype), 4, -1, s->page_size, hkv, d);
    READ(v, f.v, "--v-cache [num_blocks of --k-cache]", run_npy_dtype(s->kv_dtype), 4, k.shape[0],
         s->page_size, hkv, dv);
    READ(cu, f.cu_seqlens_q, "--cu-seqlens-q", NPY_DTYPE_I4, 1, -1);
    if (cu.shape[0] < 2) {
        /* One entry is zero sequences: the library refuses a batch without
         * sequences, which used to come out as exit 10 "internal error". */
        rc = mismatch("--cu-seqlens-q has %lld entr%s; it needs num_seqs + 1, with at least one "
                      "sequence",
                      (long long)cu.shape[0], cu.shape[0] == 1 ? "y" : "ies");
        goto done;
    }
    const int32_t num_seqs = (int32_t)(cu.shape[0] - 1);
    /* num_seqs comes from --cu-seqlens-q; the messages say so. */
    READ(sk, f.seqused_k, "--seqused-k [num_seqs = len(--cu-seqlens-q) - 1]", NPY_DTYPE_I4, 1,
         num_seqs);
    READ(bt, f.block_table, "--block-table [num_seqs = len(--cu-seqlens-q) - 1]", NPY_DTYPE_I4, 2,
         num_seqs, -1);
    if (f.sinks)
        READ(sinks, f.sinks, "--sinks-file", NPY_DTYPE_F4, 1, hq);
    if (f.new_k) {
        /* New tokens' rows in q_dtype (what the projections give), and the
         * int64 slot of each (block * page_size + offset; < 0 = skip). */
        READ(nk, f.new_k, "--new-k", run_npy_dtype(s->q_dtype), 3, -1, hkv, d);
        READ(nv, f.new_v, "--new-v [tokens of --new-k]", run_npy_dtype(s->q_dtype), 3, nk.shape[0],
             hkv, dv);
        READ(slots, f.slot_mapping, "--slot-mapping [tokens of --new-k]", NPY_DTYPE_I8, 1,
             nk.shape[0]);
    }
#undef READ
    const int32_t *cu_data = cu.data, *sk_data = sk.data, *bt_data = bt.data;
    const int64_t num_tokens = q.shape[0];
    /* The checks cpu-ref's forward makes too (plugins/common), here before
     * anything is uploaded, so a GPU backend never sees such a batch either:
     * the files name cu_seqlens_q and seqused_k as --cu-seqlens-q and
     * --seqused-k; the maxima are computed below, so not checked here. */
    char why[512];
    if (attn_batch_check_seqlens("the batch files: ", cu_data, sk_data, num_seqs, num_tokens,
                                 attn_batch_positional(s), INT32_MAX, INT32_MAX, why,
                                 sizeof why) != ATTN_OK) {
        rc = mismatch("%s", why);
        goto done;
    }
    int32_t longest_q = 0, longest_kv = 0;
    for (int32_t i = 0; i < num_seqs; i++) {
        /* 64-bit: in int32, 2147483584 - (-2147483648) wraps to a small
         * positive length (attn_batch_check_seqlens above refused a
         * decreasing array in 64 bits already). */
        int64_t q_len = (int64_t)cu_data[i + 1] - cu_data[i];
        int64_t pages = ((int64_t)sk_data[i] + s->page_size - 1) / s->page_size;
        if (q_len > 0 && pages > bt.shape[1]) {
            rc = mismatch("sequence %d has %d keys = %lld pages of %d, but --block-table has "
                          "%lld columns",
                          i, sk_data[i], (long long)pages, s->page_size, (long long)bt.shape[1]);
            goto done;
        }
        for (int64_t p = 0; q_len > 0 && p < pages; p++) {
            int32_t block = bt_data[i * bt.shape[1] + p];
            if (block < 0 || block >= k.shape[0]) {
                rc = mismatch("--block-table[%d][%lld] = %d is not a block of --k-cache (0..%lld)",
                              i, (long long)p, block, (long long)k.shape[0] - 1);
                goto done;
            }
        }
        if (q_len > longest_q)
            longest_q = (int32_t)q_len;
        if (sk_data[i] > longest_kv)
            longest_kv = sk_data[i];
    }
    /* Lengths the flags did not fix come from the data; given ones must hold it. */
    if (!(given_lengths & CLI_GIVEN_MAX_Q_LEN))
        s->max_q_len = longest_q > 0 ? longest_q : 1;
    if (!(given_lengths & CLI_GIVEN_MAX_KV_LEN))
        s->max_kv_len = longest_kv > s->max_q_len ? longest_kv : s->max_q_len;
    if (longest_q > s->max_q_len || longest_kv > s->max_kv_len) {
        rc = mismatch("the data has sequences of up to %d queries and %d keys, beyond "
                      "--max-q-len %d / --max-kv-len %d",
                      longest_q, longest_kv, s->max_q_len, s->max_kv_len);
        goto done;
    }

    /* Select, create, run. */
    attn_registry *reg = NULL;
    rc = cli_open_registry(&c, &reg);
    if (rc != CLI_EXIT_OK)
        goto done;
    attn_selection sel;
    attn_selection_init(&sel);
    attn_status status = attn_registry_select(reg, s, &sel);
    if (status != ATTN_OK) {
        rc = cli_report_failure(status, sel.message);
        attn_registry_close(reg);
        goto done;
    }
    const attn_shape *eff = &sel.effective_shape;
    if (eff->q_dtype != s->q_dtype || eff->kv_dtype != s->kv_dtype ||
        eff->out_dtype != s->out_dtype) {
        /* The files carry the asked dtypes; a fallback that changes them
         * cannot run on these files. */
        rc = cli_report_failure(ATTN_ERR_UNSUPPORTED,
                                "the selected fallback changes a tensor dtype; convert the "
                                "files or pass --strict to see the rejections");
        attn_registry_close(reg);
        goto done;
    }
    attn_backend *backend = NULL;
    status = attn_backend_create(reg, &sel, &backend);
    if (status != ATTN_OK) {
        rc = cli_report_failure(status, "");
        attn_registry_close(reg);
        goto done;
    }
    attn_forward_args host;
    attn_forward_args_init(&host);
    host.num_seqs = num_seqs;
    host.num_tokens = (int32_t)num_tokens;
    host.q = q.data;
    host.q_stride_token = (int64_t)hq * d;
    host.q_stride_head = d;
    host.k_cache = k.data;
    host.v_cache = v.data;
    host.num_blocks = (int32_t)k.shape[0];
    host.block_table = bt_data;
    host.block_table_stride = (int32_t)bt.shape[1];
    host.cu_seqlens_q = cu_data;
    host.seqused_k = sk_data;
    host.max_seqlen_q = longest_q;
    host.max_seqlen_k = longest_kv;
    host.scale = have_scale ? scale : 1.0f / sqrtf((float)d);
    host.q_descale = q_descale;
    host.k_descale = k_descale;
    host.v_descale = v_descale;
    host.sinks = f.sinks ? sinks.data : NULL;
    const size_t out_bytes = (size_t)num_tokens * hq * dv * run_dtype_size(eff->out_dtype);
    void *out_host = malloc(out_bytes ? out_bytes : 1);
    host.out = out_host;
    const size_t lse_bytes = (size_t)num_tokens * hq * sizeof(float);
    float *lse_host = f.lse_out ? malloc(lse_bytes ? lse_bytes : 1) : NULL;
    host.out_stride_token = (int64_t)hq * dv;
    host.out_stride_head = dv;
    attn_batch_limits limits = {sizeof limits, num_seqs, (int32_t)num_tokens};
    size_t ws = 0;
    status = attn_backend_workspace_size(backend, &limits, &ws);
    host.workspace_size = ws;
    run_memory *mem = NULL;
    attn_forward_args dev;
    memset(&dev, 0, sizeof dev);
    if (status == ATTN_OK && out_host) {
        mem = run_memory_open(eff->arch, err, sizeof err);
        if (!mem) {
            fprintf(stderr, "attnreg: run: %s\n", err);
            status = ATTN_ERR_NO_DEVICE;
        }
    }
    if (status == ATTN_OK && mem) {
        run_args_sizes sizes = {(size_t)num_tokens * hq * d * run_dtype_size(eff->q_dtype),
                                (size_t)k.count * run_dtype_size(eff->kv_dtype),
                                (size_t)v.count * run_dtype_size(eff->kv_dtype),
                                out_bytes,
                                bt.count,
                                hq};
        if (run_args_upload(mem, &host, &sizes, &dev, err, sizeof err) != 0) {
            fprintf(stderr, "attnreg: run: %s\n", err);
            status = ATTN_ERR_RUNTIME;
        } else {
            /* The KV append first, into the uploaded caches, so the forward
             * reads the new tokens from where the backend wrote them. */
            if (f.new_k)
                status = run_append(mem, backend, &nk, &nv, &slots, &dev, eff, k_descale, v_descale,
                                    err, sizeof err);
            /* --lse-out: [num_tokens, q_heads] float32 in the backend's memory. */
            if (status == ATTN_OK && f.lse_out) {
                dev.lse = lse_host ? run_memory_upload(mem, NULL, lse_bytes ? lse_bytes : 1, err,
                                                       sizeof err)
                                   : NULL;
                if (!dev.lse) {
                    fprintf(stderr, "attnreg: run: %s\n", lse_host ? err : "out of memory");
                    status = ATTN_ERR_RUNTIME;
                }
            }
            if (status == ATTN_OK)
                status = attn_backend_forward(backend, &dev);
            if (status == ATTN_OK &&
                run_memory_download(mem, out_host, dev.out, out_bytes, err, sizeof err) != 0) {
                fprintf(stderr, "attnreg: run: %s\n", err);
                status = ATTN_ERR_RUNTIME;
            }
            if (status == ATTN_OK && dev.lse &&
                run_memory_download(mem, lse_host, dev.lse, lse_bytes, err, sizeof err) != 0) {
                fprintf(stderr, "attnreg: run: %s\n", err);
                status = ATTN_ERR_RUNTIME;
            }
            run_memory_free(mem, dev.lse);
            dev.lse = NULL;
            run_args_free(mem, &dev);
        }
    }
    if (status != ATTN_OK) {
        rc = cli_report_failure(status, "");
    } else {
        const int64_t out_shape[3] = {num_tokens, hq, dv}, lse_shape[2] = {num_tokens, hq};
        if (npy_write(f.out, run_npy_dtype(eff->out_dtype), 3, out_shape, out_host, err,
                      sizeof err) != 0 ||
            (f.lse_out &&
             npy_write(f.lse_out, NPY_DTYPE_F4, 2, lse_shape, lse_host, err, sizeof err) != 0)) {
            fprintf(stderr, "attnreg: run: %s\n", err);
            rc = CLI_EXIT_IO;
        } else if (c.json) {
            struct cli_json j;
            cli_json_init(&j, stdout);
            cli_json_begin_object(&j, NULL);
            cli_json_string_member(&j, "status", "OK");
            cli_json_selection(&j, "selection", &sel);
            cli_json_string_member(&j, "memory", run_memory_name(mem));
            cli_json_string_member(&j, "out", f.out);
            cli_json_string_member(&j, "lse_out", f.lse_out);
            cli_json_int_member(&j, "num_tokens", num_tokens);
            cli_json_int_member(&j, "num_seqs", num_seqs);
            cli_json_double_member(&j, "scale", host.scale);
            cli_json_end_object(&j);
        } else {
            cli_print_selection(stdout, &sel);
            printf("wrote %s: [%lld, %d, %d] %s\n", f.out, (long long)num_tokens, hq, dv,
                   npy_dtype_descr(run_npy_dtype(eff->out_dtype)));
            if (f.lse_out)
                printf("wrote %s: [%lld, %d] <f4\n", f.lse_out, (long long)num_tokens, hq);
        }
    }
    run_memory_close(mem);
    free(out_host);
    free(lse_host);
    attn_backend_destroy(backend);
    attn_registry_close(reg);
done:
    npy_free(&q);
    npy_free(&k);
    npy_free(&v);
    npy_free(&bt);
    npy_free(&cu);
    npy_free(&sk);
    npy_free(&sinks);
    npy_free(&nk);
    npy_free(&nv);
    npy_free(&slots);
    return rc;
}
