/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheaged's configuration parser.
 *
 * inih splits "key = value" lines (whitespace, comments, inline comments), but on its own it
 * cannot do what we need: its handler gets no line number (INI_HANDLER_LINENO is compiled 0
 * in Debian's build), it is not told about a section header (so an empty [cache x] would
 * go unseen), it cuts section names at 49 bytes, and it reports only the first syntax error
 * of a file. So every raw line goes through our reader first (conf_reader), which
 *
 *   - counts lines, so that the handler knows where it is;
 *   - refuses lines over CA_CONF_LINE_MAX bytes (inih would silently cut them into two);
 *   - parses section headers itself and keeps the current section;
 *   - finds syntax errors itself, each with its own message;
 *
 * and hands inih only the "key = value" lines: any other line reaches inih as an empty
 * line, which keeps inih's line count in step with ours. Whatever inih then still calls an
 * error means that it and the reader disagree; that is reported as a plain syntax error.
 *
 * Continuation lines (an indented line after a key, Python configparser style) are turned
 * off: an indented "key = value" is an ordinary key, and an indented line without "=" is an
 * error that says continuation lines are not supported. Keys are usually indented by people
 * who mean nothing by it, and a continuation would silently glue the next line to a value.
 *
 * Inline comments start with ';' after whitespace ("interval = 30s ; half a minute"); a '#'
 * starts a comment only at the beginning of a line, so "path = /a#b" keeps its '#'.
 *
 * The configuration is built in one struct ca_conf that is handed out only when no error
 * was found in any file; everything else is freed on every path.
 */

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <unistd.h>

#include "cacheage-build.h" /* CA_PLUGIN_DIR, CA_CONFIG_FILE */
#include "cacheage/plugin.h" /* the key tables */
#include "config.h"
#include "trust.h"

#ifndef CA_PLUGIN_DIR
#error "CA_PLUGIN_DIR missing: the build's generated cacheage-build.h was not found"
#endif

#define SLICE_BUDGET_MAX 1000000ULL /* nodes */
#define SLICE_TIME_MIN_USEC 100ULL
#define SLICE_TIME_MAX_USEC 1000000ULL
#define CHECK_TIMEOUT_MIN_USEC 100000ULL
#define CHECK_TIMEOUT_MAX_USEC 600000000ULL
#define MAX_DEFER_MAX 1000ULL /* rotations */
#define HISTORY_ROTATIONS_MAX 100000ULL /* rotations kept per cache */

#define NAME_CHARS "A-Z a-z 0-9 _ . -"

#define STR_(x) #x
#define STR(x) STR_(x)

/*
 * The keys, one table per section kind, in the form adapters use (cacheage/plugin.h): type,
 * limits, default and target field in one line each, read by the library's ca_key_parse(),
 * so that a value is written and refused the same way here as in any adapter's section.
 * config.h says what each field means.
 */

/* Indexed by syslog level, as systemd's log_level_from_string() names them. */
static const struct ca_key_choice log_levels[] = {
        { "emerg", LOG_EMERG },     { "alert", LOG_ALERT }, { "crit", LOG_CRIT },
        { "err", LOG_ERR },         { "warning", LOG_WARNING }, { "notice", LOG_NOTICE },
        { "info", LOG_INFO },       { "debug", LOG_DEBUG },   { NULL, 0 },
};

static const struct ca_key_spec daemon_keys[] = {
        { .name = "interval", .type = CA_KEY_DURATION, CA_KEY_FIELD(struct ca_conf, interval_usec),
          .def = "60s", .min = CA_INTERVAL_MIN_USEC, .max = CA_INTERVAL_MAX_USEC,
          .help = "rotation interval of the caches that set none" },
        { .name = "plugin_dir", .type = CA_KEY_PATH, CA_KEY_FIELD(struct ca_conf, plugin_dir),
          .def = CA_PLUGIN_DIR, .help = "where <adapter>.so is looked for" },
        { .name = "slice_budget", .type = CA_KEY_UINT, CA_KEY_FIELD(struct ca_conf, slice_budget),
          .def = STR(CA_SLICE_NODES), .min = 1, .max = SLICE_BUDGET_MAX,
          .help = "objects looked at in one aging slice" },
        { .name = "slice_time", .type = CA_KEY_DURATION,
          CA_KEY_FIELD(struct ca_conf, slice_time_usec), .def = "2ms",
          .min = SLICE_TIME_MIN_USEC, .max = SLICE_TIME_MAX_USEC,
          .help = "longest aging slice" },
        { .name = "idle_cpu_pressure", .type = CA_KEY_PERCENT,
          CA_KEY_FIELD(struct ca_conf, idle_cpu_pressure), .def = "20", .flags = CA_KEY_ZERO_OFF,
          .help = "rotations wait while CPU pressure (some avg10) is above this" },
        { .name = "idle_memory_pressure", .type = CA_KEY_PERCENT,
          CA_KEY_FIELD(struct ca_conf, idle_memory_pressure), .def = "10",
          .flags = CA_KEY_ZERO_OFF,
          .help = "rotations wait while memory pressure (some avg10) is above this" },
        { .name = "max_defer", .type = CA_KEY_UINT, CA_KEY_FIELD(struct ca_conf, max_defer),
          .def = "3", .min = 0, .max = MAX_DEFER_MAX,
          .help = "rotations a cache may be put off in a row" },
        { .name = "check_timeout", .type = CA_KEY_DURATION,
          CA_KEY_FIELD(struct ca_conf, check_timeout_usec), .def = "10s",
          .min = CHECK_TIMEOUT_MIN_USEC, .max = CHECK_TIMEOUT_MAX_USEC,
          .help = "longest check of a new configuration's plugin sections, in a child" },
        { .name = "log_level", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct ca_conf, log_level),
          .def = "info", .choices = log_levels, .flags = CA_KEY_NUMBER, .min = LOG_EMERG,
          .max = LOG_DEBUG, .what = "log level", .help = "syslog level, by name or number" },
        { .name = "metrics_file", .type = CA_KEY_PATH, CA_KEY_FIELD(struct ca_conf, metrics_file),
          .help = "Prometheus text file written after each rotation (none by default)" },
        { .name = "history_rotations", .type = CA_KEY_UINT,
          CA_KEY_FIELD(struct ca_conf, history_rotations), .def = STR(CA_HISTORY_ROTATIONS_DEFAULT),
          .min = 0, .max = HISTORY_ROTATIONS_MAX,
          .help = "rotations each cache's history keeps; 0 = none" },
        CA_KEY_END
};
#define N_DAEMON_KEYS (sizeof(daemon_keys) / sizeof(daemon_keys[0]) - 1)

