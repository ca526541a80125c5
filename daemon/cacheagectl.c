/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheagectl: the command-line client of cacheaged's D-Bus API (org.cacheage.CacheAge1).
 *
 * Every value is read with GetAll into a table keyed by property name, so that the human
 * output, `show` and `--json` agree, and a property the daemon adds later is ignored rather
 * than fatal. Values given to `set` are parsed and checked here, with the daemon's own
 * parsers and limits, before anything is sent.
 */

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

/* The build's config.h (CA_VERSION); "config.h" alone is the parser's, beside this file. */
#include "bus-address.h"
#include "bus-def.h"
#include "cacheage-build.h"
#include "cacheage/age.h"
#include "config.h"
#include "dropin.h"
#include "escape.h"
#include "history-plot.h"
#include "json-print.h"
#include "pager.h"

#define CTL_CACHES_MAX 4096       /* caches listed at once (the daemon allows 256) */
#define CTL_ADAPTER_STATS_MAX 256 /* adapter statistics kept per cache */
#define CTL_WATCH_DEFAULT_SEC 2

/* Exit statuses, documented in --help. */
enum {
        EXIT_OK = 0,
        EXIT_FAILED = 1,      /* the daemon refused or failed (no such cache, bad config) */
        EXIT_USAGE = 2,       /* bad command line or value */
        EXIT_NOT_RUNNING = 3, /* no daemon on that bus, or no bus */
        EXIT_DENIED = 4,      /* needs root */
};

static enum { BUS_SYSTEM, BUS_USER, BUS_ADDRESS } arg_bus = BUS_SYSTEM;
static const char *arg_address;
static enum json_mode { JSON_OFF, JSON_SHORT, JSON_PRETTY } arg_json;
static bool arg_no_pager;
static bool arg_no_legend;
static bool arg_value;      /* show: values only */
static bool arg_persistent; /* set: a drop-in and a reload */
static bool arg_colors;     /* decided once, before a pager takes standard output */
static char **arg_properties; /* show -p: D-Bus or JSON names, "AdapterStats.KEY" */
static size_t n_arg_properties;
static double arg_watch_sec; /* 0 = no --watch */
static const char *arg_command = "status";
static const char *arg_since;  /* history: --since=TIME */
static const char *arg_svg;    /* history: --svg=FILE */
static unsigned arg_tty_columns; /* standard output's width when it is a terminal, else 0 */

/* ---- output helpers ---- */

/* A JSON document is written to a buffer, then laid out as --json says (json_end()). */
struct json_doc {
        FILE *f;
        char *buf;
        size_t len;
};

static FILE *json_begin(struct json_doc *j)
{
        *j = (struct json_doc){ 0 };
        j->f = open_memstream(&j->buf, &j->len);
        return j->f ? j->f : stdout; /* out of memory: straight out, unindented */
}

static void json_end(struct json_doc *j)
{
        if (!j->f)
                return;
        fclose(j->f);
        json_print(stdout, j->buf ? j->buf : "", arg_json == JSON_PRETTY);
        free(j->buf);
        *j = (struct json_doc){ 0 };
}

/*
 * Colour and bold on a terminal only, as systemd's tools: $SYSTEMD_COLORS says yes or no
 * whatever the output, $NO_COLOR (any value) or TERM=dumb say no.
 */
static bool colors_wanted(void)
{
        const char *e = getenv("SYSTEMD_COLORS"), *term = getenv("TERM");
        int b;

        if (e) {
                if (strcmp(e, "16") == 0 || strcmp(e, "256") == 0 || strcmp(e, "24bit") == 0)
                        return true;
                b = ca_parse_bool(e);
                if (b >= 0)
                        return b;
        }
        if (getenv("NO_COLOR") || (term && strcmp(term, "dumb") == 0))
                return false;
        return isatty(STDOUT_FILENO);
}

#define ANSI_BOLD "\033[1m"
#define ANSI_GREEN "\033[0;32m"
#define ANSI_GREY "\033[0;38;5;245m"
#define ANSI_NORMAL "\033[0m"

static const char *ansi(const char *code)
{
        return arg_colors ? code : "";
}

static void json_string(FILE *f, const char *s)
{
        fputc('"', f);
        for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
                switch (*p) {
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                case '\t':
                        fputs("\\t", f);
                        break;
                case '\r':
                        fputs("\\r", f);
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f)
                                fprintf(f, "\\u%04x", *p);
                        else
                                fputc(*p, f);
                }
        }
        fputc('"', f);
}

/* "IntervalUSec" -> "interval_usec", "SingleUseObjects" -> "single_use_objects". */
#define SNAKE_MAX 128 /* bytes of a snake_case name, NUL included */

static char *snake_case(const char *camel, char buf[static SNAKE_MAX])
{
        size_t n = 0;

        /* Room for the longest step ("_usec") and the NUL. */
        for (const char *p = camel; *p && n + 6 < SNAKE_MAX; p++) {
                bool upper = *p >= 'A' && *p <= 'Z';

                /* "USec" is one word. */
                if (p[0] == 'U' && strncmp(p, "USec", 4) == 0) {
                        if (n > 0)
                                buf[n++] = '_';
                        memcpy(buf + n, "usec", 4);
                        n += 4;
                        p += 3;
                        continue;
                }
                if (upper && n > 0)
                        buf[n++] = '_';
                buf[n++] = upper ? (char)(*p - 'A' + 'a') : *p;
        }
        buf[n] = '\0';
        return buf;
}

static void json_key(FILE *f, const char *camel)
{
        char buf[SNAKE_MAX];

        json_string(f, snake_case(camel, buf));
}

static uint64_t now_realtime_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* A duration rounded down to seconds once it is past a minute, as "uptime" shows it. */
/* An uptime: whole seconds once there is one ("1h 3min 7s", not "1h 3min 7s 412ms"). */
static char *format_age(uint64_t usec, char *buf, size_t len)
{
        if (usec >= 1000000)
                usec -= usec % 1000000;
        return ca_format_duration(usec, buf, len);
}

static char *format_relative(uint64_t then_usec, uint64_t now_usec, char *buf, size_t len)
{
        char d[CA_DURATION_MAX_STR];

        if (then_usec == 0)
                snprintf(buf, len, "never");
        else if (then_usec >= now_usec || now_usec - then_usec < 1000000)
                snprintf(buf, len, "just now");
        else
                snprintf(buf, len, "%s ago",
                         ca_format_duration((now_usec - then_usec) / 1000000 * 1000000, d,
                                            sizeof(d)));
        return buf;
}

static char *format_timestamp(uint64_t usec, char *buf, size_t len)
{
        time_t t = (time_t)(usec / 1000000);
        struct tm tm;

        if (usec == 0 || !localtime_r(&t, &tm) ||
            strftime(buf, len, "%a %Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                snprintf(buf, len, "n/a");
        return buf;
}

/* Standard output's width when it is a terminal ($COLUMNS first, as systemd's tools), else 0. */
static unsigned terminal_columns(void)
{
        const char *e = getenv("COLUMNS");
        struct winsize ws;
        uint64_t n;

        if (!isatty(STDOUT_FILENO))
                return 0;
        if (e && ca_parse_uint(e, 20, 1000, &n) == 0)
                return (unsigned)n;
        if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
                return ws.ws_col;
        return 80;
}

/* Page what a command prints on a terminal, unless told not to (pager.h says how). */
static void maybe_page(void)
{
        if (!arg_no_pager && arg_watch_sec <= 0)
                pager_open();
}

/* ---- errors ---- */

static const char *bus_description(char *buf, size_t len)
{
        switch (arg_bus) {
        case BUS_SYSTEM:
                return "the system bus";
        case BUS_USER:
                return "the user bus";
        default:
                snprintf(buf, len, "the bus at %s", arg_address);
                return buf;
        }
}

static int vfail(int status, bool keep_newlines, const char *fmt, va_list ap)
{
        char raw[4096], msg[sizeof(raw) * ESCAPE_BYTE_MAX];

        vsnprintf(raw, sizeof(raw), fmt, ap);
        /* Arguments and the daemon's words are quoted: never a raw control byte on a terminal. */
        escape_control(raw, keep_newlines, msg, sizeof(msg));
        fflush(stdout);
        fprintf(stderr, "cacheagectl: %s\n", msg);
        if (arg_json) {
                struct json_doc j;
                FILE *f = json_begin(&j);

                fprintf(f, "{\"error\":");
                json_string(f, msg);
                fprintf(f, ",\"exit_status\":%d}", status);
                json_end(&j);
        }
        return status;
}

static int fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int status, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vfail(status, false, fmt, ap);
        va_end(ap);
        return r;
}

/* fail() for a message of several lines, each escaped already (the daemon's list of errors). */
static int fail_lines(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_lines(int status, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vfail(status, true, fmt, ap);
        va_end(ap);
        return r;
}

/*
 * Turn a failed call into one line and an exit status. @what says what was attempted
 * ("rotate", "set"), @cache names the cache the call was about (or NULL).
 */
static int call_failed(const sd_bus_error *e, int r, const char *what, const char *cache)
{
        char buf[512];

        if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                return fail(EXIT_NOT_RUNNING, "cacheaged is not running on %s (%s has no owner)",
                            bus_description(buf, sizeof(buf)), CA_BUS_NAME);
        /* D-Bus activation tried and failed: systemd's answer (no such unit: not enabled). */
        if (sd_bus_error_is_set(e) && e->name &&
            (strncmp(e->name, "org.freedesktop.systemd1.", 25) == 0 ||
             strncmp(e->name, "org.freedesktop.DBus.Error.Spawn.", 33) == 0))
                return fail(EXIT_NOT_RUNNING, "cacheaged is not running on %s, and starting it "
                            "failed: %s (is cacheaged.service enabled?)",
                            bus_description(buf, sizeof(buf)),
                            e->message ? e->message : e->name);
        if (sd_bus_error_has_names(e, SD_BUS_ERROR_ACCESS_DENIED,
                                   SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED) ||
            r == -EACCES || r == -EPERM)
                return fail(EXIT_DENIED, "Permission denied: '%s' needs root (try: sudo cacheagectl %s ...)",
                            what, what);
        if (cache && sd_bus_error_has_names(e, SD_BUS_ERROR_UNKNOWN_OBJECT,
                                            SD_BUS_ERROR_UNKNOWN_INTERFACE))
                return fail(EXIT_FAILED, "No cache named %s", cache);
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_INVALID_ARGS))
                return fail(EXIT_USAGE, "%s", e->message ? e->message : "Invalid value");
        if (sd_bus_error_is_set(e))
                return fail(EXIT_FAILED, "Failed to %s: %s", what,
                            e->message ? e->message : e->name);
        return fail(EXIT_FAILED, "Failed to %s: %s", what, strerror(-r));
}

