/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * cacheaged's configuration: the main INI file, then drop-ins *.conf in strcmp() order of
 * their names (later keys win, a section may be continued in a later file), parsed with inih
 * through ini_parse_stream() and a reader that counts lines and refuses over-long ones.
 *
 * Where they are, as systemd's daemons do it (timesyncd, oomd): CA_CONFIG_FILE if it exists
 * (without it, the built-in defaults and the drop-ins), then cacheaged.conf.d/ in $sysconfdir/
 * cacheage, /run/cacheage, /usr/local/lib/cacheage and /usr/lib/cacheage, merged by file name:
 * of two drop-ins with one name only the first directory's is read, so one linked to /dev/null
 * masks a name. With --config FILE: exactly FILE and FILE.d/ (FILE may be missing only when
 * FILE.d/ exists).
 *
 * Syntax: "[daemon]", "[cache NAME]", "key = value" (or "key: value"); whole-line comments
 * start with ';' or '#', inline comments with ';' after whitespace. Continuation lines are
 * not supported: an indented line is read on its own (an indented "key = value" is fine).
 * Key names and cache names are [A-Za-z0-9_.-], 1..CA_CONF_NAME_MAX bytes, case-sensitive.
 * A key set twice in one section of one file is an error; a later file overriding an
 * earlier one is not. Drop-in names starting with '.' are ignored; a drop-in may be a
 * symlink, and one to /dev/null reads as empty.
 *
 * Every problem becomes one message "FILE:LINE: key: message" (or "FILE:LINE: message" for
 * a section or syntax error, "FILE: message" for a file that cannot be read) in a ca_errors
 * list; loading goes on after an error so that all of them are reported at once, and the
 * result is only handed out when there were none.
 *
 * Not thread-safe: inih's settings are process globals (Debian's patch), which
 * ca_conf_load() sets for the duration of each parse and then restores.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheage/age.h"
#include "cacheage/plugin.h"
#include "cacheage/value.h"
#include "errors.h"

#define CA_CONF_LINE_MAX 4096       /* bytes per line, newline excluded */
#define CA_CONF_FILES_MAX 256       /* drop-in files */
#define CA_CONF_CACHES_MAX 256      /* [cache NAME] sections */
#define CA_CONF_KEYS_MAX 64         /* adapter keys per cache */
#define CA_CONF_NAME_MAX 48         /* bytes in a cache name, a key name or an adapter name */
#define CA_INTERVAL_MIN_USEC 10000ULL                  /* 10ms */
#define CA_INTERVAL_MAX_USEC (7ULL * 24 * 3600 * 1000000) /* 1 week */
#define CA_HISTORY_ROTATIONS_DEFAULT 1000 /* rotations kept in each cache's history */


enum { CA_CONF_AGES_FIXED, CA_CONF_AGES_AUTO };

/* An adapter's own key, handed to its plugin with where it was written. */
struct ca_conf_key {
        char *key;
        char *value;
        char *file;
        unsigned line;
};

struct ca_conf_cache {
        char *name;            /* from [cache NAME]: [A-Za-z0-9_.-], 1..CA_CONF_NAME_MAX */
        char *adapter;         /* required: [a-z0-9_-], 1..CA_CONF_NAME_MAX */
        char *file;            /* where the section was first opened, or where its adapter is
                                  set when a later file (a drop-in) set it */
        unsigned line;
        uint64_t interval_usec; /* 0 = the daemon's default; else CA_INTERVAL_MIN..MAX_USEC */
        struct ca_params params; /* single_use_age, max_age: 1..CA_AGE_MAX, age.h defaults;
                                    refault_window: 0..CA_REFAULT_WINDOW_MAX; auto_ages and
                                    target_refault_ppm from the two below */
        int ages;              /* ages: CA_CONF_AGES_FIXED or CA_CONF_AGES_AUTO (default) */
        double target_refault_pct; /* target_refault: (0, 50] percent of reclaims, default 10 */
        bool enabled;          /* default yes */
        struct ca_conf_key *keys; /* every other key, for the adapter; a repeat replaces */
        size_t n_keys;
};

