/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Lists of error messages: everything wrong with a configuration (or a reload, or a plugin's
 * section) is collected here and reported at once, each message naming what and where.
 */

#include <stddef.h>

struct ca_errors {
        char **v; /* messages, in order */
        size_t n;
};

/*
 * ca_errors_add() - append one formatted message. @e may be NULL (nothing happens). When
 * memory runs out the message is dropped: callers that must know whether an error occurred
 * count errors themselves (ca_conf_load() does).
 */
void ca_errors_add(struct ca_errors *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* ca_errors_clear() - free every message and empty the list; accepts NULL. */
void ca_errors_clear(struct ca_errors *e);
