/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * An adapter's stats hook, a line a figure: each says what it is (plugin.h, struct
 * ca_adapter_stat), in a hook whose emit function is `emit` and its userdata `eu`. Shared by the
 * dcache adapter and the network adapters' frame (adapter-round.c) and protocols.
 */

#include "cacheage/plugin.h"

#define AD_GAUGE(n, u, h, v) \
        emit(eu, &(const struct ca_adapter_stat){ .name = n, .kind = CA_STAT_GAUGE, .unit = u, \
                                                  .help = h }, v)
#define AD_COUNTER(n, u, h, v) \
        emit(eu, &(const struct ca_adapter_stat){ .name = n, .kind = CA_STAT_COUNTER, \
                                                  .unit = u, .help = h }, v)
