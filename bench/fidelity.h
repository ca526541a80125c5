/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * bench-fidelity's pieces (bench/fidelity.c says what it measures): the capture of a command
 * under strace with what the log cannot show (fidelity-capture.c: the mount table and the
 * paths every process holds, taken before the run; the names probed right after it), and the
 * replay of a capture into a fresh model. Single-threaded.
 */

#include <stdbool.h>
#include <stdint.h>

#include "cacheage/replay.h"
#include "cacheage/trace.h"

/* What strace records: every path walk, and the references' lifetimes (trace.h). */
#define FID_TRACE_SET "%file,%process,fchdir,close,close_range,dup,dup2,dup3,fcntl,mmap,munmap"

enum { NR_DENTRY, NR_UNUSED, NR_NEGATIVE, NR_COUNTERS };

/* Changes of /proc/sys/fs/dentry-state's nr_dentry, nr_unused, nr_negative. */
struct counts {
        int64_t v[NR_COUNTERS];
};

/* A command, where and how it runs. */
struct command {
        char *const *argv;  /* argv[0] absolute */
        const char *cwd;    /* canonical; the benchmark runs there too, so it stays held */
        char *const *envp;
};

/* What the model made of a capture. */
struct model {
        struct counts delta;          /* nr_dentry - 1 - warm, nr_unused, nr_negative */
        struct ca_replay_stats rs;
        struct ca_trace_stats ts;
        struct ca_dcache_stats ds;
};

/* The mount table and the paths every process holds now (taken before the traced run). */
struct snapshot {
        char **mounts, **fstypes;
        size_t nmounts;
        char **pins;
        size_t npins;
};

int snapshot_take(struct snapshot *ret);
void snapshot_done(struct snapshot *s);

/*
 * capture() - run @c under strace into @log (stdout and stderr to /dev/null), then probe the
 * names it walked and write the capture information next to it, @log + ".info", from @snap.
 * Returns 0, or a negative errno (-ENOENT: no strace; -ECHILD: the command failed).
 */
int capture(const struct command *c, const struct snapshot *snap, const char *log);

/* replay_capture() - @log (and @log.info) replayed into a fresh model. Returns 0 or -errno. */
int replay_capture(const char *log, const char *cwd, struct model *ret);

/*
 * replay_plain() - @log replayed as before references and capture information: the reader
 * without CA_TRACE_REFS or @log.info, each event into ca_dcache_replay() alone, from an empty
 * model. On the seven workloads' captures it gave what the replay of 890a867 gave, counter
 * for counter, until the reader took a readlink's EINVAL for the lookup it is (gcc's and
 * realpath()'s walks count there too now): the "before" of doc/benchmarks.md's table. Returns
 * 0 or -errno.
 */
int replay_plain(const char *log, const char *cwd, struct counts *ret);

/* run_quiet() - fork, exec @c with /dev/null as stdio, wait. Returns 0, -ECHILD, -errno. */
int run_quiet(const struct command *c, char *const *argv);
