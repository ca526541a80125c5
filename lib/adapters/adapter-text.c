/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Numbers and excerpts of what servers send (see adapter-text.h). */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "adapter-text.h"

int ad_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *ret)
{
        uint64_t v = 0;

        if (len == 0)
                return -EBADMSG;
        for (size_t i = 0; i < len; i++) {
                unsigned d = (unsigned char)s[i] - '0';

                if (d > 9)
                        return -EBADMSG;
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int ad_bad(char *err, size_t err_len, const char *fmt, ...)
{
        va_list ap;

        if (err && err_len) {
                va_start(ap, fmt);
                vsnprintf(err, err_len, fmt, ap);
                va_end(ap);
        }
        return -EBADMSG;
}

char *ad_excerpt(const char *line, size_t len, char *buf)
{
        size_t n = 0, i;

        for (i = 0; i < len; i++) {
                unsigned char c = (unsigned char)line[i];

                if (c >= ' ' && c < 0x7f && c != '\\') {
                        if (n + 1 > AD_EXCERPT_MAX)
                                break;
                        buf[n++] = (char)c;
                } else {
                        if (n + 4 > AD_EXCERPT_MAX)
                                break;
                        snprintf(buf + n, 5, "\\x%02x", c);
                        n += 4;
                }
        }
        if (i < len) {
                memcpy(buf + n, "...", 3);
                n += 3;
        }
        buf[n] = '\0';
        return buf;
}
