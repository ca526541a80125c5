/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "trust.h"

int stat_untrusted(const struct stat *st, const char *path, char *reason, size_t reason_len)
{
        if (st->st_uid != 0 && st->st_uid != geteuid()) {
                snprintf(reason, reason_len, "%s is owned by uid %u, not by root", path,
                         (unsigned)st->st_uid);
                return -EPERM;
        }
        if ((st->st_mode & S_IWOTH) ||
            ((st->st_mode & S_IWGRP) && st->st_gid != 0 && st->st_gid != getegid())) {
                snprintf(reason, reason_len, "%s is writable by %s", path,
                         st->st_mode & S_IWOTH ? "everyone" : "its group");
                return -EPERM;
        }
        return 0;
}
