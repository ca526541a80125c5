/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The redis adapter: ages the keys of a real Redis server (5.0 or later; tested with 7.0.15,
 * Debian 12's). Each key is a node of the cache; what Redis itself records of a key's use is
 * what the adapter reads:
 *
 *   refresh   before each rotation, on one connection and without blocking the host's loop:
 *             INFO (the instance, its maxmemory-policy, its forks, its memory), under an LFU
 *             policy CONFIG GET lfu-decay-time, then SCAN (never KEYS) with the keys of each
 *             SCAN reply handed to a script of ours (EVALSHA, "probe"): for each key, OBJECT
 *             IDLETIME (or OBJECT FREQ under LFU) and PTTL, which look the key up with
 *             LOOKUP_NOTOUCH (src/object.c, objectCommandLookup(); src/expire.c): reading
 *             them is no use of the key. The probe also reads the server's LRU clock (INFO
 *             server, lru_clock), so that each key's last access is known exactly: an object's
 *             24-bit `lru` field is lru_clock - idle (src/evict.c, estimateObjectIdleTime()),
 *             and it changes only when the key is looked up by a client or written. Then INFO
 *             again (the forks), and a sweep that forgets the keys the scan did not return.
 *   use       under an LRU-kind policy (every policy but the two LFU ones; noeviction too): a
 *             key is used in a period when its `lru` moved since the last scan, or when the
 *             last scan saw it at idle time 0 (a use in that very second would not move it).
 *             Every lookup moves it: a read, and a write (a SET makes a new object, a write to a
 *             hash or a list looks the key up): Redis cannot tell them apart, so a rewritten key
 *             is a used one. A key seen for the first time is inserted (its first use); one
 *             written and never looked up again is single-use. Under an LFU policy a key is used
 *             while OBJECT FREQ is above 0 (see "LFU" below).
 *   reclaim   a node that fell due is a victim: collected by the reclaim op, checked and
 *             deleted from after_age, asynchronously, RD_REAP_BATCH at a time, by a second
 *             script ("reap") that does, atomically on the server: no fork since the scan
 *             (INFO stats, total_forks); for each key, its lru still the one the scan saw and
 *             its idle time above 0 (LFU: its frequency still 0), no TTL set since (unless
 *             ttl_keys = age), then MEMORY USAGE (the bytes freed) and UNLINK. A key read or
 *             rewritten between the scan and the delete stays; a script runs whole, so nothing
 *             can come between the check and the UNLINK.
 *   forks     while Redis has a child (BGSAVE, an AOF rewrite, a module's fork), it records no
 *             access at all (src/db.c, lookupKey(): "Don't do it if we have a saving child"):
 *             a read then leaves no trace. A rotation whose period saw a fork (total_forks moved,
 *             or a child was running) is blind: every key counts as used, nothing goes.
 *   LFU       OBJECT IDLETIME is refused under an LFU policy; OBJECT FREQ is a logarithmic
 *             counter that decays by one every lfu-decay-time minutes since the key's last
 *             access, counted in whole minutes of the server's clock (src/evict.c,
 *             LFUDecrAndReturn()). A read lifts a counter of 5 or less by one, always; a new key
 *             starts at 5. So a frequency of 0 proves no access in the last lfu-decay-time - 1
 *             minutes, and nothing else: a period is seen whole only when the time from the
 *             last scan's start to this one's end is shorter than that, and the deletes must
 *             finish within it too; otherwise the rotation is blind (logged once). A key written
 *             and never read keeps a frequency above 0 for 5 x lfu-decay-time minutes: under LFU
 *             it cannot be told from a read one, and goes once its counter has decayed.
 *
 * Never deleted: a key the adapter did not see idle in a complete scan of the same server
 * instance (a restart, told by INFO run_id, or a change between LRU and LFU forgets
 * everything); a key with a TTL (left to Redis) unless ttl_keys = age; anything while the last
 * refresh failed, on a replica, or in cluster mode.
 *
 * A script the server forgot (a restart, SCRIPT FLUSH: NOSCRIPT) is sent again whole (EVAL),
 * which loads it.
 *
 * The rotation around this protocol is the frame's (adapter-round.h): the connection, the
 * refresh's deadline, the index and its sweep, the victims, failures said once per kind, steps
 * of at most AD_STEP_USEC in the host's loop. Here: replies are buffered up to RD_INPUT_MAX;
 * one SCAN and its probes, or one batch of deletes, is in flight at a time; scans are paced to
 * `rate` keys a second, deletes to `delete_rate` victims a second.
 */

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "cacheage/plugin.h"
#include "adapter-round.h"
#include "redis-proto.h"
#include "trust.h"

#define RD_RATE_DEFAULT 25000             /* keys per second scanned */
#define RD_DELETE_RATE_DEFAULT 250        /* victims per second checked and deleted */
#define RD_INPUT_MAX (1024 * 1024)        /* bytes of replies buffered before reading stops */
#define RD_READ_MAX (16 * 1024)           /* bytes read from the socket at once */
/*
 * Short runs of the server's one thread, or rare ones. A probe of RD_PROBE_BATCH keys, or a reap
 * of RD_REAP_BATCH, is one script, during which every other client of the server waits; and
 * the commands of one client's pipeline run back to back, so that one request is in flight at a
 * time (a SCAN after its batch's probes answered, not behind them): a SCAN of RD_SCAN_COUNT
 * buckets returns about one probe's keys. Measured on Redis 7.0.15 (bench-redis, a quiet
 * machine, the clients' GET p99 against a 120-150 us baseline): a probe of 16 keys ran 46 us, a
 * SCAN 20-24 us, and sent together they raised the p99 1.6x-1.7x whatever the rate (25,000 keys/s
 * or 50,000); probes of 8 keys and SCANs of 8 buckets sent one at a time, 1.34x.
 *
 * The deletes are paced apart (delete_rate), in few, long scripts. A reap costs far more than a
 * probe (per victim an idle check and a free, and the fork check's INFO), and run cold, as a
 * paced script runs, 64 victims held the server's thread about 350 us (the daemon's round trip
 * 624 us at its p50). In bench-redis, whose client sends one GET at a time, nearly every reap
 * held one GET (1,472 GETs over 144 us in 1,406 reaps, the rest of the slow ones spread as in
 * idle time): the p99 follows how many reaps come a second more than their length. Slower,
 * short reaps do not help: a script that runs seldom runs cold (8 victims at 1,000/s took
 * 97 us a call, 35 us at 25,000/s). Measured with a plain client sending the reap's work in
 * windows of 3 s interleaved with idle ones, against a GET p99 of 109 us: 8 keys a script at
 * 25,000 keys/s 2.0x, and any command at all 3,125 times a second (an empty script) 1.7x; 16
 * keys at 1,000 keys/s 1.41x, 32 keys 1.27x, 64 keys 0.87x, 64 keys at 2,000 keys/s 1.28x.
 * But in bench-redis with a million keys, 64 at 1,000/s (15.6 reaps a second) still measured
 * 1.62x: the baseline's tail is thin, and 0.3% more of the GETs held is enough to move its
 * p99. Hence 250 victims/s, 3.9 reaps a second: the GETs held are about 0.07% of them, and
 * the server's time in reaps about 0.15% (for clients that do not wait for each other, what
 * counts is that share). The price: a GET that meets a reap waits about 0.35 ms (the p99.9),
 * and 900,000 deletes take an hour; a cache that gets more single-use keys than 250 a second
 * (21 million a day) needs a higher delete_rate, and its clients' tail pays for it.
 */
#define RD_SCAN_COUNT 8                   /* SCAN's COUNT: buckets walked per call */
#define RD_PROBE_BATCH 8                  /* keys per probe script */
#define RD_REAP_BATCH 64                  /* victims per reap script */
#define RD_QUEUE_MAX 64                   /* requests in flight, at most */
#define RD_MAX_KEYS_DEFAULT 1000000       /* keys */
#define RD_PASSWORD_MAX 512               /* bytes of a password */
#define RD_LRU_CLOCK_MASK 0xffffffu       /* Redis' LRU clock: 24 bits of seconds */
/*
 * TIME's microseconds past which the scripts take its seconds for the LRU clock: serverCron
 * (every 100 ms at the default hz 10) has run twice in that second. Below hz 10: always INFO.
 */
#define RD_CLOCK_AFTER_USEC 250000
#define RD_LFU_MINUTE_USEC UINT64_C(60000000)
#define RD_LFU_MARGIN_USEC 1000000        /* our clock against the server's, and a round trip */

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- the scripts ---- */

/*
 * The server's LRU clock, in Lua: lru_clock is the time in seconds (24 bits) as serverCron
 * last saw it (every 1000 / hz ms). ARGV[2] usec into a second, the cron has run since the
 * second began, and TIME's seconds are the clock (one call); before that, INFO server says it.
 * A late cron makes TIME's seconds ahead of the clock, never behind: an idle time read against
 * them puts the last access later than it was, which can only make a key look used.
 */
#define RD_LUA_CLOCK \
        "local function lru_clock()\n" \
        "  local t = redis.call('TIME')\n" \
        "  if tonumber(t[2]) >= tonumber(ARGV[2]) then\n" \
        "    return tonumber(t[1]) % 16777216\n" \
        "  end\n" \
        "  return tonumber(string.match(redis.call('INFO', 'server'), 'lru_clock:(%d+)'))\n" \
        "end\n"

/*
 * probe: for each key of KEYS, its idle time in seconds (ARGV[1] "lru") or its LFU frequency
 * ("lfu"), -1 when it is gone, and 1 when it has a TTL; first the server's LRU clock. OBJECT
 * and PTTL look keys up without touching them. Allowed in scripts in Redis 7.0 (neither is
 * flagged NOSCRIPT in src/commands/), replicated by effects (it writes nothing).
 */
