/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cacheagectl: the command-line client of cacheaged's D-Bus API (org.cacheage.CacheAge1).
 *
 * This file reads the command line and dispatches; each verb is in a file of its own
 * (cacheagectl-VERB.c), what they share is in cacheagectl.h.
 */

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include <systemd/sd-bus.h>

/* cacheage-build.h: the build's configuration (CA_VERSION). */
#include "bus-address.h"
#include "bus-def.h"
#include "cacheage-build.h"
#include "cacheage/value.h"
#include "cacheagectl.h"
#include "pager.h"

enum bus_kind arg_bus = BUS_SYSTEM;
const char *arg_address;
const char *arg_machine;
bool arg_ask_password = true;
bool arg_writes;
enum json_mode arg_json;
bool arg_no_pager;
bool arg_no_legend;
bool arg_value;
bool arg_persistent;
bool arg_colors;
char **arg_properties;
bool *arg_properties_matched;
size_t n_arg_properties;
double arg_watch_sec;
const char *arg_since;
const char *arg_svg;
const char *arg_config;
unsigned arg_tty_columns;
static const char *arg_command = "status";

static void help(void)
{
        printf("Usage: cacheagectl [OPTIONS] [COMMAND [ARGS...]]\n"
               "\n"
               "Query and control cacheaged, the periodic cache aging daemon, over D-Bus\n"
               "(bus name %s).\n"
               "\n"
               "Commands:\n"
               "  status [NAME...]       Show the daemon's version and uptime and one line per\n"
               "                         cache (or per NAME): adapter, state, objects,\n"
               "                         single-use objects, objects reclaimed, rotation\n"
               "                         interval, ages (single-use/max, in rotations), time\n"
               "                         since the last rotation. The kernel adapter shows the\n"
               "                         kernel's dentries, of which negative, and its\n"
               "                         mechanism in place of the ages. The default command.\n"
               "  show [NAME]            Show every property of one cache, the adapter's own\n"
               "                         statistics included (AdapterStats.KEY=VALUE); without\n"
               "                         NAME, the daemon's (the manager's).\n"
               "  list-caches [PATTERN...]\n"
               "                         One line per cache (or per cache whose name matches\n"
               "                         a PATTERN, shell-style): adapter, state, interval,\n"
               "                         ages; then how many were listed.\n"
               "  set NAME KEY=VALUE...  Change a cache's settings at once (*):\n"
               "                           interval=DURATION      rotation interval, %s..%s\n"
               "                                                  (500ms, 30s, 5min, 1h 30min)\n"
               "                           single-use-age=N       rotations an object used once\n"
               "                                                  may stay idle, 1..%u\n"
               "                           max-age=N              rotations a reused object may\n"
               "                                                  stay idle, 1..%u\n"
               "                           enabled=yes|no         rotate on the timer or not\n"
               "                         Every value is checked before any is sent. The change\n"
               "                         lasts until cacheaged reloads or restarts; with\n"
               "                         --persistent it is written to the configuration\n"
               "                         (DIR/50-NAME.conf, DIR the daemon's drop-in\n"
               "                         directory: root only) and the daemon reloads.\n"
               "  rotate [NAME]          Rotate one cache now, or every enabled cache (*).\n"
               "  reset-statistics [NAME]\n"
               "                         Zero the counters of one cache or of all (*).\n"
               "  reload                 Re-read the configuration and wait until it is in\n"
               "                         force; a bad configuration changes nothing and its\n"
               "                         errors are printed (*).\n"
               "  list                   The cache names, one per line.\n"
               "  metrics                Every statistic in the Prometheus text format.\n"
               "  history NAME           The cache's last rotations: a table (on a terminal,\n"
               "                         a chart of objects and reclaimed first).\n"
               "  cat-config             The configuration files cacheaged reads, in its order,\n"
               "                         each after a \"# PATH\" line (this machine's files,\n"
               "                         read here: no daemon is asked).\n"
               "\n"
               "Options:\n"
               "      --system           Talk to cacheaged on the system bus (the default).\n"
               "      --user             Talk to cacheaged on the user's session bus.\n"
               "  -H, --host=[USER@]HOST[:PORT][/MACHINE]\n"
               "                         Talk to cacheaged on HOST's system bus, or that of\n"
               "                         its container MACHINE, over ssh (ssh -xT [-p PORT]\n"
               "                         USER@HOST systemd-stdio-bridge, with -M MACHINE for\n"
               "                         a container, as systemctl -H). HOST: a name, an IPv4\n"
               "                         address or [IPV6]; PORT: 1..65535; MACHINE: a machine\n"
               "                         name (letters, digits, '-', '.'; not all digits).\n"
               "  -A, --address=ADDRESS  Talk to cacheaged on the bus at ADDRESS\n"
               "                         (e.g. unix:path=/run/my-bus).\n"
               "      --json[=MODE]      Machine-readable output (JSON, keys in snake_case,\n"
               "                         times in microseconds) for every command; an error\n"
               "                         is {\"error\": MESSAGE, \"exit_status\": N}. MODE:\n"
               "                         short (one line, the default), pretty or off.\n"
               "  -p, --property=NAME    With show: only these properties (Objects or\n"
               "                         objects, AdapterStats.KEY); repeat it, or separate\n"
               "                         names with commas. -p help lists them.\n"
               "  -P NAME                With show: the value of NAME alone (-p NAME --value).\n"
               "      --value            With show: the values only, without NAME=.\n"
               "      --no-legend        With status and list-caches: no daemon line, column\n"
               "                         titles or count.\n"
               "      --persistent       With set: write the change to the configuration.\n"
               "      --since=TIME       With history: from TIME on (-10min, \"1h ago\",\n"
               "                         \"2026-12-03 04:51\", @SECONDS).\n"
               "      --svg=FILE         With history: write a plot (SVG) to FILE instead.\n"
               "  -w, --watch[=SECONDS]  With status: refresh every SECONDS (default %d) in\n"
               "                         place, until interrupted.\n"
               "      --config=FILE      With cat-config: FILE and FILE.d/, as cacheaged\n"
               "                         --config FILE reads them.\n"
               "      --no-ask-password  Do not let polkit ask for a password on the terminal\n"
               "                         (*): the change is then allowed or refused as is.\n"
               "      --no-pager         Do not pipe the output into a pager\n"
               "                         ($CACHEAGECTL_PAGER, $SYSTEMD_PAGER or $PAGER, else\n"
               "                         less or more; $SYSTEMD_LESS for less's options).\n"
               "  -h, --help             Show this help.\n"
               "      --version          Show the version.\n"
               "\n"
               "Exit status (LSB's, as systemctl's):\n"
               "  0 success; 1 the daemon refused or failed (a bad configuration...);\n"
               "  2 bad command line or value; 3 cacheaged not running on that bus (or no bus);\n"
               "  4 reading: no such cache (as systemctl status), changing (*): permission\n"
               "  denied; 5 changing: no such cache (as systemctl start).\n"
               "\n"
               "Reading is open to every user. (*) Changes are for root (CAP_SYS_ADMIN), or a\n"
               "user whom polkit authorizes for %s (by default an administrator,\n"
               "after authenticating).\n"
               "Colour on a terminal only; NO_COLOR or SYSTEMD_COLORS=0 turn it off.\n"
               "\n"
               "Examples:\n"
               "  cacheagectl\n"
               "  cacheagectl show dentries\n"
               "  cacheagectl show dentries -p Objects,Reclaimed --value\n"
               "  cacheagectl -P Version show\n"
               "  sudo cacheagectl set dentries interval=30s max-age=8\n"
               "  sudo cacheagectl set --persistent dentries enabled=no\n"
               "  cacheagectl -H admin@cachehost list-caches\n"
               "  cacheagectl --json=pretty status | jq '.caches[].reclaimed'\n"
               "  cacheagectl history dentries --svg=dentries.svg\n"
               "\n"
               "See cacheagectl(1), cacheaged(8) and cacheaged.conf(5).\n",
               CA_BUS_NAME, "10ms", "1w", (unsigned)CA_AGE_MAX, (unsigned)CA_AGE_MAX,
               CTL_WATCH_DEFAULT_SEC, CA_POLKIT_ACTION_MANAGE);
}

