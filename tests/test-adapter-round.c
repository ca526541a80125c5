/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The network adapters' frame (lib/adapters/adapter-round.{c,h}) alone: what memcached and redis
 * no longer do themselves. Its smallest adapter, tests/plugin-lines.c (a line protocol: "list",
 * then "del KEY" for each victim), runs under a host of the test's own (adapter-harness.h)
 * against the harness's fake server, so that each answer, each silence and each fault is the
 * test's: the index and its sweep, the victims and their verdicts, a failure spared and said
 * once, the refresh's deadline, max_items, the pace of the walk and of the checks, dry_run,
 * the statistics in the adapter's words, a destroy in the middle of a check.
 *
 * Environment (tests/meson.build): CA_ADAPTER_DIR (lines.so).
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "adapter-harness.h"
#include "test-util.h"

struct env {
        struct fake f;
        struct host h;
};

/* The adapter on the fake server, with @single_use_age and @max_age and more keys. */
static void env_start(struct env *e, uint32_t single_use_age, uint32_t max_age,
                      const char *const *more)
{
        const char *keys[20] = { "server", NULL, "timeout", "1s" };
        size_t n = 4;

        fake_start(&e->f, fake_frame_line);
        keys[1] = e->f.server;
        for (; more && *more; more++) {
                cr_assert(n < ELEMENTSOF(keys) - 1);
                keys[n++] = *more;
        }
        keys[n] = NULL;
        host_setup(&e->h, "lines", single_use_age, max_age, keys);
}

static void env_stop(struct env *e)
{
        host_cleanup(&e->h);
        fake_stop(&e->f);
}

#define RULES(e, ...)                                                                 \
        do {                                                                          \
                const struct fake_rule rules_[] = { __VA_ARGS__ };                   \
                fake_script(&(e)->f, rules_, ELEMENTSOF(rules_));                     \
        } while (0)

/* A listing of "item KEY" lines for @keys ("a b c"; "b+" says b was used), and "end". */
static char *listing(const char *keys)
{
        char *copy = strdup(keys), *save = NULL, *out = malloc(strlen(keys) * 8 + 16);
        size_t len = 0;

        cr_assert(copy && out);
        for (char *k = strtok_r(copy, " ", &save); k; k = strtok_r(NULL, " ", &save)) {
                size_t kl = strlen(k);
                bool used = kl > 1 && k[kl - 1] == '+';

                len += (size_t)sprintf(out + len, "item %.*s%s\r\n", (int)(kl - used), k,
                                       used ? " used" : "");
        }
        strcpy(out + len, "end\r\n");
        free(copy);
        return out;
}

/* Listed and not used again: gone at the second rotation; used: kept; never asked about it. */
Test(adapter_round, ages_what_the_walk_lists)
{
        char *first = listing("a b c"), *second = listing("a b+ c");
        struct env e;

        env_start(&e, 2, 8, NULL);
        RULES(&e, { .prefix = "list", .reply = first });
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "items"), 3, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0);
        RULES(&e, { .prefix = "list", .reply = second },
              { .prefix = "del a", .reply = "deleted\r\n" },
              { .prefix = "del b", .reply = "deleted\r\n" },
              { .prefix = "del c", .reply = "deleted\r\n" });
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "deleted"), 2, "%s", e.h.log);
        cr_expect_eq(e.f.used[1], 1, "a not deleted");
        cr_expect_eq(e.f.used[2], 0, "b, used, was asked to go");
        cr_expect_eq(e.f.used[3], 1, "c not deleted");
        cr_expect_eq(host_stat(&e.h, "items"), 1);
        cr_expect_eq(host_stat(&e.h, "errors"), 0, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "aged: 2 victims checked and settled"), 1, "%s",
                     e.h.log);
        env_stop(&e);
        free(first);
        free(second);
}

/* What a walk no longer lists is forgotten by the sweep, never deleted. */
Test(adapter_round, forgets_what_the_walk_does_not_list)
{
        char *first = listing("a b c d"), *second = listing("a d");
        struct env e;

        env_start(&e, 3, 8, NULL);
        RULES(&e, { .prefix = "list", .reply = first }, { .prefix = "del", .reply = "deleted\r\n" });
        host_rotate(&e.h);
        RULES(&e, { .prefix = "list", .reply = second }, { .prefix = "del", .reply = "deleted\r\n" });
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "items"), 2, "%s", e.h.log);
        cr_expect_eq(e.f.used[1], 0, "a delete was asked");
        cr_expect_eq(host_stat(&e.h, "listings"), 2);
        env_stop(&e);
        free(first);
        free(second);
}

/* The server's verdicts: a victim kept goes back into the cache (asked again later), one gone
   is forgotten, one deleted counted. */
