/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cacheagectl metrics: every statistic in the Prometheus text format, as the daemon writes it. */

#include <string.h>

#include <systemd/sd-bus.h>

#include "bus-def.h"
#include "cacheagectl.h"

int cmd_metrics(sd_bus *bus, int argc, char **argv)
{
        sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *text;
        int r;

        if (argc > 0)
                return fail(EXIT_USAGE, "'metrics' takes no arguments");
        r = sd_bus_call_method(bus, CA_BUS_NAME, CA_BUS_MANAGER_PATH, CA_BUS_MANAGER_IFACE,
                               "GetMetrics", &error, &reply, NULL);
        if (r < 0) {
                r = call_failed(&error, r, "metrics", NULL);
                sd_bus_error_free(&error);
                return r;
        }
        r = sd_bus_message_read(reply, "s", &text);
        if (r < 0) {
                sd_bus_message_unref(reply);
                return fail(EXIT_FAILED, "Failed to parse the metrics: %s", strerror(-r));
        }
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
        sd_bus_message_unref(reply);
        return 0;
}
