/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the strace log reader (lib/lab/trace.c) and the dentry model's replay of
 * its events (ca_replay_event in lib/lab/replay.c, references followed): a trace is the outside
 * input that reaches the most code, through the dcache adapter's "source = strace:PATH".
 *
 * Input: one byte that picks the model's policies, then the log; when the rest holds a line
 * "----", what comes before it is capture information (ca_trace_load_info) and the log follows.
 *   bit 0..3  tail_negative, ratio_cursor, ratio_counted, aging
 *   bit 4..5  ratio 0, 1, 5 or 20
 *   bit 6     floor 0 and ages 1/2 (every policy acts at once) instead of the defaults
 *   bit 7     switch policies at run time every SWITCH_EVERY events (ca_dcache_set_params)
 * With aging on, the model is rotated and aged to the end every ROTATE_EVERY events.
 *
 * Checked, besides what the sanitizers catch:
 *   - ca_trace_next() returns 1 or 0 (no read errors from memory), 0 again after the end,
 *     and its counts add up to the lines read, as trace.h promises;
 *   - every event is well formed: a known op, a syscall name, an absolute normalised path
 *     (path2 for the two-path ops; a symlink's path is its target text; none for a release,
 *     which only drops), walks absolute and normalised, result <= 0;
 *   - capture information that does not load leaves nothing loaded behind;
 *   - ca_replay_event() takes every event: 0, or -ENAMETOOLONG for a component over
 *     NAME_MAX; the references the model counts are the replay's, and none once it is freed;
 *   - ca_dcache_check(), the model's own invariant checker, passes every CHECK_EVERY events
 *     and at the end.
 * A failed check prints why and aborts, so that libFuzzer keeps the input.
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cacheage/dcache.h"
#include "cacheage/replay.h"
#include "cacheage/trace.h"

#define CHECK_EVERY 16  /* events between two ca_dcache_check() runs */
#define ROTATE_EVERY 8  /* events between two rotations, with aging on */
#define SWITCH_EVERY 8  /* events between two policy switches, with bit 7 */
#define FUZZ_CWD "/tmp/cafix" /* where the fixtures in tests/fixtures/trace were recorded */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *detail, uint64_t event)
{
        fprintf(stderr, "fuzz-trace: event %llu: %s%s%s\n", (unsigned long long)event, what,
                detail ? ": " : "", detail ? detail : "");
        abort();
}

