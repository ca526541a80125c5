/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * sd-bus on libevent. libevent 2.1 has no "prepare" hook, so after every sd_bus_process()
 * batch and after anything else that queued bus traffic (a signal, a reply) we re-read the
 * fd's events and sd-bus's timeout (absolute CLOCK_MONOTONIC µs) and re-arm our two events.
 * Both run at libevent priority 0, above the aging slices, so the bus answers while a large
 * cache ages.
 *
 * A lost connection is logged and retried with a backoff timer; the caches keep aging
 * meanwhile. Each failure is one log line: what failed and what happens next.
 */

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/capability.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "bus-loop.h"
#include "cacheage/age.h"
#include "log.h"

#define BUS_RECONNECT_MIN_USEC 500000ULL   /* first retry after a lost connection */
#define BUS_RECONNECT_MAX_USEC 30000000ULL /* backoff ceiling */
#define BUS_PROCESS_MAX 64                 /* messages handled before yielding to the loop */
#define BUS_FLUSH_MAX_USEC 1000000ULL      /* writing what is queued, when the daemon stops */

struct bus_loop {
        struct event_base *base;
        char *address; /* "system", "user" or a D-Bus address */
        char *name;    /* the well-known name we own */
        const struct bus_loop_ops *ops;
        void *userdata;
        sd_bus *bus;   /* NULL while the connection is lost */
        struct event *io_event;
        struct event *time_event;
        struct event *reconnect_event;
        uint64_t reconnect_usec; /* the next backoff */
        int io_fd;
        short io_flags;
};

static struct timeval usec_to_timeval(uint64_t usec)
{
        return (struct timeval){ .tv_sec = (time_t)(usec / 1000000),
                                 .tv_usec = (suseconds_t)(usec % 1000000) };
}

static const char *bus_describe(const char *address)
{
        if (strcmp(address, "system") == 0)
                return "the system bus";
        if (strcmp(address, "user") == 0)
                return "the user bus";
        return address;
}

static int bus_open(const char *address, sd_bus **ret)
{
        sd_bus *bus = NULL;
        int r;

        if (strcmp(address, "system") == 0)
                return sd_bus_open_system_with_description(ret, "cacheaged");
        if (strcmp(address, "user") == 0)
                return sd_bus_open_user_with_description(ret, "cacheaged");

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        if (r < 0)
                goto out_unref;
        (void)sd_bus_set_description(bus, "cacheaged");
        r = sd_bus_set_bus_client(bus, 1);
        if (r < 0)
                goto out_unref;
        /*
         * A bus given by address is treated like the system bus: sd-bus checks the caller's
         * privilege for every member not marked unprivileged.
         */
        r = sd_bus_set_trusted(bus, 0);
        if (r < 0)
                goto out_unref;
        r = sd_bus_start(bus);
        if (r < 0)
                goto out_unref;
        *ret = bus;
        return 0;
out_unref:
        sd_bus_unref(bus);
        return r;
}

static void bus_loop_disconnect(struct bus_loop *l)
{
        if (l->io_event)
                event_del(l->io_event);
        if (l->time_event)
                evtimer_del(l->time_event);
        l->io_fd = -1;
        l->io_flags = 0;
        /*
         * The owner's slots are floating: unref'ing the bus drops every vtable with it. No
         * sd_bus_flush(): it waits without limit, and a dbus-daemon that is stopped never
         * reads (bus_loop_free() flushes for a bounded time).
         */
        l->bus = sd_bus_close_unref(l->bus);
}

/* Write what is queued (replies above all) for at most @timeout_usec: a stalled bus waits no longer. */
static void bus_flush_bounded(sd_bus *bus, uint64_t timeout_usec)
{
        uint64_t deadline = ca_now_usec() + timeout_usec, queued = 0, now;

        while (sd_bus_get_n_queued_write(bus, &queued) >= 0 && queued > 0 &&
               (now = ca_now_usec()) < deadline) {
                if (sd_bus_process(bus, NULL) < 0)
                        break;
                if (sd_bus_get_n_queued_write(bus, &queued) < 0 || queued == 0)
                        break;
                if (sd_bus_wait(bus, deadline - now) < 0)
                        break;
        }
}

static void bus_io_cb(evutil_socket_t fd, short what, void *userdata);

void bus_loop_rearm(struct bus_loop *l)
{
        short flags = 0;
        uint64_t until;
        int fd, events, r;

        if (!l || !l->bus)
                return;

        fd = sd_bus_get_fd(l->bus);
        events = sd_bus_get_events(l->bus);
        if (fd < 0 || events < 0) {
                /* Closed under us: let the timer notice at once, outside any callback. */
                struct timeval now = { 0, 0 };

                evtimer_add(l->time_event, &now);
                return;
        }
        if (events & POLLIN)
                flags |= EV_READ;
        if (events & POLLOUT)
                flags |= EV_WRITE;
        if (fd != l->io_fd || flags != l->io_flags) {
                event_del(l->io_event);
                event_assign(l->io_event, l->base, fd, flags, bus_io_cb, l);
                event_priority_set(l->io_event, 0);
                l->io_fd = fd;
                l->io_flags = flags;
                if (flags)
                        event_add(l->io_event, NULL);
        }

        r = sd_bus_get_timeout(l->bus, &until);
        if (r <= 0 || until == UINT64_MAX) {
                evtimer_del(l->time_event);
        } else {
                uint64_t now = ca_now_usec();
                struct timeval tv = usec_to_timeval(until > now ? until - now : 0);

                evtimer_add(l->time_event, &tv);
        }
}

