/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loads and probes of bench/kernel.sh, each a mode of one small program so that the
 * script can put each into its memory cgroup (by writing its pid before exec):
 *
 *   kernel-load storm DIR RATE SECONDS [COUNT]
 *                                         stat() RATE unique missing names a second in DIR,
 *                                         for SECONDS or until COUNT names
 *   kernel-load hot DIR FILES PERIOD_MS [exact]
 *                                         make FILES files in DIR, then stat them all every
 *                                         PERIOD_MS until SIGTERM; prints how many of them
 *                                         were re-created (see below); SIGUSR1 sets the
 *                                         counts back to 0
 *   kernel-load restat DIR FILES          stat the files "hot" made in DIR once; prints the
 *                                         rise of nr_dentry across it (dentries re-created,
 *                                         where nothing else allocates meanwhile)
 *   kernel-load read FILE PERIOD_MS       read FILE whole every PERIOD_MS until SIGTERM (a
 *                                         service's own page cache, kept in use); prints the
 *                                         reads
 *   kernel-load sample PERIOD_MS          print "t_ms nr_dentry nr_negative" every PERIOD_MS
 *                                         until SIGTERM
 *   kernel-load drop EVERY_S SECONDS      write 2 to /proc/sys/vm/drop_caches every EVERY_S
 *                                         seconds (the first after EVERY_S) for SECONDS;
 *                                         prints the drops and the time they took
 *
 * Re-created dentries: the kernel does not say which dentry it allocates, so the hot set counts
 * its own: nr_dentry is read around each pass over its files; a pass that finds its files
 * cached allocates nothing of its own (the rise is others' activity, a few dozen at most in a
 * few milliseconds), one that finds them gone allocates one dentry a file. A pass whose rise
 * exceeds half the files counts that rise, at most FILES, as re-created. With "exact" (a quiet
 * kernel: the VM lab's guests) every rise counts, so that a few lost dentries show.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop, reset;

static void on_term(int sig)
{
        stop = 1;
}

static void on_usr1(int sig)
{
        reset = 1;
}

static uint64_t now_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void sleep_until(uint64_t t)
{
        uint64_t now = now_usec();

        if (t > now)
                usleep((useconds_t)(t - now));
}

static int dentry_state(uint64_t *nr_dentry, uint64_t *nr_negative)
{
        unsigned long long a, b, c, d, e;
        FILE *f = fopen("/proc/sys/fs/dentry-state", "re");
        int n;

        if (!f)
                return -1;
        n = fscanf(f, "%llu %llu %llu %llu %llu", &a, &b, &c, &d, &e);
        fclose(f);
        if (n != 5)
                return -1;
        *nr_dentry = a;
        *nr_negative = e;
        return 0;
}

static int storm(const char *dir, unsigned long rate, unsigned long seconds, uint64_t count)
{
        uint64_t t0 = now_usec(), end = t0 + seconds * 1000000ull, n = 0;
        char path[4096];
        struct stat st;

        while (!stop && now_usec() < end) {
                /* A batch every 10 ms, as many as the rate owes by now. */
                uint64_t owed = (now_usec() - t0) * rate / 1000000;

                if (count && owed > count)
                        owed = count;
                if (count && n >= count)
                        break;
                for (; n < owed; n++) {
                        snprintf(path, sizeof(path), "%s/m%" PRIu64, dir, n);
                        (void)stat(path, &st);
                }
                usleep(10000);
        }
        printf("%" PRIu64 "\n", n);
        return 0;
}

static int hot(const char *dir, unsigned long files, unsigned long period_ms, bool exact)
{
        uint64_t recreated = 0, passes = 0, next = now_usec();
        char path[4096];
        struct stat st;

        for (unsigned long i = 0; i < files; i++) {
                int fd;

                snprintf(path, sizeof(path), "%s/h%lu", dir, i);
                fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
                if (fd < 0) {
                        perror(path);
                        return 1;
                }
                close(fd);
        }
        while (!stop) {
                uint64_t d0, d1, n0, n1;

                if (dentry_state(&d0, &n0) < 0)
                        return 1;
                for (unsigned long i = 0; i < files; i++) {
                        snprintf(path, sizeof(path), "%s/h%lu", dir, i);
                        (void)stat(path, &st);
                }
                if (dentry_state(&d1, &n1) < 0)
                        return 1;
                if (reset) {
                        recreated = passes = 0;
                        reset = 0;
                } else if (d1 > d0 + (exact ? 0 : files / 2))
                        recreated += d1 - d0 > files ? files : d1 - d0;
                passes++;
                next += period_ms * 1000;
                sleep_until(next);
        }
        printf("%" PRIu64 " %" PRIu64 "\n", recreated, passes);
        return 0;
}

static int restat(const char *dir, unsigned long files)
{
        uint64_t d0, d1, n0, n1;
        char path[4096];
        struct stat st;

        if (dentry_state(&d0, &n0) < 0)
                return 1;
        for (unsigned long i = 0; i < files; i++) {
                snprintf(path, sizeof(path), "%s/h%lu", dir, i);
                (void)stat(path, &st);
        }
        if (dentry_state(&d1, &n1) < 0)
                return 1;
        printf("%" PRIu64 "\n", d1 > d0 ? d1 - d0 : 0);
        return 0;
}

static int read_loop(const char *file, unsigned long period_ms)
{
        uint64_t next = now_usec(), reads = 0;
        static char buf[1 << 16];

        while (!stop) {
                int fd = open(file, O_RDONLY | O_CLOEXEC);
                ssize_t n;

                if (fd < 0) {
                        perror(file);
                        return 1;
                }
                while ((n = read(fd, buf, sizeof(buf))) > 0)
                        ;
                close(fd);
                reads++;
                next += period_ms * 1000;
                sleep_until(next);
        }
        printf("%" PRIu64 "\n", reads);
        return 0;
}

static int sample(unsigned long period_ms)
{
        uint64_t t0 = now_usec(), next = t0, d, n;

        setvbuf(stdout, NULL, _IOLBF, 0);
        while (!stop) {
                if (dentry_state(&d, &n) < 0)
                        return 1;
                printf("%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", (now_usec() - t0) / 1000, d, n);
                next += period_ms * 1000;
                sleep_until(next);
        }
        return 0;
}

static int drop(unsigned long every_s, unsigned long seconds)
{
        uint64_t t0 = now_usec(), spent = 0, drops = 0;

        for (uint64_t t = every_s; !stop && t <= seconds; t += every_s) {
                uint64_t a;
                int fd;

                sleep_until(t0 + t * 1000000);
                if (stop)
                        break;
                a = now_usec();
                fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, "2", 1) != 1) {
                        perror("/proc/sys/vm/drop_caches");
                        return 1;
                }
                close(fd);
                spent += now_usec() - a;
                drops++;
        }
        printf("%" PRIu64 " %" PRIu64 "\n", drops, spent);
        return 0;
}

