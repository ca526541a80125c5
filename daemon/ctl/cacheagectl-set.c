/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheagectl set: a cache's settings, parsed and checked here with the daemon's own parsers
 * and limits before anything is sent; with --persistent, a drop-in and a reload.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "bus-def.h"
#include "cacheage/value.h"
#include "cacheagectl.h"
#include "config.h"
#include "dropin.h"

struct setting {
        const char *key;      /* on the command line */
        const char *property; /* on the bus */
        const char *conf_key; /* in the configuration */
        char type;
        uint64_t value;
};

static int parse_setting(const char *arg, struct setting *ret)
{
        static const struct {
                const char *key, *property, *conf_key;
                char type;
        } known[] = {
                { "interval", "IntervalUSec", "interval", 't' },
                { "single-use-age", "SingleUseAge", "single_use_age", 'u' },
                { "max-age", "MaxAge", "max_age", 'u' },
                { "enabled", "Enabled", "enabled", 'b' },
        };
        const char *eq = strchr(arg, '=');
        char d1[CA_DURATION_MAX_STR], d2[CA_DURATION_MAX_STR];
        uint64_t v;
        int r;

        if (!eq || eq == arg)
                return fail(EXIT_USAGE, "'%s' is not KEY=VALUE (keys: interval, single-use-age, "
                            "max-age, enabled)", arg);
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
                const char *val = eq + 1;

                if (strlen(known[i].key) != (size_t)(eq - arg) ||
                    strncmp(arg, known[i].key, (size_t)(eq - arg)) != 0)
                        continue;
                switch (known[i].type) {
                case 't':
                        r = ca_parse_duration(val, &v);
                        if (r < 0 || v < CA_INTERVAL_MIN_USEC || v > CA_INTERVAL_MAX_USEC)
                                return fail(EXIT_USAGE, "interval: '%s' is not a duration "
                                            "between %s and %s (e.g. 30s, 5min)", val,
                                            ca_format_duration(CA_INTERVAL_MIN_USEC, d1, sizeof(d1)),
                                            ca_format_duration(CA_INTERVAL_MAX_USEC, d2, sizeof(d2)));
                        break;
                case 'u':
                        r = ca_parse_uint(val, 1, CA_AGE_MAX, &v);
                        if (r < 0)
                                return fail(EXIT_USAGE, "%s: '%s' is not a number of rotations "
                                            "between 1 and %u", known[i].key, val,
                                            (unsigned)CA_AGE_MAX);
                        break;
                default:
                        r = ca_parse_bool(val);
                        if (r < 0)
                                return fail(EXIT_USAGE, "enabled: '%s' is not a boolean "
                                            "(yes/no)", val);
                        v = (uint64_t)r;
                }
                *ret = (struct setting){ .key = known[i].key, .property = known[i].property,
                                         .conf_key = known[i].conf_key, .type = known[i].type,
                                         .value = v };
                return 0;
        }
        return fail(EXIT_USAGE, "Unknown setting '%.*s' (keys: interval, single-use-age, max-age, "
                    "enabled)", (int)(eq - arg), arg);
}

/*
 * The two ages must end with max-age >= single-use-age, and the daemon checks every write on
 * its own: check the result against the cache's current ages before anything is sent, and put
 * the age writes first (a refusal then changes nothing), in an order whose every step is
 * valid: max-age first when it does not go below the current single-use age, else
 * single-use-age first (one of the two always works).
 */
static int order_ages(sd_bus *bus, const char *path, const char *cache, struct setting *s,
                      size_t n)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        uint32_t su, mx, cur_su;
        bool any = false, max_first;
        size_t k = 0;
        int r;

        for (size_t i = 0; i < n; i++)
                any = any || s[i].type == 'u';
        if (!any)
                return 0;
        r = sd_bus_get_property_trivial(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE, "SingleUseAge",
                                        &error, 'u', &su);
        if (r >= 0)
                r = sd_bus_get_property_trivial(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE,
                                                "MaxAge", &error, 'u', &mx);
        if (r < 0) {
                r = call_failed(&error, r, "set", cache);
                sd_bus_error_free(&error);
                return r;
        }
        cur_su = su;
        for (size_t i = 0; i < n; i++) { /* each key once: parse_settings() refused the rest */
                if (s[i].type != 'u')
                        continue;
                if (strcmp(s[i].property, "MaxAge") == 0)
                        mx = (uint32_t)s[i].value;
                else
                        su = (uint32_t)s[i].value;
        }
        if (mx < su)
                return fail(EXIT_USAGE, "max-age %u is below single-use-age %u (a reused object "
                            "stays at least as long as one used once)", mx, su);

        max_first = mx >= cur_su;
        for (int pass = 0; pass < 2; pass++) /* the ages, in order, before everything else */
                for (size_t i = k; i < n; i++)
                        if (s[i].type == 'u' &&
                            strcmp(s[i].property, (pass == 0) == max_first ? "MaxAge"
                                                                          : "SingleUseAge") == 0) {
                                struct setting t = s[i];

                                memmove(&s[k + 1], &s[k], (i - k) * sizeof(*s));
                                s[k++] = t;
                        }
        return 0;
}

/*
 * set --persistent: the settings as a drop-in where the daemon reads the administrator's
 * (its DropInDirectory), then a reload. A reload that fails puts the file back as it was, so a
 * refused change is not left behind for the next reload to trip on.
 */
