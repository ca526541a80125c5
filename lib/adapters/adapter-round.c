/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The frame of a network cache's adapter: a rotation, whatever the protocol (adapter-round.h). */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "cacheage/plugin.h"
#include "cacheage/value.h"
#include "adapter-round.h"
#include "adapter-text.h"

#define AD_SUMMARY_MAX 512 /* bytes of the adapter's part of the summary line */

static const char *const round_phase_name[] = {
        [AD_PHASE_DOWN] = "not connected",
        [AD_PHASE_CONNECTING] = "connecting",
        [AD_PHASE_IDLE] = "idle",
        [AD_PHASE_SWEEP] = "sweeping",
        [AD_PHASE_CHECK] = "checking and deleting",
};

const char *ad_round_phase_name(const struct ad_round *r)
{
        size_t own = (size_t)r->phase - AD_PHASE_ADAPTER;

        if (r->phase < AD_PHASE_ADAPTER)
                return round_phase_name[r->phase];
        return own < r->ops->n_phases ? r->ops->phase_names[own] : "?";
}

int ad_round_check_server(const char *v, void *target, char *msg, size_t msg_len)
{
        /* The adapter's configuration begins with its struct ad_net_config (adapter-round.h). */
        struct ad_net_config *cfg = target;
        struct sockaddr_storage ss;
        socklen_t len;
        int r = ad_server_parse(v, &ss, &len, msg, msg_len);

        if (r == 0 && cfg) {
                cfg->addr = ss;
                cfg->addr_len = len;
        }
        return r;
}

/* ---- the index ---- */

static uint8_t *item_key(const struct ad_round *r, struct ad_item *it)
{
        return (uint8_t *)it + r->ops->key_offset;
}

static size_t item_bytes(const struct ad_round *r, const struct ad_item *it)
{
        return r->ops->key_offset + it->key_len;
}

static struct ad_item **round_bucket(struct ad_round *r, const uint8_t *key, size_t len)
{
        return &r->buckets[ad_hash(key, len) & (r->n_buckets - 1)];
}

struct ad_item *ad_round_lookup(struct ad_round *r, const uint8_t *key, size_t len)
{
        for (struct ad_item *it = *round_bucket(r, key, len); it; it = it->next)
                if (it->key_len == len && memcmp(item_key(r, it), key, len) == 0)
                        return it;
        return NULL;
}

struct ad_item *ad_round_add(struct ad_round *r, const uint8_t *key, size_t len)
{
        struct ad_item *it, **b;

        if (r->n_items >= r->cfg->max_items ||
            !(it = ad_pool_get(&r->pool, r->ops->key_offset + len))) {
                r->walk_over++;
                return NULL;
        }
        memcpy(item_key(r, it), key, len);
        it->key_len = (uint16_t)len;
        b = round_bucket(r, key, len);
        it->next = *b;
        *b = it;
        it->all = r->all;
        r->all = it;
        r->n_items++;
        return it;
}

void ad_round_forget(struct ad_round *r, struct ad_item *it)
{
        struct ad_item **p = round_bucket(r, item_key(r, it), it->key_len);

        while (*p != it)
                p = &(*p)->next;
        *p = it->next;
        ca_cache_remove(r->cache, &it->node);
        r->n_items--;
        it->flags = AD_ITEM_DEAD;
}

/* ---- failures, the connection ---- */

void ad_round_close(struct ad_round *r)
{
        ad_conn_close(&r->conn);
        r->phase = AD_PHASE_DOWN;
        r->ops->dropped(r);
}

void ad_round_timeouts(struct ad_round *r)
{
        ad_conn_timeouts(&r->conn, r->phase == AD_PHASE_CONNECTING || r->ops->waiting(r));
}

void ad_round_fail_kind(struct ad_round *r, const char *kind, const char *fmt, ...)
{
        char msg[AD_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);

        if (ad_health_fail(&r->health, kind))
                ca_host_log(r->host, LOG_WARNING, "%s at %s: %s; nothing is deleted until a %s "
                            "succeeds, retrying at the next rotation", r->ops->name, r->server,
                            msg, r->ops->walk);
        else
                ca_host_log(r->host, LOG_DEBUG, "%s at %s: %s (again)", r->ops->name, r->server,
                            msg);
        ad_round_drop(r);
}

