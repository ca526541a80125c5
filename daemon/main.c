/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cacheaged: command line, then run() (the state and the loop are manager.c's). */

#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The build's config.h (CA_VERSION, CA_CONFIG_FILE); "config.h" alone is the parser's. */
#include "bus-address.h"
#include "cacheage-build.h"
#include "kernel-knob.h"
#include "kernel-sys.h"
#include "log.h"
#include "manager.h"
#include "trust.h"

#define EXIT_NOTCONFIGURED 6 /* LSB init scripts' "program is not configured", as systemd names it */

static void help(void)
{
        printf("Usage: cacheaged [OPTIONS]\n"
               "\n"
               "Periodic aging of caches: every configured cache is rotated on a timer, in\n"
               "idle time, and the objects used in one rotation period and never again are\n"
               "reclaimed long before memory pressure would force it.\n"
               "\n"
               "Options:\n"
               "  -c, --config FILE       Read FILE and its drop-ins FILE.d/*.conf only,\n"
               "                          instead of the files below\n"
               "  -b, --bus BUS           Serve org.cacheage.CacheAge1 on BUS: \"system\"\n"
               "                          (default), \"user\", a D-Bus address such as\n"
               "                          unix:path=/run/x.sock, or \"none\"\n"
               "      --check-config      Parse and validate the whole configuration, the\n"
               "                          plugins' sections included, list every error and\n"
               "                          exit 0 (valid) or 1\n"
               "      --restore-sysctl    Put back vm.vfs_cache_pressure if a cacheaged\n"
               "                          stopped while a sweep had it set (the unit's\n"
               "                          ExecStopPost= runs this; every start does it too)\n"
               "                          and exit 0, or 1 when it cannot be put back\n"
               "  -l, --log-level LEVEL   emerg, alert, crit, err, warning, notice, info or\n"
               "                          debug (or 0..7); wins over log_level in the file\n"
               "      --version           Print the version and exit\n"
               "  -h, --help              Print this help and exit\n"
               "\n"
               "Signals:\n"
               "  SIGHUP                  Reload the configuration; a bad one is reported and\n"
               "                          the one in force stays unchanged\n"
               "  SIGTERM, SIGINT         Stop\n"
               "\n"
               "Files:\n"
               "  %s (optional, built-in defaults without it)\n"
               "  %s.d/*.conf\n"
               "  /run/cacheage/cacheaged.conf.d/*.conf\n"
               "  /usr/local/lib/cacheage/cacheaged.conf.d/*.conf\n"
               "  /usr/lib/cacheage/cacheaged.conf.d/*.conf\n"
               "                          Drop-ins, read after the main file in lexical order\n"
               "                          of their names; of two with one name, the first\n"
               "                          directory's wins (one linked to /dev/null masks)\n"
               "\n"
               "Environment:\n"
               "  CACHEAGED_PLUGIN_DIR    Where adapter plugins are looked for when the\n"
               "                          configuration sets no plugin_dir of its own\n"
               "                          (default: %s); for running from a build tree\n"
               "  CACHEAGED_PSI_DIR       Where the pressure files are read (default\n"
               "                          /proc/pressure); for tests\n"
               "  CACHEAGED_CONFIG_ROOT   A directory the configuration search looks below\n"
               "                          instead of /; for tests\n"
               "  CACHEAGED_KERNEL_ROOT   The kernel adapter reads and writes the kernel's\n"
               "                          files under this directory, not /; for tests\n"
               "  CACHEAGED_REFUSAL_LOG_INTERVAL\n"
               "                          The interval in which a uid's refused bus writes get\n"
               "                          at most 10 log lines (default 1min); for tests\n"
               "  NOTIFY_SOCKET, WATCHDOG_USEC, JOURNAL_STREAM\n"
               "                          Set by systemd: readiness, status and watchdog\n"
               "                          notifications; log levels as <N> prefixes\n"
               "\n"
               "Exit status:\n"
               "  0 a clean stop, or a valid configuration with --check-config; 1 a bad\n"
               "  command line, a start-up error other than the configuration, or an invalid\n"
               "  configuration with --check-config; 6 an invalid configuration at start\n"
               "  (\"not configured\": the unit's RestartPreventExitStatus=6 keeps systemd\n"
               "  from restarting it until the configuration is fixed).\n"
               "\n"
               "See cacheaged(8), cacheaged.conf(5) for the configuration, and cacheagectl(1)\n"
               "to query and control a running daemon.\n",
               CA_CONFIG_FILE, CA_CONFIG_FILE, CA_PLUGIN_DIR);
}

enum {
        ARG_CHECK_CONFIG = 0x100,
        ARG_RESTORE_SYSCTL,
        ARG_VERSION,
};

static int parse_argv(int argc, char *argv[], struct manager_options *opts, bool *restore_only)
{
        static const struct option options[] = {
                { "config", required_argument, NULL, 'c' },
                { "bus", required_argument, NULL, 'b' },
                { "check-config", no_argument, NULL, ARG_CHECK_CONFIG },
                { "restore-sysctl", no_argument, NULL, ARG_RESTORE_SYSCTL },
                { "log-level", required_argument, NULL, 'l' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        char why[256];
        int c, r;

        while ((c = getopt_long(argc, argv, "c:b:l:h", options, NULL)) >= 0) {
                switch (c) {
                case 'c':
                        opts->config_path = optarg;
                        break;
                case 'b':
                        if (!*optarg) {
                                log_error("--bus needs a value: system, user, an address or none");
                                return -EINVAL;
                        }
                        if (strcmp(optarg, "system") != 0 && strcmp(optarg, "user") != 0 &&
                            strcmp(optarg, "none") != 0 &&
                            !bus_address_check(optarg, why, sizeof(why))) {
                                log_error("--bus: '%s' is not system, user, none or a D-Bus "
                                          "address: %s", optarg, why);
                                return -EINVAL;
                        }
                        opts->bus = optarg;
                        break;
                case ARG_CHECK_CONFIG:
                        opts->check_only = true;
                        break;
                case ARG_RESTORE_SYSCTL:
                        *restore_only = true;
                        break;
                case 'l':
                        r = log_level_from_string(optarg);
                        if (r < 0) {
                                log_error("Invalid log level '%s'", optarg);
                                return -EINVAL;
                        }
                        opts->log_level_set = true;
                        opts->log_level = r;
                        break;
                case ARG_VERSION:
                        printf("cacheaged %s\n", CA_VERSION);
                        return 0;
                case 'h':
                        help();
                        return 0;
                default:
                        return -EINVAL;
                }
        }
        if (optind < argc) {
                log_error("Unexpected argument '%s'; see --help", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

/*
 * vm.vfs_cache_pressure as a cacheaged killed during a sweep left it, put back
 * (kernel-knob.h): at every start, whatever the configuration (one refused, one without a
 * kernel cache), and alone with --restore-sysctl (the unit's ExecStopPost=). -EBUSY: a live
 * cacheaged is sweeping, and puts its value back itself.
 */
static int restore_sysctl(void)
{
        const char *root = getenv(KS_ROOT_ENV);
        char msg[KK_MSG_MAX];
        int r;

        r = kk_restore(root && *root ? root : "/", msg, sizeof(msg));
        if (r == -EBUSY)
                log_debug("vm.vfs_cache_pressure is set by a live cacheaged's sweep: left to it");
        else if (r < 0)
                log_error("%s", msg[0] ? msg : strerror(-r));
        else if (r > 0)
                log_warning("%s", msg);
        return r == -EBUSY ? 0 : r;
}

static int run(int argc, char *argv[])
{
        struct manager_options opts = {
                .bus = "system",
        };
        struct manager *m = NULL;
        bool restore_only = false;
        int r;

        log_open();
        r = parse_argv(argc, argv, &opts, &restore_only);
        if (r <= 0)
                return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (opts.log_level_set)
                log_set_level(opts.log_level);
        if (restore_only)
                return restore_sysctl() < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        /* Before the configuration is read: a refused one must not leave the host as it is. */
        if (!opts.check_only)
                (void)restore_sysctl();

        /* A plugin writing to a peer that went away gets EPIPE, not a dead daemon. */
        signal(SIGPIPE, SIG_IGN);
        /* The plugins are installed with the executable (trust.c: owners a namespace hides). */
        (void)trust_add_installed(CA_PLUGIN_DIR);

        r = manager_new(&opts, &m);
        if (r < 0) {
                log_error_errno(r, "Failed to allocate the manager: %m");
                return EXIT_FAILURE;
        }
        r = manager_start(m);
        if (r < 0) {
                size_t n_errors = 0;
                const char *files = manager_failed_files(m, &n_errors);

                /* The files at fault, which need not be the main one. */
                if (opts.check_only && files)
                        fprintf(stderr, "configuration is invalid: %zu error%s in %s\n", n_errors,
                                n_errors == 1 ? "" : "s", files);
                else if (opts.check_only)
                        fprintf(stderr, "%s: configuration is invalid\n",
                                opts.config_path ? opts.config_path : CA_CONFIG_FILE);
                manager_free(m);
                /*
                 * A configuration that is wrong stays wrong until someone edits it: the units'
                 * RestartPreventExitStatus= names this status, so systemd does not start the
                 * daemon again every RestartSec= for ever (LSB's "program is not configured").
                 */
                if (!opts.check_only && n_errors > 0)
                        return EXIT_NOTCONFIGURED;
                return EXIT_FAILURE;
        }
        if (opts.check_only) {
                printf("%s: configuration OK, %zu cache%s\n",
                       opts.config_path ? opts.config_path : CA_CONFIG_FILE,
                       manager_conf(m)->n_caches, manager_conf(m)->n_caches == 1 ? "" : "s");
                manager_free(m);
                return EXIT_SUCCESS;
        }
        r = manager_run(m);
        manager_free(m);
        return r < 0 ? EXIT_FAILURE : r;
}

int main(int argc, char *argv[])
{
        int r = run(argc, argv);

        /* libevent's global state, so that a leak checker sees only real leaks. */
        libevent_global_shutdown();
        return r;
}
