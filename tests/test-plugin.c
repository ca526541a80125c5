/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests of the plugin host API's checks (lib/plugin.c): what the host accepts from an
 * adapter's stats hook before it goes on the bus (cacheage/plugin.h, struct ca_adapter_stat).
 */

#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cacheage/plugin.h"

static int check(const struct ca_adapter_stat *stat, char *reason, size_t len)
{
        reason[0] = '\0';
        return ca_adapter_stat_check(stat, reason, len);
}

Test(plugin, adapter_stat_well_formed)
{
        char reason[256], help[CA_ADAPTER_STAT_HELP_MAX + 1], name[CA_ADAPTER_STAT_NAME_MAX + 1];
        const struct ca_adapter_stat ok[] = {
                { .name = "lookups", .kind = CA_STAT_COUNTER },
                { .name = "nr_dentry", .kind = CA_STAT_GAUGE, .unit = "dentries",
                  .help = "dentries in the model (as in /proc/sys/fs/dentry-state)" },
                { .name = "p99_latency_usec", .kind = CA_STAT_GAUGE, .unit = "usec", .help = "" },
                { .name = name, .kind = CA_STAT_GAUGE, .help = help },
        };

        memset(name, 'a', CA_ADAPTER_STAT_NAME_MAX);
        name[CA_ADAPTER_STAT_NAME_MAX] = '\0';
        memset(help, '~', CA_ADAPTER_STAT_HELP_MAX);
        help[CA_ADAPTER_STAT_HELP_MAX] = '\0';
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                cr_expect_eq(check(&ok[i], reason, sizeof(reason)), 0, "%zu: %s", i, reason);
}

Test(plugin, adapter_stat_malformed_says_which_and_why)
{
        char reason[256], long_name[CA_ADAPTER_STAT_NAME_MAX + 2];
        char long_help[CA_ADAPTER_STAT_HELP_MAX + 2];
        const struct {
                struct ca_adapter_stat stat;
                const char *why;
        } bad[] = {
                { { .name = NULL }, "statistic \"(null)\": the name must be snake_case" },
                { { .name = "" }, "statistic \"\": the name must be snake_case" },
                { { .name = "Lookups" }, "statistic \"Lookups\": the name must be snake_case" },
                { { .name = "two words" }, "statistic \"two words\": the name must be" },
                { { .name = "9lives" }, "statistic \"9lives\": the name must be snake_case" },
                { { .name = "bell\a" }, "statistic \"bell?\": the name must be snake_case" },
                { { .name = long_name }, "the name must be snake_case" },
                { { .name = "x", .kind = (enum ca_stat_kind)2 },
                  "statistic \"x\": kind 2 is neither CA_STAT_COUNTER nor CA_STAT_GAUGE" },
                { { .name = "x", .kind = (enum ca_stat_kind)-1 }, "kind -1 is neither" },
                { { .name = "x", .unit = "" }, "statistic \"x\": the unit must be [a-z0-9_]+" },
                { { .name = "x", .unit = "µs" }, "statistic \"x\": the unit must be" },
                { { .name = "x", .help = "two\nlines" },
                  "statistic \"x\": the help must be one line" },
                { { .name = "x", .help = "caf\xc3\xa9" },
                  "the help must be one line of printable ASCII" },
                { { .name = "x", .help = long_help }, "the help must be one line" },
        };
        char reason_small[16];

        memset(long_name, 'a', CA_ADAPTER_STAT_NAME_MAX + 1);
        long_name[CA_ADAPTER_STAT_NAME_MAX + 1] = '\0';
        memset(long_help, 'h', CA_ADAPTER_STAT_HELP_MAX + 1);
        long_help[CA_ADAPTER_STAT_HELP_MAX + 1] = '\0';
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                cr_expect_eq(check(&bad[i].stat, reason, sizeof(reason)), -EINVAL, "%zu", i);
                cr_expect(strstr(reason, bad[i].why), "%zu: \"%s\" lacks \"%s\"", i, reason,
                          bad[i].why);
        }
        cr_expect_eq(check(NULL, reason, sizeof(reason)), -EINVAL);
        cr_expect(strstr(reason, "no statistic"), "%s", reason);
        /* A short buffer is cut, not overrun. */
        cr_expect_eq(check(&bad[2].stat, reason_small, sizeof(reason_small)), -EINVAL);
        cr_expect_eq(strlen(reason_small), sizeof(reason_small) - 1);
}