/* ---- what a cache's object holds ---- */

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
};

_Static_assert(sizeof(struct ca_stats) / sizeof(uint64_t) <= 64, "have_stats is too small");

/* The properties that are not statistics, in the order show and --json print them. */
static const struct cache_prop {
        const char *name;
        char type; /* 's', 't', 'u' or 'b', as on the bus */
        enum fmt fmt;
        size_t offset; /* of the field in struct cache_info */
} cache_props[] = {
        { "Name", 's', FMT_PLAIN, offsetof(struct cache_info, name) },
        { "Adapter", 's', FMT_PLAIN, offsetof(struct cache_info, adapter) },
        { "Enabled", 'b', FMT_BOOL, offsetof(struct cache_info, enabled) },
        { "IntervalUSec", 't', FMT_DURATION, offsetof(struct cache_info, interval_usec) },
        { "SingleUseAge", 'u', FMT_PLAIN, offsetof(struct cache_info, single_use_age) },
        { "MaxAge", 'u', FMT_PLAIN, offsetof(struct cache_info, max_age) },
        { "Ages", 's', FMT_PLAIN, offsetof(struct cache_info, ages) },
        { "RefaultWindow", 'u', FMT_PLAIN, offsetof(struct cache_info, refault_window) },
        { "TargetRefaultPpm", 'u', FMT_PLAIN, offsetof(struct cache_info, target_refault_ppm) },
        { "ObjectsName", 's', FMT_PLAIN, offsetof(struct cache_info, objects_name) },
        { "PartName", 's', FMT_PLAIN, offsetof(struct cache_info, part_name) },
        { "Mechanism", 's', FMT_PLAIN, offsetof(struct cache_info, mechanism) },
        { "RotationsBehind", 'u', FMT_PLAIN, offsetof(struct cache_info, rotations_behind) },
};
#define N_CACHE_PROPS (sizeof(cache_props) / sizeof(cache_props[0]))

static void *prop_field(const struct cache_info *c, const struct cache_prop *p)
{
        return (char *)c + p->offset;
}

/* The value of a 't', 'u' or 'b' property. */
static uint64_t prop_number(const struct cache_info *c, const struct cache_prop *p)
{
        switch (p->type) {
        case 'u':
                return *(const uint32_t *)prop_field(c, p);
        case 'b':
                return *(const bool *)prop_field(c, p);
        default:
                return *(const uint64_t *)prop_field(c, p);
        }
}

static enum fmt stat_fmt(const struct ca_stat_desc *d)
{
        if (strcmp(d->unit, "usec") == 0)
                return FMT_DURATION;
        if (strcmp(d->unit, "timestamp_usec") == 0)
                return FMT_TIMESTAMP;
        return FMT_PLAIN;
}

static bool have_stat(const struct cache_info *c, const struct ca_stat_desc *d)
{
        return c->have_stats & (UINT64_C(1) << (d->offset / sizeof(uint64_t)));
}

static void cache_info_clear(struct cache_info *c)
{
        free(c->name);
        free(c->adapter);
        free(c->ages);
        free(c->objects_name);
        free(c->part_name);
        free(c->mechanism);
        for (size_t i = 0; i < c->n_adapter_stats; i++)
                free(c->adapter_stats[i].key);
        free(c->adapter_stats);
        memset(c, 0, sizeof(*c));
}

static int read_adapter_stats(sd_bus_message *m, struct cache_info *c)
{
        const char *key;
        uint64_t value;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{st}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "{st}", &key, &value)) > 0) {
                struct adapter_stat *v;

                if (c->n_adapter_stats >= CTL_ADAPTER_STATS_MAX)
                        continue;
                v = realloc(c->adapter_stats, (c->n_adapter_stats + 1) * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                c->adapter_stats = v;
                v[c->n_adapter_stats].key = strdup(key);
                if (!v[c->n_adapter_stats].key)
                        return -ENOMEM;
                v[c->n_adapter_stats++].value = value;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* RefaultHistogram: a(ut), (lowest distance of the bucket, refaults); extra buckets ignored. */
static int read_refault_histogram(sd_bus_message *m, struct cache_info *c)
{
        uint32_t floor;
        uint64_t n;
        int r;

        r = sd_bus_message_enter_container(m, 'v', "a(ut)");
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'a', "(ut)");
        if (r < 0)
                return r;
        c->n_refault_buckets = 0;
        while ((r = sd_bus_message_read(m, "(ut)", &floor, &n)) > 0)
                if (c->n_refault_buckets < CA_REFAULT_BUCKETS) {
                        c->refault_floor[c->n_refault_buckets] = floor;
                        c->refault_histogram[c->n_refault_buckets++] = n;
                }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        c->have_refault_histogram = true;
        return sd_bus_message_exit_container(m);
}

static int read_prop(sd_bus_message *m, const struct cache_prop *p, struct cache_info *c)
{
        const char *s;
        char **field;
        int b, r;

        switch (p->type) {
        case 's':
                r = sd_bus_message_read(m, "v", "s", &s);
                if (r < 0)
                        return r;
                field = prop_field(c, p);
                free(*field);
                *field = strdup(s);
                return *field ? 0 : -ENOMEM;
        case 'u':
                return sd_bus_message_read(m, "v", "u", (uint32_t *)prop_field(c, p));
        case 'b':
                r = sd_bus_message_read(m, "v", "b", &b);
                if (r >= 0)
                        *(bool *)prop_field(c, p) = b;
                return r;
        default:
                return sd_bus_message_read(m, "v", "t", (uint64_t *)prop_field(c, p));
        }
}

/* Read one property of a GetAll reply's a{sv} into @c; unknown ones are skipped. */
static int read_cache_property(sd_bus_message *m, const char *name, struct cache_info *c)
{
        const struct ca_stat_desc *d;
        uint64_t t;
        int r;

        for (size_t i = 0; i < N_CACHE_PROPS; i++)
                if (strcmp(cache_props[i].name, name) == 0) {
                        r = read_prop(m, &cache_props[i], c);
                        if (r < 0)
                                return r;
                        c->have_props |= 1u << i;
                        return 0;
                }
        d = ca_stat_desc_find(name);
        if (d && strcmp(d->property, name) == 0) {
                r = sd_bus_message_read(m, "v", "t", &t);
                if (r < 0)
                        return r;
                memcpy((char *)&c->stats + d->offset, &t, sizeof(t));
                c->have_stats |= UINT64_C(1) << (d->offset / sizeof(uint64_t));
                return 0;
        }
        if (strcmp(name, "RefaultHistogram") == 0)
                return read_refault_histogram(m, c);
        if (strcmp(name, "AdapterStats") == 0) {
                r = sd_bus_message_enter_container(m, 'v', "a{st}");
                if (r < 0)
                        return r;
                r = read_adapter_stats(m, c);
                if (r < 0)
                        return r;
                c->have_adapter_stats = true;
                return sd_bus_message_exit_container(m);
        }
        return sd_bus_message_skip(m, "v");
}

static int get_cache(sd_bus *bus, const char *name, struct cache_info *ret)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        struct cache_info c = { 0 };
        char *path = NULL;
        const char *prop;
        int r;

        r = sd_bus_path_encode(CA_BUS_CACHE_PREFIX, name, &path);
        if (r < 0)
                return fail(EXIT_FAILED, "Out of memory");
        r = sd_bus_call_method(bus, CA_BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll",
                               &error, &reply, "s", CA_BUS_CACHE_IFACE);
        free(path);
        if (r < 0) {
                r = call_failed(&error, r, "show", name);
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                r = sd_bus_message_read(reply, "s", &prop);
                if (r >= 0)
                        r = read_cache_property(reply, prop, &c);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        sd_bus_message_unref(reply);
        if (r < 0) {
                cache_info_clear(&c);
                return fail(EXIT_FAILED, "Failed to parse the properties of %s: %s", name,
                            strerror(-r));
        }
        *ret = c;
        return 0;
}

struct manager_info {
        char *version;
        uint64_t start_usec;
        uint64_t default_interval_usec;
        char **names; /* from ListCaches, in the daemon's order */
        size_t n_names;
};

static void manager_info_clear(struct manager_info *m)
{
        free(m->version);
        for (size_t i = 0; i < m->n_names; i++)
                free(m->names[i]);
        free(m->names);
        memset(m, 0, sizeof(*m));
}

static int get_manager(sd_bus *bus, struct manager_info *ret)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        struct manager_info m = { 0 };
        const char *s, *adapter, *path;
        int r;

        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH,
                               "org.freedesktop.DBus.Properties", "GetAll", &error, &reply, "s",
                               CA_BUS_MANAGER_IFACE);
        if (r < 0)
                goto out_call;
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                r = sd_bus_message_read(reply, "s", &s);
                if (r < 0)
                        break;
                if (strcmp(s, "Version") == 0) {
                        r = sd_bus_message_read(reply, "v", "s", &s);
                        if (r >= 0) {
                                free(m.version);
                                m.version = strdup(s);
                        }
                } else if (strcmp(s, "StartTimestampUSec") == 0) {
                        r = sd_bus_message_read(reply, "v", "t", &m.start_usec);
                } else if (strcmp(s, "DefaultIntervalUSec") == 0) {
                        r = sd_bus_message_read(reply, "v", "t", &m.default_interval_usec);
                } else {
                        r = sd_bus_message_skip(reply, "v");
                }
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        reply = sd_bus_message_unref(reply);
        if (r < 0)
                goto out_parse;

        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH, CA_BUS_MANAGER_IFACE,
                               "ListCaches", &error, &reply, NULL);
        if (r < 0)
                goto out_call;
        r = sd_bus_message_enter_container(reply, 'a', "(sso)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(sso)", &s, &adapter, &path)) > 0) {
                char **v;

                if (m.n_names >= CTL_CACHES_MAX)
                        continue;
                v = realloc(m.names, (m.n_names + 1) * sizeof(*v));
                if (!v) {
                        r = -ENOMEM;
                        break;
                }
                m.names = v;
                m.names[m.n_names] = strdup(s);
                if (!m.names[m.n_names]) {
                        r = -ENOMEM;
                        break;
                }
                m.n_names++;
        }
        sd_bus_message_unref(reply);
        if (r < 0)
                goto out_parse;
        *ret = m;
        return 0;

