/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli_lists.h — the attnreg command's lists, each written once as an
 * X-macro (libuv's UV_ERRNO_MAP idea, as attn_types.h does for the ABI's
 * lists): the commands and the flag sets each accepts, every flag with how
 * its value is read, and the exit codes. The command table, the flag
 * parsers, the SHAPE --help lines and the exit codes' names and --help lines
 * are generated from them; tests/lists prints them (with attn_types.h's
 * dtypes, log levels and statuses and the conf keys of core/internal.h) and
 * holds the copies outside the code to them: a flag or command added here is
 * also written into scripts/attnreg.bash-completion, attnreg(1) and
 * cli/README.md, and `ctest -L lists` names each place that lacks it. Macros,
 * enums and one table row type only, so that a program of its own can
 * include it without the rest of the CLI.
 */
#ifndef ATTNREG_CLI_LISTS_H
#define ATTNREG_CLI_LISTS_H

#include <stddef.h>

#include "attn_types.h"

/* The words main() reads in place of a command (cli_is_help_flag also
 * takes -h, which is not offered). */
#define CLI_HELP_COMMAND "help"
#define CLI_HELP_FLAG "--help"
#define CLI_VERSION_FLAG "--version"

/* Which flag sets a command accepts; cli_parse_common_flag treats the others
 * as "not ours" (returns 0), so the command reports them as unknown. */
enum cli_accept {
    CLI_ACCEPT_SHAPE = 1u << 0,  /* --arch --q-heads ... --no-causal (includes TARGET) */
    CLI_ACCEPT_CONF = 1u << 1,   /* --conf DIR (repeatable), --conf-only */
    CLI_ACCEPT_SELECT = 1u << 2, /* --backend NAME, --strict, --runnable */
    CLI_ACCEPT_JSON = 1u << 3,   /* --json */
    CLI_ACCEPT_LOG = 1u << 4,    /* --log LEVEL */
    /* Only the shape flags a model leaves to the engine: --arch, the four
     * dtypes, --page-size (for `plan`, where the model gives the rest). */
    CLI_ACCEPT_TARGET = 1u << 5
};
#define CLI_ACCEPT_OPTIONS_ (CLI_ACCEPT_CONF | CLI_ACCEPT_JSON | CLI_ACCEPT_LOG)
#define CLI_ACCEPT_DECIDE_ (CLI_ACCEPT_SHAPE | CLI_ACCEPT_SELECT | CLI_ACCEPT_OPTIONS_)

/* How a flag's value is read, as far as a shell completing it cares:
 * X(KIND, name). NONE: a switch, no value; DIR: a folder; FILE: a file;
 * DTYPE: a dtype's spelling; LEVEL: a log level's name; ARCH: an arch name;
 * BACKEND: a backend's name; TEXT: anything else (numbers, L,R). */
#define CLI_VALUE_MAP(X)                                                                           \
    X(NONE, "none")                                                                                \
    X(DIR, "dir")                                                                                  \
    X(FILE, "file")                                                                                \
    X(DTYPE, "dtype")                                                                              \
    X(LEVEL, "level")                                                                              \
    X(ARCH, "arch")                                                                                \
    X(BACKEND, "backend")                                                                          \
    X(TEXT, "text")
enum cli_value {
#define CLI_VALUE_ENUM_(KIND, name) CLI_VALUE_##KIND,
    CLI_VALUE_MAP(CLI_VALUE_ENUM_)
#undef CLI_VALUE_ENUM_
};

/* The commands, in `attnreg --help` order: X(name, accept, FLAGS, summary).
 * cli_cmd_<name> and cli_help_<name> run it and print its --help; accept is
 * its cli_accept sets (CLI_ACCEPT_OF_<name> below); FLAGS is the X-macro of
 * its own flags (below). A new command is a line here, its two functions
 * (declared in cli.h) and its cmd_<name>.c in cli/CMakeLists.txt. */
