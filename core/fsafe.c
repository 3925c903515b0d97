/* fsafe.c — opening the files the registry reads (conf files, plugin
 * libraries) only when they are what they claim to be, and judging whether
 * they can be trusted: a FIFO would block a reader forever, a device would be
 * read without end, and a file that another user can write lets that user
 * run code in this process. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attn_tool_file.h"
#include "diag.h"
#include "internal.h"

int attn_open_regular(const char *path, struct stat *st, char *why, size_t size)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
     * writer; fstat then tells what was opened, with no race against a
     * rename between a stat and the open. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, size, "%s", strerror(errno));
        return -1;
    }
    if (attn_fd_require_regular(fd, st, why, size) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int attn_open_append_regular(const char *path, char *why, size_t size)
{
    /* The reader's rule for the log file: O_NONBLOCK so that a FIFO opens
     * (or fails with ENXIO) at once instead of waiting for a reader, fstat
     * on the descriptor itself, and O_CLOEXEC so that no child a host execs
     * inherits the descriptor. */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0) {
        snprintf(why, size, "%s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (attn_fd_require_regular(fd, &st, why, size) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int attn_trust_check(attn_registry *reg, const struct stat *st, const char *path, const char *what,
                     const char *plugin, attn_status refuse_status)
{
    const int privileged = attn_process_privileged();
    const uid_t euid = geteuid();
    char problem[160] = "";
    if (st->st_mode & S_IWOTH)
        snprintf(problem, sizeof problem, "is writable by every user (mode %04o)",
                 (unsigned)(st->st_mode & 07777));
    else if (privileged && (st->st_mode & S_IWGRP))
        snprintf(problem, sizeof problem, "is writable by its group (mode %04o)",
                 (unsigned)(st->st_mode & 07777));
    else if (st->st_uid != 0 && st->st_uid != euid)
        snprintf(problem, sizeof problem, "is owned by uid %u, neither root nor this process's %u",
                 (unsigned)st->st_uid, (unsigned)euid);
    if (!problem[0])
        return 0;
    if (privileged) {
        attn_diag_add(reg, refuse_status, path, 0, plugin,
                      "%s %s %s; refused in a privileged (setuid/setgid) process", what, path,
                      problem);
        return -1;
    }
    attn_diag_add(reg, ATTN_OK, path, 0, plugin,
                  "warning: %s %s %s; anyone who can write it can run code in every "
                  "process that loads it",
                  what, path, problem);
    return 1;
}