out_call:
        manager_info_clear(&m);
        r = call_failed(&error, r, "query cacheaged", NULL);
        sd_bus_error_free(&error);
        return r;
out_parse:
        manager_info_clear(&m);
        return fail(EXIT_FAILED, "Failed to parse the reply of cacheaged: %s", strerror(-r));
}

/* ---- status ---- */

/* ---- show -p: which properties ---- */

static bool *arg_properties_matched; /* parallel to arg_properties */

/*
 * Whether show prints the property @camel (or @snake, a statistic's own name), with -p; an
 * adapter statistic is "AdapterStats.KEY" (@adapter_key set).
 */
static bool property_wanted(const char *camel, const char *snake, const char *adapter_key)
{
        char buf[SNAKE_MAX];
        bool wanted = n_arg_properties == 0;

        if (!snake)
                snake = snake_case(camel, buf);
        for (size_t i = 0; i < n_arg_properties; i++) {
                const char *want = arg_properties[i];
                size_t stem = strcspn(want, ".");

                if (adapter_key) {
                        /* "AdapterStats" or "adapter_stats", alone or with ".KEY" */
                        if ((strncmp(want, camel, stem) != 0 || strlen(camel) != stem) &&
                            (strncmp(want, snake, stem) != 0 || strlen(snake) != stem))
                                continue;
                        if (want[stem] && strcmp(want + stem + 1, adapter_key) != 0)
                                continue;
                } else if (strcmp(want, camel) != 0 && strcmp(want, snake) != 0) {
                        continue;
                }
                arg_properties_matched[i] = true;
                wanted = true;
        }
        return wanted;
}

/* -p names, checked before anything is asked: a typo is an error, not an empty answer. */
static int check_properties(void)
{
        char buf[SNAKE_MAX];

        for (size_t i = 0; i < n_arg_properties; i++) {
                const char *p = arg_properties[i];
                size_t stem = strcspn(p, ".");
                bool known = ca_stat_desc_find(p) != NULL ||
                             strcmp(p, "RefaultHistogram") == 0 ||
                             strcmp(p, "refault_histogram") == 0;

                for (size_t j = 0; j < N_CACHE_PROPS && !known; j++)
                        known = strcmp(p, cache_props[j].name) == 0 ||
                                strcmp(p, snake_case(cache_props[j].name, buf)) == 0;
                if (!known && (strncmp(p, "AdapterStats", stem) == 0 ||
                               strncmp(p, "adapter_stats", stem) == 0) &&
                    (stem == strlen("AdapterStats") || stem == strlen("adapter_stats")))
                        known = p[stem] == '\0' || p[stem + 1] != '\0';
                if (!known)
                        return fail(EXIT_USAGE, "Unknown property '%s' (every one: cacheagectl "
                                    "show NAME; an adapter's statistic: AdapterStats.KEY)", p);
        }
        return 0;
}

static void print_cache_json(FILE *f, const struct cache_info *c)
{
        const struct ca_stat_desc *d;
        size_t n_stats;
        bool first = true;

        fputc('{', f);
        for (size_t i = 0; i < N_CACHE_PROPS; i++) {
                const struct cache_prop *p = &cache_props[i];

                if (!(c->have_props & (1u << i)) || !property_wanted(p->name, NULL, NULL))
                        continue;
                if (!first)
                        fputc(',', f);
                first = false;
                json_key(f, p->name);
                fputc(':', f);
                if (p->type == 's')
                        json_string(f, *(char **)prop_field(c, p));
                else if (p->type == 'b')
                        fputs(prop_number(c, p) ? "true" : "false", f);
                else
                        fprintf(f, "%" PRIu64, prop_number(c, p));
        }
        d = ca_stat_descs(&n_stats);
        for (size_t i = 0; i < n_stats; i++) {
                if (!have_stat(c, &d[i]) || !property_wanted(d[i].property, d[i].name, NULL))
                        continue;
                if (!first)
                        fputc(',', f);
                first = false;
                json_string(f, d[i].name);
                fprintf(f, ":%" PRIu64, ca_stat_value(&c->stats, &d[i]));
        }
        if (c->have_refault_histogram &&
            property_wanted("RefaultHistogram", "refault_histogram", NULL)) {
                if (!first)
                        fputc(',', f);
                first = false;
                json_key(f, "RefaultHistogram");
                fputs(":[", f);
                for (size_t j = 0; j < c->n_refault_buckets; j++)
                        fprintf(f, "%s{\"from_rotations\":%" PRIu32 ",\"refaults\":%" PRIu64 "}",
                                j ? "," : "", c->refault_floor[j], c->refault_histogram[j]);
                fputc(']', f);
        }
        if (c->have_adapter_stats) {
                bool first_stat = true;

                for (size_t j = 0; j < c->n_adapter_stats; j++) {
                        if (!property_wanted("AdapterStats", "adapter_stats",
                                             c->adapter_stats[j].key))
                                continue;
                        if (first_stat) {
                                if (!first)
                                        fputc(',', f);
                                json_key(f, "AdapterStats");
                                fputs(":{", f);
                        } else {
                                fputc(',', f);
                        }
                        first_stat = false;
                        json_string(f, c->adapter_stats[j].key);
                        fprintf(f, ":%" PRIu64, c->adapter_stats[j].value);
                }
                if (!first_stat)
                        fputc('}', f);
                else if (n_arg_properties == 0)
                        fprintf(f, "%s\"adapter_stats\":{}", first ? "" : ",");
        }
        fputc('}', f);
}

enum { COL_CACHE, COL_ADAPTER, COL_STATE, COL_OBJECTS, COL_PART, COL_RECLAIMED,
       COL_REFAULTS, COL_INTERVAL, COL_AGES, COL_LAST, N_COLS };

static const struct {
        const char *title;
        bool right; /* numbers are right-aligned */
} columns[N_COLS] = {
        { "CACHE", false },     { "ADAPTER", false },  { "STATE", false },
        { "OBJECTS", true },    { "SINGLE-USE", true }, { "RECLAIMED", true },
        { "REFAULTS", true },   { "INTERVAL", false },  { "AGES", false },
        { "LAST ROTATION", false },
};

#define CELL_MAX 96

/*
 * The columns say what they count. A cache of nodes counts "objects", of which "single-use",
 * aged by its ages; the kernel adapter counts the kernel's "dentries", of which "negative",
 * aged by a mechanism (cacheage/age.h, struct ca_cache_counts). When every cache counts the
 * same things the titles name them and the cells are bare numbers; when they differ the
 * titles are general and each cell names what it counts.
 */
struct status_titles {
        char objects[CELL_MAX], part[CELL_MAX];
        const char *ages;
        bool name_objects, name_part; /* cells say what they count */
};

static const char *info_objects_name(const struct cache_info *c)
{
        return c->objects_name && *c->objects_name ? c->objects_name : "objects";
}

static const char *info_part_name(const struct cache_info *c)
{
        return c->part_name && *c->part_name ? c->part_name : "single-use";
}

static bool info_counted(const struct cache_info *c)
{
        return c->mechanism && *c->mechanism;
}

static void upper(char *dst, size_t len, const char *src)
{
        size_t i;

        for (i = 0; src[i] && i + 1 < len; i++)
                dst[i] = src[i] >= 'a' && src[i] <= 'z' ? (char)(src[i] - 'a' + 'A') : src[i];
        dst[i] = '\0';
}

static void status_titles(const struct cache_info *caches, size_t n, struct status_titles *t)
{
        size_t n_counted = 0;

        *t = (struct status_titles){ .ages = "AGES" };
        for (size_t i = 0; i < n; i++) {
                n_counted += info_counted(&caches[i]);
                if (strcmp(info_objects_name(&caches[i]), info_objects_name(&caches[0])) != 0)
                        t->name_objects = true;
                if (strcmp(info_part_name(&caches[i]), info_part_name(&caches[0])) != 0)
                        t->name_part = true;
        }
        if (n == 0 || t->name_objects)
                snprintf(t->objects, sizeof(t->objects), "OBJECTS");
        else
                upper(t->objects, sizeof(t->objects), info_objects_name(&caches[0]));
        if (n == 0 || t->name_part)
                snprintf(t->part, sizeof(t->part), "OF WHICH");
        else
                upper(t->part, sizeof(t->part), info_part_name(&caches[0]));
        if (n_counted > 0)
                t->ages = n_counted == n ? "MECHANISM" : "AGING";
}

static void status_row(const struct cache_info *c, const struct status_titles *t, uint64_t now,
                       char cells[N_COLS][CELL_MAX])
{
        char d[CA_DURATION_MAX_STR];
        bool counted = info_counted(c);

        snprintf(cells[COL_CACHE], CELL_MAX, "%s", c->name ? c->name : "?");
        snprintf(cells[COL_ADAPTER], CELL_MAX, "%s", c->adapter ? c->adapter : "?");
        /* A cache whose aging cannot keep up with its interval says so where one looks. */
        if (c->rotations_behind > 0)
                snprintf(cells[COL_STATE], CELL_MAX, "behind(%" PRIu32 ")", c->rotations_behind);
        else
                snprintf(cells[COL_STATE], CELL_MAX, "%s", c->enabled ? "enabled" : "disabled");
        snprintf(cells[COL_OBJECTS], CELL_MAX, "%" PRIu64 "%s%s", c->stats.objects,
                 t->name_objects ? " " : "", t->name_objects ? info_objects_name(c) : "");
        /* An older daemon has no PartObjects: its part is the single-use objects. */
        snprintf(cells[COL_PART], CELL_MAX, "%" PRIu64 "%s%s",
                 have_stat(c, ca_stat_desc_find("part_objects")) ? c->stats.part_objects
                                                                 : c->stats.single_use_objects,
                 t->name_part ? " " : "", t->name_part ? info_part_name(c) : "");
        /* The framework reclaims nothing of a cache without nodes (the kernel does), so
           nothing of it can come back either. */
        if (counted) {
                snprintf(cells[COL_RECLAIMED], CELL_MAX, "-");
                snprintf(cells[COL_REFAULTS], CELL_MAX, "-");
        } else {
                snprintf(cells[COL_RECLAIMED], CELL_MAX, "%" PRIu64, c->stats.reclaimed);
                /* refaults, and their share of the reclaimed */
                if (c->stats.reclaimed)
                        snprintf(cells[COL_REFAULTS], CELL_MAX, "%" PRIu64 " (%.1f%%)",
                                 c->stats.refaults,
                                 (double)c->stats.refault_share_ppm / 10000.0);
                else
                        snprintf(cells[COL_REFAULTS], CELL_MAX, "%" PRIu64, c->stats.refaults);
        }
        snprintf(cells[COL_INTERVAL], CELL_MAX, "%s",
                 ca_format_duration(c->interval_usec, d, sizeof(d)));
        /*
         * A counted cache's mechanism; else the ages in force, and under auto, which moves
         * them, said so (not for a cache with no refault memory: its adapter gives no
         * identities, and its ages stay as written).
         */
        if (counted)
                snprintf(cells[COL_AGES], CELL_MAX, "%s", c->mechanism);
        else if (c->ages && strcmp(c->ages, "auto") == 0 && c->stats.refault_memory_bytes > 0)
                snprintf(cells[COL_AGES], CELL_MAX, "%" PRIu64 "/%" PRIu64 " auto",
                         c->stats.current_single_use_age, c->stats.current_max_age);
        else
                snprintf(cells[COL_AGES], CELL_MAX, "%" PRIu32 "/%" PRIu32, c->single_use_age,
                         c->max_age);
        format_relative(c->stats.last_rotation_usec, now, cells[COL_LAST], CELL_MAX);
}

