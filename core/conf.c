/* SPDX-License-Identifier: Apache-2.0 */
/* conf.c — reading the INI files of a conf folder (inih), with every error
 * naming file:line. A file is first read whole into (section, key, value,
 * line) entries, then interpreted, so that format_version is known before any
 * other key is judged, whatever order the file uses. */
#define _DEFAULT_SOURCE /* dirfd */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "candidate.h"
#include "diag.h"
#include "internal.h"

#define CONF_FORMAT_MAJOR 1
#define CONF_FORMAT_MINOR 0

typedef struct conf_entry {
    char *section;
    char *key;
    char *value;
    int32_t line;
} conf_entry;

/* A conf file is at most this big (bytes) and its lines at most this long
 * (bytes, without the newline): inih would split a longer line and read its
 * tail as a new line, so such a file is refused with file:line instead. */
#define CONF_MAX_BYTES (1 << 20)
#define CONF_MAX_LINE ((1 << 16) - 2)

typedef struct conf_source {
    const char *path;
    conf_entry *entries;
    size_t num_entries;
    size_t cap_entries;
    const char *text; /* the whole file, read before parsing */
    size_t text_len;
    size_t text_pos;
    int32_t line;     /* the line the reader last returned */
    int32_t mid_line; /* the last read ended inside a line */
    int32_t oom;
} conf_source;

/* inih calls the reader once per line, or several times for a line longer
 * than its buffer, so a line is counted when a read starts at a line start:
 * that gives the line number of the key the handler is about to see
 * (Debian's inih is built without INI_HANDLER_LINENO). */
static char *count_lines_reader(char *str, int num, void *stream)
{
    conf_source *cf = stream;
    if (num < 2 || cf->text_pos >= cf->text_len)
        return NULL;
    /* fgets over the in-memory file: up to a newline or num - 1 bytes. */
    size_t room = (size_t)num - 1, n = 0;
    const char *at = cf->text + cf->text_pos;
    size_t left = cf->text_len - cf->text_pos;
    while (n < room && n < left) {
        str[n] = at[n];
        if (at[n++] == '\n')
            break;
    }
    str[n] = '\0';
    cf->text_pos += n;
    if (!cf->mid_line)
        cf->line++;
    cf->mid_line = str[n - 1] != '\n';
    return str;
}

/* Reads the whole file behind fd (at most CONF_MAX_BYTES) and checks what
 * inih would get wrong silently: a line too long for it, a NUL byte. 0, or
 * -1 after a diagnostic naming file:line. */
static int read_conf_text(attn_registry *reg, const char *path, int fd, const struct stat *st,
                          char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    if (st->st_size > CONF_MAX_BYTES) {
        attn_diag_add(reg, ATTN_ERR_CONF, path, 0, NULL,
                      "%s: %lld bytes, larger than the %d a conf file may have; file "
                      "ignored",
                      path, (long long)st->st_size, CONF_MAX_BYTES);
        return -1;
    }
    char *text = malloc((size_t)st->st_size + 1);
    if (!text) {
        attn_diag_add(reg, ATTN_ERR_CONF, path, 0, NULL, "%s: out of memory", path);
        return -1;
    }
    size_t n = 0;
    /* Bounded by the size fstat gave, plus one byte to see growth. */
    while (n <= (size_t)st->st_size) {
        ssize_t r = read(fd, text + n, (size_t)st->st_size + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            attn_diag_add(reg, ATTN_ERR_IO, path, 0, NULL, "%s: read error: %s", path,
                          strerror(errno));
            free(text);
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (n > (size_t)st->st_size) {
        attn_diag_add(reg, ATTN_ERR_IO, path, 0, NULL,
                      "%s: the file grew while it was read; file ignored", path);
        free(text);
        return -1;
    }
    int32_t line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && text[i] == '\0') {
            attn_diag_add(reg, ATTN_ERR_CONF, path, line, NULL,
                          "%s:%d: NUL byte in a conf file (the rest of the line would "
                          "be ignored); file ignored",
                          path, line);
            free(text);
            return -1;
        }
        if (i == n || text[i] == '\n') {
            size_t length = i - line_start;
            if (length > 0 && text[i - 1] == '\r')
                length--;
            if (length > CONF_MAX_LINE) {
                attn_diag_add(reg, ATTN_ERR_CONF, path, line, NULL,
                              "%s:%d: line of %zu bytes, longer than the %d a conf "
                              "line may have; file ignored",
                              path, line, length, CONF_MAX_LINE);
                free(text);
                return -1;
            }
            line++;
            line_start = i + 1;
        }
    }
    text[n] = '\0';
    *out = text;
    *len = n;
    return 0;
}

