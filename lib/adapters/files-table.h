/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The files adapter's hash tables: chained, with the links embedded in the entries, growing
 * incrementally so that no insertion rehashes a large table at once (two tables while it
 * grows, a few buckets moved per insertion and per fs_table_rehash() call, as redis's dict
 * does). Entries carry their hash; fs_siphash() makes it, keyed, because the names hashed are
 * chosen by whoever writes to the cache directory. No locks: one thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fs_hlink {
        struct fs_hlink *next;
        uint32_t hash;
};

struct fs_table {
        struct fs_hlink **b, **old; /* old: the table being emptied into b, NULL when none */
        size_t mask, old_mask;      /* buckets - 1 */
        size_t old_next;            /* the next bucket of old to move */
        size_t n;                   /* entries */
};

/* Whether @link is the entry @key describes. */
typedef bool (*fs_eq_t)(const struct fs_hlink *link, const void *key);

/* fs_siphash() - SipHash-2-4 of @seed (as a first word) and @len bytes of @data, under @key. */
uint64_t fs_siphash(const uint8_t key[16], uint64_t seed, const void *data, size_t len);

/* fs_table_init() - an empty table. Returns 0 or -ENOMEM. */
int fs_table_init(struct fs_table *t);
/* fs_table_done() - free the buckets (not the entries). */
void fs_table_done(struct fs_table *t);
/* fs_table_find() - the entry with @hash for which @eq(entry, @key) holds, or NULL. */
struct fs_hlink *fs_table_find(struct fs_table *t, uint32_t hash, fs_eq_t eq, const void *key);
/* fs_table_add() - add @link, its hash set (no check for duplicates). */
void fs_table_add(struct fs_table *t, struct fs_hlink *link);
/* fs_table_del() - remove @link (a no-op when it is not in @t). */
void fs_table_del(struct fs_table *t, struct fs_hlink *link);
/* fs_table_rehash() - move up to @n buckets of a growing table (none when it is not growing). */
void fs_table_rehash(struct fs_table *t, size_t n);