static const char rd_probe_script[] =
        RD_LUA_CLOCK
        "local lfu = ARGV[1] == 'lfu'\n"
        "local r = {0}\n"
        "if not lfu then\n"
        "  r[1] = lru_clock()\n"
        "end\n"
        "for i = 1, #KEYS do\n"
        "  local v = redis.call('OBJECT', lfu and 'FREQ' or 'IDLETIME', KEYS[i])\n"
        "  if v then\n"
        "    r[2 * i] = v\n"
        "    r[2 * i + 1] = redis.call('PTTL', KEYS[i]) >= 0 and 1 or 0\n"
        "  else\n"
        "    r[2 * i] = -1\n"
        "    r[2 * i + 1] = 0\n"
        "  end\n"
        "end\n"
        "return r\n";

/*
 * reap: ARGV = mode, the clock's threshold (as the probe's), total_forks as the scan ended, "1"
 * for a dry run, then each key's lru as the scan saw it. {-1}: a fork since, nothing done. Else
 * {0, r1, r2...}: a key deleted is 0, or its bytes (MEMORY USAGE, 5 samples) for the first one
 * of the batch (a sample: the statistic is an estimate); -1 gone; -2 used since (its lru moved,
 * or it is in use this very second; LFU: its frequency above 0). A TTL set since is a use too:
 * EXPIRE and SET look the key up, so no PTTL here. Its cost is what the server's other
 * clients wait for: measured with redis-benchmark on a scratch Redis 7.0.15 (INFO commandstats,
 * usec_per_call of a script with that part alone), the fork check is a plain find, 6.6 us with
 * the INFO where a pattern match took 10.0 us, and the victims go in one UNLINK (eight calls
 * cost about 2.5 us more).
 */
static const char rd_reap_script[] =
        RD_LUA_CLOCK
        "if not string.find(redis.call('INFO', 'stats'), '\\ntotal_forks:' .. ARGV[3] .. '\\r', 1,\n"
        "                   true) then\n"
        "  return {-1}\n"
        "end\n"
        "local lfu = ARGV[1] == 'lfu'\n"
        "local clock = 0\n"
        "if not lfu then\n"
        "  clock = lru_clock()\n"
        "end\n"
        "local r = {0}\n"
        "local gone = {}\n"
        "local sampled = false\n"
        "for i = 1, #KEYS do\n"
        "  local k = KEYS[i]\n"
        "  local v = redis.call('OBJECT', lfu and 'FREQ' or 'IDLETIME', k)\n"
        "  if not v then\n"
        "    r[i + 1] = -1\n"
        "  elseif (lfu and v ~= 0) or (not lfu and (v == 0 or\n"
        "         (clock - v) % 16777216 ~= tonumber(ARGV[4 + i]))) then\n"
        "    r[i + 1] = -2\n"
        "  else\n"
        "    r[i + 1] = 0\n"
        "    if not sampled then\n"
        "      r[i + 1] = redis.call('MEMORY', 'USAGE', k, 'SAMPLES', '5') or 0\n"
        "      sampled = true\n"
        "    end\n"
        "    gone[#gone + 1] = k\n"
        "  end\n"
        "end\n"
        "if #gone > 0 and ARGV[4] ~= '1' then\n"
        "  redis.call('UNLINK', unpack(gone))\n"
        "end\n"
        "return r\n";

/*
 * acl: whether the user may run each command of ARGV, each a command line without keys
 * ("object idletime"), as redis.acl_check_cmd() says (Redis 7.0 and later): the place in ARGV of
 * the first it may not, true when it may run them all, false when the server cannot tell
 * (older). Sent when a script was refused a command and the error names none (Redis 7's
 * "can't run this command"), to name it. Each line is whole: Redis 7.0.15 reads EVAL's numkeys from
 * the arguments it is given, and an "eval" alone crashed the server (seen with a user whose keys
 * are limited, "~x*").
 */
static const char rd_acl_script[] =
        "if not redis.acl_check_cmd then\n"
        "  return false\n"
        "end\n"
        "for i = 1, #ARGV do\n"
        "  local w = {}\n"
        "  for p in string.gmatch(ARGV[i], '[^ ]+') do\n"
        "    w[#w + 1] = p\n"
        "  end\n"
        "  local ok, allowed = pcall(redis.acl_check_cmd, unpack(w))\n"
        "  if ok and not allowed then\n"
        "    return tostring(i)\n"
        "  end\n"
        "end\n"
        "return true\n";

/* What the adapter runs, by ACL name, and as the acl script asks about it. */
static const struct {
        const char *name;        /* "object|idletime": as ACL SETUSER writes it */
        const char *line;        /* a whole command line, without keys */
} rd_acl_commands[] = {
        { "select", "select 0" },
        { "scan", "scan 0" },
        { "info", "info" },
        { "time", "time" },
        { "eval", "eval return 0" },
        { "evalsha", "evalsha 0 0" },
        { "script|load", "script load return" },
        { "pttl", "pttl" },
        { "memory|usage", "memory usage" },
        { "object|idletime", "object idletime" }, /* LRU policies */
        { "object|freq", "object freq" },         /* LFU policies */
        { "unlink", "unlink" },                   /* not in a dry run */
};
#define RD_ACL_COMMON 9                          /* the first 9: always */

/* ---- configuration ---- */

enum { RD_TTL_LEAVE, RD_TTL_AGE };

struct rd_config {
        struct ad_net_config net; /* first: the frame's keys (adapter-round.h) */
        uint64_t db;
        const char *user;
        const char *password_file;
        const char *match;
        int ttl_keys;
};

/* An ACL user name or a SCAN pattern: 1..@max bytes, printable, no blank (one argument). */
static int rd_check_word(const char *v, size_t max, const char *what, char *msg, size_t msg_len)
{
        size_t n = strlen(v);

        if (n == 0 || n > max) {
                snprintf(msg, msg_len, "%s of %zu bytes (expected 1 to %zu)", what, n, max);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)v[i] <= ' ' || (unsigned char)v[i] == 0x7f) {
                        snprintf(msg, msg_len, "%s with a blank or a control character", what);
                        return -EINVAL;
                }
        return 0;
}

static int rd_check_user(const char *v, void *target, char *msg, size_t msg_len)
{
        return rd_check_word(v, 128, "a user name", msg, msg_len);
}

static int rd_check_match(const char *v, void *target, char *msg, size_t msg_len)
{
        return rd_check_word(v, 512, "a SCAN pattern", msg, msg_len);
}

static const struct ca_key_spec rd_keys[] = {
        AD_KEY_SERVER(struct rd_config, "127.0.0.1:6379"),
        { .name = "db", .type = CA_KEY_UINT, CA_KEY_FIELD(struct rd_config, db), .def = "0",
          .min = 0, .max = 65535, .help = "the database (SELECT) whose keys are aged" },
        { .name = "user", .type = CA_KEY_STRING, CA_KEY_FIELD(struct rd_config, user),
          .check = rd_check_user, .help = "the ACL user to AUTH as (default: the default user)" },
        { .name = "password_file", .type = CA_KEY_PATH,
          CA_KEY_FIELD(struct rd_config, password_file),
          .help = "a file holding the password, readable by nobody but root and its group" },
        AD_KEY_TIMEOUT(struct rd_config),
        AD_KEY_REFRESH_TIMEOUT(struct rd_config, "longest refresh, from before_rotate to the scan "
                               "swept (0: 1min + 3 x max_keys / rate)"),
        { .name = "match", .type = CA_KEY_STRING, CA_KEY_FIELD(struct rd_config, match),
          .check = rd_check_match, .help = "a SCAN MATCH pattern: only those keys are aged" },
        { .name = "ttl_keys", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct rd_config, ttl_keys),
          .def = "leave", .what = "ttl_keys",
          .choices = (const struct ca_key_choice[]){ { "leave", RD_TTL_LEAVE },
                                                     { "age", RD_TTL_AGE }, { NULL, 0 } },
          .help = "keys with a TTL: leave them to Redis, or age them too" },
        AD_KEY_MAX_ITEMS(struct rd_config, "max_keys", "keys", STR(RD_MAX_KEYS_DEFAULT)),
        AD_KEY_RATE(struct rd_config, STR(RD_RATE_DEFAULT),
                    "keys per second scanned (0: no limit)"),
        { .name = "delete_rate", .type = CA_KEY_UINT,
          CA_KEY_FIELD(struct rd_config, net.delete_rate), .def = STR(RD_DELETE_RATE_DEFAULT),
          .min = 0, .max = AD_RATE_MAX,
          .help = "victims per second checked and deleted (0: no limit)" },
        AD_KEY_DRY_RUN(struct rd_config),
        CA_KEY_END
};

/* ---- state ---- */

/* rd_key's flags (AD_ITEM_OWN) */
#define RD_KEY_AMBIGUOUS 0x01  /* LRU: seen at idle time 0: a use in that second leaves no trace */

struct rd_key {
        struct ad_item ad;       /* first: the frame's head, whose node is the cache's */
        uint32_t seen;           /* LRU: its lru (24 bits) as last seen; LFU: its frequency */
        uint8_t key[];
};

enum rd_phase {
        RD_HELLO = AD_PHASE_ADAPTER, /* AUTH, SELECT and the scripts' SCRIPT LOAD asked */
        RD_INFO,                     /* INFO (and CONFIG GET) asked */
        RD_SCAN,                     /* SCAN and probes */
        RD_SCANNED,                  /* INFO asked again: the forks during the scan */
        RD_MEMORY,                   /* INFO asked: used_memory after the rotation */
};

static const char *const rd_phase_name[] = {
        [RD_HELLO - AD_PHASE_ADAPTER] = "authenticating",
        [RD_INFO - AD_PHASE_ADAPTER] = "reading INFO",
        [RD_SCAN - AD_PHASE_ADAPTER] = "scanning",
        [RD_SCANNED - AD_PHASE_ADAPTER] = "reading INFO after the scan",
        [RD_MEMORY - AD_PHASE_ADAPTER] = "reading INFO memory",
};