static int collect_entry(void *user, const char *section, const char *key, const char *value)
{
    conf_source *cf = user;
    if (!key)
        return 1; /* a section header with no keys yet */
    if (cf->num_entries == cf->cap_entries) {
        size_t cap = cf->cap_entries ? cf->cap_entries * 2 : 16;
        conf_entry *p = realloc(cf->entries, cap * sizeof *p);
        if (!p) {
            cf->oom = 1;
            return 0;
        }
        cf->entries = p;
        cf->cap_entries = cap;
    }
    conf_entry *e = &cf->entries[cf->num_entries++];
    e->section = attn_strdup(section);
    e->key = attn_strdup(key);
    e->value = attn_strdup(value);
    e->line = cf->line;
    return 1;
}

/* inih's parsing options are process-wide variables in Debian's build. We
 * need lines of any length (a deep install prefix makes long library paths)
 * and no continuation lines (an indented line would silently become a second
 * value of the previous key, and a list would lose its first half), so they
 * are set around each parse under one lock and restored after. */
static pthread_mutex_t inih_options_lock = PTHREAD_MUTEX_INITIALIZER;

static int parse_with_our_options(conf_source *cf)
{
    pthread_mutex_lock(&inih_options_lock);
    bool use_stack = ini_use_stack, allow_realloc = ini_allow_realloc;
    bool multiline = ini_allow_multiline;
    int max_line = ini_max_line, initial_alloc = ini_initial_alloc;
    ini_use_stack = false;
    ini_allow_realloc = true;
    ini_initial_alloc = 256;
    ini_max_line = 1 << 16;
    ini_allow_multiline = false;
    int rc = ini_parse_stream(count_lines_reader, cf, collect_entry, cf);
    ini_use_stack = use_stack;
    ini_allow_realloc = allow_realloc;
    ini_allow_multiline = multiline;
    ini_max_line = max_line;
    ini_initial_alloc = initial_alloc;
    pthread_mutex_unlock(&inih_options_lock);
    return rc;
}

static void conf_source_free(conf_source *cf)
{
    for (size_t i = 0; i < cf->num_entries; i++) {
        free(cf->entries[i].section);
        free(cf->entries[i].key);
        free(cf->entries[i].value);
    }
    free(cf->entries);
}

/* ---- value parsing ----------------------------------------------------- */

static int parse_int(const char *s, int32_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < INT32_MIN || v > INT32_MAX)
        return 0;
    *out = (int32_t)v;
    return 1;
}

static int parse_bool(const char *s, int32_t *out)
{
    static const struct {
        const char *word;
        int32_t value;
    } words[] = {
#define CONF_BOOL_ROW_(word, value) {word, value},
        ATTN_CONF_BOOL_MAP(CONF_BOOL_ROW_)
#undef CONF_BOOL_ROW_
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(s, words[i].word) == 0) {
            *out = words[i].value;
            return 1;
        }
    return 0;
}

/* Splits "a, b c" into a NULL-terminated array of words. */
static char **split_list(const char *s, uint32_t *count)
{
    size_t n = 0, cap = 4;
    char **words = malloc(cap * sizeof *words);
    if (!words)
        return NULL;
    const char *p = s;
    while (*p) {
        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        if (n + 2 > cap) {
            cap *= 2;
            char **q = realloc(words, cap * sizeof *q);
            if (!q)
                break;
            words = q;
        }
        words[n] = malloc((size_t)(p - start) + 1);
        if (!words[n])
            break;
        memcpy(words[n], start, (size_t)(p - start));
        words[n][p - start] = '\0';
        n++;
    }
    words[n] = NULL;
    *count = (uint32_t)n;
    return words;
}

static void free_list(char **words)
{
    if (!words)
        return;
    for (char **w = words; *w; w++)
        free(*w);
    free(words);
}

static int parse_format_version(const char *s, int32_t *major, int32_t *minor)
{
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || *end != '.')
        return 0;
    const char *b = end + 1;
    long m = strtol(b, &end, 10);
    if (end == b || *end != '\0' || a < 0 || m < 0 || a > 1000 || m > 1000)
        return 0;
    *major = (int32_t)a;
    *minor = (int32_t)m;
    return 1;
}

