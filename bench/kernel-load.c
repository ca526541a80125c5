/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loads and probes of bench/kernel.sh, each a mode of one small program so that the
 * script can put each into its memory cgroup (by writing its pid before exec):
 *
 *   kernel-load storm DIR RATE SECONDS [COUNT]
 *                                         stat() RATE unique missing names a second in DIR,
 *                                         for SECONDS or until COUNT names
 *   kernel-load hot DIR FILES PERIOD_MS [exact] [lock=FILE]
 *                                         make FILES files in DIR, then stat them all every
 *                                         PERIOD_MS until SIGTERM; prints how many of them
 *                                         were re-created (see below), the passes, and the
 *                                         p99 of one stat() in ns; SIGUSR1 sets the counts
 *                                         back to 0
 *   kernel-load restat DIR N [PREFIX]     stat DIR/PREFIXi for i < N once (PREFIX "h": the
 *                                         files "hot" made; "m": the names "storm" missed);
 *                                         prints the rise of nr_dentry across it (dentries
 *                                         made again, where nothing else allocates meanwhile)
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
#include <sys/file.h>
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

#define HOT_GAP_USEC 10000 /* the least pause between two passes of a hot set */

/* Latencies in buckets of 1/8 of a power of two (ns): a p99 within 9%, in 512 counters. */
#define LAT_BUCKETS 512

static unsigned lat_bucket(uint64_t ns)
{
        unsigned log = 0, b;

        while (log < 63 && (ns >> (log + 1)))
                log++;
        b = log * 8 + (log >= 3 ? (unsigned)((ns >> (log - 3)) & 7) : 0);
        return b < LAT_BUCKETS ? b : LAT_BUCKETS - 1;
}

static uint64_t lat_value(unsigned b)
{
        unsigned log = b / 8;

        return log >= 3 ? ((uint64_t)8 + b % 8) << (log - 3) : (uint64_t)1 << log;
}

static uint64_t lat_quantile(const uint64_t *h, double q)
{
        uint64_t n = 0, seen = 0;

        for (unsigned b = 0; b < LAT_BUCKETS; b++)
                n += h[b];
        for (unsigned b = 0; b < LAT_BUCKETS; b++) {
                seen += h[b];
                if (n && (double)seen >= q * (double)n)
                        return lat_value(b);
        }
        return 0;
}

static uint64_t now_nsec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/*
 * @lock: a file the hot sets of a run all lock around a pass, so that in a quiet kernel the
 * dentries one pass allocates are its own (two passes at once would count each other's).
 */
static int hot(const char *dir, unsigned long files, unsigned long period_ms, bool exact,
               const char *lock)
{
        uint64_t recreated = 0, passes = 0, next = now_usec();
        static uint64_t lat[LAT_BUCKETS];
        char path[4096];
        struct stat st;
        int lfd = -1;

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
        if (lock) {
                lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
                if (lfd < 0) {
                        perror(lock);
                        return 1;
                }
        }
        while (!stop) {
                uint64_t d0, d1, n0, n1;

                if (lfd >= 0 && flock(lfd, LOCK_EX) < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("flock");
                        return 1;
                }
                if (dentry_state(&d0, &n0) < 0)
                        return 1;
                for (unsigned long i = 0; i < files; i++) {
                        uint64_t t;

                        snprintf(path, sizeof(path), "%s/h%lu", dir, i);
                        t = now_nsec();
                        (void)stat(path, &st);
                        lat[lat_bucket(now_nsec() - t)]++;
                }
                if (dentry_state(&d1, &n1) < 0)
                        return 1;
                if (lfd >= 0)
                        flock(lfd, LOCK_UN);
                if (reset) {
                        recreated = passes = 0;
                        memset(lat, 0, sizeof(lat));
                        reset = 0;
                } else if (d1 > d0 + (exact ? 0 : files / 2)) {
                        recreated += d1 - d0 > files ? files : d1 - d0;
                }
                passes++;
                /* Behind time (a slow machine): a short pause still, so that the other hot
                   sets get the lock (flock is not fair). */
                next += period_ms * 1000;
                if (next < now_usec() + HOT_GAP_USEC)
                        next = now_usec() + HOT_GAP_USEC;
                sleep_until(next);
        }
        printf("%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", recreated, passes, lat_quantile(lat, 0.99));
        return 0;
}

static int restat(const char *dir, unsigned long files, const char *prefix)
{
        uint64_t d0, d1, n0, n1;
        char path[4096];
        struct stat st;

        if (dentry_state(&d0, &n0) < 0)
                return 1;
        for (unsigned long i = 0; i < files; i++) {
                snprintf(path, sizeof(path), "%s/%s%lu", dir, prefix, i);
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
        if (argc >= 5 && argc <= 7 && strcmp(argv[1], "hot") == 0) {
                bool exact = false;
                const char *lock = NULL;

                for (int i = 5; i < argc; i++) {
                        if (strcmp(argv[i], "exact") == 0)
                                exact = true;
                        else if (strncmp(argv[i], "lock=", 5) == 0)
                                lock = argv[i] + 5;
                }
                return hot(argv[2], strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10),
                           exact, lock);
        }
        if ((argc == 4 || argc == 5) && strcmp(argv[1], "restat") == 0)
                return restat(argv[2], strtoul(argv[3], NULL, 10), argc == 5 ? argv[4] : "h");
        if (argc == 4 && strcmp(argv[1], "read") == 0)
                return read_loop(argv[2], strtoul(argv[3], NULL, 10));
        if (argc == 3 && strcmp(argv[1], "sample") == 0)
                return sample(strtoul(argv[2], NULL, 10));
        if (argc == 4 && strcmp(argv[1], "drop") == 0)
                return drop(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10));
        fprintf(stderr, "usage: kernel-load storm DIR RATE SECONDS [COUNT] | hot DIR FILES PERIOD_MS "
                        "[exact] [lock=FILE] | restat DIR N [PREFIX] | read FILE PERIOD_MS | "
                        "sample PERIOD_MS | drop EVERY_S SECONDS\n");
        return 2;
}
