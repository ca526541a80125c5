/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Placeholder until the D-Bus API lands: only "--bus none" is served. */

#include <errno.h>
#include <stddef.h>

#include "manager.h"

int manager_bus_new(struct manager *m, const char *bus, struct manager_bus **ret)
{
        return -EOPNOTSUPP;
}

struct manager_bus *manager_bus_free(struct manager_bus *b)
{
        return NULL;
}

void manager_bus_cache_changed(struct manager_bus *b, struct manager_cache *c)
{
}

void manager_bus_caches_changed(struct manager_bus *b)
{
}