/* What a reply in flight answers. */
enum rd_req {
        RQ_AUTH,
        RQ_SELECT,
        RQ_LOAD_PROBE,
        RQ_LOAD_REAP,
        RQ_INFO,       /* at the refresh's start */
        RQ_CONFIG,     /* lfu-decay-time */
        RQ_ACL,        /* the acl script: may the user run what the adapter needs? */
        RQ_SCAN,
        RQ_PROBE,      /* keys [first, first + count) of the batch */
        RQ_INFO_END,   /* the scan is done */
        RQ_REAP,       /* victims [checked, batch_end) */
        RQ_INFO_MEMORY,
};

static const char *const rd_req_name[] = {
        [RQ_AUTH] = "AUTH", [RQ_SELECT] = "SELECT", [RQ_LOAD_PROBE] = "SCRIPT LOAD",
        [RQ_LOAD_REAP] = "SCRIPT LOAD", [RQ_INFO] = "INFO", [RQ_CONFIG] = "CONFIG GET",
        [RQ_ACL] = "the acl script",
        [RQ_SCAN] = "SCAN", [RQ_PROBE] = "the probe script", [RQ_INFO_END] = "INFO",
        [RQ_REAP] = "the reap script", [RQ_INFO_MEMORY] = "INFO",
};

/* Keys back to back: a SCAN reply's, or a copy of some of them. */
struct rd_keyset {
        uint8_t *bytes;
        uint32_t *off;           /* each key's offset in bytes */
        uint16_t *len;
        size_t n;
};

struct rd_pending {
        enum rd_req req;
        size_t first, count;     /* RQ_PROBE: keys [first, first + count) of the batch... */
        struct rd_keyset *own;   /* ... or of a copy of its own (a probe sent again) */
        bool whole;              /* RQ_PROBE, RQ_REAP: sent again whole (EVAL), after NOSCRIPT */
};

/* What INFO says, at a refresh's start and end. */
struct rd_info {
        uint64_t used_memory, used_memory_rss, forks;
        bool child;              /* a fork's child is running */
        uint64_t start_usec;     /* our clock when it was asked */
};

struct rd {
        struct ad_round ad;       /* first: the frame (connection, index, victims, statistics) */
        struct rd_config cfg;
        char *password;           /* from password_file, or NULL */
        size_t password_len;

        bool blind;               /* this rotation cannot tell a key unused: nothing goes */
        bool paced_send;          /* a batch waits for its pace */
        size_t need;              /* bytes the next reply needs at least */
        char probe_sha[RP_SHA_LEN + 1], reap_sha[RP_SHA_LEN + 1];

        /* The requests in flight, in order (a ring). */
        struct rd_pending queue[RD_QUEUE_MAX];
        size_t q_head, q_len;

        /* What the server is. */
        char run_id[48];          /* the instance the keys belong to */
        bool lfu, lfu_known;      /* its policy, as the last refresh found it */
        uint64_t lfu_decay_min;   /* lfu-decay-time, minutes; 0 with !lfu_decay_known */
        bool lfu_decay_known;
        uint64_t clock_after_usec; /* the scripts' ARGV[2] (RD_LUA_CLOCK), from INFO's hz */
        struct rd_info info_start, info_end, prev_start;
        bool prev_known;          /* prev_start is the last complete scan's, same instance */
        uint64_t used_memory_before, used_memory_after, rss_before, rss_after;

        /* The scan. */
        uint64_t cursor;
        bool scan_done;           /* the last SCAN answered cursor 0 */
        bool scan_out;            /* a SCAN in flight */
        size_t probes_out;        /* probes in flight */
        struct rd_keyset batch;   /* the keys of the last SCAN reply */
        size_t batch_cap, batch_keys_cap;
        uint64_t scan_ttl, scan_long; /* keys of the scan under way with a TTL, too long */

        uint64_t lfu_deadline_usec; /* LFU: the last moment a check proves no read since */

        /* Said once. */
        char blind_reason[AD_MSG_MAX];
        bool long_logged;
        char denied[32];          /* a command the user may not run ("unlink"), "" when none */
        enum rd_req denied_req;   /* the request it refused: its success takes it back */
        bool naming;              /* the acl script asked which (for acl_for): the rest waits */
        enum rd_req acl_for;

        /* Statistics. */
        uint64_t aged_total, kept_touched, kept_unsure;
        uint64_t bytes_freed;     /* estimated: a batch's sample times its deletes */
        uint64_t blind_rotations, noscript;
        uint64_t keys_seen, ttl_keys; /* of the last scan */
};

_Static_assert(offsetof(struct rd, ad) == 0 && offsetof(struct rd_config, net) == 0,
               "the frame and its keys first (adapter-round.h)");

static struct rd *rd_of(struct ad_round *r)
{
        return (struct rd *)r;
}

static void rd_check(struct ad_round *r);

/* A key that the key's text would print as: printable bytes as is, others escaped. */
static char *rd_key_excerpt(const struct rd_key *k, char *buf)
{
        return ad_excerpt((const char *)k->key, k->ad.key_len, buf);
}

/* A fresh start in the cache: a new object (its first use). */
static void rd_key_start(struct rd *rd, struct rd_key *k, uint32_t seen, bool ambiguous)
{
        ca_cache_remove(rd->ad.cache, &k->ad.node);
        k->ad.node = (struct ca_node){ 0 };
        k->seen = seen;
        k->ad.flags = ambiguous ? RD_KEY_AMBIGUOUS : 0;
        ca_cache_insert(rd->ad.cache, &k->ad.node);
}

static void rd_keyset_free(struct rd_keyset *ks)
{
        if (!ks)
                return;
        free(ks->bytes);
        free(ks->off);
        free(ks->len);
        free(ks);
}

/* A copy of keys [first, first + count) of @from, or NULL. */
static struct rd_keyset *rd_keyset_copy(const struct rd_keyset *from, size_t first, size_t count)
{
        struct rd_keyset *ks = calloc(1, sizeof(*ks));
        size_t bytes = 0;

        for (size_t i = first; i < first + count; i++)
                bytes += from->len[i];
        if (!ks || !(ks->bytes = malloc(bytes + 1)) ||
            !(ks->off = calloc(count, sizeof(*ks->off))) ||
            !(ks->len = calloc(count, sizeof(*ks->len)))) {
                rd_keyset_free(ks);
                return NULL;
        }
        for (size_t i = 0, pos = 0; i < count; i++) {
                memcpy(ks->bytes + pos, from->bytes + from->off[first + i], from->len[first + i]);
                ks->off[i] = (uint32_t)pos;
                ks->len[i] = from->len[first + i];
                pos += ks->len[i];
        }
        ks->n = count;
        return ks;
}

/* The connection is gone: what was in flight with it. */
static void rd_dropped(struct ad_round *r)
{
        struct rd *rd = rd_of(r);

        rd->paced_send = false;
        for (; rd->q_len > 0; rd->q_len--, rd->q_head = (rd->q_head + 1) % RD_QUEUE_MAX)
                rd_keyset_free(rd->queue[rd->q_head].own);
        rd->q_head = 0;
        rd->need = 0;
        rd->scan_out = false;
        rd->probes_out = 0;
        rd->naming = false;
}

/* A failure: the next scan judges its period from its own start, and the rotation says nothing. */
static void rd_failed(struct ad_round *r)
{
        rd_of(r)->prev_known = false;
        r->summary_due = false;
}

