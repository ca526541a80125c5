/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration parser: values (durations, booleans, integers), golden files under
 * fixtures/config/ (good/: what they must load to; bad/NAME.conf: exactly the messages in
 * bad/NAME.expected, where @DIR@ stands for the fixtures directory), and generated files
 * for limits (line length, number of sections, keys and drop-ins) and odd inputs.
 */

#include <criterion/criterion.h>
#include <errno.h>
#include <ftw.h>
#include <ini.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "../daemon/config.h"
#include "cacheage-build.h" /* CA_CONFIG_FILE */
#include "test-util.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif

/* Every test ends with no leak, error paths included (a leak is only printed otherwise). */
static void check_leaks(void)
{
#ifdef HAVE_LSAN
        cr_assert_eq(__lsan_do_recoverable_leak_check(), 0, "memory leaked (see above)");
#endif
}

TestSuite(config, .fini = check_leaks);

/* ---- helpers ---- */

static char *fixtures(const char *rel)
{
        const char *src = test_env("CA_TEST_SRCDIR");
        char *p;

        cr_assert(asprintf(&p, "%s/fixtures/config%s%s", src, rel ? "/" : "", rel ? rel : "") > 0);
        return p;
}

/* Replace every @KEY@ in @s by @value; returns a new string. */
static char *subst(const char *s, const char *key, const char *value)
{
        size_t kl = strlen(key), vl = strlen(value), n = 0;
        const char *p;
        char *out, *o;

        for (p = s; (p = strstr(p, key)); p += kl)
                n++;
        out = malloc(strlen(s) + n * vl + 1);
        cr_assert(out);
        for (o = out; *s;) {
                if (strncmp(s, key, kl) == 0) {
                        memcpy(o, value, vl);
                        o += vl;
                        s += kl;
                } else
                        *o++ = *s++;
        }
        *o = '\0';
        return out;
}

/* The built-in plugin_dir, as an empty file loads it. */
static char *default_plugin_dir(void)
{
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = NULL;
        char *path = fixtures("good/empty.conf"), *r;

        cr_assert_eq(ca_conf_load(path, &conf, &errors), 0);
        r = strdup(conf->plugin_dir);
        ca_conf_free(conf);
        free(path);
        return r;
}

static void print_errors(const struct ca_errors *e)
{
        for (size_t i = 0; i < e->n; i++)
                cr_log_info("got: %s", e->v[i]);
}

static void expect_errors(const struct ca_errors *got, const char *const *want, size_t n_want)
{
        if (got->n != n_want)
                print_errors(got);
        cr_assert_eq(got->n, n_want, "%zu messages, expected %zu", got->n, n_want);
        for (size_t i = 0; i < n_want; i++)
                cr_expect_str_eq(got->v[i], want[i], "message %zu", i);
}

/* Load bad/NAME.conf: -EINVAL, *ret untouched, exactly the messages of bad/NAME.expected. */
static void check_bad_fixture(const char *name)
{
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = (struct ca_conf *)0x1; /* must stay as it is */
        char *dir = fixtures(NULL), *plugin_dir = default_plugin_dir();
        char *rel, *path, *expected_path, *text, *t1, *t2, *line, *save;
        const char *want[64];
        size_t n_want = 0;
        FILE *f;
        long len;

        cr_assert(asprintf(&rel, "bad/%s.conf", name) > 0);
        path = fixtures(rel);
        free(rel);
        cr_assert(asprintf(&rel, "bad/%s.expected", name) > 0);
        expected_path = fixtures(rel);
        free(rel);

        f = fopen(expected_path, "re");
        cr_assert(f, "%s: %m", expected_path);
        cr_assert_eq(fseek(f, 0, SEEK_END), 0);
        len = ftell(f);
        rewind(f);
        text = calloc(1, (size_t)len + 1);
        cr_assert(text);
        cr_assert_eq(fread(text, 1, (size_t)len, f), (size_t)len);
        fclose(f);
        t1 = subst(text, "@DIR@", dir);
        t2 = subst(t1, "@PLUGIN_DIR@", plugin_dir);
        for (line = strtok_r(t2, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                cr_assert_lt(n_want, sizeof(want) / sizeof(want[0]));
                want[n_want++] = line;
        }
        cr_assert_gt(n_want, 0, "%s lists no message", expected_path);

        cr_assert_eq(ca_conf_load(path, &conf, &errors), -EINVAL);
        cr_assert_eq(conf, (struct ca_conf *)0x1, "*ret written on failure");
        expect_errors(&errors, want, n_want);

        /* The partial load says the same, and hands out what it could read. */
        ca_errors_clear(&errors);
        conf = NULL;
        cr_assert_eq(ca_conf_load_partial(path, &conf, &errors), -EINVAL);
        cr_assert_not_null(conf);
        expect_errors(&errors, want, n_want);
        conf = ca_conf_free(conf);

        ca_errors_clear(&errors);
        free(text);
        free(t1);
        free(t2);
        free(path);
        free(expected_path);
        free(dir);
        free(plugin_dir);
}

/* Load @path, which must succeed without a message. */
static struct ca_conf *load_ok(const char *path)
{
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = NULL;
        int r;

        r = ca_conf_load(path, &conf, &errors);
        if (r != 0)
                print_errors(&errors);
        cr_assert_eq(r, 0, "loading %s: %s", path, strerror(-r));
        cr_assert_eq(errors.n, 0);
        cr_assert_not_null(conf);
        return conf;
}

/* Load @path, which must fail with -EINVAL and exactly the messages @want. */
static void load_bad(const char *path, const char *const *want, size_t n_want)
{
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = NULL;

        cr_assert_eq(ca_conf_load(path, &conf, &errors), -EINVAL);
        cr_assert_null(conf);
        expect_errors(&errors, want, n_want);
        ca_errors_clear(&errors);
}

static const struct ca_conf_key *find_key(const struct ca_conf_cache *c, const char *key)
{
        for (size_t i = 0; i < c->n_keys; i++)
                if (strcmp(c->keys[i].key, key) == 0)
                        return &c->keys[i];
        return NULL;
}

#define SEC 1000000ULL
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)

/* ---- durations ---- */

