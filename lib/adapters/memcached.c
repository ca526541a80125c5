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
 * Errors (connection refused or lost, timeout, a reply that is not memcached's): counted,
 * logged once per change (and once when the server answers again), retried at the next
 * rotation; the host's loop and its other caches never wait for this one.
 *
 * Loop discipline: every read, parse and sweep runs in steps of at most MC_STEP_USEC (the
 * clock read every MC_STEP_CLOCK_EVERY lines), at the base's lowest priority, as the host's
 * aging slices do; replies are buffered up to MC_INPUT_MAX (the socket is not read beyond);
 * one batch of checks is in flight at a time; dump lines and checks are paced to `rate` items
 * a second (the socket is not read while a paced step waits); items live in a pool of their
 * own (adapter-pool.h), so that forgetting a million of them costs no one long free().
 */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>

#include "cacheage/plugin.h"
#include "cacheage/value.h"
#include "adapter-net.h"
#include "adapter-pool.h"
#include "memcached-proto.h"

#define MC_STEP_USEC 500                  /* longest run of one step in the host's loop */
#define MC_STEP_CLOCK_EVERY 4             /* lines or items between two reads of the clock */
#define MC_RATE_DEFAULT 50000             /* items per second read from a dump or checked */
#define MC_RATE_MAX 100000000             /* items per second */
#define MC_INPUT_MAX (1024 * 1024)        /* bytes of replies buffered before reading stops */
/*
 * Short runs for the server's threads. A read frees that much of the socket, and memcached's
 * crawler then writes as much in one run on a CPU; a batch of checks is one run of the worker
 * thread that answers them. A client's get that comes meanwhile waits for a CPU or
 * for that worker. With 128 KiB and 512, a rotation's deletes cost the client's p99 4.3x;
 * with 8 KiB and 16, 1.5x (bench-memcached, doc/benchmarks.md).
 */
#define MC_READ_MAX (8 * 1024)            /* bytes read from the socket at once */
#define MC_CHECK_BATCH 16                 /* victims checked per round trip */
#define MC_BUSY_RETRY_USEC 100000         /* LRU crawler busy: ask again after this */
#define MC_ITEM_UPDATE_SEC 60             /* memcached's ITEM_UPDATE_INTERVAL */
#define MC_MAX_ITEMS_DEFAULT 1000000      /* items */
#define MC_MAX_ITEMS_MAX 100000000        /* items */
#define MC_BUCKETS_MIN 1024               /* hash buckets */

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- configuration ---- */

struct mc_config {
        const char *server;  /* as written */
        uint64_t timeout_usec;
        uint64_t refresh_timeout_usec; /* 0: derived, mc_refresh_deadline_usec() */
        uint64_t max_items;
        uint64_t rate;       /* items per second, 0: as fast as the server sends */
        bool dry_run;
        /* From server, by mc_check_server(). */
        struct sockaddr_storage addr;
        socklen_t addr_len;
};

/* server = an address or a socket path (adapter-net.h): names are not resolved. */
static int mc_check_server(const char *v, void *target, char *msg, size_t msg_len)
{
        struct mc_config *cfg = target;
        struct sockaddr_storage ss;
        socklen_t len;
        int r = ad_server_parse(v, &ss, &len, msg, msg_len);

        if (r == 0 && cfg) {
                cfg->addr = ss;
                cfg->addr_len = len;
        }
        return r;
}

static const struct ca_key_spec mc_keys[] = {
        { .name = "server", .type = CA_KEY_STRING, CA_KEY_FIELD(struct mc_config, server),
          .def = "127.0.0.1:11211", .check = mc_check_server,
          .help = "IPv4:PORT, [IPv6]:PORT, localhost:PORT or a unix socket path" },
        { .name = "timeout", .type = CA_KEY_DURATION,
          CA_KEY_FIELD(struct mc_config, timeout_usec), .def = "5s", .min = 10000,
          .max = 600000000, .help = "longest wait for the server's next bytes" },
        { .name = "refresh_timeout", .type = CA_KEY_DURATION,
          CA_KEY_FIELD(struct mc_config, refresh_timeout_usec), .def = "0", .min = 0,
          .max = AD_REFRESH_TIMEOUT_MAX_USEC,
          .help = "longest refresh, from before_rotate to the dump read (0: 1min + 3 x "
                  "max_items / rate)" },
        { .name = "max_items", .type = CA_KEY_UINT, CA_KEY_FIELD(struct mc_config, max_items),
          .def = STR(MC_MAX_ITEMS_DEFAULT), .min = 1, .max = MC_MAX_ITEMS_MAX,
          .help = "items tracked at most; the rest is not aged (and said so)" },
        { .name = "rate", .type = CA_KEY_UINT, CA_KEY_FIELD(struct mc_config, rate),
          .def = STR(MC_RATE_DEFAULT), .min = 0, .max = MC_RATE_MAX,
          .help = "items per second read from a dump or checked for deletion (0: no limit)" },
        { .name = "dry_run", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct mc_config, dry_run),
          .def = "no", .help = "check and count the victims, delete nothing" },
        CA_KEY_END
};

/* ---- state ---- */

/* mc_item.flags */
#define MC_ITEM_FETCHED 0x01       /* the last dump said fetch=yes */
#define MC_ITEM_FETCH_UNCOUNTED 0x02 /* first seen already fetched: a use still to count */
#define MC_ITEM_VICTIM 0x04        /* in mc->victims, out of the cache, being checked */
#define MC_ITEM_CONDEMNED 0x08     /* dry_run: would have been deleted; out of the cache */
#define MC_ITEM_DEAD 0x10          /* deleted or gone: out of the index, freed by the next sweep */

/*
 * A tracked item: the node first, so that the framework's node is the item. The list of all
 * items owns them (a sweep walks it: a refresh costs what the server holds, not max_items);
 * the hash table is an index.
 */
