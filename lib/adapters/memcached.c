/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The memcached adapter: ages the items of a real memcached server (1.6 or later, for the
 * meta commands). Each item is a node of the cache; what memcached itself records of an
 * item's use is what the adapter reads:
 *
 *   refresh   before each rotation, on one connection and without blocking the host's loop:
 *             "stats", "stats settings", "stats items", then "lru_crawler metadump hash"
 *             (the hash table's walk, memcached 1.6.9 and later: the walk of the LRUs,
 *             "metadump all", taken on older servers, misses items that move between LRUs
 *             while it runs, as its documentation warns, and as seen here). A dump line is a use of an item already known when its `la` (last access) moved
 *             or its `fetch` turned yes; an item seen for the first time is inserted (its
 *             first use); one already fetched then counts as used twice (its fetch is counted
 *             at the next dump, or when it falls due, whichever comes first). An item whose
 *             cas changed was rewritten: it is a new object (the old one is gone). An item
 *             missing from the dump (expired, evicted, deleted by a client) is forgotten,
 *             never deleted.
 *   reclaim   a node that fell due is a victim: collected by the reclaim op, checked and
 *             deleted from after_age, asynchronously, in batches of MC_CHECK_BATCH:
 *               "me KEY"            (meta debug: reads, never bumps) the item as it is now;
 *               "md KEY C<cas> q"   only when it is exactly as the dump saw it (same cas; not
 *                                   fetched since; no access since the dump), and provably
 *                                   idle (see "active items" below);
 *               "mn"                a fence: every md before it has answered.
 *             `md ... q` answers nothing when it deleted, "EX" when the item was rewritten
 *             between the check and the delete (nothing lost), "NF" when it is gone.
 *   active    memcached's segmented LRU (the default) records a fetch in `la` only when it
 *   items     makes the item active; later fetches of an active item change nothing until the
 *             LRU maintainer moves the item, at the tail of the hot or warm LRU. A fetched
 *             item whose `la` is younger than its class's hot and warm LRU ages
 *             ("stats items": age_hot, age_warm) may have been read since without a trace: it
 *             counts as used, and is never deleted. Without the segmented LRU memcached
 *             records a fetch at most once a minute (ITEM_UPDATE_INTERVAL): the span is 60 s.
 *
 * Never deleted: an item the adapter did not see idle in a complete dump of the same server
 * instance (a restart, told by "stats" pid and start time, forgets everything); an item
 * whose cas differs (CAS-guarded delete); a server running without CAS (-C): nothing is aged
 * there. Nothing at all while the last refresh failed.
 *
 * The rotation around this protocol is the frame's (adapter-round.h): the connection, the
 * refresh's deadline, the index and its sweep, the victims, failures said once per kind, steps
 * of at most AD_STEP_USEC in the host's loop (the clock read every MC_CLOCK_EVERY lines). Here:
 * replies are buffered up to MC_INPUT_MAX (the socket is not read beyond); one batch of checks
 * is in flight at a time; dump lines and checks are paced to `rate` items a second.
 */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "cacheage/plugin.h"
#include "adapter-round.h"
#include "memcached-proto.h"

#define MC_CLOCK_EVERY 4                  /* lines between two reads of the clock */
#define MC_RATE_DEFAULT 50000             /* items per second read from a dump or checked */
#define MC_INPUT_MAX (1024 * 1024)        /* bytes of replies buffered before reading stops */
/*
 * Short runs for the server's threads. A read frees that much of the socket, and memcached's
 * crawler then writes as much in one run on a CPU; a batch of checks is one run of the worker
 * thread that answers them. A client's get that comes meanwhile waits for a CPU or
 * for that worker. With 128 KiB and 512, a rotation's deletes cost the client's p99 3.6x;
 * with 8 KiB and 16, 1.3x (bench-memcached, doc/benchmarks.md). A build may set others, to
 * measure them again: meson setup -Dc_args='-DMC_READ_MAX=131072 -DMC_CHECK_BATCH=512'.
 */
