/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A pool of objects of many sizes (a network adapter's tracked items: a header and a key):
 * fixed slots in classes of AD_POOL_CLASS_BYTES, carved from 64 KiB blocks, a free list per
 * class. A rotation forgets hundreds of thousands of items at once; freed to malloc, they would
 * wait in glibc's fastbins until the next large allocation anywhere in the daemon consolidated
 * them all in one call (26 ms of the loop's CPU, measured with bench-memcached after 673,000
 * deletions). From the pool a forgotten item is one push; the blocks go back to malloc only
 * with the pool, as memcached keeps its slabs.
 */

#include <stddef.h>

#define AD_POOL_BLOCK_BYTES (64 * 1024)
#define AD_POOL_CLASS_BYTES 16

struct ad_pool_block;

struct ad_pool {
        size_t max_bytes;              /* the largest object */
        size_t n_classes;
        void **free;                   /* per class: the first free slot (a slot's first
                                          pointer links the next) */
        struct ad_pool_block **blocks; /* per class: the block with room left, or NULL */
        struct ad_pool_block *full;    /* blocks with no room left, to free with the pool */
        size_t bytes;                  /* in blocks, for the statistics */
};

/* ad_pool_init() - a pool of objects of at most @max_bytes. Returns 0 or -ENOMEM. */
int ad_pool_init(struct ad_pool *pool, size_t max_bytes);
/* ad_pool_get() - a zeroed object of @bytes (1..max_bytes), or NULL. */
void *ad_pool_get(struct ad_pool *pool, size_t bytes);
/* ad_pool_put() - give back @obj, got for @bytes. */
void ad_pool_put(struct ad_pool *pool, void *obj, size_t bytes);
/* ad_pool_free() - every block back to malloc; the pool may be initialised again. */
void ad_pool_free(struct ad_pool *pool);
