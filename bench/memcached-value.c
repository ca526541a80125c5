/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-memcached-value: what aging a memcached is worth to its users, against memcached alone,
 * in one run and one table.
 *
 * A real memcached with a memory limit (-m, default 16 MiB: about 14,000 items of the values
 * here) much smaller than what the workload sets in a run, under a client that does what cache
 * clients do, on a clock compressed to seconds:
 *
 *   hot        --hot keys (default 1,000), each read once every --hot-period seconds (default
 *              the interval); a miss is set again at once (cache-aside);
 *   one-shot   --one-shot keys a second (default 1,000) set and never read;
 *   late       --late keys a second (default 200) set, then first read (single_use_age + 2) x
 *              interval seconds later, once: longer than the adapter keeps an unread item; a
 *              miss is set again (and never read again).
 *
 * Each of four variants on a fresh memcached: its default segmented LRU and its plain LRU
 * (`-o no_lru_maintainer`, which turns the segmented LRU off with it: `stats settings` says
 * lru_segmented no), each alone and with the real cacheaged (--bus none, at SCHED_IDLE as its
 * unit runs it) ageing it with the memcached adapter at --interval (default 2 s),
 * single_use_age 2, max_age 8 (the defaults). The workload runs --seconds (default 60), the
 * hit rates count from --warmup on (default 20 s: the memory is full by then); then a drain of
 * (single_use_age + 2) intervals with only the hot reads and the late reads still due.
 *
 * Who removed what: memcached reports its evictions, key by key, on a `watch evictions`
 * connection (with the time); an item gone that memcached did not evict was deleted by the
 * adapter, whose deletes memcached counts (delete_hits: the client deletes nothing). What the
 * adapter deleted of each kind: of the one-shot and late keys from the items themselves, of the
 * hot keys what is left of memcached's count. The check at the end: every eviction memcached
 * counted was seen on the watch or counted as dropped by its logger (log_worker_dropped, under a
 * flood), and no more items are gone unnamed than those dropped lines and what memcached loses
 * without a line (items its slab mover could not rescue, sets refused for memory).
 *
 * Memory: memcached's RSS (and its high-water mark) at the end of the workload and after the
 * drain, against the bytes its items hold: memcached keeps the slab pages it once took, so
 * what the adapter deletes goes back to memcached's free lists, not to the system.
 *
 * Benchmarks report: the exit status is 0 unless something failed to run, or, with --check, the
 * accounting does not close or the adapter deleted a hot key.
 *
 * Environment: CACHEAGED (the daemon), CA_ADAPTER_DIR (memcached.so). Needs `memcached` in PATH.
 */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "memcached-run.h"

#define SINGLE_USE_AGE 2          /* rotations: the daemon's default */
#define MAX_AGE 8                 /* rotations: the daemon's default */
#define TICK_USEC 100000          /* the client's step */
#define GET_BATCH 100             /* keys per "get" */
#define KEY_MAX 32

struct params {
        unsigned memory_mib, value_bytes, hot, hot_period_s, interval_s, seconds, warmup_s;
        unsigned one_shot_per_s, late_per_s;
        bool sched_idle;
};

/* A late key: set once, read once after the delay. */
struct late {
        uint64_t set_usec;        /* monotonic */
        uint64_t read_wall_usec;  /* when its read was sent (0: not read yet) */
        uint64_t first_evict_ts, last_evict_ts; /* memcached's ts= of its evictions (0: none) */
        bool hit, measured;       /* found; read within the measured window */
};

/* What one variant measured. */
struct variant {
        const char *lru;          /* "segmented" or "plain" */
        bool adapter;
        uint64_t hot_reads, hot_hits, hot_misses_all, hot_evictions;
        uint64_t late_reads, late_hits, late_evicted, late_deleted;
        uint64_t one_shot_set, one_shot_evicted, one_shot_deleted, one_shot_left;
        uint64_t refills_late, refills_evicted, refills_deleted;
        uint64_t evictions, evictions_window, eviction_lines;
        uint64_t lost_unlogged;   /* removed by memcached with no eviction line: slab mover, OOM */
        uint64_t lines_dropped;   /* eviction lines memcached's logger dropped (counted, not sent) */
        uint64_t deleted, deleted_hot, unexplained, rotations;
        uint64_t rss_end_kib, hwm_kib, rss_drain_kib, bytes_end, bytes_drain, items_drain;
        uint64_t limit_bytes;
        double mc_cpu_s, daemon_cpu_s;
        bool accounted;
};

