/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What cacheagectl's files share: the options (set in cacheagectl.c, read by the verbs), the
 * exit statuses, the output and error helpers (cacheagectl-util.c), a cache's and the
 * manager's properties as read from the bus (cacheagectl-cache.c), and one entry point per
 * verb, in a file of its own (cacheagectl-VERB.c), as systemctl's are.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <systemd/sd-bus.h>

#include "cacheage/age.h"

#define CTL_CACHES_MAX 4096       /* caches listed at once (the daemon allows 256) */
#define CTL_ADAPTER_STATS_MAX 256 /* adapter statistics kept per cache */
#define CTL_PARTS_MAX 4096        /* parts kept per cache (CA_CACHE_PARTS_MAX) */
#define CTL_PARTS_SHOWN 8         /* parts show lists: those that gave most */
#define CTL_WATCH_DEFAULT_SEC 2

/*
 * Exit statuses: LSB's, as systemctl 252 returns them (cacheagectl(1), EXIT STATUS). A command
 * that reads answers as "systemctl status" does (4: no such cache, "status unknown"); one that
 * changes something as "systemctl start" does (4: permission denied, 5: no such cache, "not
 * installed"). Reading is open to everyone, so 4 means one thing per command.
 */
enum {
        EXIT_OK = 0,
        EXIT_FAILED = 1,        /* the daemon refused or failed (a bad configuration...) */
        EXIT_USAGE = 2,         /* bad command line or value (LSB: invalid arguments) */
        EXIT_NOT_RUNNING = 3,   /* no daemon on that bus, or no bus (LSB: not running) */
        EXIT_DENIED = 4,        /* a change not allowed (LSB: insufficient privilege) */
        EXIT_UNKNOWN = 4,       /* reading a cache that does not exist (LSB: status unknown) */
        EXIT_NOT_INSTALLED = 5, /* changing a cache that does not exist (LSB: not installed) */
};

/* ---- the options (cacheagectl.c) ---- */

enum bus_kind { BUS_SYSTEM, BUS_USER, BUS_ADDRESS, BUS_REMOTE };
enum json_mode { JSON_OFF, JSON_SHORT, JSON_PRETTY };

extern enum bus_kind arg_bus;
extern const char *arg_address; /* BUS_ADDRESS: the address; BUS_REMOTE: -H's argument */
extern const char *arg_machine; /* BUS_REMOTE: MACHINE of -H HOST/MACHINE, or NULL */
extern bool arg_ask_password;   /* writes: let polkit ask, through an agent on the terminal */
extern bool arg_writes;         /* the command changes something (set by the dispatch) */
extern enum json_mode arg_json;
extern bool arg_no_pager;
extern bool arg_no_legend;
extern bool arg_value;      /* show: values only */
extern bool arg_persistent; /* set: a drop-in and a reload */
extern bool arg_colors;     /* decided once, before a pager takes standard output */
extern char **arg_properties; /* show -p: D-Bus or JSON names, "AdapterStats.KEY" */
extern bool *arg_properties_matched; /* parallel to arg_properties */
extern size_t n_arg_properties;
extern double arg_watch_sec; /* 0 = no --watch */
extern const char *arg_since;  /* history: --since=TIME */
extern const char *arg_svg;    /* history: --svg=FILE */
extern const char *arg_config; /* cat-config: --config=FILE, as cacheaged's */
extern unsigned arg_tty_columns; /* standard output's width when it is a terminal, else 0 */

/* ---- -H's argument (cacheagectl-host.c) ---- */

/*
 * host_check() - whether @arg is [USER@]HOST[:PORT][/MACHINE] that sd-bus's ssh transport
 * passes on whole: PORT 1..65535, MACHINE a machine name (never silently dropped). Returns
 * true and sets *@ret_machine (MACHINE within @arg, or NULL); false with @why (of @why_len
 * bytes) naming the part that is wrong.
 */
bool host_check(const char *arg, const char **ret_machine, char *why, size_t why_len);

/* ---- output and errors (cacheagectl-util.c) ---- */

/* A JSON document is written to a buffer, then laid out as --json says (json_end()). */
struct json_doc {
        FILE *f;
        char *buf;
        size_t len;
};

FILE *json_begin(struct json_doc *j);
void json_end(struct json_doc *j);
void json_discard(struct json_doc *j); /* drop it unprinted (an error follows) */
void json_string(FILE *f, const char *s);
void json_strings(FILE *f, char *const *v, size_t n); /* an array of @n strings */
void json_key(FILE *f, const char *camel);

bool colors_wanted(void);

#define ANSI_BOLD "\033[1m"
#define ANSI_GREEN "\033[0;32m"
#define ANSI_GREY "\033[0;38;5;245m"
#define ANSI_NORMAL "\033[0m"

const char *ansi(const char *code);

/* "IntervalUSec" -> "interval_usec", "SingleUseObjects" -> "single_use_objects". */
#define SNAKE_MAX 128 /* bytes of a snake_case name, NUL included */
char *snake_case(const char *camel, char buf[static SNAKE_MAX]);

#define CELL_MAX 96 /* bytes of a table's cell */

uint64_t now_realtime_usec(void);
char *format_age(uint64_t usec, char *buf, size_t len);
char *format_relative(uint64_t then_usec, uint64_t now_usec, char *buf, size_t len);
char *format_timestamp(uint64_t usec, char *buf, size_t len);
unsigned terminal_columns(void);
void maybe_page(void);

