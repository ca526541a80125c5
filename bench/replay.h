/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The replay lab's pieces (bench/replay.c says what the lab measures): the simulation
 * (replay-sim.c: a trace loaded once with the walks of its events, every policy stepped over
 * it in lockstep, the figures), the report (replay-report.c: the table, the JSON, the plot)
 * and the capture of a live workload under strace (replay-capture.c). Single-threaded.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cacheage/dcache.h"
#include "cacheage/replay.h"
#include "cacheage/trace.h"

#define CAPTURE_FILES 50u                /* files per directory in the capture */
#define SVG_BUCKETS 800u                 /* points per line of the plot at most */
#define POLICIES_MAX 224u                /* rows of a run (the frontier's grid among them) */
#define ROTATE_LIST_MAX 8u               /* intervals in --rotate-ms, --rotate-events */
#define DIRS_MAX 8u                      /* --dir */
#define WALKS_MAX 2u                     /* walks per event: rename and link have two */
#define WINDOW_S 180u                    /* the window of the worst-window figures, seconds */

/* What the command line asked for. */
struct config {
        bool json, check, capture;
        const char *svg;
        const char *out;
        const char *cwd;
        uint64_t loop;
        size_t capture_names;
        uint64_t rotate_ms[ROTATE_LIST_MAX];
        size_t nrotate_ms;
        uint64_t rotate_events[ROTATE_LIST_MAX];
        size_t nrotate_events;
        bool rotate_events_given; /* event-clock rows even for logs with timestamps */
        struct ca_params age;   /* the ages of every aging row; refault_window: of the -rf rows */
        bool ages_auto;         /* --ages auto: aging-auto rows too */
        double target_dead;     /* --target: dead/none at most, extra misses at most (%) */
        double target_extra_pct;
        bool target_given;
        double horizon_s;       /* --horizon: < 0 for the default (the trace's longest round) */
        bool frontier;          /* --frontier: the grid of fixed ages too, for aging-auto */
        uint32_t ratio;
        char *dirs[DIRS_MAX];
        size_t ndirs;
};

/* path identities: (parent id, name) -> id; id 0 is "/" */

struct ident {
        uint32_t parent;
        uint32_t hash;
        size_t name;   /* offset in names */
        uint32_t len;
};

struct idents {
        struct ident *v;
        size_t n, cap;
        uint32_t *slots; /* id + 1; 0 empty */
        size_t nslots;   /* a power of two */
        char *names;
        size_t names_len, names_cap;
};

/* a trace, loaded once, with the walks of each event */

struct comp {
        uint32_t id;
        uint32_t start, len; /* in the walk's path */
};

struct walk {
        size_t path;         /* offset in the trace's strings */
        uint32_t comp0, n;   /* components walked: comps[comp0 .. comp0 + n) */
        bool stop_negative;  /* ENOENT: a cached negative component ends the walk */
};

struct levent {
        uint64_t time_usec;
        size_t path, path2;  /* offsets; SIZE_MAX: none */
        int result, pid;
        enum ca_trace_op op;
        uint32_t walk0, nwalks;
};

struct trace {
        char file[PATH_MAX];
        char cwd[PATH_MAX];
        char *dirs[DIRS_MAX];   /* directories whose negatives are reported */
        size_t ndirs;
        struct ca_trace_stats rstats;

        char *str;
        size_t str_len, str_cap;
        struct levent *ev;
        size_t nev, ev_cap;
        struct walk *walks;
        size_t nwalks, walks_cap;
        struct comp *comps;
        size_t ncomps, comps_cap;
        struct idents ids;
        bool has_time;           /* timestamps fine enough to rotate by (not -t's seconds) */
        uint64_t t0_usec, t1_usec; /* the first and the last timestamp */
        uint64_t exits_logged;   /* EXIT events of the log ("+++ exited" and the like) */
        uint64_t exits_added;    /* EXIT events added after a pid's last event (trace_load()) */
        uint64_t round_usec;     /* the longest a program took to run again: between two
                                    successful execs of one path (0: none ran twice) */
};

/* the policies, and one replay of a trace under all of them */

enum kind {
        P_NONE,
        P_TAIL,
        P_CURSOR,
        P_COUNTED,
        P_AGING,
        P_ORACLE,
};

/* The aging rows: as today, with the refault memory, with adaptive ages. */
enum aging {
        AGING_FIXED,            /* aging@T: fixed ages, no refault memory */
        AGING_REFAULT,          /* aging-rf@T: fixed ages; a refault starts as reused */
        AGING_AUTO,             /* aging-auto@T: ages = auto (and own ages) */
        _AGING_MAX,
};

struct dir_fig {
        uint64_t peak_negative, final_negative;
        long double sum_negative, sum_children;
};

struct policy {
        char name[32];
        enum kind kind;
        enum aging aging;       /* P_AGING's variant */
        bool grid;              /* a fixed-age row of --frontier's grid (not in the table) */
        uint32_t single_use_age, max_age; /* the grid row's ages (else the configuration's) */
        uint64_t rotate_usec;   /* aging on the trace-time clock */
        uint64_t rotate_events; /* aging on the event clock */
        struct ca_dcache *d;
        struct ca_replay *r;    /* the events into d: /proc as the kernel keeps it */

