/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cacheagectl rotate, reset-statistics, reload: the manager's methods. */

#include <systemd/sd-bus.h>

#include "bus-def.h"
#include "cacheagectl.h"

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
                r = no_such_cache(name);
        } else {
                r = call_failed(&error, r, command, NULL);
        }
        sd_bus_error_free(&error);
        return r;
}

int cmd_rotate(sd_bus *bus, int argc, char **argv)
{
        if (argc > 1)
                return fail(EXIT_USAGE, "'rotate' takes at most one cache name");
        return manager_call(bus, "rotate", "Rotate", argc ? argv[0] : "");
}

int cmd_reset_statistics(sd_bus *bus, int argc, char **argv)
{
        if (argc > 1)
                return fail(EXIT_USAGE, "'reset-statistics' takes at most one cache name");
        return manager_call(bus, "reset-statistics", "ResetStatistics", argc ? argv[0] : "");
}

int cmd_reload(sd_bus *bus, int argc, char **argv)
{
        if (argc > 0)
                return fail(EXIT_USAGE, "'reload' takes no arguments");
        return manager_call(bus, "reload", "Reload", NULL);
}
