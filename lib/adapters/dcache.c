/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The dcache adapter: a dentry-cache model (cacheage/dcache.h) with aging on, registered
 * with the host, and fed by lookups from one of two sources, in small batches from a
 * libevent timer on the host's loop:
 *
 *   source = strace:PATH         replay an `strace -f -ttt -e trace=%file` log at `speed`
 *                                times its own pace (a log without timestamps at `rate`
 *                                events per second), once or, with `loop = yes`, forever;
 *   source = workload:NAME       a built-in generator at `rate` lookups per second:
 *       pathsearch   shells searching $PATH for commands and a loader searching library
 *                    directories: the same misses over and over (reused negatives);
 *       statstorm    stat() of unique missing names: every negative dentry single-use;
 *       mixed        both, plus a reused working set of files that exist.
 *
 * Policy keys switch the model's negative-dentry policies: tail_negative = yes|no,
 * negative_ratio = off|N, ratio_mode = counted|cursor. The model grows by at most
 * max_dentries: past it the source pauses until aging brings the count back down.
 *
 * Reclaim is the model's own op (it kills an unused dentry); victims collected in a slice
 * are disposed of by ca_dcache_dispose() in the after_age hook, outside the slice.
 */

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "cacheage/dcache.h"
#include "cacheage/plugin.h"
#include "cacheage/replay.h"
#include "cacheage/trace.h"
#include "adapter-stat.h"

#define DC_TICK_USEC 10000              /* feeding timer period: 10ms */
#define DC_TICK_EVENTS_MAX 20000        /* events applied per tick, at most */
/*
 * The rest of a tick's bounds, so that no log and no rate can hold the loop: bytes read from
 * a log (a 100 MB line is crossed over many ticks), reopenings of a looped log (a log with
 * one usable event is not read again and again within one tick), and time (a tick never
 * takes its whole period; the clock is read every DC_TICK_CLOCK_EVERY events).
 */
#define DC_TICK_BYTES_MAX (1u << 20)    /* bytes of log read per tick: 100 MiB/s at most */
#define DC_TICK_REOPENS_MAX 1           /* reopenings of a looped log per tick */
#define DC_TICK_TIME_USEC 4000          /* work per tick, of its 10ms */
#define DC_TICK_CLOCK_EVERY 256         /* events between two reads of the clock */
#define DC_RATE_DEFAULT 1000            /* lookups per second */
#define DC_RATE_MAX 1000000             /* lookups per second */
#define DC_SPEED_MIN 0.001              /* replay speed factor */
#define DC_SPEED_MAX 1000.0             /* replay speed factor */
#define DC_MAX_DENTRIES_DEFAULT 1000000 /* dentries */
#define DC_MAX_DENTRIES_MAX 100000000   /* dentries */
#define DC_PATH_MAX 512                 /* bytes of a generated path */

#define STR_(x) #x
#define STR(x) STR_(x)

enum dc_source {
        DC_STRACE,
        DC_PATHSEARCH,
        DC_STATSTORM,
        DC_MIXED,
};

#define DC_RATIO_OFF (-1)

enum {
        DC_RATIO_COUNTED,
        DC_RATIO_CURSOR,
};

struct dc_config {
        const char *source_key; /* "strace:PATH" or "workload:NAME", as written */
        enum dc_source source;  /* from source_key, by dc_check_source() */
        const char *trace_path; /* in source_key; only during create() */
        uint64_t rate;          /* lookups or events per second */
        double speed;
        bool loop;
        int negative_ratio;     /* DC_RATIO_OFF or 0..CA_DCACHE_RATIO_MAX */
        int ratio_mode;         /* DC_RATIO_COUNTED or DC_RATIO_CURSOR */
        uint64_t max_dentries;
        struct ca_dcache_params params;
};

struct dc {
        struct ca_host *host;
        char *name;
        struct dc_config cfg;
        char *trace_path;

        struct ca_dcache *model;
        struct ca_replay *replay;      /* events into the model, with /proc as the kernel has it */
        struct event *tick;

