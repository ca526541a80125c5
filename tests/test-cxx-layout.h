/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * One list of the public structs' members whose place the C and the C++ compilers must agree
 * on (tests/test-cxx.cc), expanded once by each compiler: the struct's size and the member's
 * offset. The atomics, the first and last members, and what a plugin table holds.
 */

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct cxx_layout {
        const char *what;
        size_t size;
        size_t offset;
};

#define CXX_LAYOUTS(X)                                                                     \
        X(struct ca_node, link), X(struct ca_node, stamp), X(struct ca_node, hits),        \
        X(struct ca_node, flags), X(struct ca_node, due),                                  \
        X(struct ca_cache_head, epoch),                                                    \
        X(struct ca_params, single_use_age), X(struct ca_params, max_age),                 \
        X(struct ca_params, auto_controller),                                              \
        X(struct ca_stats, objects), X(struct ca_stats, backlog),                          \
        X(struct ca_stat_desc, help), X(struct ca_cache_ops, reclaim),                     \
        X(struct ca_cache_ops, size),                                                      \
        X(struct ca_plugin, abi), X(struct ca_plugin, name), X(struct ca_plugin, destroy), \
        X(struct ca_key_spec, name), X(struct ca_key_spec, help),                          \
        X(struct ca_section, n_keys), X(struct ca_pressure, cpu_some),                     \
        X(struct ca_adapter_stat, help), X(struct ca_cache_hooks, stats),                  \
        X(struct ca_trace_event, path), X(struct ca_dcache_params, aging)

/* cxx_c_layouts() - the list as the C compiler lays it out (tests/test-cxx-layout.c). */
const struct cxx_layout *cxx_c_layouts(size_t *ret_n);

#ifdef __cplusplus
}
#endif