/* -p A,B -p C: every name, in order, each checked by check_properties(). */
static int add_properties(const char *arg)
{
        for (const char *p = arg; *p;) {
                size_t len = strcspn(p, ",");
                char **v;
                bool *m;

                if (len > 0) {
                        v = realloc(arg_properties, (n_arg_properties + 1) * sizeof(*v));
                        if (!v)
                                return fail(EXIT_FAILED, "Out of memory");
                        arg_properties = v;
                        m = realloc(arg_properties_matched, (n_arg_properties + 1) * sizeof(*m));
                        if (!m)
                                return fail(EXIT_FAILED, "Out of memory");
                        arg_properties_matched = m;
                        m[n_arg_properties] = false;
                        v[n_arg_properties] = strndup(p, len);
                        if (!v[n_arg_properties])
                                return fail(EXIT_FAILED, "Out of memory");
                        n_arg_properties++;
                }
                p += len + (p[len] == ',');
        }
        return 0;
}

static void free_properties(void)
{
        for (size_t i = 0; i < n_arg_properties; i++)
                free(arg_properties[i]);
        free(arg_properties);
        free(arg_properties_matched);
}

static int parse_argv(int argc, char **argv)
{
        enum { ARG_SYSTEM = 0x100, ARG_USER, ARG_JSON, ARG_NO_PAGER, ARG_NO_LEGEND, ARG_VALUE,
               ARG_PERSISTENT, ARG_VERSION, ARG_SINCE, ARG_SVG, ARG_CONFIG, ARG_NO_ASK_PASSWORD };
        static const struct option options[] = {
                { "system", no_argument, NULL, ARG_SYSTEM },
                { "user", no_argument, NULL, ARG_USER },
                { "host", required_argument, NULL, 'H' },
                { "address", required_argument, NULL, 'A' },
                { "json", optional_argument, NULL, ARG_JSON },
                { "watch", optional_argument, NULL, 'w' },
                { "no-pager", no_argument, NULL, ARG_NO_PAGER },
                { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
                { "no-ask-password", no_argument, NULL, ARG_NO_ASK_PASSWORD },
                { "property", required_argument, NULL, 'p' },
                { "value", no_argument, NULL, ARG_VALUE },
                { "persistent", no_argument, NULL, ARG_PERSISTENT },
                { "since", required_argument, NULL, ARG_SINCE },
                { "svg", required_argument, NULL, ARG_SVG },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                {},
        };
        const char *host = NULL, *address = NULL, *machine = NULL;
        bool user = false;
        char *end, why[256];
        int c, r;

        /* Options may follow the command, as with systemctl ("status --json"). */
        while ((c = getopt_long(argc, argv, "A:H:w::p:P:h", options, NULL)) >= 0) {
                switch (c) {
                case ARG_SYSTEM: /* this machine's, whatever came before */
                        user = false;
                        host = address = NULL;
                        break;
                case ARG_USER:
                        user = true;
                        break;
                case 'H':
                        if (!host_check(optarg, &machine, why, sizeof(why)))
                                return fail(EXIT_USAGE, "--host: '%s' is not "
                                            "[USER@]HOST[:PORT][/MACHINE]: %s", optarg, why);
                        host = optarg;
                        break;
                case 'A':
                        if (!bus_address_check(optarg, why, sizeof(why)))
                                return fail(EXIT_USAGE, "--address: '%s' is not a D-Bus address: "
                                            "%s", optarg, why);
                        address = optarg;
                        break;
                case ARG_JSON:
                        if (!optarg || strcmp(optarg, "short") == 0)
                                arg_json = JSON_SHORT;
                        else if (strcmp(optarg, "pretty") == 0)
                                arg_json = JSON_PRETTY;
                        else if (strcmp(optarg, "off") == 0)
                                arg_json = JSON_OFF;
                        else
                                return fail(EXIT_USAGE, "--json: '%s' is not pretty, short or "
                                            "off", optarg);
                        break;
                case ARG_NO_LEGEND:
                        arg_no_legend = true;
                        break;
                case ARG_NO_ASK_PASSWORD:
                        arg_ask_password = false;
                        break;
                case 'p':
                        if (strcmp(optarg, "help") == 0) {
                                properties_help();
                                return -1;
                        }
                        r = add_properties(optarg);
                        if (r != 0)
                                return r;
                        break;
                case 'P':
                        r = add_properties(optarg);
                        if (r != 0)
                                return r;
                        arg_value = true;
                        break;
                case ARG_VALUE:
                        arg_value = true;
                        break;
                case ARG_PERSISTENT:
                        arg_persistent = true;
                        break;
                case ARG_SINCE:
                        arg_since = optarg;
                        break;
                case ARG_SVG:
                        arg_svg = optarg;
                        break;
                case ARG_CONFIG:
                        arg_config = optarg;
                        break;
                case 'w':
                        arg_watch_sec = CTL_WATCH_DEFAULT_SEC;
                        if (optarg) {
                                arg_watch_sec = strtod(optarg, &end);
                                if (end == optarg || *end || !(arg_watch_sec >= 0.1) ||
                                    arg_watch_sec > 86400)
                                        return fail(EXIT_USAGE, "--watch: '%s' is not a number "
                                                    "of seconds from 0.1 to 86400", optarg);
                        }
                        break;
                case ARG_NO_PAGER:
                        arg_no_pager = true;
                        break;
                case 'h':
                        help();
                        return -1;
                case ARG_VERSION:
                        printf("cacheagectl %s\n", CA_VERSION);
                        return -1;
                default:
                        fprintf(stderr, "Try 'cacheagectl --help'.\n");
                        return EXIT_USAGE;
                }
        }
        if (optind < argc)
                arg_command = argv[optind++];
        /* One bus: as systemctl, the user bus of another machine is not reached this way. */
        if (host && address)
                return fail(EXIT_USAGE, "--host and --address name two buses: give one");
        if ((host || address) && user)
                return fail(EXIT_USAGE, "--user names the user bus: it cannot go with --%s",
                            host ? "host" : "address");
        arg_bus = host ? BUS_REMOTE : address ? BUS_ADDRESS : user ? BUS_USER : BUS_SYSTEM;
        arg_address = host ? host : address;
        arg_machine = host ? machine : NULL;
        if (arg_watch_sec > 0 && strcmp(arg_command, "status") != 0)
                return fail(EXIT_USAGE, "--watch only applies to 'status'");
        if ((n_arg_properties > 0 || arg_value) && strcmp(arg_command, "show") != 0)
                return fail(EXIT_USAGE, "--property, -P and --value only apply to 'show'");
        if (arg_persistent && strcmp(arg_command, "set") != 0)
                return fail(EXIT_USAGE, "--persistent only applies to 'set'");
        /* The drop-in is written here, on this machine: not where -H goes. */
        if (arg_persistent && arg_bus == BUS_REMOTE)
                return fail(EXIT_USAGE, "--persistent writes this machine's configuration; with "
                            "--host, run cacheagectl on %s instead", arg_address);
        if ((arg_since || arg_svg) && strcmp(arg_command, "history") != 0)
                return fail(EXIT_USAGE, "--since and --svg only apply to 'history'");
        if (arg_config && strcmp(arg_command, "cat-config") != 0)
                return fail(EXIT_USAGE, "--config only applies to 'cat-config'");
        return 0;
}

static int bus_connect(sd_bus **ret)
{
        char desc[512];
        sd_bus *bus = NULL;
        int r;

        switch (arg_bus) {
        case BUS_SYSTEM:
                r = sd_bus_open_system(&bus);
                break;
        case BUS_USER:
                r = sd_bus_open_user(&bus);
                break;
        case BUS_REMOTE:
                /*
                 * sd-bus runs "ssh -xT [-p PORT] -- [USER@]HOST systemd-stdio-bridge
                 * [--machine=MACHINE]"; host_check() let through only what it passes on whole.
                 */
                r = sd_bus_open_system_remote(&bus, arg_address);
                if (r == -EINVAL)
                        return fail(EXIT_USAGE, "--host: '%s' is not "
                                    "[USER@]HOST[:PORT][/MACHINE]", arg_address);
                break;
        default:
                r = sd_bus_new(&bus);
                if (r >= 0)
                        r = sd_bus_set_address(bus, arg_address);
                if (r >= 0)
                        r = sd_bus_set_bus_client(bus, 1);
                if (r >= 0)
                        r = sd_bus_start(bus);
                if (r < 0)
                        bus = sd_bus_unref(bus);
        }
        /* sd-bus says EINVAL of an address it cannot use ("unix:" without a path). */
        if (r == -EINVAL && arg_bus == BUS_ADDRESS)
                return fail(EXIT_USAGE, "--address: '%s' is not a usable D-Bus address: %s",
                            arg_address, strerror(-r));
        if (r < 0)
                return fail(EXIT_NOT_RUNNING, "Failed to connect to %s: %s",
                            bus_description(desc, sizeof(desc)), strerror(-r));
        /*
         * A change may need polkit's authorization: let it ask on this terminal (through the
         * agent polkit_agent_open() started), as systemctl does.
         */
        if (arg_writes && arg_ask_password) {
                if (arg_bus != BUS_REMOTE)
                        (void)polkit_agent_open();
                (void)sd_bus_set_allow_interactive_authorization(bus, 1);
        }
        *ret = bus;
        return 0;
}

int main(int argc, char **argv)
{
        static const struct {
                const char *name;
                int (*run)(sd_bus *bus, int argc, char **argv);
                int (*check)(int argc, char **argv); /* before connecting; may be NULL */
                bool writes;                         /* changes something: see EXIT_DENIED */
                bool local;                          /* reads this machine only: no bus */
        } commands[] = {
                { "status", cmd_status, NULL, false, false },
                { "show", cmd_show, check_show, false, false },
                { "list-caches", cmd_list_caches, NULL, false, false },
                { "set", cmd_set, check_set, true, false },
                { "rotate", cmd_rotate, NULL, true, false },
                { "reset-statistics", cmd_reset_statistics, NULL, true, false },
                { "reload", cmd_reload, NULL, true, false },
                { "list", cmd_list, NULL, false, false },
                { "metrics", cmd_metrics, NULL, false, false },
                { "history", cmd_history, NULL, false, false },
                { "cat-config", cmd_cat_config, NULL, false, true },
        };
        sd_bus *bus = NULL;
        int r;

        /* Before a pager takes standard output: colour and charts are for a terminal. */
        arg_colors = colors_wanted();
        arg_tty_columns = terminal_columns();
        r = parse_argv(argc, argv);
        if (r != 0) {
                free_properties();
                return r < 0 ? EXIT_OK : r;
        }

        r = -1;
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]) && r < 0; i++) {
                if (strcmp(commands[i].name, arg_command) != 0)
                        continue;
                arg_writes = commands[i].writes;
                if (commands[i].check) {
                        r = commands[i].check(argc - optind, argv + optind);
                        if (r != 0)
                                break;
                }
                if (commands[i].local) {
                        if (arg_bus != BUS_SYSTEM) {
                                r = fail(EXIT_USAGE, "'%s' reads this machine's files: --host, "
                                         "--address and --user do not apply", arg_command);
                                break;
                        }
                        r = commands[i].run(NULL, argc - optind, argv + optind);
                } else {
                        r = bus_connect(&bus);
                        if (r != 0)
                                break;
                        r = commands[i].run(bus, argc - optind, argv + optind);
                        sd_bus_flush_close_unref(bus);
                }
                fflush(stdout);
                pager_close();
        }
        polkit_agent_close();
        if (r < 0)
                r = fail(EXIT_USAGE, "Unknown command '%s' (see 'cacheagectl --help')", arg_command);
        free_properties();
        return r;
}
