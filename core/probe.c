/* SPDX-License-Identifier: Apache-2.0 */
/* probe.c — loading a plugin out of process first (the registry option
 * probe_out_of_process; `attnreg check` uses it), so that a plugin whose
 * constructor or init crashes, calls exit() or never returns fails as a
 * plugin instead of taking the host down.
 *
 * The child is a fresh program, <libdir>/attnreg/attnreg-probe, not a fork
 * that goes on running the library: a forked copy of a multithreaded host
 * holds every lock another host thread held at fork time (the registry's,
 * malloc's, the dynamic loader's), and a child that took one deadlocked.
 * Between the fork and the exec the child makes async-signal-safe system
 * calls only.
 *
 * The child is made with exit signal 0 (clone, not fork) and never execs
 * (an exec would make its exit signal SIGCHLD again): it is then not a child
 * that SIGCHLD's disposition concerns. A host that ignores SIGCHLD (which
 * makes the kernel reap its children) or reaps every child in a handler
 * (waitpid(-1)) cannot take it away from the waitpid here, which asks for
 * that pid with __WCLONE. It starts the helper and reports the helper's wait
 * status through the pipe. */
#define _GNU_SOURCE /* dladdr, syscall, __WCLONE, AT_EMPTY_PATH */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

/* This library's own path (absolute: the helper loads it by that path) and
 * the helper's, beside the plugins. 0 when the library cannot tell. */
static int probe_paths(char **library, char **helper)
{
    Dl_info info;
    char real[PATH_MAX];
    if (!dladdr((void *)attn_registry_open, &info) || !info.dli_fname ||
        !realpath(info.dli_fname, real))
        return 0;
    const char *slash = strrchr(real, '/');
    *library = attn_strdup(real);
    *helper = attn_asprintf("%.*s/attnreg/%s", (int)(slash - real), real, ATTN_PROBE_HELPER_NAME);
    if (*library && *helper)
        return 1;
    free(*library);
    free(*helper);
    return 0;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The helper's arguments: the result descriptor, then what the load needs
 * of the candidate (library, name, conf file and line, the params). */
static char **helper_argv(const attn_candidate *c, const char *helper, const char *library, int fd,
                          char *fd_text, size_t fd_size, char *line_text, size_t line_size)
{
    char **argv = calloc(9 + 2 * (size_t)c->num_params, sizeof *argv);
    if (!argv)
        return NULL;
    snprintf(fd_text, fd_size, "%d", fd);
    snprintf(line_text, line_size, "%d", (int)c->name_line);
    size_t n = 0;
    argv[n++] = (char *)helper;
    argv[n++] = (char *)library;
    argv[n++] = fd_text;
    argv[n++] = c->library;
    argv[n++] = c->name;
    argv[n++] = c->conf_file ? c->conf_file : "";
    argv[n++] = line_text;
    for (uint32_t i = 0; i < c->num_params; i++) {
        argv[n++] = (char *)(c->params[i].key ? c->params[i].key : "");
        argv[n++] = (char *)(c->params[i].value ? c->params[i].value : "");
    }
    argv[n] = NULL;
    return argv;
}

/* The child's side, between the clone and the exec: async-signal-safe
 * system calls only (the child is a copy of a host whose other threads may
 * hold any lock). It stays a copy that never execs (its exit signal stays
 * none, so the host's SIGCHLD disposition cannot reap it): with SIGCHLD at
 * its default, it starts the helper as its own child, reports the helper's
 * pid and, when the helper has ended, its wait status; then it ends. */
static void probe_child(int exe, int out, char **argv, char **envp)
{
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &dfl, NULL); /* an ignored SIGCHLD would reap the helper */
    pid_t helper = (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
    if (helper == 0) {
        if (fcntl(out, F_SETFD, 0) == 0)
            syscall(SYS_execveat, exe, "", argv, envp, AT_EMPTY_PATH);
        const char failed = 'E';
        ssize_t w = write(out, &failed, 1);
        _exit(w == 1 ? 127 : 126);
    }
    if (helper < 0)
        _exit(125);
    char msg[1 + sizeof(int32_t)];
    int32_t value = (int32_t)helper;
    msg[0] = 'P';
    memcpy(msg + 1, &value, sizeof value);
    ssize_t w = write(out, msg, sizeof msg);
    int status = 0;
    pid_t got;
    do
        got = waitpid(helper, &status, 0);
    while (got < 0 && errno == EINTR);
    value = got == helper ? (int32_t)status : -1;
    msg[0] = 'S';
    memcpy(msg + 1, &value, sizeof value);
    w = write(out, msg, sizeof msg);
    _exit(w == (ssize_t)sizeof msg ? 0 : 1);
}

/* What the probe learnt from the child's pipe. */
typedef struct probe_report {
    pid_t helper;    /* 0 until reported */
    char loaded;     /* 'K' or 'F' from the helper, 'E' when it could not be run */
    int have_status; /* the helper's wait status arrived */
    int status;
} probe_report;

/* Parses what arrived (messages never straddle a read: each is one write
 * of at most PIPE_BUF bytes). */
static void parse_report(probe_report *r, const char *buf, size_t n)
{
    for (size_t i = 0; i < n;) {
        char kind = buf[i];
        int32_t value = 0;
        if ((kind == 'P' || kind == 'S') && i + 1 + sizeof value <= n) {
            memcpy(&value, buf + i + 1, sizeof value);
            if (kind == 'P')
                r->helper = (pid_t)value;
            else if (value >= 0) {
                r->have_status = 1;
                r->status = value;
            }
            i += 1 + sizeof value;
        } else {
            if (kind == 'K' || kind == 'F' || kind == 'E')
                r->loaded = kind;
            i++;
        }
    }
}

/* Reads the pipe until its end or `deadline` (ms, monotonic); across EINTR
 * the wait resumes for what is left. 1 at the end of the pipe, 0 at the
 * deadline. */
static int read_report(int fd, long long deadline, probe_report *r)
{
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {fd, POLLIN, 0};
        int ready = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0)
            return 1;
        if (ready == 0)
            continue;
        char buf[256];
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 1;
        parse_report(r, buf, (size_t)n);
    }
}

