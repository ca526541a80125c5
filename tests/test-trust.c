/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trust_open(): the walk that decides whether root may load a module. Runs as root (CI
 * does) and makes its own directories under /tmp (root's, sticky), giving some of them to
 * nobody (uid 65534) to play the other user.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
        cr_assert(strstr(why, "/theirs is owned by uid 65534"), "%s", why);

        mkfile("file", 0644, 0);
        cr_assert_eq(try_open_dir("file/", why, sizeof(why)), -ENOTDIR);
        cr_assert_eq(try_open_dir("none", why, sizeof(why)), -ENOENT);
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