Test(adapter_round, verdicts)
{
        char *list = listing("a b c"), *only_a = listing("a");
        struct env e;

        env_start(&e, 1, 1, NULL);
        RULES(&e, { .prefix = "list", .reply = list },
              { .prefix = "del a", .reply = "kept\r\n" },
              { .prefix = "del b", .reply = "gone\r\n" },
              { .prefix = "del c", .reply = "deleted\r\n" });
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "kept"), 1, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "gone"), 1);
        cr_expect_eq(host_stat(&e.h, "deleted"), 1);
        cr_expect_eq(host_stat(&e.h, "items"), 1, "the kept one is tracked still");
        cr_expect_eq(host_log_count(&e.h, "1 deleted, 1 kept, 1 gone, 0 would delete"), 1, "%s",
                     e.h.log);
        /* The server lists the one it kept alone now: only that one is asked about again. */
        RULES(&e, { .prefix = "list", .reply = only_a },
              { .prefix = "del a", .reply = "kept\r\n" },
              { .prefix = "del", .reply = "deleted\r\n" });
        host_rotate(&e.h);
        cr_expect_eq(e.f.used[1], 1, "the kept one was not asked about again");
        cr_expect_eq(e.f.used[2], 0, "one forgotten was asked about again");
        cr_expect_eq(host_stat(&e.h, "kept"), 2);
        env_stop(&e);
        free(list);
        free(only_a);
}

/*
 * A failure in the middle of the check: every victim not yet judged stays, nothing goes until a
 * walk is whole again; the same kind of failure is said once at warning, its repeats at debug,
 * and "answers again" once.
 */
Test(adapter_round, failure_spares_the_victims_and_is_said_once, .timeout = 60)
{
        char *list = listing("a b c d e f");
        struct env e;

        env_start(&e, 1, 1, (const char *[]){ "timeout", "300ms", NULL });
        RULES(&e, { .prefix = "list", .reply = list }, { .prefix = "del", .silent = true });
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "errors"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "WARNING: lines at"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "no reply within timeout; nothing is deleted until a "
                                          "listing succeeds"), 1, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "items"), 6, "a victim was lost");
        cr_expect_eq(host_stat(&e.h, "round_victims"), 0);

        /* Not the protocol, twice: one warning, one "(again)", nothing deleted. */
        RULES(&e, { .prefix = "list", .reply = "HTTP/1.1 400 Bad Request\r\n" },
              { .prefix = "del", .reply = "deleted\r\n" });
        host_rotate(&e.h);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "errors"), 3, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "not a listing: \"HTTP/1.1 400 Bad Request\""), 2,
                     "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "WARNING: lines at"), 2, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "(again)"), 1, "%s", e.h.log);
        cr_expect_eq(e.f.used[1], 0, "a delete on a walk not trusted");

        RULES(&e, { .prefix = "list", .reply = list }, { .prefix = "del", .reply = "deleted\r\n" });
        host_rotate(&e.h);
        cr_expect_eq(host_log_count(&e.h, "answers again"), 1, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 6, "%s", e.h.log);
        env_stop(&e);
        free(list);
}

/* A server that is never silent for a whole timeout is cut at refresh_timeout, said with what
   the adapter was doing, and counted. */
Test(adapter_round, refresh_deadline, .timeout = 60)
{
        char *list = listing("a b c d e f g h");
        struct env e;
        uint64_t t0;

        env_start(&e, 1, 1, (const char *[]){ "refresh_timeout", "1s", NULL });
        RULES(&e, { .prefix = "list", .reply = list, .trickle_ms = 50 });
        t0 = test_now_usec();
        host_refresh(&e.h);
        cr_expect_geq(test_now_usec() - t0, 900000, "cut before refresh_timeout");
        cr_expect_eq(host_stat(&e.h, "refresh_timeouts"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "no whole refresh within refresh_timeout (1s; the "
                                          "server was listing)"), 1, "%s", e.h.log);
        RULES(&e, { .prefix = "list", .reply = list });
        host_refresh(&e.h);
        cr_expect_eq(host_stat(&e.h, "listings"), 1, "%s", e.h.log);
        env_stop(&e);
        free(list);
}

/* Over max_items: the rest is not tracked, said once; tracked again, said once. */
Test(adapter_round, max_items_said_once)
{
        char *three = listing("a b c"), *two = listing("a b");
        struct env e;

        env_start(&e, 8, 8, (const char *[]){ "max_items", "2", NULL });
        RULES(&e, { .prefix = "list", .reply = three });
        host_rotate(&e.h);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "items"), 2);
        cr_expect_eq(host_stat(&e.h, "untracked_items"), 1);
        cr_expect_eq(host_log_count(&e.h, "holds more than max_items (2) items: 1 are not aged"),
                     1, "%s", e.h.log);
        RULES(&e, { .prefix = "list", .reply = two });
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "untracked_items"), 0);
        cr_expect_eq(host_log_count(&e.h, "every item of lines at"), 1, "%s", e.h.log);
        env_stop(&e);
        free(three);
        free(two);
}

