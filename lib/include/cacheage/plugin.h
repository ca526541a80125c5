/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef CACHEAGE_PLUGIN_H
#define CACHEAGE_PLUGIN_H

/*
 * The adapter plugin ABI. A plugin is a shared module, loaded with
 * dlopen(RTLD_NOW|RTLD_LOCAL), that exports exactly one symbol:
 *
 *     const struct ca_plugin cacheage_plugin = {
 *             .abi = CA_PLUGIN_ABI,
 *             .size = sizeof(struct ca_plugin),
 *             .name = "memcached",
 *             .create = mc_create,
 *             .destroy = mc_destroy,
 *     };
 *
 * The host refuses a table whose abi differs, whose size is smaller than it needs, whose
 * name does not match the file name, or that lacks create/destroy, naming the path.
 *
 * One [cache NAME] section of the daemon's configuration is one plugin instance: create()
 * reads the section's adapter keys with a key table (ca_section_parse() reports each bad
 * one with ca_host_key_error(), which adds FILE:LINE), builds its objects, and registers one
 * ca_cache with the host; the host then drives it: before_rotate, ca_cache_rotate(),
 * budgeted ca_cache_age() slices (which call the cache's reclaim op), after_age. Everything runs on the host's
 * single event-loop thread; a plugin doing I/O uses the host's libevent base.
 *
 * The host API below lives in libcacheage, which plugins link; the daemon fills in a
 * struct ca_host_ops. Plugins are built with hidden visibility but for the table. The
 * guide in doc/plugins.md, "Writing an adapter", walks through a whole plugin
 * (tests/plugin-example.c).
 */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cacheage/age.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CA_PLUGIN_ABI 6 /* 2: key tables, statistics that say their kind, pressure and idle;
                          3: asynchronous refresh (CA_ROTATE_LATER, ca_host_rotate_ready);
                          4: struct ca_cache_ops and struct ca_params grew (refaults, ages =
                          auto): a table built for 3 would be read past its end; and
                          struct ca_host_ops grew slice_usec (a host's table too);
                          5: struct ca_cache_part grew its state: an array built for 4 would
                          be read with the wrong stride;
                          6: struct ca_params grew auto_controller: ca_cache_get_params()
                          would write past the end of one built for 5 */
#define CA_PLUGIN_SYMBOL "cacheage_plugin"

struct event_base;
struct ca_host;

/* One adapter key of a section, as written in the configuration. */
struct ca_section_key {
        const char *key;
        const char *value;
};

/*
 * A [cache NAME] section, as the host hands it to a plugin: the cache's name and the
 * adapter's own keys (the aging keys are the host's). Owned by the host. The section and
 * every string it holds stay valid, and unchanged, until the plugin's destroy() has returned,
 * across every reload that keeps the instance (the host keeps its own copy of the text, not
 * the configuration's). A plugin may keep pointers into it for its instance's whole life,
 * from any thread of its own that destroy() stops. Use the accessors below rather than the
 * fields.
 */
struct ca_section {
        const char *name;
        const struct ca_section_key *keys;
        size_t n_keys;
};

const char *ca_section_name(const struct ca_section *s);
size_t ca_section_n_keys(const struct ca_section *s);
/* ca_section_key() - the i-th key (i < ca_section_n_keys()); NULL when out of range. */
const char *ca_section_key(const struct ca_section *s, size_t i);
/* ca_section_get() - the value of @key, or NULL when the section does not set it. */
const char *ca_section_get(const struct ca_section *s, const char *key);

