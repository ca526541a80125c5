/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Prometheus text format (metrics.h). Its rules, as followed here: one "# HELP" and one
 * "# TYPE" line before all the samples of a family, the samples of a family together; names
 * [a-zA-Z_:][a-zA-Z0-9_:]*; in label values '\', '"' and a newline escaped as \\, \" and \n;
 * in help text '\' and a newline as \\ and \n; values as decimal numbers.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "manager.h"
#include "metrics.h"
#include "trust.h"

/* How a unit of the statistics' descriptions becomes a Prometheus base unit. */
static const struct {
        const char *unit;
        const char *in_name; /* the unit's tag at the end of a statistic's name, dropped */
        const char *suffix;  /* what the metric name ends in */
        uint64_t divisor;
        const char *note;    /* added to the help, which speaks of the statistic's own unit */
} units[] = {
        { "usec", "_usec", "_seconds", 1000000, " (in seconds)" },
        { "timestamp_usec", "_usec", "_timestamp_seconds", 1000000,
          " (seconds since the Unix epoch)" },
        { "ppm", "_ppm", "_ratio", 1000000, " (as a ratio: 1 is a million per million)" },
        { "bytes", NULL, "_bytes", 1, "" },
        { "seconds", NULL, "_seconds", 1, "" },
};

/* The note for @unit's help, "" for a unit that is not converted. */
static const char *unit_note(const char *unit)
{
        for (size_t i = 0; unit && i < sizeof(units) / sizeof(units[0]); i++)
                if (strcmp(units[i].unit, unit) == 0)
                        return units[i].note;
        return "";
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
        size_t n = strlen(suffix);

        return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

char *metrics_name(const char *prefix, const char *name, enum ca_stat_kind kind,
                   const char *unit, char buf[static METRICS_NAME_MAX], uint64_t *ret_divisor)
{
        const char *suffix = NULL;
        uint64_t divisor = 1;
        size_t len;

        for (size_t i = 0; unit && i < sizeof(units) / sizeof(units[0]); i++)
                if (strcmp(units[i].unit, unit) == 0) {
                        suffix = units[i].suffix;
                        divisor = units[i].divisor;
                        break;
                }
        snprintf(buf, METRICS_NAME_MAX - 32, "%s%s", prefix, name);
        len = strlen(buf);
        for (size_t i = 0; i < len; i++)
                if (!((buf[i] >= 'a' && buf[i] <= 'z') || (buf[i] >= 'A' && buf[i] <= 'Z') ||
                      (buf[i] >= '0' && buf[i] <= '9') || buf[i] == '_'))
                        buf[i] = '_';
        for (size_t i = 0; suffix && i < sizeof(units) / sizeof(units[0]); i++)
                if (units[i].suffix == suffix && units[i].in_name &&
                    ends_with(buf, len, units[i].in_name))
                        buf[len -= strlen(units[i].in_name)] = '\0';
        /* "cacheage_bytes" or "..._refault_memory_bytes" already end in their unit. */
        if (suffix && !ends_with(buf, len, suffix))
                len += (size_t)snprintf(buf + len, METRICS_NAME_MAX - len, "%s", suffix);
        if (kind == CA_STAT_COUNTER && !ends_with(buf, len, "_total"))
                snprintf(buf + len, METRICS_NAME_MAX - len, "_total");
        *ret_divisor = divisor;
        return buf;
}

/* Help text: '\' and newline escaped. */
static void put_help(FILE *f, const char *name, const char *help, const char *unit)
{
        fprintf(f, "# HELP %s ", name);
        for (const char *p = help && *help ? help : "(no help)"; *p; p++) {
                if (*p == '\\')
                        fputs("\\\\", f);
                else if (*p == '\n')
                        fputs("\\n", f);
                else
                        fputc(*p, f);
        }
        fprintf(f, "%s\n", unit_note(unit));
}

/* A label value: '\', '"' and newline escaped. */
static void put_label(FILE *f, const char *label, const char *value, bool first)
{
        fprintf(f, "%s%s=\"", first ? "" : ",", label);
        for (const char *p = value; *p; p++) {
                if (*p == '\\')
                        fputs("\\\\", f);
                else if (*p == '"')
                        fputs("\\\"", f);
                else if (*p == '\n')
                        fputs("\\n", f);
                else
                        fputc(*p, f);
        }
        fputc('"', f);
}

static void put_sample_labelled(FILE *f, const char *name, const struct manager_cache *c,
                                const char *label, const char *label_value, uint64_t value,
                                uint64_t divisor)
{
        fprintf(f, "%s{", name);
        put_label(f, "cache", c->name, true);
        put_label(f, "adapter", c->adapter, false);
        if (label)
                put_label(f, label, label_value, false);
        if (divisor == 1)
                fprintf(f, "} %" PRIu64 "\n", value);
        else /* exact: no rounding through a double */
                fprintf(f, "} %" PRIu64 ".%06" PRIu64 "\n", value / divisor, value % divisor);
}

static void put_sample(FILE *f, const char *name, const struct manager_cache *c, uint64_t value,
                       uint64_t divisor)
{
        put_sample_labelled(f, name, c, NULL, NULL, value, divisor);
}

/*
 * The refaults by distance (ca_cache_refault_histogram()): not a field of struct ca_stats, so
 * not in the table, but a counter per bucket, labelled with the bucket's lowest distance. (Not
 * a Prometheus histogram: that needs the sum of the distances, which nothing counts.)
 */
static const char refault_family[] = "cacheage_refaults_by_distance_total";

static void put_refault_help(FILE *f)
{
        fprintf(f, "# HELP %s refaults by the rotations between reclaim and return, from "
                   "min_rotations up to the next bucket's\n# TYPE %s counter\n", refault_family,
                refault_family);
}

static void put_refault_distances(FILE *f, const struct manager_cache *c)
{
        uint64_t hist[CA_REFAULT_BUCKETS] = { 0 };
        char floor[16];

        if (c->cache)
                ca_cache_refault_histogram(c->cache, hist);
        for (unsigned b = 0; b < CA_REFAULT_BUCKETS; b++) {
                snprintf(floor, sizeof(floor), "%" PRIu32, ca_refault_bucket_floor(b));
                put_sample_labelled(f, refault_family, c, "min_rotations", floor, hist[b], 1);
        }
}

/* How long a cache's work has been put off now (0: it is not); why: show's Deferred. */
static const char deferred_family[] = "cacheage_deferred_seconds";

static void put_deferred_help(FILE *f)
{
        put_help(f, deferred_family, "how long the cache's rotations or its adapter's work have "
                 "been put off now (0: they run)", "usec");
        fprintf(f, "# TYPE %s gauge\n", deferred_family);
}

static void put_deferred(FILE *f, const struct manager_cache *c, uint64_t now_usec)
{
        uint64_t since;
        const char *reason;

        manager_cache_deferred(c, &reason, &since);
        put_sample(f, deferred_family, c, since && now_usec > since ? now_usec - since : 0,
                   1000000);
}

/*
 * The parts of the caches that have some (the kernel adapter's groups of a slice): three
 * families labelled with the part's name, as "group"; a unit of a page is one part's sample.
 */
static const struct {
        const char *name, *type, *help;
} part_families[] = {
        { "cacheage_part_bytes", "gauge", "what the part holds now (the kernel "
          "adapter: its group's reclaimable slab, or kernel memory)" },
        { "cacheage_part_reclaimed_total", "counter", "objects reclaimed of the part" },
        { "cacheage_part_reclaimed_bytes_total", "counter", "bytes reclaimed of the part" },
        { "cacheage_part_not_aged", "gauge", "1 when the part is not aged as the rest (the "
          "kernel adapter: a group left alone, or waiting for its turn; cacheagectl show says "
          "why)" },
};
#define N_PART_FAMILIES (sizeof(part_families) / sizeof(part_families[0]))

static size_t cache_parts(const struct manager_cache *c, const struct ca_cache_part **ret)
{
        *ret = NULL;
        return c->cache ? ca_cache_get_parts(c->cache, ret) : 0;
}

/* The @k-th part family's sample of the @p-th part of all the caches' parts, in their order. */
static void put_part(FILE *f, struct manager *m, size_t k, size_t p)
{
        for (size_t i = 0; i < manager_n_caches(m); i++) {
                const struct manager_cache *c = manager_cache_at(m, i);
                const struct ca_cache_part *v;
                size_t n = cache_parts(c, &v);

                if (p >= n) {
                        p -= n;
                        continue;
                }
                put_sample_labelled(f, part_families[k].name, c, "group", v[p].name,
                                    k == 0   ? v[p].bytes
                                    : k == 1 ? v[p].reclaimed
                                    : k == 2 ? v[p].reclaimed_bytes
                                             : (uint64_t)(v[p].state && v[p].state[0]),
                                    1);
                return;
        }
}

/* The adapters' statistics, gathered from every cache so that a family is printed whole. */
struct adapter_sample {
        char name[METRICS_NAME_MAX];
        enum ca_stat_kind kind;
        char *help;
        const char *unit; /* one of units[], or NULL: all the help needs to know */
        uint64_t divisor;
        const struct manager_cache *cache;
        uint64_t value;
};

struct adapter_samples {
        struct adapter_sample *v;
        size_t n, cap;
        const struct manager_cache *cache;
        int r;
};

static void adapter_sample_add(void *userdata, const struct ca_adapter_stat *stat, uint64_t value)
{
        struct adapter_samples *s = userdata;
        struct adapter_sample *v, *a;
        char prefix[METRICS_NAME_MAX];

        if (s->r < 0)
                return;
        if (s->n == s->cap) {
                /* Doubled: 256 caches of 128 statistics are 32,768 samples of 300 bytes. */
                size_t cap = s->cap ? 2 * s->cap : 64;

                v = realloc(s->v, cap * sizeof(*v));
                if (!v) {
                        s->r = -ENOMEM;
                        return;
                }
                s->v = v;
                s->cap = cap;
        }
        a = &s->v[s->n];
        *a = (struct adapter_sample){ .kind = stat->kind, .cache = s->cache, .value = value };
        snprintf(prefix, sizeof(prefix), "cacheage_%s_", s->cache->adapter);
        metrics_name(prefix, stat->name, stat->kind, stat->unit, a->name, &a->divisor);
        for (size_t i = 0; stat->unit && i < sizeof(units) / sizeof(units[0]); i++)
                if (strcmp(units[i].unit, stat->unit) == 0)
                        a->unit = units[i].unit;
        a->help = strdup(stat->help ? stat->help : "");
        if (!a->help) {
                s->r = -ENOMEM;
                return;
        }
        s->n++;
}

/* Samples in order of family name, and within one family in the order gathered. */
static int cmp_samples(const void *a, const void *b, void *samples)
{
        const struct adapter_sample *v = samples;
        size_t i = *(const size_t *)a, j = *(const size_t *)b;
        int c = strcmp(v[i].name, v[j].name);

        return c ? c : i < j ? -1 : i > j;
}

/* An adapter family: its samples are order[first .. first + n), the first one's kind wins. */
struct adapter_family {
        size_t first, n;
};

static int cmp_families(const void *a, const void *b, void *order)
{
        size_t i = ((const size_t *)order)[((const struct adapter_family *)a)->first];
        size_t j = ((const size_t *)order)[((const struct adapter_family *)b)->first];

        return i < j ? -1 : i > j;
}

/* FNV-1a over what decides where a page's cursor points: the caches and the adapter families. */
static uint32_t layout_hash(struct manager *m, const struct adapter_samples *s,
                            const size_t *order, const struct adapter_family *fam, size_t n_fam)
{
        uint32_t h = 2166136261u;

#define MIX(p, len)                                                                        \
        for (size_t _i = 0; _i < (len); _i++)                                             \
                h = (h ^ ((const uint8_t *)(p))[_i]) * 16777619u
        for (size_t i = 0; i < manager_n_caches(m); i++) {
                const struct manager_cache *c = manager_cache_at(m, i);

                const struct ca_cache_part *v;
                size_t n_parts = cache_parts(c, &v);

                MIX(c->name, strlen(c->name) + 1);
                MIX(c->adapter, strlen(c->adapter) + 1);
                MIX(&n_parts, sizeof(n_parts));
        }
        for (size_t k = 0; k < n_fam; k++) {
                const struct adapter_sample *a = &s->v[order[fam[k].first]];

                MIX(a->name, strlen(a->name) + 1);
                MIX(&fam[k].n, sizeof(fam[k].n));
        }
#undef MIX
        return h;
}

/* A unit of a page (a sample, a cache's buckets, with its family's HELP and TYPE) is under this. */
#define METRICS_UNIT_MAX (8 * 1024) /* bytes */

int metrics_write_page(struct manager *m, FILE *f, uint64_t cursor, size_t max_bytes,
                       uint64_t *ret_next)
{
        struct adapter_samples s = { 0 };
        struct adapter_family *fam = NULL;
        const struct ca_stat_desc *d;
        size_t n_descs, n_fixed, n = manager_n_caches(m), n_fam = 0, n_parts = 0, *order = NULL;
        size_t k0 = 0, p0 = 0;
        uint64_t now_usec = 0;
        struct timespec ts;
        char name[METRICS_NAME_MAX];
        struct ca_stats *stats;
        uint64_t divisor, next = 0;
        uint32_t hash;
        long start = max_bytes == SIZE_MAX ? 0 : ftell(f);
        int r = 0;

        stats = calloc(n ? n : 1, sizeof(*stats));
        if (!stats)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                manager_cache_stats(manager_cache_at(m, i), &stats[i]);
                s.cache = manager_cache_at(m, i);
                manager_cache_adapter_stats(manager_cache_at(m, i), adapter_sample_add, &s);
        }
        order = calloc(s.n ? s.n : 1, sizeof(*order));
        fam = calloc(s.n ? s.n : 1, sizeof(*fam));
        if (s.r < 0 || !order || !fam) {
                r = s.r < 0 ? s.r : -ENOMEM;
                goto out_free;
        }
        /*
         * One family per adapter and name, its samples together, in the order its first sample
         * came. Two caches of one adapter whose hooks disagree on a statistic's kind would make
         * two TYPEs of one family: the first one seen wins, the other samples are left out.
         */
        for (size_t i = 0; i < s.n; i++)
                order[i] = i;
        qsort_r(order, s.n, sizeof(*order), cmp_samples, s.v);
        for (size_t i = 0; i < s.n; i++) {
                if (n_fam == 0 || strcmp(s.v[order[i]].name, s.v[order[fam[n_fam - 1].first]].name))
                        fam[n_fam++] = (struct adapter_family){ .first = i };
                fam[n_fam - 1].n++;
        }
        qsort_r(fam, n_fam, sizeof(*fam), cmp_families, order);

        d = ca_stat_descs(&n_descs);
        n_fixed = n_descs + 2 + N_PART_FAMILIES;
        for (size_t i = 0; i < n; i++) {
                const struct ca_cache_part *v;

                n_parts += cache_parts(manager_cache_at(m, i), &v);
        }
        if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
                now_usec = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
        hash = layout_hash(m, &s, order, fam, n_fam);
        if (cursor != 0) {
                k0 = (size_t)(cursor >> 16 & 0xffff);
                p0 = (size_t)(cursor & 0xffff);
                if ((uint32_t)(cursor >> 32) != hash || n == 0 || k0 >= n_fixed + n_fam) {
                        r = -ESTALE;
                        goto out_free;
                }
        }
        /*
         * Families: the library's table, the refault buckets, the time put off, the parts',
         * the adapters' (n == 0: none).
         */
        for (size_t k = k0; n > 0 && k < n_fixed + n_fam && !next; k++) {
                const struct adapter_family *af = k >= n_fixed ? &fam[k - n_fixed] : NULL;
                const struct adapter_sample *first = af ? &s.v[order[af->first]] : NULL;
                size_t n_units = af ? af->n : k >= n_descs + 2 ? n_parts : n;

                for (size_t p = k == k0 ? p0 : 0; p < n_units; p++) {
                        /* Full: the rest is the next page's, from this unit on. */
                        if (max_bytes != SIZE_MAX &&
                            (size_t)(ftell(f) - start) + METRICS_UNIT_MAX > max_bytes) {
                                if ((size_t)(ftell(f) - start) == 0) {
                                        r = -ENOBUFS;
                                        goto out_free;
                                }
                                next = (uint64_t)hash << 32 | (uint64_t)k << 16 | p;
                                break;
                        }
                        if (k < n_descs) {
                                metrics_name("cacheage_", d[k].name, d[k].kind, d[k].unit, name,
                                             &divisor);
                                if (p == 0) {
                                        put_help(f, name, d[k].help, d[k].unit);
                                        fprintf(f, "# TYPE %s %s\n", name,
                                                ca_stat_kind_name(d[k].kind));
                                }
                                put_sample(f, name, manager_cache_at(m, p),
                                           ca_stat_value(&stats[p], &d[k]), divisor);
                        } else if (k == n_descs) {
                                if (p == 0)
                                        put_refault_help(f);
                                put_refault_distances(f, manager_cache_at(m, p));
                        } else if (k == n_descs + 1) {
                                if (p == 0)
                                        put_deferred_help(f);
                                put_deferred(f, manager_cache_at(m, p), now_usec);
                        } else if (k < n_fixed) {
                                if (p == 0) {
                                        put_help(f, part_families[k - n_descs - 2].name,
                                                 part_families[k - n_descs - 2].help, NULL);
                                        fprintf(f, "# TYPE %s %s\n",
                                                part_families[k - n_descs - 2].name,
                                                part_families[k - n_descs - 2].type);
                                }
                                put_part(f, m, k - n_descs - 2, p);
                        } else {
                                const struct adapter_sample *a = &s.v[order[af->first + p]];

                                if (p == 0) {
                                        put_help(f, first->name, first->help, first->unit);
                                        fprintf(f, "# TYPE %s %s\n", first->name,
                                                ca_stat_kind_name(first->kind));
                                }
                                if (a->kind == first->kind)
                                        put_sample(f, a->name, a->cache, a->value, a->divisor);
                        }
                }
        }
        if (ferror(f))
                r = -EIO;
        else if (ret_next)
                *ret_next = next;
out_free:
        for (size_t i = 0; i < s.n; i++)
                free(s.v[i].help);
        free(s.v);
        free(order);
        free(fam);
        free(stats);
        return r;
}

