/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_cli_run.c — `attnreg run` end to end: random problems written as .npy
 * files, the command run on them, out.npy read back and compared with the
 * oracle; and a few inconsistent inputs that must be refused with a message
 * naming the array.
 *
 *   test_cli_run ATTNREG_BINARY
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#endif

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attn_dtype_conv.h"
#include "npy.h"
#include "oracle.h"

static const char *attnreg;
static char dir[256];

static void make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/attnreg-run-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        abort();
}

static void remove_dir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}

static npy_dtype npy_of(int32_t dtype)
{
    switch (dtype) {
    case ATTN_DTYPE_F32:
        return NPY_DTYPE_F4;
    case ATTN_DTYPE_F16:
        return NPY_DTYPE_F2;
    case ATTN_DTYPE_BF16:
        return NPY_DTYPE_U2;
    default:
        return NPY_DTYPE_U1;
    }
}

static const char *file(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", dir, name);
    return p;
}

/* Writes the problem's arrays; returns the shape flags for the command. */
static void write_problem(const attn_oracle_problem *p)
{
    char err[512];
    const attn_shape *s = &p->shape;
    int64_t q_shape[3] = {p->num_tokens, s->num_q_heads, s->head_dim};
    int64_t k_shape[4] = {p->num_blocks, s->page_size, s->num_kv_heads, s->head_dim};
    int64_t v_shape[4] = {p->num_blocks, s->page_size, s->num_kv_heads, s->head_dim_v};
    int64_t bt_shape[2] = {p->num_seqs, p->block_table_stride};
    int64_t cu_shape[1] = {p->num_seqs + 1}, sk_shape[1] = {p->num_seqs};
    int64_t sink_shape[1] = {s->num_q_heads};
    ck_assert_int_eq(
        npy_write(file("q.npy"), npy_of(s->q_dtype), 3, q_shape, p->q, err, sizeof err), 0);
    ck_assert_int_eq(
        npy_write(file("k.npy"), npy_of(s->kv_dtype), 4, k_shape, p->k_cache, err, sizeof err), 0);
    ck_assert_int_eq(
        npy_write(file("v.npy"), npy_of(s->kv_dtype), 4, v_shape, p->v_cache, err, sizeof err), 0);
    ck_assert_int_eq(
        npy_write(file("bt.npy"), NPY_DTYPE_I4, 2, bt_shape, p->block_table, err, sizeof err), 0);
    ck_assert_int_eq(
        npy_write(file("cu.npy"), NPY_DTYPE_I4, 1, cu_shape, p->cu_seqlens_q, err, sizeof err), 0);
    ck_assert_int_eq(
        npy_write(file("sk.npy"), NPY_DTYPE_I4, 1, sk_shape, p->seqused_k, err, sizeof err), 0);
    if (p->sinks)
        ck_assert_int_eq(
            npy_write(file("s.npy"), NPY_DTYPE_F4, 1, sink_shape, p->sinks, err, sizeof err), 0);
}

/* Runs attnreg with `extra` arguments after the shape and file flags;
 * returns its exit code, stderr in `messages`. */