Test(config, duration_valid)
{
        static const struct {
                const char *s;
                uint64_t usec;
        } t[] = {
                { "250ms", 250000 },
                { "30s", 30 * SEC },
                { "5min", 5 * MIN },
                { "1h", HOUR },
                { "2d", 2 * DAY },
                { "500us", 500 },
                { "1w", 7 * DAY },
                { "1h 30min", HOUR + 30 * MIN },
                { "1h30min", HOUR + 30 * MIN },
                { "1h 1h", 2 * HOUR },
                { "5 min", 5 * MIN },
                { "  30s  ", 30 * SEC },
                { "1d\t2h", DAY + 2 * HOUR },
                { "60", 60 * SEC },
                { "0", 0 },
                { "0s", 0 },
                { "007s", 7 * SEC },
                { "2 minutes 3 seconds", 2 * MIN + 3 * SEC },
                { "1m", MIN },
                { "3hr", 3 * HOUR },
                { "1usec 1msec 1sec", 1 + 1000 + SEC },
                { "2 weeks 1 day", 15 * DAY },
                { "18446744073709551615us", UINT64_MAX },
        };

        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                uint64_t usec = 12345;

                cr_expect_eq(ca_parse_duration(t[i].s, &usec), 0, "\"%s\" refused", t[i].s);
                cr_expect_eq(usec, t[i].usec, "\"%s\" = %llu, expected %llu", t[i].s,
                             (unsigned long long)usec, (unsigned long long)t[i].usec);
        }
        /* The largest bare number of seconds that still fits. */
        {
                char s[32];
                uint64_t usec;

                snprintf(s, sizeof(s), "%llu", (unsigned long long)(UINT64_MAX / SEC));
                cr_expect_eq(ca_parse_duration(s, &usec), 0);
                cr_expect_eq(usec, UINT64_MAX / SEC * SEC);
        }
}

Test(config, duration_invalid)
{
        static const char *const einval[] = {
                "", " ", "-5s", "+5s", "5 parsecs", "1.5s", "s", "5S", "5Min", "1h 30",
                "30 5", "5sec5", "abc", "5 s s", "1 h-", "5s,", "0x10s", "1e3s", "µs",
                "5m s", "--", "5ms5ms5", "1 fortnight",
                /* syntax wins over overflow */
                "99999999999999999999999 parsecs",
        };
        static const char *const erange[] = {
                "18446744073709551616us", "18446744073709551615s", "99999999999999999999999",
                "213503982336d", "18446744073709551615us 1us", "30500569 weeks", "15250285w 15250285w",
        };

        for (size_t i = 0; i < sizeof(einval) / sizeof(einval[0]); i++) {
                uint64_t usec = 42;

                cr_expect_eq(ca_parse_duration(einval[i], &usec), -EINVAL, "\"%s\"", einval[i]);
                cr_expect_eq(usec, 42, "\"%s\" wrote its output on failure", einval[i]);
        }
        for (size_t i = 0; i < sizeof(erange) / sizeof(erange[0]); i++) {
                uint64_t usec = 42;

                cr_expect_eq(ca_parse_duration(erange[i], &usec), -ERANGE, "\"%s\"", erange[i]);
                cr_expect_eq(usec, 42);
        }
        cr_expect_eq(ca_parse_duration(NULL, &(uint64_t){ 0 }), -EINVAL);
}

Test(config, duration_format)
{
        static const struct {
                uint64_t usec;
                const char *s;
        } t[] = {
                { 0, "0" },
                { 1, "1us" },
                { 999, "999us" },
                { 1000, "1ms" },
                { 1500, "1ms 500us" },
                { 250000, "250ms" },
                { SEC, "1s" },
                { 90 * SEC, "1min 30s" },
                { HOUR + 30 * MIN, "1h 30min" },
                { 2 * DAY, "2d" },
                { 7 * DAY, "1w" },
                { 8 * DAY + 1, "1w 1d 1us" },
                { 10000, "10ms" },
                { UINT64_MAX, "30500568w 6d 8h 1min 49s 551ms 615us" },
        };
        char buf[CA_DURATION_MAX_STR];

        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
                cr_expect_str_eq(ca_format_duration(t[i].usec, buf, sizeof(buf)), t[i].s);
}

/* What ca_format_duration() writes, ca_parse_duration() reads back exactly. */
Test(config, duration_round_trip)
{
        char buf[CA_DURATION_MAX_STR];
        uint64_t v = 1, back;

        for (int i = 0; i < 2000; i++) {
                cr_assert_eq(ca_parse_duration(ca_format_duration(v, buf, sizeof(buf)), &back), 0,
                             "\"%s\"", buf);
                cr_assert_eq(back, v, "\"%s\"", buf);
                v = v * 3 + (uint64_t)i; /* wraps: every magnitude and digit pattern */
        }
        ca_format_duration(UINT64_MAX, buf, sizeof(buf));
        cr_assert_eq(ca_parse_duration(buf, &back), 0);
        cr_assert_eq(back, UINT64_MAX);
}

Test(config, duration_format_truncates)
{
        char buf[5];

        memset(buf, 'x', sizeof(buf));
        cr_expect_str_eq(ca_format_duration(90 * SEC, buf, sizeof(buf)), "1min");
        memset(buf, 'x', sizeof(buf));
        cr_expect_str_eq(ca_format_duration(HOUR + 30 * MIN, buf, 3), "1h");
        cr_expect_str_eq(ca_format_duration(1, buf, 1), "");
}

/* ---- booleans and integers ---- */

Test(config, parse_bool)
{
        static const char *const yes[] = { "1", "yes", "true", "on", "YES", "True", "ON" };
        static const char *const no[] = { "0", "no", "false", "off", "NO", "False", "oFF" };
        static const char *const bad[] = { "", "y", "n", "2", "yess", " yes", "yes ", "enabled",
                                           "-1", "10" };

        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
                cr_expect_eq(ca_parse_bool(yes[i]), 1, "\"%s\"", yes[i]);
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
                cr_expect_eq(ca_parse_bool(no[i]), 0, "\"%s\"", no[i]);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                cr_expect_eq(ca_parse_bool(bad[i]), -EINVAL, "\"%s\"", bad[i]);
        cr_expect_eq(ca_parse_bool(NULL), -EINVAL);
}

Test(config, parse_uint)
{
        static const struct {
                const char *s;
                uint64_t min, max;
                int r;
                uint64_t v;
        } t[] = {
                { "0", 0, 10, 0, 0 },
                { "10", 0, 10, 0, 10 },
                { "007", 0, 10, 0, 7 },
                { "11", 0, 10, -ERANGE, 0 },
                { "0", 1, 10, -ERANGE, 0 },
                { "1000000", 1, 1000000, 0, 1000000 },
                { "1000001", 1, 1000000, -ERANGE, 0 },
                { "18446744073709551615", 0, UINT64_MAX, 0, UINT64_MAX },
                { "18446744073709551616", 0, UINT64_MAX, -ERANGE, 0 },
                { "99999999999999999999999", 0, UINT64_MAX, -ERANGE, 0 },
                { "", 0, 10, -EINVAL, 0 },
                { "-1", 0, 10, -EINVAL, 0 },
                { "+1", 0, 10, -EINVAL, 0 },
                { " 1", 0, 10, -EINVAL, 0 },
                { "1 ", 0, 10, -EINVAL, 0 },
                { "0x1", 0, 10, -EINVAL, 0 },
                { "1.0", 0, 10, -EINVAL, 0 },
                { "1e1", 0, 100, -EINVAL, 0 },
                { "ten", 0, 10, -EINVAL, 0 },
        };

        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                uint64_t v = 4242;

                cr_expect_eq(ca_parse_uint(t[i].s, t[i].min, t[i].max, &v), t[i].r, "\"%s\"",
                             t[i].s);
                cr_expect_eq(v, t[i].r == 0 ? t[i].v : 4242, "\"%s\"", t[i].s);
        }
}