/*
 * ---- Keys, table-driven ----
 *
 * An adapter describes its keys in one table, and ca_section_parse() does the rest: applies
 * the defaults, parses every key of the section into the adapter's own struct, and reports
 * every bad or unknown key (not only the first) through ca_host_key_error(). Values are
 * written as cacheage/value.h reads them, so a duration or a boolean reads the same in
 * every adapter as in the daemon's own [daemon] and [cache] keys (which use these tables).
 *
 *     struct mc_config { const char *server; uint64_t timeout_usec; bool verify; };
 *
 *     static const struct ca_key_spec mc_keys[] = {
 *             { .name = "server", .type = CA_KEY_STRING, CA_KEY_FIELD(struct mc_config, server),
 *               .def = "127.0.0.1:11211", .help = "HOST:PORT of the memcached server" },
 *             { .name = "timeout", .type = CA_KEY_DURATION,
 *               CA_KEY_FIELD(struct mc_config, timeout_usec), .def = "1s",
 *               .min = 1000, .max = 60000000, .help = "longest wait for a reply" },
 *             { .name = "verify", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct mc_config, verify),
 *               .def = "yes", .help = "compare before deleting" },
 *             CA_KEY_END
 *     };
 *
 *     struct mc_config cfg;
 *     r = ca_section_parse(host, section, mc_keys, &cfg);
 *
 * Adding a key to an adapter is adding one line to its table. Checks between keys
 * ("max must not be below min") stay explicit code after the table pass.
 */

enum ca_key_type {
        CA_KEY_BOOL,     /* bool: yes/no, true/false, on/off, 1/0, any case */
        CA_KEY_UINT,     /* an unsigned integer field of any width (.size), .min...max */
        CA_KEY_DURATION, /* uint64_t microseconds, "250ms", "1h 30min"; .min...max */
        CA_KEY_PERCENT,  /* double, 0..100, "12.5" or "12.5%" */
        CA_KEY_DECIMAL,  /* double, "1.5" (no sign, no exponent); .dmin...dmax */
        CA_KEY_CHOICE,   /* int: the value of one of .choices; with CA_KEY_NUMBER also .min...max */
        CA_KEY_STRING,   /* const char *: the text as written (may be empty) */
        CA_KEY_PATH,     /* const char *: an absolute path */
        CA_KEY_NAME,     /* const char *: [A-Za-z0-9_.-] (or an adapter name), 1...max bytes */
};

/* ca_key_spec.flags */
#define CA_KEY_ZERO_OFF (1u << 0)     /* 0 turns the feature off; messages say so */
#define CA_KEY_NUMBER (1u << 1)       /* CHOICE: a number .min...max is taken too, as is */
#define CA_KEY_ADAPTER_NAME (1u << 2) /* NAME: an adapter name, [a-z0-9_-] */

/* One word a CA_KEY_CHOICE key takes, and the int it stores. */
struct ca_key_choice {
        const char *name; /* NULL ends a list */
        int value;
};

struct ca_key_spec {
        const char *name;     /* the key as written; NULL ends a table (CA_KEY_END) */
        enum ca_key_type type;
        size_t offset;        /* of the target field in the caller's struct (CA_KEY_FIELD) */
        size_t size;          /* of the target field, checked against the type */
        const char *def;      /* default, as it would be written; NULL: the field is left as
                                 the caller set it */
        uint64_t min, max;    /* UINT, DURATION (usec), CHOICE with CA_KEY_NUMBER; NAME: max
                                 bytes */
        double dmin, dmax;    /* DECIMAL */
        const struct ca_key_choice *choices; /* CHOICE */
        const char *what;     /* the noun in messages ("invalid log level ..."); NULL: the
                                 type's own ("number", "duration", "boolean", "value", "name") */
        unsigned flags;       /* CA_KEY_* */
        /*
         * Optional: a further check of a value its type took ("HOST:PORT", "strace:PATH"), run
         * before it is stored; it may also fill other fields of @target from the text. @target
         * is NULL when only checking. Returns 0, or a negative errno and a message in @msg.
         */
        int (*check)(const char *value, void *target, char *msg, size_t msg_len);
        const char *help;     /* one line for people reading the table */
};

#define CA_KEY_FIELD(type, field) .offset = offsetof(type, field), .size = sizeof(((type *)0)->field)
#define CA_KEY_END { .name = NULL }

#define CA_KEY_MSG_MAX 512 /* bytes of one key message, always enough */