/* One line of the table; @row NULL prints @titles. */
static void print_row(const size_t width[N_COLS], char (*row)[CELL_MAX],
                      const char *const titles[N_COLS])
{
        /* Bold titles; the state in colour (the padding outside the colour's codes). */
        if (!row)
                fputs(ansi(ANSI_BOLD), stdout);
        for (size_t j = 0; j < N_COLS; j++) {
                const char *s = row ? row[j] : titles[j];
                const char *on = "", *off = "";

                if (row && j == COL_STATE) {
                        on = ansi(strcmp(s, "enabled") == 0 ? ANSI_GREEN : ANSI_GREY);
                        off = ansi(ANSI_NORMAL);
                }
                if (j + 1 == N_COLS)
                        printf("%s%s%s", on, s, off);
                else if (columns[j].right)
                        printf("%s%*s%s  ", on, (int)width[j], s, off);
                else
                        printf("%s%-*s%s  ", on, (int)width[j], s, off);
        }
        printf("%s\n", row ? "" : ansi(ANSI_NORMAL));
}

/*
 * status NAME...: keep only those caches, in the order asked, each once; an unknown one is an
 * error (exit 1, as show's). Returns 0 or the exit status.
 */
static int select_caches(struct manager_info *m, int argc, char **argv)
{
        char **keep;
        size_t n = 0;

        if (argc == 0)
                return 0;
        keep = calloc((size_t)argc, sizeof(*keep));
        if (!keep)
                return fail(EXIT_FAILED, "Out of memory");
        for (int a = 0; a < argc; a++) {
                bool found = false, dup = false;

                for (size_t k = 0; k < n; k++)
                        dup = dup || strcmp(keep[k], argv[a]) == 0;
                for (size_t i = 0; i < m->n_names && !found; i++)
                        if (m->names[i] && strcmp(m->names[i], argv[a]) == 0) {
                                found = true;
                                if (!dup) {
                                        keep[n++] = m->names[i];
                                        m->names[i] = NULL;
                                }
                        }
                if (!found && !dup) {
                        for (size_t k = 0; k < n; k++)
                                free(keep[k]);
                        free(keep);
                        return fail(EXIT_FAILED, "No cache named %s", argv[a]);
                }
        }
        for (size_t i = 0; i < m->n_names; i++)
                free(m->names[i]);
        free(m->names);
        m->names = keep;
        m->n_names = n;
        return 0;
}

static int status_once(sd_bus *bus, int argc, char **argv)
{
        struct manager_info m;
        struct cache_info *caches;
        char (*cells)[N_COLS][CELL_MAX] = NULL;
        const char *titles[N_COLS];
        struct status_titles t;
        size_t width[N_COLS];
        uint64_t now;
        char d[CA_DURATION_MAX_STR], di[CA_DURATION_MAX_STR], ts[128];
        int r;

        r = get_manager(bus, &m);
        if (r != 0)
                return r;
        r = select_caches(&m, argc, argv);
        if (r != 0) {
                manager_info_clear(&m);
                return r;
        }
        caches = calloc(m.n_names ? m.n_names : 1, sizeof(*caches));
        cells = calloc(m.n_names ? m.n_names : 1, sizeof(*cells));
        if (!caches || !cells) {
                r = fail(EXIT_FAILED, "Out of memory");
                goto out_free;
        }
        for (size_t i = 0; i < m.n_names; i++) {
                r = get_cache(bus, m.names[i], &caches[i]);
                if (r != 0)
                        goto out_free;
        }
        now = now_realtime_usec();

        if (arg_json) {
                struct json_doc j;
                FILE *f = json_begin(&j);

                fprintf(f, "{\"version\":");
                json_string(f, m.version);
                fprintf(f, ",\"start_timestamp_usec\":%" PRIu64 ",\"uptime_usec\":%" PRIu64
                        ",\"default_interval_usec\":%" PRIu64 ",\"caches\":[",
                        m.start_usec, now > m.start_usec ? now - m.start_usec : 0,
                        m.default_interval_usec);
                for (size_t i = 0; i < m.n_names; i++) {
                        if (i > 0)
                                fputc(',', f);
                        print_cache_json(f, &caches[i]);
                }
                fprintf(f, "]}");
                json_end(&j);
                goto out_free;
        }

        /* The legend: the daemon's line above the table, the titles. */
        if (!arg_no_legend)
                printf("cacheaged %s, up %s (since %s), default interval %s\n",
                       m.version ? m.version : "?",
                       format_age(now > m.start_usec ? now - m.start_usec : 0, d, sizeof(d)),
                       format_timestamp(m.start_usec, ts, sizeof(ts)),
                       ca_format_duration(m.default_interval_usec, di, sizeof(di)));
        if (m.n_names == 0) {
                if (!arg_no_legend)
                        printf("No caches configured.\n");
                goto out_free;
        }
        status_titles(caches, m.n_names, &t);
        for (size_t j = 0; j < N_COLS; j++)
                titles[j] = columns[j].title;
        titles[COL_OBJECTS] = t.objects;
        titles[COL_PART] = t.part;
        titles[COL_AGES] = t.ages;
        for (size_t j = 0; j < N_COLS; j++)
                width[j] = strlen(titles[j]);
        for (size_t i = 0; i < m.n_names; i++) {
                status_row(&caches[i], &t, now, cells[i]);
                for (size_t j = 0; j < N_COLS; j++)
                        if (strlen(cells[i][j]) > width[j])
                                width[j] = strlen(cells[i][j]);
        }
        if (!arg_no_legend)
                print_row(width, NULL, titles);
        for (size_t i = 0; i < m.n_names; i++)
                print_row(width, cells[i], titles);

out_free:
        for (size_t i = 0; caches && i < m.n_names; i++)
                cache_info_clear(&caches[i]);
        free(caches);
        free(cells);
        manager_info_clear(&m);
        return r;
}

static int cmd_status(sd_bus *bus, int argc, char **argv)
{
        struct timespec ts;
        int r;

        if (arg_watch_sec <= 0) {
                maybe_page();
                return status_once(bus, argc, argv);
        }
        ts.tv_sec = (time_t)arg_watch_sec;
        ts.tv_nsec = (long)((arg_watch_sec - (double)ts.tv_sec) * 1e9);
        for (;;) {
                if (!arg_json && isatty(STDOUT_FILENO))
                        fputs("\033[H\033[2J", stdout); /* home, clear: refresh in place */
                r = status_once(bus, argc, argv);
                if (r != 0)
                        return r;
                fflush(stdout);
                nanosleep(&ts, NULL);
        }
}

/* ---- show ---- */

/* One "Name=value" line of show, or the value alone with --value. */
static void show_line(const char *name, const char *value)
{
        if (arg_value)
                printf("%s\n", value);
        else
                printf("%s=%s\n", name, value);
}

static void show_value(const char *name, enum fmt fmt, uint64_t v, uint64_t now)
{
        char buf[256], rel[64], line[384];

        switch (fmt) {
        case FMT_BOOL:
                show_line(name, v ? "yes" : "no");
                break;
        case FMT_DURATION:
                show_line(name, ca_format_duration(v, buf, sizeof(buf)));
                break;
        case FMT_TIMESTAMP:
                if (v == 0) {
                        show_line(name, "never");
                        break;
                }
                snprintf(line, sizeof(line), "%s (%s)", format_timestamp(v, buf, sizeof(buf)),
                         format_relative(v, now, rel, sizeof(rel)));
                show_line(name, line);
                break;
        default:
                snprintf(buf, sizeof(buf), "%" PRIu64, v);
                show_line(name, buf);
        }
}

/* A -p name that matched nothing in this cache (an adapter statistic it lacks): exit 1. */
static int check_properties_matched(const char *cache)
{
        for (size_t i = 0; i < n_arg_properties; i++)
                if (!arg_properties_matched[i])
                        return fail(EXIT_FAILED, "Cache %s has no property %s", cache,
                                    arg_properties[i]);
        return 0;
}

static int cmd_show(sd_bus *bus, int argc, char **argv)
{
        const struct ca_stat_desc *d;
        uint64_t now = now_realtime_usec();
        struct cache_info c;
        size_t n_stats;
        char key[256];
        int r;

        if (argc != 1)
                return fail(EXIT_USAGE, "'show' takes one cache name (see 'cacheagectl status')");
        r = get_cache(bus, argv[0], &c);
        if (r != 0)
                return r;
        if (arg_json) {
                struct json_doc j;

                print_cache_json(json_begin(&j), &c);
                json_end(&j);
                cache_info_clear(&c);
                return check_properties_matched(argv[0]);
        }
        maybe_page();
        for (size_t i = 0; i < N_CACHE_PROPS; i++) {
                const struct cache_prop *p = &cache_props[i];
                const char *str;

                if (!(c.have_props & (1u << i)) || !property_wanted(p->name, NULL, NULL))
                        continue;
                if (p->type == 's') {
                        str = *(char **)prop_field(&c, p);
                        show_line(p->name, str ? str : "");
                } else {
                        show_value(p->name, p->fmt, prop_number(&c, p), now);
                }
        }
        d = ca_stat_descs(&n_stats);
        for (size_t i = 0; i < n_stats; i++)
                if (have_stat(&c, &d[i]) && property_wanted(d[i].property, d[i].name, NULL))
                        show_value(d[i].property, stat_fmt(&d[i]),
                                   ca_stat_value(&c.stats, &d[i]), now);
        if (c.have_refault_histogram &&
            property_wanted("RefaultHistogram", "refault_histogram", NULL)) {
                char hist[CA_REFAULT_BUCKETS * 32] = "";
                size_t len = 0;

                for (size_t j = 0; j < c.n_refault_buckets && len < sizeof(hist); j++)
                        len += (size_t)snprintf(hist + len, sizeof(hist) - len,
                                                "%s%" PRIu32 "%s:%" PRIu64, j ? " " : "",
                                                c.refault_floor[j],
                                                j + 1 == c.n_refault_buckets ? "+" : "",
                                                c.refault_histogram[j]);
                show_line("RefaultHistogram", hist);
        }
        for (size_t j = 0; j < c.n_adapter_stats; j++) {
                if (!property_wanted("AdapterStats", "adapter_stats", c.adapter_stats[j].key))
                        continue;
                snprintf(key, sizeof(key), "AdapterStats.%s", c.adapter_stats[j].key);
                show_value(key, FMT_PLAIN, c.adapter_stats[j].value, now);
        }
        cache_info_clear(&c);
        return check_properties_matched(argv[0]);
}