        uint64_t next_rotation_usec;
        uint64_t rotations;
        uint64_t dead;          /* resident after their last use, now */
        bool recount;           /* something may have been killed: count exactly */

        /* figures */
        uint64_t peak, peak_negative, peak_dead;
        long double sum, sum_negative, dead_time;
        uint64_t lookups, hits, misses, extra;
        /*
         * The same over time (trace time, or steps without timestamps) and only up to the
         * horizon: dead and resident dentries integrated from one change to the next (an
         * event, a rotation), the lookups of the events before it; and per second, for the
         * windows.
         */
        uint64_t resident;      /* now, the root excepted */
        uint64_t t_mark;        /* integrated up to here */
        long double tw_dead, tw_resident;
        uint64_t lookups_h, extra_h;
        double *w_dead, *w_resident;    /* per second of trace time (run->nsec) */
        uint32_t *w_lookups, *w_extra;
        /* aging-auto: the ages in force, at each rotation that changed them */
        struct age_point *ages;
        size_t nages, ages_cap;
        uint64_t reclaimed;     /* by the policy (or the oracle) */
        struct ca_stats age_stats; /* aging: the framework's, at the end */
        uint64_t refault_hist[CA_REFAULT_BUCKETS];
        uint64_t watch_visits;  /* "watch every directory" at the end */
        uint64_t check_diffs;
        uint32_t *series;       /* the plot: highest resident per run->bucket steps */
        struct dir_fig dirs[DIRS_MAX];
        uint32_t hits_walk[WALKS_MAX];
        bool negative_walk[WALKS_MAX];
};

/* The ages auto chose, from a rotation on. */
struct age_point {
        uint64_t rotation;
        uint64_t step;          /* the event step it came before */
        uint64_t t_usec;        /* trace time (steps without timestamps) */
        uint32_t single_use_age, max_age;
};

struct dying;
struct frame;

struct run {
        struct trace *t;
        struct policy p[POLICIES_MAX];
        size_t np;               /* the table's rows, the oracle last */
        size_t nall;             /* and --frontier's grid after them */
        uint64_t steps;          /* events x loop */
        uint64_t failed;         /* events the model refused (once per event) */
        int64_t *last;           /* by identity: the last step walking it; -1 never */
        uint64_t span_usec;      /* first to last event, and one step more, per repetition */
        bool timed;              /* the clock of the figures over time is the trace's */
        uint64_t t_end;          /* the last event's time (or step) */
        uint64_t horizon;        /* time (or steps) at the end not counted */
        uint64_t t_cut;          /* t_end - horizon: the figures over time stop here */
        size_t nsec;             /* seconds of trace time, for the windows (0: none) */
        double seconds;          /* wall time of the replay */
        uint64_t bucket;         /* steps per point of the plot */
        /* scratch of the steps */
        struct dying *dy;        /* this step's last uses */
        size_t ndy, dy_cap;
        uint64_t *seen;          /* by identity: step + 1 when put in dy */
        struct frame *stack;     /* recount_dead()'s */
        size_t stack_cap;
};

/* --- replay-sim.c ---------------------------------------------------------------------------- */

/* trace_load() - read t->file (with t->cwd, t->dirs set): its events and their walks. */
int trace_load(struct trace *t);
/*
 * trace_check_exits() - for --check: how many pids a loaded trace names (as the caller, or in a
 * path under /proc/N) after their last EXIT, or without any EXIT after their last event: each
 * process must end, and after the last event that names it (1 when out of memory).
 */
uint64_t trace_check_exits(const struct trace *t);
void trace_done(struct trace *t);

/*
 * run_trace() - replay run->t under every policy @cfg asks for, cfg->loop times, and fill in
 * the figures. Returns 0 or a negative errno.
 */
int run_trace(struct run *run, const struct config *cfg);
void run_done(struct run *run);

/* --- replay-report.c ------------------------------------------------------------------------- */

/* The name --controller takes for @variant (enum ca_auto_controller), "?" if none. */
const char *controller_name(uint32_t variant);

/* The figures of @nruns runs: a table, or one JSON object, on stdout. */
void print_human(const struct run *runs, size_t nruns, const struct config *cfg);
void print_json(const struct run *runs, size_t nruns, const struct config *cfg);

/* write_svg() - the plot of resident dentries per step into @file. Returns 0 or -errno. */
int write_svg(const char *file, const struct run *runs, size_t nruns);

/* --- replay-xz.c ----------------------------------------------------------------------------- */

/* Whether @path names an xz-compressed log (it ends in ".xz"). */
bool xz_named(const char *path);

/* xz_fopen() - @path decompressed as it is read. Returns 0 or a negative errno. */
int xz_fopen(const char *path, FILE **ret);

/* --- replay-capture.c ------------------------------------------------------------------------ */

/*
 * capture() - record a real workload under strace now, into cfg->out; t->file names the log
 * and t->dirs the directories it stat'ed. Returns 0 or a negative errno.
 */
int capture(const struct config *cfg, struct trace *t);