/*
 * The asynchronous signals are held while sd-bus works, and delivered (to libevent's
 * handlers) when it is done. sd-bus makes synchronous calls to dbus-daemon inside a method
 * call's handling: the caller's uid for its own privilege check, the caller's pid for
 * bus_verify_admin()'s capabilities, the name at connect. Each waits in ppoll(), which any
 * signal with a handler interrupts, and sd-bus 252 then fails the call with EINTR: a root
 * caller whose write met a SIGHUP got "Interrupted system call" (sd-bus's check) or
 * AccessDenied (ours: capabilities unknown), one call in a few hundred beside the soak's
 * SIGHUP storms. Faults (SIGSEGV, SIGABRT...) are not held.
 */
static void bus_signals_hold(sigset_t *ret_old)
{
        static const int held[] = { SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGCHLD,
                                    SIGALRM, SIGWINCH, SIGPIPE };
        sigset_t set;

        sigemptyset(&set);
        for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++)
                sigaddset(&set, held[i]);
        pthread_sigmask(SIG_BLOCK, &set, ret_old);
}

static void bus_signals_release(const sigset_t *old)
{
        pthread_sigmask(SIG_SETMASK, old, NULL);
}

/*
 * Connect, let the owner attach its objects, take the name. On failure nothing is left
 * connected and @what says what failed, for the caller's one log line.
 */
static int bus_loop_connect(struct bus_loop *l, char *what, size_t what_len)
{
        const char *where = bus_describe(l->address);
        sigset_t old;
        int r;

        bus_signals_hold(&old);
        r = bus_open(l->address, &l->bus);
        if (r < 0) {
                l->bus = NULL;
                snprintf(what, what_len, "Failed to connect to %s: %s", where, strerror(-r));
                goto out_release;
        }
        r = l->ops->attach(l->bus, l->userdata);
        if (r < 0) {
                snprintf(what, what_len, "Failed to register the objects on %s: %s", where,
                         strerror(-r));
                goto out_disconnect;
        }
        /* No queueing: a second daemon on the same bus is a mistake, said at once. */
        r = sd_bus_request_name(l->bus, l->name, 0);
        if (r == -EEXIST)
                snprintf(what, what_len,
                         "The name %s is already taken on %s: is another cacheaged running?",
                         l->name, where);
        else if (r == -EACCES || r == -EPERM)
                snprintf(what, what_len,
                         "Not allowed to own %s on %s: %s (is %s.conf installed in the bus's "
                         "system.d, and is cacheaged running as root?)",
                         l->name, where, strerror(-r), l->name);
        else if (r < 0)
                snprintf(what, what_len, "Failed to acquire the name %s on %s: %s", l->name,
                         where, strerror(-r));
        if (r < 0)
                goto out_disconnect;

        l->io_fd = -1;
        l->io_flags = 0;
        bus_loop_rearm(l);
        log_debug("Serving %s on %s.", l->name, where);
        bus_signals_release(&old);
        return 0;

out_disconnect:
        bus_loop_disconnect(l);
out_release:
        bus_signals_release(&old);
        return r;
}

/* Try again after the current backoff, and double it. */
static uint64_t bus_loop_schedule_reconnect(struct bus_loop *l)
{
        uint64_t delay = l->reconnect_usec;
        struct timeval tv = usec_to_timeval(delay);

        evtimer_add(l->reconnect_event, &tv);
        l->reconnect_usec *= 2;
        if (l->reconnect_usec > BUS_RECONNECT_MAX_USEC)
                l->reconnect_usec = BUS_RECONNECT_MAX_USEC;
        return delay;
}

static void bus_loop_lost(struct bus_loop *l, int error)
{
        uint64_t delay;

        bus_loop_disconnect(l);
        delay = bus_loop_schedule_reconnect(l);
        if (error < 0)
                log_warning_errno(error, "Lost the bus connection: %m; reconnecting in %.1fs",
                                  (double)delay / 1e6);
        else
                log_warning("Lost the bus connection; reconnecting in %.1fs",
                            (double)delay / 1e6);
}

static void bus_loop_process(struct bus_loop *l)
{
        sigset_t old;
        int r = 0;

        /*
         * Bounded, so that a flood of requests cannot starve the timers; what is left is
         * seen again at once because sd-bus then asks for a zero timeout.
         */
        bus_signals_hold(&old);
        for (unsigned i = 0; i < BUS_PROCESS_MAX; i++) {
                r = sd_bus_process(l->bus, NULL);
                if (r <= 0)
                        break;
        }
        bus_signals_release(&old);
        if (r < 0 || sd_bus_is_open(l->bus) <= 0) {
                bus_loop_lost(l, r);
                return;
        }
        bus_loop_rearm(l);
}