/* ca_key_find() - the spec named @name in @specs, or NULL. */
const struct ca_key_spec *ca_key_find(const struct ca_key_spec *specs, const char *name);

/*
 * ca_key_parse() - read @value as @spec says, run its check, and store it in @target's field
 * (@target NULL: check only). No host needed: the daemon's own keys go through this too.
 * Returns 0, or a negative errno (-EINVAL: not of the expected form, -ERANGE: outside the
 * limits; -EINVAL too for a spec that contradicts itself) with the reason in @msg, without
 * the key name, e.g. "invalid duration \"5 parsecs\" (expected e.g. 250ms, 30s, 5min, 1h)".
 * Text values (STRING, PATH, NAME) are stored as @value itself, not copied.
 */
int ca_key_parse(const struct ca_key_spec *spec, const char *value, void *target, char *msg,
                 size_t msg_len);

/*
 * ca_key_closest() - the name of @specs that @name is most likely a typo of: the closest by
 * edits (a character inserted, dropped or changed, or two neighbours swapped), when it is at
 * most 2 edits away (1 for a name under 4 bytes) and not @name itself; NULL otherwise (the
 * first of equals wins). Its distance in *ret_distance (may be NULL). For "did you mean"
 * hints: ca_section_parse() gives one for an unknown key.
 */
const char *ca_key_closest(const struct ca_key_spec *specs, const char *name,
                           unsigned *ret_distance);

/*
 * ca_key_names() - "a, b or c": the names of @specs, for "expected ..." messages; truncated
 * to fit @len. Returns @buf.
 */
char *ca_key_names(const struct ca_key_spec *specs, char *buf, size_t len);

/*
 * One statistic of an adapter, as its stats hook reports it: the value on D-Bus in
 * AdapterStats a{st}, what it is in AdapterStatsInfo a(sss) (name, "counter"|"gauge", help).
 * The hook says what each figure is every time it emits it, so that a new statistic is one
 * emit() in the hook and nothing else:
 *
 *     emit(eu, &(const struct ca_adapter_stat){ .name = "lookups", .kind = CA_STAT_COUNTER,
 *                                               .unit = "lookups", .help = "lookups made" },
 *          dc->lookups);
 *
 * The host leaves out (and logs once) a statistic that ca_adapter_stat_check() refuses.
 */
struct ca_adapter_stat {
        const char *name;       /* snake_case, [a-z][a-z0-9_]*, unique within the adapter */
        enum ca_stat_kind kind; /* CA_STAT_COUNTER (counts events) or CA_STAT_GAUGE (a level) */
        const char *unit;       /* optional: "objects", "bytes", "usec"... ([a-z0-9_]+) */
        const char *help;       /* optional: one line of printable ASCII */
};

#define CA_ADAPTER_STAT_NAME_MAX 64  /* bytes of a name, and of a unit */
#define CA_ADAPTER_STAT_HELP_MAX 256 /* bytes of a help line */
/*
 * Statistics one stats hook may emit: the host leaves out (and logs once) those after the
 * first CA_ADAPTER_STATS_MAX, so that every reply and history row that holds them is bounded.
 */
#define CA_ADAPTER_STATS_MAX 128

/* Called by a stats hook once per statistic; @stat is only read during the call. */
typedef void (*ca_stat_emit_t)(void *emit_userdata, const struct ca_adapter_stat *stat,
                               uint64_t value);

/*
 * ca_adapter_stat_check() - whether @stat is well-formed (see struct ca_adapter_stat).
 * Returns 0, or -EINVAL with the statistic and the reason in @reason.
 */
int ca_adapter_stat_check(const struct ca_adapter_stat *stat, char *reason, size_t reason_len);

/* before_rotate's answer: the refresh goes on; ca_host_rotate_ready() will say when it is done. */
#define CA_ROTATE_LATER 1

