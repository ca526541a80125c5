/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A pool of objects of many sizes (see adapter-pool.h). */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-pool.h"

struct ad_pool_block {
        struct ad_pool_block *next;
        size_t used;                  /* bytes handed out from data[] */
        max_align_t data[];
};

#define AD_POOL_ROOM (AD_POOL_BLOCK_BYTES - offsetof(struct ad_pool_block, data))

static size_t pool_class(size_t bytes)
{
        return (bytes + AD_POOL_CLASS_BYTES - 1) / AD_POOL_CLASS_BYTES;
}

/* Slots are whole classes: every one aligned as malloc's are. */
static size_t pool_slot_bytes(size_t cls)
{
        size_t n = cls * AD_POOL_CLASS_BYTES;

        return (n + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
}

int ad_pool_init(struct ad_pool *pool, size_t max_bytes)
{
        *pool = (struct ad_pool){ .max_bytes = max_bytes,
                                  .n_classes = pool_class(max_bytes) + 1 };
        if (pool_slot_bytes(pool->n_classes - 1) > AD_POOL_ROOM)
                return -EINVAL;
        pool->free = calloc(pool->n_classes, sizeof(*pool->free));
        pool->blocks = calloc(pool->n_classes, sizeof(*pool->blocks));
        if (!pool->free || !pool->blocks) {
                ad_pool_free(pool);
                return -ENOMEM;
        }
        return 0;
}

void *ad_pool_get(struct ad_pool *pool, size_t bytes)
{
        size_t cls = pool_class(bytes), slot = pool_slot_bytes(cls);
        struct ad_pool_block *b;
        void *obj;

        if (bytes == 0 || bytes > pool->max_bytes)
                return NULL;
        obj = pool->free[cls];
        if (obj) {
                pool->free[cls] = *(void **)obj;
        } else {
                b = pool->blocks[cls];
                if (!b || b->used + slot > AD_POOL_ROOM) {
                        if (b) {
                                pool->blocks[cls] = NULL;
                                b->next = pool->full;
                                pool->full = b;
                        }
                        b = malloc(AD_POOL_BLOCK_BYTES);
                        if (!b)
                                return NULL;
                        b->next = NULL;
                        b->used = 0;
                        pool->blocks[cls] = b;
                        pool->bytes += AD_POOL_BLOCK_BYTES;
                }
                obj = (char *)b->data + b->used;
                b->used += slot;
        }
        memset(obj, 0, slot);
        return obj;
}

void ad_pool_put(struct ad_pool *pool, void *obj, size_t bytes)
{
        size_t cls = pool_class(bytes);

        *(void **)obj = pool->free[cls];
        pool->free[cls] = obj;
}

void ad_pool_free(struct ad_pool *pool)
{
        struct ad_pool_block *b, *next;

        for (size_t i = 0; pool->blocks && i < pool->n_classes; i++)
                free(pool->blocks[i]);
        for (b = pool->full; b; b = next) {
                next = b->next;
                free(b);
        }
        free(pool->blocks);
        free(pool->free);
        *pool = (struct ad_pool){ 0 };
}
