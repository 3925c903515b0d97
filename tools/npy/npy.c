/* SPDX-License-Identifier: Apache-2.0 */
/*
 * npy.c — see npy.h. The format: the magic "\x93NUMPY", a major and minor
 * version byte, the header length (2 bytes little-endian in 1.0, 4 bytes in
 * 2.0), then an ASCII Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and a newline, then the raw data.
 */
#include "npy.h"
#include "attn_tool_error.h"
#include "attn_tool_file.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

size_t npy_dtype_size(npy_dtype dtype)
{
    switch (dtype) {
    case NPY_DTYPE_I8:
        return 8;
    case NPY_DTYPE_F4:
    case NPY_DTYPE_I4:
        return 4;
    case NPY_DTYPE_F2:
    case NPY_DTYPE_U2:
        return 2;
    case NPY_DTYPE_U1:
        return 1;
    default:
        return 0;
    }
}

const char *npy_dtype_descr(npy_dtype dtype)
{
    switch (dtype) {
    case NPY_DTYPE_F4:
        return "<f4";
    case NPY_DTYPE_F2:
        return "<f2";
    case NPY_DTYPE_I4:
        return "<i4";
    case NPY_DTYPE_I8:
        return "<i8";
    case NPY_DTYPE_U1:
        return "|u1";
    case NPY_DTYPE_U2:
        return "<u2";
    default:
        return "?";
    }
}

void npy_free(npy_array *array)
{
    if (!array)
        return;
    free(array->data);
    memset(array, 0, sizeof *array);
}

/* ---- header parsing ------------------------------------------------------ */

typedef struct cursor {
    const char *at;
    const char *end;
} cursor;

static void skip_space(cursor *c)
{
    while (c->at < c->end && isspace((unsigned char)*c->at))
        c->at++;
}

static int take(cursor *c, char ch)
{
    skip_space(c);
    if (c->at < c->end && *c->at == ch) {
        c->at++;
        return 1;
    }
    return 0;
}

/* A quoted Python string ('...' or "...") without escapes, into out. */
static int take_string(cursor *c, char *out, size_t size)
{
    skip_space(c);
    if (c->at >= c->end || (*c->at != '\'' && *c->at != '"'))
        return 0;
    char quote = *c->at++;
    size_t n = 0;
    while (c->at < c->end && *c->at != quote) {
        if (n + 1 < size)
            out[n++] = *c->at;
        c->at++;
    }
    if (c->at >= c->end)
        return 0;
    c->at++;
    out[n] = '\0';
    return 1;
}

static int take_word(cursor *c, const char *word)
{
    skip_space(c);
    size_t n = strlen(word);
    if ((size_t)(c->end - c->at) >= n && memcmp(c->at, word, n) == 0) {
        c->at += n;
        return 1;
    }
    return 0;
}

static npy_dtype dtype_from_descr(const char *descr)
{
    static const struct {
        const char *descr;
        npy_dtype dtype;
    } known[] = {
        {"<f4", NPY_DTYPE_F4}, {"<f2", NPY_DTYPE_F2}, {"<i4", NPY_DTYPE_I4}, {"|u1", NPY_DTYPE_U1},
        {"<u1", NPY_DTYPE_U1}, {"<u2", NPY_DTYPE_U2}, {"<i8", NPY_DTYPE_I8},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(descr, known[i].descr) == 0)
            return known[i].dtype;
    return NPY_DTYPE_INVALID;
}

