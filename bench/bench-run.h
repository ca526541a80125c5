/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the benchmarks that run real processes share (bench-memcached, bench-memcached-value,
 * bench-files-value): a run directory and the children of the run (a memcached, cacheaged), both
 * gone at exit whatever ends the run; the figures of a process. Everything that cannot be done
 * dies with a message naming it (bench_die()), as benchmarks report and do not recover.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

/* The program's name, for messages; set it first thing in main(). */
extern const char *bench_prog;

void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
uint64_t bench_now_usec(void);     /* CLOCK_MONOTONIC */
/* Sleep until bench_now_usec() reaches @t_usec; at once if it has. */
void bench_sleep_until(uint64_t t_usec);
uint64_t bench_wall_usec(void);    /* CLOCK_REALTIME: memcached's log lines' ts= */
/* bench_env() - a path meson sets (CACHEAGED, CA_ADAPTER_DIR), made absolute, or die. */
const char *bench_env(const char *name);
/* bench_loadavg() - the 1-minute load average, -1 when unknown. */
double bench_loadavg(void);

/*
 * bench_run_dir() - the run's directory (made at the first call, mode 0755), removed at exit,
 * after every child still running is killed; CA_BENCH_KEEP=1 keeps it (the logs).
 */
const char *bench_run_dir(void);

struct bench_child {
        pid_t pid;
        char log[256];
};

/*
 * bench_child_start() - run @argv with stdout and stderr to @log, @envp_extra ("NAME=value",
 * NULL-ended, may be NULL) added, at SCHED_IDLE when @sched_idle, as nobody when @as_nobody and
 * this runs as root; it gets SIGKILL if this process dies.
 */
void bench_child_start(struct bench_child *c, const char *const argv[], const char *log,
                     const char *const envp_extra[], bool sched_idle, bool as_nobody);
/* bench_child_stop() - SIGTERM, then SIGKILL after 5 s; reaped. */
void bench_child_stop(struct bench_child *c);
/*
 * bench_child_exited() - whether it has exited (reaped: its status and resource usage in
 * @ret_status and @ret_usage, either may be NULL), without waiting.
 */
bool bench_child_exited(struct bench_child *c, int *ret_status, struct rusage *ret_usage);
/* bench_read_file() - a file's text (malloc()ed; "" when it cannot be read). */
char *bench_read_file(const char *path);
/*
 * bench_wait_log() - wait up to @timeout_usec for a line holding @needle in the child's log:
 * true, the line in @ret_line (may be NULL); false when the child exited first or on timeout.
 */
bool bench_wait_log(struct bench_child *c, const char *needle, uint64_t timeout_usec,
                    char *ret_line, size_t size);
uint64_t bench_rss_kib(pid_t pid);   /* VmRSS */
uint64_t bench_hwm_kib(pid_t pid);   /* VmHWM: the highest VmRSS so far */
uint64_t bench_cpu_usec(pid_t pid);  /* user + system time */