/* Absolute and normalised: no ".", "..", "//", no trailing '/' but for the root itself. */
static bool normalised(const char *p)
{
        size_t n;

        if (!p || p[0] != '/')
                return false;
        if (strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../"))
                return false;
        n = strlen(p);
        if (n > 1 && p[n - 1] == '/')
                return false;
        if ((n >= 2 && strcmp(p + n - 2, "/.") == 0) || (n >= 3 && strcmp(p + n - 3, "/..") == 0))
                return false;
        return true;
}

static void check_event(const struct ca_trace_event *ev, uint64_t i)
{
        bool two = ev->op == CA_TRACE_RENAME || ev->op == CA_TRACE_LINK ||
                   ev->op == CA_TRACE_SYMLINK;

        if ((unsigned)ev->op >= _CA_TRACE_OP_MAX || !ca_trace_op_name(ev->op))
                fail("unknown op", NULL, i);
        if (!ev->syscall || !ev->syscall[0])
                fail("no syscall name", NULL, i);
        if (ev->pid < 0)
                fail("negative pid", ev->syscall, i);
        if (ev->result > 0)
                fail("positive result", ev->syscall, i);
        if (!ev->path && ev->op != CA_TRACE_RELEASE && !(ev->op == CA_TRACE_EXIT && !ev->pid))
                fail("no path", ev->syscall, i);
        if (ev->op == CA_TRACE_RELEASE && (!ev->ndrops || ev->nwalks || ev->hold))
                fail("a release that does not only drop", ev->syscall, i);
        if (ev->op == CA_TRACE_EXIT && (ev->nwalks || ev->hold || ev->path2 ||
                                        (ev->path && strncmp(ev->path, "/proc/", 6) != 0)))
                fail("an exit that does more than drop and name its /proc", ev->syscall, i);
        if (ev->path && ev->op != CA_TRACE_SYMLINK && !normalised(ev->path))
                fail("path not absolute and normalised", ev->path, i);
        for (size_t w = 0; w < ev->nwalks; w++)
                if (!normalised(ev->walks[w].path))
                        fail("walk not absolute and normalised", ev->walks[w].path, i);
        if ((ev->op == CA_TRACE_MOUNT) != (ev->fstype != NULL))
                fail("fstype on an op other than mount, or a mount without", ev->syscall, i);
        if (two && !normalised(ev->path2))
                fail("path2 not absolute and normalised", ev->path2 ? ev->path2 : "(null)", i);
        if (!two && ev->path2)
                fail("path2 on a one-path op", ev->path2, i);
}

static void check_model(const struct ca_dcache *d, uint64_t i)
{
        const char *why = NULL;

        if (ca_dcache_check(d, &why) != 0)
                fail("ca_dcache_check", why ? why : "(no reason)", i);
}

static struct ca_dcache_params params_from(uint8_t b)
{
        static const uint32_t ratios[] = { 0, 1, CA_DCACHE_RATIO_DEFAULT, CA_DCACHE_RATIO_MAX };
        struct ca_dcache_params p = CA_DCACHE_PARAMS_DEFAULT;

        p.tail_negative = b & 0x01;
        p.ratio_cursor = b & 0x02;
        p.ratio_counted = b & 0x04;
        p.aging = b & 0x08;
        p.ratio = ratios[(b >> 4) & 3];
        if (b & 0x40) {
                p.floor = 0;
                p.age = (struct ca_params){ .single_use_age = 1, .max_age = 2 };
        }
        return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ca_dcache_params params;
        static const char sep[] = "\n----\n";
        struct ca_trace_stats st;
        struct ca_dcache_stats ds;
        struct ca_replay_stats rs;
        struct ca_trace_event ev;
        struct ca_dcache *d = NULL;
        struct ca_replay *rp = NULL;
        struct ca_trace *t = NULL;
        const uint8_t *log = data + 1, *cut;
        size_t log_size = size ? size - 1 : 0;
        uint64_t n = 0, sum;
        uint8_t mode;
        FILE *f, *info = NULL;
        int r;

        if (size < 1)
                return 0;
        mode = data[0];
        params = params_from(mode);
        cut = memmem(log, log_size, sep, sizeof(sep) - 1);
        if (cut) {
                info = fmemopen((void *)log, (size_t)(cut - log) + 1, "r");
                log_size -= (size_t)(cut + sizeof(sep) - 1 - log);
                log = cut + sizeof(sep) - 1;
        }
        /* fmemopen() refuses an empty buffer: an empty log is /dev/null. */
        f = log_size > 0 ? fmemopen((void *)log, log_size, "r") : fopen("/dev/null", "r");
        if (!f || (cut && !info))
                fail("cannot open the input as a FILE", strerror(errno), 0);
        if (ca_trace_open_file(f, FUZZ_CWD, &t) < 0 || ca_dcache_new(&params, &d) < 0 ||
            ca_replay_new(d, &rp) < 0 || ca_trace_set_options(t, CA_TRACE_REFS) < 0)
                fail("cannot create the reader, the model or the replay", NULL, 0);
        if (info) {
                if (ca_trace_load_info(t, info, NULL) < 0) {
                        ca_trace_get_stats(t, &st);
                        if (st.facts != 0)
                                fail("information that did not load left facts", NULL, 0);
                }
                fclose(info);
        }

        while ((r = ca_trace_next(t, &ev)) == 1) {
                n++;
                check_event(&ev, n);
                r = ca_replay_event(rp, &ev);
                if (r < 0 && r != -ENAMETOOLONG) {
                        fprintf(stderr, "fuzz-trace: replay of %s %s %s%s%s = %d: %s\n",
                                ev.syscall, ca_trace_op_name(ev.op), ev.path ? ev.path : "-",
                                ev.path2 ? " -> " : "", ev.path2 ? ev.path2 : "", ev.result,
                                strerror(-r));
                        fail("ca_replay_event refused an event of the reader", NULL, n);
                }
                ca_dcache_stats(d, &ds);
                ca_replay_get_stats(rp, &rs);
                if (ds.holds != rs.held)
                        fail("references held in the model are not the replay's", ev.syscall, n);

                if (params.aging && n % ROTATE_EVERY == 0) {
                        ca_dcache_rotate(d);
                        while (ca_dcache_age(d, 0, 0) > 0)
                                ;
                }
                if ((mode & 0x80) && n % SWITCH_EVERY == 0) {
                        /* Each policy on or off in turn, so every transition is taken. */
                        uint8_t next = (uint8_t)(mode ^ (1u << ((n / SWITCH_EVERY) % 4)));

                        params = params_from(next);
                        mode = (uint8_t)((mode & 0x80) | (next & 0x7f));
                        if (ca_dcache_set_params(d, &params) < 0)
                                fail("ca_dcache_set_params refused valid parameters", NULL, n);
                        check_model(d, n);
                }
                if (n % CHECK_EVERY == 0)
                        check_model(d, n);
        }
        if (r != 0)
                fail("ca_trace_next failed on a memory stream", strerror(-r), n);
        if (ca_trace_next(t, &ev) != 0)
                fail("ca_trace_next did not stay at the end", NULL, n);

        ca_trace_get_stats(t, &st);
        sum = st.events - st.info_events + st.unfinished + st.skipped_other +
              st.skipped_malformed + st.skipped_dirfd + st.skipped_orphan + st.skipped_noresult;
        if (st.events != n)
                fail("stats.events differs from the events returned", NULL, n);
        if (sum != st.lines) {
                fprintf(stderr, "fuzz-trace: lines %llu, events %llu unfinished %llu other %llu "
                        "malformed %llu dirfd %llu orphan %llu noresult %llu\n",
                        (unsigned long long)st.lines, (unsigned long long)st.events,
                        (unsigned long long)st.unfinished, (unsigned long long)st.skipped_other,
                        (unsigned long long)st.skipped_malformed,
                        (unsigned long long)st.skipped_dirfd,
                        (unsigned long long)st.skipped_orphan,
                        (unsigned long long)st.skipped_noresult);
                fail("trace counts do not add up to the lines read", NULL, n);
        }

        if (params.aging) {
                ca_dcache_rotate(d);
                while (ca_dcache_age(d, 0, 0) > 0)
                        ;
        }
        check_model(d, n);
        ca_replay_free(rp);
        ca_dcache_stats(d, &ds);
        if (ds.holds != 0)
                fail("the freed replay left references held", NULL, n);
        check_model(d, n);

        ca_dcache_free(d);
        ca_trace_free(t);
        fclose(f);
        return 0;
}