/* What the host calls around the aging of a registered cache; every hook is optional. */
struct ca_cache_hooks {
        /*
         * Before each rotation: refresh the cache from its source (read a metadump, scan
         * a directory, replay a trace...). A negative errno is logged by the host, and the
         * rotation goes on with what the cache holds.
         *
         * A refresh that waits for I/O must not block the host's loop: start it on the
         * host's event base and return CA_ROTATE_LATER; when it is done (or has failed),
         * call ca_host_rotate_ready() and the host rotates then. Until that call the host
         * starts no other refresh of this cache: a rotation that falls due meanwhile is
         * skipped (counted and logged at debug level), so a slow source slows its own
         * cache's rotations and nothing else.
         */
        int (*before_rotate)(struct ca_cache *cache, void *userdata);
        /* After each aging slice: dispose of the victims collected by reclaim. */
        void (*after_age)(struct ca_cache *cache, void *userdata);
        /*
         * Emit the adapter's own statistics: the same ones, in the same order, at every
         * call (a bus read calls it; it must be cheap and change nothing).
         */
        void (*stats)(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit,
                      void *emit_userdata);
};

struct ca_plugin {
        uint32_t abi;         /* CA_PLUGIN_ABI */
        uint32_t size;        /* sizeof(struct ca_plugin) as the plugin was built */
        const char *name;     /* the adapter name, as in "adapter = NAME" and the file name */
        const char *description;
        /*
         * Required. Check @section and create an instance; register its cache with
         * ca_host_register_cache(). Returns 0 and the instance in *ret_instance, or a negative
         * errno after reporting every problem (ca_host_key_error / ca_host_log).
         * With ca_host_check_only(host) true, validate the keys only: create nothing, open
         * nothing, register nothing, and store NULL.
         */
        int (*create)(struct ca_host *host, const struct ca_section *section,
                      void **ret_instance);
        /* Required. Unregister and free everything; accepts NULL. */
        void (*destroy)(void *instance);
};

/*
 * Pressure stall information, as the kernel gives it in /proc/pressure/{cpu,memory,io}
 * (Documentation/accounting/psi.rst): "some" is the share of time in which at least one task
 * was stalled on the resource, "full" the share in which all non-idle tasks were.
 */
struct ca_psi {
        double avg10_pct;    /* over the last 10 seconds, 0..100 */
        double avg60_pct;
        double avg300_pct;
        uint64_t total_usec; /* stalled time since boot */
};

struct ca_pressure {
        struct ca_psi cpu_some, cpu_full; /* cpu full: zero where the kernel has no such line */
        struct ca_psi memory_some, memory_full;
        struct ca_psi io_some, io_full;
};

/* Filled in by the host (the daemon, or a test). */
struct ca_host_ops {
        void (*log)(void *userdata, int level, const char *msg);
        void (*key_error)(void *userdata, const struct ca_section *s, const char *key,
                          const char *msg);
        struct event_base *(*event_base)(void *userdata);
        int (*register_cache)(void *userdata, const struct ca_section *s, struct ca_cache *cache,
                              const struct ca_cache_hooks *hooks, void *hooks_userdata);
        void (*unregister_cache)(void *userdata, struct ca_cache *cache);
        int (*check_only)(void *userdata);
        /* Optional (ABI 2): the machine's pressure, and the host's idle decision. */
        int (*pressure)(void *userdata, struct ca_pressure *ret);
        bool (*idle)(void *userdata);
        /* ABI 3: an asynchronous refresh is done. */
        void (*rotate_ready)(void *userdata, struct ca_cache *cache, int error);
        /* Optional (ABI 4): the longest aging slice, in microseconds. */
        uint64_t (*slice_usec)(void *userdata);
};

struct ca_host {
        const struct ca_host_ops *ops;
        void *userdata;
};