static int parse_header(const char *text, size_t length, const char *name, npy_array *array,
                        char *err, size_t err_size)
{
    cursor c = {text, text + length};
    int have_descr = 0, have_order = 0, have_shape = 0;
    if (!take(&c, '{'))
        return attn_tool_fail(err, err_size, "%s: malformed .npy header (no '{')", name);
    for (;;) {
        if (take(&c, '}'))
            break;
        char key[32];
        if (!take_string(&c, key, sizeof key) || !take(&c, ':'))
            return attn_tool_fail(err, err_size, "%s: malformed .npy header (expected 'key':)",
                                  name);
        if (strcmp(key, "descr") == 0) {
            char descr[32];
            if (!take_string(&c, descr, sizeof descr))
                return attn_tool_fail(err, err_size,
                                      "%s: malformed .npy header (descr is not a string; "
                                      "structured dtypes are not supported)",
                                      name);
            array->dtype = dtype_from_descr(descr);
            if (array->dtype == NPY_DTYPE_INVALID) {
                if (descr[0] == '>')
                    return attn_tool_fail(err, err_size,
                                          "%s: big-endian dtype '%s' is not supported (save as "
                                          "little-endian)",
                                          name, descr);
                return attn_tool_fail(
                    err, err_size,
                    "%s: dtype '%s' is not supported (use <f4, <f2, <i4, <i8, |u1 or <u2)", name,
                    descr);
            }
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (take_word(&c, "True"))
                return attn_tool_fail(
                    err, err_size,
                    "%s: Fortran-ordered arrays are not supported (save a C-contiguous "
                    "array, e.g. numpy.ascontiguousarray)",
                    name);
            if (!take_word(&c, "False"))
                return attn_tool_fail(err, err_size, "%s: malformed .npy header (fortran_order)",
                                      name);
            have_order = 1;
        } else if (strcmp(key, "shape") == 0) {
            if (!take(&c, '('))
                return attn_tool_fail(err, err_size,
                                      "%s: malformed .npy header (shape is not a tuple)", name);
            array->ndim = 0;
            for (;;) {
                if (take(&c, ')'))
                    break;
                skip_space(&c);
                if (c.at >= c.end || !isdigit((unsigned char)*c.at))
                    return attn_tool_fail(err, err_size, "%s: malformed .npy header (shape entry)",
                                          name);
                if (array->ndim >= NPY_MAX_DIMS)
                    return attn_tool_fail(err, err_size, "%s: more than %d dimensions", name,
                                          NPY_MAX_DIMS);
                int64_t v = 0;
                while (c.at < c.end && isdigit((unsigned char)*c.at)) {
                    if (v > (INT64_MAX - 9) / 10)
                        return attn_tool_fail(err, err_size, "%s: shape entry too large", name);
                    v = v * 10 + (*c.at++ - '0');
                }
                take_word(&c, "L"); /* Python 2 longs */
                array->shape[array->ndim++] = v;
                if (!take(&c, ',')) {
                    if (!take(&c, ')'))
                        return attn_tool_fail(err, err_size, "%s: malformed .npy header (shape)",
                                              name);
                    break;
                }
            }
            have_shape = 1;
        } else {
            return attn_tool_fail(err, err_size, "%s: unexpected key '%s' in .npy header", name,
                                  key);
        }
        if (!take(&c, ',')) {
            if (!take(&c, '}'))
                return attn_tool_fail(err, err_size,
                                      "%s: malformed .npy header (expected ',' or '}')", name);
            break;
        }
    }
    if (!have_descr || !have_order || !have_shape)
        return attn_tool_fail(err, err_size, "%s: .npy header lacks %s", name,
                              !have_descr   ? "descr"
                              : !have_order ? "fortran_order"
                                            : "shape");
    return 0;
}

/* Parses the preamble and header of an image of `size` bytes (the header
 * must be whole in it): fills array (no data) and *data_start. */
static int parse_preamble(const unsigned char *b, size_t size, const char *name, npy_array *array,
                          size_t *data_start, size_t *want, char *err, size_t err_size);

int npy_parse_header(const void *bytes, size_t size, const char *name, npy_array *array,
                     size_t *data_bytes, char *err, size_t err_size)
{
    size_t start;
    return parse_preamble(bytes, size, name, array, &start, data_bytes, err, err_size);
}

int npy_parse(const void *bytes, size_t size, const char *name, npy_array *array, char *err,
              size_t err_size)
{
    const unsigned char *b = bytes;
    size_t start, want;
    if (parse_preamble(b, size, name, array, &start, &want, err, err_size) != 0)
        return -1;
    size_t have = size - start;
    if (have < want)
        return attn_tool_fail(err, err_size,
                              "%s: truncated data: the shape needs %zu bytes, the file has %zu",
                              name, want, have);
    if (have > want)
        return attn_tool_fail(err, err_size,
                              "%s: %zu bytes of data after the %zu the shape describes", name,
                              have - want, want);
    array->data = malloc(want ? want : 1);
    if (!array->data)
        return attn_tool_fail(err, err_size, "%s: out of memory", name);
    memcpy(array->data, b + start, want);
    return 0;
}

