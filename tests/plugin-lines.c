/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * "lines": the smallest adapter on the network adapters' frame (lib/adapters/adapter-round.h),
 * for tests/test-adapter-round.c to test the frame alone, against the harness's fake server.
 * Its protocol, one request a line ("\r\n"):
 *
 *   list        answered by "item KEY" or "item KEY used" lines and "end": the walk
 *   del KEY     answered by "deleted", "gone" or "kept": a victim's check and delete, in
 *               batches of LINES_BATCH, paced at delete_rate
 *   peek KEY    the same, in a dry run (answered "deleted": it would go)
 *
 * Its policy: an item listed "used" is a use; nothing else is kept. Everything else is the
 * frame's: the connection, the index and its sweep, the victims, failures, pace, deadline.
 */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "adapter-round.h"

#define LINES_KEY_MAX 64
#define LINES_LINE_MAX 256
#define LINES_BATCH 4

struct lines_config {
        struct ad_net_config net;
};

static const struct ca_key_spec lines_keys[] = {
        AD_KEY_SERVER(struct lines_config, "127.0.0.1:1"),
        AD_KEY_TIMEOUT(struct lines_config),
        AD_KEY_REFRESH_TIMEOUT(struct lines_config, "longest refresh"),
        AD_KEY_MAX_ITEMS(struct lines_config, "max_items", "items", "1000"),
        AD_KEY_RATE(struct lines_config, "0", "items listed a second (0: no limit)"),
        { .name = "delete_rate", .type = CA_KEY_UINT,
          CA_KEY_FIELD(struct lines_config, net.delete_rate), .def = "0", .min = 0,
          .max = AD_RATE_MAX, .help = "victims a second checked (0: no limit)" },
        AD_KEY_DRY_RUN(struct lines_config),
        CA_KEY_END
};

struct lines_item {
        struct ad_item ad;
        uint8_t key[];
};

enum { LINES_LIST = AD_PHASE_ADAPTER };
static const char *const lines_phase_name[] = { "listing" };

struct lines {
        struct ad_round ad;
        struct lines_config cfg;
        bool paced;              /* a batch of checks waits for its pace */
        uint64_t kept;
};

static void lines_write(struct ad_round *r, const char *what, const struct lines_item *it)
{
        evbuffer_add_printf(bufferevent_get_output(r->conn.bev), "%s%s%.*s\r\n", what,
                            it ? " " : "", it ? (int)it->ad.key_len : 0,
                            it ? (const char *)it->key : "");
}

static void lines_refresh(struct ad_round *r)
{
        r->phase = LINES_LIST;
        ad_round_walk_begin(r);
        lines_write(r, "list", NULL);
        ad_round_timeouts(r);
}

static void lines_check(struct ad_round *r)
{
        struct lines *l = (struct lines *)r;
        size_t n;

        if (r->checked == r->n_victims)
                return ad_round_check_done(r);
        n = ad_round_batch(r, LINES_BATCH);
        l->paced = ad_round_paced(r, n);
        if (l->paced) {
                r->batch_end = r->checked;
                return ad_round_timeouts(r);
        }
        for (size_t i = r->checked; i < r->batch_end; i++)
                lines_write(r, r->cfg->dry_run ? "peek" : "del",
                            (const struct lines_item *)r->victims[i]);
        ad_round_timeouts(r);
}

static void lines_item_line(struct ad_round *r, const char *line, size_t len)
{
        const char *key = line + 5, *end = memchr(key, ' ', len - 5);
        size_t key_len = end ? (size_t)(end - key) : len - 5;
        bool used = end && strcmp(end, " used") == 0;
        struct ad_item *it;

        r->walk_items++;
        if (key_len == 0 || key_len > LINES_KEY_MAX)
                return ad_round_bad_reply(r, "a bad item line", line, len);
        it = ad_round_lookup(r, (const uint8_t *)key, key_len);
        if (!it) {
                it = ad_round_add(r, (const uint8_t *)key, key_len);
                if (!it)
                        return;
                ca_cache_insert(r->cache, &it->node);
        } else if ((it->flags & AD_ITEM_CONDEMNED) && used) {
                it->flags &= (uint8_t)~AD_ITEM_CONDEMNED;
                it->node = (struct ca_node){ 0 };
                ca_cache_insert(r->cache, &it->node);
        } else if (used && ca_node_linked(&it->node)) {
                ca_touch(r->cache, &it->node);
        }
        it->gen = r->gen;
}

