/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * -H's argument, [USER@]HOST[:PORT][/MACHINE], checked before sd-bus sees it. sd-bus (252,
 * bus_set_address_system_remote()) turns it into "ssh -xT [-p PORT] -- [USER@]HOST
 * systemd-stdio-bridge [--machine=MACHINE]" without complaint about most mistakes: it hands
 * any PORT to ssh (99999 included), and drops a MACHINE that is not a valid machine name
 * (web_1, 1234, .host, a name after a second '/') without a word, so the command reaches the
 * host's own daemon instead of the container's. Everything sd-bus would pass on other than
 * as written, and everything ssh could only refuse later, is refused here, naming the part.
 */

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cacheagectl.h"

#define MACHINE_NAME_MAX 64 /* bytes: Linux's HOST_NAME_MAX, systemd's limit for a machine */
#define HOST_NAME_MAX_BYTES 253 /* bytes: the longest DNS name */

/*
 * A machine name as systemd's hostname_is_valid() takes it (machinectl's names): labels of
 * letters, digits and '-', joined by single dots, no label beginning or ending with '-', at
 * most 64 bytes. sd-bus takes a name of digits alone for a port (and drops it): refused too.
 */
static bool machine_name_valid(const char *s, size_t len, char *why, size_t why_len)
{
        bool digits_only = true;
        size_t label = 0;

        if (len == 0) {
                snprintf(why, why_len, "the machine after '/' is empty");
                return false;
        }
        if (len == 5 && strncmp(s, ".host", 5) == 0) {
                snprintf(why, why_len, "machine '.host' is HOST itself: leave out /MACHINE");
                return false;
        }
        if (len > MACHINE_NAME_MAX) {
                snprintf(why, why_len, "machine '%.*s' is longer than %d bytes", (int)len, s,
                         MACHINE_NAME_MAX);
                return false;
        }
        for (size_t i = 0; i <= len; i++) {
                char c = i < len ? s[i] : '.';

                if (c == '.') {
                        if (label == 0 || s[i - 1] == '-') {
                                snprintf(why, why_len, "machine '%.*s' is not a valid machine "
                                         "name (letters, digits and '-' in labels joined by "
                                         "single dots, no label beginning or ending with '-')",
                                         (int)len, s);
                                return false;
                        }
                        label = 0;
                        digits_only = digits_only && i == len; /* "1.2" is a name to sd-bus */
                        continue;
                }
                if (!isascii((unsigned char)c) ||
                    !(isalnum((unsigned char)c) || (c == '-' && label > 0))) {
                        snprintf(why, why_len, "machine '%.*s' is not a valid machine name "
                                 "(letters, digits and '-' in labels joined by single dots, no "
                                 "label beginning or ending with '-')", (int)len, s);
                        return false;
                }
                digits_only = digits_only && isdigit((unsigned char)c);
                label++;
        }
        if (digits_only) {
                snprintf(why, why_len, "machine '%.*s' is all digits, which sd-bus takes for a "
                         "port (HOST:PORT/MACHINE gives both)", (int)len, s);
                return false;
        }
        return true;
}

/* A user name ssh can take as a word of its own: no blank, control byte or separator. */
static bool user_valid(const char *s, size_t len, char *why, size_t why_len)
{
        if (len == 0) {
                snprintf(why, why_len, "the user before '@' is empty (leave out '@' for ssh's "
                         "default)");
                return false;
        }
        if (s[0] == '-') {
                snprintf(why, why_len, "user '%.*s' begins with '-'", (int)len, s);
                return false;
        }
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c <= ' ' || c == 0x7f) {
                        snprintf(why, why_len, "user '%.*s' contains a blank or control byte",
                                 (int)len, s);
                        return false;
                }
                if (strchr(":/[]", c)) {
                        snprintf(why, why_len, "user '%.*s' contains '%c'", (int)len, s, c);
                        return false;
                }
        }
        return true;
}

/*
 * HOST: a name (letters, digits, '-', '.', '_', as in ssh_config's Host aliases; not beginning
 * with '-' or '.'), an IPv4 address, or an IPv6 address in brackets (a zone after '%' allowed).
 */
