/* SPDX-License-Identifier: Apache-2.0 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#endif
/*
 * test_npy.c — the .npy reader/writer (tools/npy) on good and malformed
 * files. The malformed ones are built byte by byte so each test breaks
 * exactly one thing, and each error message must name what is wrong.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy.h"

static char dir[256];

static void make_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/attnreg-npy-XXXXXX", tmp && *tmp ? tmp : "/tmp");
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

static const char *path_of(const char *name)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

/* Writes a file: version (major, minor), header text padded to 64 bytes
 * (or given exactly), then `data_bytes` bytes of data. */
static const char *write_raw(const char *name, int major, const char *header, size_t data_bytes)
{
    const char *path = path_of(name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    size_t prefix = major == 1 ? 10 : 12;
    size_t len = strlen(header) + 1;
    size_t padded = (prefix + len + 63) / 64 * 64 - prefix;
    unsigned char magic[12] = {0x93,
                               'N',
                               'U',
                               'M',
                               'P',
                               'Y',
                               (unsigned char)major,
                               0,
                               (unsigned char)(padded & 0xFF),
                               (unsigned char)(padded >> 8),
                               0,
                               0};
    fwrite(magic, 1, prefix, f);
    fwrite(header, 1, strlen(header), f);
    for (size_t i = strlen(header); i + 1 < padded; i++)
        fputc(' ', f);
    fputc('\n', f);
    for (size_t i = 0; i < data_bytes; i++)
        fputc((int)(i & 0xFF), f);
    fclose(f);
    return path;
}

static void expect_error(const char *path, const char *needle)
{
    npy_array a;
    char err[512] = "";
    ck_assert_int_eq(npy_read(path, &a, err, sizeof err), -1);
    ck_assert_msg(strstr(err, needle) != NULL, "message \"%s\" lacks \"%s\"", err, needle);
    ck_assert_msg(strstr(err, path) != NULL, "message \"%s\" does not name the file", err);
}

START_TEST(test_round_trip_every_dtype)
{
    const npy_dtype dtypes[] = {NPY_DTYPE_F4, NPY_DTYPE_F2, NPY_DTYPE_I4, NPY_DTYPE_U1,
                                NPY_DTYPE_U2};
    const int64_t shape[3] = {2, 3, 5};
    unsigned char data[2 * 3 * 5 * 4];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 7 + 1);
    for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) {
        char err[512];
        const char *path = path_of("rt.npy");
        ck_assert_int_eq(npy_write(path, dtypes[k], 3, shape, data, err, sizeof err), 0);
        /* The file is what NumPy writes: 64-byte aligned header. */
        FILE *f = fopen(path, "rb");
        unsigned char head[10];
        ck_assert_uint_eq(fread(head, 1, 10, f), 10);
        fclose(f);
        ck_assert_int_eq((10 + (head[8] | head[9] << 8)) % 64, 0);
        npy_array a;
        ck_assert_int_eq(npy_read_expect(path, "--x", dtypes[k], 3, shape, &a, err, sizeof err), 0);
        ck_assert_int_eq(a.dtype, dtypes[k]);
        ck_assert_uint_eq(a.count, 30);
        ck_assert_int_eq(memcmp(a.data, data, 30 * npy_dtype_size(dtypes[k])), 0);
        npy_free(&a);
    }
    /* Rank 0, rank 1 (written "(5,)") and an empty dimension. */
    char err[512];
    npy_array a;
    float one = 3.5f;
    ck_assert_int_eq(npy_write(path_of("s.npy"), NPY_DTYPE_F4, 0, NULL, &one, err, sizeof err), 0);
    ck_assert_int_eq(npy_read(path_of("s.npy"), &a, err, sizeof err), 0);
    ck_assert_int_eq(a.ndim, 0);
    ck_assert_uint_eq(a.count, 1);
    ck_assert(((float *)a.data)[0] == 3.5f);
    npy_free(&a);
    int64_t five = 5;
    ck_assert_int_eq(npy_write(path_of("v.npy"), NPY_DTYPE_I4, 1, &five, data, err, sizeof err), 0);
    ck_assert_int_eq(npy_read(path_of("v.npy"), &a, err, sizeof err), 0);
    ck_assert_int_eq(a.ndim, 1);
    ck_assert_int_eq(a.shape[0], 5);
    npy_free(&a);
    int64_t empty[2] = {0, 4};
    ck_assert_int_eq(npy_write(path_of("e.npy"), NPY_DTYPE_U2, 2, empty, data, err, sizeof err), 0);
    ck_assert_int_eq(npy_read(path_of("e.npy"), &a, err, sizeof err), 0);
    ck_assert_uint_eq(a.count, 0);
    npy_free(&a);
}
END_TEST

