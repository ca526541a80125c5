/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * cacheaged's configuration: the main INI file, then <main>.d/ *.conf in lexical order
 * (later keys win, a section may be continued in a later file), parsed with inih through
 * ini_parse_stream() and a reader that counts lines and refuses over-long ones.
 *
 * Every problem becomes one message "FILE:LINE: key: message" (or "FILE:LINE: message" for
 * a section or syntax error) in a ca_errors list; loading goes on after an error so that
 * all of them are reported at once, and the result is only handed out when there were none.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheage/age.h"

#define CA_CONF_LINE_MAX 4096       /* bytes per line, newline excluded */
#define CA_CONF_FILES_MAX 256       /* drop-in files */
#define CA_CONF_CACHES_MAX 256      /* [cache NAME] sections */
#define CA_CONF_KEYS_MAX 64         /* adapter keys per cache */
#define CA_CONF_NAME_MAX 48         /* bytes in a cache name (inih cuts section names at 49) */
#define CA_INTERVAL_MIN_USEC 10000ULL                  /* 10ms */
#define CA_INTERVAL_MAX_USEC (7ULL * 24 * 3600 * 1000000) /* 1 week */

struct ca_errors {
        char **v; /* messages, in order */
        size_t n;
};

void ca_errors_add(struct ca_errors *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ca_errors_clear(struct ca_errors *e);

/* An adapter's own key, handed to its plugin with where it was written. */
struct ca_conf_key {
        char *key;
        char *value;
        char *file;
        unsigned line;
};

struct ca_conf_cache {
        char *name;            /* from [cache NAME]: [A-Za-z0-9_.-], 1..CA_CONF_NAME_MAX */
        char *adapter;         /* required */
        char *file;            /* where the section was first opened */
        unsigned line;
        uint64_t interval_usec; /* 0 = the daemon's default interval */
        struct ca_params params; /* single_use_age, max_age (age.h defaults) */
        bool enabled;          /* default yes */
        struct ca_conf_key *keys; /* every other key, for the adapter; a repeat replaces */
        size_t n_keys;
};

struct ca_conf {
        /* [daemon] */
        uint64_t interval_usec;       /* interval: default 60s */
        char *plugin_dir;             /* plugin_dir: default CA_PLUGIN_DIR */
        uint32_t slice_budget;        /* slice_budget: nodes per slice, default CA_SLICE_NODES */
        uint64_t slice_time_usec;     /* slice_time: default 2ms */
        double idle_cpu_pressure;     /* idle_cpu_pressure: PSI some avg10 %, default 20; 0 = off */
        double idle_memory_pressure;  /* idle_memory_pressure: default 10; 0 = off */
        uint32_t max_defer;           /* max_defer: rotations a cache may be deferred, default 3 */
        int log_level;                /* log_level: syslog level, default LOG_INFO */

        struct ca_conf_cache *caches; /* in order of first appearance */
        size_t n_caches;

        char **files;                 /* the files read, in order */
        size_t n_files;
};

/*
 * ca_conf_load() - read @path and its drop-in directory "@path.d".
 * On success returns 0 and stores the configuration in *ret. Otherwise returns -EINVAL
 * (errors in the files, each added to @errors), or another negative errno for the main
 * file itself (-ENOENT ...; also added to @errors). A missing drop-in directory is fine.
 */
int ca_conf_load(const char *path, struct ca_conf **ret, struct ca_errors *errors);

/* ca_conf_free() - accepts NULL; returns NULL. */
struct ca_conf *ca_conf_free(struct ca_conf *conf);

/* ca_conf_find_cache() - the section named @name, or NULL. */
const struct ca_conf_cache *ca_conf_find_cache(const struct ca_conf *conf, const char *name);

/*
 * ca_parse_duration() - "250ms", "30s", "5min", "1h", "1h 30min", "2d", "500us"; a bare
 * number is seconds. Returns 0 and stores microseconds, or -EINVAL / -ERANGE.
 */
int ca_parse_duration(const char *s, uint64_t *ret_usec);

/* ca_format_duration() - the shortest exact form ("1min 30s", "250ms"); returns @buf. */
char *ca_format_duration(uint64_t usec, char *buf, size_t len);
#define CA_DURATION_MAX_STR 64

/* ca_parse_bool() - yes/no, true/false, on/off, 1/0. Returns 0/1, or -EINVAL. */
int ca_parse_bool(const char *s);

/* ca_parse_uint() - decimal, within [min, max]. Returns 0, -EINVAL or -ERANGE. */
int ca_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
