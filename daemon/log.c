/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging to stderr, the systemd way: a service's stderr is a stream into the journal and
 * JOURNAL_STREAM="DEV:INODE" says which one, so the "<N>" prefix is only written when
 * stderr still is that stream (a redirect by the user turns it off).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "log.h"

#define LOG_LINE_MAX 2048 /* bytes; longer messages are cut */

static int log_max_level = LOG_INFO;
static bool log_prefix_level;

static const char *const level_names[] = {
        [LOG_EMERG] = "emerg",     [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
        [LOG_ERR] = "err",         [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info",       [LOG_DEBUG] = "debug",
};

void log_open(void)
{
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        log_prefix_level = false;
        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return;
        if (fstat(STDERR_FILENO, &st) < 0)
                return;
        log_prefix_level = (unsigned long long)st.st_dev == dev &&
                           (unsigned long long)st.st_ino == ino;
}

void log_set_level(int level)
{
        if (level >= LOG_EMERG && level <= LOG_DEBUG)
                log_max_level = level;
}

int log_get_level(void)
{
        return log_max_level;
}

int log_level_from_string(const char *s)
{
        char *end;
        long v;

        if (!s || !*s)
                return -EINVAL;
        for (int i = LOG_EMERG; i <= LOG_DEBUG; i++)
                if (strcasecmp(s, level_names[i]) == 0)
                        return i;
        if (strcasecmp(s, "error") == 0)
                return LOG_ERR;
        if (strcasecmp(s, "warn") == 0)
                return LOG_WARNING;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || *end || v < LOG_EMERG || v > LOG_DEBUG)
                return -EINVAL;
        return (int)v;
}

const char *log_level_to_string(int level)
{
        if (level < LOG_EMERG || level > LOG_DEBUG)
                return NULL;
        return level_names[level];
}

static void log_write(int level, const char *raw)
{
        char msg[LOG_LINE_MAX * ESCAPE_BYTE_MAX];

        /* A message is one line: what it quotes from input cannot start another (escape.h). */
        escape_control(raw, false, msg, sizeof(msg));
        /* One write per line, so that lines from a crash or a child never interleave. */
        if (log_prefix_level)
                fprintf(stderr, "<%d>%s\n", level, msg);
        else
                fprintf(stderr, "cacheaged: %s\n", msg);
}

void log_full(int level, const char *fmt, ...)
{
        char buf[LOG_LINE_MAX];
        va_list ap;

        if (level > log_max_level)
                return;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        log_write(level, buf);
}

int log_full_errno(int level, int error, const char *fmt, ...)
{
        char buf[LOG_LINE_MAX];
        va_list ap;

        error = error < 0 ? -error : error;
        if (level > log_max_level)
                return -error;
        /* vsnprintf() expands %m from errno, as glibc's printf family does. */
        errno = error;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        log_write(level, buf);
        return -error;
}