/* ---- the keys ---- */

static int key_of(char *buf, char kind, uint64_t i)
{
        return snprintf(buf, KEY_MAX, "%c%08" PRIu64, kind, i);
}

/* ---- memcached's evictions, as it reports them ---- */

struct evictions {
        pthread_t thread;
        int fd;
        volatile bool stop;
        uint64_t lines;
        uint64_t *one_shot_ts;    /* per one-shot key: its eviction's ts (0: none) */
        size_t n_one_shot;
        struct late *late;
        size_t n_late;
        uint64_t hot;             /* evictions of hot keys */
};

/* "ts=1796387311.272233 gid=2 type=eviction key=k0 fetch=no ..." */
static void eviction_line(struct evictions *e, const char *line)
{
        const char *ts = strstr(line, "ts="), *k = strstr(line, " key=");
        uint64_t sec, usec = 0, t, i;
        char *end;

        if (!strstr(line, "type=eviction") || !ts || !k)
                return;
        __atomic_add_fetch(&e->lines, 1, __ATOMIC_RELAXED);
        sec = strtoull(ts + 3, &end, 10);
        if (*end == '.') {
                const char *f = end + 1;

                usec = strtoull(f, &end, 10);
                for (ptrdiff_t d = end - f; d < 6; d++)
                        usec *= 10;
        }
        t = sec * 1000000 + usec;
        i = strtoull(k + 6, NULL, 10);
        switch (k[5]) {
        case 'h':
                e->hot++;
                break;
        case 'o':
                if (i < e->n_one_shot)
                        e->one_shot_ts[i] = t;
                break;
        case 'l':
                if (i < e->n_late) {
                        if (!e->late[i].first_evict_ts)
                                e->late[i].first_evict_ts = t;
                        e->late[i].last_evict_ts = t;
                }
                break;
        default:
                break;
        }
}

static void *evictions_thread(void *userdata)
{
        struct evictions *e = userdata;
        char buf[1 << 16], line[1024];
        size_t ll = 0;

        while (!e->stop) {
                ssize_t r = read(e->fd, buf, sizeof(buf));

                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (r <= 0)
                        break;
                for (ssize_t i = 0; i < r; i++) {
                        if (buf[i] == '\r')
                                continue;
                        if (buf[i] != '\n') {
                                if (ll < sizeof(line) - 1)
                                        line[ll++] = buf[i];
                                continue;
                        }
                        line[ll] = '\0';
                        eviction_line(e, line);
                        ll = 0;
                }
        }
        return NULL;
}