struct mc_item {
        struct ca_node node;
        struct mc_item *next;    /* hash chain */
        struct mc_item *all;     /* the list of all items */
        uint64_t cas;
        uint32_t la;             /* Unix seconds, as the last dump said */
        uint32_t gen;            /* the dump that saw it last */
        uint32_t size;           /* memcached's bytes for it */
        uint8_t flags;           /* MC_ITEM_* */
        uint8_t cls;
        uint8_t key_len;
        uint8_t key[];
};

enum mc_phase {
        MC_DOWN,       /* no connection */
        MC_CONNECTING,
        MC_IDLE,       /* connected, nothing asked */
        MC_STATS,      /* stats, stats settings, stats items asked */
        MC_DUMP,       /* lru_crawler metadump asked */
        MC_SWEEP,      /* dump read: forgetting the items it did not list */
        MC_ROUND,      /* checking and deleting victims */
};

static const char *const mc_phase_name[] = {
        [MC_DOWN] = "not connected",
        [MC_CONNECTING] = "connecting",
        [MC_IDLE] = "idle",
        [MC_STATS] = "reading stats",
        [MC_DUMP] = "reading the dump",
        [MC_SWEEP] = "sweeping",
        [MC_ROUND] = "checking and deleting",
};

struct mc {
        struct ca_host *host;
        struct mc_config cfg;
        char *server;             /* the key's text, for messages */
        struct ca_cache *cache;
        struct ad_conn conn;      /* the connection, its steps, the refresh handshake */

        enum mc_phase phase;
        bool want_dump;           /* a refresh waits for the connection to be idle */
        bool stale;               /* no complete dump since the start or the last error */
        bool busy_retry;          /* the crawler was busy: metadump again at the next step */
        bool lru_walk;            /* the server knows no "metadump hash": "all" */
        unsigned stats_ends;      /* END lines still due in MC_STATS */
        uint64_t refresh_start_usec, busy_since_usec;

        /* What the stats said. */
        bool segmented, cas_enabled, crawler, dump_enabled;
        uint64_t stat_pid, stat_uptime;
        uint32_t server_time;     /* "time": the server's clock when the dump began */
        uint64_t server_pid, server_started; /* the instance the items belong to */
        bool server_known;
        uint32_t lru_age_sec[MC_CLASSES]; /* max(age_hot, age_warm) */

        /* The items: a list that owns them, and a fixed array of buckets sized from max_items. */
        struct ad_pool pool;      /* where they live (adapter-pool.h) */
        struct mc_item *all;
        struct mc_item **buckets;
        size_t n_buckets;
        size_t n_items;           /* in the index: dead ones waiting for a sweep are not */
        uint32_t gen;             /* the current dump */
        uint32_t reset_gen;       /* items seen before this dump belong to an older server */
        struct mc_item **sweep_at; /* the sweep's place in the list, between two steps */
        uint64_t dump_lines, dump_unfetched, dump_untracked, dump_unaddressable;

        /* The victims of the round: [0, checked) done, [checked, batch_end) being checked. */
        struct mc_item **victims;
        size_t n_victims, cap_victims, checked, batch_end;
        uint64_t md_since_mn;     /* deletes written since the last fence written */
        uint64_t md_fenced;       /* deletes the fence in flight settles */
        uint64_t ex_seen, nf_seen; /* their refusals so far */

        /* The rotation's deletes, said in one line once its aging and rounds are done. */
        bool summary_due;         /* a dump was read: its rotation's line is still to say */
        bool aged;                /* the host's slices of that rotation are done */
        uint64_t rot_victims, rot_start_usec;

        /* Health, for logging once per change. */
        struct ad_health health;
        bool over_max_logged, unaddressable_logged;

        /* Statistics. */
        uint64_t deleted, would_delete, cas_conflicts, changed, maybe_active, gone, errors, dumps;
        uint64_t refresh_timeouts;
        uint64_t dump_lines_seen; /* the most lines a dump had (or had when cut short) */
        uint64_t dump_usec;

        struct ad_pace pace;      /* rate: the dump's lines, the round's checks */
        uint64_t items_unfetched, items_untracked, items_unaddressable; /* of the last dump */
};


static struct mc_item **mc_bucket(struct mc *mc, const uint8_t *key, size_t len)
{
        return &mc->buckets[ad_hash(key, len) & (mc->n_buckets - 1)];
}

static struct mc_item *mc_lookup(struct mc *mc, const uint8_t *key, size_t len)
{
        for (struct mc_item *it = *mc_bucket(mc, key, len); it; it = it->next)
                if (it->key_len == len && memcmp(it->key, key, len) == 0)
                        return it;
        return NULL;
}

/* Take @it out of the index and the cache; the next sweep frees it. */
static void mc_forget(struct mc *mc, struct mc_item *it)
{
        struct mc_item **p = mc_bucket(mc, it->key, it->key_len);

        while (*p != it)
                p = &(*p)->next;
        *p = it->next;
        ca_cache_remove(mc->cache, &it->node);
        mc->n_items--;
        it->flags = MC_ITEM_DEAD;
}

/* ---- health ---- */

static void mc_close(struct mc *mc);
static void mc_round_abort(struct mc *mc);

/*
 * Something went wrong with the server: count, log once per change of kind, drop the
 * connection. The kind names what went wrong without the particulars: the message's format for
 * most (mc_fail()), the reply's or the parser's complaint for a bad reply; the numbers in the
 * message ("bad metadump line 1234") do not make it another, so a server that fails the same
 * way at every rotation is said once, not at every rotation.
 */
