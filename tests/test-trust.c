/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trust_open(): the walk that decides whether root may load a module. Runs as root (CI
 * does) and makes its own directories under /tmp (root's, sticky), giving some of them to
 * nobody (uid 65534) to play the other user.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "test-util.h"
#include "trust.h"

#define NOBODY 65534

static char *top;

static void mk(const char *rel, mode_t mode, uid_t uid)
{
        char p[512];

        snprintf(p, sizeof(p), "%s/%s", top, rel);
        cr_assert(mkdir(p, mode) == 0, "%s: %s", p, strerror(errno));
        cr_assert(chmod(p, mode) == 0 && chown(p, uid, 0) == 0);
}

static void mkfile(const char *rel, mode_t mode, uid_t uid)
{
        char p[512];
        int fd;

        snprintf(p, sizeof(p), "%s/%s", top, rel);
        fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        cr_assert(fd >= 0, "%s: %s", p, strerror(errno));
        cr_assert(write(fd, "x", 1) == 1);
        close(fd);
        cr_assert(chmod(p, mode) == 0 && chown(p, uid, 0) == 0);
}

static void ln(const char *target, const char *rel)
{
        char p[512];

        snprintf(p, sizeof(p), "%s/%s", top, rel);
        cr_assert(symlink(target, p) == 0, "%s: %s", p, strerror(errno));
}

/* trust_open() on top/@rel: the errno, and the reason in @reason. */
static int try_open(const char *rel, char *reason, size_t len)
{
        char p[512];
        int fd = -1, r;

        snprintf(p, sizeof(p), "%s/%s", top, rel);
        reason[0] = '\0';
        r = trust_open(p, &fd, reason, len);
        if (r == 0) {
                struct stat st;

                cr_assert(fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode));
                cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
                close(fd);
        } else {
                cr_assert_eq(fd, -1, "no descriptor on failure");
        }
        return r;
}

static void setup(void)
{
        cr_assert(geteuid() == 0, "these tests need root");
        top = test_mkdtemp("cacheage-trust");
}

static void teardown(void)
{
        test_rm_rf(top);
        free(top);
}

TestSuite(trust, .init = setup, .fini = teardown);

Test(trust, plain_and_symlinks)
{
        char why[512];

        mk("lib", 0755, 0);
        mkfile("lib/a.so", 0644, 0);
        ln("lib", "link");
        ln("a.so", "lib/rel.so");
        ln("../lib/./a.so", "lib/up.so");
        cr_assert_eq(try_open("lib/a.so", why, sizeof(why)), 0, "%s", why);
        cr_assert_eq(try_open("link/a.so", why, sizeof(why)), 0, "%s", why);
        cr_assert_eq(try_open("link/rel.so", why, sizeof(why)), 0, "%s", why);
        cr_assert_eq(try_open("lib/up.so", why, sizeof(why)), 0, "%s", why);
        cr_assert_eq(try_open("lib/../lib//a.so", why, sizeof(why)), 0, "%s", why);
        /* An absolute symlink restarts from "/". */
        {
                char target[256];

                snprintf(target, sizeof(target), "%s/lib", top);
                ln(target, "abs");
                cr_assert_eq(try_open("abs/a.so", why, sizeof(why)), 0, "%s", why);
        }
}

Test(trust, missing_and_loops)
{
        char why[512];

        mk("lib", 0755, 0);
        ln("loop2", "lib/loop1");
        ln("loop1", "lib/loop2");
        cr_assert_eq(try_open("lib/none.so", why, sizeof(why)), -ENOENT);
        cr_assert(strstr(why, "/lib/none.so: No such file"), "%s", why);
        cr_assert_eq(try_open("lib/loop1", why, sizeof(why)), -ELOOP);
        cr_assert_eq(try_open("lib", why, sizeof(why)), -ENODEV);
        cr_assert(strstr(why, "/lib is not a regular file"), "%s", why);
}

/* Only a regular file: a FIFO would block the daemon in open() or in dlopen(). */
Test(trust, not_regular)
{
        char why[512], p[512];

        mk("lib", 0755, 0);
        snprintf(p, sizeof(p), "%s/lib/fifo.so", top);
        cr_assert(mkfifo(p, 0644) == 0);
        cr_assert_eq(try_open("lib/fifo.so", why, sizeof(why)), -ENODEV);
        cr_assert(strstr(why, "/lib/fifo.so is not a regular file"), "%s", why);
        mk("lib/dir.so", 0755, 0);
        cr_assert_eq(try_open("lib/dir.so", why, sizeof(why)), -ENODEV);
        cr_assert(strstr(why, "not a regular file"), "%s", why);
        ln("/dev/null", "lib/null.so");
        cr_assert_eq(try_open("lib/null.so", why, sizeof(why)), -ENODEV);
        cr_assert(strstr(why, "/dev/null is not a regular file"), "%s", why);
}

