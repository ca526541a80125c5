/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-memcached: what aging a real memcached costs its users, in one run.
 *
 *   1. A memcached on 127.0.0.1 gets ITEMS items (default 1,000,000, 32-byte values); one in
 *      ten is fetched, so nine in ten are single-use.
 *   2. The real cacheaged (--bus none), run as its unit runs it (SCHED_IDLE), ages it with
 *      the memcached adapter, in CYCLES cycles (default 3) of two rotations: the first dumps
 *      everything (the never-fetched items are new: nothing due), the second dumps it again
 *      and deletes the never-fetched items (checked, then CAS-guarded). Between cycles the
 *      deleted items are set again.
 *   3. Meanwhile a client gets the fetched items, one request at a time, from another thread,
 *      and every latency is kept with its time. Its p99 while the adapter is idle (no rotation
 *      under way, no reload) is the baseline; its p99 during each rotation, and during every
 *      rotation of a kind together, and during the deletes alone, is reported against it
 *      (the goal is within 1.5x). One machine's scheduler noise moves a single window's p99
 *      by 2x; cycles pool the windows. The noise floor: idle windows as long as the
 *      rotations, pooled the same way, against the same baseline.
 *   4. Controls, before the daemon starts: a plain client reads the dump (3 times), then
 *      deletes the never-fetched items, as fast as the server answers; the client's p99
 *      meanwhile is what memcached itself costs it for that work, whoever asks for it.
 *   5. The daemon's loop: the adapter's longest step, how many of its steps ran longer than
 *      slice_time on the CPU, the longest aging slice (all from the daemon's log), and the
 *      longest gap between two watchdog pings, which the loop sends itself every
 *      WATCHDOG_USEC/2 (here 10 ms): a loop stuck for longer shows as a longer gap. At
 *      SCHED_IDLE the gaps are mostly other processes' time. A control after the daemon
 *      stops: how many units of plain arithmetic at SCHED_IDLE read over slice_time on their
 *      CPU clock on this machine.
 *
 * Nothing is asserted here about speed; the figures are printed, as ratios to the baseline
 * measured in the same run. --check (with a few items) makes a run that only checks that the
 * right items went, for the test suite.
 *
 * Environment: CACHEAGED (the daemon), CA_ADAPTER_DIR (memcached.so). Needs `memcached` in
 * PATH (Debian: memcached).
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "memcached-run.h"

#define VALUE_BYTES 32
#define FETCHED_EVERY 10           /* one item in ten is fetched */
#define LOAD_BATCH 1000            /* sets per write while loading */
#define WATCHDOG_USEC 20000        /* the daemon pings every 10 ms */
#define MAX_SAMPLES (64u << 20)    /* client latencies kept */
#define MAX_CYCLES 10          /* of loading, a dump, then a dump and deletes */

static int key(char *buf, size_t len, uint64_t i)
{
        return snprintf(buf, len, "bench:%08" PRIu64, i);
}

/*
 * Set every item (noreply, fenced by "mn"), then fetch one in FETCHED_EVERY; with @unfetched_only,
 * set again only the never-fetched ones (a new cas each: new items to the adapter) and fetch
 * nothing.
 */
static void load(uint64_t items, bool unfetched_only)
{
        char *batch = malloc(LOAD_BATCH * 128);
        char value[VALUE_BYTES + 1];
        int fd = mcb_connect();

        if (!batch || fd < 0)
                bench_die("cannot connect to memcached to load it");
        memset(value, 'v', VALUE_BYTES);
        value[VALUE_BYTES] = '\0';
        for (uint64_t i = 0; i < items; i += LOAD_BATCH) {
                size_t len = 0;

                for (uint64_t j = i; j < items && j < i + LOAD_BATCH; j++) {
                        if (unfetched_only && j % FETCHED_EVERY == 0)
                                continue;
                        len += (size_t)sprintf(batch + len, "set ");
                        len += (size_t)key(batch + len, 64, j);
                        len += (size_t)sprintf(batch + len, " 0 0 %d noreply\r\n%s\r\n",
                                               VALUE_BYTES, value);
                }
                mcb_write_all(fd, batch, len);
        }
        mcb_write_all(fd, "mn\r\n", 4);
        mcb_read_until(fd, "MN\r\n", 1);
        for (uint64_t i = 0; !unfetched_only && i < items; i += LOAD_BATCH * FETCHED_EVERY) {
                size_t len = (size_t)sprintf(batch, "get");

                for (uint64_t j = i; j < items && j < i + LOAD_BATCH * FETCHED_EVERY;
                     j += FETCHED_EVERY) {
                        batch[len++] = ' ';
                        len += (size_t)key(batch + len, 64, j);
                }
                len += (size_t)sprintf(batch + len, "\r\n");
                mcb_write_all(fd, batch, len);
                mcb_read_until(fd, "END\r\n", 1);
        }
        close(fd);
        free(batch);
}

/* How many of the items are still there, fetched ones and the others ("me": no touch). */
static void count_present(uint64_t items, uint64_t *ret_fetched, uint64_t *ret_other)
{
        char cmd[128], buf[256];
        int fd = mcb_connect();
        FILE *f;

        *ret_fetched = *ret_other = 0;
        if (fd < 0)
                bench_die("cannot connect to memcached to count");
        f = fdopen(fd, "r");
        for (uint64_t i = 0; i < items; i++) {
                size_t len = (size_t)sprintf(cmd, "me ");

                len += (size_t)key(cmd + len, 64, i);
                len += (size_t)sprintf(cmd + len, "\r\n");
                mcb_write_all(fd, cmd, len);
                if (!fgets(buf, sizeof(buf), f))
                        bench_die("no reply to me");
                if (strncmp(buf, "ME ", 3) == 0)
                        *(i % FETCHED_EVERY == 0 ? ret_fetched : ret_other) += 1;
        }
        fclose(f);
}

/* ---- the client: gets of fetched items, one at a time ---- */

struct client {
        uint64_t items;
        bool spin;             /* busy-wait between gets, not sleep */
        struct bench_samples s; /* its latencies, with their times */
        volatile bool stop;
        pthread_t thread;
};

static void *client_thread(void *userdata)
{
        struct client *c = userdata;
        uint64_t rng = 0x9e3779b97f4a7c15ULL, fetched = (c->items + FETCHED_EVERY - 1) / FETCHED_EVERY;
        char cmd[64];
        int fd = mcb_connect();

        if (fd < 0)
                bench_die("the client cannot connect");
        while (!c->stop && c->s.n < c->s.max) {
                uint64_t t0, i;
                size_t len;

                rng ^= rng >> 12;
                rng ^= rng << 25;
                rng ^= rng >> 27;
                i = (rng * 2685821657736338717ULL) % fetched * FETCHED_EVERY;
                len = (size_t)sprintf(cmd, "get ");
                len += (size_t)key(cmd + len, 32, i);
                len += (size_t)sprintf(cmd + len, "\r\n");
                t0 = bench_now_usec();
                mcb_write_all(fd, cmd, len);
                mcb_read_until(fd, "END\r\n", 1);
                bench_sample(&c->s, t0, bench_now_usec() - t0);
                /*
                 * About 10,000 gets a second: a steady client, not a load generator. It sleeps
                 * between them, as a client on another host costs this one no CPU meanwhile;
                 * --spin makes it a CPU-bound process of this host instead (on 2 cores, it
                 * leaves memcached and the daemon one core to share).
                 */
                if (c->spin) {
                        while (bench_now_usec() < t0 + 100)
                                ;
                } else if (bench_now_usec() < t0 + 100) {
                        struct timespec ts = { 0, (long)(t0 + 100 - bench_now_usec()) * 1000 };

                        nanosleep(&ts, NULL);
                }
        }
        close(fd);
        return NULL;
}

/* ---- the run ---- */

/*
 * The controls: what the same work costs the client without cacheaged, as fast as the server
 * answers. A dump read by a plain client (memcached's crawler writing it is most of the cost),
 * and the never-fetched items deleted by a plain client ("md KEY q", fenced by "mn" every
 * MD_BATCH), both on the same server, in the same run, before the daemon starts.
 */
#define CONTROL_DUMPS 3
#define MD_BATCH 512

static void control_dump(void)
{
        char line[1024];

        for (int tries = 0; tries < 600; tries++) {
                int fd = mcb_connect();
                FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;

                if (!f)
                        bench_die("the control cannot connect");
                mcb_write_all(fd, "lru_crawler metadump hash\r\n", 27);
                /* The crawler still busy with the last dump says BUSY: ask again. */
                if (fgets(line, sizeof(line), f) && strncmp(line, "BUSY", 4) == 0) {
                        fclose(f);
                        usleep(100000);
                        continue;
                }
                while (strcmp(line, "END\r\n") != 0)
                        if (!fgets(line, sizeof(line), f))
                                bench_die("the control's dump ended without END");
                fclose(f);
                return;
        }
        bench_die("memcached's crawler stayed busy for a minute");
}

static void control_delete(uint64_t items)
{
        char *batch = malloc(MD_BATCH * 64);
        size_t len = 0, n = 0;
        int fd = mcb_connect();

        if (!batch || fd < 0)
                bench_die("the control cannot connect");
        for (uint64_t i = 0; i < items; i++) {
                if (i % FETCHED_EVERY == 0)
                        continue;
                len += (size_t)sprintf(batch + len, "md ");
                len += (size_t)key(batch + len, 32, i);
                len += (size_t)sprintf(batch + len, " q\r\n");
                if (++n % MD_BATCH == 0 || i + 1 == items) {
                        len += (size_t)sprintf(batch + len, "mn\r\n");
                        mcb_write_all(fd, batch, len);
                        mcb_read_until(fd, "MN\r\n", 1);
                        len = 0;
                }
        }
        if (len) {
                mcb_write_all(fd, batch, len);
                mcb_write_all(fd, "mn\r\n", 4);
                mcb_read_until(fd, "MN\r\n", 1);
        }
        close(fd);
        free(batch);
}

struct rotation {
        uint64_t start, refreshed, end;   /* refresh asked, dump read, deletes settled */
        uint64_t dump_items, dump_ms, victims, round_ms, step_us, step_cpu_us, slice_us;
        uint64_t steps, steps_over, changed;
};

static void usage(void)
{
        printf("Usage: %s [OPTIONS]\n"
               "  --items N           items in memcached (default 1000000)\n"
               "  --cycles N          cycles of a dump, then a dump with deletes, the deleted\n"
               "                      items set again between cycles (default 3, at most %d)\n"
               "  --interval SECONDS  the cache's rotation interval (default 60)\n"
               "  --rate N            the adapter's rate key, items/s (default: its default)\n"
               "  --check             one cycle with few items: check that exactly the\n"
               "                      never-fetched items went (for the test suite)\n"
               "  --normal-priority   run the daemon at normal priority, not SCHED_IDLE\n"
               "  --spin              the client busy-waits between its gets (a CPU-bound\n"
               "                      process of this host), rather than sleeping\n"
               "  --memcached-option OPT\n"
               "                      start memcached with -o OPT (for example\n"
               "                      slab_automove=0)\n",
               bench_prog, MAX_CYCLES);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "items", required_argument, NULL, 'n' },
                { "cycles", required_argument, NULL, 'y' },
                { "interval", required_argument, NULL, 'i' },
                { "rate", required_argument, NULL, 'r' },
                { "check", no_argument, NULL, 'c' },
                { "normal-priority", no_argument, NULL, 'p' },
                { "spin", no_argument, NULL, 's' },
                { "memcached-option", required_argument, NULL, 'o' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        uint64_t items = 1000000, interval_s = 60, cycles = 3, rss_before, rss_after = 0;
        uint64_t fetched, other, slabs_moved, rescues, n_fetched;
        uint64_t units = 0, units_over = 0, unit_longest = 0;
        const char *rate = NULL, *mc_option = NULL;
        char mem_s[24], cache_lines[256], rate_line[64] = "";
        struct bench_child mcd = { .pid = -1 }, daemon = { .pid = -1 };
        struct client client = { 0 };
        struct bench_watch w = { 0 };
        struct rotation rot[2 * MAX_CYCLES] = { { 0 } };
        struct bench_span busy[3 * MAX_CYCLES + CONTROL_DUMPS + 2], kind[2][MAX_CYCLES];
        struct bench_span control[2][CONTROL_DUMPS], deletes[MAX_CYCLES];
        size_t n_busy = 0, n_rot;
        bool check = false, sched_idle = true;
        uint64_t t_start;
        int c;

        bench_prog = "bench-memcached";
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
                switch (c) {
                case 'n':
                        items = strtoull(optarg, NULL, 10);
                        break;
                case 'y':
                        cycles = strtoull(optarg, NULL, 10);
                        break;
                case 'i':
                        interval_s = strtoull(optarg, NULL, 10);
                        break;
                case 'r':
                        rate = optarg;
                        break;
                case 'o':
                        mc_option = optarg;
                        break;
                case 'c':
                        check = true;
                        break;
                case 'p':
                        sched_idle = false;
                        break;
                case 's':
                        client.spin = true;
                        break;
                case 'h':
                        usage();
                        return 0;
                default:
                        usage();
                        return 2;
                }
        if (items < FETCHED_EVERY || interval_s < 1 || cycles < 1 || cycles > MAX_CYCLES)
                bench_die("--items at least %d, --interval at least 1, --cycles 1 to %d", FETCHED_EVERY,
                    MAX_CYCLES);
        if (check)
                cycles = 1;
        n_rot = 2 * cycles;
        n_fetched = (items + FETCHED_EVERY - 1) / FETCHED_EVERY;
        if (rate)
                snprintf(rate_line, sizeof(rate_line), "rate = %s\n", rate);
        signal(SIGPIPE, SIG_IGN);
        snprintf(mem_s, sizeof(mem_s), "%" PRIu64, items / 4000 + 64); /* MiB, ample */
        {
                const char *args[] = { "-m", mem_s, mc_option ? "-o" : NULL, mc_option, NULL };

                mcb_memcached_start(&mcd, args);
        }
        t_start = bench_now_usec();
        load(items, false);
        printf("memcached: %" PRIu64 " items loaded (%" PRIu64 " fetched) in %.1f s\n", items,
               n_fetched, (double)(bench_now_usec() - t_start) / 1e6);

        client.items = items;
        bench_samples_init(&client.s, MAX_SAMPLES);
        if (!check) {
                if (pthread_create(&client.thread, NULL, client_thread, &client) != 0)
                        bench_die("thread");
                usleep(2000000); /* an idle stretch first */
                for (size_t d = 0; d < CONTROL_DUMPS; d++) {
                        control[0][d].from = bench_now_usec();
                        control_dump();
                        control[0][d].to = bench_now_usec();
                        busy[n_busy++] = (struct bench_span){ control[0][d].from,
                                                        control[0][d].to + 500000 };
                        usleep(1000000);
                }
                control[1][0].from = bench_now_usec();
                control_delete(items);
                control[1][0].to = bench_now_usec();
                busy[n_busy++] = (struct bench_span){ control[1][0].from, control[1][0].to + 500000 };
                t_start = bench_now_usec();
                load(items, true);
                busy[n_busy++] = (struct bench_span){ t_start, bench_now_usec() + 500000 };
                usleep(1000000);
        }

        /* The daemon, with a notify socket of ours for READY=1 and its watchdog pings. */
        snprintf(cache_lines, sizeof(cache_lines), "interval = %" PRIu64 "s\nmax_items = %" PRIu64
                 "\n%s", interval_s, items, rate_line);
        mcb_daemon_start(&daemon, &w, "cacheaged", cache_lines, WATCHDOG_USEC, sched_idle);
        rss_before = bench_rss_kib(daemon.pid);

        for (size_t r = 0; r < n_rot; r++) {
                uint64_t timeout = (interval_s + 600) * 1000000;
                ssize_t i, j, k;
                char nth[32];

                i = bench_wait_event(&w, "mc: refresh: ", r + 1, timeout);
                j = bench_wait_event(&w, "mc: dump: ", r + 1, timeout);
                snprintf(nth, sizeof(nth), "mc: rotation %zu done", r + 1);
                k = bench_wait_event(&w, nth, 1, timeout);
                if (i < 0 || j < 0 || k < 0)
                        bench_die("rotation %zu did not happen (see %s)", r + 1, w.log_path);
                rot[r].start = w.events[i].t_usec;
                rot[r].refreshed = w.events[j].t_usec;
                rot[r].dump_items = bench_field_after(w.events[j].line, "dump: ");
                rot[r].dump_ms = bench_field_after(w.events[j].line, " items in ");
                rot[r].slice_us = bench_field_after(w.events[k].line, "longest slice ");
                /* Aged: the host's slices done and the last delete settled. */
                k = bench_wait_event(&w, "mc: aged: ", r + 1, timeout);
                if (k < 0)
                        bench_die("rotation %zu was not aged (see %s)", r + 1, w.log_path);
                rot[r].end = w.events[k].t_usec;
                rot[r].victims = bench_field_after(w.events[k].line, "mc: aged: ");
                rot[r].round_ms = bench_field_after(w.events[k].line, " victims checked and settled in ");
                rot[r].step_us = bench_field_after(w.events[k].line, "longest step ");
                rot[r].step_cpu_us = bench_field_after(w.events[k].line, " us (");
                rot[r].steps_over = bench_field_after(w.events[k].line, "on the CPU), ");
                rot[r].steps = bench_field_after(w.events[k].line, " of ");
                rot[r].changed = bench_field_after(w.events[k].line, " cas conflicts, ");
                busy[n_busy++] = (struct bench_span){ rot[r].start, rot[r].end + 500000 };
                kind[r % 2][r / 2] = busy[n_busy - 1];
                if (r % 2 == 1)
                        deletes[r / 2] = (struct bench_span){ rot[r].refreshed, rot[r].end + 500000 };
                if (r == 0)
                        rss_after = bench_rss_kib(daemon.pid);
                if (r % 2 == 1 && r + 1 < n_rot) {
                        /* The deleted items again, before the next rotation: a new cycle. */
                        uint64_t t0 = bench_now_usec();

                        load(items, true);
                        busy[n_busy++] = (struct bench_span){ t0, bench_now_usec() + 500000 };
                        if (bench_now_usec() >= rot[r].start + interval_s * 1000000)
                                fprintf(stderr, "%s: reloading ran into rotation %zu: use a "
                                        "longer --interval\n", bench_prog, r + 2);
                }
        }
        /* A baseline after the rotations too: from the end of the last, for a while. */
        if (!check) {
                uint64_t last = rot[n_rot - 1].end - rot[n_rot - 1].start;

                usleep((useconds_t)(last < 3000000 ? 3000000 : last));
        }
        client.stop = true;
        if (!check)
                pthread_join(client.thread, NULL);
        bench_daemon_stop(&daemon, &w);
        if (!check)
                bench_control_units(&units, &units_over, &unit_longest);
        count_present(items, &fetched, &other);
        slabs_moved = mcb_server_stat("slabs_moved");
        rescues = mcb_server_stat("slab_reassign_rescues");
        bench_child_stop(&mcd);

        printf("cacheaged: slice_time 2ms (default), %s, rate %s; the client %s between gets\n",
               sched_idle ? "run at SCHED_IDLE as its unit runs it" : "at normal priority",
               rate ? rate : "default", client.spin ? "spins" : "sleeps");
        for (size_t r = 0; r < n_rot; r++) {
                printf("rotation %zu: dump of %" PRIu64 " items in %" PRIu64 " ms (%.0f items/s), "
                       "refresh to aged in %.0f ms",
                       r + 1, rot[r].dump_items, rot[r].dump_ms,
                       rot[r].dump_ms ? (double)rot[r].dump_items * 1000 / (double)rot[r].dump_ms : 0,
                       (double)(rot[r].end - rot[r].start) / 1000);
                if (rot[r].victims)
                        printf("; %" PRIu64 " victims checked and deleted in %" PRIu64
                               " ms from the rotation (%.0f items/s)", rot[r].victims, rot[r].round_ms,
                               rot[r].round_ms ? (double)rot[r].victims * 1000 /
                                                         (double)rot[r].round_ms : 0);
                printf("\n");
        }
        printf("left after the last cycle: %" PRIu64 " of %" PRIu64 " never-fetched items; "
               "fetched items left: %" PRIu64 " of %" PRIu64 "\n", other, items - n_fetched,
               fetched, n_fetched);
        printf("kept as changed since the dump (new cas), all cycles: %" PRIu64 " victims; "
               "memcached's slab mover moved %" PRIu64 " pages, relinking %" PRIu64 " items with "
               "a new cas\n", rot[n_rot - 1].changed, slabs_moved, rescues);
        printf("daemon RSS: %" PRIu64 " KiB before, %" PRIu64 " KiB with %" PRIu64
               " items tracked: %.0f bytes per item\n", rss_before, rss_after, items,
               (double)(rss_after - rss_before) * 1024 / (double)items);
        if (!check) {
                /* Baseline: every get sent while the adapter was idle and no reload ran. */
                struct bench_pct idle = bench_percentiles_of(&client.s, busy, n_busy, false);
                uint32_t base = idle.p99 ? idle.p99 : 1;
                static const char *const kind_name[] = { "dump only", "dump and deletes" };
                uint64_t steps = 0, over = 0, cpu_max = 0;

                printf("client get latency, adapter idle (baseline): p50 %u us, p99 %u us, max %u us "
                       "(%zu gets)\n", idle.p50, idle.p99, idle.max, idle.n);
                {
                        /*
                         * The noise floor: idle windows as long as the rotations, one 1.5 s after
                         * each ends, pooled as the rotations are. The machine's own moods (a
                         * host stealing the virtual CPUs for seconds) move their ratio as they
                         * move the rotations'.
                         */
                        struct bench_span null[2 * MAX_CYCLES];
                        struct bench_pct p;

                        for (size_t r = 0; r < n_rot; r++)
                                null[r] = (struct bench_span){ rot[r].end + 1500000, rot[r].end + 1500000 +
                                                         (rot[r].end - rot[r].start) };
                        p = bench_percentiles_where(&client.s, null, n_rot, busy, n_busy);
                        printf("client get latency, idle windows as long as the rotations (the noise "
                               "floor): p50 %u us, p99 %u us (%.2fx the baseline), max %u us (%zu "
                               "gets)\n", p.p50, p.p99, (double)p.p99 / base, p.max, p.n);
                }
                for (size_t r = 0; r < n_rot; r++) {
                        struct bench_pct p = bench_percentiles(&client.s, rot[r].start, rot[r].end);

                        printf("client get latency, rotation %zu (%s): p50 %u us, p99 %u us "
                               "(%.2fx), max %u us (%zu gets)\n", r + 1, kind_name[r % 2], p.p50,
                               p.p99, (double)p.p99 / base, p.max, p.n);
                }
                for (size_t k = 0; k < 2; k++) {
                        struct bench_pct p = bench_percentiles_of(&client.s, kind[k], cycles, true);
                        struct bench_pct q = bench_percentiles_of(&client.s, control[k],
                                                      k == 0 ? CONTROL_DUMPS : 1, true);

                        printf("client get latency, every rotation with %s: p50 %u us, p99 %u us "
                               "(%.2fx the baseline), max %u us (%zu gets)\n", kind_name[k],
                               p.p50, p.p99, (double)p.p99 / base, p.max, p.n);
                        if (k == 1) {
                                /* The same rotations from the dump read on: the deletes alone. */
                                p = bench_percentiles_of(&client.s, deletes, cycles, true);
                                printf("client get latency, their deletes alone: p50 %u us, p99 %u "
                                       "us (%.2fx the baseline), max %u us (%zu gets)\n", p.p50,
                                       p.p99, (double)p.p99 / base, p.max, p.n);
                        }
                        printf("client get latency, control (%s, no cacheaged): p50 %u us, "
                               "p99 %u us (%.2fx the baseline; the adapter's rotations %.2fx "
                               "the control), max %u us (%zu gets)\n",
                               k == 0 ? "a plain client reads the dump, 3 times"
                                      : "a plain client deletes the never-fetched items",
                               q.p50, q.p99, (double)q.p99 / base,
                               (double)p.p99 / (q.p99 ? q.p99 : 1), q.max, q.n);
                }
                for (size_t r = 0; r < n_rot; r++) {
                        printf("loop, rotation %zu: adapter's longest step %" PRIu64 " us (%" PRIu64
                               " us on the CPU), %" PRIu64 " of %" PRIu64 " steps over slice_time "
                               "on the CPU, longest aging slice %" PRIu64 " us, longest gap "
                               "between watchdog pings %.1f ms (sent every %d ms)\n", r + 1,
                               rot[r].step_us, rot[r].step_cpu_us, rot[r].steps_over, rot[r].steps,
                               rot[r].slice_us,
                               (double)bench_longest_gap(&w, rot[r].start, rot[r].end) / 1000,
                               WATCHDOG_USEC / 2000);
                        steps += rot[r].steps;
                        over += rot[r].steps_over;
                        if (rot[r].step_cpu_us > cpu_max)
                                cpu_max = rot[r].step_cpu_us;
                }
                printf("loop, all rotations: %" PRIu64 " of %" PRIu64 " adapter steps over "
                       "slice_time on the CPU (%.3f%%), longest %" PRIu64 " us\n", over, steps,
                       steps ? 100.0 * (double)over / (double)steps : 0.0, cpu_max);
                printf("loop, adapter idle: longest gap between watchdog pings %.1f ms\n",
                       (double)bench_longest_gap(&w, 0, rot[0].start) / 1000);
                printf("loop, control (no daemon: a thread at SCHED_IDLE doing %d us units of "
                       "arithmetic for %d s): %" PRIu64 " of %" PRIu64 " units over slice_time on "
                       "its CPU clock (%.3f%%), longest %" PRIu64 " us\n", BENCH_UNIT_USEC,
                       BENCH_CONTROL_UNITS_SEC, units_over, units,
                       units ? 100.0 * (double)units_over / (double)units : 0.0, unit_longest);
        }
        free(client.s.v);
        bench_watch_free(&w);
        if (check && (other != 0 || fetched != n_fetched)) {
                fprintf(stderr, "%s: expected every never-fetched item gone and every fetched one "
                        "left\n", bench_prog);
                return 1;
        }
        return 0;
}