#define CLI_COMMAND_MAP(X)                                                                         \
    X(list, CLI_ACCEPT_OPTIONS_, CLI_LIST_FLAG_MAP,                                                \
      "list the plugins the conf files declare (loads no library)")                                \
    X(explain, CLI_ACCEPT_DECIDE_, CLI_NO_FLAG_MAP,                                                \
      "show every candidate's verdict for a shape, the fallback and the decision")                 \
    X(select, CLI_ACCEPT_DECIDE_, CLI_NO_FLAG_MAP, "print the backend chosen for a shape")         \
    X(plan, CLI_ACCEPT_TARGET | CLI_ACCEPT_SELECT | CLI_ACCEPT_OPTIONS_, CLI_PLAN_FLAG_MAP,        \
      "plan a whole model's attention from its Hugging Face config.json")                          \
    X(check, CLI_ACCEPT_OPTIONS_, CLI_NO_FLAG_MAP,                                                 \
      "validate the conf files and load every plugin")                                             \
    X(devices, CLI_ACCEPT_OPTIONS_, CLI_NO_FLAG_MAP, "list the devices each plugin can run on")    \
    X(run, CLI_ACCEPT_DECIDE_, CLI_RUN_FLAG_MAP, "run the selected backend on .npy inputs")        \
    X(verify, CLI_ACCEPT_DECIDE_, CLI_VERIFY_FLAG_MAP,                                             \
      "check a backend's output against a float64 reference")

enum cli_command_accept {
#define CLI_COMMAND_ACCEPT_(name, accept, FLAGS, summary) CLI_ACCEPT_OF_##name = (accept),
    CLI_COMMAND_MAP(CLI_COMMAND_ACCEPT_)
#undef CLI_COMMAND_ACCEPT_
};

/* The flags of the accept sets but SHAPE and TARGET, which
 * cli_parse_common_flag reads: X(ID, accept, flag, VALUE). */
#define CLI_COMMON_FLAG_MAP(X)                                                                     \
    X(CONF, CLI_ACCEPT_CONF, "--conf", DIR)                                                        \
    X(CONF_ONLY, CLI_ACCEPT_CONF, "--conf-only", NONE)                                             \
    X(BACKEND, CLI_ACCEPT_SELECT, "--backend", BACKEND)                                            \
    X(STRICT, CLI_ACCEPT_SELECT, "--strict", NONE)                                                 \
    X(RUNNABLE, CLI_ACCEPT_SELECT, "--runnable", NONE)                                             \
    X(JSON, CLI_ACCEPT_JSON, "--json", NONE)                                                       \
    X(LOG, CLI_ACCEPT_LOG, "--log", LEVEL)

/* Each command's own flags, which its cmd_<name>.c reads: X(ID, flag,
 * VALUE). The parser's switch over the IDs has no default, so a line
 * without its case fails the build. */
#define CLI_NO_FLAG_MAP(X)
#define CLI_LIST_FLAG_MAP(X) X(ARCH, "--arch", ARCH)
#define CLI_PLAN_FLAG_MAP(X)                                                                       \
    X(HF_CONFIG, "--hf-config", FILE)                                                              \
    X(TP, "--tp", TEXT)                                                                            \
    X(MAX_MODEL_LEN, "--max-model-len", TEXT)                                                      \
    X(MAX_PREFILL_TOKENS, "--max-prefill-tokens", TEXT)                                            \
    X(SPEC_TOKENS, "--spec-tokens", TEXT)
#define CLI_RUN_FLAG_MAP(X)                                                                        \
    X(Q, "--q", FILE)                                                                              \
    X(K_CACHE, "--k-cache", FILE)                                                                  \
    X(V_CACHE, "--v-cache", FILE)                                                                  \
    X(BLOCK_TABLE, "--block-table", FILE)                                                          \
    X(CU_SEQLENS_Q, "--cu-seqlens-q", FILE)                                                        \
    X(SEQUSED_K, "--seqused-k", FILE)                                                              \
    X(SINKS_FILE, "--sinks-file", FILE)                                                            \
    X(OUT, "--out", FILE)                                                                          \
    X(LSE_OUT, "--lse-out", FILE)                                                                  \
    X(NEW_K, "--new-k", FILE)                                                                      \
    X(NEW_V, "--new-v", FILE)                                                                      \
    X(SLOT_MAPPING, "--slot-mapping", FILE)                                                        \
    X(SCALE, "--scale", TEXT)                                                                      \
    X(Q_DESCALE, "--q-descale", TEXT)                                                              \
    X(K_DESCALE, "--k-descale", TEXT)                                                              \
    X(V_DESCALE, "--v-descale", TEXT)