/* The [cache NAME] keys of the daemon; every other key of the section is the adapter's. */
enum {
        CACHE_ADAPTER,
        CACHE_INTERVAL,
        CACHE_SINGLE_USE_AGE,
        CACHE_MAX_AGE,
        CACHE_REFAULT_WINDOW,
        CACHE_AGES,
        CACHE_TARGET_REFAULT,
        CACHE_ENABLED,
        _CACHE_KEY_MAX,
};

static const struct ca_key_choice ages_choices[] = {
        { "fixed", CA_CONF_AGES_FIXED }, { "auto", CA_CONF_AGES_AUTO }, { NULL, 0 },
};

static const struct ca_key_spec cache_keys[_CACHE_KEY_MAX + 1] = {
        [CACHE_ADAPTER] = { .name = "adapter", .type = CA_KEY_NAME,
                            CA_KEY_FIELD(struct ca_conf_cache, adapter), .max = CA_CONF_NAME_MAX,
                            .flags = CA_KEY_ADAPTER_NAME, .what = "adapter name",
                            .help = "the plugin, <plugin_dir>/NAME.so (required)" },
        /* No default: 0 stands for the [daemon] interval, whatever it is at reload. */
        [CACHE_INTERVAL] = { .name = "interval", .type = CA_KEY_DURATION,
                             CA_KEY_FIELD(struct ca_conf_cache, interval_usec),
                             .min = CA_INTERVAL_MIN_USEC, .max = CA_INTERVAL_MAX_USEC,
                             .help = "rotation interval" },
        [CACHE_SINGLE_USE_AGE] = { .name = "single_use_age", .type = CA_KEY_UINT,
                                   CA_KEY_FIELD(struct ca_conf_cache, params.single_use_age),
                                   .def = STR(CA_SINGLE_USE_AGE_DEFAULT), .min = 1,
                                   .max = CA_AGE_MAX,
                                   .help = "rotations an object used in one period may stay" },
        [CACHE_MAX_AGE] = { .name = "max_age", .type = CA_KEY_UINT,
                            CA_KEY_FIELD(struct ca_conf_cache, params.max_age),
                            .def = STR(CA_MAX_AGE_DEFAULT), .min = 1, .max = CA_AGE_MAX,
                            .help = "rotations a reused object may stay idle" },
        [CACHE_REFAULT_WINDOW] = { .name = "refault_window", .type = CA_KEY_UINT,
                                   CA_KEY_FIELD(struct ca_conf_cache, params.refault_window),
                                   .def = STR(CA_REFAULT_WINDOW_DEFAULT), .min = 0,
                                   .max = CA_REFAULT_WINDOW_MAX, .flags = CA_KEY_ZERO_OFF,
                                   .help = "rotations a reclaimed object is remembered, to count "
                                           "its refault" },
        /*
         * auto is the default: on the replay lab's eight recorded sessions (a 3 s interval) it
         * gave 1.6 to 11 times fewer extra misses than the same ages fixed at the default limits
         * 2/8, and at limits 32/64 no fixed pair of ages beat it (doc/benchmarks.md, "Aging that
         * tunes itself"). A cache whose adapter gives no identities keeps its ages fixed all
         * the same.
         */
        [CACHE_AGES] = { .name = "ages", .type = CA_KEY_CHOICE,
                         CA_KEY_FIELD(struct ca_conf_cache, ages), .def = "auto",
                         .choices = ages_choices, .what = "ages",
                         .help = "fixed, or auto: the two ages are limits, moved to hold "
                                 "target_refault" },
        /*
         * 10: on the replay lab's eight recorded sessions (limits 32/64, a 3 s interval), with
         * the controller that settles, every target from 1 to 20% kept aging on or below the
         * best fixed ages with at most 1% extra misses, 25% and 30% did not (doc/benchmarks.md,
         * "Aging that tunes itself"); 10, the middle, holds 7 to 16% less dead than 2 on the
         * 10-minute sessions b, d and f, and on b kept one age 48 rotations (2: 23).
         */
        [CACHE_TARGET_REFAULT] = { .name = "target_refault", .type = CA_KEY_PERCENT,
                                   CA_KEY_FIELD(struct ca_conf_cache, target_refault_pct),
                                   .def = "10", .help = "ages = auto: refaults per 100 reclaims "
                                                        "to hold, above 0 and at most 50" },
        [CACHE_ENABLED] = { .name = "enabled", .type = CA_KEY_BOOL,
                            CA_KEY_FIELD(struct ca_conf_cache, enabled), .def = "yes",
                            .help = "no: loaded but not rotated" },
        [_CACHE_KEY_MAX] = CA_KEY_END,
};

/*
 * One value for @k into @base (the conf or one of its caches), as the adapters' sections are
 * read; text values are copied, since inih's line is gone by the next one. Returns 0, -ENOMEM,
 * or -EINVAL/-ERANGE with the reason in @msg.
 */
static int key_store(const struct ca_key_spec *k, const char *value, void *base, char *msg,
                     size_t msg_len)
{
        bool text = k->type == CA_KEY_STRING || k->type == CA_KEY_PATH || k->type == CA_KEY_NAME;
        char **field, *copy;
        int r;

        r = ca_key_parse(k, value, text ? NULL : base, msg, msg_len);
        if (r < 0 || !text)
                return r;
        copy = strdup(value);
        if (!copy)
                return -ENOMEM;
        field = (char **)(void *)((char *)base + k->offset);
        free(*field);
        *field = copy;
        return 0;
}

