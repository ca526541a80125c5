/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The write gate (bus-polkit.h says the rule). The way a call waits for polkit follows
 * systemd's bus_verify_polkit_async() (src/shared/bus-polkit.c): the call is left unanswered
 * while polkit is asked, and polkit's yes puts the very message back in sd-bus's read queue
 * (sd_bus_enqueue_for_read()), so that it is dispatched again, from the start, with every
 * check on the way; the gate then knows it and lets it through. Unlike systemd, the gate is a
 * filter, before any handler: a property's setter cannot leave a Set unanswered (sd-bus
 * replies when it returns), so the question is asked before sd-bus reaches the setter, the
 * same way for properties and methods.
 */

#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "bus-polkit.h"
#include "cacheage/age.h"
#include "cacheage/value.h"
#include "escape.h"
#include "log.h"
#include "uid-ratelimit.h"

#define POLKIT_NAME "org.freedesktop.PolicyKit1"
#define POLKIT_PATH "/org/freedesktop/PolicyKit1/Authority"
#define POLKIT_IFACE "org.freedesktop.PolicyKit1.Authority"
#define POLKIT_CHECK_ALLOW_USER_INTERACTION 1u /* CheckAuthorization's flags */
#define WHAT_MAX 128                            /* bytes of "setting PROPERTY" */

/* A write waiting for polkit, then (allowed) for its second dispatch. */
struct polkit_query {
        struct polkit_query *next;
        struct bus_polkit *gate;
        sd_bus_message *msg; /* the call, referenced until it is answered or dispatched */
        sd_bus_slot *slot;   /* CheckAuthorization, until polkit answers */
        bool allowed;        /* polkit said yes: let msg through when it comes again */
        uid_t uid;
        pid_t pid;
        char what[WHAT_MAX];
};

struct bus_polkit {
        char *path;
        char *action;
        bool (*is_read)(const char *interface, const char *member);
        struct polkit_query *queries;
        size_t n_queries;
        struct uid_ratelimit *refusals; /* which refusals get a log line */
        struct event *refusals_timer;   /* sums up those left out; on while there are some */
        char refusals_interval[CA_DURATION_MAX_STR]; /* its interval, for the log ("1min") */
};

/*
 * The write the filter let through, while sd-bus dispatches it to its handler: one thread
 * serves the bus and the filter runs before every handler, so this is the message being
 * handled, or one whose handler never ran (an unknown object), until the next message. It
 * holds a reference, so that its address cannot be another message's meanwhile.
 */
static sd_bus_message *passed;

static void passed_set(sd_bus_message *m)
{
        sd_bus_message_unref(passed);
        passed = m ? sd_bus_message_ref(m) : NULL;
}

/* Log a line for each uid whose refusals were left out of the log by @now_usec, how many. */
static void refusals_sum_up(struct bus_polkit *g, uint64_t now_usec)
{
        uint64_t dropped, next;
        bool shared;
        int level;
        uid_t uid;

        while (uid_ratelimit_summary(g->refusals, now_usec, &uid, &shared, &dropped, &level) > 0) {
                if (shared)
                        log_full(level, "%" PRIu64 " more writes refused to uids beyond the %d "
                                 "counted one by one were not logged (at most %d lines every "
                                 "%s)", dropped, UID_RATELIMIT_SLOTS, BUS_POLKIT_REFUSALS_LOGGED,
                                 g->refusals_interval);
                else
                        log_full(level, "%" PRIu64 " more writes refused to uid %u were not "
                                 "logged (at most %d lines a uid every %s)", dropped,
                                 (unsigned)uid, BUS_POLKIT_REFUSALS_LOGGED,
                                 g->refusals_interval);
        }
        /* The timer is on only while a sum is owed, for the first interval to end. */
        next = uid_ratelimit_next_summary_usec(g->refusals);
        if (next == UINT64_MAX || now_usec == UINT64_MAX) {
                evtimer_del(g->refusals_timer);
        } else {
                uint64_t in_usec = next > now_usec ? next - now_usec : 0;
                struct timeval tv = { .tv_sec = (time_t)(in_usec / 1000000),
                                      .tv_usec = (suseconds_t)(in_usec % 1000000) };

                evtimer_add(g->refusals_timer, &tv);
        }
}