/* A rotation that cannot tell a key unused: said once per reason, counted each time. */
static void rd_set_blind(struct rd *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rd_set_blind(struct rd *rd, const char *fmt, ...)
{
        char msg[AD_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        rd->blind = true;
        rd->blind_rotations++;
        ca_host_log(rd->ad.host, strcmp(msg, rd->blind_reason) != 0 ? LOG_NOTICE : LOG_DEBUG,
                    "redis at %s: %s: every key counts as used this rotation, none is deleted",
                    rd->ad.server, msg);
        snprintf(rd->blind_reason, sizeof(rd->blind_reason), "%s", msg);
}

/* ---- requests ---- */

static bool rd_waiting(const struct ad_round *r)
{
        return ((const struct rd *)r)->q_len > 0;
}

/*
 * Write one command of @argc arguments as a RESP array, and expect its reply. @p says what it
 * is; an owned key set goes with it (freed with its reply). The callers never have more in
 * flight than the ring holds: more is a bug (abort).
 */
static void rd_send(struct rd *rd, const struct rd_pending *p, size_t argc,
                    const char *const *argv, const size_t *lens)
{
        struct evbuffer *out = bufferevent_get_output(rd->ad.conn.bev);
        struct evbuffer_iovec vec;
        size_t n = rp_command(NULL, 0, argc, argv, lens);

        if (rd->q_len == RD_QUEUE_MAX)
                abort();
        if (evbuffer_reserve_space(out, (ev_ssize_t)n, &vec, 1) < 1 || vec.iov_len < n) {
                rd_keyset_free(p->own);
                return ad_round_fail(&rd->ad, "out of memory for a request");
        }
        rp_command(vec.iov_base, n, argc, argv, lens);
        vec.iov_len = n;
        evbuffer_commit_space(out, &vec, 1);
        rd->queue[(rd->q_head + rd->q_len) % RD_QUEUE_MAX] = *p;
        rd->q_len++;
        ad_round_timeouts(&rd->ad);
}

/* A command of NUL-ended words, RD_SENDV_MAX at most. */
#define RD_SENDV_MAX 16
static void rd_sendv(struct rd *rd, enum rd_req req, size_t argc, const char *const *argv)
{
        size_t lens[RD_SENDV_MAX];

        if (argc > RD_SENDV_MAX)
                abort();
        for (size_t i = 0; i < argc; i++)
                lens[i] = strlen(argv[i]);
        rd_send(rd, &(const struct rd_pending){ .req = req }, argc, argv, lens);
}

/* ---- connecting: AUTH, SELECT, the scripts ---- */

static void rd_scan_start(struct rd *rd);
static void rd_scan_or_ask(struct rd *rd);

static void rd_hello(struct ad_round *r)
{
        struct rd *rd = rd_of(r);
        char db[24];

        r->phase = RD_HELLO;
        if (rd->password) {
                const char *argv[3] = { "AUTH" };
                size_t lens[3] = { 4 }, argc = 1;

                if (rd->cfg.user) {
                        argv[argc] = rd->cfg.user;
                        lens[argc++] = strlen(rd->cfg.user);
                }
                argv[argc] = rd->password;
                lens[argc++] = rd->password_len;
                rd_send(rd, &(const struct rd_pending){ .req = RQ_AUTH }, argc, argv, lens);
        }
        snprintf(db, sizeof(db), "%" PRIu64, rd->cfg.db);
        rd_sendv(rd, RQ_SELECT, 2, (const char *[]){ "SELECT", db });
        rd_sendv(rd, RQ_LOAD_PROBE, 3, (const char *[]){ "SCRIPT", "LOAD", rd_probe_script });
        rd_sendv(rd, RQ_LOAD_REAP, 3, (const char *[]){ "SCRIPT", "LOAD", rd_reap_script });
}

static void rd_hello_done(struct rd *rd)
{
        ca_host_log(rd->ad.host, LOG_DEBUG, "connected to redis at %s, scripts %s and %s",
                    rd->ad.server, rd->probe_sha, rd->reap_sha);
        ad_round_ready(&rd->ad);
}

/* ---- refresh: INFO, then the scan ---- */

static void rd_refresh(struct ad_round *r)
{
        struct rd *rd = rd_of(r);

        r->phase = RD_INFO;
        ca_host_log(r->host, LOG_DEBUG, "refresh: INFO, then the scan");
        rd->info_start = (struct rd_info){ .start_usec = r->refresh_start_usec };
        rd_sendv(rd, RQ_INFO, 1, (const char *[]){ "INFO" });
}

/* Parse one INFO reply's figures into @i; -EBADMSG with a message when one is missing. */
static int rd_info_parse(const char *text, size_t len, struct rd_info *i, char *msg,
                         size_t msg_len)
{
        static const char *const child[] = { "rdb_bgsave_in_progress", "aof_rewrite_in_progress",
                                             "module_fork_in_progress" };
        uint64_t u;

        if (rp_info_u64(text, len, "used_memory", UINT64_MAX, &i->used_memory) < 0 ||
            rp_info_u64(text, len, "used_memory_rss", UINT64_MAX, &i->used_memory_rss) < 0 ||
            rp_info_u64(text, len, "total_forks", UINT64_MAX, &i->forks) < 0) {
                snprintf(msg, msg_len, "INFO without used_memory, used_memory_rss or total_forks "
                         "(is this Redis?)");
                return -EBADMSG;
        }
        i->child = false;
        for (size_t c = 0; c < sizeof(child) / sizeof(child[0]); c++)
                if (rp_info_u64(text, len, child[c], 1, &u) == 0 && u)
                        i->child = true;
        return 0;
}

/* The INFO that starts a refresh: is this a server we can age, and the one we knew? */
static void rd_info_start(struct rd *rd, const char *text, size_t len)
{
        struct ad_round *r = &rd->ad;
        const char *v;
        size_t vl;
        uint64_t major, hz;
        char msg[AD_MSG_MAX], ex[AD_EXCERPT_BUF];
        bool lfu, reset = false;

        if (rp_info_field(text, len, "redis_version", &v, &vl) < 0 ||
            ad_parse_u64(v, strcspn(v, ".") < vl ? strcspn(v, ".") : vl, 1000, &major) < 0)
                return ad_round_fail(r, "INFO without a redis_version (is this Redis?): \"%s\"",
                                     ad_excerpt(text, len, ex));
        if (major < 5)
                return ad_round_fail(r, "Redis %s: the adapter needs 5.0 or later (older servers "
                                     "replicate scripts verbatim and refuse a delete after an "
                                     "idle time read)", ad_excerpt(v, vl, ex));
        if (rp_info_field(text, len, "role", &v, &vl) == 0 && !(vl == 6 && !memcmp(v, "master", 6)))
                return ad_round_fail(r, "a replica (role:%s): its keys are its master's, and "
                                     "reads on the master leave no trace here; age the master",
                                     ad_excerpt(v, vl, ex));
        if (rp_info_field(text, len, "cluster_enabled", &v, &vl) == 0 && vl == 1 && v[0] == '1')
                return ad_round_fail(r, "cluster mode is not supported (a script's keys must "
                                     "share a slot)");
        if (rp_info_field(text, len, "maxmemory_policy", &v, &vl) < 0)
                return ad_round_fail(r, "INFO without a maxmemory_policy (is this Redis?)");
        lfu = vl >= 4 && memcmp(v + vl - 4, "-lfu", 4) == 0;
        if (rd_info_parse(text, len, &rd->info_start, msg, sizeof(msg)) < 0)
                return ad_round_fail_kind(r, msg, "%s", msg);
        if (rp_info_field(text, len, "run_id", &v, &vl) < 0 || vl >= sizeof(rd->run_id))
                return ad_round_fail(r, "INFO without a run_id (is this Redis?)");

        /* Another server, or the same restarted: what was known of its keys is not theirs now. */
        if (rd->run_id[0] && (strlen(rd->run_id) != vl || memcmp(rd->run_id, v, vl) != 0)) {
                ca_host_log(r->host, LOG_NOTICE, "redis at %s restarted (run_id %.*s, was %s): "
                            "the %zu keys known from before are forgotten", r->server, (int)vl,
                            v, rd->run_id, r->n_items);
                reset = true;
        } else if (rd->lfu_known && lfu != rd->lfu) {
                ca_host_log(r->host, LOG_NOTICE, "redis at %s: maxmemory-policy went from %s to "
                            "%s: the %zu keys known are forgotten (their counters mean something "
                            "else now)", r->server, rd->lfu ? "LFU" : "LRU", lfu ? "LFU" : "LRU",
                            r->n_items);
                reset = true;
        }
        if (reset) {
                r->reset_gen = r->gen + 1;
                rd->prev_known = false;
        }
        memcpy(rd->run_id, v, vl);
        rd->run_id[vl] = '\0';
        rd->clock_after_usec = rp_info_u64(text, len, "hz", 1000, &hz) == 0 && hz >= 10
                                       ? RD_CLOCK_AFTER_USEC : 1000000;
        rd->lfu = lfu;
        rd->lfu_known = true;
        rd->used_memory_before = rd->info_start.used_memory;
        rd->rss_before = rd->info_start.used_memory_rss;
        if (lfu) {
                rd_sendv(rd, RQ_CONFIG, 3, (const char *[]){ "CONFIG", "GET", "lfu-decay-time" });
                return;
        }
        rd->lfu_decay_known = false;
        rd_scan_or_ask(rd);
}

/* ---- the ACL: commands the user may not run, a configuration error said once ---- */

/* @cmd ("object|idletime") as Redis' commands are written: "OBJECT IDLETIME". */
static char *rd_command_words(const char *cmd, char *buf, size_t len)
{
        size_t i;

        for (i = 0; cmd[i] && i + 1 < len; i++)
                buf[i] = cmd[i] == '|' ? ' ' : (char)(cmd[i] >= 'a' && cmd[i] <= 'z'
                                                              ? cmd[i] - 'a' + 'A' : cmd[i]);
        buf[i] = '\0';
        return buf;
}

/*
 * The user may not run @cmd ("unlink"; "keys": read the keys it is asked about; "": a command of
 * @req, which the server did not name): the server is fine, its configuration is not. Said once
 * at error with the rule that would allow it, the cache's state says so, nothing is deleted; the
 * rotations go on asking (a grant needs no reload), and say nothing more until it changes.
 */
static void rd_denied(struct rd *rd, const char *cmd, enum rd_req req)
{
        struct ad_round *r = &rd->ad;
        const char *user = rd->cfg.user ? rd->cfg.user : "default";
        char words[64], what[160], state[CA_COUNTS_NAME_MAX];
        bool news = strcmp(cmd, rd->denied) != 0 || !rd->denied[0];

        rd_command_words(cmd, words, sizeof(words));
        snprintf(rd->denied, sizeof(rd->denied), "%s", cmd[0] ? cmd : "?");
        rd->denied_req = req;
        if (strcmp(cmd, "keys") == 0)
                snprintf(what, sizeof(what), "read every key it is asked about (ACL SETUSER %s "
                         "~*, or the pattern of match)", user);
        else if (cmd[0])
                snprintf(what, sizeof(what), "run %s (ACL SETUSER %s +%s)", words, user, cmd);
        else
                snprintf(what, sizeof(what), "run a command of %s (its ACL)", rd_req_name[req]);
        snprintf(state, sizeof(state), "acl denies %s", cmd[0] ? cmd : "a command");
        for (char *p = state; *p; p++)
                if (*p == '|')
                        *p = ' ';
        (void)ca_cache_set_deferred(r->cache, state);
        if (news)
                ca_host_log(r->host, LOG_ERR, "redis at %s: the ACL user %s may not %s: a "
                            "configuration error; nothing is deleted until it may, and each "
                            "rotation asks again", r->server, user, what);
        else
                ca_host_log(r->host, LOG_DEBUG, "redis at %s: the ACL user %s still may not "
                            "run %s (again)", r->server, user, strcmp(cmd, "keys") == 0
                            ? "a command on every key" : cmd[0] ? words : "a command");
        ad_round_drop(r);
}

/* The user may run what it was refused: said once, and the cache's state back. */
static void rd_allowed(struct rd *rd)
{
        if (!rd->denied[0])
                return;
        rd->denied[0] = '\0';
        (void)ca_cache_set_deferred(rd->ad.cache, NULL);
        ca_host_log(rd->ad.host, LOG_NOTICE, "redis at %s: the ACL user %s may run every command "
                    "it needs again", rd->ad.server, rd->cfg.user ? rd->cfg.user : "default");
}

/*
 * Whether the error @v is a refusal by the user's ACL, and of what: NOPERM, or inside a script
 * Redis 7's "can't run this command" (which names none) or "can't access" a key. The command in
 * @cmd ("" when unnamed).
 */
static bool rd_denial_of(const struct rp_value *v, char *cmd, size_t len)
{
        static const char run[] = "run the '";
        const char *p, *q;

        cmd[0] = '\0';
        if (!memmem(v->str, v->len, "NOPERM", 6) &&
            !memmem(v->str, v->len, "can't run this command", 22) &&
            !memmem(v->str, v->len, "can't access", 12))
                return false;
        if (memmem(v->str, v->len, "access", 6) && !memmem(v->str, v->len, run, sizeof(run) - 1)) {
                snprintf(cmd, len, "keys");
                return true;
        }
        p = memmem(v->str, v->len, run, sizeof(run) - 1);
        if (p) {
                p += sizeof(run) - 1;
                q = memchr(p, '\'', v->len - (size_t)(p - v->str));
                if (q && q > p && (size_t)(q - p) < len) {
                        for (const char *c = p; c < q; c++)
                                if (!(*c >= 'a' && *c <= 'z') && *c != '|' && *c != '-' &&
                                    *c != '_')
                                        return true;
                        snprintf(cmd, len, "%.*s", (int)(q - p), p);
                }
        }
        return true;
}

/*
 * A script was refused a command the error does not name (@req): ask which, on the same
 * connection, before saying anything; the replies still owed before it are let go. @req RQ_ACL:
 * whether a command refused before still is.
 */
static void rd_acl_request(struct rd *rd, enum rd_req req)
{
        const char *argv[RD_SENDV_MAX] = { "EVAL", rd_acl_script, "0" };
        size_t argc = 3;

        for (size_t i = 0; i < RD_ACL_COMMON; i++)
                argv[argc++] = rd_acl_commands[i].line;
        argv[argc++] = rd_acl_commands[rd->lfu ? 10 : 9].line;
        if (!rd->ad.cfg->dry_run)
                argv[argc++] = rd_acl_commands[11].line;
        rd->naming = true;
        rd->acl_for = req;
        rd_sendv(rd, RQ_ACL, argc, argv);
}

static void rd_acl_reply(struct rd *rd, const struct rp_value *v, size_t n)
{
        const char *name = "";
        uint64_t i;

        if (!rd->naming)
                return ad_round_fail(&rd->ad, "a reply to the acl script, which was not sent");
        rd->naming = false;
        /* The place in what rd_acl_request() sent: RD_ACL_COMMON, the policy's OBJECT, UNLINK. */
        if (n == 1 && v->type == RP_BULK &&
            ad_parse_u64(v->str, v->len, RD_ACL_COMMON + 2, &i) == 0 && i >= 1)
                name = rd_acl_commands[i <= RD_ACL_COMMON ? i - 1 : i == RD_ACL_COMMON + 1
                                       ? (rd->lfu ? 10 : 9) : 11].name;
        if (rd->acl_for != RQ_ACL)
                /* True (it may run them all) or false (a server before 7.0): still unnamed. */
                return rd_denied(rd, name, rd->acl_for);
        /* Asked before a scan: still refused, granted, or the server cannot tell (scan). */
        if (name[0])
                return rd_denied(rd, name, RQ_ACL);
        if (n == 1 && v->type == RP_INTEGER && v->integer == 1)
                rd_allowed(rd);
        rd_scan_start(rd);
}

/*
 * The scan, unless a command it needs was refused and still is: asked first (the acl script, on
 * Redis 7), so that a misconfigured user costs a round trip a rotation, not a whole scan.
 */
static void rd_scan_or_ask(struct rd *rd)
{
        if (rd->denied[0] && strcmp(rd->denied, "keys") != 0 && strcmp(rd->denied, "?") != 0)
                return rd_acl_request(rd, RQ_ACL);
        rd_scan_start(rd);
}

/* ---- the scan ---- */

static void rd_scan_request(struct rd *rd)
{
        char cursor[24], count[8];
        const char *argv[6] = { "SCAN", cursor };
        size_t argc = 2;

        snprintf(cursor, sizeof(cursor), "%" PRIu64, rd->cursor);
        snprintf(count, sizeof(count), "%d", RD_SCAN_COUNT);
        if (rd->cfg.match) {
                argv[argc++] = "MATCH";
                argv[argc++] = rd->cfg.match;
        }
        argv[argc++] = "COUNT";
        argv[argc++] = count;
        rd->scan_out = true;
        rd_sendv(rd, RQ_SCAN, argc, argv);
}

static void rd_scan_start(struct rd *rd)
{
        rd->ad.phase = RD_SCAN;
        ad_round_walk_begin(&rd->ad);
        rd->cursor = 0;
        rd->scan_done = false;
        rd->batch.n = 0;
        rd->scan_ttl = rd->scan_long = 0;
        rd_scan_request(rd);
}

/* One probe script for keys [first, first + count) of @ks (the batch, or @own). */
static void rd_probe_request(struct rd *rd, const struct rd_keyset *ks, size_t first,
                             size_t count, struct rd_keyset *own)
{
        const char *argv[6 + RD_PROBE_BATCH];
        size_t lens[6 + RD_PROBE_BATCH], argc = 0;
        char nkeys[8], after[24];

        snprintf(nkeys, sizeof(nkeys), "%zu", count);
        snprintf(after, sizeof(after), "%" PRIu64, rd->clock_after_usec);
        /* Sent again (NOSCRIPT), it goes whole: EVAL loads it into the server's cache too. */
        argv[argc++] = own ? "EVAL" : "EVALSHA";
        argv[argc++] = own ? rd_probe_script : rd->probe_sha;
        argv[argc++] = nkeys;
        for (size_t i = 0; i < argc; i++)
                lens[i] = strlen(argv[i]);
        for (size_t i = first; i < first + count; i++) {
                argv[argc] = (const char *)ks->bytes + ks->off[i];
                lens[argc++] = ks->len[i];
        }
        argv[argc] = rd->lfu ? "lfu" : "lru";
        lens[argc++] = 3;
        argv[argc] = after;
        lens[argc++] = strlen(after);
        rd->probes_out++;
        rd_send(rd, &(const struct rd_pending){ .req = RQ_PROBE, .first = first, .count = count,
                                                .own = own, .whole = own != NULL },
                argc, argv, lens);
}

/* The next SCAN, once nothing of the last one's batch is in flight. */
static void rd_scan_next(struct rd *rd)
{
        if (rd->ad.phase == RD_SCAN && !rd->scan_done && !rd->scan_out && rd->probes_out == 0)
                rd_scan_request(rd);
}

/*
 * The batch's keys go out in probes once the pace allows them: the server's clients have its
 * thread meanwhile. Nothing is in flight while it waits.
 */
static void rd_batch_send(struct rd *rd)
{
        if (ad_round_paced(&rd->ad, rd->batch.n)) {
                rd->paced_send = true;
                ad_round_timeouts(&rd->ad);
                return;
        }
        rd->paced_send = false;
        for (size_t i = 0; i < rd->batch.n; i += RD_PROBE_BATCH)
                rd_probe_request(rd, &rd->batch, i, rd->batch.n - i < RD_PROBE_BATCH
                                                            ? rd->batch.n - i : RD_PROBE_BATCH,
                                 NULL);
        /* The next SCAN goes once the probes answered (rd_scan_next): not behind them. */
        if (rd->batch.n == 0)
                rd_scan_next(rd);
}

/* The scan is over once the last SCAN said cursor 0 and every probe answered. */
static void rd_scan_end(struct rd *rd)
{
        if (!rd->scan_done || rd->scan_out || rd->probes_out > 0 || rd->paced_send)
                return;
        rd->ad.phase = RD_SCANNED;
        rd->info_end = (struct rd_info){ .start_usec = ca_now_usec() };
        rd_sendv(rd, RQ_INFO_END, 1, (const char *[]){ "INFO" });
}

/* A SCAN reply: its keys into the batch (copied: the reply's bytes are drained). */
static void rd_scan_reply(struct rd *rd, const struct rp_value *v, size_t n)
{
        struct rd_keyset *b = &rd->batch;
        char err[RP_ERR_MAX];
        size_t first, keys, bytes = 0, pos = 0;
        uint64_t cursor;

        rd->scan_out = false;
        if (rp_parse_scan(v, n, &cursor, &first, &keys, err, sizeof(err)) < 0)
                return ad_round_fail(&rd->ad, "bad SCAN reply: %s", err);
        for (size_t i = first; i < first + keys; i++)
                bytes += v[i].len;
        if (bytes > rd->batch_cap) {
                uint8_t *p = realloc(b->bytes, bytes);

                if (!p)
                        return ad_round_fail(&rd->ad, "out of memory for a SCAN reply of %zu "
                                             "bytes", bytes);
                b->bytes = p;
                rd->batch_cap = bytes;
        }
        if (keys > rd->batch_keys_cap) {
                uint32_t *off = realloc(b->off, keys * sizeof(*off));
                uint16_t *len;

                if (off)
                        b->off = off;
                len = off ? realloc(b->len, keys * sizeof(*len)) : NULL;
                if (!len)
                        return ad_round_fail(&rd->ad, "out of memory for a SCAN reply of %zu "
                                             "keys", keys);
                b->len = len;
                rd->batch_keys_cap = keys;
        }
        b->n = 0;
        for (size_t i = first; i < first + keys; i++) {
                rd->ad.walk_items++;
                if (v[i].len > RP_KEY_MAX || v[i].len == 0) {
                        /* Not worth a probe: never tracked (nor is a key of 0 bytes). */
                        rd->scan_long += v[i].len > RP_KEY_MAX;
                        continue;
                }
                memcpy(b->bytes + pos, v[i].str, v[i].len);
                b->off[b->n] = (uint32_t)pos;
                b->len[b->n++] = (uint16_t)v[i].len;
                pos += v[i].len;
        }
        rd->cursor = cursor;
        rd->scan_done = cursor == 0;
        if (b->n == 0 && rd->scan_done)
                return rd_scan_end(rd);
        rd_batch_send(rd);
}

/* One key as the probe saw it. */
static void rd_observe(struct rd *rd, const uint8_t *key, size_t len, uint32_t seen,
                       bool ambiguous, bool ttl)
{
        struct ad_round *r = &rd->ad;
        struct rd_key *k;
        bool used;

        if (ttl && rd->cfg.ttl_keys == RD_TTL_LEAVE) {
                /* Left to Redis: not in this scan's generation, so forgotten if it was known. */
                rd->scan_ttl++;
                return;
        }
        k = (struct rd_key *)ad_round_lookup(r, key, len);
        if (!k) {
                k = (struct rd_key *)ad_round_add(r, key, len);
                if (!k)
                        return;
                rd_key_start(rd, k, seen, ambiguous);
        } else if (k->ad.gen < r->reset_gen) {
                /* Another instance's key of that name: a new object. */
                rd_key_start(rd, k, seen, ambiguous);
        } else {
                used = rd->lfu ? seen > 0 : seen != k->seen || (k->ad.flags & RD_KEY_AMBIGUOUS);
                if (k->ad.flags & AD_ITEM_CONDEMNED) {
                        /* dry_run: out of the cache since judged; a use brings it back. */
                        if (used) {
                                k->ad.flags &= (uint8_t)~AD_ITEM_CONDEMNED;
                                k->ad.node = (struct ca_node){ 0 };
                                ca_cache_insert(r->cache, &k->ad.node);
                        }
                } else if (used && ca_node_linked(&k->ad.node)) {
                        ca_touch(r->cache, &k->ad.node);
                }
                k->seen = seen;
                k->ad.flags = (uint8_t)((k->ad.flags & ~RD_KEY_AMBIGUOUS) |
                                        (ambiguous ? RD_KEY_AMBIGUOUS : 0));
        }
        k->ad.gen = r->gen;
}

/* A probe's reply: {clock, v1, t1, v2, t2, ...} for keys [first, first + count). */
static void rd_probe_reply(struct rd *rd, const struct rd_pending *p, const struct rp_value *v,
                           size_t n)
{
        struct ad_round *r = &rd->ad;
        const struct rd_keyset *ks = p->own ? p->own : &rd->batch;
        size_t first = p->own ? 0 : p->first;
        int64_t out[1 + 2 * RD_PROBE_BATCH];
        char err[RP_ERR_MAX];
        struct rd_keyset *own;
        uint64_t clock;

        rd->probes_out--;
        if (rp_is_error(v, "NOSCRIPT")) {
                /*
                 * The server forgot it (SCRIPT FLUSH). Sent again whole, with a copy of its keys:
                 * the next SCAN's reply, already on its way, comes before this one's.
                 */
                rd->noscript++;
                ca_host_log(r->host, LOG_INFO, "redis at %s forgot the probe script: sent again "
                            "whole", r->server);
                own = rd_keyset_copy(ks, first, p->count);
                if (!own)
                        return ad_round_fail(r, "out of memory for a probe sent again");
                return rd_probe_request(rd, own, 0, p->count, own);
        }
        if (first + p->count > ks->n)
                return ad_round_fail(r, "a probe reply for keys no longer known");
        if (rp_parse_integers(v, n, 1 + 2 * p->count, out, err, sizeof(err)) < 0)
                return ad_round_fail(r, "bad reply to the probe script: %s", err);
        clock = (uint64_t)out[0];
        if (!rd->lfu && (out[0] < 0 || clock > RD_LRU_CLOCK_MASK))
                return ad_round_fail(r, "an LRU clock out of range from the probe script");
        for (size_t i = 0; i < p->count; i++) {
                int64_t val = out[1 + 2 * i], ttl = out[2 + 2 * i];
                size_t k = first + i;
                uint32_t seen;

                if (val < -1 || (rd->lfu && val > 255) || ttl < 0 || ttl > 1)
                        return ad_round_fail(r, "a probe result out of range (%" PRId64 ", %"
                                             PRId64 ")", val, ttl);
                if (val == -1)
                        continue; /* gone since SCAN returned it */
                seen = rd->lfu ? (uint32_t)val
                               : (uint32_t)((clock - (uint64_t)val) & RD_LRU_CLOCK_MASK);
                rd_observe(rd, ks->bytes + ks->off[k], ks->len[k], seen, !rd->lfu && val == 0,
                           ttl == 1);
                r->conn.steps.work++;
        }
        rd_scan_next(rd);
        rd_scan_end(rd);
}

/*
 * The INFO after the scan: whether every key's use since the last scan could be seen. No fork
 * may have run from the last scan's start (or this one's, after a restart) to this one's end:
 * its count did not move, and no child ran at the start. Under LFU, that span must also be
 * shorter than what a frequency of 0 proves.
 */
static void rd_judge_period(struct rd *rd)
{
        const struct rd_info *ref = rd->prev_known ? &rd->prev_start : &rd->info_start;
        uint64_t span = ca_now_usec() - ref->start_usec;

        rd->blind = false;
        if (ref->child || rd->info_end.forks != ref->forks) {
                rd_set_blind(rd,
                             "a fork ran during the period (BGSAVE, an AOF rewrite or a "
                             "module's child: %" PRIu64 " forks since, a child %s at its start); "
                             "Redis records no access while it runs",
                             rd->info_end.forks - ref->forks,
                             ref->child ? "running" : "not running");
                return;
        }
        if (!rd->lfu)
                return;
        if (!rd->lfu_decay_known) {
                rd_set_blind(rd, "an LFU policy, and CONFIG GET lfu-decay-time was refused: "
                             "how long a read leaves a trace is unknown");
                return;
        }
        if (rd->lfu_decay_min < 2 ||
            span + RD_LFU_MARGIN_USEC >= (rd->lfu_decay_min - 1) * RD_LFU_MINUTE_USEC) {
                rd_set_blind(rd, "an LFU policy with lfu-decay-time %" PRIu64 ": a read leaves "
                             "a trace for %" PRIu64 " minutes at the least, and %" PRIu64 " s "
                             "passed since the last scan began; set lfu-decay-time above %"
                             PRIu64, rd->lfu_decay_min,
                             rd->lfu_decay_min ? rd->lfu_decay_min - 1 : 0, span / 1000000,
                             (span + RD_LFU_MARGIN_USEC) / RD_LFU_MINUTE_USEC + 2);
                return;
        }
        /* The deletes must prove no read since this scan began. */
        rd->lfu_deadline_usec = rd->info_start.start_usec +
                                (rd->lfu_decay_min - 1) * RD_LFU_MINUTE_USEC - RD_LFU_MARGIN_USEC;
}

static void rd_info_end(struct rd *rd, const char *text, size_t len)
{
        char msg[AD_MSG_MAX];

        if (rd_info_parse(text, len, &rd->info_end, msg, sizeof(msg)) < 0)
                return ad_round_fail_kind(&rd->ad, msg, "%s", msg);
        rd_judge_period(rd);
        ad_round_walk_end(&rd->ad);
}

/* In a blind rotation every key seen counts as used (a read may have left no trace). */
static void rd_swept(struct ad_round *r, struct ad_item *it)
{
        if (rd_of(r)->blind && ca_node_linked(&it->node))
                ca_touch(r->cache, &it->node);
}

/* The scan is read and swept: its figures, and its lines. */
static void rd_walked(struct ad_round *r, uint64_t usec)
{
        struct rd *rd = rd_of(r);

        rd->keys_seen = r->walk_items;
        rd->ttl_keys = rd->scan_ttl;
        r->untracked += rd->scan_long;
        if (rd->scan_long && !rd->long_logged)
                ca_host_log(r->host, LOG_NOTICE, "%" PRIu64 " keys of redis at %s are longer "
                            "than %d bytes: they are not aged (logged once)", rd->scan_long,
                            r->server, RP_KEY_MAX);
        rd->long_logged = rd->long_logged || rd->scan_long > 0;
        if (!rd->blind && rd->blind_reason[0]) {
                ca_host_log(r->host, LOG_INFO, "redis at %s: every use can be seen again",
                            r->server);
                rd->blind_reason[0] = '\0';
        }
        rd->prev_start = rd->info_start;
        rd->prev_known = true;
        ca_host_log(r->host, LOG_DEBUG, "scan: %" PRIu64 " keys in %" PRIu64 " ms (%" PRIu64
                    " with a TTL, left to Redis), %zu tracked, %s, longest step %" PRIu64
                    " us (%" PRIu64 " us on the CPU)",
                    r->walk_items, usec / 1000, rd->scan_ttl, r->n_items,
                    rd->lfu ? "LFU" : "LRU", r->conn.steps.longest_usec,
                    r->conn.steps.longest_cpu_usec);
}

/* ---- the check: each victim still as seen, deleted by the reap script ---- */

static void rd_reap_request(struct rd *rd, bool whole)
{
        struct ad_round *r = &rd->ad;
        const char *argv[8 + 2 * RD_REAP_BATCH];
        size_t lens[8 + 2 * RD_REAP_BATCH], argc = 0, count = r->batch_end - r->checked;
        char nkeys[8], forks[24], after[24], seen[RD_REAP_BATCH][12];

        snprintf(nkeys, sizeof(nkeys), "%zu", count);
        snprintf(forks, sizeof(forks), "%" PRIu64, rd->info_end.forks);
        snprintf(after, sizeof(after), "%" PRIu64, rd->clock_after_usec);
        argv[argc++] = whole ? "EVAL" : "EVALSHA";
        argv[argc++] = whole ? rd_reap_script : rd->reap_sha;
        argv[argc++] = nkeys;
        for (size_t i = 0; i < 3; i++)
                lens[i] = strlen(argv[i]);
        for (size_t i = r->checked; i < r->batch_end; i++) {
                const struct rd_key *k = (const struct rd_key *)r->victims[i];

                argv[argc] = (const char *)k->key;
                lens[argc++] = k->ad.key_len;
        }
        argv[argc++] = rd->lfu ? "lfu" : "lru";
        argv[argc++] = after;
        argv[argc++] = forks;
        argv[argc++] = r->cfg->dry_run ? "1" : "0";
        for (size_t i = 0; i < count; i++) {
                snprintf(seen[i], sizeof(seen[i]), "%" PRIu32,
                         ((const struct rd_key *)r->victims[r->checked + i])->seen);
                argv[argc++] = seen[i];
        }
        for (size_t i = 3 + count; i < argc; i++)
                lens[i] = strlen(argv[i]);
        rd_send(rd, &(const struct rd_pending){ .req = RQ_REAP, .whole = whole }, argc, argv,
                lens);
}

/* The next batch of victims, once the pace allows it; or the check's end. */
static void rd_check(struct ad_round *r)
{
        struct rd *rd = rd_of(r);

        if (r->checked == r->n_victims)
                return ad_round_check_done(r);
        if (rd->lfu && ca_now_usec() > rd->lfu_deadline_usec) {
                /* A frequency of 0 proves nothing about the scan's time any more. */
                rd->kept_unsure += r->n_victims - r->checked;
                ca_host_log(r->host, LOG_INFO, "redis at %s: %zu victims kept: the deletes "
                            "outlasted what lfu-decay-time lets a frequency of 0 prove",
                            r->server, r->n_victims - r->checked);
                ad_round_spare_rest(r);
                return ad_round_check_done(r);
        }
        if (ad_round_paced(r, ad_round_batch(r, RD_REAP_BATCH))) {
                r->batch_end = r->checked;
                rd->paced_send = true;
                ad_round_timeouts(r);
                return;
        }
        rd->paced_send = false;
        rd_reap_request(rd, false);
}

static void rd_reap_reply(struct rd *rd, const struct rp_value *v, size_t n)
{
        struct ad_round *r = &rd->ad;
        int64_t out[1 + RD_REAP_BATCH], sample = 0;
        size_t count = r->batch_end - r->checked, deleted = 0;
        char err[RP_ERR_MAX], ex[AD_EXCERPT_BUF];

        if (rp_is_error(v, "NOSCRIPT")) {
                rd->noscript++;
                ca_host_log(r->host, LOG_INFO, "redis at %s forgot the reap script: sent again "
                            "whole", r->server);
                return rd_reap_request(rd, true);
        }
        if (v[0].type == RP_ARRAY && v[0].integer == 1 && n == 2 && v[1].type == RP_INTEGER &&
            v[1].integer == -1) {
                /* A fork since the scan: a read may have left no trace. */
                rd->kept_unsure += r->n_victims - r->checked;
                ca_host_log(r->host, LOG_INFO, "redis at %s forked since the scan: %zu victims "
                            "kept", r->server, r->n_victims - r->checked);
                ad_round_spare_rest(r);
                return ad_round_check_done(r);
        }
        if (rp_parse_integers(v, n, 1 + count, out, err, sizeof(err)) < 0 || out[0] != 0)
                return ad_round_fail(r, "bad reply to the reap script: %s",
                                     out[0] != 0 ? "a status other than 0" : err);
        for (size_t i = 0; i < count; i++) {
                struct rd_key *k = (struct rd_key *)r->victims[r->checked++];
                int64_t res = out[1 + i];

                rd->aged_total++;
                if (res > 0)
                        sample = res;
                if (res >= 0) {
                        if (r->cfg->dry_run) {
                                ad_round_condemn(r, &k->ad);
                                ca_host_log(r->host, LOG_DEBUG, "dry run: would delete \"%s\"",
                                            rd_key_excerpt(k, ex));
                                continue;
                        }
                        r->deleted++;
                        deleted++;
                        ad_round_forget(r, &k->ad);
                } else if (res == -1) {
                        r->gone++;
                        ad_round_forget(r, &k->ad);
                } else if (res == -2) {
                        rd->kept_touched++;
                        ad_round_spare(r, &k->ad);
                } else {
                        return ad_round_fail(r, "a reap result out of range (%" PRId64 ")", res);
                }
        }
        /* The batch's sample stands for each of its deletes. */
        rd->bytes_freed += (uint64_t)sample * deleted;
        rd_check(r);
}

/* The rotation's aging is done and its last check settled: INFO for the memory, then a line. */
static void rd_rotation_end(struct ad_round *r)
{
        if (r->phase != AD_PHASE_IDLE)
                return;
        r->phase = RD_MEMORY;
        rd_sendv(rd_of(r), RQ_INFO_MEMORY, 2, (const char *[]){ "INFO", "memory" });
}

static void rd_summary(struct ad_round *r, char *buf, size_t len)
{
        struct rd *rd = rd_of(r);

        snprintf(buf, len, "%" PRIu64 " deleted (%" PRIu64 " bytes), %" PRIu64
                 " kept as used since, %" PRIu64 " kept unsure, %" PRIu64 " gone, %" PRIu64
                 " would delete; used_memory %" PRIu64 " -> %" PRIu64 ", rss %" PRIu64
                 " -> %" PRIu64, r->deleted, rd->bytes_freed, rd->kept_touched, rd->kept_unsure,
                 r->gone, r->would_delete, rd->used_memory_before, rd->used_memory_after,
                 rd->rss_before, rd->rss_after);
}

static void rd_info_memory(struct rd *rd, const char *text, size_t len)
{
        if (rp_info_u64(text, len, "used_memory", UINT64_MAX, &rd->used_memory_after) < 0 ||
            rp_info_u64(text, len, "used_memory_rss", UINT64_MAX, &rd->rss_after) < 0)
                return ad_round_fail(&rd->ad, "INFO memory without used_memory or "
                                     "used_memory_rss");
        ad_round_summary(&rd->ad);
        ad_round_ready(&rd->ad);
}

/* ---- reading replies ---- */

static void rd_error_reply(struct rd *rd, enum rd_req req, const struct rp_value *v)
{
        char ex[AD_EXCERPT_BUF], cmd[sizeof(rd->denied)];

        if (rd_denial_of(v, cmd, sizeof(cmd)) && !cmd[0] && req != RQ_ACL)
                return rd_acl_request(rd, req);
        if (rd_denial_of(v, cmd, sizeof(cmd)))
                return rd_denied(rd, cmd, req);

        if (rp_is_error(v, "NOAUTH"))
                return ad_round_fail(&rd->ad, "%s: the server wants a password (password_file, "
                                     "user): \"%s\"", rd_req_name[req],
                                     ad_excerpt(v->str, v->len, ex));
        ad_round_fail_kind(&rd->ad, rd_req_name[req], "%s refused: \"%s\"", rd_req_name[req],
                           ad_excerpt(v->str, v->len, ex));
}

static bool rd_is_ok(const struct rp_value *v, size_t n)
{
        return n == 1 && v->type == RP_STATUS && v->len == 2 && memcmp(v->str, "OK", 2) == 0;
}

static void rd_reply(struct rd *rd, const struct rp_value *v, size_t n)
{
        struct rd_pending p = rd->queue[rd->q_head];
        char err[RP_ERR_MAX], ex[AD_EXCERPT_BUF];
        uint64_t u;
        int r;

        rd->q_head = (rd->q_head + 1) % RD_QUEUE_MAX;
        rd->q_len--;
        ad_round_timeouts(&rd->ad);
        /* Asking which command was refused: what was owed before is let go. */
        if (rd->naming && p.req != RQ_ACL) {
                rd_keyset_free(p.own);
                return;
        }
        /* NOSCRIPT is an answer to EVALSHA (the script goes again whole), not to EVAL. */
        if (v->type == RP_ERROR && p.req != RQ_CONFIG &&
            !((p.req == RQ_PROBE || p.req == RQ_REAP) && !p.whole && rp_is_error(v, "NOSCRIPT"))) {
                rd_keyset_free(p.own);
                return rd_error_reply(rd, p.req, v);
        }
        /* What was refused went through: a grant (older servers cannot say it otherwise). */
        if (rd->denied[0] && p.req == rd->denied_req && p.req != RQ_ACL && v->type != RP_ERROR)
                rd_allowed(rd);
        switch (p.req) {
        case RQ_AUTH:
        case RQ_SELECT:
                if (!rd_is_ok(v, n))
                        return ad_round_fail(&rd->ad, "%s answered %s", rd_req_name[p.req],
                                             v->type == RP_STATUS || v->type == RP_BULK
                                                     ? ad_excerpt(v->str, v->len, ex) : "no OK");
                return;
        case RQ_LOAD_PROBE:
        case RQ_LOAD_REAP:
                if (rp_parse_sha(v, n, p.req == RQ_LOAD_PROBE ? rd->probe_sha : rd->reap_sha, err,
                                 sizeof(err)) < 0)
                        return ad_round_fail(&rd->ad, "bad reply to SCRIPT LOAD: %s", err);
                if (p.req == RQ_LOAD_REAP)
                        rd_hello_done(rd);
                return;
        case RQ_INFO:
        case RQ_INFO_END:
        case RQ_INFO_MEMORY:
                if (n != 1 || v->type != RP_BULK)
                        return ad_round_fail(&rd->ad, "bad reply to INFO: not a bulk string");
                if (p.req == RQ_INFO)
                        return rd_info_start(rd, v->str, v->len);
                if (p.req == RQ_INFO_END)
                        return rd_info_end(rd, v->str, v->len);
                return rd_info_memory(rd, v->str, v->len);
        case RQ_CONFIG:
                if (v->type == RP_ERROR) {
                        rd->lfu_decay_known = false;
                        ca_host_log(rd->ad.host, LOG_DEBUG, "redis at %s: CONFIG GET refused: %s",
                                    rd->ad.server, ad_excerpt(v->str, v->len, ex));
                } else {
                        r = rp_parse_config_u64(v, n, "lfu-decay-time", UINT32_MAX, &u, err,
                                                sizeof(err));
                        if (r == -EBADMSG)
                                return ad_round_fail(&rd->ad, "bad reply to CONFIG GET: %s", err);
                        rd->lfu_decay_known = r == 0;
                        rd->lfu_decay_min = r == 0 ? u : 0;
                }
                return rd_scan_or_ask(rd);
        case RQ_ACL:
                return rd_acl_reply(rd, v, n);
        case RQ_SCAN:
                return rd_scan_reply(rd, v, n);
        case RQ_PROBE:
                rd_probe_reply(rd, &p, v, n);
                rd_keyset_free(p.own);
                return;
        case RQ_REAP:
                return rd_reap_reply(rd, v, n);
        }
}

/* One whole reply from @in. */
static int rd_take(struct ad_round *r, struct evbuffer *in)
{
        static struct rp_value values[RP_VALUES_MAX];
        struct rd *rd = rd_of(r);
        size_t avail = evbuffer_get_length(in), used, n;
        char err[RP_ERR_MAX], ex[AD_EXCERPT_BUF];
        const char *buf;
        int e;

        if (avail == 0 || avail < rd->need)
                return AD_REPLY_MORE;
        buf = (const char *)evbuffer_pullup(in, (ev_ssize_t)avail);
        e = rp_parse(buf, avail, values, RP_VALUES_MAX, &n, &used, err, sizeof(err));
        if (e == -EAGAIN) {
                rd->need = used;
                return AD_REPLY_MORE;
        }
        if (e < 0) {
                ad_round_fail_kind(r, err, "bad reply to %s: %s: \"%s\"",
                                   rd_req_name[rd->queue[rd->q_head].req], err,
                                   ad_excerpt(buf, avail, ex));
                return AD_REPLY_STOP;
        }
        rd->need = 0;
        rd_reply(rd, values, n);
        /* A failure freed the connection, and @in with it. */
        if (r->conn.bev)
                evbuffer_drain(in, used);
        return AD_REPLY_TAKEN;
}

/* A step of its own: a paced send. */
static bool rd_step(struct ad_round *r)
{
        struct rd *rd = rd_of(r);

        if (rd->paced_send && r->phase == RD_SCAN)
                rd_batch_send(rd);
        else if (rd->paced_send && r->phase == AD_PHASE_CHECK)
                rd_check(r);
        else
                return false;
        return true;
}

/* ---- the policy ---- */

/*
 * A rotation that could not see every use, or a key in use the very second it was seen:
 * counted as used.
 */
static bool rd_keep(struct ad_round *r, struct ad_item *it)
{
        return rd_of(r)->blind || (it->flags & RD_KEY_AMBIGUOUS);
}

static void rd_stats(struct ad_round *r, ca_stat_emit_t emit, void *eu)
{
        struct rd *rd = rd_of(r);

        AD_GAUGE("scan_keys", "keys", "keys the last scan returned", rd->keys_seen);
        AD_GAUGE("ttl_keys", "keys", "keys of the last scan with a TTL, left to Redis",
                 rd->ttl_keys);
        AD_GAUGE("requests_in_flight", "requests", "requests sent and not yet answered",
                 rd->q_len);
        AD_COUNTER("aged", "keys", "victims checked: idle past their age", rd->aged_total);
        AD_COUNTER("kept_touched", "keys", "victims read or written since the scan, kept",
                   rd->kept_touched);
        AD_COUNTER("kept_unsure", "keys",
                   "victims kept: a fork since the scan, or LFU's window passed", rd->kept_unsure);
        AD_COUNTER("bytes_freed", "bytes",
                   "estimated: MEMORY USAGE of one victim of each batch, times the keys deleted",
                   rd->bytes_freed);
        AD_GAUGE("used_memory_before", "bytes",
                 "the server's used_memory as the last rotation began", rd->used_memory_before);
        AD_GAUGE("used_memory_after", "bytes",
                 "the server's used_memory as the last rotation ended", rd->used_memory_after);
        AD_GAUGE("used_memory_rss_before", "bytes",
                 "the server's used_memory_rss as the last rotation began", rd->rss_before);
        AD_GAUGE("used_memory_rss_after", "bytes",
                 "the server's used_memory_rss as the last rotation ended", rd->rss_after);
        AD_COUNTER("blind_rotations", "rotations",
                   "rotations that could not see every use (a fork, LFU decay): nothing deleted",
                   rd->blind_rotations);
        AD_COUNTER("scripts_reloaded", "scripts", "scripts the server had forgotten (NOSCRIPT)",
                   rd->noscript);
        AD_GAUGE("acl_denied", NULL,
                 "1 while the ACL user may not run a command the adapter needs (nothing deleted)",
                 rd->denied[0] != '\0');
}

/* ---- the instance ---- */

/*
 * The password, from a file the daemon may trust (trust.h: root's or its own, writable by
 * nobody else, reached through directories only they may change, no symlink swapped in) that
 * nobody but its group may read either, by its mode or by its ACL (fd_readable_by_others()).
 * One line; a final newline is not part of it.
 */
static int rd_password_read(struct ca_host *host, const struct ca_section *s, const char *path,
                            char **ret, size_t *ret_len)
{
        char reason[512], buf[RD_PASSWORD_MAX + 2];
        struct stat st;
        ssize_t n;
        int fd, r;

        r = trust_open(path, &fd, reason, sizeof(reason));
        if (r < 0) {
                ca_host_key_error(host, s, "password_file", "%s", reason);
                return r;
        }
        if (fstat(fd, &st) < 0) {
                r = -errno;
                ca_host_key_error(host, s, "password_file", "%s: %s", path, strerror(-r));
                goto out_close;
        }
        r = fd_readable_by_others(fd, &st, path, reason, sizeof(reason));
        if (r < 0) {
                ca_host_key_error(host, s, "password_file", "%s", reason);
                goto out_close;
        }
        n = read(fd, buf, sizeof(buf));
        if (n < 0) {
                r = -errno;
                ca_host_key_error(host, s, "password_file", "%s: %s", path, strerror(-r));
                goto out_close;
        }
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                n--;
        if (n == 0 || n > RD_PASSWORD_MAX || memchr(buf, '\n', (size_t)n) ||
            memchr(buf, '\0', (size_t)n)) {
                ca_host_key_error(host, s, "password_file", "%s: %s", path,
                                  n == 0 ? "empty" : n > RD_PASSWORD_MAX
                                  ? "longer than " STR(RD_PASSWORD_MAX) " bytes"
                                  : "more than one line, or a NUL byte");
                r = -EINVAL;
                goto out_close;
        }
        r = 0;
        if (ret) {
                *ret = malloc((size_t)n + 1);
                if (!*ret) {
                        r = -ENOMEM;
                        goto out_close;
                }
                memcpy(*ret, buf, (size_t)n);
                (*ret)[n] = '\0';
                *ret_len = (size_t)n;
        }
out_close:
        explicit_bzero(buf, sizeof(buf));
        close(fd);
        return r;
}

/* A user needs a password; the password's file is checked as it will be read. */
static int rd_validate(struct ca_host *host, const struct ca_section *s, const void *config)
{
        const struct rd_config *cfg = config;

        if (cfg->user && !cfg->password_file) {
                ca_host_key_error(host, s, "user", "a user needs a password_file");
                return -EINVAL;
        }
        if (cfg->password_file)
                return rd_password_read(host, s, cfg->password_file, NULL, NULL);
        return 0;
}

/* The section's text does not outlive create(): copies of what is kept, and the password. */
static int rd_setup(struct ad_round *r, const struct ca_section *s)
{
        struct rd *rd = rd_of(r);
        const char *user = rd->cfg.user, *match = rd->cfg.match;
        const char *password_file = rd->cfg.password_file;

        rd->cfg.password_file = NULL;
        rd->cfg.user = user ? strdup(user) : NULL;
        rd->cfg.match = match ? strdup(match) : NULL;
        if ((user && !rd->cfg.user) || (match && !rd->cfg.match))
                return -ENOMEM;
        if (password_file)
                return rd_password_read(r->host, s, password_file, &rd->password,
                                        &rd->password_len);
        return 0;
}

static void rd_cleanup(struct ad_round *r)
{
        struct rd *rd = rd_of(r);

        free(rd->batch.bytes);
        free(rd->batch.off);
        free(rd->batch.len);
        free((char *)rd->cfg.user);
        free((char *)rd->cfg.match);
        if (rd->password)
                explicit_bzero(rd->password, rd->password_len);
        free(rd->password);
}

static void rd_describe(struct ad_round *r, char *buf, size_t len)
{
        struct rd *rd = rd_of(r);

        snprintf(buf, len, ", db %" PRIu64 "%s%s", rd->cfg.db,
                 rd->cfg.match ? ", keys matching " : "", rd->cfg.match ? rd->cfg.match : "");
}

/* What the frame asks of Redis (adapter-round.h), a line for each kind of answer. */
static const struct ad_round_ops rd_round_ops = {
        .keys = rd_keys, .instance_size = sizeof(struct rd),
        .config_offset = offsetof(struct rd, cfg), .validate = rd_validate, .setup = rd_setup,
        .cleanup = rd_cleanup, .describe = rd_describe,
        .name = "redis", .noun = "key", .walk = "scan", .max_key = "max_keys",
        .untracked_help = "keys of the last scan over max_keys or longer than 1024 bytes, not aged",
        .work_unit = "replies or keys", .phase_names = rd_phase_name,
        .n_phases = sizeof(rd_phase_name) / sizeof(rd_phase_name[0]),
        .key_offset = offsetof(struct rd_key, key), .key_max = RP_KEY_MAX,
        .read_max = RD_READ_MAX, .input_max = RD_INPUT_MAX, .reply_clock_every = 1,
        .rate_default = RD_RATE_DEFAULT, .deletes_paced_apart = true,
        .connected = rd_hello, .refresh = rd_refresh, .reply = rd_take, .waiting = rd_waiting,
        .step = rd_step, .check = rd_check, .dropped = rd_dropped, .failed = rd_failed,
        .walked = rd_walked, .rotation_end = rd_rotation_end, .summary = rd_summary,
        .keep = rd_keep, .swept = rd_swept, .stats = rd_stats,
};

AD_ROUND_PLUGIN(rd_round_ops, "redis",
                "the keys of a Redis server: idle ones deleted by a check-and-UNLINK script");
