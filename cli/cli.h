/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h — the internal contract of the `attnreg` command.
 *
 * Every command lives in its own cli/cmd_<name>.c and is reached through the
 * command table in cli/main.c. A command is a pair of functions:
 *
 *   int  cli_cmd_<name>(int argc, char **argv);  argv[0] is the command name
 *   void cli_help_<name>(FILE *out);             the full `--help` text
 *
 * The run function returns one of the `cli_exit` codes below; main() passes it
 * to exit(). Messages for the user go to stderr, results to stdout, so that
 * `--json` output can be piped into a tool while errors stay visible.
 *
 * Writing a command that takes a SHAPE (see cmd_select.c for the smallest one):
 *
 *   struct cli_common c;
 *   cli_common_init(&c, CLI_ACCEPT_OF_mine); // its CLI_COMMAND_MAP line's sets
 *   for (int i = 1; i < argc; i++) {
 *       if (cli_is_help_flag(argv[i])) { cli_help_mine(stdout); return CLI_EXIT_OK; }
 *       int r = cli_parse_common_flag(&c, argc, argv, &i);
 *       if (r < 0) return CLI_EXIT_USAGE;   // the message is already printed
 *       if (r > 0) continue;                // a common flag and its value were consumed
 *       ... its own flags (CLI_MINE_FLAG_MAP, found by cli_flag_index), else:
 *       return cli_usage_error("...", argv[i]);
 *   }
 *   cli_common_finish(&c);                  // derives the defaults that depend on other flags
 *   attn_registry *reg;
 *   int rc = cli_open_registry(&c, &reg);
 *   if (rc != CLI_EXIT_OK) return rc;
 *   ...
 *   attn_registry_close(reg);
 *
 * A new command: a line in cli_lists.h's CLI_COMMAND_MAP (main.c's table is
 * generated from it), its cli_cmd_<name> / cli_help_<name> declared below,
 * its cmd_<name>.c in cli/CMakeLists.txt.
 */
#ifndef ATTNREG_CLI_H
#define ATTNREG_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "attnreg.h"
#include "cli_lists.h"

/* Exit codes: cli_lists.h's CLI_EXIT_MAP. Stable: scripts test them, and
 * `attnreg --help`, attnreg(1) and cli/README.md document them. */
enum cli_exit {
#define CLI_EXIT_ENUM_(NAME, code, meaning) CLI_EXIT_##NAME = code,
    CLI_EXIT_MAP(CLI_EXIT_ENUM_)
#undef CLI_EXIT_ENUM_
};

/* Maps a library status to the exit code a command reports for it. */
int cli_exit_from_status(attn_status status);
/* The exit code's name: OK, PROBLEMS, USAGE, INVALID_SHAPE, ..., INTERNAL. */
const char *cli_exit_name(int exit_code);

#define CLI_MAX_CONF_PATHS 32

/* The options every command shares. Strings point into argv (they live as
 * long as the process). */
struct cli_common {
    unsigned accept;  /* cli_accept bits */
    unsigned given;   /* cli_given bits */
    attn_shape shape; /* attn_shape_init's defaults, then the flags */
    const char *conf_paths[CLI_MAX_CONF_PATHS];
    uint32_t num_conf_paths;
    int conf_only;       /* 1 = search only the --conf folders (no ATTNREG_CONF_PATH, no default) */
    const char *backend; /* --backend NAME; NULL = none forced */
    int strict;          /* --strict: never apply fallback rules */
    int runnable;        /* --runnable: reject candidates that cannot run on this machine */
    int json;            /* --json */
    int log_level;       /* attn_log_level; -1 = ATTNREG_LOG or warn */
    int probe_out_of_process; /* `check`: load each plugin in a child first */
};

/* Fills defaults: attn_shape_init's shape, no conf folders, log level -1. */
void cli_common_init(struct cli_common *c, unsigned accept);

/* If argv[*i] is a flag this command accepts (per c->accept), parses it and
 * its value (either `--flag value` or `--flag=value`), advances *i past the
 * value and returns 1. Returns 0 when argv[*i] is not a common flag (the
 * caller tries its own flags). Returns -1 after printing a usage error that
 * names the flag and the bad value. Never exits. */
int cli_parse_common_flag(struct cli_common *c, int argc, char **argv, int *i);

