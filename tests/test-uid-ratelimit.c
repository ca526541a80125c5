/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The per-uid rate limit of the daemon's log lines (daemon/uid-ratelimit.h), on a clock of the
 * test's own: a uid's burst and its summary, windows that end and open again, uid 0 apart from
 * everyone, and the table's bound against a caller with 65,536 uids (subordinate uids through a
 * user namespace): the lines stay within (slots + 2) x burst, nothing counted is lost.
 */

#include <criterion/criterion.h>
#include <errno.h>
#include <syslog.h>

#include "test-util.h"
#include "uid-ratelimit.h"

#define INTERVAL_USEC 60000000ULL
#define BURST 10u
#define T0 1000000ULL /* a clock that does not start at 0 */

static struct uid_ratelimit *rl;

static void setup(void)
{
        cr_assert_eq(uid_ratelimit_new(INTERVAL_USEC, BURST, &rl), 0);
}

static void teardown(void)
{
        rl = uid_ratelimit_free(rl);
}

TestSuite(uid_ratelimit, .init = setup, .fini = teardown);

struct tally {
        unsigned passed, last, dropped, shared;
};

/* @n lines about @uid at @now_usec, at @level: what the limit said of them. */
static struct tally lines(uid_t uid, unsigned n, int level, uint64_t now_usec)
{
        struct tally t = { 0 };

        for (unsigned i = 0; i < n; i++) {
                bool shared;

                switch (uid_ratelimit_check(rl, uid, level, now_usec, &shared)) {
                case UID_RATELIMIT_PASS:
                        t.passed++;
                        break;
                case UID_RATELIMIT_PASS_LAST:
                        t.passed++;
                        t.last++;
                        break;
                case UID_RATELIMIT_DROP:
                        t.dropped++;
                        break;
                }
                t.shared += shared;
        }
        return t;
}

struct summary {
        uid_t uid;
        bool shared;
        uint64_t dropped;
        int level;
};

/* Every summary due at @now_usec, in @v (up to @max); how many. */
static size_t summaries(uint64_t now_usec, struct summary *v, size_t max)
{
        struct summary s;
        size_t n = 0;

        while (uid_ratelimit_summary(rl, now_usec, &s.uid, &s.shared, &s.dropped, &s.level) > 0) {
                cr_assert(n < max, "more than %zu summaries", max);
                v[n++] = s;
        }
        return n;
}

Test(uid_ratelimit, refused_arguments)
{
        struct uid_ratelimit *other = NULL;

        cr_expect_eq(uid_ratelimit_new(0, BURST, &other), -EINVAL);
        cr_expect_eq(uid_ratelimit_new(INTERVAL_USEC, 0, &other), -EINVAL);
        cr_expect_null(other);
        cr_expect_eq(uid_ratelimit_interval_usec(rl), INTERVAL_USEC);
}

/* 1,000 lines of one uid: the burst, the last of it said, one summary when the window ends. */
Test(uid_ratelimit, burst_then_one_summary)
{
        struct summary s[4];
        struct tally t;

        cr_expect_eq(uid_ratelimit_next_summary_usec(rl), UINT64_MAX);
        t = lines(65534, 1000, LOG_INFO, T0);
        cr_expect_eq(t.passed, BURST);
        cr_expect_eq(t.last, 1);
        cr_expect_eq(t.dropped, 1000 - BURST);
        cr_expect_eq(t.shared, 0);
        cr_expect_eq(uid_ratelimit_next_summary_usec(rl), T0 + INTERVAL_USEC);

        /* Nothing is summed up before the window ends, and lines in it are still dropped. */
        cr_expect_eq(summaries(T0 + INTERVAL_USEC - 1, s, 4), 0);
        t = lines(65534, 5, LOG_WARNING, T0 + INTERVAL_USEC - 1);
        cr_expect_eq(t.dropped, 5);

        cr_assert_eq(summaries(T0 + INTERVAL_USEC, s, 4), 1);
        cr_expect_eq(s[0].uid, 65534);
        cr_expect(!s[0].shared);
        cr_expect_eq(s[0].dropped, 1000 - BURST + 5);
        cr_expect_eq(s[0].level, LOG_WARNING, "the most severe of the dropped lines");
        cr_expect_eq(summaries(T0 + 2 * INTERVAL_USEC, s, 4), 0, "summed up once");
        cr_expect_eq(uid_ratelimit_next_summary_usec(rl), UINT64_MAX);

        /* A new window: the burst again. */
        t = lines(65534, BURST + 1, LOG_INFO, T0 + INTERVAL_USEC + 5);
        cr_expect_eq(t.passed, BURST);
        cr_expect_eq(t.dropped, 1);
}

