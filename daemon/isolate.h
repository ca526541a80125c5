/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Run a piece of work in a forked child with a time limit: a crash or a hang in it (a plugin's
 * create() checking a new configuration) costs the child, not the daemon. The child reports
 * the errors it finds and, before each step, what it is doing, so that a child that dies can
 * be blamed on the step it died in. The parent waits (the work is synchronous for its caller,
 * as a reload is), then kills the child past the limit.
 */

#include <stdint.h>

#include "errors.h"

struct isolate;

/* The work, in the child: errors go to @errors; a negative errno when it failed. */
typedef int (*isolate_fn)(void *userdata, struct ca_errors *errors, struct isolate *iso);

/* isolate_step() - in the child: what comes next ("FILE:LINE: [cache NAME]: adapter 'x'"). */
void isolate_step(struct isolate *iso, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * isolate_run() - run @fn(@userdata) in a child for at most @timeout_usec. Its errors are
 * added to @errors; a child that crashed, hung or exited without finishing adds one error
 * naming its last step and what happened. Returns 0 when the work finished without error,
 * -EINVAL when it reported errors or did not finish, or another negative errno when no child
 * could be started (nothing is added to @errors then).
 */
int isolate_run(isolate_fn fn, void *userdata, uint64_t timeout_usec, struct ca_errors *errors);