int main(int argc, char **argv)
{
        struct sigaction sa = { .sa_handler = on_term };

        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, NULL);
        if ((argc == 5 || argc == 6) && strcmp(argv[1], "storm") == 0)
                return storm(argv[2], strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10),
                             argc == 6 ? strtoull(argv[5], NULL, 10) : 0);
        if ((argc == 5 || argc == 6) && strcmp(argv[1], "hot") == 0)
                return hot(argv[2], strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10),
                           argc == 6 && strcmp(argv[5], "exact") == 0);
        if (argc == 4 && strcmp(argv[1], "restat") == 0)
                return restat(argv[2], strtoul(argv[3], NULL, 10));
        if (argc == 4 && strcmp(argv[1], "read") == 0)
                return read_loop(argv[2], strtoul(argv[3], NULL, 10));
        if (argc == 3 && strcmp(argv[1], "sample") == 0)
                return sample(strtoul(argv[2], NULL, 10));
        if (argc == 4 && strcmp(argv[1], "drop") == 0)
                return drop(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10));
        fprintf(stderr, "usage: kernel-load storm DIR RATE SECONDS [COUNT] | hot DIR FILES PERIOD_MS "
                        "[exact] | restat DIR FILES | read FILE PERIOD_MS | "
                        "sample PERIOD_MS | drop EVERY_S SECONDS\n");
        return 2;
}