static void evictions_start(struct evictions *e)
{
        struct timeval tv = { .tv_usec = 100000 };
        char ok[4] = "";

        e->fd = mcb_connect();
        if (e->fd < 0)
                bench_die("cannot connect to memcached to watch its evictions");
        mcb_write_all(e->fd, "watch evictions\r\n", 17);
        if (read(e->fd, ok, 4) != 4 || memcmp(ok, "OK\r\n", 4) != 0)
                bench_die("memcached refused \"watch evictions\"");
        /* The thread looks at e->stop at least every 100 ms. */
        setsockopt(e->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (pthread_create(&e->thread, NULL, evictions_thread, e) != 0)
                bench_die("thread");
}

/* Stop once the watch has shown every eviction memcached counted (or after 5 s). */
static void evictions_stop(struct evictions *e, uint64_t evictions)
{
        for (int i = 0; i < 500 && __atomic_load_n(&e->lines, __ATOMIC_RELAXED) < evictions; i++)
                usleep(10000);
        e->stop = true;
        pthread_join(e->thread, NULL);
        close(e->fd);
}

/* ---- the client ---- */

struct conn {
        int fd;
        char *out;
        size_t out_len, out_cap;
        char in[1 << 16];
        size_t in_len, in_pos;
};

static void out_add(struct conn *c, const char *s, size_t n)
{
        if (c->out_len + n > c->out_cap) {
                c->out_cap = (c->out_len + n) * 2;
                c->out = realloc(c->out, c->out_cap);
                if (!c->out)
                        bench_die("out of memory");
        }
        memcpy(c->out + c->out_len, s, n);
        c->out_len += n;
}

static void out_flush(struct conn *c)
{
        mcb_write_all(c->fd, c->out, c->out_len);
        c->out_len = 0;
}

/* One line of the reply, without "\r\n" (in the buffer, valid until the next read). */
static const char *in_line(struct conn *c)
{
        for (;;) {
                char *nl = memchr(c->in + c->in_pos, '\n', c->in_len - c->in_pos);
                ssize_t r;

                if (nl) {
                        char *line = c->in + c->in_pos;

                        c->in_pos = (size_t)(nl - c->in) + 1;
                        if (nl > line && nl[-1] == '\r')
                                nl[-1] = '\0';
                        *nl = '\0';
                        return line;
                }
                memmove(c->in, c->in + c->in_pos, c->in_len - c->in_pos);
                c->in_len -= c->in_pos;
                c->in_pos = 0;
                if (c->in_len == sizeof(c->in))
                        bench_die("a reply line longer than %zu bytes", sizeof(c->in));
                r = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
                if (r <= 0)
                        bench_die("read from memcached: %s", r == 0 ? "closed" : strerror(errno));
                c->in_len += (size_t)r;
        }
}

/* Skip @n bytes of the reply (a value and its "\r\n"). */
static void in_skip(struct conn *c, size_t n)
{
        while (n > 0) {
                size_t have = c->in_len - c->in_pos;
                ssize_t r;

                if (have >= n) {
                        c->in_pos += n;
                        return;
                }
                n -= have;
                c->in_pos = c->in_len = 0;
                r = read(c->fd, c->in, sizeof(c->in));
                if (r <= 0)
                        bench_die("read from memcached: %s", r == 0 ? "closed" : strerror(errno));
                c->in_len = (size_t)r;
        }
}

static const char *value;   /* the values set, value_bytes of 'v' */
static unsigned value_bytes;

static void set_key(struct conn *c, const char *key)
{
        char head[96];
        int n = snprintf(head, sizeof(head), "set %s 0 0 %u noreply\r\n", key, value_bytes);

        out_add(c, head, (size_t)n);
        out_add(c, value, value_bytes);
        out_add(c, "\r\n", 2);
}

/* Send what is queued and wait until memcached has done it. */
static void fence(struct conn *c)
{
        out_add(c, "mn\r\n", 4);
        out_flush(c);
        while (strcmp(in_line(c), "MN") != 0)
                ;
}

/*
 * "get" the @n keys: @ret_hit[i] says which were found (a fetch, as any client's: it marks
 * the item fetched and, as memcached's LRU does for a fetch, maybe bumps it).
 */
static void get_keys(struct conn *c, char (*keys)[KEY_MAX], size_t n, bool *ret_hit)
{
        for (size_t from = 0; from < n; from += GET_BATCH) {
                size_t to = from + GET_BATCH < n ? from + GET_BATCH : n, next = from;

                out_add(c, "get", 3);
                for (size_t i = from; i < to; i++) {
                        out_add(c, " ", 1);
                        out_add(c, keys[i], strlen(keys[i]));
                        ret_hit[i] = false;
                }
                out_add(c, "\r\n", 2);
                out_flush(c);
                for (;;) {
                        const char *line = in_line(c);
                        char key[KEY_MAX + 1];
                        unsigned flags;
                        size_t bytes;

                        if (strcmp(line, "END") == 0)
                                break;
                        if (sscanf(line, "VALUE %32s %u %zu", key, &flags, &bytes) != 3)
                                bench_die("unexpected reply to get: \"%s\"", line);
                        /* Replies come in the order asked, hits only. */
                        while (next < to && strcmp(keys[next], key) != 0)
                                next++;
                        if (next == to)
                                bench_die("get answered a key not asked: %s", key);
                        ret_hit[next++] = true;
                        in_skip(c, bytes + 2);
                }
        }
}

/* "me KEY" for each: whether it is there, without touching it. */
static void present_keys(struct conn *c, char (*keys)[KEY_MAX], size_t n, bool *ret_present)
{
        for (size_t from = 0; from < n; from += GET_BATCH) {
                size_t to = from + GET_BATCH < n ? from + GET_BATCH : n;

                for (size_t i = from; i < to; i++) {
                        out_add(c, "me ", 3);
                        out_add(c, keys[i], strlen(keys[i]));
                        out_add(c, "\r\n", 2);
                }
                out_flush(c);
                for (size_t i = from; i < to; i++) {
                        const char *line = in_line(c);

                        if (strncmp(line, "ME ", 3) == 0)
                                ret_present[i] = true;
                        else if (strcmp(line, "EN") == 0)
                                ret_present[i] = false;
                        else
                                bench_die("unexpected reply to me: \"%s\"", line);
                }
        }
}

/* ---- one variant ---- */

static void run_variant(const struct params *p, struct variant *v)
{
        unsigned delay_s = (SINGLE_USE_AGE + 2) * p->interval_s;
        unsigned drain_s = delay_s + 1; /* every late key read */
        size_t n_one_shot = (size_t)p->one_shot_per_s * p->seconds;
        size_t n_late = (size_t)p->late_per_s * p->seconds;
        size_t cap = (size_t)p->hot + n_late + n_one_shot + 1;
        char mem_s[16], cache_lines[256], name[64];
        char (*keys)[KEY_MAX] = malloc(cap * sizeof(*keys));
        size_t *which = malloc(cap * sizeof(*which));
        bool *hit = malloc(cap * sizeof(*hit));
        struct evictions ev = { .fd = -1 };
        struct bench_child mcd = { .pid = -1 }, daemon = { .pid = -1 };
        struct bench_watch w = { .notify_fd = -1 };
        struct conn c = { .fd = -1 };
        uint64_t t0, one_shot_done = 0, late_done = 0, late_read = 0, hot_done = 0;
        uint64_t evictions_at_warmup = 0;
        bool warm = false, ended = false;

        if (!keys || !which || !hit)
                bench_die("out of memory");
        ev.n_one_shot = n_one_shot;
        ev.n_late = n_late;
        ev.one_shot_ts = calloc(n_one_shot + 1, sizeof(*ev.one_shot_ts));
        ev.late = calloc(n_late + 1, sizeof(*ev.late));
        if (!ev.one_shot_ts || !ev.late)
                bench_die("out of memory");

        snprintf(mem_s, sizeof(mem_s), "%u", p->memory_mib);
        {
                bool plain = strcmp(v->lru, "plain") == 0;
                const char *args[] = { "-m", mem_s, plain ? "-o" : NULL, "no_lru_maintainer",
                                       NULL };

                mcb_memcached_start(&mcd, args);
        }
        v->limit_bytes = mcb_server_stat("limit_maxbytes");
        evictions_start(&ev);
        c.fd = mcb_connect();
        if (c.fd < 0)
                bench_die("the client cannot connect");
        /* A warm cache: the hot set is there before the clock starts. */
        for (unsigned h = 0; h < p->hot; h++) {
                char k[KEY_MAX];

                key_of(k, 'h', h);
                set_key(&c, k);
        }
        fence(&c);
        if (v->adapter) {
                snprintf(name, sizeof(name), "cacheaged-%s", v->lru);
                snprintf(cache_lines, sizeof(cache_lines),
                         "interval = %us\nsingle_use_age = %d\nmax_age = %d\n", p->interval_s,
                         SINGLE_USE_AGE, MAX_AGE);
                mcb_daemon_start(&daemon, &w, name, cache_lines, 0, p->sched_idle);
        }

        t0 = bench_now_usec();
        for (;;) {
                uint64_t now = bench_now_usec(), t = now - t0, wall;
                bool load = t < (uint64_t)p->seconds * 1000000;
                uint64_t t_load = load ? t : (uint64_t)p->seconds * 1000000; /* all set, in the end */
                size_t n = 0;

                if (t >= (uint64_t)(p->seconds + drain_s) * 1000000)
                        break;
                if (!warm && t >= (uint64_t)p->warmup_s * 1000000) {
                        warm = true;
                        evictions_at_warmup = mcb_server_stat("evictions");
                }
                /* The sets due by now: one-shot keys, then late ones. */
                for (uint64_t due = p->one_shot_per_s * t_load / 1000000;
                     one_shot_done < due && one_shot_done < n_one_shot; one_shot_done++) {
                        char k[KEY_MAX];

                        key_of(k, 'o', one_shot_done);
                        set_key(&c, k);
                }
                for (uint64_t due = p->late_per_s * t_load / 1000000;
                     late_done < due && late_done < n_late; late_done++) {
                        char k[KEY_MAX];

                        key_of(k, 'l', late_done);
                        set_key(&c, k);
                        ev.late[late_done].set_usec = now;
                }
                fence(&c);
                /* Every eviction these sets made has its ts= before this. */
                wall = bench_wall_usec();
                if (!load && !ended) {
                        /* the last sets are in */
                        ended = true;
                        v->rss_end_kib = bench_rss_kib(mcd.pid);
                        v->bytes_end = mcb_server_stat("bytes");
                }

                /* The late keys whose time came: read once. */
                while (late_read < late_done &&
                       ev.late[late_read].set_usec + (uint64_t)delay_s * 1000000 <= now) {
                        key_of(keys[n], 'l', late_read);
                        which[n++] = late_read++;
                }
                /* The hot keys due: each once every hot_period. */
                uint64_t hot_due = (uint64_t)p->hot * t / ((uint64_t)p->hot_period_s * 1000000);

                if (hot_due - hot_done > p->hot)
                        hot_done = hot_due - p->hot; /* a stall: one pass, not several */
                for (; hot_done < hot_due; hot_done++) {
                        key_of(keys[n], 'h', hot_done % p->hot);
                        which[n++] = SIZE_MAX;
                }
                get_keys(&c, keys, n, hit);
                for (size_t i = 0; i < n; i++) {
                        if (which[i] != SIZE_MAX) {
                                struct late *l = &ev.late[which[i]];

                                l->read_wall_usec = wall;
                                l->hit = hit[i];
                                l->measured = warm;
                        } else {
                                v->hot_reads += warm;
                                v->hot_hits += warm && hit[i];
                                v->hot_misses_all += !hit[i];
                        }
                        /* cache-aside: what missed is set again */
                        if (!hit[i])
                                set_key(&c, keys[i]);
                }
                fence(&c);
                bench_sleep_until(t0 + t + TICK_USEC);
        }

        /* The end of the workload and of the drain: what memcached holds, and what it took. */
        v->evictions = mcb_server_stat("evictions");
        /*
         * What memcached removes or fails to store without an eviction line: items its slab
         * mover could not rescue when it moved their page, and sets refused for memory.
         */
        v->lines_dropped = mcb_server_stat("log_worker_dropped") +
                           mcb_server_stat("log_watcher_skipped");
        v->lost_unlogged = mcb_server_stat("slab_reassign_evictions_nomem") +
                           mcb_server_stat("slab_reassign_busy_deletes") +
                           mcb_server_stat_items("outofmemory");
        v->evictions_window = v->evictions - evictions_at_warmup;
        v->rss_drain_kib = bench_rss_kib(mcd.pid);
        v->hwm_kib = bench_hwm_kib(mcd.pid);
        v->bytes_drain = mcb_server_stat("bytes");
        v->items_drain = mcb_server_stat("curr_items");
        v->mc_cpu_s = mcb_server_stat_double("rusage_user") + mcb_server_stat_double("rusage_system");
        if (v->adapter) {
                v->daemon_cpu_s = (double)bench_cpu_usec(daemon.pid) / 1e6;
                v->rotations = bench_count_events(&w, "mc: aged: ");
                bench_daemon_stop(&daemon, &w);
                bench_watch_free(&w);
        }
        /* The client deletes nothing: every delete memcached did was the adapter's. */
        v->deleted = mcb_server_stat("delete_hits");
        evictions_stop(&ev, v->evictions);
        v->eviction_lines = ev.lines;
        v->hot_evictions = ev.hot;

        /* Who removed each item: memcached's eviction, else the adapter. */
        for (size_t from = 0; from < one_shot_done; from += cap) {
                size_t n = one_shot_done - from < cap ? one_shot_done - from : cap;

                for (size_t i = 0; i < n; i++)
                        key_of(keys[i], 'o', from + i);
                present_keys(&c, keys, n, hit);
                for (size_t i = 0; i < n; i++) {
                        v->one_shot_set++;
                        if (hit[i])
                                v->one_shot_left++;
                        else if (ev.one_shot_ts[from + i])
                                v->one_shot_evicted++;
                        else
                                v->one_shot_deleted++;
                }
        }
        for (size_t i = 0; i < late_done; i++)
                key_of(keys[i], 'l', i);
        present_keys(&c, keys, late_done, hit);
        for (size_t i = 0; i < late_done; i++) {
                const struct late *l = &ev.late[i];

                if (!l->read_wall_usec)
                        continue;
                if (l->measured) {
                        v->late_reads++;
                        v->late_hits += l->hit;
                }
                if (!l->hit) {
                        /* evicted before the read, or deleted; then set again */
                        if (l->first_evict_ts && l->first_evict_ts < l->read_wall_usec)
                                v->late_evicted += l->measured;
                        else
                                v->late_deleted += l->measured;
                        v->refills_late++;
                        if (hit[i])
                                continue;
                        if (l->last_evict_ts >= l->read_wall_usec)
                                v->refills_evicted++;
                        else
                                v->refills_deleted++;
                }
        }
        /*
         * Every item gone that memcached did not evict: deleted by the adapter, which counted
         * them; what it deleted beyond the one-shot, late and refilled items was hot.
         */
        {
                uint64_t late_all = 0, gone;

                for (size_t i = 0; i < late_done; i++) {
                        const struct late *l = &ev.late[i];

                        late_all += l->read_wall_usec && !l->hit &&
                                    !(l->first_evict_ts && l->first_evict_ts < l->read_wall_usec);
                }
                gone = v->one_shot_deleted + late_all + v->refills_deleted;
                if (gone > v->deleted)
                        v->unexplained = gone - v->deleted;
                else
                        v->deleted_hot = v->deleted - gone;
        }
        /*
         * Without the adapter whatever is gone was memcached's doing, named on the watch or not;
         * with it, an item gone unnamed is the adapter's or one of the lines the logger dropped.
         */
        if (!v->adapter) {
                v->one_shot_evicted += v->one_shot_deleted;
                v->one_shot_deleted = 0;
                v->late_evicted += v->late_deleted;
                v->late_deleted = 0;
        }
        v->accounted = v->eviction_lines + v->lines_dropped >= v->evictions &&
                       v->unexplained <= v->lost_unlogged + v->lines_dropped;
        close(c.fd);
        free(c.out);
        bench_child_stop(&mcd);
        free(ev.one_shot_ts);
        free(ev.late);
        free(keys);
        free(which);
        free(hit);
}

/* ---- the table ---- */

static char *pct(char *buf, uint64_t part, uint64_t whole)
{
        if (whole == 0)
                snprintf(buf, 32, "-");
        else
                snprintf(buf, 32, "%.1f%%", 100.0 * (double)part / (double)whole);
        return buf;
}

static double mib(uint64_t kib)
{
        return (double)kib / 1024;
}

static void print_table(const struct params *p, const struct variant *v, size_t n,
                        double load_start, double load_end)
{
        char b[4][32];

        printf("memcached -m %u (%.1f MiB of items), values of %u B; hot set: %u keys, each read "
               "every %u s; %u one-shot keys/s set, never read; %u late keys/s, first read %u s "
               "after their set; misses set again; %u s of workload (rates from %u s on), then "
               "%u s of reads only. cacheaged: interval %u s, single_use_age %d, max_age %d, %s. "
               "Load average %.2f at start, %.2f at the end.\n\n",
               p->memory_mib, (double)v[0].limit_bytes / 1048576, p->value_bytes, p->hot,
               p->hot_period_s, p->one_shot_per_s, p->late_per_s,
               (SINGLE_USE_AGE + 2) * p->interval_s, p->seconds, p->warmup_s,
               (SINGLE_USE_AGE + 2) * p->interval_s + 1, p->interval_s, SINGLE_USE_AGE, MAX_AGE,
               p->sched_idle ? "at SCHED_IDLE" : "at normal priority", load_start, load_end);
        printf("| |");
        for (size_t i = 0; i < n; i++)
                printf(" %s LRU%s |", v[i].lru, v[i].adapter ? " + cacheaged" : "");
        printf("\n|---|");
        for (size_t i = 0; i < n; i++)
                printf("---|");
        printf("\n| hot set's hit rate |");
        for (size_t i = 0; i < n; i++)
                printf(" %s |", pct(b[0], v[i].hot_hits, v[i].hot_reads));
        printf("\n| late keys' hit rate |");
        for (size_t i = 0; i < n; i++)
                printf(" %s |", pct(b[0], v[i].late_hits, v[i].late_reads));
        printf("\n| late keys missed: evicted / deleted |");
        for (size_t i = 0; i < n; i++)
                printf(" %s / %s |", pct(b[0], v[i].late_evicted, v[i].late_reads),
                       pct(b[1], v[i].late_deleted, v[i].late_reads));
        printf("\n| evictions (all run / from %u s) |", p->warmup_s);
        for (size_t i = 0; i < n; i++)
                printf(" %" PRIu64 " / %" PRIu64 " |", v[i].evictions, v[i].evictions_window);
        printf("\n| hot keys evicted (all run) |");
        for (size_t i = 0; i < n; i++)
                printf(" %" PRIu64 " |", v[i].hot_evictions);
        printf("\n| deleted by cacheaged: one-shot / late / refills / hot |");
        for (size_t i = 0; i < n; i++)
                if (v[i].adapter)
                        printf(" %" PRIu64 " / %" PRIu64 " / %" PRIu64 " / %" PRIu64 " |",
                               v[i].one_shot_deleted, v[i].deleted - v[i].one_shot_deleted -
                               v[i].refills_deleted - v[i].deleted_hot, v[i].refills_deleted,
                               v[i].deleted_hot);
                else
                        printf(" - |");
        printf("\n| one-shot keys: evicted / deleted / left |");
        for (size_t i = 0; i < n; i++)
                printf(" %s / %s / %s |", pct(b[0], v[i].one_shot_evicted, v[i].one_shot_set),
                       pct(b[1], v[i].one_shot_deleted, v[i].one_shot_set),
                       pct(b[2], v[i].one_shot_left, v[i].one_shot_set));
        printf("\n| memcached RSS, end of workload (peak) |");
        for (size_t i = 0; i < n; i++)
                printf(" %.1f MiB (%.1f) |", mib(v[i].rss_end_kib), mib(v[i].hwm_kib));
        printf("\n| memcached RSS after the drain |");
        for (size_t i = 0; i < n; i++)
                printf(" %.1f MiB |", mib(v[i].rss_drain_kib));
        printf("\n| items' bytes, end of workload / after the drain |");
        for (size_t i = 0; i < n; i++)
                printf(" %.1f / %.1f MiB |", (double)v[i].bytes_end / 1048576,
                       (double)v[i].bytes_drain / 1048576);
        printf("\n| CPU: memcached / cacheaged |");
        for (size_t i = 0; i < n; i++)
                if (v[i].adapter)
                        printf(" %.2f / %.2f s |", v[i].mc_cpu_s, v[i].daemon_cpu_s);
                else
                        printf(" %.2f s / - |", v[i].mc_cpu_s);
        printf("\n\n");
        for (size_t i = 0; i < n; i++)
                printf("%s LRU%s: %" PRIu64 " hot reads, %" PRIu64 " late reads counted; "
                       "%" PRIu64 " evictions reported on the watch of %" PRIu64 " counted "
                       "(%" PRIu64 " dropped by its logger); %" PRIu64 " items gone unnamed, %"
                       PRIu64 " lost by memcached without an eviction line%s%s\n", v[i].lru,
                       v[i].adapter ? " + cacheaged" : "", v[i].hot_reads, v[i].late_reads,
                       v[i].eviction_lines, v[i].evictions, v[i].lines_dropped,
                       v[i].unexplained, v[i].lost_unlogged,
                       v[i].adapter ? "; rotations " : "",
                       v[i].adapter ? (snprintf(b[3], sizeof(b[3]), "%" PRIu64 ", %" PRIu64
                                                " deleted", v[i].rotations, v[i].deleted), b[3])
                                    : "");
}

static void usage(void)
{
        printf("Usage: %s [OPTIONS]\n"
               "  --memory MIB        memcached -m (default 16)\n"
               "  --value-bytes N     bytes of each value (default 1000)\n"
               "  --hot N             hot keys (default 1000)\n"
               "  --hot-period S      each hot key read every S seconds (default: the interval)\n"
               "  --one-shot N        one-shot keys set a second (default 1000)\n"
               "  --late N            late keys set a second (default 200)\n"
               "  --interval S        the cache's rotation interval, seconds (default 2)\n"
               "  --seconds S         the workload's length (default 60)\n"
               "  --warmup S          rates count from S seconds on (default 20)\n"
               "  --lru segmented|plain|both  (default both)\n"
               "  --normal-priority   the daemon at normal priority, not SCHED_IDLE\n"
               "  --check             a short run for the test suite: fails when the accounting\n"
               "                      does not close or the adapter deleted a hot key\n",
               bench_prog);
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
                { "memory", required_argument, NULL, 'm' },
                { "value-bytes", required_argument, NULL, 'b' },
                { "hot", required_argument, NULL, 'H' },
                { "hot-period", required_argument, NULL, 'P' },
                { "one-shot", required_argument, NULL, 'o' },
                { "late", required_argument, NULL, 'l' },
                { "interval", required_argument, NULL, 'i' },
                { "seconds", required_argument, NULL, 's' },
                { "warmup", required_argument, NULL, 'w' },
                { "lru", required_argument, NULL, 'L' },
                { "normal-priority", no_argument, NULL, 'p' },
                { "check", no_argument, NULL, 'c' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct params p = { .memory_mib = 16, .value_bytes = 1000, .hot = 1000, .interval_s = 2,
                            .seconds = 60, .warmup_s = 20, .one_shot_per_s = 1000,
                            .late_per_s = 200, .sched_idle = true };
        const char *lru = "both";
        struct variant v[4];
        size_t n = 0;
        bool check = false, failed = false;
        double load_start;
        char *val;
        int c;

        bench_prog = "bench-memcached-value";
        while ((c = getopt_long(argc, argv, "h", opts, NULL)) >= 0)
                switch (c) {
                case 'm':
                        p.memory_mib = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'b':
                        p.value_bytes = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'H':
                        p.hot = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'P':
                        p.hot_period_s = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'o':
                        p.one_shot_per_s = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'l':
                        p.late_per_s = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'i':
                        p.interval_s = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 's':
                        p.seconds = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'w':
                        p.warmup_s = (unsigned)strtoul(optarg, NULL, 10);
                        break;
                case 'L':
                        lru = optarg;
                        break;
                case 'p':
                        p.sched_idle = false;
                        break;
                case 'c':
                        check = true;
                        break;
                case 'h':
                        usage();
                        return 0;
                default:
                        usage();
                        return 2;
                }
        if (check) {
                /* both LRUs with the adapter, briefly: what can be checked is its accounting */
                p.interval_s = 1;
                p.seconds = 10;
                p.warmup_s = 2;
        }
        if (!p.hot_period_s)
                p.hot_period_s = p.interval_s;
        if (p.memory_mib < 8 || p.value_bytes < 1 || p.value_bytes > 100000 || p.hot < 1 ||
            p.interval_s < 1 || p.seconds < 1 || p.warmup_s >= p.seconds ||
            (strcmp(lru, "segmented") && strcmp(lru, "plain") && strcmp(lru, "both")))
                bench_die("--memory at least 8, --value-bytes 1..100000, --hot at least 1, "
                        "--interval at least 1, --warmup below --seconds, --lru segmented, plain "
                        "or both");
        val = malloc(p.value_bytes);
        if (!val)
                bench_die("out of memory");
        memset(val, 'v', p.value_bytes);
        value = val;
        value_bytes = p.value_bytes;
        signal(SIGPIPE, SIG_IGN);
        bench_env("CACHEAGED");
        bench_env("CA_ADAPTER_DIR");

        load_start = bench_loadavg();
        for (int plain = 0; plain < 2; plain++) {
                const char *name = plain ? "plain" : "segmented";

                if (strcmp(lru, "both") != 0 && strcmp(lru, name) != 0)
                        continue;
                for (int adapter = check ? 1 : 0; adapter < 2; adapter++) {
                        v[n] = (struct variant){ .lru = name, .adapter = adapter };
                        fprintf(stderr, "%s: %s LRU%s...\n", bench_prog, name,
                                adapter ? " + cacheaged" : "");
                        run_variant(&p, &v[n]);
                        n++;
                }
        }
        print_table(&p, v, n, load_start, bench_loadavg());
        for (size_t i = 0; i < n; i++) {
                if (!v[i].accounted) {
                        fprintf(stderr, "%s: %s LRU%s: the accounting does not close: %" PRIu64
                                " evictions counted, %" PRIu64 " seen (%" PRIu64 " dropped), %"
                                PRIu64 " items gone that nothing removed, %" PRIu64 " lost by "
                                "memcached without a line\n", bench_prog, v[i].lru,
                                v[i].adapter ? " + cacheaged" : "", v[i].evictions,
                                v[i].eviction_lines, v[i].lines_dropped, v[i].unexplained,
                                v[i].lost_unlogged);
                        failed = true;
                }
                if (v[i].adapter && v[i].deleted_hot) {
                        fprintf(stderr, "%s: %s LRU + cacheaged: the adapter deleted %" PRIu64
                                " hot keys\n", bench_prog, v[i].lru, v[i].deleted_hot);
                        failed = check || failed;
                }
                if (check && v[i].adapter && v[i].one_shot_deleted == 0) {
                        fprintf(stderr, "%s: %s LRU + cacheaged: the adapter deleted no one-shot "
                                "key\n", bench_prog, v[i].lru);
                        failed = true;
                }
        }
        free(val);
        return failed ? 1 : 0;
}
