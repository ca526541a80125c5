/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * cacheagectl's JSON on its way out: as written (--json=short, one line), or indented by two
 * spaces per level (--json=pretty), as systemd's tools print it. The document is cacheagectl's
 * own, so it is well-formed; this only lays it out.
 */

#include <stdbool.h>
#include <stdio.h>

/* json_print() - @doc (one JSON value; a trailing newline is ignored), then a newline. */
void json_print(FILE *out, const char *doc, bool pretty);