static void mc_fail_kind(struct mc *mc, const char *kind, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
#define MC_FIRST_(first, ...) first
#define mc_fail(mc, ...) mc_fail_kind(mc, MC_FIRST_(__VA_ARGS__, ), __VA_ARGS__)

static void mc_fail_kind(struct mc *mc, const char *kind, const char *fmt, ...)
{
        char msg[AD_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        mc->errors++;
        if (ad_health_fail(&mc->health, kind))
                ca_host_log(mc->host, LOG_WARNING, "memcached at %s: %s; nothing is deleted "
                            "until a dump succeeds, retrying at the next rotation", mc->server,
                            msg);
        else
                ca_host_log(mc->host, LOG_DEBUG, "memcached at %s: %s (again)", mc->server, msg);
        mc->stale = true;
        mc_round_abort(mc);
        mc_close(mc);
        mc->want_dump = false;
        ad_conn_refresh_done(&mc->conn);
}

static void mc_close(struct mc *mc)
{
        ad_conn_close(&mc->conn);
        mc->phase = MC_DOWN;
        mc->busy_retry = false;
}

static void mc_write(struct mc *mc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void mc_write(struct mc *mc, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        evbuffer_add_vprintf(bufferevent_get_output(mc->conn.bev), fmt, ap);
        va_end(ap);
}

static void mc_timeouts(struct mc *mc, bool waiting)
{
        ad_conn_timeouts(&mc->conn, waiting);
}

/* ---- refresh: stats, then the metadump ---- */

static void mc_round_start(struct mc *mc);

static void mc_refresh_start(struct mc *mc)
{
        mc->want_dump = false;
        mc->phase = MC_STATS;
        mc->stats_ends = 3;
        mc->segmented = mc->cas_enabled = mc->crawler = mc->dump_enabled = false;
        memset(mc->lru_age_sec, 0, sizeof(mc->lru_age_sec));
        mc->refresh_start_usec = ca_now_usec();
        ad_steps_mark(&mc->conn.steps);
        mc_timeouts(mc, true);
        ca_host_log(mc->host, LOG_DEBUG, "refresh: stats, then the metadump");
        mc_write(mc, "stats\r\nstats settings\r\nstats items\r\n");
}

static void mc_dump_request(struct mc *mc)
{
        ad_pace_start(&mc->pace, mc->cfg.rate);
        mc->busy_retry = false;
        mc_timeouts(mc, true);
        mc_write(mc, "lru_crawler metadump %s\r\n", mc->lru_walk ? "all" : "hash");
}

static bool mc_stat_is(const char *name, size_t len, const char *want)
{
        return len == strlen(want) && memcmp(name, want, len) == 0;
}

static bool mc_value_is(const char *v, size_t len, const char *want)
{
        return len == strlen(want) && memcmp(v, want, len) == 0;
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
                mc->segmented = mc_value_is(v, vlen, "yes");
        } else if (mc_stat_is(name, nlen, "cas_enabled")) {
                mc->cas_enabled = mc_value_is(v, vlen, "yes");
        } else if (mc_stat_is(name, nlen, "lru_crawler")) {
                mc->crawler = mc_value_is(v, vlen, "yes");
        } else if (mc_stat_is(name, nlen, "dump_enabled")) {
                mc->dump_enabled = mc_value_is(v, vlen, "yes");
        } else {
                mc_stat_item_age(mc, name, nlen, v, vlen);
        }
        return 0;
}

/* All three stats read: is this a server we can age, and the one we knew? */
static void mc_stats_done(struct mc *mc)
{
        uint64_t started = mc->server_time >= mc->stat_uptime ? mc->server_time - mc->stat_uptime
                                                              : 0;

        if (!mc->cas_enabled)
                return mc_fail(mc, "the server runs without CAS (-C): no delete could tell an "
                               "item rewritten since it was seen, so none is made");
        if (!mc->crawler)
                return mc_fail(mc, "the server's LRU crawler is off (-o no_lru_crawler): no "
                               "metadump");
        if (!mc->dump_enabled)
                return mc_fail(mc, "the server refuses dumps (-o no_dump_enabled)");
        /*
         * Another server, or the same one restarted: its cas values start again at 1, so an
         * item known before is not the item of that name now, whatever its cas. The start
         * time moves by a second with the server's clock ticks.
         */
        if (mc->server_known && (mc->stat_pid != mc->server_pid ||
                                 started + 2 < mc->server_started ||
                                 started > mc->server_started + 2)) {
                ca_host_log(mc->host, LOG_NOTICE, "memcached at %s restarted (pid %" PRIu64
                            ", was %" PRIu64 "): the %zu items known from before are "
                            "forgotten", mc->server, mc->stat_pid, mc->server_pid, mc->n_items);
                mc->reset_gen = mc->gen + 1;
        }
        mc->server_pid = mc->stat_pid;
        mc->server_started = started;
        mc->server_known = true;

        mc->phase = MC_DUMP;
        mc->gen++;
        mc->dump_lines = mc->dump_unfetched = mc->dump_untracked = mc->dump_unaddressable = 0;
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

static struct mc_item *mc_item_new(struct mc *mc, const struct mc_dump_entry *e)
{
        struct mc_item *it = ad_pool_get(&mc->pool, sizeof(*it) + e->key_len);
        struct mc_item **b;

        if (!it)
                return NULL;
        memcpy(it->key, e->key, e->key_len);
        it->key_len = (uint8_t)e->key_len;
        b = mc_bucket(mc, it->key, it->key_len);
        it->next = *b;
        *b = it;
        it->all = mc->all;
        mc->all = it;
        mc->n_items++;
        return it;
}

/* The fields of @e into @it, and a fresh start in the cache: a new object. */
static void mc_item_start(struct mc *mc, struct mc_item *it, const struct mc_dump_entry *e)
{
        ca_cache_remove(mc->cache, &it->node); /* with its old size */
        it->cas = e->cas;
        it->la = e->la;
        it->size = e->size;
        it->cls = e->cls;
        it->flags = e->fetched ? MC_ITEM_FETCHED | MC_ITEM_FETCH_UNCOUNTED : 0;
        ca_cache_insert(mc->cache, &it->node);
}

static void mc_dump_entry(struct mc *mc, const struct mc_dump_entry *e)
{
        char token[MC_KEY_MAX + 1];
        struct mc_item *it;
        bool b64, used;

        mc->dump_lines++;
        if (!e->fetched)
                mc->dump_unfetched++;
        if (mc_key_token(e->key, e->key_len, token, &b64) < 0) {
                /* A binary key too long for base64 in a command: it could never be deleted. */
                mc->dump_unaddressable++;
                return;
        }
        it = mc_lookup(mc, e->key, e->key_len);
        if (!it) {
                if (mc->n_items >= mc->cfg.max_items) {
                        mc->dump_untracked++;
                        return;
                }
                it = mc_item_new(mc, e);
                if (!it) {
                        mc->dump_untracked++;
                        return;
                }
                mc_item_start(mc, it, e);
        } else if (it->cas != e->cas || it->gen < mc->reset_gen) {
                /* Rewritten (or another server's item of that name): a new object. */
                mc_item_start(mc, it, e);
        } else {
                used = (e->fetched && !(it->flags & MC_ITEM_FETCHED)) || e->la > it->la ||
                       (it->flags & MC_ITEM_FETCH_UNCOUNTED) ||
                       (e->fetched && mc_maybe_active(mc, mc_idle_sec(mc, e->la), e->cls));
                if (it->flags & MC_ITEM_CONDEMNED) {
                        /* dry_run: out of the cache since judged; a use brings it back. */
                        if (used) {
                                it->flags &= (uint8_t)~MC_ITEM_CONDEMNED;
                                ca_cache_insert(mc->cache, &it->node);
                        }
                } else if (used && ca_node_linked(&it->node)) {
                        ca_touch(mc->cache, &it->node);
                }
                it->flags &= (uint8_t)~(MC_ITEM_FETCH_UNCOUNTED | MC_ITEM_FETCHED);
                if (e->fetched)
                        it->flags |= MC_ITEM_FETCHED;
                if (e->la > it->la)
                        it->la = e->la;
                it->cls = e->cls;
        }
        it->gen = mc->gen;
}

/* Say once that a limit holds items out of aging, and once that it no longer does. */
static void mc_log_limits(struct mc *mc)
{
        if (mc->dump_untracked && !mc->over_max_logged)
                ca_host_log(mc->host, LOG_WARNING, "memcached at %s holds more than max_items "
                            "(%" PRIu64 ") items: %" PRIu64 " are not aged (logged once)",
                            mc->server, mc->cfg.max_items, mc->dump_untracked);
        else if (!mc->dump_untracked && mc->over_max_logged)
                ca_host_log(mc->host, LOG_INFO, "every item of memcached at %s is tracked "
                            "again (max_items %" PRIu64 ")", mc->server, mc->cfg.max_items);
        mc->over_max_logged = mc->dump_untracked > 0;
        if (mc->dump_unaddressable && !mc->unaddressable_logged)
                ca_host_log(mc->host, LOG_NOTICE, "%" PRIu64 " items of memcached at %s have "
                            "binary keys over 186 bytes, which no text command can name: they "
                            "are not aged (logged once)", mc->dump_unaddressable, mc->server);
        mc->unaddressable_logged = mc->unaddressable_logged || mc->dump_unaddressable > 0;
}

/* The dump is read and swept: the cache holds what the server holds. */
static void mc_dump_done(struct mc *mc)
{
        uint64_t usec = ca_now_usec() - mc->refresh_start_usec;

        mc->dumps++;
        mc->dump_usec = usec;
        mc->dump_lines_seen = mc->dump_lines;
        mc->items_unfetched = mc->dump_unfetched;
        mc->items_untracked = mc->dump_untracked;
        mc->items_unaddressable = mc->dump_unaddressable;
        mc_log_limits(mc);
        if (ad_health_ok(&mc->health))
                ca_host_log(mc->host, LOG_NOTICE, "memcached at %s answers again", mc->server);
        mc->stale = false;
        ca_host_log(mc->host, LOG_DEBUG, "dump: %" PRIu64 " items in %" PRIu64 " ms (%" PRIu64
                    " never fetched), %zu tracked, longest step %" PRIu64 " us (%" PRIu64
                    " us on the CPU)",
                    mc->dump_lines, usec / 1000, mc->dump_unfetched, mc->n_items,
                    mc->conn.steps.longest_usec, mc->conn.steps.longest_cpu_usec);
        mc->phase = MC_IDLE;
        mc_timeouts(mc, false);
        mc->summary_due = true;
        mc->aged = false;
        mc->rot_victims = 0;
        mc->rot_start_usec = ca_now_usec();
        ad_conn_refresh_done(&mc->conn);
}

/* Forget, a step at a time, every item the dump did not list; free the dead ones. */
static void mc_sweep(struct mc *mc)
{
        uint64_t deadline = ca_now_usec() + MC_STEP_USEC;
        unsigned n = 0;

        while (*mc->sweep_at) {
                struct mc_item *it = *mc->sweep_at;

                if (it->gen == mc->gen && !(it->flags & MC_ITEM_DEAD)) {
                        mc->sweep_at = &it->all;
                } else {
                        if (!(it->flags & MC_ITEM_DEAD))
                                mc_forget(mc, it);
                        *mc->sweep_at = it->all;
                        ad_pool_put(&mc->pool, it, sizeof(*it) + it->key_len);
                }
                mc->conn.steps.work++;
                if (++n % MC_STEP_CLOCK_EVERY == 0 && ca_now_usec() >= deadline) {
                        ad_conn_schedule(&mc->conn, 0);
                        return;
                }
        }
        mc_dump_done(mc);
}

static void mc_dump_end(struct mc *mc)
{
        mc_timeouts(mc, false); /* nothing more is owed */
        mc->phase = MC_SWEEP;
        mc->sweep_at = &mc->all;
        ad_conn_schedule(&mc->conn, 0);
}

/* ---- the round: check the victims, delete the ones exactly as seen ---- */

static void mc_round_write_batch(struct mc *mc)
{
        char token[MC_KEY_MAX + 1];
        bool b64;

        mc->batch_end = mc->checked + MC_CHECK_BATCH;
        if (mc->batch_end > mc->n_victims)
                mc->batch_end = mc->n_victims;
        for (size_t i = mc->checked; i < mc->batch_end; i++) {
                struct mc_item *it = mc->victims[i];

                /* Tracked keys always have a token (mc_dump_entry() checked). */
                (void)mc_key_token(it->key, it->key_len, token, &b64);
                mc_write(mc, "me %s%s\r\n", token, b64 ? " b" : "");
        }
        mc_write(mc, "mn\r\n");
        mc->md_fenced = mc->md_since_mn;
        mc->md_since_mn = 0;
        mc_timeouts(mc, true);
}

static void mc_round_start(struct mc *mc)
{
        mc->phase = MC_ROUND;
        mc->checked = mc->batch_end = 0;
        mc->md_since_mn = mc->md_fenced = 0;
        mc->ex_seen = mc->nf_seen = 0;
        ad_pace_start(&mc->pace, mc->cfg.rate);
        mc_round_write_batch(mc);
}

/* A victim that is not to go: back into the cache, as a new object (its next use counts). */
static void mc_spare(struct mc *mc, struct mc_item *it)
{
        it->flags &= (uint8_t)~MC_ITEM_VICTIM;
        it->node = (struct ca_node){ 0 };
        ca_cache_insert(mc->cache, &it->node);
}

/* The connection is gone mid-round: every victim not yet judged stays. */
static void mc_round_abort(struct mc *mc)
{
        for (size_t i = mc->checked; i < mc->n_victims; i++)
                mc_spare(mc, mc->victims[i]);
        mc->n_victims = mc->checked = mc->batch_end = 0;
        mc->md_since_mn = mc->md_fenced = 0;
}

/* The rotation's aging is done and its last round settled: one line for it. */
static void mc_rotation_summary(struct mc *mc)
{
        if (!mc->summary_due || !mc->aged || mc->phase == MC_ROUND || mc->n_victims > 0)
                return;
        mc->summary_due = false;
        ca_host_log(mc->host, LOG_DEBUG,
                    "aged: %" PRIu64 " victims checked and settled in %" PRIu64
                    " ms, longest step %" PRIu64 " us (%" PRIu64 " us on the CPU), %" PRIu64
                    " of %" PRIu64 " steps over slice_time; in all %" PRIu64 " deleted, %" PRIu64
                    " cas conflicts, %" PRIu64 " changed since the dump, %" PRIu64
                    " maybe active, %" PRIu64 " gone, %" PRIu64 " would delete",
                    mc->rot_victims, (ca_now_usec() - mc->rot_start_usec) / 1000,
                    mc->conn.steps.longest_usec, mc->conn.steps.longest_cpu_usec,
                    mc->conn.steps.over_slice - mc->conn.steps.mark_over,
                    mc->conn.steps.steps - mc->conn.steps.mark_steps, mc->deleted,
                    mc->cas_conflicts, mc->changed, mc->maybe_active, mc->gone, mc->would_delete);
}

static void mc_round_done(struct mc *mc)
{
        mc->n_victims = mc->checked = mc->batch_end = 0;
        mc->phase = MC_IDLE;
        mc_timeouts(mc, false);
        mc_rotation_summary(mc);
        if (mc->want_dump)
                mc_refresh_start(mc);
}

/* The verdict on victims[checked], from its "me" reply (@meta NULL: "EN", gone). */
static void mc_judge(struct mc *mc, const struct mc_meta *meta)
{
        struct mc_item *it = mc->victims[mc->checked++];
        uint64_t since_dump_sec = (ca_now_usec() - mc->refresh_start_usec) / 1000000 + 1;
        char token[MC_KEY_MAX + 1];
        bool b64;

        if (!meta) {
                mc->gone++;
                mc_forget(mc, it);
                return;
        }
        if (meta->cas != it->cas || (meta->fetched && !(it->flags & MC_ITEM_FETCHED))) {
                /* Rewritten, or read for the first time, since the dump. */
                mc->changed++;
                return mc_spare(mc, it);
        }
        if (meta->fetched && (meta->idle_sec <= since_dump_sec ||
                              mc_maybe_active(mc, meta->idle_sec, meta->cls))) {
                /* Accessed since the dump, or maybe read without a trace. */
                mc->maybe_active++;
                return mc_spare(mc, it);
        }
        if (mc->cfg.dry_run) {
                mc->would_delete++;
                it->flags = (uint8_t)((it->flags & ~MC_ITEM_VICTIM) | MC_ITEM_CONDEMNED);
                (void)mc_key_token(it->key, it->key_len, token, &b64);
                ca_host_log(mc->host, LOG_DEBUG, "dry run: would delete %s%s (cas %" PRIu64 ")",
                            token, b64 ? " (base64)" : "", it->cas);
                return;
        }
        (void)mc_key_token(it->key, it->key_len, token, &b64);
        mc_write(mc, "md %s%s C%" PRIu64 " q\r\n", token, b64 ? " b" : "", it->cas);
        mc->md_since_mn++;
        /* Whatever the answer, the item as it was is gone or was never ours to keep. */
        mc_forget(mc, it);
}

/* "MN": the checks of the batch are answered, and the deletes written before it are settled. */
static void mc_fence(struct mc *mc)
{
        if (mc->checked != mc->batch_end)
                return mc_fail(mc, "MN before the answers to every me");
        if (mc->ex_seen + mc->nf_seen > mc->md_fenced)
                return mc_fail(mc, "more refusals than deletes (%" PRIu64 " EX/NF for %" PRIu64
                               " md)", mc->ex_seen + mc->nf_seen, mc->md_fenced);
        mc->deleted += mc->md_fenced - mc->ex_seen - mc->nf_seen;
        mc->cas_conflicts += mc->ex_seen;
        mc->gone += mc->nf_seen;
        mc->md_fenced = mc->ex_seen = mc->nf_seen = 0;
        if (mc->checked < mc->n_victims)
                return mc_round_write_batch(mc);
        if (mc->md_since_mn > 0) {
                /* The last deletes: one more fence settles them. */
                mc->batch_end = mc->checked;
                mc_write(mc, "mn\r\n");
                mc->md_fenced = mc->md_since_mn;
                mc->md_since_mn = 0;
                return;
        }
        mc_round_done(mc);
}

/* ---- reading replies ---- */

static void mc_bad_reply(struct mc *mc, const char *what, const char *line, size_t len)
{
        char ex[AD_EXCERPT_BUF];

        mc_fail_kind(mc, what, "%s: \"%s\"", what, ad_excerpt(line, len, ex));
}

static void mc_line_stats(struct mc *mc, const char *line, size_t len)
{
        switch (mc_reply_kind(line, len)) {
        case MC_REPLY_STAT:
                if (mc_stat_line(mc, line, len) < 0)
                        return mc_bad_reply(mc, "bad stats line", line, len);
                return;
        case MC_REPLY_END:
                if (--mc->stats_ends == 0)
                        mc_stats_done(mc);
                return;
        default:
                return mc_bad_reply(mc, "unexpected reply to stats (is this memcached?)", line,
                                    len);
        }
}

static void mc_line_dump(struct mc *mc, const char *line, size_t len)
{
        struct mc_dump_entry e;
        char err[MC_ERR_MAX], ex[AD_EXCERPT_BUF];

        switch (mc_reply_kind(line, len)) {
        case MC_REPLY_END:
        case MC_REPLY_NOTSTARTED: /* nothing to crawl: an empty server */
                return mc_dump_end(mc);
        case MC_REPLY_BUSY:
                /* The crawler serves another client (or memcached's own expiry crawl). */
                if (mc->dump_lines > 0)
                        return mc_bad_reply(mc, "BUSY in the middle of a metadump", line, len);
                if (!mc->busy_since_usec)
                        mc->busy_since_usec = ca_now_usec();
                if (ca_now_usec() - mc->busy_since_usec > mc->cfg.timeout_usec)
                        return mc_bad_reply(mc, "the LRU crawler stayed busy longer than "
                                            "timeout", line, len);
                mc->busy_retry = true;
                mc_timeouts(mc, false);
                ad_conn_schedule(&mc->conn, MC_BUSY_RETRY_USEC);
                return;
        case MC_REPLY_BADCLASS:
                if (mc->dump_lines > 0 || mc->lru_walk)
                        return mc_bad_reply(mc, "metadump refused", line, len);
                ca_host_log(mc->host, LOG_NOTICE, "memcached at %s has no hash table walk "
                            "(before 1.6.9): dumping by LRU, which may miss items that move "
                            "meanwhile (they are aged from the next dump on)", mc->server);
                mc->lru_walk = true;
                mc_dump_request(mc);
                return;
        case MC_REPLY_ERROR:
                return mc_bad_reply(mc, "metadump refused", line, len);
        default:
                break;
        }
        if (mc_parse_dump_line(line, len, &e, err, sizeof(err)) < 0)
                return mc_fail_kind(mc, err, "bad metadump line %" PRIu64 ": %s: \"%s\"",
                                    mc->dump_lines + 1, err, ad_excerpt(line, len, ex));
        mc_dump_entry(mc, &e);
}

static void mc_line_round(struct mc *mc, const char *line, size_t len)
{
        struct mc_meta meta;
        char err[MC_ERR_MAX], ex[AD_EXCERPT_BUF];

        switch (mc_reply_kind(line, len)) {
        case MC_REPLY_ME:
        case MC_REPLY_EN:
                if (mc->checked >= mc->batch_end)
                        return mc_bad_reply(mc, "an answer to no me", line, len);
                if (line[1] == 'N')
                        return mc_judge(mc, NULL);
                if (mc_parse_meta(line, len, &meta, err, sizeof(err)) < 0)
                        return mc_fail_kind(mc, err, "bad me reply: %s: \"%s\"", err,
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
                return mc_bad_reply(mc, "unexpected reply to me/md", line, len);
        }
}

static void mc_line(struct mc *mc, const char *line, size_t len)
{
        switch (mc->phase) {
        case MC_STATS:
                return mc_line_stats(mc, line, len);
        case MC_DUMP:
                return mc_line_dump(mc, line, len);
        case MC_ROUND:
                return mc_line_round(mc, line, len);
        default:
                return mc_bad_reply(mc, "a reply to nothing asked", line, len);
        }
}

/*
 * Between two requests: bytes nobody asked for are garbage; a close (a restart, a proxy's idle
 * timeout) is no error, the next rotation connects again.
 */
static void mc_check_idle(struct mc *mc)
{
        struct evbuffer *in;
        size_t len;

        if (!mc->conn.bev || mc->phase != MC_IDLE)
                return;
        in = bufferevent_get_input(mc->conn.bev);
        len = evbuffer_get_length(in);
        if (len > 0) {
                if (len > AD_EXCERPT_MAX)
                        len = AD_EXCERPT_MAX;
                mc_bad_reply(mc, "bytes when nothing was asked",
                             (const char *)evbuffer_pullup(in, (ssize_t)len), len);
                return;
        }
        if (mc->conn.eof) {
                ca_host_log(mc->host, LOG_DEBUG, "memcached at %s closed the connection",
                            mc->server);
                mc_close(mc);
        }
}

/* Read whole lines for at most MC_STEP_USEC; the rest at the next step. */
static void mc_read(struct mc *mc)
{
        char line[MC_LINE_MAX + 2];
        uint64_t deadline = ca_now_usec() + MC_STEP_USEC;
        unsigned n = 0;
        enum mc_phase phase;
        uint64_t wait;

        while (mc->conn.bev && (phase = mc->phase) >= MC_STATS && phase != MC_SWEEP &&
               !mc->busy_retry) {
                struct evbuffer *in = bufferevent_get_input(mc->conn.bev);
                struct evbuffer_ptr eol;
                size_t eol_len = 0, len;

                eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_LF);
                if (eol.pos < 0) {
                        if (evbuffer_get_length(in) > MC_LINE_MAX)
                                return mc_fail(mc, "a reply line longer than %d bytes",
                                               MC_LINE_MAX);
                        if (mc->conn.eof)
                                return mc_fail(mc, "connection closed by the server");
                        return;
                }
                if ((size_t)eol.pos > MC_LINE_MAX)
                        return mc_fail(mc, "a reply line longer than %d bytes", MC_LINE_MAX);
                if ((phase == MC_DUMP || phase == MC_ROUND) && (wait = ad_pace(&mc->pace, 1)) > 0) {
                        /*
                         * Not even read into the buffer meanwhile: the loop does not wake for
                         * every segment that comes, and the server waits on its socket.
                         */
                        bufferevent_disable(mc->conn.bev, EV_READ);
                        return ad_conn_schedule(&mc->conn, wait);
                }
                len = (size_t)eol.pos;
                evbuffer_remove(in, line, len);
                evbuffer_drain(in, eol_len);
                if (len > 0 && line[len - 1] == '\r')
                        len--;
                line[len] = '\0';
                mc_line(mc, line, len);
                mc->conn.steps.work++;
                if (++n % MC_STEP_CLOCK_EVERY == 0 && ca_now_usec() >= deadline) {
                        ad_conn_schedule(&mc->conn, 0);
                        return;
                }
        }
        mc_check_idle(mc);
}

/* ---- the connection's callbacks (adapter-net.h) ---- */

static void mc_connected(void *userdata)
{
        struct mc *mc = userdata;

        ca_host_log(mc->host, LOG_DEBUG, "connected to memcached at %s", mc->server);
        mc->phase = MC_IDLE;
        mc_timeouts(mc, false);
        if (mc->want_dump)
                mc_refresh_start(mc);
}

static void mc_read_ready(void *userdata)
{
        mc_read(userdata);
}

/* The next step: a sweep, a retry of the busy crawler, or reading (after a paced pause too). */
static void mc_step(void *userdata)
{
        struct mc *mc = userdata;

        if (mc->conn.bev)
                bufferevent_enable(mc->conn.bev, EV_READ);
        if (mc->phase == MC_SWEEP) {
                mc_sweep(mc);
                mc_check_idle(mc);
        } else if (mc->busy_retry && mc->phase == MC_DUMP) {
                mc_dump_request(mc);
        } else {
                mc_read(mc);
        }
}

/* A connection's failure: its message is its kind ("cannot connect: ...", "no reply ..."). */
static void mc_failed(void *userdata, const char *msg)
{
        mc_fail_kind(userdata, msg, "%s", msg);
}

static void mc_refresh_timeout(void *userdata);

static const char *mc_doing(void *userdata)
{
        return mc_phase_name[((struct mc *)userdata)->phase];
}

static const struct ad_conn_ops mc_conn_ops = {
        .connected = mc_connected,
        .read = mc_read_ready,
        .step = mc_step,
        .failed = mc_failed,
        .refresh_timeout = mc_refresh_timeout,
        .doing = mc_doing,
        .work_unit = "lines or items",
};

static int mc_connect(struct mc *mc)
{
        int r = ad_conn_connect(&mc->conn, &mc->cfg.addr, mc->cfg.addr_len, MC_READ_MAX,
                                MC_INPUT_MAX);

        if (r < 0)
                return r;
        mc->phase = MC_CONNECTING;
        return 0;
}

/* ---- the refresh's deadline ---- */

/*
 * How long a refresh may take, from before_rotate to the rotation it owes: refresh_timeout,
 * or by default a minute plus three times what reading max_items (or the longest dump seen,
 * when longer) at `rate` takes: a round of deletes under way, the stats, the dump and its
 * sweep; 100 s with the defaults. timeout
 * only bounds a silence: a server that sends a byte every few seconds, or STAT lines without
 * end, held the cache's rotations for ever, and said nothing.
 */
static uint64_t mc_refresh_deadline_usec(const struct mc *mc)
{
        /* Every line of a dump is read at `rate`, tracked or not: a server may hold more. */
        return ad_refresh_deadline_usec(mc->cfg.refresh_timeout_usec, mc->cfg.max_items,
                                        mc->dump_lines_seen,
                                        mc->cfg.rate ? mc->cfg.rate : MC_RATE_DEFAULT);
}

/* The refresh under way missed its deadline (ad_conn_refresh()): it fails. */
static void mc_refresh_timeout(void *userdata)
{
        struct mc *mc = userdata;
        char d[CA_DURATION_MAX_STR];

        mc->refresh_timeouts++;
        /* A dump cut short that was longer than thought: the next deadline knows. */
        if (mc->phase == MC_DUMP && mc->dump_lines > mc->dump_lines_seen)
                mc->dump_lines_seen = mc->dump_lines;
        mc_fail(mc, "no whole refresh within refresh_timeout (%s; the server was %s)",
                ca_format_duration(mc_refresh_deadline_usec(mc), d, sizeof(d)),
                mc_phase_name[mc->phase]);
}

/* ---- hooks ---- */

static int mc_before_rotate(struct ca_cache *cache, void *userdata)
{
        struct mc *mc = userdata;
        struct ad_step step = ad_conn_begin(&mc->conn);
        int r;

        ad_conn_refresh(&mc->conn, mc_refresh_deadline_usec(mc));
        mc->want_dump = true;
        switch (mc->phase) {
        case MC_DOWN:
                r = mc_connect(mc);
                if (r < 0)
                        mc_fail(mc, "cannot connect: %s", strerror(-r));
                break;
        case MC_IDLE:
                mc_refresh_start(mc);
                break;
        default:
                /* Connecting, or a round under way: the dump starts when it is done. */
                break;
        }
        ad_conn_end(&mc->conn, &step);
        return CA_ROTATE_LATER;
}

static enum ca_status mc_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct mc *mc = userdata;
        struct mc_item *it = (struct mc_item *)node;

        /* Nothing goes on a dump not trusted, nor while one is being read. */
        if (mc->stale || (mc->phase != MC_IDLE && mc->phase != MC_ROUND))
                return CA_BUSY;
        if (it->flags & MC_ITEM_FETCH_UNCOUNTED) {
                /*
                 * Its fetch before the first dump is its second use: counted now, as a touch
                 * (CA_KEEP alone is no use: the item would be asked again at once).
                 */
                it->flags &= (uint8_t)~MC_ITEM_FETCH_UNCOUNTED;
                ca_touch(cache, node);
                return CA_KEEP;
        }
        if (ad_reserve(&mc->victims, &mc->cap_victims, mc->n_victims, sizeof(*mc->victims)) < 0)
                return CA_BUSY;
        mc->victims[mc->n_victims++] = it;
        mc->rot_victims++;
        it->flags |= MC_ITEM_VICTIM;
        return CA_RECLAIMED;
}

static size_t mc_size(const struct ca_cache *cache, const struct ca_node *node, void *userdata)
{
        return ((const struct mc_item *)node)->size;
}

static const struct ca_cache_ops mc_ops = {
        .reclaim = mc_reclaim,
        .size = mc_size,
};

static void mc_after_age(struct ca_cache *cache, void *userdata)
{
        struct mc *mc = userdata;
        struct ad_step step = ad_conn_begin(&mc->conn);

        /* A round under way takes the new victims in its next batches. */
        if (mc->phase == MC_IDLE && mc->n_victims > 0)
                mc_round_start(mc);
        if (ca_cache_pending(cache) == 0) {
                mc->aged = true;
                mc_rotation_summary(mc);
        }
        ad_conn_end(&mc->conn, &step);
}

static void mc_stats(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit, void *eu)
{
        struct mc *mc = userdata;

        AD_GAUGE("items", "items", "items tracked (at most max_items)", mc->n_items);
        AD_GAUGE("unfetched_items", "items", "items of the last dump never fetched (single-use)",
                 mc->items_unfetched);
        AD_GAUGE("untracked_items", "items", "items of the last dump over max_items, not aged",
                 mc->items_untracked);
        AD_GAUGE("unaddressable_items", "items",
                 "items of the last dump with binary keys no command can name, not aged",
                 mc->items_unaddressable);
        AD_GAUGE("round_victims", "items", "victims of the round under way (checked, deleted)",
                 mc->n_victims);
        AD_COUNTER("deleted", "items", "items deleted, exactly as seen idle", mc->deleted);
        AD_COUNTER("would_delete", "items", "dry_run: items that would have been deleted",
                   mc->would_delete);
        AD_COUNTER("cas_conflicts", "items", "deletes refused: rewritten since checked (EX)",
                   mc->cas_conflicts);
        AD_COUNTER("changed", "items", "victims rewritten or first read since the dump, kept",
                   mc->changed);
        AD_COUNTER("maybe_active", "items",
                   "victims kept: accessed since the dump, or maybe read without a trace",
                   mc->maybe_active);
        AD_COUNTER("gone", "items", "victims already gone (expired, evicted, deleted)", mc->gone);
        AD_COUNTER("errors", "errors", "connection failures, timeouts and bad replies",
                   mc->errors);
        AD_COUNTER("dumps", "dumps", "complete metadumps read", mc->dumps);
        AD_COUNTER("refresh_timeouts", "refreshes",
                   "refreshes cut short by refresh_timeout (counted in errors too)",
                   mc->refresh_timeouts);
        AD_GAUGE("dump_usec", "usec", "time of the last refresh: stats, metadump and sweep",
                 mc->dump_usec);
        ad_conn_stats(&mc->conn, emit, eu);
        AD_GAUGE("pool_bytes", "bytes", "memory of the tracked items (kept for reuse)",
                 mc->pool.bytes);
}

static const struct ca_cache_hooks mc_hooks = {
        .before_rotate = mc_before_rotate,
        .after_age = mc_after_age,
        .stats = mc_stats,
};

/* ---- create / destroy ---- */

static void mc_destroy(void *instance)
{
        struct mc *mc = instance;

        if (!mc)
                return;
        if (mc->cache)
                ca_host_unregister_cache(mc->host, mc->cache);
        ad_conn_free(&mc->conn);
        mc->cache = ca_cache_free(mc->cache);
        ad_pool_free(&mc->pool);
        free(mc->buckets);
        free(mc->victims);
        free(mc->server);
        free(mc);
}

static int mc_create(struct ca_host *host, const struct ca_section *s, void **ret_instance)
{
        struct mc_config cfg = { 0 };
        struct mc *mc;
        int r;

        r = ca_section_parse(host, s, mc_keys, &cfg);
        if (r < 0)
                return r;
        if (ca_host_check_only(host)) {
                *ret_instance = NULL;
                return 0;
        }

        mc = calloc(1, sizeof(*mc));
        if (!mc)
                return -ENOMEM;
        mc->host = host;
        mc->cfg = cfg;
        mc->cfg.server = NULL; /* the section's text does not outlive create() */
        mc->stale = true;      /* nothing goes before a first complete dump */
        mc->server = strdup(cfg.server);
        /* A fixed table, half a bucket per item at most: no rehash ever blocks the loop. */
        mc->n_buckets = ad_buckets_for(cfg.max_items, MC_BUCKETS_MIN);
        mc->buckets = calloc(mc->n_buckets, sizeof(*mc->buckets));
        if (!mc->server || !mc->buckets || ad_pool_init(&mc->pool, sizeof(struct mc_item) +
                                                        MC_KEY_MAX) < 0)
                goto out_oom;
        r = ad_conn_init(&mc->conn, host, cfg.timeout_usec, &mc_conn_ops, mc);
        if (r < 0)
                goto out_destroy;
        r = ca_cache_new(&mc_ops, mc, NULL, &mc->cache);
        if (r < 0)
                goto out_destroy;
        mc->conn.cache = mc->cache;
        r = ca_host_register_cache(host, s, mc->cache, &mc_hooks, mc);
        if (r < 0) {
                mc->cache = ca_cache_free(mc->cache);
                goto out_destroy;
        }
        ca_host_log(host, LOG_INFO, "memcached at %s%s", mc->server,
                    cfg.dry_run ? ", dry run: nothing is deleted" : "");
        *ret_instance = mc;
        return 0;

out_oom:
        r = -ENOMEM;
out_destroy:
        mc_destroy(mc);
        return r;
}

__attribute__((visibility("default"))) const struct ca_plugin cacheage_plugin = {
        .abi = CA_PLUGIN_ABI,
        .size = sizeof(struct ca_plugin),
        .name = "memcached",
        .description = "the items of a memcached server: single-use ones deleted, CAS-guarded",
        .create = mc_create,
        .destroy = mc_destroy,
};