/* ---- actions ---- */

/* With --json: what was done. @file: the drop-in "set --persistent" wrote (else NULL). */
static int print_done_file(const char *command, const char *cache, const char *file)
{
        struct json_doc j;
        FILE *f;

        if (!arg_json)
                return 0;
        f = json_begin(&j);
        fprintf(f, "{\"command\":");
        json_string(f, command);
        if (cache) {
                fprintf(f, ",\"cache\":");
                json_string(f, cache);
        }
        fprintf(f, ",\"result\":\"done\"");
        if (strcmp(command, "set") == 0)
                fprintf(f, ",\"persistent\":%s", file ? "true" : "false");
        if (file) {
                fprintf(f, ",\"file\":");
                json_string(f, file);
        }
        fprintf(f, "}");
        json_end(&j);
        return 0;
}

static int print_done(const char *command, const char *cache)
{
        return print_done_file(command, cache, NULL);
}

struct setting {
        const char *key;      /* on the command line */
        const char *property; /* on the bus */
        const char *conf_key; /* in the configuration */
        char type;
        uint64_t value;
};

static int parse_setting(const char *arg, struct setting *ret)
{
        static const struct {
                const char *key, *property, *conf_key;
                char type;
        } known[] = {
                { "interval", "IntervalUSec", "interval", 't' },
                { "single-use-age", "SingleUseAge", "single_use_age", 'u' },
                { "max-age", "MaxAge", "max_age", 'u' },
                { "enabled", "Enabled", "enabled", 'b' },
        };
        const char *eq = strchr(arg, '=');
        char d1[CA_DURATION_MAX_STR], d2[CA_DURATION_MAX_STR];
        uint64_t v;
        int r;

        if (!eq || eq == arg)
                return fail(EXIT_USAGE, "'%s' is not KEY=VALUE (keys: interval, single-use-age, "
                            "max-age, enabled)", arg);
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
                const char *val = eq + 1;

                if (strlen(known[i].key) != (size_t)(eq - arg) ||
                    strncmp(arg, known[i].key, (size_t)(eq - arg)) != 0)
                        continue;
                switch (known[i].type) {
                case 't':
                        r = ca_parse_duration(val, &v);
                        if (r < 0 || v < CA_INTERVAL_MIN_USEC || v > CA_INTERVAL_MAX_USEC)
                                return fail(EXIT_USAGE, "interval: '%s' is not a duration "
                                            "between %s and %s (e.g. 30s, 5min)", val,
                                            ca_format_duration(CA_INTERVAL_MIN_USEC, d1, sizeof(d1)),
                                            ca_format_duration(CA_INTERVAL_MAX_USEC, d2, sizeof(d2)));
                        break;
                case 'u':
                        r = ca_parse_uint(val, 1, CA_AGE_MAX, &v);
                        if (r < 0)
                                return fail(EXIT_USAGE, "%s: '%s' is not a number of rotations "
                                            "between 1 and %u", known[i].key, val,
                                            (unsigned)CA_AGE_MAX);
                        break;
                default:
                        r = ca_parse_bool(val);
                        if (r < 0)
                                return fail(EXIT_USAGE, "enabled: '%s' is not a boolean "
                                            "(yes/no)", val);
                        v = (uint64_t)r;
                }
                *ret = (struct setting){ .key = known[i].key, .property = known[i].property,
                                         .conf_key = known[i].conf_key, .type = known[i].type,
                                         .value = v };
                return 0;
        }
        return fail(EXIT_USAGE, "Unknown setting '%.*s' (keys: interval, single-use-age, max-age, "
                    "enabled)", (int)(eq - arg), arg);
}

/*
 * The two ages must end with max-age >= single-use-age, and the daemon checks every write on
 * its own: check the result against the cache's current ages before anything is sent, and put
 * the age writes first (a refusal then changes nothing), in an order whose every step is
 * valid: max-age first when it does not go below the current single-use age, else
 * single-use-age first (one of the two always works).
 */
static int order_ages(sd_bus *bus, const char *path, const char *cache, struct setting *s,
                      size_t n)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint32_t su, mx, cur_su;
        bool any = false, max_first;
        size_t k = 0;
        int r;

        for (size_t i = 0; i < n; i++)
                any = any || s[i].type == 'u';
        if (!any)
                return 0;
        r = sd_bus_get_property_trivial(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE, "SingleUseAge",
                                        &error, 'u', &su);
        if (r >= 0)
                r = sd_bus_get_property_trivial(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE,
                                                "MaxAge", &error, 'u', &mx);
        if (r < 0) {
                r = call_failed(&error, r, "set", cache);
                sd_bus_error_free(&error);
                return r;
        }
        cur_su = su;
        for (size_t i = 0; i < n; i++) { /* each key once: parse_settings() refused the rest */
                if (s[i].type != 'u')
                        continue;
                if (strcmp(s[i].property, "MaxAge") == 0)
                        mx = (uint32_t)s[i].value;
                else
                        su = (uint32_t)s[i].value;
        }
        if (mx < su)
                return fail(EXIT_USAGE, "max-age %u is below single-use-age %u (a reused object "
                            "stays at least as long as one used once)", mx, su);

        max_first = mx >= cur_su;
        for (int pass = 0; pass < 2; pass++) /* the ages, in order, before everything else */
                for (size_t i = k; i < n; i++)
                        if (s[i].type == 'u' &&
                            strcmp(s[i].property, (pass == 0) == max_first ? "MaxAge"
                                                                          : "SingleUseAge") == 0) {
                                struct setting t = s[i];

                                memmove(&s[k + 1], &s[k], (i - k) * sizeof(*s));
                                s[k++] = t;
                        }
        return 0;
}

static int manager_call(sd_bus *bus, const char *command, const char *method, const char *name);

/*
 * set --persistent: the settings as a drop-in where the daemon reads the administrator's
 * (its DropInDirectory), then a reload. A reload that fails puts the file back as it was, so a
 * refused change is not left behind for the next reload to trip on.
 */
static int set_persistent(sd_bus *bus, const char *path, const char *cache,
                          const struct setting *s, size_t n)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        struct dropin_key *keys = NULL;
        char (*values)[CA_DURATION_MAX_STR] = NULL;
        char *dir = NULL, *file = NULL, *old = NULL, *name = NULL, err[1024];
        int r;

        /* Only a cache that exists gets a file. */
        r = sd_bus_get_property_string(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE, "Name", &error,
                                       &name);
        free(name);
        if (r >= 0)
                r = sd_bus_get_property_string(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH,
                                               CA_BUS_MANAGER_IFACE, "DropInDirectory", &error,
                                               &dir);
        if (r < 0) {
                r = call_failed(&error, r, "set", cache);
                sd_bus_error_free(&error);
                return r;
        }
        keys = calloc(n, sizeof(*keys));
        values = calloc(n, sizeof(*values));
        if (!keys || !values) {
                r = fail(EXIT_FAILED, "Out of memory");
                goto out_free;
        }
        for (size_t i = 0; i < n; i++) {
                keys[i].key = s[i].conf_key;
                keys[i].value = values[i];
                if (s[i].type == 't')
                        ca_format_duration(s[i].value, values[i], sizeof(values[i]));
                else if (s[i].type == 'b')
                        snprintf(values[i], sizeof(values[i]), "%s", s[i].value ? "yes" : "no");
                else
                        snprintf(values[i], sizeof(values[i]), "%" PRIu64, s[i].value);
        }
        r = dropin_update(dir, cache, keys, n, &file, &old, err, sizeof(err));
        if (r == -EACCES || r == -EPERM || r == -EROFS) {
                r = fail(EXIT_DENIED, "Permission denied: %s (set --persistent needs root)", err);
                goto out_free;
        }
        if (r < 0) {
                r = fail(EXIT_FAILED, "%s", err);
                goto out_free;
        }
        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH, CA_BUS_MANAGER_IFACE,
                               "Reload", &error, NULL, NULL);
        if (r < 0) {
                int q = dropin_restore(file, old);

                if (sd_bus_error_has_name(&error, CA_BUS_ERROR_CONFIG))
                        r = fail_lines(EXIT_FAILED, "Reload failed, %s %s:\n%s", file,
                                 q < 0 ? "could not be put back" : "was put back as it was",
                                 error.message ? error.message : "(no details)");
                else
                        r = call_failed(&error, r, "reload", NULL);
                sd_bus_error_free(&error);
                goto out_free;
        }
        if (!arg_json)
                printf("Wrote %s and reloaded cacheaged: in force now and after a restart.\n",
                       file);
        r = print_done_file("set", cache, file);

out_free:
        free(old);
        free(file);
        free(values);
        free(keys);
        free(dir);
        return r;
}

/* The settings of 'set NAME KEY=VALUE...', each key once, all checked: into *ret (malloc()ed). */
static int parse_settings(int argc, char **argv, struct setting **ret)
{
        struct setting *s;
        int r;

        if (argc < 2)
                return fail(EXIT_USAGE, "'set' takes a cache name and KEY=VALUE settings, "
                            "e.g. 'set %s interval=30s'", argc ? argv[0] : "NAME");
        s = calloc((size_t)argc, sizeof(*s));
        if (!s)
                return fail(EXIT_FAILED, "Out of memory");
        for (int i = 1; i < argc; i++) {
                r = parse_setting(argv[i], &s[i]);
                if (r != 0)
                        goto out_free;
                /* Which of two values was meant cannot be guessed: neither is sent. */
                for (int j = 1; j < i; j++)
                        if (strcmp(s[j].key, s[i].key) == 0) {
                                r = fail(EXIT_USAGE, "%s is given twice ('%s' and '%s')",
                                         s[i].key, argv[j], argv[i]);
                                goto out_free;
                        }
        }
        *ret = s;
        return 0;
out_free:
        free(s);
        return r;
}

