/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Keys by table (cacheage/plugin.h): ca_key_parse() for every type, its limits, messages and
 * check hook; ca_section_parse() with a host that records what it is told (defaults,
 * unknown keys, every error of a section at once, in order); the decimal and percentage
 * parsers of cacheage/value.h under them.
 */

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cacheage/plugin.h"
#include "cacheage/value.h"

TestSuite(keys);

/* ---- a struct and a table with every type ---- */

struct target {
        bool flag;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        uint64_t wait_usec;
        double share;
        double factor;
        int mode;
        int level;
        const char *text;
        const char *dir;
        const char *name;
        const char *adapter;
        int checked; /* set by the check hook from the text */
};

static const struct ca_key_choice modes[] = {
        { "fast", 1 },
        { "slow", 2 },
        { "off", -1 },
        { NULL, 0 },
};

/* Takes "ok-..." only, and counts what it saw into target->checked. */
static int check_ok_prefix(const char *value, void *target, char *msg, size_t msg_len)
{
        struct target *t = target;

        if (strncmp(value, "ok-", 3) != 0) {
                snprintf(msg, msg_len, "\"%s\" does not start with ok-", value);
                return -EINVAL;
        }
        if (t)
                t->checked = (int)strlen(value);
        return 0;
}

static const struct ca_key_spec specs[] = {
        { .name = "flag", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct target, flag), .def = "yes" },
        { .name = "u8", .type = CA_KEY_UINT, CA_KEY_FIELD(struct target, u8), .min = 1, .max = 255 },
        { .name = "u16", .type = CA_KEY_UINT, CA_KEY_FIELD(struct target, u16), .max = 65535 },
        { .name = "u32", .type = CA_KEY_UINT, CA_KEY_FIELD(struct target, u32), .def = "7",
          .min = 0, .max = 1000, .flags = CA_KEY_ZERO_OFF },
        { .name = "u64", .type = CA_KEY_UINT, CA_KEY_FIELD(struct target, u64), .max = UINT64_MAX },
        { .name = "wait", .type = CA_KEY_DURATION, CA_KEY_FIELD(struct target, wait_usec),
          .def = "1min 30s", .min = 1000, .max = 3600ULL * 1000000 },
        { .name = "share", .type = CA_KEY_PERCENT, CA_KEY_FIELD(struct target, share), .def = "5%" },
        { .name = "factor", .type = CA_KEY_DECIMAL, CA_KEY_FIELD(struct target, factor),
          .def = "1.5", .dmin = 0.25, .dmax = 4 },
        { .name = "mode", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct target, mode),
          .def = "slow", .choices = modes, .what = "mode" },
        { .name = "level", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct target, level),
          .choices = modes, .flags = CA_KEY_NUMBER, .min = 0, .max = 9 },
        { .name = "text", .type = CA_KEY_STRING, CA_KEY_FIELD(struct target, text),
          .def = "ok-default", .check = check_ok_prefix },
        { .name = "dir", .type = CA_KEY_PATH, CA_KEY_FIELD(struct target, dir), .def = "/var/x" },
        { .name = "name", .type = CA_KEY_NAME, CA_KEY_FIELD(struct target, name), .max = 8 },
        { .name = "adapter", .type = CA_KEY_NAME, CA_KEY_FIELD(struct target, adapter), .max = 8,
          .flags = CA_KEY_ADAPTER_NAME, .what = "adapter name" },
        CA_KEY_END
};

static const struct ca_key_spec *spec(const char *name)
{
        const struct ca_key_spec *k = ca_key_find(specs, name);

        cr_assert(k, "no spec %s", name);
        return k;
}

/* Parse one value into a fresh target (0xAB bytes, so that a stray write shows). */
static int parse(const char *key, const char *value, struct target *t, char *msg, size_t len)
{
        memset(t, 0xAB, sizeof(*t));
        msg[0] = '\0';
        return ca_key_parse(spec(key), value, t, msg, len);
}

