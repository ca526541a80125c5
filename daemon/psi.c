/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psi.h"

#define PSI_FILE_MAX 512 /* bytes: two lines of four figures */

/*
 * One figure of a line, " NAME=VALUE" followed by a blank or the end: 0, -ENOENT when the
 * line has no such figure, -EBADMSG when it is malformed. Percentages are 0..100.
 */
static int psi_figure(const char *line, const char *name, double *ret_pct, uint64_t *ret_n)
{
        char key[16], *end;
        const char *p;

        snprintf(key, sizeof(key), " %s=", name);
        p = strstr(line, key);
        if (!p)
                return -ENOENT;
        p += strlen(key);
        errno = 0;
        if (ret_pct) {
                *ret_pct = strtod(p, &end);
                if (!(*ret_pct >= 0 && *ret_pct <= 100)) /* NaN too */
                        return -EBADMSG;
        } else {
                if (*p < '0' || *p > '9')
                        return -EBADMSG;
                *ret_n = strtoull(p, &end, 10);
        }
        if (errno || end == p || (*end != ' ' && *end != '\0'))
                return -EBADMSG;
        return 0;
}

/* A "some" or "full" line, from its first blank: avg10 required, the rest if there. */
static int psi_line(const char *line, struct ca_psi *ret)
{
        struct ca_psi v = { 0 };
        int r;

        r = psi_figure(line, "avg10", &v.avg10_pct, NULL);
        if (r < 0)
                return -EBADMSG;
        if ((r = psi_figure(line, "avg60", &v.avg60_pct, NULL)) == -EBADMSG ||
            (r = psi_figure(line, "avg300", &v.avg300_pct, NULL)) == -EBADMSG ||
            (r = psi_figure(line, "total", NULL, &v.total_usec)) == -EBADMSG)
                return r;
        *ret = v;
        return 0;
}

int psi_read(const char *path, struct ca_psi *ret_some, struct ca_psi *ret_full)
{
        struct ca_psi some, full = { 0 };
        bool have_some = false;
        char buf[PSI_FILE_MAX];
        char *line, *next;
        size_t n;
        FILE *f;
        int r;

        f = fopen(path, "re");
        if (!f)
                return -errno;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';

        /* "some" is the first line; "full" (not for cpu on older kernels) follows. */
        for (line = buf; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                if (strncmp(line, "some ", 5) == 0) {
                        r = psi_line(line + 4, &some);
                        have_some = r == 0;
                } else if (strncmp(line, "full ", 5) == 0) {
                        r = psi_line(line + 4, &full);
                } else {
                        r = 0; /* a line a later kernel may add */
                }
                if (r < 0)
                        return r;
        }
        if (!have_some)
                return -EBADMSG;
        if (ret_some)
                *ret_some = some;
        if (ret_full)
                *ret_full = full;
        return 0;
}

int psi_read_some_avg10(const char *path, double *ret_pct)
{
        struct ca_psi some;
        int r;

        r = psi_read(path, &some, NULL);
        if (r < 0)
                return r;
        *ret_pct = some.avg10_pct;
        return 0;
}

int psi_read_pressure(const char *dir, struct ca_pressure *ret)
{
        struct ca_pressure p;
        const struct {
                const char *name;
                struct ca_psi *some, *full;
        } files[] = {
                { "cpu", &p.cpu_some, &p.cpu_full },
                { "memory", &p.memory_some, &p.memory_full },
                { "io", &p.io_some, &p.io_full },
        };
        char path[4096];
        int r;

        for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
                r = psi_read(path, files[i].some, files[i].full);
                if (r == -ENOENT)
                        return -EOPNOTSUPP;
                if (r < 0)
                        return r;
        }
        *ret = p;
        return 0;
}