static void bus_io_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct bus_loop *l = userdata;

        l->io_flags = 0; /* the event was one-shot */
        if (l->bus)
                bus_loop_process(l);
}

static void bus_time_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct bus_loop *l = userdata;

        if (l->bus)
                bus_loop_process(l);
}

static void bus_reconnect_cb(evutil_socket_t fd, short what, void *userdata)
{
        struct bus_loop *l = userdata;
        char what_failed[512];
        uint64_t delay;
        int r;

        r = bus_loop_connect(l, what_failed, sizeof(what_failed));
        if (r < 0) {
                delay = bus_loop_schedule_reconnect(l);
                log_warning("%s; retrying in %.1fs", what_failed, (double)delay / 1e6);
                return;
        }
        log_info("Reconnected to %s.", bus_describe(l->address));
        l->reconnect_usec = BUS_RECONNECT_MIN_USEC;
        if (l->ops->reconnected)
                l->ops->reconnected(l->userdata);
}

int bus_loop_new(struct event_base *base, const char *address, const char *name,
                 const struct bus_loop_ops *ops, void *userdata, struct bus_loop **ret)
{
        char what_failed[512];
        struct bus_loop *l;
        int r;

        l = calloc(1, sizeof(*l));
        if (!l)
                return log_error_errno(ENOMEM, "Out of memory");
        l->base = base;
        l->ops = ops;
        l->userdata = userdata;
        l->io_fd = -1;
        l->reconnect_usec = BUS_RECONNECT_MIN_USEC;
        l->address = strdup(address);
        l->name = strdup(name);
        /* The io event is assigned for real once the fd is known. */
        l->io_event = event_new(base, -1, 0, bus_io_cb, l);
        l->time_event = evtimer_new(base, bus_time_cb, l);
        l->reconnect_event = evtimer_new(base, bus_reconnect_cb, l);
        if (!l->address || !l->name || !l->io_event || !l->time_event || !l->reconnect_event) {
                r = log_error_errno(ENOMEM, "Out of memory");
                goto out_free;
        }
        event_priority_set(l->time_event, 0);

        r = bus_loop_connect(l, what_failed, sizeof(what_failed));
        if (r < 0) {
                log_error("%s", what_failed);
                goto out_free;
        }
        *ret = l;
        return 0;
out_free:
        bus_loop_free(l);
        return r;
}

struct bus_loop *bus_loop_free(struct bus_loop *l)
{
        if (!l)
                return NULL;
        if (l->bus)
                bus_flush_bounded(l->bus, BUS_FLUSH_MAX_USEC);
        bus_loop_disconnect(l);
        if (l->io_event)
                event_free(l->io_event);
        if (l->time_event)
                event_free(l->time_event);
        if (l->reconnect_event)
                event_free(l->reconnect_event);
        free(l->name);
        free(l->address);
        free(l);
        return NULL;
}

sd_bus *bus_loop_bus(struct bus_loop *l)
{
        return l ? l->bus : NULL;
}

int bus_verify_admin(sd_bus_message *m, const char *what, sd_bus_error *error)
{
        const char *sender = sd_bus_message_get_sender(m) ? sd_bus_message_get_sender(m)
                                                          : "the sender";
        sd_bus_creds *creds = NULL;
        const char *scope = NULL;
        pid_t pid = 0;
        int r;

        if (sd_bus_get_scope(sd_bus_message_get_bus(m), &scope) >= 0 && strcmp(scope, "user") == 0)
                return 1;
        /*
         * dbus-daemon gives the sender's pid; AUGMENT reads its capabilities from
         * /proc/PID/status (the sender is blocked in its call meanwhile).
         */
        r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EFFECTIVE_CAPS | SD_BUS_CREDS_AUGMENT,
                                      &creds);
        if (r >= 0)
                r = sd_bus_creds_has_effective_cap(creds, CAP_SYS_ADMIN);
        if (r == 0 && sd_bus_creds_get_pid(creds, &pid) < 0)
                pid = 0;
        sd_bus_creds_unref(creds);
        if (r > 0)
                return 1;
        if (r < 0) {
                /* Rare, and a root caller refused for it would not know why: say so, there too. */
                log_warning("Capabilities of %s unknown (%s): %s denied", sender, strerror(-r),
                            what);
                return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                         "Access denied: %s needs CAP_SYS_ADMIN (root), and the "
                                         "caller's capabilities could not be read: %s",
                                         what, strerror(-r));
        }
        /* Which gate refused, and whom: sd-bus's own says "Access to I.M() not permitted." */
        log_info("%s denied to %s (pid %d): no CAP_SYS_ADMIN in its effective set", what, sender,
                 (int)pid);
        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                 "Access denied: %s needs CAP_SYS_ADMIN (root); the caller "
                                 "(pid %d) lacks it in its effective set", what, (int)pid);
}