static int run_attnreg(const attn_oracle_problem *p, const char *extra, char *messages, size_t size)
{
    const attn_shape *s = &p->shape;
    char cmd[4096];
    snprintf(cmd, sizeof cmd,
             "'%s' run --backend cpu-ref --q-heads %d --kv-heads %d --head-dim %d "
             "--head-dim-v %d --q-dtype %s --kv-dtype %s --compute-dtype %s --out-dtype %s "
             "--page-size %d %s --q %s/q.npy --k-cache %s/k.npy --v-cache %s/v.npy "
             "--block-table %s/bt.npy --cu-seqlens-q %s/cu.npy --seqused-k %s/sk.npy "
             "--out %s/out.npy --scale %.9g --k-descale %.9g --v-descale %.9g --q-descale %.9g "
             "%s%s%s %s 2>%s/stderr.txt >/dev/null",
             attnreg, s->num_q_heads, s->num_kv_heads, s->head_dim, s->head_dim_v,
             attn_dtype_spelling(s->q_dtype), attn_dtype_spelling(s->kv_dtype),
             attn_dtype_spelling(s->compute_dtype), attn_dtype_spelling(s->out_dtype), s->page_size,
             s->causal ? "" : "--no-causal", dir, dir, dir, dir, dir, dir, dir, (double)p->scale,
             (double)p->k_descale, (double)p->v_descale, (double)p->q_descale,
             p->sinks ? "--sinks-file " : "", p->sinks ? dir : "", p->sinks ? "/s.npy" : "", extra,
             dir);
    int status = system(cmd);
    FILE *f = fopen(file("stderr.txt"), "r");
    size_t n = f ? fread(messages, 1, size - 1, f) : 0;
    messages[n] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void round_trip(int32_t q_dtype, int32_t kv_dtype, int32_t out_dtype, int sinks,
                       uint64_t seed)
{
    attn_shape s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    snprintf(s.arch, sizeof s.arch, "cpu");
    s.num_q_heads = 8;
    s.num_kv_heads = 2;
    s.head_dim = 64;
    s.head_dim_v = 48;
    s.q_dtype = q_dtype;
    s.kv_dtype = kv_dtype;
    s.compute_dtype = attn_conv_dtype_is_fp8(kv_dtype) ? kv_dtype : ATTN_DTYPE_F32;
    s.out_dtype = out_dtype;
    s.page_size = 8;
    s.max_q_len = 6;
    s.max_kv_len = 90;
    s.causal = 1;
    s.window_left = s.window_right = -1;
    s.has_sinks = sinks;
    attn_oracle_problem p;
    attn_oracle_problem_options o = {
        .num_seqs = 3, .seed = seed, .extra_table_columns = 2, .extra_blocks = 1};
    char err[512], messages[2048];
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    write_problem(&p);
    int rc = run_attnreg(&p, "", messages, sizeof messages);
    ck_assert_msg(rc == 0, "attnreg run exited %d: %s", rc, messages);
    npy_array out;
    int64_t expect[3] = {p.num_tokens, 8, 48};
    ck_assert_msg(npy_read_expect(file("out.npy"), "out", npy_of(out_dtype), 3, expect, &out, err,
                                  sizeof err) == 0,
                  "%s", err);
    /* Compare against the oracle on the same (contiguous) layout. */
    attn_forward_args a;
    attn_oracle_problem_args(&p, &a);
    double *want = calloc((size_t)p.num_tokens * 8 * 48, sizeof(double));
    ck_assert_int_eq(attn_oracle_forward(&p.shape, &a, want, err, sizeof err), 0);
    a.out = out.data;
    attn_oracle_error e;
    attn_oracle_compare(&p.shape, &a, want, &e);
    attn_oracle_tolerance tol = attn_oracle_verify_tolerance(&p.shape);
    ck_assert_msg(attn_oracle_within(&e, &tol), "max_abs %g rel_l2 %g", e.max_abs, e.rel_l2);
    free(want);
    npy_free(&out);
    attn_oracle_problem_free(&p);
}

START_TEST(test_round_trips)
{
    round_trip(ATTN_DTYPE_F32, ATTN_DTYPE_F32, ATTN_DTYPE_F32, 0, 1);
    round_trip(ATTN_DTYPE_BF16, ATTN_DTYPE_BF16, ATTN_DTYPE_BF16, 1, 2);
    round_trip(ATTN_DTYPE_F16, ATTN_DTYPE_FP8_E4M3FN, ATTN_DTYPE_F16, 0, 3);
    round_trip(ATTN_DTYPE_BF16, ATTN_DTYPE_FP8_E4M3FNUZ, ATTN_DTYPE_F32, 1, 4);
}
END_TEST

/* A small f32 problem (4 q heads, 2 kv heads, head size 16, pages of 4). */
static attn_oracle_problem small_problem(int32_t num_seqs, int32_t max_q_len, int32_t max_kv_len,
                                         uint64_t seed)
{
    attn_shape s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    snprintf(s.arch, sizeof s.arch, "cpu");
    s.num_q_heads = 4;
    s.num_kv_heads = 2;
    s.head_dim = s.head_dim_v = 16;
    s.q_dtype = s.kv_dtype = s.compute_dtype = s.out_dtype = ATTN_DTYPE_F32;
    s.page_size = 4;
    s.max_q_len = max_q_len;
    s.max_kv_len = max_kv_len;
    s.causal = 1;
    s.window_left = s.window_right = -1;
    attn_oracle_problem p;
    attn_oracle_problem_options o = {.num_seqs = num_seqs, .seed = seed};
    char err[512];
    ck_assert_int_eq(attn_oracle_problem_random(&p, &s, &o, err, sizeof err), 0);
    return p;
}

START_TEST(test_append_path)
{
    /* `run --new-k --new-v --slot-mapping`: the new tokens of
     * sequence 0 are cut out of the cache files (overwritten with junk) and
     * passed as rows with their int64 slots (plus one padding row, slot -1);
     * the backend's KV append writes them back before the forward, whose
     * output is then bitwise the one of the untouched files. */
    attn_oracle_problem p = small_problem(2, 3, 30, 21);
    char err[512], messages[2048], extra[1024];
    write_problem(&p);
    ck_assert_int_eq(run_attnreg(&p, "", messages, sizeof messages), 0);
    npy_array want, got;
    int64_t out_shape[3] = {p.num_tokens, 4, 16};
    ck_assert_int_eq(
        npy_read_expect(file("out.npy"), "out", NPY_DTYPE_F4, 3, out_shape, &want, err, sizeof err),
        0);
    const int32_t q0 = p.cu_seqlens_q[1], k0 = p.seqused_k[0];
    const int64_t row = 2 * 16; /* kv heads x head_dim per token */
    float *nk = calloc((size_t)(q0 + 1) * row, sizeof(float));
    float *nv = calloc((size_t)(q0 + 1) * row, sizeof(float));
    int64_t *slots = calloc((size_t)q0 + 1, sizeof(int64_t));
    for (int32_t t = 0; t < q0; t++) {
        int32_t pos = k0 - q0 + t;
        slots[t] = (int64_t)p.block_table[pos / 4] * 4 + pos % 4;
        for (int64_t i = 0; i < row; i++) {
            nk[t * row + i] = ((float *)p.k_cache)[slots[t] * row + i];
            nv[t * row + i] = ((float *)p.v_cache)[slots[t] * row + i];
            ((float *)p.k_cache)[slots[t] * row + i] = 7.0f;
            ((float *)p.v_cache)[slots[t] * row + i] = -7.0f;
        }
    }
    slots[q0] = -1; /* padding */
    for (int64_t i = 0; i < row; i++)
        nk[q0 * row + i] = nv[q0 * row + i] = 99.0f;
    write_problem(&p);
    int64_t rows_shape[3] = {q0 + 1, 2, 16}, slot_shape[1] = {q0 + 1};
    ck_assert_int_eq(npy_write(file("nk.npy"), NPY_DTYPE_F4, 3, rows_shape, nk, err, sizeof err),
                     0);
    ck_assert_int_eq(npy_write(file("nv.npy"), NPY_DTYPE_F4, 3, rows_shape, nv, err, sizeof err),
                     0);
    ck_assert_int_eq(npy_write(file("sm.npy"), NPY_DTYPE_I8, 1, slot_shape, slots, err, sizeof err),
                     0);
    snprintf(extra, sizeof extra, "--new-k %s --new-v %s --slot-mapping %s", file("nk.npy"),
             file("nv.npy"), file("sm.npy"));
    ck_assert_msg(run_attnreg(&p, extra, messages, sizeof messages) == 0, "%s", messages);
    ck_assert_int_eq(
        npy_read_expect(file("out.npy"), "out", NPY_DTYPE_F4, 3, out_shape, &got, err, sizeof err),
        0);
    ck_assert_int_eq(memcmp(got.data, want.data, (size_t)want.count * sizeof(float)), 0);
    /* Without the append the junk shows: the test would notice a no-op. */
    ck_assert_int_eq(run_attnreg(&p, "", messages, sizeof messages), 0);
    npy_free(&got);
    ck_assert_int_eq(
        npy_read_expect(file("out.npy"), "out", NPY_DTYPE_F4, 3, out_shape, &got, err, sizeof err),
        0);
    ck_assert_int_ne(memcmp(got.data, want.data, (size_t)want.count * sizeof(float)), 0);
    /* One of the three alone is a usage error. */
    snprintf(extra, sizeof extra, "--new-k %s", file("nk.npy"));
    ck_assert_int_eq(run_attnreg(&p, extra, messages, sizeof messages), 2);
    ck_assert_msg(strstr(messages, "go together"), "%s", messages);
    npy_free(&got);
    npy_free(&want);
    free(nk);
    free(nv);
    free(slots);
    attn_oracle_problem_free(&p);
}
END_TEST

START_TEST(test_lse_out)
{
    /* `run --lse-out`: the log-sum-exp file against the float64 oracle's. */
    attn_oracle_problem p = small_problem(3, 3, 40, 33);
    char err[512], messages[2048], extra[600];
    write_problem(&p);
    snprintf(extra, sizeof extra, "--lse-out %s", file("lse.npy"));
    ck_assert_msg(run_attnreg(&p, extra, messages, sizeof messages) == 0, "%s", messages);
    npy_array lse;
    int64_t lse_shape[2] = {p.num_tokens, 4};
    ck_assert_msg(npy_read_expect(file("lse.npy"), "lse", NPY_DTYPE_F4, 2, lse_shape, &lse, err,
                                  sizeof err) == 0,
                  "%s", err);
    attn_forward_args a;
    attn_oracle_problem_args(&p, &a);
    double *out = calloc((size_t)p.num_tokens * 4 * 16, sizeof(double));
    double *want = calloc((size_t)p.num_tokens * 4, sizeof(double));
    ck_assert_int_eq(attn_oracle_forward_lse(&p.shape, &a, out, want, err, sizeof err), 0);
    for (int64_t r = 0; r < p.num_tokens * 4; r++)
        ck_assert_msg(fabs(((float *)lse.data)[r] - want[r]) <= 2e-4 + 1e-5 * fabs(want[r]),
                      "row %lld: %g vs %g", (long long)r, (double)((float *)lse.data)[r], want[r]);
    /* --lse alone has nowhere to put it. */
    ck_assert_int_eq(run_attnreg(&p, "--lse", messages, sizeof messages), 2);
    ck_assert_msg(strstr(messages, "--lse-out"), "%s", messages);
    free(out);
    free(want);
    npy_free(&lse);
    attn_oracle_problem_free(&p);
}
END_TEST

START_TEST(test_inconsistent_inputs)
{
    attn_oracle_problem p = small_problem(2, 3, 20, 9);
    char messages[2048];
    /* Zero sequences (--cu-seqlens-q = [0], empty --q): a usage error, not
     * exit 10 "internal error". */
    int32_t seqs = p.num_seqs, tokens = p.num_tokens;
    p.num_seqs = 0;
    p.num_tokens = 0;
    write_problem(&p);
    ck_assert_int_eq(run_attnreg(&p, "", messages, sizeof messages), 2);
    ck_assert_msg(strstr(messages, "at least one sequence"), "%s", messages);
    p.num_seqs = seqs;
    p.num_tokens = tokens;
    write_problem(&p);
    /* Wrong head_dim on the command line: --q's last dimension is named. */
    p.shape.head_dim = 32;
    ck_assert_int_eq(run_attnreg(&p, "", messages, sizeof messages), 2);
    ck_assert_msg(strstr(messages, "--q") && strstr(messages, "dimension 2 must be 32"), "%s",
                  messages);
    p.shape.head_dim = 16;
    /* A dtype that does not match the file. */
    p.shape.q_dtype = ATTN_DTYPE_BF16;
    ck_assert_int_eq(run_attnreg(&p, "", messages, sizeof messages), 2);
    ck_assert_msg(strstr(messages, "dtype is <f4, expected <u2"), "%s", messages);
    p.shape.q_dtype = ATTN_DTYPE_F32;
    /* More query tokens than keys: named by sequence and array
     * before anything is selected or uploaded, never rows of zeros. */
    int32_t keys = p.seqused_k[1], q1 = p.cu_seqlens_q[2] - p.cu_seqlens_q[1];
    ck_assert_int_ge(q1, 1);
    p.seqused_k[1] = q1 - 1;
    write_problem(&p);
    ck_assert_int_eq(run_attnreg(&p, "", messages, sizeof messages), 2);
    ck_assert_msg(strstr(messages, "sequence 1 has") && strstr(messages, "seqused_k[1] is"), "%s",
                  messages);
    p.seqused_k[1] = keys;
    /* A block-table entry beyond the cache. */
    p.block_table[0] = p.num_blocks + 5;
    write_problem(&p);
    ck_assert_int_eq(run_attnreg(&p, "", messages, sizeof messages), 2);
    ck_assert_msg(strstr(messages, "--block-table[0][0]"), "%s", messages);
    /* A missing file is an I/O error. */
    remove(file("sk.npy"));
    ck_assert_int_eq(run_attnreg(&p, "", messages, sizeof messages), 9);
    attn_oracle_problem_free(&p);
}
END_TEST

static void write_text(const char *path, const void *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(bytes, 1, n, f), n);
    ck_assert_int_eq(fclose(f), 0);
}