/* Every default of @specs into @base. Returns 0 or -ENOMEM. */
static int keys_defaults(const struct ca_key_spec *specs, void *base)
{
        char msg[CA_KEY_MSG_MAX];
        int r;

        for (const struct ca_key_spec *k = specs; k->name; k++) {
                if (!k->def)
                        continue;
                r = key_store(k, k->def, base, msg, sizeof(msg));
                if (r == -ENOMEM)
                        return r;
                assert(r == 0); /* a default its own table refuses */
        }
        return 0;
}

/* ---- the loader ---- */

enum section_kind {
        SECTION_NONE,   /* before the first header of a file */
        SECTION_DAEMON,
        SECTION_CACHE,
        SECTION_SKIP,   /* a header that was refused: its keys are not checked */
};

/* Where a key was set; line 0 = not yet. Used to tell a duplicate in one file. */
struct origin {
        size_t file;   /* index in conf->files */
        unsigned line;
};

/* A drop-in file: its name, which merges it with the same name elsewhere, and its path. */
struct dropin {
        char *name;
        char *path;
};

/* The loader's own per-cache state, parallel to conf->caches. */
struct cache_state {
        struct origin set[_CACHE_KEY_MAX];
        bool keys_full_reported;
};

struct loader {
        struct ca_conf *conf;
        struct ca_errors *errors;
        size_t n_errors;     /* counted here: ca_errors_add() may drop a message on ENOMEM */
        bool oom;

        FILE *f;
        size_t file;         /* index in conf->files */
        unsigned line;
        char *buf;           /* the raw line: CA_CONF_LINE_MAX + 2 bytes */

        enum section_kind section;
        size_t cache;        /* with SECTION_CACHE, index in conf->caches */
        struct cache_state *states;
        bool caches_full_reported;
        struct origin *daemon_set; /* parallel to daemon_keys[] */
};

