/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cacheagectl metrics: every statistic in the Prometheus text format, as the daemon writes it. */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

#include "bus-def.h"
#include "cacheagectl.h"

/*
 * The text page by page (GetMetricsPage: a reply holds at most 256 KiB), into *ret_text; a reload
 * that changed the caches between two pages makes it read again from the start, at most 3
 * times.
 */
static int fetch_metrics(sd_bus *bus, char **ret_text, sd_bus_error *error)
{
        for (unsigned attempt = 0;; attempt++) {
                uint64_t cursor = 0;
                char *text = NULL;
                size_t len = 0;
                FILE *f;
                int r;

                f = open_memstream(&text, &len);
                if (!f)
                        return -ENOMEM;
                do {
                        sd_bus_message *reply = NULL;
                        const char *page;

                        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH,
                                               CA_BUS_MANAGER_IFACE, "GetMetricsPage", error,
                                               &reply, "t", cursor);
                        if (r < 0)
                                break;
                        r = sd_bus_message_read(reply, "st", &page, &cursor);
                        if (r >= 0)
                                fputs(page, f);
                        sd_bus_message_unref(reply);
                        if (r < 0)
                                r = -EBADMSG;
                } while (r >= 0 && cursor != 0);
                if (fclose(f) != 0 && r >= 0)
                        r = -ENOMEM;
                if (r >= 0) {
                        *ret_text = text;
                        return 0;
                }
                free(text);
                if (attempt < 3 && sd_bus_error_has_name(error, CA_BUS_ERROR_CHANGED)) {
                        sd_bus_error_free(error);
                        continue;
                }
                return r;
        }
}

int cmd_metrics(sd_bus *bus, int argc, char **argv)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *text = NULL;
        int r;

        if (argc > 0)
                return fail(EXIT_USAGE, "'metrics' takes no arguments");
        r = fetch_metrics(bus, &text, &error);
        if (r < 0 && sd_bus_error_is_set(&error)) {
                r = call_failed(&error, r, "metrics", NULL);
                sd_bus_error_free(&error);
                return r;
        }
        if (r < 0)
                return fail(EXIT_FAILED, "Failed to read the metrics: %s", strerror(-r));
        if (arg_json) {
                struct json_doc j;
                FILE *f = json_begin(&j);

                fprintf(f, "{\"text\":");
                json_string(f, text);
                fputc('}', f);
                json_end(&j);
        } else {
                fputs(text, stdout);
        }
        free(text);
        return 0;
}
