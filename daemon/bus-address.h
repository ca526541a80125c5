/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A D-Bus address as the specification writes it, checked before sd-bus sees it: sd-bus
 * skips an entry of a transport it does not know and then reports "Connection refused", which
 * would send a user with a typo looking for a daemon that is not running. Shared by cacheaged
 * (--bus) and cacheagectl (--address).
 *
 *   address  := entry (';' entry)*
 *   entry    := transport ':' [key '=' value (',' key '=' value)*]
 *   value    := ([-0-9A-Za-z_/.\*] | '%' HEX HEX)*
 */

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The transports sd-bus (252) connects with. */
static inline bool bus_address_transport_known(const char *s, size_t len)
{
        static const char *const known[] = { "unix", "tcp", "unixexec", "x-machine-unix",
                                             "x-machine-tcp" };

        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
                if (strlen(known[i]) == len && strncmp(s, known[i], len) == 0)
                        return true;
        return false;
}

static inline bool bus_address_value_char(const char *p)
{
        unsigned char ch = (unsigned char)*p;

        if (ch == '%')
                return isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2]);
        return isalnum(ch) || strchr("-_/.\\*", ch);
}

/*
 * bus_address_check() - whether @address is a D-Bus address of known transports; when it is
 * not, @why (of @why_len bytes) says what is wrong.
 */
static inline bool bus_address_check(const char *address, char *why, size_t why_len)
{
        const char *p = address;

        if (!*p) {
                snprintf(why, why_len, "it is empty");
                return false;
        }
        while (*p) {
                size_t tlen = strcspn(p, ":;");

                if (p[tlen] != ':') {
                        snprintf(why, why_len, "\"%.*s\" has no transport (e.g. unix:path=...)",
                                 (int)tlen, p);
                        return false;
                }
                if (!bus_address_transport_known(p, tlen)) {
                        snprintf(why, why_len, "unknown transport \"%.*s\" (expected unix, tcp, "
                                 "unixexec, x-machine-unix or x-machine-tcp)", (int)tlen, p);
                        return false;
                }
                p += tlen + 1;
                while (*p && *p != ';') {
                        size_t klen = strcspn(p, "=,;");

                        if (klen == 0 || p[klen] != '=') {
                                snprintf(why, why_len, "\"%.*s\" is not KEY=VALUE",
                                         (int)strcspn(p, ",;"), p);
                                return false;
                        }
                        p += klen + 1;
                        for (; *p && *p != ',' && *p != ';'; p++) {
                                if (!bus_address_value_char(p)) {
                                        snprintf(why, why_len, "invalid character in a value at "
                                                 "\"%.20s\"", p);
                                        return false;
                                }
                                if (*p == '%')
                                        p += 2;
                        }
                        if (*p == ',')
                                p++;
                }
                if (*p == ';')
                        p++;
        }
        return true;
}
