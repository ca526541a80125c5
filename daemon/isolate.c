/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Isolated work: see isolate.h. The child writes one record per line on a pipe: "S<step>",
 * "E<error>", and "D" when the work is done; error messages are escaped (errors.c), so a
 * record never holds a newline. It leaves with _exit(): no atexit handler, no stdio buffer
 * and no leak check of the parent's copied state runs twice.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cacheage/age.h"
#include "cacheage/value.h"
#include "isolate.h"
#include "log.h"

#define ISOLATE_RECORD_MAX 65536 /* bytes of one record; a longer one is cut */

struct isolate {
        int fd; /* the pipe's write end, in the child */
};

/* One record, whole (a pipe write of at most PIPE_BUF is atomic; longer ones loop). */
static void isolate_write(struct isolate *iso, char kind, const char *text)
{
        size_t len = strlen(text);
        char *buf;

        if (len > ISOLATE_RECORD_MAX)
                len = ISOLATE_RECORD_MAX;
        buf = malloc(len + 2);
        if (!buf)
                return;
        buf[0] = kind;
        memcpy(buf + 1, text, len);
        buf[len + 1] = '\n';
        for (size_t off = 0; off < len + 2;) {
                ssize_t n = write(iso->fd, buf + off, len + 2 - off);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                off += (size_t)n;
        }
        free(buf);
}