/* ---- error lists ---- */

Test(config, errors_add_clear)
{
        struct ca_errors e = { 0 };

        ca_errors_add(&e, "%s:%d: %s", "f", 3, "one");
        ca_errors_add(&e, "two");
        cr_assert_eq(e.n, 2);
        cr_expect_str_eq(e.v[0], "f:3: one");
        cr_expect_str_eq(e.v[1], "two");
        ca_errors_clear(&e);
        cr_expect_eq(e.n, 0);
        cr_expect_null(e.v);
        ca_errors_clear(&e);  /* twice is fine */
        ca_errors_clear(NULL);
        ca_errors_add(NULL, "nowhere %d", 1);
}

/* ---- good files ---- */

Test(config, good_full_with_dropins)
{
        char *path = fixtures("good/full.conf"), *d10 = fixtures("good/full.conf.d/10-a.conf"),
             *d20 = fixtures("good/full.conf.d/20-b.conf");
        struct ca_conf *conf = load_ok(path);
        const struct ca_conf_cache *c;
        const struct ca_conf_key *k;

        /* Main file, then the two *.conf drop-ins in order; README, *.disabled, .hidden not. */
        cr_assert_eq(conf->n_files, 3);
        cr_expect_str_eq(conf->files[0], path);
        cr_expect_str_eq(conf->files[1], d10);
        cr_expect_str_eq(conf->files[2], d20);

        /* [daemon]: 30s in the main file, 45s in 10-a, 2min in 20-b: the last wins. */
        cr_expect_eq(conf->interval_usec, 2 * MIN);
        cr_expect_str_eq(conf->plugin_dir, "/opt/cacheage/plugins");
        cr_expect_eq(conf->slice_budget, 4096);
        cr_expect_eq(conf->slice_time_usec, 500);
        cr_expect_float_eq(conf->idle_cpu_pressure, 12.5, 1e-9);
        cr_expect_float_eq(conf->idle_memory_pressure, 5.0, 1e-9);
        cr_expect_eq(conf->max_defer, 8); /* 7, then 10-a */
        cr_expect_eq(conf->log_level, LOG_DEBUG);

        /* Caches in order of first appearance, whichever file continues them. */
        cr_assert_eq(conf->n_caches, 3);
        cr_expect_str_eq(conf->caches[0].name, "dentries");
        cr_expect_str_eq(conf->caches[1].name, "mc.main-1");
        cr_expect_str_eq(conf->caches[2].name, "files");

        c = ca_conf_find_cache(conf, "dentries");
        cr_assert_eq(c, &conf->caches[0]);
        cr_expect_str_eq(c->adapter, "dcache");
        cr_expect_str_eq(c->file, path);
        cr_expect_eq(c->line, 14);
        cr_expect_eq(c->interval_usec, HOUR + 30 * MIN);
        cr_expect_eq(c->params.single_use_age, 3);
        cr_expect_eq(c->params.max_age, 20);     /* 16, then 10-a */
        cr_expect_eq(c->enabled, true);          /* no, then yes in 20-b */
        cr_assert_eq(c->n_keys, 2);
        k = find_key(c, "source");
        cr_assert_not_null(k);
        cr_expect_str_eq(k->value, "strace:/var/log/trace.log");
        cr_expect_str_eq(k->file, path);
        cr_expect_eq(k->line, 20);
        /* speed: 10 (main), 20 (10-a), 40 (20-b): value and origin follow the last file. */
        k = find_key(c, "speed");
        cr_assert_not_null(k);
        cr_expect_str_eq(k->value, "40");
        cr_expect_str_eq(k->file, d20);
        cr_expect_eq(k->line, 6);
        cr_expect_eq(k, &c->keys[1], "an override keeps the key's place");

        c = ca_conf_find_cache(conf, "mc.main-1");
        cr_assert_not_null(c);
        cr_expect_str_eq(c->adapter, "memcached");
        cr_expect_eq(c->interval_usec, 10 * SEC); /* from 20-b */
        cr_expect_eq(c->params.single_use_age, CA_SINGLE_USE_AGE_DEFAULT);
        cr_expect_eq(c->params.max_age, CA_MAX_AGE_DEFAULT);
        cr_expect_eq(c->enabled, true);
        cr_assert_eq(c->n_keys, 1);
        cr_expect_str_eq(c->keys[0].key, "server");
        cr_expect_str_eq(c->keys[0].value, "127.0.0.1:11211");

        c = ca_conf_find_cache(conf, "files");
        cr_assert_not_null(c);
        cr_expect_str_eq(c->adapter, "files");
        cr_expect_str_eq(c->file, d10);
        cr_expect_eq(c->line, 10);
        cr_expect_eq(c->interval_usec, 0, "0 = the daemon's default");
        cr_assert_eq(c->n_keys, 1);
        cr_expect_str_eq(c->keys[0].value, "/var/cache/app");

        cr_expect_null(ca_conf_find_cache(conf, "nope"));
        cr_expect_null(ca_conf_find_cache(conf, "Dentries"));
        cr_expect_null(ca_conf_find_cache(NULL, "dentries"));

        cr_expect_null(ca_conf_free(conf));
        free(path);
        free(d10);
        free(d20);
}

Test(config, good_defaults)
{
        char *path = fixtures("good/defaults.conf");
        struct ca_conf *conf = load_ok(path);
        const struct ca_conf_cache *c;

        cr_expect_eq(conf->interval_usec, 60 * SEC);
        cr_expect_not_null(conf->plugin_dir);
        cr_expect_eq(conf->plugin_dir[0], '/');
        cr_expect_eq(conf->slice_budget, CA_SLICE_NODES);
        cr_expect_eq(conf->slice_time_usec, 2000);
        cr_expect_float_eq(conf->idle_cpu_pressure, 20.0, 1e-9);
        cr_expect_float_eq(conf->idle_memory_pressure, 10.0, 1e-9);
        cr_expect_eq(conf->max_defer, 3);
        cr_expect_eq(conf->log_level, LOG_INFO);
        cr_assert_eq(conf->n_caches, 1);
        c = &conf->caches[0];
        cr_expect_str_eq(c->name, "only");
        cr_expect_str_eq(c->adapter, "dcache");
        cr_expect_eq(c->line, 1);
        cr_expect_eq(c->interval_usec, 0);
        cr_expect_eq(c->params.single_use_age, CA_SINGLE_USE_AGE_DEFAULT);
        cr_expect_eq(c->params.max_age, CA_MAX_AGE_DEFAULT);
        cr_expect_eq(c->enabled, true);
        cr_expect_eq(c->n_keys, 0);
        cr_expect_eq(conf->n_files, 1, "no drop-in directory is fine");
        ca_conf_free(conf);
        free(path);
}