/* 1 when arg is a SHAPE flag whose value a model's config.json fixes (heads,
 * head sizes, lengths, window, softcap, sinks, causal): `plan` refuses those
 * with a message saying where the value comes from. */
int cli_is_model_shape_flag(const char *arg);

/* Derives the defaults that depend on other flags; call once after parsing:
 *   - kv, compute and out dtypes not given follow --q-dtype;
 *   - --max-kv-len not given becomes max(max_q_len, 1).
 * The shape is not validated here: validation is the library's job (it gives
 * the invalid-shape message). */
void cli_common_finish(struct cli_common *c);

/* Opens a registry with the common options (conf folders, strict, forced
 * backend, runnable, log level; logs go to stderr, or ATTNREG_LOG_FILE, as
 * "attnreg: LEVEL: reg=N plugin=NAME: ...").
 * Returns CLI_EXIT_OK, or prints why and returns CLI_EXIT_CONF (a --conf
 * folder that is missing or unreadable, open failure) or CLI_EXIT_INTERNAL. */
int cli_open_registry(const struct cli_common *c, attn_registry **reg);

/* Help text for the flags selected by `accept`, for a command's --help. */
void cli_help_common(FILE *out, unsigned accept);

/* 1 when arg is -h or --help. */
int cli_is_help_flag(const char *arg);

/* Prints "attnreg: <formatted message>" and a hint to stderr and returns
 * CLI_EXIT_USAGE. */
#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
int cli_usage_error(const char *fmt, ...);

/* Value parsers for a command's own flags. On a bad value they print a usage
 * error naming `flag` and `value` and return -1; on success 0. */
int cli_parse_int32(const char *flag, const char *value, int32_t min, int32_t max, int32_t *out);
int cli_parse_dtype(const char *flag, const char *value, int32_t *out);
/* An arch name of 1 to ATTN_ARCH_MAX - 1 characters, copied with its NUL. */
int cli_parse_arch(const char *flag, const char *value, char out[ATTN_ARCH_MAX]);

/* The value of a flag at argv[*i]: for `--flag=value` the part after '=', for
 * `--flag value` argv[*i + 1] (and *i is advanced). NULL after printing a usage
 * error when the value is missing. `name` is the flag without "=value". */
const char *cli_flag_value(int argc, char **argv, int *i, const char *name);

/* The same for a value that must not be empty: NULL after a usage error
 * "NAME: empty WHAT" when it is. */
const char *cli_flag_text(int argc, char **argv, int *i, const char *name, const char *what);

/* 1 when argv[*i] is `name` or `name=...`. */
int cli_flag_is(const char *arg, const char *name);

/* The index of the flag arg names (cli_flag_is) in names[0..count), a
 * command's CLI_..._FLAG_MAP(CLI_FLAG_NAME_); -1 when none. */
int cli_flag_index(const char *arg, const char *const *names, size_t count);

/* For a switch (a flag without a value) that arg names: 1, or -1 after a
 * usage error when it is written `--flag=value`. */
int cli_switch_flag(const char *arg, const char *name);

/* ---- JSON output (hand-written; see json.c for why) ---------------------- */

/* A pretty-printing writer (two-space indent, one value per line) that keeps
 * track of commas, so commands only say what to write. Key arguments are the
 * member name inside an object and NULL inside an array or at the top level.
 *
 *   struct cli_json j;
 *   cli_json_init(&j, stdout);
 *   cli_json_begin_object(&j, NULL);
 *   cli_json_string_member(&j, "backend", sel.backend_name);
 *   cli_json_shape(&j, "effective_shape", &sel.effective_shape);
 *   cli_json_end_object(&j);      // the top-level end also writes the newline
 */
#define CLI_JSON_MAX_DEPTH 32
struct cli_json {
    FILE *out;
    int depth;
    int has_members[CLI_JSON_MAX_DEPTH]; /* per open container: 1 once a value was written */
};

/* The layout version every --json document starts with ("schema_version",
 * the first member of every top-level object, written by
 * cli_json_begin_object). Adding a key keeps it; renaming, removing or
 * retyping one bumps it. docs/JSON.md and docs/attnreg.schema.json describe
 * it. */
#define CLI_JSON_SCHEMA_VERSION 1

/* The command being run, for the "command" member of every JSON document
 * and the "Try 'attnreg CMD --help'" hints; main() sets it. Kept in json.c,
 * which needs nothing else of the CLI's. */
void cli_set_command_name(const char *name);
const char *cli_command_name(void);