static void conf_error(struct loader *l, const char *key, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Count one error and format its message; NULL (and l->oom) when out of memory. */
/* @fmt's message, counted, added to the errors after @where and @key (NULL: none). */
static void add_error(struct loader *l, const char *where, const char *key, const char *fmt,
                      va_list ap) __attribute__((format(printf, 4, 0)));

static void add_error(struct loader *l, const char *where, const char *key, const char *fmt,
                      va_list ap)
{
        char *msg;

        l->n_errors++;
        if (vasprintf(&msg, fmt, ap) < 0) {
                l->oom = true;
                return;
        }
        if (key)
                ca_errors_add(l->errors, "%s: %s: %s", where, key, msg);
        else
                ca_errors_add(l->errors, "%s: %s", where, msg);
        free(msg);
}

/* "FILE:LINE: key: message", or "FILE:LINE: message" without a key. */
static void conf_error(struct loader *l, const char *key, const char *fmt, ...)
{
        char where[PATH_MAX + 16];
        va_list ap;

        snprintf(where, sizeof(where), "%s:%u", l->conf->files[l->file], l->line);
        va_start(ap, fmt);
        add_error(l, where, key, fmt, ap);
        va_end(ap);
}

/* A problem with a whole file or directory: "PATH: message". */
static void file_error(struct loader *l, const char *path, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void file_error(struct loader *l, const char *path, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        add_error(l, path, NULL, fmt, ap);
        va_end(ap);
}

static char *xstrdup(struct loader *l, const char *s)
{
        char *p = strdup(s);

        if (!p)
                l->oom = true;
        return p;
}

/* Duplicate within one file: report it and answer true. Otherwise record where it was set. */
static bool check_duplicate(struct loader *l, struct origin *o, const char *key)
{
        if (o->line > 0 && o->file == l->file) {
                conf_error(l, key, "duplicate key, first set at %s:%u", l->conf->files[o->file],
                           o->line);
                return true;
        }
        o->file = l->file;
        o->line = l->line;
        return false;
}

/* One of the section's own keys: parsed into @base, or reported. Returns 0 or < 0. */
static int conf_key(struct loader *l, const struct ca_key_spec *k, const char *value, void *base)
{
        char msg[CA_KEY_MSG_MAX];
        int r;

        r = key_store(k, value, base, msg, sizeof(msg));
        if (r == -ENOMEM)
                l->oom = true;
        else if (r < 0)
                conf_error(l, k->name, "%s", msg);
        return r;
}

static void daemon_key(struct loader *l, const char *key, const char *value)
{
        const struct ca_key_spec *k = ca_key_find(daemon_keys, key);

        if (!k) {
                const char *typo = ca_key_closest(daemon_keys, key, NULL);

                conf_error(l, NULL, "unknown key \"%s\" in [daemon]%s%s%s", key,
                           typo ? ", did you mean \"" : "", typo ? typo : "", typo ? "\"?" : "");
                return;
        }
        if (check_duplicate(l, &l->daemon_set[k - daemon_keys], key))
                return;
        if (conf_key(l, k, value, l->conf) == -EINVAL && strcmp(k->name, "plugin_dir") == 0)
                l->conf->plugin_dir_refused = true;
}

static void adapter_key(struct loader *l, struct ca_conf_cache *c, struct cache_state *st,
                        const char *key, const char *value)
{
        const char *file = l->conf->files[l->file];
        struct ca_conf_key *k, *keys;
        char *v, *f;

        for (size_t i = 0; i < c->n_keys; i++) {
                k = &c->keys[i];
                if (strcmp(k->key, key) != 0)
                        continue;
                if (strcmp(k->file, file) == 0) {
                        conf_error(l, key, "duplicate key, first set at %s:%u", k->file, k->line);
                        return;
                }
                /* An override from a later file: value and origin both move. */
                v = xstrdup(l, value);
                f = xstrdup(l, file);
                if (!v || !f) {
                        free(v);
                        free(f);
                        return;
                }
                free(k->value);
                free(k->file);
                k->value = v;
                k->file = f;
                k->line = l->line;
                return;
        }

        if (c->n_keys >= CA_CONF_KEYS_MAX) {
                if (!st->keys_full_reported)
                        conf_error(l, key, "too many adapter keys in [cache %s] (at most %d)",
                                   c->name, CA_CONF_KEYS_MAX);
                else
                        l->n_errors++; /* reported once, but still an error */
                st->keys_full_reported = true;
                return;
        }
        keys = realloc(c->keys, (c->n_keys + 1) * sizeof(*keys));
        if (!keys) {
                l->oom = true;
                return;
        }
        c->keys = keys;
        k = &keys[c->n_keys];
        *k = (struct ca_conf_key){
                .key = xstrdup(l, key),
                .value = xstrdup(l, value),
                .file = xstrdup(l, file),
                .line = l->line,
        };
        if (!k->key || !k->value || !k->file) {
                free(k->key);
                free(k->value);
                free(k->file);
                return;
        }
        c->n_keys++;
}

static void cache_key(struct loader *l, const char *key, const char *value)
{
        struct ca_conf_cache *c = &l->conf->caches[l->cache];
        struct cache_state *st = &l->states[l->cache];
        const struct ca_key_spec *k = ca_key_find(cache_keys, key);

        if (!k) {
                adapter_key(l, c, st, key, value);
                return;
        }
        if (!check_duplicate(l, &st->set[k - cache_keys], key))
                conf_key(l, k, value, c);
}

/*
 * A reused object may stay at least as long as a single-use one (see age.h). Checked once
 * every file is read, since the two keys may come from different files; blamed on the key
 * written last, or on the section when both are defaults.
 */
static void check_ages(struct loader *l, size_t i)
{
        const struct ca_conf_cache *c = &l->conf->caches[i];
        const struct origin *su = &l->states[i].set[CACHE_SINGLE_USE_AGE];
        const struct origin *max = &l->states[i].set[CACHE_MAX_AGE];
        const struct origin *o = max->line ? max : su;
        const char *file = o->line ? l->conf->files[o->file] : c->file;

        if (c->params.max_age >= c->params.single_use_age)
                return;
        l->n_errors++;
        ca_errors_add(l->errors, "%s:%u: %s: max_age %u%s is below single_use_age %u (expected "
                      "max_age >= single_use_age: a reused object stays at least as long as "
                      "one used once)", file, o->line ? o->line : c->line,
                      o == max ? "max_age" : "single_use_age", c->params.max_age,
                      max->line ? "" : " (the default)", c->params.single_use_age);
}

/*
 * ages, refault_window and target_refault, once every file is read (they may come from
 * different files): the target within (0, 50]%, a window for auto; then into the params.
 */
static void check_refaults(struct loader *l, size_t i)
{
        struct ca_conf_cache *c = &l->conf->caches[i];
        const struct origin *t = &l->states[i].set[CACHE_TARGET_REFAULT];
        const struct origin *ages = &l->states[i].set[CACHE_AGES];
        const struct origin *w = &l->states[i].set[CACHE_REFAULT_WINDOW];

        if (!(c->target_refault_pct > 0 &&
              c->target_refault_pct <= CA_TARGET_REFAULT_MAX_PPM / 10000.0)) {
                l->n_errors++;
                ca_errors_add(l->errors, "%s:%u: target_refault: %g%% is out of range (expected "
                              "above 0 and at most %g%%)",
                              t->line ? l->conf->files[t->file] : c->file,
                              t->line ? t->line : c->line, c->target_refault_pct,
                              CA_TARGET_REFAULT_MAX_PPM / 10000.0);
                return;
        }
        if (c->ages == CA_CONF_AGES_AUTO && c->params.refault_window == 0) {
                const struct origin *o = w->line ? w : ages;

                l->n_errors++;
                ca_errors_add(l->errors, "%s:%u: ages = auto%s needs refaults to steer by, "
                              "but refault_window is 0 (expected a window, or ages = fixed)",
                              o->line ? l->conf->files[o->file] : c->file,
                              o->line ? o->line : c->line, ages->line ? "" : " (the default)");
                return;
        }
        c->params.auto_ages = c->ages == CA_CONF_AGES_AUTO;
        c->params.target_refault_ppm = (uint32_t)(c->target_refault_pct * 10000.0 + 0.5);
        if (c->params.target_refault_ppm < 1)
                c->params.target_refault_ppm = 1;
}

/* The inih handler: one "key = value" line, at l->line, in the reader's current section. */
static int conf_handler(void *userdata, const char *section, const char *key, const char *value)
{
        struct loader *l = userdata;

        if (l->oom)
                return 0;
        if (l->section == SECTION_SKIP)
                return 1;
        if (!ca_valid_name(key, false, CA_CONF_NAME_MAX)) {
                conf_error(l, NULL, "invalid key name \"%s\" (expected 1..%d characters of "
                           NAME_CHARS ")", key, CA_CONF_NAME_MAX);
                return 1;
        }
        switch (l->section) {
        case SECTION_NONE:
                conf_error(l, NULL, "key \"%s\" outside any section (expected [daemon] or "
                           "[cache NAME] before it)", key);
                break;
        case SECTION_DAEMON:
                daemon_key(l, key, value);
                break;
        case SECTION_CACHE:
                cache_key(l, key, value);
                break;
        case SECTION_SKIP:
                break;
        }
        /* Errors are counted by us; a 0 would only make inih's return value ambiguous. */
        return 1;
}

static struct ca_conf_cache *cache_open(struct loader *l, const char *name)
{
        struct ca_conf *conf = l->conf;
        struct ca_conf_cache *caches, *c;
        struct cache_state *states;

        for (size_t i = 0; i < conf->n_caches; i++)
                if (strcmp(conf->caches[i].name, name) == 0) {
                        l->cache = i;
                        return &conf->caches[i];
                }

        if (conf->n_caches >= CA_CONF_CACHES_MAX) {
                if (!l->caches_full_reported)
                        conf_error(l, NULL, "too many [cache NAME] sections (at most %d)",
                                   CA_CONF_CACHES_MAX);
                else
                        l->n_errors++;
                l->caches_full_reported = true;
                return NULL;
        }
        caches = realloc(conf->caches, (conf->n_caches + 1) * sizeof(*caches));
        if (!caches) {
                l->oom = true;
                return NULL;
        }
        conf->caches = caches;
        states = realloc(l->states, (conf->n_caches + 1) * sizeof(*states));
        if (!states) {
                l->oom = true;
                return NULL;
        }
        l->states = states;

        c = &caches[conf->n_caches];
        *c = (struct ca_conf_cache){
                .name = xstrdup(l, name),
                .file = xstrdup(l, conf->files[l->file]),
                .line = l->line,
        };
        if (!c->name || !c->file || keys_defaults(cache_keys, c) < 0) {
                l->oom = true;
                free(c->name);
                free(c->file);
                return NULL;
        }
        states[conf->n_caches] = (struct cache_state){ 0 };
        l->cache = conf->n_caches++;
        return c;
}

/* inih's idea of an inline comment: a ';' after whitespace. */
static const char *find_chars_or_comment(const char *s, const char *chars)
{
        bool was_space = false;

        for (; *s; s++) {
                if (strchr(chars, *s) || (was_space && *s == ';'))
                        break;
                was_space = isspace((unsigned char)*s);
        }
        return s;
}

static const char *skip_space(const char *s)
{
        while (*s && isspace((unsigned char)*s))
                s++;
        return s;
}

/* A header line, from its '[': sets l->section. */
static void section_header(struct loader *l, const char *s)
{
        const char *end = find_chars_or_comment(s + 1, "]"), *rest, *a, *b, *name;
        char inner[CA_CONF_LINE_MAX + 1];
        size_t n;

        l->section = SECTION_SKIP;
        if (*end != ']') {
                conf_error(l, NULL, "section header without closing \"]\"");
                return;
        }
        rest = skip_space(end + 1);
        if (*rest && *rest != ';') {
                conf_error(l, NULL, "unexpected text \"%s\" after section header (expected "
                           "nothing or a ; comment)", rest);
                return;
        }

        /* The text inside the brackets, trimmed. */
        a = skip_space(s + 1);
        b = end;
        while (b > a && isspace((unsigned char)b[-1]))
                b--;
        n = (size_t)(b - a);
        memcpy(inner, a, n);
        inner[n] = '\0';

        if (strcmp(inner, "daemon") == 0) {
                l->section = SECTION_DAEMON;
                return;
        }
        if (strncmp(inner, "cache", 5) != 0 || (inner[5] && !isspace((unsigned char)inner[5]))) {
                conf_error(l, NULL, "unknown section [%s] (expected [daemon] or [cache NAME])",
                           inner);
                return;
        }
        name = skip_space(inner + 5);
        if (!*name) {
                conf_error(l, NULL, "missing cache name in [%s] (expected [cache NAME])", inner);
                return;
        }
        if (!ca_valid_name(name, false, CA_CONF_NAME_MAX)) {
                conf_error(l, NULL, "invalid cache name \"%s\" (expected 1..%d characters of "
                           NAME_CHARS ")", name, CA_CONF_NAME_MAX);
                return;
        }
        if (cache_open(l, name))
                l->section = SECTION_CACHE;
}

/*
 * Read one raw line into l->buf, without its "\n" or "\r\n". Returns its length, which may
 * be over CA_CONF_LINE_MAX (then only the start is kept), -1 at the end of the file, or
 * -2 on a read error. A NUL byte anywhere is flagged in *ret_nul.
 */
static long read_line(struct loader *l, bool *ret_nul)
{
        size_t len = 0;
        bool nul = false;
        int c = EOF;

        for (;;) {
                c = getc_unlocked(l->f);
                if (c == EOF || c == '\n')
                        break;
                if (len < CA_CONF_LINE_MAX + 1)
                        l->buf[len] = (char)c;
                nul = nul || c == '\0';
                if (len < LONG_MAX - 1)
                        len++;
        }
        if (ferror(l->f))
                return -2;
        if (c == EOF && len == 0)
                return -1;
        if (len >= 1 && len <= CA_CONF_LINE_MAX + 1 && l->buf[len - 1] == '\r')
                len--;
        l->buf[len <= CA_CONF_LINE_MAX ? len : CA_CONF_LINE_MAX + 1] = '\0';
        *ret_nul = nul;
        return (long)len;
}

/*
 * The ini_reader: an fgets() for inih that hands it one line per raw line, each either a
 * "key = value" line as written or an empty line in place of everything else.
 */
static char *conf_reader(char *str, int num, void *userdata)
{
        struct loader *l = userdata;
        const char *start, *s, *sep;
        bool nul = false;
        long len;

        if (l->oom || num < 2)
                return NULL;
        len = read_line(l, &nul);
        if (len == -2) {
                file_error(l, l->conf->files[l->file], "read error after line %u: %s", l->line,
                           strerror(errno != 0 ? errno : EIO));
                return NULL;
        }
        if (len < 0)
                return NULL;
        l->line++;
        str[0] = '\n';
        str[1] = '\0';

        if (len > CA_CONF_LINE_MAX) {
                conf_error(l, NULL, "line too long (over %d bytes)", CA_CONF_LINE_MAX);
                return str;
        }
        if (nul) {
                conf_error(l, NULL, "NUL byte in line");
                return str;
        }
        start = l->buf;
        if (l->line == 1 && strncmp(start, "\xEF\xBB\xBF", 3) == 0) /* UTF-8 BOM */
                start += 3;
        s = skip_space(start);
        if (!*s || *s == ';' || *s == '#')
                return str;
        if (*s == '[') {
                section_header(l, s);
                return str;
        }

        sep = find_chars_or_comment(s, "=:");
        if (*sep != '=' && *sep != ':') {
                if (s > start)
                        conf_error(l, NULL, "indented line without \"=\" (continuation lines are "
                                   "not supported; expected \"key = value\")");
                else
                        conf_error(l, NULL, "expected \"key = value\", \"[section]\" or a comment");
                return str;
        }
        if (sep == s) {
                conf_error(l, NULL, "missing key name before \"%c\"", *sep);
                return str;
        }
        /* Our line buffer and inih's are the same size, this only guards against a change. */
        if ((size_t)len + 2 > (size_t)num) {
                conf_error(l, NULL, "line too long (over %d bytes)", num - 2);
                return str;
        }
        memcpy(str, s, (size_t)len - (size_t)(s - l->buf));
        str[(size_t)len - (size_t)(s - l->buf)] = '\n';
        str[(size_t)len - (size_t)(s - l->buf) + 1] = '\0';
        return str;
}

/*
 * inih's settings are process globals (Debian's patch; meson.build refuses an inih without
 * them, and lists them as SWAP() does here): ours for one parse, then theirs.
 */
struct ini_settings {
        int max_line;
        bool use_stack, allow_realloc, allow_multiline, allow_bom, allow_inline_comments,
                allow_no_value, stop_on_first_error;
        char *start_comment_prefixes, *inline_comment_prefixes;
};

static void ini_settings_swap(struct ini_settings *s)
{
#define SWAP(field, var)                                                                   \
        do {                                                                               \
                __typeof__(var) _t = (var);                                                \
                (var) = s->field;                                                          \
                s->field = _t;                                                             \
        } while (0)
        SWAP(max_line, ini_max_line);
        SWAP(use_stack, ini_use_stack);
        SWAP(allow_realloc, ini_allow_realloc);
        SWAP(allow_multiline, ini_allow_multiline);
        SWAP(allow_bom, ini_allow_bom);
        SWAP(allow_inline_comments, ini_allow_inline_comments);
        SWAP(allow_no_value, ini_allow_no_value);
        SWAP(stop_on_first_error, ini_stop_on_first_error);
        SWAP(start_comment_prefixes, ini_start_comment_prefixes);
        SWAP(inline_comment_prefixes, ini_inline_comment_prefixes);
#undef SWAP
}

/*
 * Open a file of the configuration along a trusted path (trust_open_full()): the file says
 * what the daemon, root, loads and deletes, so a file that someone else owns or may write, or
 * below a directory someone else may write, is refused, not read. A regular file, or
 * /dev/null (a drop-in symlinked to /dev/null masks the one of that name elsewhere, as with
 * systemd); O_NONBLOCK, so that a FIFO cannot hang the daemon. Returns the FILE, or NULL with
 * errno set (-ENODEV: not a regular file; -EPERM: refused, with the reason in @reason).
 */
static FILE *open_config_file(const char *path, char *reason, size_t reason_len)
{
        FILE *f;
        int fd, r;

        r = trust_open_full(path, TRUST_DEV_NULL, &fd, reason, reason_len);
        if (r < 0) {
                errno = -r;
                return NULL;
        }
        f = fdopen(fd, "r");
        if (!f) {
                r = errno;
                close(fd);
                errno = r;
        }
        return f;
}

/* Add @path to conf->files; its index in *ret. */
static int add_file(struct loader *l, const char *path, size_t *ret)
{
        struct ca_conf *conf = l->conf;
        char **files;
        char *p;

        files = realloc(conf->files, (conf->n_files + 1) * sizeof(*files));
        if (!files)
                return -ENOMEM;
        conf->files = files;
        p = strdup(path);
        if (!p)
                return -ENOMEM;
        files[conf->n_files] = p;
        *ret = conf->n_files++;
        return 0;
}

/*
 * Parse one file into l->conf. Returns 0 (problems are counted in l), -ENOMEM, or for a
 * file that cannot be opened the negative errno (also reported), but 0 for a missing one when
 * @missing_ok.
 */
static int load_file(struct loader *l, const char *path, bool missing_ok)
{
        struct ini_settings ours = {
                /* The longest line we accept, its "\n" and the NUL. */
                .max_line = CA_CONF_LINE_MAX + 2,
                .use_stack = true,
                .allow_realloc = false,
                .allow_multiline = false,
                .allow_bom = false, /* the reader drops it */
                .allow_inline_comments = true,
                .allow_no_value = false,
                .stop_on_first_error = false,
                .start_comment_prefixes = (char[]){ ";#" },
                .inline_comment_prefixes = (char[]){ ";" },
        };
        size_t errors_before = l->n_errors;
        char reason[512];
        int e, r;

        l->f = open_config_file(path, reason, sizeof(reason));
        if (!l->f) {
                e = errno;
                if (e == ENOENT && missing_ok)
                        return 0;
                if (e == ENODEV)
                        file_error(l, path, "not a regular file");
                else if (e == EPERM)
                        file_error(l, path, "refused: %s (only %s may write a configuration "
                                   "file or a directory above it)", reason,
                                   geteuid() == 0 ? "root" : "root and the daemon's user");
                else
                        file_error(l, path, "cannot open: %s", strerror(e));
                return l->oom ? -ENOMEM : -e;
        }
        r = add_file(l, path, &l->file);
        if (r < 0) {
                fclose(l->f);
                return r;
        }
        l->line = 0;
        l->section = SECTION_NONE;

        ini_settings_swap(&ours);
        r = ini_parse_stream(conf_reader, l, conf_handler, l);
        ini_settings_swap(&ours);
        fclose(l->f);
        l->f = NULL;

        if (l->oom)
                return -ENOMEM;
        if (r != 0 && l->n_errors == errors_before) {
                /* inih saw an error that the reader did not: never let it pass silently. */
                l->line = r > 0 ? (unsigned)r : l->line;
                conf_error(l, NULL, "syntax error");
        }
        return 0;
}

static int cmp_dropins(const void *a, const void *b)
{
        return strcmp(((const struct dropin *)a)->name, ((const struct dropin *)b)->name);
}

static bool is_dropin_name(const char *name)
{
        size_t n = strlen(name);

        /* Hidden files are editors' and package managers' leftovers, as systemd holds. */
        return name[0] != '.' && n > 5 && strcmp(name + n - 5, ".conf") == 0;
}

static void dropins_free(struct dropin *v, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(v[i].name);
                free(v[i].path);
        }
        free(v);
}

/*
 * Add the *.conf of @dir to the list, but for names that an earlier directory already gave (the
 * first directory wins, as with systemd's drop-ins). A missing directory is fine. More than
 * CA_CONF_FILES_MAX names in all is an error, and sets *too_many. Returns 0 or -ENOMEM.
 */
static int list_dropins(struct loader *l, const char *dir, struct dropin **v, size_t *n,
                        bool *too_many)
{
        struct dropin *nv;
        struct dirent *de;
        size_t n_before = *n;
        int r = 0;
        DIR *d;

        d = opendir(dir);
        if (!d) {
                if (errno != ENOENT)
                        file_error(l, dir, "cannot read drop-in directory: %s", strerror(errno));
                return 0;
        }
        for (;;) {
                bool seen = false;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                file_error(l, dir, "cannot read drop-in directory: %s",
                                           strerror(errno));
                        break;
                }
                if (!is_dropin_name(de->d_name))
                        continue;
                for (size_t i = 0; i < n_before && !seen; i++)
                        seen = strcmp((*v)[i].name, de->d_name) == 0;
                if (seen)
                        continue;
                if (*n >= CA_CONF_FILES_MAX) {
                        /* Read none then: which ones came first is not known yet. */
                        file_error(l, dir, "too many drop-in files (at most %d *.conf)",
                                   CA_CONF_FILES_MAX);
                        *too_many = true;
                        break;
                }
                nv = realloc(*v, (*n + 1) * sizeof(*nv));
                if (!nv) {
                        r = -ENOMEM;
                        break;
                }
                *v = nv;
                nv[*n].name = strdup(de->d_name);
                if (!nv[*n].name || asprintf(&nv[*n].path, "%s/%s", dir, de->d_name) < 0) {
                        free(nv[*n].name);
                        r = -ENOMEM;
                        break;
                }
                (*n)++;
        }
        closedir(d);
        return r;
}