#ifndef MC_READ_MAX
#define MC_READ_MAX (8 * 1024)            /* bytes read from the socket at once */
#endif
#ifndef MC_CHECK_BATCH
#define MC_CHECK_BATCH 16                 /* victims checked per round trip */
#endif
#define MC_BUSY_RETRY_USEC 100000         /* LRU crawler busy: ask again after this */
#define MC_ITEM_UPDATE_SEC 60             /* memcached's ITEM_UPDATE_INTERVAL */
#define MC_MAX_ITEMS_DEFAULT 1000000      /* items */

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- configuration ---- */

/* The checks go at `rate` too (no delete_rate), within the dump's share of the deadline. */
struct mc_config {
        struct ad_net_config net; /* first: the frame's keys (adapter-round.h) */
};

static const struct ca_key_spec mc_keys[] = {
        AD_KEY_SERVER(struct mc_config, "127.0.0.1:11211"),
        AD_KEY_TIMEOUT(struct mc_config),
        AD_KEY_REFRESH_TIMEOUT(struct mc_config, "longest refresh, from before_rotate to the dump "
                               "read (0: 1min + 3 x max_items / rate)"),
        AD_KEY_MAX_ITEMS(struct mc_config, "max_items", "items", STR(MC_MAX_ITEMS_DEFAULT)),
        AD_KEY_RATE(struct mc_config, STR(MC_RATE_DEFAULT),
                    "items per second read from a dump or checked for deletion (0: no limit)"),
        AD_KEY_DRY_RUN(struct mc_config),
        CA_KEY_END
};

/* ---- state ---- */

/* mc_item's flags (AD_ITEM_OWN) */
#define MC_ITEM_FETCHED 0x01       /* the last dump said fetch=yes */
#define MC_ITEM_FETCH_UNCOUNTED 0x02 /* first seen already fetched: a use still to count */

struct mc_item {
        struct ad_item ad;       /* first: the frame's head, whose node is the cache's */
        uint64_t cas;
        uint32_t la;             /* Unix seconds, as the last dump said */
        uint32_t size;           /* memcached's bytes for it */
        uint8_t cls;
        uint8_t key[];
};

enum mc_phase {
        MC_STATS = AD_PHASE_ADAPTER, /* stats, stats settings, stats items asked */
        MC_DUMP,                     /* lru_crawler metadump asked */
};

static const char *const mc_phase_name[] = {
        [MC_STATS - AD_PHASE_ADAPTER] = "reading stats",
        [MC_DUMP - AD_PHASE_ADAPTER] = "reading the dump",
};

struct mc {
        struct ad_round ad;       /* first: the frame (connection, index, victims, statistics) */
        struct mc_config cfg;

        bool busy_retry;          /* the crawler was busy: metadump again at the next step */
        bool lru_walk;            /* the server knows no "metadump hash": "all" */
        unsigned stats_ends;      /* END lines still due in MC_STATS */
        uint64_t busy_since_usec;

        /* What the stats said. */
        bool segmented, cas_enabled, crawler, dump_enabled;
        uint64_t stat_pid, stat_uptime;
        uint32_t server_time;     /* "time": the server's clock when the dump began */
        uint64_t server_pid, server_started; /* the instance the items belong to */
        bool server_known;
        uint32_t lru_age_sec[MC_CLASSES]; /* max(age_hot, age_warm) */

        uint64_t dump_unfetched, dump_unaddressable; /* of the dump under way */

        /* The check: deletes written since the last fence written, those the fence in flight
           settles, and their refusals so far. */
        uint64_t md_since_mn, md_fenced, ex_seen, nf_seen;

        bool unaddressable_logged;

        /* Statistics. */
        uint64_t cas_conflicts, changed, maybe_active;
        uint64_t items_unfetched, items_unaddressable; /* of the last dump */
};