/* cu_seqlens_q = [0, 2147483584, -2147483648, -64, T] decreases
 * at sequence 1, but its int32 differences wrap to positive lengths, so the
 * CLI's and cpu-ref's checks passed it and cpu-ref wrote ~2^31 rows past the
 * output (SIGSEGV). Refused now, naming the sequence. */
START_TEST(test_cu_seqlens_wrap_refused)
{
    attn_oracle_problem p = small_problem(4, 8, 64, 23);
    write_problem(&p);
    const int32_t cu[5] = {0, 2147483584, INT32_MIN, -64, p.num_tokens};
    const int64_t cu_shape[1] = {5};
    char err[512], messages[2048];
    ck_assert_int_eq(npy_write(file("cu.npy"), NPY_DTYPE_I4, 1, cu_shape, cu, err, sizeof err), 0);
    int rc = run_attnreg(&p, "", messages, sizeof messages);
    ck_assert_msg(rc == 2, "exit %d: %s", rc, messages);
    ck_assert_msg(strstr(messages, "decreases at sequence 1"), "%s", messages);
    attn_oracle_problem_free(&p);
}
END_TEST

/* run --out once truncated the old file and wrote in place, so a write
 * that failed half way left half a file where a good one was. A file-size
 * limit makes the write fail: the old out.npy must survive whole, and no
 * temporary file may be left beside it. */