static void on_refusals_timer(evutil_socket_t fd, short what, void *userdata)
{
        refusals_sum_up(userdata, ca_now_usec());
}

/*
 * Log that a write was refused to @uid, unless @uid has had its share of lines in this
 * interval (bus-polkit.h): anyone may call, and each refusal would otherwise be one line.
 */
static void log_refusal(struct bus_polkit *g, uid_t uid, int level, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static void log_refusal(struct bus_polkit *g, uid_t uid, int level, const char *fmt, ...)
{
        uint64_t now_usec = ca_now_usec();
        enum uid_ratelimit_verdict verdict;
        char line[1024];
        bool shared;
        va_list ap;

        refusals_sum_up(g, now_usec); /* an ended interval is said before another begins */
        verdict = uid_ratelimit_check(g->refusals, uid, level, now_usec, &shared);
        if (verdict == UID_RATELIMIT_DROP) {
                refusals_sum_up(g, now_usec); /* the timer, for this one's sum */
                return;
        }
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        if (verdict == UID_RATELIMIT_PASS)
                log_full(level, "%s", line);
        else if (shared)
                log_full(level, "%s (line %d within %s for the uids beyond the %d counted one "
                         "by one: their next are counted, not logged)", line,
                         BUS_POLKIT_REFUSALS_LOGGED, g->refusals_interval, UID_RATELIMIT_SLOTS);
        else
                log_full(level, "%s (line %d within %s for uid %u: its next are counted, not "
                         "logged)", line, BUS_POLKIT_REFUSALS_LOGGED, g->refusals_interval,
                         (unsigned)uid);
}

static struct polkit_query *query_free(struct polkit_query *q)
{
        struct polkit_query **pp;

        if (!q)
                return NULL;
        for (pp = &q->gate->queries; *pp; pp = &(*pp)->next)
                if (*pp == q) {
                        *pp = q->next;
                        q->gate->n_queries--;
                        break;
                }
        sd_bus_slot_unref(q->slot);
        sd_bus_message_unref(q->msg);
        free(q);
        return NULL;
}

static bool path_under(const char *path, const char *prefix)
{
        size_t n = strlen(prefix);

        return path && strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * "Rotate", or "setting IntervalUSec" for a Set (the body is read, then rewound), for messages
 * and the log: the caller's property name with its control bytes escaped (escape.h).
 */
static void describe(sd_bus_message *m, char *buf, size_t len, const char **ret_property)
{
        const char *iface = NULL, *prop = NULL;
        char escaped[WHAT_MAX];

        *ret_property = NULL;
        if (sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", "Set") &&
            sd_bus_message_read(m, "ss", &iface, &prop) >= 0) {
                snprintf(buf, len, "setting %.100s",
                         escape_control(prop, false, escaped, sizeof(escaped)));
                *ret_property = prop; /* valid while m lives */
        } else {
                snprintf(buf, len, "%s", sd_bus_message_get_member(m));
        }
        (void)sd_bus_message_rewind(m, true);
}

static int reply_denied(sd_bus_message *m, const char *name, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static int reply_denied(sd_bus_message *m, const char *name, const char *fmt, ...)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char text[512];
        va_list ap;
        int r;

        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        (void)sd_bus_error_set(&error, name, text);
        r = sd_bus_reply_method_error(m, &error);
        sd_bus_error_free(&error);
        return r;
}

/* Polkit's answer (or the bus's error) for q: reply to the call, or put it back in the queue. */
static int on_polkit_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
        struct polkit_query *q = userdata;
        struct bus_polkit *g = q->gate;
        const sd_bus_error *e;
        int authorized = 0, challenge = 0, r;

        q->slot = sd_bus_slot_unref(q->slot);
        e = sd_bus_message_get_error(reply);
        if (e && sd_bus_error_has_names(e, SD_BUS_ERROR_SERVICE_UNKNOWN,
                                        SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
                /* No polkit on this bus: the rule before it, root with CAP_SYS_ADMIN alone. */
                log_refusal(g, q->uid, LOG_INFO, "%s denied to uid %u (pid %d): not root, and "
                            "polkit is not running", q->what, (unsigned)q->uid, (int)q->pid);
                (void)reply_denied(q->msg, SD_BUS_ERROR_ACCESS_DENIED,
                                   "Access denied: %s needs root with CAP_SYS_ADMIN; polkit, "
                                   "which could authorize others for %s, is not running",
                                   q->what, g->action);
                query_free(q);
                return 1;
        }
        if (e) {
                log_refusal(g, q->uid, LOG_WARNING, "%s denied to uid %u (pid %d): polkit "
                            "failed: %s", q->what, (unsigned)q->uid, (int)q->pid,
                            e->message ? e->message : e->name);
                (void)reply_denied(q->msg, SD_BUS_ERROR_ACCESS_DENIED,
                                   "Access denied: %s needs root, or polkit's authorization for "
                                   "%s, and polkit failed: %s", q->what, g->action,
                                   e->message ? e->message : e->name);
                query_free(q);
                return 1;
        }
        r = sd_bus_message_enter_container(reply, 'r', "bba{ss}");
        if (r >= 0)
                r = sd_bus_message_read(reply, "bb", &authorized, &challenge);
        if (r < 0) {
                log_refusal(g, q->uid, LOG_WARNING, "%s denied to uid %u (pid %d): polkit's "
                            "reply could not be read: %s", q->what, (unsigned)q->uid,
                            (int)q->pid, strerror(-r));
                (void)reply_denied(q->msg, SD_BUS_ERROR_ACCESS_DENIED,
                                   "Access denied: polkit's reply about %s could not be read",
                                   q->what);
                query_free(q);
                return 1;
        }
        if (!authorized) {
                log_refusal(g, q->uid, LOG_INFO, "%s denied to uid %u (pid %d) by polkit (%s)%s",
                            q->what, (unsigned)q->uid, (int)q->pid, g->action,
                            challenge ? ": it wants the caller to authenticate" : "");
                if (challenge)
                        (void)reply_denied(q->msg,
                                           SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED,
                                           "Interactive authentication required: %s needs "
                                           "polkit's authorization for %s", q->what, g->action);
                else
                        (void)reply_denied(q->msg, SD_BUS_ERROR_ACCESS_DENIED,
                                           "Access denied: %s needs root, or polkit's "
                                           "authorization for %s, which it refused", q->what,
                                           g->action);
                query_free(q);
                return 1;
        }

        /* Allowed: dispatch the call again, from the start; the filter lets it through then. */
        log_info("%s allowed to uid %u (pid %d) by polkit (%s)", q->what, (unsigned)q->uid,
                 (int)q->pid, g->action);
        q->allowed = true;
        r = sd_bus_message_rewind(q->msg, true);
        if (r >= 0)
                r = sd_bus_enqueue_for_read(sd_bus_message_get_bus(q->msg), q->msg);
        if (r < 0) {
                (void)sd_bus_reply_method_errnof(q->msg, -r, "Failed to resume %s: %m", q->what);
                query_free(q);
        }
        return 1;
}

/*
 * Ask polkit about @m, a write by @uid: the call waits meanwhile. Returns 0, or a negative
 * errno (-EBUSY: too many calls wait already).
 */
static int query_start(struct bus_polkit *g, sd_bus_message *m, uid_t uid, pid_t pid)
{
        sd_bus *bus = sd_bus_message_get_bus(m);
        sd_bus_message *call = NULL;
        struct polkit_query *q;
        const char *property;
        unsigned flags = 0;
        int r;

        if (g->n_queries >= BUS_POLKIT_PENDING_MAX)
                return -EBUSY;
        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->gate = g;
        q->msg = sd_bus_message_ref(m);
        q->uid = uid;
        q->pid = pid;
        q->next = g->queries;
        g->queries = q;
        g->n_queries++;
        describe(m, q->what, sizeof(q->what), &property);

        /* The caller asked for a question on its terminal (systemctl's --no-ask-password). */
        if (sd_bus_message_get_allow_interactive_authorization(m) > 0)
                flags |= POLKIT_CHECK_ALLOW_USER_INTERACTION;
        r = sd_bus_message_new_method_call(bus, &call, POLKIT_NAME, POLKIT_PATH, POLKIT_IFACE,
                                           "CheckAuthorization");
        /* The subject is the calling connection: polkit asks the bus who it is. */
        if (r >= 0)
                r = sd_bus_message_append(call, "(sa{sv})s", "system-bus-name", 1, "name", "s",
                                          sd_bus_message_get_sender(m), g->action);
        /* Details a rule can read (action.lookup("member")). */
        if (r >= 0)
                r = sd_bus_message_open_container(call, 'a', "{ss}");
        if (r >= 0)
                r = sd_bus_message_append(call, "{ss}{ss}{ss}", "path",
                                          sd_bus_message_get_path(m), "interface",
                                          sd_bus_message_get_interface(m), "member",
                                          sd_bus_message_get_member(m));
        if (r >= 0 && property)
                r = sd_bus_message_append(call, "{ss}", "property", property);
        if (r >= 0)
                r = sd_bus_message_close_container(call);
        if (r >= 0)
                r = sd_bus_message_append(call, "us", flags, "");
        if (r >= 0)
                r = sd_bus_call_async(bus, &q->slot, call, on_polkit_reply, q, 0);
        sd_bus_message_unref(call);
        if (r < 0) {
                query_free(q);
                return r;
        }
        log_debug("%s by uid %u (pid %d): asking polkit%s (%zu waiting)", q->what, (unsigned)uid,
                  (int)pid, flags & POLKIT_CHECK_ALLOW_USER_INTERACTION ? ", which may ask" : "",
                  g->n_queries);
        return 0;
}

static struct polkit_query *query_find(struct bus_polkit *g, sd_bus_message *m)
{
        for (struct polkit_query *q = g->queries; q; q = q->next)
                if (q->msg == m)
                        return q;
        return NULL;
}

/*
 * Root with CAP_SYS_ADMIN: 1; root without it: 0; another user: -ENOENT (polkit decides).
 * The uid is dbus-daemon's (the connection's, as it connected), the capabilities are read from
 * /proc/PID/status (the caller waits in its call meanwhile).
 */
static int sender_root(sd_bus_message *m, uid_t *ret_uid, pid_t *ret_pid, sd_bus_error *error)
{
        sd_bus_creds *creds = NULL;
        uid_t uid = (uid_t)-1;
        pid_t pid = 0;
        int r;

        r = sd_bus_query_sender_creds(m, SD_BUS_CREDS_EUID | SD_BUS_CREDS_PID |
                                                 SD_BUS_CREDS_EFFECTIVE_CAPS |
                                                 SD_BUS_CREDS_AUGMENT,
                                      &creds);
        if (r >= 0 && (sd_bus_creds_get_augmented_mask(creds) & SD_BUS_CREDS_EUID))
                r = -EPERM; /* read from /proc, not vouched for by the bus: not for a decision */
        if (r >= 0)
                r = sd_bus_creds_get_euid(creds, &uid);
        if (r >= 0 && sd_bus_creds_get_pid(creds, &pid) < 0)
                pid = 0;
        if (r >= 0 && uid == 0)
                r = sd_bus_creds_has_effective_cap(creds, CAP_SYS_ADMIN);
        else if (r >= 0)
                r = -ENOENT;
        sd_bus_creds_unref(creds);
        *ret_uid = uid;
        *ret_pid = pid;
        if (r < 0 && r != -ENOENT)
                sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                  "Access denied: the caller's credentials could not be read: %s",
                                  strerror(-r));
        return r;
}

static int gate_filter(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        struct bus_polkit *g = userdata;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *scope = NULL, *iface, *member;
        struct polkit_query *q;
        char what[WHAT_MAX];
        const char *property;
        uid_t uid;
        pid_t pid;
        int r;

        passed_set(NULL);
        if (!sd_bus_message_is_method_call(m, NULL, NULL) ||
            !path_under(sd_bus_message_get_path(m), g->path))
                return 0;
        iface = sd_bus_message_get_interface(m);
        member = sd_bus_message_get_member(m);
        /* Without an interface sd-bus dispatches nothing (UnknownMethod): nothing to guard. */
        if (!iface || !member || g->is_read(iface, member))
                return 0;

        q = query_find(g, m);
        if (q && q->allowed) { /* polkit's yes, the call's second coming */
                passed_set(m);
                query_free(q);
                return 0;
        }
        if (q) /* still waiting for polkit (cannot be: it is not queued again before) */
                return 1;

        if (sd_bus_get_scope(sd_bus_message_get_bus(m), &scope) >= 0 && strcmp(scope, "user") == 0) {
                passed_set(m);
                return 0;
        }
        r = sender_root(m, &uid, &pid, &error);
        if (r > 0) {
                passed_set(m);
                return 0;
        }
        describe(m, what, sizeof(what), &property);
        if (r == 0) {
                /* uid 0 is decided here: polkit would allow it whatever its capabilities. */
                log_refusal(g, 0, LOG_INFO, "%s denied to uid 0 (pid %d): no CAP_SYS_ADMIN in "
                            "its effective set", what, (int)pid);
                (void)reply_denied(m, SD_BUS_ERROR_ACCESS_DENIED,
                                   "Access denied: %s needs CAP_SYS_ADMIN (root); the caller "
                                   "(pid %d) lacks it in its effective set", what, (int)pid);
                return 1;
        }
        if (r != -ENOENT) {
                log_refusal(g, uid, LOG_WARNING, "Credentials of %s unknown: %s denied",
                            sd_bus_message_get_sender(m), what);
                (void)sd_bus_reply_method_error(m, &error);
                sd_bus_error_free(&error);
                return 1;
        }
        r = query_start(g, m, uid, pid);
        if (r == -EBUSY) {
                log_refusal(g, uid, LOG_WARNING, "%s refused to uid %u (pid %d): %d calls wait "
                            "for polkit already", what, (unsigned)uid, (int)pid,
                            BUS_POLKIT_PENDING_MAX);
                (void)reply_denied(m, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                   "Too many calls wait for polkit (%d); try again",
                                   BUS_POLKIT_PENDING_MAX);
        } else if (r < 0) {
                (void)sd_bus_reply_method_errnof(m, -r, "Failed to ask polkit about %s: %m",
                                                 what);
        }
        return 1; /* answered, or answered when polkit has */
}

int bus_polkit_new(struct event_base *base, const char *path, const char *action,
                   bool (*is_read)(const char *interface, const char *member),
                   struct bus_polkit **ret)
{
        struct bus_polkit *g = calloc(1, sizeof(*g));
        const char *e = getenv("CACHEAGED_REFUSAL_LOG_INTERVAL");
        uint64_t interval_usec = BUS_POLKIT_REFUSALS_INTERVAL_USEC;

        if (!g)
                return -ENOMEM;
        /* A shorter interval, for tests: the summary comes when it ends. */
        if (e && (ca_parse_duration(e, &interval_usec) < 0 || interval_usec == 0)) {
                log_warning("CACHEAGED_REFUSAL_LOG_INTERVAL=%s is not a duration above 0, "
                            "ignoring", e);
                interval_usec = BUS_POLKIT_REFUSALS_INTERVAL_USEC;
        }
        ca_format_duration(interval_usec, g->refusals_interval, sizeof(g->refusals_interval));
        g->path = strdup(path);
        g->action = strdup(action);
        g->is_read = is_read;
        g->refusals_timer = evtimer_new(base, on_refusals_timer, g);
        if (!g->path || !g->action || !g->refusals_timer ||
            uid_ratelimit_new(interval_usec, BUS_POLKIT_REFUSALS_LOGGED, &g->refusals) < 0) {
                bus_polkit_free(g);
                return -ENOMEM;
        }
        *ret = g;
        return 0;
}

static void drop_queries(struct bus_polkit *g)
{
        while (g->queries)
                query_free(g->queries);
        passed_set(NULL);
}

struct bus_polkit *bus_polkit_free(struct bus_polkit *g)
{
        if (!g)
                return NULL;
        drop_queries(g);
        if (g->refusals)
                refusals_sum_up(g, UINT64_MAX); /* every interval ends here */
        uid_ratelimit_free(g->refusals);
        if (g->refusals_timer)
                event_free(g->refusals_timer);
        free(g->path);
        free(g->action);
        free(g);
        return NULL;
}

int bus_polkit_attach(struct bus_polkit *g, sd_bus *bus)
{
        drop_queries(g); /* of a lost connection: their callers are gone with it */
        return sd_bus_add_filter(bus, NULL, gate_filter, g);
}

int bus_polkit_verify(sd_bus_message *m, const char *what, sd_bus_error *error)
{
        if (m && m == passed)
                return 1;
        log_warning("%s reached its handler without the write gate: denied", what);
        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                 "Access denied: %s did not pass the write gate", what);
}