        /* strace replay */
        FILE *trace_f;
        struct ca_trace *trace;
        struct ca_trace_event pending; /* read, not yet due */
        bool have_pending;
        uint64_t trace_t0_usec;        /* first event's time in the log */
        uint64_t wall_t0_usec;         /* when we replayed it */
        bool trace_started;
        uint64_t events_since_open;    /* a looped log's pass without any: replay finished */
        uint64_t tick_bytes_left;      /* of DC_TICK_BYTES_MAX, in this tick */
        unsigned tick_reopens;         /* in this tick */
        uint64_t bytes_read, reopens;  /* in all, for the statistics */

        /* pacing of rate-driven sources: lookups owed since the last tick */
        uint64_t last_tick_usec;
        double owed;

        /* workload state */
        uint64_t storm_seq;
        uint64_t rng;
        bool paused;                   /* over max_dentries */

        uint64_t lookups, hits, ignored;
};

/* ---- workloads ---- */

static const char *const search_path[] = {
        "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin",
};
#define N_SEARCH_PATH (sizeof(search_path) / sizeof(search_path[0]))
#define SEARCH_FOUND_IN 3 /* the commands live in /usr/bin */

static const char *const commands[] = {
        "ls", "cat", "grep", "sed", "awk", "sort", "uniq", "head", "tail", "cut", "tr", "wc",
        "find", "xargs", "make", "cc", "ld", "as", "git", "ssh", "tar", "gzip", "python3",
        "perl", "env", "date", "id", "uname", "mkdir", "rm", "cp", "mv", "ln", "chmod", "stat",
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

/* A loader's search for a library (ld.so's hwcaps and tls subdirectories first). */
static const char *const lib_dirs[] = {
        "/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v3", "/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v2",
        "/lib/x86_64-linux-gnu/tls", "/lib/x86_64-linux-gnu/x86_64", "/lib/x86_64-linux-gnu",
};
#define N_LIB_DIRS (sizeof(lib_dirs) / sizeof(lib_dirs[0]))

static const char *const libs[] = {
        "libc.so.6", "libm.so.6", "libz.so.1", "libssl.so.3", "libcrypto.so.3", "libpcre2-8.so.0",
        "libselinux.so.1", "libacl.so.1", "libattr.so.1", "libcap.so.2", "libtinfo.so.6",
        "libsystemd.so.0", "liblzma.so.5", "libzstd.so.1", "libgcc_s.so.1", "libstdc++.so.6",
};
#define N_LIBS (sizeof(libs) / sizeof(libs[0]))

#define WORKING_SET 512 /* files of the mixed workload's project tree */

static uint64_t dc_random(struct dc *dc)
{
        /* xorshift64*: enough to pick names, and reproducible. */
        dc->rng ^= dc->rng >> 12;
        dc->rng ^= dc->rng << 25;
        dc->rng ^= dc->rng >> 27;
        return dc->rng * 2685821657736338717ULL;
}

static void dc_apply(struct dc *dc, const struct ca_trace_event *ev)
{
        struct ca_dcache_stats before, after;
        int r;

        ca_dcache_stats(dc->model, &before);
        r = ca_replay_event(dc->replay, ev);
        if (r < 0) {
                dc->ignored++;
                return;
        }
        if (ev->op == CA_TRACE_EXIT || ev->op == CA_TRACE_RELEASE)
                return; /* no lookup: a process's /proc went, or nothing */
        ca_dcache_stats(dc->model, &after);
        dc->lookups++;
        /* Nothing allocated: every component was found in the cache (dentries or negatives). */
        if (after.nr_dentry <= before.nr_dentry && after.replay_fixups == before.replay_fixups)
                dc->hits++;
}

static void dc_lookup(struct dc *dc, const char *path, int result)
{
        const struct ca_trace_event ev = {
                .op = CA_TRACE_LOOKUP,
                .syscall = "newfstatat",
                .path = path,
                .result = result,
        };

        dc_apply(dc, &ev);
}

/* A shell running a command: stat() along $PATH until found; one lookup per stat. */
static unsigned dc_pathsearch(struct dc *dc, unsigned budget)
{
        const char *cmd = commands[dc_random(dc) % N_COMMANDS];
        char path[DC_PATH_MAX];
        unsigned n = 0;

        if (dc_random(dc) % 4 == 0) {
                /* ld.so looking for a library: misses in every directory but the last. */
                const char *lib = libs[dc_random(dc) % N_LIBS];

                for (size_t i = 0; i < N_LIB_DIRS && n < budget; i++, n++) {
                        snprintf(path, sizeof(path), "%s/%s", lib_dirs[i], lib);
                        dc_lookup(dc, path, i + 1 == N_LIB_DIRS ? 0 : -ENOENT);
                }
                return n;
        }
        for (size_t i = 0; i <= SEARCH_FOUND_IN && n < budget; i++, n++) {
                snprintf(path, sizeof(path), "%s/%s", search_path[i], cmd);
                dc_lookup(dc, path, i == SEARCH_FOUND_IN ? 0 : -ENOENT);
        }
        return n;
}

/* A build or a mail spool probing names that never existed and never will again. */
static unsigned dc_statstorm(struct dc *dc)
{
        char path[DC_PATH_MAX];

        snprintf(path, sizeof(path), "/var/tmp/storm/f%016" PRIx64, dc->storm_seq++);
        dc_lookup(dc, path, -ENOENT);
        return 1;
}

static unsigned dc_working_set(struct dc *dc)
{
        char path[DC_PATH_MAX];
        uint64_t i = dc_random(dc) % WORKING_SET;

        snprintf(path, sizeof(path), "/home/user/project/src/dir%02" PRIu64 "/file%03" PRIu64 ".c",
                 i % 16, i);
        dc_lookup(dc, path, 0);
        return 1;
}

static unsigned dc_generate(struct dc *dc, unsigned budget)
{
        switch (dc->cfg.source) {
        case DC_PATHSEARCH:
                return dc_pathsearch(dc, budget);
        case DC_STATSTORM:
                return dc_statstorm(dc);
        case DC_MIXED:
                switch (dc_random(dc) % 3) {
                case 0:
                        return dc_pathsearch(dc, budget);
                case 1:
                        return dc_statstorm(dc);
                default:
                        return dc_working_set(dc);
                }
        case DC_STRACE:
                break;
        }
        return 0;
}

/* ---- strace replay ---- */

static void dc_trace_close(struct dc *dc)
{
        dc->trace = ca_trace_free(dc->trace);
        if (dc->trace_f)
                fclose(dc->trace_f);
        dc->trace_f = NULL;
}

/*
 * Open the log: a regular file only. The daemon runs as root, and open() alone would hang
 * the daemon's start on a FIFO (or /proc/kmsg), and read a device or a directory for ever
 * or fail later; O_NONBLOCK makes the open return so that fstat() can say no.
 */
static int dc_trace_mode_check(mode_t mode)
{
        if (S_ISREG(mode))
                return 0;
        return S_ISDIR(mode) ? -EISDIR : -ENODEV;
}

/* The log at @path can be replayed: 0, or a negative errno (-ENODEV: not a regular file). */
static int dc_trace_check(const char *path)
{
        struct stat st;

        if (stat(path, &st) < 0)
                return -errno;
        return dc_trace_mode_check(st.st_mode);
}

static void dc_trace_error(struct ca_host *host, const struct ca_section *s, const char *path,
                           int r)
{
        ca_host_key_error(host, s, "source", "cannot open %s: %s", path,
                          r == -ENODEV ? "not a regular file" : strerror(-r));
}

static FILE *dc_trace_fopen(const char *path)
{
        struct stat st;
        FILE *f;
        int fd, e;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return NULL;
        if (fstat(fd, &st) < 0)
                goto out_close_fd;
        e = dc_trace_mode_check(st.st_mode);
        if (e < 0) {
                errno = -e;
                goto out_close_fd;
        }
        f = fdopen(fd, "r");
        if (f)
                return f;
out_close_fd:
        e = errno;
        close(fd);
        errno = e;
        return NULL;
}

static int dc_trace_open(struct dc *dc)
{
        int r;

        dc_trace_close(dc);
        dc->have_pending = false;
        dc->trace_started = false;
        dc->events_since_open = 0;
        dc->trace_f = dc_trace_fopen(dc->trace_path);
        if (!dc->trace_f)
                return -errno;
        r = ca_trace_open_file(dc->trace_f, "/", &dc->trace);
        if (r < 0) {
                dc_trace_close(dc);
                return r;
        }
        return 0;
}

/* The next event, within what is left of the tick's bytes: ca_trace_next()'s answers. */
static int dc_trace_next(struct dc *dc)
{
        uint64_t before = ca_trace_bytes_read(dc->trace), n;
        int r;

        if (dc->tick_bytes_left == 0)
                return -EAGAIN;
        ca_trace_set_read_limit(dc->trace, dc->tick_bytes_left);
        r = ca_trace_next(dc->trace, &dc->pending);
        n = ca_trace_bytes_read(dc->trace) - before;
        dc->tick_bytes_left -= n < dc->tick_bytes_left ? n : dc->tick_bytes_left;
        dc->bytes_read += n;
        if (r > 0)
                dc->events_since_open++;
        return r;
}

/*
 * Read the next event into dc->pending. Returns 1, 0 at the end (after looping), -EAGAIN when
 * this tick has read or reopened all it may (the next tick goes on), or another negative errno.
 */
static int dc_trace_fill(struct dc *dc)
{
        int r;

        if (dc->have_pending)
                return 1;
        r = dc_trace_next(dc);
        if (r == 0 && dc->cfg.loop) {
                /* A log with no usable event would loop forever doing nothing. */
                if (dc->events_since_open == 0)
                        return 0;
                if (dc->tick_reopens >= DC_TICK_REOPENS_MAX)
                        return -EAGAIN; /* reopened at the next tick */
                r = dc_trace_open(dc);
                if (r < 0)
                        return r;
                dc->tick_reopens++;
                dc->reopens++;
                r = dc_trace_next(dc);
        }
        if (r <= 0)
                return r;
        dc->have_pending = true;
        return 1;
}

/*
 * Apply the events due by now, within the tick's bounds (@budget events, @deadline_usec).
 * Returns false when the log is done (or failed).
 */
static bool dc_trace_feed(struct dc *dc, uint64_t now_usec, unsigned budget,
                          uint64_t deadline_usec)
{
        unsigned n = 0;
        int r;

        dc->tick_bytes_left = DC_TICK_BYTES_MAX;
        dc->tick_reopens = 0;
        while (n < budget) {
                if (n % DC_TICK_CLOCK_EVERY == DC_TICK_CLOCK_EVERY - 1 &&
                    ca_now_usec() >= deadline_usec)
                        break;
                r = dc_trace_fill(dc);
                if (r == -EAGAIN)
                        break;
                if (r < 0) {
                        ca_host_log(dc->host, LOG_WARNING, "Failed to read %s: %s, replay stopped",
                                    dc->trace_path, strerror(-r));
                        return false;
                }
                if (r == 0) {
                        ca_host_log(dc->host, LOG_INFO, "%s: replay finished, %" PRIu64
                                    " lookups", dc->trace_path, dc->lookups);
                        return false;
                }
                if (dc->pending.time_usec == 0) {
                        /* No timestamps: paced by rate, from the owed count. */
                        if (dc->owed < 1)
                                break;
                        dc->owed -= 1;
                } else {
                        if (!dc->trace_started) {
                                dc->trace_t0_usec = dc->pending.time_usec;
                                dc->wall_t0_usec = now_usec;
                                dc->trace_started = true;
                        }
                        /* Due when its offset in the log, sped up, has passed on our clock. */
                        if (dc->pending.time_usec > dc->trace_t0_usec &&
                            (double)(dc->pending.time_usec - dc->trace_t0_usec) / dc->cfg.speed >
                                    (double)(now_usec - dc->wall_t0_usec))
                                break;
                        /* A log whose clock went backwards restarts its time base. */
                        if (dc->pending.time_usec < dc->trace_t0_usec) {
                                dc->trace_t0_usec = dc->pending.time_usec;
                                dc->wall_t0_usec = now_usec;
                        }
                }
                dc_apply(dc, &dc->pending);
                dc->have_pending = false;
                n++;
        }
        return true;
}

/* ---- the feeding timer ---- */

static void dc_tick(evutil_socket_t fd, short what, void *userdata)
{
        struct dc *dc = userdata;
        struct ca_dcache_stats st;
        uint64_t now = ca_now_usec();
        unsigned budget = DC_TICK_EVENTS_MAX, n = 0;

        dc->owed += (double)(now - dc->last_tick_usec) * (double)dc->cfg.rate / 1e6;
        dc->last_tick_usec = now;
        /* Whatever was not served in time is forgotten, not piled up. */
        if (dc->owed > DC_TICK_EVENTS_MAX)
                dc->owed = DC_TICK_EVENTS_MAX;

        ca_dcache_stats(dc->model, &st);
        if (st.nr_dentry >= dc->cfg.max_dentries) {
                if (!dc->paused)
                        ca_host_log(dc->host, LOG_NOTICE,
                                    "%" PRIu64 " dentries, max_dentries reached: source paused",
                                    st.nr_dentry);
                dc->paused = true;
                dc->owed = 0;
                if (dc->cfg.source == DC_STRACE)
                        dc->wall_t0_usec += DC_TICK_USEC; /* the log's clock stops too */
                return;
        }
        if (dc->paused)
                ca_host_log(dc->host, LOG_INFO, "%" PRIu64 " dentries: source resumed",
                            st.nr_dentry);
        dc->paused = false;

        if (dc->cfg.source == DC_STRACE) {
                if (!dc_trace_feed(dc, now, budget, now + DC_TICK_TIME_USEC)) {
                        /* Nothing more to feed: the timer goes off. */
                        event_del(dc->tick);
                        dc_trace_close(dc);
                }
                return;
        }
        while (dc->owed >= 1 && n < budget) {
                unsigned done = dc_generate(dc, budget - n);

                /* What a slow machine cannot generate in time is forgotten, as above. */
                if (n / DC_TICK_CLOCK_EVERY != (n + done) / DC_TICK_CLOCK_EVERY &&
                    ca_now_usec() >= now + DC_TICK_TIME_USEC) {
                        dc->owed = 0;
                        break;
                }
                n += done;
                dc->owed -= done;
        }
}

/* ---- hooks ---- */

static void dc_after_age(struct ca_cache *cache, void *userdata)
{
        struct dc *dc = userdata;

        /* The host ran the slice on the model's cache: free the victims it collected. */
        ca_dcache_dispose(dc->model);
}

static void dc_stats(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit, void *eu)
{
        struct dc *dc = userdata;
        struct ca_dcache_stats st;

        ca_dcache_stats(dc->model, &st);
        AD_GAUGE("nr_dentry", "dentries", "dentries in the model", st.nr_dentry);
        AD_GAUGE("nr_unused", "dentries", "dentries on the LRU, unused", st.nr_unused);
        AD_GAUGE("nr_negative", "dentries", "negative dentries on the LRU", st.nr_negative);
        AD_COUNTER("lookups", "lookups", "path lookups replayed or generated", dc->lookups);
        AD_COUNTER("hits", "lookups", "lookups that allocated no dentry", dc->hits);
        AD_COUNTER("trace_bytes_read", "bytes", "bytes of strace log read", dc->bytes_read);
        AD_COUNTER("trace_reopens", NULL, "times a looped strace log was started over",
                   dc->reopens);
}

static const struct ca_cache_hooks dc_hooks = {
        .after_age = dc_after_age,
        .stats = dc_stats,
};

/* ---- configuration ---- */

/* source = "strace:PATH" or "workload:NAME": cfg->source and cfg->trace_path from the text. */
static int dc_check_source(const char *v, void *target, char *msg, size_t msg_len)
{
        static const struct {
                const char *name;
                enum dc_source source;
        } workloads[] = {
                { "workload:pathsearch", DC_PATHSEARCH },
                { "workload:statstorm", DC_STATSTORM },
                { "workload:mixed", DC_MIXED },
        };
        struct dc_config *cfg = target;

        if (strncmp(v, "strace:", 7) == 0) {
                if (v[7] != '/') {
                        snprintf(msg, msg_len, "\"%s\": the log's path must be absolute", v);
                        return -EINVAL;
                }
                if (cfg) {
                        cfg->source = DC_STRACE;
                        cfg->trace_path = v + 7;
                }
                return 0;
        }
        for (size_t i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
                if (strcmp(v, workloads[i].name) == 0) {
                        if (cfg)
                                cfg->source = workloads[i].source;
                        return 0;
                }
        snprintf(msg, msg_len, "invalid source \"%s\" (expected strace:PATH, workload:pathsearch, "
                 "workload:statstorm or workload:mixed)", v);
        return -EINVAL;
}

/* Adding a key is adding a line here (and its use in dc_parse() or the feeding code). */
static const struct ca_key_spec dc_keys[] = {
        { .name = "source", .type = CA_KEY_STRING, CA_KEY_FIELD(struct dc_config, source_key),
          .def = "workload:mixed", .check = dc_check_source,
          .help = "strace:PATH or workload:pathsearch|statstorm|mixed" },
        { .name = "rate", .type = CA_KEY_UINT, CA_KEY_FIELD(struct dc_config, rate),
          .def = STR(DC_RATE_DEFAULT), .min = 1, .max = DC_RATE_MAX,
          .help = "lookups per second (workloads, strace logs without times)" },
        { .name = "speed", .type = CA_KEY_DECIMAL, CA_KEY_FIELD(struct dc_config, speed),
          .def = "1", .dmin = DC_SPEED_MIN, .dmax = DC_SPEED_MAX,
          .help = "strace: replay speed factor" },
        { .name = "loop", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct dc_config, loop), .def = "no",
          .help = "strace: start over at the end of the log" },
        { .name = "tail_negative", .type = CA_KEY_BOOL,
          CA_KEY_FIELD(struct dc_config, params.tail_negative), .def = "no",
          .help = "sweep negative dentries to the tail of their parent's list" },
        { .name = "negative_ratio", .type = CA_KEY_CHOICE,
          CA_KEY_FIELD(struct dc_config, negative_ratio), .def = "off",
          .choices = (const struct ca_key_choice[]){ { "off", DC_RATIO_OFF }, { NULL, 0 } },
          .flags = CA_KEY_NUMBER, .min = 0, .max = CA_DCACHE_RATIO_MAX,
          .help = "at most N negatives per positive child" },
        { .name = "ratio_mode", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct dc_config, ratio_mode),
          .def = "counted",
          .choices = (const struct ca_key_choice[]){ { "counted", DC_RATIO_COUNTED },
                                                     { "cursor", DC_RATIO_CURSOR },
                                                     { NULL, 0 } },
          .help = "counted (oldest negative first) or cursor (Brennan's scan)" },
        { .name = "max_dentries", .type = CA_KEY_UINT, CA_KEY_FIELD(struct dc_config, max_dentries),
          .def = STR(DC_MAX_DENTRIES_DEFAULT), .min = 1, .max = DC_MAX_DENTRIES_MAX,
          .help = "the source pauses above this many dentries" },
        CA_KEY_END
};

