/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * An adapter's thread of its own (a worker, a guard): started with the signals the daemon's loop
 * handles (SIGTERM, SIGINT, SIGHUP) blocked, so that the kernel delivers them to the loop's
 * thread and never to this one. Delivered to another thread, a SIGTERM was seen to go unhandled
 * under ThreadSanitizer (which runs a handler when that thread reaches one of its hooks): the
 * daemon went on, no STOPPING=1. Other signals (the guard's interruption of a write) are left
 * as they are. Returns 0 or a negative errno.
 */

#include <errno.h>
#include <pthread.h>
#include <signal.h>

static inline int adapter_thread_create(pthread_t *ret, void *(*fn)(void *), void *userdata)
{
        sigset_t set, old;
        int r;

        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &set, &old);
        r = -pthread_create(ret, NULL, fn, userdata);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return r;
}