struct ca_conf {
        /* [daemon] */
        uint64_t interval_usec;       /* interval: default 60s; CA_INTERVAL_MIN..MAX_USEC */
        char *plugin_dir;             /* plugin_dir: absolute, default CA_PLUGIN_DIR; never NULL */
        bool plugin_dir_refused;      /* partial load only: the plugin_dir given was refused */
        uint32_t slice_budget;        /* slice_budget: nodes per slice, 1..1000000,
                                         default CA_SLICE_NODES */
        uint64_t slice_time_usec;     /* slice_time: 100us..1s, default 2ms */
        double idle_cpu_pressure;     /* idle_cpu_pressure: PSI some avg10 %, 0..100 (a trailing
                                         "%" is allowed), default 20; 0 = off */
        double idle_memory_pressure;  /* idle_memory_pressure: 0..100, default 10; 0 = off */
        uint32_t max_defer;           /* max_defer: rotations a cache may be deferred, 0..1000,
                                         default 3 */
        uint64_t check_timeout_usec;  /* check_timeout: a reload's plugin check in a child,
                                         100ms..10min, default 10s */
        int log_level;                /* log_level: syslog level, by name (emerg ... debug) or
                                         0..7, default LOG_INFO */
        char *metrics_file;           /* metrics_file: absolute, NULL = none */
        uint32_t history_rotations;   /* history_rotations: 0..100000, default
                                         CA_HISTORY_ROTATIONS_DEFAULT */

        struct ca_conf_cache *caches; /* in order of first appearance */
        size_t n_caches;

        char **files;                 /* the files read, in order: the main file first (when
                                         there is one) */
        size_t n_files;
};

/*
 * ca_conf_load() - read @path and its drop-in directory "@path.d"; for a NULL @path, search
 * as said above, each directory below $CACHEAGED_CONFIG_ROOT when that is set (for tests).
 * On success returns 0 and stores the configuration in *ret. Otherwise returns -EINVAL
 * (errors in the files, each added to @errors), -ENOMEM, or another negative errno when the
 * main file itself cannot be opened (-ENOENT when neither @path nor @path.d exist, -EACCES,
 * -ENODEV when it is not a regular file, -EPERM when it is refused; also added to @errors,
 * "PATH: cannot open: REASON").
 * Every file is opened along a trusted path (trust.h): one that a user other than root and the
 * daemon's own may write (its mode or ACL), own, or replace (a directory above it that such a
 * user may write, sticky directories excepted for root's files) is refused, an error naming
 * the file and why ("PATH: refused: REASON ...").
 * A missing drop-in directory is fine; more than CA_CONF_FILES_MAX drop-ins in all is an error
 * and none of them is read.
 * Messages are appended to @errors (which may be NULL); *ret is untouched on failure.
 * Call from one thread at a time (see above).
 */
int ca_conf_load(const char *path, struct ca_conf **ret, struct ca_errors *errors);

/*
 * ca_conf_load_partial() - as ca_conf_load(), but on -EINVAL *ret still gets what could be
 * read (a section refused whole is left out, a cache may lack its adapter, a refused value
 * keeps its default), so that a checker can go on to check the plugins' sections and list
 * every error in one run. Never to be put in force.
 */
int ca_conf_load_partial(const char *path, struct ca_conf **ret, struct ca_errors *errors);

/* ca_conf_new() - the built-in defaults, no file read, no cache. Returns 0 or -ENOMEM. */
int ca_conf_new(struct ca_conf **ret);

/* ca_conf_free() - accepts NULL; returns NULL. */
struct ca_conf *ca_conf_free(struct ca_conf *conf);

/*
 * ca_conf_dropin_dir() - the directory of the administrator's drop-ins, where "cacheagectl set
 * --persistent" writes: "@path.d", or for a NULL @path the first of the search (in the
 * sysconfdir, below $CACHEAGED_CONFIG_ROOT when set). Returns 0 and a malloc()ed path in
 * *ret, or -ENOMEM.
 */
int ca_conf_dropin_dir(const char *path, char **ret);

/*
 * ca_conf_files() - the files ca_conf_load(@path) would read, in its order, without reading
 * them: the main file when it exists, then the drop-ins (merged by name, one linked to /dev/null
 * included as it masks the name). The main file's path, found or not, goes to *ret_main; a
 * malloc()ed array of *ret_n malloc()ed paths to *ret_files. Returns 0, -ENOMEM, or -ENOENT
 * when ca_conf_load() would refuse a missing --config FILE (added to @errors, with any problem
 * reading a drop-in directory).
 */
int ca_conf_files(const char *path, char **ret_main, char ***ret_files, size_t *ret_n,
                  struct ca_errors *errors);

/*
 * ca_conf_key_table() - the daemon's own keys of [cache NAME] sections (@cache) or of [daemon],
 * ended by CA_KEY_END: the keys cacheaged.conf(5) documents, with their defaults.
 */
const struct ca_key_spec *ca_conf_key_table(bool cache);

/* ca_conf_find_cache() - the section named @name, or NULL. */
const struct ca_conf_cache *ca_conf_find_cache(const struct ca_conf *conf, const char *name);

