/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A private system-type dbus-daemon and a cacheaged on it, for the bus tests. The bus's
 * configuration is tests/fixtures/bus/system.conf.in (Debian's system.conf, trimmed) with a
 * policy file included: ours (systemd/org.cacheage.CacheAge1.conf) unless a test brings its
 * own. The socket lives in a world-readable directory so that "nobody" can connect too.
 *
 * The daemon's stderr goes to a file; one that holds a sanitizer report fails the test, so
 * the ASan build checks the daemon's memory as well as ours.
 *
 * Environment (from tests/meson.build): CACHEAGED, CACHEAGECTL, CA_TEST_PLUGIN_DIR (fixed.so),
 * CA_TEST_SRCDIR (this directory).
 */

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <systemd/sd-bus.h>

#include "bus-def.h"
#include "test-util.h"

#define PROPS_IFACE "org.freedesktop.DBus.Properties"

struct bus_env {
        char *dir;
        char socket[256];
        char address[300];
        char conf[256];
        char daemon_err[256];
        pid_t dbus_pid;
        pid_t daemon_pid;
        sd_bus *bus; /* the test's own connection, as root */
};

static inline int harness_connect(const char *address, sd_bus **ret)
{
        sd_bus *bus = NULL;
        int r;

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

static inline bool bus_env_connected(void *userdata)
{
        struct bus_env *e = userdata;

        return access(e->socket, F_OK) == 0 && harness_connect(e->address, &e->bus) >= 0;
}

/* Start dbus-daemon on the configuration written in e->dir and connect to it. */
static inline void bus_env_spawn_bus(struct bus_env *e)
{
        char *log = test_path_join(e->dir, "dbus.log"), arg[300];
        const char *argv[] = { "dbus-daemon", "--nofork", arg, NULL };

        snprintf(arg, sizeof(arg), "--config-file=%s/bus.conf", e->dir);
        unlink(e->socket);
        e->dbus_pid = test_spawn(argv, log, log, NULL, NULL);
        cr_assert(test_wait_until(bus_env_connected, e, 10000000),
                  "dbus-daemon did not start: %s", test_read_file(log));
        free(log);
}

/* Stop the bus under the daemon's feet (our connection goes with it). */
static inline void bus_env_kill_bus(struct bus_env *e)
{
        e->bus = sd_bus_flush_close_unref(e->bus);
        kill(e->dbus_pid, SIGTERM);
        waitpid(e->dbus_pid, NULL, 0);
        e->dbus_pid = -1;
}

/*
 * Start the private bus; @policy is the file it includes (NULL: ours), @extra more of its
 * configuration (a <limit>, NULL: none) before the end.
 */
static inline void bus_env_start_with(struct bus_env *e, const char *policy, const char *extra)
{
        char conf[300], line[512], ours[512];
        const char *src = test_env("CA_TEST_SRCDIR");
        FILE *in, *out;

        memset(e, 0, sizeof(*e));
        e->dbus_pid = e->daemon_pid = -1;
        e->dir = test_mkdtemp("cacheage-bus"); /* 0755: "nobody" connects too */
        cr_assert((size_t)snprintf(e->socket, sizeof(e->socket), "%s/bus", e->dir) < 108,
                  "%s/bus: too long for a socket", e->dir);
        snprintf(e->address, sizeof(e->address), "unix:path=%s", e->socket);
        snprintf(e->conf, sizeof(e->conf), "%s/cacheaged.conf", e->dir);
        snprintf(e->daemon_err, sizeof(e->daemon_err), "%s/cacheaged.log", e->dir);
        snprintf(ours, sizeof(ours), "%s/../systemd/org.cacheage.CacheAge1.conf", src);
        if (!policy)
                policy = ours;

        /* Fill in @SOCKET@ and @POLICY@. */
        snprintf(line, sizeof(line), "%s/fixtures/bus/system.conf.in", src);
        in = fopen(line, "re");
        cr_assert(in, "cannot read %s", line);
        snprintf(conf, sizeof(conf), "%s/bus.conf", e->dir);
        out = fopen(conf, "we");
        cr_assert(out);
        while (fgets(line, sizeof(line), in)) {
                char *at;

                if ((at = strstr(line, "@SOCKET@")))
                        fprintf(out, "%.*s%s%s", (int)(at - line), line, e->socket, at + 8);
                else if ((at = strstr(line, "@POLICY@")))
                        fprintf(out, "%.*s%s%s", (int)(at - line), line, policy, at + 8);
                else if (extra && strcmp(line, "</busconfig>\n") == 0)
                        fprintf(out, "  %s\n%s", extra, line);
                else
                        fputs(line, out);
        }
        fclose(in);
        cr_assert(fclose(out) == 0);

        bus_env_spawn_bus(e);
}

static inline void bus_env_start(struct bus_env *e, const char *policy)
{
        bus_env_start_with(e, policy, NULL);
}

static inline bool bus_has_owner(sd_bus *bus, const char *name)
{
        sd_bus_message *reply = NULL;
        int has = 0, r;

        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus", "NameHasOwner", NULL, &reply, "s", name);
        if (r >= 0)
                r = sd_bus_message_read(reply, "b", &has);
        sd_bus_message_unref(reply);
        return r >= 0 && has;
}

/* Start cacheaged with @conf_text (printf format) on the bus; waits for the name. */
static inline void bus_env_daemon(struct bus_env *e, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static inline void bus_env_daemon(struct bus_env *e, const char *fmt, ...)
{
        char bus_arg[300];
        const char *argv[] = { test_env("CACHEAGED"), "--config", e->conf, "--bus", bus_arg,
                               NULL };
        uint64_t until;
        FILE *f;
        va_list ap;
        int status;

        f = fopen(e->conf, "we");
        cr_assert(f);
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        cr_assert(fclose(f) == 0);

        snprintf(bus_arg, sizeof(bus_arg), "%s", e->address);
        e->daemon_pid = test_spawn(argv, e->daemon_err, e->daemon_err, NULL, NULL);
        until = test_now_usec() + 60000000; /* a 2M-object cache under ASan takes a while */
        while (!bus_has_owner(e->bus, CA_BUS_NAME)) {
                if (waitpid(e->daemon_pid, &status, WNOHANG) == e->daemon_pid) {
                        e->daemon_pid = -1;
                        cr_assert_fail("cacheaged exited at start (status %d): %s", status,
                                       test_read_file(e->daemon_err));
                }
                cr_assert(test_now_usec() < until, "cacheaged did not take its name: %s",
                          test_read_file(e->daemon_err));
                usleep(10000);
        }
}

/* SIGTERM and wait: the daemon must exit 0, with no sanitizer report. */
static inline void bus_env_stop_daemon(struct bus_env *e)
{
        int status;

        if (e->daemon_pid <= 0)
                return;
        status = test_stop(e->daemon_pid, 30000000);
        e->daemon_pid = -1;
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "cacheaged exited with status %d: %s", status, test_read_file(e->daemon_err));
        test_expect_no_sanitizer_report(e->daemon_err);
}

static inline void bus_env_stop(struct bus_env *e)
{
        bus_env_stop_daemon(e);
        e->bus = sd_bus_flush_close_unref(e->bus);
        if (e->dbus_pid > 0) {
                kill(e->dbus_pid, SIGTERM);
                waitpid(e->dbus_pid, NULL, 0);
                e->dbus_pid = -1;
        }
        test_rm_rf(e->dir);
        free(e->dir);
        e->dir = NULL;
}

/* "/org/cacheage/CacheAge1/cache/<escaped>", static buffer. */
static inline const char *cache_path(const char *name)
{
        /* per thread: test-kernel's getter thread and the test's own calls use it at once */
        static _Thread_local char buf[256];
        char *p = NULL;

        cr_assert(sd_bus_path_encode(CA_BUS_CACHE_PREFIX, name, &p) >= 0);
        snprintf(buf, sizeof(buf), "%s", p);
        free(p);
        return buf;
}

static inline uint64_t get_t(sd_bus *bus, const char *path, const char *iface, const char *prop)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint64_t v = 0;
        int r;

        r = sd_bus_get_property_trivial(bus, CA_BUS_NAME, path, iface, prop, &error, 't', &v);
        cr_assert(r >= 0, "Get %s.%s: %s", iface, prop, error.message ? error.message : "");
        return v;
}

static inline uint32_t get_u(sd_bus *bus, const char *path, const char *iface, const char *prop)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint32_t v = 0;
        int r;

        r = sd_bus_get_property_trivial(bus, CA_BUS_NAME, path, iface, prop, &error, 'u', &v);
        cr_assert(r >= 0, "Get %s.%s: %s", iface, prop, error.message ? error.message : "");
        return v;
}

static inline bool get_b(sd_bus *bus, const char *path, const char *iface, const char *prop)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        int v = 0, r;

        r = sd_bus_get_property_trivial(bus, CA_BUS_NAME, path, iface, prop, &error, 'b', &v);
        cr_assert(r >= 0, "Get %s.%s: %s", iface, prop, error.message ? error.message : "");
        return v;
}

/* malloc()ed */
static inline char *get_s(sd_bus *bus, const char *path, const char *iface, const char *prop)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *v = NULL;
        int r;

        r = sd_bus_get_property_string(bus, CA_BUS_NAME, path, iface, prop, &error, &v);
        cr_assert(r >= 0, "Get %s.%s: %s", iface, prop, error.message ? error.message : "");
        return v;
}