static const struct {
    const char *key;
    narrow_kind kind;
    shape_field field;
} narrow_keys[] = {
#define NARROW_KEY_ROW_(key, KIND, FIELD) {key, NARROW_##KIND, FIELD_##FIELD},
    ATTN_CONF_NARROW_KEY_MAP(NARROW_KEY_ROW_)
#undef NARROW_KEY_ROW_
};

/* The keys of [plugin] and [fallback:NAME] (internal.h's maps), for a
 * switch over their IDs; key_index gives the count for an unknown key. */
typedef enum plugin_key {
#define PLUGIN_KEY_ENUM_(ID, key) PLUGIN_KEY_##ID,
    ATTN_CONF_PLUGIN_KEY_MAP(PLUGIN_KEY_ENUM_)
#undef PLUGIN_KEY_ENUM_
        PLUGIN_KEY_UNKNOWN
} plugin_key;
static const char *const plugin_keys[] = {
#define PLUGIN_KEY_NAME_(ID, key) key,
    ATTN_CONF_PLUGIN_KEY_MAP(PLUGIN_KEY_NAME_)
#undef PLUGIN_KEY_NAME_
};
typedef enum fallback_key {
#define FALLBACK_KEY_ENUM_(ID, key) FALLBACK_KEY_##ID,
    ATTN_CONF_FALLBACK_KEY_MAP(FALLBACK_KEY_ENUM_)
#undef FALLBACK_KEY_ENUM_
        FALLBACK_KEY_UNKNOWN
} fallback_key;
static const char *const fallback_keys[] = {
#define FALLBACK_KEY_NAME_(ID, key) key,
    ATTN_CONF_FALLBACK_KEY_MAP(FALLBACK_KEY_NAME_)
#undef FALLBACK_KEY_NAME_
};
static const char *const registry_keys[] = {
#define REGISTRY_KEY_NAME_(ID, key) key,
    ATTN_CONF_REGISTRY_KEY_MAP(REGISTRY_KEY_NAME_)
#undef REGISTRY_KEY_NAME_
};

static size_t key_index(const char *key, const char *const *keys, size_t count)
{
    size_t k = 0;
    while (k < count && strcmp(keys[k], key) != 0)
        k++;
    return k;
}
#define KEY_COUNT(keys) (sizeof(keys) / sizeof(keys)[0])
#define KEY_INDEX(key, keys) key_index((key), (keys), KEY_COUNT(keys))

/* ---- interpretation ---------------------------------------------------- */

typedef struct interp {
    attn_registry *reg;
    const char *path;
    int32_t format_minor;
    int errors;
} interp;

#define CONF_ERROR(it, line, ...)                                                                  \
    do {                                                                                           \
        attn_diag_add((it)->reg, ATTN_ERR_CONF, (it)->path, (line), NULL, __VA_ARGS__);            \
        (it)->errors++;                                                                            \
    } while (0)

/* An unknown key is an error in a file of our own minor (a typo must not be
 * silently ignored) and a warning in a file written for a newer minor. */
static void unknown_key(interp *it, const conf_entry *e)
{
    if (it->format_minor > CONF_FORMAT_MINOR) {
        attn_log(&it->reg->logger, ATTN_LOG_WARN,
                 "%s:%d: ignoring key '%s' in [%s] (file is format 1.%d, newer than 1.%d)",
                 it->path, e->line, e->key, e->section, it->format_minor, CONF_FORMAT_MINOR);
        return;
    }
    CONF_ERROR(it, e->line, "%s:%d: unknown key '%s' in [%s]", it->path, e->line, e->key,
               e->section);
}

static char *resolve_library(const char *conf_path, const char *library)
{
    char *joined;
    if (library[0] == '/') {
        joined = attn_strdup(library);
    } else {
        const char *slash = strrchr(conf_path, '/');
        int dirlen = slash ? (int)(slash - conf_path) : 1;
        joined = attn_asprintf("%.*s/%s", dirlen, slash ? conf_path : ".", library);
    }
    /* Show users the real path when it exists; keep the joined one otherwise
     * so the load failure names what was looked for. */
    char real[PATH_MAX];
    if (joined && realpath(joined, real)) {
        free(joined);
        return attn_strdup(real);
    }
    return joined;
}