/*
 * Every drop-in of @dirs (highest priority first), merged by file name, in strcmp() order of
 * the names (not the locale's): a name's file in the first directory that has one, and not the
 * others, so that one linked to /dev/null masks that name (it reads as empty). None when there
 * are too many (reported). Returns 0 and the list in *ret_v, *ret_n, or -ENOMEM.
 */
static int find_dropins(struct loader *l, char *const *dirs, size_t n_dirs, struct dropin **ret_v,
                        size_t *ret_n)
{
        struct dropin *v = NULL;
        bool too_many = false;
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; i < n_dirs && r == 0 && !too_many; i++)
                r = list_dropins(l, dirs[i], &v, &n, &too_many);
        if (r < 0 || too_many) {
                dropins_free(v, n);
                v = NULL;
                n = 0;
        }
        if (n > 0)
                qsort(v, n, sizeof(*v), cmp_dropins);
        *ret_v = v;
        *ret_n = n;
        return r;
}

/* Read every drop-in of @dirs, in find_dropins()'s order. */
static int load_dropins(struct loader *l, char *const *dirs, size_t n_dirs)
{
        struct dropin *v;
        size_t n;
        int r;

        r = find_dropins(l, dirs, n_dirs, &v, &n);
        for (size_t i = 0; i < n && r == 0; i++) {
                r = load_file(l, v[i].path, false);
                if (r != -ENOMEM)
                        r = 0; /* any other failure was reported and counted */
        }
        dropins_free(v, n);
        return r;
}