Test(trust, file_rules)
{
        char why[512];

        mk("lib", 0755, 0);
        mkfile("lib/ww.so", 0646, 0);
        mkfile("lib/nobody.so", 0644, NOBODY);
        cr_assert_eq(try_open("lib/ww.so", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/lib/ww.so is writable by everyone"), "%s", why);
        cr_assert_eq(try_open("lib/nobody.so", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/lib/nobody.so is owned by uid 65534"), "%s", why);
}

/*
 * Every directory on the way counts, not only the module's own: a directory that another
 * user owns can have its entries swapped for symlinks of that user's choosing at any time.
 */
Test(trust, untrusted_ancestor)
{
        char why[512], target[256];

        mk("evil", 0755, NOBODY);
        mk("evil/lib", 0755, 0);
        mkfile("evil/lib/a.so", 0644, 0);
        cr_assert_eq(try_open("evil/lib/a.so", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/evil is owned by uid 65534"), "%s", why);

        /* Reached through a symlink that nobody owns the directory of: refused too. */
        mk("good", 0755, 0);
        mkfile("good/a.so", 0644, 0);
        snprintf(target, sizeof(target), "%s/good", top);
        ln(target, "evil/plugins");
        cr_assert_eq(try_open("evil/plugins/a.so", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/evil is owned by uid 65534"), "%s", why);

        /* A writable, not sticky directory on the way. */
        mk("open", 0777, 0);
        mk("open/lib", 0755, 0);
        mkfile("open/lib/a.so", 0644, 0);
        cr_assert_eq(try_open("open/lib/a.so", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/open is writable by everyone"), "%s", why);

        /* A group-writable one, the group not root's. */
        mk("grp", 0775, 0);
        cr_assert(chown(strcat(strcpy(target, top), "/grp"), 0, NOBODY) == 0);
        mk("grp/lib", 0755, 0);
        mkfile("grp/lib/a.so", 0644, 0);
        cr_assert_eq(try_open("grp/lib/a.so", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/grp is writable by its group"), "%s", why);
}

/*
 * A sticky directory writable by all (as /tmp) lets nobody replace an entry they do not own:
 * a root-owned entry in it is safe, another user's is not.
 */
Test(trust, sticky)
{
        char why[512];

        mk("tmp", 01777, 0);
        mk("tmp/root", 0755, 0);
        mkfile("tmp/root/a.so", 0644, 0);
        mk("tmp/user", 0755, NOBODY);
        mkfile("tmp/a.so", 0644, 0);
        cr_assert_eq(try_open("tmp/root/a.so", why, sizeof(why)), 0, "%s", why);
        cr_assert_eq(try_open("tmp/a.so", why, sizeof(why)), 0, "%s", why);
        cr_assert_eq(try_open("tmp/user/x.so", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/tmp/user is owned by uid 65534 in ") &&
                  strstr(why, "/tmp, which everyone may write"), "%s", why);
        /* A symlink in a sticky directory, owned by another user: refused. */
        ln("root", "tmp/l");
        {
                char p[512];

                snprintf(p, sizeof(p), "%s/tmp/l", top);
                cr_assert(lchown(p, NOBODY, 0) == 0);
        }
        cr_assert_eq(try_open("tmp/l/a.so", why, sizeof(why)), -EPERM);
}

Test(trust, relative_path)
{
        char why[512], cwd[512];
        int fd = -1;

        mk("lib", 0755, 0);
        mkfile("lib/a.so", 0644, 0);
        cr_assert(getcwd(cwd, sizeof(cwd)));
        cr_assert(chdir(top) == 0);
        cr_assert_eq(trust_open("lib/a.so", &fd, why, sizeof(why)), 0, "%s", why);
        close(fd);
        cr_assert(chdir(cwd) == 0);
}

/* setfacl (the acl package) on top/@rel; an assertion when it fails. */
static void acl_set(const char *spec, const char *rel)
{
        char cmd[1024];

        snprintf(cmd, sizeof(cmd), "setfacl -m '%s' '%s/%s'", spec, top, rel);
        cr_assert(system(cmd) == 0, "%s failed", cmd);
}

/*
 * Write permission given by a POSIX ACL counts as the mode's would: a root-owned module of
 * mode 0644 that the ACL lets nobody write was loaded as root; a directory on the way that the
 * ACL lets a group write too. An ACL that gives nothing more (or that its mask cuts) passes.
 */
Test(trust, acl_write_is_writable_by_others)
{
        char why[512];

        mk("lib", 0755, 0);
        mkfile("lib/acl.so", 0644, 0);
        acl_set("u:65534:rw", "lib/acl.so");
        cr_assert_eq(try_open("lib/acl.so", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/lib/acl.so is writable by uid 65534 (its ACL)"), "%s", why);

        /* The mask takes the write bit away: nobody may write it after all. */
        mkfile("lib/masked.so", 0644, 0);
        acl_set("u:65534:rw,m::r", "lib/masked.so");
        cr_assert_eq(try_open("lib/masked.so", why, sizeof(why)), 0, "%s", why);

        /* Read only for another user, write for root's group: fine. */
        mkfile("lib/read.so", 0644, 0);
        acl_set("u:65534:r,g:0:rw", "lib/read.so");
        cr_assert_eq(try_open("lib/read.so", why, sizeof(why)), 0, "%s", why);

        /* A directory on the way that another group may write through its ACL. */
        mk("grp", 0755, 0);
        mk("grp/lib", 0755, 0);
        mkfile("grp/lib/a.so", 0644, 0);
        acl_set("g:65534:rwx", "grp");
        cr_assert_eq(try_open("grp/lib/a.so", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/grp is writable by gid 65534 (its ACL)"), "%s", why);
}

/* trust_open_full(TRUST_DIRECTORY) on top/@rel: the errno; on success the very directory. */
static int try_open_dir(const char *rel, char *reason, size_t len)
{
        struct stat st, want;
        char p[512];
        int fd = -1, r;

        snprintf(p, sizeof(p), "%s/%s", top, rel);
        reason[0] = '\0';
        r = trust_open_full(p, TRUST_DIRECTORY, &fd, reason, len);
        if (r == 0) {
                cr_assert(fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode));
                cr_assert(stat(p, &want) == 0 && want.st_ino == st.st_ino);
                cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
                /* Usable to make entries in (what metrics_file does). */
                cr_assert(mkdirat(fd, "made", 0755) == 0 && unlinkat(fd, "made", AT_REMOVEDIR) == 0);
                close(fd);
        } else {
                cr_assert_eq(fd, -1, "no descriptor on failure");
        }
        return r;
}

/*
 * A directory to write in (metrics_file's): reached as a module is, and itself writable by
 * nobody else, sticky or not; a symlink to it is followed only through trusted directories.
 */
Test(trust, directory)
{
        char why[512], target[256];

        mk("out", 0755, 0);
        cr_assert_eq(try_open_dir("out", why, sizeof(why)), 0, "%s", why);
        cr_assert_eq(try_open_dir("out/", why, sizeof(why)), 0, "%s", why);
        ln("out", "link");
        cr_assert_eq(try_open_dir("link", why, sizeof(why)), 0, "%s", why);

        mk("tmp", 01777, 0);
        cr_assert_eq(try_open_dir("tmp", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/tmp is writable by everyone"), "%s", why);
        mk("theirs", 0755, NOBODY);
        cr_assert_eq(try_open_dir("theirs", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/theirs is owned by uid 65534"), "%s", why);
        mk("acl", 0755, 0);
        acl_set("u:65534:rwx", "acl");
        cr_assert_eq(try_open_dir("acl", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/acl is writable by uid 65534 (its ACL)"), "%s", why);

        /* An unprivileged user's directory holding a symlink to root's: refused. */
        snprintf(target, sizeof(target), "%s/out", top);
        ln(target, "theirs/out");
        cr_assert_eq(try_open_dir("theirs/out", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/theirs/out is a symlink below a directory that uid 65534 may "
                          "change"), "%s", why);

        mkfile("file", 0644, 0);
        cr_assert_eq(try_open_dir("file/", why, sizeof(why)), -ENOTDIR);
        cr_assert_eq(try_open_dir("none", why, sizeof(why)), -ENOENT);
}

/*
 * A directory to write in below another owner's, as Debian lays out node_exporter's textfile
 * directory: /var/lib/prometheus is the prometheus user's, its node-exporter root's (issue 33:
 * metrics_file was refused there). Its owner may rename what is below it but make no directory
 * of root's: the walk passes through it where nobody else may write it, follows no symlink
 * below it, and still ends only in a directory of root's that nobody else may write.
 */
Test(trust, directory_below_another_owner)
{
        char why[512], target[256];

        mk("prometheus", 0755, NOBODY);
        mk("prometheus/node-exporter", 0755, 0);
        cr_assert_eq(try_open_dir("prometheus/node-exporter", why, sizeof(why)), 0, "%s", why);
        /* Deeper, through another of theirs. */
        mk("prometheus/deep", 0755, NOBODY);
        mk("prometheus/deep/out", 0755, 0);
        cr_assert_eq(try_open_dir("prometheus/deep/out", why, sizeof(why)), 0, "%s", why);
        /* Their own directory at the end: refused, as ever. */
        mk("prometheus/theirs", 0755, NOBODY);
        cr_assert_eq(try_open_dir("prometheus/theirs", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/prometheus/theirs is owned by uid 65534"), "%s", why);
        /* A symlink below it, to a directory of root's: its owner could point it anywhere. */
        mk("roots", 0755, 0);
        snprintf(target, sizeof(target), "%s/roots", top);
        ln(target, "prometheus/link");
        cr_assert_eq(try_open_dir("prometheus/link", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/prometheus/link is a symlink below a directory that uid 65534 "
                          "may change"), "%s", why);
        /* Deeper below, too, even in a directory of root's. */
        ln(target, "prometheus/node-exporter/link");
        cr_assert_eq(try_open_dir("prometheus/node-exporter/link", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "is a symlink below a directory that uid 65534"), "%s", why);
        /* Back above it with "..": symlinks are followed again. */
        ln("roots", "rel");
        cr_assert_eq(try_open_dir("prometheus/../rel", why, sizeof(why)), 0, "%s", why);
        /* Another owner's directory that its group or everyone may write: refused. */
        mk("shared", 0777, NOBODY);
        mk("shared/out", 0755, 0);
        cr_assert_eq(try_open_dir("shared/out", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/shared is writable by everyone"), "%s", why);
        /* Only a directory to write in: a file to read below another owner's is refused. */
        mkfile("prometheus/node-exporter/a.so", 0644, 0);
        cr_assert_eq(try_open("prometheus/node-exporter/a.so", why, sizeof(why)), -EPERM);
        cr_assert(strstr(why, "/prometheus is owned by uid 65534"), "%s", why);
}

/*
 * What a user's instance sees under PrivateUsers=yes: a user namespace that maps its own uid
 * and nothing else, where root's files read as the overflow uid (issue 33: the user instance
 * exited 6, "/home is owned by uid 65534"). A child as uid 1000 in such a namespace walks a
 * tree of root's: the overflow owner is taken for root's on the way to an installed directory
 * (trust_add_installed()) and for the modules in it, and refused anywhere else; the same tree
 * seen with root mapped (this process) is refused where its owner is really another user.
 */
#define USERNS_UID 1000
#define USERNS_OTHER 1001

struct userns_case {
        const char *rel;
        int want; /* 0 or -errno */
        const char *reason; /* what the refusal names */
};

/* @text into @path; whether it worked (in the child, where no assertion may run). */
static bool write_ok(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        bool ok;

        if (fd < 0)
                return false;
        ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
        return close(fd) == 0 && ok;
}

static void userns_child(const char *base, const struct userns_case *cases, size_t n, int out)
{
        char p[512], why[512], map[64];
        FILE *f = fdopen(out, "w");
        int fd, r;

        if (!f || setgroups(0, NULL) < 0 || setgid(USERNS_UID) < 0 || setuid(USERNS_UID) < 0 ||
            prctl(PR_SET_DUMPABLE, 1) < 0)
                _exit(2);
        if (unshare(CLONE_NEWUSER) < 0) {
                fprintf(f, "unshare %d\n", errno);
                fclose(f);
                _exit(3);
        }
        snprintf(map, sizeof(map), "%d %d 1\n", USERNS_UID, USERNS_UID);
        if (!write_ok("/proc/self/setgroups", "deny") || !write_ok("/proc/self/uid_map", map) ||
            !write_ok("/proc/self/gid_map", map))
                _exit(4);
        snprintf(p, sizeof(p), "%s/inst", base);
        if (trust_add_installed(p) < 0)
                _exit(5);
        for (size_t i = 0; i < n; i++) {
                snprintf(p, sizeof(p), "%s/%s", base, cases[i].rel);
                fd = -1;
                why[0] = '\0';
                r = trust_open(p, &fd, why, sizeof(why));
                if (fd >= 0)
                        close(fd);
                fprintf(f, "%d %s\n", r, why);
        }
        fclose(f);
        _exit(0);
}

Test(trust, overflow_owner_in_a_user_namespace)
{
        static const struct userns_case cases[] = {
                /* The installed directory and its modules: /run and base lead to it. */
                { "inst/a.so", 0, NULL },
                /* Root's elsewhere: its owner cannot be told from another user's. */
                { "other/a.so", -EPERM, "/other is owned by uid 65534" },
                { "inst/sub/a.so", -EPERM, "/inst/sub is owned by uid 65534" },
                /* Really another user's, the same there: refused. */
                { "theirs/a.so", -EPERM, "/theirs is owned by uid 65534" },
                /* The write bits count as for any owner. */
                { "inst/ww.so", -EPERM, "/inst/ww.so is writable by everyone" },
                /* The daemon's own user's files below: as ever. */
                { "own/a.conf", 0, NULL },
        };
        char base[] = "/run/cacheage-trust-XXXXXX", p[512], line[1024];
        struct userns_case seen;
        int pipefd[2], status;
        size_t i = 0;
        pid_t pid;
        FILE *f;

        /* Below /run (root's, not sticky): /tmp's sticky bit would decide first. */
        cr_assert(mkdtemp(base), "%s", strerror(errno));
        cr_assert(chmod(base, 0755) == 0);
        test_rm_rf(top);
        free(top);
        top = strdup(base);
        mk("inst", 0755, 0);
        mkfile("inst/a.so", 0644, 0);
        mkfile("inst/ww.so", 0646, 0);
        mk("inst/sub", 0755, 0);
        mkfile("inst/sub/a.so", 0644, 0);
        mk("other", 0755, 0);
        mkfile("other/a.so", 0644, 0);
        mk("theirs", 0755, USERNS_OTHER);
        mkfile("theirs/a.so", 0644, 0);
        mk("own", 0755, USERNS_UID);
        mkfile("own/a.conf", 0644, USERNS_UID);

        cr_assert(pipe(pipefd) == 0);
        pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
                close(pipefd[0]);
                userns_child(base, cases, sizeof(cases) / sizeof(cases[0]), pipefd[1]);
        }
        close(pipefd[1]);
        f = fdopen(pipefd[0], "r");
        cr_assert(f);
        while (fgets(line, sizeof(line), f)) {
                char *why = strchr(line, ' ');

                cr_assert(why && i < sizeof(cases) / sizeof(cases[0]), "%s", line);
                line[strcspn(line, "\n")] = '\0';
                seen.want = atoi(line);
                if (strncmp(line, "unshare ", 8) == 0)
                        cr_skip_test("no unprivileged user namespace here: %s", line);
                cr_assert_eq(seen.want, cases[i].want, "%s: %d, not %d (%s)", cases[i].rel,
                             seen.want, cases[i].want, why + 1);
                if (cases[i].reason)
                        cr_assert(strstr(why + 1, cases[i].reason), "%s: %s", cases[i].rel,
                                  why + 1);
                i++;
        }
        fclose(f);
        cr_assert(waitpid(pid, &status, 0) == pid);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child: status %d", status);
        cr_assert_eq(i, sizeof(cases) / sizeof(cases[0]));

        /* Root mapped (no namespace): the overflow uid is a real user's, never root's. */
        mk("nobodys", 0755, NOBODY);
        mkfile("nobodys/a.so", 0644, 0);
        snprintf(p, sizeof(p), "%s/nobodys", top);
        cr_assert_eq(trust_add_installed(p), 0);
        cr_assert_eq(try_open("nobodys/a.so", line, sizeof(line)), -EPERM);
        cr_assert(strstr(line, "/nobodys is owned by uid 65534"), "%s", line);
        cr_assert_eq(try_open("inst/a.so", line, sizeof(line)), 0, "%s", line);
}

/* TRUST_DEV_NULL: a drop-in masked by a symlink to /dev/null opens (and reads as empty). */
Test(trust, dev_null)
{
        char why[512], p[512], c;
        int fd = -1;

        mk("conf.d", 0755, 0);
        ln("/dev/null", "conf.d/masked.conf");
        snprintf(p, sizeof(p), "%s/conf.d/masked.conf", top);
        cr_assert_eq(trust_open_full(p, TRUST_DEV_NULL, &fd, why, sizeof(why)), 0, "%s", why);
        cr_assert_eq(read(fd, &c, 1), 0);
        close(fd);
        /* Only through trusted directories, as any file. */
        mk("open", 0777, 0);
        ln("/dev/null", "open/masked.conf");
        snprintf(p, sizeof(p), "%s/open/masked.conf", top);
        fd = -1;
        cr_assert_eq(trust_open_full(p, TRUST_DEV_NULL, &fd, why, sizeof(why)), -EPERM);
        cr_assert_eq(fd, -1);
}
