/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "psi.h"

#define PSI_FILE_MAX 512 /* bytes: two lines of four figures */

int psi_read_some_avg10(const char *path, double *ret_pct)
{
        char buf[PSI_FILE_MAX];
        const char *line;
        char *end;
        double v;
        size_t n;
        FILE *f;

        f = fopen(path, "re");
        if (!f)
                return -errno;
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';

        /* "some" is the first line; "full" (not for cpu on older kernels) follows. */
        line = buf;
        while (strncmp(line, "some ", 5) != 0) {
                line = strchr(line, '\n');
                if (!line)
                        return -EBADMSG;
                line++;
        }
        end = strchr(line, '\n');
        if (end)
                *end = '\0';
        line = strstr(line, " avg10=");
        if (!line)
                return -EBADMSG;
        line += strlen(" avg10=");
        errno = 0;
        v = strtod(line, &end);
        if (errno || end == line || (*end != ' ' && *end != '\0') || v < 0 ||
            v > 100)
                return -EBADMSG;
        *ret_pct = v;
        return 0;
}