void isolate_step(struct isolate *iso, const char *fmt, ...)
{
        char buf[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        isolate_write(iso, 'S', buf);
}

static _Noreturn void isolate_child(int fd, isolate_fn fn, void *userdata)
{
        struct isolate iso = { .fd = fd };
        struct ca_errors errors = { 0 };
        sigset_t none;
        int r;

        /*
         * The parent's signal handlers write to its event loop's socket, which the child
         * shares: a signal meant for the child must not look like one for the daemon.
         */
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        /* Forked where the bus's processing holds the signals (bus-loop.c): not here. */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        r = fn(userdata, &errors, &iso);
        for (size_t i = 0; i < errors.n; i++)
                isolate_write(&iso, 'E', errors.v[i]);
        isolate_write(&iso, 'D', "");
        _exit(r < 0 || errors.n > 0 ? 1 : 0);
}

struct isolate_parent {
        char *buf;   /* what was read and not yet parsed */
        size_t len;
        char *step;  /* the last step the child announced */
        bool done;
        struct ca_errors errors;
};

static void isolate_parse(struct isolate_parent *p)
{
        char *line = p->buf, *nl;

        while ((nl = memchr(line, '\n', p->len - (size_t)(line - p->buf)))) {
                *nl = '\0';
                switch (line[0]) {
                case 'S':
                        free(p->step);
                        p->step = strdup(line + 1);
                        break;
                case 'E':
                        ca_errors_add(&p->errors, "%s", line + 1);
                        break;
                case 'D':
                        p->done = true;
                        break;
                }
                line = nl + 1;
        }
        p->len -= (size_t)(line - p->buf);
        memmove(p->buf, line, p->len);
}

/* Read the child's records until it closes the pipe or @deadline_usec: whether it closed. */
static bool isolate_read(int fd, uint64_t deadline_usec, struct isolate_parent *p)
{
        size_t cap = 4096;

        p->buf = malloc(cap);
        if (!p->buf)
                return false;
        for (;;) {
                uint64_t now = ca_now_usec();
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                ssize_t n;
                int r;

                if (now >= deadline_usec)
                        return false;
                r = poll(&pfd, 1, (int)((deadline_usec - now + 999) / 1000));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        continue; /* the deadline is checked above */
                if (p->len == cap) {
                        char *b;

                        if (cap > 4 * ISOLATE_RECORD_MAX) {
                                p->len = 0; /* a record past the limit: dropped */
                        } else {
                                b = realloc(p->buf, cap * 2);
                                if (!b)
                                        return false;
                                p->buf = b;
                                cap *= 2;
                        }
                }
                n = read(fd, p->buf + p->len, cap - p->len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return true;
                p->len += (size_t)n;
                isolate_parse(p);
        }
}

/*
 * After the child: make the parent's own anonymous pages writable again, in the kernel, a run
 * at a time. fork() write-protected every one of them; the child is gone, but each page would
 * still fault once at its next write, a trap per 4 KiB page: for a daemon holding 5,000,000
 * objects (200 MB) about 50,000 faults after every reload check, 0.65 s of the loop's time here
 * (12.6 us a fault; the soak measured 45,000 faults a second at one check a second).
 * MADV_POPULATE_WRITE (Linux 5.14) does it without the traps, 14 ms for 200 MB. Only pages
 * present and mapped by this process alone (/proc/self/pagemap: bits 63 and 56) are touched:
 * not a page never used (it would be allocated), nor the shared zero page behind memory only
 * ever read (mincore() calls it resident; populating it allocated megabytes), nor a file
 * mapping (a private file page written becomes a copy), nor a mapping of terabytes (ASan's
 * shadow: reading its page map would take minutes). Best effort: errors are ignored.
 */
#define PAGEMAP_PRESENT (1ULL << 63)
#define PAGEMAP_EXCLUSIVE (1ULL << 56)
#define PAGEMAP_CHUNK 4096 /* entries read at a time */
#define POPULATE_MAPPING_MAX (4ULL << 30) /* bytes: larger is a sanitizer's sparse shadow */

static void isolate_populate_run(unsigned long start, size_t pages, size_t page)
{
        if (pages > 0)
                (void)madvise((void *)start, pages * page, MADV_POPULATE_WRITE);
}

static void isolate_rewrite_enable(void)
{
        uint64_t *map = malloc(PAGEMAP_CHUNK * sizeof(*map));
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        char line[512];
        FILE *f;
        int fd;

        fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
        f = fopen("/proc/self/maps", "re");
        while (map && fd >= 0 && f && fgets(line, sizeof(line), f)) {
                unsigned long start, end, offset, inode, run_start = 0;
                char perms[5], dev[16];
                size_t run = 0;
                int path_at = 0;

                if (sscanf(line, "%lx-%lx %4s %lx %15s %lu %n", &start, &end, perms, &offset, dev,
                           &inode, &path_at) < 6)
                        continue;
                /* Private, writable, anonymous: no path (the last space ate the newline), or
                 * the heap. */
                if (perms[1] != 'w' || perms[3] != 'p' || inode != 0 ||
                    (line[path_at] != '\0' && strncmp(line + path_at, "[heap]", 6) != 0) ||
                    end - start > POPULATE_MAPPING_MAX)
                        continue;
                for (unsigned long a = start; a < end;) {
                        size_t n = (end - a) / page;
                        ssize_t got;

                        if (n > PAGEMAP_CHUNK)
                                n = PAGEMAP_CHUNK;
                        got = pread(fd, map, n * sizeof(*map), (off_t)(a / page * sizeof(*map)));
                        if (got <= 0)
                                break;
                        n = (size_t)got / sizeof(*map);
                        for (size_t i = 0; i < n; i++, a += page) {
                                bool own = (map[i] & PAGEMAP_PRESENT) &&
                                           (map[i] & PAGEMAP_EXCLUSIVE);

                                if (own && run++ == 0)
                                        run_start = a;
                                if (!own) {
                                        isolate_populate_run(run_start, run, page);
                                        run = 0;
                                }
                        }
                }
                isolate_populate_run(run_start, run, page);
        }
        if (f)
                fclose(f);
        if (fd >= 0)
                close(fd);
        free(map);
}

int isolate_run(isolate_fn fn, void *userdata, uint64_t timeout_usec, struct ca_errors *errors)
{
        struct isolate_parent p = { 0 };
        const char *step;
        char limit[CA_DURATION_MAX_STR];
        bool closed;
        pid_t pid;
        int fds[2], status = 0, r;

        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        fflush(NULL); /* nothing buffered is written twice */
        pid = fork();
        if (pid < 0) {
                r = -errno;
                close(fds[0]);
                close(fds[1]);
                return r;
        }
        if (pid == 0) {
                close(fds[0]);
                isolate_child(fds[1], fn, userdata);
        }
        close(fds[1]);
        closed = isolate_read(fds[0], ca_now_usec() + timeout_usec, &p);
        close(fds[0]);
        if (!closed || !p.done)
                (void)kill(pid, SIGKILL); /* hung, or closed the pipe and went on */
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        isolate_rewrite_enable();

        step = p.step ? p.step : "the check";
        if (p.done && WIFEXITED(status)) {
                for (size_t i = 0; i < p.errors.n; i++)
                        ca_errors_add(errors, "%s", p.errors.v[i]);
                r = WEXITSTATUS(status) == 0 ? 0 : -EINVAL;
                if (r < 0 && p.errors.n == 0)
                        ca_errors_add(errors, "%s: failed", step);
        } else if (!closed) {
                ca_errors_add(errors, "%s: did not finish within check_timeout (%s): hung?",
                              step, ca_format_duration(timeout_usec, limit, sizeof(limit)));
                r = -EINVAL;
        } else if (WIFSIGNALED(status)) {
                ca_errors_add(errors, "%s: crashed (signal %d, %s)", step, WTERMSIG(status),
                              strsignal(WTERMSIG(status)));
                r = -EINVAL;
        } else {
                ca_errors_add(errors, "%s: ended before finishing (exit status %d)", step,
                              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
                r = -EINVAL;
        }
        ca_errors_clear(&p.errors);
        free(p.step);
        free(p.buf);
        return r;
}
