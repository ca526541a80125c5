/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The service manager's notification protocol (sd_notify(3)): datagrams to $NOTIFY_SOCKET.
 * Every function is a no-op outside systemd (no NOTIFY_SOCKET) and returns what
 * sd_notify() returned: > 0 sent, 0 nobody listening, < 0 a negative errno.
 */

#include <stdint.h>

int notify_ready(void);
int notify_stopping(void);
int notify_watchdog(void);
/* RELOADING=1 with MONOTONIC_USEC=, so the manager can order the READY=1 that follows. */
int notify_reloading(void);
/* STATUS=: one line for "systemctl status"; newlines are replaced. */
int notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * notify_watchdog_usec() - the WatchdogSec= the manager expects pings against (from
 * WATCHDOG_USEC/WATCHDOG_PID), or 0 when the watchdog is off.
 */
uint64_t notify_watchdog_usec(void);
