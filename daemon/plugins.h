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
 * The daemon's side of a [cache NAME] section handed to a plugin: the public struct
 * ca_section (name and adapter keys, pointing into the text copied after keys[]) and the
 * parsed section of the configuration in force, which says where each key was written.
 */
struct section {
        struct ca_section pub;
        const struct ca_conf_cache *conf; /* rebound at each reload that keeps the instance */
        struct ca_section_key keys[];     /* then the name, keys and values, NUL-terminated */
};

/*
 * section_new() - the plugin's view of @cc, with a copy of its text that lives until
 * section_free() (plugin.h: the text lives as long as the instance); NULL when out of memory.
 */
struct ca_section *section_new(const struct ca_conf_cache *cc);
struct ca_section *section_free(struct ca_section *s);
/* section_conf() - the parsed section behind @s. */
const struct ca_conf_cache *section_conf(const struct ca_section *s);
/*
 * section_rebind() - let @s say where its keys are written in @cc, a section of a newer
 * configuration with the same name and the same adapter keys and values (which is what keeps
 * an instance across a reload). The text the plugin sees is @s's own copy and does not
 * change. Allocates nothing, so it cannot fail halfway through applying a configuration.
 */
void section_rebind(struct ca_section *s, const struct ca_conf_cache *cc);

struct plugins;

struct plugins *plugins_new(void);
/* plugins_free() - dlclose() every module; instances must be destroyed first. NULL-safe. */
struct plugins *plugins_free(struct plugins *p);

/*
 * plugins_get() - the plugin of @cc's adapter, from @dir, loaded now or earlier. A module is
 * only loaded when it and its directory (symlinks resolved) belong to root or the daemon's
 * user and nobody else may write them.
 * Returns 0 and the table in *ret, or a negative errno after adding one message to
 * @errors that names the path, the adapter and the section that asked for it.
 */
int plugins_get(struct plugins *p, const char *dir, const struct ca_conf_cache *cc,
                const struct ca_plugin **ret, struct ca_errors *errors);

/* plugins_dir() - $CACHEAGED_PLUGIN_DIR when the configuration kept the built-in plugin_dir. */
const char *plugins_dir(const struct ca_conf *conf);
