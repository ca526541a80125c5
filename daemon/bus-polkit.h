/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Who may change anything on the bus: the write gate, an sd-bus filter in front of every
 * object. A method call under the gate's path that is not a read is a write, and is let
 * through to its handler only when
 *
 *   - the bus is the user bus (all its members are its user, as sd-bus trusts it);
 *   - the caller is root (uid 0 as dbus-daemon saw it connect) with CAP_SYS_ADMIN in its
 *     effective set: always, without asking polkit; root without it is refused, polkit or not;
 *   - or polkit authorizes the caller for the gate's action, asked with CheckAuthorization
 *     on the loop, asynchronously: the call waits, unanswered, while other messages are
 *     served; polkit's yes puts it back in sd-bus's read queue, and the handler then runs;
 *     its no (or a wish to authenticate that no agent could fulfil) is the call's error.
 *     Where polkit is not on the bus, only root with CAP_SYS_ADMIN may write, as before polkit.
 *
 * Nothing is remembered between calls: each write asks polkit again, and polkit alone decides
 * what it keeps (auth_admin_keep: a while after the caller authenticated). Everything runs on
 * the loop's thread.
 *
 * Every refusal is logged, but at most BUS_POLKIT_REFUSALS_LOGGED lines per uid every
 * BUS_POLKIT_REFUSALS_INTERVAL_USEC (uid-ratelimit.h: a fixed table, uid 0 apart); the rest
 * are counted and summed up in one line when that interval ends (a timer, on only while there
 * is something to sum up) or when the gate is freed. The callers' errors are the same.
 * CACHEAGED_REFUSAL_LOG_INTERVAL (a duration) sets a shorter interval, for tests.
 */

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>
#include <systemd/sd-bus.h>

#define BUS_POLKIT_PENDING_MAX 64 /* calls waiting for polkit at once; more are refused */
#define BUS_POLKIT_REFUSALS_LOGGED 10 /* lines a uid's refused writes get per interval */
#define BUS_POLKIT_REFUSALS_INTERVAL_USEC (60 * UINT64_C(1000000)) /* then one line sums up */

struct bus_polkit;

/*
 * bus_polkit_new() - a gate for the objects at @path and below (@path and @action are
 * copied); @is_read(interface, member) says which calls there are reads; @base runs the timer
 * that sums up the refusals left out of the log. Returns 0 or -ENOMEM.
 */
int bus_polkit_new(struct event_base *base, const char *path, const char *action,
                   bool (*is_read)(const char *interface, const char *member),
                   struct bus_polkit **ret);

/*
 * bus_polkit_free() - drop every call still waiting (unanswered) and log the sums of the
 * refusals left out so far; accepts NULL.
 */
struct bus_polkit *bus_polkit_free(struct bus_polkit *p);

/*
 * bus_polkit_attach() - put the gate in front of @bus's objects (a new connection: the calls
 * of a lost one are dropped). Call before the objects are added. Returns 0 or a negative errno.
 */
int bus_polkit_attach(struct bus_polkit *p, sd_bus *bus);

/*
 * bus_polkit_verify() - in a write's handler: whether the gate let @m through (it always has,
 * unless the handler's member was not known as a write). Returns 1, or sets @error
 * (AccessDenied naming @what) and returns its negative errno.
 */
int bus_polkit_verify(sd_bus_message *m, const char *what, sd_bus_error *error);