static int parse_preamble(const unsigned char *b, size_t size, const char *name, npy_array *array,
                          size_t *data_start, size_t *want_out, char *err, size_t err_size)
{
    memset(array, 0, sizeof *array);
    if (size < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return attn_tool_fail(err, err_size, "%s: not a .npy file (no \\x93NUMPY magic)", name);
    int major = b[6], minor = b[7];
    size_t header_len, header_start;
    if (major == 1) {
        header_len = (size_t)b[8] | (size_t)b[9] << 8;
        header_start = 10;
    } else if (major == 2 || major == 3) {
        if (size < 12)
            return attn_tool_fail(err, err_size, "%s: truncated .npy header", name);
        header_len = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        header_start = 12;
    } else {
        return attn_tool_fail(err, err_size,
                              "%s: .npy format version %d.%d is not supported (1.0, 2.0)", name,
                              major, minor);
    }
    if (header_len > size - header_start)
        return attn_tool_fail(err, err_size,
                              "%s: truncated .npy header (%zu bytes declared, %zu present)", name,
                              header_len, size - header_start);
    if (parse_header((const char *)b + header_start, header_len, name, array, err, err_size) != 0)
        return -1;
    size_t count = 1;
    for (int i = 0; i < array->ndim; i++) {
        if (array->shape[i] != 0 && count > SIZE_MAX / 16 / (size_t)array->shape[i])
            return attn_tool_fail(err, err_size, "%s: shape too large", name);
        count *= (size_t)array->shape[i];
    }
    array->count = count;
    *want_out = count * npy_dtype_size(array->dtype);
    *data_start = header_start + header_len;
    return 0;
}

/* read() until `size` bytes or end of file; the count read, or -1. */
static ssize_t read_full(int fd, unsigned char *buf, size_t size)
{
    size_t n = 0;
    while (n < size) {
        ssize_t r = read(fd, buf + n, size - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        n += (size_t)r;
    }
    return (ssize_t)n;
}

/* Longest .npy header read (NumPy writes well under 1 KiB). */
#define NPY_MAX_HEADER (1 << 20)

int npy_read(const char *path, npy_array *array, char *err, size_t err_size)
{
    memset(array, 0, sizeof *array);
    /* A regular file, opened with the caller's rights (attn_tool_file.h). */
    struct stat st;
    int fd = attn_tool_open_input(path, &st, err, err_size);
    if (fd < 0)
        return -1;
    /* The preamble and header first, then exactly the data the header
     * declares: the file's size must agree before anything big is read. */
    unsigned char pre[12];
    ssize_t got = read_full(fd, pre, sizeof pre);
    size_t header_end = 0;
    if (got >= 10 && memcmp(pre, "\x93NUMPY", 6) == 0) {
        if (pre[6] == 1)
            header_end = 10 + ((size_t)pre[8] | (size_t)pre[9] << 8);
        else if (got == 12)
            header_end = 12 + ((size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
                               (size_t)pre[11] << 24);
    }
    if (got < 0 || header_end == 0 || header_end > NPY_MAX_HEADER ||
        (off_t)header_end > st.st_size) {
        close(fd);
        if (got < 0)
            return attn_tool_fail(err, err_size, "%s: read error: %s", path, strerror(errno));
        /* Let the parser say what is wrong with what there is. */
        return npy_parse(pre, got > 0 ? (size_t)got : 0, path, array, err, err_size) == 0
                   ? attn_tool_fail(err, err_size, "%s: .npy header longer than %d bytes", path,
                                    NPY_MAX_HEADER)
                   : -1;
    }
    size_t total = (size_t)st.st_size;
    unsigned char *bytes = malloc(header_end);
    if (!bytes) {
        close(fd);
        return attn_tool_fail(err, err_size, "%s: out of memory", path);
    }
    memcpy(bytes, pre, (size_t)got);
    if (read_full(fd, bytes + got, header_end - (size_t)got) !=
        (ssize_t)(header_end - (size_t)got)) {
        free(bytes);
        close(fd);
        return attn_tool_fail(err, err_size, "%s: read error", path);
    }
    /* The header parsed on its own, with the data size the file claims. */
    npy_array head;
    char inner[512];
    size_t want = 0;
    int rc = npy_parse_header(bytes, header_end, path, &head, &want, inner, sizeof inner);
    if (rc != 0) {
        free(bytes);
        close(fd);
        return attn_tool_fail(err, err_size, "%s", inner);
    }
    if (total - header_end != want) {
        free(bytes);
        close(fd);
        if (total - header_end < want)
            return attn_tool_fail(err, err_size,
                                  "%s: truncated data: the shape needs %zu bytes, the file has %zu",
                                  path, want, total - header_end);
        return attn_tool_fail(err, err_size,
                              "%s: %zu bytes of data after the %zu the shape describes", path,
                              total - header_end - want, want);
    }
    *array = head;
    array->data = malloc(want ? want : 1);
    if (!array->data) {
        free(bytes);
        close(fd);
        return attn_tool_fail(err, err_size, "%s: out of memory", path);
    }
    ssize_t data = read_full(fd, array->data, want);
    unsigned char extra;
    ssize_t more = data == (ssize_t)want ? read_full(fd, &extra, 1) : 0;
    free(bytes);
    close(fd);
    if (data != (ssize_t)want || more != 0) {
        npy_free(array);
        return attn_tool_fail(err, err_size, "%s: the file changed while it was read", path);
    }
    return 0;
}

static void format_shape(const int64_t *shape, int ndim, char *out, size_t size)
{
    size_t n = (size_t)snprintf(out, size, "(");
    for (int i = 0; i < ndim && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "%s%" PRId64, i ? ", " : "", shape[i]);
    if (n < size)
        snprintf(out + n, size - n, ndim == 1 ? ",)" : ")");
}

int npy_read_expect(const char *path, const char *what, npy_dtype dtype, int ndim,
                    const int64_t *shape, npy_array *array, char *err, size_t err_size)
{
    char inner[512];
    if (npy_read(path, array, inner, sizeof inner) != 0)
        return attn_tool_fail(err, err_size, "%s: %s", what, inner);
    char got[128], want[128];
    format_shape(array->shape, array->ndim, got, sizeof got);
    if (array->dtype != dtype) {
        attn_tool_fail(err, err_size, "%s (%s): dtype is %s, expected %s", what, path,
                       npy_dtype_descr(array->dtype), npy_dtype_descr(dtype));
        npy_free(array);
        return -1;
    }
    if (array->ndim != ndim) {
        attn_tool_fail(err, err_size, "%s (%s): shape %s has %d dimensions, expected %d", what,
                       path, got, array->ndim, ndim);
        npy_free(array);
        return -1;
    }
    for (int i = 0; shape && i < ndim; i++) {
        if (shape[i] >= 0 && array->shape[i] != shape[i]) {
            format_shape(shape, ndim, want, sizeof want);
            attn_tool_fail(err, err_size,
                           "%s (%s): shape %s, but dimension %d must be %" PRId64
                           " (expected %s, -1 = any)",
                           what, path, got, i, shape[i], want);
            npy_free(array);
            return -1;
        }
    }
    return 0;
}

/* What npy_write_to writes: the padded header, then the data. */
typedef struct npy_out {
    const char *header;
    size_t header_len;
    const void *data;
    size_t item_size, count;
} npy_out;

static int npy_write_to(FILE *f, void *ctx);

int npy_write(const char *path, npy_dtype dtype, int ndim, const int64_t *shape, const void *data,
              char *err, size_t err_size)
{
    if (npy_dtype_size(dtype) == 0)
        return attn_tool_fail(err, err_size, "%s: cannot write dtype code %d", path, (int)dtype);
    if (ndim < 0 || ndim > NPY_MAX_DIMS)
        return attn_tool_fail(err, err_size, "%s: cannot write %d dimensions", path, ndim);
    char shape_text[256];
    format_shape(shape, ndim, shape_text, sizeof shape_text);
    char header[1024];
    int n =
        snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                 npy_dtype_descr(dtype), shape_text);
    if (n < 0 || (size_t)n + 64 >= sizeof header)
        return attn_tool_fail(err, err_size, "%s: header too long", path);
    /* Pad with spaces so that magic + version + length + header is a
     * multiple of 64 (what NumPy writes), ending with a newline. */
    size_t total = 10 + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t header_len = padded - 10;
    memset(header + n, ' ', header_len - (size_t)n - 1);
    header[header_len - 1] = '\n';
    size_t count = 1;
    for (int i = 0; i < ndim; i++)
        count *= (size_t)shape[i];
    npy_out out = {header, header_len, data, npy_dtype_size(dtype), count};
    return attn_tool_write_atomic(path, npy_write_to, &out, err, err_size);
}

static int npy_write_to(FILE *f, void *ctx)
{
    const npy_out *o = ctx;
    const size_t header_len = o->header_len;
    unsigned char preamble[10] = {0x93,
                                  'N',
                                  'U',
                                  'M',
                                  'P',
                                  'Y',
                                  1,
                                  0,
                                  (unsigned char)(header_len & 0xFF),
                                  (unsigned char)(header_len >> 8)};
    int ok = fwrite(preamble, 1, sizeof preamble, f) == sizeof preamble &&
             fwrite(o->header, 1, header_len, f) == header_len &&
             (o->count == 0 || fwrite(o->data, o->item_size, o->count, f) == o->count);
    return ok ? 0 : -1;
}
