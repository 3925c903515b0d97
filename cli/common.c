/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common.c — what every command shares: the SHAPE and common flags, opening
 * the registry, exit codes, and printing a selection.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attn_tool_error.h"
#include "cli.h"

int cli_is_help_flag(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, CLI_HELP_FLAG) == 0;
}

int cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    char raw[1024], message[1024];
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    /* Usage errors quote the argument: its control bytes are escaped. */
    attn_escape_controls(message, sizeof message, raw, 0);
    fprintf(stderr, "attnreg: %s\n", message);
    cli_json_error("USAGE", message, CLI_EXIT_USAGE);
    if (cli_command_name())
        fprintf(stderr, "Try 'attnreg %s --help'.\n", cli_command_name());
    else
        fputs("Try 'attnreg --help'.\n", stderr);
    return CLI_EXIT_USAGE;
}

/* The exit codes of the statuses' classes are those of attn_types.h's
 * ATTN_STATUS_CLASS_MAP: a status is mapped through its class alone. */
#define CHECK_CLASS_EXIT_(CLASS, name, exit_code)                                                  \
    _Static_assert(CLI_EXIT_##CLASS == exit_code, "CLI_EXIT_" #CLASS);
ATTN_STATUS_CLASS_MAP(CHECK_CLASS_EXIT_)
#undef CHECK_CLASS_EXIT_

int cli_exit_from_status(attn_status status)
{
    /* INVALID_ARGUMENT from the library means the CLI passed something it
     * should not have: a bug here, not a user mistake (class internal). */
    return attn_status_exit_code(status);
}

const char *cli_exit_name(int exit_code)
{
    switch (exit_code) {
#define EXIT_NAME_(NAME, code, meaning)                                                            \
    case code:                                                                                     \
        return #NAME;
        CLI_EXIT_MAP(EXIT_NAME_)
#undef EXIT_NAME_
    }
    return "INTERNAL";
}

/* "a, b, c or d" (sep ", ", last " or ") into out, from a list's names; the
 * messages and --help lines that name every dtype or log level build theirs
 * from attn_types.h's lists with it. */
static const char *join_names(char *out, size_t cap, const char *const *names, size_t count,
                              const char *sep, const char *last)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t k = 0; k < count && used < cap; k++) {
        const char *before = k == 0 ? "" : k + 1 == count ? last : sep;
        int n = snprintf(out + used, cap - used, "%s%s", before, names[k]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    return out;
}

/* The dtypes a user can name (attn_types.h's ATTN_DTYPE_MAP but INVALID). */
static const char *dtype_names(char *out, size_t cap, const char *last)
{
    static const char *const names[] = {
#define DTYPE_NAME_(NAME, value, spelling, bytes, fp8) spelling,
        ATTN_DTYPE_MAP(DTYPE_NAME_)
#undef DTYPE_NAME_
    };
    _Static_assert(ATTN_DTYPE_INVALID == 0, "names[0] is INVALID's");
    return join_names(out, cap, names + 1, sizeof names / sizeof names[0] - 1, ", ", last);
}

/* The log levels (attn_types.h's ATTN_LOG_LEVEL_MAP). */
static const char *level_names(char *out, size_t cap, const char *last)
{
    static const char *const names[] = {
#define LEVEL_NAME_(NAME, value, name) name,
        ATTN_LOG_LEVEL_MAP(LEVEL_NAME_)
#undef LEVEL_NAME_
    };
    return join_names(out, cap, names, sizeof names / sizeof names[0], ", ", last);
}

int cli_report_failure(attn_status status, const char *message)
{
    if (!message || !*message)
        message = attn_last_error();
    if (!message || !*message)
        message = attn_status_message(status);
    /* The library escapes its diagnostics and logs; a selection message
     * also carries plugins' reason text, escaped here (one line per
     * candidate stays). */
    const size_t cap = strlen(message ? message : "") * 4 + 1;
    char *shown = malloc(cap);
    if (shown)
        attn_escape_controls(shown, cap, message ? message : "", 1);
    fprintf(stderr, "attnreg: %s: %s\n", attn_status_name(status), shown ? shown : "");
    free(shown);
    cli_json_error(attn_status_name(status), message, cli_exit_from_status(status));
    return cli_exit_from_status(status);
}

/* ---- flags ----------------------------------------------------------- */

int cli_flag_is(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

int cli_flag_index(const char *arg, const char *const *names, size_t count)
{
    for (size_t k = 0; k < count; k++)
        if (cli_flag_is(arg, names[k]))
            return (int)k;
    return -1;
}

const char *cli_flag_value(int argc, char **argv, int *i, const char *name)
{
    const char *eq = strchr(argv[*i], '=');
    if (eq)
        return eq + 1;
    if (*i + 1 >= argc) {
        cli_usage_error("%s: missing value", name);
        return NULL;
    }
    (*i)++;
    return argv[*i];
}

const char *cli_flag_text(int argc, char **argv, int *i, const char *name, const char *what)
{
    const char *value = cli_flag_value(argc, argv, i, name);
    if (value && !*value) {
        cli_usage_error("%s: empty %s", name, what);
        return NULL;
    }
    return value;
}

int cli_parse_int32(const char *flag, const char *value, int32_t min, int32_t max, int32_t *out)
{
    char *end = NULL;
    long parsed;
    /* strtol skips leading blanks and accepts an empty string as 0; neither
     * is a number a user meant, so check both before trusting it. */
    if (!*value || (*value != '-' && *value != '+' && (*value < '0' || *value > '9')))
        goto bad;
    errno = 0;
    parsed = strtol(value, &end, 10);
    if (*end != '\0')
        goto bad;
    if (errno == ERANGE || parsed < min || parsed > max) {
        cli_usage_error("%s: value '%s' out of range (expected an integer in [%ld, %ld])", flag,
                        value, (long)min, (long)max);
        return -1;
    }
    *out = (int32_t)parsed;
    return 0;
bad:
    if (max == INT32_MAX)
        cli_usage_error("%s: invalid value '%s' (expected an integer >= %ld)", flag, value,
                        (long)min);
    else
        cli_usage_error("%s: invalid value '%s' (expected an integer in [%ld, %ld])", flag, value,
                        (long)min, (long)max);
    return -1;
}

int cli_parse_dtype(const char *flag, const char *value, int32_t *out)
{
    attn_dtype dtype = attn_dtype_from_name(value);
    if (dtype == ATTN_DTYPE_INVALID) {
        char names[256];
        cli_usage_error("%s: unknown dtype '%s' (expected %s)", flag, value,
                        dtype_names(names, sizeof names, " or "));
        return -1;
    }
    *out = (int32_t)dtype;
    return 0;
}

int cli_parse_arch(const char *flag, const char *value, char out[ATTN_ARCH_MAX])
{
    if (!*value || strlen(value) >= ATTN_ARCH_MAX) {
        cli_usage_error("%s: invalid value '%s' (expected a name of 1 to %d characters, e.g. "
                        "gfx950, gfx942, sm_90, cpu)",
                        flag, value, ATTN_ARCH_MAX - 1);
        return -1;
    }
    memcpy(out, value, strlen(value) + 1);
    return 0;
}

static int parse_softcap(const char *flag, const char *value, float *out)
{
    char *end = NULL;
    double parsed;
    if (!*value || ((*value < '0' || *value > '9') && *value != '.' && *value != '+'))
        goto bad;
    errno = 0;
    parsed = strtod(value, &end);
    if (errno != 0 || *end != '\0' || !isfinite(parsed) || parsed < 0 || parsed > 1e30)
        goto bad;
    /* A positive value that float cannot hold (1e-50) would become 0, which
     * means "no softcap": refuse it rather than turn the cap off silently. */
    if (parsed > 0 && (float)parsed < FLT_MIN) {
        cli_usage_error("%s: value '%s' is too small for a float softcap (smallest %g; 0 = no "
                        "softcap)",
                        flag, value, (double)FLT_MIN);
        return -1;
    }
    *out = (float)parsed;
    return 0;
bad:
    cli_usage_error("%s: invalid value '%s' (expected a number >= 0; 0 = no softcap)", flag, value);
    return -1;
}

/* Parses a whole string as a window bound (an integer >= -1) without
 * printing, so the caller's one message can name the whole L,R value. */
static int parse_window_bound(const char *text, int32_t *out)
{
    char *end = NULL;
    long parsed;
    if (!*text || (*text != '-' && *text != '+' && (*text < '0' || *text > '9')))
        return -1;
    errno = 0;
    parsed = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || parsed < -1 || parsed > INT32_MAX)
        return -1;
    *out = (int32_t)parsed;
    return 0;
}

/* "L,R" with each side an integer >= -1 (-1 = unbounded). */
static int parse_window(const char *flag, const char *value, int32_t *left, int32_t *right)
{
    char left_text[32];
    const char *comma = strchr(value, ',');
    size_t left_len = comma ? (size_t)(comma - value) : 0;
    int32_t l, r;
    if (!comma || left_len >= sizeof left_text)
        goto bad;
    memcpy(left_text, value, left_len);
    left_text[left_len] = '\0';
    if (parse_window_bound(left_text, &l) != 0 || parse_window_bound(comma + 1, &r) != 0)
        goto bad;
    *left = l;
    *right = r;
    return 0;
bad:
    cli_usage_error("%s: invalid value '%s' (expected L,R: two integers >= -1, -1 = unbounded)",
                    flag, value);
    return -1;
}

static int parse_log_level(const char *flag, const char *value, int *out)
{
    /* The names of attn_types.h's ATTN_LOG_LEVEL_MAP, and "warning". */
#define LEVEL_IS_(NAME, level, name)                                                               \
    if (strcmp(value, name) == 0) {                                                                \
        *out = level;                                                                              \
        return 0;                                                                                  \
    }
    ATTN_LOG_LEVEL_MAP(LEVEL_IS_)
#undef LEVEL_IS_
    if (strcmp(value, "warning") == 0) {
        *out = ATTN_LOG_WARN;
        return 0;
    }
    char names[256];
    cli_usage_error("%s: unknown level '%s' (expected %s)", flag, value,
                    level_names(names, sizeof names, " or "));
    return -1;
}

void cli_common_init(struct cli_common *c, unsigned accept)
{
    memset(c, 0, sizeof *c);
    c->accept = accept;
    attn_shape_init(&c->shape);
    c->log_level = -1;
}

/* The SHAPE flags: attn_types.h's ATTN_SHAPE_FIELD_FLAG_MAP with what
 * cli_lists.h's CLI_FIELD_<member> lines add to each. */
static const struct cli_shape_flag shape_flags[] = {ATTN_SHAPE_FIELD_FLAG_MAP(CLI_SHAPE_FLAG_ROW_)};
_Static_assert(offsetof(attn_shape, window_right) == offsetof(attn_shape, window_left) + 4,
               "CLI_SHAPE_WINDOW writes window_left and the field after it");

static void *shape_member(attn_shape *shape, size_t offset)
{
    return (char *)shape + offset;
}

int cli_is_model_shape_flag(const char *arg)
{
    for (size_t k = 0; k < sizeof shape_flags / sizeof shape_flags[0]; k++)
        if (shape_flags[k].model_fixes && cli_flag_is(arg, shape_flags[k].name))
            return 1;
    return 0;
}

/* Flags without a value must not be written `--flag=value`. */
int cli_switch_flag(const char *arg, const char *name)
{
    if (arg[strlen(name)] == '=') {
        cli_usage_error("%s takes no value (got '%s')", name, arg);
        return -1;
    }
    return 1;
}

/* The SHAPE flags, or only the target ones (--arch, dtypes, --page-size)
 * when the command accepts CLI_ACCEPT_TARGET without CLI_ACCEPT_SHAPE. */
static int parse_shape_flag(struct cli_common *c, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    const char *value = NULL;
    const int whole_shape = (c->accept & CLI_ACCEPT_SHAPE) != 0;

    for (size_t k = 0; k < sizeof shape_flags / sizeof shape_flags[0]; k++) {
        const struct cli_shape_flag *f = &shape_flags[k];
        void *field = shape_member(&c->shape, f->offset);
        int rc;
        if (f->value == CLI_SHAPE_PAIRED || !cli_flag_is(arg, f->name) ||
            (!whole_shape && f->accept != CLI_ACCEPT_TARGET))
            continue;
        if (f->value == CLI_SHAPE_SET || f->value == CLI_SHAPE_CLEAR) {
            *(int32_t *)field = f->value == CLI_SHAPE_SET;
            return cli_switch_flag(arg, f->name);
        }
        if (!(value = cli_flag_value(argc, argv, i, f->name)))
            return -1;
        switch (f->value) {
        case CLI_SHAPE_ARCH:
            rc = cli_parse_arch(f->name, value, field);
            break;
        case CLI_SHAPE_INT:
            rc = cli_parse_int32(f->name, value, 0, INT32_MAX, field);
            break;
        case CLI_SHAPE_DTYPE:
            rc = cli_parse_dtype(f->name, value, field);
            break;
        case CLI_SHAPE_FLOAT:
            rc = parse_softcap(f->name, value, field);
            break;
        default: /* CLI_SHAPE_WINDOW */
            rc = parse_window(f->name, value, field, (int32_t *)field + 1);
            break;
        }
        if (rc != 0)
            return -1;
        c->given |= f->given_bit;
        return 1;
    }
    return 0;
}

/* cli_lists.h's CLI_COMMON_FLAG_MAP: the sets they belong to, their names,
 * and an ID per flag for the switch below. */
enum common_flag {
#define COMMON_FLAG_ENUM_(ID, accept, flag, VALUE) COMMON_##ID,
    CLI_COMMON_FLAG_MAP(COMMON_FLAG_ENUM_)
#undef COMMON_FLAG_ENUM_
};
static const struct {
    unsigned accept;
    const char *name;
} common_flags[] = {
#define COMMON_FLAG_ROW_(ID, accept, flag, VALUE) {accept, flag},
    CLI_COMMON_FLAG_MAP(COMMON_FLAG_ROW_)
#undef COMMON_FLAG_ROW_
};

int cli_parse_common_flag(struct cli_common *c, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    const char *value;
    int r;

    if (c->accept & (CLI_ACCEPT_SHAPE | CLI_ACCEPT_TARGET)) {
        r = parse_shape_flag(c, argc, argv, i);
        if (r != 0)
            return r;
    }
    for (size_t k = 0; k < sizeof common_flags / sizeof common_flags[0]; k++) {
        const char *name = common_flags[k].name;
        if (!(c->accept & common_flags[k].accept) || !cli_flag_is(arg, name))
            continue;
        switch ((enum common_flag)k) {
        case COMMON_CONF:
            if (!(value = cli_flag_text(argc, argv, i, name, "folder name")))
                return -1;
            if (c->num_conf_paths >= CLI_MAX_CONF_PATHS) {
                cli_usage_error("--conf: at most %d folders", CLI_MAX_CONF_PATHS);
                return -1;
            }
            c->conf_paths[c->num_conf_paths++] = value;
            return 1;
        case COMMON_CONF_ONLY:
            c->conf_only = 1;
            return cli_switch_flag(arg, name);
        case COMMON_BACKEND:
            if (!(value = cli_flag_text(argc, argv, i, name, "backend name")))
                return -1;
            c->backend = value;
            return 1;
        case COMMON_STRICT:
            c->strict = 1;
            return cli_switch_flag(arg, name);
        case COMMON_RUNNABLE:
            c->runnable = 1;
            return cli_switch_flag(arg, name);
        case COMMON_JSON:
            c->json = 1;
            return cli_switch_flag(arg, name);
        case COMMON_LOG:
            if (!(value = cli_flag_value(argc, argv, i, name)))
                return -1;
            return parse_log_level(name, value, &c->log_level) == 0 ? 1 : -1;
        }
    }
    return 0;
}

void cli_common_finish(struct cli_common *c)
{
    attn_shape *s = &c->shape;
    /* A user who asks for f16 queries means an f16 model: the caches, the
     * math and the output follow unless they are named too. */
    if (c->given & CLI_GIVEN_Q_DTYPE) {
        if (!(c->given & CLI_GIVEN_KV_DTYPE))
            s->kv_dtype = s->q_dtype;
        if (!(c->given & CLI_GIVEN_COMPUTE_DTYPE))
            s->compute_dtype = s->q_dtype;
        if (!(c->given & CLI_GIVEN_OUT_DTYPE))
            s->out_dtype = s->q_dtype;
    }
    /* Keys include the new tokens, so a shape that names only its query
     * length needs at least that many keys to be valid. */
    if (!(c->given & CLI_GIVEN_MAX_KV_LEN))
        s->max_kv_len = s->max_q_len > 1 ? s->max_q_len : 1;
}

/* ---- opening --------------------------------------------------------- */

int cli_open_registry(const struct cli_common *c, attn_registry **reg)
{
    attn_registry_options options;
    attn_status status;

    *reg = NULL;
    /* The library skips a conf folder it cannot read; on the command line a
     * folder the user named explicitly and that is not there is a mistake
     * worth stopping for. */
    for (uint32_t k = 0; k < c->num_conf_paths; k++) {
        struct stat st;
        const char *why = NULL;
        if (stat(c->conf_paths[k], &st) != 0)
            why = strerror(errno);
        else if (!S_ISDIR(st.st_mode))
            why = "not a folder";
        else if (access(c->conf_paths[k], R_OK | X_OK) != 0)
            why = strerror(errno);
        if (why) {
            char message[PATH_MAX + 256];
            snprintf(message, sizeof message, "--conf %s: %s", c->conf_paths[k], why);
            fprintf(stderr, "attnreg: %s\n", message);
            cli_json_error(attn_status_name(ATTN_ERR_IO), message, CLI_EXIT_CONF);
            return CLI_EXIT_CONF;
        }
    }

    attn_registry_options_init(&options);
    options.conf_paths = c->num_conf_paths ? c->conf_paths : NULL;
    options.num_conf_paths = c->num_conf_paths;
    options.skip_env_conf_path = c->conf_only;
    options.skip_default_conf = c->conf_only;
    /* No callback: the library's own sink writes the one log format
     * (attnreg: LEVEL: reg=N plugin=NAME: message) to stderr or
     * ATTNREG_LOG_FILE. */
    options.log_level = c->log_level;
    options.strict = c->strict;
    options.forced_backend = c->backend;
    options.runnable = c->runnable;
    options.probe_out_of_process = c->probe_out_of_process;

    status = attn_registry_open(&options, reg);
    if (status != ATTN_OK) {
        const char *why = attn_last_error();
        int rc = status == ATTN_ERR_NO_MEMORY ? CLI_EXIT_INTERNAL : CLI_EXIT_CONF;
        fprintf(stderr, "attnreg: cannot open the registry: %s: %s\n", attn_status_name(status),
                why && *why ? why : attn_status_message(status));
        cli_json_error(attn_status_name(status), why && *why ? why : attn_status_message(status),
                       rc);
        *reg = NULL;
        return rc;
    }
    return CLI_EXIT_OK;
}

/* ---- help ------------------------------------------------------------ */

/* One SHAPE help line: "--flag V" and the text, in ATTN_SHAPE_FIELD_FLAG_MAP's
 * order; the switches that clear a default (--no-causal) come last. */
static void help_shape_flag(FILE *out, const struct cli_shape_flag *f)
{
    static const char *const letter[] = {
        [CLI_SHAPE_ARCH] = " A",  [CLI_SHAPE_INT] = " N",      [CLI_SHAPE_DTYPE] = " T",
        [CLI_SHAPE_FLOAT] = " X", [CLI_SHAPE_WINDOW] = " L,R", [CLI_SHAPE_SET] = "",
        [CLI_SHAPE_CLEAR] = "",
    };
    char flag[64];
    snprintf(flag, sizeof flag, "%s%s", f->name, letter[f->value]);
    fprintf(out, "  %-20s %s\n", flag, f->help);
}

/* "  FLAG                 text", the text wrapped at 79 columns under
 * itself, for a help line that names a list whose length may change. */
static void help_wrapped(FILE *out, const char *flag, const char *text)
{
    enum { INDENT = 23, WIDTH = 79 };
    int column = fprintf(out, "  %-20s", flag);
    while (*text) {
        size_t len = strcspn(text, " ");
        if (column + 1 + (int)len > WIDTH && column > INDENT)
            column = fprintf(out, "\n%*s", INDENT - 1, "") - 1;
        column += fprintf(out, " %.*s", (int)len, text);
        text += len;
        text += strspn(text, " ");
    }
    fputc('\n', out);
}

void cli_help_common(FILE *out, unsigned accept)
{
    if (accept & (CLI_ACCEPT_SHAPE | CLI_ACCEPT_TARGET)) {
        int whole_shape = (accept & CLI_ACCEPT_SHAPE) != 0;
        fputs(whole_shape ? "SHAPE flags (defaults in brackets):\n"
                          : "Target flags (defaults in brackets):\n",
              out);
        for (int clear = 0; clear <= 1; clear++)
            for (size_t k = 0; k < sizeof shape_flags / sizeof shape_flags[0]; k++) {
                const struct cli_shape_flag *f = &shape_flags[k];
                if (f->help && (f->value == CLI_SHAPE_CLEAR) == clear &&
                    (whole_shape || f->accept == CLI_ACCEPT_TARGET))
                    help_shape_flag(out, f);
            }
        char names[256];
        fprintf(out, "  dtypes T: %s\n", dtype_names(names, sizeof names, ", "));
        if (whole_shape)
            fputs("  Values are given as '--flag VALUE' or '--flag=VALUE'. A value that is not\n"
                  "  a number, a negative count or an unknown dtype is a usage error (exit 2);\n"
                  "  a zero count or --max-q-len above --max-kv-len is an invalid shape (exit "
                  "3).\n",
                  out);
    }
    if (accept & (CLI_ACCEPT_CONF | CLI_ACCEPT_SELECT | CLI_ACCEPT_JSON | CLI_ACCEPT_LOG))
        fputs(accept & (CLI_ACCEPT_SHAPE | CLI_ACCEPT_TARGET) ? "\nOptions:\n" : "Options:\n", out);
    if (accept & CLI_ACCEPT_CONF)
        fputs("  --conf DIR           search DIR for *.ini first (repeatable, in order), then\n"
              "                       ATTNREG_CONF_PATH, then the installation's conf folder\n"
              "  --conf-only          search only the --conf folders\n",
              out);
    if (accept & CLI_ACCEPT_SELECT)
        fputs("  --backend NAME       force NAME: it must accept the shape (no substitution,\n"
              "                       no fallback)\n"
              "  --strict             never apply fallback rules\n"
              "  --runnable           reject candidates that cannot run on this machine\n"
              "                       (no code for the arch in the binary, no device)\n",
              out);
    if (accept & CLI_ACCEPT_JSON)
        fputs("  --json               machine-readable output on stdout\n", out);
    if (accept & CLI_ACCEPT_LOG) {
        char names[256], text[512];
        snprintf(text, sizeof text, "library log level on stderr: %s [ATTNREG_LOG, else warn]",
                 level_names(names, sizeof names, ", "));
        help_wrapped(out, "--log LEVEL", text);
    }
}

/* ---- selections ------------------------------------------------------ */

void cli_print_selection(FILE *out, const attn_selection *sel)
{
    char shape_text[512];
    fprintf(out, "%s\n", sel->backend_name ? sel->backend_name : "(none)");
    if (!sel->fallback_applied)
        return;
    fprintf(out, "  fallback: %s\n", sel->fallback_rule ? sel->fallback_rule : "?");
    fprintf(out, "  because: %s rejected the shape: %s: %s\n",
            sel->fallback_backend ? sel->fallback_backend : "?",
            attn_reason_name(sel->fallback_reason),
            sel->fallback_message ? sel->fallback_message : "");
    attn_shape_format(&sel->effective_shape, shape_text, sizeof shape_text);
    fprintf(out, "  effective shape: %s\n", shape_text);
}

void cli_json_selection(struct cli_json *j, const char *key, const attn_selection *sel)
{
    cli_json_begin_object(j, key);
    cli_json_string_member(j, "backend", sel->backend_name);
    cli_json_bool_member(j, "fallback_applied", sel->fallback_applied);
    cli_json_string_member(j, "fallback_rule", sel->fallback_applied ? sel->fallback_rule : NULL);
    cli_json_string_member(j, "fallback_backend",
                           sel->fallback_applied ? sel->fallback_backend : NULL);
    cli_json_string_member(j, "fallback_reason",
                           sel->fallback_applied ? attn_reason_name(sel->fallback_reason) : NULL);
    cli_json_string_member(j, "fallback_message",
                           sel->fallback_applied ? sel->fallback_message : NULL);
    cli_json_string_member(j, "message", sel->message ? sel->message : "");
    cli_json_bool_member(j, "graph_capturable", sel->backend_name && sel->graph_capturable);
    if (sel->backend_name)
        cli_json_shape(j, "effective_shape", &sel->effective_shape);
    cli_json_end_object(j);
}

void cli_print_plan(FILE *out, const attn_launch_plan *plan)
{
    const char *mem = strncmp(plan->arch, "sm_", 3) == 0 ? "shared memory" : "LDS";
    fprintf(out, "plan (%s, %d KB of %s per program):", plan->arch, plan->shared_limit / 1024, mem);
    for (uint32_t k = 0; k < plan->num_kernels && k < ATTN_PLAN_MAX_KERNELS; k++) {
        const attn_kernel_plan *kp = &plan->kernels[k];
        fprintf(out, "%s %s for %s: %d threads, %d rows x %d keys, %d stage%s, %.1f KB",
                k ? ";" : "", kp->kernel, kp->role, (int)kp->threads, (int)kp->rows, (int)kp->keys,
                (int)kp->stages, kp->stages == 1 ? "" : "s", kp->shared_bytes / 1024.0);
    }
    fputc('\n', out);
}

static void json_kernel_plan(struct cli_json *j, const attn_kernel_plan *kp)
{
    cli_json_string_member(j, "kernel", kp->kernel);
    cli_json_string_member(j, "role", kp->role);
    cli_json_int_member(j, "threads", kp->threads);
    cli_json_int_member(j, "rows", kp->rows);
    cli_json_int_member(j, "keys", kp->keys);
    cli_json_int_member(j, "stages", kp->stages);
    cli_json_int_member(j, "shared_bytes", kp->shared_bytes);
}

void cli_json_plan(struct cli_json *j, const char *key, const attn_launch_plan *plan)
{
    if (!plan || plan->num_kernels == 0) {
        cli_json_string_member(j, key, NULL);
        return;
    }
    /* The kernel of batches at max_q_len first, flat (what a reader wants
     * first), then every kernel forward may launch. */
    cli_json_begin_object(j, key);
    cli_json_string_member(j, "arch", plan->arch);
    json_kernel_plan(j, &plan->kernels[0]);
    cli_json_int_member(j, "shared_limit", plan->shared_limit);
    cli_json_int_member(j, "wave_size", plan->wave_size);
    cli_json_begin_array(j, "kernels");
    for (uint32_t k = 0; k < plan->num_kernels && k < ATTN_PLAN_MAX_KERNELS; k++) {
        cli_json_begin_object(j, NULL);
        json_kernel_plan(j, &plan->kernels[k]);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
    cli_json_end_object(j);
}

void cli_print_arch_limits(FILE *out, const char *indent, const attn_plugin_load_info *load)
{
    for (uint32_t i = 0; load->arch_limits && i < load->num_arch_limits; i++) {
        const attn_arch_limits *l = &load->arch_limits[i];
        fprintf(out, "%slimits %s: %d KB of %s per program, wave %d, %d threads, %d registers\n",
                indent, l->arch, (int)(l->shared_bytes_per_block / 1024),
                strncmp(l->arch, "sm_", 3) == 0 ? "shared memory" : "LDS", (int)l->wave_size,
                (int)l->max_threads_per_block, (int)l->max_registers_per_thread);
    }
}

void cli_json_arch_limits(struct cli_json *j, const char *key, const attn_plugin_load_info *load)
{
    cli_json_begin_array(j, key);
    for (uint32_t i = 0; load->arch_limits && i < load->num_arch_limits; i++) {
        const attn_arch_limits *l = &load->arch_limits[i];
        cli_json_begin_object(j, NULL);
        cli_json_string_member(j, "arch", l->arch);
        cli_json_int_member(j, "shared_bytes_per_block", l->shared_bytes_per_block);
        cli_json_int_member(j, "wave_size", l->wave_size);
        cli_json_int_member(j, "max_threads_per_block", l->max_threads_per_block);
        cli_json_int_member(j, "max_registers_per_thread", l->max_registers_per_thread);
        cli_json_end_object(j);
    }
    cli_json_end_array(j);
}