START_TEST(test_out_replaced_atomically)
{
    attn_oracle_problem p = small_problem(4, 16, 64, 23);
    write_problem(&p);
    ck_assert_int_gt(p.num_tokens * 4 * 16 * 4, 2048); /* beyond the limit below */
    const char previous[] = "the previous out.npy";
    write_text(file("out.npy"), previous, sizeof previous);
    struct rlimit old, small = {2048, 2048};
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_max = old.rlim_max;
    void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN); /* inherited: write fails with EFBIG */
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
    char messages[2048];
    int rc = run_attnreg(&p, "", messages, sizeof messages);
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_xfsz);
    ck_assert_msg(rc == 9, "exit %d: %s", rc, messages);
    ck_assert_msg(strstr(messages, "write failed"), "%s", messages);
    char back[64] = "";
    FILE *f = fopen(file("out.npy"), "rb");
    ck_assert_ptr_nonnull(f);
    size_t n = fread(back, 1, sizeof back, f);
    fclose(f);
    ck_assert_uint_eq(n, sizeof previous);
    ck_assert_mem_eq(back, previous, sizeof previous);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q 'out.npy.tmp'", dir);
    ck_assert_msg(system(cmd) != 0, "a temporary file was left in %s", dir);
    /* And without the limit the same run replaces it. */
    rc = run_attnreg(&p, "", messages, sizeof messages);
    ck_assert_msg(rc == 0, "exit %d: %s", rc, messages);
    attn_oracle_problem_free(&p);
}
END_TEST

