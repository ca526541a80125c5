/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * cacheaged's names on D-Bus, in one place for the daemon, cacheagectl and the tests. The
 * interfaces are described in systemd/org.cacheage.CacheAge1.{Manager,Cache}.xml; the policy
 * (systemd/org.cacheage.CacheAge1.conf) and the unit's BusName= spell the bus name too.
 */

#define CA_BUS_NAME "org.cacheage.CacheAge1"

#define CA_BUS_MANAGER_PATH "/org/cacheage/CacheAge1"
#define CA_BUS_MANAGER_IFACE "org.cacheage.CacheAge1.Manager"

/* One object per cache: CA_BUS_CACHE_PREFIX "/" + the name escaped by sd_bus_path_encode(). */
#define CA_BUS_CACHE_PREFIX "/org/cacheage/CacheAge1/cache"
#define CA_BUS_CACHE_IFACE "org.cacheage.CacheAge1.Cache"

/* systemd's interface for "systemctl service-log-level / service-log-target". */
#define CA_BUS_LOG_PATH "/org/freedesktop/LogControl1"
#define CA_BUS_LOG_IFACE "org.freedesktop.LogControl1"

/* Manager.Reload()'s error when the new configuration is refused; the message lists why. */
#define CA_BUS_ERROR_CONFIG "org.cacheage.CacheAge1.ConfigError"
