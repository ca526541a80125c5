/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An adapter's worker thread (see adapter-worker.h). `lock` guards `pending` and `quit`: the
 * loop sets pending and the worker clears it, and that is the handover of the job's data; quit
 * is set once, by aw_free(). `busy` is the loop's alone: it also covers the time between the
 * worker's signal and the done callback.
 */

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "adapter-thread.h"
#include "adapter-worker.h"

struct aw {
        const struct aw_ops *ops;
        void *userdata;
        pthread_t thread;
        bool thread_started;
        pthread_mutex_t lock;
        pthread_cond_t cond;   /* CLOCK_MONOTONIC, for aw_sleep() */
        bool pending, quit;    /* under lock */
        bool busy;             /* the loop's */
        int efd;
        struct event *done_ev;
};

static void *aw_main(void *userdata)
{
        struct aw *w = userdata;
        uint64_t one = 1;

        pthread_mutex_lock(&w->lock);
        for (;;) {
                while (!w->pending && !w->quit)
                        pthread_cond_wait(&w->cond, &w->lock);
                if (w->quit)
                        break;
                pthread_mutex_unlock(&w->lock);
                w->ops->run(w, w->userdata);
                pthread_mutex_lock(&w->lock);
                w->pending = false;
                /* An eventfd counter write cannot fail short of overflow. */
                (void)!write(w->efd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

static void aw_done(evutil_socket_t fd, short what, void *userdata)
{
        struct aw *w = userdata;
        uint64_t n;
        bool pending;

        if (read(w->efd, &n, sizeof(n)) < 0)
                return;
        pthread_mutex_lock(&w->lock);
        pending = w->pending;
        pthread_mutex_unlock(&w->lock);
        if (pending || !w->busy)
                return;
        w->busy = false;
        w->ops->done(w->userdata);
}

struct aw *aw_free(struct aw *w)
{
        if (!w)
                return NULL;
        if (w->thread_started) {
                pthread_mutex_lock(&w->lock);
                w->quit = true;
                pthread_cond_broadcast(&w->cond);
                pthread_mutex_unlock(&w->lock);
                pthread_join(w->thread, NULL);
        }
        if (w->done_ev)
                event_free(w->done_ev);
        if (w->efd >= 0)
                close(w->efd);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return NULL;
}

int aw_new(struct event_base *base, const struct aw_ops *ops, void *userdata, struct aw **ret)
{
        pthread_condattr_t attr;
        struct aw *w;
        int r;

        if (!base)
                return -EINVAL;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->ops = ops;
        w->userdata = userdata;
        w->efd = -1;
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);
        w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (w->efd < 0) {
                r = -errno;
                goto out_free;
        }
        w->done_ev = event_new(base, w->efd, EV_READ | EV_PERSIST, aw_done, w);
        if (!w->done_ev || event_add(w->done_ev, NULL) < 0) {
                r = -ENOMEM;
                goto out_free;
        }
        r = adapter_thread_create(&w->thread, aw_main, w);
        if (r < 0)
                goto out_free;
        w->thread_started = true;
        *ret = w;
        return 0;

out_free:
        aw_free(w);
        return r;
}

void aw_submit(struct aw *w)
{
        w->busy = true;
        pthread_mutex_lock(&w->lock);
        w->pending = true;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
}

bool aw_busy(const struct aw *w)
{
        return w->busy;
}

bool aw_stopping(struct aw *w)
{
        bool quit;

        pthread_mutex_lock(&w->lock);
        quit = w->quit;
        pthread_mutex_unlock(&w->lock);
        return quit;
}

bool aw_sleep(struct aw *w, uint64_t usec)
{
        struct timespec until;
        bool quit;

        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t)(usec / 1000000);
        until.tv_nsec += (long)(usec % 1000000) * 1000;
        if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&w->lock);
        while (!w->quit && pthread_cond_timedwait(&w->cond, &w->lock, &until) != ETIMEDOUT)
                ;
        quit = w->quit;
        pthread_mutex_unlock(&w->lock);
        return !quit;
}