#define CLI_VERIFY_FLAG_MAP(X)                                                                     \
    X(SEQS, "--seqs", TEXT)                                                                        \
    X(SEED, "--seed", TEXT)                                                                        \
    X(STRIDED, "--strided", NONE)

/* For a command's parser: enum { CLI_..._FLAG_MAP(CLI_FLAG_ID_) } and the
 * name table { CLI_..._FLAG_MAP(CLI_FLAG_NAME_) } in the same order, for
 * cli_flag_index. */
#define CLI_FLAG_ID_(ID, flag, VALUE) CLI_FLAG_##ID,
#define CLI_FLAG_NAME_(ID, flag, VALUE) flag,

/* Bits of cli_common.given: which shape fields were set on the command line,
 * so cli_common_finish only derives the ones the user left out. */
enum cli_given {
    CLI_GIVEN_Q_DTYPE = 1u << 0,
    CLI_GIVEN_KV_DTYPE = 1u << 1,
    CLI_GIVEN_COMPUTE_DTYPE = 1u << 2,
    CLI_GIVEN_OUT_DTYPE = 1u << 3,
    CLI_GIVEN_MAX_Q_LEN = 1u << 4,
    CLI_GIVEN_MAX_KV_LEN = 1u << 5
};

/* What the command adds to each field of attn_types.h's
 * ATTN_SHAPE_FIELD_FLAG_MAP (which gives the member and its flag): the flag
 * set it belongs to (CLI_ACCEPT_TARGET: also for commands that take only
 * those), the `given` bit it sets, how its value is read, whether a model's
 * config.json fixes it (plan refuses those flags), and its --help line (the
 * flag and the value's letter come from the map and the value kind). A
 * field added to the map without its line here fails the build. Counts take
 * 0 and up (zero, where it is no meaningful default, is left for the library
 * to call an invalid shape, with its own message). */
enum cli_shape_value {
    CLI_SHAPE_ARCH,   /* a name */
    CLI_SHAPE_INT,    /* an int32 >= 0 */
    CLI_SHAPE_DTYPE,  /* a dtype's spelling */
    CLI_SHAPE_FLOAT,  /* the softcap */
    CLI_SHAPE_WINDOW, /* "L,R" into this field and window_right */
    CLI_SHAPE_PAIRED, /* set by the field before it (no flag of its own) */
    CLI_SHAPE_SET,    /* a switch: the field becomes 1 */
    CLI_SHAPE_CLEAR,  /* a switch: the field becomes 0 */
};
#define CLI_FIELD_arch                                                                             \
    CLI_ACCEPT_TARGET, 0, CLI_SHAPE_ARCH, 0, "target arch: gfx950, gfx942, sm_90, cpu, ... [cpu]"
#define CLI_FIELD_num_q_heads CLI_ACCEPT_SHAPE, 0, CLI_SHAPE_INT, 1, "query heads [1]"
#define CLI_FIELD_num_kv_heads                                                                     \
    CLI_ACCEPT_SHAPE, 0, CLI_SHAPE_INT, 1, "KV heads; 0 = same as --q-heads (MHA) [0]"
#define CLI_FIELD_head_dim CLI_ACCEPT_SHAPE, 0, CLI_SHAPE_INT, 1, "head size of Q and K [128]"
#define CLI_FIELD_head_dim_v                                                                       \
    CLI_ACCEPT_SHAPE, 0, CLI_SHAPE_INT, 1, "head size of V; 0 = --head-dim [0]"
#define CLI_FIELD_q_dtype                                                                          \
    CLI_ACCEPT_TARGET, CLI_GIVEN_Q_DTYPE, CLI_SHAPE_DTYPE, 0, "query dtype [bf16]"
#define CLI_FIELD_kv_dtype                                                                         \
    CLI_ACCEPT_TARGET, CLI_GIVEN_KV_DTYPE, CLI_SHAPE_DTYPE, 0,                                     \
        "K/V cache dtype [the --q-dtype value]"