static int parse_narrow(interp *it, const conf_entry *e, narrow_rule *r)
{
    size_t k;
    for (k = 0; k < sizeof narrow_keys / sizeof narrow_keys[0]; k++)
        if (strcmp(narrow_keys[k].key, e->key) == 0)
            break;
    if (k == sizeof narrow_keys / sizeof narrow_keys[0]) {
        unknown_key(it, e);
        return 0;
    }
    memset(r, 0, sizeof *r);
    r->kind = narrow_keys[k].kind;
    r->field = narrow_keys[k].field;
    r->line = e->line;
    uint32_t n = 0;
    char **words;
    switch (r->kind) {
    case NARROW_DTYPES:
        words = split_list(e->value, &n);
        if (!words || n == 0) {
            free_list(words);
            CONF_ERROR(it, e->line, "%s:%d: %s needs at least one dtype", it->path, e->line,
                       e->key);
            return 0;
        }
        for (uint32_t i = 0; i < n; i++) {
            attn_dtype d = attn_dtype_from_name(words[i]);
            if (d == ATTN_DTYPE_INVALID) {
                /* The names of attn_types.h's ATTN_DTYPE_MAP but INVALID (0). */
                strbuf known = {0};
                for (int32_t t = 1; t < ATTN_DTYPE_COUNT; t++)
                    strbuf_printf(&known, "%s%s", t > 1 ? " " : "", attn_dtype_spelling(t));
                char *text = strbuf_take(&known);
                CONF_ERROR(it, e->line, "%s:%d: %s: unknown dtype '%s' (known: %s)", it->path,
                           e->line, e->key, words[i], text);
                free(text);
                free_list(words);
                return 0;
            }
            r->dtype_mask |= 1u << d;
        }
        free_list(words);
        break;
    case NARROW_INTS:
        words = split_list(e->value, &n);
        if (!words || n == 0) {
            free_list(words);
            CONF_ERROR(it, e->line, "%s:%d: %s needs at least one integer", it->path, e->line,
                       e->key);
            return 0;
        }
        r->values = calloc(n, sizeof *r->values);
        r->num_values = n;
        for (uint32_t i = 0; i < n; i++) {
            if (!r->values || !parse_int(words[i], &r->values[i]) || r->values[i] <= 0) {
                CONF_ERROR(it, e->line, "%s:%d: %s: '%s' is not a positive integer", it->path,
                           e->line, e->key, words[i]);
                free_list(words);
                free(r->values);
                r->values = NULL;
                return 0;
            }
        }
        free_list(words);
        break;
    case NARROW_MIN:
    case NARROW_MAX:
        if (!parse_int(e->value, &r->limit) || r->limit <= 0) {
            CONF_ERROR(it, e->line, "%s:%d: %s = '%s' is not a positive integer", it->path, e->line,
                       e->key, e->value);
            return 0;
        }
        break;
    case NARROW_FEATURE:
        if (!parse_bool(e->value, &r->allowed)) {
            CONF_ERROR(it, e->line, "%s:%d: %s = '%s' is not a boolean (true/false)", it->path,
                       e->line, e->key, e->value);
            return 0;
        }
        break;
    }
    r->key = attn_strdup(e->key);
    return 1;
}

void attn_conf_free_rule(fallback_rule *r)
{
    free(r->name);
    free(r->conf_file);
    free(r->text);
}

static attn_candidate *find_candidate(attn_registry *reg, const char *name)
{
    const strmap_slot *slot = strmap_find(&reg->candidate_names, name, NULL);
    return slot ? reg->candidates[slot->value] : NULL;
}

/* 1 when two conf file paths name files of one folder. */
static int same_folder(const char *a, const char *b)
{
    const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
    size_t la = sa ? (size_t)(sa - a) : 0, lb = sb ? (size_t)(sb - b) : 0;
    return la == lb && strncmp(a, b, la) == 0;
}