/* The table, then what ties keys together. */
static int dc_parse(struct ca_host *host, const struct ca_section *s, struct dc_config *cfg)
{
        bool ratio_on;
        int r;

        *cfg = (struct dc_config){ .params = CA_DCACHE_PARAMS_DEFAULT };
        cfg->params.aging = true;
        r = ca_section_parse(host, s, dc_keys, cfg);

        ratio_on = cfg->negative_ratio != DC_RATIO_OFF;
        if (ratio_on)
                cfg->params.ratio = (uint32_t)cfg->negative_ratio;
        else if (ca_section_get(s, "ratio_mode") && !ca_section_get(s, "negative_ratio"))
                ca_host_log(host, LOG_NOTICE, "ratio_mode has no effect without negative_ratio, "
                            "ignoring");
        cfg->params.ratio_cursor = ratio_on && cfg->ratio_mode == DC_RATIO_CURSOR;
        cfg->params.ratio_counted = ratio_on && cfg->ratio_mode == DC_RATIO_COUNTED;

        if (cfg->source != DC_STRACE) {
                if (ca_section_get(s, "speed"))
                        ca_host_log(host, LOG_NOTICE, "speed applies to strace logs only, "
                                    "ignoring");
                if (ca_section_get(s, "loop"))
                        ca_host_log(host, LOG_NOTICE, "loop applies to strace logs only, "
                                    "ignoring");
        }
        if (r == 0 && ca_dcache_validate_params(&cfg->params) < 0) {
                ca_host_key_error(host, s, NULL, "the model refused these policy settings");
                r = -EINVAL;
        }
        return r;
}

