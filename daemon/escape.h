/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Text from outside (a configuration value, a file name, a D-Bus argument, an strace path)
 * ends up in log lines and error messages. Its control bytes are written as C escapes
 * ("\n", "\x1b"), so that input can neither start a log line of its own nor drive the
 * terminal that shows it. Shared by the daemon's log and error lists and by cacheagectl.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest escape of one byte, "\x1b". */
#define ESCAPE_BYTE_MAX 4

static inline bool escape_needed(unsigned char ch, bool keep_newlines)
{
        return (ch < 0x20 || ch == 0x7f) && !(keep_newlines && ch == '\n');
}

/* escape_control_any() - whether @s holds a byte that escape_control() escapes. */
static inline bool escape_control_any(const char *s)
{
        for (; *s; s++)
                if (escape_needed((unsigned char)*s, false))
                        return true;
        return false;
}

/*
 * escape_control() - @s with its control bytes (and DEL) escaped, into @buf of @size bytes
 * (at least 1), cut at a whole escape when it does not fit. With @keep_newlines, '\n' stays
 * (a message of several lines that are each escaped already). Returns @buf.
 */
static inline char *escape_control(const char *s, bool keep_newlines, char *buf, size_t size)
{
        size_t n = 0;

        for (; *s; s++) {
                unsigned char ch = (unsigned char)*s;
                char esc[ESCAPE_BYTE_MAX + 1];
                size_t len;

                if (!escape_needed(ch, keep_newlines)) {
                        esc[0] = (char)ch;
                        esc[1] = '\0';
                } else if (ch == '\n' || ch == '\t' || ch == '\r') {
                        snprintf(esc, sizeof(esc), "\\%c", ch == '\n' ? 'n' : ch == '\t' ? 't' : 'r');
                } else {
                        snprintf(esc, sizeof(esc), "\\x%02x", ch);
                }
                len = strlen(esc);
                if (n + len >= size)
                        break;
                memcpy(buf + n, esc, len);
                n += len;
        }
        buf[n] = '\0';
        return buf;
}

/* escape_control_dup() - the same, malloc()ed whole; NULL when out of memory. */
static inline char *escape_control_dup(const char *s, bool keep_newlines)
{
        size_t size = strlen(s) * ESCAPE_BYTE_MAX + 1;
        char *buf = malloc(size);

        return buf ? escape_control(s, keep_newlines, buf, size) : NULL;
}