static int set_persistent(sd_bus *bus, const char *path, const char *cache,
                          const struct setting *s, size_t n)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        struct dropin_key *keys = NULL;
        char (*values)[CA_DURATION_MAX_STR] = NULL;
        char *dir = NULL, *file = NULL, *old = NULL, *name = NULL, err[1024];
        int r;

        /* Only a cache that exists gets a file. */
        r = sd_bus_get_property_string(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE, "Name", &error,
                                       &name);
        free(name);
        if (r >= 0)
                r = sd_bus_get_property_string(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH,
                                               CA_BUS_MANAGER_IFACE, "DropInDirectory", &error,
                                               &dir);
        if (r < 0) {
                r = call_failed(&error, r, "set", cache);
                sd_bus_error_free(&error);
                return r;
        }
        keys = calloc(n, sizeof(*keys));
        values = calloc(n, sizeof(*values));
        if (!keys || !values) {
                r = fail(EXIT_FAILED, "Out of memory");
                goto out_free;
        }
        for (size_t i = 0; i < n; i++) {
                keys[i].key = s[i].conf_key;
                keys[i].value = values[i];
                if (s[i].type == 't')
                        ca_format_duration(s[i].value, values[i], sizeof(values[i]));
                else if (s[i].type == 'b')
                        snprintf(values[i], sizeof(values[i]), "%s", s[i].value ? "yes" : "no");
                else
                        snprintf(values[i], sizeof(values[i]), "%" PRIu64, s[i].value);
        }
        r = dropin_update(dir, cache, keys, n, &file, &old, err, sizeof(err));
        if (r == -EACCES || r == -EPERM || r == -EROFS) {
                r = fail(EXIT_DENIED, "Permission denied: %s (set --persistent needs root)", err);
                goto out_free;
        }
        if (r < 0) {
                r = fail(EXIT_FAILED, "%s", err);
                goto out_free;
        }
        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH, CA_BUS_MANAGER_IFACE,
                               "Reload", &error, NULL, NULL);
        if (r < 0) {
                int q = dropin_restore(file, old);

                if (sd_bus_error_has_name(&error, CA_BUS_ERROR_CONFIG))
                        r = fail_lines(EXIT_FAILED, "Reload failed, %s %s:\n%s", file,
                                 q < 0 ? "could not be put back" : "was put back as it was",
                                 error.message ? error.message : "(no details)");
                else
                        r = call_failed(&error, r, "reload", NULL);
                sd_bus_error_free(&error);
                goto out_free;
        }
        if (!arg_json)
                printf("Wrote %s and reloaded cacheaged: in force now and after a restart.\n",
                       file);
        r = print_done_file("set", cache, file);

out_free:
        free(old);
        free(file);
        free(values);
        free(keys);
        free(dir);
        return r;
}

/* The settings of 'set NAME KEY=VALUE...', each key once, all checked: into *ret (malloc()ed). */
static int parse_settings(int argc, char **argv, struct setting **ret)
{
        struct setting *s;
        int r;

        if (argc < 2)
                return fail(EXIT_USAGE, "'set' takes a cache name and KEY=VALUE settings, "
                            "e.g. 'set %s interval=30s'", argc ? argv[0] : "NAME");
        s = calloc((size_t)argc, sizeof(*s));
        if (!s)
                return fail(EXIT_FAILED, "Out of memory");
        for (int i = 1; i < argc; i++) {
                r = parse_setting(argv[i], &s[i]);
                if (r != 0)
                        goto out_free;
                /* Which of two values was meant cannot be guessed: neither is sent. */
                for (int j = 1; j < i; j++)
                        if (strcmp(s[j].key, s[i].key) == 0) {
                                r = fail(EXIT_USAGE, "%s is given twice ('%s' and '%s')",
                                         s[i].key, argv[j], argv[i]);
                                goto out_free;
                        }
        }
        *ret = s;
        return 0;
out_free:
        free(s);
        return r;
}

/* A bad command line is said as such, whether a daemon runs or not: before connecting. */
int check_set(int argc, char **argv)
{
        struct setting *s = NULL;
        int r;

        r = parse_settings(argc, argv, &s);
        free(s);
        return r;
}

int cmd_set(sd_bus *bus, int argc, char **argv)
{
        struct setting *s = NULL;
        char *path = NULL;
        int r;

        /* Everything is checked before anything is sent. */
        r = parse_settings(argc, argv, &s);
        if (r != 0)
                return r;
        r = sd_bus_path_encode(CA_BUS_CACHE_PREFIX, argv[0], &path);
        if (r < 0) {
                r = fail(EXIT_FAILED, "Out of memory");
                goto out_free;
        }
        r = order_ages(bus, path, argv[0], s + 1, (size_t)argc - 1);
        if (r != 0)
                goto out_free;
        if (arg_persistent) {
                r = set_persistent(bus, path, argv[0], s + 1, (size_t)argc - 1);
                goto out_free;
        }
        for (int i = 1; i < argc; i++) {
                sd_bus_error error = SD_BUS_ERROR_NULL;

                switch (s[i].type) {
                case 't':
                        r = sd_bus_set_property(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE,
                                                s[i].property, &error, "t", s[i].value);
                        break;
                case 'u':
                        r = sd_bus_set_property(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE,
                                                s[i].property, &error, "u",
                                                (uint32_t)s[i].value);
                        break;
                default:
                        r = sd_bus_set_property(bus, CA_BUS_NAME, path, CA_BUS_CACHE_IFACE,
                                                s[i].property, &error, "b", (int)s[i].value);
                }
                if (r < 0) {
                        r = call_failed(&error, r, "set", argv[0]);
                        sd_bus_error_free(&error);
                        goto out_free;
                }
        }
        /* As systemctl set-property --runtime: the configuration still says otherwise. */
        if (!arg_json)
                printf("Set on %s until cacheaged reloads or restarts (--persistent writes it to "
                       "the configuration).\n", argv[0]);
        r = print_done("set", argv[0]);
out_free:
        free(path);
        free(s);
        return r;
}