void ad_round_drop(struct ad_round *r)
{
        r->errors++;
        r->stale = true;
        if (r->ops->failed)
                r->ops->failed(r);
        ad_round_spare_rest(r);
        ad_round_close(r);
        r->want_refresh = false;
        ad_conn_refresh_done(&r->conn);
}

void ad_round_bad_reply(struct ad_round *r, const char *what, const char *bytes, size_t len)
{
        char ex[AD_EXCERPT_BUF];

        ad_round_fail_kind(r, what, "%s: \"%s\"", what, ad_excerpt(bytes, len, ex));
}

/*
 * While the server owes nothing: bytes nobody asked for are garbage; a close (a restart, a
 * proxy's or the server's idle timeout) is no error while nothing is under way (the next
 * rotation connects again), nor during the sweep (the walk is whole), but one in the middle of
 * what the adapter has still to ask (a paced walk, a retry) fails the refresh.
 */
static void round_check_idle(struct ad_round *r)
{
        struct evbuffer *in;
        size_t len;

        if (!r->conn.bev || r->phase == AD_PHASE_CONNECTING || r->ops->waiting(r))
                return;
        in = bufferevent_get_input(r->conn.bev);
        len = evbuffer_get_length(in);
        if (len > 0) {
                if (len > AD_EXCERPT_MAX)
                        len = AD_EXCERPT_MAX;
                ad_round_bad_reply(r, "bytes when nothing was asked",
                                   (const char *)evbuffer_pullup(in, (ev_ssize_t)len), len);
                return;
        }
        if (!r->conn.eof || r->phase == AD_PHASE_SWEEP)
                return;
        if (r->phase != AD_PHASE_IDLE)
                return ad_round_fail(r, "connection closed by the server");
        ca_host_log(r->host, LOG_DEBUG, "%s at %s closed the connection", r->ops->name, r->server);
        ad_round_close(r);
}

/* ---- the refresh ---- */

static void round_refresh(struct ad_round *r)
{
        r->want_refresh = false;
        r->refresh_start_usec = ca_now_usec();
        ad_steps_mark(&r->conn.steps);
        r->ops->refresh(r);
}

void ad_round_ready(struct ad_round *r)
{
        r->phase = AD_PHASE_IDLE;
        ad_round_timeouts(r);
        if (r->want_refresh)
                round_refresh(r);
}

void ad_round_walk_begin(struct ad_round *r)
{
        r->gen++;
        r->walk_items = r->walk_over = 0;
        ad_pace_start(&r->pace, r->cfg->rate);
}

bool ad_round_paced(struct ad_round *r, uint64_t n)
{
        uint64_t wait = ad_pace(&r->pace, n);

        if (wait == 0)
                return false;
        /* Not even read into the buffer meanwhile: the loop does not wake for every segment. */
        if (r->conn.bev)
                bufferevent_disable(r->conn.bev, EV_READ);
        ad_conn_schedule(&r->conn, wait);
        return true;
}

void ad_round_walk_end(struct ad_round *r)
{
        r->phase = AD_PHASE_SWEEP;
        r->sweep_at = &r->all;
        ad_round_timeouts(r);
        ad_conn_schedule(&r->conn, 0);
}

/* Say once that max_items holds items out of aging, and once that it no longer does. */
static void round_log_limits(struct ad_round *r)
{
        if (r->walk_over && !r->over_max_logged)
                ca_host_log(r->host, LOG_WARNING, "%s at %s holds more than %s (%" PRIu64 ") %ss: "
                            "%" PRIu64 " are not aged (logged once)", r->ops->name, r->server,
                            r->ops->max_key, r->cfg->max_items, r->ops->noun, r->walk_over);
        else if (!r->walk_over && r->over_max_logged)
                ca_host_log(r->host, LOG_INFO, "every %s of %s at %s is tracked again (%s %" PRIu64
                            ")", r->ops->noun, r->ops->name, r->server, r->ops->max_key,
                            r->cfg->max_items);
        r->over_max_logged = r->walk_over > 0;
}