/* --out naming a FIFO once blocked forever in the open (no reader);
 * every output must be a regular file. `timeout` turns a regression into a
 * failure instead of a hang. */
START_TEST(test_out_fifo_refused)
{
    attn_oracle_problem p = small_problem(2, 4, 64, 23);
    write_problem(&p);
    ck_assert_int_eq(mkfifo(file("out.fifo"), 0600), 0);
    char extra[600], messages[2048];
    snprintf(extra, sizeof extra, "--out %s/out.fifo", dir);
    int rc = run_attnreg(&p, extra, messages, sizeof messages);
    ck_assert_msg(rc == 9, "exit %d: %s", rc, messages);
    ck_assert_msg(strstr(messages, "a FIFO, not a regular file"), "%s", messages);
    remove(file("out.fifo"));
    attn_oracle_problem_free(&p);
}
END_TEST

/* A .npy header is quoted in the error; its ESC bytes and newlines once
 * reached the terminal raw. They come out as \xNN. */
START_TEST(test_npy_header_controls_escaped)
{
    attn_oracle_problem p = small_problem(2, 4, 64, 23);
    write_problem(&p);
    static const char header[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), "
                                 "'\x1b[2J\x1b]0;x\x07': 1, }\n";
    unsigned char bytes[256] = {
        0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(sizeof header - 1), 0};
    memcpy(bytes + 10, header, sizeof header - 1);
    write_text(file("q.npy"), bytes, 10 + sizeof header - 1);
    char messages[2048];
    int rc = run_attnreg(&p, "", messages, sizeof messages);
    ck_assert_msg(rc == 2, "exit %d: %s", rc, messages);
    ck_assert_msg(strstr(messages, "\\x1b[2J"), "%s", messages);
    for (const char *c = messages; *c; c++)
        ck_assert_msg((unsigned char)*c >= 0x20 || *c == '\n', "raw control byte 0x%02x: %s",
                      (unsigned char)*c, messages);
    attn_oracle_problem_free(&p);
}
END_TEST

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_cli_run ATTNREG\n");
        return 2;
    }
    attnreg = argv[1];
    Suite *suite = suite_create("cli_run");
    TCase *tc = tcase_create("run");
    tcase_add_unchecked_fixture(tc, make_dir, remove_dir);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_round_trips);
    tcase_add_test(tc, test_append_path);
    tcase_add_test(tc, test_lse_out);
    tcase_add_test(tc, test_inconsistent_inputs);
    tcase_add_test(tc, test_cu_seqlens_wrap_refused);
    tcase_add_test(tc, test_out_replaced_atomically);
    tcase_add_test(tc, test_out_fifo_refused);
    tcase_add_test(tc, test_npy_header_controls_escaped);
    suite_add_tcase(suite, tc);
    SRunner *runner = srunner_create(suite);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
