/* SPDX-License-Identifier: Apache-2.0 */
/* env.c — the one place libattnreg reads ATTNREG_* variables (attn_env_get,
 * which gives nothing to a privileged process), and ATTNREG_* variables
 * nobody reads. A typo (ATTNREG_BACKNED) would
 * otherwise be ignored in silence while the user believes a backend is
 * forced; the first registry opened with the environment enabled names it,
 * with the closest variable attnreg knows, once per process. */
#define _GNU_SOURCE /* secure_getenv */
#include <ctype.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

#define PREFIX "ATTNREG_"
#define PREFIX_LEN 8

/* Every ATTNREG_* variable read anywhere in attnreg, so none of them is
 * called unknown. Keep in step with the getenv() calls and scripts. */
static const char *const known[] = {
    /* libattnreg */
    "ATTNREG_CONF_PATH",
    "ATTNREG_BACKEND",
    "ATTNREG_DISABLE",
    "ATTNREG_LOG",
    "ATTNREG_LOG_FILE",
    "ATTNREG_PROBE_TIMEOUT",
    /* the MTP variant switch of the GPU test and bench programs (the library
     * reads none: the plugin takes [params] mtp_variant; cpu-ref its thread
     * count from [params] threads) */
    "ATTNREG_MTP_WGMMA",
    /* the attnreg command (run, verify) */
    "ATTNREG_DEVICE",
    /* the Python package (python/): the library to load; the build to bundle */
    "ATTNREG_LIBRARY",
    "ATTNREG_PREFIX",
    /* tests, benchmarks and scripts of this repository */
    "ATTNREG_TEST_SEED",
    "ATTNREG_SWEEP_CONFIGS",
    "ATTNREG_SWEEP_ONLY",
    "ATTNREG_SWEEP_VERBOSE",
    "ATTNREG_CPU_REF_PLUGIN",
    "ATTNREG_BENCH_LINEAR_BLOCKS",
    "ATTNREG_UPDATE_BASELINES",
    "ATTNREG_VERIFY_GPU_TEST_COUNT",
    "ATTNREG_CARRY",
    "ATTNREG_TEST_BUILD",
    "ATTNREG_TEST_CONF",
    "ATTNREG_PROPERTY_SECONDS", /* tests/python/test_property.py */
    "ATTNREG_PROPERTY_SEED",
};
#define NUM_KNOWN (sizeof known / sizeof known[0])

/* Longest name part compared; longer names are never close to a known one. */
#define NAME_MAX_COMPARED 64

/* Optimal string alignment distance (Levenshtein plus adjacent
 * transpositions, so BACKNED is one edit from BACKEND), case-insensitive. */
static size_t edit_distance(const char *a, size_t n, const char *b, size_t m)
{
    size_t d[NAME_MAX_COMPARED + 1][NAME_MAX_COMPARED + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            int ca = toupper((unsigned char)a[i - 1]), cb = toupper((unsigned char)b[j - 1]);
            size_t best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && ca == toupper((unsigned char)b[j - 2]) &&
                toupper((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[n][m];
}

/* The known variable closest to `name` (whole name, prefix included), or
 * NULL when none is close enough to be a plausible typo: at most two edits,
 * and fewer than a third of the longer name part. */
static const char *closest_known(const char *name, size_t len)
{
    const char *part = name + PREFIX_LEN;
    size_t n = len - PREFIX_LEN;
    if (n > NAME_MAX_COMPARED)
        return NULL;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (size_t k = 0; k < NUM_KNOWN; k++) {
        const char *kpart = known[k] + PREFIX_LEN;
        size_t m = strlen(kpart);
        size_t d = edit_distance(part, n, kpart, m);
        size_t longer = n > m ? n : m;
        if (d <= 2 && d * 3 < longer && d < best_d) {
            best = known[k];
            best_d = d;
        }
    }
    return best;
}

static int is_known(const char *name, size_t len)
{
    for (size_t k = 0; k < NUM_KNOWN; k++)
        if (strlen(known[k]) == len && strncmp(known[k], name, len) == 0)
            return 1;
    return 0;
}

static atomic_int env_checked;

void attn_env_check_once(const attn_logger *logger)
{
    if (atomic_exchange(&env_checked, 1) || attn_process_privileged())
        return;
    for (char **e = environ; e && *e; e++) {
        const char *entry = *e;
        const char *eq = strchr(entry, '=');
        size_t len = eq ? (size_t)(eq - entry) : strlen(entry);
        /* Any spelling of the prefix counts: attnreg_log is a typo too. */
        if (len <= PREFIX_LEN)
            continue;
        int prefixed = 1;
        for (size_t i = 0; i < PREFIX_LEN; i++)
            prefixed &= toupper((unsigned char)entry[i]) == PREFIX[i];
        if (!prefixed || is_known(entry, len))
            continue;
        const char *guess = closest_known(entry, len);
        int shown = len > 128 ? 128 : (int)len; /* a name, not a payload */
        if (guess)
            attn_log(logger, ATTN_LOG_WARN,
                     "environment variable %.*s is not one attnreg reads: did you mean %s?", shown,
                     entry, guess);
        else
            attn_log(logger, ATTN_LOG_WARN,
                     "environment variable %.*s is not one attnreg reads (it reads "
                     "ATTNREG_CONF_PATH, ATTNREG_BACKEND, ATTNREG_DISABLE, ATTNREG_LOG); "
                     "ignored",
                     shown, entry);
    }
}

int attn_process_privileged(void)
{
    /* AT_SECURE: setuid/setgid, file capabilities, an LSM transition. The
     * id comparison covers a process that changed ids itself. */
    return getauxval(AT_SECURE) != 0 || getuid() != geteuid() || getgid() != getegid();
}

const char *attn_env_get(const char *name)
{
    /* secure_getenv returns NULL when AT_SECURE is set; the id check covers
     * the rest of attn_process_privileged. */
    if (attn_process_privileged())
        return NULL;
    return secure_getenv(name);
}
