/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vm.vfs_cache_pressure set for one write and never left so (kernel-knob.h says the rules).
 *
 * Locks: a guard's mutex guards the setting under way (armed .. back_usec) between the thread
 * that set it and the guard's thread; the flock() on the run directory's lock file is held by
 * the setting thread from kk_set() to kk_put_back() and orders settings across processes and
 * guards. The flock is taken first; the mutex is never held across a sleep but the guard's
 * condition wait.
 *
 * The run directory is the root's (systemd makes it: RuntimeDirectory=cacheage). Anything else
 * there could make kk_restore() write a value of its choosing, so it is used only while it is
 * a directory owned by this process's user that nobody else may write, opened without following
 * a symlink, and the files in it are opened without following one either.
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adapter-thread.h"
#include "kernel-knob.h"
#include "kernel-sys.h"

#define KK_RECORD_MAX 64              /* bytes of a record */
#define KK_VALUE_MAX UINT32_MAX       /* the knob is an int in the kernel */

struct kk_guard {
        const char *root;
        uint64_t bound_usec;
        uint64_t grace_usec;          /* KK_GRACE_USEC but in tests (kk_guard_grace()) */
        pthread_t thread;
        bool have_thread;
        bool normal_sched;            /* the guard's thread left idle priority */

        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool stop;
        /* the setting under way, under lock */
        bool armed;
        bool lowered;                 /* below the value found: interrupt the write first */
        bool in_write, interrupted;
        pthread_t writer;
        uint64_t found, value;
        uint64_t set_usec, deadline_usec, back_usec;
        bool cut;
        int error;                    /* putting it back failed: the record stays */
        char said[KK_MSG_MAX];        /* what the guard's thread has to say, for kk_put_back() */

        /* the setting thread's own, from kk_set() to kk_put_back() */
        int dir_fd, lock_fd;
        bool sched_changed;
        int sched_policy;
        struct sched_param sched_param;
};

static uint64_t now_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void say(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *msg, size_t len, const char *fmt, ...)
{
        va_list ap;

        if (!msg || !len)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
}

/*
 * The run directory, opened: made first where @create (and its parent "run" below a test's
 * root), refused unless it is ours alone. -ENOENT when it is not there and not to be made.
 */
static int run_dir_open(const char *root, bool create, int *ret_fd, char *msg, size_t len)
{
        char path[KS_PATH_MAX];
        size_t n = strlen(root);
        struct stat st;
        int fd;

        while (n > 0 && root[n - 1] == '/')
                n--;
        if ((size_t)snprintf(path, sizeof(path), "%.*s%s", (int)n, root, KK_RUN_DIR) >=
            sizeof(path))
                return -ENAMETOOLONG;
        /* Each of its components below the root ("run" may be missing below a test's). */
        for (char *c = path + n + 1; create; c++) {
                char was = *c;

                if (was != '/' && was != '\0')
                        continue;
                *c = '\0';
                if (mkdir(path, 0755) < 0 && errno != EEXIST) {
                        say(msg, len, "cannot make %s: %s", path, strerror(errno));
                        return -errno;
                }
                *c = was;
                if (!was)
                        break;
        }
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno != ENOENT)
                        say(msg, len, "cannot open %s: %s", path, strerror(errno));
                return -errno;
        }
        if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 022)) {
                say(msg, len, "%s is not a directory of uid %u alone, ignoring it", path,
                    (unsigned)geteuid());
                close(fd);
                return -EPERM;
        }
        *ret_fd = fd;
        return 0;
}