/*
 * The systemd convention for a daemon's drop-ins: the administrator's, the runtime's, the local
 * install's, the distribution's (systemd's CONF_PATHS). The main file is the sysconfdir's only.
 */
static const char *const search_dirs[] = {
        CA_CONFIG_FILE ".d",
        "/run/cacheage/cacheaged.conf.d",
        "/usr/local/lib/cacheage/cacheaged.conf.d",
        "/usr/lib/cacheage/cacheaged.conf.d",
};
#define N_SEARCH_DIRS (sizeof(search_dirs) / sizeof(search_dirs[0]))

/*
 * Where to read: --config's @path and "@path.d", or, for a NULL @path, the search above, each
 * path below $CACHEAGED_CONFIG_ROOT when set (tests). The main file and the directories are
 * malloc()ed into *ret_main and ret_dirs[] (*ret_n_dirs of them). Returns 0 or -ENOMEM.
 */
static int conf_paths(const char *path, char **ret_main, char *ret_dirs[N_SEARCH_DIRS],
                      size_t *ret_n_dirs)
{
        const char *root = getenv("CACHEAGED_CONFIG_ROOT");
        char *main_path = NULL;
        size_t n = 0;

        if (!root || strcmp(root, "/") == 0)
                root = "";
        if (path ? asprintf(&main_path, "%s", path) < 0
                 : asprintf(&main_path, "%s%s", root, CA_CONFIG_FILE) < 0) {
                main_path = NULL;
                goto out_free;
        }
        for (; n < (path ? 1 : N_SEARCH_DIRS); n++)
                if (path ? asprintf(&ret_dirs[n], "%s.d", path) < 0
                         : asprintf(&ret_dirs[n], "%s%s", root, search_dirs[n]) < 0)
                        goto out_free;
        *ret_main = main_path;
        *ret_n_dirs = n;
        return 0;

out_free:
        free(main_path);
        while (n > 0)
                free(ret_dirs[--n]);
        return -ENOMEM;
}

