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

#include "diag.h"
#include "internal.h"

static const char *kind_name(mode_t mode)
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
    if (fstat(fd, st) != 0) {
        snprintf(why, size, "%s", strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, size, "%s, not a regular file", kind_name(st->st_mode));
        close(fd);
        return -1;
    }
    /* Reads of a regular file never block; clear the flag anyway so that
     * stdio sees an ordinary descriptor. */
    int flags = fcntl(fd, F_GETFL);
    if (flags >= 0)
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
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