/* The walk is read and swept: the cache holds what the server holds. */
static void round_walked(struct ad_round *r)
{
        uint64_t usec = ca_now_usec() - r->refresh_start_usec;

        r->walks++;
        r->walk_usec = usec;
        if (r->walk_items > r->walk_most)
                r->walk_most = r->walk_items;
        r->untracked = r->walk_over;
        round_log_limits(r);
        if (r->ops->walked)
                r->ops->walked(r, usec);
        if (ad_health_ok(&r->health))
                ca_host_log(r->host, LOG_NOTICE, "%s at %s answers again", r->ops->name,
                            r->server);
        r->stale = false;
        r->phase = AD_PHASE_IDLE;
        ad_round_timeouts(r);
        r->summary_due = true;
        r->aged = false;
        r->rot_victims = 0;
        r->rot_start_usec = ca_now_usec();
        ad_conn_refresh_done(&r->conn);
}

/* Forget, a step at a time, every item the walk did not list; free the dead ones. */
static void round_sweep(struct ad_round *r)
{
        uint64_t deadline = ca_now_usec() + AD_STEP_USEC;
        unsigned n = 0;

        while (*r->sweep_at) {
                struct ad_item *it = *r->sweep_at;

                if (it->gen == r->gen && !(it->flags & AD_ITEM_DEAD)) {
                        if (r->ops->swept)
                                r->ops->swept(r, it);
                        r->sweep_at = &it->all;
                } else {
                        if (!(it->flags & AD_ITEM_DEAD))
                                ad_round_forget(r, it);
                        *r->sweep_at = it->all;
                        ad_pool_put(&r->pool, it, item_bytes(r, it));
                }
                r->conn.steps.work++;
                if (++n % AD_STEP_CLOCK_EVERY == 0 && ca_now_usec() >= deadline) {
                        ad_conn_schedule(&r->conn, 0);
                        return;
                }
        }
        round_walked(r);
}

uint64_t ad_round_deadline_usec(const struct ad_round *r)
{
        const struct ad_net_config *c = r->cfg;
        uint64_t items = r->walk_most > c->max_items ? r->walk_most : c->max_items;
        uint64_t d;

        if (c->refresh_timeout_usec)
                return c->refresh_timeout_usec;
        /* Every item of a walk is read at `rate`, tracked or not: a server may hold more. */
        d = ad_refresh_deadline_usec(0, c->max_items, r->walk_most,
                                     c->rate ? c->rate : r->ops->rate_default);
        if (r->ops->deletes_paced_apart && c->delete_rate)
                d += items * 1000000 / c->delete_rate;
        return d;
}

/* ---- the check of the victims, the rotation's end ---- */

size_t ad_round_batch(struct ad_round *r, size_t max)
{
        r->batch_end = r->checked + max;
        if (r->batch_end > r->n_victims)
                r->batch_end = r->n_victims;
        return r->batch_end - r->checked;
}

void ad_round_spare(struct ad_round *r, struct ad_item *it)
{
        it->flags &= (uint8_t)~AD_ITEM_VICTIM;
        it->node = (struct ca_node){ 0 };
        ca_cache_insert(r->cache, &it->node);
}

void ad_round_spare_rest(struct ad_round *r)
{
        for (size_t i = r->checked; i < r->n_victims; i++)
                ad_round_spare(r, r->victims[i]);
        r->n_victims = r->checked = r->batch_end = 0;
}

void ad_round_condemn(struct ad_round *r, struct ad_item *it)
{
        r->would_delete++;
        it->flags = (uint8_t)((it->flags & ~AD_ITEM_VICTIM) | AD_ITEM_CONDEMNED);
}

static void round_check_start(struct ad_round *r)
{
        r->phase = AD_PHASE_CHECK;
        r->checked = r->batch_end = 0;
        ad_pace_start(&r->pace, r->cfg->delete_rate);
        r->ops->check(r);
}

void ad_round_summary(struct ad_round *r)
{
        const struct ad_steps *s = &r->conn.steps;
        char tail[AD_SUMMARY_MAX];

        r->summary_due = false;
        r->ops->summary(r, tail, sizeof(tail));
        ca_host_log(r->host, LOG_DEBUG,
                    "aged: %" PRIu64 " victims checked and settled in %" PRIu64
                    " ms, longest step %" PRIu64 " us (%" PRIu64 " us on the CPU), %" PRIu64
                    " of %" PRIu64 " steps over slice_time; in all %s",
                    r->rot_victims, (ca_now_usec() - r->rot_start_usec) / 1000, s->longest_usec,
                    s->longest_cpu_usec, s->over_slice - s->mark_over, s->steps - s->mark_steps,
                    tail);
}