/*
 * The main file is optional but for --config FILE without FILE.d: a mistyped name must not
 * start the daemon on its built-in defaults. systemd's daemons run on theirs without one.
 */
static bool main_file_optional(const char *path, const char *dir)
{
        struct stat st;

        return !path || (stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
}

struct ca_conf *ca_conf_free(struct ca_conf *conf)
{
        if (!conf)
                return NULL;
        for (size_t i = 0; i < conf->n_caches; i++) {
                struct ca_conf_cache *c = &conf->caches[i];

                for (size_t j = 0; j < c->n_keys; j++) {
                        free(c->keys[j].key);
                        free(c->keys[j].value);
                        free(c->keys[j].file);
                }
                free(c->keys);
                free(c->name);
                free(c->adapter);
                free(c->file);
        }
        free(conf->caches);
        for (size_t i = 0; i < conf->n_files; i++)
                free(conf->files[i]);
        free(conf->files);
        free(conf->plugin_dir);
        free(conf->metrics_file);
        free(conf);
        return NULL;
}

static struct ca_conf *conf_new(void)
{
        struct ca_conf *conf = calloc(1, sizeof(*conf));

        if (!conf)
                return NULL;
        if (keys_defaults(daemon_keys, conf) < 0)
                return ca_conf_free(conf);
        return conf;
}

int ca_conf_new(struct ca_conf **ret)
{
        struct ca_conf *conf = conf_new();

        if (!conf)
                return -ENOMEM;
        *ret = conf;
        return 0;
}

/* With @partial, hand out what could be read even when there were errors (not on -ENOMEM). */
static int conf_load(const char *path, struct ca_conf **ret, struct ca_errors *errors,
                     bool partial)
{
        struct origin daemon_set[N_DAEMON_KEYS] = { { 0 } };
        struct loader l = {
                .errors = errors,
                .daemon_set = daemon_set,
        };
        char *main_path = NULL, *dirs[N_SEARCH_DIRS];
        size_t n_dirs = 0;
        int r;

        assert(ret);

        l.conf = conf_new();
        l.buf = malloc(CA_CONF_LINE_MAX + 2);
        if (!l.conf || !l.buf || conf_paths(path, &main_path, dirs, &n_dirs) < 0) {
                r = -ENOMEM;
                goto out_free;
        }

        r = load_file(&l, main_path, main_file_optional(path, dirs[0]));
        if (r < 0)
                goto out_free;
        r = load_dropins(&l, dirs, n_dirs);
        if (r < 0)
                goto out_free;

        /* Only now is it known that no later file sets the adapter. */
        for (size_t i = 0; i < l.conf->n_caches; i++) {
                const struct ca_conf_cache *c = &l.conf->caches[i];

                if (c->adapter)
                        continue;
                l.n_errors++;
                ca_errors_add(errors, "%s:%u: [cache %s] has no adapter (expected e.g. "
                              "\"adapter = dcache\")", c->file, c->line, c->name);
        }
        /*
         * What goes wrong with a section's plugin is blamed on the file that set its adapter:
         * --check-config named the main file's [cache NAME] header for an adapter a drop-in
         * set. (Within one file the header stays, a line above.)
         */
        for (size_t i = 0; i < l.conf->n_caches; i++) {
                struct ca_conf_cache *c = &l.conf->caches[i];
                const struct origin *o = &l.states[i].set[CACHE_ADAPTER];
                char *f;

                if (!c->adapter || o->line == 0 || strcmp(l.conf->files[o->file], c->file) == 0)
                        continue;
                f = xstrdup(&l, l.conf->files[o->file]);
                if (!f)
                        break;
                free(c->file);
                c->file = f;
                c->line = o->line;
        }
        for (size_t i = 0; i < l.conf->n_caches; i++)
                check_ages(&l, i);
        for (size_t i = 0; i < l.conf->n_caches; i++)
                check_refaults(&l, i);

        if (l.oom) {
                r = -ENOMEM;
                goto out_free;
        }
        r = l.n_errors > 0 ? -EINVAL : 0;
        if (r == 0 || partial) {
                *ret = l.conf;
                l.conf = NULL;
        }

out_free:
        while (n_dirs > 0)
                free(dirs[--n_dirs]);
        free(main_path);
        free(l.states);
        free(l.buf);
        ca_conf_free(l.conf);
        return r;
}

int ca_conf_load(const char *path, struct ca_conf **ret, struct ca_errors *errors)
{
        return conf_load(path, ret, errors, false);
}

int ca_conf_load_partial(const char *path, struct ca_conf **ret, struct ca_errors *errors)
{
        return conf_load(path, ret, errors, true);
}

int ca_conf_dropin_dir(const char *path, char **ret)
{
        char *main_path, *dirs[N_SEARCH_DIRS];
        size_t n_dirs;

        if (conf_paths(path, &main_path, dirs, &n_dirs) < 0)
                return -ENOMEM;
        free(main_path);
        *ret = dirs[0];
        while (n_dirs > 1)
                free(dirs[--n_dirs]);
        return 0;
}

int ca_conf_files(const char *path, char **ret_main, char ***ret_files, size_t *ret_n,
                  struct ca_errors *errors)
{
        struct loader l = { .errors = errors };
        char *main_path = NULL, *dirs[N_SEARCH_DIRS], **files = NULL;
        struct dropin *v = NULL;
        size_t n_dirs = 0, n_v = 0, n = 0;
        struct stat st;
        bool main_found;
        int r;

        if (conf_paths(path, &main_path, dirs, &n_dirs) < 0)
                return -ENOMEM;
        main_found = stat(main_path, &st) == 0;
        if (!main_found && !main_file_optional(path, dirs[0])) {
                ca_errors_add(errors, "%s: cannot open: %s", main_path, strerror(ENOENT));
                r = -ENOENT;
                goto out_free;
        }
        r = find_dropins(&l, dirs, n_dirs, &v, &n_v);
        if (r >= 0 && l.oom)
                r = -ENOMEM;
        if (r < 0)
                goto out_free;
        files = calloc(n_v + 2, sizeof(*files));
        if (!files) {
                r = -ENOMEM;
                goto out_free;
        }
        if (main_found && !(files[n++] = strdup(main_path)))
                r = -ENOMEM;
        for (size_t i = 0; i < n_v && r == 0; i++) {
                files[n++] = v[i].path;
                v[i].path = NULL;
        }
        if (r < 0)
                goto out_free;
        *ret_main = main_path;
        main_path = NULL;
        *ret_files = files;
        *ret_n = n;
        files = NULL;
        n = 0;

out_free:
        for (size_t i = 0; i < n; i++)
                free(files[i]);
        free(files);
        dropins_free(v, n_v);
        while (n_dirs > 0)
                free(dirs[--n_dirs]);
        free(main_path);
        return r;
}

const struct ca_key_spec *ca_conf_key_table(bool cache)
{
        return cache ? cache_keys : daemon_keys;
}

const struct ca_conf_cache *ca_conf_find_cache(const struct ca_conf *conf, const char *name)
{
        if (!conf || !name)
                return NULL;
        for (size_t i = 0; i < conf->n_caches; i++)
                if (strcmp(conf->caches[i].name, name) == 0)
                        return &conf->caches[i];
        return NULL;
}