/* A bad command line is said as such, whether a daemon runs or not: before connecting. */
static int check_set(int argc, char **argv)
{
        struct setting *s = NULL;
        int r;

        r = parse_settings(argc, argv, &s);
        free(s);
        return r;
}

static int cmd_set(sd_bus *bus, int argc, char **argv)
{
        struct setting *s = NULL;
        char *path = NULL;
        int r;

        /* Everything is checked before anything is sent. */
        r = parse_settings(argc, argv, &s);
        if (r != 0)
                return r;
        r = sd_bus_path_encode(CA_BUS_CACHE_PREFIX, argv[0], &path);
        if (r < 0) {
                r = fail(EXIT_FAILED, "Out of memory");
                goto out_free;
        }
        r = order_ages(bus, path, argv[0], s + 1, (size_t)argc - 1);
        if (r != 0)
                goto out_free;
        if (arg_persistent) {
                r = set_persistent(bus, path, argv[0], s + 1, (size_t)argc - 1);
                goto out_free;
        }
        for (int i = 1; i < argc; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;

                switch (s[i].type) {
                case 't':
                        r = sd_bus_set_property(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE,
                                                s[i].property, &error, "t", s[i].value);
                        break;
                case 'u':
                        r = sd_bus_set_property(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE,
                                                s[i].property, &error, "u",
                                                (uint32_t)s[i].value);
                        break;
                default:
                        r = sd_bus_set_property(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE,
                                                s[i].property, &error, "b", (int)s[i].value);
                }
                if (r < 0) {
                        r = call_failed(&error, r, "set", argv[0]);
                        sd_bus_error_free(&error);
                        goto out_free;
                }
        }
        /* As systemctl set-property --runtime: the configuration still says otherwise. */
        if (!arg_json)
                printf("Set on %s until cacheaged reloads or restarts (--persistent writes it to "
                       "the configuration).\n", argv[0]);
        r = print_done("set", argv[0]);
out_free:
        free(path);
        free(s);
        return r;
}

static int manager_call(sd_bus *bus, const char *command, const char *method, const char *name)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        if (name)
                r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH, CA_BUS_MANAGER_IFACE,
                                       method, &error, NULL, "s", name);
        else
                r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH, CA_BUS_MANAGER_IFACE,
                                       method, &error, NULL, NULL);
        if (r >= 0)
                return print_done(command, name && name[0] ? name : NULL);

        if (sd_bus_error_has_name(&error, CA_BUS_ERROR_CONFIG)) {
                /* One line per configuration error, as cacheaged logs them. */
                r = fail_lines(EXIT_FAILED, "Reload failed, the configuration in force was kept:\n%s",
                         error.message ? error.message : "(no details)");
        } else if (name && name[0] && sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_OBJECT)) {
                r = fail(EXIT_FAILED, "No cache named %s", name);
        } else {
                r = call_failed(&error, r, command, NULL);
        }
        sd_bus_error_free(&error);
        return r;
}

static int cmd_rotate(sd_bus *bus, int argc, char **argv)
{
        if (argc > 1)
                return fail(EXIT_USAGE, "'rotate' takes at most one cache name");
        return manager_call(bus, "rotate", "Rotate", argc ? argv[0] : "");
}

static int cmd_reset_statistics(sd_bus *bus, int argc, char **argv)
{
        if (argc > 1)
                return fail(EXIT_USAGE, "'reset-statistics' takes at most one cache name");
        return manager_call(bus, "reset-statistics", "ResetStatistics", argc ? argv[0] : "");
}

static int cmd_reload(sd_bus *bus, int argc, char **argv)
{
        if (argc > 0)
                return fail(EXIT_USAGE, "'reload' takes no arguments");
        return manager_call(bus, "reload", "Reload", NULL);
}

static int cmd_list(sd_bus *bus, int argc, char **argv)
{
        struct manager_info m;
        int r;

        if (argc > 0)
                return fail(EXIT_USAGE, "'list' takes no arguments");
        r = get_manager(bus, &m);
        if (r != 0)
                return r;
        if (arg_json) {
                struct json_doc j;
                FILE *f = json_begin(&j);

                fputc('[', f);
                for (size_t i = 0; i < m.n_names; i++) {
                        if (i > 0)
                                fputc(',', f);
                        json_string(f, m.names[i]);
                }
                fputc(']', f);
                json_end(&j);
        } else {
                for (size_t i = 0; i < m.n_names; i++)
                        printf("%s\n", m.names[i]);
        }
        manager_info_clear(&m);
        return 0;
}

static int cmd_metrics(sd_bus *bus, int argc, char **argv)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *text;
        int r;

        if (argc > 0)
                return fail(EXIT_USAGE, "'metrics' takes no arguments");
        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH, CA_BUS_MANAGER_IFACE,
                               "GetMetrics", &error, &reply, NULL);
        if (r < 0) {
                r = call_failed(&error, r, "metrics", NULL);
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_read(reply, "s", &text);
        if (r < 0) {
                sd_bus_message_unref(reply);
                return fail(EXIT_FAILED, "Failed to parse the metrics: %s", strerror(-r));
        }
        if (arg_json) {
                struct json_doc j;
                FILE *f = json_begin(&j);

                fprintf(f, "{\"text\":");
                json_string(f, text);
                fputc('}', f);
                json_end(&j);
        } else {
                fputs(text, stdout);
        }
        sd_bus_message_unref(reply);
        return 0;
}

/* ---- history ---- */

struct history_column {
        char *name, *kind, *unit;
};

/* A cache's history as GetHistory sends it: columns, and per rotation a time and values. */
struct history_info {
        struct history_column *cols;
        size_t n_cols;
        uint64_t *times;
        uint64_t *values; /* n_rows * n_cols */
        size_t n_rows;
};

static void history_info_clear(struct history_info *h)
{
        for (size_t i = 0; i < h->n_cols; i++) {
                free(h->cols[i].name);
                free(h->cols[i].kind);
                free(h->cols[i].unit);
        }
        free(h->cols);
        free(h->times);
        free(h->values);
        *h = (struct history_info){ 0 };
}

static int read_history(sd_bus_message *m, struct history_info *h)
{
        const char *name, *kind, *unit;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sss)");
        while (r >= 0 && (r = sd_bus_message_read(m, "(sss)", &name, &kind, &unit)) > 0) {
                struct history_column *v = realloc(h->cols, (h->n_cols + 1) * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                h->cols = v;
                v[h->n_cols] = (struct history_column){ strdup(name), strdup(kind), strdup(unit) };
                if (!v[h->n_cols].name || !v[h->n_cols].kind || !v[h->n_cols++].unit)
                        return -ENOMEM;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r >= 0)
                r = sd_bus_message_enter_container(m, 'a', "(tat)");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'r', "tat")) > 0) {
                const void *p;
                size_t len;
                uint64_t t, *times, *values;

                r = sd_bus_message_read(m, "t", &t);
                if (r >= 0)
                        r = sd_bus_message_read_array(m, 't', &p, &len);
                if (r < 0)
                        return r;
                if (len != h->n_cols * sizeof(uint64_t))
                        return -EBADMSG;
                times = realloc(h->times, (h->n_rows + 1) * sizeof(*times));
                if (!times)
                        return -ENOMEM;
                h->times = times;
                values = realloc(h->values, (h->n_rows + 1) * h->n_cols * sizeof(*values) + 1);
                if (!values)
                        return -ENOMEM;
                h->values = values;
                memcpy(&values[h->n_rows * h->n_cols], p, len);
                times[h->n_rows++] = t;
                r = sd_bus_message_exit_container(m);
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        return r < 0 ? r : 0;
}

/*
 * --since: "-DURATION" or "DURATION ago" (before now), "@SECONDS" (since the Unix epoch),
 * "YYYY-MM-DD [HH:MM[:SS]]" (local time). Returns 0 or -EINVAL.
 */
static int parse_since(const char *s, uint64_t now_usec, uint64_t *ret_usec)
{
        static const char *const formats[] = { "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M",
                                               "%Y-%m-%d" };
        char buf[128];
        uint64_t d, secs;
        size_t len = strlen(s);
        struct tm tm;
        const char *end;
        time_t t;

        if (s[0] == '-' || (len > 4 && strcmp(s + len - 4, " ago") == 0)) {
                snprintf(buf, sizeof(buf), "%.*s", (int)(s[0] == '-' ? len - 1 : len - 4),
                         s[0] == '-' ? s + 1 : s);
                if (ca_parse_duration(buf, &d) < 0)
                        return -EINVAL;
                *ret_usec = d < now_usec ? now_usec - d : 0;
                return 0;
        }
        if (s[0] == '@') {
                if (ca_parse_uint(s + 1, 0, UINT64_MAX / 1000000, &secs) < 0)
                        return -EINVAL;
                *ret_usec = secs * 1000000;
                return 0;
        }
        for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
                memset(&tm, 0, sizeof(tm));
                end = strptime(s, formats[i], &tm);
                if (!end || *end)
                        continue;
                tm.tm_isdst = -1;
                t = mktime(&tm);
                if (t < 0)
                        return -EINVAL;
                *ret_usec = (uint64_t)t * 1000000;
                return 0;
        }
        return -EINVAL;
}

/* The column named @name, or -1. */
static ssize_t history_column_find(const struct history_info *h, const char *name)
{
        for (size_t i = 0; i < h->n_cols; i++)
                if (strcmp(h->cols[i].name, name) == 0)
                        return (ssize_t)i;
        return -1;
}

/* The pictures show objects and what each rotation reclaimed: the point of aging. */
static int history_series(const struct history_info *h, struct plot_series s[2],
                          uint64_t *ret_values[2])
{
        static const char *const names[] = { "objects", "reclaimed" };
        static const char *const titles[] = { "objects after each rotation",
                                              "reclaimed per rotation" };

        for (size_t k = 0; k < 2; k++) {
                ssize_t c = history_column_find(h, names[k]);

                if (c < 0)
                        return -ENOENT;
                ret_values[k] = malloc((h->n_rows ? h->n_rows : 1) * sizeof(uint64_t));
                if (!ret_values[k])
                        return -ENOMEM;
                for (size_t i = 0; i < h->n_rows; i++)
                        ret_values[k][i] = h->values[i * h->n_cols + (size_t)c];
                s[k] = (struct plot_series){ .title = titles[k], .values = ret_values[k],
                                             .bars = k == 1 };
        }
        return 0;
}

