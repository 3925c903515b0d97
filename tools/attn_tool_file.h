/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attn_tool_file.h — how the code outside the library (the CLI, the .npy
 * reader/writer, the config.json reader) opens the files a user names.
 *
 * One rule for every such file:
 *   - in a privileged run (setuid/setgid, file capabilities) the file is
 *     opened, created and renamed with the caller's real user and group ids,
 *     never the owner's: a setuid attnreg must not read a root-only file or
 *     replace one for the user who runs it. Where the privilege cannot be
 *     set aside for the call (capabilities with unchanged ids), the file is
 *     refused;
 *   - an input must be a regular file: it is opened O_NONBLOCK (a FIFO
 *     would block the open), judged by fstat on that descriptor (no race
 *     with a rename), and O_CLOEXEC (no child inherits it);
 *   - an output is written to a temporary file beside it and renamed over
 *     it, so that a failed write leaves the old file, not half a new one.
 */
#ifndef ATTN_TOOL_FILE_H
#define ATTN_TOOL_FILE_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attn_tool_error.h"

typedef struct attn_tool_ids {
    uid_t euid;
    gid_t egid;
    int switched;
} attn_tool_ids;

/* Takes the caller's real ids as the effective ones (0), or says why a
 * privileged run cannot (-1, errno EPERM). */
static inline int attn_tool_as_caller(attn_tool_ids *ids)
{
    ids->euid = geteuid();
    ids->egid = getegid();
    ids->switched = 0;
    const uid_t ruid = getuid();
    const gid_t rgid = getgid();
    if (ruid == ids->euid && rgid == ids->egid) {
        /* Ids unchanged but AT_SECURE: privilege from file capabilities or
         * a security module, which a change of ids does not set aside. */
        if (getauxval(AT_SECURE)) {
            errno = EPERM;
            return -1;
        }
        return 0;
    }
    /* Group first: once the user id is the caller's, the group can no
     * longer be changed. */
    if (setegid(rgid) != 0 || seteuid(ruid) != 0) {
        int saved = errno;
        if (seteuid(ids->euid) != 0 || setegid(ids->egid) != 0)
            abort();
        errno = saved;
        return -1;
    }
    ids->switched = 1;
    return 0;
}

static inline void attn_tool_restore_ids(const attn_tool_ids *ids)
{
    /* The user id back first (it is what allows changing the group). Not
     * getting the privilege back is not a safe state to go on in. */
    if (ids->switched && (seteuid(ids->euid) != 0 || setegid(ids->egid) != 0))
        abort();
}

static inline const char *attn_tool_file_kind(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* The regular-file rule on an open descriptor (opened O_NONBLOCK): 0 with
 * its stat in *st and O_NONBLOCK cleared (reads of a regular file never
 * block; stdio gets an ordinary descriptor), or -1 with why not in `why`
 * (the descriptor stays open). Also the library's (core/fsafe.c). */
static inline int attn_fd_require_regular(int fd, struct stat *st, char *why, size_t size)
{
    if (fstat(fd, st) != 0) {
        snprintf(why, size, "%s", strerror(errno));
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, size, "%s, not a regular file", attn_tool_file_kind(st->st_mode));
        return -1;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return 0;
}

static inline int attn_tool_refuse_privileged(const char *path, const char *verb, char *err,
                                              size_t err_size)
{
    return attn_tool_fail(err, err_size,
                          "%s: refused in a privileged process: files named on the command "
                          "line are %s only with the caller's rights (%s)",
                          path, verb, strerror(errno));
}

/* Opens an input read-only under the rule above; its stat in *st. The
 * descriptor, or -1 with the sentence in err ("PATH: why"). */
static inline int attn_tool_open_input(const char *path, struct stat *st, char *err,
                                       size_t err_size)
{
    attn_tool_ids ids;
    if (attn_tool_as_caller(&ids) != 0)
        return attn_tool_refuse_privileged(path, "opened", err, err_size);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    int saved = errno;
    attn_tool_restore_ids(&ids);
    if (fd < 0)
        return attn_tool_fail(err, err_size, "%s: cannot open: %s", path, strerror(saved));
    char why[128];
    if (attn_fd_require_regular(fd, st, why, sizeof why) != 0) {
        close(fd);
        return attn_tool_fail(err, err_size, "%s: %s", path, why);
    }
    return fd;
}

/* Writes an output under the rule above: `write_fn(f, ctx)` fills a
 * temporary file beside `path` (0 = all written), which then replaces
 * `path`. An existing `path` must be a regular file. 0, or -1 with the
 * sentence in err. */
static inline int attn_tool_write_atomic(const char *path, int (*write_fn)(FILE *, void *),
                                         void *ctx, char *err, size_t err_size)
{
    attn_tool_ids ids;
    if (attn_tool_as_caller(&ids) != 0)
        return attn_tool_refuse_privileged(path, "written", err, err_size);
    int rc = -1;
    char *tmp = NULL;
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode)) {
        attn_tool_fail(err, err_size, "%s: %s, not a regular file", path,
                       attn_tool_file_kind(st.st_mode));
        goto out;
    }
    /* The rename would replace a file the caller may not write (its folder
     * permitting): refused as writing it in place would be. */
    if (exists && access(path, W_OK) != 0) {
        attn_tool_fail(err, err_size, "%s: %s", path, strerror(errno));
        goto out;
    }
    size_t n = strlen(path) + sizeof ".tmp-XXXXXX";
    tmp = malloc(n);
    if (!tmp) {
        attn_tool_fail(err, err_size, "%s: out of memory", path);
        goto out;
    }
    snprintf(tmp, n, "%s.tmp-XXXXXX", path);
    /* mkstemp, then FD_CLOEXEC (mkostemp needs _GNU_SOURCE in every
     * includer): the CLI runs no other thread that could exec meanwhile. */
    int fd = mkstemp(tmp);
    if (fd >= 0)
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    if (fd < 0) {
        attn_tool_fail(err, err_size, "%s: cannot create a temporary file beside it: %s", path,
                       strerror(errno));
        free(tmp);
        tmp = NULL;
        goto out;
    }
    /* mkostemp makes it 0600; an output gets what a plain create gives. */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask);
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        attn_tool_fail(err, err_size, "%s: %s", path, strerror(errno));
        close(fd);
        goto out;
    }
    int ok = write_fn(f, ctx) == 0;
    int saved = errno;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        ok = 0;
        saved = errno;
    }
    if (fclose(f) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        attn_tool_fail(err, err_size, "%s: write failed: %s", path, strerror(saved));
        goto out;
    }
    if (rename(tmp, path) != 0) {
        attn_tool_fail(err, err_size, "%s: %s", path, strerror(errno));
        goto out;
    }
    free(tmp);
    tmp = NULL;
    rc = 0;
out:
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    attn_tool_restore_ids(&ids);
    return rc;
}

#endif /* ATTN_TOOL_FILE_H */
