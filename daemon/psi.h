/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Pressure stall information (Documentation/accounting/psi.rst): the share of the last 10
 * seconds in which some task was stalled on a resource. Rotations wait for idle time by
 * reading the "some avg10=" figure of /proc/pressure/cpu and /proc/pressure/memory.
 */

#define PSI_DIR_DEFAULT "/proc/pressure"

/*
 * psi_read_some_avg10() - parse @path, a PSI file ("some avg10=1.23 avg60=... total=...").
 * Returns 0 and the percentage (0..100) in *ret_pct; -ENOENT (or another errno from open)
 * when the kernel has no PSI, -EBADMSG when there is no well-formed "some" line.
 */
int psi_read_some_avg10(const char *path, double *ret_pct);
