/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A plugin built for the previous ABI: the daemon must refuse it by number, naming the file. */

#include <stddef.h>

#include "cacheage/plugin.h"

static int badabi_create(struct ca_host *host, const struct ca_section *section,
                         void **ret_instance)
{
        *ret_instance = NULL;
        return 0;
}

static void badabi_destroy(void *instance)
{
}

__attribute__((visibility("default"))) const struct ca_plugin cacheage_plugin = {
        .abi = CA_PLUGIN_ABI - 1, /* the ABI before this one */
        .size = sizeof(struct ca_plugin),
        .name = "badabi",
        .create = badabi_create,
        .destroy = badabi_destroy,
};