static void interpret_plugin(interp *it, const conf_source *cf)
{
    attn_candidate *c = attn_candidate_new(it->reg, it->path);
    if (!c) {
        CONF_ERROR(it, 0, "%s: out of memory", it->path);
        return;
    }
    int32_t have_priority = 0, library_line = 0;
    char *library = NULL;
    size_t cap_narrow = 0, cap_params = 0;

    for (size_t i = 0; i < cf->num_entries; i++) {
        const conf_entry *e = &cf->entries[i];
        if (strcmp(e->section, "plugin") == 0) {
            switch ((plugin_key)KEY_INDEX(e->key, plugin_keys)) {
            case PLUGIN_KEY_FORMAT_VERSION:
                break; /* load_file read it */
            case PLUGIN_KEY_NAME:
                if (e->value[0] == '\0' || strpbrk(e->value, " \t,/")) {
                    CONF_ERROR(it, e->line,
                               "%s:%d: name '%s' must be non-empty, without spaces, commas or "
                               "slashes",
                               it->path, e->line, e->value);
                    break;
                }
                free(c->name);
                c->name = attn_strdup(e->value);
                c->name_line = e->line;
                break;
            case PLUGIN_KEY_LIBRARY:
                free(library);
                library = attn_strdup(e->value);
                library_line = e->line;
                break;
            case PLUGIN_KEY_PRIORITY:
                if (!parse_int(e->value, &c->priority))
                    CONF_ERROR(it, e->line, "%s:%d: priority = '%s' is not an integer", it->path,
                               e->line, e->value);
                have_priority = 1;
                break;
            case PLUGIN_KEY_ENABLED:
                if (!parse_bool(e->value, &c->enabled))
                    CONF_ERROR(it, e->line, "%s:%d: enabled = '%s' is not a boolean (true/false)",
                               it->path, e->line, e->value);
                c->enabled_line = e->line;
                break;
            case PLUGIN_KEY_ARCHS: {
                free_list(c->archs);
                free(c->archs_text);
                c->archs = split_list(e->value, &c->num_archs);
                c->archs_line = e->line;
                /* Kept normalised ("a, b") so listings read the same however
                 * the file spaced them. */
                strbuf sb = {0};
                for (uint32_t a = 0; c->archs && a < c->num_archs; a++)
                    strbuf_printf(&sb, "%s%s", a ? ", " : "", c->archs[a]);
                c->archs_text = strbuf_take(&sb);
                for (uint32_t a = 0; c->archs && a < c->num_archs; a++)
                    if (strlen(c->archs[a]) >= ATTN_ARCH_MAX)
                        CONF_ERROR(it, e->line, "%s:%d: arch '%s' is longer than %d characters",
                                   it->path, e->line, c->archs[a], ATTN_ARCH_MAX - 1);
                break;
            }
            case PLUGIN_KEY_UNKNOWN:
                unknown_key(it, e);
                break;
            }
        } else if (strcmp(e->section, "narrow") == 0) {
            if (c->num_narrow == cap_narrow) {
                cap_narrow = cap_narrow ? cap_narrow * 2 : 4;
                narrow_rule *p = realloc(c->narrow, cap_narrow * sizeof *p);
                if (!p) {
                    CONF_ERROR(it, e->line, "%s: out of memory", it->path);
                    break;
                }
                c->narrow = p;
            }
            if (parse_narrow(it, e, &c->narrow[c->num_narrow]))
                c->num_narrow++;
        } else if (strcmp(e->section, "params") == 0) {
            if (c->num_params == cap_params) {
                cap_params = cap_params ? cap_params * 2 : 4;
                attn_param *p = realloc(c->params, cap_params * sizeof *p);
                if (!p) {
                    CONF_ERROR(it, e->line, "%s: out of memory", it->path);
                    break;
                }
                c->params = p;
            }
            c->params[c->num_params].key = attn_strdup(e->key);
            c->params[c->num_params].value = attn_strdup(e->value);
            c->num_params++;
        } else {
            CONF_ERROR(it, e->line,
                       "%s:%d: unknown section [%s] in a plugin file (known: plugin, narrow, "
                       "params)",
                       it->path, e->line, e->section);
        }
    }
    if (!c->name)
        CONF_ERROR(it, 0, "%s: [plugin] has no 'name'", it->path);
    if (!library)
        CONF_ERROR(it, 0, "%s: [plugin] has no 'library'", it->path);
    else if (library[0] == '\0')
        CONF_ERROR(it, library_line, "%s:%d: library is empty", it->path, library_line);
    if (!have_priority)
        CONF_ERROR(it, 0, "%s: [plugin] has no 'priority'", it->path);
    if (!c->archs || c->num_archs == 0)
        CONF_ERROR(it, c->archs_line, "%s:%d: [plugin] needs a non-empty 'archs' list", it->path,
                   c->archs_line);
    if (it->errors) {
        free(library);
        attn_candidate_free(c);
        return;
    }
    c->library = resolve_library(it->path, library);
    free(library);

    attn_registry *reg = it->reg;
    attn_candidate *twin = find_candidate(reg, c->name);
    if (twin && !same_folder(twin->conf_file, it->path)) {
        /* Layered search: a folder searched earlier (the host's, then
         * ATTNREG_CONF_PATH, then <sysconfdir>/attnreg/conf.d) overrides the
         * shipped definition on purpose; not a problem. */
        attn_log(&reg->logger, ATTN_LOG_INFO,
                 "%s:%d: plugin '%s' is overridden by %s:%d (a folder searched earlier); this "
                 "file is ignored",
                 it->path, c->name_line, c->name, twin->conf_file, twin->name_line);
        attn_candidate_free(c);
        return;
    }
    if (twin) {
        attn_diag_add(reg, ATTN_ERR_CONF, it->path, c->name_line, c->name,
                      "%s:%d: plugin name '%s' is already defined in %s:%d; this file "
                      "is ignored",
                      it->path, c->name_line, c->name, twin->conf_file, twin->name_line);
        attn_candidate_free(c);
        return;
    }
    if (reg->num_candidates == reg->cap_candidates) {
        size_t cap = reg->cap_candidates ? reg->cap_candidates * 2 : 8;
        attn_candidate **p = realloc(reg->candidates, cap * sizeof *p);
        if (!p) {
            attn_candidate_free(c);
            return;
        }
        reg->candidates = p;
        reg->cap_candidates = cap;
    }
    const strmap_slot *slot;
    if (strmap_put(&reg->candidate_names, c->name, NULL, reg->num_candidates, &slot) < 0) {
        attn_candidate_free(c);
        return;
    }
    reg->candidates[reg->num_candidates++] = c;
}

