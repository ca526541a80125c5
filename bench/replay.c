/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-replay: the replay lab. One strace log is replayed, event by event and in lockstep, into
 * one dentry-cache model per policy, and the policies are compared on what they keep:
 *
 *   none           the stock kernel without memory pressure: nothing is ever reclaimed;
 *   tail_negative  the 2022 sweep: reclaims nothing either (its figures are none's), shown for
 *                  the cost of the "watch every directory" walk at the end of the trace;
 *   ratio_cursor   Brennan's negative-dentry ratio (seed 003), ratio 5;
 *   ratio_counted  our counted ratio, ratio 5, floor 16;
 *   aging@T        periodic aging, single_use_age and max_age at their defaults (or as given),
 *                  without refault memory (as before refaults existed),
 *                  each rotation aged to the end (no slice limit) before the next event. One
 *                  row per rotation interval, on one of two clocks:
 *                    aging@10ms  the trace's timestamps (-tt, -ttt): a rotation each time 10 ms
 *                                of traced time have passed, before the first event after it;
 *                                the default for logs that have them (--rotate-ms);
 *                    aging@100ev the event count: a rotation before every 100th event; the
 *                                default for logs without timestamps or with -t's whole
 *                                seconds (--rotate-events, which adds such rows to the others);
 *                  strace slows the traced program down, and more so on a busy machine, so rows
 *                  on trace time move from one capture to the next; event rows do not;
 *   aging-rf@T     the same ages with the framework's refault memory (--refault-window, 64
 *                  rotations by default; 0 drops these rows): a dentry re-created within the
 *                  window is a refault and starts as reused;
 *   aging-auto@T   with --ages auto: ages = auto, the ages above being the limits, holding
 *                  --target-refault (percent of reclaims), and refaulted dentries given an age
 *                  of their own (cacheage/age.h);
 *   oracle         drops every dentry right after its last use: a first pass records, for each
 *                  path, the index of the last event that walks it; the replay kills it then.
 *
 * Figures per policy, sampled after every event (an "event step"):
 *   resident     dentries in the model, the pinned root excepted: peak and mean; and negatives;
 *   dead time    the sum over event steps of the dentries resident after their last use, in
 *                dentry-events: what keeping objects nobody will look up again costs;
 *   misses       component lookups (d_lookup calls of the path walks) that found nothing;
 *   extra        misses that were hits under `none`: lookups that missed only because the
 *                policy had dropped the dentry;
 *   gap closed   (dead(none) - dead(policy)) / (dead(none) - dead(oracle)): how much of the
 *                avoidable dead time the policy removed (1 = as good as the oracle);
 *   refaults     aging rows with refault memory: what the framework counted as its own
 *                mistakes, from identities alone, beside the extra misses that the lab counts
 *                from the trace's future: they agree when each dentry aging dropped too early
 *                is looked up once more (the report gives their ratio).
 *
 * --target DEAD:EXTRA prints, for every aging row, whether its dead time is at most DEAD of
 * none's and its extra misses at most EXTRA percent of its lookups (the sessions' targets).
 *
 * A dentry is identified by its path (parent's identity and name), as the trace names it. Which
 * components an event walks is the replay's own plan (ca_dcache_replay_plan()): the whole path,
 * its parent's components only (-ENOTDIR, a create that failed), both paths of a rename or link.
 * Counting the dead: after each event, the dentries this event used for the last time and that
 * are still resident become dead; a step in which the policy or the trace may have killed
 * something (a reclaim counter moved, an unlink, rmdir or rename) is recounted exactly by a walk
 * of the whole model. --check recounts every step and fails on any difference.
 *
 * Probes. Hits are found by looking the components up (ca_dcache_lookup, one reference at a
 * time as the walk takes them) just before the event is replayed: the replay takes and drops the
 * same references and touches the same dentries in the same rotation period right after, so the
 * probe changes nothing a policy sees.
 *
 * --loop N replays the log N times in a row, as a long-running program repeating its lookups;
 * on trace time each repetition starts one mean gap after the previous one ended.
 *
 * --capture records a fresh trace of a real workload now (strace -f -ttt -e trace=%file; see
 * capture_script()): a stat storm of distinct missing names in two directories of 50 files
 * (the same lookups in two orders, for Brennan's order dependence), PATH searches, a scan that
 * looks every file of a third directory up once, and a python import before and after. It is
 * stored in --out (bench/out by default), never in the source tree.
 *
 * Benchmarks report, they do not assert: the exit status is 0 unless something failed to run
 * (or --check found a difference).
 *
 * This file holds the options; replay-sim.c the simulation, replay-report.c the table, JSON
 * and plot, replay-capture.c the capture (replay.h joins them).
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define ROTATE_MS_DEFAULT "10,100"       /* ms of trace time per rotation, one aging row each */
#define ROTATE_EVENTS_DEFAULT "100,1000" /* events per rotation, for logs without timestamps */
#define CAPTURE_NAMES_DEFAULT 3000u      /* missing names stat'ed per directory by --capture */

/* ------------------------------------------------------------------------------------------ */

static void usage(const char *argv0)
{
        printf("%s [options] [TRACE...]\n"
               "Replays strace logs (strace -f [-t|-tt|-ttt] -e trace=%%file) under each dentry\n"
               "reclaim policy and compares what they keep.\n"
               "  --capture             first record a real workload now, into --out\n"
               "  --out DIR             where --capture stores its log (default bench/out)\n"
               "  --names N             missing names per directory in the capture (%u)\n"
               "  --loop N              replay each trace N times in a row (a long-running\n"
               "                        program repeating its lookups)\n"
               "  --rotate-ms LIST      aging rows: ms of trace time per rotation (%s)\n"
               "  --rotate-events LIST  aging rows on the event clock (%s); forces that\n"
               "                        clock even for logs with timestamps\n"
               "  --single-use-age N, --max-age N   aging parameters (2, 8); the limits\n"
               "                        of --ages auto\n"
               "  --refault-window N    rotations a reclaimed dentry is remembered, for the\n"
               "                        aging-rf rows (%u; 0: no such rows)\n"
               "  --ages auto           aging-auto rows too: ages that hold --target-refault\n"
               "  --target-refault PCT  refaults per 100 reclaims for --ages auto (%g)\n"
               "  --controller VARIANT  ages = auto's controller as built (built) or with one\n"
               "                        part changed: no-bar, bar-1-window, quiet-8,\n"
               "                        up-sixteenth, up-quarter, down-quarter\n"
               "  --target DEAD:EXTRA   say whether each aging row holds at most DEAD dead\n"
               "                        dentries per useful one and misses at most EXTRA %%\n"
               "                        more than none (to the horizon)\n"
               "  --frontier            fixed ages over a grid too (JSON rows), and whether a\n"
               "                        fixed pair has both less dead per useful and fewer\n"
               "                        extra misses than each aging-auto row\n"
               "  --horizon SECONDS     the end of the trace not counted in the figures over\n"
               "                        time (default: the longest a program took to run\n"
               "                        again, at most half the trace)\n"
               "  --ratio N             negatives per positive of the ratio policies (5)\n"
               "  --cwd DIR             working directory of the traced programs (default /)\n"
               "  --dir PATH            report negatives under this directory (repeatable)\n"
               "  --check               count the dead by a full walk at every step too\n"
               "  --json                one JSON object on stdout\n"
               "  --svg FILE            plot of resident dentries per step\n",
               argv0, CAPTURE_NAMES_DEFAULT, ROTATE_MS_DEFAULT, ROTATE_EVENTS_DEFAULT,
               CA_REFAULT_WINDOW_DEFAULT, CA_TARGET_REFAULT_DEFAULT_PPM / 10000.0);
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
        unsigned long long v;
        char *end;

        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end || *s == '-' || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* A decimal in [min, max]: "0.5". */
static int parse_double(const char *s, double min, double max, double *ret)
{
        double v;
        char *end;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || !(v >= min && v <= max))
                return -EINVAL;
        *ret = v;
        return 0;
}

/* --controller VARIANT: the lab's knob in struct ca_params (enum ca_auto_controller) */
static int parse_controller(const char *s, uint32_t *ret)
{
        for (uint32_t i = 0; i < _CA_AUTO_CONTROLLER_MAX; i++)
                if (strcmp(s, controller_name(i)) == 0) {
                        *ret = i;
                        return 0;
                }
        return -EINVAL;
}

/* --target DEAD:EXTRA */
static int parse_target(const char *s, struct config *cfg)
{
        char buf[64], *colon;

        if (strlen(s) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, s);
        colon = strchr(buf, ':');
        if (!colon)
                return -EINVAL;
        *colon = '\0';
        if (parse_double(buf, 0, 1000, &cfg->target_dead) < 0 ||
            parse_double(colon + 1, 0, 100, &cfg->target_extra_pct) < 0)
                return -EINVAL;
        cfg->target_given = true;
        return 0;
}

static int parse_list(const char *s, uint64_t *v, size_t *n)
{
        char buf[256], *save = NULL;

        if (strlen(s) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, s);
        *n = 0;
        for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                if (*n >= ROTATE_LIST_MAX || parse_u64(tok, 1, UINT32_MAX, &v[*n]) < 0)
                        return -EINVAL;
                (*n)++;
        }
        return *n ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
        enum {
                OPT_CAPTURE = 256,
                OPT_OUT,
                OPT_NAMES,
                OPT_LOOP,
                OPT_ROTATE_MS,
                OPT_ROTATE_EVENTS,
                OPT_SINGLE_USE_AGE,
                OPT_MAX_AGE,
                OPT_REFAULT_WINDOW,
                OPT_AGES,
                OPT_TARGET_REFAULT,
                OPT_CONTROLLER,
                OPT_TARGET,
                OPT_HORIZON,
                OPT_FRONTIER,
                OPT_RATIO,
                OPT_CWD,
                OPT_DIR,
                OPT_CHECK,
                OPT_SVG,
        };
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                { "svg", required_argument, NULL, OPT_SVG },
                { "capture", no_argument, NULL, OPT_CAPTURE },
                { "out", required_argument, NULL, OPT_OUT },
                { "names", required_argument, NULL, OPT_NAMES },
                { "loop", required_argument, NULL, OPT_LOOP },
                { "rotate-ms", required_argument, NULL, OPT_ROTATE_MS },
                { "rotate-events", required_argument, NULL, OPT_ROTATE_EVENTS },
                { "single-use-age", required_argument, NULL, OPT_SINGLE_USE_AGE },
                { "max-age", required_argument, NULL, OPT_MAX_AGE },
                { "refault-window", required_argument, NULL, OPT_REFAULT_WINDOW },
                { "ages", required_argument, NULL, OPT_AGES },
                { "target-refault", required_argument, NULL, OPT_TARGET_REFAULT },
                { "controller", required_argument, NULL, OPT_CONTROLLER },
                { "target", required_argument, NULL, OPT_TARGET },
                { "horizon", required_argument, NULL, OPT_HORIZON },
                { "frontier", no_argument, NULL, OPT_FRONTIER },
                { "ratio", required_argument, NULL, OPT_RATIO },
                { "cwd", required_argument, NULL, OPT_CWD },
                { "dir", required_argument, NULL, OPT_DIR },
                { "check", no_argument, NULL, OPT_CHECK },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        struct config cfg = {
                .out = "bench/out",
                .loop = 1,
                .capture_names = CAPTURE_NAMES_DEFAULT,
                .age = CA_PARAMS_DEFAULT,
                .ratio = CA_DCACHE_RATIO_DEFAULT,
                .horizon_s = -1,
        };
        struct trace *traces = NULL;
        struct run *runs = NULL;
        size_t ntraces = 0;
        uint64_t v, check_diffs = 0;
        double pct;
        int c, r, status = 1;

        (void)parse_list(ROTATE_MS_DEFAULT, cfg.rotate_ms, &cfg.nrotate_ms);
        (void)parse_list(ROTATE_EVENTS_DEFAULT, cfg.rotate_events, &cfg.nrotate_events);
        while ((c = getopt_long(argc, argv, "jh", options, NULL)) >= 0) {
                r = 0;
                switch (c) {
                case 'j':
                        cfg.json = true;
                        break;
                case OPT_SVG:
                        cfg.svg = optarg;
                        break;
                case OPT_CAPTURE:
                        cfg.capture = true;
                        break;
                case OPT_OUT:
                        cfg.out = optarg;
                        break;
                case OPT_NAMES:
                        r = parse_u64(optarg, CAPTURE_FILES, 10000000, &v);
                        cfg.capture_names = (size_t)v;
                        break;
                case OPT_LOOP:
                        r = parse_u64(optarg, 1, 1000000, &cfg.loop);
                        break;
                case OPT_ROTATE_MS:
                        r = parse_list(optarg, cfg.rotate_ms, &cfg.nrotate_ms);
                        break;
                case OPT_ROTATE_EVENTS:
                        r = parse_list(optarg, cfg.rotate_events, &cfg.nrotate_events);
                        cfg.rotate_events_given = true;
                        break;
                case OPT_SINGLE_USE_AGE:
                        r = parse_u64(optarg, 1, CA_AGE_MAX, &v);
                        cfg.age.single_use_age = (uint32_t)v;
                        break;
                case OPT_MAX_AGE:
                        r = parse_u64(optarg, 1, CA_AGE_MAX, &v);
                        cfg.age.max_age = (uint32_t)v;
                        break;
                case OPT_REFAULT_WINDOW:
                        r = parse_u64(optarg, 0, CA_REFAULT_WINDOW_MAX, &v);
                        cfg.age.refault_window = (uint32_t)v;
                        break;
                case OPT_AGES:
                        if (strcmp(optarg, "auto") == 0)
                                cfg.ages_auto = true;
                        else if (strcmp(optarg, "fixed") == 0)
                                cfg.ages_auto = false;
                        else
                                r = -EINVAL;
                        break;
                case OPT_TARGET_REFAULT:
                        r = parse_double(optarg, 0.0001, CA_TARGET_REFAULT_MAX_PPM / 10000.0, &pct);
                        cfg.age.target_refault_ppm = (uint32_t)(pct * 10000.0 + 0.5);
                        break;
                case OPT_CONTROLLER:
                        r = parse_controller(optarg, &cfg.age.auto_controller);
                        break;
                case OPT_TARGET:
                        r = parse_target(optarg, &cfg);
                        break;
                case OPT_HORIZON:
                        r = parse_double(optarg, 0, 1e9, &cfg.horizon_s);
                        break;
                case OPT_FRONTIER:
                        cfg.frontier = true;
                        break;
                case OPT_RATIO:
                        r = parse_u64(optarg, 0, CA_DCACHE_RATIO_MAX, &v);
                        cfg.ratio = (uint32_t)v;
                        break;
                case OPT_CWD:
                        cfg.cwd = optarg;
                        break;
                case OPT_DIR:
                        if (cfg.ndirs >= DIRS_MAX || optarg[0] != '/')
                                r = -EINVAL;
                        else
                                cfg.dirs[cfg.ndirs++] = optarg;
                        break;
                case OPT_CHECK:
                        cfg.check = true;
                        break;
                case 'h':
                        usage(argv[0]);
                        return 0;
                default:
                        usage(argv[0]);
                        return 2;
                }
                if (r < 0) {
                        const char *name = "?";

                        for (const struct option *o = options; o->name; o++)
                                if (o->val == c)
                                        name = o->name;
                        fprintf(stderr, "bench-replay: bad value for --%s: %s\n", name, optarg);
                        return 2;
                }
        }
        if (ca_cache_validate_params(&cfg.age) < 0) {
                fprintf(stderr, "bench-replay: max_age must be at least single_use_age\n");
                return 2;
        }
        if (cfg.ages_auto && !cfg.age.refault_window) {
                fprintf(stderr, "bench-replay: --ages auto needs a --refault-window\n");
                return 2;
        }
        if (cfg.age.auto_controller != CA_AUTO_CONTROLLER_BUILT && !cfg.ages_auto) {
                fprintf(stderr, "bench-replay: --controller needs --ages auto\n");
                return 2;
        }
        ntraces = (size_t)(argc - optind) + (cfg.capture ? 1 : 0);
        if (ntraces == 0) {
                usage(argv[0]);
                return 2;
        }
        traces = calloc(ntraces, sizeof(*traces));
        runs = calloc(ntraces, sizeof(*runs));
        if (!traces || !runs)
                goto out;
        for (size_t i = 0; i < ntraces; i++) {
                struct trace *t = &traces[i];
                bool captured = cfg.capture && i == 0;

                if (captured) {
                        r = capture(&cfg, t);
                        if (r < 0) {
                                fprintf(stderr, "bench-replay: capture failed: %s\n",
                                        strerror(-r));
                                goto out;
                        }
                } else {
                        snprintf(t->file, sizeof(t->file), "%s",
                                 argv[optind + (int)i - (cfg.capture ? 1 : 0)]);
                        if (cfg.cwd)
                                snprintf(t->cwd, sizeof(t->cwd), "%s", cfg.cwd);
                }
                for (size_t j = 0; j < cfg.ndirs && t->ndirs < DIRS_MAX; j++) {
                        t->dirs[t->ndirs] = strdup(cfg.dirs[j]);
                        if (!t->dirs[t->ndirs])
                                goto out;
                        t->ndirs++;
                }
                r = trace_load(t);
                if (r < 0) {
                        fprintf(stderr, "bench-replay: cannot read %s: %s\n", t->file,
                                strerror(-r));
                        goto out;
                }
                if (cfg.check)
                        check_diffs += trace_check_exits(t);
                runs[i].t = t;
                r = run_trace(&runs[i], &cfg);
                if (r < 0) {
                        fprintf(stderr, "bench-replay: replay of %s failed: %s\n", t->file,
                                strerror(-r));
                        goto out;
                }
                for (size_t j = 0; j < runs[i].np; j++)
                        check_diffs += runs[i].p[j].check_diffs;
        }
        if (cfg.json)
                print_json(runs, ntraces, &cfg);
        else
                print_human(runs, ntraces, &cfg);
        if (cfg.svg) {
                r = write_svg(cfg.svg, runs, ntraces);
                if (r < 0) {
                        fprintf(stderr, "bench-replay: cannot write %s: %s\n", cfg.svg,
                                strerror(-r));
                        goto out;
                }
        }
        status = check_diffs ? 1 : 0;
        if (check_diffs)
                fprintf(stderr, "bench-replay: --check: %llu differences\n",
                        (unsigned long long)check_diffs);
out:
        for (size_t i = 0; runs && i < ntraces; i++)
                run_done(&runs[i]);
        for (size_t i = 0; traces && i < ntraces; i++)
                trace_done(&traces[i]);
        free(runs);
        free(traces);
        return status;
}