const char *bus_description(char *buf, size_t len);
int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int fail_lines(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int call_failed(const sd_bus_error *e, int r, const char *what, const char *cache);
/* "No cache named NAME": exit 5 for a command that changes something, else 4. */
int no_such_cache(const char *name);
int print_done_file(const char *command, const char *cache, const char *file);
int print_done(const char *command, const char *cache);

/* ---- what a cache's object and the manager hold (cacheagectl-cache.c) ---- */

enum fmt {
        FMT_PLAIN,
        FMT_BOOL,
        FMT_DURATION,  /* usec */
        FMT_TIMESTAMP, /* CLOCK_REALTIME usec, 0 = never */
};

struct adapter_stat {
        char *key;
        uint64_t value;
};

/* A part of a counted cache (the kernel adapter's groups of a slice), as Parts says it. */
struct part_info {
        char *name;
        uint64_t bytes, reclaimed, reclaimed_bytes;
        char *state;      /* NULL, or why it is not aged as the rest (PartStates) */
};

/*
 * One cache, as read from the bus: its names and settings, its statistics in the library's
 * own struct (ca_stat_descs() says which property is which field), the adapter's figures.
 * What the daemon did not send (an older one) is not printed.
 */
struct cache_info {
        char *name, *adapter;
        char *objects_name, *part_name, *mechanism; /* what the objects are (age.h) */
        bool enabled;
        uint64_t interval_usec;
        uint32_t single_use_age, max_age;
        char *ages;          /* "fixed" or "auto" */
        uint32_t refault_window, target_refault_ppm;
        uint32_t rotations_behind; /* the daemon's: the cache falls behind its interval */
        unsigned have_props; /* bit i: cache_props[i] was read */
        bool have_refault_histogram;
        uint32_t refault_floor[CA_REFAULT_BUCKETS]; /* rotations */
        uint64_t refault_histogram[CA_REFAULT_BUCKETS];
        size_t n_refault_buckets;
        struct ca_stats stats;
        uint64_t have_stats; /* bit i: the field at i * 8 bytes in struct ca_stats */
        bool have_adapter_stats;
        struct adapter_stat *adapter_stats;
        size_t n_adapter_stats;
        char *deferred;            /* why its work is put off, "" when it is not */
        uint64_t deferred_since_usec;
        struct part_info *parts;
        size_t n_parts;
};

/* The properties that are not statistics, in the order show and --json print them. */
struct cache_prop {
        const char *name;
        char type; /* 's', 't', 'u' or 'b', as on the bus */
        enum fmt fmt;
        size_t offset; /* of the field in struct cache_info */
};

extern const struct cache_prop cache_props[];
extern const size_t n_cache_props;

void *prop_field(const struct cache_info *c, const struct cache_prop *p);
uint64_t prop_number(const struct cache_info *c, const struct cache_prop *p);
enum fmt stat_fmt(const struct ca_stat_desc *d);
bool have_stat(const struct cache_info *c, const struct ca_stat_desc *d);
bool info_counted(const struct cache_info *c);
bool counted_leaves_out(const struct cache_info *c, const char *name);
uint64_t adapter_stat_value(const struct cache_info *c, const char *key);
void cache_info_clear(struct cache_info *c);
int get_cache(sd_bus *bus, const char *name, struct cache_info *ret);

struct manager_info {
        char *version;
        char *drop_in_dir;
        uint64_t start_usec;
        uint64_t default_interval_usec;
        char **names; /* from ListCaches, in the daemon's order */
        size_t n_names;
};

void manager_info_clear(struct manager_info *m);
int get_manager(sd_bus *bus, struct manager_info *ret);

/* ---- show -p (cacheagectl-show.c) ---- */

bool property_wanted(const char *camel, const char *snake, const char *adapter_key);
void print_cache_json(FILE *f, const struct cache_info *c);
void properties_help(void); /* -p help: every name show knows */

/* ---- polkit's agent on this terminal, as systemctl's (cacheagectl-agent.c) ---- */

int polkit_agent_open(void);
void polkit_agent_close(void);

/* ---- the verbs: 0 or an exit status ---- */

int cmd_status(sd_bus *bus, int argc, char **argv);         /* cacheagectl-status.c */
int cmd_list(sd_bus *bus, int argc, char **argv);           /* cacheagectl-status.c */
int check_show(int argc, char **argv);                      /* cacheagectl-show.c */
int cmd_show(sd_bus *bus, int argc, char **argv);           /* cacheagectl-show.c */
int cmd_list_caches(sd_bus *bus, int argc, char **argv);    /* cacheagectl-status.c */
int cmd_cat_config(sd_bus *bus, int argc, char **argv);     /* cacheagectl-cat-config.c */
int check_set(int argc, char **argv);                       /* cacheagectl-set.c */
int cmd_set(sd_bus *bus, int argc, char **argv);            /* cacheagectl-set.c */
int cmd_rotate(sd_bus *bus, int argc, char **argv);         /* cacheagectl-actions.c */
int cmd_reset_statistics(sd_bus *bus, int argc, char **argv);
int cmd_reload(sd_bus *bus, int argc, char **argv);
int cmd_metrics(sd_bus *bus, int argc, char **argv);        /* cacheagectl-metrics.c */
int cmd_history(sd_bus *bus, int argc, char **argv);        /* cacheagectl-history.c */
