/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The man pages (doc/), as built, against the code they describe:
 *   - cacheaged.conf(5) documents every key of [daemon] and [cache NAME], no other, each with
 *     the default the key table has (daemon/config.c);
 *   - it documents every key of every adapter the build makes, no other, as the daemon itself
 *     lists them (the "expected ..." of an unknown key), and each documented default is a
 *     value the adapter takes (cacheaged --check-config);
 *   - every long option of cacheaged's and cacheagectl's --help is in its page and every
 *     option the page lists is in the --help, every man page the --help texts point at is one
 *     of ours and is built, and every page renders without a warning from man(1);
 *   - every exit status a --help names is in its page's EXIT STATUS and the other way round,
 *     and cacheaged exits as both say (a bad configuration at start, --check-config, a bad
 *     command line).
 * Environment (tests/meson.build): CACHEAGED, CACHEAGECTL, CA_MAN_DIR (the built pages and
 * their configured scdoc sources), CA_ADAPTER_DIR, CA_ADAPTERS (comma-separated).
 */

#include <criterion/criterion.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "../daemon/config.h"
#include "test-util.h"

TestSuite(man);

#define KEYS_MAX 64

/*
 * One documented key: "*name* = _TYPE_ (default *value*)", or "(required)", "(default: text)",
 * or "(optional: text)" for an adapter's key whose absence means something (no value does).
 */
struct doc_key {
        char name[64];
        char def[256];  /* the default, or a required key's example; "" when the page gives none */
        bool has_def;
        bool optional;
};

struct doc_section {
        char title[128]; /* "[daemon] SECTION OPTIONS", or an adapter's name under ADAPTERS */
        struct doc_key keys[KEYS_MAX];
        size_t n_keys;
};

static char *man_file(const char *name)
{
        return test_path_join(test_env("CA_MAN_DIR"), name);
}

/* The key entries of cacheaged.conf(5)'s source, by "#" and "##" heading. */
static size_t read_doc_sections(struct doc_section *v, size_t max)
{
        char *path = man_file("cacheaged.conf.5.scd"), *text = test_read_file(path), *save, *line;
        regex_t re;
        regmatch_t m[5];
        size_t n = 0;

        cr_assert(text[0], "%s is empty or missing", path);
        /* A required key gives an example instead of a default: (required, e.g. *VALUE*). */
        cr_assert_eq(regcomp(&re, "^\\*([a-z0-9_]+)\\* = _[A-Z_]+_ "
                                  "\\(((default|required, e\\.g\\.) \\*(.*)\\*|.*)\\)$",
                             REG_EXTENDED), 0);
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                struct doc_section *s = n ? &v[n - 1] : NULL;

                if (strncmp(line, "# ", 2) == 0 || strncmp(line, "## ", 3) == 0) {
                        cr_assert(n < max);
                        memset(&v[n], 0, sizeof(v[n]));
                        snprintf(v[n].title, sizeof(v[n].title), "%s", strchr(line, ' ') + 1);
                        n++;
                        continue;
                }
                if (!s || regexec(&re, line, 5, m, 0) != 0)
                        continue;
                cr_assert(s->n_keys < KEYS_MAX);
                struct doc_key *k = &s->keys[s->n_keys++];
                snprintf(k->name, sizeof(k->name), "%.*s", (int)(m[1].rm_eo - m[1].rm_so),
                         line + m[1].rm_so);
                k->has_def = m[4].rm_so >= 0;
                k->optional = strstr(line, " (optional") != NULL;
                if (k->has_def)
                        snprintf(k->def, sizeof(k->def), "%.*s", (int)(m[4].rm_eo - m[4].rm_so),
                                 line + m[4].rm_so);
        }
        regfree(&re);
        free(text);
        free(path);
        return n;
}

static const struct doc_section *find_section(const struct doc_section *v, size_t n,
                                              const char *title)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(v[i].title, title) == 0)
                        return &v[i];
        return NULL;
}

