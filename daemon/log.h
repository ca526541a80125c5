/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * cacheaged's log: one line per message on stderr. Under systemd (JOURNAL_STREAM names our
 * stderr) each line starts with the syslog level as "<N>", which journald turns into the
 * entry's priority; elsewhere lines read "cacheaged: message".
 */

#include <errno.h>
#include <syslog.h>

/* log_open() - detect whether stderr is the journal. Call once, early. */
void log_open(void);

/* Messages above @level (a syslog level, LOG_EMERG..LOG_DEBUG) are dropped. */
void log_set_level(int level);
int log_get_level(void);

/* log_level_from_string() - "err", "warning", "info", "debug"... or "0".."7"; -EINVAL. */
int log_level_from_string(const char *s);
/* log_level_to_string() - the name journald and LogControl1 use ("info"); NULL if invalid. */
const char *log_level_to_string(int level);

/* log_full() - log at @level; returns nothing. */
void log_full(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * log_full_errno() - log at @level with %m meaning strerror(@error); returns -abs(@error)
 * so that "return log_error_errno(r, ...)" reports and propagates in one step.
 */
int log_full_errno(int level, int error, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...) log_full_errno(LOG_DEBUG, e, __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, e, __VA_ARGS__)
#define log_error_errno(e, ...) log_full_errno(LOG_ERR, e, __VA_ARGS__)
