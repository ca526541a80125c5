/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The loads and probes of bench/kernel.sh, each a mode of one small program so that the
 * script can put each into its memory cgroup (by writing its pid before exec):
 *
 *   kernel-load storm DIR RATE SECONDS [COUNT]
 *                                         stat() RATE unique missing names a second in DIR,
 *                                         for SECONDS or until COUNT names
 *   kernel-load hot DIR FILES PERIOD_MS [exact] [nocount] [lock=FILE]
 *                                         make FILES files in DIR, then stat them all every
 *                                         PERIOD_MS until SIGTERM; prints how many of them
 *                                         were re-created (see below), the passes, and the
 *                                         p99 of one stat() in ns; SIGUSR1 sets the counts
 *                                         back to 0. With "nocount" it reads no dentry-state
 *                                         (prints 0 re-created): a kprobe counts its
 *                                         allocations, and its only lookups are its files'
 *   kernel-load restat DIR N [PREFIX [nocount]]
 *                                         stat DIR/PREFIXi for i < N once (PREFIX "h": the
 *                                         files "hot" made; "m": the names "storm" missed);
 *                                         prints the rise of nr_dentry across it (dentries
 *                                         made again, where nothing else allocates meanwhile),
 *                                         or with "nocount" (no dentry-state read) the names
 *                                         found
 *   kernel-load read FILE PERIOD_MS       read FILE whole every PERIOD_MS until SIGTERM (a
 *                                         service's own page cache, kept in use); prints the
 *                                         reads
 *   kernel-load sample PERIOD_MS          print "t_ms nr_dentry nr_negative" every PERIOD_MS
 *                                         until SIGTERM
 *   kernel-load drop EVERY_S SECONDS      write 2 to /proc/sys/vm/drop_caches every EVERY_S
 *                                         seconds (the first after EVERY_S) for SECONDS;
 *                                         prints the drops and the time they took
 *   kernel-load reclaim PERIOD_MS ROUNDS AMOUNT FILE...
 *                                         write AMOUNT to each FILE (memory.reclaim) in turn
 *                                         every PERIOD_MS (the first round after PERIOD_MS),
 *                                         ROUNDS times (0: until SIGTERM); prints the rounds,
 *                                         the writes, those refused with EAGAIN (less was
 *                                         reclaimable), other errors and the time in writes (us)
 *   kernel-load knob PERIOD_US            read /proc/sys/vm/vfs_cache_pressure every PERIOD_US
 *                                         until SIGTERM; a value other than the first one read
 *                                         is "raised". Prints the samples, the windows raised,
 *                                         the time raised and the longest window (us, each
 *                                         from the last sample at the first value before it
 *                                         to the first one after: an upper bound), the longest
 *                                         gap between two samples (us: the bound's slack), the
 *                                         first value, the highest seen, and the time in gaps
 *                                         over 10 ms (us: when it was not looking; a window
 *                                         there can be missed), then the time and longest
 *                                         window above the first value (us: raised, as a
 *                                         sweep does; the rest were lowered, as a trim does)
 *   kernel-load gated MODE ARGS...        MODE, after printing "ready" and reading a line (or
 *                                         EOF) on stdin: what a kprobe counts of the process
 *                                         before is its start (exec, the loader's lookups),
 *                                         after it MODE's own work
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
 * @count: false when a kprobe counts the allocations: then the process reads no dentry-state,
 * whose /proc dentries a reclaim can take too and would count as the hot set's.
 */
static int hot(const char *dir, unsigned long files, unsigned long period_ms, bool exact,
               bool count, const char *lock)
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
                uint64_t d0 = 0, d1 = 0, n0, n1;

                if (lfd >= 0 && flock(lfd, LOCK_EX) < 0) {
                        if (errno == EINTR)
                                continue;
                        perror("flock");
                        return 1;
                }
                if (count && dentry_state(&d0, &n0) < 0)
                        return 1;
                for (unsigned long i = 0; i < files; i++) {
                        uint64_t t;

                        snprintf(path, sizeof(path), "%s/h%lu", dir, i);
                        t = now_nsec();
                        (void)stat(path, &st);
                        lat[lat_bucket(now_nsec() - t)]++;
                }
                if (count && dentry_state(&d1, &n1) < 0)
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

static int restat(const char *dir, unsigned long files, const char *prefix, bool count)
{
        uint64_t d0, d1, n0, n1, found = 0;
        char path[4096];
        struct stat st;

        if (count && dentry_state(&d0, &n0) < 0)
                return 1;
        for (unsigned long i = 0; i < files; i++) {
                snprintf(path, sizeof(path), "%s/%s%lu", dir, prefix, i);
                found += stat(path, &st) == 0;
        }
        if (!count) {
                printf("%" PRIu64 "\n", found);
                return 0;
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

static uint64_t parse_size(const char *s)
{
        char *end;
        uint64_t n = strtoull(s, &end, 10);

        switch (*end) {
        case 'K':
                return n << 10;
        case 'M':
                return n << 20;
        case 'G':
                return n << 30;
        default:
                return n;
        }
}

/* A bare loop over memory cgroups (or another tool's reclaim of a neighbour). */
static int reclaim(unsigned long period_ms, uint64_t max_rounds, const char *amount, char **files,
                   int n_files)
{
        uint64_t next = now_usec(), spent = 0, rounds = 0, writes = 0, eagain = 0, errors = 0;
        char text[32];
        int len = snprintf(text, sizeof(text), "%" PRIu64, parse_size(amount));

        while (!stop && (!max_rounds || rounds < max_rounds)) {
                next += period_ms * 1000;
                sleep_until(next);
                for (int i = 0; i < n_files && !stop; i++) {
                        uint64_t a = now_usec();
                        int fd = open(files[i], O_WRONLY | O_CLOEXEC);

                        if (fd < 0) {
                                errors++;
                                continue;
                        }
                        if (write(fd, text, (size_t)len) == len)
                                writes++;
                        else if (errno == EAGAIN)
                                eagain++;
                        else if (errno != EINTR)
                                errors++;
                        close(fd);
                        spent += now_usec() - a;
                }
                rounds++;
        }
        printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", rounds, writes,
               eagain, errors, spent);
        return 0;
}

static int knob_read(int fd, long *ret)
{
        char buf[32];
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        if (n <= 0)
                return -1;
        buf[n] = 0;
        *ret = strtol(buf, NULL, 10);
        return 0;
}

#define KNOB_BLIND_USEC 10000 /* a gap between two samples longer than this: not looking */

/*
 * Windows of samples for which a condition held, each from the last sample before it to the
 * first one after (an upper bound): how many, their time in all, the longest.
 */
struct knob_windows {
        bool in;
        uint64_t since, count, usec, longest;
};

static void knob_window_end(struct knob_windows *w, uint64_t t)
{
        w->usec += t - w->since;
        if (t - w->since > w->longest)
                w->longest = t - w->since;
}

static void knob_window_sample(struct knob_windows *w, bool holds, uint64_t t)
{
        if (holds && !w->in) {
                w->in = true;
                w->count++;
        } else if (!holds && w->in) {
                w->in = false;
                knob_window_end(w, t);
        }
        if (!w->in)
                w->since = t;
}

/*
 * vm.vfs_cache_pressure as the rest of the host sees it: every reclaim reads it when it counts
 * the slab, so what matters is how long it stayed raised, whoever raised it.
 */
static int knob(unsigned long period_us)
{
        struct knob_windows changed = { 0 }, above = { 0 }; /* other than the first, above it */
        uint64_t samples = 0, gap = 0, blind = 0, last = 0;
        long base, v, highest;
        int fd = open("/proc/sys/vm/vfs_cache_pressure", O_RDONLY | O_CLOEXEC);

        if (fd < 0 || knob_read(fd, &base) < 0) {
                perror("/proc/sys/vm/vfs_cache_pressure");
                return 1;
        }
        highest = base;
        last = changed.since = above.since = now_usec();
        while (!stop) {
                uint64_t t;

                if (knob_read(fd, &v) < 0)
                        return 1;
                t = now_usec();
                samples++;
                if (t - last > gap)
                        gap = t - last;
                if (t - last > KNOB_BLIND_USEC)
                        blind += t - last;
                last = t;
                if (v > highest)
                        highest = v;
                knob_window_sample(&changed, v != base, t);
                knob_window_sample(&above, v > base, t);
                usleep((useconds_t)period_us);
        }
        /* Still in a window at the end: counted up to the last sample. */
        if (changed.in)
                knob_window_end(&changed, last);
        if (above.in)
                knob_window_end(&above, last);
        printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %ld %ld %" PRIu64
               " %" PRIu64 " %" PRIu64 "\n",
               samples, changed.count, changed.usec, changed.longest, gap, base, highest, blind,
               above.usec, above.longest);
        return 0;
}

/* Start when told: "ready" on stdout, then a line or EOF on stdin. */
static int gate(void)
{
        char c;

        printf("ready\n");
        fflush(stdout);
        while (read(STDIN_FILENO, &c, 1) == 1 && c != '\n')
                ;
        return 0;
}

int main(int argc, char **argv)
{
        struct sigaction sa = { .sa_handler = on_term };

        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, NULL);
        if (argc >= 3 && strcmp(argv[1], "gated") == 0) {
                gate();
                argv++;
                argc--;
        }
        if ((argc == 5 || argc == 6) && strcmp(argv[1], "storm") == 0)
                return storm(argv[2], strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10),
                             argc == 6 ? strtoull(argv[5], NULL, 10) : 0);
        if (argc >= 5 && argc <= 8 && strcmp(argv[1], "hot") == 0) {
                bool exact = false, count = true;
                const char *lock = NULL;

                for (int i = 5; i < argc; i++) {
                        if (strcmp(argv[i], "exact") == 0)
                                exact = true;
                        else if (strcmp(argv[i], "nocount") == 0)
                                count = false;
                        else if (strncmp(argv[i], "lock=", 5) == 0)
                                lock = argv[i] + 5;
                }
                return hot(argv[2], strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10),
                           exact, count, lock);
        }
        if (argc >= 4 && argc <= 6 && strcmp(argv[1], "restat") == 0)
                return restat(argv[2], strtoul(argv[3], NULL, 10), argc >= 5 ? argv[4] : "h",
                              !(argc == 6 && strcmp(argv[5], "nocount") == 0));
        if (argc == 4 && strcmp(argv[1], "read") == 0)
                return read_loop(argv[2], strtoul(argv[3], NULL, 10));
        if (argc == 3 && strcmp(argv[1], "sample") == 0)
                return sample(strtoul(argv[2], NULL, 10));
        if (argc == 4 && strcmp(argv[1], "drop") == 0)
                return drop(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10));
        if (argc >= 6 && strcmp(argv[1], "reclaim") == 0)
                return reclaim(strtoul(argv[2], NULL, 10), strtoull(argv[3], NULL, 10), argv[4],
                               argv + 5, argc - 5);
        if (argc == 3 && strcmp(argv[1], "knob") == 0)
                return knob(strtoul(argv[2], NULL, 10));
        fprintf(stderr, "usage: kernel-load [gated] MODE: storm DIR RATE SECONDS [COUNT] | "
                        "hot DIR FILES PERIOD_MS [exact] [nocount] [lock=FILE] | "
                        "restat DIR N [PREFIX [nocount]] | read FILE PERIOD_MS | "
                        "sample PERIOD_MS | drop EVERY_S SECONDS | "
                        "reclaim PERIOD_MS ROUNDS AMOUNT FILE... | knob PERIOD_US\n");
        return 2;
}
