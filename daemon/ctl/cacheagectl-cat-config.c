/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheagectl cat-config: the configuration files in force, in the order cacheaged reads them,
 * each after a "# PATH" line, as "systemd-analyze cat-config" prints a daemon's. Which files
 * they are comes from the daemon's own search (ca_conf_files(), daemon/config.c); like
 * systemd-analyze, this reads the files of this machine and asks no daemon.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <systemd/sd-bus.h>

#include "cacheagectl.h"
#include "config.h"
#include "errors.h"

#define ANSI_HIGHLIGHT_BLUE "\033[0;1;34m" /* systemd-analyze's file headers */
#define CAT_FILE_MAX (16u << 20)            /* bytes of one file shown (the daemon reads
                                               lines of at most 4 KiB; this is a bound) */

/*
 * A file's text, as the daemon would open it: a regular file, or /dev/null (a masked drop-in,
 * which shows empty). Returns 0 and a malloc()ed NUL-terminated text, or a negative errno
 * (-ENODEV: not a regular file, -EFBIG: over CAT_FILE_MAX).
 */
static int read_config_file(const char *path, char **ret_text)
{
        struct stat st;
        char *text = NULL;
        size_t len = 0;
        ssize_t n;
        int fd, r = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                goto out_close_fd;
        }
        if (!S_ISREG(st.st_mode) &&
            !(S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3)) {
                r = -ENODEV;
                goto out_close_fd;
        }
        text = malloc(CAT_FILE_MAX + 1);
        if (!text) {
                r = -ENOMEM;
                goto out_close_fd;
        }
        while (len <= CAT_FILE_MAX && (n = read(fd, text + len, CAT_FILE_MAX + 1 - len)) != 0) {
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                len += (size_t)n;
        }
        if (r == 0 && len > CAT_FILE_MAX)
                r = -EFBIG;
        if (r < 0) {
                free(text);
                goto out_close_fd;
        }
        text[len] = '\0';
        *ret_text = text;

out_close_fd:
        close(fd);
        return r;
}

int cmd_cat_config(sd_bus *bus, int argc, char **argv)
{
        struct ca_errors errors = { 0 };
        struct json_doc j = { 0 };
        char *main_path = NULL, **files = NULL;
        size_t n_files = 0;
        FILE *f = NULL;
        bool main_found;
        int r;

        if (argc > 0)
                return fail(EXIT_USAGE, "'cat-config' takes no arguments (--config=FILE names "
                            "another main file)");
        r = ca_conf_files(arg_config, &main_path, &files, &n_files, &errors);
        if (r == -ENOMEM) {
                r = fail(EXIT_FAILED, "Out of memory");
                goto out_free;
        }
        if (r < 0) {
                r = fail(EXIT_FAILED, "%s", errors.n > 0 ? errors.v[0] : strerror(-r));
                goto out_free;
        }
        main_found = n_files > 0 && strcmp(files[0], main_path) == 0;

        if (arg_json) {
                f = json_begin(&j);
                fprintf(f, "{\"main\":");
                json_string(f, main_path);
                fprintf(f, ",\"main_found\":%s,\"files\":[", main_found ? "true" : "false");
        } else {
                maybe_page();
                if (!main_found)
                        printf("%s# Main configuration file %s not found%s\n",
                               ansi(ANSI_HIGHLIGHT_BLUE), main_path, ansi(ANSI_NORMAL));
        }
        for (size_t i = 0; i < n_files; i++) {
                char *text = NULL;

                r = read_config_file(files[i], &text);
                if (r < 0) {
                        if (f)
                                json_discard(&j);
                        r = fail(EXIT_FAILED, "Failed to read %s: %s", files[i],
                                 r == -ENODEV ? "not a regular file" : strerror(-r));
                        goto out_free;
                }
                if (f) {
                        fprintf(f, "%s{\"path\":", i ? "," : "");
                        json_string(f, files[i]);
                        fprintf(f, ",\"text\":");
                        json_string(f, text);
                        fputc('}', f);
                } else {
                        /* A blank line between files, as systemd-analyze; the text as it is. */
                        printf("%s%s# %s%s\n", i ? "\n" : "", ansi(ANSI_HIGHLIGHT_BLUE),
                               files[i], ansi(ANSI_NORMAL));
                        fputs(text, stdout);
                }
                free(text);
        }
        if (f) {
                fprintf(f, "]}");
                json_end(&j);
        }
        /* A drop-in directory that could not be read: the daemon would refuse to start. */
        r = 0;
        if (errors.n > 0)
                r = fail(EXIT_FAILED, "%s%s", errors.v[0],
                               errors.n > 1 ? " (and more: cacheaged --check-config lists them)"
                                            : "");

out_free:
        for (size_t i = 0; i < n_files; i++)
                free(files[i]);
        free(files);
        free(main_path);
        ca_errors_clear(&errors);
        return r;
}
