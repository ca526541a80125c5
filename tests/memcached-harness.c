/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The memcached adapter's test harness (see memcached-harness.h; adapter-harness.h). */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "memcached-harness.h"
#include "test-util.h"

/* --- a real memcached ---------------------------------------------------------------------- */

static int mcd_try_connect(const struct mcd *m)
{
        return ah_try_connect(m->sock, m->port);
}

/* Start it and wait until it accepts: true, or false when it exited (a port taken meanwhile). */
static bool mcd_spawn(struct mcd *m)
{
        const char *argv[24];
        char port[16], conns[16];
        size_t n = 0;

        argv[n++] = "memcached";
        snprintf(conns, sizeof(conns), "%d", 64);
        argv[n++] = "-c";
        argv[n++] = conns;
        argv[n++] = "-U";
        argv[n++] = "0";
        if (m->sock[0]) {
                argv[n++] = "-s";
                argv[n++] = m->sock;
                argv[n++] = "-a";
                argv[n++] = "0666";
        } else {
                snprintf(port, sizeof(port), "%u", m->port);
                argv[n++] = "-l";
                argv[n++] = "127.0.0.1";
                argv[n++] = "-p";
                argv[n++] = port;
        }
        for (size_t i = 0; m->opts[i]; i++)
                argv[n++] = m->opts[i];
        argv[n] = NULL;
        /* As nobody when root: memcached refuses root, and its own -u comes after the exec. */
        if (ah_spawn_server(argv, m->log, true, m->sock, m->port, &m->pid))
                return true;
        m->pid = -1;
        return false;
}

void mcd_start(struct mcd *m, bool on_unix, const char *const *opts)
{
        size_t n = 0;

        *m = (struct mcd){ .pid = -1 };
        for (; opts && opts[n]; n++) {
                cr_assert(n < ELEMENTSOF(m->opts) - 1);
                m->opts[n] = opts[n];
        }
        m->opts[n] = NULL;
        m->dir = test_mkdtemp("cacheage-mc");
        /* memcached drops to nobody before it makes its socket. */
        chmod(m->dir, 0777);
        m->log = test_path_join(m->dir, "memcached.log");
        if (on_unix) {
                snprintf(m->sock, sizeof(m->sock), "%s/mc.sock", m->dir);
                snprintf(m->server, sizeof(m->server), "%s", m->sock);
                cr_assert(mcd_spawn(m), "memcached exited:\n%s", test_read_file(m->log));
                return;
        }
        for (int attempt = 0; attempt < 5; attempt++) {
                m->port = ah_free_port();
                snprintf(m->server, sizeof(m->server), "127.0.0.1:%u", m->port);
                if (mcd_spawn(m))
                        return;
        }
        cr_assert_fail("memcached would not start:\n%s", test_read_file(m->log));
}

void mcd_kill(struct mcd *m)
{
        if (m->pid > 0)
                test_kill(m->pid);
        m->pid = -1;
}

void mcd_restart(struct mcd *m)
{
        mcd_kill(m);
        if (m->sock[0])
                unlink(m->sock);
        for (int attempt = 0; attempt < 50; attempt++) {
                if (mcd_spawn(m))
                        return;
                usleep(100000); /* the port in TIME_WAIT or taken for a moment */
        }
        cr_assert_fail("memcached would not start again:\n%s", test_read_file(m->log));
}

void mcd_cleanup(struct mcd *m)
{
        mcd_kill(m);
        if (m->dir)
                test_rm_rf(m->dir);
        free(m->dir);
        free(m->log);
        *m = (struct mcd){ .pid = -1 };
}

/* --- a client ------------------------------------------------------------------------------ */

int mcc_connect(const struct mcd *m)
{
        int fd = mcd_try_connect(m);

        cr_assert(fd >= 0, "connect to memcached %s: %s", m->server, strerror(errno));
        return fd;
}

