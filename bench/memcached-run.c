/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The memcached benchmarks' memcached, client and daemon (see memcached-run.h). */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-util.h"
#include "memcached-run.h"

uint16_t mcb_port;

/* ---- memcached ---- */

int mcb_connect(void)
{
        return bench_connect(mcb_port);
}

void mcb_memcached_start(struct bench_child *c, const char *const *args)
{
        const char *argv[32] = { "memcached", "-l", "127.0.0.1", "-p", NULL, "-U", "0" };
        char port_s[16], log[512];
        size_t n = 7;

        mcb_port = bench_free_port();
        snprintf(port_s, sizeof(port_s), "%u", mcb_port);
        argv[4] = port_s;
        for (size_t i = 0; args && args[i]; i++) {
                if (n + 1 >= sizeof(argv) / sizeof(argv[0]))
                        bench_die("too many memcached arguments");
                argv[n++] = args[i];
        }
        argv[n] = NULL;
        snprintf(log, sizeof(log), "%s/memcached-%u.log", bench_run_dir(), mcb_port);
        bench_child_start(c, argv, log, NULL, false, true);
        for (int i = 0;; i++) {
                int fd = mcb_connect();

                if (fd >= 0) {
                        close(fd);
                        return;
                }
                if (i > 1000 || waitpid(c->pid, NULL, WNOHANG) == c->pid)
                        bench_die("memcached did not start (see %s)", log);
                usleep(10000);
        }
}

void mcb_write_all(int fd, const char *s, size_t n)
{
        bench_write_all(fd, s, n);
}

void mcb_read_until(int fd, const char *end, size_t count)
{
        char buf[1 << 14]; /* threads read at the same time: not static */
        size_t n = strlen(end), seen = 0, match = 0;

        while (seen < count) {
                ssize_t r = read(fd, buf, sizeof(buf));

                if (r <= 0)
                        bench_die("read from memcached: %s", r == 0 ? "closed" : strerror(errno));
                for (ssize_t i = 0; i < r; i++) {
                        match = buf[i] == end[match] ? match + 1 : (buf[i] == end[0] ? 1 : 0);
                        if (match == n) {
                                seen++;
                                match = 0;
                        }
                }
        }
}

/*
 * The figure @name of memcached's @command ("stats", "stats items"), summed over the slab classes
 * where it is per class ("STAT items:CLS:@name N"); as a double, fractions kept.
 */
static double server_stat_sum(const char *command, const char *name)
{
        char line[256];
        size_t n = strlen(name);
        double sum = 0;
        int fd = mcb_connect();
        FILE *f;

        if (fd < 0)
                bench_die("cannot connect to memcached for its stats");
        f = fdopen(fd, "r");
        if (!f)
                bench_die("fdopen: %s", strerror(errno));
        mcb_write_all(fd, command, strlen(command));
        mcb_write_all(fd, "\r\n", 2);
        while (fgets(line, sizeof(line), f) && strncmp(line, "END", 3) != 0) {
                const char *key = line + 5, *end = strchr(key, ' ');

                if (strncmp(line, "STAT ", 5) != 0 || !end || (size_t)(end - key) < n ||
                    strncmp(end - n, name, n) != 0 || (end - n != key && end[-(ptrdiff_t)n - 1] != ':'))
                        continue;
                sum += strtod(end + 1, NULL);
        }
        fclose(f);
        return sum;
}

uint64_t mcb_server_stat(const char *name)
{
        return (uint64_t)server_stat_sum("stats", name);
}

double mcb_server_stat_double(const char *name)
{
        return server_stat_sum("stats", name);
}

uint64_t mcb_server_stat_items(const char *name)
{
        return (uint64_t)server_stat_sum("stats items", name);
}

/* ---- cacheaged ---- */

static const char *const watched[] = {
        "mc: refresh: ", "mc: dump: ", "mc: aged: ", "mc: rotation ", "Failed", "memcached at",
        NULL
};

void mcb_daemon_start(struct bench_child *d, struct bench_watch *w, const char *name,
                      const char *cache_lines, uint64_t watchdog_usec, bool sched_idle)
{
        char *conf;

        /* Rotations on the clock, not deferred by the load this very run puts on. */
        if (asprintf(&conf, "[daemon]\nplugin_dir = %s\nidle_cpu_pressure = 0\n"
                     "idle_memory_pressure = 0\n[cache mc]\nadapter = memcached\n"
                     "server = 127.0.0.1:%u\n%s",
                     bench_env("CA_ADAPTER_DIR"), mcb_port, cache_lines) < 0)
                bench_die("out of memory");
        bench_daemon_start(d, w, name, conf, watched, watchdog_usec, sched_idle);
        free(conf);
}