/* --json mode for the whole run (main() sets it when --json is among the
 * arguments, before the command parses them), so that errors found before or
 * without any output are written as a JSON error document. */
void cli_json_set_mode(int on);
int cli_json_mode(void);
/* 1 once a top-level document has been written to stdout. */
int cli_json_document_written(void);
/* In --json mode, when no document was written yet: writes
 * {"schema_version": N, "error": {"status", "message", "exit_code"}} on
 * stdout. status: an attn_status name, or USAGE for command-line mistakes. */
void cli_json_error(const char *status, const char *message, int exit_code);
/* The "error" member alone, for a command's own document. */
void cli_json_error_member(struct cli_json *j, const char *status, const char *message,
                           int exit_code);

void cli_json_init(struct cli_json *j, FILE *out);
void cli_json_begin_object(struct cli_json *j, const char *key);
void cli_json_end_object(struct cli_json *j);
void cli_json_begin_array(struct cli_json *j, const char *key);
void cli_json_end_array(struct cli_json *j);
/* A NULL string is written as null; a non-finite double as null. */
void cli_json_string_member(struct cli_json *j, const char *key, const char *value);
void cli_json_int_member(struct cli_json *j, const char *key, long long value);
void cli_json_bool_member(struct cli_json *j, const char *key, int value);
void cli_json_double_member(struct cli_json *j, const char *key, double value);
/* Writes s as a JSON string with quotes and escapes, or `null` for NULL. */
void cli_json_write_string(FILE *out, const char *s);
/* Writes the shape as an object whose keys are attn_shape's field names
 * (arch, num_q_heads, ..., causal and has_sinks as booleans, dtypes by name). */
void cli_json_shape(struct cli_json *j, const char *key, const attn_shape *shape);
/* A comma-separated arch list ("gfx942, gfx950") as an array of trimmed
 * names; NULL or "" is []. Every arch list of every command is an array. */
void cli_json_arch_list(struct cli_json *j, const char *key, const char *archs);

/* ---- selections, shared by select, explain, run and verify ----------------- */

/* Text form: the backend name alone on the first line (so scripts can take
 * `head -1`), then, when a fallback applied, the rule, the rejection that
 * motivated it and the effective shape, one per indented line. */
void cli_print_selection(FILE *out, const attn_selection *sel);
/* JSON form: an object with backend, fallback_applied, fallback_rule,
 * fallback_backend, fallback_reason (name), fallback_message, message and
 * effective_shape. */
void cli_json_selection(struct cli_json *j, const char *key, const attn_selection *sel);

/* The launch plan of a selected GPU backend: one line of text ("plan: ...")
 * and a JSON member (`key`: {...}, or null when the backend describes none). */
void cli_print_plan(FILE *out, const attn_launch_plan *plan);
void cli_json_plan(struct cli_json *j, const char *key, const attn_launch_plan *plan);
/* The per-arch limits a plugin's plans are checked against. */
void cli_print_arch_limits(FILE *out, const char *indent, const attn_plugin_load_info *load);
void cli_json_arch_limits(struct cli_json *j, const char *key, const attn_plugin_load_info *load);
/* Prints "attnreg: STATUS_NAME: message" to stderr (message: the selection's
 * or attn_last_error() when empty) and returns cli_exit_from_status(status). */
int cli_report_failure(attn_status status, const char *message);

/* ---- commands -------------------------------------------------------- */

struct cli_command {
    const char *name;
    const char *summary; /* one line, for `attnreg --help` */
    int (*run)(int argc, char **argv);
    void (*help)(FILE *out);
};

int cli_cmd_list(int argc, char **argv);
void cli_help_list(FILE *out);
int cli_cmd_explain(int argc, char **argv);
void cli_help_explain(FILE *out);
int cli_cmd_select(int argc, char **argv);
void cli_help_select(FILE *out);
int cli_cmd_check(int argc, char **argv);
void cli_help_check(FILE *out);
int cli_cmd_devices(int argc, char **argv);
void cli_help_devices(FILE *out);
int cli_cmd_plan(int argc, char **argv);
void cli_help_plan(FILE *out);

int cli_cmd_run(int argc, char **argv);
void cli_help_run(FILE *out);
int cli_cmd_verify(int argc, char **argv);
void cli_help_verify(FILE *out);

#endif /* ATTNREG_CLI_H */