static bool hostname_valid(const char *s, size_t len, char *why, size_t why_len)
{
        if (len == 0) {
                snprintf(why, why_len, "the host is empty");
                return false;
        }
        if (s[0] == '[') {
                char addr[INET6_ADDRSTRLEN + 1];
                struct in6_addr a;
                size_t alen;

                if (len < 2 || s[len - 1] != ']') {
                        snprintf(why, why_len, "host '%.*s' is not [IPV6-ADDRESS]", (int)len, s);
                        return false;
                }
                alen = strcspn(s + 1, "%]");
                if (s[1 + alen] == '%') {
                        const char *zone = s + 2 + alen, *zone_end = s + len - 1;
                        bool ok = zone < zone_end;

                        for (const char *z = zone; ok && z < zone_end; z++)
                                ok = isalnum((unsigned char)*z) || strchr("-_.", *z);
                        if (!ok) {
                                snprintf(why, why_len, "host '%.*s' has a bad zone after '%%'",
                                         (int)len, s);
                                return false;
                        }
                }
                snprintf(addr, sizeof(addr), "%.*s", (int)alen, s + 1);
                if (alen >= sizeof(addr) || inet_pton(AF_INET6, addr, &a) != 1) {
                        snprintf(why, why_len, "host '%.*s' is not an IPv6 address in brackets",
                                 (int)len, s);
                        return false;
                }
                return true;
        }
        if (len > HOST_NAME_MAX_BYTES) {
                snprintf(why, why_len, "host '%.40s...' is longer than %d bytes", s,
                         HOST_NAME_MAX_BYTES);
                return false;
        }
        if (s[0] == '-' || s[0] == '.') {
                snprintf(why, why_len, "host '%.*s' begins with '%c'", (int)len, s, s[0]);
                return false;
        }
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];

                if (!isascii(c) || !(isalnum(c) || strchr("-._", c))) {
                        char what[48] = "a blank, control or non-ASCII byte";

                        if (isgraph(c))
                                snprintf(what, sizeof(what), "'%c'", c);
                        snprintf(why, why_len, "host '%.*s' contains %s (a host name has "
                                 "letters, digits, '-', '.' and '_')", (int)len, s, what);
                        return false;
                }
        }
        return true;
}

static bool port_valid(const char *s, size_t len, char *why, size_t why_len)
{
        unsigned long port = 0;

        if (len == 0) {
                snprintf(why, why_len, "the port after ':' is empty");
                return false;
        }
        for (size_t i = 0; i < len; i++) {
                if (!isdigit((unsigned char)s[i])) {
                        snprintf(why, why_len, "port '%.*s' is not a number from 1 to 65535 "
                                 "(a container is HOST/MACHINE)", (int)len, s);
                        return false;
                }
                if (port <= 65535)
                        port = port * 10 + (unsigned long)(s[i] - '0');
        }
        if (port < 1 || port > 65535) {
                snprintf(why, why_len, "port '%.*s' is not a number from 1 to 65535", (int)len, s);
                return false;
        }
        return true;
}

bool host_check(const char *arg, const char **ret_machine, char *why, size_t why_len)
{
        const char *host = arg, *at, *end, *slash, *port;
        size_t colons = 0;

        *ret_machine = NULL;
        at = strchr(arg, '@');
        if (at) {
                if (strchr(at + 1, '@')) {
                        snprintf(why, why_len, "more than one '@'");
                        return false;
                }
                if (!user_valid(arg, (size_t)(at - arg), why, why_len))
                        return false;
                host = at + 1;
        }
        if (host[0] == '[' && !strchr(host, ']')) {
                snprintf(why, why_len, "host '%s' has no closing ']'", host);
                return false;
        }
        /* HOST ends at ':' or '/', past a bracketed IPv6 address; MACHINE follows the '/'. */
        end = host[0] == '[' && strchr(host, ']') ? strchr(host, ']') + 1 : host;
        end += strcspn(end, ":/");
        slash = strchr(end, '/');
        for (const char *p = end; *p && p != slash; p++)
                colons += *p == ':';
        if (colons > 1) {
                snprintf(why, why_len, "more than one ':' (an IPv6 address goes in brackets: "
                         "[ADDRESS]:PORT)");
                return false;
        }
        if (!hostname_valid(host, (size_t)(end - host), why, why_len))
                return false;
        if (*end == ':') {
                port = end + 1;
                if (!port_valid(port, slash ? (size_t)(slash - port) : strlen(port), why,
                                why_len))
                        return false;
        }
        if (slash) {
                if (strchr(slash + 1, '/')) {
                        snprintf(why, why_len, "more than one '/' (one MACHINE after HOST)");
                        return false;
                }
                if (!machine_name_valid(slash + 1, strlen(slash + 1), why, why_len))
                        return false;
                *ret_machine = slash + 1;
        }
        return true;
}