/* The rotation's aging is done and its last check settled: its line. */
static void round_rotation_end(struct ad_round *r)
{
        if (!r->summary_due || !r->aged || r->phase == AD_PHASE_CHECK || r->n_victims > 0)
                return;
        if (r->ops->rotation_end)
                r->ops->rotation_end(r);
        else
                ad_round_summary(r);
}

void ad_round_check_done(struct ad_round *r)
{
        r->n_victims = r->checked = r->batch_end = 0;
        r->phase = AD_PHASE_IDLE;
        ad_round_timeouts(r);
        round_rotation_end(r);
        if (r->phase == AD_PHASE_IDLE && r->want_refresh)
                round_refresh(r);
}

/* ---- the connection's callbacks (adapter-net.h) ---- */

static void conn_connected(void *userdata)
{
        struct ad_round *r = userdata;

        if (r->ops->connected)
                return r->ops->connected(r);
        ca_host_log(r->host, LOG_DEBUG, "connected to %s at %s", r->ops->name, r->server);
        ad_round_ready(r);
}

/* Read whole replies for at most AD_STEP_USEC; the rest at the next step. */
static void round_read(struct ad_round *r)
{
        uint64_t deadline = ca_now_usec() + AD_STEP_USEC;
        unsigned n = 0;

        while (r->conn.bev && r->phase != AD_PHASE_CONNECTING && r->ops->waiting(r)) {
                switch (r->ops->reply(r, bufferevent_get_input(r->conn.bev))) {
                case AD_REPLY_MORE:
                        if (r->conn.eof)
                                ad_round_fail(r, "connection closed by the server");
                        return;
                case AD_REPLY_STOP:
                        return;
                default:
                        break;
                }
                r->conn.steps.work++;
                if (++n % r->ops->reply_clock_every == 0 && ca_now_usec() >= deadline) {
                        ad_conn_schedule(&r->conn, 0);
                        return;
                }
        }
        round_check_idle(r);
}

static void conn_read(void *userdata)
{
        round_read(userdata);
}

/* The next step: a sweep, or the adapter's own (a paced send, a retry), or reading. */
static void conn_step(void *userdata)
{
        struct ad_round *r = userdata;

        if (r->conn.bev)
                bufferevent_enable(r->conn.bev, EV_READ);
        if (r->phase == AD_PHASE_SWEEP) {
                round_sweep(r);
                round_check_idle(r);
                return;
        }
        if (!r->ops->step(r))
                round_read(r);
}

/* A connection's failure: its message is its kind ("cannot connect: ...", "no reply ..."). */
static void conn_failed(void *userdata, const char *msg)
{
        ad_round_fail_kind(userdata, msg, "%s", msg);
}

/* The refresh under way missed its deadline (ad_conn_refresh()): it fails. */
static void conn_refresh_timeout(void *userdata)
{
        struct ad_round *r = userdata;
        char d[CA_DURATION_MAX_STR];

        r->refresh_timeouts++;
        /* A walk cut short that was longer than thought: the next deadline knows. */
        if (r->walk_items > r->walk_most)
                r->walk_most = r->walk_items;
        ad_round_fail(r, "no whole refresh within refresh_timeout (%s; the server was %s)",
                      ca_format_duration(ad_round_deadline_usec(r), d, sizeof(d)),
                      ad_round_phase_name(r));
}

static const char *conn_doing(void *userdata)
{
        return ad_round_phase_name(userdata);
}

static const struct ad_conn_ops round_conn_ops = {
        .connected = conn_connected,
        .read = conn_read,
        .step = conn_step,
        .failed = conn_failed,
        .refresh_timeout = conn_refresh_timeout,
        .doing = conn_doing,
};

/* ---- the host's hooks ---- */