Test(config, good_empty)
{
        char *path = fixtures("good/empty.conf");
        struct ca_conf *conf = load_ok(path);

        cr_expect_eq(conf->n_caches, 0);
        cr_expect_null(conf->caches);
        cr_expect_eq(conf->interval_usec, 60 * SEC);
        cr_expect_eq(conf->n_files, 1);
        cr_expect_str_eq(conf->files[0], path);
        ca_conf_free(conf);
        free(path);
}

Test(config, good_syntax)
{
        char *path = fixtures("good/syntax.conf");
        struct ca_conf *conf = load_ok(path);
        const struct ca_conf_cache *c;
        static const struct {
                const char *key, *value;
                unsigned line;
        } want[] = {
                { "path", "/var/cache/a#b", 10 },  /* '#' is no inline comment */
                { "semicolon", "a;b", 11 },        /* ';' only after whitespace */
                { "trailing", "value", 12 },
                { "empty", "", 13 },
                { "spaces", "several words here", 14 },
        };

        cr_expect_eq(conf->interval_usec, 5 * MIN);
        cr_expect_eq(conf->log_level, LOG_WARNING, "\"key: value\" works too");
        cr_expect_eq(conf->slice_budget, 2);
        c = ca_conf_find_cache(conf, "spaced");
        cr_assert_not_null(c, "[ cache spaced ] is trimmed");
        cr_expect_eq(c->line, 8);
        cr_assert_eq(c->n_keys, sizeof(want) / sizeof(want[0]));
        for (size_t i = 0; i < c->n_keys; i++) {
                cr_expect_str_eq(c->keys[i].key, want[i].key);
                cr_expect_str_eq(c->keys[i].value, want[i].value, "%s", want[i].key);
                cr_expect_eq(c->keys[i].line, want[i].line, "%s", want[i].key);
        }
        ca_conf_free(conf);
        free(path);
}