#define CLI_FIELD_compute_dtype                                                                    \
    CLI_ACCEPT_TARGET, CLI_GIVEN_COMPUTE_DTYPE, CLI_SHAPE_DTYPE, 0,                                \
        "precision of the math [the --q-dtype value]"
#define CLI_FIELD_out_dtype                                                                        \
    CLI_ACCEPT_TARGET, CLI_GIVEN_OUT_DTYPE, CLI_SHAPE_DTYPE, 0, "output dtype [the --q-dtype value]"
#define CLI_FIELD_page_size CLI_ACCEPT_TARGET, 0, CLI_SHAPE_INT, 0, "tokens per KV-cache block [16]"
#define CLI_FIELD_max_q_len                                                                        \
    CLI_ACCEPT_SHAPE, CLI_GIVEN_MAX_Q_LEN, CLI_SHAPE_INT, 1,                                       \
        "longest query (new tokens) of one sequence [1]"
#define CLI_FIELD_max_kv_len                                                                       \
    CLI_ACCEPT_SHAPE, CLI_GIVEN_MAX_KV_LEN, CLI_SHAPE_INT, 1,                                      \
        "longest key range of one sequence [max(--max-q-len, 1)]"
#define CLI_FIELD_causal CLI_ACCEPT_SHAPE, 0, CLI_SHAPE_CLEAR, 1, "no causal masking [causal]"
#define CLI_FIELD_window_left                                                                      \
    CLI_ACCEPT_SHAPE, 0, CLI_SHAPE_WINDOW, 1, "sliding window, -1 = unbounded [-1,-1]"
#define CLI_FIELD_window_right CLI_ACCEPT_SHAPE, 0, CLI_SHAPE_PAIRED, 1, NULL
#define CLI_FIELD_softcap CLI_ACCEPT_SHAPE, 0, CLI_SHAPE_FLOAT, 1, "logit softcap, 0 = none [0]"
#define CLI_FIELD_has_sinks CLI_ACCEPT_SHAPE, 0, CLI_SHAPE_SET, 1, "per-head sink logits are passed"
#define CLI_FIELD_return_lse                                                                       \
    CLI_ACCEPT_SHAPE, 0, CLI_SHAPE_SET, 0, "forward also writes the log-sum-exp per row"

/* One row per field: static const struct cli_shape_flag t[] =
 * { ATTN_SHAPE_FIELD_FLAG_MAP(CLI_SHAPE_FLAG_ROW_) }. */
struct cli_shape_flag {
    const char *name;
    size_t offset;
    unsigned accept;
    unsigned given_bit;
    enum cli_shape_value value;
    int model_fixes;
    const char *help;
};
#define CLI_SHAPE_FLAG_ROW_(member, KIND, flag)                                                    \
    {flag, offsetof(attn_shape, member), CLI_FIELD_##member},

/* The exit codes: X(NAME, code, meaning), the enumerator CLI_EXIT_<NAME>,
 * cli_exit_name()'s NAME and the line of `attnreg --help`. Stable: scripts
 * test them. The classes of attn_types.h's ATTN_STATUS_CLASS_MAP give the
 * codes of the library's statuses (common.c checks that they name the same
 * codes); PROBLEMS, USAGE and MISMATCH are the command's own. */
#define CLI_EXIT_MAP(X)                                                                            \
    X(OK, 0, "success (for devices: also when no device is present)")                              \
    X(PROBLEMS, 1, "check found a conf error or a plugin that fails to load")                      \
    X(USAGE, 2, "usage error: unknown flag, bad or missing value")                                 \
    X(INVALID_SHAPE, 3, "invalid shape: no backend could ever run it")                             \
    X(UNSUPPORTED, 4, "unsupported: valid shape, no enabled backend accepts it")                   \
    X(BACKEND_REJECTED, 5, "the forced --backend rejects the shape or does not exist")             \
    X(CONF, 6, "conf or registry error: a --conf folder is missing, open failed")                  \
    X(BACKEND, 7, "backend error: create or forward failed (no device, no kernels, ...)")          \
    X(MISMATCH, 8, "verify: results differ from the reference beyond tolerance")                   \
    X(IO, 9, "I/O error: an input could not be read or an output written")                         \
    X(INTERNAL, 10, "internal error")

#endif /* ATTNREG_CLI_LISTS_H */
