/* SPDX-License-Identifier: Apache-2.0 */
/*
 * attnreg_lists.c — prints the lists that the completion script, the man
 * pages and the docs copy, straight from the X-macros that the library and
 * the CLI are generated from (attn_types.h, attnreg.h, cli/cli_lists.h,
 * core/internal.h), for check_lists.py to hold those files to. It calls
 * nothing: every line comes from a macro expansion, so what it prints is what
 * the build's code reads. One line per item, tab separated:
 *
 *   LIST  ITEM  [ATTRIBUTE ...]
 *
 * flags:CMD / own-flags:CMD / shape-flags / target-flags / common-flags
 * items are flags with their value kind (cli_lists.h's CLI_VALUE_MAP);
 * exit-codes items are codes with their name and the statuses that exit
 * with them; statuses items are attn_status names with their exit code.
 */
#include <stdio.h>

#include "attnreg.h"
#include "cli_lists.h"
#include "internal.h"

static const char *const value_names[] = {
#define VALUE_NAME_(KIND, name) name,
    CLI_VALUE_MAP(VALUE_NAME_)
#undef VALUE_NAME_
};

struct flag {
    const char *name;
    enum cli_value value;
};
#define OWN_FLAG_ROW_(ID, flag, VALUE) {flag, CLI_VALUE_##VALUE},

static const struct cli_shape_flag shape_flags[] = {ATTN_SHAPE_FIELD_FLAG_MAP(CLI_SHAPE_FLAG_ROW_)};
#define NUM_SHAPE_FLAGS (sizeof shape_flags / sizeof shape_flags[0])

static const struct {
    unsigned accept;
    struct flag flag;
} common_flags[] = {
#define COMMON_FLAG_ROW_(ID, accept, flag, VALUE) {accept, {flag, CLI_VALUE_##VALUE}},
    CLI_COMMON_FLAG_MAP(COMMON_FLAG_ROW_)
#undef COMMON_FLAG_ROW_
};

/* Each command with its sets and its own flags (a list ended by a NULL
 * name: a command may have none). */
static const struct {
    const char *name;
    unsigned accept;
    const struct flag *own;
} commands[] = {
#define COMMAND_ROW_(name, accept, FLAGS, summary)                                                 \
    {#name, accept, (const struct flag[]){FLAGS(OWN_FLAG_ROW_){NULL, CLI_VALUE_NONE}}},
    CLI_COMMAND_MAP(COMMAND_ROW_)
#undef COMMAND_ROW_
};

/* What a shell completing a SHAPE flag's value offers; PAIRED has no flag. */
static enum cli_value shape_value(enum cli_shape_value v)
{
    switch (v) {
    case CLI_SHAPE_ARCH:
        return CLI_VALUE_ARCH;
    case CLI_SHAPE_DTYPE:
        return CLI_VALUE_DTYPE;
    case CLI_SHAPE_INT:
    case CLI_SHAPE_FLOAT:
    case CLI_SHAPE_WINDOW:
        return CLI_VALUE_TEXT;
    case CLI_SHAPE_PAIRED:
    case CLI_SHAPE_SET:
    case CLI_SHAPE_CLEAR:
        break;
    }
    return CLI_VALUE_NONE;
}

static void print_flag(const char *list, const char *cmd, const char *name, enum cli_value value)
{
    printf("%s%s\t%s\t%s\n", list, cmd, name, value_names[value]);
}

/* The SHAPE flags a command of sets `accept` takes: all of them with
 * CLI_ACCEPT_SHAPE, the CLI_ACCEPT_TARGET ones with that set alone, as
 * common.c's parse_shape_flag reads them. */
static void print_shape_flags(const char *list, const char *cmd, unsigned accept)
{
    for (size_t k = 0; k < NUM_SHAPE_FLAGS; k++) {
        const struct cli_shape_flag *f = &shape_flags[k];
        if (f->value == CLI_SHAPE_PAIRED)
            continue;
        if ((accept & CLI_ACCEPT_SHAPE) ||
            ((accept & CLI_ACCEPT_TARGET) && f->accept == CLI_ACCEPT_TARGET))
            print_flag(list, cmd, f->name, shape_value(f->value));
    }
}

static void print_common_flags(const char *list, const char *cmd, unsigned accept)
{
    for (size_t k = 0; k < sizeof common_flags / sizeof common_flags[0]; k++)
        if (accept & common_flags[k].accept)
            print_flag(list, cmd, common_flags[k].flag.name, common_flags[k].flag.value);
}

static void print_commands(void)
{
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
        printf("commands\t%s\n", commands[c].name);
        printf("main-words\t%s\n", commands[c].name);
    }
    printf("main-words\t%s\nmain-words\t%s\nmain-words\t%s\n", CLI_HELP_COMMAND, CLI_HELP_FLAG,
           CLI_VERSION_FLAG);
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
        const char *name = commands[c].name;
        print_shape_flags("flags:", name, commands[c].accept);
        for (const struct flag *f = commands[c].own; f->name; f++) {
            print_flag("flags:", name, f->name, f->value);
            print_flag("own-flags:", name, f->name, f->value);
        }
        print_common_flags("flags:", name, commands[c].accept);
        /* Every command's loop takes --help first (cli_is_help_flag). */
        print_flag("flags:", name, CLI_HELP_FLAG, CLI_VALUE_NONE);
    }
    print_shape_flags("shape-flags", "", CLI_ACCEPT_SHAPE);
    print_shape_flags("target-flags", "", CLI_ACCEPT_TARGET);
    print_common_flags("common-flags", "", ~0u);
}