/* ---- create / destroy ---- */

static void dc_destroy(void *instance)
{
        struct dc *dc = instance;

        if (!dc)
                return;
        if (dc->model)
                ca_host_unregister_cache(dc->host, ca_dcache_cache(dc->model));
        if (dc->tick)
                event_free(dc->tick);
        dc_trace_close(dc);
        ca_replay_free(dc->replay);
        ca_dcache_free(dc->model);
        free(dc->trace_path);
        free(dc->name);
        free(dc);
}

static int dc_create(struct ca_host *host, const struct ca_section *s, void **ret_instance)
{
        struct dc_config cfg;
        struct timeval tv = { .tv_sec = 0, .tv_usec = DC_TICK_USEC };
        struct event_base *base;
        struct dc *dc;
        int r;

        r = dc_parse(host, s, &cfg);
        if (r < 0)
                return r;
        if (ca_host_check_only(host)) {
                /* Nothing is opened in a check, but a log that is not there is said now. */
                r = cfg.source == DC_STRACE ? dc_trace_check(cfg.trace_path) : 0;
                if (r < 0) {
                        dc_trace_error(host, s, cfg.trace_path, r);
                        return r;
                }
                *ret_instance = NULL;
                return 0;
        }

        dc = calloc(1, sizeof(*dc));
        if (!dc)
                return -ENOMEM;
        dc->host = host;
        dc->cfg = cfg;
        dc->name = strdup(ca_section_name(s));
        dc->rng = 0x9e3779b97f4a7c15ULL;
        dc->last_tick_usec = ca_now_usec();
        if (!dc->name)
                goto out_oom;
        if (cfg.source == DC_STRACE) {
                dc->trace_path = strdup(cfg.trace_path);
                if (!dc->trace_path)
                        goto out_oom;
                r = dc_trace_open(dc);
                if (r < 0) {
                        dc_trace_error(host, s, dc->trace_path, r);
                        goto out_destroy;
                }
        }
        dc->cfg.trace_path = NULL; /* the section's string does not outlive create() */

        r = ca_dcache_new(&cfg.params, &dc->model);
        if (r == 0)
                r = ca_replay_new(dc->model, &dc->replay);
        if (r < 0)
                goto out_destroy;
        base = ca_host_event_base(host);
        if (!base) {
                r = -EINVAL;
                goto out_destroy;
        }
        dc->tick = event_new(base, -1, EV_PERSIST, dc_tick, dc);
        if (!dc->tick)
                goto out_oom;
        r = ca_host_register_cache(host, s, ca_dcache_cache(dc->model), &dc_hooks, dc);
        if (r < 0)
                goto out_destroy;
        event_add(dc->tick, &tv);
        *ret_instance = dc;
        return 0;

out_oom:
        r = -ENOMEM;
out_destroy:
        /* Unregistering a cache the host does not know is a no-op. */
        dc_destroy(dc);
        return r;
}

__attribute__((visibility("default"))) const struct ca_plugin cacheage_plugin = {
        .abi = CA_PLUGIN_ABI,
        .size = sizeof(struct ca_plugin),
        .name = "dcache",
        .description = "a dentry-cache model fed by strace logs or built-in workloads",
        .create = dc_create,
        .destroy = dc_destroy,
};