/* The lock shared by every process, taken at once or -EBUSY. */
static int lock_take(int dir_fd, int *ret_fd, char *msg, size_t len)
{
        int fd = openat(dir_fd, KK_LOCK_FILE,
                        O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);

        if (fd < 0) {
                say(msg, len, "cannot open %s/%s: %s", KK_RUN_DIR, KK_LOCK_FILE, strerror(errno));
                return -errno;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                int r = errno == EWOULDBLOCK ? -EBUSY : -errno;

                close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

static void lock_drop(int *fd)
{
        if (*fd >= 0) {
                (void)flock(*fd, LOCK_UN);
                close(*fd);
        }
        *fd = -1;
}

/* The record: 1 and its two values, 0 when there is none, -EBADMSG when it is not one. */
static int record_read(int dir_fd, uint64_t *ret_found, uint64_t *ret_value)
{
        char buf[KK_RECORD_MAX], *end;
        unsigned long long a, b;
        ssize_t n;
        int fd;

        fd = openat(dir_fd, KK_RECORD_FILE, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        errno = 0;
        a = strtoull(buf, &end, 10);
        if (errno || end == buf || *end != ' ')
                return -EBADMSG;
        b = strtoull(end + 1, &end, 10);
        if (errno || *end != '\n' || end[1] != '\0' || a > KK_VALUE_MAX || b > KK_VALUE_MAX)
                return -EBADMSG;
        *ret_found = a;
        *ret_value = b;
        return 1;
}

/* Written whole or not at all: a file of its own, then renamed over the record. */
static int record_write(int dir_fd, uint64_t found, uint64_t value)
{
        static const char tmp[] = KK_RECORD_FILE ".new";
        char buf[KK_RECORD_MAX];
        int fd, r = 0, n;

        n = snprintf(buf, sizeof(buf), "%" PRIu64 " %" PRIu64 "\n", found, value);
        (void)unlinkat(dir_fd, tmp, 0);
        fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        if (write(fd, buf, (size_t)n) != n || fsync(fd) < 0)
                r = errno ? -errno : -EIO;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && renameat(dir_fd, tmp, dir_fd, KK_RECORD_FILE) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(dir_fd, tmp, 0);
        return r;
}

/*
 * Under the lock: what a dead process left, put back. 1 when a value was written back, 0 when
 * nothing was to be done; the record is gone after either.
 */
static int repair_locked(const char *root, int dir_fd, char *msg, size_t len)
{
        uint64_t found = 0, value = 0, now;
        int r, rec;

        r = ks_read_vfs_cache_pressure(root, &now);
        if (r < 0) {
                say(msg, len, "cannot read vm.vfs_cache_pressure: %s", strerror(-r));
                return r;
        }
        rec = dir_fd >= 0 ? record_read(dir_fd, &found, &value) : 0;
        if (rec < 0) {
                say(msg, len, "%s/%s is not a record of ours (%s), removed", KK_RUN_DIR,
                    KK_RECORD_FILE, strerror(-rec));
                (void)unlinkat(dir_fd, KK_RECORD_FILE, 0);
                rec = 0;
        }
        if (rec == 0) {
                if (now != KK_UNRECORDED_VALUE)
                        return 0;
                found = KK_KERNEL_DEFAULT;
                value = KK_UNRECORDED_VALUE;
        }
        if (now != value) {
                /* Written since by someone else (or never changed): theirs stays. */
                if (dir_fd >= 0)
                        (void)unlinkat(dir_fd, KK_RECORD_FILE, 0);
                return 0;
        }
        r = ks_write_vfs_cache_pressure(root, found);
        if (r < 0) {
                say(msg, len, "vm.vfs_cache_pressure is %" PRIu64 ", left by a cacheaged stopped "
                    "while it was set, and cannot be put back to %" PRIu64 ": %s", now, found,
                    strerror(-r));
                return r;
        }
        if (dir_fd >= 0)
                (void)unlinkat(dir_fd, KK_RECORD_FILE, 0);
        say(msg, len, "vm.vfs_cache_pressure was %" PRIu64 ", left by a cacheaged stopped while "
            "it was set%s: put back to %" PRIu64, now,
            rec ? "" : " (no record: the kernel's default)", found);
        return 1;
}

int kk_restore(const char *root, char *msg, size_t len)
{
        int dir_fd = -1, lock_fd = -1, r;

        say(msg, len, "%s", "");
        r = run_dir_open(root, false, &dir_fd, msg, len);
        if (r == 0) {
                r = lock_take(dir_fd, &lock_fd, msg, len);
                if (r < 0) {
                        close(dir_fd);
                        return r;
                }
        } else if (r != -ENOENT) {
                return r;
        }
        /* No run directory: nobody set the knob since boot with a record; only the old value. */
        r = repair_locked(root, dir_fd, msg, len);
        lock_drop(&lock_fd);
        if (dir_fd >= 0)
                close(dir_fd);
        return r;
}

/* Under g->lock: the value found back, unless the knob was written meanwhile. */
static void put_back_locked(struct kk_guard *g, bool cut)
{
        uint64_t now;
        int r;

        if (g->back_usec)
                return;
        r = ks_read_vfs_cache_pressure(g->root, &now);
        if (r == 0 && now == g->value)
                r = ks_write_vfs_cache_pressure(g->root, g->found);
        if (r < 0) {
                /* The record stays: the next start or ExecStopPost= tries again. */
                g->error = r;
                say(g->said, sizeof(g->said), "cannot put vm.vfs_cache_pressure back to %" PRIu64
                    ": %s", g->found, strerror(-r));
        } else {
                (void)unlinkat(g->dir_fd, KK_RECORD_FILE, 0);
        }
        g->back_usec = now_usec();
        g->cut = cut;
}

/* Leave idle (or batch) CPU priority for normal, where the process may: 1 if it did. */
static int sched_normal(int *ret_policy, struct sched_param *ret_param)
{
        struct sched_param normal = { 0 };
        int policy = sched_getscheduler(0);

        if (policy != SCHED_IDLE && policy != SCHED_BATCH)
                return 0;
        if (sched_getparam(0, ret_param) < 0)
                return 0;
        if (sched_setscheduler(0, SCHED_OTHER, &normal) < 0)
                return 0;
        *ret_policy = policy;
        return 1;
}

static void *guard_main(void *userdata)
{
        struct kk_guard *g = userdata;
        struct sched_param p;
        bool normal;
        int policy;

        normal = sched_normal(&policy, &p) == 1 || sched_getscheduler(0) == SCHED_OTHER;
        pthread_mutex_lock(&g->lock);
        g->normal_sched = normal;
        while (!g->stop) {
                uint64_t now = now_usec(), until = g->deadline_usec;
                struct timespec ts;

                if (!g->armed || g->back_usec) {
                        pthread_cond_wait(&g->cond, &g->lock);
                        continue;
                }
                if (now >= g->deadline_usec) {
                        if (g->in_write && !g->interrupted) {
                                /* The kernel stops after its current descent (EINTR). */
                                (void)pthread_kill(g->writer, SIGRTMIN + KK_SIGNAL_OFFSET);
                                g->interrupted = true;
                        }
                        /* A raised value goes back at once; a lowered one once the write ended. */
                        if (!g->lowered || !g->in_write ||
                            now >= g->deadline_usec + g->grace_usec) {
                                put_back_locked(g, true);
                                continue;
                        }
                        until = g->deadline_usec + g->grace_usec;
                }
                ts.tv_sec = (time_t)(until / 1000000);
                ts.tv_nsec = (long)(until % 1000000) * 1000;
                pthread_cond_timedwait(&g->cond, &g->lock, &ts);
        }
        pthread_mutex_unlock(&g->lock);
        return NULL;
}

/* The guard's interruption only has to end the write: its handler does nothing. */
static void on_interrupt(int sig)
{
}

static void install_handler(void)
{
        struct sigaction sa = { .sa_handler = on_interrupt }; /* no SA_RESTART */

        sigemptyset(&sa.sa_mask);
        (void)sigaction(SIGRTMIN + KK_SIGNAL_OFFSET, &sa, NULL);
}

void kk_write_begin(struct kk_guard *g)
{
        pthread_mutex_lock(&g->lock);
        g->writer = pthread_self();
        g->in_write = true;
        pthread_mutex_unlock(&g->lock);
}

void kk_write_end(struct kk_guard *g)
{
        pthread_mutex_lock(&g->lock);
        g->in_write = false;
        pthread_cond_signal(&g->cond);
        pthread_mutex_unlock(&g->lock);
}

int kk_guard_new(const char *root, uint64_t bound_usec, struct kk_guard **ret)
{
        static pthread_once_t handler_once = PTHREAD_ONCE_INIT;
        pthread_condattr_t ca;
        struct kk_guard *g;
        int r;

        g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        (void)pthread_once(&handler_once, install_handler);
        g->root = root;
        g->bound_usec = bound_usec;
        g->grace_usec = KK_GRACE_USEC;
        g->dir_fd = g->lock_fd = -1;
        pthread_mutex_init(&g->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&g->cond, &ca);
        pthread_condattr_destroy(&ca);
        r = adapter_thread_create(&g->thread, guard_main, g);
        if (r < 0) {
                kk_guard_free(g);
                return r;
        }
        g->have_thread = true;
        *ret = g;
        return 0;
}

void kk_guard_grace(struct kk_guard *g, uint64_t grace_usec)
{
        pthread_mutex_lock(&g->lock);
        g->grace_usec = grace_usec;
        pthread_mutex_unlock(&g->lock);
}

struct kk_guard *kk_guard_free(struct kk_guard *g)
{
        if (!g)
                return NULL;
        if (g->lock_fd >= 0)
                (void)kk_put_back(g, NULL, NULL, 0);
        if (g->have_thread) {
                pthread_mutex_lock(&g->lock);
                g->stop = true;
                pthread_cond_signal(&g->cond);
                pthread_mutex_unlock(&g->lock);
                pthread_join(g->thread, NULL);
        }
        pthread_cond_destroy(&g->cond);
        pthread_mutex_destroy(&g->lock);
        free(g);
        return NULL;
}

bool kk_guard_normal_sched(const struct kk_guard *g)
{
        bool v;

        pthread_mutex_lock((pthread_mutex_t *)&g->lock);
        v = g->normal_sched;
        pthread_mutex_unlock((pthread_mutex_t *)&g->lock);
        return v;
}

int kk_set(struct kk_guard *g, uint64_t value, char *msg, size_t len)
{
        uint64_t found;
        int r;

        say(msg, len, "%s", "");
        if (g->lock_fd >= 0)
                return -EBUSY; /* one setting at a time per guard */
        r = run_dir_open(g->root, true, &g->dir_fd, msg, len);
        if (r < 0)
                return r;
        r = lock_take(g->dir_fd, &g->lock_fd, msg, len);
        if (r < 0)
                goto out_close_dir;
        r = repair_locked(g->root, g->dir_fd, msg, len);
        if (r < 0)
                goto out_unlock;
        r = ks_read_vfs_cache_pressure(g->root, &found);
        if (r < 0) {
                say(msg, len, "cannot read vm.vfs_cache_pressure: %s", strerror(-r));
                goto out_unlock;
        }
        r = record_write(g->dir_fd, found, value);
        if (r < 0) {
                say(msg, len, "cannot record vm.vfs_cache_pressure in %s/%s: %s; not changed",
                    KK_RUN_DIR, KK_RECORD_FILE, strerror(-r));
                goto out_unlock;
        }
        g->sched_changed = sched_normal(&g->sched_policy, &g->sched_param) == 1;
        r = ks_write_vfs_cache_pressure(g->root, value);
        if (r < 0) {
                say(msg, len, "cannot write vm.vfs_cache_pressure: %s", strerror(-r));
                (void)unlinkat(g->dir_fd, KK_RECORD_FILE, 0);
                goto out_sched;
        }
        pthread_mutex_lock(&g->lock);
        g->armed = true;
        g->lowered = value < found;
        g->in_write = g->interrupted = false;
        g->found = found;
        g->value = value;
        g->set_usec = now_usec();
        /* A lowered value takes nothing from the host: its write gets longer (KK_LOWERED_BOUND_USEC). */
        g->deadline_usec = g->set_usec + (g->lowered && g->bound_usec < KK_LOWERED_BOUND_USEC
                                                  ? KK_LOWERED_BOUND_USEC
                                                  : g->bound_usec);
        g->back_usec = 0;
        g->cut = false;
        g->error = 0;
        g->said[0] = '\0';
        pthread_cond_signal(&g->cond);
        pthread_mutex_unlock(&g->lock);
        return 0;

out_sched:
        if (g->sched_changed)
                (void)sched_setscheduler(0, g->sched_policy, &g->sched_param);
        g->sched_changed = false;
out_unlock:
        lock_drop(&g->lock_fd);
out_close_dir:
        close(g->dir_fd);
        g->dir_fd = -1;
        return r;
}

int kk_put_back(struct kk_guard *g, struct kk_window *ret, char *msg, size_t len)
{
        struct kk_window w;
        int r;

        say(msg, len, "%s", "");
        if (g->lock_fd < 0)
                return -EINVAL;
        pthread_mutex_lock(&g->lock);
        put_back_locked(g, false);
        w = (struct kk_window){ .usec = g->back_usec - g->set_usec, .cut = g->cut,
                                .normal_sched = g->sched_changed ||
                                                sched_getscheduler(0) == SCHED_OTHER };
        r = g->error;
        if (g->said[0])
                say(msg, len, "%s", g->said);
        g->armed = false;
        pthread_mutex_unlock(&g->lock);
        if (g->sched_changed)
                (void)sched_setscheduler(0, g->sched_policy, &g->sched_param);
        g->sched_changed = false;
        lock_drop(&g->lock_fd);
        close(g->dir_fd);
        g->dir_fd = -1;
        if (ret)
                *ret = w;
        return r;
}