_Static_assert(offsetof(struct mc, ad) == 0 && offsetof(struct mc_config, net) == 0,
               "the frame and its keys first (adapter-round.h)");

static struct mc *mc_of(struct ad_round *r)
{
        return (struct mc *)r;
}

static void mc_write(struct mc *mc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void mc_write(struct mc *mc, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        evbuffer_add_vprintf(bufferevent_get_output(mc->ad.conn.bev), fmt, ap);
        va_end(ap);
}

/* ---- refresh: stats, then the metadump ---- */

static void mc_refresh(struct ad_round *r)
{
        struct mc *mc = mc_of(r);

        r->phase = MC_STATS;
        mc->stats_ends = 3;
        mc->segmented = mc->cas_enabled = mc->crawler = mc->dump_enabled = false;
        memset(mc->lru_age_sec, 0, sizeof(mc->lru_age_sec));
        ad_round_timeouts(r);
        ca_host_log(r->host, LOG_DEBUG, "refresh: stats, then the metadump");
        mc_write(mc, "stats\r\nstats settings\r\nstats items\r\n");
}

static void mc_dump_request(struct mc *mc)
{
        ad_pace_start(&mc->ad.pace, mc->cfg.net.rate);
        mc->busy_retry = false;
        ad_round_timeouts(&mc->ad);
        mc_write(mc, "lru_crawler metadump %s\r\n", mc->lru_walk ? "all" : "hash");
}

static bool mc_stat_is(const char *name, size_t len, const char *want)
{
        return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* "items:<cls>:age_hot" and "items:<cls>:age_warm": the span of an active item. */
static void mc_stat_item_age(struct mc *mc, const char *name, size_t len, const char *v,
                             size_t vlen)
{
        const char *c1, *c2;
        uint64_t cls, age;

        if (len < 7 || memcmp(name, "items:", 6) != 0)
                return;
        c1 = name + 6;
        c2 = memchr(c1, ':', len - 6);
        if (!c2)
                return;
        if (!mc_stat_is(c2 + 1, len - (size_t)(c2 + 1 - name), "age_hot") &&
            !mc_stat_is(c2 + 1, len - (size_t)(c2 + 1 - name), "age_warm"))
                return;
        if (ad_parse_u64(c1, (size_t)(c2 - c1), MC_CLASSES - 1, &cls) < 0 ||
            ad_parse_u64(v, vlen, UINT32_MAX, &age) < 0)
                return;
        if (age > mc->lru_age_sec[cls])
                mc->lru_age_sec[cls] = (uint32_t)age;
}

static int mc_stat_line(struct mc *mc, const char *line, size_t len)
{
        const char *name, *v;
        size_t nlen, vlen;
        uint64_t u;

        if (mc_parse_stat(line, len, &name, &nlen, &v, &vlen) < 0)
                return -EBADMSG;
        if (mc_stat_is(name, nlen, "pid")) {
                if (ad_parse_u64(v, vlen, UINT64_MAX, &u) < 0)
                        return -EBADMSG;
                mc->stat_pid = u;
        } else if (mc_stat_is(name, nlen, "time")) {
                if (ad_parse_u64(v, vlen, UINT32_MAX, &u) < 0)
                        return -EBADMSG;
                mc->server_time = (uint32_t)u;
        } else if (mc_stat_is(name, nlen, "uptime")) {
                if (ad_parse_u64(v, vlen, UINT32_MAX, &u) < 0)
                        return -EBADMSG;
                mc->stat_uptime = u;
        } else if (mc_stat_is(name, nlen, "lru_segmented")) {
                mc->segmented = mc_stat_is(v, vlen, "yes");
        } else if (mc_stat_is(name, nlen, "cas_enabled")) {
                mc->cas_enabled = mc_stat_is(v, vlen, "yes");
        } else if (mc_stat_is(name, nlen, "lru_crawler")) {
                mc->crawler = mc_stat_is(v, vlen, "yes");
        } else if (mc_stat_is(name, nlen, "dump_enabled")) {
                mc->dump_enabled = mc_stat_is(v, vlen, "yes");
        } else {
                mc_stat_item_age(mc, name, nlen, v, vlen);
        }
        return 0;
}

/* All three stats read: is this a server we can age, and the one we knew? */
static void mc_stats_done(struct mc *mc)
{
        struct ad_round *r = &mc->ad;
        uint64_t started = mc->server_time >= mc->stat_uptime ? mc->server_time - mc->stat_uptime
                                                              : 0;

        if (!mc->cas_enabled)
                return ad_round_fail(r, "the server runs without CAS (-C): no delete could tell "
                                     "an item rewritten since it was seen, so none is made");
        if (!mc->crawler)
                return ad_round_fail(r, "the server's LRU crawler is off (-o no_lru_crawler): no "
                                     "metadump");
        if (!mc->dump_enabled)
                return ad_round_fail(r, "the server refuses dumps (-o no_dump_enabled)");
        /*
         * Another server, or the same one restarted: its cas values start again at 1, so an
         * item known before is not the item of that name now, whatever its cas. The start
         * time moves by a second with the server's clock ticks.
         */
        if (mc->server_known && (mc->stat_pid != mc->server_pid ||
                                 started + 2 < mc->server_started ||
                                 started > mc->server_started + 2)) {
                ca_host_log(r->host, LOG_NOTICE, "memcached at %s restarted (pid %" PRIu64
                            ", was %" PRIu64 "): the %zu items known from before are "
                            "forgotten", r->server, mc->stat_pid, mc->server_pid, r->n_items);
                r->reset_gen = r->gen + 1;
        }
        mc->server_pid = mc->stat_pid;
        mc->server_started = started;
        mc->server_known = true;

        r->phase = MC_DUMP;
        ad_round_walk_begin(r);
        mc->dump_unfetched = mc->dump_unaddressable = 0;
        mc->busy_since_usec = 0;
        mc_dump_request(mc);
}

/*
 * Whether a fetched item last accessed @idle_sec ago (by the server's clock) may have been
 * read since without a trace (see "active items" at the top): while its class's hot or warm
 * LRU is older than that, it may still be marked active.
 */
static bool mc_maybe_active(const struct mc *mc, uint64_t idle_sec, uint8_t cls)
{
        uint32_t span = mc->segmented ? mc->lru_age_sec[cls] : MC_ITEM_UPDATE_SEC;

        return idle_sec <= (uint64_t)span + 1;
}

/* Seconds from @la to the server's "time" read before the dump (an underestimate: errs on use). */
static uint64_t mc_idle_sec(const struct mc *mc, uint32_t la)
{
        return la < mc->server_time ? mc->server_time - la : 0;
}

/* The fields of @e into @it, and a fresh start in the cache: a new object. */
static void mc_item_start(struct mc *mc, struct mc_item *it, const struct mc_dump_entry *e)
{
        ca_cache_remove(mc->ad.cache, &it->ad.node); /* with its old size */
        it->cas = e->cas;
        it->la = e->la;
        it->size = e->size;
        it->cls = e->cls;
        it->ad.flags = e->fetched ? MC_ITEM_FETCHED | MC_ITEM_FETCH_UNCOUNTED : 0;
        ca_cache_insert(mc->ad.cache, &it->ad.node);
}

static void mc_dump_entry(struct mc *mc, const struct mc_dump_entry *e)
{
        struct ad_round *r = &mc->ad;
        char token[MC_KEY_MAX + 1];
        struct mc_item *it;
        bool b64, used;

        r->walk_items++;
        if (!e->fetched)
                mc->dump_unfetched++;
        if (mc_key_token(e->key, e->key_len, token, &b64) < 0) {
                /* A binary key too long for base64 in a command: it could never be deleted. */
                mc->dump_unaddressable++;
                return;
        }
        it = (struct mc_item *)ad_round_lookup(r, e->key, e->key_len);
        if (!it) {
                it = (struct mc_item *)ad_round_add(r, e->key, e->key_len);
                if (!it)
                        return;
                mc_item_start(mc, it, e);
        } else if (it->cas != e->cas || it->ad.gen < r->reset_gen) {
                /* Rewritten (or another server's item of that name): a new object. */
                mc_item_start(mc, it, e);
        } else {
                used = (e->fetched && !(it->ad.flags & MC_ITEM_FETCHED)) || e->la > it->la ||
                       (it->ad.flags & MC_ITEM_FETCH_UNCOUNTED) ||
                       (e->fetched && mc_maybe_active(mc, mc_idle_sec(mc, e->la), e->cls));
                if (it->ad.flags & AD_ITEM_CONDEMNED) {
                        /* dry_run: out of the cache since judged; a use brings it back. */
                        if (used) {
                                it->ad.flags &= (uint8_t)~AD_ITEM_CONDEMNED;
                                ca_cache_insert(r->cache, &it->ad.node);
                        }
                } else if (used && ca_node_linked(&it->ad.node)) {
                        ca_touch(r->cache, &it->ad.node);
                }
                it->ad.flags &= (uint8_t)~(MC_ITEM_FETCH_UNCOUNTED | MC_ITEM_FETCHED);
                if (e->fetched)
                        it->ad.flags |= MC_ITEM_FETCHED;
                if (e->la > it->la)
                        it->la = e->la;
                it->cls = e->cls;
        }
        it->ad.gen = r->gen;
}

/* The dump is read and swept: its figures, and a line. */
static void mc_walked(struct ad_round *r, uint64_t usec)
{
        struct mc *mc = mc_of(r);

        mc->items_unfetched = mc->dump_unfetched;
        mc->items_unaddressable = mc->dump_unaddressable;
        if (mc->dump_unaddressable && !mc->unaddressable_logged)
                ca_host_log(r->host, LOG_NOTICE, "%" PRIu64 " items of memcached at %s have "
                            "binary keys over 186 bytes, which no text command can name: they "
                            "are not aged (logged once)", mc->dump_unaddressable, r->server);
        mc->unaddressable_logged = mc->unaddressable_logged || mc->dump_unaddressable > 0;
        ca_host_log(r->host, LOG_DEBUG, "dump: %" PRIu64 " items in %" PRIu64 " ms (%" PRIu64
                    " never fetched), %zu tracked, longest step %" PRIu64 " us (%" PRIu64
                    " us on the CPU)",
                    r->walk_items, usec / 1000, mc->dump_unfetched, r->n_items,
                    r->conn.steps.longest_usec, r->conn.steps.longest_cpu_usec);
}

/* ---- the check: the victims as they are now, deleted when exactly as seen ---- */

static void mc_check_batch(struct ad_round *r)
{
        struct mc *mc = mc_of(r);
        char token[MC_KEY_MAX + 1];
        bool b64;

        ad_round_batch(r, MC_CHECK_BATCH);
        for (size_t i = r->checked; i < r->batch_end; i++) {
                struct mc_item *it = (struct mc_item *)r->victims[i];

                /* Tracked keys always have a token (mc_dump_entry() checked). */
                (void)mc_key_token(it->key, it->ad.key_len, token, &b64);
                mc_write(mc, "me %s%s\r\n", token, b64 ? " b" : "");
        }
        mc_write(mc, "mn\r\n");
        mc->md_fenced = mc->md_since_mn;
        mc->md_since_mn = 0;
        ad_round_timeouts(r);
}

/* The verdict on victims[checked], from its "me" reply (@meta NULL: "EN", gone). */
static void mc_judge(struct mc *mc, const struct mc_meta *meta)
{
        struct ad_round *r = &mc->ad;
        struct mc_item *it = (struct mc_item *)r->victims[r->checked++];
        uint64_t since_dump_sec = (ca_now_usec() - r->refresh_start_usec) / 1000000 + 1;
        char token[MC_KEY_MAX + 1];
        bool b64;

        if (!meta) {
                r->gone++;
                ad_round_forget(r, &it->ad);
                return;
        }
        if (meta->cas != it->cas || (meta->fetched && !(it->ad.flags & MC_ITEM_FETCHED))) {
                /* Rewritten, or read for the first time, since the dump. */
                mc->changed++;
                return ad_round_spare(r, &it->ad);
        }
        if (meta->fetched && (meta->idle_sec <= since_dump_sec ||
                              mc_maybe_active(mc, meta->idle_sec, meta->cls))) {
                /* Accessed since the dump, or maybe read without a trace. */
                mc->maybe_active++;
                return ad_round_spare(r, &it->ad);
        }
        (void)mc_key_token(it->key, it->ad.key_len, token, &b64);
        if (mc->cfg.net.dry_run) {
                ad_round_condemn(r, &it->ad);
                ca_host_log(r->host, LOG_DEBUG, "dry run: would delete %s%s (cas %" PRIu64 ")",
                            token, b64 ? " (base64)" : "", it->cas);
                return;
        }
        mc_write(mc, "md %s%s C%" PRIu64 " q\r\n", token, b64 ? " b" : "", it->cas);
        mc->md_since_mn++;
        /* Whatever the answer, the item as it was is gone or was never ours to keep. */
        ad_round_forget(r, &it->ad);
}

/* "MN": the checks of the batch are answered, and the deletes written before it are settled. */
static void mc_fence(struct mc *mc)
{
        struct ad_round *r = &mc->ad;

        if (r->checked != r->batch_end)
                return ad_round_fail(r, "MN before the answers to every me");
        if (mc->ex_seen + mc->nf_seen > mc->md_fenced)
                return ad_round_fail(r, "more refusals than deletes (%" PRIu64 " EX/NF for %"
                                     PRIu64 " md)", mc->ex_seen + mc->nf_seen, mc->md_fenced);
        r->deleted += mc->md_fenced - mc->ex_seen - mc->nf_seen;
        mc->cas_conflicts += mc->ex_seen;
        r->gone += mc->nf_seen;
        mc->md_fenced = mc->ex_seen = mc->nf_seen = 0;
        if (r->checked < r->n_victims)
                return mc_check_batch(r);
        if (mc->md_since_mn > 0) {
                /* The last deletes: one more fence settles them. */
                r->batch_end = r->checked;
                mc_write(mc, "mn\r\n");
                mc->md_fenced = mc->md_since_mn;
                mc->md_since_mn = 0;
                return;
        }
        ad_round_check_done(r);
}

/* ---- reading replies ---- */

static void mc_line_stats(struct mc *mc, const char *line, size_t len)
{
        switch (mc_reply_kind(line, len)) {
        case MC_REPLY_STAT:
                if (mc_stat_line(mc, line, len) < 0)
                        return ad_round_bad_reply(&mc->ad, "bad stats line", line, len);
                return;
        case MC_REPLY_END:
                if (--mc->stats_ends == 0)
                        mc_stats_done(mc);
                return;
        default:
                return ad_round_bad_reply(&mc->ad, "unexpected reply to stats (is this "
                                          "memcached?)", line, len);
        }
}

static void mc_line_dump(struct mc *mc, const char *line, size_t len)
{
        struct ad_round *r = &mc->ad;
        struct mc_dump_entry e;
        char err[MC_ERR_MAX], ex[AD_EXCERPT_BUF];

        switch (mc_reply_kind(line, len)) {
        case MC_REPLY_END:
        case MC_REPLY_NOTSTARTED: /* nothing to crawl: an empty server */
                return ad_round_walk_end(r);
        case MC_REPLY_BUSY:
                /* The crawler serves another client (or memcached's own expiry crawl). */
                if (r->walk_items > 0)
                        return ad_round_bad_reply(r, "BUSY in the middle of a metadump", line,
                                                  len);
                if (!mc->busy_since_usec)
                        mc->busy_since_usec = ca_now_usec();
                if (ca_now_usec() - mc->busy_since_usec > mc->cfg.net.timeout_usec)
                        return ad_round_bad_reply(r, "the LRU crawler stayed busy longer than "
                                                  "timeout", line, len);
                mc->busy_retry = true;
                ad_round_timeouts(r);
                ad_conn_schedule(&r->conn, MC_BUSY_RETRY_USEC);
                return;
        case MC_REPLY_BADCLASS:
                if (r->walk_items > 0 || mc->lru_walk)
                        return ad_round_bad_reply(r, "metadump refused", line, len);
                ca_host_log(r->host, LOG_NOTICE, "memcached at %s has no hash table walk "
                            "(before 1.6.9): dumping by LRU, which may miss items that move "
                            "meanwhile (they are aged from the next dump on)", r->server);
                mc->lru_walk = true;
                mc_dump_request(mc);
                return;
        case MC_REPLY_ERROR:
                return ad_round_bad_reply(r, "metadump refused", line, len);
        default:
                break;
        }
        if (mc_parse_dump_line(line, len, &e, err, sizeof(err)) < 0)
                return ad_round_fail_kind(r, err, "bad metadump line %" PRIu64 ": %s: \"%s\"",
                                          r->walk_items + 1, err, ad_excerpt(line, len, ex));
        mc_dump_entry(mc, &e);
}

static void mc_line_check(struct mc *mc, const char *line, size_t len)
{
        struct ad_round *r = &mc->ad;
        struct mc_meta meta;
        char err[MC_ERR_MAX], ex[AD_EXCERPT_BUF];

        switch (mc_reply_kind(line, len)) {
        case MC_REPLY_ME:
        case MC_REPLY_EN:
                if (r->checked >= r->batch_end)
                        return ad_round_bad_reply(r, "an answer to no me", line, len);
                if (line[1] == 'N')
                        return mc_judge(mc, NULL);
                if (mc_parse_meta(line, len, &meta, err, sizeof(err)) < 0)
                        return ad_round_fail_kind(r, err, "bad me reply: %s: \"%s\"", err,
                                                  ad_excerpt(line, len, ex));
                return mc_judge(mc, &meta);
        case MC_REPLY_EX:
                mc->ex_seen++;
                return;
        case MC_REPLY_NF:
                mc->nf_seen++;
                return;
        case MC_REPLY_MN:
                return mc_fence(mc);
        default:
                return ad_round_bad_reply(r, "unexpected reply to me/md", line, len);
        }
}

/* One whole line from @in: stats, the dump, or the check's. */
static int mc_reply(struct ad_round *r, struct evbuffer *in)
{
        struct mc *mc = mc_of(r);
        char line[MC_LINE_MAX + 2];
        struct evbuffer_ptr eol;
        size_t eol_len = 0, len;

        eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_LF);
        if (eol.pos < 0) {
                if (evbuffer_get_length(in) <= MC_LINE_MAX)
                        return AD_REPLY_MORE;
                ad_round_fail(r, "a reply line longer than %d bytes", MC_LINE_MAX);
                return AD_REPLY_STOP;
        }
        if ((size_t)eol.pos > MC_LINE_MAX) {
                ad_round_fail(r, "a reply line longer than %d bytes", MC_LINE_MAX);
                return AD_REPLY_STOP;
        }
        if ((r->phase == MC_DUMP || r->phase == AD_PHASE_CHECK) && ad_round_paced(r, 1))
                return AD_REPLY_STOP;
        len = (size_t)eol.pos;
        evbuffer_remove(in, line, len);
        evbuffer_drain(in, eol_len);
        if (len > 0 && line[len - 1] == '\r')
                len--;
        line[len] = '\0';
        if (r->phase == MC_STATS)
                mc_line_stats(mc, line, len);
        else if (r->phase == MC_DUMP)
                mc_line_dump(mc, line, len);
        else
                mc_line_check(mc, line, len);
        return AD_REPLY_TAKEN;
}

static bool mc_waiting(const struct ad_round *r)
{
        const struct mc *mc = (const struct mc *)r;

        return r->phase == MC_STATS || (r->phase == MC_DUMP && !mc->busy_retry) ||
               r->phase == AD_PHASE_CHECK;
}

/* A step of its own: the busy crawler asked again. */
static bool mc_step(struct ad_round *r)
{
        struct mc *mc = mc_of(r);

        if (!mc->busy_retry || r->phase != MC_DUMP)
                return false;
        mc_dump_request(mc);
        return true;
}

static void mc_dropped(struct ad_round *r)
{
        struct mc *mc = mc_of(r);

        mc->busy_retry = false;
        mc->md_since_mn = mc->md_fenced = mc->ex_seen = mc->nf_seen = 0;
}

static void mc_summary(struct ad_round *r, char *buf, size_t len)
{
        struct mc *mc = mc_of(r);

        snprintf(buf, len, "%" PRIu64 " deleted, %" PRIu64 " cas conflicts, %" PRIu64
                 " changed since the dump, %" PRIu64 " maybe active, %" PRIu64 " gone, %" PRIu64
                 " would delete", r->deleted, mc->cas_conflicts, mc->changed, mc->maybe_active,
                 r->gone, r->would_delete);
}

/* ---- the policy ---- */

/* A fetch before the first dump is a victim's second use: counted when it falls due. */
static bool mc_keep(struct ad_round *r, struct ad_item *it)
{
        if (!(it->flags & MC_ITEM_FETCH_UNCOUNTED))
                return false;
        it->flags &= (uint8_t)~MC_ITEM_FETCH_UNCOUNTED;
        return true;
}

static size_t mc_size(const struct ad_item *it)
{
        return ((const struct mc_item *)it)->size;
}

static void mc_stats(struct ad_round *r, ca_stat_emit_t emit, void *eu)
{
        struct mc *mc = mc_of(r);

        AD_GAUGE("unfetched_items", "items", "items of the last dump never fetched (single-use)",
                 mc->items_unfetched);
        AD_GAUGE("unaddressable_items", "items",
                 "items of the last dump with binary keys no command can name, not aged",
                 mc->items_unaddressable);
        AD_COUNTER("cas_conflicts", "items", "deletes refused: rewritten since checked (EX)",
                   mc->cas_conflicts);
        AD_COUNTER("changed", "items", "victims rewritten or first read since the dump, kept",
                   mc->changed);
        AD_COUNTER("maybe_active", "items",
                   "victims kept: accessed since the dump, or maybe read without a trace",
                   mc->maybe_active);
}

/* What the frame asks of memcached (adapter-round.h), a line for each kind of answer. */
static const struct ad_round_ops mc_round_ops = {
        .keys = mc_keys, .instance_size = sizeof(struct mc),
        .config_offset = offsetof(struct mc, cfg),
        .name = "memcached", .noun = "item", .walk = "dump", .max_key = "max_items",
        .work_unit = "lines or items", .phase_names = mc_phase_name,
        .n_phases = sizeof(mc_phase_name) / sizeof(mc_phase_name[0]),
        .key_offset = offsetof(struct mc_item, key), .key_max = MC_KEY_MAX,
        .read_max = MC_READ_MAX, .input_max = MC_INPUT_MAX, .reply_clock_every = MC_CLOCK_EVERY,
        .rate_default = MC_RATE_DEFAULT,
        .refresh = mc_refresh, .reply = mc_reply, .waiting = mc_waiting, .step = mc_step,
        .check = mc_check_batch, .dropped = mc_dropped, .walked = mc_walked,
        .summary = mc_summary,
        .keep = mc_keep, .size = mc_size, .stats = mc_stats,
};

AD_ROUND_PLUGIN(mc_round_ops, "memcached",
                "the items of a memcached server: single-use ones deleted, CAS-guarded");
