/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* CA_PLUGIN_DIR, from the build. */
#include "cacheage-build.h"
#include "list.h" /* container_of */
#include "plugins.h"
#include "trust.h"

struct plugin_module {
        char *path;
        int fd;         /* the file loaded, as /proc/self/fd/<fd>: open while it is loaded */
        void *dl;
        const struct ca_plugin *plugin;
};

struct plugins {
        struct plugin_module v[PLUGINS_MAX];
        size_t n;
};

struct plugins *plugins_new(void)
{
        return calloc(1, sizeof(struct plugins));
}

struct plugins *plugins_free(struct plugins *p)
{
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n; i++) {
                dlclose(p->v[i].dl);
                close(p->v[i].fd);
                free(p->v[i].path);
        }
        free(p);
        return NULL;
}

const char *plugins_dir(const struct ca_conf *conf)
{
        const char *e = getenv("CACHEAGED_PLUGIN_DIR");

        /* A plugin_dir written in the configuration wins; the variable is for build trees. */
        if (e && *e && (!conf->plugin_dir || strcmp(conf->plugin_dir, CA_PLUGIN_DIR) == 0))
                return e;
        return conf->plugin_dir ? conf->plugin_dir : CA_PLUGIN_DIR;
}

int plugins_get(struct plugins *p, const char *dir, const struct ca_conf_cache *cc,
                const struct ca_plugin **ret, struct ca_errors *errors)
{
        const struct ca_plugin *table;
        char reason[512], fd_path[64];
        char *path;
        void *dl;
        int fd, r;

        if (!ca_valid_name(cc->adapter, true, CA_CONF_NAME_MAX)) {
                ca_errors_add(errors, "%s:%u: [cache %s]: invalid adapter name '%s'", cc->file,
                              cc->line, cc->name, cc->adapter ? cc->adapter : "");
                return -EINVAL;
        }
        if (asprintf(&path, "%s/%s.so", dir, cc->adapter) < 0) {
                ca_errors_add(errors, "Out of memory");
                return -ENOMEM;
        }
        for (size_t i = 0; i < p->n; i++)
                if (strcmp(p->v[i].path, path) == 0) {
                        free(path);
                        *ret = p->v[i].plugin;
                        return 0;
                }

        /* dlerror() alone says "cannot open shared object file", without the why. */
        if (access(path, R_OK) < 0) {
                r = -errno;
                ca_errors_add(errors, "%s:%u: [cache %s]: no plugin for adapter '%s': %s: %s",
                              cc->file, cc->line, cc->name, cc->adapter, path, strerror(-r));
                goto out_free_path;
        }
        if (p->n >= PLUGINS_MAX) {
                ca_errors_add(errors, "%s:%u: Failed to load plugin %s: more than %d plugins",
                              cc->file, cc->line, path, PLUGINS_MAX);
                r = -E2BIG;
                goto out_free_path;
        }
        /*
         * The daemon runs as root and runs whatever it loads: the module is opened once, along
         * a path of trusted directories (trust_open()), and that very file is loaded through
         * /proc/self/fd, so nothing can be swapped between the check and dlopen().
         */
        r = trust_open(path, &fd, reason, sizeof(reason));
        if (r < 0) {
                ca_errors_add(errors, "%s:%u: Failed to load plugin %s: %s", cc->file, cc->line,
                              path, reason);
                goto out_free_path;
        }
        /*
         * ld.so knows a loaded object by its name, so the descriptor stays open while the
         * module is loaded: no two modules are ever loaded under the same /proc name.
         */
        snprintf(fd_path, sizeof(fd_path), "/proc/self/fd/%d", fd);
        dl = dlopen(fd_path, RTLD_NOW | RTLD_LOCAL);
        if (!dl) {
                ca_errors_add(errors, "%s:%u: Failed to load plugin %s: %s", cc->file, cc->line,
                              path, dlerror());
                r = -ELIBBAD;
                goto out_close_fd;
        }
        for (size_t i = 0; i < p->n; i++)
                if (p->v[i].dl == dl) {
                        /* The same file under another adapter name: its table says which. */
                        ca_errors_add(errors, "%s:%u: Failed to load plugin %s: the same module "
                                      "as %s", cc->file, cc->line, path, p->v[i].path);
                        r = -EEXIST;
                        goto out_dlclose;
                }
        table = dlsym(dl, CA_PLUGIN_SYMBOL);
        if (!table) {
                ca_errors_add(errors, "%s:%u: Failed to load plugin %s: no symbol %s", cc->file,
                              cc->line, path, CA_PLUGIN_SYMBOL);
                r = -ELIBBAD;
                goto out_dlclose;
        }
        r = ca_plugin_check(table, cc->adapter, reason, sizeof(reason));
        if (r < 0) {
                ca_errors_add(errors, "%s:%u: Failed to load plugin %s: %s", cc->file, cc->line,
                              path, reason);
                goto out_dlclose;
        }

        p->v[p->n++] = (struct plugin_module){ .path = path, .fd = fd, .dl = dl, .plugin = table };
        *ret = table;
        return 0;

out_dlclose:
        dlclose(dl);
out_close_fd:
        close(fd);
out_free_path:
        free(path);
        return r;
}

/*
 * The section's text (its name, keys and values) is copied into the section's own allocation:
 * ca_section_parse() hands the plugin pointers into it, which the plugin may keep for as long
 * as its instance lives. A reload that keeps the instance frees the configuration the section
 * was made from; the copy lives on, unchanged, until section_free().
 */
struct ca_section *section_new(const struct ca_conf_cache *cc)
{
        size_t text = strlen(cc->name) + 1, keys = cc->n_keys * sizeof(struct ca_section_key);
        struct section *s;
        char *p;

        for (size_t i = 0; i < cc->n_keys; i++)
                text += strlen(cc->keys[i].key) + 1 + strlen(cc->keys[i].value) + 1;
        s = calloc(1, sizeof(*s) + keys + text);
        if (!s)
                return NULL;
        p = (char *)s->keys + keys;
        s->conf = cc;
        s->pub.name = p;
        p = stpcpy(p, cc->name) + 1;
        for (size_t i = 0; i < cc->n_keys; i++) {
                s->keys[i].key = p;
                p = stpcpy(p, cc->keys[i].key) + 1;
                s->keys[i].value = p;
                p = stpcpy(p, cc->keys[i].value) + 1;
        }
        s->pub.keys = s->keys;
        s->pub.n_keys = cc->n_keys;
        return &s->pub;
}

struct ca_section *section_free(struct ca_section *s)
{
        free(s ? container_of(s, struct section, pub) : NULL);
        return NULL;
}

const struct ca_conf_cache *section_conf(const struct ca_section *s)
{
        return container_of(s, const struct section, pub)->conf;
}

void section_rebind(struct ca_section *pub, const struct ca_conf_cache *cc)
{
        struct section *s = container_of(pub, struct section, pub);

        assert(cc->n_keys == pub->n_keys && strcmp(cc->name, pub->name) == 0);
        s->conf = cc;
}