/* A column's title: its name in upper case, '-' for '_'. */
static void history_title(const char *name, char *buf, size_t len)
{
        size_t i;

        for (i = 0; name[i] && i + 1 < len; i++)
                buf[i] = name[i] == '_' ? '-' : (char)(name[i] >= 'a' && name[i] <= 'z'
                                                               ? name[i] - 'a' + 'A' : name[i]);
        buf[i] = '\0';
}

static void history_print_table(const struct history_info *h)
{
        size_t n = h->n_cols + 1, *width;
        char cell[CELL_MAX], ts[64];

        width = calloc(n, sizeof(*width));
        if (!width)
                return;
        /* The time column, then each column but timestamps (the time column says it). */
        for (int pass = 0; pass < 2; pass++) {
                for (size_t i = 0; i <= h->n_rows; i++) {
                        bool title = i == 0;

                        if (title && arg_no_legend)
                                continue;
                        for (size_t j = 0; j < n; j++) {
                                const struct history_column *c = j ? &h->cols[j - 1] : NULL;
                                uint64_t v = c && !title ? h->values[(i - 1) * h->n_cols + j - 1]
                                                         : 0;

                                if (c && strcmp(c->unit, "timestamp_usec") == 0)
                                        continue;
                                if (title && c && strcmp(c->unit, "usec") == 0)
                                        /* durations are written with their unit: "423us" */
                                        history_title(c->name, cell,
                                                      strlen(c->name) > 5 &&
                                                      strcmp(c->name + strlen(c->name) - 5, "_usec") == 0
                                                      ? strlen(c->name) - 4 : sizeof(cell));
                                else if (title)
                                        history_title(c ? c->name : "time", cell, sizeof(cell));
                                else if (!c) {
                                        time_t t = (time_t)(h->times[i - 1] / 1000000);
                                        struct tm tm;

                                        if (!localtime_r(&t, &tm) ||
                                            !strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm))
                                                snprintf(ts, sizeof(ts), "?");
                                        snprintf(cell, sizeof(cell), "%s", ts);
                                } else if (strcmp(c->unit, "usec") == 0)
                                        ca_format_duration(v, cell, sizeof(cell));
                                else
                                        snprintf(cell, sizeof(cell), "%" PRIu64, v);
                                if (pass == 0) {
                                        if (strlen(cell) > width[j])
                                                width[j] = strlen(cell);
                                        continue;
                                }
                                printf("%s%s%*s%s", j ? "  " : "", title ? ansi(ANSI_BOLD) : "",
                                       j ? (int)width[j] : -(int)width[j], cell,
                                       title ? ansi(ANSI_NORMAL) : "");
                        }
                        if (pass == 1)
                                putchar('\n');
                }
        }
        free(width);
}

static void history_print_json(const char *name, const struct history_info *h)
{
        struct json_doc j;
        FILE *f = json_begin(&j);

        fprintf(f, "{\"cache\":");
        json_string(f, name);
        fprintf(f, ",\"columns\":[");
        for (size_t i = 0; i < h->n_cols; i++) {
                fprintf(f, "%s{\"name\":", i ? "," : "");
                json_string(f, h->cols[i].name);
                fprintf(f, ",\"kind\":");
                json_string(f, h->cols[i].kind);
                fprintf(f, ",\"unit\":");
                json_string(f, h->cols[i].unit);
                fputc('}', f);
        }
        fprintf(f, "],\"rotations\":[");
        for (size_t i = 0; i < h->n_rows; i++) {
                fprintf(f, "%s{\"time_usec\":%" PRIu64, i ? "," : "", h->times[i]);
                for (size_t k = 0; k < h->n_cols; k++) {
                        fputc(',', f);
                        json_string(f, h->cols[k].name);
                        fprintf(f, ":%" PRIu64, h->values[i * h->n_cols + k]);
                }
                fputc('}', f);
        }
        fprintf(f, "]}");
        json_end(&j);
}

static int history_write_svg(const char *name, const struct history_info *h,
                             const struct plot_series s[2])
{
        char title[256];
        FILE *f;
        int r;

        if (h->n_rows == 0)
                return fail(EXIT_FAILED, "No rotation of %s in its history yet: no plot written",
                            name);
        f = fopen(arg_svg, "we");
        if (!f)
                return fail(EXIT_FAILED, "Failed to write %s: %s", arg_svg, strerror(errno));
        snprintf(title, sizeof(title), "cacheaged: cache %s", name);
        r = plot_svg(f, title, h->times, h->n_rows, s, 2);
        if (fclose(f) != 0 && r >= 0)
                r = -errno;
        if (r < 0)
                return fail(EXIT_FAILED, "Failed to write %s: %s", arg_svg, strerror(-r));
        if (!arg_json)
                printf("Wrote %s: %zu rotations of %s.\n", arg_svg, h->n_rows, name);
        return 0;
}

static int cmd_history(sd_bus *bus, int argc, char **argv)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        struct history_info h = { 0 };
        struct plot_series s[2];
        uint64_t since_usec = 0, *plotted[2] = { NULL, NULL };
        bool plot;
        int r;

        if (argc != 1)
                return fail(EXIT_USAGE, "'history' takes one cache name");
        if (arg_since && parse_since(arg_since, now_realtime_usec(), &since_usec) < 0)
                return fail(EXIT_USAGE, "--since: '%s' is not a time (expected e.g. -10min, "
                            "\"1h ago\", \"2026-12-03 04:51\", @1796273500)", arg_since);
        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH, CA_BUS_MANAGER_IFACE,
                               "GetHistory", &error, &reply, "st", argv[0], since_usec);
        if (r < 0) {
                if (sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_OBJECT))
                        r = fail(EXIT_FAILED, "No cache named %s", argv[0]);
                else
                        r = call_failed(&error, r, "history", argv[0]);
                sd_bus_error_free(&error);
                return r;
        }
        r = read_history(reply, &h);
        sd_bus_message_unref(reply);
        if (r < 0) {
                r = fail(EXIT_FAILED, "Failed to parse the history of %s: %s", argv[0],
                         strerror(-r));
                goto out_free;
        }
        /* Without those columns (or memory) there is no picture: the table stays. */
        r = history_series(&h, s, plotted);
        if (r < 0 && arg_svg) {
                r = fail(EXIT_FAILED, "Nothing to plot in the history of %s: %s", argv[0],
                         r == -ENOENT ? "no objects or reclaimed column" : strerror(-r));
                goto out_free;
        }
        plot = r >= 0;
        r = 0;
        if (arg_svg) {
                r = history_write_svg(argv[0], &h, s);
                goto out_free;
        }
        if (arg_json) {
                history_print_json(argv[0], &h);
                goto out_free;
        }
        maybe_page();
        if (h.n_rows == 0) {
                printf("No rotation of %s in its history%s.\n", argv[0],
                       arg_since ? " since then" : " yet");
                goto out_free;
        }
        if (plot && arg_tty_columns) {
                plot_terminal(stdout, h.times, h.n_rows, s, 2, arg_tty_columns, 8);
                putchar('\n');
        }
        history_print_table(&h);

out_free:
        free(plotted[0]);
        free(plotted[1]);
        history_info_clear(&h);
        return r;
}

/* ---- command line ---- */

static void help(void)
{
        printf("Usage: cacheagectl [OPTIONS] [COMMAND [ARGS...]]\n"
               "\n"
               "Query and control cacheaged, the periodic cache aging daemon, over D-Bus\n"
               "(bus name %s).\n"
               "\n"
               "Commands:\n"
               "  status [NAME...]       Show the daemon's version and uptime and one line per\n"
               "                         cache (or per NAME): adapter, state, objects,\n"
               "                         single-use objects, objects reclaimed, rotation\n"
               "                         interval, ages (single-use/max, in rotations), time\n"
               "                         since the last rotation. The kernel adapter shows the\n"
               "                         kernel's dentries, of which negative, and its\n"
               "                         mechanism in place of the ages. The default command.\n"
               "  show NAME              Show every property of one cache, the adapter's own\n"
               "                         statistics included (AdapterStats.KEY=VALUE).\n"
               "  set NAME KEY=VALUE...  Change a cache's settings at once (root only):\n"
               "                           interval=DURATION      rotation interval, %s..%s\n"
               "                                                  (500ms, 30s, 5min, 1h 30min)\n"
               "                           single-use-age=N       rotations an object used once\n"
               "                                                  may stay idle, 1..%u\n"
               "                           max-age=N              rotations a reused object may\n"
               "                                                  stay idle, 1..%u\n"
               "                           enabled=yes|no         rotate on the timer or not\n"
               "                         Every value is checked before any is sent. The change\n"
               "                         lasts until cacheaged reloads or restarts; with\n"
               "                         --persistent it is written to the configuration\n"
               "                         (DIR/50-NAME.conf, DIR the daemon's drop-in\n"
               "                         directory) and the daemon reloads.\n"
               "  rotate [NAME]          Rotate one cache now, or every enabled cache (root).\n"
               "  reset-statistics [NAME]\n"
               "                         Zero the counters of one cache or of all (root).\n"
               "  reload                 Re-read the configuration and wait until it is in\n"
               "                         force; a bad configuration changes nothing and its\n"
               "                         errors are printed (root).\n"
               "  list                   The cache names, one per line.\n"
               "  metrics                Every statistic in the Prometheus text format.\n"
               "  history NAME           The cache's last rotations: a table (on a terminal,\n"
               "                         a chart of objects and reclaimed first).\n"
               "\n"
               "Options:\n"
               "      --system           Talk to cacheaged on the system bus (the default).\n"
               "      --user             Talk to cacheaged on the user's session bus.\n"
               "  -A, --address=ADDRESS  Talk to cacheaged on the bus at ADDRESS\n"
               "                         (e.g. unix:path=/run/my-bus).\n"
               "      --json[=MODE]      Machine-readable output (JSON, keys in snake_case,\n"
               "                         times in microseconds) for every command; an error\n"
               "                         is {\"error\": MESSAGE, \"exit_status\": N}. MODE:\n"
               "                         short (one line, the default), pretty or off.\n"
               "  -p, --property=NAME    With show: only these properties (Objects or\n"
               "                         objects, AdapterStats.KEY); repeat it, or separate\n"
               "                         names with commas.\n"
               "      --value            With show: the values only, without NAME=.\n"
               "      --no-legend        With status: no daemon line and no column titles.\n"
               "      --persistent       With set: write the change to the configuration.\n"
               "      --since=TIME       With history: from TIME on (-10min, \"1h ago\",\n"
               "                         \"2026-12-03 04:51\", @SECONDS).\n"
               "      --svg=FILE         With history: write a plot (SVG) to FILE instead.\n"
               "  -w, --watch[=SECONDS]  With status: refresh every SECONDS (default %d) in\n"
               "                         place, until interrupted.\n"
               "      --no-pager         Do not pipe the output into a pager\n"
               "                         ($CACHEAGECTL_PAGER, $SYSTEMD_PAGER or $PAGER, else\n"
               "                         less or more; $SYSTEMD_LESS for less's options).\n"
               "  -h, --help             Show this help.\n"
               "      --version          Show the version.\n"
               "\n"
               "Exit status:\n"
               "  0 success; 1 the daemon refused or failed (no such cache, bad configuration);\n"
               "  2 bad command line or value; 3 cacheaged not running on that bus (or no bus);\n"
               "  4 permission denied (the command needs root).\n"
               "\n"
               "Reading is open to every user; changing settings and the actions need root.\n"
               "Colour on a terminal only; NO_COLOR or SYSTEMD_COLORS=0 turn it off.\n"
               "\n"
               "Examples:\n"
               "  cacheagectl\n"
               "  cacheagectl show dentries\n"
               "  cacheagectl show dentries -p Objects,Reclaimed --value\n"
               "  sudo cacheagectl set dentries interval=30s max-age=8\n"
               "  sudo cacheagectl set --persistent dentries enabled=no\n"
               "  cacheagectl --json=pretty status | jq '.caches[].reclaimed'\n"
               "  cacheagectl history dentries --svg=dentries.svg\n"
               "\n"
               "See cacheagectl(1), cacheaged(8) and cacheaged.conf(5).\n",
               CA_BUS_NAME, "10ms", "1w", (unsigned)CA_AGE_MAX, (unsigned)CA_AGE_MAX,
               CTL_WATCH_DEFAULT_SEC);
}