/* The page and a key table: the same keys, in the same order, with the same defaults. */
static void check_table(const struct doc_section *s, const struct ca_key_spec *table)
{
        size_t i = 0;

        cr_assert(s, "section missing from cacheaged.conf(5)");
        for (const struct ca_key_spec *k = table; k->name; k++, i++) {
                cr_assert(i < s->n_keys, "%s: key %s is not documented", s->title, k->name);
                cr_expect_str_eq(s->keys[i].name, k->name, "%s: key %zu", s->title, i);
                if (k->def) {
                        cr_expect(s->keys[i].has_def, "%s: %s: the page gives no default (%s)",
                                  s->title, k->name, k->def);
                        cr_expect_str_eq(s->keys[i].def, k->def, "%s: %s: default", s->title,
                                         k->name);
                } else {
                        cr_expect(!s->keys[i].has_def, "%s: %s has no default in the code",
                                  s->title, k->name);
                }
        }
        cr_expect_eq(s->n_keys, i, "%s: %zu keys documented, %zu in the code", s->title,
                     s->n_keys, i);
}

Test(man, conf_documents_the_daemons_keys)
{
        struct doc_section v[32];
        size_t n = read_doc_sections(v, 32);

        check_table(find_section(v, n, "[daemon] SECTION OPTIONS"), ca_conf_key_table(false));
        check_table(find_section(v, n, "[cache NAME] SECTION OPTIONS"), ca_conf_key_table(true));
}

/* cacheaged --check-config on @text (a [cache probe] of @adapter follows): its exit status. */
static int check_config(const char *adapter, const char *keys, char **ret_log)
{
        const char *args[] = { "--config", NULL, "--check-config", NULL };
        struct test_daemon d;
        int r;

        test_daemon_setup(&d);
        args[1] = d.conf;
        test_write_file(d.conf, "[daemon]\nplugin_dir = %s\n[cache probe]\nadapter = %s\n%s",
                        test_env("CA_ADAPTER_DIR"), adapter, keys);
        r = test_daemon_run_to_exit(&d, args);
        *ret_log = strdup(test_daemon_log(&d));
        test_daemon_cleanup(&d);
        return r;
}