int metrics_write(struct manager *m, FILE *f)
{
        return metrics_write_page(m, f, 0, SIZE_MAX, NULL);
}

/*
 * The temporary files (".NAME.XXXXXX", XXXXXX of letters) a cacheaged killed in the middle of
 * a write left in @dir_fd: the collector skips them, and nothing else would ever remove them
 * (the system lab found one after its kill -9 steps). Removed at a process's first write, when
 * none can be its own; only regular files of that exact shape are touched.
 */
static void remove_leftovers(int dir_fd, const char *name)
{
        size_t n = strlen(name);
        struct dirent *e;
        DIR *d;
        int fd;

        fd = openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return;
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return;
        }
        while ((e = readdir(d))) {
                const char *tail = e->d_name + 1 + n + 1;
                struct stat st;

                if (e->d_name[0] != '.' || strncmp(e->d_name + 1, name, n) != 0 ||
                    e->d_name[1 + n] != '.' || strlen(tail) != 6 ||
                    strspn(tail, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != 6)
                        continue;
                if (fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                        (void)unlinkat(dir_fd, e->d_name, 0);
        }
        closedir(d);
}

int metrics_write_file(struct manager *m, const char *path, char *reason, size_t reason_len)
{
        static bool leftovers_removed;
        const char *slash = strrchr(path, '/'), *name;
        char dir[PATH_MAX], tmp[NAME_MAX + 1];
        FILE *f = NULL;
        int dir_fd, fd = -1, r;

        if (!slash || !slash[1]) {
                snprintf(reason, reason_len, "%s: not a file name", path);
                return -EISDIR;
        }
        name = slash + 1;
        if (snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path) >=
                    (int)sizeof(dir) ||
            strlen(name) + sizeof(".") + sizeof(".XXXXXX") > sizeof(tmp)) {
                snprintf(reason, reason_len, "%s: %s", path, strerror(ENAMETOOLONG));
                return -ENAMETOOLONG;
        }
        /*
         * Root writes there: the directory is reached along a trusted path and must be
         * writable by nobody else (trust.h), or a user's symlink or rename could send the file
         * anywhere. Everything below is relative to the very directory checked.
         */
        r = trust_open_full(dir, TRUST_DIRECTORY, &dir_fd, reason, reason_len);
        if (r < 0)
                return r;
        if (!leftovers_removed) {
                remove_leftovers(dir_fd, name);
                leftovers_removed = true;
        }
        /* ".NAME.XXXXXX" beside it: the same file system, and no "*.prom" the collector reads. */
        for (unsigned tries = 0; fd < 0 && tries < 100; tries++) {
                static const char chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
                uint64_t x = ca_now_usec() * 6364136223846793005ULL + (uint64_t)getpid() + tries;

                snprintf(tmp, sizeof(tmp), ".%s.XXXXXX", name);
                for (char *p = tmp + strlen(tmp) - 6; *p; p++, x /= sizeof(chars) - 1)
                        *p = chars[x % (sizeof(chars) - 1)];
                fd = openat(dir_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                            0600);
                if (fd < 0 && errno != EEXIST)
                        break;
        }
        if (fd < 0) {
                r = -errno;
                snprintf(reason, reason_len, "%s/%s: %s", dir, tmp, strerror(errno));
                goto out_close_dir;
        }
        /* The unit's UMask=0077 would leave it unreadable to the collector's user. */
        if (fchmod(fd, 0644) < 0) {
                r = -errno;
                close(fd);
                goto out_unlink;
        }
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                close(fd);
                goto out_unlink;
        }
        r = metrics_write(m, f);
        if (fflush(f) != 0 && r >= 0)
                r = -errno;
        if (fclose(f) != 0 && r >= 0)
                r = -errno;
        if (r < 0)
                goto out_unlink;
        if (renameat(dir_fd, tmp, dir_fd, name) < 0) {
                r = -errno;
                goto out_unlink;
        }
        close(dir_fd);
        return 0;

out_unlink:
        snprintf(reason, reason_len, "%s: %s", path, strerror(-r));
        unlinkat(dir_fd, tmp, 0);
out_close_dir:
        close(dir_fd);
        return r;
}
