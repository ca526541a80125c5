/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.freedesktop.LogControl1, as systemd's services offer it: LogLevel is readable by all and
 * written by root; we only ever log to stderr (which systemd connects to the journal), so
 * LogTarget accepts "console" alone.
 */

#include <string.h>

#include "bus-def.h"
#include "bus-loop.h"
#include "log.h"
#include "logcontrol-bus.h"
#include "manager.h"

static int property_get_log_level(sd_bus *bus, const char *path, const char *interface,
                                  const char *property, sd_bus_message *reply, void *userdata,
                                  sd_bus_error *error)
{
        const char *s = log_level_to_string(manager_get_log_level(userdata));

        return sd_bus_message_append(reply, "s", s ? s : "info");
}

static int property_set_log_level(sd_bus *bus, const char *path, const char *interface,
                                  const char *property, sd_bus_message *value, void *userdata,
                                  sd_bus_error *error)
{
        const char *s;
        int level, r;

        r = bus_verify_admin(value, "setting LogLevel", error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(value, "s", &s);
        if (r < 0)
                return r;
        level = log_level_from_string(s);
        if (level < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Invalid log level '%s'", s);
        manager_set_log_level(userdata, level);
        log_info("Log level set to %s.", log_level_to_string(level));
        return sd_bus_emit_properties_changed(bus, path, interface, property, NULL);
}

static int property_get_log_target(sd_bus *bus, const char *path, const char *interface,
                                   const char *property, sd_bus_message *reply, void *userdata,
                                   sd_bus_error *error)
{
        return sd_bus_message_append(reply, "s", "console");
}

static int property_set_log_target(sd_bus *bus, const char *path, const char *interface,
                                   const char *property, sd_bus_message *value, void *userdata,
                                   sd_bus_error *error)
{
        const char *s;
        int r;

        r = bus_verify_admin(value, "setting LogTarget", error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(value, "s", &s);
        if (r < 0)
                return r;
        if (strcmp(s, "console") != 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_NOT_SUPPORTED,
                                         "Log target '%s' is not supported, only 'console'", s);
        return 0;
}

static int property_get_syslog_identifier(sd_bus *bus, const char *path, const char *interface,
                                          const char *property, sd_bus_message *reply,
                                          void *userdata, sd_bus_error *error)
{
        return sd_bus_message_append(reply, "s", "cacheaged");
}

static const sd_bus_vtable log_control_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_WRITABLE_PROPERTY("LogLevel", "s", property_get_log_level,
                                 property_set_log_level, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_WRITABLE_PROPERTY("LogTarget", "s", property_get_log_target,
                                 property_set_log_target, 0, 0),
        SD_BUS_PROPERTY("SyslogIdentifier", "s", property_get_syslog_identifier, 0,
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_VTABLE_END,
};

int logcontrol_bus_add(sd_bus *bus, struct manager *m)
{
        return sd_bus_add_object_vtable(bus, NULL, CA_BUS_LOG_PATH, CA_BUS_LOG_IFACE,
                                        log_control_vtable, m);
}
