/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * An sd-bus connection driven from a libevent loop, that comes back when it is lost. The
 * owner registers its objects in ops->attach, on the first connection and on every new one;
 * the loop takes the well-known name after that, so a client never sees the name without
 * the objects. Everything runs on the loop's thread.
 */

#include <systemd/sd-bus.h>

struct event_base;
struct bus_loop;

struct bus_loop_ops {
        /* Required: register the objects on @bus (a new connection). Negative errno. */
        int (*attach)(sd_bus *bus, void *userdata);
        /* Optional: the connection is back after a loss (not called for the first one). */
        void (*reconnected)(void *userdata);
};

/*
 * bus_loop_new() - connect to @address ("system", "user" or a D-Bus address, which is then
 * treated as a system bus: not trusted), attach the objects, take @name and serve it from
 * @base, at libevent priority 0. Every failure is logged here, once; a lost connection
 * later is logged and retried with a backoff, and never reported to the caller.
 * Returns 0, or a negative errno (the name is taken: -EEXIST).
 */
int bus_loop_new(struct event_base *base, const char *address, const char *name,
                 const struct bus_loop_ops *ops, void *userdata, struct bus_loop **ret);
/* bus_loop_free() - close the connection (queued messages are written for at most 1 s); accepts NULL. */
struct bus_loop *bus_loop_free(struct bus_loop *l);

/* bus_loop_bus() - the connection, or NULL while it is lost. */
sd_bus *bus_loop_bus(struct bus_loop *l);

/*
 * bus_loop_rearm() - watch the connection's fd and timeout again, after it was used outside
 * a bus callback (a signal emitted from a timer): libevent 2.1 has no prepare hook, so
 * nothing else notices that sd-bus now wants to write. Accepts NULL.
 */
void bus_loop_rearm(struct bus_loop *l);

/*
 * bus_verify_admin() - whether the sender of @m may change anything: on every bus but the
 * user bus (whose members are all its user, as sd-bus trusts it) the sender must hold
 * CAP_SYS_ADMIN in its effective set. sd-bus's own check of unprivileged members falls back
 * to comparing uids when dbus-daemon does not pass capabilities, which lets a uid-0 process
 * without any capability write; this reads the sender's capabilities itself. Returns 1 when
 * allowed; else sets @error (AccessDenied naming @what) and returns its negative errno.
 */
int bus_verify_admin(sd_bus_message *m, const char *what, sd_bus_error *error);
