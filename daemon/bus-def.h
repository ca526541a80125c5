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

/*
 * The most one reply of the daemon holds, its header included. A bus drops a connection that
 * sends a message over its max_message_size (dbus-daemon: 32 MiB on the system bus unless an
 * administrator lowers it), and a dropped daemon answers nobody until it has reconnected: an
 * unprivileged GetHistory of a long history did that at a 1 MiB limit. Whatever grows with the
 * configuration or the history stays under this: GetHistoryPage and GetMetricsPage page, and
 * GetHistory and GetMetrics fail with CA_BUS_ERROR_TOO_LARGE rather than send more; Reload's
 * list of errors is cut; the rest is bounded by the configuration's limits (256 caches, 128
 * adapter statistics each) far below it. A bus whose limit is below it is not supported.
 */
#define CA_BUS_REPLY_MAX (256 * 1024) /* bytes */
#define CA_BUS_HEADER_MAX 4096        /* bytes of a reply's header and framing, at most */

/* A reply that would be over CA_BUS_REPLY_MAX: the message says which paged method to call. */
#define CA_BUS_ERROR_TOO_LARGE "org.cacheage.CacheAge1.TooLarge"
/* A page's cursor from before a change (a reload, a recreated cache): read again from 0. */
#define CA_BUS_ERROR_CHANGED "org.cacheage.CacheAge1.Changed"

/* The polkit action that lets a caller other than root change anything (its .policy file). */
#define CA_POLKIT_ACTION_MANAGE "org.cacheage.manage"