/* A rule's `field`: one of ATTN_FALLBACK_FIELD_MAP's, by its message name. */
static void parse_fallback_field(interp *it, const conf_entry *e, fallback_rule *r)
{
    static const shape_field fields[] = {
#define FALLBACK_FIELD_ID_(ID, member) FIELD_##ID,
        ATTN_FALLBACK_FIELD_MAP(FALLBACK_FIELD_ID_)
#undef FALLBACK_FIELD_ID_
    };
    const size_t count = sizeof fields / sizeof fields[0];
    for (size_t k = 0; k < count; k++)
        if (strcmp(e->value, attn_field_name(fields[k])) == 0) {
            r->field = fields[k];
            return;
        }
    strbuf names = {0};
    for (size_t k = 0; k < count; k++)
        strbuf_printf(&names, "%s%s",
                      k == 0           ? ""
                      : k + 1 == count ? " or "
                                       : ", ",
                      attn_field_name(fields[k]));
    char *text = strbuf_take(&names);
    CONF_ERROR(it, e->line, "%s:%d: field = '%s': fallback rules rewrite %s", it->path, e->line,
               e->value, text);
    free(text);
}

static void interpret_registry(interp *it, const conf_source *cf)
{
    attn_registry *reg = it->reg;
    size_t first_new = reg->num_rules;
    strmap names = {0};
    /* A rule is a [fallback:NAME] section; its keys can come in any order. */
    for (size_t i = 0; i < cf->num_entries; i++) {
        const conf_entry *e = &cf->entries[i];
        if (strcmp(e->section, "registry") == 0) {
            if (KEY_INDEX(e->key, registry_keys) == KEY_COUNT(registry_keys))
                unknown_key(it, e);
            continue;
        }
        if (strncmp(e->section, "fallback:", 9) != 0 || e->section[9] == '\0') {
            CONF_ERROR(it, e->line,
                       "%s:%d: unknown section [%s] in a registry file (known: registry, "
                       "fallback:NAME)",
                       it->path, e->line, e->section);
            continue;
        }
        const char *name = e->section + 9;
        fallback_rule *r = NULL;
        /* Rules of this file by name, in a hash: a file of many rules is
         * read in linear time. The keys are the entries' section names. */
        const strmap_slot *slot = strmap_find(&names, name, NULL);
        if (slot)
            r = &reg->rules[slot->value];
        if (!r) {
            if (reg->num_rules == reg->cap_rules) {
                size_t cap = reg->cap_rules ? reg->cap_rules * 2 : 8;
                fallback_rule *p = realloc(reg->rules, cap * sizeof *p);
                if (!p)
                    break;
                reg->rules = p;
                reg->cap_rules = cap;
            }
            if (strmap_put(&names, name, NULL, reg->num_rules, &slot) < 0)
                break;
            r = &reg->rules[reg->num_rules++];
            memset(r, 0, sizeof *r);
            r->name = attn_strdup(name);
            r->conf_file = attn_strdup(it->path);
            r->line = e->line;
            r->field = (shape_field)-1;
        }
        const fallback_key key = (fallback_key)KEY_INDEX(e->key, fallback_keys);
        switch (key) {
        case FALLBACK_KEY_FIELD:
            parse_fallback_field(it, e, r);
            break;
        case FALLBACK_KEY_FROM:
        case FALLBACK_KEY_TO: {
            attn_dtype d = attn_dtype_from_name(e->value);
            if (d == ATTN_DTYPE_INVALID)
                CONF_ERROR(it, e->line, "%s:%d: %s = '%s' is not a known dtype", it->path, e->line,
                           e->key, e->value);
            if (key == FALLBACK_KEY_FROM)
                r->from = d;
            else
                r->to = d;
            break;
        }
        case FALLBACK_KEY_UNKNOWN:
            unknown_key(it, e);
            break;
        }
    }
    strmap_free(&names, 0);
    for (size_t k = first_new; k < reg->num_rules; k++) {
        fallback_rule *r = &reg->rules[k];
        if ((int)r->field < 0 || !r->from || !r->to)
            CONF_ERROR(it, r->line, "%s:%d: [fallback:%s] needs field, from and to", it->path,
                       r->line, r->name);
    }
    if (it->errors) {
        /* The file is rejected whole: half a rule set would change
         * decisions silently. */
        for (size_t k = first_new; k < reg->num_rules; k++)
            attn_conf_free_rule(&reg->rules[k]);
        reg->num_rules = first_new;
        return;
    }
    for (size_t k = first_new; k < reg->num_rules; k++) {
        fallback_rule *r = &reg->rules[k];
        r->text = attn_asprintf("%s %s -> %s", attn_field_name(r->field), attn_dtype_name(r->from),
                                attn_dtype_name(r->to));
    }
}

