/* SPDX-License-Identifier: Apache-2.0 */
/*
 * npy.h — a small reader and writer for NumPy's .npy format.
 *
 * Reads format versions 1.0 and 2.0 and writes 1.0. Only what attnreg moves
 * is supported: little-endian, C order, and the dtypes
 *   <f4 (float32)  <f2 (float16)  <i4 (int32)  |u1 (uint8)  <u2 (uint16).
 * bf16 and fp8 tensors travel as raw <u2 / |u1 bits; which format they hold
 * is said by the caller (a command-line flag), not by the file.
 *
 * Every failure returns -1 and a one-sentence message naming the file and
 * the problem (wrong dtype, wrong rank, wrong size, truncated data, Fortran
 * order, a malformed header, an I/O error).
 */
#ifndef ATTNREG_NPY_H
#define ATTNREG_NPY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum npy_dtype {
    NPY_DTYPE_INVALID = 0,
    NPY_DTYPE_F4 = 1, /* <f4 */
    NPY_DTYPE_F2 = 2, /* <f2 */
    NPY_DTYPE_I4 = 3, /* <i4 */
    NPY_DTYPE_U1 = 4, /* |u1 */
    NPY_DTYPE_U2 = 5, /* <u2 */
    NPY_DTYPE_I8 = 6  /* <i8: vLLM's int64 slot mapping (attnreg run --slot-mapping) */
} npy_dtype;

#define NPY_MAX_DIMS 8

typedef struct npy_array {
    npy_dtype dtype;
    int ndim; /* 0 = a scalar (one element) */
    int64_t shape[NPY_MAX_DIMS];
    size_t count; /* elements: the product of shape */
    void *data;   /* count x npy_dtype_size(dtype) bytes, malloc'd */
} npy_array;

size_t npy_dtype_size(npy_dtype dtype);
/* The descr string of a dtype ("<f4"), or "?" */
const char *npy_dtype_descr(npy_dtype dtype);

/* Reads a whole .npy file. On success the caller frees with npy_free. */
int npy_read(const char *path, npy_array *array, char *err, size_t err_size);

/* Reads and checks: dtype must equal `dtype`, the rank must equal `ndim`,
 * and each dimension must equal `shape[i]` unless that is -1 (any). The
 * message names `what` (e.g. "--q") and the first mismatch. */
int npy_read_expect(const char *path, const char *what, npy_dtype dtype, int ndim,
                    const int64_t *shape, npy_array *array, char *err, size_t err_size);

/* Parses an in-memory .npy image (the file's bytes); `name` is used in
 * messages. */
/* The preamble and header only (bytes holds at least them): fills array
 * without data and *data_bytes with the data size the header declares. */
int npy_parse_header(const void *bytes, size_t size, const char *name, npy_array *array,
                     size_t *data_bytes, char *err, size_t err_size);
int npy_parse(const void *bytes, size_t size, const char *name, npy_array *array, char *err,
              size_t err_size);

/* Writes a version 1.0 file. */
int npy_write(const char *path, npy_dtype dtype, int ndim, const int64_t *shape, const void *data,
              char *err, size_t err_size);

void npy_free(npy_array *array);

#ifdef __cplusplus
}
#endif

#endif /* ATTNREG_NPY_H */