Test(man, conf_documents_every_adapters_keys)
{
        char *adapters = strdup(test_env("CA_ADAPTERS")), *save, *log, *keys, *names, *want;
        struct doc_section v[32];
        size_t n = read_doc_sections(v, 32), len;
        const char *expected;
        char *or;

        for (char *a = strtok_r(adapters, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
                const struct doc_section *s = find_section(v, n, a);
                FILE *f;

                cr_assert(s, "adapter %s has no \"## %s\" in cacheaged.conf(5)", a, a);
                /* The adapter's own list of its keys. */
                cr_assert_eq(check_config(a, "zz_not_a_key = 1\n", &log), 1, "%s", log);
                expected = strstr(log, "zz_not_a_key: unknown key (expected ");
                cr_assert(expected, "%s", log);
                expected += strlen("zz_not_a_key: unknown key (expected ");
                names = NULL;
                f = open_memstream(&names, &len);
                for (size_t i = 0; i < s->n_keys; i++)
                        fprintf(f, "%s%s", i ? ", " : "", s->keys[i].name);
                fclose(f);
                /* The adapter's list ends before the daemon's ("; or a key of every cache"). */
                want = strndup(expected, strcspn(expected, ";)"));
                /* "a, b or c": the last one after "or". */
                or = strstr(want, " or ");
                if (or) {
                        or[0] = ',';
                        memmove(or + 1, or + 3, strlen(or + 3) + 1);
                }
                cr_expect_str_eq(names, want, "adapter %s: the page's keys, and the adapter's", a);
                free(want);
                free(names);
                free(log);

                /* Every documented default, written down, is accepted (an optional key's
                   absence is its default). */
                keys = NULL;
                f = open_memstream(&keys, &len);
                for (size_t i = 0; i < s->n_keys; i++) {
                        cr_expect(s->keys[i].has_def || s->keys[i].optional,
                                  "%s: %s has no default", a, s->keys[i].name);
                        if (s->keys[i].has_def)
                                fprintf(f, "%s = %s\n", s->keys[i].name, s->keys[i].def);
                }
                fclose(f);
                cr_expect_eq(check_config(a, keys, &log), 0, "%s: the defaults:\n%s\n%s", a, keys,
                             log);
                free(keys);
                free(log);
        }
        free(adapters);
}

/* The whole stdout of @argv. */
static char *output_of(const char *const *argv)
{
        char *dir = test_mkdtemp("test-man"), *out = test_path_join(dir, "out"), *text;
        int status;
        pid_t pid = test_spawn(argv, out, NULL, NULL, NULL);

        cr_assert(test_wait_exit(pid, 30000000, &status) && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0, "%s failed", argv[0]);
        text = test_read_file(out);
        test_rm_rf(dir);
        free(out);
        free(dir);
        return text;
}

/* Every "name(N)" of @text that names one of our pages is built; @own is among them. */
static void check_references(const char *text, const char *own)
{
        static const char *const ours[] = { "cacheaged(8)", "cacheagectl(1)", "cacheaged.conf(5)",
                                            "libcacheage(3)" };
        bool own_seen = false;

        for (size_t i = 0; i < ELEMENTSOF(ours); i++) {
                char *page, *path;

                if (!strstr(text, ours[i]))
                        continue;
                own_seen = own_seen || strcmp(ours[i], own) == 0;
                page = strndup(ours[i], strcspn(ours[i], "("));
                cr_assert(asprintf(&path, "%s/%s.%c", test_env("CA_MAN_DIR"), page,
                                   ours[i][strlen(ours[i]) - 2]) > 0);
                cr_expect(access(path, R_OK) == 0, "%s points at %s, which is not built", own,
                          path);
                free(page);
                free(path);
        }
        cr_expect(own_seen, "the --help of %s does not point at it", own);
}

/*
 * Every long option of @help is in the page (as "*--opt*", at the start of an entry or in the
 * synopsis), and every option the page's OPTIONS section lists is in @help.
 */
static void check_options(const char *help, const char *page_name, const char *scd)
{
        char *path = man_file(scd), *doc = test_read_file(path), *copy = strdup(help), *save;
        const char *options = strstr(doc, "\n# OPTIONS\n");

        cr_assert(options, "%s has no OPTIONS section", page_name);
        for (char *w = strtok_r(copy, " ,[\n", &save); w; w = strtok_r(NULL, " ,[\n", &save)) {
                char opt[64], *bold;

                if (strncmp(w, "--", 2) != 0 || sscanf(w, "--%60[a-z-]", opt) != 1)
                        continue;
                cr_assert(asprintf(&bold, "*--%s*", opt) > 0);
                cr_expect(strstr(doc, bold), "%s lacks %s", page_name, bold);
                free(bold);
        }
        for (const char *p = options; (p = strstr(p, "\n*")) && strncmp(p, "\n# ", 3) != 0;) {
                const char *end = strchr(p + 1, '\n'), *o;
                char opt[64];

                if (p > strstr(options + 1, "\n# "))
                        break; /* past the section */
                for (o = p; (o = strstr(o, "*--")) && o < end; o += 3) {
                        cr_assert(sscanf(o, "*--%60[a-z-]", opt) == 1);
                        char *dashed;

                        cr_assert(asprintf(&dashed, "--%s", opt) > 0);
                        cr_expect(strstr(help, dashed), "%s documents %s, which --help lacks",
                                  page_name, dashed);
                        free(dashed);
                }
                p = end ? end : p + 2;
        }
        free(copy);
        free(doc);
        free(path);
}

Test(man, help_points_at_the_pages)
{
        char *help = output_of((const char *[]){ test_env("CACHEAGED"), "--help", NULL });

        check_references(help, "cacheaged(8)");
        check_options(help, "cacheaged(8)", "cacheaged.8.scd");
        free(help);

        help = output_of((const char *[]){ test_env("CACHEAGECTL"), "--help", NULL });
        check_references(help, "cacheagectl(1)");
        check_options(help, "cacheagectl(1)", "cacheagectl.1.scd");
        free(help);
}

/* One exit status as a --help or a page names it: the number and what it says. */
struct exit_status {
        int status;
        char text[1024];
};

#define EXIT_STATUSES_MAX 16

/*
 * The statuses of @help's "Exit status" paragraph (up to a blank line), "N what; N what; ...".
 * Every item must begin with its number.
 */
static size_t help_exit_statuses(const char *help, const char *prog, struct exit_status *v)
{
        const char *p = strstr(help, "\nExit status"), *end;
        char *para, *save;
        size_t n = 0;

        cr_assert(p, "%s --help has no \"Exit status\" paragraph", prog);
        p = strchr(p, ':'); /* "Exit status (...):" then the items, on that line or the next */
        cr_assert(p);
        end = strstr(p, "\n\n");
        para = strndup(p + 1, end ? (size_t)(end - p - 1) : strlen(p + 1));
        for (char *c = para; *c; c++)
                if (*c == '\n')
                        *c = ' ';
        for (char *item = strtok_r(para, ";", &save); item; item = strtok_r(NULL, ";", &save)) {
                int len = 0;

                while (*item == ' ')
                        item++;
                cr_assert(n < EXIT_STATUSES_MAX);
                cr_assert(sscanf(item, "%d %n", &v[n].status, &len) == 1 && len > 0,
                          "%s --help: an exit status item without its number: \"%s\"", prog,
                          item);
                snprintf(v[n].text, sizeof(v[n].text), "%s", item + len);
                n++;
        }
        cr_assert(n > 0, "%s --help names no exit status", prog);
        free(para);
        return n;
}

/* The "*N*" entries of the page's EXIT STATUS section, with the text under each. */
static size_t page_exit_statuses(const char *scd, struct exit_status *v)
{
        char *path = man_file(scd), *doc = test_read_file(path), *save;
        char *section = strstr(doc, "\n# EXIT STATUS\n"), *end;
        size_t n = 0;

        cr_assert(section, "%s has no EXIT STATUS section", scd);
        section += strlen("\n# EXIT STATUS\n");
        end = strstr(section, "\n# ");
        if (end)
                *end = '\0';
        for (char *line = strtok_r(section, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                int status, len = 0;

                if (sscanf(line, "*%d*%n", &status, &len) == 1 && line[len] == '\0') {
                        cr_assert(n < EXIT_STATUSES_MAX);
                        v[n].status = status;
                        v[n].text[0] = '\0';
                        n++;
                } else if (n > 0 && line[0] == '\t') {
                        size_t used = strlen(v[n - 1].text);

                        snprintf(v[n - 1].text + used, sizeof(v[n - 1].text) - used, "%s ",
                                 line + 1);
                }
        }
        free(doc);
        free(path);
        return n;
}

static const struct exit_status *exit_status_find(const struct exit_status *v, size_t n,
                                                  int status)
{
        for (size_t i = 0; i < n; i++)
                if (v[i].status == status)
                        return &v[i];
        return NULL;
}

/* Every status --help names is an entry of the page's EXIT STATUS, and the other way round. */
static void check_exit_statuses(const char *prog, const char *help, const char *scd,
                                struct exit_status *h, size_t *ret_nh, struct exit_status *pg,
                                size_t *ret_np)
{
        size_t nh = help_exit_statuses(help, prog, h), np = page_exit_statuses(scd, pg);

        for (size_t i = 0; i < nh; i++)
                cr_expect(exit_status_find(pg, np, h[i].status),
                          "%s --help names exit status %d (\"%s\"), which %s's EXIT STATUS "
                          "does not list", prog, h[i].status, h[i].text, scd);
        for (size_t i = 0; i < np; i++)
                cr_expect(exit_status_find(h, nh, pg[i].status),
                          "%s lists exit status %d (\"%s\"), which %s --help does not name", scd,
                          pg[i].status, pg[i].text, prog);
        *ret_nh = nh;
        *ret_np = np;
}

/*
 * cacheaged exits with @status in @what's case: --help and the page name that status, and
 * both say @words of it.
 */
static void check_exit_case(const char *what, int status, const char *words,
                            const struct exit_status *h, size_t nh, const struct exit_status *pg,
                            size_t np)
{
        const struct exit_status *in_help = exit_status_find(h, nh, status);
        const struct exit_status *in_page = exit_status_find(pg, np, status);

        cr_expect(in_help && strstr(in_help->text, words),
                  "%s: cacheaged exits %d, and --help's %d says \"%s\", not \"%s\"", what, status,
                  status, in_help ? in_help->text : "(nothing: not named)", words);
        cr_expect(in_page && strstr(in_page->text, words),
                  "%s: cacheaged exits %d, and cacheaged(8)'s %d says \"%s\", not \"%s\"", what,
                  status, status, in_page ? in_page->text : "(nothing: not listed)", words);
}

/* cacheaged with @args, a configuration of @conf_text at d.conf: its exit status. */
static int daemon_exit_status(const char *conf_text, const char *const *args)
{
        struct test_daemon d;
        const char *argv[8];
        size_t n = 0;
        int r;

        test_daemon_setup(&d);
        test_write_file(d.conf, "%s", conf_text);
        for (; args[n]; n++) {
                cr_assert(n < ELEMENTSOF(argv) - 1);
                argv[n] = strcmp(args[n], "CONF") == 0 ? d.conf : args[n];
        }
        argv[n] = NULL;
        r = test_daemon_run_to_exit(&d, argv);
        test_daemon_cleanup(&d);
        return r;
}

/*
 * Every exit status --help names is one the page lists, with the same meaning, and the code
 * agrees: cacheaged's --help once said a configuration error exits 1 while a start exits 6,
 * the status the unit's RestartPreventExitStatus=6 relies on.
 */
Test(man, help_exit_statuses_are_the_pages)
{
        struct exit_status h[EXIT_STATUSES_MAX], pg[EXIT_STATUSES_MAX];
        char *help = output_of((const char *[]){ test_env("CACHEAGED"), "--help", NULL });
        size_t nh, np;
        int r;

        check_exit_statuses("cacheaged", help, "cacheaged.8.scd", h, &nh, pg, &np);
        free(help);
        r = daemon_exit_status("[daemon]\nno_such_key = 1\n",
                               (const char *[]){ "--bus", "none", "--config", "CONF", NULL });
        check_exit_case("an invalid configuration at start", r, "invalid configuration at start",
                        h, nh, pg, np);
        r = daemon_exit_status("[daemon]\nno_such_key = 1\n",
                               (const char *[]){ "--check-config", "--config", "CONF", NULL });
        check_exit_case("--check-config of an invalid configuration", r, "--check-config", h, nh,
                        pg, np);
        r = daemon_exit_status("", (const char *[]){ "--check-config", "--config", "CONF", NULL });
        check_exit_case("--check-config of a valid configuration", r, "valid configuration", h,
                        nh, pg, np);
        r = daemon_exit_status("", (const char *[]){ "--no-such-option", NULL });
        check_exit_case("a bad command line", r, "command line", h, nh, pg, np);

        help = output_of((const char *[]){ test_env("CACHEAGECTL"), "--help", NULL });
        check_exit_statuses("cacheagectl", help, "cacheagectl.1.scd", h, &nh, pg, &np);
        free(help);
}

Test(man, pages_render_without_warnings)
{
        static const char *const pages[] = { "cacheaged.8", "cacheagectl.1", "cacheaged.conf.5",
                                             "libcacheage.3" };

        for (size_t i = 0; i < ELEMENTSOF(pages); i++) {
                char *path = man_file(pages[i]), *cmd, *dir = test_mkdtemp("test-man");
                char *err = test_path_join(dir, "err"), *out = test_path_join(dir, "out"), *text;

                cr_assert(asprintf(&cmd, "MANWIDTH=80 man --warnings -l '%s' >'%s' 2>'%s'", path,
                                   out, err) > 0);
                cr_expect_eq(system(cmd), 0, "%s", cmd);
                text = test_read_file(err);
                cr_expect_str_empty(text, "%s: %s", pages[i], text);
                free(text);
                text = test_read_file(out);
                cr_expect(strlen(text) > 1000, "%s rendered to %zu bytes", pages[i], strlen(text));
                free(text);
                test_rm_rf(dir);
                free(cmd);
                free(err);
                free(out);
                free(dir);
                free(path);
        }
}