static void lines_verdict(struct ad_round *r, const char *line, size_t len)
{
        struct lines *l = (struct lines *)r;
        struct ad_item *it;

        if (r->checked >= r->batch_end)
                return ad_round_bad_reply(r, "an answer to nothing asked", line, len);
        it = r->victims[r->checked++];
        if (strcmp(line, "deleted") == 0 && r->cfg->dry_run) {
                ad_round_condemn(r, it);
        } else if (strcmp(line, "deleted") == 0) {
                r->deleted++;
                ad_round_forget(r, it);
        } else if (strcmp(line, "gone") == 0) {
                r->gone++;
                ad_round_forget(r, it);
        } else if (strcmp(line, "kept") == 0) {
                l->kept++;
                ad_round_spare(r, it);
        } else {
                return ad_round_bad_reply(r, "a bad verdict", line, len);
        }
        if (r->checked == r->batch_end)
                lines_check(r);
}

static int lines_reply(struct ad_round *r, struct evbuffer *in)
{
        char line[LINES_LINE_MAX + 2];
        struct evbuffer_ptr eol;
        size_t eol_len = 0, len;

        eol = evbuffer_search_eol(in, NULL, &eol_len, EVBUFFER_EOL_CRLF_STRICT);
        if (eol.pos < 0 && evbuffer_get_length(in) <= LINES_LINE_MAX)
                return AD_REPLY_MORE;
        if (eol.pos < 0 || (size_t)eol.pos > LINES_LINE_MAX) {
                ad_round_fail(r, "a line longer than %d bytes", LINES_LINE_MAX);
                return AD_REPLY_STOP;
        }
        if (r->phase == LINES_LIST && ad_round_paced(r, 1))
                return AD_REPLY_STOP;
        len = (size_t)eol.pos;
        evbuffer_remove(in, line, len);
        evbuffer_drain(in, eol_len);
        line[len] = '\0';
        if (r->phase == AD_PHASE_CHECK)
                lines_verdict(r, line, len);
        else if (strcmp(line, "end") == 0)
                ad_round_walk_end(r);
        else if (len > 5 && strncmp(line, "item ", 5) == 0)
                lines_item_line(r, line, len);
        else
                ad_round_bad_reply(r, "not a listing", line, len);
        return AD_REPLY_TAKEN;
}

static bool lines_waiting(const struct ad_round *r)
{
        return r->phase == LINES_LIST ||
               (r->phase == AD_PHASE_CHECK && r->checked < r->batch_end);
}

static bool lines_step(struct ad_round *r)
{
        struct lines *l = (struct lines *)r;

        if (!l->paced || r->phase != AD_PHASE_CHECK)
                return false;
        lines_check(r);
        return true;
}

static void lines_dropped(struct ad_round *r)
{
        ((struct lines *)r)->paced = false;
}

static void lines_summary(struct ad_round *r, char *buf, size_t len)
{
        snprintf(buf, len, "%" PRIu64 " deleted, %" PRIu64 " kept, %" PRIu64 " gone, %" PRIu64
                 " would delete", r->deleted, ((struct lines *)r)->kept, r->gone,
                 r->would_delete);
}

static void lines_stats(struct ad_round *r, ca_stat_emit_t emit, void *eu)
{
        AD_COUNTER("kept", "items", "victims the server kept", ((struct lines *)r)->kept);
}

static const struct ad_round_ops lines_ops = {
        .keys = lines_keys, .instance_size = sizeof(struct lines),
        .config_offset = offsetof(struct lines, cfg),
        .name = "lines", .noun = "item", .walk = "listing", .max_key = "max_items",
        .work_unit = "lines", .phase_names = lines_phase_name, .n_phases = 1,
        .key_offset = offsetof(struct lines_item, key), .key_max = LINES_KEY_MAX,
        .read_max = 4096, .input_max = 65536, .reply_clock_every = 4, .rate_default = 1000,
        .deletes_paced_apart = true,
        .refresh = lines_refresh, .reply = lines_reply, .waiting = lines_waiting,
        .step = lines_step, .check = lines_check, .dropped = lines_dropped,
        .summary = lines_summary, .stats = lines_stats,
};

AD_ROUND_PLUGIN(lines_ops, "lines", "a line protocol on the network adapters' frame (tests)");