static bool ends_with(const char *s, size_t len, const char *end)
{
        size_t n = strlen(end);

        return len >= n && memcmp(s + len - n, end, n) == 0;
}

char *mcc_cmd(int fd, const char *cmd, const char *end)
{
        size_t len = 0, cap = 4096;
        char *buf = malloc(cap);
        size_t n = strlen(cmd);

        cr_assert(buf);
        cr_assert(write(fd, cmd, n) == (ssize_t)n, "write: %s", strerror(errno));
        for (;;) {
                ssize_t r;

                if (cap - len < 2048) {
                        cap *= 2;
                        buf = realloc(buf, cap);
                        cr_assert(buf);
                }
                r = read(fd, buf + len, cap - len - 1);
                cr_assert(r > 0, "memcached: no reply to %.40s: %s", cmd,
                          r == 0 ? "closed" : strerror(errno));
                len += (size_t)r;
                buf[len] = '\0';
                /* A one-line reply ends with its line; others with @end. */
                if (ends_with(buf, len, end) ||
                    (strcmp(end, "\r\n") != 0 && (strncmp(buf, "ERROR", 5) == 0 ||
                                                  strncmp(buf, "CLIENT_ERROR", 12) == 0) &&
                     ends_with(buf, len, "\r\n")))
                        return buf;
        }
}

void mcc_set(int fd, const char *key, const char *value)
{
        char cmd[1024];
        char *r;

        snprintf(cmd, sizeof(cmd), "set %s 0 0 %zu\r\n%s\r\n", key, strlen(value), value);
        r = mcc_cmd(fd, cmd, "\r\n");
        cr_assert_str_eq(r, "STORED\r\n", "set %s: %s", key, r);
        free(r);
}

bool mcc_get(int fd, const char *key, char **ret_value)
{
        char cmd[512];
        char *r, *v;
        bool found;

        snprintf(cmd, sizeof(cmd), "get %s\r\n", key);
        r = mcc_cmd(fd, cmd, "END\r\n");
        found = strncmp(r, "VALUE ", 6) == 0;
        if (found && ret_value) {
                v = strstr(r, "\r\n");
                cr_assert(v);
                v += 2;
                *strstr(v, "\r\n") = '\0';
                *ret_value = strdup(v);
        }
        free(r);
        return found;
}

/* "me @key": found or not, and its cas (0 on a server without CAS). */
static bool mcc_me(int fd, const char *key, uint64_t *ret_cas)
{
        char cmd[512];
        char *r, *c;
        bool found;

        snprintf(cmd, sizeof(cmd), "me %s\r\n", key);
        r = mcc_cmd(fd, cmd, "\r\n");
        found = strncmp(r, "ME ", 3) == 0;
        if (found) {
                c = strstr(r, " cas=");
                cr_assert(c, "%s", r);
                *ret_cas = strtoull(c + 5, NULL, 10);
        } else {
                cr_assert_str_eq(r, "EN\r\n");
        }
        free(r);
        return found;
}

bool mcc_exists(int fd, const char *key)
{
        uint64_t cas;

        return mcc_me(fd, key, &cas);
}

uint64_t mcc_cas(int fd, const char *key)
{
        uint64_t cas = 0;

        return mcc_me(fd, key, &cas) ? cas : 0;
}

/* --- scripts and holds ---------------------------------------------------------------------- */

const char fake_stats_ok[] =
        "STAT pid 4242\r\nSTAT uptime 100\r\nSTAT time 1700000100\r\nSTAT curr_items 1\r\nEND\r\n"
        "STAT lru_segmented yes\r\nSTAT cas_enabled yes\r\nSTAT lru_crawler yes\r\n"
        "STAT dump_enabled yes\r\nEND\r\n"
        "STAT items:1:number 1\r\nSTAT items:1:age_hot 0\r\nSTAT items:1:age_warm 0\r\nEND\r\n";

bool mc_hold_md(const char *request)
{
        return strncmp(request, "md ", 3) == 0;
}