static void load_file(attn_registry *reg, const char *path)
{
    conf_source cf = {0};
    cf.path = path;
    struct stat st;
    char why[256];
    int fd = attn_open_regular(path, &st, why, sizeof why);
    if (fd < 0) {
        attn_diag_add(reg, ATTN_ERR_IO, path, 0, NULL, "%s: cannot open: %s", path, why);
        return;
    }
    char *text = NULL;
    if (attn_trust_check(reg, &st, path, "conf file", NULL, ATTN_ERR_CONF) < 0 ||
        read_conf_text(reg, path, fd, &st, &text, &cf.text_len) != 0) {
        close(fd);
        return;
    }
    close(fd);
    cf.text = text;
    int rc = parse_with_our_options(&cf);
    free(text);
    cf.text = NULL;
    if (rc != 0 || cf.oom) {
        if (rc > 0)
            attn_diag_add(reg, ATTN_ERR_CONF, path, rc, NULL,
                          "%s:%d: syntax error (expected [section], key = value or a "
                          "comment); file ignored",
                          path, rc);
        else
            attn_diag_add(reg, ATTN_ERR_CONF, path, 0, NULL, "%s: cannot parse (%s)", path,
                          cf.oom || rc == -2 ? "out of memory" : "read error");
        conf_source_free(&cf);
        return;
    }

    interp it = {reg, path, 0, 0};
    /* A repeated key is an error, not "last one wins": which of two values
     * the author meant is not ours to guess. One pass with a hash of
     * (section, key): linear in the number of keys. */
    strmap seen = {0};
    for (size_t i = 0; i < cf.num_entries; i++) {
        const strmap_slot *slot;
        int put = strmap_put(&seen, cf.entries[i].section, cf.entries[i].key, i, &slot);
        if (put < 0) {
            CONF_ERROR(&it, 0, "%s: out of memory", path);
            break;
        }
        if (put == 0)
            CONF_ERROR(&it, cf.entries[i].line,
                       "%s:%d: key '%s' in [%s] repeats line %d; file ignored", path,
                       cf.entries[i].line, cf.entries[i].key, cf.entries[i].section,
                       cf.entries[slot->value].line);
    }
    strmap_free(&seen, 0);
    if (it.errors) {
        conf_source_free(&cf);
        return;
    }
    int has_plugin = 0, has_registry = 0;
    const conf_entry *version = NULL;
    for (size_t i = 0; i < cf.num_entries; i++) {
        const conf_entry *e = &cf.entries[i];
        if (strcmp(e->section, "plugin") == 0)
            has_plugin = 1;
        if (strcmp(e->section, "registry") == 0)
            has_registry = 1;
        if ((strcmp(e->section, "plugin") == 0 || strcmp(e->section, "registry") == 0) &&
            strcmp(e->key, ATTN_CONF_FORMAT_VERSION_KEY) == 0)
            version = e;
    }
    if (has_plugin == has_registry) {
        CONF_ERROR(&it, 0,
                   has_plugin ? "%s: has both [plugin] and [registry]; one file describes one "
                                "thing"
                              : "%s: has neither a [plugin] nor a [registry] section",
                   path);
        conf_source_free(&cf);
        return;
    }
    int32_t major, minor;
    if (!version) {
        CONF_ERROR(&it, 0, "%s: [%s] has no format_version (this attnreg reads %d.%d)", path,
                   has_plugin ? "plugin" : "registry", CONF_FORMAT_MAJOR, CONF_FORMAT_MINOR);
    } else if (!parse_format_version(version->value, &major, &minor)) {
        CONF_ERROR(&it, version->line, "%s:%d: format_version '%s' is not MAJOR.MINOR", path,
                   version->line, version->value);
    } else if (major != CONF_FORMAT_MAJOR) {
        CONF_ERROR(&it, version->line,
                   "%s:%d: format_version %d.%d is not supported (this attnreg reads %d.x); "
                   "file ignored",
                   path, version->line, major, minor, CONF_FORMAT_MAJOR);
    } else {
        it.format_minor = minor;
        if (minor > CONF_FORMAT_MINOR)
            attn_diag_add(reg, ATTN_OK, path, version->line, NULL,
                          "%s:%d: warning: format_version %d.%d is newer than %d.%d; "
                          "keys this attnreg does not know are ignored",
                          path, version->line, major, minor, CONF_FORMAT_MAJOR, CONF_FORMAT_MINOR);
    }
    if (!it.errors) {
        if (has_plugin)
            interpret_plugin(&it, &cf);
        else
            interpret_registry(&it, &cf);
    }
    conf_source_free(&cf);
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void attn_conf_load_dir(attn_registry *reg, const char *dir, int explicit_path)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (explicit_path)
            attn_diag_add(reg, ATTN_ERR_IO, dir, 0, NULL, "conf folder %s cannot be read: %s", dir,
                          strerror(errno));
        else
            attn_log(&reg->logger, ATTN_LOG_DEBUG, "default conf folder %s absent: %s", dir,
                     strerror(errno));
        return;
    }
    struct stat dst;
    if (fstat(dirfd(d), &dst) == 0 &&
        attn_trust_check(reg, &dst, dir, "conf folder", NULL, ATTN_ERR_CONF) < 0) {
        closedir(d);
        return;
    }
    /* Sorted, so that the order of rules and of duplicate names does not
     * depend on the file system. */
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (len < 5 || strcmp(ent->d_name + len - 4, ".ini") != 0 || ent->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **p = realloc(names, cap * sizeof *p);
            if (!p)
                break;
            names = p;
        }
        names[n++] = attn_strdup(ent->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n; i++) {
        char *path = attn_asprintf("%s/%s", dir, names[i]);
        struct stat st;
        errno = 0;
        if (path && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            load_file(reg, path);
        else if (path && errno == ELOOP)
            attn_diag_add(reg, ATTN_OK, path, 0, NULL,
                          "warning: %s is a symbolic link loop; skipped", path);
        else if (path && lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
            attn_diag_add(reg, ATTN_OK, path, 0, NULL,
                          "warning: %s is a symbolic link to nothing; skipped", path);
        else if (path && lstat(path, &st) == 0)
            attn_diag_add(reg, ATTN_OK, path, 0, NULL, "warning: %s is not a regular file; skipped",
                          path);
        free(path);
        free(names[i]);
    }
    free(names);
}
