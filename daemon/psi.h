/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Pressure stall information (Documentation/accounting/psi.rst): the share of the last 10,
 * 60 and 300 seconds in which some (or all) tasks were stalled on a resource. Rotations
 * wait for idle time by reading the "some avg10=" figure of /proc/pressure/cpu and
 * /proc/pressure/memory; adapters get every figure through ca_host_pressure().
 */

#include "cacheage/plugin.h" /* struct ca_psi, struct ca_pressure */

#define PSI_DIR_DEFAULT "/proc/pressure"

/*
 * psi_read() - parse @path, a PSI file: a "some" line and, but for cpu on older kernels, a
 * "full" line, each "avg10=1.23 avg60=... avg300=... total=...". avg10 is required on each
 * line present; a figure that is absent reads 0, a malformed one is an error.
 * Returns 0 and the figures in *ret_some and *ret_full (either may be NULL; full is zero
 * when the file has no such line); -ENOENT (or another errno from open) when the kernel
 * has no PSI, -EBADMSG when there is no well-formed "some" line or a malformed line.
 */
int psi_read(const char *path, struct ca_psi *ret_some, struct ca_psi *ret_full);

/* psi_read_some_avg10() - the "some avg10" percentage (0..100) of @path; as psi_read(). */
int psi_read_some_avg10(const char *path, double *ret_pct);

/*
 * psi_read_pressure() - cpu, memory and io of the PSI directory @dir (/proc/pressure).
 * Returns 0, -EOPNOTSUPP when the kernel has no PSI (a file is missing), or another
 * negative errno from psi_read().
 */
int psi_read_pressure(const char *dir, struct ca_pressure *ret);