/* ca_host_log() - log at syslog @level, through the host. */
void ca_host_log(struct ca_host *host, int level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* ca_host_key_error() - report a bad adapter key: the host prints "FILE:LINE: key: msg". */
void ca_host_key_error(struct ca_host *host, const struct ca_section *s, const char *key,
                       const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* ca_host_event_base() - the host's libevent base (NULL when checking only). */
struct event_base *ca_host_event_base(struct ca_host *host);
/*
 * ca_host_register_cache() - hand @cache to the host for aging under @s's name. The host
 * applies the section's aging parameters (ca_cache_set_params) and interval. At most one
 * cache per section. Returns 0, -EEXIST, -EINVAL.
 */
int ca_host_register_cache(struct ca_host *host, const struct ca_section *s,
                           struct ca_cache *cache, const struct ca_cache_hooks *hooks,
                           void *hooks_userdata);
/* ca_host_unregister_cache() - stop aging @cache (from destroy); unknown caches are ignored. */
void ca_host_unregister_cache(struct ca_host *host, struct ca_cache *cache);
/* ca_host_check_only() - nonzero when create() must only validate (--check-config). */
int ca_host_check_only(struct ca_host *host);

/*
 * ca_host_pressure() - the machine's pressure stall figures now, as the host reads them (the
 * daemon: /proc/pressure). Returns 0, -EOPNOTSUPP when there are none (no PSI in the kernel,
 * or a host without the notion), or another negative errno (-EBADMSG: unreadable figures).
 */
int ca_host_pressure(struct ca_host *host, struct ca_pressure *ret);

/*
 * ca_host_idle() - whether the machine is idle enough for optional work now: the very test
 * the daemon puts rotations off by (CPU and memory "some avg10" under idle_cpu_pressure and
 * idle_memory_pressure). An adapter asks before work that can wait (a full rescan, a
 * compaction). True when the host does not gate on idleness or cannot tell (no PSI).
 */
bool ca_host_idle(struct ca_host *host);

/*
 * ca_host_rotate_ready() - the refresh that before_rotate() answered CA_ROTATE_LATER for is
 * done: the host rotates @cache now and starts its aging slices. @error is 0, or a negative
 * errno that the host logs (the rotation then goes on with what the cache holds, as for a
 * synchronous refresh that failed). Call it from the host's loop, at most once per
 * CA_ROTATE_LATER; it may be called from inside before_rotate() itself (the refresh finished
 * at once) as long as before_rotate() then returns CA_ROTATE_LATER. A call without a refresh
 * under way is ignored.
 */
void ca_host_rotate_ready(struct ca_host *host, struct ca_cache *cache, int error);

#define CA_HOST_SLICE_USEC_DEFAULT 2000 /* usec: the daemon's default slice_time */

/*
 * ca_host_slice_usec() - the longest the host lets one aging slice hold its loop (the daemon's
 * [daemon] slice_time). An adapter that works on the loop in steps of its own (a directory
 * scan, the deletions after a slice) keeps each step within it. CA_HOST_SLICE_USEC_DEFAULT
 * when the host does not say.
 */
uint64_t ca_host_slice_usec(struct ca_host *host);

/*
 * ca_section_parse() - the whole of @s by @specs into @target: every default first, then
 * every key of the section. Each bad value and each key the table does not know is reported
 * with ca_host_key_error() ("FILE:LINE: key: message"), all of them, in the order written;
 * an unknown key as "unknown key (expected a, b or c)", or, when it looks like a typo of one
 * (ca_key_closest()), "unknown key, did you mean \"b\"? (expected a, b or c)": a host whose
 * sections take keys of its own may add them to the hint (the daemon does).
 * Returns 0, or -EINVAL when anything was reported (@target then holds the defaults and the
 * good keys). Text fields point into @s, which lives as long as the instance.
 */
int ca_section_parse(struct ca_host *host, const struct ca_section *s,
                     const struct ca_key_spec *specs, void *target);

/*
 * ca_plugin_check() - validate a table found in a module: abi, size, name, hooks.
 * Returns 0, or -EPROTO (abi/size) / -EINVAL (name, missing hook) with a reason in @reason.
 */
int ca_plugin_check(const struct ca_plugin *p, const char *expected_name, char *reason,
                    size_t reason_len);

#ifdef __cplusplus
}
#endif

#endif