/* Each uid has its own window; a window opens at the uid's first line, not at a shared tick. */
Test(uid_ratelimit, uids_apart)
{
        struct summary s[4];

        cr_expect_eq(lines(1000, 50, LOG_INFO, T0).passed, BURST);
        cr_expect_eq(lines(1001, 50, LOG_INFO, T0 + 30000000).passed, BURST);
        cr_expect_eq(lines(0, 3, LOG_INFO, T0 + 30000000).passed, 3);
        cr_assert_eq(summaries(T0 + INTERVAL_USEC, s, 4), 1);
        cr_expect_eq(s[0].uid, 1000);
        cr_expect_eq(s[0].dropped, 40);
        cr_expect_eq(uid_ratelimit_next_summary_usec(rl), T0 + 30000000 + INTERVAL_USEC);
        cr_assert_eq(summaries(T0 + 30000000 + INTERVAL_USEC, s, 4), 1);
        cr_expect_eq(s[0].uid, 1001);
        cr_expect_eq(s[0].dropped, 40);
}

/*
 * 65,536 uids, three lines each, in one window: the first UID_RATELIMIT_SLOTS get slots of
 * their own (all three lines pass), the rest share "others" (a burst in all); uid 0 still gets
 * its lines after that; nothing counted is lost, and at exit every count is summed up.
 */
Test(uid_ratelimit, bounded_against_many_uids)
{
        static struct summary s[UID_RATELIMIT_SLOTS + 4];
        unsigned passed = 0, shared = 0;
        uint64_t dropped = 0, summed = 0;
        size_t n;

        for (uid_t uid = 100000; uid < 100000 + 65536; uid++) {
                struct tally t = lines(uid, 3, LOG_INFO, T0 + (uid - 100000));

                passed += t.passed;
                dropped += t.dropped;
                shared += t.shared;
        }
        cr_expect_eq(passed, UID_RATELIMIT_SLOTS * 3 + BURST);
        cr_expect_eq(shared, (65536 - UID_RATELIMIT_SLOTS) * 3);
        cr_expect_eq(dropped, (uint64_t)(65536 - UID_RATELIMIT_SLOTS) * 3 - BURST);

        /* Root is never among the others. */
        {
                struct tally t = lines(0, BURST + 2, LOG_ERR, T0 + 70000);

                cr_expect_eq(t.passed, BURST);
                cr_expect_eq(t.shared, 0);
                dropped += t.dropped;
        }

        /* The window of "others" opened at its first line (uid 100256's). */
        n = summaries(T0 + UID_RATELIMIT_SLOTS + INTERVAL_USEC - 1, s, ELEMENTSOF(s));
        cr_expect_eq(n, 0);
        n = summaries(UINT64_MAX, s, ELEMENTSOF(s));
        cr_expect_eq(n, 2, "others and root");
        for (size_t i = 0; i < n; i++) {
                summed += s[i].dropped;
                if (s[i].shared)
                        cr_expect_eq(s[i].dropped, (uint64_t)(65536 - UID_RATELIMIT_SLOTS) * 3 -
                                     BURST);
                else
                        cr_expect_eq(s[i].uid, 0);
        }
        cr_expect_eq(summed, dropped, "every line left out is summed up");
}

/* A slot whose window ended (and was summed up) goes to the next uid that needs one. */
Test(uid_ratelimit, slots_come_back)
{
        struct summary s[UID_RATELIMIT_SLOTS + 4];
        bool shared;

        for (uid_t uid = 1; uid <= UID_RATELIMIT_SLOTS; uid++)
                cr_expect_eq(lines(uid, BURST + 1, LOG_INFO, T0).dropped, 1);
        /* The table is full: a new uid shares. */
        cr_expect_eq(lines(5000, 1, LOG_INFO, T0 + 1).shared, 1);
        /* Ended, but not summed up yet: still taken (the counts would be lost). */
        cr_expect_eq(lines(5001, 1, LOG_INFO, T0 + INTERVAL_USEC).shared, 1);
        cr_expect_eq(summaries(T0 + INTERVAL_USEC, s, ELEMENTSOF(s)), UID_RATELIMIT_SLOTS);
        (void)uid_ratelimit_check(rl, 5002, LOG_INFO, T0 + INTERVAL_USEC, &shared);
        cr_expect(!shared, "a slot summed up is free again");
}

/* A caller that checks without asking for the summaries first loses no count. */
Test(uid_ratelimit, count_kept_without_the_summary)
{
        struct summary s[4];

        cr_expect_eq(lines(7, BURST + 4, LOG_INFO, T0).dropped, 4);
        cr_expect_eq(lines(7, BURST + 1, LOG_INFO, T0 + INTERVAL_USEC).dropped, 1);
        cr_assert_eq(summaries(T0 + 2 * INTERVAL_USEC, s, 4), 1);
        cr_expect_eq(s[0].dropped, 5);
}
