/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Error lists: see errors.h. */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "errors.h"
#include "escape.h"

void ca_errors_add(struct ca_errors *e, const char *fmt, ...)
{
        va_list ap;
        char **v;
        char *msg;
        int r;

        if (!e)
                return;
        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return; /* out of memory: the caller's own count of errors still holds */
        /* Messages quote input: one message is one line, whatever the input held. */
        if (escape_control_any(msg)) {
                char *escaped = escape_control_dup(msg, false);

                free(msg);
                if (!escaped)
                        return;
                msg = escaped;
        }
        /*
         * The array doubles when n reaches a power of two (a file of errors on every line makes
         * tens of thousands: one realloc each copied the list each time).
         */
        if (e->n < 8 ? e->n == 0 : (e->n & (e->n - 1)) == 0) {
                v = realloc(e->v, (e->n < 8 ? 8 : 2 * e->n) * sizeof(*v));
                if (!v) {
                        free(msg);
                        return;
                }
                e->v = v;
        }
        e->v[e->n++] = msg;
}

void ca_errors_clear(struct ca_errors *e)
{
        if (!e)
                return;
        for (size_t i = 0; i < e->n; i++)
                free(e->v[i]);
        free(e->v);
        e->v = NULL;
        e->n = 0;
}
