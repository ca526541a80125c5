/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A worker thread for an adapter instance, for work that may wait long in the kernel (a write
 * to memory.reclaim, an unlinkat() that discards blocks) and so must not run on the host's
 * loop. The loop hands it one job at a time; the thread runs it and signals an eventfd that
 * the loop watches, and the loop takes the results there, on its own thread, where it may log,
 * change its tables and call the host.
 *
 * The job's data is the adapter's own: the loop writes it only while no job is under way
 * (before aw_submit(), and in the done callback), the run callback only while one is. The
 * handover goes through the worker's mutex in both directions, so the writes of one side
 * happen before the reads of the other (ThreadSanitizer agrees): nothing else is needed.
 *
 * Used by the kernel adapter (a rotation's whole refresh) and the files adapter (deletions).
 */

#include <stdbool.h>
#include <stdint.h>

struct event_base;
struct aw;

struct aw_ops {
        /* On the worker thread: run the job. It may cut the job short once aw_stopping(@w). */
        void (*run)(struct aw *w, void *userdata);
        /* On the loop: the job is done and its results may be read. */
        void (*done)(void *userdata);
};

/*
 * aw_new() - start a worker whose done callback runs on @base. Returns 0 and the worker in
 * *ret, or a negative errno (eventfd, libevent, pthread_create).
 */
int aw_new(struct event_base *base, const struct aw_ops *ops, void *userdata, struct aw **ret);

/*
 * aw_free() - stop the worker and wait for its thread (a job under way ends first: the run
 * callback sees aw_stopping() and should return soon; a system call it is in is waited for).
 * The done callback of that job is not called. Accepts NULL; returns NULL. On the loop.
 */
struct aw *aw_free(struct aw *w);

/* aw_submit() - run the job now on the worker. On the loop, and only while !aw_busy(). */
void aw_submit(struct aw *w);

/* aw_busy() - a job submitted and its done callback not yet run. On the loop. */
bool aw_busy(const struct aw *w);

/* aw_stopping() - on the worker, in the run callback: the worker goes, end the job. */
bool aw_stopping(struct aw *w);

/*
 * aw_sleep() - on the worker: wait @usec, or less when the worker is stopped meanwhile.
 * Returns false when it is stopping.
 */
bool aw_sleep(struct aw *w, uint64_t usec);
