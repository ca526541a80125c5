/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The files adapter's hash tables (see files-table.h). */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "files-table.h"

#define FS_TABLE_MIN 64     /* buckets */
#define FS_REHASH_PER_ADD 4 /* buckets moved to the new table per insertion */

/* ---- SipHash-2-4 (Aumasson and Bernstein) ---- */

#define ROTL64(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                           \
        do {                                                                               \
                v0 += v1; v1 = ROTL64(v1, 13); v1 ^= v0; v0 = ROTL64(v0, 32);              \
                v2 += v3; v3 = ROTL64(v3, 16); v3 ^= v2;                                   \
                v0 += v3; v3 = ROTL64(v3, 21); v3 ^= v0;                                   \
                v2 += v1; v1 = ROTL64(v1, 17); v1 ^= v2; v2 = ROTL64(v2, 32);              \
        } while (0)

static uint64_t load64(const unsigned char *p)
{
        uint64_t v;

        memcpy(&v, p, sizeof(v));
        return v; /* little-endian hosts give the reference values; any host gives a hash */
}

uint64_t fs_siphash(const uint8_t key[16], uint64_t seed, const void *data, size_t len)
{
        uint64_t k0 = load64(key), k1 = load64(key + 8);
        uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
        uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
        const unsigned char *p = data;
        uint64_t m, b = (uint64_t)(len + 8) << 56;

        /* The seed (a directory's address) is the first word of the message. */
        v3 ^= seed;
        SIPROUND;
        SIPROUND;
        v0 ^= seed;
        for (; len >= 8; p += 8, len -= 8) {
                m = load64(p);
                v3 ^= m;
                SIPROUND;
                SIPROUND;
                v0 ^= m;
        }
        for (size_t i = 0; i < len; i++)
                b |= (uint64_t)p[i] << (8 * i);
        v3 ^= b;
        SIPROUND;
        SIPROUND;
        v0 ^= b;
        v2 ^= 0xff;
        SIPROUND;
        SIPROUND;
        SIPROUND;
        SIPROUND;
        return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- the table ---- */

int fs_table_init(struct fs_table *t)
{
        *t = (struct fs_table){ .mask = FS_TABLE_MIN - 1 };
        t->b = calloc(FS_TABLE_MIN, sizeof(*t->b));
        return t->b ? 0 : -ENOMEM;
}

void fs_table_done(struct fs_table *t)
{
        free(t->b);
        free(t->old);
        *t = (struct fs_table){ 0 };
}

/* Move up to @n buckets of the old table into the new one. */
void fs_table_rehash(struct fs_table *t, size_t n)
{
        while (t->old && n-- > 0) {
                struct fs_hlink *l = t->old[t->old_next], *next;

                for (; l; l = next) {
                        next = l->next;
                        l->next = t->b[l->hash & t->mask];
                        t->b[l->hash & t->mask] = l;
                }
                t->old[t->old_next] = NULL;
                if (t->old_next++ == t->old_mask) {
                        free(t->old);
                        t->old = NULL;
                }
        }
}

/* The link pointing at the entry equal to @key, or NULL. */
static struct fs_hlink **table_slot(struct fs_table *t, uint32_t hash, fs_eq_t eq, const void *key)
{
        struct fs_hlink **p;

        for (p = &t->b[hash & t->mask]; *p; p = &(*p)->next)
                if ((*p)->hash == hash && eq(*p, key))
                        return p;
        if (t->old)
                for (p = &t->old[hash & t->old_mask]; *p; p = &(*p)->next)
                        if ((*p)->hash == hash && eq(*p, key))
                                return p;
        return NULL;
}

struct fs_hlink *fs_table_find(struct fs_table *t, uint32_t hash, fs_eq_t eq, const void *key)
{
        struct fs_hlink **p = table_slot(t, hash, eq, key);

        return p ? *p : NULL;
}

void fs_table_add(struct fs_table *t, struct fs_hlink *l)
{
        fs_table_rehash(t, FS_REHASH_PER_ADD);
        if (!t->old && t->n > t->mask) {
                /* Grow: the old table is emptied a few buckets at a time from now on. */
                struct fs_hlink **b = calloc(2 * (t->mask + 1), sizeof(*b));

                if (b) { /* without memory the chains just grow longer */
                        t->old = t->b;
                        t->old_mask = t->mask;
                        t->old_next = 0;
                        t->b = b;
                        t->mask = 2 * t->mask + 1;
                }
        }
        l->next = t->b[l->hash & t->mask];
        t->b[l->hash & t->mask] = l;
        t->n++;
}

static bool link_is(const struct fs_hlink *l, const void *key)
{
        return l == key;
}

void fs_table_del(struct fs_table *t, struct fs_hlink *l)
{
        struct fs_hlink **p = table_slot(t, l->hash, link_is, l);

        if (p) {
                *p = l->next;
                t->n--;
        }
}
