/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for cacheaged's configuration parser (ca_conf_load in daemon/config.c,
 * inih underneath): the file root writes and the daemon reads at start and at every reload.
 *
 * Input: the main file, optionally followed by drop-ins, each introduced by a line that
 * starts with "%%" (not itself part of any file):
 *   "%%"            the next drop-in, named 10.conf, 11.conf, ...
 *   "%% NAME"       named NAME ([A-Za-z0-9._-], up to NAME_MAX_FUZZ bytes; else the default),
 *                   so that order, hidden files and other suffixes are reachable
 *   "%%! NAME"      a symlink to /dev/null (masked); its text is ignored
 *   "%%/ NAME"      a directory, which the loader must refuse; its text is ignored
 * They are written to a private directory as cacheaged.conf and cacheaged.conf.d/, which
 * are emptied after every run.
 *
 * Checked, besides what the sanitizers catch (ASan's leak check included):
 *   - ca_conf_load() returns 0 or -EINVAL; on 0 no message, on -EINVAL at least one;
 *   - every message starts with the file (or the drop-in directory) it is about, then ':';
 *     where a line number follows, it lies within that file;
 *   - a loaded configuration is self-consistent: every value in its documented range,
 *     every cache named validly and once, with an adapter and ages that
 *     ca_cache_validate_params() accepts, every adapter key valid, not reserved and once;
 *     its files are the main one and the drop-ins that were read;
 *   - inih's process-global settings are as they were before (config.h promises it).
 */

#include <errno.h>
#include <ini.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemon/config.h"

#define FILES_MAX_FUZZ 8  /* files one input may make: the main one and 7 drop-ins */
#define NAME_MAX_FUZZ 32  /* bytes in a drop-in name given by the input */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

struct file {
        char path[4096];
        const uint8_t *text;
        size_t len;
        bool null;   /* a symlink to /dev/null */
        bool dir;    /* a directory (not a regular file: an error) */
        bool exists; /* written (a later drop-in of the same name replaces it) */
};

static char dir[4096];      /* private directory */
static char main_path[4096]; /* dir/cacheaged.conf */
static char dropin_dir[4096]; /* dir/cacheaged.conf.d */

/* inih's settings as the process had them; ca_conf_load() must hand them back. */
static struct {
        int max_line;
        bool use_stack, allow_multiline, allow_bom, allow_inline_comments, allow_no_value,
                stop_on_first_error, allow_realloc;
        char *start_comment_prefixes, *inline_comment_prefixes;
} ini_saved;

static void fail(const char *what, const char *detail)
{
        fprintf(stderr, "fuzz-config: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
        abort();
}

static void cleanup(void)
{
        char path[8192];

        /* Only what the target itself may have left: it empties the directory after each run. */
        snprintf(path, sizeof(path), "%s", main_path);
        unlink(path);
        rmdir(dropin_dir);
        rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
        const char *tmp = getenv("TMPDIR");

        snprintf(dir, sizeof(dir), "%s/cacheage-fuzz-config.XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir))
                fail("mkdtemp", strerror(errno));
        snprintf(main_path, sizeof(main_path), "%s/cacheaged.conf", dir);
        snprintf(dropin_dir, sizeof(dropin_dir), "%s.d", main_path);
        atexit(cleanup);

        ini_saved.max_line = ini_max_line;
        ini_saved.use_stack = ini_use_stack;
        ini_saved.allow_multiline = ini_allow_multiline;
        ini_saved.allow_bom = ini_allow_bom;
        ini_saved.allow_inline_comments = ini_allow_inline_comments;
        ini_saved.allow_no_value = ini_allow_no_value;
        ini_saved.stop_on_first_error = ini_stop_on_first_error;
        ini_saved.allow_realloc = ini_allow_realloc;
        ini_saved.start_comment_prefixes = ini_start_comment_prefixes;
        ini_saved.inline_comment_prefixes = ini_inline_comment_prefixes;
        return 0;
}

static void check_ini_settings(void)
{
        if (ini_max_line != ini_saved.max_line || ini_use_stack != ini_saved.use_stack ||
            ini_allow_multiline != ini_saved.allow_multiline ||
            ini_allow_bom != ini_saved.allow_bom ||
            ini_allow_inline_comments != ini_saved.allow_inline_comments ||
            ini_allow_no_value != ini_saved.allow_no_value ||
            ini_stop_on_first_error != ini_saved.stop_on_first_error ||
            ini_allow_realloc != ini_saved.allow_realloc ||
            ini_start_comment_prefixes != ini_saved.start_comment_prefixes ||
            ini_inline_comment_prefixes != ini_saved.inline_comment_prefixes)
                fail("inih's global settings were not restored", NULL);
}

static bool valid_dropin_name(const char *s, size_t n)
{
        if (n == 0 || n > NAME_MAX_FUZZ || (n == 1 && s[0] == '.') ||
            (n == 2 && s[0] == '.' && s[1] == '.'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-",
                            s[i]) || s[i] == '\0')
                        return false;
        return true;
}

/* Split the input at "%%" lines into files[0] (the main one) and drop-ins. */
static size_t split(const uint8_t *data, size_t size, struct file *files)
{
        size_t n = 1, pos = 0;

        files[0] = (struct file){ .text = data };
        snprintf(files[0].path, sizeof(files[0].path), "%s", main_path);
        while (pos < size) {
                const uint8_t *nl = memchr(data + pos, '\n', size - pos);
                size_t end = nl ? (size_t)(nl - data) : size, next = nl ? end + 1 : size;
                const char *s = (const char *)data + pos, *name;
                size_t len = end - pos, name_len;
                struct file *f;

                if (len < 2 || s[0] != '%' || s[1] != '%' || n == FILES_MAX_FUZZ) {
                        pos = next;
                        continue;
                }
                files[n - 1].len = (size_t)(s - (const char *)files[n - 1].text);
                f = &files[n];
                *f = (struct file){ .text = data + next };
                name = s + 2;
                name_len = len - 2;
                if (name_len > 0 && (name[0] == '!' || name[0] == '/')) {
                        f->null = name[0] == '!';
                        f->dir = name[0] == '/';
                        name++;
                        name_len--;
                }
                while (name_len > 0 && name[0] == ' ') {
                        name++;
                        name_len--;
                }
                if (valid_dropin_name(name, name_len))
                        snprintf(f->path, sizeof(f->path), "%s/%.*s", dropin_dir, (int)name_len,
                                 name);
                else
                        snprintf(f->path, sizeof(f->path), "%s/%zu.conf", dropin_dir, 9 + n);
                n++;
                pos = next;
        }
        files[n - 1].len = (size_t)(data + size - files[n - 1].text);
        return n;
}

static void write_file(const struct file *f)
{
        FILE *out;

        if (f->null) {
                if (symlink("/dev/null", f->path) < 0)
                        fail("symlink", strerror(errno));
                return;
        }
        if (f->dir) {
                if (mkdir(f->path, 0700) < 0)
                        fail("mkdir", strerror(errno));
                return;
        }
        out = fopen(f->path, "we");
        if (!out || fwrite(f->text, 1, f->len, out) != f->len || fclose(out) != 0)
                fail("cannot write a file of the input", strerror(errno));
}

static void remove_file(const struct file *f)
{
        if (f->dir)
                rmdir(f->path);
        else
                unlink(f->path);
}

/* Lines in @f as the parser counts them: a last line without "\n" counts. */
static size_t count_lines(const struct file *f)
{
        size_t n = 0;

        if (f->null || f->dir)
                return 0;
        for (size_t i = 0; i < f->len; i++)
                n += f->text[i] == '\n';
        return n + (f->len > 0 && f->text[f->len - 1] != '\n');
}

/* "PATH: ..." or "PATH:LINE: ...", PATH one of the files (the longest that matches) or dir. */
static void check_message(const char *msg, const struct file *files, size_t n_files)
{
        const char *rest = NULL;
        const struct file *about = NULL;
        size_t best = 0;

        for (size_t i = 0; i < n_files; i++) {
                size_t len = strlen(files[i].path);

                if (!files[i].exists)
                        continue; /* replaced by a later drop-in of the same name */
                if (len > best && strncmp(msg, files[i].path, len) == 0 && msg[len] == ':') {
                        best = len;
                        about = &files[i];
                        rest = msg + len + 1;
                }
        }
        if (!about) {
                size_t len = strlen(dropin_dir);

                if (strncmp(msg, dropin_dir, len) != 0 || msg[len] != ':')
                        fail("message does not start with the file it is about", msg);
                rest = msg + len + 1;
        }
        if (about && rest[0] >= '0' && rest[0] <= '9') {
                char *end;
                unsigned long line = strtoul(rest, &end, 10);

                if (*end != ':' || line == 0 || line > count_lines(about))
                        fail("message names a line the file does not have", msg);
                rest = end + 1;
        }
        if (rest[0] != ' ' || !rest[1])
                fail("message has no text after its location", msg);
}

static bool valid_name(const char *s, bool adapter)
{
        size_t n = strlen(s);
        const char *chars = adapter ? "abcdefghijklmnopqrstuvwxyz0123456789_-"
                                    : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789_.-";

        return n >= 1 && n <= CA_CONF_NAME_MAX && s[strspn(s, chars)] == '\0';
}

static bool is_file_of(const struct ca_conf *conf, const char *path)
{
        for (size_t i = 0; i < conf->n_files; i++)
                if (strcmp(conf->files[i], path) == 0)
                        return true;
        return false;
}

static void check_conf(const struct ca_conf *conf)
{
        static const char *const reserved[] = { "adapter", "interval", "single_use_age",
                                                "max_age", "enabled" };

        if (conf->interval_usec < CA_INTERVAL_MIN_USEC || conf->interval_usec > CA_INTERVAL_MAX_USEC)
                fail("interval out of range", NULL);
        if (!conf->plugin_dir || conf->plugin_dir[0] != '/')
                fail("plugin_dir not absolute", conf->plugin_dir);
        if (conf->slice_budget < 1 || conf->slice_budget > 1000000)
                fail("slice_budget out of range", NULL);
        if (conf->slice_time_usec < 100 || conf->slice_time_usec > 1000000)
                fail("slice_time out of range", NULL);
        if (!(conf->idle_cpu_pressure >= 0 && conf->idle_cpu_pressure <= 100) ||
            !(conf->idle_memory_pressure >= 0 && conf->idle_memory_pressure <= 100))
                fail("a pressure out of range", NULL);
        if (conf->max_defer > 1000)
                fail("max_defer out of range", NULL);
        if (conf->log_level < 0 || conf->log_level > 7)
                fail("log_level out of range", NULL);
        if (conf->n_files < 1 || strcmp(conf->files[0], main_path) != 0)
                fail("the main file is not files[0]", NULL);
        if (conf->n_caches > CA_CONF_CACHES_MAX || (conf->n_caches > 0 && !conf->caches))
                fail("caches", NULL);

        for (size_t i = 0; i < conf->n_caches; i++) {
                const struct ca_conf_cache *c = &conf->caches[i];

                if (!c->name || !valid_name(c->name, false))
                        fail("invalid cache name", c->name);
                if (ca_conf_find_cache(conf, c->name) != c)
                        fail("cache name not unique or not found", c->name);
                if (!c->adapter || !valid_name(c->adapter, true))
                        fail("cache without a valid adapter", c->name);
                if (!c->file || !is_file_of(conf, c->file) || c->line == 0)
                        fail("cache's origin is not a file read", c->name);
                if (c->interval_usec != 0 && (c->interval_usec < CA_INTERVAL_MIN_USEC ||
                                              c->interval_usec > CA_INTERVAL_MAX_USEC))
                        fail("cache interval out of range", c->name);
                if (ca_cache_validate_params(&c->params) != 0)
                        fail("cache's ages refused by ca_cache_validate_params", c->name);
                if (c->n_keys > CA_CONF_KEYS_MAX || (c->n_keys > 0 && !c->keys))
                        fail("adapter keys", c->name);
                for (size_t j = 0; j < c->n_keys; j++) {
                        const struct ca_conf_key *k = &c->keys[j];

                        if (!k->key || !valid_name(k->key, false) || !k->value)
                                fail("invalid adapter key", k->key);
                        for (size_t m = 0; m < sizeof(reserved) / sizeof(reserved[0]); m++)
                                if (strcmp(k->key, reserved[m]) == 0)
                                        fail("a cache key handed to the adapter", k->key);
                        for (size_t m = 0; m < j; m++)
                                if (strcmp(k->key, c->keys[m].key) == 0)
                                        fail("adapter key twice", k->key);
                        if (!k->file || !is_file_of(conf, k->file) || k->line == 0)
                                fail("adapter key's origin is not a file read", k->key);
                }
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct file files[FILES_MAX_FUZZ];
        struct ca_errors errors = { 0 };
        struct ca_conf *conf = NULL;
        size_t n, n_dropins = 0;
        int r;

        n = split(data, size, files);
        if (n > 1 && mkdir(dropin_dir, 0700) < 0)
                fail("mkdir", strerror(errno));
        for (size_t i = 0; i < n; i++) {
                /* A later drop-in of the same name replaces the earlier one. */
                for (size_t j = 1; j < i; j++)
                        if (files[j].exists && strcmp(files[j].path, files[i].path) == 0) {
                                files[j].exists = false;
                                remove_file(&files[j]);
                        }
                write_file(&files[i]);
                files[i].exists = true;
        }
        /* The drop-ins the loader reads: "*.conf", not hidden, more than ".conf". */
        for (size_t i = 1; i < n; i++) {
                const char *base = strrchr(files[i].path, '/') + 1;
                size_t len = strlen(base);

                if (files[i].exists && base[0] != '.' && len > 5 &&
                    strcmp(base + len - 5, ".conf") == 0)
                        n_dropins++;
        }

        r = ca_conf_load(main_path, &conf, &errors);
        check_ini_settings();
        if (r == 0) {
                if (errors.n != 0)
                        fail("loaded, with messages", errors.v[0]);
                check_conf(conf);
                if (conf->n_files != 1 + n_dropins)
                        fail("files read are not the main one and its drop-ins", NULL);
        } else if (r == -EINVAL) {
                if (errors.n == 0)
                        fail("-EINVAL without a message", NULL);
                for (size_t i = 0; i < errors.n; i++)
                        check_message(errors.v[i], files, n);
        } else {
                fail("ca_conf_load returned an undocumented value", strerror(-r));
        }
        ca_errors_clear(&errors);
        ca_conf_free(conf);

        for (size_t i = 0; i < n; i++)
                if (files[i].exists)
                        remove_file(&files[i]);
        if (n > 1)
                rmdir(dropin_dir);
        return 0;
}
