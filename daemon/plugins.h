/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Adapter plugins: <plugin_dir>/<adapter>.so, each module dlopen()ed once
 * (RTLD_NOW|RTLD_LOCAL), its table checked with ca_plugin_check(), and dlclose()d when the
 * daemon ends. A refused module is not kept: the next section naming it is refused again.
 */

#include <stddef.h>

#include "cacheage/plugin.h"
#include "config.h"

#define PLUGINS_MAX 64 /* distinct modules loaded at once */

/*
 * The daemon's view of a [cache NAME] section, handed to plugins (they see it through the
 * ca_section_* accessors in libcacheage, which read this definition).
 */
struct ca_section {
        const struct ca_conf_cache *conf;
};

struct plugins;

struct plugins *plugins_new(void);
/* plugins_free() - dlclose() every module; instances must be destroyed first. NULL-safe. */
struct plugins *plugins_free(struct plugins *p);

/*
 * plugins_get() - the plugin of @cc's adapter, from @dir, loaded now or earlier.
 * Returns 0 and the table in *ret, or a negative errno after adding one message to
 * @errors that names the path, the adapter and the section that asked for it.
 */
int plugins_get(struct plugins *p, const char *dir, const struct ca_conf_cache *cc,
                const struct ca_plugin **ret, struct ca_errors *errors);

/* plugins_dir() - $CACHEAGED_PLUGIN_DIR when the configuration kept the built-in plugin_dir. */
const char *plugins_dir(const struct ca_conf *conf);
