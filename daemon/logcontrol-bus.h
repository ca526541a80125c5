/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

struct manager;

/*
 * logcontrol_bus_add() - serve org.freedesktop.LogControl1 at CA_BUS_LOG_PATH on @bus, for
 * "systemctl service-log-level cacheaged debug". The slot is floating (it goes with the bus).
 * Returns 0 or a negative errno.
 */
int logcontrol_bus_add(sd_bus *bus, struct manager *m);