/* `rate` paces the walk's items, `delete_rate` the victims' checks. */
Test(adapter_round, walk_and_checks_paced, .timeout = 60)
{
        char keys[200] = "", *list;
        struct env e;
        uint64_t t0, walk, check;

        for (int i = 0; i < 20; i++)
                sprintf(keys + strlen(keys), "k%02d ", i);
        list = listing(keys);
        env_start(&e, 1, 1, (const char *[]){ "rate", "100", "delete_rate", "50", NULL });
        RULES(&e, { .prefix = "list", .reply = list }, { .prefix = "del", .reply = "deleted\r\n" });
        t0 = test_now_usec();
        host_refresh(&e.h);
        walk = test_now_usec() - t0;
        t0 = test_now_usec();
        host_age(&e.h);
        check = test_now_usec() - t0;
        /* 21 lines at 100 a second; 20 victims at 50, 4 a batch, the last batch due at 320 ms;
           less the burst a pace may catch up. */
        cr_expect_geq(walk, 150000, "the walk took %" PRIu64 " us", walk);
        cr_expect_geq(check, 250000, "the checks took %" PRIu64 " us", check);
        cr_expect_lt(check, 3000000, "the checks took %" PRIu64 " us", check);
        cr_expect_eq(host_stat(&e.h, "deleted"), 20, "%s", e.h.log);
        env_stop(&e);
        free(list);
}

/* Bytes when the server owes nothing are garbage: a failure, said with an excerpt. */
Test(adapter_round, bytes_nobody_asked_for)
{
        struct env e;

        env_start(&e, 1, 1, NULL);
        RULES(&e, { .prefix = "list", .reply = "item a\r\nend\r\nextra\r\n" });
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "errors"), 1, "%s", e.h.log);
        cr_expect_eq(host_log_count(&e.h, "bytes when nothing was asked: \"extra\\x0d\\x0a\""),
                     1, "%s", e.h.log);
        env_stop(&e);
}

/* dry_run: the victims are asked about ("peek"), counted, never deleted; a use brings one back. */
Test(adapter_round, dry_run)
{
        char *list = listing("a b"), *used = listing("a+ b");
        struct env e;

        env_start(&e, 1, 1, (const char *[]){ "dry_run", "yes", NULL });
        RULES(&e, { .prefix = "list", .reply = list }, { .prefix = "peek", .reply = "deleted\r\n" },
              { .prefix = "del", .reply = "deleted\r\n" });
        host_rotate(&e.h);
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "would_delete"), 2, "%s", e.h.log);
        cr_expect_eq(host_stat(&e.h, "deleted"), 0);
        cr_expect_eq(e.f.used[2], 0, "a dry run deleted");
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "would_delete"), 2, "a condemned item was asked again");
        RULES(&e, { .prefix = "list", .reply = used }, { .prefix = "peek", .reply = "deleted\r\n" });
        host_rotate(&e.h);
        cr_expect_eq(host_stat(&e.h, "would_delete"), 3, "a used one did not come back\n%s",
                     e.h.log);
        cr_expect_eq(host_stat(&e.h, "items"), 2);
        env_stop(&e);
        free(list);
        free(used);
}

/* Every statistic of the frame, named in the adapter's words, beside the adapter's own. */
Test(adapter_round, statistics_in_the_adapters_words)
{
        static const char *const names[] = {
                "items", "untracked_items", "round_victims", "deleted", "would_delete", "gone",
                "kept", "errors", "listings", "refresh_timeouts", "listing_usec",
                "longest_step_usec", "longest_step_cpu_usec", "steps", "steps_over_slice",
                "pool_bytes",
        };
        char *list = listing("a b");
        struct env e;

        env_start(&e, 1, 1, NULL);
        RULES(&e, { .prefix = "list", .reply = list });
        host_rotate(&e.h);
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                (void)host_stat(&e.h, names[i]);
        cr_expect_gt(host_stat(&e.h, "pool_bytes"), 0);
        cr_expect_gt(host_stat(&e.h, "steps"), 0);
        env_stop(&e);
        free(list);
}

/* Destroyed while its checks wait for the server: nothing left behind (the ASan build). */
Test(adapter_round, destroyed_in_the_middle_of_a_check)
{
        char *list = listing("a b c d e f g h i j");
        struct env e;

        env_start(&e, 1, 1, NULL);
        RULES(&e, { .prefix = "list", .reply = list }, { .prefix = "del", .silent = true });
        host_rotate(&e.h);
        host_refresh(&e.h);
        ca_cache_rotate(e.h.cache);
        (void)ca_cache_age(e.h.cache, 0, ca_now_usec() + 2000);
        e.h.hooks->after_age(e.h.cache, e.h.hooks_userdata);
        host_run_for(&e.h, 50);
        cr_expect_gt(host_stat(&e.h, "round_victims"), 0, "%s", e.h.log);
        env_stop(&e);
        free(list);
}

/* A server that refuses the connection: said once, counted each time. */
Test(adapter_round, cannot_connect_said_once)
{
        char server[32];
        struct host h;

        snprintf(server, sizeof(server), "127.0.0.1:%u", ah_free_port());
        host_setup(&h, "lines", 1, 1, (const char *[]){ "server", server, NULL });
        for (int i = 0; i < 3; i++)
                host_rotate(&h);
        cr_expect_eq(host_stat(&h, "errors"), 3, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "WARNING: lines at"), 1, "%s", h.log);
        cr_expect_eq(host_log_count(&h, "cannot connect"), 3, "%s", h.log);
        host_cleanup(&h);
}
