/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * cacheagectl's pager, as systemd's tools page (src/shared/pager.c): long output on a terminal
 * goes through $CACHEAGECTL_PAGER, $SYSTEMD_PAGER or $PAGER, in this order, and when that one
 * cannot start, "less", then "more"; "cat" or an empty value means none. less gets $SYSTEMD_LESS, or "FRSXMK", as $LESS.
 * A pager that cannot be started is not an error: the output is then written directly, so
 * nothing is lost and the exit status is the command's.
 */

#include <stdbool.h>

/*
 * pager_open() - when standard output is a terminal, start the pager and point standard output
 * at it. Does nothing otherwise, or when no pager can be started. Returns whether a pager runs.
 */
bool pager_open(void);

/* pager_close() - flush, close the pager's pipe and wait for it to exit; a no-op without one. */
void pager_close(void);