/* CRLF line ends and a UTF-8 byte order mark, as editors elsewhere write them. */
Test(config, good_crlf_bom)
{
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf");
        struct ca_conf *conf;

        test_write_file(path, "%s", "\xEF\xBB\xBF[daemon]\r\ninterval = 7s\r\n\r\n[cache x]\r\n"
                        "adapter = files\r\npath = /a b\r\n");
        conf = load_ok(path);
        cr_expect_eq(conf->interval_usec, 7 * SEC);
        cr_assert_eq(conf->n_caches, 1);
        cr_expect_eq(conf->caches[0].line, 4);
        cr_assert_eq(conf->caches[0].n_keys, 1);
        cr_expect_str_eq(conf->caches[0].keys[0].value, "/a b");
        cr_expect_eq(conf->caches[0].keys[0].line, 6);
        ca_conf_free(conf);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

Test(config, log_levels)
{
        static const char *const names[] = { "emerg", "alert",  "crit", "err",
                                             "warning", "notice", "info", "debug" };
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf"), text[64];
        struct ca_conf *conf;

        for (int i = 0; i < 8; i++) {
                snprintf(text, sizeof(text), "[daemon]\nlog_level = %s\n", names[i]);
                test_write_file(path, "%s", text);
                conf = load_ok(path);
                cr_expect_eq(conf->log_level, i, "%s", names[i]);
                ca_conf_free(conf);
                snprintf(text, sizeof(text), "[daemon]\nlog_level = %d\n", i);
                test_write_file(path, "%s", text);
                conf = load_ok(path);
                cr_expect_eq(conf->log_level, i);
                ca_conf_free(conf);
        }
        free(path);
        test_rm_rf(dir);
        free(dir);
}

/* Limits of the [daemon] and [cache] values, both edges. */
/* ages, refault_window and target_refault into the aging parameters; their defaults. */
Test(config, refault_keys)
{
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf");
        struct ca_conf *conf;

        test_write_file(path, "%s", "[cache a]\nadapter = a\n"
                        "[cache b]\nadapter = a\nages = fixed\nrefault_window = 0\n"
                        "[cache c]\nadapter = a\nages = auto\nrefault_window = 65535\n"
                        "target_refault = 0.5%\n"
                        "[cache d]\nadapter = a\ntarget_refault = 50\nrefault_window = 1\n");
        conf = load_ok(path);
        cr_expect(conf->caches[0].params.auto_ages, "auto is the default");
        cr_expect_eq(conf->caches[0].params.refault_window, CA_REFAULT_WINDOW_DEFAULT);
        cr_expect_eq(conf->caches[0].params.target_refault_ppm, CA_TARGET_REFAULT_DEFAULT_PPM);
        cr_expect(!conf->caches[1].params.auto_ages);
        cr_expect_eq(conf->caches[1].params.refault_window, 0);
        cr_expect(conf->caches[2].params.auto_ages);
        cr_expect_eq(conf->caches[2].params.refault_window, CA_REFAULT_WINDOW_MAX);
        cr_expect_eq(conf->caches[2].params.target_refault_ppm, 5000);
        cr_expect_eq(conf->caches[3].params.target_refault_ppm, CA_TARGET_REFAULT_MAX_PPM);
        cr_expect_eq(conf->caches[3].params.refault_window, 1);
        for (size_t i = 0; i < conf->n_caches; i++)
                cr_expect_eq(ca_cache_validate_params(&conf->caches[i].params), 0, "cache %zu",
                             i);
        ca_conf_free(conf);
        test_rm_rf(dir);
        free(dir);
        free(path);
}

Test(config, value_limits)
{
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf");
        struct ca_conf *conf;

        test_write_file(path, "%s", "[daemon]\ninterval = 10ms\nslice_budget = 1\nslice_time = 100us\n"
                        "idle_cpu_pressure = 0\nidle_memory_pressure = 100\nmax_defer = 0\n"
                        "[cache a]\nadapter = a\ninterval = 1w\nsingle_use_age = 1\n"
                        "max_age = 65535\nenabled = off\n");
        conf = load_ok(path);
        cr_expect_eq(conf->interval_usec, CA_INTERVAL_MIN_USEC);
        cr_expect_eq(conf->slice_budget, 1);
        cr_expect_eq(conf->slice_time_usec, 100);
        cr_expect_float_eq(conf->idle_cpu_pressure, 0.0, 1e-9);
        cr_expect_float_eq(conf->idle_memory_pressure, 100.0, 1e-9);
        cr_expect_eq(conf->max_defer, 0);
        cr_expect_eq(conf->caches[0].interval_usec, CA_INTERVAL_MAX_USEC);
        cr_expect_eq(conf->caches[0].params.single_use_age, 1);
        cr_expect_eq(conf->caches[0].params.max_age, CA_AGE_MAX);
        cr_expect_eq(conf->caches[0].enabled, false);
        ca_conf_free(conf);

        test_write_file(path, "%s", "[daemon]\ninterval = 1w\nslice_budget = 1000000\nslice_time = 1s\n"
                        "idle_cpu_pressure = 100.0%\nmax_defer = 1000\n");
        conf = load_ok(path);
        cr_expect_eq(conf->interval_usec, CA_INTERVAL_MAX_USEC);
        cr_expect_eq(conf->slice_budget, 1000000);
        cr_expect_eq(conf->slice_time_usec, SEC);
        cr_expect_float_eq(conf->idle_cpu_pressure, 100.0, 1e-9);
        cr_expect_eq(conf->max_defer, 1000);
        ca_conf_free(conf);

        {
                static const char *const want[] = {
                        "@:2: interval: 9999us out of range (expected 10ms..1w)",
                        "@:3: slice_budget: 1000001 out of range (expected 1..1000000)",
                        "@:4: slice_time: 99us out of range (expected 100us..1s)",
                        "@:5: idle_cpu_pressure: 100.01 out of range (expected 0..100; 0 = off)",
                        "@:6: idle_memory_pressure: invalid number \"-1\" (expected a percentage "
                        "0..100, e.g. 12.5; 0 = off)",
                        "@:7: max_defer: 1001 out of range (expected 0..1000)",
                        "@:8: idle_cpu_pressure: duplicate key, first set at @:5",
                        "@:10: interval: 1w 1us out of range (expected 10ms..1w)",
                        "@:11: enabled: invalid boolean \"\" (expected yes/no, true/false, on/off "
                        "or 1/0)",
                        /* a non-breaking space is not whitespace */
                        "@:12: single_use_age: invalid number \"2\xC2\xA0\" (expected an integer "
                        "1..65535)",
                };
                char *w[sizeof(want) / sizeof(want[0])];

                test_write_file(path, "%s", "[daemon]\ninterval = 9999us\nslice_budget = 1000001\n"
                                "slice_time = 99us\nidle_cpu_pressure = 100.01\n"
                                "idle_memory_pressure = -1\nmax_defer = 1001\n"
                                "idle_cpu_pressure = .5\n[cache a]\ninterval = 1w 1us\n"
                                "enabled =\nsingle_use_age = 2\xC2\xA0\nadapter = a\n");
                for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
                        w[i] = subst(want[i], "@", path);
                load_bad(path, (const char *const *)w, sizeof(w) / sizeof(w[0]));
                for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
                        free(w[i]);
        }
        free(path);
        test_rm_rf(dir);
        free(dir);
}

/* ---- bad files ---- */

Test(config, bad_daemon_values)
{
        check_bad_fixture("daemon-values");
}

Test(config, bad_cache_values)
{
        check_bad_fixture("cache-values");
}

/* ages, refault_window, target_refault: each bad value, and auto without a window. */
Test(config, bad_refault_values)
{
        check_bad_fixture("refaults");
}

Test(config, bad_syntax)
{
        check_bad_fixture("syntax");
}

Test(config, bad_sections)
{
        check_bad_fixture("sections");
}

Test(config, bad_duplicates)
{
        check_bad_fixture("duplicates");
}

Test(config, bad_dropins)
{
        check_bad_fixture("dropins");
}

/* What a checker gets to go on with: refused values keep their defaults, good ones stand. */
Test(config, partial_load_keeps_what_it_could_read)
{
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = NULL;
        char *path = fixtures("bad/cache-values.conf");

        cr_assert_eq(ca_conf_load_partial(path, &conf, &errors), -EINVAL);
        cr_assert_not_null(conf);
        cr_assert_eq(conf->n_caches, 2);
        cr_assert_null(conf->caches[0].adapter, "\"DCache\" was refused");
        cr_assert_eq(conf->caches[0].params.single_use_age, CA_SINGLE_USE_AGE_DEFAULT);
        cr_assert_str_eq(conf->caches[1].adapter, "files");
        cr_assert(!conf->plugin_dir_refused);
        ca_conf_free(conf);
        ca_errors_clear(&errors);
        free(path);
}

/* max_age below single_use_age, set in one file, by default, or across a drop-in. */
Test(config, bad_ages)
{
        check_bad_fixture("ages");
}

Test(config, missing_main_file)
{
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = NULL;
        char *path = fixtures("good/no-such.conf"), *want;

        cr_assert_eq(ca_conf_load(path, &conf, &errors), -ENOENT);
        cr_assert_null(conf);
        cr_assert(asprintf(&want, "%s: cannot open: %s", path, strerror(ENOENT)) > 0);
        expect_errors(&errors, (const char *const[]){ want }, 1);
        ca_errors_clear(&errors);
        free(want);
        free(path);
}

Test(config, main_file_not_regular)
{
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = NULL;
        char *path = fixtures("good"), *want;

        cr_assert_eq(ca_conf_load(path, &conf, &errors), -ENODEV);
        cr_assert_null(conf);
        cr_assert(asprintf(&want, "%s: not a regular file", path) > 0);
        expect_errors(&errors, (const char *const[]){ want }, 1);
        ca_errors_clear(&errors);
        free(want);
        free(path);
}

/* Messages are appended to what the list already holds; nothing is handed out. */
Test(config, errors_appended)
{
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = NULL;
        char *path = fixtures("bad/syntax.conf");

        ca_errors_add(&errors, "earlier");
        cr_assert_eq(ca_conf_load(path, &conf, &errors), -EINVAL);
        cr_assert_null(conf);
        cr_assert_eq(errors.n, 9);
        cr_expect_str_eq(errors.v[0], "earlier");
        ca_errors_clear(&errors);

        /* No list at all: the result is the same. */
        cr_assert_eq(ca_conf_load(path, &conf, NULL), -EINVAL);
        cr_assert_null(conf);
        free(path);
}

/* ---- limits ---- */

Test(config, line_length)
{
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf"), *text, *p;
        struct ca_conf *conf;
        const char *head = "[cache x]\nadapter = files\n";
        size_t max = CA_CONF_LINE_MAX, huge = 100000;
        char *want[2];

        /* A line of exactly CA_CONF_LINE_MAX bytes is whole, with "\n" or "\r\n" after it. */
        text = malloc(strlen(head) + 2 * (max + 2) + 1);
        cr_assert(text);
        p = stpcpy(text, head);
        p += sprintf(p, "k1 = ");
        memset(p, 'a', max - 5);
        p += max - 5;
        p = stpcpy(p, "\nk2 = ");
        memset(p, 'b', max - 5);
        p += max - 5;
        p = stpcpy(p, "\r\n");
        test_write_file(path, "%s", text);
        conf = load_ok(path);
        cr_assert_eq(conf->caches[0].n_keys, 2);
        cr_expect_eq(strlen(conf->caches[0].keys[0].value), max - 5);
        cr_expect_eq(strlen(conf->caches[0].keys[1].value), max - 5);
        cr_expect_eq(conf->caches[0].keys[1].line, 4);
        ca_conf_free(conf);
        free(text);

        /*
         * One byte more is an error, and so is a huge line; both are skipped whole (inih would
         * cut them into lines of their own), so the line after each is parsed, with its number.
         */
        text = malloc(strlen(head) + (max + 8) + (huge + 8) + 64);
        cr_assert(text);
        p = stpcpy(text, head);
        p += sprintf(p, "k1 = ");
        memset(p, 'a', max - 4);
        p += max - 4;
        p = stpcpy(p, "\nk2 = 1\nk3 = ");
        memset(p, '[', huge);
        p += huge;
        p = stpcpy(p, "\nk4 = 2\nk4 = 3\n");
        test_write_file(path, "%s", text);
        cr_assert(asprintf(&want[0], "%s:3: line too long (over %d bytes)", path,
                           CA_CONF_LINE_MAX) > 0);
        cr_assert(asprintf(&want[1], "%s:5: line too long (over %d bytes)", path,
                           CA_CONF_LINE_MAX) > 0);
        {
                char *w2;

                cr_assert(asprintf(&w2, "%s:7: k4: duplicate key, first set at %s:6", path,
                                   path) > 0);
                load_bad(path, (const char *const[]){ want[0], want[1], w2 }, 3);
                free(w2);
        }
        free(want[0]);
        free(want[1]);
        free(text);

        /* The last line may lack its "\n", long or not. */
        text = malloc(max + 64);
        cr_assert(text);
        p = stpcpy(text, "[daemon]\nplugin_dir = /");
        memset(p, 'x', max);
        p[max] = '\0';
        test_write_file(path, "%s", text);
        cr_assert(asprintf(&want[0], "%s:2: line too long (over %d bytes)", path,
                           CA_CONF_LINE_MAX) > 0);
        load_bad(path, (const char *const[]){ want[0] }, 1);
        free(want[0]);
        free(text);

        free(path);
        test_rm_rf(dir);
        free(dir);
}

Test(config, nul_byte)
{
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf"), *want;
        static const char text[] = "[daemon]\ninterval = 1s\0 junk\nmax_defer = 1\n";

        test_write_data(path, text, sizeof(text) - 1);
        cr_assert(asprintf(&want, "%s:2: NUL byte in line", path) > 0);
        load_bad(path, (const char *const[]){ want }, 1);
        free(want);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

Test(config, too_many_caches)
{
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf"), *want;
        size_t size = (CA_CONF_CACHES_MAX + 2) * 40, off = 0;
        char *text = malloc(size);
        struct ca_conf *conf;

        cr_assert(text);
        for (int i = 0; i < CA_CONF_CACHES_MAX; i++)
                off += (size_t)snprintf(text + off, size - off, "[cache c%d]\nadapter = a\n", i);
        test_write_file(path, "%s", text);
        conf = load_ok(path);
        cr_expect_eq(conf->n_caches, CA_CONF_CACHES_MAX);
        cr_expect_str_eq(conf->caches[CA_CONF_CACHES_MAX - 1].name, "c255");
        ca_conf_free(conf);

        /* One more: reported once, at its header; a section seen before still opens. */
        off += (size_t)snprintf(text + off, size - off, "[cache extra]\nadapter = a\n"
                                "[cache c0]\nx = 1\n[cache extra2]\n");
        test_write_file(path, "%s", text);
        cr_assert(asprintf(&want, "%s:%d: too many [cache NAME] sections (at most %d)", path,
                           2 * CA_CONF_CACHES_MAX + 1, CA_CONF_CACHES_MAX) > 0);
        load_bad(path, (const char *const[]){ want }, 1);
        free(want);
        free(text);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

Test(config, too_many_keys)
{
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf"), *want;
        size_t size = (CA_CONF_KEYS_MAX + 4) * 32, off = 0;
        char *text = malloc(size);
        struct ca_conf *conf;

        cr_assert(text);
        off += (size_t)snprintf(text + off, size - off, "[cache a]\nadapter = a\n");
        for (int i = 0; i < CA_CONF_KEYS_MAX; i++)
                off += (size_t)snprintf(text + off, size - off, "k%d = %d\n", i, i);
        test_write_file(path, "%s", text);
        conf = load_ok(path);
        cr_expect_eq(conf->caches[0].n_keys, CA_CONF_KEYS_MAX);
        ca_conf_free(conf);

        /* One more, twice: one message. An existing key may still be overridden... */
        off += (size_t)snprintf(text + off, size - off, "extra = 1\nextra2 = 2\n");
        test_write_file(path, "%s", text);
        cr_assert(asprintf(&want, "%s:%d: extra: too many adapter keys in [cache a] (at most %d)",
                           path, CA_CONF_KEYS_MAX + 3, CA_CONF_KEYS_MAX) > 0);
        load_bad(path, (const char *const[]){ want }, 1);
        free(want);
        free(text);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

static char *make_dropins(const char *dir, int n)
{
        char *path = test_path_join(dir, "c.conf"), *d, *f, name[32];

        test_write_file(path, "%s", "[daemon]\nmax_defer = 1\n");
        cr_assert(asprintf(&d, "%s.d", path) > 0);
        cr_assert_eq(mkdir(d, 0755), 0);
        for (int i = 0; i < n; i++) {
                snprintf(name, sizeof(name), "%03d.conf", i);
                f = test_path_join(d, name);
                snprintf(name, sizeof(name), "[daemon]\nmax_defer = %d\n", i);
                test_write_file(f, "%s", name);
                free(f);
        }
        free(d);
        return path;
}

Test(config, too_many_dropins)
{
        char *dir = test_mkdtemp("test-config"), *path = make_dropins(dir, CA_CONF_FILES_MAX), *want;
        struct ca_conf *conf = load_ok(path);

        cr_expect_eq(conf->n_files, CA_CONF_FILES_MAX + 1);
        cr_expect_eq(conf->max_defer, CA_CONF_FILES_MAX - 1, "the last in strcmp order wins");
        ca_conf_free(conf);
        free(path);
        test_rm_rf(dir);
        free(dir);

        dir = test_mkdtemp("test-config");
        path = make_dropins(dir, CA_CONF_FILES_MAX + 1);
        cr_assert(asprintf(&want, "%s.d: too many drop-in files (at most %d *.conf)", path,
                           CA_CONF_FILES_MAX) > 0);
        load_bad(path, (const char *const[]){ want }, 1);
        free(want);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

/* Symlinked drop-ins are read; one to /dev/null masks; a dangling one is an error. */
Test(config, dropin_symlinks)
{
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf"), *d, *target, *link, *want;
        struct ca_conf *conf;

        test_write_file(path, "%s", "[daemon]\nmax_defer = 1\n");
        cr_assert(asprintf(&d, "%s.d", path) > 0);
        cr_assert_eq(mkdir(d, 0755), 0);
        target = test_path_join(dir, "elsewhere.txt");
        test_write_file(target, "%s", "[daemon]\nmax_defer = 9\n");
        link = test_path_join(d, "50-linked.conf");
        cr_assert_eq(symlink(target, link), 0);
        free(link);
        link = test_path_join(d, "60-masked.conf");
        cr_assert_eq(symlink("/dev/null", link), 0);
        free(link);

        conf = load_ok(path);
        cr_expect_eq(conf->max_defer, 9);
        cr_expect_eq(conf->n_files, 3);
        ca_conf_free(conf);

        link = test_path_join(d, "70-dangling.conf");
        cr_assert_eq(symlink("/nonexistent/x.conf", link), 0);
        cr_assert(asprintf(&want, "%s: cannot open: %s", link, strerror(ENOENT)) > 0);
        load_bad(path, (const char *const[]){ want }, 1);
        free(want);
        free(link);

        free(target);
        free(d);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

/* A file where the drop-in directory should be is reported, not taken for "none". */
Test(config, dropin_dir_not_a_dir)
{
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf"), *d, *want;

        test_write_file(path, "%s", "");
        cr_assert(asprintf(&d, "%s.d", path) > 0);
        test_write_file(d, "%s", "");
        cr_assert(asprintf(&want, "%s: cannot read drop-in directory: %s", d,
                           strerror(ENOTDIR)) > 0);
        load_bad(path, (const char *const[]){ want }, 1);
        free(want);
        free(d);
        free(path);
        test_rm_rf(dir);
        free(dir);
}

/*
 * inih's settings are process globals: they are ours during a parse only. (syntax.conf has an
 * indented key after another key, which inih's own multiline setting would glue to it.)
 */
Test(config, inih_settings_restored)
{
        char *path = fixtures("good/syntax.conf");
        int max_line = ini_max_line;
        bool multiline = ini_allow_multiline;
        struct ca_conf *conf;

        ini_allow_multiline = true;
        conf = load_ok(path);
        ca_conf_free(conf);
        cr_expect_eq(ini_max_line, max_line);
        cr_expect_eq(ini_allow_multiline, true);
        ini_allow_multiline = multiline;
        free(path);
}

/* ---- where the configuration is read from: systemd's search, --config FILE ---- */

/* @root/@rel holds @text (its directories made); @text NULL: a symlink to /dev/null. */
static void root_file(const char *root, const char *rel, const char *text)
{
        char *path = test_path_join(root, rel), *cmd;

        cr_assert(asprintf(&cmd, "mkdir -p \"$(dirname '%s')\"", path) > 0);
        cr_assert_eq(system(cmd), 0);
        free(cmd);
        if (text)
                test_write_file(path, "%s", text);
        else
                cr_assert(symlink("/dev/null", path) == 0, "%s: %m", path);
        free(path);
}

/* conf->files, below @root, one per line. */
static char *files_read(const struct ca_conf *conf, const char *root)
{
        size_t len = 0, root_len = strlen(root);
        char *out = NULL;
        FILE *f = open_memstream(&out, &len);

        cr_assert(f);
        for (size_t i = 0; i < conf->n_files; i++)
                fprintf(f, "%s\n", strncmp(conf->files[i], root, root_len) == 0
                                           ? conf->files[i] + root_len : conf->files[i]);
        fclose(f);
        return out;
}

/* The main file's path below the root: the build's sysconfdir, as the daemon was built. */
static char *main_rel(void)
{
        return strdup(CA_CONFIG_FILE);
}

/*
 * Drop-ins in all four directories, merged by name: the first directory that has a name wins
 * (/etc over /run over /usr/local/lib over /usr/lib), one linked to /dev/null masks the name,
 * and they are read in lexical order of their names whatever directory each comes from.
 */
Test(config, search_merges_dropins_by_name)
{
        char *root = test_mkdtemp("test-config-root"), *m = main_rel(), *etc, *files, *want, *rel;
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = NULL;

        cr_assert(asprintf(&etc, "%s.d", m) > 0);
        cr_assert_eq(setenv("CACHEAGED_CONFIG_ROOT", root, 1), 0);
        root_file(root, "/usr/lib/cacheage/cacheaged.conf.d/10-a.conf", "[daemon]\ninterval = 1h\n");
        root_file(root, "/usr/lib/cacheage/cacheaged.conf.d/20-b.conf",
                  "[cache masked]\nadapter = dcache\n");
        root_file(root, "/usr/lib/cacheage/cacheaged.conf.d/30-c.conf",
                  "[daemon]\nslice_budget = 30\n[cache kept]\nadapter = dcache\n");
        root_file(root, "/usr/lib/cacheage/cacheaged.conf.d/.hidden.conf", "nonsense\n");
        root_file(root, "/usr/lib/cacheage/cacheaged.conf.d/40-d.txt", "nonsense\n");
        root_file(root, "/usr/local/lib/cacheage/cacheaged.conf.d/10-a.conf",
                  "[daemon]\ninterval = 2h\n");
        root_file(root, "/run/cacheage/cacheaged.conf.d/20-b.conf", NULL);
        root_file(root, "/run/cacheage/cacheaged.conf.d/30-c.conf",
                  "[daemon]\nslice_budget = 31\n[cache kept]\nadapter = dcache\n");
        cr_assert(asprintf(&rel, "%s/05-e.conf", etc) > 0);
        root_file(root, rel, "[daemon]\nmax_defer = 7\n");
        free(rel);
        cr_assert(asprintf(&rel, "%s/30-c.conf", etc) > 0);
        root_file(root, rel, "[daemon]\nslice_budget = 32\n[cache kept]\nadapter = dcache\n");
        free(rel);

        cr_assert_eq(ca_conf_load(NULL, &conf, &errors), 0, "%s", errors.n ? errors.v[0] : "");
        files = files_read(conf, root);
        cr_assert(asprintf(&want, "%s/05-e.conf\n"
                                  "/usr/local/lib/cacheage/cacheaged.conf.d/10-a.conf\n"
                                  "/run/cacheage/cacheaged.conf.d/20-b.conf\n"
                                  "%s/30-c.conf\n", etc, etc) > 0);
        cr_expect_str_eq(files, want);
        cr_expect_eq(conf->interval_usec, 2 * 3600 * 1000000ULL, "/usr/local/lib wins over /usr/lib");
        cr_expect_eq(conf->slice_budget, 32, "/etc wins over /run");
        cr_expect_eq(conf->max_defer, 7);
        cr_expect_eq(conf->n_caches, 1, "20-b.conf is masked by /dev/null");
        cr_expect_str_eq(conf->caches[0].name, "kept");
        ca_conf_free(conf);
        ca_errors_clear(&errors);
        free(files);
        free(want);

        /* The main file, when there is one, comes first; the drop-ins still override it. */
        root_file(root, m, "[daemon]\nmax_defer = 9\ninterval = 10s\nlog_level = debug\n");
        cr_assert_eq(ca_conf_load(NULL, &conf, &errors), 0);
        files = files_read(conf, root);
        cr_expect(strncmp(files, m, strlen(m)) == 0 && files[strlen(m)] == '\n', "%s", files);
        cr_expect_eq(conf->max_defer, 7);
        cr_expect_eq(conf->log_level, LOG_DEBUG);
        cr_expect_eq(conf->n_files, 5);
        ca_conf_free(conf);
        free(files);

        test_rm_rf(root);
        free(root);
        free(etc);
        free(m);
}

/* No file at all: the built-in defaults, as systemd's daemons run without theirs. */
Test(config, search_without_any_file_is_defaults)
{
        char *root = test_mkdtemp("test-config-root"), *empty = fixtures("good/empty.conf");
        struct ca_conf *conf = NULL, *defaults = NULL;
        struct ca_errors errors = { 0 };

        cr_assert_eq(setenv("CACHEAGED_CONFIG_ROOT", root, 1), 0);
        cr_assert_eq(ca_conf_load(NULL, &conf, &errors), 0, "%s", errors.n ? errors.v[0] : "");
        cr_assert_eq(errors.n, 0);
        cr_assert_eq(ca_conf_load(empty, &defaults, &errors), 0);
        cr_expect_eq(conf->n_files, 0);
        cr_expect_eq(conf->n_caches, 0);
        cr_expect_eq(conf->interval_usec, defaults->interval_usec);
        cr_expect_eq(conf->slice_budget, defaults->slice_budget);
        cr_expect_str_eq(conf->plugin_dir, defaults->plugin_dir);
        ca_conf_free(conf);
        ca_conf_free(defaults);

        /* Drop-ins alone, no main file: they are read, with their errors. */
        root_file(root, "/usr/lib/cacheage/cacheaged.conf.d/50-x.conf",
                  "[cache x]\nadapter = dcache\ninterval = soon\n");
        cr_assert_eq(ca_conf_load(NULL, &conf, &errors), -EINVAL);
        cr_assert_eq(errors.n, 1);
        cr_expect(strstr(errors.v[0], "/usr/lib/cacheage/cacheaged.conf.d/50-x.conf:3: interval: "),
                  "%s", errors.v[0]);
        ca_errors_clear(&errors);
        test_rm_rf(root);
        free(root);
        free(empty);
}

/* --config FILE: exactly FILE and FILE.d, none of the search's directories. */
Test(config, explicit_file_reads_only_its_own_dropins)
{
        char *root = test_mkdtemp("test-config-root"), *dir = test_mkdtemp("test-config");
        char *path = test_path_join(dir, "my.conf"), *dropins, *files, *want;
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = NULL;

        cr_assert_eq(setenv("CACHEAGED_CONFIG_ROOT", root, 1), 0);
        root_file(root, "/usr/lib/cacheage/cacheaged.conf.d/10-a.conf", "[cache other]\nadapter = dcache\n");
        root_file(root, "/run/cacheage/cacheaged.conf.d/10-a.conf", "[cache other]\nadapter = dcache\n");
        cr_assert(asprintf(&dropins, "%s.d", path) > 0);
        cr_assert(mkdir(dropins, 0755) == 0);
        root_file(dir, "my.conf.d/10-b.conf", "[cache mine]\nadapter = dcache\n");

        /* FILE.d exists: FILE may be missing. */
        cr_assert_eq(ca_conf_load(path, &conf, &errors), 0, "%s", errors.n ? errors.v[0] : "");
        files = files_read(conf, dir);
        cr_expect_str_eq(files, "/my.conf.d/10-b.conf\n");
        cr_expect_eq(conf->n_caches, 1);
        cr_expect_str_eq(conf->caches[0].name, "mine");
        ca_conf_free(conf);
        free(files);

        /* Both missing: a mistyped --config is an error, not a daemon on its defaults. */
        test_rm_rf(dropins);
        cr_assert_eq(ca_conf_load(path, &conf, &errors), -ENOENT);
        cr_assert(asprintf(&want, "%s: cannot open: %s", path, strerror(ENOENT)) > 0);
        expect_errors(&errors, (const char *const[]){ want }, 1);
        ca_errors_clear(&errors);
        test_rm_rf(root);
        test_rm_rf(dir);
        free(want);
        free(dropins);
        free(path);
        free(root);
        free(dir);
}

/*
 * In a process of uid @uid (a user's instance: the daemon runs as that user), load @path: the
 * errno, and the first message in @msg. Forked, so that the test keeps its root.
 */
static int load_as(uid_t uid, const char *path, char *msg, size_t len)
{
        int pipefd[2], status;
        ssize_t n;
        pid_t pid;

        cr_assert(pipe(pipefd) == 0);
        pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                struct ca_errors errors = { 0 };
                struct ca_conf *conf = NULL;
                int r;

                close(pipefd[0]);
                if (setresgid(65534, 65534, 65534) < 0 || setresuid(uid, uid, uid) < 0)
                        _exit(100);
                r = ca_conf_load(path, &conf, &errors);
                if (errors.n > 0 && write(pipefd[1], errors.v[0], strlen(errors.v[0])) < 0)
                        _exit(101);
                ca_conf_free(conf);
                ca_errors_clear(&errors);
                _exit(-r);
        }
        close(pipefd[1]);
        n = read(pipefd[0], msg, len - 1);
        msg[n > 0 ? n : 0] = '\0';
        close(pipefd[0]);
        cr_assert(waitpid(pid, &status, 0) == pid && WIFEXITED(status));
        cr_assert(WEXITSTATUS(status) < 100, "the child could not become uid %u", (unsigned)uid);
        return -WEXITSTATUS(status);
}

/*
 * A user's instance trusts its own user's files and root's, and nobody else's: a drop-in of
 * another user is refused there as it is in the system instance (which trusts root alone).
 */
Test(config, user_instance_trusts_its_user)
{
        char *dir = test_mkdtemp("test-config"), *path = test_path_join(dir, "c.conf"), *d;
        char *theirs, msg[1024], want[1024];

        test_write_file(path, "%s", "[daemon]\nmax_defer = 1\n");
        cr_assert(asprintf(&d, "%s.d", path) > 0);
        cr_assert_eq(mkdir(d, 0755), 0);
        theirs = test_path_join(d, "10-theirs.conf");
        test_write_file(theirs, "%s", "[daemon]\nmax_defer = 2\n");
        cr_assert(chown(dir, 65534, 65534) == 0 && chown(path, 65534, 65534) == 0 &&
                  chown(d, 65534, 65534) == 0);

        /* Root's drop-in in the user's tree: the user's instance reads it. */
        cr_assert_eq(load_as(65534, path, msg, sizeof(msg)), 0, "%s", msg);
        /* Another user's (uid 1, daemon): refused, named with the rule. */
        cr_assert(chown(theirs, 1, 1) == 0);
        cr_assert_eq(load_as(65534, path, msg, sizeof(msg)), -EINVAL);
        snprintf(want, sizeof(want), "%s: refused: %s is owned by uid 1, not by root or uid "
                 "65534 (only root and the daemon's user may write", theirs, theirs);
        cr_assert(strncmp(msg, want, strlen(want)) == 0, "%s", msg);
        /* The system instance trusts neither: the user's main file is refused too. */
        cr_assert_eq(load_as(0, path, msg, sizeof(msg)), -EPERM);
        snprintf(want, sizeof(want), "%s: refused: %s is owned by uid 65534 in /tmp, which "
                 "everyone may write (", path, dir);
        cr_assert(strncmp(msg, want, strlen(want)) == 0, "%s", msg);

        test_rm_rf(dir);
        free(theirs);
        free(d);
        free(path);
        free(dir);
}
