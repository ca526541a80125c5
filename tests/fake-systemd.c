/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * systemd's side of D-Bus activation, for tests/test-activation.sh: a dbus-daemon run with
 * --systemd-activation asks org.freedesktop.systemd1 to start the unit a service file names
 * (SystemdService=) with an ActivationRequest(unit) signal, and is told of a failure with an
 * ActivationFailure(unit, error, message) signal. This owns that name, writes each requested
 * unit to LOG ("request UNIT"), and starts COMMAND for UNIT, or answers NoSuchUnit for any
 * other, as systemd does for a unit it does not know (a disabled unit has no alias).
 *
 * Usage: fake-systemd ADDRESS LOG UNIT COMMAND... (runs until killed; COMMAND is left running)
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

static const char *log_path, *known_unit;
static char **command;

/* One "WHAT ARG" line of the log. */
static void log_line(const char *what, const char *arg)
{
        FILE *f = fopen(log_path, "a");

        if (!f)
                return;
        fprintf(f, "%s %s\n", what, arg);
        fclose(f);
}

static int on_request(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        sd_bus *bus = sd_bus_message_get_bus(m);
        sd_bus_message *failure = NULL;
        const char *unit;
        char msg[512];
        pid_t pid;
        int r;

        r = sd_bus_message_read(m, "s", &unit);
        if (r < 0)
                return r;
        log_line("request", unit);
        if (strcmp(unit, known_unit) == 0) {
                pid = fork();
                if (pid == 0) {
                        execv(command[0], command);
                        _exit(127);
                }
                log_line("started", pid > 0 ? "yes" : "no");
                return 0;
        }
        snprintf(msg, sizeof(msg), "Unit %s not found.", unit);
        r = sd_bus_message_new_signal(bus, &failure, "/org/freedesktop/systemd1",
                                      "org.freedesktop.systemd1.Activator", "ActivationFailure");
        if (r >= 0)
                r = sd_bus_message_set_destination(failure, "org.freedesktop.DBus");
        if (r >= 0)
                r = sd_bus_message_append(failure, "sss", unit,
                                          "org.freedesktop.systemd1.NoSuchUnit", msg);
        if (r >= 0)
                r = sd_bus_send(bus, failure, NULL);
        sd_bus_message_unref(failure);
        log_line("failed", unit);
        return r;
}

int main(int argc, char **argv)
{
        sd_bus *bus = NULL;
        int r;

        if (argc < 5) {
                fprintf(stderr, "usage: fake-systemd ADDRESS LOG UNIT COMMAND...\n");
                return 2;
        }
        log_path = argv[2];
        known_unit = argv[3];
        command = argv + 4;
        signal(SIGCHLD, SIG_IGN); /* no zombie of the command */

        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, argv[1]);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r >= 0)
                r = sd_bus_match_signal(bus, NULL, NULL, NULL, "org.freedesktop.systemd1.Activator",
                                        "ActivationRequest", on_request, NULL);
        if (r >= 0)
                r = sd_bus_request_name(bus, "org.freedesktop.systemd1", 0);
        if (r < 0) {
                fprintf(stderr, "fake-systemd: %s\n", strerror(-r));
                return 1;
        }
        log_line("ready", argv[1]);
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        break;
                if (r == 0 && sd_bus_wait(bus, UINT64_MAX) < 0)
                        break;
        }
        sd_bus_flush_close_unref(bus);
        return 1;
}
