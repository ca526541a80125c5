/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The frame of a network cache's adapter (memcached.c, redis.c): one rotation, whatever the
 * protocol. The adapter brings its protocol and its policy through struct ad_round_ops; the
 * frame runs the rest, the same for every server:
 *
 *   before_rotate  connect when need be (ops->connected greets the server, then
 *                  ad_round_ready()), then the refresh: the adapter's questions (ops->refresh)
 *                  and its walk of what the server holds (ad_round_walk_begin(), each item
 *                  looked up or added in the index, paced at `rate` with ad_round_paced()).
 *                  ad_round_walk_end() starts the sweep, which forgets, a step at a time, what
 *                  the walk did not list; then the host is told the refresh is done.
 *   reclaim        an item that fell due is a victim, unless nothing is trusted (a failure since
 *                  the last whole walk: stale), a walk is under way, or the adapter counts it as
 *                  used (ops->keep: then a touch).
 *   after_age      the check of the victims (phase AD_PHASE_CHECK; the adapter's "round"):
 *                  ops->check sends a batch at a time (ad_round_batch(), paced at `delete_rate`),
 *                  and each victim, judged by the server, is deleted, spared (ad_round_spare():
 *                  back into the cache as a new object), condemned in a dry run, or forgotten;
 *                  ad_round_check_done() ends it.
 *   the end        once the aging slices and the check are done: the rotation's one summary
 *                  line (ops->rotation_end may ask the server something first), then the next
 *                  refresh, if one is waiting.
 *
 * A failure (the connection, a reply that is not the protocol's, a refresh past its deadline)
 * is counted, logged once per kind (ad_health: "bad line 1234" and "bad line 5678" are one, and
 * "answers again" is said once when a walk is whole again), drops the connection, spares every
 * victim not yet judged and leaves the index stale until the next whole walk; the host is told
 * the refresh is over, and the next rotation tries again. The host's loop never waits: every
 * read, walk and sweep runs in steps of at most AD_STEP_USEC at the loop's lowest priority
 * (adapter-net.h), and the items live in a pool (adapter-pool.h).
 *
 * Everything runs on the host's loop thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cacheage/plugin.h"
#include "adapter-net.h"
#include "adapter-pool.h"

struct evbuffer;

#define AD_STEP_USEC 500         /* longest run of one step in the host's loop */
#define AD_STEP_CLOCK_EVERY 4    /* items between two reads of the clock in a sweep */
#define AD_BUCKETS_MIN 1024      /* hash buckets of the index, at least */

/* ---- configuration ---- */

/*
 * The keys every network adapter takes: the first member (`net`) of the adapter's own
 * configuration struct, whose key table names them with the AD_KEY_* lines below (and its own
 * line for delete_rate, where it has one).
 */
struct ad_net_config {
        const char *server;            /* as written */
        uint64_t timeout_usec;
        uint64_t refresh_timeout_usec; /* 0: ad_round_deadline_usec()'s own */
        uint64_t max_items;            /* items tracked at most */
        uint64_t rate;                 /* items a second walked, 0: as fast as the server sends */
        uint64_t delete_rate;          /* victims a second checked, 0: as fast */
        bool dry_run;
        /* From server, by ad_round_check_server(). */
        struct sockaddr_storage addr;
        socklen_t addr_len;
};

/*
 * ad_round_check_server() - "server =" (ad_server_parse()): its address into the net member of
 * @target, the adapter's configuration (NULL when only checking).
 */
int ad_round_check_server(const char *v, void *target, char *msg, size_t msg_len);

#define AD_KEY_SERVER(cfg_type, def_) \
        { .name = "server", .type = CA_KEY_STRING, CA_KEY_FIELD(cfg_type, net.server), \
          .def = def_, .check = ad_round_check_server, \
          .help = "IPv4:PORT, [IPv6]:PORT, localhost:PORT or a unix socket path" }
#define AD_KEY_TIMEOUT(cfg_type) \
        { .name = "timeout", .type = CA_KEY_DURATION, CA_KEY_FIELD(cfg_type, net.timeout_usec), \
          .def = "5s", .min = 10000, .max = 600000000, \
          .help = "longest wait for the server's next bytes" }
#define AD_KEY_REFRESH_TIMEOUT(cfg_type, help_) \
        { .name = "refresh_timeout", .type = CA_KEY_DURATION, \
          CA_KEY_FIELD(cfg_type, net.refresh_timeout_usec), .def = "0", .min = 0, \
          .max = AD_REFRESH_TIMEOUT_MAX_USEC, .help = help_ }
#define AD_ITEMS_MAX 100000000 /* max_items at most */
#define AD_RATE_MAX 100000000  /* items a second, at most */
#define AD_KEY_MAX_ITEMS(cfg_type, name_, nouns_, def_) \
        { .name = name_, .type = CA_KEY_UINT, CA_KEY_FIELD(cfg_type, net.max_items), \
          .def = def_, .min = 1, .max = AD_ITEMS_MAX, \
          .help = nouns_ " tracked at most; the rest is not aged (and said so)" }
#define AD_KEY_RATE(cfg_type, def_, help_) \
        { .name = "rate", .type = CA_KEY_UINT, CA_KEY_FIELD(cfg_type, net.rate), .def = def_, \
          .min = 0, .max = AD_RATE_MAX, .help = help_ }
#define AD_KEY_DRY_RUN(cfg_type) \
        { .name = "dry_run", .type = CA_KEY_BOOL, CA_KEY_FIELD(cfg_type, net.dry_run), \
          .def = "no", .help = "check and count the victims, delete nothing" }

/* ---- the index's items ---- */

#define AD_ITEM_VICTIM 0x80    /* in the victims, out of the cache, being checked */
#define AD_ITEM_CONDEMNED 0x40 /* dry_run: would have been deleted; out of the cache until used */
#define AD_ITEM_DEAD 0x20      /* deleted or gone: out of the index, freed by the next sweep */
#define AD_ITEM_OWN 0x1f       /* the adapter's own flags */

/*
 * The head of an adapter's item, which follows it with its own fields and ends with the key's
 * bytes (at ops->key_offset). The list of all items owns them (a sweep walks it: a refresh costs
 * what the server holds, not max_items); the hash table is an index.
 */
struct ad_item {
        struct ca_node node;     /* first: the framework's node is the item */
        struct ad_item *next;    /* hash chain */
        struct ad_item *all;     /* the list of all items */
        uint32_t gen;            /* the walk that listed it last */
        uint16_t key_len;
        uint8_t flags;           /* AD_ITEM_*, and the adapter's in AD_ITEM_OWN */
};

/* ---- phases ---- */

enum {
        AD_PHASE_DOWN,           /* no connection */
        AD_PHASE_CONNECTING,
        AD_PHASE_IDLE,           /* connected, nothing asked */
        AD_PHASE_SWEEP,          /* the walk done: forgetting what it did not list */
        AD_PHASE_CHECK,          /* checking and deleting victims */
        AD_PHASE_ADAPTER,        /* the adapter's own phases from here on (ops->phase_names) */
};

/* ---- the adapter ---- */

struct ad_round;

/* ops->reply's answer. */
enum {
        AD_REPLY_MORE,           /* no whole reply yet: wait for more bytes */
        AD_REPLY_TAKEN,          /* one reply taken */
        AD_REPLY_STOP,           /* no more in this step (paced, scheduled, failed) */
};

struct ad_round_ops {
        /* The plugin: its instance begins with its struct ad_round, its configuration with its
           struct ad_net_config. */
        const struct ca_key_spec *keys; /* its key table: AD_KEY_* lines and its own */
        size_t instance_size;
        size_t config_offset;    /* of its configuration in its instance */
        /* Optional: checks between keys, and of what they name (--check-config too). */
        int (*validate)(struct ca_host *host, const struct ca_section *s, const void *config);
        /* Optional: its own, before the frame's init (the text of @s does not stay). */
        int (*setup)(struct ad_round *r, const struct ca_section *s);
        /* Optional: free what setup made (the frame is freed already). */
        void (*cleanup)(struct ad_round *r);
        /* Optional: what the line that says the cache is made adds (", db 0"). */
        void (*describe)(struct ad_round *r, char *buf, size_t len);

        /* Words of messages and statistics. */
        const char *name;        /* "memcached": "memcached at SERVER: ..." */
        const char *noun;        /* what the server holds, singular: "item" */
        const char *walk;        /* what a refresh reads whole: "dump" */
        const char *max_key;     /* the key bounding the index: "max_items" */
        const char *untracked_help; /* NULL: "<noun>s of the last <walk> over <max_key>, ..." */
        const char *work_unit;   /* what a step's work counts, for its log line */
        const char *const *phase_names; /* the adapter's phases' names, from AD_PHASE_ADAPTER */
        size_t n_phases;         /* in phase_names */

        size_t key_offset;       /* of an item's key, in the adapter's item struct */
        size_t key_max;          /* bytes of a key, at most */
        size_t read_max, input_max; /* ad_connect()'s */
        unsigned reply_clock_every; /* replies read between two reads of the clock */
        uint64_t rate_default;   /* the deadline's rate when rate = 0 */
        bool deletes_paced_apart; /* delete_rate is the adapter's own key, and the deadline
                                     adds max_items at it; else the checks go at `rate` */

        /* The protocol. */
        /* Connected: greet the server, then ad_round_ready(). NULL: ready at once. */
        void (*connected)(struct ad_round *r);
        /* A refresh begins (the connection idle): set a phase of its own, ask. */
        void (*refresh)(struct ad_round *r);
        /* Take one reply from @in when it is whole: AD_REPLY_*. */
        int (*reply)(struct ad_round *r, struct evbuffer *in);
        /* Whether the server owes an answer (outside AD_PHASE_CONNECTING). */
        bool (*waiting)(const struct ad_round *r);
        /* A step it scheduled (a paced send, a retry): true when it was one; else a read. */
        bool (*step)(struct ad_round *r);
        /* The next batch of victims [checked, ...), or ad_round_check_done(). */
        void (*check)(struct ad_round *r);
        /* The connection is gone: forget what was in flight. */
        void (*dropped)(struct ad_round *r);
        /* Optional: a failure (before the victims are spared and the connection dropped). */
        void (*failed)(struct ad_round *r);
        /* Optional: a walk is whole and swept, in @usec since its refresh began. */
        void (*walked)(struct ad_round *r, uint64_t usec);
        /* Optional: the rotation is over: ask what it needs, then ad_round_summary() and
           ad_round_ready(). NULL: the summary at once. */
        void (*rotation_end)(struct ad_round *r);
        /* The summary line's counts, after "in all " (its deletes, its verdicts). */
        void (*summary)(struct ad_round *r, char *buf, size_t len);

        /* The policy. */
        /* Optional: a victim that counts as used instead (it is touched, and stays). */
        bool (*keep)(struct ad_round *r, struct ad_item *it);
        /* Optional: the sweep passes an item the walk listed. */
        void (*swept)(struct ad_round *r, struct ad_item *it);
        /* Optional: an item's bytes, for the cache's statistics. */
        size_t (*size)(const struct ad_item *it);
        /* Its own statistics (the frame's come around them). */
        void (*stats)(struct ad_round *r, ca_stat_emit_t emit, void *eu);
};

/*
 * One network cache: embedded in the adapter's instance, which ad_round_init() registers with
 * the host. The adapter reads every field, and writes those its protocol moves (phase, the walk's
 * counts, the verdicts' counters).
 */
struct ad_round {
        struct ca_host *host;
        const struct ad_round_ops *ops;
        const struct ad_net_config *cfg; /* the adapter's, whose text fields are not kept */
        char *server;            /* the key's text, for messages */
        struct ca_cache *cache;
        struct ad_conn conn;     /* the connection, its steps, the refresh handshake */

        int phase;               /* AD_PHASE_*, or the adapter's own */
        bool want_refresh;       /* a refresh waits for the connection to be idle */
        bool stale;              /* no whole walk since the start or the last failure */
        uint64_t refresh_start_usec;
        struct ad_pace pace;     /* rate: the walk; delete_rate: the check */
        struct ad_health health;
        bool over_max_logged;

        /* The index: a list that owns the items, and a fixed table sized from max_items. */
        struct ad_pool pool;
        struct ad_item *all;
        struct ad_item **buckets;
        size_t n_buckets;
        size_t n_items;          /* in the index: dead ones waiting for a sweep are not */
        uint32_t gen;            /* the walk under way, or the last */
        uint32_t reset_gen;      /* items listed before this walk belong to an older server */
        struct ad_item **sweep_at; /* the sweep's place in the list, between two steps */
        uint64_t walk_items;     /* the walk's items listed, tracked or not */
        uint64_t walk_over;      /* ... not tracked: over max_items (or no memory) */
        uint64_t walk_most;      /* the most a walk listed (or had when cut short) */

        /* The victims: [0, checked) judged, [checked, batch_end) being checked. */
        struct ad_item **victims;
        size_t n_victims, cap_victims, checked, batch_end;

        /* The rotation's line, said once its aging and check are done. */
        bool summary_due, aged;
        uint64_t rot_victims, rot_start_usec;

        /* Statistics. */
        uint64_t deleted, would_delete, gone, errors, refresh_timeouts;
        uint64_t walks, walk_usec; /* whole walks, and the last refresh's time */
        uint64_t untracked;      /* of the last walk, not aged (the adapter may add its own) */
};

/*
 * ad_round_create() - the plugin's create() for an adapter of @ops: its keys parsed and
 * validated; then, unless the host only checks, its instance (ops->setup), the index, the
 * connection (not connected yet) and the cache, registered with the host under @s. Nothing goes
 * before a first whole walk. Returns 0 and the instance in *ret_instance (NULL when checking
 * only), or a negative errno after reporting what was wrong.
 */
int ad_round_create(const struct ad_round_ops *ops, struct ca_host *host,
                    const struct ca_section *s, void **ret_instance);
/* ad_round_destroy() - the plugin's destroy(): unregister, close, free; accepts NULL. */
void ad_round_destroy(void *instance);

/*
 * AD_ROUND_PLUGIN() - the plugin's table of an adapter that is the frame and @ops: its create()
 * is ad_round_create() of @ops, its destroy() ad_round_destroy().
 */
#define AD_ROUND_PLUGIN(ops_, name_, description_) \
        static int ad_round_plugin_create(struct ca_host *host, const struct ca_section *s, \
                                          void **ret_instance) \
        { \
                return ad_round_create(&(ops_), host, s, ret_instance); \
        } \
        __attribute__((visibility("default"))) const struct ca_plugin cacheage_plugin = { \
                .abi = CA_PLUGIN_ABI, .size = sizeof(struct ca_plugin), .name = name_, \
                .description = description_, .create = ad_round_plugin_create, \
                .destroy = ad_round_destroy, \
        }

/* ---- what the adapter calls ---- */

/*
 * ad_round_fail_kind() - a failure of @kind (ad_health_fail()) whose message is @fmt: counted,
 * logged once per kind, the connection dropped, the victims spared, the refresh over.
 * ad_round_fail() - the same, its format its kind.
 */
void ad_round_fail_kind(struct ad_round *r, const char *kind, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
#define AD_FIRST_(first, ...) first
#define ad_round_fail(r, ...) ad_round_fail_kind(r, AD_FIRST_(__VA_ARGS__, ), __VA_ARGS__)
/*
 * ad_round_drop() - a failure the adapter has said itself, by a rule of its own (a configuration
 * error said once, however often it recurs): counted, and the rest as ad_round_fail() but the
 * line, and without ad_health (a walk whole again says no "answers again" for it).
 */
void ad_round_drop(struct ad_round *r);
/* ad_round_bad_reply() - a failure "@what: "excerpt of @bytes"", of the kind @what. */
void ad_round_bad_reply(struct ad_round *r, const char *what, const char *bytes, size_t len);
/* ad_round_close() - drop the connection (ops->dropped): not connected, nothing owed. */
void ad_round_close(struct ad_round *r);
/* ad_round_ready() - the connection is idle: the refresh that waits, if one does. */
void ad_round_ready(struct ad_round *r);
/* ad_round_timeouts() - the connection's timeout armed while the server owes an answer. */
void ad_round_timeouts(struct ad_round *r);
/* ad_round_phase_name() - what the adapter is doing, for messages. */
const char *ad_round_phase_name(const struct ad_round *r);

/* ad_round_walk_begin() - the walk of what the server holds begins: a new generation. */
void ad_round_walk_begin(struct ad_round *r);
/*
 * ad_round_paced() - whether @n more items must wait for the pace: then the next step is
 * scheduled for when they may go (ops->step), and the socket is not read meanwhile (the server
 * waits on it). Else they are counted, and may go now.
 */
bool ad_round_paced(struct ad_round *r, uint64_t n);
/* ad_round_lookup() - the item of @key in the index, or NULL. */
struct ad_item *ad_round_lookup(struct ad_round *r, const uint8_t *key, size_t len);
/*
 * ad_round_add() - a new item of @key (at most ops->key_max bytes) in the index, not yet in
 * the cache: NULL when max_items are tracked already, or memory is short (counted in
 * walk_over, and said once).
 */
struct ad_item *ad_round_add(struct ad_round *r, const uint8_t *key, size_t len);
/* ad_round_forget() - @it out of the index and the cache; the next sweep frees it. */
void ad_round_forget(struct ad_round *r, struct ad_item *it);
/* ad_round_walk_end() - the walk is whole: the sweep, then the refresh is done. */
void ad_round_walk_end(struct ad_round *r);

/*
 * ad_round_batch() - the next batch of victims, at most @max: batch_end set, its size returned
 * (0 when every victim is judged).
 */
size_t ad_round_batch(struct ad_round *r, size_t max);
/* ad_round_spare() - a victim that is not to go: back into the cache as a new object. */
void ad_round_spare(struct ad_round *r, struct ad_item *it);
/* ad_round_spare_rest() - every victim not yet judged spared; the check has nothing left. */
void ad_round_spare_rest(struct ad_round *r);
/* ad_round_condemn() - dry_run: @it would go; out of the cache until it is used again. */
void ad_round_condemn(struct ad_round *r, struct ad_item *it);
/* ad_round_check_done() - every victim is judged: the rotation may end, a refresh begin. */
void ad_round_check_done(struct ad_round *r);

/* ad_round_summary() - the rotation's line ("aged: N victims checked and settled ..."). */
void ad_round_summary(struct ad_round *r);

/*
 * ad_round_deadline_usec() - how long a refresh may take, from before_rotate to the rotation
 * it owes: refresh_timeout, or by default a minute plus three times what walking max_items (or
 * the most a walk listed, when more) takes at `rate`, and, when the deletes are paced apart,
 * what checking as many victims takes at `delete_rate`: a check under way, the adapter's
 * questions, the walk and its sweep. `timeout` only bounds a silence: a server that sends a
 * byte every few seconds would hold the cache's rotations for ever, and say nothing.
 */
uint64_t ad_round_deadline_usec(const struct ad_round *r);