START_TEST(test_numpy_written_files)
{
    /* Headers exactly as NumPy writes them, versions 1.0 and 2.0, with the
     * spacing variants found in the wild. */
    npy_array a;
    char err[512];
    const char *p =
        write_raw("np1.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
    ck_assert_msg(npy_read(p, &a, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(a.ndim, 2);
    ck_assert_int_eq(a.shape[1], 3);
    npy_free(&a);
    p = write_raw("np2.npy", 2, "{'descr':'|u1','fortran_order':False,'shape':(7,)}", 7);
    ck_assert_msg(npy_read(p, &a, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(a.dtype, NPY_DTYPE_U1);
    ck_assert_int_eq(a.shape[0], 7);
    npy_free(&a);
    p = write_raw("np3.npy", 1, "{\"shape\": (), \"fortran_order\": False, \"descr\": \"<u2\"}", 2);
    ck_assert_msg(npy_read(p, &a, err, sizeof err) == 0, "%s", err);
    ck_assert_int_eq(a.ndim, 0);
    npy_free(&a);
}
END_TEST

START_TEST(test_malformed_files)
{
    expect_error(write_raw("fortran.npy", 1,
                           "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24),
                 "Fortran");
    expect_error(write_raw("trunc.npy", 1,
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 23),
                 "truncated data");
    expect_error(write_raw("extra.npy", 1,
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 25),
                 "after the 24");
    expect_error(
        write_raw("f8.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16),
        "'<f8' is not supported");
    expect_error(
        write_raw("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8),
        "big-endian");
    expect_error(write_raw("nokey.npy", 1, "{'descr': '<f4', 'shape': (2,), }", 8),
                 "fortran_order");
    expect_error(write_raw("garbage.npy", 1, "this is not a dict", 8), "malformed");
    expect_error(write_raw("badshape.npy", 1,
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", 8),
                 "shape");
    expect_error(
        write_raw("v9.npy", 9, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 8),
        "version 9.0");
    /* Bad magic, a file cut inside its header, a missing file. */
    FILE *f = fopen(path_of("magic.npy"), "wb");
    fputs("PK\x03\x04 this is a zip", f);
    fclose(f);
    expect_error(path_of("magic.npy"), "magic");
    f = fopen(path_of("cut.npy"), "wb");
    fwrite("\x93NUMPY\x01\x00\x76\x00{'descr'", 1, 17, f);
    fclose(f);
    expect_error(path_of("cut.npy"), "truncated .npy header");
    expect_error(path_of("missing.npy"), "No such file");
    /* Once a FIFO hung the reader forever, a character device was read
     * without end (2 GB and growing); a directory is refused as well. */
    ck_assert_int_eq(mkfifo(path_of("fifo.npy"), 0600), 0);
    expect_error(path_of("fifo.npy"), "not a regular file");
    expect_error("/dev/zero", "not a regular file");
    expect_error(dir, "not a regular file");
    /* The data size comes from the header: a header declaring more than
     * the file holds is refused before the data is read. */
    expect_error(write_raw("huge.npy", 1,
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }",
                           8),
                 "truncated data");
}
END_TEST

START_TEST(test_expectations)
{
    char err[512];
    const int64_t shape[2] = {4, 8};
    float data[32] = {0};
    const char *path = path_of("q.npy");
    ck_assert_int_eq(npy_write(path, NPY_DTYPE_F4, 2, shape, data, err, sizeof err), 0);
    npy_array a;
    const int64_t any_rows[2] = {-1, 8};
    ck_assert_int_eq(npy_read_expect(path, "--q", NPY_DTYPE_F4, 2, any_rows, &a, err, sizeof err),
                     0);
    npy_free(&a);
    ck_assert_int_eq(npy_read_expect(path, "--q", NPY_DTYPE_U2, 2, any_rows, &a, err, sizeof err),
                     -1);
    ck_assert_msg(strstr(err, "--q") && strstr(err, "dtype is <f4, expected <u2"), "%s", err);
    const int64_t rank3[3] = {4, 8, 1};
    ck_assert_int_eq(npy_read_expect(path, "--q", NPY_DTYPE_F4, 3, rank3, &a, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "has 2 dimensions, expected 3"), "%s", err);
    const int64_t wrong[2] = {4, 16};
    ck_assert_int_eq(npy_read_expect(path, "--q", NPY_DTYPE_F4, 2, wrong, &a, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "dimension 1 must be 16"), "%s", err);
}
END_TEST

static Suite *npy_suite(void)
{
    Suite *suite = suite_create("npy");
    TCase *tc = tcase_create("npy");
    tcase_add_unchecked_fixture(tc, make_dir, remove_dir);
    tcase_add_test(tc, test_round_trip_every_dtype);
    tcase_add_test(tc, test_numpy_written_files);
    tcase_add_test(tc, test_malformed_files);
    tcase_add_test(tc, test_expectations);
    suite_add_tcase(suite, tc);
    return suite;
}

int main(void)
{
    SRunner *runner = srunner_create(npy_suite());
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
