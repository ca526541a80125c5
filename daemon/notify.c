/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libsystemd's sd_notify() honours NOTIFY_SOCKET, abstract sockets included. */

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>

#include "cacheage/age.h"
#include "notify.h"

#define NOTIFY_STATUS_MAX 512 /* bytes of STATUS= text */

int notify_ready(void)
{
        return sd_notify(0, "READY=1");
}

int notify_stopping(void)
{
        return sd_notify(0, "STOPPING=1");
}

int notify_watchdog(void)
{
        return sd_notify(0, "WATCHDOG=1");
}

int notify_reloading(void)
{
        return sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, ca_now_usec());
}

int notify_status(const char *fmt, ...)
{
        char buf[NOTIFY_STATUS_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        for (char *p = buf; (p = strchr(p, '\n')); p++)
                *p = ' ';
        return sd_notifyf(0, "STATUS=%s", buf);
}

uint64_t notify_watchdog_usec(void)
{
        uint64_t usec;

        if (sd_watchdog_enabled(0, &usec) <= 0)
                return 0;
        return usec;
}