static void expect_untouched(const struct target *t)
{
        struct target pristine;

        memset(&pristine, 0xAB, sizeof(pristine));
        cr_expect(memcmp(t, &pristine, sizeof(pristine)) == 0, "a refused value was stored");
}

/* ---- one value ---- */

Test(keys, bool_values)
{
        char msg[CA_KEY_MSG_MAX];
        struct target t;

        cr_assert_eq(parse("flag", "on", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.flag, true);
        cr_assert_eq(parse("flag", "FALSE", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.flag, false);
        cr_assert_eq(parse("flag", "maybe", &t, msg, sizeof(msg)), -EINVAL);
        cr_expect_str_eq(msg, "invalid boolean \"maybe\" (expected yes/no, true/false, on/off "
                              "or 1/0)");
        expect_untouched(&t);
}

/* Each width gets its own store: the neighbours of a narrow field stay as they were. */
Test(keys, uint_widths_and_bounds)
{
        char msg[CA_KEY_MSG_MAX];
        struct target t;

        cr_assert_eq(parse("u8", "255", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.u8, 255);
        cr_expect_eq(*(const unsigned char *)&t.flag, 0xAB);
        cr_expect_eq(t.u16, 0xABAB);
        cr_assert_eq(parse("u8", "1", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.u8, 1);
        cr_assert_eq(parse("u8", "0", &t, msg, sizeof(msg)), -ERANGE);
        cr_expect_str_eq(msg, "0 out of range (expected 1..255)");
        expect_untouched(&t);
        cr_assert_eq(parse("u8", "256", &t, msg, sizeof(msg)), -ERANGE);
        cr_assert_eq(parse("u16", "65535", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.u16, 65535);
        cr_expect_eq(t.u32, 0xABABABAB);
        cr_assert_eq(parse("u32", "1000", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.u32, 1000);
        cr_expect_eq(t.u64, 0xABABABABABABABABULL);
        cr_assert_eq(parse("u64", "18446744073709551615", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.u64, UINT64_MAX);
        cr_assert_eq(parse("u64", "18446744073709551616", &t, msg, sizeof(msg)), -ERANGE);
        cr_expect_str_eq(msg, "18446744073709551616 out of range (expected "
                              "0..18446744073709551615)");
        cr_assert_eq(parse("u8", "-1", &t, msg, sizeof(msg)), -EINVAL);
        cr_expect_str_eq(msg, "invalid number \"-1\" (expected an integer 1..255)");
        expect_untouched(&t);
}

Test(keys, zero_off_is_said)
{
        char msg[CA_KEY_MSG_MAX];
        struct target t;

        cr_assert_eq(parse("u32", "1001", &t, msg, sizeof(msg)), -ERANGE);
        cr_expect_str_eq(msg, "1001 out of range (expected 0..1000; 0 = off)");
        cr_assert_eq(parse("u32", "x", &t, msg, sizeof(msg)), -EINVAL);
        cr_expect_str_eq(msg, "invalid number \"x\" (expected an integer 0..1000; 0 = off)");
        cr_assert_eq(parse("u32", "0", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.u32, 0);
}

Test(keys, duration_values_and_bounds)
{
        char msg[CA_KEY_MSG_MAX];
        struct target t;

        cr_assert_eq(parse("wait", "1h", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.wait_usec, 3600ULL * 1000000);
        cr_assert_eq(parse("wait", "1ms", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.wait_usec, 1000);
        cr_assert_eq(parse("wait", "999us", &t, msg, sizeof(msg)), -ERANGE);
        cr_expect_str_eq(msg, "999us out of range (expected 1ms..1h)");
        cr_assert_eq(parse("wait", "1h 1us", &t, msg, sizeof(msg)), -ERANGE);
        cr_assert_eq(parse("wait", "99999999999999999999h", &t, msg, sizeof(msg)), -ERANGE);
        cr_assert_eq(parse("wait", "5 parsecs", &t, msg, sizeof(msg)), -EINVAL);
        cr_expect_str_eq(msg, "invalid duration \"5 parsecs\" (expected e.g. 250ms, 30s, 5min, 1h)");
        expect_untouched(&t);
}

Test(keys, percent_and_decimal)
{
        char msg[CA_KEY_MSG_MAX];
        struct target t;

        cr_assert_eq(parse("share", "12.5%", &t, msg, sizeof(msg)), 0);
        cr_expect_float_eq(t.share, 12.5, 1e-12);
        cr_assert_eq(parse("share", "100", &t, msg, sizeof(msg)), 0);
        cr_assert_eq(parse("share", "100.01", &t, msg, sizeof(msg)), -ERANGE);
        cr_expect_str_eq(msg, "100.01 out of range (expected 0..100)");
        cr_assert_eq(parse("share", "lots", &t, msg, sizeof(msg)), -EINVAL);
        cr_expect_str_eq(msg, "invalid number \"lots\" (expected a percentage 0..100, e.g. 12.5)");

        cr_assert_eq(parse("factor", "0.25", &t, msg, sizeof(msg)), 0);
        cr_expect_float_eq(t.factor, 0.25, 1e-12);
        cr_assert_eq(parse("factor", "4", &t, msg, sizeof(msg)), 0);
        cr_expect_float_eq(t.factor, 4.0, 1e-12);
        cr_assert_eq(parse("factor", "0.2", &t, msg, sizeof(msg)), -ERANGE);
        cr_expect_str_eq(msg, "0.2 out of range (expected 0.25..4)");
        cr_assert_eq(parse("factor", "4%", &t, msg, sizeof(msg)), -EINVAL, "%% is for percentages");
        cr_expect_str_eq(msg, "invalid number \"4%\" (expected a decimal number 0.25..4)");
        expect_untouched(&t);
}

Test(keys, choice_names_and_numbers)
{
        char msg[CA_KEY_MSG_MAX];
        struct target t;

        cr_assert_eq(parse("mode", "fast", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.mode, 1);
        cr_assert_eq(parse("mode", "off", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.mode, -1);
        cr_assert_eq(parse("mode", "3", &t, msg, sizeof(msg)), -EINVAL, "numbers need CA_KEY_NUMBER");
        cr_expect_str_eq(msg, "invalid mode \"3\" (expected fast, slow or off)");
        cr_assert_eq(parse("mode", "Fast", &t, msg, sizeof(msg)), -EINVAL, "names are exact");
        expect_untouched(&t);

        cr_assert_eq(parse("level", "9", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.level, 9);
        cr_assert_eq(parse("level", "slow", &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.level, 2);
        cr_assert_eq(parse("level", "10", &t, msg, sizeof(msg)), -EINVAL);
        cr_expect_str_eq(msg, "invalid value \"10\" (expected fast, slow, off or 0..9)");
        expect_untouched(&t);
}

Test(keys, text_path_and_names)
{
        char msg[CA_KEY_MSG_MAX];
        struct target t;
        const char *v = "ok-value";

        cr_assert_eq(parse("text", v, &t, msg, sizeof(msg)), 0);
        cr_expect_eq(t.text, v, "text is stored as given, not copied");
        cr_expect_eq(t.checked, 8, "the check hook filled its field");
        cr_assert_eq(parse("text", "bad", &t, msg, sizeof(msg)), -EINVAL);
        cr_expect_str_eq(msg, "\"bad\" does not start with ok-");
        expect_untouched(&t);

        cr_assert_eq(parse("dir", "/srv/cache", &t, msg, sizeof(msg)), 0);
        cr_expect_str_eq(t.dir, "/srv/cache");
        cr_assert_eq(parse("dir", "srv/cache", &t, msg, sizeof(msg)), -EINVAL);
        cr_expect_str_eq(msg, "\"srv/cache\" is not an absolute path (expected e.g. /var/x)");

        cr_assert_eq(parse("name", "Web.1-a_", &t, msg, sizeof(msg)), 0);
        cr_assert_eq(parse("name", "a/b", &t, msg, sizeof(msg)), -EINVAL);
        cr_expect_str_eq(msg, "invalid name \"a/b\" (expected 1..8 characters of A-Z a-z 0-9 _ . -)");
        cr_assert_eq(parse("name", "123456789", &t, msg, sizeof(msg)), -EINVAL);
        cr_assert_eq(parse("name", "", &t, msg, sizeof(msg)), -EINVAL);
        cr_assert_eq(parse("adapter", "mem_c-1", &t, msg, sizeof(msg)), 0);
        cr_assert_eq(parse("adapter", "Mem", &t, msg, sizeof(msg)), -EINVAL);
        cr_expect_str_eq(msg, "invalid adapter name \"Mem\" (expected 1..8 characters of a-z 0-9 _ -)");
        cr_assert_eq(parse("adapter", "..", &t, msg, sizeof(msg)), -EINVAL);
        expect_untouched(&t);
}

/* Without a target the value is checked, and the check hook is told so by a NULL. */
Test(keys, check_only_stores_nothing)
{
        char msg[CA_KEY_MSG_MAX];

        for (const struct ca_key_spec *k = specs; k->name; k++)
                if (k->def)
                        cr_expect_eq(ca_key_parse(k, k->def, NULL, msg, sizeof(msg)), 0,
                                     "%s: %s", k->name, msg);
        cr_expect_eq(ca_key_parse(spec("u8"), "0", NULL, msg, sizeof(msg)), -ERANGE);
        cr_expect_eq(ca_key_parse(spec("text"), "nope", NULL, msg, sizeof(msg)), -EINVAL);
        cr_expect_eq(ca_key_parse(spec("u8"), NULL, NULL, msg, sizeof(msg)), -EINVAL);
}

/* A table that contradicts itself is refused at its first use, whatever the value. */
Test(keys, bad_specs_refused)
{
        struct target t;
        char msg[CA_KEY_MSG_MAX];
        const struct ca_key_spec bad[] = {
                { .name = "a", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct target, u32) },
                { .name = "b", .type = CA_KEY_UINT, CA_KEY_FIELD(struct target, u8), .max = 256 },
                { .name = "c", .type = CA_KEY_UINT, CA_KEY_FIELD(struct target, u32), .min = 5,
                  .max = 4 },
                { .name = "d", .type = CA_KEY_DURATION, CA_KEY_FIELD(struct target, u32),
                  .max = 10 },
                { .name = "e", .type = CA_KEY_CHOICE, CA_KEY_FIELD(struct target, mode) },
                { .name = "f", .type = CA_KEY_NAME, CA_KEY_FIELD(struct target, name) },
                { .name = "g", .type = CA_KEY_DECIMAL, CA_KEY_FIELD(struct target, factor),
                  .dmin = 2, .dmax = 1 },
                { .name = "h", .type = CA_KEY_UINT, .offset = 0, .size = 3, .max = 1 },
                { .name = "i", .type = (enum ca_key_type)99, CA_KEY_FIELD(struct target, u8) },
        };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                memset(&t, 0xAB, sizeof(t));
                msg[0] = '\0';
                cr_expect_eq(ca_key_parse(&bad[i], "1", &t, msg, sizeof(msg)), -EINVAL, "%s",
                             bad[i].name);
                cr_expect(strncmp(msg, "key table entry refused: ", 25) == 0, "%s: %s",
                          bad[i].name, msg);
                expect_untouched(&t);
        }
}

Test(keys, find_and_names)
{
        const struct ca_key_spec two[] = {
                { .name = "a", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct target, flag) },
                { .name = "b", .type = CA_KEY_BOOL, CA_KEY_FIELD(struct target, flag) },
                CA_KEY_END,
        };
        char buf[64];

        cr_expect_eq(ca_key_find(specs, "wait"), &specs[5]);
        cr_expect_null(ca_key_find(specs, "Wait"));
        cr_expect_null(ca_key_find(specs, NULL));
        cr_expect_str_eq(ca_key_names(two, buf, sizeof(buf)), "a or b");
        cr_expect_str_eq(ca_key_names(two + 1, buf, sizeof(buf)), "b");
        cr_expect_str_eq(ca_key_names(two + 2, buf, sizeof(buf)), "");
        cr_expect_str_eq(ca_key_names(specs, buf, 10), "flag, u8,");
        ca_key_names(specs, buf, sizeof(buf));
        cr_expect(strncmp(buf, "flag, u8, u16, u32, u64, wait, share, factor, mode, level, ", 59) ==
                  0, "%s", buf);
}

/* ---- whole sections, through a host that records what it is told ---- */

#define FAKE_MAX 32

struct fake_host {
        char keys[FAKE_MAX][64];
        char msgs[FAKE_MAX][CA_KEY_MSG_MAX + 64];
        size_t n;
};

static void fake_log(void *userdata, int level, const char *msg)
{
}

static void fake_key_error(void *userdata, const struct ca_section *s, const char *key,
                           const char *msg)
{
        struct fake_host *f = userdata;

        cr_assert_lt(f->n, FAKE_MAX);
        snprintf(f->keys[f->n], sizeof(f->keys[0]), "%s", key ? key : "(section)");
        snprintf(f->msgs[f->n], sizeof(f->msgs[0]), "%s", msg);
        f->n++;
}

static const struct ca_host_ops fake_ops = {
        .log = fake_log,
        .key_error = fake_key_error,
};

#define SECTION(...)                                                                       \
        ((const struct ca_section){                                                        \
                .name = "test",                                                            \
                .keys = (const struct ca_section_key[]){ __VA_ARGS__ },                    \
                .n_keys = sizeof((const struct ca_section_key[]){ __VA_ARGS__ }) /         \
                          sizeof(struct ca_section_key) })

Test(keys, section_defaults)
{
        struct fake_host f = { .n = 0 };
        struct ca_host host = { .ops = &fake_ops, .userdata = &f };
        const struct ca_section s = { .name = "empty" };
        struct target t;

        memset(&t, 0xAB, sizeof(t));
        cr_assert_eq(ca_section_parse(&host, &s, specs, &t), 0);
        cr_expect_eq(f.n, 0);
        cr_expect_eq(t.flag, true);
        cr_expect_eq(t.u32, 7);
        cr_expect_eq(t.wait_usec, 90ULL * 1000000);
        cr_expect_float_eq(t.share, 5.0, 1e-12);
        cr_expect_float_eq(t.factor, 1.5, 1e-12);
        cr_expect_eq(t.mode, 2);
        cr_expect_str_eq(t.text, "ok-default");
        cr_expect_eq(t.checked, 10, "defaults go through the check hook too");
        cr_expect_str_eq(t.dir, "/var/x");
        /* No default: the field is left as the caller set it. */
        cr_expect_eq(t.u8, 0xAB);
        cr_expect_eq(t.u64, 0xABABABABABABABABULL);
        cr_expect_eq(t.level, (int)0xABABABAB);
}

Test(keys, section_values_override_defaults)
{
        struct fake_host f = { .n = 0 };
        struct ca_host host = { .ops = &fake_ops, .userdata = &f };
        const struct ca_section s = SECTION({ "wait", "2s" }, { "flag", "no" }, { "u8", "3" },
                                            { "text", "ok-x" });
        struct target t = { 0 };

        cr_assert_eq(ca_section_parse(&host, &s, specs, &t), 0);
        cr_expect_eq(f.n, 0);
        cr_expect_eq(t.wait_usec, 2000000);
        cr_expect_eq(t.flag, false);
        cr_expect_eq(t.u8, 3);
        cr_expect_eq(t.u32, 7);
        cr_expect_eq(t.checked, 4);
        cr_expect_eq(t.text, s.keys[3].value, "text points into the section");
}

/* Every bad and unknown key is said, in the order written, and the good ones still stand. */
Test(keys, section_reports_every_error)
{
        struct fake_host f = { .n = 0 };
        struct ca_host host = { .ops = &fake_ops, .userdata = &f };
        const struct ca_section s = SECTION({ "u8", "300" }, { "colour", "red" },
                                            { "wait", "2s" }, { "mode", "sideways" },
                                            { "text", "nope" }, { "Flag", "yes" },
                                            { "dir", "rel" });
        struct target t = { 0 };

        cr_assert_eq(ca_section_parse(&host, &s, specs, &t), -EINVAL);
        cr_assert_eq(f.n, 6);
        cr_expect_str_eq(f.keys[0], "u8");
        cr_expect_str_eq(f.msgs[0], "300 out of range (expected 1..255)");
        cr_expect_str_eq(f.keys[1], "colour");
        cr_expect_str_eq(f.msgs[1], "unknown key (expected flag, u8, u16, u32, u64, wait, share, "
                                    "factor, mode, level, text, dir, name or adapter)");
        cr_expect_str_eq(f.keys[2], "mode");
        cr_expect_str_eq(f.msgs[2], "invalid mode \"sideways\" (expected fast, slow or off)");
        cr_expect_str_eq(f.keys[3], "text");
        cr_expect_str_eq(f.keys[4], "Flag", "key names are case-sensitive");
        cr_expect_str_eq(f.keys[5], "dir");
        /* The good key was applied, the refused ones kept their defaults. */
        cr_expect_eq(t.wait_usec, 2000000);
        cr_expect_eq(t.mode, 2);
        cr_expect_str_eq(t.text, "ok-default");
        cr_expect_str_eq(t.dir, "/var/x");
}

/*
 * An unknown key that looks like a typo of one of the table's (a character dropped, doubled,
 * changed, two swapped, the case) gets a "did you mean"; one far from all of them does not.
 */
Test(keys, unknown_key_did_you_mean)
{
        struct fake_host f = { .n = 0 };
        struct ca_host host = { .ops = &fake_ops, .userdata = &f };
        const struct ca_section s = SECTION({ "wiat", "2s" }, { "Flag", "no" },
                                            { "levell", "1" }, { "colour", "red" },
                                            { "u9", "1" });
        struct target t = { 0 };
        unsigned d = 0;

        cr_assert_eq(ca_section_parse(&host, &s, specs, &t), -EINVAL);
        cr_assert_eq(f.n, 5);
        cr_expect_str_eq(f.msgs[0], "unknown key, did you mean \"wait\"? (expected flag, u8, "
                                    "u16, u32, u64, wait, share, factor, mode, level, text, dir, "
                                    "name or adapter)");
        cr_expect(strncmp(f.msgs[1], "unknown key, did you mean \"flag\"? (", strlen("unknown key, did you mean \"flag\"? (")) == 0, "%s",
                  f.msgs[1]);
        cr_expect(strncmp(f.msgs[2], "unknown key, did you mean \"level\"? (", strlen("unknown key, did you mean \"level\"? (")) == 0, "%s",
                  f.msgs[2]);
        cr_expect(strncmp(f.msgs[3], "unknown key (expected ", strlen("unknown key (expected ")) == 0, "%s", f.msgs[3]);
        /* Two bytes: one edit at most, and the first of equals (u8 before u16...). */
        cr_expect(strncmp(f.msgs[4], "unknown key, did you mean \"u8\"? (", strlen("unknown key, did you mean \"u8\"? (")) == 0, "%s",
                  f.msgs[4]);

        cr_expect_null(ca_key_closest(specs, "intervall_x", &d));
        cr_expect_str_eq(ca_key_closest(specs, "factro", &d), "factor");
        cr_expect_eq(d, 1, "a swap is one edit");
        cr_expect_str_eq(ca_key_closest(specs, "shar", &d), "share");
        cr_expect_null(ca_key_closest(specs, "sha", NULL), "two edits of a short name");
        cr_expect_null(ca_key_closest(specs, "wait", NULL), "a key is no typo of itself");
        cr_expect_null(ca_key_closest(NULL, "wait", NULL));
}

/* A default its own table refuses is a bug of the adapter: said, not hidden. */
Test(keys, section_bad_default_reported)
{
        struct fake_host f = { .n = 0 };
        struct ca_host host = { .ops = &fake_ops, .userdata = &f };
        const struct ca_key_spec table[] = {
                { .name = "n", .type = CA_KEY_UINT, CA_KEY_FIELD(struct target, u32), .def = "11",
                  .min = 1, .max = 10 },
                CA_KEY_END,
        };
        const struct ca_section s = { .name = "empty" };
        struct target t = { 0 };

        cr_assert_eq(ca_section_parse(&host, &s, table, &t), -EINVAL);
        cr_assert_eq(f.n, 1);
        cr_expect_str_eq(f.keys[0], "n");
        cr_expect_str_eq(f.msgs[0], "default \"11\": 11 out of range (expected 1..10)");
}

/* ---- the value parsers under the decimal types ---- */

Test(keys, parse_decimal)
{
        static const struct {
                const char *s;
                int r;
                double v;
        } t[] = {
                { "0", 0, 0.0 },          { "12", 0, 12.0 },          { "12.5", 0, 12.5 },
                { "0.001", 0, 0.001 },    { "1000", 0, 1000.0 },      { "007.50", 0, 7.5 },
                { "1000.0001", -ERANGE, 0 }, { "99999999999999999999999", -ERANGE, 0 },
                { "", -EINVAL, 0 },       { ".5", -EINVAL, 0 },       { "5.", -EINVAL, 0 },
                { "-1", -EINVAL, 0 },     { "+1", -EINVAL, 0 },       { "1e3", -EINVAL, 0 },
                { "0x10", -EINVAL, 0 },   { "nan", -EINVAL, 0 },      { "inf", -EINVAL, 0 },
                { "1,5", -EINVAL, 0 },    { " 1", -EINVAL, 0 },       { "1 ", -EINVAL, 0 },
                { "5%", -EINVAL, 0 },     { "99999999999999999999999x", -EINVAL, 0 },
        };

        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                double v = -42;

                cr_expect_eq(ca_parse_decimal(t[i].s, 0, 1000, &v), t[i].r, "\"%s\"", t[i].s);
                if (t[i].r == 0)
                        cr_expect_float_eq(v, t[i].v, 1e-12, "\"%s\"", t[i].s);
                else
                        cr_expect_eq(v, -42, "\"%s\": written on failure", t[i].s);
        }
        cr_expect_eq(ca_parse_decimal(NULL, 0, 1, &(double){ 0 }), -EINVAL);
        cr_expect_eq(ca_parse_decimal("0.5", 1, 2, &(double){ 0 }), -ERANGE);
}

Test(keys, parse_percent)
{
        double v = -1;

        cr_expect_eq(ca_parse_percent("12.5%", &v), 0);
        cr_expect_float_eq(v, 12.5, 1e-12);
        cr_expect_eq(ca_parse_percent("100", &v), 0);
        cr_expect_float_eq(v, 100.0, 1e-12);
        cr_expect_eq(ca_parse_percent("0%", &v), 0);
        cr_expect_float_eq(v, 0.0, 1e-12);
        v = -1;
        cr_expect_eq(ca_parse_percent("100.01", &v), -ERANGE);
        cr_expect_eq(ca_parse_percent("5%%", &v), -EINVAL);
        cr_expect_eq(ca_parse_percent("%", &v), -EINVAL);
        cr_expect_eq(ca_parse_percent("-1", &v), -EINVAL);
        cr_expect_eq(ca_parse_percent(NULL, &v), -EINVAL);
        cr_expect_eq(v, -1, "written on failure");
}