/* The exit code of each status class, then each exit code with the
 * statuses whose class exits with it (cli_exit_from_status). */
enum {
#define CLASS_EXIT_(CLASS, name, exit_code) CLASS_EXIT_##CLASS = exit_code,
    ATTN_STATUS_CLASS_MAP(CLASS_EXIT_)
#undef CLASS_EXIT_
};
static const struct {
    const char *name;
    int exit_code;
} statuses[] = {
#define STATUS_ROW_(NAME, value, CLASS, message) {"ATTN_" #NAME, CLASS_EXIT_##CLASS},
    ATTN_STATUS_MAP(STATUS_ROW_)
#undef STATUS_ROW_
};

static void print_exit_code(const char *name, int code)
{
    printf("exit-codes\t%d\t%s", code, name);
    for (size_t k = 0; k < sizeof statuses / sizeof statuses[0]; k++)
        if (statuses[k].exit_code == code)
            printf("\t%s", statuses[k].name);
    putchar('\n');
}

static void print_statuses(void)
{
#define EXIT_ROW_(NAME, code, meaning) print_exit_code(#NAME, code);
    CLI_EXIT_MAP(EXIT_ROW_)
#undef EXIT_ROW_
    for (size_t k = 0; k < sizeof statuses / sizeof statuses[0]; k++)
        printf("statuses\t%s\t%d\n", statuses[k].name, statuses[k].exit_code);
}

/* The shape properties' names by ID (for the fallback fields). */
static const char *const property_names[] = {
#define PROPERTY_NAME_(ID, name, value) [FIELD_##ID] = name,
    ATTN_SHAPE_PROPERTY_MAP(PROPERTY_NAME_)
#undef PROPERTY_NAME_
};

static void print_conf(void)
{
#define KEY_LINE_(list, key) printf("%s\t%s\n", list, key);
#define PLUGIN_KEY_(ID, key) KEY_LINE_("conf:plugin", key)
#define NARROW_KEY_(key, KIND, FIELD) KEY_LINE_("conf:narrow", key)
#define REGISTRY_KEY_(ID, key) KEY_LINE_("conf:registry", key)
#define FALLBACK_KEY_(ID, key) KEY_LINE_("conf:fallback", key)
#define FALLBACK_FIELD_(ID, member) KEY_LINE_("fallback-fields", property_names[FIELD_##ID])
#define BOOL_WORD_(word, value) KEY_LINE_("conf-booleans", word)
    ATTN_CONF_PLUGIN_KEY_MAP(PLUGIN_KEY_)
    ATTN_CONF_NARROW_KEY_MAP(NARROW_KEY_)
    ATTN_CONF_REGISTRY_KEY_MAP(REGISTRY_KEY_)
    ATTN_CONF_FALLBACK_KEY_MAP(FALLBACK_KEY_)
    ATTN_FALLBACK_FIELD_MAP(FALLBACK_FIELD_)
    ATTN_CONF_BOOL_MAP(BOOL_WORD_)
#undef BOOL_WORD_
#undef PLUGIN_KEY_
#undef NARROW_KEY_
#undef REGISTRY_KEY_
#undef FALLBACK_KEY_
#undef FALLBACK_FIELD_
#undef KEY_LINE_
}

static void print_types(void)
{
    /* INVALID (0) is no dtype a user can name. */
#define DTYPE_LINE_(NAME, value, spelling, bytes, fp8)                                             \
    if (value != ATTN_DTYPE_INVALID)                                                               \
        printf("dtypes\t%s\n", spelling);
    ATTN_DTYPE_MAP(DTYPE_LINE_)
#undef DTYPE_LINE_
#define LEVEL_LINE_(NAME, value, name) printf("log-levels\t%s\n", name);
    ATTN_LOG_LEVEL_MAP(LEVEL_LINE_)
#undef LEVEL_LINE_
#define FIELD_LINE_(member, KIND) printf("shape-fields\t%s\n", #member);
    ATTN_SHAPE_FIELD_MAP(FIELD_LINE_)
#undef FIELD_LINE_
#define PHASE_LINE_(NAME, value, name) printf("phases\t%s\n", name);
    ATTN_PHASE_MAP(PHASE_LINE_)
#undef PHASE_LINE_
#define LAYER_KIND_LINE_(NAME, value, name) printf("layer-kinds\t%s\n", name);
    ATTN_LAYER_KIND_MAP(LAYER_KIND_LINE_)
#undef LAYER_KIND_LINE_
}

int main(void)
{
    printf("version\t%d.%d\n", ATTNREG_VERSION_MAJOR, ATTNREG_VERSION_MINOR);
    print_commands();
    print_types();
    print_statuses();
    print_conf();
    return ferror(stdout) ? 1 : 0;
}