static int round_before_rotate(struct ca_cache *cache, void *userdata)
{
        struct ad_round *r = userdata;
        struct ad_step step = ad_conn_begin(&r->conn);
        int e;

        ad_conn_refresh(&r->conn, ad_round_deadline_usec(r));
        r->want_refresh = true;
        switch (r->phase) {
        case AD_PHASE_DOWN:
                e = ad_conn_connect(&r->conn, &r->cfg->addr, r->cfg->addr_len, r->ops->read_max,
                                    r->ops->input_max);
                if (e < 0)
                        ad_round_fail(r, "cannot connect: %s", strerror(-e));
                else
                        r->phase = AD_PHASE_CONNECTING;
                break;
        case AD_PHASE_IDLE:
                round_refresh(r);
                break;
        default:
                /* Connecting, or a check under way: the refresh begins when it is done. */
                break;
        }
        ad_conn_end(&r->conn, &step);
        return CA_ROTATE_LATER;
}

static enum ca_status round_reclaim(struct ca_cache *cache, struct ca_node *node, void *userdata)
{
        struct ad_round *r = userdata;
        struct ad_item *it = (struct ad_item *)node;

        /* Nothing goes on a walk not trusted, nor while one is being read. */
        if (r->stale || (r->phase != AD_PHASE_IDLE && r->phase != AD_PHASE_CHECK))
                return CA_BUSY;
        /* Counted as used: a touch (CA_KEEP alone is no use: it would be asked again at once). */
        if (r->ops->keep && r->ops->keep(r, it)) {
                ca_touch(cache, node);
                return CA_KEEP;
        }
        if (ad_reserve(&r->victims, &r->cap_victims, r->n_victims, sizeof(*r->victims)) < 0)
                return CA_BUSY;
        r->victims[r->n_victims++] = it;
        r->rot_victims++;
        it->flags |= AD_ITEM_VICTIM;
        return CA_RECLAIMED;
}

static size_t round_size(const struct ca_cache *cache, const struct ca_node *node,
                         void *userdata)
{
        const struct ad_round *r = userdata;

        return r->ops->size ? r->ops->size((const struct ad_item *)node) : 0;
}

static const struct ca_cache_ops round_cache_ops = {
        .reclaim = round_reclaim,
        .size = round_size,
};

static void round_after_age(struct ca_cache *cache, void *userdata)
{
        struct ad_round *r = userdata;
        struct ad_step step = ad_conn_begin(&r->conn);

        /* A check under way takes the new victims in its next batches. */
        if (r->phase == AD_PHASE_IDLE && r->n_victims > 0)
                round_check_start(r);
        if (ca_cache_pending(cache) == 0 && !r->aged) {
                r->aged = true;
                round_rotation_end(r);
        }
        ad_conn_end(&r->conn, &step);
}

static void round_stats(struct ca_cache *cache, void *userdata, ca_stat_emit_t emit, void *eu)
{
        struct ad_round *r = userdata;
        const struct ad_round_ops *o = r->ops;
        char objects[32], untracked[48], walks[32], walk_usec[32];
        char h_objects[96], h_untracked[128], h_deleted[96], h_would[96], h_walks[96],
             h_walk_usec[96], h_pool[96];

        snprintf(objects, sizeof(objects), "%ss", o->noun);
        snprintf(untracked, sizeof(untracked), "untracked_%ss", o->noun);
        snprintf(walks, sizeof(walks), "%ss", o->walk);
        snprintf(walk_usec, sizeof(walk_usec), "%s_usec", o->walk);
        snprintf(h_objects, sizeof(h_objects), "%ss tracked (at most %s)", o->noun, o->max_key);
        snprintf(h_untracked, sizeof(h_untracked), "%ss of the last %s over %s, not aged",
                 o->noun, o->walk, o->max_key);
        snprintf(h_deleted, sizeof(h_deleted), "%ss deleted, as idle as when seen", o->noun);
        snprintf(h_would, sizeof(h_would), "dry_run: %ss that would have been deleted", o->noun);
        snprintf(h_walks, sizeof(h_walks), "whole %ss of what the server holds", o->walk);
        snprintf(h_walk_usec, sizeof(h_walk_usec),
                 "time of the last refresh, its %s and sweep included", o->walk);
        snprintf(h_pool, sizeof(h_pool), "memory of the tracked %ss (kept for reuse)", o->noun);

        AD_GAUGE(objects, objects, h_objects, r->n_items);
        AD_GAUGE(untracked, objects, o->untracked_help ? o->untracked_help : h_untracked,
                 r->untracked);
        AD_GAUGE("round_victims", objects, "victims of the round under way (checked, deleted)",
                 r->n_victims);
        AD_COUNTER("deleted", objects, h_deleted, r->deleted);
        AD_COUNTER("would_delete", objects, h_would, r->would_delete);
        AD_COUNTER("gone", objects, "victims already gone (expired, evicted, deleted)", r->gone);
        o->stats(r, emit, eu);
        AD_COUNTER("errors", "errors", "connection failures, timeouts, bad and error replies",
                   r->errors);
        AD_COUNTER(walks, walks, h_walks, r->walks);
        AD_COUNTER("refresh_timeouts", "refreshes",
                   "refreshes cut short by refresh_timeout (counted in errors too)",
                   r->refresh_timeouts);
        AD_GAUGE(walk_usec, "usec", h_walk_usec, r->walk_usec);
        ad_conn_stats(&r->conn, emit, eu);
        AD_GAUGE("pool_bytes", "bytes", h_pool, r->pool.bytes);
}