/* -p A,B -p C: every name, in order, each checked by check_properties(). */
static int add_properties(const char *arg)
{
        for (const char *p = arg; *p;) {
                size_t len = strcspn(p, ",");
                char **v;
                bool *m;

                if (len > 0) {
                        v = realloc(arg_properties, (n_arg_properties + 1) * sizeof(*v));
                        if (!v)
                                return fail(EXIT_FAILED, "Out of memory");
                        arg_properties = v;
                        m = realloc(arg_properties_matched, (n_arg_properties + 1) * sizeof(*m));
                        if (!m)
                                return fail(EXIT_FAILED, "Out of memory");
                        arg_properties_matched = m;
                        m[n_arg_properties] = false;
                        v[n_arg_properties] = strndup(p, len);
                        if (!v[n_arg_properties])
                                return fail(EXIT_FAILED, "Out of memory");
                        n_arg_properties++;
                }
                p += len + (p[len] == ',');
        }
        return 0;
}

static void free_properties(void)
{
        for (size_t i = 0; i < n_arg_properties; i++)
                free(arg_properties[i]);
        free(arg_properties);
        free(arg_properties_matched);
}

static int parse_argv(int argc, char **argv)
{
        enum { ARG_SYSTEM = 0x100, ARG_USER, ARG_JSON, ARG_NO_PAGER, ARG_NO_LEGEND, ARG_VALUE,
               ARG_PERSISTENT, ARG_VERSION, ARG_SINCE, ARG_SVG };
        static const struct option options[] = {
                { "system", no_argument, NULL, ARG_SYSTEM },
                { "user", no_argument, NULL, ARG_USER },
                { "address", required_argument, NULL, 'A' },
                { "json", optional_argument, NULL, ARG_JSON },
                { "watch", optional_argument, NULL, 'w' },
                { "no-pager", no_argument, NULL, ARG_NO_PAGER },
                { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
                { "property", required_argument, NULL, 'p' },
                { "value", no_argument, NULL, ARG_VALUE },
                { "persistent", no_argument, NULL, ARG_PERSISTENT },
                { "since", required_argument, NULL, ARG_SINCE },
                { "svg", required_argument, NULL, ARG_SVG },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {},
        };
        char *end, why[256];
        int c, r;

        /* Options may follow the command, as with systemctl ("status --json"). */
        while ((c = getopt_long(argc, argv, "A:w::p:h", options, NULL)) >= 0) {
                switch (c) {
                case ARG_SYSTEM:
                        arg_bus = BUS_SYSTEM;
                        break;
                case ARG_USER:
                        arg_bus = BUS_USER;
                        break;
                case 'A':
                        if (!bus_address_check(optarg, why, sizeof(why)))
                                return fail(EXIT_USAGE, "--address: '%s' is not a D-Bus address: "
                                            "%s", optarg, why);
                        arg_bus = BUS_ADDRESS;
                        arg_address = optarg;
                        break;
                case ARG_JSON:
                        if (!optarg || strcmp(optarg, "short") == 0)
                                arg_json = JSON_SHORT;
                        else if (strcmp(optarg, "pretty") == 0)
                                arg_json = JSON_PRETTY;
                        else if (strcmp(optarg, "off") == 0)
                                arg_json = JSON_OFF;
                        else
                                return fail(EXIT_USAGE, "--json: '%s' is not pretty, short or "
                                            "off", optarg);
                        break;
                case ARG_NO_LEGEND:
                        arg_no_legend = true;
                        break;
                case 'p':
                        r = add_properties(optarg);
                        if (r != 0)
                                return r;
                        break;
                case ARG_VALUE:
                        arg_value = true;
                        break;
                case ARG_PERSISTENT:
                        arg_persistent = true;
                        break;
                case ARG_SINCE:
                        arg_since = optarg;
                        break;
                case ARG_SVG:
                        arg_svg = optarg;
                        break;
                case 'w':
                        arg_watch_sec = CTL_WATCH_DEFAULT_SEC;
                        if (optarg) {
                                arg_watch_sec = strtod(optarg, &end);
                                if (end == optarg || *end || !(arg_watch_sec >= 0.1) ||
                                    arg_watch_sec > 86400)
                                        return fail(EXIT_USAGE, "--watch: '%s' is not a number "
                                                    "of seconds from 0.1 to 86400", optarg);
                        }
                        break;
                case ARG_NO_PAGER:
                        arg_no_pager = true;
                        break;
                case 'h':
                        help();
                        return -1;
                case ARG_VERSION:
                        printf("cacheagectl %s\n", CA_VERSION);
                        return -1;
                default:
                        fprintf(stderr, "Try 'cacheagectl --help'.\n");
                        return EXIT_USAGE;
                }
        }
        if (optind < argc)
                arg_command = argv[optind++];
        if (arg_watch_sec > 0 && strcmp(arg_command, "status") != 0)
                return fail(EXIT_USAGE, "--watch only applies to 'status'");
        if ((n_arg_properties > 0 || arg_value) && strcmp(arg_command, "show") != 0)
                return fail(EXIT_USAGE, "--property and --value only apply to 'show'");
        if (arg_persistent && strcmp(arg_command, "set") != 0)
                return fail(EXIT_USAGE, "--persistent only applies to 'set'");
        if ((arg_since || arg_svg) && strcmp(arg_command, "history") != 0)
                return fail(EXIT_USAGE, "--since and --svg only apply to 'history'");
        return check_properties();
}

static int bus_connect(sd_bus **ret)
{
        char desc[512];
        sd_bus *bus = NULL;
        int r;

        switch (arg_bus) {
        case BUS_SYSTEM:
                r = sd_bus_open_system(&bus);
                break;
        case BUS_USER:
                r = sd_bus_open_user(&bus);
                break;
        default:
                r = sd_bus_new(&bus);
                if (r >= 0)
                        r = sd_bus_set_address(bus, arg_address);
                if (r >= 0)
                        r = sd_bus_set_bus_client(bus, 1);
                if (r >= 0)
                        r = sd_bus_start(bus);
                if (r < 0)
                        bus = sd_bus_unref(bus);
        }
        /* sd-bus says EINVAL of an address it cannot use ("unix:" without a path). */
        if (r == -EINVAL && arg_bus == BUS_ADDRESS)
                return fail(EXIT_USAGE, "--address: '%s' is not a usable D-Bus address: %s",
                            arg_address, strerror(-r));
        if (r < 0)
                return fail(EXIT_NOT_RUNNING, "Failed to connect to %s: %s",
                            bus_description(desc, sizeof(desc)), strerror(-r));
        *ret = bus;
        return 0;
}

int main(int argc, char **argv)
{
        static const struct {
                const char *name;
                int (*run)(sd_bus *bus, int argc, char **argv);
                int (*check)(int argc, char **argv); /* before connecting; may be NULL */
        } commands[] = {
                { "status", cmd_status, NULL },
                { "show", cmd_show, NULL },
                { "set", cmd_set, check_set },
                { "rotate", cmd_rotate, NULL },
                { "reset-statistics", cmd_reset_statistics, NULL },
                { "reload", cmd_reload, NULL },
                { "list", cmd_list, NULL },
                { "metrics", cmd_metrics, NULL },
                { "history", cmd_history, NULL },
        };
        sd_bus *bus = NULL;
        int r;

        /* Before a pager takes standard output: colour and charts are for a terminal. */
        arg_colors = colors_wanted();
        arg_tty_columns = terminal_columns();
        r = parse_argv(argc, argv);
        if (r != 0) {
                free_properties();
                return r < 0 ? EXIT_OK : r;
        }

        r = -1;
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]) && r < 0; i++) {
                if (strcmp(commands[i].name, arg_command) != 0)
                        continue;
                if (commands[i].check) {
                        r = commands[i].check(argc - optind, argv + optind);
                        if (r != 0)
                                break;
                }
                r = bus_connect(&bus);
                if (r != 0)
                        break;
                r = commands[i].run(bus, argc - optind, argv + optind);
                fflush(stdout);
                sd_bus_flush_close_unref(bus);
                pager_close();
        }
        if (r < 0)
                r = fail(EXIT_USAGE, "Unknown command '%s' (see 'cacheagectl --help')", arg_command);
        free_properties();
        return r;
}
