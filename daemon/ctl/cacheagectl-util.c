/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheagectl's output and errors: JSON documents, colour, times as people read them, and one
 * line plus an exit status for every failure.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "bus-def.h"
#include "cacheage/value.h"
#include "cacheagectl.h"
#include "escape.h"
#include "json-print.h"
#include "pager.h"

FILE *json_begin(struct json_doc *j)
{
        *j = (struct json_doc){ 0 };
        j->f = open_memstream(&j->buf, &j->len);
        return j->f ? j->f : stdout; /* out of memory: straight out, unindented */
}

void json_end(struct json_doc *j)
{
        if (!j->f)
                return;
        fclose(j->f);
        json_print(stdout, j->buf ? j->buf : "", arg_json == JSON_PRETTY);
        free(j->buf);
        *j = (struct json_doc){ 0 };
}

void json_discard(struct json_doc *j)
{
        if (j->f)
                fclose(j->f);
        free(j->buf);
        *j = (struct json_doc){ 0 };
}

/*
 * Colour and bold on a terminal only, as systemd's tools: $SYSTEMD_COLORS says yes or no
 * whatever the output, $NO_COLOR (any value) or TERM=dumb say no.
 */
bool colors_wanted(void)
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


const char *ansi(const char *code)
{
        return arg_colors ? code : "";
}

void json_string(FILE *f, const char *s)
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


char *snake_case(const char *camel, char buf[static SNAKE_MAX])
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

void json_strings(FILE *f, char *const *v, size_t n)
{
        fputc('[', f);
        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        fputc(',', f);
                json_string(f, v[i]);
        }
        fputc(']', f);
}

void json_key(FILE *f, const char *camel)
{
        char buf[SNAKE_MAX];

        json_string(f, snake_case(camel, buf));
}

uint64_t now_realtime_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* A duration rounded down to seconds once it is past a minute, as "uptime" shows it. */
/* An uptime: whole seconds once there is one ("1h 3min 7s", not "1h 3min 7s 412ms"). */
char *format_age(uint64_t usec, char *buf, size_t len)
{
        if (usec >= 1000000)
                usec -= usec % 1000000;
        return ca_format_duration(usec, buf, len);
}

char *format_relative(uint64_t then_usec, uint64_t now_usec, char *buf, size_t len)
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

char *format_timestamp(uint64_t usec, char *buf, size_t len)
{
        time_t t = (time_t)(usec / 1000000);
        struct tm tm;

        if (usec == 0 || !localtime_r(&t, &tm) ||
            strftime(buf, len, "%a %Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                snprintf(buf, len, "n/a");
        return buf;
}

/* Standard output's width when it is a terminal ($COLUMNS first, as systemd's tools), else 0. */
unsigned terminal_columns(void)
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
void maybe_page(void)
{
        if (!arg_no_pager && arg_watch_sec <= 0)
                pager_open();
}

/* ---- errors ---- */

const char *bus_description(char *buf, size_t len)
{
        switch (arg_bus) {
        case BUS_SYSTEM:
                return "the system bus";
        case BUS_USER:
                return "the user bus";
        case BUS_REMOTE:
                if (arg_machine)
                        snprintf(buf, len, "the system bus of container %s on %.*s (over ssh)",
                                 arg_machine, (int)(arg_machine - 1 - arg_address), arg_address);
                else
                        snprintf(buf, len, "the system bus of %s (over ssh)", arg_address);
                return buf;
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

int fail(int status, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vfail(status, false, fmt, ap);
        va_end(ap);
        return r;
}

/* fail() for a message of several lines, each escaped already (the daemon's list of errors). */
int fail_lines(int status, const char *fmt, ...)
{
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vfail(status, true, fmt, ap);
        va_end(ap);
        return r;
}

int no_such_cache(const char *name)
{
        return fail(arg_writes ? EXIT_NOT_INSTALLED : EXIT_UNKNOWN, "No cache named %s", name);
}

/*
 * Turn a failed call into one line and an exit status. @what says what was attempted
 * ("rotate", "set"), @cache names the cache the call was about (or NULL).
 */
int call_failed(const sd_bus_error *e, int r, const char *what, const char *cache)
{
        char buf[512];

        if (sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                return fail(EXIT_NOT_RUNNING, "cacheaged is not running on %s (%s has no owner)",
                            bus_description(buf, sizeof(buf)), CA_BUS_NAME);
        /* The connection itself failed (with --host: ssh, or the bridge on the other side). */
        if ((!sd_bus_error_is_set(e) || strncmp(e->name, "System.Error.", 13) == 0) &&
            (r == -ENOTCONN || r == -ECONNRESET || r == -EPIPE || r == -ECONNREFUSED))
                return fail(EXIT_NOT_RUNNING, "Failed to reach %s: %s",
                            bus_description(buf, sizeof(buf)), strerror(-r));
        /*
         * D-Bus activation tried and failed: systemd's answer (no such unit: not enabled), or
         * dbus-daemon's own. The unit is a hint only where systemd runs the machine.
         */
        if (sd_bus_error_is_set(e) && e->name &&
            (strncmp(e->name, "org.freedesktop.systemd1.", 25) == 0 ||
             strncmp(e->name, "org.freedesktop.DBus.Error.Spawn.", 33) == 0))
                return fail(EXIT_NOT_RUNNING, "cacheaged is not running on %s, and starting it "
                            "failed: %s%s", bus_description(buf, sizeof(buf)),
                            e->message ? e->message : e->name,
                            arg_bus != BUS_REMOTE && sd_booted() > 0
                                    ? " (is cacheaged.service enabled?)" : "");
        /* polkit wants the caller to authenticate, and no agent could ask. */
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED))
                return fail(EXIT_DENIED, "Permission denied: '%s' needs authentication for %s, "
                            "and no polkit agent asked for it (run it on a terminal, or: sudo "
                            "cacheagectl %s ...)", what, CA_POLKIT_ACTION_MANAGE, what);
        /* cacheaged says why ("Access denied: REASON"); dbus-daemon's policy does not. */
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED) && e->message &&
            strncmp(e->message, "Access denied: ", 15) == 0)
                return fail(EXIT_DENIED, "Permission denied: %s (try: sudo cacheagectl %s ...)",
                            e->message + 15, what);
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED) || r == -EACCES || r == -EPERM)
                return fail(EXIT_DENIED, "Permission denied: '%s' needs root, or polkit's "
                            "authorization %s (try: sudo cacheagectl %s ...)", what,
                            CA_POLKIT_ACTION_MANAGE, what);
        if (cache && sd_bus_error_has_names(e, SD_BUS_ERROR_UNKNOWN_OBJECT,
                                            SD_BUS_ERROR_UNKNOWN_INTERFACE))
                return no_such_cache(cache);
        if (sd_bus_error_has_name(e, SD_BUS_ERROR_INVALID_ARGS))
                return fail(EXIT_USAGE, "%s", e->message ? e->message : "Invalid value");
        if (sd_bus_error_is_set(e))
                return fail(EXIT_FAILED, "Failed to %s: %s", what,
                            e->message ? e->message : e->name);
        return fail(EXIT_FAILED, "Failed to %s: %s", what, strerror(-r));
}

/* With --json: what was done. @file: the drop-in "set --persistent" wrote (else NULL). */
int print_done_file(const char *command, const char *cache, const char *file)
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

int print_done(const char *command, const char *cache)
{
        return print_done_file(command, cache, NULL);
}