static const struct ca_cache_hooks round_hooks = {
        .before_rotate = round_before_rotate,
        .after_age = round_after_age,
        .stats = round_stats,
};

/* ---- create / destroy ---- */

static void round_free(struct ad_round *r)
{
        if (r->cache)
                ca_host_unregister_cache(r->host, r->cache);
        ad_round_close(r);
        ad_conn_free(&r->conn);
        r->cache = ca_cache_free(r->cache);
        ad_pool_free(&r->pool);
        free(r->buckets);
        free(r->victims);
        free(r->server);
}

void ad_round_destroy(void *instance)
{
        struct ad_round *r = instance;

        if (!r)
                return;
        round_free(r);
        if (r->ops->cleanup)
                r->ops->cleanup(r);
        free(r);
}

static int round_init(struct ad_round *r, const struct ca_section *s)
{
        const struct ad_net_config *cfg = r->cfg;
        int e;

        r->stale = true; /* nothing goes before a first whole walk */
        r->server = strdup(cfg->server);
        /* A fixed table, half a bucket per item at most: no rehash ever blocks the loop. */
        r->n_buckets = ad_buckets_for(cfg->max_items, AD_BUCKETS_MIN);
        r->buckets = calloc(r->n_buckets, sizeof(*r->buckets));
        if (!r->server || !r->buckets)
                return -ENOMEM;
        e = ad_pool_init(&r->pool, r->ops->key_offset + r->ops->key_max);
        if (e < 0)
                return e;
        e = ad_conn_init(&r->conn, r->host, cfg->timeout_usec, &round_conn_ops,
                         r->ops->work_unit, r);
        if (e < 0)
                return e;
        e = ca_cache_new(&round_cache_ops, r, NULL, &r->cache);
        if (e < 0)
                return e;
        r->conn.cache = r->cache;
        e = ca_host_register_cache(r->host, s, r->cache, &round_hooks, r);
        if (e < 0)
                r->cache = ca_cache_free(r->cache);
        return e;
}

int ad_round_create(const struct ad_round_ops *ops, struct ca_host *host,
                    const struct ca_section *s, void **ret_instance)
{
        struct ad_round *r = calloc(1, ops->instance_size);
        struct ad_net_config *cfg;
        char more[AD_MSG_MAX] = "";
        int e;

        if (!r)
                return -ENOMEM;
        *r = (struct ad_round){ .host = host, .ops = ops };
        r->cfg = cfg = (struct ad_net_config *)((char *)r + ops->config_offset);
        e = ca_section_parse(host, s, ops->keys, cfg);
        if (e == 0 && ops->validate)
                e = ops->validate(host, s, cfg);
        if (e < 0 || ca_host_check_only(host)) {
                free(r);
                if (e == 0)
                        *ret_instance = NULL;
                return e;
        }
        if (!ops->deletes_paced_apart)
                cfg->delete_rate = cfg->rate;
        e = ops->setup ? ops->setup(r, s) : 0;
        if (e == 0)
                e = round_init(r, s);
        cfg->server = NULL; /* the section's text does not outlive create() */
        if (e < 0) {
                ad_round_destroy(r);
                return e;
        }
        if (ops->describe)
                ops->describe(r, more, sizeof(more));
        ca_host_log(host, LOG_INFO, "%s at %s%s%s", ops->name, r->server, more,
                    cfg->dry_run ? ", dry run: nothing is deleted" : "");
        *ret_instance = r;
        return 0;
}
