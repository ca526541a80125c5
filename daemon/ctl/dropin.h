/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The drop-in "cacheagectl set --persistent" writes, as "systemctl set-property" writes its
 * own: one file per cache, DIR/50-NAME.conf, holding "[cache NAME]" and the keys set so far.
 * A key set again replaces its line, the other lines stay; a file of that name with another
 * section in it is not ours, and is left alone. The file is replaced whole (a temporary file,
 * then rename()), so the daemon never reads half of it.
 */

#include <stddef.h>

#define DROPIN_PRIORITY "50"     /* the file name's prefix: after packages' 10-..40- */
#define DROPIN_SIZE_MAX 65536    /* bytes of an existing drop-in we rewrite */

struct dropin_key {
        const char *key;   /* as the configuration writes it: "max_age" */
        const char *value; /* as it reads it: "8", "30s", "no" */
};

/*
 * dropin_update() - make @dir/50-@cache.conf set @keys (creating @dir and the file when
 * missing). Stores the file's path in *ret_path and its earlier content in *ret_old (NULL
 * when there was none), both malloc()ed, for dropin_restore(). Returns 0, or a negative errno
 * with the reason in @err (-EEXIST: the file is not one of ours).
 */
int dropin_update(const char *dir, const char *cache, const struct dropin_key *keys, size_t n_keys,
                  char **ret_path, char **ret_old, char *err, size_t err_len);

/* dropin_restore() - put back what dropin_update() replaced (@old NULL: remove @path). */
int dropin_restore(const char *path, const char *old);