int attn_probe_in_child(attn_candidate *c, char *msg, size_t size)
{
    char *self = NULL, *helper = NULL;
    if (!probe_paths(&self, &helper)) {
        snprintf(msg, size, "cannot load out of process: this library's folder is unknown");
        return 0;
    }
    /* The helper is opened once, judged like a plugin library (a privileged
     * process runs no helper that another user could have replaced) and
     * executed from that descriptor, so nothing can swap it in between. */
    struct stat st;
    char why[256];
    int exe = attn_open_regular(helper, &st, why, sizeof why);
    if (exe < 0) {
        snprintf(msg, size, "cannot load out of process: probe helper %s: %s", helper, why);
        free(helper);
        free(self);
        return 0;
    }
    if (attn_trust_check(c->registry, &st, helper, "probe helper", c->name, ATTN_ERR_LOAD) < 0) {
        snprintf(msg, size, "cannot load out of process: probe helper %s is not to be trusted",
                 helper);
        close(exe);
        free(helper);
        free(self);
        return 0;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(msg, size, "cannot load out of process: pipe: %s", strerror(errno));
        close(exe);
        free(helper);
        free(self);
        return 0;
    }
    char fd_text[16], line_text[16];
    char **argv =
        helper_argv(c, helper, self, fds[1], fd_text, sizeof fd_text, line_text, sizeof line_text);
    /* A privileged host's helper gets no environment: the library reads
     * none in a privileged process, and the helper, which runs with the
     * host's ids, should not see the caller's either (the kernel also marks
     * that exec secure, so the dynamic loader ignores LD_*; this does not
     * rely on it). */
    static char *no_environment[] = {NULL};
    char **envp = attn_process_privileged() ? no_environment : environ;
    /* No host signal handler may run in the child: every signal is blocked
     * across the clone (the helper unblocks them). */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* Flags 0: a copy of this process like fork(), whose exit signal is
     * none (see the top of the file); no atfork handler runs. */
    const int have_argv = argv != NULL;
    pid_t pid = have_argv ? (pid_t)syscall(SYS_clone, 0L, 0L, 0L, 0L, 0L) : -1;
    if (pid == 0)
        probe_child(exe, fds[1], argv, envp);
    int clone_errno = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(fds[1]);
    close(exe);
    free(argv);
    if (pid < 0) {
        snprintf(msg, size, "cannot load out of process: clone: %s",
                 strerror(have_argv ? clone_errno : ENOMEM));
        close(fds[0]);
        free(helper);
        free(self);
        return 0;
    }
    /* The wait has a deadline: a constructor that never returns is killed,
     * and an interval timer's EINTR does not restart the timeout. */
    const int timeout_s = c->registry->probe_timeout_s > 0 ? c->registry->probe_timeout_s
                                                           : ATTN_PROBE_TIMEOUT_DEFAULT_S;
    probe_report r = {0, 0, 0, 0};
    int ended = read_report(fds[0], now_ms() + (long long)timeout_s * 1000, &r);
    if (!ended) {
        kill(r.helper > 0 ? r.helper : pid, SIGKILL);
        /* The child then reports the helper's end; it is not waited for
         * without bound either. */
        read_report(fds[0], now_ms() + 5000, &r);
        if (!r.have_status)
            kill(pid, SIGKILL);
    }
    close(fds[0]);
    int child_status;
    while (waitpid(pid, &child_status, __WCLONE) < 0 && errno == EINTR)
        ;
    int rc = 0;
    if (r.loaded == 'K' || r.loaded == 'F')
        rc = 1;
    else if (r.loaded == 'E')
        snprintf(msg, size, "cannot load out of process: probe helper %s could not be run", helper);
    else if (!ended)
        snprintf(msg, size, "did not finish loading within %d s (killed)", timeout_s);
    else if (!r.have_status)
        snprintf(msg, size, "died while loading (its wait status was not reported)");
    else if (WIFSIGNALED(r.status))
        snprintf(msg, size, "crashed while loading (signal %d, %s)", WTERMSIG(r.status),
                 strsignal(WTERMSIG(r.status)));
    else if (WIFEXITED(r.status))
        snprintf(msg, size, "called exit(%d) while loading", WEXITSTATUS(r.status));
    else
        snprintf(msg, size, "died while loading (wait status %d)", r.status);
    free(helper);
    free(self);
    return rc;
}
